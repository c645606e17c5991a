//! What `make run` shows: the machine as Kiln sees it, then a live tick
//! count until the user presses `q` (Ctrl-A X also quits QEMU).

use core::fmt::Write;

use hal::serial::Console;
use hal::BootLoader;
use kiln_util::fmt_util::HumanBytes;

pub fn loader_name(loader: BootLoader) -> &'static str {
    match loader {
        BootLoader::Pvh => "pvh",
        BootLoader::Multiboot2 => "multiboot2",
    }
}

/// Prints the boot report shared by the banner and the test runner.
pub fn print_machine(info: &hal::BootInfo) {
    let mut out = Console;
    let _ = writeln!(out, "boot loader: {}", loader_name(info.loader));
    let _ = writeln!(out, "command line: {}", info.command_line());
    let cpu = &info.cpu;
    let _ = writeln!(
        out,
        "cpu: {} \"{}\" family {} model {} stepping {}",
        cpu.vendor_str(),
        cpu.brand_str(),
        cpu.family,
        cpu.model,
        cpu.stepping
    );
    let _ = writeln!(
        out,
        "cpus: {} online (of {} the ACPI MADT lists)",
        hal::smp::cpu_count(),
        info.acpi.cpu_apic_ids().len()
    );
    let _ = writeln!(
        out,
        "cpu features: x2apic={} nx={} smep={} smap={} 1g-pages={} invariant-tsc={}",
        cpu.x2apic, cpu.nx, cpu.smep, cpu.smap, cpu.gb_pages, cpu.invariant_tsc
    );
    let _ = writeln!(out, "memory map:");
    for r in info.memory_map.regions() {
        let _ =
            writeln!(out, "  {:#014x}-{:#014x} {:>10} {}", r.start, r.end, HumanBytes(r.end - r.start), r.kind.name());
    }
    let free = hal::mm::free_frame_count() * hal::mm::PAGE_SIZE;
    let _ = writeln!(out, "memory: {} usable, {} free", HumanBytes(info.memory_map.total_usable()), HumanBytes(free));
    let _ = writeln!(
        out,
        "timer: {} local APIC, {} Hz input, tick {} Hz; TSC {}.{:03} MHz",
        if info.x2apic { "x2APIC" } else { "xAPIC" },
        info.apic_timer_hz,
        crate::clock::HZ,
        info.tsc_hz / 1_000_000,
        info.tsc_hz / 1000 % 1000
    );
}

pub fn run(info: &'static hal::BootInfo) {
    let mut out = Console;
    let _ = writeln!(out, "\n  Kiln {} - a Linux-compatible kernel in safe Rust\n", env!("CARGO_PKG_VERSION"));
    print_machine(info);
    let _ = writeln!(out, "\nPress q to power off (or Ctrl-A X to quit QEMU).");
    let ticker = crate::sched::spawn("ticker", || loop {
        let ns = crate::clock::now_ns();
        let mut out = Console;
        let _ = write!(
            out,
            "\ruptime {:>4}.{:01} s  ticks {:>7}  switches {:>7}   ",
            ns / 1_000_000_000,
            ns / 100_000_000 % 10,
            crate::clock::total_ticks(),
            crate::sched::switch_count()
        );
        crate::sched::sleep_ns(100_000_000);
    });
    if let Err(e) = ticker {
        log::error!("cannot start the ticker: {e:?}");
    }
    loop {
        if let b'q' | b'Q' = crate::console::read_byte() {
            let _ = writeln!(out, "\npowering off");
            hal::qemu::exit_success();
        }
    }
}
