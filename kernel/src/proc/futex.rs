//! Futexes: sleeping on a user address until another thread wakes it.
//!
//! Waiters are keyed by (address space, user address), so private and
//! process-shared futexes in ordinary memory both work; waiters on shared
//! anonymous memory are keyed by the physical frame so that processes
//! sharing it meet. A waiter checks the futex word under the table lock,
//! so a wake that follows a change of the word cannot be missed.

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

struct Waiter {
    key: SpinLock<Key>,
    bitset: u32,
    woken: AtomicBool,
    queue: WaitQueue,
}

static WAITERS: SpinLock<Vec<Arc<Waiter>>> = SpinLock::new(Vec::new());

fn key_for(vm: &Vm, addr: u64) -> Key {
    let shared_frame = vm.lock().shared_frame_at(addr);
    match shared_frame {
        Some(paddr) => Key { space: 0, addr: paddr },
        None => Key { space: Arc::as_ptr(vm) as *const () as usize, addr },
    }
}

/// FUTEX_WAIT(_BITSET): sleep while `*addr == expected`.
pub fn wait(vm: &Vm, addr: u64, expected: u32, deadline: Option<u64>, bitset: u32) -> Result<(), Errno> {
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
    let waiter = Arc::try_new(Waiter {
        key: SpinLock::new(key),
        bitset,
        woken: AtomicBool::new(false),
        queue: WaitQueue::new(),
    })
    .map_err(|_| Errno::ENOMEM)?;
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
    let result = waiter.queue.wait_until_interruptible(deadline, || waiter.woken.load(Ordering::Acquire));
    if result.is_err() {
        WAITERS.lock().retain(|w| !Arc::ptr_eq(w, &waiter));
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

/// FUTEX_WAKE(_BITSET): wakes up to `count` waiters on `addr`.
pub fn wake(vm: &Vm, addr: u64, count: u32, bitset: u32) -> u32 {
    let key = key_for(vm, addr);
    wake_key(key, count, bitset)
}

fn wake_key(key: Key, count: u32, bitset: u32) -> u32 {
    let mut woken = Vec::new();
    {
        let mut waiters = WAITERS.lock();
        let mut i = 0;
        while i < waiters.len() && (woken.len() as u32) < count {
            if *waiters[i].key.lock() == key && waiters[i].bitset & bitset != 0 && woken.try_reserve(1).is_ok() {
                let w = waiters.remove(i);
                w.woken.store(true, Ordering::Release);
                woken.push(w);
            } else {
                i += 1;
            }
        }
    }
    for w in &woken {
        w.queue.wake_all();
    }
    woken.len() as u32
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
