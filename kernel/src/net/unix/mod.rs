//! AF_UNIX: local sockets of three types.
//!
//! * `SOCK_STREAM`: a connected byte stream; writes are cut into messages
//!   of at most half the send buffer, and reads glue them together again
//!   (but never across passed descriptors or, with SO_PASSCRED, across
//!   writers).
//! * `SOCK_SEQPACKET`: connected like a stream, with record boundaries
//!   like datagrams.
//! * `SOCK_DGRAM`: connectionless messages to a name or a connected peer.
//!
//! Every socket has a receive queue of messages charged to their senders
//! ([`queue`]), one notification head for all its readiness (data, room,
//! connections, hang-ups), and a small state (peer, name, listening
//! queue) under a spin lock. Readers are serialized by a sleeping lock,
//! as Linux's `iolock`, so a reader may copy a message to user memory
//! outside every spin lock and put back what it did not consume.
//!
//! Locks: a socket's state lock is taken alone, except that connect holds
//! the listening socket's while it takes the connecting one's (a
//! listening socket never connects, so the order cannot invert). Queue
//! locks are never held with a state lock, and nothing that may drop a
//! file is dropped under either.

mod dgram;
mod gc;
mod names;
mod queue;
mod stream;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::fmt::Write;
use core::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::signal::{POLL_HUP, POLL_IN};
use linux_abi::socket::{self as s, UnixName};

use super::options::SockOptions;
use super::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use super::wait::Timeout;
use super::{MsgSink, MsgSource};
use crate::event::{Events, PollTable, Pollee};
use crate::fs::file::OpenFile;
use names::Name;
use queue::{Queue, RecvQueue};

/// shutdown bits, as Linux's `RCV_SHUTDOWN` and `SEND_SHUTDOWN`.
const RCV: u8 = 1;
const SEND: u8 = 2;
const BOTH: u8 = RCV | SEND;

/// `net.unix.max_dgram_qlen`: datagrams a socket queues from senders
/// that are not its peer before they must wait.
const MAX_DGRAM_QLEN: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Unconnected = 0,
    Listening = 1,
    Connected = 2,
}

struct State {
    /// The connected peer (a datagram socket's default destination).
    peer: Option<Arc<UnixSocket>>,
    name: Option<Arc<Name>>,
    /// Connections waiting for accept, and how many may wait beyond one.
    pending: VecDeque<Arc<UnixSocket>>,
    backlog: usize,
    /// SO_PEERCRED.
    peer_cred: Option<s::Ucred>,
    released: bool,
}

/// One AF_UNIX socket.
pub struct UnixSocket {
    kind: SockType,
    opts: SockOptions,
    state: SpinLock<State>,
    /// `Phase`, readable without the lock (poll, read).
    phase: AtomicU8,
    /// RCV/SEND shutdown bits.
    shutdown: AtomicU8,
    /// SO_ERROR (ECONNRESET when the peer went with data unread).
    error: AtomicI32,
    queue: Queue,
    /// Memory of the messages this socket sent that are not read yet.
    wmem: AtomicUsize,
    pollee: Pollee,
    readers: crate::sync::Mutex<()>,
    peek_off: AtomicI32,
    /// The socket file's inode number (0 until it has a file).
    ino: AtomicU64,
    /// Itself, for messages to name their sender (set once at creation).
    me: hal::sync::Once<Weak<UnixSocket>>,
    /// The socket's open file, once it has one (the collector compares
    /// its references with `inflight`).
    file: hal::sync::Once<Weak<OpenFile>>,
    /// How many messages hold the file in flight (changed under the
    /// collector's lock, `gc`).
    inflight: AtomicUsize,
}

/// Every socket, for /proc/net/unix.
static ALL: SpinLock<BTreeMap<usize, Weak<UnixSocket>>> = SpinLock::new(BTreeMap::new());

fn sock_type(kind: u32) -> Result<SockType, Errno> {
    match kind {
        s::SOCK_STREAM => Ok(SockType::Stream),
        // Linux makes SOCK_RAW a datagram socket in this family.
        s::SOCK_DGRAM | s::SOCK_RAW => Ok(SockType::Dgram),
        s::SOCK_SEQPACKET => Ok(SockType::SeqPacket),
        _ => Err(Errno::ESOCKTNOSUPPORT),
    }
}

fn check_protocol(protocol: i32) -> Result<(), Errno> {
    if protocol != 0 && protocol != s::AF_UNIX as i32 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok(())
}

impl UnixSocket {
    fn new(kind: SockType) -> Result<Arc<UnixSocket>, Errno> {
        let sock = Arc::try_new(UnixSocket {
            kind,
            opts: SockOptions::new(),
            state: SpinLock::new(State {
                peer: None,
                name: None,
                pending: VecDeque::new(),
                backlog: 0,
                peer_cred: None,
                released: false,
            }),
            phase: AtomicU8::new(Phase::Unconnected as u8),
            shutdown: AtomicU8::new(0),
            error: AtomicI32::new(0),
            queue: SpinLock::new(RecvQueue::default()),
            wmem: AtomicUsize::new(0),
            pollee: Pollee::new(),
            readers: crate::sync::Mutex::new(()),
            peek_off: AtomicI32::new(-1),
            ino: AtomicU64::new(0),
            me: hal::sync::Once::new(),
            file: hal::sync::Once::new(),
            inflight: AtomicUsize::new(0),
        })
        .map_err(|_| Errno::ENOMEM)?;
        sock.me.set(Arc::downgrade(&sock));
        let key = Arc::as_ptr(&sock) as usize;
        ALL.lock().insert(key, Arc::downgrade(&sock));
        Ok(sock)
    }

    fn arc(&self) -> Arc<UnixSocket> {
        self.me.get().and_then(Weak::upgrade).expect("a socket in use is alive")
    }

    fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            1 => Phase::Listening,
            2 => Phase::Connected,
            _ => Phase::Unconnected,
        }
    }

    fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::Release);
    }

    fn shut(&self) -> u8 {
        self.shutdown.load(Ordering::Acquire)
    }

    fn peer(&self) -> Option<Arc<UnixSocket>> {
        self.state.lock().peer.clone()
    }

    fn name(&self) -> Option<Arc<Name>> {
        self.state.lock().name.clone()
    }

    fn is_released(&self) -> bool {
        self.queue.lock().closed
    }

    /// `sock_error`: the pending error, cleared.
    fn take_err(&self) -> Option<Errno> {
        let e = self.error.swap(0, Ordering::AcqRel);
        if e == 0 {
            None
        } else {
            Errno::from_i32(e)
        }
    }

    fn set_err(&self, e: Errno) {
        self.error.store(e.as_i32(), Ordering::Release);
    }

    fn rcv_timeout(&self, nonblock: bool) -> Timeout {
        Timeout::from_jiffies(nonblock, self.opts.rcvtimeo.load(Ordering::Relaxed))
    }

    fn snd_timeout(&self, nonblock: bool) -> Timeout {
        Timeout::from_jiffies(nonblock, self.opts.sndtimeo.load(Ordering::Relaxed))
    }

    /// `unix_writable`: less than a quarter of the send buffer in flight.
    fn writable(&self) -> bool {
        self.phase() != Phase::Listening && self.wmem.load(Ordering::Acquire) * 4 <= self.opts.sndbuf()
    }

    /// Binds an automatic abstract name unless the socket has a name.
    fn ensure_name(&self) -> Result<(), Errno> {
        if self.state.lock().name.is_some() {
            return Ok(());
        }
        let me = self.arc();
        let name = names::autobind(&me)?;
        let mut st = self.state.lock();
        if st.name.is_none() {
            st.name = Some(name);
            None
        } else {
            Some(name)
        }
        .map_or(Ok(()), |lost| {
            drop(st);
            names::unbind(&lost, self);
            Ok(())
        })
    }

    /// Waits until this socket's messages in flight leave room for
    /// another (`sock_alloc_send_pskb`): EPIPE once it cannot send.
    fn wait_for_wmem(&self, timeout: Timeout) -> Result<(), Errno> {
        super::wait::block_on(&self.pollee, Events::WRITABLE, timeout, || {
            if self.shut() & SEND != 0 {
                return Err(Errno::EPIPE);
            }
            if let Some(e) = self.take_err() {
                return Err(e);
            }
            if self.wmem.load(Ordering::Acquire) < self.opts.sndbuf() {
                Ok(())
            } else {
                self.opts.async_io.no_space();
                Err(Errno::EAGAIN)
            }
        })
    }

    /// The credentials a message from the caller carries: the claimed
    /// ones, else the caller's if either end asked for them.
    fn msg_cred(&self, claimed: Option<s::Ucred>, to: &UnixSocket) -> Option<s::Ucred> {
        claimed.or_else(|| (self.opts.passcred() || to.opts.passcred()).then(|| super::caller().scm_cred()))
    }

    fn release_impl(&self, embryo: bool) {
        let (peer, name, pending) = {
            let mut st = self.state.lock();
            st.released = true;
            (st.peer.take(), st.name.take(), core::mem::take(&mut st.pending))
        };
        self.shutdown.store(BOTH, Ordering::Release);
        let msgs = self.queue.lock().close();
        if let Some(name) = &name {
            names::unbind(name, self);
        }
        if let Some(peer) = peer {
            if self.kind != SockType::Dgram {
                // The error first: a reader that sees the shutdown then
                // sees it too, and reports it rather than an end of file.
                if !msgs.is_empty() || embryo {
                    peer.set_err(Errno::ECONNRESET);
                }
                peer.shutdown.store(BOTH, Ordering::Release);
                peer.opts.async_io.data_ready(POLL_HUP);
                peer.pollee.notify(Events::EMPTY);
            }
        }
        self.pollee.notify(Events::EMPTY);
        queue::release_files(msgs);
        for e in pending {
            e.release_impl(true);
        }
        if !embryo {
            gc::on_release();
        }
    }
}

/// What SCM_CREDENTIALS reports for a message sent without credentials
/// (no pid, the overflow user and group).
const NO_CRED: s::Ucred = s::Ucred { pid: 0, uid: 65534, gid: 65534 };

impl Drop for UnixSocket {
    fn drop(&mut self) {
        ALL.lock().remove(&(self as *const UnixSocket as usize));
    }
}

/// socket(AF_UNIX, kind, protocol).
pub fn create(kind: u32, protocol: i32) -> Result<Arc<dyn Protocol>, Errno> {
    check_protocol(protocol)?;
    let kind = sock_type(kind)?;
    Ok(UnixSocket::new(kind)?)
}

/// socketpair(AF_UNIX, kind, protocol): both ends connected, each with
/// the caller as its peer's credentials.
pub fn create_pair(kind: u32, protocol: i32) -> Result<[Arc<dyn Protocol>; 2], Errno> {
    check_protocol(protocol)?;
    let kind = sock_type(kind)?;
    let a = UnixSocket::new(kind)?;
    let b = UnixSocket::new(kind)?;
    let cred = super::caller().peer_cred();
    for (x, y) in [(&a, &b), (&b, &a)] {
        let mut st = x.state.lock();
        st.peer = Some(y.clone());
        st.peer_cred = Some(cred);
        drop(st);
        if kind != SockType::Dgram {
            x.set_phase(Phase::Connected);
        }
    }
    Ok([a, b])
}

impl Protocol for UnixSocket {
    fn family(&self) -> u16 {
        s::AF_UNIX
    }

    fn sock_type(&self) -> SockType {
        self.kind
    }

    fn options(&self) -> &SockOptions {
        &self.opts
    }

    fn bind(&self, addr: &[u8], names_ctx: &NameCtx) -> Result<(), Errno> {
        let name = s::parse_unix_addr(addr, true).ok_or(Errno::EINVAL)?;
        if self.state.lock().name.is_some() {
            // Autobinding a bound socket is no error (`unix_autobind`).
            return if name == UnixName::Auto { Ok(()) } else { Err(Errno::EINVAL) };
        }
        let me = self.arc();
        let bound = match name {
            UnixName::Auto => names::autobind(&me)?,
            UnixName::Abstract(n) => names::bind_abstract(&me, n)?,
            UnixName::Path(p) => names::bind_path(&me, p, names_ctx)?,
        };
        let mut st = self.state.lock();
        if st.name.is_some() {
            drop(st);
            names::unbind(&bound, self);
            return Err(Errno::EINVAL);
        }
        st.name = Some(bound);
        Ok(())
    }

    fn connect(&self, addr: &[u8], names_ctx: &NameCtx, nonblock: bool) -> Result<(), Errno> {
        match self.kind {
            SockType::Dgram => dgram::connect(self, addr, names_ctx),
            _ => stream::connect(self, addr, names_ctx, nonblock),
        }
    }

    fn listen(&self, backlog: i32) -> Result<(), Errno> {
        stream::listen(self, backlog)
    }

    fn accept(&self, nonblock: bool) -> Result<(Arc<dyn Protocol>, AddrBuf), Errno> {
        stream::accept(self, nonblock)
    }

    fn sockname(&self) -> AddrBuf {
        self.name().map_or_else(names::unnamed, |n| n.addr.clone())
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        if self.kind != SockType::Dgram && self.phase() != Phase::Connected {
            return Err(Errno::ENOTCONN);
        }
        let peer = self.peer().ok_or(Errno::ENOTCONN)?;
        Ok(peer.name().map_or_else(names::unnamed, |n| n.addr.clone()))
    }

    fn shutdown(&self, how: i32) -> Result<(), Errno> {
        if !(s::SHUT_RD..=s::SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        let mode = (how + 1) as u8;
        self.shutdown.fetch_or(mode, Ordering::AcqRel);
        self.pollee.notify(Events::EMPTY);
        if self.kind != SockType::Dgram {
            if let Some(peer) = self.peer() {
                let mut peer_mode = 0;
                if mode & RCV != 0 {
                    peer_mode |= SEND;
                }
                if mode & SEND != 0 {
                    peer_mode |= RCV;
                }
                peer.shutdown.fetch_or(peer_mode, Ordering::AcqRel);
                // O_ASYNC before the wakeup, as for data (see stream::send).
                if peer_mode == BOTH {
                    peer.opts.async_io.data_ready(POLL_HUP);
                } else if peer_mode & RCV != 0 {
                    peer.opts.async_io.data_ready(POLL_IN);
                }
                peer.pollee.notify(Events::EMPTY);
            }
        }
        Ok(())
    }

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        match self.kind {
            SockType::Stream => stream::send(self, data, args),
            _ => dgram::send(self, data, args),
        }
    }

    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        match self.kind {
            SockType::Stream => stream::recv(self, data, args),
            _ => dgram::recv(self, data, args),
        }
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        let peer = if self.kind == SockType::Stream { None } else { self.peer() };
        if let Some(table) = table {
            table.register(&self.pollee);
            // A datagram sender also waits for room at its peer.
            if let Some(p) = &peer {
                if self.kind == SockType::Dgram {
                    table.register(&p.pollee);
                }
            }
        }
        let shut = self.shut();
        let phase = self.phase();
        let mut ev = Events::EMPTY;
        if self.error.load(Ordering::Acquire) != 0 {
            ev |= Events::ERR;
        }
        if shut == BOTH {
            ev |= Events::HUP;
        }
        if shut & RCV != 0 {
            ev |= Events::RDHUP | Events::READABLE;
        }
        let queued = {
            let q = self.queue.lock();
            !q.msgs.is_empty()
        };
        let pending = phase == Phase::Listening && !self.state.lock().pending.is_empty();
        if queued || pending {
            ev |= Events::READABLE;
        }
        if self.kind != SockType::Dgram && phase == Phase::Unconnected {
            ev |= Events::HUP;
        }
        let mut writable = self.writable();
        if writable && self.kind == SockType::Dgram {
            if let Some(p) = &peer {
                writable = !dgram::must_wait_for(self, p);
            }
        }
        if writable {
            ev |= Events::WRITABLE | Events::WRBAND;
        } else if self.kind != SockType::Stream {
            // unix_dgram_poll: a poller finding no room counts as a
            // writer that found none, for O_ASYNC's POLL_OUT.
            self.opts.async_io.no_space();
        }
        ev
    }

    fn unread(&self) -> Result<usize, Errno> {
        if self.phase() == Phase::Listening {
            return Err(Errno::EINVAL);
        }
        let q = self.queue.lock();
        Ok(match self.kind {
            SockType::Dgram => q.msgs.front().map_or(0, |m| m.len()),
            _ => q.bytes,
        })
    }

    fn unsent(&self) -> usize {
        self.wmem.load(Ordering::Acquire)
    }

    fn take_error(&self) -> i32 {
        self.take_err().map_or(0, |e| e.as_i32())
    }

    fn set_error(&self, e: Errno) {
        self.set_err(e);
    }

    fn is_listening(&self) -> bool {
        self.phase() == Phase::Listening
    }

    fn peer_cred(&self) -> s::Ucred {
        self.state.lock().peer_cred.unwrap_or(s::Ucred { pid: 0, uid: u32::MAX, gid: u32::MAX })
    }

    fn set_peek_off(&self, off: i32) -> Result<(), Errno> {
        let _readers = self.readers.lock();
        self.peek_off.store(off, Ordering::Relaxed);
        Ok(())
    }

    fn peek_off(&self) -> Result<i32, Errno> {
        Ok(self.peek_off.load(Ordering::Relaxed))
    }

    fn buffer_changed(&self) {
        self.pollee.notify(Events::WRITABLE);
    }

    fn attach(&self, ino: u64) {
        self.ino.store(ino, Ordering::Relaxed);
    }

    fn attach_file(&self, file: &Arc<OpenFile>) {
        self.file.set(Arc::downgrade(file));
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn release(&self) {
        self.release_impl(false);
    }
}

/// The peek offset a receive starts at (`sk_peek_offset`), and moving it.
fn peek_start(sock: &UnixSocket, flags: u32) -> usize {
    if flags & s::MSG_PEEK != 0 {
        sock.peek_off.load(Ordering::Relaxed).max(0) as usize
    } else {
        0
    }
}

fn peek_forward(sock: &UnixSocket, n: usize) {
    let off = sock.peek_off.load(Ordering::Relaxed);
    if off >= 0 {
        sock.peek_off.store(off.saturating_add(n as i32), Ordering::Relaxed);
    }
}

fn peek_back(sock: &UnixSocket, n: usize) {
    let off = sock.peek_off.load(Ordering::Relaxed);
    if off >= 0 {
        sock.peek_off.store((off - n.min(i32::MAX as usize) as i32).max(0), Ordering::Relaxed);
    }
}

/// /proc/net/unix (ENOMEM when the text does not fit in memory).
pub fn proc_net_unix() -> Result<String, Errno> {
    let socks: Vec<Arc<UnixSocket>> = {
        let all = ALL.lock();
        let mut v = Vec::new();
        v.try_reserve_exact(all.len()).map_err(|_| Errno::ENOMEM)?;
        v.extend(all.values().filter_map(Weak::upgrade));
        v
    };
    let mut out = crate::mm::TryString::new();
    let result = (|| {
        writeln!(out, "Num       RefCount Protocol Flags    Type St Inode Path")?;
        for sk in &socks {
            let ino = sk.ino.load(Ordering::Relaxed);
            if sk.is_released() {
                continue;
            }
            let phase = sk.phase();
            let flags = if phase == Phase::Listening { 0x10000 } else { 0 };
            let connected = phase == Phase::Connected || (sk.kind == SockType::Dgram && sk.peer().is_some());
            // SS_CONNECTED / SS_UNCONNECTED for sockets with a file;
            // embryos waiting for accept are SS_CONNECTING.
            let st = match (ino != 0, connected) {
                (true, true) => 3,
                (true, false) => 1,
                (false, true) => 2,
                (false, false) => 4,
            };
            write!(
                out,
                "{:016x}: {:08X} {:08X} {:08X} {:04X} {:02X} {:5}",
                0,
                Arc::strong_count(sk),
                0,
                flags,
                sk.kind as u32,
                st,
                ino
            )?;
            if let Some(name) = sk.name() {
                out.write_char(' ')?;
                names::write_proc_text(&name, &mut out)?;
            }
            out.write_char('\n')?;
        }
        Ok(())
    })();
    out.finish(result)
}
