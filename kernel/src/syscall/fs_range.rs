//! Hints on a byte range of an open file: fadvise64 and readahead
//! (checked as Linux checks them; a file in the page cache reads ahead on
//! WILLNEED and drops its clean pages on DONTNEED), and sync_file_range
//! (writes a cached file's dirty pages of the range back). fallocate is
//! in `fs_alloc`.

use linux_abi::errno::Errno;
use linux_abi::fs as x;

use super::fs_io::file;
use super::fs_path::file_metadata;
use super::{SysResult, SyscallContext};
use crate::fs::inode::FileType;

/// The type of the file behind a descriptor (pipes have no inode).
fn kind_of(f: &crate::fs::OpenFile) -> FileType {
    match (&f.dentry, f.ops.inode()) {
        (_, Some(i)) => i.file_type(),
        (Some(d), None) => d.inode().file_type(),
        (None, None) => file_metadata(f).file_type(),
    }
}

/// Advice a file without backing store accepts and ignores
/// (`generic_fadvise` for tmpfs, devices and /proc): EINVAL for unknown
/// advice or a negative length, ESPIPE for pipes.
fn fadvise(f: &crate::fs::OpenFile, len: i64, advice: u32) -> Result<(), Errno> {
    if kind_of(f) == FileType::Fifo {
        return Err(Errno::ESPIPE);
    }
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    match advice {
        x::POSIX_FADV_NORMAL
        | x::POSIX_FADV_RANDOM
        | x::POSIX_FADV_SEQUENTIAL
        | x::POSIX_FADV_WILLNEED
        | x::POSIX_FADV_DONTNEED
        | x::POSIX_FADV_NOREUSE => Ok(()),
        _ => Err(Errno::EINVAL),
    }
}

fn path_only_is_ebadf(f: &crate::fs::OpenFile) -> Result<(), Errno> {
    if f.is_path_only() {
        Err(Errno::EBADF)
    } else {
        Ok(())
    }
}

pub fn sys_fadvise64(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    path_only_is_ebadf(&f)?;
    let (offset, len, advice) = (a[1] as i64, a[2] as i64, a[3] as u32);
    fadvise(&f, len, advice)?;
    if let Some(inode) = f.ops.inode() {
        let from = offset.max(0) as u64;
        let end = if len == 0 { u64::MAX } else { from.saturating_add(len as u64) };
        inode.advise(from, end, advice)?;
    }
    Ok(0)
}

pub fn sys_readahead(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    // Only files with a page cache read ahead.
    if !matches!(kind_of(&f), FileType::Regular | FileType::BlockDevice) || f.ops.inode().is_none() {
        return Err(Errno::EINVAL);
    }
    fadvise(&f, a[2] as i64, x::POSIX_FADV_WILLNEED)?;
    if let Some(inode) = f.ops.inode() {
        let from = a[1] as i64;
        if from >= 0 {
            inode.advise(from as u64, (from as u64).saturating_add(a[2]), x::POSIX_FADV_WILLNEED)?;
        }
    }
    Ok(0)
}

pub fn sys_sync_file_range(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (offset, nbytes, flags) = (a[1] as i64, a[2] as i64, a[3] as u32);
    let f = file(ctx, a[0] as i32)?;
    path_only_is_ebadf(&f)?;
    let valid = x::SYNC_FILE_RANGE_WAIT_BEFORE | x::SYNC_FILE_RANGE_WRITE | x::SYNC_FILE_RANGE_WAIT_AFTER;
    if flags & !valid != 0 {
        return Err(Errno::EINVAL);
    }
    let end = offset.wrapping_add(nbytes);
    if offset < 0 || end < 0 || end < offset {
        return Err(Errno::EINVAL);
    }
    match kind_of(&f) {
        FileType::Regular | FileType::BlockDevice | FileType::Directory | FileType::Symlink => {}
        _ => return Err(Errno::ESPIPE),
    }
    if flags & x::SYNC_FILE_RANGE_WRITE != 0 {
        if let Some(inode) = f.ops.inode() {
            let end = if nbytes == 0 { u64::MAX } else { end as u64 };
            inode.sync_range(offset as u64, end, flags & x::SYNC_FILE_RANGE_WAIT_AFTER != 0)?;
        }
    }
    Ok(0)
}
