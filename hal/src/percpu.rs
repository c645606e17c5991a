//! Per-CPU identity.
//!
//! Each CPU's GS base points at its [`CpuLocal`] block, so a CPU can find
//! itself with one memory read. Only the boot CPU runs for now; everything
//! here is indexed by CPU number so that application processors slot in.

use core::arch::asm;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub const MAX_CPUS: usize = 8;

const IA32_GS_BASE: u32 = 0xC000_0101;
const IA32_KERNEL_GS_BASE: u32 = 0xC000_0102;

/// The block GS points at. Field offsets are used by assembly (syscall
/// entry), so the layout is fixed. Every system call writes two of its
/// fields, so each CPU's block has a cache line of its own: shared, the
/// line bounced between CPUs on every call (under TCG between host
/// threads), and two processes making system calls on two CPUs ran no
/// faster than on one.
#[repr(C, align(64))]
pub(crate) struct CpuLocal {
    /// Address of this block, so `gs:[0]` yields a normal pointer.
    self_ptr: AtomicU64,
    cpu_id: AtomicUsize,
    /// Kernel stack top for entries from user mode (offset 16).
    pub(crate) kernel_stack_top: AtomicU64,
    /// Scratch slot for the user stack pointer during syscall entry (offset 24).
    pub(crate) user_rsp_scratch: AtomicU64,
    /// Address of this CPU's TSS `rsp0` field (offset 32).
    pub(crate) tss_rsp0_ptr: AtomicU64,
}

pub(crate) const OFFSET_KERNEL_STACK: usize = core::mem::offset_of!(CpuLocal, kernel_stack_top);
pub(crate) const OFFSET_USER_RSP: usize = core::mem::offset_of!(CpuLocal, user_rsp_scratch);
pub(crate) const OFFSET_TSS_RSP0: usize = core::mem::offset_of!(CpuLocal, tss_rsp0_ptr);

static CPU_LOCALS: [CpuLocal; MAX_CPUS] = [const {
    CpuLocal {
        self_ptr: AtomicU64::new(0),
        cpu_id: AtomicUsize::new(0),
        kernel_stack_top: AtomicU64::new(0),
        user_rsp_scratch: AtomicU64::new(0),
        tss_rsp0_ptr: AtomicU64::new(0),
    }
}; MAX_CPUS];

static ONLINE: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn init(cpu: usize) {
    let local = &CPU_LOCALS[cpu];
    let addr = local as *const CpuLocal as u64;
    local.self_ptr.store(addr, Ordering::Relaxed);
    local.cpu_id.store(cpu, Ordering::Relaxed);
    // SAFETY: GS_BASE points at a static block that lives forever. The
    // inactive base is the user's GS (0 until a thread sets one): SWAPGS
    // happens exactly on user-mode entry and exit.
    unsafe {
        crate::cpu::wrmsr(IA32_GS_BASE, addr);
        crate::cpu::wrmsr(IA32_KERNEL_GS_BASE, 0);
    }
    ONLINE.fetch_add(1, Ordering::Release);
}

/// Whether `cpu_id` works on this CPU. Before the boot CPU's `init`, GS
/// base is 0 and it cannot; after it, every CPU that runs kernel code has
/// its block (an application processor's first act is its `init`, with no
/// lock taken before).
#[cfg(feature = "lockcheck")]
#[inline]
pub(crate) fn this_cpu_ready() -> bool {
    ONLINE.load(Ordering::Acquire) != 0
}

/// The number of the CPU this code runs on.
#[inline]
pub fn cpu_id() -> usize {
    let id: usize;
    // SAFETY: GS base is set in `init` before any code can call this, and
    // offset 8 of `CpuLocal` is `cpu_id`.
    unsafe { asm!("mov {}, gs:[8]", out(reg) id, options(nostack, readonly, preserves_flags)) };
    id
}

pub(crate) fn set_tss_rsp0_ptr(cpu: usize, ptr: u64) {
    CPU_LOCALS[cpu].tss_rsp0_ptr.store(ptr, Ordering::Relaxed);
}

/// How many CPUs are running.
pub fn online_cpus() -> usize {
    ONLINE.load(Ordering::Acquire)
}

/// Data with one slot per CPU. Access goes through the current CPU's slot;
/// callers that must not migrate between reading the CPU number and using
/// the slot hold an [`crate::sync::IrqGuard`] (the scheduler only switches
/// on interrupts or explicit yields).
pub struct PerCpu<T> {
    slots: [CacheAligned<T>; MAX_CPUS],
}

/// A value alone in its cache line(s). Per-CPU slots are written by their
/// own CPU only; packed side by side, those writes would still make the
/// shared line bounce between CPUs.
#[repr(align(64))]
pub struct CacheAligned<T>(pub T);

impl<T> PerCpu<T> {
    /// `slots` is built as `[const { CacheAligned(value) }; MAX_CPUS]`.
    pub const fn new(slots: [CacheAligned<T>; MAX_CPUS]) -> PerCpu<T> {
        PerCpu { slots }
    }

    pub fn get(&self) -> &T {
        &self.slots[cpu_id()].0
    }

    pub fn get_for(&self, cpu: usize) -> &T {
        &self.slots[cpu].0
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots[..online_cpus().max(1)].iter().map(|s| &s.0)
    }
}
