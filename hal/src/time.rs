//! Time: the calibrated TSC as the monotonic clock, and the CPU number
//! user mode can read without a system call.
//!
//! The TSC is measured against the PIT at boot ([`crate::apic::calibrate`]).
//! The monotonic clock counts nanoseconds since that calibration; it never
//! goes backwards on one CPU, and CPUs share one TSC epoch. A TSC delta
//! becomes nanoseconds as `(delta * mult) >> shift` (128-bit product): the
//! vDSO computes the same expression from the same published values, so a
//! time read in user mode and one read by a system call agree exactly.

use core::sync::atomic::{AtomicU64, Ordering};

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
static TSC_EPOCH: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per TSC tick, as a fixed-point fraction with `TSC_SHIFT`
/// bits (for hz = 1 GHz it is exactly 1 << TSC_SHIFT).
static TSC_MULT: AtomicU64 = AtomicU64::new(0);
/// The vDSO's shift too (its data page carries only the multiplier).
pub const TSC_SHIFT: u32 = kiln_util::vdso::vvar::TSC_SHIFT;

pub(crate) fn set_tsc(hz: u64, epoch: u64) {
    let hz = hz.max(1);
    TSC_HZ.store(hz, Ordering::Relaxed);
    TSC_EPOCH.store(epoch, Ordering::Relaxed);
    let mult = (1_000_000_000u128 << TSC_SHIFT) / u128::from(hz);
    TSC_MULT.store(u64::try_from(mult).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// TSC ticks per second.
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// TSC value at the clock's epoch.
pub fn tsc_epoch() -> u64 {
    TSC_EPOCH.load(Ordering::Relaxed)
}

/// The multiplier of the TSC-to-nanoseconds conversion (see the module
/// header); the shift is [`TSC_SHIFT`].
pub fn tsc_mult() -> u64 {
    TSC_MULT.load(Ordering::Relaxed)
}

/// Converts a TSC delta into nanoseconds.
pub fn tsc_to_ns(ticks: u64) -> u64 {
    ((u128::from(ticks) * u128::from(tsc_mult())) >> TSC_SHIFT) as u64
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

/// How user mode can read its CPU number without a system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserCpuId {
    /// RDPID returns IA32_TSC_AUX.
    Rdpid,
    /// RDTSCP returns IA32_TSC_AUX in ECX.
    Rdtscp,
    /// Neither instruction: ask the kernel.
    Syscall,
}

/// The instruction user mode should use (both read what
/// [`init_cpu_number`] wrote).
pub fn user_cpu_id() -> UserCpuId {
    let cpu = crate::bootinfo::get().cpu;
    if cpu.rdpid {
        UserCpuId::Rdpid
    } else if cpu.rdtscp {
        UserCpuId::Rdtscp
    } else {
        UserCpuId::Syscall
    }
}

const IA32_TSC_AUX: u32 = 0xc000_0103;

/// Stores this CPU's number in IA32_TSC_AUX, Linux's encoding (NUMA node
/// in bits 12 and up; Kiln has one node), for RDTSCP and RDPID.
pub(crate) fn init_cpu_number(cpu: usize, info: &crate::cpu::CpuInfo) {
    if !(info.rdtscp || info.rdpid) {
        return;
    }
    // SAFETY: the MSR exists when the CPU has RDTSCP or RDPID (checked
    // above); it only feeds those two instructions, which nothing in the
    // kernel uses, so no kernel state depends on its value.
    unsafe { crate::cpu::wrmsr(IA32_TSC_AUX, (cpu as u64) & 0xfff) };
}
