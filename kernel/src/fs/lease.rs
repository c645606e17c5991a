//! File leases (`F_SETLEASE`/`F_GETLEASE`): an open file description
//! that holds one is told, by a signal, before anyone else opens the file
//! in a conflicting way, and gets `lease-break-time` seconds to finish up.
//!
//! A read lease conflicts with an open for writing, a write lease with
//! any open. The opener breaks the lease: the holder's owner gets SIGIO
//! (or its F_SETSIG signal, si_code POLL_MSG, si_fd the descriptor that
//! took the lease) and the opener waits (EWOULDBLOCK with O_NONBLOCK)
//! until the holder releases or downgrades the lease with `F_SETLEASE`,
//! or the break time runs out and the kernel does it. Truncating the file
//! by path breaks leases as a write does. Leases live beside the other
//! locks of the inode (`lock.rs`) and go when their description closes.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use kiln_ipc::range_lock::LockKind;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::signal::POLL_MSG;

use super::file::OpenFile;
use super::fown::{self, FileOwner, OwnerKind};
use super::lock::{self, description_id, lock_key, LockState, GENERATION, STATE, USES_LEASE};
use crate::sched::Interrupted;

/// How long a lease holder has to give a broken lease up:
/// `/proc/sys/fs/lease-break-time` seconds (none at all when it is 0 or
/// less, as Linux's).
fn lease_break_ns() -> u64 {
    (super::procfs::sys::LEASE_BREAK_TIME.get().max(0) as u64).saturating_mul(1_000_000_000)
}

/// Set once any lease was taken: until then opens skip the lease check.
static LEASES_USED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

pub(super) struct Lease {
    pub file: usize,
    /// The description, to read its owner when the lease breaks.
    pub holder: Weak<OpenFile>,
    /// The descriptor the lease was taken through (the signal's si_fd).
    pub fd: i32,
    pub pid: i32,
    pub kind: LockKind,
    /// A break in progress: what the lease must become (None: go), and
    /// when the kernel does it if the holder has not (monotonic ns).
    pub breaking: Option<(Option<LockKind>, u64)>,
}

impl Lease {
    /// What F_GETLEASE and /proc/locks report: the target of a break in
    /// progress, else the lease's type.
    pub fn target(&self) -> Option<LockKind> {
        match self.breaking {
            Some((target, _)) => target,
            None => Some(self.kind),
        }
    }

    fn conflicts_with(&self, write: bool) -> bool {
        write || self.kind == LockKind::Write
    }

    /// Takes the lease to `to` (None: removes it, the caller drops it),
    /// settling a break that asked for no more than that.
    fn change(&mut self, to: LockKind) {
        self.kind = to;
        if to == LockKind::Read && matches!(self.breaking, Some((Some(LockKind::Read), _))) {
            self.breaking = None;
        }
    }
}

/// Carries out breaks whose time is up: downgrade or removal.
fn time_out(st: &mut LockState, key: (u64, u64), now: u64) -> bool {
    let Some(inode) = st.find_mut(key) else { return false };
    let mut changed = false;
    inode.leases.retain_mut(|l| match l.breaking {
        Some((target, deadline)) if deadline <= now => {
            changed = true;
            match target {
                Some(kind) => {
                    l.change(kind);
                    true
                }
                None => false,
            }
        }
        _ => true,
    });
    changed
}

/// How many open file descriptions of the file are open for writing,
/// and how many for reading only (Linux's `i_writecount` and
/// `i_readcount`); the process layer counts them for `set`.
pub struct OpenCounts {
    pub writers: usize,
    pub readers: usize,
}

/// `F_SETLEASE`: takes, changes or (`arg` F_UNLCK) drops the lease of
/// description `f`, taken through descriptor `fd` by process `pid`.
/// `counts` says how the file is open right now; `is_owner` whether the
/// caller owns the file or may take leases anyway (CAP_LEASE).
pub fn set(
    f: &Arc<OpenFile>,
    fd: i32,
    pid: i32,
    arg: u32,
    is_owner: bool,
    counts: impl FnOnce() -> OpenCounts,
) -> Result<(), Errno> {
    let kind = match arg {
        c::F_RDLCK => Some(LockKind::Read),
        c::F_WRLCK => Some(LockKind::Write),
        c::F_UNLCK => None,
        _ => return Err(Errno::EINVAL),
    };
    if !is_owner {
        return Err(Errno::EACCES);
    }
    let regular = f.dentry.as_ref().map(|d| d.inode().file_type()).or_else(|| f.ops.inode().map(|i| i.file_type()));
    if regular != Some(super::inode::FileType::Regular) {
        return Err(Errno::EINVAL);
    }
    let key = lock_key(f);
    let id = description_id(f);
    let Some(kind) = kind else {
        let mut st = STATE.lock();
        let found = st.find_mut(key).and_then(|i| {
            let at = i.leases.iter().position(|l| l.file == id)?;
            Some(i.leases.remove(at))
        });
        st.prune();
        drop(st);
        return match found {
            Some(_) => {
                lock::changed();
                Ok(())
            }
            None => Err(Errno::EAGAIN),
        };
    };
    // Linux's check_conflicting_open: a read lease needs the file open
    // for writing nowhere; a write lease needs it open nowhere else.
    let counts = counts();
    let (self_w, self_r) = if f.writable() {
        (1, 0)
    } else if f.readable() {
        (0, 1)
    } else {
        (0, 0)
    };
    match kind {
        LockKind::Read if counts.writers > 0 => return Err(Errno::EAGAIN),
        LockKind::Write if counts.writers != self_w || counts.readers != self_r => return Err(Errno::EAGAIN),
        _ => {}
    }
    let mut st = STATE.lock();
    time_out(&mut st, key, crate::clock::now_ns());
    let inode = st.entry(key)?;
    for l in &inode.leases {
        if l.file == id {
            continue;
        }
        if kind == LockKind::Write || matches!(l.breaking, Some((None, _))) {
            return Err(Errno::EAGAIN);
        }
    }
    match inode.leases.iter_mut().find(|l| l.file == id) {
        Some(mine) => mine.change(kind),
        None => {
            inode.leases.try_reserve(1).map_err(|_| Errno::ENOLCK)?;
            inode.leases.push(Lease { file: id, holder: Arc::downgrade(f), fd, pid, kind, breaking: None });
            LEASES_USED.store(true, Ordering::Relaxed);
            f.lock_use.fetch_or(USES_LEASE, Ordering::Relaxed);
        }
    }
    drop(st);
    // The lease holder becomes the file's owner, as Linux's lease_setup
    // does, so the break signal reaches it.
    {
        let mut owner = f.owner.lock();
        owner.kind = OwnerKind::Process;
        owner.id = pid;
    }
    lock::changed();
    Ok(())
}

/// `F_GETLEASE`.
pub fn get(f: &OpenFile) -> u32 {
    let key = lock_key(f);
    let id = description_id(f);
    let mut st = STATE.lock();
    let changed = time_out(&mut st, key, crate::clock::now_ns());
    let target = st.find(key).and_then(|i| i.leases.iter().find(|l| l.file == id)).map(|l| l.target());
    st.prune();
    drop(st);
    if changed {
        lock::changed();
    }
    match target {
        Some(Some(LockKind::Read)) => c::F_RDLCK,
        Some(Some(LockKind::Write)) => c::F_WRLCK,
        _ => c::F_UNLCK,
    }
}

/// Breaks the leases an open of the file at `key` (`write`: for writing,
/// or a truncate) conflicts with, then waits until they are out of the
/// way: released or downgraded by their holders, or by the kernel when
/// the break time is up. `nonblock`: start the break but fail with
/// EWOULDBLOCK instead of waiting.
pub fn break_leases(key: (u64, u64), write: bool, nonblock: bool) -> Result<(), Errno> {
    if !LEASES_USED.load(Ordering::Relaxed) {
        return Ok(());
    }
    if STATE.lock().find(key).is_none_or(|i| i.leases.is_empty()) {
        return Ok(());
    }
    let mut notify: Vec<(Arc<OpenFile>, i32)> = Vec::new();
    let mut first = true;
    loop {
        let now = crate::clock::now_ns();
        let mut st = STATE.lock();
        let timed_out = time_out(&mut st, key, now);
        let Some(inode) = st.find_mut(key) else {
            drop(st);
            if timed_out {
                lock::changed();
            }
            return Ok(());
        };
        if !inode.leases.iter().any(|l| l.conflicts_with(write)) {
            st.prune();
            drop(st);
            if timed_out {
                lock::changed();
            }
            return Ok(());
        }
        if first {
            first = false;
            let deadline = now.saturating_add(lease_break_ns());
            for l in inode.leases.iter_mut().filter(|l| l.conflicts_with(write)) {
                // A break already heading where this one would is left be.
                let start = !matches!((write, l.breaking), (true, Some((None, _))) | (false, Some(_)));
                if !start {
                    continue;
                }
                l.breaking = Some((if write { None } else { Some(LockKind::Read) }, deadline));
                if let Some(holder) = l.holder.upgrade() {
                    if notify.try_reserve(1).is_ok() {
                        notify.push((holder, l.fd));
                    }
                }
            }
        }
        let deadline = inode.leases.iter().filter_map(|l| l.breaking.map(|(_, d)| d)).min();
        let seen = GENERATION.load(Ordering::Acquire);
        drop(st);
        if timed_out {
            lock::changed();
        }
        // Signal outside the lock; dropping a holder's last reference
        // there would close it, which takes the lock again.
        for (holder, fd) in notify.drain(..) {
            let owner: FileOwner = *holder.owner.lock();
            fown::send(owner, fd, POLL_MSG);
        }
        if nonblock {
            return Err(Errno::EAGAIN);
        }
        match lock::wait_for_change(seen, deadline) {
            Ok(()) | Err(Interrupted::TimedOut) => {}
            Err(Interrupted::Signal) => return Err(Errno::ERESTARTSYS),
        }
    }
}
