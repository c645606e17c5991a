//! The in-kernel test runner.
//!
//! Tests are plain functions listed in each test module's `TESTS` table
//! (the registry), returning `Err(message)` on failure instead of
//! panicking, so one failure does not hide the rest. The runner prints a
//! line per test and a closing `N passed, N failed` line, then leaves QEMU
//! through isa-debug-exit with the verdict. `ktest.filter=<text>` on the
//! command line runs only tests whose name contains `<text>`.

mod boot_tests;
mod mm_tests;
mod sched_tests;
mod trap_tests;

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

const SUITES: &[&[KTest]] = &[boot_tests::TESTS, mm_tests::TESTS, trap_tests::TESTS, sched_tests::TESTS];

pub fn run_all(info: &'static hal::BootInfo) {
    let mut out = Console;
    crate::banner::print_machine(info);
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
