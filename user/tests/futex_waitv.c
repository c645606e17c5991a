/*
 * futex_waitv: futex_waitv(2) (Linux 5.16+): waiting on several 32-bit
 * futexes at once, which one woke it (the index), absolute timeouts on
 * CLOCK_MONOTONIC and CLOCK_REALTIME, shared futexes across processes,
 * and the argument errors in Linux's order.
 */
#include "common.h"
#include <pthread.h>
#include <sys/mman.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_32 2
#define FUTEX_WAITV_MAX 128

struct futex_waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};

static long waitv(struct futex_waitv *w, unsigned n, unsigned flags, const struct timespec *ts, int clk)
{
    return syscall(SYS_futex_waitv, w, n, flags, ts, clk);
}

static long wake(uint32_t *addr, int n, int private)
{
    return syscall(SYS_futex, addr, FUTEX_WAKE | (private ? FUTEX_PRIVATE_FLAG : 0), n, NULL, NULL, 0);
}

static uint32_t words[FUTEX_WAITV_MAX];
static struct futex_waitv vec[FUTEX_WAITV_MAX + 1];

static void fill(unsigned n, unsigned flags)
{
    for (unsigned i = 0; i < n; i++) {
        words[i] = i;
        vec[i] = (struct futex_waitv){ .val = i, .uaddr = (uintptr_t)&words[i], .flags = flags };
    }
}

/* An absolute deadline `ms` from now on `clk`. */
static struct timespec after_ms(int clk, long ms)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

struct sleeper {
    unsigned n;
    volatile int started;
    volatile long result;
    volatile int err;
};

static void *sleeper_fn(void *p)
{
    struct sleeper *s = p;
    __atomic_store_n(&s->started, 1, __ATOMIC_SEQ_CST);
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 5000);
    errno = 0;
    s->result = waitv(vec, s->n, 0, &ts, CLOCK_MONOTONIC);
    s->err = errno;
    return NULL;
}

/* Wakes words[index] until a waiter was woken (it may not sleep yet). */
static long wake_until_one(unsigned index, int private)
{
    for (int i = 0; i < 2000; i++) {
        long r = wake(&words[index], 1, private);
        if (r != 0)
            return r;
        sleep_ms(1);
    }
    return 0;
}

static void test_wake_index(unsigned n, unsigned index, unsigned flags)
{
    fill(n, flags);
    struct sleeper s = { .n = n };
    pthread_t t;
    pthread_create(&t, NULL, sleeper_fn, &s);
    while (!__atomic_load_n(&s.started, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    long r = wake_until_one(index, flags & FUTEX_PRIVATE_FLAG);
    pthread_join(t, NULL);
    check(r == 1, "%u futexes%s: a wake of #%u wakes one waiter", n,
          flags & FUTEX_PRIVATE_FLAG ? " (private)" : "", index);
    check(s.result == (long)index, "%u futexes: futex_waitv returns %u (got %ld, errno %d)", n, index, s.result,
          s.err);
    /* The other futexes were unqueued: nobody waits there any more. */
    long left = 0;
    for (unsigned i = 0; i < n; i++)
        left += wake(&words[i], 1, flags & FUTEX_PRIVATE_FLAG);
    check(left == 0, "%u futexes: no waiter left queued after the wake", n);
}

static void test_values(void)
{
    fill(3, FUTEX_32);
    words[2] = 7;
    EXPECT_ERR(EAGAIN, "third word differs", waitv(vec, 3, 0, NULL, 0));
    fill(3, FUTEX_32 | FUTEX_PRIVATE_FLAG);
    words[0] = 7;
    EXPECT_ERR(EAGAIN, "first word differs (private)", waitv(vec, 3, 0, NULL, 0));
    /* A val wider than 32 bits is refused (Linux 6.7+; 6.1 truncated it). */
    fill(2, FUTEX_32);
    words[1] = 5;
    vec[1].val = 0x100000005ULL;
    EXPECT_ERR(EINVAL, "val wider than 32 bits", waitv(vec, 2, 0, NULL, 0));
    vec[0].uaddr = 4;
    EXPECT_ERR(EINVAL, "val wider than 32 bits in #1 wins over bad address in #0", waitv(vec, 2, 0, NULL, 0));
}

static void test_timeouts(void)
{
    fill(4, FUTEX_32 | FUTEX_PRIVATE_FLAG);
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 30);
    int64_t t0 = mono_ns();
    EXPECT_ERR(ETIMEDOUT, "CLOCK_MONOTONIC deadline 30 ms ahead", waitv(vec, 4, 0, &ts, CLOCK_MONOTONIC));
    int64_t dt = mono_ns() - t0;
    check(dt >= 20000000LL && dt < 2000000000LL, "monotonic deadline: slept >= 20 ms and < 2 s");
    ts = after_ms(CLOCK_REALTIME, 30);
    t0 = mono_ns();
    EXPECT_ERR(ETIMEDOUT, "CLOCK_REALTIME deadline 30 ms ahead", waitv(vec, 4, 0, &ts, CLOCK_REALTIME));
    dt = mono_ns() - t0;
    check(dt >= 20000000LL && dt < 2000000000LL, "realtime deadline: slept >= 20 ms and < 2 s");
    struct timespec past = { 1, 0 };
    EXPECT_ERR(ETIMEDOUT, "monotonic deadline in the past", waitv(vec, 4, 0, &past, CLOCK_MONOTONIC));
    EXPECT_ERR(ETIMEDOUT, "realtime deadline in the past", waitv(vec, 4, 0, &past, CLOCK_REALTIME));
}

static void test_shared(void)
{
    uint32_t *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    w[0] = 0;
    w[1] = 0;
    pid_t pid = fork();
    if (pid == 0) {
        struct futex_waitv v[2] = {
            { .val = 0, .uaddr = (uintptr_t)&w[0], .flags = FUTEX_32 },
            { .val = 0, .uaddr = (uintptr_t)&w[1], .flags = FUTEX_32 },
        };
        struct timespec ts = after_ms(CLOCK_MONOTONIC, 5000);
        w[2] = 1;
        long r = waitv(v, 2, 0, &ts, CLOCK_MONOTONIC);
        _exit(r == 1 ? 0 : 10 + (r < 0 ? errno : 50));
    }
    while (!__atomic_load_n(&w[2], __ATOMIC_SEQ_CST))
        sleep_ms(1);
    long r = 0;
    for (int i = 0; i < 2000 && r == 0; i++) {
        r = wake(&w[1], 1, 0);
        if (r == 0)
            sleep_ms(1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(r == 1, "shared futex: a wake in the parent finds the child's waiter");
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "shared futex: the child's futex_waitv returned 1 (status %d)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    munmap(w, 4096);
}

static void test_errors(void)
{
    struct timespec ts = after_ms(CLOCK_MONOTONIC, 1);
    fill(2, FUTEX_32);
    EXPECT_ERR(EINVAL, "flags 1", waitv(vec, 2, 1, NULL, 0));
    EXPECT_ERR(EINVAL, "nr_futexes 0", waitv(vec, 0, 0, NULL, 0));
    EXPECT_ERR(EINVAL, "nr_futexes 129", waitv(vec, FUTEX_WAITV_MAX + 1, 0, NULL, 0));
    EXPECT_ERR(EINVAL, "NULL waiters", waitv(NULL, 2, 0, NULL, 0));
    EXPECT_ERR(EINVAL, "clock CLOCK_BOOTTIME", waitv(vec, 2, 0, &ts, CLOCK_BOOTTIME));
    EXPECT_ERR(EINVAL, "clock 99 before a bad timeout pointer", waitv(vec, 2, 0, BAD_PTR, 99));
    EXPECT_ERR(EFAULT, "bad timeout pointer", waitv(vec, 2, 0, BAD_PTR, CLOCK_MONOTONIC));
    struct timespec bad = { 0, 1000000000L };
    EXPECT_ERR(EINVAL, "tv_nsec 1e9", waitv(vec, 2, 0, &bad, CLOCK_MONOTONIC));
    struct timespec neg = { -1, 0 };
    EXPECT_ERR(EINVAL, "negative tv_sec", waitv(vec, 2, 0, &neg, CLOCK_REALTIME));
    EXPECT_ERR(EFAULT, "waiters at address 8", waitv((void *)8, 2, 0, NULL, 0));
    EXPECT_ERR(EFAULT, "waiters at a kernel address", waitv(KERNEL_PTR, 2, 0, NULL, 0));
    vec[1].flags = 0;
    EXPECT_ERR(EINVAL, "entry without FUTEX_32", waitv(vec, 2, 0, NULL, 0));
    vec[1].flags = FUTEX_32 | 1;
    EXPECT_ERR(EINVAL, "entry with flag bit 0", waitv(vec, 2, 0, NULL, 0));
    vec[1].flags = FUTEX_32 | 256;
    EXPECT_ERR(EINVAL, "entry with FUTEX_CLOCK_REALTIME", waitv(vec, 2, 0, NULL, 0));
    vec[1].flags = FUTEX_32;
    vec[1].reserved = 1;
    EXPECT_ERR(EINVAL, "entry with __reserved set", waitv(vec, 2, 0, NULL, 0));
    /* Entries are all read before any key is checked. */
    fill(2, FUTEX_32);
    vec[0].uaddr = 4;
    vec[1].flags = 0;
    EXPECT_ERR(EINVAL, "bad flags in #1 win over bad address in #0", waitv(vec, 2, 0, NULL, 0));
    fill(2, FUTEX_32);
    vec[0].uaddr = 4;
    words[1] = 9;
    EXPECT_ERR(EFAULT, "shared futex at address 4 before a differing word", waitv(vec, 2, 0, NULL, 0));
    fill(2, FUTEX_32 | FUTEX_PRIVATE_FLAG);
    vec[1].uaddr = 4;
    EXPECT_ERR(EFAULT, "private futex at address 4", waitv(vec, 2, 0, NULL, 0));
    fill(2, FUTEX_32 | FUTEX_PRIVATE_FLAG);
    vec[1].uaddr = (uintptr_t)KERNEL_PTR;
    EXPECT_ERR(EFAULT, "private futex at a kernel address", waitv(vec, 2, 0, NULL, 0));
    fill(2, FUTEX_32);
    vec[1].uaddr = (uintptr_t)&words[1] + 1;
    words[0] = 9;
    EXPECT_ERR(EINVAL, "unaligned futex before a differing word", waitv(vec, 2, 0, NULL, 0));
    /* The vector runs off the end of a mapping. */
    char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page + 4096, 4096);
    struct futex_waitv *tail = (struct futex_waitv *)(page + 4096 - sizeof(struct futex_waitv));
    *tail = (struct futex_waitv){ .val = 1, .uaddr = (uintptr_t)&words[0], .flags = FUTEX_32 };
    EXPECT_ERR(EFAULT, "vector crossing into an unmapped page", waitv(tail, 2, 0, NULL, 0));
    munmap(page, 4096);
}

int main(void)
{
    t_init("futex_waitv");
    test_values();
    test_timeouts();
    test_wake_index(1, 0, FUTEX_32);
    test_wake_index(3, 1, FUTEX_32 | FUTEX_PRIVATE_FLAG);
    test_wake_index(FUTEX_WAITV_MAX, FUTEX_WAITV_MAX - 1, FUTEX_32);
    test_wake_index(FUTEX_WAITV_MAX, 64, FUTEX_32 | FUTEX_PRIVATE_FLAG);
    test_shared();
    test_errors();
    return t_done();
}
