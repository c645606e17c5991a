//! Memory-mapped device registers.
//!
//! An [`Mmio`] is a window of device registers at a physical address,
//! reached through the uncached part of the direct map. Reads and writes
//! are volatile and bounds-checked, so a driver holding an `Mmio` for its
//! device can do no harm beyond that device's register block.

use crate::mm::PhysAddr;

#[derive(Clone, Copy, Debug)]
pub struct Mmio {
    base: u64,
    len: u64,
}

impl Mmio {
    /// A register window. Only the device-memory hole below 4 GiB is
    /// accepted: RAM must never be reached through this type.
    pub fn new(phys: PhysAddr, len: u64) -> Option<Mmio> {
        let end = phys.0.checked_add(len)?;
        if phys.0 < 0xF000_0000 || end > 0x1_0000_0000 {
            return None;
        }
        Some(Mmio { base: phys.to_virt(), len })
    }

    fn check(&self, offset: u64, size: u64) -> u64 {
        assert!(offset.is_multiple_of(size) && offset + size <= self.len, "MMIO access at {offset:#x} outside window");
        self.base + offset
    }

    pub fn read_u32(&self, offset: u64) -> u32 {
        let addr = self.check(offset, 4);
        // SAFETY: `addr` is inside a device register window in the uncached
        // direct map (checked in `new` and `check`), aligned for u32.
        unsafe { core::ptr::read_volatile(addr as *const u32) }
    }

    pub fn write_u32(&self, offset: u64, value: u32) {
        let addr = self.check(offset, 4);
        // SAFETY: as in `read_u32`; device registers are not Rust objects.
        unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
    }
}
