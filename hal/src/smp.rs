//! Application processors: finding them, starting them, and addressing
//! them with inter-processor interrupts.
//!
//! The boot CPU learns the other CPUs' local APIC ids from the ACPI MADT
//! ([`crate::acpi`]), copies a small real-mode trampoline to the page at
//! [`TRAMPOLINE_PHYS`], and wakes each CPU in turn with INIT, STARTUP,
//! STARTUP. The trampoline climbs to long mode on the boot page tables
//! (which still identity-map low memory), jumps to the higher half, loads
//! the kernel's own page tables and a guarded kernel stack the boot CPU
//! allocated for it, and enters [`hal_ap_start`], which sets up the CPU's
//! GDT, IDT, system-call MSRs and local APIC before handing the CPU to the
//! kernel as its idle thread.
//!
//! CPU numbers are dense (0 is the boot CPU, then the order the MADT lists
//! the others in) and index every per-CPU table; [`apic_id_of`] maps them to
//! the APIC ids IPIs are addressed by.

use core::arch::global_asm;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use crate::apic::{self, Ipi};
use crate::context::KernelStack;
use crate::mm::PhysAddr;
use crate::percpu::MAX_CPUS;
use crate::sync::Once;

/// Where the trampoline runs: a page below 1 MiB (a STARTUP IPI names a
/// page number below 256), reserved from the frame allocator at boot.
pub(crate) const TRAMPOLINE_PHYS: u64 = 0x8000;

// The trampoline's data comes first, at fixed offsets, because the
// assembler cannot use label differences inside memory operands.
const FIELD_BOOT_CR3: u64 = 8;
const FIELD_KERNEL_CR3: u64 = 16;
const FIELD_STACK_TOP: u64 = 24;
const FIELD_CPU: u64 = 32;
const GDT_PTR: u64 = 72;

global_asm!(
    r#"
    .section .rodata.hal_ap_trampoline, "a"
    .balign 16
    .global hal_ap_trampoline_start
hal_ap_trampoline_start:
    .code16
    jmp ap_real_mode                 /* over the data, to offset 80 */
    .balign 8
    .quad 0                          /* 8: boot page tables (32-bit CR3) */
    .quad 0                          /* 16: kernel page tables */
    .quad 0                          /* 24: kernel stack top */
    .quad 0                          /* 32: CPU number */
ap_gdt:                              /* 40 */
    .quad 0
    .quad 0x00cf9a000000ffff         /* 0x08: 32-bit code */
    .quad 0x00cf92000000ffff         /* 0x10: data */
    .quad 0x00af9a000000ffff         /* 0x18: 64-bit code */
    .short 31                        /* 72: GDT pointer */
    .long {base} + 40
    .balign 16
ap_real_mode:                        /* 80 */
    cli
    cld
    xor ax, ax
    mov ds, ax
    lgdt [{gdt_ptr}]
    mov eax, cr0
    or eax, 1
    mov cr0, eax
    /* ljmp 0x08:ap_pm32 with a 32-bit offset */
    .byte 0x66, 0xea
    .long {base} + (ap_pm32 - hal_ap_trampoline_start)
    .short 0x08

    .code32
ap_pm32:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov eax, cr4
    or eax, 0x20                     /* PAE */
    mov cr4, eax
    mov eax, [{boot_cr3}]
    mov cr3, eax
    mov ecx, 0xC0000080              /* EFER */
    rdmsr
    or eax, 0x900                    /* LME | NXE */
    wrmsr
    mov eax, cr0
    or eax, 0x80010001               /* PG | WP | PE */
    mov cr0, eax
    /* ljmp 0x18:ap_long_mode */
    .byte 0xea
    .long {base} + (ap_long_mode - hal_ap_trampoline_start)
    .short 0x18

    .code64
ap_long_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    /* Everything the higher half needs, read while low memory is mapped. */
    mov rsp, [{stack_top}]
    mov rdi, [{cpu}]
    mov rbx, [{kernel_cr3}]
    movabs rax, offset hal_ap_entry64
    jmp rax
    .global hal_ap_trampoline_end
hal_ap_trampoline_end:

    .section .text.hal_ap_entry64, "ax"
hal_ap_entry64:
    mov cr3, rbx
    xor ebp, ebp
    call {rust_entry}
    ud2
"#,
    base = const TRAMPOLINE_PHYS,
    gdt_ptr = const TRAMPOLINE_PHYS + GDT_PTR,
    boot_cr3 = const TRAMPOLINE_PHYS + FIELD_BOOT_CR3,
    kernel_cr3 = const TRAMPOLINE_PHYS + FIELD_KERNEL_CR3,
    stack_top = const TRAMPOLINE_PHYS + FIELD_STACK_TOP,
    cpu = const TRAMPOLINE_PHYS + FIELD_CPU,
    rust_entry = sym hal_ap_start,
);

extern "C" {
    static hal_ap_trampoline_start: u8;
    static hal_ap_trampoline_end: u8;
    static hal_boot_pml4: u8;
}

/// How long a STARTUP IPI gets to show signs of life before the second
/// one (and then before giving up on the CPU). Generous: a host can stall
/// an emulated CPU's first instructions.
const STARTUP_WAIT_NS: u64 = 200_000_000;

/// What the kernel runs on each application processor once it is set up:
/// `f(cpu)` never returns (it becomes the CPU's idle loop).
pub type ApMain = fn(cpu: usize) -> !;

static AP_MAIN: Once<ApMain> = Once::new();
/// Local APIC id of each CPU number.
static APIC_IDS: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];
/// CPUs that finished `hal_ap_start` (the boot CPU counts from the start).
static STARTED: AtomicUsize = AtomicUsize::new(1);
/// Set by an AP once it no longer needs the trampoline's fields.
static AP_ALIVE: AtomicBool = AtomicBool::new(false);

/// The local APIC id of CPU number `cpu`.
pub fn apic_id_of(cpu: usize) -> u32 {
    APIC_IDS[cpu].load(Ordering::Relaxed)
}

/// How many CPUs run (the boot CPU and every started AP).
pub fn cpu_count() -> usize {
    STARTED.load(Ordering::Acquire)
}

/// Starts every usable CPU the MADT lists, up to `limit` CPUs in all, one
/// at a time, each running `ap_main`. Returns how many CPUs run now.
pub fn start_application_processors(limit: usize, ap_main: ApMain) -> usize {
    let bsp = apic::local_apic_id();
    APIC_IDS[0].store(bsp, Ordering::Relaxed);
    AP_MAIN.set(ap_main);
    let Some(ids) = crate::acpi::cpu_apic_ids() else {
        log_line(format_args!("smp: no ACPI MADT, running on the boot CPU only"));
        return 1;
    };
    install_trampoline();
    for apic_id in ids.iter().copied().filter(|&id| id != bsp) {
        let cpu = cpu_count();
        if cpu >= limit.min(MAX_CPUS) {
            break;
        }
        if !start_one(cpu, apic_id) {
            log_line(format_args!("smp: CPU with APIC id {apic_id} did not start"));
        }
    }
    cpu_count()
}

fn log_line(args: core::fmt::Arguments<'_>) {
    use core::fmt::Write;
    let _ = writeln!(crate::serial::RawConsole, "{args}");
}

/// Copies the trampoline to its page and fills in the shared fields.
fn install_trampoline() {
    let (start, end) = trampoline_bounds();
    assert!(end - start <= 4096, "AP trampoline larger than a page");
    // SAFETY: the trampoline's bytes are in the kernel's read-only image
    // between the two symbols; the destination page is reserved at boot
    // for exactly this, reached through the writable direct map, and no
    // CPU executes it until the STARTUP IPI below.
    unsafe {
        core::ptr::copy_nonoverlapping(
            start as *const u8,
            PhysAddr(TRAMPOLINE_PHYS).to_virt() as *mut u8,
            (end - start) as usize,
        );
    }
    // The boot tables are linked at their physical address (identity).
    let boot_pml4 = core::ptr::addr_of!(hal_boot_pml4) as u64;
    write_field(FIELD_BOOT_CR3, boot_pml4);
    write_field(FIELD_KERNEL_CR3, crate::paging::kernel_root().0);
}

fn trampoline_bounds() -> (u64, u64) {
    (core::ptr::addr_of!(hal_ap_trampoline_start) as u64, core::ptr::addr_of!(hal_ap_trampoline_end) as u64)
}

/// Writes the trampoline copy's field at `offset`.
fn write_field(offset: u64, value: u64) {
    assert!(offset.is_multiple_of(8) && offset + 8 <= GDT_PTR, "not a trampoline field");
    let dst = PhysAddr(TRAMPOLINE_PHYS + offset).to_virt() as *mut u64;
    // SAFETY: `dst` is an 8-byte aligned field (the page is aligned) inside
    // the reserved trampoline page; an AP reads it only after the STARTUP
    // IPI, which is sent after this write.
    unsafe { core::ptr::write_volatile(dst, value) };
}

/// INIT, STARTUP, STARTUP for one CPU; true once it reported in.
fn start_one(cpu: usize, apic_id: u32) -> bool {
    let Ok(stack) = KernelStack::new() else {
        return false;
    };
    APIC_IDS[cpu].store(apic_id, Ordering::Relaxed);
    write_field(FIELD_STACK_TOP, stack.top());
    write_field(FIELD_CPU, cpu as u64);
    AP_ALIVE.store(false, Ordering::SeqCst);
    let page = (TRAMPOLINE_PHYS >> 12) as u8;
    apic::send_ipi(apic_id, Ipi::Init);
    crate::time::spin_ns(10_000_000);
    for _ in 0..2 {
        apic::send_ipi(apic_id, Ipi::Startup(page));
        if wait_alive(STARTUP_WAIT_NS) {
            // The stack is the AP's for good: it becomes its idle thread's.
            core::mem::forget(stack);
            // Wait for it to finish its setup, so CPU numbers stay dense.
            while STARTED.load(Ordering::Acquire) <= cpu {
                crate::cpu::pause();
            }
            return true;
        }
    }
    // A CPU that never ran cannot be using the stack.
    drop(stack);
    false
}

fn wait_alive(ns: u64) -> bool {
    let end = crate::time::monotonic_ns() + ns;
    while crate::time::monotonic_ns() < end {
        if AP_ALIVE.load(Ordering::Acquire) {
            return true;
        }
        crate::cpu::pause();
    }
    AP_ALIVE.load(Ordering::Acquire)
}

/// Rust entry of an application processor, on its own kernel stack and the
/// kernel's page tables, with interrupts off.
extern "C" fn hal_ap_start(cpu: usize) -> ! {
    AP_ALIVE.store(true, Ordering::Release);
    crate::percpu::init(cpu);
    crate::gdt::init(cpu);
    crate::trap::load_on_this_cpu();
    let info = crate::bootinfo::get();
    crate::enable_cpu_protections(&info.cpu);
    crate::user::init_cpu_features(info.cpu.smap);
    crate::user::init_syscall();
    crate::time::init_cpu_number(cpu, &info.cpu);
    apic::init_local_ap();
    STARTED.fetch_add(1, Ordering::AcqRel);
    let main = *AP_MAIN.get().expect("AP started without a main function");
    main(cpu)
}

/// Sends a fixed interrupt at `vector` to CPU number `cpu`.
pub(crate) fn send_vector(cpu: usize, vector: u8) {
    apic::send_ipi(apic_id_of(cpu), Ipi::Fixed(vector));
}

/// Asks `cpu` to look at its run queue (the kernel's handler for
/// [`crate::trap::RESCHEDULE_VECTOR`] runs there).
pub fn send_reschedule(cpu: usize) {
    if cpu < cpu_count() && cpu != crate::percpu::cpu_id() {
        send_vector(cpu, crate::trap::RESCHEDULE_VECTOR);
    }
}
