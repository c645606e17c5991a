//! Boot-time facts: the loader's information and the CPU setup.

use super::{KTest, TestResult};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "boot::memory_map_has_usable_ram", run: memory_map_has_usable_ram },
    KTest { name: "boot::kernel_image_reserved", run: kernel_image_reserved },
    KTest { name: "boot::every_listed_cpu_online", run: every_listed_cpu_online },
    KTest { name: "boot::tsc_and_timer_calibrated", run: tsc_and_timer_calibrated },
    KTest { name: "boot::command_line_passed", run: command_line_passed },
];

fn memory_map_has_usable_ram() -> TestResult {
    let map = hal::mm::memory_map();
    let usable = map.total_usable();
    // QEMU is started with at least 128 MiB.
    ensure!(usable >= 100 << 20, "only {usable} bytes usable");
    let regions = map.regions();
    ensure!(regions.windows(2).all(|w| w[0].end <= w[1].start), "memory map not sorted/disjoint");
    Ok(())
}

fn kernel_image_reserved() -> TestResult {
    let sections = hal::paging::kernel_sections();
    let text_phys = hal::mm::virt_to_phys(sections.text.0).ok_or("text has no physical address")?;
    let map = hal::mm::memory_map();
    ensure!(
        map.usable_pages().all(|r| text_phys.0 < r.start || text_phys.0 >= r.end),
        "kernel text at {:#x} is in a usable region",
        text_phys.0
    );
    Ok(())
}

/// Every CPU the firmware lists runs (up to MAX_CPUS), with dense numbers.
fn every_listed_cpu_online() -> TestResult {
    let listed = hal::boot_info().acpi.cpu_apic_ids().len().clamp(1, hal::percpu::MAX_CPUS);
    let online = crate::sched::online_cpus();
    ensure!(online == (1u64 << listed) - 1, "online mask {online:#b}, MADT lists {listed} CPUs");
    ensure!(hal::smp::cpu_count() == listed);
    ensure!(hal::percpu::cpu_id() < listed);
    Ok(())
}

fn tsc_and_timer_calibrated() -> TestResult {
    let hz = hal::time::tsc_hz();
    ensure!((100_000_000..100_000_000_000).contains(&hz), "TSC at {hz} Hz");
    ensure!(hal::apic::timer_frequency() > 10_000, "APIC timer at {} Hz", hal::apic::timer_frequency());
    Ok(())
}

fn command_line_passed() -> TestResult {
    // xtask always boots the test kernel with `ktest.` options, through
    // PVH and through GRUB alike: they must arrive intact.
    let cmdline = hal::boot_info().command_line();
    ensure!(
        cmdline.split_whitespace().any(|a| a.starts_with("ktest.")),
        "command line {cmdline:?} lost its ktest options"
    );
    ensure!(!cmdline.contains('\0'), "NUL in command line");
    Ok(())
}
