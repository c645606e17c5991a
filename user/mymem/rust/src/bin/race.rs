//! The Rust twin of user/mymem/race.c: W threads, N rounds each of
//! "counter += 1" on the counter at offset 0 of /dev/mymem.
//!
//! race W N [unlocked|atomic|mutex]
//!
//! Rust's types do not stop the `unlocked` race: the threads share only a
//! `&File`, which is `Sync` because the kernel serializes each call, and a
//! pread followed by a pwrite is two calls. What the types do guarantee is
//! that the in-process state is race-free — the `mutex` mode's `Mutex<()>`
//! must be locked to get the guard, and the shared `File` cannot be closed
//! (dropped) while a thread still borrows it: `thread::scope` joins every
//! worker before `file` can go out of scope, so the labs' "close the
//! descriptor under running threads" does not compile here.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use mymem_user::{atomic_add, PATH};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (Some(workers), Some(rounds)) = (num(1), num(2)) else {
        eprintln!("usage: race W N [unlocked|atomic|mutex]");
        std::process::exit(2);
    };
    let mode = args.get(3).map(String::as_str).unwrap_or("unlocked").to_string();
    if !["unlocked", "atomic", "mutex"].contains(&mode.as_str()) {
        eprintln!("race: unknown mode {mode}");
        std::process::exit(2);
    }
    let file = match OpenOptions::new().read(true).write(true).open(PATH) {
        Ok(f) => f,
        Err(e) => {
            println!("mymem race-rs n/a open {PATH}: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = file.write_at(&0u64.to_le_bytes(), 0) {
        println!("mymem race-rs n/a reset: {e}");
        std::process::exit(1);
    }
    let lock = Mutex::new(());
    let result: std::io::Result<()> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (file, lock, mode) = (&file, &lock, mode.as_str());
                s.spawn(move || -> std::io::Result<()> {
                    for _ in 0..rounds {
                        if mode == "atomic" {
                            atomic_add(file, 0, 1)?;
                            continue;
                        }
                        let _guard = if mode == "mutex" { Some(lock.lock().unwrap()) } else { None };
                        let mut b = [0u8; 8];
                        file.read_exact_at(&mut b, 0)?;
                        file.write_all_at(&(u64::from_le_bytes(b) + 1).to_le_bytes(), 0)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().expect("worker panicked"))
    });
    if let Err(e) = result {
        println!("mymem race-rs n/a {e}");
        std::process::exit(1);
    }
    let mut b = [0u8; 8];
    file.read_exact_at(&mut b, 0).expect("read the counter");
    let (expected, actual) = (workers * rounds, u64::from_le_bytes(b));
    let err = if expected == 0 { 0.0 } else { 100.0 * (expected as f64 - actual as f64) / expected as f64 };
    println!("mymem race-rs {mode} {workers} {rounds} expected {expected} actual {actual} error {err:.2}%");
}
