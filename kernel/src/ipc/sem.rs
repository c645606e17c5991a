//! System V semaphore sets: semget, semop/semtimedop and semctl with
//! Linux's semantics and limits.
//!
//! An operation set applies atomically (`kiln_ipc::semop`). One that must
//! wait joins the set's queue of pending sets, and whoever changes the
//! values afterwards (another semop, SETVAL, SETALL, an exiting
//! process's undo) runs the queue in arrival order and completes every
//! pending set that can now proceed on its sleeper's behalf, starting
//! over after each one that changed a value, as Linux's update_queue
//! does. GETNCNT and GETZCNT count the sleepers whose first blocked
//! operation waits on that semaphore.
//!
//! SEM_UNDO adjustments are kept per set and per process; the exiting
//! process's are applied (clamped to 0..=SEMVMX) when it exits, and
//! SETVAL/SETALL clear them, as on Linux.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};

use hal::sync::SpinLock;
use kiln_ipc::semop::{perform, undo_value, SemOp, SemopError, SEMVMX};
use linux_abi::errno::Errno;
use linux_abi::ipc::{
    IpcPerm, SemInfo, SemidDs, GETNCNT, GETPID, GETVAL, GETZCNT, IPC_CREAT, IPC_EXCL, IPC_PRIVATE, IPC_STAT, SEMAEM,
    SEMMAP, SEMMNU, SEMUME, SEMUSZ, SEM_INFO, SEM_STAT_ANY,
};

use super::ids::IpcIds;
use super::limits::{self, SEMMNI, SEMMNS, SEMMSL, SEMOPM};
use super::perm;
use crate::proc::Task;
use crate::sched::{Interrupted, WaitQueue};

const PENDING: u8 = 0;
const DONE: u8 = 1;
const RANGE: u8 = 2;
const AGAIN: u8 = 3;
const REMOVED: u8 = 4;

/// An operation set asleep until it can proceed.
struct Pending {
    pid: i32,
    ops: Vec<SemOp>,
    undo: bool,
    /// The operation that blocked at the last attempt.
    blocking: AtomicUsize,
    /// PENDING until someone completes (or fails) it for the sleeper.
    status: AtomicU8,
}

struct SetState {
    perm: IpcPerm,
    values: Vec<u16>,
    /// The last process to operate on each semaphore.
    pids: Vec<i32>,
    otime: i64,
    ctime: i64,
    removed: bool,
    pending: VecDeque<Arc<Pending>>,
    /// SEM_UNDO adjustments by process.
    undo: Vec<(i32, Vec<i32>)>,
}

impl SetState {
    fn undo_index(&self, pid: i32) -> Option<usize> {
        self.undo.iter().position(|(p, _)| *p == pid)
    }

    /// Runs `ops` for `pid`, with its undo adjustments if it has them.
    fn try_ops(&mut self, pid: i32, ops: &[SemOp], undo: bool) -> Result<(), SemopError> {
        let adjust = if undo { self.undo_index(pid) } else { None };
        let result = match adjust {
            Some(i) => perform(&mut self.values, Some(&mut self.undo[i].1), ops),
            None => perform(&mut self.values, None, ops),
        };
        if result.is_ok() {
            for op in ops {
                self.pids[usize::from(op.num)] = pid;
            }
            self.otime = perm::now();
        }
        result
    }

    /// Completes the pending sets that can proceed now, in order,
    /// starting over after each that changed a value; returns whether
    /// any finished (their sleepers need waking).
    fn update_queue(&mut self) -> bool {
        let mut finished = false;
        'restart: loop {
            let mut i = 0;
            while i < self.pending.len() {
                let p = self.pending[i].clone();
                let outcome = match self.try_ops(p.pid, &p.ops, p.undo) {
                    Ok(()) => DONE,
                    Err(SemopError::Range) => RANGE,
                    Err(SemopError::Again { .. }) => AGAIN,
                    Err(SemopError::WouldBlock { op }) => {
                        p.blocking.store(op, Ordering::Relaxed);
                        i += 1;
                        continue;
                    }
                };
                self.pending.remove(i);
                p.status.store(outcome, Ordering::Release);
                finished = true;
                if outcome == DONE && p.ops.iter().any(|o| o.alters()) {
                    continue 'restart;
                }
            }
            return finished;
        }
    }

    /// GETNCNT (`zero` false) and GETZCNT.
    fn count_waiting(&self, num: usize, zero: bool) -> i32 {
        self.pending
            .iter()
            .filter(|p| {
                let op = p.ops[p.blocking.load(Ordering::Relaxed).min(p.ops.len() - 1)];
                usize::from(op.num) == num && if zero { op.op == 0 } else { op.op < 0 }
            })
            .count() as i32
    }
}

pub struct SemSet {
    id: i32,
    nsems: usize,
    state: SpinLock<SetState>,
    /// Woken when pending sets were completed or the set went.
    sleepers: WaitQueue,
}

static SETS: SpinLock<IpcIds<SemSet>> = SpinLock::new(IpcIds::new());
/// Semaphores in all sets (SEM_INFO's semaem, bounded by semmns).
static USED_SEMS: AtomicU32 = AtomicU32::new(0);

fn set(id: i32) -> Result<Arc<SemSet>, Errno> {
    SETS.lock().get(id).cloned()
}

/// semget.
pub fn get(task: &Arc<Task>, key: i32, nsems: i32, flags: u32) -> Result<i32, Errno> {
    if nsems < 0 || nsems as u32 > limits::get(&SEMMSL) {
        return Err(Errno::EINVAL);
    }
    let mut ids = SETS.lock();
    if key != IPC_PRIVATE {
        if let Some((id, s)) = ids.find_key(key) {
            if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            if nsems as usize > s.nsems {
                return Err(Errno::EINVAL);
            }
            perm::check(task, &s.state.lock().perm, flags)?;
            return Ok(id);
        }
        if flags & IPC_CREAT == 0 {
            return Err(Errno::ENOENT);
        }
    }
    if nsems == 0 {
        return Err(Errno::EINVAL);
    }
    let n = nsems as usize;
    if USED_SEMS.load(Ordering::Relaxed) as u64 + n as u64 > u64::from(limits::get(&SEMMNS)) {
        return Err(Errno::ENOSPC);
    }
    let mut new_perm = perm::new_perm(task, key, flags);
    let id = ids.add(key, limits::get(&SEMMNI) as usize, |id| {
        new_perm.seq = (id >> 15) as u16;
        let mut values = Vec::new();
        let mut pids = Vec::new();
        values.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        pids.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
        values.resize(n, 0);
        pids.resize(n, 0);
        Arc::try_new(SemSet {
            id,
            nsems: n,
            state: SpinLock::new(SetState {
                perm: new_perm,
                values,
                pids,
                otime: 0,
                ctime: perm::now(),
                removed: false,
                pending: VecDeque::new(),
                undo: Vec::new(),
            }),
            sleepers: WaitQueue::new(),
        })
        .map_err(|_| Errno::ENOMEM)
    })?;
    USED_SEMS.fetch_add(n as u32, Ordering::Relaxed);
    Ok(id)
}

/// semop and semtimedop: `deadline` (monotonic ns) for semtimedop's
/// timeout. The caller has checked the count (EINVAL, E2BIG).
pub fn semop(task: &Arc<Task>, id: i32, ops: Vec<SemOp>, deadline: Option<u64>) -> Result<(), Errno> {
    debug_assert!(!ops.is_empty() && ops.len() <= limits::get(&SEMOPM) as usize);
    let s = set(id)?;
    let pid = task.process.pid;
    let max = ops.iter().map(|o| usize::from(o.num)).max().unwrap_or(0);
    let alters = ops.iter().any(|o| o.alters());
    let undo = ops.iter().any(|o| o.flg & kiln_ipc::semop::SEM_UNDO != 0);
    let pending = {
        let mut st = s.state.lock();
        if max >= s.nsems {
            return Err(Errno::EFBIG);
        }
        perm::check(task, &st.perm, if alters { perm::WRITE } else { perm::READ })?;
        if st.removed {
            return Err(Errno::EIDRM);
        }
        if undo && st.undo_index(pid).is_none() {
            let mut adj = Vec::new();
            adj.try_reserve_exact(s.nsems).map_err(|_| Errno::ENOMEM)?;
            adj.resize(s.nsems, 0);
            st.undo.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            st.undo.push((pid, adj));
        }
        match st.try_ops(pid, &ops, undo) {
            Ok(()) => {
                let woke = alters && st.update_queue();
                drop(st);
                if woke {
                    s.sleepers.wake_all();
                }
                return Ok(());
            }
            Err(SemopError::Range) => return Err(Errno::ERANGE),
            Err(SemopError::Again { .. }) => return Err(Errno::EAGAIN),
            Err(SemopError::WouldBlock { op }) => {
                let p = Arc::try_new(Pending {
                    pid,
                    ops,
                    undo,
                    blocking: AtomicUsize::new(op),
                    status: AtomicU8::new(PENDING),
                })
                .map_err(|_| Errno::ENOMEM)?;
                st.pending.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                st.pending.push_back(p.clone());
                p
            }
        }
    };
    let waited = s.sleepers.wait_until_interruptible(deadline, || pending.status.load(Ordering::Acquire) != PENDING);
    let status = {
        let mut st = s.state.lock();
        let status = pending.status.load(Ordering::Acquire);
        if status == PENDING {
            st.pending.retain(|p| !Arc::ptr_eq(p, &pending));
        }
        status
    };
    match status {
        DONE => Ok(()),
        RANGE => Err(Errno::ERANGE),
        AGAIN => Err(Errno::EAGAIN),
        REMOVED => Err(Errno::EIDRM),
        // semop is never restarted; a timeout is EAGAIN.
        _ => Err(match waited {
            Err(Interrupted::TimedOut) => Errno::EAGAIN,
            _ => Errno::EINTR,
        }),
    }
}

/// A process exits: its SEM_UNDO adjustments are applied to every set.
pub fn exit_undo(pid: i32) {
    let sets: Vec<Arc<SemSet>> = SETS.lock().iter().map(|(_, s)| s.clone()).collect();
    for s in sets {
        let woke = {
            let mut st = s.state.lock();
            let Some(i) = st.undo_index(pid) else { continue };
            let (_, adj) = st.undo.swap_remove(i);
            for (n, a) in adj.iter().enumerate() {
                if *a != 0 {
                    st.values[n] = undo_value(st.values[n], *a);
                    st.pids[n] = pid;
                }
            }
            st.update_queue()
        };
        if woke {
            s.sleepers.wake_all();
        }
    }
}

/// What a semctl read returns: one number, or every value (GETALL).
pub enum CtlResult {
    Value(i32),
    All(Vec<u16>),
}

/// IPC_STAT (by id), SEM_STAT and SEM_STAT_ANY (by slot index).
pub fn stat(task: &Arc<Task>, id: i32, cmd: u32) -> Result<(i32, SemidDs), Errno> {
    let (ret, s) = SETS.lock().get_for_stat(id, cmd != IPC_STAT)?;
    let st = s.state.lock();
    if cmd != SEM_STAT_ANY {
        perm::check(task, &st.perm, perm::READ)?;
    }
    if st.removed {
        return Err(Errno::EIDRM);
    }
    Ok((ret, SemidDs { perm: st.perm, otime: st.otime, ctime: st.ctime, nsems: s.nsems as u64 }))
}

/// IPC_INFO and SEM_INFO.
pub fn info(cmd: u32) -> (i32, SemInfo) {
    let ids = SETS.lock();
    let mut info = SemInfo {
        semmni: limits::get(&SEMMNI) as i32,
        semmns: limits::get(&SEMMNS) as i32,
        semmsl: limits::get(&SEMMSL) as i32,
        semopm: limits::get(&SEMOPM) as i32,
        semvmx: SEMVMX,
        semmnu: SEMMNU as i32,
        semmap: SEMMAP as i32,
        semume: SEMUME as i32,
        semusz: SEMUSZ as i32,
        semaem: SEMAEM as i32,
    };
    if cmd == SEM_INFO {
        info.semusz = ids.in_use() as i32;
        info.semaem = USED_SEMS.load(Ordering::Relaxed) as i32;
    }
    (ids.max_index().max(0), info)
}

/// GETVAL, GETPID, GETNCNT, GETZCNT and GETALL.
pub fn read(task: &Arc<Task>, id: i32, num: i32, cmd: u32) -> Result<CtlResult, Errno> {
    let s = set(id)?;
    let st = s.state.lock();
    perm::check(task, &st.perm, perm::READ)?;
    if cmd == linux_abi::ipc::GETALL {
        if st.removed {
            return Err(Errno::EIDRM);
        }
        let mut all = Vec::new();
        all.try_reserve_exact(s.nsems).map_err(|_| Errno::ENOMEM)?;
        all.extend_from_slice(&st.values);
        return Ok(CtlResult::All(all));
    }
    if num < 0 || num as usize >= s.nsems {
        return Err(Errno::EINVAL);
    }
    if st.removed {
        return Err(Errno::EIDRM);
    }
    let n = num as usize;
    Ok(CtlResult::Value(match cmd {
        GETVAL => i32::from(st.values[n]),
        GETPID => st.pids[n],
        GETNCNT => st.count_waiting(n, false),
        GETZCNT => st.count_waiting(n, true),
        _ => return Err(Errno::EINVAL),
    }))
}

/// The number of semaphores in set `id` (SETALL reads that many values
/// from user memory before calling `set_all`).
pub fn nsems(task: &Arc<Task>, id: i32, requested: u32) -> Result<usize, Errno> {
    let s = set(id)?;
    perm::check(task, &s.state.lock().perm, requested)?;
    Ok(s.nsems)
}

/// SETVAL (`num`, `value`) or SETALL (`values`): clears the changed
/// semaphores' undo adjustments and completes what can proceed.
pub fn write(task: &Arc<Task>, id: i32, num: i32, value: Option<i32>, values: Option<&[u16]>) -> Result<(), Errno> {
    if let Some(v) = value {
        if !(0..=SEMVMX).contains(&v) {
            return Err(Errno::ERANGE);
        }
    }
    let s = set(id)?;
    let woke = {
        let mut st = s.state.lock();
        if value.is_some() && (num < 0 || num as usize >= s.nsems) {
            return Err(Errno::EINVAL);
        }
        perm::check(task, &st.perm, perm::WRITE)?;
        if let Some(all) = values {
            if all.iter().any(|&v| i32::from(v) > SEMVMX) {
                return Err(Errno::ERANGE);
            }
        }
        if st.removed {
            return Err(Errno::EIDRM);
        }
        let pid = task.process.pid;
        match (value, values) {
            (Some(v), _) => {
                let n = num as usize;
                st.values[n] = v as u16;
                st.pids[n] = pid;
                for (_, adj) in st.undo.iter_mut() {
                    adj[n] = 0;
                }
            }
            (None, Some(all)) => {
                for (n, v) in all.iter().take(s.nsems).enumerate() {
                    st.values[n] = *v;
                    st.pids[n] = pid;
                }
                for (_, adj) in st.undo.iter_mut() {
                    adj.fill(0);
                }
            }
            (None, None) => {}
        }
        st.ctime = perm::now();
        st.update_queue()
    };
    if woke {
        s.sleepers.wake_all();
    }
    Ok(())
}

/// IPC_SET.
pub fn set_perm(task: &Arc<Task>, id: i32, new: &SemidDs) -> Result<(), Errno> {
    let s = set(id)?;
    let mut guard = s.state.lock();
    let st = &mut *guard;
    perm::check_set(task, &st.perm, st.removed)?;
    perm::update(&mut st.perm, &mut st.ctime, &new.perm)
}

/// IPC_RMID: the set goes; its sleepers fail with EIDRM.
pub fn remove(task: &Arc<Task>, id: i32) -> Result<(), Errno> {
    let s = {
        let mut ids = SETS.lock();
        let s = ids.get(id)?.clone();
        perm::check_control(task, &s.state.lock().perm)?;
        ids.remove(id);
        s
    };
    {
        let mut st = s.state.lock();
        st.removed = true;
        for p in st.pending.drain(..) {
            p.status.store(REMOVED, Ordering::Release);
        }
        st.undo.clear();
    }
    USED_SEMS.fetch_sub(s.nsems as u32, Ordering::Relaxed);
    s.sleepers.wake_all();
    Ok(())
}

/// The text of /proc/sysvipc/sem.
pub fn proc_text() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::from(
        "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n",
    );
    let sets: Vec<Arc<SemSet>> = SETS.lock().iter().map(|(_, s)| s.clone()).collect();
    for set in sets {
        let st = set.state.lock();
        let p = &st.perm;
        let _ = writeln!(
            s,
            "{:10} {:10}  {:4o} {:10} {:5} {:5} {:5} {:5} {:10} {:10}",
            p.key, set.id, p.mode, set.nsems, p.uid, p.gid, p.cuid, p.cgid, st.otime, st.ctime
        );
    }
    s
}
