//! The mounted file system: mount (superblock and descriptor validation,
//! journal replay), the metadata block cache with its dirty set, inode
//! load and store, `stat`/`statfs`, and the commit that turns the dirty set
//! into a journal transaction.

use crate::bytes::*;
use crate::checksum::crc32c;
use crate::group::GroupDesc;
use crate::inode::{Inode, TimeField, Timestamp};
use crate::journal::Journal;
use crate::journal_write::CommitTail;
use crate::superblock::*;
use crate::{BlockDevice, Result, SECTOR_SIZE};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// How many clean metadata blocks the cache keeps before dropping them.
pub(crate) const CACHE_CLEAN_LIMIT: usize = 4096;

#[derive(Clone, Copy, Debug, Default)]
pub struct MountOptions {
    pub read_only: bool,
    /// The time of the mount: the deletion time of orphans freed by it.
    pub now: Timestamp,
}

/// What `stat` needs from an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub ino: u32,
    pub mode: u16,
    pub nlink: u16,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Allocated space in 512-byte sectors, metadata blocks included.
    pub blocks: u64,
    pub atime: Timestamp,
    pub mtime: Timestamp,
    pub ctime: Timestamp,
    pub crtime: Timestamp,
    pub generation: u32,
    pub flags: u32,
    /// Device number of a character or block special file.
    pub rdev: u32,
}

/// What `statfs` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatFs {
    pub block_size: u32,
    pub blocks: u64,
    pub free_blocks: u64,
    pub available_blocks: u64,
    pub inodes: u64,
    pub free_inodes: u64,
    pub name_max: u32,
}

pub struct Ext4<D: BlockDevice> {
    pub(crate) dev: D,
    pub(crate) sb: Superblock,
    pub(crate) groups: Vec<GroupDesc>,
    pub(crate) bs: usize,
    pub(crate) csum_seed: u32,
    pub(crate) read_only: bool,
    pub(crate) cache: BTreeMap<u64, Vec<u8>>,
    pub(crate) dirty: BTreeSet<u64>,
    /// Cached directory leaves whose tail checksum was checked (or
    /// computed): dropped when the copy changes or leaves the cache.
    pub(crate) verified: BTreeSet<u64>,
    pub(crate) dirty_groups: BTreeSet<u32>,
    /// Bitmaps changed since the last commit, (group, inode bitmap): their
    /// checksums are computed once, at the commit.
    pub(crate) bitmap_csum_pending: BTreeSet<(u32, bool)>,
    pub(crate) sb_dirty: bool,
    /// Blocks freed since the last commit: not reused until it is durable,
    /// so a crash cannot leave an old file pointing at new data.
    pub(crate) freed: BTreeSet<u64>,
    /// Blocks freed by the transaction whose tail is being written
    /// (`commit_start` .. `commit_end`): not reused before it is durable.
    pub(crate) committing_freed: BTreeSet<u64>,
    /// A commit's tail is being written by the caller.
    pub(crate) inflight: bool,
    /// Commits completed and started since the mount (see
    /// `running_commit`).
    pub(crate) commits: u64,
    pub(crate) commits_started: u64,
    pub(crate) journal: Option<Journal>,
    /// Home blocks in the journal's log, not yet checkpointed: the cache
    /// keeps them (their newest committed copies) until the checkpoint.
    pub(crate) logged: BTreeSet<u64>,
    pub(crate) gdt_start: u64,
    /// The journal replayed at mount: transactions and blocks.
    pub replayed: (u32, u32),
    /// Open counts of inodes (see `pin`).
    pub(crate) pins: BTreeMap<u32, u32>,
    pub(crate) undo: crate::op::UndoLog,
    /// Blocks reserved for data not yet allocated (see `reserve`).
    pub(crate) delalloc: u64,
    /// A writeback is allocating: it may use the metadata pool.
    pub(crate) writing_back: bool,
    /// Bumped by every change of a cached metadata block (and a rollback
    /// or replay): what was read at one value still holds at the same.
    pub(crate) meta_gen: u64,
    /// The last name looked up: (directory, name, `meta_gen` then, the
    /// inode and its leaf block, or `None` for absent). A create looks the
    /// name up after the VFS did, an unlink four times; nothing changed in
    /// between, so the walk is done once.
    pub(crate) lookup_memo: Option<crate::dir::LookupMemo>,
    /// The last few `stat` answers, each with the `meta_gen` it holds for.
    pub(crate) stat_memo: [Option<(u64, Stat)>; STAT_MEMO],
    pub(crate) stat_memo_next: usize,
}

/// How many `stat` answers are kept: a path walk asks about the few
/// inodes it passes, over and over.
const STAT_MEMO: usize = 4;

impl<D: BlockDevice> Ext4<D> {
    /// Mounts the volume on `dev`: validates the superblock and group
    /// descriptors, refuses unknown incompat features, makes unknown
    /// ro_compat features read-only, and replays a journal left behind.
    pub fn mount(mut dev: D, opts: MountOptions) -> Result<Self> {
        let dev_bytes = dev.sector_count().checked_mul(SECTOR_SIZE as u64).ok_or(Errno::EINVAL)?;
        let mut raw = vec![0u8; SUPERBLOCK_SIZE];
        dev.read(SUPERBLOCK_OFFSET / SECTOR_SIZE as u64, &mut raw)?;
        let sb = Superblock::parse(raw, dev_bytes)?;
        let unknown_incompat = sb.feature_incompat() & !INCOMPAT_SUPPORTED;
        if unknown_incompat != 0 || sb.has_incompat(INCOMPAT_JOURNAL_DEV) {
            return Err(Errno::EINVAL);
        }
        let mut read_only = opts.read_only || dev.is_read_only();
        if sb.feature_ro_compat() & !RO_COMPAT_SUPPORTED != 0 || sb.has_ro_compat(RO_COMPAT_READONLY) {
            read_only = true;
        }
        if sb.has_incompat(INCOMPAT_RECOVER) && !sb.has_compat(COMPAT_HAS_JOURNAL) {
            return Err(Errno::EUCLEAN);
        }
        let csum_seed = if sb.has_incompat(INCOMPAT_CSUM_SEED) {
            sb.checksum_seed()
        } else if sb.metadata_csum() {
            crc32c(!0, &sb.uuid())
        } else {
            0
        };
        let bs = sb.block_size();
        let gdt_start = sb.first_data_block() as u64 + 1;
        let mut fs = Ext4 {
            dev,
            sb,
            groups: Vec::new(),
            bs,
            csum_seed,
            read_only,
            cache: BTreeMap::new(),
            dirty: BTreeSet::new(),
            verified: BTreeSet::new(),
            dirty_groups: BTreeSet::new(),
            bitmap_csum_pending: BTreeSet::new(),
            sb_dirty: false,
            freed: BTreeSet::new(),
            committing_freed: BTreeSet::new(),
            inflight: false,
            commits: 0,
            commits_started: 0,
            journal: None,
            logged: BTreeSet::new(),
            gdt_start,
            replayed: (0, 0),
            pins: BTreeMap::new(),
            undo: Default::default(),
            delalloc: 0,
            writing_back: false,
            meta_gen: 0,
            lookup_memo: None,
            stat_memo: [None; STAT_MEMO],
            stat_memo_next: 0,
        };
        fs.load_groups()?;
        if fs.sb.has_compat(COMPAT_HAS_JOURNAL) {
            let journal = Journal::load(&mut fs)?;
            fs.journal = Some(journal);
            if fs.sb.has_incompat(INCOMPAT_RECOVER) {
                if fs.dev.is_read_only() {
                    // Linux too refuses: the volume cannot be read
                    // consistently without replaying.
                    return Err(Errno::EROFS);
                }
                fs.replay_journal()?;
            }
        } else if fs.sb.has_incompat(INCOMPAT_RECOVER) {
            return Err(Errno::EUCLEAN);
        }
        if !fs.read_only {
            // Mounted: a crash from now on needs the journal looked at.
            if fs.journal.is_some() {
                let inc = fs.sb.feature_incompat() | INCOMPAT_RECOVER;
                fs.sb.set_feature_incompat(inc);
            }
            fs.sb.set_mnt_count(fs.sb.mnt_count().wrapping_add(1));
            fs.write_superblock_now()?;
            if fs.sb.last_orphan() != 0 {
                fs.process_orphans(opts.now)?;
            }
        }
        Ok(fs)
    }

    /// Commits everything, clears the needs-recovery flag and returns the
    /// device.
    pub fn unmount(mut self) -> Result<D> {
        if !self.read_only {
            self.commit()?;
            self.checkpoint()?;
            // The emptied log is durable before the flag says so.
            self.dev.flush()?;
            let inc = self.sb.feature_incompat() & !INCOMPAT_RECOVER;
            self.sb.set_feature_incompat(inc);
            self.write_superblock_now()?;
        }
        Ok(self.dev)
    }

    /// Gives up the file system without writing anything more (what a
    /// power cut does): for crash tests.
    pub fn into_device(self) -> D {
        self.dev
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }
    pub fn block_size(&self) -> usize {
        self.bs
    }
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    pub(crate) fn load_groups(&mut self) -> Result<()> {
        let count = self.sb.group_count();
        let ds = self.sb.desc_size();
        let per_block = self.bs / ds;
        let gdt_blocks = (count as usize).div_ceil(per_block);
        let blocks = self.sb.blocks_count();
        let itable_blocks = (self.sb.inodes_per_group() as u64 * self.sb.inode_size() as u64).div_ceil(self.bs as u64);
        let first = self.sb.first_data_block() as u64;
        let mut groups = Vec::new();
        groups.try_reserve(count as usize).map_err(|_| Errno::ENOMEM)?;
        for b in 0..gdt_blocks {
            let blk = self.read_block_uncached(self.gdt_start + b as u64)?;
            for i in 0..per_block {
                if groups.len() == count as usize {
                    break;
                }
                let g = groups.len() as u32;
                let gd = GroupDesc { raw: slice(&blk, i * ds, ds).to_vec() };
                if let Some(c) = gd.compute_checksum(&self.sb, self.csum_seed, g) {
                    if c != gd.checksum() {
                        return Err(Errno::EUCLEAN);
                    }
                }
                let in_fs = |b: u64, n: u64| b >= first && b.checked_add(n).is_some_and(|e| e <= blocks);
                if !in_fs(gd.block_bitmap(), 1)
                    || !in_fs(gd.inode_bitmap(), 1)
                    || !in_fs(gd.inode_table(), itable_blocks)
                {
                    return Err(Errno::EUCLEAN);
                }
                if gd.free_blocks() > self.sb.blocks_per_group() || gd.free_inodes() > self.sb.inodes_per_group() {
                    return Err(Errno::EUCLEAN);
                }
                groups.push(gd);
            }
        }
        self.groups = groups;
        Ok(())
    }

    // ---- Block I/O -------------------------------------------------------

    pub(crate) fn sector_of(&self, blk: u64) -> Result<u64> {
        if blk >= self.sb.blocks_count() {
            return Err(Errno::EUCLEAN);
        }
        blk.checked_mul((self.bs / SECTOR_SIZE) as u64).ok_or(Errno::EUCLEAN)
    }

    pub(crate) fn read_block_uncached(&mut self, blk: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(self.bs).map_err(|_| Errno::ENOMEM)?;
        buf.resize(self.bs, 0);
        let s = self.sector_of(blk)?;
        self.dev.read(s, &mut buf)?;
        Ok(buf)
    }

    /// Reads file data: the dirty metadata copy wins (a block can be in the
    /// cache only as metadata, so this is for the journal and directories).
    pub(crate) fn read_data_into(&mut self, blk: u64, buf: &mut [u8]) -> Result<()> {
        if let Some(b) = self.cache.get(&blk) {
            buf.copy_from_slice(slice(b, 0, buf.len()));
            return Ok(());
        }
        let s = self.sector_of(blk)?;
        self.dev.read(s, buf)
    }

    /// Writes file data (or a journal block) straight to the device.
    pub(crate) fn write_data(&mut self, blk: u64, buf: &[u8]) -> Result<()> {
        if self.read_only {
            return Err(Errno::EROFS);
        }
        let s = self.sector_of(blk)?;
        self.dev.write(s, buf)
    }

    /// A metadata block: from the cache, else from the device.
    pub(crate) fn meta(&mut self, blk: u64) -> Result<Vec<u8>> {
        if let Some(b) = self.cache.get(&blk) {
            return Ok(b.clone());
        }
        let b = self.read_block_uncached(blk)?;
        if self.cache.len() >= CACHE_CLEAN_LIMIT {
            let (dirty, logged) = (&self.dirty, &self.logged);
            self.cache.retain(|k, _| dirty.contains(k) || logged.contains(k));
            let cache = &self.cache;
            self.verified.retain(|k| cache.contains_key(k));
        }
        self.cache.insert(blk, b.clone());
        Ok(b)
    }

    /// A metadata block by reference, for readers that need only a part
    /// of it (an inode out of its table block): no 4 KiB copy per access.
    pub(crate) fn meta_ref(&mut self, blk: u64) -> Result<&[u8]> {
        if !self.cache.contains_key(&blk) {
            self.meta(blk)?;
        }
        self.cache.get(&blk).map(|b| b.as_slice()).ok_or(Errno::EUCLEAN)
    }

    /// A block [`meta_ref`](Self::meta_ref) loaded, read again without
    /// the mutable borrow.
    pub(crate) fn cached(&self, blk: u64) -> Result<&[u8]> {
        self.cache.get(&blk).map(|b| b.as_slice()).ok_or(Errno::EUCLEAN)
    }

    /// Replaces a metadata block; it reaches the disk at the next commit.
    pub(crate) fn put_meta(&mut self, blk: u64, data: Vec<u8>) -> Result<()> {
        if self.read_only {
            return Err(Errno::EROFS);
        }
        if blk >= self.sb.blocks_count() || data.len() != self.bs {
            return Err(Errno::EUCLEAN);
        }
        self.undo_block(blk);
        self.verified.remove(&blk);
        self.cache.insert(blk, data);
        self.dirty.insert(blk);
        self.meta_gen += 1;
        Ok(())
    }

    /// Changes a metadata block in place (as `put_meta` with a changed
    /// copy, without copying the block out and back).
    pub(crate) fn modify_meta(&mut self, blk: u64, f: impl FnOnce(&mut [u8])) -> Result<()> {
        if self.read_only {
            return Err(Errno::EROFS);
        }
        if blk >= self.sb.blocks_count() {
            return Err(Errno::EUCLEAN);
        }
        self.meta_ref(blk)?;
        self.undo_block(blk);
        self.verified.remove(&blk);
        let b = self.cache.get_mut(&blk).ok_or(Errno::EUCLEAN)?;
        f(b);
        self.dirty.insert(blk);
        self.meta_gen += 1;
        Ok(())
    }

    /// Drops a block that stopped being metadata (it was freed): a later
    /// data write to it must not be overwritten by a stale copy.
    pub(crate) fn forget_meta(&mut self, blk: u64) {
        self.meta_gen += 1;
        self.undo_block(blk);
        self.verified.remove(&blk);
        self.cache.remove(&blk);
        self.dirty.remove(&blk);
    }

    // ---- Inodes ----------------------------------------------------------

    pub(crate) fn inode_location(&self, ino: u32) -> Result<(u64, usize)> {
        if ino == 0 || ino > self.sb.inodes_count() {
            return Err(Errno::EUCLEAN);
        }
        let ipg = self.sb.inodes_per_group();
        let g = ((ino - 1) / ipg) as usize;
        let idx = ((ino - 1) % ipg) as u64;
        let isz = self.sb.inode_size() as u64;
        let gd = self.groups.get(g).ok_or(Errno::EUCLEAN)?;
        let byte = idx * isz;
        Ok((gd.inode_table() + byte / self.bs as u64, (byte % self.bs as u64) as usize))
    }

    /// Loads inode `ino`, checking its checksum and internal sizes.
    ///
    /// Checksums are checked per cached table block: the first load from
    /// a block checks all its inodes and, when all are good, `verified`
    /// remembers the block until its copy changes other than by
    /// `store_inode` (which keeps it: the inode it writes gets a fresh
    /// checksum). A create or stat checked an inode checksum dozens of
    /// times per call before.
    pub(crate) fn load_inode(&mut self, ino: u32) -> Result<Inode> {
        let (blk, off) = self.inode_location(ino)?;
        let isz = self.sb.inode_size();
        let (seed, bs) = (self.csum_seed, self.bs);
        let check = self.sb.metadata_csum() && !self.verified.contains(&blk);
        let table = self.meta_ref(blk)?;
        let raw = slice(table, off, isz);
        let mut whole_block_good = false;
        if check {
            if !inode_checksum_ok(raw, ino, seed) {
                return Err(Errno::EUCLEAN);
            }
            let first = ino - (off / isz) as u32;
            whole_block_good = table.len() == bs
                && (0..bs / isz).all(|k| inode_checksum_ok(slice(table, k * isz, isz), first + k as u32, seed));
        }
        let inode = Inode { ino, raw: raw.to_vec() };
        if whole_block_good {
            self.verified.insert(blk);
        }
        if isz > 128 {
            let extra = inode.extra_isize();
            if !extra.is_multiple_of(4) || 128 + extra > isz {
                return Err(Errno::EUCLEAN);
            }
        }
        Ok(inode)
    }

    /// Loads an inode that a name or handle refers to: it must be in use.
    pub(crate) fn live_inode(&mut self, ino: u32) -> Result<Inode> {
        let inode = self.load_inode(ino)?;
        if (inode.links() == 0 && !self.is_pinned(ino)) || inode.mode() == 0 {
            return Err(Errno::EUCLEAN);
        }
        Ok(inode)
    }

    pub(crate) fn store_inode(&mut self, inode: &mut Inode) -> Result<()> {
        if self.sb.metadata_csum() {
            inode.update_checksum(self.csum_seed);
        }
        let (blk, off) = self.inode_location(inode.ino)?;
        // Every other inode of a checked block is unchanged, and this one
        // carries its new checksum: the block stays checked.
        let checked = self.verified.contains(&blk);
        self.modify_meta(blk, |b| put(b, off, &inode.raw))?;
        if checked {
            self.verified.insert(blk);
        }
        Ok(())
    }

    /// `stat` of inode `ino`. The VFS asks many times per call (each
    /// path step, permission and size check): the last few answers are
    /// kept (`stat_memo`) while no metadata block changes.
    pub fn stat(&mut self, ino: u32) -> Result<Stat> {
        if let Some(s) = self.stat_memo.iter().flatten().find(|m| m.0 == self.meta_gen && m.1.ino == ino) {
            return Ok(s.1);
        }
        let s = self.stat_uncached(ino)?;
        let slot = self.stat_memo_next % STAT_MEMO;
        self.stat_memo[slot] = Some((self.meta_gen, s));
        self.stat_memo_next = self.stat_memo_next.wrapping_add(1);
        Ok(s)
    }

    fn stat_uncached(&mut self, ino: u32) -> Result<Stat> {
        let i = self.live_inode(ino)?;
        let rdev = if matches!(i.file_type(), crate::inode::S_IFCHR | crate::inode::S_IFBLK) {
            let a = i.block_area();
            let old = le32(a, 0);
            if old != 0 {
                old
            } else {
                le32(a, 4)
            }
        } else {
            0
        };
        Ok(Stat {
            ino,
            mode: i.mode(),
            nlink: i.links(),
            uid: i.uid(),
            gid: i.gid(),
            size: i.size(),
            blocks: i.sectors(self.bs),
            atime: i.time(TimeField::Access),
            mtime: i.time(TimeField::Modify),
            ctime: i.time(TimeField::Change),
            crtime: i.time(TimeField::Create),
            generation: i.generation(),
            flags: i.flags(),
            rdev,
        })
    }

    pub fn statfs(&self) -> StatFs {
        // Reserved blocks are not free, and the metadata pool is not
        // available, as in ext4's statfs.
        let free = self.free_total().saturating_sub(self.delalloc);
        let free_inodes: u64 = self.groups.iter().map(|g| g.free_inodes() as u64).sum();
        StatFs {
            block_size: self.bs as u32,
            blocks: self.sb.blocks_count(),
            free_blocks: free,
            available_blocks: free.saturating_sub(self.sb.r_blocks_count() + self.metadata_pool()),
            inodes: self.sb.inodes_count() as u64,
            free_inodes,
            name_max: 255,
        }
    }

    // ---- Superblock and descriptors -----------------------------------------

    pub(crate) fn mark_group_dirty(&mut self, g: u32) {
        self.dirty_groups.insert(g);
        self.sb_dirty = true;
    }

    /// Serialises the dirty descriptors and the superblock into their
    /// (cached, dirty) blocks so that the commit journals them.
    pub(crate) fn flush_fs_metadata(&mut self) -> Result<()> {
        self.update_bitmap_checksums()?;
        let ds = self.sb.desc_size();
        let per_block = self.bs / ds;
        let groups: Vec<u32> = self.dirty_groups.iter().copied().collect();
        for g in groups {
            let gd = match self.groups.get_mut(g as usize) {
                Some(gd) => gd,
                None => continue,
            };
            gd.update_checksum(&self.sb, self.csum_seed, g);
            let raw = gd.raw.clone();
            let blk = self.gdt_start + (g as usize / per_block) as u64;
            let mut b = self.meta(blk)?;
            put(&mut b, (g as usize % per_block) * ds, &raw);
            self.put_meta(blk, b)?;
        }
        self.dirty_groups.clear();
        if self.sb_dirty {
            let free: u64 = self.groups.iter().map(|g| g.free_blocks() as u64).sum();
            let free_inodes: u32 = self.groups.iter().map(|g| g.free_inodes()).sum();
            self.sb.set_free_blocks_count(free);
            self.sb.set_free_inodes_count(free_inodes);
            self.place_superblock()?;
            self.sb_dirty = false;
        }
        Ok(())
    }

    /// Copies the in-memory superblock into its block in the cache.
    fn place_superblock(&mut self) -> Result<()> {
        if self.sb.metadata_csum() {
            let c = self.sb.compute_checksum();
            self.sb.set_checksum(c);
        }
        let (blk, off) = if self.bs == 1024 { (1, 0) } else { (0, 1024) };
        let mut b = self.meta(blk)?;
        put(&mut b, off, &self.sb.raw);
        self.put_meta(blk, b)
    }

    /// Writes the superblock straight to the device and flushes: for the
    /// mount-state flags, which must not wait for a commit.
    pub(crate) fn write_superblock_now(&mut self) -> Result<()> {
        if self.sb.metadata_csum() {
            let c = self.sb.compute_checksum();
            self.sb.set_checksum(c);
        }
        let (blk, off) = if self.bs == 1024 { (1u64, 0) } else { (0, 1024) };
        // Keep a cached copy of the block coherent.
        if let Some(b) = self.cache.get_mut(&blk) {
            put(b, off, &self.sb.raw);
            self.meta_gen += 1;
        }
        self.verified.remove(&blk);
        let raw = self.sb.raw.clone();
        self.dev.write(SUPERBLOCK_OFFSET / SECTOR_SIZE as u64, &raw)?;
        self.dev.flush()
    }

    /// Makes every change so far durable: one journal transaction (or, with
    /// no journal, in-place writes) followed by a flush. EBUSY while a
    /// commit started by [`commit_start`](Self::commit_start) has not
    /// ended: its tail and this commit's must not overlap.
    pub fn commit(&mut self) -> Result<()> {
        if self.inflight {
            return Err(Errno::EBUSY);
        }
        match self.commit_start()? {
            Some(tail) => {
                let r = self.finish_tail(&tail);
                self.commit_end(&tail, r)
            }
            None => Ok(()),
        }
    }

    /// The first half of a commit, done under the caller's lock: the
    /// running transaction's blocks logged and sent to the device (steps 1
    /// and 2), the transaction closed (a new one starts empty). Returns
    /// the tail to write (the flush and the commit block, and a
    /// checkpoint when the log passes half full or the transaction freed a
    /// logged block: `finish_tail`, or the caller's own handle on the
    /// device, without the lock), after which
    /// [`commit_end`](Self::commit_end) must be called; `None` when the
    /// commit was done whole here (a checkpoint was due before it, the
    /// transaction spans several, or there is no journal). Blocks the
    /// transaction freed stay unallocatable until `commit_end`.
    pub fn commit_start(&mut self) -> Result<Option<CommitTail>> {
        if self.read_only {
            return Ok(None);
        }
        if self.inflight {
            return Err(Errno::EBUSY);
        }
        self.flush_fs_metadata()?;
        let freed_logged = self.freed.iter().any(|b| self.logged.contains(b));
        let tail = if self.dirty.is_empty() && !freed_logged {
            // Nothing to log, but file data may have been written.
            self.dev.submit()?;
            CommitTail { log: Vec::new(), commit_block: None, checkpoint: None }
        } else if self.dirty.is_empty() || !self.can_commit_concurrently(self.dirty.len()) {
            self.commits_started += 1;
            self.commit_sync()?;
            self.commits += 1;
            return Ok(None);
        } else {
            let blocks: Vec<u64> = self.dirty.iter().copied().collect();
            let mut tail = self.log_transaction(&blocks)?;
            self.dirty.clear();
            // A log past half full, or a freed block still in it: the
            // checkpoint follows the commit block, in the same tail.
            if freed_logged || self.log_wants_checkpoint() {
                tail.checkpoint = Some(self.checkpoint_out()?);
            }
            tail
        };
        self.commits_started += 1;
        self.committing_freed = core::mem::take(&mut self.freed);
        self.inflight = true;
        Ok(Some(tail))
    }

    /// Ends the commit begun by [`commit_start`](Self::commit_start): `r`
    /// is how its tail went. A tail that failed turns the volume
    /// read-only ([`io_error`](Self::io_error)); after one that
    /// succeeded, the blocks the transaction freed may be reused, and a
    /// log past half full is checkpointed (the running transaction
    /// committed first, so only committed copies go home).
    pub fn commit_end(&mut self, tail: &CommitTail, r: Result<()>) -> Result<()> {
        self.inflight = false;
        if r.is_err() {
            // Whatever failed (the device, memory for the requests), the
            // log now has a transaction without its commit block in the
            // middle: nothing may be committed after it.
            self.io_error();
        }
        r?;
        if tail.checkpoint.is_some() {
            self.checkpoint_done();
        }
        self.committing_freed.clear();
        self.commits += 1;
        // (A volume that turned read-only meanwhile writes nothing more.)
        if !self.read_only && self.log_wants_checkpoint() {
            self.commits_started += 1;
            self.commit_sync()?;
            self.commits += 1;
            self.checkpoint()?;
        }
        Ok(())
    }

    /// How many commits have completed since the mount. Commits complete
    /// in the order they start.
    pub fn commits_done(&self) -> u64 {
        self.commits
    }

    /// The number the running transaction's commit will have: what it
    /// holds now is durable once [`commits_done`](Self::commits_done)
    /// reaches it (an fsync that waited for another's commit may find its
    /// own changes carried by it).
    pub fn running_commit(&self) -> u64 {
        self.commits_started + 1
    }

    /// The whole commit under the lock: for a transaction a checkpoint
    /// must follow or precede, one larger than a transaction, and volumes
    /// without a journal.
    fn commit_sync(&mut self) -> Result<()> {
        if self.dirty.is_empty() {
            if self.freed.iter().any(|b| self.logged.contains(b)) {
                self.checkpoint()?;
            }
            self.freed.clear();
            return self.dev.flush();
        }
        let blocks: Vec<u64> = self.dirty.iter().copied().collect();
        if self.journal.is_some() {
            let freed_logged = self.freed.iter().any(|b| self.logged.contains(b));
            self.journal_commit(&blocks, freed_logged)?;
        } else {
            self.dev.flush()?;
            for &b in &blocks {
                self.checkpoint_block(b)?;
            }
            self.dev.flush()?;
        }
        self.dirty.clear();
        self.freed.clear();
        Ok(())
    }

    /// Whether block `blk` was freed by a transaction not yet durable
    /// (the running one, or the one whose tail is being written).
    pub(crate) fn freed_uncommitted(&self, blk: u64) -> bool {
        self.freed.contains(&blk) || self.committing_freed.contains(&blk)
    }

    /// `sync(2)`: commits, then checkpoints the log, so that the volume's
    /// metadata is at home and the log empty (a machine switched off
    /// without an unmount then needs no replay). `fsync` only commits.
    pub fn sync(&mut self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.commit()?;
        self.checkpoint()
    }

    /// Writes a cached metadata block to its home location.
    pub(crate) fn checkpoint_block(&mut self, blk: u64) -> Result<()> {
        let data = match self.cache.get(&blk) {
            Some(d) => d.clone(),
            None => return Ok(()),
        };
        let s = self.sector_of(blk)?;
        self.dev.write(s, &data)
    }

    /// Commits when the running transaction has grown past what the journal
    /// should carry in one go (a quarter of it), as jbd2 does.
    pub(crate) fn maybe_commit(&mut self) -> Result<()> {
        // Inside an operation: the operation commits when it is whole.
        // While a commit's tail is out, the transaction grows on (the
        // next commit splits what does not fit in one).
        if self.undo.active || self.inflight {
            return Ok(());
        }
        let limit = match &self.journal {
            Some(j) => j.max_transaction_blocks(),
            None => 8192,
        };
        if self.dirty.len() + self.dirty_groups.len() + 2 >= limit {
            self.commit()?;
        }
        Ok(())
    }

    pub(crate) fn writable(&self) -> Result<()> {
        if self.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }
}

/// Whether raw inode `raw` (numbered `ino`) carries a good checksum; an
/// all-zero inode was never written and has none.
fn inode_checksum_ok(raw: &[u8], ino: u32, seed: u32) -> bool {
    let extra = if raw.len() > 128 { le16(raw, 0x80) as usize } else { 0 };
    let mut stored = le16(raw, 0x7C) as u32;
    if 128 + extra >= 0x84 && raw.len() >= 0x84 {
        stored |= (le16(raw, 0x82) as u32) << 16;
    }
    crate::inode::raw_checksum(raw, ino, seed) == stored || raw.iter().all(|&b| b == 0)
}
