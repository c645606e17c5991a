//! What user space tells the kernel about its memory: mlock/munlock and
//! mlockall (VM_LOCKED areas, faulted in at once unless MLOCK_ONFAULT;
//! Kiln reclaims no page anyway, so locked pages simply stay), mincore
//! (which pages are resident), and madvise's per-area flags and actions.
//!
//! Range rules follow Linux: a range that is not wholly mapped gives
//! ENOMEM, after the mapped parts were acted on (madvise, mlock).

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::aspace::{AddressSpace, FaultAccess};
use super::vma::{Backing, MemPolicy, SharedPages, Vma, VmaFlags};

/// A shared object whose pages MADV_REMOVE freed.
pub enum SharedObject {
    Anonymous(Arc<SharedPages>),
    File(Arc<dyn crate::fs::Inode>),
}
use super::{page_ceil, PAGE_SIZE};

/// A page-aligned [start, end) from a user (addr, len), Linux's mlock
/// rounding: the start rounds down, the length up with it.
pub fn lock_range(addr: u64, len: u64) -> Result<(u64, u64), Errno> {
    let start = addr & !(PAGE_SIZE - 1);
    let end = addr.checked_add(len).and_then(page_ceil).ok_or(Errno::ENOMEM)?;
    Ok((start, end))
}

impl AddressSpace {
    /// Flags a new area starts with (mlockall(MCL_FUTURE)).
    pub(super) fn new_area_flags(&self) -> VmaFlags {
        VmaFlags {
            locked: self.lock_future.is_some(),
            lock_on_fault: self.lock_future == Some(true),
            ..VmaFlags::default()
        }
    }

    /// Applies `f` to the flags of every area in [start, end), splitting
    /// at the ends; ENOMEM if a page of the range is unmapped (the areas
    /// before the hole were changed, as on Linux).
    fn update_flags(&mut self, start: u64, end: u64, mut f: impl FnMut(&mut Vma)) -> Result<(), Errno> {
        if end <= start {
            return Ok(());
        }
        self.split_at(start);
        self.split_at(end);
        let mut cursor = start;
        let keys: Vec<u64> = self.vmas.range(..end).filter(|(_, v)| v.end > start).map(|(k, _)| *k).collect();
        for k in keys {
            if k > cursor {
                return Err(Errno::ENOMEM);
            }
            let vma = self.vmas.get_mut(&k).expect("vma present");
            f(vma);
            cursor = vma.end;
        }
        if cursor < end {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    }

    /// Whether the page at `addr` is in this address space's page tables,
    /// and whether its area is private anonymous memory; None outside
    /// every area (move_pages' status).
    pub fn page_presence(&self, addr: u64) -> Option<(bool, bool)> {
        let (_, v) = self.vmas.range(..=addr).next_back()?;
        if addr >= v.end {
            return None;
        }
        let present = self.page_table.query(addr & !(PAGE_SIZE - 1)).is_some();
        Some((present, matches!(v.backing, Backing::Anonymous)))
    }

    /// The mbind policy of the area holding `addr`; None when no area
    /// does (get_mempolicy's MPOL_F_ADDR).
    pub fn mempolicy_at(&self, addr: u64) -> Option<Option<MemPolicy>> {
        let (_, v) = self.vmas.range(..=addr).next_back()?;
        (addr < v.end).then_some(v.flags.mempolicy)
    }

    /// The policies of the areas meeting [start, end), and whether the
    /// areas cover the range without a hole.
    pub fn mempolicies_in(&self, start: u64, end: u64) -> (Vec<Option<MemPolicy>>, bool) {
        let mut cursor = start;
        let mut whole = true;
        let mut out = Vec::new();
        for v in self.vmas.range(..end).map(|(_, v)| v).filter(|v| v.end > start) {
            if v.start > cursor {
                whole = false;
            }
            cursor = v.end;
            out.push(v.flags.mempolicy);
        }
        (out, whole && cursor >= end)
    }

    /// mbind: gives the areas in [start, end) `policy`, splitting them at
    /// the ends; holes are skipped (the caller has decided they are fine).
    pub fn set_mempolicy_range(&mut self, start: u64, end: u64, policy: Option<MemPolicy>) {
        self.split_at(start);
        self.split_at(end);
        for (_, v) in self.vmas.range_mut(start..end) {
            v.flags.mempolicy = policy;
        }
    }

    /// Bytes in locked areas (VmLck).
    pub fn locked_bytes(&self) -> u64 {
        self.vmas.values().filter(|v| v.flags.locked).map(|v| v.end - v.start).sum()
    }

    /// Locked bytes inside [start, end).
    fn locked_bytes_in(&self, start: u64, end: u64) -> u64 {
        self.vmas
            .values()
            .filter(|v| v.flags.locked && v.end > start && v.start < end)
            .map(|v| v.end.min(end) - v.start.max(start))
            .sum()
    }

    /// Faults in every accessible page of the locked areas in
    /// [start, end): writable private pages get their own copy now, so a
    /// later write does not fault either. Errors are Linux's
    /// `__mm_populate` ones turned into mlock's (EAGAIN for no memory).
    pub(super) fn populate_locked(&mut self, start: u64, end: u64) {
        let _ = self.populate(start, end, None);
    }

    /// Faults in [start, end): `write` None = as mlock does (write for
    /// writable private areas, read otherwise), Some(w) = MADV_POPULATE_*.
    fn populate(&mut self, start: u64, end: u64, write: Option<bool>) -> Result<(), Errno> {
        let mut va = start;
        while va < end {
            // The area's facts, not a copy of it: copying an area opens it
            // (a shared memory attachment would count it).
            let Some((vma_end, prot, shared)) = self.find(va).map(|v| (v.end, v.prot, v.is_shared())) else {
                return Err(Errno::ENOMEM);
            };
            let stop = vma_end.min(end);
            let accessible = prot.read || prot.write || prot.exec;
            // An access the area forbids: EFAULT for mlock's populate
            // (which turns it into ENOMEM), EINVAL for MADV_POPULATE_*.
            let access = match write {
                None if !accessible => return Err(Errno::EFAULT),
                None if prot.write && !shared => FaultAccess::Write,
                None => FaultAccess::Read,
                Some(true) if !prot.write => return Err(Errno::EINVAL),
                Some(true) => FaultAccess::Write,
                Some(false) if !accessible => return Err(Errno::EINVAL),
                Some(false) => FaultAccess::Read,
            };
            while va < stop {
                match self.handle_fault(va, access) {
                    Ok(()) => {}
                    Err(super::FaultError::OutOfMemory) => return Err(Errno::ENOMEM),
                    Err(_) => return Err(Errno::EFAULT),
                }
                va += PAGE_SIZE;
            }
        }
        Ok(())
    }

    /// mlock/mlock2: locks the areas of [start, end) and faults their
    /// pages in unless `on_fault`. `limit` is RLIMIT_MEMLOCK in bytes
    /// (None: the caller holds CAP_IPC_LOCK).
    pub fn mlock(&mut self, start: u64, end: u64, on_fault: bool, limit: Option<u64>) -> Result<(), Errno> {
        if end <= start {
            return Ok(());
        }
        if let Some(limit) = limit {
            let after = self.locked_bytes() + (end - start) - self.locked_bytes_in(start, end);
            if after > limit {
                return Err(Errno::ENOMEM);
            }
        }
        self.update_flags(start, end, |v| {
            v.flags.locked = true;
            v.flags.lock_on_fault = on_fault;
        })?;
        if !on_fault {
            // Linux: EFAULT from populating becomes ENOMEM, ENOMEM EAGAIN.
            return self.populate(start, end, None).map_err(|e| match e {
                Errno::ENOMEM => Errno::EAGAIN,
                _ => Errno::ENOMEM,
            });
        }
        Ok(())
    }

    pub fn munlock(&mut self, start: u64, end: u64) -> Result<(), Errno> {
        self.update_flags(start, end, |v| {
            v.flags.locked = false;
            v.flags.lock_on_fault = false;
        })
    }

    /// mlockall(flags) with the flags already checked.
    pub fn mlockall(&mut self, flags: u32, limit: Option<u64>) -> Result<(), Errno> {
        let on_fault = flags & c::MCL_ONFAULT != 0;
        if flags & c::MCL_CURRENT != 0 && limit.is_some_and(|l| self.mapped_bytes() > l) {
            return Err(Errno::ENOMEM);
        }
        self.lock_future = (flags & c::MCL_FUTURE != 0).then_some(on_fault);
        if flags & c::MCL_CURRENT != 0 {
            for v in self.vmas.values_mut() {
                v.flags.locked = true;
                v.flags.lock_on_fault = on_fault;
            }
            if !on_fault {
                let ranges: Vec<(u64, u64)> = self.vmas.values().map(|v| (v.start, v.end)).collect();
                for (s, e) in ranges {
                    // Linux ignores errors here (mm_populate's ignore_errors).
                    let _ = self.populate(s, e, None);
                }
            }
        }
        Ok(())
    }

    pub fn munlockall(&mut self) {
        self.lock_future = None;
        for v in self.vmas.values_mut() {
            v.flags.locked = false;
            v.flags.lock_on_fault = false;
        }
    }

    /// mincore: one byte per page from `start` into `out`, 1 if resident
    /// (mapped here, or in the shared object or file behind the area).
    /// Returns how many bytes were filled: fewer than asked when an
    /// unmapped page comes first, ENOMEM when it is the very first.
    pub fn mincore(&self, start: u64, out: &mut [u8]) -> Result<usize, Errno> {
        for (i, byte) in out.iter_mut().enumerate() {
            let va = start + i as u64 * PAGE_SIZE;
            let Some(vma) = self.find(va) else {
                return if i == 0 { Err(Errno::ENOMEM) } else { Ok(i) };
            };
            *byte = u8::from(self.resident(vma, va));
        }
        Ok(out.len())
    }

    fn resident(&self, vma: &Vma, va: u64) -> bool {
        if self.page_table.query(va).is_some() {
            return true;
        }
        match &vma.backing {
            Backing::Anonymous => false,
            Backing::SharedAnonymous { pages, first_index } => {
                pages.has_page(first_index + (va - vma.start) / PAGE_SIZE)
            }
            Backing::File { source, offset, .. } | Backing::SharedFile { source, offset, .. } => {
                source.has_page((offset + (va - vma.start)) / PAGE_SIZE)
            }
            Backing::Special { mapping, first_index } => {
                mapping.frames.get((first_index + (va - vma.start) / PAGE_SIZE) as usize).is_some_and(|f| f.is_some())
            }
        }
    }

    /// madvise(2) on [start, end) (page-aligned, non-empty).
    pub fn madvise(&mut self, start: u64, end: u64, advice: u32) -> Result<(), Errno> {
        match advice {
            c::MADV_POPULATE_READ | c::MADV_POPULATE_WRITE => {
                return self.populate(start, end, Some(advice == c::MADV_POPULATE_WRITE));
            }
            c::MADV_DONTNEED | c::MADV_DONTNEED_LOCKED | c::MADV_FREE => {
                // Checked for the whole range first: an area that refuses
                // the advice fails the call before anything is dropped
                // from it.
                let mut result = Ok(());
                // Raw kernel pages cannot be dropped either (the vDSO's
                // data page, Linux's VM_PFNMAP): EINVAL, as for FREE on
                // anything but private anonymous memory.
                let areas: Vec<(u64, u64, bool, bool, bool)> = self
                    .vmas
                    .range(..end)
                    .map(|(_, v)| v)
                    .filter(|v| v.end > start)
                    .map(|v| {
                        let raw = matches!(v.backing, Backing::Special { mapping, .. } if mapping.pfn_map);
                        (v.start, v.end, v.flags.locked, matches!(v.backing, Backing::Anonymous), raw)
                    })
                    .collect();
                let mut cursor = start;
                for &(v_start, v_end, locked, anonymous, raw) in &areas {
                    if v_start > cursor {
                        result = Err(Errno::ENOMEM);
                    }
                    let (s, e) = (v_start.max(start), v_end.min(end));
                    if locked && advice != c::MADV_DONTNEED_LOCKED {
                        return Err(Errno::EINVAL);
                    }
                    // MADV_FREE works on private anonymous memory only.
                    if advice == c::MADV_FREE && !anonymous {
                        return Err(Errno::EINVAL);
                    }
                    if raw {
                        return Err(Errno::EINVAL);
                    }
                    // MADV_FREE lets the kernel drop the pages whenever it
                    // likes; Kiln, which has no reclaim to do it later,
                    // gives them back now (reads then see zeros, which
                    // Linux allows).
                    self.unmap_pages(s, e);
                    cursor = v_end;
                }
                if cursor < end {
                    result = Err(Errno::ENOMEM);
                }
                return result;
            }
            c::MADV_REMOVE => return Err(Errno::EINVAL), // see `remove`
            _ => {}
        }
        // Flag-only advice: check every area first where Linux refuses.
        // PAGEOUT and COLD leave locked pages alone, and say so.
        if matches!(advice, c::MADV_PAGEOUT | c::MADV_COLD)
            && self.vmas.range(..end).any(|(_, v)| v.end > start && v.flags.locked)
        {
            return Err(Errno::EINVAL);
        }
        if advice == c::MADV_WIPEONFORK
            && self.vmas.range(..end).any(|(_, v)| v.end > start && !matches!(v.backing, Backing::Anonymous))
        {
            return Err(Errno::EINVAL);
        }
        self.update_flags(start, end, |v| {
            let f = &mut v.flags;
            match advice {
                c::MADV_NORMAL => {
                    f.random = false;
                    f.sequential = false;
                }
                c::MADV_RANDOM => {
                    f.random = true;
                    f.sequential = false;
                }
                c::MADV_SEQUENTIAL => {
                    f.random = false;
                    f.sequential = true;
                }
                c::MADV_DONTFORK => f.dont_fork = true,
                c::MADV_DOFORK => f.dont_fork = false,
                c::MADV_WIPEONFORK => f.wipe_on_fork = true,
                c::MADV_KEEPONFORK => f.wipe_on_fork = false,
                c::MADV_DONTDUMP => f.dont_dump = true,
                c::MADV_DODUMP => f.dont_dump = false,
                c::MADV_MERGEABLE => f.mergeable = true,
                c::MADV_UNMERGEABLE => f.mergeable = false,
                c::MADV_HUGEPAGE => {
                    f.huge_page = true;
                    f.no_huge_page = false;
                }
                c::MADV_NOHUGEPAGE => {
                    f.huge_page = false;
                    f.no_huge_page = true;
                }
                // WILLNEED (read-ahead), COLD (age the pages), PAGEOUT
                // (reclaim; anonymous memory without swap stays),
                // COLLAPSE (huge pages): nothing to do in a kernel without
                // swap, page ageing or huge pages, and nothing a program
                // can tell apart.
                _ => {}
            }
        })
    }

    /// MADV_REMOVE: frees the backing store of a shared writable
    /// mapping, so every sharer reads zeros there. Returns the object
    /// ranges freed: the caller unmaps them from every address space
    /// (`unmap_object_pages`) once this one's lock is dropped.
    pub fn madvise_remove(&mut self, start: u64, end: u64) -> Result<Vec<(SharedObject, u64, u64)>, Errno> {
        let mut freed = Vec::new();
        let mut cursor = start;
        for v in self.vmas.range(..end).map(|(_, v)| v).filter(|v| v.end > start) {
            if v.start > cursor {
                return Err(Errno::ENOMEM);
            }
            if v.flags.locked {
                return Err(Errno::EINVAL);
            }
            let (s, e) = (v.start.max(start), v.end.min(end));
            let first = (s - v.start) / PAGE_SIZE;
            let count = (e - s) / PAGE_SIZE;
            match &v.backing {
                Backing::Anonymous | Backing::Special { .. } => return Err(Errno::EINVAL),
                Backing::File { .. } | Backing::SharedFile { may_write: false, .. } => return Err(Errno::EACCES),
                Backing::SharedAnonymous { pages, first_index } => {
                    pages.remove_range(first_index + first, count);
                    freed.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    freed.push((SharedObject::Anonymous(pages.clone()), first_index + first, count));
                }
                Backing::SharedFile { source, offset, .. } => {
                    let index = offset / PAGE_SIZE + first;
                    source.punch_hole(index, count)?;
                    freed.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    freed.push((SharedObject::File(source.clone()), index, count));
                }
            }
            cursor = v.end;
        }
        if cursor < end {
            return Err(Errno::ENOMEM);
        }
        Ok(freed)
    }

    /// Unmaps pages [index, index + count) of a shared object from every
    /// area of this space that maps it.
    pub fn unmap_object_pages(&mut self, object: &SharedObject, index: u64, count: u64) {
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for v in self.vmas.values() {
            // Private file mappings keep their pages: some are private
            // copies, which a hole in the file does not touch.
            let (area_first, same) = match (&v.backing, object) {
                (Backing::SharedAnonymous { pages, first_index }, SharedObject::Anonymous(o)) => {
                    (*first_index, Arc::ptr_eq(pages, o))
                }
                (Backing::SharedFile { source, offset, .. }, SharedObject::File(o)) => {
                    (offset / PAGE_SIZE, Arc::ptr_eq(source, o))
                }
                _ => continue,
            };
            if !same {
                continue;
            }
            let area_pages = (v.end - v.start) / PAGE_SIZE;
            let lo = index.max(area_first);
            let hi = (index + count).min(area_first + area_pages);
            if lo < hi {
                ranges.push((v.start + (lo - area_first) * PAGE_SIZE, v.start + (hi - area_first) * PAGE_SIZE));
            }
        }
        for (s, e) in ranges {
            self.unmap_pages(s, e);
        }
    }
}
