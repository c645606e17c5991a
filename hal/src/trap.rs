//! Interrupts and exceptions: the IDT, the entry stubs and dispatch.
//!
//! Every vector has a stub that pushes a uniform [`TrapFrame`] and calls
//! [`hal_trap_dispatch`]. Exceptions first get a chance at the fault-recovery
//! table ([`crate::extable`]); anything else in kernel mode is fatal and is
//! reported with registers and a symbolized backtrace. Device interrupts are
//! acknowledged at the local APIC and handed to whichever handler the kernel
//! registered for the vector.

use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::gdt;
use crate::sync::SpinLock;

/// First vector used for device interrupts (below are CPU exceptions).
pub const IRQ_BASE: u8 = 32;
pub const TIMER_VECTOR: u8 = 0xEF;
/// IPI: another CPU queued work for this one (handled by the kernel).
pub const RESCHEDULE_VECTOR: u8 = 0xF0;
/// IPI: another CPU changed page tables this CPU may have cached
/// (handled here, see [`crate::tlb`]).
pub const TLB_SHOOTDOWN_VECTOR: u8 = 0xF1;
pub const SPURIOUS_VECTOR: u8 = 0xFF;

/// Registers saved on entry, in the order the common stub pushes them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

impl TrapFrame {
    pub fn from_user(&self) -> bool {
        self.cs & 3 == 3
    }
}

global_asm!(
    r#"
    .altmacro
    .macro hal_isr_stub n
    .balign 16
hal_isr_stub_\n:
    .if (\n == 8) || (\n == 10) || (\n == 11) || (\n == 12) || (\n == 13) || (\n == 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
    .else
    push 0
    .endif
    push \n
    jmp hal_isr_common
    .endm

    .macro hal_isr_addr n
    .quad hal_isr_stub_\n
    .endm

    .section .text.hal_isr, "ax"
    .set i, 0
    .rept 256
    hal_isr_stub %i
    .set i, i + 1
    .endr

hal_isr_common:
    test qword ptr [rsp + 24], 3
    jz 1f
    swapgs
1:
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    mov rdi, rsp
    cld
    call {dispatch}
    /* Traps from user mode end the current `UserContext::run`. */
    test qword ptr [rsp + 18 * 8], 3
    jnz hal_user_trap_exit
    .global hal_trap_return
hal_trap_return:
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16
    iretq

    .section .rodata.hal_isr_table, "a"
    .balign 8
    .global hal_isr_table
hal_isr_table:
    .set i, 0
    .rept 256
    hal_isr_addr %i
    .set i, i + 1
    .endr
"#,
    dispatch = sym hal_trap_dispatch,
);

extern "C" {
    static hal_isr_table: [u64; 256];
}

#[repr(C, align(16))]
struct Idt([[u64; 2]; 256]);

static IDT: SpinLock<Idt> = SpinLock::new(Idt([[0; 2]; 256]));

fn gate(handler: u64, ist: u8, user_callable: bool) -> [u64; 2] {
    let dpl = if user_callable { 3u64 } else { 0 };
    let low = (handler & 0xffff)
        | (u64::from(gdt::KERNEL_CS) << 16)
        | (u64::from(ist) << 32)
        | ((0x8E | (dpl << 5)) << 40) // present, 64-bit interrupt gate
        | (((handler >> 16) & 0xffff) << 48);
    [low, handler >> 32]
}

pub(crate) fn init_idt() {
    let mut idt = IDT.lock();
    // SAFETY: the table is a static array of 256 stub addresses emitted
    // by the assembly above and never written.
    let stubs = unsafe { &hal_isr_table };
    for (vector, &handler) in stubs.iter().enumerate() {
        let ist = match vector {
            8 => gdt::IST_DOUBLE_FAULT,
            2 => gdt::IST_NMI,
            _ => 0,
        };
        idt.0[vector] = gate(handler, ist, vector == 3);
    }
    load_idt(&idt.0);
}

/// Loads the (already built) IDT on an application processor.
pub(crate) fn load_on_this_cpu() {
    let idt = IDT.lock();
    load_idt(&idt.0);
}

fn load_idt(table: &[[u64; 2]; 256]) {
    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let ptr = Pointer { limit: (core::mem::size_of::<Idt>() - 1) as u16, base: table.as_ptr() as u64 };
    // SAFETY: the IDT is a static that lives forever and every gate points
    // at a stub in this module.
    unsafe { asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack, preserves_flags)) };
}

/// A device interrupt handler registered by the kernel.
pub type IrqHandler = fn(vector: u8);

static HANDLERS: SpinLock<[Option<IrqHandler>; 256]> = SpinLock::new([None; 256]);

/// Registers `handler` for `vector` (>= [`IRQ_BASE`]).
pub fn register_handler(vector: u8, handler: IrqHandler) {
    assert!(vector >= IRQ_BASE, "vector {vector} is a CPU exception");
    HANDLERS.lock()[vector as usize] = Some(handler);
}

static EXCEPTION_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Per CPU: whether the interrupt being handled arrived in user mode.
static FROM_USER: crate::percpu::PerCpu<core::sync::atomic::AtomicBool> = crate::percpu::PerCpu::new(
    [const { crate::percpu::CacheAligned(core::sync::atomic::AtomicBool::new(false)) }; crate::percpu::MAX_CPUS],
);

static LAST_USER_RIP: crate::percpu::PerCpu<core::sync::atomic::AtomicU64> = crate::percpu::PerCpu::new(
    [const { crate::percpu::CacheAligned(core::sync::atomic::AtomicU64::new(0)) }; crate::percpu::MAX_CPUS],
);

/// The user instruction pointer the last interrupt from user mode hit
/// (for diagnostics).
pub fn last_user_rip() -> u64 {
    LAST_USER_RIP.get().load(Ordering::Relaxed)
}

/// Whether the interrupt being handled on this CPU interrupted user mode.
/// A handler must not switch threads then: the user thread's FPU state is
/// still live in the registers until `UserContext::run` saves it, so the
/// switch has to wait until the thread is back in its run loop.
pub fn interrupted_user_mode() -> bool {
    FROM_USER.get().load(Ordering::Relaxed)
}

/// How many exceptions the fault-recovery table has absorbed (for tests).
pub fn recovered_faults() -> usize {
    EXCEPTION_COUNT.load(Ordering::Relaxed)
}

extern "C" fn hal_trap_dispatch(frame: &mut TrapFrame) {
    let vector = frame.vector as u8;
    if vector < IRQ_BASE {
        handle_exception(frame);
        return;
    }
    if vector == SPURIOUS_VECTOR {
        return;
    }
    if vector == TLB_SHOOTDOWN_VECTOR {
        crate::apic::end_of_interrupt();
        crate::tlb::answer();
        return;
    }
    // Acknowledge first: the handler may switch threads and not come back
    // here for a long time.
    crate::apic::end_of_interrupt();
    let handler = HANDLERS.lock()[vector as usize];
    let outer = FROM_USER.get().swap(frame.from_user(), Ordering::Relaxed);
    if frame.from_user() {
        LAST_USER_RIP.get().store(frame.rip, Ordering::Relaxed);
    }
    if let Some(handler) = handler {
        handler(vector);
    }
    // Look the slot up again: a handler that switched threads (only ones
    // that interrupted kernel mode do) may return on another CPU, and
    // writing the first CPU's flag would make an interrupt from user mode
    // being handled there look like one from kernel mode, which may switch
    // threads inside the handler instead of deferring the preemption to
    // the user thread's run loop.
    FROM_USER.get().store(outer, Ordering::Relaxed);
}

fn handle_exception(frame: &mut TrapFrame) {
    let vector = frame.vector as u8;
    if !frame.from_user() && (vector == 14 || vector == 13) {
        if let Some(fixup) = crate::extable::fixup_for(frame.rip) {
            EXCEPTION_COUNT.fetch_add(1, Ordering::Relaxed);
            frame.rip = fixup;
            return;
        }
    }
    if frame.from_user() {
        // Reported to the kernel as the return value of `UserContext::run`.
        return;
    }
    report_fatal(frame);
}

pub fn exception_name(vector: u8) -> &'static str {
    match vector {
        0 => "divide error",
        1 => "debug",
        2 => "NMI",
        3 => "breakpoint",
        4 => "overflow",
        5 => "bound range exceeded",
        6 => "invalid opcode",
        7 => "device not available",
        8 => "double fault",
        10 => "invalid TSS",
        11 => "segment not present",
        12 => "stack-segment fault",
        13 => "general protection fault",
        14 => "page fault",
        16 => "x87 floating-point error",
        17 => "alignment check",
        18 => "machine check",
        19 => "SIMD floating-point error",
        20 => "virtualization exception",
        21 => "control protection",
        _ => "reserved exception",
    }
}

fn report_fatal(frame: &TrapFrame) -> ! {
    use core::fmt::Write;
    let mut out = crate::serial::RawConsole;
    let vector = frame.vector as u8;
    let _ = writeln!(
        out,
        "\n!!! CPU exception {} ({}) error={:#x} on cpu {} in {} mode",
        vector,
        exception_name(vector),
        frame.error_code,
        crate::percpu::cpu_id(),
        if frame.from_user() { "user" } else { "kernel" }
    );
    let cr2 = crate::cpu::read_cr2();
    if vector == 14 || vector == 8 {
        let _ = writeln!(out, "    fault address (cr2) = {cr2:#018x}");
    }
    if crate::context::is_stack_guard(cr2) && (vector == 14 || vector == 8) {
        let _ = writeln!(out, "    kernel stack overflow: {cr2:#x} is a stack guard page");
    }
    let _ = writeln!(
        out,
        "    rip={:#018x} rsp={:#018x} rflags={:#x} cs={:#x} ss={:#x}",
        frame.rip, frame.rsp, frame.rflags, frame.cs, frame.ss
    );
    let _ = writeln!(
        out,
        "    rax={:#018x} rbx={:#018x} rcx={:#018x} rdx={:#018x}",
        frame.rax, frame.rbx, frame.rcx, frame.rdx
    );
    let _ = writeln!(
        out,
        "    rsi={:#018x} rdi={:#018x} rbp={:#018x} r8 ={:#018x}",
        frame.rsi, frame.rdi, frame.rbp, frame.r8
    );
    let _ = writeln!(
        out,
        "    r9 ={:#018x} r10={:#018x} r11={:#018x} r12={:#018x}",
        frame.r9, frame.r10, frame.r11, frame.r12
    );
    let _ = writeln!(
        out,
        "    r13={:#018x} r14={:#018x} r15={:#018x} cr3={:#x}",
        frame.r13,
        frame.r14,
        frame.r15,
        crate::cpu::read_cr3()
    );
    crate::backtrace::print_from(&mut out, frame.rip, frame.rbp);
    crate::qemu::exit_failure();
}
