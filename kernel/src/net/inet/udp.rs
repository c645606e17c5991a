//! UDP sockets (SOCK_DGRAM in AF_INET and AF_INET6) on smoltcp's UDP.
//!
//! A socket gets its smoltcp socket when it gets a port (bind, or the
//! automatic bind of connect or a first send). A connected socket takes
//! datagrams only from its peer: the others are dropped when they
//! arrive (at the refresh after the poll that brought them), so poll
//! never reports a datagram recv would not return.
//!
//! A datagram to an on-link address that does not answer ARP (or NDP)
//! stays at the head of smoltcp's send queue, and every later datagram
//! of that smoltcp socket behind it. Linux queues packets per unresolved
//! neighbour and drops them when resolution fails (3 probes a second
//! apart), reporting EHOSTUNREACH to a connected socket; datagrams to
//! other neighbours go on meanwhile. Here a smoltcp socket whose queue a
//! send's poll left non-empty (on a NIC nothing else keeps a datagram
//! queued: a full ring drops it) is set aside as *held* for that
//! destination, and a fresh smoltcp socket on the same endpoint takes
//! the socket's later datagrams; later datagrams to the same destination
//! join the held one, in order. A held socket that empties goes; one
//! that has not moved for [`NEIGHBOUR_WAIT_NS`] goes with its datagrams
//! ([`UdpSocket::unwedge`]; smoltcp cannot drop a queued datagram, only
//! the whole socket). Both kinds still receive (smoltcp gives an arriving
//! datagram to the first socket on the endpoint): recv reads them all,
//! and a held socket with unread datagrams stays until they are read.
//! smoltcp rate-limits ARP requests per interface, not per neighbour, so
//! a neighbour never seen before may wait while a dead one is probed.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::socket::udp::{self, UdpMetadata};
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint, Ipv4Address, Ipv6Address};

use super::addr::{self, SockAddr};
use super::common::{first_unread, release_or_defer, Common, SOL_UDP};
use super::ports::{Binding, Transport};
use super::procnet::ProcEntry;
use super::stack::{self, SockRef, Stack, Watch};
use crate::event::{Events, PollTable};
use crate::net::options::{OptValue, SockOptions};
use crate::net::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use crate::net::{MsgSink, MsgSource};

/// The largest UDP payload over IPv4 and IPv6 (65535 less the headers).
const MAX_V4: usize = 65_507;
const MAX_V6: usize = 65_527;

/// Datagrams a receive buffer holds at most (besides its byte size).
const RX_PACKETS: usize = 256;
/// The send side drains at every call's poll: room for one largest
/// datagram and a few small ones.
const TX_PACKETS: usize = 16;
const TX_BYTES: usize = 128 * 1024;

/// Datagrams up to this long are staged on the kernel stack on their way
/// from user memory to smoltcp.
const SMALL_DATAGRAM: usize = 256;

/// How long a held send queue may wait for a neighbour's link address
/// before it is dropped (Linux: `mcast_solicit` 3 probes,
/// `retrans_time` 1 s apart).
const NEIGHBOUR_WAIT_NS: u64 = 3_000_000_000;

/// Held smoltcp sockets per socket, at most (each keeps its buffers);
/// beyond them datagrams queue behind the stuck one until it is dropped.
const MAX_HELD: usize = 4;

/// A smoltcp socket set aside with datagrams waiting for a neighbour.
#[derive(Clone, Copy)]
struct Held {
    r: SockRef,
    /// The destination of the datagram that stuck.
    dest: IpAddress,
    /// Since when its queue has not moved (monotonic ns), and how many
    /// bytes it held then.
    since: u64,
    queued: usize,
    /// Its datagrams are given up (the socket waits for its unread
    /// datagrams to be read before it goes).
    dropped: bool,
}

const RCV: u8 = 1;
const SEND: u8 = 2;

struct Inner {
    local: SockAddr,
    owns_port: bool,
    remote: Option<IpEndpoint>,
    /// The interface a link-local `remote` is on (its scope id).
    remote_scope: Option<u32>,
    /// The scope id bind(2) named for a link-local address (0: none).
    bound_scope: u32,
    /// The source address connect chose (what getsockname shows).
    conn_src: Option<IpAddress>,
    /// One smoltcp socket per interface the socket receives on, and the
    /// held ones (see the module header).
    socks: Vec<SockRef>,
    held: Vec<Held>,
    shut: u8,
    rx_seen: usize,
    /// Since when the send queue of a socket in `socks` that could not
    /// be held has not moved (monotonic ns), and how many bytes it held.
    tx_stall: Option<(u64, usize)>,
    released: bool,
}

pub struct UdpSocket {
    c: Common,
    inner: SpinLock<Inner>,
    me: hal::sync::Once<alloc::sync::Weak<UdpSocket>>,
}

pub fn open(family: u16) -> Result<Arc<dyn Protocol>, Errno> {
    let sock = Arc::try_new(UdpSocket {
        c: Common::new(family),
        inner: SpinLock::new(Inner {
            local: SockAddr::ANY,
            owns_port: false,
            remote: None,
            remote_scope: None,
            bound_scope: 0,
            conn_src: None,
            socks: Vec::new(),
            held: Vec::new(),
            shut: 0,
            rx_seen: 0,
            tx_stall: None,
            released: false,
        }),
        me: hal::sync::Once::new(),
    })
    .map_err(|_| Errno::ENOMEM)?;
    sock.me.set(Arc::downgrade(&sock));
    sock.c.events.store((Events::WRITABLE | Events::WRBAND).bits(), Ordering::Relaxed);
    stack::lock()?.watch(sock.clone())?;
    Ok(sock)
}

impl UdpSocket {
    fn binding(&self, local: SockAddr) -> Binding {
        Binding {
            owner: self.c.id,
            addr: local.addr,
            v6_any_dual: self.c.family == s::AF_INET6 && local.addr.is_none() && !self.c.v6only.load(Ordering::Relaxed),
            v6_family: self.c.family == s::AF_INET6,
            reuseaddr: self.c.opts.reuseaddr(),
            reuseport: self.c.opts.reuseport(),
            uid: crate::net::caller().euid,
            listening: false,
        }
    }

    fn new_smoltcp(&self, st: &mut Stack, iface: usize, ep: IpListenEndpoint) -> Result<SockRef, Errno> {
        let rx_bytes = (self.c.opts.rcvbuf.load(Ordering::Relaxed) as usize).clamp(4096, 4 << 20);
        let rx = udp::PacketBuffer::new(meta_vec(RX_PACKETS)?, stack::zeroed(rx_bytes)?);
        let tx = udp::PacketBuffer::new(meta_vec(TX_PACKETS)?, stack::zeroed(TX_BYTES)?);
        let mut u = udp::Socket::new(rx, tx);
        u.bind(ep).map_err(|_| Errno::EINVAL)?;
        u.set_hop_limit(self.c.hop_limit());
        st.add(iface, smoltcp::socket::Socket::Udp(u))
    }

    /// Gives the socket its port and smoltcp sockets.
    fn attach_port(&self, st: &mut Stack, inner: &mut Inner, sa: SockAddr) -> Result<(), Errno> {
        let b = self.binding(sa);
        let port = st.ports.bind(Transport::Udp, sa.port, b)?;
        let ep = IpListenEndpoint { addr: sa.addr, port };
        let ifaces: Vec<usize> = match sa.addr {
            Some(a) => alloc::vec![st.iface_of_local(a).unwrap_or(0)],
            None => (0..st.ifaces.len()).collect(),
        };
        let mut socks = Vec::new();
        for i in ifaces {
            let made = socks.try_reserve(1).map_err(|_| Errno::ENOMEM).and_then(|_| self.new_smoltcp(st, i, ep));
            match made {
                Ok(r) => socks.push(r),
                Err(e) => {
                    for r in socks {
                        st.remove(r);
                    }
                    st.ports.release(Transport::Udp, port, self.c.id);
                    return Err(e);
                }
            }
        }
        inner.local = SockAddr { addr: sa.addr, port };
        inner.owns_port = true;
        inner.socks = socks;
        Ok(())
    }

    fn autobind(&self, st: &mut Stack, inner: &mut Inner) -> Result<(), Errno> {
        if inner.owns_port {
            return Ok(());
        }
        self.attach_port(st, inner, SockAddr::ANY)
    }

    fn family_ok(&self, a: IpAddress) -> Result<(), Errno> {
        if self.c.family == s::AF_INET6 && self.c.v6only.load(Ordering::Relaxed) {
            if let IpAddress::Ipv4(_) = a {
                return Err(Errno::ENETUNREACH);
            }
        }
        Ok(())
    }

    fn wildcard_remote(&self) -> IpAddress {
        if self.c.family == s::AF_INET {
            IpAddress::Ipv4(Ipv4Address::new(127, 0, 0, 1))
        } else {
            IpAddress::Ipv6(Ipv6Address::LOCALHOST)
        }
    }

    /// Drops what a connected socket does not take and counts the
    /// datagrams left.
    fn queued(&self, st: &mut Stack, inner: &Inner) -> usize {
        let mut queued = 0;
        // By index, not over a clone of the list: a clone was an
        // allocation and a free per refresh, several per datagram.
        for &r in &inner.socks {
            let u = st.udp(r);
            // A connected socket drops what is not from its peer.
            if let (Some(peer), true) = (inner.remote, u.can_recv()) {
                while let Ok((_, m)) = u.peek() {
                    if m.endpoint == peer {
                        break;
                    }
                    let _ = u.recv();
                }
            }
            queued += u.recv_queue();
        }
        queued
    }

    /// Lets held sockets that emptied go, and drops those that have not
    /// moved for [`NEIGHBOUR_WAIT_NS`], with the queue of a socket that
    /// could not be held (see the module header). A queue only drains
    /// from its head, so any fall in its bytes is progress.
    fn unwedge(&self, st: &mut Stack, inner: &mut Inner) {
        // The clock only when something is held or stuck: this runs at
        // every refresh, several per datagram.
        let now = if inner.held.is_empty() { 0 } else { hal::time::monotonic_ns() };
        let mut failed = false;
        let mut k = 0;
        while k < inner.held.len() {
            let h = &mut inner.held[k];
            let u = st.udp(h.r);
            let (queued, unread) = (u.send_queue(), u.recv_queue());
            if queued < h.queued {
                h.since = now;
            }
            h.queued = queued;
            if !h.dropped && queued > 0 && now.saturating_sub(h.since) >= NEIGHBOUR_WAIT_NS {
                h.dropped = true;
                failed = true;
                log::debug!("net: udp port {}: dropped datagrams for unresolved {}", inner.local.port, h.dest);
            }
            if (queued == 0 || h.dropped) && unread == 0 {
                let r = h.r;
                inner.held.swap_remove(k);
                inner.socks.retain(|x| *x != r);
                st.remove(r);
            } else {
                k += 1;
            }
        }
        let stuck: usize = inner.socks.iter().filter(|r| !is_held(inner, **r)).map(|r| st.udp(*r).send_queue()).sum();
        if stuck == 0 {
            inner.tx_stall = None;
        } else {
            let now = if now == 0 { hal::time::monotonic_ns() } else { now };
            let since = match inner.tx_stall {
                Some((_, before)) if stuck < before => now,
                Some((since, _)) => since,
                None => now,
            };
            inner.tx_stall = Some((since, stuck));
            if now.saturating_sub(since) >= NEIGHBOUR_WAIT_NS {
                for k in 0..inner.socks.len() {
                    let r = inner.socks[k];
                    if is_held(inner, r) {
                        continue;
                    }
                    let u = st.udp(r);
                    if u.send_queue() == 0 || u.recv_queue() > 0 {
                        continue;
                    }
                    let ep = u.endpoint();
                    let Ok(fresh) = self.new_smoltcp(st, r.iface, ep) else { continue };
                    st.remove(r);
                    inner.socks[k] = fresh;
                    failed = true;
                }
                if failed {
                    inner.tx_stall = None;
                }
            }
        }
        // Linux's locally made ICMP host unreachable reaches a connected
        // socket only (udp_err).
        if failed && inner.remote.is_some() {
            self.c.set_err(Errno::EHOSTUNREACH);
            self.c.opts.async_io.error();
        }
    }

    /// After a send's poll: if the smoltcp socket `r` kept a datagram
    /// (its neighbour is unresolved), sets it aside for `dest` and gives
    /// the socket a fresh one for its other traffic.
    fn hold_if_stuck(&self, st: &mut Stack, inner: &mut Inner, r: SockRef, dest: IpAddress) {
        if st.ifaces[r.iface].info.loopback || is_held(inner, r) || inner.held.len() >= MAX_HELD {
            return;
        }
        // The poll after the send may have refreshed this socket, and its
        // unwedge removed `r` from the stack (a held socket given up):
        // only a smoltcp socket still the socket's may be looked at.
        let Some(k) = inner.socks.iter().position(|x| *x == r) else { return };
        let u = st.udp(r);
        let queued = u.send_queue();
        if queued == 0 {
            return;
        }
        let ep = u.endpoint();
        if inner.held.try_reserve(1).is_err() || inner.socks.try_reserve(1).is_err() {
            return;
        }
        let Ok(fresh) = self.new_smoltcp(st, r.iface, ep) else { return };
        // The fresh one takes the held one's place, so it is the one
        // sends find first.
        inner.socks[k] = fresh;
        inner.socks.push(r);
        let now = hal::time::monotonic_ns();
        inner.held.push(Held { r, dest, since: now, queued, dropped: false });
    }

    fn refresh_locked(&self, st: &mut Stack, inner: &mut Inner) {
        self.unwedge(st, inner);
        let mut ev = Events::OUT | Events::WRNORM | Events::WRBAND;
        if self.c.has_err() {
            ev |= Events::ERR;
        }
        if inner.shut == RCV | SEND {
            ev |= Events::HUP;
        }
        if inner.shut & RCV != 0 {
            ev |= Events::IN | Events::RDNORM | Events::RDHUP;
        }
        let queued = self.queued(st, inner);
        self.c.publish_queued(ev, queued, &mut inner.rx_seen);
    }

    fn send_one(&self, buf: &[u8], dest: Option<(SockAddr, Option<u32>)>) -> Result<usize, Errno> {
        let len = buf.len();
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        // Linux binds before it looks at the destination
        // (inet_send_prepare): even a failed send leaves a port.
        self.autobind(&mut st, &mut inner)?;
        if inner.shut & SEND != 0 {
            return Err(Errno::EPIPE);
        }
        let (remote, scope) = match dest {
            Some((d, scope)) => (IpEndpoint::new(d.addr.unwrap_or_else(|| self.wildcard_remote()), d.port), scope),
            None => (inner.remote.ok_or(Errno::EDESTADDRREQ)?, inner.remote_scope),
        };
        self.family_ok(remote.addr)?;
        if remote.port == 0 {
            return Err(Errno::EINVAL);
        }
        let max = match remote.addr {
            IpAddress::Ipv4(_) => MAX_V4,
            IpAddress::Ipv6(_) => MAX_V6,
        };
        if len > max {
            return Err(Errno::EMSGSIZE);
        }
        if let Some(local) = inner.local.addr {
            if local.version() != remote.addr.version() {
                return Err(Errno::EINVAL);
            }
        }
        let iface = st.route_scoped(remote.addr, scope)?;
        // No IP fragmentation: a datagram must fit the interface's MTU
        // (where Linux would fragment it, this is EMSGSIZE).
        let headers = match remote.addr {
            IpAddress::Ipv4(_) => 28,
            IpAddress::Ipv6(_) => 48,
        };
        if len + headers > st.ifaces[iface].info.mtu {
            return Err(Errno::EMSGSIZE);
        }
        // A pending error (a neighbour that never answered) is this
        // send's, as sock_alloc_send_pskb reports it.
        if let Some(e) = self.c.take_err() {
            return Err(e);
        }
        let local_addr = inner.local.addr;
        let held = inner.held.iter().find(|h| h.dest == remote.addr && h.r.iface == iface && !h.dropped);
        let r = match (held, inner.socks.iter().find(|r| r.iface == iface && !is_held(&inner, **r))) {
            // Behind the datagrams already waiting for this neighbour.
            (Some(h), _) => h.r,
            (None, Some(r)) => *r,
            (None, None) => {
                // Bound to one interface's address, sending out of
                // another: the source address decides (Linux routes by
                // it); smoltcp sockets live per interface, so the first.
                *inner.socks.first().ok_or(Errno::EINVAL)?
            }
        };
        drop(inner);
        let u = st.udp(r);
        if u.payload_send_capacity() < len {
            return Err(Errno::EMSGSIZE);
        }
        let meta = UdpMetadata { endpoint: remote, local_address: local_addr, meta: Default::default() };
        match u.send_slice(buf, meta) {
            Ok(()) => {}
            Err(udp::SendError::BufferFull) => {
                self.c.opts.async_io.no_space();
                return Err(Errno::EAGAIN);
            }
            Err(udp::SendError::Unaddressable) => return Err(Errno::EINVAL),
        }
        st.poll();
        let mut inner = self.inner.lock();
        self.hold_if_stuck(&mut st, &mut inner, r, remote.addr);
        Ok(len)
    }

    fn recv_one(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        if let Some(e) = self.c.take_err() {
            return Err(e);
        }
        // A connected socket's queue holds only its peer's datagrams:
        // every poll that can bring one is followed by a refresh, whose
        // compute drops the others, and so is connect(2).
        let peek = args.flags & s::MSG_PEEK != 0;
        // The first of its smoltcp sockets holding a datagram; the stack
        // lock keeps it there while the spin lock is let go.
        let ready = inner.socks.iter().copied().find(|r| st.udp(*r).can_recv());
        let rcv_shut = inner.shut & RCV != 0;
        // User memory is written below: no spin lock held.
        drop(inner);
        if let Some(r) = ready {
            let ifindex = st.scope_of(r, 0);
            let u = st.udp(r);
            let got = if peek { u.peek().map(|(d, m)| (d, *m)) } else { u.recv() };
            let Ok((payload, meta)) = got else { return Err(Errno::EAGAIN) };
            let n = payload.len().min(data.remaining());
            let res = data.write(&payload[..n]);
            let full = payload.len();
            res?;
            let mut out = Received { len: n, ..Received::default() };
            if n < full {
                out.flags |= s::MSG_TRUNC;
                if args.flags & s::MSG_TRUNC != 0 {
                    out.len = full;
                }
            }
            if args.want_addr {
                let from = addr::from_endpoint(meta.endpoint);
                out.addr = Some(addr::encode_scoped(self.c.family, from, ifindex));
            }
            let mut inner = self.inner.lock();
            self.refresh_locked(&mut st, &mut inner);
            return Ok(out);
        }
        if rcv_shut {
            return Ok(Received::default());
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
        inner.held.clear();
        if inner.owns_port {
            st.ports.release(Transport::Udp, inner.local.port, self.c.id);
        }
    }
}

fn is_held(inner: &Inner, r: SockRef) -> bool {
    inner.held.iter().any(|h| h.r == r)
}

fn meta_vec(n: usize) -> Result<Vec<udp::PacketMetadata>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, udp::PacketMetadata::EMPTY);
    Ok(v)
}

impl Watch for UdpSocket {
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

    fn entry(&self, st: &mut Stack) -> Option<ProcEntry> {
        let inner = self.inner.lock();
        if !inner.owns_port {
            return None;
        }
        let rx_queue = inner.socks.iter().map(|r| st.udp(*r).recv_queue()).sum();
        Some(ProcEntry {
            transport: Transport::Udp,
            family: self.c.family,
            local: SockAddr { addr: inner.local.addr.or(inner.conn_src), port: inner.local.port },
            remote: inner.remote.map(addr::from_endpoint).unwrap_or(SockAddr::ANY),
            state: if inner.remote.is_some() { 1 } else { 7 },
            tx_queue: 0,
            rx_queue,
            uid: self.c.uid,
            inode: self.c.ino.load(Ordering::Relaxed),
        })
    }
}

impl Protocol for UdpSocket {
    fn family(&self) -> u16 {
        self.c.family
    }

    fn sock_type(&self) -> SockType {
        SockType::Dgram
    }

    fn protocol(&self) -> i32 {
        17
    }

    fn options(&self) -> &SockOptions {
        &self.c.opts
    }

    fn is_inet(&self) -> bool {
        true
    }

    fn bind(&self, a: &[u8], _names: &NameCtx) -> Result<(), Errno> {
        let sa = addr::parse(self.c.family, a, true)?;
        // Before the locks (see check_scope). Linux checks it after the
        // v6-only rule, which only IPv4 addresses meet: same answers.
        let bound_scope = addr::check_scope(&sa, a)?.unwrap_or(0);
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if inner.owns_port {
            return Err(Errno::EINVAL);
        }
        if self.c.family == s::AF_INET6 && self.c.v6only.load(Ordering::Relaxed) {
            if let Some(IpAddress::Ipv4(_)) = sa.addr {
                return Err(Errno::EINVAL);
            }
        }
        if let Some(a) = sa.addr {
            if st.iface_of_local(a).is_none() {
                return Err(Errno::EADDRNOTAVAIL);
            }
        }
        if sa.port != 0 && sa.port < super::ports::PROT_SOCK && !super::may_bind_privileged() {
            return Err(Errno::EACCES);
        }
        self.attach_port(&mut st, &mut inner, sa)?;
        inner.bound_scope = bound_scope;
        Ok(())
    }

    fn connect(&self, a: &[u8], _names: &NameCtx, _nonblock: bool) -> Result<(), Errno> {
        // Before the locks (see check_scope); AF_UNSPEC is not parsed.
        let scope = match addr::parse(self.c.family, a, false) {
            Ok(sa) => addr::check_scope(&sa, a)?,
            Err(_) => None,
        };
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if a.len() >= 2 && u16::from_le_bytes([a[0], a[1]]) == s::AF_UNSPEC {
            inner.remote = None;
            inner.remote_scope = None;
            inner.conn_src = None;
            self.refresh_locked(&mut st, &mut inner);
            return Ok(());
        }
        let sa = addr::parse(self.c.family, a, false)?;
        let remote = sa.addr.unwrap_or_else(|| self.wildcard_remote());
        self.family_ok(remote)?;
        let iface = st.route_scoped(remote, scope)?;
        self.autobind(&mut st, &mut inner)?;
        let src = match inner.local.addr {
            Some(a) => Some(a),
            None => st.ifaces[iface].iface.get_source_address(&remote),
        };
        inner.remote = Some(IpEndpoint::new(remote, sa.port));
        inner.remote_scope = scope;
        inner.conn_src = src;
        self.refresh_locked(&mut st, &mut inner);
        Ok(())
    }

    fn sockname(&self) -> AddrBuf {
        let inner = self.inner.lock();
        let addr = inner.local.addr.or(inner.conn_src);
        let scope = inner.remote_scope.unwrap_or(inner.bound_scope);
        addr::encode_scoped(self.c.family, SockAddr { addr, port: inner.local.port }, scope)
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        let inner = self.inner.lock();
        let r = inner.remote.ok_or(Errno::ENOTCONN)?;
        let scope = inner.remote_scope.unwrap_or(0);
        Ok(addr::encode_scoped(self.c.family, addr::from_endpoint(r), scope))
    }

    fn shutdown(&self, how: i32) -> Result<(), Errno> {
        if !(s::SHUT_RD..=s::SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if inner.remote.is_none() {
            return Err(Errno::ENOTCONN);
        }
        inner.shut |= (how + 1) as u8;
        self.refresh_locked(&mut st, &mut inner);
        Ok(())
    }

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let dest = match args.addr {
            Some(a) if !a.is_empty() => {
                let sa = addr::parse(self.c.family, a, false)?;
                Some((sa, addr::send_scope(&sa, a)))
            }
            _ => None,
        };
        let wait = self.c.send_wait(args.nonblock, args.flags);
        // Read once, before any spin lock is taken (a fault may sleep),
        // and kept for the retries after EAGAIN.
        // Short datagrams (a request, a ping) stay on the stack: no
        // allocation per send.
        let len = data.remaining();
        let mut small = [0u8; SMALL_DATAGRAM];
        let mut big;
        let buf: &mut [u8] = if len <= SMALL_DATAGRAM {
            &mut small[..len]
        } else {
            big = stack::zeroed(len)?;
            &mut big
        };
        data.read(buf)?;
        let buf = &*buf;
        let r = self.c.blocking(&wait, || self.send_one(buf, dest));
        if r == Err(Errno::EPIPE) && args.flags & s::MSG_NOSIGNAL == 0 {
            crate::net::sigpipe();
        }
        r
    }

    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let wait = self.c.recv_wait(args.nonblock, args.flags).marking_reader();
        self.c.blocking(&wait, || self.recv_one(data, args))
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        self.c.poll(table)
    }

    fn unread(&self) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        Ok(first_unread(&mut st, &inner.socks, |st, r| st.udp(r).peek().ok().map(|(d, _)| d.len())))
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
        let bound = self.inner.lock().owns_port;
        if self.c.set_ip_option(level, name, val, bound)? {
            if let Ok(mut st) = stack::lock() {
                let inner = self.inner.lock();
                for r in inner.socks.iter() {
                    st.udp(*r).set_hop_limit(self.c.hop_limit());
                }
            }
            return Ok(());
        }
        if level == SOL_UDP {
            return Err(Errno::ENOPROTOOPT);
        }
        Err(Errno::ENOPROTOOPT)
    }

    fn getsockopt(&self, level: i32, name: i32) -> Result<OptValue, Errno> {
        if let Some(v) = self.c.get_ip_option(level, name)? {
            return Ok(v);
        }
        if level == SOL_UDP {
            return Err(Errno::ENOPROTOOPT);
        }
        Err(self.c.unknown_level())
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
