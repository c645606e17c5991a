//! The readiness core (`event`): interest filtering, exclusive
//! observers, unsubscribing on drop, and pollers woken across threads
//! and CPUs with no lost wakeup.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use linux_abi::errno::Errno;

use super::{KTest, TestResult};
use crate::ensure;
use crate::event::{block_on, Events, Observer, Pollee, Poller};
use crate::sched::{self, Interrupted, WakeBatch};

pub const TESTS: &[KTest] = &[
    KTest { name: "event::notify_reaches_interested_observers", run: notify_reaches_interested_observers },
    KTest { name: "event::exclusive_observers_stop_at_first_waker", run: exclusive_observers_stop_at_first_waker },
    KTest { name: "event::poller_wakeup_is_not_lost", run: poller_wakeup_is_not_lost },
    KTest { name: "event::poller_times_out", run: poller_times_out },
    KTest { name: "event::block_on_waits_for_the_state", run: block_on_waits_for_the_state },
    KTest { name: "event::ping_pong_across_cpus", run: ping_pong_across_cpus },
];

/// Counts its calls; says it woke someone when `wakes` is set.
struct Counter {
    calls: AtomicUsize,
    wakes: bool,
}

impl Counter {
    fn new(wakes: bool) -> Arc<Counter> {
        Arc::new(Counter { calls: AtomicUsize::new(0), wakes })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Observer for Counter {
    fn on_events(&self, _events: Events, _wakeups: &mut WakeBatch) -> bool {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.wakes
    }
}

fn err(e: Errno) -> alloc::string::String {
    alloc::string::ToString::to_string(e.name())
}

fn notify_reaches_interested_observers() -> TestResult {
    let pollee = Pollee::new();
    pollee.notify(Events::IN); // nobody yet: nothing to do
    let reader = Counter::new(true);
    let sub = pollee.subscribe(reader.clone(), Events::IN | Events::HUP, false).map_err(err)?;
    pollee.notify(Events::OUT);
    ensure!(reader.calls() == 0, "an OUT notification reached an IN observer");
    pollee.notify(Events::READABLE);
    ensure!(reader.calls() == 1);
    pollee.notify(Events::EMPTY);
    ensure!(reader.calls() == 2, "an empty mask must reach everyone");
    ensure!(pollee.observers() == 1);
    drop(sub);
    ensure!(pollee.observers() == 0);
    pollee.notify(Events::IN);
    ensure!(reader.calls() == 2, "a dropped subscription was still told");
    ensure!(Arc::strong_count(&reader) == 1, "the head kept the observer");
    Ok(())
}

fn exclusive_observers_stop_at_first_waker() -> TestResult {
    let pollee = Pollee::new();
    let plain = Counter::new(false);
    let idle = Counter::new(false); // exclusive, but wakes nobody
    let first = Counter::new(true);
    let second = Counter::new(true);
    let _s1 = pollee.subscribe(idle.clone(), Events::IN, true).map_err(err)?;
    let s2 = pollee.subscribe(first.clone(), Events::IN, true).map_err(err)?;
    let _s3 = pollee.subscribe(second.clone(), Events::IN, true).map_err(err)?;
    let _s4 = pollee.subscribe(plain.clone(), Events::IN, false).map_err(err)?;
    pollee.notify(Events::IN);
    ensure!(plain.calls() == 1, "non-exclusive observers are all told");
    ensure!(idle.calls() == 1 && first.calls() == 1, "exclusive observers until one wakes");
    ensure!(second.calls() == 0, "an exclusive observer after the waker was told");
    drop(s2);
    pollee.notify(Events::IN);
    ensure!(second.calls() == 1, "the next exclusive observer takes over");
    Ok(())
}

fn poller_wakeup_is_not_lost() -> TestResult {
    // Notified before the wait: the wait returns at once.
    let pollee = Pollee::new();
    let poller = Poller::new().map_err(err)?;
    let _sub = pollee.subscribe(poller.observer().clone(), Events::IN, false).map_err(err)?;
    pollee.notify(Events::IN);
    let deadline = crate::clock::now_ns() + 2_000_000_000;
    ensure!(poller.wait(Some(deadline)).is_ok(), "a wakeup given before the wait was lost");
    // From another thread while this one sleeps.
    let pollee = Arc::new(Pollee::new());
    let poller = Poller::new().map_err(err)?;
    let _sub = pollee.subscribe(poller.observer().clone(), Events::IN, false).map_err(err)?;
    let other = pollee.clone();
    let t = sched::spawn("notifier", move || {
        sched::sleep_ns(5_000_000);
        other.notify(Events::IN);
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let woke = poller.wait(Some(crate::clock::now_ns() + 2_000_000_000));
    sched::join(&t);
    ensure!(woke.is_ok(), "wait ended with {woke:?}");
    Ok(())
}

fn poller_times_out() -> TestResult {
    let pollee = Pollee::new();
    let poller = Poller::new().map_err(err)?;
    let _sub = pollee.subscribe(poller.observer().clone(), Events::IN, false).map_err(err)?;
    let start = crate::clock::now_ns();
    let r = poller.wait(Some(start + 10_000_000));
    ensure!(r == Err(Interrupted::TimedOut), "wait gave {r:?}");
    ensure!(crate::clock::now_ns() >= start + 10_000_000, "woke before the deadline");
    Ok(())
}

struct Flagged {
    pollee: Pollee,
    ready: AtomicBool,
}

fn block_on_waits_for_the_state() -> TestResult {
    let shared = Arc::new(Flagged { pollee: Pollee::new(), ready: AtomicBool::new(false) });
    let other = shared.clone();
    let t = sched::spawn("setter", move || {
        sched::sleep_ns(5_000_000);
        other.ready.store(true, Ordering::SeqCst);
        other.pollee.notify(Events::IN);
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let r = block_on(&shared.pollee, Events::IN, || {
        if shared.ready.load(Ordering::SeqCst) {
            Ok(7)
        } else {
            Err(Errno::EAGAIN)
        }
    });
    sched::join(&t);
    ensure!(r == Ok(7), "block_on gave {r:?}");
    ensure!(shared.pollee.observers() == 0, "block_on left its subscription behind");
    Ok(())
}

/// Two threads hand a token back and forth through two heads, pinned to
/// different CPUs when there are two: every handoff is a notify racing
/// the other side going to sleep.
fn ping_pong_across_cpus() -> TestResult {
    const ROUNDS: usize = 2000;
    struct Court {
        pollees: [Pollee; 2],
        turn: AtomicUsize,
    }
    let court = Arc::new(Court { pollees: [Pollee::new(), Pollee::new()], turn: AtomicUsize::new(0) });
    let online = sched::online_cpus();
    let cpus: Vec<usize> = (0..64).filter(|c| online & (1 << c) != 0).collect();
    let mut threads = Vec::new();
    for side in 0..2 {
        let court = court.clone();
        let cpu = cpus[side % cpus.len()];
        let t = sched::spawn_configured(
            "pingpong",
            |t| {
                let _ = sched::set_affinity(t, 1 << cpu);
            },
            move || {
                for round in 0..ROUNDS {
                    let mine = round * 2 + side;
                    let _ = block_on(&court.pollees[side], Events::IN, || {
                        if court.turn.load(Ordering::SeqCst) == mine {
                            Ok(())
                        } else {
                            Err(Errno::EAGAIN)
                        }
                    });
                    court.turn.store(mine + 1, Ordering::SeqCst);
                    court.pollees[1 - side].notify(Events::IN);
                }
            },
        )
        .map_err(|e| alloc::format!("{e:?}"))?;
        threads.push(t);
    }
    for t in &threads {
        sched::join(t);
    }
    ensure!(court.turn.load(Ordering::SeqCst) == 2 * ROUNDS);
    Ok(())
}
