//! Signal-driven I/O: an open file description with O_ASYNC set by
//! F_SETFL sends its owner (F_SETOWN) SIGIO, or its F_SETSIG signal with
//! si_code POLL_IN/POLL_OUT, si_band and si_fd, when it becomes readable
//! or writable (Linux's fasync).
//!
//! Only files that support it on Linux take part (pipes, FIFOs,
//! terminals and sockets say so with `FileOps::fasync`); on others
//! O_ASYNC is just a flag. For most, enabling subscribes an observer to
//! the file's notification heads through its `poll`. The observer runs
//! under a head's lock, perhaps in an interrupt, where no signal can be
//! sent: it marks the description and wakes the `sigio` kernel thread,
//! which sends the signals. Like Linux's kill_fasync, every notification
//! counts, not only a change from not ready to ready.
//!
//! A file whose reasons are not its readiness (a socket signals POLL_OUT
//! only after a writer found no room, and POLL_HUP when its peer goes:
//! Linux's `sock_wake_async`) has an [`AsyncSlot`] instead
//! (`FileOps::async_slot`): enabling arms the slot, and the file says
//! itself when to signal and with which reason ([`AsyncSlot::signal`]).

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;
use linux_abi::signal::{POLL_HUP, POLL_IN, POLL_OUT};

use super::file::OpenFile;
use super::fown;
use super::lock::{description_id, USES_ASYNC};
use crate::event::{Events, Observer, PollTable, Subscription};
use crate::sched::{WakeBatch, WakeFlag};

/// A reason as a bit of `AsyncFile::pending` (POLL_IN .. POLL_HUP).
const fn reason_bit(code: i32) -> u32 {
    1 << (code - POLL_IN)
}

const READ: u32 = reason_bit(POLL_IN);
const WRITE: u32 = reason_bit(POLL_OUT);

/// One description with O_ASYNC on.
struct AsyncFile {
    file: Weak<OpenFile>,
    id: usize,
    /// The descriptor F_SETFL named (the signals' si_fd).
    fd: AtomicU32,
    /// Which reasons apply: POLL_IN if open for reading, POLL_OUT for writing.
    directions: u32,
    /// Reasons noticed and not yet signalled (`reason_bit`s).
    pending: AtomicU32,
}

impl AsyncFile {
    fn mark(&self, bits: u32, wakeups: &mut WakeBatch) {
        self.pending.fetch_or(bits, Ordering::SeqCst);
        if let Some(flag) = WORKER.get() {
            flag.wake_into(wakeups);
        }
    }
}

impl Observer for AsyncFile {
    fn on_events(&self, events: Events, wakeups: &mut WakeBatch) -> bool {
        let mut bits = 0;
        if events.is_empty() {
            bits = self.directions;
        } else {
            if events.intersects(Events::READABLE | Events::PRI | Events::HUP) {
                bits |= READ;
            }
            if events.intersects(Events::WRITABLE | Events::ERR) {
                bits |= WRITE;
            }
            bits &= self.directions;
        }
        if bits != 0 {
            self.mark(bits, wakeups);
        }
        false
    }
}

/// Where a file that decides itself when to signal (a socket) keeps its
/// O_ASYNC registration: empty until F_SETFL sets O_ASYNC, and dead once
/// it is cleared or the description closes.
pub struct AsyncSlot(SpinLock<Weak<AsyncFile>>);

impl AsyncSlot {
    pub const fn new() -> AsyncSlot {
        AsyncSlot(SpinLock::new(Weak::new()))
    }

    /// Whether O_ASYNC is on (Linux's non-empty fasync list).
    pub fn armed(&self) -> bool {
        self.0.lock().strong_count() > 0
    }

    /// Signals the owner with `code` (POLL_IN .. POLL_HUP) if O_ASYNC is
    /// on; returns whether it is. Sent by the `sigio` thread, so callable
    /// under the file's own locks.
    pub fn signal(&self, code: i32) -> bool {
        if !(POLL_IN..=POLL_HUP).contains(&code) {
            return false;
        }
        let Some(a) = self.0.lock().upgrade() else { return false };
        let mut wakeups = WakeBatch::new();
        a.mark(reason_bit(code), &mut wakeups);
        true
    }
}

impl Default for AsyncSlot {
    fn default() -> AsyncSlot {
        AsyncSlot::new()
    }
}

struct Registration {
    async_file: Arc<AsyncFile>,
    _subscriptions: Vec<Subscription>,
}

static REGISTRY: SpinLock<Vec<Registration>> = SpinLock::new(Vec::new());
/// The worker's wakeup, once it runs.
static WORKER: Once<WakeFlag> = Once::new();
static WORKER_STARTED: Once<()> = Once::new();

/// Turns signal-driven I/O on for `f` (F_SETFL adding O_ASYNC through
/// descriptor `fd`). Files that do not support it keep just the flag.
pub fn enable(f: &Arc<OpenFile>, fd: i32) -> Result<(), Errno> {
    if !f.ops.fasync() {
        return Ok(());
    }
    let id = description_id(f);
    if let Some(r) = REGISTRY.lock().iter().find(|r| r.async_file.id == id) {
        r.async_file.fd.store(fd as u32, Ordering::Relaxed);
        return Ok(());
    }
    start_worker()?;
    let mut directions = 0;
    if f.readable() {
        directions |= READ;
    }
    if f.writable() {
        directions |= WRITE;
    }
    let async_file = Arc::try_new(AsyncFile {
        file: Arc::downgrade(f),
        id,
        fd: AtomicU32::new(fd as u32),
        directions,
        pending: AtomicU32::new(0),
    })
    .map_err(|_| Errno::ENOMEM)?;
    let mut subscriptions = Vec::new();
    if f.ops.async_slot().is_none() {
        let observer: Arc<dyn Observer> = async_file.clone();
        let interest = Events::READABLE | Events::WRITABLE | Events::PRI | Events::ERR | Events::HUP;
        let mut table = PollTable::new(&observer, interest, false, &mut subscriptions);
        f.ops.poll(Some(&mut table));
        if let Some(e) = table.error() {
            return Err(e);
        }
    }
    let mut registry = REGISTRY.lock();
    registry.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    if let Some(slot) = f.ops.async_slot() {
        *slot.0.lock() = Arc::downgrade(&async_file);
    }
    registry.push(Registration { async_file, _subscriptions: subscriptions });
    drop(registry);
    f.lock_use.fetch_or(USES_ASYNC, Ordering::Relaxed);
    Ok(())
}

/// Turns it off (F_SETFL clearing O_ASYNC, or the description closing).
pub fn disable(f: &OpenFile) {
    let id = description_id(f);
    let gone: Vec<Registration> = {
        let mut registry = REGISTRY.lock();
        let (gone, kept) = core::mem::take(&mut *registry).into_iter().partition(|r| r.async_file.id == id);
        *registry = kept;
        gone
    };
    // Unsubscribed here, outside the registry's lock.
    drop(gone);
}

fn start_worker() -> Result<(), Errno> {
    if WORKER_STARTED.get().is_some() {
        return Ok(());
    }
    if WORKER_STARTED.set(()) {
        crate::sched::spawn("sigio", worker).map_err(|_| Errno::ENOMEM)?;
    }
    Ok(())
}

/// The `sigio` kernel thread: sends the signals the observers noticed.
fn worker() {
    WORKER.set(WakeFlag::for_current());
    let Some(flag) = WORKER.get() else { return };
    loop {
        let busy: Vec<Arc<AsyncFile>> = REGISTRY
            .lock()
            .iter()
            .filter(|r| r.async_file.pending.load(Ordering::SeqCst) != 0)
            .map(|r| r.async_file.clone())
            .collect();
        for a in busy {
            let bits = a.pending.swap(0, Ordering::SeqCst);
            let Some(file) = a.file.upgrade() else { continue };
            let owner = *file.owner.lock();
            let fd = a.fd.load(Ordering::Relaxed) as i32;
            for code in POLL_IN..=POLL_HUP {
                if bits & reason_bit(code) != 0 {
                    fown::send(owner, fd, code);
                }
            }
            // May be the last reference: its close takes the registry's
            // lock, which is not held here.
            drop(file);
        }
        let _ = flag.wait(None);
    }
}
