//! The inode interface every file system implements, and the metadata
//! it reports. Operations a kind of inode does not support have default
//! implementations that return the errno Linux gives for them.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use linux_abi::errno::Errno;

use super::file::FileOps;

pub use linux_abi::consts::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    Regular,
    Directory,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

impl FileType {
    pub fn from_mode(mode: u32) -> Option<FileType> {
        Some(match mode & S_IFMT {
            S_IFREG => FileType::Regular,
            S_IFDIR => FileType::Directory,
            S_IFLNK => FileType::Symlink,
            S_IFCHR => FileType::CharDevice,
            S_IFBLK => FileType::BlockDevice,
            S_IFIFO => FileType::Fifo,
            S_IFSOCK => FileType::Socket,
            _ => return None,
        })
    }

    pub fn mode_bits(self) -> u32 {
        match self {
            FileType::Regular => S_IFREG,
            FileType::Directory => S_IFDIR,
            FileType::Symlink => S_IFLNK,
            FileType::CharDevice => S_IFCHR,
            FileType::BlockDevice => S_IFBLK,
            FileType::Fifo => S_IFIFO,
            FileType::Socket => S_IFSOCK,
        }
    }

    /// The `d_type` of getdents64.
    pub fn dirent_type(self) -> u8 {
        match self {
            FileType::Fifo => 1,
            FileType::CharDevice => 2,
            FileType::Directory => 4,
            FileType::BlockDevice => 6,
            FileType::Regular => 8,
            FileType::Symlink => 10,
            FileType::Socket => 12,
        }
    }
}

/// What stat reports. Times are nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct Metadata {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
}

impl Metadata {
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode).unwrap_or(FileType::Regular)
    }
}

/// statfs facts of a file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsStats {
    pub magic: u64,
    pub block_size: u64,
    pub blocks: u64,
    pub blocks_free: u64,
    pub files: u64,
    pub files_free: u64,
    pub name_max: u64,
}

/// Who owns a new inode: the creator's file-system ids, or a
/// set-group-ID directory's group (see `fs::perm::new_inode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

impl Owner {
    pub const ROOT: Owner = Owner { uid: 0, gid: 0 };
}

pub struct DirEntry {
    pub name: String,
    pub ino: u64,
    pub kind: FileType,
}

/// The rules of O_DIRECT on a file ([`Inode::direct_align`]).
#[derive(Clone, Copy, Debug)]
pub struct DirectIo {
    /// The disk's logical block size: a transfer's offset, length and
    /// buffer address must be multiples of it.
    pub align: u64,
    /// The file system's block size: a read running past the end is
    /// checked only up to the end rounded up to it.
    pub block: u64,
}

pub trait Inode: Send + Sync {
    fn metadata(&self) -> Metadata;

    fn file_type(&self) -> FileType {
        self.metadata().file_type()
    }

    fn fs_stats(&self) -> FsStats;

    fn as_any(&self) -> &dyn Any;

    fn set_mode(&self, _mode: u32) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    /// Changes the owner and group as they are given; the set-id bits a
    /// chown clears are cleared by the VFS through `set_mode`.
    fn set_owner(&self, _uid: Option<u32>, _gid: Option<u32>) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn set_times(&self, _atime: Option<u64>, _mtime: Option<u64>) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    /// Records an access (atime), leaving ctime alone; see
    /// `fs::mount::touch_atime` for when.
    fn set_atime(&self, _ns: u64) {}

    fn read_at(&self, _offset: u64, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(if self.file_type() == FileType::Directory { Errno::EISDIR } else { Errno::EINVAL })
    }

    fn write_at(&self, _offset: u64, _buf: &[u8]) -> Result<usize, Errno> {
        Err(if self.file_type() == FileType::Directory { Errno::EISDIR } else { Errno::EINVAL })
    }

    /// Whether read(2) may use [`Inode::read_user_at`] (asked once at
    /// open, `IoTraits::reads_to_user`).
    fn reads_to_user(&self) -> bool {
        false
    }

    /// Reads up to `len` bytes at `offset` straight into user memory at
    /// `addr` (files whose data sits in frames: the page cache copies once,
    /// frame to user page); `vm` gives the caller's address space when a
    /// fault must be resolved. Only called when `reads_to_user` said so.
    fn read_user_at(
        &self,
        _offset: u64,
        _addr: u64,
        _len: usize,
        _vm: &dyn Fn() -> Result<crate::mm::Vm, Errno>,
    ) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// O_DIRECT: how a direct transfer must be aligned when this file's
    /// I/O can bypass the page cache; `None` when O_DIRECT is served like any I/O (tmpfs, as Linux
    /// 6.6+ does, and files with no disk behind them).
    fn direct_align(&self) -> Option<DirectIo> {
        None
    }

    /// An O_DIRECT read (aligned as [`Inode::direct_align`] says): from
    /// the disk, after the cached dirty pages of the range were written.
    fn read_direct(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.read_at(offset, buf)
    }

    /// An O_DIRECT write: to the disk, the cached pages of the range
    /// written back and dropped first.
    fn write_direct(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        self.write_at(offset, buf)
    }

    fn truncate(&self, _size: u64) -> Result<(), Errno> {
        Err(if self.file_type() == FileType::Directory { Errno::EISDIR } else { Errno::EINVAL })
    }

    /// The file's seals (`F_SEAL_*`): None for files that cannot carry
    /// any (F_GET_SEALS is EINVAL there); tmpfs files have F_SEAL_SEAL
    /// unless made by memfd_create with MFD_ALLOW_SEALING.
    fn seals(&self) -> Option<u32> {
        None
    }

    /// F_ADD_SEALS (the caller has checked the bits and, for
    /// F_SEAL_WRITE, that no writable shared mapping exists).
    fn add_seals(&self, _seals: u32) -> Result<(), Errno> {
        Err(Errno::EINVAL)
    }

    /// fallocate(2) on a regular file, arguments already checked: `mode`
    /// is 0, FALLOC_FL_KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE (with or
    /// without KEEP_SIZE), COLLAPSE_RANGE or INSERT_RANGE; a mode the file
    /// system lacks is EOPNOTSUPP.
    fn allocate(&self, _mode: u32, _offset: u64, _len: u64) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// A mapping of this file is being made (see `Backing::file`).
    fn note_mapped(&self) {}

    /// Whether the file may be mapped anywhere: false only when it never
    /// was, so a shrinking truncate can skip looking for its pages.
    fn ever_mapped(&self) -> bool {
        true
    }

    /// Whether `frame_to_map` serves this file (MAP_SHARED needs it).
    fn has_page_frames(&self) -> bool {
        false
    }

    /// The frame holding page `index` of a file whose data lives in page
    /// frames (tmpfs), for a mapping to use directly; see
    /// `PageStore::frame_to_map`. `None` when the file system has no such
    /// frames, and mappings copy through `read_at` instead.
    fn frame_to_map(&self, _index: u64, _partial: bool) -> Option<Result<Option<hal::frame::UserFrame>, Errno>> {
        None
    }

    /// Whether stores through a shared mapping must be noticed (a file
    /// with a disk behind it): such a page is mapped read-only first, and
    /// a write fault calls `page_mkwrite` before making it writable.
    fn tracks_dirty(&self) -> bool {
        false
    }

    /// A shared mapping is about to make page `index` writable (Linux's
    /// `page_mkwrite`): the page is dirty from now on, and the file system
    /// has promised the blocks its writeback needs (ENOSPC: the store gets
    /// SIGBUS, as on Linux, rather than a writeback that fails later).
    fn page_mkwrite(&self, _index: u64) -> Result<(), Errno> {
        Ok(())
    }

    /// sync_file_range and msync: writes the dirty pages of bytes
    /// [offset, end) back, and with `wait` waits until the device has them.
    fn sync_range(&self, _offset: u64, _end: u64, _wait: bool) -> Result<(), Errno> {
        Ok(())
    }

    /// posix_fadvise on bytes [offset, end) (advice already checked):
    /// WILLNEED reads ahead, DONTNEED drops clean cached pages.
    fn advise(&self, _offset: u64, _end: u64, _advice: u32) -> Result<(), Errno> {
        Ok(())
    }

    /// The frames pages [first, end) of the file have now, for mapping
    /// the neighbours of a faulting page (fault-around); see
    /// `PageStore::existing_frames`. Makes no frame; files without page
    /// frames report none.
    fn existing_frames(&self, _first: u64, _end: u64, _partial: bool, _f: &mut dyn FnMut(u64, &hal::frame::UserFrame)) {
    }

    /// The physical address of the frame that holds page `index` now, if
    /// the file keeps its data in frames and that page has one. Never
    /// makes a frame (/proc uses it to tell file pages from copies).
    fn cached_page(&self, _index: u64) -> Option<u64> {
        None
    }

    /// SEEK_DATA (`data`) or SEEK_HOLE from `offset` (below `size`, the
    /// size lseek saw; see `fs::seek`). None: the file has no holes
    /// (every byte is data).
    fn seek_data(&self, _offset: u64, _size: u64, _data: bool) -> Option<Result<u64, Errno>> {
        None
    }

    /// Whether page `index` of the file is in memory (mincore).
    fn has_page(&self, _index: u64) -> bool {
        false
    }

    /// Frees pages [index, index + count), which then read as zeros
    /// (fallocate's FALLOC_FL_PUNCH_HOLE, MADV_REMOVE). Linux answers
    /// EOPNOTSUPP for file systems that cannot.
    fn punch_hole(&self, _index: u64, _count: u64) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// fsync (`datasync`: fdatasync) on a file of this inode: its data
    /// and (unless `datasync` and only times changed) its metadata durable
    /// on the device. In-memory file systems have nothing to do.
    fn sync(&self, _datasync: bool) -> Result<(), Errno> {
        Ok(())
    }

    /// syncfs on any file of the file system: everything it holds durable.
    fn sync_fs(&self) -> Result<(), Errno> {
        Ok(())
    }

    fn lookup(&self, _name: &str) -> Result<Arc<dyn Inode>, Errno> {
        Err(Errno::ENOTDIR)
    }

    /// Creates a file, directory, FIFO or device node (`mode` carries the
    /// type) owned by `owner`. Permission and the mode's set-id bits are
    /// the VFS's business (`fs::perm`); the file system stores them.
    fn create(&self, _name: &str, _mode: u32, _rdev: u64, _owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        Err(Errno::ENOTDIR)
    }

    fn symlink(&self, _name: &str, _target: &str, _owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        Err(Errno::ENOTDIR)
    }

    fn link(&self, _name: &str, _inode: &Arc<dyn Inode>) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }

    fn unlink(&self, _name: &str) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }

    fn rmdir(&self, _name: &str) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }

    /// Moves `old` in this directory to `new` in `new_dir` (same file system).
    fn rename(&self, _old: &str, _new_dir: &Arc<dyn Inode>, _new: &str, _flags: u32) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }

    /// `renameat2(RENAME_WHITEOUT)`: `rename` with `flags` (0 or
    /// RENAME_NOREPLACE), and in the same step a whiteout under the old
    /// name: a character device 0:0 with mode 0, owned by `owner`. A file
    /// system without whiteouts refuses the flag (EINVAL), as Linux's.
    fn rename_whiteout(
        &self,
        _old: &str,
        _new_dir: &Arc<dyn Inode>,
        _new: &str,
        _flags: u32,
        _owner: Owner,
    ) -> Result<(), Errno> {
        Err(Errno::EINVAL)
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        Err(Errno::ENOTDIR)
    }

    /// Calls `f(name, ino, type)` for the entries after `after` (or from
    /// the start) until it returns false, without allocating per entry.
    /// None if the file system has no name-ordered index.
    fn visit_entries(
        &self,
        _after: Option<&str>,
        _f: &mut dyn FnMut(&str, u64, FileType) -> bool,
    ) -> Option<Result<(), Errno>> {
        None
    }

    fn readlink(&self) -> Result<String, Errno> {
        Err(Errno::EINVAL)
    }

    /// Access the inode grants the calling process beyond what its mode
    /// bits allow (Linux's `->permission` hooks): /proc/<pid>/fd stays
    /// open to the process itself when it is not dumpable.
    fn grants_caller(&self, _mask: u32) -> bool {
        false
    }

    /// Whether lookups of this inode may be cached (not for /proc, whose
    /// entries come and go with processes).
    fn cacheable(&self) -> bool {
        true
    }

    /// For /proc's fd links: the open file itself instead of a path.
    fn magic_link(&self) -> Option<Result<Arc<super::dentry::Dentry>, Errno>> {
        None
    }

    /// A file handle for the inode (name_to_handle_at): its type and
    /// words; None when the file system cannot export handles
    /// (EOPNOTSUPP). Asking makes the inode findable by the handle for as
    /// long as it lives.
    fn file_handle(&self) -> Option<(i32, [u32; 3])> {
        None
    }

    /// On a file system's root: the inode a handle names, if it still
    /// lives (open_by_handle_at; ESTALE otherwise).
    fn inode_by_handle(&self, _kind: i32, _words: &[u32]) -> Option<Arc<dyn Inode>> {
        None
    }

    /// The extended attributes and ACLs the inode keeps, and what its
    /// file system allows (`fs::xattr`); None when it keeps none (every
    /// xattr call is then EOPNOTSUPP, listings are empty).
    fn xattrs(&self) -> Option<super::xattr::Xattrs<'_>> {
        None
    }

    /// Extended attributes a disk file system keeps itself (ext4), which
    /// the xattr calls use after their permission checks when the inode
    /// has no tmpfs-style store (`xattrs`).
    fn disk_xattrs(&self) -> Option<&dyn DiskXattrs> {
        None
    }

    /// Files with behaviour of their own (devices, FIFOs, /proc files)
    /// return their open-file operations; plain files and directories
    /// return None and get the generic ones.
    fn open(&self, _flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        None
    }
}

/// A file system's own extended attributes (names with their namespace
/// prefix, as the syscalls give them). XATTR_CREATE/REPLACE in `set`.
pub trait DiskXattrs {
    fn get(&self, name: &[u8]) -> Result<Vec<u8>, Errno>;
    fn set(&self, name: &[u8], value: &[u8], flags: u32) -> Result<(), Errno>;
    fn remove(&self, name: &[u8]) -> Result<(), Errno>;
    fn list(&self) -> Result<Vec<Vec<u8>>, Errno>;
}
