/*
 * smp_fpu: every thread keeps its own x87/SSE state.  The kernel leaves
 * the registers live across system calls and saves them only when it
 * switches threads, so this checks that nothing leaks between threads
 * that share CPUs: worker threads and processes, pinned round-robin,
 * each load their own pattern into xmm0/xmm15, their own MXCSR rounding
 * mode and x87 control word, then make system calls that block, yield
 * or return at once, and check all of it is still theirs.  Also what
 * fork, a new thread and exec start with.
 */
#include "smp.h"

#include <stdint.h>

#define WORKERS 4
#define PROCS 2
#define ROUNDS 20000

struct fpu_view {
    uint64_t xmm0[2];
    uint64_t xmm15[2];
    uint32_t mxcsr;
    uint16_t fcw;
};

static uint32_t read_mxcsr(void)
{
    uint32_t m;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    return m;
}

static uint16_t read_fcw(void)
{
    uint16_t w;
    __asm__ volatile("fnstcw %0" : "=m"(w));
    return w;
}

/* Loads the state, makes system call `nr`, and reads the state back, all
 * in one asm block so the compiler cannot touch the registers between. */
static void round_trip(const struct fpu_view *in, struct fpu_view *out, long nr)
{
    __asm__ volatile("ldmxcsr %[mx]\n\t"
                     "fldcw %[cw]\n\t"
                     "movdqu %[a], %%xmm0\n\t"
                     "movdqu %[b], %%xmm15\n\t"
                     "mov %[nr], %%rax\n\t"
                     "syscall\n\t"
                     "movdqu %%xmm0, %[oa]\n\t"
                     "movdqu %%xmm15, %[ob]\n\t"
                     "stmxcsr %[omx]\n\t"
                     "fnstcw %[ocw]\n\t"
                     : [oa] "=m"(out->xmm0), [ob] "=m"(out->xmm15), [omx] "=m"(out->mxcsr), [ocw] "=m"(out->fcw)
                     : [mx] "m"(in->mxcsr), [cw] "m"(in->fcw), [a] "m"(in->xmm0), [b] "m"(in->xmm15), [nr] "r"(nr)
                     : "rax", "rcx", "r11", "xmm0", "xmm15", "memory");
}

static void restore_defaults(void)
{
    uint32_t mx = 0x1f80;
    uint16_t cw = 0x037f;
    __asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
}

/* Runs the rounds for worker `id`; returns how many came back changed. */
static int worker_rounds(int id)
{
    struct fpu_view in = {
        .xmm0 = { 0x0101010101010101ULL * (uint64_t)(id + 1), 0xa5a5a5a5a5a5a5a5ULL ^ (uint64_t)id },
        .xmm15 = { ~(0x0202020202020202ULL * (uint64_t)(id + 3)), (uint64_t)id << 32 | 0x5a5a },
        /* Rounding control (bits 13-14) and flush-to-zero (bit 15) differ
         * between workers; all exceptions stay masked. */
        .mxcsr = 0x1f80 | (uint32_t)(id & 3) << 13 | (uint32_t)((id >> 2) & 1) << 15,
        /* x87 precision (bits 8-9) and rounding (bits 10-11). */
        .fcw = (uint16_t)(0x007f | (id & 3) << 8 | ((id >> 1) & 3) << 10),
    };
    static const long calls[] = { SYS_getppid, SYS_sched_yield, SYS_getpid, SYS_nanosleep };
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        struct fpu_view out;
        long nr = calls[r % 4];
        if (nr == SYS_nanosleep && r % 64 != 3)
            nr = SYS_sched_yield;
        if (nr == SYS_nanosleep) {
            /* nanosleep needs arguments: sleep through a plain call, with
             * the state loaded by hand around it. */
            struct timespec ts = { 0, 100000 };
            struct fpu_view probe;
            round_trip(&in, &probe, SYS_getppid);
            nanosleep(&ts, NULL);
            out.mxcsr = read_mxcsr();
            out.fcw = read_fcw();
            bad += (out.mxcsr & ~0x3fu) != in.mxcsr || out.fcw != in.fcw;
            continue;
        }
        round_trip(&in, &out, nr);
        bad += memcmp(out.xmm0, in.xmm0, 16) != 0 || memcmp(out.xmm15, in.xmm15, 16) != 0 ||
               (out.mxcsr & ~0x3fu) != in.mxcsr || out.fcw != in.fcw;
    }
    restore_defaults();
    return bad;
}

static atomic_int thread_bad;

static void *thread_main(void *arg)
{
    int id = (int)(long)arg;
    smp_pin(smp_cpu_for(id));
    atomic_fetch_add(&thread_bad, worker_rounds(id));
    return NULL;
}

static void *new_thread_view(void *arg)
{
    struct fpu_view *v = arg;
    v->mxcsr = read_mxcsr();
    v->fcw = read_fcw();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "show") == 0) {
        /* After exec: the state a new program starts with. */
        printf("after exec: MXCSR %#x, FCW %#x\n", read_mxcsr() & ~0x3fu, read_fcw());
        return 0;
    }
    t_init("smp_fpu");
    smp_init();

    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, thread_main, (void *)i);
    pid_t kids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        fflush(stdout);
        kids[p] = fork();
        if (kids[p] == 0) {
            smp_pin(smp_cpu_for(WORKERS + p));
            _exit(worker_rounds(WORKERS + p) ? 1 : 0);
        }
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    check(atomic_load(&thread_bad) == 0, "%d threads x %d system calls: x87/SSE state kept (%d rounds changed)",
          WORKERS, ROUNDS, atomic_load(&thread_bad));
    int kids_ok = 1;
    for (int p = 0; p < PROCS; p++) {
        int st = 0;
        kids_ok &= wait_for(kids[p], &st, 0) == kids[p] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    check(kids_ok, "%d processes x %d system calls: x87/SSE state kept", PROCS, ROUNDS);

    /* What fork and a new thread inherit: the caller's control state. */
    uint32_t mx = 0x1f80 | 3u << 13; /* round toward zero */
    uint16_t cw = 0x0c7f;            /* x87: round toward zero, single precision */
    __asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(((read_mxcsr() & ~0x3fu) == mx && read_fcw() == cw) ? 0 : 1);
    int st = 0;
    check(wait_for(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "a fork child starts with its parent's MXCSR and x87 control word");
    struct fpu_view v = { 0 };
    pthread_t nt;
    pthread_create(&nt, NULL, new_thread_view, &v);
    pthread_join(nt, NULL);
    check((v.mxcsr & ~0x3fu) == mx && v.fcw == cw, "a new thread starts with its creator's MXCSR and x87 control word");

    /* exec starts from the defaults, whatever the caller had. */
    fflush(stdout);
    c = fork();
    if (c == 0) {
        char *args[] = { argv[0], "show", NULL };
        execv("/proc/self/exe", args);
        _exit(127);
    }
    check(wait_for(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec of self: %s", status_str(st));
    restore_defaults();
    return t_done();
}
