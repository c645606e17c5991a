//! The tunable IPC limits, with Linux's defaults: `/proc/sys/kernel`
//! (msgmax, msgmnb, msgmni, sem, shmmax, shmall, shmmni) and
//! `/proc/sys/fs/mqueue` (queues_max, msg_max, msgsize_max, msg_default,
//! msgsize_default). They live here as atomics, which the /proc/sys rows
//! below read and write.

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use linux_abi::errno::Errno;
use linux_abi::ipc as abi;

use crate::fs::procfs::sys::{self, Access, Sysctl};

pub static MSGMAX: AtomicU32 = AtomicU32::new(abi::MSGMAX);
pub static MSGMNB: AtomicU32 = AtomicU32::new(abi::MSGMNB);
pub static MSGMNI: AtomicU32 = AtomicU32::new(abi::MSGMNI);
/// `sem`: SEMMSL, SEMMNS, SEMOPM, SEMMNI.
pub static SEMMSL: AtomicU32 = AtomicU32::new(abi::SEMMSL);
pub static SEMMNS: AtomicU32 = AtomicU32::new(abi::SEMMNS);
pub static SEMOPM: AtomicU32 = AtomicU32::new(abi::SEMOPM);
pub static SEMMNI: AtomicU32 = AtomicU32::new(abi::SEMMNI);
pub static SHMMAX: AtomicU64 = AtomicU64::new(abi::SHMMAX);
pub static SHMALL: AtomicU64 = AtomicU64::new(abi::SHMALL);
pub static SHMMNI: AtomicU64 = AtomicU64::new(abi::SHMMNI);
pub static MQ_QUEUES_MAX: AtomicU32 = AtomicU32::new(abi::DFLT_QUEUESMAX);
pub static MQ_MSG_MAX: AtomicU32 = AtomicU32::new(abi::DFLT_MSGMAX);
pub static MQ_MSGSIZE_MAX: AtomicU32 = AtomicU32::new(abi::DFLT_MSGSIZEMAX);
pub static MQ_MSG_DEFAULT: AtomicU32 = AtomicU32::new(abi::DFLT_MSG);
pub static MQ_MSGSIZE_DEFAULT: AtomicU32 = AtomicU32::new(abi::DFLT_MSGSIZE);

pub fn get(v: &AtomicU32) -> u32 {
    v.load(Ordering::Relaxed)
}

pub fn get64(v: &AtomicU64) -> u64 {
    v.load(Ordering::Relaxed)
}

/// Linux's IPCMNI: the most identifiers of one kind.
const IPCMNI: i64 = 32768;
const I32_MAX: i64 = i32::MAX as i64;

fn show(v: u64) -> String {
    format!("{v}\n")
}

/// A setter for an `AtomicU32` limit within `min..=max`.
macro_rules! set32 {
    ($var:expr, $min:expr, $max:expr) => {
        |b: &[u8]| {
            $var.store(sys::parse_one(b, $min, $max)? as u32, Ordering::Relaxed);
            Ok(())
        }
    };
}

/// A setter for an `AtomicU64` limit within `min..=max` (an int).
macro_rules! set64 {
    ($var:expr, $min:expr, $max:expr) => {
        |b: &[u8]| {
            $var.store(sys::parse_one(b, $min, $max)? as u64, Ordering::Relaxed);
            Ok(())
        }
    };
}

/// A setter for an unbounded unsigned long limit (shmmax, shmall).
macro_rules! set_ulong {
    ($var:expr) => {
        |b: &[u8]| {
            if let Some(v) = sys::parse_ulong(b)? {
                $var.store(v, Ordering::Relaxed);
            }
            Ok(())
        }
    };
}

const fn rw(path: &'static str, read: fn() -> String, write: sys::Setter) -> Sysctl {
    Sysctl { path, mode: 0o644, access: Access::Func { read, write: Some(write) } }
}

/// kernel.sem: up to four integers, SEMMSL SEMMNS SEMOPM SEMMNI, the
/// ones given replacing the first ones (proc_dointvec). A SEMMNI outside
/// 0..=IPCMNI is ERANGE and only it is kept, as Linux's
/// sem_check_semmni (the other values given are stored). Negative values
/// for the others, which Linux stores and which would make no sense
/// here, are EINVAL and change nothing.
fn write_sem(b: &[u8]) -> Result<(), Errno> {
    let (v, n) = sys::parse_ints(b, 4)?;
    if v[..n].iter().any(|&x| x > I32_MAX) || v[..n.min(3)].iter().any(|&x| x < 0) {
        return Err(Errno::EINVAL);
    }
    for (var, value) in [&SEMMSL, &SEMMNS, &SEMOPM].iter().zip(&v[..n.min(3)]) {
        var.store(*value as u32, Ordering::Relaxed);
    }
    if n == 4 {
        if !(0..=IPCMNI).contains(&v[3]) {
            return Err(Errno::ERANGE);
        }
        SEMMNI.store(v[3] as u32, Ordering::Relaxed);
    }
    Ok(())
}

/// The /proc/sys files of these limits, registered at boot
/// (`fs::procfs::sys::register`), with Linux's modes and ranges.
/// kernel.shm_rmid_forced reads 0 and is read-only: Kiln does not
/// destroy orphaned segments.
pub static SYSCTLS: &[Sysctl] = &[
    rw("kernel/msgmax", || show(get(&MSGMAX).into()), set32!(MSGMAX, 0, I32_MAX)),
    rw("kernel/msgmnb", || show(get(&MSGMNB).into()), set32!(MSGMNB, 0, I32_MAX)),
    rw("kernel/msgmni", || show(get(&MSGMNI).into()), set32!(MSGMNI, 0, IPCMNI)),
    rw("kernel/sem", || format!("{}\t{}\t{}\t{}\n", get(&SEMMSL), get(&SEMMNS), get(&SEMOPM), get(&SEMMNI)), write_sem),
    rw("kernel/shmmax", || show(get64(&SHMMAX)), set_ulong!(SHMMAX)),
    rw("kernel/shmall", || show(get64(&SHMALL)), set_ulong!(SHMALL)),
    rw("kernel/shmmni", || show(get64(&SHMMNI)), set64!(SHMMNI, 0, IPCMNI)),
    Sysctl { path: "kernel/shm_rmid_forced", mode: 0o444, access: Access::Text("0\n") },
    rw("fs/mqueue/queues_max", || show(get(&MQ_QUEUES_MAX).into()), set32!(MQ_QUEUES_MAX, 0, I32_MAX)),
    rw("fs/mqueue/msg_max", || show(get(&MQ_MSG_MAX).into()), set32!(MQ_MSG_MAX, 1, 65536)),
    rw("fs/mqueue/msgsize_max", || show(get(&MQ_MSGSIZE_MAX).into()), set32!(MQ_MSGSIZE_MAX, 128, 16 << 20)),
    rw("fs/mqueue/msg_default", || show(get(&MQ_MSG_DEFAULT).into()), set32!(MQ_MSG_DEFAULT, 1, 65536)),
    rw(
        "fs/mqueue/msgsize_default",
        || show(get(&MQ_MSGSIZE_DEFAULT).into()),
        set32!(MQ_MSGSIZE_DEFAULT, 128, 16 << 20),
    ),
];
