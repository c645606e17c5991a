//! One interrupt handler per I/O queue: the top half counts and asks for
//! the bottom half, which calls that queue's block-layer waker. MSI-X
//! needs no acknowledgement, and the completions themselves are popped in
//! the block layer's `complete` call, under its lock, on whichever thread
//! waits for them.

use core::sync::atomic::{AtomicU64, Ordering};

use blockdev::Waker;
use hal::device::{IrqHandler, IrqReturn};
use hal::sync::SpinLock;

pub(crate) struct QueueIrq {
    waker: SpinLock<Option<Waker>>,
    pub(crate) interrupts: AtomicU64,
}

impl QueueIrq {
    pub(crate) fn new() -> QueueIrq {
        QueueIrq { waker: SpinLock::new(None), interrupts: AtomicU64::new(0) }
    }

    pub(crate) fn set_waker(&self, waker: Waker) {
        *self.waker.lock() = Some(waker);
    }

    /// Calls the waker (after a reset, so waiters look again).
    pub(crate) fn wake(&self) {
        let waker = self.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }
}

impl IrqHandler for QueueIrq {
    fn top_half(&self) -> IrqReturn {
        self.interrupts.fetch_add(1, Ordering::Relaxed);
        IrqReturn::WakeBottomHalf
    }

    fn bottom_half(&self) {
        self.wake();
    }
}
