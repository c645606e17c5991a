//! The `calc` component: serves the `Calc` interface. It holds no
//! capabilities. A bad table index panics it on purpose (see `lookup`),
//! as do `spin` (the watchdog's case), `overflow` (a page fault on a
//! stack guard) and an armed init: the kernel turns each into an error
//! for the caller and micro-reboots calc.
//!
//! What survives a reboot (crash-only, in the runtime's store): the
//! count of invocations served over all lives (`LIFETIME`), the count
//! of inits (`BOOTS`) and the inits still to fail (`INIT_FAULTS`).
//! Everything else starts over: `served`, the data word, the heap.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use interfaces::{calc_dispatch, Calc};
use rt::{store, InvokeError};

/// Store words (rt::store): the state that outlives a reboot.
const LIFETIME: usize = 0;
const BOOTS: usize = 1;
const INIT_FAULTS: usize = 2;

struct Server {
    served: AtomicU64,
}

static SERVER: Server = Server { served: AtomicU64::new(0) };

/// A word of the data section (not bss): a reboot restores its value.
static DATA_WORD: AtomicU64 = AtomicU64::new(0x6b69_6c6e);

const TABLE: [u64; 8] = [2, 3, 5, 7, 11, 13, 17, 19];

impl Calc for Server {
    fn add(&self, a: u64, b: u64) -> Result<u64, InvokeError> {
        Ok(a.wrapping_add(b))
    }

    fn mul(&self, a: u64, b: u64) -> Result<u64, InvokeError> {
        Ok(a.wrapping_mul(b))
    }

    fn div(&self, a: u64, b: u64) -> Result<u64, InvokeError> {
        a.checked_div(b).ok_or(InvokeError::EINVAL)
    }

    fn lookup(&self, i: u64) -> Result<u64, InvokeError> {
        // Unchecked on purpose: an index past the table panics.
        Ok(TABLE[i as usize])
    }

    fn heap_sum(&self, n: u64) -> Result<u64, InvokeError> {
        if n > 4096 {
            return Err(InvokeError::EINVAL);
        }
        let v: Vec<u64> = (1..=n).collect();
        Ok(v.iter().sum())
    }

    fn served(&self) -> Result<u64, InvokeError> {
        Ok(self.served.load(Ordering::Relaxed))
    }

    fn lifetime(&self) -> Result<u64, InvokeError> {
        Ok(store::word(LIFETIME).load(Ordering::Relaxed))
    }

    fn boots(&self) -> Result<u64, InvokeError> {
        Ok(store::word(BOOTS).load(Ordering::Relaxed))
    }

    fn spin(&self) -> Result<u64, InvokeError> {
        loop {
            core::hint::spin_loop();
        }
    }

    fn overflow(&self, depth: u64) -> Result<u64, InvokeError> {
        if depth > 1 << 20 {
            return Err(InvokeError::EINVAL);
        }
        Ok(deep(depth))
    }

    fn arm_init_faults(&self, n: u64) -> Result<u64, InvokeError> {
        Ok(store::word(INIT_FAULTS).swap(n, Ordering::Relaxed))
    }

    fn swap_data(&self, v: u64) -> Result<u64, InvokeError> {
        Ok(DATA_WORD.swap(v, Ordering::Relaxed))
    }
}

/// One 1 KiB frame per level, each written (black_box), so the recursion
/// walks down the stack page by page into the guard page.
#[inline(never)]
fn deep(n: u64) -> u64 {
    let frame = core::hint::black_box([n; 128]);
    if n == 0 {
        return frame[0];
    }
    deep(n - 1).wrapping_add(frame[(n % 128) as usize])
}

/// Runs before the first invocation and after every reboot.
fn init() {
    store::word(BOOTS).fetch_add(1, Ordering::Relaxed);
    let armed = store::word(INIT_FAULTS);
    if armed.load(Ordering::Relaxed) > 0 {
        armed.fetch_sub(1, Ordering::Relaxed);
        panic!("init fault armed by arm_init_faults");
    }
}

fn dispatch(op: u64, args: [u64; 4]) -> Result<u64, InvokeError> {
    SERVER.served.fetch_add(1, Ordering::Relaxed);
    store::word(LIFETIME).fetch_add(1, Ordering::Relaxed);
    calc_dispatch(&SERVER, op, args)
}

rt::component!(dispatch, init = init);
