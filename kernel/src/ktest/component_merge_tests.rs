//! Mutable protection domains (docs/components.md): merged components
//! call each other directly (the kernel carries none of those calls) and
//! keep their results, faults and capabilities; split undoes it; both
//! are safe while threads are inside; injected faults are real faults.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use linux_abi::errno::Errno;

use super::{KTest, TestResult};
use crate::component::stats::{edge, Caller};
use crate::component::{self, domain, fault, invoke_from_kernel};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "component::merge_makes_calls_direct", run: merge_makes_calls_direct },
    KTest { name: "component::merged_fault_and_caps", run: merged_fault_and_caps },
    KTest { name: "component::merge_split_while_inside", run: merge_split_while_inside },
    KTest { name: "component::fault_injection", run: fault_injection },
];

// Operation numbers of components/interfaces (Relay).
const ADD_VIA: u64 = 0;
const LOOKUP_VIA: u64 = 1;
const CALL: u64 = 2;
const ADD_LOOP: u64 = 3;

fn ids() -> Result<(usize, usize), alloc::string::String> {
    let calc = component::find("calc").ok_or("no calc component")?;
    let client = component::find("client").ok_or("no client component")?;
    ensure!(component::components().len() == 2, "components not loaded");
    Ok((calc, client))
}

/// After `merge`, client's 100 calls to calc are direct: the kernel
/// carries only the one invocation into client; after `split` they go
/// through the kernel again.
fn merge_makes_calls_direct() -> TestResult {
    let (calc, client) = ids()?;
    let edge_now = || edge(Caller::Component(client), calc);
    ensure!(domain::domain_of(client) != domain::domain_of(calc));
    domain::merge(client, calc).map_err(|e| alloc::format!("merge: {e:?}"))?;
    ensure!(domain::domain_of(client) == domain::domain_of(calc), "not one domain after merge");
    let (kernel0, direct0) = edge_now();
    ensure!(invoke_from_kernel(&[client], 0, ADD_LOOP, [100, 0, 0, 0]) == Ok(100));
    let (kernel1, direct1) = edge_now();
    ensure!(
        kernel1 == kernel0 && direct1 == direct0 + 100,
        "merged: kernel {kernel0}->{kernel1}, direct {direct0}->{direct1}"
    );
    // A merge again is no change; the own tables still map one slot each.
    domain::merge(calc, client).map_err(|e| alloc::format!("merge again: {e:?}"))?;
    let all = component::components();
    let calc_base = component::LAYOUT_BASE + all[calc].slot as u64 * component::SLOT_SIZE;
    ensure!(!all[client].maps(calc_base), "client's own table maps calc");
    domain::split(client).map_err(|e| alloc::format!("split: {e:?}"))?;
    ensure!(domain::domain_of(client) != domain::domain_of(calc), "still one domain after split");
    ensure!(invoke_from_kernel(&[client], 0, ADD_LOOP, [100, 0, 0, 0]) == Ok(100));
    let (kernel2, direct2) = edge_now();
    ensure!(
        kernel2 == kernel1 + 100 && direct2 == direct1,
        "split: kernel {kernel1}->{kernel2}, direct {direct1}->{direct2}"
    );
    ensure!(domain::merge(client, client) == Err(Errno::EINVAL));
    ensure!(domain::merge(client, 99) == Err(Errno::EINVAL));
    ensure!(domain::split(calc) == Ok(()), "split of a component alone");
    Ok(())
}

/// In a merged domain a callee's panic still comes back as an error, a
/// capability not held is still EBADF (the nested call is checked
/// against the calling component's own list), and both go on serving.
fn merged_fault_and_caps() -> TestResult {
    let (calc, client) = ids()?;
    domain::merge(client, calc).map_err(|e| alloc::format!("merge: {e:?}"))?;
    let result = (|| -> TestResult {
        ensure!(invoke_from_kernel(&[client], 0, LOOKUP_VIA, [3, 0, 0, 0]) == Ok(7));
        ensure!(invoke_from_kernel(&[client], 0, LOOKUP_VIA, [99, 0, 0, 0]) == Err(Errno::EOWNERDEAD));
        ensure!(invoke_from_kernel(&[client], 0, ADD_VIA, [20, 22, 0, 0]) == Ok(42));
        // Client holds one capability: index 1 is refused by the kernel.
        ensure!(invoke_from_kernel(&[client], 0, CALL, [1, 0, 1, 2]) == Err(Errno::EBADF));
        ensure!(invoke_from_kernel(&[client], 0, CALL, [0, 0, 1, 2]) == Ok(3));
        // Kernel -> calc enters the merged table too.
        ensure!(invoke_from_kernel(&[calc], 0, 0, [1, 2, 0, 0]) == Ok(3));
        Ok(())
    })();
    domain::split(client).map_err(|e| alloc::format!("split: {e:?}"))?;
    result?;
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    Ok(())
}

/// Four threads invoke client (which calls calc) in a loop while this one
/// merges and splits 40 times: every reply is right, whichever domain
/// each call began in, and no stack stays taken.
fn merge_split_while_inside() -> TestResult {
    let (calc, client) = ids()?;
    let wrong = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in 0..4u64 {
        let (wrong, stop) = (wrong.clone(), stop.clone());
        let thread = crate::sched::spawn("component-merge-test", move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) || i < 50 {
                let ok = if i.is_multiple_of(2) {
                    invoke_from_kernel(&[client], 0, ADD_VIA, [t << 32, i, 0, 0]) == Ok((t << 32) + i)
                } else {
                    invoke_from_kernel(&[client], 0, ADD_LOOP, [i % 64, 0, 0, 0]) == Ok(i % 64)
                };
                if !ok {
                    wrong.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
        })
        .map_err(|_| "spawn failed")?;
        threads.push(thread);
    }
    let mut failed = None;
    for round in 0..40u32 {
        let r = if round.is_multiple_of(2) { domain::merge(client, calc) } else { domain::split(calc) };
        if let Err(e) = r {
            failed = Some(e);
        }
        crate::sched::yield_now();
    }
    let _ = domain::split(calc);
    stop.store(true, Ordering::Relaxed);
    for t in &threads {
        crate::sched::join(t);
    }
    ensure!(failed.is_none(), "merge/split failed: {failed:?}");
    ensure!(wrong.load(Ordering::Relaxed) == 0, "{} wrong replies", wrong.load(Ordering::Relaxed));
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    ensure!(domain::domain_of(client) != domain::domain_of(calc));
    Ok(())
}

/// An injected fault is a real exception inside the component, counted
/// once, and the component serves the next call; merged too.
fn fault_injection() -> TestResult {
    let (calc, client) = ids()?;
    let faults = || component::components()[calc].faults.load(Ordering::Relaxed);
    let before = faults();
    ensure!(fault::inject(calc) == Ok(before + 1));
    ensure!(faults() == before + 1);
    ensure!(invoke_from_kernel(&[calc], 0, 0, [2, 2, 0, 0]) == Ok(4));
    domain::merge(client, calc).map_err(|e| alloc::format!("merge: {e:?}"))?;
    let injected = fault::inject(calc);
    domain::split(client).map_err(|e| alloc::format!("split: {e:?}"))?;
    ensure!(injected == Ok(before + 2), "merged injection: {injected:?}");
    ensure!(invoke_from_kernel(&[client], 0, ADD_VIA, [2, 2, 0, 0]) == Ok(4));
    Ok(())
}
