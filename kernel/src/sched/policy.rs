//! Scheduling policies and the per-CPU ready queues that honour them.
//!
//! Three classes, tried in this order when a CPU picks its next thread:
//! real-time (SCHED_FIFO and SCHED_RR, priorities 1..99, one FIFO list per
//! priority with a bitmap of the non-empty ones), fair (SCHED_OTHER,
//! SCHED_BATCH and SCHED_IDLE) and finally the CPU's idle thread.
//!
//! Fair threads share the CPU by virtual runtime: time on a CPU scaled by
//! 1024 / weight, with Linux's nice-to-weight table (nice 0 = 1024, nice 19
//! = 15, SCHED_IDLE = 3), and the ready thread with the least virtual
//! runtime runs next. A thread that slept comes back at no less than the
//! queue's minimum less half a scheduling period, so sleeping earns no
//! unbounded credit; one that moves CPU keeps its distance from the
//! minimum of the queue it left.
//!
//! Real-time threads preempt fair ones at once (a wakeup on another CPU
//! sends it a reschedule IPI). SCHED_RR threads rotate among equals every
//! 100 ms; SCHED_FIFO threads run until they block, yield or a higher
//! priority arrives. As on Linux (`sched_rt_runtime_us` = 950000 of every
//! `sched_rt_period_us` = 1000000), real-time threads may use at most
//! 950 ms of each second on a CPU: past that the CPU runs its fair threads
//! first until the period ends, so a spinning FIFO thread cannot starve
//! init or a shell.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::percpu::MAX_CPUS;
use linux_abi::consts::{SCHED_BATCH, SCHED_FIFO, SCHED_IDLE, SCHED_OTHER, SCHED_RR};

use super::thread::Thread;

/// Real-time priorities are 1..=RT_PRIO_MAX.
pub const RT_PRIO_MAX: u32 = 99;
/// SCHED_RR's time slice (Linux's `sched_rr_timeslice_ms` default).
pub const RR_SLICE_NS: u64 = 100_000_000;
/// Real-time budget per period on one CPU (`sched_rt_runtime_us`).
pub const RT_RUNTIME_NS: u64 = 950_000_000;
/// `sched_rt_period_us`.
pub const RT_PERIOD_NS: u64 = 1_000_000_000;
/// The fair class's scheduling period: a woken thread gets at most half of
/// it as credit against the threads that kept running.
const FAIR_PERIOD_NS: u64 = 6_000_000;

/// Linux's `sched_prio_to_weight`, nice -20..19.
const NICE_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501,
    1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];
/// SCHED_IDLE threads' weight (`WEIGHT_IDLEPRIO`).
const IDLE_WEIGHT: u32 = 3;
pub const NICE_0_WEIGHT: u32 = 1024;

/// A thread's policy, as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Other,
    Fifo,
    RoundRobin,
    Batch,
    Idle,
}

impl Policy {
    /// The policy a user number names (without SCHED_RESET_ON_FORK).
    pub fn from_linux(n: u32) -> Option<Policy> {
        match n {
            SCHED_OTHER => Some(Policy::Other),
            SCHED_FIFO => Some(Policy::Fifo),
            SCHED_RR => Some(Policy::RoundRobin),
            SCHED_BATCH => Some(Policy::Batch),
            SCHED_IDLE => Some(Policy::Idle),
            _ => None,
        }
    }

    pub fn to_linux(self) -> u32 {
        match self {
            Policy::Other => SCHED_OTHER,
            Policy::Fifo => SCHED_FIFO,
            Policy::RoundRobin => SCHED_RR,
            Policy::Batch => SCHED_BATCH,
            Policy::Idle => SCHED_IDLE,
        }
    }

    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::RoundRobin)
    }
}

/// The scheduling attributes sched_setattr and setpriority change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParams {
    pub policy: Policy,
    /// 1..=99 for the real-time policies, 0 otherwise.
    pub rt_priority: u32,
    /// -20..=19; kept (but unused) while the policy is real-time.
    pub nice: i32,
    /// SCHED_RESET_ON_FORK: children start as SCHED_OTHER, nice >= 0.
    pub reset_on_fork: bool,
}

impl SchedParams {
    pub const DEFAULT: SchedParams =
        SchedParams { policy: Policy::Other, rt_priority: 0, nice: 0, reset_on_fork: false };

    /// The fair-class weight these parameters give.
    pub fn weight(&self) -> u32 {
        if self.policy == Policy::Idle {
            IDLE_WEIGHT
        } else {
            NICE_WEIGHT[(self.nice.clamp(-20, 19) + 20) as usize]
        }
    }

    /// What a child created by fork or clone starts with.
    pub fn for_child(&self) -> SchedParams {
        if !self.reset_on_fork {
            return *self;
        }
        SchedParams {
            policy: if self.policy.is_realtime() { Policy::Other } else { self.policy },
            rt_priority: 0,
            nice: self.nice.max(0),
            reset_on_fork: false,
        }
    }
}

/// Per CPU: the fair queue's minimum virtual runtime, readable without
/// the queue's lock (a thread moving in from another CPU is rebased on it).
static MIN_VRUNTIME: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

/// Virtual runtime for `ticks` of TSC time at `weight`.
#[inline]
pub fn weighted(ticks: u64, weight: u32) -> u64 {
    if weight == NICE_0_WEIGHT {
        ticks
    } else {
        (u128::from(ticks) * u128::from(NICE_0_WEIGHT) / u128::from(weight.max(1))) as u64
    }
}

/// Half the fair period in TSC ticks, computed once (a 128-bit division
/// on every wakeup showed in the ping-pong benchmarks).
fn sleeper_credit() -> u64 {
    static CREDIT: AtomicU64 = AtomicU64::new(0);
    let c = CREDIT.load(Ordering::Relaxed);
    if c != 0 {
        return c;
    }
    let c = (u128::from(FAIR_PERIOD_NS / 2) * u128::from(hal::time::tsc_hz()) / 1_000_000_000).max(1) as u64;
    CREDIT.store(c, Ordering::Relaxed);
    c
}

/// Which class a queued thread sits in (kept with the entry, so a policy
/// change while it waits is noticed when it is picked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    RealTime(u32),
    Fair,
}

fn class_of(thread: &Thread) -> Class {
    let p = thread.sched_params();
    if p.policy.is_realtime() {
        Class::RealTime(p.rt_priority.clamp(1, RT_PRIO_MAX))
    } else {
        Class::Fair
    }
}

/// The ready threads of one CPU.
pub(super) struct ReadyQueues {
    /// `rt[p - 1]`: ready threads of real-time priority p, in order.
    rt: [VecDeque<Arc<Thread>>; RT_PRIO_MAX as usize],
    /// Bit p - 1 set when `rt[p - 1]` is not empty.
    rt_bitmap: u128,
    fair: VecDeque<Arc<Thread>>,
    min_vruntime: u64,
    len: usize,
    /// Real-time time used in the current period, and the period's start.
    rt_used_ns: u64,
    rt_period_start_ns: u64,
    /// When the last tick was (the time since is what the thread that
    /// ran in between used; ticks may come late under emulation).
    last_tick_ns: u64,
    /// The real-time budget of this period is spent: fair threads first.
    pub(super) rt_throttled: bool,
    rt_throttle_count: u64,
}

impl ReadyQueues {
    pub(super) const fn new() -> ReadyQueues {
        ReadyQueues {
            rt: [const { VecDeque::new() }; RT_PRIO_MAX as usize],
            rt_bitmap: 0,
            fair: VecDeque::new(),
            min_vruntime: 0,
            len: 0,
            rt_used_ns: 0,
            rt_period_start_ns: 0,
            last_tick_ns: 0,
            rt_throttled: false,
            rt_throttle_count: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn highest_rt(&self) -> Option<u32> {
        (self.rt_bitmap != 0).then(|| 128 - self.rt_bitmap.leading_zeros())
    }

    /// Queues `thread`. A real-time thread that was preempted goes to the
    /// head of its priority's list (`front`), as on Linux; everything else
    /// to the tail. Fails only when the queue cannot grow.
    pub(super) fn push(&mut self, thread: Arc<Thread>, front: bool) -> Result<(), Arc<Thread>> {
        match class_of(&thread) {
            Class::RealTime(p) => {
                let q = &mut self.rt[p as usize - 1];
                if q.try_reserve(1).is_err() {
                    return Err(thread);
                }
                if front {
                    q.push_front(thread)
                } else {
                    q.push_back(thread)
                }
                self.rt_bitmap |= 1 << (p - 1);
            }
            Class::Fair => {
                if self.fair.try_reserve(1).is_err() {
                    return Err(thread);
                }
                self.fair.push_back(thread);
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Gives a thread that became ready on this CPU its place among the
    /// fair threads: rebased from the queue it left (`from`), and no more
    /// than half a period behind the others.
    pub(super) fn place(&self, thread: &Thread, from: Option<usize>, here: usize) {
        let mut v = thread.vruntime();
        if let Some(from) = from.filter(|&f| f != here) {
            let old_min = MIN_VRUNTIME[from].load(Ordering::Relaxed);
            v = v.saturating_sub(old_min).saturating_add(self.min_vruntime);
        }
        let floor = self.min_vruntime.saturating_sub(sleeper_credit());
        thread.set_vruntime(v.max(floor));
    }

    fn pop_rt(&mut self, prio: u32) -> Option<Arc<Thread>> {
        let q = &mut self.rt[prio as usize - 1];
        let t = q.pop_front();
        if q.is_empty() {
            self.rt_bitmap &= !(1 << (prio - 1));
        }
        t
    }

    fn pop_fair(&mut self) -> Option<Arc<Thread>> {
        let (i, _) = self.fair.iter().enumerate().min_by_key(|(_, t)| t.vruntime())?;
        let t = self.fair.remove(i)?;
        Some(t)
    }

    /// Takes the thread that should run next, or None (run idle).
    pub(super) fn pop_next(&mut self, cpu: usize) -> Option<Arc<Thread>> {
        loop {
            let t = if self.rt_throttled && !self.fair.is_empty() {
                self.pop_fair()
            } else if let Some(p) = self.highest_rt() {
                self.pop_rt(p)
            } else {
                self.pop_fair()
            }?;
            self.len -= 1;
            // A dead thread is dropped. (One whose policy changed while
            // it waited runs once from its old queue; the change moved it
            // already unless it was in flight between CPUs.)
            if t.state() == super::State::Dead {
                continue;
            }
            if class_of(&t) == Class::Fair {
                self.min_vruntime = self.min_vruntime.max(t.vruntime());
                MIN_VRUNTIME[cpu].store(self.min_vruntime, Ordering::Relaxed);
            }
            return Some(t);
        }
    }

    /// Removes `thread` if it is queued here; true if it was.
    pub(super) fn remove(&mut self, thread: &Thread) -> bool {
        let same = |t: &Arc<Thread>| core::ptr::eq(Arc::as_ptr(t), thread);
        if let Some(i) = self.fair.iter().position(same) {
            self.fair.remove(i);
            self.len -= 1;
            return true;
        }
        let mut bits = self.rt_bitmap;
        while bits != 0 {
            let p = 128 - bits.leading_zeros();
            bits &= !(1 << (p - 1));
            let q = &mut self.rt[p as usize - 1];
            if let Some(i) = q.iter().position(same) {
                q.remove(i);
                if q.is_empty() {
                    self.rt_bitmap &= !(1 << (p - 1));
                }
                self.len -= 1;
                return true;
            }
        }
        false
    }

    /// Takes a ready thread that may run on `cpu`, for an idle CPU's
    /// steal: fair threads from the back first, then real-time ones.
    pub(super) fn steal_for(&mut self, cpu: usize) -> Option<Arc<Thread>> {
        if let Some(i) = self.fair.iter().rposition(|t| t.allowed_on(cpu) && !t.is_idle()) {
            let t = self.fair.remove(i)?;
            self.len -= 1;
            return Some(t);
        }
        let mut bits = self.rt_bitmap;
        while bits != 0 {
            let p = 128 - bits.leading_zeros();
            bits &= !(1 << (p - 1));
            let q = &mut self.rt[p as usize - 1];
            if let Some(i) = q.iter().rposition(|t| t.allowed_on(cpu)) {
                let t = q.remove(i)?;
                if q.is_empty() {
                    self.rt_bitmap &= !(1 << (p - 1));
                }
                self.len -= 1;
                return Some(t);
            }
        }
        None
    }

    /// A fair thread yields: it goes behind every fair thread waiting
    /// here, so one of them runs next (Linux's yield_task_fair skips it).
    pub(super) fn yield_fair(&self, thread: &Thread) {
        if class_of(thread) != Class::Fair {
            return;
        }
        if let Some(most) = self.fair.iter().map(|t| t.vruntime()).max() {
            thread.set_vruntime(thread.vruntime().max(most.saturating_add(1)));
        }
    }

    /// Whether `current` should leave its CPU to a thread waiting here
    /// (a reschedule IPI, or its own policy changed): the idle thread
    /// gives way to anything, a fair thread to a real-time one, a
    /// real-time thread to a higher priority, or to fair threads while
    /// the real-time budget is spent.
    pub(super) fn should_give_way(&self, current: &Thread) -> bool {
        if current.is_idle() {
            return self.len > 0;
        }
        match class_of(current) {
            Class::Fair => self.rt_bitmap != 0 && !self.rt_throttled,
            Class::RealTime(p) => {
                (self.rt_throttled && !self.fair.is_empty()) || self.highest_rt().is_some_and(|q| q > p)
            }
        }
    }

    /// Whether a thread now ready here should take the CPU from `current`
    /// at once (a real-time thread above it), rather than at a tick.
    pub(super) fn preempts(&self, current: &Thread, candidate: &Thread) -> bool {
        if current.is_idle() {
            return true;
        }
        let Class::RealTime(p) = class_of(candidate) else {
            return false;
        };
        if self.rt_throttled {
            return false;
        }
        match class_of(current) {
            Class::Fair => true,
            Class::RealTime(q) => p > q,
        }
    }

    /// Timer tick on this CPU with `current` running: charges real-time
    /// time against the period's budget, turns SCHED_RR slices, and says
    /// whether another thread should run now.
    pub(super) fn tick(&mut self, current: &Thread, now_ns: u64) -> bool {
        let tick_ns = now_ns.saturating_sub(self.last_tick_ns).min(RT_PERIOD_NS);
        self.last_tick_ns = now_ns;
        if now_ns.saturating_sub(self.rt_period_start_ns) >= RT_PERIOD_NS {
            self.rt_period_start_ns = now_ns;
            self.rt_used_ns = 0;
            self.rt_throttled = false;
        }
        if current.is_idle() {
            return self.len > 0;
        }
        match class_of(current) {
            Class::RealTime(p) => {
                self.rt_used_ns += tick_ns;
                if !self.rt_throttled && self.rt_used_ns >= RT_RUNTIME_NS {
                    self.rt_throttled = true;
                    self.rt_throttle_count += 1;
                }
                if self.rt_throttled && !self.fair.is_empty() {
                    return true;
                }
                if self.highest_rt().is_some_and(|q| q > p) {
                    return true;
                }
                if current.sched_params().policy == Policy::RoundRobin && current.rr_tick(tick_ns) {
                    // Slice used up: to the tail, if an equal waits.
                    if !self.rt[p as usize - 1].is_empty() {
                        current.set_requeue_tail();
                        return true;
                    }
                }
                false
            }
            Class::Fair => {
                if self.rt_bitmap != 0 && !self.rt_throttled {
                    return true;
                }
                let Some(least) = self.fair.iter().map(|t| t.vruntime()).min() else {
                    return false;
                };
                least < current.vruntime()
            }
        }
    }

    /// Times the real-time budget ran out on this CPU.
    pub(super) fn throttle_count(&self) -> u64 {
        self.rt_throttle_count
    }
}
