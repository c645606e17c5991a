//! Wait queues and timed sleep.
//!
//! A thread waits by putting itself on a queue and blocking; a waker takes
//! it off and makes it ready. The condition is checked under the queue's
//! lock, and wakers change the condition before they take that lock, so a
//! wakeup cannot slip in between the check and the block.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};

use hal::sync::{IrqGuard, SpinLock};

use super::thread::{State, Thread};

pub struct WaitQueue {
    waiters: SpinLock<VecDeque<Arc<Thread>>>,
    /// `waiters.len()`, readable without the lock: wakers with nobody to
    /// wake (every uncontended mutex unlock) return without locking. A
    /// waiter publishes itself here before it checks its condition, and a
    /// waker changes the condition before it reads this, with a full fence
    /// on both sides, so one of the two always sees the other.
    queued: AtomicUsize,
}

impl WaitQueue {
    pub const fn new() -> WaitQueue {
        WaitQueue { waiters: SpinLock::new(VecDeque::new()), queued: AtomicUsize::new(0) }
    }

    /// Queues `me` unless it is queued already (a waiter looping after a
    /// wake-up stays in place); false when there is no memory to queue it.
    fn enlist(&self, waiters: &mut VecDeque<Arc<Thread>>, me: &Arc<Thread>) -> bool {
        if !waiters.iter().any(|t| Arc::ptr_eq(t, me)) {
            if waiters.try_reserve(1).is_err() {
                return false;
            }
            waiters.push_back(me.clone());
            self.publish(waiters);
        }
        true
    }

    /// Blocks until `condition` holds. The condition runs with the queue
    /// locked and interrupts off: keep it short and lock-free.
    pub fn wait_until(&self, mut condition: impl FnMut() -> bool) {
        loop {
            let _irq = IrqGuard::new();
            {
                let mut waiters = self.waiters.lock();
                let me = super::current();
                if waiters.try_reserve(1).is_err() {
                    // Cannot queue without memory: stay runnable and poll.
                    drop(waiters);
                    super::yield_now();
                    continue;
                }
                waiters.push_back(me.clone());
                self.publish(&waiters);
                if condition() {
                    waiters.retain(|t| !Arc::ptr_eq(t, &me));
                    self.publish(&waiters);
                    return;
                }
                me.set_uninterruptible(true);
                me.set_state(State::Blocked);
            }
            super::schedule();
            super::current().set_uninterruptible(false);
        }
    }

    /// Like [`wait_until`](Self::wait_until) (no signal ends it), but
    /// gives up at `deadline` (monotonic ns): true if `condition` held,
    /// false if the deadline passed first. The block layer's request
    /// timeout waits this way.
    pub fn wait_until_deadline(&self, deadline: u64, mut condition: impl FnMut() -> bool) -> bool {
        // The sleeper list is global: touched only once this thread slept.
        let mut slept = false;
        loop {
            let _irq = IrqGuard::new();
            let me = super::current();
            {
                let mut waiters = self.waiters.lock();
                if !self.enlist(&mut waiters, &me) {
                    drop(waiters);
                    super::yield_now();
                    continue;
                }
                let held = condition();
                if held || hal::time::monotonic_ns() >= deadline {
                    waiters.retain(|t| !Arc::ptr_eq(t, &me));
                    self.publish(&waiters);
                    drop(waiters);
                    if slept {
                        remove_sleeper(&me);
                    }
                    return held;
                }
                me.set_uninterruptible(true);
                me.set_state(State::Blocked);
            }
            add_sleeper(deadline, me);
            slept = true;
            super::schedule();
            super::current().set_uninterruptible(false);
        }
    }

    /// Like [`wait_until`](Self::wait_until), but gives up with
    /// `Interrupted` when a signal is pending for the thread, or with
    /// `TimedOut` at `deadline` (monotonic ns).
    pub fn wait_until_interruptible(
        &self,
        deadline: Option<u64>,
        mut condition: impl FnMut() -> bool,
    ) -> Result<(), Interrupted> {
        loop {
            let _irq = IrqGuard::new();
            let me = super::current();
            {
                let mut waiters = self.waiters.lock();
                if !self.enlist(&mut waiters, &me) {
                    drop(waiters);
                    super::yield_now();
                    continue;
                }
                let outcome = if condition() {
                    Some(Ok(()))
                } else if me.interrupt_pending() {
                    Some(Err(Interrupted::Signal))
                } else if deadline.is_some_and(|d| hal::time::monotonic_ns() >= d) {
                    Some(Err(Interrupted::TimedOut))
                } else {
                    None
                };
                if let Some(outcome) = outcome {
                    waiters.retain(|t| !Arc::ptr_eq(t, &me));
                    self.publish(&waiters);
                    drop(waiters);
                    if deadline.is_some() {
                        remove_sleeper(&me);
                    }
                    return outcome;
                }
                if !me.block_unless_interrupted() {
                    // Interrupted just now: the next pass reports it.
                    continue;
                }
            }
            if let Some(d) = deadline {
                add_sleeper(d, me);
            } else {
                drop(me);
            }
            super::schedule();
        }
    }

    /// Records the queue length for lock-free readers (lock held).
    fn publish(&self, waiters: &VecDeque<Arc<Thread>>) {
        self.queued.store(waiters.len(), Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Whether anyone may be waiting (the waker's side of the fence pair).
    #[inline]
    fn maybe_waiters(&self) -> bool {
        fence(Ordering::SeqCst);
        self.queued.load(Ordering::SeqCst) != 0
    }

    /// Wakes the longest waiter; returns whether one was woken.
    ///
    /// Inlined for the common case of nobody waiting (every sleeping
    /// mutex's unlock comes here).
    #[inline]
    pub fn wake_one(&self) -> bool {
        if !self.maybe_waiters() {
            return false;
        }
        self.wake_one_queued()
    }

    #[inline(never)]
    fn wake_one_queued(&self) -> bool {
        loop {
            let popped = {
                let mut waiters = self.waiters.lock();
                let t = waiters.pop_front();
                self.publish(&waiters);
                t
            };
            let Some(thread) = popped else {
                return false;
            };
            if super::wake(&thread) {
                return true;
            }
        }
    }

    /// Wakes every waiter; returns how many were woken.
    pub fn wake_all(&self) -> usize {
        if !self.maybe_waiters() {
            return 0;
        }
        let drained: VecDeque<Arc<Thread>> = {
            let mut waiters = self.waiters.lock();
            let all = core::mem::take(&mut *waiters);
            self.publish(&waiters);
            all
        };
        drained.iter().filter(|t| super::wake(t)).count()
    }

    #[cfg(feature = "ktest")]
    pub fn len(&self) -> usize {
        self.waiters.lock().len()
    }
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

/// A wakeup that one thread waits for and anyone may give: another CPU,
/// or an interrupt handler. The waker sets the flag and then wakes the
/// thread; `wait` marks the thread Blocked and then reads the flag (with
/// a full fence between, on both sides), so a wakeup that comes while the
/// waiter is still deciding to sleep is never lost. Poll, select and
/// epoll_wait sleep on one of these (`event::Poller`).
pub struct WakeFlag {
    thread: Arc<Thread>,
    set: AtomicBool,
}

impl WakeFlag {
    /// A flag for the current thread to wait on.
    pub fn for_current() -> WakeFlag {
        WakeFlag { thread: super::current(), set: AtomicBool::new(false) }
    }

    /// Sets the flag; the thread is woken when `batch` is (after the
    /// caller's locks are released). Returns whether the flag was newly
    /// set, i.e. whether the waiter will now look at what changed (a flag
    /// already set means it was going to anyway).
    pub fn wake_into(&self, batch: &mut WakeBatch) -> bool {
        if self.set.swap(true, Ordering::SeqCst) {
            return false;
        }
        batch.add(&self.thread);
        true
    }

    /// Consumes a wakeup, sleeping for one until `deadline` (monotonic
    /// ns) or until a signal interrupts the thread. Only the thread the
    /// flag was made for may wait on it.
    pub fn wait(&self, deadline: Option<u64>) -> Result<(), Interrupted> {
        let me = &self.thread;
        debug_assert!(Arc::ptr_eq(me, &super::current()), "WakeFlag waited on by another thread");
        loop {
            let _irq = IrqGuard::new();
            let outcome = if self.set.swap(false, Ordering::SeqCst) {
                Some(Ok(()))
            } else if me.interrupt_pending() {
                Some(Err(Interrupted::Signal))
            } else if deadline.is_some_and(|d| hal::time::monotonic_ns() >= d) {
                Some(Err(Interrupted::TimedOut))
            } else {
                None
            };
            if let Some(outcome) = outcome {
                if deadline.is_some() {
                    remove_sleeper(me);
                }
                return outcome;
            }
            if !me.block_unless(|| self.set.load(Ordering::SeqCst) || me.interrupt_pending()) {
                continue;
            }
            if let Some(d) = deadline {
                add_sleeper(d, me.clone());
            }
            super::schedule();
        }
    }
}

/// Threads to wake once the caller has released its locks: collected
/// while a lock is held, woken when the batch is flushed or dropped. A
/// notification head wakes its pollers this way, because a woken poller
/// at once takes the head's lock to unsubscribe: woken under it, it would
/// spin there while the waker is still sending the wakeup IPI (under
/// QEMU's TCG that cost half a millisecond per wakeup). Holds a few
/// threads without allocating and wakes any more at once. A thread woken
/// late finds its wait already over, and every wait in the kernel loops
/// until its own condition holds, so a late wakeup is only a spurious one.
pub struct WakeBatch {
    threads: [Option<Arc<Thread>>; WakeBatch::CAPACITY],
    len: usize,
}

impl WakeBatch {
    const CAPACITY: usize = 8;

    pub const fn new() -> WakeBatch {
        WakeBatch { threads: [const { None }; WakeBatch::CAPACITY], len: 0 }
    }

    /// Queues `thread` to be woken (at once if the batch is full).
    pub fn add(&mut self, thread: &Arc<Thread>) {
        if self.len == Self::CAPACITY {
            super::wake(thread);
            return;
        }
        self.threads[self.len] = Some(thread.clone());
        self.len += 1;
    }

    /// Wakes every queued thread.
    pub fn flush(&mut self) {
        for slot in &mut self.threads[..self.len] {
            if let Some(t) = slot.take() {
                super::wake(&t);
            }
        }
        self.len = 0;
    }
}

impl Default for WakeBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for WakeBatch {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Why an interruptible wait ended without its condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupted {
    Signal,
    TimedOut,
}

fn add_sleeper(deadline: u64, thread: Arc<Thread>) {
    let mut sleepers = SLEEPERS.lock();
    // A thread sleeps at most once: an entry left from an earlier wait
    // that ended early is replaced, not kept to wake it spuriously later.
    sleepers.retain(|(_, t)| !Arc::ptr_eq(t, &thread));
    if sleepers.try_reserve(1).is_ok() {
        sleepers.push((deadline, thread));
    }
}

/// Drops `thread`'s deadline after its wait ended some other way, so the
/// entry neither keeps the thread (and its process's memory) alive until
/// the deadline nor wakes it from a later, unrelated wait.
fn remove_sleeper(thread: &Arc<Thread>) {
    SLEEPERS.lock().retain(|(_, t)| !Arc::ptr_eq(t, thread));
}

/// Sleeps until `deadline` (monotonic ns) or until a signal is pending.
pub fn sleep_until_interruptible(deadline: u64) -> Result<(), Interrupted> {
    loop {
        let _irq = IrqGuard::new();
        let me = super::current();
        if hal::time::monotonic_ns() >= deadline {
            return Ok(());
        }
        if me.interrupt_pending() || !me.block_unless_interrupted() {
            remove_sleeper(&me);
            return Err(Interrupted::Signal);
        }
        add_sleeper(deadline, me);
        super::schedule();
    }
}

/// Threads sleeping until a deadline (monotonic ns), checked every tick.
static SLEEPERS: SpinLock<Vec<(u64, Arc<Thread>)>> = SpinLock::new(Vec::new());

/// Blocks the current thread for at least `ns` nanoseconds.
pub fn sleep_ns(ns: u64) {
    let deadline = hal::time::monotonic_ns().saturating_add(ns);
    while hal::time::monotonic_ns() < deadline {
        let _irq = IrqGuard::new();
        {
            let mut sleepers = SLEEPERS.lock();
            if sleepers.try_reserve(1).is_err() {
                drop(sleepers);
                super::yield_now();
                continue;
            }
            let me = super::current();
            me.set_uninterruptible(true);
            me.set_state(State::Blocked);
            sleepers.push((deadline, me));
        }
        super::schedule();
        super::current().set_uninterruptible(false);
    }
}

/// Wakes every sleeper whose deadline has passed (from the timer tick).
pub(super) fn wake_sleepers(now: u64) {
    let mut due: Vec<Arc<Thread>> = Vec::new();
    {
        let mut sleepers = SLEEPERS.lock();
        let mut i = 0;
        while i < sleepers.len() {
            if sleepers[i].0 <= now && due.try_reserve(1).is_ok() {
                due.push(sleepers.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
    }
    for thread in &due {
        super::wake(thread);
    }
}
