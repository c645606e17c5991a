/*
 * smp_fork: fork/exit storms across CPUs.
 *
 *   - Several worker processes, pinned round-robin to the CPUs, each fork
 *     children in waves (a few alive at once, some of which fork and reap a
 *     grandchild), and reap them with waitpid(-1); every exit code must
 *     come back exactly once.
 *   - Threads of one process fork at the same time; each child must see
 *     its thread's memory as it was at the fork even though the thread
 *     overwrites it right after (copy-on-write under concurrency).
 *   - Children with threads spinning on other CPUs exit from the main
 *     thread: exit_group must stop the spinners and report the code.
 *
 * Afterwards nothing is left to reap: waitpid(-1) fails with ECHILD.
 */
#include "smp.h"

#include <sys/mman.h>

#define WORKERS 4
#define WAVES 8
#define WAVE 5
#define THREADS 4
#define THREAD_FORKS 20
#define SPINNER_PROCS 8
#define SPINNERS 3

static int child_code(int worker, int n)
{
    return (worker * WAVES * WAVE + n) % 251 + 1;
}

/* A grandchild-forking child: fork, reap, and pass the code through. */
static void child_body(int code)
{
    if (code % 3 == 0) {
        pid_t g = fork();
        if (g == 0)
            _exit(code);
        int st;
        if (g < 0 || wait_for(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != code)
            _exit(0);
    }
    _exit(code);
}

/* Returns the worker's exit status: 0 when every child came back right. */
static int storm_worker(int w)
{
    int pinned = smp_pin(smp_cpu_for(w));
    unsigned char seen[256] = { 0 };
    int bad = 0;
    for (int wave = 0; wave < WAVES; wave++) {
        for (int k = 0; k < WAVE; k++) {
            int code = child_code(w, wave * WAVE + k);
            pid_t pid = fork();
            if (pid == 0)
                child_body(code);
            if (pid < 0)
                bad++;
        }
        for (int k = 0; k < WAVE; k++) {
            int st;
            pid_t r = wait_for(-1, &st, 0);
            if (r <= 0 || !WIFEXITED(st)) {
                bad++;
                continue;
            }
            seen[WEXITSTATUS(st)]++;
        }
    }
    for (int n = 0; n < WAVES * WAVE; n++) {
        int code = child_code(w, n);
        if (seen[code] != 1)
            bad++;
        seen[code] = 0;
    }
    int st;
    if (waitpid(-1, &st, WNOHANG) != -1 || errno != ECHILD)
        bad++;
    return (bad ? 1 : 0) | (pinned ? 0 : 2);
}

static void storm(void)
{
    /* The parent pins itself too, so that a failure has a reason to show. */
    int parent_pinned = smp_pin(smp_cpu_for(0));
    pid_t pids[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        fflush(stdout);
        pids[w] = fork();
        if (pids[w] == 0)
            _exit(storm_worker(w));
    }
    int good = 0, pinned = 0;
    for (int w = 0; w < WORKERS; w++) {
        int st;
        if (pids[w] > 0 && wait_for(pids[w], &st, 0) == pids[w] && WIFEXITED(st)) {
            good += !(WEXITSTATUS(st) & 1);
            pinned += !(WEXITSTATUS(st) & 2);
        }
    }
    {
        int ok_ = parent_pinned && pinned == WORKERS;
        check(ok_, "storm: every worker runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(good == WORKERS, "storm: %d workers x %d children (some with grandchildren): every exit code once, "
                           "nothing left to reap", WORKERS, WAVES * WAVE);
}

/* Threads forking concurrently. Each thread has a slot in a private
 * (copy-on-write) page; it stores i, forks, and immediately stores a
 * different value. The child must report i. */
static volatile long slots[THREADS * 64];
static atomic_int cow_bad;
static atomic_int cow_pin_failures;
static struct smp_barrier fork_start;

static void *forker(void *arg)
{
    int t = (int)(long)arg;
    if (!smp_pin(smp_cpu_for(t)))
        atomic_fetch_add(&cow_pin_failures, 1);
    smp_barrier_wait(&fork_start);
    volatile long *slot = &slots[t * 64];
    for (int i = 0; i < THREAD_FORKS; i++) {
        long want = (t * THREAD_FORKS + i) % 200 + 1;
        *slot = want;
        pid_t pid = fork();
        if (pid == 0)
            _exit((int)*slot);
        *slot = -1;
        int st;
        if (pid < 0 || wait_for(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != want)
            atomic_fetch_add(&cow_bad, 1);
    }
    return NULL;
}

static void thread_forks(void)
{
    fflush(stdout);
    fork_start.parties = THREADS;
    pthread_t th[THREADS];
    int created = 0;
    for (long t = 0; t < THREADS; t++)
        created += pthread_create(&th[t], NULL, forker, (void *)t) == 0;
    if (!check(created == THREADS, "thread forks: %d threads created", THREADS))
        exit(t_done());
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    {
        int ok_ = cow_pin_failures == 0;
        check(ok_, "thread forks: every thread runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(cow_bad == 0, "thread forks: %d threads x %d forks, each child saw its thread's value at the fork",
          THREADS, THREAD_FORKS);
}

/* A child whose spinning threads must be stopped by exit_group. */
static atomic_int spinning;

static void *spinner(void *arg)
{
    long i = (long)arg;
    smp_pin(smp_cpu_for((int)i + 1));
    atomic_fetch_add(&spinning, 1);
    for (volatile unsigned long n = 0;; n++)
        ;
    return NULL;
}

static void spinner_exits(void)
{
    pid_t pids[SPINNER_PROCS];
    for (int p = 0; p < SPINNER_PROCS; p++) {
        fflush(stdout);
        pids[p] = fork();
        if (pids[p] == 0) {
            pthread_t th;
            for (long i = 0; i < SPINNERS; i++)
                if (pthread_create(&th, NULL, spinner, (void *)i) != 0)
                    _exit(99);
            /* Wait (yielding) until they are all running. */
            while (atomic_load(&spinning) < SPINNERS)
                sched_yield();
            exit(40 + p);
        }
    }
    int good = 0;
    for (int p = 0; p < SPINNER_PROCS; p++) {
        int st;
        if (pids[p] > 0 && wait_for(pids[p], &st, 0) == pids[p] && WIFEXITED(st) && WEXITSTATUS(st) == 40 + p)
            good++;
    }
    check(good == SPINNER_PROCS, "exit with %d threads spinning: %d children exited with their codes", SPINNERS,
          SPINNER_PROCS);
}

int main(void)
{
    t_init("smp_fork");
    check(smp_init() > 0, "sched_getaffinity lists at least one CPU");
    storm();
    thread_forks();
    spinner_exits();
    int st;
    EXPECT_ERR(ECHILD, "waitpid(-1) at the end (no zombies left)", waitpid(-1, &st, WNOHANG));
    return t_done();
}
