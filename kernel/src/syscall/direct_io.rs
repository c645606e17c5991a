//! O_DIRECT transfers for `read`/`write` and their positioned and vector
//! forms, on files whose inode can bypass the page cache
//! (`Inode::direct_align`: ext4's regular files): Linux's alignment rules
//! and the copy between user memory and the file.
//!
//! Rules (Linux 6.1's): the buffer's address, the file offset and the
//! length must be multiples of the disk's logical block size, or the call
//! fails with EINVAL before any byte moves; a read at or past the end
//! returns 0, and a read that runs past the end is checked only up to the
//! end rounded up to a file-system block (Linux's last mapping stops
//! there), then comes back short. Newer Linux checks the buffer only against the device's DMA
//! alignment; Kiln keeps the 512-byte rule.
//!
//! The hal gives no DMA into user pages, so the bytes are copied between
//! the user's buffer and a kernel buffer here, and the block layer copies
//! them into its DMA buffers: the page cache is bypassed, the copies are
//! not.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Iovec;

use super::fs_io::bounce;
use super::{SysResult, SyscallContext};
use crate::fs::file::OpenFile;
use crate::fs::inode::DirectIo;
use crate::fs::Inode;
use crate::sync::MutexGuard;

/// Bytes moved per call of the file system (one kernel buffer).
const DIRECT_CHUNK: usize = 512 * 1024;

/// The inode of a transfer on `f` when it is direct, with its rules.
pub(super) fn direct(f: &OpenFile) -> Option<(&Arc<dyn Inode>, DirectIo)> {
    if f.flags() & c::O_DIRECT == 0 {
        return None;
    }
    let inode = f.ops.inode()?;
    let align = inode.direct_align()?;
    Some((inode, align))
}

/// O_DIRECT on a block device node ([`FileOps::device_block_size`]): the
/// buffer's address, the offset and the length must be multiples of the
/// device's logical block size, or the call fails with EINVAL before any
/// byte moves (Linux's blkdev_dio_unaligned). An empty call, and a read
/// at or past the end (which returns 0), are not checked; a read running
/// past the end is cut there first (Linux's blkdev_read_iter), and a
/// write at or past the end stays ENOSPC. The node has no cache, so an
/// aligned call is served as any other.
///
/// [`FileOps::device_block_size`]: crate::fs::file::FileOps::device_block_size
pub(super) fn check_device(f: &OpenFile, buf: u64, len: u64, at: Option<u64>, write: bool) -> Result<(), Errno> {
    if f.flags() & c::O_DIRECT == 0 || len == 0 {
        return Ok(());
    }
    let Some(block) = f.ops.device_block_size() else { return Ok(()) };
    let pos = at.unwrap_or_else(|| *f.offset.lock());
    let size = f.ops.size().unwrap_or(u64::MAX);
    if pos >= size {
        return Ok(());
    }
    let len = if write { len } else { len.min(size - pos) };
    if aligned(block, &[buf, pos, len]) {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

fn aligned(align: u64, values: &[u64]) -> bool {
    values.iter().all(|v| v % align == 0)
}

/// A vector transfer is direct I/O as a whole: a segment whose address or
/// length is not aligned fails the call before any byte moves (Linux
/// checks the whole iterator); for a read, a segment's length only up to
/// the end rounded up to a block, as for one buffer. `at` is the offset
/// of a positioned call.
pub(super) fn check_vector(f: &OpenFile, iovs: &[Iovec], at: Option<u64>, write: bool) -> Result<(), Errno> {
    if let Some(block) = f.ops.device_block_size().filter(|_| f.flags() & c::O_DIRECT != 0) {
        // Each segment as one buffer, the offset once.
        let total: u64 = iovs.iter().map(|v| v.iov_len).fold(0, u64::saturating_add);
        check_device(f, 0, total, at, write)?;
        let pos = at.unwrap_or_else(|| *f.offset.lock());
        let past_end = !write && pos >= f.ops.size().unwrap_or(u64::MAX);
        if total > 0
            && !past_end
            && iovs.iter().filter(|v| v.iov_len > 0).any(|v| !aligned(block, &[v.iov_base, v.iov_len]))
        {
            return Err(Errno::EINVAL);
        }
        return Ok(());
    }
    let Some((inode, DirectIo { align, block })) = direct(f) else { return Ok(()) };
    let limit = if write {
        u64::MAX
    } else {
        let pos = at.unwrap_or_else(|| *f.offset.lock());
        let block = block.max(align);
        inode.metadata().size.div_ceil(block).saturating_mul(block).saturating_sub(pos)
    };
    let mut offset = 0u64;
    for v in iovs.iter().filter(|v| v.iov_len > 0) {
        let len = v.iov_len.min(limit.saturating_sub(offset));
        if !aligned(align, &[v.iov_base, len]) {
            return Err(Errno::EINVAL);
        }
        offset = offset.saturating_add(v.iov_len);
    }
    Ok(())
}

/// The file position, held for the whole call, when the call has no
/// offset of its own (read/write rather than pread/pwrite).
fn position_lock(f: &OpenFile, at: Option<u64>) -> Option<MutexGuard<'_, u64>> {
    at.is_none().then(|| f.offset.lock())
}

/// A direct read of `len` bytes into `buf`, at `at` or the file position.
pub(super) fn read(
    ctx: &SyscallContext,
    f: &OpenFile,
    inode: &Arc<dyn Inode>,
    DirectIo { align, block }: DirectIo,
    buf: u64,
    len: usize,
    at: Option<u64>,
) -> SysResult {
    let mut position = position_lock(f, at);
    let pos = at.unwrap_or_else(|| position.as_deref().copied().unwrap_or(0));
    let size = inode.metadata().size;
    if pos >= size {
        return Ok(0);
    }
    // Checked up to the end rounded up to a block: past it, nothing is read.
    let block = block.max(align);
    let end_block = size.div_ceil(block).saturating_mul(block);
    let checked = (len as u64).min(end_block - pos);
    if !aligned(align, &[buf, pos, checked]) {
        return Err(Errno::EINVAL);
    }
    let mut tmp = bounce(len.min(DIRECT_CHUNK))?;
    let mut done = 0;
    while done < len {
        let want = (len - done).min(tmp.len());
        let n = inode.read_direct(pos + done as u64, &mut tmp[..want])?;
        if n == 0 {
            break;
        }
        ctx.copy_to_user(buf + done as u64, &tmp[..n])?;
        done += n;
        if n < want {
            break;
        }
    }
    if let Some(p) = position.as_deref_mut() {
        *p = pos + done as u64;
    }
    Ok(done as u64)
}

/// A direct write of `len` bytes from `buf`, at `at` or the file position
/// (the end with O_APPEND).
pub(super) fn write(
    ctx: &SyscallContext,
    f: &OpenFile,
    inode: &Arc<dyn Inode>,
    DirectIo { align, .. }: DirectIo,
    buf: u64,
    len: usize,
    at: Option<u64>,
) -> SysResult {
    let mut position = position_lock(f, at);
    let pos = if f.flags() & c::O_APPEND != 0 {
        inode.metadata().size
    } else {
        at.unwrap_or_else(|| position.as_deref().copied().unwrap_or(0))
    };
    if !aligned(align, &[buf, pos, len as u64]) {
        return Err(Errno::EINVAL);
    }
    let mut tmp = bounce(len.min(DIRECT_CHUNK))?;
    let mut done = 0;
    while done < len {
        let want = (len - done).min(tmp.len());
        ctx.copy_from_user(buf + done as u64, &mut tmp[..want])?;
        let n = match inode.write_direct(pos + done as u64, &tmp[..want]) {
            Ok(n) => n,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        done += n;
        if n < want {
            break;
        }
    }
    if let Some(p) = position.as_deref_mut() {
        *p = pos + done as u64;
    }
    Ok(done as u64)
}
