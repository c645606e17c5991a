//! Several CPUs at once: pinned threads, a spin lock fought over by every
//! CPU, wakeups that cross CPUs, and TLB shootdown seen from the CPU whose
//! TLB holds the stale entry. With one CPU there is nothing to test and
//! they pass vacuously; `make test` also runs this suite at `-smp 4`.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::frame::UserFrame;
use hal::paging::{PageTable, PteFlags};
use hal::sync::SpinLock;

use super::{KTest, TestResult};
use crate::ensure;
use crate::sched::{self, WaitQueue};

pub const TESTS: &[KTest] = &[
    KTest { name: "smp::pinned_threads_run_where_pinned", run: pinned_threads_run_where_pinned },
    KTest { name: "smp::spinlock_exact_across_cpus", run: spinlock_exact_across_cpus },
    KTest { name: "smp::wakeups_cross_cpus", run: wakeups_cross_cpus },
    KTest { name: "smp::tlb_shootdown_reaches_other_cpu", run: tlb_shootdown_reaches_other_cpu },
];

fn cpus() -> Vec<usize> {
    let online = sched::online_cpus();
    (0..64).filter(|c| online & (1 << c) != 0).collect()
}

fn spawn_on(
    cpu: usize,
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<Arc<sched::Thread>, alloc::string::String> {
    sched::spawn_configured(
        name,
        |t| {
            let _ = sched::set_affinity(t, 1 << cpu);
        },
        f,
    )
    .map_err(|e| alloc::format!("{e:?}"))
}

/// Pins the calling thread to `mask` (it moves before this returns).
fn pin_me(mask: u64) -> TestResult {
    sched::set_affinity(&sched::current(), mask).map_err(|_| alloc::format!("cannot pin to {mask:#b}"))
}

fn pinned_threads_run_where_pinned() -> TestResult {
    let seen: Arc<SpinLock<Vec<(usize, usize)>>> = Arc::new(SpinLock::new(Vec::new()));
    let mut threads = Vec::new();
    for cpu in cpus() {
        let seen = seen.clone();
        threads.push(spawn_on(cpu, "pinned", move || {
            // Yield a few times: a pinned thread must come back to its CPU.
            for _ in 0..5 {
                seen.lock().push((cpu, hal::percpu::cpu_id()));
                sched::yield_now();
            }
        })?);
    }
    for t in &threads {
        sched::join(t);
    }
    let seen = seen.lock();
    ensure!(seen.len() == 5 * cpus().len(), "{} observations", seen.len());
    for &(want, got) in seen.iter() {
        ensure!(want == got, "thread pinned to CPU {want} ran on CPU {got}");
    }
    Ok(())
}

fn spinlock_exact_across_cpus() -> TestResult {
    const ROUNDS: u64 = 20_000;
    let counter = Arc::new(SpinLock::new(0u64));
    let plain = Arc::new(AtomicU64::new(0));
    let cpus = cpus();
    let mut threads = Vec::new();
    for &cpu in &cpus {
        let (counter, plain) = (counter.clone(), plain.clone());
        threads.push(spawn_on(cpu, "counter", move || {
            for _ in 0..ROUNDS {
                let mut c = counter.lock();
                // A non-atomic read-modify-write, made atomic only by the lock.
                let v = *c;
                core::hint::spin_loop();
                *c = v + 1;
                plain.fetch_add(1, Ordering::Relaxed);
            }
        })?);
    }
    for t in &threads {
        sched::join(t);
    }
    let expected = ROUNDS * cpus.len() as u64;
    ensure!(*counter.lock() == expected, "lock-protected counter {} != {expected}", *counter.lock());
    ensure!(plain.load(Ordering::Relaxed) == expected);
    Ok(())
}

fn wakeups_cross_cpus() -> TestResult {
    let cpus = cpus();
    if cpus.len() < 2 {
        return Ok(());
    }
    const ROUNDS: u64 = 2_000;
    static QUEUE: WaitQueue = WaitQueue::new();
    static TURN: AtomicU64 = AtomicU64::new(0);
    TURN.store(0, Ordering::SeqCst);
    let mut threads = Vec::new();
    for (side, cpu) in [(0u64, cpus[0]), (1u64, cpus[1])] {
        threads.push(spawn_on(cpu, "ping", move || {
            for round in 0..ROUNDS {
                let mine = round * 2 + side;
                QUEUE.wait_until(|| TURN.load(Ordering::SeqCst) == mine);
                TURN.store(mine + 1, Ordering::SeqCst);
                QUEUE.wake_all();
            }
        })?);
    }
    let start = crate::clock::now_ns();
    while TURN.load(Ordering::SeqCst) < 2 * ROUNDS && crate::clock::now_ns() - start < 20_000_000_000 {
        sched::sleep_ns(5_000_000);
    }
    let turn = TURN.load(Ordering::SeqCst);
    ensure!(turn == 2 * ROUNDS, "ping-pong stuck at turn {turn} of {} (lost wakeup)", 2 * ROUNDS);
    for t in &threads {
        sched::join(t);
    }
    Ok(())
}

const TEST_VA: u64 = 0x4000_0000;

fn user_page(value: u64) -> Result<UserFrame, alloc::string::String> {
    let frame = UserFrame::alloc_zeroed().map_err(|_| "no memory")?;
    frame.write(0, &value.to_le_bytes());
    Ok(frame)
}

fn tlb_shootdown_reaches_other_cpu() -> TestResult {
    let cpus = cpus();
    if cpus.len() < 2 {
        return Ok(());
    }
    let (here, there) = (cpus[0], cpus[1]);
    pin_me(1 << here)?;
    let table = Arc::new(PageTable::new().map_err(|_| "no memory for a page table")?);
    let read_only = PteFlags { accessible: true, writable: false, executable: false };
    table.map(TEST_VA, user_page(0xAAAA)?, read_only).map_err(|_| "map failed")?;

    // What the reader on the other CPU last read: the value, or u64::MAX
    // for a fault.
    let seen = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (s, st, tb) = (seen.clone(), stop.clone(), table.clone());
    let reader = sched::spawn_configured(
        "tlb-reader",
        move |t| {
            let _ = sched::set_affinity(t, 1 << there);
            t.set_vm_root(Some(tb));
        },
        move || {
            while !st.load(Ordering::SeqCst) {
                let mut buf = [0u8; 8];
                let v = match hal::user::copy_from_user(&mut buf, TEST_VA) {
                    Ok(()) => u64::from_le_bytes(buf),
                    Err(_) => u64::MAX,
                };
                s.store(v, Ordering::SeqCst);
            }
        },
    )
    .map_err(|e| alloc::format!("{e:?}"))?;

    let wait_for = |want: u64| {
        let start = crate::clock::now_ns();
        while seen.load(Ordering::SeqCst) != want && crate::clock::now_ns() - start < 5_000_000_000 {
            sched::sleep_ns(1_000_000);
        }
        seen.load(Ordering::SeqCst) == want
    };
    let result = (|| -> TestResult {
        ensure!(wait_for(0xAAAA), "reader never saw the first page (saw {:#x})", seen.load(Ordering::SeqCst));
        // Replacing the page must reach the reader's TLB, which holds the
        // old translation and would keep using it without a shootdown.
        let before = hal::tlb::shootdowns_sent();
        table.map(TEST_VA, user_page(0xBBBB)?, read_only).map_err(|_| "remap failed")?;
        ensure!(hal::tlb::shootdowns_sent() > before, "no shootdown sent for a root loaded on CPU {there}");
        ensure!(wait_for(0xBBBB), "reader still sees {:#x} after the remap", seen.load(Ordering::SeqCst));
        // And an unmapped page must fault there.
        drop(table.unmap(TEST_VA));
        ensure!(wait_for(u64::MAX), "reader still reads {:#x} after munmap", seen.load(Ordering::SeqCst));
        Ok(())
    })();
    stop.store(true, Ordering::SeqCst);
    sched::join(&reader);
    reader.set_vm_root(None);
    pin_me(u64::MAX)?;
    result
}
