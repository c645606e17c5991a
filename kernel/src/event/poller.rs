//! Waiting for readiness: a thread subscribes a [`Poller`] to the heads
//! it cares about, checks the state, and sleeps until one of them
//! notifies, a deadline passes or a signal comes.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;

use super::{Events, Observer, PollTable, Pollee, Subscription};
use crate::sched::{Interrupted, WakeBatch, WakeFlag};

/// The current thread's wakeup as an observer.
struct Wakeup(WakeFlag);

impl Observer for Wakeup {
    fn on_events(&self, _events: Events, wakeups: &mut WakeBatch) -> bool {
        self.0.wake_into(wakeups)
    }
}

/// One thread waiting for any of several heads (poll, select,
/// epoll_wait, a blocking read). Made by the thread that waits.
pub struct Poller {
    observer: Arc<dyn Observer>,
    wakeup: Arc<Wakeup>,
}

impl Poller {
    pub fn new() -> Result<Poller, Errno> {
        let wakeup = Arc::try_new(Wakeup(WakeFlag::for_current())).map_err(|_| Errno::ENOMEM)?;
        Ok(Poller { observer: wakeup.clone(), wakeup })
    }

    /// The observer to subscribe (through a `PollTable` or `Pollee::subscribe`).
    pub fn observer(&self) -> &Arc<dyn Observer> {
        &self.observer
    }

    /// A poll table subscribing this poller for `interest`.
    pub fn table<'a>(&'a self, interest: Events, subscriptions: &'a mut Vec<Subscription>) -> PollTable<'a> {
        PollTable::new(&self.observer, interest, false, subscriptions)
    }

    /// Sleeps until a subscribed head notifies (returns at once if one
    /// did since the last wait), `deadline` (monotonic ns) passes, or a
    /// signal interrupts the thread.
    pub fn wait(&self, deadline: Option<u64>) -> Result<(), Interrupted> {
        self.wakeup.0.wait(deadline)
    }
}

/// Runs `attempt` until it stops failing with EAGAIN, sleeping on
/// `pollee` for `interest` in between: the blocking form of an operation
/// whose non-blocking form is `attempt`. A signal ends the wait with
/// ERESTARTSYS. The first attempt subscribes nothing, so an operation that
/// need not wait costs no allocation.
pub fn block_on<T>(
    pollee: &Pollee,
    interest: Events,
    mut attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match attempt() {
        Err(Errno::EAGAIN) => {}
        done => return done,
    }
    let poller = Poller::new()?;
    let _subscription = pollee.subscribe(poller.observer().clone(), interest, false)?;
    loop {
        match attempt() {
            Err(Errno::EAGAIN) => {}
            done => return done,
        }
        if poller.wait(None).is_err() {
            return Err(Errno::ERESTARTSYS);
        }
    }
}
