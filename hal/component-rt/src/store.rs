//! The store: what a component keeps across a micro-reboot, in
//! crash-only style (docs/components.md, "Micro-reboot"). When a
//! component faults, the kernel restores its data and bss from the image
//! and clears its heap and stacks, but leaves this one page alone: 512
//! words, read and written as atomics, at a fixed offset in the
//! component's slot. A component states what survives by what it puts
//! here; everything else starts over.
//!
//! Crash-only means a word must be valid after every single store: a
//! fault can stop the component between two updates, and its next
//! incarnation reads whatever the last completed one left.

use core::sync::atomic::AtomicU64;

/// Where the store lies in a slot of the global layout (the kernel's
/// `component::reboot::STORE_OFFSET` is the same), and its size in words.
pub const STORE_OFFSET: u64 = 0xD000_0000;
pub const WORDS: usize = 512;

/// Word `index` of the store; panics (a fault) past the last word.
pub fn word(index: usize) -> &'static AtomicU64 {
    assert!(index < WORDS, "store word out of range");
    let addr = crate::slot_base() + STORE_OFFSET + index as u64 * 8;
    // The kernel maps the store page read-write in this component's
    // domain for the component's life and never resets it; every access,
    // the component's and the kernel's, is atomic.
    // SAFETY: `addr` is 8-aligned inside that page (index < WORDS), so a
    // shared `'static` atomic view of the word is sound.
    unsafe { &*(addr as *const AtomicU64) }
}
