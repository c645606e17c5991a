/*
 * Scheduling policies: sched_setscheduler/getscheduler/setparam/getparam,
 * sched_setattr/getattr (sizes, E2BIG, flags), priority ranges,
 * sched_rr_get_interval, SCHED_RESET_ON_FORK across fork, /proc/<pid>/stat
 * priority fields, and what the scheduler does with them, observed on one
 * CPU: a SCHED_FIFO thread runs before a normal one and keeps the CPU
 * through sched_yield, a woken FIFO thread preempts a normal one at once,
 * SCHED_RR threads of one priority take turns while SCHED_FIFO ones do
 * not, and a spinning FIFO thread leaves the normal ones a little time
 * each second (real-time throttling).
 *
 * musl's sched_setscheduler and friends are ENOSYS stubs: raw calls here.
 */
#include "common.h"

#include <sys/resource.h>
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129
#include <pthread.h>
#include <stdatomic.h>

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif
#define SCHED_DEADLINE 6
#define SCHED_FLAG_RESET_ON_FORK 0x01
#define SCHED_FLAG_KEEP_POLICY 0x08
#define SCHED_FLAG_KEEP_PARAMS 0x10
#define SCHED_FLAG_UTIL_CLAMP_MIN 0x20

struct attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};

static long setsched(pid_t pid, int policy, int prio)
{
    struct sched_param p = { .sched_priority = prio };
    return syscall(SYS_sched_setscheduler, pid, policy, &p);
}

static long getsched(pid_t pid)
{
    return syscall(SYS_sched_getscheduler, pid);
}

static int getprio(pid_t pid)
{
    struct sched_param p = { .sched_priority = -1 };
    if (syscall(SYS_sched_getparam, pid, &p) != 0)
        return -100;
    return p.sched_priority;
}

static long setattr(pid_t pid, struct attr *a, unsigned flags)
{
    return syscall(SYS_sched_setattr, pid, a, flags);
}

static long getattr(pid_t pid, void *a, unsigned size, unsigned flags)
{
    return syscall(SYS_sched_getattr, pid, a, size, flags);
}

static void pin_cpu0(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        printf("FAIL: pin to CPU 0: %s\n", errname(errno));
}

static void back_to_normal(void)
{
    setsched(0, SCHED_OTHER, 0);
    setpriority(PRIO_PROCESS, 0, 0);
}

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- errnos and round trips --------------------------------------- */

static void test_calls(void)
{
    const pid_t NOPID = 999999;
    struct sched_param p = { .sched_priority = 0 };

    EXPECT_ERR(EINVAL, "sched_setscheduler(policy 4)", syscall(SYS_sched_setscheduler, 0, 4, &p));
    EXPECT_ERR(EINVAL, "sched_setscheduler(policy 7)", syscall(SYS_sched_setscheduler, 0, 7, &p));
    EXPECT_ERR(EINVAL, "sched_setscheduler(policy -1)", syscall(SYS_sched_setscheduler, 0, -1, &p));
    EXPECT_ERR(EINVAL, "sched_setscheduler(pid -1)", setsched(-1, SCHED_OTHER, 0));
    EXPECT_ERR(EINVAL, "sched_setscheduler(NULL param)", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL));
    EXPECT_ERR(EFAULT, "sched_setscheduler(bad param)", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, BAD_PTR));
    EXPECT_ERR(ESRCH, "sched_setscheduler(no such pid)", setsched(NOPID, SCHED_OTHER, 0));
    EXPECT_ERR(EINVAL, "SCHED_FIFO priority 0", setsched(0, SCHED_FIFO, 0));
    EXPECT_ERR(EINVAL, "SCHED_FIFO priority 100", setsched(0, SCHED_FIFO, 100));
    EXPECT_ERR(EINVAL, "SCHED_RR priority -1", setsched(0, SCHED_RR, -1));
    EXPECT_ERR(EINVAL, "SCHED_OTHER priority 1", setsched(0, SCHED_OTHER, 1));
    EXPECT_ERR(EINVAL, "SCHED_BATCH priority 5", setsched(0, SCHED_BATCH, 5));
    EXPECT_ERR(EINVAL, "SCHED_DEADLINE without parameters", setsched(0, SCHED_DEADLINE, 0));
    EXPECT_ERR(EINVAL, "sched_getscheduler(-1)", getsched(-1));
    EXPECT_ERR(ESRCH, "sched_getscheduler(no such pid)", getsched(NOPID));
    EXPECT_ERR(EINVAL, "sched_getparam(NULL)", syscall(SYS_sched_getparam, 0, NULL));
    EXPECT_ERR(EINVAL, "sched_getparam(-1)", syscall(SYS_sched_getparam, -1, &p));
    EXPECT_ERR(EFAULT, "sched_getparam(bad pointer)", syscall(SYS_sched_getparam, 0, BAD_PTR));
    EXPECT_ERR(ESRCH, "sched_getparam(no such pid)", syscall(SYS_sched_getparam, NOPID, &p));
    EXPECT_ERR(EINVAL, "sched_setparam(NULL)", syscall(SYS_sched_setparam, 0, NULL));
    EXPECT_ERR(EINVAL, "sched_setparam(priority 1 for SCHED_OTHER)",
               (p.sched_priority = 1, syscall(SYS_sched_setparam, 0, &p)));
    p.sched_priority = 0;
    EXPECT_ERR(EINVAL, "sched_get_priority_max(4)", sched_get_priority_max(4));
    EXPECT_ERR(EINVAL, "sched_get_priority_min(-1)", sched_get_priority_min(-1));
    check(sched_get_priority_max(SCHED_RR) == 99 && sched_get_priority_min(SCHED_RR) == 1, "SCHED_RR range 1..99");
    check(sched_get_priority_max(SCHED_BATCH) == 0 && sched_get_priority_min(SCHED_IDLE) == 0,
          "SCHED_BATCH/SCHED_IDLE range 0..0");
    check(sched_get_priority_max(SCHED_DEADLINE) == 0, "SCHED_DEADLINE max 0");

    /* Round trips. */
    EXPECT_OK("sched_setscheduler(SCHED_FIFO, 10)", setsched(0, SCHED_FIFO, 10));
    check(getsched(0) == SCHED_FIFO && getprio(0) == 10, "reads back SCHED_FIFO 10");
    check(getsched(gettid()) == SCHED_FIFO, "by thread id too");
    p.sched_priority = 20;
    EXPECT_OK("sched_setparam(20)", syscall(SYS_sched_setparam, 0, &p));
    check(getsched(0) == SCHED_FIFO && getprio(0) == 20, "policy kept, priority 20");
    p.sched_priority = 0;
    EXPECT_ERR(EINVAL, "sched_setparam(0) while SCHED_FIFO", syscall(SYS_sched_setparam, 0, &p));
    EXPECT_OK("SCHED_RR 5", setsched(0, SCHED_RR, 5));
    check(getsched(0) == SCHED_RR && getprio(0) == 5, "reads back SCHED_RR 5");
    struct timespec ts = { 7, 7 };
    EXPECT_OK("sched_rr_get_interval", syscall(SYS_sched_rr_get_interval, 0, &ts));
    check(ts.tv_sec == 0 && ts.tv_nsec == 100000000, "SCHED_RR slice is 100 ms");
    EXPECT_OK("SCHED_FIFO 1", setsched(0, SCHED_FIFO, 1));
    EXPECT_OK("sched_rr_get_interval(SCHED_FIFO)", syscall(SYS_sched_rr_get_interval, 0, &ts));
    check(ts.tv_sec == 0 && ts.tv_nsec == 0, "SCHED_FIFO has no slice");
    EXPECT_ERR(EINVAL, "sched_rr_get_interval(-1)", syscall(SYS_sched_rr_get_interval, -1, &ts));
    EXPECT_ERR(ESRCH, "sched_rr_get_interval(no such pid)", syscall(SYS_sched_rr_get_interval, NOPID, &ts));
    EXPECT_ERR(EFAULT, "sched_rr_get_interval(bad pointer)", syscall(SYS_sched_rr_get_interval, 0, BAD_PTR));

    /* nice survives real-time spells; setscheduler keeps it. */
    EXPECT_OK("SCHED_OTHER", setsched(0, SCHED_OTHER, 0));
    EXPECT_OK("setpriority(5)", setpriority(PRIO_PROCESS, 0, 5));
    EXPECT_OK("SCHED_FIFO 3", setsched(0, SCHED_FIFO, 3));
    EXPECT_OK("SCHED_BATCH", setsched(0, SCHED_BATCH, 0));
    check(getsched(0) == SCHED_BATCH && getpriority(PRIO_PROCESS, 0) == 5, "SCHED_BATCH, nice 5 kept");
    EXPECT_OK("SCHED_IDLE", setsched(0, SCHED_IDLE, 0));
    check(getsched(0) == SCHED_IDLE && getprio(0) == 0, "reads back SCHED_IDLE");
    back_to_normal();

    /* SCHED_RESET_ON_FORK. */
    EXPECT_OK("SCHED_RR|SCHED_RESET_ON_FORK", setsched(0, SCHED_RR | SCHED_RESET_ON_FORK, 4));
    check(getsched(0) == (SCHED_RR | SCHED_RESET_ON_FORK), "getscheduler shows SCHED_RESET_ON_FORK");
    pid_t pid = fork();
    if (pid == 0)
        _exit(getsched(0) == SCHED_OTHER && getprio(0) == 0 ? 0 : 1);
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child of SCHED_RESET_ON_FORK starts as SCHED_OTHER");
    EXPECT_OK("SCHED_FIFO 9 without reset", setsched(0, SCHED_FIFO, 9));
    check(getsched(0) == SCHED_FIFO, "SCHED_RESET_ON_FORK cleared");
    pid = fork();
    if (pid == 0)
        _exit(getsched(0) == SCHED_FIFO && getprio(0) == 9 ? 0 : 1);
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child inherits SCHED_FIFO 9");
    back_to_normal();
}

static void test_attr(void)
{
    unsigned char buf[128];
    struct attr a;

    memset(buf, 0, sizeof buf);
    EXPECT_OK("sched_getattr(size 56)", getattr(0, buf, 56, 0));
    memcpy(&a, buf, sizeof a);
    check(a.size == 56 && a.policy == SCHED_OTHER && a.nice == 0 && a.priority == 0 && a.flags == 0,
          "getattr: size 56, SCHED_OTHER, nice 0");
    memset(buf, 0xaa, sizeof buf);
    EXPECT_OK("sched_getattr(size 128)", getattr(0, buf, 128, 0));
    memcpy(&a, buf, sizeof a);
    check(a.size == 56 && buf[56] == 0 && buf[127] == 0, "getattr(128) reports size 56, zeroes the rest");
    memset(buf, 0xaa, sizeof buf);
    EXPECT_OK("sched_getattr(size 48)", getattr(0, buf, 48, 0));
    memcpy(&a, buf, 8);
    check(a.size == 48 && buf[48] == 0xaa, "getattr(48) reports size 48, writes 48 bytes");
    EXPECT_ERR(EINVAL, "sched_getattr(size 47)", getattr(0, buf, 47, 0));
    EXPECT_ERR(EINVAL, "sched_getattr(size 4097)", getattr(0, buf, 4097, 0));
    EXPECT_ERR(EINVAL, "sched_getattr(flags 1)", getattr(0, buf, 56, 1));
    EXPECT_ERR(EINVAL, "sched_getattr(NULL)", getattr(0, NULL, 56, 0));
    EXPECT_ERR(EINVAL, "sched_getattr(pid -1)", getattr(-1, buf, 56, 0));
    EXPECT_ERR(ESRCH, "sched_getattr(no such pid)", getattr(999999, buf, 56, 0));
    EXPECT_ERR(EFAULT, "sched_getattr(bad pointer)", getattr(0, BAD_PTR, 56, 0));

    memset(&a, 0, sizeof a);
    a.size = 56;
    a.policy = SCHED_OTHER;
    a.nice = 3;
    EXPECT_OK("sched_setattr(SCHED_OTHER, nice 3)", setattr(0, &a, 0));
    check(getpriority(PRIO_PROCESS, 0) == 3, "nice is 3");
    a.nice = 40;
    EXPECT_OK("sched_setattr(nice 40) clamps", setattr(0, &a, 0));
    check(getpriority(PRIO_PROCESS, 0) == 19, "nice clamped to 19");
    a.nice = 0;
    a.size = 0;
    EXPECT_OK("sched_setattr(size 0 means 48)", setattr(0, &a, 0));
    check(getpriority(PRIO_PROCESS, 0) == 0, "nice back to 0");

    unsigned char big[200];
    memset(big, 0, sizeof big);
    memcpy(big, &a, sizeof a);
    uint32_t sz = 200;
    memcpy(big, &sz, 4);
    EXPECT_OK("sched_setattr(size 200, zero tail)", setattr(0, (struct attr *)big, 0));
    big[150] = 1;
    EXPECT_ERR(E2BIG, "sched_setattr(size 200, non-zero tail)", setattr(0, (struct attr *)big, 0));
    memcpy(&sz, big, 4);
    check(sz == 56, "E2BIG writes the kernel's size (56) back");
    sz = 40;
    memcpy(big, &sz, 4);
    EXPECT_ERR(E2BIG, "sched_setattr(size 40)", setattr(0, (struct attr *)big, 0));
    memcpy(&sz, big, 4);
    check(sz == 56, "size 40: 56 written back");
    sz = 8192;
    memcpy(big, &sz, 4);
    EXPECT_ERR(E2BIG, "sched_setattr(size 8192)", setattr(0, (struct attr *)big, 0));

    memset(&a, 0, sizeof a);
    a.size = 56;
    EXPECT_ERR(EINVAL, "sched_setattr(flags arg 1)", setattr(0, &a, 1));
    EXPECT_ERR(EINVAL, "sched_setattr(NULL)", setattr(0, NULL, 0));
    EXPECT_ERR(EINVAL, "sched_setattr(pid -1)", setattr(-1, &a, 0));
    EXPECT_ERR(EFAULT, "sched_setattr(bad pointer)", setattr(0, BAD_PTR, 0));
    EXPECT_ERR(ESRCH, "sched_setattr(no such pid)", setattr(999999, &a, 0));
    a.flags = 0x100;
    EXPECT_ERR(EINVAL, "sched_setattr(unknown flag)", setattr(0, &a, 0));
    a.flags = 0;
    a.policy = 0x80000000u;
    EXPECT_ERR(EINVAL, "sched_setattr(negative policy)", setattr(0, &a, 0));
    a.policy = SCHED_DEADLINE;
    EXPECT_ERR(EINVAL, "sched_setattr(SCHED_DEADLINE, zero deadline)", setattr(0, &a, 0));
    a.policy = SCHED_OTHER;
    a.size = 48;
    a.flags = SCHED_FLAG_UTIL_CLAMP_MIN;
    EXPECT_ERR(EINVAL, "sched_setattr(UTIL_CLAMP with size 48)", setattr(0, &a, 0));
    a.flags = 0;
    a.size = 56;

    a.policy = SCHED_FIFO;
    a.priority = 30;
    a.flags = SCHED_FLAG_RESET_ON_FORK;
    EXPECT_OK("sched_setattr(SCHED_FIFO 30, RESET_ON_FORK)", setattr(0, &a, 0));
    memset(buf, 0, sizeof buf);
    getattr(0, buf, 56, 0);
    struct attr b;
    memcpy(&b, buf, sizeof b);
    check(b.policy == SCHED_FIFO && b.priority == 30 && b.flags == SCHED_FLAG_RESET_ON_FORK,
          "getattr: SCHED_FIFO 30, SCHED_FLAG_RESET_ON_FORK");
    memset(&a, 0, sizeof a);
    a.size = 56;
    a.priority = 40;
    a.flags = SCHED_FLAG_KEEP_POLICY;
    EXPECT_OK("sched_setattr(KEEP_POLICY, priority 40)", setattr(0, &a, 0));
    check(getsched(0) == (SCHED_FIFO | SCHED_RESET_ON_FORK) && getprio(0) == 40,
          "policy and SCHED_RESET_ON_FORK kept, priority 40");
    a.flags = SCHED_FLAG_KEEP_PARAMS;
    a.policy = SCHED_RR;
    a.priority = 0;
    EXPECT_OK("sched_setattr(SCHED_RR, KEEP_PARAMS)", setattr(0, &a, 0));
    /* KEEP_PARAMS skips the whole parameter update, policy included: only
     * the reset-on-fork flag (now clear) changes. */
    check(getsched(0) == SCHED_FIFO && getprio(0) == 40, "KEEP_PARAMS: still SCHED_FIFO 40, reset flag cleared");
    a.policy = SCHED_OTHER;
    EXPECT_ERR(EINVAL, "sched_setattr(SCHED_OTHER, KEEP_PARAMS) from SCHED_FIFO 40", setattr(0, &a, 0));
    back_to_normal();
}

static void test_proc_stat(void)
{
    setsched(0, SCHED_FIFO, 7);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    int n = f ? (int)fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    /* Fields after "(comm)": 3 state ... 18 priority, 19 nice, 40 rt_priority, 41 policy. */
    char *s = strrchr(buf, ')');
    long field[64] = { 0 };
    int i = 3;
    if (s) {
        s += 2;
        char *tok = strtok(s, " ");
        while (tok && i < 64) {
            field[i++] = strtol(tok, NULL, 10);
            tok = strtok(NULL, " ");
        }
    }
    check(field[18] == -8 && field[19] == 0 && field[40] == 7 && field[41] == SCHED_FIFO,
          "/proc/self/stat: priority -8, nice 0, rt_priority 7, policy 1 under SCHED_FIFO 7");
    back_to_normal();
    setpriority(PRIO_PROCESS, 0, 6);
    f = fopen("/proc/self/stat", "r");
    n = f ? (int)fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    s = strrchr(buf, ')');
    i = 3;
    if (s) {
        s += 2;
        char *tok = strtok(s, " ");
        while (tok && i < 64) {
            field[i++] = strtol(tok, NULL, 10);
            tok = strtok(NULL, " ");
        }
    }
    check(field[18] == 26 && field[19] == 6 && field[40] == 0 && field[41] == SCHED_OTHER,
          "/proc/self/stat: priority 26, nice 6, policy 0 at nice 6");
    back_to_normal();
}

/* ---- behaviour on one CPU ------------------------------------------- */

static char order[64];
static atomic_int order_len;

static void note(char c)
{
    int i = atomic_fetch_add(&order_len, 1);
    if (i < (int)sizeof order - 1)
        order[i] = c;
}

static void spin_cpu(double seconds)
{
    double end = now_s(CLOCK_THREAD_CPUTIME_ID) + seconds;
    while (now_s(CLOCK_THREAD_CPUTIME_ID) < end)
        ;
}

static pthread_t start(void *(*fn)(void *), int policy, int prio)
{
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&at, policy);
    struct sched_param sp = { .sched_priority = prio };
    pthread_attr_setschedparam(&at, &sp);
    pthread_t t;
    int r = pthread_create(&t, &at, fn, NULL);
    if (r != 0)
        printf("FAIL: pthread_create: %s\n", errname(r));
    pthread_attr_destroy(&at);
    return t;
}

static void *fifo_first(void *arg)
{
    (void)arg;
    note('F');
    sched_yield(); /* no other FIFO thread of this priority: keeps the CPU */
    note('F');
    spin_cpu(0.02);
    note('F');
    return NULL;
}

static void *normal_one(void *arg)
{
    (void)arg;
    note('N');
    return NULL;
}

static atomic_int wake_word;

static void *fifo_waiter(void *arg)
{
    (void)arg;
    note('f');
    while (atomic_load(&wake_word) == 0)
        syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    note('f');
    return NULL;
}

static void *normal_waker(void *arg)
{
    (void)arg;
    note('n');
    atomic_store(&wake_word, 1);
    syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    note('n');
    return NULL;
}

static void *spin_300ms_a(void *arg)
{
    (void)arg;
    note('A');
    spin_cpu(0.3);
    note('a');
    return NULL;
}

static void *spin_300ms_b(void *arg)
{
    (void)arg;
    note('B');
    spin_cpu(0.3);
    note('b');
    return NULL;
}

static atomic_long normal_progress;
static atomic_int spinner_done;
static long progress_seen;

static void *fifo_spinner(void *arg)
{
    (void)arg;
    /* 2.2 s of wall time spans at least one whole 950 ms budget. */
    double end = now_s(CLOCK_MONOTONIC) + 2.2;
    while (now_s(CLOCK_MONOTONIC) < end)
        ;
    progress_seen = atomic_load(&normal_progress);
    atomic_store(&spinner_done, 1);
    return NULL;
}

static void test_behaviour(void)
{
    pin_cpu0();

    /* A FIFO thread runs before a normal one, and sched_yield keeps it on. */
    EXPECT_OK("main thread SCHED_FIFO 50", setsched(0, SCHED_FIFO, 50));
    atomic_store(&order_len, 0);
    pthread_t f = start(fifo_first, SCHED_FIFO, 10);
    pthread_t n = start(normal_one, SCHED_OTHER, 0);
    pthread_join(f, NULL);
    pthread_join(n, NULL);
    order[atomic_load(&order_len)] = 0;
    check(strcmp(order, "FFFN") == 0, "FIFO thread ran to its end before the normal one (%s)", order);

    /* A woken FIFO thread preempts the normal thread that woke it. */
    atomic_store(&order_len, 0);
    f = start(fifo_waiter, SCHED_FIFO, 10);
    usleep(50000); /* it runs, notes 'f' and waits */
    n = start(normal_waker, SCHED_OTHER, 0);
    pthread_join(n, NULL);
    pthread_join(f, NULL);
    order[atomic_load(&order_len)] = 0;
    check(strcmp(order, "fnfn") == 0, "woken FIFO thread preempted its waker (%s)", order);

    /* Two SCHED_RR threads of one priority take turns (100 ms slices).
     * Each starts at the creator's priority 50 and is lowered to 10,
     * which puts it at the head of that list (Linux since 3.14): B, made
     * second, starts first. */
    atomic_store(&order_len, 0);
    pthread_t a = start(spin_300ms_a, SCHED_RR, 10);
    pthread_t b = start(spin_300ms_b, SCHED_RR, 10);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    order[atomic_load(&order_len)] = 0;
    /* Which one finishes first depends on how the last slices fall against
     * the tick, and a loaded host (steal time) shifts that: Linux itself
     * printed BAab on a busy CI machine. Round robin shows in both having
     * started before either finished; FIFO order would be BbAa. */
    int rr_ok = strlen(order) == 4 && order[0] == 'B' && order[1] == 'A';
    check(rr_ok, "SCHED_RR threads interleave: both start before either ends");
    if (!rr_ok)
        printf("  order was %s\n", order);

    /* Two SCHED_FIFO threads of one priority do not. */
    atomic_store(&order_len, 0);
    a = start(spin_300ms_a, SCHED_FIFO, 10);
    b = start(spin_300ms_b, SCHED_FIFO, 10);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    order[atomic_load(&order_len)] = 0;
    check(strcmp(order, "BbAa") == 0, "SCHED_FIFO threads run one after the other (%s)", order);

    back_to_normal();

    /* Real-time throttling: a spinning FIFO thread leaves normal threads
     * some time each second. */
    atomic_store(&normal_progress, 0);
    atomic_store(&spinner_done, 0);
    pthread_t s = start(fifo_spinner, SCHED_FIFO, 1);
    while (!atomic_load(&spinner_done))
        atomic_fetch_add(&normal_progress, 1);
    pthread_join(s, NULL);
    check(progress_seen > 0, "a normal thread ran while a FIFO thread spun for 2.2 s");
}

int main(void)
{
    t_init("sched");
    check(getsched(0) == SCHED_OTHER && getprio(0) == 0, "starts as SCHED_OTHER 0");
    test_calls();
    test_attr();
    test_proc_stat();
    test_behaviour();
    return t_done();
}
