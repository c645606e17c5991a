//! Reading the Xen PVH `hvm_start_info` handed over in `%ebx`.
//!
//! QEMU's `-kernel` PVH boot (and Xen, Firecracker, cloud-hypervisor) enters
//! the kernel with a physical pointer to this structure. It only holds
//! further physical addresses — module list, command line, RSDP, memory map —
//! so this module owns decoding the fixed-layout records, while mapping the
//! memory they point at is the caller's job. Layouts follow Xen's
//! `xen/include/public/arch-x86/hvm/start_info.h`; all fields little-endian.

use crate::bytes::{u32_at, u64_at};
use crate::memmap::{Full, MemoryMap, Region, RegionKind};

pub const PVH_MAGIC: u32 = 0x336e_c578;

/// Version 0 of the structure stops after `rsdp_paddr`.
const V0_SIZE: usize = 40;

/// The decoded `hvm_start_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartInfo {
    pub version: u32,
    pub flags: u32,
    pub nr_modules: u32,
    pub modlist_paddr: u64,
    pub cmdline_paddr: u64,
    pub rsdp_paddr: u64,
    pub memmap_paddr: u64,
    pub memmap_entries: u32,
}

impl StartInfo {
    /// Size of the version-1 structure, which is what the caller should map.
    pub const SIZE: usize = 56;

    /// Decodes the structure if the magic matches and `bytes` covers the
    /// fields its version defines (40 bytes for version 0, [`SIZE`] for
    /// version 1 and later). For version 0 the memory map fields are 0,
    /// so the caller falls back to another memory map source.
    ///
    /// [`SIZE`]: Self::SIZE
    pub fn parse(bytes: &[u8]) -> Option<StartInfo> {
        if u32_at(bytes, 0)? != PVH_MAGIC {
            return None;
        }
        let version = u32_at(bytes, 4)?;
        if bytes.len() < if version == 0 { V0_SIZE } else { Self::SIZE } {
            return None;
        }
        let (memmap_paddr, memmap_entries) =
            if version >= 1 { (u64_at(bytes, 40)?, u32_at(bytes, 48)?) } else { (0, 0) };
        Some(StartInfo {
            version,
            flags: u32_at(bytes, 8)?,
            nr_modules: u32_at(bytes, 12)?,
            modlist_paddr: u64_at(bytes, 16)?,
            cmdline_paddr: u64_at(bytes, 24)?,
            rsdp_paddr: u64_at(bytes, 32)?,
            memmap_paddr,
            memmap_entries,
        })
    }
}

/// `hvm_memmap_table_entry`: u64 addr, u64 size, u32 type, u32 reserved.
pub const MEMMAP_ENTRY_SIZE: usize = 24;

/// Pushes every complete `hvm_memmap_table_entry` in `bytes` into `map`
/// (types use E820 numbering) and returns how many entries were read. A
/// trailing partial entry is ignored; the caller sizes `bytes` from
/// `memmap_entries`, so one only appears if that slice was cut short.
pub fn parse_memmap(bytes: &[u8], map: &mut MemoryMap) -> Result<usize, Full> {
    let mut n = 0;
    for e in bytes.chunks_exact(MEMMAP_ENTRY_SIZE) {
        let (Some(addr), Some(size), Some(ty)) = (u64_at(e, 0), u64_at(e, 8), u32_at(e, 16)) else {
            break;
        };
        map.push(Region { start: addr, end: addr.saturating_add(size), kind: RegionKind::from_e820(ty) })?;
        n += 1;
    }
    Ok(n)
}

/// `hvm_modlist_entry`: u64 paddr, u64 size, u64 cmdline_paddr, u64 reserved.
pub const MODLIST_ENTRY_SIZE: usize = 32;

/// One boot module. `cmdline_paddr` is 0 when the module has no string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModEntry {
    pub paddr: u64,
    pub size: u64,
    pub cmdline_paddr: u64,
}

/// Decodes one module list entry; `None` if `bytes` is shorter than
/// [`MODLIST_ENTRY_SIZE`]. Extra bytes are ignored so the caller may pass
/// the tail of the list.
pub fn parse_module(bytes: &[u8]) -> Option<ModEntry> {
    if bytes.len() < MODLIST_ENTRY_SIZE {
        return None;
    }
    Some(ModEntry { paddr: u64_at(bytes, 0)?, size: u64_at(bytes, 8)?, cmdline_paddr: u64_at(bytes, 16)? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::Rng;

    fn start_info(version: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&PVH_MAGIC.to_le_bytes());
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // flags
        b.extend_from_slice(&2u32.to_le_bytes()); // nr_modules
        b.extend_from_slice(&0x1000u64.to_le_bytes());
        b.extend_from_slice(&0x2000u64.to_le_bytes());
        b.extend_from_slice(&0xf_5a40u64.to_le_bytes());
        b.extend_from_slice(&0x3000u64.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(b.len(), StartInfo::SIZE);
        b
    }

    #[test]
    fn parses_version_1() {
        let si = StartInfo::parse(&start_info(1)).unwrap();
        assert_eq!(
            si,
            StartInfo {
                version: 1,
                flags: 1,
                nr_modules: 2,
                modlist_paddr: 0x1000,
                cmdline_paddr: 0x2000,
                rsdp_paddr: 0xf_5a40,
                memmap_paddr: 0x3000,
                memmap_entries: 7,
            }
        );
        // Future versions keep the v1 prefix.
        assert_eq!(StartInfo::parse(&start_info(5)).unwrap().memmap_entries, 7);
    }

    #[test]
    fn version_0_has_no_memmap() {
        let b = start_info(0);
        let si = StartInfo::parse(&b).unwrap();
        assert_eq!((si.memmap_paddr, si.memmap_entries), (0, 0));
        assert_eq!(si.rsdp_paddr, 0xf_5a40);
        // 40 bytes suffice for version 0 ...
        assert!(StartInfo::parse(&b[..40]).is_some());
        assert!(StartInfo::parse(&b[..39]).is_none());
        // ... but not for version 1.
        let b1 = start_info(1);
        assert!(StartInfo::parse(&b1[..40]).is_none());
        assert!(StartInfo::parse(&b1[..55]).is_none());
    }

    #[test]
    fn rejects_bad_magic() {
        let mut b = start_info(1);
        b[0] ^= 1;
        assert!(StartInfo::parse(&b).is_none());
        assert!(StartInfo::parse(&[0; 56]).is_none());
        assert!(StartInfo::parse(&[]).is_none());
    }

    fn entry(addr: u64, size: u64, ty: u32) -> Vec<u8> {
        let mut e = Vec::new();
        e.extend_from_slice(&addr.to_le_bytes());
        e.extend_from_slice(&size.to_le_bytes());
        e.extend_from_slice(&ty.to_le_bytes());
        e.extend_from_slice(&0u32.to_le_bytes());
        e
    }

    #[test]
    fn memmap_entries() {
        let mut b = entry(0, 0x9fc00, 1);
        b.extend(entry(0xf0000, 0x10000, 2));
        b.extend(entry(0x10_0000, 0x1000_0000, 1));
        b.extend(entry(0x1000, 0, 1)); // empty: counted, not stored
        b.extend(entry(u64::MAX - 1, 10, 7)); // PMEM: unknown → reserved
        let mut map = MemoryMap::new();
        assert_eq!(parse_memmap(&b, &mut map), Ok(5));
        assert_eq!(map.regions().len(), 4);
        assert_eq!(map.regions()[1].kind, RegionKind::Reserved);
        assert_eq!(map.regions()[3], Region { start: u64::MAX - 1, end: u64::MAX, kind: RegionKind::Reserved });
        // Partial trailing entry is ignored.
        let mut map = MemoryMap::new();
        assert_eq!(parse_memmap(&b[..24 * 2 + 23], &mut map), Ok(2));
        assert_eq!(parse_memmap(&[], &mut map), Ok(0));
    }

    #[test]
    fn memmap_full() {
        let mut b = Vec::new();
        for i in 0..129u64 {
            b.extend(entry(i * 0x2000, 0x1000, 1));
        }
        let mut map = MemoryMap::new();
        assert_eq!(parse_memmap(&b, &mut map), Err(Full));
    }

    #[test]
    fn modules() {
        let mut b = Vec::new();
        for v in [0x40_0000u64, 0x1234, 0x5000, 0xdead] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(parse_module(&b), Some(ModEntry { paddr: 0x40_0000, size: 0x1234, cmdline_paddr: 0x5000 }));
        assert_eq!(parse_module(&b[..31]), None);
        b.push(9);
        assert!(parse_module(&b).is_some());
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = Rng::new(7);
        let good = start_info(1);
        for n in 0..=good.len() {
            let _ = StartInfo::parse(&good[..n]);
            let _ = parse_module(&good[..n]);
            let _ = parse_memmap(&good[..n], &mut MemoryMap::new());
        }
        for _ in 0..10_000 {
            let mut b = vec![0u8; rng.below(200) as usize];
            rng.fill(&mut b);
            if b.len() >= 4 && rng.below(2) == 0 {
                b[..4].copy_from_slice(&PVH_MAGIC.to_le_bytes());
            }
            let _ = StartInfo::parse(&b);
            let _ = parse_module(&b);
            let _ = parse_memmap(&b, &mut MemoryMap::new());
        }
    }
}
