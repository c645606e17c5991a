//! The `calc` component: serves the `Calc` interface. It holds no
//! capabilities and keeps one counter; a bad table index panics it on
//! purpose (see `lookup`), which the kernel turns into an error for the
//! caller.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use interfaces::{calc_dispatch, Calc};
use rt::InvokeError;

struct Server {
    served: AtomicU64,
}

static SERVER: Server = Server { served: AtomicU64::new(0) };

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
}

fn dispatch(op: u64, args: [u64; 4]) -> Result<u64, InvokeError> {
    SERVER.served.fetch_add(1, Ordering::Relaxed);
    calc_dispatch(&SERVER, op, args)
}

rt::component!(dispatch);
