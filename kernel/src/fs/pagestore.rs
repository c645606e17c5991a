//! The pages of a memory-resident file: tmpfs keeps a regular file's data
//! here, one frame per 4 KiB page, and holes have no frame.
//!
//! Keeping file data in page frames (rather than one growable buffer)
//! is what lets a file mapping use the file's own frames: every process
//! that runs /bin/busybox maps the same physical text pages, as Linux's
//! page cache does. Besides saving the copy, that matters a great deal
//! under QEMU's TCG: translated code is keyed by physical address, so
//! text copied into fresh frames at every exec is translated again every
//! time (about 1,200 blocks per `sh -c true`).
//!
//! A page past the last one has no frame. The last page's bytes past the
//! size may be dirtied through a shared mapping (as on Linux), so growing
//! the file zeroes them first: an extension always reads zeros.
//!
//! The same index is the page cache of files that live on a disk
//! (`fs::pagecache`, made with [`PageStore::new_backed`]): there a page
//! without a frame is not a hole but a page not read yet, the cache layer
//! loads it before reading or writing part of it, and every page carries
//! its writeback state: dirty since when, under writeback, or ever made
//! writable in a shared mapping (such a page stays dirty while mapped,
//! because later stores through the mapping are not seen). Pages of
//! memory-only files (tmpfs) are never dirty: they are counted as Shmem,
//! backed ones as Cached, Dirty and Writeback in /proc/meminfo.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::frame::UserFrame;
use linux_abi::errno::Errno;

use crate::mm::PAGE_SIZE;

/// Frames held by every page store: the leak report subtracts them from
/// the live user frames, and /proc/meminfo shows them as Shmem.
static FILE_FRAMES: AtomicU64 = AtomicU64::new(0);
/// Of those, the frames of backed stores (page cache of disk files).
static CACHE_FRAMES: AtomicU64 = AtomicU64::new(0);
/// Backed pages newer in memory than on the disk.
static DIRTY_PAGES: AtomicU64 = AtomicU64::new(0);
/// Backed pages being written to the disk now.
static WRITEBACK_PAGES: AtomicU64 = AtomicU64::new(0);

/// Frames that hold file data right now.
pub fn file_frames() -> u64 {
    FILE_FRAMES.load(Ordering::Relaxed)
}

/// Frames of the page cache of disk files (clean or dirty).
pub fn cache_frames() -> u64 {
    CACHE_FRAMES.load(Ordering::Relaxed)
}

/// Dirty pages of disk files.
pub fn dirty_pages() -> u64 {
    DIRTY_PAGES.load(Ordering::Relaxed)
}

/// Pages being written back now.
pub fn writeback_pages() -> u64 {
    WRITEBACK_PAGES.load(Ordering::Relaxed)
}

/// One page of a store: its frame and, for backed stores, its state.
struct Page {
    frame: UserFrame,
    /// When it was dirtied (monotonic ns), if it is newer than the disk.
    dirty_since: Option<u64>,
    /// Made writable in a shared mapping: stores may reach it unseen.
    mapped_write: bool,
    /// Disk blocks reserved for it (delayed allocation: it was written
    /// over blocks the file does not have yet).
    reserved: u32,
    /// Made by fallocate and not touched since (tmpfs): zeros that
    /// SEEK_DATA passes over as a hole, as Linux passes over a shmem
    /// folio that is not uptodate. A write or a fault on it makes it
    /// data; a read() does not.
    unwritten: bool,
}

impl Page {
    fn new(frame: UserFrame) -> Page {
        Page { frame, dirty_since: None, mapped_write: false, reserved: 0, unwritten: false }
    }
}

const PAGE: usize = PAGE_SIZE as usize;

/// The pages a file system may hold, shared by all its files: a tmpfs is
/// full (ENOSPC) at its size, as on Linux, instead of taking every free
/// frame and leaving the next page fault to the OOM killer.
pub struct PageBudget {
    used: AtomicU64,
    limit: u64,
}

impl PageBudget {
    pub fn new(limit: u64) -> PageBudget {
        PageBudget { used: AtomicU64::new(0), limit }
    }

    /// Pages held now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn take(&self) -> bool {
        self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| (u < self.limit).then_some(u + 1)).is_ok()
    }

    fn give_back(&self, pages: u64) {
        self.used.fetch_sub(pages, Ordering::Relaxed);
    }
}

pub struct PageStore {
    pages: BTreeMap<u64, Page>,
    size: u64,
    budget: Arc<PageBudget>,
    /// A page cache over a disk file (see the module comment).
    backed: bool,
    /// Dirty pages of this store.
    dirty: u64,
    /// Disk blocks its pages hold reserved (see `Page::reserved`).
    reserved: u64,
}

impl PageStore {
    pub const fn new(budget: Arc<PageBudget>) -> PageStore {
        PageStore { pages: BTreeMap::new(), size: 0, budget, backed: false, dirty: 0, reserved: 0 }
    }

    /// The page cache of a disk file of `size` bytes (no page loaded).
    pub const fn new_backed(budget: Arc<PageBudget>, size: u64) -> PageStore {
        PageStore { pages: BTreeMap::new(), size, budget, backed: true, dirty: 0, reserved: 0 }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Pages with a frame (the file's blocks, in pages).
    pub fn frame_count(&self) -> u64 {
        self.pages.len() as u64
    }

    /// The physical address of page `index`'s frame, if it has one (no
    /// frame is made): how /proc tells a mapped file page from a copy.
    pub fn frame_paddr(&self, index: u64) -> Option<u64> {
        self.pages.get(&index).map(|p| p.frame.paddr().0)
    }

    /// Copies file bytes from `offset` into `buf`; holes read as zero.
    /// Returns how many bytes were read (short at the end of the file).
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> usize {
        let end = offset.saturating_add(buf.len() as u64).min(self.size);
        let mut pos = offset;
        while pos < end {
            let in_page = (pos % PAGE_SIZE) as usize;
            let n = (PAGE - in_page).min((end - pos) as usize);
            let out = &mut buf[(pos - offset) as usize..][..n];
            match self.pages.get(&(pos / PAGE_SIZE)) {
                Some(page) => page.frame.read(in_page, out),
                None => out.fill(0),
            }
            pos += n as u64;
        }
        end.saturating_sub(offset) as usize
    }

    /// Copies the bytes of [offset, end) (inside the size) to user memory
    /// at `addr`, frame by frame, without resolving faults (the caller
    /// holds the lock a fault on a mapping of this file would take).
    /// Returns the bytes copied and, when it stopped short, the user
    /// address that faulted (`u64::MAX`: a page of a backed store that is
    /// not loaded). Holes of an unbacked store copy zeros.
    pub fn copy_to_user(&self, offset: u64, end: u64, addr: u64) -> (usize, Option<u64>) {
        static ZEROS: [u8; PAGE] = [0; PAGE];
        let end = end.min(self.size);
        let mut pos = offset;
        while pos < end {
            let in_page = (pos % PAGE_SIZE) as usize;
            let n = (PAGE - in_page).min((end - pos) as usize);
            let to = addr + (pos - offset);
            let r = match self.pages.get(&(pos / PAGE_SIZE)) {
                Some(page) => hal::user::copy_frame_to_user(to, &page.frame, in_page, n),
                None if self.backed => return ((pos - offset) as usize, Some(u64::MAX)),
                None => hal::user::copy_to_user(to, &ZEROS[..n]),
            };
            if let Err(f) = r {
                return ((f.addr - addr) as usize, Some(f.addr));
            }
            pos += n as u64;
        }
        ((pos - offset) as usize, None)
    }

    /// Writes `data` at `offset`, growing the file as needed. A write that
    /// runs out of memory part-way keeps what it wrote and reports that
    /// count; one that wrote nothing fails with ENOSPC, as tmpfs does.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        if end > self.size {
            self.clear_tail();
        }
        let mut pos = offset;
        while pos < end {
            let in_page = (pos % PAGE_SIZE) as usize;
            let n = (PAGE - in_page).min((end - pos) as usize);
            let frame = match self.frame_for_write(pos / PAGE_SIZE) {
                Ok(f) => f,
                Err(e) if pos == offset => return Err(e),
                Err(_) => break,
            };
            frame.write(in_page, &data[(pos - offset) as usize..][..n]);
            self.mark_written(pos / PAGE_SIZE);
            self.mark_dirty(pos / PAGE_SIZE);
            pos += n as u64;
        }
        if pos > self.size {
            self.size = pos;
        }
        Ok((pos - offset) as usize)
    }

    /// Sets the size. Shrinking frees whole pages past the end and zeroes
    /// the rest of the page the new end falls in (a shared mapping sees
    /// zeros there, as on Linux); growing again reads zeros.
    pub fn truncate(&mut self, size: u64) {
        if size > self.size {
            self.clear_tail();
        }
        let shrinking = size < self.size;
        if shrinking {
            let keep = size.div_ceil(PAGE_SIZE);
            let gone = self.pages.split_off(&keep);
            for page in gone.values() {
                self.forget(page);
            }
        }
        self.size = size;
        if shrinking {
            self.clear_tail();
        }
    }

    /// fallocate: gives every page of `offset..end` a frame (ENOSPC when
    /// the file system is full: the pages allocated so far stay, as on
    /// Linux's tmpfs), and grows the size to `end` unless `keep_size`.
    /// The new pages are unwritten (see `Page::unwritten`); pages that
    /// were there keep their data.
    pub fn allocate(&mut self, offset: u64, end: u64, keep_size: bool) -> Result<(), Errno> {
        if end > self.size && !keep_size {
            self.clear_tail();
        }
        for index in offset / PAGE_SIZE..end.div_ceil(PAGE_SIZE) {
            if !self.pages.contains_key(&index) {
                let frame = self.new_page()?;
                self.pages.insert(index, Page { unwritten: true, ..Page::new(frame) });
            }
        }
        if end > self.size && !keep_size {
            self.size = end;
        }
        Ok(())
    }

    /// fallocate(PUNCH_HOLE) by bytes: `offset..end` reads zeros from now
    /// on. Whole pages give their frame back (the caller unmaps them from
    /// shared mappings, as Linux's `unmap_mapping_range` does: see
    /// `fs::truncate::change_range`); the parts of pages at either end are
    /// zeroed in place. Pages allocated past the size with KEEP_SIZE are
    /// punched too.
    pub fn punch_bytes(&mut self, offset: u64, end: u64) {
        let mut pos = offset;
        while pos < end {
            let index = pos / PAGE_SIZE;
            let in_page = (pos % PAGE_SIZE) as usize;
            let n = (PAGE - in_page).min((end - pos) as usize);
            if n == PAGE {
                if let Some(page) = self.pages.remove(&index) {
                    self.forget(&page);
                }
            } else if let Some(page) = self.pages.get(&index) {
                page.frame.zero(in_page, n);
                self.mark_dirty(index);
            }
            pos += n as u64;
            // Past the last page there is nothing left to punch.
            if self.pages.range(index + 1..).next().is_none() {
                break;
            }
        }
    }

    /// The disk side zeroed bytes [offset, end) or made them a hole
    /// (fallocate's PUNCH_HOLE and ZERO_RANGE on a cache): whole pages
    /// leave the store (the caller unmaps them from shared mappings), the
    /// parts of pages at either end are zeroed in place, left as clean or
    /// dirty as they were (the disk holds the same zeros).
    pub fn clear_range(&mut self, offset: u64, end: u64) {
        let (first, last) = (offset / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
        let indices: alloc::vec::Vec<u64> = self.pages.range(first..last).map(|(&i, _)| i).collect();
        for index in indices {
            let start = index * PAGE_SIZE;
            let (from, to) = (offset.max(start), end.min(start + PAGE_SIZE));
            if to - from == PAGE_SIZE {
                if let Some(page) = self.pages.remove(&index) {
                    self.forget(&page);
                }
            } else if let Some(page) = self.pages.get(&index) {
                page.frame.zero((from - start) as usize, (to - from) as usize);
            }
        }
    }

    /// The frame of page `index`, to map into a process. A hole gets its
    /// frame now, so every mapper shares the same one. `None` for a page
    /// past the end of the file, and, unless `partial` is set, for the
    /// last page when the file ends inside it: a private mapping must see
    /// zeros past the end, so the caller copies that page instead.
    pub fn frame_to_map(&mut self, index: u64, partial: bool) -> Result<Option<UserFrame>, Errno> {
        let Some(start) = index.checked_mul(PAGE_SIZE) else { return Ok(None) };
        let inside = if partial { start < self.size } else { start.saturating_add(PAGE_SIZE) <= self.size };
        if !inside {
            return Ok(None);
        }
        // A fault on a fallocated page makes it data (shmem clears and
        // marks such a folio uptodate for any fault).
        let frame = self.frame_for_write(index)?.clone();
        self.mark_written(index);
        Ok(Some(frame))
    }

    /// Whether page `index` has a frame (mincore).
    /// The frames pages [first, end) already have, in order, stopping at
    /// the file's end (pages wholly inside it, or with `partial` also the
    /// last one the end falls in). Makes no frame: fault-around maps only
    /// what the file holds, as Linux's maps only what the page cache does.
    pub fn existing_frames(&self, first: u64, end: u64, partial: bool, f: &mut dyn FnMut(u64, &UserFrame)) {
        let limit = if partial { self.size.div_ceil(PAGE_SIZE) } else { self.size / PAGE_SIZE };
        let end = end.min(limit);
        if first >= end {
            return;
        }
        // Unwritten pages are left to fault, which makes them data, as
        // Linux's fault-around skips folios that are not uptodate.
        for (&index, page) in self.pages.range(first..end).filter(|(_, p)| !p.unwritten) {
            f(index, &page.frame);
        }
    }

    pub fn has_page(&self, index: u64) -> bool {
        self.pages.contains_key(&index)
    }

    /// Frees the frames of pages [index, index + count), leaving a hole
    /// that reads as zeros; the size stays (a punched hole).
    pub fn punch(&mut self, index: u64, count: u64) {
        let keys: alloc::vec::Vec<u64> =
            self.pages.range(index..index.saturating_add(count)).map(|(k, _)| *k).collect();
        for k in keys {
            if let Some(page) = self.pages.remove(&k) {
                self.forget(&page);
            }
        }
    }

    /// Zeroes the last page past the size.
    fn clear_tail(&mut self) {
        let in_page = (self.size % PAGE_SIZE) as usize;
        if in_page != 0 {
            if let Some(page) = self.pages.get(&(self.size / PAGE_SIZE)) {
                page.frame.zero(in_page, PAGE - in_page);
            }
        }
    }

    /// Accounts for `page` leaving the store.
    fn forget(&mut self, page: &Page) {
        FILE_FRAMES.fetch_sub(1, Ordering::Relaxed);
        self.budget.give_back(1);
        if self.backed {
            CACHE_FRAMES.fetch_sub(1, Ordering::Relaxed);
        }
        if page.dirty_since.is_some() {
            self.dirty -= 1;
            DIRTY_PAGES.fetch_sub(1, Ordering::Relaxed);
        }
        self.reserved -= u64::from(page.reserved);
    }

    fn mark_written(&mut self, index: u64) {
        if let Some(page) = self.pages.get_mut(&index) {
            page.unwritten = false;
        }
    }

    fn mark_dirty(&mut self, index: u64) {
        if !self.backed {
            return;
        }
        if let Some(page) = self.pages.get_mut(&index) {
            if page.dirty_since.is_none() {
                page.dirty_since = Some(hal::time::monotonic_ns());
                self.dirty += 1;
                DIRTY_PAGES.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn new_page(&mut self) -> Result<UserFrame, Errno> {
        self.new_page_with(&[])
    }

    /// A new page holding `data` (zeros after it).
    fn new_page_with(&mut self, data: &[u8]) -> Result<UserFrame, Errno> {
        if !self.budget.take() {
            return Err(Errno::ENOSPC);
        }
        let frame = if data.is_empty() { UserFrame::alloc_zeroed() } else { UserFrame::alloc_copy(data) };
        let Ok(frame) = frame else {
            self.budget.give_back(1);
            return Err(if self.backed { Errno::ENOMEM } else { Errno::ENOSPC });
        };
        FILE_FRAMES.fetch_add(1, Ordering::Relaxed);
        if self.backed {
            CACHE_FRAMES.fetch_add(1, Ordering::Relaxed);
        }
        Ok(frame)
    }

    fn frame_for_write(&mut self, index: u64) -> Result<&UserFrame, Errno> {
        if !self.pages.contains_key(&index) {
            let frame = self.new_page()?;
            self.pages.insert(index, Page::new(frame));
        }
        Ok(&self.pages.get(&index).expect("page just made").frame)
    }

    // The page cache's side (backed stores).

    /// Whether page `index` is in memory.
    pub fn is_loaded(&self, index: u64) -> bool {
        self.pages.contains_key(&index)
    }

    /// The first page of [first, end) in memory (with `dirty_only`, the
    /// first dirty one): where SEEK_DATA finds data the disk does not
    /// show yet.
    pub fn first_present(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        self.pages
            .range(first..end)
            .find(|(_, p)| !p.unwritten && (!dirty_only || p.dirty_since.is_some()))
            .map(|(&i, _)| i)
    }

    /// The first page of [first, end) not in memory (with `dirty_only`,
    /// the first not dirty): where SEEK_HOLE finds a hole the cache does
    /// not fill.
    pub fn first_absent(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        let mut want = first;
        for (&i, p) in self.pages.range(first..end) {
            if i != want || p.unwritten || (dirty_only && p.dirty_since.is_none()) {
                return Some(want);
            }
            want = i + 1;
        }
        (want < end).then_some(want)
    }

    /// Whether any page of [first, end) is in memory.
    pub fn any_in(&self, first: u64, end: u64) -> bool {
        self.pages.range(first..end).next().is_some()
    }

    /// The first page of [first, end) not in memory.
    pub fn first_missing(&self, first: u64, end: u64) -> Option<u64> {
        let mut want = first;
        for (&index, _) in self.pages.range(first..end) {
            if index != want {
                return Some(want);
            }
            want += 1;
        }
        (want < end).then_some(want)
    }

    /// Puts a frame the caller filled (from the disk) in as clean page
    /// `index`; a page already there stays, and the frame goes.
    pub fn insert_fresh(&mut self, index: u64, frame: hal::frame::FreshFrame) -> Result<(), Errno> {
        if self.pages.contains_key(&index) {
            return Ok(());
        }
        if !self.budget.take() {
            return Err(Errno::ENOSPC);
        }
        FILE_FRAMES.fetch_add(1, Ordering::Relaxed);
        if self.backed {
            CACHE_FRAMES.fetch_add(1, Ordering::Relaxed);
        }
        self.pages.insert(index, Page::new(frame.into_frame()));
        Ok(())
    }

    /// A shared mapping is about to make page `index` writable (Linux's
    /// page_mkwrite): it is dirty from now on, and stays dirty while
    /// mapped.
    pub fn page_mkwrite(&mut self, index: u64) {
        if let Some(page) = self.pages.get_mut(&index) {
            page.mapped_write = true;
            page.unwritten = false;
        }
        self.mark_dirty(index);
    }

    /// The dirty pages of [first, end) dirtied at or before `older_than`
    /// (monotonic ns; `u64::MAX` for all), in order.
    pub fn dirty_in(&self, first: u64, end: u64, older_than: u64) -> alloc::vec::Vec<u64> {
        self.pages
            .range(first..end)
            .filter(|(_, p)| p.dirty_since.is_some_and(|t| t <= older_than))
            .map(|(&i, _)| i)
            .collect()
    }

    /// Copies page `index` into `buf` (a page), for writeback.
    pub fn copy_page(&self, index: u64, buf: &mut [u8]) -> bool {
        match self.pages.get(&index) {
            Some(p) => {
                p.frame.read(0, &mut buf[..PAGE]);
                true
            }
            None => false,
        }
    }

    /// Marks `count` pages as being written (the Writeback line), or done.
    pub fn note_writeback(pages: u64, started: bool) {
        if started {
            WRITEBACK_PAGES.fetch_add(pages, Ordering::Relaxed);
        } else {
            WRITEBACK_PAGES.fetch_sub(pages, Ordering::Relaxed);
        }
    }

    /// Page `index` reached the disk as it was when copied. A page still
    /// mapped writable somewhere stays dirty (stores may follow unseen),
    /// restarting its age.
    pub fn mark_clean(&mut self, index: u64) {
        let Some(page) = self.pages.get_mut(&index) else { return };
        if page.dirty_since.is_none() {
            return;
        }
        if page.mapped_write && page.frame.ref_count() > 1 {
            page.dirty_since = Some(hal::time::monotonic_ns());
            return;
        }
        page.mapped_write = false;
        page.dirty_since = None;
        self.dirty -= 1;
        DIRTY_PAGES.fetch_sub(1, Ordering::Relaxed);
    }

    /// Drops up to `max` clean pages no mapping holds (reclaim, or
    /// POSIX_FADV_DONTNEED over [first, end)); returns how many went.
    pub fn drop_clean(&mut self, first: u64, end: u64, max: u64) -> u64 {
        let victims: alloc::vec::Vec<u64> = self
            .pages
            .range(first..end)
            .filter(|(_, p)| p.dirty_since.is_none() && p.frame.ref_count() == 1)
            .map(|(&i, _)| i)
            .take(max as usize)
            .collect();
        for i in &victims {
            if let Some(page) = self.pages.remove(i) {
                self.forget(&page);
            }
        }
        victims.len() as u64
    }

    /// Blocks reserved by page `index`.
    pub fn reserved_of(&self, index: u64) -> u64 {
        self.pages.get(&index).map_or(0, |p| u64::from(p.reserved))
    }

    /// Page `index` holds `blocks` more reserved blocks; false (nothing
    /// recorded) when the page is not here.
    pub fn add_reserved(&mut self, index: u64, blocks: u64) -> bool {
        let Some(page) = self.pages.get_mut(&index) else { return false };
        page.reserved += blocks as u32;
        self.reserved += blocks;
        true
    }

    /// The blocks pages [first, end) hold reserved.
    pub fn reserved_in(&self, first: u64, end: u64) -> u64 {
        self.pages.range(first..end).map(|(_, p)| u64::from(p.reserved)).sum()
    }

    /// Pages [first, end) reached the disk: their blocks are allocated,
    /// the reservations used.
    pub fn clear_reserved(&mut self, first: u64, end: u64) {
        let mut cleared = 0;
        for (_, p) in self.pages.range_mut(first..end) {
            cleared += u64::from(p.reserved);
            p.reserved = 0;
        }
        self.reserved -= cleared;
    }

    /// Blocks every page holds reserved.
    pub fn reserved_total(&self) -> u64 {
        self.reserved
    }

    /// Sets the size without touching pages (the disk side changed it).
    pub fn set_size(&mut self, size: u64) {
        self.size = size;
    }
}

impl Drop for PageStore {
    fn drop(&mut self) {
        let pages = core::mem::take(&mut self.pages);
        for page in pages.values() {
            self.forget(page);
        }
    }
}
