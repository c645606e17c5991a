//! Advisory file locks: POSIX record locks and open-file-description
//! (OFD) locks (fcntl `F_SETLK` family), BSD `flock` locks, and the
//! shared state leases (`lease.rs`) keep beside them.
//!
//! Locks belong to the file, not to a descriptor: every lock of an inode
//! sits in one table keyed by its device and inode number. A POSIX lock
//! is owned by a descriptor table (what Linux calls `current->files`):
//! closing *any* descriptor of the file through that table drops all its
//! POSIX locks on the file, exit closes them all, and a fork's child has
//! a table of its own and inherits none. An OFD lock and a flock are owned
//! by an open file description and go when its last descriptor does.
//! POSIX and OFD locks conflict with each other (different owners);
//! flocks live in a separate table and never conflict with them, as on
//! Linux.
//!
//! One spin lock guards every table, and a waiter sleeps on one wait
//! queue that each change wakes, then looks again: lock traffic is rare,
//! and the simplicity keeps the deadlock detector (which follows "owner A
//! waits for a lock of owner B" chains across inodes) exact. Sleeps are
//! interruptible (ERESTARTSYS, so `F_SETLKW` gives EINTR to a handler
//! without SA_RESTART).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::SpinLock;
use kiln_ipc::range_lock::{LockKind, LockTable, RangeLock, OFFSET_MAX};
use linux_abi::errno::Errno;

use super::file::OpenFile;
use super::lease::Lease;
use crate::sched::{Interrupted, WaitQueue};

/// Who owns a byte-range lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A POSIX lock: the descriptor table's lock-owner id.
    Posix(u64),
    /// An OFD lock: the open file description's id.
    Ofd(usize),
}

/// The identity of an open file description while it is alive.
pub fn description_id(f: &OpenFile) -> usize {
    f as *const OpenFile as usize
}

/// `OpenFile::lock_use` bits: the description may own locks of these
/// kinds, so dropping it must look for them.
pub const USES_OFD: u8 = 1;
pub const USES_FLOCK: u8 = 2;
pub const USES_LEASE: u8 = 4;
/// Not a lock: the description has signal-driven I/O on (`fasync`).
pub const USES_ASYNC: u8 = 8;

/// A flock held through one open file description.
pub(super) struct FlockEntry {
    pub file: usize,
    pub pid: i32,
    pub kind: LockKind,
}

/// The locks of one inode.
pub(super) struct InodeLocks {
    pub dev: u64,
    pub ino: u64,
    pub records: LockTable<Owner>,
    pub flocks: Vec<FlockEntry>,
    pub leases: Vec<Lease>,
}

impl InodeLocks {
    fn is_empty(&self) -> bool {
        self.records.is_empty() && self.flocks.is_empty() && self.leases.is_empty()
    }
}

/// A POSIX lock request asleep on a conflict, for the deadlock detector
/// and /proc/locks.
struct Blocked {
    owner: Owner,
    pid: i32,
    key: (u64, u64),
    kind: LockKind,
    start: u64,
    end: u64,
    /// The owner of the lock it waits for.
    blocker: Owner,
}

pub(super) struct LockState {
    pub inodes: Vec<InodeLocks>,
    blocked: Vec<Blocked>,
}

impl LockState {
    pub fn find(&self, key: (u64, u64)) -> Option<&InodeLocks> {
        self.inodes.iter().find(|i| (i.dev, i.ino) == key)
    }

    pub fn find_mut(&mut self, key: (u64, u64)) -> Option<&mut InodeLocks> {
        self.inodes.iter_mut().find(|i| (i.dev, i.ino) == key)
    }

    /// The inode's entry, made on first use.
    pub fn entry(&mut self, key: (u64, u64)) -> Result<&mut InodeLocks, Errno> {
        if let Some(i) = self.inodes.iter().position(|i| (i.dev, i.ino) == key) {
            return Ok(&mut self.inodes[i]);
        }
        self.inodes.try_reserve(1).map_err(|_| Errno::ENOLCK)?;
        self.inodes.push(InodeLocks {
            dev: key.0,
            ino: key.1,
            records: LockTable::new(),
            flocks: Vec::new(),
            leases: Vec::new(),
        });
        Ok(self.inodes.last_mut().expect("just pushed"))
    }

    /// Forgets inodes left without locks.
    pub fn prune(&mut self) {
        self.inodes.retain(|i| !i.is_empty());
    }
}

pub(super) static STATE: SpinLock<LockState> = SpinLock::new(LockState { inodes: Vec::new(), blocked: Vec::new() });
/// Woken at every unlock, downgrade or lease change; waiters look again.
pub(super) static CHANGED: WaitQueue = WaitQueue::new();
pub(super) static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Something was released: sleepers look again.
pub(super) fn changed() {
    GENERATION.fetch_add(1, Ordering::Release);
    CHANGED.wake_all();
}

/// Sleeps until the lock tables change after `seen` (a `GENERATION`
/// value read under the state lock), `deadline` passes, or a signal comes.
pub(super) fn wait_for_change(seen: u64, deadline: Option<u64>) -> Result<(), Interrupted> {
    CHANGED.wait_until_interruptible(deadline, || GENERATION.load(Ordering::Acquire) != seen)
}

/// The (device, inode number) a file's locks hang on: the inode the file
/// was opened through (device nodes and FIFOs lock their node), else the
/// file's own inode, else a pipe's number.
pub fn lock_key(f: &OpenFile) -> (u64, u64) {
    if let Some(d) = &f.dentry {
        let m = d.inode().metadata();
        return (m.dev, m.ino);
    }
    if let Some(i) = f.ops.inode() {
        let m = i.metadata();
        return (m.dev, m.ino);
    }
    // Pipes from pipe(2) live on Linux's pipefs.
    const PIPEFS_DEV: u64 = 0xd;
    (PIPEFS_DEV, f.ops.ino().unwrap_or(Arc::as_ptr(&f.ops) as *const () as usize as u64))
}

/// The lock key of an inode (see `lock_key`).
pub fn inode_key(inode: &dyn super::Inode) -> (u64, u64) {
    let m = inode.metadata();
    (m.dev, m.ino)
}

/// The size `SEEK_END` counts from for a lock request.
fn file_size(f: &OpenFile) -> u64 {
    match &f.dentry {
        Some(d) => d.inode().metadata().size,
        None => f.ops.size().unwrap_or(0),
    }
}

/// A `struct flock` request turned into a byte range, with Linux's checks
/// in Linux's order (the type is checked last).
pub struct Request {
    pub kind: Option<LockKind>,
    pub start: u64,
    pub end: u64,
}

/// `flock_to_posix_lock`: `l_whence`, `l_start` and `l_len` (0: to the end
/// of the file; negative: the bytes before `l_start`) into a range.
pub fn request(f: &OpenFile, l_type: i16, whence: i16, l_start: i64, l_len: i64) -> Result<Request, Errno> {
    use linux_abi::consts as c;
    let max = OFFSET_MAX as i64;
    let base: i64 = match whence as u32 {
        c::SEEK_SET => 0,
        c::SEEK_CUR => *f.offset.lock() as i64,
        c::SEEK_END => file_size(f) as i64,
        _ => return Err(Errno::EINVAL),
    };
    if l_start > max - base {
        return Err(Errno::EOVERFLOW);
    }
    let mut start = base + l_start;
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    let end;
    if l_len > 0 {
        if l_len - 1 > max - start {
            return Err(Errno::EOVERFLOW);
        }
        end = start + (l_len - 1);
    } else if l_len < 0 {
        if start + l_len < 0 {
            return Err(Errno::EINVAL);
        }
        end = start - 1;
        start += l_len;
    } else {
        end = max;
    }
    let kind = match l_type as u32 {
        c::F_RDLCK => Some(LockKind::Read),
        c::F_WRLCK => Some(LockKind::Write),
        c::F_UNLCK => None,
        _ => return Err(Errno::EINVAL),
    };
    Ok(Request { kind, start: start as u64, end: end as u64 })
}

/// What `F_GETLK` reports: the conflicting lock, or none.
pub struct Conflict {
    pub kind: LockKind,
    pub start: u64,
    pub end: u64,
    /// -1 for an OFD lock, as Linux reports.
    pub pid: i32,
}

/// `F_GETLK`/`F_OFD_GETLK`: the first lock that would block `req`.
pub fn test(f: &OpenFile, owner: Owner, kind: LockKind, start: u64, end: u64) -> Option<Conflict> {
    let key = lock_key(f);
    let st = STATE.lock();
    let c = st.find(key)?.records.conflict(owner, kind, start, end)?;
    Some(Conflict {
        kind: c.kind,
        start: c.start,
        end: c.end,
        pid: if matches!(c.owner, Owner::Ofd(_)) { -1 } else { c.pid },
    })
}

/// Linux's MAX_DEADLK_ITERATIONS.
const MAX_DEADLOCK_STEPS: usize = 10;

/// Whether `caller` (a POSIX owner) waiting for a lock of `holder` would
/// close a cycle: `holder` waits for a lock of someone who waits ... for a
/// lock of `caller`.
fn would_deadlock(st: &LockState, caller: Owner, holder: Owner) -> bool {
    let mut next = holder;
    for _ in 0..=MAX_DEADLOCK_STEPS + 1 {
        let Some(b) = st.blocked.iter().find(|b| b.owner == next) else {
            return false;
        };
        if b.blocker == caller {
            return true;
        }
        next = b.blocker;
    }
    false
}

/// `F_SETLK`/`F_SETLKW` and their OFD forms: applies `req` for `owner`,
/// waiting for conflicting locks to go when `wait` is set.
pub fn set(f: &OpenFile, owner: Owner, pid: i32, req: &Request, wait: bool) -> Result<(), Errno> {
    let key = lock_key(f);
    let mut registered = false;
    let result = loop {
        let mut st = STATE.lock();
        let Some(kind) = req.kind else {
            if let Some(i) = st.find_mut(key) {
                let r = i.records.set(owner, pid, None, req.start, req.end).map_err(|_| Errno::ENOLCK);
                st.prune();
                drop(st);
                changed();
                break r;
            }
            break Ok(());
        };
        let entry = match st.entry(key) {
            Ok(e) => e,
            Err(e) => break Err(e),
        };
        let holder = entry.records.conflict(owner, kind, req.start, req.end).map(|l| l.owner);
        let Some(holder) = holder else {
            let r = entry.records.set(owner, pid, Some(kind), req.start, req.end).map_err(|_| Errno::ENOLCK);
            if registered {
                st.blocked.retain(|b| b.owner != owner || b.key != key);
            }
            st.prune();
            drop(st);
            // Taking a lock may also downgrade (write to read) or split
            // one of the owner's own, freeing bytes for others.
            changed();
            break r;
        };
        if !wait {
            st.prune();
            break Err(Errno::EAGAIN);
        }
        if let Owner::Posix(_) = owner {
            if would_deadlock(&st, owner, holder) {
                st.blocked.retain(|b| b.owner != owner || b.key != key);
                st.prune();
                break Err(Errno::EDEADLK);
            }
            match st.blocked.iter_mut().find(|b| b.owner == owner && b.key == key) {
                Some(b) => b.blocker = holder,
                None => {
                    if st.blocked.try_reserve(1).is_err() {
                        break Err(Errno::ENOLCK);
                    }
                    st.blocked.push(Blocked { owner, pid, key, kind, start: req.start, end: req.end, blocker: holder });
                    registered = true;
                }
            }
        }
        let seen = GENERATION.load(Ordering::Acquire);
        drop(st);
        if wait_for_change(seen, None).is_err() {
            break Err(Errno::ERESTARTSYS);
        }
    };
    if registered && result.is_err() {
        let mut st = STATE.lock();
        st.blocked.retain(|b| b.owner != owner || b.key != key);
        st.prune();
    }
    result
}

/// A descriptor of `f` was closed through the descriptor table whose
/// lock-owner id is `table`: its POSIX locks on the file go (POSIX's
/// "any close releases the process's locks").
pub fn descriptor_closed(table: u64, f: &OpenFile) {
    let key = lock_key(f);
    let released = {
        let mut st = STATE.lock();
        let released = st.find_mut(key).is_some_and(|i| i.records.remove_owner(Owner::Posix(table)));
        if released {
            st.prune();
        }
        released
    };
    if released {
        changed();
    }
}

/// The last descriptor of an open file description is gone: its OFD
/// locks, flocks and leases go with it.
pub fn description_closed(f: &OpenFile) {
    let id = description_id(f);
    let key = lock_key(f);
    {
        let mut st = STATE.lock();
        if let Some(i) = st.find_mut(key) {
            i.records.remove_owner(Owner::Ofd(id));
            i.flocks.retain(|l| l.file != id);
            i.leases.retain(|l| l.file != id);
        }
        st.prune();
    }
    changed();
}

/// flock(2) for the open file description `f`: `kind` None unlocks.
/// Converting a held lock drops it first, as on Linux, so a conversion
/// that has to wait holds nothing meanwhile.
pub fn flock(f: &OpenFile, pid: i32, kind: Option<LockKind>, wait: bool) -> Result<(), Errno> {
    let key = lock_key(f);
    let id = description_id(f);
    loop {
        let mut st = STATE.lock();
        let entry = st.entry(key)?;
        let mine = entry.flocks.iter().position(|l| l.file == id);
        let mut released = false;
        if let Some(i) = mine {
            if Some(entry.flocks[i].kind) == kind {
                return Ok(());
            }
            entry.flocks.remove(i);
            released = true;
        }
        let Some(kind) = kind else {
            st.prune();
            drop(st);
            if released {
                changed();
            }
            return Ok(());
        };
        let conflict =
            entry.flocks.iter().any(|l| l.file != id && (kind == LockKind::Write || l.kind == LockKind::Write));
        if !conflict {
            entry.flocks.try_reserve(1).map_err(|_| Errno::ENOLCK)?;
            entry.flocks.push(FlockEntry { file: id, pid, kind });
            drop(st);
            if released {
                changed();
            }
            return Ok(());
        }
        if !wait {
            st.prune();
            drop(st);
            if released {
                changed();
            }
            return Err(Errno::EAGAIN);
        }
        let seen = GENERATION.load(Ordering::Acquire);
        drop(st);
        if released {
            changed();
        }
        if wait_for_change(seen, None).is_err() {
            return Err(Errno::ERESTARTSYS);
        }
    }
}

/// `st_dev` as /proc/locks prints it: Linux's major:minor of the huge
/// device-number encoding.
fn major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

fn kind_name(k: Option<LockKind>) -> &'static str {
    match k {
        Some(LockKind::Write) => "WRITE",
        Some(LockKind::Read) => "READ",
        None => "UNLCK",
    }
}

fn range_text(l: &RangeLock<Owner>) -> String {
    if l.end == OFFSET_MAX {
        alloc::format!("{} EOF", l.start)
    } else {
        alloc::format!("{} {}", l.start, l.end)
    }
}

/// The text of /proc/locks, in Linux's format: one numbered line per
/// lock, and `N: ->` lines for the POSIX requests waiting behind lock N.
pub fn proc_locks() -> String {
    let mut s = String::new();
    let st = STATE.lock();
    let mut n = 0;
    for i in &st.inodes {
        let (major, minor) = major_minor(i.dev);
        let where_ = alloc::format!("{major:02x}:{minor:02x}:{}", i.ino);
        for l in i.records.iter() {
            n += 1;
            let (class, pid) = match l.owner {
                Owner::Posix(_) => ("POSIX ", l.pid),
                Owner::Ofd(_) => ("OFDLCK", -1),
            };
            let _ = writeln!(s, "{n}: {class} ADVISORY  {} {pid} {where_} {}", kind_name(Some(l.kind)), range_text(l));
            for b in st.blocked.iter().filter(|b| b.key == (i.dev, i.ino) && b.blocker == l.owner) {
                let r = RangeLock { owner: b.owner, pid: b.pid, kind: b.kind, start: b.start, end: b.end };
                let _ = writeln!(
                    s,
                    "{n}: -> POSIX  ADVISORY  {} {} {where_} {}",
                    kind_name(Some(b.kind)),
                    b.pid,
                    range_text(&r)
                );
            }
        }
        for l in &i.flocks {
            n += 1;
            let _ = writeln!(s, "{n}: FLOCK  ADVISORY  {} {} {where_} 0 EOF", kind_name(Some(l.kind)), l.pid);
        }
        for l in &i.leases {
            n += 1;
            let _ = writeln!(
                s,
                "{n}: LEASE  {}{} {} {where_} 0 EOF",
                if l.breaking.is_some() { "BREAKING  " } else { "ACTIVE    " },
                kind_name(l.target()),
                l.pid
            );
        }
    }
    s
}
