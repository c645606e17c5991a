//! Kiln's hardware layer: the one crate in Kiln that may use `unsafe`.
//!
//! It owns everything that touches the machine directly: boot, paging and
//! physical frames, segments and interrupt tables, the interrupt
//! controllers and timers, context switching, port and MMIO access, and
//! kernel-mode fault recovery. Every `unsafe` block states why it is sound,
//! and everything it exports is a safe API. The kernel proper (`kernel/`)
//! is `#![forbid(unsafe_code)]` and builds on these APIs alone.
#![no_std]
#![feature(allow_internal_unsafe)]
#![feature(allocator_api)]
#![allow(internal_features)]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;

pub mod acpi;
pub mod apic;
pub mod backtrace;
mod boot;
pub mod context;
pub mod cpu;
pub mod debug;
pub mod device;
pub mod extable;
pub mod frame;
pub mod gdt;
pub mod heap;
pub mod mm;
pub mod mmio;
pub mod paging;
pub mod percpu;
pub mod port;
pub mod qemu;
pub mod rtc;
pub mod serial;
pub mod smp;
pub mod sync;
pub mod time;
pub mod tlb;
pub mod trap;
pub mod user;

pub mod bootinfo;

pub use bootinfo::{BootInfo, BootLoader, BootModule, TakenModule};

/// Declares the kernel's entry point: `fn(&'static BootInfo) -> !`, called
/// on a guarded kernel stack once the hardware layer is up.
#[macro_export]
#[allow_internal_unsafe]
macro_rules! entry_point {
    ($main:path) => {
        #[no_mangle]
        extern "Rust" fn __kiln_kernel_main(info: &'static $crate::BootInfo) -> ! {
            let main: fn(&'static $crate::BootInfo) -> ! = $main;
            main(info)
        }
    };
}

/// The boot information, once boot has finished.
pub fn boot_info() -> &'static BootInfo {
    bootinfo::get()
}

extern "Rust" {
    fn __kiln_kernel_main(info: &'static BootInfo) -> !;
}

/// Ends a boot that cannot go on for want of memory, with a message
/// saying what could not be had, and powers off: a machine too small to
/// boot is a user's configuration, not a kernel bug to panic over.
pub fn boot_out_of_memory(what: &str) -> ! {
    serial::write_bytes(b"\nkiln: cannot boot: no memory for ");
    serial::write_bytes(what.as_bytes());
    serial::write_bytes(b" (give the machine more memory); power off\n");
    qemu::exit_failure()
}

/// Rust entry from `boot.rs`, still on the boot stack and boot page tables.
extern "C" fn hal_start(magic: u32, info_paddr: u32) -> ! {
    let boot_tsc = cpu::rdtsc();
    serial::init();
    percpu::init(0);
    gdt::init(0);
    trap::init_idt();

    let info = bootinfo::collect(magic, u64::from(info_paddr), boot_tsc);
    mm::init_frames(&info.memory_map);
    bootinfo::reserve_boot_ranges(&info);
    // The direct map covers RAM, not every reserved window the firmware
    // lists (QEMU reports a 12 GiB hole just below 1 TiB).
    let ram_end = info.memory_map.usable_pages().map(|r| r.end).max().unwrap_or(0);
    paging::init_kernel_space(ram_end);

    frame::init();
    mm::init_owner_tags();
    let cpu = cpu::CpuInfo::read();
    enable_cpu_protections(&cpu);
    user::init_cpu_features(cpu.smap);
    user::init_syscall();
    time::init_cpu_number(0, &cpu);
    let x2apic = apic::init_local(cpu.x2apic);
    let (tsc_hz, apic_hz) = apic::calibrate();
    time::set_tsc(tsc_hz, boot_tsc);
    apic::init_ioapic(info.acpi.ioapic);
    apic::route_isa_irq(serial::COM1_IRQ, trap::IRQ_BASE + serial::COM1_IRQ, apic::local_apic_id());
    // Received bytes queue up in the serial ring; the kernel registers the
    // handler for `serial::IRQ_VECTOR` to drain it and wake readers.
    trap::register_handler(serial::IRQ_VECTOR, |_| serial::handle_irq());
    serial::enable_rx_interrupt();

    bootinfo::finish(info, cpu, tsc_hz, apic_hz, x2apic);

    // Leave the unguarded boot stack for a guarded one, for good.
    let stack = context::KernelStack::new().unwrap_or_else(|_| boot_out_of_memory("the first kernel stack"));
    let first = context::Context::new(&stack, run_kernel_main, 0);
    core::mem::forget(stack);
    let boot = context::Context::empty();
    context::switch(&boot, &first);
    unreachable!("the boot context is never resumed");
}

fn run_kernel_main(_arg: usize) -> ! {
    let info = bootinfo::get();
    // SAFETY: the kernel binary defines this symbol with `entry_point!`,
    // with exactly this signature.
    unsafe { __kiln_kernel_main(info) }
}

/// Turns on NX-related and supervisor-protection features the CPU has.
pub(crate) fn enable_cpu_protections(cpu: &cpu::CpuInfo) {
    let mut cr4 = cpu::read_cr4();
    cr4 |= 1 << 7; // PGE: global kernel pages survive CR3 switches
    if cpu.smep {
        cr4 |= 1 << 20; // SMEP: the kernel never executes user pages
    }
    // SAFETY: PGE is universal on x86_64, and SMEP is only set when CPUID
    // reports it. No user pages exist yet, so neither changes any mapping
    // the kernel relies on. SMAP is enabled with SSE in `user`, whose copy
    // routines open it with STAC/CLAC.
    unsafe { cpu::write_cr4(cr4) };
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    use core::fmt::Write;
    cpu::disable_interrupts();
    let mut out = serial::RawConsole;
    let _ = writeln!(out, "\n!!! KERNEL PANIC on cpu {}: {}", percpu::cpu_id(), info);
    backtrace::print_current(&mut out);
    qemu::exit_failure()
}
