//! Listen queues and the SYN gate: what bounds a TCP listener's memory.
//!
//! smoltcp turns a listening socket into the connection its first SYN
//! asks for, and answers a SYN that no socket accepts with a reset. Kiln
//! keeps no listening smoltcp socket waiting: every frame an interface
//! receives passes the gate ([`Gated`]) first, and a SYN for a listener
//! is held back while the stack makes a smoltcp socket listening on
//! exactly the SYN's destination, then fed to it on the next round. So
//! a listener costs nothing until SYNs come, each connection in the
//! making or waiting for accept holds one smoltcp socket, and the gate
//! bounds their number as Linux bounds a listener's queues:
//!
//! * a listener holds at most backlog + 1 connections (backlog capped at
//!   somaxconn, 4096), half-open ones ("embryos", SYN-RECEIVED) and
//!   established ones waiting for accept together;
//! * a SYN that finds them full is dropped, not reset, so the client
//!   retransmits it later (Linux's `tcp_conn_request` on a full accept
//!   queue); if some of them are still half-open, the oldest of those
//!   gives its place to the new SYN instead, which is what keeps a SYN
//!   flood from locking clients out (Linux sends SYN cookies there);
//! * a half-open connection gives up after [`EMBRYO_TIMEOUT`];
//! * a SYN of the wrong family (IPv6 for an AF_INET listener, IPv4 for
//!   an IPV6_V6ONLY one) or for a port nobody listens on finds no
//!   socket, and smoltcp resets it, as Linux does.
//!
//! Everything here is under the stack lock.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::phy::{self, DeviceCapabilities};
use smoltcp::socket::tcp::{self, State};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, IpAddress, IpEndpoint, IpListenEndpoint, IpProtocol, Ipv4Packet, Ipv6Packet,
    TcpPacket,
};

use super::iface::{IfaceDevice, RxToken, TxToken};
use super::sockets::{Parked, Sockets};
use super::stack::{SockRef, SpareTcp};

/// How long a connection may stay half-open (SYN-RECEIVED): about what
/// Linux's five SYN-ACK retransmissions take (63 s).
pub const EMBRYO_TIMEOUT: Duration = Duration::from_secs(60);

/// One listener's queues.
pub struct ListenQueue {
    /// The listening socket's id.
    pub id: u64,
    pub endpoint: IpListenEndpoint,
    pub family: u16,
    pub v6only: bool,
    pub uid: u32,
    /// Buffer sizes of the connections it makes.
    pub sizes: (usize, usize),
    /// listen(2)'s backlog, capped at somaxconn.
    pub backlog: usize,
    /// Half-open connections, oldest first, with their peers.
    pub embryos: VecDeque<(SockRef, IpEndpoint)>,
    /// Established connections waiting for accept, in the order their
    /// handshakes ended.
    pub ready: VecDeque<(SockRef, IpEndpoint)>,
}

impl ListenQueue {
    fn full(&self) -> bool {
        self.embryos.len() + self.ready.len() > self.backlog
    }

    fn has(&self, peer: IpEndpoint) -> bool {
        self.embryos.iter().chain(self.ready.iter()).any(|&(_, p)| p == peer)
    }
}

/// A SYN held back until a socket listens for it.
struct Held {
    iface: usize,
    frame: Vec<u8>,
    /// The listener it goes to (None once its socket exists).
    queue: Option<u64>,
    dst: IpAddress,
    peer: IpEndpoint,
}

/// What the gate counted (the kernel's own figures for the flood tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct GateCounters {
    /// SYNs given a socket.
    pub admitted: u64,
    /// SYNs dropped because their listener was full of established
    /// connections.
    pub dropped: u64,
    /// Half-open connections dropped to make room for a newer SYN.
    pub evicted: u64,
}

/// Every listener's queues and the SYNs held at the gate.
#[derive(Default)]
pub struct Listens {
    pub queues: Vec<ListenQueue>,
    held: Vec<Held>,
    pub counters: GateCounters,
}

/// A SYN's addresses, from the frame.
struct Syn {
    dst: IpAddress,
    peer: IpEndpoint,
    port: u16,
}

/// The connection request in a frame, if it is one: a TCP segment with
/// SYN and neither ACK nor RST, not a fragment, its checksum right when
/// the interface checks checksums. Anything else passes untouched.
fn parse_syn(frame: &[u8], ethernet: bool, check: bool) -> Option<Syn> {
    let ip = if ethernet {
        let eth = EthernetFrame::new_checked(frame).ok()?;
        match eth.ethertype() {
            EthernetProtocol::Ipv4 | EthernetProtocol::Ipv6 => {}
            _ => return None,
        }
        &frame[EthernetFrame::<&[u8]>::header_len()..]
    } else {
        frame
    };
    let (src, dst, payload) = match ip.first()? >> 4 {
        4 => {
            let p = Ipv4Packet::new_checked(ip).ok()?;
            if p.next_header() != IpProtocol::Tcp || p.more_frags() || p.frag_offset() != 0 {
                return None;
            }
            if check && !p.verify_checksum() {
                return None;
            }
            let (h, t) = (p.header_len() as usize, p.total_len() as usize);
            (IpAddress::Ipv4(p.src_addr()), IpAddress::Ipv4(p.dst_addr()), ip.get(h..t)?)
        }
        6 => {
            let p = Ipv6Packet::new_checked(ip).ok()?;
            if p.next_header() != IpProtocol::Tcp {
                return None;
            }
            let len = p.payload_len() as usize;
            (IpAddress::Ipv6(p.src_addr()), IpAddress::Ipv6(p.dst_addr()), ip.get(40..40 + len)?)
        }
        _ => return None,
    };
    let t = TcpPacket::new_checked(payload).ok()?;
    if !t.syn() || t.ack() || t.rst() || t.dst_port() == 0 {
        return None;
    }
    if check && !t.verify_checksum(&src, &dst) {
        return None;
    }
    Some(Syn { dst, peer: IpEndpoint::new(src, t.src_port()), port: t.dst_port() })
}

enum Verdict {
    Pass,
    Drop,
    Hold(u64),
}

impl Listens {
    pub fn queue(&mut self, id: u64) -> Option<&mut ListenQueue> {
        self.queues.iter_mut().find(|q| q.id == id)
    }

    pub fn add(&mut self, q: ListenQueue) -> Result<(), Errno> {
        self.queues.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.queues.push(q);
        Ok(())
    }

    /// Takes a listener's queues out (it closes); its held SYN, if any,
    /// is dropped.
    pub fn remove(&mut self, id: u64) -> Option<ListenQueue> {
        self.held.retain(|h| h.queue != Some(id));
        let i = self.queues.iter().position(|q| q.id == id)?;
        Some(self.queues.swap_remove(i))
    }

    /// The listener a SYN is for: one bound to its destination before a
    /// wildcard one, and of its family.
    fn listener_for(&self, syn: &Syn) -> Option<usize> {
        let mut best = None;
        for (i, q) in self.queues.iter().enumerate() {
            if q.endpoint.port != syn.port {
                continue;
            }
            let family_ok = match syn.dst {
                IpAddress::Ipv4(_) => q.family == s::AF_INET || !q.v6only,
                IpAddress::Ipv6(_) => q.family == s::AF_INET6,
            };
            match q.endpoint.addr {
                Some(a) if a == syn.dst => return Some(i),
                None if family_ok => best = Some(i),
                _ => {}
            }
        }
        best
    }

    fn admit(&mut self, frame: &[u8], ethernet: bool, check: bool) -> Verdict {
        if self.queues.is_empty() {
            return Verdict::Pass;
        }
        let Some(syn) = parse_syn(frame, ethernet, check) else { return Verdict::Pass };
        // No listener: smoltcp finds no socket and resets it.
        let Some(i) = self.listener_for(&syn) else { return Verdict::Pass };
        let q = &mut self.queues[i];
        if q.has(syn.peer) {
            // A retransmitted SYN: its connection's socket answers it.
            return Verdict::Pass;
        }
        if q.full() && q.embryos.is_empty() {
            self.counters.dropped += 1;
            return Verdict::Drop;
        }
        // Full of half-open connections: after this round the oldest
        // still half-open one may give its place (`after_round`).
        Verdict::Hold(q.id)
    }

    /// Whether a held SYN waits on `iface`.
    pub fn holding(&self, iface: usize) -> bool {
        self.held.iter().any(|h| h.iface == iface)
    }

    /// After a poll round of `iface`: settles its listeners' connections
    /// and makes the listening socket a held SYN needs, making room for
    /// it by dropping the oldest half-open connection if the listener is
    /// full. Returns whether a held SYN is ready to be fed (another round
    /// is due).
    pub fn after_round(&mut self, iface: usize, sockets: &mut Sockets, spare: &mut SpareTcp) -> bool {
        // Every round, so a socket whose SYN turned out bad never listens
        // into the next round to take another client's SYN.
        for q in self.queues.iter_mut() {
            settle(q, iface, sockets, &self.held);
        }
        let Some(h) = self.held.iter_mut().find(|h| h.iface == iface) else { return false };
        let Some(id) = h.queue.take() else { return true };
        let (dst, peer) = (h.dst, h.peer);
        let Some(q) = self.queues.iter_mut().find(|q| q.id == id) else {
            self.held.retain(|h| h.iface != iface);
            return false;
        };
        if q.full() {
            let oldest = q.embryos.iter().position(|&(r, _)| {
                r.iface == iface && sockets.get::<tcp::Socket>(r.handle).state() == State::SynReceived
            });
            match oldest.and_then(|i| q.embryos.remove(i)) {
                Some((r, _)) => {
                    if let smoltcp::socket::Socket::Tcp(t) = sockets.remove(r.handle) {
                        spare.put(t);
                    }
                    self.counters.evicted += 1;
                }
                None => {
                    self.counters.dropped += 1;
                    self.held.retain(|h| h.iface != iface);
                    return false;
                }
            }
        }
        let made = (|| {
            q.embryos.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            let (rx, tx) = super::tcp::TcpSocket::sizes_on(q.sizes, iface);
            // A spare socket's rings, not 128 KiB allocated and cleared
            // per connection (a third of a loopback connect+accept+close).
            let mut t = spare.take(rx, tx)?;
            super::tcp::TcpSocket::set_congestion_on(&mut t, iface);
            t.listen(IpListenEndpoint { addr: Some(dst), port: q.endpoint.port }).map_err(|_| Errno::EINVAL)?;
            t.set_timeout(Some(EMBRYO_TIMEOUT));
            Ok::<_, Errno>(t)
        })();
        match made {
            Ok(t) => match sockets.add(smoltcp::socket::Socket::Tcp(t)) {
                Some(handle) => {
                    q.embryos.push_back((SockRef { iface, handle }, peer));
                    self.counters.admitted += 1;
                    true
                }
                None => {
                    self.counters.dropped += 1;
                    self.held.retain(|h| h.iface != iface);
                    false
                }
            },
            Err(_) => {
                // No memory: the SYN is dropped, the client retries.
                self.counters.dropped += 1;
                self.held.retain(|h| h.iface != iface);
                false
            }
        }
    }

    /// After a poll: moves the connections whose handshake ended to
    /// their accept queue and drops those whose handshake failed.
    pub fn promote(&mut self, ifaces: &mut [super::stack::Iface]) {
        for q in self.queues.iter_mut() {
            for (i, f) in ifaces.iter_mut().enumerate() {
                settle(q, i, &mut f.sockets, &self.held);
            }
        }
    }
}

/// Moves `q`'s connections on interface `iface` whose handshake ended to
/// the accept queue, in the order they ended, and drops those whose
/// handshake failed or whose SYN turned out bad (still listening, and
/// not waiting for a held SYN).
fn settle(q: &mut ListenQueue, iface: usize, sockets: &mut Sockets, held: &[Held]) {
    let mut i = 0;
    while i < q.embryos.len() {
        let (r, peer) = q.embryos[i];
        if r.iface != iface {
            i += 1;
            continue;
        }
        // Read in place: an established connection waiting for accept
        // may be parked (sockets.rs), and stays so.
        match sockets.get::<tcp::Socket>(r.handle).state() {
            State::SynReceived => i += 1,
            State::Listen if held.iter().any(|h| h.peer == peer && h.queue.is_none()) => i += 1,
            State::Listen | State::Closed | State::TimeWait => {
                drop(sockets.remove(r.handle));
                q.embryos.remove(i);
            }
            _ => {
                sockets.get_mut::<tcp::Socket>(r.handle).set_timeout(None);
                q.embryos.remove(i);
                q.ready.push_back((r, peer));
            }
        }
    }
}

/// An interface's device as smoltcp sees it through the gate.
pub struct Gated<'a> {
    pub dev: &'a mut IfaceDevice,
    pub listens: &'a mut Listens,
    /// The interface's parked connections: a frame for one is held
    /// until it is back in smoltcp's set (sockets.rs).
    pub parked: &'a mut Parked,
    pub iface: usize,
}

impl phy::Device for Gated<'_> {
    type RxToken<'b>
        = RxToken
    where
        Self: 'b;
    type TxToken<'b>
        = TxToken<'b>
    where
        Self: 'b;

    fn receive(&mut self, now: Instant) -> Option<(RxToken, TxToken<'_>)> {
        let iface = self.iface;
        if self.parked.holding() {
            // It came first: nothing passes it.
            if !self.parked.ready() {
                return None;
            }
            let tx = self.dev.transmit(now)?;
            let frame = self.parked.take_ready()?;
            return Some((RxToken::new(frame), tx));
        }
        if let Some(i) = self.listens.held.iter().position(|h| h.iface == iface) {
            if self.listens.held[i].queue.is_some() {
                // Its socket is made after this round.
                return None;
            }
            let h = self.listens.held.swap_remove(i);
            let tx = self.dev.transmit(now)?;
            return Some((RxToken::new(h.frame), tx));
        }
        let ethernet = matches!(self.dev, IfaceDevice::Nic(_));
        let check = self.dev.checks_transport_checksums();
        let (rx, tx) = self.dev.receive(now)?;
        super::pollstats::FRAMES_IN.add(1);
        if self.parked.claim(rx.frame(), ethernet) {
            self.parked.hold(rx.into_frame());
            return None;
        }
        match self.listens.admit(rx.frame(), ethernet, check) {
            Verdict::Pass => Some((rx, tx)),
            // smoltcp passes over an empty frame.
            Verdict::Drop => Some((RxToken::new(Vec::new()), tx)),
            Verdict::Hold(id) => {
                let frame = rx.into_frame();
                if self.listens.held.try_reserve(1).is_ok() {
                    if let Some(syn) = parse_syn(&frame, ethernet, false) {
                        self.listens.held.push(Held { iface, frame, queue: Some(id), dst: syn.dst, peer: syn.peer });
                    }
                }
                None
            }
        }
    }

    fn transmit(&mut self, now: Instant) -> Option<TxToken<'_>> {
        self.dev.transmit(now)
    }

    fn capabilities(&self) -> DeviceCapabilities {
        self.dev.capabilities()
    }
}
