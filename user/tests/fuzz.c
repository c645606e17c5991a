/*
 * fuzz: random system calls with hostile arguments, from a fixed seed, in
 * child processes (Kiln only; it skips itself on the host). Every call
 * must end in a result or an errno, or the child in a signal; the kernel
 * stays up and works afterwards. The children stay away from what would
 * harm the rest of the machine: signals to other processes, reboot, mount,
 * clocks and names, fork and exec, and paths outside /tmp/fuzz and /proc.
 * A child that blocks (a read, a futex, a pause) is killed after 500 ms.
 * setpriority and the scheduling calls are made on the child itself only
 * (random nice values and policies, real-time ones included), and two
 * children end in a SCHED_FIFO busy loop on the parent's CPU: real-time
 * throttling (950 ms a second) must still let the parent run to kill them.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

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
    case SYS_execve: case SYS_execveat: case SYS_ptrace: case SYS_swapon: case SYS_swapoff:
    case SYS_syslog: case SYS_acct: case SYS_setpriority: case SYS_ioprio_set:
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

static void child(uint64_t seed, int spin_fifo)
{
    rng = seed;
    /* Nothing that reaches the console: a terminal ioctl could change it. */
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
        dup2(null, fd);
    if (chdir("/tmp/fuzz") != 0)
        _exit(100);
    for (int i = 0; i < CALLS; i++) {
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
    static const char *gone[] = { "/tmp/fuzz/d/e", "/tmp/fuzz/a", "/tmp/fuzz/b", "/tmp/fuzz/d" };
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
    check(mkdir("/tmp/fuzz", 0755) == 0, "mkdir /tmp/fuzz");
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
    cleanup();
    return t_done();
}
