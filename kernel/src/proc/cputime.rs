//! CPU time: user and system time, CPU-time clocks, and the limits and
//! timers that count CPU time (ITIMER_VIRTUAL/PROF, POSIX timers on CPU
//! clocks, RLIMIT_CPU).
//!
//! As on Linux without virtual CPU accounting, two sources are combined.
//! The scheduler keeps each thread's exact time on a CPU at context
//! switches (`sched::Thread::cpu_tsc`): that is the thread and process
//! CPU clock. The timer tick samples, on every CPU, whether it interrupted
//! a user thread in user or kernel mode, and counts one tick of that kind
//! for the thread and its process. Reports of user and system time scale
//! the exact time by the sampled ratio (`kiln_util::cputime::adjust`), so
//! the system-call path reads no clock at all. ITIMER_VIRTUAL/PROF and
//! RLIMIT_CPU count the samples themselves, as Linux's do.
//!
//! The tick also runs the process's CPU-time timers, but only for a
//! process that has one armed or a finite RLIMIT_CPU.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::SpinLock;
use kiln_util::cputime::{adjust, PrevCputime};
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use super::timer::PosixTimer;
use super::{Pid, Process, Task};

/// Nanoseconds one tick stands for.
pub const TICK_NS: u64 = 1_000_000_000 / crate::clock::HZ as u64;

/// The tick samples of one thread or of a whole process, and the last
/// user/system split reported for it.
pub struct CpuAccount {
    user_ticks: AtomicU64,
    system_ticks: AtomicU64,
    prev: SpinLock<PrevCputime>,
}

impl Default for CpuAccount {
    fn default() -> Self {
        CpuAccount {
            user_ticks: AtomicU64::new(0),
            system_ticks: AtomicU64::new(0),
            prev: SpinLock::new(PrevCputime::default()),
        }
    }
}

impl CpuAccount {
    fn sample(&self, user: bool) {
        let counter = if user { &self.user_ticks } else { &self.system_ticks };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// (user, system) ticks sampled so far.
    pub fn ticks(&self) -> (u64, u64) {
        (self.user_ticks.load(Ordering::Relaxed), self.system_ticks.load(Ordering::Relaxed))
    }

    /// Splits the exact runtime `rtime` (ns) into (user, system) ns.
    fn split(&self, rtime: u64) -> (u64, u64) {
        let (u, s) = self.ticks();
        adjust(rtime, u, s, &mut self.prev.lock())
    }
}

/// A thread's (user, system) time in ns.
pub fn thread_times(t: &Task) -> (u64, u64) {
    t.cpu.split(t.cpu_ns())
}

/// A process's (user, system) time in ns, exited threads included.
pub fn process_times(p: &Process) -> (u64, u64) {
    p.cpu.split(p.cpu_ns())
}

/// The (user, system) time in ns of a process's reaped children (and
/// theirs), for RUSAGE_CHILDREN and times().
pub fn children_times(p: &Process) -> (u64, u64) {
    *p.children_cpu.lock()
}

/// A child is reaped: its times and its children's go to `parent`.
pub fn account_reaped(parent: &Process, child: &Process) {
    let (u, s) = process_times(child);
    let (cu, cs) = children_times(child);
    let mut c = parent.children_cpu.lock();
    c.0 = c.0.saturating_add(u).saturating_add(cu);
    c.1 = c.1.saturating_add(s).saturating_add(cs);
}

/// Which time a CPU clock counts (Linux's CPUCLOCK_PROF/VIRT/SCHED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuKind {
    /// User + system samples.
    Prof,
    /// User samples.
    Virt,
    /// Exact runtime.
    Sched,
}

/// A CPU clock: of a whole process or of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuTarget {
    Process(Pid),
    Thread(Pid),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuClock {
    pub target: CpuTarget,
    pub kind: CpuKind,
}

const CPUCLOCK_PERTHREAD: i32 = 4;
const CPUCLOCK_CLOCK_MASK: i32 = 3;

/// Decodes a clock id that names a CPU clock: CLOCK_PROCESS_CPUTIME_ID,
/// CLOCK_THREAD_CPUTIME_ID, or the negative ids of clock_getcpuclockid
/// and pthread_getcpuclockid (`~pid << 3 | per-thread << 2 | kind`).
/// `Ok(None)`: not a CPU clock; EINVAL: a CPU clock id naming nothing
/// (Linux's answer, which libc turns into ESRCH). A thread clock must be
/// of the caller's own process; `for_gettime` allows any process.
pub fn decode_clock(clock: i32, me: &Task, for_gettime: bool) -> Result<Option<CpuClock>, Errno> {
    const PROCESS_CPUTIME: i32 = linux_abi::consts::CLOCK_PROCESS_CPUTIME_ID as i32;
    const THREAD_CPUTIME: i32 = linux_abi::consts::CLOCK_THREAD_CPUTIME_ID as i32;
    match clock {
        PROCESS_CPUTIME => {
            return Ok(Some(CpuClock { target: CpuTarget::Process(me.process.pid), kind: CpuKind::Sched }))
        }
        THREAD_CPUTIME => return Ok(Some(CpuClock { target: CpuTarget::Thread(me.tid()), kind: CpuKind::Sched })),
        c if c >= 0 => return Ok(None),
        _ => {}
    }
    // The low three bits == 3 name a dynamic (fd) clock, not a CPU one.
    if clock & 7 == 3 {
        return Err(Errno::EINVAL);
    }
    let kind = match clock & CPUCLOCK_CLOCK_MASK {
        0 => CpuKind::Prof,
        1 => CpuKind::Virt,
        2 => CpuKind::Sched,
        _ => return Err(Errno::EINVAL),
    };
    let pid = !(clock >> 3);
    // The id is the caller's pid namespace's; tables hold global ids.
    let pid = if pid == 0 { 0 } else { me.process.pid_ns.global(pid).ok_or(Errno::EINVAL)? };
    let thread = clock & CPUCLOCK_PERTHREAD != 0;
    let target = if thread {
        let tid = if pid == 0 { me.tid() } else { pid };
        let t = super::find_task(tid).ok_or(Errno::EINVAL)?;
        if !Arc::ptr_eq(&t.process, &me.process) {
            return Err(Errno::EINVAL);
        }
        CpuTarget::Thread(tid)
    } else {
        let pid = if pid == 0 { me.process.pid } else { pid };
        match super::find_process(pid) {
            Some(_) => CpuTarget::Process(pid),
            // A thread id names its process's clock for clock_gettime only.
            None if for_gettime && super::find_task(pid).is_some() => CpuTarget::Thread(pid),
            None => return Err(Errno::EINVAL),
        }
    };
    Ok(Some(CpuClock { target, kind }))
}

fn sample_ns(ticks: u64) -> u64 {
    ticks.saturating_mul(TICK_NS)
}

fn task_clock(t: &Task, kind: CpuKind) -> u64 {
    let (u, s) = t.cpu.ticks();
    match kind {
        CpuKind::Sched => t.cpu_ns(),
        CpuKind::Prof => sample_ns(u + s),
        CpuKind::Virt => sample_ns(u),
    }
}

fn process_clock(p: &Process, kind: CpuKind) -> u64 {
    let (u, s) = p.cpu.ticks();
    match kind {
        CpuKind::Sched => p.cpu_ns(),
        CpuKind::Prof => sample_ns(u + s),
        CpuKind::Virt => sample_ns(u),
    }
}

/// The clock's reading in ns; EINVAL once its process or thread is gone.
pub fn read_clock(clock: CpuClock) -> Result<u64, Errno> {
    match clock.target {
        CpuTarget::Process(pid) => {
            let p = super::find_process(pid).ok_or(Errno::EINVAL)?;
            Ok(process_clock(&p, clock.kind))
        }
        CpuTarget::Thread(tid) => {
            let t = super::find_task(tid).ok_or(Errno::EINVAL)?;
            // A thread id given where a process clock was asked for.
            Ok(task_clock(&t, clock.kind))
        }
    }
}

/// The process whose ticks advance `clock`.
fn measured_process(clock: CpuClock) -> Option<Arc<Process>> {
    match clock.target {
        CpuTarget::Process(pid) => super::find_process(pid),
        CpuTarget::Thread(tid) => super::find_task(tid).map(|t| t.process.clone()),
    }
}

/// ITIMER_VIRTUAL and ITIMER_PROF of a process: absolute expiry on its
/// virt/prof clock (0: disarmed) and reload interval, in ns.
#[derive(Clone, Copy, Default)]
pub struct CpuItimer {
    expires: u64,
    interval: u64,
}

fn itimer_kind(which: usize) -> CpuKind {
    if which == 0 {
        CpuKind::Virt
    } else {
        CpuKind::Prof
    }
}

/// getitimer(ITIMER_VIRTUAL = 0 / ITIMER_PROF = 1): (remaining, interval).
pub fn get_itimer(p: &Process, which: usize) -> (u64, u64) {
    let it = p.cpu_itimers.lock()[which];
    if it.expires == 0 {
        return (0, it.interval);
    }
    let now = process_clock(p, itimer_kind(which));
    // Expired but not yet fired reads as just about to fire, as on Linux.
    (it.expires.saturating_sub(now).max(TICK_NS), it.interval)
}

/// setitimer for the CPU itimers; returns the old (remaining, interval).
pub fn set_itimer(p: &Process, which: usize, value: u64, interval: u64) -> (u64, u64) {
    let old = get_itimer(p, which);
    let now = process_clock(p, itimer_kind(which));
    {
        let mut its = p.cpu_itimers.lock();
        its[which] = CpuItimer { expires: if value == 0 { 0 } else { now.saturating_add(value) }, interval };
    }
    refresh_armed(p);
    old
}

/// A POSIX timer on a CPU clock, registered with the process whose ticks
/// advance that clock (which may be another process).
pub struct Watch {
    owner: Weak<Process>,
    id: i32,
}

/// Registers timer `id` of `owner` with the process measured by `clock`.
pub fn watch(owner: &Arc<Process>, id: i32, clock: CpuClock) -> Result<(), Errno> {
    let measured = measured_process(clock).ok_or(Errno::EINVAL)?;
    {
        let mut w = measured.cpu_watch.lock();
        w.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        w.push(Watch { owner: Arc::downgrade(owner), id });
    }
    refresh_armed(&measured);
    Ok(())
}

/// Forgets timer `id` of `owner` (timer_delete, exit, exec).
pub fn unwatch(owner: &Process, id: i32, clock: CpuClock) {
    if let Some(measured) = measured_process(clock) {
        measured.cpu_watch.lock().retain(|w| !(w.id == id && core::ptr::eq(w.owner.as_ptr(), owner)));
        refresh_armed(&measured);
    }
}

/// Whether the tick has CPU-time work for `p` (timers to check).
fn refresh_armed(p: &Process) {
    let itimers = p.cpu_itimers.lock().iter().any(|it| it.expires != 0);
    let watched = !p.cpu_watch.lock().is_empty();
    p.cpu_timer_armed.store(itimers || watched, Ordering::Relaxed);
}

/// The timer tick, on every CPU: count the sample, then run the CPU-time
/// timers and RLIMIT_CPU of the process it interrupted.
pub fn on_tick(user_mode: bool) {
    let Some(t) = super::current_task() else {
        return;
    };
    let p = &t.process;
    t.cpu.sample(user_mode);
    p.cpu.sample(user_mode);
    let soft_limit = p.rlimits.lock()[linux_abi::consts::RLIMIT_CPU as usize].0;
    if soft_limit != super::RLIM_INFINITY {
        check_rlimit(p);
    }
    if p.cpu_timer_armed.load(Ordering::Relaxed) {
        run_itimers(p);
        run_posix_timers(p);
    }
}

/// RLIMIT_CPU: SIGKILL at the hard limit; SIGXCPU at the soft limit, which
/// then moves up a second so the signal repeats every second (Linux
/// raises the soft limit itself, visible to getrlimit).
fn check_rlimit(p: &Arc<Process>) {
    let used = process_clock(p, CpuKind::Prof);
    let (soft, hard) = p.rlimits.lock()[linux_abi::consts::RLIMIT_CPU as usize];
    const SEC: u64 = 1_000_000_000;
    if hard != super::RLIM_INFINITY && used >= hard.saturating_mul(SEC) {
        super::signal::send_to_process(p, Siginfo::kill(sig::SIGKILL, sig::SI_KERNEL, 0, 0));
        return;
    }
    if used >= soft.saturating_mul(SEC) {
        super::signal::send_to_process(p, Siginfo::kill(sig::SIGXCPU, sig::SI_KERNEL, 0, 0));
        let mut limits = p.rlimits.lock();
        let slot = &mut limits[linux_abi::consts::RLIMIT_CPU as usize];
        if slot.0 < slot.1 {
            slot.0 += 1;
        }
    }
}

fn run_itimers(p: &Arc<Process>) {
    for (which, signo) in [(0, sig::SIGVTALRM), (1, sig::SIGPROF)] {
        let now = process_clock(p, itimer_kind(which));
        let fire = {
            let mut its = p.cpu_itimers.lock();
            let it = &mut its[which];
            if it.expires != 0 && it.expires <= now {
                it.expires = if it.interval != 0 { it.expires.saturating_add(it.interval).max(now + 1) } else { 0 };
                true
            } else {
                false
            }
        };
        if fire {
            super::signal::send_to_process(p, Siginfo::kill(signo, sig::SI_KERNEL, 0, 0));
        }
    }
    refresh_armed(p);
}

/// Fires the expired POSIX CPU timers that watch `p`.
fn run_posix_timers(p: &Arc<Process>) {
    let watched: Vec<(Weak<Process>, i32)> = {
        let w = p.cpu_watch.lock();
        let mut v = Vec::new();
        if v.try_reserve(w.len()).is_err() {
            return;
        }
        v.extend(w.iter().map(|w| (w.owner.clone(), w.id)));
        v
    };
    for (owner, id) in watched {
        let Some(owner) = owner.upgrade() else {
            continue;
        };
        let Some((clock, deadline)) = owner.timers.lock().cpu_deadline(id) else {
            continue;
        };
        let Ok(now) = read_clock(clock) else {
            continue;
        };
        if now < deadline {
            continue;
        }
        let notify = owner.timers.lock().cpu_expired(id, deadline, now);
        if let Some(notify) = notify {
            super::timer::notify(&owner, id, notify);
        }
    }
}

/// Arms a POSIX CPU timer: `value` relative, or absolute on its clock.
/// Returns the timer's new absolute deadline (None: disarmed).
pub fn arm_deadline(clock: CpuClock, value: u64, absolute: bool) -> Result<Option<u64>, Errno> {
    if value == 0 {
        return Ok(None);
    }
    let now = read_clock(clock)?;
    Ok(Some(if absolute { value } else { now.saturating_add(value) }))
}

/// The time left until `timer` fires, as timer_gettime reports it.
pub fn remaining(timer: &PosixTimer, clock: CpuClock) -> u64 {
    match timer.deadline {
        None => 0,
        Some(d) => {
            let now = read_clock(clock).unwrap_or(d);
            // Due but not yet fired: "about to", as Linux says it.
            d.saturating_sub(now).max(1)
        }
    }
}
