//! Wait queues and timed sleep.
//!
//! A thread waits by putting itself on a queue and blocking; a waker takes
//! it off and makes it ready. The condition is checked under the queue's
//! lock, and wakers change the condition before they take that lock, so a
//! wakeup cannot slip in between the check and the block.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicUsize, Ordering};

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
                if !waiters.iter().any(|t| Arc::ptr_eq(t, &me)) {
                    if waiters.try_reserve(1).is_err() {
                        drop(waiters);
                        super::yield_now();
                        continue;
                    }
                    waiters.push_back(me.clone());
                    self.publish(&waiters);
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
