//! epoll_create, epoll_create1, epoll_ctl, epoll_wait, epoll_pwait and
//! epoll_pwait2: argument checks in Linux's order, then `fs::epoll`.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::EpollEvent;

use super::fs_io::install;
use super::poll::{timespec_deadline, with_sigmask};
use super::{SysResult, SyscallContext};
use crate::event::{Events, PollTable, Poller};
use crate::fs::epoll::{Epoll, EpollFile, EXCLUSIVE_OK_BITS};
use crate::fs::file::FileOps;
use crate::fs::OpenFile;
use crate::mm::uaccess;
use crate::sched::Interrupted;

fn create(ctx: &SyscallContext, flags: u32) -> SysResult {
    let ops: Arc<dyn FileOps> = Arc::try_new(EpollFile(Epoll::new(ctx.cred().uid)?)).map_err(|_| Errno::ENOMEM)?;
    install(ctx, OpenFile::new(ops, c::O_RDWR), flags & c::EPOLL_CLOEXEC != 0)
}

pub fn sys_epoll_create(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    // The size is a hint Linux ignores, but it must be positive.
    if a[0] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    create(ctx, 0)
}

pub fn sys_epoll_create1(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = a[0] as u32;
    if flags & !c::EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    create(ctx, flags)
}

/// A descriptor's open file, as `fdget` sees it: O_PATH ones are EBADF.
fn fdget(ctx: &SyscallContext, fd: i32) -> Result<Arc<OpenFile>, Errno> {
    let f = ctx.process().files().lock().get(fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    Ok(f)
}

pub fn sys_epoll_ctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (epfd, op, fd, event_ptr) = (a[0] as i32, a[1] as u32, a[2] as i32, a[3]);
    let has_event = op != c::EPOLL_CTL_DEL;
    let mut event = EpollEvent::default();
    if has_event {
        let mut b = [0u8; EpollEvent::SIZE];
        ctx.copy_from_user(event_ptr, &mut b)?;
        event = EpollEvent::from_bytes(&b);
    }
    let epf = fdget(ctx, epfd)?;
    let target = fdget(ctx, fd)?;
    // Files without a poll method (regular files, /dev/null) cannot be
    // watched.
    let mut probe = PollTable::probe();
    target.ops.poll(Some(&mut probe));
    if probe.heads() == 0 {
        return Err(Errno::EPERM);
    }
    // Holding a wakeup source needs CAP_BLOCK_SUSPEND, which Kiln's root
    // has no use for: dropped, as Linux drops it without the capability.
    event.events &= !c::EPOLLWAKEUP;
    let Some(ep) = Epoll::of(&epf.ops) else {
        return Err(Errno::EINVAL);
    };
    if Arc::ptr_eq(&epf, &target) {
        return Err(Errno::EINVAL);
    }
    if has_event && event.events & c::EPOLLEXCLUSIVE != 0 {
        if op == c::EPOLL_CTL_MOD {
            return Err(Errno::EINVAL);
        }
        if op == c::EPOLL_CTL_ADD && (Epoll::of(&target.ops).is_some() || event.events & !EXCLUSIVE_OK_BITS != 0) {
            return Err(Errno::EINVAL);
        }
    }
    event.events |= c::EPOLLERR | c::EPOLLHUP;
    match op {
        c::EPOLL_CTL_ADD => ep.add(&target, fd, event)?,
        c::EPOLL_CTL_MOD => ep.modify(&target, fd, event)?,
        c::EPOLL_CTL_DEL => ep.delete(&target, fd)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

/// epoll_wait's body: waits until entries are ready (returning how many
/// were copied to `events`), the deadline passes (0) or a signal comes
/// (EINTR, never restarted, as on Linux).
#[inline(always)]
fn do_wait(ctx: &SyscallContext, epfd: i32, events: u64, maxevents: i32, deadline: Option<u64>) -> SysResult {
    // The copy is made here, inlined, not through `SyscallContext::copy_to_user`:
    // the call and its frame were about 25 of the row's 700 instructions.
    let deliver = |i: usize, ev: EpollEvent| {
        uaccess::write_bytes_with(|| ctx.vm(), events + (i * EpollEvent::SIZE) as u64, &ev.to_bytes())
    };
    // The first look borrows the epoll file under the descriptor table's
    // lock (as poll does; Linux's fdget takes no reference for an
    // unshared table): a reference is taken only to sleep. Copying the
    // events out under it is allowed (the table's lock is a mutex and a
    // fault never takes it).
    let table = ctx.process().files().lock();
    // Linux 6.18's order: the descriptor, maxevents, the buffer's range,
    // then whether it is an epoll.
    let f = match table.file(epfd) {
        Some(f) if !f.is_path_only() => f,
        _ => return Err(Errno::EBADF),
    };
    if maxevents <= 0 || maxevents as u32 > c::EP_MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    let max = maxevents as usize;
    if !uaccess::access_ok(events, max * EpollEvent::SIZE) {
        return Err(Errno::EFAULT);
    }
    let ep = Epoll::of(&f.ops).ok_or(Errno::EINVAL)?;
    let (n, more) = ep.scan(max, deliver)?;
    if n > 0 {
        ep.pass_on(more);
        return Ok(n as u64);
    }
    // A zero timeout (deadline 0) only looks, without reading the clock.
    if deadline.is_some_and(|d| d == 0 || crate::clock::now_ns() >= d) {
        return Ok(0);
    }
    let f = table.get(epfd)?;
    drop(table);
    sleep_wait(ctx, &f, max, deadline, deliver)
}

/// epoll_wait after a first look found nothing: subscribes, looks again
/// and sleeps until entries come, the deadline passes or a signal comes.
#[inline(never)]
fn sleep_wait(
    ctx: &SyscallContext,
    f: &Arc<OpenFile>,
    max: usize,
    deadline: Option<u64>,
    mut deliver: impl FnMut(usize, EpollEvent) -> Result<(), Errno>,
) -> SysResult {
    let ep = Epoll::of(&f.ops).ok_or(Errno::EINVAL)?;
    let mut timed_out = false;
    let mut waiting: Option<(Poller, crate::event::Subscription)> = None;
    loop {
        if timed_out {
            return Ok(0);
        }
        if crate::proc::signal::has_deliverable(ctx.task) {
            return Err(Errno::EINTR);
        }
        match &waiting {
            None => {
                // Subscribe, then look once more before sleeping: an
                // entry that became ready in between is on the list by
                // now.
                let poller = Poller::new()?;
                let sub = ep.waiters().subscribe(poller.observer().clone(), Events::READABLE, true)?;
                waiting = Some((poller, sub));
            }
            Some((poller, _)) => match poller.wait(deadline) {
                Ok(()) => {}
                Err(Interrupted::TimedOut) => timed_out = true,
                Err(Interrupted::Signal) => crate::proc::signal::settle_interrupt(ctx.task),
            },
        }
        let (n, more) = ep.scan(max, &mut deliver)?;
        if n > 0 {
            drop(waiting);
            ep.pass_on(more);
            return Ok(n as u64);
        }
    }
}

/// The deadline of a timeout in milliseconds: negative waits for ever,
/// 0 only looks (deadline 0, already past).
fn ms_deadline(timeout: i32) -> Option<u64> {
    match timeout {
        t if t < 0 => None,
        0 => Some(0),
        t => Some(crate::clock::now_ns().saturating_add(t as u64 * 1_000_000)),
    }
}

pub fn sys_epoll_wait(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_wait(ctx, a[0] as i32, a[1], a[2] as i32, ms_deadline(a[3] as i32))
}

/// The signal mask argument of epoll_pwait and epoll_pwait2.
fn check_sigmask(mask_ptr: u64, size: u64) -> Result<(), Errno> {
    if mask_ptr != 0 && size != 8 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

pub fn sys_epoll_pwait(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let deadline = ms_deadline(a[3] as i32);
    if a[4] == 0 {
        // No mask (musl's epoll_wait is this call): epoll_wait itself.
        return do_wait(ctx, a[0] as i32, a[1], a[2] as i32, deadline);
    }
    check_sigmask(a[4], a[5])?;
    with_sigmask(ctx, a[4], || do_wait(ctx, a[0] as i32, a[1], a[2] as i32, deadline))
}

pub fn sys_epoll_pwait2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let deadline = timespec_deadline(ctx, a[3])?;
    check_sigmask(a[4], a[5])?;
    with_sigmask(ctx, a[4], || do_wait(ctx, a[0] as i32, a[1], a[2] as i32, deadline))
}
