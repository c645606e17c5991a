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
//!
//! Only the top half reads ICR while the device runs. `service` used to
//! read it too, "so a caller polling sees causes at once", and at -smp 2
//! and more that lost interrupts: the line is routed to one CPU while the
//! caller polls on another, so between the device raising the line and
//! the target CPU taking the vector (a halted vCPU on a loaded host takes
//! a while) the poller's read cleared every cause and lowered the line.
//! The top half then found ICR empty and called the interrupt not its
//! own, so the bottom half and the stack's waker never ran for it (the
//! ktest "the link change raised no interrupt"); and while the pin was
//! masked for a pending bottom half, the read withdrew the interrupt
//! altogether ("no interrupt arrived"). Nothing is lost by not polling
//! ICR: link state is read from STATUS, received frames from the ring's
//! DD bits, and every cause still reaches `service` through the top half.

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
    not_mine: AtomicU64,
}

impl Shared {
    pub(crate) fn new(icr: Register<u32, ReadOnly>) -> Shared {
        Shared {
            icr,
            causes: AtomicU32::new(0),
            waker: SpinLock::new(None),
            interrupts: AtomicU64::new(0),
            not_mine: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_waker(&self, waker: Waker) {
        *self.waker.lock() = Some(waker);
    }

    /// The causes the top half gathered since the last call. ICR itself
    /// is left to the top half (see the module comment).
    pub(crate) fn take_causes(&self) -> u32 {
        self.causes.swap(0, Ordering::AcqRel)
    }

    /// Top halves that found no cause of this device's (another device's
    /// interrupt on a shared line, or a repeat of one already handled).
    pub(crate) fn not_mine(&self) -> u64 {
        self.not_mine.load(Ordering::Relaxed)
    }

    /// Forgets gathered causes (after a device reset, with the device's
    /// interrupts masked, so no top half is racing for ICR).
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
            self.not_mine.fetch_add(1, Ordering::Relaxed);
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
