//! Readiness notification, the core under poll, select, epoll and every
//! blocking wait on a file.
//!
//! * A pollable object owns a [`Pollee`] (a notification head) and calls
//!   [`Pollee::notify`] with the events that may have changed whenever its
//!   state changes; notify is IRQ-safe and allocates nothing, so the
//!   console's receive interrupt calls it directly.
//! * A file reports its readiness through `FileOps::poll`, and, when the
//!   caller passes a [`PollTable`], registers the caller on each of its
//!   heads first, so a change between the registration and the check
//!   still wakes the caller. A file with no head is always ready.
//! * A waiter subscribes an [`Observer`]: a [`Poller`] (a sleeping
//!   thread) for poll/select/epoll_wait, an epoll entry for epoll. The
//!   [`Subscription`] it gets back unsubscribes when dropped.
//!
//! Lock order: a head's lock, then whatever an observer takes (an epoll's
//! ready list, then the next head up for nested epoll, a run queue).
//! Nothing is subscribed or unsubscribed under a head's lock.

mod events;
mod pollee;
mod poller;

pub use events::Events;
pub use pollee::{Observer, PollTable, Pollee, Subscription};
pub use poller::{block_on, Poller};
