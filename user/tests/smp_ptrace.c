/*
 * smp_ptrace: tracing threads that run on different CPUs.
 *
 * A tracer SEIZEs a child with TRACECLONE and TRACESYSGOOD and follows
 * every thread with PTRACE_SYSCALL. The child's three worker threads,
 * pinned round-robin, each make CALLS getppid() calls; at every tenth
 * call's entry the tracer changes the number to getpid, and every
 * worker checks each result. The tracer counts the getppid entry and
 * exit stops of each thread: every stop is reported once, to the right
 * thread, with its own registers, however the stops of the threads
 * interleave across CPUs.
 */
#include "smp.h"

#include <sys/ptrace.h>

#define WORKERS 3
#define CALLS 1000

struct syscall_info {
    uint8_t op;
    uint8_t pad[3];
    uint32_t arch;
    uint64_t ip;
    uint64_t sp;
    union {
        struct {
            uint64_t nr;
            uint64_t args[6];
        } entry;
        struct {
            int64_t rval;
            uint8_t is_error;
        } exit;
    };
};

static struct smp_barrier start = { 0, WORKERS };
static atomic_int bad_results, pin_failures;
static long tracer_pid, own_pid;

static void *worker(void *arg)
{
    int i = (int)(long)arg;
    if (!smp_pin(smp_cpu_for(i)))
        atomic_fetch_add(&pin_failures, 1);
    smp_barrier_wait(&start);
    for (int n = 0; n < CALLS; n++) {
        long want = n % 10 == 0 ? own_pid : tracer_pid;
        if (syscall(SYS_getppid) != want)
            atomic_fetch_add(&bad_results, 1);
    }
    return NULL;
}

static int child(void)
{
    /* Wait for the tracer to attach. */
    char c;
    if (read(3, &c, 1) != 1)
        return 10;
    tracer_pid = syscall(SYS_getppid);
    own_pid = syscall(SYS_getpid);
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(long)i) != 0)
            return 11;
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    if (pin_failures)
        return 12;
    return bad_results ? 13 : 0;
}

struct counts {
    pid_t tid;
    int entries, exits;
    int in_call; /* between a getppid entry and its exit */
};

int main(void)
{
    t_init("smp_ptrace");
    smp_init();
    int p[2];
    if (pipe(p) != 0)
        return 1;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        dup2(p[0], 3);
        close(p[1]);
        _exit(child());
    }
    close(p[0]);
    long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL;
    check(ptrace(PTRACE_SEIZE, c, 0, opts) == 0, "SEIZE the child");
    check(ptrace(PTRACE_INTERRUPT, c, 0, 0) == 0, "INTERRUPT it");
    int st;
    waitpid(c, &st, __WALL);
    check(WIFSTOPPED(st) && st >> 16 == PTRACE_EVENT_STOP, "child trapped");
    ptrace(PTRACE_SYSCALL, c, 0, 0);
    if (write(p[1], "x", 1) != 1)
        return 1;

    struct counts seen[WORKERS + 1];
    int nseen = 0, other_stops = 0, exited_threads = 0, child_status = -1;
    for (;;) {
        pid_t t = waitpid(-1, &st, __WALL);
        if (t < 0)
            break;
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (t == c) {
                child_status = st;
                break;
            }
            exited_threads++;
            continue;
        }
        if (!WIFSTOPPED(st))
            continue;
        int sig = WSTOPSIG(st), event = st >> 16;
        int inject = 0;
        if (sig == (SIGTRAP | 0x80)) {
            struct syscall_info info;
            long n = ptrace(PTRACE_GET_SYSCALL_INFO, t, sizeof info, &info);
            int k;
            for (k = 0; k < nseen && seen[k].tid != t; k++) {
            }
            if (n > 0 && info.op == 1 && info.entry.nr == SYS_getppid) {
                if (k == nseen && nseen <= WORKERS)
                    seen[nseen++] = (struct counts){ t, 0, 0, 0 };
                if (k < nseen) {
                    if (t != c && seen[k].entries % 10 == 0)
                        ptrace(PTRACE_POKEUSER, t, 8 * 15 /* orig_rax */, SYS_getpid);
                    seen[k].entries++;
                    seen[k].in_call = 1;
                }
            } else if (n > 0 && info.op == 2 && k < nseen && seen[k].in_call) {
                seen[k].exits++;
                seen[k].in_call = 0;
            }
        } else if (event == 0 && sig != SIGTRAP) {
            inject = sig;
            other_stops++;
        }
        ptrace(PTRACE_SYSCALL, t, 0, inject);
    }
    close(p[1]);
    check(child_status != -1 && WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
          "child: every worker got the result the tracer chose (status %#x)", child_status);
    /* The main thread's one getppid is not a worker's. */
    int workers = 0, exact = 1;
    for (int k = 0; k < nseen; k++) {
        if (seen[k].tid == c)
            continue;
        workers++;
        exact &= seen[k].entries == CALLS && seen[k].exits == CALLS;
    }
    check(workers == WORKERS, "%d threads made getppid calls", workers);
    check(exact, "each saw %d getppid entry and exit stops", CALLS);
    check(exited_threads == WORKERS, "the tracer saw %d thread exits", exited_threads);
    check(other_stops == 0, "no stray signal stops");
    return t_done();
}
