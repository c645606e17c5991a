//! One block device's request queue: synchronous calls turned into
//! tagged requests, at most the driver's queue depth in flight, and their
//! completions collected by whichever waiting caller takes the lock first.
//!
//! A device has one or more hardware queues (blk-mq's hardware contexts):
//! a driver object each, with its own lock, completions and waiters.
//! virtio-blk has one; NVMe has one per CPU, each with its interrupt
//! steered to that CPU. A call runs on the hardware queue of the CPU it
//! starts on ([`BlockQueue::run`]), so CPUs do not share a lock or a
//! submission queue, and stays on it until its requests completed even
//! if the thread migrates meanwhile.
//!
//! The driver's interrupt bottom half calls its hardware queue's waker,
//! which bumps a generation count and wakes that queue's waiters; each
//! waiter then pops the device's completions into a shared table and
//! takes its own. A caller reads the generation before it looks, so a
//! completion that arrives between its look and its sleep still wakes it.
//!
//! No request waits forever: each has a timeout (Linux's 30 s default,
//! [`BlockQueue::set_timeout_ns`]). When one passes, the caller first
//! polls the device (a completion whose interrupt was lost is found
//! there), then asks the driver to recover ([`BlockDriver::recover`]:
//! NVMe aborts the request, and resets the controller and sends its
//! requests again if it times out once more) and waits
//! another timeout, up to [`RETRIES`] times; after that the request fails
//! with EIO. Its tag is abandoned, not reused: if the device completes it
//! after all, the completion is collected and the slot released then.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use blockdev::{BlockDriver, DeviceInfo, Expired, IoError, Recovery, Request, SubmitError, Tag, SECTOR};
use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use crate::sched::WaitQueue;

struct Inner {
    driver: Box<dyn BlockDriver>,
    /// Completions popped from the driver that their owners have not
    /// collected yet.
    done: BTreeMap<Tag, Result<(), IoError>>,
    /// Tags whose callers gave up on them after the timeout: released when
    /// their completion turns up.
    abandoned: BTreeSet<Tag>,
}

/// Linux's default block request timeout (`/sys/block/*/queue/io_timeout`).
pub const DEFAULT_TIMEOUT_NS: u64 = 30_000_000_000;
/// Recoveries tried for a request that timed out before it fails with EIO.
pub const RETRIES: u32 = 2;

/// Counters for /sys/block/*/stat and the report.
#[derive(Default)]
pub struct Stats {
    pub read_requests: AtomicU64,
    pub write_requests: AtomicU64,
    pub sectors_read: AtomicU64,
    pub sectors_written: AtomicU64,
    pub flushes: AtomicU64,
    /// Flush and discard requests sent.
    pub flush_requests: AtomicU64,
    pub discards: AtomicU64,
    /// Writes that joined an adjacent one instead of becoming a request.
    pub merged: AtomicU64,
    /// Requests that passed their timeout, driver recoveries asked for,
    /// and requests given up on with EIO.
    pub timeouts: AtomicU64,
    pub recoveries: AtomicU64,
    pub abandoned: AtomicU64,
}

/// One hardware queue: a driver object and the callers waiting on it.
struct HwQueue {
    inner: SpinLock<Inner>,
    generation: AtomicU64,
    waiters: WaitQueue,
}

pub struct BlockQueue {
    pub name: String,
    pub rdev: u64,
    pub family: super::Family,
    pub info: DeviceInfo,
    pub stats: Stats,
    /// How long a request may be in flight before the driver is asked to
    /// recover, in ns.
    timeout_ns: AtomicU64,
    hw: Vec<HwQueue>,
}

/// One request of a call, with where its data comes from or goes.
pub(crate) struct Op<'a> {
    pub req: Request,
    /// A write's data: pieces laid end to end (merged writes).
    pub write: Vec<&'a [u8]>,
    pub read: Option<&'a mut [u8]>,
    /// A scattered read's buffers, laid end to end (then `read` is None).
    read_parts: Vec<&'a mut [u8]>,
    tag: Option<Tag>,
    /// When the request in flight times out (monotonic ns).
    deadline: u64,
    /// Recoveries tried for it so far.
    retries: u32,
}

impl<'a> Op<'a> {
    pub(crate) fn new(req: Request) -> Op<'a> {
        Op { req, write: Vec::new(), read: None, read_parts: Vec::new(), tag: None, deadline: 0, retries: 0 }
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
    /// A device driven through `drivers`, one per hardware queue (at
    /// least one), which all describe the same device.
    pub(super) fn new(
        name: String,
        rdev: u64,
        family: super::Family,
        drivers: Vec<Box<dyn BlockDriver>>,
    ) -> Option<Arc<BlockQueue>> {
        let info = drivers.first()?.info();
        let mut hw = Vec::new();
        hw.try_reserve_exact(drivers.len()).ok()?;
        for _ in 0..drivers.len() {
            hw.push(HwQueue {
                inner: SpinLock::new(Inner {
                    driver: Box::new(NoDriver),
                    done: BTreeMap::new(),
                    abandoned: BTreeSet::new(),
                }),
                generation: AtomicU64::new(0),
                waiters: WaitQueue::new(),
            });
        }
        let q = Arc::try_new(BlockQueue {
            name,
            rdev,
            family,
            info,
            stats: Stats::default(),
            timeout_ns: AtomicU64::new(DEFAULT_TIMEOUT_NS),
            hw,
        })
        .ok()?;
        q.install(drivers).ok()?;
        Some(q)
    }

    /// A queue over `driver` that is not registered (no /dev node): the
    /// test kernel's stand-in devices.
    #[cfg(feature = "ktest")]
    pub fn unregistered(name: &str, driver: Box<dyn BlockDriver>) -> Option<Arc<BlockQueue>> {
        let mut drivers = Vec::new();
        drivers.try_reserve(1).ok()?;
        drivers.push(driver);
        let mut n = String::new();
        n.try_reserve(name.len()).ok()?;
        n.push_str(name);
        BlockQueue::new(n, 0, super::Family::Virtio, drivers)
    }

    /// Puts `drivers` under the hardware queues, each with a waker for its
    /// own queue; returns the drivers they replace.
    fn install(self: &Arc<Self>, drivers: Vec<Box<dyn BlockDriver>>) -> Result<Vec<Box<dyn BlockDriver>>, Errno> {
        if drivers.len() != self.hw.len() {
            return Err(Errno::EINVAL);
        }
        let mut old = Vec::new();
        old.try_reserve_exact(drivers.len()).map_err(|_| Errno::ENOMEM)?;
        for (index, mut driver) in drivers.into_iter().enumerate() {
            let weak: Weak<BlockQueue> = Arc::downgrade(self);
            let waker = Arc::try_new(move || {
                if let Some(hw) = weak.upgrade().as_ref().and_then(|q| q.hw.get(index)) {
                    hw.generation.fetch_add(1, Ordering::Release);
                    hw.waiters.wake_all();
                }
            })
            .map_err(|_| Errno::ENOMEM)?;
            driver.set_waker(waker);
            old.push(core::mem::replace(&mut self.hw[index].inner.lock().driver, driver));
        }
        Ok(old)
    }

    /// Takes the device's drivers out (a driver restart): requests then
    /// fail with EIO until [`BlockQueue::attach`]. EBUSY while requests
    /// are in flight.
    #[allow(dead_code)] // the test kernel's restart test; a supervisor later
    pub fn detach(self: &Arc<Self>) -> Result<Vec<Box<dyn BlockDriver>>, Errno> {
        if self.hw.iter().any(|hw| hw.inner.lock().driver.in_flight() > 0) {
            return Err(Errno::EBUSY);
        }
        let mut none: Vec<Box<dyn BlockDriver>> = Vec::new();
        none.try_reserve_exact(self.hw.len()).map_err(|_| Errno::ENOMEM)?;
        for _ in 0..self.hw.len() {
            none.push(crate::mm::try_box(NoDriver).map_err(|_| Errno::ENOMEM)?);
        }
        self.install(none)
    }

    /// Gives a detached device its (restarted) drivers: as many as it has
    /// hardware queues, for a device of the same size and block size.
    #[allow(dead_code)] // the test kernel's restart test; a supervisor later
    pub fn attach(self: &Arc<Self>, drivers: Vec<Box<dyn BlockDriver>>) -> Result<(), Errno> {
        let same = drivers.iter().all(|d| {
            let i = d.info();
            i.sectors == self.info.sectors && i.logical_block_size == self.info.logical_block_size
        });
        if !same {
            return Err(Errno::EINVAL);
        }
        self.install(drivers).map(drop)
    }

    /// Sets the request timeout (/sys/block/*/queue/io_timeout), at
    /// least 1 ms.
    pub fn set_timeout_ns(&self, ns: u64) {
        self.timeout_ns.store(ns.max(1_000_000), Ordering::Relaxed);
    }

    pub fn timeout_ns(&self) -> u64 {
        self.timeout_ns.load(Ordering::Relaxed)
    }

    /// Hardware queues (1 for a single-queue driver).
    pub fn hw_queues(&self) -> usize {
        self.hw.len()
    }

    /// Interrupts each hardware queue's driver took.
    #[allow(dead_code)] // the test kernel
    pub fn hw_interrupts(&self) -> Vec<u64> {
        self.hw.iter().map(|hw| hw.inner.lock().driver.interrupts()).collect()
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

    /// Reads consecutive sectors from `sector` into `bufs` laid end to end
    /// (each whole sectors): the page cache's frames, filled by the driver
    /// straight from its DMA slots. Requests are as large as the driver
    /// takes, whatever the buffers' sizes, and all go down at once.
    pub fn read_scatter(&self, sector: u64, bufs: &mut [&mut [u8]]) -> Result<(), Errno> {
        if bufs.iter().any(|b| !b.len().is_multiple_of(SECTOR)) {
            return Err(Errno::EINVAL);
        }
        let max = self.info.max_sectors.max(1) as usize * SECTOR;
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut ops = Vec::new();
        ops.try_reserve(total.div_ceil(max)).map_err(|_| Errno::ENOMEM)?;
        let mut at = sector;
        let mut parts: Vec<&mut [u8]> = Vec::new();
        let mut len = 0;
        for b in bufs.iter_mut() {
            let mut rest: &mut [u8] = b;
            while !rest.is_empty() {
                let take = (max - len).min(rest.len());
                let (head, tail) = core::mem::take(&mut rest).split_at_mut(take);
                parts.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                parts.push(head);
                len += take;
                rest = tail;
                if len == max {
                    push_read(&mut at, &mut parts, &mut len, &mut ops);
                }
            }
        }
        if len > 0 {
            push_read(&mut at, &mut parts, &mut len, &mut ops);
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
    /// after every submitted op has completed or been given up on (their
    /// buffers are borrowed; an abandoned request's data area is the
    /// driver's, never the caller's buffer).
    pub(crate) fn run(&self, ops: &mut [Op<'_>]) -> Result<(), Errno> {
        let hw = &self.hw[hal::percpu::cpu_id() % self.hw.len()];
        let mut next = 0;
        let mut outstanding = 0usize;
        let mut first_error = None;
        let mut busy_since = None;
        loop {
            let seen = hw.generation.load(Ordering::Acquire);
            let timeout = self.timeout_ns();
            let mut earliest = u64::MAX;
            let mut recovered = false;
            {
                let mut guard = hw.inner.lock();
                let Inner { driver, done, abandoned } = &mut *guard;
                driver.complete(&mut |tag, r| {
                    done.insert(tag, r);
                });
                if !abandoned.is_empty() {
                    release_abandoned(driver.as_mut(), done, abandoned);
                }
                let now = hal::time::monotonic_ns();
                for op in ops[..next].iter_mut() {
                    let Some(tag) = op.tag else { continue };
                    let Some(r) = done.remove(&tag) else { continue };
                    if op.deadline <= now {
                        // Completed, but nothing woke us: its interrupt
                        // (or the wakeup) was lost. Linux says "completion
                        // polled".
                        self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                        log::warn!(
                            "{}: {:?} (tag {tag}) completion found by polling at its timeout",
                            self.name,
                            op.req
                        );
                    }
                    if op.read_parts.is_empty() {
                        driver.release(tag, op.read.as_deref_mut());
                    } else {
                        driver.release_scatter(tag, &mut op.read_parts);
                    }
                    op.tag = None;
                    outstanding -= 1;
                    if let Err(e) = r {
                        first_error.get_or_insert(errno_of(e));
                    }
                }
                if outstanding > 0 && ops[..next].iter().any(|op| op.tag.is_some() && op.deadline <= now) {
                    match self.timed_out(driver.as_mut(), abandoned, &mut ops[..next], now, timeout) {
                        TimedOut::Recovered => recovered = true,
                        TimedOut::GaveUp(n) => {
                            outstanding -= n;
                            first_error.get_or_insert(Errno::EIO);
                        }
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
                            busy_since = None;
                            op.tag = Some(tag);
                            op.deadline = hal::time::monotonic_ns().saturating_add(timeout);
                            outstanding += 1;
                            next += 1;
                            match op.req {
                                Request::Read { .. } => &self.stats.read_requests,
                                Request::Write { .. } => &self.stats.write_requests,
                                Request::Discard { .. } => &self.stats.discards,
                                Request::Flush => &self.stats.flush_requests,
                            }
                            .fetch_add(1, Ordering::Relaxed);
                        }
                        Err(SubmitError::Busy) => {
                            // Every slot taken by other callers (or by
                            // requests given up on that never completed):
                            // not forever either.
                            let now = hal::time::monotonic_ns();
                            let since = *busy_since.get_or_insert(now);
                            if outstanding == 0 && now - since > timeout.saturating_mul(u64::from(RETRIES) + 1) {
                                log::error!(
                                    "{}: no free request slot for {} ms; EIO",
                                    self.name,
                                    (now - since) / 1_000_000
                                );
                                first_error = Some(Errno::EIO);
                            }
                            break;
                        }
                        Err(e) => {
                            first_error = Some(submit_errno(e));
                        }
                    }
                }
                for op in ops[..next].iter().filter(|op| op.tag.is_some()) {
                    earliest = earliest.min(op.deadline);
                }
            }
            if outstanding == 0 && (next == ops.len() || first_error.is_some()) {
                return first_error.map_or(Ok(()), Err);
            }
            if recovered {
                // The recovered device may have completed them already.
                continue;
            }
            // With none of ours in flight (other callers hold every slot),
            // look again after a timeout at the latest.
            if earliest == u64::MAX {
                earliest = hal::time::monotonic_ns().saturating_add(timeout);
            }
            hw.waiters.wait_until_deadline(earliest, || hw.generation.load(Ordering::Acquire) != seen);
        }
    }

    /// Some of `ops` passed their deadline with no completion found even
    /// by polling: asks the driver to recover once and gives the expired
    /// ones another timeout, or, past [`RETRIES`] (or when the driver
    /// cannot recover), abandons them.
    fn timed_out(
        &self,
        driver: &mut dyn BlockDriver,
        abandoned: &mut BTreeSet<Tag>,
        ops: &mut [Op<'_>],
        now: u64,
        timeout: u64,
    ) -> TimedOut {
        let expired = |op: &Op<'_>| op.tag.is_some() && op.deadline <= now;
        let count = ops.iter().filter(|op| expired(op)).count();
        self.stats.timeouts.fetch_add(count as u64, Ordering::Relaxed);
        let retry = ops.iter().filter(|op| expired(op)).all(|op| op.retries < RETRIES);
        if retry {
            log::warn!(
                "{}: {count} request(s) in flight for {} ms with no completion; asking the {} driver to recover",
                self.name,
                timeout / 1_000_000,
                driver.driver_name()
            );
            self.stats.recoveries.fetch_add(1, Ordering::Relaxed);
            // Without memory for the list the driver sees none, and
            // resets rather than aborts (NVMe).
            let mut list = Vec::new();
            if list.try_reserve(count).is_ok() {
                list.extend(
                    ops.iter()
                        .filter(|op| expired(op))
                        .filter_map(|op| Some(Expired { tag: op.tag?, recoveries: op.retries })),
                );
            }
            let how = driver.recover(&list);
            if how != Recovery::Failed {
                log::info!(
                    "{}: driver recovery: {how:?}; the request(s) get another {} ms",
                    self.name,
                    timeout / 1_000_000
                );
                for op in ops.iter_mut().filter(|op| expired(op)) {
                    op.retries += 1;
                    op.deadline = hal::time::monotonic_ns().saturating_add(timeout);
                }
                return TimedOut::Recovered;
            }
            log::warn!("{}: the driver could not recover", self.name);
        }
        let mut gave_up = 0;
        for op in ops.iter_mut().filter(|op| expired(op)) {
            let Some(tag) = op.tag.take() else { continue };
            log::error!(
                "{}: {:?} (tag {tag}) timed out {} time(s); failing it with EIO",
                self.name,
                op.req,
                op.retries + 1
            );
            // A late completion of this tag frees its slot then; until
            // then the device may still write the slot's data area.
            let _ = abandoned.insert(tag);
            gave_up += 1;
        }
        self.stats.abandoned.fetch_add(gave_up as u64, Ordering::Relaxed);
        TimedOut::GaveUp(gave_up)
    }
}

/// What [`BlockQueue::timed_out`] did.
enum TimedOut {
    /// The driver recovered; the expired requests have another timeout.
    Recovered,
    /// This many requests were abandoned (they fail with EIO).
    GaveUp(usize),
}

/// Releases abandoned tags whose completions arrived after all.
fn release_abandoned(
    driver: &mut dyn BlockDriver,
    done: &mut BTreeMap<Tag, Result<(), IoError>>,
    abandoned: &mut BTreeSet<Tag>,
) {
    abandoned.retain(|tag| {
        if done.remove(tag).is_some() {
            driver.release(*tag, None);
            false
        } else {
            true
        }
    });
}

/// Ends a scattered read's request: the `len` bytes of `parts` from `at`.
fn push_read<'a>(at: &mut u64, parts: &mut Vec<&'a mut [u8]>, len: &mut usize, ops: &mut Vec<Op<'a>>) {
    let sectors = (*len / SECTOR) as u32;
    let mut op = Op::new(Request::Read { sector: *at, sectors });
    op.read_parts = core::mem::take(parts);
    ops.push(op);
    *at += u64::from(sectors);
    *len = 0;
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
