//! Pipes and FIFOs: a 64 KiB ring shared by a read end and a write end.
//!
//! Writes of at most PIPE_BUF bytes are atomic: they wait until the whole
//! write fits. A write with no reader left raises SIGPIPE and fails with
//! EPIPE; a read with no writer left sees end of file.
//!
//! Each direction has a notification head, as Linux's pipe has a read and
//! a write wait queue: writes notify the read head (`IN`), reads that make
//! room where there was none the write head (`OUT`), and the first end of
//! a kind opening or the last closing both (with an empty mask: anything
//! may have changed).

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};

use hal::sync::{SpinLock, SpinLockGuard};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use super::file::FileOps;
use super::inode::S_IFIFO;
use super::pipe_buf::PipeBuf;
use crate::event::{block_on, Events, PollTable, Pollee};
use crate::mm::{uaccess, Vm};
use crate::sched::{Interrupted, WaitQueue};

pub const PIPE_BUF: usize = 4096;
pub const PIPE_CAPACITY: usize = 65536;
/// fs.pipe-max-size: the most an unprivileged F_SETPIPE_SZ may ask for.
static PIPE_MAX_SIZE: AtomicUsize = AtomicUsize::new(1024 * 1024);

pub fn pipe_max_size() -> usize {
    PIPE_MAX_SIZE.load(Ordering::Relaxed)
}

/// Sets fs.pipe-max-size, rounded as Linux rounds a pipe size (a power
/// of two of at least a page); EINVAL for 0 or past 2^31.
pub fn set_pipe_max_size(size: usize) -> Result<(), linux_abi::errno::Errno> {
    if size == 0 || size > 1 << 31 {
        return Err(linux_abi::errno::Errno::EINVAL);
    }
    PIPE_MAX_SIZE.store(size.max(4096).next_power_of_two(), Ordering::Relaxed);
    Ok(())
}

pub struct Pipe {
    /// Locked only through `lock_buf`, which keeps `len` current.
    buf: SpinLock<PipeBuf>,
    /// The bytes in `buf` as of its last unlock, so poll reads readiness
    /// without the lock, as Linux's pipe_poll reads head and tail: a
    /// poller registers on the pollee first, and a writer stores this
    /// before it notifies, so a poller that reads a stale length is
    /// woken.
    len: AtomicUsize,
    capacity: AtomicUsize,
    readers: AtomicUsize,
    writers: AtomicUsize,
    /// Opens of each end so far: a FIFO open waiting for the other side
    /// waits for one of these to move, not for the count to be non-zero,
    /// because the other side may open and close again before the waiter
    /// looks (Linux's `r_counter`/`w_counter`).
    reader_opens: AtomicUsize,
    writer_opens: AtomicUsize,
    /// Makes opening an end and looking at the other side one step.
    open_lock: SpinLock<()>,
    /// Woken when data arrives or the last writer leaves.
    readable: WaitQueue,
    /// Woken when room appears or the last reader leaves.
    writable: WaitQueue,
    /// Pollers of the read side: data arrived, the last writer left.
    read_pollee: Pollee,
    /// Pollers of the write side: room appeared, the last reader left.
    write_pollee: Pollee,
}

impl Pipe {
    pub fn new() -> Arc<Pipe> {
        Arc::new(Pipe {
            buf: SpinLock::new(PipeBuf::new()),
            len: AtomicUsize::new(0),
            capacity: AtomicUsize::new(PIPE_CAPACITY),
            readers: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
            reader_opens: AtomicUsize::new(0),
            writer_opens: AtomicUsize::new(0),
            open_lock: SpinLock::new(()),
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
            read_pollee: Pollee::new(),
            write_pollee: Pollee::new(),
        })
    }

    /// F_SETPIPE_SZ, as Linux's pipe_set_size: the size rounds up to a
    /// power-of-two number of pages (at least one; past 2 GiB is EINVAL),
    /// growing past pipe-max-size needs privilege (EPERM), and shrinking
    /// below the pages the data occupies is EBUSY. Returns the new size.
    fn set_size(&self, size: u64, privileged: bool) -> Result<usize, Errno> {
        const PAGE: u64 = 4096;
        if size > 1 << 31 {
            return Err(Errno::EINVAL);
        }
        let size = size.max(PAGE).next_power_of_two() as usize;
        let growing = size > self.capacity.load(Ordering::Relaxed);
        if growing && size > pipe_max_size() && !privileged {
            return Err(Errno::EPERM);
        }
        let buf = self.lock_buf();
        // Linux counts the page buffers in use; written data fills pages.
        if buf.len().div_ceil(PAGE as usize) > size / PAGE as usize {
            return Err(Errno::EBUSY);
        }
        self.capacity.store(size, Ordering::Relaxed);
        drop(buf);
        self.wake_all();
        Ok(size)
    }

    fn wake_all(&self) {
        self.readable.wake_all();
        self.writable.wake_all();
        self.read_pollee.notify(Events::EMPTY);
        self.write_pollee.notify(Events::EMPTY);
    }

    /// An end opened or closed: blocked readers and writers look again;
    /// pollers hear of it only when that side appeared or went
    /// (`side_changed`: Linux's wake_up_partner and pipe_release), so an
    /// edge-triggered watcher sees no event for a second writer.
    fn end_changed(&self, side_changed: bool) {
        if side_changed {
            self.wake_all();
        } else {
            self.readable.wake_all();
            self.writable.wake_all();
        }
    }

    /// The buffer, locked; the length is published when the guard drops.
    fn lock_buf(&self) -> BufGuard<'_> {
        BufGuard { len: &self.len, buf: self.buf.lock() }
    }

    /// Whether a writer may go ahead (`POLLOUT`): room for an atomic write.
    fn has_room(&self, len: usize) -> bool {
        self.capacity.load(Ordering::Relaxed).saturating_sub(len) >= PIPE_BUF
    }
}

/// The locked buffer of a pipe; dropping it publishes the length to
/// `Pipe::len` while the lock is still held (fields drop after `drop`).
struct BufGuard<'a> {
    len: &'a AtomicUsize,
    buf: SpinLockGuard<'a, PipeBuf>,
}

impl core::ops::Deref for BufGuard<'_> {
    type Target = PipeBuf;
    fn deref(&self) -> &PipeBuf {
        &self.buf
    }
}

impl core::ops::DerefMut for BufGuard<'_> {
    fn deref_mut(&mut self) -> &mut PipeBuf {
        &mut self.buf
    }
}

impl Drop for BufGuard<'_> {
    fn drop(&mut self) {
        self.len.store(self.buf.len(), Ordering::Release);
    }
}

/// What splice, tee and vmsplice do with a pipe: data goes in and out
/// in bulk, without the atomicity of small writes, and the pipe's room
/// is counted in whole pages, as Linux's pipe counts its buffer slots (a
/// page of data holds a slot, however little of it is filled).
impl Pipe {
    fn capacity_pages(&self) -> usize {
        self.capacity.load(Ordering::Relaxed) / PIPE_BUF
    }

    /// Pages of room left (free slots).
    pub fn free_pages(&self) -> usize {
        let used = self.lock_buf().len().div_ceil(PIPE_BUF);
        self.capacity_pages().saturating_sub(used)
    }

    /// Bytes waiting in the pipe.
    pub fn len(&self) -> usize {
        self.lock_buf().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Linux's `wait_for_space`: EPIPE (and SIGPIPE) without readers,
    /// EAGAIN when full and `nonblock`, else waits for a free page.
    pub fn wait_for_space(&self, nonblock: bool) -> Result<(), Errno> {
        loop {
            if self.readers.load(Ordering::Acquire) == 0 {
                raise_sigpipe();
                return Err(Errno::EPIPE);
            }
            if self.free_pages() > 0 {
                return Ok(());
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.writable
                .wait_until_interruptible(None, || self.free_pages() > 0 || self.readers.load(Ordering::Acquire) == 0)
                .map_err(interrupted)?;
        }
    }

    /// Waits for data (`splice_from_pipe_next`): Ok(false) when the pipe
    /// is empty and has no writer left (end of file), EAGAIN when empty
    /// and `nonblock`.
    pub fn wait_for_data(&self, nonblock: bool) -> Result<bool, Errno> {
        loop {
            let writers_gone = self.writers.load(Ordering::Acquire) == 0;
            if !self.is_empty() {
                return Ok(true);
            }
            if writers_gone {
                return Ok(false);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.readable
                .wait_until_interruptible(None, || !self.is_empty() || self.writers.load(Ordering::Acquire) == 0)
                .map_err(interrupted)?;
        }
    }

    /// Appends `data` whole (splice has made sure of the room; a racing
    /// writer may overfill the pipe by its own write, never lose data).
    pub fn push(&self, data: &[u8]) -> Result<(), Errno> {
        if data.is_empty() {
            return Ok(());
        }
        let mut buf = self.lock_buf();
        buf.reserve(data.len())?;
        buf.push(data);
        drop(buf);
        self.readable.wake_all();
        self.read_pollee.notify(Events::READABLE);
        Ok(())
    }

    /// Copies up to `out.len()` bytes from the front without taking them
    /// (tee).
    pub fn peek(&self, out: &mut [u8]) -> usize {
        self.lock_buf().peek_with(out.len(), |src, at| {
            out[at..at + src.len()].copy_from_slice(src);
            src.len()
        })
    }

    /// Takes up to `out.len()` bytes from the front.
    pub fn take(&self, out: &mut [u8]) -> usize {
        let mut buf = self.lock_buf();
        let was_full = !self.has_room(buf.len());
        let n = buf.take(out.len(), |src, at| {
            out[at..at + src.len()].copy_from_slice(src);
            src.len()
        });
        let now_room = self.has_room(buf.len());
        drop(buf);
        if n > 0 {
            self.writable.wake_all();
            if was_full && now_room {
                self.write_pollee.notify(Events::WRITABLE);
            }
        }
        n
    }

    /// Puts back at the front what `take` took and could not be written
    /// out, so a short splice loses nothing.
    pub fn unread(&self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let mut buf = self.lock_buf();
        if buf.push_front(data).is_err() {
            return;
        }
        drop(buf);
        self.readable.wake_all();
        self.read_pollee.notify(Events::READABLE);
    }
}

/// A write found no reader: SIGPIPE for the calling thread.
fn raise_sigpipe() {
    if let Some(t) = crate::proc::current_task() {
        crate::proc::signal::send_to_task(&t, Siginfo::kill(sig::SIGPIPE, sig::SI_USER, t.process.pid, t.cred().uid));
    }
}

pub struct PipeEnd {
    pipe: Arc<Pipe>,
    write: bool,
}

impl PipeEnd {
    pub fn new(pipe: Arc<Pipe>, write: bool) -> PipeEnd {
        PipeEnd::register(pipe, write).0
    }

    /// Opens an end and returns, as of that moment, how many ends of the
    /// other kind are open and how often one was opened. Taken together
    /// under `open_lock`, so a FIFO open sees a partner that is already
    /// there even if it goes away again before the opener runs on.
    fn register(pipe: Arc<Pipe>, write: bool) -> (PipeEnd, usize, usize) {
        let (mine, others, other_opens) = {
            let _guard = pipe.open_lock.lock();
            if write {
                let mine = pipe.writers.fetch_add(1, Ordering::AcqRel) + 1;
                pipe.writer_opens.fetch_add(1, Ordering::AcqRel);
                (mine, pipe.readers.load(Ordering::Acquire), pipe.reader_opens.load(Ordering::Acquire))
            } else {
                let mine = pipe.readers.fetch_add(1, Ordering::AcqRel) + 1;
                pipe.reader_opens.fetch_add(1, Ordering::AcqRel);
                (mine, pipe.writers.load(Ordering::Acquire), pipe.writer_opens.load(Ordering::Acquire))
            }
        };
        pipe.end_changed(mine == 1);
        (PipeEnd { pipe, write }, others, other_opens)
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        let left = if self.write {
            self.pipe.writers.fetch_sub(1, Ordering::AcqRel) - 1
        } else {
            self.pipe.readers.fetch_sub(1, Ordering::AcqRel) - 1
        };
        self.pipe.end_changed(left == 0);
    }
}

/// A pair of ends for pipe(2).
pub fn new_pair() -> (Arc<dyn FileOps>, Arc<dyn FileOps>) {
    let pipe = Pipe::new();
    (Arc::new(PipeEnd::new(pipe.clone(), false)), Arc::new(PipeEnd::new(pipe, true)))
}

fn interrupted(e: Interrupted) -> Errno {
    match e {
        Interrupted::Signal => Errno::ERESTARTSYS,
        Interrupted::TimedOut => Errno::EAGAIN,
    }
}

/// Where a write's bytes come from: a kernel buffer (splice, the
/// staged paths) or the writer's user memory, copied straight into the
/// ring under its lock. A user copy cannot resolve a fault there; it stops,
/// and the write resolves the fault with the lock dropped and goes on.
enum Source<'a> {
    Kernel(&'a [u8]),
    User { addr: u64, len: usize, vm: &'a dyn Fn() -> Result<Vm, Errno> },
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Kernel(d) => d.len(),
            Source::User { len, .. } => *len,
        }
    }

    /// Fills `dst` from offset `at`; returns the bytes copied, short at a
    /// fault whose address goes to `fault`.
    fn copy(&self, dst: &mut [u8], at: usize, fault: &mut Option<u64>) -> usize {
        match self {
            Source::Kernel(d) => {
                dst.copy_from_slice(&d[at..at + dst.len()]);
                dst.len()
            }
            Source::User { addr, .. } => match uaccess::copy_in_nofault(dst, addr + at as u64) {
                Ok(()) => dst.len(),
                Err(stop) => {
                    *fault = Some(stop);
                    (stop - (addr + at as u64)) as usize
                }
            },
        }
    }
}

/// Where a read's bytes go: `Source`'s counterpart.
enum Dest<'a> {
    Kernel(&'a mut [u8]),
    User { addr: u64, len: usize, vm: &'a dyn Fn() -> Result<Vm, Errno> },
}

impl Dest<'_> {
    fn len(&self) -> usize {
        match self {
            Dest::Kernel(d) => d.len(),
            Dest::User { len, .. } => *len,
        }
    }

    fn copy(&mut self, src: &[u8], at: usize, fault: &mut Option<u64>) -> usize {
        match self {
            Dest::Kernel(d) => {
                d[at..at + src.len()].copy_from_slice(src);
                src.len()
            }
            Dest::User { addr, .. } => match uaccess::copy_out_nofault(*addr + at as u64, src) {
                Ok(()) => src.len(),
                Err(stop) => {
                    *fault = Some(stop);
                    (stop - (*addr + at as u64)) as usize
                }
            },
        }
    }

    /// Resolves the fault a user copy stopped at (EFAULT if it cannot be).
    fn fault_in(&self, at: u64) -> Result<(), Errno> {
        match self {
            Dest::User { vm, .. } => uaccess::fault_in(*vm, at, true),
            Dest::Kernel(_) => Err(Errno::EFAULT),
        }
    }
}

impl PipeEnd {
    fn read_to(&self, mut dst: Dest, nonblock: bool) -> Result<usize, Errno> {
        if self.write {
            return Err(Errno::EBADF);
        }
        let len = dst.len();
        if len == 0 {
            return Ok(0);
        }
        let p = &self.pipe;
        let mut done = 0;
        loop {
            // Look for writers *before* the buffer: a writer that writes and
            // closes between the two checks must not turn its last bytes
            // into an early end of file (its writes happen before its
            // close, so seeing the close means seeing the bytes).
            let writers_gone = p.writers.load(Ordering::Acquire) == 0;
            let mut fault = None;
            let mut buf = p.lock_buf();
            if !buf.is_empty() {
                let was_full = !p.has_room(buf.len());
                let n = buf.take(len - done, |src, at| dst.copy(src, done + at, &mut fault));
                let now_room = p.has_room(buf.len());
                drop(buf);
                done += n;
                if n > 0 {
                    p.writable.wake_all();
                    // As Linux wakes writers only when the pipe was full:
                    // an edge-triggered writer hears of room once.
                    if was_full && now_room {
                        p.write_pollee.notify(Events::WRITABLE);
                    }
                }
                let Some(at) = fault else { return Ok(done) };
                // The reader's buffer was not mapped yet: map it and read
                // on (what was read so far stays read).
                if let Err(e) = dst.fault_in(at) {
                    return if done > 0 { Ok(done) } else { Err(e) };
                }
                continue;
            }
            drop(buf);
            if done > 0 || writers_gone {
                return Ok(done);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            p.readable
                .wait_until_interruptible(None, || !p.lock_buf().is_empty() || p.writers.load(Ordering::Acquire) == 0)
                .map_err(interrupted)?;
        }
    }

    fn write_from(&self, src: Source, nonblock: bool) -> Result<usize, Errno> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let p = &self.pipe;
        let total = src.len();
        // Small writes go in whole or not at all.
        let atomic = total <= PIPE_BUF;
        let mut written = 0;
        while written < total {
            if p.readers.load(Ordering::Acquire) == 0 {
                raise_sigpipe();
                return if written > 0 { Ok(written) } else { Err(Errno::EPIPE) };
            }
            let left = total - written;
            let need = if atomic { left } else { 1 };
            let mut fault = None;
            {
                let mut buf = p.lock_buf();
                let room = p.capacity.load(Ordering::Relaxed).saturating_sub(buf.len());
                if room >= need {
                    let n = room.min(left);
                    if let Err(e) = buf.reserve(n) {
                        return if written > 0 { Ok(written) } else { Err(e) };
                    }
                    let added = buf.append(n, atomic, |dst, at| src.copy(dst, written + at, &mut fault));
                    drop(buf);
                    written += added;
                    if added > 0 {
                        p.readable.wake_all();
                        p.read_pollee.notify(Events::READABLE);
                    }
                    if let (Some(at), Source::User { vm, .. }) = (fault, &src) {
                        // The writer's buffer was not mapped yet (or is
                        // not readable): resolve it unlocked and go on.
                        if let Err(e) = uaccess::fault_in(*vm, at, false) {
                            return if written > 0 { Ok(written) } else { Err(e) };
                        }
                    }
                    continue;
                }
            }
            if nonblock {
                return if written > 0 { Ok(written) } else { Err(Errno::EAGAIN) };
            }
            let wait = p.writable.wait_until_interruptible(None, || {
                p.capacity.load(Ordering::Relaxed).saturating_sub(p.lock_buf().len()) >= need
                    || p.readers.load(Ordering::Acquire) == 0
            });
            if let Err(e) = wait {
                return if written > 0 { Ok(written) } else { Err(interrupted(e)) };
            }
        }
        Ok(written)
    }
}

impl FileOps for PipeEnd {
    fn read_at(&self, _offset: u64, out: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        self.read_to(Dest::Kernel(out), nonblock)
    }

    fn write_at(&self, _offset: u64, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.write_from(Source::Kernel(data), nonblock)
    }

    fn user_direct(&self) -> bool {
        true
    }

    fn read_user(&self, vm: &dyn Fn() -> Result<Vm, Errno>, addr: u64, len: usize, nb: bool) -> Result<usize, Errno> {
        self.read_to(Dest::User { addr, len, vm }, nb)
    }

    fn write_user(&self, vm: &dyn Fn() -> Result<Vm, Errno>, addr: u64, len: usize, nb: bool) -> Result<usize, Errno> {
        self.write_from(Source::User { addr, len, vm }, nb)
    }

    fn fasync(&self) -> bool {
        true
    }

    fn seekable(&self) -> bool {
        false
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        match cmd {
            c::FIONREAD => {
                let n = self.pipe.lock_buf().len() as u32;
                uaccess::write_u32(vm, arg, n)?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        let p = &self.pipe;
        if let Some(table) = table {
            table.register(if self.write { &p.write_pollee } else { &p.read_pollee });
        }
        // The other side's count before the buffer, as in `read_at`: a
        // hang-up seen here comes with every byte written before it.
        let writers_gone = p.writers.load(Ordering::Acquire) == 0;
        let len = p.len.load(Ordering::Acquire);
        let mut r = Events::EMPTY;
        if self.write {
            if p.has_room(len) {
                r |= Events::WRITABLE;
            }
            if p.readers.load(Ordering::Acquire) == 0 {
                r |= Events::ERR;
            }
        } else {
            if len > 0 {
                r |= Events::READABLE;
            }
            if writers_gone {
                r |= Events::HUP;
            }
        }
        r
    }

    fn mode(&self) -> u32 {
        S_IFIFO | 0o600
    }

    fn as_pipe(&self) -> Option<&Arc<Pipe>> {
        Some(&self.pipe)
    }

    fn ino(&self) -> Option<u64> {
        Some(pipe_ino(&self.pipe))
    }

    fn pipe_size(&self) -> Option<usize> {
        Some(self.pipe.capacity.load(Ordering::Relaxed))
    }

    fn set_pipe_size(&self, size: u64, privileged: bool) -> Result<usize, Errno> {
        self.pipe.set_size(size, privileged)
    }
}

/// The inode number both ends of a pipe report.
fn pipe_ino(pipe: &Arc<Pipe>) -> u64 {
    (Arc::as_ptr(pipe) as *const () as usize as u64 >> 4) & 0xff_ffff
}

/// Opens a FIFO: read-only opens wait for a writer and write-only opens
/// for a reader, unless O_NONBLOCK (then a lone writer gets ENXIO).
pub fn open_fifo(pipe: Arc<Pipe>, flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    let nonblock = flags & c::O_NONBLOCK != 0;
    match flags & 3 {
        c::O_RDONLY => {
            let (end, writers, seen) = PipeEnd::register(pipe.clone(), false);
            // Linux waits only when no writer was there at open time, and
            // then for a writer to open (not to still be open when we look).
            if !nonblock && writers == 0 {
                block_on(&pipe.read_pollee, Events::READABLE, || {
                    if pipe.writer_opens.load(Ordering::Acquire) != seen {
                        Ok(())
                    } else {
                        Err(Errno::EAGAIN)
                    }
                })?;
            }
            Ok(Arc::new(end))
        }
        c::O_WRONLY => {
            if nonblock && pipe.readers.load(Ordering::Acquire) == 0 {
                return Err(Errno::ENXIO);
            }
            let (end, readers, seen) = PipeEnd::register(pipe.clone(), true);
            if !nonblock && readers == 0 {
                block_on(&pipe.write_pollee, Events::WRITABLE, || {
                    if pipe.reader_opens.load(Ordering::Acquire) != seen {
                        Ok(())
                    } else {
                        Err(Errno::EAGAIN)
                    }
                })?;
            }
            Ok(Arc::new(end))
        }
        // O_RDWR never blocks (Linux behaviour): it is both ends.
        _ => Ok(Arc::new(PipeBoth { read: PipeEnd::new(pipe.clone(), false), write: PipeEnd::new(pipe, true) })),
    }
}

/// A FIFO opened O_RDWR.
struct PipeBoth {
    read: PipeEnd,
    write: PipeEnd,
}

impl FileOps for PipeBoth {
    fn read_at(&self, o: u64, buf: &mut [u8], nb: bool) -> Result<usize, Errno> {
        self.read.read_at(o, buf, nb)
    }
    fn write_at(&self, o: u64, buf: &[u8], nb: bool) -> Result<usize, Errno> {
        self.write.write_at(o, buf, nb)
    }
    fn user_direct(&self) -> bool {
        true
    }
    fn read_user(&self, vm: &dyn Fn() -> Result<Vm, Errno>, addr: u64, len: usize, nb: bool) -> Result<usize, Errno> {
        self.read.read_user(vm, addr, len, nb)
    }
    fn write_user(&self, vm: &dyn Fn() -> Result<Vm, Errno>, addr: u64, len: usize, nb: bool) -> Result<usize, Errno> {
        self.write.write_user(vm, addr, len, nb)
    }
    fn fasync(&self) -> bool {
        true
    }
    fn seekable(&self) -> bool {
        false
    }
    fn poll(&self, mut table: Option<&mut PollTable>) -> Events {
        self.read.poll(table.as_deref_mut()) | self.write.poll(table)
    }
    fn as_pipe(&self) -> Option<&Arc<Pipe>> {
        Some(&self.read.pipe)
    }
    fn ino(&self) -> Option<u64> {
        self.read.ino()
    }
    fn pipe_size(&self) -> Option<usize> {
        self.read.pipe_size()
    }
    fn set_pipe_size(&self, size: u64, privileged: bool) -> Result<usize, Errno> {
        self.read.set_pipe_size(size, privileged)
    }
    fn mode(&self) -> u32 {
        S_IFIFO | 0o600
    }
}
