//! File locks and file owners: fcntl's record-lock, OFD-lock, lease and
//! owner commands, and flock(2). The locks themselves live in `fs::lock`
//! and `fs::lease`; this layer reads the arguments, picks the owner (the
//! descriptor table for POSIX locks, the description for OFD locks and
//! flocks) and applies Linux's argument checks in Linux's order.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use kiln_ipc::range_lock::LockKind;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::ipc::{FOwnerEx, LOCK_MAND};
use linux_abi::layout::Flock;

use super::fs_io::file;
use super::{SysResult, SyscallContext};
use crate::fs::fown::{FileOwner, OwnerKind};
use crate::fs::lock::{self, Owner, USES_FLOCK, USES_OFD};
use crate::fs::OpenFile;
use crate::ipc::creds;

fn read_flock(ctx: &SyscallContext, addr: u64) -> Result<Flock, Errno> {
    let mut b = [0u8; Flock::SIZE];
    ctx.copy_from_user(addr, &mut b)?;
    Ok(Flock::from_bytes(&b))
}

/// F_GETLK, F_SETLK, F_SETLKW and their OFD forms.
pub fn fcntl_record_lock(ctx: &SyscallContext, fd: i32, f: &Arc<OpenFile>, cmd: u32, arg: u64) -> SysResult {
    let mut fl = read_flock(ctx, arg)?;
    let ofd = matches!(cmd, c::F_OFD_GETLK | c::F_OFD_SETLK | c::F_OFD_SETLKW);
    let pid = ctx.process().pid;
    if matches!(cmd, c::F_GETLK | c::F_OFD_GETLK) {
        if fl.l_type as u32 != c::F_RDLCK && fl.l_type as u32 != c::F_WRLCK {
            return Err(Errno::EINVAL);
        }
        let req = lock::request(f, fl.l_type, fl.l_whence, fl.l_start, fl.l_len)?;
        let owner = if ofd {
            if fl.l_pid != 0 {
                return Err(Errno::EINVAL);
            }
            Owner::Ofd(lock::description_id(f))
        } else {
            Owner::Posix(ctx.process().files().lock().posix_lock_owner())
        };
        let kind = req.kind.unwrap_or(LockKind::Read);
        match lock::test(f, owner, kind, req.start, req.end) {
            None => fl.l_type = c::F_UNLCK as i16,
            Some(conflict) => {
                fl.l_type = if conflict.kind == LockKind::Write { c::F_WRLCK } else { c::F_RDLCK } as i16;
                fl.l_whence = c::SEEK_SET as i16;
                fl.l_start = conflict.start as i64;
                fl.l_len = if conflict.end == kiln_ipc::range_lock::OFFSET_MAX {
                    0
                } else {
                    (conflict.end - conflict.start + 1) as i64
                };
                // As the caller's pid namespace sees the holder (0 outside it).
                fl.l_pid =
                    if conflict.pid > 0 { ctx.process().pid_ns.local_or_zero(conflict.pid) } else { conflict.pid };
            }
        }
        ctx.copy_to_user(arg, &fl.to_bytes())?;
        return Ok(0);
    }
    let req = lock::request(f, fl.l_type, fl.l_whence, fl.l_start, fl.l_len)?;
    // A lock needs the open mode it matches.
    match req.kind {
        Some(LockKind::Read) if !f.readable() => return Err(Errno::EBADF),
        Some(LockKind::Write) if !f.writable() => return Err(Errno::EBADF),
        _ => {}
    }
    let wait = matches!(cmd, c::F_SETLKW | c::F_OFD_SETLKW);
    let owner = if ofd {
        if fl.l_pid != 0 {
            return Err(Errno::EINVAL);
        }
        f.lock_use.fetch_or(USES_OFD, Ordering::Relaxed);
        Owner::Ofd(lock::description_id(f))
    } else {
        Owner::Posix(ctx.process().files().lock().posix_lock_owner())
    };
    lock::set(f, owner, pid, &req, wait)?;
    // A close of the descriptor that raced with the lock has already
    // dropped the owner's locks on the file; this one must go too (Linux
    // does the same).
    if !ofd && req.kind.is_some() {
        let still_open = ctx.process().files().lock().get(fd).is_ok_and(|g| Arc::ptr_eq(&g, f));
        if !still_open {
            let unlock = lock::Request { kind: None, ..req };
            let _ = lock::set(f, owner, pid, &unlock, false);
            return Err(Errno::EBADF);
        }
    }
    Ok(0)
}

/// flock(2).
pub fn sys_flock(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, cmd) = (a[0] as i32, a[1] as u32);
    // The obsolete mandatory locks never worked; Linux ignores them.
    if cmd & LOCK_MAND != 0 {
        return Ok(0);
    }
    let kind = match cmd & !c::LOCK_NB {
        c::LOCK_SH => Some(LockKind::Read),
        c::LOCK_EX => Some(LockKind::Write),
        c::LOCK_UN => None,
        _ => return Err(Errno::EINVAL),
    };
    let f = file(ctx, fd)?;
    if f.is_path_only() || (kind.is_some() && !f.readable() && !f.writable()) {
        return Err(Errno::EBADF);
    }
    if kind.is_some() {
        f.lock_use.fetch_or(USES_FLOCK, Ordering::Relaxed);
    }
    lock::flock(&f, ctx.process().pid, kind, cmd & c::LOCK_NB == 0)?;
    Ok(0)
}

/// F_SETLEASE and F_GETLEASE.
pub fn fcntl_lease(ctx: &SyscallContext, fd: i32, f: &Arc<OpenFile>, cmd: u32, arg: u64) -> SysResult {
    if cmd == c::F_GETLEASE {
        return Ok(u64::from(crate::fs::lease::get(f)));
    }
    let is_owner = {
        let file_uid = f.dentry.as_ref().map(|d| d.inode().metadata().uid);
        file_uid == Some(creds::fsuid(ctx.task)) || creds::capable(ctx.task, creds::CAP_LEASE)
    };
    let key = lock::lock_key(f);
    crate::fs::lease::set(f, fd, ctx.process().pid, arg as u32, is_owner, || {
        crate::proc::open_counts(|g| lock::lock_key(g) == key)
    })?;
    Ok(0)
}

/// F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX, F_SETSIG, F_GETSIG.
pub fn fcntl_owner(ctx: &SyscallContext, f: &OpenFile, cmd: u32, arg: u64) -> SysResult {
    match cmd {
        c::F_GETOWN => Ok(f.owner.lock().getown() as u64),
        c::F_SETOWN => {
            let who = arg as i32;
            if who == i32::MIN {
                return Err(Errno::EINVAL);
            }
            let (kind, id) = if who < 0 { (OwnerKind::Group, -who) } else { (OwnerKind::Process, who) };
            set_owner(f, kind, id)
        }
        c::F_GETOWN_EX => {
            let owner: FileOwner = *f.owner.lock();
            let ex = FOwnerEx { kind: owner.ex_kind(), pid: owner.id };
            ctx.copy_to_user(arg, &ex.to_bytes())?;
            Ok(0)
        }
        c::F_SETOWN_EX => {
            let mut b = [0u8; FOwnerEx::SIZE];
            ctx.copy_from_user(arg, &mut b)?;
            let ex = FOwnerEx::from_bytes(&b);
            let kind = FileOwner::kind_from_ex(ex.kind)?;
            set_owner(f, kind, ex.pid)
        }
        c::F_GETSIG => Ok(u64::from(f.owner.lock().signo)),
        c::F_SETSIG => {
            // Linux's valid_signal on the int argument: 0 (plain SIGIO)
            // through 64.
            let signo = arg as i32;
            if !(0..=linux_abi::signal::NSIG as i32 - 1).contains(&signo) {
                return Err(Errno::EINVAL);
            }
            f.owner.lock().signo = signo as u32;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// Sets the owner if it names someone alive (ESRCH otherwise; 0 clears).
fn set_owner(f: &OpenFile, kind: OwnerKind, id: i32) -> SysResult {
    if id != 0 && !crate::proc::sigio::target_exists(kind, id) {
        return Err(Errno::ESRCH);
    }
    let mut owner = f.owner.lock();
    owner.kind = kind;
    owner.id = id;
    Ok(0)
}
