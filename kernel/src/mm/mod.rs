//! Kernel memory management above the hardware layer: fallible heap
//! helpers, user address spaces (VMAs, demand paging, copy-on-write), and
//! user-memory access that resolves demand faults.

pub mod advice;
pub mod aspace;
pub mod report;
pub mod uaccess;
pub mod vma;

use alloc::boxed::Box;

pub use aspace::{AddressSpace, FaultAccess, FaultError, Vm};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory;

/// Boxes `value`, or returns `OutOfMemory` if the heap cannot grow.
pub fn try_box<T>(value: T) -> Result<Box<T>, OutOfMemory> {
    Box::try_new(value).map_err(|_| OutOfMemory)
}

/// A vector with room for `capacity` elements, or `OutOfMemory`.
#[cfg(feature = "ktest")]
pub fn try_vec_with_capacity<T>(capacity: usize) -> Result<alloc::vec::Vec<T>, OutOfMemory> {
    let mut v = alloc::vec::Vec::new();
    v.try_reserve_exact(capacity).map_err(|_| OutOfMemory)?;
    Ok(v)
}

/// A `String` that `write!` grows with `try_reserve`: text built from
/// state of any size (a /proc file) fails with ENOMEM when memory is
/// short instead of aborting the kernel.
#[derive(Default)]
pub struct TryString(alloc::string::String);

impl TryString {
    pub fn new() -> TryString {
        TryString(alloc::string::String::new())
    }

    /// The text, or ENOMEM if some write did not fit.
    pub fn finish(self, result: core::fmt::Result) -> Result<alloc::string::String, linux_abi::errno::Errno> {
        result.map(|()| self.0).map_err(|_| linux_abi::errno::Errno::ENOMEM)
    }
}

impl core::fmt::Write for TryString {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.try_reserve(s.len()).map_err(|_| core::fmt::Error)?;
        self.0.push_str(s);
        Ok(())
    }
}

pub const PAGE_SIZE: u64 = hal::mm::PAGE_SIZE;

/// vm.max_map_count: mmap fails with ENOMEM past this many areas.
static MAX_MAP_COUNT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(65530);
/// vm.mmap_min_addr: the lowest address a mapping may take.
static MMAP_MIN_ADDR: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0x10000);
/// vm.overcommit_memory: 0 heuristic, 1 always.
static OVERCOMMIT_MEMORY: core::sync::atomic::AtomicI64 = core::sync::atomic::AtomicI64::new(0);

pub fn max_map_count() -> usize {
    MAX_MAP_COUNT.load(core::sync::atomic::Ordering::Relaxed)
}

pub fn set_max_map_count(n: usize) {
    MAX_MAP_COUNT.store(n, core::sync::atomic::Ordering::Relaxed);
}

pub fn mmap_min_addr() -> u64 {
    MMAP_MIN_ADDR.load(core::sync::atomic::Ordering::Relaxed)
}

pub fn set_mmap_min_addr(addr: u64) {
    MMAP_MIN_ADDR.store(addr, core::sync::atomic::Ordering::Relaxed);
}

pub fn overcommit_memory() -> i64 {
    OVERCOMMIT_MEMORY.load(core::sync::atomic::Ordering::Relaxed)
}

pub fn set_overcommit_memory(mode: i64) {
    OVERCOMMIT_MEMORY.store(mode, core::sync::atomic::Ordering::Relaxed);
}

pub fn page_floor(addr: u64) -> u64 {
    addr & !(PAGE_SIZE - 1)
}

pub fn page_ceil(addr: u64) -> Option<u64> {
    addr.checked_add(PAGE_SIZE - 1).map(page_floor)
}
