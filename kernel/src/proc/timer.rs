//! ITIMER_REAL / alarm: per-process real-time timers that send SIGALRM,
//! checked on every clock tick.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};

use hal::sync::SpinLock;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use super::Process;

/// (deadline ns, pid) -> process, in deadline order.
static ARMED: SpinLock<BTreeMap<(u64, i32), Weak<Process>>> = SpinLock::new(BTreeMap::new());

/// Remaining time and interval (ns) of the process's real timer.
pub fn get_real(p: &Process) -> (u64, u64) {
    let it = p.itimer.lock();
    let left = it.deadline.map_or(0, |d| d.saturating_sub(crate::clock::now_ns()).max(1));
    (left, it.interval)
}

/// Arms (value > 0) or disarms the timer; returns the previous setting.
pub fn set_real(p: &Arc<Process>, value: u64, interval: u64) -> (u64, u64) {
    let old = get_real(p);
    let mut it = p.itimer.lock();
    if let Some(d) = it.deadline.take() {
        ARMED.lock().remove(&(d, p.pid));
    }
    it.interval = interval;
    if value > 0 {
        let deadline = crate::clock::now_ns().saturating_add(value);
        it.deadline = Some(deadline);
        ARMED.lock().insert((deadline, p.pid), Arc::downgrade(p));
    }
    old
}

/// Clock tick: fire expired timers.
pub fn on_tick(now: u64) {
    loop {
        let due = {
            let mut armed = ARMED.lock();
            match armed.first_key_value() {
                Some((&(d, pid), _)) if d <= now => armed.remove(&(d, pid)).map(|w| (d, w)),
                _ => None,
            }
        };
        let Some((deadline, weak)) = due else {
            return;
        };
        let Some(p) = weak.upgrade() else {
            continue;
        };
        {
            let mut it = p.itimer.lock();
            if it.deadline != Some(deadline) {
                continue;
            }
            it.deadline = None;
            if it.interval > 0 {
                let next = deadline + it.interval;
                it.deadline = Some(next);
                ARMED.lock().insert((next, p.pid), Arc::downgrade(&p));
            }
        }
        super::signal::send_to_process(&p, Siginfo::kill(sig::SIGALRM, sig::SI_KERNEL, 0, 0));
    }
}
