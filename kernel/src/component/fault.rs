//! Component faults: the kernel function every fault of a component ends
//! in, and fault injection (the command-line tool's `fault`).
//!
//! Injection is a real fault: the kernel enters the component, in its
//! current domain, at an address of its slot that is mapped but not
//! executable (its heap window), so the CPU raises a page fault inside
//! the component exactly as a wild jump would, and the invocation path's
//! fault handling runs and ends in `faulted`, which hands the component
//! to micro-reboot (`reboot`).

use linux_abi::errno::Errno;

use super::reboot::Entry;
use super::{components, Component};

/// What faulted a component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// An exception while it ran (vector).
    Exception(u8),
    /// An invocation ran past the watchdog.
    Watchdog,
}

/// Component `c` faulted under the invocation `entry`, which unwinds to
/// its caller next: the component's life (`reboot`) counts the fault and
/// fails the generation, so the next invocation micro-reboots it.
#[cold]
pub(super) fn faulted(c: &Component, entry: Entry, cause: Cause) {
    log::debug!("component {}: fault ({cause:?})", c.name);
    c.life.fault(c, entry);
}

/// Makes component `index` fault once; returns its fault count after.
pub fn inject(index: usize) -> Result<u64, Errno> {
    let c = components().get(index).ok_or(Errno::EINVAL)?;
    match super::invoke::enter_at(c, super::slot_base(c.slot) + super::HEAP_OFFSET) {
        Err(Errno::EOWNERDEAD) => Ok(c.faults.load(core::sync::atomic::Ordering::Relaxed)),
        // A free stack is needed to enter: EAGAIN when all are taken.
        Err(e) => Err(e),
        Ok(_) => Err(Errno::EPROTO),
    }
}
