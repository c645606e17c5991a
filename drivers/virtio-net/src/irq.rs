//! The interrupt side of the driver: what the top half and the bottom
//! half share with the device state, which is only the ISR register and
//! the stack's waker.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::device::{IrqHandler, IrqReturn, ReadOnly, Register};
use hal::sync::SpinLock;
use netdev::Waker;

pub(crate) struct Shared {
    isr: Register<u8, ReadOnly>,
    /// On INTx (a shared line) the ISR read tells whether it was us and
    /// lowers the line; MSI-X needs no acknowledgement.
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
        // Clone out of the lock: the waker may take the stack's locks.
        let waker = self.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }
}
