/*
 * efault: syscalls given bad pointers return EFAULT and the process lives.
 * Raw syscall() is used throughout: libc wrappers (or the vDSO) would
 * dereference the pointers in user space and crash instead.
 *
 * Bad pointers: (void *)1, a kernel-half address, a PROT_NONE page, and,
 * for syscalls that write, a read-only page.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>

static void *none_page; /* PROT_NONE */
static void *ro_page;   /* PROT_READ, zero-filled */

struct badp {
    void *p;
    const char *name;
};

static struct badp bads[3];

#define FOR_BAD(i) for (int i = 0; i < 3; i++)

static void chk(long r, int e, const char *what, const char *name)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s [%s]", what, name);
    expect_err_impl(r, e, EFAULT, msg);
}

#define EF(what, call)                                         \
    FOR_BAD(i)                                                 \
    {                                                          \
        void *bad = bads[i].p;                                 \
        errno = 0;                                             \
        long _r = (long)(call);                                \
        chk(_r, errno, what, bads[i].name);                    \
    }

static void test_write_side(const char *self)
{
    /* Syscalls that read user memory. */
    EF("write(1, bad, 10)", syscall(SYS_write, 1, bad, 10));
    EF("nanosleep(bad, NULL)", syscall(SYS_nanosleep, bad, NULL));
    EF("clock_nanosleep(MONOTONIC, 0, bad)", syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, bad, NULL));
    EF("rt_sigaction(SIGUSR1, bad, NULL)", syscall(SYS_rt_sigaction, SIGUSR1, bad, NULL, 8));
    EF("rt_sigprocmask(SIG_BLOCK, bad, NULL)", syscall(SYS_rt_sigprocmask, SIG_BLOCK, bad, NULL, 8));
    EF("setitimer(ITIMER_REAL, bad, NULL)", syscall(SYS_setitimer, ITIMER_REAL, bad, NULL));
    EF("setrlimit(RLIMIT_NOFILE, bad)", syscall(SYS_setrlimit, RLIMIT_NOFILE, bad));
    EF("sigaltstack(bad, NULL)", syscall(SYS_sigaltstack, bad, NULL));
    EF("execve(bad, argv, envp)", syscall(SYS_execve, bad, (char *[]){ NULL }, (char *[]){ NULL }));
    EF("open(bad, O_RDONLY)", syscall(SYS_open, bad, O_RDONLY));
    EF("poll(bad, 1, 0)", syscall(SYS_poll, bad, 1, 0));
    /* futex checks alignment first: (void*)1 would be EINVAL, so align down. */
    EF("futex(bad & ~3, FUTEX_WAIT)", syscall(SYS_futex, (void *)((uintptr_t)bad & ~3UL), 0, 0, NULL, NULL, 0));
    EF("rt_sigsuspend(bad)", syscall(SYS_rt_sigsuspend, bad, 8));
    EF("sched_setaffinity(0, 8, bad)", syscall(SYS_sched_setaffinity, 0, 8, bad));
    EF("arch_prctl(ARCH_GET_FS, bad)", syscall(SYS_arch_prctl, 0x1003, bad));

    /* Syscalls that write user memory. */
    int fd = open(self, O_RDONLY);
    check(fd >= 0, "open own binary");
    EF("read(file, bad, 16)", syscall(SYS_read, fd, bad, 16));
    EF("pread64(file, bad, 16, 0)", syscall(SYS_pread64, fd, bad, 16, 0));
    EF("clock_gettime(MONOTONIC, bad)", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, bad));
    EF("clock_getres(MONOTONIC, bad)", syscall(SYS_clock_getres, CLOCK_MONOTONIC, bad));
    EF("gettimeofday(bad, NULL)", syscall(SYS_gettimeofday, bad, NULL));
    EF("uname(bad)", syscall(SYS_uname, bad));
    EF("getrandom(bad, 16, 0)", syscall(SYS_getrandom, bad, 16, 0));
    EF("rt_sigaction(SIGUSR1, NULL, bad)", syscall(SYS_rt_sigaction, SIGUSR1, NULL, bad, 8));
    EF("rt_sigprocmask(SIG_BLOCK, NULL, bad)", syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, bad, 8));
    EF("rt_sigpending(bad)", syscall(SYS_rt_sigpending, bad, 8));
    EF("getitimer(ITIMER_REAL, bad)", syscall(SYS_getitimer, ITIMER_REAL, bad));
    EF("getrlimit(RLIMIT_NOFILE, bad)", syscall(SYS_getrlimit, RLIMIT_NOFILE, bad));
    EF("prlimit64(0, NOFILE, NULL, bad)", syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, bad));
    EF("getrusage(RUSAGE_SELF, bad)", syscall(SYS_getrusage, RUSAGE_SELF, bad));
    EF("sysinfo(bad)", syscall(SYS_sysinfo, bad));
    EF("times(bad)", syscall(SYS_times, bad));
    EF("getresuid(bad, bad, bad)", syscall(SYS_getresuid, bad, bad, bad));
    EF("sigaltstack(NULL, bad)", syscall(SYS_sigaltstack, NULL, bad));
    EF("sched_getaffinity(0, 128, bad)", syscall(SYS_sched_getaffinity, 0, 128, bad));
    EF("getcwd(bad, 64)", syscall(SYS_getcwd, bad, 64));
    EF("time(bad)", syscall(SYS_time, bad));
    close(fd);

    /* A nanosleep whose remaining-time pointer is bad is only written on
     * interruption; with a valid request and no signal it succeeds. */
    struct timespec ts = { 0, 1000 };
    check(syscall(SYS_nanosleep, &ts, KERNEL_PTR) == 0, "nanosleep(ok, bad rem) completes without a signal");
}

static void test_wait4(void)
{
    /* Linux reaps the child even though storing the status faults. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(3);
    sleep_ms(20); /* let it become a zombie */
    errno = 0;
    long r = syscall(SYS_wait4, pid, BAD_PTR, 0, NULL);
    expect_err_impl(r, errno, EFAULT, "wait4(zombie, bad status)");
    int st;
    EXPECT_ERR(ECHILD, "the zombie was reaped anyway", waitpid(pid, &st, WNOHANG));

    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(3);
    sleep_ms(20);
    errno = 0;
    r = syscall(SYS_waitid, P_PID, pid, KERNEL_PTR, WEXITED, NULL);
    expect_err_impl(r, errno, EFAULT, "waitid(zombie, bad siginfo)");
    waitpid(pid, &st, WNOHANG);
}

static void test_partial(void)
{
    /* A buffer starting in a valid page and running into PROT_NONE. */
    char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(two + 4096, 4096, PROT_NONE);
    struct timespec *ts = (struct timespec *)(two + 4096 - 8); /* tv_sec ok, tv_nsec bad */
    errno = 0;
    long r = syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts);
    expect_err_impl(r, errno, EFAULT, "clock_gettime(struct straddling into PROT_NONE)");
    errno = 0;
    r = syscall(SYS_getrandom, two + 4000, 200, 0);
    check(r == 96 || (r == -1 && errno == EFAULT), "getrandom straddling into PROT_NONE: partial or EFAULT");
    munmap(two, 8192);
}

int main(int argc, char **argv)
{
    (void)argc;
    t_init("efault");
    none_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ro_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bads[0] = (struct badp){ BAD_PTR, "(void*)1" };
    bads[1] = (struct badp){ KERNEL_PTR, "kernel address" };
    bads[2] = (struct badp){ none_page, "PROT_NONE page" };
    test_write_side(argv[0]);

    /* Read-only memory: fine as input, EFAULT as output. */
    struct timespec *rots = ro_page;
    check(syscall(SYS_nanosleep, rots, NULL) == 0, "nanosleep(read-only page holding 0 s) succeeds");
    EXPECT_ERR(EFAULT, "clock_gettime(read-only page)", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ro_page));
    EXPECT_ERR(EFAULT, "uname(read-only page)", syscall(SYS_uname, ro_page));
    EXPECT_ERR(EFAULT, "getrandom(read-only page)", syscall(SYS_getrandom, ro_page, 16, 0));
    EXPECT_ERR(EFAULT, "rt_sigprocmask(old -> read-only page)",
               syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, ro_page, 8));
    int fd = open(argv[0], O_RDONLY);
    EXPECT_ERR(EFAULT, "read(file -> read-only page)", syscall(SYS_read, fd, ro_page, 16));
    close(fd);
    check(((volatile char *)ro_page)[0] == 0, "read-only page unchanged");

    test_wait4();
    test_partial();
    check(1, "process survived all bad pointers");
    return t_done();
}
