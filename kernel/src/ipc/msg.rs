//! System V message queues: msgget, msgsnd, msgrcv and msgctl with
//! Linux's semantics and limits.
//!
//! A queue holds typed messages in arrival order, bounded by its byte
//! limit `msg_qbytes` (which also bounds the number of messages). A
//! sender that does not fit waits (or fails with EAGAIN under
//! IPC_NOWAIT); a receiver picks a message by type (`msg_select`) and
//! waits for one (ENOMSG under IPC_NOWAIT). Removing the queue wakes
//! every waiter with EIDRM; a signal ends a wait with ERESTARTNOHAND,
//! as on Linux. The syscall layer copies messages in and out; nothing
//! here touches user memory.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::SpinLock;
use kiln_ipc::msg_select::Search;
use linux_abi::errno::Errno;
use linux_abi::ipc::{
    IpcPerm, MsgInfo, MsqidDs, IPC_CREAT, IPC_EXCL, IPC_INFO, IPC_NOWAIT, IPC_PRIVATE, MSGMAP, MSGPOOL, MSGSEG, MSGSSZ,
    MSGTQL, MSG_COPY, MSG_EXCEPT, MSG_INFO, MSG_NOERROR, MSG_STAT_ANY,
};

use super::ids::IpcIds;
use super::limits::{self, MSGMAX, MSGMNB, MSGMNI};
use super::perm;
use crate::proc::Task;
use crate::sched::{Interrupted, WaitQueue};

struct Message {
    mtype: i64,
    text: Vec<u8>,
}

struct QueueState {
    perm: IpcPerm,
    messages: VecDeque<Message>,
    cbytes: u64,
    qbytes: u64,
    stime: i64,
    rtime: i64,
    ctime: i64,
    lspid: i32,
    lrpid: i32,
    removed: bool,
}

pub struct MsgQueue {
    id: i32,
    state: SpinLock<QueueState>,
    /// Woken when a message arrives, the queue changes hands or goes.
    receivers: WaitQueue,
    /// Woken when room appears, the limit changes or the queue goes.
    senders: WaitQueue,
}

impl MsgQueue {
    fn wake_all(&self) {
        self.receivers.wake_all();
        self.senders.wake_all();
    }
}

static QUEUES: SpinLock<IpcIds<MsgQueue>> = SpinLock::new(IpcIds::new());
/// Messages and bytes queued in all queues (MSG_INFO).
static MSG_HDRS: AtomicU64 = AtomicU64::new(0);
static MSG_BYTES: AtomicU64 = AtomicU64::new(0);

fn queue(id: i32) -> Result<Arc<MsgQueue>, Errno> {
    QUEUES.lock().get(id).cloned()
}

/// msgget.
pub fn get(task: &Arc<Task>, key: i32, flags: u32) -> Result<i32, Errno> {
    let mut ids = QUEUES.lock();
    if key != IPC_PRIVATE {
        if let Some((id, q)) = ids.find_key(key) {
            if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            perm::check(task, &q.state.lock().perm, flags)?;
            return Ok(id);
        }
        if flags & IPC_CREAT == 0 {
            return Err(Errno::ENOENT);
        }
    }
    let pid = task.process.pid;
    let _ = pid;
    let mut new_perm = perm::new_perm(task, key, flags);
    let qbytes = u64::from(limits::get(&MSGMNB));
    ids.add(key, limits::get(&MSGMNI) as usize, |id| {
        new_perm.seq = (id >> 15) as u16;
        Arc::try_new(MsgQueue {
            id,
            state: SpinLock::new(QueueState {
                perm: new_perm,
                messages: VecDeque::new(),
                cbytes: 0,
                qbytes,
                stime: 0,
                rtime: 0,
                ctime: perm::now(),
                lspid: 0,
                lrpid: 0,
                removed: false,
            }),
            receivers: WaitQueue::new(),
            senders: WaitQueue::new(),
        })
        .map_err(|_| Errno::ENOMEM)
    })
}

fn interrupted(e: Interrupted) -> Errno {
    match e {
        // msgsnd and msgrcv restart only when no handler ran.
        Interrupted::Signal => Errno::ERESTARTNOHAND,
        Interrupted::TimedOut => Errno::EAGAIN,
    }
}

/// msgsnd, with the message already copied in; the caller has checked
/// its size against msgmax and its type.
pub fn send(task: &Arc<Task>, id: i32, mtype: i64, text: Vec<u8>, flags: u32) -> Result<(), Errno> {
    let q = queue(id)?;
    let size = text.len() as u64;
    let mut text = Some(text);
    loop {
        {
            let mut st = q.state.lock();
            perm::check(task, &st.perm, perm::WRITE)?;
            if st.removed {
                return Err(Errno::EIDRM);
            }
            let fits = st.cbytes + size <= st.qbytes && (st.messages.len() as u64) < st.qbytes;
            if fits {
                st.messages.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                st.lspid = task.process.pid;
                st.stime = perm::now();
                st.messages.push_back(Message { mtype, text: text.take().unwrap_or_default() });
                st.cbytes += size;
                drop(st);
                MSG_HDRS.fetch_add(1, Ordering::Relaxed);
                MSG_BYTES.fetch_add(size, Ordering::Relaxed);
                q.receivers.wake_all();
                return Ok(());
            }
            if flags & IPC_NOWAIT != 0 {
                return Err(Errno::EAGAIN);
            }
        }
        q.senders
            .wait_until_interruptible(None, || {
                let st = q.state.lock();
                st.removed || (st.cbytes + size <= st.qbytes && (st.messages.len() as u64) < st.qbytes)
            })
            .map_err(interrupted)?;
    }
}

/// msgrcv: the message `msgtyp` and the flags pick, at most `bufsz`
/// bytes of its text (more is E2BIG unless MSG_NOERROR truncates).
/// MSG_COPY leaves it in the queue.
pub fn receive(task: &Arc<Task>, id: i32, bufsz: usize, msgtyp: i64, flags: u32) -> Result<(i64, Vec<u8>), Errno> {
    let copy = flags & MSG_COPY != 0;
    if copy && (flags & MSG_EXCEPT != 0 || flags & IPC_NOWAIT == 0) {
        return Err(Errno::EINVAL);
    }
    let search = Search::new(msgtyp, flags & MSG_EXCEPT != 0, copy);
    let q = queue(id)?;
    loop {
        {
            let mut st = q.state.lock();
            perm::check(task, &st.perm, perm::READ)?;
            if st.removed {
                return Err(Errno::EIDRM);
            }
            if let Some(i) = search.find(st.messages.iter().map(|m| m.mtype)) {
                let len = st.messages[i].text.len();
                if bufsz < len && flags & MSG_NOERROR == 0 {
                    return Err(Errno::E2BIG);
                }
                if copy {
                    let m = &st.messages[i];
                    let mut text = Vec::new();
                    text.try_reserve_exact(len.min(bufsz)).map_err(|_| Errno::ENOMEM)?;
                    text.extend_from_slice(&m.text[..len.min(bufsz)]);
                    return Ok((m.mtype, text));
                }
                let Some(mut m) = st.messages.remove(i) else { return Err(Errno::ENOMSG) };
                st.cbytes -= len as u64;
                st.rtime = perm::now();
                st.lrpid = task.process.pid;
                drop(st);
                MSG_HDRS.fetch_sub(1, Ordering::Relaxed);
                MSG_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
                q.senders.wake_all();
                m.text.truncate(bufsz);
                return Ok((m.mtype, m.text));
            }
            if flags & IPC_NOWAIT != 0 {
                return Err(Errno::ENOMSG);
            }
        }
        q.receivers
            .wait_until_interruptible(None, || {
                let st = q.state.lock();
                st.removed || search.find(st.messages.iter().map(|m| m.mtype)).is_some()
            })
            .map_err(interrupted)?;
    }
}

fn stat_of(st: &QueueState) -> MsqidDs {
    MsqidDs {
        perm: st.perm,
        stime: st.stime,
        rtime: st.rtime,
        ctime: st.ctime,
        cbytes: st.cbytes,
        qnum: st.messages.len() as u64,
        qbytes: st.qbytes,
        lspid: st.lspid,
        lrpid: st.lrpid,
    }
}

/// IPC_STAT (by id, returns 0), MSG_STAT and MSG_STAT_ANY (by slot
/// index, return the id).
pub fn stat(task: &Arc<Task>, id: i32, cmd: u32) -> Result<(i32, MsqidDs), Errno> {
    let (ret, q) = QUEUES.lock().get_for_stat(id, cmd != linux_abi::ipc::IPC_STAT)?;
    let st = q.state.lock();
    if cmd != MSG_STAT_ANY {
        perm::check(task, &st.perm, perm::READ)?;
    }
    if st.removed {
        return Err(Errno::EIDRM);
    }
    Ok((ret, stat_of(&st)))
}

/// IPC_INFO and MSG_INFO: the limits (and, for MSG_INFO, the use), and
/// the highest slot in use.
pub fn info(cmd: u32) -> (i32, MsgInfo) {
    let ids = QUEUES.lock();
    let mut info = MsgInfo {
        msgmax: limits::get(&MSGMAX) as i32,
        msgmnb: limits::get(&MSGMNB) as i32,
        msgmni: limits::get(&MSGMNI) as i32,
        msgssz: MSGSSZ as i32,
        msgseg: MSGSEG,
        msgpool: MSGPOOL as i32,
        msgmap: MSGMAP as i32,
        msgtql: MSGTQL as i32,
    };
    if cmd == MSG_INFO {
        info.msgpool = ids.in_use() as i32;
        info.msgmap = MSG_HDRS.load(Ordering::Relaxed) as i32;
        info.msgtql = MSG_BYTES.load(Ordering::Relaxed) as i32;
    }
    debug_assert!(cmd == IPC_INFO || cmd == MSG_INFO);
    (ids.max_index().max(0), info)
}

/// IPC_SET: new owner, mode and byte limit (past msgmnb needs
/// CAP_SYS_RESOURCE).
pub fn set(task: &Arc<Task>, id: i32, new: &MsqidDs) -> Result<(), Errno> {
    let q = queue(id)?;
    {
        let mut guard = q.state.lock();
        let st = &mut *guard;
        perm::check_set(task, &st.perm, st.removed)?;
        if new.qbytes > u64::from(limits::get(&MSGMNB)) && !super::creds::capable(task, super::creds::CAP_SYS_RESOURCE)
        {
            return Err(Errno::EPERM);
        }
        perm::update(&mut st.perm, &mut st.ctime, &new.perm)?;
        st.qbytes = new.qbytes;
    }
    // Senders may fit now; receivers look at their permission again.
    q.wake_all();
    Ok(())
}

/// IPC_RMID: the queue goes, its waiters fail with EIDRM.
pub fn remove(task: &Arc<Task>, id: i32) -> Result<(), Errno> {
    let q = {
        let mut ids = QUEUES.lock();
        let q = ids.get(id)?.clone();
        perm::check_control(task, &q.state.lock().perm)?;
        ids.remove(id);
        q
    };
    let gone = {
        let mut st = q.state.lock();
        st.removed = true;
        st.cbytes = 0;
        core::mem::take(&mut st.messages)
    };
    MSG_HDRS.fetch_sub(gone.len() as u64, Ordering::Relaxed);
    MSG_BYTES.fetch_sub(gone.iter().map(|m| m.text.len() as u64).sum(), Ordering::Relaxed);
    q.wake_all();
    Ok(())
}

/// The text of /proc/sysvipc/msg.
pub fn proc_text() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::from(
        "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n",
    );
    let queues: Vec<Arc<MsgQueue>> = QUEUES.lock().iter().map(|(_, q)| q.clone()).collect();
    for q in queues {
        let st = q.state.lock();
        let p = &st.perm;
        let _ = writeln!(
            s,
            "{:10} {:10}  {:4o}  {:10} {:10} {:5} {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10}",
            p.key,
            q.id,
            p.mode,
            st.cbytes,
            st.messages.len(),
            st.lspid,
            st.lrpid,
            p.uid,
            p.gid,
            p.cuid,
            p.cgid,
            st.stime,
            st.rtime,
            st.ctime
        );
    }
    s
}
