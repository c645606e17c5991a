//! The public mutating operations, each atomic in memory: an undo log
//! records the first change of every metadata block, group descriptor and
//! freed-block entry an operation makes, and an operation that fails half
//! way (ENOSPC after some allocations, a corrupt block found late) is
//! rolled back, so the running transaction only ever holds whole
//! operations. File data already written to newly allocated blocks is
//! simply abandoned with them; overwritten data in place stays overwritten,
//! as with a short write on Linux.

use crate::group::GroupDesc;
use crate::namei::{NewInode, SetAttr};
use crate::superblock::STATE_ERRORS;
use crate::xattr::XattrFlags;
use crate::{BlockDevice, Ext4, Result, Timestamp};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// What an operation in progress has changed, to undo it.
#[derive(Default)]
pub(crate) struct UndoLog {
    pub active: bool,
    /// Block -> (cached copy before, was dirty before).
    pub blocks: BTreeMap<u64, (Option<Vec<u8>>, bool)>,
    pub groups: BTreeMap<u32, GroupDesc>,
    pub freed: Vec<u64>,
}

impl<D: BlockDevice> Ext4<D> {
    /// Records `blk`'s state before its first change in this operation.
    pub(crate) fn undo_block(&mut self, blk: u64) {
        if self.undo.active && !self.undo.blocks.contains_key(&blk) {
            let before = (self.cache.get(&blk).cloned(), self.dirty.contains(&blk));
            self.undo.blocks.insert(blk, before);
        }
    }

    /// The descriptor of group `g`, for changing (recorded first).
    pub(crate) fn group_mut(&mut self, g: u32) -> Option<&mut GroupDesc> {
        if self.undo.active && !self.undo.groups.contains_key(&g) {
            let old = self.groups.get(g as usize)?.clone();
            self.undo.groups.insert(g, old);
        }
        self.groups.get_mut(g as usize)
    }

    pub(crate) fn note_freed(&mut self, blk: u64) {
        if self.freed.insert(blk) && self.undo.active {
            self.undo.freed.push(blk);
        }
    }

    /// Runs an operation atomically. Blocks freed by the running
    /// transaction cannot be reused before it commits; when an operation
    /// runs out of space while such blocks exist, it is rolled back, the
    /// transaction committed, and the operation run once more (as ext4's
    /// retry after a forced journal commit).
    pub(crate) fn atomic<T>(&mut self, mut f: impl FnMut(&mut Self) -> Result<T>) -> Result<T> {
        match self.atomic_once(&mut f) {
            // (Not while a commit's tail is out: the caller's commit
            // is the one to wait for; the space comes back at its end.)
            Err(Errno::ENOSPC) if !self.freed.is_empty() && !self.inflight => {
                self.commit()?;
                self.atomic_once(&mut f)
            }
            r => r,
        }
    }

    fn atomic_once<T>(&mut self, f: &mut impl FnMut(&mut Self) -> Result<T>) -> Result<T> {
        self.writable()?;
        self.undo = UndoLog { active: true, ..UndoLog::default() };
        let r = f(self);
        let log = core::mem::take(&mut self.undo);
        if r.is_err() {
            self.meta_gen += 1;
            for (blk, (data, was_dirty)) in log.blocks {
                self.verified.remove(&blk);
                match data {
                    Some(d) => {
                        self.cache.insert(blk, d);
                    }
                    None => {
                        self.cache.remove(&blk);
                    }
                }
                if was_dirty {
                    self.dirty.insert(blk);
                } else {
                    self.dirty.remove(&blk);
                }
            }
            for (g, gd) in log.groups {
                if let Some(slot) = self.groups.get_mut(g as usize) {
                    *slot = gd;
                }
            }
            for b in log.freed {
                self.freed.remove(&b);
            }
            if matches!(r, Err(Errno::EUCLEAN) | Err(Errno::EIO)) {
                self.fail_read_only();
            }
            return r;
        }
        self.maybe_commit()?;
        r
    }

    /// An I/O error the caller met outside an operation (a failed commit
    /// or writeback): the volume turns read-only as after a failed change.
    /// Returns whether it was writable until now.
    pub fn io_error(&mut self) -> bool {
        if self.read_only {
            return false;
        }
        self.fail_read_only();
        true
    }

    /// `mount -o remount,ro`: everything committed, the journal marked as
    /// needing no recovery (as a clean unmount leaves it), then read-only.
    pub fn remount_read_only(&mut self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.commit()?;
        self.checkpoint()?;
        self.dev.flush()?;
        if self.journal.is_some() {
            let inc = self.sb.feature_incompat() & !crate::superblock::INCOMPAT_RECOVER;
            self.sb.set_feature_incompat(inc);
        }
        self.write_superblock_now()?;
        self.read_only = true;
        Ok(())
    }

    /// `mount -o remount,rw`: refused (`EROFS`) for a read-only device, a
    /// volume with features Kiln only reads, or one marked with errors.
    pub fn remount_read_write(&mut self) -> Result<()> {
        use crate::superblock::{INCOMPAT_RECOVER, RO_COMPAT_READONLY, RO_COMPAT_SUPPORTED};
        if !self.read_only {
            return Ok(());
        }
        if self.dev.is_read_only()
            || self.sb.feature_ro_compat() & !RO_COMPAT_SUPPORTED != 0
            || self.sb.has_ro_compat(RO_COMPAT_READONLY)
            || self.sb.state() & STATE_ERRORS != 0
        {
            return Err(Errno::EROFS);
        }
        if self.journal.is_some() {
            let inc = self.sb.feature_incompat() | INCOMPAT_RECOVER;
            self.sb.set_feature_incompat(inc);
        }
        self.read_only = false;
        if let Err(e) = self.write_superblock_now() {
            self.read_only = true;
            return Err(e);
        }
        Ok(())
    }

    /// ext4's `errors=remount-ro`: after corruption or an I/O error found
    /// by a change, the whole operations so far are committed, the volume
    /// is marked as having errors (so that fsck checks it) and turns
    /// read-only.
    fn fail_read_only(&mut self) {
        let _ = self.commit();
        self.sb.set_state(self.sb.state() | STATE_ERRORS);
        let _ = self.write_superblock_now();
        self.read_only = true;
    }

    /// Creates a non-directory node `name` in `dir` (a regular file, FIFO,
    /// socket or device); returns its inode number.
    pub fn create(&mut self, dir: u32, name: &[u8], attr: NewInode) -> Result<u32> {
        self.atomic(|fs| fs.create_inner(dir, name, attr))
    }
    /// Creates directory `name` in `dir`.
    pub fn mkdir(&mut self, dir: u32, name: &[u8], attr: NewInode) -> Result<u32> {
        self.atomic(|fs| fs.mkdir_inner(dir, name, attr))
    }
    /// Creates symlink `name` in `dir` pointing at `target` (kept in the
    /// inode when shorter than 60 bytes).
    pub fn symlink(&mut self, dir: u32, name: &[u8], target: &[u8], attr: NewInode) -> Result<u32> {
        self.atomic(|fs| fs.symlink_inner(dir, name, target, attr))
    }
    /// Adds another name for non-directory `ino`.
    pub fn link(&mut self, ino: u32, dir: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.link_inner(ino, dir, name, now))
    }
    /// Removes a non-directory name; the inode goes with its last link.
    pub fn unlink(&mut self, dir: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.unlink_inner(dir, name, now))
    }
    /// Removes an empty directory.
    pub fn rmdir(&mut self, dir: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.rmdir_inner(dir, name, now))
    }
    /// Moves `src_dir/src_name` to `dst_dir/dst_name`, replacing a target
    /// as `rename(2)` does.
    pub fn rename(
        &mut self,
        src_dir: u32,
        src_name: &[u8],
        dst_dir: u32,
        dst_name: &[u8],
        now: Timestamp,
    ) -> Result<()> {
        self.atomic(|fs| fs.rename_inner(src_dir, src_name, dst_dir, dst_name, now))
    }
    /// `renameat2` with `RENAME_WHITEOUT`: the rename, and a whiteout
    /// (`attr`: a character device 0:0) made under the old name, as one
    /// operation (either both or neither).
    pub fn rename_whiteout(
        &mut self,
        src_dir: u32,
        src_name: &[u8],
        dst_dir: u32,
        dst_name: &[u8],
        attr: NewInode,
    ) -> Result<u32> {
        self.atomic(|fs| {
            fs.rename_inner(src_dir, src_name, dst_dir, dst_name, attr.now)?;
            fs.create_inner(src_dir, src_name, attr)
        })
    }
    /// Swaps two names (`renameat2` with `RENAME_EXCHANGE`).
    pub fn exchange(&mut self, a_dir: u32, a_name: &[u8], b_dir: u32, b_name: &[u8], now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.exchange_inner(a_dir, a_name, b_dir, b_name, now))
    }
    /// Changes mode bits, owner and times (`chmod`, `chown`, `utimensat`).
    pub fn set_attr(&mut self, ino: u32, attr: SetAttr) -> Result<()> {
        self.atomic(|fs| fs.set_attr_inner(ino, attr))
    }
    /// Records an access: the atime only, ctime left alone (a read under
    /// `relatime` or `strictatime`, which [`Ext4::set_attr`] cannot do).
    pub fn set_atime(&mut self, ino: u32, atime: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.set_atime_inner(ino, atime))
    }
    /// Writes `data` at `offset`; allocates blocks for holes, converts
    /// unwritten extents, extends the size.
    pub fn write(&mut self, ino: u32, offset: u64, data: &[u8], now: Timestamp) -> Result<usize> {
        self.atomic(|fs| fs.write_inner(ino, offset, data, now))
    }
    /// Writes cached file data back at `offset` (the kernel's page cache
    /// writeback): blocks as for `write`, the size grown to the end of
    /// `data`, the times left alone (they changed when the data was
    /// written into the cache). `reserved` blocks reserved for this data
    /// (see `reserve_blocks`) are used now; on an error they stay reserved.
    pub fn write_back(&mut self, ino: u32, offset: u64, data: &[u8], reserved: u64) -> Result<()> {
        let before = self.delalloc;
        self.delalloc = self.delalloc.saturating_sub(reserved);
        self.writing_back = true;
        let r = self.atomic(|fs| fs.write_back_inner(ino, offset, data));
        self.writing_back = false;
        if r.is_err() {
            self.delalloc = before;
        }
        r
    }
    /// Sets a file's size (`truncate`/`ftruncate`).
    pub fn truncate(&mut self, ino: u32, size: u64, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.truncate_inner(ino, size, now))
    }
    /// Allocates unwritten extents over `[offset, offset+len)` (`fallocate`
    /// mode 0, or `FALLOC_FL_KEEP_SIZE` with `keep_size`).
    pub fn fallocate(&mut self, ino: u32, offset: u64, len: u64, keep_size: bool, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.fallocate_inner(ino, offset, len, keep_size, now))
    }
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`: [offset, offset+len)
    /// reads as zeros, its whole blocks freed (nothing past the end).
    pub fn punch_hole(&mut self, ino: u32, offset: u64, len: u64, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.punch_hole_inner(ino, offset, len, now))
    }
    /// `FALLOC_FL_ZERO_RANGE` (with `keep_size`, `| FALLOC_FL_KEEP_SIZE`):
    /// [offset, offset+len) reads as zeros and has blocks (unwritten).
    pub fn zero_range(&mut self, ino: u32, offset: u64, len: u64, keep_size: bool, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.zero_range_inner(ino, offset, len, keep_size, now))
    }
    /// `FALLOC_FL_COLLAPSE_RANGE`: removes block-aligned [offset,
    /// offset+len), moving the rest of the file down.
    pub fn collapse_range(&mut self, ino: u32, offset: u64, len: u64, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.collapse_range_inner(ino, offset, len, now))
    }
    /// `FALLOC_FL_INSERT_RANGE`: a hole of block-aligned `len` at
    /// `offset`, moving the rest of the file up.
    pub fn insert_range(&mut self, ino: u32, offset: u64, len: u64, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.insert_range_inner(ino, offset, len, now))
    }
    /// `setxattr`.
    pub fn set_xattr(&mut self, ino: u32, name: &[u8], value: &[u8], flags: XattrFlags, now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.set_xattr_inner(ino, name, value, flags, now))
    }
    /// `removexattr`.
    pub fn remove_xattr(&mut self, ino: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.atomic(|fs| fs.remove_xattr_inner(ino, name, now))
    }
}
