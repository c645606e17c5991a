//! A sleeping mutex: waiters block on a wait queue instead of spinning, so
//! it may be held across anything that sleeps, and the holder can be
//! preempted.
//!
//! The data sits in a non-IRQ-masking spin mutex (`spin::Mutex`) that is
//! only ever `try_lock`ed, so it never actually spins: it is the ownership
//! cell, and the wait queue does the waiting.

use core::ops::{Deref, DerefMut};

use crate::sched::WaitQueue;

pub struct Mutex<T> {
    data: spin::Mutex<T>,
    waiters: WaitQueue,
}

impl<T> Mutex<T> {
    pub const fn new(value: T) -> Mutex<T> {
        Mutex { data: spin::Mutex::new(value), waiters: WaitQueue::new() }
    }

    /// Takes the lock, sleeping while another thread holds it.
    ///
    /// Panics if interrupts are off: that means a spin lock is held (or
    /// we are in an interrupt handler), and sleeping there would deadlock.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        assert!(hal::cpu::interrupts_enabled(), "sleeping mutex taken with interrupts off (inside a spin lock?)");
        loop {
            if let Some(inner) = self.data.try_lock() {
                return MutexGuard { inner: Some(inner), mutex: self };
            }
            self.waiters.wait_until(|| !self.data.is_locked());
        }
    }

    /// Takes the lock if it is free, never sleeping: for the few callers
    /// that may not wait (memory reclaim skips what is busy).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.data.try_lock().map(|inner| MutexGuard { inner: Some(inner), mutex: self })
    }
}

pub struct MutexGuard<'a, T> {
    inner: Option<spin::MutexGuard<'a, T>>,
    mutex: &'a Mutex<T>,
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner.as_ref().expect("guard used after release")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.inner.as_mut().expect("guard used after release")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // Release first, then wake, so the woken thread finds it free.
        drop(self.inner.take());
        self.mutex.waiters.wake_one();
    }
}
