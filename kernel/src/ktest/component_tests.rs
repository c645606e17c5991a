//! Components (docs/components.md): invocations across protection
//! domains give the right results, a capability not granted is refused,
//! and a callee's fault or a bad argument comes back as an error while
//! the kernel and the other components go on.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use alloc::sync::Arc;
use linux_abi::errno::Errno;

use super::{KTest, TestResult};
use crate::component::{self, invoke_from_kernel};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "component::loaded_in_own_domains", run: loaded_in_own_domains },
    KTest { name: "component::cross_domain_results", run: cross_domain_results },
    KTest { name: "component::capability_checked", run: capability_checked },
    KTest { name: "component::fault_unwinds_to_caller", run: fault_unwinds_to_caller },
    KTest { name: "component::threads_at_once", run: threads_at_once },
];

// Operation numbers of components/interfaces (Calc and Relay).
const ADD: u64 = 0;
const MUL: u64 = 1;
const DIV: u64 = 2;
const LOOKUP: u64 = 3;
const HEAP_SUM: u64 = 4;
const ADD_VIA: u64 = 0;
const LOOKUP_VIA: u64 = 1;
const CALL: u64 = 2;

fn ids() -> Result<(usize, usize), alloc::string::String> {
    let calc = component::find("calc").ok_or("no calc component")?;
    let client = component::find("client").ok_or("no client component")?;
    ensure!(component::components().len() == 2, "components not loaded");
    Ok((calc, client))
}

/// Each component's image is mapped in its own domain and in no other.
fn loaded_in_own_domains() -> TestResult {
    let (calc, client) = ids()?;
    let all = component::components();
    for (me, other) in [(calc, client), (client, calc)] {
        let base = component::LAYOUT_BASE + all[me].slot as u64 * component::SLOT_SIZE;
        ensure!(all[me].maps(base), "{} does not map its own image", all[me].name);
        ensure!(!all[other].maps(base), "{} maps {}'s image", all[other].name, all[me].name);
    }
    ensure!(all[client].caps() == [calc]);
    ensure!(all[calc].caps().is_empty());
    Ok(())
}

fn cross_domain_results() -> TestResult {
    let (calc, client) = ids()?;
    let caps = [calc, client];
    // Kernel -> calc.
    ensure!(invoke_from_kernel(&caps, 0, ADD, [2, 3, 0, 0]) == Ok(5));
    ensure!(invoke_from_kernel(&caps, 0, MUL, [6, 7, 0, 0]) == Ok(42));
    ensure!(invoke_from_kernel(&caps, 0, DIV, [100, 7, 0, 0]) == Ok(14));
    ensure!(invoke_from_kernel(&caps, 0, LOOKUP, [4, 0, 0, 0]) == Ok(11));
    ensure!(invoke_from_kernel(&caps, 0, HEAP_SUM, [100, 0, 0, 0]) == Ok(5050));
    // Kernel -> client -> calc: two domains deep.
    ensure!(invoke_from_kernel(&caps, 1, ADD_VIA, [40, 2, 0, 0]) == Ok(42));
    ensure!(invoke_from_kernel(&caps, 1, CALL, [0, MUL, 1 << 20, 3]) == Ok(3 << 20));
    // Bad arguments are errors the callee chose, or the dispatch's.
    ensure!(invoke_from_kernel(&caps, 0, DIV, [1, 0, 0, 0]) == Err(Errno::EINVAL));
    ensure!(invoke_from_kernel(&caps, 0, HEAP_SUM, [1 << 40, 0, 0, 0]) == Err(Errno::EINVAL));
    ensure!(invoke_from_kernel(&caps, 0, 99, [0; 4]) == Err(Errno::ENOSYS));
    ensure!(invoke_from_kernel(&caps, 0, u64::MAX, [u64::MAX; 4]) == Err(Errno::ENOSYS));
    Ok(())
}

/// Only granted capabilities can be invoked, by the kernel or a component.
fn capability_checked() -> TestResult {
    let (calc, client) = ids()?;
    let served = component::components()[calc].invocations.load(Ordering::Relaxed);
    // The kernel caller holds only `client`.
    let caps = [client];
    ensure!(invoke_from_kernel(&caps, 1, ADD, [1, 2, 0, 0]) == Err(Errno::EBADF));
    ensure!(invoke_from_kernel(&caps, u64::MAX, ADD, [1, 2, 0, 0]) == Err(Errno::EBADF));
    ensure!(invoke_from_kernel(&[], 0, ADD, [1, 2, 0, 0]) == Err(Errno::EBADF));
    // `client` holds calc at 0 and nothing at 1 or beyond.
    ensure!(invoke_from_kernel(&caps, 0, CALL, [1, ADD, 1, 2]) == Err(Errno::EBADF));
    ensure!(invoke_from_kernel(&caps, 0, CALL, [u64::MAX, ADD, 1, 2]) == Err(Errno::EBADF));
    ensure!(invoke_from_kernel(&caps, 0, CALL, [0, ADD, 1, 2]) == Ok(3));
    // Exactly the one granted call reached calc.
    let now = component::components()[calc].invocations.load(Ordering::Relaxed);
    ensure!(now == served + 1, "calc served {} invocations, expected 1", now - served);
    Ok(())
}

/// A panic in calc (a bounds check) unwinds to its caller, client, which
/// gets EOWNERDEAD and passes it on; both go on serving.
fn fault_unwinds_to_caller() -> TestResult {
    let (calc, client) = ids()?;
    let caps = [client];
    let faults = component::components()[calc].faults.load(Ordering::Relaxed);
    ensure!(invoke_from_kernel(&caps, 0, LOOKUP_VIA, [100, 0, 0, 0]) == Err(Errno::EOWNERDEAD));
    ensure!(invoke_from_kernel(&caps, 0, LOOKUP_VIA, [u64::MAX, 0, 0, 0]) == Err(Errno::EOWNERDEAD));
    ensure!(component::components()[calc].faults.load(Ordering::Relaxed) == faults + 2);
    ensure!(component::components()[client].faults.load(Ordering::Relaxed) == 0);
    ensure!(invoke_from_kernel(&caps, 0, LOOKUP_VIA, [7, 0, 0, 0]) == Ok(19));
    ensure!(invoke_from_kernel(&caps, 0, ADD_VIA, [1, 1, 0, 0]) == Ok(2));
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    Ok(())
}

/// Four threads invoke at once, on every CPU: each gets its own stack in
/// each component and its own results.
fn threads_at_once() -> TestResult {
    let (_, client) = ids()?;
    let wrong = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for t in 0..4u64 {
        let wrong = wrong.clone();
        let thread = crate::sched::spawn("component-test", move || {
            for i in 0..500u64 {
                if invoke_from_kernel(&[client], 0, ADD_VIA, [t << 32, i, 0, 0]) != Ok((t << 32) + i) {
                    wrong.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .map_err(|_| "spawn failed")?;
        threads.push(thread);
    }
    for t in &threads {
        crate::sched::join(t);
    }
    ensure!(wrong.load(Ordering::Relaxed) == 0, "{} wrong replies", wrong.load(Ordering::Relaxed));
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    Ok(())
}
