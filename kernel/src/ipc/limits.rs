//! The tunable IPC limits, with Linux's defaults: `/proc/sys/kernel`
//! (msgmax, msgmnb, msgmni, sem, shmmax, shmall, shmmni) and
//! `/proc/sys/fs/mqueue` (queues_max, msg_max, msgsize_max, msg_default,
//! msgsize_default). They live here as atomics so /proc can show them
//! and, once /proc/sys is writable, change them.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use linux_abi::ipc as abi;

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

/// The /proc files `sysctl_text` answers for (paths below /proc).
pub const SYSCTL_PATHS: &[&str] = &[
    "sys/kernel/msgmax",
    "sys/kernel/msgmnb",
    "sys/kernel/msgmni",
    "sys/kernel/sem",
    "sys/kernel/shmmax",
    "sys/kernel/shmall",
    "sys/kernel/shmmni",
    "sys/kernel/shm_rmid_forced",
    "sys/fs/mqueue/queues_max",
    "sys/fs/mqueue/msg_max",
    "sys/fs/mqueue/msgsize_max",
    "sys/fs/mqueue/msg_default",
    "sys/fs/mqueue/msgsize_default",
    "sys/fs/pipe-max-size",
    "sys/fs/lease-break-time",
    "sys/fs/leases-enable",
];

/// The text of a /proc/sys file this module owns, by its path below
/// /proc/sys ("kernel/msgmax"), or None.
pub fn sysctl_text(path: &str) -> Option<alloc::string::String> {
    use alloc::format;
    Some(match path.strip_prefix("sys/")? {
        "kernel/msgmax" => format!("{}\n", get(&MSGMAX)),
        "kernel/msgmnb" => format!("{}\n", get(&MSGMNB)),
        "kernel/msgmni" => format!("{}\n", get(&MSGMNI)),
        "kernel/sem" => format!("{}\t{}\t{}\t{}\n", get(&SEMMSL), get(&SEMMNS), get(&SEMOPM), get(&SEMMNI)),
        "kernel/shmmax" => format!("{}\n", get64(&SHMMAX)),
        "kernel/shmall" => format!("{}\n", get64(&SHMALL)),
        "kernel/shmmni" => format!("{}\n", get64(&SHMMNI)),
        "kernel/shm_rmid_forced" => alloc::string::String::from("0\n"),
        "fs/mqueue/queues_max" => format!("{}\n", get(&MQ_QUEUES_MAX)),
        "fs/mqueue/msg_max" => format!("{}\n", get(&MQ_MSG_MAX)),
        "fs/mqueue/msgsize_max" => format!("{}\n", get(&MQ_MSGSIZE_MAX)),
        "fs/mqueue/msg_default" => format!("{}\n", get(&MQ_MSG_DEFAULT)),
        "fs/mqueue/msgsize_default" => format!("{}\n", get(&MQ_MSGSIZE_DEFAULT)),
        "fs/pipe-max-size" => format!("{}\n", crate::fs::pipe::PIPE_MAX_SIZE),
        "fs/lease-break-time" => format!("{}\n", crate::fs::lease::LEASE_BREAK_SECS),
        "fs/leases-enable" => alloc::string::String::from("1\n"),
        _ => return None,
    })
}
