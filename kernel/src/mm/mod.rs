//! Kernel memory management above the hardware layer: fallible heap
//! helpers, user address spaces (VMAs, demand paging, copy-on-write), and
//! user-memory access that resolves demand faults.

pub mod advice;
pub mod aspace;
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

pub const PAGE_SIZE: u64 = hal::mm::PAGE_SIZE;

pub fn page_floor(addr: u64) -> u64 {
    addr & !(PAGE_SIZE - 1)
}

pub fn page_ceil(addr: u64) -> Option<u64> {
    addr.checked_add(PAGE_SIZE - 1).map(page_floor)
}
