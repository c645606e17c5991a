//! One interface's sockets: the smoltcp set the interface polls, and the
//! idle TCP connections parked out of it.
//!
//! smoltcp walks every socket of the set it polls several times a poll
//! (ingress lookup, each egress pass, the next deadline), so an idle
//! connection cost every poll of the stack about a thousand instructions
//! (docs/networking.md, "Many connections"). A connection with nothing
//! to send, nothing to acknowledge and no timer due before a deadline is
//! *parked*: taken out of the set and kept here with the deadline smoltcp
//! gave it (keepalive, `timeout`), indexed by its four-tuple. It goes back
//! into the set when
//!
//! * the kernel touches it ([`Sockets::get_mut`]: a send, a read, a
//!   close, an option),
//! * a segment for its four-tuple arrives (the gate, which sees every
//!   frame before smoltcp, holds the frame for a round: [`Parked::claim`]),
//! * its deadline comes ([`Sockets::unpark_due`]).
//!
//! smoltcp never sees a parked socket, so it can neither answer its
//! segments with a reset nor miss its timer. Kiln's own handle
//! ([`SockId`]) stays the same while the socket moves between set and
//! park (smoltcp's handle changes).

use alloc::boxed::Box;
use alloc::vec::Vec;

use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::socket::{tcp, AnySocket, Socket};
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, IpAddress, IpEndpoint, IpProtocol, Ipv4Packet, Ipv6Packet, TcpPacket,
};

/// Kiln's handle of a socket on one interface: it does not change when
/// the socket is parked and brought back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SockId(u32);

/// A connection's (local, remote) endpoints, as smoltcp matches segments.
type Tuple = (IpEndpoint, IpEndpoint);

enum Slot {
    Free,
    Active(SocketHandle),
    /// Boxed: a smoltcp socket is ~540 bytes and most slots are active.
    Parked(Box<ParkedSocket>),
}

/// A connection out of the polled set, with what finds it again.
struct ParkedSocket {
    socket: Socket<'static>,
    tuple: Tuple,
    due: Option<Instant>,
}

/// What of the parked sockets the gate needs while smoltcp holds the set.
#[derive(Default)]
pub struct Parked {
    /// Parked connections by four-tuple, sorted.
    tuples: Vec<(Tuple, SockId)>,
    /// Parked connections with a timer, earliest first.
    deadlines: Vec<(Instant, SockId)>,
    /// A frame for a parked connection, held until it is back in the set.
    held: Option<Vec<u8>>,
    /// The connection the held frame is for (None once it is back, or
    /// for a frame whose connection could not be told: then all go back).
    wake: Option<SockId>,
    wake_all: bool,
}

/// A TCP segment's four-tuple, as its receiver sees it; `Unsure` for a
/// frame that smoltcp might still take as TCP but the gate cannot read
/// (an IPv6 extension header, a fragment).
enum Segment {
    NotTcp,
    Tcp(Tuple),
    Unsure,
}

fn segment_of(frame: &[u8], ethernet: bool) -> Segment {
    let ip = if ethernet {
        let Ok(eth) = EthernetFrame::new_checked(frame) else { return Segment::NotTcp };
        match eth.ethertype() {
            EthernetProtocol::Ipv4 | EthernetProtocol::Ipv6 => {}
            _ => return Segment::NotTcp,
        }
        &frame[EthernetFrame::<&[u8]>::header_len()..]
    } else {
        frame
    };
    let (src, dst, payload) = match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let Ok(p) = Ipv4Packet::new_checked(ip) else { return Segment::NotTcp };
            if p.next_header() != IpProtocol::Tcp {
                return Segment::NotTcp;
            }
            if p.more_frags() || p.frag_offset() != 0 {
                return Segment::Unsure;
            }
            let (h, t) = (p.header_len() as usize, p.total_len() as usize);
            let Some(payload) = ip.get(h..t) else { return Segment::NotTcp };
            (IpAddress::Ipv4(p.src_addr()), IpAddress::Ipv4(p.dst_addr()), payload)
        }
        Some(6) => {
            let Ok(p) = Ipv6Packet::new_checked(ip) else { return Segment::NotTcp };
            match p.next_header() {
                IpProtocol::Tcp => {}
                IpProtocol::Udp | IpProtocol::Icmpv6 => return Segment::NotTcp,
                _ => return Segment::Unsure,
            }
            let len = p.payload_len() as usize;
            let Some(payload) = ip.get(40..40 + len) else { return Segment::NotTcp };
            (IpAddress::Ipv6(p.src_addr()), IpAddress::Ipv6(p.dst_addr()), payload)
        }
        _ => return Segment::NotTcp,
    };
    let Ok(t) = TcpPacket::new_checked(payload) else { return Segment::NotTcp };
    Segment::Tcp((IpEndpoint::new(dst, t.dst_port()), IpEndpoint::new(src, t.src_port())))
}

impl Parked {
    /// Whether the gate should hold `frame` (it is for a parked
    /// connection, which goes back into the set after this round). Only
    /// one frame is held at a time; the gate stops taking frames until
    /// it is fed.
    pub fn claim(&mut self, frame: &[u8], ethernet: bool) -> bool {
        if self.tuples.is_empty() {
            return false;
        }
        match segment_of(frame, ethernet) {
            Segment::NotTcp => false,
            Segment::Tcp(t) => match self.tuples.binary_search_by_key(&t, |e| e.0) {
                Ok(i) => {
                    self.wake = Some(self.tuples[i].1);
                    true
                }
                Err(_) => false,
            },
            Segment::Unsure => {
                self.wake_all = true;
                true
            }
        }
    }

    pub fn hold(&mut self, frame: Vec<u8>) {
        self.held = Some(frame);
    }

    /// Whether the held frame's connection is back in the set.
    pub fn ready(&self) -> bool {
        self.wake.is_none() && !self.wake_all
    }

    /// The held frame, once its connection is back in the set.
    pub fn take_ready(&mut self) -> Option<Vec<u8>> {
        if !self.ready() {
            return None;
        }
        self.held.take()
    }

    /// Whether a frame is held (another round is due).
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }

    fn forget(&mut self, id: SockId, tuple: Tuple, due: Option<Instant>) {
        if let Ok(i) = self.tuples.binary_search(&(tuple, id)) {
            self.tuples.remove(i);
        }
        if let Some(at) = due {
            if let Ok(i) = self.deadlines.binary_search(&(at, id)) {
                self.deadlines.remove(i);
            }
        }
    }
}

/// One interface's sockets.
pub struct Sockets {
    /// What smoltcp polls. Kiln's DHCP client lives here directly.
    pub set: SocketSet<'static>,
    pub parked: Parked,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// The set's sockets that have a [`SockId`], sorted by handle, and
    /// whether each is a TCP socket.
    by_handle: Vec<(SocketHandle, SockId, bool)>,
    /// How many of `by_handle` are TCP sockets (with none, a poll has
    /// nothing to park and skips the walk).
    tcp_active: usize,
    /// By slot: the active connection was idle after the last poll. One
    /// is parked only when it is idle after two polls in a row: parking
    /// and bringing back cost more than the polls of a connection about
    /// to move again (loopback connect+accept+close: 75.3 µs under
    /// icount parking at once, 70.8 µs with this rule; 64 idle
    /// connections still cost a UDP round trip 1.2 µs, not 270).
    idle_before: Vec<bool>,
    /// A set of one socket, to ask smoltcp when a socket alone wants a
    /// poll (`Interface::poll_at`; the socket's own is crate-private).
    probe: SocketSet<'static>,
}

impl Default for Sockets {
    fn default() -> Self {
        Sockets {
            set: SocketSet::new(Vec::new()),
            parked: Parked::default(),
            slots: Vec::new(),
            free: Vec::new(),
            by_handle: Vec::new(),
            tcp_active: 0,
            idle_before: Vec::new(),
            probe: SocketSet::new(Vec::new()),
        }
    }
}

impl Sockets {
    /// Adds a socket to the polled set; None without memory.
    pub fn add(&mut self, s: Socket<'static>) -> Option<SockId> {
        if self.by_handle.try_reserve(1).is_err() {
            return None;
        }
        let id = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.try_reserve(1).ok()?;
                self.idle_before.try_reserve(1).ok()?;
                // Room in `free` for every slot, so `remove` never allocates.
                self.free.try_reserve(self.slots.len() + 1 - self.free.len()).ok()?;
                self.slots.push(Slot::Free);
                self.idle_before.push(false);
                (self.slots.len() - 1) as u32
            }
        };
        let tcp = matches!(s, Socket::Tcp(_));
        let handle = self.set.add(s);
        self.slots[id as usize] = Slot::Active(handle);
        self.idle_before[id as usize] = false;
        let id = SockId(id);
        self.insert_handle(handle, id, tcp);
        Some(id)
    }

    fn insert_handle(&mut self, handle: SocketHandle, id: SockId, tcp: bool) {
        let i = self.by_handle.binary_search_by_key(&handle, |e| e.0).unwrap_or_else(|i| i);
        self.by_handle.insert(i, (handle, id, tcp));
        self.tcp_active += usize::from(tcp);
    }

    fn drop_handle(&mut self, handle: SocketHandle) {
        if let Ok(i) = self.by_handle.binary_search_by_key(&handle, |e| e.0) {
            let (_, _, tcp) = self.by_handle.remove(i);
            self.tcp_active -= usize::from(tcp);
        }
    }

    /// Takes a socket out for good.
    pub fn remove(&mut self, id: SockId) -> Socket<'static> {
        let slot = core::mem::replace(&mut self.slots[id.0 as usize], Slot::Free);
        // `add` reserved room in `free` for every slot.
        self.free.push(id.0);
        match slot {
            Slot::Active(h) => {
                self.drop_handle(h);
                self.set.remove(h)
            }
            Slot::Parked(p) => {
                let ParkedSocket { socket, tuple, due } = *p;
                self.parked.forget(id, tuple, due);
                socket
            }
            Slot::Free => panic!("net: a freed socket id was used"),
        }
    }

    /// How many sockets with an id the polled set holds.
    pub fn active(&self) -> usize {
        self.by_handle.len()
    }

    pub fn is_parked(&self, id: SockId) -> bool {
        matches!(self.slots[id.0 as usize], Slot::Parked(_))
    }

    /// The socket, read where it is (a parked one stays parked).
    #[inline]
    pub fn get<T: AnySocket<'static>>(&self, id: SockId) -> &T {
        match &self.slots[id.0 as usize] {
            Slot::Active(h) => self.set.get::<T>(*h),
            Slot::Parked(p) => T::downcast(&p.socket).expect("net: socket of another kind"),
            Slot::Free => panic!("net: a freed socket id was used"),
        }
    }

    /// The socket, to change: a parked one goes back into the set first
    /// (what the caller does may give it something to send). Inline up
    /// to the slot test: a UDP round trip asks for its sockets about
    /// twenty times, and an out-of-line `unpark` for each was ~550
    /// instructions of it.
    #[inline]
    pub fn get_mut<T: AnySocket<'static>>(&mut self, id: SockId) -> &mut T {
        if let Slot::Active(h) = self.slots[id.0 as usize] {
            return self.set.get_mut::<T>(h);
        }
        self.unpark_slow(id);
        match &self.slots[id.0 as usize] {
            Slot::Active(h) => self.set.get_mut::<T>(*h),
            _ => panic!("net: a freed socket id was used"),
        }
    }

    /// Every socket that has an id, with it, parked or not.
    pub fn iter(&self) -> impl Iterator<Item = (SockId, &Socket<'static>)> + '_ {
        let active = self.set.iter().filter_map(move |(h, s)| {
            let i = self.by_handle.binary_search_by_key(&h, |e| e.0).ok()?;
            Some((self.by_handle[i].1, s))
        });
        let parked = self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Parked(p) => Some((SockId(i as u32), &p.socket)),
            _ => None,
        });
        active.chain(parked)
    }

    /// Puts a parked socket back into the set; false if it was not parked.
    #[inline]
    pub fn unpark(&mut self, id: SockId) -> bool {
        matches!(self.slots[id.0 as usize], Slot::Parked(_)) && self.unpark_slow(id)
    }

    #[cold]
    #[inline(never)]
    fn unpark_slow(&mut self, id: SockId) -> bool {
        let i = id.0 as usize;
        if !matches!(self.slots[i], Slot::Parked(_)) {
            return false;
        }
        if self.by_handle.try_reserve(1).is_err() {
            // It stays parked: a frame for it is still held, a timer
            // still due; the next poll tries again.
            return false;
        }
        let Slot::Parked(p) = core::mem::replace(&mut self.slots[i], Slot::Free) else {
            return false;
        };
        let ParkedSocket { socket, tuple, due } = *p;
        self.parked.forget(id, tuple, due);
        let h = self.set.add(socket);
        self.slots[i] = Slot::Active(h);
        self.idle_before[i] = false;
        self.insert_handle(h, id, true);
        true
    }

    /// After a round: brings back the connections the held frame is for
    /// (their ids added to `woken`).
    pub fn unpark_claimed(&mut self, woken: &mut Vec<SockId>) {
        if let Some(id) = self.parked.wake.take() {
            if self.unpark(id) {
                push(woken, id);
            }
        }
        if core::mem::take(&mut self.parked.wake_all) {
            self.unpark_all(woken);
        }
    }

    fn unpark_all(&mut self, woken: &mut Vec<SockId>) {
        for i in 0..self.slots.len() {
            let id = SockId(i as u32);
            if self.unpark(id) {
                push(woken, id);
            }
        }
    }

    /// Brings back the connections whose timer is due at `now`.
    pub fn unpark_due(&mut self, now: Instant, woken: &mut Vec<SockId>) {
        while let Some(&(at, id)) = self.parked.deadlines.first() {
            if at > now {
                break;
            }
            if !self.unpark(id) {
                // No memory to: it waits for a later poll.
                break;
            }
            push(woken, id);
        }
    }

    /// The earliest timer of a parked connection.
    pub fn next_due(&self) -> Option<Instant> {
        self.parked.deadlines.first().map(|e| e.0)
    }

    /// Parks the set's TCP connections that have nothing to do before a
    /// deadline (walks the set, which holds only what moved lately),
    /// adding their ids to `parked`. `probe_iface` answers when a socket
    /// wants a poll: the loopback's, which has no SLAAC timer of its own.
    pub fn park_idle(&mut self, probe_iface: &mut Interface, now: Instant, parked: &mut Vec<SockId>) {
        if self.parked.held.is_some() || self.tcp_active == 0 {
            return;
        }
        let mut k = 0;
        while k < self.by_handle.len() {
            let (h, id, tcp) = self.by_handle[k];
            let idle = tcp && self.idle(h);
            let idle_before = core::mem::replace(&mut self.idle_before[id.0 as usize], idle);
            if !(idle && idle_before && self.park(probe_iface, now, h, id)) {
                k += 1;
                continue;
            }
            push(parked, id);
        }
    }

    /// What can be seen without smoltcp's private state: a connection
    /// with nothing of its own in flight.
    fn idle(&self, h: SocketHandle) -> bool {
        let t = self.set.get::<tcp::Socket>(h);
        matches!(t.state(), tcp::State::Established | tcp::State::CloseWait)
            && t.send_queue() == 0
            && t.local_endpoint().is_some()
            && t.remote_endpoint().is_some()
    }

    /// Parks one connection if smoltcp wants no poll for it now: it asks
    /// smoltcp with the socket alone in `probe`. Returns whether it did.
    fn park(&mut self, probe_iface: &mut Interface, now: Instant, h: SocketHandle, id: SockId) -> bool {
        if self.parked.tuples.try_reserve(1).is_err() || self.parked.deadlines.try_reserve(1).is_err() {
            return false;
        }
        let t = self.set.get::<tcp::Socket>(h);
        let (Some(local), Some(remote)) = (t.local_endpoint(), t.remote_endpoint()) else { return false };
        let tuple = (local, remote);
        let timers = t.keep_alive().is_some() || t.timeout().is_some() || t.ack_delay().is_some();
        let socket = self.set.remove(h);
        let ph = self.probe.add(socket);
        let due = probe_iface.poll_at(now, &self.probe);
        let socket = self.probe.remove(ph);
        // `probe_iface` is the loopback's: with SLAAC on, smoltcp folds
        // the interface's SLAAC deadline into the answer with
        // `Option::min`, where None is least, so a socket's timer could
        // come back as None. Should that ever happen, a socket with a
        // timer configured is not parked.
        let keep_active = due.is_some_and(|at| at <= now) || (due.is_none() && timers);
        let parked = if keep_active {
            Err(socket)
        } else {
            // No memory for the box: it stays in the set.
            match Box::<ParkedSocket>::try_new_uninit() {
                Ok(b) => Ok(Box::write(b, ParkedSocket { socket, tuple, due })),
                Err(_) => Err(socket),
            }
        };
        let parked = match parked {
            Ok(p) => p,
            Err(socket) => {
                let h2 = self.set.add(socket);
                self.drop_handle(h);
                self.insert_handle(h2, id, true);
                return false;
            }
        };
        self.drop_handle(h);
        let i = self.parked.tuples.binary_search(&(tuple, id)).unwrap_or_else(|i| i);
        self.parked.tuples.insert(i, (tuple, id));
        if let Some(at) = due {
            let i = self.parked.deadlines.binary_search(&(at, id)).unwrap_or_else(|i| i);
            self.parked.deadlines.insert(i, (at, id));
        }
        self.slots[id.0 as usize] = Slot::Parked(parked);
        true
    }
}

fn push(v: &mut Vec<SockId>, id: SockId) {
    if v.try_reserve(1).is_ok() {
        v.push(id);
    }
}
