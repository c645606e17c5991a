//! Kiln's kernel core.
//!
//! Everything above the hardware layer: logging, the clock, kernel threads
//! and the scheduler, sleeping locks, the console, and the in-kernel test
//! runner. This crate contains no `unsafe` code; it uses only the safe APIs
//! that `hal` exports.
#![no_std]
#![no_main]
#![forbid(unsafe_code)]
#![feature(allocator_api)]
// The test build leaves the interactive parts unused.
#![cfg_attr(feature = "ktest", allow(dead_code))]

extern crate alloc;

mod banner;
mod clock;
mod console;
mod logger;
mod mm;
mod sched;
mod sync;

#[cfg(feature = "ktest")]
mod ktest;

hal::entry_point!(kmain);

fn kmain(info: &'static hal::BootInfo) -> ! {
    logger::init(info.command_line());
    log::info!(
        "kiln {} booted by {} on {}",
        env!("CARGO_PKG_VERSION"),
        banner::loader_name(info.loader),
        info.cpu.brand_str()
    );
    sched::init();
    clock::init();
    console::init();

    // The first kernel thread marks the end of boot.
    let booted = sched::spawn("init", move || {
        let ns = hal::time::monotonic_ns();
        log::info!("boot: first kernel thread running {}.{:03} ms after kernel entry", ns / 1_000_000, ns / 1000 % 1000);
        run(info);
    });
    if let Err(e) = booted {
        panic!("cannot start the first kernel thread: {e:?}");
    }
    // The boot context becomes this CPU's idle loop.
    sched::idle_loop()
}

#[cfg(feature = "ktest")]
fn run(info: &'static hal::BootInfo) {
    ktest::run_all(info);
}

#[cfg(not(feature = "ktest"))]
fn run(info: &'static hal::BootInfo) {
    banner::run(info);
}
