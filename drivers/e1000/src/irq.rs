//! The interrupt side of the driver: what the top half and the bottom
//! half share with the device state, which is the interrupt cause
//! register, the causes it read, and the stack's waker.
//!
//! The 82540EM has neither MSI nor MSI-X (QEMU's model has no capability
//! for either), so its interrupt is the shared INTx line. Reading ICR
//! both tells whether the line is this device's and lowers it (8254x SDM
//! 13.4.17), so the top half reads it once and keeps the bits for
//! `service`, which is where the driver acts on a link change or an
//! overrun.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hal::device::{IrqHandler, IrqReturn, ReadOnly, Register};
use hal::sync::SpinLock;
use netdev::Waker;

use crate::regs::int;

pub(crate) struct Shared {
    icr: Register<u32, ReadOnly>,
    /// Causes read by the top half and not yet seen by `service`.
    causes: AtomicU32,
    waker: SpinLock<Option<Waker>>,
    pub(crate) interrupts: AtomicU64,
}

impl Shared {
    pub(crate) fn new(icr: Register<u32, ReadOnly>) -> Shared {
        Shared { icr, causes: AtomicU32::new(0), waker: SpinLock::new(None), interrupts: AtomicU64::new(0) }
    }

    pub(crate) fn set_waker(&self, waker: Waker) {
        *self.waker.lock() = Some(waker);
    }

    /// The causes gathered since the last call, plus any the device holds
    /// now (so a caller polling with interrupts masked sees them too).
    pub(crate) fn take_causes(&self) -> u32 {
        let now = self.icr.read();
        let now = if now == u32::MAX { 0 } else { now };
        self.causes.swap(0, Ordering::AcqRel) | now
    }

    /// Forgets gathered causes (after a device reset).
    pub(crate) fn clear(&self) {
        let _ = self.icr.read();
        self.causes.store(0, Ordering::Release);
    }
}

impl IrqHandler for Shared {
    fn top_half(&self) -> IrqReturn {
        let icr = self.icr.read();
        // All ones: the device is gone or revoked.
        if icr & int::USED == 0 || icr == u32::MAX {
            return IrqReturn::NotMine;
        }
        self.causes.fetch_or(icr, Ordering::AcqRel);
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
