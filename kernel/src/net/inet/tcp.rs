//! TCP sockets (SOCK_STREAM in AF_INET and AF_INET6) on smoltcp's TCP.
//!
//! A socket is in one of four phases: closed (new, or after a failed
//! connection), connecting, connected, or listening. A connection is one
//! smoltcp socket. A listener's connections in the making and waiting
//! for accept are in its queue in the stack (`tcp_listen.rs`, which
//! bounds them as Linux does), keyed by the socket's id.
//!
//! smoltcp says what a connection's state is, not why it changed, so the
//! errors are read from transitions: SYN-SENT to CLOSED is a refused
//! connection, any other way to CLOSED but the close handshake's end is
//! a reset.
//!
//! Locks: the stack lock, then a socket's `inner` spin lock; nothing
//! sleeps under `inner`.

use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use core::any::Any;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::socket::tcp::{self, State};
use smoltcp::time::Duration;
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint, Ipv4Address, Ipv6Address};

use super::addr::{self, SockAddr};
use super::common::{int_arg, release_or_defer, Common, SOL_TCP};
use super::direct;
use super::ports::{Binding, Transport};
use super::procnet::ProcEntry;
use super::stack::{self, SockRef, Stack, Watch};
use super::tcp_info;
use super::tcp_listen::ListenQueue;
use crate::event::{Events, PollTable};
use crate::net::options::{OptValue, SockOptions};
use crate::net::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use crate::net::wait::partial_or;
use crate::net::{MsgSink, MsgSource};

pub const TCP_NODELAY: i32 = 1;
pub const TCP_MAXSEG: i32 = 2;
pub const TCP_CORK: i32 = 3;
pub const TCP_KEEPIDLE: i32 = 4;
pub const TCP_KEEPINTVL: i32 = 5;
pub const TCP_KEEPCNT: i32 = 6;

/// Linux's `tcp_rmem[1]` and `tcp_wmem[1]`: what SO_RCVBUF/SO_SNDBUF
/// read on a new TCP socket.
const TCP_RMEM_DEFAULT: u32 = 131_072;
const TCP_WMEM_DEFAULT: u32 = 16_384;

/// The smoltcp rings of a connection through a NIC when SO_RCVBUF and
/// SO_SNDBUF are left at their defaults. Linux grows a connection's
/// buffers as it proves it needs them (`tcp_rcv_space_adjust`; a bulk
/// receiver through the tap reached a ~930 KiB window); smoltcp fixes a
/// ring's size, and the window scale with it, when the socket is made,
/// so a NIC connection gets the larger rings at once. The loopback keeps
/// the smaller defaults: its segments are 64 KiB and its round trip a
/// poll, and a connect there pays for clearing every byte.
/// The send ring's size was measured (docs/networking.md, Decisions);
/// it needs congestion control ([`TcpSocket::set_congestion_on`]) on a
/// path that drops.
const NIC_RX_RING: usize = 512 << 10;
const NIC_TX_RING: usize = 256 << 10;

/// shutdown bits.
const RCV: u8 = 1;
const SEND: u8 = 2;

enum Phase {
    Closed,
    Connecting(SockRef),
    Connected(SockRef),
    Listening,
}

struct Inner {
    phase: Phase,
    /// The bound address (port 0: not bound).
    local: SockAddr,
    /// This socket holds `local.port` in the bind table.
    owns_port: bool,
    /// connect(2) returned EINPROGRESS and no later connect has seen
    /// the outcome (Linux's SS_CONNECTING).
    in_progress: bool,
    shut: u8,
    nodelay: bool,
    cork: bool,
    keepidle: u32,
    keepintvl: u32,
    keepcnt: u32,
    /// When the peer was last seen to answer, as far as this socket can
    /// tell: the connection's start, and with SO_KEEPALIVE bytes or
    /// acknowledgements that came and sends onto an empty queue (which
    /// restart smoltcp's count too). smoltcp hides the answers to its
    /// probes, so this is never later than its own clock.
    heard_ns: u64,
    last_state: State,
    rx_seen: usize,
    tx_seen: usize,
    released: bool,
    /// This connection looked for a loopback peer to write to directly
    /// (direct.rs): it does so once.
    direct_checked: bool,
    /// The scope id connect(2) named for a link-local peer (0: none),
    /// reported back by getsockname and getpeername.
    scope: u32,
    /// This socket opened its connection (TCP_INFO counts the SYN).
    active_open: bool,
}

pub struct TcpSocket {
    c: Common,
    inner: SpinLock<Inner>,
    /// The bytes moved, for TCP_INFO: counted under the stack lock.
    moved: tcp_info::Moved,
    me: hal::sync::Once<Weak<TcpSocket>>,
}

impl TcpSocket {
    fn new(family: u16, phase: Phase, local: SockAddr) -> Result<Arc<TcpSocket>, Errno> {
        let c = Common::new(family);
        c.opts.rcvbuf.store(TCP_RMEM_DEFAULT, Ordering::Relaxed);
        c.opts.sndbuf.store(TCP_WMEM_DEFAULT, Ordering::Relaxed);
        let sock = Arc::try_new(TcpSocket {
            c,
            inner: SpinLock::new(Inner {
                phase,
                local,
                owns_port: false,
                in_progress: false,
                shut: 0,
                nodelay: false,
                cork: false,
                keepidle: 7200,
                keepintvl: 75,
                keepcnt: 9,
                heard_ns: 0,
                last_state: State::Closed,
                rx_seen: 0,
                tx_seen: 0,
                released: false,
                direct_checked: false,
                scope: 0,
                active_open: false,
            }),
            moved: tcp_info::Moved::default(),
            me: hal::sync::Once::new(),
        })
        .map_err(|_| Errno::ENOMEM)?;
        sock.me.set(Arc::downgrade(&sock));
        // Readiness of a new socket: TCP_CLOSE with nothing shut down.
        sock.c.events.store((Events::OUT | Events::WRNORM | Events::HUP).bits(), Ordering::Relaxed);
        Ok(sock)
    }

    /// smoltcp buffer sizes from SO_RCVBUF/SO_SNDBUF: the receive buffer
    /// is the window (half the doubled value, as Linux's default
    /// `tcp_adv_win_scale` gives), the send buffer four times the send
    /// size so a writer stays ahead of the acknowledgements.
    fn buffer_sizes(opts: &SockOptions) -> (usize, usize) {
        let rx = (opts.rcvbuf.load(Ordering::Relaxed) as usize / 2).clamp(4096, 4 << 20);
        let tx = (opts.sndbuf.load(Ordering::Relaxed) as usize * 4).clamp(4096, 4 << 20);
        (rx, tx)
    }

    /// The ring sizes for a connection on interface `iface`, from
    /// [`TcpSocket::buffer_sizes`]: those of default-sized sockets grow
    /// to the NIC's (a socket whose size was set to exactly the default
    /// grows too: the option's value is all Kiln keeps).
    pub(super) fn sizes_on(sizes: (usize, usize), iface: usize) -> (usize, usize) {
        if iface == stack::LOOPBACK {
            return sizes;
        }
        let (rx, tx) = sizes;
        let rx = if rx == TCP_RMEM_DEFAULT as usize / 2 { rx.max(NIC_RX_RING) } else { rx };
        let tx = if tx == TCP_WMEM_DEFAULT as usize * 4 { tx.max(NIC_TX_RING) } else { tx };
        (rx, tx)
    }

    /// The congestion control of a connection on interface `iface`:
    /// Reno through a NIC, none on the loopback. Without one smoltcp
    /// sends the whole window at once and, after a timeout, the whole
    /// send ring again from the first unacknowledged byte; through a NIC
    /// that burst overflows the first queue on the path shorter than it
    /// (the two-machine segment: 180 segments of a 256 KiB ring into a
    /// hub and a QEMU that hold about 100), the same segments are lost
    /// each round, and the connection crawls at one burst per
    /// (backed-off) retransmission timeout. The loopback never drops.
    pub(super) fn set_congestion_on(t: &mut tcp::Socket<'static>, iface: usize) {
        t.set_congestion_control(if iface == stack::LOOPBACK {
            tcp::CongestionControl::None
        } else {
            tcp::CongestionControl::Reno
        });
    }

    fn configure(&self, inner: &Inner, t: &mut tcp::Socket<'static>) {
        // TCP_CORK holds partial segments back, which Nagle's rule
        // does while data is unacknowledged: the nearest smoltcp has.
        t.set_nagle_enabled(!inner.nodelay || inner.cork);
        let keep = self.c.opts.keepalive();
        t.set_keep_alive(keep.then(|| Duration::from_secs(inner.keepidle as u64)));
        t.set_timeout(self.keepalive_timeout(inner, t.state()));
        t.set_hop_limit(self.c.hop_limit());
    }

    /// Linux's keepalive ends an established connection whose peer has
    /// not been heard for TCP_KEEPIDLE + TCP_KEEPCNT × TCP_KEEPINTVL
    /// (`tcp_keepalive_timer`: the probes go unanswered): smoltcp's
    /// timeout, which counts from the last segment received, does that.
    /// Not before the connection is established (Linux's SYN retries
    /// are not keepalive's), and never sooner than that long after this
    /// call: smoltcp's clock may be older than the option (an idle
    /// connection that enables keepalive late is probed first, as
    /// Linux probes it, not reset on the spot).
    fn keepalive_timeout(&self, inner: &Inner, state: State) -> Option<Duration> {
        if !self.c.opts.keepalive()
            || matches!(state, State::Closed | State::Listen | State::SynSent | State::SynReceived)
        {
            return None;
        }
        let since = hal::time::monotonic_ns().saturating_sub(inner.heard_ns);
        Some(Duration::from_millis(keepalive_deadline_ms(inner) + since / 1_000_000))
    }

    /// The connection ended by smoltcp's keepalive timeout rather than
    /// a reset from the peer: nothing heard for the whole deadline
    /// (smoltcp tells neither apart; `heard_ns` is no later than its
    /// own clock, give or take the poll that noticed it).
    /// On the loopback the peer is this stack, which answers every probe.
    fn keepalive_expired(&self, inner: &Inner, r: SockRef) -> bool {
        const SLACK_MS: u64 = 500;
        r.iface != stack::LOOPBACK
            && self.c.opts.keepalive()
            && hal::time::monotonic_ns() / 1_000_000 + SLACK_MS
                >= inner.heard_ns / 1_000_000 + keepalive_deadline_ms(inner)
    }

    /// The peer was heard (or smoltcp restarted its count): the deadline
    /// runs from now. Out of line: only keepalive connections get here,
    /// and the send, receive and refresh paths stay as short as they
    /// were.
    #[cold]
    #[inline(never)]
    fn heard(&self, st: &mut Stack, inner: &mut Inner, r: SockRef) {
        inner.heard_ns = hal::time::monotonic_ns();
        let t = st.tcp(r);
        t.set_timeout(self.keepalive_timeout(inner, t.state()));
    }

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

    /// Binds an ephemeral port if the socket has none (connect, listen).
    fn autobind(&self, st: &mut Stack, inner: &mut Inner) -> Result<(), Errno> {
        if inner.local.port != 0 {
            return Ok(());
        }
        let b = self.binding(inner.local);
        inner.local.port = st.ports.bind(Transport::Tcp, 0, b)?;
        inner.owns_port = true;
        Ok(())
    }

    /// Readiness now (Linux's `tcp_poll`).
    fn compute(&self, st: &mut Stack, inner: &mut Inner) -> (Events, Events) {
        let mut ev = Events::EMPTY;
        let mut more = Events::EMPTY;
        if self.c.has_err() {
            ev |= Events::ERR;
        }
        match &inner.phase {
            Phase::Listening => {
                let n = st.listens.queue(self.c.id).map_or(0, |q| q.ready.len());
                if n > 0 {
                    ev |= Events::IN | Events::RDNORM;
                }
                if n > inner.rx_seen {
                    more |= Events::IN;
                }
                inner.rx_seen = n;
            }
            Phase::Closed => {
                ev |= Events::HUP;
                if inner.shut & RCV != 0 {
                    ev |= Events::IN | Events::RDNORM | Events::RDHUP;
                }
                ev |= Events::OUT | Events::WRNORM;
            }
            Phase::Connecting(_) => {}
            Phase::Connected(r) => {
                let piped = st.direct.queued(*r);
                let pipe_out = st.direct.writing(*r).map(|p| (p.ring.capacity(), p.ring.len()));
                let t = st.tcp_peek(*r);
                let state = t.state();
                let peer_fin = matches!(
                    state,
                    State::CloseWait | State::LastAck | State::Closing | State::TimeWait | State::Closed
                );
                let rcv_shut = inner.shut & RCV != 0 || peer_fin;
                let send_shut = inner.shut & SEND != 0 || state == State::Closed;
                if (rcv_shut && send_shut) || state == State::Closed {
                    ev |= Events::HUP;
                }
                if rcv_shut {
                    ev |= Events::IN | Events::RDNORM | Events::RDHUP;
                }
                let rx = t.recv_queue() + piped;
                if rx > 0 {
                    ev |= Events::IN | Events::RDNORM;
                }
                let (cap, queued) = pipe_out.unwrap_or((t.send_capacity(), t.send_queue()));
                let free = cap - queued;
                if send_shut || (t.may_send() && free * 2 >= queued && free > 0) {
                    ev |= Events::OUT | Events::WRNORM;
                }
                if rx > inner.rx_seen {
                    more |= Events::IN;
                }
                if queued < inner.tx_seen {
                    more |= Events::OUT;
                }
                inner.rx_seen = rx;
                inner.tx_seen = queued;
            }
        }
        (ev, more)
    }

    /// After a poll: follows the smoltcp socket's state and publishes
    /// readiness.
    fn refresh_locked(&self, st: &mut Stack, inner: &mut Inner) {
        match &mut inner.phase {
            Phase::Connecting(r) => {
                let r = *r;
                match st.tcp_peek(r).state() {
                    State::SynSent | State::SynReceived => {}
                    State::Closed => {
                        // Refused (a reset answered the SYN) or timed out.
                        st.remove(r);
                        inner.phase = Phase::Closed;
                        inner.shut = RCV | SEND;
                        self.c.set_err(Errno::ECONNREFUSED);
                        self.c.opts.async_io.error();
                    }
                    s => {
                        inner.phase = Phase::Connected(r);
                        inner.last_state = s;
                        // Kept from here on only with keepalive; without,
                        // the connection's start bounds smoltcp's clock
                        // should keepalive be enabled later.
                        inner.heard_ns = hal::time::monotonic_ns();
                        if self.c.opts.keepalive() {
                            self.heard(st, inner, r);
                        }
                    }
                }
            }
            Phase::Connected(r) => {
                let r = *r;
                let state = st.tcp_peek(r).state();
                if state == State::Closed
                    && !matches!(inner.last_state, State::Closed | State::LastAck | State::TimeWait | State::Closing)
                {
                    // A reset after the peer's FIN is EPIPE (tcp_reset);
                    // keepalive's end ETIMEDOUT (tcp_write_err).
                    let e = if self.keepalive_expired(inner, r) {
                        Errno::ETIMEDOUT
                    } else if inner.last_state == State::CloseWait {
                        Errno::EPIPE
                    } else {
                        Errno::ECONNRESET
                    };
                    self.c.set_err(e);
                    self.c.opts.async_io.error();
                }
                inner.last_state = state;
            }
            Phase::Listening | Phase::Closed => {}
        }
        let (ev, more) = self.compute(st, inner);
        if !more.is_empty() && self.c.opts.keepalive() {
            // Bytes or acknowledgements came: the peer answers.
            if let Phase::Connected(r) = inner.phase {
                if r.iface != stack::LOOPBACK {
                    self.heard(st, inner, r);
                }
            }
        }
        if ev.contains(Events::IN) && (more.contains(Events::IN) || !self.c.events().contains(Events::IN)) {
            self.c.opts.async_io.data_ready(linux_abi::signal::POLL_IN);
        }
        self.c.set_events(ev, more);
    }

    /// `e` as the calls report it; `ifindex` is the `sin6_scope_id` of a
    /// link-local address ([`Stack::scope_of`]).
    fn sock_addr_of(&self, e: Option<IpEndpoint>, ifindex: u32) -> AddrBuf {
        addr::encode_scoped(self.c.family, e.map(addr::from_endpoint).unwrap_or(SockAddr::ANY), ifindex)
    }

    fn send_some(&self, data: &mut dyn MsgSource, flags: u32) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        let r = match inner.phase {
            Phase::Connected(r) => r,
            Phase::Connecting(_) => {
                if let Some(e) = self.c.take_err() {
                    return Err(e);
                }
                return Err(Errno::EAGAIN);
            }
            _ => {
                if let Some(e) = self.c.take_err() {
                    return Err(e);
                }
                return Err(pipe(flags));
            }
        };
        if let Some(e) = self.c.take_err() {
            return Err(if e == Errno::EPIPE { pipe(flags) } else { e });
        }
        if inner.shut & SEND != 0 {
            return Err(pipe(flags));
        }
        if r.iface != stack::LOOPBACK && self.c.opts.keepalive() && st.tcp_peek(r).send_queue() == 0 {
            // smoltcp counts its timeout afresh from a send onto an
            // empty queue.
            self.heard(&mut st, &mut inner, r);
        }
        // User memory is read below: no spin lock may be held (a fault
        // sleeps).
        drop(inner);
        if !st.tcp_peek(r).may_send() {
            return Err(pipe(flags));
        }
        if let Some(sent) = self.send_direct(&mut st, r, data) {
            if let Ok(n) = sent {
                self.moved.wrote(&st, n);
            }
            return sent;
        }
        let t = st.tcp(r);
        if !t.can_send() {
            self.c.opts.async_io.no_space();
            return Err(Errno::EAGAIN);
        }
        let mut fault = None;
        let mut total = 0;
        // The ring may wrap: two rounds fill it.
        for _ in 0..2 {
            if data.remaining() == 0 {
                break;
            }
            let n = t
                .send(|buf| {
                    let n = buf.len().min(data.remaining());
                    match data.read(&mut buf[..n]) {
                        Ok(()) => (n, n),
                        Err(e) => {
                            fault = Some(e);
                            (0, 0)
                        }
                    }
                })
                .unwrap_or(0);
            total += n;
            if n == 0 || fault.is_some() {
                break;
            }
        }
        self.moved.wrote(&st, total);
        if r.iface == stack::LOOPBACK {
            st.poll();
        } else {
            // Through a NIC the network thread sends it. A poll walks
            // every socket of the interface (smoltcp's egress and
            // deadline walks, the watchers' refresh), so a server
            // answering many connections paid that walk per reply; the
            // thread's one poll sends the replies of all the sends
            // made since it last ran (docs/networking.md, Decisions).
            // This socket's own readiness is current at once.
            let mut inner = self.inner.lock();
            self.refresh_locked(&mut st, &mut inner);
            drop(inner);
            super::poller::wake();
        }
        match fault {
            Some(e) if total == 0 => Err(e),
            _ => Ok(total),
        }
    }

    fn recv_some(&self, data: &mut dyn MsgSink, flags: u32) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        let r = match inner.phase {
            Phase::Connected(r) => r,
            Phase::Connecting(_) => return Err(Errno::EAGAIN),
            Phase::Closed if inner.shut & RCV != 0 => {
                // After a failed connection: its error, then end of file.
                return self.c.take_err().map_or(Ok(0), Err);
            }
            _ => return Err(Errno::ENOTCONN),
        };
        let rcv_shut = inner.shut & RCV != 0;
        drop(inner);
        let piped = st.direct.queued(r);
        // Read in place: a parked connection whose bytes are all in its
        // loopback pipe stays parked (sockets.rs).
        let t = st.tcp_peek(r);
        let ringed = t.recv_queue();
        let may_recv = t.may_recv();
        let queued = ringed + piped;
        if queued == 0 || rcv_shut {
            if let Some(e) = self.c.take_err() {
                return Err(e);
            }
            if rcv_shut || !may_recv {
                return Ok(0);
            }
            return Err(Errno::EAGAIN);
        }
        let want = data.remaining();
        let mut fault = None;
        let mut total = 0;
        if flags & s::MSG_PEEK != 0 {
            let mut tmp = stack::zeroed(want.min(ringed))?;
            let n = if ringed > 0 { st.tcp(r).peek_slice(&mut tmp).unwrap_or(0) } else { 0 };
            data.write(&tmp[..n])?;
            let (m, fault) = match st.direct.reading(r) {
                Some(p) if n < want => p.ring.read_into(data, want - n, true, false),
                _ => (0, None),
            };
            return match fault {
                Some(e) if n + m == 0 => Err(e),
                _ => Ok(n + m),
            };
        }
        for _ in 0..2 {
            if total == want || ringed == 0 {
                break;
            }
            let n = st
                .tcp(r)
                .recv(|buf| {
                    let n = buf.len().min(want - total);
                    if flags & s::MSG_TRUNC != 0 {
                        return (n, n);
                    }
                    match data.write(&buf[..n]) {
                        Ok(()) => (n, n),
                        Err(e) => {
                            fault = Some(e);
                            (0, 0)
                        }
                    }
                })
                .unwrap_or(0);
            total += n;
            if n == 0 || fault.is_some() {
                break;
            }
        }
        // Then the loopback peer's pipe, whose bytes came after the
        // ring's (direct.rs).
        let mut writer = None;
        if total < want && fault.is_none() && piped > 0 {
            if let Some(p) = st.direct.reading(r) {
                let (n, f) = p.ring.read_into(data, want - total, false, flags & s::MSG_TRUNC != 0);
                total += n;
                fault = f;
                if p.reader_watch.is_none() {
                    p.reader_watch = self.me.get().map(|w| w.clone() as Weak<dyn Watch>);
                }
                if n > 0 {
                    writer = p.writer_watch.as_ref().and_then(Weak::upgrade);
                }
            }
        }
        self.moved.read(&st, total);
        // The writer may be waiting for room.
        if let Some(w) = writer {
            w.refresh(&mut st);
        }
        let t = st.tcp_peek(r);
        // The window opened: tell the sender now, if smoltcp would. It
        // advertises a larger window only once it has doubled (Linux's
        // rule, `window_to_update`), which needs the last advertised one
        // at most half the ring: so the queue was at least half full at
        // that advertisement, and the first read since then found it so
        // and polled. A read that finds less (a ping-pong's 1 byte) has
        // nothing to tell, and skips the poll's walk over the sockets.
        // Its own readiness is refreshed either way.
        if ringed * 2 >= t.recv_capacity() {
            st.poll();
        } else {
            let mut inner = self.inner.lock();
            self.refresh_locked(&mut st, &mut inner);
        }
        match fault {
            Some(e) if total == 0 => Err(e),
            _ => Ok(total),
        }
    }

    /// A send on a loopback connection whose peer is a socket here: into
    /// the peer's pipe (direct.rs). None: this connection's bytes go
    /// through smoltcp.
    fn send_direct(&self, st: &mut Stack, r: SockRef, data: &mut dyn MsgSource) -> Option<Result<usize, Errno>> {
        if st.direct.writing(r).is_none() {
            let mut inner = self.inner.lock();
            // Bytes smoltcp still holds unacknowledged would reach the
            // peer after the pipe's.
            if inner.direct_checked || st.tcp_peek(r).send_queue() > 0 {
                return None;
            }
            inner.direct_checked = true;
            drop(inner);
            let peer = direct::find_peer(&st.ifaces, r)?;
            if st.is_orphan(peer) {
                return None;
            }
            let size = st.tcp_peek(peer).recv_capacity() + st.tcp_peek(r).send_capacity();
            let me: Weak<dyn Watch> = self.me.get()?.clone();
            if !st.direct.link(r, peer, size, me) {
                return None;
            }
        }
        let p = st.direct.writing(r)?;
        if p.ring.len() == p.ring.capacity() {
            self.c.opts.async_io.no_space();
            return Some(Err(Errno::EAGAIN));
        }
        let (n, fault) = p.ring.write_from(data);
        let reader = p.reader;
        let watch = p.reader_watch.as_ref().and_then(Weak::upgrade);
        if st.is_orphan(reader) {
            // Nobody reads: the poll resets it, as Linux answers data
            // for a closed socket.
            st.poll();
        } else if let Some(w) = watch {
            w.refresh(st);
            let mut inner = self.inner.lock();
            self.refresh_locked(st, &mut inner);
        } else {
            // An embryo in an accept queue, or a reader that has not
            // read yet: every socket looks.
            st.refresh_watchers();
            st.refresh_dormant(reader);
        }
        Some(match fault {
            Some(e) if n == 0 => Err(e),
            _ => Ok(n),
        })
    }

    fn release_now(&self) {
        let Ok(mut st) = stack::lock() else { return };
        st.unwatch(self.c.id);
        let mut inner = self.inner.lock();
        if inner.released {
            return;
        }
        inner.released = true;
        let port = inner.owns_port.then_some((Transport::Tcp, inner.local.port, self.c.id));
        let (lo, linger) = self.c.opts.linger();
        match core::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Listening => {
                close_queue(&mut st, self.c.id);
                if let Some((t, p, o)) = port {
                    st.ports.release(t, p, o);
                }
                drop(inner);
            }
            Phase::Connecting(r) | Phase::Connected(r) => {
                let piped = st.direct.queued(r);
                let t = st.tcp_peek(r);
                // Unread data or a zero linger time: a reset, as Linux's
                // tcp_close sends.
                let reset = t.recv_queue() > 0 || piped > 0 || (lo && linger == 0);
                if reset {
                    send_then_abort(&mut st, r);
                } else {
                    st.tcp(r).close();
                }
                drop(inner);
                if !reset && lo && hal::cpu::interrupts_enabled() && !crate::net::exiting() {
                    // The stack, once up, is never taken down.
                    let Ok(again) = linger_wait(st, r, linger as u32) else { return };
                    st = again;
                }
                st.orphan(r, port);
            }
            Phase::Closed => {
                if let Some((t, p, o)) = port {
                    st.ports.release(t, p, o);
                }
                drop(inner);
            }
        }
        st.poll();
    }
}

/// SO_LINGER with a time: close(2) waits until the connection's data and
/// FIN are acknowledged, `secs` pass, or a signal comes, and then
/// returns as Linux's `tcp_close` does (the connection goes on as an
/// orphan; a negative time, as Linux's, waits without end). smoltcp
/// tells no one when an acknowledgement arrives, so the wait looks again
/// every millisecond.
fn linger_wait(mut st: stack::Locked, r: SockRef, secs: u32) -> Result<stack::Locked, Errno> {
    let deadline = hal::time::monotonic_ns().saturating_add((secs as u64).saturating_mul(1_000_000_000));
    st.poll();
    while tcp_info::lingering(&mut st, r) && hal::time::monotonic_ns() < deadline {
        drop(st);
        let next = (hal::time::monotonic_ns() + 1_000_000).min(deadline);
        let signalled = crate::sched::sleep_until_interruptible(next).is_err();
        st = stack::lock()?;
        if signalled {
            break;
        }
    }
    Ok(st)
}

/// A listener closes: the connections it held go with a reset, as
/// Linux's `inet_csk_listen_stop` resets the unaccepted ones.
fn close_queue(st: &mut Stack, id: u64) {
    if let Some(q) = st.listens.remove(id) {
        for (r, _) in q.embryos.into_iter().chain(q.ready) {
            st.tcp(r).abort();
            st.orphan(r, None);
        }
    }
}

/// Resets `r` after sending what its sends left for the network thread
/// (a send through a NIC does not poll): on Linux those bytes were on
/// the wire before the reset.
fn send_then_abort(st: &mut Stack, r: SockRef) {
    if r.iface != stack::LOOPBACK && st.tcp_peek(r).send_queue() > 0 {
        st.poll();
    }
    st.tcp(r).abort();
}

/// TCP_KEEPIDLE + TCP_KEEPCNT × TCP_KEEPINTVL, in milliseconds.
fn keepalive_deadline_ms(inner: &Inner) -> u64 {
    (inner.keepidle as u64 + inner.keepcnt as u64 * inner.keepintvl as u64) * 1000
}

/// EPIPE, with SIGPIPE unless MSG_NOSIGNAL.
fn pipe(flags: u32) -> Errno {
    if flags & s::MSG_NOSIGNAL == 0 {
        crate::net::sigpipe();
    }
    Errno::EPIPE
}

impl Watch for TcpSocket {
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

    fn connection(&self) -> Option<SockRef> {
        match self.inner.lock().phase {
            Phase::Connected(r) => Some(r),
            _ => None,
        }
    }

    fn entry(&self, st: &mut Stack) -> Option<ProcEntry> {
        let inner = self.inner.lock();
        let mut e = ProcEntry {
            transport: Transport::Tcp,
            family: self.c.family,
            local: inner.local,
            remote: SockAddr::ANY,
            state: 10,
            tx_queue: 0,
            rx_queue: 0,
            uid: self.c.uid,
            inode: self.c.ino.load(Ordering::Relaxed),
        };
        match &inner.phase {
            Phase::Closed => return None,
            // As Linux's /proc/net/tcp: a listener's receive queue is its
            // accept queue, its send queue 0 (only sock_diag, which `ss`
            // reads, reports the backlog there).
            Phase::Listening => e.rx_queue = st.listens.queue(self.c.id).map_or(0, |q| q.ready.len()),
            Phase::Connecting(r) | Phase::Connected(r) => {
                let piped = st.direct.queued(*r);
                let t = st.tcp_peek(*r);
                e.local = t.local_endpoint().map(addr::from_endpoint).unwrap_or(inner.local);
                e.remote = t.remote_endpoint().map(addr::from_endpoint).unwrap_or(SockAddr::ANY);
                e.state = super::procnet::tcp_state(t.state());
                e.tx_queue = t.send_queue();
                e.rx_queue = t.recv_queue() + piped;
            }
        }
        Some(e)
    }
}

impl Protocol for TcpSocket {
    fn family(&self) -> u16 {
        self.c.family
    }

    fn sock_type(&self) -> SockType {
        SockType::Stream
    }

    fn protocol(&self) -> i32 {
        6
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
        let scope = addr::check_scope(&sa, a)?;
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if inner.local.port != 0 || !matches!(inner.phase, Phase::Closed) {
            return Err(Errno::EINVAL);
        }
        if self.c.family == s::AF_INET6 && self.c.v6only.load(Ordering::Relaxed) {
            if let Some(IpAddress::Ipv4(_)) = sa.addr {
                return Err(Errno::EINVAL);
            }
        }
        if let Some(a) = sa.addr {
            if st.iface_of_local(a).is_none() && !stack::is_loopback(a) {
                return Err(Errno::EADDRNOTAVAIL);
            }
        }
        if sa.port != 0 && sa.port < super::ports::PROT_SOCK && !super::may_bind_privileged() {
            return Err(Errno::EACCES);
        }
        let b = self.binding(sa);
        let port = st.ports.bind(Transport::Tcp, sa.port, b)?;
        inner.local = SockAddr { addr: sa.addr, port };
        inner.owns_port = true;
        inner.scope = scope.unwrap_or(0);
        Ok(())
    }

    fn connect(&self, a: &[u8], _names: &NameCtx, nonblock: bool) -> Result<(), Errno> {
        if a.len() >= 2 && u16::from_le_bytes([a[0], a[1]]) == s::AF_UNSPEC {
            return self.disconnect();
        }
        {
            // The state comes before the address (__inet_stream_connect).
            let inner = self.inner.lock();
            if !inner.in_progress && matches!(inner.phase, Phase::Connected(_) | Phase::Listening) {
                return Err(Errno::EISCONN);
            }
        }
        let sa = addr::parse(self.c.family, a, false)?;
        let scope = addr::check_scope(&sa, a)?;
        let remote = match sa.addr {
            Some(a) => a,
            // Linux connects the wildcard to the machine itself.
            None if self.c.family == s::AF_INET => IpAddress::Ipv4(Ipv4Address::new(127, 0, 0, 1)),
            None => IpAddress::Ipv6(Ipv6Address::LOCALHOST),
        };
        if self.c.family == s::AF_INET6
            && self.c.v6only.load(Ordering::Relaxed)
            && remote.version() == smoltcp::wire::IpVersion::Ipv4
        {
            return Err(Errno::ENETUNREACH);
        }
        {
            let mut st = stack::lock()?;
            let mut inner = self.inner.lock();
            if inner.in_progress {
                match inner.phase {
                    Phase::Connecting(_) => return Err(Errno::EALREADY),
                    Phase::Connected(_) => {
                        inner.in_progress = false;
                        return Ok(());
                    }
                    _ => {
                        inner.in_progress = false;
                        return Err(self.c.take_err().unwrap_or(Errno::ECONNABORTED));
                    }
                }
            }
            match inner.phase {
                Phase::Closed => {}
                Phase::Connecting(_) => return Err(Errno::EALREADY),
                _ => return Err(Errno::EISCONN),
            }
            if sa.port == 0 {
                return Err(Errno::ECONNREFUSED);
            }
            if let Some(local) = inner.local.addr {
                if local.version() != remote.version() {
                    return Err(Errno::EINVAL);
                }
            }
            let iface = st.route_scoped(remote, scope)?;
            self.autobind(&mut st, &mut inner)?;
            inner.scope = scope.unwrap_or(inner.scope);
            let (rx, tx) = Self::sizes_on(Self::buffer_sizes(&self.c.opts), iface);
            let mut t = st.new_tcp(rx, tx)?;
            Self::set_congestion_on(&mut t, iface);
            self.configure(&inner, &mut t);
            let local = IpListenEndpoint { addr: inner.local.addr, port: inner.local.port };
            t.connect(st.ifaces[iface].iface.context(), IpEndpoint::new(remote, sa.port), local)
                .map_err(|_| Errno::EADDRNOTAVAIL)?;
            let r = st.add(iface, smoltcp::socket::Socket::Tcp(t))?;
            inner.phase = Phase::Connecting(r);
            inner.active_open = true;
            self.moved.clear(&st);
            inner.shut = 0;
            inner.last_state = State::SynSent;
            let _ = self.c.take_err();
            drop(inner);
            st.poll();
        }
        let wait = self.c.send_wait(nonblock, 0);
        if wait.nonblocking() {
            self.inner.lock().in_progress = true;
            return Err(Errno::EINPROGRESS);
        }
        let r = self.c.blocking(&wait, || {
            let inner = self.inner.lock();
            match inner.phase {
                Phase::Connected(_) => Ok(()),
                Phase::Connecting(_) => Err(Errno::EAGAIN),
                _ => Err(self.c.take_err().unwrap_or(Errno::ECONNABORTED)),
            }
        });
        match r {
            Err(Errno::EAGAIN) => {
                self.inner.lock().in_progress = true;
                Err(Errno::EINPROGRESS)
            }
            Err(e @ (Errno::EINTR | Errno::ERESTARTSYS)) => {
                self.inner.lock().in_progress = true;
                Err(e)
            }
            other => other,
        }
    }

    fn listen(&self, backlog: i32) -> Result<(), Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        let backlog = (backlog.max(0) as u32).min(s::SOMAXCONN) as usize;
        match &mut inner.phase {
            Phase::Listening => {
                if let Some(q) = st.listens.queue(self.c.id) {
                    q.backlog = backlog;
                }
                return Ok(());
            }
            Phase::Closed => {}
            _ => return Err(Errno::EINVAL),
        }
        self.autobind(&mut st, &mut inner)?;
        st.ports.set_listening(Transport::Tcp, inner.local.port, self.c.id)?;
        let q = ListenQueue {
            id: self.c.id,
            endpoint: IpListenEndpoint { addr: inner.local.addr, port: inner.local.port },
            family: self.c.family,
            v6only: self.c.v6only.load(Ordering::Relaxed),
            uid: self.c.uid,
            sizes: Self::buffer_sizes(&self.c.opts),
            backlog,
            embryos: VecDeque::new(),
            ready: VecDeque::new(),
        };
        st.listens.add(q)?;
        inner.phase = Phase::Listening;
        inner.rx_seen = 0;
        self.refresh_locked(&mut st, &mut inner);
        Ok(())
    }

    fn accept(&self, nonblock: bool) -> Result<(Arc<dyn Protocol>, AddrBuf), Errno> {
        let wait = self.c.recv_wait(nonblock, 0);
        self.c.blocking(&wait, || {
            let mut st = stack::lock()?;
            let mut inner = self.inner.lock();
            if !matches!(inner.phase, Phase::Listening) {
                return Err(Errno::EINVAL);
            }
            let q = st.listens.queue(self.c.id).ok_or(Errno::EINVAL)?;
            let Some((r, _)) = q.ready.pop_front() else { return Err(Errno::EAGAIN) };
            let t = st.tcp(r);
            let (local, remote) = (t.local_endpoint(), t.remote_endpoint());
            let child = TcpSocket::new(
                self.c.family,
                Phase::Connected(r),
                local.map(addr::from_endpoint).unwrap_or(SockAddr::ANY),
            )?;
            {
                // What accept copies from the listener (inet_csk_clone).
                child.c.opts.rcvbuf.store(self.c.opts.rcvbuf.load(Ordering::Relaxed), Ordering::Relaxed);
                child.c.opts.sndbuf.store(self.c.opts.sndbuf.load(Ordering::Relaxed), Ordering::Relaxed);
                child.c.opts.copy_flags_from(&self.c.opts);
                child.c.v6only.store(self.c.v6only.load(Ordering::Relaxed), Ordering::Relaxed);
                let mut ci = child.inner.lock();
                ci.nodelay = inner.nodelay;
                ci.keepidle = inner.keepidle;
                ci.keepintvl = inner.keepintvl;
                ci.keepcnt = inner.keepcnt;
                ci.last_state = State::Established;
                ci.heard_ns = hal::time::monotonic_ns();
                let t = st.tcp(r);
                child.configure(&ci, t);
                child.refresh_locked(&mut st, &mut ci);
            }
            st.watch(child.clone())?;
            self.refresh_locked(&mut st, &mut inner);
            let peer = self.sock_addr_of(remote, st.scope_of(r, 0));
            Ok((child as Arc<dyn Protocol>, peer))
        })
    }

    fn sockname(&self) -> AddrBuf {
        let Ok(mut st) = stack::lock() else { return addr::encode(self.c.family, SockAddr::ANY) };
        let inner = self.inner.lock();
        match inner.phase {
            Phase::Connected(r) | Phase::Connecting(r) => {
                let e = st.tcp(r).local_endpoint();
                if e.is_some() {
                    return self.sock_addr_of(e, st.scope_of(r, inner.scope));
                }
                addr::encode_scoped(self.c.family, inner.local, inner.scope)
            }
            _ => addr::encode_scoped(self.c.family, inner.local, inner.scope),
        }
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        match inner.phase {
            Phase::Connected(r) => {
                let t = st.tcp(r);
                // A connection reset is no longer connected.
                if t.state() == State::Closed {
                    return Err(Errno::ENOTCONN);
                }
                let remote = t.remote_endpoint();
                Ok(self.sock_addr_of(remote, st.scope_of(r, inner.scope)))
            }
            _ => Err(Errno::ENOTCONN),
        }
    }

    fn shutdown(&self, how: i32) -> Result<(), Errno> {
        if !(s::SHUT_RD..=s::SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        let mode = (how + 1) as u8;
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        match inner.phase {
            Phase::Connected(r) | Phase::Connecting(r) => {
                if mode & SEND != 0 {
                    st.tcp(r).close();
                }
                inner.shut |= mode;
            }
            Phase::Listening if mode & RCV != 0 => {
                // Linux closes the listener (tcp_disconnect).
                inner.phase = Phase::Closed;
                close_queue(&mut st, self.c.id);
                inner.shut |= mode;
            }
            _ => return Err(Errno::ENOTCONN),
        }
        self.refresh_locked(&mut st, &mut inner);
        drop(inner);
        st.poll();
        Ok(())
    }

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let wait = self.c.send_wait(args.nonblock, args.flags);
        let mut done = 0;
        loop {
            let r = self.c.blocking(&wait, || self.send_some(data, args.flags));
            match r {
                Ok(n) => {
                    done += n;
                    if data.remaining() == 0 || n == 0 {
                        return Ok(done);
                    }
                }
                Err(e) => return partial_or(done, e),
            }
        }
    }

    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EINVAL);
        }
        let wait = self.c.recv_wait(args.nonblock, args.flags).marking_reader();
        let waitall = args.flags & (s::MSG_WAITALL | s::MSG_PEEK) == s::MSG_WAITALL;
        let mut done = 0;
        let want = data.remaining();
        loop {
            let r = self.c.blocking(&wait, || self.recv_some(data, args.flags));
            match r {
                Ok(n) => {
                    done += n;
                    if !waitall || n == 0 || done >= want || data.remaining() == 0 {
                        return Ok(Received { len: done, ..Received::default() });
                    }
                }
                Err(e) => return partial_or(done, e).map(|len| Received { len, ..Received::default() }),
            }
        }
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        self.c.poll(table)
    }

    fn unread(&self) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        match inner.phase {
            Phase::Listening => Err(Errno::EINVAL),
            Phase::Connected(r) => Ok(st.tcp_peek(r).recv_queue() + st.direct.queued(r)),
            _ => Ok(0),
        }
    }

    fn unsent(&self) -> usize {
        let Ok(st) = stack::lock() else { return 0 };
        let inner = self.inner.lock();
        match inner.phase {
            Phase::Connected(r) => st.tcp_peek(r).send_queue(),
            _ => 0,
        }
    }

    fn take_error(&self) -> i32 {
        self.c.take_err().map_or(0, |e| e.as_i32())
    }

    fn set_error(&self, e: Errno) {
        self.c.set_err(e);
    }

    fn is_listening(&self) -> bool {
        matches!(self.inner.lock().phase, Phase::Listening)
    }

    fn buffer_changed(&self) {}

    fn sol_socket_changed(&self, name: i32) {
        if name != s::SO_KEEPALIVE {
            return;
        }
        let Ok(mut st) = stack::lock() else { return };
        let pushing = match self.inner.lock().phase {
            Phase::Connected(r) | Phase::Connecting(r) => Some(r),
            _ => None,
        };
        if let Some(r) = pushing {
            st.flush_push(r);
        }
        let inner = self.inner.lock();
        if let Phase::Connected(r) | Phase::Connecting(r) = inner.phase {
            let t = st.tcp(r);
            self.configure(&inner, t);
            // The keepalive timer starts now (Linux's
            // inet_csk_reset_keepalive_timer): the network thread polls
            // and learns smoltcp's new deadline; it otherwise slept on
            // the old one (or none) and sent no probe. Not a poll here:
            // smoltcp arms the timer at that poll with the interval it
            // then has, and a TCP_KEEPIDLE usually follows this call.
            super::poller::wake();
        }
    }

    fn setsockopt(&self, level: i32, name: i32, val: &[u8]) -> Result<(), Errno> {
        let bound = self.inner.lock().local.port != 0;
        if self.c.set_ip_option(level, name, val, bound)? {
            return Ok(());
        }
        if level != SOL_TCP {
            return Err(Errno::ENOPROTOOPT);
        }
        let v = int_arg(val)?;
        let mut st = stack::lock()?;
        // A push this socket left for the network thread goes out before
        // its options change (configure below sets Nagle's rule again).
        let pushing = match self.inner.lock().phase {
            Phase::Connected(r) | Phase::Connecting(r) => Some(r),
            _ => None,
        };
        if let Some(r) = pushing {
            st.flush_push(r);
        }
        let mut inner = self.inner.lock();
        let was_corked = inner.cork;
        match name {
            TCP_NODELAY => inner.nodelay = v != 0,
            TCP_CORK => inner.cork = v != 0,
            TCP_KEEPIDLE | TCP_KEEPINTVL => {
                if !(1..=32767).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                if name == TCP_KEEPIDLE {
                    inner.keepidle = v as u32;
                } else {
                    inner.keepintvl = v as u32;
                }
            }
            TCP_KEEPCNT => {
                if !(1..=127).contains(&v) {
                    return Err(Errno::EINVAL);
                }
                inner.keepcnt = v as u32;
            }
            _ => return Err(Errno::ENOPROTOOPT),
        }
        // Linux pushes what is queued when TCP_NODELAY is set and when
        // TCP_CORK is cleared. A cork here is Nagle's rule, which sends a
        // corked write's first part at once and holds the rest until an
        // ACK; nginx (tcp_nopush) corks, writes the header, sendfiles the
        // body and uncorks, and the body must leave at the uncork, not
        // when the peer's delayed ACK comes (slirp's took 2.5 ms, most of
        // a 1 KiB request's 3.9 ms).
        let push = v != 0 && name == TCP_NODELAY || v == 0 && name == TCP_CORK && was_corked;
        if let Phase::Connected(r) | Phase::Connecting(r) = inner.phase {
            let t = st.tcp(r);
            self.configure(&inner, t);
            if push && t.send_queue() > 0 {
                t.set_nagle_enabled(false);
                // Through a NIC the network thread's next poll sends it
                // (as a send's bytes): one poll for every connection
                // pushed since its last.
                if r.iface != stack::LOOPBACK && st.push_later(r, !inner.nodelay || inner.cork) {
                    drop(inner);
                    super::poller::wake();
                    return Ok(());
                }
                drop(inner);
                st.poll();
                let inner = self.inner.lock();
                self.configure(&inner, st.tcp(r));
            }
        }
        Ok(())
    }

    fn getsockopt(&self, level: i32, name: i32) -> Result<OptValue, Errno> {
        if let Some(v) = self.c.get_ip_option(level, name)? {
            return Ok(v);
        }
        if level != SOL_TCP {
            return Err(self.c.unknown_level());
        }
        if name == tcp_info::TCP_INFO {
            let mut st = stack::lock()?;
            let inner = self.inner.lock();
            return Ok(OptValue::Bytes(match inner.phase {
                Phase::Connecting(r) | Phase::Connected(r) => {
                    let counts = self.moved.counts(&st, inner.active_open);
                    tcp_info::connection(&mut st, r, counts)
                }
                Phase::Listening => tcp_info::unconnected(10),
                Phase::Closed => tcp_info::unconnected(7),
            }));
        }
        let inner = self.inner.lock();
        Ok(OptValue::Int(match name {
            TCP_NODELAY => inner.nodelay as i32,
            TCP_CORK => inner.cork as i32,
            TCP_KEEPIDLE => inner.keepidle as i32,
            TCP_KEEPINTVL => inner.keepintvl as i32,
            TCP_KEEPCNT => inner.keepcnt as i32,
            // Linux's default before a connection: 536 (TCP_MSS_DEFAULT).
            TCP_MAXSEG => 536,
            _ => return Err(Errno::ENOPROTOOPT),
        }))
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

impl TcpSocket {
    /// connect(AF_UNSPEC): Linux's `tcp_disconnect` (a reset, and the
    /// socket is closed again).
    fn disconnect(&self) -> Result<(), Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        match core::mem::replace(&mut inner.phase, Phase::Closed) {
            Phase::Connected(r) | Phase::Connecting(r) => {
                send_then_abort(&mut st, r);
                st.orphan(r, None);
            }
            Phase::Listening => close_queue(&mut st, self.c.id),
            Phase::Closed => {}
        }
        inner.in_progress = false;
        inner.shut = 0;
        inner.direct_checked = false;
        self.refresh_locked(&mut st, &mut inner);
        drop(inner);
        st.poll();
        Ok(())
    }

    /// The stack needs the socket watched once it is created (the
    /// protocol object is made before the stack knows it).
    pub fn register(self: &Arc<Self>) -> Result<(), Errno> {
        stack::lock()?.watch(self.clone())
    }
}

/// socket(2) for TCP: made and watched.
pub fn open(family: u16) -> Result<Arc<dyn Protocol>, Errno> {
    let sock = TcpSocket::new(family, Phase::Closed, SockAddr::ANY)?;
    sock.register()?;
    Ok(sock)
}
