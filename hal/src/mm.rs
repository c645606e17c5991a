//! Physical memory: the direct map and the frame allocator.
//!
//! All of physical memory is mapped at [`DIRECT_MAP_BASE`], so the kernel
//! reaches any frame by adding that offset. Frames are handed out by a
//! bitmap allocator ([`kiln_util::frames::FrameBitmap`]) whose bitmap lives
//! in frames carved out of the firmware memory map at boot.

use kiln_util::frames::FrameBitmap;
use kiln_util::memmap::MemoryMap;

use core::sync::atomic::{AtomicU64, Ordering};

use crate::sync::SpinLock;

pub const PAGE_SIZE: u64 = 4096;
/// Where physical address 0 appears in the kernel's address space.
pub const DIRECT_MAP_BASE: u64 = 0xffff_8000_0000_0000;
/// Where the kernel image is linked: physical address + this.
pub const KERNEL_VMA: u64 = 0xffff_ffff_8000_0000;

/// A physical address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysAddr(pub u64);

impl PhysAddr {
    /// The address through which the kernel reaches this physical address.
    pub fn to_virt(self) -> u64 {
        self.0 + DIRECT_MAP_BASE
    }
}

/// Physical address of a kernel-image or direct-map virtual address.
pub fn virt_to_phys(vaddr: u64) -> Option<PhysAddr> {
    if vaddr >= KERNEL_VMA {
        Some(PhysAddr(vaddr - KERNEL_VMA))
    } else if (DIRECT_MAP_BASE..DIRECT_MAP_BASE + (1 << 46)).contains(&vaddr) {
        Some(PhysAddr(vaddr - DIRECT_MAP_BASE))
    } else {
        None
    }
}

static FRAMES: SpinLock<Option<FrameBitmap<'static>>> = SpinLock::new(None);

/// Frames the allocator manages: the usable RAM free at boot, plus boot
/// modules' frames given to it later (Linux's MemTotal).
static MANAGED: AtomicU64 = AtomicU64::new(0);

/// Builds the frame allocator from the normalized memory map. The bitmap
/// takes frames from the first usable region big enough to hold it; those
/// frames and everything in `reserved` (kernel image, boot data) are marked
/// used.
pub(crate) fn init_frames(map: &MemoryMap) {
    let highest_usable = map.usable_pages().map(|r| r.end).max().unwrap_or(0);
    let frame_count = highest_usable / PAGE_SIZE;
    let words = FrameBitmap::bits_needed(frame_count);
    let bytes = (words as u64 * 8).div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let home = map
        .usable_pages()
        .find(|r| r.start >= 0x10_0000 && r.end - r.start >= bytes && r.end <= 0x1_0000_0000)
        .unwrap_or_else(|| crate::boot_out_of_memory("the frame bitmap"));
    let bits = bitmap_storage(PhysAddr(home.start), words);
    let mut frames = FrameBitmap::new(bits, frame_count).expect("frame bitmap too small");
    for region in map.usable_pages() {
        // The first MiB stays reserved: real-mode structures and the AP trampoline live there.
        let start = region.start.max(0x10_0000);
        if start < region.end {
            frames.mark_free_range(start, region.end);
        }
    }
    frames.mark_used_range(home.start, home.start + bytes);
    MANAGED.store(frames.free_frames(), Ordering::Relaxed);
    *FRAMES.lock() = Some(frames);
}

fn bitmap_storage(base: PhysAddr, words: usize) -> &'static mut [u64] {
    let ptr = base.to_virt() as *mut u64;
    // SAFETY: `base` starts a usable RAM region of at least `words * 8`
    // bytes that the boot code mapped through the direct map, is 4 KiB
    // aligned, and is marked used in the allocator right after, so no one
    // else ever gets a reference to it. Zeroing makes every bit valid.
    unsafe {
        core::ptr::write_bytes(ptr, 0, words);
        core::slice::from_raw_parts_mut(ptr, words)
    }
}

/// The normalized firmware memory map, with the kernel image reserved.
pub fn memory_map() -> &'static MemoryMap {
    &crate::bootinfo::get().memory_map
}

/// Marks a physical range used (the kernel image, boot modules).
pub(crate) fn reserve_range(start: u64, end: u64) {
    if let Some(frames) = FRAMES.lock().as_mut() {
        let before = frames.free_frames();
        frames.mark_used_range(start, end);
        MANAGED.fetch_sub(before - frames.free_frames(), Ordering::Relaxed);
    }
}

/// Hands `count` frames of a boot module, now read, to the allocator.
pub(crate) fn give_boot_frames(first: PhysAddr, count: u64) {
    if let Some(frames) = FRAMES.lock().as_mut() {
        match frames.free_contiguous(first.0, count) {
            Ok(()) => {
                MANAGED.fetch_add(count, Ordering::Relaxed);
            }
            Err(e) => log::error!("cannot free boot frames at {:#x}: {e:?}", first.0),
        }
    }
}

/// One 4 KiB frame, zero-filled, or `None` when memory is exhausted.
pub fn alloc_frame_zeroed() -> Option<PhysAddr> {
    let frame = FRAMES.lock().as_mut()?.alloc().map(PhysAddr)?;
    zero_frames(frame, 1);
    Some(frame)
}

/// Frames user memory (process pages, tmpfs data) may not take, so the
/// kernel's own allocations (heap, page tables, stacks), many of which
/// cannot wait, are still met when user memory has taken everything else:
/// memory pressure from programs then ends at the OOM killer, not at a
/// kernel allocation failing. 1/512 of memory, between 1 and 16 MiB (1 MiB
/// at 512 MiB, 4 MiB at 2 GiB), below Linux's min_free_kbytes (2.8 MiB at
/// 512 MiB).
pub fn kernel_reserve_frames() -> u64 {
    (MANAGED.load(Ordering::Relaxed) / 512).clamp(256, 4096)
}

/// The kernel's page cache shrinker: given a count of frames wanted, it
/// drops clean cached file pages without sleeping and says how many went.
static RECLAIMER: crate::sync::Once<fn(u64) -> u64> = crate::sync::Once::new();
/// Set while one reclaim runs (a second caller does not wait for it).
static RECLAIMING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Registers the function user frame allocation calls when only the
/// kernel reserve is left, before it gives up (the page cache's clean
/// pages go before a program is told there is no memory).
pub fn set_reclaimer(f: fn(u64) -> u64) {
    RECLAIMER.set(f);
}

/// A zero-filled frame for user memory, or `None` when taking it would
/// dip into [`kernel_reserve_frames`] and reclaim found nothing to free.
pub fn alloc_user_frame_zeroed() -> Option<PhysAddr> {
    let frame = alloc_user_frame_dirty()?;
    zero_frames(frame, 1);
    Some(frame)
}

/// As [`alloc_user_frame_zeroed`], but the frame keeps whatever it held:
/// for callers that overwrite all of it at once (`UserFrame::alloc_copy`).
pub(crate) fn alloc_user_frame_dirty() -> Option<PhysAddr> {
    if let Some(frame) = try_alloc_user_frame() {
        return Some(frame);
    }
    let reclaim = RECLAIMER.get()?;
    if RECLAIMING.swap(true, Ordering::Acquire) {
        return None;
    }
    let freed = reclaim(32);
    RECLAIMING.store(false, Ordering::Release);
    if freed == 0 {
        return None;
    }
    try_alloc_user_frame()
}

fn try_alloc_user_frame() -> Option<PhysAddr> {
    let reserve = kernel_reserve_frames();
    let frame = {
        let mut frames = FRAMES.lock();
        let frames = frames.as_mut()?;
        if frames.free_frames() <= reserve {
            return None;
        }
        frames.alloc().map(PhysAddr)?
    };
    Some(frame)
}

/// `count` physically contiguous frames (not zeroed), aligned to `align` frames.
pub fn alloc_contiguous(count: u64, align: u64) -> Option<PhysAddr> {
    FRAMES.lock().as_mut()?.alloc_contiguous(count, align).map(PhysAddr)
}

/// Returns one frame to the allocator. Freeing a frame twice is reported
/// and ignored rather than corrupting the allocator.
pub fn free_frame(frame: PhysAddr) {
    free_contiguous(frame, 1)
}

pub fn free_contiguous(frame: PhysAddr, count: u64) {
    if let Some(frames) = FRAMES.lock().as_mut() {
        if let Err(e) = frames.free_contiguous(frame.0, count) {
            log::error!("bad free of {count} frame(s) at {:#x}: {e:?}", frame.0);
        }
    }
}

pub fn free_frame_count() -> u64 {
    FRAMES.lock().as_ref().map_or(0, |f| f.free_frames())
}

/// Frames of RAM the allocator manages (free or handed out): MemTotal.
pub fn managed_frame_count() -> u64 {
    MANAGED.load(Ordering::Relaxed)
}

pub fn total_frame_count() -> u64 {
    FRAMES.lock().as_ref().map_or(0, |f| f.total_frames())
}

pub(crate) fn zero_frames(frame: PhysAddr, count: u64) {
    // SAFETY: the caller just took these frames from the allocator, so no
    // other reference to them exists, and the direct map covers them.
    unsafe { core::ptr::write_bytes(frame.to_virt() as *mut u8, 0, (count * PAGE_SIZE) as usize) };
}
