//! inotify_init, inotify_init1, inotify_add_watch and inotify_rm_watch
//! (the instance is `fs::inotify`, the events come from `fs::notify`).
//! A watch needs read permission on what it watches, the path looked up
//! as the caller; instances count against their creator's effective
//! user.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::fs_io::install;
use super::fs_path::{lookup_at, path_arg};
use super::{SysResult, SyscallContext};
use crate::cred::MAY_READ;
use crate::fs::file::FileOps;
use crate::fs::inotify::{Inotify, ALL_BITS};
use crate::fs::{perm, OpenFile};

fn create(ctx: &SyscallContext, flags: u32) -> SysResult {
    if flags & !(c::IN_CLOEXEC | c::IN_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let ops: Arc<dyn FileOps> = Inotify::new(ctx.cred().euid)?;
    install(ctx, OpenFile::new(ops, c::O_RDONLY | (flags & c::IN_NONBLOCK)), flags & c::IN_CLOEXEC != 0)
}

pub fn sys_inotify_init(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    create(ctx, 0)
}

pub fn sys_inotify_init1(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create(ctx, a[0] as u32)
}

/// The inotify instance behind `fd`: EBADF, or EINVAL for other files.
fn instance(ctx: &SyscallContext, fd: i32) -> Result<Arc<OpenFile>, Errno> {
    let f = ctx.process().files().lock().get(fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    Ok(f)
}

pub fn sys_inotify_add_watch(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, path_ptr, mask) = (a[0] as i32, a[1], a[2] as u32);
    if mask & !ALL_BITS != 0 || mask == 0 {
        return Err(Errno::EINVAL);
    }
    let f = instance(ctx, fd)?;
    if mask & c::IN_MASK_ADD != 0 && mask & c::IN_MASK_CREATE != 0 {
        return Err(Errno::EINVAL);
    }
    let group = Inotify::of(&f.ops).ok_or(Errno::EINVAL)?;
    let path = path_arg(ctx, path_ptr)?;
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &path, mask & c::IN_DONT_FOLLOW == 0, false)?;
    if mask & c::IN_ONLYDIR != 0 && !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    // Linux's inotify_find_inode: only what the caller may read.
    perm::permission(&cred, &d, MAY_READ)?;
    group.add_watch(d.inode().clone(), mask).map(|wd| wd as u64)
}

pub fn sys_inotify_rm_watch(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = instance(ctx, a[0] as i32)?;
    let group = Inotify::of(&f.ops).ok_or(Errno::EINVAL)?;
    group.rm_watch(a[1] as i32)?;
    Ok(0)
}
