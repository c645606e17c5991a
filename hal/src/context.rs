//! Kernel stacks and the switch between kernel threads.
//!
//! Stacks live in their own region of the kernel half. Each slot holds a
//! 32 KiB stack above 32 KiB that is never mapped, so running off the end
//! of a stack faults (and the double-fault handler, on its own IST stack,
//! reports it) instead of corrupting a neighbour.
//!
//! A [`Context`] is a saved stack pointer: the callee-saved registers and
//! the resume address sit on the stack it points to. Switching saves the
//! current context and resumes another; a context can be resumed once per
//! save, which the switch enforces by consuming it.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::mm::PAGE_SIZE;
use crate::paging;
use crate::sync::SpinLock;

const STACK_REGION: u64 = 0xffff_c000_0000_0000;
const SLOT_SIZE: u64 = 64 * 1024;
pub const STACK_SIZE: u64 = 32 * 1024;
const SLOT_WORDS: usize = 256;
const MAX_STACKS: usize = SLOT_WORDS * 64;

static SLOTS: SpinLock<[u64; SLOT_WORDS]> = SpinLock::new([0; SLOT_WORDS]);
/// Kernel stacks mapped now (for /proc/meminfo's KernelStack).
static LIVE_STACKS: AtomicU64 = AtomicU64::new(0);

/// Bytes of kernel stack mapped now.
pub fn kernel_stack_bytes() -> u64 {
    LIVE_STACKS.load(Ordering::Relaxed) * STACK_SIZE
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory;

/// A kernel stack with a guard region below it.
#[derive(Debug)]
pub struct KernelStack {
    slot: usize,
}

impl KernelStack {
    pub fn new() -> Result<KernelStack, OutOfMemory> {
        let slot = {
            let mut slots = SLOTS.lock();
            let word = slots.iter().position(|w| *w != u64::MAX).ok_or(OutOfMemory)?;
            let bit = (!slots[word]).trailing_zeros() as usize;
            slots[word] |= 1 << bit;
            word * 64 + bit
        };
        debug_assert!(slot < MAX_STACKS);
        let stack = KernelStack { slot };
        if paging::map_kernel_range(stack.bottom(), STACK_SIZE / PAGE_SIZE).is_err() {
            SLOTS.lock()[slot / 64] &= !(1 << (slot % 64));
            core::mem::forget(stack);
            return Err(OutOfMemory);
        }
        LIVE_STACKS.fetch_add(1, Ordering::Relaxed);
        Ok(stack)
    }

    /// Lowest mapped address.
    pub fn bottom(&self) -> u64 {
        self.top() - STACK_SIZE
    }

    /// One past the highest address: the initial stack pointer.
    pub fn top(&self) -> u64 {
        STACK_REGION + (self.slot as u64 + 1) * SLOT_SIZE
    }

    /// Whether `addr` falls in this stack's guard region.
    pub fn guard_contains(&self, addr: u64) -> bool {
        let slot_base = STACK_REGION + self.slot as u64 * SLOT_SIZE;
        (slot_base..self.bottom()).contains(&addr)
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        paging::unmap_kernel_range(self.bottom(), STACK_SIZE / PAGE_SIZE);
        LIVE_STACKS.fetch_sub(1, Ordering::Relaxed);
        SLOTS.lock()[self.slot / 64] &= !(1 << (self.slot % 64));
    }
}

/// Whether `addr` is in some kernel stack's guard region.
pub fn is_stack_guard(addr: u64) -> bool {
    if !(STACK_REGION..STACK_REGION + MAX_STACKS as u64 * SLOT_SIZE).contains(&addr) {
        return false;
    }
    (addr - STACK_REGION) % SLOT_SIZE < SLOT_SIZE - STACK_SIZE
}

global_asm!(
    r#"
    .section .text.hal_context, "ax"
    .global hal_context_switch
hal_context_switch:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    /* The x87/SSE registers belong to the thread: they go on its stack.
       rsp is 8 mod 16 at the call, so after six pushes and 520 bytes the
       image is 16-byte aligned, as FXSAVE needs. */
    sub rsp, {fpu_frame}
    fxsave64 [rsp]
    mov [rdi], rsp
    mov rsp, [rsi]
    mov qword ptr [rsi], 0
    fxrstor64 [rsp]
    add rsp, {fpu_frame}
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

    .global hal_thread_trampoline
hal_thread_trampoline:
    mov rdi, r12
    mov rsi, r13
    call {start}
    ud2
"#,
    start = sym thread_start,
    fpu_frame = const FPU_FRAME,
);

/// Stack bytes a switched-out thread keeps its x87/SSE image in (512,
/// plus 8 that keep the image 16-byte aligned).
const FPU_FRAME: usize = 520;

extern "C" {
    fn hal_context_switch(from: *const AtomicU64, to: *const AtomicU64);
    fn hal_thread_trampoline();
}

/// What a new thread runs. It must never return: a thread ends by
/// switching away for good.
pub type ThreadEntry = fn(usize) -> !;

extern "C" fn thread_start(entry: usize, arg: usize) -> ! {
    // The entry was stored as a `ThreadEntry` in `Context::new`.
    let entry = ENTRY_TABLE.decode(entry);
    entry(arg)
}

/// Function pointers cannot be rebuilt from integers without `unsafe`, and
/// `unsafe` belongs here, so the round trip is kept in one small place.
struct EntryTable;
const ENTRY_TABLE: EntryTable = EntryTable;

impl EntryTable {
    fn encode(&self, entry: ThreadEntry) -> u64 {
        entry as *const () as u64
    }

    fn decode(&self, raw: usize) -> ThreadEntry {
        // SAFETY: `raw` was produced by `encode` from a `ThreadEntry` and
        // carried unchanged in r12 through the switch.
        unsafe { core::mem::transmute::<usize, ThreadEntry>(raw) }
    }
}

/// A saved kernel execution context (a stack pointer).
#[derive(Debug, Default)]
pub struct Context {
    rsp: AtomicU64,
}

impl Context {
    /// A context that is not resumable yet: the current thread's, to be
    /// filled in by its first switch away.
    pub const fn empty() -> Context {
        Context { rsp: AtomicU64::new(0) }
    }

    /// A context that starts `entry(arg)` on `stack`. The stack must stay
    /// alive as long as the thread can run.
    pub fn new(stack: &KernelStack, entry: ThreadEntry, arg: usize) -> Context {
        let top = stack.top();
        // The return address sits in the top word, so the trampoline
        // starts with rsp == top (16-byte aligned) and its `call` gives the
        // entry the ABI's alignment.
        let words: [u64; 7] = [
            0,                                         // r15
            0,                                         // r14
            arg as u64,                                // r13
            ENTRY_TABLE.encode(entry),                 // r12
            0,                                         // rbx
            0,                                         // rbp (ends backtraces)
            hal_thread_trampoline as *const () as u64, // return address
        ];
        let base = top - 8 * words.len() as u64;
        for (i, w) in words.iter().enumerate() {
            // SAFETY: [base, top) lies in the stack's mapped pages, which no
            // one runs on yet (the thread has not started).
            unsafe { core::ptr::write_volatile((base + 8 * i as u64) as *mut u64, *w) };
        }
        // Below the registers, the x87/SSE image the switch restores first:
        // the initial state, so a new thread never inherits another's.
        let fpu = base - FPU_FRAME as u64;
        let image = crate::user::FpuState::initial();
        for (i, chunk) in image.as_bytes().chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            // SAFETY: [fpu, base) lies in the same unused stack pages.
            unsafe { core::ptr::write_volatile((fpu + 8 * i as u64) as *mut u64, word) };
        }
        Context { rsp: AtomicU64::new(fpu) }
    }

    /// Makes this (not running, not resumable) context start `entry(arg)`
    /// on `stack`, for context slots that are reused.
    pub fn prepare(&self, stack: &KernelStack, entry: ThreadEntry, arg: usize) {
        assert!(!self.is_resumable(), "preparing a context that holds a saved thread");
        self.rsp.store(Context::new(stack, entry, arg).rsp.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Forgets a saved context whose thread will never run again, so the
    /// slot can be prepared for a new thread.
    pub fn discard(&self) {
        self.rsp.store(0, Ordering::Relaxed);
    }

    pub fn is_resumable(&self) -> bool {
        self.rsp.load(Ordering::Relaxed) != 0
    }
}

/// Saves the running context into `from` and resumes `to`. Returns when
/// some other switch resumes `from`. Interrupts must be disabled by the
/// caller so that no interrupt lands half-way.
///
/// Panics if `to` holds no saved context (already resumed, or never saved).
pub fn switch(from: &Context, to: &Context) {
    assert!(!crate::cpu::interrupts_enabled(), "context switch with interrupts enabled");
    assert!(to.is_resumable(), "switch to a context that is not saved");
    // No spin lock may be held across a switch (lock discipline, see
    // docs/architecture.md): the next thread would run with it held.
    #[cfg(feature = "lockcheck")]
    {
        let held = crate::sync::held_spinlocks();
        assert!(held == 0, "context switch with {held} spin lock(s) held");
    }
    // SAFETY: `to` holds a stack pointer saved by this function or built by
    // `Context::new`, and is consumed by the switch so it is resumed at most
    // once; `from` receives the current stack pointer, which stays valid
    // because the current thread's stack is owned by the kernel thread.
    unsafe { hal_context_switch(&from.rsp, &to.rsp) };
}
