//! Hashed directory indexes (htree / dir_index): the dx_root and dx_node
//! blocks with their checksummed tails, lookup by name hash (including
//! hash-collision continuation), and turning an indexed directory back
//! into a linear one before it grows, which Linux reads the same way.

use crate::bytes::*;
use crate::checksum::crc32c;
use crate::dir::{NewEntry, Probe};
use crate::extent::Extent;
use crate::hash::{dx_hash, HASH_UNSIGNED_DELTA};
use crate::inode::{Inode, FL_INDEX};
use crate::superblock::INCOMPAT_LARGEDIR;
use crate::{BlockDevice, Ext4, Result};
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// Offset of the root's count/limit header.
const ROOT_ENTRIES: usize = 0x20;
/// Offset of a node's count/limit header (after its empty fake dirent).
const NODE_ENTRIES: usize = 0x8;

struct DxLevel {
    /// (hash, logical block) with the first hash implicitly 0.
    entries: Vec<(u32, u32)>,
}

impl<D: BlockDevice> Ext4<D> {
    /// Parses the count/limit/entries at `off`, checking the dx tail.
    fn dx_entries(&self, dir: &Inode, b: &[u8], off: usize) -> Result<DxLevel> {
        let limit = le16(b, off) as usize;
        let count = le16(b, off + 2) as usize;
        let tail = if self.sb.metadata_csum() { 8 } else { 0 };
        let room = (self.bs - off - tail) / 8;
        if count == 0 || count > limit || limit != room {
            return Err(Errno::EUCLEAN);
        }
        if self.sb.metadata_csum() {
            let size = off + count * 8;
            let t = off + limit * 8;
            let mut c = self.dev.crc32c(dir.csum_seed(self.csum_seed), slice(b, 0, size));
            c = crc32c(c, slice(b, t, 4));
            c = crc32c(c, &[0; 4]);
            if c != le32(b, t + 4) {
                return Err(Errno::EUCLEAN);
            }
        }
        let mut entries = Vec::with_capacity(count);
        for i in 0..count {
            let hash = if i == 0 { 0 } else { le32(b, off + i * 8) };
            entries.push((hash, le32(b, off + i * 8 + 4)));
        }
        Ok(DxLevel { entries })
    }

    /// The root's hash version (signedness applied) and depth.
    fn dx_root(&mut self, dir: &Inode, extents: &[Extent]) -> Result<(u8, usize, DxLevel)> {
        let phys = self.dir_block_ref(dir, extents, 0)?;
        let b = self.cached(phys)?;
        let info = 0x18;
        if le32(b, info) != 0 || u8_at(b, info + 5) != 8 {
            return Err(Errno::EUCLEAN);
        }
        let mut version = u8_at(b, info + 4);
        let levels = u8_at(b, info + 6) as usize;
        let max_levels = if self.sb.has_incompat(INCOMPAT_LARGEDIR) { 3 } else { 2 };
        if levels >= max_levels || version > 2 {
            return Err(Errno::EUCLEAN);
        }
        if self.sb.unsigned_hash() {
            version += HASH_UNSIGNED_DELTA;
        }
        let level = self.dx_entries(dir, b, ROOT_ENTRIES)?;
        Ok((version, levels, level))
    }

    /// Looks `name` up through the index; the slot is in the leaf the
    /// name's hash selects, where `htree_add` puts it.
    pub(crate) fn htree_lookup(&mut self, dir: &Inode, extents: &[Extent], name: &[u8]) -> Result<Probe> {
        let (version, levels, mut level) = self.dx_root(dir, extents)?;
        let hash = dx_hash(name, version, &self.sb.hash_seed()).ok_or(Errno::EUCLEAN)?;
        let nblocks = (dir.size() / self.bs as u64) as u32;
        for depth in 0..=levels {
            let i = level.entries.partition_point(|&(h, _)| h <= hash).saturating_sub(1);
            let (_, blk) = level.entries[i];
            if blk >= nblocks || blk == 0 {
                return Err(Errno::EUCLEAN);
            }
            if depth < levels {
                let phys = self.dir_block_ref(dir, extents, blk)?;
                let b = self.cached(phys)?;
                if le32(b, 0) != 0 || le16(b, 4) as usize != self.bs {
                    return Err(Errno::EUCLEAN);
                }
                level = self.dx_entries(dir, b, NODE_ENTRIES)?;
                continue;
            }
            // Leaf: search it, then the following leaves whose first hash
            // continues a collision run.
            let mut k = i;
            let mut probe = Probe::default();
            loop {
                let (_, leaf) = level.entries[k];
                if leaf >= nblocks {
                    return Err(Errno::EUCLEAN);
                }
                let (found, slot) = self.find_in_block(dir, extents, leaf, name, false)?;
                if k == i {
                    probe.slot = slot.map(|off| (leaf, off));
                }
                if let Some((ino, off)) = found {
                    probe.found = Some((ino, leaf, off));
                    return Ok(probe);
                }
                k += 1;
                match level.entries.get(k) {
                    Some(&(h, _)) if h & 1 != 0 && h & !1 == hash => continue,
                    _ => return Ok(probe),
                }
            }
        }
        Ok(Probe::default())
    }

    /// Rewrites count and entries of an index block and its dx tail.
    fn dx_store(&mut self, dir: &Inode, phys: u64, mut b: Vec<u8>, off: usize, entries: &[(u32, u32)]) -> Result<()> {
        set_le16(&mut b, off + 2, entries.len() as u16);
        for (i, &(hash, blk)) in entries.iter().enumerate() {
            if i > 0 {
                set_le32(&mut b, off + i * 8, hash);
            }
            set_le32(&mut b, off + i * 8 + 4, blk);
        }
        if self.sb.metadata_csum() {
            let limit = le16(&b, off) as usize;
            let t = off + limit * 8;
            let mut c = self.dev.crc32c(dir.csum_seed(self.csum_seed), slice(&b, 0, off + entries.len() * 8));
            c = crc32c(c, slice(&b, t, 4));
            c = crc32c(c, &[0; 4]);
            set_le32(&mut b, t + 4, c);
        }
        self.put_meta(phys, b)
    }

    /// Adds `name` to an indexed directory through its index: into the
    /// leaf its hash selects, splitting that leaf (by hash, with a new
    /// index entry) when full. `Ok(false)` when the index itself is full;
    /// the caller then de-indexes.
    pub(crate) fn htree_add(
        &mut self,
        dir: &mut Inode,
        name: &[u8],
        ino: u32,
        ftype: u8,
        mut slot: Option<(u32, usize)>,
    ) -> Result<bool> {
        for _attempt in 0..2 {
            let map = self.file_map(dir)?;
            let extents = map.extents;
            let (version, levels, mut level) = self.dx_root(dir, &extents)?;
            let seed = self.sb.hash_seed();
            let hash = dx_hash(name, version, &seed).ok_or(Errno::EUCLEAN)?;
            let nblocks = (dir.size() / self.bs as u64) as u32;
            let (mut node_lblk, mut node_off) = (0u32, ROOT_ENTRIES);
            let mut i = 0;
            for depth in 0..=levels {
                i = level.entries.partition_point(|&(h, _)| h <= hash).saturating_sub(1);
                let blk = level.entries[i].1;
                if blk == 0 || blk >= nblocks {
                    return Err(Errno::EUCLEAN);
                }
                if depth < levels {
                    let (_, b) = self.dir_block(dir, &extents, blk)?;
                    level = self.dx_entries(dir, &b, NODE_ENTRIES)?;
                    node_lblk = blk;
                    node_off = NODE_ENTRIES;
                }
            }
            let leaf = level.entries[i].1;
            let (phys, mut b) = self.dir_block(dir, &extents, leaf)?;
            let at = slot.take().filter(|s| s.0 == leaf).map(|s| s.1);
            if self.insert_into_block_at(dir, &mut b, at, name, ino, ftype)? {
                self.put_dir_block(dir, phys, b)?;
                self.store_inode(dir)?;
                return Ok(true);
            }
            // Split the leaf, if the index node has room for one more entry.
            let (node_phys, node_b) = self.dir_block(dir, &extents, node_lblk)?;
            let limit = le16(&node_b, node_off) as usize;
            if level.entries.len() >= limit {
                return Ok(false);
            }
            let mut all: Vec<(u32, NewEntry)> = Vec::new();
            for e in self.parse_dir_block(dir, &b, false)? {
                if e.ino != 0 {
                    let nm = slice(&b, e.off + 8, e.name_len).to_vec();
                    let h = dx_hash(&nm, version, &seed).ok_or(Errno::EUCLEAN)?;
                    all.push((h, (e.ino, e.file_type, nm)));
                }
            }
            let Some((mid, split_hash)) = split_point(&mut all) else {
                return Ok(false);
            };
            let upper: Vec<NewEntry> = all[mid..].iter().map(|x| x.1.clone()).collect();
            let lower: Vec<NewEntry> = all[..mid].iter().map(|x| x.1.clone()).collect();
            let nb = self.leaf_block(&upper);
            let new_lblk = self.append_dir_block(dir, nb)?;
            let lb = self.leaf_block(&lower);
            self.put_dir_block(dir, phys, lb)?;
            let mut entries = level.entries;
            entries.insert(i + 1, (split_hash, new_lblk));
            // Re-read: appending may have moved nothing, but the node
            // block content must be current.
            let _ = node_b;
            let node_b = self.meta(node_phys)?;
            self.dx_store(dir, node_phys, node_b, node_off, &entries)?;
        }
        Ok(false)
    }

    /// Turns the full one-block directory `dir` into an htree holding
    /// `name` too: its entries and the new one are sorted by hash into two
    /// new leaves (logical blocks 1 and 2), and block 0 becomes the dx_root
    /// (`.`, `..` spanning the block, the root info, two index entries).
    /// This is the layout Linux's `make_indexed_dir` leaves, so e2fsck and
    /// Linux read it as their own. `Ok(false)` (nothing changed) when the
    /// volume's default hash is unknown or a half would not fit a leaf.
    /// Stores `dir`.
    pub(crate) fn make_indexed(&mut self, dir: &mut Inode, name: &[u8], ino: u32, ftype: u8) -> Result<bool> {
        let version = self.sb.def_hash_version();
        if version > 2 {
            return Ok(false);
        }
        let hash_version = if self.sb.unsigned_hash() { version + HASH_UNSIGNED_DELTA } else { version };
        let seed = self.sb.hash_seed();
        let map = self.file_map(dir)?;
        let (phys0, b) = self.dir_block(dir, &map.extents, 0)?;
        let entries = self.parse_dir_block(dir, &b, false)?;
        let name_of = |e: &crate::dir::RawEntry| slice(&b, e.off + 8, e.name_len);
        if entries.len() < 2 || name_of(&entries[0]) != b"." || name_of(&entries[1]) != b".." {
            return Ok(false);
        }
        let (dot, dotdot) = (entries[0].ino, entries[1].ino);
        let mut all: Vec<(u32, NewEntry)> = Vec::new();
        all.try_reserve(entries.len()).map_err(|_| Errno::ENOMEM)?;
        for e in &entries[2..] {
            if e.ino != 0 {
                let nm = name_of(e).to_vec();
                let h = dx_hash(&nm, hash_version, &seed).ok_or(Errno::EUCLEAN)?;
                all.push((h, (e.ino, e.file_type, nm)));
            }
        }
        let h = dx_hash(name, hash_version, &seed).ok_or(Errno::EUCLEAN)?;
        all.push((h, (ino, ftype, name.to_vec())));
        let Some((mid, split_hash)) = split_point(&mut all) else {
            return Ok(false);
        };
        let lower: Vec<NewEntry> = all[..mid].iter().map(|x| x.1.clone()).collect();
        let upper: Vec<NewEntry> = all[mid..].iter().map(|x| x.1.clone()).collect();
        let fits = |v: &[NewEntry]| v.iter().map(|e| crate::dir::entry_size(e.2.len())).sum::<usize>() <= self.usable();
        if !fits(&lower) || !fits(&upper) {
            return Ok(false);
        }
        let lb = self.leaf_block(&lower);
        let lower_blk = self.append_dir_block(dir, lb)?;
        let ub = self.leaf_block(&upper);
        let upper_blk = self.append_dir_block(dir, ub)?;
        let bs = self.bs;
        let mut root = alloc::vec![0u8; bs];
        self.write_entry(&mut root, 0, dot, 12, b".", 2);
        self.write_entry(&mut root, 12, dotdot, bs - 12, b"..", 2);
        // dx_root_info: reserved zero, hash version, info length 8,
        // indirect levels 0, flags 0.
        set_u8(&mut root, 0x1C, version);
        set_u8(&mut root, 0x1D, 8);
        let tail = if self.sb.metadata_csum() { 8 } else { 0 };
        set_le16(&mut root, ROOT_ENTRIES, ((bs - ROOT_ENTRIES - tail) / 8) as u16);
        self.dx_store(dir, phys0, root, ROOT_ENTRIES, &[(0, lower_blk), (split_hash, upper_blk)])?;
        dir.set_flags(dir.flags() | FL_INDEX);
        self.store_inode(dir)?;
        Ok(true)
    }

    /// Rewrites the index blocks of `dir` as empty linear blocks (each
    /// with a leaf tail) and clears the index flag; the leaves stay as
    /// they are. Stores `dir`.
    pub(crate) fn deindex(&mut self, dir: &mut Inode) -> Result<()> {
        let map = self.file_map(dir)?;
        let (_, levels, root) = self.dx_root(dir, &map.extents)?;
        let mut nodes = Vec::new();
        if levels > 0 {
            let mut frontier: Vec<u32> = root.entries.iter().map(|e| e.1).collect();
            for depth in 1..=levels {
                let mut next = Vec::new();
                for blk in frontier {
                    nodes.push(blk);
                    if depth < levels {
                        let (_, b) = self.dir_block(dir, &map.extents, blk)?;
                        let lv = self.dx_entries(dir, &b, NODE_ENTRIES)?;
                        next.extend(lv.entries.iter().map(|e| e.1));
                    }
                }
                frontier = next;
            }
        }
        // Root: keep "." and "..", end ".." before the tail.
        let (phys, b) = self.dir_block(dir, &map.extents, 0)?;
        let dot = le32(&b, 0);
        let dotdot = le32(&b, 12);
        let nb = self.new_dir_block(dot, dotdot);
        self.put_dir_block(dir, phys, nb)?;
        for blk in nodes {
            let (phys, _) = self.dir_block(dir, &map.extents, blk)?;
            let mut nb = alloc::vec![0u8; self.bs];
            let usable = if self.sb.metadata_csum() { self.bs - 12 } else { self.bs };
            set_le16(&mut nb, 4, usable as u16);
            self.put_dir_block(dir, phys, nb)?;
        }
        dir.set_flags(dir.flags() & !FL_INDEX);
        self.store_inode(dir)
    }
}

/// Sorts a full leaf's entries by hash and picks where to split them: the
/// middle, and the hash the upper leaf starts at (made odd when the upper
/// leaf continues a run of equal hashes, so a lookup knows to look in
/// both); `None` with fewer than two entries.
fn split_point(all: &mut [(u32, NewEntry)]) -> Option<(usize, u32)> {
    if all.len() < 2 {
        return None;
    }
    all.sort_by_key(|x| x.0);
    let mid = all.len() / 2;
    let mut split_hash = all[mid].0;
    if all[mid - 1].0 == split_hash {
        split_hash |= 1;
    }
    Some((mid, split_hash))
}
