//! The physical memory map: a fixed-capacity list of typed address ranges.
//!
//! Boot protocols (Multiboot2, PVH) hand the kernel an E820-style list that
//! may be unsorted, overlapping and fragmented. This module owns turning that
//! into a canonical form — sorted, disjoint, with adjacent same-kind ranges
//! merged — and carving out ranges the kernel must never hand out (its own
//! image, boot modules). It allocates nothing: the list lives inline.

/// What a range of physical memory may be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    Usable,
    Reserved,
    AcpiReclaimable,
    AcpiNvs,
    Bad,
}

impl RegionKind {
    /// Maps an E820 / Multiboot2 / PVH memory type number. Unknown types are
    /// treated as reserved because using memory we do not understand is the
    /// one mistake that cannot be undone.
    pub fn from_e820(t: u32) -> RegionKind {
        match t {
            1 => RegionKind::Usable,
            2 => RegionKind::Reserved,
            3 => RegionKind::AcpiReclaimable,
            4 => RegionKind::AcpiNvs,
            5 => RegionKind::Bad,
            _ => RegionKind::Reserved,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            RegionKind::Usable => "usable",
            RegionKind::Reserved => "reserved",
            RegionKind::AcpiReclaimable => "ACPI reclaimable",
            RegionKind::AcpiNvs => "ACPI NVS",
            RegionKind::Bad => "bad",
        }
    }

    /// Which kind wins where two regions overlap. Anything beats `Usable`
    /// (handing out memory firmware still owns corrupts it); among the rest,
    /// the kind that forbids more wins, so `Bad` is never downgraded.
    fn precedence(self) -> u8 {
        match self {
            RegionKind::Usable => 0,
            RegionKind::AcpiReclaimable => 1,
            RegionKind::Reserved => 2,
            RegionKind::AcpiNvs => 3,
            RegionKind::Bad => 4,
        }
    }
}

/// A half-open physical range `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub kind: RegionKind,
}

impl Region {
    const EMPTY: Region = Region { start: 0, end: 0, kind: RegionKind::Reserved };

    fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

pub const MAX_REGIONS: usize = 128;

const PAGE: u64 = 4096;

/// Returned when a region does not fit in the fixed-capacity list.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Full;

/// A fixed-capacity list of regions (no heap).
#[derive(Clone, Debug)]
pub struct MemoryMap {
    regions: [Region; MAX_REGIONS],
    len: usize,
}

impl Default for MemoryMap {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryMap {
    pub const fn new() -> Self {
        MemoryMap { regions: [Region::EMPTY; MAX_REGIONS], len: 0 }
    }

    /// Appends a region as-is (call [`normalize`](Self::normalize) once all
    /// are in). Empty or inverted ranges carry no information, so they are
    /// dropped rather than reported: firmware does emit zero-length entries.
    pub fn push(&mut self, r: Region) -> Result<(), Full> {
        if r.start >= r.end {
            return Ok(());
        }
        let slot = self.regions.get_mut(self.len).ok_or(Full)?;
        *slot = r;
        self.len += 1;
        Ok(())
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions[..self.len]
    }

    /// Sort by start, resolve overlaps (non-Usable wins over Usable where they
    /// overlap), merge adjacent equal-kind regions.
    ///
    /// Resolving overlaps can split regions, so the result may in principle
    /// need more than [`MAX_REGIONS`] entries. In that case the smallest
    /// resulting pieces are dropped: a missing range is never handed out, so
    /// losing one costs at most a little memory, never correctness.
    pub fn normalize(&mut self) {
        let src = self.regions;
        let n = self.len;
        self.rebuild_from(&src[..n]);
    }

    /// Turn [start,end) into Reserved (splitting Usable regions as needed);
    /// keep the map normalized.
    ///
    /// Reserving over another non-usable kind keeps the stronger kind (e.g. a
    /// `Bad` range stays `Bad`). On `Err(Full)` the map is left normalized
    /// but without the reservation, so the caller knows it did not happen.
    pub fn reserve(&mut self, start: u64, end: u64) -> Result<(), Full> {
        let old_len = self.len;
        let mut src = [Region::EMPTY; MAX_REGIONS + 1];
        src[..old_len].copy_from_slice(self.regions());
        let mut n = old_len;
        if start < end {
            src[n] = Region { start, end, kind: RegionKind::Reserved };
            n += 1;
        }
        if self.rebuild_from(&src[..n]) {
            return Ok(());
        }
        // Dropping pieces is acceptable for `normalize` but here it would
        // silently lose part of the reservation; fall back to the old map.
        self.rebuild_from(&src[..old_len]);
        Err(Full)
    }

    /// Iterator over Usable regions shrunk inward to 4096-byte alignment
    /// (skipping those that become empty). Assumes a normalized map;
    /// overlapping usable entries would otherwise be reported twice.
    pub fn usable_pages(&self) -> impl Iterator<Item = Region> + '_ {
        self.regions().iter().filter_map(|r| {
            if r.kind != RegionKind::Usable {
                return None;
            }
            let start = r.start.checked_add(PAGE - 1)? & !(PAGE - 1);
            let end = r.end & !(PAGE - 1);
            (start < end).then_some(Region { start, end, kind: RegionKind::Usable })
        })
    }

    /// Bytes in [`usable_pages`](Self::usable_pages).
    pub fn total_usable(&self) -> u64 {
        self.usable_pages().fold(0u64, |acc, r| acc.saturating_add(r.len()))
    }

    /// Max end over all regions, 0 if empty.
    pub fn highest_address(&self) -> u64 {
        self.regions().iter().map(|r| r.end).max().unwrap_or(0)
    }

    /// Replaces the contents with the canonical form of `src`. Returns
    /// `false` if pieces had to be dropped for lack of capacity.
    ///
    /// Works as a sweep over the region boundaries: between two consecutive
    /// boundaries the set of covering regions is constant, so each such
    /// elementary interval gets the strongest covering kind. That needs no
    /// sorting and no scratch beyond `src`; O(n²) is nothing for n ≤ 129.
    fn rebuild_from(&mut self, src: &[Region]) -> bool {
        self.len = 0;
        let mut complete = true;
        let Some(mut p) = src.iter().filter(|r| r.start < r.end).map(|r| r.start).min() else {
            return true;
        };
        loop {
            let mut kind: Option<RegionKind> = None;
            let mut next: Option<u64> = None;
            for r in src.iter().filter(|r| r.start < r.end) {
                let covers = r.start <= p && p < r.end;
                if covers && kind.is_none_or(|k| r.kind.precedence() > k.precedence()) {
                    kind = Some(r.kind);
                }
                for b in [r.start, r.end] {
                    if b > p && next.is_none_or(|n| b < n) {
                        next = Some(b);
                    }
                }
            }
            let Some(next) = next else { break };
            if let Some(kind) = kind {
                complete &= self.emit(Region { start: p, end: next, kind });
            }
            p = next;
        }
        complete
    }

    /// Appends a piece produced in address order, merging it into the
    /// previous one when they touch and agree. Returns `false` if something
    /// had to be dropped.
    fn emit(&mut self, r: Region) -> bool {
        if let Some(last) = self.regions[..self.len].last_mut() {
            if last.end == r.start && last.kind == r.kind {
                last.end = r.end;
                return true;
            }
        }
        if self.len < MAX_REGIONS {
            self.regions[self.len] = r;
            self.len += 1;
            return true;
        }
        // Full: evict the smallest piece, which may be the new one. Removing
        // from the middle keeps address order; the gap left behind simply
        // reads as "not usable".
        let (victim, victim_len) =
            self.regions().iter().enumerate().map(|(i, x)| (i, x.len())).min_by_key(|&(_, l)| l).unwrap_or((0, 0));
        if r.len() > victim_len {
            self.regions.copy_within(victim + 1..self.len, victim);
            self.regions[self.len - 1] = r;
        }
        false
    }
}

#[cfg(test)]
mod tests;
