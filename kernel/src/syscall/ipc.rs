//! System V IPC calls: msgget/msgsnd/msgrcv/msgctl,
//! semget/semop/semtimedop/semctl and shmget/shmat/shmdt/shmctl. The
//! objects live in `ipc::{msg, sem, shm}`; this layer copies arguments
//! and results between user memory and the kernel, in the order Linux
//! checks them (so each error path gives Linux's errno).
//!
//! x86_64 has only the 64-bit layouts, and Linux does not strip the
//! IPC_64 bit there: a command carrying it is unknown (EINVAL).

use alloc::vec::Vec;

use kiln_ipc::semop::SemOp;
use linux_abi::errno::Errno;
use linux_abi::ipc::{
    MsqidDs, Sembuf, SemidDs, ShmidDs, GETALL, GETNCNT, GETPID, GETVAL, GETZCNT, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT,
    MSG_INFO, MSG_STAT, MSG_STAT_ANY, SEM_INFO, SEM_STAT, SEM_STAT_ANY, SETALL, SETVAL, SHM_INFO, SHM_LOCK, SHM_STAT,
    SHM_STAT_ANY, SHM_UNLOCK,
};
use linux_abi::layout::Timespec;

use super::{SysResult, SyscallContext};
use crate::ipc::limits::{self, MSGMAX, SEMOPM};
use crate::ipc::{msg, sem, shm};

// ---- message queues ----

pub fn sys_msgget(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    msg::get(ctx.task, a[0] as i32, a[1] as u32).map(|id| id as u64)
}

pub fn sys_msgsnd(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (id, msgp, size, flags) = (a[0] as i32, a[1], a[2] as i64, a[3] as u32);
    let mut mtype = [0u8; 8];
    ctx.copy_from_user(msgp, &mut mtype)?;
    let mtype = i64::from_le_bytes(mtype);
    if size > i64::from(limits::get(&MSGMAX)) || size < 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if mtype < 1 {
        return Err(Errno::EINVAL);
    }
    let mut text = Vec::new();
    text.try_reserve_exact(size as usize).map_err(|_| Errno::ENOMEM)?;
    text.resize(size as usize, 0);
    ctx.copy_from_user(msgp + 8, &mut text)?;
    msg::send(ctx.task, id, mtype, text, flags)?;
    Ok(0)
}

pub fn sys_msgrcv(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (id, msgp, size, msgtyp, flags) = (a[0] as i32, a[1], a[2] as i64, a[3] as i64, a[4] as u32);
    if id < 0 || size < 0 {
        return Err(Errno::EINVAL);
    }
    let (mtype, text) = msg::receive(ctx.task, id, size as usize, msgtyp, flags)?;
    // A fault here loses the message, as on Linux.
    ctx.copy_to_user(msgp, &mtype.to_le_bytes())?;
    ctx.copy_to_user(msgp + 8, &text)?;
    Ok(text.len() as u64)
}

pub fn sys_msgctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (id, cmd, buf) = (a[0] as i32, a[1] as i32, a[2]);
    if id < 0 || cmd < 0 {
        return Err(Errno::EINVAL);
    }
    match cmd as u32 {
        IPC_INFO | MSG_INFO => {
            let (max, info) = msg::info(cmd as u32);
            ctx.copy_to_user(buf, &info.to_bytes())?;
            Ok(max as u64)
        }
        IPC_STAT | MSG_STAT | MSG_STAT_ANY => {
            let (ret, ds) = msg::stat(ctx.task, id, cmd as u32)?;
            ctx.copy_to_user(buf, &ds.to_bytes())?;
            Ok(ret as u64)
        }
        IPC_SET => {
            let mut b = [0u8; MsqidDs::SIZE];
            ctx.copy_from_user(buf, &mut b)?;
            msg::set(ctx.task, id, &MsqidDs::from_bytes(&b))?;
            Ok(0)
        }
        IPC_RMID => msg::remove(ctx.task, id).map(|_| 0),
        _ => Err(Errno::EINVAL),
    }
}

// ---- semaphores ----

pub fn sys_semget(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    sem::get(ctx.task, a[0] as i32, a[1] as i32, a[2] as u32).map(|id| id as u64)
}

fn semop_common(ctx: &SyscallContext, id: i32, sops: u64, nsops: u64, timeout: Option<u64>) -> SysResult {
    if nsops > u64::from(limits::get(&SEMOPM)) {
        return Err(Errno::E2BIG);
    }
    if nsops < 1 || id < 0 {
        return Err(Errno::EINVAL);
    }
    let n = nsops as usize;
    let mut raw = Vec::new();
    raw.try_reserve_exact(n * Sembuf::SIZE).map_err(|_| Errno::ENOMEM)?;
    raw.resize(n * Sembuf::SIZE, 0);
    ctx.copy_from_user(sops, &mut raw)?;
    let mut ops = Vec::new();
    ops.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    for chunk in raw.chunks_exact(Sembuf::SIZE) {
        let b = Sembuf::from_bytes(chunk);
        ops.push(SemOp { num: b.num, op: b.op, flg: b.flg });
    }
    let deadline = match timeout {
        None => None,
        Some(ptr) => {
            let mut b = [0u8; Timespec::SIZE];
            ctx.copy_from_user(ptr, &mut b)?;
            let ts = Timespec::from_bytes(&b);
            let ns = ts.as_nanos().ok_or(Errno::EINVAL)?;
            Some(crate::clock::now_ns().saturating_add(ns))
        }
    };
    sem::semop(ctx.task, id, ops, deadline)?;
    Ok(0)
}

pub fn sys_semop(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    semop_common(ctx, a[0] as i32, a[1], a[2], None)
}

pub fn sys_semtimedop(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    semop_common(ctx, a[0] as i32, a[1], a[2], (a[3] != 0).then_some(a[3]))
}

pub fn sys_semctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (id, num, cmd, arg) = (a[0] as i32, a[1] as i32, a[2] as i32, a[3]);
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let task = ctx.task;
    match cmd as u32 {
        IPC_INFO | SEM_INFO => {
            let (max, info) = sem::info(cmd as u32);
            ctx.copy_to_user(arg, &info.to_bytes())?;
            Ok(max as u64)
        }
        IPC_STAT | SEM_STAT | SEM_STAT_ANY => {
            let (ret, ds) = sem::stat(task, id, cmd as u32)?;
            ctx.copy_to_user(arg, &ds.to_bytes())?;
            Ok(ret as u64)
        }
        GETVAL | GETPID | GETNCNT | GETZCNT | GETALL => match sem::read(task, id, num, cmd as u32)? {
            sem::CtlResult::Value(v) => Ok(v as u64),
            sem::CtlResult::All(values) => {
                let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                ctx.copy_to_user(arg, &bytes)?;
                Ok(0)
            }
        },
        SETVAL => {
            sem::write(task, id, num, Some(arg as i32), None)?;
            Ok(0)
        }
        SETALL => {
            let n = sem::nsems(task, id, crate::ipc::perm::WRITE)?;
            let mut raw = Vec::new();
            raw.try_reserve_exact(n * 2).map_err(|_| Errno::ENOMEM)?;
            raw.resize(n * 2, 0);
            ctx.copy_from_user(arg, &mut raw)?;
            let values: Vec<u16> = raw.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            sem::write(task, id, num, None, Some(&values))?;
            Ok(0)
        }
        IPC_SET => {
            let mut b = [0u8; SemidDs::SIZE];
            ctx.copy_from_user(arg, &mut b)?;
            sem::set_perm(task, id, &SemidDs::from_bytes(&b))?;
            Ok(0)
        }
        IPC_RMID => sem::remove(task, id).map(|_| 0),
        _ => Err(Errno::EINVAL),
    }
}

// ---- shared memory ----

pub fn sys_shmget(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    shm::get(ctx.task, a[0] as i32, a[1], a[2] as u32).map(|id| id as u64)
}

pub fn sys_shmat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let vm = ctx.vm()?;
    shm::attach(ctx.task, &vm, a[0] as i32, a[1], a[2] as u32)
}

pub fn sys_shmdt(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let vm = ctx.vm()?;
    shm::detach(&vm, a[0])?;
    Ok(0)
}

pub fn sys_shmctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (id, cmd, buf) = (a[0] as i32, a[1] as i32, a[2]);
    if cmd < 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    match cmd as u32 {
        IPC_INFO => {
            let (max, info) = shm::ipc_info();
            ctx.copy_to_user(buf, &info.to_bytes())?;
            Ok(max as u64)
        }
        SHM_INFO => {
            let (max, info) = shm::shm_info();
            ctx.copy_to_user(buf, &info.to_bytes())?;
            Ok(max as u64)
        }
        IPC_STAT | SHM_STAT | SHM_STAT_ANY => {
            let (ret, ds) = shm::stat(ctx.task, id, cmd as u32)?;
            ctx.copy_to_user(buf, &ds.to_bytes())?;
            Ok(ret as u64)
        }
        IPC_SET => {
            let mut b = [0u8; ShmidDs::SIZE];
            ctx.copy_from_user(buf, &mut b)?;
            shm::set(ctx.task, id, &ShmidDs::from_bytes(&b))?;
            Ok(0)
        }
        IPC_RMID => shm::remove(ctx.task, id).map(|_| 0),
        SHM_LOCK | SHM_UNLOCK => shm::lock(ctx.task, id, cmd as u32).map(|_| 0),
        _ => Err(Errno::EINVAL),
    }
}
