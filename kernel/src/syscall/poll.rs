//! Waiting for files: poll, ppoll, select and pselect6. The first scan
//! subscribes the caller to every file's notification heads
//! (`FileOps::poll` with a `PollTable`) while it reads their readiness;
//! when nothing is ready the caller sleeps until one of them notifies,
//! the deadline passes or a signal comes, and scans again.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::errno::Errno;
use linux_abi::layout::{Pollfd, Timespec, Timeval};
use linux_abi::signal::SigSet;

use super::{SysResult, SyscallContext};
use crate::event::{Events, Poller, Subscription};
use crate::fs::OpenFile;
use crate::mm::uaccess;
use crate::proc::Task;
use crate::sched::Interrupted;

/// A scan-then-sleep wait over many files (poll, select). Nothing is
/// subscribed when the call only looks (a zero timeout), nor after the
/// first ready file is found (the call will not sleep then), as Linux
/// stops registering its poll table.
pub(super) struct ReadyWait {
    poller: Option<Poller>,
    subscriptions: Vec<Subscription>,
    subscribing: bool,
}

impl ReadyWait {
    pub(super) fn new(deadline: Option<u64>) -> ReadyWait {
        ReadyWait { poller: None, subscriptions: Vec::new(), subscribing: deadline != Some(0) }
    }

    /// `f`'s readiness; while subscribing, also subscribes to its heads
    /// for `interest`.
    pub(super) fn poll_file(&mut self, f: &OpenFile, interest: Events) -> Result<Events, Errno> {
        if f.is_path_only() {
            return Ok(Events::NVAL);
        }
        if !self.subscribing {
            return Ok(f.ops.poll(None));
        }
        let poller = match &self.poller {
            Some(p) => p,
            None => self.poller.insert(Poller::new()?),
        };
        let mut table = poller.table(interest, &mut self.subscriptions);
        let events = f.ops.poll(Some(&mut table));
        if let Some(e) = table.error() {
            return Err(e);
        }
        if events.intersects(interest) {
            // This call returns without sleeping: no more subscriptions.
            self.subscribing = false;
        }
        Ok(events)
    }

    /// Sleeps after a scan that found nothing. `Ok(true)`: something
    /// notified, scan again; `Ok(false)`: the deadline passed, scan one
    /// last time; `Err`: a signal to deliver (`ERESTARTNOHAND`).
    pub(super) fn sleep(&mut self, task: &Task, deadline: Option<u64>) -> Result<bool, Errno> {
        self.subscribing = false;
        // No file polled (poll with no descriptors): a plain timed sleep.
        let poller = match &self.poller {
            Some(p) => p,
            None => self.poller.insert(Poller::new()?),
        };
        loop {
            if crate::proc::signal::has_deliverable(task) {
                return Err(Errno::ERESTARTNOHAND);
            }
            match poller.wait(deadline) {
                Ok(()) => return Ok(true),
                Err(Interrupted::TimedOut) => return Ok(false),
                // A signal the thread blocks (or one already taken) woke
                // it: forget the wakeup and sleep on, unless something is
                // deliverable after all.
                Err(Interrupted::Signal) => crate::proc::signal::settle_interrupt(task),
            }
        }
    }
}

/// Whether `deadline` (monotonic ns) has passed; deadline 0 is a zero
/// timeout, past without reading the clock.
pub(super) fn expired(deadline: Option<u64>) -> bool {
    deadline.is_some_and(|d| d == 0 || crate::clock::now_ns() >= d)
}

/// The deadline of a timeout of `ns` from now: 0 for a zero timeout.
fn deadline_in(ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        crate::clock::now_ns().saturating_add(ns)
    }
}

fn lookup(ctx: &SyscallContext, fd: i32) -> Option<alloc::sync::Arc<OpenFile>> {
    ctx.process().files().lock().get(fd).ok()
}

/// The open files of `fds` in order (`None`: not open), looked up under
/// one lock of the descriptor table per scan rather than one per file.
fn lookup_all(
    ctx: &SyscallContext,
    fds: impl Iterator<Item = i32>,
    out: &mut Vec<Option<alloc::sync::Arc<OpenFile>>>,
) -> Result<(), Errno> {
    out.clear();
    out.try_reserve(fds.size_hint().0).map_err(|_| Errno::ENOMEM)?;
    let table = ctx.process().files().lock();
    for fd in fds {
        if out.len() == out.capacity() {
            out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        }
        out.push(if fd < 0 { None } else { table.get(fd).ok() });
    }
    Ok(())
}

fn do_poll(ctx: &SyscallContext, fds_ptr: u64, nfds: u64, deadline: Option<u64>) -> SysResult {
    if nfds > ctx.process().rlimits.lock()[linux_abi::consts::RLIMIT_NOFILE as usize].0 {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    // The array in one copy each way, not one per entry.
    let mut raw = Vec::new();
    let bytes = nfds as usize * Pollfd::SIZE;
    raw.try_reserve_exact(bytes).map_err(|_| Errno::ENOMEM)?;
    raw.resize(bytes, 0);
    uaccess::read_bytes(&vm, fds_ptr, &mut raw)?;
    let mut fds = Vec::new();
    fds.try_reserve_exact(nfds as usize).map_err(|_| Errno::ENOMEM)?;
    fds.extend(raw.chunks_exact(Pollfd::SIZE).filter_map(Pollfd::from_slice));
    let mut files = Vec::new();
    let mut wait = ReadyWait::new(deadline);
    let mut last = false;
    loop {
        let mut ready = 0;
        lookup_all(ctx, fds.iter().map(|p| p.fd), &mut files)?;
        for (pfd, file) in fds.iter_mut().zip(files.drain(..)) {
            pfd.revents = 0;
            if pfd.fd < 0 {
                continue;
            }
            let wanted = Events::from_bits(u32::from(pfd.events)) | Events::ERR | Events::HUP;
            let events = match file {
                Some(f) => wait.poll_file(&f, wanted)?,
                None => Events::NVAL,
            };
            pfd.revents = (events & (wanted | Events::NVAL)).bits() as u16;
            if pfd.revents != 0 {
                ready += 1;
            }
        }
        if ready > 0 || last || expired(deadline) {
            for (out, pfd) in raw.chunks_exact_mut(Pollfd::SIZE).zip(fds.iter()) {
                out.copy_from_slice(&pfd.to_bytes());
            }
            uaccess::write_bytes(&vm, fds_ptr, &raw)?;
            return Ok(ready);
        }
        last = !wait.sleep(ctx.task, deadline)?;
    }
}

pub fn sys_poll(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let timeout_ms = a[2] as i32;
    let deadline = (timeout_ms >= 0).then(|| deadline_in(timeout_ms as u64 * 1_000_000));
    do_poll(ctx, a[0], a[1], deadline)
}

pub(super) fn timespec_deadline(ctx: &SyscallContext, ptr: u64) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut b = [0u8; Timespec::SIZE];
    uaccess::read_bytes(&ctx.vm()?, ptr, &mut b)?;
    let ns = Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
    Ok(Some(deadline_in(ns)))
}

/// Runs `f` with the signal mask temporarily replaced (ppoll, pselect6,
/// epoll_pwait); the old mask comes back afterwards, or after the handler
/// runs when a signal interrupted the call.
pub(super) fn with_sigmask(ctx: &SyscallContext, mask_ptr: u64, f: impl FnOnce() -> SysResult) -> SysResult {
    if mask_ptr == 0 {
        return f();
    }
    let mask = SigSet(uaccess::read_u64(&ctx.vm()?, mask_ptr)?).without_unblockable();
    let old = core::mem::replace(&mut *ctx.task.sigmask.lock(), mask);
    let r = f();
    if matches!(r, Err(Errno::ERESTARTNOHAND | Errno::EINTR)) {
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
    // Linux's POLLIN_SET, POLLOUT_SET and POLLEX_SET.
    let masks = [
        Events::IN | Events::RDNORM | Events::RDBAND | Events::HUP | Events::ERR,
        Events::OUT | Events::WRNORM | Events::WRBAND | Events::ERR,
        Events::PRI,
    ];
    let mut wait = ReadyWait::new(deadline);
    let mut last = false;
    loop {
        let mut out =
            [alloc::vec![0u64; sets[0].len()], alloc::vec![0u64; sets[1].len()], alloc::vec![0u64; sets[2].len()]];
        let mut count = 0;
        for fd in 0..nfds {
            let (w, bit) = ((fd / 64) as usize, 1u64 << (fd % 64));
            let wanted = (0..3).filter(|&k| sets[k][w] & bit != 0).fold(Events::EMPTY, |m, k| m | masks[k]);
            if wanted.is_empty() {
                continue;
            }
            let r = match lookup(ctx, fd as i32) {
                Some(f) => wait.poll_file(&f, wanted)?,
                None => Events::NVAL,
            };
            if r.contains(Events::NVAL) {
                return Err(Errno::EBADF);
            }
            for k in 0..3 {
                if sets[k][w] & bit != 0 && r.intersects(masks[k]) {
                    out[k][w] |= bit;
                    count += 1;
                }
            }
        }
        if count > 0 || last || expired(deadline) {
            return Ok((count, out));
        }
        last = !wait.sleep(ctx.task, deadline)?;
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
        Some(deadline_in(us.saturating_mul(1000)))
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
