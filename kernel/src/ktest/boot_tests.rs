//! Boot-time facts: the loader's information and the CPU setup.

use super::{KTest, TestResult};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "boot::memory_map_has_usable_ram", run: memory_map_has_usable_ram },
    KTest { name: "boot::kernel_image_reserved", run: kernel_image_reserved },
    KTest { name: "boot::every_listed_cpu_online", run: every_listed_cpu_online },
    KTest { name: "boot::tsc_and_timer_calibrated", run: tsc_and_timer_calibrated },
    KTest { name: "boot::command_line_passed", run: command_line_passed },
    KTest { name: "boot::crc32c_instruction_matches_table", run: crc32c_instruction_matches_table },
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

/// The `crc32` instruction's CRC32C (ext4's block checksums, see
/// `fs/ext4/disk.rs`) equals kiln-ext4's table-driven one at every length
/// and alignment a checksum uses, and both give the standard check value.
fn crc32c_instruction_matches_table() -> TestResult {
    let check = !kiln_ext4::crc32c(!0, b"123456789");
    ensure!(check == 0xE306_9283, "table crc32c check value {check:#x}");
    let has_sse42 = hal::cpu::cpuid(1, 0).ecx & (1 << 20) != 0;
    ensure!(hal::cpu::crc32c(0, &[]).is_some() == has_sse42, "instruction used without SSE4.2, or not with it");
    let mut data = alloc::vec![0u8; 4096 + 16];
    let mut x = 0x9E37_79B9u32;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    if has_sse42 {
        for (start, len) in (0..9).flat_map(|s| (0..40).chain([4084, 4096]).map(move |l| (s, l))) {
            let piece = &data[start..start + len];
            let (hw, sw) = (hal::cpu::crc32c(!0, piece), kiln_ext4::crc32c(!0, piece));
            ensure!(hw == Some(sw), "at {start}+{len}: instruction {hw:?}, table {sw:#x}");
        }
    }
    Ok(())
}
