//! Datagram and seqpacket messages (Linux's `unix_dgram_connect`,
//! `unix_dgram_sendmsg` and `__unix_dgram_recvmsg`, which seqpacket
//! sockets share once connected): whole messages, never glued, cut with
//! MSG_TRUNC when the reader's buffer is short.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::errno::Errno;
use linux_abi::signal::POLL_IN;
use linux_abi::socket as s;

use super::gc::{self, Rights};
use super::queue::{alloc_data, release_files, Msg};
use super::{names, peek_back, peek_forward, peek_start, Phase, UnixSocket, MAX_DGRAM_QLEN, NO_CRED, RCV};
use crate::event::Events;
use crate::net::socket::{AddrBuf, NameCtx, Received, RecvArgs, SendArgs, SockType};
use crate::net::wait::{block_on, Timeout};
use crate::net::{MsgSink, MsgSource};

fn is_peer_of(a: &UnixSocket, b: &UnixSocket) -> bool {
    a.state.lock().peer.as_ref().is_some_and(|p| core::ptr::eq(Arc::as_ptr(p), b))
}

/// Whether a sender must wait before queueing at `to`: its queue is
/// full and `to` is neither the sender nor connected to it.
pub fn must_wait_for(sock: &UnixSocket, to: &UnixSocket) -> bool {
    !core::ptr::eq(sock, to) && !is_peer_of(to, sock) && to.queue.lock().msgs.len() > MAX_DGRAM_QLEN
}

/// Drops what a datagram socket received from a peer it leaves; the old
/// peer, if it was connected back, hears ECONNRESET.
fn disconnected(sock: &UnixSocket, old: &UnixSocket) {
    let msgs = {
        let mut q = sock.queue.lock();
        q.bytes = 0;
        core::mem::take(&mut q.msgs)
    };
    if msgs.is_empty() {
        return;
    }
    sock.pollee.notify(Events::WRITABLE);
    if !old.is_released() && is_peer_of(old, sock) {
        old.set_err(Errno::ECONNRESET);
        old.pollee.notify(Events::ERR);
        old.opts.async_io.error();
    }
    release_files(msgs);
}

pub fn connect(sock: &UnixSocket, addr: &[u8], names_ctx: &NameCtx) -> Result<(), Errno> {
    if addr.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let family = u16::from_le_bytes([addr[0], addr[1]]);
    let other = if family != s::AF_UNSPEC {
        if s::parse_unix_addr(addr, false).is_none() {
            return Err(Errno::EINVAL);
        }
        if sock.opts.passcred() {
            sock.ensure_name()?;
        }
        let other = names::find(addr, SockType::Dgram, Some(names_ctx))?;
        let theirs = other.peer();
        if theirs.is_some_and(|p| !core::ptr::eq(Arc::as_ptr(&p), sock)) {
            return Err(Errno::EPERM);
        }
        Some(other)
    } else {
        None
    };
    let old = core::mem::replace(&mut sock.state.lock().peer, other.clone());
    if let Some(old) = old {
        if !other.as_ref().is_some_and(|o| Arc::ptr_eq(o, &old)) {
            disconnected(sock, &old);
        }
    }
    sock.pollee.notify(Events::WRITABLE);
    Ok(())
}

pub fn send(sock: &UnixSocket, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
    let seq = sock.kind == SockType::SeqPacket;
    if seq {
        if let Some(e) = sock.take_err() {
            return Err(e);
        }
        if sock.phase() != Phase::Connected {
            return Err(Errno::ENOTCONN);
        }
    }
    if args.flags & s::MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let addr = if seq { None } else { args.addr };
    let peer = match addr {
        Some(a) => {
            if s::parse_unix_addr(a, false).is_none() {
                return Err(Errno::EINVAL);
            }
            None
        }
        None => Some(sock.peer().ok_or(Errno::ENOTCONN)?),
    };
    if sock.opts.passcred() {
        sock.ensure_name()?;
    }
    let len = data.remaining();
    if len > sock.opts.sndbuf().saturating_sub(32) {
        return Err(Errno::EMSGSIZE);
    }
    let timeout = sock.snd_timeout(args.nonblock || args.flags & s::MSG_DONTWAIT != 0);
    sock.wait_for_wmem(timeout)?;
    let mut buf = alloc_data(len)?;
    data.read(&mut buf)?;
    let mut msg = Msg::new(buf, &sock.arc());
    if !args.control.rights.is_empty() {
        gc::before_send();
    }
    msg.rights = Rights::new(args.control.rights);
    msg.from = sock.name();
    let claimed = args.control.cred;
    let other = match peer {
        Some(p) => p,
        None => names::find(addr.unwrap_or(&[]), sock.kind, args.names)?,
    };
    let mut msg = Some(msg);
    let sent = block_on(&other.pollee, Events::WRITABLE, timeout, || {
        if let Some(theirs) = other.peer() {
            if !core::ptr::eq(Arc::as_ptr(&theirs), sock) {
                return Err(Errno::EPERM);
            }
        }
        if other.is_released() {
            if seq {
                return Err(Errno::EPIPE);
            }
            let ours = {
                let mut st = sock.state.lock();
                if st.peer.as_ref().is_some_and(|p| Arc::ptr_eq(p, &other)) {
                    st.peer.take()
                } else {
                    None
                }
            };
            if let Some(old) = ours {
                disconnected(sock, &old);
            }
            return Err(Errno::ECONNREFUSED);
        }
        if other.shut() & RCV != 0 {
            return Err(Errno::EPIPE);
        }
        if must_wait_for(sock, &other) {
            return Err(Errno::EAGAIN);
        }
        let mut m = msg.take().expect("a message to send");
        m.cred = sock.msg_cred(claimed, &other);
        let mut q = other.queue.lock();
        if q.closed {
            drop(q);
            msg = Some(m);
            return Err(Errno::EAGAIN);
        }
        match q.push(m) {
            Ok(()) => Ok(len),
            Err(m) => {
                drop(q);
                msg = Some(m);
                Err(Errno::ENOBUFS)
            }
        }
    });
    if sent.is_ok() {
        // Before the wakeup: a reader it wakes stops holding POLL_IN back.
        other.opts.async_io.data_ready(POLL_IN);
        other.pollee.notify(Events::READABLE);
    }
    drop(msg);
    sent
}

pub fn recv(sock: &UnixSocket, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
    let seq = sock.kind == SockType::SeqPacket;
    if seq && sock.phase() != Phase::Connected {
        return Err(Errno::ENOTCONN);
    }
    if args.flags & s::MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let timeout = sock.rcv_timeout(args.nonblock || args.flags & s::MSG_DONTWAIT != 0);
    let peek = args.flags & s::MSG_PEEK != 0;
    block_on(&sock.pollee, Events::READABLE, timeout, || {
        let _readers = sock.readers.lock();
        // Before the queue, as a stream read does (see stream::read_some):
        // a record sent before the peer's close is then never missed.
        let shut = sock.shut();
        if let Some(e) = sock.take_err() {
            return Err(e);
        }
        let got = if peek { peek_one(sock, data, args)? } else { take_one(sock, data, args)? };
        if let Some(r) = got {
            return Ok(r);
        }
        // An empty queue: end of file once the socket cannot receive, but
        // a non-blocking datagram read still says EAGAIN, as on Linux.
        if shut & RCV != 0 && (seq || timeout != Timeout::NonBlocking) {
            return Ok(Received::default());
        }
        Err(Errno::EAGAIN)
    })
}

fn finish(
    sock: &UnixSocket,
    msg: &Msg,
    skip: usize,
    data: &mut dyn MsgSink,
    args: &RecvArgs,
) -> Result<Received, Errno> {
    let whole = msg.len() - skip.min(msg.len());
    let size = whole.min(data.remaining());
    data.write(&msg.unread()[skip..skip + size])?;
    let mut out = Received {
        len: if args.flags & s::MSG_TRUNC != 0 { whole } else { size },
        cred: sock.opts.passcred().then(|| msg.cred.unwrap_or(NO_CRED)),
        addr: args.want_addr.then(|| msg.from.as_ref().map_or_else(AddrBuf::empty, |n| n.addr.clone())),
        ..Received::default()
    };
    if size < whole {
        out.flags |= s::MSG_TRUNC;
    }
    Ok(out)
}

fn take_one(sock: &UnixSocket, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Option<Received>, Errno> {
    let (msg, was_full) = {
        let mut q = sock.queue.lock();
        let full = q.msgs.len() > MAX_DGRAM_QLEN;
        (q.pop(), full)
    };
    let Some(mut msg) = msg else {
        return Ok(None);
    };
    if was_full {
        sock.pollee.notify(Events::WRITABLE);
    }
    // A datagram whose copy faults is lost, as on Linux.
    let mut out = finish(sock, &msg, 0, data, args)?;
    peek_back(sock, msg.len());
    out.rights = msg.rights.take();
    drop(msg);
    Ok(Some(out))
}

fn peek_one(sock: &UnixSocket, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Option<Received>, Errno> {
    let mut skip = peek_start(sock, args.flags);
    let staged = {
        let q = sock.queue.lock();
        let mut found = None;
        for m in q.msgs.iter() {
            if skip < m.len() || (skip == 0 && m.len() == 0) {
                found = Some(m);
                break;
            }
            skip -= m.len();
        }
        let Some(m) = found else {
            return Ok(None);
        };
        // A copy of the message to fill the buffer from outside the lock.
        let mut data = Vec::new();
        let mut rights = Vec::new();
        if data.try_reserve_exact(m.len()).is_err() || rights.try_reserve_exact(m.rights.len()).is_err() {
            return Err(Errno::ENOMEM);
        }
        data.extend_from_slice(m.unread());
        rights.extend(m.rights.iter().cloned());
        (data, rights, m.from.clone(), m.cred)
    };
    let (bytes, rights, from, cred) = staged;
    if !rights.is_empty() {
        gc::peek_barrier();
    }
    let whole = bytes.len() - skip;
    let size = whole.min(data.remaining());
    data.write(&bytes[skip..skip + size])?;
    peek_forward(sock, size);
    let mut out = Received {
        len: if args.flags & s::MSG_TRUNC != 0 { whole } else { size },
        cred: sock.opts.passcred().then(|| cred.unwrap_or(NO_CRED)),
        addr: args.want_addr.then(|| from.as_ref().map_or_else(AddrBuf::empty, |n| n.addr.clone())),
        rights,
        ..Received::default()
    };
    if size < whole {
        out.flags |= s::MSG_TRUNC;
    }
    let _ = Ordering::Relaxed;
    Ok(Some(out))
}
