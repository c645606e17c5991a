//! The `client` component: serves `Relay` by invoking `calc` through its
//! capability 0, so its callers exercise nested cross-domain invocations,
//! a capability it was not given, and a fault two domains down.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use interfaces::{relay_dispatch, Calc, CalcClient, Relay};
use rt::InvokeError;

struct Server;

const CALC: CalcClient = CalcClient::new(0);

impl Relay for Server {
    fn add_via(&self, a: u64, b: u64) -> Result<u64, InvokeError> {
        CALC.add(a, b)
    }

    fn lookup_via(&self, i: u64) -> Result<u64, InvokeError> {
        CALC.lookup(i)
    }

    fn call(&self, cap: u64, op: u64, a: u64, b: u64) -> Result<u64, InvokeError> {
        rt::invoke(cap, op, [a, b, 0, 0])
    }

    fn add_loop(&self, n: u64) -> Result<u64, InvokeError> {
        let mut acc = 0;
        for _ in 0..n {
            acc = CALC.add(acc, 1)?;
        }
        Ok(acc)
    }

    fn local_loop(&self, n: u64) -> Result<u64, InvokeError> {
        let mut acc = 0;
        for _ in 0..n {
            acc = local_add(core::hint::black_box(acc), 1)?;
        }
        Ok(acc)
    }
}

/// The plain function call the merged invocation is measured against:
/// the same signature as a stub's method, not inlined.
#[inline(never)]
fn local_add(a: u64, b: u64) -> Result<u64, InvokeError> {
    Ok(a.wrapping_add(b))
}

fn dispatch(op: u64, args: [u64; 4]) -> Result<u64, InvokeError> {
    relay_dispatch(&Server, op, args)
}

rt::component!(dispatch);
