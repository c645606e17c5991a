//! Counters of what the stack's polls cost, for /proc/kiln/netpoll: how
//! often it is polled and by whom, how many smoltcp rounds and frames,
//! how many sockets each round's walks cover, how many watchers a poll
//! refreshes, and the network thread's time waiting for the stack lock
//! and holding it to poll (timed there only: a loopback call's poll is
//! not slowed by clock reads). They say where a request's
//! time goes with many connections (docs/networking.md, "Many
//! connections"); relaxed atomics, a few per poll.

use alloc::string::String;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicU64::new(0))
    }
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }
    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

pub static POLLS_THREAD: Counter = Counter::new();
pub static POLLS_ALL: Counter = Counter::new();
pub static THREAD_POLL_NS: Counter = Counter::new();
pub static THREAD_LOCK_WAIT_NS: Counter = Counter::new();
pub static THREAD_WAKES: Counter = Counter::new();
pub static ROUNDS: Counter = Counter::new();
pub static ROUND_SOCKETS: Counter = Counter::new();
pub static FRAMES_IN: Counter = Counter::new();
pub static REFRESHED: Counter = Counter::new();
pub static PARKED: Counter = Counter::new();
pub static UNPARKED: Counter = Counter::new();

pub fn register() {
    crate::fs::procfs::register("kiln/netpoll", |_| text());
}

fn text() -> String {
    let mut s = String::new();
    let rows: [(&str, &Counter); 11] = [
        ("polls_thread", &POLLS_THREAD),
        ("polls_all", &POLLS_ALL),
        ("thread_poll_ns", &THREAD_POLL_NS),
        ("thread_lock_wait_ns", &THREAD_LOCK_WAIT_NS),
        ("thread_wakes", &THREAD_WAKES),
        ("rounds", &ROUNDS),
        ("round_sockets", &ROUND_SOCKETS),
        ("frames_in", &FRAMES_IN),
        ("watchers_refreshed", &REFRESHED),
        ("parked", &PARKED),
        ("unparked", &UNPARKED),
    ];
    for (name, c) in rows {
        let _ = writeln!(s, "{name} {}", c.get());
    }
    s
}
