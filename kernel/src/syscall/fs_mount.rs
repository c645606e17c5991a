//! Mount and root-directory calls: mount (new mounts, MS_BIND, MS_REMOUNT,
//! MS_MOVE, propagation types), umount2, pivot_root, chroot, and sysfs(2)
//! over the registered file-system types. The table and its rules are
//! `fs::mount`'s; this file reads the arguments in Linux's order.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::capability::{CAP_SYS_ADMIN, CAP_SYS_CHROOT};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::fs as x;

use super::fs_path::{lookup_at, path_arg};
use super::{SysResult, SyscallContext};
use crate::cred::MAY_EXEC;
use crate::fs::dentry::{self, Dentry};
use crate::fs::{mount, perm};
use crate::mm::uaccess;

/// MS_NOUSER: refused from user space.
const MS_NOUSER: u64 = 1 << 31;

/// A string argument of mount(2) that may be NULL (`copy_mount_string`).
fn mount_string(ctx: &SyscallContext, ptr: u64) -> Result<Option<String>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    uaccess::read_cstring(&ctx.vm()?, ptr, crate::fs::dentry::PATH_MAX).map(Some)
}

/// mount(2)'s data: up to a page of text (`copy_mount_options`).
fn mount_data(ctx: &SyscallContext, ptr: u64) -> Result<String, Errno> {
    if ptr == 0 {
        return Ok(String::new());
    }
    uaccess::read_cstring(&ctx.vm()?, ptr, 4095).or_else(|e| match e {
        // Longer than a page: the first page counts.
        Errno::ENAMETOOLONG => Ok(String::new()),
        e => Err(e),
    })
}

pub fn sys_mount(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (source_ptr, target_ptr, type_ptr, flags, data_ptr) = (a[0], a[1], a[2], a[3], a[4]);
    let fstype = mount_string(ctx, type_ptr)?;
    let source = mount_string(ctx, source_ptr)?;
    let data = mount_data(ctx, data_ptr)?;
    let target = path_arg(ctx, target_ptr)?;
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &target, true, false)?;
    let mut flags = flags;
    if flags & c::MS_MGC_MSK == c::MS_MGC_VAL {
        flags &= !c::MS_MGC_MSK;
    }
    if flags & MS_NOUSER != 0 {
        return Err(Errno::EINVAL);
    }
    if !cred.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let mnt_flags = mount::mnt_flags_of(flags);
    let sb_flags = flags
        & (c::MS_RDONLY
            | c::MS_SYNCHRONOUS
            | c::MS_MANDLOCK
            | c::MS_DIRSYNC
            | c::MS_SILENT
            | c::MS_POSIXACL
            | c::MS_LAZYTIME
            | c::MS_I_VERSION);
    let source_path = |source: &Option<String>| -> Result<Arc<Dentry>, Errno> {
        match source.as_deref() {
            None | Some("") => Err(Errno::EINVAL),
            Some(path) => lookup_at(ctx, &cred, c::AT_FDCWD, path, true, false),
        }
    };
    if flags & (c::MS_REMOUNT | c::MS_BIND) == c::MS_REMOUNT | c::MS_BIND {
        mount::reconfigure(&d, mnt_flags, flags)?;
    } else if flags & c::MS_REMOUNT != 0 {
        mount::remount(&d, sb_flags, mnt_flags, flags)?;
    } else if flags & c::MS_BIND != 0 {
        let src = source_path(&source)?;
        mount::bind(&src, &d, flags & c::MS_REC != 0)?;
    } else if flags & (c::MS_SHARED | c::MS_PRIVATE | c::MS_SLAVE | c::MS_UNBINDABLE) != 0 {
        mount::change_type(&d, flags)?;
    } else if flags & c::MS_MOVE != 0 {
        let src = source_path(&source)?;
        mount::move_mount(&src, &d)?;
    } else {
        let fstype = fstype.ok_or(Errno::EINVAL)?;
        let (root, options) = if crate::fs::is_block_fs(&fstype) {
            // The source names the device: a block device node.
            let dev = source_path(&source).map_err(|e| if e == Errno::EINVAL { Errno::ENOTBLK } else { e })?;
            let m = dev.inode().metadata();
            if m.mode & crate::fs::inode::S_IFMT != crate::fs::inode::S_IFBLK {
                return Err(Errno::ENOTBLK);
            }
            crate::fs::new_block_fs(&fstype, m.rdev, &data, sb_flags)?
        } else {
            crate::fs::new_fs_with(&fstype, &data)?
        };
        let state = crate::fs::ext4::volume_of(root.as_ref()).map(|v| v as Arc<dyn mount::FsState>);
        let sb = mount::Super::with_state(&fstype, options, state)?;
        let source = source.unwrap_or_else(|| String::from("none"));
        mount::mount_new(&d, crate::fs::root_dentry(&fstype, root), sb, &source, sb_flags, mnt_flags)?;
    }
    Ok(0)
}

/// Whether some process still uses the mount rooted at `root`: a
/// working directory, a root directory or an open file in it.
fn mount_busy(root: &Arc<Dentry>) -> bool {
    crate::proc::all_processes().iter().any(|p| {
        p.cwd.lock().is_within(root)
            || p.root.lock().is_within(root)
            || p.files().lock().open_dentries().iter().any(|f| f.is_within(root))
    })
}

pub fn sys_umount2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = a[1] as u32;
    if flags & !(c::MNT_FORCE | c::MNT_DETACH | c::MNT_EXPIRE | c::UMOUNT_NOFOLLOW) != 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    let path = path_arg(ctx, a[0])?;
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &path, flags & c::UMOUNT_NOFOLLOW == 0, false)?;
    if !cred.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    if d.mount_of_root().is_none() {
        return Err(Errno::EINVAL);
    }
    // Unmounting the caller's root remounts it read-only on Linux; the
    // tree's root cannot go.
    let volume = crate::fs::ext4::volume_of(d.inode().as_ref());
    let sb = d.mount_of_root().map(|m| m.sb.clone());
    mount::umount(&d, flags, mount_busy)?;
    if let (Some(v), Some(sb)) = (volume, sb) {
        // The last mount of the volume gone: write it back and mark it
        // clean; with bind mounts of it left, only commit.
        if mount::super_mounted(&sb) {
            v.commit()?;
        } else {
            v.unmount()?;
        }
    }
    Ok(0)
}

pub fn sys_chroot(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &path, true, false)?;
    if !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    perm::permission(&cred, &d, MAY_EXEC)?;
    if !cred.capable(CAP_SYS_CHROOT) {
        return Err(Errno::EPERM);
    }
    let old = core::mem::replace(&mut *ctx.process().root.lock(), d);
    drop(old);
    dentry::note_chroot();
    Ok(0)
}

/// A directory argument of pivot_root (followed, must be a directory).
fn dir_arg(ctx: &SyscallContext, ptr: u64) -> Result<Arc<Dentry>, Errno> {
    let path = path_arg(ctx, ptr)?;
    let d = lookup_at(ctx, &ctx.cred(), c::AT_FDCWD, &path, true, false)?;
    if !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(d)
}

/// pivot_root: the mount at `new_root` becomes the caller's root and the
/// old root goes to `put_old`, with Linux's checks in its order: EPERM,
/// the lookups, EINVAL for shared mounts, ENOENT for a removed new root,
/// EBUSY when either is on the root's own mount, EINVAL unless the root
/// and the new root are attached mount roots with put_old under the new
/// root and the new root under the old one. Every process whose root or
/// working directory was the old root moves to the new one.
pub fn sys_pivot_root(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    if !ctx.cred().capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let new = dir_arg(ctx, a[0])?;
    let old = dir_arg(ctx, a[1])?;
    let root = ctx.process().root.lock().clone();
    let (new_mnt, root_mnt, old_mnt) = (new.fs_root(), root.fs_root(), old.fs_root());
    let shared = |r: &Arc<Dentry>| r.mount_of_root().is_some_and(|m| mount::is_shared(m));
    let parent_shared = |r: &Arc<Dentry>| mount::parent_of(r).is_some_and(|m| mount::is_shared(&m));
    if shared(&old_mnt) || parent_shared(&new_mnt) || parent_shared(&root_mnt) {
        return Err(Errno::EINVAL);
    }
    if new.inode().metadata().nlink == 0 {
        return Err(Errno::ENOENT);
    }
    if Arc::ptr_eq(&new_mnt, &root_mnt) || Arc::ptr_eq(&old_mnt, &root_mnt) {
        return Err(Errno::EBUSY);
    }
    let mounted = |d: &Arc<Dentry>| d.mount_of_root().is_some();
    if !mounted(&root) || !mount::has_parent(&root) || !mounted(&new) || !mount::has_parent(&new) {
        return Err(Errno::EINVAL);
    }
    if !dentry::is_below(&old, &new) || !dentry::is_below(&new, &root) {
        return Err(Errno::EINVAL);
    }
    mount::pivot(&new, &root, &old)?;
    for p in crate::proc::all_processes() {
        for slot in [&p.root, &p.cwd] {
            let mut d = slot.lock();
            if Arc::ptr_eq(&d, &root) {
                *d = new.clone();
            }
        }
    }
    Ok(0)
}

/// sysfs(2): option 1 numbers a file-system type by name (EINVAL if
/// unknown), 2 writes the name of type number `arg1` to `arg2`, 3 counts
/// the types; the order is /proc/filesystems'.
pub fn sys_sysfs(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let names: Vec<&'static str> = crate::fs::fs_type_names();
    match a[0] as i32 as u32 {
        x::SYSFS_FSTYPE_INDEX => {
            let name = path_arg(ctx, a[1])?;
            names.iter().position(|n| *n == name).map(|i| i as u64).ok_or(Errno::EINVAL)
        }
        x::SYSFS_FSTYPE_NAME => {
            let name = names.get(a[1] as u32 as usize).ok_or(Errno::EINVAL)?;
            let mut bytes = Vec::new();
            bytes.try_reserve(name.len() + 1).map_err(|_| Errno::ENOMEM)?;
            bytes.extend_from_slice(name.as_bytes());
            bytes.push(0);
            ctx.copy_to_user(a[2], &bytes)?;
            Ok(0)
        }
        x::SYSFS_FSTYPE_COUNT => Ok(names.len() as u64),
        _ => Err(Errno::EINVAL),
    }
}
