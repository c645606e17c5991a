/*
 * threads: pthread create/join/detach/exit, mutex, condition variables,
 * TLS, gettid, signals to a specific thread, exit_group from a thread.
 * (pthread_join relies on CLONE_CHILD_CLEARTID + futex wake by the kernel.)
 */
#include "common.h"
#include <pthread.h>
#include <sys/mman.h>

static long gettid_(void)
{
    return syscall(SYS_gettid);
}

/* ---- create/join ---- */
#define NTHREADS 16
struct targ {
    int idx;
    long tid;
    pid_t pid;
    void *stack_addr;
};

static void *simple(void *p)
{
    struct targ *a = p;
    int local;
    a->tid = gettid_();
    a->pid = getpid();
    a->stack_addr = &local;
    return (void *)(long)(a->idx * 3 + 1);
}

static void test_create_join(void)
{
    pthread_t th[NTHREADS];
    struct targ args[NTHREADS];
    int created = 0;
    for (int i = 0; i < NTHREADS; i++) {
        args[i].idx = i;
        if (pthread_create(&th[i], NULL, simple, &args[i]) == 0)
            created++;
    }
    check(created == NTHREADS, "pthread_create x%d", NTHREADS);
    int rets_ok = 1;
    for (int i = 0; i < created; i++) {
        void *ret;
        if (pthread_join(th[i], &ret) != 0 || ret != (void *)(long)(i * 3 + 1))
            rets_ok = 0;
    }
    check(rets_ok, "pthread_join returns each thread's value");
    int same_pid = 1, distinct_tid = 1, distinct_stack = 1;
    long main_tid = gettid_();
    for (int i = 0; i < created; i++) {
        if (args[i].pid != getpid())
            same_pid = 0;
        if (args[i].tid == main_tid || args[i].tid <= 0)
            distinct_tid = 0;
        for (int j = 0; j < i; j++) {
            if (args[i].tid == args[j].tid)
                distinct_tid = 0;
            if (args[i].stack_addr == args[j].stack_addr)
                distinct_stack = 0;
        }
    }
    check(same_pid, "getpid() in threads == process pid");
    check(distinct_tid, "gettid() in threads distinct and != main tid");
    check(distinct_stack, "threads run on distinct stacks");
    check(main_tid == getpid(), "main thread: gettid() == getpid()");

    /* Many sequential threads (stack reuse, tid reuse). */
    int ok = 1;
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        struct targ a = { .idx = i };
        void *ret;
        if (pthread_create(&t, NULL, simple, &a) != 0 || pthread_join(t, &ret) != 0 ||
            ret != (void *)(long)(i * 3 + 1))
            ok = 0;
    }
    check(ok, "200 sequential create+join");
}

/* ---- mutex ---- */
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *incr(void *p)
{
    (void)p;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&mtx);
        long v = counter;
        if ((i & 255) == 0)
            sched_yield(); /* provoke contention while holding the lock */
        counter = v + 1;
        pthread_mutex_unlock(&mtx);
    }
    return NULL;
}

static void test_mutex(void)
{
    pthread_t th[8];
    counter = 0;
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, incr, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    check(counter == 8 * 20000, "mutex: 8 threads x 20000 increments == 160000");

    check(pthread_mutex_trylock(&mtx) == 0, "trylock on free mutex");
    check(pthread_mutex_trylock(&mtx) == EBUSY, "trylock on held mutex -> EBUSY");
    pthread_mutex_unlock(&mtx);

    pthread_mutexattr_t at;
    pthread_mutex_t em;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_settype(&at, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&em, &at);
    pthread_mutex_lock(&em);
    check(pthread_mutex_lock(&em) == EDEADLK, "errorcheck mutex relock -> EDEADLK");
    pthread_mutex_unlock(&em);
    check(pthread_mutex_unlock(&em) == EPERM, "errorcheck mutex unlock when not owner -> EPERM");
}

/* ---- condition variable: bounded queue ---- */
#define QCAP 8
#define NPROD 4
#define NCONS 4
#define PER_PROD 5000
static int queue[QCAP];
static int qhead, qcount;
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;

static void qput(int v)
{
    pthread_mutex_lock(&qm);
    while (qcount == QCAP)
        pthread_cond_wait(&not_full, &qm);
    queue[(qhead + qcount) % QCAP] = v;
    qcount++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&qm);
}

static int qget(void)
{
    pthread_mutex_lock(&qm);
    while (qcount == 0)
        pthread_cond_wait(&not_empty, &qm);
    int v = queue[qhead];
    qhead = (qhead + 1) % QCAP;
    qcount--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&qm);
    return v;
}

static void *producer(void *p)
{
    (void)p;
    for (int i = 1; i <= PER_PROD; i++)
        qput(i);
    return NULL;
}

struct cons_res {
    long sum;
    long count;
};

static void *consumer(void *p)
{
    struct cons_res *r = p;
    for (;;) {
        int v = qget();
        if (v < 0)
            break;
        r->sum += v;
        r->count++;
    }
    return NULL;
}

static void test_condvar(void)
{
    pthread_t prod[NPROD], cons[NCONS];
    struct cons_res res[NCONS];
    memset(res, 0, sizeof res);
    for (int i = 0; i < NCONS; i++)
        pthread_create(&cons[i], NULL, consumer, &res[i]);
    for (int i = 0; i < NPROD; i++)
        pthread_create(&prod[i], NULL, producer, NULL);
    for (int i = 0; i < NPROD; i++)
        pthread_join(prod[i], NULL);
    for (int i = 0; i < NCONS; i++)
        qput(-1);
    long sum = 0, count = 0;
    for (int i = 0; i < NCONS; i++) {
        pthread_join(cons[i], NULL);
        sum += res[i].sum;
        count += res[i].count;
    }
    check(count == (long)NPROD * PER_PROD, "condvar queue: %d items consumed", NPROD * PER_PROD);
    check(sum == (long)NPROD * PER_PROD * (PER_PROD + 1) / 2, "condvar queue: exact sum");

    /* pthread_cond_timedwait times out. */
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&qm);
    int r = pthread_cond_timedwait(&c, &qm, &ts);
    pthread_mutex_unlock(&qm);
    check(r == ETIMEDOUT, "pthread_cond_timedwait -> ETIMEDOUT");
}

static pthread_cond_t bc = PTHREAD_COND_INITIALIZER;
static int bc_go, bc_woken;

static void *bc_waiter(void *p)
{
    (void)p;
    pthread_mutex_lock(&qm);
    while (!bc_go)
        pthread_cond_wait(&bc, &qm);
    bc_woken++;
    pthread_mutex_unlock(&qm);
    return NULL;
}

static void test_broadcast(void)
{
    pthread_t th[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&th[i], NULL, bc_waiter, NULL);
    sleep_ms(20);
    pthread_mutex_lock(&qm);
    bc_go = 1;
    pthread_cond_broadcast(&bc);
    pthread_mutex_unlock(&qm);
    for (int i = 0; i < 6; i++)
        pthread_join(th[i], NULL);
    check(bc_woken == 6, "pthread_cond_broadcast wakes 6 waiters");
}

/* ---- detach ---- */
static int detached_done;

static void *detached(void *p)
{
    (void)p;
    __atomic_store_n(&detached_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *exiter(void *p)
{
    (void)p;
    pthread_exit((void *)77);
    return NULL;
}

static void test_detach(void)
{
    pthread_t t;
    pthread_create(&t, NULL, detached, NULL);
    check(pthread_detach(t) == 0, "pthread_detach");
    for (int i = 0; i < 2000 && !__atomic_load_n(&detached_done, __ATOMIC_SEQ_CST); i++)
        sleep_ms(1);
    check(detached_done == 1, "detached thread ran");

    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    detached_done = 0;
    check(pthread_create(&t, &at, detached, NULL) == 0, "create with PTHREAD_CREATE_DETACHED");
    for (int i = 0; i < 2000 && !__atomic_load_n(&detached_done, __ATOMIC_SEQ_CST); i++)
        sleep_ms(1);
    check(detached_done == 1, "detached-at-create thread ran");

    void *ret = NULL;
    pthread_create(&t, NULL, exiter, NULL);
    pthread_join(t, &ret);
    check(ret == (void *)77, "pthread_exit value reaches pthread_join");

    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_JOINABLE);
    pthread_attr_setstacksize(&at, 1 << 20);
    check(pthread_create(&t, &at, exiter, NULL) == 0 && pthread_join(t, &ret) == 0 && ret == (void *)77,
          "thread with 1 MiB explicit stack size");
    pthread_attr_destroy(&at);
}

/* ---- TLS ---- */
static __thread int tls_var = 5;
static __thread char tls_buf[64];

static void *tls_thread(void *p)
{
    int id = (int)(long)p;
    int ok = tls_var == 5 && tls_buf[0] == 0;
    tls_var = id;
    snprintf(tls_buf, sizeof tls_buf, "t%d", id);
    for (int i = 0; i < 50; i++)
        sched_yield();
    char want[64];
    snprintf(want, sizeof want, "t%d", id);
    ok = ok && tls_var == id && strcmp(tls_buf, want) == 0;
    return (void *)(long)ok;
}

static void test_tls(void)
{
    tls_var = 1000;
    strcpy(tls_buf, "main");
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, tls_thread, (void *)(long)(i + 1));
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(th[i], &r);
        if (!r)
            ok = 0;
    }
    check(ok, "__thread: fresh initial value and distinct per thread");
    check(tls_var == 1000 && strcmp(tls_buf, "main") == 0, "__thread: main thread's copy untouched");
}

/* ---- signals to a thread ---- */
static volatile long sig_tid;

static void usr1(int sig)
{
    (void)sig;
    sig_tid = gettid_();
}

static volatile long target_tid;
static volatile int target_stop;

static void *target(void *p)
{
    (void)p;
    target_tid = gettid_();
    while (!target_stop)
        sleep_ms(1);
    return NULL;
}

static void test_thread_signal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, target, NULL);
    while (!target_tid)
        sched_yield();
    sig_tid = 0;
    check(pthread_kill(t, SIGUSR1) == 0, "pthread_kill(thread, SIGUSR1)");
    for (int i = 0; i < 2000 && !sig_tid; i++)
        sleep_ms(1);
    check(sig_tid == target_tid, "signal handled by the targeted thread");
    sig_tid = 0;
    check(syscall(SYS_tgkill, getpid(), target_tid, SIGUSR1) == 0, "tgkill(pid, tid, SIGUSR1)");
    for (int i = 0; i < 2000 && !sig_tid; i++)
        sleep_ms(1);
    check(sig_tid == target_tid, "tgkill signal handled by that thread");
    EXPECT_ERR(ESRCH, "tgkill(wrong tgid)", syscall(SYS_tgkill, 0x3fffffff, target_tid, SIGUSR1));
    target_stop = 1;
    pthread_join(t, NULL);
    signal(SIGUSR1, SIG_DFL);
}

/* ---- exit from a thread ends the process ---- */
static void *spinner(void *p)
{
    (void)p;
    for (;;)
        sleep_ms(1);
    return NULL;
}

static void *exit3(void *p)
{
    (void)p;
    sleep_ms(10);
    exit(3);
}

static int child_exit_group(void *arg)
{
    (void)arg;
    pthread_t a, b;
    pthread_create(&a, NULL, spinner, NULL);
    pthread_create(&b, NULL, exit3, NULL);
    for (;;)
        pause();
    return 0;
}

static void *mt_exit_main(void *p)
{
    (void)p;
    sleep_ms(20);
    _exit(9); /* will not happen before main's pthread_exit is observed */
}

static int child_main_exits(void *arg)
{
    (void)arg;
    /* The main thread pthread_exit()s; the process lives on until the last thread. */
    pthread_t t;
    pthread_create(&t, NULL, mt_exit_main, NULL);
    pthread_exit(NULL);
}

static void test_exit_group(void)
{
    int st = run_child(child_exit_group, NULL);
    check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3, "exit(3) in a thread ends the whole process");
    st = run_child(child_main_exits, NULL);
    check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 9,
          "main thread pthread_exit: process lives until last thread (exit 9)");
}


/* ---- raw clone(CLONE_THREAD) with CLONE_CHILD_CLEARTID / PARENT_SETTID ---- */
static volatile int raw_ran;
static volatile pid_t raw_ptid, raw_ctid;

static int raw_thread(void *arg)
{
    /* No libc calls here: this thread has no TLS of its own. */
    raw_ran = (int)(long)arg;
    return 0;
}

static int child_set_tid_address(void *arg)
{
    (void)arg;
    static int dummy;
    return syscall(SYS_set_tid_address, &dummy) == getpid() ? 0 : 1;
}

static void test_raw_clone(void)
{
    size_t sz = 64 * 1024;
    char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    raw_ctid = -1;
    raw_ptid = 0;
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    int tid = clone(raw_thread, stack + sz, flags, (void *)42L, &raw_ptid, NULL, &raw_ctid);
    check(tid > 0, "clone(CLONE_THREAD|CLONE_VM|...) returns a tid");
    check(raw_ptid == tid, "CLONE_PARENT_SETTID stored the tid before clone returned");
    /* Wait for the kernel to clear *ctid and futex-wake us. */
    int64_t t0 = mono_ns();
    while (1) {
        pid_t v = raw_ctid;
        if (v == 0)
            break;
        struct timespec to = { 0, 10 * 1000000L };
        syscall(SYS_futex, &raw_ctid, 0 /* FUTEX_WAIT */, v, &to, NULL, 0);
        if (mono_ns() - t0 > 5000000000LL)
            break;
    }
    check(raw_ctid == 0, "CLONE_CHILD_CLEARTID: kernel cleared the tid word at thread exit");
    check(raw_ran == 42, "raw clone thread ran with its argument");
    munmap(stack, sz);

    int st = run_child(child_set_tid_address, NULL);
    check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "set_tid_address returns the caller's tid");
}

int main(void)
{
    t_init("threads");
    test_create_join();
    test_mutex();
    test_condvar();
    test_broadcast();
    test_detach();
    test_tls();
    test_thread_signal();
    test_exit_group();
    test_raw_clone();
    return t_done();
}
