/*
 * Prints the sizes and field offsets of the x86_64 IPC and file-lock ABI
 * structs, and the values of their constants, as "name value" lines, from
 * the kernel UAPI headers. tests/ipc_layout.rs compares the output with
 * the linux-abi crate's `ipc` module.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/ipc.h>
#include <linux/msg.h>
#include <linux/sem.h>
#include <linux/shm.h>
#include <linux/mqueue.h>
#include <linux/memfd.h>
#include <linux/fcntl.h>
#include <linux/falloc.h>
#include <asm-generic/siginfo.h>

#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))
#define UVAL(name) printf("%s %llu\n", #name, (unsigned long long)(name))

int main(void)
{
    SZ("ipc64_perm", struct ipc64_perm);
    OFF("ipc64_perm.key", struct ipc64_perm, key);
    OFF("ipc64_perm.uid", struct ipc64_perm, uid);
    OFF("ipc64_perm.gid", struct ipc64_perm, gid);
    OFF("ipc64_perm.cuid", struct ipc64_perm, cuid);
    OFF("ipc64_perm.cgid", struct ipc64_perm, cgid);
    OFF("ipc64_perm.mode", struct ipc64_perm, mode);
    OFF("ipc64_perm.seq", struct ipc64_perm, seq);

    SZ("msqid64_ds", struct msqid64_ds);
    OFF("msqid64_ds.msg_stime", struct msqid64_ds, msg_stime);
    OFF("msqid64_ds.msg_rtime", struct msqid64_ds, msg_rtime);
    OFF("msqid64_ds.msg_ctime", struct msqid64_ds, msg_ctime);
    OFF("msqid64_ds.msg_cbytes", struct msqid64_ds, msg_cbytes);
    OFF("msqid64_ds.msg_qnum", struct msqid64_ds, msg_qnum);
    OFF("msqid64_ds.msg_qbytes", struct msqid64_ds, msg_qbytes);
    OFF("msqid64_ds.msg_lspid", struct msqid64_ds, msg_lspid);
    OFF("msqid64_ds.msg_lrpid", struct msqid64_ds, msg_lrpid);

    SZ("semid64_ds", struct semid64_ds);
    OFF("semid64_ds.sem_otime", struct semid64_ds, sem_otime);
    OFF("semid64_ds.sem_ctime", struct semid64_ds, sem_ctime);
    OFF("semid64_ds.sem_nsems", struct semid64_ds, sem_nsems);

    SZ("shmid64_ds", struct shmid64_ds);
    OFF("shmid64_ds.shm_segsz", struct shmid64_ds, shm_segsz);
    OFF("shmid64_ds.shm_atime", struct shmid64_ds, shm_atime);
    OFF("shmid64_ds.shm_dtime", struct shmid64_ds, shm_dtime);
    OFF("shmid64_ds.shm_ctime", struct shmid64_ds, shm_ctime);
    OFF("shmid64_ds.shm_cpid", struct shmid64_ds, shm_cpid);
    OFF("shmid64_ds.shm_lpid", struct shmid64_ds, shm_lpid);
    OFF("shmid64_ds.shm_nattch", struct shmid64_ds, shm_nattch);

    SZ("sembuf", struct sembuf);
    OFF("sembuf.sem_num", struct sembuf, sem_num);
    OFF("sembuf.sem_op", struct sembuf, sem_op);
    OFF("sembuf.sem_flg", struct sembuf, sem_flg);

    SZ("msginfo", struct msginfo);
    OFF("msginfo.msgmax", struct msginfo, msgmax);
    OFF("msginfo.msgtql", struct msginfo, msgtql);
    OFF("msginfo.msgseg", struct msginfo, msgseg);
    SZ("seminfo", struct seminfo);
    OFF("seminfo.semmsl", struct seminfo, semmsl);
    OFF("seminfo.semaem", struct seminfo, semaem);
    SZ("shminfo64", struct shminfo64);
    OFF("shminfo64.shmmni", struct shminfo64, shmmni);
    OFF("shminfo64.shmall", struct shminfo64, shmall);
    SZ("shm_info", struct shm_info);
    OFF("shm_info.shm_tot", struct shm_info, shm_tot);
    OFF("shm_info.swap_successes", struct shm_info, swap_successes);

    SZ("mq_attr", struct mq_attr);
    OFF("mq_attr.mq_maxmsg", struct mq_attr, mq_maxmsg);
    OFF("mq_attr.mq_msgsize", struct mq_attr, mq_msgsize);
    OFF("mq_attr.mq_curmsgs", struct mq_attr, mq_curmsgs);

    SZ("sigevent", struct sigevent);
    OFF("sigevent.sigev_signo", struct sigevent, sigev_signo);
    OFF("sigevent.sigev_notify", struct sigevent, sigev_notify);
    OFF("sigevent.sigev_tid", struct sigevent, _sigev_un._tid);

    SZ("f_owner_ex", struct f_owner_ex);
    OFF("f_owner_ex.pid", struct f_owner_ex, pid);

    VAL(IPC_PRIVATE);
    VAL(IPC_CREAT);
    VAL(IPC_EXCL);
    VAL(IPC_NOWAIT);
    VAL(IPC_RMID);
    VAL(IPC_SET);
    VAL(IPC_STAT);
    VAL(IPC_INFO);
    VAL(IPC_64);
    VAL(MSG_NOERROR);
    VAL(MSG_EXCEPT);
    VAL(MSG_COPY);
    VAL(MSG_STAT);
    VAL(MSG_INFO);
    VAL(MSG_STAT_ANY);
    VAL(MSGMAX);
    VAL(MSGMNB);
    VAL(MSGMNI);
    VAL(MSGPOOL);
    VAL(MSGTQL);
    VAL(MSGMAP);
    VAL(MSGSSZ);
    VAL(MSGSEG);
    VAL(SEM_UNDO);
    VAL(GETPID);
    VAL(GETVAL);
    VAL(GETALL);
    VAL(GETNCNT);
    VAL(GETZCNT);
    VAL(SETVAL);
    VAL(SETALL);
    VAL(SEM_STAT);
    VAL(SEM_INFO);
    VAL(SEM_STAT_ANY);
    VAL(SEMMNI);
    VAL(SEMMSL);
    VAL(SEMMNS);
    VAL(SEMOPM);
    VAL(SEMVMX);
    VAL(SEMAEM);
    VAL(SEMUME);
    VAL(SEMMNU);
    VAL(SEMMAP);
    VAL(SEMUSZ);
    VAL(SHM_RDONLY);
    VAL(SHM_RND);
    VAL(SHM_REMAP);
    VAL(SHM_EXEC);
    VAL(SHM_HUGETLB);
    VAL(SHM_NORESERVE);
    VAL(SHM_LOCK);
    VAL(SHM_UNLOCK);
    VAL(SHM_STAT);
    VAL(SHM_INFO);
    VAL(SHM_STAT_ANY);
    VAL(SHMMIN);
    VAL(SHMMNI);
    UVAL(SHMMAX);
    UVAL(SHMALL);
    VAL(SHMSEG);
    VAL(MFD_CLOEXEC);
    VAL(MFD_ALLOW_SEALING);
    VAL(MFD_HUGETLB);
    VAL(F_SEAL_SEAL);
    VAL(F_SEAL_SHRINK);
    VAL(F_SEAL_GROW);
    VAL(F_SEAL_WRITE);
    VAL(F_SEAL_FUTURE_WRITE);
    VAL(FALLOC_FL_KEEP_SIZE);
    VAL(FALLOC_FL_PUNCH_HOLE);
    VAL(FALLOC_FL_NO_HIDE_STALE);
    VAL(FALLOC_FL_COLLAPSE_RANGE);
    VAL(FALLOC_FL_ZERO_RANGE);
    VAL(FALLOC_FL_INSERT_RANGE);
    VAL(FALLOC_FL_UNSHARE_RANGE);
    VAL(F_OWNER_TID);
    VAL(F_OWNER_PID);
    VAL(F_OWNER_PGRP);
    VAL(LOCK_MAND);
    return 0;
}
