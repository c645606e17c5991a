//! POSIX message queues and the mqueue file system.
//!
//! Queues are files of one mqueue file system instance (Linux's
//! per-namespace mount): `mq_open` finds and creates them by name in its
//! root, and `mount -t mqueue` anywhere (by convention /dev/mqueue) shows
//! the same root, where `ls`, `cat` (the QSIZE/NOTIFY line), `rm` and
//! `open(O_CREAT)` work as on Linux. A queue keeps its messages by
//! priority, highest first and in arrival order within a priority, up to
//! `mq_maxmsg` messages of at most `mq_msgsize` bytes. Its attributes
//! follow /proc/sys/fs/mqueue and RLIMIT_MSGQUEUE (charged as Linux
//! charges them); descriptors are pollable (readable with a message,
//! writable with room). mq_notify registers one process for a signal (or
//! nothing, SIGEV_NONE) when a message arrives in an empty queue nobody
//! is waiting on; SIGEV_THREAD needs a netlink socket (glibc's helper
//! thread listens on one), so without one it fails as Linux does for a
//! descriptor that is not a netlink socket.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;
use linux_abi::ipc::{MqAttr, HARD_MSGMAX, HARD_MSGSIZEMAX, MQ_PRIO_MAX};
use linux_abi::layout::Siginfo;
use linux_abi::signal::{SIGEV_NONE, SIGEV_SIGNAL, SI_MESGQ};

use super::creds;
use super::limits::{self, MQ_MSGSIZE_DEFAULT, MQ_MSGSIZE_MAX, MQ_MSG_DEFAULT, MQ_MSG_MAX, MQ_QUEUES_MAX};
use crate::event::{Events, PollTable, Pollee};
use crate::fs::file::FileOps;
use crate::fs::inode::{DirEntry, FileType, FsStats, Inode, Metadata, Owner, S_IFDIR, S_IFMT, S_IFREG};
use crate::proc::Task;
use crate::sched::{Interrupted, WaitQueue};

/// statfs's f_type of the mqueue file system.
const MQUEUE_MAGIC: u64 = 0x1980_0202;
/// st_size of a queue file (Linux's FILENT_SIZE).
const FILENT_SIZE: u64 = 80;
/// What Linux charges per message against RLIMIT_MSGQUEUE besides its
/// bytes: a `struct msg_msg` (48 bytes) and, up to MQ_PRIO_MAX of them,
/// a priority tree node (48 bytes).
const MSG_OVERHEAD: u64 = 48;
const NODE_OVERHEAD: u64 = 48;

/// Queues in existence (queues_max bounds it) and bytes charged to
/// RLIMIT_MSGQUEUE (every process is root: one user).
static QUEUES: AtomicUsize = AtomicUsize::new(0);
static CHARGED: AtomicU64 = AtomicU64::new(0);
static NEXT_INO: AtomicU64 = AtomicU64::new(1);
static DEV: AtomicU32 = AtomicU32::new(0);

struct Message {
    prio: u32,
    data: Vec<u8>,
}

/// A registration for mq_notify.
#[derive(Clone, Copy)]
struct Notify {
    /// The registered process.
    pid: i32,
    kind: i32,
    signo: u32,
    value: u64,
}

struct QueueState {
    maxmsg: usize,
    msgsize: usize,
    messages: Vec<Message>,
    /// Bytes of message data queued (QSIZE).
    qsize: u64,
    notify: Option<Notify>,
    /// Receivers asleep on an empty queue: a message for them does not
    /// trigger the notification (Linux hands it to them directly).
    waiting_receivers: usize,
}

pub struct MessageQueue {
    state: SpinLock<QueueState>,
    /// Room appeared / a message arrived.
    senders: WaitQueue,
    receivers: WaitQueue,
    pollee: Pollee,
    /// Bytes charged to RLIMIT_MSGQUEUE, given back when the queue goes.
    charge: u64,
}

impl Drop for MessageQueue {
    fn drop(&mut self) {
        QUEUES.fetch_sub(1, Ordering::Relaxed);
        CHARGED.fetch_sub(self.charge, Ordering::Relaxed);
    }
}

impl MessageQueue {
    fn readiness(st: &QueueState) -> Events {
        let mut e = Events::EMPTY;
        if !st.messages.is_empty() {
            e |= Events::READABLE;
        }
        if st.messages.len() < st.maxmsg {
            e |= Events::WRITABLE;
        }
        e
    }

    fn changed(&self) {
        self.senders.wake_all();
        self.receivers.wake_all();
        self.pollee.notify(Events::EMPTY);
    }
}

/// A queue file of the mqueue file system.
pub struct MqInode {
    ino: u64,
    queue: Arc<MessageQueue>,
    meta: SpinLock<Meta>,
    me: Weak<MqInode>,
}

#[derive(Clone, Copy)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    atime: u64,
    mtime: u64,
    ctime: u64,
}

fn now_ns() -> u64 {
    crate::clock::realtime_ns()
}

fn dev() -> u64 {
    if DEV.load(Ordering::Relaxed) == 0 {
        let _ = DEV.compare_exchange(0, crate::fs::tmpfs::new_dev() as u32, Ordering::Relaxed, Ordering::Relaxed);
    }
    u64::from(DEV.load(Ordering::Relaxed))
}

impl MqInode {
    fn touch(&self, access: bool, modify: bool) {
        let t = now_ns();
        let mut m = self.meta.lock();
        if access {
            m.atime = t;
        }
        if modify {
            m.mtime = t;
            m.ctime = t;
        }
    }

    /// The QSIZE/NOTIFY line a read of the queue file shows.
    fn status_line(&self) -> String {
        let st = self.queue.state.lock();
        let (kind, signo, pid) = match st.notify {
            Some(n) => (n.kind, if n.kind == SIGEV_SIGNAL { n.signo } else { 0 }, n.pid),
            None => (0, 0, 0),
        };
        alloc::format!("QSIZE:{:<10} NOTIFY:{:<5} SIGNO:{:<5} NOTIFY_PID:{:<6}\n", st.qsize, kind, signo, pid)
    }
}

impl Inode for MqInode {
    fn metadata(&self) -> Metadata {
        let m = *self.meta.lock();
        Metadata {
            dev: dev(),
            ino: self.ino,
            mode: S_IFREG | m.mode,
            nlink: 1,
            uid: m.uid,
            gid: m.gid,
            size: FILENT_SIZE,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
            ..Metadata::default()
        }
    }

    fn fs_stats(&self) -> FsStats {
        FsStats { magic: MQUEUE_MAGIC, block_size: 4096, name_max: 255, ..FsStats::default() }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn set_mode(&self, mode: u32) -> Result<(), Errno> {
        let mut m = self.meta.lock();
        m.mode = mode & 0o7777;
        m.ctime = now_ns();
        Ok(())
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
        let mut m = self.meta.lock();
        if let Some(u) = uid {
            m.uid = u;
        }
        if let Some(g) = gid {
            m.gid = g;
        }
        m.ctime = now_ns();
        Ok(())
    }

    fn set_times(&self, atime: Option<u64>, mtime: Option<u64>) -> Result<(), Errno> {
        let mut m = self.meta.lock();
        if let Some(a) = atime {
            m.atime = a;
        }
        if let Some(t) = mtime {
            m.mtime = t;
        }
        m.ctime = now_ns();
        Ok(())
    }

    /// Queues come and go behind the dentry cache's back (mq_unlink).
    fn cacheable(&self) -> bool {
        false
    }

    fn open(&self, _flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        let inode = self.me.upgrade()?;
        Some(Arc::try_new(MqFile { inode }).map(|f| f as Arc<dyn FileOps>).map_err(|_| Errno::ENOMEM))
    }
}

/// An open queue: what mq_open returns and open(2) of a queue file gives.
pub struct MqFile {
    inode: Arc<MqInode>,
}

impl FileOps for MqFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        let line = self.inode.status_line();
        let bytes = line.as_bytes();
        let start = (offset as usize).min(bytes.len());
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        if n > 0 {
            self.inode.touch(true, false);
        }
        Ok(n)
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn inode(&self) -> Option<&Arc<dyn Inode>> {
        None
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.inode.queue.pollee);
        }
        MessageQueue::readiness(&self.inode.queue.state.lock())
    }

    fn mode(&self) -> u32 {
        self.inode.metadata().mode
    }

    fn size(&self) -> Option<u64> {
        Some(FILENT_SIZE)
    }

    fn ino(&self) -> Option<u64> {
        Some(self.inode.ino)
    }

    fn flush(&self) {
        // The registered process closing any descriptor of the queue ends
        // its registration (Linux's mqueue_flush_file).
        let Some(pid) = crate::proc::current_task().map(|t| t.process.pid) else { return };
        let mut st = self.inode.queue.state.lock();
        if st.notify.is_some_and(|n| n.pid == pid) {
            st.notify = None;
        }
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// The mqueue file system's root directory.
pub struct MqDir {
    entries: SpinLock<BTreeMap<String, Arc<MqInode>>>,
    meta: SpinLock<Meta>,
}

static ROOT: Once<Arc<MqDir>> = Once::new();

/// The one mqueue root (what every mount of it shows).
pub fn root() -> Arc<MqDir> {
    if ROOT.get().is_none() {
        let t = now_ns();
        ROOT.set(Arc::new(MqDir {
            entries: SpinLock::new(BTreeMap::new()),
            meta: SpinLock::new(Meta { mode: 0o1777, uid: 0, gid: 0, atime: t, mtime: t, ctime: t }),
        }));
    }
    ROOT.get().expect("set above").clone()
}

/// The root as a directory inode, for mount(2) of "mqueue".
pub fn root_inode() -> Result<Arc<dyn Inode>, Errno> {
    Ok(root())
}

/// Checks `attr` as Linux's mqueue_get_inode does and charges the queue
/// to RLIMIT_MSGQUEUE; returns (maxmsg, msgsize, charge).
fn admit(task: &Arc<Task>, attr: Option<&MqAttr>) -> Result<(usize, usize, u64), Errno> {
    let privileged = creds::capable(task, creds::CAP_SYS_RESOURCE);
    if QUEUES.load(Ordering::Relaxed) >= limits::get(&MQ_QUEUES_MAX) as usize && !privileged {
        return Err(Errno::ENOSPC);
    }
    let (maxmsg, msgsize) = match attr {
        Some(a) => (a.maxmsg, a.msgsize),
        None => (i64::from(limits::get(&MQ_MSG_DEFAULT)), i64::from(limits::get(&MQ_MSGSIZE_DEFAULT))),
    };
    if maxmsg <= 0 || msgsize <= 0 {
        return Err(Errno::EINVAL);
    }
    let (max_msgs, max_size) = if privileged {
        (i64::from(HARD_MSGMAX), i64::from(HARD_MSGSIZEMAX))
    } else {
        (i64::from(limits::get(&MQ_MSG_MAX)), i64::from(limits::get(&MQ_MSGSIZE_MAX)))
    };
    if maxmsg > max_msgs || msgsize > max_size {
        return Err(Errno::EINVAL);
    }
    let (maxmsg, msgsize) = (maxmsg as u64, msgsize as u64);
    let tree = maxmsg * MSG_OVERHEAD + maxmsg.min(u64::from(MQ_PRIO_MAX)) * NODE_OVERHEAD;
    let charge = maxmsg.checked_mul(msgsize).and_then(|b| b.checked_add(tree)).ok_or(Errno::EOVERFLOW)?;
    let limit = task.process.rlimits.lock()[linux_abi::consts::RLIMIT_MSGQUEUE as usize].0;
    let before = CHARGED.fetch_add(charge, Ordering::Relaxed);
    if before + charge > limit {
        CHARGED.fetch_sub(charge, Ordering::Relaxed);
        return Err(Errno::EMFILE);
    }
    Ok((maxmsg as usize, msgsize as usize, charge))
}

impl MqDir {
    /// Makes queue `name` (the caller holds no lock); EEXIST if it exists.
    fn make(&self, task: &Arc<Task>, name: &str, perm: u32, attr: Option<&MqAttr>) -> Result<Arc<MqInode>, Errno> {
        let (maxmsg, msgsize, charge) = admit(task, attr)?;
        QUEUES.fetch_add(1, Ordering::Relaxed);
        let queue = Arc::try_new(MessageQueue {
            state: SpinLock::new(QueueState {
                maxmsg,
                msgsize,
                messages: Vec::new(),
                qsize: 0,
                notify: None,
                waiting_receivers: 0,
            }),
            senders: WaitQueue::new(),
            receivers: WaitQueue::new(),
            pollee: Pollee::new(),
            charge,
        })
        .map_err(|_| {
            QUEUES.fetch_sub(1, Ordering::Relaxed);
            CHARGED.fetch_sub(charge, Ordering::Relaxed);
            Errno::ENOMEM
        })?;
        let t = now_ns();
        let meta =
            Meta { mode: perm & 0o7777, uid: creds::euid(task), gid: creds::egid(task), atime: t, mtime: t, ctime: t };
        let inode = Arc::new_cyclic(|me| MqInode {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            queue,
            meta: SpinLock::new(meta),
            me: me.clone(),
        });
        let mut entries = self.entries.lock();
        if entries.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        entries.insert(String::from(name), inode.clone());
        drop(entries);
        let mut m = self.meta.lock();
        m.mtime = t;
        m.ctime = t;
        Ok(inode)
    }

    fn find(&self, name: &str) -> Option<Arc<MqInode>> {
        self.entries.lock().get(name).cloned()
    }
}

impl Inode for MqDir {
    fn metadata(&self) -> Metadata {
        let m = *self.meta.lock();
        Metadata {
            dev: dev(),
            ino: 0x10_0000,
            mode: S_IFDIR | m.mode,
            nlink: 2,
            uid: m.uid,
            gid: m.gid,
            size: 0,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
            ..Metadata::default()
        }
    }

    fn fs_stats(&self) -> FsStats {
        FsStats { magic: MQUEUE_MAGIC, block_size: 4096, name_max: 255, ..FsStats::default() }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn set_mode(&self, mode: u32) -> Result<(), Errno> {
        self.meta.lock().mode = mode & 0o7777;
        Ok(())
    }

    fn lookup(&self, name: &str) -> Result<Arc<dyn Inode>, Errno> {
        if name.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        self.find(name).map(|i| i as Arc<dyn Inode>).ok_or(Errno::ENOENT)
    }

    /// open(O_CREAT) in a mounted mqueue makes a queue with the default
    /// attributes; nothing else can be made there (EPERM, as Linux's
    /// missing mkdir/mknod/symlink operations give).
    fn create(&self, name: &str, mode: u32, _rdev: u64, _owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        if mode & S_IFMT != S_IFREG {
            return Err(Errno::EPERM);
        }
        let task = crate::proc::current_task().ok_or(Errno::EPERM)?;
        Ok(self.make(&task, name, mode, None)? as Arc<dyn Inode>)
    }

    fn symlink(&self, _name: &str, _target: &str, _owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        Err(Errno::EPERM)
    }

    fn link(&self, _name: &str, _inode: &Arc<dyn Inode>) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn rename(&self, _old: &str, _new_dir: &Arc<dyn Inode>, _new: &str, _flags: u32) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn unlink(&self, name: &str) -> Result<(), Errno> {
        let gone = self.entries.lock().remove(name).ok_or(Errno::ENOENT)?;
        let t = now_ns();
        gone.meta.lock().ctime = t;
        let mut m = self.meta.lock();
        m.mtime = t;
        m.ctime = t;
        drop(m);
        // The queue lives on while descriptors hold it.
        drop(gone);
        Ok(())
    }

    fn rmdir(&self, _name: &str) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let entries = self.entries.lock();
        let mut out = Vec::new();
        out.try_reserve(entries.len()).map_err(|_| Errno::ENOMEM)?;
        for (name, inode) in entries.iter() {
            out.push(DirEntry { name: name.clone(), ino: inode.ino, kind: FileType::Regular });
        }
        Ok(out)
    }
}

/// A queue name as mq_open and mq_unlink take it (no leading slash:
/// the C library strips it): Linux's lookup_one_len rules.
fn check_name(name: &str) -> Result<(), Errno> {
    if name.is_empty() {
        return Err(Errno::ENOENT);
    }
    if name == "." || name == ".." || name.contains('/') {
        return Err(Errno::EACCES);
    }
    if name.len() > 255 {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

/// The dentry an mq_open'd descriptor hangs on: `/<name>` below the
/// (unmounted) mqueue root, as /proc/<pid>/fd shows it.
fn dentry_for(name: &str) -> Result<Arc<crate::fs::Dentry>, Errno> {
    static ROOT_DENTRY: Once<Arc<crate::fs::Dentry>> = Once::new();
    if ROOT_DENTRY.get().is_none() {
        ROOT_DENTRY.set(crate::fs::Dentry::new_root(root()));
    }
    ROOT_DENTRY.get().expect("set above").child(name)
}

/// mq_open: the open queue file `name`, created with `perm` and `attr`
/// under O_CREAT; the caller installs it (close-on-exec, as Linux does).
pub fn open(
    task: &Arc<Task>,
    name: &str,
    oflag: u32,
    perm: u32,
    attr: Option<&MqAttr>,
) -> Result<(Arc<dyn FileOps>, Arc<crate::fs::Dentry>), Errno> {
    use linux_abi::consts as c;
    check_name(name)?;
    let dir = root();
    let inode = match dir.find(name) {
        Some(inode) => {
            if oflag & (c::O_CREAT | c::O_EXCL) == c::O_CREAT | c::O_EXCL {
                return Err(Errno::EEXIST);
            }
            if oflag & 3 == 3 {
                return Err(Errno::EINVAL);
            }
            inode
        }
        None => {
            if oflag & c::O_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
            let umask = task.process.umask.load(Ordering::Relaxed);
            match dir.make(task, name, perm & !umask, attr) {
                Ok(inode) => inode,
                // Someone made it in between: open theirs.
                Err(Errno::EEXIST) if oflag & c::O_EXCL == 0 => dir.find(name).ok_or(Errno::ENOENT)?,
                Err(e) => return Err(e),
            }
        }
    };
    let ops: Arc<dyn FileOps> = Arc::try_new(MqFile { inode }).map_err(|_| Errno::ENOMEM)?;
    Ok((ops, dentry_for(name)?))
}

/// mq_unlink.
pub fn unlink(name: &str) -> Result<(), Errno> {
    check_name(name)?;
    root().unlink(name)
}

/// The queue behind an open file, if it is one (EBADF otherwise).
pub fn queue_of(ops: &Arc<dyn FileOps>) -> Result<Arc<MqInode>, Errno> {
    ops.as_any().and_then(|a| a.downcast_ref::<MqFile>()).map(|f| f.inode.clone()).ok_or(Errno::EBADF)
}

fn interrupted(e: Interrupted) -> Errno {
    match e {
        Interrupted::Signal => Errno::ERESTARTSYS,
        Interrupted::TimedOut => Errno::ETIMEDOUT,
    }
}

/// mq_timedsend's checks before the message is copied in: the message
/// size against the queue's (EMSGSIZE).
pub fn check_send_size(q: &MqInode, len: usize) -> Result<(), Errno> {
    if len > q.queue.state.lock().msgsize {
        return Err(Errno::EMSGSIZE);
    }
    Ok(())
}

/// mq_timedsend: waits for room (EAGAIN when `nonblock`, ETIMEDOUT at
/// `deadline`, monotonic ns) and queues `data` at `prio`.
pub fn send(
    task: &Arc<Task>,
    q: &MqInode,
    data: Vec<u8>,
    prio: u32,
    nonblock: bool,
    deadline: Option<u64>,
) -> Result<(), Errno> {
    let queue = &q.queue;
    let mut data = Some(data);
    loop {
        let notify = {
            let mut st = queue.state.lock();
            if st.messages.len() < st.maxmsg {
                st.messages.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                let msg = Message { prio, data: data.take().unwrap_or_default() };
                st.qsize += msg.data.len() as u64;
                let at = st.messages.iter().position(|m| m.prio < prio).unwrap_or(st.messages.len());
                st.messages.insert(at, msg);
                // The registration fires once, when the queue stops being
                // empty and no receiver is there to take the message.
                if st.messages.len() == 1 && st.waiting_receivers == 0 {
                    st.notify.take()
                } else {
                    None
                }
            } else if nonblock {
                return Err(Errno::EAGAIN);
            } else {
                drop(st);
                queue
                    .senders
                    .wait_until_interruptible(deadline, || {
                        let st = queue.state.lock();
                        st.messages.len() < st.maxmsg
                    })
                    .map_err(interrupted)?;
                continue;
            }
        };
        q.touch(true, true);
        queue.changed();
        if let Some(n) = notify {
            deliver(task, n);
        }
        return Ok(());
    }
}

/// Sends the registered process its notification.
fn deliver(sender: &Arc<Task>, n: Notify) {
    if n.kind != SIGEV_SIGNAL || n.signo == 0 {
        return;
    }
    if let Some(p) = crate::proc::find_process(n.pid) {
        let info = Siginfo::queue(n.signo, SI_MESGQ, sender.process.pid, creds::euid(sender), n.value);
        crate::proc::signal::send_to_process(&p, info);
    }
}

/// mq_timedreceive's size check: the buffer must hold the largest message.
pub fn check_receive_size(q: &MqInode, len: usize) -> Result<(), Errno> {
    if len < q.queue.state.lock().msgsize {
        return Err(Errno::EMSGSIZE);
    }
    Ok(())
}

/// mq_timedreceive: the oldest message of the highest priority, and its
/// priority.
pub fn receive(q: &MqInode, nonblock: bool, deadline: Option<u64>) -> Result<(Vec<u8>, u32), Errno> {
    let queue = &q.queue;
    loop {
        {
            let mut st = queue.state.lock();
            if !st.messages.is_empty() {
                let m = st.messages.remove(0);
                st.qsize -= m.data.len() as u64;
                drop(st);
                q.touch(true, true);
                queue.changed();
                return Ok((m.data, m.prio));
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            st.waiting_receivers += 1;
        }
        let waited = queue.receivers.wait_until_interruptible(deadline, || !queue.state.lock().messages.is_empty());
        queue.state.lock().waiting_receivers -= 1;
        waited.map_err(interrupted)?;
    }
}

/// What mq_notify asks for (already checked: SIGEV_NONE or SIGEV_SIGNAL
/// with a valid signal), or None to unregister.
pub struct NotifyRequest {
    pub kind: i32,
    pub signo: u32,
    pub value: u64,
}

/// mq_notify for process `pid`: EBUSY when another process is registered.
pub fn notify(q: &MqInode, pid: i32, request: Option<NotifyRequest>) -> Result<(), Errno> {
    {
        let mut st = q.queue.state.lock();
        match request {
            None => {
                if st.notify.is_some_and(|n| n.pid == pid) {
                    st.notify = None;
                }
            }
            Some(_) if st.notify.is_some() => return Err(Errno::EBUSY),
            Some(r) => {
                debug_assert!(r.kind == SIGEV_NONE || r.kind == SIGEV_SIGNAL);
                st.notify = Some(Notify { pid, kind: r.kind, signo: r.signo, value: r.value });
            }
        }
    }
    q.touch(true, false);
    q.meta.lock().ctime = now_ns();
    Ok(())
}

/// mq_getsetattr: the attributes (mq_flags from the description), and
/// the description's new O_NONBLOCK. Returns the old attributes.
pub fn attributes(q: &MqInode, nonblock: bool) -> MqAttr {
    let st = q.queue.state.lock();
    MqAttr {
        flags: if nonblock { i64::from(linux_abi::consts::O_NONBLOCK) } else { 0 },
        maxmsg: st.maxmsg as i64,
        msgsize: st.msgsize as i64,
        curmsgs: st.messages.len() as i64,
    }
}

/// Marks an mq_getsetattr change (atime and ctime, as Linux stamps them).
pub fn touch_attr(q: &MqInode) {
    let t = now_ns();
    let mut m = q.meta.lock();
    m.atime = t;
    m.ctime = t;
}
