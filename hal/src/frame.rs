//! Reference-counted frames for user memory.
//!
//! A [`UserFrame`] is a counted reference to a 4 KiB frame that holds user
//! data. The count lives in a table indexed by frame number; cloning a
//! handle adds a reference (copy-on-write sharing, shared mappings), and
//! the frame returns to the allocator when the last handle drops. Page
//! tables hold references too (see [`crate::paging::PageTable`]), so a
//! frame mapped anywhere cannot be freed under the mapping. Because the
//! type can only be made by allocating, safe code can never point one at
//! kernel memory such as the heap or a page table.
//!
//! The counts are checked as they move: a fresh frame must come with no
//! references left, a new reference must not be taken to a frame with
//! none, and a count must not drop below zero. Each of these means a
//! frame was freed while still in use; it is reported with a backtrace
//! (see [`mm::report`]) and the frame is leaked rather than freed again.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::mm::{self, PhysAddr, PAGE_SIZE};
use crate::sync::Once;

static REF_COUNTS: Once<Vec<AtomicU32>> = Once::new();
/// User-data frames currently allocated (for leak checks).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many user-data frames are allocated right now.
pub fn live_user_frames() -> usize {
    LIVE.load(Ordering::Relaxed)
}

pub(crate) fn init() {
    let frames = mm::total_frame_count() as usize;
    let mut counts = Vec::new();
    if counts.try_reserve_exact(frames).is_err() {
        crate::boot_out_of_memory("the frame reference table");
    }
    counts.resize_with(frames, || AtomicU32::new(0));
    REF_COUNTS.set(counts);
}

fn count_of(paddr: PhysAddr) -> &'static AtomicU32 {
    let table = REF_COUNTS.get().expect("frame reference counts used before init");
    &table[(paddr.0 / PAGE_SIZE) as usize]
}

/// Gives a frame just allocated its one reference.
fn take_first_reference(paddr: PhysAddr) {
    let left = count_of(paddr).swap(1, Ordering::AcqRel);
    if left != 0 {
        mm::report(format_args!("user frame {:#x} handed out with {left} reference(s) left", paddr.0));
    }
    LIVE.fetch_add(1, Ordering::Relaxed);
}

/// Adds a reference to a frame that must hold one already.
fn add_reference(paddr: PhysAddr) {
    if count_of(paddr).fetch_add(1, Ordering::AcqRel) == 0 {
        mm::report(format_args!("new reference to user frame {:#x}, which had none", paddr.0));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory;

/// A counted reference to a user-data frame.
#[derive(Debug)]
pub struct UserFrame {
    paddr: PhysAddr,
}

impl UserFrame {
    /// A fresh zero-filled frame with one reference.
    pub fn alloc_zeroed() -> Result<UserFrame, OutOfMemory> {
        let paddr = mm::alloc_user_frame_zeroed().ok_or(OutOfMemory)?;
        take_first_reference(paddr);
        Ok(UserFrame { paddr })
    }

    /// A fresh frame holding `data` followed by zeros, with one
    /// reference: the page cache fills frames from disk reads this way,
    /// without first zeroing what it then overwrites (one pass over every
    /// page read).
    pub fn alloc_copy(data: &[u8]) -> Result<UserFrame, OutOfMemory> {
        let len = data.len().min(PAGE_SIZE as usize);
        let paddr = mm::alloc_user_frame_dirty().ok_or(OutOfMemory)?;
        take_first_reference(paddr);
        let frame = UserFrame { paddr };
        // The bytes past `len` are zeroed: no stale data of an earlier
        // owner stays readable.
        frame.write(0, &data[..len]);
        frame.zero(len, PAGE_SIZE as usize - len);
        Ok(frame)
    }

    /// A fresh frame holding a copy of `self`.
    pub fn duplicate(&self) -> Result<UserFrame, OutOfMemory> {
        let paddr = mm::alloc_user_frame_dirty().ok_or(OutOfMemory)?;
        take_first_reference(paddr);
        // SAFETY: both frames are user-data frames owned through handles
        // (the new one exclusively), reached through the direct map; they
        // are distinct, so the ranges do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.paddr.to_virt() as *const u8,
                paddr.to_virt() as *mut u8,
                PAGE_SIZE as usize,
            )
        };
        Ok(UserFrame { paddr })
    }

    /// Rebuilds a handle from a reference a page-table entry held.
    pub(crate) fn from_pte_reference(paddr: PhysAddr) -> UserFrame {
        UserFrame { paddr }
    }

    /// Gives this reference to a page-table entry.
    pub(crate) fn into_pte_reference(self) -> PhysAddr {
        let paddr = self.paddr;
        core::mem::forget(self);
        paddr
    }

    /// Takes an extra reference for `paddr`, which a page-table entry holds.
    pub(crate) fn clone_pte_reference(paddr: PhysAddr) -> UserFrame {
        add_reference(paddr);
        UserFrame { paddr }
    }

    pub fn paddr(&self) -> PhysAddr {
        self.paddr
    }

    pub fn ref_count(&self) -> u32 {
        count_of(self.paddr).load(Ordering::Acquire)
    }

    /// Copies `data` into the frame at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= PAGE_SIZE as usize, "write past the end of a frame");
        // SAFETY: the range lies inside a user-data frame that this handle
        // keeps alive; user frames are never Rust objects, so concurrent
        // user-visible writes are data, not aliasing violations.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), (self.paddr.to_virt() as *mut u8).add(offset), data.len())
        };
    }

    /// Copies from the frame at `offset` into `buf`.
    pub fn read(&self, offset: usize, buf: &mut [u8]) {
        assert!(offset + buf.len() <= PAGE_SIZE as usize, "read past the end of a frame");
        // SAFETY: as in `write`, reading into an exclusive Rust buffer.
        unsafe {
            core::ptr::copy_nonoverlapping((self.paddr.to_virt() as *const u8).add(offset), buf.as_mut_ptr(), buf.len())
        };
    }

    /// The aligned 32-bit word at `offset`, as an atomic: for a page the
    /// kernel updates while user mode reads it (the vDSO's data page).
    pub fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(offset.is_multiple_of(4) && offset + 4 <= PAGE_SIZE as usize, "misplaced atomic in a frame");
        // SAFETY: the word lies inside a user-data frame that `self` keeps
        // alive for the borrow, at a 4-aligned direct-map address;
        // AtomicU32 has u32's size and alignment, and every Rust access
        // to the word goes through this atomic view.
        unsafe { &*((self.paddr.to_virt() as *const u8).add(offset) as *const AtomicU32) }
    }

    /// The aligned 64-bit word at `offset`, as an atomic (see `atomic_u32`).
    pub fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= PAGE_SIZE as usize, "misplaced atomic in a frame");
        // SAFETY: as in `atomic_u32`, for an 8-aligned 64-bit word.
        unsafe { &*((self.paddr.to_virt() as *const u8).add(offset) as *const AtomicU64) }
    }

    /// Zeroes `len` bytes at `offset`.
    pub fn zero(&self, offset: usize, len: usize) {
        assert!(offset + len <= PAGE_SIZE as usize, "zero past the end of a frame");
        // SAFETY: as in `write`.
        unsafe { core::ptr::write_bytes((self.paddr.to_virt() as *mut u8).add(offset), 0, len) };
    }
}

/// A user-data frame just allocated and not yet shared: the only handle
/// to it, so its bytes may be lent out as a Rust slice (a disk read lands
/// in the page cache's frame directly, with no buffer between). It holds
/// whatever its last owner left until written: the caller fills it whole
/// (zeroing what it has no data for) before [`FreshFrame::into_frame`]
/// shares it.
#[derive(Debug)]
pub struct FreshFrame {
    frame: UserFrame,
}

impl FreshFrame {
    pub fn alloc() -> Result<FreshFrame, OutOfMemory> {
        let paddr = mm::alloc_user_frame_dirty().ok_or(OutOfMemory)?;
        take_first_reference(paddr);
        Ok(FreshFrame { frame: UserFrame { paddr } })
    }

    /// The frame's bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // No other handle, page-table entry or slice of the frame exists:
        // a FreshFrame is never cloned and hands its frame out only by
        // value in `into_frame`.
        // SAFETY: a live user-data frame (this handle holds its one
        // reference) in the direct map; `&mut self` is the only borrow.
        unsafe { core::slice::from_raw_parts_mut(self.frame.paddr.to_virt() as *mut u8, PAGE_SIZE as usize) }
    }

    /// The frame, now shareable.
    pub fn into_frame(self) -> UserFrame {
        self.frame
    }
}

impl Clone for UserFrame {
    fn clone(&self) -> UserFrame {
        add_reference(self.paddr);
        UserFrame { paddr: self.paddr }
    }
}

impl Drop for UserFrame {
    fn drop(&mut self) {
        match count_of(self.paddr).fetch_sub(1, Ordering::AcqRel) {
            1 => {
                LIVE.fetch_sub(1, Ordering::Relaxed);
                mm::free_owned(self.paddr, 1, mm::FrameOwner::User);
            }
            0 => {
                // Back to zero: the frame is free already (or someone else's).
                count_of(self.paddr).fetch_add(1, Ordering::AcqRel);
                mm::report(format_args!("user frame {:#x} dropped with no reference left", self.paddr.0));
            }
            _ => {}
        }
    }
}
