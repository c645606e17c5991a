//! Console input: the serial receive interrupt feeds the terminal line
//! discipline once user space runs, and wakes kernel readers (the boot
//! banner) before that.

use crate::sched::WaitQueue;

static INPUT: WaitQueue = WaitQueue::new();

pub fn init() {
    hal::trap::register_handler(hal::serial::IRQ_VECTOR, |_| {
        hal::serial::handle_irq();
        if crate::fs::tty::is_active() {
            crate::fs::tty::receive();
        } else {
            INPUT.wake_all();
        }
    });
}

/// Blocks until a byte arrives on the console (kernel use, before the
/// terminal takes over).
pub fn read_byte() -> u8 {
    let mut byte = None;
    INPUT.wait_until(|| {
        byte = hal::serial::read_byte();
        byte.is_some()
    });
    byte.unwrap_or(0)
}
