/*
 * smp_race: the /dev/mymem lost-update race on real parallel CPUs
 * (Kiln-only: the host has no /dev/mymem; run only at -smp 2 or more).
 *
 * One worker thread per CPU (at most 4), each pinned to its own CPU,
 * increments the 8-byte counter at offset 0:
 *   - unlocked: pread, add one, pwrite. Two CPUs that read the same value
 *     both write value+1, so updates are lost: actual < expected. Whether
 *     a given run overlaps enough is up to the host, so a run that loses
 *     nothing is retried, up to ATTEMPTS times.
 *   - atomic: the MYMEM_IOC_ADD ioctl, the kernel-side fix: actual ==
 *     expected, every time.
 *
 * The first line, "online CPUs: N", lets the test runner check that the
 * kernel really brought up every CPU it was given.
 */
#include "smp.h"
#include "../mymem/mymem.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#define MAX_WORKERS 4
#define ROUNDS 20000
#define ATTEMPTS 5
#define ATOMIC_RUNS 2

static int fd;
static int atomic_mode;
static atomic_int errors;
static atomic_int pin_failures;
static struct smp_barrier start;

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    if (!smp_pin(smp_cpu_for(id)))
        atomic_fetch_add(&pin_failures, 1);
    smp_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        if (atomic_mode) {
            struct mymem_add a = { .offset = 0, .value = 1 };
            if (ioctl(fd, MYMEM_IOC_ADD, &a) != 0)
                atomic_fetch_add(&errors, 1);
            continue;
        }
        uint64_t v;
        if (pread(fd, &v, 8, 0) != 8)
            atomic_fetch_add(&errors, 1);
        v++;
        if (pwrite(fd, &v, 8, 0) != 8)
            atomic_fetch_add(&errors, 1);
    }
    return NULL;
}

/* One run with `workers` threads; returns the final counter. */
static uint64_t run(int workers, int atomic)
{
    uint64_t zero = 0, actual = 0;
    if (pwrite(fd, &zero, 8, 0) != 8)
        atomic_fetch_add(&errors, 1);
    atomic_mode = atomic;
    start.arrived = 0;
    start.parties = workers;
    pthread_t th[MAX_WORKERS];
    for (long i = 0; i < workers; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
            atomic_fetch_add(&errors, 1);
    for (int i = 0; i < workers; i++)
        pthread_join(th[i], NULL);
    if (pread(fd, &actual, 8, 0) != 8)
        atomic_fetch_add(&errors, 1);
    return actual;
}

int main(void)
{
    t_init("smp_race");
    printf("online CPUs: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    int ncpus = smp_init();
    fd = open("/dev/mymem", O_RDWR);
    if (!check(fd >= 0, "open /dev/mymem"))
        return t_done();
    if (!check(ncpus >= 2, "at least two CPUs in the affinity mask (have %d)", ncpus))
        return t_done();
    int workers = ncpus < MAX_WORKERS ? ncpus : MAX_WORKERS;
    uint64_t expected = (uint64_t)workers * ROUNDS;

    int lost_in = 0;
    for (int attempt = 1; attempt <= ATTEMPTS && !lost_in; attempt++) {
        uint64_t actual = run(workers, 0);
        printf("unlocked attempt %d: %d threads x %d rounds: expected %llu actual %llu (%.2f%% lost)\n", attempt,
               workers, ROUNDS, (unsigned long long)expected, (unsigned long long)actual,
               100.0 * (double)(expected - actual) / (double)expected);
        if (actual < expected)
            lost_in = attempt;
        else if (actual > expected)
            break;
    }
    {
        int ok_ = pin_failures == 0;
        check(ok_, "every worker runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(lost_in > 0, "unlocked pread+pwrite from %d CPUs loses updates (within %d attempts)", workers, ATTEMPTS);

    int exact = 0;
    for (int r = 0; r < ATOMIC_RUNS; r++) {
        uint64_t actual = run(workers, 1);
        printf("atomic run %d: %d threads x %d rounds: expected %llu actual %llu\n", r + 1, workers, ROUNDS,
               (unsigned long long)expected, (unsigned long long)actual);
        exact += actual == expected;
    }
    check(exact == ATOMIC_RUNS, "MYMEM_IOC_ADD from %d CPUs loses nothing (%d runs)", workers, ATOMIC_RUNS);
    check(errors == 0, "no read, write or ioctl failed");
    close(fd);
    return t_done();
}
