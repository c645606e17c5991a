//! Micro-reboot (docs/components.md): `calc` made to fault each way (a
//! Rust panic, a page fault on its stack guard, a watchdog timeout, a
//! fault in its init) gives its caller an error, is reset from its image
//! and serves the next invocation, with its store's counter intact; a
//! component that keeps faulting stays failed with ENOTRECOVERABLE.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::errno::Errno;

use super::{KTest, TestResult};
use crate::component::{self, invoke_from_kernel};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "component::reboot_after_panic", run: reboot_after_panic },
    KTest { name: "component::reboot_after_page_fault", run: reboot_after_page_fault },
    KTest { name: "component::reboot_after_watchdog", run: reboot_after_watchdog },
    KTest { name: "component::reboot_budget", run: reboot_budget },
    KTest { name: "component::reboot_under_load", run: reboot_under_load },
];

// Operation numbers of components/interfaces (Calc and Relay).
const ADD: u64 = 0;
const LOOKUP: u64 = 3;
const HEAP_SUM: u64 = 4;
const SERVED: u64 = 5;
const LIFETIME: u64 = 6;
const BOOTS: u64 = 7;
const SPIN: u64 = 8;
const OVERFLOW: u64 = 9;
const ARM_INIT_FAULTS: u64 = 10;
const SWAP_DATA: u64 = 11;
const ADD_VIA: u64 = 0;
const LOOKUP_VIA: u64 = 1;
const CALL: u64 = 2;
/// calc's data word as linked ("kiln").
const DATA_PRISTINE: u64 = 0x6b69_6c6e;

fn ids() -> Result<(usize, usize), alloc::string::String> {
    let calc = component::find("calc").ok_or("no calc component")?;
    let client = component::find("client").ok_or("no client component")?;
    ensure!(component::components().len() >= 2, "components not loaded");
    Ok((calc, client))
}

fn calc(op: u64, a: u64) -> Result<u64, Errno> {
    let calc = component::find("calc").ok_or(Errno::ENOENT)?;
    invoke_from_kernel(&[calc], 0, op, [a, 0, 0, 0])
}

/// `calc` for a value the test needs, its error as the test's failure.
fn get(op: u64, a: u64) -> Result<u64, alloc::string::String> {
    calc(op, a).map_err(|e| alloc::format!("calc operation {op}: {e:?}"))
}

fn reboots(index: usize) -> u64 {
    component::components()[index].life.reboots.load(Ordering::Relaxed)
}

/// A panic resets data, bss and heap, runs init again, and keeps the
/// store: the lifetime counter counts every invocation across the reboot.
fn reboot_after_panic() -> TestResult {
    let (calc_ix, client) = ids()?;
    let lifetime = get(LIFETIME, 0)?;
    let boots = get(BOOTS, 0)?;
    ensure!(boots >= 1, "init never ran");
    get(SWAP_DATA, 5)?;
    ensure!(calc(SWAP_DATA, 6) == Ok(5), "the data word did not hold");
    ensure!(get(SERVED, 0)? >= 4);
    let before = reboots(calc_ix);
    ensure!(calc(OP_INIT_AS_CALLER, 0) == Err(Errno::ENOSYS), "a caller named the init operation");
    ensure!(calc(LOOKUP, 100) == Err(Errno::EOWNERDEAD));
    // The next invocation reboots calc and goes through.
    ensure!(calc(SWAP_DATA, 7) == Ok(DATA_PRISTINE), "the data section was not restored");
    ensure!(reboots(calc_ix) == before + 1);
    ensure!(calc(SERVED, 0) == Ok(2), "served (bss) was not reset");
    ensure!(calc(BOOTS, 0) == Ok(boots + 1), "init did not run again");
    ensure!(calc(HEAP_SUM, 100) == Ok(5050));
    // Since the first read: boots, swap x2, served, lookup (counted
    // before it panicked), swap, served, boots, heap_sum, and this one.
    let now = get(LIFETIME, 0)?;
    ensure!(now == lifetime + 10, "the store's counter went {lifetime} -> {now}, expected +10");
    ensure!(component::components()[calc_ix].life.last_recovery_ns.load(Ordering::Relaxed) > 0);
    // Two domains down: client gets EOWNERDEAD and is not rebooted.
    let client_reboots = reboots(client);
    ensure!(invoke_from_kernel(&[client], 0, LOOKUP_VIA, [100, 0, 0, 0]) == Err(Errno::EOWNERDEAD));
    ensure!(invoke_from_kernel(&[client], 0, ADD_VIA, [40, 2, 0, 0]) == Ok(42));
    ensure!(reboots(calc_ix) == before + 2 && reboots(client) == client_reboots);
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    Ok(())
}

/// The caller's number for calc's init operation (the kernel refuses it).
const OP_INIT_AS_CALLER: u64 = component::OP_INIT;

/// Recursion past the 16 KiB stack hits the guard page: a page fault.
fn reboot_after_page_fault() -> TestResult {
    let (calc_ix, _) = ids()?;
    let before = reboots(calc_ix);
    let boots = get(BOOTS, 0)?;
    ensure!(calc(OVERFLOW, 4) == Ok(10), "a shallow recursion failed");
    ensure!(calc(OVERFLOW, 1000) == Err(Errno::EOWNERDEAD));
    ensure!(calc(OVERFLOW, 4) == Ok(10));
    ensure!(calc(ADD, 2) == Ok(2));
    ensure!(reboots(calc_ix) == before + 1);
    ensure!(calc(BOOTS, 0) == Ok(boots + 1));
    Ok(())
}

/// An invocation that never returns is ended by the watchdog: the caller
/// gets ETIMEDOUT, directly or two domains up (where the time calc spent
/// is not charged to client), and calc is rebooted.
fn reboot_after_watchdog() -> TestResult {
    let (calc_ix, client) = ids()?;
    let before = reboots(calc_ix);
    let client_reboots = reboots(client);
    // Other tests (fault injection) may have faulted client before.
    let client_faults = component::components()[client].faults.load(Ordering::Relaxed);
    let lifetime = get(LIFETIME, 0)?;
    ensure!(calc(SPIN, 0) == Err(Errno::ETIMEDOUT));
    ensure!(calc(ADD, 5) == Ok(5));
    ensure!(invoke_from_kernel(&[client], 0, CALL, [0, SPIN, 0, 0]) == Err(Errno::ETIMEDOUT));
    ensure!(invoke_from_kernel(&[client], 0, ADD_VIA, [1, 2, 0, 0]) == Ok(3));
    ensure!(reboots(calc_ix) == before + 2, "calc rebooted {} times", reboots(calc_ix) - before);
    ensure!(reboots(client) == client_reboots, "client was rebooted");
    ensure!(
        component::components()[client].faults.load(Ordering::Relaxed) == client_faults,
        "client was charged a fault"
    );
    // Since the first read: spin, add, spin, add, and this one.
    ensure!(calc(LIFETIME, 0) == Ok(lifetime + 5));
    Ok(())
}

/// Faults in init are retried within the budget; past it (init or
/// invocations faulting again and again) calc stays failed with
/// ENOTRECOVERABLE until revived, and the kernel and client go on.
fn reboot_budget() -> TestResult {
    let (calc_ix, client) = ids()?;
    let life = &component::components()[calc_ix].life;
    let boots = get(BOOTS, 0)?;
    // One invocation fault and two init faults: three strikes, allowed.
    ensure!(calc(ARM_INIT_FAULTS, 2) == Ok(0));
    ensure!(calc(LOOKUP, 8) == Err(Errno::EOWNERDEAD));
    ensure!(calc(ADD, 1) == Ok(1), "init faults within the budget were not retried");
    ensure!(calc(BOOTS, 0) == Ok(boots + 3));
    // One more init fault than that: calc stays failed.
    ensure!(calc(ARM_INIT_FAULTS, 3) == Ok(0));
    ensure!(calc(LOOKUP, 8) == Err(Errno::EOWNERDEAD));
    ensure!(calc(ADD, 1) == Err(Errno::ENOTRECOVERABLE));
    ensure!(life.is_dead());
    ensure!(calc(ADD, 1) == Err(Errno::ENOTRECOVERABLE));
    ensure!(invoke_from_kernel(&[client], 0, ADD_VIA, [1, 2, 0, 0]) == Err(Errno::ENOTRECOVERABLE));
    life.revive();
    ensure!(calc(ADD, 1) == Ok(1), "a revived calc did not serve");
    // Invocations faulting in a row: the fourth fault spends the budget.
    for _ in 0..component::RESTART_BUDGET + 1 {
        ensure!(calc(LOOKUP, 9) == Err(Errno::EOWNERDEAD));
    }
    ensure!(calc(ADD, 1) == Err(Errno::ENOTRECOVERABLE));
    life.revive();
    ensure!(calc(ADD, 1) == Ok(1));
    ensure!(calc(LOOKUP, 2) == Ok(5));
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    Ok(())
}

/// Three threads add through client while a fourth makes calc panic
/// again and again: each reply is right or an error, never a wrong
/// value or a hang, and calc serves afterwards.
fn reboot_under_load() -> TestResult {
    let (calc_ix, client) = ids()?;
    let before = reboots(calc_ix);
    let wrong = Arc::new(AtomicU64::new(0));
    let faults = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for t in 0..4u64 {
        let wrong = wrong.clone();
        let faults = faults.clone();
        let thread = crate::sched::spawn("reboot-test", move || {
            for i in 0..200u64 {
                if t == 3 {
                    // A fault, then a success (so the budget is never
                    // spent). EAGAIN: it waited too long for the others
                    // to leave a failed calc.
                    match invoke_from_kernel(&[client], 0, LOOKUP_VIA, [100, 0, 0, 0]) {
                        Err(Errno::EOWNERDEAD) => {
                            faults.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Errno::EAGAIN) => {}
                        _ => {
                            wrong.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if !(0..100).any(|_| invoke_from_kernel(&[client], 0, ADD_VIA, [1, 1, 0, 0]) == Ok(2)) {
                        wrong.fetch_add(1, Ordering::Relaxed);
                    }
                    continue;
                }
                match invoke_from_kernel(&[client], 0, ADD_VIA, [t << 32, i, 0, 0]) {
                    Ok(v) if v == (t << 32) + i => {}
                    Err(Errno::EOWNERDEAD | Errno::EAGAIN) => {}
                    _ => {
                        wrong.fetch_add(1, Ordering::Relaxed);
                    }
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
    let faults = faults.load(Ordering::Relaxed);
    ensure!(faults > 0, "no fault was injected");
    ensure!(reboots(calc_ix) >= before + faults, "{} reboots for {faults} faults", reboots(calc_ix) - before);
    ensure!(invoke_from_kernel(&[client], 0, ADD_VIA, [2, 2, 0, 0]) == Ok(4));
    ensure!(component::components().iter().all(|c| c.stacks_in_use() == 0), "a stack was not released");
    Ok(())
}
