//! Open file descriptions: what a file descriptor refers to. Several
//! descriptors (after dup or fork) share one description and its offset.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU32, Ordering};

use linux_abi::errno::Errno;

use super::ramfs::{Inode, InodeKind};
use crate::sync::Mutex;

/// What a kind of file does. Offsets are handled by [`OpenFile`]; files
/// that ignore them (consoles, pipes) say so with `seekable() == false`.
pub trait FileOps: Send + Sync {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno>;
    fn write_at(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno>;
    fn seekable(&self) -> bool {
        true
    }
    /// The inode behind the file, for stat and mmap.
    fn inode(&self) -> Option<&Arc<Inode>> {
        None
    }
    fn ioctl(&self, _cmd: u32, _arg: u64) -> Result<u64, Errno> {
        Err(Errno::ENOTTY)
    }
    /// `st_mode` file type and permission bits.
    fn mode(&self) -> u32;
}

pub struct OpenFile {
    pub ops: Arc<dyn FileOps>,
    pub offset: Mutex<u64>,
    /// O_* status flags (O_APPEND, O_NONBLOCK, access mode).
    pub flags: AtomicU32,
}

impl OpenFile {
    pub fn new(ops: Arc<dyn FileOps>, flags: u32) -> OpenFile {
        OpenFile { ops, offset: Mutex::new(0), flags: AtomicU32::new(flags) }
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    fn access_mode(&self) -> u32 {
        self.flags() & 3
    }

    pub fn readable(&self) -> bool {
        self.access_mode() != linux_abi::consts::O_WRONLY
    }

    pub fn writable(&self) -> bool {
        self.access_mode() != linux_abi::consts::O_RDONLY
    }

    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.readable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return self.ops.read_at(0, buf);
        }
        let mut off = self.offset.lock();
        let n = self.ops.read_at(*off, buf)?;
        *off += n as u64;
        Ok(n)
    }

    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.writable() {
            return Err(Errno::EBADF);
        }
        if !self.ops.seekable() {
            return self.ops.write_at(0, buf);
        }
        let mut off = self.offset.lock();
        let n = self.ops.write_at(*off, buf)?;
        *off += n as u64;
        Ok(n)
    }
}

/// A regular file or directory of the in-memory tree.
pub struct InodeFile {
    inode: Arc<Inode>,
}

impl InodeFile {
    pub fn new(inode: Arc<Inode>) -> InodeFile {
        InodeFile { inode }
    }
}

impl FileOps for InodeFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inode.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        match &self.inode.kind {
            InodeKind::File(data) => {
                let mut data = data.lock();
                let end = (offset as usize).checked_add(buf.len()).ok_or(Errno::EFBIG)?;
                if end > data.len() {
                    let grow = end - data.len();
                    data.try_reserve(grow).map_err(|_| Errno::ENOSPC)?;
                    data.resize(end, 0);
                }
                data[offset as usize..end].copy_from_slice(buf);
                Ok(buf.len())
            }
            InodeKind::Dir(_) => Err(Errno::EISDIR),
            InodeKind::Symlink(_) => Err(Errno::EINVAL),
        }
    }

    fn inode(&self) -> Option<&Arc<Inode>> {
        Some(&self.inode)
    }

    fn mode(&self) -> u32 {
        self.inode.mode
    }
}
