//! /dev/mymem through its kernel interface: range checks, the race with
//! 50 kernel threads through the locked path, and timings (reported, not
//! asserted: speed belongs in `make bench`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::errno::Errno;

use super::{KTest, TestResult};
use crate::dev::mymem;
use crate::ensure;
use crate::sched;

pub const TESTS: &[KTest] = &[
    KTest { name: "dev::mymem_round_trip", run: mymem_round_trip },
    KTest { name: "dev::mymem_range_errors", run: mymem_range_errors },
    KTest { name: "dev::mymem_race_50_threads_locked", run: mymem_race_50_threads_locked },
    KTest { name: "dev::mymem_timing", run: mymem_timing },
];

fn mymem_round_trip() -> TestResult {
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    ensure!(mymem::write(1000, &data) == Ok(4096));
    let mut back = alloc::vec![0u8; 4096];
    ensure!(mymem::read(1000, &mut back) == Ok(4096));
    ensure!(back == data, "read back differs");
    // The last byte is reachable.
    ensure!(mymem::write(mymem::SIZE as u64 - 1, &[9]) == Ok(1));
    Ok(())
}

fn mymem_range_errors() -> TestResult {
    let mut buf = [0u8; 16];
    ensure!(mymem::read(mymem::SIZE as u64, &mut buf) == Err(Errno::EINVAL), "read past the end");
    ensure!(mymem::read(mymem::SIZE as u64 - 8, &mut buf) == Err(Errno::EINVAL), "read crossing the end");
    ensure!(mymem::write(u64::MAX - 4, &buf) == Err(Errno::EINVAL), "offset overflow");
    ensure!(mymem::atomic_add(4, 1) == Err(Errno::EINVAL), "unaligned counter");
    ensure!(mymem::atomic_add(mymem::SIZE as u64, 1) == Err(Errno::EINVAL), "counter past the end");
    // A refused write changed nothing.
    mymem::write(mymem::SIZE as u64 - 8, &[1; 8]).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(mymem::write(mymem::SIZE as u64 - 8, &[2; 16]).is_err());
    let mut tail = [0u8; 8];
    mymem::read(mymem::SIZE as u64 - 8, &mut tail).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(tail == [1; 8], "a failed write modified data");
    Ok(())
}

fn mymem_race_50_threads_locked() -> TestResult {
    const WORKERS: u64 = 50;
    const ROUNDS: u64 = 2000;
    mymem::write(0, &0u64.to_le_bytes()).map_err(|e| alloc::format!("{e:?}"))?;
    let errors = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for _ in 0..WORKERS {
        let errors = errors.clone();
        threads.push(
            sched::spawn("mymem-race", move || {
                for _ in 0..ROUNDS {
                    if mymem::atomic_add(0, 1).is_err() {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .map_err(|e| alloc::format!("{e:?}"))?,
        );
    }
    for t in &threads {
        sched::join(t);
    }
    let mut b = [0u8; 8];
    mymem::read(0, &mut b).map_err(|e| alloc::format!("{e:?}"))?;
    let count = u64::from_le_bytes(b);
    ensure!(errors.load(Ordering::Relaxed) == 0);
    ensure!(count == WORKERS * ROUNDS, "expected {}, got {count}", WORKERS * ROUNDS);
    Ok(())
}

fn mymem_timing() -> TestResult {
    const TRIALS: u64 = 100;
    let mut buf = alloc::vec![0u8; mymem::SIZE];
    for size in [1usize, 64, 1024, 64 * 1024, 512 * 1024] {
        let (mut read_ns, mut write_ns) = (0u64, 0u64);
        for trial in 0..TRIALS {
            crate::random::fill(&mut buf[..size.min(64)]);
            buf[size - 1] = trial as u8;
            let t0 = crate::clock::now_ns();
            mymem::write(0, &buf[..size]).map_err(|e| alloc::format!("{e:?}"))?;
            let t1 = crate::clock::now_ns();
            mymem::read(0, &mut buf[..size]).map_err(|e| alloc::format!("{e:?}"))?;
            let t2 = crate::clock::now_ns();
            write_ns += t1 - t0;
            read_ns += t2 - t1;
            ensure!(buf[size - 1] == trial as u8);
        }
        log::info!("mymem in-kernel size {size} read {} ns write {} ns", read_ns / TRIALS, write_ns / TRIALS);
    }
    Ok(())
}
