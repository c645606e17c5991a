//! ext2/ext3 block maps: twelve direct pointers, then single, double and
//! triple indirect blocks. Read into the same extent list the extent code
//! uses, so the read paths are shared; each indirect block may appear only
//! once, which bounds the walk on a corrupt image.

use crate::bytes::*;
use crate::extent::{normalize, Extent, ExtentMap};
use crate::inode::Inode;
use crate::{BlockDevice, Ext4, Result};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use linux_abi::errno::Errno;

impl<D: BlockDevice> Ext4<D> {
    pub(crate) fn read_indirect_map(&mut self, inode: &Inode) -> Result<ExtentMap> {
        let mut map = ExtentMap { extents: Vec::new(), tree_blocks: Vec::new() };
        let mut seen = BTreeSet::new();
        let area = inode.block_area().to_vec();
        let per = (self.bs / 4) as u64;
        for i in 0..12u64 {
            self.add_block(&mut map, i, le32(&area, i as usize * 4) as u64)?;
        }
        let mut base = 12u64;
        let mut span = per;
        for (level, slot) in [(1u32, 12usize), (2, 13), (3, 14)] {
            let ptr = le32(&area, slot * 4) as u64;
            if ptr != 0 {
                self.walk_indirect(&mut map, &mut seen, ptr, level, base)?;
            }
            base += span;
            span = span.saturating_mul(per);
        }
        normalize(&mut map.extents);
        Ok(map)
    }

    fn add_block(&mut self, map: &mut ExtentMap, logical: u64, phys: u64) -> Result<()> {
        if phys == 0 {
            return Ok(());
        }
        if logical >= 1 << 32 || phys < self.sb.first_data_block() as u64 || phys >= self.sb.blocks_count() {
            return Err(Errno::EUCLEAN);
        }
        map.extents.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        map.extents.push(Extent { logical: logical as u32, len: 1, phys, uninit: false });
        Ok(())
    }

    fn walk_indirect(
        &mut self,
        map: &mut ExtentMap,
        seen: &mut BTreeSet<u64>,
        blk: u64,
        level: u32,
        base: u64,
    ) -> Result<()> {
        if !seen.insert(blk) || blk >= self.sb.blocks_count() {
            return Err(Errno::EUCLEAN);
        }
        map.tree_blocks.push(blk);
        let b = self.meta(blk)?;
        let per = (self.bs / 4) as u64;
        let child_span = per.pow(level - 1);
        for i in 0..per {
            let ptr = le32(&b, i as usize * 4) as u64;
            let logical = base + i * child_span;
            if ptr == 0 {
                continue;
            }
            if level == 1 {
                self.add_block(map, logical, ptr)?;
            } else {
                self.walk_indirect(map, seen, ptr, level - 1, logical)?;
            }
        }
        Ok(())
    }
}

impl<D: BlockDevice> Ext4<D> {
    /// Writes `extents` as `inode`'s block map (direct pointers and
    /// indirect blocks), reusing `old_tree` blocks; returns how many
    /// indirect blocks are in use. The caller stores the inode.
    pub(crate) fn write_indirect_map(
        &mut self,
        inode: &mut Inode,
        extents: &[Extent],
        old_tree: &[u64],
    ) -> Result<u64> {
        let per = (self.bs / 4) as u64;
        let limit = 12 + per + per * per + per * per * per;
        let mut blocks = BTreeMap::new();
        for e in extents {
            if e.end() > limit {
                return Err(Errno::EFBIG);
            }
            for k in 0..e.len as u64 {
                blocks.insert(e.logical as u64 + k, e.phys + k);
            }
        }
        let mut spare: Vec<u64> = old_tree.to_vec();
        spare.reverse();
        let goal = extents.first().map_or(0, |e| e.phys);
        let mut area = [0u8; 60];
        for l in 0..12u64 {
            set_le32(&mut area, l as usize * 4, blocks.get(&l).copied().unwrap_or(0) as u32);
        }
        let mut used = 0u64;
        let mut base = 12u64;
        let mut span = per;
        for (level, slot) in [(1u32, 12usize), (2, 13), (3, 14)] {
            let b = self.build_indirect(&blocks, level, base, &mut spare, goal, &mut used)?;
            set_le32(&mut area, slot * 4, b as u32);
            base += span;
            span *= per;
        }
        inode.set_block_area(&area);
        for b in spare {
            self.free_blocks(b, 1)?;
        }
        Ok(used)
    }

    /// The indirect block of `level` covering logical blocks from `base`,
    /// or 0 when none of them is mapped.
    fn build_indirect(
        &mut self,
        blocks: &BTreeMap<u64, u64>,
        level: u32,
        base: u64,
        spare: &mut Vec<u64>,
        goal: u64,
        used: &mut u64,
    ) -> Result<u64> {
        let per = (self.bs / 4) as u64;
        let child_span = per.pow(level - 1);
        if blocks.range(base..base + per * child_span).next().is_none() {
            return Ok(0);
        }
        let mut b = alloc::vec![0u8; self.bs];
        for i in 0..per {
            let start = base + i * child_span;
            let ptr = if level == 1 {
                blocks.get(&start).copied().unwrap_or(0)
            } else {
                self.build_indirect(blocks, level - 1, start, spare, goal, used)?
            };
            set_le32(&mut b, i as usize * 4, ptr as u32);
        }
        let blk = match spare.pop() {
            Some(s) => s,
            None => self.alloc_blocks(goal, 1)?.0,
        };
        *used += 1;
        self.put_meta(blk, b)?;
        Ok(blk)
    }

    /// Writes a block map in the inode's format (extent tree or indirect).
    pub(crate) fn write_map(&mut self, inode: &mut Inode, extents: &[Extent], old_tree: &[u64]) -> Result<u64> {
        if inode.has_extents() {
            self.write_extent_tree(inode, extents, old_tree)
        } else {
            if extents.iter().any(|e| e.uninit) {
                return Err(Errno::EOPNOTSUPP);
            }
            self.write_indirect_map(inode, extents, old_tree)
        }
    }
}
