//! Attribute calls: access and faccessat (with the real ids unless
//! AT_EACCESS), chmod, chown, truncate and utimensat. Who may do what is
//! `fs::perm`'s; a read-only mount answers EROFS first, as Linux's
//! mnt_want_write does.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::fs_io::file;
use super::fs_path::{lookup_at, path_arg, path_arg_maybe_empty};
use super::{SysResult, SyscallContext};
use crate::cred::{Cred, MAY_EXEC, MAY_WRITE};
use crate::fs::dentry::{check_writable, Dentry};
use crate::fs::inode::FileType;
use crate::fs::notify;
use crate::fs::perm::{self, TimeChange};

fn access_at(ctx: &SyscallContext, dirfd: i32, path: u64, mode: u32, flags: u32) -> SysResult {
    if mode & !7 != 0 || flags & !(c::AT_EACCESS | c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let own = ctx.cred();
    // Without AT_EACCESS the whole call, path walk included, runs with
    // the real ids (and a real root's permitted capabilities).
    let real: Cred;
    let cred: &Cred = if flags & c::AT_EACCESS != 0 {
        &own
    } else {
        real = own.for_access();
        &real
    };
    let path = path_arg_maybe_empty(ctx, path)?;
    let d = lookup_at(ctx, cred, dirfd, &path, flags & c::AT_SYMLINK_NOFOLLOW == 0, flags & c::AT_EMPTY_PATH != 0)?;
    if mode & MAY_EXEC != 0 && d.inode().file_type() == FileType::Regular && d.no_exec() {
        return Err(Errno::EACCES);
    }
    perm::permission(cred, &d, mode)?;
    Ok(0)
}

pub fn sys_access(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    access_at(ctx, c::AT_FDCWD, a[0], a[1] as u32, 0)
}

pub fn sys_faccessat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    access_at(ctx, a[0] as i32, a[1], a[2] as u32, 0)
}

pub fn sys_faccessat2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    access_at(ctx, a[0] as i32, a[1], a[2] as u32, a[3] as u32)
}

fn chmod_dentry(cred: &Cred, d: &Arc<Dentry>, mode: u32) -> SysResult {
    check_writable(d)?;
    perm::chmod(cred, d.inode().as_ref(), mode)?;
    notify::changed(d, c::IN_ATTRIB);
    Ok(0)
}

/// An attribute change made through a descriptor, for inotify.
fn changed_through(f: &crate::fs::OpenFile, mask: u32) {
    if let Some(d) = &f.dentry {
        notify::changed(d, mask);
    }
}

pub fn sys_chmod(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let cred = ctx.cred();
    chmod_dentry(&cred, &lookup_at(ctx, &cred, c::AT_FDCWD, &path, true, false)?, a[1] as u32)
}

pub fn sys_fchmodat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[1])?;
    let cred = ctx.cred();
    chmod_dentry(&cred, &lookup_at(ctx, &cred, a[0] as i32, &path, true, false)?, a[2] as u32)
}

pub fn sys_fchmod(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    if let Some(d) = &f.dentry {
        check_writable(d)?;
    }
    if let Some(i) = f.ops.inode() {
        perm::chmod(&ctx.cred(), i.as_ref(), a[1] as u32)?;
    }
    changed_through(&f, c::IN_ATTRIB);
    Ok(0)
}

/// An id argument of chown: -1 leaves it alone.
fn id(v: u64) -> Option<u32> {
    let v = v as u32;
    (v != crate::cred::NO_ID).then_some(v)
}

fn chown_at(ctx: &SyscallContext, dirfd: i32, path: u64, uid: u64, gid: u64, flags: u32) -> SysResult {
    if flags & !(c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg_maybe_empty(ctx, path)?;
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, dirfd, &path, flags & c::AT_SYMLINK_NOFOLLOW == 0, flags & c::AT_EMPTY_PATH != 0)?;
    check_writable(&d)?;
    perm::chown(&cred, d.inode().as_ref(), id(uid), id(gid))?;
    notify::changed(&d, c::IN_ATTRIB);
    Ok(0)
}

pub fn sys_chown(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    chown_at(ctx, c::AT_FDCWD, a[0], a[1], a[2], 0)
}

pub fn sys_lchown(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    chown_at(ctx, c::AT_FDCWD, a[0], a[1], a[2], c::AT_SYMLINK_NOFOLLOW)
}

pub fn sys_fchownat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    chown_at(ctx, a[0] as i32, a[1], a[2], a[3], a[4] as u32)
}

pub fn sys_fchown(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    if let Some(d) = &f.dentry {
        check_writable(d)?;
    }
    if let Some(i) = f.ops.inode() {
        perm::chown(&ctx.cred(), i.as_ref(), id(a[1]), id(a[2]))?;
    }
    changed_through(&f, c::IN_ATTRIB);
    Ok(0)
}

/// RLIMIT_FSIZE for a truncate that grows a file past it: SIGXFSZ and
/// EFBIG, as Linux's inode_newsize_ok (shrinking is always allowed).
/// It runs before the set-id bits are cleared, as in notify_change.
fn grow_limit(ctx: &SyscallContext, inode: &Arc<dyn crate::fs::Inode>, size: u64) -> Result<(), Errno> {
    let limit = ctx.process().rlimits.lock()[c::RLIMIT_FSIZE as usize].0;
    if size > inode.metadata().size && limit != crate::proc::RLIM_INFINITY && size > limit {
        super::fs_io::file_too_big(ctx);
        return Err(Errno::EFBIG);
    }
    Ok(())
}

pub fn sys_truncate(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &path, true, false)?;
    match d.inode().file_type() {
        FileType::Directory => return Err(Errno::EISDIR),
        FileType::Regular => {}
        _ => return Err(Errno::EINVAL),
    }
    check_writable(&d)?;
    perm::permission(&cred, &d, MAY_WRITE)?;
    let _write = crate::fs::writecount::get_write_access(d.inode())?;
    grow_limit(ctx, d.inode(), a[1])?;
    perm::clear_setid_on_write(d.inode().as_ref(), || cred.clone())?;
    // truncate(2) breaks leases as an open for writing does.
    crate::fs::lease::break_leases(crate::fs::lock::inode_key(d.inode().as_ref()), true, false)?;
    crate::fs::truncate::truncate(d.inode(), a[1])?;
    notify::changed(&d, c::IN_MODIFY);
    Ok(0)
}

pub fn sys_ftruncate(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    if !f.writable() {
        return Err(if f.is_path_only() { Errno::EBADF } else { Errno::EINVAL });
    }
    let inode = f.ops.inode().filter(|i| i.file_type() == FileType::Regular).ok_or(Errno::EINVAL)?;
    grow_limit(ctx, inode, a[1])?;
    perm::clear_setid_on_write(inode.as_ref(), || ctx.cred())?;
    crate::fs::truncate::truncate(inode, a[1])?;
    notify::modified(&f);
    Ok(0)
}

const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;

/// Reads `count` pairs of 8-byte words (timespec, timeval, utimbuf).
fn read_pairs(ctx: &SyscallContext, ptr: u64, count: usize) -> Result<[[i64; 2]; 2], Errno> {
    let mut b = [0u8; 32];
    ctx.copy_from_user(ptr, &mut b[..16 * count])?;
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        i64::from_le_bytes(w)
    };
    Ok([[word(0), word(8)], [word(16), word(24)]])
}

/// utime(path, utimbuf): whole seconds, or now for NULL.
pub fn sys_utime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let times = if a[1] == 0 {
        None
    } else {
        // struct utimbuf { actime, modtime }: one word each.
        let [[atime, mtime], _] = read_pairs(ctx, a[1], 1)?;
        Some(([atime, mtime], [0, 0]))
    };
    set_times(ctx, c::AT_FDCWD, a[0], times, 0)
}

/// utimes(path, timeval[2]) is futimesat at the working directory.
pub fn sys_utimes(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    futimesat(ctx, c::AT_FDCWD, a[0], a[1])
}

pub fn sys_futimesat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    futimesat(ctx, a[0] as i32, a[1], a[2])
}

/// Microseconds outside 0..1000000 are EINVAL; a NULL path with a
/// descriptor changes that descriptor's file (Linux's do_utimes).
fn futimesat(ctx: &SyscallContext, dirfd: i32, path_ptr: u64, times_ptr: u64) -> SysResult {
    let times = if times_ptr == 0 {
        None
    } else {
        let [[asec, ausec], [msec, musec]] = read_pairs(ctx, times_ptr, 2)?;
        if !(0..1_000_000).contains(&ausec) || !(0..1_000_000).contains(&musec) {
            return Err(Errno::EINVAL);
        }
        Some(([asec, msec], [ausec * 1000, musec * 1000]))
    };
    set_times(ctx, dirfd, path_ptr, times, 0)
}

pub fn sys_utimensat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (dirfd, path_ptr, times_ptr, flags) = (a[0] as i32, a[1], a[2], a[3] as u32);
    let times = if times_ptr == 0 {
        None
    } else {
        let [[asec, ansec], [msec, mnsec]] = read_pairs(ctx, times_ptr, 2)?;
        // Nothing to do: Linux does not even look at the path.
        if [ansec, mnsec] == [UTIME_OMIT; 2] {
            return Ok(0);
        }
        Some(([asec, msec], [ansec, mnsec]))
    };
    set_times(ctx, dirfd, path_ptr, times, flags)
}

/// do_utimes: `times` is (seconds, nanoseconds) of the access and
/// modification times, None for "now".
fn set_times(
    ctx: &SyscallContext,
    dirfd: i32,
    path_ptr: u64,
    times: Option<([i64; 2], [i64; 2])>,
    flags: u32,
) -> SysResult {
    let (secs, nsecs) = times.unwrap_or(([0; 2], [UTIME_NOW; 2]));
    if flags & !(c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    let d = if path_ptr == 0 {
        // utimensat(fd, NULL, ...) is futimens.
        if dirfd == c::AT_FDCWD {
            return Err(Errno::EFAULT);
        }
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let f = file(ctx, dirfd)?;
        if f.is_path_only() {
            return Err(Errno::EBADF);
        }
        f.dentry.clone().ok_or(Errno::EBADF)?
    } else {
        let path = path_arg_maybe_empty(ctx, path_ptr)?;
        lookup_at(ctx, &cred, dirfd, &path, flags & c::AT_SYMLINK_NOFOLLOW == 0, flags & c::AT_EMPTY_PATH != 0)?
    };
    if nsecs.iter().any(|&n| n != UTIME_NOW && n != UTIME_OMIT && !(0..1_000_000_000).contains(&n)) {
        return Err(Errno::EINVAL);
    }
    check_writable(&d)?;
    let how = if nsecs == [UTIME_NOW; 2] { TimeChange::Touch } else { TimeChange::Explicit };
    perm::may_set_times(&cred, d.inode().as_ref(), how)?;
    let now = crate::clock::realtime_ns();
    let time = |i: usize| match nsecs[i] {
        UTIME_NOW => Some(now),
        UTIME_OMIT => None,
        n => Some((secs[i].max(0) as u64).saturating_mul(1_000_000_000) + n as u64),
    };
    let (atime, mtime) = (time(0), time(1));
    d.inode().set_times(atime, mtime)?;
    // Linux's fsnotify_change: both times are a utime call, one alone an
    // access or a modification.
    let mask = match (atime.is_some(), mtime.is_some()) {
        (true, true) => c::IN_ATTRIB,
        (true, false) => c::IN_ACCESS,
        (false, true) => c::IN_MODIFY,
        (false, false) => 0,
    };
    notify::changed(&d, mask);
    Ok(0)
}
