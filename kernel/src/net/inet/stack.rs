//! The stack: every interface with its smoltcp sockets, the port tables,
//! and the open sockets to tell when smoltcp changed something.
//!
//! One sleeping lock ([`STACK`]) guards it all. A socket call takes it,
//! works on its smoltcp socket, and on the loopback polls the interfaces
//! before letting go (so a send is through the loopback and into the
//! peer's buffer when the call returns: Asterinas's "poll right after
//! send"). A send through a NIC leaves its bytes in the ring and wakes
//! the poll thread ([`super::poller`]), whose one poll sends what every
//! send since the last one queued; the thread also takes the lock when a
//! device wakes it or smoltcp's next timer is due.
//!
//! After each poll every open socket whose smoltcp socket the poll may
//! have changed refreshes its readiness from it ([`Watch::refresh`]) and
//! notifies its pollers if that changed, so `poll`, `select` and `epoll`
//! read readiness from atomics and never take this lock. A connection
//! parked out of smoltcp's set ([`super::sockets`]) cannot change, so
//! its watcher sleeps ([`Stack::dormant`]) until it is back.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;
use smoltcp::iface::{Interface, SocketHandle};
use smoltcp::socket::{raw, tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::IpAddress;

use super::iface::{IfaceDevice, IfaceInfo};
use super::ports::{Ports, Transport};
pub use super::sockets::SockId;
use super::sockets::Sockets;
use super::tcp_listen::{Gated, Listens};
use crate::sync::{Mutex, MutexGuard};

/// One interface: smoltcp's state for it, its device, and the sockets
/// whose traffic goes through it.
pub struct Iface {
    pub info: IfaceInfo,
    pub iface: Interface,
    pub dev: IfaceDevice,
    pub sockets: Sockets,
    /// The interface's DHCP client, if `ip=` asked for one.
    pub dhcp: Option<SocketHandle>,
    /// What the interface table shows of its SLAAC state.
    pub slaac: super::addrconf::Slaac,
}

/// A smoltcp socket: which interface, which of its sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SockRef {
    pub iface: usize,
    pub handle: SockId,
}

/// An open socket that wants to hear when smoltcp may have changed its
/// state.
pub trait Watch: Send + Sync {
    fn id(&self) -> u64;
    /// Re-reads the socket's state after a poll (stack locked).
    fn refresh(&self, stack: &mut Stack);
    /// Its last descriptor went while interrupts were off: the network
    /// thread releases it now.
    fn release_deferred(&self);
    /// What /proc/net lists of it, if anything.
    fn entry(&self, _stack: &mut Stack) -> Option<super::procnet::ProcEntry> {
        None
    }
    /// The connection whose state alone its readiness follows, if any:
    /// while that is parked, nothing can change it, and the watcher is
    /// not refreshed.
    fn connection(&self) -> Option<SockRef> {
        None
    }
}

/// A TCP connection whose socket is closed but whose smoltcp socket
/// still finishes the close handshake; it keeps its port until then.
struct Orphan {
    r: SockRef,
    port: Option<(Transport, u16, u64)>,
}

/// The loopback's index in [`Stack::ifaces`] (it is made first).
pub const LOOPBACK: usize = 0;

/// Spent TCP sockets kept for reuse, at most (each holds its buffers,
/// 128 KiB at the default sizes).
const SPARE_TCP: usize = 8;

pub struct Stack {
    pub ifaces: Vec<Iface>,
    pub ports: Ports,
    watchers: Vec<Arc<dyn Watch>>,
    /// Watchers of parked connections, by connection: refreshed again
    /// when it is back in smoltcp's set.
    dormant: Vec<(SockRef, Arc<dyn Watch>)>,
    /// Scratch lists of socket ids a poll parked or brought back.
    moved: Vec<SockId>,
    orphans: Vec<Orphan>,
    /// TCP listeners' queues and the SYN gate (tcp_listen.rs).
    pub listens: Listens,
    /// Removed TCP sockets, closed, with their buffers: a new connection
    /// (connect, or a listener's next listening socket) takes one of the
    /// sizes it needs instead of allocating and clearing 128 KiB, which
    /// was a third of a loopback connect+accept+close. smoltcp clears a
    /// socket's state and rings when it listens or connects again; the
    /// options Kiln sets are put back to a new socket's in [`SpareTcp::take`].
    pub spare_tcp: SpareTcp,
    /// Loopback connections' bytes on their way to the reader
    /// (direct.rs).
    pub direct: super::direct::Direct,
    /// When smoltcp next wants to be polled (monotonic ns; 0: no timer).
    pub next_poll: u64,
    /// NIC connections a TCP_CORK clear or TCP_NODELAY asked to push:
    /// Nagle's rule is off on them until the next poll has sent what
    /// they held, then set back to the bool ([`Stack::push_later`]).
    pushed: Vec<(SockRef, bool)>,
}

pub static STACK: Mutex<Option<Stack>> = Mutex::new(None);

/// The stack, locked. ENETDOWN before it is set up (never, once booted).
pub struct Locked(MutexGuard<'static, Option<Stack>>);

impl core::ops::Deref for Locked {
    type Target = Stack;
    fn deref(&self) -> &Stack {
        self.0.as_ref().expect("checked in lock()")
    }
}

impl core::ops::DerefMut for Locked {
    fn deref_mut(&mut self) -> &mut Stack {
        self.0.as_mut().expect("checked in lock()")
    }
}

/// Sockets whose last descriptor went while interrupts were off (no
/// sleeping lock there): released by the network thread.
static DEFERRED: hal::sync::SpinLock<Vec<Arc<dyn Watch>>> = hal::sync::SpinLock::new(Vec::new());

/// Hands a socket's release to the network thread; false if there was
/// no memory to (the caller releases it itself).
pub fn defer_release(w: Arc<dyn Watch>) -> bool {
    let mut d = DEFERRED.lock();
    if d.try_reserve(1).is_err() {
        return false;
    }
    d.push(w);
    drop(d);
    super::poller::wake();
    true
}

/// Releases the sockets handed to the network thread.
pub fn release_deferred() {
    let list = core::mem::take(&mut *DEFERRED.lock());
    for w in list {
        w.release_deferred();
    }
}

pub fn lock() -> Result<Locked, Errno> {
    let g = STACK.lock();
    if g.is_none() {
        return Err(Errno::ENETDOWN);
    }
    Ok(Locked(g))
}

pub fn now() -> Instant {
    Instant::from_micros((hal::time::monotonic_ns() / 1000) as i64)
}

static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

/// A new socket identity (bind-table owner, watcher key).
pub fn new_id() -> u64 {
    NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

impl Stack {
    pub fn new(lo: Iface) -> Stack {
        let ifaces = alloc::vec![lo];
        Stack {
            ifaces,
            ports: Ports::new(),
            watchers: Vec::new(),
            dormant: Vec::new(),
            moved: Vec::new(),
            orphans: Vec::new(),
            listens: Listens::default(),
            spare_tcp: SpareTcp::default(),
            direct: Default::default(),
            next_poll: 0,
            pushed: Vec::new(),
        }
    }

    pub fn add_iface(&mut self, iface: Iface) -> Result<usize, Errno> {
        self.ifaces.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.ifaces.push(iface);
        Ok(self.ifaces.len() - 1)
    }

    pub fn watch(&mut self, w: Arc<dyn Watch>) -> Result<(), Errno> {
        self.watchers.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.watchers.push(w);
        Ok(())
    }

    pub fn watchers_snapshot(&self) -> Vec<Arc<dyn Watch>> {
        let mut v = Vec::new();
        if v.try_reserve(self.watchers.len() + self.dormant.len()).is_ok() {
            v.extend(self.watchers.iter().cloned());
            v.extend(self.dormant.iter().map(|d| d.1.clone()));
        }
        v
    }

    pub fn unwatch(&mut self, id: u64) {
        if let Some(i) = self.watchers.iter().position(|w| w.id() == id) {
            self.watchers.swap_remove(i);
        } else if let Some(i) = self.dormant.iter().position(|d| d.1.id() == id) {
            self.dormant.remove(i);
        }
    }

    /// A TCP socket, to change: a parked connection comes back into
    /// smoltcp's set (and its watcher with it).
    pub fn tcp(&mut self, r: SockRef) -> &mut tcp::Socket<'static> {
        self.unpark(r);
        self.ifaces[r.iface].sockets.get_mut::<tcp::Socket>(r.handle)
    }

    /// A TCP socket, to read: a parked connection stays parked.
    pub fn tcp_peek(&self, r: SockRef) -> &tcp::Socket<'static> {
        self.ifaces[r.iface].sockets.get::<tcp::Socket>(r.handle)
    }

    pub fn udp(&mut self, r: SockRef) -> &mut udp::Socket<'static> {
        self.ifaces[r.iface].sockets.get_mut::<udp::Socket>(r.handle)
    }

    pub fn raw(&mut self, r: SockRef) -> &mut raw::Socket<'static> {
        self.ifaces[r.iface].sockets.get_mut::<raw::Socket>(r.handle)
    }

    /// Adds a socket to an interface; ENOMEM without room for it.
    pub fn add(&mut self, iface: usize, s: smoltcp::socket::Socket<'static>) -> Result<SockRef, Errno> {
        let handle = self.ifaces[iface].sockets.add(s).ok_or(Errno::ENOMEM)?;
        Ok(SockRef { iface, handle })
    }

    /// Brings a parked connection back into smoltcp's set, its watcher
    /// back into the refreshed list.
    fn unpark(&mut self, r: SockRef) {
        if self.ifaces[r.iface].sockets.unpark(r.handle) {
            self.wake_watcher(r);
        }
    }

    fn wake_watcher(&mut self, r: SockRef) {
        super::pollstats::UNPARKED.add(1);
        if self.dormant.is_empty() || self.watchers.try_reserve(1).is_err() {
            return;
        }
        if let Ok(i) = self.dormant.binary_search_by_key(&r, |d| d.0) {
            let (_, w) = self.dormant.remove(i);
            self.watchers.push(w);
        }
    }

    /// Refreshes the dormant watcher of `r`, if it has one (its
    /// readiness moved outside smoltcp: bytes in its loopback pipe).
    pub fn refresh_dormant(&mut self, r: SockRef) {
        if let Ok(i) = self.dormant.binary_search_by_key(&r, |d| d.0) {
            let w = self.dormant[i].1.clone();
            w.refresh(self);
        }
    }

    /// Whether `r` is parked out of smoltcp's set.
    pub fn is_parked(&self, r: SockRef) -> bool {
        self.ifaces[r.iface].sockets.is_parked(r.handle)
    }

    /// Leaves the push of `r`'s held bytes (its Nagle's rule already
    /// off) to the next poll, which sets the rule back to `nagle` once it
    /// has sent them. A server uncorking many connections in one pass of
    /// its event loop then pays one poll, the network thread's, for all
    /// of them instead of one per reply (docs/networking.md, "Many
    /// connections"). False without memory: the caller polls itself.
    pub fn push_later(&mut self, r: SockRef, nagle: bool) -> bool {
        if let Some(p) = self.pushed.iter_mut().find(|p| p.0 == r) {
            p.1 = nagle;
            return true;
        }
        if self.pushed.try_reserve(1).is_err() {
            return false;
        }
        self.pushed.push((r, nagle));
        true
    }

    /// Sends what a push left for the next poll on `r`, now: a call about
    /// to set its Nagle's rule again must not hold those bytes back.
    pub fn flush_push(&mut self, r: SockRef) {
        if self.pushed.iter().any(|p| p.0 == r) {
            self.poll();
        }
    }

    /// After a poll sent the pushed connections' bytes: their Nagle's
    /// rule back as their options say.
    fn end_pushes(&mut self) {
        for (r, nagle) in core::mem::take(&mut self.pushed) {
            self.tcp(r).set_nagle_enabled(nagle);
        }
    }

    pub fn remove(&mut self, r: SockRef) {
        self.pushed.retain(|p| p.0 != r);
        self.direct.forget(r);
        self.wake_watcher(r);
        if let smoltcp::socket::Socket::Tcp(t) = self.ifaces[r.iface].sockets.remove(r.handle) {
            self.spare_tcp.put(t);
        }
    }

    /// A closed smoltcp TCP socket with rings of these sizes: a spare one
    /// if one fits, else a new one.
    pub fn new_tcp(&mut self, rx: usize, tx: usize) -> Result<tcp::Socket<'static>, Errno> {
        self.spare_tcp.take(rx, tx)
    }

    /// The interface index a link-local address seen on `r`'s interface
    /// reports as its `sin6_scope_id`; `bound` (the scope id the socket
    /// was connected or bound with, 0 for none) wins, since a link's own
    /// address is reached through loopback (Linux's `sk_bound_dev_if`).
    pub fn scope_of(&self, r: SockRef, bound: u32) -> u32 {
        let info = &self.ifaces[r.iface].info;
        if bound != 0 || info.loopback {
            bound
        } else {
            info.index
        }
    }

    /// The interface whose addresses include `addr`.
    pub fn iface_of_local(&self, addr: IpAddress) -> Option<usize> {
        self.ifaces.iter().position(|i| i.iface.has_ip_addr(addr))
    }

    /// The interface traffic to `remote` goes out of: the one that owns
    /// the address (so traffic to the machine itself loops back), else
    /// the one with a route to it; ENETUNREACH without one. A `scope`
    /// (Linux's `flowi6_oif` from `sin6_scope_id`) names the interface
    /// for a link-local destination, which is on every link (ENODEV for
    /// an index no interface has).
    pub fn route_scoped(&mut self, remote: IpAddress, scope: Option<u32>) -> Result<usize, Errno> {
        if let Some(index) = scope {
            let i = self.ifaces.iter().position(|f| f.info.index == index).ok_or(Errno::ENODEV)?;
            // The machine's own address on that link still loops back.
            return Ok(if self.ifaces[i].iface.has_ip_addr(remote) { 0 } else { i });
        }
        if is_loopback(remote) {
            return Ok(0);
        }
        if let Some(i) = self.iface_of_local(remote) {
            // Addresses of the machine itself loop back too (Linux's
            // local routing table).
            return Ok(if self.ifaces[i].info.loopback { i } else { 0 });
        }
        for (i, f) in self.ifaces.iter().enumerate().skip(1) {
            let gateway = match remote {
                IpAddress::Ipv4(_) => f.iface.routes().get_default_ipv4_route().is_some(),
                IpAddress::Ipv6(_) => f.iface.routes().get_default_ipv6_route().is_some(),
            };
            if gateway || f.iface.ip_addrs().iter().any(|c| c.contains_addr(&remote)) {
                return Ok(i);
            }
        }
        Err(Errno::ENETUNREACH)
    }

    /// A TCP connection the user closed: polled until it is done with
    /// its close handshake, then dropped with its port.
    pub fn orphan(&mut self, r: SockRef, port: Option<(Transport, u16, u64)>) {
        if self.orphans.try_reserve(1).is_err() {
            self.tcp(r).abort();
            self.reap(r, port);
            return;
        }
        self.orphans.push(Orphan { r, port });
    }

    /// Whether `r`'s user has closed it.
    pub fn is_orphan(&self, r: SockRef) -> bool {
        self.orphans.iter().any(|o| o.r == r)
    }

    fn reap(&mut self, r: SockRef, port: Option<(Transport, u16, u64)>) {
        self.remove(r);
        if let Some((t, p, owner)) = port {
            self.ports.release(t, p, owner);
        }
    }

    /// Polls every interface until nothing moves, then lets the open
    /// sockets see what changed and tells the network thread when
    /// smoltcp next wants a poll.
    pub fn poll(&mut self) {
        super::pollstats::POLLS_ALL.add(1);
        let now = now();
        self.unpark_due(now);
        // A second round sends the resets of orphans found receiving.
        for _ in 0..2 {
            self.poll_ifaces(now);
            if !self.reap_orphans() {
                break;
            }
        }
        if !self.pushed.is_empty() {
            self.end_pushes();
        }
        self.listens.promote(&mut self.ifaces);
        for i in 1..self.ifaces.len() {
            super::config::poll_dhcp(self, i);
            super::addrconf::sync(self, i);
        }
        self.park_idle(now);
        self.refresh_watchers();
        let mut next = u64::MAX;
        for f in self.ifaces.iter_mut() {
            let parked = f.sockets.next_due();
            let polled = f.iface.poll_at(now, &f.sockets.set);
            if let Some(at) = polled.into_iter().chain(parked).min() {
                let ns = (at.total_micros().max(0) as u64).saturating_mul(1000);
                next = next.min(ns);
            }
        }
        self.next_poll = next;
        super::poller::schedule(next);
    }

    /// Brings back the parked connections whose timer is due.
    fn unpark_due(&mut self, now: Instant) {
        let mut moved = core::mem::take(&mut self.moved);
        for i in 0..self.ifaces.len() {
            moved.clear();
            self.ifaces[i].sockets.unpark_due(now, &mut moved);
            for &id in moved.iter() {
                self.wake_watcher(SockRef { iface: i, handle: id });
            }
        }
        self.moved = moved;
    }

    /// Parks the connections that have nothing to do
    /// ([`super::sockets`]). An orphan is not parked: it is waited on.
    fn park_idle(&mut self, now: Instant) {
        let mut moved = core::mem::take(&mut self.moved);
        for i in 0..self.ifaces.len() {
            moved.clear();
            let (lo, rest) = self.ifaces.split_at_mut(LOOPBACK + 1);
            let lo = &mut lo[LOOPBACK];
            match i.checked_sub(LOOPBACK + 1) {
                None => lo.sockets.park_idle(&mut lo.iface, now, &mut moved),
                Some(k) => rest[k].sockets.park_idle(&mut lo.iface, now, &mut moved),
            }
            super::pollstats::PARKED.add(moved.len() as u64);
            for &id in moved.iter() {
                let r = SockRef { iface: i, handle: id };
                if self.is_orphan(r) {
                    self.ifaces[i].sockets.unpark(id);
                }
            }
        }
        self.moved = moved;
    }

    /// Every open socket whose smoltcp socket may have changed re-reads
    /// its state; the watcher of a parked connection goes dormant.
    pub fn refresh_watchers(&mut self) {
        let mut watchers = core::mem::take(&mut self.watchers);
        // Compacted in place, in order (no allocation per poll).
        let mut kept = 0;
        super::pollstats::REFRESHED.add(watchers.len() as u64);
        for i in 0..watchers.len() {
            watchers[i].refresh(self);
            if let Some(r) = watchers[i].connection().filter(|&r| self.is_parked(r)) {
                if self.dormant.try_reserve(1).is_ok() {
                    let at = self.dormant.binary_search_by_key(&r, |d| d.0).unwrap_or_else(|at| at);
                    self.dormant.insert(at, (r, watchers[i].clone()));
                    continue;
                }
            }
            watchers.swap(kept, i);
            kept += 1;
        }
        watchers.truncate(kept);
        let mut added = core::mem::replace(&mut self.watchers, watchers);
        self.watchers.append(&mut added);
    }

    fn poll_ifaces(&mut self, now: Instant) {
        for (i, f) in self.ifaces.iter_mut().enumerate() {
            // A loopback frame sent in one round is received in the next,
            // and a SYN held at the gate in the round after its socket
            // is made; the bound keeps one busy socket (or a burst of
            // SYNs) from holding the lock long.
            let mut done = false;
            for _ in 0..256 {
                super::pollstats::ROUNDS.add(1);
                super::pollstats::ROUND_SOCKETS.add(f.sockets.active() as u64);
                let mut dev =
                    Gated { dev: &mut f.dev, listens: &mut self.listens, parked: &mut f.sockets.parked, iface: i };
                f.iface.poll(now, &mut dev, &mut f.sockets.set);
                // What an ingress taught SLAAC (a router advertisement's
                // address) is applied at the start of a poll; without the
                // extra round below, apply it now (no socket walk). The
                // loopback has no SLAAC: nothing to apply there.
                if !f.info.loopback {
                    f.iface.poll_maintenance(now);
                }
                let mut again = self.listens.after_round(i, &mut f.sockets, &mut self.spare_tcp);
                // A frame for a parked connection: it is back in the set
                // now, the frame is fed next round.
                let mut moved = core::mem::take(&mut self.moved);
                moved.clear();
                f.sockets.unpark_claimed(&mut moved);
                again |= f.sockets.parked.holding();
                for &id in moved.iter() {
                    let r = SockRef { iface: i, handle: id };
                    if let Ok(k) = self.dormant.binary_search_by_key(&r, |d| d.0) {
                        if self.watchers.try_reserve(1).is_ok() {
                            let (_, w) = self.dormant.remove(k);
                            self.watchers.push(w);
                        }
                    }
                }
                self.moved = moved;
                // smoltcp's poll takes every frame the device holds and
                // then sends until no socket has more to send (its last
                // walk over the sockets found nothing), so with no frame
                // pending nothing more can move: another round would only
                // walk every socket again for nothing (docs/networking.md:
                // those walks are what many connections cost). On the
                // loopback a frame sent in this round is pending for the
                // next.
                if !f.dev.rx_pending() && !again {
                    done = true;
                    break;
                }
            }
            if !done && (self.listens.holding(i) || f.sockets.parked.holding()) {
                // The rest waits for the network thread.
                super::poller::wake();
            }
        }
    }

    /// Lets each NIC's driver reclaim and refill its rings (after its
    /// waker woke the network thread), and the sockets whose release had
    /// to wait for this thread go.
    pub fn service_devices(&mut self) {
        for f in self.ifaces.iter_mut() {
            if let super::iface::IfaceDevice::Nic(n) = &mut f.dev {
                let ev = n.inner().service();
                if ev.link_changed {
                    log::info!("net: {}: link {:?}", f.info.name, n.inner().link());
                }
                if ev.was_reset {
                    log::warn!("net: {}: the driver reset the device", f.info.name);
                }
            }
        }
    }

    /// Drops the orphans that are done; resets those that received
    /// data (a closed socket has no reader: Linux answers with a reset).
    /// Returns whether it reset any.
    fn reap_orphans(&mut self) -> bool {
        let mut reset = false;
        let mut i = 0;
        while i < self.orphans.len() {
            let r = self.orphans[i].r;
            let piped = self.direct.queued(r);
            let t = self.tcp(r);
            if (t.recv_queue() > 0 || piped > 0) && t.state() != tcp::State::Closed {
                t.abort();
                reset = true;
            }
            let state = t.state();
            // TIME-WAIT is not kept: the port is free at once (see
            // docs/networking.md).
            if matches!(state, tcp::State::Closed | tcp::State::TimeWait) && !reset {
                let o = self.orphans.swap_remove(i);
                self.reap(o.r, o.port);
            } else {
                i += 1;
            }
        }
        reset
    }
}

/// Removed TCP sockets kept with their rings for the next connection.
#[derive(Default)]
pub struct SpareTcp(Vec<tcp::Socket<'static>>);

impl SpareTcp {
    /// Keeps a removed socket if there is room.
    pub fn put(&mut self, mut t: tcp::Socket<'static>) {
        if self.0.len() < SPARE_TCP && self.0.try_reserve(1).is_ok() {
            // Out of the set nothing polls it, so this sends nothing: it
            // only makes the socket closed, ready to listen or connect
            // again.
            t.abort();
            self.0.push(t);
        }
    }

    /// A closed socket with rings of these sizes: a spare one if one
    /// fits (its rings are not cleared: smoltcp reads only what it
    /// wrote, and clearing 128 KiB was a quarter of a loopback
    /// connect+accept+close), else a new one.
    pub fn take(&mut self, rx: usize, tx: usize) -> Result<tcp::Socket<'static>, Errno> {
        let Some(i) = self.0.iter().position(|t| t.recv_capacity() == rx && t.send_capacity() == tx) else {
            return new_tcp(rx, tx);
        };
        let mut t = self.0.swap_remove(i);
        // What a new socket has (smoltcp's defaults and `new_tcp`'s).
        t.set_ack_delay(None);
        t.set_nagle_enabled(true);
        t.set_keep_alive(None);
        t.set_timeout(None);
        t.set_hop_limit(None);
        // A fresh controller of the same kind: the old one's window
        // belonged to the old connection.
        t.set_congestion_control(t.congestion_control());
        Ok(t)
    }
}

/// A smoltcp TCP socket with buffers of these sizes.
pub fn new_tcp(rx: usize, tx: usize) -> Result<tcp::Socket<'static>, Errno> {
    let rxb = zeroed(rx)?;
    let txb = zeroed(tx)?;
    let mut s = tcp::Socket::new(tcp::SocketBuffer::new(rxb), tcp::SocketBuffer::new(txb));
    // An immediate ACK: the peer is usually the loopback, where a delayed
    // one only stalls the sender (smoltcp's default is 10 ms).
    s.set_ack_delay(None);
    Ok(s)
}

/// A zeroed buffer, or ENOMEM.
pub fn zeroed(n: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, 0);
    Ok(v)
}

/// 127.0.0.0/8 and ::1.
pub fn is_loopback(a: IpAddress) -> bool {
    match a {
        IpAddress::Ipv4(v4) => v4.octets()[0] == 127,
        IpAddress::Ipv6(v6) => v6.is_loopback(),
    }
}

/// Sends a whole Ethernet frame an AF_PACKET socket made out of
/// interface `ifindex`, past smoltcp: to the driver, or on the loopback
/// (no link layer in Kiln) to the packet sockets of `lo` alone. The
/// frame goes to the capturing (ETH_P_ALL) sockets as outgoing too.
/// ENXIO without such an interface, ENOBUFS when the driver has no
/// room (Linux's dropped-by-the-queue answer).
pub fn transmit_frame(ifindex: u32, frame: &[u8]) -> Result<(), Errno> {
    let mut st = lock()?;
    let i = (ifindex as usize).checked_sub(1).ok_or(Errno::ENXIO)?;
    let f = st.ifaces.get_mut(i).ok_or(Errno::ENXIO)?;
    let mac = f.info.mac;
    match &mut f.dev {
        IfaceDevice::Loopback(_) => {
            crate::net::packet::deliver(ifindex, &mac, frame, true);
            crate::net::packet::deliver(ifindex, &mac, frame, false);
        }
        IfaceDevice::Nic(n) => {
            n.inner()
                .transmit(frame.len(), &mut |buf: &mut [u8]| {
                    buf[..frame.len()].copy_from_slice(frame);
                    netdev::TxMeta::default()
                })
                .map_err(|_| Errno::ENOBUFS)?;
            crate::net::packet::deliver(ifindex, &mac, frame, true);
        }
    }
    Ok(())
}
