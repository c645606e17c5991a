//! The virtio block device (virtio 1.2, section 5.2) as a
//! [`blockdev::BlockDriver`].
//!
//! One request queue. Each request in flight owns a slot: a DMA buffer
//! holding its header, discard segment, status byte and data area, so the
//! device only ever sees this driver's memory and a completion finds its
//! bytes by slot. A request is a chain of three descriptors (header,
//! data, status; two for a flush), so the queue depth is the ring size
//! over three, capped at [`MAX_DEPTH`]. Completion is by interrupt: the
//! top half acknowledges, the bottom half calls the block layer's waker,
//! and the block layer pops the used ring through [`BlockDriver::complete`].
//! virtio-blk has no FUA: the block layer follows such writes with a flush.
//!
//! A request past the block layer's timeout is recovered by a device
//! reset ([`BlockDriver::recover`]): status 0, the requests the device
//! finished while it reset are collected from the old used ring, the
//! features are negotiated again, a fresh virtqueue is built and every
//! request still in flight is sent again from its slot, which kept its
//! header and data. The old ring's memory stays the device's pool's
//! until the reset is confirmed (status reads 0), and goes back to the
//! kernel only with bus mastering off (`release_idle_dma_after_reset`).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;

use blockdev::{BlockDriver, DeviceInfo, Expired, IoError, Recovery, Request, SubmitError, Tag, Waker, SECTOR};
use hal::device::{DmaBuffer, IrqHandler, IrqVector, PciDevice};
use virtio::{feature, Buffer, IrqShared, QueueError, Transport, TransportError, VirtQueue};

/// Device feature bits (virtio 1.2, 5.2.3).
pub mod features {
    pub const SIZE_MAX: u64 = 1 << 1;
    pub const SEG_MAX: u64 = 1 << 2;
    pub const RO: u64 = 1 << 5;
    pub const BLK_SIZE: u64 = 1 << 6;
    pub const FLUSH: u64 = 1 << 9;
    pub const DISCARD: u64 = 1 << 13;
}

/// Request types (`virtio_blk_req.type`).
mod req_type {
    pub const IN: u32 = 0;
    pub const OUT: u32 = 1;
    pub const FLUSH: u32 = 4;
    pub const DISCARD: u32 = 11;
}

/// Status byte values.
mod req_status {
    pub const OK: u8 = 0;
    pub const UNSUPP: u8 = 2;
}

/// Configuration layout offsets (virtio 1.2, 5.2.4).
mod cfg {
    pub const CAPACITY: u64 = 0;
    pub const BLK_SIZE: u64 = 20;
    pub const MAX_DISCARD_SECTORS: u64 = 36;
}

const QUEUE_SIZE: u16 = 128;
/// Requests in flight at most; each slot costs [`SLOT_LEN`] of DMA memory.
pub const MAX_DEPTH: usize = 32;
/// Largest transfer of one request: 128 KiB.
pub const MAX_SECTORS: u32 = 256;
const DATA_OFFSET: usize = 512;
const SLOT_LEN: usize = DATA_OFFSET + MAX_SECTORS as usize * SECTOR;
/// Slot layout: header (type, reserved, sector), then a discard segment
/// (sector, num_sectors, flags), then the status byte.
const HDR: usize = 0;
const HDR_LEN: u32 = 16;
const DISCARD_SEG: usize = 16;
const DISCARD_SEG_LEN: u32 = 16;
const STATUS: usize = 32;
const WANTED: u64 = feature::VERSION_1 | features::RO | features::BLK_SIZE | features::FLUSH | features::DISCARD;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Transport(TransportError),
    Queue(QueueError),
    NoMemory,
    NoInterrupt,
    /// After a reset the device offered other features or another queue
    /// size than at probe: the slots no longer fit it.
    Changed,
}

pub struct VirtioBlk {
    transport: Transport,
    queue: VirtQueue,
    slots: Vec<DmaBuffer>,
    /// The request each slot carries, while in flight.
    in_slot: Vec<Option<Request>>,
    free_slots: Vec<u16>,
    /// The slot each in-flight chain (by head descriptor) belongs to.
    slot_of_head: Vec<Option<u16>>,
    /// Completions collected from the old ring during a reset, handed
    /// out by the next [`BlockDriver::complete`] (capacity: the depth).
    finished: Vec<(Tag, Result<(), IoError>)>,
    /// Features agreed at probe; a reset must agree the same.
    agreed: u64,
    resets: u64,
    info: DeviceInfo,
    shared: Arc<IrqShared>,
    /// Held for their lifetime: dropping a vector frees it.
    vectors: Vec<IrqVector>,
}

fn try_vec<T: Clone>(n: usize, v: T) -> Result<Vec<T>, Error> {
    let mut out = Vec::new();
    out.try_reserve(n).map_err(|_| Error::NoMemory)?;
    out.resize(n, v);
    Ok(out)
}

impl VirtioBlk {
    /// Brings the device up: features, the request queue, slots, interrupt.
    pub fn new(pci: PciDevice) -> Result<VirtioBlk, Error> {
        let mut transport = Transport::new(pci).map_err(Error::Transport)?;
        let agreed = transport.begin_init(WANTED, feature::VERSION_1).map_err(Error::Transport)?;
        let shared = Arc::new(IrqShared::new(transport.isr()));
        let handler: Arc<dyn IrqHandler> = shared.clone();
        let vectors = transport.pci().request_irqs(&[handler]).map_err(|_| Error::NoInterrupt)?;
        shared.set_needs_isr(vectors.first().is_some_and(|v| v.msix_entry().is_none()));
        transport.set_config_vector(vectors.first()).map_err(Error::Transport)?;
        let queue = VirtQueue::new(&transport, 0, QUEUE_SIZE, vectors.first()).map_err(Error::Queue)?;
        let depth = (usize::from(queue.size()) / 3).clamp(1, MAX_DEPTH);
        let dma = transport.pci().dma();
        let mut slots = Vec::new();
        slots.try_reserve(depth).map_err(|_| Error::NoMemory)?;
        for _ in 0..depth {
            slots.push(dma.alloc(SLOT_LEN).map_err(|_| Error::NoMemory)?);
        }
        let mut free_slots = Vec::new();
        free_slots.try_reserve(depth).map_err(|_| Error::NoMemory)?;
        free_slots.extend((0..depth as u16).rev());
        let info = Self::read_info(&transport, agreed, depth);
        transport.pci().set_bus_master(true);
        transport.finish_init();
        Ok(VirtioBlk {
            in_slot: try_vec(depth, None)?,
            slot_of_head: try_vec(usize::from(queue.size()), None)?,
            finished: {
                let mut v = Vec::new();
                v.try_reserve(depth).map_err(|_| Error::NoMemory)?;
                v
            },
            agreed,
            resets: 0,
            transport,
            queue,
            slots,
            free_slots,
            info,
            shared,
            vectors,
        })
    }

    fn read_info(t: &Transport, agreed: u64, depth: usize) -> DeviceInfo {
        let cfg = t.device_config();
        let read32 = |off: u64| cfg.and_then(|c| c.read::<u32>(off).ok()).unwrap_or(0);
        let sectors = u64::from(read32(cfg::CAPACITY)) | (u64::from(read32(cfg::CAPACITY + 4)) << 32);
        let blk = if agreed & features::BLK_SIZE != 0 { read32(cfg::BLK_SIZE) } else { 512 };
        let logical_block_size = if blk >= 512 && blk.is_power_of_two() && blk <= 65536 { blk } else { 512 };
        let max_discard_sectors = if agreed & features::DISCARD != 0 {
            read32(cfg::MAX_DISCARD_SECTORS).min(MAX_SECTORS.max(1) * 64)
        } else {
            0
        };
        DeviceInfo {
            sectors,
            logical_block_size,
            queue_depth: depth,
            max_sectors: MAX_SECTORS,
            read_only: agreed & features::RO != 0,
            volatile_cache: agreed & features::FLUSH != 0,
            fua: false,
            max_discard_sectors,
        }
    }

    /// How the device interrupts (MSI-X, MSI or INTx).
    pub fn irq_kind(&self) -> Option<hal::device::IrqKind> {
        self.vectors.first().map(|v| v.kind())
    }

    fn check(&self, req: Request) -> Result<(), SubmitError> {
        let in_range = |sector: u64, n: u32, max: u32| {
            n > 0 && n <= max && sector.checked_add(u64::from(n)).is_some_and(|end| end <= self.info.sectors)
        };
        let ok = match req {
            Request::Read { sector, sectors } => in_range(sector, sectors, MAX_SECTORS),
            Request::Write { sector, sectors, .. } => {
                if self.info.read_only {
                    return Err(SubmitError::ReadOnly);
                }
                in_range(sector, sectors, MAX_SECTORS)
            }
            Request::Flush => true,
            Request::Discard { sector, sectors } => {
                if self.info.read_only {
                    return Err(SubmitError::ReadOnly);
                }
                in_range(sector, sectors, self.info.max_discard_sectors)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(SubmitError::Invalid)
        }
    }
}

impl BlockDriver for VirtioBlk {
    fn driver_name(&self) -> &'static str {
        "virtio-blk"
    }

    fn info(&self) -> DeviceInfo {
        self.info
    }

    fn set_waker(&mut self, waker: Waker) {
        self.shared.set_waker(waker);
    }

    fn submit(&mut self, req: Request, fill: &mut dyn FnMut(&mut [u8])) -> Result<Tag, SubmitError> {
        if self.transport.pci().is_revoked() {
            return Err(SubmitError::Unavailable);
        }
        self.check(req)?;
        let slot_index = *self.free_slots.last().ok_or(SubmitError::Busy)?;
        let slot = &mut self.slots[usize::from(slot_index)];
        let (kind, sector) = match req {
            // A flush without a volatile cache still goes to the device: it
            // orders nothing, and completes at once.
            Request::Flush => (req_type::FLUSH, 0),
            Request::Read { sector, .. } => (req_type::IN, sector),
            Request::Write { sector, sectors, .. } => {
                let len = sectors as usize * SECTOR;
                fill(&mut slot.as_mut_slice()[DATA_OFFSET..DATA_OFFSET + len]);
                (req_type::OUT, sector)
            }
            Request::Discard { sector, sectors } => {
                slot.write::<u64>(DISCARD_SEG, sector).ok_or(SubmitError::Invalid)?;
                slot.write::<u32>(DISCARD_SEG + 8, sectors).ok_or(SubmitError::Invalid)?;
                slot.write::<u32>(DISCARD_SEG + 12, 0).ok_or(SubmitError::Invalid)?;
                (req_type::DISCARD, 0)
            }
        };
        slot.write::<u32>(HDR, kind).ok_or(SubmitError::Invalid)?;
        slot.write::<u32>(HDR + 4, 0).ok_or(SubmitError::Invalid)?;
        slot.write::<u64>(HDR + 8, sector).ok_or(SubmitError::Invalid)?;
        self.push_slot(slot_index, req)?;
        self.free_slots.pop();
        self.in_slot[usize::from(slot_index)] = Some(req);
        self.queue.notify();
        Ok(slot_index)
    }

    fn complete(&mut self, sink: &mut dyn FnMut(Tag, Result<(), IoError>)) -> usize {
        let mut done = self.finished.len();
        for (tag, result) in self.finished.drain(..) {
            sink(tag, result);
        }
        while let Some(used) = self.queue.pop_used() {
            let Ok((head, _written)) = used else {
                log::warn!("virtio-blk: the device returned a chain not in flight");
                continue;
            };
            let Some(slot_index) = self.slot_of_head.get_mut(usize::from(head)).and_then(Option::take) else {
                continue;
            };
            if self.in_slot[usize::from(slot_index)].is_none() {
                continue;
            }
            sink(slot_index, self.slot_result(slot_index));
            done += 1;
        }
        done
    }

    fn release(&mut self, tag: Tag, read_into: Option<&mut [u8]>) {
        let Some(req) = self.in_slot.get_mut(usize::from(tag)).and_then(Option::take) else { return };
        if let (Request::Read { sectors, .. }, Some(out)) = (req, read_into) {
            let len = (sectors as usize * SECTOR).min(out.len());
            out[..len].copy_from_slice(&self.slots[usize::from(tag)].as_slice()[DATA_OFFSET..DATA_OFFSET + len]);
        }
        self.free_slots.push(tag);
    }

    fn release_scatter(&mut self, tag: Tag, read_into: &mut [&mut [u8]]) {
        let Some(req) = self.in_slot.get_mut(usize::from(tag)).and_then(Option::take) else { return };
        if let Request::Read { sectors, .. } = req {
            let len = sectors as usize * SECTOR;
            blockdev::scatter(&self.slots[usize::from(tag)].as_slice()[DATA_OFFSET..DATA_OFFSET + len], read_into);
        }
        self.free_slots.push(tag);
    }

    fn in_flight(&self) -> usize {
        self.in_slot.iter().filter(|r| r.is_some()).count()
    }

    fn interrupts(&self) -> u64 {
        self.shared.interrupts()
    }

    /// virtio-blk has no abort: a request past its timeout resets the
    /// device, which sends every request still in flight again.
    fn recover(&mut self, expired: &[Expired]) -> Recovery {
        if self.transport.pci().is_revoked() {
            return Recovery::Failed;
        }
        let addr = self.transport.pci().address();
        match self.reset() {
            Ok((finished, resent)) => {
                log::warn!(
                    "virtio-blk {addr}: device reset after {} request(s) timed out: {finished} completed during the reset, {resent} sent again",
                    expired.len()
                );
                Recovery::Reset
            }
            Err(e) => {
                log::error!("virtio-blk {addr}: reset after a timeout failed: {e:?}");
                Recovery::Failed
            }
        }
    }
}

impl VirtioBlk {
    /// Device resets done after timeouts.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// The result the device wrote into a finished slot's status byte.
    fn slot_result(&self, slot_index: u16) -> Result<(), IoError> {
        let slot = &self.slots[usize::from(slot_index)];
        slot.sync_for_cpu();
        match slot.read::<u8>(STATUS) {
            Some(req_status::OK) => Ok(()),
            Some(req_status::UNSUPP) => Err(IoError::Unsupported),
            _ => Err(IoError::Device),
        }
    }

    /// Makes the chain for the request whose header is already in
    /// `slot_index` (and its data, for a write) and gives it to the
    /// device, without notifying it.
    fn push_slot(&mut self, slot_index: u16, req: Request) -> Result<(), SubmitError> {
        let slot = &mut self.slots[usize::from(slot_index)];
        slot.write::<u8>(STATUS, 0xFF).ok_or(SubmitError::Invalid)?;
        let addr = |off: usize| slot.device_addr_at(off).ok_or(SubmitError::Invalid);
        let header = Buffer { addr: addr(HDR)?, len: HDR_LEN, device_writes: false };
        let status = Buffer { addr: addr(STATUS)?, len: 1, device_writes: true };
        let middle = match req {
            Request::Read { sectors, .. } => {
                Some(Buffer { addr: addr(DATA_OFFSET)?, len: sectors * SECTOR as u32, device_writes: true })
            }
            Request::Write { sectors, .. } => {
                Some(Buffer { addr: addr(DATA_OFFSET)?, len: sectors * SECTOR as u32, device_writes: false })
            }
            Request::Discard { .. } => {
                Some(Buffer { addr: addr(DISCARD_SEG)?, len: DISCARD_SEG_LEN, device_writes: false })
            }
            Request::Flush => None,
        };
        slot.sync_for_device();
        let head = match middle {
            Some(m) => self.queue.push(&[header, m, status]),
            None => self.queue.push(&[header, status]),
        }
        .map_err(|e| if e == QueueError::Full { SubmitError::Busy } else { SubmitError::Unavailable })?;
        self.slot_of_head[usize::from(head)] = Some(slot_index);
        Ok(())
    }

    /// Resets the device and sends every request it still held again.
    /// Returns how many it finished during the reset (QEMU drains its
    /// requests before a reset completes) and how many went again.
    fn reset(&mut self) -> Result<(usize, usize), Error> {
        self.transport.reset().map_err(Error::Transport)?;
        // The device confirmed the reset: it no longer reads or writes the
        // old ring. What it finished before is in the used ring.
        let mut finished = 0;
        while let Some(used) = self.queue.pop_used() {
            let Ok((head, _)) = used else { continue };
            let Some(slot_index) = self.slot_of_head.get_mut(usize::from(head)).and_then(Option::take) else {
                continue;
            };
            if self.in_slot[usize::from(slot_index)].is_some() && self.finished.len() < self.finished.capacity() {
                let result = self.slot_result(slot_index);
                self.finished.push((slot_index, result));
                finished += 1;
            }
        }
        // The rest were in the old ring and never finished: they go again.
        let mut again = Vec::new();
        again.try_reserve(self.slots.len()).map_err(|_| Error::NoMemory)?;
        for head in self.slot_of_head.iter_mut() {
            if let Some(slot_index) = head.take() {
                again.push(slot_index);
            }
        }
        let agreed = self.transport.begin_init(WANTED, feature::VERSION_1).map_err(Error::Transport)?;
        if agreed != self.agreed {
            return Err(Error::Changed);
        }
        self.transport.set_config_vector(self.vectors.first()).map_err(Error::Transport)?;
        // Built while the old ring is still held, so its memory is new.
        let queue = VirtQueue::new(&self.transport, 0, QUEUE_SIZE, self.vectors.first()).map_err(Error::Queue)?;
        if queue.size() != self.queue.size() {
            return Err(Error::Changed);
        }
        self.queue = queue;
        self.transport.pci().release_idle_dma_after_reset();
        self.resets += 1;
        let mut resent = 0;
        for slot_index in again {
            let Some(req) = self.in_slot[usize::from(slot_index)] else { continue };
            // The ring holds every slot's chain (depth = size / 3), so this
            // cannot be Full; a request that cannot go fails at its timeout.
            if self.push_slot(slot_index, req).is_ok() {
                resent += 1;
            }
        }
        self.transport.finish_init();
        self.queue.notify();
        Ok((finished, resent))
    }
}
