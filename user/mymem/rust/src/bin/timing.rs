//! The Rust twin of user/mymem/timing.c: average pread and pwrite time on
//! /dev/mymem over TRIALS trials per size, fresh data each trial (made
//! before the clock starts). Prints `mymem timing-rs SIZE READ_NS WRITE_NS`.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use mymem_user::{PATH, SIZE};

fn main() {
    let trials: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000).max(1);
    let file = match OpenOptions::new().read(true).write(true).open(PATH) {
        Ok(f) => f,
        Err(e) => {
            println!("mymem timing-rs n/a open {PATH}: {e}");
            std::process::exit(1);
        }
    };
    let (mut out, mut back) = (vec![0u8; SIZE], vec![0u8; SIZE]);
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    for size in [1usize, 64, 1024, 64 * 1024, SIZE] {
        let (mut rsum, mut wsum) = (0u128, 0u128);
        for _ in 0..trials {
            // xorshift64, as in timing.c: the bytes only need to change.
            for chunk in out[..size].chunks_mut(8) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                chunk.copy_from_slice(&rng.to_le_bytes()[..chunk.len()]);
            }
            // Instant is CLOCK_MONOTONIC on Linux, the clock timing.c reads.
            let t0 = Instant::now();
            let w = file.write_at(&out[..size], 0);
            let t1 = Instant::now();
            let r = file.read_at(&mut back[..size], 0);
            let t2 = Instant::now();
            if w.as_ref().ok() != Some(&size) || r.as_ref().ok() != Some(&size) || back[..size] != out[..size] {
                println!("mymem timing-rs n/a size {size}: write {w:?} read {r:?}");
                std::process::exit(1);
            }
            wsum += (t1 - t0).as_nanos();
            rsum += (t2 - t1).as_nanos();
        }
        println!("mymem timing-rs {size} {:.1} {:.1}", rsum as f64 / trials as f64, wsum as f64 / trials as f64);
    }
}
