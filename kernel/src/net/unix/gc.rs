//! The collector of AF_UNIX sockets that are only in flight (Linux's
//! `unix_gc`).
//!
//! A descriptor passed with SCM_RIGHTS is an open file held by a message
//! in a receive queue. Sockets can hold each other this way: `a`'s file in
//! `b`'s queue and `b`'s in `a`'s. Once every descriptor of both is
//! closed, no one can ever receive from either, yet each keeps the other's
//! file open, so neither is released. The collector finds such sets and
//! empties their queues, which drops the files and releases the sockets.
//!
//! Every socket counts how many of its file's references are in flight
//! ([`Rights`] raises the count while a message holds them). A socket
//! whose file has no other reference is a *candidate*. References among
//! candidates (from one candidate's queue to another, through a listening
//! candidate's waiting connections too) are taken off; a candidate with
//! references left is held from outside, and so is everything it holds,
//! transitively. The rest is garbage.
//!
//! The graph must not change under the collector: the in-flight counts
//! change only under [`GC`], which the collector holds throughout, and a
//! receiver takes a file out of flight (under `GC`) before it installs a
//! descriptor for it, so no candidate gets a descriptor while a
//! collection runs. MSG_PEEK copies files without taking them out of
//! flight; it waits for a running collection ([`peek_barrier`]) between
//! copying and installing, as Linux's `unix_peek_fds`.
//!
//! It runs when a socket is released while anything is in flight (Linux
//! 6.1's trigger), and before a send with descriptors when more than
//! 16,000 are in flight.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::queue::{release_files, Msg};
use super::{Phase, UnixSocket, ALL};
use crate::fs::file::OpenFile;
use crate::net::Socket;
use crate::sync::Mutex;

/// Serializes the in-flight counts with the collector.
static GC: Mutex<()> = Mutex::new(());
/// Socket files in flight, all sockets together (`unix_tot_inflight`).
static TOTAL: AtomicUsize = AtomicUsize::new(0);
/// A collection is running (and releasing what it found).
static RUNNING: AtomicBool = AtomicBool::new(false);
/// A collection was asked for while one ran: run again.
static AGAIN: AtomicBool = AtomicBool::new(false);

/// `UNIX_INFLIGHT_TRIGGER_GC`: in-flight sockets past which a send with
/// descriptors collects first.
const TRIGGER: usize = 16_000;

/// The AF_UNIX socket an open file is, if it is one.
fn unix_of(file: &OpenFile) -> Option<&UnixSocket> {
    Socket::of(file)?.proto().as_any().downcast_ref::<UnixSocket>()
}

/// The files a message carries (SCM_RIGHTS), counted in flight while it
/// holds them.
#[derive(Default)]
pub struct Rights(Vec<Arc<OpenFile>>);

impl Rights {
    /// Puts `files` in flight (`unix_inflight`).
    pub fn new(files: Vec<Arc<OpenFile>>) -> Rights {
        count(&files, true);
        Rights(files)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<OpenFile>> {
        self.0.iter()
    }

    /// Takes the files out of flight (`unix_notinflight`), for a receiver
    /// to install or for dropping.
    pub fn take(&mut self) -> Vec<Arc<OpenFile>> {
        let files = core::mem::take(&mut self.0);
        count(&files, false);
        files
    }
}

impl Drop for Rights {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            count(&self.0, false);
        }
    }
}

/// Raises or lowers the in-flight counts of the sockets among `files`.
fn count(files: &[Arc<OpenFile>], up: bool) {
    if !files.iter().any(|f| unix_of(f).is_some()) {
        return;
    }
    let _gc = GC.lock();
    for sock in files.iter().filter_map(|f| unix_of(f)) {
        if up {
            sock.inflight.fetch_add(1, Ordering::Relaxed);
            TOTAL.fetch_add(1, Ordering::Relaxed);
        } else {
            sock.inflight.fetch_sub(1, Ordering::Relaxed);
            TOTAL.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// MSG_PEEK copied files out of a queue: waits for a running collection
/// to finish before they get descriptors.
pub fn peek_barrier() {
    drop(GC.lock());
}

/// A socket was released: collect if anything is in flight.
pub fn on_release() {
    if TOTAL.load(Ordering::Relaxed) > 0 {
        collect();
    }
}

/// A send with descriptors: collect first when very many are in flight.
pub fn before_send() {
    if TOTAL.load(Ordering::Relaxed) > TRIGGER {
        collect();
    }
}

/// Runs collections until none was asked for meanwhile. One runs at a
/// time; a request during a run (the run's own releases included) makes
/// it go round once more.
pub fn collect() {
    AGAIN.store(true, Ordering::SeqCst);
    while AGAIN.load(Ordering::SeqCst) {
        if RUNNING.swap(true, Ordering::AcqRel) {
            return; // the running collector will see AGAIN
        }
        AGAIN.store(false, Ordering::SeqCst);
        let garbage = find_garbage();
        // Outside the lock: dropping the messages takes their files out
        // of flight and releases the sockets, which asks for another run.
        release_files(garbage);
        RUNNING.store(false, Ordering::Release);
    }
}

/// A candidate: references not (yet) explained by other candidates.
struct Candidate {
    sock: Arc<UnixSocket>,
    refs: usize,
    alive: bool,
}

/// Finds the garbage and takes its messages that carry descriptors out of
/// their queues (Linux's hit list). Nothing is dropped under the lock:
/// every socket the collection holds is in `held` or `cands`, dropped
/// after it (the last reference to a socket releases its queue, whose
/// files leave flight under the lock).
fn find_garbage() -> VecDeque<Msg> {
    let mut hitlist = VecDeque::new();
    let mut held: Vec<Arc<UnixSocket>> = Vec::new();
    let mut cands: Vec<Candidate> = Vec::new();
    {
        let _gc = GC.lock();
        mark(&mut held, &mut cands, &mut hitlist);
    }
    drop(cands);
    drop(held);
    hitlist
}

fn mark(held: &mut Vec<Arc<UnixSocket>>, cands: &mut Vec<Candidate>, hitlist: &mut VecDeque<Msg>) {
    {
        let all = ALL.lock();
        if held.try_reserve_exact(all.len()).is_err() {
            return;
        }
        held.extend(all.values().filter_map(alloc::sync::Weak::upgrade));
    }
    for sock in held.iter() {
        let inflight = sock.inflight.load(Ordering::Relaxed);
        if inflight == 0 {
            continue;
        }
        let refs = sock.file.get().map_or(0, alloc::sync::Weak::strong_count);
        if refs == inflight {
            if cands.try_reserve(1).is_err() {
                return;
            }
            cands.push(Candidate { sock: sock.clone(), refs: inflight, alive: false });
        }
    }
    if cands.is_empty() {
        return;
    }
    let mut index: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, c) in cands.iter().enumerate() {
        index.insert(Arc::as_ptr(&c.sock) as usize, i);
    }
    let find = |f: &OpenFile| unix_of(f).and_then(|u| index.get(&(u as *const UnixSocket as usize)).copied());

    // References from candidates' queues are internal.
    for i in 0..cands.len() {
        let sock = cands[i].sock.clone();
        for_each_child(&sock, held, |f| {
            if let Some(j) = find(f) {
                cands[j].refs = cands[j].refs.saturating_sub(1);
            }
        });
    }
    // Held from outside: alive, with everything they hold.
    let mut work: Vec<usize> = Vec::new();
    if work.try_reserve(cands.len()).is_err() {
        return;
    }
    for (i, c) in cands.iter_mut().enumerate() {
        if c.refs > 0 {
            c.alive = true;
            work.push(i);
        }
    }
    while let Some(i) = work.pop() {
        let sock = cands[i].sock.clone();
        for_each_child(&sock, held, |f| {
            if let Some(j) = find(f) {
                if !cands[j].alive {
                    cands[j].alive = true;
                    // Each candidate enters once: the room is there.
                    work.push(j);
                }
            }
        });
    }
    // The garbage: its messages with descriptors go.
    for c in cands.iter().filter(|c| !c.alive) {
        take_rights_messages(&c.sock, held, hitlist);
    }
}

/// The sockets whose queues a socket's graph edges come from: itself,
/// and for a listening socket its waiting connections (held in `held`
/// so none is dropped under the collector's lock).
fn queues_of(sock: &Arc<UnixSocket>, held: &mut Vec<Arc<UnixSocket>>) -> usize {
    let start = held.len();
    if sock.phase() == Phase::Listening {
        let st = sock.state.lock();
        if held.try_reserve(st.pending.len()).is_ok() {
            held.extend(st.pending.iter().cloned());
        }
    }
    start
}

/// Calls `f` on every file in flight in `sock`'s queue (and its waiting
/// connections' queues).
fn for_each_child(sock: &Arc<UnixSocket>, held: &mut Vec<Arc<UnixSocket>>, mut f: impl FnMut(&OpenFile)) {
    let start = queues_of(sock, held);
    let mut visit = |s: &UnixSocket| {
        let q = s.queue.lock();
        for m in q.msgs.iter() {
            for file in m.rights.iter() {
                f(file);
            }
        }
    };
    visit(sock);
    for e in &held[start..] {
        visit(e);
    }
}

/// Moves the messages carrying descriptors out of `sock`'s queue (and
/// its waiting connections' queues) to `hitlist`.
fn take_rights_messages(sock: &Arc<UnixSocket>, held: &mut Vec<Arc<UnixSocket>>, hitlist: &mut VecDeque<Msg>) {
    let start = queues_of(sock, held);
    let mut take = |s: &UnixSocket| {
        let mut q = s.queue.lock();
        if hitlist.try_reserve(q.msgs.len()).is_err() {
            return;
        }
        let mut i = 0;
        while i < q.msgs.len() {
            if q.msgs[i].rights.is_empty() {
                i += 1;
            } else if let Some(m) = q.msgs.remove(i) {
                q.bytes -= m.len();
                hitlist.push_back(m);
            }
        }
    };
    take(sock);
    for e in &held[start..] {
        take(e);
    }
}
