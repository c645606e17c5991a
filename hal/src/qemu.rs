//! Leaving QEMU with a status: the isa-debug-exit device at port 0xf4.
//!
//! QEMU exits with `(value << 1) | 1`, so the codes below become 33 (pass)
//! and 35 (fail) for the host tool. Without the device the write is ignored
//! and the CPU halts instead.

use crate::port::Port;

const DEBUG_EXIT: Port = Port::new(0xf4);
pub const EXIT_SUCCESS: u32 = 0x10;
pub const EXIT_FAILURE: u32 = 0x11;

pub fn exit(code: u32) -> ! {
    DEBUG_EXIT.write_u32(code);
    // Also try ACPI poweroff on QEMU's PIIX4/ICH9 PM ports, so `make run`
    // without the debug device still powers off.
    Port::new(0x604).write_u32(0x2000);
    loop {
        crate::cpu::disable_interrupts();
        crate::cpu::halt();
    }
}

pub fn exit_success() -> ! {
    exit(EXIT_SUCCESS)
}

pub fn exit_failure() -> ! {
    exit(EXIT_FAILURE)
}

/// Resets the machine through the PCI reset control register (port
/// 0xcf9, present on QEMU's PC machines); QEMU run with `-no-reboot`
/// exits instead of rebooting. Falls back to halting.
pub fn reset() -> ! {
    // A full reset (bit 2 triggers it, bit 1 makes it a hard one).
    Port::new(0xcf9).write_u8(0x02);
    Port::new(0xcf9).write_u8(0x06);
    loop {
        crate::cpu::disable_interrupts();
        crate::cpu::halt();
    }
}
