/*
 * Nice values: getpriority/setpriority (PRIO_PROCESS on threads,
 * PRIO_PGRP, PRIO_USER), the raw call's 20 - nice encoding, clamping,
 * errnos, nice(3), inheritance across fork, and what nice does: CPU-bound
 * threads sharing one CPU get time in proportion to Linux's weights
 * (nice 0 : nice 19 = 1024 : 15, nice 0 : nice 5 = 1024 : 335), and a
 * SCHED_IDLE thread next to a normal one gets almost nothing.
 *
 * KILN_PRIO_VERBOSE=1 prints the measured ratios (not compared).
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

static long raw_getpriority(int which, int who)
{
    return syscall(SYS_getpriority, which, who);
}

static void test_calls(void)
{
    errno = 0;
    check(getpriority(PRIO_PROCESS, 0) == 0 && errno == 0, "nice starts at 0");
    check(raw_getpriority(PRIO_PROCESS, 0) == 20, "raw getpriority returns 20 - nice = 20");
    EXPECT_ERR(EINVAL, "getpriority(which 3)", getpriority(3, 0));
    EXPECT_ERR(EINVAL, "getpriority(which -1)", getpriority(-1, 0));
    EXPECT_ERR(EINVAL, "setpriority(which 3)", setpriority(3, 0, 0));
    EXPECT_ERR(ESRCH, "getpriority(PRIO_PROCESS, no such pid)", getpriority(PRIO_PROCESS, 999999));
    EXPECT_ERR(ESRCH, "getpriority(PRIO_PROCESS, -5)", getpriority(PRIO_PROCESS, -5));
    EXPECT_ERR(ESRCH, "setpriority(PRIO_PROCESS, no such pid)", setpriority(PRIO_PROCESS, 999999, 1));
    EXPECT_ERR(ESRCH, "getpriority(PRIO_PGRP, no such group)", getpriority(PRIO_PGRP, 999999));
    EXPECT_ERR(ESRCH, "setpriority(PRIO_PGRP, no such group)", setpriority(PRIO_PGRP, 999999, 1));
    EXPECT_ERR(ESRCH, "getpriority(PRIO_USER, uid without processes)", getpriority(PRIO_USER, 54321));
    errno = 0;
    int u = getpriority(PRIO_USER, 0);
    check(errno == 0 && u >= -20 && u <= 19, "getpriority(PRIO_USER, 0) answers");

    EXPECT_OK("setpriority(5)", setpriority(PRIO_PROCESS, 0, 5));
    check(getpriority(PRIO_PROCESS, 0) == 5 && raw_getpriority(PRIO_PROCESS, 0) == 15, "nice 5, raw 15");
    EXPECT_OK("setpriority(100) clamps", setpriority(PRIO_PROCESS, 0, 100));
    check(getpriority(PRIO_PROCESS, 0) == 19 && raw_getpriority(PRIO_PROCESS, 0) == 1, "nice 19, raw 1");
    EXPECT_OK("setpriority(-100) clamps (root)", setpriority(PRIO_PROCESS, 0, -100));
    check(getpriority(PRIO_PROCESS, 0) == -20 && raw_getpriority(PRIO_PROCESS, 0) == 40, "nice -20, raw 40");
    EXPECT_OK("setpriority(PRIO_PROCESS, getpid(), 0)", setpriority(PRIO_PROCESS, getpid(), 0));
    errno = 0;
    int n = nice(3);
    check(n == 3 && errno == 0, "nice(3) returns 3");
    n = nice(-1);
    check(n == 2, "nice(-1) returns 2");
    check(getpriority(PRIO_PROCESS, 0) == 2, "getpriority says 2");

    /* Children inherit the nice value. */
    pid_t pid = fork();
    if (pid == 0)
        _exit(getpriority(PRIO_PROCESS, 0) == 2 ? 0 : 1);
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child inherits nice 2");
    setpriority(PRIO_PROCESS, 0, 0);

    /* PRIO_PGRP: a group of two children. */
    int go[2];
    if (pipe(go) != 0)
        printf("FAIL: pipe\n");
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            char c;
            close(go[1]);
            setpgid(0, i == 0 ? 0 : kids[0]);
            read(go[0], &c, 1);
            _exit(getpriority(PRIO_PROCESS, 0) + 20);
        }
        setpgid(kids[i], i == 0 ? kids[i] : kids[0]);
    }
    EXPECT_OK("setpriority(PRIO_PGRP, group, 7)", setpriority(PRIO_PGRP, kids[0], 7));
    check(getpriority(PRIO_PGRP, kids[0]) == 7, "getpriority(PRIO_PGRP) = 7");
    EXPECT_OK("setpriority(PRIO_PROCESS, second child, 4)", setpriority(PRIO_PROCESS, kids[1], 4));
    check(getpriority(PRIO_PGRP, kids[0]) == 4, "getpriority(PRIO_PGRP) = the lowest nice, 4");
    check(getpriority(PRIO_PROCESS, 0) == 0, "the caller is not in that group: still 0");
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < 2; i++) {
        wait_for(kids[i], &st, 0);
        check(WIFEXITED(st) && WEXITSTATUS(st) == (i == 0 ? 27 : 24), "child %d saw nice %d", i, i == 0 ? 7 : 4);
    }
}

/* ---- nice values per thread --------------------------------------------- */

static atomic_int tid_of_other;
static atomic_int other_may_exit;

static void *other_thread(void *arg)
{
    (void)arg;
    atomic_store(&tid_of_other, gettid());
    while (!atomic_load(&other_may_exit))
        usleep(1000);
    return (void *)(long)getpriority(PRIO_PROCESS, 0);
}

static void test_threads(void)
{
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    while (!atomic_load(&tid_of_other))
        usleep(1000);
    EXPECT_OK("setpriority(PRIO_PROCESS, other thread's id, 9)", setpriority(PRIO_PROCESS, tid_of_other, 9));
    check(getpriority(PRIO_PROCESS, tid_of_other) == 9, "that thread has nice 9");
    check(getpriority(PRIO_PROCESS, 0) == 0, "the calling thread still has nice 0");
    atomic_store(&other_may_exit, 1);
    void *ret;
    pthread_join(t, &ret);
    check((long)ret == 9, "the thread saw its own nice 9");
}

/* ---- shares -------------------------------------------------------------- */

struct spinner {
    int nice;
    int idle_policy;
    double cpu;
};

static atomic_int started;
static atomic_int stop;

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
    struct spinner *s = arg;
    setpriority(PRIO_PROCESS, gettid(), s->nice);
    if (s->idle_policy) {
        struct sched_param p = { 0 };
        syscall(SYS_sched_setscheduler, 0, SCHED_IDLE, &p);
    }
    atomic_fetch_add(&started, 1);
    while (atomic_load(&started) < 2)
        ;
    double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    while (!atomic_load(&stop))
        ;
    s->cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    return NULL;
}

/* Two threads pinned to CPU 0 spin for `secs`; returns a's time / b's. */
static double share(struct spinner *a, struct spinner *b, double secs)
{
    cpu_set_t set, old;
    sched_getaffinity(0, sizeof old, &old);
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    atomic_store(&started, 0);
    atomic_store(&stop, 0);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, spin, a);
    pthread_create(&tb, NULL, spin, b);
    while (atomic_load(&started) < 2)
        usleep(1000);
    usleep((useconds_t)(secs * 1e6));
    atomic_store(&stop, 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    sched_setaffinity(0, sizeof old, &old);
    return b->cpu > 0 ? a->cpu / b->cpu : 1e9;
}

/* Measures a (nice_a) against b (nice_b, SCHED_IDLE if idle_b) and checks
 * that the ratio lies in (lo, hi). A loaded host (CI shares its CPUs) gives
 * the pair little time, and the weaker thread's few milliseconds are then
 * too coarse to divide by: measure again, up to three times, before calling
 * it a failure. */
static void check_share(int nice_a, int nice_b, int idle_b, double secs, double lo, double hi, const char *what)
{
    double r = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct spinner a = { nice_a, 0, 0 }, b = { nice_b, idle_b, 0 };
        r = share(&a, &b, secs);
        if (getenv("KILN_PRIO_VERBOSE"))
            fprintf(stderr, "%s: %.2f\n", what, r);
        if (r > lo && r < hi)
            break;
    }
    check(r > lo && r < hi, "%s", what);
}

static void test_shares(void)
{
    /* Linux's weights: 1024:15 (68.3), 1024:335 (3.06), 1024:3 for SCHED_IDLE (341). */
    check_share(0, 19, 0, 1.5, 20, 150, "nice 0 vs nice 19 on one CPU: share near 1024:15");
    check_share(0, 5, 0, 1.0, 2.0, 4.5, "nice 0 vs nice 5 on one CPU: share near 1024:335");
    check_share(0, 0, 0, 1.0, 0.7, 1.4, "two nice 0 threads share one CPU evenly");
    check_share(0, 0, 1, 1.0, 20, 1e12, "a SCHED_IDLE thread gets almost nothing next to a normal one");
}

int main(void)
{
    t_init("prio");
    test_calls();
    test_threads();
    test_shares();
    return t_done();
}
