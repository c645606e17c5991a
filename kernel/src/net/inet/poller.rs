//! The network thread: polls the stack when a device has work (its
//! driver's waker) or when smoltcp's next timer is due (retransmission,
//! keep-alive, a closing connection's handshake), and after sends through
//! a NIC, which leave their bytes for its poll. Socket calls on the
//! loopback poll the stack themselves, so there the thread only runs
//! timers.
//!
//! The thread publishes the deadline it sleeps until; a poll elsewhere
//! that finds an earlier one wakes it. Both sides read and write the
//! deadline with the stack locked, so no earlier deadline is missed.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::Once;

use crate::sched::{WakeBatch, WakeFlag};

static FLAG: Once<Arc<WakeFlag>> = Once::new();
/// When the thread will next poll by itself (monotonic ns; u64::MAX:
/// never; 0: it is polling now).
static DEADLINE: AtomicU64 = AtomicU64::new(0);

/// The least the thread sleeps when smoltcp asks to be polled again at
/// once but nothing can move (a full transmit ring): no busy loop.
const MIN_SLEEP_NS: u64 = 1_000_000;

/// Wakes the thread (a driver's waker calls this).
pub fn wake() {
    if let Some(f) = FLAG.get() {
        let mut batch = WakeBatch::new();
        f.wake_into(&mut batch);
        batch.flush();
    }
}

/// Called with the stack locked after a poll: `next` is when smoltcp
/// wants the next one.
pub fn schedule(next: u64) {
    let planned = DEADLINE.load(Ordering::Acquire);
    if planned != 0 && next < planned {
        wake();
    }
}

pub fn start() {
    let _ = crate::sched::spawn("netpoll", run);
}

fn run() {
    let flag = match Arc::try_new(WakeFlag::for_current()) {
        Ok(f) => f,
        Err(_) => return,
    };
    FLAG.set(flag.clone());
    loop {
        super::stack::release_deferred();
        let next = {
            let t0 = hal::time::monotonic_ns();
            let Ok(mut st) = super::stack::lock() else { return };
            let t1 = hal::time::monotonic_ns();
            super::pollstats::THREAD_LOCK_WAIT_NS.add(t1.saturating_sub(t0));
            super::pollstats::POLLS_THREAD.add(1);
            DEADLINE.store(0, Ordering::Release);
            st.service_devices();
            // Timed here only: a loopback call's poll is not slowed by
            // the clock reads.
            st.poll();
            super::pollstats::THREAD_POLL_NS.add(hal::time::monotonic_ns().saturating_sub(t1));
            let now = hal::time::monotonic_ns();
            let next = if st.next_poll <= now { now + MIN_SLEEP_NS } else { st.next_poll };
            DEADLINE.store(next, Ordering::Release);
            next
        };
        let _ = flag.wait((next != u64::MAX).then_some(next));
        super::pollstats::THREAD_WAKES.add(1);
    }
}
