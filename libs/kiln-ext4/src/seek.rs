//! The block map of a file as SEEK_DATA and SEEK_HOLE see it: which
//! ranges are written, which allocated but unwritten (fallocate), and
//! which have no block at all. The disk says only that much; whether an
//! unwritten or unmapped range holds data also depends on the caller's
//! page cache (dirty pages waiting for delayed allocation, cached pages of
//! an unwritten extent), so the kernel finishes the answer.

use crate::extent::Extent;
use crate::inode::FL_INLINE_DATA;
use crate::{BlockDevice, Ext4, Result};
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// What the disk holds for a range of a file's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// Blocks with data on the disk.
    Written,
    /// Blocks allocated by fallocate and never written: they read as
    /// zeros, and Linux reports them as a hole unless the page cache
    /// holds their pages.
    Unwritten,
    /// No block.
    Hole,
}

/// Blocks `[start, end)` of one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub kind: SpanKind,
}

impl<D: BlockDevice> Ext4<D> {
    /// Blocks `[first, end)` of regular file `ino`, cut into spans that
    /// cover the range without gaps, in order. A file with inline data is
    /// one written span.
    pub fn block_spans(&mut self, ino: u32, first: u64, end: u64) -> Result<Vec<Span>> {
        let inode = self.live_inode(ino)?;
        if !inode.is_reg() {
            return Err(Errno::EINVAL);
        }
        if inode.flags() & FL_INLINE_DATA != 0 {
            let mut one = Vec::new();
            one.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            if first < end {
                one.push(Span { start: first, end, kind: SpanKind::Written });
            }
            return Ok(one);
        }
        let map = self.file_map(&inode)?;
        spans_of(&map.extents, first, end)
    }
}

/// `extents` (in any order, not overlapping) cut to `[first, end)`, with
/// the gaps between them as holes.
pub(crate) fn spans_of(extents: &[Extent], first: u64, end: u64) -> Result<Vec<Span>> {
    let mut sorted: Vec<&Extent> = extents.iter().filter(|e| e.end() > first && (e.logical as u64) < end).collect();
    sorted.sort_by_key(|e| e.logical);
    let mut spans: Vec<Span> = Vec::new();
    let push = |spans: &mut Vec<Span>, start: u64, stop: u64, kind: SpanKind| -> Result<()> {
        if start >= stop {
            return Ok(());
        }
        // Neighbours of one kind (two written extents back to back) are
        // one span, as the caller only asks where the kind changes.
        if let Some(last) = spans.last_mut() {
            if last.kind == kind && last.end == start {
                last.end = stop;
                return Ok(());
            }
        }
        spans.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        spans.push(Span { start, end: stop, kind });
        Ok(())
    };
    let mut cursor = first;
    for e in sorted {
        let lo = (e.logical as u64).max(first);
        let hi = e.end().min(end);
        if lo > cursor {
            push(&mut spans, cursor, lo, SpanKind::Hole)?;
        }
        let kind = if e.uninit { SpanKind::Unwritten } else { SpanKind::Written };
        push(&mut spans, lo.max(cursor), hi, kind)?;
        cursor = cursor.max(hi);
    }
    push(&mut spans, cursor, end, SpanKind::Hole)?;
    Ok(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(logical: u32, len: u32, uninit: bool) -> Extent {
        Extent { logical, len, phys: 1000 + logical as u64, uninit }
    }

    fn kinds(spans: &[Span]) -> Vec<(u64, u64, SpanKind)> {
        spans.iter().map(|s| (s.start, s.end, s.kind)).collect()
    }

    #[test]
    fn gaps_become_holes_and_neighbours_merge() {
        let extents = [ext(10, 5, false), ext(2, 3, false), ext(5, 2, false), ext(20, 4, true)];
        let spans = spans_of(&extents, 0, 30).unwrap();
        assert_eq!(
            kinds(&spans),
            [
                (0, 2, SpanKind::Hole),
                (2, 7, SpanKind::Written),
                (7, 10, SpanKind::Hole),
                (10, 15, SpanKind::Written),
                (15, 20, SpanKind::Hole),
                (20, 24, SpanKind::Unwritten),
                (24, 30, SpanKind::Hole),
            ]
        );
    }

    #[test]
    fn the_range_cuts_extents() {
        let extents = [ext(0, 8, false), ext(8, 8, true)];
        let spans = spans_of(&extents, 4, 12).unwrap();
        assert_eq!(kinds(&spans), [(4, 8, SpanKind::Written), (8, 12, SpanKind::Unwritten)]);
        assert!(spans_of(&extents, 5, 5).unwrap().is_empty());
        assert_eq!(kinds(&spans_of(&[], 3, 9).unwrap()), [(3, 9, SpanKind::Hole)]);
    }
}
