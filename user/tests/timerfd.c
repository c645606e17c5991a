/*
 * timerfd: timerfd_create clocks and flags, timerfd_settime relative and
 * absolute (TFD_TIMER_ABSTIME) on CLOCK_MONOTONIC, CLOCK_REALTIME and
 * CLOCK_BOOTTIME, one-shot and periodic expiration counts, the old value,
 * timerfd_gettime while armed, after expiry and disarmed, reads (8-byte
 * rule, EAGAIN, blocking, reset), poll/epoll readiness, TFD_IOC_SET_TICKS
 * and the argument errors; the alarm clocks need CAP_WAKE_ALARM (EPERM
 * for a user without it, EINVAL still first). Times are checked with
 * margins, never exactly.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#define MS 1000000L
#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW(0x54, 0, uint64_t)
#endif

static struct itimerspec its(long value_ns, long interval_ns)
{
    struct itimerspec t = { { interval_ns / 1000000000, interval_ns % 1000000000 },
                            { value_ns / 1000000000, value_ns % 1000000000 } };
    return t;
}

static long ns_of(struct timespec t)
{
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static uint64_t rd(int fd, int *err)
{
    uint64_t v = 0;
    errno = 0;
    ssize_t n = read(fd, &v, 8);
    *err = n == 8 ? 0 : errno;
    return v;
}

static int readable(int fd)
{
    struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
    poll(&p, 1, 0);
    return p.revents;
}

static void test_create(void)
{
    static const struct { int id; const char *name; } clocks[] = {
        { CLOCK_REALTIME, "CLOCK_REALTIME" },
        { CLOCK_MONOTONIC, "CLOCK_MONOTONIC" },
        { CLOCK_PROCESS_CPUTIME_ID, "CLOCK_PROCESS_CPUTIME_ID" },
        { CLOCK_THREAD_CPUTIME_ID, "CLOCK_THREAD_CPUTIME_ID" },
        { CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW" },
        { CLOCK_REALTIME_COARSE, "CLOCK_REALTIME_COARSE" },
        { CLOCK_MONOTONIC_COARSE, "CLOCK_MONOTONIC_COARSE" },
        { CLOCK_BOOTTIME, "CLOCK_BOOTTIME" },
        { CLOCK_REALTIME_ALARM, "CLOCK_REALTIME_ALARM" },
        { CLOCK_BOOTTIME_ALARM, "CLOCK_BOOTTIME_ALARM" },
        { CLOCK_TAI, "CLOCK_TAI" },
        { -1, "clock -1" },
    };
    for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        errno = 0;
        int fd = timerfd_create(clocks[i].id, 0);
        printf("timerfd_create(%s): %s\n", clocks[i].name, fd >= 0 ? "ok" : errname(errno));
        if (fd >= 0)
            close(fd);
    }
    EXPECT_ERR(EINVAL, "timerfd_create(flags 1)", timerfd_create(CLOCK_MONOTONIC, 1));
    EXPECT_ERR(EINVAL, "timerfd_create(flags O_RDWR)", timerfd_create(CLOCK_MONOTONIC, O_RDWR));
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    check(fcntl(fd, F_GETFD) == FD_CLOEXEC, "TFD_CLOEXEC");
    check(fcntl(fd, F_GETFL) == (O_RDWR | O_NONBLOCK), "TFD_NONBLOCK, O_RDWR");
    struct stat st;
    fstat(fd, &st);
    printf("fstat: mode %o\n", st.st_mode);
    char link[64] = { 0 }, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    readlink(path, link, sizeof link - 1);
    printf("/proc/self/fd link: %s\n", link);
    char b[8];
    EXPECT_ERR(EINVAL, "write(timerfd)", write(fd, b, 8));
    check(lseek(fd, 9, SEEK_SET) == 0, "lseek stays at 0");
    close(fd);

    /* Without CAP_WAKE_ALARM (a user's credentials), no alarm timers. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_checks = t_failed = 0;
        if (setresuid(54321, 54321, 54321) != 0)
            _exit(1);
        EXPECT_ERR(EPERM, "as a user: timerfd_create(CLOCK_REALTIME_ALARM)", timerfd_create(CLOCK_REALTIME_ALARM, 0));
        EXPECT_ERR(EPERM, "as a user: timerfd_create(CLOCK_BOOTTIME_ALARM)", timerfd_create(CLOCK_BOOTTIME_ALARM, 0));
        EXPECT_ERR(EINVAL, "as a user: timerfd_create(CLOCK_BOOTTIME_ALARM, flags 1): EINVAL first",
                   timerfd_create(CLOCK_BOOTTIME_ALARM, 1));
        int ok = timerfd_create(CLOCK_BOOTTIME, 0);
        check(ok >= 0, "as a user: timerfd_create(CLOCK_BOOTTIME)");
        _exit(t_failed ? 1 : 0);
    }
    int status;
    wait_for(pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the user's checks passed");
}

static void test_errors(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct itimerspec t = its(10 * MS, 0), old;
    EXPECT_ERR(EINVAL, "settime(flags 4)", timerfd_settime(fd, 4, &t, NULL));
    EXPECT_ERR(EFAULT, "settime(bad new)", timerfd_settime(fd, 0, BAD_PTR, NULL));
    EXPECT_ERR(EFAULT, "settime(bad fd, bad new): new first", timerfd_settime(99, 0, BAD_PTR, NULL));
    EXPECT_ERR(EINVAL, "settime(bad fd, flags 4): flags before the fd", timerfd_settime(99, 4, &t, NULL));
    EXPECT_ERR(EBADF, "settime(bad fd)", timerfd_settime(99, 0, &t, NULL));
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "settime(a pipe)", timerfd_settime(p[0], 0, &t, NULL));
    EXPECT_ERR(EINVAL, "gettime(a pipe)", timerfd_gettime(p[0], &old));
    EXPECT_ERR(EBADF, "gettime(bad fd)", timerfd_gettime(99, &old));
    EXPECT_ERR(EFAULT, "gettime(bad pointer)", timerfd_gettime(fd, BAD_PTR));
    struct itimerspec bad = its(0, 0);
    bad.it_value.tv_nsec = 1000000000;
    EXPECT_ERR(EINVAL, "settime(value tv_nsec 1e9)", timerfd_settime(fd, 0, &bad, NULL));
    bad = its(10 * MS, 0);
    bad.it_interval.tv_nsec = -1;
    EXPECT_ERR(EINVAL, "settime(interval tv_nsec -1)", timerfd_settime(fd, 0, &bad, NULL));
    bad = its(0, 0);
    bad.it_value.tv_sec = -1;
    EXPECT_ERR(EINVAL, "settime(value -1 s)", timerfd_settime(fd, 0, &bad, NULL));
    t = its(5000 * MS, 0);
    EXPECT_ERR(EFAULT, "settime(bad old pointer)", timerfd_settime(fd, 0, &t, BAD_PTR));
    timerfd_gettime(fd, &old);
    check(old.it_value.tv_sec >= 4, "... the new setting was applied anyway");
    int e;
    char b[8];
    EXPECT_ERR(EINVAL, "read(7 bytes)", read(fd, b, 7));
    rd(fd, &e);
    printf("read before expiry: %s\n", errname(e));
    uint64_t ticks = 3;
    EXPECT_OK("ioctl(TFD_IOC_SET_TICKS 3)", ioctl(fd, TFD_IOC_SET_TICKS, &ticks));
    printf("after TFD_IOC_SET_TICKS: readable 0x%x\n", readable(fd));
    printf("... and reads %llu\n", (unsigned long long)rd(fd, &e));
    ticks = 0;
    EXPECT_ERR(EINVAL, "ioctl(TFD_IOC_SET_TICKS 0)", ioctl(fd, TFD_IOC_SET_TICKS, &ticks));
    EXPECT_ERR(EFAULT, "ioctl(TFD_IOC_SET_TICKS bad pointer)", ioctl(fd, TFD_IOC_SET_TICKS, BAD_PTR));
    EXPECT_ERR(ENOTTY, "ioctl(FIONREAD)", ioctl(fd, FIONREAD, &e));
    close(p[0]);
    close(p[1]);
    close(fd);
}

static void test_oneshot(int clock, const char *name)
{
    int fd = timerfd_create(clock, TFD_NONBLOCK);
    struct itimerspec t = its(30 * MS, 0), cur;
    timerfd_gettime(fd, &cur);
    check(ns_of(cur.it_value) == 0 && ns_of(cur.it_interval) == 0, "%s: disarmed at first", name);
    check(timerfd_settime(fd, 0, &t, NULL) == 0, "%s: armed for 30 ms", name);
    timerfd_gettime(fd, &cur);
    long left = ns_of(cur.it_value);
    check(left > 0 && left <= 30 * MS, "%s: gettime shows the time left", name);
    check(readable(fd) == 0, "%s: not readable before expiry", name);
    struct pollfd p = { fd, POLLIN, 0 };
    int r = poll(&p, 1, 5000);
    check(r == 1 && p.revents == POLLIN, "%s: poll sees it expire", name);
    int e;
    uint64_t v = rd(fd, &e);
    check(e == 0 && v == 1, "%s: one expiration read", name);
    rd(fd, &e);
    check(e == EAGAIN, "%s: then EAGAIN", name);
    timerfd_gettime(fd, &cur);
    check(ns_of(cur.it_value) == 0, "%s: gettime 0 after a one-shot expiry", name);
    close(fd);
}

static void test_periodic(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec t = its(10 * MS, 10 * MS), old;
    timerfd_settime(fd, 0, &t, NULL);
    int e;
    uint64_t v = rd(fd, &e);
    check(e == 0 && v >= 1, "periodic: a blocking read returns once it expired");
    usleep(55000);
    v = rd(fd, &e);
    check(e == 0 && v >= 4 && v <= 20, "periodic: about 5 expirations counted over 55 ms, unread");
    struct itimerspec cur;
    timerfd_gettime(fd, &cur);
    check(ns_of(cur.it_interval) == 10 * MS, "periodic: gettime keeps the interval");
    check(ns_of(cur.it_value) > 0 && ns_of(cur.it_value) <= 10 * MS, "periodic: value within the period");
    t = its(0, 0);
    timerfd_settime(fd, 0, &t, &old);
    check(ns_of(old.it_interval) == 10 * MS && ns_of(old.it_value) <= 10 * MS, "settime returns the old setting");
    timerfd_gettime(fd, &cur);
    check(ns_of(cur.it_value) == 0 && ns_of(cur.it_interval) == 0, "disarmed by a zero value");
    close(fd);

    /* An interval with value 0 never starts. */
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t = its(0, 10 * MS);
    timerfd_settime(fd, 0, &t, NULL);
    usleep(30000);
    rd(fd, &e);
    check(e == EAGAIN, "value 0 with an interval stays disarmed");
    timerfd_gettime(fd, &cur);
    check(ns_of(cur.it_interval) == 10 * MS, "... but gettime reports the interval");

    /* Re-arming resets the count. */
    t = its(1 * MS, 0);
    timerfd_settime(fd, 0, &t, NULL);
    usleep(20000);
    t = its(5000 * MS, 0);
    timerfd_settime(fd, 0, &t, NULL);
    rd(fd, &e);
    check(e == EAGAIN, "re-arming discards unread expirations");
    close(fd);
}

static void test_absolute(void)
{
    static const struct { int id; const char *name; } clocks[] = {
        { CLOCK_MONOTONIC, "CLOCK_MONOTONIC" },
        { CLOCK_REALTIME, "CLOCK_REALTIME" },
        { CLOCK_BOOTTIME, "CLOCK_BOOTTIME" },
    };
    for (int i = 0; i < 3; i++) {
        int fd = timerfd_create(clocks[i].id, TFD_NONBLOCK);
        struct timespec now;
        clock_gettime(clocks[i].id, &now);
        long at = ns_of(now) + 30 * MS;
        struct itimerspec t = its(0, 0), cur;
        t.it_value.tv_sec = at / 1000000000;
        t.it_value.tv_nsec = at % 1000000000;
        check(timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL) == 0, "%s: absolute 30 ms ahead", clocks[i].name);
        timerfd_gettime(fd, &cur);
        check(ns_of(cur.it_value) > 0 && ns_of(cur.it_value) <= 30 * MS, "%s: gettime is relative", clocks[i].name);
        struct pollfd p = { fd, POLLIN, 0 };
        check(poll(&p, 1, 5000) == 1, "%s: expires", clocks[i].name);
        struct timespec after;
        clock_gettime(clocks[i].id, &after);
        check(ns_of(after) >= at, "%s: not before the absolute time", clocks[i].name);
        /* In the past: at once. */
        t.it_value.tv_sec = 1;
        t.it_value.tv_nsec = 0;
        timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL);
        check(poll(&p, 1, 5000) == 1, "%s: an absolute time in the past expires at once", clocks[i].name);
        int e;
        check(rd(fd, &e) == 1, "%s: once", clocks[i].name);
        /* Periodic from the past: the missed periods are counted. */
        clock_gettime(clocks[i].id, &now);
        at = ns_of(now) - 100 * MS;
        t = its(0, 20 * MS);
        t.it_value.tv_sec = at / 1000000000;
        t.it_value.tv_nsec = at % 1000000000;
        timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL);
        poll(&p, 1, 5000);
        uint64_t v = rd(fd, &e);
        check(v >= 5 && v <= 30, "%s: periodic from 100 ms ago counts the missed periods", clocks[i].name);
        close(fd);
    }
    /* CANCEL_ON_SET is accepted (the wall clock is not set here). */
    int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct itimerspec t = its(0, 0);
    t.it_value.tv_sec = now.tv_sec + 100;
    EXPECT_OK("settime(REALTIME, ABSTIME|CANCEL_ON_SET)",
              timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &t, NULL));
    EXPECT_OK("settime(REALTIME, CANCEL_ON_SET alone)", timerfd_settime(fd, TFD_TIMER_CANCEL_ON_SET, &t, NULL));
    close(fd);
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    EXPECT_OK("settime(MONOTONIC, ABSTIME|CANCEL_ON_SET)",
              timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &t, NULL));
    close(fd);
}

static void test_epoll_and_fork(void)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 5 }, out[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    struct itimerspec t = its(20 * MS, 20 * MS);
    timerfd_settime(fd, 0, &t, NULL);
    int n = epoll_wait(ep, out, 2, 5000);
    check(n == 1 && out[0].data.u64 == 5 && out[0].events == EPOLLIN, "epoll_wait wakes on expiry");
    usleep(70000);
    n = epoll_wait(ep, out, 2, 0);
    printf("ET epoll, periodic timer left unread for 3 periods: %d events\n", n);
    int e;
    uint64_t v = rd(fd, &e);
    check(v >= 3, "the unread periods are all counted at the read");
    n = epoll_wait(ep, out, 2, 5000);
    check(n == 1, "after the read the timer runs again and notifies");
    close(ep);
    /* The child shares the timer. */
    t = its(20 * MS, 0);
    timerfd_settime(fd, 0, &t, NULL);
    rd(fd, &e);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct pollfd p = { fd, POLLIN, 0 };
        poll(&p, 1, 5000);
        _exit(rd(fd, &e) == 1 ? 0 : 1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child reads the timer its parent armed");
    rd(fd, &e);
    check(e == EAGAIN, "the child's read took the expiration");
    close(fd);
}

int main(void)
{
    t_init("timerfd");
    test_create();
    test_errors();
    test_oneshot(CLOCK_MONOTONIC, "CLOCK_MONOTONIC");
    test_oneshot(CLOCK_REALTIME, "CLOCK_REALTIME");
    test_oneshot(CLOCK_BOOTTIME, "CLOCK_BOOTTIME");
    test_periodic();
    test_absolute();
    test_epoll_and_fork();
    return t_done();
}
