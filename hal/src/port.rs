//! x86 I/O ports. A `Port` names one port number; reading and writing it is
//! safe for callers because every port Kiln touches is owned by exactly one
//! driver in this crate or handed out through [`Port::new`] to a driver that
//! owns the device.

use core::arch::asm;

#[derive(Clone, Copy, Debug)]
pub struct Port(u16);

impl Port {
    pub const fn new(port: u16) -> Port {
        Port(port)
    }

    pub fn read_u8(self) -> u8 {
        let value: u8;
        // SAFETY: port I/O has no memory effects visible to Rust; the device
        // side effects are the caller's business by design of this API.
        unsafe { asm!("in al, dx", out("al") value, in("dx") self.0, options(nomem, nostack, preserves_flags)) };
        value
    }

    pub fn write_u8(self, value: u8) {
        // SAFETY: as in `read_u8`.
        unsafe { asm!("out dx, al", in("dx") self.0, in("al") value, options(nostack, preserves_flags)) };
    }

    pub fn read_u32(self) -> u32 {
        let value: u32;
        // SAFETY: as in `read_u8`.
        unsafe { asm!("in eax, dx", out("eax") value, in("dx") self.0, options(nomem, nostack, preserves_flags)) };
        value
    }

    pub fn write_u32(self, value: u32) {
        // SAFETY: as in `read_u8`.
        unsafe { asm!("out dx, eax", in("dx") self.0, in("eax") value, options(nostack, preserves_flags)) };
    }

    pub fn read_u16(self) -> u16 {
        let value: u16;
        // SAFETY: as in `read_u8`.
        unsafe { asm!("in ax, dx", out("ax") value, in("dx") self.0, options(nomem, nostack, preserves_flags)) };
        value
    }

    pub fn write_u16(self, value: u16) {
        // SAFETY: as in `read_u8`.
        unsafe { asm!("out dx, ax", in("dx") self.0, in("ax") value, options(nostack, preserves_flags)) };
    }
}
