//! The interface between block device drivers (`drivers/virtio-blk`,
//! later NVMe) and the kernel's block layer (`kernel/src/block`).
//!
//! A driver is a queue of tagged requests: the block layer [`submit`]s up
//! to [`DeviceInfo::queue_depth`] of them, the device completes them in
//! any order, and the driver hands each completion back through
//! [`complete`] when its interrupt's bottom half has called the
//! [`Waker`]. Data never leaves the driver's DMA memory as an address:
//! a write's bytes are copied in by a `fill` callback, a read's bytes
//! are copied out by [`release`] once the request completed, so a
//! completion found by one thread can be collected by the thread that
//! waits for it.
//! The trait is shaped by what block devices share (sectors, a queue
//! depth, flush, FUA, discard), not by one transport.
//!
//! [`submit`]: BlockDriver::submit
//! [`complete`]: BlockDriver::complete
//! [`release`]: BlockDriver::release

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::sync::Arc;

/// Called from the bottom half when requests completed.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// Sector size of every address in this interface.
pub const SECTOR: usize = 512;

/// What the block layer must know of a device to drive it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Capacity in 512-byte sectors.
    pub sectors: u64,
    /// The device's logical block size (BLKSSZGET), a multiple of 512.
    pub logical_block_size: u32,
    /// Requests the driver can hold at once.
    pub queue_depth: usize,
    /// The largest transfer of one request, in sectors.
    pub max_sectors: u32,
    pub read_only: bool,
    /// The device has a volatile write cache that [`Request::Flush`]
    /// empties; without one, a completed write is already durable.
    pub volatile_cache: bool,
    /// Writes can be forced to media on their own ([`Request::Write`]'s
    /// `fua`); else the block layer follows them with a flush.
    pub fua: bool,
    /// [`Request::Discard`] is supported, up to this many sectors (0: not).
    pub max_discard_sectors: u32,
}

/// One request. Sector ranges are in 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Read {
        sector: u64,
        sectors: u32,
    },
    Write {
        sector: u64,
        sectors: u32,
        fua: bool,
    },
    /// Makes every completed write durable.
    Flush,
    /// The range's contents are no longer needed.
    Discard {
        sector: u64,
        sectors: u32,
    },
}

/// Names a request in flight; the driver picks it, the block layer
/// matches completions with it.
pub type Tag = u16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// Every slot is in flight: wait for a completion.
    Busy,
    /// Past the end, too large, or a kind the device does not do.
    Invalid,
    /// The device refuses writes.
    ReadOnly,
    /// The device is gone (revoked, failed).
    Unavailable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoError {
    /// The device reported an error (EIO).
    Device,
    /// The device does not support the request (EOPNOTSUPP).
    Unsupported,
}

/// A block device driver, as the block layer drives it. Callers
/// serialize calls (the block layer holds the driver under its lock).
pub trait BlockDriver: Send {
    fn driver_name(&self) -> &'static str;

    fn info(&self) -> DeviceInfo;

    /// Sets what the bottom half calls when requests complete.
    fn set_waker(&mut self, waker: Waker);

    /// Starts `req`. For a write, `fill` is called once with the request's
    /// data area (exactly `sectors * 512` bytes) to copy the data in.
    fn submit(&mut self, req: Request, fill: &mut dyn FnMut(&mut [u8])) -> Result<Tag, SubmitError>;

    /// Hands every request the device finished to `sink`: its tag and
    /// result. The request keeps its slot (and a read its data) until
    /// [`release`](BlockDriver::release). Returns how many.
    fn complete(&mut self, sink: &mut dyn FnMut(Tag, Result<(), IoError>)) -> usize;

    /// Frees a completed request's slot; for a read, first copies its data
    /// into `read_into` (the request's length at most).
    fn release(&mut self, tag: Tag, read_into: Option<&mut [u8]>);

    /// [`release`](BlockDriver::release) for a read whose data goes to
    /// several buffers laid end to end (a page cache's frames), copied
    /// from the slot into each. The default goes through one buffer; the
    /// drivers copy straight.
    fn release_scatter(&mut self, tag: Tag, read_into: &mut [&mut [u8]]) {
        let len: usize = read_into.iter().map(|b| b.len()).sum();
        let mut tmp = alloc::vec::Vec::new();
        if tmp.try_reserve_exact(len).is_err() {
            // No memory for the copy: the slot is freed, the data lost;
            // the caller's buffers keep what they held (the caller zeroes
            // or discards them on a short read, never trusts them).
            self.release(tag, None);
            return;
        }
        tmp.resize(len, 0);
        self.release(tag, Some(&mut tmp));
        scatter(&tmp, read_into);
    }

    /// Requests in flight.
    fn in_flight(&self) -> usize;

    /// Interrupts the driver's top half accepted (for tests and /proc).
    fn interrupts(&self) -> u64 {
        0
    }

    /// Requests have been in flight past the block layer's timeout, and
    /// [`complete`](BlockDriver::complete) found no completion for them:
    /// the device lost them (or their interrupt and completion both).
    /// `expired` names them, each with the recoveries already tried for
    /// it. The driver recovers if it can and says how: NVMe first asks
    /// the controller to abort a request that timed out once (Linux's
    /// nvme_timeout), and resets the controller, sending every request in
    /// flight again, when that fails or the request times out again. The
    /// block layer then waits another timeout before it tries again or
    /// gives up on the requests with EIO. The default cannot recover.
    fn recover(&mut self, _expired: &[Expired]) -> Recovery {
        Recovery::Failed
    }
}

/// A request that passed its timeout, for [`BlockDriver::recover`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expired {
    pub tag: Tag,
    /// Recoveries already tried for it.
    pub recoveries: u32,
}

/// What [`BlockDriver::recover`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The device accepted an abort of the requests: each completes, with
    /// an error if the device did abort it.
    Aborted,
    /// The device was reset and the requests sent again.
    Reset,
    /// Nothing could be done: the block layer fails the requests.
    Failed,
}

/// Copies `data` into `bufs` laid end to end, as far as both reach.
pub fn scatter(data: &[u8], bufs: &mut [&mut [u8]]) {
    let mut at = 0;
    for b in bufs.iter_mut() {
        if at >= data.len() {
            break;
        }
        let n = b.len().min(data.len() - at);
        b[..n].copy_from_slice(&data[at..at + n]);
        at += n;
    }
}
