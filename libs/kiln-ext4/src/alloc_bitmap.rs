//! Block and inode allocation over the group bitmaps: bitmaps of groups
//! still marked `*_UNINIT` are computed, free counts in the descriptors
//! follow every change, bitmap checksums are kept, and blocks freed in the
//! running transaction are not handed out again before it commits.

use crate::group::{BG_BLOCK_UNINIT, BG_INODE_UNINIT};
use crate::superblock::group_has_super;
use crate::{BlockDevice, Ext4, Result};
use alloc::vec::Vec;
use linux_abi::errno::Errno;

fn bit(b: &[u8], i: usize) -> bool {
    b.get(i / 8).is_some_and(|v| v & (1 << (i % 8)) != 0)
}
fn set_bit(b: &mut [u8], i: usize, on: bool) {
    if let Some(v) = b.get_mut(i / 8) {
        if on {
            *v |= 1 << (i % 8);
        } else {
            *v &= !(1 << (i % 8));
        }
    }
}

/// The first clear bit of `b` in [from, to), skipping whole 64-bit words
/// that are full: a group's bitmap is mostly full below the free space, and
/// allocation scans it from the goal (a bit at a time it cost about 250,000
/// instructions per block in a group of 32,768 used blocks).
fn next_clear(b: &[u8], from: usize, to: usize) -> Option<usize> {
    let mut i = from;
    while i < to {
        if i.is_multiple_of(64) && i + 64 <= to {
            let word = b.get(i / 8..i / 8 + 8).map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
            if word == u64::MAX {
                i += 64;
                continue;
            }
            return Some(i + (!word).trailing_zeros() as usize);
        }
        if !bit(b, i) {
            return Some(i);
        }
        i += 1;
    }
    None
}

impl<D: BlockDevice> Ext4<D> {
    pub(crate) fn group_first_block(&self, g: u32) -> u64 {
        self.sb.first_data_block() as u64 + g as u64 * self.sb.blocks_per_group() as u64
    }
    /// Blocks in group `g` (the last group may be short).
    pub(crate) fn group_blocks(&self, g: u32) -> u32 {
        let start = self.group_first_block(g);
        (self.sb.blocks_count().saturating_sub(start)).min(self.sb.blocks_per_group() as u64) as u32
    }
    pub(crate) fn block_group(&self, blk: u64) -> u32 {
        ((blk.saturating_sub(self.sb.first_data_block() as u64)) / self.sb.blocks_per_group() as u64) as u32
    }

    /// The block bitmap of group `g` as it should be for a group whose
    /// bitmap was never initialised: its fixed metadata used, the rest free.
    fn uninit_block_bitmap(&self, g: u32) -> Vec<u8> {
        let mut b = alloc::vec![0u8; self.bs];
        let start = self.group_first_block(g);
        if group_has_super(&self.sb, g) {
            let per_block = self.bs / self.sb.desc_size();
            let gdt = (self.groups.len()).div_ceil(per_block) + self.sb.reserved_gdt_blocks() as usize;
            for i in 0..=gdt {
                set_bit(&mut b, i, true);
            }
        }
        let n = self.group_blocks(g) as u64;
        let itable = (self.sb.inodes_per_group() as u64 * self.sb.inode_size() as u64).div_ceil(self.bs as u64);
        for gd in &self.groups {
            for (first, count) in [(gd.block_bitmap(), 1), (gd.inode_bitmap(), 1), (gd.inode_table(), itable)] {
                let lo = first.max(start);
                let hi = first.saturating_add(count).min(start + n);
                for blk in lo..hi {
                    set_bit(&mut b, (blk - start) as usize, true);
                }
            }
        }
        for i in n as usize..self.bs * 8 {
            set_bit(&mut b, i, true);
        }
        b
    }

    fn load_block_bitmap(&mut self, g: u32) -> Result<Vec<u8>> {
        let gd = self.groups.get(g as usize).ok_or(Errno::EUCLEAN)?.clone();
        if gd.flags() & BG_BLOCK_UNINIT != 0 {
            return Ok(self.uninit_block_bitmap(g));
        }
        let loc = gd.block_bitmap();
        let b = self.meta(loc)?;
        if self.sb.metadata_csum() && !self.bitmap_trusted(g, false, loc) {
            let c = self.bitmap_checksum(&b, self.sb.blocks_per_group());
            let want = if self.sb.desc_size() >= 64 { c } else { c & 0xFFFF };
            if want != gd.block_bitmap_csum() {
                return Err(Errno::EUCLEAN);
            }
            self.verified.insert(loc);
        }
        Ok(b)
    }

    /// The bitmap checksum stored in a descriptor: crc32c of the first
    /// `bits / 8` bytes of the bitmap.
    fn bitmap_checksum(&self, bitmap: &[u8], bits: u32) -> u32 {
        self.dev.crc32c(self.csum_seed, crate::bytes::slice(bitmap, 0, (bits / 8) as usize))
    }

    /// Whether a cached bitmap needs no check against its descriptor: it
    /// was checked since it was read, or this transaction changed it (its
    /// checksum is computed at the commit, see `store_block_bitmap`).
    fn bitmap_trusted(&self, g: u32, inodes: bool, loc: u64) -> bool {
        self.verified.contains(&loc) || self.bitmap_csum_pending.contains(&(g, inodes))
    }

    /// Puts a changed block bitmap in place. Its checksum is left to the
    /// commit (`update_bitmap_checksums`): a 4 KiB crc32c per allocation
    /// was a large part of a file create, and a transaction changes the
    /// same bitmap thousands of times.
    fn store_block_bitmap(&mut self, g: u32, b: Vec<u8>) -> Result<()> {
        let gd = self.group_mut(g).ok_or(Errno::EUCLEAN)?;
        gd.set_flags(gd.flags() & !BG_BLOCK_UNINIT);
        let loc = gd.block_bitmap();
        self.mark_group_dirty(g);
        self.bitmap_csum_pending.insert((g, false));
        self.put_meta(loc, b)
    }

    /// At the commit: the checksums of the bitmaps changed since the last
    /// one, into their descriptors (before those are serialised).
    pub(crate) fn update_bitmap_checksums(&mut self) -> Result<()> {
        let pending = core::mem::take(&mut self.bitmap_csum_pending);
        if !self.sb.metadata_csum() {
            return Ok(());
        }
        for (g, inodes) in pending {
            let Some(gd) = self.groups.get(g as usize) else { continue };
            let (loc, bits) = if inodes {
                (gd.inode_bitmap(), self.sb.inodes_per_group())
            } else {
                (gd.block_bitmap(), self.sb.blocks_per_group())
            };
            let c = {
                self.meta_ref(loc)?;
                self.bitmap_checksum(self.cached(loc)?, bits)
            };
            let gd = self.groups.get_mut(g as usize).ok_or(Errno::EUCLEAN)?;
            if inodes {
                gd.set_inode_bitmap_csum(c);
            } else {
                gd.set_block_bitmap_csum(c);
            }
            self.verified.insert(loc);
            self.mark_group_dirty(g);
        }
        Ok(())
    }

    pub(crate) fn load_inode_bitmap(&mut self, g: u32) -> Result<Vec<u8>> {
        let gd = self.groups.get(g as usize).ok_or(Errno::EUCLEAN)?.clone();
        let ipg = self.sb.inodes_per_group() as usize;
        if gd.flags() & BG_INODE_UNINIT != 0 {
            let mut b = alloc::vec![0u8; self.bs];
            for i in ipg..self.bs * 8 {
                set_bit(&mut b, i, true);
            }
            return Ok(b);
        }
        let loc = gd.inode_bitmap();
        let b = self.meta(loc)?;
        if self.sb.metadata_csum() && !self.bitmap_trusted(g, true, loc) {
            let c = self.bitmap_checksum(&b, ipg as u32);
            let want = if self.sb.desc_size() >= 64 { c } else { c & 0xFFFF };
            if want != gd.inode_bitmap_csum() {
                return Err(Errno::EUCLEAN);
            }
            self.verified.insert(loc);
        }
        Ok(b)
    }

    /// As `store_block_bitmap`: the checksum waits for the commit.
    fn store_inode_bitmap(&mut self, g: u32, b: Vec<u8>) -> Result<()> {
        let gd = self.group_mut(g).ok_or(Errno::EUCLEAN)?;
        gd.set_flags(gd.flags() & !BG_INODE_UNINIT);
        let loc = gd.inode_bitmap();
        self.mark_group_dirty(g);
        self.bitmap_csum_pending.insert((g, true));
        self.put_meta(loc, b)
    }

    /// Allocates up to `max` contiguous blocks, preferably at `goal`;
    /// returns the first block and the count (at least 1).
    pub(crate) fn alloc_blocks(&mut self, goal: u64, max: u32) -> Result<(u64, u32)> {
        self.writable()?;
        // Blocks reserved for delayed allocation are not for others.
        let max = u64::from(max).min(self.allocatable()) as u32;
        if max == 0 {
            return Err(Errno::ENOSPC);
        }
        let ngroups = self.groups.len() as u32;
        let goal = if goal >= self.sb.blocks_count() || goal < self.sb.first_data_block() as u64 {
            self.sb.first_data_block() as u64
        } else {
            goal
        };
        let g0 = self.block_group(goal).min(ngroups.saturating_sub(1));
        for step in 0..ngroups {
            let g = (g0 + step) % ngroups;
            if self.groups[g as usize].free_blocks() == 0 {
                continue;
            }
            let mut bm = self.load_block_bitmap(g)?;
            let start = self.group_first_block(g);
            let n = self.group_blocks(g) as usize;
            let from = if step == 0 { (goal - start) as usize } else { 0 };
            // Two passes: from the goal onwards, then from the group start.
            for (lo, hi) in [(from, n), (0, from)] {
                let mut from = lo;
                while let Some(i) = next_clear(&bm, from, hi) {
                    if self.freed_uncommitted(start + i as u64) {
                        from = i + 1;
                        continue;
                    }
                    let mut len = 0usize;
                    while i + len < n
                        && (len as u32) < max
                        && !bit(&bm, i + len)
                        && !self.freed_uncommitted(start + (i + len) as u64)
                    {
                        set_bit(&mut bm, i + len, true);
                        len += 1;
                    }
                    let gd = self.group_mut(g).ok_or(Errno::EUCLEAN)?;
                    gd.set_free_blocks(gd.free_blocks().saturating_sub(len as u32));
                    self.store_block_bitmap(g, bm)?;
                    return Ok((start + i as u64, len as u32));
                }
            }
        }
        Err(Errno::ENOSPC)
    }

    /// Frees `count` blocks from `first`.
    pub(crate) fn free_blocks(&mut self, first: u64, count: u64) -> Result<()> {
        let mut blk = first;
        let end = first.checked_add(count).ok_or(Errno::EUCLEAN)?;
        if first < self.sb.first_data_block() as u64 || end > self.sb.blocks_count() {
            return Err(Errno::EUCLEAN);
        }
        while blk < end {
            let g = self.block_group(blk);
            let start = self.group_first_block(g);
            let group_end = start + self.group_blocks(g) as u64;
            let mut bm = self.load_block_bitmap(g)?;
            let mut n = 0;
            while blk < end && blk < group_end {
                let i = (blk - start) as usize;
                if !bit(&bm, i) {
                    return Err(Errno::EUCLEAN);
                }
                set_bit(&mut bm, i, false);
                self.note_freed(blk);
                self.forget_meta(blk);
                blk += 1;
                n += 1;
            }
            let gd = self.group_mut(g).ok_or(Errno::EUCLEAN)?;
            gd.set_free_blocks(gd.free_blocks() + n);
            self.store_block_bitmap(g, bm)?;
        }
        Ok(())
    }

    /// Allocates an inode number near `near_group`.
    pub(crate) fn alloc_inode(&mut self, near_group: u32, is_dir: bool) -> Result<u32> {
        self.writable()?;
        let ngroups = self.groups.len() as u32;
        let ipg = self.sb.inodes_per_group();
        for step in 0..ngroups {
            let g = (near_group + step) % ngroups;
            if self.groups[g as usize].free_inodes() == 0 {
                continue;
            }
            let mut bm = self.load_inode_bitmap(g)?;
            let first = if g == 0 { self.sb.first_ino() - 1 } else { 0 };
            if let Some(i) = next_clear(&bm, first as usize, ipg as usize) {
                let i = i as u32;
                set_bit(&mut bm, i as usize, true);
                let gd = self.group_mut(g).ok_or(Errno::EUCLEAN)?;
                gd.set_free_inodes(gd.free_inodes().saturating_sub(1));
                if is_dir {
                    gd.set_used_dirs(gd.used_dirs() + 1);
                }
                let unused = gd.itable_unused();
                if ipg - i <= unused {
                    gd.set_itable_unused(ipg - i - 1);
                }
                self.store_inode_bitmap(g, bm)?;
                return Ok(g * ipg + i + 1);
            }
        }
        Err(Errno::ENOSPC)
    }

    pub(crate) fn free_inode(&mut self, ino: u32, is_dir: bool) -> Result<()> {
        let ipg = self.sb.inodes_per_group();
        let g = (ino - 1) / ipg;
        let i = ((ino - 1) % ipg) as usize;
        let mut bm = self.load_inode_bitmap(g)?;
        if !bit(&bm, i) {
            return Err(Errno::EUCLEAN);
        }
        set_bit(&mut bm, i, false);
        let gd = self.group_mut(g).ok_or(Errno::EUCLEAN)?;
        gd.set_free_inodes(gd.free_inodes() + 1);
        if is_dir {
            gd.set_used_dirs(gd.used_dirs().saturating_sub(1));
        }
        self.store_inode_bitmap(g, bm)
    }
}
