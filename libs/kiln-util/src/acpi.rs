//! Reading the static ACPI tables that locate the CPUs and the IO APIC.
//!
//! Firmware leaves a chain of tables in memory: the RSDP (handed over by the
//! loader or found by scanning the BIOS area) points at a root table — the
//! RSDT with 32-bit entries or, since ACPI 2.0, the XSDT with 64-bit ones —
//! whose entries are the physical addresses of the other tables, each
//! opening with a 36-byte header. This module owns decoding the RSDP, those
//! headers, the root table's entry list and the MADT (signature "APIC"),
//! which lists local APICs, IO APICs and ISA interrupt overrides. Mapping the
//! physical memory is the caller's job: map the header, read its `length`,
//! then map that many bytes. Everything is little-endian and untrusted: a
//! malformed table yields `None` or ends a walk early, never a panic.

use crate::bytes::{u16_at, u32_at, u64_at};

/// An ACPI 1.0 RSDP: signature, checksum, OEM id, revision, RSDT address.
pub const RSDP_V1_LEN: usize = 20;
/// An ACPI 2.0+ RSDP adds length, XSDT address, extended checksum, padding.
pub const RSDP_V2_LEN: usize = 36;
/// Every table other than the RSDP opens with this header.
pub const SDT_HEADER_LEN: usize = 36;

const RSDP_SIGNATURE: &[u8; 8] = b"RSD PTR ";
/// MADT entries follow the header, the local APIC address and the flags.
const MADT_ENTRIES_OFFSET: usize = 44;
/// MADT flags bit 0: the board also has dual 8259 PICs, which must be
/// masked before the IO APIC takes over.
const MADT_PCAT_COMPAT: u32 = 1;

/// Local APIC flags bit 0: the processor is ready for use.
const CPU_ENABLED: u32 = 1 << 0;
/// Local APIC flags bit 1 (ACPI 6.3+): with Enabled clear, the processor
/// is absent now but may be hot-added; reserved (zero) when Enabled is set.
const CPU_ONLINE_CAPABLE: u32 = 1 << 1;

/// The decoded Root System Description Pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rsdp {
    /// 0 for ACPI 1.0, 2 for ACPI 2.0 and later.
    pub revision: u8,
    pub rsdt_addr: u32,
    /// Only for revision 2 and later, and only when non-zero.
    pub xsdt_addr: Option<u64>,
}

impl Rsdp {
    /// The root table to walk: the XSDT when there is one, since only its
    /// 64-bit entries can reach tables above 4 GiB, else the RSDT. `None`
    /// when both addresses are zero.
    pub fn root_table_addr(&self) -> Option<u64> {
        self.xsdt_addr.or((self.rsdt_addr != 0).then_some(u64::from(self.rsdt_addr)))
    }
}

/// Decodes an RSDP if its signature and checksum over the first 20 bytes
/// match. Revision 2 and later must also pass the extended checksum over
/// `length` bytes, so `bytes` must then cover at least `length` (36) bytes;
/// a shorter slice is rejected rather than trusted half-checked. Extra
/// bytes past the RSDP are ignored.
pub fn parse_rsdp(bytes: &[u8]) -> Option<Rsdp> {
    let v1: &[u8; RSDP_V1_LEN] = bytes.get(..RSDP_V1_LEN)?.try_into().ok()?;
    if v1[..8] != RSDP_SIGNATURE[..] || !sums_to_zero(v1) {
        return None;
    }
    let revision = v1[15];
    let xsdt_addr = if revision >= 2 {
        let len = usize::try_from(u32_at(bytes, 20)?).ok()?;
        if len < RSDP_V2_LEN {
            return None;
        }
        let all = bytes.get(..len)?;
        if !sums_to_zero(all) {
            return None;
        }
        // A zero XSDT address means "use the RSDT"; reporting it as absent
        // keeps the caller from mapping physical address 0.
        Some(u64_at(all, 24)?).filter(|&a| a != 0)
    } else {
        None
    };
    Some(Rsdp { revision, rsdt_addr: u32_at(v1, 16)?, xsdt_addr })
}

/// Finds an RSDP in a legacy BIOS search area (the first KiB of the EBDA,
/// or 0xE0000..0x100000) for loaders that pass none. `area` must start on a
/// 16-byte boundary, as the RSDP is 16-byte aligned. Returns the RSDP's
/// offset in `area` and its decoded contents.
pub fn find_rsdp(area: &[u8]) -> Option<(usize, Rsdp)> {
    (0..area.len()).step_by(16).find_map(|off| Some((off, parse_rsdp(area.get(off..)?)?)))
}

/// The fields of a system description table header that callers need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdtHeader {
    pub signature: [u8; 4],
    /// Length of the whole table, header included; at least
    /// [`SDT_HEADER_LEN`].
    pub length: u32,
    pub revision: u8,
}

/// Reads a table header from its first 36 bytes, so the caller can map
/// `length` bytes next. `None` if `bytes` is shorter than the header or the
/// header claims a length shorter than itself.
pub fn parse_sdt_header(bytes: &[u8]) -> Option<SdtHeader> {
    let h = bytes.get(..SDT_HEADER_LEN)?;
    let length = u32_at(h, 4)?;
    if (length as usize) < SDT_HEADER_LEN {
        return None;
    }
    Some(SdtHeader { signature: h.get(..4)?.try_into().ok()?, length, revision: *h.get(8)? })
}

/// Whether `bytes` holds a whole table (at least the header's `length`
/// bytes; any excess is ignored) whose checksum is right. The parsers below
/// do not check it themselves, so the caller checks each table once here.
pub fn table_is_valid(bytes: &[u8]) -> bool {
    table(bytes).is_some_and(|(_, t)| sums_to_zero(t))
}

/// The physical addresses a root table lists: 4-byte entries for an RSDT,
/// 8-byte ones for an XSDT (told apart by signature). Yields nothing for
/// any other table or one shorter than its header's `length`. Null entries,
/// which some firmware leaves in place of removed tables, are skipped.
pub fn root_table_entries(table_bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let (width, body) = match table(table_bytes) {
        Some((h, t)) if h.signature == *b"RSDT" => (4, t.get(SDT_HEADER_LEN..).unwrap_or(&[])),
        Some((h, t)) if h.signature == *b"XSDT" => (8, t.get(SDT_HEADER_LEN..).unwrap_or(&[])),
        _ => (4, &[][..]),
    };
    body.chunks_exact(width)
        .filter_map(move |e| if width == 4 { u32_at(e, 0).map(u64::from) } else { u64_at(e, 0) })
        .filter(|&addr| addr != 0)
}

/// One MADT entry ("interrupt controller structure").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadtEntry {
    /// Type 0: a processor, for APIC ids below 255.
    LocalApic { processor_uid: u8, apic_id: u8, flags: u32 },
    /// Type 1.
    IoApic { id: u8, address: u32, gsi_base: u32 },
    /// Type 2: ISA IRQ `source` is wired to `gsi`; `flags` holds polarity
    /// (bits 0-1) and trigger mode (bits 2-3), 0 meaning "as the bus says".
    InterruptOverride { bus: u8, source: u8, gsi: u32, flags: u16 },
    /// Type 5: replaces the MADT's 32-bit local APIC address.
    LocalApicAddressOverride { address: u64 },
    /// Type 9: a processor whose APIC id needs x2APIC mode.
    LocalX2Apic { x2apic_id: u32, flags: u32, processor_uid: u32 },
    /// Any type this module does not decode (NMI wiring, SAPIC, GIC, ...).
    Other { kind: u8 },
}

impl MadtEntry {
    /// The APIC id of a processor that is running now or may be hot-added
    /// later (Enabled or Online Capable set): the set to size per-CPU
    /// state for. Not the set to send INIT/SIPI at boot — an
    /// online-capable slot may hold no processor — for that use
    /// [`enabled_cpu_apic_id`](Self::enabled_cpu_apic_id).
    pub fn usable_cpu_apic_id(&self) -> Option<u32> {
        self.cpu_apic_id(CPU_ENABLED | CPU_ONLINE_CAPABLE)
    }

    /// The APIC id of a processor that firmware reports ready for use,
    /// i.e. one to start during SMP bring-up.
    pub fn enabled_cpu_apic_id(&self) -> Option<u32> {
        self.cpu_apic_id(CPU_ENABLED)
    }

    fn cpu_apic_id(&self, any_of: u32) -> Option<u32> {
        // The all-ones ids are the broadcast destinations, so an entry
        // carrying one cannot name a processor that IPIs could reach.
        let (id, flags) = match *self {
            MadtEntry::LocalApic { apic_id, flags, .. } if apic_id != u8::MAX => (u32::from(apic_id), flags),
            MadtEntry::LocalX2Apic { x2apic_id, flags, .. } if x2apic_id != u32::MAX => (x2apic_id, flags),
            _ => return None,
        };
        (flags & any_of != 0).then_some(id)
    }

    /// Decodes one entry whose bytes (`type`, `length`, payload) are
    /// exactly `e`. `None` if `e` is too short for its type's fields; longer
    /// entries are fine, as later ACPI revisions may append fields.
    fn decode(e: &[u8]) -> Option<MadtEntry> {
        let kind = *e.first()?;
        Some(match kind {
            0 => MadtEntry::LocalApic { processor_uid: *e.get(2)?, apic_id: *e.get(3)?, flags: u32_at(e, 4)? },
            1 => MadtEntry::IoApic { id: *e.get(2)?, address: u32_at(e, 4)?, gsi_base: u32_at(e, 8)? },
            2 => MadtEntry::InterruptOverride {
                bus: *e.get(2)?,
                source: *e.get(3)?,
                gsi: u32_at(e, 4)?,
                flags: u16_at(e, 8)?,
            },
            5 => MadtEntry::LocalApicAddressOverride { address: u64_at(e, 4)? },
            9 => {
                MadtEntry::LocalX2Apic { x2apic_id: u32_at(e, 4)?, flags: u32_at(e, 8)?, processor_uid: u32_at(e, 12)? }
            }
            _ => MadtEntry::Other { kind },
        })
    }
}

/// A decoded MADT: its fixed fields plus its entry list, read lazily.
#[derive(Clone, Copy, Debug)]
pub struct Madt<'a> {
    /// Physical address of every CPU's local APIC, unless a
    /// [`MadtEntry::LocalApicAddressOverride`] entry replaces it.
    pub local_apic_address: u32,
    pub flags: u32,
    entries: &'a [u8],
}

/// Decodes an MADT (signature "APIC"). `table` must cover the header's
/// `length`; bytes past it are ignored. The checksum is not checked here
/// (see [`table_is_valid`]).
pub fn parse_madt(table_bytes: &[u8]) -> Option<Madt<'_>> {
    let (h, t) = table(table_bytes)?;
    if h.signature != *b"APIC" {
        return None;
    }
    Some(Madt { local_apic_address: u32_at(t, 36)?, flags: u32_at(t, 40)?, entries: t.get(MADT_ENTRIES_OFFSET..)? })
}

impl<'a> Madt<'a> {
    /// Whether the board also has legacy 8259 PICs (to be masked).
    pub fn pcat_compat(&self) -> bool {
        self.flags & MADT_PCAT_COMPAT != 0
    }

    /// The entries in table order. The walk ends at an entry whose length
    /// is below 2 (no progress possible), runs past the table, or is too
    /// short for its type's fields: its framing is wrong, so nothing after
    /// it can be trusted either.
    pub fn entries(&self) -> impl Iterator<Item = MadtEntry> + 'a {
        let mut rest = self.entries;
        core::iter::from_fn(move || {
            let len = usize::from(*rest.get(1)?);
            if len < 2 {
                return None;
            }
            let (e, tail) = rest.split_at_checked(len)?;
            let entry = MadtEntry::decode(e)?;
            rest = tail;
            Some(entry)
        })
    }
}

/// The header and the table's `length` bytes, if `bytes` covers them.
fn table(bytes: &[u8]) -> Option<(SdtHeader, &[u8])> {
    let h = parse_sdt_header(bytes)?;
    Some((h, bytes.get(..usize::try_from(h.length).ok()?)?))
}

/// ACPI checksums make all bytes of a structure sum to 0 modulo 256.
fn sums_to_zero(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |sum, &b| sum.wrapping_add(b)) == 0
}

#[cfg(test)]
mod tests;

/// One MCFG allocation: the ECAM window of one PCI segment's bus range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McfgEntry {
    /// Physical address of bus 0's configuration space in this segment
    /// (even when `bus_start` is not 0, as the PCI firmware spec says).
    pub base: u64,
    pub segment: u16,
    pub bus_start: u8,
    pub bus_end: u8,
}

/// Offset of the first allocation in an MCFG: the header and 8 reserved bytes.
const MCFG_ENTRIES_OFFSET: usize = SDT_HEADER_LEN + 8;
const MCFG_ENTRY_LEN: usize = 16;

/// The ECAM allocations an MCFG (signature "MCFG") lists. Yields nothing
/// for another table; entries with an empty bus range or a null base are
/// skipped. The checksum is not checked here (see [`table_is_valid`]).
pub fn mcfg_entries(table_bytes: &[u8]) -> impl Iterator<Item = McfgEntry> + '_ {
    let body = match table(table_bytes) {
        Some((h, t)) if h.signature == *b"MCFG" => t.get(MCFG_ENTRIES_OFFSET..).unwrap_or(&[]),
        _ => &[][..],
    };
    body.chunks_exact(MCFG_ENTRY_LEN).filter_map(|e| {
        let entry = McfgEntry { base: u64_at(e, 0)?, segment: u16_at(e, 8)?, bus_start: e[10], bus_end: e[11] };
        (entry.base != 0 && entry.bus_start <= entry.bus_end).then_some(entry)
    })
}

#[cfg(test)]
mod mcfg_tests {
    use super::*;

    fn mcfg(entries: &[(u64, u16, u8, u8)]) -> std::vec::Vec<u8> {
        let len = MCFG_ENTRIES_OFFSET + entries.len() * MCFG_ENTRY_LEN;
        let mut t = std::vec![0u8; len];
        t[..4].copy_from_slice(b"MCFG");
        t[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        for (i, &(base, seg, s, e)) in entries.iter().enumerate() {
            let o = MCFG_ENTRIES_OFFSET + i * MCFG_ENTRY_LEN;
            t[o..o + 8].copy_from_slice(&base.to_le_bytes());
            t[o + 8..o + 10].copy_from_slice(&seg.to_le_bytes());
            t[o + 10] = s;
            t[o + 11] = e;
        }
        let sum = t.iter().fold(0u8, |a, &b| a.wrapping_add(b));
        t[9] = 0u8.wrapping_sub(sum);
        t
    }

    #[test]
    fn qemu_q35_mcfg_decodes() {
        // What QEMU's q35 reports: one segment, buses 0..=255 at 0xB000_0000.
        let t = mcfg(&[(0xB000_0000, 0, 0, 255)]);
        assert!(table_is_valid(&t));
        let e: std::vec::Vec<_> = mcfg_entries(&t).collect();
        assert_eq!(e, [McfgEntry { base: 0xB000_0000, segment: 0, bus_start: 0, bus_end: 255 }]);
    }

    #[test]
    fn bad_entries_are_skipped() {
        let t = mcfg(&[(0, 0, 0, 255), (0xE000_0000, 1, 9, 3), (0xC000_0000, 2, 0, 7)]);
        let e: std::vec::Vec<_> = mcfg_entries(&t).collect();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].segment, 2);
        // A truncated table yields nothing past its end, and another
        // signature yields nothing at all.
        assert_eq!(mcfg_entries(&t[..MCFG_ENTRIES_OFFSET + 10]).count(), 0);
        let mut other = t.clone();
        other[..4].copy_from_slice(b"APIC");
        assert_eq!(mcfg_entries(&other).count(), 0);
    }
}
