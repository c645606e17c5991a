//! An I/O queue pair as the block layer drives it: [`NvmeQueue`], one
//! [`blockdev::BlockDriver`] per queue pair, so each CPU's requests go
//! down its own submission queue and come back on its own interrupt.
//!
//! Each request in flight owns a slot: a data area of the transfer limit
//! (physically contiguous, page aligned) and one page for its PRP list or
//! its Dataset Management range. The command identifier is the slot
//! index, and each slot keeps the command it sent, so a controller reset
//! can send the same commands again.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use blockdev::{BlockDriver, DeviceInfo, Expired, IoError, Recovery, Request, SubmitError, Tag, Waker, SECTOR};
use hal::device::{DeviceAddr, DmaBuffer, DmaPool};

use crate::command::{io, Sqe, Status};
use crate::queue::QueuePair;
use crate::regs::PAGE;
use crate::{Error, Nvme};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    Free,
    /// Sent; the controller has not completed it.
    InFlight,
    /// Completed; the block layer has not released it yet.
    Done,
}

pub(crate) struct Slot {
    data: DmaBuffer,
    /// The PRP list, or a discard's range descriptor.
    list: DmaBuffer,
    pub(crate) state: SlotState,
    pub(crate) sqe: Sqe,
    req: Option<Request>,
}

impl Slot {
    /// The request the slot carries, if any.
    pub(crate) fn request(&self) -> Option<Request> {
        self.req
    }
}

pub(crate) struct IoQueue {
    pub(crate) pair: QueuePair,
    pub(crate) slots: Vec<Slot>,
    free: Vec<u16>,
}

impl IoQueue {
    pub(crate) fn new(pair: QueuePair, dma: &Arc<DmaPool>, depth: usize, max_bytes: usize) -> Result<IoQueue, Error> {
        let mut slots = Vec::new();
        slots.try_reserve(depth).map_err(|_| Error::NoMemory)?;
        for _ in 0..depth {
            slots.push(Slot {
                data: dma.alloc(max_bytes).map_err(|_| Error::NoMemory)?,
                list: dma.alloc(PAGE).map_err(|_| Error::NoMemory)?,
                state: SlotState::Free,
                sqe: Sqe::default(),
                req: None,
            });
        }
        let mut free = Vec::new();
        free.try_reserve(depth).map_err(|_| Error::NoMemory)?;
        free.extend((0..depth as u16).rev());
        Ok(IoQueue { pair, slots, free })
    }

    /// Sends every command still in flight again (after a reset emptied
    /// the controller's queues). Returns how many.
    pub(crate) fn resubmit(&mut self) -> usize {
        let mut sent = 0;
        for slot in self.slots.iter().filter(|s| s.state == SlotState::InFlight) {
            if self.pair.push(slot.sqe) {
                sent += 1;
            }
        }
        if sent > 0 {
            self.pair.ring();
        }
        sent
    }
}

/// PRP1 and PRP2 for `len` bytes at the start of `data`: the first page,
/// then the second page itself or a list of the pages after the first.
fn prps(data: &DmaBuffer, list: &mut DmaBuffer, len: usize) -> Option<(DeviceAddr, DeviceAddr)> {
    let pages = len.div_ceil(PAGE);
    let prp2 = match pages {
        0 | 1 => DeviceAddr::default(),
        2 => data.device_addr_at(PAGE)?,
        _ => {
            for i in 1..pages {
                list.write::<DeviceAddr>((i - 1) * 8, data.device_addr_at(i * PAGE)?)?;
            }
            list.device_addr()
        }
    };
    Some((data.device_addr(), prp2))
}

fn io_result(status: Status) -> Result<(), IoError> {
    if status.is_success() {
        Ok(())
    } else if status.is_invalid_opcode() {
        Err(IoError::Unsupported)
    } else {
        Err(IoError::Device)
    }
}

/// One I/O queue pair of a controller, as a block driver.
pub struct NvmeQueue {
    pub(crate) ctrl: Arc<Nvme>,
    pub(crate) index: usize,
}

impl NvmeQueue {
    /// The controller this queue belongs to.
    pub fn controller(&self) -> &Arc<Nvme> {
        &self.ctrl
    }

    fn check(&self, req: Request) -> Result<(), SubmitError> {
        let info = &self.ctrl.info;
        let per_lba = self.ctrl.sectors_per_lba();
        let in_range = |sector: u64, n: u32, max: u32| {
            n > 0
                && n <= max
                && sector.is_multiple_of(per_lba)
                && u64::from(n).is_multiple_of(per_lba)
                && sector.checked_add(u64::from(n)).is_some_and(|end| end <= info.sectors)
        };
        let ok = match req {
            Request::Read { sector, sectors } => in_range(sector, sectors, info.max_sectors),
            Request::Write { sector, sectors, .. } => in_range(sector, sectors, info.max_sectors),
            Request::Flush => true,
            Request::Discard { sector, sectors } => in_range(sector, sectors, info.max_discard_sectors),
        };
        if ok {
            Ok(())
        } else {
            Err(SubmitError::Invalid)
        }
    }
}

impl BlockDriver for NvmeQueue {
    fn driver_name(&self) -> &'static str {
        "nvme"
    }

    fn info(&self) -> DeviceInfo {
        self.ctrl.info
    }

    fn set_waker(&mut self, waker: Waker) {
        if let Some(irq) = self.ctrl.irqs.get(self.index) {
            irq.set_waker(waker);
        }
    }

    fn submit(&mut self, req: Request, fill: &mut dyn FnMut(&mut [u8])) -> Result<Tag, SubmitError> {
        if self.ctrl.pci.is_revoked() {
            return Err(SubmitError::Unavailable);
        }
        self.check(req)?;
        let nsid = self.ctrl.nsid;
        let lba_shift = self.ctrl.lba_shift;
        let mut queue = self.ctrl.io[self.index].lock();
        let q = &mut *queue;
        let slot_index = *q.free.last().ok_or(SubmitError::Busy)?;
        let slot = &mut q.slots[usize::from(slot_index)];
        let lba = |sector: u64| sector >> (lba_shift - 9);
        let blocks = |sectors: u32| ((u64::from(sectors) >> (lba_shift - 9)) - 1) as u32;
        let sqe = match req {
            Request::Read { sector, sectors } | Request::Write { sector, sectors, .. } => {
                let len = sectors as usize * SECTOR;
                let (opcode, fua) = match req {
                    Request::Write { fua, .. } => {
                        fill(&mut slot.data.as_mut_slice()[..len]);
                        (io::WRITE, fua)
                    }
                    _ => (io::READ, false),
                };
                let (prp1, prp2) = prps(&slot.data, &mut slot.list, len).ok_or(SubmitError::Invalid)?;
                let slba = lba(sector);
                Sqe {
                    nsid,
                    prp1,
                    prp2,
                    cdw10: slba as u32,
                    cdw11: (slba >> 32) as u32,
                    cdw12: blocks(sectors) | if fua { io::FUA } else { 0 },
                    ..Sqe::new(opcode, slot_index)
                }
            }
            Request::Flush => Sqe { nsid, ..Sqe::new(io::FLUSH, slot_index) },
            Request::Discard { sector, sectors } => {
                // One range: context attributes, length in blocks, start.
                slot.list.write::<u32>(0, 0).ok_or(SubmitError::Invalid)?;
                slot.list.write::<u32>(4, blocks(sectors) + 1).ok_or(SubmitError::Invalid)?;
                slot.list.write::<u64>(8, lba(sector)).ok_or(SubmitError::Invalid)?;
                Sqe {
                    nsid,
                    prp1: slot.list.device_addr(),
                    cdw10: 0,
                    cdw11: io::DEALLOCATE,
                    ..Sqe::new(io::DATASET_MANAGEMENT, slot_index)
                }
            }
        };
        slot.data.sync_for_device();
        if !q.pair.push(sqe) {
            return Err(SubmitError::Busy);
        }
        let slot = &mut q.slots[usize::from(slot_index)];
        slot.sqe = sqe;
        slot.req = Some(req);
        slot.state = SlotState::InFlight;
        q.free.pop();
        q.pair.ring();
        Ok(slot_index)
    }

    fn complete(&mut self, sink: &mut dyn FnMut(Tag, Result<(), IoError>)) -> usize {
        let mut queue = self.ctrl.io[self.index].lock();
        let q = &mut *queue;
        let qid = q.pair.qid;
        let mut done = 0;
        let mut popped = false;
        while let Some(c) = q.pair.pop() {
            popped = true;
            let Some(slot) = q.slots.get_mut(usize::from(c.cid)) else {
                log::warn!("nvme: queue {qid} completed unknown command {}", c.cid);
                continue;
            };
            if slot.state != SlotState::InFlight {
                continue;
            }
            slot.state = SlotState::Done;
            slot.data.sync_for_cpu();
            let result = io_result(c.status);
            if c.status.is_abort_requested() {
                log::warn!("nvme: queue {qid} command {:?} aborted after its timeout; EIO", slot.req);
            } else if result.is_err() {
                log::warn!("nvme: queue {qid} command {:?}: status {:?}", slot.req, c.status);
            }
            sink(c.cid, result);
            done += 1;
        }
        if popped {
            q.pair.release_completions();
        }
        done
    }

    fn release(&mut self, tag: Tag, read_into: Option<&mut [u8]>) {
        let mut queue = self.ctrl.io[self.index].lock();
        let q = &mut *queue;
        let Some(slot) = q.slots.get_mut(usize::from(tag)) else { return };
        // Only a completed command's slot: the controller may still write
        // an in-flight one's data area.
        if slot.state != SlotState::Done {
            return;
        }
        if let (Some(Request::Read { sectors, .. }), Some(out)) = (slot.req, read_into) {
            let len = (sectors as usize * SECTOR).min(out.len());
            out[..len].copy_from_slice(&slot.data.as_slice()[..len]);
        }
        slot.state = SlotState::Free;
        slot.req = None;
        q.free.push(tag);
    }

    fn release_scatter(&mut self, tag: Tag, read_into: &mut [&mut [u8]]) {
        let mut queue = self.ctrl.io[self.index].lock();
        let q = &mut *queue;
        let Some(slot) = q.slots.get_mut(usize::from(tag)) else { return };
        // As in `release`: only a completed command's slot.
        if slot.state != SlotState::Done {
            return;
        }
        if let Some(Request::Read { sectors, .. }) = slot.req {
            let len = sectors as usize * SECTOR;
            blockdev::scatter(&slot.data.as_slice()[..len], read_into);
        }
        slot.state = SlotState::Free;
        slot.req = None;
        q.free.push(tag);
    }

    fn in_flight(&self) -> usize {
        self.ctrl.io[self.index].lock().slots.iter().filter(|s| s.state != SlotState::Free).count()
    }

    fn interrupts(&self) -> u64 {
        self.ctrl.irqs.get(self.index).map_or(0, |i| i.interrupts.load(Ordering::Relaxed))
    }

    /// Requests timed out. One that timed out for the first time is
    /// aborted (Linux's nvme_timeout): the controller ends it with an
    /// error, or says it could not and the block layer waits another
    /// timeout. One that times out again, or an Abort that fails, resets
    /// the controller, which sends every command in flight on every
    /// queue again.
    fn recover(&mut self, expired: &[Expired]) -> Recovery {
        let mut first = Vec::new();
        if first.try_reserve(expired.len()).is_ok() {
            first.extend(expired.iter().filter(|e| e.recoveries == 0).map(|e| e.tag));
        }
        if !first.is_empty() {
            match self.ctrl.abort(self.index, &first) {
                Ok(_) => return Recovery::Aborted,
                Err(e) => {
                    log::warn!("nvme {}: abort failed ({e:?}); resetting the controller", self.ctrl.pci.address())
                }
            }
        }
        match self.ctrl.reset() {
            Ok(_) => Recovery::Reset,
            Err(e) => {
                log::error!("nvme {}: reset after a timeout failed: {e:?}", self.ctrl.pci.address());
                Recovery::Failed
            }
        }
    }
}
