/*
 * Helpers for the SMP test programs (smp_*.c).
 *
 * Their output must not depend on how many CPUs there are: the host that
 * produces the oracle output has its own count, and Kiln runs them at
 * -smp 1, 2 and 4.  So the CPU count decides which CPUs workers are
 * pinned to, and is never printed.
 */
#ifndef KILN_TEST_SMP_H
#define KILN_TEST_SMP_H

#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define SMP_MAX_CPUS 64

/* The CPUs this process may run on, in increasing order (filled once). */
static int smp_cpu_list[SMP_MAX_CPUS];
static int smp_ncpus;
/* The first pinning failure in this process, for the failure message of
 * the check that reports it (a check that passes prints the same text on
 * every machine). */
static char smp_pin_problem[96];
static atomic_int smp_pin_problem_claimed;

static UNUSED void smp_note_problem(const char *what, int cpu, int e)
{
    if (atomic_exchange(&smp_pin_problem_claimed, 1))
        return;
    snprintf(smp_pin_problem, sizeof smp_pin_problem, " [first problem: %s, CPU %d: %s]", what, cpu, errname(e));
}

/* What to append to a pinning check: nothing when it passed. */
static UNUSED const char *smp_why(int ok)
{
    return ok ? "" : smp_pin_problem;
}

/* Reads the affinity mask. Returns the number of CPUs in it (0 on error,
 * with smp_affinity_errno set). The size returned by the raw syscall must
 * be a positive multiple of 8 (Linux returns the size of its cpumask). */
static UNUSED int smp_init(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    long r = syscall(SYS_sched_getaffinity, 0, sizeof set, &set);
    if (r <= 0 || r % 8 != 0) {
        smp_note_problem("sched_getaffinity", -1, r < 0 ? errno : EINVAL);
        smp_cpu_list[0] = 0;
        smp_ncpus = 0;
        return 0;
    }
    smp_ncpus = 0;
    for (int c = 0; c < SMP_MAX_CPUS && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            smp_cpu_list[smp_ncpus++] = c;
    return smp_ncpus;
}

/* The CPU that worker i should run on: workers spread round-robin. */
static UNUSED int smp_cpu_for(int i)
{
    if (smp_ncpus <= 0)
        return 0;
    return smp_cpu_list[i % smp_ncpus];
}

/* The CPU the caller runs on, from getcpu(2); -1 on error. */
static UNUSED int smp_current_cpu(void)
{
    unsigned cpu = 0, node = 0;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0)
        return -1;
    return (int)cpu;
}

/* Pins the calling thread to one CPU and checks, through getcpu, that it
 * now runs there. Returns 1 on success; 0 (and records errno) if either
 * step failed. */
static UNUSED int smp_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        smp_note_problem("sched_setaffinity", cpu, errno);
        return 0;
    }
    int now = smp_current_cpu();
    if (now < 0) {
        smp_note_problem("getcpu", cpu, errno);
        return 0;
    }
    if (now != cpu) {
        char what[48];
        snprintf(what, sizeof what, "getcpu says CPU %d", now);
        smp_note_problem(what, cpu, 0);
        return 0;
    }
    return 1;
}

/* A spinning start line: every party arrives, then all leave together, so
 * the workers' loops overlap as much as the CPUs allow. It spins with
 * sched_yield so that on one CPU the waiters let the others run. */
struct smp_barrier {
    atomic_int arrived;
    int parties;
};

static UNUSED void smp_barrier_wait(struct smp_barrier *b)
{
    atomic_fetch_add(&b->arrived, 1);
    while (atomic_load(&b->arrived) < b->parties)
        sched_yield();
}

#endif
