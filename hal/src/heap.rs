//! The kernel heap.
//!
//! Two parts, by size, as Linux's kmalloc has. Small objects (below
//! [`LARGE`]) come from a buddy allocator (the `buddy_system_allocator`
//! crate) that grows on demand with physically contiguous chunks of at
//! least 1 MiB from the frame allocator; that memory stays with the heap.
//! Large objects (buffers, big vectors, tables) take whole frames
//! straight from the frame allocator and give them back when freed, so a
//! burst of large allocations (an initramfs inflated into one buffer took
//! 256 MiB of a 512 MiB machine for good) leaves no memory behind.
//!
//! When no frames are left the allocator returns null, so fallible
//! callers (`Vec::try_reserve`, `Box::try_new`) get an error back instead
//! of a panic.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use buddy_system_allocator::Heap;

use crate::mm::{self, PAGE_SIZE};
use crate::sync::SpinLock;

const MIN_GROW: u64 = 1024 * 1024;

/// Allocations of at least this many bytes are large: whole frames from
/// the frame allocator, returned on free. Four pages, so the buddy heap
/// never rounds a large object up to twice its size, and a large object
/// wastes less than a page.
pub const LARGE: usize = 4 * PAGE_SIZE as usize;

pub struct KernelHeap {
    heap: SpinLock<Heap<48>>,
    /// Bytes the small-object heap took from the frame allocator.
    grown: AtomicU64,
    /// Bytes in large objects now (whole frames).
    large: AtomicU64,
}

#[global_allocator]
static HEAP: KernelHeap =
    KernelHeap { heap: SpinLock::new(Heap::new()), grown: AtomicU64::new(0), large: AtomicU64::new(0) };

fn is_large(layout: Layout) -> bool {
    layout.size() >= LARGE
}

fn large_frames(layout: Layout) -> u64 {
    (layout.size() as u64).div_ceil(PAGE_SIZE)
}

impl KernelHeap {
    fn grow(&self, heap: &mut Heap<48>, layout: Layout) -> bool {
        let need = (layout.size().max(layout.align()) as u64).next_power_of_two() * 2;
        let align = (layout.align() as u64 / PAGE_SIZE).max(1).next_power_of_two();
        // A 1 MiB chunk if memory has one in a piece, else just enough:
        // a fragmented or tiny machine still gets its small objects.
        let mut bytes = need.max(MIN_GROW).next_multiple_of(PAGE_SIZE);
        let base = loop {
            if let Some(base) = mm::alloc_contiguous(bytes / PAGE_SIZE, align) {
                break base;
            }
            let smallest = need.next_multiple_of(PAGE_SIZE);
            if bytes <= smallest {
                return false;
            }
            bytes = (bytes / 2).max(smallest);
        };
        let start = base.to_virt() as usize;
        // SAFETY: the frames were just taken from the frame allocator, so
        // this memory belongs to no one else; the direct map covers it.
        unsafe { heap.add_to_heap(start, start + bytes as usize) };
        self.grown.fetch_add(bytes, Ordering::Relaxed);
        true
    }

    fn alloc_large(&self, layout: Layout) -> *mut u8 {
        let frames = large_frames(layout);
        let align = (layout.align() as u64 / PAGE_SIZE).max(1).next_power_of_two();
        match mm::alloc_contiguous(frames, align) {
            Some(base) => {
                self.large.fetch_add(frames * PAGE_SIZE, Ordering::Relaxed);
                base.to_virt() as *mut u8
            }
            None => core::ptr::null_mut(),
        }
    }

    fn free_large(&self, ptr: *mut u8, layout: Layout) {
        let frames = large_frames(layout);
        match mm::virt_to_phys(ptr as u64) {
            Some(base) => {
                mm::free_contiguous(base, frames);
                self.large.fetch_sub(frames * PAGE_SIZE, Ordering::Relaxed);
            }
            None => log::error!("heap: free of a large object at {ptr:p} outside the direct map"),
        }
    }
}

// SAFETY: small allocations come from a buddy allocator behind a spin
// lock, over memory that the frame allocator gave to the heap alone; large
// ones are whole frames the frame allocator gave to that allocation alone,
// returned by `dealloc` with the same layout (so the same frame count).
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout) {
            return self.alloc_large(layout);
        }
        let mut heap = self.heap.lock();
        if let Ok(p) = heap.alloc(layout) {
            return p.as_ptr();
        }
        if self.grow(&mut heap, layout) {
            if let Ok(p) = heap.alloc(layout) {
                return p.as_ptr();
            }
        }
        core::ptr::null_mut()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr.is_null() {
            return;
        }
        if is_large(layout) {
            self.free_large(ptr, layout);
            return;
        }
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with
            // this `layout`.
            unsafe { self.heap.lock().dealloc(p, layout) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract: `new_size` rounded to the
        // alignment does not overflow, so this layout is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // A large object that keeps its frame count stays where it is.
        if is_large(layout) && is_large(new_layout) && large_frames(layout) == large_frames(new_layout) {
            return ptr;
        }
        // SAFETY: as for `alloc`; the copy is of the smaller of the two
        // sizes, inside both blocks, which do not overlap.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

/// Heap usage in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeapStats {
    /// Handed out by the small-object heap now.
    pub small_in_use: u64,
    /// Frames the small-object heap holds (in use or free within it).
    pub small_held: u64,
    /// Frames in large objects now.
    pub large: u64,
}

impl HeapStats {
    /// Frames the heap keeps from the frame allocator in all.
    pub fn held(&self) -> u64 {
        self.small_held + self.large
    }
}

pub fn stats() -> HeapStats {
    let small_in_use = HEAP.heap.lock().stats_alloc_actual() as u64;
    HeapStats {
        small_in_use,
        small_held: HEAP.grown.load(Ordering::Relaxed),
        large: HEAP.large.load(Ordering::Relaxed),
    }
}
