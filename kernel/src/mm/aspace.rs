//! User address spaces: the set of VMAs and the page table that caches
//! their contents, with demand paging, copy-on-write and the mmap family.
//!
//! The page table only ever holds pages some VMA allows. A private page
//! shared after `fork` is mapped read-only in both processes; the first
//! write faults and gets its own copy unless it is the last reference.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::frame::UserFrame;
use hal::paging::{PageTable, PteFlags, USER_END};
use linux_abi::errno::Errno;

use super::vma::{Backing, Prot, SharedPages, Vma, VmaKind};
use super::{page_ceil, page_floor, PAGE_SIZE};
use crate::sync::Mutex;

/// The address space of a process, shared by its threads.
pub type Vm = Arc<Mutex<AddressSpace>>;

/// Top of the main thread's stack.
pub const STACK_TOP: u64 = 0x7fff_ffff_f000;
pub const STACK_SIZE: u64 = 8 << 20;
/// What a new program's stack area holds below its arguments before it
/// grows (Linux's stack_expand in setup_arg_pages).
pub const STACK_EXPAND: u64 = 128 << 10;
/// Linux's stack_guard_gap: a stack grows no closer than this to an
/// accessible area below it, and mmap keeps new areas this far away.
pub const STACK_GUARD_GAP: u64 = 256 * PAGE_SIZE;
/// Where top-down mmap placement starts: Linux's mmap_base without
/// randomization, the stack limit plus a 1 MiB guard gap below the top,
/// but at least 128 MiB (so 0x7ffff7fff000, where ld.so ends on Linux).
pub const MMAP_BASE: u64 = STACK_TOP - (128 << 20);
/// Pages a read fault on a file mapping maps at once, the faulting one
/// included (Linux's fault_around_bytes of 64 KiB).
const FAULT_AROUND_PAGES: u64 = 16;
/// The highest the program break may reach: the stack's guard gap.
const BRK_LIMIT: u64 = STACK_TOP - STACK_SIZE - (1 << 20);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAccess {
    Read,
    Write,
    Execute,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// No VMA covers the address (SEGV_MAPERR).
    Unmapped,
    /// A VMA covers it but forbids the access (SEGV_ACCERR).
    Forbidden,
    OutOfMemory,
    /// A shared file mapping past the end of its file, or over a hole its
    /// full file system cannot fill (SIGBUS, BUS_ADRERR, as on Linux).
    BusError,
}

/// A shared file page the file system could not make writable: out of
/// memory, or (ENOSPC, EIO, a read-only volume) SIGBUS, as Linux's
/// `page_mkwrite` errors are.
fn mkwrite_error(e: Errno) -> FaultError {
    if e == Errno::ENOMEM {
        FaultError::OutOfMemory
    } else {
        FaultError::BusError
    }
}

pub struct AddressSpace {
    pub(super) page_table: Arc<PageTable>,
    pub(super) vmas: BTreeMap<u64, Vma>,
    brk_start: u64,
    brk: u64,
    /// Bytes covered by areas (Linux's total_vm), and the most it was.
    total_vm: u64,
    hiwater_vm: u64,
    /// The most pages resident, noted before any are unmapped (Linux's
    /// lazy hiwater_rss): VmHWM is the larger of this and the current.
    hiwater_rss: core::sync::atomic::AtomicU64,
    /// RLIMIT_STACK's soft limit, which bounds how far a stack area grows
    /// (kept in step with the process's limit).
    stack_limit: core::sync::atomic::AtomicU64,
    /// mlockall(MCL_FUTURE): new areas start locked; `Some(true)` with
    /// MCL_ONFAULT (locked as pages are touched).
    pub(super) lock_future: Option<bool>,
    /// membarrier(2) registrations of this address space (the
    /// MEMBARRIER_CMD_REGISTER_* bits); a fork or exec starts with none.
    pub membarrier_registered: u32,
}

impl AddressSpace {
    pub fn new() -> Result<AddressSpace, Errno> {
        let page_table = PageTable::new().map_err(|_| Errno::ENOMEM)?;
        Ok(AddressSpace {
            page_table: Arc::try_new(page_table).map_err(|_| Errno::ENOMEM)?,
            vmas: BTreeMap::new(),
            brk_start: 0,
            brk: 0,
            total_vm: 0,
            hiwater_vm: 0,
            hiwater_rss: core::sync::atomic::AtomicU64::new(0),
            stack_limit: core::sync::atomic::AtomicU64::new(STACK_SIZE),
            lock_future: None,
            membarrier_registered: 0,
        })
    }

    /// RLIMIT_STACK changed (or a new program starts with it).
    pub fn set_stack_limit(&self, limit: u64) {
        self.stack_limit.store(limit, core::sync::atomic::Ordering::Relaxed);
    }

    /// A new program's stack: the area shrinks to the pages its arguments
    /// use plus STACK_EXPAND (as Linux's setup_arg_pages leaves it, within
    /// the stack limit); it grows from there on faults.
    pub fn settle_stack(&mut self, lowest_used: u64) {
        let Some((&key, _)) = self.vmas.iter().find(|(_, v)| v.kind == VmaKind::Stack) else {
            return;
        };
        let Some(mut vma) = self.vmas.remove(&key) else {
            return;
        };
        let limit = self.stack_limit.load(core::sync::atomic::Ordering::Relaxed);
        let want = page_floor(lowest_used).saturating_sub(STACK_EXPAND);
        let start = want.max(vma.end.saturating_sub(limit.max(PAGE_SIZE))).max(vma.start);
        let start = start.min(page_floor(lowest_used));
        self.account_vm(0, start - vma.start);
        vma.start = start;
        self.vmas.insert(start, vma);
    }

    /// The start of the area below which `addr` would be a stack's growth,
    /// if the first area above `addr` grows down and may reach it: within
    /// RLIMIT_STACK, above mmap_min_addr, and (unless the area below is
    /// itself a stack or inaccessible) at least STACK_GUARD_GAP above the
    /// area below, as Linux's expand_downwards checks.
    fn stack_growth(&self, addr: u64) -> Option<u64> {
        let (&key, above) = self.vmas.range(addr..).next()?;
        if !matches!(above.kind, VmaKind::Stack | VmaKind::GrowsDown) || !matches!(above.backing, Backing::Anonymous) {
            return None;
        }
        let new_start = page_floor(addr);
        let limit = self.stack_limit.load(core::sync::atomic::Ordering::Relaxed);
        if above.end - new_start > limit || new_start < super::mmap_min_addr() {
            return None;
        }
        if let Some((_, below)) = self.vmas.range(..new_start).next_back() {
            let accessible = below.prot.read || below.prot.write || below.prot.exec;
            let stack = matches!(below.kind, VmaKind::Stack | VmaKind::GrowsDown);
            if below.end > new_start || (accessible && !stack && new_start - below.end < STACK_GUARD_GAP) {
                return None;
            }
        }
        Some(key)
    }

    /// Grows the stack area starting at `key` down to `addr`'s page.
    fn grow_stack(&mut self, key: u64, addr: u64) {
        if let Some(mut vma) = self.vmas.remove(&key) {
            let new_start = page_floor(addr);
            self.account_vm(vma.start - new_start, 0);
            vma.start = new_start;
            self.vmas.insert(new_start, vma);
        }
    }

    /// Areas grew or shrank by `delta` bytes (total_vm and VmPeak).
    fn account_vm(&mut self, grew: u64, shrank: u64) {
        self.total_vm = (self.total_vm + grew).saturating_sub(shrank);
        self.hiwater_vm = self.hiwater_vm.max(self.total_vm);
    }

    /// The largest total_vm so far, in bytes.
    pub fn hiwater_vm(&self) -> u64 {
        self.hiwater_vm
    }

    /// The largest resident set noted so far, in bytes.
    pub fn hiwater_rss(&self) -> u64 {
        self.hiwater_rss.load(core::sync::atomic::Ordering::Relaxed) * PAGE_SIZE
    }

    pub fn page_table(&self) -> &Arc<PageTable> {
        &self.page_table
    }

    pub(super) fn find(&self, addr: u64) -> Option<&Vma> {
        self.vmas.range(..=addr).next_back().map(|(_, v)| v).filter(|v| addr < v.end)
    }

    pub(super) fn page_flags(vma: &Vma, exclusive: bool) -> PteFlags {
        PteFlags {
            accessible: vma.prot.read || vma.prot.write || vma.prot.exec,
            writable: vma.prot.write && (exclusive || vma.is_shared()),
            executable: vma.prot.exec,
        }
    }

    /// A shared mapping of a file whose stores must be noticed (see
    /// `Inode::tracks_dirty`): the file and the page index of `va`.
    fn tracked_shared(vma: &Vma, va: u64) -> Option<(&Arc<dyn crate::fs::Inode>, u64)> {
        match &vma.backing {
            Backing::SharedFile { source, offset, attach: None, .. } if source.tracks_dirty() => {
                Some((source, (offset + (va - vma.start)) / PAGE_SIZE))
            }
            _ => None,
        }
    }

    /// Resolves a fault at `addr`: demand-fills a missing page, or breaks
    /// copy-on-write sharing on a write.
    pub fn handle_fault(&mut self, addr: u64, access: FaultAccess) -> Result<(), FaultError> {
        if self.find(addr).is_none() {
            let key = self.stack_growth(addr).ok_or(FaultError::Unmapped)?;
            self.grow_stack(key, addr);
        }
        // Borrowed, not cloned: copying an area is opening it again (a
        // shared memory attachment would count it).
        let vma = self.find(addr).ok_or(FaultError::Unmapped)?;
        let allowed = match access {
            FaultAccess::Read => vma.prot.read || vma.prot.write || vma.prot.exec,
            FaultAccess::Write => vma.prot.write,
            FaultAccess::Execute => vma.prot.exec,
        };
        if !allowed {
            return Err(FaultError::Forbidden);
        }
        let va = page_floor(addr);
        if let Some((_, flags)) = self.page_table.query(va) {
            if !flags.accessible {
                // Kept contents of a page whose VMA allows access again
                // (the PTE is refreshed by mprotect; this is a stale view).
                self.page_table.protect(va, Self::page_flags(vma, false));
                return Ok(());
            }
            if access != FaultAccess::Write || flags.writable {
                // Another thread resolved it first (or a stale TLB entry).
                return Ok(());
            }
            if let Some((source, index)) = Self::tracked_shared(vma, va) {
                // The first store to a clean page of a file: it is dirty
                // (and its blocks promised, or the store gets SIGBUS).
                source.page_mkwrite(index).map_err(mkwrite_error)?;
                self.page_table.protect(va, Self::page_flags(vma, false));
                return Ok(());
            }
            return self.break_cow(vma, va);
        }
        let (frame, exclusive) = self.fill_page(vma, va)?;
        let mut flags = Self::page_flags(vma, exclusive);
        if let Some((source, index)) = Self::tracked_shared(vma, va) {
            if access == FaultAccess::Write {
                source.page_mkwrite(index).map_err(mkwrite_error)?;
            } else {
                flags.writable = false;
            }
        }
        self.page_table.map(va, frame, flags).map_err(|_| FaultError::OutOfMemory)?;
        if access != FaultAccess::Write {
            self.fault_around(vma, va);
        }
        Ok(())
    }

    /// After a read or execute fault on a file mapping, maps the
    /// neighbours of `va` the file already holds in frames, read-only (a
    /// write still faults and copies or marks them), within the aligned
    /// `FAULT_AROUND_PAGES` window and the area: Linux's fault-around
    /// (fault_around_bytes, 64 KiB), which saves a fault per page for a
    /// program reading a mapped file or running mapped text.
    fn fault_around(&self, vma: &Vma, va: u64) {
        let (source, offset, segment_end, partial) = match &vma.backing {
            Backing::SharedFile { source, offset, .. } => (source, *offset, None, true),
            Backing::File { source, offset, segment_end } => (source, *offset, *segment_end, false),
            _ => return,
        };
        if !offset.is_multiple_of(PAGE_SIZE) {
            return;
        }
        let window = FAULT_AROUND_PAGES * PAGE_SIZE;
        let start = (va & !(window - 1)).max(vma.start);
        let end = ((va & !(window - 1)) + window).min(vma.end);
        let index_of = |addr: u64| (offset + (addr - vma.start)) / PAGE_SIZE;
        let (first, mut last) = (index_of(start), index_of(end));
        if let Some(seg_end) = segment_end {
            // Only pages wholly inside an ELF segment's file bytes map the
            // file's frame; the one holding its end is a private copy.
            last = last.min(seg_end / PAGE_SIZE);
        }
        let skip = index_of(va);
        let mut found: [Option<(u64, UserFrame)>; FAULT_AROUND_PAGES as usize] = Default::default();
        let mut count = 0;
        source.existing_frames(first, last, partial, &mut |index, frame| {
            if index != skip && count < found.len() {
                found[count] = Some((vma.start + index * PAGE_SIZE - offset, frame.clone()));
                count += 1;
            }
        });
        if count == 0 {
            return;
        }
        let mut pages = found.iter_mut().filter_map(Option::take);
        let mut flags = Self::page_flags(vma, false);
        if Self::tracked_shared(vma, vma.start).is_some() {
            // A store must fault, to mark the page dirty.
            flags.writable = false;
        }
        // Best effort: a neighbour left unmapped just faults later.
        let _ = self.page_table.map_absent(&mut pages, flags);
    }

    fn break_cow(&self, vma: &Vma, va: u64) -> Result<(), FaultError> {
        let frame = self.page_table.frame_at(va).ok_or(FaultError::Unmapped)?;
        // Our handle plus the page table's: nobody else shares it.
        if frame.ref_count() == 2 {
            self.page_table.protect(va, Self::page_flags(vma, true));
            return Ok(());
        }
        let copy = frame.duplicate().map_err(|_| FaultError::OutOfMemory)?;
        self.page_table.map(va, copy, Self::page_flags(vma, true)).map_err(|_| FaultError::OutOfMemory)
    }

    /// The frame for a missing page, and whether this address space owns
    /// it alone (so a private writable mapping may map it writable).
    fn fill_page(&self, vma: &Vma, va: u64) -> Result<(UserFrame, bool), FaultError> {
        match &vma.backing {
            Backing::Anonymous => Ok((UserFrame::alloc_zeroed().map_err(|_| FaultError::OutOfMemory)?, true)),
            Backing::SharedAnonymous { pages, first_index } => {
                Ok((pages.page(first_index + (va - vma.start) / PAGE_SIZE).ok_or(FaultError::OutOfMemory)?, false))
            }
            Backing::SharedFile { source, offset, .. } => {
                let index = (offset + (va - vma.start)) / PAGE_SIZE;
                match source.frame_to_map(index, true) {
                    Some(Ok(Some(frame))) => Ok((frame, false)),
                    Some(Ok(None)) | Some(Err(_)) => Err(FaultError::BusError),
                    // mmap only makes shared file mappings of files with frames.
                    None => Err(FaultError::Unmapped),
                }
            }
            Backing::File { source, offset, segment_end } => {
                let file_off = offset + (va - vma.start);
                let file_end = match segment_end {
                    Some(end) => *end,
                    None => {
                        let size = source.metadata().size;
                        if file_off >= size {
                            return Err(FaultError::BusError);
                        }
                        size
                    }
                };
                // A page wholly inside the file's mapped bytes maps the
                // file's own frame, read-only: a write copies it first.
                // Otherwise (no frames, the file's end inside the page, or
                // a hole its full file system cannot give a frame) the
                // page is a private copy.
                if file_off.is_multiple_of(PAGE_SIZE) && file_off + PAGE_SIZE <= file_end {
                    if let Some(Ok(Some(frame))) = source.frame_to_map(file_off / PAGE_SIZE, false) {
                        return Ok((frame, false));
                    }
                }
                let frame = UserFrame::alloc_zeroed().map_err(|_| FaultError::OutOfMemory)?;
                if file_off < file_end {
                    let mut buf = [0u8; PAGE_SIZE as usize];
                    let want = ((file_end - file_off) as usize).min(buf.len());
                    let got = source.read_at(file_off, &mut buf[..want]).unwrap_or(0);
                    frame.write(0, &buf[..got.min(want)]);
                }
                Ok((frame, true))
            }
            Backing::Special { mapping, first_index } => {
                let index = first_index + (va - vma.start) / PAGE_SIZE;
                match mapping.frames.get(index as usize) {
                    Some(Some(frame)) => Ok((frame.clone(), false)),
                    _ => Err(FaultError::BusError),
                }
            }
        }
    }

    /// Is [start, end) free of VMAs?
    pub fn is_free(&self, start: u64, end: u64) -> bool {
        match self.vmas.range(..end).next_back() {
            Some((_, v)) => v.end <= start,
            None => true,
        }
    }

    /// Where an area's room for new mappings ends below it: a stack keeps
    /// its guard gap free (Linux's vm_start_gap).
    fn start_gap(v: &Vma) -> u64 {
        if matches!(v.kind, VmaKind::Stack | VmaKind::GrowsDown) {
            v.start.saturating_sub(STACK_GUARD_GAP)
        } else {
            v.start
        }
    }

    /// Whether any area lies in [start, end).
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        !self.is_free(start, end)
    }

    /// shmdt: unmaps the System V shared memory attachment whose start
    /// is `addr`, with every piece of it left by mprotect or munmap (the
    /// areas of the same segment at the offsets the attachment gave
    /// them), as Linux does; EINVAL when none starts there.
    pub fn detach_shm(&mut self, addr: u64) -> Result<(), Errno> {
        let is_piece = |v: &Vma| match &v.backing {
            Backing::SharedFile { source, offset, attach: Some(_), .. } => {
                (v.start >= addr && v.start - addr == *offset).then(|| source.clone())
            }
            _ => None,
        };
        let first = self.vmas.values().filter(|v| v.end > addr).find_map(|v| is_piece(v).map(|s| (v.start, v.end, s)));
        let (start, end, source) = first.ok_or(Errno::EINVAL)?;
        let size = page_ceil(source.metadata().size).unwrap_or(u64::MAX);
        self.remove_range(start, end);
        let rest: Vec<(u64, u64)> = self
            .vmas
            .values()
            .filter(|v| v.start >= end && v.end - addr <= size)
            .filter(|v| is_piece(v).is_some_and(|s| Arc::ptr_eq(&s, &source)))
            .map(|v| (v.start, v.end))
            .collect();
        for (s, e) in rest {
            self.remove_range(s, e);
        }
        Ok(())
    }

    /// Finds a free range of `len` bytes, top-down from MMAP_BASE (where
    /// mmap without a hint, the ELF interpreter and the vDSO go).
    pub fn find_free(&self, len: u64) -> Option<u64> {
        let mut top = MMAP_BASE;
        for v in self.vmas.values().rev() {
            let start = Self::start_gap(v);
            if start >= top {
                continue;
            }
            if v.end <= top && top - v.end >= len {
                return Some(top - len);
            }
            top = top.min(start);
        }
        top.checked_sub(len).filter(|s| *s >= super::mmap_min_addr())
    }

    /// Splits VMAs so that `addr` is a boundary.
    pub(super) fn split_at(&mut self, addr: u64) {
        let key = match self.vmas.range(..addr).next_back() {
            Some((k, v)) if v.end > addr => *k,
            _ => return,
        };
        let vma = self.vmas.get_mut(&key).expect("vma present");
        let tail = vma.split_off(addr);
        self.vmas.insert(addr, tail);
    }

    /// Removes every mapping in [start, end).
    fn remove_range(&mut self, start: u64, end: u64) {
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<u64> = self.vmas.range(start..end).map(|(k, _)| *k).collect();
        for k in keys {
            if let Some(v) = self.vmas.remove(&k) {
                self.unmap_pages(v.start, v.end);
                self.account_vm(0, v.end - v.start);
            }
        }
    }

    /// Unmaps the pages of `source` at file offsets `from` and beyond, in
    /// every area that maps it (the file shrank). The areas stay: touching
    /// them faults again and finds the new end of the file.
    pub fn unmap_file_from(&mut self, source: &Arc<dyn crate::fs::Inode>, from: u64) {
        for v in self.vmas.values() {
            let (Backing::File { source: s, offset, .. } | Backing::SharedFile { source: s, offset, .. }) = &v.backing
            else {
                continue;
            };
            if !Arc::ptr_eq(s, source) {
                continue;
            }
            let first = if from <= *offset { v.start } else { v.start.saturating_add(from - offset) };
            if first < v.end {
                self.unmap_pages(first, v.end);
            }
        }
    }

    /// The files shared mappings in [start, end) map, with the file byte
    /// range each covers there (msync).
    pub fn shared_files_in(&self, start: u64, end: u64) -> Vec<(Arc<dyn crate::fs::Inode>, u64, u64)> {
        let mut out = Vec::new();
        for v in self.vmas.range(..end).map(|(_, v)| v).filter(|v| v.end > start) {
            if let Backing::SharedFile { source, offset, .. } = &v.backing {
                let (s, e) = (start.max(v.start), end.min(v.end));
                if out.try_reserve(1).is_ok() {
                    out.push((source.clone(), offset + (s - v.start), offset + (e - v.start)));
                }
            }
        }
        out
    }

    /// Whether an area maps `source` shared from a description open for
    /// writing (F_SEAL_WRITE's EBUSY).
    pub fn maps_writable_shared(&self, source: &Arc<dyn crate::fs::Inode>) -> bool {
        self.vmas.values().any(
            |v| matches!(&v.backing, Backing::SharedFile { source: s, may_write: true, .. } if Arc::ptr_eq(s, source)),
        )
    }

    pub(super) fn unmap_pages(&self, start: u64, end: u64) {
        self.hiwater_rss.fetch_max(self.page_table.resident_pages(), core::sync::atomic::Ordering::Relaxed);
        // One TLB shootdown for the range, not one per page.
        let mut batch = self.page_table.batch();
        for (va, _) in self.page_table.mapped_pages(start, end) {
            batch.unmap(va);
        }
    }

    /// Adds a VMA (the range must be free).
    pub fn insert(&mut self, vma: Vma) -> Result<(), Errno> {
        if vma.start >= vma.end || vma.end > USER_END || !self.is_free(vma.start, vma.end) {
            return Err(Errno::EINVAL);
        }
        self.account_vm(vma.end - vma.start, 0);
        self.vmas.insert(vma.start, vma);
        Ok(())
    }

    /// The mmap policy: places and records a mapping, returns its address.
    pub fn mmap(
        &mut self,
        hint: u64,
        len: u64,
        prot: Prot,
        backing: Backing,
        fixed: bool,
        noreplace: bool,
    ) -> Result<u64, Errno> {
        let len = page_ceil(len).ok_or(Errno::ENOMEM)?;
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        // vm.max_map_count, checked as Linux's do_mmap does.
        if self.vmas.len() > super::max_map_count() {
            return Err(Errno::ENOMEM);
        }
        let min_addr = super::mmap_min_addr();
        let start = if fixed || noreplace {
            if !hint.is_multiple_of(PAGE_SIZE) {
                return Err(Errno::EINVAL);
            }
            let end = hint.checked_add(len).ok_or(Errno::ENOMEM)?;
            if end > USER_END || hint < min_addr {
                return Err(if hint < min_addr { Errno::EPERM } else { Errno::ENOMEM });
            }
            if !self.is_free(hint, end) {
                if noreplace {
                    return Err(Errno::EEXIST);
                }
                self.remove_range(hint, end);
            }
            hint
        } else {
            let h = page_floor(hint);
            match h.checked_add(len) {
                Some(end) if h >= min_addr && end <= MMAP_BASE && self.is_free(h, end) => h,
                _ => self.find_free(len).ok_or(Errno::ENOMEM)?,
            }
        };
        self.account_vm(len, 0);
        let flags = self.new_area_flags();
        self.vmas
            .insert(start, Vma { start, end: start + len, prot, backing, kind: VmaKind::Normal, name: None, flags });
        if flags.locked && !flags.lock_on_fault {
            self.populate_locked(start, start + len);
        }
        Ok(start)
    }

    /// mremap(2): shrink in place, grow in place when the space after is
    /// free, otherwise move (with MREMAP_MAYMOVE) by moving the pages.
    pub fn mremap(
        &mut self,
        old: u64,
        old_len: u64,
        new_len: u64,
        may_move: bool,
        fixed: Option<u64>,
    ) -> Result<u64, Errno> {
        if !old.is_multiple_of(PAGE_SIZE) || new_len == 0 {
            return Err(Errno::EINVAL);
        }
        let old_len = page_ceil(old_len).ok_or(Errno::EINVAL)?;
        let new_len = page_ceil(new_len).ok_or(Errno::ENOMEM)?;
        let (vma_start, vma_end, special) = self
            .find(old)
            .map(|v| (v.start, v.end, matches!(v.backing, Backing::Special { .. })))
            .ok_or(Errno::EFAULT)?;
        if old + old_len.max(PAGE_SIZE) > vma_end {
            return Err(Errno::EFAULT);
        }
        // Kernel-provided pages may move or shrink but never grow (Linux's
        // VM_DONTEXPAND on special mappings).
        if new_len > old_len && special {
            return Err(Errno::EFAULT);
        }
        if fixed.is_none() {
            if new_len <= old_len {
                if new_len < old_len {
                    self.remove_range(old + new_len, old + old_len);
                }
                return Ok(old);
            }
            let grow_end = old.checked_add(new_len).ok_or(Errno::ENOMEM)?;
            if old + old_len == vma_end && grow_end <= MMAP_BASE && self.is_free(vma_end, grow_end) {
                self.vmas.get_mut(&vma_start).expect("vma present").end = grow_end;
                self.account_vm(grow_end - vma_end, 0);
                return Ok(old);
            }
            if !may_move {
                return Err(Errno::ENOMEM);
            }
        }
        let dest = match fixed {
            Some(addr) => {
                if addr % PAGE_SIZE != 0 || (addr < old + old_len && old < addr + new_len) {
                    return Err(Errno::EINVAL);
                }
                self.remove_range(addr, addr + new_len);
                addr
            }
            None => self.find_free(new_len).ok_or(Errno::ENOMEM)?,
        };
        // The moved area keeps the backing of the old range's start.
        self.split_at(old);
        let mut moved = self.find(old).ok_or(Errno::EFAULT)?.clone();
        moved.start = dest;
        moved.end = dest + new_len;
        let keep = old_len.min(new_len);
        let mut batch = self.page_table.batch();
        for (va, flags) in self.page_table.mapped_pages(old, old + keep) {
            if let Some(frame) = batch.take(va) {
                self.page_table.map(dest + (va - old), frame, flags).map_err(|_| Errno::ENOMEM)?;
            }
        }
        drop(batch);
        self.remove_range(old, old + old_len);
        self.account_vm(new_len, 0);
        self.vmas.insert(dest, moved);
        Ok(dest)
    }

    /// Linux's default overcommit heuristic: one mapping may not ask for
    /// more than all of RAM (there is no swap).
    pub fn check_commit(len: u64) -> Result<(), Errno> {
        if super::overcommit_memory() == 1 {
            return Ok(());
        }
        let total = hal::mm::total_frame_count() * PAGE_SIZE;
        if len > total {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    }

    pub fn munmap(&mut self, addr: u64, len: u64) -> Result<(), Errno> {
        if !addr.is_multiple_of(PAGE_SIZE) || len == 0 {
            return Err(Errno::EINVAL);
        }
        let end = page_ceil(addr.checked_add(len).ok_or(Errno::EINVAL)?).ok_or(Errno::EINVAL)?;
        if end > USER_END {
            return Err(Errno::EINVAL);
        }
        self.remove_range(addr, end);
        Ok(())
    }

    /// Do VMAs cover every page of [start, end), with no gap?
    pub fn covers(&self, start: u64, end: u64) -> bool {
        let mut cursor = start;
        for v in self.vmas.range(..end).map(|(_, v)| v).filter(|v| v.end > start) {
            if v.start > cursor {
                return false;
            }
            cursor = v.end;
        }
        cursor >= end
    }

    pub fn mprotect(&mut self, addr: u64, len: u64, prot: Prot) -> Result<(), Errno> {
        if !addr.is_multiple_of(PAGE_SIZE) {
            return Err(Errno::EINVAL);
        }
        let end = page_ceil(addr.checked_add(len).ok_or(Errno::ENOMEM)?).ok_or(Errno::ENOMEM)?;
        if end == addr {
            return Ok(());
        }
        // Linux: every page of the range must be mapped.
        if !self.covers(addr, end) {
            return Err(Errno::ENOMEM);
        }
        // A shared mapping of a file opened read-only may never be written.
        let read_only_file = |v: &Vma| matches!(v.backing, Backing::SharedFile { may_write: false, .. });
        if prot.write && self.vmas.range(..end).map(|(_, v)| v).any(|v| v.end > addr && read_only_file(v)) {
            return Err(Errno::EACCES);
        }
        // Kernel-provided pages allow only what their mapping may (the
        // vDSO data page is never writable nor executable, as on Linux).
        let special_refuses = |v: &Vma| match v.backing {
            Backing::Special { mapping, .. } => (prot.write && !mapping.may_write) || (prot.exec && !mapping.may_exec),
            _ => false,
        };
        if self.vmas.range(..end).map(|(_, v)| v).any(|v| v.end > addr && special_refuses(v)) {
            return Err(Errno::EACCES);
        }
        self.split_at(addr);
        self.split_at(end);
        let keys: Vec<u64> = self.vmas.range(addr..end).map(|(k, _)| *k).collect();
        for k in keys {
            let vma = self.vmas.get_mut(&k).expect("vma present");
            vma.prot = prot;
            let (start, end, flags) = (vma.start, vma.end, Self::page_flags(vma, false));
            // Pages of a file made writable in place are dirty now; one
            // whose blocks the disk cannot promise stays read-only, so a
            // store to it faults (and gets SIGBUS there, as on Linux).
            let mut refused = Vec::new();
            if prot.write {
                for (va, _) in self.page_table.mapped_pages(start, end) {
                    if let Some((source, index)) = Self::tracked_shared(vma, va) {
                        if source.page_mkwrite(index).is_err() && refused.try_reserve(1).is_ok() {
                            refused.push(va);
                        }
                    }
                }
            }
            let read_only = PteFlags { writable: false, ..flags };
            let mut batch = self.page_table.batch();
            for (va, _) in self.page_table.mapped_pages(start, end) {
                // Private pages get write access back through a fault, which
                // checks whether they are still shared.
                batch.protect(va, if refused.contains(&va) { read_only } else { flags });
            }
        }
        Ok(())
    }

    pub fn set_brk_base(&mut self, base: u64) {
        self.brk_start = base;
        self.brk = base;
    }

    /// brk(2): moves the program break; returns the (possibly unchanged) break.
    pub fn brk(&mut self, new: u64) -> u64 {
        if new < self.brk_start || new == 0 {
            return self.brk;
        }
        let old_top = page_ceil(self.brk).unwrap_or(self.brk);
        let new_top = match page_ceil(new) {
            Some(t) if t <= BRK_LIMIT => t,
            _ => return self.brk,
        };
        if new_top > old_top {
            if !self.is_free(old_top, new_top) {
                return self.brk;
            }
            let heap = self.vmas.values().find(|v| v.kind == VmaKind::Heap && v.end == old_top).map(|v| v.start);
            match heap {
                Some(k) => {
                    let heap = self.vmas.get_mut(&k).expect("heap vma");
                    heap.end = new_top;
                    let populate = heap.flags.locked && !heap.flags.lock_on_fault;
                    self.account_vm(new_top - old_top, 0);
                    if populate {
                        self.populate_locked(old_top, new_top);
                    }
                }
                None => {
                    let vma = Vma {
                        start: old_top,
                        end: new_top,
                        prot: Prot { read: true, write: true, exec: false },
                        backing: Backing::Anonymous,
                        kind: VmaKind::Heap,
                        name: None,
                        flags: self.new_area_flags(),
                    };
                    self.account_vm(new_top - old_top, 0);
                    let populate = vma.flags.locked && !vma.flags.lock_on_fault;
                    self.vmas.insert(old_top, vma);
                    if populate {
                        self.populate_locked(old_top, new_top);
                    }
                }
            }
        } else if new_top < old_top {
            self.remove_range(new_top, old_top);
        }
        self.brk = new;
        new
    }

    /// A copy-on-write duplicate for `fork`.
    pub fn fork(&mut self) -> Result<AddressSpace, Errno> {
        let child = AddressSpace::new()?;
        // The parent's other threads may run on other CPUs with writable
        // translations cached: they must lose them before fork returns.
        let mut batch = self.page_table.batch();
        for vma in self.vmas.values() {
            // MADV_DONTFORK areas are not in the child; MADV_WIPEONFORK
            // ones are, but empty.
            if vma.flags.dont_fork || vma.flags.wipe_on_fork {
                continue;
            }
            for (va, flags) in self.page_table.mapped_pages(vma.start, vma.end) {
                let frame = self.page_table.frame_at(va).ok_or(Errno::EFAULT)?;
                // The kernel's own pages (the vDSO) come back by a fault
                // if the child uses them, as Linux copies no entries for
                // them either; only a private copy (written after
                // mprotect) is the process's data. Copying them cost the
                // child a page-table page, 4,000 instructions per fork.
                if let Backing::Special { mapping, first_index } = &vma.backing {
                    let index = (first_index + (va - vma.start) / PAGE_SIZE) as usize;
                    if mapping.frames.get(index).and_then(|f| f.as_ref()).is_some_and(|f| f.paddr() == frame.paddr()) {
                        continue;
                    }
                }
                let child_flags = if vma.is_shared() {
                    flags
                } else {
                    if flags.writable {
                        batch.protect(va, PteFlags { writable: false, ..flags });
                    }
                    PteFlags { writable: false, ..flags }
                };
                child.page_table.map(va, frame, child_flags).map_err(|_| Errno::ENOMEM)?;
            }
        }
        let mut child = child;
        // Locks are not inherited (mlock(2)), nor is MCL_FUTURE.
        for vma in self.vmas.values().filter(|v| !v.flags.dont_fork) {
            let mut copy = vma.clone();
            copy.flags.locked = false;
            copy.flags.lock_on_fault = false;
            child.vmas.insert(copy.start, copy);
        }
        // The mm is copied whole on Linux, registrations included.
        child.membarrier_registered = self.membarrier_registered;
        child.total_vm = child.vmas.values().map(|v| v.end - v.start).sum();
        child.hiwater_vm = child.total_vm;
        child.set_stack_limit(self.stack_limit.load(core::sync::atomic::Ordering::Relaxed));
        child.brk_start = self.brk_start;
        child.brk = self.brk;
        Ok(child)
    }

    /// Anonymous shared memory object for a new MAP_SHARED|MAP_ANONYMOUS.
    pub fn new_shared_backing() -> Result<Backing, Errno> {
        Ok(Backing::SharedAnonymous {
            pages: Arc::try_new(SharedPages::new()).map_err(|_| Errno::ENOMEM)?,
            first_index: 0,
        })
    }

    /// Diagnostic text for the VMA around `addr`.
    pub fn describe_fault(&self, addr: u64) -> alloc::string::String {
        match self.find(addr) {
            Some(v) => {
                alloc::format!("{:#x}-{:#x} {:?} shared={} kind={:?}", v.start, v.end, v.prot, v.is_shared(), v.kind)
            }
            None => alloc::string::String::from("none"),
        }
    }

    /// Makes the area at `start` a MAP_GROWSDOWN one.
    pub fn set_grows_down(&mut self, start: u64) {
        if let Some(v) = self.vmas.get_mut(&start) {
            v.kind = VmaKind::GrowsDown;
        }
    }

    /// mprotect with PROT_GROWSDOWN: the start of the growing area that
    /// holds `addr` (the change reaches down to it), or EINVAL.
    pub fn grows_down_start(&self, addr: u64) -> Result<u64, Errno> {
        match self.find(addr) {
            Some(v) if matches!(v.kind, VmaKind::Stack | VmaKind::GrowsDown) => Ok(v.start),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Names the VMA starting at `start` (the file it maps).
    pub fn set_name(&mut self, start: u64, name: &str) {
        if let Some(v) = self.vmas.get_mut(&start) {
            v.name = Some(alloc::string::String::from(name));
        }
    }

    /// Bytes covered by VMAs (VmSize).
    pub fn mapped_bytes(&self) -> u64 {
        self.vmas.values().map(|v| v.end - v.start).sum()
    }

    /// The physical address behind `addr` if it lies in shared memory
    /// (futex keys for process-shared futexes).
    pub fn shared_frame_at(&self, addr: u64) -> Option<u64> {
        let vma = self.find(addr)?;
        if !vma.is_shared() {
            return None;
        }
        self.page_table.query(addr).map(|(pa, _)| pa.0 + addr % PAGE_SIZE)
    }

    /// The areas a core dump holds, as Linux's default coredump_filter
    /// (0x33) picks them: (start, end, prot, bytes to dump from the
    /// start). Anonymous memory is dumped whole once it has a page, shared
    /// file mappings not at all, a private file mapping whole once written
    /// (a page of it is this space's own copy), else only a first page
    /// that holds an ELF header.
    pub fn core_areas(&self) -> Vec<(u64, u64, Prot, u64)> {
        let mut out = Vec::new();
        if out.try_reserve(self.vmas.len()).is_err() {
            return out;
        }
        for v in self.vmas.values() {
            let has_page = || !self.page_table.mapped_pages(v.start, v.end).is_empty();
            let size = v.end - v.start;
            let dump = match &v.backing {
                // The vDSO and its data are always dumped whole, as Linux's
                // always_dump_vma does for special mappings.
                Backing::Special { .. } => size,
                _ if v.flags.dont_dump => 0,
                Backing::SharedFile { .. } => 0,
                Backing::SharedAnonymous { .. } | Backing::Anonymous => {
                    if has_page() {
                        size
                    } else {
                        0
                    }
                }
                Backing::File { source, offset, .. } => {
                    let written = v.prot.write
                        && self
                            .page_table
                            .mapped_pages(v.start, v.end)
                            .iter()
                            .any(|(va, _)| self.page_table.frame_at(*va).is_some_and(|f| f.ref_count() <= 2));
                    let mut magic = [0u8; 4];
                    if written {
                        size
                    } else if *offset == 0
                        && v.prot.read
                        && source.read_at(0, &mut magic).ok() == Some(4)
                        && magic == *b"\x7fELF"
                    {
                        PAGE_SIZE
                    } else {
                        0
                    }
                }
            };
            out.push((v.start, v.end, v.prot, dump));
        }
        out
    }

    /// Copies the page at `va` for a core dump, whatever its protection;
    /// false (and `buf` untouched) when no page is there.
    pub fn read_page_for_dump(&self, va: u64, buf: &mut [u8]) -> bool {
        let frame = self.page_table.frame_at(page_floor(va)).or_else(|| {
            // A special mapping's page needs no fault to be read (fork
            // leaves the vDSO's unmapped until touched).
            let v = self.find(va)?;
            match &v.backing {
                Backing::Special { mapping, first_index } => {
                    let index = first_index + (page_floor(va) - v.start) / PAGE_SIZE;
                    mapping.frames.get(index as usize)?.clone()
                }
                _ => None,
            }
        });
        match frame {
            Some(frame) => {
                frame.read(0, buf);
                true
            }
            None => false,
        }
    }

    /// Whether `addr` lies in private anonymous memory that may not be
    /// written: Linux refuses such a page as a shared futex's key (it can
    /// never change), where a read-only file page is fine.
    pub fn is_read_only_anonymous(&self, addr: u64) -> bool {
        self.find(addr).is_some_and(|v| !v.prot.write && matches!(v.backing, Backing::Anonymous))
    }

    /// Writes into this address space whether or not it is the active
    /// one (used to build a new program's stack), faulting pages in.
    /// The frame of the page at `va` as an access by this space's own
    /// program would find it (faulted in, a private copy for a write),
    /// for process_vm_readv/writev; None where the program would fault.
    pub fn frame_for_access(&mut self, va: u64, write: bool) -> Option<UserFrame> {
        let access = if write { FaultAccess::Write } else { FaultAccess::Read };
        self.handle_fault(va, access).ok()?;
        self.page_table.frame_at(page_floor(va))
    }

    pub fn write_remote(&mut self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        while done < data.len() {
            let va = addr + done as u64;
            let page = page_floor(va);
            let off = (va - page) as usize;
            let n = (PAGE_SIZE as usize - off).min(data.len() - done);
            self.handle_fault(va, FaultAccess::Write).map_err(|_| Errno::EFAULT)?;
            let frame = self.page_table.frame_at(page).ok_or(Errno::EFAULT)?;
            frame.write(off, &data[done..done + n]);
            done += n;
        }
        Ok(())
    }
}

impl AddressSpace {
    /// A debugger's access to this address space (ptrace PEEK/POKE,
    /// Linux's FOLL_FORCE): any mapped page can be read whatever its
    /// protection; a private mapping can be written even where it is
    /// read-only (a breakpoint in text), always into a private copy, so
    /// the file's own frame never changes; a shared mapping only where it
    /// is writable. Returns how many bytes were done before the first
    /// address that could not be.
    pub fn access_forced(&mut self, addr: u64, buf: &mut [u8], write: bool) -> usize {
        let mut done = 0usize;
        while done < buf.len() {
            let Some(va) = addr.checked_add(done as u64) else {
                break;
            };
            let page = page_floor(va);
            let off = (va - page) as usize;
            let n = (PAGE_SIZE as usize - off).min(buf.len() - done);
            let Some(frame) = self.forced_frame(page, write) else {
                break;
            };
            if write {
                frame.write(off, &buf[done..done + n]);
            } else {
                frame.read(off, &mut buf[done..done + n]);
            }
            done += n;
        }
        done
    }

    /// The frame a forced access at page `va` reads or writes: present
    /// (filled if needed), and for a private write this space's own copy.
    fn forced_frame(&mut self, va: u64, write: bool) -> Option<UserFrame> {
        let vma = self.find(va)?.clone();
        if vma.is_shared() && write && !vma.prot.write {
            return None;
        }
        if self.page_table.query(va).is_none() {
            let (frame, exclusive) = self.fill_page(&vma, va).ok()?;
            self.page_table.map(va, frame, Self::page_flags(&vma, exclusive)).ok()?;
        }
        let frame = self.page_table.frame_at(va)?;
        if !write || vma.is_shared() {
            return Some(frame);
        }
        // Our handle plus the page table's: nobody else sees this page.
        if frame.ref_count() == 2 {
            return Some(frame);
        }
        let copy = frame.duplicate().ok()?;
        drop(frame);
        self.page_table.map(va, copy.clone(), Self::page_flags(&vma, true)).ok()?;
        Some(copy)
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        // The page table releases every frame reference it holds.
        self.vmas.clear();
    }
}
