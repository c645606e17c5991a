#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
//! The pure logic behind Kiln's file locks and System V IPC, kept apart
//! from the kernel so the host can test it: the byte-range lock table of
//! POSIX and open-file-description locks ([`range_lock`]), the atomic
//! evaluation of a semaphore operation set ([`semop`]), and which message
//! `msgrcv` takes ([`msg_select`]). No `unsafe`; `alloc` for the lock
//! table's list, and fallible reservations so the kernel never panics on
//! a full heap.

extern crate alloc;

pub mod msg_select;
pub mod range_lock;
pub mod semop;
