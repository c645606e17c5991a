//! The block layer: between file systems and block device drivers.
//!
//! Each device a driver registers becomes a [`BlockQueue`] with Linux's
//! name and block device number and a node in /dev: `vda`, `vdb`, ...
//! (major 254, as Linux gives virtio-blk) or `nvme0n1`, `nvme1n1`, ...
//! (major 259, Linux's extended block major, minors in order). A driver
//! with several hardware queues (NVMe: one per CPU) registers one driver
//! object per queue, and each call uses the queue of its CPU. Callers make synchronous calls
//! ([`BlockQueue::read`], [`BlockQueue::write`], [`BlockQueue::flush`]);
//! underneath, each call is split into requests no larger than the
//! driver's limit and up to the driver's queue depth of them are in flight
//! at once, their completions arriving by interrupt ([`queue`]). Writes
//! gathered in a [`plug::Plug`] are sorted and adjacent ones merged into
//! one request before they go down. A write with FUA is followed by a
//! cache flush when the device has a volatile cache and no FUA, so a
//! caller that asked for durability has it when the call returns.

pub mod dev;
pub mod plug;
pub mod queue;
pub mod sysfs;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use blockdev::BlockDriver;
use hal::sync::SpinLock;

pub use queue::BlockQueue;

/// virtio-blk's major on Linux is dynamic; 254 is what it gets on a
/// typical x86 boot, and what `ls -l /dev/vda` shows there.
pub const MAJOR: u64 = 254;
/// Linux's BLOCK_EXT_MAJOR, where NVMe namespaces get their numbers.
pub const NVME_MAJOR: u64 = 259;

/// How a device is named: the Linux driver family it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `vdX`, major 254, minors in steps of 16 (partitions).
    Virtio,
    /// `nvme<controller>n1`, major 259, minors in order.
    Nvme,
}

static QUEUES: SpinLock<Vec<Arc<BlockQueue>>> = SpinLock::new(Vec::new());

/// Takes a driver's device, driven through `drivers` (one per hardware
/// queue): names it and makes it available to mount and /dev. Returns the
/// queue, or None without memory.
pub fn register(family: Family, drivers: Vec<alloc::boxed::Box<dyn BlockDriver>>) -> Option<Arc<BlockQueue>> {
    use core::fmt::Write;
    let mut all = QUEUES.lock();
    all.try_reserve(1).ok()?;
    let index = all.iter().filter(|q| q.family == family).count();
    let mut name = String::new();
    name.try_reserve(12).ok()?;
    let rdev = match family {
        Family::Virtio => {
            name.push_str("vd");
            name.push(char::from(b'a' + (index % 26) as u8));
            crate::fs::devfs::makedev(MAJOR, (index as u64) * 16)
        }
        Family::Nvme => {
            write!(name, "nvme{index}n1").ok()?;
            crate::fs::devfs::makedev(NVME_MAJOR, index as u64)
        }
    };
    let q = BlockQueue::new(name, rdev, family, drivers)?;
    all.push(q.clone());
    Some(q)
}

/// Every registered device, in registration order.
pub fn all() -> Vec<Arc<BlockQueue>> {
    QUEUES.lock().iter().cloned().collect()
}

/// The device with block device number `rdev`.
pub fn by_rdev(rdev: u64) -> Option<Arc<BlockQueue>> {
    QUEUES.lock().iter().find(|q| q.rdev == rdev).cloned()
}

/// The device a path names: "/dev/vda" or "vda".
pub fn by_path(path: &str) -> Option<Arc<BlockQueue>> {
    let name = path.strip_prefix("/dev/").unwrap_or(path);
    QUEUES.lock().iter().find(|q| q.name == name).cloned()
}
