//! The bottom-half thread: where device interrupt work runs.
//!
//! The hal keeps which vectors' bottom halves are due (their top halves
//! said so in interrupt context) and calls the kick registered here; the
//! kick wakes this thread, which runs them with interrupts on. The hal
//! cannot start threads and must not import the kernel, so the kernel
//! passes it this callback (as Linux's threaded interrupts and softirqs
//! run the same split).

use crate::sched::WaitQueue;

static WORK: WaitQueue = WaitQueue::new();

/// Starts the thread and connects the hal to it. Before this, top halves
/// still run; their bottom halves wait.
pub fn init() {
    hal::device::irq::set_bottom_half_kick(kick);
    let spawned = crate::sched::spawn("irq/bottom-half", || loop {
        WORK.wait_until(hal::device::irq::bottom_halves_pending);
        hal::device::irq::run_bottom_halves();
    });
    if spawned.is_err() {
        log::error!("bottom half: no memory for its thread; device interrupts will not be serviced");
    }
}

/// Interrupt context: only wakes the thread.
fn kick() {
    WORK.wake_all();
}
