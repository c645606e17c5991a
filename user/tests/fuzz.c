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
 * A quarter of the calls work on event files with mostly valid arguments
 * (epoll instances nested and watching each other's files, eventfds,
 * timerfds armed to fire, signalfds, inotify watches on /tmp/fuzz while
 * files come and go there), so the calls get past their argument checks.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
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
    case 4: keep(inotify_init1(nonblock)); break;
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
    /* SIGUSR1 is raised for the signalfds: blocked, so it stays pending
     * unless a random call unblocks it. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    for (int i = 0; i < CALLS; i++) {
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
