//! futex(2): WAIT, WAKE, their BITSET forms, (CMP_)REQUEUE and WAKE_OP,
//! private or shared. PI futexes are not implemented (ENOSYS).
//! futex_waitv(2): waiting on up to 128 32-bit futexes at once.

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{FutexWaitv, Timespec};

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;
use crate::proc::futex;

fn timeout_deadline(ctx: &SyscallContext, ptr: u64, absolute: bool, realtime: bool) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut b = [0u8; Timespec::SIZE];
    uaccess::read_bytes(&ctx.vm()?, ptr, &mut b)?;
    let ns = Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
    let now = crate::clock::now_ns();
    Ok(Some(if !absolute {
        now.saturating_add(ns)
    } else if realtime {
        now.saturating_add(ns.saturating_sub(crate::clock::realtime_ns()))
    } else {
        ns
    }))
}

/// Linux's get_futex_key: the word must be aligned (EINVAL) and in the
/// user half (EFAULT). A private futex is keyed by its address alone, so
/// an unmapped one is fine (a wake there finds nobody); a shared one is
/// keyed by its page, which must be there: it is faulted in, for writing
/// when the op will store to it, and EFAULT if it cannot be.
fn check_key(ctx: &SyscallContext, addr: u64, private: bool, write: bool) -> Result<(), Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    if !uaccess::access_ok(addr, 4) {
        return Err(Errno::EFAULT);
    }
    if !private {
        let vm = ctx.vm()?;
        let value = uaccess::read_u32(&vm, addr)?;
        if vm.lock().is_read_only_anonymous(addr) {
            return Err(Errno::EFAULT);
        }
        if write {
            // A store of the value it holds: faults the page in writable
            // (or fails) without changing it.
            uaccess::cmpxchg_u32(&vm, addr, value, value)?;
        }
    }
    Ok(())
}

pub fn sys_futex(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (uaddr, op, val, timeout, uaddr2, val3) = (a[0], a[1] as u32, a[2] as u32, a[3], a[4], a[5] as u32);
    let cmd = op & c::FUTEX_CMD_MASK;
    let private = op & c::FUTEX_PRIVATE_FLAG != 0;
    let realtime = op & c::FUTEX_CLOCK_REALTIME != 0;
    if realtime && cmd != c::FUTEX_WAIT_BITSET {
        return Err(Errno::ENOSYS);
    }
    let vm = ctx.vm()?;
    match cmd {
        c::FUTEX_WAIT => {
            let deadline = timeout_deadline(ctx, timeout, false, false)?;
            check_key(ctx, uaddr, private, false)?;
            futex::wait(&vm, &ctx.task.futex_waiter, uaddr, val, deadline, u32::MAX)?;
            Ok(0)
        }
        c::FUTEX_WAIT_BITSET => {
            let deadline = timeout_deadline(ctx, timeout, true, realtime)?;
            if val3 == 0 {
                return Err(Errno::EINVAL);
            }
            check_key(ctx, uaddr, private, false)?;
            futex::wait(&vm, &ctx.task.futex_waiter, uaddr, val, deadline, val3)?;
            Ok(0)
        }
        c::FUTEX_WAKE => {
            check_key(ctx, uaddr, private, false)?;
            Ok(u64::from(futex::wake(&vm, uaddr, val, u32::MAX)))
        }
        c::FUTEX_WAKE_BITSET => {
            if val3 == 0 {
                return Err(Errno::EINVAL);
            }
            check_key(ctx, uaddr, private, false)?;
            Ok(u64::from(futex::wake(&vm, uaddr, val, val3)))
        }
        c::FUTEX_REQUEUE | c::FUTEX_CMP_REQUEUE => {
            check_key(ctx, uaddr, private, false)?;
            check_key(ctx, uaddr2, private, false)?;
            let expected = (cmd == c::FUTEX_CMP_REQUEUE).then_some(val3);
            Ok(u64::from(futex::requeue(&vm, uaddr, uaddr2, val, timeout as u32, expected)?))
        }
        c::FUTEX_WAKE_OP => {
            check_key(ctx, uaddr, private, false)?;
            check_key(ctx, uaddr2, private, true)?;
            Ok(u64::from(futex::wake_op(&vm, uaddr, uaddr2, val, timeout as u32, val3)?))
        }
        _ => Err(Errno::ENOSYS),
    }
}

/// futex_waitv(waiters, nr_futexes, flags, timeout, clockid): Linux's
/// order of checks: flags, count, clock, timeout, then each entry's flags
/// as it is read, then each key, then the words.
pub fn sys_futex_waitv(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (waiters, count, flags, timeout, clockid) = (a[0], a[1] as u32, a[2] as u32, a[3], a[4] as u32);
    if flags != 0 || count == 0 || count > c::FUTEX_WAITV_MAX || waiters == 0 {
        return Err(Errno::EINVAL);
    }
    let deadline = if timeout != 0 {
        if clockid != c::CLOCK_REALTIME && clockid != c::CLOCK_MONOTONIC {
            return Err(Errno::EINVAL);
        }
        timeout_deadline(ctx, timeout, true, clockid == c::CLOCK_REALTIME)?
    } else {
        None
    };
    let vm = ctx.vm()?;
    let mut entries = alloc::vec::Vec::new();
    entries.try_reserve(count as usize).map_err(|_| Errno::ENOMEM)?;
    for i in 0..u64::from(count) {
        let mut b = [0u8; FutexWaitv::SIZE];
        let at = waiters.checked_add(i * FutexWaitv::SIZE as u64).ok_or(Errno::EFAULT)?;
        uaccess::read_bytes(&vm, at, &mut b)?;
        let w = FutexWaitv::from_bytes(&b);
        // Since Linux 6.7 a `val` wider than the futex is EINVAL (6.1
        // compared its low 32 bits); the test oracle runs the newer one.
        if w.flags & !(c::FUTEX_32 | c::FUTEX_PRIVATE_FLAG) != 0
            || w.reserved != 0
            || w.flags & c::FUTEX_32 == 0
            || w.val > u64::from(u32::MAX)
        {
            return Err(Errno::EINVAL);
        }
        entries.push(w);
    }
    for w in &entries {
        check_key(ctx, w.uaddr, w.flags & c::FUTEX_PRIVATE_FLAG != 0, false)?;
    }
    let mut futexes = alloc::vec::Vec::new();
    futexes.try_reserve(entries.len()).map_err(|_| Errno::ENOMEM)?;
    futexes.extend(entries.iter().map(|w| (w.uaddr, w.val as u32)));
    Ok(futex::wait_multiple(&vm, &futexes, deadline)? as u64)
}
