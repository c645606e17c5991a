//! Credential calls: the get/set*id family, supplementary groups,
//! capget/capset, and the prctl options for capabilities, securebits,
//! keepcaps, no_new_privs and dumpability. Each change builds new
//! credentials by Linux's rules (`kiln_util::cred`) and commits them to
//! the calling thread only: libc makes the call on every thread itself.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::capability::*;
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::{SysResult, SyscallContext};
use crate::cred::{Cred, GroupList};
use crate::mm::uaccess;

/// Runs `change` on a copy of the caller's credentials and commits the
/// result if it succeeds and differs.
fn change(ctx: &SyscallContext, change: impl FnOnce(&mut Cred) -> Result<(), Errno>) -> SysResult {
    let old = ctx.task.cred();
    let mut new = (*old).clone();
    change(&mut new)?;
    if new != *old {
        ctx.task.commit_cred(new)?;
    }
    Ok(0)
}

pub fn sys_getuid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(u64::from(ctx.task.cred().uid))
}

pub fn sys_geteuid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(u64::from(ctx.task.cred().euid))
}

pub fn sys_getgid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(u64::from(ctx.task.cred().gid))
}

pub fn sys_getegid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(u64::from(ctx.task.cred().egid))
}

pub fn sys_setuid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    change(ctx, |c| c.set_uid(a[0] as u32))
}

pub fn sys_setgid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    change(ctx, |c| c.set_gid(a[0] as u32))
}

pub fn sys_setreuid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    change(ctx, |c| c.set_reuid(a[0] as u32, a[1] as u32))
}

pub fn sys_setregid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    change(ctx, |c| c.set_regid(a[0] as u32, a[1] as u32))
}

pub fn sys_setresuid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    change(ctx, |c| c.set_resuid(a[0] as u32, a[1] as u32, a[2] as u32))
}

pub fn sys_setresgid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    change(ctx, |c| c.set_resgid(a[0] as u32, a[1] as u32, a[2] as u32))
}

/// Writes three ids in order, stopping at the first bad pointer.
fn put_three(ctx: &SyscallContext, ptrs: &[u64], ids: [u32; 3]) -> SysResult {
    let vm = ctx.vm()?;
    for (&ptr, id) in ptrs.iter().zip(ids) {
        uaccess::write_u32(&vm, ptr, id)?;
    }
    Ok(0)
}

pub fn sys_getresuid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let c = ctx.task.cred();
    put_three(ctx, &a[..3], [c.uid, c.euid, c.suid])
}

pub fn sys_getresgid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let c = ctx.task.cred();
    put_three(ctx, &a[..3], [c.gid, c.egid, c.sgid])
}

/// setfsuid and setfsgid return the old id whether or not they changed it.
pub fn sys_setfsuid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let mut old = 0;
    change(ctx, |c| {
        old = c.set_fsuid(a[0] as u32);
        Ok(())
    })?;
    Ok(u64::from(old))
}

pub fn sys_setfsgid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let mut old = 0;
    change(ctx, |c| {
        old = c.set_fsgid(a[0] as u32);
        Ok(())
    })?;
    Ok(u64::from(old))
}

pub fn sys_getgroups(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let size = a[0] as i32;
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.task.cred();
    let groups = cred.groups.as_ref();
    if size != 0 {
        if groups.len() > size as usize {
            return Err(Errno::EINVAL);
        }
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(groups.len() * 4).map_err(|_| Errno::ENOMEM)?;
        bytes.extend(groups.iter().flat_map(|g| g.to_le_bytes()));
        ctx.copy_to_user(a[1], &bytes)?;
    }
    Ok(groups.len() as u64)
}

pub fn sys_setgroups(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (size, list) = (a[0] as u32 as usize, a[1]);
    if !ctx.task.cred().may_set_groups() {
        return Err(Errno::EPERM);
    }
    if size > NGROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size * 4).map_err(|_| Errno::ENOMEM)?;
    bytes.resize(size * 4, 0);
    ctx.copy_from_user(list, &mut bytes)?;
    let mut groups = Vec::new();
    groups.try_reserve_exact(size).map_err(|_| Errno::ENOMEM)?;
    for chunk in bytes.chunks_exact(4) {
        let gid = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        if gid == crate::cred::NO_ID {
            return Err(Errno::EINVAL);
        }
        groups.push(gid);
    }
    let groups = GroupList::new(groups)?;
    change(ctx, |c| {
        c.groups = groups;
        Ok(())
    })
}

/// How many 32-bit words of each set a capget/capset header's version
/// carries. An unknown version is answered with the kernel's (v3) in the
/// header, and EINVAL.
fn cap_words(ctx: &SyscallContext, header: u64) -> Result<usize, Errno> {
    let vm = ctx.vm()?;
    match uaccess::read_u32(&vm, header)? {
        LINUX_CAPABILITY_VERSION_1 => Ok(LINUX_CAPABILITY_U32S_1),
        LINUX_CAPABILITY_VERSION_2 => Ok(LINUX_CAPABILITY_U32S_2),
        LINUX_CAPABILITY_VERSION_3 => Ok(LINUX_CAPABILITY_U32S_3),
        _ => {
            uaccess::write_u32(&vm, header, LINUX_CAPABILITY_VERSION_3)?;
            Err(Errno::EINVAL)
        }
    }
}

pub fn sys_capget(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (header, data) = (a[0], a[1]);
    let words = match cap_words(ctx, header) {
        // A null data pointer asks only for the version.
        Err(Errno::EINVAL) if data == 0 => return Ok(0),
        Err(e) => return Err(e),
        Ok(_) if data == 0 => return Ok(0),
        Ok(w) => w,
    };
    let pid = uaccess::read_u32(&ctx.vm()?, header.wrapping_add(4))? as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let cred = if pid == 0 {
        ctx.task.cred()
    } else {
        crate::proc::find_task_seen_by(ctx.process(), pid).ok_or(Errno::ESRCH)?.cred()
    };
    let mut out = [0u8; 2 * CAP_DATA_SIZE];
    for (i, word) in out.chunks_exact_mut(CAP_DATA_SIZE).take(words).enumerate() {
        let part = |set: u64| ((set >> (32 * i)) as u32).to_le_bytes();
        word[0..4].copy_from_slice(&part(cred.caps.effective));
        word[4..8].copy_from_slice(&part(cred.caps.permitted));
        word[8..12].copy_from_slice(&part(cred.caps.inheritable));
    }
    ctx.copy_to_user(data, &out[..words * CAP_DATA_SIZE])?;
    Ok(0)
}

pub fn sys_capset(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (header, data) = (a[0], a[1]);
    let words = cap_words(ctx, header)?;
    let pid = uaccess::read_u32(&ctx.vm()?, header.wrapping_add(4))? as i32;
    // Only the calling thread's own capabilities may be set.
    if pid != 0 && pid != ctx.task.tid() {
        return Err(Errno::EPERM);
    }
    let mut raw = [0u8; 2 * CAP_DATA_SIZE];
    ctx.copy_from_user(data, &mut raw[..words * CAP_DATA_SIZE])?;
    let (mut effective, mut permitted, mut inheritable) = (0u64, 0u64, 0u64);
    for (i, word) in raw.chunks_exact(CAP_DATA_SIZE).take(words).enumerate() {
        let field = |at: usize| u64::from(u32::from_le_bytes([word[at], word[at + 1], word[at + 2], word[at + 3]]));
        effective |= field(0) << (32 * i);
        permitted |= field(4) << (32 * i);
        inheritable |= field(8) << (32 * i);
    }
    let known = kiln_util::cred::CAP_FULL_SET;
    change(ctx, |c| c.capset(effective & known, permitted & known, inheritable & known))
}

/// The prctl options about privileges; `None` for the others.
pub fn prctl(ctx: &SyscallContext, a: &[u64; 6]) -> Option<SysResult> {
    let (arg2, arg3, arg4, arg5) = (a[1], a[2], a[3], a[4]);
    let cred = ctx.task.cred();
    Some(match a[0] as u32 {
        c::PR_CAPBSET_READ => {
            if cap_valid(arg2) {
                Ok((cred.caps.bounding >> arg2) & 1)
            } else {
                Err(Errno::EINVAL)
            }
        }
        c::PR_CAPBSET_DROP => change(ctx, |c| c.drop_bounding(arg2)),
        PR_GET_SECUREBITS => Ok(u64::from(cred.securebits)),
        PR_SET_SECUREBITS => change(ctx, |c| c.set_securebits(arg2)),
        c::PR_GET_KEEPCAPS => Ok(u64::from(cred.keep_caps())),
        c::PR_SET_KEEPCAPS => change(ctx, |c| c.set_keep_caps(arg2)),
        PR_CAP_AMBIENT => {
            let mut value = 0;
            change(ctx, |c| {
                value = c.ambient(arg2, arg3, arg4, arg5)?;
                Ok(())
            })
            .map(|_| value)
        }
        c::PR_SET_NO_NEW_PRIVS => {
            if arg2 != 1 || arg3 | arg4 | arg5 != 0 {
                return Some(Err(Errno::EINVAL));
            }
            change(ctx, |c| {
                c.no_new_privs = true;
                Ok(())
            })
        }
        c::PR_GET_NO_NEW_PRIVS => {
            if arg2 | arg3 | arg4 | arg5 != 0 {
                return Some(Err(Errno::EINVAL));
            }
            Ok(u64::from(cred.no_new_privs))
        }
        c::PR_GET_DUMPABLE => Ok(u64::from(ctx.process().dumpable.load(Ordering::Relaxed))),
        c::PR_SET_DUMPABLE => {
            if arg2 != SUID_DUMP_DISABLE && arg2 != SUID_DUMP_USER {
                return Some(Err(Errno::EINVAL));
            }
            ctx.process().dumpable.store(arg2 as u8, Ordering::Relaxed);
            Ok(0)
        }
        _ => return None,
    })
}
