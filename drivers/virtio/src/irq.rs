//! What a virtio device's top and bottom halves share with its driver:
//! the ISR register (needed only on a shared INTx line), an interrupt
//! count, and the waker of the layer above (the network stack or the
//! block layer), which the bottom half calls. Every virtio device type
//! handles its interrupts this way; the work itself (popping used
//! buffers) happens in the layer above's call into the driver, under its
//! own lock, so nothing here touches the queues.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::device::{IrqHandler, IrqReturn, ReadOnly, Register};
use hal::sync::SpinLock;

/// The callback the bottom half runs: the layer above wakes its waiters.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

pub struct IrqShared {
    isr: Register<u8, ReadOnly>,
    /// MSI-X needs no acknowledgement; INTx must read the ISR to lower
    /// the line and to know whether it was this device.
    needs_isr: AtomicBool,
    waker: SpinLock<Option<Waker>>,
    interrupts: AtomicU64,
}

impl IrqShared {
    pub fn new(isr: Register<u8, ReadOnly>) -> IrqShared {
        IrqShared { isr, needs_isr: AtomicBool::new(true), waker: SpinLock::new(None), interrupts: AtomicU64::new(0) }
    }

    /// Whether the top half must read the ISR (INTx) or not (MSI-X).
    pub fn set_needs_isr(&self, needed: bool) {
        self.needs_isr.store(needed, Ordering::Relaxed);
    }

    pub fn set_waker(&self, waker: Waker) {
        *self.waker.lock() = Some(waker);
    }

    /// Interrupts taken that were this device's.
    pub fn interrupts(&self) -> u64 {
        self.interrupts.load(Ordering::Relaxed)
    }
}

impl IrqHandler for IrqShared {
    fn top_half(&self) -> IrqReturn {
        if self.needs_isr.load(Ordering::Relaxed) && self.isr.read() == 0 {
            return IrqReturn::NotMine;
        }
        self.interrupts.fetch_add(1, Ordering::Relaxed);
        IrqReturn::WakeBottomHalf
    }

    fn bottom_half(&self) {
        // Clone out of the lock: the waker may take the upper layer's locks.
        let waker = self.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }
}
