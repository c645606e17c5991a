//! Intel VT-d (DMA remapping) as data: the ACPI DMAR table that locates
//! the remapping hardware units, and the bit layouts of what the hal
//! writes for them — root and context entries, second-level page-table
//! entries, the capability registers and the fault records it reads back.
//! Everything follows the VT-d specification (rev. 3+); the firmware's
//! table is untrusted, so a malformed one ends the walk, never panics.
//! The hal's `device::iommu` does the register and memory accesses.

use crate::bytes::{u16_at, u64_at};

/// The DMAR header: the SDT header, host address width, flags, reserved.
const DMAR_STRUCTS_OFFSET: usize = 48;
const DMAR_TYPE_DRHD: u16 = 0;
const DMAR_TYPE_RMRR: u16 = 1;
/// DRHD flags bit 0: the unit covers every PCI device of its segment not
/// listed under another unit.
const DRHD_INCLUDE_PCI_ALL: u8 = 1;
/// Where a DRHD's device scope entries start.
const DRHD_SCOPES_OFFSET: usize = 16;
const SCOPE_PCI_ENDPOINT: u8 = 1;
const SCOPE_PCI_SUB_HIERARCHY: u8 = 2;
/// The most device scope entries of one unit kept; more are counted.
pub const MAX_SCOPES: usize = 32;
/// The most path hops (bridges, then the device) of a scope entry kept.
pub const MAX_PATH: usize = 4;

/// What the DMAR says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dmar {
    /// The widest DMA address the platform produces, in bits.
    pub host_address_width: u8,
    /// The first DMA-remapping hardware unit (DRHD) of segment 0: the only
    /// one Kiln drives. QEMU 7.2 has exactly one, without INCLUDE_PCI_ALL,
    /// listing each device of bus 0 as a scope entry.
    pub unit: Option<DmarUnit>,
    /// DRHDs past the one kept (not driven: their devices would stay
    /// untranslated, so the hal refuses to turn remapping on).
    pub other_units: usize,
    /// Reserved memory regions (RMRRs): memory firmware-owned devices keep
    /// using. Kiln maps none, so it refuses to turn remapping on if any.
    pub rmrrs: usize,
}

/// One DMA-remapping hardware unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmarUnit {
    /// Physical address of its 4 KiB register set.
    pub register_base: u64,
    pub segment: u16,
    /// It covers every device of its segment (then `scopes` only lists
    /// IO APICs and the like, and is not consulted).
    pub include_pci_all: bool,
    /// Its PCI device scope entries, in table order.
    pub scopes: [Option<DeviceScope>; MAX_SCOPES],
    /// PCI scope entries not kept (past `MAX_SCOPES`, or a path longer
    /// than `MAX_PATH`): the devices they name count as not covered.
    pub scopes_dropped: usize,
}

/// A PCI device scope entry: the function at the end of `path`, walked
/// from `start_bus` through bridges, and for a sub-hierarchy everything
/// behind that bridge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceScope {
    /// A bridge whose whole sub-hierarchy is covered (else an endpoint).
    pub sub_hierarchy: bool,
    pub start_bus: u8,
    /// (device, function) hops; the first `hops` are used.
    pub path: [(u8, u8); MAX_PATH],
    pub hops: u8,
}

/// A bridge's secondary and subordinate bus numbers, read from its
/// configuration space by the caller (None: not a bridge).
pub type BridgeBuses<'a> = &'a dyn Fn(u8, u8, u8) -> Option<(u8, u8)>;

impl DeviceScope {
    /// The (bus, device, function) the path ends at, following bridges'
    /// secondary bus numbers; None if a hop is not a bridge.
    fn target(&self, bridge: BridgeBuses<'_>) -> Option<(u8, u8, u8)> {
        let hops = self.path.get(..usize::from(self.hops))?;
        let (&(device, function), before) = hops.split_last()?;
        let mut bus = self.start_bus;
        for &(d, f) in before {
            bus = bridge(bus, d, f)?.0;
        }
        Some((bus, device, function))
    }

    /// Whether this entry names the function at `bus:device.function`.
    pub fn covers(&self, bus: u8, device: u8, function: u8, bridge: BridgeBuses<'_>) -> bool {
        let Some(target) = self.target(bridge) else { return false };
        if target == (bus, device, function) {
            return true;
        }
        self.sub_hierarchy
            && bridge(target.0, target.1, target.2)
                .is_some_and(|(secondary, subordinate)| (secondary..=subordinate).contains(&bus))
    }
}

impl DmarUnit {
    /// Whether DMA of the function at `bus:device.function` (segment 0)
    /// goes through this unit.
    pub fn covers(&self, bus: u8, device: u8, function: u8, bridge: BridgeBuses<'_>) -> bool {
        self.include_pci_all || self.scopes.iter().flatten().any(|s| s.covers(bus, device, function, bridge))
    }
}

/// The PCI scope entries of a DRHD's body (after its 16-byte header).
fn read_scopes(s: &[u8], unit: &mut DmarUnit) {
    let mut at = DRHD_SCOPES_OFFSET;
    let mut kept = 0;
    while let (Some(&kind), Some(&len)) = (s.get(at), s.get(at + 1)) {
        let len = usize::from(len);
        let Some(entry) = s.get(at..at + len).filter(|_| len >= 6) else { break };
        at += len;
        if kind != SCOPE_PCI_ENDPOINT && kind != SCOPE_PCI_SUB_HIERARCHY {
            continue; // IO APIC, HPET, ACPI namespace device
        }
        let hops = (len - 6) / 2;
        if hops == 0 || hops > MAX_PATH || kept == MAX_SCOPES {
            unit.scopes_dropped += 1;
            continue;
        }
        let mut path = [(0, 0); MAX_PATH];
        for (i, hop) in path.iter_mut().take(hops).enumerate() {
            *hop = (entry[6 + 2 * i], entry[7 + 2 * i]);
        }
        unit.scopes[kept] = Some(DeviceScope {
            sub_hierarchy: kind == SCOPE_PCI_SUB_HIERARCHY,
            start_bus: entry[5],
            path,
            hops: hops as u8,
        });
        kept += 1;
    }
}

/// Decodes a DMAR table (signature "DMAR"); None for another table or a
/// header too short. The checksum is the caller's (`acpi::table_is_valid`).
pub fn parse_dmar(table_bytes: &[u8]) -> Option<Dmar> {
    let header = crate::acpi::parse_sdt_header(table_bytes)?;
    if header.signature != *b"DMAR" {
        return None;
    }
    let table = table_bytes.get(..usize::try_from(header.length).ok()?)?;
    let mut dmar = Dmar { host_address_width: table.get(36)?.wrapping_add(1), ..Dmar::default() };
    let mut at = DMAR_STRUCTS_OFFSET;
    while let (Some(kind), Some(len)) = (u16_at(table, at), u16_at(table, at + 2)) {
        let len = usize::from(len);
        let Some(s) = table.get(at..at + len).filter(|_| len >= 4) else { break };
        match kind {
            DMAR_TYPE_DRHD if len >= DRHD_SCOPES_OFFSET => {
                let mut unit = DmarUnit {
                    register_base: u64_at(s, 8)?,
                    segment: u16_at(s, 6)?,
                    include_pci_all: s[4] & DRHD_INCLUDE_PCI_ALL != 0,
                    scopes: [None; MAX_SCOPES],
                    scopes_dropped: 0,
                };
                if dmar.unit.is_none() && unit.segment == 0 && unit.register_base != 0 {
                    read_scopes(s, &mut unit);
                    dmar.unit = Some(unit);
                } else {
                    dmar.other_units += 1;
                }
            }
            DMAR_TYPE_RMRR => dmar.rmrrs += 1,
            _ => {}
        }
        at += len;
    }
    Some(dmar)
}

/// Register offsets of a remapping unit.
pub mod reg {
    pub const CAP: u64 = 0x08;
    pub const ECAP: u64 = 0x10;
    /// Global command (32 bits): one command bit per write.
    pub const GCMD: u64 = 0x18;
    pub const GSTS: u64 = 0x1C;
    pub const RTADDR: u64 = 0x20;
    /// Context command: register-based context-cache invalidation.
    pub const CCMD: u64 = 0x28;
    pub const FSTS: u64 = 0x34;
    /// Fault event control: bit 31 masks the fault interrupt.
    pub const FECTL: u64 = 0x38;
    /// Fault event MSI: data, address, upper address.
    pub const FEDATA: u64 = 0x3C;
    pub const FEADDR: u64 = 0x40;
    pub const FEUADDR: u64 = 0x44;
}

/// Global command and status bits (the same position in both).
pub mod gcmd {
    pub const TE: u32 = 1 << 31;
    pub const SRTP: u32 = 1 << 30;
    pub const QIE: u32 = 1 << 26;
    pub const IRE: u32 = 1 << 25;
    /// Status bits that are states, not one-shot commands: the value a
    /// new command is ORed into.
    pub const PERSISTENT: u32 = TE | QIE | IRE | (1 << 23);
}

/// CCMD: invalidate the whole context cache.
pub const CCMD_GLOBAL_INVALIDATE: u64 = (1 << 63) | (1 << 61);
pub const CCMD_BUSY: u64 = 1 << 63;
/// IOTLB register: invalidate, drain reads and writes first.
pub const IOTLB_BUSY: u64 = 1 << 63;
pub const IOTLB_GLOBAL: u64 = (1 << 63) | (1 << 60) | (1 << 49) | (1 << 48);
/// Domain-selective IOTLB invalidation of `domain`, draining DMA reads
/// and writes so none already translated lands after it completes.
pub fn iotlb_domain(domain: u16) -> u64 {
    (1 << 63) | (2 << 60) | (1 << 49) | (1 << 48) | (u64::from(domain) << 32)
}

/// FSTS: primary pending fault, and its overflow.
pub const FSTS_PPF: u32 = 1 << 1;
pub const FSTS_PFO: u32 = 1 << 0;

/// The capability and extended capability registers, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub cap: u64,
    pub ecap: u64,
}

impl Caps {
    /// Supported second-level page-table depths (SAGAW): bit 1 is 3
    /// levels (39-bit), bit 2 is 4 levels (48-bit).
    pub fn sagaw(&self) -> u64 {
        (self.cap >> 8) & 0x1F
    }

    /// The page-table depth to use, preferring 4 levels; None if the unit
    /// supports neither 3 nor 4.
    pub fn levels(&self) -> Option<u8> {
        if self.sagaw() & 0b100 != 0 {
            Some(4)
        } else if self.sagaw() & 0b010 != 0 {
            Some(3)
        } else {
            None
        }
    }

    /// Caching mode: the unit may cache not-present entries, so making an
    /// entry present needs an invalidation too.
    pub fn caching_mode(&self) -> bool {
        self.cap & (1 << 7) != 0
    }

    /// Domain ids supported: 2^(4 + 2*ND).
    pub fn domains(&self) -> u32 {
        1 << (4 + 2 * (self.cap & 7) as u32).min(16)
    }

    /// Byte offset of the first fault recording register.
    pub fn fault_record_offset(&self) -> u64 {
        ((self.cap >> 24) & 0x3FF) * 16
    }

    /// Number of fault recording registers.
    pub fn fault_records(&self) -> u64 {
        ((self.cap >> 40) & 0xFF) + 1
    }

    /// Byte offset of the IOTLB registers (IVA, then IOTLB at +8).
    pub fn iotlb_offset(&self) -> u64 {
        ((self.ecap >> 8) & 0x3FF) * 16
    }

    /// Page-walk coherency: without it, table writes must be flushed
    /// from the CPU caches before the unit reads them.
    pub fn coherent(&self) -> bool {
        self.ecap & 1 != 0
    }
}

/// A root entry (the low 64 of 128 bits; the high half stays 0): present,
/// pointing at bus's context table.
pub fn root_entry(context_table: u64) -> u64 {
    (context_table & !0xFFF) | 1
}

/// A context entry's two 64-bit halves: present, translating untranslated
/// requests through the second-level table at `table` of depth `levels`,
/// tagged with `domain`. Faults are reported (FPD clear).
pub fn context_entry(table: u64, levels: u8, domain: u16) -> [u64; 2] {
    let aw = u64::from(levels.saturating_sub(2));
    [(table & !0xFFF) | 1, aw | (u64::from(domain) << 8)]
}

/// Second-level entry bits: read and write allowed.
pub const SL_READ: u64 = 1 << 0;
pub const SL_WRITE: u64 = 1 << 1;
pub const SL_ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;

/// A second-level entry granting read and write to the 4 KiB frame (or
/// the next-level table) at `addr`.
pub fn sl_entry(addr: u64) -> u64 {
    (addr & SL_ADDR_MASK) | SL_READ | SL_WRITE
}

/// The index into the level-`level` table (1 is the leaf) for I/O
/// virtual address `iova`.
pub fn sl_index(iova: u64, level: u8) -> usize {
    ((iova >> (12 + 9 * (u32::from(level) - 1))) & 0x1FF) as usize
}

/// One decoded fault recording register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    /// The faulting request's page address.
    pub addr: u64,
    /// Requester id: bus << 8 | device << 3 | function.
    pub source: u16,
    /// Fault reason code (e.g. 5: write to a not-writable or absent page
    /// under second-level translation; 6: read of one).
    pub reason: u8,
    /// Whether the request was a write (type bit clear).
    pub write: bool,
}

/// Decodes a fault record's low and high halves; None if its F bit is
/// clear (no fault recorded there).
pub fn fault_record(low: u64, high: u64) -> Option<FaultRecord> {
    (high & (1 << 63) != 0).then_some(FaultRecord {
        addr: low & !0xFFF,
        source: high as u16,
        reason: (high >> 32) as u8,
        write: high & (1 << 62) == 0,
    })
}

/// The high half to write back to clear a fault record (F is RW1C).
pub const FAULT_CLEAR: u64 = 1 << 63;

#[cfg(test)]
mod tests {
    use super::*;

    /// A DMAR with the given remapping structures, checksummed.
    fn dmar(structs: &[&[u8]]) -> std::vec::Vec<u8> {
        let mut t = std::vec![0u8; DMAR_STRUCTS_OFFSET];
        for s in structs {
            t.extend_from_slice(s);
        }
        let len = t.len() as u32;
        t[..4].copy_from_slice(b"DMAR");
        t[4..8].copy_from_slice(&len.to_le_bytes());
        t[36] = 38; // 39-bit host address width, minus one
        let sum = t.iter().fold(0u8, |a, &b| a.wrapping_add(b));
        t[9] = 0u8.wrapping_sub(sum);
        t
    }

    fn drhd(flags: u8, segment: u16, base: u64) -> std::vec::Vec<u8> {
        let mut s = std::vec![0u8; 16];
        s[2..4].copy_from_slice(&16u16.to_le_bytes());
        s[4] = flags;
        s[6..8].copy_from_slice(&segment.to_le_bytes());
        s[8..16].copy_from_slice(&base.to_le_bytes());
        s
    }

    #[test]
    fn qemu_dmar_decodes() {
        // QEMU's intel-iommu: one DRHD, INCLUDE_PCI_ALL, at 0xFED90000.
        let t = dmar(&[&drhd(1, 0, 0xFED9_0000)]);
        assert!(crate::acpi::table_is_valid(&t));
        let d = parse_dmar(&t).unwrap();
        assert_eq!(d.host_address_width, 39);
        let unit = d.unit.unwrap();
        assert_eq!((unit.register_base, unit.segment, unit.include_pci_all), (0xFED9_0000, 0, true));
        assert!(unit.covers(3, 0, 0, &|_, _, _| None));
        assert_eq!((d.other_units, d.rmrrs), (0, 0));
    }

    fn scope(kind: u8, start_bus: u8, path: &[(u8, u8)]) -> std::vec::Vec<u8> {
        let mut e = std::vec![kind, (6 + 2 * path.len()) as u8, 0, 0, 0, start_bus];
        for &(d, f) in path {
            e.extend_from_slice(&[d, f]);
        }
        e
    }

    fn scoped_drhd(base: u64, scopes: &[std::vec::Vec<u8>]) -> std::vec::Vec<u8> {
        let mut s = drhd(0, 0, base);
        for e in scopes {
            s.extend_from_slice(e);
        }
        let len = s.len() as u16;
        s[2..4].copy_from_slice(&len.to_le_bytes());
        s
    }

    #[test]
    fn qemu_7_2_scoped_drhd_decodes() {
        // QEMU 7.2's q35 DMAR (Linux: "DRHD base: 0xfed90000 flags: 0x0"):
        // no INCLUDE_PCI_ALL, one endpoint scope per function of bus 0,
        // and (with interrupt remapping) an IO APIC scope.
        let scopes = [
            scope(1, 0, &[(0, 0)]),
            scope(1, 0, &[(1, 0)]),
            scope(1, 0, &[(2, 0)]),
            scope(3, 0xFF, &[(0, 0)]),
            scope(1, 0, &[(0x1F, 2)]),
        ];
        let t = dmar(&[&scoped_drhd(0xFED9_0000, &scopes)]);
        let unit = parse_dmar(&t).unwrap().unit.unwrap();
        assert!(!unit.include_pci_all);
        assert_eq!(unit.scopes.iter().flatten().count(), 4);
        assert_eq!(unit.scopes_dropped, 0);
        let no_bridges = |_, _, _| None;
        assert!(unit.covers(0, 2, 0, &no_bridges));
        assert!(unit.covers(0, 0x1F, 2, &no_bridges));
        assert!(!unit.covers(0, 3, 0, &no_bridges));
        assert!(!unit.covers(0, 0x1F, 3, &no_bridges));
        assert!(!unit.covers(1, 2, 0, &no_bridges));
    }

    #[test]
    fn scopes_follow_bridges() {
        // A bridge at 0:1c.0 with buses 2..=4 behind it; an endpoint at
        // 2:00.0 named through it, and a sub-hierarchy at 0:1d.0 (5..=6).
        let bridge = |bus, dev, func| match (bus, dev, func) {
            (0, 0x1C, 0) => Some((2, 4)),
            (0, 0x1D, 0) => Some((5, 6)),
            _ => None,
        };
        let scopes = [scope(1, 0, &[(0x1C, 0), (0, 0)]), scope(2, 0, &[(0x1D, 0)])];
        let unit = parse_dmar(&dmar(&[&scoped_drhd(0xFED9_0000, &scopes)])).unwrap().unit.unwrap();
        assert!(unit.covers(2, 0, 0, &bridge));
        assert!(!unit.covers(3, 0, 0, &bridge));
        assert!(unit.covers(0, 0x1D, 0, &bridge));
        assert!(unit.covers(5, 1, 0, &bridge) && unit.covers(6, 0, 0, &bridge));
        assert!(!unit.covers(7, 0, 0, &bridge));
        // A path through something that is not a bridge names nothing.
        assert!(!unit.covers(0, 0, 0, &|_, _, _| None));
    }

    #[test]
    fn scope_overflow_is_counted() {
        let many: std::vec::Vec<_> = (0..MAX_SCOPES as u8 + 2).map(|d| scope(1, 0, &[(d, 0)])).collect();
        let long = scope(1, 0, &[(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]);
        let all: std::vec::Vec<_> = many.into_iter().chain([long]).collect();
        let unit = parse_dmar(&dmar(&[&scoped_drhd(0xFED9_0000, &all)])).unwrap().unit.unwrap();
        assert_eq!(unit.scopes.iter().flatten().count(), MAX_SCOPES);
        assert_eq!(unit.scopes_dropped, 3);
        // A scope entry shorter than its header ends the walk.
        let mut bad = scoped_drhd(0xFED9_0000, &[scope(1, 0, &[(2, 0)])]);
        bad[17] = 2;
        let unit = parse_dmar(&dmar(&[&bad])).unwrap().unit.unwrap();
        assert_eq!(unit.scopes.iter().flatten().count(), 0);
    }

    #[test]
    fn other_units_and_rmrrs_are_counted() {
        let mut rmrr = std::vec![0u8; 24];
        rmrr[0] = 1;
        rmrr[2] = 24;
        let t = dmar(&[&drhd(1, 1, 0xFED9_2000), &drhd(0, 0, 0xFED9_1000), &rmrr, &drhd(1, 0, 0xFED9_0000)]);
        let d = parse_dmar(&t).unwrap();
        assert_eq!(d.unit.unwrap().register_base, 0xFED9_1000);
        assert_eq!((d.other_units, d.rmrrs), (2, 1));
    }

    #[test]
    fn malformed_tables_end_the_walk() {
        // A zero-length structure would loop forever if walked.
        let mut zero = drhd(1, 0, 0xFED9_0000);
        zero[2] = 0;
        assert_eq!(parse_dmar(&dmar(&[&zero])).unwrap().unit, None);
        // A structure longer than the table is not read.
        let mut long = drhd(1, 0, 0xFED9_0000);
        long[2] = 200;
        assert_eq!(parse_dmar(&dmar(&[&long])).unwrap().unit, None);
        // Truncated or another signature.
        let t = dmar(&[&drhd(1, 0, 0xFED9_0000)]);
        assert!(parse_dmar(&t[..20]).is_none());
        let mut other = t.clone();
        other[..4].copy_from_slice(b"APIC");
        assert!(parse_dmar(&other).is_none());
    }

    #[test]
    fn capabilities_decode() {
        // Like QEMU 7.2's intel-iommu: SAGAW 39-bit only, ND=2, FRO 0x22
        // (records at 0x220), NFR 0 (one record), IRO 0xF (IOTLB at 0xF8).
        let caps = Caps { cap: (0x22 << 24) | (0b010 << 8) | 2, ecap: 0xF << 8 };
        assert_eq!(caps.levels(), Some(3));
        assert_eq!(caps.domains(), 256);
        assert_eq!(caps.fault_record_offset(), 0x220);
        assert_eq!(caps.fault_records(), 1);
        assert_eq!(caps.iotlb_offset(), 0xF0);
        assert!(!caps.caching_mode());
        assert_eq!(Caps { cap: 0b110 << 8, ecap: 0 }.levels(), Some(4));
        // QEMU 7.2's own registers (Linux: "cap d2008c22260206 ecap f42").
        let qemu = Caps { cap: 0x00D2_008C_2226_0206, ecap: 0xF42 };
        assert_eq!(qemu.levels(), Some(3));
        assert_eq!((qemu.fault_record_offset(), qemu.fault_records(), qemu.iotlb_offset()), (0x220, 1, 0xF0));
        assert!(!qemu.caching_mode() && !qemu.coherent());
        assert_eq!(Caps { cap: 0b001 << 8, ecap: 0 }.levels(), None);
    }

    #[test]
    fn entries_encode() {
        assert_eq!(root_entry(0x1234_5000), 0x1234_5001);
        assert_eq!(context_entry(0x7000, 3, 5), [0x7001, 1 | (5 << 8)]);
        assert_eq!(context_entry(0x7000, 4, 1)[1], 2 | (1 << 8));
        assert_eq!(sl_entry(0x8000_0123), 0x8000_0003);
        let iova = (3 << 39) | (5 << 30) | (7 << 21) | (9 << 12) | 0x123;
        assert_eq!([4, 3, 2, 1].map(|l| sl_index(iova, l)), [3, 5, 7, 9]);
        assert_eq!((iotlb_domain(7) >> 32) & 0xFFFF, 7);
        assert_eq!((iotlb_domain(7) >> 60) & 3, 2);
    }

    #[test]
    fn fault_records_decode() {
        assert_eq!(fault_record(0x1234_5678, 0), None);
        let high = (1 << 63) | (5u64 << 32) | 0x0010;
        assert_eq!(
            fault_record(0x1234_5678, high),
            Some(FaultRecord { addr: 0x1234_5000, source: 0x10, reason: 5, write: true })
        );
        assert!(!fault_record(0, high | (1 << 62)).unwrap().write);
    }
}
