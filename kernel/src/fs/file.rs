//! Open file descriptions: what a file descriptor refers to. Several
//! descriptors (after dup or fork) share one description and its offset.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::dentry::Dentry;
use super::epoll::EpollEntry;
use super::inode::{FileType, Inode};
use crate::event::{Events, PollTable};
use crate::mm::Vm;
use crate::sync::Mutex;

/// What a kind of open file does. Files that ignore the offset (pipes,
/// terminals, devices) say so with `seekable() == false`.
pub trait FileOps: Send + Sync {
    fn read_at(&self, offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno>;
    fn write_at(&self, offset: u64, buf: &[u8], nonblock: bool) -> Result<usize, Errno>;
    fn seekable(&self) -> bool {
        true
    }
    /// Whether `read_user` and `write_user` move data straight between
    /// user memory and the file (pipes), so read(2) and write(2) skip
    /// their staging buffer. Asked once at open (`IoTraits`).
    fn user_direct(&self) -> bool {
        false
    }
    /// Reads up to `len` bytes into user memory at `addr` (files that say
    /// `user_direct`); `vm` gives the caller's address space when a fault
    /// must be resolved.
    fn read_user(
        &self,
        _vm: &dyn Fn() -> Result<Vm, Errno>,
        _addr: u64,
        _len: usize,
        _nb: bool,
    ) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }
    /// Writes up to `len` bytes from user memory at `addr` (files that
    /// say `user_direct`).
    fn write_user(
        &self,
        _vm: &dyn Fn() -> Result<Vm, Errno>,
        _addr: u64,
        _len: usize,
        _nb: bool,
    ) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }
    /// The inode behind the file, for stat, mmap and directories.
    fn inode(&self) -> Option<&Arc<dyn Inode>> {
        None
    }
    /// A block device node: its logical block size, to which an O_DIRECT
    /// transfer's buffer, offset and length must be aligned.
    fn device_block_size(&self) -> Option<u64> {
        None
    }
    fn ioctl(&self, _cmd: u32, _arg: u64, _vm: &Vm) -> Result<u64, Errno> {
        Err(Errno::ENOTTY)
    }
    /// The file's readiness now (`Events::IN`, `OUT`, `HUP`...). A caller
    /// that will wait passes a `PollTable`: the file registers it on each
    /// notification head whose changes may change the answer, before it
    /// reads its state. A file without a head registers nothing and is
    /// always ready (regular files); epoll refuses such files (EPERM), as
    /// Linux refuses files without a poll method.
    fn poll(&self, _table: Option<&mut PollTable>) -> Events {
        Events::ALWAYS
    }
    /// Whether a short read ends the read(2) (pipes, terminals): files
    /// that always fill the buffer (regular files, /dev/zero) say false.
    fn partial_reads(&self) -> bool {
        !self.seekable()
    }
    /// Devices whose position is always the same (/dev/null: 0).
    fn fixed_seek(&self) -> Option<u64> {
        None
    }
    /// Mapping this file gives anonymous memory (/dev/zero).
    fn maps_anonymous(&self) -> bool {
        false
    }
    /// An inode number for files without an inode (both ends of a pipe share one).
    fn ino(&self) -> Option<u64> {
        None
    }
    fn pipe_size(&self) -> Option<usize> {
        None
    }
    /// Whether splice and sendfile may read the file (Linux's
    /// `splice_read`): per-process /proc files say no.
    fn splice_read(&self) -> bool {
        true
    }
    /// The pipe behind a pipe end or FIFO, for splice, tee and vmsplice.
    fn as_pipe(&self) -> Option<&Arc<super::pipe::Pipe>> {
        None
    }
    /// F_SETPIPE_SZ; `privileged`: the caller may pass pipe-max-size
    /// (CAP_SYS_RESOURCE).
    fn set_pipe_size(&self, _size: u64, _privileged: bool) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }
    /// The size SEEK_END counts from, for files without an inode.
    fn size(&self) -> Option<u64> {
        self.inode().map(|i| i.metadata().size)
    }
    /// Devices with a fixed extent refuse seeks past it (EINVAL).
    fn seek_limit(&self) -> Option<u64> {
        None
    }
    /// Devices whose reads do not depend on what was written to them
    /// (/dev/null, /dev/zero): read(2) and write(2) serve them without a
    /// staging buffer or a call into the driver.
    fn sink(&self) -> Option<SinkKind> {
        None
    }
    /// `st_mode` for files without an inode.
    fn mode(&self) -> u32 {
        0
    }
    /// What a file of this kind adds to /proc/<pid>/fdinfo/<n> after
    /// the lines every file has (a pidfd's `Pid:`).
    fn fdinfo(&self, _out: &mut dyn core::fmt::Write) -> core::fmt::Result {
        Ok(())
    }
    /// TIOCGPTPEER on a pty master: the slave opened with `flags`, and
    /// the dentry it is found at.
    fn open_peer(&self, _flags: u32) -> Result<PeerFile, Errno> {
        Err(Errno::ENOTTY)
    }
    /// Whether O_ASYNC makes the file signal its owner (Linux's ->fasync:
    /// pipes, FIFOs, terminals, sockets, inotify); elsewhere O_ASYNC is
    /// only a flag.
    fn fasync(&self) -> bool {
        false
    }
    /// For a file that decides itself when O_ASYNC signals and with which
    /// reason (sockets), where its registration goes; files without one
    /// signal when their notification heads fire.
    fn async_slot(&self) -> Option<&super::fasync::AsyncSlot> {
        None
    }
    /// A descriptor of the file was closed (Linux's ->flush, run at every
    /// close, not only the last): a POSIX message queue drops the
    /// closer's notification registration.
    /// fsync/fdatasync of a file with its own operations (a block
    /// device node flushes its device); the inode's part is
    /// `Inode::sync`.
    fn fsync(&self) -> Result<(), Errno> {
        Ok(())
    }

    fn flush(&self) {}
    /// The file as `Any`, for calls that work on one kind of file only
    /// (mq_timedsend's message queue, the socket calls' socket,
    /// epoll_ctl's epoll, timerfd_settime's timer): `Some(self)` in the
    /// kinds they look for.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
    /// The epoll behind an epoll file: epoll_wait's look-up on every
    /// call, one indirect call where `as_any`'s downcast costs a second
    /// one and a type-id compare.
    fn as_epoll(&self) -> Option<&Arc<super::epoll::Epoll>> {
        None
    }
    /// Anonymous-inode files (epoll, eventfd, ...): the name
    /// /proc/<pid>/fd shows after `anon_inode:`.
    fn anon_name(&self) -> Option<&'static str> {
        None
    }
}

/// A file opened from another (TIOCGPTPEER), with where it is found.
pub type PeerFile = (Arc<dyn FileOps>, Option<Arc<Dentry>>);

/// What a sink device gives to reads; writes to either are discarded
/// without reading the caller's buffer, as Linux does (only the buffer's
/// range is checked).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SinkKind {
    /// Reads see end of file (/dev/null).
    Null,
    /// Reads see zero bytes (/dev/zero).
    Zero,
}

/// The properties of a file that read(2) and write(2) consult on every
/// call, asked of its `FileOps` once at open: a file's kind never changes,
/// and the hot paths then make no virtual calls to learn them.
#[derive(Clone, Copy, Debug)]
pub struct IoTraits {
    pub seekable: bool,
    pub partial_reads: bool,
    pub seek_limit: Option<u64>,
    pub sink: Option<SinkKind>,
    /// A directory, which read(2) refuses with EISDIR.
    pub is_dir: bool,
    /// `FileOps::user_direct`.
    pub user_direct: bool,
    /// The inode's `reads_to_user`: read(2) copies from its cached frames
    /// straight to user memory.
    pub reads_to_user: bool,
}

impl IoTraits {
    fn of(ops: &Arc<dyn FileOps>) -> IoTraits {
        IoTraits {
            seekable: ops.seekable(),
            partial_reads: ops.partial_reads(),
            seek_limit: ops.seek_limit(),
            sink: ops.sink(),
            is_dir: ops.inode().is_some_and(|i| i.file_type() == FileType::Directory),
            user_direct: ops.user_direct(),
            reads_to_user: ops.inode().is_some_and(|i| i.reads_to_user()),
        }
    }
}

pub struct OpenFile {
    pub ops: Arc<dyn FileOps>,
    /// Where the file was opened (for fchdir, /proc/<pid>/fd, *at calls).
    pub dentry: Option<Arc<Dentry>>,
    pub offset: Mutex<u64>,
    /// O_* status flags (O_APPEND, O_NONBLOCK, access mode, O_PATH).
    pub flags: AtomicU32,
    /// getdents64's place: the entry index the offset stood at after the
    /// last call, and the last name returned, so the next call resumes by
    /// name instead of counting from the start.
    pub dir_cursor: hal::sync::SpinLock<Option<(u64, alloc::string::String)>>,
    pub io: IoTraits,
    /// Who gets this file's SIGIO, and which signal (F_SETOWN, F_SETSIG).
    pub owner: hal::sync::SpinLock<super::fown::FileOwner>,
    /// The kinds of lock this description may own (`lock::USES_*`), so
    /// that closing it looks for them only when it ever took one.
    pub lock_use: AtomicU8,
    /// The epoll entries watching this description: they go when it does
    /// (Linux removes a file from every epoll when its last reference
    /// goes, however many descriptors pointed at it).
    pub(crate) epoll_links: hal::sync::SpinLock<Vec<Weak<EpollEntry>>>,
}

impl OpenFile {
    pub fn new(ops: Arc<dyn FileOps>, flags: u32) -> OpenFile {
        OpenFile {
            io: IoTraits::of(&ops),
            ops,
            dentry: None,
            offset: Mutex::new(0),
            flags: AtomicU32::new(flags),
            dir_cursor: hal::sync::SpinLock::new(None),
            owner: hal::sync::SpinLock::new(super::fown::FileOwner {
                kind: super::fown::OwnerKind::Thread,
                id: 0,
                signo: 0,
            }),
            lock_use: AtomicU8::new(0),
            epoll_links: hal::sync::SpinLock::new(Vec::new()),
        }
    }

    pub fn with_dentry(ops: Arc<dyn FileOps>, flags: u32, dentry: Arc<Dentry>) -> OpenFile {
        OpenFile {
            io: IoTraits::of(&ops),
            ops,
            dentry: Some(dentry),
            offset: Mutex::new(0),
            flags: AtomicU32::new(flags),
            dir_cursor: hal::sync::SpinLock::new(None),
            owner: hal::sync::SpinLock::new(super::fown::FileOwner {
                kind: super::fown::OwnerKind::Thread,
                id: 0,
                signo: 0,
            }),
            lock_use: AtomicU8::new(0),
            epoll_links: hal::sync::SpinLock::new(Vec::new()),
        }
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    pub fn is_path_only(&self) -> bool {
        self.flags() & c::O_PATH != 0
    }

    fn access_mode(&self) -> u32 {
        self.flags() & 3
    }

    pub fn readable(&self) -> bool {
        !self.is_path_only() && self.access_mode() != c::O_WRONLY
    }

    pub fn writable(&self) -> bool {
        !self.is_path_only() && self.access_mode() != c::O_RDONLY
    }

    pub fn nonblocking(&self) -> bool {
        self.flags() & c::O_NONBLOCK != 0
    }

    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.io.seekable {
            return self.ops.read_at(0, buf, self.nonblocking());
        }
        let mut off = self.offset.lock();
        let n = self.ops.read_at(*off, buf, self.nonblocking())?;
        *off += n as u64;
        Ok(n)
    }

    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.io.seekable {
            return self.ops.write_at(0, buf, self.nonblocking());
        }
        let mut off = self.offset.lock();
        if self.flags() & c::O_APPEND != 0 {
            *off = self.ops.inode().map_or(*off, |i| i.metadata().size);
        }
        let n = self.ops.write_at(*off, buf, self.nonblocking())?;
        *off += n as u64;
        Ok(n)
    }

    pub fn is_dir(&self) -> bool {
        self.io.is_dir
    }
}

impl Drop for OpenFile {
    /// The last reference went (Linux's __fput): inotify's close event,
    /// every epoll watching the description, O_ASYNC, locks and leases.
    fn drop(&mut self) {
        super::notify::closed(self);
        // Every epoll watching this description drops its entry. Nothing
        // else can reach the list now, so no lock.
        let links = core::mem::take(self.epoll_links.get_mut());
        for link in links {
            if let Some(entry) = link.upgrade() {
                entry.detach();
            }
        }
        let uses = self.lock_use.load(Ordering::Relaxed);
        if uses & super::lock::USES_ASYNC != 0 {
            super::fasync::disable(self);
        }
        if uses & !super::lock::USES_ASYNC != 0 {
            super::lock::description_closed(self);
        }
    }
}

/// A regular file or directory of some file system.
pub struct InodeFile {
    inode: Arc<dyn Inode>,
    /// Held while open for writing (ETXTBSY for exec meanwhile).
    _write_access: Option<super::writecount::WriteAccess>,
}

impl InodeFile {
    pub fn new(inode: Arc<dyn Inode>) -> InodeFile {
        InodeFile { inode, _write_access: None }
    }

    /// Opened for writing: no process may run the file meanwhile.
    pub fn for_writing(inode: Arc<dyn Inode>) -> Result<InodeFile, Errno> {
        let access = super::writecount::get_write_access(&inode)?;
        Ok(InodeFile { inode, _write_access: Some(access) })
    }
}

impl FileOps for InodeFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        self.inode.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        self.inode.write_at(offset, buf)
    }

    fn inode(&self) -> Option<&Arc<dyn Inode>> {
        Some(&self.inode)
    }

    fn mode(&self) -> u32 {
        self.inode.metadata().mode
    }
}

/// A file whose whole content is produced when it is opened (/proc files).
pub struct SnapshotFile {
    data: Vec<u8>,
    mode: u32,
}

impl SnapshotFile {
    pub fn new(data: Vec<u8>, mode: u32) -> SnapshotFile {
        SnapshotFile { data, mode }
    }
}

impl FileOps for SnapshotFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        let start = (offset as usize).min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EACCES)
    }

    fn mode(&self) -> u32 {
        self.mode
    }

    fn splice_read(&self) -> bool {
        false
    }
}
