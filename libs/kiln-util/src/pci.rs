//! PCI configuration-space facts, as pure logic: header offsets, BAR
//! decoding and sizing, the capability list walk, and the MSI and MSI-X
//! register layouts. The hal reads and writes the registers; everything
//! here decides what the values mean, so it is tested on the host. Values
//! come from devices and are treated as untrusted: a looping capability
//! list or a BAR whose size mask makes no sense is reported, not followed.

/// Configuration header offsets (type 0 and type 1 headers agree on these).
pub mod reg {
    pub const VENDOR_ID: u16 = 0x00;
    pub const DEVICE_ID: u16 = 0x02;
    pub const COMMAND: u16 = 0x04;
    pub const STATUS: u16 = 0x06;
    pub const REVISION: u16 = 0x08;
    pub const PROG_IF: u16 = 0x09;
    pub const SUBCLASS: u16 = 0x0A;
    pub const CLASS: u16 = 0x0B;
    pub const HEADER_TYPE: u16 = 0x0E;
    pub const BAR0: u16 = 0x10;
    pub const SUBSYSTEM_VENDOR_ID: u16 = 0x2C;
    pub const SUBSYSTEM_ID: u16 = 0x2E;
    pub const CAPABILITIES_PTR: u16 = 0x34;
    pub const INTERRUPT_LINE: u16 = 0x3C;
    pub const INTERRUPT_PIN: u16 = 0x3D;
    /// Type 1 (bridge) header: secondary bus number.
    pub const SECONDARY_BUS: u16 = 0x19;
}

/// Command register bits.
pub mod command {
    pub const IO_SPACE: u16 = 1 << 0;
    pub const MEMORY_SPACE: u16 = 1 << 1;
    pub const BUS_MASTER: u16 = 1 << 2;
    pub const INTX_DISABLE: u16 = 1 << 10;
}

/// Status register: the capability list is present.
pub const STATUS_CAP_LIST: u16 = 1 << 4;

/// Capability ids the hal handles itself or drivers commonly look for.
pub mod cap {
    pub const MSI: u8 = 0x05;
    pub const VENDOR: u8 = 0x09;
    pub const PCIE: u8 = 0x10;
    pub const MSIX: u8 = 0x11;
}

/// Base address registers of a type 0 header.
pub const BAR_COUNT: u8 = 6;

/// What a BAR decodes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarKind {
    /// An I/O-port window.
    Io,
    /// A memory window reachable with 32-bit addresses.
    Mem32 { prefetchable: bool },
    /// A memory window with a 64-bit address: this BAR and the next.
    Mem64 { prefetchable: bool },
}

/// A decoded BAR: where the firmware put it and how big it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    pub kind: BarKind,
    pub address: u64,
    pub size: u64,
}

/// The kind a BAR's low bits announce, or `None` for the reserved memory
/// type (0b01, "below 1 MiB" in old specs), which no device should use.
pub fn bar_kind(low: u32) -> Option<BarKind> {
    if low & 1 != 0 {
        return Some(BarKind::Io);
    }
    let prefetchable = low & 0x8 != 0;
    match (low >> 1) & 0x3 {
        0 => Some(BarKind::Mem32 { prefetchable }),
        2 => Some(BarKind::Mem64 { prefetchable }),
        _ => None,
    }
}

/// Decodes a BAR from its value and the value read back after writing all
/// ones (the sizing probe). For a 64-bit BAR, `high` and `high_mask` are
/// the next register's value and probe; otherwise they are ignored.
/// `None` when the BAR is unimplemented (size 0) or its mask is not a
/// contiguous run of high bits, as a real BAR's always is.
pub fn decode_bar(low: u32, low_mask: u32, high: u32, high_mask: u32) -> Option<Bar> {
    let kind = bar_kind(low)?;
    let (address, mask) = match kind {
        BarKind::Io => (u64::from(low & !0x3), u64::from(low_mask & !0x3) | 0xFFFF_FFFF_0000_0000),
        BarKind::Mem32 { .. } => (u64::from(low & !0xF), u64::from(low_mask & !0xF) | 0xFFFF_FFFF_0000_0000),
        BarKind::Mem64 { .. } => {
            (u64::from(high) << 32 | u64::from(low & !0xF), u64::from(high_mask) << 32 | u64::from(low_mask & !0xF))
        }
    };
    // I/O BARs may leave the upper 16 bits unimplemented (read back as 0).
    let mask = if kind == BarKind::Io && mask & 0xFFFF_0000 == 0 { mask | 0xFFFF_0000 } else { mask };
    // No writable address bit at all: the BAR is not implemented.
    let implemented = match kind {
        BarKind::Mem64 { .. } => mask != 0,
        _ => mask & 0xFFFF_FFFF != 0,
    };
    if !implemented {
        return None;
    }
    let size = (!mask).wrapping_add(1);
    // A real size is a power of two whose mask is all ones above it.
    if size == 0 || !size.is_power_of_two() || mask != !(size - 1) {
        return None;
    }
    if !address.is_multiple_of(size) {
        return None;
    }
    Some(Bar { kind, address, size })
}

/// A capability found in the list: its id and its offset in config space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capability {
    pub id: u8,
    pub offset: u16,
}

/// Walks the capability list, reading config bytes through `read8`.
/// Starts at the pointer at 0x34 (the caller checks the status bit). Stops
/// at a null pointer, a pointer into the header (below 0x40), or after 48
/// entries (the most 192 bytes of capability space can hold), so a looping
/// list from a broken device ends.
pub fn capabilities(read8: impl Fn(u16) -> u8) -> impl Iterator<Item = Capability> {
    let mut next = read8(reg::CAPABILITIES_PTR) & 0xFC;
    let mut left = 48;
    core::iter::from_fn(move || {
        if next < 0x40 || left == 0 {
            return None;
        }
        left -= 1;
        let offset = u16::from(next);
        let id = read8(offset);
        next = read8(offset + 1) & 0xFC;
        Some(Capability { id, offset })
    })
}

/// The MSI-X capability's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsixInfo {
    /// Vectors in the table (1..=2048).
    pub table_size: u16,
    pub table_bar: u8,
    pub table_offset: u32,
    pub pba_bar: u8,
    pub pba_offset: u32,
}

/// Offsets inside the MSI-X capability.
pub mod msix {
    /// Message control: table size - 1 in bits 0..11, function mask (14), enable (15).
    pub const CONTROL: u16 = 2;
    pub const TABLE: u16 = 4;
    pub const PBA: u16 = 8;
    pub const CONTROL_ENABLE: u16 = 1 << 15;
    pub const CONTROL_FUNCTION_MASK: u16 = 1 << 14;
    /// One table entry: address low, address high, data, vector control.
    pub const ENTRY_SIZE: u64 = 16;
    pub const ENTRY_ADDR_LO: u64 = 0;
    pub const ENTRY_ADDR_HI: u64 = 4;
    pub const ENTRY_DATA: u64 = 8;
    pub const ENTRY_VECTOR_CONTROL: u64 = 12;
    /// Vector control bit 0: this entry is masked.
    pub const ENTRY_MASKED: u32 = 1;
}

/// Decodes an MSI-X capability from its message control and its table and
/// PBA registers. `None` for a BAR indicator past BAR5.
pub fn decode_msix(control: u16, table: u32, pba: u32) -> Option<MsixInfo> {
    let info = MsixInfo {
        table_size: (control & 0x7FF) + 1,
        table_bar: (table & 7) as u8,
        table_offset: table & !7,
        pba_bar: (pba & 7) as u8,
        pba_offset: pba & !7,
    };
    (info.table_bar < BAR_COUNT && info.pba_bar < BAR_COUNT).then_some(info)
}

impl MsixInfo {
    /// Bytes of the table, from `table_offset` in `table_bar`.
    pub fn table_len(&self) -> u64 {
        u64::from(self.table_size) * msix::ENTRY_SIZE
    }

    /// Offset of entry `index`'s first register in the table's BAR.
    pub fn entry_offset(&self, index: u16) -> Option<u64> {
        (index < self.table_size).then(|| u64::from(self.table_offset) + u64::from(index) * msix::ENTRY_SIZE)
    }
}

/// Offsets and bits of the MSI capability.
pub mod msi {
    pub const CONTROL: u16 = 2;
    pub const ADDR_LO: u16 = 4;
    pub const CONTROL_ENABLE: u16 = 1 << 0;
    pub const CONTROL_64BIT: u16 = 1 << 7;
    pub const CONTROL_PER_VECTOR_MASK: u16 = 1 << 8;

    /// Offset of the data register: after a 32- or 64-bit address.
    pub fn data_offset(control: u16) -> u16 {
        if control & CONTROL_64BIT != 0 {
            12
        } else {
            8
        }
    }
}

/// The message an x86 CPU takes as a fixed, edge-triggered interrupt on
/// `vector` for the local APIC with id `apic_id` (physical destination;
/// ids above 255 need interrupt remapping). Returns (address, data).
pub fn x86_msi_message(apic_id: u8, vector: u8) -> (u64, u32) {
    (0xFEE0_0000 | (u64::from(apic_id) << 12), u32::from(vector))
}

/// ECAM: offset of a function's configuration space from its segment's base.
pub fn ecam_offset(bus: u8, device: u8, function: u8) -> u64 {
    (u64::from(bus) << 20) | (u64::from(device & 0x1F) << 15) | (u64::from(function & 7) << 12)
}

/// The legacy mechanism #1 address (port 0xCF8) for a dword of config space.
pub fn port_config_address(bus: u8, device: u8, function: u8, offset: u16) -> u32 {
    0x8000_0000
        | (u32::from(bus) << 16)
        | (u32::from(device & 0x1F) << 11)
        | (u32::from(function & 7) << 8)
        | u32::from(offset & 0xFC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_sizes_decode() {
        // A 4 KiB 32-bit memory BAR at 0xFEB9_1000.
        let b = decode_bar(0xFEB9_1000, 0xFFFF_F000, 0, 0).unwrap();
        assert_eq!(b, Bar { kind: BarKind::Mem32 { prefetchable: false }, address: 0xFEB9_1000, size: 0x1000 });
        // virtio's 16 KiB 64-bit prefetchable BAR above 4 GiB.
        let b = decode_bar(0x0000_000C, 0xFFFF_C00C, 0x8, 0xFFFF_FFFF).unwrap();
        assert_eq!(b, Bar { kind: BarKind::Mem64 { prefetchable: true }, address: 0x8_0000_0000, size: 0x4000 });
        // e1000's 64-byte I/O BAR (upper half of the mask unimplemented).
        let b = decode_bar(0xC041, 0xFFC1, 0, 0).unwrap();
        assert_eq!(b, Bar { kind: BarKind::Io, address: 0xC040, size: 0x40 });
    }

    #[test]
    fn broken_bars_are_refused() {
        assert_eq!(decode_bar(0, 0, 0, 0), None, "unimplemented");
        assert_eq!(decode_bar(0xFEB9_1000, 0xFF0F_F000, 0, 0), None, "mask with a hole");
        assert_eq!(decode_bar(0xFEB9_1800, 0xFFFF_F000, 0, 0), None, "misaligned address");
        assert_eq!(decode_bar(0x2, 0xFFFF_F002, 0, 0), None, "reserved type");
    }

    #[test]
    fn capability_walk_follows_and_stops() {
        let mut space = [0u8; 256];
        space[0x34] = 0x40;
        space[0x40] = cap::MSIX;
        space[0x41] = 0x50;
        space[0x50] = cap::VENDOR;
        space[0x51] = 0x00;
        let caps: std::vec::Vec<_> = capabilities(|o| space[o as usize]).collect();
        assert_eq!(caps, [Capability { id: cap::MSIX, offset: 0x40 }, Capability { id: cap::VENDOR, offset: 0x50 }]);
        // A list pointing at itself ends after 48 entries.
        space[0x51] = 0x50;
        assert_eq!(capabilities(|o| space[o as usize]).count(), 48);
        // A pointer into the header ends the walk.
        space[0x41] = 0x10;
        assert_eq!(capabilities(|o| space[o as usize]).count(), 1);
    }

    #[test]
    fn msix_layout() {
        // QEMU virtio-net: 3 vectors, table at BAR1 offset 0, PBA at BAR1 0x800.
        let m = decode_msix(2, 0x0000_0001, 0x0000_0801).unwrap();
        assert_eq!(m, MsixInfo { table_size: 3, table_bar: 1, table_offset: 0, pba_bar: 1, pba_offset: 0x800 });
        assert_eq!(m.table_len(), 48);
        assert_eq!(m.entry_offset(2), Some(32));
        assert_eq!(m.entry_offset(3), None);
        assert_eq!(decode_msix(0, 7, 0), None);
        assert_eq!(x86_msi_message(3, 0x41), (0xFEE0_3000, 0x41));
        assert_eq!(msi::data_offset(msi::CONTROL_64BIT), 12);
    }

    #[test]
    fn config_addresses() {
        assert_eq!(ecam_offset(1, 2, 3), 0x0011_3000);
        assert_eq!(port_config_address(0, 3, 0, 0x12), 0x8000_1810);
    }
}
