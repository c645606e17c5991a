/*
 * kbench: Kiln's micro-benchmarks, one static musl program with a
 * subcommand per benchmark. The same binary runs under Kiln and under
 * Debian's Linux in the same QEMU machine, so the two kernels are compared
 * on identical user code.
 *
 *   kbench NAME [PCT]          run one benchmark at PCT % of its default size
 *   kbench all [PCT] [FILTER]  run every benchmark (or those whose name
 *                              contains one of FILTER's comma-separated
 *                              words), each in its own child process
 *   kbench list                print the names
 *   kbench nop                 exit 0 at once (the program fork_exec runs)
 *
 * Each benchmark prints one line, `bench NAME NS_PER_OP OPS`, or
 * `bench NAME n/a REASON` when something it needs is missing: every call
 * is checked, so an unsupported feature shows up as a reason, never as a
 * fast but meaningless number. Time comes from CLOCK_MONOTONIC; under
 * QEMU's `-icount shift=0` one nanosecond is one guest instruction.
 *
 * This file holds the runner and the shared helpers (kbench.h); the
 * benchmarks are in bench_sys.c, bench_mem.c, bench_vdso.c and bench_net.c;
 * bench_nic.c holds the through-the-NIC server and host client
 * (nicserve, nicclient).
 */
#include "kbench.h"

/* How long one benchmark may take, in guest seconds, before SIGALRM ends
 * it: a kernel that loses a wakeup must not stall the whole suite. */
#define BENCH_TIMEOUT 60

const char *self = "/b/kbench";
char err[ERR_LEN];
long pct = 100;

/* Unbuffered output through write(2): no stdio buffer can be duplicated by
 * fork or lost when a child is killed. */
void say(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 1)
        n = sizeof buf - 1;
    if (n > 0 && write(1, buf, n) < 0)
        _exit(3);
}

/* Records why a benchmark cannot run; returns -1 for `return fail(...)`. */
int fail(const char *what)
{
    snprintf(err, sizeof err, "%s: %s", what, strerror(errno));
    return -1;
}

int fail_msg(const char *what)
{
    snprintf(err, sizeof err, "%s", what);
    return -1;
}

uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* The iteration count for a default of `base` at the chosen size; at
 * least 2 so the smoke run still goes round each loop. */
uint64_t iters(uint64_t base)
{
    uint64_t n = base * (uint64_t)pct / 100;
    return n < 2 ? 2 : n;
}

/* A short untimed run first: it faults in pages, fills caches and lets
 * TCG translate the loop, so the timed part sees the steady state. */
uint64_t warm(uint64_t n)
{
    return n / 10 < 1 ? 1 : n / 10;
}

/* A benchmark sets *ns to the time of its timed part and *ops to the
 * number of operations done in it. */
/* Reaps `pid` and checks that it exited with status 0. */
int reap(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return fail("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, sizeof err, "child ended with wait status 0x%x", st);
        return -1;
    }
    return 0;
}


char *map_anon(size_t len, int flags)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static const struct {
    const char *name;
    bench_fn fn;
} benches[] = {
    {"getppid", b_getppid},
    {"read_null", b_read_null},
    {"write_null", b_write_null},
    {"read_zero", b_read_zero},
    {"write_zero", b_write_zero},
    {"open_close", b_open_close},
    {"stat", b_stat},
    {"openat_deep", b_openat_deep},
    {"vdso_clock_gettime", b_vdso_clock_gettime},
    {"vdso_gettimeofday", b_vdso_gettimeofday},
    {"vdso_getcpu", b_vdso_getcpu},
    {"pipe_pingpong", b_pipe_pingpong},
    {"unix_pingpong", b_unix_pingpong},
    {"futex_pingpong", b_futex_pingpong},
    {"component_invoke", b_component_invoke},
    {"component_local_call", b_component_local_call},
    {"component_merged_call", b_component_merged_call},
    {"component_merge", b_component_merge},
    {"component_split", b_component_split},
    {"component_reboot", b_component_reboot},
    {"epoll_wait", b_epoll_wait},
    {"epoll_pingpong", b_epoll_pingpong},
    {"poll_100", b_poll_100},
    {"select_100", b_select_100},
    {"signal", b_signal},
    {"page_fault", b_page_fault},
    {"mmap_munmap", b_mmap_munmap},
    {"cow_fault", b_cow_fault},
    {"file_fault", b_file_fault},
    {"madv_refault", b_madv_refault},
    {"brk_grow", b_brk_grow},
    {"fork_exit", b_fork_exit},
    {"thread_clone", b_thread_clone},
    {"fork_exec", b_fork_exec},
    {"exec_busybox", b_exec_busybox},
    {"sh_true", b_sh_true},
    {"pipe_bw", b_pipe_bw},
    {"unix_bw", b_unix_bw},
    {"memcpy_bw", b_memcpy_bw},
    {"tmpfs_file", b_tmpfs_file},
    {"getdents", b_getdents},
    {"parallel", b_parallel},
    {"tcp_pingpong", b_tcp_pingpong},
    {"udp_pingpong", b_udp_pingpong},
    {"tcp_bw", b_tcp_bw},
    {"tcp_connect", b_tcp_connect},
};
#define NBENCH (sizeof benches / sizeof benches[0])

/* Runs benchmark i in this process and prints its line; exit status 0
 * when it produced a number. */
static int run_one(size_t i)
{
    uint64_t ns = 0, ops = 0;
    err[0] = 0;
    if (benches[i].fn(&ns, &ops) != 0) {
        say("bench %s n/a %s\n", benches[i].name, err[0] ? err : "failed");
        return 1;
    }
    uint64_t tenths = ops ? ns * 10 / ops : 0;
    say("bench %s %llu.%llu %llu\n", benches[i].name, (unsigned long long)(tenths / 10),
        (unsigned long long)(tenths % 10), (unsigned long long)ops);
    return 0;
}

/* Does `name` contain one of the comma-separated words of `filter`? */
static int selected(const char *name, const char *filter)
{
    if (!filter || !*filter)
        return 1;
    char words[256];
    snprintf(words, sizeof words, "%s", filter);
    for (char *w = strtok(words, ","); w; w = strtok(NULL, ","))
        if (strstr(name, w))
            return 1;
    return 0;
}

/* Each benchmark runs in a child so a crash, a hang (ended by SIGALRM) or
 * a leftover thread stays its own; a shared page tells the parent whether
 * the child got as far as printing its line. */
static int run_all(const char *filter)
{
    volatile int *printed = (volatile int *)map_anon(PAGE, MAP_SHARED);
    int failed = 0, ran = 0;
    say("kbench start %ld\n", pct);
    for (size_t i = 0; i < NBENCH; i++) {
        if (!selected(benches[i].name, filter))
            continue;
        ran++;
        if (printed)
            *printed = 0;
        pid_t pid = fork();
        if (pid < 0) {
            say("bench %s n/a fork: %s\n", benches[i].name, strerror(errno));
            failed++;
            continue;
        }
        if (pid == 0) {
            alarm(BENCH_TIMEOUT);
            int r = run_one(i);
            if (printed)
                *printed = 1;
            _exit(r);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        failed++;
        if (printed && *printed)
            continue;
        if (WIFSIGNALED(st))
            say("bench %s n/a killed by signal %d%s\n", benches[i].name, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
        else
            say("bench %s n/a exit status %d\n", benches[i].name, WEXITSTATUS(st));
    }
    say("kbench done %d %d\n", ran - failed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        say("usage: kbench all|list|nop|NAME [PCT] [FILTER] | nicserve PORT | nicclient HOST PORT MODE [N]\n");
        return 2;
    }
    if (strchr(argv[0], '/'))
        self = argv[0];
    if (argc > 2)
        pct = strtol(argv[2], NULL, 10);
    if (pct < 0)
        pct = 0;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "nop"))
        return 0;
    if (!strcmp(cmd, "all"))
        return run_all(argc > 3 ? argv[3] : NULL);
    if (!strcmp(cmd, "nicserve"))
        return nic_serve(argc, argv);
    if (!strcmp(cmd, "nicclient"))
        return nic_client(argc, argv);
    for (size_t i = 0; i < NBENCH; i++) {
        if (!strcmp(cmd, "list"))
            say("%s\n", benches[i].name);
        else if (!strcmp(cmd, benches[i].name))
            return run_one(i);
    }
    if (strcmp(cmd, "list")) {
        say("kbench: no benchmark `%s`\n", cmd);
        return 2;
    }
    return 0;
}

