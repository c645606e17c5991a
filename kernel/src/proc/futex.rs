//! Futexes: sleeping on a user address until another thread wakes it.
//!
//! Waiters are keyed by (address space, user address), so private and
//! process-shared futexes in ordinary memory both work; waiters on shared
//! anonymous memory are keyed by the physical frame so that processes
//! sharing it meet. A waiter checks the futex word under the table lock,
//! so a wake that follows a change of the word cannot be missed.
//! futex_waitv queues one waiter per futex; they share a wait group, so a
//! wake of any of them wakes the sleeping thread.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use crate::mm::{uaccess, Vm};
use crate::sched::{Interrupted, WaitQueue};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    space: usize,
    addr: u64,
}

/// What the sleeping thread waits on: one per wait, shared by all the
/// waiters of a futex_waitv.
struct Group {
    any_woken: AtomicBool,
    queue: WaitQueue,
}

struct Waiter {
    key: SpinLock<Key>,
    bitset: u32,
    woken: AtomicBool,
    /// futex_waitv's group; a plain wait uses `own` (one allocation per
    /// wait instead of two: a futex ping-pong waits on every switch).
    shared: Option<Arc<Group>>,
    own: Group,
}

impl Waiter {
    fn group(&self) -> &Group {
        self.shared.as_deref().unwrap_or(&self.own)
    }
}

fn new_group() -> Group {
    Group { any_woken: AtomicBool::new(false), queue: WaitQueue::new() }
}

fn new_waiter(key: Key, bitset: u32, shared: Option<&Arc<Group>>) -> Result<Arc<Waiter>, Errno> {
    Arc::try_new(Waiter {
        key: SpinLock::new(key),
        bitset,
        woken: AtomicBool::new(false),
        shared: shared.cloned(),
        own: new_group(),
    })
    .map_err(|_| Errno::ENOMEM)
}

static WAITERS: SpinLock<Vec<Arc<Waiter>>> = SpinLock::new(Vec::new());

fn key_for(vm: &Vm, addr: u64) -> Key {
    let shared_frame = vm.lock().shared_frame_at(addr);
    match shared_frame {
        Some(paddr) => Key { space: 0, addr: paddr },
        None => Key { space: Arc::as_ptr(vm) as *const () as usize, addr },
    }
}

/// A thread's waiter, kept from one FUTEX_WAIT to the next: a wait then
/// allocates nothing, neither the waiter nor the slot of its wait queue
/// (a futex ping-pong waits on every switch).
pub struct WaiterCache(SpinLock<Option<Arc<Waiter>>>);

impl WaiterCache {
    pub const fn new() -> WaiterCache {
        WaiterCache(SpinLock::new(None))
    }

    /// The cached waiter, set up for `key`, if no one else holds it (a
    /// waker may still, until its wake is done); otherwise a new one.
    fn take(&self, key: Key, bitset: u32) -> Result<Arc<Waiter>, Errno> {
        let cached = self.0.lock().take();
        if let Some(mut w) = cached {
            if let Some(m) = Arc::get_mut(&mut w) {
                *m.key.get_mut() = key;
                m.bitset = bitset;
                *m.woken.get_mut() = false;
                return Ok(w);
            }
        }
        new_waiter(key, bitset, None)
    }

    fn put(&self, w: Arc<Waiter>) {
        *self.0.lock() = Some(w);
    }
}

impl Default for WaiterCache {
    fn default() -> WaiterCache {
        WaiterCache::new()
    }
}

/// FUTEX_WAIT(_BITSET): sleep while `*addr == expected`; `cache` is the
/// calling thread's.
pub fn wait(
    vm: &Vm,
    cache: &WaiterCache,
    addr: u64,
    expected: u32,
    deadline: Option<u64>,
    bitset: u32,
) -> Result<(), Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    // Fault the word in first: the check below runs with a spin lock held
    // and must not sleep.
    uaccess::read_u32(vm, addr)?;
    let key = key_for(vm, addr);
    let waiter = cache.take(key, bitset)?;
    let result = wait_queued(&waiter, addr, expected, deadline);
    cache.put(waiter);
    result
}

fn wait_queued(waiter: &Arc<Waiter>, addr: u64, expected: u32, deadline: Option<u64>) -> Result<(), Errno> {
    {
        let mut waiters = WAITERS.lock();
        let mut word = [0u8; 4];
        if hal::user::copy_from_user(&mut word, addr).is_err() {
            return Err(Errno::EAGAIN); // paged out meanwhile: let the caller retry
        }
        if u32::from_le_bytes(word) != expected {
            return Err(Errno::EAGAIN);
        }
        waiters.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        waiters.push(waiter.clone());
    }
    let result = waiter.own.queue.wait_until_interruptible(deadline, || waiter.woken.load(Ordering::Acquire));
    if result.is_err() {
        WAITERS.lock().retain(|w| !Arc::ptr_eq(w, waiter));
        // A wake may have raced with the timeout or signal.
        if waiter.woken.load(Ordering::Acquire) {
            return Ok(());
        }
    }
    match result {
        Ok(()) => Ok(()),
        Err(Interrupted::TimedOut) => Err(Errno::ETIMEDOUT),
        Err(Interrupted::Signal) => Err(Errno::ERESTARTSYS),
    }
}

/// futex_waitv: sleeps while every `*addr == expected` of `futexes`
/// (aligned, checked by the caller) and returns the index of a woken one:
/// the highest, as Linux's unqueue does. The words are all checked and the
/// waiters all queued under the table lock, so no wake is missed between.
pub fn wait_multiple(vm: &Vm, futexes: &[(u64, u32)], deadline: Option<u64>) -> Result<usize, Errno> {
    let group = Arc::try_new(new_group()).map_err(|_| Errno::ENOMEM)?;
    let mut waiters = Vec::new();
    waiters.try_reserve(futexes.len()).map_err(|_| Errno::ENOMEM)?;
    for &(addr, _) in futexes {
        // Fault the words in first, as in `wait`.
        uaccess::read_u32(vm, addr)?;
        waiters.push(new_waiter(key_for(vm, addr), u32::MAX, Some(&group))?);
    }
    loop {
        let mut table = WAITERS.lock();
        let mut paged_out = None;
        for &(addr, expected) in futexes {
            let mut word = [0u8; 4];
            if hal::user::copy_from_user(&mut word, addr).is_err() {
                paged_out = Some(addr);
                break;
            }
            if u32::from_le_bytes(word) != expected {
                return Err(Errno::EAGAIN);
            }
        }
        if let Some(addr) = paged_out {
            // Fault it in without the lock and check them all again.
            drop(table);
            uaccess::read_u32(vm, addr)?;
            continue;
        }
        table.try_reserve(waiters.len()).map_err(|_| Errno::ENOMEM)?;
        table.extend(waiters.iter().cloned());
        break;
    }
    let result = group.queue.wait_until_interruptible(deadline, || group.any_woken.load(Ordering::Acquire));
    WAITERS.lock().retain(|w| !w.shared.as_ref().is_some_and(|g| Arc::ptr_eq(g, &group)));
    // A wake may have raced with the timeout or signal: it wins.
    if let Some(index) = waiters.iter().rposition(|w| w.woken.load(Ordering::Acquire)) {
        return Ok(index);
    }
    match result {
        Ok(()) => Err(Errno::ERESTARTSYS), // cannot happen: woken without a waiter woken
        Err(Interrupted::TimedOut) => Err(Errno::ETIMEDOUT),
        Err(Interrupted::Signal) => Err(Errno::ERESTARTSYS),
    }
}

/// FUTEX_WAKE(_BITSET): wakes up to `count` waiters on `addr`.
pub fn wake(vm: &Vm, addr: u64, count: u32, bitset: u32) -> u32 {
    let key = key_for(vm, addr);
    wake_key(key, count, bitset)
}

/// Waiters taken off the table, woken once its lock is released: the
/// first few in place (a wake of one, the common case, allocates nothing),
/// the rest on the heap.
#[derive(Default)]
struct Woken {
    first: [Option<Arc<Waiter>>; 4],
    rest: Vec<Arc<Waiter>>,
    len: usize,
}

impl Woken {
    /// Keeps `w` (false, and `w` stays queued, if there is no room).
    fn room(&mut self) -> bool {
        self.len < self.first.len() || self.rest.try_reserve(1).is_ok()
    }

    fn push(&mut self, w: Arc<Waiter>) {
        match self.first.get_mut(self.len) {
            Some(slot) => *slot = Some(w),
            None => self.rest.push(w),
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &Arc<Waiter>> {
        self.first.iter().flatten().chain(self.rest.iter())
    }
}

fn wake_key(key: Key, count: u32, bitset: u32) -> u32 {
    let mut woken = Woken::default();
    {
        let mut waiters = WAITERS.lock();
        let mut i = 0;
        while i < waiters.len() && (woken.len as u32) < count {
            if *waiters[i].key.lock() == key && waiters[i].bitset & bitset != 0 && woken.room() {
                let w = waiters.remove(i);
                w.woken.store(true, Ordering::Release);
                w.group().any_woken.store(true, Ordering::Release);
                woken.push(w);
            } else {
                i += 1;
            }
        }
    }
    for w in woken.iter() {
        w.group().queue.wake_all();
    }
    woken.len as u32
}

/// FUTEX_(CMP_)REQUEUE: wake `wake_count` waiters on `addr`, move up to
/// `requeue_count` others to `addr2`.
pub fn requeue(
    vm: &Vm,
    addr: u64,
    addr2: u64,
    wake_count: u32,
    requeue_count: u32,
    expected: Option<u32>,
) -> Result<u32, Errno> {
    if let Some(expected) = expected {
        if uaccess::read_u32(vm, addr)? != expected {
            return Err(Errno::EAGAIN);
        }
    }
    let key = key_for(vm, addr);
    let key2 = key_for(vm, addr2);
    let woken = wake_key(key, wake_count, u32::MAX);
    let mut moved = 0;
    for w in WAITERS.lock().iter() {
        if moved >= requeue_count {
            break;
        }
        let mut k = w.key.lock();
        if *k == key {
            *k = key2;
            moved += 1;
        }
    }
    Ok(woken + moved)
}

/// FUTEX_WAKE_OP: atomically applies the encoded operation to the word at
/// `addr2`, wakes up to `count` waiters on `addr`, and up to `count2` on
/// `addr2` too if the old value of `addr2` passes the encoded comparison.
pub fn wake_op(vm: &Vm, addr: u64, addr2: u64, count: u32, count2: u32, encoded: u32) -> Result<u32, Errno> {
    let op = (encoded >> 28) & 7;
    let cmp = (encoded >> 24) & 15;
    let mut oparg = (((encoded >> 12) & 0xfff) as i32) << 20 >> 20;
    let cmparg = ((encoded & 0xfff) as i32) << 20 >> 20;
    if encoded & (linux_abi::consts::FUTEX_OP_OPARG_SHIFT << 28) != 0 {
        oparg = 1 << (oparg & 31);
    }
    if op > linux_abi::consts::FUTEX_OP_XOR {
        return Err(Errno::ENOSYS);
    }
    let old = loop {
        let old = uaccess::read_u32(vm, addr2)?;
        let oparg = oparg as u32;
        let new = match op {
            linux_abi::consts::FUTEX_OP_SET => oparg,
            linux_abi::consts::FUTEX_OP_ADD => old.wrapping_add(oparg),
            linux_abi::consts::FUTEX_OP_OR => old | oparg,
            linux_abi::consts::FUTEX_OP_ANDN => old & !oparg,
            _ => old ^ oparg,
        };
        if uaccess::cmpxchg_u32(vm, addr2, old, new)? == old {
            break old as i32;
        }
    };
    let passes = match cmp {
        linux_abi::consts::FUTEX_OP_CMP_EQ => old == cmparg,
        linux_abi::consts::FUTEX_OP_CMP_NE => old != cmparg,
        linux_abi::consts::FUTEX_OP_CMP_LT => old < cmparg,
        linux_abi::consts::FUTEX_OP_CMP_LE => old <= cmparg,
        linux_abi::consts::FUTEX_OP_CMP_GT => old > cmparg,
        linux_abi::consts::FUTEX_OP_CMP_GE => old >= cmparg,
        _ => return Err(Errno::ENOSYS),
    };
    let mut woken = wake_key(key_for(vm, addr), count, u32::MAX);
    if passes {
        woken += wake_key(key_for(vm, addr2), count2, u32::MAX);
    }
    Ok(woken)
}
