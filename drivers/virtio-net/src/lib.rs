//! The virtio network device (virtio 1.2, section 5.1) as a
//! [`netdev::NetDevice`].
//!
//! One receive and one transmit queue. Every descriptor owns a fixed
//! slot of one DMA buffer per direction (descriptor `i` is slot `i`;
//! 2 KiB, or 4 KiB for receive with merged buffers), so a frame is built
//! or read in place, after the 12-byte `virtio_net_hdr`, and nothing is
//! copied by the driver. One interrupt
//! vector serves both queues and configuration changes: its top half
//! only acknowledges (the ISR register on a shared INTx line) and asks
//! for the bottom half, which calls the stack's waker.
//!
//! Offloads, when the device offers them (QEMU does on a tap, not on
//! user networking): received frames may carry checksums the device
//! vouches for (`GUEST_CSUM`, reported in [`RxMeta::checksum_ok`]), and
//! with mergeable receive buffers (`MRG_RXBUF`) the host may hand over
//! TCP segments of up to 64 KiB (`GUEST_TSO4/6`) spread over several
//! slots, which the driver lends as the frame's pieces
//! ([`NetDevice::receive_parts`]) for the stack to join in its own copy. On transmit the device
//! may complete TCP/UDP checksums (`CSUM`: `NEEDS_CSUM` with the
//! checksum's place, the field holding the pseudo-header's sum) and cut
//! IPv4 TCP segments of up to 64 KiB into MSS-sized ones (`HOST_TSO4`);
//! such a segment is built in one of a few large transmit buffers (one
//! descriptor each) instead of a 2 KiB slot.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::device::{DmaBuffer, IrqHandler, IrqVector, PciDevice};
use netdev::{
    Capabilities, DeviceError, Events, LinkState, MacAddress, NetDevice, RxMeta, SegmentationKind, Stats, TxError,
    TxMeta, Waker,
};
use virtio::{feature, status, Buffer, IrqShared, QueueError, Transport, TransportError, VirtQueue};

/// Device feature bits this driver uses.
pub mod features {
    /// The device has a MAC address in its configuration.
    pub const MAC: u64 = 1 << 5;
    /// The configuration has a link status field.
    pub const STATUS: u64 = 1 << 16;
    /// The device may leave received checksums to be trusted (partial or
    /// already checked) and says so in the header's flags.
    pub const GUEST_CSUM: u64 = 1 << 1;
    /// The device may hand over TCP segments larger than the MTU.
    pub const GUEST_TSO4: u64 = 1 << 7;
    pub const GUEST_TSO6: u64 = 1 << 8;
    /// A received frame may span several receive buffers
    /// (`num_buffers` in the first one's header).
    pub const MRG_RXBUF: u64 = 1 << 15;
    /// The device completes a transmitted frame's checksum from
    /// `csum_start` (`NEEDS_CSUM`).
    pub const CSUM: u64 = 1 << 0;
    /// The device cuts transmitted IPv4 TCP segments larger than the MTU
    /// (needs `CSUM`).
    pub const HOST_TSO4: u64 = 1 << 11;
}

/// `virtio_net_hdr.flags`: the checksum is partial (the host's own
/// packet, nothing on the wire), or the device checked it.
const HDR_F_NEEDS_CSUM: u8 = 1;
const HDR_F_DATA_VALID: u8 = 2;
/// Offset of `num_buffers` in the header.
const HDR_NUM_BUFFERS: usize = 10;
/// `virtio_net_hdr.gso_type` for a TCP segment over IPv4 (IPv6's, 4, is
/// not used: smoltcp 0.14 drops an IPv6 packet longer than the MTU
/// before it reaches the device).
const GSO_TCPV4: u8 = 1;
/// The longest frame a segmentation request may carry: a 64 KiB IPv4
/// packet behind an Ethernet header.
const MAX_TSO_FRAME: usize = 65535 + 14;
/// Large transmit buffers (header and frame, rounded to pages) and how
/// many: a 256 KiB send ring is four such segments, and the device
/// returns them as fast as the host's tap takes them. A frame finding
/// none free is dropped as a full ring drops it (TCP sends it again), so
/// there are enough for several busy connections.
const LARGE_SLOT: usize = 68 << 10;
const LARGE_SLOTS: usize = 32;
/// The longest frame a merged receive may build: a 64 KiB IP packet
/// behind an Ethernet header (and a VLAN tag).
const MAX_MERGED: usize = 65535 + 18;

/// `virtio_net_hdr` with VERSION_1: flags, gso_type, hdr_len, gso_size,
/// csum_start, csum_offset, num_buffers.
const HDR_LEN: usize = 12;
/// Transmit slot size, and receive slot size without merged receive
/// buffers: header plus the largest untagged Ethernet frame, rounded.
const SLOT: usize = 2048;
/// Receive slot size with merged receive buffers (a page, as Linux's
/// mergeable buffers are under bulk traffic): a 64 KiB segment fills 17
/// slots rather than 33 (each a descriptor QEMU maps and the driver
/// pops), and the ring holds twice the bytes, so the host's sender waits
/// on a full ring less.
const RX_SLOT_MERGED: usize = 4096;
/// The most buffers one frame may span: a 64 KiB frame in the smallest
/// slots, with room to spare.
const MAX_PARTS: usize = MAX_MERGED / (SLOT - HDR_LEN) + 2;
const MAX_FRAME: usize = 1514;
const QUEUE_SIZE: u16 = 256;
const RX: u16 = 0;
const TX: u16 = 1;
/// Configuration: mac[6], then status (bit 0: link up).
const CFG_STATUS: u64 = 6;
/// What the driver asks for; only VERSION_1 is required. The large
/// receives need merged buffers (a frame never fits one slot
/// otherwise), so they are dropped when the device lacks `MRG_RXBUF`.
const WANTED: u64 = feature::VERSION_1
    | features::MAC
    | features::STATUS
    | features::GUEST_CSUM
    | features::GUEST_TSO4
    | features::GUEST_TSO6
    | features::MRG_RXBUF
    | features::CSUM
    | features::HOST_TSO4;

/// Agrees on features with the device: [`WANTED`], less the large
/// receives if buffers cannot be merged.
fn negotiate(t: &mut Transport) -> Result<u64, Error> {
    let agreed = t.begin_init(WANTED, feature::VERSION_1).map_err(Error::Transport)?;
    let mut wanted = WANTED;
    let large = features::GUEST_TSO4 | features::GUEST_TSO6;
    if agreed & large != 0 && agreed & features::MRG_RXBUF == 0 {
        wanted &= !large;
    }
    // The spec makes TSO depend on checksum offload; a device that
    // offers one without the other gets neither.
    if agreed & features::HOST_TSO4 != 0 && agreed & features::CSUM == 0 {
        wanted &= !features::HOST_TSO4;
    }
    if wanted != WANTED {
        return t.begin_init(wanted, feature::VERSION_1).map_err(Error::Transport);
    }
    Ok(agreed)
}

/// The receive and transmit queues, on the device's one vector (and
/// configuration changes on it too).
fn setup_queues(t: &Transport, vector: Option<&IrqVector>) -> Result<(VirtQueue, VirtQueue), Error> {
    t.set_config_vector(vector).map_err(Error::Transport)?;
    let rx = VirtQueue::new(t, RX, QUEUE_SIZE, vector).map_err(Error::Queue)?;
    let tx = VirtQueue::new(t, TX, QUEUE_SIZE, vector).map_err(Error::Queue)?;
    Ok((rx, tx))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Transport(TransportError),
    Queue(QueueError),
    NoMemory,
    NoInterrupt,
}

/// The offloads of an agreed feature set, shown as the names Linux's
/// ethtool gives them ("none" without any).
#[derive(Clone, Copy, Debug)]
pub struct Offloads(u64);

impl core::fmt::Display for Offloads {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names = [
            (features::CSUM, "tx-checksum"),
            (features::HOST_TSO4, "tx-tcp-segmentation"),
            (features::GUEST_CSUM, "rx-checksum"),
            (features::GUEST_TSO4 | features::GUEST_TSO6, "large-receive"),
        ];
        let mut any = false;
        for (bit, name) in names {
            if self.0 & bit != 0 {
                write!(f, "{}{name}", if any { " " } else { "" })?;
                any = true;
            }
        }
        if !any {
            f.write_str("none")?;
        }
        Ok(())
    }
}

pub struct VirtioNet {
    transport: Transport,
    rx: VirtQueue,
    tx: VirtQueue,
    rx_buf: DmaBuffer,
    tx_buf: DmaBuffer,
    /// Which TX slots the device holds.
    tx_busy: Vec<bool>,
    /// The large transmit buffers (`LARGE_SLOTS` of `LARGE_SLOT` bytes,
    /// only with `HOST_TSO4`), which of them the device holds,
    /// and which one each descriptor carries.
    tx_large: Vec<DmaBuffer>,
    large_busy: [bool; LARGE_SLOTS],
    large_of: Vec<Option<u8>>,
    /// Whether a frame asking for a checksum, and one asking for
    /// segmentation, were sent yet: the first of each is logged, so a
    /// test sees the offloads used, not only agreed.
    sent_csum: bool,
    sent_tso: bool,
    /// Likewise for receive: whether a frame the device vouched for, and
    /// one spread over several buffers (a large receive), came yet.
    got_csum: bool,
    got_large: bool,
    /// Where a frame spread over several receive buffers is joined for
    /// [`NetDevice::receive`] (empty until the first one comes); the
    /// stack takes the pieces instead (`receive_parts`).
    merged: Vec<u8>,
    /// The current frame's pieces in `rx_buf` (at most `MAX_PARTS`).
    pieces: Vec<core::ops::Range<usize>>,
    /// Bytes per receive slot (`SLOT`, or `RX_SLOT_MERGED` with merged
    /// receive buffers).
    rx_slot: usize,
    mac: MacAddress,
    link: LinkState,
    stats: Stats,
    /// The device was last found holding no receive buffer (every one
    /// posted was filled and waits for the driver), and how many times
    /// that began (logged the 1st, 2nd, 4th, 8th ... time: a flood makes
    /// it come and go with every drain).
    rx_exhausted: bool,
    rx_exhaustions: u64,
    shared: Arc<IrqShared>,
    /// Held for their lifetime: dropping a vector frees it.
    vectors: Vec<IrqVector>,
}

impl VirtioNet {
    /// Brings the device up: features, queues, receive buffers, interrupt.
    pub fn new(pci: PciDevice) -> Result<VirtioNet, Error> {
        let mut transport = Transport::new(pci).map_err(Error::Transport)?;
        negotiate(&mut transport)?;
        let shared = Arc::new(IrqShared::new(transport.isr()));
        let handler: Arc<dyn IrqHandler> = shared.clone();
        let vectors = transport.pci().request_irqs(&[handler]).map_err(|_| Error::NoInterrupt)?;
        shared.set_needs_isr(vectors.first().is_some_and(|v| v.msix_entry().is_none()));
        let (rx, tx) = setup_queues(&transport, vectors.first())?;
        let dma = transport.pci().dma();
        let rx_slot = if transport.features() & features::MRG_RXBUF != 0 { RX_SLOT_MERGED } else { SLOT };
        let rx_buf = dma.alloc(usize::from(rx.size()) * rx_slot).map_err(|_| Error::NoMemory)?;
        let mut pieces = Vec::new();
        pieces.try_reserve(MAX_PARTS).map_err(|_| Error::NoMemory)?;
        let tx_buf = dma.alloc(usize::from(tx.size()) * SLOT).map_err(|_| Error::NoMemory)?;
        let mut tx_busy = Vec::new();
        tx_busy.try_reserve(usize::from(tx.size())).map_err(|_| Error::NoMemory)?;
        tx_busy.resize(usize::from(tx.size()), false);
        let mut large_of = Vec::new();
        large_of.try_reserve(usize::from(tx.size())).map_err(|_| Error::NoMemory)?;
        large_of.resize(usize::from(tx.size()), None);
        let mut tx_large = Vec::new();
        if transport.features() & features::HOST_TSO4 != 0 {
            tx_large.try_reserve(LARGE_SLOTS).map_err(|_| Error::NoMemory)?;
            for _ in 0..LARGE_SLOTS {
                tx_large.push(dma.alloc(LARGE_SLOT).map_err(|_| Error::NoMemory)?);
            }
        }
        transport.pci().set_bus_master(true);
        let mut nic = VirtioNet {
            mac: MacAddress::default(),
            link: LinkState::Up,
            transport,
            rx,
            tx,
            rx_buf,
            tx_buf,
            tx_busy,
            tx_large,
            large_busy: [false; LARGE_SLOTS],
            large_of,
            sent_csum: false,
            sent_tso: false,
            got_csum: false,
            got_large: false,
            merged: Vec::new(),
            pieces,
            rx_slot,
            stats: Stats::default(),
            rx_exhausted: false,
            rx_exhaustions: 0,
            shared,
            vectors,
        };
        nic.mac = nic.read_mac();
        nic.fill_rx()?;
        nic.transport.finish_init();
        nic.link = nic.read_link();
        Ok(nic)
    }

    /// Resets the device and sets it up again with fresh queues. The
    /// reset makes the device forget every ring and buffer address, so
    /// the old rings' memory may go back to the kernel.
    fn restart(&mut self) -> Result<(), Error> {
        negotiate(&mut self.transport)?;
        let (rx, tx) = setup_queues(&self.transport, self.vectors.first())?;
        self.rx = rx;
        self.tx = tx;
        self.tx_busy.fill(false);
        self.large_busy = [false; LARGE_SLOTS];
        self.large_of.fill(None);
        self.rx_exhausted = false;
        self.transport.pci().release_idle_dma_after_reset();
        self.fill_rx()?;
        self.transport.finish_init();
        self.link = self.read_link();
        Ok(())
    }

    fn read_mac(&self) -> MacAddress {
        let mut mac = [0u8; 6];
        if self.transport.features() & features::MAC != 0 {
            if let Some(cfg) = self.transport.device_config() {
                for (i, b) in mac.iter_mut().enumerate() {
                    *b = cfg.read::<u8>(i as u64).unwrap_or(0);
                }
            }
        }
        MacAddress(mac)
    }

    fn read_link(&self) -> LinkState {
        if self.transport.features() & features::STATUS == 0 {
            return LinkState::Up;
        }
        match self.transport.device_config().and_then(|c| c.read::<u16>(CFG_STATUS).ok()) {
            Some(s) if s & 1 == 0 => LinkState::Down,
            _ => LinkState::Up,
        }
    }

    /// Notes (and logs, once per run) a receive queue whose every posted
    /// buffer the device has filled: it then has nowhere to put a frame,
    /// and QEMU holds further frames in its netdev queue (a real NIC
    /// would drop them) until buffers return and the driver notifies.
    fn note_rx_exhausted(&mut self) {
        let outstanding = self.rx.outstanding_descriptors();
        let exhausted = outstanding > 0 && usize::from(self.rx.used_pending()) >= outstanding;
        if exhausted && !self.rx_exhausted {
            self.rx_exhaustions += 1;
            if self.rx_exhaustions.is_power_of_two() {
                log::warn!(
                    "virtio-net {}: receive queue exhausted ({outstanding} buffers filled and waiting; {} times so far); the device holds further frames until buffers return",
                    self.transport.pci().address(),
                    self.rx_exhaustions
                );
            }
        }
        self.rx_exhausted = exhausted;
    }

    /// Logs the first frame sent with a checksum request and the first
    /// with a segmentation request.
    fn note_offload(&mut self, meta: &TxMeta, len: usize) {
        if let (Some(c), false) = (meta.checksum, self.sent_csum) {
            self.sent_csum = true;
            log::info!(
                "virtio-net {}: first frame with its checksum left to the device ({len} bytes, sum from byte {} into +{})",
                self.transport.pci().address(),
                c.start,
                c.offset
            );
        }
        if let (Some(s), false) = (meta.segmentation, self.sent_tso) {
            self.sent_tso = true;
            log::info!(
                "virtio-net {}: first TCP segment cut by the device ({len} bytes, {} of headers, MSS {})",
                self.transport.pci().address(),
                s.header_len,
                s.mss
            );
        }
    }

    /// Logs the first received frame whose checksum the device vouched
    /// for and the first spread over several buffers.
    fn note_received(&mut self, meta: RxMeta, len: usize, parts: u16) {
        if meta.checksum_ok && !self.got_csum {
            self.got_csum = true;
            log::info!(
                "virtio-net {}: first received frame with its checksum vouched for by the device ({len} bytes)",
                self.transport.pci().address()
            );
        }
        if parts > 1 && !self.got_large {
            self.got_large = true;
            log::info!(
                "virtio-net {}: first large receive ({len} bytes in {parts} buffers)",
                self.transport.pci().address()
            );
        }
    }

    /// Gives every free receive descriptor its slot.
    fn fill_rx(&mut self) -> Result<(), Error> {
        let mut posted = false;
        while self.rx.free_descriptors() > 0 {
            self.push_rx_slot()?;
            posted = true;
        }
        if posted {
            self.rx.notify_if_needed();
        }
        Ok(())
    }

    /// Posts the slot of the descriptor the queue will use next: with
    /// one-descriptor chains, descriptor `i` always carries slot `i`.
    fn push_rx_slot(&mut self) -> Result<u16, Error> {
        let next = self.rx.peek_free().ok_or(Error::Queue(QueueError::Full))?;
        let addr = self.rx_buf.device_addr_at(usize::from(next) * self.rx_slot).ok_or(Error::NoMemory)?;
        let len = self.rx_slot as u32;
        let head = self.rx.push(&[Buffer { addr, len, device_writes: true }]).map_err(Error::Queue)?;
        debug_assert_eq!(head, next);
        Ok(head)
    }

    fn reclaim_tx(&mut self) -> bool {
        let mut any = false;
        while let Some(done) = self.tx.pop_used() {
            match done {
                Ok((head, _)) => {
                    if let Some(b) = self.tx_busy.get_mut(usize::from(head)) {
                        *b = false;
                    }
                    if let Some(k) = self.large_of.get_mut(usize::from(head)).and_then(Option::take) {
                        self.large_busy[usize::from(k)] = false;
                    }
                    any = true;
                }
                Err(_) => self.stats.tx_errors += 1,
            }
        }
        any
    }

    /// The next receive buffer the device filled: its descriptor and
    /// the bytes written (header included for a frame's first buffer).
    fn pop_rx(&mut self) -> Option<(u16, usize)> {
        loop {
            match self.rx.pop_used()? {
                Ok((head, written)) => {
                    self.rx_buf.sync_for_cpu();
                    return Some((head, written as usize));
                }
                Err(_) => self.stats.rx_errors += 1,
            }
        }
    }

    /// Gives the device a receive buffer back for the one just consumed.
    fn repost_rx(&mut self) {
        if self.push_rx_slot().is_err() {
            self.stats.rx_dropped += 1;
        }
    }

    /// Takes the `parts - 1` buffers that follow a frame's first one
    /// (whose bytes are `first`, in the receive buffer) off the used
    /// ring and records where each frame piece lies in `pieces`; the
    /// caller reposts as many buffers as were taken (the first one with
    /// them: the count returned) once it has read them. False, with the
    /// frame to be dropped, if the buffers are not all there, one is
    /// longer than a slot, or the frame is longer than any the device may
    /// send.
    fn gather(&mut self, first: core::ops::Range<usize>, parts: u16) -> (bool, u16) {
        self.pieces.clear();
        let mut total = first.len();
        self.pieces.push(first);
        let mut ok = usize::from(parts) <= MAX_PARTS;
        for taken in 1..parts {
            let Some((head, written)) = self.pop_rx() else { return (false, taken) };
            let start = usize::from(head) * self.rx_slot;
            total += written;
            ok &= written <= self.rx_slot && total <= MAX_MERGED;
            if ok {
                self.pieces.push(start..start + written);
            }
        }
        (ok, parts)
    }

    /// Hands the next received frame to `sink` as its pieces in the
    /// receive buffer, then gives its buffers back; None when no frame
    /// waits, Some(false) when one was dropped.
    fn next_frame(&mut self, merging: bool, sink: &mut dyn FnMut(&[&[u8]], RxMeta)) -> Option<bool> {
        let (head, written) = self.pop_rx()?;
        if !(HDR_LEN..=self.rx_slot).contains(&written) {
            self.stats.rx_errors += 1;
            self.repost_rx();
            return Some(false);
        }
        let start = usize::from(head) * self.rx_slot;
        let hdr = &self.rx_buf.as_slice()[start..start + HDR_LEN];
        let meta = RxMeta { checksum_ok: hdr[0] & (HDR_F_NEEDS_CSUM | HDR_F_DATA_VALID) != 0 };
        let parts = if merging { u16::from_le_bytes([hdr[HDR_NUM_BUFFERS], hdr[HDR_NUM_BUFFERS + 1]]) } else { 1 };
        let (whole, taken) = self.gather(start + HDR_LEN..start + written, parts.max(1));
        if whole {
            let buf = self.rx_buf.as_slice();
            let mut slices: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
            let mut len = 0;
            for (s, r) in slices.iter_mut().zip(self.pieces.iter()) {
                *s = &buf[r.clone()];
                len += r.len();
            }
            sink(&slices[..self.pieces.len()], meta);
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += len as u64;
            self.note_received(meta, len, parts);
        } else {
            self.stats.rx_errors += 1;
        }
        // The buffers popped go back (each reposted descriptor carries
        // its own slot, so which ones come back does not matter).
        for _ in 0..taken {
            self.repost_rx();
        }
        Some(whole)
    }
}

impl VirtioNet {
    /// Interrupts the top half accepted, for tests.
    pub fn interrupts(&self) -> u64 {
        self.shared.interrupts()
    }

    /// Steers the device's interrupt vector to `cpu`.
    pub fn set_irq_affinity(&self, cpu: usize) -> Result<(), hal::device::IrqError> {
        self.vectors.iter().try_for_each(|v| v.set_affinity(cpu))
    }

    /// The offloads agreed with the device, for the boot log: what the
    /// tap checks read to know they are in use.
    pub fn offloads(&self) -> Offloads {
        Offloads(self.transport.features())
    }

    /// How the device interrupts (MSI-X, MSI or INTx).
    pub fn irq_kind(&self) -> Option<hal::device::IrqKind> {
        self.vectors.first().map(|v| v.kind())
    }
}

impl NetDevice for VirtioNet {
    fn driver_name(&self) -> &'static str {
        "virtio-net"
    }

    fn mac(&self) -> MacAddress {
        self.mac
    }

    fn capabilities(&self) -> Capabilities {
        let f = self.transport.features();
        Capabilities {
            mtu: 1500,
            rx_checksum: f & features::GUEST_CSUM != 0,
            tx_checksum: f & features::CSUM != 0,
            tso_max: if self.tx_large.is_empty() { 0 } else { MAX_TSO_FRAME },
        }
    }

    fn link(&self) -> LinkState {
        self.link
    }

    fn set_waker(&mut self, waker: Waker) {
        self.shared.set_waker(waker);
    }

    fn transmit(&mut self, len: usize, fill: &mut dyn FnMut(&mut [u8]) -> TxMeta) -> Result<(), TxError> {
        if self.transport.pci().is_revoked() {
            return Err(TxError::Unavailable);
        }
        let large = len > MAX_FRAME;
        if len > MAX_TSO_FRAME || (large && self.tx_large.is_empty()) {
            return Err(TxError::TooLong);
        }
        if self.link == LinkState::Down {
            return Err(TxError::LinkDown);
        }
        if self.tx.free_descriptors() == 0 || (large && !self.large_busy.contains(&false)) {
            self.reclaim_tx();
        }
        let slot = self.tx.peek_free().ok_or(TxError::Busy)?;
        let large_slot = if large { Some(self.large_busy.iter().position(|b| !b).ok_or(TxError::Busy)?) } else { None };
        let (buf, start) = match large_slot.and_then(|k| self.tx_large.get_mut(k)) {
            Some(b) => (b, 0),
            None => (&mut self.tx_buf, usize::from(slot) * SLOT),
        };
        let bytes = &mut buf.as_mut_slice()[start..start + HDR_LEN + len];
        let meta = fill(&mut bytes[HDR_LEN..]);
        // A refused frame was built: the caller counts it as dropped.
        virtio_net_hdr(self.transport.features(), &meta, len, &mut bytes[..HDR_LEN])?;
        let addr = buf.device_addr_at(start).ok_or(TxError::Unavailable)?;
        buf.sync_for_device();
        let head = self
            .tx
            .push(&[Buffer { addr, len: (HDR_LEN + len) as u32, device_writes: false }])
            .map_err(|_| TxError::Busy)?;
        debug_assert_eq!(head, slot);
        self.tx_busy[usize::from(head)] = true;
        if let Some(k) = large_slot {
            self.large_busy[k] = true;
            self.large_of[usize::from(head)] = Some(k as u8);
        }
        self.tx.notify_if_needed();
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += len as u64;
        self.note_offload(&meta, len);
        Ok(())
    }

    fn receive(&mut self, budget: usize, sink: &mut dyn FnMut(&[u8], RxMeta)) -> usize {
        // Joined here for callers that want one slice (the driver's
        // tests); the stack takes the pieces (`receive_parts`).
        let mut merged = core::mem::take(&mut self.merged);
        let handed = self.receive_parts(budget, &mut |pieces, meta| {
            if let [one] = pieces {
                return sink(one, meta);
            }
            merged.clear();
            if merged.try_reserve(MAX_MERGED).is_ok() {
                pieces.iter().for_each(|p| merged.extend_from_slice(p));
                sink(&merged, meta);
            }
        });
        self.merged = merged;
        handed
    }

    fn receive_parts(&mut self, budget: usize, sink: &mut dyn FnMut(&[&[u8]], RxMeta)) -> usize {
        let merging = self.transport.features() & features::MRG_RXBUF != 0;
        self.note_rx_exhausted();
        let mut handed = 0;
        while handed < budget {
            match self.next_frame(merging, sink) {
                None => break,
                Some(true) => handed += 1,
                Some(false) => {}
            }
        }
        if handed > 0 {
            self.rx.notify_if_needed();
        }
        handed
    }

    fn service(&mut self) -> Events {
        if self.transport.status() & status::NEEDS_RESET != 0 && !self.transport.pci().is_revoked() {
            log::warn!("virtio-net {}: device needs a reset; resetting", self.transport.pci().address());
            let was_reset = self.restart().is_ok();
            return Events { rx_ready: false, tx_room: was_reset, link_changed: true, was_reset };
        }
        let tx_room = self.reclaim_tx();
        let link = self.read_link();
        let link_changed = link != self.link;
        if link_changed {
            let state = if link == LinkState::Up { "up" } else { "down" };
            log::info!("virtio-net {}: link {state}", self.transport.pci().address());
        }
        self.link = link;
        self.note_rx_exhausted();
        let _ = self.fill_rx();
        Events { rx_ready: self.rx.has_used(), tx_room, link_changed, was_reset: false }
    }

    fn reset(&mut self) -> Result<(), DeviceError> {
        if self.transport.pci().is_revoked() {
            return Err(DeviceError::Revoked);
        }
        self.restart().map_err(|e| match e {
            Error::NoMemory | Error::Queue(QueueError::Dma(_)) => DeviceError::NoMemory,
            _ => DeviceError::ResetFailed,
        })
    }

    fn stats(&self) -> Stats {
        self.stats
    }
}

/// Writes the `virtio_net_hdr` in front of a built frame of `len` bytes
/// from what `meta` asks, if the agreed `features` allow it; a frame
/// longer than one Ethernet frame must be segmented.
fn virtio_net_hdr(features: u64, meta: &TxMeta, len: usize, hdr: &mut [u8]) -> Result<(), TxError> {
    hdr.fill(0);
    if let Some(c) = meta.checksum {
        if features & features::CSUM == 0 || usize::from(c.start) + usize::from(c.offset) + 2 > len {
            return Err(TxError::Unavailable);
        }
        hdr[0] = HDR_F_NEEDS_CSUM;
        hdr[6..8].copy_from_slice(&c.start.to_le_bytes());
        hdr[8..10].copy_from_slice(&c.offset.to_le_bytes());
    }
    match meta.segmentation {
        Some(s) => {
            let gso_type = match s.kind {
                SegmentationKind::TcpV4 if features & features::HOST_TSO4 != 0 => GSO_TCPV4,
                _ => return Err(TxError::Unavailable),
            };
            if meta.checksum.is_none() || s.mss == 0 || usize::from(s.header_len) >= len {
                return Err(TxError::Unavailable);
            }
            hdr[1] = gso_type;
            hdr[2..4].copy_from_slice(&s.header_len.to_le_bytes());
            hdr[4..6].copy_from_slice(&s.mss.to_le_bytes());
        }
        None if len > MAX_FRAME => return Err(TxError::TooLong),
        None => {}
    }
    Ok(())
}
