//! The block layer's request timeout, on a stand-in driver that loses
//! requests on purpose: a completion whose interrupt never came is found
//! by polling at the timeout; a request the device dropped is sent again
//! by the driver's recovery; one that never completes fails with EIO
//! after the retries, and its slot is freed when it completes late. No
//! caller waits forever.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use blockdev::{BlockDriver, DeviceInfo, Expired, IoError, Recovery, Request, SubmitError, Tag, Waker};
use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::{KTest, TestResult};
use crate::block::queue::RETRIES;
use crate::block::BlockQueue;
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "block::lost_interrupt_found_at_the_timeout", run: lost_interrupt_found_at_the_timeout },
    KTest { name: "block::dropped_request_sent_again_by_recovery", run: dropped_request_sent_again_by_recovery },
    KTest { name: "block::lost_request_fails_with_eio", run: lost_request_fails_with_eio },
];

/// How the stand-in device misbehaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Completes every request at once but never calls the waker.
    NoInterrupt,
    /// Drops every request; a recovery sends the dropped ones again,
    /// which then complete (without an interrupt either).
    DropUntilRecovered,
    /// Never completes anything, recovered or not.
    Never,
}

#[derive(Default)]
struct State {
    /// Sent and not completed (dropped ones included).
    in_flight: Vec<Tag>,
    /// Completed, waiting for `complete` to hand them over.
    finished: Vec<Tag>,
    /// Handed over, not yet released.
    unreleased: Vec<Tag>,
    recoveries: u32,
    /// The most recoveries any request named in the last `recover` had.
    last_expired_recoveries: u32,
    released: u32,
    next_tag: Tag,
}

struct LossyDriver {
    fault: Fault,
    state: Arc<SpinLock<State>>,
}

impl BlockDriver for LossyDriver {
    fn driver_name(&self) -> &'static str {
        "lossy"
    }

    fn info(&self) -> DeviceInfo {
        DeviceInfo { sectors: 2048, logical_block_size: 512, queue_depth: 4, max_sectors: 8, ..DeviceInfo::default() }
    }

    fn set_waker(&mut self, _waker: Waker) {}

    fn submit(&mut self, _req: Request, _fill: &mut dyn FnMut(&mut [u8])) -> Result<Tag, SubmitError> {
        let mut s = self.state.lock();
        if s.in_flight.len() + s.finished.len() + s.unreleased.len() >= 4 {
            return Err(SubmitError::Busy);
        }
        let tag = s.next_tag;
        s.next_tag = s.next_tag.wrapping_add(1);
        s.in_flight.try_reserve(1).map_err(|_| SubmitError::Busy)?;
        s.finished.try_reserve(1).map_err(|_| SubmitError::Busy)?;
        if self.fault == Fault::NoInterrupt {
            s.finished.push(tag);
        } else {
            s.in_flight.push(tag);
        }
        Ok(tag)
    }

    fn complete(&mut self, sink: &mut dyn FnMut(Tag, Result<(), IoError>)) -> usize {
        let mut s = self.state.lock();
        let done: Vec<Tag> = core::mem::take(&mut s.finished);
        if s.unreleased.try_reserve(done.len()).is_err() {
            s.finished = done;
            return 0;
        }
        for &tag in &done {
            sink(tag, Ok(()));
            s.unreleased.push(tag);
        }
        done.len()
    }

    fn release(&mut self, tag: Tag, _read_into: Option<&mut [u8]>) {
        let mut s = self.state.lock();
        if let Some(i) = s.unreleased.iter().position(|&t| t == tag) {
            s.unreleased.swap_remove(i);
            s.released += 1;
        }
    }

    fn in_flight(&self) -> usize {
        let s = self.state.lock();
        s.in_flight.len() + s.finished.len() + s.unreleased.len()
    }

    fn recover(&mut self, expired: &[Expired]) -> Recovery {
        let mut s = self.state.lock();
        s.recoveries += 1;
        // The block layer names the requests that timed out, with the
        // recoveries they had: the first time, none.
        if expired.is_empty() || expired.iter().any(|e| !s.in_flight.contains(&e.tag)) {
            return Recovery::Failed;
        }
        if self.fault == Fault::DropUntilRecovered {
            let sent_again = core::mem::take(&mut s.in_flight);
            if s.finished.try_reserve(sent_again.len()).is_err() {
                s.in_flight = sent_again;
                return Recovery::Failed;
            }
            s.finished.extend(sent_again);
        }
        s.last_expired_recoveries = expired.iter().map(|e| e.recoveries).max().unwrap_or(0);
        Recovery::Reset
    }
}

const TIMEOUT_NS: u64 = 20_000_000;

fn lossy(fault: Fault) -> Result<(Arc<BlockQueue>, Arc<SpinLock<State>>), String> {
    let state = Arc::new(SpinLock::new(State::default()));
    let driver = Box::new(LossyDriver { fault, state: state.clone() });
    let q = BlockQueue::unregistered("lossy", driver).ok_or("no memory for the queue")?;
    ensure!(q.timeout_ns() == crate::block::queue::DEFAULT_TIMEOUT_NS, "default timeout {} ns", q.timeout_ns());
    q.set_timeout_ns(TIMEOUT_NS);
    Ok((q, state))
}

fn lost_interrupt_found_at_the_timeout() -> TestResult {
    let (q, state) = lossy(Fault::NoInterrupt)?;
    let start = crate::clock::now_ns();
    let mut buf = [0u8; 4096];
    q.read(0, &mut buf).map_err(|e| alloc::format!("read: {}", e.name()))?;
    let ms = (crate::clock::now_ns() - start) / 1_000_000;
    let s = state.lock();
    ensure!(s.released == 1 && s.recoveries == 0, "released {} recoveries {}", s.released, s.recoveries);
    let timeouts = q.stats.timeouts.load(Ordering::Relaxed);
    ensure!(timeouts == 1, "{timeouts} timeouts: the completion was found by polling at the timeout");
    // Completed at once, so either the first look found it or the timeout's.
    ensure!(ms < 1000, "took {ms} ms");
    Ok(())
}

fn dropped_request_sent_again_by_recovery() -> TestResult {
    let (q, state) = lossy(Fault::DropUntilRecovered)?;
    let start = crate::clock::now_ns();
    q.write(8, &[0x5A; 2048], false).map_err(|e| alloc::format!("write: {}", e.name()))?;
    let ns = crate::clock::now_ns() - start;
    let s = state.lock();
    ensure!(s.recoveries == 1 && s.released == 1, "recoveries {} released {}", s.recoveries, s.released);
    ensure!(q.stats.timeouts.load(Ordering::Relaxed) == 1, "{} timeouts", q.stats.timeouts.load(Ordering::Relaxed));
    ensure!(ns >= TIMEOUT_NS, "returned after {ns} ns, before the timeout");
    ensure!(q.stats.abandoned.load(Ordering::Relaxed) == 0);
    Ok(())
}

fn lost_request_fails_with_eio() -> TestResult {
    let (q, state) = lossy(Fault::Never)?;
    let start = crate::clock::now_ns();
    let mut buf = [0u8; 4096];
    let r = q.read(16, &mut buf);
    let ns = crate::clock::now_ns() - start;
    ensure!(r == Err(Errno::EIO), "a request that never completes: {r:?}");
    ensure!(ns >= (u64::from(RETRIES) + 1) * TIMEOUT_NS, "EIO after {ns} ns, before every retry's timeout");
    ensure!(ns < 2_000_000_000, "EIO only after {} ms", ns / 1_000_000);
    let (recoveries, last) = {
        let s = state.lock();
        (s.recoveries, s.last_expired_recoveries)
    };
    ensure!(recoveries == RETRIES, "{recoveries} recoveries, not {RETRIES}");
    ensure!(last == RETRIES - 1, "the last recovery named a request with {last} recoveries before it");
    ensure!(q.stats.abandoned.load(Ordering::Relaxed) == 1);
    // The slot stays the device's until it completes; then the next call
    // frees it.
    let left = state.lock().in_flight.len();
    ensure!(left == 1, "{left} requests in the device, not the abandoned one");
    {
        let mut s = state.lock();
        let late = s.in_flight.pop().ok_or("no request in flight")?;
        s.finished.push(late);
    }
    let mut after = [0u8; 512];
    // A request on the same device still fails (it never completes), but
    // the late completion is collected on the way and its slot released.
    q.set_timeout_ns(1_000_000);
    let r = q.read(0, &mut after);
    ensure!(r == Err(Errno::EIO), "{r:?}");
    let released = state.lock().released;
    ensure!(released == 1, "the late completion's slot was not released ({released})");
    Ok(())
}
