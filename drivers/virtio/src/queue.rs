//! A split virtqueue (virtio 1.2, section 2.7): a descriptor table, the
//! available ring the driver fills and the used ring the device fills,
//! each in the device's DMA memory.
//!
//! Buffers are given as (device address, length, device-writable)
//! triples taken from [`hal::device::DmaBuffer`]s; the queue chains them
//! and remembers nothing else about them, so the caller keeps its buffers
//! and finds them again by the head index [`VirtQueue::pop_used`] returns.

use alloc::vec::Vec;

use hal::device::layout::virtq::{self, Layout, DESC_F_NEXT, DESC_F_WRITE, RING_IDX};
use hal::device::{DeviceAddr, DmaBuffer, DmaError, DmaRing, IrqVector, Register, WriteOnly};

use crate::transport::{Transport, TransportError};

/// The used ring's flags field and its one flag.
const USED_FLAGS: usize = 0;
const USED_F_NO_NOTIFY: u16 = 1;

hal::dma_struct! {
    /// One descriptor: a buffer the device reads or writes.
    pub struct Desc {
        pub addr: DeviceAddr,
        pub len: u32,
        pub flags: u16,
        pub next: u16,
    }
}

/// One piece of a request.
#[derive(Clone, Copy, Debug)]
pub struct Buffer {
    pub addr: DeviceAddr,
    pub len: u32,
    /// The device writes it (receive buffers); else it reads it.
    pub device_writes: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// Not enough free descriptors for the chain.
    Full,
    /// An empty chain.
    Empty,
    Dma(DmaError),
    Transport(TransportError),
    /// The device returned a head index that is not in flight.
    BadUsedEntry,
}

pub struct VirtQueue {
    index: u16,
    layout: Layout,
    desc: DmaRing<Desc>,
    avail: DmaBuffer,
    used: DmaBuffer,
    notify: Register<u16, WriteOnly>,
    /// Free descriptor indices.
    free: Vec<u16>,
    /// Length of the chain starting at each head in flight (0: not in flight).
    chain_len: Vec<u16>,
    avail_idx: u16,
    last_used: u16,
}

impl VirtQueue {
    /// Sets up queue `index` with at most `size` entries (the device's
    /// maximum if smaller), interrupting on `vector`.
    pub fn new(t: &Transport, index: u16, size: u16, vector: Option<&IrqVector>) -> Result<VirtQueue, QueueError> {
        let max = t.max_queue_size(index);
        if max == 0 {
            return Err(QueueError::Transport(TransportError::NoSuchQueue));
        }
        let want = size.min(max);
        // The largest power of two not above `want`.
        let size = 1u16 << (15 - want.leading_zeros().min(15));
        let layout = Layout::new(size).ok_or(QueueError::Transport(TransportError::NoSuchQueue))?;
        let dma = t.pci().dma();
        let desc = dma.alloc_ring::<Desc>(usize::from(size)).map_err(QueueError::Dma)?;
        let avail = dma.alloc(layout.avail_len()).map_err(QueueError::Dma)?;
        let used = dma.alloc(layout.used_len()).map_err(QueueError::Dma)?;
        let notify = t
            .setup_queue(index, size, [desc.device_addr(), avail.device_addr(), used.device_addr()], vector)
            .map_err(QueueError::Transport)?;
        let mut free = Vec::new();
        free.try_reserve(usize::from(size)).map_err(|_| QueueError::Dma(DmaError::NoMemory))?;
        free.extend((0..size).rev());
        let mut chain_len = Vec::new();
        chain_len.try_reserve(usize::from(size)).map_err(|_| QueueError::Dma(DmaError::NoMemory))?;
        chain_len.resize(usize::from(size), 0);
        Ok(VirtQueue { index, layout, desc, avail, used, notify, free, chain_len, avail_idx: 0, last_used: 0 })
    }

    pub fn size(&self) -> u16 {
        self.layout.size
    }

    pub fn free_descriptors(&self) -> usize {
        self.free.len()
    }

    /// The descriptor the next one-buffer [`VirtQueue::push`] will use, so
    /// a driver can tie a buffer slot to each descriptor.
    pub fn peek_free(&self) -> Option<u16> {
        self.free.last().copied()
    }

    /// Chains `bufs` and makes the chain available to the device (it
    /// sees it after [`VirtQueue::notify`] or its next look). Returns the
    /// head index.
    pub fn push(&mut self, bufs: &[Buffer]) -> Result<u16, QueueError> {
        if bufs.is_empty() {
            return Err(QueueError::Empty);
        }
        if bufs.len() > self.free.len() {
            return Err(QueueError::Full);
        }
        let mut next_index = None;
        // Build back to front so each descriptor knows its successor.
        let mut head = 0;
        for b in bufs.iter().rev() {
            let i = self.free.pop().ok_or(QueueError::Full)?;
            let mut flags = if b.device_writes { DESC_F_WRITE } else { 0 };
            let next = match next_index {
                Some(n) => {
                    flags |= DESC_F_NEXT;
                    n
                }
                None => 0,
            };
            self.desc.set(usize::from(i), Desc { addr: b.addr, len: b.len, flags, next });
            next_index = Some(i);
            head = i;
        }
        self.chain_len[usize::from(head)] = bufs.len() as u16;
        let slot = self.layout.slot(self.avail_idx);
        self.avail.write(self.layout.avail_slot_offset(slot), head);
        self.avail_idx = self.avail_idx.wrapping_add(1);
        // The ring entry before the index that publishes it.
        self.avail.sync_for_device();
        self.avail.write(RING_IDX, self.avail_idx);
        Ok(head)
    }

    /// Tells the device there is new work in this queue.
    pub fn notify(&self) {
        self.notify.write(self.index);
    }

    /// Tells the device there is new work unless it asked not to be told
    /// (`VIRTQ_USED_F_NO_NOTIFY`: it is working through the queue, or has
    /// buffers enough). Each notification is a trap to the hypervisor,
    /// so a busy network queue skips most of them.
    pub fn notify_if_needed(&self) {
        // The published index must be visible to the device before its
        // flags are read (virtio 1.2, 2.7.13.3): a store-load barrier.
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        self.used.sync_for_cpu();
        let flags: u16 = self.used.read(USED_FLAGS).unwrap_or(0);
        if flags & USED_F_NO_NOTIFY == 0 {
            self.notify();
        }
    }

    /// Whether the device has used entries the driver has not popped.
    pub fn has_used(&self) -> bool {
        let idx: u16 = self.used.read(RING_IDX).unwrap_or(self.last_used);
        virtq::pending(idx, self.last_used) != 0
    }

    /// Chains the device finished that the driver has not popped yet.
    pub fn used_pending(&self) -> u16 {
        let idx: u16 = self.used.read(RING_IDX).unwrap_or(self.last_used);
        virtq::pending(idx, self.last_used)
    }

    /// Descriptors given to the device and not yet popped back: the
    /// device holds those not among [`VirtQueue::used_pending`]'s chains.
    pub fn outstanding_descriptors(&self) -> usize {
        usize::from(self.layout.size) - self.free.len()
    }

    /// The next chain the device finished: its head and the bytes the
    /// device wrote. Its descriptors are free again.
    pub fn pop_used(&mut self) -> Option<Result<(u16, u32), QueueError>> {
        if !self.has_used() {
            return None;
        }
        self.used.sync_for_cpu();
        let off = self.layout.used_elem_offset(self.layout.slot(self.last_used));
        let id: u32 = self.used.read(off)?;
        let len: u32 = self.used.read(off + 4)?;
        self.last_used = self.last_used.wrapping_add(1);
        let head = match u16::try_from(id) {
            Ok(h) if h < self.layout.size && self.chain_len[usize::from(h)] != 0 => h,
            _ => return Some(Err(QueueError::BadUsedEntry)),
        };
        // The chain is walked through the table the device can see; a
        // device that scribbled on it must not make the free list grow
        // past the queue (which would allocate) or name a slot beyond it.
        let mut i = head;
        for _ in 0..self.chain_len[usize::from(head)] {
            if i >= self.layout.size || self.free.len() >= usize::from(self.layout.size) {
                break;
            }
            self.free.push(i);
            i = self.desc.get(usize::from(i)).next;
        }
        self.chain_len[usize::from(head)] = 0;
        Some(Ok((head, len)))
    }
}
