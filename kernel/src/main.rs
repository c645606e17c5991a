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
mod block;
mod bottom_half;
mod clock;
mod component;
mod console;
mod cred;
mod dev;
mod drivers;
mod event;
mod fs;
mod ipc;
mod logger;
mod mm;
mod net;
mod proc;
mod random;
mod sched;
mod sync;
mod syscall;
mod uts;
mod vdso;

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
    if info.command_line_cut() {
        log::warn!("command line longer than 2048 bytes: only its start is used");
    }
    sched::init();
    vdso::init(info.command_line());
    component::init();
    clock::init();
    console::init();
    syscall::init(info.command_line());
    proc::sigio::init();
    ipc::init();
    start_other_cpus(info.command_line());
    bottom_half::init();
    drivers::probe();

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
    if booted.is_err() {
        hal::boot_out_of_memory("the first kernel thread");
    }
    // The boot context becomes this CPU's idle loop.
    sched::idle_loop()
}

/// Starts the application processors, up to `maxcpus=N` CPUs in all
/// (Linux's parameter; `maxcpus=1` keeps Kiln on the boot CPU).
fn start_other_cpus(cmdline: &str) {
    let limit = cmdline_words(cmdline)
        .iter()
        .find_map(|w| w.strip_prefix("maxcpus=").and_then(|n| n.parse::<usize>().ok()))
        .unwrap_or(hal::percpu::MAX_CPUS)
        .max(1);
    let started = hal::smp::start_application_processors(limit, ap_main);
    log::info!("smp: {started} CPU{} online", if started == 1 { "" } else { "s" });
}

/// An application processor, set up by the hardware layer: it becomes
/// that CPU's idle thread.
fn ap_main(_cpu: usize) -> ! {
    sched::init();
    clock::init_ap();
    sched::idle_loop()
}

#[cfg(feature = "ktest")]
fn run(info: &'static hal::BootInfo) {
    ktest::run_all(info);
}

#[cfg(not(feature = "ktest"))]
fn run(info: &'static hal::BootInfo) {
    // `root=/dev/vda` (and `ro`): the disk is the root, not the initramfs.
    let words = cmdline_words(info.command_line());
    let root_device = words.iter().find_map(|w| w.strip_prefix("root=")).filter(|r| r.starts_with("/dev/"));
    let root = root_device.map(|dev| fs::DiskRoot { device: dev, read_only: words.iter().any(|w| w == "ro") });
    if let Err(e) = fs::init(info.take_module(0), root) {
        report_bad_initramfs(&e);
    }
    // The stack and its loopback, before any program can make a socket.
    net::inet::init(info.command_line());
    match init_command(info.command_line()) {
        Some((path, argv)) => {
            // An interactive shell (no arguments) gets the machine report
            // first; commands run with arguments keep their output clean.
            if argv.len() == 1 {
                banner::print_machine(info);
                use core::fmt::Write;
                let _ = writeln!(
                    hal::serial::Console,
                    "ticks so far: {} ({} Hz); Ctrl-T lists processes; `exit` powers off\n",
                    clock::total_ticks(),
                    clock::HZ
                );
            }
            if let Err(e) = proc::init::start(&path, argv) {
                log::error!("cannot start init {path:?}: {}", e.name());
                hal::serial::write_bytes(b"\nkiln: init exited with status 127\n");
                hal::qemu::exit_success();
            }
        }
        None => banner::run(info),
    }
}

/// Says why the root could not be unpacked, in terms a user can act on,
/// and powers off: there is nothing to run.
#[cfg(not(feature = "ktest"))]
fn report_bad_initramfs(e: &fs::initramfs::UnpackError) -> ! {
    use core::fmt::Write;
    let mut out = hal::serial::Console;
    let _ = writeln!(out, "\nkiln: cannot unpack the initramfs: {e}");
    if e.out_of_memory() {
        // The root's size is half of memory as tmpfs counts it (Linux's
        // default for a tmpfs root).
        let total_mib = hal::mm::total_frame_count() * 4 / 1024;
        let stats = fs::dentry::root().inode().fs_stats();
        let _ = writeln!(
            out,
            "kiln: the root file system may hold half of memory ({} of {total_mib} MiB); \
             boot with more memory (make run MEM=...)",
            (stats.blocks * stats.block_size) >> 20
        );
    }
    let _ = writeln!(out, "kiln: power off");
    hal::qemu::exit_failure()
}

/// Splits a command line into words; double quotes group words (as
/// Linux's parser does, without escapes).
fn cmdline_words(cmdline: &str) -> alloc::vec::Vec<alloc::string::String> {
    let mut words = alloc::vec::Vec::new();
    let mut cur = alloc::string::String::new();
    let (mut quoted, mut any) = (false, false);
    for ch in cmdline.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    words.push(core::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// `init=PATH` and, after `--`, its arguments (as Linux passes them).
/// `banner` on the command line keeps the live boot banner instead.
fn init_command(cmdline: &str) -> Option<(alloc::string::String, alloc::vec::Vec<alloc::string::String>)> {
    let words = cmdline_words(cmdline);
    if words.iter().any(|w| w == "banner") {
        return None;
    }
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let path = words[..split].iter().find_map(|w| w.strip_prefix("init="))?;
    let path = alloc::string::String::from(path);
    let mut argv = alloc::vec![path.clone()];
    argv.extend(words.iter().skip(split + 1).cloned());
    Some((path, argv))
}
