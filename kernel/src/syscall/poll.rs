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
use crate::mm::{uaccess, Vm};
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
    /// for `interest`. The look-only case is inlined into the scans.
    #[inline(always)]
    pub(super) fn poll_file(&mut self, f: &OpenFile, interest: Events) -> Result<Events, Errno> {
        if f.is_path_only() {
            return Ok(Events::NVAL);
        }
        if !self.subscribing {
            return Ok(f.ops.poll(None));
        }
        self.poll_subscribing(f, interest)
    }

    fn poll_subscribing(&mut self, f: &OpenFile, interest: Events) -> Result<Events, Errno> {
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

/// One `struct pollfd` of the caller's array, read and answered in place
/// in the kernel's copy of it (no array of parsed entries per call).
fn pollfd_fd(entry: &[u8]) -> i32 {
    i32::from_ne_bytes([entry[0], entry[1], entry[2], entry[3]])
}

fn pollfd_events(entry: &[u8]) -> u16 {
    u16::from_ne_bytes([entry[4], entry[5]])
}

fn set_pollfd_revents(entry: &mut [u8], revents: u16) {
    entry[6..8].copy_from_slice(&revents.to_ne_bytes());
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
    let mut wait = ReadyWait::new(deadline);
    let mut last = false;
    loop {
        let mut ready = 0;
        // The whole scan under one lock of the descriptor table, the files
        // borrowed from it rather than referenced one by one (Linux's
        // fdget takes no reference for an unshared table either). A poll
        // method may sleep, which the table's mutex allows, and none takes
        // the descriptor table.
        let table = ctx.process().files().lock();
        for entry in raw.chunks_exact_mut(Pollfd::SIZE) {
            let fd = pollfd_fd(entry);
            let revents = if fd < 0 {
                0
            } else if let Some(f) = table.file(fd) {
                let wanted = Events::from_bits(u32::from(pollfd_events(entry))) | Events::ERR | Events::HUP;
                (wait.poll_file(f, wanted)? & (wanted | Events::NVAL)).bits() as u16
            } else {
                Events::NVAL.bits() as u16
            };
            set_pollfd_revents(entry, revents);
            if revents != 0 {
                ready += 1;
            }
        }
        drop(table);
        if ready > 0 || last || expired(deadline) {
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
const SET_WORDS: usize = FD_SETSIZE as usize / 64;

/// An `fd_set`, as many of its words as `nfds` covers (Linux's FDS_BYTES).
type FdSet = [u64; SET_WORDS];

fn read_set(vm: &Vm, ptr: u64, words: usize) -> Result<FdSet, Errno> {
    let mut set = [0u64; SET_WORDS];
    if ptr != 0 {
        let mut b = [0u8; SET_WORDS * 8];
        uaccess::read_bytes(vm, ptr, &mut b[..words * 8])?;
        for (w, bytes) in set.iter_mut().zip(b[..words * 8].chunks_exact(8)) {
            *w = u64::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]]);
        }
    }
    Ok(set)
}

/// Scans the descriptors of `sets` below `nfds` until one is ready, the
/// deadline passes or a signal comes; the ready ones go to `out`.
fn do_select(
    ctx: &SyscallContext,
    nfds: u64,
    ptrs: [u64; 3],
    deadline: Option<u64>,
    out: &mut [FdSet; 3],
) -> Result<u64, Errno> {
    if (nfds as i64) < 0 || nfds > FD_SETSIZE {
        return Err(Errno::EINVAL);
    }
    let words = nfds.div_ceil(64) as usize;
    let sets = {
        let vm = ctx.vm()?;
        [read_set(&vm, ptrs[0], words)?, read_set(&vm, ptrs[1], words)?, read_set(&vm, ptrs[2], words)?]
    };
    // Linux's POLLIN_SET, POLLOUT_SET and POLLEX_SET.
    let masks = [
        Events::IN | Events::RDNORM | Events::RDBAND | Events::HUP | Events::ERR,
        Events::OUT | Events::WRNORM | Events::WRBAND | Events::ERR,
        Events::PRI,
    ];
    let mut wait = ReadyWait::new(deadline);
    let mut last = false;
    loop {
        *out = [[0u64; SET_WORDS]; 3];
        let mut count = 0;
        // One lock of the descriptor table per scan, as in do_poll.
        let table = ctx.process().files().lock();
        for w in 0..words {
            let mut bits = sets[0][w] | sets[1][w] | sets[2][w];
            let end = nfds - w as u64 * 64;
            if end < 64 {
                // Bits at and past nfds are not looked at.
                bits &= (1u64 << end) - 1;
            }
            while bits != 0 {
                let bit = bits & bits.wrapping_neg();
                bits &= bits - 1;
                let fd = (w * 64) as i32 + bit.trailing_zeros() as i32;
                let wanted = (0..3).filter(|&k| sets[k][w] & bit != 0).fold(Events::EMPTY, |m, k| m | masks[k]);
                let r = match table.file(fd) {
                    Some(f) => wait.poll_file(f, wanted)?,
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
        }
        drop(table);
        if count > 0 || last || expired(deadline) {
            return Ok(count);
        }
        last = !wait.sleep(ctx.task, deadline)?;
    }
}

/// Writes the result sets back, as many words as `nfds` covers.
fn write_sets(ctx: &SyscallContext, nfds: u64, ptrs: [u64; 3], sets: &[FdSet; 3]) -> Result<(), Errno> {
    let words = nfds.div_ceil(64) as usize;
    let vm = ctx.vm()?;
    for k in 0..3 {
        if ptrs[k] != 0 {
            let mut b = [0u8; SET_WORDS * 8];
            for (bytes, w) in b.chunks_exact_mut(8).zip(sets[k][..words].iter()) {
                bytes.copy_from_slice(&w.to_ne_bytes());
            }
            uaccess::write_bytes(&vm, ptrs[k], &b[..words * 8])?;
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
    let mut sets = [[0u64; SET_WORDS]; 3];
    let count = do_select(ctx, a[0], ptrs, deadline, &mut sets)?;
    write_sets(ctx, a[0], ptrs, &sets)?;
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
        let mut sets = [[0u64; SET_WORDS]; 3];
        let count = do_select(ctx, a[0], ptrs, deadline, &mut sets)?;
        write_sets(ctx, a[0], ptrs, &sets)?;
        if let Some(d) = deadline {
            let left = d.saturating_sub(crate::clock::now_ns());
            uaccess::write_bytes(&ctx.vm()?, a[4], &Timespec::from_nanos(left).to_bytes())?;
        }
        Ok(count)
    })
}
