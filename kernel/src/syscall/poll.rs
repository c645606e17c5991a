//! Waiting for files: poll, ppoll, select and pselect6. Every file
//! reports its readiness (`FileOps::poll`); waiters sleep on one global
//! queue that any readiness change wakes, and check again.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::errno::Errno;
use linux_abi::layout::{Pollfd, Timespec, Timeval};
use linux_abi::signal::SigSet;

use super::{SysResult, SyscallContext};
use crate::fs::file::{
    POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM, POLL_EVENTS, POLL_SEQ,
};
use crate::mm::uaccess;
use crate::sched::Interrupted;

/// Sleeps until something pollable changes, the deadline passes or a
/// signal arrives (Err).
fn wait_for_change(seq: u64, deadline: Option<u64>) -> Result<bool, Errno> {
    match POLL_EVENTS.wait_until_interruptible(deadline, || POLL_SEQ.load(Ordering::Acquire) != seq) {
        Ok(()) => Ok(true),
        Err(Interrupted::TimedOut) => Ok(false),
        Err(Interrupted::Signal) => Err(Errno::ERESTARTNOHAND),
    }
}

fn readiness(ctx: &SyscallContext, fd: i32) -> u16 {
    match ctx.process().files().lock().get(fd) {
        Ok(f) if f.is_path_only() => POLLNVAL,
        Ok(f) => f.ops.poll(),
        Err(_) => POLLNVAL,
    }
}

fn do_poll(ctx: &SyscallContext, fds_ptr: u64, nfds: u64, deadline: Option<u64>) -> SysResult {
    if nfds > ctx.process().rlimits.lock()[linux_abi::consts::RLIMIT_NOFILE as usize].0 {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    let mut fds = Vec::new();
    fds.try_reserve_exact(nfds as usize).map_err(|_| Errno::ENOMEM)?;
    for i in 0..nfds {
        let mut b = [0u8; Pollfd::SIZE];
        uaccess::read_bytes(&vm, fds_ptr + i * Pollfd::SIZE as u64, &mut b)?;
        fds.push(Pollfd::from_bytes(&b));
    }
    loop {
        let seq = POLL_SEQ.load(Ordering::Acquire);
        let mut ready = 0;
        for pfd in fds.iter_mut() {
            pfd.revents = 0;
            if pfd.fd < 0 {
                continue;
            }
            let r = readiness(ctx, pfd.fd);
            pfd.revents = r & (pfd.events | POLLERR | POLLHUP | POLLNVAL);
            if pfd.revents != 0 {
                ready += 1;
            }
        }
        let expired = deadline.is_some_and(|d| crate::clock::now_ns() >= d);
        if ready == 0 && !expired && crate::proc::signal::has_deliverable(ctx.task) {
            return Err(Errno::ERESTARTNOHAND);
        }
        if ready > 0 || expired || !wait_for_change(seq, deadline)? {
            for (i, pfd) in fds.iter().enumerate() {
                uaccess::write_bytes(&vm, fds_ptr + (i * Pollfd::SIZE) as u64, &pfd.to_bytes())?;
            }
            return Ok(ready);
        }
    }
}

pub fn sys_poll(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let timeout_ms = a[2] as i32;
    let deadline = (timeout_ms >= 0).then(|| crate::clock::now_ns() + timeout_ms as u64 * 1_000_000);
    do_poll(ctx, a[0], a[1], deadline)
}

fn timespec_deadline(ctx: &SyscallContext, ptr: u64) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut b = [0u8; Timespec::SIZE];
    uaccess::read_bytes(&ctx.vm()?, ptr, &mut b)?;
    let ns = Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
    Ok(Some(crate::clock::now_ns().saturating_add(ns)))
}

/// Runs `f` with the signal mask temporarily replaced (ppoll, pselect6);
/// the old mask comes back afterwards or after the handler runs.
fn with_sigmask(ctx: &SyscallContext, mask_ptr: u64, f: impl FnOnce() -> SysResult) -> SysResult {
    if mask_ptr == 0 {
        return f();
    }
    let mask = SigSet(uaccess::read_u64(&ctx.vm()?, mask_ptr)?).without_unblockable();
    let old = core::mem::replace(&mut *ctx.task.sigmask.lock(), mask);
    let r = f();
    if matches!(r, Err(Errno::ERESTARTNOHAND)) {
        // Restored by sigreturn after the handler runs.
        *ctx.task.saved_sigmask.lock() = Some(old);
    } else {
        *ctx.task.sigmask.lock() = old;
    }
    // The mask changed back: let the return path look for signals.
    ctx.task.attention.store(true, Ordering::Release);
    r
}

pub fn sys_ppoll(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let deadline = timespec_deadline(ctx, a[2])?;
    if a[3] != 0 && a[4] != 8 {
        return Err(Errno::EINVAL);
    }
    with_sigmask(ctx, a[3], || do_poll(ctx, a[0], a[1], deadline))
}

const FD_SETSIZE: u64 = 1024;

fn read_set(ctx: &SyscallContext, ptr: u64, nfds: u64) -> Result<Vec<u64>, Errno> {
    let words = nfds.div_ceil(64) as usize;
    let mut set = alloc::vec![0u64; words];
    if ptr != 0 {
        let vm = ctx.vm()?;
        for (i, w) in set.iter_mut().enumerate() {
            *w = uaccess::read_u64(&vm, ptr + i as u64 * 8)?;
        }
    }
    Ok(set)
}

fn do_select(
    ctx: &SyscallContext,
    nfds: u64,
    ptrs: [u64; 3],
    deadline: Option<u64>,
) -> Result<(u64, [Vec<u64>; 3]), Errno> {
    if (nfds as i64) < 0 || nfds > FD_SETSIZE {
        return Err(Errno::EINVAL);
    }
    let sets = [read_set(ctx, ptrs[0], nfds)?, read_set(ctx, ptrs[1], nfds)?, read_set(ctx, ptrs[2], nfds)?];
    let masks = [POLLIN | POLLRDNORM | POLLHUP | POLLERR, POLLOUT | POLLWRNORM | POLLERR, POLLPRI];
    loop {
        let seq = POLL_SEQ.load(Ordering::Acquire);
        let mut out =
            [alloc::vec![0u64; sets[0].len()], alloc::vec![0u64; sets[1].len()], alloc::vec![0u64; sets[2].len()]];
        let mut count = 0;
        for fd in 0..nfds {
            let (w, bit) = ((fd / 64) as usize, 1u64 << (fd % 64));
            if !sets.iter().any(|s| s[w] & bit != 0) {
                continue;
            }
            let r = readiness(ctx, fd as i32);
            if r & POLLNVAL != 0 {
                return Err(Errno::EBADF);
            }
            for k in 0..3 {
                if sets[k][w] & bit != 0 && r & masks[k] != 0 {
                    out[k][w] |= bit;
                    count += 1;
                }
            }
        }
        let expired = deadline.is_some_and(|d| crate::clock::now_ns() >= d);
        if count == 0 && !expired && crate::proc::signal::has_deliverable(ctx.task) {
            return Err(Errno::ERESTARTNOHAND);
        }
        if count > 0 || expired || !wait_for_change(seq, deadline)? {
            return Ok((count, out));
        }
    }
}

fn write_sets(ctx: &SyscallContext, ptrs: [u64; 3], sets: &[Vec<u64>; 3]) -> Result<(), Errno> {
    let vm = ctx.vm()?;
    for k in 0..3 {
        if ptrs[k] != 0 {
            for (i, w) in sets[k].iter().enumerate() {
                uaccess::write_u64(&vm, ptrs[k] + i as u64 * 8, *w)?;
            }
        }
    }
    Ok(())
}

pub fn sys_select(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ptrs = [a[1], a[2], a[3]];
    let deadline = if a[4] == 0 {
        None
    } else {
        let mut b = [0u8; Timeval::SIZE];
        uaccess::read_bytes(&ctx.vm()?, a[4], &mut b)?;
        let us = Timeval::from_bytes(&b).as_micros().ok_or(Errno::EINVAL)?;
        Some(crate::clock::now_ns().saturating_add(us * 1000))
    };
    let (count, sets) = do_select(ctx, a[0], ptrs, deadline)?;
    write_sets(ctx, ptrs, &sets)?;
    if let Some(d) = deadline {
        // Linux reports the time left.
        let left = d.saturating_sub(crate::clock::now_ns());
        uaccess::write_bytes(&ctx.vm()?, a[4], &Timeval::from_micros(left / 1000).to_bytes())?;
    }
    Ok(count)
}

pub fn sys_pselect6(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ptrs = [a[1], a[2], a[3]];
    let deadline = timespec_deadline(ctx, a[4])?;
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let mask_ptr = if a[5] != 0 {
        let vm = ctx.vm()?;
        let ss = uaccess::read_u64(&vm, a[5])?;
        let len = uaccess::read_u64(&vm, a[5] + 8)?;
        if ss != 0 && len != 8 {
            return Err(Errno::EINVAL);
        }
        ss
    } else {
        0
    };
    with_sigmask(ctx, mask_ptr, || {
        let (count, sets) = do_select(ctx, a[0], ptrs, deadline)?;
        write_sets(ctx, ptrs, &sets)?;
        if let Some(d) = deadline {
            let left = d.saturating_sub(crate::clock::now_ns());
            uaccess::write_bytes(&ctx.vm()?, a[4], &Timespec::from_nanos(left).to_bytes())?;
        }
        Ok(count)
    })
}
