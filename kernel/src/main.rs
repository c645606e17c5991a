#![no_std]
#![no_main]
#![forbid(unsafe_code)]

hal::entry_point!(kmain);

fn kmain(info: &'static hal::BootInfo) -> ! {
    use core::fmt::Write;
    let _ = writeln!(hal::serial::Console, "hello from kiln: {:?} cmdline={}", info.loader, info.command_line());
    hal::qemu::exit_success()
}
