//! Raw IP sockets: `socket(AF_INET or AF_INET6, SOCK_RAW, protocol)`,
//! for callers with CAP_NET_RAW (EPERM for the others), on smoltcp's raw
//! sockets (one per interface, each handed every packet of the
//! protocol that arrives there, before smoltcp's own processing).
//!
//! * IPv4: a receive returns the IP header and payload (smoltcp rebuilds
//!   the header from what it parsed: identification, fragment fields and
//!   options are not the wire's); a send builds the header, unless
//!   IP_HDRINCL, where the caller's header is sent with its length,
//!   source (when 0) and checksum filled in. The ICMP checksum is the
//!   sender's, as on Linux. ICMP_FILTER drops the types it names.
//! * IPv6: no header either way (the source comes in the address);
//!   ICMPv6's checksum is always the kernel's. ICMP6_FILTER as on Linux.
//! * A socket bound to an address, or connected, receives only packets
//!   to, or from, that address (Linux's `raw_v4_match`).
//!
//! The ICMP sockets for unprivileged echo are in `icmp.rs`.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::socket::raw;
use smoltcp::wire::{IpAddress, IpProtocol, IpVersion, Ipv4Address, Ipv6Address};

use super::addr::{self, SockAddr};
use super::common::{first_unread, int_arg, release_or_defer, Common, SOL_IP, SOL_IPV6};
use super::icmp::{checksum, IPPROTO_ICMP, IPPROTO_ICMPV6};
use super::stack::{self, SockRef, Stack, Watch};
use crate::event::{Events, PollTable};
use crate::net::options::{OptValue, SockOptions};
use crate::net::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use crate::net::{MsgSink, MsgSource};

pub const SOL_RAW: i32 = 255;
pub const SOL_ICMPV6: i32 = 58;
/// SOL_RAW's ICMP_FILTER and SOL_ICMPV6's ICMP6_FILTER.
const ICMP_FILTER: i32 = 1;
const IP_HDRINCL: i32 = 3;
const IPV6_CHECKSUM: i32 = 7;
const IPV6_RECVHOPLIMIT: i32 = 51;
const IPV6_HOPLIMIT: i32 = 52;
const IPV6_2292HOPLIMIT: i32 = 8;
/// IPPROTO_RAW: send-only, the header always the caller's.
const IPPROTO_RAW: i32 = 255;
/// Linux's IPPROTO_MAX: protocols at or above it are EINVAL.
pub const IPPROTO_MAX: i32 = 263;

const V4_HEADER: usize = 20;
const V6_HEADER: usize = 40;
const MAX_SEND: usize = 0xffff;

const RX_PACKETS: usize = 64;
const TX_PACKETS: usize = 8;
const TX_BYTES: usize = 128 * 1024;

struct Inner {
    local: Option<IpAddress>,
    remote: Option<IpAddress>,
    /// The scope id connect named for a link-local `remote` (0: none).
    remote_scope: u32,
    socks: Vec<SockRef>,
    hdrincl: bool,
    /// ICMP_FILTER: bit n drops ICMP type n.
    icmp_filter: u32,
    /// ICMP6_FILTER: bit n of the 256 blocks ICMPv6 type n.
    icmp6_filter: [u8; 32],
    /// IPV6_RECVHOPLIMIT or IPV6_2292HOPLIMIT: the control message
    /// type receives carry the hop limit in (busybox ping6 prints it as
    /// the ttl); 0 for none.
    recv_hoplimit: i32,
    rx_seen: usize,
    released: bool,
}

pub struct RawSocket {
    c: Common,
    proto: i32,
    inner: SpinLock<Inner>,
    me: hal::sync::Once<alloc::sync::Weak<RawSocket>>,
}

pub fn open(family: u16, proto: i32) -> Result<Arc<dyn Protocol>, Errno> {
    if !crate::net::net_raw() {
        return Err(Errno::EPERM);
    }
    let sock = Arc::try_new(RawSocket {
        c: Common::new(family),
        proto,
        inner: SpinLock::new(Inner {
            local: None,
            remote: None,
            socks: Vec::new(),
            hdrincl: family == s::AF_INET && proto == IPPROTO_RAW,
            icmp_filter: 0,
            icmp6_filter: [0; 32],
            recv_hoplimit: 0,
            rx_seen: 0,
            released: false,
            remote_scope: 0,
        }),
        me: hal::sync::Once::new(),
    })
    .map_err(|_| Errno::ENOMEM)?;
    sock.me.set(Arc::downgrade(&sock));
    sock.c.events.store((Events::WRITABLE | Events::WRBAND).bits(), Ordering::Relaxed);
    let mut st = stack::lock()?;
    {
        let mut inner = sock.inner.lock();
        for i in 0..st.ifaces.len() {
            inner.socks.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            let r = sock.new_smoltcp(&mut st, i);
            match r {
                Ok(r) => inner.socks.push(r),
                Err(e) => {
                    for r in core::mem::take(&mut inner.socks) {
                        st.remove(r);
                    }
                    return Err(e);
                }
            }
        }
    }
    st.watch(sock.clone())?;
    Ok(sock)
}

impl RawSocket {
    fn v6(&self) -> bool {
        self.c.family == s::AF_INET6
    }

    fn new_smoltcp(&self, st: &mut Stack, iface: usize) -> Result<SockRef, Errno> {
        let rcvbuf = self.c.opts.rcvbuf.load(Ordering::Relaxed) as usize;
        new_smoltcp(st, iface, self.v6(), self.proto as u8, rcvbuf)
    }

    fn parse(&self, p: &[u8]) -> Option<(IpAddress, IpAddress, usize)> {
        split(self.v6(), p)
    }

    /// Whether Linux would deliver this packet here: its addresses match
    /// the bound and connected ones, and no ICMP filter drops it.
    fn wanted(&self, p: &[u8], inner: &Inner) -> bool {
        if self.proto > 255 || (self.proto == IPPROTO_RAW && !self.v6()) {
            return false;
        }
        let Some((src, dst, start)) = self.parse(p) else { return false };
        if inner.remote.is_some_and(|r| r != src) || inner.local.is_some_and(|l| l != dst) {
            return false;
        }
        let Some(&kind) = p.get(start) else { return true };
        match (self.v6(), self.proto) {
            (false, IPPROTO_ICMP) => kind >= 32 || inner.icmp_filter & (1 << kind) == 0,
            (true, IPPROTO_ICMPV6) => inner.icmp6_filter[kind as usize / 8] & (1 << (kind % 8)) == 0,
            _ => true,
        }
    }

    /// Drops the queued packets Linux would not deliver here and counts
    /// the rest.
    fn queued(&self, st: &mut Stack, inner: &Inner) -> usize {
        let mut queued = 0;
        for r in inner.socks.iter().copied() {
            while let Ok(p) = st.raw(r).peek() {
                if self.wanted(p, inner) {
                    break;
                }
                let _ = st.raw(r).recv();
            }
            queued += st.raw(r).recv_queue();
        }
        queued
    }

    fn refresh_locked(&self, st: &mut Stack, inner: &mut Inner) {
        let mut ev = Events::OUT | Events::WRNORM | Events::WRBAND;
        if self.c.has_err() {
            ev |= Events::ERR;
        }
        let queued = self.queued(st, inner);
        self.c.publish_queued(ev, queued, &mut inner.rx_seen);
    }

    /// The scope id a send to `a` names (its `sin6_scope_id` for a
    /// link-local address), else the connected peer's.
    fn send_scope(&self, a: Option<&[u8]>, inner: &Inner) -> Option<u32> {
        match a {
            Some(a) if !a.is_empty() => {
                addr::parse(self.c.family, a, true).ok().and_then(|sa| addr::send_scope(&sa, a))
            }
            _ => (inner.remote_scope != 0).then_some(inner.remote_scope),
        }
    }

    fn destination(&self, a: Option<&[u8]>, inner: &Inner) -> Result<IpAddress, Errno> {
        match a {
            Some(a) if !a.is_empty() => {
                let sa = addr::parse(self.c.family, a, !self.v6())?;
                Ok(match (sa.addr, self.v6()) {
                    (Some(x), _) => x,
                    (None, false) => IpAddress::Ipv4(Ipv4Address::new(127, 0, 0, 1)),
                    (None, true) => IpAddress::Ipv6(Ipv6Address::LOCALHOST),
                })
            }
            _ => inner.remote.ok_or(Errno::EDESTADDRREQ),
        }
    }

    /// The packet to hand smoltcp: an IP header (built, or the caller's
    /// completed) and the payload.
    fn packet(&self, msg: &[u8], to: IpAddress, src: IpAddress, inner: &Inner) -> Result<Vec<u8>, Errno> {
        let ttl = self.c.hop_limit().unwrap_or(64);
        let tos = self.c.tos.load(Ordering::Relaxed) as u8;
        if let (IpAddress::Ipv4(_), IpAddress::Ipv4(sa)) = (to, src) {
            if inner.hdrincl {
                if msg.len() < V4_HEADER {
                    return Err(Errno::EINVAL);
                }
                let ihl = (msg[0] & 15) as usize * 4;
                if ihl < V4_HEADER || ihl > msg.len() {
                    return Err(Errno::EINVAL);
                }
                let mut p = stack::zeroed(msg.len())?;
                p.copy_from_slice(msg);
                p[2..4].copy_from_slice(&(msg.len() as u16).to_be_bytes());
                if p[12..16] == [0; 4] {
                    p[12..16].copy_from_slice(&sa.octets());
                }
                return Ok(p);
            }
        }
        build(self.proto as u8, ttl, tos, msg, to, src)
    }
    fn send_one(&self, msg: &[u8], dest: Option<&[u8]>) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        let to = self.destination(dest, &inner)?;
        let iface = st.route_scoped(to, self.send_scope(dest, &inner))?;
        let src = match inner.local {
            Some(l) => l,
            None => st.ifaces[iface].iface.get_source_address(&to).ok_or(Errno::EADDRNOTAVAIL)?,
        };
        let p = self.packet(msg, to, src, &inner)?;
        if p.len() > st.ifaces[iface].info.mtu {
            return Err(Errno::EMSGSIZE);
        }
        let r = inner.socks.iter().find(|r| r.iface == iface).copied().ok_or(Errno::ENETUNREACH)?;
        drop(inner);
        let sock = st.raw(r);
        if sock.payload_send_capacity() < p.len() {
            return Err(Errno::EMSGSIZE);
        }
        match sock.send_slice(&p) {
            Ok(()) => {}
            Err(raw::SendError::BufferFull) => return Err(Errno::EAGAIN),
        }
        st.poll();
        Ok(msg.len())
    }

    fn recv_one(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if let Some(e) = self.c.take_err() {
            return Err(e);
        }
        inner.rx_seen = self.queued(&mut st, &inner);
        let socks = inner.socks.clone();
        let hoplimit = if self.v6() { inner.recv_hoplimit } else { 0 };
        drop(inner);
        let peek = args.flags & s::MSG_PEEK != 0;
        for r in socks {
            let ifindex = st.scope_of(r, 0);
            let sock = st.raw(r);
            let got = if peek { sock.peek() } else { sock.recv() };
            let Ok(p) = got else { continue };
            let Some((src, _, start)) = self.parse(p) else { continue };
            // IPv4 raw sockets see the header, IPv6 ones do not.
            let msg = if self.v6() { &p[start..] } else { p };
            let n = msg.len().min(data.remaining());
            let full = msg.len();
            data.write(&msg[..n])?;
            let mut out = Received { len: n, ..Received::default() };
            if hoplimit != 0 {
                out.hop_limit = Some((hoplimit, p[7] as i32));
            }
            if n < full {
                out.flags |= s::MSG_TRUNC;
                if args.flags & s::MSG_TRUNC != 0 {
                    out.len = full;
                }
            }
            if args.want_addr {
                let from = SockAddr { addr: Some(src), port: 0 };
                out.addr = Some(addr::encode_scoped(self.c.family, from, ifindex));
            }
            let mut inner = self.inner.lock();
            self.refresh_locked(&mut st, &mut inner);
            return Ok(out);
        }
        Err(Errno::EAGAIN)
    }

    fn release_now(&self) {
        let Ok(mut st) = stack::lock() else { return };
        st.unwatch(self.c.id);
        let mut inner = self.inner.lock();
        if inner.released {
            return;
        }
        inner.released = true;
        for r in core::mem::take(&mut inner.socks) {
            st.remove(r);
        }
    }
}

/// A smoltcp raw socket for `proto` on interface `iface`.
pub fn new_smoltcp(st: &mut Stack, iface: usize, v6: bool, proto: u8, rcvbuf: usize) -> Result<SockRef, Errno> {
    let rx_bytes = rcvbuf.clamp(4096, 1 << 20);
    let rx = raw::PacketBuffer::new(meta_vec(RX_PACKETS)?, stack::zeroed(rx_bytes)?);
    let tx = raw::PacketBuffer::new(meta_vec(TX_PACKETS)?, stack::zeroed(TX_BYTES)?);
    let version = if v6 { IpVersion::Ipv6 } else { IpVersion::Ipv4 };
    let sock = raw::Socket::new(Some(version), Some(IpProtocol::from(proto)), rx, tx);
    st.add(iface, smoltcp::socket::Socket::Raw(sock))
}

/// A received packet's source and destination addresses and where its
/// payload starts.
pub fn split(v6: bool, p: &[u8]) -> Option<(IpAddress, IpAddress, usize)> {
    if v6 {
        if p.len() < V6_HEADER {
            return None;
        }
        let src: [u8; 16] = p[8..24].try_into().ok()?;
        let dst: [u8; 16] = p[24..40].try_into().ok()?;
        Some((IpAddress::Ipv6(Ipv6Address::from(src)), IpAddress::Ipv6(Ipv6Address::from(dst)), V6_HEADER))
    } else {
        if p.len() < V4_HEADER {
            return None;
        }
        let ihl = (p[0] & 15) as usize * 4;
        let src = Ipv4Address::new(p[12], p[13], p[14], p[15]);
        let dst = Ipv4Address::new(p[16], p[17], p[18], p[19]);
        Some((IpAddress::Ipv4(src), IpAddress::Ipv4(dst), ihl.min(p.len())))
    }
}

/// An IP packet of protocol `proto` carrying `msg` from `src` to `to`,
/// with ICMPv6's checksum filled in (the kernel's on Linux).
pub fn build(proto: u8, ttl: u8, tos: u8, msg: &[u8], to: IpAddress, src: IpAddress) -> Result<Vec<u8>, Errno> {
    match (to, src) {
        (IpAddress::Ipv4(d), IpAddress::Ipv4(sa)) => {
            let mut p = stack::zeroed(V4_HEADER + msg.len())?;
            p[0] = 0x45;
            p[1] = tos;
            p[2..4].copy_from_slice(&((V4_HEADER + msg.len()) as u16).to_be_bytes());
            p[6] = 0x40; // don't fragment
            p[8] = ttl;
            p[9] = proto;
            p[12..16].copy_from_slice(&sa.octets());
            p[16..20].copy_from_slice(&d.octets());
            p[V4_HEADER..].copy_from_slice(msg);
            Ok(p)
        }
        (IpAddress::Ipv6(d), IpAddress::Ipv6(sa)) => {
            let mut p = stack::zeroed(V6_HEADER + msg.len())?;
            p[0] = 0x60;
            p[4..6].copy_from_slice(&(msg.len() as u16).to_be_bytes());
            p[6] = proto;
            p[7] = ttl;
            p[8..24].copy_from_slice(&sa.octets());
            p[24..40].copy_from_slice(&d.octets());
            p[V6_HEADER..].copy_from_slice(msg);
            if proto as i32 == IPPROTO_ICMPV6 {
                if msg.len() < 4 {
                    return Err(Errno::EINVAL);
                }
                // The pseudo header: both addresses, the length, the
                // next header.
                let mut sum = 0u32;
                for c in p[8..40].chunks_exact(2) {
                    sum += u16::from_be_bytes([c[0], c[1]]) as u32;
                }
                sum += msg.len() as u32 + IPPROTO_ICMPV6 as u32;
                p[V6_HEADER + 2..V6_HEADER + 4].copy_from_slice(&[0, 0]);
                let c = checksum(&p[V6_HEADER..], sum);
                p[V6_HEADER + 2..V6_HEADER + 4].copy_from_slice(&c.to_be_bytes());
            }
            Ok(p)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn meta_vec(n: usize) -> Result<Vec<raw::PacketMetadata>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, raw::PacketMetadata::EMPTY);
    Ok(v)
}

impl Watch for RawSocket {
    fn id(&self) -> u64 {
        self.c.id
    }

    fn release_deferred(&self) {
        self.release_now();
    }

    fn refresh(&self, st: &mut Stack) {
        let mut inner = self.inner.lock();
        self.refresh_locked(st, &mut inner);
    }
}

impl Protocol for RawSocket {
    fn family(&self) -> u16 {
        self.c.family
    }

    fn sock_type(&self) -> SockType {
        SockType::Raw
    }

    fn protocol(&self) -> i32 {
        self.proto
    }

    fn options(&self) -> &SockOptions {
        &self.c.opts
    }

    fn is_inet(&self) -> bool {
        true
    }

    /// raw_bind / rawv6_bind: an address of this machine (or none).
    fn bind(&self, a: &[u8], _names: &NameCtx) -> Result<(), Errno> {
        let min = if self.v6() { 24 } else { addr::SIN_LEN };
        if a.len() < min {
            return Err(Errno::EINVAL);
        }
        let fam = u16::from_le_bytes([a[0], a[1]]);
        if self.v6() && fam != s::AF_INET6 {
            return Err(Errno::EINVAL);
        }
        let local = if self.v6() {
            addr::parse(self.c.family, a, false)?.addr
        } else {
            let ip = Ipv4Address::new(a[4], a[5], a[6], a[7]);
            (!ip.is_unspecified()).then_some(IpAddress::Ipv4(ip))
        };
        if let (true, Some(IpAddress::Ipv4(_))) = (self.v6(), local) {
            return Err(Errno::EADDRNOTAVAIL);
        }
        let st = stack::lock()?;
        if let Some(l) = local {
            if st.iface_of_local(l).is_none() {
                return Err(Errno::EADDRNOTAVAIL);
            }
        }
        self.inner.lock().local = local;
        Ok(())
    }

    fn connect(&self, a: &[u8], _names: &NameCtx, _nonblock: bool) -> Result<(), Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if a.len() >= 2 && u16::from_le_bytes([a[0], a[1]]) == s::AF_UNSPEC {
            inner.remote = None;
            inner.remote_scope = 0;
            self.refresh_locked(&mut st, &mut inner);
            return Ok(());
        }
        let to = self.destination(Some(a), &inner)?;
        let scope = self.send_scope(Some(a), &inner);
        st.route_scoped(to, scope)?;
        inner.remote = Some(to);
        inner.remote_scope = scope.unwrap_or(0);
        self.refresh_locked(&mut st, &mut inner);
        Ok(())
    }

    fn sockname(&self) -> AddrBuf {
        let inner = self.inner.lock();
        addr::encode(self.c.family, SockAddr { addr: inner.local, port: self.proto as u16 })
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        let inner = self.inner.lock();
        let r = inner.remote.ok_or(Errno::ENOTCONN)?;
        Ok(addr::encode_scoped(self.c.family, SockAddr { addr: Some(r), port: 0 }, inner.remote_scope))
    }

    fn shutdown(&self, how: i32) -> Result<(), Errno> {
        if !(s::SHUT_RD..=s::SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        if self.inner.lock().remote.is_none() {
            return Err(Errno::ENOTCONN);
        }
        Ok(())
    }

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        let len = data.remaining();
        if len > MAX_SEND {
            return Err(Errno::EMSGSIZE);
        }
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let dest = args.addr;
        self.destination(dest, &self.inner.lock())?;
        let mut msg = stack::zeroed(len)?;
        data.read(&mut msg)?;
        let wait = self.c.send_wait(args.nonblock, args.flags);
        self.c.blocking(&wait, || self.send_one(&msg, dest))
    }

    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let wait = self.c.recv_wait(args.nonblock, args.flags);
        self.c.blocking(&wait, || self.recv_one(data, args))
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        self.c.poll(table)
    }

    fn unread(&self) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        // The next packet as recv returns it (IPv6 without its header).
        Ok(first_unread(&mut st, &inner.socks, |st, r| {
            let p = st.raw(r).peek().ok()?;
            let start = if self.v6() { split(true, p).map_or(0, |(_, _, at)| at) } else { 0 };
            Some(p.len() - start)
        }))
    }

    fn unsent(&self) -> usize {
        0
    }

    fn take_error(&self) -> i32 {
        self.c.take_err().map_or(0, |e| e.as_i32())
    }

    fn set_error(&self, e: Errno) {
        self.c.set_err(e);
    }

    fn setsockopt(&self, level: i32, name: i32, val: &[u8]) -> Result<(), Errno> {
        match (level, name, self.v6()) {
            (SOL_RAW, ICMP_FILTER, false) => {
                if self.proto != IPPROTO_ICMP {
                    return Err(Errno::EOPNOTSUPP);
                }
                // Linux copies what it is given, up to the filter's size.
                let mut inner = self.inner.lock();
                let mut b = inner.icmp_filter.to_le_bytes();
                let n = val.len().min(4);
                b[..n].copy_from_slice(&val[..n]);
                inner.icmp_filter = u32::from_le_bytes(b);
                Ok(())
            }
            (SOL_ICMPV6, ICMP_FILTER, true) => {
                if self.proto != IPPROTO_ICMPV6 {
                    return Err(Errno::EOPNOTSUPP);
                }
                let mut inner = self.inner.lock();
                let n = val.len().min(32);
                inner.icmp6_filter[..n].copy_from_slice(&val[..n]);
                Ok(())
            }
            (SOL_IP, IP_HDRINCL, false) => {
                let v = if val.is_empty() {
                    return Err(Errno::EINVAL);
                } else if val.len() >= 4 {
                    int_arg(val)?
                } else {
                    val[0] as i32
                };
                if self.proto == IPPROTO_RAW {
                    return Ok(());
                }
                self.inner.lock().hdrincl = v != 0;
                Ok(())
            }
            // RFC 3542: not at the IPv6 level on ICMPv6 sockets, whose
            // checksum is always the kernel's.
            (SOL_IPV6, IPV6_CHECKSUM, true) if self.proto == IPPROTO_ICMPV6 => Err(Errno::EINVAL),
            (SOL_RAW, IPV6_CHECKSUM, true) => {
                let v = int_arg(val)?;
                if v > 0 && v & 1 != 0 {
                    return Err(Errno::EINVAL);
                }
                Ok(())
            }
            (SOL_IPV6, IPV6_RECVHOPLIMIT | IPV6_2292HOPLIMIT, true) => {
                let on = int_arg(val)? != 0;
                let kind = if name == IPV6_RECVHOPLIMIT { IPV6_HOPLIMIT } else { IPV6_2292HOPLIMIT };
                let mut inner = self.inner.lock();
                if on {
                    inner.recv_hoplimit = kind;
                } else if inner.recv_hoplimit == kind {
                    inner.recv_hoplimit = 0;
                }
                Ok(())
            }
            (SOL_RAW, _, _) | (SOL_ICMPV6, _, true) => Err(Errno::ENOPROTOOPT),
            _ => {
                if self.c.set_ip_option(level, name, val, false)? {
                    return Ok(());
                }
                Err(Errno::ENOPROTOOPT)
            }
        }
    }

    fn getsockopt(&self, level: i32, name: i32) -> Result<OptValue, Errno> {
        let inner = self.inner.lock();
        match (level, name, self.v6()) {
            (SOL_RAW, ICMP_FILTER, false) if self.proto == IPPROTO_ICMP => {
                Ok(OptValue::Bytes(inner.icmp_filter.to_le_bytes().to_vec()))
            }
            (SOL_ICMPV6, ICMP_FILTER, true) if self.proto == IPPROTO_ICMPV6 => {
                Ok(OptValue::Bytes(inner.icmp6_filter.to_vec()))
            }
            (SOL_RAW, ICMP_FILTER, _) | (SOL_ICMPV6, ICMP_FILTER, true) => Err(Errno::EOPNOTSUPP),
            (SOL_IP, IP_HDRINCL, false) => Ok(OptValue::Int(inner.hdrincl as i32)),
            (SOL_IPV6, IPV6_RECVHOPLIMIT, true) => Ok(OptValue::Int((inner.recv_hoplimit == IPV6_HOPLIMIT) as i32)),
            (SOL_IPV6, IPV6_2292HOPLIMIT, true) => Ok(OptValue::Int((inner.recv_hoplimit == IPV6_2292HOPLIMIT) as i32)),
            (SOL_RAW, _, _) | (SOL_ICMPV6, _, true) => Err(Errno::ENOPROTOOPT),
            _ => {
                drop(inner);
                if let Some(v) = self.c.get_ip_option(level, name)? {
                    return Ok(v);
                }
                Err(Errno::EOPNOTSUPP)
            }
        }
    }

    fn attach(&self, ino: u64) {
        self.c.ino.store(ino, Ordering::Relaxed);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn release(&self) {
        release_or_defer(&self.me, || self.release_now());
    }
}
