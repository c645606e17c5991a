//! ext2/ext3 block maps: twelve direct pointers, then single, double and
//! triple indirect blocks. Read into the same extent list the extent code
//! uses, so the read paths are shared; each indirect block may appear only
//! once, which bounds the walk on a corrupt image.

use crate::bytes::*;
use crate::extent::{normalize, Extent, ExtentMap};
use crate::inode::Inode;
use crate::{BlockDevice, Ext4, Result};
use alloc::collections::BTreeSet;
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
