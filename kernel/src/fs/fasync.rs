//! Signal-driven I/O: an open file description with O_ASYNC set by
//! F_SETFL sends its owner (F_SETOWN) SIGIO, or its F_SETSIG signal with
//! si_code POLL_IN/POLL_OUT, si_band and si_fd, when it becomes readable
//! or writable (Linux's fasync).
//!
//! Only files that support it on Linux take part (pipes, FIFOs and
//! terminals say so with `FileOps::fasync`); on others O_ASYNC is just a
//! flag. Enabling subscribes an observer to the file's notification heads
//! through its `poll`. The observer runs under a head's lock, perhaps in
//! an interrupt, where no signal can be sent: it marks the description
//! and wakes the `sigio` kernel thread, which sends the signals. Like
//! Linux's kill_fasync, every notification counts, not only a change
//! from not ready to ready.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;
use linux_abi::signal::{POLL_IN, POLL_OUT};

use super::file::OpenFile;
use super::fown;
use super::lock::{description_id, USES_ASYNC};
use crate::event::{Events, Observer, PollTable, Subscription};
use crate::sched::{WakeBatch, WakeFlag};

const READ: u32 = 1;
const WRITE: u32 = 2;

/// One description with O_ASYNC on.
struct AsyncFile {
    file: Weak<OpenFile>,
    id: usize,
    /// The descriptor F_SETFL named (the signals' si_fd).
    fd: AtomicU32,
    /// Which reasons apply: POLL_IN if open for reading, POLL_OUT for writing.
    directions: u32,
    /// Reasons noticed and not yet signalled.
    pending: AtomicU32,
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
            self.pending.fetch_or(bits, Ordering::SeqCst);
            if let Some(flag) = WORKER.get() {
                flag.wake_into(wakeups);
            }
        }
        false
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
    let observer: Arc<dyn Observer> = async_file.clone();
    let mut subscriptions = Vec::new();
    let interest = Events::READABLE | Events::WRITABLE | Events::PRI | Events::ERR | Events::HUP;
    let mut table = PollTable::new(&observer, interest, false, &mut subscriptions);
    f.ops.poll(Some(&mut table));
    if let Some(e) = table.error() {
        return Err(e);
    }
    let mut registry = REGISTRY.lock();
    registry.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
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
            if bits & READ != 0 {
                fown::send(owner, fd, POLL_IN);
            }
            if bits & WRITE != 0 {
                fown::send(owner, fd, POLL_OUT);
            }
            // May be the last reference: its close takes the registry's
            // lock, which is not held here.
            drop(file);
        }
        let _ = flag.wait(None);
    }
}
