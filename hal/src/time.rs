//! Time: the calibrated TSC as the monotonic clock.
//!
//! The TSC is measured against the PIT at boot ([`crate::apic::calibrate`]).
//! The monotonic clock counts nanoseconds since that calibration; it never
//! goes backwards on one CPU, and CPUs share one TSC epoch.

use core::sync::atomic::{AtomicU64, Ordering};

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
static TSC_EPOCH: AtomicU64 = AtomicU64::new(0);

pub(crate) fn set_tsc(hz: u64, epoch: u64) {
    TSC_HZ.store(hz.max(1), Ordering::Relaxed);
    TSC_EPOCH.store(epoch, Ordering::Relaxed);
}

/// TSC ticks per second.
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// TSC value at the clock's epoch.
pub fn tsc_epoch() -> u64 {
    TSC_EPOCH.load(Ordering::Relaxed)
}

/// Converts a TSC delta into nanoseconds.
pub fn tsc_to_ns(ticks: u64) -> u64 {
    (u128::from(ticks) * 1_000_000_000 / u128::from(tsc_hz().max(1))) as u64
}

/// Nanoseconds since the clock's epoch (boot-time calibration).
pub fn monotonic_ns() -> u64 {
    tsc_to_ns(crate::cpu::rdtsc().saturating_sub(tsc_epoch()))
}

/// Busy-waits for `ns` nanoseconds (for early boot and device resets).
pub fn spin_ns(ns: u64) {
    let end = monotonic_ns() + ns;
    while monotonic_ns() < end {
        crate::cpu::pause();
    }
}
