//! fallocate's modes that change what a file holds rather than reserve
//! space: punching a hole, zeroing a range, and collapsing or inserting a
//! range of blocks (everything after it moves down or up). Each is an edit
//! of the file's extent list, written back whole (see `extent`), with the
//! blocks that leave the file freed in the running transaction. Linux's
//! rules (`ext4_punch_hole`, `ext4_zero_range`, `ext4_collapse_range`,
//! `ext4_insert_range`) decide the errnos and the edges.

use crate::extent::{normalize, Extent, ExtentMap, MAX_UNINIT_LEN};
use crate::file::carve;
use crate::inode::{Inode, TimeField, Timestamp};
use crate::{BlockDevice, Ext4, Result};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// Linux's page size: a punched hole that passes the end of the file stops
/// at the end of the page holding it (`ext4_punch_hole`).
const LINUX_PAGE: u64 = 4096;

impl<D: BlockDevice> Ext4<D> {
    /// The extent list of a regular file with an extent tree: the modes
    /// here need one (a block-mapped file answers EOPNOTSUPP, as Linux's).
    fn extent_file(&mut self, ino: u32) -> Result<(Inode, ExtentMap)> {
        let inode = self.writable_file(ino)?;
        if !inode.has_extents() {
            return Err(Errno::EOPNOTSUPP);
        }
        let map = self.read_extent_map(&inode)?;
        Ok((inode, map))
    }

    /// Zeroes bytes [from, to) of one block, when the block holds written
    /// data (a hole or an unwritten extent reads as zeros already).
    fn zero_in_block(&mut self, extents: &[Extent], from: u64, to: u64) -> Result<()> {
        if from >= to {
            return Ok(());
        }
        let bs = self.bs as u64;
        let lblk = from / bs;
        let Some(e) = crate::extent::find(extents, u32::try_from(lblk).map_err(|_| Errno::EFBIG)?).copied() else {
            return Ok(());
        };
        if e.uninit {
            return Ok(());
        }
        let phys = e.phys + (lblk - e.logical as u64);
        let mut buf = vec![0u8; self.bs];
        self.read_data_into(phys, &mut buf)?;
        buf[(from % bs) as usize..(to - lblk * bs) as usize].fill(0);
        self.write_data(phys, &buf)
    }

    /// Zeroes the parts of [offset, end) in blocks it covers only partly.
    fn zero_partial_blocks(&mut self, extents: &[Extent], offset: u64, end: u64) -> Result<()> {
        let bs = self.bs as u64;
        let head_end = end.min((offset / bs + 1) * bs);
        self.zero_in_block(extents, offset, head_end)?;
        let tail_start = (end / bs * bs).max(head_end);
        self.zero_in_block(extents, tail_start, end)
    }

    /// Writes the changed list as the file's tree and recounts its blocks.
    fn store_extents(&mut self, inode: &mut Inode, extents: &mut Vec<Extent>, tree: &[u64]) -> Result<()> {
        normalize(extents);
        let used = self.write_extent_tree(inode, extents, tree)?;
        self.set_block_count(inode, extents, used);
        Ok(())
    }

    fn free_extents(&mut self, cut: &[Extent]) -> Result<()> {
        for c in cut {
            self.free_blocks(c.phys, c.len as u64)?;
        }
        Ok(())
    }

    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`: bytes [offset,
    /// offset+len) read as zeros from now on; the blocks wholly inside go
    /// back to the free pool, the parts of blocks at the edges are zeroed.
    /// Nothing happens at or past the end of the file; a hole that passes
    /// it stops at the end of the (Linux) page holding it.
    pub(crate) fn punch_hole_inner(&mut self, ino: u32, offset: u64, len: u64, now: Timestamp) -> Result<()> {
        let (mut inode, ExtentMap { mut extents, tree_blocks }) = self.extent_file(ino)?;
        let size = inode.size();
        if offset >= size {
            return Ok(());
        }
        let end = offset.saturating_add(len).min(size.div_ceil(LINUX_PAGE) * LINUX_PAGE);
        self.zero_partial_blocks(&extents, offset, end)?;
        let bs = self.bs as u64;
        let (first, last) = (offset.div_ceil(bs), end / bs);
        if first < last {
            let cut = carve(&mut extents, first, last);
            if !cut.is_empty() {
                self.free_extents(&cut)?;
                self.store_extents(&mut inode, &mut extents, &tree_blocks)?;
            }
        }
        inode.set_time(TimeField::Modify, now);
        inode.set_time(TimeField::Change, now);
        self.store_inode(&mut inode)
    }

    /// `FALLOC_FL_ZERO_RANGE`: bytes [offset, offset+len) read as zeros
    /// and have blocks: every block the range touches is allocated (as
    /// unwritten extents where there were none), the blocks wholly inside
    /// become unwritten, the edges are zeroed in place. The size grows to
    /// the range's end unless `keep_size`.
    pub(crate) fn zero_range_inner(
        &mut self,
        ino: u32,
        offset: u64,
        len: u64,
        keep_size: bool,
        now: Timestamp,
    ) -> Result<()> {
        let (mut inode, ExtentMap { mut extents, tree_blocks }) = self.extent_file(ino)?;
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
        if end > self.max_file_size() {
            return Err(Errno::EFBIG);
        }
        let bs = self.bs as u64;
        let (first, last) = (offset.div_ceil(bs), end / bs);
        // Written blocks wholly inside become unwritten: they read as zeros
        // without a byte written (their old data stays on the disk, hidden,
        // as Linux leaves it).
        let mut changed = false;
        if first < last {
            let mut inside = carve(&mut extents, first, last);
            for piece in inside.iter_mut() {
                changed |= !piece.uninit;
                piece.uninit = true;
            }
            // An unwritten extent is at most MAX_UNINIT_LEN long.
            for piece in inside {
                let mut p = piece;
                while p.len > MAX_UNINIT_LEN {
                    extents.push(Extent { len: MAX_UNINIT_LEN, ..p });
                    p = Extent {
                        logical: p.logical + MAX_UNINIT_LEN,
                        len: p.len - MAX_UNINIT_LEN,
                        phys: p.phys + MAX_UNINIT_LEN as u64,
                        uninit: true,
                    };
                }
                extents.push(p);
            }
        }
        // Space first: an ENOSPC leaves the file's bytes as they were.
        let holes = holes_in(&extents, offset / bs, end.div_ceil(bs));
        let added = self.alloc_unwritten(ino, &holes)?;
        changed |= !added.is_empty();
        if changed {
            extents.extend_from_slice(&added);
            if let Err(e) = self.store_extents(&mut inode, &mut extents, &tree_blocks) {
                let _ = self.free_extents(&added);
                return Err(e);
            }
        }
        self.zero_partial_blocks(&extents, offset, end)?;
        if !keep_size && end > inode.size() {
            inode.set_size(end);
        }
        inode.set_time(TimeField::Modify, now);
        inode.set_time(TimeField::Change, now);
        self.store_inode(&mut inode)
    }

    /// Unwritten extents over `holes` (block ranges); on ENOSPC the ones
    /// made so far are freed again.
    pub(crate) fn alloc_unwritten(&mut self, ino: u32, holes: &[(u64, u64)]) -> Result<Vec<Extent>> {
        let mut goal = self.group_first_block(self.block_group_of_inode(ino));
        let mut added: Vec<Extent> = Vec::new();
        for &(mut lo, hi) in holes {
            while lo < hi {
                let want = (hi - lo).min(MAX_UNINIT_LEN as u64) as u32;
                let (phys, n) = match self.alloc_blocks(goal, want) {
                    Ok(v) => v,
                    Err(e) => {
                        let _ = self.free_extents(&added);
                        return Err(e);
                    }
                };
                added.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                added.push(Extent { logical: lo as u32, len: n, phys, uninit: true });
                goal = phys + n as u64;
                lo += n as u64;
            }
        }
        Ok(added)
    }

    /// Block-aligned `offset` and `len` for collapse and insert (EINVAL
    /// otherwise), as block numbers.
    fn aligned_blocks(&self, offset: u64, len: u64) -> Result<(u64, u64)> {
        let bs = self.bs as u64;
        if !offset.is_multiple_of(bs) || !len.is_multiple_of(bs) {
            return Err(Errno::EINVAL);
        }
        Ok((offset / bs, len / bs))
    }

    /// `FALLOC_FL_COLLAPSE_RANGE`: removes bytes [offset, offset+len)
    /// (block-aligned, ending before the end of the file) and moves what
    /// follows down by `len`; the file shrinks by `len`.
    pub(crate) fn collapse_range_inner(&mut self, ino: u32, offset: u64, len: u64, now: Timestamp) -> Result<()> {
        let (first, count) = self.aligned_blocks(offset, len)?;
        let (mut inode, ExtentMap { mut extents, tree_blocks }) = self.extent_file(ino)?;
        let size = inode.size();
        // Reaching the end would be a truncate: Linux refuses it.
        if offset.checked_add(len).is_none_or(|end| end >= size) {
            return Err(Errno::EINVAL);
        }
        let cut = carve(&mut extents, first, first + count);
        self.free_extents(&cut)?;
        for e in extents.iter_mut().filter(|e| e.logical as u64 >= first + count) {
            e.logical -= count as u32;
        }
        self.store_extents(&mut inode, &mut extents, &tree_blocks)?;
        inode.set_size(size - len);
        inode.set_time(TimeField::Modify, now);
        inode.set_time(TimeField::Change, now);
        self.store_inode(&mut inode)
    }

    /// `FALLOC_FL_INSERT_RANGE`: opens a hole of `len` bytes at `offset`
    /// (block-aligned, inside the file), moving what was there and after
    /// it up by `len`; the file grows by `len` (EFBIG past the largest
    /// file).
    pub(crate) fn insert_range_inner(&mut self, ino: u32, offset: u64, len: u64, now: Timestamp) -> Result<()> {
        let (first, count) = self.aligned_blocks(offset, len)?;
        let (mut inode, ExtentMap { mut extents, tree_blocks }) = self.extent_file(ino)?;
        let size = inode.size();
        if len > self.max_file_size().saturating_sub(size) {
            return Err(Errno::EFBIG);
        }
        if offset >= size {
            return Err(Errno::EINVAL);
        }
        // Split at `first`, then move everything from it up.
        let moved = carve(&mut extents, first, u64::MAX);
        for e in &moved {
            // Blocks allocated past the end (KEEP_SIZE) move too; none may
            // leave the 32-bit block space.
            if e.end() + count > 1 << 32 {
                return Err(Errno::EFBIG);
            }
        }
        for mut e in moved {
            e.logical += count as u32;
            extents.push(e);
        }
        self.store_extents(&mut inode, &mut extents, &tree_blocks)?;
        inode.set_size(size + len);
        inode.set_time(TimeField::Modify, now);
        inode.set_time(TimeField::Change, now);
        self.store_inode(&mut inode)
    }
}

/// The unmapped block ranges of [first, end) in `extents`.
pub(crate) fn holes_in(extents: &[Extent], first: u64, end: u64) -> Vec<(u64, u64)> {
    let mut sorted: Vec<&Extent> = extents.iter().filter(|e| e.end() > first && (e.logical as u64) < end).collect();
    sorted.sort_by_key(|e| e.logical);
    let mut holes = Vec::new();
    let mut cursor = first;
    for e in sorted {
        if e.logical as u64 > cursor {
            holes.push((cursor, e.logical as u64));
        }
        cursor = cursor.max(e.end());
    }
    if cursor < end {
        holes.push((cursor, end));
    }
    holes
}
