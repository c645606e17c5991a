//! Interfaces and their devices as smoltcp sees them: the loopback
//! (`lo`), and NICs through the drivers' `netdev::NetDevice` trait
//! ([`NicDevice`], the adapter to smoltcp's `phy::Device`).
//!
//! Frames move through owned buffers: a received frame is copied once
//! out of the driver's receive buffers (the driver lends them only for
//! the call; a large receive's pieces are joined by that copy) into a
//! spare buffer where one fits, a transmitted one is built by smoltcp in place in the driver's
//! transmit buffer. The loopback hands each frame from transmit to
//! receive without copying it.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

use core::num::{NonZeroU16, NonZeroUsize};

use netdev::{ChecksumRequest, NetDevice, RxMeta, Segmentation, SegmentationKind, TxMeta};
use smoltcp::phy::{self, Checksum, ChecksumCapabilities, DeviceCapabilities, Medium, PacketMeta};
use smoltcp::time::Instant;

/// The largest frame either device kind carries (the loopback's MTU).
pub const LOOPBACK_MTU: usize = 65535;

/// Frames waiting in the loopback at most (a bound, not a tuning knob:
/// each poll round drains them).
const LOOPBACK_QUEUE: usize = 1024;

/// What the interface listings (/proc/net/dev, SIOCGIF*, netlink) show.
#[derive(Clone, Debug)]
pub struct IfaceInfo {
    pub name: &'static str,
    /// Linux's ifindex (lo is 1).
    pub index: u32,
    pub loopback: bool,
    pub mac: [u8; 6],
    pub mtu: usize,
}

/// Counters in /proc/net/dev's shape.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
    pub rx_dropped: u64,
}

/// Loopback frame buffers kept for reuse, at most, of each size: enough
/// for the frames one poll round has in flight on busy connections.
const LOOPBACK_SPARE: usize = 16;

/// The size of a small frame buffer: a pure ACK, a ping-pong's segment,
/// a short datagram.
const SMALL_FRAME: usize = 512;

/// Packets at least this long go into spare full-size buffers; those up
/// to `SMALL_FRAME` into spare small ones; the others get a buffer of
/// their own size.
const SPARE_FROM: usize = 4096;

/// Spent loopback frame buffers, small (`SMALL_FRAME`) and large
/// (`LOOPBACK_MTU`), so most frames are neither allocated nor cleared per
/// packet: a 64 KiB segment cost a 64 KiB allocation and a 64 KiB clear
/// before smoltcp wrote over every byte, and a ping-pong's data and ACK
/// segments an allocation and a free each. The old bytes a reused buffer
/// holds are never read: a frame is only read up to the length it was
/// built with. Behind their own lock, because the receive token that ends
/// a frame's life does not borrow the device.
struct Spares {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
}

static SPARE_FRAMES: hal::sync::SpinLock<Spares> =
    hal::sync::SpinLock::new(Spares { small: Vec::new(), large: Vec::new() });

/// A buffer for a frame of `len` bytes, reused or new; None without
/// memory.
fn loopback_frame(len: usize) -> Option<Vec<u8>> {
    let size = if len >= SPARE_FROM {
        LOOPBACK_MTU
    } else if len <= SMALL_FRAME {
        SMALL_FRAME
    } else {
        len
    };
    if size == SMALL_FRAME || size == LOOPBACK_MTU {
        let mut spares = SPARE_FRAMES.lock();
        let pool = if size == SMALL_FRAME { &mut spares.small } else { &mut spares.large };
        if let Some(f) = pool.pop() {
            return Some(f);
        }
    }
    let mut frame = Vec::new();
    frame.try_reserve_exact(size).ok()?;
    frame.resize(size, 0);
    Some(frame)
}

/// A received NIC frame's buffer with `pieces` joined at its start, the
/// frame's length, and whether the buffer goes back to the spares after
/// (small frames and large receives reuse them; an MTU-sized one gets a
/// buffer of its own size, not cleared first). None without memory.
fn nic_frame(pieces: &[&[u8]]) -> Option<(Vec<u8>, usize, bool)> {
    let len: usize = pieces.iter().map(|p| p.len()).sum();
    if len <= SMALL_FRAME || (SPARE_FROM..=LOOPBACK_MTU).contains(&len) {
        let mut frame = loopback_frame(len)?;
        let mut at = 0;
        for p in pieces {
            frame[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        return Some((frame, len, true));
    }
    let mut frame = Vec::new();
    frame.try_reserve_exact(len).ok()?;
    pieces.iter().for_each(|p| frame.extend_from_slice(p));
    Some((frame, len, false))
}

fn spare_frame(frame: Vec<u8>) {
    let mut spares = SPARE_FRAMES.lock();
    let pool = match frame.len() {
        SMALL_FRAME => &mut spares.small,
        LOOPBACK_MTU => &mut spares.large,
        _ => return,
    };
    if pool.len() < LOOPBACK_SPARE && pool.try_reserve(1).is_ok() {
        pool.push(frame);
    }
}

/// The loopback: what is sent is received, in order. Each queued frame
/// is a buffer and the length of the packet at its start.
pub struct LoopbackDevice {
    queue: VecDeque<(Vec<u8>, usize)>,
    scratch: Vec<u8>,
    pub counters: Counters,
}

/// A NIC behind a driver.
pub struct NicDevice {
    dev: Box<dyn NetDevice>,
    /// The interface's index and address, for the AF_PACKET sockets
    /// that see its frames.
    pub ifindex: u32,
    pub mac: [u8; 6],
    /// Where smoltcp builds a frame the driver would not take (so the
    /// frame is dropped, as a full ring drops it, without allocating).
    scratch: Vec<u8>,
    pub counters: Counters,
    /// The device vouches for the TCP/UDP checksums of some received
    /// frames (`RxMeta::checksum_ok`); the others are checked here.
    pub rx_checksum: bool,
    /// The device completes TCP checksums: smoltcp leaves them 0 and
    /// each TCP frame asks the device (see [`tcp_offload`]).
    tx_checksum: bool,
}

impl NicDevice {
    pub fn new(dev: Box<dyn NetDevice>) -> Result<NicDevice, linux_abi::errno::Errno> {
        let mtu = dev.capabilities().mtu.max(576);
        // As long as the longest frame smoltcp may build: a segment the
        // device cuts itself (TSO) is longer than the MTU.
        let scratch = super::stack::zeroed((mtu + 14).max(dev.capabilities().tso_max))?;
        let mac = dev.mac().0;
        let rx_checksum = dev.capabilities().rx_checksum;
        let tx_checksum = dev.capabilities().tx_checksum;
        Ok(NicDevice { dev, ifindex: 0, mac, scratch, counters: Counters::default(), rx_checksum, tx_checksum })
    }

    pub fn inner(&mut self) -> &mut dyn NetDevice {
        &mut *self.dev
    }
}

pub enum IfaceDevice {
    Loopback(LoopbackDevice),
    Nic(NicDevice),
}

impl IfaceDevice {
    pub fn loopback() -> Result<IfaceDevice, linux_abi::errno::Errno> {
        let scratch = super::stack::zeroed(LOOPBACK_MTU)?;
        Ok(IfaceDevice::Loopback(LoopbackDevice { queue: VecDeque::new(), scratch, counters: Counters::default() }))
    }

    /// Frames are waiting to be received (the loopback's own; a NIC
    /// says so through its waker instead).
    pub fn rx_pending(&self) -> bool {
        match self {
            IfaceDevice::Loopback(l) => !l.queue.is_empty(),
            IfaceDevice::Nic(_) => false,
        }
    }

    /// Whether smoltcp checks every received TCP/UDP checksum itself
    /// (what the SYN gate must then do too): on a NIC without receive
    /// offload. With it, `receive` checks the frames the device did not
    /// vouch for, and the others must not be: a partial checksum (the
    /// host's own packet) is only the pseudo-header's sum.
    pub fn checks_transport_checksums(&self) -> bool {
        matches!(self, IfaceDevice::Nic(n) if !n.rx_checksum)
    }

    pub fn counters(&self) -> Counters {
        match self {
            IfaceDevice::Loopback(l) => l.counters,
            IfaceDevice::Nic(n) => {
                let s = n.dev.stats();
                Counters {
                    rx_packets: s.rx_packets,
                    rx_bytes: s.rx_bytes,
                    tx_packets: s.tx_packets,
                    tx_bytes: s.tx_bytes,
                    tx_dropped: s.tx_dropped + n.counters.tx_dropped,
                    rx_dropped: s.rx_dropped + n.counters.rx_dropped,
                }
            }
        }
    }
}

pub struct RxToken {
    frame: Vec<u8>,
    len: usize,
    /// A buffer from the spares (a loopback frame's, or a received NIC
    /// frame's), which goes back to them.
    loopback: bool,
}

impl RxToken {
    /// A token for a whole frame held elsewhere (the SYN gate's).
    pub fn new(frame: Vec<u8>) -> RxToken {
        let len = frame.len();
        RxToken { frame, len, loopback: false }
    }

    pub fn frame(&self) -> &[u8] {
        &self.frame[..self.len]
    }

    /// The frame's bytes, for keeping; a loopback buffer kept this way is
    /// not returned to the spares.
    pub fn into_frame(mut self) -> Vec<u8> {
        self.frame.truncate(self.len);
        self.frame
    }
}

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let r = f(&self.frame[..self.len]);
        if self.loopback {
            spare_frame(self.frame);
        }
        r
    }
}

pub enum TxToken<'a> {
    Loopback(&'a mut LoopbackDevice),
    /// With the MSS a segmentation request cuts at, if smoltcp asked.
    Nic(&'a mut NicDevice, Option<NonZeroU16>),
}

impl phy::TxToken for TxToken<'_> {
    fn set_meta(&mut self, meta: PacketMeta) {
        if let TxToken::Nic(_, mss) = self {
            *mss = meta.segmentation_offload_size;
        }
    }

    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        match self {
            TxToken::Loopback(l) => {
                let frame = if l.queue.len() < LOOPBACK_QUEUE && l.queue.try_reserve(1).is_ok() {
                    loopback_frame(len)
                } else {
                    None
                };
                let Some(mut frame) = frame.filter(|_| len <= LOOPBACK_MTU) else {
                    // Built where it is dropped: smoltcp needs its
                    // closure run.
                    l.counters.tx_dropped += 1;
                    let n = len.min(l.scratch.len());
                    return f(&mut l.scratch[..n]);
                };
                let r = f(&mut frame[..len]);
                l.counters.tx_packets += 1;
                l.counters.tx_bytes += len as u64;
                l.counters.rx_packets += 1;
                l.counters.rx_bytes += len as u64;
                l.queue.push_back((frame, len));
                r
            }
            TxToken::Nic(n, mss) => {
                let mut f = Some(f);
                let mut out = None;
                let (ifindex, mac, offload) = (n.ifindex, n.mac, n.tx_checksum);
                let sent = n.dev.transmit(len, &mut |buf: &mut [u8]| {
                    let Some(f) = f.take() else { return TxMeta::default() };
                    out = Some(f(&mut buf[..len]));
                    let meta = if offload { tcp_offload(&mut buf[..len], mss) } else { TxMeta::default() };
                    if crate::net::packet::listening() {
                        crate::net::packet::deliver(ifindex, &mac, &buf[..len], true);
                    }
                    meta
                });
                match (out, f) {
                    (Some(r), _) => {
                        if sent.is_err() {
                            // Built, then refused for what it asked.
                            n.counters.tx_dropped += 1;
                        }
                        r
                    }
                    (None, Some(f)) => {
                        // Refused (ring full, link down): built and dropped.
                        let _ = sent;
                        n.counters.tx_dropped += 1;
                        let l = len.min(n.scratch.len());
                        f(&mut n.scratch[..l])
                    }
                    (None, None) => unreachable!("the closure ran or is still here"),
                }
            }
        }
    }
}

impl phy::Device for IfaceDevice {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken, TxToken<'_>)> {
        match self {
            IfaceDevice::Loopback(l) => {
                let (frame, len) = l.queue.pop_front()?;
                Some((RxToken { frame, len, loopback: true }, TxToken::Loopback(l)))
            }
            IfaceDevice::Nic(n) => {
                let mut frame = None;
                let mut dropped = false;
                let offloaded = n.rx_checksum;
                n.dev.receive_parts(1, &mut |pieces: &[&[u8]], meta: RxMeta| {
                    // The one copy of the frame out of the driver's
                    // buffers (a large receive's pieces joined here).
                    let Some((f, len, spare)) = nic_frame(pieces) else {
                        dropped = true;
                        return;
                    };
                    // smoltcp checks no TCP/UDP checksum on a device
                    // that vouches for them; the frames it did not vouch
                    // for are checked here (a wrong one is dropped, as
                    // smoltcp would).
                    if offloaded && !meta.checksum_ok && !transport_checksum_ok(&f[..len]) {
                        dropped = true;
                        if spare {
                            spare_frame(f);
                        }
                        return;
                    }
                    frame = Some((f, len, spare));
                });
                if dropped {
                    n.counters.rx_dropped += 1;
                }
                let Some((frame, len, spare)) = frame.filter(|f| f.1 > 0) else {
                    // Nothing came, or it was dropped: smoltcp passes
                    // over an empty frame, and a dropped one must not
                    // end the round.
                    return dropped.then(|| (RxToken::new(Vec::new()), TxToken::Nic(n, None)));
                };
                if crate::net::packet::listening() {
                    crate::net::packet::deliver(n.ifindex, &n.mac, &frame[..len], false);
                }
                Some((RxToken { frame, len, loopback: spare }, TxToken::Nic(n, None)))
            }
        }
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        Some(match self {
            IfaceDevice::Loopback(l) => TxToken::Loopback(l),
            IfaceDevice::Nic(n) => TxToken::Nic(n, None),
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        match self {
            IfaceDevice::Loopback(_) => {
                caps.medium = Medium::Ip;
                caps.max_transmission_unit = LOOPBACK_MTU;
                // Linux's lo does not checksum either (CHECKSUM_PARTIAL
                // that nobody completes): the bytes never leave memory.
                caps.checksum = ChecksumCapabilities::ignored();
                // ICMP is checksummed and checked on Linux's lo too (raw
                // sockets see the sums; a wrong one gets no echo reply),
                // and so is the IPv4 header.
                caps.checksum.ipv4 = Checksum::Tx;
                caps.checksum.icmpv4 = Checksum::Both;
                caps.checksum.icmpv6 = Checksum::Both;
            }
            IfaceDevice::Nic(n) => {
                // The device's offloads are per frame, smoltcp's switches
                // per device: what the device may skip is done here.
                let c = n.dev.capabilities();
                caps.medium = Medium::Ethernet;
                caps.max_transmission_unit = c.mtu.max(576) + 14;
                if c.rx_checksum {
                    // Checked in `receive` when the device did not.
                    caps.checksum.tcp = Checksum::Tx;
                    caps.checksum.udp = Checksum::Tx;
                }
                if c.tx_checksum {
                    // Every TCP frame asks the device for its sum
                    // (`tcp_offload`); UDP keeps smoltcp's, whose 0 means
                    // "none" on IPv4.
                    caps.checksum.tcp = if c.rx_checksum { Checksum::None } else { Checksum::Rx };
                    // IPv4 only: smoltcp 0.14 drops an IPv6 packet
                    // longer than the MTU instead of handing it over.
                    caps.segmentation.tcpv4 = NonZeroUsize::new(c.tso_max);
                }
            }
        }
        caps
    }
}

/// What the device is to finish in a frame smoltcp built on a device
/// with TCP checksum offload: for a TCP segment, the checksum from the
/// TCP header on, with the pseudo-header's sum (not complemented) put in
/// the field first, as virtio's `NEEDS_CSUM` and Linux's
/// CHECKSUM_PARTIAL want; and the cut into `mss`-byte segments when
/// smoltcp built one longer than the MTU. A TCP field already non-zero
/// (a raw socket's own packet; smoltcp writes 0 when it leaves the sum
/// to the device) is left as built. Anything else asks for nothing.
fn tcp_offload(frame: &mut [u8], mss: Option<NonZeroU16>) -> TxMeta {
    let be16 = |b: &[u8], at: usize| b.get(at..at + 2).map_or(0, |s| u16::from_be_bytes([s[0], s[1]]));
    let sum = |b: &[u8]| b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum::<u32>();
    let (start, l4_len, addr_sum, kind) = match be16(frame, 12) {
        0x0800 => {
            let Some(ip) = frame.get(14..34) else { return TxMeta::default() };
            let ihl = usize::from(ip[0] & 0xf) * 4;
            let frag = be16(ip, 6) & 0x3fff;
            if ip[9] != 6 || ihl < 20 || frag != 0 {
                return TxMeta::default();
            }
            let Some(l4_len) = usize::from(be16(ip, 2)).checked_sub(ihl) else { return TxMeta::default() };
            (14 + ihl, l4_len, sum(&ip[12..20]), SegmentationKind::TcpV4)
        }
        0x86dd => {
            let Some(ip) = frame.get(14..54) else { return TxMeta::default() };
            if ip[6] != 6 {
                return TxMeta::default();
            }
            (54, usize::from(be16(ip, 4)), sum(&ip[8..40]), SegmentationKind::TcpV6)
        }
        _ => return TxMeta::default(),
    };
    let field = start + 16;
    let Some(data_offset) = frame.get(start + 12).map(|b| usize::from(b >> 4) * 4) else { return TxMeta::default() };
    if l4_len < 20 || start + l4_len > frame.len() || data_offset < 20 || be16(frame, field) != 0 {
        return TxMeta::default();
    }
    let mut s = addr_sum + 6 + l4_len as u32;
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    frame[field..field + 2].copy_from_slice(&(s as u16).to_be_bytes());
    let checksum = Some(ChecksumRequest { start: start as u16, offset: 16 });
    let segmentation = mss.filter(|_| kind == SegmentationKind::TcpV4).map(|mss| Segmentation {
        kind,
        header_len: (start + data_offset) as u16,
        mss: mss.get(),
    });
    TxMeta { checksum, segmentation }
}

/// Whether an Ethernet frame's TCP or UDP checksum is right (true for
/// anything else, and for what smoltcp drops anyway: fragments,
/// malformed packets).
fn transport_checksum_ok(frame: &[u8]) -> bool {
    use smoltcp::wire::{
        EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv4Packet, Ipv6Packet, TcpPacket, UdpPacket,
    };
    let Ok(eth) = EthernetFrame::new_checked(frame) else { return true };
    let ip = eth.payload();
    let (src, dst, proto, payload) = match eth.ethertype() {
        EthernetProtocol::Ipv4 => {
            let Ok(p) = Ipv4Packet::new_checked(ip) else { return true };
            if p.more_frags() || p.frag_offset() != 0 {
                return true;
            }
            let (h, t) = (p.header_len() as usize, p.total_len() as usize);
            let Some(payload) = ip.get(h..t) else { return true };
            (IpAddress::Ipv4(p.src_addr()), IpAddress::Ipv4(p.dst_addr()), p.next_header(), payload)
        }
        EthernetProtocol::Ipv6 => {
            let Ok(p) = Ipv6Packet::new_checked(ip) else { return true };
            let Some(payload) = ip.get(40..40 + p.payload_len() as usize) else { return true };
            (IpAddress::Ipv6(p.src_addr()), IpAddress::Ipv6(p.dst_addr()), p.next_header(), payload)
        }
        _ => return true,
    };
    match proto {
        IpProtocol::Tcp => TcpPacket::new_checked(payload).map_or(true, |t| t.verify_checksum(&src, &dst)),
        IpProtocol::Udp => UdpPacket::new_checked(payload).map_or(true, |u| u.verify_checksum(&src, &dst)),
        _ => true,
    }
}
