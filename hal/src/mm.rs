//! Physical memory: the direct map and the frame allocator.
//!
//! All of physical memory is mapped at [`DIRECT_MAP_BASE`], so the kernel
//! reaches any frame by adding that offset. Frames are handed out by a
//! bitmap allocator ([`kiln_util::frames::FrameBitmap`]) whose bitmap lives
//! in frames carved out of the firmware memory map at boot.
//!
//! Every frame also carries an owner tag ([`FrameOwner`], one byte): who
//! the allocator handed it to. Frees name the owner they expect; a free
//! whose tag disagrees (a user frame freed as a page table, a DMA ring
//! freed through a user reference, boot-module frames given back while
//! something allocated holds them) is reported with a backtrace and the
//! frames are leaked rather than handed out twice. Handing out a frame
//! whose tag says it is still held is reported too.

use kiln_util::frames::FrameBitmap;
use kiln_util::memmap::MemoryMap;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::sync::{Once, SpinLock};

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
    let mut guard = FRAMES.lock();
    let Some(frames) = guard.as_mut() else { return };
    // A module's frames were reserved before anything was allocated, so
    // none may carry an owner: one that does was handed out from under
    // the module and freeing it would give it a second owner.
    let held = (0..count)
        .map(|i| PhysAddr(first.0 + i * PAGE_SIZE))
        .find_map(|f| (frame_owner(f) != FrameOwner::Untracked).then(|| (f, frame_owner(f))));
    if let Some((at, owner)) = held {
        drop(guard);
        report(format_args!("boot frames {:#x}+{count} not freed: frame {:#x} is {owner:?}; leaked", first.0, at.0));
        return;
    }
    match frames.free_contiguous(first.0, count) {
        Ok(()) => {
            set_tags(first, count, FrameOwner::Free);
            MANAGED.fetch_add(count, Ordering::Relaxed);
        }
        Err(e) => {
            drop(guard);
            report(format_args!("cannot free boot frames at {:#x}: {e:?}", first.0));
        }
    }
}

/// One 4 KiB frame, zero-filled, or `None` when memory is exhausted.
pub fn alloc_frame_zeroed() -> Option<PhysAddr> {
    let frame = FRAMES.lock().as_mut()?.alloc().map(PhysAddr)?;
    tag_allocated(frame, 1, FrameOwner::Kernel);
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
    tag_allocated(frame, 1, FrameOwner::User);
    Some(frame)
}

/// `count` physically contiguous frames (not zeroed), aligned to `align`
/// frames, for the kernel (heap chunks, large objects).
pub fn alloc_contiguous(count: u64, align: u64) -> Option<PhysAddr> {
    alloc_contiguous_for(count, align, FrameOwner::Kernel)
}

/// As [`alloc_contiguous`], tagged for `owner` (DMA pools).
pub(crate) fn alloc_contiguous_for(count: u64, align: u64, owner: FrameOwner) -> Option<PhysAddr> {
    let frame = FRAMES.lock().as_mut()?.alloc_contiguous(count, align).map(PhysAddr)?;
    tag_allocated(frame, count, owner);
    Some(frame)
}

/// Returns one kernel frame (see [`alloc_frame_zeroed`]) to the allocator.
/// Freeing a frame twice, or one the kernel does not own, is reported and
/// ignored rather than corrupting the allocator.
pub fn free_frame(frame: PhysAddr) {
    free_contiguous(frame, 1)
}

/// Returns `count` kernel frames from `frame` on (see [`free_frame`]).
pub fn free_contiguous(frame: PhysAddr, count: u64) {
    free_owned(frame, count, FrameOwner::Kernel)
}

/// Returns `count` frames from `frame` on that `owner` holds: refused,
/// reported and leaked if the owner tags disagree or the bitmap says a
/// frame is free already.
pub(crate) fn free_owned(frame: PhysAddr, count: u64, owner: FrameOwner) {
    let refused = {
        let mut guard = FRAMES.lock();
        let Some(frames) = guard.as_mut() else { return };
        match owner_mismatch(frame, count, owner) {
            Some(found) => Some(found),
            None => {
                set_tags(frame, count, FrameOwner::Free);
                match frames.free_contiguous(frame.0, count) {
                    Ok(()) => None,
                    Err(e) => {
                        // Some frame was free in the bitmap: put the tags back.
                        set_tags(frame, count, owner);
                        drop(guard);
                        report(format_args!("bad free of {count} frame(s) at {:#x} by {owner:?}: {e:?}", frame.0));
                        return;
                    }
                }
            }
        }
    };
    if let Some((at, found)) = refused {
        report(format_args!(
            "free of {count} frame(s) at {:#x} by {owner:?} refused: frame {:#x} is {found:?}; leaked",
            frame.0, at.0
        ));
    }
}

/// Who holds a frame, as the allocator recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameOwner {
    /// Not seen since the tags were set up: held by what took it before
    /// (early heap, boot page tables) or free, or reserved boot memory.
    Untracked = 0,
    Free = 1,
    /// Page tables, heap chunks, stacks, kernel frames.
    Kernel = 2,
    /// A [`crate::frame::UserFrame`]: process pages, page and tmpfs cache.
    User = 3,
    /// A device's DMA pool: rings, request slots.
    Dma = 4,
}

impl FrameOwner {
    fn from_u8(v: u8) -> FrameOwner {
        match v {
            1 => FrameOwner::Free,
            2 => FrameOwner::Kernel,
            3 => FrameOwner::User,
            4 => FrameOwner::Dma,
            _ => FrameOwner::Untracked,
        }
    }
}

/// One owner tag per frame of the bitmap, indexed by frame number.
static OWNERS: Once<Vec<AtomicU8>> = Once::new();
/// Frame-ownership errors found so far (frees refused, frames handed out
/// while tagged as held, reference-count underflows).
static FRAME_ERRORS: AtomicU64 = AtomicU64::new(0);
/// Errors that get a backtrace; later ones are only counted and logged.
const REPORTS_WITH_BACKTRACE: u64 = 16;

/// Sets up the owner tags (needs the heap). Frames taken before stay
/// `Untracked`, which kernel and DMA frees accept; without the memory for
/// the tags every frame stays `Untracked` and the checks are off.
pub(crate) fn init_owner_tags() {
    let frames = total_frame_count() as usize;
    let mut tags = Vec::new();
    if tags.try_reserve_exact(frames).is_err() {
        // The checks are a safety net, not a need: boot on without them.
        log::warn!("frames: no memory for {frames} owner tags; ownership checks off");
        return;
    }
    tags.resize_with(frames, || AtomicU8::new(FrameOwner::Untracked as u8));
    OWNERS.set(tags);
}

fn tag_of(frame: PhysAddr) -> Option<&'static AtomicU8> {
    OWNERS.get()?.get((frame.0 / PAGE_SIZE) as usize)
}

/// The owner the allocator recorded for the frame at `frame`.
pub fn frame_owner(frame: PhysAddr) -> FrameOwner {
    tag_of(frame).map_or(FrameOwner::Untracked, |t| FrameOwner::from_u8(t.load(Ordering::Acquire)))
}

/// How many frame-ownership errors were found since boot (0 on a sound
/// kernel; each was logged).
pub fn frame_errors() -> u64 {
    FRAME_ERRORS.load(Ordering::Relaxed)
}

fn set_tags(frame: PhysAddr, count: u64, owner: FrameOwner) {
    for i in 0..count {
        if let Some(t) = tag_of(PhysAddr(frame.0 + i * PAGE_SIZE)) {
            t.store(owner as u8, Ordering::Release);
        }
    }
}

/// The first frame of the range whose tag says someone other than
/// `owner` holds it (a user free must find `User` exactly; an untracked
/// frame may be the kernel's or a device's from before the tags).
fn owner_mismatch(frame: PhysAddr, count: u64, owner: FrameOwner) -> Option<(PhysAddr, FrameOwner)> {
    // No tags (no memory for them at boot): nothing to check against.
    OWNERS.get()?;
    (0..count).map(|i| PhysAddr(frame.0 + i * PAGE_SIZE)).find_map(|f| {
        let found = frame_owner(f);
        let ok = found == owner || (found == FrameOwner::Untracked && owner != FrameOwner::User);
        (!ok).then_some((f, found))
    })
}

/// Records frames just handed out to `owner`; a frame still tagged as
/// held means it was given back behind its owner's back.
fn tag_allocated(frame: PhysAddr, count: u64, owner: FrameOwner) {
    for i in 0..count {
        let f = PhysAddr(frame.0 + i * PAGE_SIZE);
        let Some(t) = tag_of(f) else { continue };
        let before = FrameOwner::from_u8(t.swap(owner as u8, Ordering::AcqRel));
        if !matches!(before, FrameOwner::Free | FrameOwner::Untracked) {
            report(format_args!("frame {:#x} handed to {owner:?} while tagged {before:?}", f.0));
        }
    }
}

/// Logs a frame-ownership error with the caller's backtrace.
pub(crate) fn report(what: core::fmt::Arguments<'_>) {
    let n = FRAME_ERRORS.fetch_add(1, Ordering::Relaxed);
    log::error!("frames: {what} (error {})", n + 1);
    if n < REPORTS_WITH_BACKTRACE {
        crate::backtrace::print_current(&mut crate::serial::Console);
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
