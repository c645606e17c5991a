//! Notification heads and their subscriptions.
//!
//! A [`Pollee`] is the head a pollable object owns (a pipe has one per
//! direction, the console one for input). Whoever wants to hear about it
//! subscribes an [`Observer`] with an interest mask and keeps the
//! [`Subscription`]; the object calls [`Pollee::notify`] with the events
//! that may have changed, and every interested observer's `on_events`
//! runs. Dropping the subscription removes the observer; once that drop
//! returns, its `on_events` is not running and will not run again.
//!
//! `notify` takes one IRQ-safe spin lock, allocates nothing and calls
//! only observers, so it may run in an interrupt handler. With nobody
//! subscribed it is a fence and one load. Observers do not wake threads
//! under the lock: they queue them on a `WakeBatch`, which `notify` wakes
//! after releasing it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;

use super::Events;
use crate::sched::WakeBatch;

/// Something that wants to hear when a pollee's readiness may have
/// changed.
///
/// `on_events` runs with the head's spin lock held, interrupts off,
/// possibly in an interrupt handler: it must not sleep, allocate, take a
/// sleeping lock, or subscribe to or unsubscribe from anything. It may
/// take spin locks of its own and notify other heads (a nested epoll),
/// as long as no cycle of heads can form (passing `wakeups` on, see
/// [`Pollee::notify_into`]). Threads to wake go on `wakeups`. It returns
/// whether it woke a waiter; for exclusive subscriptions that ends the
/// notification.
pub trait Observer: Send + Sync {
    fn on_events(&self, events: Events, wakeups: &mut WakeBatch) -> bool;
}

/// A pollable object's notification head: the list of observers to tell
/// when its readiness changes. `const`-constructible; the list itself is
/// allocated at the first subscription, so an object nobody ever waits
/// for costs one word.
pub struct Pollee {
    head: Once<Arc<Head>>,
}

struct Head {
    observers: SpinLock<Vec<Slot>>,
    /// `observers.len()`, readable without the lock. A subscriber stores
    /// it (then a full fence) before it reads the object's state; a
    /// notifier changes the state before it reads this (after a full
    /// fence), so one of the two always sees the other.
    count: AtomicUsize,
}

struct Slot {
    id: u64,
    interest: Events,
    exclusive: bool,
    observer: Arc<dyn Observer>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Pollee {
    pub const fn new() -> Pollee {
        Pollee { head: Once::new() }
    }

    fn head(&self) -> Result<&Arc<Head>, Errno> {
        loop {
            if let Some(head) = self.head.get() {
                return Ok(head);
            }
            let head = Arc::try_new(Head { observers: SpinLock::new(Vec::new()), count: AtomicUsize::new(0) })
                .map_err(|_| Errno::ENOMEM)?;
            if !self.head.set(head) {
                // Another CPU is installing its head: wait for it.
                while self.head.get().is_none() {
                    hal::cpu::pause();
                }
            }
        }
    }

    /// Tells the observers interested in any of `events` (all of them if
    /// `events` is empty: "anything may have changed") that readiness may
    /// have changed. Non-exclusive observers are all told; exclusive ones
    /// in subscription order until one wakes a waiter (Linux's
    /// EPOLLEXCLUSIVE). Call it after the state change is visible.
    pub fn notify(&self, events: Events) {
        let mut wakeups = WakeBatch::new();
        self.notify_into(events, &mut wakeups);
        wakeups.flush();
    }

    /// Like [`notify`](Self::notify), for an observer passing a
    /// notification on: the threads to wake join the caller's batch.
    /// Returns whether an observer woke a waiter.
    pub fn notify_into(&self, events: Events, wakeups: &mut WakeBatch) -> bool {
        match self.head.get() {
            Some(head) => head.notify(events, wakeups),
            None => false,
        }
    }

    /// Adds `observer` for `interest` (ERR and HUP are not implied: pass
    /// them). Exclusive observers are told after all others, and only
    /// until one of them wakes a waiter.
    pub fn subscribe(
        &self,
        observer: Arc<dyn Observer>,
        interest: Events,
        exclusive: bool,
    ) -> Result<Subscription, Errno> {
        let head = self.head()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        {
            let mut observers = head.observers.lock();
            observers.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            observers.push(Slot { id, interest, exclusive, observer });
            head.count.store(observers.len(), Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        Ok(Subscription { head: head.clone(), id })
    }

    /// Whether anyone is subscribed now (a hint: it may change at once).
    #[inline]
    pub fn is_watched(&self) -> bool {
        self.head.get().is_some_and(|h| h.count.load(Ordering::Relaxed) != 0)
    }

    /// Observers subscribed now.
    #[cfg(feature = "ktest")]
    pub fn observers(&self) -> usize {
        self.head.get().map_or(0, |h| h.count.load(Ordering::Relaxed))
    }
}

impl Default for Pollee {
    fn default() -> Self {
        Self::new()
    }
}

impl Head {
    fn notify(&self, events: Events, wakeups: &mut WakeBatch) -> bool {
        fence(Ordering::SeqCst);
        if self.count.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let observers = self.observers.lock();
        let wanted = |s: &Slot| events.is_empty() || events.intersects(s.interest);
        let mut woke = false;
        for s in observers.iter().filter(|s| !s.exclusive && wanted(s)) {
            woke |= s.observer.on_events(events, wakeups);
        }
        for s in observers.iter().filter(|s| s.exclusive && wanted(s)) {
            if s.observer.on_events(events, wakeups) {
                return true;
            }
        }
        woke
    }
}

/// One observer's place on one head; dropping it unsubscribes.
pub struct Subscription {
    head: Arc<Head>,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let removed = {
            let mut observers = self.head.observers.lock();
            let slot = observers.iter().position(|s| s.id == self.id).map(|i| observers.remove(i));
            self.head.count.store(observers.len(), Ordering::SeqCst);
            slot
        };
        // The observer may be the last reference to its owner: dropped
        // here, after the lock, not under it.
        drop(removed);
    }
}

/// What a waiter hands to `FileOps::poll`: the observer to subscribe, its
/// interest, and where to keep the subscriptions. A file registers it on
/// each head whose changes may change its answer, before it reads its
/// state, so no change in between is missed. A probe table subscribes
/// nothing and only counts the heads (epoll_ctl's "can this file be
/// polled at all").
pub struct PollTable<'a> {
    target: Option<(&'a Arc<dyn Observer>, &'a mut Vec<Subscription>)>,
    interest: Events,
    exclusive: bool,
    heads: usize,
    error: Option<Errno>,
}

impl<'a> PollTable<'a> {
    pub fn new(
        observer: &'a Arc<dyn Observer>,
        interest: Events,
        exclusive: bool,
        subscriptions: &'a mut Vec<Subscription>,
    ) -> PollTable<'a> {
        PollTable { target: Some((observer, subscriptions)), interest, exclusive, heads: 0, error: None }
    }

    /// A table that only counts the heads a file registers.
    pub fn probe() -> PollTable<'static> {
        PollTable { target: None, interest: Events::EMPTY, exclusive: false, heads: 0, error: None }
    }

    /// Subscribes the waiter to `pollee` (called by files' `poll`).
    pub fn register(&mut self, pollee: &Pollee) {
        self.heads += 1;
        let Some((observer, subscriptions)) = self.target.as_mut() else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        if subscriptions.try_reserve(1).is_err() {
            self.error = Some(Errno::ENOMEM);
            return;
        }
        match pollee.subscribe((*observer).clone(), self.interest, self.exclusive) {
            Ok(s) => subscriptions.push(s),
            Err(e) => self.error = Some(e),
        }
    }

    /// How many heads the file registered: 0 means it has none (it is
    /// always ready, and epoll refuses it).
    pub fn heads(&self) -> usize {
        self.heads
    }

    /// A subscription that failed for want of memory.
    pub fn error(&self) -> Option<Errno> {
        self.error
    }
}
