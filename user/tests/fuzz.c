/*
 * fuzz: random system calls with hostile arguments, from a fixed seed, in
 * child processes (Kiln only; it skips itself on the host). Every call
 * must end in a result or an errno, or the child in a signal; the kernel
 * stays up and works afterwards. The children stay away from what would
 * harm the rest of the machine: signals to other processes, reboot, mount,
 * clocks and names, fork, and paths outside /tmp/fuzz and /proc. execve
 * and execveat are fuzzed (hostile paths, argv and envp arrays, flags):
 * none of the paths or descriptors a child can name is an executable
 * program or script, so they can only fail.
 * A child that blocks (a read, a futex, a pause) is killed after 500 ms.
 * A quarter of the calls are credential calls (set*id, groups, capget and
 * capset, the capability prctls, access) with plausible ids and headers,
 * and every other child first becomes an unprivileged user, so the
 * permission checks get fuzzed too; the parent stays root throughout.
 * setpriority and the scheduling calls are made on the child itself only
 * (random nice values and policies, real-time ones included), and two
 * children end in a SCHED_FIFO busy loop on the parent's CPU: real-time
 * throttling (950 ms a second) must still let the parent run to kill them.
 * A quarter of the calls aim at IPC and locks with mostly valid
 * arguments (System V queues, semaphores and segments, POSIX queues,
 * record locks, flock, leases, owners and O_ASYNC on the child itself,
 * memfds and seals); afterwards the parent removes every IPC object they
 * left and checks that none remains.
 * A quarter of the other calls work on event files with mostly valid
 * arguments (epoll instances nested and watching each other's files,
 * eventfds, timerfds armed to fire, signalfds, inotify watches on
 * /tmp/fuzz while files come and go there, some inotify instances with
 * O_ASYNC sending the child the blocked SIGUSR1), so the calls get past
 * their argument checks. An eighth of the calls aim at pidfds (open,
 * getfd, harmless signals, waitid, poll), process_vm_readv/writev on the
 * child's own memory, rseq (areas registered and unregistered, now and
 * then a garbage descriptor), membarrier's RSEQ commands and futex_waitv
 * (vectors of plausible and hostile entries with a near deadline), and
 * adjtimex/clock_adjtime with modes that only read or fail validation
 * (a child may still hold CAP_SYS_TIME, and the clock must stay put).
 * A sixteenth of the socket calls make sockets of every family and
 * kind, ICMP (ping sockets, allowed for every group meanwhile, and raw
 * sockets for the root children) and netlink included, and each child
 * starts with a ping socket and a raw ICMP socket of each family among
 * its low descriptors, so sends, receives and options reach them.
 */
#include "common.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/ipc.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <poll.h>
#include <time.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#ifndef CHILDREN
#define CHILDREN 48
#endif
#ifndef CALLS
#define CALLS 400
#endif
#ifndef SEED
#define SEED 0x5eed0000ULL
#endif

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *paths[] = {
    "/tmp/fuzz/a", "/tmp/fuzz/b", "/tmp/fuzz/d", "/tmp/fuzz/d/e", "/tmp/fuzz", "/proc/self/status",
    "/proc/self/maps", "/proc/self/fd", "/proc", ".",
};
#define NPATHS (sizeof paths / sizeof paths[0])

/* Calls a child must not make. */
static int excluded(long nr)
{
    switch (nr) {
    case SYS_kill: case SYS_tkill: case SYS_tgkill: case SYS_rt_sigqueueinfo: case SYS_rt_tgsigqueueinfo:
    case SYS_reboot: case SYS_mount: case SYS_umount2: case SYS_pivot_root: case SYS_chroot:
    case SYS_sethostname: case SYS_setdomainname: case SYS_settimeofday: case SYS_clock_settime:
    case SYS_adjtimex: case SYS_clock_adjtime: case SYS_fork: case SYS_vfork: case SYS_clone:
    case SYS_ptrace: case SYS_swapon: case SYS_swapoff:
    case SYS_syslog: case SYS_acct: case SYS_setpriority: case SYS_ioprio_set:
    /* Limits now bite (RLIMIT_CPU kills, RLIMIT_STACK stops stack growth):
     * one set on pid 1 would end the run. */
    case SYS_prlimit64:
#ifdef SYS_clone3
    case SYS_clone3:
#endif
#ifdef SYS_pidfd_send_signal
    case SYS_pidfd_send_signal:
#endif
        return 1;
    }
    return 0;
}

static char *scratch;

static long arg(void)
{
    switch (next() % 14) {
    case 0: return 0;
    case 1: return -1;
    case 2: return (long)(next() % 64);
    case 3: return (long)(next() % 8); /* a descriptor */
    case 4: return (long)0x7fffffffffffUL;
    case 5: return (long)0xffff800000000000UL;
    case 6: return 0x1000;
    case 7: return (long)(scratch + next() % 4096);
    case 8: return (long)(scratch + 4096 - (next() % 16)); /* runs into the guard page */
    case 9: return (long)next();
    case 10: return (long)scratch;
    case 11: return (long)paths[next() % NPATHS];
    case 12: return (long)(1UL << (next() % 64));
    default: return (long)(next() % 4096) - 2048;
    }
}

/* An id a credential call might be given. */
static long an_id(void)
{
    static const long ids[] = { 0, 1, 50, 1000, 1001, 65534, -1, 0x7fffffff };
    return (next() % 5 == 0) ? (long)next() : ids[next() % (sizeof ids / sizeof ids[0])];
}

/* A credential call with arguments close enough to valid to get past the
 * first checks. */
static void cred_call(void)
{
    static const long prctls[] = { 3, 4, 7, 8, 23, 24, 27, 28, 38, 39, 47 };
    static const uint32_t versions[] = { 0x19980330, 0x20071026, 0x20080522, 0 };
    uint32_t *hdr = (uint32_t *)scratch;
    switch (next() % 16) {
    case 0: syscall(SYS_setuid, an_id()); break;
    case 1: syscall(SYS_setgid, an_id()); break;
    case 2: syscall(SYS_setreuid, an_id(), an_id()); break;
    case 3: syscall(SYS_setregid, an_id(), an_id()); break;
    case 4: syscall(SYS_setresuid, an_id(), an_id(), an_id()); break;
    case 5: syscall(SYS_setresgid, an_id(), an_id(), an_id()); break;
    case 6: syscall(SYS_setfsuid, an_id()); break;
    case 7: syscall(SYS_setfsgid, an_id()); break;
    case 8: syscall(SYS_setgroups, (long)(next() % 8) - 1, arg()); break;
    case 9: syscall(SYS_getgroups, (long)(next() % 8) - 1, arg()); break;
    case 10: syscall(next() % 2 ? SYS_getresuid : SYS_getresgid, arg(), arg(), arg()); break;
    case 11:
    case 12:
        hdr[0] = versions[next() % 4];
        hdr[1] = (uint32_t)(next() % 3 == 0 ? (long)getpid() : (long)(next() % 3) - 1);
        syscall(next() % 2 ? SYS_capget : SYS_capset, next() % 8 ? (long)hdr : arg(),
                next() % 8 ? (long)(scratch + 8) : arg());
        break;
    case 13:
    case 14: syscall(SYS_prctl, prctls[next() % (sizeof prctls / sizeof prctls[0])], (long)(next() % 44) - 1,
                     (long)(next() % 44) - 1, next() % 4 ? 0 : arg(), next() % 4 ? 0 : arg());
        break;
    default: syscall(SYS_faccessat2, AT_FDCWD, paths[next() % NPATHS], (long)(next() % 9), (long)(next() % 2) << 9);
    }
}

/* A scheduling call on the child itself, with random values. */
static void sched_self(void)
{
    static const int policies[] = { SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, 6, 4, -1 };
    struct sched_param p = { .sched_priority = (int)(next() % 101) };
    uint32_t attr[16];
    for (int j = 0; j < 16; j++)
        attr[j] = (uint32_t)next() % 128;
    attr[0] = (uint32_t)(next() % 2 ? 48 : next() % 128);
    switch (next() % 4) {
    case 0: syscall(SYS_setpriority, PRIO_PROCESS, 0, (long)(next() % 60) - 30); break;
    case 1: syscall(SYS_sched_setscheduler, 0, policies[next() % 8], &p); break;
    case 2: syscall(SYS_sched_setattr, 0, attr, 0); break;
    default: syscall(SYS_sched_setparam, 0, &p); break;
    }
}

/* seccomp filters built from plausible instructions (some pass the
 * checks, most actions keep the child running), the I/O priority of the
 * child itself, and the old time and directory calls. */
static void newer_call(void)
{
    static const uint32_t rets[] = { 0x7fff0000, 0x7ffc0000, 0x00050000, 0x7ff00000, 0x7fc00000, 0x00050001,
                                     0x7fff0000, 0x00000000 };
    static const uint16_t codes[] = { 0x20, 0x15, 0x25, 0x35, 0x45, 0x04, 0x54, 0x64, 0x74, 0x84, 0x07, 0x87,
                                      0x02, 0x60, 0x61, 0x00, 0x01, 0x05, 0x06, 0x80, 0x94, 0x28 };
    switch (next() % 8) {
    case 0: {
        if (next() % 4)
            break; /* filters stay for the rest of the child's calls: rarely */
        /* exit and exit_group are always allowed, so the child can end. */
        struct { uint16_t code; uint8_t jt, jf; uint32_t k; } f[12] = {
            { 0x20, 0, 0, 0 }, { 0x15, 2, 0, 60 }, { 0x15, 1, 0, 231 }, { 0x05, 0, 0, 1 }, { 0x06, 0, 0, 0x7fff0000 },
        };
        int n = 5 + 1 + (int)(next() % 7);
        for (int i = 5; i < n - 1; i++) {
            f[i].code = codes[next() % (sizeof codes / sizeof codes[0])];
            f[i].jt = (uint8_t)(next() % 3);
            f[i].jf = (uint8_t)(next() % 3);
            f[i].k = next() % 4 ? (uint32_t)(4 * (next() % 17)) : (uint32_t)next();
        }
        f[n - 1].code = 0x06;
        f[n - 1].jt = f[n - 1].jf = 0;
        /* Rarely a killing filter: the child's run would end there. */
        f[n - 1].k = rets[next() % (next() % 16 ? 7 : 8)] | (uint32_t)(next() % 4096 & 0xfff);
        struct { unsigned short len; void *filter; } prog = { (unsigned short)n, f };
        syscall(SYS_prctl, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0, 0, 0);
        syscall(SYS_seccomp, 1, next() % 4 ? 0 : (long)(next() % 64), next() % 8 ? (long)&prog : arg());
        break;
    }
    case 1:
    case 2: {
        uint32_t action = (uint32_t)(next() % 2 ? rets[next() % 8] : next());
        syscall(SYS_seccomp, (long)(next() % 5), (long)(next() % 3), next() % 2 ? (long)&action : arg());
        break;
    }
    case 3: syscall(SYS_ioprio_set, 1, 0, (long)(next() % 8) << 13 | (long)(next() % 10)); break;
    case 4: syscall(SYS_ioprio_get, (long)(next() % 5), next() % 2 ? 0 : arg()); break;
    case 5: syscall(next() % 2 ? SYS_utime : SYS_utimes, paths[next() % NPATHS], next() % 2 ? 0 : arg()); break;
    case 6:
        if (next() % 2) {
            /* syslog's reading actions only: the others change the console. */
            static const int reads[] = { 3, 9, 10, 0, 1, 11 };
            syscall(SYS_syslog, reads[next() % 6], next() % 4 ? (long)scratch : arg(), (long)(next() % 5000) - 100);
            break;
        }
        syscall(SYS_futimesat, (long)(next() % 8) - 1, next() % 2 ? 0 : (long)paths[next() % NPATHS], arg());
        break;
    default: {
        int fd = open(paths[next() % NPATHS], O_RDONLY);
        syscall(SYS_getdents, fd, next() % 4 ? (long)scratch : arg(), (long)(next() % 4096));
        close(fd);
        break;
    }
    }
}

/* Mostly `valid`, sometimes a hostile argument. */
static long pick(long valid)
{
    return next() % 4 ? valid : arg();
}

static const char *mq_names[] = { "kiln-fuzz-0", "kiln-fuzz-1", "kiln-fuzz-2" };
#define FUZZ_KEY(n) ((key_t)(0x46555a00 + (n)))

/* Random flag bits out of `bits`. */
static long some(long bits)
{
    return (long)(next() & (uint64_t)bits);
}

/* An IPC or lock call with mostly valid arguments. Owners and async
 * signals only ever name the child itself. */
static void ipc_call(void)
{
    static int msq = -1, sem = -1, shm = -1, mq = -1, lfd = -1, mfd = -1, pfd[2] = { -1, -1 };
    static long attached;
    long *words = (long *)scratch;
    struct timespec *ts = (struct timespec *)(scratch + 64);
    switch (next() % 24) {
    case 0: msq = msgget(next() % 2 ? IPC_PRIVATE : FUZZ_KEY(next() % 4), IPC_CREAT | 0600 | some(IPC_EXCL)); break;
    case 1:
        words[0] = (long)(next() % 5);
        syscall(SYS_msgsnd, pick(msq), pick((long)scratch), pick((long)(next() % 128)), some(IPC_NOWAIT));
        break;
    case 2:
        syscall(SYS_msgrcv, pick(msq), pick((long)scratch), pick((long)(next() % 128)), (long)(next() % 7) - 3,
                some(IPC_NOWAIT | MSG_NOERROR | MSG_EXCEPT | 040000));
        break;
    case 3: syscall(SYS_msgctl, pick(msq), pick((long)(next() % 16)), pick((long)scratch)); break;
    case 4: sem = semget(next() % 2 ? IPC_PRIVATE : FUZZ_KEY(next() % 4), pick(1 + (long)(next() % 8)), IPC_CREAT | 0600); break;
    case 5: {
        struct sembuf *b = (struct sembuf *)scratch;
        int n = 1 + (int)(next() % 4);
        for (int i = 0; i < n; i++) {
            b[i].sem_num = (unsigned short)(next() % 9);
            b[i].sem_op = (short)((long)(next() % 5) - 2);
            b[i].sem_flg = (short)some(IPC_NOWAIT | SEM_UNDO);
        }
        ts->tv_sec = 0;
        ts->tv_nsec = (long)(next() % 2000000);
        syscall(SYS_semtimedop, pick(sem), pick((long)b), pick(n), next() % 2 ? (long)ts : 0);
        break;
    }
    case 6: syscall(SYS_semctl, pick(sem), (long)(next() % 9), pick((long)(next() % 21)), pick((long)scratch)); break;
    case 7: shm = shmget(next() % 2 ? IPC_PRIVATE : FUZZ_KEY(next() % 4), pick(1 + (long)(next() % 65536)), IPC_CREAT | 0600); break;
    case 8: {
        long r = syscall(SYS_shmat, pick(shm), next() % 4 ? 0 : arg(), some(SHM_RDONLY | SHM_RND | SHM_REMAP | SHM_EXEC));
        if (r != -1) {
            attached = r;
            if (next() % 2)
                memset((void *)r, 1, 16);
        }
        break;
    }
    case 9: syscall(SYS_shmdt, pick(attached)); break;
    case 10: syscall(SYS_shmctl, pick(shm), pick((long)(next() % 16)), pick((long)scratch)); break;
    case 11:
        words[1] = (long)(next() % 12);
        words[2] = (long)(next() % 100);
        mq = (int)syscall(SYS_mq_open, pick((long)mq_names[next() % 3]), O_RDWR | O_CREAT | some(O_NONBLOCK | O_EXCL),
                          0600, next() % 2 ? (long)scratch : 0);
        break;
    case 12:
        ts->tv_sec = 0;
        ts->tv_nsec = 0;
        syscall(SYS_mq_timedsend, pick(mq), pick((long)scratch), pick((long)(next() % 128)), pick((long)(next() % 40)),
                next() % 2 ? (long)ts : 0);
        break;
    case 13:
        syscall(SYS_mq_timedreceive, pick(mq), pick((long)scratch), pick((long)(next() % 9000)), pick((long)scratch),
                next() % 2 ? (long)ts : 0);
        break;
    case 14: {
        struct sigevent *ev = (struct sigevent *)scratch;
        ev->sigev_notify = (int)(next() % 4);
        ev->sigev_signo = (int)(next() % 70);
        syscall(SYS_mq_notify, pick(mq), next() % 4 ? (long)ev : 0);
        break;
    }
    case 15: syscall(SYS_mq_getsetattr, pick(mq), pick((long)scratch), pick((long)(scratch + 128))); break;
    case 16: syscall(SYS_mq_unlink, pick((long)mq_names[next() % 3])); break;
    case 17: {
        static const int cmds[] = { F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW };
        if (lfd < 0)
            lfd = open("/tmp/fuzz/a", O_RDWR | O_CREAT, 0600);
        struct flock *fl = (struct flock *)scratch;
        fl->l_type = (short)(next() % 4);
        fl->l_whence = (short)(next() % 4);
        fl->l_start = (long)(next() % 64) - 8;
        fl->l_len = (long)(next() % 64) - 8;
        fl->l_pid = next() % 4 ? 0 : (int)next();
        syscall(SYS_fcntl, pick(lfd), cmds[next() % 6], pick((long)fl));
        break;
    }
    case 18: syscall(SYS_flock, pick(lfd), pick((long)(next() % 16))); break;
    case 19: syscall(SYS_fcntl, pick(lfd), next() % 2 ? F_SETLEASE : F_GETLEASE, (long)(next() % 4)); break;
    case 20: {
        static const int cmds[] = { F_SETOWN, F_GETOWN, F_SETSIG, F_GETSIG };
        long who[] = { 0, getpid(), -getpid(), (long)syscall(SYS_gettid) };
        int cmd = cmds[next() % 4];
        syscall(SYS_fcntl, pick(lfd), cmd, cmd == F_SETSIG ? (long)(next() % 70) : who[next() % 4]);
        break;
    }
    case 21:
        if (pfd[0] < 0 && pipe(pfd) != 0)
            break;
        syscall(SYS_fcntl, pfd[next() % 2], F_SETOWN, getpid());
        syscall(SYS_fcntl, pfd[next() % 2], F_SETFL, some(O_ASYNC | O_NONBLOCK));
        write(pfd[1], "x", 1);
        syscall(SYS_fcntl, pfd[0], F_SETPIPE_SZ, pick((long)(next() % 70000)));
        break;
    case 22: mfd = (int)syscall(SYS_memfd_create, pick((long)"fuzz"), some(0x1f)); break;
    default:
        syscall(SYS_fcntl, pick(mfd), F_ADD_SEALS, some(0x3f));
        syscall(SYS_fallocate, pick(mfd), some(0x13), pick((long)(next() % 20000)), pick((long)(next() % 20000)));
        syscall(SYS_ftruncate, pick(mfd), pick((long)(next() % 20000)));
        break;
    }
}

/* pidfds, process_vm_readv/writev, rseq and membarrier's RSEQ commands
 * with mostly valid arguments, aimed at the child itself only (the
 * signals it sends itself are ones whose default action is nothing). */
static void proc2_call(void)
{
    static int pidfd = -1;
    static struct {
        uint32_t cpu_id_start, cpu_id;
        uint64_t rseq_cs;
        uint32_t flags, node_id, mm_cid;
    } __attribute__((aligned(32))) areas[2];
    static const int harmless[] = { 0, SIGURG, SIGWINCH, SIGCHLD, SIGCONT };
    static const long lens[] = { 32, 64, 31, 0, 33 };
    long *iov = (long *)(scratch + 2048);
    switch (next() % 11) {
    case 0: pidfd = (int)syscall(SYS_pidfd_open, pick(getpid()), some(O_NONBLOCK | O_EXCL | 1)); break;
    case 1: syscall(SYS_pidfd_getfd, pick(pidfd), pick((long)(next() % 8)), some(3)); break;
    case 2:
        syscall(SYS_pidfd_send_signal, pick(pidfd), harmless[next() % 5], next() % 4 ? 0 : (long)scratch, some(15));
        break;
    case 3:
    case 4:
        /* Up to four vectors on each side, into the scratch page (some
         * running into its guard page). */
        for (int i = 0; i < 8; i++) {
            iov[2 * i] = next() % 8 ? (long)(scratch + next() % 2048) : arg();
            iov[2 * i + 1] = (long)(next() % 3000);
        }
        syscall(next() % 2 ? SYS_process_vm_readv : SYS_process_vm_writev, pick(getpid()), pick((long)iov),
                (long)(next() % 5), pick((long)(iov + 8)), (long)(next() % 5), some(1));
        break;
    case 5: {
        void *a = &areas[next() % 2];
        if (next() % 16 == 0)
            areas[next() % 2].rseq_cs = (uint64_t)(scratch + next() % 4096);
        syscall(SYS_rseq, pick((long)a), lens[next() % 5], some(3), next() % 4 ? 0x53053053 : (long)next());
        break;
    }
    case 6: syscall(SYS_membarrier, next() % 2 ? 256 : 128, some(1), (long)(next() % 6) - 1); break;
    case 7: syscall(SYS_waitid, 3, pick(pidfd), pick((long)scratch), some(0x100000f), 0); break;
    case 8: {
        /* futex_waitv: up to 130 entries of { val, uaddr, flags, reserved }
         * in the scratch page's upper half, mostly FUTEX_32 words there. */
        uint64_t *v = (uint64_t *)(scratch + 2048);
        unsigned n = (unsigned)(next() % 131);
        for (unsigned i = 0; i < n && i < 85; i++) {
            v[3 * i] = next() % 8 ? (uint64_t)(next() % 3) : (uint64_t)next();
            v[3 * i + 1] = next() % 8 ? (uint64_t)(scratch + 4 * (next() % 512)) : (uint64_t)arg();
            v[3 * i + 2] = (next() % 8 ? 2 | (uint64_t)some(128) : next() % 512) | (next() % 16 ? 0 : next() << 32);
        }
        struct timespec ts;
        int clk = next() % 2 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        clock_gettime(clk, &ts);
        ts.tv_nsec = (ts.tv_nsec + 1000000) % 1000000000L;
        syscall(SYS_futex_waitv, pick((long)v), n, some(1), next() % 4 ? (long)&ts : arg(),
                next() % 8 ? clk : (long)(next() % 12));
        break;
    }
    case 9: {
        /* Modes 0, ADJ_OFFSET_SS_READ, a bad ADJ_TICK, a lone adjtime bit. */
        static const unsigned modes[] = { 0, 0xa001, 0x4000, 0x8000 };
        unsigned m = modes[next() % 4];
        long *t = (long *)(scratch + 1024);
        *(unsigned *)t = m;
        t[11] = m == 0x4000 ? (long)(next() % 9000) : t[11];
        long where = next() % 4 ? (long)t : arg();
        if (next() % 2)
            syscall(SYS_adjtimex, where);
        else
            syscall(SYS_clock_adjtime, (long)(next() % 20) - 10, where);
        break;
    }
    default: {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        poll(&p, 1, 0);
        break;
    }
    }
}

/* Removes every System V object and the fuzz POSIX queues; returns how
 * many objects are left afterwards (0). */
static int ipc_cleanup(void)
{
    struct msqid_ds mds;
    struct msginfo mi;
    int max = msgctl(0, IPC_INFO, (struct msqid_ds *)&mi);
    for (int i = 0; i <= max; i++) {
        int id = msgctl(i, 13 /* MSG_STAT_ANY */, &mds);
        if (id >= 0)
            msgctl(id, IPC_RMID, NULL);
    }
    struct seminfo si;
    max = semctl(0, 0, IPC_INFO, &si);
    for (int i = 0; i <= max; i++) {
        struct semid_ds sds;
        int id = semctl(i, 0, 20 /* SEM_STAT_ANY */, &sds);
        if (id >= 0)
            semctl(id, 0, IPC_RMID);
    }
    struct shminfo shi;
    max = shmctl(0, IPC_INFO, (struct shmid_ds *)&shi);
    for (int i = 0; i <= max; i++) {
        struct shmid_ds shds;
        int id = shmctl(i, 15 /* SHM_STAT_ANY */, &shds);
        if (id >= 0)
            shmctl(id, IPC_RMID, NULL);
    }
    /* Queues with random names too: unlink whatever the mqueue file
     * system holds. */
    mkdir("/tmp/fuzz-mq", 0755);
    if (mount("none", "/tmp/fuzz-mq", "mqueue", 0, NULL) == 0) {
        DIR *d = opendir("/tmp/fuzz-mq");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                syscall(SYS_mq_unlink, e->d_name);
        }
        if (d)
            closedir(d);
        umount("/tmp/fuzz-mq");
    }
    rmdir("/tmp/fuzz-mq");
    struct shm_info shinfo;
    msgctl(0, MSG_INFO, (struct msqid_ds *)&mi);
    semctl(0, 0, SEM_INFO, &si);
    shmctl(0, SHM_INFO, (struct shmid_ds *)&shinfo);
    return mi.msgpool + si.semusz + shinfo.used_ids;
}

/* A socket call with arguments that often get past the first checks:
 * AF_UNIX, real socket descriptors, msghdrs in the scratch page whose
 * control messages pass random descriptors (so sockets travel inside
 * sockets), abstract names; a third on AF_INET/AF_INET6 sockets with
 * loopback addresses on a few ports and options at every IP level. */
static void socket_call(void)
{
    static const long nrs[] = { SYS_socket, SYS_socketpair, SYS_bind, SYS_connect, SYS_listen, SYS_accept4,
                                SYS_sendmsg, SYS_recvmsg, SYS_sendto, SYS_recvfrom, SYS_shutdown,
                                SYS_setsockopt, SYS_getsockopt, SYS_sendmmsg, SYS_recvmmsg, SYS_getsockname,
                                SYS_getpeername, SYS_read, SYS_write, SYS_close };
    long *w = (long *)scratch;
    /* msghdr at scratch: name, iov, control in the same page. */
    w[0] = next() % 2 ? (long)(scratch + 512) : 0;
    w[1] = (long)(next() % 20);
    w[2] = (long)(scratch + 256);
    w[3] = (long)(next() % 3);
    w[4] = next() % 4 ? (long)(scratch + 1024) : arg();
    w[5] = (long)(next() % 64);
    long *iov = (long *)(scratch + 256);
    iov[0] = (long)(scratch + 2048);
    iov[1] = (long)(next() % 600);
    iov[2] = (long)(scratch + 3000);
    iov[3] = (long)(next() % 1200);
    int *cm = (int *)(scratch + 1024);
    cm[0] = 16 + 4 * (int)(next() % 8);
    cm[1] = 0;
    cm[2] = 1;                      /* SOL_SOCKET */
    cm[3] = 1 + (int)(next() % 2);  /* SCM_RIGHTS or SCM_CREDENTIALS */
    for (int j = 4; j < 12; j++)
        cm[j] = (int)(next() % 12);
    short *sa = (short *)(scratch + 512);
    /* A third of the calls on Internet sockets: loopback addresses and a
     * few ports, so binds collide, connects find listeners, and data
     * moves; the rest on AF_UNIX names. */
    int inet = next() % 3 == 0;
    long family = 1;
    if (inet) {
        family = next() % 2 ? 2 : 10; /* AF_INET, AF_INET6 */
        unsigned short port = (unsigned short)(40000 + next() % 6);
        memset(scratch + 512, 0, 28);
        sa[0] = (short)(next() % 8 ? family : (long)(next() % 12));
        scratch[514] = (char)(port >> 8);
        scratch[515] = (char)port;
        if (sa[0] == 2 && next() % 4) {
            scratch[516] = 127;
            scratch[519] = 1;
        } else if (sa[0] == 10 && next() % 4) {
            scratch[8 + 512 + 15] = 1; /* ::1 */
        }
    } else {
        sa[0] = 1; /* AF_UNIX */
        scratch[514] = 0;
        scratch[515] = (char)('a' + next() % 4);
    }
    long nr = nrs[next() % (sizeof nrs / sizeof nrs[0])];
    long fd = (long)(3 + next() % 10);
    long a1 = next() % 2 ? (long)scratch : arg();
    long type = (long)(next() % 6) | (next() % 2 ? SOCK_NONBLOCK : 0);
    switch (nr) {
    case SYS_socket: {
        /* Every family and a protocol that family carries: ICMP and
         * ICMPv6 (ping and raw sockets), IPPROTO_RAW, netlink's route. */
        static const long fams[] = { 1, 2, 10, 16, 17 };
        static const long protos[] = { 0, 1, 58, 6, 17, 255, 0x300 };
        long fam = next() % 8 ? family : arg();
        long proto = next() % 8 ? 0 : arg();
        if (next() % 2) {
            fam = fams[next() % 5];
            proto = protos[next() % 7];
        }
        syscall(nr, fam, type, proto);
        break;
    }
    case SYS_setsockopt: case SYS_getsockopt: {
        /* SOL_SOCKET, IP, TCP, UDP, IPv6 and junk levels, small names,
         * an int or a timeval or a short value. */
        static const long levels[] = { 1, 0, 6, 17, 41, 255, 58, 263 };
        long level = levels[next() % 8];
        long *val = (long *)(scratch + 3500);
        val[0] = (long)(next() % 4) - 1;
        val[1] = (long)(next() % 2000000);
        int *len = (int *)(scratch + 3600);
        *len = (int)(next() % 20) - 2;
        if (nr == SYS_setsockopt)
            syscall(nr, fd, level, (long)(next() % 70), next() % 8 ? (long)val : arg(), (long)(next() % 20));
        else
            syscall(nr, fd, level, (long)(next() % 70), next() % 8 ? (long)val : arg(), next() % 8 ? (long)len : arg());
        break;
    }
    case SYS_socketpair: syscall(nr, 1, type, 0, next() % 8 ? (long)(scratch + 4000) : arg()); break;
    case SYS_bind: case SYS_connect: syscall(nr, fd, scratch + 512, inet ? (long)(next() % 32) : (long)(next() % 8)); break;
    case SYS_sendto: case SYS_recvfrom:
        syscall(nr, fd, scratch + 2048, (long)(next() % 1024), (long)(next() % 2 ? MSG_DONTWAIT : arg()),
                next() % 2 ? (long)(scratch + 512) : 0, inet ? (long)(next() % 32) : (long)(next() % 8));
        break;
    case SYS_sendmmsg: case SYS_recvmmsg: syscall(nr, fd, scratch, (long)(next() % 3), MSG_DONTWAIT, 0); break;
    default: syscall(nr, fd, a1, arg() | (next() % 2 ? MSG_DONTWAIT : 0), arg(), arg()); break;
    }
}

/* Event-file descriptors this child made, for calls that use them. */
static int evfds[16];
static int nev;

static int pick_ev(void)
{
    return nev ? evfds[next() % nev] : (int)(next() % 8);
}

static int any_fd(void)
{
    return next() % 4 ? pick_ev() : (int)(next() % 12);
}

static void keep(int fd)
{
    if (fd < 0)
        return;
    if (nev < 16) {
        evfds[nev++] = fd;
    } else {
        int i = (int)(next() % 16);
        close(evfds[i]);
        evfds[i] = fd;
    }
}

static unsigned epoll_bits(void)
{
    static const unsigned bits[] = { EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDHUP, EPOLLET, EPOLLONESHOT,
                                     EPOLLEXCLUSIVE, EPOLLWAKEUP, EPOLLERR, EPOLLHUP, 1u << 20 };
    unsigned m = 0;
    for (int i = 0, n = (int)(next() % 4); i < n; i++)
        m |= bits[next() % (sizeof bits / sizeof bits[0])];
    return m;
}

/* One call on event files, arguments mostly valid. */
static void event_call(void)
{
    static const int clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_REALTIME_ALARM, 3, -1 };
    static const char *names[] = { "/tmp/fuzz/n1", "/tmp/fuzz/n2", "/tmp/fuzz/d/n3" };
    int nonblock = next() % 4 ? O_NONBLOCK : 0;
    uint64_t value = next() % 3 ? next() % 4 : next();
    switch (next() % 16) {
    case 0: keep(epoll_create1(next() % 4 ? 0 : EPOLL_CLOEXEC)); break;
    case 1: keep(eventfd((unsigned)(next() % 3), nonblock | (next() % 3 ? 0 : EFD_SEMAPHORE))); break;
    case 2: keep(timerfd_create(clocks[next() % 6], nonblock)); break;
    case 3: {
        uint64_t mask = next();
        keep((int)syscall(SYS_signalfd4, next() % 3 ? -1 : pick_ev(), &mask, 8, nonblock));
        break;
    }
    case 4: {
        int fd = inotify_init1(nonblock);
        if (fd >= 0 && next() % 4 == 0) {
            fcntl(fd, F_SETOWN, getpid());
            fcntl(fd, F_SETSIG, SIGUSR1);
            fcntl(fd, F_SETFL, nonblock | O_ASYNC);
        }
        keep(fd);
        break;
    }
    case 5: case 6: case 7: {
        struct epoll_event ev = { .events = epoll_bits(), .data.u64 = next() };
        epoll_ctl(pick_ev(), (int)(next() % 4), any_fd(), next() % 8 ? &ev : (void *)arg());
        break;
    }
    case 8: {
        struct timespec ts = { 0, (long)(next() % 3000000) };
        uint64_t mask = next();
        int max = next() % 8 ? (int)(next() % 8) + 1 : (int)arg();
        void *buf = next() % 8 ? (void *)scratch : (void *)arg();
        switch (next() % 3) {
        case 0: epoll_wait(pick_ev(), buf, max, (int)(next() % 3)); break;
        case 1: syscall(SYS_epoll_pwait, pick_ev(), buf, max, (int)(next() % 3), &mask, 8); break;
        default: syscall(SYS_epoll_pwait2, pick_ev(), buf, max, &ts, next() % 2 ? &mask : NULL, 8); break;
        }
        break;
    }
    case 9: {
        int fd = pick_ev();
        fcntl(fd, F_SETFL, O_NONBLOCK);
        write(fd, &value, next() % 8 ? 8 : next() % 16);
        break;
    }
    case 10: {
        int fd = pick_ev();
        fcntl(fd, F_SETFL, O_NONBLOCK);
        read(fd, scratch, next() % 4 ? 512 : next() % 160);
        break;
    }
    case 11: {
        struct itimerspec its = { { 0, (long)(next() % 2000000) }, { 0, (long)(next() % 3000000) } };
        if (next() % 4 == 0)
            its.it_value.tv_sec = (long)arg();
        int flags = (int)(next() % 4);
        if (next() % 2)
            timerfd_settime(pick_ev(), flags, &its, next() % 2 ? &its : NULL);
        else
            timerfd_gettime(pick_ev(), next() % 8 ? &its : (void *)arg());
        break;
    }
    case 12:
        if (next() % 3)
            inotify_add_watch(pick_ev(), next() % 2 ? "/tmp/fuzz" : paths[next() % NPATHS],
                              (uint32_t)next() & (IN_ALL_EVENTS | IN_ONESHOT | IN_MASK_ADD | IN_ONLYDIR));
        else
            inotify_rm_watch(pick_ev(), (int)(next() % 4));
        break;
    case 13:
        if (nev && next() % 2) {
            int i = (int)(next() % nev);
            close(evfds[i]);
            evfds[i] = evfds[--nev];
        } else {
            keep(dup(pick_ev()));
        }
        break;
    case 14: {
        /* Directory traffic for the watches. */
        const char *a = names[next() % 3], *b = names[next() % 3];
        switch (next() % 5) {
        case 0: close(open(a, O_CREAT | O_WRONLY | O_TRUNC, 0644)); break;
        case 1: rename(a, b); break;
        case 2: unlink(a); break;
        case 3: chmod(a, 0600); break;
        default: mkdir("/tmp/fuzz/d", 0755); break;
        }
        break;
    }
    default: {
        struct pollfd pfd[4];
        for (int i = 0; i < 4; i++)
            pfd[i] = (struct pollfd){ pick_ev(), (short)(POLLIN | POLLOUT), 0 };
        poll(pfd, 4, 0);
        if (next() % 4 == 0)
            raise(next() % 2 ? SIGUSR1 : SIGCHLD);
        break;
    }
    }
}

static void child(uint64_t seed, int spin_fifo)
{
    rng = seed;
    /* Nothing that reaches the console: a terminal ioctl could change it. */
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
        dup2(null, fd);
    if (chdir("/tmp/fuzz") != 0)
        _exit(100);
    /* Every other child runs as a user of its own (not the two that end
     * spinning as SCHED_FIFO, which needs root). */
    if (seed % 2 && !spin_fifo && setresuid(1000 + (uid_t)(seed % 7), 1000 + (uid_t)(seed % 7), 1000 + (uid_t)(seed % 7)) != 0)
        _exit(101);
    /* Sockets at the low descriptors the calls aim at. */
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv);
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
    /* ICMP sockets (the raw ones only for the root children). */
    socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_ICMP);
    socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_ICMPV6);
    socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_ICMP);
    socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK, IPPROTO_ICMPV6);
    /* SIGUSR1 is raised for the signalfds: blocked, so it stays pending
     * unless a random call unblocks it. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    for (int i = 0; i < CALLS; i++) {
        if (next() % 4 == 0 && !spin_fifo) {
            cred_call();
            continue;
        }
        if (next() % 4 == 0) {
            event_call();
            continue;
        }
        long nr = (long)(next() % 450);
        if (excluded(nr))
            continue;
        long a[6];
        for (int j = 0; j < 6; j++)
            a[j] = arg();
        for (int j = 0; j < 4096; j++)
            scratch[j] = (char)next();
        syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        if (next() % 32 == 0)
            sched_self();
        if (next() % 4 == 0)
            ipc_call();
        if (next() % 8 == 0)
            proc2_call();
        if (next() % 4 == 0)
            socket_call();
        if (next() % 8 == 0)
            newer_call();
    }
    if (spin_fifo) {
        /* Spin as SCHED_FIFO until the parent, a normal thread, kills us. */
        struct sched_param p = { .sched_priority = 50 };
        syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p);
        for (;;)
            ;
    }
    _exit(0);
}

static int run_one(uint64_t seed, int spin_fifo, int *timed_out)
{
    cpu_set_t old, one;
    if (spin_fifo) {
        /* Parent and spinning child on one CPU. */
        sched_getaffinity(0, sizeof old, &old);
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        sched_setaffinity(0, sizeof one, &one);
    }
    pid_t pid = fork();
    if (pid == 0)
        child(seed, spin_fifo);
    if (spin_fifo)
        sched_setaffinity(0, sizeof old, &old);
    if (pid < 0)
        return -1;
    int st = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) > 500000000L) {
            *timed_out = 1;
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return st;
        }
        usleep(2000);
    }
}

static void cleanup(void)
{
    static const char *gone[] = { "/tmp/fuzz/d/e", "/tmp/fuzz/d/n3", "/tmp/fuzz/n1", "/tmp/fuzz/n2",
                                  "/tmp/fuzz/a", "/tmp/fuzz/b", "/tmp/fuzz/d" };
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        unlink(gone[i]);
        rmdir(gone[i]);
    }
    rmdir("/tmp/fuzz");
}

int main(void)
{
    t_init("fuzz");
    struct utsname u;
    if (uname(&u) != 0 || strstr(u.version, "Kiln") == NULL) {
        printf("not Kiln: skipped\n");
        return 0;
    }
    /* Scratch memory followed by an unmapped guard page. */
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(m != MAP_FAILED && munmap(m + 4096, 4096) == 0, "scratch page with a guard page after it");
    scratch = m;
    cleanup();
    ipc_cleanup();
    /* Sticky and world-writable, so the unprivileged children can work there. */
    check(mkdir("/tmp/fuzz", 0755) == 0 && chmod("/tmp/fuzz", 01777) == 0, "mkdir /tmp/fuzz");
    /* Ping sockets for every group while the children run. */
    int rf = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY);
    check(rf >= 0 && write(rf, "0 2147483647", 12) == 12, "ping sockets allowed for every group");
    close(rf);
    int exited = 0, signaled = 0, timeouts = 0, lost = 0;
    for (int c = 0; c < CHILDREN; c++) {
        int timed_out = 0;
        int st = run_one(SEED + (uint64_t)c * 7919, c == 5 || c == 30, &timed_out);
        if (st == -1)
            lost++;
        else if (timed_out)
            timeouts++;
        else if (WIFSIGNALED(st))
            signaled++;
        else
            exited++;
    }
    printf("fuzz: %d children: %d exited, %d killed by a signal, %d blocked and killed, %d not started\n", CHILDREN,
           exited, signaled, timeouts, lost);
    check(lost == 0, "every child started");
    check(exited + signaled + timeouts == CHILDREN, "every child ended");
    rf = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY);
    check(rf >= 0 && write(rf, "1 0", 3) == 3, "ping sockets off again");
    close(rf);
    /* The machine still works. */
    int fd = open("/tmp/fuzz-after", O_CREAT | O_RDWR | O_TRUNC, 0600);
    check(fd >= 0 && write(fd, "ok", 2) == 2 && pread(fd, m, 2, 0) == 2 && memcmp(m, "ok", 2) == 0,
          "a file can be written and read back afterwards");
    close(fd);
    unlink("/tmp/fuzz-after");
    pid_t p = fork();
    if (p == 0)
        _exit(7);
    int st = 0;
    check(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7, "fork and wait still work");
    check(ipc_cleanup() == 0, "no System V IPC object is left");
    cleanup();
    return t_done();
}
