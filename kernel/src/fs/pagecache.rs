//! The page cache of files that live on a disk, shared by every such file
//! system: a file's pages in frames (a backed [`PageStore`], the same
//! index tmpfs keeps its data in), filled from the file system on a miss
//! with readahead, dirtied by `write` and by shared mappings, written
//! back by fsync and friends, by the `writeback` thread, and by writers
//! over the dirty limit, and dropped under memory pressure.
//!
//! A file system plugs in with two traits: [`Backend`] (how to read and
//! write a file's bytes on the disk, called with the file's cache lock
//! held) and [`CachedFile`] (what the writeback thread and reclaim may ask
//! of a file with pages here). Files with pages are held by the registry
//! (strong references, like Linux's inode cache keeping inodes that have
//! pages), so their dirty pages survive the last close; a file whose cache
//! empties leaves it.
//!
//! Locking: each file's pages sit behind one sleeping mutex, taken before
//! the file system's own lock (the backend is called under it), never
//! after. The registry is a spin lock held only to copy or change the
//! list. Reclaim from the frame allocator (which may run with any lock
//! held) only `try_lock`s a file's cache and drops clean pages no mapping
//! holds; dirty pages are written first only by callers that may sleep
//! (the OOM path, the writeback thread, throttled writers).
//!
//! Linux's figures, read from /proc/sys/vm each time: dirty pages older
//! than dirty_expire_centisecs (30 s) are written by the thread, which
//! writes every dirty_writeback_centisecs (5 s); past [`dirty_background`]
//! (dirty_background_ratio, 10% of memory) it writes everything, and a
//! writer past [`dirty_limit`] (dirty_ratio, 20%) writes its own file back
//! before its call returns.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::frame::{FreshFrame, UserFrame};
use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::pagestore::{PageBudget, PageStore};
use super::procfs::sys as sysctl;
use crate::mm::PAGE_SIZE;
use crate::sync::Mutex;

const PAGE: usize = PAGE_SIZE as usize;
/// The first readahead window of a sequential reader (a read at the
/// file's start, or one after a random read that the next continues).
const READAHEAD_MIN: u64 = 8;
/// The largest readahead window, 1 MiB (Linux's default read_ahead_kb is
/// 128, but Linux reads ahead asynchronously and Kiln waits for each fill:
/// a 1 MiB sequential read waits once instead of twice; under TCG each
/// request costs a VM exit too).
const READAHEAD_MAX: u64 = 256;
/// Pages written back in one call of the file system (its buffer is one
/// heap object of whole frames, which must be found even when memory is
/// short and fragmented).
const WRITEBACK_RUN: usize = 32;
/// 10 ms, the unit of dirty_expire_centisecs and dirty_writeback_centisecs.
const CENTISEC_NS: u64 = 10_000_000;
/// How often the thread looks at most (dirty_writeback_centisecs is read
/// each time it wakes).
const WRITEBACK_TICK_NS: u64 = 500_000_000;

/// dirty_expire_centisecs (/proc/sys/vm, 3000 by default): a dirty page
/// this old is written by the thread.
fn dirty_expire_ns() -> u64 {
    (sysctl::DIRTY_EXPIRE.get().max(0) as u64).saturating_mul(CENTISEC_NS)
}

/// dirty_writeback_centisecs (500 by default): how often the thread
/// writes expired pages; 0 turns the periodic writeback off, as on Linux.
fn writeback_interval_ns() -> Option<u64> {
    match sysctl::DIRTY_WRITEBACK.get().max(0) as u64 {
        0 => None,
        cs => Some(cs.saturating_mul(CENTISEC_NS)),
    }
}

/// How a file system reads and writes a cached file's bytes on its disk.
pub trait Backend {
    /// The file's size as the file system knows it (when the cache loads).
    fn disk_size(&self) -> Result<u64, Errno>;
    /// Reads bytes at `offset` into `buf`; bytes past the file's end on
    /// the disk are left zero.
    fn read_pages(&self, offset: u64, buf: &mut [u8]) -> Result<(), Errno>;
    /// Reads bytes at `offset` into `pages` laid end to end (fresh
    /// frames of the cache: the disk's data lands in them directly).
    /// Returns how many bytes it wrote from the start: the rest (past the
    /// file's end on the disk) the caller zeroes.
    fn read_into_pages(&self, offset: u64, pages: &mut [&mut [u8]]) -> Result<usize, Errno>;
    /// Writes cached bytes back at `offset`, growing the file on the disk
    /// to the end of `data` (the cache's size), leaving the times alone;
    /// `reserved` blocks reserved for these pages are used by it.
    fn write_pages(&self, offset: u64, data: &[u8], reserved: u64) -> Result<(), Errno>;
    /// The file system's block size (at most a page).
    fn block_size(&self) -> u64;
    /// The blocks of [first, end) the file has none for on the disk, as
    /// ranges: writing them back allocates.
    fn holes(&self, first: u64, end: u64) -> Result<Vec<(u64, u64)>, Errno>;
    /// Reserves `blocks` for data written into the cache over holes
    /// (delayed allocation); ENOSPC when the disk cannot promise them.
    fn reserve(&self, blocks: u64) -> Result<(), Errno>;
    /// Gives reserved blocks back (their pages went without writeback).
    fn release(&self, blocks: u64);
}

/// What writeback and reclaim ask of a file with cached pages.
pub trait CachedFile: Send + Sync {
    /// Writes back the pages dirtied at or before `older_than`
    /// (monotonic ns); returns how many were written.
    fn writeback(&self, older_than: u64) -> Result<u64, Errno>;
    /// Drops up to `max` clean unmapped pages, sleeping for the lock when
    /// `wait`, else skipping a busy file.
    fn drop_clean(&self, max: u64, wait: bool) -> u64;
    /// Leaves the registry if it holds no page (checked and decided under
    /// the file's cache lock, so a page added meanwhile registers again).
    fn try_leave(&self) -> bool;
    /// The file system instance it belongs to (for syncfs and umount).
    fn owner(&self) -> usize;
}

struct State {
    store: Option<PageStore>,
    /// Where the last read ended (page), and the readahead window.
    ra_next: u64,
    ra_pages: u64,
    /// The file has no name left: its pages live while it is open and go
    /// with it (it stays out of the registry, which would keep it).
    orphan: bool,
}

pub struct PageCache {
    state: Mutex<State>,
    /// In the registry (set under the state lock when pages appear).
    registered: AtomicBool,
    /// The file this cache belongs to, to register it.
    owner: hal::sync::Once<alloc::sync::Weak<dyn CachedFile>>,
    /// The disk blocks its pages hold reserved, readable without the lock
    /// (by the file's `Drop`, which gives them back).
    reserved: AtomicU64,
}

impl Default for PageCache {
    fn default() -> Self {
        Self::new()
    }
}

fn loaded<'a>(st: &'a mut State, be: &dyn Backend) -> Result<&'a mut PageStore, Errno> {
    if st.store.is_none() {
        let size = be.disk_size()?;
        let budget = Arc::try_new(PageBudget::new(u64::MAX)).map_err(|_| Errno::ENOMEM)?;
        st.store = Some(PageStore::new_backed(budget, size));
    }
    Ok(st.store.as_mut().expect("just loaded"))
}

/// A zeroed buffer of up to `pages` pages: fewer (down to one) when
/// memory is short, after clean pages were dropped to make room. With
/// `wait` (writeback, which frees memory and must not fail for want of
/// it) a single page that cannot be had is waited for, up to
/// [`MEMORY_WAIT_NS`], while other writers and the block layer let go.
fn buffer(pages: usize, wait: bool) -> Result<(Vec<u8>, usize), Errno> {
    reclaim_if_low(pages as u64);
    let mut want = pages;
    let mut waited = 0;
    loop {
        let mut buf = Vec::new();
        if buf.try_reserve_exact(want * PAGE).is_ok() {
            buf.resize(want * PAGE, 0);
            return Ok((buf, want));
        }
        reclaim_clean(64);
        if want == 1 {
            if !wait || waited >= MEMORY_WAIT_NS {
                return Err(Errno::ENOMEM);
            }
            crate::sched::sleep_ns(MEMORY_RETRY_NS);
            waited += MEMORY_RETRY_NS;
        }
        want = (want / 4).max(1);
    }
}

/// How long writeback waits for a buffer page before giving up.
const MEMORY_WAIT_NS: u64 = 30_000_000_000;
const MEMORY_RETRY_NS: u64 = 10_000_000;

/// Before taking `want` frames with `store` locked: when memory is low,
/// drops clean pages of other files and then of this one, outside the
/// pages [first, end) the caller is working on (reclaim cannot take this
/// file's lock, which the caller holds).
fn make_room(store: &mut PageStore, first: u64, end: u64, want: u64) {
    if hal::mm::free_frame_count() >= low_watermark() + want {
        return;
    }
    let freed = reclaim_clean(want.max(32));
    if freed < want {
        let more = want.max(32) - freed;
        let got = store.drop_clean(0, first, more);
        store.drop_clean(end, u64::MAX, more - got);
    }
}

/// Reads the missing pages of [first, end) from the disk, a run at a time,
/// straight into fresh frames (the driver copies from its DMA slot into
/// each; no buffer between, nothing zeroed that the disk then fills).
fn fill(store: &mut PageStore, be: &dyn Backend, first: u64, end: u64) -> Result<(), Errno> {
    make_room(store, first, end, (end - first).min(READAHEAD_MAX));
    let mut from = first;
    while let Some(start) = store.first_missing(from, end) {
        let mut stop = start + 1;
        while stop < end && stop - start < READAHEAD_MAX && !store.is_loaded(stop) {
            stop += 1;
        }
        let mut frames = Vec::new();
        frames.try_reserve_exact((stop - start) as usize).map_err(|_| Errno::ENOMEM)?;
        while frames.len() < (stop - start) as usize {
            match FreshFrame::alloc() {
                Ok(f) => frames.push(f),
                // Memory is short: a shorter run (at least one page).
                Err(_) if !frames.is_empty() => break,
                Err(_) => {
                    reclaim_clean(64);
                    frames.push(FreshFrame::alloc().map_err(|_| Errno::ENOMEM)?);
                }
            }
        }
        let stop = start + frames.len() as u64;
        let got = {
            let mut pages = Vec::new();
            pages.try_reserve_exact(frames.len()).map_err(|_| Errno::ENOMEM)?;
            pages.extend(frames.iter_mut().map(FreshFrame::bytes_mut));
            be.read_into_pages(start * PAGE_SIZE, &mut pages)?
        };
        for (i, mut frame) in frames.into_iter().enumerate() {
            // Past what the disk gave (the file's end there): zeros, and
            // nothing of the frame's last owner.
            let filled = got.saturating_sub(i * PAGE).min(PAGE);
            if filled < PAGE {
                frame.bytes_mut()[filled..].fill(0);
            }
            if let Err(e) = store.insert_fresh(start + i as u64, frame) {
                // Memory is short: what was read so far stays.
                if i == 0 {
                    return Err(e);
                }
                return Ok(());
            }
        }
        from = stop;
    }
    Ok(())
}

/// Reserves disk blocks for a write of [offset, end): for each page it
/// touches, the blocks of that page (up to the file's new end) the file
/// has none for on the disk, less those the page holds reserved already.
/// Returns the blocks reserved per page from the first; shorter than the
/// pages touched when the disk could not promise more (ENOSPC if it could
/// not promise the first).
fn reserve_for(store: &PageStore, be: &dyn Backend, offset: u64, end: u64) -> Result<Vec<u64>, Errno> {
    let bs = be.block_size().clamp(512, PAGE_SIZE);
    let per_page = PAGE_SIZE / bs;
    let (first, last) = (offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
    let size_blocks = store.size().max(end).div_ceil(bs);
    let mut deltas = Vec::new();
    deltas.try_reserve_exact((last - first) as usize).map_err(|_| Errno::ENOMEM)?;
    let in_size = |index: u64| (index * per_page).min(size_blocks)..((index + 1) * per_page).min(size_blocks);
    // Pages holding a reservation for every block they have in the file
    // need no more (the common case of rewriting a page still dirty).
    if (first..last).all(|i| store.reserved_of(i) >= in_size(i).end - in_size(i).start) {
        deltas.resize((last - first) as usize, 0);
        return Ok(deltas);
    }
    let holes = be.holes(first * per_page, (last * per_page).min(size_blocks))?;
    for index in first..last {
        let blocks = in_size(index);
        let unmapped: u64 = holes.iter().map(|&(a, b)| b.min(blocks.end).saturating_sub(a.max(blocks.start))).sum();
        deltas.push(unmapped.saturating_sub(store.reserved_of(index)));
    }
    let total: u64 = deltas.iter().sum();
    if total == 0 || be.reserve(total).is_ok() {
        return Ok(deltas);
    }
    // Not all: as many pages as the disk can promise, one by one.
    for (i, &d) in deltas.iter().enumerate() {
        if d == 0 {
            continue;
        }
        if let Err(e) = be.reserve(d) {
            if i == 0 {
                return Err(e);
            }
            deltas.truncate(i);
            return Ok(deltas);
        }
    }
    Ok(deltas)
}

impl PageCache {
    pub const fn new() -> PageCache {
        PageCache {
            state: Mutex::new(State { store: None, ra_next: u64::MAX, ra_pages: READAHEAD_MIN, orphan: false }),
            registered: AtomicBool::new(false),
            owner: hal::sync::Once::new(),
            reserved: AtomicU64::new(0),
        }
    }

    /// Names the file this cache belongs to (once, after its `Arc` exists).
    pub fn set_owner(&self, owner: alloc::sync::Weak<dyn CachedFile>) {
        self.owner.set(owner);
    }

    /// Under the state lock: whether pages appeared in an unregistered
    /// cache, which the caller then registers once the lock is let go.
    fn claim(&self, st: &State) -> bool {
        !st.orphan
            && st.store.as_ref().is_some_and(|s| s.frame_count() > 0)
            && !self.registered.swap(true, Ordering::AcqRel)
    }

    /// After a change to the store's reservations: the lock-free copy.
    fn note_reserved(&self, store: &PageStore) {
        self.reserved.store(store.reserved_total(), Ordering::Relaxed);
    }

    /// Blocks its pages hold reserved (for the file's last drop).
    pub fn reserved_blocks(&self) -> u64 {
        self.reserved.load(Ordering::Relaxed)
    }

    fn join(&self, claimed: bool) {
        if claimed {
            if let Some(me) = self.owner.get().and_then(alloc::sync::Weak::upgrade) {
                register(me);
            }
        }
    }

    /// See [`CachedFile::try_leave`].
    pub fn try_leave(&self) -> bool {
        let Some(st) = self.state.try_lock() else { return false };
        if st.orphan {
            return false;
        }
        if st.store.as_ref().is_some_and(|s| s.frame_count() > 0) {
            return false;
        }
        self.registered.store(false, Ordering::Release);
        true
    }

    /// The size the cache knows (newer than the disk's), if loaded.
    pub fn size(&self) -> Option<u64> {
        self.state.lock().store.as_ref().map(PageStore::size)
    }

    pub fn read(&self, be: &dyn Backend, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut st = self.state.lock();
        let Some(end) = self.load_for_read(&mut st, be, offset, buf.len())? else { return Ok(0) };
        let n = st.store.as_ref().map_or(0, |s| s.read(offset, &mut buf[..(end - offset) as usize]));
        let claimed = self.claim(&st);
        drop(st);
        self.join(claimed);
        Ok(n)
    }

    /// Makes the pages of a read of `len` bytes at `offset` present
    /// (with readahead on a miss) and notes where it ends for the next
    /// one's readahead. Returns the read's end (clipped to the size), or
    /// `None` when nothing is to be read.
    fn load_for_read(&self, st: &mut State, be: &dyn Backend, offset: u64, len: usize) -> Result<Option<u64>, Errno> {
        let (ra_next, ra_pages) = (st.ra_next, st.ra_pages);
        let store = loaded(st, be)?;
        let size = store.size();
        if offset >= size || len == 0 {
            return Ok(None);
        }
        let end = offset.saturating_add(len as u64).min(size);
        let (first, last) = (offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
        let mut window = ra_pages;
        if store.first_missing(first, last).is_some() {
            // Sequential reads double the window; others start over. A
            // read elsewhere than where the last ended or the file's start
            // reads only its own pages (Linux's "standalone, small random
            // read"): a random reader would pay for pages it never reads.
            let sequential = first == ra_next || first == ra_next.wrapping_sub(1);
            window = if sequential { (ra_pages * 2).min(READAHEAD_MAX) } else { READAHEAD_MIN };
            let ahead = if sequential || first == 0 { window } else { 1 };
            let ra_end = last.max(first + ahead).min(size.div_ceil(PAGE_SIZE));
            fill(store, be, first, ra_end)?;
        }
        st.ra_next = last;
        st.ra_pages = window;
        Ok(Some(end))
    }

    /// read(2) of up to `len` bytes at `offset` straight into user memory
    /// at `addr`: one copy, cached frame to user page, with no kernel
    /// buffer between. The copy runs under the cache lock without
    /// resolving faults (a fault on a mapping of this very file would take
    /// the lock again); at a fault the lock is let go, the page faulted in
    /// through `vm`, and the read goes on. A fault that cannot be resolved
    /// ends it: EFAULT, or the bytes copied before it.
    pub fn read_user(
        &self,
        be: &dyn Backend,
        offset: u64,
        addr: u64,
        len: usize,
        vm: &dyn Fn() -> Result<crate::mm::Vm, Errno>,
    ) -> Result<usize, Errno> {
        if !crate::mm::uaccess::access_ok(addr, len) {
            return Err(Errno::EFAULT);
        }
        let mut done = 0usize;
        while done < len {
            // A window at a time, so a huge read does not load the whole
            // range before it copies (or hold the lock meanwhile).
            let want = (len - done).min(READAHEAD_MAX as usize * PAGE);
            let mut st = self.state.lock();
            let pos = offset + done as u64;
            let Some(end) = self.load_for_read(&mut st, be, pos, want)? else { break };
            let store = st.store.as_ref().ok_or(Errno::EIO)?;
            let (copied, fault) = store.copy_to_user(pos, end, addr + done as u64);
            done += copied;
            let claimed = self.claim(&st);
            drop(st);
            self.join(claimed);
            let Some(at) = fault else {
                if copied < want {
                    break; // the end of the file
                }
                continue;
            };
            if at == u64::MAX {
                // A page memory pressure kept out of the cache: short.
                return Ok(done);
            }
            if crate::mm::uaccess::fault_in(vm, at, true).is_err() {
                return if done > 0 { Ok(done) } else { Err(Errno::EFAULT) };
            }
        }
        Ok(done)
    }

    /// Writes `data` at `offset` into the cache (pages dirty); partial
    /// pages the disk holds are read first. Returns the bytes written.
    pub fn write(&self, be: &dyn Backend, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        let (n, claimed) = {
            let mut st = self.state.lock();
            let store = loaded(&mut st, be)?;
            let size = store.size();
            let first = offset / PAGE_SIZE;
            let deltas = reserve_for(store, be, offset, end)?;
            // A disk that could not promise every page: the write stops
            // short at the first page it could not (ENOSPC if that is the
            // first), as Linux's delayed allocation does.
            let end = end.min((first + deltas.len() as u64) * PAGE_SIZE);
            let data = &data[..(end - offset) as usize];
            make_room(store, first, end.div_ceil(PAGE_SIZE), data.len().div_ceil(PAGE) as u64);
            for (edge, partial) in [(offset, !offset.is_multiple_of(PAGE_SIZE)), (end, !end.is_multiple_of(PAGE_SIZE))]
            {
                let index = edge / PAGE_SIZE;
                if partial && index * PAGE_SIZE < size && !store.is_loaded(index) {
                    fill(store, be, index, index + 1)?;
                }
            }
            let written = match store.write(offset, data) {
                Ok(n) => Ok(n),
                Err(Errno::ENOMEM) => {
                    drop(st);
                    // Out of frames: write this file back, drop clean
                    // pages everywhere, and try once more.
                    let _ = self.writeback(be, 0, u64::MAX, u64::MAX);
                    shrink(64);
                    st = self.state.lock();
                    loaded(&mut st, be).and_then(|s| s.write(offset, data).map_err(|_| Errno::ENOSPC))
                }
                Err(e) => Err(e),
            };
            // The reservations go to the pages written; the rest back.
            let written_end = offset + *written.as_ref().unwrap_or(&0) as u64;
            let mut unused = 0;
            match st.store.as_mut() {
                Some(store) => {
                    for (i, &d) in deltas.iter().enumerate() {
                        let index = first + i as u64;
                        if d > 0 && (index * PAGE_SIZE >= written_end || !store.add_reserved(index, d)) {
                            unused += d;
                        }
                    }
                    self.note_reserved(store);
                }
                None => unused = deltas.iter().sum(),
            }
            if unused > 0 {
                be.release(unused);
            }
            (written?, self.claim(&st))
        };
        self.join(claimed);
        self.throttle(be);
        Ok(n)
    }

    /// A writer past the dirty limit writes its own file back (Linux's
    /// balance_dirty_pages); past the background limit the thread is woken.
    fn throttle(&self, be: &dyn Backend) {
        let dirty = super::pagestore::dirty_pages();
        if dirty > dirty_limit() {
            if let Err(e) = self.writeback(be, 0, u64::MAX, u64::MAX) {
                log::warn!("pagecache: throttled writeback failed: {}", e.name());
            }
            // Other files' pages still keep the total over: Linux's writer
            // waits until the flusher brings it under; this one writes
            // them itself (as `shrink`, from a context that may sleep).
            for f in snapshot() {
                if super::pagestore::dirty_pages() <= dirty_limit() {
                    break;
                }
                let _ = f.writeback(u64::MAX);
            }
        } else if dirty > dirty_background() {
            KICK.store(true, Ordering::Relaxed);
        }
    }

    /// Truncation: the cache drops pages past `size` and zeroes the rest
    /// of the last one; `disk` makes the same change on the disk.
    pub fn truncate(&self, be: &dyn Backend, size: u64, disk: impl FnOnce() -> Result<(), Errno>) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        disk()?;
        let before = store.reserved_total();
        store.truncate(size);
        let after = store.reserved_total();
        self.note_reserved(store);
        if before > after {
            be.release(before - after);
        }
        Ok(())
    }

    /// fallocate gave blocks to [offset, end) on the disk: the pages
    /// wholly on those blocks need no reservation any more (their
    /// writeback allocates nothing), so it goes back, as ext4 gives back a
    /// delayed block that fallocate allocated.
    pub fn allocated(&self, be: &dyn Backend, offset: u64, end: u64) {
        let bs = be.block_size().clamp(512, PAGE_SIZE);
        let (lo, hi) = (offset / bs * bs, end.div_ceil(bs).saturating_mul(bs));
        let (first, last) = (lo.div_ceil(PAGE_SIZE), hi / PAGE_SIZE);
        let mut st = self.state.lock();
        let Some(store) = st.store.as_mut() else { return };
        let freed = store.reserved_in(first, last);
        if freed > 0 {
            store.clear_reserved(first, last);
            self.note_reserved(store);
            be.release(freed);
        }
    }

    /// fallocate's modes that change the bytes (punch, zero, collapse,
    /// insert). Every dirty page is written back first, so the disk holds
    /// the file as the cache does (its size too) and no dirty page is
    /// later written over the change; `disk` then makes the change. The
    /// cache follows: with `shifted` (collapse, insert: bytes moved) every
    /// page from the one holding `offset` goes; otherwise the whole pages
    /// of [offset, end) go and the parts at its edges are zeroed. The size
    /// is the disk's after. Pages that go while mapped stay with their
    /// mappings until the caller unmaps them (`fs::truncate`).
    pub fn change_range(
        &self,
        be: &dyn Backend,
        offset: u64,
        end: u64,
        shifted: bool,
        disk: impl FnOnce() -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        self.write_dirty(store, be, 0, u64::MAX, u64::MAX)?;
        disk()?;
        let before = store.reserved_total();
        if shifted {
            store.punch(offset / PAGE_SIZE, u64::MAX);
        } else {
            store.clear_range(offset, end);
        }
        store.set_size(be.disk_size()?);
        let after = store.reserved_total();
        self.note_reserved(store);
        if before > after {
            be.release(before - after);
        }
        Ok(())
    }

    /// The size grew on the disk (fallocate): the cache follows.
    pub fn grew(&self, size: u64) {
        if let Some(s) = self.state.lock().store.as_mut() {
            if size > s.size() {
                s.set_size(size);
            }
        }
    }

    /// Writes back the dirty pages of [first, end) dirtied at or before
    /// `older_than`, a run of contiguous pages per call of the backend.
    pub fn writeback(&self, be: &dyn Backend, first: u64, end: u64, older_than: u64) -> Result<u64, Errno> {
        let mut st = self.state.lock();
        let Some(store) = st.store.as_mut() else { return Ok(0) };
        self.write_dirty(store, be, first, end, older_than)
    }

    /// [`PageCache::writeback`] with the store locked.
    fn write_dirty(
        &self,
        store: &mut PageStore,
        be: &dyn Backend,
        first: u64,
        end: u64,
        older_than: u64,
    ) -> Result<u64, Errno> {
        let dirty = store.dirty_in(first, end, older_than);
        if dirty.is_empty() {
            return Ok(0);
        }
        let size = store.size();
        let (mut buf, run) = buffer(WRITEBACK_RUN, true)?;
        let mut written = 0;
        let mut i = 0;
        while i < dirty.len() {
            let start = dirty[i];
            let mut j = i + 1;
            while j < dirty.len() && dirty[j] == dirty[j - 1] + 1 && j - i < run {
                j += 1;
            }
            let pages = j - i;
            buf.truncate(pages * PAGE);
            buf.resize(pages * PAGE, 0);
            for (k, chunk) in buf.chunks_mut(PAGE).enumerate() {
                store.copy_page(start + k as u64, chunk);
            }
            let off = start * PAGE_SIZE;
            let len = (size.saturating_sub(off) as usize).min(buf.len());
            let reserved = store.reserved_in(start, start + pages as u64);
            PageStore::note_writeback(pages as u64, true);
            let result = if len > 0 { be.write_pages(off, &buf[..len], reserved) } else { Ok(()) };
            PageStore::note_writeback(pages as u64, false);
            result?;
            if len == 0 && reserved > 0 {
                // Pages past the end (a truncate raced): nothing to use.
                be.release(reserved);
            }
            store.clear_reserved(start, start + pages as u64);
            self.note_reserved(store);
            for k in 0..pages as u64 {
                store.mark_clean(start + k);
            }
            written += pages as u64;
            i = j;
        }
        Ok(written)
    }

    /// An O_DIRECT read of up to `buf.len()` bytes at `offset`, from the
    /// disk: the range's dirty pages are written back first (so the disk
    /// holds what a buffered read would see), and the read stops at the
    /// file's end. The bytes go from the device into `buf` (the block
    /// layer's own DMA buffers between), never into the cache.
    pub fn read_direct(&self, be: &dyn Backend, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        let size = store.size();
        if offset >= size || buf.is_empty() {
            return Ok(0);
        }
        let end = offset.saturating_add(buf.len() as u64).min(size);
        self.write_dirty(store, be, offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE), u64::MAX)?;
        let n = (end - offset) as usize;
        // Pages between the disk's end and the cache's that are not dirty
        // were never written: zeros, which the backend leaves there.
        buf[..n].fill(0);
        be.read_pages(offset, &mut buf[..n])?;
        Ok(n)
    }

    /// An O_DIRECT write of `data` at `offset` to the disk. The range's
    /// dirty pages are written back and its clean ones dropped first, so
    /// no cached copy goes stale; blocks over holes are reserved as a
    /// buffered write reserves them (ENOSPC when the disk cannot promise
    /// them). `None` when a page of the range is still mapped (a mapping
    /// holds its frame, which cannot be dropped): the caller writes
    /// through the cache instead, as Linux falls back to a buffered write
    /// when it cannot invalidate the range.
    pub fn write_direct(&self, be: &dyn Backend, offset: u64, data: &[u8]) -> Result<Option<usize>, Errno> {
        if data.is_empty() {
            return Ok(Some(0));
        }
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        let (first, last) = (offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
        self.write_dirty(store, be, first, last, u64::MAX)?;
        store.drop_clean(first, last, u64::MAX);
        if store.any_in(first, last) {
            return Ok(None);
        }
        let bs = be.block_size().clamp(512, PAGE_SIZE);
        let holes = be.holes(offset / bs, end.div_ceil(bs))?;
        let reserved: u64 = holes.iter().map(|&(a, b)| b - a).sum();
        if reserved > 0 {
            be.reserve(reserved)?;
        }
        if let Err(e) = be.write_pages(offset, data, reserved) {
            be.release(reserved);
            return Err(e);
        }
        if end > store.size() {
            store.set_size(end);
        }
        Ok(Some(data.len()))
    }

    /// The frame of page `index` for a mapping (read from the disk if
    /// needed); see `PageStore::frame_to_map`.
    pub fn frame_to_map(&self, be: &dyn Backend, index: u64, partial: bool) -> Result<Option<UserFrame>, Errno> {
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        let Some(start) = index.checked_mul(PAGE_SIZE) else { return Ok(None) };
        let size = store.size();
        let inside = if partial { start < size } else { start.saturating_add(PAGE_SIZE) <= size };
        if !inside {
            return Ok(None);
        }
        if !store.is_loaded(index) {
            let end = (index + FAULT_READAHEAD).min(size.div_ceil(PAGE_SIZE));
            fill(store, be, index, end)?;
        }
        let frame = store.frame_to_map(index, partial);
        let claimed = self.claim(&st);
        drop(st);
        self.join(claimed);
        frame
    }

    pub fn existing_frames(&self, first: u64, end: u64, partial: bool, f: &mut dyn FnMut(u64, &UserFrame)) {
        if let Some(s) = self.state.lock().store.as_ref() {
            s.existing_frames(first, end, partial, f);
        }
    }

    pub fn cached_page(&self, index: u64) -> Option<u64> {
        self.state.lock().store.as_ref().and_then(|s| s.frame_paddr(index))
    }

    /// `PageStore::first_present` of the cache (None before any page).
    pub fn first_present(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        self.state.lock().store.as_ref().and_then(|s| s.first_present(first, end, dirty_only))
    }

    /// `PageStore::first_absent` of the cache (`first` before any page).
    pub fn first_absent(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        match self.state.lock().store.as_ref() {
            Some(s) => s.first_absent(first, end, dirty_only),
            None => (first < end).then_some(first),
        }
    }

    pub fn has_page(&self, index: u64) -> bool {
        self.state.lock().store.as_ref().is_some_and(|s| s.is_loaded(index))
    }

    /// A shared mapping makes page `index` writable: the blocks of the
    /// page the file has none for on the disk are reserved first (Linux's
    /// `ext4_page_mkwrite` delalloc reservation), so its writeback cannot
    /// meet a full disk; ENOSPC when the disk cannot promise them, and the
    /// page is left as it was.
    pub fn page_mkwrite(&self, be: &dyn Backend, index: u64) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        let start = index.saturating_mul(PAGE_SIZE);
        let end = start.saturating_add(PAGE_SIZE).min(store.size());
        if start < end {
            let deltas = reserve_for(store, be, start, end)?;
            let d = deltas.first().copied().unwrap_or(0);
            if d > 0 && !store.add_reserved(index, d) {
                be.release(d);
            }
            self.note_reserved(store);
        }
        store.page_mkwrite(index);
        Ok(())
    }

    /// Reads [first, end) into the cache now (WILLNEED, readahead(2)).
    pub fn prefetch(&self, be: &dyn Backend, first: u64, end: u64) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let store = loaded(&mut st, be)?;
        let end = end.min(store.size().div_ceil(PAGE_SIZE));
        if first < end {
            fill(store, be, first, end)?;
        }
        let claimed = self.claim(&st);
        drop(st);
        self.join(claimed);
        Ok(())
    }

    /// Drops the clean unmapped pages of [first, end) (DONTNEED, reclaim).
    pub fn drop_clean(&self, first: u64, end: u64, max: u64, wait: bool) -> u64 {
        let guard = if wait { Some(self.state.lock()) } else { self.state.try_lock() };
        let Some(mut st) = guard else { return 0 };
        st.store.as_mut().map_or(0, |s| s.drop_clean(first, end, max))
    }

    /// The file's last name went. Its pages stay while it is open (an
    /// unlinked open file still reads and writes them, as on Linux) and
    /// go with the file when the last reference does, which the registry
    /// must then not hold: it leaves it for good.
    pub fn orphaned(&self) {
        {
            let mut st = self.state.lock();
            st.orphan = true;
            self.registered.store(true, Ordering::Release);
        }
        if let Some(me) = self.owner.get().and_then(alloc::sync::Weak::upgrade) {
            unregister(key_of(&me));
        }
    }
}

/// Pages read around a fault on a mapped page not in the cache.
const FAULT_READAHEAD: u64 = 16;

/// Files with pages in the cache, by the address of their `Arc`.
static FILES: SpinLock<BTreeMap<usize, Arc<dyn CachedFile>>> = SpinLock::new(BTreeMap::new());
static KICK: AtomicBool = AtomicBool::new(false);
static THREAD: AtomicBool = AtomicBool::new(false);
/// Pages dropped by reclaim, for the record.
static RECLAIMED: AtomicU64 = AtomicU64::new(0);

/// A registry key for `file`.
pub fn key_of<T: ?Sized>(file: &Arc<T>) -> usize {
    Arc::as_ptr(file) as *const () as usize
}

/// Holds `file` while it has pages here; starts the writeback thread.
pub fn register(file: Arc<dyn CachedFile>) {
    let key = key_of(&file);
    {
        let mut files = FILES.lock();
        files.entry(key).or_insert(file);
    }
    start_thread();
}

/// Lets go of the file under `key` (its cache was discarded).
pub fn unregister(key: usize) {
    let gone = FILES.lock().remove(&key);
    drop(gone);
}

fn snapshot() -> Vec<Arc<dyn CachedFile>> {
    let files = FILES.lock();
    let mut out = Vec::new();
    if out.try_reserve(files.len()).is_ok() {
        out.extend(files.values().cloned());
    }
    out
}

/// Writes back every dirty page of every file (sync(2)), or of one file
/// system's files (`owner`: syncfs, umount); returns the first error.
pub fn writeback_all(owner: Option<usize>) -> Result<(), Errno> {
    let mut result = Ok(());
    for f in snapshot() {
        if owner.is_none_or(|o| f.owner() == o) {
            if let Err(e) = f.writeback(u64::MAX) {
                result = result.and(Err(e));
            }
        }
    }
    result
}

/// Lets go of one file system's files (umount, after writing them back).
pub fn forget_owner(owner: usize) {
    let gone: Vec<Arc<dyn CachedFile>> = {
        let mut files = FILES.lock();
        let keys: Vec<usize> = files.iter().filter(|(_, f)| f.owner() == owner).map(|(k, _)| *k).collect();
        keys.iter().filter_map(|k| files.remove(k)).collect()
    };
    drop(gone);
}

/// A threshold in pages: `bytes` when set (non-zero), else `ratio`
/// percent of the memory the frame allocator manages.
fn threshold(bytes: i64, ratio: i64) -> u64 {
    match bytes.max(0) as u64 {
        0 => hal::mm::managed_frame_count().saturating_mul(ratio.clamp(0, 100) as u64) / 100,
        b => b.div_ceil(PAGE_SIZE),
    }
}

/// dirty_background_ratio (10%) or dirty_background_bytes: the thread
/// writes everything past it; at or past the dirty limit it is half that
/// limit (Linux's domain_dirty_limits).
pub fn dirty_background() -> u64 {
    let bg = threshold(sysctl::DIRTY_BACKGROUND_BYTES.get(), sysctl::DIRTY_BACKGROUND_RATIO.get());
    let limit = dirty_limit();
    if bg >= limit {
        limit / 2
    } else {
        bg
    }
}

/// dirty_ratio (20%) or dirty_bytes: a writer past it writes back before
/// returning.
pub fn dirty_limit() -> u64 {
    threshold(sysctl::DIRTY_BYTES.get(), sysctl::DIRTY_RATIO.get())
}

/// Free frames below which the cache drops clean pages before taking
/// more: room for programs (so file reads do not push them to the OOM
/// killer) and for the kernel heap, whose allocations cannot reclaim and
/// which writeback itself needs (the block layer's plug holds up to 4 MiB
/// of copies).
fn low_watermark() -> u64 {
    hal::mm::kernel_reserve_frames() * 4 + 2048
}

fn reclaim_if_low(want: u64) {
    if hal::mm::free_frame_count() < low_watermark() + want {
        reclaim_clean(want.max(32));
    }
}

/// Drops up to `want` clean pages no mapping holds, from any file whose
/// cache is not busy; never sleeps (the frame allocator's reclaim hook).
pub fn reclaim_clean(want: u64) -> u64 {
    let Some(files) = FILES.try_lock() else { return 0 };
    let mut picked: [Option<Arc<dyn CachedFile>>; 16] = Default::default();
    // Start past a rotating point, so one file is not emptied every time.
    let start = RECLAIMED.load(Ordering::Relaxed) as usize % files.len().max(1);
    for (slot, f) in picked.iter_mut().zip(files.values().cycle().skip(start).take(files.len())) {
        *slot = Some(f.clone());
    }
    drop(files);
    let mut freed = 0;
    for f in picked.iter().flatten() {
        if freed >= want {
            break;
        }
        freed += f.drop_clean(want - freed, false);
    }
    RECLAIMED.fetch_add(freed.max(1), Ordering::Relaxed);
    freed
}

/// Memory is short and the caller may sleep: dirty pages are written back
/// first, then clean ones dropped. Returns the pages freed (the OOM
/// killer is asked only when this finds nothing).
pub fn shrink(want: u64) -> u64 {
    let mut freed = 0;
    for f in snapshot() {
        if freed >= want {
            break;
        }
        let _ = f.writeback(u64::MAX);
        freed += f.drop_clean(want - freed, true);
    }
    freed
}

/// The frame allocator's hook (see `hal::mm::set_reclaimer`).
fn reclaim_hook(want: u64) -> u64 {
    reclaim_clean(want.max(32))
}

fn start_thread() {
    if THREAD.swap(true, Ordering::AcqRel) {
        return;
    }
    hal::mm::set_reclaimer(reclaim_hook);
    let spawned = crate::sched::spawn("writeback", || {
        let mut last = hal::time::monotonic_ns();
        loop {
            crate::sched::sleep_ns(WRITEBACK_TICK_NS);
            let now = hal::time::monotonic_ns();
            let kicked = KICK.swap(false, Ordering::Relaxed);
            let everything = super::pagestore::dirty_pages() > dirty_background();
            let due = writeback_interval_ns().is_some_and(|every| now - last >= every);
            if !kicked && !everything && !due {
                continue;
            }
            last = now;
            let older_than = if everything { u64::MAX } else { now.saturating_sub(dirty_expire_ns()) };
            for f in snapshot() {
                if let Err(e) = f.writeback(older_than) {
                    log::warn!("writeback: {}", e.name());
                }
            }
            // Files whose cache emptied leave the registry.
            let idle: Vec<Arc<dyn CachedFile>> = {
                let mut files = FILES.lock();
                let keys: Vec<usize> = files.iter().filter(|(_, f)| f.try_leave()).map(|(k, _)| *k).collect();
                keys.iter().filter_map(|k| files.remove(k)).collect()
            };
            drop(idle);
        }
    });
    if spawned.is_err() {
        THREAD.store(false, Ordering::Release);
        log::warn!("pagecache: no memory for the writeback thread; dirty pages are written by sync and fsync");
    }
}
