//! Locks that are safe to take from interrupt handlers.
//!
//! [`SpinLock`] disables interrupts on the local CPU for as long as it is
//! held, so an interrupt handler that takes the same lock can never spin on
//! a holder it interrupted. [`IrqGuard`] is that interrupt masking on its
//! own, nestable. Both are the building blocks for the kernel's per-CPU data
//! and its sleeping mutex.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
#[cfg(feature = "lockcheck")]
use core::sync::atomic::AtomicUsize;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::cpu;

/// Spin locks held per CPU (with the `lockcheck` feature), so a context
/// switch can check it holds none: a thread switched out with a spin lock
/// held would leave interrupts off in the next one and deadlock whoever
/// wants the lock on that CPU. Counting starts once the CPU's per-CPU
/// block exists.
#[cfg(feature = "lockcheck")]
static HELD: [AtomicUsize; crate::percpu::MAX_CPUS] = [const { AtomicUsize::new(0) }; crate::percpu::MAX_CPUS];

#[cfg(feature = "lockcheck")]
#[inline]
fn held_slot() -> Option<&'static AtomicUsize> {
    crate::percpu::this_cpu_ready().then(|| &HELD[crate::percpu::cpu_id()])
}

/// Counts a lock taken (+1) or released (-1) on this CPU. Only this CPU
/// writes its slot, with interrupts masked, so a plain load and store do:
/// no locked instruction on every lock and unlock.
#[inline]
fn note_held(delta: isize) {
    #[cfg(feature = "lockcheck")]
    if let Some(h) = held_slot() {
        h.store(h.load(Ordering::Relaxed).wrapping_add_signed(delta), Ordering::Relaxed);
    }
    #[cfg(not(feature = "lockcheck"))]
    let _ = delta;
}

/// Spin locks this CPU holds now (always 0 without `lockcheck`).
pub fn held_spinlocks() -> usize {
    #[cfg(feature = "lockcheck")]
    return held_slot().map_or(0, |h| h.load(Ordering::Relaxed));
    #[cfg(not(feature = "lockcheck"))]
    0
}

/// Interrupts stay masked on this CPU while an `IrqGuard` lives; dropping
/// it restores whatever state was there before.
pub struct IrqGuard {
    was_enabled: bool,
}

impl IrqGuard {
    pub fn new() -> IrqGuard {
        let was_enabled = cpu::interrupts_enabled();
        if was_enabled {
            cpu::disable_interrupts();
        }
        IrqGuard { was_enabled }
    }
}

impl Default for IrqGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for IrqGuard {
    fn drop(&mut self) {
        if self.was_enabled {
            // Guards dropped out of order (an outer IrqGuard before an
            // inner spin lock's guard, e.g. a lock taken in a function's
            // tail expression) would open a window where an interrupt
            // handler spins forever on the lock this CPU holds.
            #[cfg(feature = "lockcheck")]
            {
                let held = held_spinlocks();
                assert!(held == 0, "interrupts re-enabled with {held} spin lock(s) held");
            }
            cpu::enable_interrupts();
        }
    }
}

/// A spin lock that masks interrupts while held.
pub struct SpinLock<T: ?Sized> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one holder at a time, so sharing
// the lock between CPUs is sound whenever `T` itself may move between them.
unsafe impl<T: ?Sized + Send> Sync for SpinLock<T> {}
// SAFETY: owning the lock is owning the `T`.
unsafe impl<T: ?Sized + Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> SpinLock<T> {
        SpinLock { locked: AtomicBool::new(false), data: UnsafeCell::new(value) }
    }

    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> SpinLock<T> {
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        loop {
            let irq = IrqGuard::new();
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                note_held(1);
                return SpinLockGuard { lock: self, _irq: irq };
            }
            // Wait with interrupts as the caller had them: a CPU spinning
            // here can still answer another CPU's TLB shootdown, which that
            // CPU may be waiting for while it holds this lock's holder up.
            drop(irq);
            while self.locked.load(Ordering::Relaxed) {
                cpu::pause();
            }
        }
    }

    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T>> {
        let irq = IrqGuard::new();
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok().map(|_| {
            note_held(1);
            SpinLockGuard { lock: self, _irq: irq }
        })
    }

    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

pub struct SpinLockGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
    // Dropped after the lock is released (fields drop in order after Drop::drop).
    _irq: IrqGuard,
}

impl<T: ?Sized> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while `locked` is held by us.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while `locked` is held by us, and
        // `&mut self` makes this the only live reference through it.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for SpinLockGuard<'_, T> {
    fn drop(&mut self) {
        // Interrupts are still off (the IRQ guard drops after this), so the
        // CPU cannot change between the lock and the unlock.
        note_held(-1);
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// A value written once during boot and read freely afterwards.
pub struct Once<T> {
    state: AtomicBool,
    busy: AtomicBool,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is written once under `busy`, published by `state`
// with Release, and only read after an Acquire load of `state`.
unsafe impl<T: Send + Sync> Sync for Once<T> {}

impl<T> Once<T> {
    pub const fn new() -> Once<T> {
        Once { state: AtomicBool::new(false), busy: AtomicBool::new(false), value: UnsafeCell::new(None) }
    }

    /// Stores `value` unless a value is already there; returns whether it did.
    pub fn set(&self, value: T) -> bool {
        if self.busy.swap(true, Ordering::Acquire) {
            return false;
        }
        // SAFETY: `busy` admits exactly one writer, and no reader looks at
        // the cell until `state` is published below.
        unsafe { *self.value.get() = Some(value) };
        self.state.store(true, Ordering::Release);
        true
    }

    pub fn get(&self) -> Option<&T> {
        if self.state.load(Ordering::Acquire) {
            // SAFETY: `state` is only set after the single write finished,
            // and the value is never written again.
            unsafe { (*self.value.get()).as_ref() }
        } else {
            None
        }
    }
}

impl<T> Default for Once<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ?Sized> core::fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SpinLock").field("locked", &self.is_locked()).finish_non_exhaustive()
    }
}
