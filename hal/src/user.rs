//! User mode: entering it, coming back, and touching user memory.
//!
//! The kernel runs a user thread by calling [`UserContext::run`], which
//! loads the saved user registers and returns to user mode. The call
//! returns when the thread makes a system call or takes an exception or
//! interrupt, with the user registers saved back into the context and the
//! reason in [`ReturnReason`]. The kernel handles it and calls `run` again.
//! This keeps all the mode-switching in this module, and every decision
//! (syscalls, signals, page faults) in safe kernel code.
//!
//! On the way in, `run` pushes the callee-saved registers and records the
//! resulting stack pointer ("KSAVE") both in the per-CPU block (where the
//! SYSCALL entry finds it) and in the TSS (`rsp0`, where the CPU puts the
//! frame of an interrupt from user mode). Either way back ends at KSAVE,
//! restores the callee-saved registers and returns from `run`.
//!
//! User memory is only touched with [`copy_from_user`] and
//! [`copy_to_user`]: they check that the range is in the user half, open
//! SMAP for the copy alone, and recover from faults, reporting the first
//! address that failed so that the kernel can resolve a demand fault and
//! retry, or answer EFAULT.

use core::arch::{asm, global_asm};
use core::mem::offset_of;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::cpu;
use crate::gdt::{KERNEL_CS, USER_CS, USER_DS};
use crate::paging::USER_END;
use crate::percpu::PerCpu;
use crate::trap::TrapFrame;

/// User general-purpose registers, instruction pointer, flags and TLS base.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GeneralRegs {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub rsp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rip: u64,
    pub rflags: u64,
    pub fs_base: u64,
    pub gs_base: u64,
}

/// Why [`UserContext::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnReason {
    /// SYSCALL: number in `rax`, arguments in rdi, rsi, rdx, r10, r8, r9.
    Syscall,
    /// A CPU exception in user mode. `fault_addr` is CR2 for a page
    /// fault and DR6 for a debug exception (vector 1).
    Exception { vector: u8, error_code: u64, fault_addr: u64 },
    /// A device or timer interrupt arrived (already handled).
    Interrupt,
}

const KIND_SYSCALL: u64 = 0;
const KIND_EXCEPTION: u64 = 1;
const KIND_INTERRUPT: u64 = 2;

/// The FXSAVE image of the x87/SSE state.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct FpuState([u8; 512]);

/// The state a new process (and a signal handler) starts with: x87
/// control word 0x37f (all exceptions masked, 64-bit precision), MXCSR
/// 0x1f80 (all masked), MXCSR_MASK 0xffff.
static INITIAL_FPU: FpuState = {
    let mut s = [0u8; 512];
    s[0] = 0x7f;
    s[1] = 0x03;
    s[24] = 0x80;
    s[25] = 0x1f;
    s[28] = 0xff;
    s[29] = 0xff;
    FpuState(s)
};

impl FpuState {
    pub fn initial() -> FpuState {
        INITIAL_FPU
    }

    /// Clears the MXCSR bits FXRSTOR faults on, so that any image, even
    /// one a program wrote, is safe to load.
    fn sanitize(&mut self) {
        self.0[26] = 0;
        self.0[27] = 0;
    }

    pub fn as_bytes(&self) -> &[u8; 512] {
        &self.0
    }

    /// An image given by a debugger (PTRACE_SETFPREGS), made safe to load.
    pub fn from_bytes(image: &[u8; 512]) -> FpuState {
        let mut state = FpuState(*image);
        state.sanitize();
        state
    }
}

/// What the next entry to user mode loads into the x87/SSE registers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum FpuLoad {
    /// Nothing: the registers hold the thread's state.
    Live,
    /// `UserContext::fpu`.
    Image,
    /// The initial state, straight from `INITIAL_FPU` (no 512-byte copy
    /// per signal delivered).
    Initial,
}

/// Everything needed to resume a user thread.
///
/// The x87/SSE registers are not saved here at every trap: the kernel
/// never uses them, so between two entries to user mode they keep holding
/// the thread's state, and a context switch saves and restores them on
/// the thread's kernel stack (`context.rs`). `fpu` only carries a state
/// to load at the next entry (a new program, a signal handler, a
/// sigreturn, a fork child) when `fpu_load` says so.
#[repr(C)]
pub struct UserContext {
    fpu: FpuState,
    pub regs: GeneralRegs,
    trap_kind: u64,
    trap_vector: u64,
    trap_error: u64,
    trap_addr: u64,
    fpu_load: FpuLoad,
}

/// A copy made on the thread that runs the context (fork and clone) takes
/// that thread's current x87/SSE state with it.
impl Clone for UserContext {
    fn clone(&self) -> UserContext {
        UserContext {
            fpu: self.fpu_snapshot(),
            regs: self.regs,
            trap_kind: self.trap_kind,
            trap_vector: self.trap_vector,
            trap_error: self.trap_error,
            trap_addr: self.trap_addr,
            fpu_load: FpuLoad::Image,
        }
    }
}

impl core::fmt::Debug for UserContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UserContext").field("regs", &self.regs).finish_non_exhaustive()
    }
}

impl Default for UserContext {
    fn default() -> Self {
        Self::new()
    }
}

const USER_RFLAGS_MASK: u64 = 0x0000_0000_0000_0dd5; // CF PF AF ZF SF TF DF OF
/// The trap flag: a debug exception after each user instruction (set by
/// a program itself, or by a tracer's PTRACE_SINGLESTEP).
pub const RFLAGS_TF: u64 = 1 << 8;
const RFLAGS_IF: u64 = 1 << 9;
const RFLAGS_RESERVED1: u64 = 1 << 1;

/// The FS and GS bases last loaded on a CPU, to skip redundant MSR
/// writes. Both are canonical: only checked values are loaded.
struct LoadedBases {
    fs: AtomicU64,
    gs: AtomicU64,
}

static LOADED_BASES: PerCpu<LoadedBases> = PerCpu::new(
    [const { crate::percpu::CacheAligned(LoadedBases { fs: AtomicU64::new(0), gs: AtomicU64::new(0) }) };
        crate::percpu::MAX_CPUS],
);

const IA32_FS_BASE: u32 = 0xC000_0100;
const IA32_KERNEL_GS_BASE: u32 = 0xC000_0102;

fn is_canonical(addr: u64) -> bool {
    !(USER_END..0xffff_8000_0000_0000).contains(&addr)
}

impl UserContext {
    pub fn new() -> UserContext {
        UserContext {
            fpu: FpuState([0; 512]),
            regs: GeneralRegs { rflags: RFLAGS_IF | RFLAGS_RESERVED1, ..GeneralRegs::default() },
            trap_kind: 0,
            trap_vector: 0,
            trap_error: 0,
            trap_addr: 0,
            fpu_load: FpuLoad::Initial,
        }
    }

    /// The thread's x87/SSE state as user mode would see it next. Only
    /// meaningful on the thread that runs this context: the live
    /// registers are that thread's.
    pub fn fpu_snapshot(&self) -> FpuState {
        match self.fpu_load {
            FpuLoad::Image => self.fpu,
            FpuLoad::Initial => INITIAL_FPU,
            FpuLoad::Live => {
                let mut state = FpuState([0; 512]);
                fxsave(&mut state);
                state
            }
        }
    }

    /// `fpu_snapshot` without the copy: brings the context's own image up
    /// to date and lends it (signal delivery writes it to the user stack).
    /// Only meaningful on the thread that runs this context.
    pub fn save_fpu(&mut self) -> &FpuState {
        match self.fpu_load {
            FpuLoad::Image => {}
            FpuLoad::Initial => {
                self.fpu = INITIAL_FPU;
                self.fpu_load = FpuLoad::Image;
            }
            // The registers keep the state too, so nothing need be loaded.
            FpuLoad::Live => fxsave(&mut self.fpu),
        }
        &self.fpu
    }

    /// Makes `state` the x87/SSE state user mode resumes with.
    pub fn set_fpu(&mut self, state: FpuState) {
        self.fpu = state;
        self.fpu_load = FpuLoad::Image;
    }

    /// User mode resumes with the initial x87/SSE state (a signal handler).
    pub fn reset_fpu(&mut self) {
        self.fpu_load = FpuLoad::Initial;
    }

    /// User mode resumes with the 512-byte FXSAVE image that `fill` writes
    /// (rt_sigreturn reads it straight from the signal frame). If `fill`
    /// fails, the initial state is used instead, as Linux does after a bad
    /// frame.
    pub fn load_fpu_with<E>(&mut self, fill: impl FnOnce(&mut [u8; 512]) -> Result<(), E>) -> Result<(), E> {
        let filled = fill(&mut self.fpu.0);
        // Even a half-written image stays loadable.
        self.fpu.sanitize();
        self.fpu_load = if filled.is_ok() { FpuLoad::Image } else { FpuLoad::Initial };
        filled
    }

    /// Runs the thread in user mode until it traps back into the kernel.
    /// Interrupts are on when it returns, whichever way: a caller may turn
    /// them off before calling, so that nothing comes between its last
    /// check and user mode (rseq's return path does).
    /// `#[inline]`: every system call comes back through here, and the
    /// kernel's run loop is its caller in another crate.
    #[inline]
    pub fn run(&mut self) -> ReturnReason {
        // The CPU must never be asked to IRET to a non-canonical or
        // kernel address: report it as the #GP it would be. The FS and GS
        // bases are checked only when they differ from the ones loaded,
        // which were checked when they were (one look at the per-CPU
        // copy, not two, on every return to user mode).
        if self.regs.rip >= USER_END || self.regs.rsp >= USER_END {
            cpu::enable_interrupts();
            return ReturnReason::Exception { vector: 13, error_code: 0, fault_addr: 0 };
        }
        self.regs.rflags = (self.regs.rflags & USER_RFLAGS_MASK) | RFLAGS_IF | RFLAGS_RESERVED1;

        cpu::disable_interrupts();
        let loaded = LOADED_BASES.get();
        if loaded.fs.load(Ordering::Relaxed) != self.regs.fs_base {
            if !is_canonical(self.regs.fs_base) {
                cpu::enable_interrupts();
                return ReturnReason::Exception { vector: 13, error_code: 0, fault_addr: 0 };
            }
            // SAFETY: canonical (checked just above); FS only affects user
            // mode, the kernel does not use FS.
            unsafe { cpu::wrmsr(IA32_FS_BASE, self.regs.fs_base) };
            loaded.fs.store(self.regs.fs_base, Ordering::Relaxed);
        }
        if loaded.gs.load(Ordering::Relaxed) != self.regs.gs_base {
            if !is_canonical(self.regs.gs_base) {
                cpu::enable_interrupts();
                return ReturnReason::Exception { vector: 13, error_code: 0, fault_addr: 0 };
            }
            // SAFETY: the inactive GS base becomes the user's on SWAPGS;
            // canonical (checked just above).
            unsafe { cpu::wrmsr(IA32_KERNEL_GS_BASE, self.regs.gs_base) };
            loaded.gs.store(self.regs.gs_base, Ordering::Relaxed);
        }
        match self.fpu_load {
            FpuLoad::Live => {}
            FpuLoad::Image => fxrstor(&self.fpu),
            FpuLoad::Initial => fxrstor(&INITIAL_FPU),
        }
        self.fpu_load = FpuLoad::Live;
        // After an ordinary system call rcx and r11 still hold the return
        // address and flags, which is exactly what SYSRET loads: take the
        // fast way back. Anything else (signals, exec, sigreturn, faults)
        // needs IRET to restore every register.
        // SYSRET with TF set would trap before the first user instruction
        // (IRET traps after it, which is what single-stepping expects).
        let fast = self.trap_kind == KIND_SYSCALL
            && self.regs.rcx == self.regs.rip
            && self.regs.r11 == self.regs.rflags
            && self.regs.rflags & RFLAGS_TF == 0;
        // SAFETY: `self` outlives the call; the assembly saves and restores
        // every callee-saved register and returns here with interrupts off.
        // SYSRET is only used with a user-half rip (checked above), so it
        // cannot fault in kernel mode.
        unsafe { hal_run_user(self, u64::from(fast)) };
        cpu::enable_interrupts();

        match self.trap_kind {
            KIND_SYSCALL => ReturnReason::Syscall,
            KIND_EXCEPTION => ReturnReason::Exception {
                vector: self.trap_vector as u8,
                error_code: self.trap_error,
                fault_addr: self.trap_addr,
            },
            _ => ReturnReason::Interrupt,
        }
    }
}

fn fxsave(image: &mut FpuState) {
    // SAFETY: FXSAVE writes exactly the 512-byte, 16-byte aligned image it
    // is given and changes no register.
    unsafe { asm!("fxsave64 [{}]", in(reg) image, options(nostack)) };
}

fn fxrstor(image: &FpuState) {
    // SAFETY: the image is 16-byte aligned and its MXCSR has no reserved
    // bit set (every way to change an `FpuState` keeps them clear), so
    // FXRSTOR cannot fault; the kernel is soft-float and never reads the
    // registers it replaces.
    unsafe { asm!("fxrstor64 [{}]", in(reg) image, options(nostack, readonly)) };
}

extern "C" {
    fn hal_run_user(ctx: *mut UserContext, use_sysret: u64);
    fn hal_syscall_entry();
}

const REGS: usize = offset_of!(UserContext, regs);

global_asm!(
    r#"
    .section .text.hal_user, "ax"
    .global hal_run_user
hal_run_user:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    /* KSAVE must be 16-byte aligned: the CPU aligns rsp0 before pushing
       an interrupt frame, and the trap path finds the context just above
       that frame. */
    mov rax, rsp
    and rsp, -16
    push rax
    push rdi
    mov gs:[{pcpu_kstack}], rsp
    mov rax, gs:[{pcpu_tss_rsp0}]
    mov [rax], rsp

    test rsi, rsi
    jnz 5f

    push {user_ds}
    push qword ptr [rdi + {regs} + {rsp}]
    push qword ptr [rdi + {regs} + {rflags}]
    push {user_cs}
    push qword ptr [rdi + {regs} + {rip}]
    mov rax, [rdi + {regs} + {rax}]
    mov rbx, [rdi + {regs} + {rbx}]
    mov rcx, [rdi + {regs} + {rcx}]
    mov rdx, [rdi + {regs} + {rdx}]
    mov rsi, [rdi + {regs} + {rsi}]
    mov rbp, [rdi + {regs} + {rbp}]
    mov r8, [rdi + {regs} + {r8}]
    mov r9, [rdi + {regs} + {r9}]
    mov r10, [rdi + {regs} + {r10}]
    mov r11, [rdi + {regs} + {r11}]
    mov r12, [rdi + {regs} + {r12}]
    mov r13, [rdi + {regs} + {r13}]
    mov r14, [rdi + {regs} + {r14}]
    mov r15, [rdi + {regs} + {r15}]
    mov rdi, [rdi + {regs} + {rdi}]
    swapgs
    iretq

5:  /* SYSRET: rcx = rip, r11 = rflags; rsp is the last thing loaded. */
    mov rax, [rdi + {regs} + {rax}]
    mov rbx, [rdi + {regs} + {rbx}]
    mov rdx, [rdi + {regs} + {rdx}]
    mov rsi, [rdi + {regs} + {rsi}]
    mov rbp, [rdi + {regs} + {rbp}]
    mov r8, [rdi + {regs} + {r8}]
    mov r9, [rdi + {regs} + {r9}]
    mov r10, [rdi + {regs} + {r10}]
    mov r12, [rdi + {regs} + {r12}]
    mov r13, [rdi + {regs} + {r13}]
    mov r14, [rdi + {regs} + {r14}]
    mov r15, [rdi + {regs} + {r15}]
    mov rcx, [rdi + {regs} + {rip}]
    mov r11, [rdi + {regs} + {rflags}]
    mov rsp, [rdi + {regs} + {rsp}]
    mov rdi, [rdi + {regs} + {rdi}]
    swapgs
    sysretq

    .global hal_syscall_entry
hal_syscall_entry:
    swapgs
    mov gs:[{pcpu_user_rsp}], rsp
    mov rsp, gs:[{pcpu_kstack}]
    push rax
    mov rax, [rsp + 8]
    mov [rax + {regs} + {rbx}], rbx
    mov [rax + {regs} + {rcx}], rcx
    mov [rax + {regs} + {rdx}], rdx
    mov [rax + {regs} + {rsi}], rsi
    mov [rax + {regs} + {rdi}], rdi
    mov [rax + {regs} + {rbp}], rbp
    mov [rax + {regs} + {r8}], r8
    mov [rax + {regs} + {r9}], r9
    mov [rax + {regs} + {r10}], r10
    mov [rax + {regs} + {r11}], r11
    mov [rax + {regs} + {r12}], r12
    mov [rax + {regs} + {r13}], r13
    mov [rax + {regs} + {r14}], r14
    mov [rax + {regs} + {r15}], r15
    mov [rax + {regs} + {rip}], rcx
    mov [rax + {regs} + {rflags}], r11
    mov rcx, gs:[{pcpu_user_rsp}]
    mov [rax + {regs} + {rsp}], rcx
    pop rcx
    mov [rax + {regs} + {rax}], rcx
    mov qword ptr [rax + {trap_kind}], {kind_syscall}
    jmp hal_user_return_to_kernel

    /* From the trap stub: rsp points at a TrapFrame from user mode that
       sits right below KSAVE. */
    .global hal_user_trap_exit
hal_user_trap_exit:
    mov rdi, rsp
    call {save}
    add rsp, {frame_size}
hal_user_return_to_kernel:
    add rsp, 8
    pop rsp
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret
"#,
    pcpu_kstack = const crate::percpu::OFFSET_KERNEL_STACK,
    pcpu_user_rsp = const crate::percpu::OFFSET_USER_RSP,
    pcpu_tss_rsp0 = const crate::percpu::OFFSET_TSS_RSP0,
    user_ds = const USER_DS as u64,
    user_cs = const USER_CS as u64,
    regs = const REGS,
    rax = const offset_of!(GeneralRegs, rax),
    rbx = const offset_of!(GeneralRegs, rbx),
    rcx = const offset_of!(GeneralRegs, rcx),
    rdx = const offset_of!(GeneralRegs, rdx),
    rsi = const offset_of!(GeneralRegs, rsi),
    rdi = const offset_of!(GeneralRegs, rdi),
    rbp = const offset_of!(GeneralRegs, rbp),
    rsp = const offset_of!(GeneralRegs, rsp),
    r8 = const offset_of!(GeneralRegs, r8),
    r9 = const offset_of!(GeneralRegs, r9),
    r10 = const offset_of!(GeneralRegs, r10),
    r11 = const offset_of!(GeneralRegs, r11),
    r12 = const offset_of!(GeneralRegs, r12),
    r13 = const offset_of!(GeneralRegs, r13),
    r14 = const offset_of!(GeneralRegs, r14),
    r15 = const offset_of!(GeneralRegs, r15),
    rip = const offset_of!(GeneralRegs, rip),
    rflags = const offset_of!(GeneralRegs, rflags),
    trap_kind = const offset_of!(UserContext, trap_kind),
    kind_syscall = const KIND_SYSCALL,
    frame_size = const core::mem::size_of::<TrapFrame>(),
    save = sym save_user_trap,
);

/// Copies a user-mode trap frame into the context whose address `run`
/// left at KSAVE, right above the frame.
extern "C" fn save_user_trap(frame: &TrapFrame) {
    let ksave = frame as *const TrapFrame as u64 + core::mem::size_of::<TrapFrame>() as u64;
    // SAFETY: for traps from user mode the CPU pushed this frame at TSS
    // rsp0 = KSAVE, where `hal_run_user` stored a pointer to the running
    // `UserContext`, which is exclusively borrowed by `run` for the whole
    // time the thread is in user mode.
    let ctx = unsafe { &mut **(ksave as *const *mut UserContext) };
    let r = &mut ctx.regs;
    r.rax = frame.rax;
    r.rbx = frame.rbx;
    r.rcx = frame.rcx;
    r.rdx = frame.rdx;
    r.rsi = frame.rsi;
    r.rdi = frame.rdi;
    r.rbp = frame.rbp;
    r.rsp = frame.rsp;
    r.r8 = frame.r8;
    r.r9 = frame.r9;
    r.r10 = frame.r10;
    r.r11 = frame.r11;
    r.r12 = frame.r12;
    r.r13 = frame.r13;
    r.r14 = frame.r14;
    r.r15 = frame.r15;
    r.rip = frame.rip;
    r.rflags = frame.rflags;
    if frame.vector < u64::from(crate::trap::IRQ_BASE) {
        ctx.trap_kind = KIND_EXCEPTION;
        ctx.trap_vector = frame.vector;
        ctx.trap_error = frame.error_code;
        // A page fault's address, or why a debug exception (#DB) came:
        // DR6, which is reset for the next one.
        ctx.trap_addr = match frame.vector {
            14 => cpu::read_cr2(),
            1 => cpu::take_dr6(),
            _ => 0,
        };
    } else {
        ctx.trap_kind = KIND_INTERRUPT;
    }
}

static SMAP: AtomicBool = AtomicBool::new(false);

/// Enables SYSCALL and points it at the entry stub (per CPU).
pub(crate) fn init_syscall() {
    const IA32_EFER: u32 = 0xC000_0080;
    const IA32_STAR: u32 = 0xC000_0081;
    const IA32_LSTAR: u32 = 0xC000_0082;
    const IA32_FMASK: u32 = 0xC000_0084;
    // SYSRET loads CS from STAR[63:48]+16 and SS from STAR[63:48]+8.
    let star = (u64::from(USER_DS - 3 - 8) << 48) | (u64::from(KERNEL_CS) << 32);
    // SAFETY: the entry stub switches to the kernel stack before touching
    // memory; the selectors match the GDT; FMASK clears IF, TF, DF, AC and
    // NT so the stub starts with interrupts off.
    unsafe {
        cpu::wrmsr(IA32_EFER, cpu::rdmsr(IA32_EFER) | 1);
        cpu::wrmsr(IA32_STAR, star);
        cpu::wrmsr(IA32_LSTAR, hal_syscall_entry as *const () as u64);
        cpu::wrmsr(IA32_FMASK, 0x47700);
    }
}

/// Enables SSE for user mode and SMAP where present.
pub(crate) fn init_cpu_features(smap: bool) {
    // SAFETY: CR0.MP set / EM clear and CR4.OSFXSR/OSXMMEXCPT are the
    // architectural way to allow SSE; the kernel itself never uses it.
    unsafe {
        let mut cr0: u64;
        asm!("mov {}, cr0", out(reg) cr0, options(nomem, nostack));
        cr0 = (cr0 | 0x2) & !0x4;
        asm!("mov cr0, {}", in(reg) cr0, options(nostack));
        let mut cr4 = cpu::read_cr4() | (1 << 9) | (1 << 10);
        if smap {
            cr4 |= 1 << 21;
        }
        cpu::write_cr4(cr4);
        asm!("fninit", options(nomem, nostack));
    }
    SMAP.store(smap, Ordering::Relaxed);
}

global_asm!(
    r#"
    .section .text.hal_usercopy, "ax"
    /* rdi = dst, rsi = src, rdx = len, cl = smap; returns rax = bytes NOT copied */
    .global hal_user_copy
hal_user_copy:
    test cl, cl
    jz 1f
    stac
    /* Eight bytes at a time, then the tail. A fault in the quadword loop
       leaves rsi/rdi at the quadword that faulted; the byte loop then
       copies up to the exact faulting byte, so the count returned (and the
       address the caller resolves and retries at) is exact. */
1:  mov rcx, rdx
    shr rcx, 3
40: rep movsq
    mov rcx, rdx
    and rcx, 7
42: rep movsb
    xor eax, eax
    jmp 2f
41: shl rcx, 3
    and rdx, 7
    add rcx, rdx
    jmp 42b
43: mov rax, rcx
2:  test r8b, r8b
    jz 3f
    clac
3:  ret

    /* rdi = user address (4-aligned), esi = expected, edx = new, cl = smap;
       r8 = where to store the value found. Returns rax = 0, or 1 on a fault. */
    .global hal_user_cmpxchg_u32
hal_user_cmpxchg_u32:
    test cl, cl
    jz 1f
    stac
1:  mov eax, esi
50: lock cmpxchg [rdi], edx
    mov [r8], eax
    xor eax, eax
    jmp 2f
51: mov eax, 1
2:  test cl, cl
    jz 3f
    clac
3:  ret

    .section .kiln_extable, "a"
    .balign 8
    .quad 40b, 41b
    .quad 42b, 43b
    .quad 50b, 51b
"#
);

extern "C" {
    fn hal_user_copy(dst: *mut u8, src: *const u8, len: usize, smap: u8, smap_again: u8) -> usize;
    fn hal_user_cmpxchg_u32(addr: u64, expected: u32, new: u32, smap: u8, found: *mut u32) -> u64;
}

/// Atomically replaces the 32-bit user word at `addr` with `new` if it
/// holds `expected`, as another CPU's `lock cmpxchg` on it would; returns
/// the value it held (equal to `expected` when the store happened). For
/// words user threads update concurrently (robust futexes). A fault is
/// reported, not resolved: the caller faults the page in and retries.
pub fn cmpxchg_u32(addr: u64, expected: u32, new: u32) -> Result<u32, UserFault> {
    if !addr.is_multiple_of(4) || !user_range_ok(addr, 4) {
        return Err(UserFault { addr });
    }
    let smap = u8::from(SMAP.load(Ordering::Relaxed));
    let mut found = 0u32;
    // SAFETY: the 4 aligned bytes are in the user half (checked), which
    // holds no Rust objects; a fault resumes at the fixup and reports it;
    // `found` is a local the assembly writes once.
    let failed = unsafe { hal_user_cmpxchg_u32(addr, expected, new, smap, &mut found) };
    if failed == 0 {
        Ok(found)
    } else {
        Err(UserFault { addr })
    }
}

/// A user access failed at `addr` (nothing mapped, or not permitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserFault {
    pub addr: u64,
}

fn user_range_ok(addr: u64, len: usize) -> bool {
    addr.checked_add(len as u64).is_some_and(|end| end <= USER_END)
}

/// Copies `dst.len()` bytes from user address `src`.
pub fn copy_from_user(dst: &mut [u8], src: u64) -> Result<(), UserFault> {
    if dst.is_empty() {
        return Ok(());
    }
    if !user_range_ok(src, dst.len()) {
        return Err(UserFault { addr: src });
    }
    let smap = u8::from(SMAP.load(Ordering::Relaxed));
    // SAFETY: the source range is entirely in the user half (checked), so
    // it cannot alias kernel objects; the destination is an exclusive Rust
    // buffer of exactly `len` bytes; faults resume at the fixup.
    let left = unsafe { hal_user_copy(dst.as_mut_ptr(), src as *const u8, dst.len(), smap, smap) };
    if left == 0 {
        Ok(())
    } else {
        Err(UserFault { addr: src + (dst.len() - left) as u64 })
    }
}

/// Copies `len` bytes of `frame` from `offset` to user address `dst`,
/// with no kernel buffer between (the page cache's read(2)). A fault is
/// reported where it stopped, not resolved: bytes before it were copied.
pub fn copy_frame_to_user(
    dst: u64,
    frame: &crate::frame::UserFrame,
    offset: usize,
    len: usize,
) -> Result<(), UserFault> {
    assert!(offset + len <= crate::mm::PAGE_SIZE as usize, "copy past the end of a frame");
    if len == 0 {
        return Ok(());
    }
    if !user_range_ok(dst, len) {
        return Err(UserFault { addr: dst });
    }
    let smap = u8::from(SMAP.load(Ordering::Relaxed));
    let src = (frame.paddr().to_virt() as *const u8).wrapping_add(offset);
    // User frames are never Rust objects, so a user store racing with the
    // copy (a shared mapping of the same page, even as the destination)
    // is data, not an aliasing violation; faults resume at the fixup.
    // SAFETY: `dst..dst+len` is in the user half (checked); the source is
    // inside a user frame `frame` keeps alive, via the direct map.
    let left = unsafe { hal_user_copy(dst as *mut u8, src, len, smap, smap) };
    if left == 0 {
        Ok(())
    } else {
        Err(UserFault { addr: dst + (len - left) as u64 })
    }
}

/// Copies `src` to user address `dst`.
pub fn copy_to_user(dst: u64, src: &[u8]) -> Result<(), UserFault> {
    if src.is_empty() {
        return Ok(());
    }
    if !user_range_ok(dst, src.len()) {
        return Err(UserFault { addr: dst });
    }
    let smap = u8::from(SMAP.load(Ordering::Relaxed));
    // SAFETY: the destination range is entirely in the user half
    // (checked), which holds no Rust objects; the source is a Rust slice;
    // faults resume at the fixup.
    let left = unsafe { hal_user_copy(dst as *mut u8, src.as_ptr(), src.len(), smap, smap) };
    if left == 0 {
        Ok(())
    } else {
        Err(UserFault { addr: dst + (src.len() - left) as u64 })
    }
}
