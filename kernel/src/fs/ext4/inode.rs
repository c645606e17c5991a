//! One ext4 inode in the VFS: each [`Inode`] call becomes one call of
//! kiln-ext4 under the volume's lock, with the caller's time, and a
//! commit after it on a `sync` mount. Names must be UTF-8 to reach the
//! VFS (its names are `str`); an entry whose name is not is left out of
//! listings.
//!
//! A regular file's data goes through the page cache (`fs::pagecache`):
//! `read_at` and `write_at` touch only cached pages, the library is called
//! to fill a missing page and to write dirty ones back, and shared
//! mappings map the cache's frames.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use hal::sync::SpinLock;
use kiln_ext4::{NewInode, SetAttr, SpanKind, Timestamp, XattrFlags};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::fs::{
    FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE,
};

use super::{now, Ext4Volume, EXT4_SUPER_MAGIC};
use crate::fs::file::FileOps;
use crate::fs::inode::{
    DirEntry, DirectIo, DiskXattrs, FileType, FsStats, Inode, Metadata, Owner, S_IFDIR, S_IFLNK, S_IFMT,
};
use crate::fs::pagecache::{Backend, CachedFile, PageCache};
use crate::fs::pipe::Pipe;
use crate::fs::seek::{self, ByteSpan, Region};
use crate::mm::PAGE_SIZE;

pub struct Ext4Inode {
    vol: Arc<Ext4Volume>,
    ino: u32,
    /// The file's pages (regular files only).
    pub(super) cache: PageCache,
    /// 0 not known yet, 1 a regular file, 2 anything else (an inode's
    /// type never changes, and reads should not ask the library).
    regular: AtomicU8,
    /// The type bits of the mode (`S_IFMT`), 0 until known: the VFS asks
    /// for the type many times per path call, and each ask was a locked
    /// inode load and checksum in the library.
    kind: AtomicU32,
    /// The pipe behind a FIFO, made at its first open and shared by every
    /// open while this in-memory inode lives (an open end holds the inode,
    /// so readers and writers meet on the same pipe, as on Linux, where
    /// it lives in the inode until the last end closes).
    fifo: SpinLock<Option<Arc<Pipe>>>,
}

fn ns(t: Timestamp) -> u64 {
    (t.sec.max(0) as u64).saturating_mul(1_000_000_000).saturating_add(u64::from(t.nsec))
}

fn stamp(ns: u64) -> Timestamp {
    Timestamp { sec: (ns / 1_000_000_000) as i64, nsec: (ns % 1_000_000_000) as u32 }
}

fn name_bytes(name: &str) -> &[u8] {
    name.as_bytes()
}

impl Ext4Inode {
    pub(super) fn new(vol: Arc<Ext4Volume>, ino: u32) -> Ext4Inode {
        Ext4Inode {
            vol,
            ino,
            cache: PageCache::new(),
            regular: AtomicU8::new(0),
            kind: AtomicU32::new(0),
            fifo: SpinLock::new(None),
        }
    }

    fn fifo(&self) -> Arc<Pipe> {
        self.fifo.lock().get_or_insert_with(Pipe::new).clone()
    }

    fn is_regular(&self) -> bool {
        match self.regular.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let Ok(st) = self.vol.with(|fs| fs.stat(self.ino)) else { return false };
                let reg = u32::from(st.mode) & S_IFMT == crate::fs::inode::S_IFREG;
                self.regular.store(if reg { 1 } else { 2 }, Ordering::Relaxed);
                reg
            }
        }
    }

    fn not_regular(&self) -> Errno {
        if self.file_type() == FileType::Directory {
            Errno::EISDIR
        } else {
            Errno::EINVAL
        }
    }

    /// The live inode named `name` in directory `dir`, if any: its cache
    /// must go when its last link does (the number may be reused).
    fn child(&self, dir: u32, name: &str) -> Option<Arc<Ext4Inode>> {
        let ino = self.vol.with(|fs| fs.lookup(dir, name_bytes(name))).ok()?;
        self.vol.held(ino)
    }

    /// After an unlink or a rename over it: a file with no link left is an
    /// orphan. Its cached pages stay while it is open and go with the
    /// inode when the last reference does (then the library frees it:
    /// see `Drop`), as Linux evicts an unlinked inode's pages only then.
    fn forget_if_gone(&self, gone: Option<Arc<Ext4Inode>>) {
        let Some(node) = gone else { return };
        let links = self.vol.with(|fs| fs.stat(node.ino)).map(|s| s.nlink).unwrap_or(0);
        if links == 0 {
            node.cache.orphaned();
        }
    }

    /// Writes the file's dirty pages in [first, end) back (into the
    /// running transaction and the device queue; a commit makes them
    /// durable).
    pub(super) fn write_dirty(&self, first: u64, end: u64) -> Result<(), Errno> {
        if self.regular.load(Ordering::Relaxed) != 1 {
            return Ok(());
        }
        self.cache.writeback(self, first, end, u64::MAX).map(|_| ())
    }

    fn disk_metadata(&self) -> Metadata {
        match self.vol.with(|fs| fs.stat(self.ino)) {
            Ok(s) => Metadata {
                dev: self.vol.dev,
                ino: u64::from(s.ino),
                mode: u32::from(s.mode),
                nlink: u64::from(s.nlink),
                uid: s.uid,
                gid: s.gid,
                rdev: u64::from(s.rdev),
                size: s.size,
                blocks: s.blocks,
                atime: ns(s.atime),
                mtime: ns(s.mtime),
                ctime: ns(s.ctime),
            },
            // A volume gone (unmounted) or an inode that cannot be read:
            // what stat can still say.
            Err(_) => Metadata { dev: self.vol.dev, ino: u64::from(self.ino), ..Metadata::default() },
        }
    }

    pub fn volume(&self) -> &Arc<Ext4Volume> {
        &self.vol
    }

    fn set_attr(&self, f: impl FnOnce(&mut SetAttr)) -> Result<(), Errno> {
        let mut attr = SetAttr { mode: None, uid: None, gid: None, atime: None, mtime: None, ctime: now() };
        f(&mut attr);
        self.vol.with(|fs| fs.set_attr(self.ino, attr))?;
        self.vol.changed()
    }

    fn other_ino(&self, other: &Arc<dyn Inode>) -> Result<u32, Errno> {
        match other.as_any().downcast_ref::<Ext4Inode>() {
            Some(o) if Arc::ptr_eq(&o.vol, &self.vol) => Ok(o.ino),
            _ => Err(Errno::EXDEV),
        }
    }

    /// A rename (`flags` 0 or RENAME_NOREPLACE), with a whiteout left under
    /// the old name when `whiteout` gives its owner.
    fn rename_maybe_whiteout(
        &self,
        old: &str,
        dst: u32,
        new: &str,
        flags: u32,
        whiteout: Option<Owner>,
    ) -> Result<(), Errno> {
        let replaced = self.child(dst, new);
        self.vol.with(|fs| {
            if flags & c::RENAME_NOREPLACE != 0 {
                match fs.lookup(dst, name_bytes(new)) {
                    Ok(_) => return Err(Errno::EEXIST),
                    Err(Errno::ENOENT) => {}
                    Err(e) => return Err(e),
                }
            }
            match whiteout {
                None => fs.rename(self.ino, name_bytes(old), dst, name_bytes(new), now()),
                Some(owner) => {
                    let attr = Self::new_inode(crate::fs::inode::S_IFCHR, 0, owner);
                    fs.rename_whiteout(self.ino, name_bytes(old), dst, name_bytes(new), attr).map(|_| ())
                }
            }
        })?;
        if replaced.as_ref().is_some_and(|r| self.child(dst, new).is_none_or(|n| !Arc::ptr_eq(r, &n))) {
            self.forget_if_gone(replaced);
        }
        self.vol.changed()
    }

    /// SEEK_DATA/SEEK_HOLE: the disk's extents from `offset` to `size`,
    /// then the page cache for what they leave open (see `fs::seek`).
    fn seek_in_spans(&self, offset: u64, size: u64, data: bool) -> Result<u64, Errno> {
        let bs = Backend::block_size(self);
        let blocks = self.vol.with(|fs| fs.block_spans(self.ino, offset / bs, size.div_ceil(bs)))?;
        let mut spans = Vec::new();
        spans.try_reserve_exact(blocks.len()).map_err(|_| Errno::ENOMEM)?;
        spans.extend(blocks.iter().map(|s| ByteSpan {
            start: s.start * bs,
            end: s.end * bs,
            region: match s.kind {
                SpanKind::Written => Region::Data,
                // Linux looks an unwritten extent up in the page cache;
                // a hole is data only where delayed allocation waits.
                SpanKind::Unwritten => Region::Cached { dirty_only: false },
                SpanKind::Hole => Region::Cached { dirty_only: true },
            },
        }));
        seek::seek(&spans, offset, size, data, &self.cache)
    }

    fn new_inode(mode: u32, rdev: u64, owner: Owner) -> NewInode {
        NewInode { mode: mode as u16, uid: owner.uid, gid: owner.gid, now: now(), rdev: rdev as u32 }
    }
}

/// The last in-memory reference went (no open file, mapping, cwd or cached
/// name holds it): the volume drops its pin later, under its own lock.
impl Drop for Ext4Inode {
    fn drop(&mut self) {
        // Its cached pages go with it: their reserved blocks come back.
        self.vol.queue_unreserve(self.cache.reserved_blocks());
        self.vol.queue_unpin(self.ino);
    }
}

impl Inode for Ext4Inode {
    fn metadata(&self) -> Metadata {
        // The cache's size is newer than the disk's; the blocks its dirty
        // pages hold reserved count already, as ext4's stat counts its
        // delayed-allocation reservations (i_reserved_data_blocks).
        let cached = if self.regular.load(Ordering::Relaxed) == 1 { self.cache.size() } else { None };
        let mut m = self.disk_metadata();
        if m.mode & S_IFMT != 0 {
            self.regular.store(if m.mode & S_IFMT == crate::fs::inode::S_IFREG { 1 } else { 2 }, Ordering::Relaxed);
            self.kind.store(m.mode & S_IFMT, Ordering::Relaxed);
        }
        if let Some(size) = cached {
            m.blocks += self.cache.reserved_blocks() * (self.vol.block_size / 512);
            m.size = size;
        }
        m
    }

    fn file_type(&self) -> FileType {
        match self.kind.load(Ordering::Relaxed) {
            0 => self.metadata().file_type(),
            kind => FileType::from_mode(kind).unwrap_or(FileType::Regular),
        }
    }

    fn fs_stats(&self) -> FsStats {
        let s = self.vol.with(|fs| Ok(fs.statfs())).ok();
        match s {
            Some(s) => FsStats {
                magic: EXT4_SUPER_MAGIC,
                block_size: u64::from(s.block_size),
                blocks: s.blocks,
                blocks_free: s.free_blocks,
                files: s.inodes,
                files_free: s.free_inodes,
                name_max: u64::from(s.name_max),
            },
            None => FsStats { magic: EXT4_SUPER_MAGIC, ..FsStats::default() },
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn set_mode(&self, mode: u32) -> Result<(), Errno> {
        self.set_attr(|a| a.mode = Some((mode & 0o7777) as u16))
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
        self.set_attr(|a| {
            a.uid = uid;
            a.gid = gid;
        })
    }

    fn set_times(&self, atime: Option<u64>, mtime: Option<u64>) -> Result<(), Errno> {
        self.set_attr(|a| {
            a.atime = atime.map(stamp);
            a.mtime = mtime.map(stamp);
        })
    }

    fn set_atime(&self, ns: u64) {
        // An access that cannot be recorded (the volume went read-only
        // after an error) leaves the read it follows alone, as Linux's
        // touch_atime does.
        if self.vol.with(|fs| fs.set_atime(self.ino, stamp(ns))).is_ok() {
            let _ = self.vol.changed();
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.is_regular() {
            if self.file_type() == FileType::Directory {
                return Err(Errno::EISDIR);
            }
            return self.vol.with(|fs| fs.read(self.ino, offset, buf));
        }
        self.cache.read(self, offset, buf)
    }

    fn reads_to_user(&self) -> bool {
        self.is_regular()
    }

    fn read_user_at(
        &self,
        offset: u64,
        addr: u64,
        len: usize,
        vm: &dyn Fn() -> Result<crate::mm::Vm, Errno>,
    ) -> Result<usize, Errno> {
        self.cache.read_user(self, offset, addr, len, vm)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        if !self.is_regular() {
            return Err(self.not_regular());
        }
        self.vol.with(|fs| if fs.is_read_only() { Err(Errno::EROFS) } else { Ok(()) })?;
        let n = self.cache.write(self, offset, buf)?;
        let t = now();
        self.vol.with(|fs| {
            fs.set_attr(self.ino, SetAttr { mode: None, uid: None, gid: None, atime: None, mtime: Some(t), ctime: t })
        })?;
        if self.vol.synchronous.load(core::sync::atomic::Ordering::Relaxed) {
            self.write_dirty(offset / PAGE_SIZE, (offset + n as u64).div_ceil(PAGE_SIZE))?;
        }
        self.vol.changed()?;
        Ok(n)
    }

    fn direct_align(&self) -> Option<DirectIo> {
        self.is_regular().then_some(DirectIo { align: self.vol.logical_block, block: self.vol.block_size })
    }

    fn read_direct(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.is_regular() {
            return self.read_at(offset, buf);
        }
        self.cache.read_direct(self, offset, buf)
    }

    fn write_direct(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        if !self.is_regular() {
            return Err(self.not_regular());
        }
        self.vol.with(|fs| if fs.is_read_only() { Err(Errno::EROFS) } else { Ok(()) })?;
        let Some(n) = self.cache.write_direct(self, offset, buf)? else {
            // A page of the range is mapped: through the cache, then down
            // to the device as a direct write would be.
            let n = self.write_at(offset, buf)?;
            self.write_dirty(offset / PAGE_SIZE, (offset + n as u64).div_ceil(PAGE_SIZE))?;
            return Ok(n);
        };
        let t = now();
        self.vol.with(|fs| {
            // The data goes to the device before the call returns, as
            // Linux waits for a direct write's bios (durable only after a
            // flush: fsync, O_DSYNC).
            fs.device_mut().unplug()?;
            fs.set_attr(self.ino, SetAttr { mode: None, uid: None, gid: None, atime: None, mtime: Some(t), ctime: t })
        })?;
        self.vol.changed()?;
        Ok(n)
    }

    fn truncate(&self, size: u64) -> Result<(), Errno> {
        if !self.is_regular() {
            return Err(self.not_regular());
        }
        self.cache.truncate(self, size, || self.vol.with(|fs| fs.truncate(self.ino, size, now())))?;
        self.vol.changed()
    }

    fn allocate(&self, mode: u32, offset: u64, len: u64) -> Result<(), Errno> {
        if !self.is_regular() {
            return Err(self.not_regular());
        }
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
        let keep_size = mode & FALLOC_FL_KEEP_SIZE != 0;
        let (ino, t) = (self.ino, now());
        match mode & !FALLOC_FL_KEEP_SIZE {
            0 => {
                self.vol.with(|fs| fs.fallocate(ino, offset, len, keep_size, t))?;
                self.cache.allocated(self, offset, end);
                if !keep_size {
                    self.cache.grew(end);
                }
            }
            FALLOC_FL_PUNCH_HOLE => {
                self.cache.change_range(self, offset, end, false, || {
                    self.vol.with(|fs| fs.punch_hole(ino, offset, len, t))
                })?;
            }
            FALLOC_FL_ZERO_RANGE => {
                self.cache.change_range(self, offset, end, false, || {
                    self.vol.with(|fs| fs.zero_range(ino, offset, len, keep_size, t))
                })?;
            }
            FALLOC_FL_COLLAPSE_RANGE => {
                self.cache.change_range(self, offset, end, true, || {
                    self.vol.with(|fs| fs.collapse_range(ino, offset, len, t))
                })?;
            }
            FALLOC_FL_INSERT_RANGE => {
                self.cache.change_range(self, offset, end, true, || {
                    self.vol.with(|fs| fs.insert_range(ino, offset, len, t))
                })?;
            }
            _ => return Err(Errno::EOPNOTSUPP),
        }
        self.vol.changed()
    }

    fn has_page_frames(&self) -> bool {
        self.is_regular()
    }

    fn tracks_dirty(&self) -> bool {
        self.is_regular()
    }

    fn frame_to_map(&self, index: u64, partial: bool) -> Option<Result<Option<hal::frame::UserFrame>, Errno>> {
        if !self.is_regular() {
            return None;
        }
        Some(self.cache.frame_to_map(self, index, partial))
    }

    fn existing_frames(&self, first: u64, end: u64, partial: bool, f: &mut dyn FnMut(u64, &hal::frame::UserFrame)) {
        self.cache.existing_frames(first, end, partial, f);
    }

    fn cached_page(&self, index: u64) -> Option<u64> {
        self.cache.cached_page(index)
    }

    /// MADV_REMOVE on a shared mapping: Linux punches the range through
    /// the file system's fallocate; the caller unmaps the pages.
    fn punch_hole(&self, index: u64, count: u64) -> Result<(), Errno> {
        let (offset, len) = (index * PAGE_SIZE, count * PAGE_SIZE);
        self.allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, len)
    }

    fn seek_data(&self, offset: u64, size: u64, data: bool) -> Option<Result<u64, Errno>> {
        if !self.is_regular() {
            return None;
        }
        Some(self.seek_in_spans(offset, size, data))
    }

    fn has_page(&self, index: u64) -> bool {
        self.cache.has_page(index)
    }

    fn page_mkwrite(&self, index: u64) -> Result<(), Errno> {
        self.cache.page_mkwrite(self, index)
    }

    fn sync_range(&self, offset: u64, end: u64, wait: bool) -> Result<(), Errno> {
        self.write_dirty(offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE))?;
        if wait {
            // The data reaches the device (not necessarily its media).
            self.vol.with(|fs| fs.device_mut().unplug())?;
        }
        Ok(())
    }

    fn advise(&self, offset: u64, end: u64, advice: u32) -> Result<(), Errno> {
        if !self.is_regular() {
            return Ok(());
        }
        let (first, last) = (offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
        match advice {
            linux_abi::fs::POSIX_FADV_WILLNEED => self.cache.prefetch(self, first, last.min(first + 8192)),
            linux_abi::fs::POSIX_FADV_DONTNEED => {
                // Linux starts writeback of the range and drops what is
                // clean; pages still dirty stay.
                self.write_dirty(first, last)?;
                self.cache.drop_clean(first, last, u64::MAX, true);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn lookup(&self, name: &str) -> Result<Arc<dyn Inode>, Errno> {
        self.vol.with_inode(|fs| fs.lookup(self.ino, name_bytes(name)))
    }

    fn create(&self, name: &str, mode: u32, rdev: u64, owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        let attr = Self::new_inode(mode, rdev, owner);
        let node = self.vol.with_inode(|fs| {
            if mode & S_IFMT == S_IFDIR {
                fs.mkdir(self.ino, name_bytes(name), attr)
            } else {
                fs.create(self.ino, name_bytes(name), attr)
            }
        })?;
        self.vol.changed()?;
        Ok(node)
    }

    fn symlink(&self, name: &str, target: &str, owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        let attr = Self::new_inode(S_IFLNK | 0o777, 0, owner);
        let node = self.vol.with_inode(|fs| fs.symlink(self.ino, name_bytes(name), target.as_bytes(), attr))?;
        self.vol.changed()?;
        Ok(node)
    }

    fn link(&self, name: &str, inode: &Arc<dyn Inode>) -> Result<(), Errno> {
        let ino = self.other_ino(inode)?;
        self.vol.with(|fs| fs.link(ino, self.ino, name_bytes(name), now()))?;
        self.vol.changed()
    }

    fn unlink(&self, name: &str) -> Result<(), Errno> {
        let child = self.child(self.ino, name);
        self.vol.with(|fs| fs.unlink(self.ino, name_bytes(name), now()))?;
        self.forget_if_gone(child);
        self.vol.changed()
    }

    fn rmdir(&self, name: &str) -> Result<(), Errno> {
        self.vol.with(|fs| fs.rmdir(self.ino, name_bytes(name), now()))?;
        self.vol.changed()
    }

    fn rename(&self, old: &str, new_dir: &Arc<dyn Inode>, new: &str, flags: u32) -> Result<(), Errno> {
        let dst = self.other_ino(new_dir)?;
        if flags == c::RENAME_EXCHANGE {
            self.vol.with(|fs| fs.exchange(self.ino, name_bytes(old), dst, name_bytes(new), now()))?;
            return self.vol.changed();
        }
        if flags & !c::RENAME_NOREPLACE != 0 {
            return Err(Errno::EINVAL);
        }
        self.rename_maybe_whiteout(old, dst, new, flags, None)
    }

    fn rename_whiteout(
        &self,
        old: &str,
        new_dir: &Arc<dyn Inode>,
        new: &str,
        flags: u32,
        owner: Owner,
    ) -> Result<(), Errno> {
        let dst = self.other_ino(new_dir)?;
        if flags & !c::RENAME_NOREPLACE != 0 {
            return Err(Errno::EINVAL);
        }
        self.rename_maybe_whiteout(old, dst, new, flags, Some(owner))
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let raw = self.vol.with(|fs| fs.read_dir(self.ino))?;
        let mut out = Vec::new();
        out.try_reserve(raw.len()).map_err(|_| Errno::ENOMEM)?;
        for e in raw {
            if e.name == b"." || e.name == b".." {
                continue;
            }
            let Ok(name) = String::from_utf8(e.name) else { continue };
            let kind = match e.file_type {
                1 => FileType::Regular,
                2 => FileType::Directory,
                3 => FileType::CharDevice,
                4 => FileType::BlockDevice,
                5 => FileType::Fifo,
                6 => FileType::Socket,
                7 => FileType::Symlink,
                // ext2 without the filetype feature: ask the inode.
                _ => self.vol.inode(e.ino).map(|i| i.file_type()).unwrap_or(FileType::Regular),
            };
            out.push(DirEntry { name, ino: u64::from(e.ino), kind });
        }
        Ok(out)
    }

    fn readlink(&self) -> Result<String, Errno> {
        if self.file_type() != FileType::Symlink {
            return Err(Errno::EINVAL);
        }
        let target = self.vol.with(|fs| fs.readlink(self.ino))?;
        String::from_utf8(target).map_err(|_| Errno::EINVAL)
    }

    fn disk_xattrs(&self) -> Option<&dyn DiskXattrs> {
        Some(self)
    }

    fn sync(&self, _datasync: bool) -> Result<(), Errno> {
        // Ordered mode: the data goes down before the commit that maps it.
        self.write_dirty(0, u64::MAX)?;
        // Every change of this file is in the transaction running now (or
        // an earlier one): if a commit that started after this point ends
        // first (another fsync's, the commit thread's), it carried them.
        let running = self.vol.running_transaction()?;
        self.vol.commit_after(Some(running))
    }

    fn sync_fs(&self) -> Result<(), Errno> {
        self.vol.sync()
    }

    fn open(&self, flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        let m = self.metadata();
        match m.mode & S_IFMT {
            crate::fs::inode::S_IFCHR => Some(crate::fs::devfs::open_device(m.rdev, flags)),
            crate::fs::inode::S_IFBLK => Some(crate::block::dev::open(m.rdev)),
            crate::fs::inode::S_IFIFO => Some(crate::fs::pipe::open_fifo(self.fifo(), flags)),
            // A socket file is for connect(2); open(2) is ENXIO (sock_no_open).
            crate::fs::inode::S_IFSOCK => Some(Err(Errno::ENXIO)),
            _ => None,
        }
    }
}

/// Extended attributes, stored by kiln-ext4 (in the inode or an xattr
/// block), reached by the xattr calls after their permission checks.
impl DiskXattrs for Ext4Inode {
    fn get(&self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.vol.with(|fs| fs.get_xattr(self.ino, name))
    }

    fn set(&self, name: &[u8], value: &[u8], flags: u32) -> Result<(), Errno> {
        let flags = match flags {
            0 => XattrFlags::Any,
            1 => XattrFlags::Create,
            2 => XattrFlags::Replace,
            _ => return Err(Errno::EINVAL),
        };
        self.vol.with(|fs| fs.set_xattr(self.ino, name, value, flags, now()))?;
        self.vol.changed()
    }

    fn remove(&self, name: &[u8]) -> Result<(), Errno> {
        self.vol.with(|fs| fs.remove_xattr(self.ino, name, now()))?;
        self.vol.changed()
    }

    fn list(&self) -> Result<Vec<Vec<u8>>, Errno> {
        self.vol.with(|fs| fs.list_xattr(self.ino))
    }
}

/// How the page cache reaches this file on the disk.
impl Backend for Ext4Inode {
    fn disk_size(&self) -> Result<u64, Errno> {
        self.vol.with(|fs| fs.stat(self.ino)).map(|s| s.size)
    }

    fn read_pages(&self, offset: u64, buf: &mut [u8]) -> Result<(), Errno> {
        self.vol.with(|fs| fs.read(self.ino, offset, buf)).map(|_| ())
    }

    fn read_into_pages(&self, offset: u64, pages: &mut [&mut [u8]]) -> Result<usize, Errno> {
        self.vol.with(|fs| fs.read_scatter(self.ino, offset, pages))
    }

    fn write_pages(&self, offset: u64, data: &[u8], reserved: u64) -> Result<(), Errno> {
        self.vol.with(|fs| fs.write_back(self.ino, offset, data, reserved))
    }

    fn block_size(&self) -> u64 {
        self.vol.with(|fs| Ok(fs.block_size() as u64)).unwrap_or(PAGE_SIZE)
    }

    fn holes(&self, first: u64, end: u64) -> Result<Vec<(u64, u64)>, Errno> {
        self.vol.with(|fs| fs.unmapped_blocks(self.ino, first, end))
    }

    fn reserve(&self, blocks: u64) -> Result<(), Errno> {
        self.vol.with(|fs| fs.reserve_blocks(blocks))
    }

    fn release(&self, blocks: u64) {
        let _ = self.vol.with(|fs| {
            fs.release_blocks(blocks);
            Ok(())
        });
    }
}

impl CachedFile for Ext4Inode {
    fn writeback(&self, older_than: u64) -> Result<u64, Errno> {
        self.cache.writeback(self, 0, u64::MAX, older_than)
    }

    fn drop_clean(&self, max: u64, wait: bool) -> u64 {
        self.cache.drop_clean(0, u64::MAX, max, wait)
    }

    fn try_leave(&self) -> bool {
        self.cache.try_leave()
    }

    fn owner(&self) -> usize {
        crate::fs::pagecache::key_of(&self.vol)
    }
}
