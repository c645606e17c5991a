/*
 * smp_mm: one address space changed while other CPUs use it.
 *
 * Toucher threads (pinned round-robin to the CPUs) loop over
 *   - their own slice of a stable region, writing a known pattern and
 *     reading it back, and
 *   - a churn region, reading then writing one word per page that only
 *     they write; a SIGSEGV there is expected (sigsetjmp/siglongjmp per
 *     thread) and counted, never printed.
 * Meanwhile the churn thread cycles that region through mprotect
 * (read-only, none), munmap and mmap(MAP_FIXED), and a mapper thread
 * maps, fills, checks and unmaps regions of its own.
 *
 * Invariants (all exact, none timing-dependent):
 *   - a fault only ever happens in the churn region;
 *   - a word read from the churn region is 0 (fresh mapping) or the value
 *     its toucher last wrote successfully: never another frame's data;
 *   - while the churn region is read-only nothing in it changes (a write
 *     through a stale TLB entry would);
 *   - pages the churn thread maps right after an munmap are zero and keep
 *     what it writes (a write through a stale entry into the freed frames
 *     would show up there);
 *   - the stable region holds exactly what its owners wrote (checksum).
 */
#include "smp.h"

#include <setjmp.h>
#include <sys/mman.h>

#define PAGE 4096
#define WORDS (PAGE / 8)
#define TOUCHERS 3
#define SLICE_PAGES 8
#define STABLE_PAGES (TOUCHERS * SLICE_PAGES)
#define STABLE_ROUNDS 60
#define CHURN_PAGES 8
#define CYCLES 150
#define SCRATCH_PAGES 8
#define MAPPER_PAGES 16 /* larger than the churn hole: never lands in it */
#define MAPPER_ROUNDS 200
#define TAG 0x5eed000000000000ULL

static uint64_t *stable;
static char *churn;
static char *scratch;
static atomic_int churn_done;
static struct smp_barrier start;

struct toucher {
    pthread_t th;
    int id;
    int pinned;
    volatile long passes;
    volatile long faults;
    volatile long stray_faults;
    volatile long bad_values;
    volatile long stable_bad;
    volatile uint64_t seq;
    uint64_t last[CHURN_PAGES];
};

static struct toucher touchers[TOUCHERS];
static __thread sigjmp_buf fault_jump;
static __thread volatile int armed;
static atomic_int unarmed_faults;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    char *a = si->si_addr;
    if (!armed || a < churn || a >= churn + CHURN_PAGES * PAGE) {
        /* Not where a fault may happen: record it and stop this thread's
         * access (or the process, if nobody is ready for it). */
        atomic_fetch_add(&unarmed_faults, 1);
        if (!armed)
            _exit(70);
    }
    siglongjmp(fault_jump, 1);
}

static uint64_t stable_value(int t, int round, int i)
{
    uint64_t x = ((uint64_t)t << 40) ^ ((uint64_t)round << 20) ^ (uint64_t)i;
    x *= 0x9e3779b97f4a7c15ULL;
    return x ^ (x >> 29);
}

static void stable_round(struct toucher *me, int round)
{
    uint64_t *slice = stable + (size_t)me->id * SLICE_PAGES * WORDS;
    for (int i = 0; i < SLICE_PAGES * WORDS; i += 8)
        slice[i] = stable_value(me->id, round, i);
    for (int i = 0; i < SLICE_PAGES * WORDS; i += 8)
        if (slice[i] != stable_value(me->id, round, i))
            me->stable_bad++;
}

static void churn_pass(struct toucher *me)
{
    for (int p = 0; p < CHURN_PAGES; p++) {
        volatile uint64_t *w = (volatile uint64_t *)(churn + (size_t)p * PAGE) + me->id * 8;
        if (sigsetjmp(fault_jump, 0) == 0) {
            armed = 1;
            uint64_t v = *w;
            if (v != 0 && v != me->last[p])
                me->bad_values++;
            uint64_t nv = TAG | ((uint64_t)me->id << 32) | ++me->seq;
            *w = nv;
            me->last[p] = nv;
            armed = 0;
        } else {
            armed = 0;
            me->faults++;
            /* Was it in the churn region? on_segv checked. */
        }
    }
}

static void *toucher_main(void *arg)
{
    struct toucher *me = arg;
    me->pinned = smp_pin(smp_cpu_for(me->id + 1));
    smp_barrier_wait(&start);
    int round = 0;
    while (round < STABLE_ROUNDS || !atomic_load(&churn_done)) {
        if (round < STABLE_ROUNDS)
            stable_round(me, round++);
        churn_pass(me);
        me->passes++;
        /* On one CPU, let the churn thread go on. */
        sched_yield();
    }
    return NULL;
}

/* Waits until every toucher finished a pass that started after now, so
 * they have certainly tried the region in its current state. Bounded by
 * 10 s so a stalled vCPU cannot hang the test (it only weakens it). */
static void let_touchers_run(void)
{
    long seen[TOUCHERS];
    for (int t = 0; t < TOUCHERS; t++)
        seen[t] = touchers[t].passes;
    int64_t deadline = mono_ns() + 10000000000LL;
    for (int t = 0; t < TOUCHERS; t++)
        while (touchers[t].passes < seen[t] + 2 && mono_ns() < deadline)
            sched_yield();
}

struct churn_result {
    int pinned;
    int syscall_failures;
    int ro_changed;
    int scratch_not_zero;
    int scratch_changed;
};

static void churn_main(struct churn_result *r)
{
    static uint64_t snap[CHURN_PAGES * WORDS];
    const size_t len = CHURN_PAGES * PAGE;
    r->pinned = smp_pin(smp_cpu_for(0));
    smp_barrier_wait(&start);
    for (int c = 0; c < CYCLES; c++) {
        /* Read-only: nothing may change while it is. */
        if (mprotect(churn, len, PROT_READ) != 0)
            r->syscall_failures++;
        memcpy(snap, churn, len);
        if (c % 2 == 0)
            let_touchers_run();
        if (memcmp(snap, churn, len) != 0)
            r->ro_changed++;
        if (mprotect(churn, len, PROT_NONE) != 0)
            r->syscall_failures++;
        if (c % 3 == 0 && mprotect(churn, len, PROT_READ | PROT_WRITE) != 0)
            r->syscall_failures++;
        /* Unmap, and take fresh frames (likely the ones just freed) for
         * the scratch pages; they must be zero and stay as written. */
        if (munmap(churn, len) != 0)
            r->syscall_failures++;
        if (mmap(scratch, SCRATCH_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                 0) != scratch)
            r->syscall_failures++;
        for (int p = 0; p < SCRATCH_PAGES; p++) {
            uint64_t *pg = (uint64_t *)(scratch + (size_t)p * PAGE);
            pg[0] = 1 + (uint64_t)c;
            for (int i = 1; i < WORDS; i++)
                if (pg[i] != 0) {
                    r->scratch_not_zero++;
                    break;
                }
        }
        if (c % 2 == 1)
            let_touchers_run();
        for (int p = 0; p < SCRATCH_PAGES; p++) {
            uint64_t *pg = (uint64_t *)(scratch + (size_t)p * PAGE);
            int changed = pg[0] != 1 + (uint64_t)c;
            for (int i = 1; i < WORDS && !changed; i++)
                changed = pg[i] != 0;
            r->scratch_changed += changed;
        }
        /* Free the scratch frames without leaving a hole. */
        if (mmap(scratch, SCRATCH_PAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != scratch)
            r->syscall_failures++;
        /* Back: fresh zero pages, sometimes mapped PROT_NONE first and
         * opened with mprotect, sometimes replaced by a second MAP_FIXED. */
        int prot = c % 4 == 1 ? PROT_NONE : PROT_READ | PROT_WRITE;
        if (mmap(churn, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != churn)
            r->syscall_failures++;
        if (prot == PROT_NONE && mprotect(churn, len, PROT_READ | PROT_WRITE) != 0)
            r->syscall_failures++;
        if (c % 4 == 3 &&
            mmap(churn, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != churn)
            r->syscall_failures++;
        if (c % 2 == 1)
            let_touchers_run();
    }
    atomic_store(&churn_done, 1);
}

struct mapper_result {
    int pinned;
    int failures;
    int not_zero;
    int bad_data;
};

static void *mapper_main(void *arg)
{
    struct mapper_result *r = arg;
    r->pinned = smp_pin(smp_cpu_for(TOUCHERS + 1));
    smp_barrier_wait(&start);
    const size_t len = MAPPER_PAGES * PAGE;
    for (int i = 0; i < MAPPER_ROUNDS; i++) {
        uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            r->failures++;
            continue;
        }
        for (int pg = 0; pg < MAPPER_PAGES; pg++)
            if (p[pg * WORDS + 7] != 0)
                r->not_zero++;
        for (int pg = 0; pg < MAPPER_PAGES; pg++)
            p[pg * WORDS] = ((uint64_t)i << 16) | (uint64_t)pg;
        if (mprotect(p, len, PROT_READ) != 0)
            r->failures++;
        for (int pg = 0; pg < MAPPER_PAGES; pg++)
            if (p[pg * WORDS] != (((uint64_t)i << 16) | (uint64_t)pg))
                r->bad_data++;
        if (munmap(p, len) != 0)
            r->failures++;
        if (i % 8 == 0)
            sched_yield();
    }
    return NULL;
}

int main(void)
{
    t_init("smp_mm");
    check(smp_init() > 0, "sched_getaffinity lists at least one CPU");

    stable = mmap(NULL, STABLE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* churn sits between guard pages so that its hole, while unmapped, is
     * exactly CHURN_PAGES long; scratch is reserved PROT_NONE. */
    char *area = mmap(NULL, (CHURN_PAGES + 2) * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    scratch = mmap(NULL, SCRATCH_PAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(stable != MAP_FAILED && area != MAP_FAILED && scratch != MAP_FAILED, "regions mapped"))
        return t_done();
    churn = area + PAGE;
    check(mprotect(churn, CHURN_PAGES * PAGE, PROT_READ | PROT_WRITE) == 0, "churn region opened");

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);

    start.parties = TOUCHERS + 2;
    struct mapper_result mr = { 0 };
    pthread_t mapper;
    int created = pthread_create(&mapper, NULL, mapper_main, &mr) == 0;
    for (int t = 0; t < TOUCHERS; t++) {
        touchers[t].id = t;
        created += pthread_create(&touchers[t].th, NULL, toucher_main, &touchers[t]) == 0;
    }
    if (!check(created == TOUCHERS + 1, "%d toucher threads and a mapper thread created", TOUCHERS))
        return t_done();
    struct churn_result cr = { 0 };
    churn_main(&cr);
    pthread_join(mapper, NULL);
    long stray = 0, bad_values = 0, stable_bad = 0;
    int pinned = cr.pinned && mr.pinned;
    for (int t = 0; t < TOUCHERS; t++) {
        pthread_join(touchers[t].th, NULL);
        stray += touchers[t].stray_faults;
        bad_values += touchers[t].bad_values;
        stable_bad += touchers[t].stable_bad;
        pinned &= touchers[t].pinned;
    }

    {
        int ok_ = pinned;
        check(ok_, "every thread runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(cr.syscall_failures == 0, "churn: %d cycles of mprotect/munmap/mmap(MAP_FIXED) all succeeded", CYCLES);
    check(unarmed_faults == 0 && stray == 0, "every fault was in the churn region");
    check(bad_values == 0, "churn region words read back 0 or their toucher's last write");
    check(cr.ro_changed == 0, "read-only churn region never changed");
    check(cr.scratch_not_zero == 0, "pages mapped right after munmap were zero");
    check(cr.scratch_changed == 0, "pages mapped right after munmap kept their data");
    check(mr.failures == 0, "mapper: %d rounds of mmap/mprotect/munmap succeeded", MAPPER_ROUNDS);
    check(mr.not_zero == 0 && mr.bad_data == 0, "mapper: fresh mappings zero-filled, data read back");
    check(stable_bad == 0, "stable region read back as written every round");
    uint64_t sum = 0;
    for (size_t i = 0; i < (size_t)STABLE_PAGES * WORDS; i++)
        sum = sum * 31 + stable[i];
    uint64_t want = 0;
    for (int t = 0; t < TOUCHERS; t++)
        for (int i = 0; i < SLICE_PAGES * WORDS; i++)
            want = want * 31 + (i % 8 == 0 ? stable_value(t, STABLE_ROUNDS - 1, i) : 0);
    check(sum == want, "stable region intact");
    printf("stable region checksum %016llx\n", (unsigned long long)sum);
    check(munmap(area, (CHURN_PAGES + 2) * PAGE) == 0 && munmap(scratch, SCRATCH_PAGES * PAGE) == 0,
          "regions unmapped");
    return t_done();
}
