//! Console input: the serial receive interrupt wakes threads waiting for
//! keys.

use crate::sched::WaitQueue;

static INPUT: WaitQueue = WaitQueue::new();

pub fn init() {
    hal::trap::register_handler(hal::serial::IRQ_VECTOR, |_| {
        hal::serial::handle_irq();
        INPUT.wake_all();
    });
}

/// Blocks until a byte arrives on the console.
pub fn read_byte() -> u8 {
    let mut byte = None;
    INPUT.wait_until(|| {
        byte = hal::serial::read_byte();
        byte.is_some()
    });
    byte.unwrap_or(0)
}

/// A received byte, if one is waiting.
pub fn try_read_byte() -> Option<u8> {
    hal::serial::read_byte()
}

/// Whether a byte is waiting to be read.
pub fn input_available() -> bool {
    hal::serial::input_pending()
}
