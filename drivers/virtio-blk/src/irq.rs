//! The interrupt side of the driver: the ISR register (for a shared INTx
//! line), a count, and the block layer's waker, which the bottom half
//! calls. Completions themselves are popped in the block layer's
//! `complete` call, under its lock.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use blockdev::Waker;
use hal::device::{IrqHandler, IrqReturn, ReadOnly, Register};
use hal::sync::SpinLock;

pub(crate) struct Shared {
    isr: Register<u8, ReadOnly>,
    /// MSI-X needs no acknowledgement; INTx must read the ISR to lower
    /// the line and to know whether it was ours.
    needs_isr: AtomicBool,
    waker: SpinLock<Option<Waker>>,
    pub(crate) interrupts: AtomicU64,
}

impl Shared {
    pub(crate) fn new(isr: Register<u8, ReadOnly>) -> Shared {
        Shared { isr, needs_isr: AtomicBool::new(true), waker: SpinLock::new(None), interrupts: AtomicU64::new(0) }
    }

    pub(crate) fn set_needs_isr(&self, needed: bool) {
        self.needs_isr.store(needed, Ordering::Relaxed);
    }

    pub(crate) fn set_waker(&self, waker: Waker) {
        *self.waker.lock() = Some(waker);
    }
}

impl IrqHandler for Shared {
    fn top_half(&self) -> IrqReturn {
        if self.needs_isr.load(Ordering::Relaxed) && self.isr.read() == 0 {
            return IrqReturn::NotMine;
        }
        self.interrupts.fetch_add(1, Ordering::Relaxed);
        IrqReturn::WakeBottomHalf
    }

    fn bottom_half(&self) {
        let waker = self.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }
}
