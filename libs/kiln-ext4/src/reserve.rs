//! Block reservations for delayed allocation. A caller that keeps file
//! data in memory and allocates its blocks only at writeback (the
//! kernel's page cache) reserves them first, when the data is written, so
//! `write(2)` gets ENOSPC and writeback never runs out of space; this is
//! ext4's accounting (`s_dirtyclusters_counter`, `ext4_has_free_clusters`):
//!
//! * A reservation (one per block of data newly written over no block)
//!   succeeds while `free >= pool + reserved + n`, the same test every
//!   other allocation (directories, extended attributes, fallocate, plain
//!   writes) must pass, so none of them takes reserved blocks.
//! * `pool` is ext4's reserved pool for the metadata writeback allocates
//!   (extent tree blocks), `s_resv_clusters`: 2% of the blocks, at most
//!   4096, and none without the extents feature (block maps of ext2/3 are
//!   sized exactly). Writeback may dip into it (`free >= reserved + n`),
//!   as `EXT4_MB_USE_RESERVED` does.
//! * The root-reserved blocks (`s_r_blocks_count`) are not held back: the
//!   kernel's callers are root, whom Linux lets use them.

use crate::extent::Extent;
use crate::{BlockDevice, Ext4, Result};
use alloc::vec::Vec;
use linux_abi::errno::Errno;

impl<D: BlockDevice> Ext4<D> {
    /// Free blocks as the group descriptors count them (blocks freed by
    /// the running transaction included, as ext4's counter does; an
    /// allocation that needs them commits first, see `atomic`).
    pub(crate) fn free_total(&self) -> u64 {
        self.groups.iter().map(|g| u64::from(g.free_blocks())).sum()
    }

    /// ext4's `s_resv_clusters`.
    pub(crate) fn metadata_pool(&self) -> u64 {
        if !self.sb.has_incompat(crate::superblock::INCOMPAT_EXTENTS) {
            return 0;
        }
        (self.sb.blocks_count() / 50).min(4096)
    }

    /// How many blocks an allocation may take now without touching
    /// reservations (or, during writeback, the metadata pool).
    pub(crate) fn allocatable(&self) -> u64 {
        let held = if self.writing_back { self.delalloc } else { self.delalloc + self.metadata_pool() };
        self.free_total().saturating_sub(held)
    }

    /// Reserves `n` blocks for data to be allocated at writeback; ENOSPC
    /// when the volume cannot promise them (EROFS when read-only).
    pub fn reserve_blocks(&mut self, n: u64) -> Result<()> {
        self.writable()?;
        if n > self.allocatable() {
            return Err(Errno::ENOSPC);
        }
        self.delalloc += n;
        Ok(())
    }

    /// Gives back `n` reserved blocks (their data was truncated away, or
    /// its file freed).
    pub fn release_blocks(&mut self, n: u64) {
        self.delalloc = self.delalloc.saturating_sub(n);
    }

    /// Blocks reserved now.
    pub fn reserved_blocks(&self) -> u64 {
        self.delalloc
    }

    /// The holes of file `ino` among blocks `[first, end)`: ranges
    /// `(from, to)` of blocks no extent maps (an unwritten extent maps
    /// its blocks: they are allocated).
    pub fn unmapped_blocks(&mut self, ino: u32, first: u64, end: u64) -> Result<Vec<(u64, u64)>> {
        let inode = self.live_inode(ino)?;
        if !inode.is_reg() {
            return Err(Errno::EINVAL);
        }
        let map = self.file_map(&inode)?;
        let mut extents: Vec<&Extent> =
            map.extents.iter().filter(|e| e.end() > first && (e.logical as u64) < end).collect();
        extents.sort_by_key(|e| e.logical);
        let mut holes = Vec::new();
        let mut cursor = first;
        for e in extents {
            let lo = e.logical as u64;
            if lo > cursor {
                holes.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                holes.push((cursor, lo.min(end)));
            }
            cursor = cursor.max(e.end());
        }
        if cursor < end {
            holes.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            holes.push((cursor, end));
        }
        Ok(holes)
    }
}
