//! Process timers: ITIMER_REAL/alarm and POSIX timers (timer_create)
//! expire on the monotonic clock and are checked on every clock tick;
//! ITIMER_VIRTUAL and ITIMER_PROF count the process's CPU time.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

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

#[derive(Clone, Copy, Debug)]
pub struct PosixTimer {
    pub notify: Notify,
    pub deadline: Option<u64>,
    pub interval: u64,
    pub overrun: i32,
}

/// The per-process timer state.
#[derive(Default)]
pub struct Timers {
    real_deadline: Option<u64>,
    real_interval: u64,
    /// ITIMER_VIRTUAL and ITIMER_PROF: (remaining, interval) in CPU ns.
    cpu: [(u64, u64); 2],
    posix: BTreeMap<i32, PosixTimer>,
    next_id: i32,
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

/// ITIMER_VIRTUAL (0) or ITIMER_PROF (1): (remaining, interval).
pub fn get_cpu(p: &Process, which: usize) -> (u64, u64) {
    p.timers.lock().cpu[which]
}

pub fn set_cpu(p: &Process, which: usize, value: u64, interval: u64) -> (u64, u64) {
    let mut t = p.timers.lock();
    let old = core::mem::replace(&mut t.cpu[which], (value, interval));
    let armed = t.cpu.iter().any(|c| c.0 != 0);
    p.cpu_timer_armed.store(armed, core::sync::atomic::Ordering::Relaxed);
    old
}

/// Charges `ns` of CPU time to the CPU-time itimers.
pub fn charge_cpu(p: &Arc<Process>, ns: u64) {
    if !p.cpu_timer_armed.load(core::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut fired = [false; 2];
    {
        let mut t = p.timers.lock();
        for (i, slot) in t.cpu.iter_mut().enumerate() {
            if slot.0 == 0 {
                continue;
            }
            if slot.0 <= ns {
                fired[i] = true;
                slot.0 = slot.1;
            } else {
                slot.0 -= ns;
            }
        }
    }
    for (i, signo) in [(0, sig::SIGVTALRM), (1, sig::SIGPROF)] {
        if fired[i] {
            super::signal::send_to_process(p, Siginfo::kill(signo, sig::SI_KERNEL, 0, 0));
        }
    }
}

pub fn create(p: &Process, notify: Notify) -> Result<i32, Errno> {
    let mut t = p.timers.lock();
    if t.posix.len() >= 4096 {
        return Err(Errno::EAGAIN);
    }
    let id = t.next_id;
    t.next_id += 1;
    t.posix.insert(id, PosixTimer { notify, deadline: None, interval: 0, overrun: 0 });
    Ok(id)
}

/// Sets a POSIX timer (value 0 disarms); returns the old (remaining, interval).
pub fn settime(p: &Arc<Process>, id: i32, value: u64, interval: u64) -> Result<(u64, u64), Errno> {
    let mut t = p.timers.lock();
    let timer = t.posix.get_mut(&id).ok_or(Errno::EINVAL)?;
    let old = (remaining(timer.deadline), timer.interval);
    if let Some(d) = timer.deadline.take() {
        disarm(p.pid, d, Which::Posix(id));
    }
    timer.interval = interval;
    timer.overrun = 0;
    if value > 0 {
        let d = crate::clock::now_ns().saturating_add(value);
        timer.deadline = Some(d);
        arm(p, d, Which::Posix(id));
    }
    Ok(old)
}

pub fn gettime(p: &Process, id: i32) -> Result<(u64, u64, i32), Errno> {
    let t = p.timers.lock();
    let timer = t.posix.get(&id).ok_or(Errno::EINVAL)?;
    Ok((remaining(timer.deadline), timer.interval, timer.overrun))
}

pub fn set_notify(p: &Process, id: i32, notify: Notify) {
    if let Some(t) = p.timers.lock().posix.get_mut(&id) {
        t.notify = notify;
    }
}

pub fn delete(p: &Process, id: i32) -> Result<(), Errno> {
    let timer = p.timers.lock().posix.remove(&id).ok_or(Errno::EINVAL)?;
    if let Some(d) = timer.deadline {
        disarm(p.pid, d, Which::Posix(id));
    }
    Ok(())
}

/// Disarms everything (exit, exec).
pub fn clear(p: &Process) {
    let mut t = p.timers.lock();
    if let Some(d) = t.real_deadline.take() {
        disarm(p.pid, d, Which::Real);
    }
    for (id, timer) in core::mem::take(&mut t.posix) {
        if let Some(d) = timer.deadline {
            disarm(p.pid, d, Which::Posix(id));
        }
    }
    t.cpu = [(0, 0); 2];
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
                        let next = deadline + t.real_interval;
                        t.real_deadline = Some(next);
                        arm(&p, next, Which::Real);
                    }
                }
                super::signal::send_to_process(&p, Siginfo::kill(sig::SIGALRM, sig::SI_KERNEL, 0, 0));
            }
            Which::Posix(id) => {
                let notify = {
                    let mut t = p.timers.lock();
                    let Some(timer) = t.posix.get_mut(&id) else {
                        continue;
                    };
                    if timer.deadline != Some(deadline) {
                        continue;
                    }
                    timer.deadline = None;
                    if timer.interval > 0 {
                        let next = deadline + timer.interval;
                        timer.deadline = Some(next);
                        arm(&p, next, Which::Posix(id));
                    }
                    timer.notify
                };
                if let Notify::Signal { signo, value, tid } = notify {
                    let info = Siginfo::timer(signo, id, 0, value);
                    match tid.and_then(super::find_task) {
                        Some(t) => super::signal::send_to_task(&t, info),
                        None => super::signal::send_to_process(&p, info),
                    }
                }
            }
        }
    }
}
