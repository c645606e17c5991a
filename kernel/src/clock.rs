//! The scheduler clock: a periodic local APIC timer interrupt on each CPU.
//!
//! Each tick counts per CPU, wakes sleepers whose deadline passed, and
//! preempts the running thread when another is ready.

use core::sync::atomic::{AtomicU64, Ordering};

use hal::percpu::{PerCpu, MAX_CPUS};

/// Timer interrupts per second.
pub const HZ: u32 = 250;
pub const TIMER_VECTOR: u8 = hal::trap::TIMER_VECTOR;

static TICKS: PerCpu<AtomicU64> = PerCpu::new([const { hal::percpu::CacheAligned(AtomicU64::new(0)) }; MAX_CPUS]);

pub fn init() {
    let wall = hal::rtc::read_unix_seconds() * 1_000_000_000;
    set_realtime_ns(wall);
    hal::trap::register_handler(TIMER_VECTOR, on_tick);
    hal::apic::start_periodic_timer(TIMER_VECTOR, HZ);
}

/// Starts this application processor's tick (the handler is shared).
pub fn init_ap() {
    hal::apic::start_periodic_timer(TIMER_VECTOR, HZ);
}

fn on_tick(_vector: u8) {
    TICKS.get().fetch_add(1, Ordering::Relaxed);
    if hal::percpu::cpu_id() == 0 {
        crate::proc::timer::on_tick(now_ns());
    }
    // Sample user or system time for the thread this tick interrupted
    // (before a preemption switches away from it).
    crate::proc::cputime::on_tick(hal::trap::interrupted_user_mode());
    crate::sched::on_tick();
}

/// Wall-clock nanoseconds at the monotonic clock's zero, from the RTC.
static REALTIME_BASE_NS: AtomicU64 = AtomicU64::new(0);

/// Bumped every time the wall clock is set.
static WALL_CLOCK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// Sleepers waiting for a wall-clock time, woken when the clock is set.
pub static WALL_CLOCK_SET: crate::sched::WaitQueue = crate::sched::WaitQueue::new();

/// Sets the wall clock (clock_settime(CLOCK_REALTIME)) and wakes the
/// sleepers waiting for a wall time, which look again. The vDSO's copy
/// follows, so user mode reads the new time at once. Timers kept on the
/// wall clock (POSIX timers, timerfds) are moved by the caller, the
/// syscall layer's `set_wall_clock`, which knows them all.
pub fn set_realtime_ns(ns: u64) {
    let base = ns.saturating_sub(now_ns());
    REALTIME_BASE_NS.store(base, Ordering::Relaxed);
    crate::vdso::set_realtime_base(base);
    WALL_CLOCK_GENERATION.fetch_add(1, Ordering::AcqRel);
    WALL_CLOCK_SET.wake_all();
}

/// How many times the wall clock has been set.
pub fn wall_clock_generation() -> u64 {
    WALL_CLOCK_GENERATION.load(Ordering::Acquire)
}

/// Nanoseconds since the Unix epoch.
pub fn realtime_ns() -> u64 {
    REALTIME_BASE_NS.load(Ordering::Relaxed) + now_ns()
}

/// Timer ticks seen by this CPU.
#[cfg(feature = "ktest")]
pub fn ticks() -> u64 {
    TICKS.get().load(Ordering::Relaxed)
}

/// Timer ticks summed over all CPUs.
pub fn total_ticks() -> u64 {
    TICKS.iter().map(|t| t.load(Ordering::Relaxed)).sum()
}

/// Nanoseconds since boot.
pub fn now_ns() -> u64 {
    hal::time::monotonic_ns()
}
