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
mod fs;
mod logger;
mod mm;
mod proc;
mod random;
mod sched;
mod sync;
mod syscall;

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
    syscall::init(info.command_line());

    // The first kernel thread marks the end of boot.
    let booted = sched::spawn("init", move || {
        let ns = hal::time::monotonic_ns();
        log::info!(
            "boot: first kernel thread running {}.{:03} ms after kernel entry",
            ns / 1_000_000,
            ns / 1000 % 1000
        );
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
    load_initramfs(info);
    match init_command(info.command_line()) {
        Some((path, argv)) => {
            if let Err(e) = proc::init::start(&path, argv) {
                log::error!("cannot start init {path:?}: {}", e.name());
                hal::serial::write_bytes(b"\nkiln: init exited with status 127\n");
                hal::qemu::exit_success();
            }
        }
        None => banner::run(info),
    }
}

/// `init=PATH` and, after `--`, its arguments (as Linux passes them).
fn init_command(cmdline: &str) -> Option<(alloc::string::String, alloc::vec::Vec<alloc::string::String>)> {
    use alloc::string::String;
    let mut words = cmdline.split_whitespace();
    let mut path = None;
    for w in words.by_ref() {
        if w == "--" {
            break;
        }
        if let Some(p) = w.strip_prefix("init=") {
            path = Some(String::from(p));
        }
    }
    let path = path?;
    let mut argv = alloc::vec![path.clone()];
    argv.extend(words.map(String::from));
    Some((path, argv))
}

/// Unpacks the boot module (the initramfs) into the root file system.
fn load_initramfs(info: &'static hal::BootInfo) {
    let Some(module) = info.modules().first() else {
        log::info!("no initramfs");
        return;
    };
    match fs::initramfs::unpack(module.bytes()) {
        Ok(n) => log::info!("initramfs: {} entries from {} KiB", n, module.len / 1024),
        Err(e) => log::error!("initramfs: {e}"),
    }
}
