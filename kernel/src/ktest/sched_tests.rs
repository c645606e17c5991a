//! Threads, preemption, wait queues, sleep and the sleeping mutex.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{KTest, TestResult};
use crate::ensure;
use crate::sched::{self, WaitQueue};
use crate::sync::Mutex;

pub const TESTS: &[KTest] = &[
    KTest { name: "sched::spawn_and_join", run: spawn_and_join },
    KTest { name: "sched::preemption", run: preemption },
    KTest { name: "sched::wait_queue_wakeup", run: wait_queue_wakeup },
    KTest { name: "sched::sleep_orders_wakeups", run: sleep_orders_wakeups },
    KTest { name: "sched::mutex_contention", run: mutex_contention },
    KTest { name: "sched::threads_are_reaped", run: threads_are_reaped },
];

fn spawn_and_join() -> TestResult {
    let value = Arc::new(AtomicU64::new(0));
    let v = value.clone();
    let t = sched::spawn("worker", move || v.store(42, Ordering::SeqCst)).map_err(|e| alloc::format!("{e:?}"))?;
    sched::join(&t);
    ensure!(value.load(Ordering::SeqCst) == 42);
    ensure!(t.state() == sched::State::Dead);
    Ok(())
}

fn preemption() -> TestResult {
    // Two threads that never yield both make progress only if the timer
    // preempts them.
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let mut threads = Vec::new();
    for i in 0..2 {
        let (stop, counters) = (stop.clone(), counters.clone());
        threads.push(
            sched::spawn("spinner", move || {
                while !stop.load(Ordering::Relaxed) {
                    counters[i].fetch_add(1, Ordering::Relaxed);
                }
            })
            .map_err(|e| alloc::format!("{e:?}"))?,
        );
    }
    let start = crate::clock::now_ns();
    while counters.iter().any(|c| c.load(Ordering::Relaxed) == 0) && crate::clock::now_ns() - start < 2_000_000_000 {
        sched::sleep_ns(5_000_000);
    }
    stop.store(true, Ordering::Relaxed);
    for t in &threads {
        sched::join(t);
    }
    let (a, b) = (counters[0].load(Ordering::Relaxed), counters[1].load(Ordering::Relaxed));
    ensure!(a > 0 && b > 0, "spinners did not both run: {a} {b}");
    Ok(())
}

fn wait_queue_wakeup() -> TestResult {
    static QUEUE: WaitQueue = WaitQueue::new();
    static FLAG: AtomicBool = AtomicBool::new(false);
    FLAG.store(false, Ordering::SeqCst);
    let woke = Arc::new(AtomicBool::new(false));
    let w = woke.clone();
    let t = sched::spawn("waiter", move || {
        QUEUE.wait_until(|| FLAG.load(Ordering::SeqCst));
        w.store(true, Ordering::SeqCst);
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    // Wait for the waiter to queue itself (however slowly its CPU runs).
    let start = crate::clock::now_ns();
    while QUEUE.len() == 0 && crate::clock::now_ns() - start < 2_000_000_000 {
        sched::sleep_ns(1_000_000);
    }
    ensure!(!woke.load(Ordering::SeqCst), "waiter ran before the condition held");
    ensure!(QUEUE.len() == 1, "waiter not queued ({} waiting)", QUEUE.len());
    FLAG.store(true, Ordering::SeqCst);
    ensure!(QUEUE.wake_all() == 1);
    sched::join(&t);
    ensure!(woke.load(Ordering::SeqCst));
    Ok(())
}

fn sleep_orders_wakeups() -> TestResult {
    // (thread, when it began to sleep, when it woke), in wake-up order.
    let order = Arc::new(hal::sync::SpinLock::new(Vec::new()));
    let mut threads = Vec::new();
    // Absolute deadlines from one base, with room for the threads to start
    // late (a loaded host can stall a virtual CPU for tens of ms).
    let base = crate::clock::now_ns() + 100_000_000;
    let deadlines = [60u64, 20, 40].map(|ms| base + ms * 1_000_000);
    for (i, deadline) in deadlines.into_iter().enumerate() {
        let order = order.clone();
        threads.push(
            sched::spawn("sleeper", move || {
                let slept_at = crate::clock::now_ns();
                let _ = sched::sleep_until_interruptible(deadline);
                order.lock().push((i, slept_at, crate::clock::now_ns()));
            })
            .map_err(|e| alloc::format!("{e:?}"))?,
        );
    }
    for t in &threads {
        sched::join(t);
    }
    let got = order.lock().clone();
    for &(i, _, woke) in &got {
        ensure!(woke >= deadlines[i], "thread {i} woke {} ns before its deadline", deadlines[i] - woke);
    }
    // The order is the timer's only if every thread was asleep before the
    // first deadline (a host stall past it lets a late starter find its
    // deadline gone and return at once, ahead of an earlier one) and each
    // recorded its wake-up within the 20 ms before the next deadline: at
    // -smp 4 a virtual CPU stalled between a wake-up and the record lets
    // a later sleeper record first (seen once: [1, 0, 2]).
    let asleep_in_time = got.iter().all(|&(_, slept_at, _)| slept_at < deadlines[1]);
    let recorded_in_time = got.iter().all(|&(i, _, woke)| woke < deadlines[i] + 20_000_000);
    if asleep_in_time && recorded_in_time {
        let woke: Vec<usize> = got.iter().map(|&(i, _, _)| i).collect();
        ensure!(woke == [1, 2, 0], "woke in order {woke:?}");
    } else {
        log::info!("sched::sleep_orders_wakeups: a sleeper started or recorded late (host stall); order not judged");
    }
    Ok(())
}

fn mutex_contention() -> TestResult {
    const THREADS: usize = 8;
    const ROUNDS: u64 = 2000;
    let counter = Arc::new(Mutex::new(0u64));
    let mut threads = Vec::new();
    for _ in 0..THREADS {
        let counter = counter.clone();
        threads.push(
            sched::spawn("incrementer", move || {
                for i in 0..ROUNDS {
                    let mut g = counter.lock();
                    let v = *g;
                    if i % 64 == 0 {
                        // Hold the lock across a switch so others must sleep on it.
                        sched::yield_now();
                    }
                    *g = v + 1;
                }
            })
            .map_err(|e| alloc::format!("{e:?}"))?,
        );
    }
    for t in &threads {
        sched::join(t);
    }
    let total = *counter.lock();
    ensure!(total == THREADS as u64 * ROUNDS, "lost updates: {total}");
    Ok(())
}

fn threads_are_reaped() -> TestResult {
    // Warm-up so that heap growth is not counted.
    let t = sched::spawn("warmup", || {}).map_err(|e| alloc::format!("{e:?}"))?;
    sched::join(&t);
    drop(t);
    sched::yield_now();
    let frames_before = hal::mm::free_frame_count();
    let threads_before = sched::live_threads();
    for _ in 0..200 {
        let t = sched::spawn("short", || {}).map_err(|e| alloc::format!("{e:?}"))?;
        sched::join(&t);
    }
    // A dead thread is released by the next switch on the CPU it died
    // on, which with several CPUs may come a moment after `join`.
    let start = crate::clock::now_ns();
    while (sched::live_threads() > threads_before || hal::mm::free_frame_count() < frames_before)
        && crate::clock::now_ns() - start < 2_000_000_000
    {
        sched::sleep_ns(1_000_000);
    }
    let live = sched::live_threads();
    ensure!(live <= threads_before, "{} threads not reaped", live - threads_before);
    let leaked = frames_before.saturating_sub(hal::mm::free_frame_count());
    ensure!(leaked == 0, "{leaked} frames leaked by 200 threads");
    Ok(())
}
