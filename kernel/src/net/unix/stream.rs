//! Connections (stream and seqpacket: listen, connect, accept) and the
//! stream data path (Linux's `unix_stream_connect`,
//! `unix_stream_sendmsg` and `unix_stream_read_generic`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::errno::Errno;
use linux_abi::signal::POLL_IN;
use linux_abi::socket as s;

use super::gc::{self, Rights};
use super::queue::{alloc_data, Msg};
use super::{names, peek_back, peek_forward, peek_start, Phase, UnixSocket, NO_CRED, RCV, SEND};
use crate::event::Events;
use crate::net::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use crate::net::wait::{block_on, Timeout};
use crate::net::{MsgSink, MsgSource};

/// The largest piece a stream write is cut into: Linux's
/// `SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ`, so a socket fills at the same
/// byte counts as there.
const MAX_PIECE: usize = 36_544;

pub fn listen(sock: &UnixSocket, backlog: i32) -> Result<(), Errno> {
    if sock.kind == SockType::Dgram {
        return Err(Errno::EOPNOTSUPP);
    }
    let backlog = (backlog as u32).min(s::SOMAXCONN) as usize;
    let mut st = sock.state.lock();
    if st.name.is_none() || sock.phase() == Phase::Connected {
        return Err(Errno::EINVAL);
    }
    st.backlog = backlog;
    // Connecting sockets copy these as their peer's credentials.
    st.peer_cred = Some(crate::net::caller().peer_cred());
    sock.set_phase(Phase::Listening);
    drop(st);
    // A larger backlog may let waiting connections in.
    sock.pollee.notify(Events::WRITABLE);
    Ok(())
}

pub fn connect(sock: &UnixSocket, addr: &[u8], names_ctx: &NameCtx, nonblock: bool) -> Result<(), Errno> {
    if s::parse_unix_addr(addr, false).is_none() {
        return Err(Errno::EINVAL);
    }
    if sock.opts.passcred() {
        sock.ensure_name()?;
    }
    let timeout = sock.snd_timeout(nonblock);
    let me = sock.arc();
    loop {
        let other = names::find(addr, sock.kind, Some(names_ctx))?;
        let embryo = UnixSocket::new(sock.kind)?;
        let mut ost = other.state.lock();
        if ost.released || other.phase() != Phase::Listening || other.shut() & RCV != 0 {
            return Err(Errno::ECONNREFUSED);
        }
        if ost.pending.len() > ost.backlog {
            drop(ost);
            if timeout == Timeout::NonBlocking {
                return Err(Errno::EAGAIN);
            }
            // Wait for room (or the listener going), then look again.
            let waited = block_on(&other.pollee, Events::WRITABLE, timeout, || {
                let st = other.state.lock();
                if st.released || other.phase() != Phase::Listening || st.pending.len() <= st.backlog {
                    Ok(())
                } else {
                    Err(Errno::EAGAIN)
                }
            });
            match waited {
                Ok(()) | Err(Errno::EAGAIN) => continue,
                Err(e) => return Err(e),
            }
        }
        // Only now the caller's own state, as Linux latches it here: read
        // before its lock is taken, so a listening caller never takes it
        // while holding another listener's.
        match sock.phase() {
            Phase::Unconnected => {}
            Phase::Connected => return Err(Errno::EISCONN),
            Phase::Listening => return Err(Errno::EINVAL),
        }
        if ost.pending.try_reserve(1).is_err() {
            return Err(Errno::ENOMEM);
        }
        let mut st = sock.state.lock();
        if sock.phase() != Phase::Unconnected {
            // Another thread connected it or made it listen meanwhile.
            drop(st);
            drop(ost);
            continue;
        }
        {
            let mut est = embryo.state.lock();
            est.peer = Some(me.clone());
            est.name = ost.name.clone();
            est.peer_cred = Some(crate::net::caller().peer_cred());
        }
        embryo.set_phase(Phase::Connected);
        st.peer = Some(embryo.clone());
        st.peer_cred = ost.peer_cred;
        sock.set_phase(Phase::Connected);
        ost.pending.push_back(embryo);
        drop(st);
        drop(ost);
        // Before the wakeup: a reader it wakes stops holding POLL_IN back.
        other.opts.async_io.data_ready(POLL_IN);
        other.pollee.notify(Events::READABLE);
        return Ok(());
    }
}

pub fn accept(sock: &UnixSocket, nonblock: bool) -> Result<(Arc<dyn Protocol>, AddrBuf), Errno> {
    if sock.kind == SockType::Dgram {
        return Err(Errno::EOPNOTSUPP);
    }
    if sock.phase() != Phase::Listening {
        return Err(Errno::EINVAL);
    }
    let timeout = sock.rcv_timeout(nonblock);
    let new = block_on(&sock.pollee, Events::READABLE, timeout, || {
        let mut st = sock.state.lock();
        if st.released || sock.phase() != Phase::Listening {
            return Err(Errno::EINVAL);
        }
        match st.pending.pop_front() {
            Some(new) => Ok(new),
            // A listener shut for reading has nothing more to wait for
            // (Linux's skb_recv_datagram ends, and unix_accept says
            // EINVAL); a non-blocking accept still says EAGAIN.
            None if timeout != Timeout::NonBlocking && sock.shut() & RCV != 0 => Err(Errno::EINVAL),
            None => Err(Errno::EAGAIN),
        }
    })?;
    // Room for one more waiting connection.
    sock.pollee.notify(Events::WRITABLE);
    new.opts.passcred.store(sock.opts.passcred(), Ordering::Relaxed);
    let addr = new.peer().and_then(|c| c.name()).map_or_else(names::unnamed, |n| n.addr.clone());
    Ok((new, addr))
}

/// A write failed for good: SIGPIPE unless the caller said not to, or
/// some bytes already went.
fn broken_pipe(sent: usize, flags: u32) -> Result<usize, Errno> {
    if sent > 0 {
        return Ok(sent);
    }
    if flags & s::MSG_NOSIGNAL == 0 {
        crate::net::sigpipe();
    }
    Err(Errno::EPIPE)
}

pub fn send(sock: &UnixSocket, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
    let flags = args.flags;
    if flags & s::MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if args.addr.is_some() {
        return Err(if sock.phase() == Phase::Connected { Errno::EISCONN } else { Errno::EOPNOTSUPP });
    }
    let peer = match sock.phase() {
        Phase::Connected => sock.peer().ok_or(Errno::ENOTCONN)?,
        _ => return Err(Errno::ENOTCONN),
    };
    if sock.shut() & SEND != 0 {
        return broken_pipe(0, flags);
    }
    let me = sock.arc();
    let timeout = sock.snd_timeout(args.nonblock || flags & s::MSG_DONTWAIT != 0);
    let len = data.remaining();
    if !args.control.rights.is_empty() {
        gc::before_send();
    }
    let mut rights = Some(args.control.rights);
    let claimed = args.control.cred;
    let mut sent = 0;
    while sent < len {
        let size = (len - sent).min((sock.opts.sndbuf() >> 1).saturating_sub(64).max(1)).min(MAX_PIECE);
        if let Err(e) = sock.wait_for_wmem(timeout) {
            return match e {
                Errno::EPIPE => broken_pipe(sent, flags),
                e => crate::net::wait::partial_or(sent, e),
            };
        }
        let mut buf = match alloc_data(size) {
            Ok(b) => b,
            Err(e) => return crate::net::wait::partial_or(sent, e),
        };
        if let Err(e) = data.read(&mut buf) {
            return if sent > 0 { Ok(sent) } else { Err(e) };
        }
        let mut msg = Msg::new(buf, &me);
        if let Some(r) = rights.take() {
            msg.rights = Rights::new(r);
        }
        msg.cred = sock.msg_cred(claimed, &peer);
        let refused = {
            let mut q = peer.queue.lock();
            if q.closed || peer.shut() & RCV != 0 {
                Some(msg)
            } else {
                q.push(msg).err()
            }
        };
        if let Some(msg) = refused {
            let closed = peer.is_released() || peer.shut() & RCV != 0;
            drop(msg);
            return if closed { broken_pipe(sent, flags) } else { crate::net::wait::partial_or(sent, Errno::ENOBUFS) };
        }
        // Before the wakeup: a reader it wakes stops holding POLL_IN back.
        peer.opts.async_io.data_ready(POLL_IN);
        peer.pollee.notify(Events::READABLE);
        sent += size;
    }
    Ok(sent)
}

/// A stream read in progress: what it has produced so far.
struct Reading {
    copied: usize,
    out: Received,
    /// With SO_PASSCRED: the credentials of the first message read; the
    /// read never glues on a message with others.
    creds: Option<Option<s::Ucred>>,
    /// Stop after the message that carried descriptors.
    done: bool,
}

pub fn recv(sock: &UnixSocket, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
    if sock.phase() != Phase::Connected {
        return Err(Errno::EINVAL);
    }
    if args.flags & s::MSG_OOB != 0 {
        return Err(Errno::EINVAL);
    }
    let size = data.remaining();
    let lowat = sock.opts.rcvlowat.load(Ordering::Relaxed).max(1) as usize;
    let target = if args.flags & s::MSG_WAITALL != 0 { size } else { lowat.min(size) }.max(1);
    let timeout = sock.rcv_timeout(args.nonblock || args.flags & s::MSG_DONTWAIT != 0);
    let mut r = Reading { copied: 0, out: Received::default(), creds: None, done: false };
    // A reader asleep for data holds back O_ASYNC's POLL_IN.
    let sleeps = timeout != Timeout::NonBlocking;
    if sleeps {
        sock.opts.async_io.waiting_for_data(true);
    }
    let result = block_on(&sock.pollee, Events::READABLE, timeout, || read_some(sock, data, args, target, &mut r));
    if sleeps {
        sock.opts.async_io.waiting_for_data(false);
    }
    match result {
        Ok(()) => {}
        Err(e) if r.copied > 0 && matches!(e, Errno::EAGAIN | Errno::EINTR | Errno::ERESTARTSYS) => {}
        Err(e) => return Err(e),
    }
    r.out.len = r.copied;
    Ok(r.out)
}

/// One pass of a stream read: takes what the queue has, up to the room
/// in `data`. EAGAIN: wait for more.
fn read_some(
    sock: &UnixSocket,
    data: &mut dyn MsgSink,
    args: &RecvArgs,
    target: usize,
    r: &mut Reading,
) -> Result<(), Errno> {
    let _readers = sock.readers.lock();
    let peek = args.flags & s::MSG_PEEK != 0;
    let mut skip = peek_start(sock, args.flags) + if peek { r.copied } else { 0 };
    let mut first = true;
    while !r.done && (first || data.remaining() > 0) {
        first = false;
        // Read before the queue: a peer's writes are queued before its
        // shutdown or close is stored, so a shutdown seen here means the
        // queue below holds all it sent. Read after, a peer that wrote
        // and closed between the two looks like an end of file with its
        // last bytes still queued (Linux looks at both under one lock).
        let shut = sock.shut();
        let got = if peek { peek_piece(sock, data, args, &mut skip, r)? } else { take_piece(sock, data, args, r)? };
        if got {
            continue;
        }
        // Nothing (more) to read.
        if r.copied >= target {
            return Ok(());
        }
        if let Some(e) = sock.take_err() {
            return if r.copied > 0 { Ok(()) } else { Err(e) };
        }
        if shut & RCV != 0 {
            return Ok(());
        }
        return Err(Errno::EAGAIN);
    }
    Ok(())
}

/// Whether a message may be glued onto what was read so far; records
/// the first message's credentials and address.
fn may_glue(sock: &UnixSocket, msg: &Msg, args: &RecvArgs, r: &mut Reading) -> bool {
    match r.creds {
        Some(c) if c != msg.cred => return false,
        Some(_) => {}
        None if sock.opts.passcred() => {
            r.creds = Some(msg.cred);
            r.out.cred = Some(msg.cred.unwrap_or(NO_CRED));
        }
        None => {}
    }
    if args.want_addr && r.out.addr.is_none() {
        r.out.addr = Some(msg.from.as_ref().map_or_else(AddrBuf::empty, |n| n.addr.clone()));
    }
    true
}

/// Consumes from the front message. Ok(false): the queue is empty, or
/// the front message may not be glued on.
fn take_piece(sock: &UnixSocket, data: &mut dyn MsgSink, args: &RecvArgs, r: &mut Reading) -> Result<bool, Errno> {
    let Some(mut msg) = sock.queue.lock().pop() else {
        return Ok(false);
    };
    if !may_glue(sock, &msg, args, r) {
        sock.queue.lock().unpop(msg);
        r.done = true;
        return Ok(false);
    }
    let chunk = msg.len().min(data.remaining());
    if let Err(e) = data.write(&msg.unread()[..chunk]) {
        sock.queue.lock().unpop(msg);
        r.done = true;
        return if r.copied > 0 { Ok(false) } else { Err(e) };
    }
    r.copied += chunk;
    msg.read += chunk;
    peek_back(sock, chunk);
    if !msg.rights.is_empty() {
        r.out.rights = msg.rights.take();
        r.done = true;
    }
    if msg.len() > 0 {
        sock.queue.lock().unpop(msg);
        r.done = true;
    } else {
        drop(msg);
    }
    Ok(true)
}

/// MSG_PEEK: copies from the message `skip` bytes into the queue without
/// consuming it (descriptors are duplicated, as Linux does).
fn peek_piece(
    sock: &UnixSocket,
    data: &mut dyn MsgSink,
    args: &RecvArgs,
    skip: &mut usize,
    r: &mut Reading,
) -> Result<bool, Errno> {
    let mut staged = Vec::new();
    let mut rights = Vec::new();
    {
        let q = sock.queue.lock();
        let mut found = None;
        for m in q.msgs.iter() {
            if *skip < m.len() {
                found = Some(m);
                break;
            }
            *skip -= m.len();
        }
        let Some(m) = found else {
            return Ok(false);
        };
        if !may_glue(sock, m, args, r) {
            r.done = true;
            return Ok(false);
        }
        let chunk = (m.len() - *skip).min(data.remaining());
        if staged.try_reserve_exact(chunk).is_err() || rights.try_reserve_exact(m.rights.len()).is_err() {
            return Err(Errno::ENOMEM);
        }
        staged.extend_from_slice(&m.unread()[*skip..*skip + chunk]);
        rights.extend(m.rights.iter().cloned());
    }
    if let Err(e) = data.write(&staged) {
        r.done = true;
        return if r.copied > 0 { Ok(false) } else { Err(e) };
    }
    r.copied += staged.len();
    *skip += staged.len();
    peek_forward(sock, staged.len());
    if !rights.is_empty() {
        gc::peek_barrier();
        r.out.rights = rights;
        r.done = true;
    }
    Ok(true)
}
