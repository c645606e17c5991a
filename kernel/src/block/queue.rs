//! One block device's request queue: synchronous calls turned into
//! tagged requests, at most the driver's queue depth in flight, and their
//! completions collected by whichever waiting caller takes the lock first.
//!
//! The driver's interrupt bottom half calls the queue's waker, which bumps
//! a generation count and wakes every waiter; each waiter then pops the
//! device's completions into a shared table and takes its own. A caller
//! reads the generation before it looks, so a completion that arrives
//! between its look and its sleep still wakes it.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use blockdev::{BlockDriver, DeviceInfo, IoError, Request, SubmitError, Tag, SECTOR};
use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use crate::sched::WaitQueue;

struct Inner {
    driver: Box<dyn BlockDriver>,
    /// Completions popped from the driver that their owners have not
    /// collected yet.
    done: BTreeMap<Tag, Result<(), IoError>>,
}

/// Counters for /sys/block/*/stat and the report.
#[derive(Default)]
pub struct Stats {
    pub read_requests: AtomicU64,
    pub write_requests: AtomicU64,
    pub sectors_read: AtomicU64,
    pub sectors_written: AtomicU64,
    pub flushes: AtomicU64,
    /// Writes that joined an adjacent one instead of becoming a request.
    pub merged: AtomicU64,
}

pub struct BlockQueue {
    pub name: String,
    pub rdev: u64,
    pub info: DeviceInfo,
    pub stats: Stats,
    inner: SpinLock<Inner>,
    generation: AtomicU64,
    waiters: WaitQueue,
}

/// One request of a call, with where its data comes from or goes.
pub(crate) struct Op<'a> {
    pub req: Request,
    /// A write's data: pieces laid end to end (merged writes).
    pub write: Vec<&'a [u8]>,
    pub read: Option<&'a mut [u8]>,
    tag: Option<Tag>,
}

impl<'a> Op<'a> {
    pub(crate) fn new(req: Request) -> Op<'a> {
        Op { req, write: Vec::new(), read: None, tag: None }
    }
}

fn errno_of(e: IoError) -> Errno {
    match e {
        IoError::Device => Errno::EIO,
        IoError::Unsupported => Errno::EOPNOTSUPP,
    }
}

fn submit_errno(e: SubmitError) -> Errno {
    match e {
        SubmitError::Invalid => Errno::EINVAL,
        SubmitError::ReadOnly => Errno::EROFS,
        SubmitError::Busy | SubmitError::Unavailable => Errno::EIO,
    }
}

impl BlockQueue {
    pub(super) fn new(name: String, rdev: u64, mut driver: Box<dyn BlockDriver>) -> Option<Arc<BlockQueue>> {
        let info = driver.info();
        let q = Arc::try_new(BlockQueue {
            name,
            rdev,
            info,
            stats: Stats::default(),
            inner: SpinLock::new(Inner { driver: Box::new(NoDriver), done: BTreeMap::new() }),
            generation: AtomicU64::new(0),
            waiters: WaitQueue::new(),
        })
        .ok()?;
        let weak: Weak<BlockQueue> = Arc::downgrade(&q);
        let waker = Arc::try_new(move || {
            if let Some(q) = weak.upgrade() {
                q.generation.fetch_add(1, Ordering::Release);
                q.waiters.wake_all();
            }
        })
        .ok()?;
        driver.set_waker(waker);
        q.inner.lock().driver = driver;
        Some(q)
    }

    /// Capacity in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.info.sectors * SECTOR as u64
    }

    /// Reads `buf.len()` bytes (whole sectors) from `sector` on.
    pub fn read(&self, sector: u64, buf: &mut [u8]) -> Result<(), Errno> {
        if !buf.len().is_multiple_of(SECTOR) {
            return Err(Errno::EINVAL);
        }
        let max = self.info.max_sectors.max(1) as usize * SECTOR;
        let mut ops = Vec::new();
        ops.try_reserve(buf.len().div_ceil(max)).map_err(|_| Errno::ENOMEM)?;
        let mut at = sector;
        for chunk in buf.chunks_mut(max) {
            let sectors = (chunk.len() / SECTOR) as u32;
            let mut op = Op::new(Request::Read { sector: at, sectors });
            op.read = Some(chunk);
            ops.push(op);
            at += u64::from(sectors);
        }
        self.stats.sectors_read.fetch_add((buf_len_sectors(&ops)) as u64, Ordering::Relaxed);
        self.run(&mut ops)
    }

    /// Writes whole sectors from `sector` on; with `fua`, returns only once
    /// they are durable.
    pub fn write(&self, sector: u64, buf: &[u8], fua: bool) -> Result<(), Errno> {
        let mut plug = super::plug::Plug::new();
        plug.add(sector, buf)?;
        self.submit_plug(&mut plug, fua)
    }

    /// Sends the plug's writes down, adjacent ones merged; with `fua`, also
    /// makes them durable before returning.
    pub fn submit_plug(&self, plug: &mut super::plug::Plug<'_>, fua: bool) -> Result<(), Errno> {
        let max = self.info.max_sectors.max(1);
        let (mut ops, merged, in_order) = plug.take_ops(max, fua && self.info.fua)?;
        self.stats.merged.fetch_add(merged as u64, Ordering::Relaxed);
        self.stats.sectors_written.fetch_add(buf_len_sectors(&ops) as u64, Ordering::Relaxed);
        if in_order {
            for op in ops.chunks_mut(1) {
                self.run(op)?;
            }
        } else {
            self.run(&mut ops)?;
        }
        if fua && !self.info.fua {
            self.flush()?;
        }
        Ok(())
    }

    /// Empties the device's volatile write cache.
    pub fn flush(&self) -> Result<(), Errno> {
        if !self.info.volatile_cache {
            return Ok(());
        }
        self.stats.flushes.fetch_add(1, Ordering::Relaxed);
        self.run(&mut [Op::new(Request::Flush)])
    }

    /// Tells the device a range is unused; EOPNOTSUPP when it cannot.
    pub fn discard(&self, sector: u64, sectors: u64) -> Result<(), Errno> {
        let max = u64::from(self.info.max_discard_sectors);
        if max == 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut ops = Vec::new();
        let mut at = sector;
        let end = sector.checked_add(sectors).ok_or(Errno::EINVAL)?;
        while at < end {
            let n = (end - at).min(max);
            ops.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            ops.push(Op::new(Request::Discard { sector: at, sectors: n as u32 }));
            at += n;
        }
        self.run(&mut ops)
    }

    /// Runs every op: submits while the driver has room, sleeps until
    /// completions come, and collects its own. Returns the first error,
    /// after every submitted op has completed (their buffers are borrowed).
    pub(crate) fn run(&self, ops: &mut [Op<'_>]) -> Result<(), Errno> {
        let mut next = 0;
        let mut outstanding = 0usize;
        let mut first_error = None;
        loop {
            let seen = self.generation.load(Ordering::Acquire);
            {
                let mut guard = self.inner.lock();
                let Inner { driver, done } = &mut *guard;
                driver.complete(&mut |tag, r| {
                    done.insert(tag, r);
                });
                for op in ops[..next].iter_mut() {
                    let Some(tag) = op.tag else { continue };
                    let Some(r) = done.remove(&tag) else { continue };
                    driver.release(tag, op.read.as_deref_mut());
                    op.tag = None;
                    outstanding -= 1;
                    if let Err(e) = r {
                        first_error.get_or_insert(errno_of(e));
                    }
                }
                while next < ops.len() && first_error.is_none() {
                    let op = &mut ops[next];
                    let pieces = &op.write;
                    let mut fill = |area: &mut [u8]| {
                        let mut at = 0;
                        for p in pieces {
                            area[at..at + p.len()].copy_from_slice(p);
                            at += p.len();
                        }
                    };
                    match driver.submit(op.req, &mut fill) {
                        Ok(tag) => {
                            op.tag = Some(tag);
                            outstanding += 1;
                            next += 1;
                            match op.req {
                                Request::Read { .. } => &self.stats.read_requests,
                                _ => &self.stats.write_requests,
                            }
                            .fetch_add(1, Ordering::Relaxed);
                        }
                        Err(SubmitError::Busy) => break,
                        Err(e) => {
                            first_error = Some(submit_errno(e));
                        }
                    }
                }
            }
            if outstanding == 0 && (next == ops.len() || first_error.is_some()) {
                return first_error.map_or(Ok(()), Err);
            }
            self.waiters.wait_until(|| self.generation.load(Ordering::Acquire) != seen);
        }
    }
}

fn buf_len_sectors(ops: &[Op<'_>]) -> u32 {
    ops.iter()
        .map(|o| match o.req {
            Request::Read { sectors, .. } | Request::Write { sectors, .. } => sectors,
            _ => 0,
        })
        .sum()
}

/// Stands in while the queue is built (the waker needs the queue first).
struct NoDriver;

impl BlockDriver for NoDriver {
    fn driver_name(&self) -> &'static str {
        "none"
    }
    fn info(&self) -> DeviceInfo {
        DeviceInfo::default()
    }
    fn set_waker(&mut self, _waker: blockdev::Waker) {}
    fn submit(&mut self, _req: Request, _fill: &mut dyn FnMut(&mut [u8])) -> Result<Tag, SubmitError> {
        Err(SubmitError::Unavailable)
    }
    fn complete(&mut self, _sink: &mut dyn FnMut(Tag, Result<(), IoError>)) -> usize {
        0
    }
    fn release(&mut self, _tag: Tag, _read_into: Option<&mut [u8]>) {}
    fn in_flight(&self) -> usize {
        0
    }
}
