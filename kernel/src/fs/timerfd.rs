//! timerfd: a timer whose expirations are read as a 64-bit count.
//!
//! Semantics are Linux's: the timer fires once (a kernel timer on the
//! tick, `sched::timer`), counting one expiration and making the file
//! readable; a periodic timer is moved forward over the periods that
//! passed only when it is read or its time is asked for, counting them
//! then (so an unread timer notifies once, as Linux's does). Reading
//! takes the count and resets it. Timers on CLOCK_REALTIME keep their
//! expiry on the wall clock and follow clock_settime; one set with
//! TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET is cancelled by it instead
//! (readable, and the read fails with ECANCELED).

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;

use hal::sync::{Once, SpinLock};
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::file::FileOps;
use crate::event::{Events, PollTable, Pollee};
use crate::mm::{uaccess, Vm};
use crate::sched::timer::{self, Expiry};

/// The clock a timer counts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerClock {
    /// The wall clock (CLOCK_REALTIME, CLOCK_REALTIME_ALARM).
    Realtime,
    /// Time since boot (CLOCK_MONOTONIC; CLOCK_BOOTTIME and its alarm
    /// form are the same clock here, with no suspend to leave out).
    Monotonic,
}

impl TimerClock {
    /// The clock for a timerfd_create clock id, or EINVAL.
    pub fn from_id(id: u32) -> Result<TimerClock, Errno> {
        match id {
            c::CLOCK_REALTIME | c::CLOCK_REALTIME_ALARM => Ok(TimerClock::Realtime),
            c::CLOCK_MONOTONIC | c::CLOCK_BOOTTIME | c::CLOCK_BOOTTIME_ALARM => Ok(TimerClock::Monotonic),
            _ => Err(Errno::EINVAL),
        }
    }

    fn now(self) -> u64 {
        match self {
            TimerClock::Realtime => crate::clock::realtime_ns(),
            TimerClock::Monotonic => crate::clock::now_ns(),
        }
    }

    /// The monotonic time at which this clock reads `at`.
    fn to_monotonic(self, at: u64) -> u64 {
        match self {
            TimerClock::Realtime => {
                at.saturating_sub(crate::clock::realtime_ns().saturating_sub(crate::clock::now_ns()))
            }
            TimerClock::Monotonic => at,
        }
    }
}

/// A setting, in ns: `(value, interval)`, value 0 meaning disarmed.
pub type Setting = (u64, u64);

struct State {
    /// The next expiry on the timer's clock; `None` when disarmed.
    expiry: Option<u64>,
    interval: u64,
    /// The kernel timer armed for `expiry` (None once it fired).
    timer: Option<u64>,
    /// Fired since the last forward (Linux's `expired`).
    expired: bool,
    /// Expirations not read yet.
    ticks: u64,
    /// Armed with TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET.
    cancel_on_set: bool,
    /// The wall clock was set since: the next read fails with ECANCELED.
    canceled: bool,
}

pub struct TimerFd {
    clock: TimerClock,
    state: SpinLock<State>,
    pollee: Pollee,
    me: Once<Weak<TimerFd>>,
}

/// Timers on the wall clock, which clock_settime must move or cancel.
static REALTIME_TIMERS: SpinLock<Vec<Weak<TimerFd>>> = SpinLock::new(Vec::new());

impl TimerFd {
    pub fn new(clock: TimerClock) -> Result<Arc<TimerFd>, Errno> {
        let t = Arc::try_new(TimerFd {
            clock,
            state: SpinLock::new(State {
                expiry: None,
                interval: 0,
                timer: None,
                expired: false,
                ticks: 0,
                cancel_on_set: false,
                canceled: false,
            }),
            pollee: Pollee::new(),
            me: Once::new(),
        })
        .map_err(|_| Errno::ENOMEM)?;
        t.me.set(Arc::downgrade(&t));
        if clock == TimerClock::Realtime {
            let mut list = REALTIME_TIMERS.lock();
            list.retain(|w| w.strong_count() > 0);
            list.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            list.push(Arc::downgrade(&t));
        }
        Ok(t)
    }

    /// The timerfd behind `ops`, if it is one.
    pub fn of(ops: &Arc<dyn FileOps>) -> Option<&TimerFd> {
        ops.as_any().and_then(|a| a.downcast_ref::<TimerFd>())
    }

    /// Arms the kernel timer for `st.expiry` (state lock held).
    fn arm(&self, st: &mut State) -> Result<(), Errno> {
        if let Some(id) = st.timer.take() {
            timer::disarm(id);
        }
        let Some(expiry) = st.expiry else {
            return Ok(());
        };
        let target: Weak<dyn Expiry> = self.me.get().cloned().unwrap_or_default();
        let id = timer::arm(self.clock.to_monotonic(expiry), target).map_err(|_| Errno::ENOMEM)?;
        st.timer = Some(id);
        Ok(())
    }

    /// Counts an expiry that is due but the tick has not run yet (it
    /// comes up to 4 ms late): whoever looks sees what Linux's precise
    /// timer would show. Returns whether it counted one.
    fn catch_up(&self, st: &mut State) -> bool {
        let (Some(expiry), Some(id)) = (st.expiry, st.timer) else {
            return false;
        };
        if expiry > self.clock.now() {
            return false;
        }
        timer::disarm(id);
        st.timer = None;
        st.expired = true;
        st.ticks = st.ticks.saturating_add(1);
        if st.interval == 0 {
            st.expiry = None;
        }
        true
    }

    /// Moves a periodic timer that fired past the periods that went by,
    /// counting them (Linux's hrtimer_forward_now), and re-arms it.
    fn forward(&self, st: &mut State) {
        if !st.expired || st.interval == 0 {
            return;
        }
        st.expired = false;
        let (Some(expiry), now) = (st.expiry, self.clock.now()) else {
            return;
        };
        let periods = if now >= expiry { (now - expiry) / st.interval + 1 } else { 0 };
        st.ticks = st.ticks.saturating_add(periods.saturating_sub(1));
        st.expiry = Some(expiry.saturating_add(periods.saturating_mul(st.interval)));
        // Without memory for the kernel timer it stays disarmed; reads
        // still count the periods that passed.
        let _ = self.arm(st);
    }

    /// The time left and the interval (timerfd_gettime).
    fn current(&self, st: &mut State) -> Setting {
        self.catch_up(st);
        self.forward(st);
        let left = match (st.expiry, st.timer) {
            (Some(expiry), Some(_)) => expiry.saturating_sub(self.clock.now()),
            _ => 0,
        };
        (left, st.interval)
    }

    pub fn gettime(&self) -> Setting {
        let (setting, caught_up) = {
            let mut st = self.state.lock();
            let caught_up = self.catch_up(&mut st);
            (self.current(&mut st), caught_up)
        };
        if caught_up {
            self.pollee.notify(Events::IN);
        }
        setting
    }

    /// timerfd_settime: returns the old setting. `flags` are TFD_TIMER_*.
    pub fn settime(&self, flags: u32, new: Setting) -> Result<Setting, Errno> {
        let old = {
            let mut st = self.state.lock();
            let old = self.current(&mut st);
            let (value, interval) = new;
            st.ticks = 0;
            st.expired = false;
            st.canceled = false;
            st.interval = interval;
            st.cancel_on_set = self.clock == TimerClock::Realtime
                && flags & c::TFD_TIMER_ABSTIME != 0
                && flags & c::TFD_TIMER_CANCEL_ON_SET != 0;
            st.expiry = match value {
                0 => None,
                v if flags & c::TFD_TIMER_ABSTIME != 0 => Some(v),
                v => Some(self.clock.now().saturating_add(v)),
            };
            self.arm(&mut st)?;
            old
        };
        Ok(old)
    }

    fn try_read(&self) -> Result<u64, Errno> {
        let mut st = self.state.lock();
        self.catch_up(&mut st);
        self.forward(&mut st);
        if st.canceled {
            st.canceled = false;
            st.ticks = 0;
            st.expired = false;
            return Err(Errno::ECANCELED);
        }
        if st.ticks == 0 {
            return Err(Errno::EAGAIN);
        }
        Ok(core::mem::take(&mut st.ticks))
    }

    /// The wall clock was set: realtime timers move with it, and those
    /// armed to cancel on a set are cancelled (Linux's
    /// timerfd_clock_was_set).
    fn wall_clock_set(&self) {
        let cancelled = {
            let mut st = self.state.lock();
            if st.cancel_on_set && st.expiry.is_some() {
                st.canceled = true;
                st.ticks = st.ticks.saturating_add(1);
                true
            } else {
                if st.timer.is_some() {
                    let _ = self.arm(&mut st);
                }
                false
            }
        };
        if cancelled {
            self.pollee.notify(Events::IN);
        }
    }
}

/// The wall clock was set (clock_settime, settimeofday): every realtime
/// timerfd hears of it.
pub fn clock_was_set() {
    let timers: Vec<Arc<TimerFd>> = {
        let list = REALTIME_TIMERS.lock();
        let mut live = Vec::new();
        if live.try_reserve(list.len()).is_err() {
            return;
        }
        live.extend(list.iter().filter_map(Weak::upgrade));
        live
    };
    for t in &timers {
        t.wall_clock_set();
    }
}

impl Expiry for TimerFd {
    /// The tick (interrupt context): one expiration.
    fn expire(&self, id: u64, _now: u64) {
        {
            let mut st = self.state.lock();
            if st.timer != Some(id) {
                return; // re-armed or disarmed since
            }
            st.timer = None;
            st.expired = true;
            st.ticks = st.ticks.saturating_add(1);
            if st.interval == 0 {
                st.expiry = None;
            }
        }
        self.pollee.notify(Events::IN);
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        if let Some(id) = self.state.get_mut().timer.take() {
            timer::disarm(id);
        }
    }
}

impl FileOps for TimerFd {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        super::eventfd::read_count(buf, nonblock, &self.pollee, || self.try_read())
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn fixed_seek(&self) -> Option<u64> {
        Some(0)
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.pollee);
        }
        let (caught_up, ticks) = {
            let mut st = self.state.lock();
            (self.catch_up(&mut st), st.ticks)
        };
        if caught_up {
            self.pollee.notify(Events::IN);
        }
        if ticks > 0 {
            Events::IN
        } else {
            Events::EMPTY
        }
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        match cmd {
            c::TFD_IOC_SET_TICKS => {
                let ticks = uaccess::read_u64(vm, arg)?;
                if ticks == 0 {
                    return Err(Errno::EINVAL);
                }
                {
                    let mut st = self.state.lock();
                    if st.canceled {
                        return Err(Errno::ECANCELED);
                    }
                    st.ticks = ticks;
                }
                self.pollee.notify(Events::IN);
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[timerfd]")
    }
}
