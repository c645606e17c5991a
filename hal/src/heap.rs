//! The kernel heap.
//!
//! Two parts, by size, as Linux's kmalloc has. Small objects (below
//! [`LARGE`]) come from chunks of at least 1 MiB taken from the frame
//! allocator as the heap grows, each a buddy allocator of its own (the
//! `buddy_system_allocator` crate's `Heap`); a chunk whose last object is
//! freed goes back to the frame allocator (one empty chunk is kept as a
//! spare, so a workload hovering at a chunk boundary does not take and
//! give back a megabyte each time). Large objects (buffers, big vectors,
//! tables) take whole frames straight from the frame allocator and give
//! them back when freed. So a burst of allocations leaves nothing behind
//! once it is freed: an initramfs inflated into one buffer used to keep
//! 450 MiB of a 512 MiB machine for good, and a filled-then-deleted tmpfs
//! file the few MiB of its page index.
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
/// the frame allocator, returned on free. Four pages, so a chunk never
/// rounds a large object up to twice its size, and a large object wastes
/// less than a page.
pub const LARGE: usize = 4 * PAGE_SIZE as usize;

/// Chunks the small-object heap may have at once. Each new chunk is at
/// least 1/16 of what the heap holds, so 64 cover any amount of memory.
const MAX_CHUNKS: usize = 64;

/// Blocks up to 2^31 bytes: larger than any chunk.
const ORDER: usize = 32;

/// One run of frames and the buddy allocator over it.
struct Chunk {
    /// Direct-map address range.
    start: usize,
    end: usize,
    heap: Heap<ORDER>,
}

impl Chunk {
    const EMPTY: Chunk = Chunk { start: 0, end: 0, heap: Heap::new() };

    fn contains(&self, ptr: usize) -> bool {
        (self.start..self.end).contains(&ptr)
    }

    fn is_empty(&self) -> bool {
        self.heap.stats_alloc_actual() == 0
    }
}

/// The small-object heap: chunks `0..count` are in use.
struct SmallHeap {
    chunks: [Chunk; MAX_CHUNKS],
    count: usize,
    /// The chunk that served the last allocation, tried first.
    hint: usize,
    /// Bytes in all chunks.
    held: u64,
}

impl SmallHeap {
    fn alloc(&mut self, layout: Layout) -> *mut u8 {
        let order = (self.hint..self.count).chain(0..self.hint.min(self.count));
        for i in order {
            if let Ok(p) = self.chunks[i].heap.alloc(layout) {
                self.hint = i;
                return p.as_ptr();
            }
        }
        match self.grow(layout) {
            Some(i) => match self.chunks[i].heap.alloc(layout) {
                Ok(p) => {
                    self.hint = i;
                    p.as_ptr()
                }
                Err(()) => core::ptr::null_mut(),
            },
            None => core::ptr::null_mut(),
        }
    }

    /// Adds a chunk that can hold `layout`; returns its index.
    fn grow(&mut self, layout: Layout) -> Option<usize> {
        if self.count == MAX_CHUNKS {
            return None;
        }
        let need = (layout.size().max(layout.align()) as u64).next_power_of_two() * 2;
        let align = (layout.align() as u64 / PAGE_SIZE).max(1).next_power_of_two();
        // 1 MiB, or 1/16 of the heap once it is large, if memory has that
        // in one piece; else just enough: a fragmented or tiny machine
        // still gets its small objects.
        let mut bytes = need.max(MIN_GROW).max(self.held / 16).next_multiple_of(PAGE_SIZE);
        let base = loop {
            if let Some(base) = mm::alloc_contiguous(bytes / PAGE_SIZE, align) {
                break base;
            }
            let smallest = need.next_multiple_of(PAGE_SIZE);
            if bytes <= smallest {
                return None;
            }
            bytes = (bytes / 2).max(smallest);
        };
        let start = base.to_virt() as usize;
        let chunk = &mut self.chunks[self.count];
        *chunk = Chunk { start, end: start + bytes as usize, heap: Heap::new() };
        // SAFETY: the frames were just taken from the frame allocator, so
        // this memory belongs to no one else; the direct map covers it, and
        // the chunk's heap is new.
        unsafe { chunk.heap.add_to_heap(chunk.start, chunk.end) };
        self.held += bytes;
        self.count += 1;
        Some(self.count - 1)
    }

    /// Frees `ptr`; gives its chunk back if that was its last object and
    /// another empty chunk is already kept.
    ///
    /// # Safety
    /// `ptr` came from [`SmallHeap::alloc`] with `layout` and was not
    /// freed since.
    unsafe fn dealloc(&mut self, ptr: NonNull<u8>, layout: Layout) {
        let addr = ptr.as_ptr() as usize;
        let Some(i) = (0..self.count).find(|&i| self.chunks[i].contains(addr)) else {
            log::error!("heap: free of {addr:#x}, which no chunk holds");
            return;
        };
        // SAFETY: the caller's contract; the chunk that holds `ptr` is the
        // one whose heap handed it out (chunks do not overlap).
        unsafe { self.chunks[i].heap.dealloc(ptr, layout) };
        if self.chunks[i].is_empty() && (0..self.count).any(|j| j != i && self.chunks[j].is_empty()) {
            self.release(i);
        }
    }

    /// Gives chunk `i` (empty) back to the frame allocator.
    fn release(&mut self, i: usize) {
        let (start, end) = (self.chunks[i].start, self.chunks[i].end);
        self.count -= 1;
        self.chunks.swap(i, self.count);
        self.chunks[self.count] = Chunk::EMPTY;
        self.hint = 0;
        let bytes = (end - start) as u64;
        self.held -= bytes;
        match mm::virt_to_phys(start as u64) {
            Some(base) => mm::free_contiguous(base, bytes / PAGE_SIZE),
            None => log::error!("heap: chunk at {start:#x} outside the direct map"),
        }
    }

    fn in_use(&self) -> u64 {
        self.chunks[..self.count].iter().map(|c| c.heap.stats_alloc_actual() as u64).sum()
    }
}

pub struct KernelHeap {
    small: SpinLock<SmallHeap>,
    /// Bytes in large objects now (whole frames).
    large: AtomicU64,
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap {
    small: SpinLock::new(SmallHeap { chunks: [Chunk::EMPTY; MAX_CHUNKS], count: 0, hint: 0, held: 0 }),
    large: AtomicU64::new(0),
};

fn is_large(layout: Layout) -> bool {
    layout.size() >= LARGE
}

fn large_frames(layout: Layout) -> u64 {
    (layout.size() as u64).div_ceil(PAGE_SIZE)
}

impl KernelHeap {
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

// SAFETY: small allocations come from buddy allocators behind a spin
// lock, each over a chunk of frames the frame allocator gave to it alone
// (given back only once nothing in it is allocated); large ones are whole
// frames the frame allocator gave to that allocation alone, returned by
// `dealloc` with the same layout (so the same frame count).
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout) {
            return self.alloc_large(layout);
        }
        self.small.lock().alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout) {
            self.free_large(ptr, layout);
            return;
        }
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: GlobalAlloc's contract: `ptr` came from `alloc` with
            // this `layout`, which sent it to the small heap.
            unsafe { self.small.lock().dealloc(p, layout) };
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
    /// Bytes the small-object heap's chunks hold (in use or free in them).
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
    let small = HEAP.small.lock();
    HeapStats { small_in_use: small.in_use(), small_held: small.held, large: HEAP.large.load(Ordering::Relaxed) }
}
