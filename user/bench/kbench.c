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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define MIB (1024 * 1024)
#define CHUNK (64 * 1024)

/* musl-gcc ships no kernel headers: the futex ABI constants. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

/* How long one benchmark may take, in guest seconds, before SIGALRM ends
 * it: a kernel that loses a wakeup must not stall the whole suite. */
#define BENCH_TIMEOUT 60

static const char *self = "/b/kbench";
static char err[160];
static long pct = 100;

/* Unbuffered output through write(2): no stdio buffer can be duplicated by
 * fork or lost when a child is killed. */
static void say(const char *fmt, ...)
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
static int fail(const char *what)
{
    snprintf(err, sizeof err, "%s: %s", what, strerror(errno));
    return -1;
}

static int fail_msg(const char *what)
{
    snprintf(err, sizeof err, "%s", what);
    return -1;
}

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* The iteration count for a default of `base` at the chosen size; at
 * least 2 so the smoke run still goes round each loop. */
static uint64_t iters(uint64_t base)
{
    uint64_t n = base * (uint64_t)pct / 100;
    return n < 2 ? 2 : n;
}

/* A short untimed run first: it faults in pages, fills caches and lets
 * TCG translate the loop, so the timed part sees the steady state. */
static uint64_t warm(uint64_t n)
{
    return n / 10 < 1 ? 1 : n / 10;
}

/* A benchmark sets *ns to the time of its timed part and *ops to the
 * number of operations done in it. */
typedef int (*bench_fn)(uint64_t *ns, uint64_t *ops);

static int b_getppid(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(200000);
    for (uint64_t i = 0; i < warm(n); i++)
        syscall(SYS_getppid);
    uint64_t t0 = now();
    for (uint64_t i = 0; i < n; i++)
        syscall(SYS_getppid);
    *ns = now() - t0;
    *ops = n;
    return 0;
}

/* One-byte read or write on a device; `want` is what each call must
 * return (0 for reading /dev/null, 1 otherwise). */
static int dev_io(const char *path, int writing, long want, uint64_t *ns, uint64_t *ops)
{
    int fd = open(path, writing ? O_WRONLY : O_RDONLY);
    if (fd < 0)
        return fail(path);
    char c = 0;
    uint64_t n = iters(100000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        long r = writing ? write(fd, &c, 1) : read(fd, &c, 1);
        if (r != want) {
            close(fd);
            return r < 0 ? fail(writing ? "write" : "read") : fail_msg("short or long transfer");
        }
    }
    *ns = now() - *ns;
    *ops = n;
    close(fd);
    return 0;
}

static int b_read_null(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/null", 0, 0, ns, ops); }
static int b_write_null(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/null", 1, 1, ns, ops); }
static int b_read_zero(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/zero", 0, 1, ns, ops); }
static int b_write_zero(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/zero", 1, 1, ns, ops); }

static int b_open_close(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(50000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        int fd = open(self, O_RDONLY);
        if (fd < 0)
            return fail(self);
        if (close(fd) != 0)
            return fail("close");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

static int b_stat(uint64_t *ns, uint64_t *ops)
{
    struct stat st;
    uint64_t n = iters(50000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (stat(self, &st) != 0)
            return fail(self);
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

/* Reaps `pid` and checks that it exited with status 0. */
static int reap(pid_t pid)
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

/* A one-byte round trip between two processes over two pipes. */
static int b_pipe_pingpong(uint64_t *ns, uint64_t *ops)
{
    int there[2], back[2];
    if (pipe(there) != 0 || pipe(back) != 0)
        return fail("pipe");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        char c;
        close(there[1]);
        close(back[0]);
        while (read(there[0], &c, 1) == 1)
            if (write(back[1], &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    close(there[0]);
    close(back[1]);
    uint64_t n = iters(20000);
    char c = 'x';
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (write(there[1], &c, 1) != 1 || read(back[0], &c, 1) != 1)
            return fail("pipe round trip");
    }
    *ns = now() - *ns;
    *ops = n;
    close(there[1]);
    close(back[0]);
    return reap(pid);
}

/* Two threads hand a turn back and forth through one futex word: each
 * round trip is two wakeups and, on one CPU, two context switches. */
static int turn;
static uint64_t futex_rounds;

static void futex_pass(int mine, int theirs)
{
    while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != mine)
        syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, theirs, NULL, NULL, 0);
}

static void *futex_partner(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < futex_rounds; i++) {
        futex_pass(1, 0);
        __atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
        syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    return NULL;
}

static int b_futex_pingpong(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(20000);
    futex_rounds = warm(n) + n;
    pthread_t t;
    if ((errno = pthread_create(&t, NULL, futex_partner, NULL)) != 0)
        return fail("pthread_create");
    for (uint64_t i = 0; i < futex_rounds; i++) {
        if (i == warm(n))
            *ns = now();
        __atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        futex_pass(0, 1);
    }
    *ns = now() - *ns;
    *ops = n;
    if ((errno = pthread_join(t, NULL)) != 0)
        return fail("pthread_join");
    return 0;
}

static volatile uint64_t caught;

static void on_usr1(int sig)
{
    (void)sig;
    caught++;
}

/* kill(2) to oneself: the signal is delivered on the way out of the call,
 * so each operation is a syscall, a handler frame and rt_sigreturn. */
static int b_signal(uint64_t *ns, uint64_t *ops)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return fail("sigaction");
    pid_t me = getpid();
    uint64_t n = iters(50000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (kill(me, SIGUSR1) != 0)
            return fail("kill");
    }
    *ns = now() - *ns;
    *ops = n;
    if (caught != warm(n) + n)
        return fail_msg("a signal was not delivered");
    return 0;
}

static char *map_anon(size_t len, int flags)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* First touch of fresh anonymous pages, 1 MiB at a time; only the
 * touching is timed, not the mmap and munmap around it. */
static int b_page_fault(uint64_t *ns, uint64_t *ops)
{
    uint64_t rounds = iters(200), pages = MIB / PAGE;
    *ns = 0;
    for (uint64_t r = 0; r < warm(rounds) + rounds; r++) {
        char *p = map_anon(MIB, MAP_PRIVATE);
        if (!p)
            return fail("mmap");
        uint64_t t0 = now();
        for (uint64_t i = 0; i < pages; i++)
            p[i * PAGE] = 1;
        if (r >= warm(rounds))
            *ns += now() - t0;
        if (munmap(p, MIB) != 0)
            return fail("munmap");
    }
    *ops = rounds * pages;
    return 0;
}

static int b_mmap_munmap(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(20000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        char *p = map_anon(MIB, MAP_PRIVATE);
        if (!p)
            return fail("mmap");
        if (munmap(p, MIB) != 0)
            return fail("munmap");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

/* The child of a fork writes to every page of 1 MiB its parent had
 * touched; the child times its writes and reports through a shared page. */
static int b_cow_fault(uint64_t *ns, uint64_t *ops)
{
    uint64_t rounds = iters(100), pages = MIB / PAGE;
    char *p = map_anon(MIB, MAP_PRIVATE);
    volatile uint64_t *shared = (volatile uint64_t *)map_anon(PAGE, MAP_SHARED);
    if (!p || !shared)
        return fail("mmap");
    memset(p, 1, MIB);
    *ns = 0;
    for (uint64_t r = 0; r < warm(rounds) + rounds; r++) {
        pid_t pid = fork();
        if (pid < 0)
            return fail("fork");
        if (pid == 0) {
            uint64_t t0 = now();
            for (uint64_t i = 0; i < pages; i++)
                p[i * PAGE] = 2;
            *shared = now() - t0;
            _exit(0);
        }
        if (reap(pid) != 0)
            return -1;
        if (r >= warm(rounds))
            *ns += *shared;
    }
    *ops = rounds * pages;
    return 0;
}

static int b_fork_exit(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(2000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        pid_t pid = fork();
        if (pid < 0)
            return fail("fork");
        if (pid == 0)
            _exit(0);
        if (reap(pid) != 0)
            return -1;
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

/* fork, then execve `path` with `argv` in the child, then wait. */
static int spawn_wait(const char *path, char *const argv[], uint64_t base, uint64_t *ns, uint64_t *ops)
{
    static char *const envp[] = {"PATH=/bin", NULL};
    uint64_t n = iters(base);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        pid_t pid = fork();
        if (pid < 0)
            return fail("fork");
        if (pid == 0) {
            execve(path, argv, envp);
            _exit(127);
        }
        if (reap(pid) != 0) {
            /* Which round failed tells a crash at start-up from a rare one. */
            size_t len = strlen(err);
            snprintf(err + len, sizeof err - len, " in round %llu of %llu", (unsigned long long)i + 1,
                     (unsigned long long)(warm(n) + n));
            return -1;
        }
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

static int b_fork_exec(uint64_t *ns, uint64_t *ops)
{
    char *const argv[] = {"kbench", "nop", NULL};
    return spawn_wait(self, argv, 1000, ns, ops);
}

static int b_sh_true(uint64_t *ns, uint64_t *ops)
{
    char *const argv[] = {"sh", "-c", "true", NULL};
    return spawn_wait("/bin/sh", argv, 500, ns, ops);
}

/* A child writes 64 KiB chunks into a pipe; the parent reads them. */
static int b_pipe_bw(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(5000), total = warm(n) + n;
    int fds[2];
    if (pipe(fds) != 0)
        return fail("pipe");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    static char buf[CHUNK];
    if (pid == 0) {
        close(fds[0]);
        memset(buf, 'p', sizeof buf);
        for (uint64_t i = 0; i < total; i++)
            if (write(fds[1], buf, CHUNK) != CHUNK)
                _exit(1);
        _exit(0);
    }
    close(fds[1]);
    uint64_t got = 0;
    while (got < total * CHUNK) {
        if (got >= warm(n) * CHUNK && *ns == 0)
            *ns = now();
        long r = read(fds[0], buf, CHUNK);
        if (r <= 0)
            return r < 0 ? fail("read") : fail_msg("pipe closed early");
        got += r;
    }
    *ns = now() - *ns;
    *ops = n;
    close(fds[0]);
    return reap(pid);
}

/* User-space memcpy of 1 MiB: no kernel involved, so the ratio shows how
 * much the machine itself differs between the two runs. */
static int b_memcpy_bw(uint64_t *ns, uint64_t *ops)
{
    char *a = map_anon(MIB, MAP_PRIVATE), *b = map_anon(MIB, MAP_PRIVATE);
    if (!a || !b)
        return fail("mmap");
    memset(a, 'm', MIB);
    memset(b, 0, MIB);
    uint64_t n = iters(1000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        memcpy(i & 1 ? a : b, i & 1 ? b : a, MIB);
        /* The compiler must not drop copies nobody reads. */
        __asm__ volatile("" : : "r"(a), "r"(b) : "memory");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

static int b_tmpfs_file(uint64_t *ns, uint64_t *ops)
{
    static char page[PAGE];
    const char *path = "/tmp/kbench-file";
    uint64_t n = iters(10000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0)
            return fail(path);
        if (write(fd, page, PAGE) != PAGE)
            return fail("write");
        if (close(fd) != 0)
            return fail("close");
        if (unlink(path) != 0)
            return fail("unlink");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

#define DIR_ENTRIES 1000

/* Lists a 1,000-entry tmpfs directory: open, getdents64 until the end,
 * close. Each file name is also the check that every entry came back. */
static int b_getdents(uint64_t *ns, uint64_t *ops)
{
    const char *dir = "/tmp/kbench-dir";
    char name[64];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return fail(dir);
    for (int i = 0; i < DIR_ENTRIES; i++) {
        snprintf(name, sizeof name, "%s/entry-%04d", dir, i);
        int fd = open(name, O_CREAT | O_WRONLY, 0644);
        if (fd < 0)
            return fail(name);
        close(fd);
    }
    static char buf[32768];
    uint64_t n = iters(500);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        int fd = open(dir, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
            return fail(dir);
        long r, entries = 0;
        while ((r = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
            for (long off = 0; off < r; off += *(unsigned short *)(buf + off + 16))
                entries++;
        if (r < 0)
            return fail("getdents64");
        close(fd);
        if (entries < DIR_ENTRIES)
            return fail_msg("getdents64 returned too few entries");
    }
    *ns = now() - *ns;
    *ops = n;
    for (int i = 0; i < DIR_ENTRIES; i++) {
        snprintf(name, sizeof name, "%s/entry-%04d", dir, i);
        unlink(name);
    }
    rmdir(dir);
    return 0;
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
    {"pipe_pingpong", b_pipe_pingpong},
    {"futex_pingpong", b_futex_pingpong},
    {"signal", b_signal},
    {"page_fault", b_page_fault},
    {"mmap_munmap", b_mmap_munmap},
    {"cow_fault", b_cow_fault},
    {"fork_exit", b_fork_exit},
    {"fork_exec", b_fork_exec},
    {"sh_true", b_sh_true},
    {"pipe_bw", b_pipe_bw},
    {"memcpy_bw", b_memcpy_bw},
    {"tmpfs_file", b_tmpfs_file},
    {"getdents", b_getdents},
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
        say("usage: kbench all|list|nop|NAME [PCT] [FILTER]\n");
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
