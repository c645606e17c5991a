//! Kernel timers: a callback at a deadline on the monotonic clock, run
//! from CPU 0's tick (interrupt context, so a callback may only do what
//! an interrupt handler may: take spin locks, notify a `Pollee`).
//!
//! The list is sorted latest first, so the tick looks at its last
//! element only; arming inserts in order (allocation, in the caller's
//! context). A timer holds its target weakly: a target that is gone by
//! its deadline is skipped.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::SpinLock;

/// What a timer calls at its deadline.
pub trait Expiry: Send + Sync {
    /// `now` is the tick's monotonic time (ns), at or after the deadline.
    fn expire(&self, id: u64, now: u64);
}

struct Armed {
    deadline: u64,
    id: u64,
    target: Weak<dyn Expiry>,
}

/// Armed timers, latest deadline first.
static TIMERS: SpinLock<Vec<Armed>> = SpinLock::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The timer could not be armed for want of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoMemory;

/// Arms a timer calling `target.expire(id, now)` at `deadline`; returns
/// its id, for `disarm` and for the target to tell its timers apart.
pub fn arm(deadline: u64, target: Weak<dyn Expiry>) -> Result<u64, NoMemory> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut timers = TIMERS.lock();
    timers.try_reserve(1).map_err(|_| NoMemory)?;
    let at = timers.partition_point(|t| t.deadline > deadline);
    timers.insert(at, Armed { deadline, id, target });
    Ok(id)
}

/// Disarms timer `id` (nothing happens if it already fired).
pub fn disarm(id: u64) {
    let removed = {
        let mut timers = TIMERS.lock();
        timers.iter().position(|t| t.id == id).map(|i| timers.remove(i))
    };
    drop(removed);
}

/// Runs the callbacks of every timer due at `now` (CPU 0's tick).
pub(super) fn fire(now: u64) {
    const BATCH: usize = 8;
    loop {
        let mut due: [Option<(u64, Weak<dyn Expiry>)>; BATCH] = [const { None }; BATCH];
        let mut n = 0;
        {
            let mut timers = TIMERS.lock();
            while n < BATCH && timers.last().is_some_and(|t| t.deadline <= now) {
                if let Some(t) = timers.pop() {
                    due[n] = Some((t.id, t.target));
                    n += 1;
                }
            }
        }
        if n == 0 {
            return;
        }
        for (id, target) in due.iter_mut().take(n).filter_map(Option::take) {
            let target: Option<Arc<dyn Expiry>> = target.upgrade();
            if let Some(target) = target {
                target.expire(id, now);
            }
        }
        if n < BATCH {
            return;
        }
    }
}
