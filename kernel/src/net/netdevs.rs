//! The network interfaces the drivers found, until the stack takes them.
//!
//! Drivers' probe code ([`crate::drivers`]) calls [`register`] with each
//! `NetDevice`. The network stack installs itself with [`set_consumer`];
//! devices registered before that wait here and are handed over then, so
//! neither side depends on which starts first. Without a stack (the test
//! kernel) a test may [`take`] a device directly.

use alloc::boxed::Box;
use alloc::vec::Vec;

use hal::sync::SpinLock;
use netdev::NetDevice;

pub type Consumer = fn(Box<dyn NetDevice>);

static WAITING: SpinLock<Vec<Box<dyn NetDevice>>> = SpinLock::new(Vec::new());
static CONSUMER: SpinLock<Option<Consumer>> = SpinLock::new(None);

/// Hands a probed device to the stack, or keeps it until there is one.
pub fn register(dev: Box<dyn NetDevice>) {
    let consumer = *CONSUMER.lock();
    match consumer {
        Some(consume) => consume(dev),
        None => {
            let mut waiting = WAITING.lock();
            if waiting.try_reserve(1).is_ok() {
                waiting.push(dev);
            } else {
                log::error!("net: no memory to keep {}; dropped", dev.driver_name());
            }
        }
    }
}

/// Installs the stack's hook and gives it every device found so far.
#[allow(dead_code)] // until the stack (branch inet) installs itself
pub fn set_consumer(consume: Consumer) {
    *CONSUMER.lock() = Some(consume);
    let waiting = core::mem::take(&mut *WAITING.lock());
    for dev in waiting {
        consume(dev);
    }
}

/// Takes the first waiting device whose driver is `driver` (tests).
#[allow(dead_code)] // the test kernel takes devices directly
pub fn take(driver: &str) -> Option<Box<dyn NetDevice>> {
    let mut waiting = WAITING.lock();
    let i = waiting.iter().position(|d| d.driver_name() == driver)?;
    Some(waiting.remove(i))
}

/// Devices waiting for a stack.
#[allow(dead_code)]
pub fn waiting() -> usize {
    WAITING.lock().len()
}
