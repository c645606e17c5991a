//! The interface between a NIC driver and the network stack.
//!
//! A driver (`drivers/e1000`, `drivers/virtio-net`, …) owns its device's
//! registers, rings and buffers through the hal's safe device layer, and
//! shows the rest of the kernel only a [`NetDevice`]. The stack never sees
//! a descriptor, a DMA address or a register: it asks for room to build a
//! frame in ([`NetDevice::transmit`]) and is lent each received frame in
//! turn ([`NetDevice::receive`]), so a well-written driver copies nothing
//! beyond what the device itself moves.
//!
//! The same trait is what a later issue puts behind a component boundary:
//! every call carries plain data, and the driver's state is reachable only
//! through it.
//!
//! Frames are whole Ethernet frames (destination MAC first) without the
//! frame check sequence, which the hardware adds and strips.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::sync::Arc;

/// An Ethernet hardware address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MacAddress(pub [u8; 6]);

impl core::fmt::Display for MacAddress {
    /// Linux's form: six lower-case hex pairs joined by colons.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

/// Whether the link is up, as the device last reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    Up,
    Down,
}

/// What a device can do for the stack.
#[derive(Clone, Copy, Debug, Default)]
pub struct Capabilities {
    /// The largest IP packet the link carries (1500 on plain Ethernet).
    pub mtu: usize,
    /// The device fills in TCP/UDP checksums when a frame's [`TxMeta`]
    /// asks it to.
    pub tx_checksum: bool,
    /// The device checks TCP/UDP checksums of received frames and says so
    /// in [`RxMeta::checksum_ok`].
    pub rx_checksum: bool,
    /// The longest frame (Ethernet header included) the device takes
    /// when its [`TxMeta`] asks for TCP segmentation (TSO), or 0.
    pub tso_max: usize,
}

/// A checksum the device is to compute on transmit: the one's-complement
/// sum from `start` to the end of the frame, stored at `start + offset`
/// (virtio's and Linux's CHECKSUM_PARTIAL convention). Both are byte
/// offsets from the start of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChecksumRequest {
    pub start: u16,
    pub offset: u16,
}

/// Segmentation the device is to do on transmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segmentation {
    pub kind: SegmentationKind,
    /// Length of the Ethernet, IP and TCP headers.
    pub header_len: u16,
    /// Payload bytes per segment.
    pub mss: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentationKind {
    TcpV4,
    TcpV6,
}

/// How a frame is to be sent. `TxMeta::default()` asks for nothing: the
/// frame goes out as built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxMeta {
    pub checksum: Option<ChecksumRequest>,
    pub segmentation: Option<Segmentation>,
}

/// What the device said about a received frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxMeta {
    /// The device verified the transport checksum.
    pub checksum_ok: bool,
}

/// Why a frame was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxError {
    /// The transmit ring is full; the driver calls the waker when there is
    /// room again.
    Busy,
    /// The link is down.
    LinkDown,
    /// Longer than the device takes.
    TooLong,
    /// The device is being reset or was revoked.
    Unavailable,
}

/// A device failure the driver could not hide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// The device did not come back from a reset.
    ResetFailed,
    /// The hal took the device's resources away.
    Revoked,
    /// Memory for rings or buffers was not available.
    NoMemory,
}

/// Counters in the shape of Linux's `/proc/net/dev` columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_errors: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
    pub tx_dropped: u64,
}

/// What happened since the stack last asked; returned by
/// [`NetDevice::service`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Received frames are waiting for [`NetDevice::receive`].
    pub rx_ready: bool,
    /// Transmit room was freed.
    pub tx_room: bool,
    /// The link went up or down (read [`NetDevice::link`]).
    pub link_changed: bool,
    /// The driver found the device wedged and reset it.
    pub was_reset: bool,
}

/// Called by the driver, from its interrupt bottom half, when the stack
/// has something to do (frames arrived, transmit room, link change). It
/// must be cheap and must not call back into the driver: the stack's
/// network thread does the work.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// A network interface card, as the stack sees it.
///
/// The stack calls these from one thread at a time (it holds the device
/// behind a lock); the driver's interrupt half talks to it only through
/// its own state and the [`Waker`].
pub trait NetDevice: Send {
    /// A short name for logs and `/proc/net/dev` ("e1000", "virtio-net").
    fn driver_name(&self) -> &'static str;
    fn mac(&self) -> MacAddress;
    fn capabilities(&self) -> Capabilities;
    fn link(&self) -> LinkState;
    /// Registers the waker the driver calls when there is work.
    fn set_waker(&mut self, waker: Waker);

    /// Queues one frame of `len` bytes, which `fill` writes in place into
    /// the device's buffer (so the stack builds frames where the device
    /// reads them) and then says how it is to be sent: the checksum and
    /// segmentation requests need the built frame's offsets, so they come
    /// after it. `fill` is called at most once, and only once the driver
    /// has room for `len` bytes; a frame whose [`TxMeta`] the device
    /// cannot honour (an offload it lacks, a frame longer than one
    /// segment without segmentation) is dropped after `fill`, not queued,
    /// and the error says why.
    fn transmit(&mut self, len: usize, fill: &mut dyn FnMut(&mut [u8]) -> TxMeta) -> Result<(), TxError>;

    /// Lends up to `budget` received frames to `sink`, one at a time and
    /// in arrival order, then gives their buffers back to the device.
    /// Returns how many frames were handed over.
    fn receive(&mut self, budget: usize, sink: &mut dyn FnMut(&[u8], RxMeta)) -> usize;

    /// As [`NetDevice::receive`], but a frame the device holds in several
    /// buffers is lent as its pieces, in order, so the caller joins it
    /// once where it wants it (the driver need not join it first).
    fn receive_parts(&mut self, budget: usize, sink: &mut dyn FnMut(&[&[u8]], RxMeta)) -> usize {
        self.receive(budget, &mut |frame, meta| sink(&[frame], meta))
    }

    /// Reclaims finished transmits, refills the receive ring and reads the
    /// link state. The stack calls it after the waker fired.
    fn service(&mut self) -> Events;

    /// Resets the device and brings it back up with the same address.
    fn reset(&mut self) -> Result<(), DeviceError>;

    fn stats(&self) -> Stats;
}
