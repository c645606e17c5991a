//! The in-kernel test runner.
//!
//! Tests are plain functions listed in each test module's `TESTS` table
//! (the registry), returning `Err(message)` on failure instead of
//! panicking, so one failure does not hide the rest. The runner prints a
//! line per test and a closing `N passed, N failed` line, then leaves QEMU
//! through isa-debug-exit with the verdict. `ktest.filter=<text>` on the
//! command line runs only tests whose name contains `<text>`.

mod block_tests;
mod boot_tests;
mod component_merge_tests;
mod component_reboot_tests;
mod component_tests;
mod dev_tests;
mod device_tests;
mod e1000_tests;
mod event_tests;
mod iommu_tests;
mod limit_tests;
mod mm_tests;
mod netrx_tests;
mod nvme_tests;
mod pagestore_tests;
mod sched_tests;
mod smp_tests;
mod trap_tests;
mod virtio_fault_tests;

use alloc::string::String;
use core::fmt::Write;

use hal::serial::Console;

pub type TestResult = Result<(), String>;

pub struct KTest {
    pub name: &'static str,
    pub run: fn() -> TestResult,
}

/// Fails the test with a formatted message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr) => {
        if !$cond {
            return Err(alloc::format!("{}:{}: check failed: {}", file!(), line!(), stringify!($cond)));
        }
    };
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(alloc::format!("{}:{}: {}", file!(), line!(), alloc::format!($($arg)+)));
        }
    };
}

const SUITES: &[&[KTest]] = &[
    boot_tests::TESTS,
    mm_tests::TESTS,
    pagestore_tests::TESTS,
    trap_tests::TESTS,
    sched_tests::TESTS,
    smp_tests::TESTS,
    dev_tests::TESTS,
    device_tests::TESTS,
    virtio_fault_tests::TESTS,
    e1000_tests::TESTS,
    netrx_tests::TESTS,
    iommu_tests::TESTS,
    nvme_tests::TESTS,
    block_tests::TESTS,
    event_tests::TESTS,
    limit_tests::TESTS,
    component_tests::TESTS,
    component_merge_tests::TESTS,
    component_reboot_tests::TESTS,
];

pub fn run_all(info: &'static hal::BootInfo) {
    let mut out = Console;
    crate::banner::print_machine(info);
    if let Some(kind) = info.command_line().split_whitespace().find_map(|a| a.strip_prefix("ktest.crash=")) {
        crash(kind);
    }
    let filter = info.command_line().split_whitespace().find_map(|a| a.strip_prefix("ktest.filter="));
    let (mut passed, mut failed) = (0usize, 0usize);
    for test in SUITES.iter().flat_map(|s| s.iter()) {
        if filter.is_some_and(|f| !test.name.contains(f)) {
            continue;
        }
        let start = crate::clock::now_ns();
        let result = (test.run)();
        let us = (crate::clock::now_ns() - start) / 1000;
        match result {
            Ok(()) => {
                passed += 1;
                let _ = writeln!(out, "test {} ... ok ({}.{:03} ms)", test.name, us / 1000, us % 1000);
            }
            Err(msg) => {
                failed += 1;
                let _ = writeln!(out, "test {} ... FAILED ({}.{:03} ms)\n    {}", test.name, us / 1000, us % 1000, msg);
            }
        }
    }
    let _ = writeln!(out, "{passed} passed, {failed} failed");
    if failed == 0 && passed > 0 {
        hal::qemu::exit_success();
    }
    hal::qemu::exit_failure();
}

/// `ktest.crash=<kind>`: die of a real CPU exception, so the host tool can
/// check the fatal report (registers, backtrace, exit status).
fn crash(kind: &str) {
    use hal::debug::Crash;
    let kind = match kind {
        "pagefault" => Crash::PageFault,
        "divide" => Crash::DivideError,
        "ud2" => Crash::InvalidOpcode,
        "stackoverflow" => Crash::StackOverflow,
        "panic" => panic!("deliberate panic from ktest.crash"),
        other => {
            log::error!("unknown ktest.crash kind {other:?}");
            hal::qemu::exit_failure();
        }
    };
    // Crash from a nested call so the backtrace has frames to show.
    let t = crate::sched::spawn("crasher", move || hal::debug::crash(kind));
    if let Ok(t) = t {
        crate::sched::join(&t);
    }
}
