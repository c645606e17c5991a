/*
 * time: clocks, sleeps, interval timers, alarm, POSIX timers (one with a
 * 1 us period), CPU time.
 * All timing checks are tolerant (Kiln's tick is ~4 ms).
 */
#include "common.h"
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/times.h>

#define MS 1000000LL

static int64_t ts_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* Raw syscalls: bypass the vDSO, test the kernel's own implementation. */
static long raw_gettime(clockid_t clk, struct timespec *ts)
{
    return syscall(SYS_clock_gettime, clk, ts);
}

static void test_clocks(void)
{
    static const struct {
        clockid_t id;
        const char *name;
    } clocks[] = {
        { CLOCK_REALTIME, "CLOCK_REALTIME" },
        { CLOCK_MONOTONIC, "CLOCK_MONOTONIC" },
        { CLOCK_PROCESS_CPUTIME_ID, "CLOCK_PROCESS_CPUTIME_ID" },
        { CLOCK_THREAD_CPUTIME_ID, "CLOCK_THREAD_CPUTIME_ID" },
        { CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW" },
        { CLOCK_REALTIME_COARSE, "CLOCK_REALTIME_COARSE" },
        { CLOCK_MONOTONIC_COARSE, "CLOCK_MONOTONIC_COARSE" },
        { CLOCK_BOOTTIME, "CLOCK_BOOTTIME" },
    };
    for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        struct timespec ts = { -1, -1 }, raw = { -1, -1 }, res = { -1, -1 };
        int ok = clock_gettime(clocks[i].id, &ts) == 0 && ts.tv_sec >= 0 && ts.tv_nsec >= 0 &&
                 ts.tv_nsec < 1000000000L;
        check(ok, "clock_gettime(%s)", clocks[i].name);
        ok = raw_gettime(clocks[i].id, &raw) == 0 && raw.tv_nsec >= 0 && raw.tv_nsec < 1000000000L;
        check(ok, "syscall clock_gettime(%s)", clocks[i].name);
        ok = clock_getres(clocks[i].id, &res) == 0 && ts_ns(&res) > 0 && ts_ns(&res) <= 100 * MS;
        check(ok, "clock_getres(%s) in (0, 100 ms]", clocks[i].name);
    }

    /* Monotonic clocks never go backwards. */
    static const clockid_t mono[] = { CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME,
                                      CLOCK_MONOTONIC_RAW };
    for (unsigned c = 0; c < 4; c++) {
        struct timespec prev, cur;
        clock_gettime(mono[c], &prev);
        int ok = 1;
        for (int i = 0; i < 100000; i++) {
            clock_gettime(mono[c], &cur);
            if (ts_ns(&cur) < ts_ns(&prev))
                ok = 0;
            prev = cur;
        }
        check(ok, "clock %d never decreases over 100000 reads", (int)mono[c]);
    }
    struct timespec a, b;
    raw_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    check(ts_ns(&b) >= ts_ns(&a), "vDSO/libc monotonic >= earlier raw syscall value");
    clock_gettime(CLOCK_BOOTTIME, &b);
    check(ts_ns(&b) >= ts_ns(&a), "CLOCK_BOOTTIME >= CLOCK_MONOTONIC");
    clock_gettime(CLOCK_REALTIME, &a);
    check(a.tv_sec > 1600000000L, "CLOCK_REALTIME is after 2020");

    struct timespec ts;
    EXPECT_ERR(EINVAL, "clock_gettime(clock 100)", raw_gettime(100, &ts));
    EXPECT_ERR(EINVAL, "clock_getres(clock 100)", syscall(SYS_clock_getres, 100, &ts));
    ts.tv_sec = 0;
    ts.tv_nsec = 0;
    EXPECT_ERR(EINVAL, "clock_settime(CLOCK_MONOTONIC)", syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts));
    check(syscall(SYS_clock_getres, CLOCK_MONOTONIC, NULL) == 0, "clock_getres(res NULL) == 0");
}

static void test_gettimeofday(void)
{
    struct timeval tv;
    struct timespec ts;
    check(gettimeofday(&tv, NULL) == 0, "gettimeofday");
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t d = ts_ns(&ts) - ((int64_t)tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL);
    check(d >= -1000 * MS && d <= 1000 * MS, "gettimeofday within 1 s of CLOCK_REALTIME");
    check(tv.tv_usec >= 0 && tv.tv_usec < 1000000, "tv_usec in range");
    struct timeval raw;
    check(syscall(SYS_gettimeofday, &raw, NULL) == 0 && raw.tv_sec >= tv.tv_sec - 1, "syscall gettimeofday");
    time_t t = time(NULL);
    check(t >= tv.tv_sec - 1 && t <= tv.tv_sec + 2, "time() agrees");
    time_t t2 = 0;
    check(syscall(SYS_time, &t2) == t2 && t2 >= t - 1, "syscall time(&t)");
}

static void test_nanosleep(void)
{
    struct timespec req = { 0, 10 * MS };
    int64_t t0 = mono_ns();
    check(nanosleep(&req, NULL) == 0, "nanosleep(10 ms) returns 0");
    int64_t dt = mono_ns() - t0;
    check(dt >= 10 * MS && dt < 2000 * MS, "nanosleep(10 ms) slept >= 10 ms, < 2 s");

    req.tv_nsec = 0;
    t0 = mono_ns();
    check(nanosleep(&req, NULL) == 0 && mono_ns() - t0 < 1000 * MS, "nanosleep(0) returns at once");

    struct timespec bad = { 0, 1000000000L };
    EXPECT_ERR(EINVAL, "nanosleep(tv_nsec = 1e9)", nanosleep(&bad, NULL));
    struct timespec neg = { 0, -1 };
    EXPECT_ERR(EINVAL, "nanosleep(tv_nsec = -1)", nanosleep(&neg, NULL));
    struct timespec negs = { -1, 0 };
    EXPECT_ERR(EINVAL, "nanosleep(tv_sec = -1)", nanosleep(&negs, NULL));

    /* clock_nanosleep, relative and absolute. */
    t0 = mono_ns();
    req.tv_sec = 0;
    req.tv_nsec = 15 * MS;
    check(clock_nanosleep(CLOCK_MONOTONIC, 0, &req, NULL) == 0, "clock_nanosleep(MONOTONIC, 15 ms)");
    check(mono_ns() - t0 >= 15 * MS, "relative clock_nanosleep slept >= 15 ms");

    struct timespec target;
    clock_gettime(CLOCK_MONOTONIC, &target);
    target.tv_nsec += 20 * MS;
    if (target.tv_nsec >= 1000000000L) {
        target.tv_sec++;
        target.tv_nsec -= 1000000000L;
    }
    check(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, NULL) == 0, "clock_nanosleep TIMER_ABSTIME");
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    check(ts_ns(&now) >= ts_ns(&target), "woke at or after the absolute deadline");

    struct timespec past = { 1, 0 };
    t0 = mono_ns();
    check(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL) == 0 && mono_ns() - t0 < 1000 * MS,
          "TIMER_ABSTIME in the past returns at once");
    clock_gettime(CLOCK_REALTIME, &target);
    target.tv_nsec += 10 * MS;
    if (target.tv_nsec >= 1000000000L) {
        target.tv_sec++;
        target.tv_nsec -= 1000000000L;
    }
    check(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &target, NULL) == 0, "clock_nanosleep(REALTIME, ABSTIME)");

    /* clock_nanosleep returns the error number (no errno). */
    check(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL) == EINVAL, "clock_nanosleep(bad tv_nsec) returns EINVAL");
    EXPECT_ERR(EINVAL, "syscall clock_nanosleep(clock 100)",
               syscall(SYS_clock_nanosleep, 100, 0, &req, NULL));
    /* Linux: sleeping on the thread CPU clock is EOPNOTSUPP, not EINVAL. */
    EXPECT_ERR(EOPNOTSUPP, "syscall clock_nanosleep(CLOCK_THREAD_CPUTIME_ID)",
               syscall(SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, &req, NULL));
}

static volatile int alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void wait_alarms(int n, int64_t max_ns)
{
    int64_t t0 = mono_ns();
    while (alarms < n && mono_ns() - t0 < max_ns) {
        struct timespec ts = { 0, 1 * MS };
        nanosleep(&ts, NULL);
    }
}

static void test_itimer(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGVTALRM, &sa, NULL);
    sigaction(SIGPROF, &sa, NULL);

    struct itimerval it = { { 0, 0 }, { 0, 50000 } }, cur, old;
    alarms = 0;
    int64_t t0 = mono_ns();
    check(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer(ITIMER_REAL, 50 ms)");
    check(getitimer(ITIMER_REAL, &cur) == 0, "getitimer(ITIMER_REAL)");
    check(cur.it_value.tv_sec == 0 && cur.it_value.tv_usec > 0 && cur.it_value.tv_usec <= 50000,
          "getitimer: remaining in (0, 50 ms]");
    check(cur.it_interval.tv_sec == 0 && cur.it_interval.tv_usec == 0, "getitimer: no interval");
    wait_alarms(1, 2000 * MS);
    int64_t dt = mono_ns() - t0;
    check(alarms == 1, "SIGALRM delivered once");
    check(dt >= 50 * MS && dt < 2000 * MS, "SIGALRM after >= 50 ms");
    getitimer(ITIMER_REAL, &cur);
    check(cur.it_value.tv_sec == 0 && cur.it_value.tv_usec == 0, "expired one-shot timer reads zero");

    /* Periodic. */
    struct itimerval per = { { 0, 20000 }, { 0, 20000 } };
    alarms = 0;
    setitimer(ITIMER_REAL, &per, NULL);
    wait_alarms(3, 3000 * MS);
    check(alarms >= 3, "periodic ITIMER_REAL fires repeatedly");
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    check(setitimer(ITIMER_REAL, &off, &old) == 0, "disarm returns the old value");
    check(old.it_interval.tv_usec == 20000 && old.it_interval.tv_sec == 0, "old value has the 20 ms interval");
    int before = alarms;
    sleep_ms(60);
    check(alarms == before, "no SIGALRM after disarming");

    EXPECT_ERR(EINVAL, "setitimer(which 99)", setitimer(99, &it, NULL));
    EXPECT_ERR(EINVAL, "getitimer(which 99)", getitimer(99, &cur));
    struct itimerval badu = { { 0, 0 }, { 0, 1000000 } };
    EXPECT_ERR(EINVAL, "setitimer(tv_usec = 1e6)", setitimer(ITIMER_REAL, &badu, NULL));

    /* ITIMER_VIRTUAL and ITIMER_PROF count CPU time. */
    const char *names[2] = { "ITIMER_VIRTUAL -> SIGVTALRM", "ITIMER_PROF -> SIGPROF" };
    int which[2] = { ITIMER_VIRTUAL, ITIMER_PROF };
    for (int k = 0; k < 2; k++) {
        struct itimerval v = { { 0, 0 }, { 0, 20000 } };
        alarms = 0;
        setitimer(which[k], &v, NULL);
        t0 = mono_ns();
        volatile unsigned long spin = 0;
        while (alarms == 0 && mono_ns() - t0 < 20000 * MS)
            spin++;
        check(alarms == 1, "%s after busy loop", names[k]);
        setitimer(which[k], &off, NULL);
    }

    /* alarm() returns the previous remaining seconds (rounded). */
    check(alarm(5) == 0, "alarm(5) with none pending returns 0");
    check(alarm(3) == 5, "alarm(3) returns 5 (previous remaining)");
    check(alarm(0) == 3, "alarm(0) returns 3 and cancels");
    check(alarm(0) == 0, "alarm(0) again returns 0");
    getitimer(ITIMER_REAL, &cur);
    check(cur.it_value.tv_sec == 0 && cur.it_value.tv_usec == 0, "no timer after alarm(0)");

    sa.sa_handler = SIG_DFL;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGVTALRM, &sa, NULL);
    sigaction(SIGPROF, &sa, NULL);
}

static volatile int timer_code, timer_val, timer_hits;

static void on_timer(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    timer_code = si->si_code;
    timer_val = si->si_value.sival_int;
    timer_hits++;
}

static void test_posix_timer(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_timer;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGUSR1;
    sev.sigev_value.sival_int = 77;
    timer_t tid;
    if (!check(timer_create(CLOCK_MONOTONIC, &sev, &tid) == 0, "timer_create(CLOCK_MONOTONIC, SIGEV_SIGNAL)"))
        return;
    struct itimerspec its = { { 0, 0 }, { 0, 30 * MS } }, cur;
    int64_t t0 = mono_ns();
    check(timer_settime(tid, 0, &its, NULL) == 0, "timer_settime 30 ms");
    check(timer_gettime(tid, &cur) == 0 && ts_ns(&cur.it_value) > 0 && ts_ns(&cur.it_value) <= 30 * MS,
          "timer_gettime: remaining in (0, 30 ms]");
    while (!timer_hits && mono_ns() - t0 < 2000 * MS)
        sleep_ms(1);
    check(timer_hits == 1 && mono_ns() - t0 >= 30 * MS, "POSIX timer fired once after >= 30 ms");
    check(timer_code == SI_TIMER && timer_val == 77, "si_code SI_TIMER, si_value 77");
    check(timer_getoverrun(tid) == 0, "timer_getoverrun == 0");
    check(timer_delete(tid) == 0, "timer_delete");
    EXPECT_ERR(EINVAL, "syscall timer_settime(deleted timer)",
               syscall(SYS_timer_settime, (long)0x7fff, 0, &its, NULL));
    EXPECT_ERR(EINVAL, "syscall timer_create(clock 100)",
               syscall(SYS_timer_create, 100, &sev, &tid));
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    sigaction(SIGUSR1, &sa, NULL);
}

/* A periodic timer far faster than any tick (1 us, SIGEV_NONE): an
 * expired timer moves to its next period after now, the missed ones
 * counted as overruns, instead of expiring once per missed period. Kiln
 * once reloaded such timers one period at a time, so its tick handler
 * never caught up and nothing else ran (stress-ng's timer stressor hung
 * the kernel). */
static void test_fast_timer(void)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_NONE;
    timer_t tid;
    if (!check(timer_create(CLOCK_MONOTONIC, &sev, &tid) == 0, "timer_create(SIGEV_NONE) for a 1 us period"))
        return;
    struct itimerspec its = { { 0, 1000 }, { 0, 1000 } }, cur;
    check(timer_settime(tid, 0, &its, NULL) == 0, "timer_settime: 1 us period");
    int64_t t0 = mono_ns();
    int done = 0;
    for (int i = 0; i < 10 && mono_ns() - t0 < 20000 * MS; i++) {
        sleep_ms(10);
        done++;
    }
    check(done == 10 && mono_ns() - t0 < 20000 * MS, "ten 10 ms sleeps end while it runs");
    check(timer_gettime(tid, &cur) == 0 && ts_ns(&cur.it_interval) == 1000 && ts_ns(&cur.it_value) > 0 &&
              ts_ns(&cur.it_value) <= 1000,
          "timer_gettime: interval 1 us, next expiry within 1 us");
    check(timer_getoverrun(tid) >= 0, "timer_getoverrun succeeds");
    check(timer_delete(tid) == 0, "timer_delete of the 1 us timer");
}

static void test_cputime(void)
{
    struct timespec p0, p1, t0, t1;
    struct rusage r0, r1;
    struct tms m0, m1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    getrusage(RUSAGE_SELF, &r0);
    check(times(&m0) != (clock_t)-1, "times() succeeds");
    /* Busy until 60 ms of CPU time were used (CPU time, not wall time, so
     * this holds on a loaded host too); give up after 20 s of wall time. */
    int64_t start = mono_ns();
    volatile unsigned long x = 0;
    while (now_ns(CLOCK_PROCESS_CPUTIME_ID) - ts_ns(&p0) < 60 * MS && mono_ns() - start < 20000 * MS)
        for (int i = 0; i < 10000; i++)
            x += i;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    getrusage(RUSAGE_SELF, &r1);
    times(&m1);
    int64_t dp = ts_ns(&p1) - ts_ns(&p0), dtt = ts_ns(&t1) - ts_ns(&t0);
    check(dp >= 60 * MS && dp <= 20000 * MS, "CLOCK_PROCESS_CPUTIME_ID advanced by a busy loop");
    check(dtt >= 30 * MS && dtt <= 20000 * MS, "CLOCK_THREAD_CPUTIME_ID advanced too");
    int64_t du = ((int64_t)r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1000000 +
                 (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
                 ((int64_t)r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000 +
                 (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
    check(du >= 30000, "getrusage user+system time advanced");
    check((m1.tms_utime + m1.tms_stime) - (m0.tms_utime + m0.tms_stime) >= 2, "times() ticks advanced");
    check(sysconf(_SC_CLK_TCK) == 100, "sysconf(_SC_CLK_TCK) == 100");
    EXPECT_ERR(EINVAL, "getrusage(99)", getrusage(99, &r0));
}

int main(void)
{
    t_init("time");
    test_clocks();
    test_gettimeofday();
    test_nanosleep();
    test_itimer();
    test_posix_timer();
    test_fast_timer();
    test_cputime();
    return t_done();
}
