#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
//! Kiln's ext4 (and ext2) file system: the on-disk format and the jbd2
//! journal, read-write, as a pure library over a small [`BlockDevice`]
//! trait.
//!
//! The kernel adapts its block layer to [`BlockDevice`]; the host tests run
//! the same code over image files made and checked by e2fsprogs. Every
//! on-disk value is treated as hostile: it is validated before use,
//! arithmetic on it is checked, loops over on-disk structures are bounded,
//! and a corrupt image yields `EUCLEAN` (Linux's `EFSCORRUPTED`), never a
//! panic or a hang. Operations return Linux errnos.
//!
//! Metadata changes go to an in-memory set of dirty metadata blocks; file
//! data is written straight to the device (ordered mode: data reaches the
//! disk before the metadata that points at it). [`Ext4::commit`] writes the
//! dirty metadata as one jbd2 transaction (group commit: any number of
//! operations per transaction); its blocks are written home later, by a
//! checkpoint when the log is half full or at unmount (see
//! `journal_write`). The
//! caller owns the clock: every operation that changes a time takes it.

extern crate alloc;

mod alloc_bitmap;
mod bytes;
mod checksum;
mod dir;
mod extent;
mod falloc;
mod file;
mod fs;
mod group;
mod hash;
mod htree;
mod indirect;
mod inode;
mod journal;
mod journal_write;
mod namei;
mod op;
mod orphan;
mod reserve;
mod seek;
mod superblock;
mod xattr;

pub use checksum::crc32c;
pub use dir::DirEntry;
pub use fs::{Ext4, MountOptions, Stat, StatFs};
pub use inode::{Timestamp, ROOT_INO};
pub use journal_write::CommitTail;
pub use linux_abi::errno::Errno;
pub use namei::{NewInode, SetAttr};
pub use seek::{Span, SpanKind};
pub use xattr::XattrFlags;

/// Results carry Linux errno values.
pub type Result<T> = core::result::Result<T, Errno>;

/// Sector size of [`BlockDevice`] addresses.
pub const SECTOR_SIZE: usize = 512;

/// The storage under a file system: 512-byte sectors, read and written in
/// runs. Buffers are whole sectors. The kernel implements this over its
/// block layer (and page cache); the host tests over image files.
pub trait BlockDevice {
    /// The device's size in sectors.
    fn sector_count(&self) -> u64;
    /// Reads `buf.len() / 512` sectors starting at `sector`.
    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<()>;
    /// Reads consecutive sectors from `sector` into `bufs` laid end to
    /// end (each a whole number of sectors): a page cache's frames filled
    /// straight from the device. The default reads piece by piece; a
    /// device that scatters one request does better.
    fn read_scatter(&mut self, sector: u64, bufs: &mut [&mut [u8]]) -> Result<()> {
        let mut at = sector;
        for b in bufs.iter_mut() {
            self.read(at, b)?;
            at += (b.len() / 512) as u64;
        }
        Ok(())
    }
    /// Writes sectors; they may sit in a volatile cache until [`flush`].
    ///
    /// [`flush`]: BlockDevice::flush
    fn write(&mut self, sector: u64, buf: &[u8]) -> Result<()>;
    /// Makes every completed write durable (a cache flush / barrier).
    fn flush(&mut self) -> Result<()>;
    /// Writes sectors and returns only once they are durable (FUA). The
    /// default flushes afterwards; a device with real FUA does better.
    fn write_fua(&mut self, sector: u64, buf: &[u8]) -> Result<()> {
        self.write(sector, buf)?;
        self.flush()
    }
    /// Sends writes the device holds back (a plug) on their way, without
    /// waiting for them to become durable: a commit does it before its
    /// tail, which the caller may write through another handle.
    fn submit(&mut self) -> Result<()> {
        Ok(())
    }
    /// A device that refuses writes makes every mount read-only.
    fn is_read_only(&self) -> bool {
        false
    }
    /// Continues a raw CRC32C over `data` (see [`checksum::crc32c`]): the
    /// whole-block checksums (directory leaves, index blocks, bitmaps) go
    /// through here, so a kernel whose CPU has a CRC instruction can use
    /// it (as Linux's `crc32c-intel`). The default is the table-driven one.
    fn crc32c(&self, crc: u32, data: &[u8]) -> u32 {
        checksum::crc32c(crc, data)
    }
}

/// File types for [`Ext4::create`] and in [`DirEntry`], as in `st_mode`.
pub mod mode {
    pub use crate::inode::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};
}
