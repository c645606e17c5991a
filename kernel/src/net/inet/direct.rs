//! Loopback TCP data handed straight to the receiving socket: a
//! connection whose two ends are both sockets of this machine on `lo`
//! moves its bytes through one queue (a [`Pipe`]) owned by the receiving
//! end, so a byte is copied twice, from the sender's memory into the
//! queue and from the queue into the receiver's, as Linux's loopback
//! copies it into an skb and out of it. Through smoltcp it was copied
//! four times: into the send ring, into a segment, into the peer's
//! receive ring and out of it; and each message cost a data segment and
//! its ACK, each built, parsed and followed by a poll round.
//!
//! smoltcp keeps everything but the bytes: the handshake, the FIN (sent
//! at once; the reader drains the pipe before it sees end of file, so the
//! FIN still follows the data), resets, keepalive, the states the socket
//! calls and /proc/net read. Order: a writer starts using the pipe only
//! when smoltcp holds none of its bytes unacknowledged (so all it sent
//! before is in the peer's receive ring), and then uses only the pipe;
//! the reader reads smoltcp's ring before the pipe.
//!
//! A pipe belongs to the reader's smoltcp socket and goes with it
//! ([`Direct::forget`]). Its size is the reader's receive ring plus the
//! writer's send ring: what the two rings held between them before.

use alloc::sync::Weak;
use alloc::vec::Vec;

use linux_abi::errno::Errno;
use smoltcp::socket::tcp::{self, State};

use super::stack::{Iface, SockRef, Watch};
use crate::net::{MsgSink, MsgSource};

/// Pipe buffers kept for reuse, at most.
const SPARE_PIPES: usize = 8;

/// A new pipe's buffer: a ping-pong's messages fit, and a stream's grows
/// it to its full size (so connections that send little do not hold
/// 128 KiB more each).
const FIRST_SIZE: usize = 4096;

pub struct Pipe {
    pub reader: SockRef,
    pub writer: SockRef,
    pub ring: ByteRing,
    /// The open sockets at either end, once known: woken without
    /// walking every socket (the reader's is learnt at its first read,
    /// an embryo in an accept queue having none).
    pub reader_watch: Option<Weak<dyn Watch>>,
    pub writer_watch: Option<Weak<dyn Watch>>,
}

/// Every pipe, sorted by reader, and which reader each writer writes
/// to, sorted by writer.
#[derive(Default)]
pub struct Direct {
    pipes: Vec<Pipe>,
    links: Vec<(SockRef, SockRef)>,
    spare: Vec<Vec<u8>>,
}

fn key(r: SockRef) -> (usize, super::sockets::SockId) {
    (r.iface, r.handle)
}

impl Direct {
    fn pipe_index(&self, reader: SockRef) -> Result<usize, usize> {
        self.pipes.binary_search_by_key(&key(reader), |p| key(p.reader))
    }

    fn link_index(&self, writer: SockRef) -> Result<usize, usize> {
        self.links.binary_search_by_key(&key(writer), |l| key(l.0))
    }

    /// The pipe `reader` reads from, if any.
    pub fn reading(&mut self, reader: SockRef) -> Option<&mut Pipe> {
        if self.pipes.is_empty() {
            return None;
        }
        let i = self.pipe_index(reader).ok()?;
        Some(&mut self.pipes[i])
    }

    /// The pipe `writer` writes to, if it has one.
    pub fn writing(&mut self, writer: SockRef) -> Option<&mut Pipe> {
        if self.links.is_empty() {
            return None;
        }
        let reader = self.links[self.link_index(writer).ok()?].1;
        self.reading(reader)
    }

    /// Bytes waiting for `reader` in its pipe.
    pub fn queued(&mut self, reader: SockRef) -> usize {
        self.reading(reader).map_or(0, |p| p.ring.len())
    }

    /// A pipe from `writer` to `reader` of `size` bytes; false without
    /// memory (the connection keeps going through smoltcp).
    pub fn link(&mut self, writer: SockRef, reader: SockRef, size: usize, watch: Weak<dyn Watch>) -> bool {
        let (Err(pi), Err(li)) = (self.pipe_index(reader), self.link_index(writer)) else {
            return false;
        };
        if self.pipes.try_reserve(1).is_err() || self.links.try_reserve(1).is_err() {
            return false;
        }
        let buf = match self.spare.iter().position(|b| b.len() <= size) {
            Some(i) => self.spare.swap_remove(i),
            None => match super::stack::zeroed(FIRST_SIZE.min(size)) {
                Ok(b) => b,
                Err(_) => return false,
            },
        };
        self.pipes.insert(
            pi,
            Pipe {
                reader,
                writer,
                ring: ByteRing { buf, head: 0, len: 0, max: size },
                reader_watch: None,
                writer_watch: Some(watch),
            },
        );
        self.links.insert(li, (writer, reader));
        true
    }

    /// A smoltcp socket is gone: the pipe it read from goes with it (a
    /// reader gone has no use for the bytes), and the link it wrote
    /// through (its bytes already written stay for their reader).
    pub fn forget(&mut self, r: SockRef) {
        if let Ok(i) = self.link_index(r) {
            self.links.remove(i);
        }
        if let Ok(i) = self.pipe_index(r) {
            let p = self.pipes.remove(i);
            if let Ok(li) = self.link_index(p.writer) {
                if self.links[li].1 == r {
                    self.links.remove(li);
                }
            }
            let buf = p.ring.buf;
            if self.spare.len() < SPARE_PIPES && self.spare.try_reserve(1).is_ok() {
                self.spare.push(buf);
            }
        }
    }
}

/// The other end of a loopback connection, if it is a socket of this
/// machine that can take data (its receive side open as far as TCP
/// knows: ESTABLISHED or after its own FIN).
pub fn find_peer(ifaces: &[Iface], r: SockRef) -> Option<SockRef> {
    let f = ifaces.get(r.iface)?;
    if !f.info.loopback {
        return None;
    }
    let me = f.sockets.get::<tcp::Socket>(r.handle);
    let (local, remote) = (me.local_endpoint()?, me.remote_endpoint()?);
    f.sockets.iter().find_map(|(h, s)| match s {
        smoltcp::socket::Socket::Tcp(t)
            if h != r.handle
                && t.local_endpoint() == Some(remote)
                && t.remote_endpoint() == Some(local)
                && matches!(t.state(), State::Established | State::FinWait1 | State::FinWait2) =>
        {
            Some(SockRef { iface: r.iface, handle: h })
        }
        _ => None,
    })
}

/// A byte queue in a buffer that grows up to `max` bytes.
pub struct ByteRing {
    buf: Vec<u8>,
    /// Where the oldest byte is.
    head: usize,
    len: usize,
    max: usize,
}

impl ByteRing {
    pub fn len(&self) -> usize {
        self.len
    }

    /// What it may hold (its buffer grows to this).
    pub fn capacity(&self) -> usize {
        self.max
    }

    /// A buffer of `size` bytes with the queue at its start.
    fn grow(&mut self, size: usize) -> Result<(), Errno> {
        let mut buf = super::stack::zeroed(size)?;
        let mut at = 0;
        for (from, n) in self.runs(0, self.len) {
            buf[at..at + n].copy_from_slice(&self.buf[from..from + n]);
            at += n;
        }
        self.buf = buf;
        self.head = 0;
        Ok(())
    }

    /// Appends as much of `data` as fits; the bytes read before a fault
    /// stay (Linux keeps a partial write's bytes too). ENOMEM if the
    /// buffer had to grow for any of it and could not.
    pub fn write_from(&mut self, data: &mut dyn MsgSource) -> (usize, Option<Errno>) {
        let want = (self.len + data.remaining()).min(self.max);
        if want > self.buf.len() {
            let size = want.next_power_of_two().clamp(FIRST_SIZE, self.max.max(FIRST_SIZE)).min(self.max);
            if let Err(e) = self.grow(size) {
                if self.len == self.buf.len() {
                    return (0, Some(e));
                }
            }
        }
        let mut total = 0;
        // Free space is at most two runs: after the bytes, then before.
        for _ in 0..2 {
            let cap = self.buf.len();
            let tail = (self.head + self.len) % cap.max(1);
            let run = if tail >= self.head && self.len < cap { cap - tail } else { cap - self.len };
            let n = run.min(data.remaining());
            if n == 0 {
                break;
            }
            if let Err(e) = data.read(&mut self.buf[tail..tail + n]) {
                return (total, Some(e));
            }
            self.len += n;
            total += n;
        }
        (total, None)
    }

    /// The bytes from `offset` on, as up to two runs.
    fn runs(&self, offset: usize, max: usize) -> [(usize, usize); 2] {
        let cap = self.buf.len();
        let n = self.len.saturating_sub(offset).min(max);
        if n == 0 {
            return [(0, 0); 2];
        }
        let start = (self.head + offset) % cap;
        let first = n.min(cap - start);
        [(start, first), (0, n - first)]
    }

    /// Moves up to `max` bytes into `data` (or drops them, `discard`:
    /// MSG_TRUNC); with `peek`, leaves them queued.
    pub fn read_into(
        &mut self,
        data: &mut dyn MsgSink,
        max: usize,
        peek: bool,
        discard: bool,
    ) -> (usize, Option<Errno>) {
        let mut total = 0;
        let mut fault = None;
        for (at, n) in self.runs(0, max) {
            if n == 0 {
                break;
            }
            if !discard {
                if let Err(e) = data.write(&self.buf[at..at + n]) {
                    fault = Some(e);
                    break;
                }
            }
            total += n;
        }
        if !peek {
            self.len -= total;
            self.head = if self.len == 0 { 0 } else { (self.head + total) % self.buf.len() };
        }
        (total, fault)
    }
}
