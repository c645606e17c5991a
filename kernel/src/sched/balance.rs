//! Which CPU runs what: placing new and woken threads, idle CPUs stealing
//! work, CPU affinity, and the reschedule IPIs that tell a CPU about
//! threads queued for it.
//!
//! The policy is simple and cheap: a thread goes where it ran last if that
//! CPU is idle, else to any idle CPU it may use, else back where it ran (a
//! new thread instead goes to the least loaded CPU). Queues still drift
//! out of balance, so a CPU about to halt steals one thread from the
//! busiest queue first; idle CPUs retry on every timer tick. Per-CPU load
//! and idle flags are read without locks: a stale value only costs a less
//! than ideal choice, never a lost thread, because enqueueing and the idle
//! check both happen under the target queue's lock.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use hal::percpu::MAX_CPUS;

use super::thread::Thread;
use super::RUN_QUEUES;

/// CPUs whose scheduler runs (bit n = CPU n).
static ONLINE: AtomicU64 = AtomicU64::new(0);
/// Per CPU: halted (or about to halt) in the idle loop.
static IDLE: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];
/// Per CPU: threads running or ready there, roughly.
static LOAD: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(0) }; MAX_CPUS];
static STEALS: AtomicU64 = AtomicU64::new(0);

pub(super) fn cpu_online(cpu: usize) {
    ONLINE.fetch_or(1 << cpu, Ordering::SeqCst);
}

/// The CPUs that run threads, as a mask (bit n = CPU n).
pub fn online_cpus() -> u64 {
    ONLINE.load(Ordering::SeqCst)
}

pub(super) fn set_idle(idle: bool) {
    IDLE[hal::percpu::cpu_id()].store(idle, Ordering::SeqCst);
}

pub(super) fn set_load(cpu: usize, load: usize) {
    LOAD[cpu].store(load, Ordering::Relaxed);
}

/// Makes `cpu` notice a thread queued for it: an idle CPU is halted and
/// needs an interrupt; a busy one picks it up at its next tick, unless
/// the thread must `preempt` what runs there now (then this CPU switches
/// at its next preemption point, another gets an IPI).
pub(super) fn kick(cpu: usize, preempt: bool) {
    LOAD[cpu].fetch_add(1, Ordering::Relaxed);
    if cpu == hal::percpu::cpu_id() {
        if preempt {
            super::NEED_RESCHED.get().store(true, Ordering::Relaxed);
        }
    } else if preempt || IDLE[cpu].load(Ordering::SeqCst) {
        hal::smp::send_reschedule(cpu);
    }
}

fn usable_cpus(thread: &Thread) -> u64 {
    let usable = thread.affinity() & online_cpus();
    if usable == 0 {
        // Affinity only names CPUs that are gone: run anywhere rather
        // than nowhere.
        online_cpus()
    } else {
        usable
    }
}

fn cpus(mask: u64) -> impl Iterator<Item = usize> {
    (0..MAX_CPUS).filter(move |c| mask & (1 << c) != 0)
}

/// Where a new thread should start: the least loaded CPU it may use,
/// this one on a tie.
pub(super) fn place_new(thread: &Thread) -> usize {
    let usable = usable_cpus(thread);
    let here = hal::percpu::cpu_id();
    let load = |c: usize| (LOAD[c].load(Ordering::Relaxed), usize::from(c != here));
    cpus(usable).min_by_key(|&c| load(c)).unwrap_or(here)
}

/// Where a thread that just became ready should run.
pub(super) fn place_woken(thread: &Thread) -> usize {
    let usable = usable_cpus(thread);
    let last = thread.last_cpu();
    let last_ok = usable & (1 << last) != 0;
    if last_ok && IDLE[last].load(Ordering::SeqCst) {
        return last;
    }
    if let Some(idle) = cpus(usable).find(|&c| IDLE[c].load(Ordering::SeqCst)) {
        return idle;
    }
    if last_ok {
        return last;
    }
    cpus(usable).min_by_key(|&c| LOAD[c].load(Ordering::Relaxed)).unwrap_or(last)
}

/// Moves one ready thread from the busiest other CPU to this one; true if
/// it did. Called by the idle loop with interrupts off.
pub(super) fn steal() -> bool {
    let here = hal::percpu::cpu_id();
    let victims = online_cpus() & !(1 << here);
    let Some(victim) =
        cpus(victims).filter(|&c| LOAD[c].load(Ordering::Relaxed) > 1).max_by_key(|&c| LOAD[c].load(Ordering::Relaxed))
    else {
        return false;
    };
    let stolen: Option<Arc<Thread>> = {
        // Never wait for another CPU's queue here: it may be waiting for us.
        let Some(mut rq) = RUN_QUEUES.get_for(victim).try_lock() else {
            return false;
        };
        let stolen = rq.ready.steal_for(here);
        let load = rq.load();
        LOAD[victim].store(load, Ordering::Relaxed);
        stolen
    };
    let Some(thread) = stolen else {
        return false;
    };
    let from = thread.cpu.swap(here, Ordering::Relaxed);
    let mut rq = RUN_QUEUES.get().lock();
    rq.ready.place(&thread, Some(from), here);
    if let Err(thread) = rq.ready.push(thread, false) {
        // Give it back rather than lose it.
        drop(rq);
        let _ = super::enqueue(victim, &thread);
        return false;
    }
    LOAD[here].store(rq.load(), Ordering::Relaxed);
    STEALS.fetch_add(1, Ordering::Relaxed);
    true
}

/// Threads moved by idle CPUs since boot.
pub fn steals() -> u64 {
    STEALS.load(Ordering::Relaxed)
}

/// Restricts `thread` to the CPUs in `mask` (bit n = CPU n). Fails when
/// the mask names no CPU that runs. A running thread that may no longer
/// stay where it is moves at its next switch; the caller's own thread
/// moves before this returns.
pub fn set_affinity(thread: &Arc<Thread>, mask: u64) -> Result<(), ()> {
    if mask & online_cpus() == 0 {
        return Err(());
    }
    thread.set_affinity_mask(mask);
    let me = super::current();
    if Arc::ptr_eq(&me, thread) {
        if !thread.allowed_on(hal::percpu::cpu_id()) {
            drop(me);
            super::yield_now();
        }
    } else if !thread.allowed_on(thread.last_cpu()) {
        // Running where it may no longer run (perhaps in user mode, where
        // nothing else would stop it): that CPU switches it away at once,
        // as Linux moves it with a stopper.
        super::kick_running(thread);
    }
    Ok(())
}
