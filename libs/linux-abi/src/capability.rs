//! Capabilities and security bits: the capability numbers of
//! `<linux/capability.h>` (as of Linux 6.1, the last being
//! `CAP_CHECKPOINT_RESTORE`), the `capget`/`capset` header and data
//! layouts with their three versions, the `prctl` options that read and
//! change capabilities, and the securebits of `<linux/securebits.h>`.

pub const CAP_CHOWN: u32 = 0;
pub const CAP_DAC_OVERRIDE: u32 = 1;
pub const CAP_DAC_READ_SEARCH: u32 = 2;
pub const CAP_FOWNER: u32 = 3;
pub const CAP_FSETID: u32 = 4;
pub const CAP_KILL: u32 = 5;
pub const CAP_SETGID: u32 = 6;
pub const CAP_SETUID: u32 = 7;
pub const CAP_SETPCAP: u32 = 8;
pub const CAP_LINUX_IMMUTABLE: u32 = 9;
pub const CAP_NET_BIND_SERVICE: u32 = 10;
pub const CAP_NET_BROADCAST: u32 = 11;
pub const CAP_NET_ADMIN: u32 = 12;
pub const CAP_NET_RAW: u32 = 13;
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_IPC_OWNER: u32 = 15;
pub const CAP_SYS_MODULE: u32 = 16;
pub const CAP_SYS_RAWIO: u32 = 17;
pub const CAP_SYS_CHROOT: u32 = 18;
pub const CAP_SYS_PTRACE: u32 = 19;
pub const CAP_SYS_PACCT: u32 = 20;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_BOOT: u32 = 22;
pub const CAP_SYS_NICE: u32 = 23;
pub const CAP_SYS_RESOURCE: u32 = 24;
pub const CAP_SYS_TIME: u32 = 25;
pub const CAP_SYS_TTY_CONFIG: u32 = 26;
pub const CAP_MKNOD: u32 = 27;
pub const CAP_LEASE: u32 = 28;
pub const CAP_AUDIT_WRITE: u32 = 29;
pub const CAP_AUDIT_CONTROL: u32 = 30;
pub const CAP_SETFCAP: u32 = 31;
pub const CAP_MAC_OVERRIDE: u32 = 32;
pub const CAP_MAC_ADMIN: u32 = 33;
pub const CAP_SYSLOG: u32 = 34;
pub const CAP_WAKE_ALARM: u32 = 35;
pub const CAP_BLOCK_SUSPEND: u32 = 36;
pub const CAP_AUDIT_READ: u32 = 37;
pub const CAP_PERFMON: u32 = 38;
pub const CAP_BPF: u32 = 39;
pub const CAP_CHECKPOINT_RESTORE: u32 = 40;
/// The highest capability number (`/proc/sys/kernel/cap_last_cap`).
pub const CAP_LAST_CAP: u32 = CAP_CHECKPOINT_RESTORE;

/// Whether `cap` names a capability (`cap_valid`).
pub const fn cap_valid(cap: u64) -> bool {
    cap <= CAP_LAST_CAP as u64
}

/// `capget`/`capset` header versions and how many 32-bit data words each
/// carries.
pub const LINUX_CAPABILITY_VERSION_1: u32 = 0x1998_0330;
pub const LINUX_CAPABILITY_U32S_1: usize = 1;
pub const LINUX_CAPABILITY_VERSION_2: u32 = 0x2007_1026;
pub const LINUX_CAPABILITY_U32S_2: usize = 2;
pub const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
pub const LINUX_CAPABILITY_U32S_3: usize = 2;

/// `struct __user_cap_header_struct { __u32 version; int pid; }`.
pub const CAP_HEADER_SIZE: usize = 8;
/// `struct __user_cap_data_struct { __u32 effective, permitted, inheritable; }`.
pub const CAP_DATA_SIZE: usize = 12;

/// prctl options for capabilities and privileges.
pub const PR_GET_SECUREBITS: u32 = 27;
pub const PR_SET_SECUREBITS: u32 = 28;
pub const PR_CAP_AMBIENT: u32 = 47;
pub const PR_CAP_AMBIENT_IS_SET: u64 = 1;
pub const PR_CAP_AMBIENT_RAISE: u64 = 2;
pub const PR_CAP_AMBIENT_LOWER: u64 = 3;
pub const PR_CAP_AMBIENT_CLEAR_ALL: u64 = 4;

/// `/proc/sys/fs/suid_dumpable` values, which `PR_SET_DUMPABLE` takes.
pub const SUID_DUMP_DISABLE: u64 = 0;
pub const SUID_DUMP_USER: u64 = 1;

/// Securebits (bit numbers; each `_LOCKED` bit freezes the one below it).
pub const SECURE_NOROOT: u32 = 0;
pub const SECURE_NOROOT_LOCKED: u32 = 1;
pub const SECURE_NO_SETUID_FIXUP: u32 = 2;
pub const SECURE_NO_SETUID_FIXUP_LOCKED: u32 = 3;
pub const SECURE_KEEP_CAPS: u32 = 4;
pub const SECURE_KEEP_CAPS_LOCKED: u32 = 5;
pub const SECURE_NO_CAP_AMBIENT_RAISE: u32 = 6;
pub const SECURE_NO_CAP_AMBIENT_RAISE_LOCKED: u32 = 7;
pub const SECURE_ALL_BITS: u32 =
    1 << SECURE_NOROOT | 1 << SECURE_NO_SETUID_FIXUP | 1 << SECURE_KEEP_CAPS | 1 << SECURE_NO_CAP_AMBIENT_RAISE;
pub const SECURE_ALL_LOCKS: u32 = SECURE_ALL_BITS << 1;

/// The largest supplementary group list (`NGROUPS_MAX`).
pub const NGROUPS_MAX: usize = 65536;
