//! Kernel memory helpers: allocation that reports failure instead of
//! panicking, for callers that can hand an error back (later: ENOMEM).

use alloc::boxed::Box;
use alloc::vec::Vec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory;

/// Boxes `value`, or returns `OutOfMemory` if the heap cannot grow.
pub fn try_box<T>(value: T) -> Result<Box<T>, OutOfMemory> {
    Box::try_new(value).map_err(|_| OutOfMemory)
}

/// A vector with room for `capacity` elements, or `OutOfMemory`.
pub fn try_vec_with_capacity<T>(capacity: usize) -> Result<Vec<T>, OutOfMemory> {
    let mut v = Vec::new();
    v.try_reserve_exact(capacity).map_err(|_| OutOfMemory)?;
    Ok(v)
}
