//! Process timers: ITIMER_REAL/alarm and POSIX timers (timer_create).
//! Timers on the monotonic and real-time clocks expire on the monotonic
//! clock and are checked on every clock tick; one armed for an absolute
//! CLOCK_REALTIME time is moved when the wall clock is set
//! (`clock_was_set`), so it fires at the new wall time, as on Linux.
//! Timers on CPU clocks live here too but are run by `cputime`.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use super::cputime::{self, CpuClock};
use super::{Pid, Process};

/// Which timer of a process an armed deadline belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Which {
    Real,
    Posix(i32),
}

/// (deadline ns, pid, timer) in deadline order.
static ARMED: SpinLock<BTreeMap<(u64, Pid, Which), Weak<Process>>> = SpinLock::new(BTreeMap::new());

/// How a POSIX timer notifies.
#[derive(Clone, Copy, Debug)]
pub enum Notify {
    None,
    Signal { signo: u32, value: u64, tid: Option<Pid> },
}

/// The clock a POSIX timer counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerClock {
    Monotonic,
    /// CLOCK_REALTIME or CLOCK_TAI: an absolute time follows the wall clock.
    Realtime,
    Cpu(CpuClock),
}

#[derive(Clone, Copy, Debug)]
pub struct PosixTimer {
    pub notify: Notify,
    pub clock: TimerClock,
    /// Monotonic ns for Monotonic/Realtime timers, the CPU clock's ns for
    /// CPU timers.
    pub deadline: Option<u64>,
    /// The absolute wall-clock time an absolute Realtime timer is armed
    /// for (kept so a clock change can move `deadline`).
    pub wall_deadline: Option<u64>,
    pub interval: u64,
    pub overrun: i32,
}

/// The per-process timer state.
#[derive(Default)]
pub struct Timers {
    real_deadline: Option<u64>,
    real_interval: u64,
    posix: BTreeMap<i32, PosixTimer>,
    next_id: i32,
}

impl Timers {
    /// A CPU timer's clock and deadline, if it is armed.
    pub(super) fn cpu_deadline(&self, id: i32) -> Option<(CpuClock, u64)> {
        let t = self.posix.get(&id)?;
        match t.clock {
            TimerClock::Cpu(c) => t.deadline.map(|d| (c, d)),
            _ => None,
        }
    }

    /// A CPU timer reached `deadline` at clock reading `now`: reload or
    /// disarm it (counting overruns) and say how to notify.
    pub(super) fn cpu_expired(&mut self, id: i32, deadline: u64, now: u64) -> Option<Notify> {
        let t = self.posix.get_mut(&id)?;
        if t.deadline != Some(deadline) {
            return None;
        }
        match (now - deadline).checked_div(t.interval) {
            Some(missed) => {
                t.overrun = i32::try_from(missed).unwrap_or(i32::MAX);
                t.deadline = Some(deadline.saturating_add((missed + 1).saturating_mul(t.interval)));
            }
            None => t.deadline = None,
        }
        Some(t.notify)
    }
}

fn arm(p: &Arc<Process>, deadline: u64, which: Which) {
    ARMED.lock().insert((deadline, p.pid, which), Arc::downgrade(p));
}

fn disarm(pid: Pid, deadline: u64, which: Which) {
    ARMED.lock().remove(&(deadline, pid, which));
}

fn remaining(deadline: Option<u64>) -> u64 {
    deadline.map_or(0, |d| d.saturating_sub(crate::clock::now_ns()).max(1))
}

/// Remaining time and interval (ns) of ITIMER_REAL.
pub fn get_real(p: &Process) -> (u64, u64) {
    let t = p.timers.lock();
    (remaining(t.real_deadline), t.real_interval)
}

/// Arms (value > 0) or disarms ITIMER_REAL; returns the old setting.
pub fn set_real(p: &Arc<Process>, value: u64, interval: u64) -> (u64, u64) {
    let mut t = p.timers.lock();
    let old = (remaining(t.real_deadline), t.real_interval);
    if let Some(d) = t.real_deadline.take() {
        disarm(p.pid, d, Which::Real);
    }
    t.real_interval = interval;
    if value > 0 {
        let d = crate::clock::now_ns().saturating_add(value);
        t.real_deadline = Some(d);
        arm(p, d, Which::Real);
    }
    old
}

pub fn create(p: &Arc<Process>, clock: TimerClock, notify: Notify) -> Result<i32, Errno> {
    let id = {
        let mut t = p.timers.lock();
        if t.posix.len() >= 4096 {
            return Err(Errno::EAGAIN);
        }
        let id = t.next_id;
        t.next_id += 1;
        let timer = PosixTimer { notify, clock, deadline: None, wall_deadline: None, interval: 0, overrun: 0 };
        t.posix.insert(id, timer);
        id
    };
    if let TimerClock::Cpu(c) = clock {
        if let Err(e) = cputime::watch(p, id, c) {
            p.timers.lock().posix.remove(&id);
            return Err(e);
        }
    }
    Ok(id)
}

fn timer_remaining(timer: &PosixTimer) -> u64 {
    match timer.clock {
        TimerClock::Cpu(c) => cputime::remaining(timer, c),
        _ => remaining(timer.deadline),
    }
}

/// Sets a POSIX timer (value 0 disarms), `value` relative or absolute on
/// the timer's clock; returns the old (remaining, interval).
pub fn settime(p: &Arc<Process>, id: i32, value: u64, interval: u64, absolute: bool) -> Result<(u64, u64), Errno> {
    let clock = p.timers.lock().posix.get(&id).ok_or(Errno::EINVAL)?.clock;
    // A CPU clock is read before the lock: reading it takes other locks.
    let cpu_deadline = match clock {
        TimerClock::Cpu(c) => cputime::arm_deadline(c, value, absolute)?,
        _ => None,
    };
    let mut t = p.timers.lock();
    let timer = t.posix.get_mut(&id).ok_or(Errno::EINVAL)?;
    let old = (timer_remaining(timer), timer.interval);
    if let (Some(d), false) = (timer.deadline.take(), matches!(timer.clock, TimerClock::Cpu(_))) {
        disarm(p.pid, d, Which::Posix(id));
    }
    timer.wall_deadline = None;
    timer.interval = interval;
    timer.overrun = 0;
    if value == 0 {
        return Ok(old);
    }
    let now = crate::clock::now_ns();
    match clock {
        TimerClock::Cpu(_) => timer.deadline = cpu_deadline,
        TimerClock::Realtime if absolute => {
            let wall_now = crate::clock::realtime_ns();
            timer.wall_deadline = Some(value);
            let d = now.saturating_add(value.saturating_sub(wall_now));
            timer.deadline = Some(d);
            arm(p, d, Which::Posix(id));
        }
        TimerClock::Monotonic if absolute => {
            timer.deadline = Some(value);
            arm(p, value, Which::Posix(id));
        }
        _ => {
            let d = now.saturating_add(value);
            timer.deadline = Some(d);
            arm(p, d, Which::Posix(id));
        }
    }
    Ok(old)
}

pub fn gettime(p: &Process, id: i32) -> Result<(u64, u64, i32), Errno> {
    let t = p.timers.lock();
    let timer = t.posix.get(&id).ok_or(Errno::EINVAL)?;
    Ok((timer_remaining(timer), timer.interval, timer.overrun))
}

pub fn set_notify(p: &Process, id: i32, notify: Notify) {
    if let Some(t) = p.timers.lock().posix.get_mut(&id) {
        t.notify = notify;
    }
}

fn forget(p: &Process, id: i32, timer: &PosixTimer) {
    match timer.clock {
        TimerClock::Cpu(c) => cputime::unwatch(p, id, c),
        _ => {
            if let Some(d) = timer.deadline {
                disarm(p.pid, d, Which::Posix(id));
            }
        }
    }
}

pub fn delete(p: &Process, id: i32) -> Result<(), Errno> {
    let timer = p.timers.lock().posix.remove(&id).ok_or(Errno::EINVAL)?;
    forget(p, id, &timer);
    Ok(())
}

/// Disarms everything (exit, exec).
pub fn clear(p: &Process) {
    let timers = {
        let mut t = p.timers.lock();
        if let Some(d) = t.real_deadline.take() {
            disarm(p.pid, d, Which::Real);
        }
        core::mem::take(&mut t.posix)
    };
    for (id, timer) in timers {
        forget(p, id, &timer);
    }
    for which in 0..2 {
        cputime::set_itimer(p, which, 0, 0);
    }
}

/// The wall clock was set: every timer armed for an absolute wall time
/// moves to the monotonic time at which the wall clock now reaches it.
pub fn clock_was_set() {
    let now = crate::clock::now_ns();
    let wall_now = crate::clock::realtime_ns();
    for p in super::all_processes() {
        let mut t = p.timers.lock();
        let ids: alloc::vec::Vec<i32> =
            t.posix.iter().filter(|(_, x)| x.wall_deadline.is_some()).map(|(id, _)| *id).collect();
        for id in ids {
            let Some(timer) = t.posix.get_mut(&id) else {
                continue;
            };
            let (Some(old), Some(wall)) = (timer.deadline, timer.wall_deadline) else {
                continue;
            };
            let new = now.saturating_add(wall.saturating_sub(wall_now));
            timer.deadline = Some(new);
            disarm(p.pid, old, Which::Posix(id));
            arm(&p, new, Which::Posix(id));
        }
    }
}

/// Sends a POSIX timer's notification.
pub(super) fn notify(p: &Arc<Process>, id: i32, notify: Notify) {
    if let Notify::Signal { signo, value, tid } = notify {
        let overrun = p.timers.lock().posix.get(&id).map_or(0, |t| t.overrun);
        let info = Siginfo::timer(signo, id, overrun, value);
        match tid.and_then(super::find_task) {
            Some(t) => super::signal::send_to_task(&t, info),
            None => super::signal::send_to_process(p, info),
        }
    }
}

/// The next deadline of a periodic timer that expired at `deadline`,
/// past `now`, and how many periods were missed on the way (its
/// overrun), as Linux's hrtimer_forward. Reloading by one period only
/// would fire a timer whose period is shorter than a tick once per
/// missed period, every tick: with stress-ng's 1 MHz timer the tick
/// handler fell further behind each time and the kernel stopped
/// running anything else.
fn forward(deadline: u64, interval: u64, now: u64) -> (u64, u64) {
    let missed = now.saturating_sub(deadline) / interval;
    (deadline.saturating_add((missed + 1).saturating_mul(interval)), missed)
}

/// Clock tick: fire expired timers.
pub fn on_tick(now: u64) {
    loop {
        let due = {
            let mut armed = ARMED.lock();
            match armed.first_key_value() {
                Some((&key, _)) if key.0 <= now => armed.remove(&key).map(|w| (key, w)),
                _ => None,
            }
        };
        let Some(((deadline, _, which), weak)) = due else {
            return;
        };
        let Some(p) = weak.upgrade() else {
            continue;
        };
        match which {
            Which::Real => {
                {
                    let mut t = p.timers.lock();
                    if t.real_deadline != Some(deadline) {
                        continue;
                    }
                    t.real_deadline = None;
                    if t.real_interval > 0 {
                        let (next, _) = forward(deadline, t.real_interval, now);
                        t.real_deadline = Some(next);
                        arm(&p, next, Which::Real);
                    }
                }
                super::signal::send_to_process(&p, Siginfo::kill(sig::SIGALRM, sig::SI_KERNEL, 0, 0));
            }
            Which::Posix(id) => {
                let notify_how = {
                    let mut t = p.timers.lock();
                    let Some(timer) = t.posix.get_mut(&id) else {
                        continue;
                    };
                    if timer.deadline != Some(deadline) {
                        continue;
                    }
                    timer.deadline = None;
                    if timer.interval > 0 {
                        let (next, missed) = forward(deadline, timer.interval, now);
                        timer.overrun = i32::try_from(missed).unwrap_or(i32::MAX);
                        timer.deadline = Some(next);
                        timer.wall_deadline = timer.wall_deadline.map(|w| w.saturating_add(next - deadline));
                        arm(&p, next, Which::Posix(id));
                    } else {
                        timer.wall_deadline = None;
                    }
                    timer.notify
                };
                notify(&p, id, notify_how);
            }
        }
    }
}
