//! Namespace calls: mkdir, mknod, unlink, rmdir, rename, link and
//! symlink. Each checks what Linux's namei.c checks, in its order: the
//! walk to the parent (search permission), the kind of last component,
//! a read-only mount (EROFS), then `fs::perm`'s create and delete rules
//! (write and search on the directory, the sticky bit), then what the
//! file system itself refuses.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use linux_abi::capability::{CAP_DAC_READ_SEARCH, CAP_MKNOD};
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::fs_path::{lookup_at, path_arg, path_arg_maybe_empty, start_dir};
use super::{SysResult, SyscallContext};
use crate::cred::MAY_WRITE;
use crate::fs::dentry::{check_writable, resolve_parent, Dentry};
use crate::fs::inode::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG, S_IFSOCK};
use crate::fs::{notify, perm};

/// Whether two dentries name the same inode.
fn same_inode(a: &Arc<Dentry>, b: &Arc<Dentry>) -> bool {
    core::ptr::eq(Arc::as_ptr(a.inode()) as *const (), Arc::as_ptr(b.inode()) as *const ())
}

/// mkdir and mknod: `mode` carries the type and the requested bits.
fn create_at(ctx: &SyscallContext, dirfd: i32, path_ptr: u64, mode: u32, rdev: u64) -> SysResult {
    let path = path_arg(ctx, path_ptr)?;
    let cred = ctx.cred();
    let start = start_dir(ctx, dirfd)?;
    let (dir, name) = resolve_parent(&cred, &start, &path)?;
    if name == "." || name == ".." || dir.child(&name).is_ok() {
        return Err(Errno::EEXIST);
    }
    let kind = mode & S_IFMT;
    if kind != S_IFDIR && path.ends_with('/') {
        return Err(Errno::ENOENT);
    }
    check_writable(&dir)?;
    perm::may_create(&cred, &dir)?;
    // A whiteout (character device 0:0) needs no capability.
    if (kind == S_IFCHR && rdev != 0 || kind == S_IFBLK) && !cred.capable(CAP_MKNOD) {
        return Err(Errno::EPERM);
    }
    let umask = ctx.process().umask.load(Ordering::Relaxed);
    // mkdir keeps only the permission and sticky bits it is given.
    let bits = if kind == S_IFDIR { 0o1777 } else { 0o7777 };
    perm::create(&cred, &dir, &name, kind | (mode & bits), umask, rdev)?;
    notify::created(&dir, &name, kind == S_IFDIR);
    Ok(0)
}

pub fn sys_mkdir(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create_at(ctx, c::AT_FDCWD, a[0], S_IFDIR | (a[1] as u32 & 0o7777), 0)
}

pub fn sys_mkdirat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create_at(ctx, a[0] as i32, a[1], S_IFDIR | (a[2] as u32 & 0o7777), 0)
}

fn mknod_mode(mode: u32) -> Result<u32, Errno> {
    match mode & S_IFMT {
        0 => Ok(S_IFREG | (mode & 0o7777)),
        S_IFREG | S_IFIFO | S_IFCHR | S_IFBLK | S_IFSOCK => Ok(mode),
        S_IFDIR => Err(Errno::EPERM),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_mknod(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create_at(ctx, c::AT_FDCWD, a[0], mknod_mode(a[1] as u32)?, a[2])
}

pub fn sys_mknodat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create_at(ctx, a[0] as i32, a[1], mknod_mode(a[2] as u32)?, a[3])
}

fn unlink_at(ctx: &SyscallContext, dirfd: i32, path_ptr: u64, dir_wanted: bool) -> SysResult {
    let path = path_arg(ctx, path_ptr)?;
    let cred = ctx.cred();
    let start = start_dir(ctx, dirfd)?;
    let (dir, name) = resolve_parent(&cred, &start, &path)?;
    if dir_wanted {
        if path.trim_end_matches('/').is_empty() {
            return Err(Errno::EBUSY); // rmdir("/")
        }
        if name == "." {
            return Err(Errno::EINVAL);
        }
        if name == ".." {
            return Err(Errno::ENOTEMPTY);
        }
        check_writable(&dir)?;
        let target = dir.child(&name)?;
        perm::may_delete(&cred, &dir, &target, true)?;
        if target.is_mountpoint() {
            return Err(Errno::EBUSY);
        }
        dir.inode().rmdir(&name)?;
        dir.forget(&name);
        notify::removed(&dir, &name, &target);
    } else {
        if name == "." || name == ".." {
            return Err(Errno::EISDIR);
        }
        check_writable(&dir)?;
        let target = dir.child(&name)?;
        if path.ends_with('/') {
            return Err(if target.is_dir() { Errno::EISDIR } else { Errno::ENOTDIR });
        }
        perm::may_delete(&cred, &dir, &target, false)?;
        if target.is_mountpoint() {
            return Err(Errno::EBUSY);
        }
        dir.inode().unlink(&name)?;
        dir.forget(&name);
        notify::removed(&dir, &name, &target);
    }
    Ok(0)
}

pub fn sys_unlink(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    unlink_at(ctx, c::AT_FDCWD, a[0], false)
}

pub fn sys_rmdir(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    unlink_at(ctx, c::AT_FDCWD, a[0], true)
}

pub fn sys_unlinkat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = a[2] as u32;
    if flags & !c::AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    unlink_at(ctx, a[0] as i32, a[1], flags & c::AT_REMOVEDIR != 0)
}

fn rename_at(ctx: &SyscallContext, olddir: i32, old_ptr: u64, newdir: i32, new_ptr: u64, flags: u32) -> SysResult {
    let known = c::RENAME_NOREPLACE | c::RENAME_EXCHANGE | c::RENAME_WHITEOUT;
    // EXCHANGE goes with neither NOREPLACE nor WHITEOUT (do_renameat2).
    let not_with_exchange = c::RENAME_NOREPLACE | c::RENAME_WHITEOUT;
    if flags & !known != 0 || (flags & c::RENAME_EXCHANGE != 0 && flags & not_with_exchange != 0) {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    if flags & c::RENAME_WHITEOUT != 0 && !cred.capable(CAP_MKNOD) {
        return Err(Errno::EPERM);
    }
    let old = path_arg(ctx, old_ptr)?;
    let new = path_arg(ctx, new_ptr)?;
    let (odir, oname) = resolve_parent(&cred, &start_dir(ctx, olddir)?, &old)?;
    let (ndir, nname) = resolve_parent(&cred, &start_dir(ctx, newdir)?, &new)?;
    if !Arc::ptr_eq(&odir.fs_root(), &ndir.fs_root()) {
        return Err(Errno::EXDEV);
    }
    if matches!(oname.as_str(), "." | "..") {
        return Err(Errno::EBUSY);
    }
    if matches!(nname.as_str(), "." | "..") {
        return Err(if flags & c::RENAME_NOREPLACE != 0 { Errno::EEXIST } else { Errno::EBUSY });
    }
    check_writable(&odir)?;
    let moving = odir.child(&oname)?;
    let target = match ndir.child(&nname) {
        Ok(t) => Some(t),
        Err(Errno::ENOENT) => None,
        Err(e) => return Err(e),
    };
    if flags & c::RENAME_NOREPLACE != 0 && target.is_some() {
        return Err(Errno::EEXIST);
    }
    if flags & c::RENAME_EXCHANGE != 0 {
        let t = target.as_ref().ok_or(Errno::ENOENT)?;
        if !t.is_dir() && new.ends_with('/') {
            return Err(Errno::ENOTDIR);
        }
    }
    let is_dir = moving.is_dir();
    if !is_dir && (old.ends_with('/') || (flags & c::RENAME_EXCHANGE == 0 && new.ends_with('/'))) {
        return Err(Errno::ENOTDIR);
    }
    if let Some(t) = &target {
        if same_inode(&moving, t) {
            return Ok(0);
        }
    }
    perm::may_delete(&cred, &odir, &moving, is_dir)?;
    let target_is_dir = target.as_ref().is_some_and(|t| t.is_dir());
    match &target {
        None => perm::may_create(&cred, &ndir)?,
        Some(t) if flags & c::RENAME_EXCHANGE != 0 => perm::may_delete(&cred, &ndir, t, target_is_dir)?,
        Some(t) => perm::may_delete(&cred, &ndir, t, is_dir)?,
    }
    // A directory that changes parent gets a new "..": it must be writable.
    if !Arc::ptr_eq(&odir, &ndir) {
        if is_dir {
            perm::permission(&cred, &moving, MAY_WRITE)?;
        }
        if let Some(t) = target.as_ref().filter(|_| flags & c::RENAME_EXCHANGE != 0 && target_is_dir) {
            perm::permission(&cred, t, MAY_WRITE)?;
        }
    }
    if moving.is_mount_root() || moving.is_mountpoint() || target.as_ref().is_some_and(|t| t.is_mountpoint()) {
        return Err(Errno::EBUSY);
    }
    if flags & c::RENAME_WHITEOUT != 0 {
        let (_, owner) = perm::new_inode(&cred, &odir, S_IFCHR);
        odir.inode().rename_whiteout(&oname, ndir.inode(), &nname, flags & !c::RENAME_WHITEOUT, owner)?;
    } else {
        odir.inode().rename(&oname, ndir.inode(), &nname, flags)?;
    }
    odir.forget(&oname);
    ndir.forget(&nname);
    if flags & c::RENAME_EXCHANGE != 0 {
        if let Some(other) = &target {
            notify::moved(&odir, &oname, &ndir, &nname, moving.inode(), None);
            notify::moved(&ndir, &nname, &odir, &oname, other.inode(), None);
        }
    } else {
        notify::moved(&odir, &oname, &ndir, &nname, moving.inode(), target.as_ref());
    }
    Ok(0)
}

pub fn sys_rename(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    rename_at(ctx, c::AT_FDCWD, a[0], c::AT_FDCWD, a[1], 0)
}

pub fn sys_renameat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    rename_at(ctx, a[0] as i32, a[1], a[2] as i32, a[3], 0)
}

pub fn sys_renameat2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    rename_at(ctx, a[0] as i32, a[1], a[2] as i32, a[3], a[4] as u32)
}

fn link_at(ctx: &SyscallContext, olddir: i32, old_ptr: u64, newdir: i32, new_ptr: u64, flags: u32) -> SysResult {
    if flags & !(c::AT_SYMLINK_FOLLOW | c::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    // Linking an open file by descriptor is for CAP_DAC_READ_SEARCH
    // holders (Linux 6.1).
    if flags & c::AT_EMPTY_PATH != 0 && !cred.capable(CAP_DAC_READ_SEARCH) {
        return Err(Errno::ENOENT);
    }
    let old = path_arg_maybe_empty(ctx, old_ptr)?;
    let new = path_arg(ctx, new_ptr)?;
    let target = lookup_at(ctx, &cred, olddir, &old, flags & c::AT_SYMLINK_FOLLOW != 0, flags & c::AT_EMPTY_PATH != 0)?;
    let (dir, name) = resolve_parent(&cred, &start_dir(ctx, newdir)?, &new)?;
    if name == "." || name == ".." || dir.child(&name).is_ok() {
        return Err(Errno::EEXIST);
    }
    if new.ends_with('/') {
        return Err(Errno::ENOENT);
    }
    check_writable(&dir)?;
    if !target.is_within(&dir.fs_root()) {
        return Err(Errno::EXDEV);
    }
    perm::may_create(&cred, &dir)?;
    if target.is_dir() {
        return Err(Errno::EPERM);
    }
    dir.inode().link(&name, target.inode())?;
    notify::linked(&dir, &name, target.inode());
    Ok(0)
}

pub fn sys_link(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    link_at(ctx, c::AT_FDCWD, a[0], c::AT_FDCWD, a[1], 0)
}

pub fn sys_linkat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    link_at(ctx, a[0] as i32, a[1], a[2] as i32, a[3], a[4] as u32)
}

fn symlink_at(ctx: &SyscallContext, target_ptr: u64, dirfd: i32, path_ptr: u64) -> SysResult {
    let target = path_arg(ctx, target_ptr)?;
    let path = path_arg(ctx, path_ptr)?;
    let cred = ctx.cred();
    let (dir, name) = resolve_parent(&cred, &start_dir(ctx, dirfd)?, &path)?;
    if name == "." || name == ".." || dir.child(&name).is_ok() {
        return Err(Errno::EEXIST);
    }
    if path.ends_with('/') {
        return Err(Errno::ENOENT);
    }
    check_writable(&dir)?;
    perm::may_create(&cred, &dir)?;
    let (_, owner) = perm::new_inode(&cred, &dir, crate::fs::inode::S_IFLNK | 0o777);
    dir.inode().symlink(&name, &target, owner)?;
    notify::created(&dir, &name, false);
    Ok(0)
}

pub fn sys_symlink(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    symlink_at(ctx, a[0], c::AT_FDCWD, a[1])
}

pub fn sys_symlinkat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    symlink_at(ctx, a[0], a[1] as i32, a[2])
}
