//! Block device nodes (/dev/vda): reads and writes at any byte offset
//! (whole sectors go straight through; a partial sector is read, changed
//! and written back), fsync as a device flush, and the ioctls tools ask
//! a disk (BLKGETSIZE64, BLKGETSIZE, BLKSSZGET, BLKPBSZGET, BLKROGET,
//! BLKFLSBUF, BLKDISCARD). There is no buffer cache under the node: every
//! call reaches the device, as O_DIRECT would on Linux. With O_DIRECT the
//! call must also be aligned as Linux's is (`syscall/direct_io.rs`).

use alloc::sync::Arc;
use alloc::vec::Vec;

use blockdev::SECTOR;
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::BlockQueue;
use crate::fs::file::FileOps;
use crate::mm::{uaccess, Vm};

pub struct BlockFile {
    queue: Arc<BlockQueue>,
}

/// Opens the block device `rdev` (ENXIO if no driver has it).
pub fn open(rdev: u64) -> Result<Arc<dyn FileOps>, Errno> {
    let queue = super::by_rdev(rdev).ok_or(Errno::ENXIO)?;
    Ok(Arc::try_new(BlockFile { queue }).map_err(|_| Errno::ENOMEM)?)
}

/// The sector-aligned window around [offset, offset + len), clipped to the
/// device: (first sector, byte count).
fn window(size: u64, offset: u64, len: usize) -> (u64, usize) {
    let end = offset.saturating_add(len as u64).min(size);
    let first = offset / SECTOR as u64;
    let last = end.div_ceil(SECTOR as u64);
    (first, ((last - first) as usize) * SECTOR)
}

impl FileOps for BlockFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        let size = self.queue.size_bytes();
        if offset >= size || buf.is_empty() {
            return Ok(0);
        }
        let len = buf.len().min((size - offset) as usize);
        let skip = (offset % SECTOR as u64) as usize;
        if skip == 0 && len.is_multiple_of(SECTOR) {
            self.queue.read(offset / SECTOR as u64, &mut buf[..len])?;
            return Ok(len);
        }
        let (first, bytes) = window(size, offset, len);
        let mut bounce = Vec::new();
        bounce.try_reserve_exact(bytes).map_err(|_| Errno::ENOMEM)?;
        bounce.resize(bytes, 0);
        self.queue.read(first, &mut bounce)?;
        buf[..len].copy_from_slice(&bounce[skip..skip + len]);
        Ok(len)
    }

    fn write_at(&self, offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        if self.queue.info.read_only {
            return Err(Errno::EPERM);
        }
        let size = self.queue.size_bytes();
        if offset >= size && !buf.is_empty() {
            return Err(Errno::ENOSPC);
        }
        let len = buf.len().min((size - offset) as usize);
        let skip = (offset % SECTOR as u64) as usize;
        if skip == 0 && len.is_multiple_of(SECTOR) {
            self.queue.write(offset / SECTOR as u64, &buf[..len], false)?;
            return Ok(len);
        }
        let (first, bytes) = window(size, offset, len);
        let mut bounce = Vec::new();
        bounce.try_reserve_exact(bytes).map_err(|_| Errno::ENOMEM)?;
        bounce.resize(bytes, 0);
        self.queue.read(first, &mut bounce)?;
        bounce[skip..skip + len].copy_from_slice(&buf[..len]);
        self.queue.write(first, &bounce, false)?;
        Ok(len)
    }

    fn size(&self) -> Option<u64> {
        Some(self.queue.size_bytes())
    }

    fn mode(&self) -> u32 {
        crate::fs::inode::S_IFBLK
    }

    fn device_block_size(&self) -> Option<u64> {
        Some(u64::from(self.queue.info.logical_block_size.max(SECTOR as u32)))
    }

    fn fsync(&self) -> Result<(), Errno> {
        self.queue.flush()
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        let q = &self.queue;
        match cmd {
            c::BLKGETSIZE64 => uaccess::write_u64(vm, arg, q.size_bytes())?,
            c::BLKGETSIZE => uaccess::write_u64(vm, arg, q.info.sectors)?,
            c::BLKSSZGET => uaccess::write_u32(vm, arg, q.info.logical_block_size)?,
            c::BLKPBSZGET => uaccess::write_u32(vm, arg, q.info.logical_block_size)?,
            c::BLKROGET => uaccess::write_u32(vm, arg, u32::from(q.info.read_only))?,
            c::BLKFLSBUF => q.flush()?,
            c::BLKDISCARD => {
                let start = uaccess::read_u64(vm, arg)?;
                let len = uaccess::read_u64(vm, arg.wrapping_add(8))?;
                if !start.is_multiple_of(SECTOR as u64) || !len.is_multiple_of(SECTOR as u64) {
                    return Err(Errno::EINVAL);
                }
                if start.checked_add(len).is_none_or(|e| e > q.size_bytes()) {
                    return Err(Errno::EINVAL);
                }
                q.discard(start / SECTOR as u64, len / SECTOR as u64)?;
            }
            _ => return Err(Errno::ENOTTY),
        }
        Ok(0)
    }
}
