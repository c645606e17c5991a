/*
 * futex: the raw futex(2) syscall: WAIT/WAKE, timeouts, bitsets, private
 * and shared (cross-process) futexes, requeue, and error cases.
 */
#include "common.h"
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>

/* musl-gcc has no kernel headers: the futex ABI constants. */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)
#define FUTEX_CMP_REQUEUE_PRIVATE (FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG)
#define FUTEX_BITSET_MATCH_ANY (-1)

static long futex(void *uaddr, int op, int val, const struct timespec *ts, void *uaddr2, int val3)
{
    return syscall(SYS_futex, uaddr, op, val, ts, uaddr2, val3);
}

static int word;

/* A waiter thread: announces itself, then waits until the word changes. */
struct waiter {
    int *addr;
    int op;
    int bitset;
    volatile int started;
    volatile long result;
    volatile int err;
};

static void *waiter_fn(void *p)
{
    struct waiter *w = p;
    __atomic_store_n(&w->started, 1, __ATOMIC_SEQ_CST);
    errno = 0;
    w->result = futex(w->addr, w->op, 0, NULL, NULL, w->bitset);
    w->err = errno;
    return NULL;
}

/* Wake until one waiter was woken (the waiter may not have slept yet). */
static long wake_until_one(int *addr, int op, int bitset)
{
    for (int i = 0; i < 2000; i++) {
        long r = futex(addr, op, 1, NULL, NULL, bitset);
        if (r != 0)
            return r;
        sleep_ms(1);
    }
    return 0;
}

static void test_basic(void)
{
    word = 1;
    EXPECT_ERR(EAGAIN, "FUTEX_WAIT with wrong value", futex(&word, FUTEX_WAIT, 0, NULL, NULL, 0));
    EXPECT_ERR(EAGAIN, "FUTEX_WAIT_PRIVATE with wrong value",
               futex(&word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));

    struct timespec to = { 0, 20 * 1000000L };
    int64_t t0 = mono_ns();
    EXPECT_ERR(ETIMEDOUT, "FUTEX_WAIT 20 ms timeout", futex(&word, FUTEX_WAIT, 1, &to, NULL, 0));
    int64_t dt = mono_ns() - t0;
    check(dt >= 20000000LL && dt < 2000000000LL, "FUTEX_WAIT timeout took >= 20 ms and < 2 s");
    t0 = mono_ns();
    EXPECT_ERR(ETIMEDOUT, "FUTEX_WAIT_PRIVATE 20 ms timeout",
               futex(&word, FUTEX_WAIT_PRIVATE, 1, &to, NULL, 0));
    dt = mono_ns() - t0;
    check(dt >= 20000000LL && dt < 2000000000LL, "FUTEX_WAIT_PRIVATE timeout took >= 20 ms");
    struct timespec zero = { 0, 0 };
    EXPECT_ERR(ETIMEDOUT, "FUTEX_WAIT zero timeout", futex(&word, FUTEX_WAIT, 1, &zero, NULL, 0));

    check(futex(&word, FUTEX_WAKE, 1, NULL, NULL, 0) == 0, "FUTEX_WAKE with no waiters returns 0");
    check(futex(&word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0) == 0,
          "FUTEX_WAKE_PRIVATE with no waiters returns 0");
}

static void test_wait_wake(int priv)
{
    const char *name = priv ? "FUTEX_WAIT_PRIVATE/FUTEX_WAKE_PRIVATE" : "FUTEX_WAIT/FUTEX_WAKE";
    static int w;
    w = 0;
    struct waiter wt = { .addr = &w, .op = priv ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT };
    pthread_t t;
    pthread_create(&t, NULL, waiter_fn, &wt);
    while (!wt.started)
        sched_yield();
    /* The word stays 0, so the waiter can only return by being woken. */
    long r = wake_until_one(&w, priv ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE, 0);
    pthread_join(t, NULL);
    check(r == 1 && wt.result == 0, "%s: one waiter woken, wait returns 0", name);
}

static void test_bitset(void)
{
    static int w;
    w = 0;
    struct waiter wt = { .addr = &w, .op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, .bitset = 0x1 };
    pthread_t t;
    pthread_create(&t, NULL, waiter_fn, &wt);
    while (!wt.started)
        sched_yield();
    sleep_ms(10);
    check(futex(&w, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0x2) == 0,
          "FUTEX_WAKE_BITSET with non-matching bitset wakes 0");
    long r = wake_until_one(&w, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 0x3);
    pthread_join(t, NULL);
    check(r == 1 && wt.result == 0, "FUTEX_WAKE_BITSET with matching bitset wakes the waiter");

    /* FUTEX_WAIT_BITSET timeouts are absolute. */
    struct timespec abs;
    clock_gettime(CLOCK_MONOTONIC, &abs);
    abs.tv_nsec += 20 * 1000000L;
    if (abs.tv_nsec >= 1000000000L) {
        abs.tv_sec++;
        abs.tv_nsec -= 1000000000L;
    }
    int64_t t0 = mono_ns();
    EXPECT_ERR(ETIMEDOUT, "FUTEX_WAIT_BITSET absolute MONOTONIC timeout",
               futex(&w, FUTEX_WAIT_BITSET, 0, &abs, NULL, FUTEX_BITSET_MATCH_ANY));
    int64_t dt = mono_ns() - t0;
    check(dt >= 15000000LL && dt < 2000000000LL, "FUTEX_WAIT_BITSET waited until the deadline");
    struct timespec past = { 1, 0 };
    EXPECT_ERR(ETIMEDOUT, "FUTEX_WAIT_BITSET deadline in the past",
               futex(&w, FUTEX_WAIT_BITSET, 0, &past, NULL, FUTEX_BITSET_MATCH_ANY));
    EXPECT_ERR(ETIMEDOUT, "FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME deadline in the past",
               futex(&w, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 0, &past, NULL, FUTEX_BITSET_MATCH_ANY));
    EXPECT_ERR(EINVAL, "FUTEX_WAIT_BITSET with bitset 0",
               futex(&w, FUTEX_WAIT_BITSET, 0, NULL, NULL, 0));
    EXPECT_ERR(EINVAL, "FUTEX_WAKE_BITSET with bitset 0",
               futex(&w, FUTEX_WAKE_BITSET, 1, NULL, NULL, 0));
}

static void test_many_waiters(void)
{
    static int w;
    w = 0;
    struct waiter wt[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        memset(&wt[i], 0, sizeof wt[i]);
        wt[i].addr = &w;
        wt[i].op = FUTEX_WAIT_PRIVATE;
        pthread_create(&t[i], NULL, waiter_fn, &wt[i]);
    }
    for (int i = 0; i < 4; i++)
        while (!wt[i].started)
            sched_yield();
    sleep_ms(20);
    /* Wake exactly one first. */
    long first = 0;
    for (int i = 0; i < 2000 && first == 0; i++) {
        first = futex(&w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        if (!first)
            sleep_ms(1);
    }
    check(first == 1, "FUTEX_WAKE(1) with 4 waiters wakes exactly 1");
    long total = first;
    for (int i = 0; i < 4000 && total < 4; i++) {
        total += futex(&w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
        if (total < 4)
            sleep_ms(1);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    check(total == 4, "FUTEX_WAKE(INT_MAX) wakes the rest: 4 in total");
}

static void test_requeue(void)
{
    static int a, b;
    a = 5;
    b = 0;
    EXPECT_ERR(EAGAIN, "FUTEX_CMP_REQUEUE with mismatching value",
               futex(&a, FUTEX_CMP_REQUEUE_PRIVATE, 1, (const struct timespec *)(long)INT_MAX, &b, 4));
    check(futex(&a, FUTEX_CMP_REQUEUE_PRIVATE, 1, (const struct timespec *)(long)INT_MAX, &b, 5) == 0,
          "FUTEX_CMP_REQUEUE with no waiters returns 0");

    /* Requeue a real waiter from a to b, then wake it via b. */
    a = 0;
    struct waiter wt = { .addr = &a, .op = FUTEX_WAIT_PRIVATE };
    pthread_t t;
    pthread_create(&t, NULL, waiter_fn, &wt);
    while (!wt.started)
        sched_yield();
    /* Linux 6.16+ resizes a process's private futex hash as threads are
     * created; once (in ~12 loaded host runs) a requeue racing that left
     * the waiter findable at the old address. Letting the new thread
     * settle first keeps the oracle's answer stable. */
    sleep_ms(20);
    long moved = 0;
    for (int i = 0; i < 2000 && moved == 0; i++) {
        /* wake 0, requeue up to 1 */
        moved = futex(&a, FUTEX_CMP_REQUEUE_PRIVATE, 0, (const struct timespec *)1L, &b, 0);
        if (!moved)
            sleep_ms(1);
    }
    check(moved == 1, "FUTEX_CMP_REQUEUE moves the waiter (returns 1)");
    check(futex(&a, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) == 0, "waking the old address finds nobody");
    check(futex(&b, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) == 1, "waking the new address wakes the waiter");
    pthread_join(t, NULL);
    check(wt.result == 0, "requeued waiter returns 0");
}

static void test_shared(void)
{
    int *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(w != MAP_FAILED, "shared mapping for a cross-process futex"))
        return;
    w[0] = 0; /* the futex word */
    w[1] = 0; /* child started */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        __atomic_store_n(&w[1], 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&w[0], __ATOMIC_SEQ_CST) == 0)
            futex(&w[0], FUTEX_WAIT, 0, NULL, NULL, 0);
        _exit(w[0] == 7 ? 0 : 1);
    }
    while (!__atomic_load_n(&w[1], __ATOMIC_SEQ_CST))
        sched_yield();
    /* While the word is 0 the child goes back to sleep after a wake-up. */
    long r = wake_until_one(&w[0], FUTEX_WAKE, 0);
    __atomic_store_n(&w[0], 7, __ATOMIC_SEQ_CST);
    futex(&w[0], FUTEX_WAKE, 1, NULL, NULL, 0);
    int st;
    wait_for(pid, &st, 0);
    check(r == 1, "shared FUTEX_WAKE wakes a waiter in another process");
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child woke up and saw the new value");
    munmap(w, 4096);
}

static void test_errors(void)
{
    struct timespec bad = { 0, 1000000000L };
    word = 0;
    EXPECT_ERR(EINVAL, "FUTEX_WAIT tv_nsec = 1e9", futex(&word, FUTEX_WAIT, 0, &bad, NULL, 0));
    struct timespec neg = { -1, 0 };
    EXPECT_ERR(EINVAL, "FUTEX_WAIT negative timeout", futex(&word, FUTEX_WAIT, 0, &neg, NULL, 0));
    EXPECT_ERR(EFAULT, "FUTEX_WAIT on address 4", futex((void *)4, FUTEX_WAIT, 0, NULL, NULL, 0));
    EXPECT_ERR(EFAULT, "FUTEX_WAIT on kernel address", futex(KERNEL_PTR, FUTEX_WAIT, 0, NULL, NULL, 0));
    EXPECT_ERR(EFAULT, "FUTEX_WAIT_PRIVATE on address 4", futex((void *)4, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
    EXPECT_ERR(EFAULT, "FUTEX_WAIT with bad timeout pointer", futex(&word, FUTEX_WAIT, 0, BAD_PTR, NULL, 0));
    EXPECT_ERR(EINVAL, "FUTEX_WAIT on unaligned address",
               futex((char *)&word + 1, FUTEX_WAIT, 0, NULL, NULL, 0));
    EXPECT_ERR(EINVAL, "FUTEX_WAKE on unaligned address",
               futex((char *)&word + 1, FUTEX_WAKE, 1, NULL, NULL, 0));
    EXPECT_ERR(ENOSYS, "futex unknown op 99", futex(&word, 99, 0, NULL, NULL, 0));
    EXPECT_ERR(ENOSYS, "futex unknown op 99|FUTEX_PRIVATE_FLAG", futex(&word, 99 | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    EXPECT_ERR(ENOSYS, "FUTEX_WAIT|FUTEX_CLOCK_REALTIME",
               futex(&word, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 0, NULL, NULL, 0));
}

int main(void)
{
    t_init("futex");
    test_basic();
    test_wait_wake(0);
    test_wait_wake(1);
    test_bitset();
    test_many_waiters();
    test_requeue();
    test_shared();
    test_errors();
    return t_done();
}
