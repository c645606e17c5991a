//! Inter-process communication and file-lock ABI: System V message
//! queues, semaphores and shared memory (`struct ipc64_perm` and the
//! `*id64_ds`/`*info` structs, commands, flags and default limits), POSIX
//! message queues (`struct mq_attr`, `struct sigevent`), `memfd_create`
//! and file seals, `fallocate` modes, and the fcntl owner struct.
//!
//! Layouts are the x86_64 ones of the kernel's UAPI headers
//! (`asm-generic/ipcbuf.h`, `msgbuf.h`, `shmbuf.h`, and x86's own
//! `sembuf.h`); `tests/ipc_layout.rs` compares them with the headers.

use crate::layout::{get_i16, get_i32, get_i64, get_u16, get_u32, get_u64};
use crate::layout::{put_i32, put_i64, put_u16, put_u32, put_u64};

// ---- System V IPC: common ----
pub const IPC_PRIVATE: i32 = 0;
pub const IPC_CREAT: u32 = 0o1000;
pub const IPC_EXCL: u32 = 0o2000;
pub const IPC_NOWAIT: u32 = 0o4000;
pub const IPC_RMID: u32 = 0;
pub const IPC_SET: u32 = 1;
pub const IPC_STAT: u32 = 2;
pub const IPC_INFO: u32 = 3;
/// The "new layout" bit of the ctl commands; x86_64 has only the new
/// layout and does not strip it, so a command carrying it is unknown.
pub const IPC_64: u32 = 0x100;

// ---- message queues ----
pub const MSG_NOERROR: u32 = 0o10000;
pub const MSG_EXCEPT: u32 = 0o20000;
pub const MSG_COPY: u32 = 0o40000;
pub const MSG_STAT: u32 = 11;
pub const MSG_INFO: u32 = 12;
pub const MSG_STAT_ANY: u32 = 13;
/// Default `msgmax`: the largest message.
pub const MSGMAX: u32 = 8192;
/// Default `msgmnb`: a queue's default byte limit.
pub const MSGMNB: u32 = 16384;
/// Default `msgmni`: the most queues.
pub const MSGMNI: u32 = 32000;
pub const MSGPOOL: u32 = MSGMNI * MSGMNB / 1024;
pub const MSGTQL: u32 = MSGMNB;
pub const MSGMAP: u32 = MSGMNB;
pub const MSGSSZ: u32 = 16;
/// `MSGPOOL * 1024 / MSGSSZ`, clipped to the `unsigned short` it is reported in.
pub const MSGSEG: u16 = 0xffff;

// ---- semaphores ----
pub const SEM_UNDO: i16 = 0x1000;
pub const GETPID: u32 = 11;
pub const GETVAL: u32 = 12;
pub const GETALL: u32 = 13;
pub const GETNCNT: u32 = 14;
pub const GETZCNT: u32 = 15;
pub const SETVAL: u32 = 16;
pub const SETALL: u32 = 17;
pub const SEM_STAT: u32 = 18;
pub const SEM_INFO: u32 = 19;
pub const SEM_STAT_ANY: u32 = 20;
pub const SEMMNI: u32 = 32000;
pub const SEMMSL: u32 = 32000;
pub const SEMMNS: u32 = SEMMNI * SEMMSL;
pub const SEMOPM: u32 = 500;
pub const SEMVMX: u32 = 32767;
pub const SEMAEM: u32 = SEMVMX;
pub const SEMUME: u32 = SEMOPM;
pub const SEMMNU: u32 = SEMMNS;
pub const SEMMAP: u32 = SEMMNS;
pub const SEMUSZ: u32 = 20;

// ---- shared memory ----
pub const SHM_RDONLY: u32 = 0o10000;
pub const SHM_RND: u32 = 0o20000;
pub const SHM_REMAP: u32 = 0o40000;
pub const SHM_EXEC: u32 = 0o100000;
pub const SHM_HUGETLB: u32 = 0o4000;
pub const SHM_NORESERVE: u32 = 0o10000;
pub const SHM_LOCK: u32 = 11;
pub const SHM_UNLOCK: u32 = 12;
pub const SHM_STAT: u32 = 13;
pub const SHM_INFO: u32 = 14;
pub const SHM_STAT_ANY: u32 = 15;
/// `shm_perm.mode` bits: marked for removal, locked in memory.
pub const SHM_DEST: u32 = 0o1000;
pub const SHM_LOCKED: u32 = 0o2000;
pub const SHMMIN: u64 = 1;
pub const SHMMNI: u64 = 4096;
pub const SHMMAX: u64 = u64::MAX - (1 << 24);
pub const SHMALL: u64 = u64::MAX - (1 << 24);
pub const SHMSEG: u64 = SHMMNI;
/// Attach addresses are rounded to this with `SHM_RND` (x86: a page).
pub const SHMLBA: u64 = 4096;

// ---- POSIX message queues ----
pub const MQ_PRIO_MAX: u32 = 32768;
/// `mq_open` name bytes (`NAME_MAX`).
pub const MQ_NAME_MAX: usize = 255;
/// `/proc/sys/fs/mqueue` defaults and the hard ceilings root may raise
/// the limits to.
pub const DFLT_QUEUESMAX: u32 = 256;
pub const DFLT_MSG: u32 = 10;
pub const DFLT_MSGMAX: u32 = 10;
pub const HARD_MSGMAX: u32 = 65536;
pub const DFLT_MSGSIZE: u32 = 8192;
pub const DFLT_MSGSIZEMAX: u32 = 8192;
pub const HARD_MSGSIZEMAX: u32 = 16 * 1024 * 1024;
pub const HARD_QUEUESMAX: u32 = 1024;

// ---- memfd_create and seals ----
pub const MFD_CLOEXEC: u32 = 0x1;
pub const MFD_ALLOW_SEALING: u32 = 0x2;
pub const MFD_HUGETLB: u32 = 0x4;
/// `memfd_create` names (`NAME_MAX` less the "memfd:" prefix).
pub const MFD_NAME_MAX: usize = 255 - 6;
pub const F_SEAL_SEAL: u32 = 0x1;
pub const F_SEAL_SHRINK: u32 = 0x2;
pub const F_SEAL_GROW: u32 = 0x4;
pub const F_SEAL_WRITE: u32 = 0x8;
pub const F_SEAL_FUTURE_WRITE: u32 = 0x10;
/// Linux 6.3: the file's execute bits may not change (and, on an
/// executable file, it seals writes and size too).
pub const F_SEAL_EXEC: u32 = 0x20;
/// The seals Kiln knows (Linux 6.3's `F_ALL_SEALS`).
pub const F_ALL_SEALS: u32 =
    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE | F_SEAL_EXEC;
/// Linux 6.3: a non-executable memfd sealed against chmod +x.
pub const MFD_NOEXEC_SEAL: u32 = 0x8;
/// Linux 6.3: an executable memfd.
pub const MFD_EXEC: u32 = 0x10;

// ---- fallocate ----
pub const FALLOC_FL_KEEP_SIZE: u32 = 0x01;
pub const FALLOC_FL_PUNCH_HOLE: u32 = 0x02;
pub const FALLOC_FL_NO_HIDE_STALE: u32 = 0x04;
pub const FALLOC_FL_COLLAPSE_RANGE: u32 = 0x08;
pub const FALLOC_FL_ZERO_RANGE: u32 = 0x10;
pub const FALLOC_FL_INSERT_RANGE: u32 = 0x20;
pub const FALLOC_FL_UNSHARE_RANGE: u32 = 0x40;

// ---- fcntl owners and leases ----
pub const F_OWNER_TID: i32 = 0;
pub const F_OWNER_PID: i32 = 1;
pub const F_OWNER_PGRP: i32 = 2;
/// `flock` commands' obsolete mandatory-lock bit, ignored with success.
pub const LOCK_MAND: u32 = 32;

/// `struct ipc64_perm`: the owner, creator and mode of an IPC object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpcPerm {
    pub key: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    pub mode: u32,
    pub seq: u16,
}

impl IpcPerm {
    pub const SIZE: usize = 48;

    fn encode(&self, b: &mut [u8]) {
        put_i32(b, 0, self.key);
        put_u32(b, 4, self.uid);
        put_u32(b, 8, self.gid);
        put_u32(b, 12, self.cuid);
        put_u32(b, 16, self.cgid);
        put_u32(b, 20, self.mode);
        put_u16(b, 24, self.seq);
    }

    fn decode(b: &[u8]) -> IpcPerm {
        IpcPerm {
            key: get_i32(b, 0),
            uid: get_u32(b, 4),
            gid: get_u32(b, 8),
            cuid: get_u32(b, 12),
            cgid: get_u32(b, 16),
            mode: get_u32(b, 20),
            seq: get_u16(b, 24),
        }
    }
}

/// `struct msqid64_ds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsqidDs {
    pub perm: IpcPerm,
    pub stime: i64,
    pub rtime: i64,
    pub ctime: i64,
    pub cbytes: u64,
    pub qnum: u64,
    pub qbytes: u64,
    pub lspid: i32,
    pub lrpid: i32,
}

impl MsqidDs {
    pub const SIZE: usize = 120;

    pub fn to_bytes(&self) -> [u8; 120] {
        let mut b = [0u8; 120];
        self.perm.encode(&mut b);
        put_i64(&mut b, 48, self.stime);
        put_i64(&mut b, 56, self.rtime);
        put_i64(&mut b, 64, self.ctime);
        put_u64(&mut b, 72, self.cbytes);
        put_u64(&mut b, 80, self.qnum);
        put_u64(&mut b, 88, self.qbytes);
        put_i32(&mut b, 96, self.lspid);
        put_i32(&mut b, 100, self.lrpid);
        b
    }

    pub fn from_bytes(b: &[u8; 120]) -> MsqidDs {
        MsqidDs {
            perm: IpcPerm::decode(b),
            stime: get_i64(b, 48),
            rtime: get_i64(b, 56),
            ctime: get_i64(b, 64),
            cbytes: get_u64(b, 72),
            qnum: get_u64(b, 80),
            qbytes: get_u64(b, 88),
            lspid: get_i32(b, 96),
            lrpid: get_i32(b, 100),
        }
    }
}

/// `struct semid64_ds` (x86's own layout, with padding after each time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemidDs {
    pub perm: IpcPerm,
    pub otime: i64,
    pub ctime: i64,
    pub nsems: u64,
}

impl SemidDs {
    pub const SIZE: usize = 104;

    pub fn to_bytes(&self) -> [u8; 104] {
        let mut b = [0u8; 104];
        self.perm.encode(&mut b);
        put_i64(&mut b, 48, self.otime);
        put_i64(&mut b, 64, self.ctime);
        put_u64(&mut b, 80, self.nsems);
        b
    }

    pub fn from_bytes(b: &[u8; 104]) -> SemidDs {
        SemidDs { perm: IpcPerm::decode(b), otime: get_i64(b, 48), ctime: get_i64(b, 64), nsems: get_u64(b, 80) }
    }
}

/// `struct shmid64_ds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShmidDs {
    pub perm: IpcPerm,
    pub segsz: u64,
    pub atime: i64,
    pub dtime: i64,
    pub ctime: i64,
    pub cpid: i32,
    pub lpid: i32,
    pub nattch: u64,
}

impl ShmidDs {
    pub const SIZE: usize = 112;

    pub fn to_bytes(&self) -> [u8; 112] {
        let mut b = [0u8; 112];
        self.perm.encode(&mut b);
        put_u64(&mut b, 48, self.segsz);
        put_i64(&mut b, 56, self.atime);
        put_i64(&mut b, 64, self.dtime);
        put_i64(&mut b, 72, self.ctime);
        put_i32(&mut b, 80, self.cpid);
        put_i32(&mut b, 84, self.lpid);
        put_u64(&mut b, 88, self.nattch);
        b
    }

    pub fn from_bytes(b: &[u8; 112]) -> ShmidDs {
        ShmidDs {
            perm: IpcPerm::decode(b),
            segsz: get_u64(b, 48),
            atime: get_i64(b, 56),
            dtime: get_i64(b, 64),
            ctime: get_i64(b, 72),
            cpid: get_i32(b, 80),
            lpid: get_i32(b, 84),
            nattch: get_u64(b, 88),
        }
    }
}

/// `struct sembuf`: one semaphore operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sembuf {
    pub num: u16,
    pub op: i16,
    pub flg: i16,
}

impl Sembuf {
    pub const SIZE: usize = 6;

    pub fn from_bytes(b: &[u8]) -> Sembuf {
        Sembuf { num: get_u16(b, 0), op: get_i16(b, 2), flg: get_i16(b, 4) }
    }

    pub fn to_bytes(&self) -> [u8; 6] {
        let mut b = [0u8; 6];
        put_u16(&mut b, 0, self.num);
        put_u16(&mut b, 2, self.op as u16);
        put_u16(&mut b, 4, self.flg as u16);
        b
    }
}

/// `struct msginfo` (IPC_INFO/MSG_INFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgInfo {
    pub msgpool: i32,
    pub msgmap: i32,
    pub msgmax: i32,
    pub msgmnb: i32,
    pub msgmni: i32,
    pub msgssz: i32,
    pub msgtql: i32,
    pub msgseg: u16,
}

impl MsgInfo {
    pub const SIZE: usize = 32;

    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, v) in [self.msgpool, self.msgmap, self.msgmax, self.msgmnb, self.msgmni, self.msgssz, self.msgtql]
            .iter()
            .enumerate()
        {
            put_i32(&mut b, i * 4, *v);
        }
        put_u16(&mut b, 28, self.msgseg);
        b
    }
}

/// `struct seminfo` (IPC_INFO/SEM_INFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemInfo {
    pub semmap: i32,
    pub semmni: i32,
    pub semmns: i32,
    pub semmnu: i32,
    pub semmsl: i32,
    pub semopm: i32,
    pub semume: i32,
    pub semusz: i32,
    pub semvmx: i32,
    pub semaem: i32,
}

impl SemInfo {
    pub const SIZE: usize = 40;

    pub fn to_bytes(&self) -> [u8; 40] {
        let mut b = [0u8; 40];
        let v = [
            self.semmap,
            self.semmni,
            self.semmns,
            self.semmnu,
            self.semmsl,
            self.semopm,
            self.semume,
            self.semusz,
            self.semvmx,
            self.semaem,
        ];
        for (i, x) in v.iter().enumerate() {
            put_i32(&mut b, i * 4, *x);
        }
        b
    }
}

/// `struct shminfo64` (shmctl IPC_INFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShmInfo64 {
    pub shmmax: u64,
    pub shmmin: u64,
    pub shmmni: u64,
    pub shmseg: u64,
    pub shmall: u64,
}

impl ShmInfo64 {
    pub const SIZE: usize = 72;

    pub fn to_bytes(&self) -> [u8; 72] {
        let mut b = [0u8; 72];
        for (i, v) in [self.shmmax, self.shmmin, self.shmmni, self.shmseg, self.shmall].iter().enumerate() {
            put_u64(&mut b, i * 8, *v);
        }
        b
    }
}

/// `struct shm_info` (shmctl SHM_INFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShmInfo {
    pub used_ids: i32,
    pub shm_tot: u64,
    pub shm_rss: u64,
    pub shm_swp: u64,
    pub swap_attempts: u64,
    pub swap_successes: u64,
}

impl ShmInfo {
    pub const SIZE: usize = 48;

    pub fn to_bytes(&self) -> [u8; 48] {
        let mut b = [0u8; 48];
        put_i32(&mut b, 0, self.used_ids);
        put_u64(&mut b, 8, self.shm_tot);
        put_u64(&mut b, 16, self.shm_rss);
        put_u64(&mut b, 24, self.shm_swp);
        put_u64(&mut b, 32, self.swap_attempts);
        put_u64(&mut b, 40, self.swap_successes);
        b
    }
}

/// `struct mq_attr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MqAttr {
    pub flags: i64,
    pub maxmsg: i64,
    pub msgsize: i64,
    pub curmsgs: i64,
}

impl MqAttr {
    pub const SIZE: usize = 64;

    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put_i64(&mut b, 0, self.flags);
        put_i64(&mut b, 8, self.maxmsg);
        put_i64(&mut b, 16, self.msgsize);
        put_i64(&mut b, 24, self.curmsgs);
        b
    }

    pub fn from_bytes(b: &[u8; 64]) -> MqAttr {
        MqAttr { flags: get_i64(b, 0), maxmsg: get_i64(b, 8), msgsize: get_i64(b, 16), curmsgs: get_i64(b, 24) }
    }
}

/// `struct sigevent`: how an event (a timer, a message) is announced.
/// `sigev_notify_thread_id` (or, for SIGEV_THREAD, glibc's attribute
/// pointer's first half) sits at offset 16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sigevent {
    pub value: u64,
    pub signo: i32,
    pub notify: i32,
    pub tid: i32,
}

impl Sigevent {
    pub const SIZE: usize = 64;

    pub fn from_bytes(b: &[u8; 64]) -> Sigevent {
        Sigevent { value: get_u64(b, 0), signo: get_i32(b, 8), notify: get_i32(b, 12), tid: get_i32(b, 16) }
    }

    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        put_u64(&mut b, 0, self.value);
        put_i32(&mut b, 8, self.signo);
        put_i32(&mut b, 12, self.notify);
        put_i32(&mut b, 16, self.tid);
        b
    }
}

/// `struct f_owner_ex` (F_SETOWN_EX/F_GETOWN_EX).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FOwnerEx {
    pub kind: i32,
    pub pid: i32,
}

impl FOwnerEx {
    pub const SIZE: usize = 8;

    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        put_i32(&mut b, 0, self.kind);
        put_i32(&mut b, 4, self.pid);
        b
    }

    pub fn from_bytes(b: &[u8; 8]) -> FOwnerEx {
        FOwnerEx { kind: get_i32(b, 0), pid: get_i32(b, 4) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let perm = IpcPerm { key: -5, uid: 1, gid: 2, cuid: 3, cgid: 4, mode: 0o1666, seq: 7 };
        let m =
            MsqidDs { perm, stime: 10, rtime: 11, ctime: 12, cbytes: 13, qnum: 14, qbytes: 15, lspid: 16, lrpid: 17 };
        assert_eq!(MsqidDs::from_bytes(&m.to_bytes()), m);
        let s = SemidDs { perm, otime: 1, ctime: 2, nsems: 3 };
        assert_eq!(SemidDs::from_bytes(&s.to_bytes()), s);
        let sh = ShmidDs { perm, segsz: 1, atime: 2, dtime: 3, ctime: 4, cpid: 5, lpid: 6, nattch: 7 };
        assert_eq!(ShmidDs::from_bytes(&sh.to_bytes()), sh);
        let op = Sembuf { num: 3, op: -2, flg: SEM_UNDO | IPC_NOWAIT as i16 };
        assert_eq!(Sembuf::from_bytes(&op.to_bytes()), op);
        let a = MqAttr { flags: 0x800, maxmsg: 10, msgsize: 8192, curmsgs: 2 };
        assert_eq!(MqAttr::from_bytes(&a.to_bytes()), a);
        let o = FOwnerEx { kind: F_OWNER_PGRP, pid: 42 };
        assert_eq!(FOwnerEx::from_bytes(&o.to_bytes()), o);
        let e = Sigevent { value: 0xabc, signo: 10, notify: 0, tid: 0 };
        assert_eq!(Sigevent::from_bytes(&e.to_bytes()), e);
    }

    #[test]
    fn limits() {
        assert_eq!(MSGPOOL, 512_000);
        assert_eq!(SEMMNS, 1_024_000_000);
        assert_eq!(SHMMAX, 18_446_744_073_692_774_399);
        assert_eq!(MFD_NAME_MAX, 249);
    }
}
