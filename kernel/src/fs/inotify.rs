//! inotify instances: watches (a watch descriptor per inode, with an
//! event mask) and a queue of events read as `struct inotify_event`
//! records. `fs::notify` delivers the events; this keeps Linux's rules
//! for them: an event identical to the last queued one is merged into
//! it, at most max_queued_events wait (then one IN_Q_OVERFLOW), a
//! one-shot watch goes after its first event, and a watch that goes for
//! any reason leaves an IN_IGNORED behind. Each event queued (not one
//! merged or dropped) wakes readers and pollers and, with O_ASYNC, sends
//! the owner SIGIO with POLL_IN, as Linux's fsnotify_insert_event.
//!
//! The limits are Linux's, in /proc/sys/fs/inotify: max_user_instances
//! (EMFILE) and max_user_watches (ENOSPC) per effective user of the
//! instance's creator (`ucounts`), max_queued_events per instance, read
//! when it is made.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::InotifyEvent;

use super::file::FileOps;
use super::inode::Inode;
use super::notify::{self, Mark};
use super::ucounts::{Counted, UserCharge};
use crate::event::{block_on, Events, PollTable, Pollee};
use crate::mm::{uaccess, Vm};

/// /proc/sys/fs/inotify/max_queued_events (Linux's default).
pub static MAX_QUEUED_EVENTS: AtomicU64 = AtomicU64::new(16384);
/// /proc/sys/fs/inotify/max_user_instances (Linux's default).
pub static MAX_USER_INSTANCES: AtomicU64 = AtomicU64::new(128);
/// /proc/sys/fs/inotify/max_user_watches; until set, Linux's default
/// for the machine's memory (`default_max_user_watches`).
pub static MAX_USER_WATCHES: AtomicU64 = AtomicU64::new(UNSET);
const UNSET: u64 = u64::MAX;

/// Linux's inotify_user_setup: 1% of memory at 1080 bytes a watch (a
/// mark and two inodes), within 8192..=1048576.
fn default_max_user_watches() -> u64 {
    (hal::mm::total_frame_count() * 4096 / 100 / 1080).clamp(8192, 1_048_576)
}

pub fn max_user_watches() -> u64 {
    match MAX_USER_WATCHES.load(Ordering::Relaxed) {
        UNSET => default_max_user_watches(),
        v => v,
    }
}

/// Every mask bit inotify_add_watch accepts (Linux's ALL_INOTIFY_BITS).
pub const ALL_BITS: u32 = c::IN_ALL_EVENTS
    | c::IN_UNMOUNT
    | c::IN_Q_OVERFLOW
    | c::IN_IGNORED
    | c::IN_ONLYDIR
    | c::IN_DONT_FOLLOW
    | c::IN_EXCL_UNLINK
    | c::IN_MASK_ADD
    | c::IN_MASK_CREATE
    | c::IN_ISDIR
    | c::IN_ONESHOT;

struct Event {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: Option<String>,
}

impl Event {
    /// The name field's length: the name and a NUL, padded to 16 bytes.
    fn name_len(&self) -> usize {
        self.name.as_ref().map_or(0, |n| (n.len() + 1).div_ceil(InotifyEvent::SIZE) * InotifyEvent::SIZE)
    }

    fn size(&self) -> usize {
        InotifyEvent::SIZE + self.name_len()
    }
}

struct Watch {
    wd: i32,
    inode: Arc<dyn Inode>,
    /// Events wanted, and IN_ONESHOT.
    mask: u32,
    /// Its place in the user's max_user_watches.
    _charge: UserCharge,
}

struct State {
    queue: VecDeque<Event>,
    /// The IN_Q_OVERFLOW event is in the queue.
    overflowed: bool,
    watches: Vec<Watch>,
    /// The last watch descriptor handed out (they are never reused while
    /// the instance lives, as Linux's cyclic allocation).
    last_wd: i32,
}

pub struct Inotify {
    state: SpinLock<State>,
    pollee: Pollee,
    me: Once<Weak<Inotify>>,
    /// max_queued_events when the instance was made.
    max_events: usize,
    /// Its place in its user's max_user_instances; the user its watches
    /// are charged to.
    instance: UserCharge,
}

impl Inotify {
    /// A new instance for the user `euid` (EMFILE past its
    /// max_user_instances).
    pub fn new(euid: u32) -> Result<Arc<Inotify>, Errno> {
        let limit = MAX_USER_INSTANCES.load(Ordering::Relaxed);
        let instance = UserCharge::take(euid, Counted::InotifyInstances, limit, Errno::EMFILE)?;
        let g = Arc::try_new(Inotify {
            state: SpinLock::new(State { queue: VecDeque::new(), overflowed: false, watches: Vec::new(), last_wd: 0 }),
            pollee: Pollee::new(),
            me: Once::new(),
            max_events: MAX_QUEUED_EVENTS.load(Ordering::Relaxed).min(usize::MAX as u64) as usize,
            instance,
        })
        .map_err(|_| Errno::ENOMEM)?;
        g.me.set(Arc::downgrade(&g));
        Ok(g)
    }

    /// The instance behind `ops`, if it is one.
    pub fn of(ops: &Arc<dyn FileOps>) -> Option<&Inotify> {
        ops.as_any().and_then(|a| a.downcast_ref::<Inotify>())
    }

    fn weak(&self) -> Weak<Inotify> {
        self.me.get().cloned().unwrap_or_default()
    }

    /// inotify_add_watch on a resolved inode (the caller checked the
    /// mask's bits): the watch descriptor, old or new.
    pub fn add_watch(&self, inode: Arc<dyn Inode>, mask: u32) -> Result<i32, Errno> {
        let key = notify::key(&inode);
        let wanted = mask & (c::IN_ALL_EVENTS | c::IN_ONESHOT | c::IN_EXCL_UNLINK);
        let wd = {
            let mut st = self.state.lock();
            if let Some(w) = st.watches.iter_mut().find(|w| notify::key(&w.inode) == key) {
                if mask & c::IN_MASK_CREATE != 0 {
                    return Err(Errno::EEXIST);
                }
                w.mask = if mask & c::IN_MASK_ADD != 0 { w.mask | wanted } else { wanted };
                return Ok(w.wd);
            }
            st.watches.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            st.last_wd = st.last_wd.checked_add(1).ok_or(Errno::ENOSPC)?;
            let wd = st.last_wd;
            // Charged after the descriptor is taken, as Linux does (a
            // refused watch still uses up its wd).
            let charge =
                UserCharge::take(self.instance.uid(), Counted::InotifyWatches, max_user_watches(), Errno::ENOSPC)?;
            st.watches.push(Watch { wd, inode, mask: wanted, _charge: charge });
            wd
        };
        if let Err(e) = notify::add_mark(key, Mark { group: self.weak(), wd }) {
            self.state.lock().watches.retain(|w| w.wd != wd);
            return Err(e);
        }
        Ok(wd)
    }

    /// inotify_rm_watch: the watch goes, with an IN_IGNORED.
    pub fn rm_watch(&self, wd: i32) -> Result<(), Errno> {
        if !self.state.lock().watches.iter().any(|w| w.wd == wd) {
            return Err(Errno::EINVAL);
        }
        self.drop_watch(wd);
        Ok(())
    }

    /// Removes watch `wd` (if still there) and queues its IN_IGNORED.
    pub(super) fn drop_watch(&self, wd: i32) {
        let removed = {
            let mut st = self.state.lock();
            let Some(i) = st.watches.iter().position(|w| w.wd == wd) else {
                return;
            };
            let w = st.watches.remove(i);
            let queued = self.queue(&mut st, Event { wd, mask: c::IN_IGNORED, cookie: 0, name: None });
            (w, queued)
        };
        notify::remove_mark(notify::key(&removed.0.inode), &self.weak(), wd);
        if removed.1 {
            self.pollee.notify(Events::READABLE);
        }
        drop(removed);
    }

    /// Adds an event to the queue: merged with an identical last one,
    /// replaced by IN_Q_OVERFLOW when the queue is full. Whether anything
    /// was added (only then are readers woken, as on Linux).
    fn queue(&self, st: &mut State, event: Event) -> bool {
        if let Some(last) = st.queue.back() {
            if last.wd == event.wd && last.mask == event.mask && last.cookie == event.cookie && last.name == event.name
            {
                return false;
            }
        }
        if st.queue.len() >= self.max_events || st.queue.try_reserve(1).is_err() {
            if !st.overflowed && st.queue.try_reserve(1).is_ok() {
                st.overflowed = true;
                st.queue.push_back(Event { wd: -1, mask: c::IN_Q_OVERFLOW, cookie: 0, name: None });
                return true;
            }
            return false;
        }
        st.queue.push_back(event);
        true
    }

    /// An event for watch `wd`, from `fs::notify`.
    pub(super) fn deliver(&self, wd: i32, mask: u32, cookie: u32, name: Option<&str>) {
        let (oneshot, queued) = {
            let mut st = self.state.lock();
            let Some(w) = st.watches.iter().find(|w| w.wd == wd) else {
                return;
            };
            if w.mask & mask & c::IN_ALL_EVENTS == 0 {
                return;
            }
            let oneshot = w.mask & c::IN_ONESHOT != 0;
            let mut owned = None;
            if let Some(n) = name {
                let mut s = String::new();
                if s.try_reserve(n.len()).is_err() {
                    return;
                }
                s.push_str(n);
                owned = Some(s);
            }
            // inotify never reported IN_ISDIR with the *_SELF events.
            let mask = if mask & (c::IN_DELETE_SELF | c::IN_MOVE_SELF) != 0 { mask & !c::IN_ISDIR } else { mask };
            let queued = self.queue(&mut st, Event { wd, mask, cookie, name: owned });
            (oneshot, queued)
        };
        if queued {
            self.pollee.notify(Events::READABLE);
        }
        if oneshot {
            self.drop_watch(wd);
        }
    }

    /// Copies whole events into `buf`; EINVAL if the first does not fit.
    fn try_read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut st = self.state.lock();
        let Some(first) = st.queue.front() else {
            return Err(Errno::EAGAIN);
        };
        if first.size() > buf.len() {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        while let Some(e) = st.queue.front() {
            let size = e.size();
            if done + size > buf.len() {
                break;
            }
            let head = InotifyEvent { wd: e.wd, mask: e.mask, cookie: e.cookie, len: e.name_len() as u32 };
            buf[done..done + InotifyEvent::SIZE].copy_from_slice(&head.to_bytes());
            let name_at = done + InotifyEvent::SIZE;
            buf[name_at..done + size].fill(0);
            if let Some(n) = &e.name {
                buf[name_at..name_at + n.len()].copy_from_slice(n.as_bytes());
            }
            if e.mask & c::IN_Q_OVERFLOW != 0 {
                st.overflowed = false;
            }
            st.queue.pop_front();
            done += size;
        }
        Ok(done)
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        let weak = self.weak();
        for w in core::mem::take(&mut self.state.get_mut().watches) {
            notify::remove_mark(notify::key(&w.inode), &weak, w.wd);
        }
    }
}

impl FileOps for Inotify {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if nonblock {
            self.try_read(buf)
        } else {
            block_on(&self.pollee, Events::READABLE, || self.try_read(buf))
        }
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn fixed_seek(&self) -> Option<u64> {
        Some(0)
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.pollee);
        }
        if self.state.lock().queue.is_empty() {
            Events::EMPTY
        } else {
            Events::READABLE
        }
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        match cmd {
            c::FIONREAD => {
                let bytes: usize = self.state.lock().queue.iter().map(Event::size).sum();
                uaccess::write_u32(vm, arg, bytes as u32)?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn mode(&self) -> u32 {
        0o600
    }

    /// O_ASYNC works here (Linux's fsnotify_fasync); not on the other
    /// event files.
    fn fasync(&self) -> bool {
        true
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("inotify")
    }
}
