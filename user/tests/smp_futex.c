/*
 * smp_futex: futex contention across CPUs.  Worker threads (and processes)
 * pinned round-robin to the CPUs increment shared counters under
 *   - a hand-rolled futex mutex (FUTEX_WAIT/FUTEX_WAKE, private),
 *   - a pthread mutex,
 *   - the hand-rolled mutex on a MAP_SHARED page across processes
 *     (shared futexes);
 * every count must be exact and no two workers may ever be inside the
 * critical section together.  Then two threads hand a token back and
 * forth through futex wait/wake: a wait that times out (10 s) although
 * its partner had already moved the token is a lost wakeup.
 */
#include "smp.h"

#include <sys/mman.h>

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)

#define WORKERS 4
#define INCREMENTS 20000
#define PROCS 3
#define PROC_INCREMENTS 10000
#define HANDOFFS 5000

static long futex(atomic_int *uaddr, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* Drepper's mutex ("Futexes are tricky", mutex 2): 0 free, 1 locked,
 * 2 locked with waiters. `op_flag` is FUTEX_PRIVATE_FLAG or 0. */
struct fmutex {
    atomic_int word;
    int private;
};

static void fm_lock(struct fmutex *m)
{
    int op = FUTEX_WAIT | (m->private ? FUTEX_PRIVATE_FLAG : 0);
    int c = 0;
    if (atomic_compare_exchange_strong(&m->word, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&m->word, 2);
    while (c != 0) {
        futex(&m->word, op, 2, NULL);
        c = atomic_exchange(&m->word, 2);
    }
}

static void fm_unlock(struct fmutex *m)
{
    int op = FUTEX_WAKE | (m->private ? FUTEX_PRIVATE_FLAG : 0);
    if (atomic_fetch_sub(&m->word, 1) != 1) {
        atomic_store(&m->word, 0);
        futex(&m->word, op, 1, NULL);
    }
}

/* What the workers share. The counter is a plain (non-atomic) variable:
 * only the lock protects it. `inside` counts workers in the critical
 * section; seeing it above 1 is a mutual-exclusion failure. */
struct shared {
    struct fmutex fm;
    pthread_mutex_t pm;
    volatile long counter;
    atomic_int inside;
    atomic_int overlaps;
    atomic_int pin_failures;
    struct smp_barrier start;
};

static struct shared *sh;
static int use_pthread;

static void critical(long *mine)
{
    if (atomic_fetch_add(&sh->inside, 1) != 0)
        atomic_fetch_add(&sh->overlaps, 1);
    long v = sh->counter;
    /* Widen the window between the load and the store. */
    for (volatile int k = 0; k < 4; k++)
        ;
    sh->counter = v + 1;
    atomic_fetch_sub(&sh->inside, 1);
    (*mine)++;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    if (!smp_pin(smp_cpu_for((int)id)))
        atomic_fetch_add(&sh->pin_failures, 1);
    smp_barrier_wait(&sh->start);
    long mine = 0;
    for (int i = 0; i < INCREMENTS; i++) {
        if (use_pthread) {
            pthread_mutex_lock(&sh->pm);
            critical(&mine);
            pthread_mutex_unlock(&sh->pm);
        } else {
            fm_lock(&sh->fm);
            critical(&mine);
            fm_unlock(&sh->fm);
        }
    }
    return (void *)mine;
}

static void reset(int private)
{
    sh->fm.word = 0;
    sh->fm.private = private;
    sh->counter = 0;
    sh->inside = 0;
    sh->overlaps = 0;
    sh->pin_failures = 0;
    sh->start.arrived = 0;
}

static void thread_contention(const char *what, int pthread)
{
    reset(1);
    use_pthread = pthread;
    sh->start.parties = WORKERS;
    pthread_t th[WORKERS];
    int created = 0;
    for (long i = 0; i < WORKERS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)i) == 0)
            created++;
    if (!check(created == WORKERS, "%s: %d threads created", what, WORKERS))
        exit(t_done());
    long sum = 0;
    for (int i = 0; i < WORKERS; i++) {
        void *r;
        pthread_join(th[i], &r);
        sum += (long)r;
    }
    {
        int ok_ = sh->pin_failures == 0;
        check(ok_, "%s: every thread runs on the CPU it was pinned to%s", what, smp_why(ok_));
    }
    check(sum == (long)WORKERS * INCREMENTS, "%s: workers did %d increments each", what, INCREMENTS);
    check(sh->counter == (long)WORKERS * INCREMENTS, "%s: counter is exactly %d", what, WORKERS * INCREMENTS);
    check(sh->overlaps == 0, "%s: never two threads in the critical section", what);
    check(sh->fm.word == 0, "%s: futex word is 0 (unlocked) at the end", what);
}

static void process_contention(void)
{
    reset(0);
    sh->start.parties = PROCS;
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        fflush(stdout);
        pids[p] = fork();
        if (pids[p] == 0) {
            if (!smp_pin(smp_cpu_for(p)))
                atomic_fetch_add(&sh->pin_failures, 1);
            smp_barrier_wait(&sh->start);
            long mine = 0;
            for (int i = 0; i < PROC_INCREMENTS; i++) {
                fm_lock(&sh->fm);
                critical(&mine);
                fm_unlock(&sh->fm);
            }
            _exit(mine == PROC_INCREMENTS ? 0 : 1);
        }
    }
    int good = 0;
    for (int p = 0; p < PROCS; p++) {
        int st;
        if (pids[p] > 0 && wait_for(pids[p], &st, 0) == pids[p] && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            good++;
    }
    check(good == PROCS, "shared futex mutex: %d processes exited 0", PROCS);
    {
        int ok_ = sh->pin_failures == 0;
        check(ok_, "shared futex mutex: every process runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(sh->counter == (long)PROCS * PROC_INCREMENTS, "shared futex mutex: counter is exactly %d",
          PROCS * PROC_INCREMENTS);
    check(sh->overlaps == 0, "shared futex mutex: never two processes in the critical section");
    check(sh->fm.word == 0, "shared futex mutex: futex word is 0 at the end");
}

/* Token handoff: `turn` alternates 0 (ping's move) and 1 (pong's move). */
static atomic_int turn;
static atomic_int lost_wakeups;
static atomic_int bad_turns;
static atomic_int handoff_pin_failures;

static void wait_turn(int me)
{
    const struct timespec limit = { 10, 0 };
    for (;;) {
        int t = atomic_load(&turn);
        if (t == me)
            return;
        long r = futex(&turn, FUTEX_WAIT_PRIVATE, t, &limit);
        if (r == -1 && errno == ETIMEDOUT && atomic_load(&turn) == me)
            atomic_fetch_add(&lost_wakeups, 1);
    }
}

static void *handoff(void *arg)
{
    int me = (int)(long)arg;
    if (!smp_pin(smp_cpu_for(me)))
        atomic_fetch_add(&handoff_pin_failures, 1);
    for (int i = 0; i < HANDOFFS; i++) {
        wait_turn(me);
        if (atomic_load(&turn) != me)
            atomic_fetch_add(&bad_turns, 1);
        atomic_store(&turn, !me);
        futex(&turn, FUTEX_WAKE_PRIVATE, 1, NULL);
    }
    return NULL;
}

static void handoffs(void)
{
    pthread_t a, b;
    turn = 0;
    int ok = pthread_create(&a, NULL, handoff, (void *)0L) == 0;
    ok &= pthread_create(&b, NULL, handoff, (void *)1L) == 0;
    if (!check(ok, "handoff: two threads created"))
        return;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    {
        int ok_ = handoff_pin_failures == 0;
        check(ok_, "handoff: each thread runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(bad_turns == 0, "handoff: %d wait/wake round trips in strict alternation", HANDOFFS);
    check(lost_wakeups == 0, "handoff: no wakeup lost (no 10 s timeout after the partner moved)");
    check(turn == 0, "handoff: the token ends with the first thread");
}

int main(void)
{
    t_init("smp_futex");
    check(smp_init() > 0, "sched_getaffinity lists at least one CPU");
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(sh != MAP_FAILED, "shared page for the counters"))
        return t_done();
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->pm, &ma);

    thread_contention("futex mutex", 0);
    thread_contention("pthread mutex", 1);
    process_contention();
    handoffs();
    return t_done();
}
