//! Name operations: create (files, special files), mkdir, symlink, link,
//! unlink, rmdir, rename (across directories, replacing a target), and
//! readlink; link counts (with `dir_nlink`), parent times, and freeing an
//! inode whose last name goes.

use crate::extent::Extent;
use crate::inode::*;
use crate::superblock::{INCOMPAT_EXTENTS, RO_COMPAT_DIR_NLINK};
use crate::{BlockDevice, Ext4, Result};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// Above this many links a directory's count is pinned to 1 (`dir_nlink`).
const LINK_MAX: u16 = 65000;

/// Owner and time of a new inode.
#[derive(Clone, Copy, Debug)]
pub struct NewInode {
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    pub now: Timestamp,
    /// Device number for character and block special files.
    pub rdev: u32,
}

impl<D: BlockDevice> Ext4<D> {
    fn check_name(name: &[u8]) -> Result<()> {
        if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0) {
            return Err(Errno::EINVAL);
        }
        if name.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        Ok(())
    }

    fn absent(&mut self, dir: u32, name: &[u8]) -> Result<()> {
        match self.lookup(dir, name) {
            Ok(_) => Err(Errno::EEXIST),
            Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The inode table block of `ino` (just allocated), when no other
    /// inode of it is in use and it is not cached: started zeroed in the
    /// cache instead of read, as ext4's `__ext4_get_inode_loc` does (a
    /// create in a new table block waited for that read: one in 16
    /// creates).
    fn fresh_table_block(&mut self, ino: u32) -> Result<()> {
        let (blk, _) = self.inode_location(ino)?;
        if self.cache.contains_key(&blk) {
            return Ok(());
        }
        let per_block = (self.bs / self.sb.inode_size()) as u32;
        let ipg = self.sb.inodes_per_group();
        let (g, i) = ((ino - 1) / ipg, (ino - 1) % ipg);
        let first = i - i % per_block;
        let bm = self.load_inode_bitmap(g)?;
        let busy = (first..(first + per_block).min(ipg))
            .any(|k| k != i && bm.get(k as usize / 8).is_none_or(|b| b & (1 << (k % 8)) != 0));
        if busy {
            return Ok(());
        }
        let zeroed = vec![0u8; self.bs];
        self.put_meta(blk, zeroed)
    }

    /// A fresh in-memory inode (not yet stored) with number `ino`.
    fn init_inode(&mut self, ino: u32, attr: &NewInode) -> Result<Inode> {
        self.fresh_table_block(ino)?;
        let old = self.load_inode(ino).ok();
        let mut i = Inode { ino, raw: vec![0u8; self.sb.inode_size()] };
        i.set_mode(attr.mode);
        i.set_uid(attr.uid);
        i.set_gid(attr.gid);
        if self.sb.inode_size() > 128 {
            let want = self.sb.want_extra_isize().max(32).min((self.sb.inode_size() - 128) as u16);
            i.set_extra_isize(want & !3);
        }
        i.set_generation(old.map_or(ino, |o| o.generation().wrapping_add(1)));
        for f in [TimeField::Access, TimeField::Change, TimeField::Modify, TimeField::Create] {
            i.set_time(f, attr.now);
        }
        let ft = attr.mode & S_IFMT;
        if matches!(ft, S_IFREG | S_IFDIR) && self.sb.has_incompat(INCOMPAT_EXTENTS) {
            i.set_flags(FL_EXTENTS);
            self.write_extent_tree(&mut i, &[], &[])?;
        }
        if matches!(ft, S_IFCHR | S_IFBLK) {
            let (major, minor) = (attr.rdev >> 8 & 0xfff, (attr.rdev & 0xff) | (attr.rdev >> 12 & 0xfff00));
            let mut area = [0u8; 60];
            if major < 256 && minor < 256 {
                area[0..4].copy_from_slice(&((major << 8) | minor).to_le_bytes());
            } else {
                let enc = (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12);
                area[4..8].copy_from_slice(&enc.to_le_bytes());
            }
            i.set_block_area(&area);
        }
        Ok(i)
    }

    /// Creates a non-directory node `name` in `dir` (a regular file, FIFO,
    /// socket or device); returns its inode number.
    pub(crate) fn create_inner(&mut self, dir: u32, name: &[u8], attr: NewInode) -> Result<u32> {
        self.writable()?;
        Self::check_name(name)?;
        let ft = attr.mode & S_IFMT;
        if !matches!(ft, S_IFREG | S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK) {
            return Err(Errno::EINVAL);
        }
        let mut d = self.dir_inode(dir)?;
        // Nothing below changes a block of `d` before the entry goes in:
        // the room the absence check saw is still there.
        let slot = self.absent_with_slot(&d, name)?;
        let ino = self.alloc_inode(self.block_group_of_inode(dir), false)?;
        let mut i = self.init_inode(ino, &attr)?;
        i.set_links(1);
        self.store_inode(&mut i)?;
        self.add_entry_at(&mut d, name, ino, dirent_type(attr.mode), slot)?;
        self.touch_dir(&mut d, attr.now)?;
        self.maybe_commit()?;
        Ok(ino)
    }

    fn touch_dir(&mut self, d: &mut Inode, now: Timestamp) -> Result<()> {
        let mut fresh = self.load_inode(d.ino)?;
        fresh.set_time(TimeField::Modify, now);
        fresh.set_time(TimeField::Change, now);
        self.store_inode(&mut fresh)?;
        *d = fresh;
        Ok(())
    }

    fn inc_dir_links(&mut self, d: &mut Inode) -> Result<()> {
        let n = d.links();
        if n >= LINK_MAX - 1 || n == 1 {
            if !self.sb.has_ro_compat(RO_COMPAT_DIR_NLINK) {
                return Err(Errno::EMLINK);
            }
            d.set_links(1);
        } else {
            d.set_links(n + 1);
        }
        Ok(())
    }

    fn dec_dir_links(&mut self, d: &mut Inode) {
        let n = d.links();
        if n > 2 {
            d.set_links(n - 1);
        }
    }

    pub(crate) fn mkdir_inner(&mut self, dir: u32, name: &[u8], attr: NewInode) -> Result<u32> {
        self.writable()?;
        Self::check_name(name)?;
        let mut d = self.dir_inode(dir)?;
        self.absent(dir, name)?;
        if d.links() >= LINK_MAX - 1 && !self.sb.has_ro_compat(RO_COMPAT_DIR_NLINK) {
            return Err(Errno::EMLINK);
        }
        let ino = self.alloc_inode(self.block_group_of_inode(dir), true)?;
        let mode = (attr.mode & !S_IFMT) | S_IFDIR;
        let mut i = self.init_inode(ino, &NewInode { mode, ..attr })?;
        let goal = self.group_first_block(self.block_group_of_inode(ino));
        let (phys, _) = self.alloc_blocks(goal, 1)?;
        let b = self.new_dir_block(ino, dir);
        self.put_dir_block(&i, phys, b)?;
        let ext = [Extent { logical: 0, len: 1, phys, uninit: false }];
        let used = self.write_map(&mut i, &ext, &[])?;
        self.set_block_count(&mut i, &ext, used);
        i.set_size(self.bs as u64);
        i.set_links(2);
        self.store_inode(&mut i)?;
        self.add_entry(&mut d, name, ino, 2)?;
        let mut d = self.load_inode(dir)?;
        self.inc_dir_links(&mut d)?;
        d.set_time(TimeField::Modify, attr.now);
        d.set_time(TimeField::Change, attr.now);
        self.store_inode(&mut d)?;
        self.maybe_commit()?;
        Ok(ino)
    }

    pub(crate) fn symlink_inner(&mut self, dir: u32, name: &[u8], target: &[u8], attr: NewInode) -> Result<u32> {
        self.writable()?;
        Self::check_name(name)?;
        if target.is_empty() || target.len() >= 4096 {
            return Err(if target.is_empty() { Errno::ENOENT } else { Errno::ENAMETOOLONG });
        }
        let mut d = self.dir_inode(dir)?;
        self.absent(dir, name)?;
        let ino = self.alloc_inode(self.block_group_of_inode(dir), false)?;
        let mode = S_IFLNK | 0o777;
        let mut i = self.init_inode(ino, &NewInode { mode, ..attr })?;
        i.set_links(1);
        if target.len() < 60 {
            let mut area = [0u8; 60];
            area[..target.len()].copy_from_slice(target);
            i.set_block_area(&area);
            i.set_size(target.len() as u64);
            self.store_inode(&mut i)?;
        } else {
            if self.sb.has_incompat(INCOMPAT_EXTENTS) {
                i.set_flags(FL_EXTENTS);
                self.write_extent_tree(&mut i, &[], &[])?;
            }
            self.write_inode_data(&mut i, 0, target)?;
            self.store_inode(&mut i)?;
        }
        self.add_entry(&mut d, name, ino, 7)?;
        self.touch_dir(&mut d, attr.now)?;
        self.maybe_commit()?;
        Ok(ino)
    }

    pub fn readlink(&mut self, ino: u32) -> Result<Vec<u8>> {
        let i = self.live_inode(ino)?;
        if !i.is_symlink() {
            return Err(Errno::EINVAL);
        }
        let size = i.size();
        if size == 0 || size >= 4096 {
            return Err(Errno::EUCLEAN);
        }
        if self.is_fast_symlink(&i) {
            return Ok(i.block_area()[..size as usize].to_vec());
        }
        let map = self.file_map(&i)?;
        let mut buf = vec![0u8; size as usize];
        self.read_mapped(&i, &map, 0, &mut buf)?;
        Ok(buf)
    }

    /// Adds another name for non-directory `ino`.
    pub(crate) fn link_inner(&mut self, ino: u32, dir: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.writable()?;
        Self::check_name(name)?;
        let mut i = self.live_inode(ino)?;
        if i.is_dir() {
            return Err(Errno::EPERM);
        }
        if i.links() >= LINK_MAX {
            return Err(Errno::EMLINK);
        }
        let mut d = self.dir_inode(dir)?;
        self.absent(dir, name)?;
        self.add_entry(&mut d, name, ino, dirent_type(i.mode()))?;
        self.touch_dir(&mut d, now)?;
        i = self.load_inode(ino)?;
        i.set_links(i.links() + 1);
        i.set_time(TimeField::Change, now);
        self.store_inode(&mut i)?;
        self.maybe_commit()
    }

    /// Drops one link of `i` (stored); frees it when none remain.
    fn drop_link(&mut self, mut i: Inode, now: Timestamp) -> Result<()> {
        let n = i.links().saturating_sub(1);
        i.set_links(n);
        i.set_time(TimeField::Change, now);
        if n == 0 {
            return self.release_unlinked(i, now);
        }
        self.store_inode(&mut i)
    }

    /// Releases an inode's blocks, extended attributes and number.
    pub(crate) fn free_whole_inode(&mut self, mut i: Inode, now: Timestamp) -> Result<()> {
        let is_dir = i.is_dir();
        if !self.is_fast_symlink(&i) && (i.has_extents() || i.is_dir() || i.is_reg() || i.is_symlink()) {
            let map = self.file_map(&i)?;
            for e in &map.extents {
                self.free_blocks(e.phys, e.len as u64)?;
            }
            for &b in &map.tree_blocks {
                self.free_blocks(b, 1)?;
            }
            if i.has_extents() {
                self.write_extent_tree(&mut i, &[], &[])?;
            } else {
                i.set_block_area(&[0u8; 60]);
            }
        }
        self.release_xattr_block(&mut i)?;
        i.set_size(0);
        i.set_sectors(0);
        i.set_links(0);
        // e2fsck expects a deleted inode to carry a deletion time.
        i.set_dtime((now.sec as u32).max(1));
        self.store_inode(&mut i)?;
        self.free_inode(i.ino, is_dir)
    }

    pub(crate) fn unlink_inner(&mut self, dir: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.writable()?;
        let d = self.dir_inode(dir)?;
        let ino = self.lookup(dir, name)?;
        let i = self.live_inode(ino)?;
        if i.is_dir() {
            return Err(Errno::EISDIR);
        }
        self.remove_entry(&d, name)?;
        let mut d = d;
        self.touch_dir(&mut d, now)?;
        let i = self.load_inode(ino)?;
        self.drop_link(i, now)?;
        self.maybe_commit()
    }

    pub(crate) fn rmdir_inner(&mut self, dir: u32, name: &[u8], now: Timestamp) -> Result<()> {
        self.writable()?;
        if name == b"." {
            return Err(Errno::EINVAL);
        }
        if name == b".." {
            return Err(Errno::ENOTEMPTY);
        }
        let d = self.dir_inode(dir)?;
        let ino = self.lookup(dir, name)?;
        let i = self.live_inode(ino)?;
        if !i.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if !self.dir_is_empty(&i)? {
            return Err(Errno::ENOTEMPTY);
        }
        self.remove_entry(&d, name)?;
        self.release_unlinked(i, now)?;
        let mut d = self.load_inode(dir)?;
        self.dec_dir_links(&mut d);
        d.set_time(TimeField::Modify, now);
        d.set_time(TimeField::Change, now);
        self.store_inode(&mut d)?;
        self.maybe_commit()
    }

    /// Whether `ino` is `ancestor` or below it (walking `..` upwards).
    fn is_within(&mut self, mut ino: u32, ancestor: u32) -> Result<bool> {
        for _ in 0..65536 {
            if ino == ancestor {
                return Ok(true);
            }
            if ino == ROOT_INO {
                return Ok(false);
            }
            ino = self.lookup(ino, b"..")?;
        }
        Err(Errno::ELOOP)
    }

    /// Moves `src_dir/src_name` to `dst_dir/dst_name`, replacing a target
    /// as `rename(2)` does.
    pub(crate) fn rename_inner(
        &mut self,
        src_dir: u32,
        src_name: &[u8],
        dst_dir: u32,
        dst_name: &[u8],
        now: Timestamp,
    ) -> Result<()> {
        self.writable()?;
        Self::check_name(dst_name)?;
        if src_name == b"." || src_name == b".." {
            return Err(Errno::EBUSY);
        }
        self.dir_inode(src_dir)?;
        self.dir_inode(dst_dir)?;
        let ino = self.lookup(src_dir, src_name)?;
        let src = self.live_inode(ino)?;
        let moving_dir = src.is_dir();
        if moving_dir && src_dir != dst_dir && self.is_within(dst_dir, ino)? {
            return Err(Errno::EINVAL);
        }
        match self.lookup(dst_dir, dst_name) {
            Ok(t) if t == ino => return Ok(()),
            Ok(t) => {
                let target = self.live_inode(t)?;
                if moving_dir {
                    if !target.is_dir() {
                        return Err(Errno::ENOTDIR);
                    }
                    if !self.dir_is_empty(&target)? {
                        return Err(Errno::ENOTEMPTY);
                    }
                } else if target.is_dir() {
                    return Err(Errno::EISDIR);
                }
                let dd = self.load_inode(dst_dir)?;
                self.remove_entry(&dd, dst_name)?;
                if target.is_dir() {
                    self.release_unlinked(target, now)?;
                    let mut dd = self.load_inode(dst_dir)?;
                    self.dec_dir_links(&mut dd);
                    self.store_inode(&mut dd)?;
                } else {
                    self.drop_link(target, now)?;
                }
            }
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
        let sd = self.load_inode(src_dir)?;
        self.remove_entry(&sd, src_name)?;
        let mut dd = self.load_inode(dst_dir)?;
        self.add_entry(&mut dd, dst_name, ino, dirent_type(src.mode()))?;
        if moving_dir && src_dir != dst_dir {
            let mut s = self.load_inode(ino)?;
            self.set_dotdot(&mut s, dst_dir)?;
            let mut sd = self.load_inode(src_dir)?;
            self.dec_dir_links(&mut sd);
            self.store_inode(&mut sd)?;
            let mut dd = self.load_inode(dst_dir)?;
            self.inc_dir_links(&mut dd)?;
            self.store_inode(&mut dd)?;
        }
        let mut s = self.load_inode(ino)?;
        s.set_time(TimeField::Change, now);
        self.store_inode(&mut s)?;
        for d in [src_dir, dst_dir] {
            let mut di = self.load_inode(d)?;
            self.touch_dir(&mut di, now)?;
        }
        self.maybe_commit()
    }

    /// Swaps `a_dir/a_name` and `b_dir/b_name` (`RENAME_EXCHANGE`): both
    /// must exist; a directory that changes parent gets its `..` and the
    /// parents' link counts follow it.
    pub(crate) fn exchange_inner(
        &mut self,
        a_dir: u32,
        a_name: &[u8],
        b_dir: u32,
        b_name: &[u8],
        now: Timestamp,
    ) -> Result<()> {
        self.writable()?;
        if [a_name, b_name].iter().any(|n| *n == b"." || *n == b"..") {
            return Err(Errno::EBUSY);
        }
        self.dir_inode(a_dir)?;
        self.dir_inode(b_dir)?;
        let a = self.lookup(a_dir, a_name)?;
        let b = self.lookup(b_dir, b_name)?;
        if a == b {
            return Ok(());
        }
        let (ai, bi) = (self.live_inode(a)?, self.live_inode(b)?);
        let (a_is_dir, b_is_dir) = (ai.is_dir(), bi.is_dir());
        if a_dir != b_dir && ((a_is_dir && self.is_within(b_dir, a)?) || (b_is_dir && self.is_within(a_dir, b)?)) {
            return Err(Errno::EINVAL);
        }
        let ad = self.load_inode(a_dir)?;
        self.remove_entry(&ad, a_name)?;
        let bd = self.load_inode(b_dir)?;
        self.remove_entry(&bd, b_name)?;
        let mut ad = self.load_inode(a_dir)?;
        self.add_entry(&mut ad, a_name, b, dirent_type(bi.mode()))?;
        let mut bd = self.load_inode(b_dir)?;
        self.add_entry(&mut bd, b_name, a, dirent_type(ai.mode()))?;
        if a_dir != b_dir {
            for (moved, is_dir, to) in [(a, a_is_dir, b_dir), (b, b_is_dir, a_dir)] {
                if is_dir {
                    let mut m = self.load_inode(moved)?;
                    self.set_dotdot(&mut m, to)?;
                }
            }
            // One directory moved and a non-directory went the other way:
            // the first parent loses a `..` link and the second gains it.
            let shift = match (a_is_dir, b_is_dir) {
                (true, false) => Some((a_dir, b_dir)),
                (false, true) => Some((b_dir, a_dir)),
                _ => None,
            };
            if let Some((from, to)) = shift {
                let mut t = self.load_inode(to)?;
                self.inc_dir_links(&mut t)?;
                self.store_inode(&mut t)?;
                let mut f = self.load_inode(from)?;
                self.dec_dir_links(&mut f);
                self.store_inode(&mut f)?;
            }
        }
        for ino in [a, b] {
            let mut i = self.load_inode(ino)?;
            i.set_time(TimeField::Change, now);
            self.store_inode(&mut i)?;
        }
        for d in [a_dir, b_dir] {
            let mut di = self.load_inode(d)?;
            self.touch_dir(&mut di, now)?;
        }
        self.maybe_commit()
    }

    /// Changes mode bits (not the type), owner and times, as `chmod`,
    /// `chown` and `utimensat` do; `None` leaves a field alone.
    pub(crate) fn set_attr_inner(&mut self, ino: u32, attr: SetAttr) -> Result<()> {
        self.writable()?;
        let mut i = self.live_inode(ino)?;
        if let Some(m) = attr.mode {
            i.set_mode((i.mode() & S_IFMT) | (m & !S_IFMT));
        }
        if let Some(u) = attr.uid {
            i.set_uid(u);
        }
        if let Some(g) = attr.gid {
            i.set_gid(g);
        }
        if let Some(t) = attr.atime {
            i.set_time(TimeField::Access, t);
        }
        if let Some(t) = attr.mtime {
            i.set_time(TimeField::Modify, t);
        }
        i.set_time(TimeField::Change, attr.ctime);
        self.store_inode(&mut i)?;
        self.maybe_commit()
    }

    pub(crate) fn set_atime_inner(&mut self, ino: u32, atime: Timestamp) -> Result<()> {
        self.writable()?;
        let mut i = self.live_inode(ino)?;
        i.set_time(TimeField::Access, atime);
        self.store_inode(&mut i)?;
        self.maybe_commit()
    }
}

/// Changes for [`Ext4::set_attr`]; `ctime` is always set.
#[derive(Clone, Copy, Debug)]
pub struct SetAttr {
    pub mode: Option<u16>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub atime: Option<Timestamp>,
    pub mtime: Option<Timestamp>,
    pub ctime: Timestamp,
}
