//! AF_UNIX receive queues: the messages waiting for a socket to read
//! them, each charged to the socket that sent it.
//!
//! As on Linux, a message's memory ("truesize": its bytes plus a fixed
//! overhead) counts against its *sender's* send buffer until the receiver
//! has consumed it, so a stream writer blocks once it has SO_SNDBUF bytes
//! in flight, and wakes (`WRITABLE`) when the receiver brings that below a
//! quarter. The overhead is Linux's: with the default 212,992-byte buffer
//! a socket holds 278 one-byte messages, as on Linux.
//!
//! Messages carry the descriptors passed with them (SCM_RIGHTS) as open
//! files: the references in flight, counted for the collector (`gc`).
//! They are dropped outside every lock,
//! and those of a released socket go through [`release_files`], which
//! releases nested sockets one after another instead of recursing.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket::Ucred;

use super::gc::Rights;
use super::names::Name;
use super::UnixSocket;
use crate::event::Events;
use crate::fs::file::OpenFile;

/// The memory one message of `len` bytes accounts for.
pub fn truesize(len: usize) -> usize {
    len.max(1).next_multiple_of(64) + 704
}

/// One message: a datagram or seqpacket record, or a piece of a stream.
pub struct Msg {
    pub data: Vec<u8>,
    /// Bytes a stream reader has consumed from the front.
    pub read: usize,
    /// The sender's name when it sent (recvfrom's address).
    pub from: Option<Arc<Name>>,
    /// SCM_CREDENTIALS, claimed or attached (None: not attached).
    pub cred: Option<Ucred>,
    /// SCM_RIGHTS: the files in flight.
    pub rights: Rights,
    /// Held for its drop, which gives the memory back to the sender.
    _charge: Charge,
}

impl Msg {
    pub fn new(data: Vec<u8>, sender: &Arc<UnixSocket>) -> Msg {
        let amount = truesize(data.len());
        sender.wmem.fetch_add(amount, Ordering::AcqRel);
        Msg {
            data,
            read: 0,
            from: None,
            cred: None,
            rights: Rights::default(),
            _charge: Charge { to: sender.clone(), amount },
        }
    }

    /// Bytes not consumed yet.
    pub fn len(&self) -> usize {
        self.data.len() - self.read
    }

    pub fn unread(&self) -> &[u8] {
        &self.data[self.read..]
    }
}

/// A message's share of its sender's send buffer, given back when the
/// message goes.
struct Charge {
    to: Arc<UnixSocket>,
    amount: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        let before = self.to.wmem.fetch_sub(self.amount, Ordering::AcqRel);
        let after = before - self.amount;
        let quarter = self.to.opts.sndbuf() / 4;
        // Writers wait until the buffer is three-quarters free, as Linux's
        // unix_write_space wakes them.
        if after <= quarter && (before > quarter || after == 0) {
            self.to.pollee.notify(Events::WRITABLE);
        }
        // Linux's unix_write_space runs at every free while writable; the
        // signal itself only follows a writer that found no room.
        if after <= quarter {
            self.to.opts.async_io.space();
        }
    }
}

/// A socket's receive queue.
#[derive(Default)]
pub struct RecvQueue {
    pub msgs: VecDeque<Msg>,
    /// Unread bytes of all messages (FIONREAD on a stream).
    pub bytes: usize,
    /// The socket was released: nothing may be queued any more.
    pub closed: bool,
}

impl RecvQueue {
    pub fn push(&mut self, msg: Msg) -> Result<(), Msg> {
        if self.msgs.try_reserve(1).is_err() {
            return Err(msg);
        }
        self.bytes += msg.len();
        self.msgs.push_back(msg);
        Ok(())
    }

    pub fn pop(&mut self) -> Option<Msg> {
        let m = self.msgs.pop_front()?;
        self.bytes -= m.len();
        Some(m)
    }

    /// Puts back a message a reader took and did not finish.
    pub fn unpop(&mut self, msg: Msg) {
        self.bytes += msg.len();
        self.msgs.push_front(msg);
    }

    /// Empties the queue for good; the caller drops what it returns
    /// outside the lock.
    pub fn close(&mut self) -> VecDeque<Msg> {
        self.closed = true;
        self.bytes = 0;
        core::mem::take(&mut self.msgs)
    }
}

/// Queues with their lock, as sockets hold them.
pub type Queue = SpinLock<RecvQueue>;

/// Files whose last in-flight reference went with a released socket's
/// queue, dropped one at a time by whoever is draining.
static DEFERRED: SpinLock<Vec<Arc<OpenFile>>> = SpinLock::new(Vec::new());
static DRAINING: AtomicBool = AtomicBool::new(false);

/// Drops the messages of a released socket. Files in flight may be
/// sockets whose own queues hold more files, to any depth: rather than
/// recurse through their releases, they are dropped from a list that the
/// outermost release drains.
pub fn release_files(msgs: VecDeque<Msg>) {
    let mut files = Vec::new();
    for mut m in msgs {
        files.append(&mut m.rights.take());
    }
    if !files.is_empty() {
        let mut d = DEFERRED.lock();
        if d.try_reserve(files.len()).is_ok() {
            d.append(&mut files);
        }
    }
    // Whatever could not be deferred (no memory) drops here, recursing.
    drop(files);
    loop {
        if DRAINING.swap(true, Ordering::AcqRel) {
            return; // an outer release is draining, and will see ours
        }
        loop {
            let next = DEFERRED.lock().pop();
            match next {
                Some(f) => drop(f),
                None => break,
            }
        }
        DRAINING.store(false, Ordering::Release);
        if DEFERRED.lock().is_empty() {
            return;
        }
    }
}

/// Allocates a message body of `len` bytes.
pub fn alloc_data(len: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOBUFS)?;
    v.resize(len, 0);
    Ok(v)
}
