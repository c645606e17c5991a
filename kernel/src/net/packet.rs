//! AF_PACKET sockets: `socket(AF_PACKET, SOCK_RAW or SOCK_DGRAM,
//! htons(protocol))`, for callers with CAP_NET_RAW (EPERM for the
//! others), as Linux's `af_packet.c` has them, enough for busybox's
//! `udhcpc` and a capture program.
//!
//! * Receiving: each frame a NIC receives is offered here before the
//!   IP stack sees it ([`deliver`], called by the NIC adapter in
//!   `inet/iface.rs`); a socket takes those of its protocol (ETH_P_ALL:
//!   every frame, and the frames the NIC sends too, as PACKET_OUTGOING;
//!   0: none until bound to one) on its bound interface (0: any).
//!   SOCK_RAW returns the Ethernet header, SOCK_DGRAM only the payload;
//!   the source comes in a sockaddr_ll. A socket queues at most
//!   SO_RCVBUF bytes; the frames past that are dropped, as on Linux.
//! * Sending: a whole frame (SOCK_RAW) or a payload the kernel puts an
//!   Ethernet header on (SOCK_DGRAM: the destination MAC from the
//!   address, the source the NIC's), straight to the driver.
//! * PACKET_ADD_MEMBERSHIP/DROP_MEMBERSHIP keep Linux's checks and list;
//!   Kiln's NICs already hand over every frame the host's network sends
//!   them, so no filter is reprogrammed.
//!
//! The loopback has no link layer in Kiln (smoltcp's `Medium::Ip`): a
//! socket may bind to it, and frames sent on it reach the packet sockets
//! of `lo` only, not the IP stack.

use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket as s;

use super::options::{OptValue, SockOptions};
use super::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use super::wait::{block_on, Timeout};
use super::{MsgSink, MsgSource};
use crate::event::{Events, PollTable, Pollee};

pub const SOL_PACKET: i32 = 263;
pub const PACKET_ADD_MEMBERSHIP: i32 = 1;
pub const PACKET_DROP_MEMBERSHIP: i32 = 2;
/// `struct packet_mreq`: ifindex, type, address length, address[8].
const MREQ_LEN: usize = 16;
/// `struct packet_mreq_max`: what Linux copies at most.
const MREQ_MAX: usize = 40;
pub const ETH_P_ALL: u16 = 0x0003;
/// `struct sockaddr_ll`.
pub const SLL_LEN: usize = 20;
/// The sll_addr field's offset.
const SLL_ADDR: usize = 12;
const ETH_HLEN: usize = 14;
const ARPHRD_ETHER: u16 = 1;
const ARPHRD_LOOPBACK: u16 = 772;

/// sll_pkttype values.
pub const PACKET_HOST: u8 = 0;
pub const PACKET_BROADCAST: u8 = 1;
pub const PACKET_MULTICAST: u8 = 2;
pub const PACKET_OTHERHOST: u8 = 3;
pub const PACKET_OUTGOING: u8 = 4;

/// One queued frame.
struct Frame {
    bytes: Vec<u8>,
    ifindex: u32,
    pkttype: u8,
}

/// A PACKET_ADD_MEMBERSHIP entry: ifindex, type, address.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Member {
    ifindex: u32,
    kind: u16,
    alen: u16,
    addr: [u8; 8],
}

struct Inner {
    /// The protocol (an EtherType, host order).
    proto: u16,
    /// The bound interface (0: all).
    ifindex: u32,
    queue: VecDeque<Frame>,
    queued_bytes: usize,
    members: Vec<Member>,
}

pub struct PacketSocket {
    raw: bool,
    opts: SockOptions,
    pollee: Pollee,
    error: AtomicI32,
    /// Frames dropped for want of room (PACKET_STATISTICS's tp_drops).
    drops: AtomicU32,
    inner: SpinLock<Inner>,
}

/// Every open packet socket (weak: the file owns it).
static SOCKETS: SpinLock<Vec<Weak<PacketSocket>>> = SpinLock::new(Vec::new());
/// How many there are: the NICs' receive path skips [`deliver`] at 0.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// Whether any packet socket is open (the cheap test before [`deliver`]).
pub fn listening() -> bool {
    OPEN.load(Ordering::Relaxed) != 0
}

/// socket(AF_PACKET, kind, protocol): `protocol` is the EtherType in
/// network order, as Linux takes it.
pub fn create(kind: u32, protocol: i32) -> Result<Arc<dyn Protocol>, Errno> {
    // packet_create checks the capability before the type.
    if !super::net_raw() {
        return Err(Errno::EPERM);
    }
    let raw = match kind {
        s::SOCK_RAW => true,
        s::SOCK_DGRAM => false,
        // SOCK_PACKET (Linux 2.0's interface) is not provided.
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    let sock = Arc::try_new(PacketSocket {
        raw,
        opts: SockOptions::new(),
        pollee: Pollee::new(),
        error: AtomicI32::new(0),
        drops: AtomicU32::new(0),
        inner: SpinLock::new(Inner {
            proto: u16::from_be(protocol as u16),
            ifindex: 0,
            queue: VecDeque::new(),
            queued_bytes: 0,
            members: Vec::new(),
        }),
    })
    .map_err(|_| Errno::ENOMEM)?;
    let mut all = SOCKETS.lock();
    all.retain(|w| w.strong_count() > 0);
    all.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    all.push(Arc::downgrade(&sock));
    OPEN.store(all.len(), Ordering::Relaxed);
    Ok(sock)
}

/// The packet type of a received frame to the NIC with address `mac`.
fn pkttype(frame: &[u8], mac: &[u8; 6]) -> u8 {
    let dst = &frame[..6];
    if dst == [0xff; 6] {
        PACKET_BROADCAST
    } else if dst[0] & 1 != 0 {
        PACKET_MULTICAST
    } else if dst == mac {
        PACKET_HOST
    } else {
        PACKET_OTHERHOST
    }
}

/// Offers a frame that interface `ifindex` (address `mac`) received, or
/// sent (`outgoing`), to the packet sockets. Called with the stack
/// locked; takes only spin locks.
pub fn deliver(ifindex: u32, mac: &[u8; 6], frame: &[u8], outgoing: bool) {
    if frame.len() < ETH_HLEN {
        return;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let pkttype = if outgoing { PACKET_OUTGOING } else { pkttype(frame, mac) };
    // The sockets are taken out of the list first: a socket whose last
    // reference goes in here takes the list's lock to leave it.
    let mut takers: Vec<Arc<PacketSocket>> = Vec::new();
    {
        let all = SOCKETS.lock();
        for w in all.iter() {
            let Some(p) = w.upgrade() else { continue };
            let (proto, bound) = {
                let i = p.inner.lock();
                (i.proto, i.ifindex)
            };
            let wants = (bound == 0 || bound == ifindex)
                && (proto == ETH_P_ALL || (!outgoing && proto != 0 && proto == ethertype));
            if wants && takers.try_reserve(1).is_ok() {
                takers.push(p);
            }
        }
    }
    for p in takers {
        p.enqueue(frame, ifindex, pkttype);
    }
}

impl PacketSocket {
    fn enqueue(&self, frame: &[u8], ifindex: u32, pkttype: u8) {
        let rcvbuf = self.opts.rcvbuf.load(Ordering::Relaxed) as usize;
        let mut inner = self.inner.lock();
        if inner.queued_bytes + frame.len() > rcvbuf || inner.queue.try_reserve(1).is_err() {
            self.drops.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(frame.len()).is_err() {
            self.drops.fetch_add(1, Ordering::Relaxed);
            return;
        }
        bytes.extend_from_slice(frame);
        inner.queued_bytes += frame.len();
        inner.queue.push_back(Frame { bytes, ifindex, pkttype });
        drop(inner);
        self.opts.async_io.data_ready(linux_abi::signal::POLL_IN);
        self.pollee.notify(Events::IN | Events::RDNORM);
    }

    fn take_err(&self) -> Option<Errno> {
        match self.error.swap(0, Ordering::AcqRel) {
            0 => None,
            e => Errno::from_i32(e),
        }
    }

    fn recv_one(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        if let Some(e) = self.take_err() {
            return Err(e);
        }
        let peek = args.flags & s::MSG_PEEK != 0;
        let frame = {
            let mut inner = self.inner.lock();
            let f = if peek {
                // A copy, so user memory is written with no lock held.
                let Some(f) = inner.queue.front() else { return Err(Errno::EAGAIN) };
                let mut bytes = Vec::new();
                bytes.try_reserve_exact(f.bytes.len()).map_err(|_| Errno::ENOMEM)?;
                bytes.extend_from_slice(&f.bytes);
                Frame { bytes, ifindex: f.ifindex, pkttype: f.pkttype }
            } else {
                let f = inner.queue.pop_front().ok_or(Errno::EAGAIN)?;
                inner.queued_bytes -= f.bytes.len();
                f
            };
            f
        };
        let payload = if self.raw { &frame.bytes[..] } else { &frame.bytes[ETH_HLEN..] };
        let n = payload.len().min(data.remaining());
        data.write(&payload[..n])?;
        let mut out = Received { len: n, ..Received::default() };
        if n < payload.len() {
            out.flags |= s::MSG_TRUNC;
            if args.flags & s::MSG_TRUNC != 0 {
                out.len = payload.len();
            }
        }
        if args.want_addr {
            let mut src = [0u8; 6];
            src.copy_from_slice(&frame.bytes[6..12]);
            let proto = u16::from_be_bytes([frame.bytes[12], frame.bytes[13]]);
            out.addr = Some(AddrBuf::new(&sockaddr_ll(
                proto,
                frame.ifindex,
                hatype(frame.ifindex),
                frame.pkttype,
                Some(&src),
            )));
        }
        Ok(out)
    }

    fn send_frame(&self, payload: &[u8], dest: Option<&[u8]>) -> Result<usize, Errno> {
        let (ifindex, proto, dst) = match dest {
            None => {
                let i = self.inner.lock();
                (i.ifindex, i.proto, None)
            }
            Some(a) => {
                if a.len() < SLL_LEN || a.len() < SLL_ADDR + a[11] as usize {
                    return Err(Errno::EINVAL);
                }
                let proto = u16::from_be_bytes([a[2], a[3]]);
                let ifindex = i32::from_le_bytes([a[4], a[5], a[6], a[7]]) as u32;
                let mut mac = [0u8; 6];
                mac.copy_from_slice(&a[SLL_ADDR..SLL_ADDR + 6]);
                (ifindex, proto, Some(mac))
            }
        };
        let link = super::ifaces::link_by_index(ifindex).map_err(|_| Errno::ENXIO)?;
        if !link.is_up() {
            return Err(Errno::ENETDOWN);
        }
        let reserve = if self.raw { ETH_HLEN } else { 0 };
        if payload.len() > link.mtu as usize + reserve {
            return Err(Errno::EMSGSIZE);
        }
        let frame = if self.raw {
            if payload.len() < ETH_HLEN {
                return Err(Errno::EINVAL);
            }
            let mut f = Vec::new();
            f.try_reserve_exact(payload.len()).map_err(|_| Errno::ENOMEM)?;
            f.extend_from_slice(payload);
            f
        } else {
            // dev_hard_header: no destination is an error for Ethernet.
            let dst = dst.ok_or(Errno::EINVAL)?;
            let mut f = Vec::new();
            f.try_reserve_exact(ETH_HLEN + payload.len()).map_err(|_| Errno::ENOMEM)?;
            f.extend_from_slice(&dst);
            f.extend_from_slice(&link.mac);
            f.extend_from_slice(&proto.to_be_bytes());
            f.extend_from_slice(payload);
            f
        };
        super::inet::stack::transmit_frame(ifindex, &frame)?;
        Ok(payload.len())
    }
}

/// The ARPHRD_* type of interface `ifindex` (lo is always 1).
fn hatype(ifindex: u32) -> u16 {
    if ifindex == 1 {
        ARPHRD_LOOPBACK
    } else {
        ARPHRD_ETHER
    }
}

/// A `struct sockaddr_ll` (20 bytes).
fn sockaddr_ll(proto: u16, ifindex: u32, hatype: u16, pkttype: u8, addr: Option<&[u8; 6]>) -> [u8; SLL_LEN] {
    let mut b = [0u8; SLL_LEN];
    b[0..2].copy_from_slice(&s::AF_PACKET.to_le_bytes());
    b[2..4].copy_from_slice(&proto.to_be_bytes());
    b[4..8].copy_from_slice(&(ifindex as i32).to_le_bytes());
    b[8..10].copy_from_slice(&hatype.to_le_bytes());
    b[10] = pkttype;
    if let Some(a) = addr {
        b[11] = 6;
        b[SLL_ADDR..SLL_ADDR + 6].copy_from_slice(a);
    }
    b
}

impl Protocol for PacketSocket {
    fn family(&self) -> u16 {
        s::AF_PACKET
    }

    fn sock_type(&self) -> SockType {
        if self.raw {
            SockType::Raw
        } else {
            SockType::Dgram
        }
    }

    fn protocol(&self) -> i32 {
        self.inner.lock().proto.to_be() as i32
    }

    fn options(&self) -> &SockOptions {
        &self.opts
    }

    /// packet_bind: a whole sockaddr_ll of AF_PACKET; an interface that
    /// exists (ENODEV); a protocol of 0 keeps the socket's.
    fn bind(&self, a: &[u8], _names: &NameCtx) -> Result<(), Errno> {
        if a.len() < SLL_LEN {
            return Err(Errno::EINVAL);
        }
        if u16::from_le_bytes([a[0], a[1]]) != s::AF_PACKET {
            return Err(Errno::EINVAL);
        }
        let proto = u16::from_be_bytes([a[2], a[3]]);
        let ifindex = i32::from_le_bytes([a[4], a[5], a[6], a[7]]);
        if ifindex != 0 {
            super::ifaces::link_by_index(ifindex as u32).map_err(|_| Errno::ENODEV)?;
        }
        let mut inner = self.inner.lock();
        inner.ifindex = ifindex as u32;
        if proto != 0 {
            inner.proto = proto;
        }
        Ok(())
    }

    fn connect(&self, _a: &[u8], _names: &NameCtx, _nonblock: bool) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    fn sockname(&self) -> AddrBuf {
        let (proto, ifindex) = {
            let i = self.inner.lock();
            (i.proto, i.ifindex)
        };
        match super::ifaces::link_by_index(ifindex).ok().filter(|_| ifindex != 0) {
            Some(link) => AddrBuf::new(&sockaddr_ll(proto, ifindex, link.kind, 0, Some(&link.mac))[..SLL_ADDR + 6]),
            None => AddrBuf::new(&sockaddr_ll(proto, ifindex, 0, 0, None)[..SLL_ADDR]),
        }
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    fn shutdown(&self, _how: i32) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        let len = data.remaining();
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        buf.resize(len, 0);
        data.read(&mut buf)?;
        self.send_frame(&buf, args.addr.filter(|a| !a.is_empty()))
    }

    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        let nonblock = args.nonblock || args.flags & s::MSG_DONTWAIT != 0;
        let timeout = Timeout::from_jiffies(nonblock, self.opts.rcvtimeo.load(Ordering::Relaxed));
        block_on(&self.pollee, Events::IN, timeout, || self.recv_one(data, args))
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(t) = table {
            t.register(&self.pollee);
        }
        let mut ev = Events::OUT | Events::WRNORM;
        if !self.inner.lock().queue.is_empty() {
            ev |= Events::IN | Events::RDNORM;
        }
        if self.error.load(Ordering::Acquire) != 0 {
            ev |= Events::ERR;
        }
        ev
    }

    fn unread(&self) -> Result<usize, Errno> {
        let inner = self.inner.lock();
        let skip = if self.raw { 0 } else { ETH_HLEN };
        Ok(inner.queue.front().map_or(0, |f| f.bytes.len() - skip))
    }

    fn unsent(&self) -> usize {
        0
    }

    fn take_error(&self) -> i32 {
        self.take_err().map_or(0, |e| e.as_i32())
    }

    fn set_error(&self, e: Errno) {
        self.error.store(e.as_i32(), Ordering::Release);
    }

    /// PACKET_ADD_MEMBERSHIP and PACKET_DROP_MEMBERSHIP with Linux's
    /// checks (packet_setsockopt, packet_mc_add, packet_mc_drop).
    fn setsockopt(&self, level: i32, name: i32, val: &[u8]) -> Result<(), Errno> {
        if level != SOL_PACKET {
            return Err(Errno::ENOPROTOOPT);
        }
        match name {
            PACKET_ADD_MEMBERSHIP | PACKET_DROP_MEMBERSHIP => {
                if val.len() < MREQ_LEN {
                    return Err(Errno::EINVAL);
                }
                let mut addr = [0u8; 8];
                addr.copy_from_slice(&val[8..16]);
                // The address must lie within what was passed.
                let alen = u16::from_le_bytes([val[6], val[7]]) as usize;
                if val.len().min(MREQ_MAX) < 8 + alen {
                    return Err(Errno::EINVAL);
                }
                let m = Member {
                    ifindex: i32::from_le_bytes([val[0], val[1], val[2], val[3]]) as u32,
                    kind: u16::from_le_bytes([val[4], val[5]]),
                    alen: u16::from_le_bytes([val[6], val[7]]),
                    addr,
                };
                let mut inner = self.inner.lock();
                // packet_mc_drop: what is not there is no error.
                if name == PACKET_DROP_MEMBERSHIP {
                    let same = |x: &Member| {
                        x.ifindex == m.ifindex
                            && x.kind == m.kind
                            && x.alen == m.alen
                            && x.addr[..m.alen.min(8) as usize] == m.addr[..m.alen.min(8) as usize]
                    };
                    if let Some(i) = inner.members.iter().position(same) {
                        inner.members.remove(i);
                    }
                    return Ok(());
                }
                drop(inner);
                super::ifaces::link_by_index(m.ifindex).map_err(|_| Errno::ENODEV)?;
                // Every link Kiln has is Ethernet or the loopback, both
                // with 6-byte addresses.
                if m.alen > 6 {
                    return Err(Errno::EINVAL);
                }
                let mut inner = self.inner.lock();
                // The same membership again only counts it once more.
                inner.members.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                inner.members.push(m);
                Ok(())
            }
            _ => Err(Errno::ENOPROTOOPT),
        }
    }

    /// No SOL_PACKET option is read back yet; packet_getsockopt's
    /// answer for a level or option it does not know.
    fn getsockopt(&self, _level: i32, _name: i32) -> Result<OptValue, Errno> {
        Err(Errno::ENOPROTOOPT)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn release(&self) {
        let mut all = SOCKETS.lock();
        let me = self as *const PacketSocket;
        all.retain(|w| w.strong_count() > 0 && !core::ptr::eq(w.as_ptr(), me));
        OPEN.store(all.len(), Ordering::Relaxed);
    }
}
