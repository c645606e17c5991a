//! The kernel heap.
//!
//! A buddy allocator (the `buddy_system_allocator` crate) grows on demand
//! with physically contiguous chunks from the frame allocator, reached
//! through the direct map. When no frames are left the allocator returns
//! null, so fallible callers (`Vec::try_reserve`, `Box::try_new`) get an
//! error back instead of a panic.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use buddy_system_allocator::Heap;

use crate::mm::{self, PAGE_SIZE};
use crate::sync::SpinLock;

const MIN_GROW: u64 = 1024 * 1024;

pub struct KernelHeap {
    heap: SpinLock<Heap<48>>,
    grown: AtomicU64,
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap { heap: SpinLock::new(Heap::new()), grown: AtomicU64::new(0) };

impl KernelHeap {
    fn grow(&self, heap: &mut Heap<48>, layout: Layout) -> bool {
        let need = (layout.size().max(layout.align()) as u64).next_power_of_two() * 2;
        let bytes = need.max(MIN_GROW).next_multiple_of(PAGE_SIZE);
        let frames = bytes / PAGE_SIZE;
        let align = (layout.align() as u64 / PAGE_SIZE).max(1).next_power_of_two();
        let Some(base) = mm::alloc_contiguous(frames, align) else {
            return false;
        };
        let start = base.to_virt() as usize;
        // SAFETY: the frames were just taken from the frame allocator, so
        // this memory belongs to no one else; the direct map covers it.
        unsafe { heap.add_to_heap(start, start + bytes as usize) };
        self.grown.fetch_add(bytes, Ordering::Relaxed);
        true
    }
}

// SAFETY: allocations come from a buddy allocator behind a spin lock, over
// memory that the frame allocator gave to the heap alone.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
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
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with
            // this `layout`.
            unsafe { self.heap.lock().dealloc(p, layout) };
        }
    }
}

/// Heap usage: (bytes handed out, bytes the heap holds in all).
pub fn stats() -> (u64, u64) {
    let heap = HEAP.heap.lock();
    (heap.stats_alloc_actual() as u64, HEAP.grown.load(Ordering::Relaxed))
}
