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

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::frame::UserFrame;
use linux_abi::errno::Errno;

use crate::mm::PAGE_SIZE;

/// Frames held by every page store: the leak report subtracts them from
/// the live user frames, and /proc/meminfo shows them as Shmem.
static FILE_FRAMES: AtomicU64 = AtomicU64::new(0);

/// Frames that hold file data right now.
pub fn file_frames() -> u64 {
    FILE_FRAMES.load(Ordering::Relaxed)
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
    pages: BTreeMap<u64, UserFrame>,
    size: u64,
    budget: Arc<PageBudget>,
}

impl PageStore {
    pub const fn new(budget: Arc<PageBudget>) -> PageStore {
        PageStore { pages: BTreeMap::new(), size: 0, budget }
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
        self.pages.get(&index).map(|f| f.paddr().0)
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
                Some(frame) => frame.read(in_page, out),
                None => out.fill(0),
            }
            pos += n as u64;
        }
        end.saturating_sub(offset) as usize
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
            self.released(gone.len());
        }
        self.size = size;
        if shrinking {
            self.clear_tail();
        }
    }

    /// fallocate: gives every page of `offset..end` a frame (ENOSPC when
    /// the file system is full: the pages allocated so far stay, as on
    /// Linux's tmpfs), and grows the size to `end` unless `keep_size`.
    pub fn allocate(&mut self, offset: u64, end: u64, keep_size: bool) -> Result<(), Errno> {
        if end > self.size && !keep_size {
            self.clear_tail();
        }
        for index in offset / PAGE_SIZE..end.div_ceil(PAGE_SIZE) {
            self.frame_for_write(index)?;
        }
        if end > self.size && !keep_size {
            self.size = end;
        }
        Ok(())
    }

    /// fallocate(PUNCH_HOLE) by bytes: `offset..end` reads zeros from now
    /// on. Whole pages give their frame back (the caller unmaps them from
    /// shared mappings, as Linux's `unmap_mapping_range` does: see
    /// `fs::truncate::punch_hole`); the parts of pages at either end are
    /// zeroed in place. Pages allocated past the size with KEEP_SIZE are
    /// punched too.
    pub fn punch_bytes(&mut self, offset: u64, end: u64) {
        let mut pos = offset;
        let mut released = 0;
        while pos < end {
            let index = pos / PAGE_SIZE;
            let in_page = (pos % PAGE_SIZE) as usize;
            let n = (PAGE - in_page).min((end - pos) as usize);
            if n == PAGE {
                if self.pages.remove(&index).is_some() {
                    released += 1;
                }
            } else if let Some(frame) = self.pages.get(&index) {
                frame.zero(in_page, n);
            }
            pos += n as u64;
            // Past the last page there is nothing left to punch.
            if self.pages.range(index + 1..).next().is_none() {
                break;
            }
        }
        self.released(released);
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
        self.frame_for_write(index).map(|f| Some(f.clone()))
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
        for (&index, frame) in self.pages.range(first..end) {
            f(index, frame);
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
        let mut n = 0;
        for k in keys {
            if self.pages.remove(&k).is_some() {
                n += 1;
            }
        }
        self.released(n);
    }

    /// Zeroes the last page past the size.
    fn clear_tail(&mut self) {
        let in_page = (self.size % PAGE_SIZE) as usize;
        if in_page != 0 {
            if let Some(frame) = self.pages.get(&(self.size / PAGE_SIZE)) {
                frame.zero(in_page, PAGE - in_page);
            }
        }
    }

    /// Accounts for `frames` frames leaving the store.
    fn released(&self, frames: usize) {
        FILE_FRAMES.fetch_sub(frames as u64, Ordering::Relaxed);
        self.budget.give_back(frames as u64);
    }

    fn frame_for_write(&mut self, index: u64) -> Result<&UserFrame, Errno> {
        match self.pages.entry(index) {
            alloc::collections::btree_map::Entry::Occupied(e) => Ok(e.into_mut()),
            alloc::collections::btree_map::Entry::Vacant(e) => {
                if !self.budget.take() {
                    return Err(Errno::ENOSPC);
                }
                let Ok(frame) = UserFrame::alloc_zeroed() else {
                    self.budget.give_back(1);
                    return Err(Errno::ENOSPC);
                };
                FILE_FRAMES.fetch_add(1, Ordering::Relaxed);
                Ok(e.insert(frame))
            }
        }
    }
}

impl Drop for PageStore {
    fn drop(&mut self) {
        self.released(self.pages.len());
    }
}
