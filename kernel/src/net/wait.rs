//! Blocking socket calls: retry a non-blocking attempt, sleeping on a
//! notification head in between, for as long as the socket's timeout
//! (SO_RCVTIMEO/SO_SNDTIMEO) allows.

use linux_abi::errno::Errno;

use crate::event::{Events, Pollee, Poller};

/// How long a call may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// O_NONBLOCK, MSG_DONTWAIT, or a timeout of zero length.
    NonBlocking,
    /// No timeout set: a signal restarts the call (ERESTARTSYS).
    Forever,
    /// Until this monotonic time; a signal ends the call with EINTR, as
    /// Linux's `sock_intr_errno` does for calls with a timeout.
    Until(u64),
}

impl Timeout {
    pub fn from_jiffies(nonblock: bool, jiffies: u64) -> Timeout {
        if nonblock || jiffies == 0 {
            Timeout::NonBlocking
        } else if jiffies == super::options::TIMEO_FOREVER {
            Timeout::Forever
        } else {
            let ns = jiffies.saturating_mul(super::options::NS_PER_JIFFY);
            Timeout::Until(hal::time::monotonic_ns().saturating_add(ns))
        }
    }

    fn interrupted(self) -> Errno {
        match self {
            Timeout::Forever => Errno::ERESTARTSYS,
            _ => Errno::EINTR,
        }
    }
}

/// Runs `attempt` until it stops failing with EAGAIN, sleeping on
/// `pollee` for `interest` in between. A timeout returns the last
/// attempt's EAGAIN; a signal ERESTARTSYS or EINTR (see [`Timeout`]).
/// The first attempt subscribes nothing, so a call that need not wait
/// costs no allocation.
pub fn block_on<T>(
    pollee: &Pollee,
    interest: Events,
    timeout: Timeout,
    mut attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match attempt() {
        Err(Errno::EAGAIN) if timeout != Timeout::NonBlocking => {}
        done => return done,
    }
    let deadline = match timeout {
        Timeout::Until(d) => Some(d),
        _ => None,
    };
    let poller = Poller::new()?;
    let _subscription = pollee.subscribe(poller.observer().clone(), interest | Events::ERR | Events::HUP, false)?;
    loop {
        match attempt() {
            Err(Errno::EAGAIN) => {}
            done => return done,
        }
        match poller.wait(deadline) {
            Ok(()) => {}
            Err(crate::sched::Interrupted::Signal) => return Err(timeout.interrupted()),
            Err(crate::sched::Interrupted::TimedOut) => return Err(Errno::EAGAIN),
        }
    }
}

/// Why a blocking call stopped early, for the caller to turn into a
/// result: what it already moved is returned instead of an error.
pub fn partial_or(done: usize, e: Errno) -> Result<usize, Errno> {
    if done > 0 && matches!(e, Errno::EAGAIN | Errno::EINTR | Errno::ERESTARTSYS) {
        Ok(done)
    } else {
        Err(e)
    }
}
