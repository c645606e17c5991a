//! Checks the `ipc` module against the kernel UAPI headers installed on
//! the build host: `tests/ipc_layout.c` is compiled with the host C
//! compiler (`$CC`, else `cc`) and prints struct sizes, field offsets and
//! constants; each Rust encoder gives its fields distinct values and the
//! test looks for them at the C offsets. Skipped, with a note on stderr,
//! when the compiler or headers are missing.

use c_oracle::{c_probe, table, CValues};
use linux_abi::ipc::*;

fn run_c() -> Option<CValues> {
    c_probe!("ipc_layout.c", "linux/ipc.h")
}

#[test]
fn ipc_layouts_and_constants() {
    let Some(c) = run_c() else { return };
    let perm = IpcPerm { key: 0x1111, uid: 0x2222, gid: 0x3333, cuid: 0x4444, cgid: 0x5555, mode: 0x6666, seq: 0x77 };
    let check_perm = |b: &[u8]| {
        c.field("ipc64_perm.key", b, &perm.key.to_le_bytes());
        c.field("ipc64_perm.uid", b, &perm.uid.to_le_bytes());
        c.field("ipc64_perm.gid", b, &perm.gid.to_le_bytes());
        c.field("ipc64_perm.cuid", b, &perm.cuid.to_le_bytes());
        c.field("ipc64_perm.cgid", b, &perm.cgid.to_le_bytes());
        c.field("ipc64_perm.mode", b, &perm.mode.to_le_bytes());
        c.field("ipc64_perm.seq", b, &perm.seq.to_le_bytes());
    };
    c.size("ipc64_perm", IpcPerm::SIZE);

    let m = MsqidDs { perm, stime: 1, rtime: 2, ctime: 3, cbytes: 4, qnum: 5, qbytes: 6, lspid: 7, lrpid: 8 };
    let b = m.to_bytes();
    c.size("msqid64_ds", MsqidDs::SIZE);
    check_perm(&b);
    c.field("msqid64_ds.msg_stime", &b, &1i64.to_le_bytes());
    c.field("msqid64_ds.msg_rtime", &b, &2i64.to_le_bytes());
    c.field("msqid64_ds.msg_ctime", &b, &3i64.to_le_bytes());
    c.field("msqid64_ds.msg_cbytes", &b, &4u64.to_le_bytes());
    c.field("msqid64_ds.msg_qnum", &b, &5u64.to_le_bytes());
    c.field("msqid64_ds.msg_qbytes", &b, &6u64.to_le_bytes());
    c.field("msqid64_ds.msg_lspid", &b, &7i32.to_le_bytes());
    c.field("msqid64_ds.msg_lrpid", &b, &8i32.to_le_bytes());

    let s = SemidDs { perm, otime: 9, ctime: 10, nsems: 11 };
    let b = s.to_bytes();
    c.size("semid64_ds", SemidDs::SIZE);
    check_perm(&b);
    c.field("semid64_ds.sem_otime", &b, &9i64.to_le_bytes());
    c.field("semid64_ds.sem_ctime", &b, &10i64.to_le_bytes());
    c.field("semid64_ds.sem_nsems", &b, &11u64.to_le_bytes());

    let sh = ShmidDs { perm, segsz: 12, atime: 13, dtime: 14, ctime: 15, cpid: 16, lpid: 17, nattch: 18 };
    let b = sh.to_bytes();
    c.size("shmid64_ds", ShmidDs::SIZE);
    check_perm(&b);
    c.field("shmid64_ds.shm_segsz", &b, &12u64.to_le_bytes());
    c.field("shmid64_ds.shm_atime", &b, &13i64.to_le_bytes());
    c.field("shmid64_ds.shm_dtime", &b, &14i64.to_le_bytes());
    c.field("shmid64_ds.shm_ctime", &b, &15i64.to_le_bytes());
    c.field("shmid64_ds.shm_cpid", &b, &16i32.to_le_bytes());
    c.field("shmid64_ds.shm_lpid", &b, &17i32.to_le_bytes());
    c.field("shmid64_ds.shm_nattch", &b, &18u64.to_le_bytes());

    let op = Sembuf { num: 0x1234, op: -0x2345, flg: 0x3456 };
    let b = op.to_bytes();
    c.size("sembuf", Sembuf::SIZE);
    c.field("sembuf.sem_num", &b, &0x1234u16.to_le_bytes());
    c.field("sembuf.sem_op", &b, &(-0x2345i16).to_le_bytes());
    c.field("sembuf.sem_flg", &b, &0x3456i16.to_le_bytes());

    let mi = MsgInfo { msgmax: 0x11, msgtql: 0x22, msgseg: 0x33, ..MsgInfo::default() };
    let b = mi.to_bytes();
    c.size("msginfo", MsgInfo::SIZE);
    c.field("msginfo.msgmax", &b, &0x11i32.to_le_bytes());
    c.field("msginfo.msgtql", &b, &0x22i32.to_le_bytes());
    c.field("msginfo.msgseg", &b, &0x33u16.to_le_bytes());

    let si = SemInfo { semmsl: 0x44, semaem: 0x55, ..SemInfo::default() };
    let b = si.to_bytes();
    c.size("seminfo", SemInfo::SIZE);
    c.field("seminfo.semmsl", &b, &0x44i32.to_le_bytes());
    c.field("seminfo.semaem", &b, &0x55i32.to_le_bytes());

    let s64 = ShmInfo64 { shmmni: 0x66, shmall: 0x77, ..ShmInfo64::default() };
    let b = s64.to_bytes();
    c.size("shminfo64", ShmInfo64::SIZE);
    c.field("shminfo64.shmmni", &b, &0x66u64.to_le_bytes());
    c.field("shminfo64.shmall", &b, &0x77u64.to_le_bytes());

    let sinfo = ShmInfo { used_ids: 1, shm_tot: 0x88, swap_successes: 0x99, ..ShmInfo::default() };
    let b = sinfo.to_bytes();
    c.size("shm_info", ShmInfo::SIZE);
    c.field("shm_info.shm_tot", &b, &0x88u64.to_le_bytes());
    c.field("shm_info.swap_successes", &b, &0x99u64.to_le_bytes());

    let a = MqAttr { flags: 1, maxmsg: 2, msgsize: 3, curmsgs: 4 };
    let b = a.to_bytes();
    c.size("mq_attr", MqAttr::SIZE);
    c.field("mq_attr.mq_maxmsg", &b, &2i64.to_le_bytes());
    c.field("mq_attr.mq_msgsize", &b, &3i64.to_le_bytes());
    c.field("mq_attr.mq_curmsgs", &b, &4i64.to_le_bytes());

    let e = Sigevent { value: 0xaaaa, signo: 0xbb, notify: 0xcc, tid: 0xdd };
    let b = e.to_bytes();
    c.size("sigevent", Sigevent::SIZE);
    c.field("sigevent.sigev_signo", &b, &0xbbi32.to_le_bytes());
    c.field("sigevent.sigev_notify", &b, &0xcci32.to_le_bytes());
    c.field("sigevent.sigev_tid", &b, &0xddi32.to_le_bytes());

    let o = FOwnerEx { kind: 2, pid: 0xee };
    let b = o.to_bytes();
    c.size("f_owner_ex", FOwnerEx::SIZE);
    c.field("f_owner_ex.pid", &b, &0xeei32.to_le_bytes());

    let consts = table![
        IPC_PRIVATE,
        IPC_CREAT,
        IPC_EXCL,
        IPC_NOWAIT,
        IPC_RMID,
        IPC_SET,
        IPC_STAT,
        IPC_INFO,
        IPC_64,
        MSG_NOERROR,
        MSG_EXCEPT,
        MSG_COPY,
        MSG_STAT,
        MSG_INFO,
        MSG_STAT_ANY,
        MSGMAX,
        MSGMNB,
        MSGMNI,
        MSGPOOL,
        MSGTQL,
        MSGMAP,
        MSGSSZ,
        MSGSEG,
        SEM_UNDO,
        GETPID,
        GETVAL,
        GETALL,
        GETNCNT,
        GETZCNT,
        SETVAL,
        SETALL,
        SEM_STAT,
        SEM_INFO,
        SEM_STAT_ANY,
        SEMMNI,
        SEMMSL,
        SEMMNS,
        SEMOPM,
        SEMVMX,
        SEMAEM,
        SEMUME,
        SEMMNU,
        SEMMAP,
        SEMUSZ,
        SHM_RDONLY,
        SHM_RND,
        SHM_REMAP,
        SHM_EXEC,
        SHM_HUGETLB,
        SHM_NORESERVE,
        SHM_LOCK,
        SHM_UNLOCK,
        SHM_STAT,
        SHM_INFO,
        SHM_STAT_ANY,
        SHMMIN,
        SHMMNI,
        SHMMAX,
        SHMALL,
        SHMSEG,
        MFD_CLOEXEC,
        MFD_ALLOW_SEALING,
        MFD_HUGETLB,
        F_SEAL_SEAL,
        F_SEAL_SHRINK,
        F_SEAL_GROW,
        F_SEAL_WRITE,
        F_SEAL_FUTURE_WRITE,
        FALLOC_FL_KEEP_SIZE,
        FALLOC_FL_PUNCH_HOLE,
        FALLOC_FL_NO_HIDE_STALE,
        FALLOC_FL_COLLAPSE_RANGE,
        FALLOC_FL_ZERO_RANGE,
        FALLOC_FL_INSERT_RANGE,
        FALLOC_FL_UNSHARE_RANGE,
        F_OWNER_TID,
        F_OWNER_PID,
        F_OWNER_PGRP,
        LOCK_MAND,
    ];
    c.constants(&consts, |k| k.starts_with(|ch: char| ch.is_ascii_uppercase()));
}
