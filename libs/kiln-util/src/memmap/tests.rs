//! Host unit tests for [`super`], kept in their own file so the
//! implementation stays readable.

use super::*;
use crate::testrng::Rng;
use RegionKind::*;

fn reg(start: u64, end: u64, kind: RegionKind) -> Region {
    Region { start, end, kind }
}

fn map_of(rs: &[Region]) -> MemoryMap {
    let mut m = MemoryMap::new();
    for &r in rs {
        m.push(r).unwrap();
    }
    m
}

fn assert_canonical(m: &MemoryMap) {
    for w in m.regions().windows(2) {
        assert!(w[0].end <= w[1].start, "overlap/unsorted: {w:?}");
        assert!(!(w[0].end == w[1].start && w[0].kind == w[1].kind), "unmerged: {w:?}");
    }
    for r in m.regions() {
        assert!(r.start < r.end);
    }
}

#[test]
fn e820_types_and_names() {
    assert_eq!(RegionKind::from_e820(1), Usable);
    assert_eq!(RegionKind::from_e820(2), Reserved);
    assert_eq!(RegionKind::from_e820(3), AcpiReclaimable);
    assert_eq!(RegionKind::from_e820(4), AcpiNvs);
    assert_eq!(RegionKind::from_e820(5), Bad);
    for t in [0, 6, 7, 12, u32::MAX] {
        assert_eq!(RegionKind::from_e820(t), Reserved);
    }
    assert_eq!(Usable.name(), "usable");
    assert_eq!(Reserved.name(), "reserved");
    assert_eq!(AcpiReclaimable.name(), "ACPI reclaimable");
    assert_eq!(AcpiNvs.name(), "ACPI NVS");
    assert_eq!(Bad.name(), "bad");
}

#[test]
fn push_ignores_empty_and_reports_full() {
    let mut m = MemoryMap::default();
    m.push(reg(10, 10, Usable)).unwrap();
    m.push(reg(20, 10, Usable)).unwrap();
    assert!(m.regions().is_empty());
    for i in 0..MAX_REGIONS as u64 {
        m.push(reg(i * 10, i * 10 + 5, Usable)).unwrap();
    }
    assert_eq!(m.push(reg(0, 1, Usable)), Err(Full));
    // Empty regions are fine even when full.
    assert_eq!(m.push(reg(5, 5, Usable)), Ok(()));
    assert_eq!(m.regions().len(), MAX_REGIONS);
}

#[test]
fn empty_map() {
    let mut m = MemoryMap::new();
    m.normalize();
    assert_eq!(m.regions(), &[]);
    assert_eq!(m.highest_address(), 0);
    assert_eq!(m.total_usable(), 0);
    assert_eq!(m.usable_pages().count(), 0);
}

#[test]
fn normalize_sorts_and_merges() {
    let mut m = map_of(&[
        reg(0x2000, 0x3000, Usable),
        reg(0x0, 0x1000, Usable),
        reg(0x1000, 0x2000, Usable),
        reg(0x5000, 0x6000, Reserved),
        reg(0x4000, 0x5000, Reserved),
        reg(0x3000, 0x4000, AcpiNvs),
    ]);
    m.normalize();
    assert_eq!(m.regions(), &[reg(0x0, 0x3000, Usable), reg(0x3000, 0x4000, AcpiNvs), reg(0x4000, 0x6000, Reserved),]);
}

#[test]
fn normalize_keeps_gaps() {
    let mut m = map_of(&[reg(0, 10, Usable), reg(20, 30, Usable)]);
    m.normalize();
    assert_eq!(m.regions(), &[reg(0, 10, Usable), reg(20, 30, Usable)]);
}

#[test]
fn reserved_wins_over_usable() {
    let mut m = map_of(&[reg(0, 100, Usable), reg(40, 60, Reserved)]);
    m.normalize();
    assert_eq!(m.regions(), &[reg(0, 40, Usable), reg(40, 60, Reserved), reg(60, 100, Usable)]);
    // Same result regardless of input order.
    let mut m2 = map_of(&[reg(40, 60, Reserved), reg(0, 100, Usable)]);
    m2.normalize();
    assert_eq!(m.regions(), m2.regions());
}

#[test]
fn partial_overlaps_and_duplicates() {
    let mut m = map_of(&[
        reg(0, 50, Usable),
        reg(30, 80, AcpiReclaimable),
        reg(0, 50, Usable),
        reg(70, 120, Usable),
        reg(100, 110, Bad),
        reg(105, 130, Reserved),
    ]);
    m.normalize();
    assert_eq!(
        m.regions(),
        &[
            reg(0, 30, Usable),
            reg(30, 80, AcpiReclaimable),
            reg(80, 100, Usable),
            reg(100, 110, Bad),
            reg(110, 130, Reserved),
        ]
    );
}

#[test]
fn normalize_is_idempotent_and_handles_extremes() {
    let mut m = map_of(&[reg(u64::MAX - 10, u64::MAX, Usable), reg(0, 1, Bad)]);
    m.normalize();
    let before: Vec<Region> = m.regions().to_vec();
    m.normalize();
    assert_eq!(m.regions(), &before[..]);
    assert_eq!(m.highest_address(), u64::MAX);
    // The top region cannot be aligned up without overflow; it is skipped.
    assert_eq!(m.usable_pages().count(), 0);
}

#[test]
fn reserve_splits_usable() {
    let mut m = map_of(&[reg(0, 0x10_0000, Usable)]);
    m.normalize();
    m.reserve(0x1000, 0x3000).unwrap();
    assert_eq!(m.regions(), &[reg(0, 0x1000, Usable), reg(0x1000, 0x3000, Reserved), reg(0x3000, 0x10_0000, Usable),]);
    // Reserving adjacent range merges with the existing reservation.
    m.reserve(0x3000, 0x4000).unwrap();
    assert_eq!(m.regions()[1], reg(0x1000, 0x4000, Reserved));
    // Empty reservation is a no-op.
    m.reserve(0x8000, 0x8000).unwrap();
    m.reserve(0x9000, 0x8000).unwrap();
    assert_eq!(m.regions().len(), 3);
    // Reserving over a hole adds a reserved region.
    m.reserve(0x20_0000, 0x30_0000).unwrap();
    assert_eq!(m.regions()[3], reg(0x20_0000, 0x30_0000, Reserved));
    assert_eq!(m.highest_address(), 0x30_0000);
}

#[test]
fn reserve_does_not_downgrade_stronger_kinds() {
    let mut m = map_of(&[reg(0, 100, Bad), reg(100, 200, Usable)]);
    m.reserve(50, 150).unwrap();
    assert_eq!(m.regions(), &[reg(0, 100, Bad), reg(100, 150, Reserved), reg(150, 200, Usable)]);
}

#[test]
fn reserve_full_map_fails_cleanly() {
    let mut m = MemoryMap::new();
    for i in 0..MAX_REGIONS as u64 {
        let kind = if i % 2 == 0 { Usable } else { Reserved };
        m.push(reg(i * 0x1000, (i + 1) * 0x1000, kind)).unwrap();
    }
    m.normalize();
    assert_eq!(m.regions().len(), MAX_REGIONS);
    let before: Vec<Region> = m.regions().to_vec();
    // Splitting a usable region needs two more slots.
    assert_eq!(m.reserve(0x100, 0x200), Err(Full));
    assert_eq!(m.regions(), &before[..]);
    // Covering an entire usable region needs none: it merges.
    m.reserve(0, 0x1000).unwrap();
    assert_eq!(m.regions()[0], reg(0, 0x2000, Reserved));
}

#[test]
fn normalize_overflow_drops_smallest_pieces() {
    // One big usable region punctured by 100 reservations would need
    // 201 pieces; the smallest must be dropped, the map stays canonical
    // and no reservation is turned into usable memory.
    let mut m = MemoryMap::new();
    m.push(reg(0, 1_000_000, Usable)).unwrap();
    for i in 0..100u64 {
        m.push(reg(i * 5000 + 100, i * 5000 + 101 + i, Reserved)).unwrap();
    }
    m.normalize();
    assert_eq!(m.regions().len(), MAX_REGIONS);
    assert_canonical(&m);
    for r in m.regions().iter().filter(|r| r.kind == Usable) {
        for i in 0..100u64 {
            let (s, e) = (i * 5000 + 100, i * 5000 + 101 + i);
            assert!(r.end <= s || r.start >= e, "{r:?} overlaps reservation");
        }
    }
    // The large tail is kept.
    assert_eq!(m.highest_address(), 1_000_000);
}

#[test]
fn usable_pages_aligns_inward() {
    let mut m = map_of(&[
        reg(0x500, 0x3800, Usable),
        reg(0x3800, 0x4000, Reserved),
        reg(0x5001, 0x5fff, Usable),
        reg(0x6000, 0x9000, Usable),
        reg(0x10000, 0x20000, AcpiReclaimable),
    ]);
    m.normalize();
    let pages: Vec<Region> = m.usable_pages().collect();
    assert_eq!(pages, vec![reg(0x1000, 0x3000, Usable), reg(0x6000, 0x9000, Usable)]);
    assert_eq!(m.total_usable(), 0x2000 + 0x3000);
    assert_eq!(m.highest_address(), 0x20000);
}

/// Compares `normalize` against a brute-force per-address model on a
/// small address space, over many random inputs.
#[test]
fn randomized_against_model() {
    const KINDS: [RegionKind; 5] = [Usable, Reserved, AcpiReclaimable, AcpiNvs, Bad];
    const SPACE: u64 = 64;
    let mut rng = Rng::new(0x5eed);
    for _ in 0..2000 {
        let n = rng.below(12) as usize;
        let mut m = MemoryMap::new();
        let mut model: [Option<RegionKind>; SPACE as usize] = [None; SPACE as usize];
        for _ in 0..n {
            let a = rng.below(SPACE);
            let b = rng.below(SPACE + 1);
            let k = KINDS[rng.below(5) as usize];
            m.push(reg(a, b, k)).unwrap();
            for x in a..b.max(a) {
                let cur = &mut model[x as usize];
                if cur.is_none_or(|c| k.precedence() > c.precedence()) {
                    *cur = Some(k);
                }
            }
        }
        if rng.below(2) == 0 {
            let a = rng.below(SPACE);
            let b = rng.below(SPACE + 1);
            m.reserve(a, b).unwrap();
            for x in a..b.max(a) {
                let cur = &mut model[x as usize];
                if cur.is_none_or(|c| Reserved.precedence() > c.precedence()) {
                    *cur = Some(Reserved);
                }
            }
        } else {
            m.normalize();
        }
        assert_canonical(&m);
        for x in 0..SPACE {
            let got = m.regions().iter().find(|r| r.start <= x && x < r.end).map(|r| r.kind);
            assert_eq!(got, model[x as usize], "address {x}: {:?}", m.regions());
        }
    }
}
