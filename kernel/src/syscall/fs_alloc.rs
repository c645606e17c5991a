//! fallocate(2): reserving, punching out, zeroing, collapsing and
//! inserting a regular file's space, with Linux's argument checks in
//! Linux's order. tmpfs files (memfds among them) support allocating,
//! with or without FALLOC_FL_KEEP_SIZE (under RLIMIT_FSIZE), and punching
//! holes; ext4 files every mode but UNSHARE_RANGE. Shared mappings see
//! the changed bytes (see `fs::truncate`); other files answer EOPNOTSUPP.

use linux_abi::errno::Errno;
use linux_abi::ipc::{
    FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE, FALLOC_FL_NO_HIDE_STALE,
    FALLOC_FL_PUNCH_HOLE, FALLOC_FL_UNSHARE_RANGE, FALLOC_FL_ZERO_RANGE,
};

use super::fs_io::file;
use super::{SysResult, SyscallContext};
use crate::fs::inode::{S_IFDIR, S_IFIFO, S_IFMT, S_IFREG};

pub fn sys_fallocate(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, mode, offset, len) = (a[0] as i32, a[1] as u32, a[2] as i64, a[3] as i64);
    let f = file(ctx, fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    if offset < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    let supported = FALLOC_FL_KEEP_SIZE
        | FALLOC_FL_PUNCH_HOLE
        | FALLOC_FL_NO_HIDE_STALE
        | FALLOC_FL_COLLAPSE_RANGE
        | FALLOC_FL_ZERO_RANGE
        | FALLOC_FL_INSERT_RANGE
        | FALLOC_FL_UNSHARE_RANGE;
    if mode & !supported != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    // One mode at a time, KEEP_SIZE only where it means something
    // (the host Linux 6.18's vfs_fallocate: every other mix is EOPNOTSUPP).
    let keep_size = mode & FALLOC_FL_KEEP_SIZE != 0;
    match mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_NO_HIDE_STALE) {
        0 | FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_ZERO_RANGE => {}
        FALLOC_FL_PUNCH_HOLE if keep_size => {}
        FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE if !keep_size => {}
        _ => return Err(Errno::EOPNOTSUPP),
    }
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    let kind = f.ops.inode().map_or(f.ops.mode(), |i| i.metadata().mode) & S_IFMT;
    match kind {
        S_IFIFO => return Err(Errno::ESPIPE),
        S_IFDIR => return Err(Errno::EISDIR),
        S_IFREG => {}
        _ => return Err(Errno::ENODEV),
    }
    if offset.checked_add(len).is_none() {
        return Err(Errno::EFBIG);
    }
    let inode = f.ops.inode().ok_or(Errno::EOPNOTSUPP)?;
    // The file system does what it can (tmpfs: allocating and punching;
    // ext4: every mode but UNSHARE_RANGE) and refuses the rest.
    if mode & (FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_NO_HIDE_STALE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let (offset, len) = (offset as u64, len as u64);
    let changes_bytes = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE;
    // RLIMIT_FSIZE applies to growth past the size, KEEP_SIZE or not
    // (inode_newsize_ok): SIGXFSZ and EFBIG.
    let end = offset + len;
    if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) == 0
        && end > inode.metadata().size
    {
        super::splice::fsize_limit(ctx, &f, end - 1, 1)?;
    }
    if mode & changes_bytes != 0 {
        // Shared mappings stop showing the pages that changed.
        crate::fs::truncate::change_range(inode, mode, offset, len)?;
    } else {
        inode.allocate(mode, offset, len)?;
    }
    // Linux's vfs_fallocate reports a modification on success.
    crate::fs::notify::modified(&f);
    Ok(0)
}
