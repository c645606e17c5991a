//! epoll instances.
//!
//! An instance holds an interest list of entries, one per (open file
//! description, fd) pair added with EPOLL_CTL_ADD. Each entry is an
//! observer subscribed to its file's notification heads; when a head
//! notifies with events the entry wants, the entry puts itself on the
//! instance's ready list and wakes one thread in epoll_wait (all of them
//! wait exclusively, as on Linux) and everyone polling the epoll file
//! itself (poll, select, an outer epoll). That callback runs in whatever
//! context notified, interrupts included: it takes only the ready list's
//! spin lock and never allocates (the list's capacity is reserved for
//! every entry when it is added).
//!
//! epoll_wait scans the ready list: each entry's file is polled again and
//! reported with the events it has now; level-triggered entries are
//! polled where they are and stay on the list while they have events,
//! edge-triggered ones are taken off and wait for the next notification,
//! and one-shot ones are disarmed until EPOLL_CTL_MOD.
//!
//! An entry goes when it is deleted, when its epoll goes, or when the
//! last reference to the open file description it watches goes (the
//! description keeps weak links to its entries): dup'd descriptors keep
//! it, as on Linux. Nesting follows Linux's rules: no cycles (ELOOP), at
//! most 5 epolls on any path (ELOOP beyond). Entries count against
//! /proc/sys/fs/epoll/max_user_watches for the real user who made the
//! epoll (ENOSPC past it, root included, as Linux's ep_insert).
//!
//! Locks: `ctl` (sleeping, one epoll_ctl at a time) before any head's
//! lock, which comes before `ready`. `interest` and `ready` are never
//! held together, nor across a call into a file.

use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::EpollEvent;

use super::file::{FileOps, OpenFile};
use super::ucounts::{Counted, UserCharge};
use crate::event::{Events, Observer, PollTable, Pollee, Subscription};
use crate::sched::WakeBatch;
use crate::sync::Mutex;

/// Flag bits of an entry's mask that are not events (Linux's
/// EP_PRIVATE_BITS): what a one-shot entry keeps once it fired.
const PRIVATE_BITS: u32 = c::EPOLLWAKEUP | c::EPOLLONESHOT | c::EPOLLET | c::EPOLLEXCLUSIVE;
/// What EPOLLEXCLUSIVE may be combined with (Linux's EPOLLEXCLUSIVE_OK_BITS).
pub const EXCLUSIVE_OK_BITS: u32 = c::EPOLLIN
    | c::EPOLLOUT
    | c::EPOLLRDNORM
    | c::EPOLLRDBAND
    | c::EPOLLWRNORM
    | c::EPOLLWRBAND
    | c::EPOLLERR
    | c::EPOLLHUP
    | c::EPOLLWAKEUP
    | c::EPOLLET
    | c::EPOLLEXCLUSIVE;
/// Epoll instances on the longest allowed path, minus one (EP_MAX_NESTS).
const MAX_NESTS: usize = 4;

/// /proc/sys/fs/epoll/max_user_watches; until set, Linux's default for
/// the machine's memory (`default_max_user_watches`).
pub static MAX_USER_WATCHES: AtomicU64 = AtomicU64::new(UNSET);
const UNSET: u64 = u64::MAX;

/// Linux's eventpoll_init: 4% of memory at 184 bytes an entry (an epitem
/// and its wait-queue hook).
fn default_max_user_watches() -> u64 {
    hal::mm::total_frame_count() * 4096 / 25 / 184
}

pub fn max_user_watches() -> u64 {
    match MAX_USER_WATCHES.load(Ordering::Relaxed) {
        UNSET => default_max_user_watches(),
        v => v,
    }
}

/// Serializes the loop and depth checks of EPOLL_CTL_ADDs that nest one
/// epoll in another, with the graph changes they make (Linux's
/// epnested_mutex): two adds checked at once could close a cycle.
static NESTING: Mutex<()> = Mutex::new(());

/// An open file description's identity, for the (file, fd) keys.
fn file_id(file: &Arc<OpenFile>) -> usize {
    Arc::as_ptr(file) as *const () as usize
}

/// What entries reach from notification context.
struct Shared {
    /// Entries with events to look at, each at most once (`queued`).
    ready: SpinLock<VecDeque<Weak<EpollEntry>>>,
    /// Threads in epoll_wait, subscribed exclusively: an event wakes one.
    waiters: Pollee,
    /// Pollers of the epoll file itself (poll, select, an outer epoll).
    pollee: Pollee,
}

pub struct Epoll {
    /// One epoll_ctl at a time (Linux's ep->mtx; scans go without it).
    ctl: Mutex<()>,
    /// Entries by (file, fd), sorted.
    interest: SpinLock<Vec<Arc<EpollEntry>>>,
    shared: Arc<Shared>,
    /// Epolls this one watches and epolls watching it, for the nesting
    /// checks (one element per entry, so duplicates are possible).
    children: SpinLock<Vec<Weak<Epoll>>>,
    parents: SpinLock<Vec<Weak<Epoll>>>,
    me: Once<Weak<Epoll>>,
    /// The real uid of its creator, whose max_user_watches its entries
    /// count against.
    uid: u32,
}

/// One watched (file, fd).
pub struct EpollEntry {
    me: Once<Weak<EpollEntry>>,
    shared: Arc<Shared>,
    epoll: Weak<Epoll>,
    file: Weak<OpenFile>,
    key: (usize, i32),
    /// Events wanted and flags (EPOLLET...), with ERR and HUP always in.
    mask: AtomicU32,
    data: AtomicU64,
    /// On the ready list (changed only under its lock).
    queued: AtomicBool,
    /// Counts the notifications that reached the ready list (changed
    /// only under its lock): a scan that polled a level-triggered entry
    /// in place and found it idle takes it off only if none came since.
    wakes: AtomicU32,
    /// Removed: its callback does nothing, it never goes back on the
    /// ready list (set under the ready list's lock).
    dead: AtomicBool,
    subscriptions: SpinLock<Vec<Subscription>>,
    /// The epoll it watches, when its file is one.
    child: Option<Weak<Epoll>>,
    /// Its place in the user's max_user_watches.
    _charge: UserCharge,
}

/// The epoll file: what an epoll descriptor's open file description holds.
pub struct EpollFile(pub Arc<Epoll>);

impl Epoll {
    /// A new epoll for the user `uid` (the creator's real uid).
    pub fn new(uid: u32) -> Result<Arc<Epoll>, Errno> {
        let shared = Arc::try_new(Shared {
            ready: SpinLock::new(VecDeque::new()),
            waiters: Pollee::new(),
            pollee: Pollee::new(),
        })
        .map_err(|_| Errno::ENOMEM)?;
        let ep = Arc::try_new(Epoll {
            ctl: Mutex::new(()),
            interest: SpinLock::new(Vec::new()),
            shared,
            children: SpinLock::new(Vec::new()),
            parents: SpinLock::new(Vec::new()),
            me: Once::new(),
            uid,
        })
        .map_err(|_| Errno::ENOMEM)?;
        ep.me.set(Arc::downgrade(&ep));
        Ok(ep)
    }

    /// The epoll behind `ops`, if it is an epoll file.
    #[inline]
    pub fn of(ops: &Arc<dyn FileOps>) -> Option<&Arc<Epoll>> {
        ops.as_epoll()
    }

    fn weak(&self) -> Weak<Epoll> {
        self.me.get().cloned().unwrap_or_default()
    }

    fn find(&self, key: (usize, i32)) -> Result<Arc<EpollEntry>, usize> {
        let interest = self.interest.lock();
        match interest.binary_search_by_key(&key, |e| e.key) {
            Ok(i) => Ok(interest[i].clone()),
            Err(i) => Err(i),
        }
    }

    /// EPOLL_CTL_ADD. `event.events` already has ERR and HUP added and
    /// EPOLLWAKEUP dropped; the caller checked the flag combinations.
    pub fn add(&self, file: &Arc<OpenFile>, fd: i32, event: EpollEvent) -> Result<(), Errno> {
        let _ctl = self.ctl.lock();
        let child = Epoll::of(&file.ops).cloned();
        // Held until the new edge is in the graph, so a concurrent add
        // cannot close a cycle this check did not see.
        let _nesting = match &child {
            Some(child) => {
                let guard = NESTING.lock();
                if child.reaches(self) || depth_above(self) + 1 + depth_below(child) > MAX_NESTS {
                    return Err(Errno::ELOOP);
                }
                Some(guard)
            }
            None => None,
        };
        let key = (file_id(file), fd);
        if self.find(key).is_ok() {
            return Err(Errno::EEXIST);
        }
        let charge = UserCharge::take(self.uid, Counted::EpollWatches, max_user_watches(), Errno::ENOSPC)?;
        let entry = Arc::try_new(EpollEntry {
            me: Once::new(),
            shared: self.shared.clone(),
            epoll: self.weak(),
            file: Arc::downgrade(file),
            key,
            mask: AtomicU32::new(event.events),
            data: AtomicU64::new(event.data),
            queued: AtomicBool::new(false),
            wakes: AtomicU32::new(0),
            dead: AtomicBool::new(false),
            subscriptions: SpinLock::new(Vec::new()),
            child: child.as_ref().map(Arc::downgrade),
            _charge: charge,
        })
        .map_err(|_| Errno::ENOMEM)?;
        entry.me.set(Arc::downgrade(&entry));
        // Room on the ready list for every entry, so callbacks never
        // allocate; and room in the lists this entry joins.
        {
            let live = self.interest.lock().len() + 1;
            let mut ready = self.shared.ready.lock();
            if ready.capacity() < live {
                let more = live - ready.len();
                ready.try_reserve(more).map_err(|_| Errno::ENOMEM)?;
            }
        }
        if let Some(child) = &child {
            self.children.lock().try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            child.parents.lock().try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        }
        {
            let mut interest = self.interest.lock();
            interest.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            let at = interest.binary_search_by_key(&key, |e| e.key).unwrap_or_else(|i| i);
            interest.insert(at, entry.clone());
        }
        // Subscribe to every head of the file; the file's answer now is
        // the entry's first readiness.
        let mut subscriptions = Vec::new();
        let observer: Arc<dyn Observer> = entry.clone();
        let exclusive = event.events & c::EPOLLEXCLUSIVE != 0;
        let mut table = PollTable::new(&observer, Events::from_bits(!0), exclusive, &mut subscriptions);
        let now = file.ops.poll(Some(&mut table));
        if let Some(e) = table.error() {
            drop(subscriptions);
            self.remove(&entry);
            return Err(e);
        }
        *entry.subscriptions.lock() = subscriptions;
        let linked = {
            // Other epolls may link this file at the same time: room is
            // made under the same lock as the push.
            let mut links = file.epoll_links.lock();
            links.retain(|l| l.strong_count() > 0);
            let room = links.try_reserve(1).is_ok();
            if room {
                links.push(Arc::downgrade(&entry));
            }
            room
        };
        if !linked {
            self.remove(&entry);
            return Err(Errno::ENOMEM);
        }
        if let Some(child) = &child {
            self.children.lock().push(Arc::downgrade(child));
            child.parents.lock().push(self.weak());
        }
        if now.bits() & event.events != 0 {
            entry.make_ready();
        }
        Ok(())
    }

    /// EPOLL_CTL_MOD: a new mask (ERR and HUP added) and data; the entry
    /// is ready at once if its file already has what it now wants.
    pub fn modify(&self, file: &Arc<OpenFile>, fd: i32, event: EpollEvent) -> Result<(), Errno> {
        let _ctl = self.ctl.lock();
        let entry = self.find((file_id(file), fd)).map_err(|_| Errno::ENOENT)?;
        if entry.mask.load(Ordering::Relaxed) & c::EPOLLEXCLUSIVE != 0 {
            // Linux never modifies an exclusive entry.
            return Err(Errno::EINVAL);
        }
        entry.data.store(event.data, Ordering::Relaxed);
        entry.mask.store(event.events, Ordering::SeqCst);
        if file.ops.poll(None).bits() & event.events != 0 {
            entry.make_ready();
        }
        Ok(())
    }

    /// EPOLL_CTL_DEL.
    pub fn delete(&self, file: &Arc<OpenFile>, fd: i32) -> Result<(), Errno> {
        let _ctl = self.ctl.lock();
        let entry = self.find((file_id(file), fd)).map_err(|_| Errno::ENOENT)?;
        self.remove(&entry);
        Ok(())
    }

    /// Takes `entry` out of the interest list and kills it.
    fn remove(&self, entry: &Arc<EpollEntry>) {
        let removed = {
            let mut interest = self.interest.lock();
            interest.iter().position(|e| Arc::ptr_eq(e, entry)).map(|i| interest.remove(i))
        };
        entry.kill();
        if let Some(child) = entry.child.as_ref().and_then(Weak::upgrade) {
            remove_one(&self.children, &Arc::downgrade(&child));
            remove_one(&child.parents, &self.weak());
        }
        drop(removed);
    }

    /// The head epoll_wait sleepers subscribe to, exclusively.
    pub fn waiters(&self) -> &Pollee {
        &self.shared.waiters
    }

    /// After a scan that delivered events: if entries are still ready
    /// (`more`, from `scan`) and others sleep in epoll_wait, wakes the
    /// next of them (each event woke only one; Linux's ep_done_scan). The
    /// caller has dropped its own subscription first, so it does not wake
    /// itself.
    // Always: plain `inline` left it a call, 10 of epoll_wait's 700.
    #[inline(always)]
    pub fn pass_on(&self, more: bool) {
        let shared = &self.shared;
        if more && shared.waiters.is_watched() {
            shared.waiters.notify(Events::READABLE);
        }
    }

    /// Reports up to `max` ready entries through `deliver` (epoll_wait's
    /// copy to user memory), as Linux's ep_send_events: each entry's file
    /// is polled again and skipped if it has nothing now; a failed
    /// delivery leaves the entry first on the list and ends the scan (an
    /// error only if nothing was delivered). Returns how many were
    /// delivered and whether entries are still ready afterwards (for
    /// `pass_on`; only meaningful when some were).
    pub fn scan(
        &self,
        max: usize,
        mut deliver: impl FnMut(usize, EpollEvent) -> Result<(), Errno>,
    ) -> Result<(usize, bool), Errno> {
        let shared = &self.shared;
        // Only what is ready now: entries put back during the scan wait
        // for the next one.
        let mut budget = None;
        let mut done = 0;
        // No `ctl` here: scans and epoll_ctl may overlap. A removed entry
        // is dead and off the list before it could be put back, and
        // disarming a one-shot entry only happens if no EPOLL_CTL_MOD
        // changed its mask meanwhile.
        loop {
            if budget == Some(0) && done == 0 {
                return Ok((0, false));
            }
            // Edge-triggered and one-shot entries are taken off the list
            // before their file is polled (a notification meanwhile puts
            // them back); a level-triggered one is polled where it is and
            // stays when it has events, so the usual scan of one ready
            // entry visits the list once. Two scans may then report it
            // both, as two epoll_waits in turn do on Linux.
            let (entry, mask, look) = {
                let mut ready = shared.ready.lock();
                let left = budget.get_or_insert(ready.len());
                if *left == 0 || done >= max {
                    return Ok((done, !ready.is_empty()));
                }
                *left -= 1;
                let Some(entry) = ready.front().map(Weak::upgrade) else {
                    return Ok((done, false));
                };
                let Some(entry) = entry else {
                    ready.pop_front();
                    continue;
                };
                let mask = entry.mask.load(Ordering::SeqCst);
                let look = if mask & (c::EPOLLET | c::EPOLLONESHOT) == 0 {
                    Look::InPlace { seen: entry.wakes.load(Ordering::Relaxed), alone: ready.len() == 1 }
                } else {
                    let weak = ready.pop_front();
                    entry.queued.store(false, Ordering::Relaxed);
                    Look::Taken(weak)
                };
                (entry, mask, look)
            };
            let events = match entry.file.upgrade() {
                Some(file) if !entry.dead.load(Ordering::Relaxed) => file.ops.poll(None).bits() & mask,
                _ => 0,
            };
            if events == 0 {
                if let Look::InPlace { seen, .. } = look {
                    let empty = entry.leave_idle(&shared.ready, seen);
                    if budget == Some(0) && done > 0 {
                        return Ok((done, !empty));
                    }
                }
                continue;
            }
            if let Err(e) = deliver(done, EpollEvent { events, data: entry.data.load(Ordering::Relaxed) }) {
                if let Look::Taken(Some(weak)) = look {
                    entry.put_back(&mut shared.ready.lock(), weak);
                }
                return if done > 0 { Ok((done, true)) } else { Err(e) };
            }
            done += 1;
            match look {
                // Still first on the list, and nothing behind it.
                Look::InPlace { alone: true, .. } => return Ok((done, true)),
                Look::InPlace { alone: false, .. } => entry.rotate(&shared.ready),
                Look::Taken(_) if mask & c::EPOLLONESHOT != 0 => {
                    let _ = entry.mask.compare_exchange(mask, mask & PRIVATE_BITS, Ordering::SeqCst, Ordering::SeqCst);
                }
                Look::Taken(_) => {}
            }
        }
    }

    /// Whether `target` is this epoll or one it watches, at any depth.
    fn reaches(&self, target: &Epoll) -> bool {
        if core::ptr::eq(self, target) {
            return true;
        }
        let children: Vec<Arc<Epoll>> = self.children.lock().iter().filter_map(Weak::upgrade).collect();
        children.iter().any(|c| c.reaches(target))
    }
}

/// How a scan holds the entry it polls.
enum Look {
    /// Left on the ready list (level-triggered): `seen` is its `wakes`
    /// when looked at, `alone` whether the list held only it.
    InPlace { seen: u32, alone: bool },
    /// Taken off the list, with the list's reference to it.
    Taken(Option<Weak<EpollEntry>>),
}

/// The longest chain of epolls watching `ep`, in edges.
fn depth_above(ep: &Epoll) -> usize {
    let parents: Vec<Arc<Epoll>> = ep.parents.lock().iter().filter_map(Weak::upgrade).collect();
    parents.iter().map(|p| 1 + depth_above(p)).max().unwrap_or(0)
}

/// The longest chain of epolls under `ep`, in edges.
fn depth_below(ep: &Epoll) -> usize {
    let children: Vec<Arc<Epoll>> = ep.children.lock().iter().filter_map(Weak::upgrade).collect();
    children.iter().map(|c| 1 + depth_below(c)).max().unwrap_or(0)
}

/// Removes one occurrence of `target` from `list`, and dead references.
fn remove_one(list: &SpinLock<Vec<Weak<Epoll>>>, target: &Weak<Epoll>) {
    let mut list = list.lock();
    if let Some(i) = list.iter().position(|w| w.ptr_eq(target)) {
        list.remove(i);
    }
    list.retain(|w| w.strong_count() > 0);
}

impl Drop for Epoll {
    fn drop(&mut self) {
        let entries = core::mem::take(self.interest.get_mut());
        for entry in &entries {
            entry.kill();
        }
    }
}

impl EpollEntry {
    /// Puts the entry on the ready list and wakes a waiter and the
    /// epoll's pollers (process context: EPOLL_CTL_ADD and MOD).
    fn make_ready(&self) {
        let mut wakeups = WakeBatch::new();
        self.queue(&mut wakeups);
        wakeups.flush();
    }

    /// Queues the entry (once) and tells the epoll's waiters; returns
    /// whether a thread in epoll_wait was woken.
    fn queue(&self, wakeups: &mut WakeBatch) -> bool {
        let Some(me) = self.me.get() else {
            return false;
        };
        {
            let mut ready = self.shared.ready.lock();
            self.wakes.store(self.wakes.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
            if self.dead.load(Ordering::Relaxed) {
                return false;
            }
            // The capacity covers every live entry, so this never
            // allocates; the check only guards that promise.
            if !self.queued.load(Ordering::Relaxed) && ready.len() < ready.capacity() {
                ready.push_back(me.clone());
                self.queued.store(true, Ordering::Relaxed);
            }
        }
        let woke = self.shared.waiters.notify_into(Events::READABLE, wakeups);
        self.shared.pollee.notify_into(Events::READABLE, wakeups);
        woke
    }

    /// Back at the front of the ready list (locked), through the
    /// reference a scan took off it, when its event could not be
    /// delivered.
    fn put_back(&self, ready: &mut VecDeque<Weak<EpollEntry>>, me: Weak<EpollEntry>) {
        if self.dead.load(Ordering::Relaxed) || self.queued.load(Ordering::Relaxed) || ready.len() >= ready.capacity() {
            return;
        }
        ready.push_front(me);
        self.queued.store(true, Ordering::Relaxed);
    }

    fn is_first(&self, ready: &VecDeque<Weak<EpollEntry>>) -> bool {
        ready.front().is_some_and(|w| core::ptr::eq(w.as_ptr(), self))
    }

    /// A level-triggered entry a scan delivered in place: to the back of
    /// the list (if still first), behind the entries not yet reported.
    fn rotate(&self, ready: &SpinLock<VecDeque<Weak<EpollEntry>>>) {
        let mut ready = ready.lock();
        if self.is_first(&ready) {
            if let Some(me) = ready.pop_front() {
                ready.push_back(me);
            }
        }
    }

    /// A level-triggered entry a scan polled in place and found idle:
    /// off the list, unless a notification came since the scan looked
    /// (`seen`): that one found it queued and left it, so it goes to the
    /// back for the next scan instead. Returns whether the list is empty.
    fn leave_idle(&self, ready: &SpinLock<VecDeque<Weak<EpollEntry>>>, seen: u32) -> bool {
        let mut ready = ready.lock();
        if self.is_first(&ready) {
            let me = ready.pop_front();
            if self.wakes.load(Ordering::Relaxed) == seen {
                self.queued.store(false, Ordering::Relaxed);
            } else if let Some(me) = me {
                ready.push_back(me);
            }
        }
        ready.is_empty()
    }

    /// Stops the entry: off the ready list, unsubscribed from its file.
    /// Once this returns its callback is not running and never will.
    fn kill(&self) {
        {
            let mut ready = self.shared.ready.lock();
            self.dead.store(true, Ordering::Relaxed);
            if self.queued.swap(false, Ordering::Relaxed) {
                if let Some(me) = self.me.get() {
                    ready.retain(|w| !w.ptr_eq(me));
                }
            }
        }
        let subscriptions = core::mem::take(&mut *self.subscriptions.lock());
        drop(subscriptions);
    }

    /// The watched description is going away (its last reference
    /// dropped): the entry leaves its epoll.
    pub fn detach(&self) {
        match self.epoll.upgrade() {
            Some(ep) => {
                if let Some(me) = self.me.get().and_then(Weak::upgrade) {
                    ep.remove(&me);
                }
            }
            None => self.kill(),
        }
    }
}

impl Observer for EpollEntry {
    /// Linux's ep_poll_callback.
    fn on_events(&self, events: Events, wakeups: &mut WakeBatch) -> bool {
        let mask = self.mask.load(Ordering::SeqCst);
        if mask & !PRIVATE_BITS == 0 {
            return false; // a one-shot entry that fired
        }
        if !events.is_empty() && events.bits() & mask == 0 {
            return false;
        }
        let woke = self.queue(wakeups);
        if mask & c::EPOLLEXCLUSIVE == 0 {
            return true;
        }
        // An exclusive entry ends the wakeup only when it woke a waiter
        // for the kind of event that came.
        woke && match events.bits() & (c::EPOLLIN | c::EPOLLOUT) {
            c::EPOLLIN => mask & c::EPOLLIN != 0,
            c::EPOLLOUT => mask & c::EPOLLOUT != 0,
            0 => true,
            _ => false,
        }
    }
}

impl FileOps for EpollFile {
    fn read_at(&self, _offset: u64, _buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
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

    /// Readable when an entry on the ready list has events now (entries
    /// without any are dropped from the list, as Linux's
    /// ep_eventpoll_poll does).
    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        let shared = &self.0.shared;
        if let Some(table) = table {
            table.register(&shared.pollee);
        }
        let mut i = 0;
        loop {
            // `seen` as in `leave_idle`: an entry notified after its poll
            // here stays on the list.
            let (weak, entry, seen) = match shared.ready.lock().get(i) {
                Some(w) => {
                    let entry = w.upgrade();
                    let seen = entry.as_ref().map(|e| e.wakes.load(Ordering::Relaxed));
                    (w.clone(), entry, seen)
                }
                None => return Events::EMPTY,
            };
            let events = entry.as_ref().and_then(|e| {
                let file = e.file.upgrade()?;
                let mask = e.mask.load(Ordering::SeqCst);
                Some(file.ops.poll(None).bits() & mask)
            });
            if events.unwrap_or(0) != 0 {
                return Events::READABLE;
            }
            let mut ready = shared.ready.lock();
            let notified = entry.as_ref().is_some_and(|e| Some(e.wakes.load(Ordering::Relaxed)) != seen);
            if ready.get(i).is_some_and(|w| w.ptr_eq(&weak)) && !notified {
                ready.remove(i);
                if let Some(e) = &entry {
                    e.queued.store(false, Ordering::Relaxed);
                }
            } else {
                i += 1;
            }
        }
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn as_epoll(&self) -> Option<&Arc<Epoll>> {
        Some(&self.0)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[eventpoll]")
    }
}
