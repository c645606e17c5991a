//! The byte-range locks of one file: POSIX record locks and
//! open-file-description locks, as fcntl's `F_SETLK` family sees them.
//!
//! Each lock has an owner (a process's descriptor table for POSIX locks,
//! an open file description for OFD locks: the caller decides what an
//! owner is), a kind (read or write) and an inclusive byte range. A
//! request replaces whatever its owner held in its range: locks are split
//! around an unlock or a lock of the other kind, and an owner's locks of
//! one kind that touch or overlap are merged, so an owner's locks are
//! always disjoint and never adjacent with the same kind (Linux's
//! invariant). Locks of different owners conflict when they overlap and
//! either is a write lock.
//!
//! The list keeps each owner's locks together, sorted by start, and
//! owners in the order they took their first lock, which is the order in
//! which Linux's `F_GETLK` finds the first conflicting lock.

use alloc::vec::Vec;

/// The end of a lock that runs to the end of the file (`l_len == 0`):
/// Linux's `OFFSET_MAX`.
pub const OFFSET_MAX: u64 = i64::MAX as u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Read,
    Write,
}

/// One held lock: bytes `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeLock<O> {
    pub owner: O,
    /// The process that took it (reported by `F_GETLK` and /proc/locks).
    pub pid: i32,
    pub kind: LockKind,
    pub start: u64,
    pub end: u64,
}

impl<O> RangeLock<O> {
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }
}

/// The heap is full: the request was not applied (Linux's ENOLCK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

#[derive(Debug)]
pub struct LockTable<O> {
    locks: Vec<RangeLock<O>>,
}

impl<O> Default for LockTable<O> {
    fn default() -> Self {
        LockTable { locks: Vec::new() }
    }
}

impl<O: Copy + Eq> LockTable<O> {
    pub const fn new() -> Self {
        LockTable { locks: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &RangeLock<O>> {
        self.locks.iter()
    }

    /// The first lock of another owner that a `kind` lock of `owner` on
    /// `start..=end` would conflict with.
    pub fn conflict(&self, owner: O, kind: LockKind, start: u64, end: u64) -> Option<&RangeLock<O>> {
        self.locks.iter().find(|l| {
            l.owner != owner && l.overlaps(start, end) && (kind == LockKind::Write || l.kind == LockKind::Write)
        })
    }

    /// Gives `owner` a `kind` lock on `start..=end`, or unlocks that range
    /// for it (`kind` None), replacing what it held there. The caller has
    /// checked for conflicts.
    pub fn set(&mut self, owner: O, pid: i32, kind: Option<LockKind>, start: u64, end: u64) -> Result<(), NoMemory> {
        debug_assert!(start <= end);
        let first = self.locks.iter().position(|l| l.owner == owner);
        let Some(first) = first else {
            // Nothing held: an unlock changes nothing, a lock is the
            // owner's first and goes last.
            if let Some(kind) = kind {
                self.locks.try_reserve(1).map_err(|_| NoMemory)?;
                self.locks.push(RangeLock { owner, pid, kind, start, end });
            }
            return Ok(());
        };
        // The owner's pieces outside the range, then the new lock. Each
        // piece says whether it was held before (its pid wins a merge, as
        // Linux keeps the existing lock and extends it).
        let mut pieces: Vec<(RangeLock<O>, bool)> = Vec::new();
        let held = self.locks.iter().filter(|l| l.owner == owner).count();
        pieces.try_reserve(held + 2).map_err(|_| NoMemory)?;
        // A lock of the same kind the request overlaps is extended over
        // it, keeping its pid.
        let mut new_pid = pid;
        for l in self.locks.iter().filter(|l| l.owner == owner) {
            if kind == Some(l.kind) && l.overlaps(start, end) && new_pid == pid {
                new_pid = l.pid;
            }
            if !l.overlaps(start, end) {
                pieces.push((*l, true));
                continue;
            }
            if l.start < start {
                pieces.push((RangeLock { end: start - 1, ..*l }, true));
            }
            if l.end > end {
                pieces.push((RangeLock { start: end + 1, ..*l }, true));
            }
        }
        let extends = new_pid != pid;
        if let Some(kind) = kind {
            pieces.push((RangeLock { owner, pid: new_pid, kind, start, end }, extends));
        }
        pieces.sort_by_key(|(l, _)| l.start);
        let mut merged: Vec<RangeLock<O>> = Vec::new();
        merged.try_reserve(pieces.len()).map_err(|_| NoMemory)?;
        let mut last_old: Option<bool> = None;
        for (l, old) in pieces {
            match merged.last_mut() {
                Some(prev) if prev.kind == l.kind && prev.end.saturating_add(1) >= l.start => {
                    prev.end = prev.end.max(l.end);
                    if old && last_old == Some(false) {
                        prev.pid = l.pid;
                        last_old = Some(true);
                    }
                }
                _ => {
                    merged.push(l);
                    last_old = Some(old);
                }
            }
        }
        let mut rest: Vec<RangeLock<O>> = Vec::new();
        rest.try_reserve(self.locks.len() - held + merged.len()).map_err(|_| NoMemory)?;
        for (i, l) in self.locks.iter().enumerate() {
            if i == first {
                rest.extend(merged.iter().copied());
            }
            if l.owner != owner {
                rest.push(*l);
            }
        }
        self.locks = rest;
        Ok(())
    }

    /// Drops every lock of `owner`; returns whether it held any.
    pub fn remove_owner(&mut self, owner: O) -> bool {
        let before = self.locks.len();
        self.locks.retain(|l| l.owner != owner);
        self.locks.len() != before
    }

    /// Drops every lock `f` picks; returns whether any went.
    pub fn remove_where(&mut self, mut f: impl FnMut(&RangeLock<O>) -> bool) -> bool {
        let before = self.locks.len();
        self.locks.retain(|l| !f(l));
        self.locks.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::LockKind::{Read, Write};
    use super::*;

    fn ranges(t: &LockTable<u32>, owner: u32) -> Vec<(LockKind, u64, u64)> {
        t.iter().filter(|l| l.owner == owner).map(|l| (l.kind, l.start, l.end)).collect()
    }

    #[test]
    fn split_by_unlock_and_other_kind() {
        let mut t = LockTable::new();
        t.set(1, 10, Some(Write), 0, 99).unwrap();
        t.set(1, 10, None, 40, 59).unwrap();
        assert_eq!(ranges(&t, 1), [(Write, 0, 39), (Write, 60, 99)]);
        t.set(1, 10, Some(Read), 30, 69).unwrap();
        assert_eq!(ranges(&t, 1), [(Write, 0, 29), (Read, 30, 69), (Write, 70, 99)]);
        t.set(1, 10, Some(Write), 10, 80).unwrap();
        assert_eq!(ranges(&t, 1), [(Write, 0, 99)]);
        t.set(1, 10, None, 0, OFFSET_MAX).unwrap();
        assert!(t.is_empty());
    }

    #[test]
    fn adjacent_same_kind_merge_other_kind_do_not() {
        let mut t = LockTable::new();
        t.set(1, 10, Some(Read), 0, 9).unwrap();
        t.set(1, 10, Some(Read), 10, 19).unwrap();
        assert_eq!(ranges(&t, 1), [(Read, 0, 19)]);
        t.set(1, 10, Some(Write), 20, 29).unwrap();
        assert_eq!(ranges(&t, 1), [(Read, 0, 19), (Write, 20, 29)]);
        t.set(1, 10, Some(Read), 40, OFFSET_MAX).unwrap();
        t.set(1, 10, Some(Read), 30, 39).unwrap();
        assert_eq!(ranges(&t, 1), [(Read, 0, 19), (Write, 20, 29), (Read, 30, OFFSET_MAX)]);
    }

    #[test]
    fn conflicts_need_another_owner_overlap_and_a_writer() {
        let mut t = LockTable::new();
        t.set(1, 10, Some(Read), 0, 9).unwrap();
        t.set(2, 20, Some(Write), 20, 29).unwrap();
        assert!(t.conflict(3, Read, 0, 9).is_none());
        assert_eq!(t.conflict(3, Write, 5, 5).map(|l| l.pid), Some(10));
        assert!(t.conflict(1, Write, 0, 9).is_none());
        assert_eq!(t.conflict(1, Read, 0, 25).map(|l| l.pid), Some(20));
        assert!(t.conflict(3, Write, 10, 19).is_none());
    }

    #[test]
    fn owners_keep_their_first_lock_order() {
        let mut t = LockTable::new();
        t.set(1, 10, Some(Write), 100, 199).unwrap();
        t.set(2, 20, Some(Write), 0, 9).unwrap();
        t.set(1, 10, Some(Write), 50, 59).unwrap();
        let order: Vec<u32> = t.iter().map(|l| l.owner).collect();
        assert_eq!(order, [1, 1, 2]);
        // The first conflict in list order is owner 1's, though owner 2's
        // lock starts lower.
        assert_eq!(t.conflict(3, Write, 0, OFFSET_MAX).map(|l| l.owner), Some(1));
        assert!(t.remove_owner(1));
        assert!(!t.remove_owner(1));
        assert_eq!(t.iter().count(), 1);
    }

    #[test]
    fn merge_keeps_the_existing_locks_pid() {
        let mut t = LockTable::new();
        t.set(1, 10, Some(Write), 10, 19).unwrap();
        t.set(1, 11, Some(Write), 0, 29).unwrap();
        assert_eq!(t.iter().map(|l| (l.pid, l.start, l.end)).collect::<Vec<_>>(), [(10, 0, 29)]);
        t.set(1, 12, Some(Write), 100, 109).unwrap();
        assert_eq!(t.iter().map(|l| l.pid).collect::<Vec<_>>(), [10, 12]);
    }

    #[test]
    fn random_requests_match_a_byte_map() {
        // A reference model: each byte of a small file holds the owner's
        // lock kind; the table must describe exactly the same bytes, with
        // disjoint, non-adjacent same-kind locks.
        let mut rng = 0x1234_5678_9abc_def1u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut t: LockTable<u32> = LockTable::new();
        let mut model = [[None::<LockKind>; 64]; 2];
        for _ in 0..5000 {
            let owner = (next() % 2) as u32;
            let a = next() % 64;
            let b = next() % 64;
            let (start, end) = (a.min(b), a.max(b));
            let kind = match next() % 3 {
                0 => None,
                1 => Some(Read),
                _ => Some(Write),
            };
            t.set(owner, 1, kind, start, end).unwrap();
            for byte in start..=end {
                model[owner as usize][byte as usize] = kind;
            }
            for o in 0..2u32 {
                let mine: Vec<_> = t.iter().filter(|l| l.owner == o).collect();
                for w in mine.windows(2) {
                    assert!(w[0].end < w[1].start, "sorted and disjoint");
                    assert!(w[0].kind != w[1].kind || w[0].end + 1 < w[1].start, "merged");
                }
                for byte in 0..64u64 {
                    let got = mine.iter().find(|l| l.start <= byte && byte <= l.end).map(|l| l.kind);
                    assert_eq!(got, model[o as usize][byte as usize]);
                }
            }
        }
    }
}
