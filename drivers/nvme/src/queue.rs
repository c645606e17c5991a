//! One submission queue and its completion queue: the rings in DMA
//! memory, the tail and head the driver keeps, the phase tag that tells
//! a new completion entry from an old one, and the two doorbells.

use hal::device::{DeviceAddr, DmaBuffer, DmaError, DmaPool, DmaRing, MmioRegion, Register, WriteOnly};

use crate::command::{cqe, Sqe, Status};
use crate::regs::Capabilities;

/// A completion, as the driver needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub cid: u16,
    pub dw0: u32,
    pub status: Status,
}

pub struct QueuePair {
    pub qid: u16,
    entries: u16,
    sq: DmaRing<Sqe>,
    cq: DmaBuffer,
    sq_tail: u16,
    /// How far the controller has consumed the submission queue, as the
    /// last completion said.
    sq_head: u16,
    cq_head: u16,
    /// The phase tag a new completion carries; it flips on every wrap.
    phase: bool,
    sq_doorbell: Register<u32, WriteOnly>,
    cq_doorbell: Register<u32, WriteOnly>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    NoMemory,
    /// The doorbells are outside BAR 0.
    NoDoorbell,
}

impl From<DmaError> for QueueError {
    fn from(_: DmaError) -> QueueError {
        QueueError::NoMemory
    }
}

impl QueuePair {
    pub fn new(
        dma: &alloc::sync::Arc<DmaPool>,
        bar: &MmioRegion,
        cap: &Capabilities,
        qid: u16,
        entries: u16,
    ) -> Result<QueuePair, QueueError> {
        let sq = dma.alloc_ring::<Sqe>(usize::from(entries))?;
        let cq = dma.alloc(usize::from(entries) * cqe::SIZE)?;
        let sq_doorbell = bar.register(cap.sq_doorbell(qid)).map_err(|_| QueueError::NoDoorbell)?;
        let cq_doorbell = bar.register(cap.cq_doorbell(qid)).map_err(|_| QueueError::NoDoorbell)?;
        Ok(QueuePair {
            qid,
            entries,
            sq,
            cq,
            sq_tail: 0,
            sq_head: 0,
            cq_head: 0,
            phase: true,
            sq_doorbell,
            cq_doorbell,
        })
    }

    pub fn entries(&self) -> u16 {
        self.entries
    }

    pub fn sq_addr(&self) -> DeviceAddr {
        self.sq.device_addr()
    }

    pub fn cq_addr(&self) -> DeviceAddr {
        self.cq.device_addr()
    }

    /// Back to the state of a queue the controller just created: empty
    /// rings (every old completion's phase tag cleared), indices at 0.
    pub fn reset(&mut self) {
        self.cq.as_mut_slice().fill(0);
        for i in 0..self.sq.len() {
            self.sq.set(i, Sqe::default());
        }
        self.sq_tail = 0;
        self.sq_head = 0;
        self.cq_head = 0;
        self.phase = true;
    }

    /// Queues `sqe`; false if the submission queue is full (one entry
    /// stays empty, so full and empty differ).
    pub fn push(&mut self, sqe: Sqe) -> bool {
        let next = (self.sq_tail + 1) % self.entries;
        if next == self.sq_head {
            return false;
        }
        self.sq.set(usize::from(self.sq_tail), sqe);
        self.sq_tail = next;
        true
    }

    /// Tells the controller about every entry pushed so far.
    pub fn ring(&self) {
        self.cq.sync_for_device();
        self.sq_doorbell.write(u32::from(self.sq_tail));
    }

    /// The next completion, if the controller posted one. The phase tag is
    /// read first and the rest of the entry only after it matched.
    pub fn pop(&mut self) -> Option<Completion> {
        let at = usize::from(self.cq_head) * cqe::SIZE;
        let raw = self.cq.read::<u16>(at + cqe::STATUS)?;
        if (raw & 1 != 0) != self.phase {
            return None;
        }
        self.cq.sync_for_cpu();
        let cid = self.cq.read::<u16>(at + cqe::CID)?;
        let dw0 = self.cq.read::<u32>(at + cqe::DW0)?;
        let sq_head = self.cq.read::<u16>(at + cqe::SQ_HEAD)?;
        if sq_head < self.entries {
            self.sq_head = sq_head;
        }
        self.cq_head += 1;
        if self.cq_head == self.entries {
            self.cq_head = 0;
            self.phase = !self.phase;
        }
        Some(Completion { cid, dw0, status: Status::from_raw(raw) })
    }

    /// Gives the consumed completion entries back to the controller.
    pub fn release_completions(&self) {
        self.cq_doorbell.write(u32::from(self.cq_head));
    }
}
