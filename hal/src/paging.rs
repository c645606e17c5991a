//! 4-level page tables and the kernel address space.
//!
//! The kernel address space has three parts: the direct map of physical
//! memory (2 MiB pages, no execute), the kernel image at -2 GiB with 4 KiB
//! pages and W^X per section, and the kernel stack area, where each stack
//! sits above an unmapped guard page. Every later address space shares the
//! kernel half (PML4 entries 256..512) with this one.

use core::sync::atomic::{AtomicU64, Ordering};

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
    let mut table = root;
    for current in (level + 1..=4).rev() {
        let idx = index_at(vaddr, current - 1);
        let entry = read_entry(table, idx);
        if entry & PRESENT == 0 {
            let frame = mm::alloc_frame_zeroed().ok_or(MapError::OutOfMemory)?;
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
pub fn map_page(root: PhysAddr, vaddr: u64, frame: PhysAddr, flags: u64) -> Result<(), MapError> {
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
pub fn unmap_page(root: PhysAddr, vaddr: u64) -> Option<PhysAddr> {
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
        text: (
            core::ptr::addr_of!(__kernel_text_start) as u64,
            core::ptr::addr_of!(__kernel_text_end) as u64,
        ),
        rodata: (
            core::ptr::addr_of!(__kernel_rodata_start) as u64,
            core::ptr::addr_of!(__kernel_rodata_end) as u64,
        ),
        data: (
            core::ptr::addr_of!(__kernel_data_start) as u64,
            core::ptr::addr_of!(__kernel_data_end) as u64,
        ),
    }
}

/// Builds the kernel address space and switches to it.
pub(crate) fn init_kernel_space(phys_limit: u64) {
    let root = mm::alloc_frame_zeroed().expect("no memory for the kernel page tables");

    // Direct map: everything below max(4 GiB, end of RAM). The last 256 MiB
    // below 4 GiB hold the local and IO APICs and other MMIO: uncached.
    let limit = phys_limit.max(0x1_0000_0000).next_multiple_of(0x20_0000);
    let mut pa = 0;
    while pa < limit {
        let mut flags = WRITABLE | GLOBAL | NO_EXECUTE;
        if (0xF000_0000..0x1_0000_0000).contains(&pa) {
            flags |= NO_CACHE | WRITE_THROUGH;
        }
        map_huge_2m(root, DIRECT_MAP_BASE + pa, PhysAddr(pa), flags).expect("direct map");
        pa += 0x20_0000;
    }

    // Kernel image, W^X per section.
    let s = kernel_sections();
    let sections = [
        (s.text, GLOBAL),
        (s.rodata, GLOBAL | NO_EXECUTE),
        (s.data, GLOBAL | WRITABLE | NO_EXECUTE),
    ];
    for ((start, end), flags) in sections {
        let mut va = start;
        while va < end {
            map_page(root, va, PhysAddr(va - KERNEL_VMA), flags).expect("kernel image map");
            va += PAGE_SIZE;
        }
    }

    // Pre-create every kernel-half PML4 entry so that address spaces made
    // later can share them by copying the top level once.
    for idx in 256..512 {
        if read_entry(root, idx) & PRESENT == 0 {
            let frame = mm::alloc_frame_zeroed().expect("kernel PML4 entries");
            write_entry(root, idx, frame.0 | PRESENT | WRITABLE);
        }
    }

    KERNEL_ROOT.store(root.0, Ordering::Relaxed);
    // SAFETY: the new tables map the kernel image (code we are running,
    // the boot stack in .bss) and the direct map, which is everything the
    // kernel touches from here on.
    unsafe { crate::cpu::write_cr3(root.0) };
}

/// Maps `count` fresh zeroed frames at `vaddr` in the kernel half, as
/// writable, no-execute memory. Used for kernel stacks.
pub(crate) fn map_kernel_range(vaddr: u64, count: u64) -> Result<(), MapError> {
    let root = kernel_root();
    for i in 0..count {
        let frame = match mm::alloc_frame_zeroed() {
            Some(f) => f,
            None => {
                unmap_kernel_range(vaddr, i);
                return Err(MapError::OutOfMemory);
            }
        };
        map_page(root, vaddr + i * PAGE_SIZE, frame, WRITABLE | GLOBAL | NO_EXECUTE)?;
    }
    Ok(())
}

/// Unmaps and frees `count` pages mapped by [`map_kernel_range`].
pub(crate) fn unmap_kernel_range(vaddr: u64, count: u64) {
    let root = kernel_root();
    for i in 0..count {
        if let Some(frame) = unmap_page(root, vaddr + i * PAGE_SIZE) {
            mm::free_frame(frame);
        }
    }
}

/// The page-table root in use on this CPU.
pub fn current_root() -> PhysAddr {
    PhysAddr(crate::cpu::read_cr3() & ADDR_MASK)
}
