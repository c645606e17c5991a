//! Directory blocks: entry parsing (every `rec_len` and `name_len`
//! checked), the checksummed leaf tail, linear iteration and lookup, adding
//! an entry (splitting slack space or appending a block) and removing one.

use crate::bytes::*;
use crate::extent::{normalize, Extent};
use crate::inode::{Inode, FL_INDEX};
use crate::superblock::{COMPAT_DIR_INDEX, INCOMPAT_FILETYPE};
use crate::{BlockDevice, Ext4, Result};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

const TAIL_SIZE: usize = 12;
const TAIL_TYPE: u8 = 0xDE;

/// One name in a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u32,
    /// The dirent file type code (1 regular, 2 directory, 7 symlink, ...;
    /// 0 when the volume does not record types).
    pub file_type: u8,
    pub name: Vec<u8>,
}

/// An entry to lay out: (inode, file type, name).
pub(crate) type NewEntry = (u32, u8, Vec<u8>);

/// The last lookup's answer (`Ext4::lookup_memo`), valid while
/// `Ext4::meta_gen` is still `gen`.
pub(crate) struct LookupMemo {
    pub dir: u32,
    pub name: Vec<u8>,
    pub gen: u64,
    /// (inode, logical block holding the entry), or `None`: absent.
    pub found: Option<(u32, u32)>,
    /// When absent: where `add_entry` would put the name, (logical block,
    /// offset of the entry whose slack takes it), seen by the same walk.
    pub slot: Option<(u32, usize)>,
}

/// What a walk of one directory block for a name saw: (inode, offset)
/// of the name, and the offset of the first entry with room for it.
pub(crate) type BlockProbe = (Option<(u32, usize)>, Option<usize>);

/// What a walk of a directory for one name saw: the name, and where a
/// new entry of that length fits.
#[derive(Clone, Copy, Default)]
pub(crate) struct Probe {
    /// (inode, logical block, offset of the entry).
    pub found: Option<(u32, u32, usize)>,
    /// (logical block, offset of the entry with room after it): the first
    /// in the order `add_entry` tries them.
    pub slot: Option<(u32, usize)>,
}

/// A parsed entry with its place in the block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawEntry {
    pub off: usize,
    pub ino: u32,
    pub rec_len: usize,
    pub name_len: usize,
    pub file_type: u8,
}

pub(crate) fn entry_size(name_len: usize) -> usize {
    (8 + name_len + 3) & !3
}

impl<D: BlockDevice> Ext4<D> {
    fn has_tail(&self, b: &[u8]) -> bool {
        let t = self.bs - TAIL_SIZE;
        le32(b, t) == 0 && le16(b, t + 4) == TAIL_SIZE as u16 && u8_at(b, t + 6) == 0 && u8_at(b, t + 7) == TAIL_TYPE
    }

    fn leaf_csum(&self, dir: &Inode, b: &[u8]) -> u32 {
        self.dev.crc32c(dir.csum_seed(self.csum_seed), slice(b, 0, self.bs - TAIL_SIZE))
    }

    /// Parses the entries of a directory block; `indexed_node` accepts an
    /// htree block that carries no leaf tail.
    pub(crate) fn parse_dir_block(&self, dir: &Inode, b: &[u8], allow_no_tail: bool) -> Result<Vec<RawEntry>> {
        let _ = dir;
        let mut out = Vec::new();
        // A leaf of short names holds a few hundred entries: one
        // allocation instead of a growth per doubling.
        out.try_reserve(self.bs / 32).map_err(|_| Errno::ENOMEM)?;
        self.walk_dir_block(b, allow_no_tail, |e| out.push(e))?;
        Ok(out)
    }

    /// Calls `f` with every entry of a directory block in order, after
    /// checking it (a corrupt entry anywhere fails the whole block, as
    /// `parse_dir_block`), without collecting them.
    pub(crate) fn walk_dir_block(&self, b: &[u8], allow_no_tail: bool, mut f: impl FnMut(RawEntry)) -> Result<()> {
        let mut limit = self.bs;
        if self.sb.metadata_csum() {
            if self.has_tail(b) {
                // The tail's checksum was checked by `dir_block`.
                limit -= TAIL_SIZE;
            } else if !allow_no_tail {
                return Err(Errno::EUCLEAN);
            }
        }
        let typed = self.sb.has_incompat(INCOMPAT_FILETYPE);
        let inodes = self.sb.inodes_count();
        let mut off = 0;
        while off < limit {
            let rec_len = le16(b, off + 4) as usize;
            let name_len = u8_at(b, off + 6) as usize;
            if rec_len < 12 || !rec_len.is_multiple_of(4) || off + rec_len > limit || 8 + name_len > rec_len {
                // A dx_root's ".." spans to the block end past the tail.
                if allow_no_tail && off + rec_len == self.bs && rec_len >= 12 && 8 + name_len <= rec_len {
                    // fall through with this entry
                } else {
                    return Err(Errno::EUCLEAN);
                }
            }
            let ino = le32(b, off);
            if ino > inodes || (!typed && u8_at(b, off + 7) != 0) {
                return Err(Errno::EUCLEAN);
            }
            let file_type = if typed { u8_at(b, off + 7) } else { 0 };
            f(RawEntry { off, ino, rec_len, name_len, file_type });
            off += rec_len;
        }
        Ok(())
    }

    /// Reads a whole directory block of `dir` by logical number. A leaf's
    /// tail checksum is checked the first time the cached copy is used
    /// (`verified` remembers it until the copy changes or leaves the
    /// cache), not on every access.
    pub(crate) fn dir_block(&mut self, dir: &Inode, extents: &[Extent], lblk: u32) -> Result<(u64, Vec<u8>)> {
        let phys = self.dir_block_ref(dir, extents, lblk)?;
        Ok((phys, self.cached(phys)?.to_vec()))
    }

    /// As [`dir_block`](Self::dir_block), for readers: the block is left
    /// in the cache (read it with [`cached`](Self::cached)) instead of
    /// copied out.
    pub(crate) fn dir_block_ref(&mut self, dir: &Inode, extents: &[Extent], lblk: u32) -> Result<u64> {
        let e = crate::extent::find(extents, lblk).ok_or(Errno::EUCLEAN)?;
        if e.uninit {
            return Err(Errno::EUCLEAN);
        }
        let phys = e.phys + (lblk - e.logical) as u64;
        self.meta_ref(phys)?;
        if self.sb.metadata_csum() && !self.verified.contains(&phys) {
            let b = self.cached(phys)?;
            if self.has_tail(b) {
                if self.leaf_csum(dir, b) != le32(b, self.bs - 4) {
                    return Err(Errno::EUCLEAN);
                }
                self.verified.insert(phys);
            }
        }
        Ok(phys)
    }

    pub(crate) fn dir_inode(&mut self, ino: u32) -> Result<Inode> {
        let d = self.live_inode(ino)?;
        if !d.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        // Removed but still open (an orphan): empty and closed to new
        // names, as Linux's dead directories.
        if d.links() == 0 {
            return Err(Errno::ENOENT);
        }
        Ok(d)
    }

    fn dir_blocks(&mut self, dir: &Inode) -> Result<(Vec<Extent>, u32)> {
        let map = self.file_map(dir)?;
        let n = dir.size() / self.bs as u64;
        // A directory cannot have more blocks than the volume: this bounds
        // every scan of a corrupt one.
        if !dir.size().is_multiple_of(self.bs as u64) || n > self.sb.blocks_count().min(u32::MAX as u64) {
            return Err(Errno::EUCLEAN);
        }
        Ok((map.extents, n as u32))
    }

    pub(crate) fn is_indexed(&self, dir: &Inode) -> bool {
        dir.flags() & FL_INDEX != 0 && self.sb.has_compat(COMPAT_DIR_INDEX)
    }

    /// Every name in directory `ino`, `.` and `..` included.
    pub fn read_dir(&mut self, ino: u32) -> Result<Vec<DirEntry>> {
        let dir = self.dir_inode(ino)?;
        let (extents, n) = self.dir_blocks(&dir)?;
        let indexed = self.is_indexed(&dir);
        let mut out = Vec::new();
        for l in 0..n {
            if crate::extent::find(&extents, l).is_none() {
                continue;
            }
            let (_, b) = self.dir_block(&dir, &extents, l)?;
            for e in self.parse_dir_block(&dir, &b, indexed)? {
                if e.ino != 0 {
                    out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    out.push(DirEntry {
                        ino: e.ino,
                        file_type: e.file_type,
                        name: slice(&b, e.off + 8, e.name_len).to_vec(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Looks `name` up in directory `dir_ino`: through the htree index
    /// when there is one, else by a linear scan.
    pub fn lookup(&mut self, dir_ino: u32, name: &[u8]) -> Result<u32> {
        match self.find_name(dir_ino, name)? {
            Some((ino, _)) => Ok(ino),
            None => Err(Errno::ENOENT),
        }
    }

    /// `lookup`, with the logical block holding the name: `None` when the
    /// name is absent. The answer is remembered until any metadata block
    /// changes (`lookup_memo`).
    pub(crate) fn find_name(&mut self, dir_ino: u32, name: &[u8]) -> Result<Option<(u32, u32)>> {
        if name.is_empty() || name.len() > 255 {
            return Err(if name.is_empty() { Errno::ENOENT } else { Errno::ENAMETOOLONG });
        }
        if let Some(found) = self.memo_of(dir_ino, name) {
            return Ok(found);
        }
        let dir = self.dir_inode(dir_ino)?;
        self.find_in_dir(&dir, name)
    }

    fn memo_of(&self, dir: u32, name: &[u8]) -> Option<Option<(u32, u32)>> {
        let m = self.lookup_memo.as_ref()?;
        (m.dir == dir && m.gen == self.meta_gen && m.name == name).then_some(m.found)
    }

    /// Checks that `name` is absent from `dir` (EEXIST otherwise) and
    /// returns where [`add_entry_at`](Self::add_entry_at) may put it, as
    /// long as no block of `dir` changes in between: the walk that found
    /// the name absent also found the room, so a create walks the leaf
    /// once, as Linux's `ext4_add_entry` after its lookup.
    pub(crate) fn absent_with_slot(&mut self, dir: &Inode, name: &[u8]) -> Result<Option<(u32, usize)>> {
        if name.is_empty() || name.len() > 255 {
            return Err(if name.is_empty() { Errno::ENOENT } else { Errno::ENAMETOOLONG });
        }
        if self.find_in_dir(dir, name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        Ok(self
            .lookup_memo
            .as_ref()
            .filter(|m| m.dir == dir.ino && m.gen == self.meta_gen && m.name == name)
            .and_then(|m| m.slot))
    }

    /// [`find_name`](Self::find_name) in the loaded directory `dir`.
    fn find_in_dir(&mut self, dir: &Inode, name: &[u8]) -> Result<Option<(u32, u32)>> {
        if let Some(found) = self.memo_of(dir.ino, name) {
            return Ok(found);
        }
        let (extents, n) = self.dir_blocks(dir)?;
        let probe = if self.is_indexed(dir) && name != b"." && name != b".." {
            self.htree_lookup(dir, &extents, name)?
        } else {
            self.linear_find(dir, &extents, n, name)?
        };
        let found = probe.found.map(|(ino, l, _)| (ino, l));
        let mut memo_name = Vec::new();
        if memo_name.try_reserve(name.len()).is_ok() {
            memo_name.extend_from_slice(name);
            let slot = if found.is_none() { probe.slot } else { None };
            self.lookup_memo = Some(LookupMemo { dir: dir.ino, name: memo_name, gen: self.meta_gen, found, slot });
        }
        Ok(found)
    }

    /// `name` and the first room for it, scanning every block.
    pub(crate) fn linear_find(&mut self, dir: &Inode, extents: &[Extent], n: u32, name: &[u8]) -> Result<Probe> {
        let indexed = self.is_indexed(dir);
        let mut probe = Probe::default();
        for l in 0..n {
            if crate::extent::find(extents, l).is_none() {
                continue;
            }
            let (found, slot) = self.find_in_block(dir, extents, l, name, indexed)?;
            if probe.slot.is_none() {
                probe.slot = slot.map(|off| (l, off));
            }
            if let Some((ino, off)) = found {
                probe.found = Some((ino, l, off));
                return Ok(probe);
            }
        }
        Ok(probe)
    }

    pub(crate) fn find_in_block(
        &mut self,
        dir: &Inode,
        extents: &[Extent],
        l: u32,
        name: &[u8],
        allow_no_tail: bool,
    ) -> Result<BlockProbe> {
        let phys = self.dir_block_ref(dir, extents, l)?;
        let b = self.cached(phys)?;
        let mut found = None;
        // Room for `name` after an entry, as `insert_into_block` looks for
        // it (only in a leaf: not in a walk that accepts index blocks).
        let need = entry_size(name.len());
        let mut slot = None;
        let leaf = !allow_no_tail;
        // The first and last bytes are compared before the whole name: a leaf of same-length names
        // (`0`..`9999`) called `memcmp` for nearly every entry, a third
        // of a create's scan.
        let (first, last) = (name.first().copied().unwrap_or(0), name.last().copied().unwrap_or(0));
        self.walk_dir_block(b, allow_no_tail, |e| {
            if found.is_none()
                && e.ino != 0
                && e.name_len == name.len()
                && (name.is_empty() || (u8_at(b, e.off + 8) == first && u8_at(b, e.off + 7 + e.name_len) == last))
                && slice(b, e.off + 8, e.name_len) == name
            {
                found = Some((e.ino, e.off));
            }
            if slot.is_none() && leaf {
                let used = if e.ino == 0 { 0 } else { entry_size(e.name_len) };
                if e.rec_len - used >= need {
                    slot = Some(e.off);
                }
            }
        })?;
        Ok((found, slot))
    }

    /// Writes a directory leaf block back with its tail checksum.
    pub(crate) fn put_dir_block(&mut self, dir: &Inode, phys: u64, mut b: Vec<u8>) -> Result<()> {
        if self.sb.metadata_csum() {
            let t = self.bs - TAIL_SIZE;
            set_le32(&mut b, t, 0);
            set_le16(&mut b, t + 4, TAIL_SIZE as u16);
            set_u8(&mut b, t + 6, 0);
            set_u8(&mut b, t + 7, TAIL_TYPE);
            let c = self.leaf_csum(dir, &b);
            set_le32(&mut b, self.bs - 4, c);
        }
        self.put_meta(phys, b)?;
        if self.sb.metadata_csum() {
            self.verified.insert(phys);
        }
        Ok(())
    }

    pub(crate) fn usable(&self) -> usize {
        if self.sb.metadata_csum() {
            self.bs - TAIL_SIZE
        } else {
            self.bs
        }
    }

    pub(crate) fn write_entry(&self, b: &mut [u8], off: usize, ino: u32, rec_len: usize, name: &[u8], ftype: u8) {
        set_le32(b, off, ino);
        set_le16(b, off + 4, rec_len as u16);
        set_u8(b, off + 6, name.len() as u8);
        let t = if self.sb.has_incompat(INCOMPAT_FILETYPE) { ftype } else { 0 };
        set_u8(b, off + 7, t);
        put(b, off + 8, name);
    }

    /// A fresh first block for a new directory: `.` and `..`.
    pub(crate) fn new_dir_block(&self, ino: u32, parent: u32) -> Vec<u8> {
        let mut b = vec![0u8; self.bs];
        self.write_entry(&mut b, 0, ino, 12, b".", 2);
        self.write_entry(&mut b, 12, parent, self.usable() - 12, b"..", 2);
        b
    }

    /// Adds `name -> ino` to `dir` (the caller checked it is absent) and
    /// stores `dir`.
    pub(crate) fn add_entry(&mut self, dir: &mut Inode, name: &[u8], ino: u32, ftype: u8) -> Result<()> {
        self.add_entry_at(dir, name, ino, ftype, None)
    }

    /// [`add_entry`](Self::add_entry) with the room for the name that
    /// [`absent_with_slot`](Self::absent_with_slot) found, if no block
    /// of `dir` changed since: the leaf is not walked again.
    pub(crate) fn add_entry_at(
        &mut self,
        dir: &mut Inode,
        name: &[u8],
        ino: u32,
        ftype: u8,
        mut slot: Option<(u32, usize)>,
    ) -> Result<()> {
        if name.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        if self.is_indexed(dir) {
            if self.htree_add(dir, name, ino, ftype, slot)? {
                return Ok(());
            }
            self.deindex(dir)?;
            slot = None;
        }
        let (extents, n) = self.dir_blocks(dir)?;
        // The slot is in the first block with room: the blocks before it
        // have none.
        let first = slot.map_or(0, |s| s.0);
        for l in first..n {
            if crate::extent::find(&extents, l).is_none() {
                continue;
            }
            let (phys, mut b) = self.dir_block(dir, &extents, l)?;
            let at = slot.take().filter(|s| s.0 == l).map(|s| s.1);
            if self.insert_into_block_at(dir, &mut b, at, name, ino, ftype)? {
                return self.put_dir_block(dir, phys, b);
            }
        }
        // No room. A full first block becomes an index over two leaves,
        // as Linux does, so that the directory stays fast as it grows.
        if n == 1 && self.sb.has_compat(COMPAT_DIR_INDEX) && self.make_indexed(dir, name, ino, ftype)? {
            return Ok(());
        }
        let mut b = vec![0u8; self.bs];
        let usable = self.usable();
        self.write_entry(&mut b, 0, ino, usable, name, ftype);
        self.append_dir_block(dir, b)?;
        Ok(())
    }

    /// As [`insert_into_block`](Self::insert_into_block), at the entry at
    /// `at` (found by the walk that checked the name absent, in this same
    /// unchanged block) when it still has the room; else by a walk.
    pub(crate) fn insert_into_block_at(
        &self,
        dir: &Inode,
        b: &mut [u8],
        at: Option<usize>,
        name: &[u8],
        ino: u32,
        ftype: u8,
    ) -> Result<bool> {
        if let Some(off) = at {
            let need = entry_size(name.len());
            let (e_ino, rec_len, name_len) = (le32(b, off), le16(b, off + 4) as usize, u8_at(b, off + 6) as usize);
            let used = if e_ino == 0 { 0 } else { entry_size(name_len) };
            // The same checks as the walk's, for this one entry.
            if rec_len >= 12
                && rec_len.is_multiple_of(4)
                && off + rec_len <= self.usable()
                && 8 + name_len <= rec_len
                && rec_len - used >= need
            {
                if e_ino == 0 {
                    self.write_entry(b, off, ino, rec_len, name, ftype);
                } else {
                    set_le16(b, off + 4, used as u16);
                    self.write_entry(b, off + used, ino, rec_len - used, name, ftype);
                }
                return Ok(true);
            }
        }
        self.insert_into_block(dir, b, name, ino, ftype)
    }

    /// Puts `name` into the slack of a leaf block, if it fits.
    pub(crate) fn insert_into_block(
        &self,
        dir: &Inode,
        b: &mut [u8],
        name: &[u8],
        ino: u32,
        ftype: u8,
    ) -> Result<bool> {
        let _ = dir;
        let need = entry_size(name.len());
        let mut slot = None;
        self.walk_dir_block(b, false, |e| {
            let used = if e.ino == 0 { 0 } else { entry_size(e.name_len) };
            if slot.is_none() && e.rec_len - used >= need {
                slot = Some((e, used));
            }
        })?;
        if let Some((e, used)) = slot {
            if e.ino == 0 {
                self.write_entry(b, e.off, ino, e.rec_len, name, ftype);
            } else {
                set_le16(b, e.off + 4, used as u16);
                self.write_entry(b, e.off + used, ino, e.rec_len - used, name, ftype);
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// Appends leaf block `b` to `dir` (stored); returns its logical number.
    pub(crate) fn append_dir_block(&mut self, dir: &mut Inode, b: Vec<u8>) -> Result<u32> {
        let map = self.file_map(dir)?;
        let n = u32::try_from(dir.size() / self.bs as u64).map_err(|_| Errno::EFBIG)?;
        let goal = map.extents.last().map_or(0, |e| e.phys + e.len as u64);
        let (phys, _) = self.alloc_blocks(goal, 1)?;
        self.put_dir_block(dir, phys, b)?;
        let mut extents = map.extents;
        extents.push(Extent { logical: n, len: 1, phys, uninit: false });
        normalize(&mut extents);
        let used = self.write_map(dir, &extents, &map.tree_blocks)?;
        self.set_block_count(dir, &extents, used);
        dir.set_size(dir.size() + self.bs as u64);
        self.store_inode(dir)?;
        Ok(n)
    }

    /// Lays `entries` (inode, type, name) out as a fresh leaf block.
    pub(crate) fn leaf_block(&self, entries: &[NewEntry]) -> Vec<u8> {
        let mut b = vec![0u8; self.bs];
        let mut off = 0;
        for (k, (ino, t, name)) in entries.iter().enumerate() {
            let len = if k + 1 == entries.len() { self.usable() - off } else { entry_size(name.len()) };
            self.write_entry(&mut b, off, *ino, len, name, *t);
            off += len;
        }
        if entries.is_empty() {
            set_le16(&mut b, 4, self.usable() as u16);
        }
        b
    }

    /// Removes `name` from `dir`; returns the inode it named.
    pub(crate) fn remove_entry(&mut self, dir: &Inode, name: &[u8]) -> Result<u32> {
        let (ino, l) = self.find_in_dir(dir, name)?.ok_or(Errno::ENOENT)?;
        let (extents, _) = self.dir_blocks(dir)?;
        let (phys, mut b) = self.dir_block(dir, &extents, l)?;
        // The entry and the one before it, which absorbs its space.
        let (mut prev, mut hit) = (None::<RawEntry>, None::<(Option<RawEntry>, RawEntry)>);
        self.walk_dir_block(&b, false, |e| {
            if hit.is_none() {
                if e.ino == ino && e.name_len == name.len() && slice(&b, e.off + 8, e.name_len) == name {
                    hit = Some((prev, e));
                }
                prev = Some(e);
            }
        })?;
        let (before, e) = hit.ok_or(Errno::EUCLEAN)?;
        match before {
            None => set_le32(&mut b, e.off, 0),
            Some(p) => set_le16(&mut b, p.off + 4, (p.rec_len + e.rec_len) as u16),
        }
        self.put_dir_block(dir, phys, b)?;
        Ok(ino)
    }

    /// Points `..` of directory `dir` at `parent`.
    pub(crate) fn set_dotdot(&mut self, dir: &mut Inode, parent: u32) -> Result<()> {
        if self.is_indexed(dir) {
            self.deindex(dir)?;
        }
        let (extents, _) = self.dir_blocks(dir)?;
        let (phys, mut b) = self.dir_block(dir, &extents, 0)?;
        let entries = self.parse_dir_block(dir, &b, false)?;
        let dd = entries.get(1).filter(|e| slice(&b, e.off + 8, e.name_len) == b"..").ok_or(Errno::EUCLEAN)?;
        set_le32(&mut b, dd.off, parent);
        self.put_dir_block(dir, phys, b)
    }

    /// Whether a directory holds nothing but `.` and `..`.
    pub(crate) fn dir_is_empty(&mut self, dir: &Inode) -> Result<bool> {
        let (extents, n) = self.dir_blocks(dir)?;
        let indexed = self.is_indexed(dir);
        for l in 0..n {
            if crate::extent::find(&extents, l).is_none() {
                continue;
            }
            let (_, b) = self.dir_block(dir, &extents, l)?;
            for e in self.parse_dir_block(dir, &b, indexed)? {
                let nm = slice(&b, e.off + 8, e.name_len);
                if e.ino != 0 && nm != b"." && nm != b".." {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
