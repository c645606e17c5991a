//! Extent trees: the root in `i_block`, index and leaf blocks with their
//! checksummed tails. A file's tree is read whole into a sorted list of
//! extents (validated: in range, ordered, no overlap, no block visited
//! twice) and written back whole, reusing the old tree blocks, after a
//! change; simple and robust, at the cost of rewriting the tree blocks of
//! a fragmented file on every change of its mapping.

use crate::bytes::*;
use crate::checksum::crc32c;
use crate::inode::Inode;
use crate::{BlockDevice, Ext4, Result};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

const MAGIC: u16 = 0xF30A;
const MAX_DEPTH: u16 = 5;
pub const MAX_INIT_LEN: u32 = 32768;
pub const MAX_UNINIT_LEN: u32 = 32767;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u32,
    pub len: u32,
    pub phys: u64,
    /// Allocated but unwritten (fallocate): reads as zeros.
    pub uninit: bool,
}

impl Extent {
    pub fn end(&self) -> u64 {
        self.logical as u64 + self.len as u64
    }
}

/// The mapping of a file and the blocks its tree occupies.
pub struct ExtentMap {
    pub extents: Vec<Extent>,
    pub tree_blocks: Vec<u64>,
}

/// The extent covering `lblk`, if any.
pub fn find(extents: &[Extent], lblk: u32) -> Option<&Extent> {
    let i = extents.partition_point(|e| e.end() <= lblk as u64);
    extents.get(i).filter(|e| e.logical <= lblk)
}

fn node_max(bs: usize) -> usize {
    (bs - 12) / 12
}

impl<D: BlockDevice> Ext4<D> {
    pub(crate) fn read_extent_map(&mut self, inode: &Inode) -> Result<ExtentMap> {
        let mut map = ExtentMap { extents: Vec::new(), tree_blocks: Vec::new() };
        let mut seen = BTreeSet::new();
        let root = inode.block_area().to_vec();
        let seed = inode.csum_seed(self.csum_seed);
        let depth = le16(&root, 6);
        if depth > MAX_DEPTH {
            return Err(Errno::EUCLEAN);
        }
        self.walk_node(&root, 4, depth, seed, &mut map, &mut seen)?;
        // Validate order and ranges once, over the whole list.
        let blocks = self.sb.blocks_count();
        let first = self.sb.first_data_block() as u64;
        let mut prev_end = 0u64;
        for e in &map.extents {
            if e.len == 0 || (e.logical as u64) < prev_end || e.end() > 1 << 32 {
                return Err(Errno::EUCLEAN);
            }
            if e.phys < first || e.phys.checked_add(e.len as u64).is_none_or(|x| x > blocks) {
                return Err(Errno::EUCLEAN);
            }
            prev_end = e.end();
        }
        Ok(map)
    }

    fn walk_node(
        &mut self,
        node: &[u8],
        max_allowed: usize,
        depth: u16,
        seed: u32,
        map: &mut ExtentMap,
        seen: &mut BTreeSet<u64>,
    ) -> Result<()> {
        if le16(node, 0) != MAGIC || le16(node, 6) != depth {
            return Err(Errno::EUCLEAN);
        }
        let entries = le16(node, 2) as usize;
        let max = le16(node, 4) as usize;
        if entries > max || max > max_allowed {
            return Err(Errno::EUCLEAN);
        }
        for k in 0..entries {
            let e = slice(node, 12 + k * 12, 12);
            if depth == 0 {
                let raw_len = le16(e, 4) as u32;
                let (len, uninit) =
                    if raw_len > MAX_INIT_LEN { (raw_len - MAX_INIT_LEN, true) } else { (raw_len, false) };
                let phys = le32(e, 8) as u64 | (le16(e, 6) as u64) << 32;
                map.extents.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                map.extents.push(Extent { logical: le32(e, 0), len, phys, uninit });
            } else {
                let child = le32(e, 4) as u64 | (le16(e, 8) as u64) << 32;
                if !seen.insert(child) {
                    return Err(Errno::EUCLEAN);
                }
                map.tree_blocks.push(child);
                let b = self.meta(child)?;
                let cmax = le16(&b, 4) as usize;
                if cmax > node_max(self.bs) {
                    return Err(Errno::EUCLEAN);
                }
                if self.sb.metadata_csum() {
                    let off = 12 + cmax * 12;
                    if crc32c(seed, slice(&b, 0, off)) != le32(&b, off) {
                        return Err(Errno::EUCLEAN);
                    }
                }
                self.walk_node(&b, node_max(self.bs), depth - 1, seed, map, seen)?;
            }
        }
        Ok(())
    }

    /// Writes `extents` (sorted, non-overlapping) as `inode`'s tree, reusing
    /// `old_tree` blocks and freeing those left over; returns the number of
    /// tree blocks now in use. The caller stores the inode.
    pub(crate) fn write_extent_tree(&mut self, inode: &mut Inode, extents: &[Extent], old_tree: &[u64]) -> Result<u64> {
        let seed = inode.csum_seed(self.csum_seed);
        let per = node_max(self.bs);
        let mut spare: Vec<u64> = old_tree.to_vec();
        spare.reverse();
        let mut used = 0u64;
        let goal = extents.first().map_or(0, |e| e.phys);
        // Entries of the current level: (first logical, 12-byte record).
        let mut level: Vec<(u32, [u8; 12])> = extents.iter().map(|e| (e.logical, leaf_record(e))).collect();
        let mut depth = 0u16;
        while level.len() > 4 {
            let mut up = Vec::new();
            for chunk in level.chunks(per) {
                let blk = match spare.pop() {
                    Some(b) => b,
                    None => self.alloc_blocks(goal, 1)?.0,
                };
                used += 1;
                let mut b = alloc::vec![0u8; self.bs];
                header(&mut b, chunk.len(), per, depth);
                for (k, (_, rec)) in chunk.iter().enumerate() {
                    put(&mut b, 12 + k * 12, rec);
                }
                if self.sb.metadata_csum() {
                    let off = 12 + per * 12;
                    let c = crc32c(seed, slice(&b, 0, off));
                    set_le32(&mut b, off, c);
                }
                self.put_meta(blk, b)?;
                let mut rec = [0u8; 12];
                set_le32(&mut rec, 0, chunk[0].0);
                set_le32(&mut rec, 4, blk as u32);
                set_le16(&mut rec, 8, (blk >> 32) as u16);
                up.push((chunk[0].0, rec));
            }
            level = up;
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(Errno::EFBIG);
            }
        }
        let mut root = [0u8; 60];
        header(&mut root, level.len(), 4, depth);
        for (k, (_, rec)) in level.iter().enumerate() {
            put(&mut root, 12 + k * 12, rec);
        }
        inode.set_block_area(&root);
        for b in spare {
            self.free_blocks(b, 1)?;
        }
        Ok(used)
    }
}

fn header(b: &mut [u8], entries: usize, max: usize, depth: u16) {
    set_le16(b, 0, MAGIC);
    set_le16(b, 2, entries as u16);
    set_le16(b, 4, max as u16);
    set_le16(b, 6, depth);
    set_le32(b, 8, 0);
}

fn leaf_record(e: &Extent) -> [u8; 12] {
    let mut r = [0u8; 12];
    set_le32(&mut r, 0, e.logical);
    let len = if e.uninit { e.len + MAX_INIT_LEN } else { e.len };
    set_le16(&mut r, 4, len as u16);
    set_le16(&mut r, 6, (e.phys >> 32) as u16);
    set_le32(&mut r, 8, e.phys as u32);
    r
}

/// Sorts and merges adjacent extents of the same kind within length limits.
pub fn normalize(extents: &mut Vec<Extent>) {
    extents.sort_by_key(|e| e.logical);
    let mut out: Vec<Extent> = Vec::with_capacity(extents.len());
    for e in extents.drain(..) {
        if let Some(last) = out.last_mut() {
            let limit = if last.uninit { MAX_UNINIT_LEN } else { MAX_INIT_LEN };
            if last.uninit == e.uninit
                && last.end() == e.logical as u64
                && last.phys + last.len as u64 == e.phys
                && last.len + e.len <= limit
            {
                last.len += e.len;
                continue;
            }
        }
        out.push(e);
    }
    *extents = out;
}
