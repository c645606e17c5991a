//! 4-level page tables and the kernel address space.
//!
//! The kernel address space has three parts: the direct map of physical
//! memory (2 MiB pages, no execute), the kernel image at -2 GiB with 4 KiB
//! pages and W^X per section, and the kernel stack area, where each stack
//! sits above an unmapped guard page. Every later address space shares the
//! kernel half (PML4 entries 256..512) with this one.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::frame::UserFrame;
use crate::mm::{self, PhysAddr, DIRECT_MAP_BASE, KERNEL_VMA, PAGE_SIZE};

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const WRITE_THROUGH: u64 = 1 << 3;
pub const NO_CACHE: u64 = 1 << 4;
pub const HUGE: u64 = 1 << 7;
pub const GLOBAL: u64 = 1 << 8;
pub const NO_EXECUTE: u64 = 1 << 63;
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Page-table frames owned by user address spaces (for leak checks).
static USER_TABLE_FRAMES: AtomicU64 = AtomicU64::new(0);

/// How many page-table frames user address spaces hold right now.
pub fn live_user_table_frames() -> u64 {
    USER_TABLE_FRAMES.load(Ordering::Relaxed)
}

/// Physical address of the kernel's PML4.
static KERNEL_ROOT: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    OutOfMemory,
    AlreadyMapped,
}

fn entry_ptr(table: PhysAddr, index: usize) -> *mut u64 {
    debug_assert!(index < 512);
    (table.to_virt() + index as u64 * 8) as *mut u64
}

fn read_entry(table: PhysAddr, index: usize) -> u64 {
    // SAFETY: `table` is a page-table frame owned by this module and reached
    // through the direct map; `index < 512` keeps the access in the frame.
    // Volatile because the CPU also reads (and sets A/D bits in) these words.
    unsafe { core::ptr::read_volatile(entry_ptr(table, index)) }
}

fn write_entry(table: PhysAddr, index: usize, value: u64) {
    // SAFETY: as in `read_entry`; changes to live mappings are followed by
    // the TLB invalidation the caller is responsible for.
    unsafe { core::ptr::write_volatile(entry_ptr(table, index), value) }
}

fn index_at(vaddr: u64, level: u32) -> usize {
    ((vaddr >> (12 + 9 * level)) & 0x1ff) as usize
}

/// Walks to the table at `level` (1 = page table) covering `vaddr`,
/// creating missing intermediate tables.
fn walk_create(root: PhysAddr, vaddr: u64, level: u32, user: bool) -> Result<PhysAddr, MapError> {
    walk_create_counted(root, vaddr, level, user, &mut 0)
}

/// `walk_create`, adding the number of tables it had to create to `created`.
fn walk_create_counted(
    root: PhysAddr,
    vaddr: u64,
    level: u32,
    user: bool,
    created: &mut u64,
) -> Result<PhysAddr, MapError> {
    let mut table = root;
    for current in (level + 1..=4).rev() {
        let idx = index_at(vaddr, current - 1);
        let entry = read_entry(table, idx);
        if entry & PRESENT == 0 {
            let frame = mm::alloc_frame_zeroed().ok_or(MapError::OutOfMemory)?;
            *created += 1;
            let flags = PRESENT | WRITABLE | if user { USER } else { 0 };
            write_entry(table, idx, frame.0 | flags);
            table = frame;
        } else if entry & HUGE != 0 {
            return Err(MapError::AlreadyMapped);
        } else {
            if user && entry & USER == 0 {
                write_entry(table, idx, entry | USER);
            }
            table = PhysAddr(entry & ADDR_MASK);
        }
    }
    Ok(table)
}

/// Maps one 4 KiB page.
pub(crate) fn map_page(root: PhysAddr, vaddr: u64, frame: PhysAddr, flags: u64) -> Result<(), MapError> {
    let pt = walk_create(root, vaddr, 1, flags & USER != 0)?;
    let idx = index_at(vaddr, 0);
    if read_entry(pt, idx) & PRESENT != 0 {
        return Err(MapError::AlreadyMapped);
    }
    write_entry(pt, idx, frame.0 | flags | PRESENT);
    Ok(())
}

/// Maps one 2 MiB page.
fn map_huge_2m(root: PhysAddr, vaddr: u64, frame: PhysAddr, flags: u64) -> Result<(), MapError> {
    let pd = walk_create(root, vaddr, 2, false)?;
    write_entry(pd, index_at(vaddr, 1), frame.0 | flags | PRESENT | HUGE);
    Ok(())
}

/// Removes the 4 KiB mapping at `vaddr`, returning the frame it mapped.
pub(crate) fn unmap_page(root: PhysAddr, vaddr: u64) -> Option<PhysAddr> {
    let mut table = root;
    for level in (1..=3).rev() {
        let entry = read_entry(table, index_at(vaddr, level));
        if entry & PRESENT == 0 || entry & HUGE != 0 {
            return None;
        }
        table = PhysAddr(entry & ADDR_MASK);
    }
    let idx = index_at(vaddr, 0);
    let entry = read_entry(table, idx);
    if entry & PRESENT == 0 {
        return None;
    }
    write_entry(table, idx, 0);
    crate::cpu::invlpg(vaddr);
    Some(PhysAddr(entry & ADDR_MASK))
}

/// The leaf entry mapping `vaddr`, if any (for diagnostics and tests).
pub fn translate(root: PhysAddr, vaddr: u64) -> Option<(PhysAddr, u64)> {
    let mut table = root;
    for level in (0..=3).rev() {
        let entry = read_entry(table, index_at(vaddr, level));
        if entry & PRESENT == 0 {
            return None;
        }
        if level == 0 || entry & HUGE != 0 {
            let page_mask = (1u64 << (12 + 9 * level)) - 1;
            let base = entry & ADDR_MASK & !page_mask;
            return Some((PhysAddr(base + (vaddr & page_mask)), entry & !ADDR_MASK));
        }
        table = PhysAddr(entry & ADDR_MASK);
    }
    None
}

pub fn kernel_root() -> PhysAddr {
    PhysAddr(KERNEL_ROOT.load(Ordering::Relaxed))
}

extern "C" {
    static __kernel_text_start: u8;
    static __kernel_text_end: u8;
    static __kernel_rodata_start: u8;
    static __kernel_rodata_end: u8;
    static __kernel_data_start: u8;
    static __kernel_data_end: u8;
}

/// Virtual address bounds of the kernel image's sections.
#[derive(Clone, Copy, Debug)]
pub struct KernelSections {
    pub text: (u64, u64),
    pub rodata: (u64, u64),
    pub data: (u64, u64),
}

pub fn kernel_sections() -> KernelSections {
    // Taking the address of a linker symbol reads nothing.
    KernelSections {
        text: (core::ptr::addr_of!(__kernel_text_start) as u64, core::ptr::addr_of!(__kernel_text_end) as u64),
        rodata: (core::ptr::addr_of!(__kernel_rodata_start) as u64, core::ptr::addr_of!(__kernel_rodata_end) as u64),
        data: (core::ptr::addr_of!(__kernel_data_start) as u64, core::ptr::addr_of!(__kernel_data_end) as u64),
    }
}

/// Builds the kernel address space and switches to it.
pub(crate) fn init_kernel_space(phys_limit: u64) {
    let root = mm::alloc_frame_zeroed().unwrap_or_else(|| crate::boot_out_of_memory("the kernel page tables"));

    // Direct map: everything below max(4 GiB, end of RAM). The last 256 MiB
    // below 4 GiB hold the local and IO APICs and other MMIO: uncached.
    let limit = phys_limit.max(0x1_0000_0000).next_multiple_of(0x20_0000);
    let mut pa = 0;
    while pa < limit {
        let mut flags = WRITABLE | GLOBAL | NO_EXECUTE;
        if (0xF000_0000..0x1_0000_0000).contains(&pa) {
            flags |= NO_CACHE | WRITE_THROUGH;
        }
        map_huge_2m(root, DIRECT_MAP_BASE + pa, PhysAddr(pa), flags)
            .unwrap_or_else(|_| crate::boot_out_of_memory("the direct map's page tables"));
        pa += 0x20_0000;
    }

    // Kernel image, W^X per section.
    let s = kernel_sections();
    let sections = [(s.text, GLOBAL), (s.rodata, GLOBAL | NO_EXECUTE), (s.data, GLOBAL | WRITABLE | NO_EXECUTE)];
    for ((start, end), flags) in sections {
        let mut va = start;
        while va < end {
            map_page(root, va, PhysAddr(va - KERNEL_VMA), flags)
                .unwrap_or_else(|_| crate::boot_out_of_memory("the kernel image's page tables"));
            va += PAGE_SIZE;
        }
    }

    // Pre-create every kernel-half PML4 entry so that address spaces made
    // later can share them by copying the top level once.
    for idx in 256..512 {
        if read_entry(root, idx) & PRESENT == 0 {
            let frame =
                mm::alloc_frame_zeroed().unwrap_or_else(|| crate::boot_out_of_memory("the kernel's page tables"));
            write_entry(root, idx, frame.0 | PRESENT | WRITABLE);
        }
    }

    KERNEL_ROOT.store(root.0, Ordering::Relaxed);
    // SAFETY: the new tables map the kernel image (code we are running,
    // the boot stack in .bss) and the direct map, which is everything the
    // kernel touches from here on.
    unsafe { crate::tlb::load_root(root.0) };
}

/// Maps `count` fresh zeroed frames at `vaddr` in the kernel half, as
/// writable, no-execute memory. Used for kernel stacks.
/// Serializes changes to the kernel half: two CPUs creating the same
/// missing page table at once would each install their own, and the
/// mappings made through the loser would vanish.
static KERNEL_MAP_LOCK: crate::sync::SpinLock<()> = crate::sync::SpinLock::new(());

pub(crate) fn map_kernel_range(vaddr: u64, count: u64) -> Result<(), MapError> {
    let _guard = KERNEL_MAP_LOCK.lock();
    let root = kernel_root();
    for i in 0..count {
        let frame = match mm::alloc_frame_zeroed() {
            Some(f) => f,
            None => {
                drop(_guard);
                unmap_kernel_range(vaddr, i);
                return Err(MapError::OutOfMemory);
            }
        };
        if let Err(e) = map_page(root, vaddr + i * PAGE_SIZE, frame, WRITABLE | GLOBAL | NO_EXECUTE) {
            // Neither the frame nor the pages mapped so far may stay
            // behind: the caller frees the range's slot for reuse.
            mm::free_frame(frame);
            drop(_guard);
            unmap_kernel_range(vaddr, i);
            return Err(e);
        }
    }
    Ok(())
}

/// Unmaps and frees `count` pages mapped by [`map_kernel_range`]. Every
/// CPU may have cached these global translations, so all of them forget
/// the range before the frames can be reused.
pub(crate) fn unmap_kernel_range(vaddr: u64, count: u64) {
    let root = kernel_root();
    let mut frames = [PhysAddr(0); 16];
    let mut held = 0;
    for i in 0..count {
        let unmapped = {
            let _guard = KERNEL_MAP_LOCK.lock();
            unmap_page(root, vaddr + i * PAGE_SIZE)
        };
        if let Some(frame) = unmapped {
            if held == frames.len() {
                crate::tlb::shoot_kernel_range(vaddr, vaddr + count * PAGE_SIZE);
                frames.iter().for_each(|&f| mm::free_frame(f));
                held = 0;
            }
            frames[held] = frame;
            held += 1;
        }
    }
    crate::tlb::shoot_kernel_range(vaddr, vaddr + count * PAGE_SIZE);
    frames[..held].iter().for_each(|&f| mm::free_frame(f));
}

/// Maps `count` pages of device memory from `phys` at `vaddr` in the
/// kernel half: uncached (PCD|PWT), writable, no-execute. The frames are
/// not RAM and are not the frame allocator's, so nothing is freed on
/// unmap ([`unmap_kernel_device`]).
pub(crate) fn map_kernel_device(vaddr: u64, phys: PhysAddr, count: u64) -> Result<(), MapError> {
    let _guard = KERNEL_MAP_LOCK.lock();
    let root = kernel_root();
    for i in 0..count {
        let flags = WRITABLE | GLOBAL | NO_EXECUTE | NO_CACHE | WRITE_THROUGH;
        if let Err(e) = map_page(root, vaddr + i * PAGE_SIZE, PhysAddr(phys.0 + i * PAGE_SIZE), flags) {
            for j in 0..i {
                unmap_page(root, vaddr + j * PAGE_SIZE);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Removes a device mapping made by [`map_kernel_device`], on every CPU.
pub(crate) fn unmap_kernel_device(vaddr: u64, count: u64) {
    {
        let _guard = KERNEL_MAP_LOCK.lock();
        let root = kernel_root();
        for i in 0..count {
            unmap_page(root, vaddr + i * PAGE_SIZE);
        }
    }
    crate::tlb::shoot_kernel_range(vaddr, vaddr + count * PAGE_SIZE);
}

/// The page-table root in use on this CPU.
pub fn current_root() -> PhysAddr {
    PhysAddr(crate::cpu::read_cr3() & ADDR_MASK)
}

/// First address past the user half.
pub const USER_END: u64 = 0x0000_8000_0000_0000;

/// Software bit: the entry holds a frame reference but is not present,
/// so the page keeps its contents while inaccessible (PROT_NONE).
const KEPT: u64 = 1 << 9;

/// Permissions of a user page. An inaccessible page (`accessible ==
/// false`) keeps its frame but faults on every access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PteFlags {
    pub accessible: bool,
    pub writable: bool,
    pub executable: bool,
}

impl PteFlags {
    fn to_bits(self) -> u64 {
        if !self.accessible {
            return KEPT | NO_EXECUTE;
        }
        PRESENT | USER | if self.writable { WRITABLE } else { 0 } | if self.executable { 0 } else { NO_EXECUTE }
    }

    fn from_bits(bits: u64) -> PteFlags {
        PteFlags { accessible: bits & PRESENT != 0, writable: bits & WRITABLE != 0, executable: bits & NO_EXECUTE == 0 }
    }
}

/// Whether a user leaf entry holds a frame reference.
fn holds_frame(entry: u64) -> bool {
    entry & (PRESENT | KEPT) != 0
}

/// A user address space's page tables. The kernel half is shared with the
/// kernel's tables; the user half is owned, and every user mapping holds a
/// reference to its frame, dropped when the mapping or the table goes.
///
/// Changes take `&self`: an internal IRQ-safe lock serializes them, so the
/// table can be shared (`Arc`) between the threads of a process and the
/// scheduler, which activates it on every switch to one of them.
#[derive(Debug)]
pub struct PageTable {
    root: PhysAddr,
    lock: crate::sync::SpinLock<()>,
    /// User pages that hold a frame (PROT_NONE ones included, as Linux
    /// counts them): the resident set, for /proc and the OOM killer.
    resident: AtomicU64,
    /// Table frames of this space, the root included (VmPTE).
    tables: AtomicU64,
}

impl PageTable {
    pub fn new() -> Result<PageTable, MapError> {
        let root = mm::alloc_frame_zeroed().ok_or(MapError::OutOfMemory)?;
        let kernel = kernel_root();
        for idx in 256..512 {
            write_entry(root, idx, read_entry(kernel, idx));
        }
        USER_TABLE_FRAMES.fetch_add(1, Ordering::Relaxed);
        Ok(PageTable {
            root,
            lock: crate::sync::SpinLock::new(()),
            resident: AtomicU64::new(0),
            tables: AtomicU64::new(1),
        })
    }

    pub fn root(&self) -> PhysAddr {
        self.root
    }

    /// How many user pages hold a frame.
    pub fn resident_pages(&self) -> u64 {
        self.resident.load(Ordering::Relaxed)
    }

    /// How many frames this space's tables take, the root included.
    pub fn table_frames(&self) -> u64 {
        self.tables.load(Ordering::Relaxed)
    }

    fn check_user(va: u64) {
        assert!(va < USER_END && va.is_multiple_of(PAGE_SIZE), "bad user page address {va:#x}");
    }

    /// The leaf table and index for `va`, if the path exists.
    fn leaf(&self, va: u64) -> Option<(PhysAddr, usize)> {
        let mut table = self.root;
        for level in (1..=3).rev() {
            let entry = read_entry(table, index_at(va, level));
            if entry & PRESENT == 0 || entry & HUGE != 0 {
                return None;
            }
            table = PhysAddr(entry & ADDR_MASK);
        }
        Some((table, index_at(va, 0)))
    }

    /// Maps `frame` at `va`, replacing (and releasing) any previous page.
    pub fn map(&self, va: u64, frame: UserFrame, flags: PteFlags) -> Result<(), MapError> {
        Self::check_user(va);
        let _guard = self.lock.lock();
        let mut created = 0;
        let result = walk_create_counted(self.root, va, 1, true, &mut created);
        USER_TABLE_FRAMES.fetch_add(created, Ordering::Relaxed);
        self.tables.fetch_add(created, Ordering::Relaxed);
        let pt = result?;
        let idx = index_at(va, 0);
        let old = read_entry(pt, idx);
        write_entry(pt, idx, frame.into_pte_reference().0 | flags.to_bits());
        drop(_guard);
        if !holds_frame(old) {
            self.resident.fetch_add(1, Ordering::Relaxed);
        }
        if holds_frame(old) {
            // Other CPUs may still write through the old translation: the
            // old frame goes only after they forgot it.
            self.flush_everywhere(va, va + PAGE_SIZE);
            drop(UserFrame::from_pte_reference(PhysAddr(old & ADDR_MASK)));
        }
        Ok(())
    }

    /// Maps each `(va, frame)` whose page has no entry yet, and drops the
    /// frames of pages that have one (fault-around: neighbours of a faulting
    /// file page that are already in memory). One lock for the batch, and
    /// one walk per page-table page. Nothing was mapped before, so no TLB
    /// holds these addresses and nothing is flushed. Returns how many
    /// pages were mapped.
    pub fn map_absent(
        &self,
        pages: &mut dyn Iterator<Item = (u64, UserFrame)>,
        flags: PteFlags,
    ) -> Result<usize, MapError> {
        let _guard = self.lock.lock();
        let mut mapped = 0;
        let mut leaf: Option<(u64, PhysAddr)> = None;
        for (va, frame) in pages {
            Self::check_user(va);
            let region = va >> 21;
            let pt = match leaf {
                Some((r, pt)) if r == region => pt,
                _ => {
                    let mut created = 0;
                    let result = walk_create_counted(self.root, va, 1, true, &mut created);
                    USER_TABLE_FRAMES.fetch_add(created, Ordering::Relaxed);
                    self.tables.fetch_add(created, Ordering::Relaxed);
                    let pt = result?;
                    leaf = Some((region, pt));
                    pt
                }
            };
            let idx = index_at(va, 0);
            if read_entry(pt, idx) != 0 {
                continue;
            }
            write_entry(pt, idx, frame.into_pte_reference().0 | flags.to_bits());
            mapped += 1;
        }
        self.resident.fetch_add(mapped as u64, Ordering::Relaxed);
        Ok(mapped)
    }

    /// Removes the page at `va`, returning the reference it held once no
    /// CPU can reach the page through `va` any more.
    pub fn unmap(&self, va: u64) -> Option<UserFrame> {
        let frame = self.unmap_unflushed(va)?;
        self.flush_everywhere(va, va + PAGE_SIZE);
        Some(frame)
    }

    /// Removes the page at `va`, leaving the TLB flush to the caller.
    fn unmap_unflushed(&self, va: u64) -> Option<UserFrame> {
        Self::check_user(va);
        let _guard = self.lock.lock();
        let (pt, idx) = self.leaf(va)?;
        let entry = read_entry(pt, idx);
        if !holds_frame(entry) {
            return None;
        }
        write_entry(pt, idx, 0);
        self.resident.fetch_sub(1, Ordering::Relaxed);
        Some(UserFrame::from_pte_reference(PhysAddr(entry & ADDR_MASK)))
    }

    pub fn query(&self, va: u64) -> Option<(PhysAddr, PteFlags)> {
        let _guard = self.lock.lock();
        let (pt, idx) = self.leaf(va & !(PAGE_SIZE - 1))?;
        let entry = read_entry(pt, idx);
        holds_frame(entry).then(|| (PhysAddr(entry & ADDR_MASK), PteFlags::from_bits(entry)))
    }

    /// A new reference to the frame mapped at `va`.
    pub fn frame_at(&self, va: u64) -> Option<UserFrame> {
        let _guard = self.lock.lock();
        let (pt, idx) = self.leaf(va & !(PAGE_SIZE - 1))?;
        let entry = read_entry(pt, idx);
        holds_frame(entry).then(|| UserFrame::clone_pte_reference(PhysAddr(entry & ADDR_MASK)))
    }

    /// Changes the permissions of the page at `va`; false if unmapped.
    pub fn protect(&self, va: u64, flags: PteFlags) -> bool {
        let changed = self.protect_unflushed(va, flags);
        if changed {
            self.flush_everywhere(va, va + PAGE_SIZE);
        }
        changed
    }

    /// Like [`protect`](Self::protect), leaving the TLB flush to the caller.
    fn protect_unflushed(&self, va: u64, flags: PteFlags) -> bool {
        Self::check_user(va);
        let _guard = self.lock.lock();
        let Some((pt, idx)) = self.leaf(va) else {
            return false;
        };
        let entry = read_entry(pt, idx);
        if !holds_frame(entry) {
            return false;
        }
        write_entry(pt, idx, (entry & ADDR_MASK) | flags.to_bits());
        true
    }

    /// Every mapped page in [start, end), in address order.
    pub fn mapped_pages(&self, start: u64, end: u64) -> alloc::vec::Vec<(u64, PteFlags)> {
        let mut out = alloc::vec::Vec::new();
        let _guard = self.lock.lock();
        self.visit(self.root, 3, 0, start, end.min(USER_END), &mut out);
        out
    }

    fn visit(
        &self,
        table: PhysAddr,
        level: u32,
        base: u64,
        start: u64,
        end: u64,
        out: &mut alloc::vec::Vec<(u64, PteFlags)>,
    ) {
        let span = 1u64 << (12 + 9 * level);
        // Start at the first entry that overlaps `start` instead of
        // stepping over the ones below it.
        let first = if start > base { ((start - base) / span).min(512) } else { 0 };
        for idx in first..512u64 {
            let va = base + idx * span;
            if va >= end {
                break;
            }
            if va + span <= start {
                continue;
            }
            let entry = read_entry(table, idx as usize);
            if (level == 0 && !holds_frame(entry)) || (level > 0 && entry & PRESENT == 0) {
                continue;
            }
            if level == 0 {
                out.push((va, PteFlags::from_bits(entry)));
            } else {
                self.visit(PhysAddr(entry & ADDR_MASK), level - 1, va, start, end, out);
            }
        }
    }

    pub fn is_active(&self) -> bool {
        current_root() == self.root
    }

    /// Makes this the address space of the current CPU.
    pub fn activate(&self) {
        if !self.is_active() {
            // SAFETY: the kernel half of this table is the kernel's own, so
            // kernel code, data, stacks and the direct map stay mapped; the
            // table stays alive while loaded anywhere because `Drop` makes
            // every CPU switch away first.
            unsafe { crate::tlb::load_root(self.root.0) };
        }
    }

    /// Makes every CPU running in this address space forget `start..end`.
    fn flush_everywhere(&self, start: u64, end: u64) {
        crate::tlb::shoot_range(self.root.0, start, end);
    }

    /// Starts a batch of changes whose TLB flush is done once, for
    /// the whole range, when the batch ends.
    pub fn batch(&self) -> TlbBatch<'_> {
        TlbBatch { table: self, start: u64::MAX, end: 0, frames: alloc::vec::Vec::new() }
    }

    fn free_level(table: PhysAddr, level: u32) {
        let mask = if level == 0 { PRESENT | KEPT } else { PRESENT };
        for group in (0..512).step_by(ENTRY_GROUP) {
            if !any_in_group(table, group, mask) {
                continue;
            }
            for idx in group..group + ENTRY_GROUP {
                let entry = read_entry(table, idx);
                if entry & mask == 0 {
                    continue;
                }
                let next = PhysAddr(entry & ADDR_MASK);
                if level == 0 {
                    drop(UserFrame::from_pte_reference(next));
                } else {
                    Self::free_level(next, level - 1);
                    mm::free_frame(next);
                    USER_TABLE_FRAMES.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Entries a teardown looks at together: most of a process's tables are
/// empty, and one test of eight entries ORed together skips an empty run
/// in about half the instructions of eight tests.
const ENTRY_GROUP: usize = 8;

/// Whether any of the `ENTRY_GROUP` entries from `first` has a bit of
/// `mask` set.
fn any_in_group(table: PhysAddr, first: usize, mask: u64) -> bool {
    let mut bits = 0;
    for idx in first..first + ENTRY_GROUP {
        bits |= read_entry(table, idx);
    }
    bits & mask != 0
}

impl Drop for PageTable {
    fn drop(&mut self) {
        // Idle CPUs keep the last user tables loaded; none may keep these,
        // this one included.
        crate::tlb::leave_everywhere(self.root.0);
        for group in (0..256).step_by(ENTRY_GROUP) {
            if !any_in_group(self.root, group, PRESENT) {
                continue;
            }
            for idx in group..group + ENTRY_GROUP {
                let entry = read_entry(self.root, idx);
                if entry & PRESENT != 0 {
                    let pdpt = PhysAddr(entry & ADDR_MASK);
                    Self::free_level(pdpt, 2);
                    mm::free_frame(pdpt);
                    USER_TABLE_FRAMES.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        mm::free_frame(self.root);
        USER_TABLE_FRAMES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Unmappings and permission changes on one [`PageTable`] whose remote TLB
/// flush is deferred to the end of the batch: one shootdown for a whole
/// `munmap` or `mprotect` instead of one per page. Frames unmapped in the
/// batch are kept until the flush, so no CPU can reach a reused frame.
pub struct TlbBatch<'a> {
    table: &'a PageTable,
    start: u64,
    end: u64,
    frames: alloc::vec::Vec<UserFrame>,
}

impl TlbBatch<'_> {
    fn cover(&mut self, va: u64) {
        self.start = self.start.min(va);
        self.end = self.end.max(va + PAGE_SIZE);
    }

    /// Unmaps the page at `va`; false if nothing was mapped there.
    pub fn unmap(&mut self, va: u64) -> bool {
        let Some(frame) = self.table.unmap_unflushed(va) else {
            return false;
        };
        self.cover(va);
        if self.frames.try_reserve(1).is_ok() {
            self.frames.push(frame);
        } else {
            // No room to defer the release: flush now instead.
            self.flush();
            drop(frame);
        }
        true
    }

    /// Unmaps the page at `va` and hands its frame over for a new mapping
    /// in the same address space (`mremap`): the frame stays in use, so
    /// it need not wait for the flush.
    pub fn take(&mut self, va: u64) -> Option<UserFrame> {
        let frame = self.table.unmap_unflushed(va)?;
        self.cover(va);
        Some(frame)
    }

    /// Changes the permissions of the page at `va`; false if unmapped.
    pub fn protect(&mut self, va: u64, flags: PteFlags) -> bool {
        let changed = self.table.protect_unflushed(va, flags);
        if changed {
            self.cover(va);
        }
        changed
    }

    /// Does the deferred flush now and releases the held frames.
    pub fn flush(&mut self) {
        if self.start < self.end {
            self.table.flush_everywhere(self.start, self.end);
        }
        self.start = u64::MAX;
        self.end = 0;
        self.frames.clear();
    }
}

impl Drop for TlbBatch<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}
