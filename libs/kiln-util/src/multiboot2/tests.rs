//! Host unit tests for [`super`], kept in their own file so the
//! implementation stays readable.

use super::*;
use crate::testrng::Rng;

/// Assembles a boot information blob the way a loader would.
struct Builder(Vec<u8>);

impl Builder {
    fn new() -> Self {
        Builder(vec![0; 8])
    }

    fn tag(mut self, ty: u32, payload: &[u8]) -> Self {
        self.0.extend_from_slice(&ty.to_le_bytes());
        self.0.extend_from_slice(&(8 + payload.len() as u32).to_le_bytes());
        self.0.extend_from_slice(payload);
        while !self.0.len().is_multiple_of(8) {
            self.0.push(0);
        }
        self
    }

    fn mmap(self, entry_size: u32, entries: &[(u64, u64, u32)]) -> Self {
        let mut p = Vec::new();
        p.extend_from_slice(&entry_size.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        for &(base, len, ty) in entries {
            let start = p.len();
            p.extend_from_slice(&base.to_le_bytes());
            p.extend_from_slice(&len.to_le_bytes());
            p.extend_from_slice(&ty.to_le_bytes());
            p.resize(start + entry_size as usize, 0);
        }
        self.tag(TAG_MMAP, &p)
    }

    fn module(self, start: u32, end: u32, s: &[u8]) -> Self {
        let mut p = Vec::new();
        p.extend_from_slice(&start.to_le_bytes());
        p.extend_from_slice(&end.to_le_bytes());
        p.extend_from_slice(s);
        p.push(0);
        self.tag(TAG_MODULE, &p)
    }

    fn finish(self) -> Vec<u8> {
        let mut v = self.tag(TAG_END, &[]).0;
        let n = v.len() as u32;
        v[..4].copy_from_slice(&n.to_le_bytes());
        v
    }
}

fn sample() -> Vec<u8> {
    let mut rsdp = b"RSD PTR ".to_vec();
    rsdp.resize(36, 7);
    Builder::new()
        .tag(TAG_CMDLINE, b"console=ttyS0 loglevel=3\0")
        .tag(TAG_BOOTLOADER, b"GRUB 2.12\0")
        .module(0x10_0000, 0x20_0000, b"initrd")
        .tag(99, &[1, 2, 3])
        .mmap(24, &[(0, 0x9fc00, 1), (0x9fc00, 0x400, 2), (0x10_0000, 0x7ee_0000, 1), (0xfffc_0000, 0x4_0000, 2)])
        .module(0x30_0000, 0x30_1000, b"")
        .tag(TAG_ACPI_NEW, &rsdp)
        .finish()
}

#[test]
fn parses_sample() {
    let b = sample();
    let bi = BootInfo::parse(&b).unwrap();
    assert_eq!(BootInfo::total_size(&b[..8]), Some(b.len() as u32));
    assert_eq!(bi.command_line(), Some("console=ttyS0 loglevel=3"));
    assert_eq!(bi.bootloader_name(), Some("GRUB 2.12"));
    let mods: Vec<Module> = bi.modules().collect();
    assert_eq!(
        mods,
        vec![
            Module { start: 0x10_0000, end: 0x20_0000, cmdline: "initrd" },
            Module { start: 0x30_0000, end: 0x30_1000, cmdline: "" },
        ]
    );
    let mut map = MemoryMap::new();
    assert_eq!(bi.memory_map(&mut map), Ok(4));
    assert_eq!(map.regions()[0], Region { start: 0, end: 0x9fc00, kind: RegionKind::Usable });
    assert_eq!(map.regions()[1].kind, RegionKind::Reserved);
    assert_eq!(map.highest_address(), 0x1_0000_0000);
    let r = bi.rsdp().unwrap();
    assert_eq!(r.len(), 36);
    assert_eq!(&r[..8], b"RSD PTR ");
}

#[test]
fn trailing_bytes_beyond_total_size_are_ignored() {
    let mut b = sample();
    let n = b.len();
    b.extend_from_slice(&[0xff; 64]);
    let bi = BootInfo::parse(&b).unwrap();
    assert_eq!(bi.bytes.len(), n);
}

#[test]
fn header_checks() {
    assert!(BootInfo::parse(&[]).is_none());
    assert!(BootInfo::parse(&[8, 0, 0]).is_none());
    assert_eq!(BootInfo::total_size(&[1, 2, 3]), None);
    assert_eq!(BootInfo::total_size(&[7, 0, 0, 0]), None);
    assert_eq!(BootInfo::total_size(&[0x10, 0, 0, 0]), Some(16));
    // total_size larger than the buffer.
    let mut b = sample();
    b.truncate(b.len() - 1);
    assert!(BootInfo::parse(&b).is_none());
    // Minimal structure: header only, no tags at all.
    let bi = BootInfo::parse(&[8, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    assert_eq!(bi.command_line(), None);
    assert_eq!(bi.modules().count(), 0);
    assert_eq!(bi.rsdp(), None);
    assert_eq!(bi.memory_map(&mut MemoryMap::new()), Err(ParseError::NoMemoryMap));
}

#[test]
fn stops_at_end_tag() {
    let mut b = Builder::new().tag(TAG_END, &[]).tag(TAG_CMDLINE, b"hidden\0").0;
    let n = b.len() as u32;
    b[..4].copy_from_slice(&n.to_le_bytes());
    let bi = BootInfo::parse(&b).unwrap();
    assert_eq!(bi.command_line(), None);
}

#[test]
fn strings_without_nul_and_invalid_utf8() {
    let b =
        Builder::new().tag(TAG_CMDLINE, b"no-nul").tag(TAG_BOOTLOADER, b"bad\xff\0").module(1, 2, b"ok\xc3").finish();
    let bi = BootInfo::parse(&b).unwrap();
    assert_eq!(bi.command_line(), Some("no-nul"));
    assert_eq!(bi.bootloader_name(), None);
    assert_eq!(bi.modules().next().unwrap().cmdline, "ok");
}

#[test]
fn first_tag_of_a_type_wins() {
    let b = Builder::new().tag(TAG_CMDLINE, b"first\0").tag(TAG_CMDLINE, b"second\0").finish();
    assert_eq!(BootInfo::parse(&b).unwrap().command_line(), Some("first"));
}

#[test]
fn rsdp_prefers_new_and_rejects_short() {
    let old = [1u8; 20];
    let new = [2u8; 36];
    let b = Builder::new().tag(TAG_ACPI_OLD, &old).tag(TAG_ACPI_NEW, &new).finish();
    assert_eq!(BootInfo::parse(&b).unwrap().rsdp(), Some(&new[..]));
    let b = Builder::new().tag(TAG_ACPI_OLD, &old).finish();
    assert_eq!(BootInfo::parse(&b).unwrap().rsdp(), Some(&old[..]));
    let b = Builder::new().tag(TAG_ACPI_NEW, &[0; 8]).tag(TAG_ACPI_OLD, &old).finish();
    assert_eq!(BootInfo::parse(&b).unwrap().rsdp(), Some(&old[..]));
    let b = Builder::new().tag(TAG_ACPI_OLD, &[0; 19]).finish();
    assert_eq!(BootInfo::parse(&b).unwrap().rsdp(), None);
}

#[test]
fn memory_map_with_larger_entries_and_partial_tail() {
    let mut b = Builder::new().mmap(32, &[(0x1000, 0x1000, 1), (0x3000, 0x1000, 5), (0, 0, 1)]).finish();
    let mut map = MemoryMap::new();
    let bi = BootInfo::parse(&b).unwrap();
    // The zero-length entry is counted but not stored.
    assert_eq!(bi.memory_map(&mut map), Ok(3));
    assert_eq!(map.regions().len(), 2);
    assert_eq!(map.regions()[1].kind, RegionKind::Bad);
    // Shrink the tag by 8 bytes so its last entry is partial.
    let size = u32_at(&b, 12).unwrap() - 8;
    b[12..16].copy_from_slice(&size.to_le_bytes());
    let mut map = MemoryMap::new();
    assert_eq!(BootInfo::parse(&b).unwrap().memory_map(&mut map), Ok(2));
}

#[test]
fn memory_map_errors() {
    for es in [0, 8, 23] {
        let b = Builder::new().mmap(es, &[]).finish();
        let got = BootInfo::parse(&b).unwrap().memory_map(&mut MemoryMap::new());
        assert_eq!(got, Err(ParseError::Truncated), "entry_size {es}");
    }
    // Tag too short to hold its own header.
    let b = Builder::new().tag(TAG_MMAP, &[24, 0, 0, 0]).finish();
    let got = BootInfo::parse(&b).unwrap().memory_map(&mut MemoryMap::new());
    assert_eq!(got, Err(ParseError::Truncated));
    // A malformed tag before the memory map.
    let mut b = Builder::new().tag(50, &[0; 8]).mmap(24, &[(0, 4096, 1)]).finish();
    b[12..16].copy_from_slice(&4u32.to_le_bytes());
    let got = BootInfo::parse(&b).unwrap().memory_map(&mut MemoryMap::new());
    assert_eq!(got, Err(ParseError::Truncated));
    // A tag whose size runs past total_size.
    let mut b = Builder::new().mmap(24, &[(0, 4096, 1)]).finish();
    b[12..16].copy_from_slice(&0x1000u32.to_le_bytes());
    let got = BootInfo::parse(&b).unwrap().memory_map(&mut MemoryMap::new());
    assert_eq!(got, Err(ParseError::Truncated));
    // Destination full.
    let entries: Vec<(u64, u64, u32)> = (0..200).map(|i| (i * 0x2000, 0x1000, 1)).collect();
    let b = Builder::new().mmap(24, &entries).finish();
    let mut map = MemoryMap::new();
    let got = BootInfo::parse(&b).unwrap().memory_map(&mut map);
    assert_eq!(got, Err(ParseError::Full));
    assert_eq!(map.regions().len(), crate::memmap::MAX_REGIONS);
    // Base + length overflowing saturates instead of wrapping.
    let b = Builder::new().mmap(24, &[(u64::MAX - 5, 100, 1)]).finish();
    let mut map = MemoryMap::new();
    assert_eq!(BootInfo::parse(&b).unwrap().memory_map(&mut map), Ok(1));
    assert_eq!(map.regions()[0].end, u64::MAX);
}

#[test]
fn modules_stop_at_malformed_tag() {
    let mut b = Builder::new().module(1, 2, b"a").tag(7, &[0; 16]).module(3, 4, b"b").finish();
    let off = 8 + 24; // second tag
    b[off + 4..off + 8].copy_from_slice(&3u32.to_le_bytes());
    let bi = BootInfo::parse(&b).unwrap();
    assert_eq!(bi.modules().count(), 1);
    // Module tag too short for its fields is skipped.
    let b = Builder::new().tag(TAG_MODULE, &[1, 2, 3]).module(5, 6, b"x").finish();
    let mods: Vec<Module> = BootInfo::parse(&b).unwrap().modules().collect();
    assert_eq!(mods, vec![Module { start: 5, end: 6, cmdline: "x" }]);
}

fn exercise(b: &[u8]) {
    if let Some(bi) = BootInfo::parse(b) {
        let _ = bi.command_line();
        let _ = bi.bootloader_name();
        let _ = bi.rsdp();
        let _ = bi.modules().count();
        let mut map = MemoryMap::new();
        let _ = bi.memory_map(&mut map);
    }
    let _ = BootInfo::total_size(b);
}

#[test]
fn truncated_and_garbage_never_panic() {
    let good = sample();
    // Every truncation, with total_size either kept or patched to fit.
    for n in 0..=good.len() {
        let mut b = good[..n].to_vec();
        exercise(&b);
        if n >= 4 {
            b[..4].copy_from_slice(&(n as u32).to_le_bytes());
            exercise(&b);
        }
    }
    let mut rng = Rng::new(0xb007);
    for _ in 0..20_000 {
        // Random bit flips of a valid blob hit the interesting fields.
        let mut b = good.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        exercise(&b);
        // Pure garbage with a plausible total_size.
        let mut g = vec![0u8; rng.below(128) as usize];
        rng.fill(&mut g);
        if g.len() >= 4 && rng.below(2) == 0 {
            let n = g.len() as u32;
            g[..4].copy_from_slice(&n.to_le_bytes());
        }
        exercise(&g);
    }
}
