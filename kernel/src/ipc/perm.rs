//! System V IPC permissions: Linux's `ipcperms` (the owner, group or
//! other bits of the object's mode, CAP_IPC_OWNER overriding), the
//! owner-or-CAP_SYS_ADMIN rule of IPC_SET and IPC_RMID, and IPC_SET's
//! update of the owner and mode. Credentials come from `creds`, the one
//! place that knows them.

use alloc::sync::Arc;

use linux_abi::errno::Errno;
use linux_abi::ipc::IpcPerm;

use super::creds;
use crate::proc::Task;

/// Read, write and execute as requested in a `*get` flag or an access
/// mode (S_IRUGO...): any of the three bit groups counts.
pub const READ: u32 = 0o444;
pub const WRITE: u32 = 0o222;
pub const EXEC: u32 = 0o111;

/// Whether `task` may access an object with permissions `perm` for
/// `requested` (mode bits, as Linux's ipcperms: EACCES when not).
pub fn allowed(task: &Arc<Task>, perm: &IpcPerm, requested: u32) -> bool {
    let want = (requested >> 6 | requested >> 3 | requested) & 0o7;
    let euid = creds::euid(task);
    let granted = if euid == perm.cuid || euid == perm.uid {
        perm.mode >> 6
    } else if creds::in_group(task, perm.cgid) || creds::in_group(task, perm.gid) {
        perm.mode >> 3
    } else {
        perm.mode
    };
    want & !granted & 0o7 == 0 || creds::capable(task, creds::CAP_IPC_OWNER)
}

/// `allowed`, as the errno the calls return.
pub fn check(task: &Arc<Task>, perm: &IpcPerm, requested: u32) -> Result<(), Errno> {
    if allowed(task, perm, requested) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// IPC_SET and IPC_RMID: the creator, the owner, or CAP_SYS_ADMIN (EPERM).
pub fn check_control(task: &Arc<Task>, perm: &IpcPerm) -> Result<(), Errno> {
    let euid = creds::euid(task);
    if euid == perm.cuid || euid == perm.uid || creds::capable(task, creds::CAP_SYS_ADMIN) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// The permissions of a new object made by `task`: it owns and created
/// it, with the permission bits of the `*get` flag.
pub fn new_perm(task: &Arc<Task>, key: i32, flags: u32) -> IpcPerm {
    let (uid, gid) = (creds::euid(task), creds::egid(task));
    IpcPerm { key, uid, gid, cuid: uid, cgid: gid, mode: flags & 0o777, seq: 0 }
}

/// IPC_SET's first checks, shared by every object kind: the caller
/// must control the object (EPERM), and it must not have been removed
/// while the caller looked it up (EIDRM).
pub fn check_set(task: &Arc<Task>, perm: &IpcPerm, removed: bool) -> Result<(), Errno> {
    check_control(task, perm)?;
    if removed {
        return Err(Errno::EIDRM);
    }
    Ok(())
}

/// IPC_SET: the new owner and permission bits (other mode bits stay),
/// and the change time; EINVAL, with nothing changed, for an id that
/// maps to no user (-1).
pub fn update(perm: &mut IpcPerm, ctime: &mut i64, from: &IpcPerm) -> Result<(), Errno> {
    if from.uid == u32::MAX || from.gid == u32::MAX {
        return Err(Errno::EINVAL);
    }
    perm.uid = from.uid;
    perm.gid = from.gid;
    perm.mode = (perm.mode & !0o777) | (from.mode & 0o777);
    *ctime = now();
    Ok(())
}

/// Seconds since the epoch, for the objects' time stamps.
pub fn now() -> i64 {
    (crate::clock::realtime_ns() / 1_000_000_000) as i64
}
