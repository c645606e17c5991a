/*
 * bench_sys.c: system calls, switching, files and scaling: getppid,
 * 1-byte I/O on /dev/null and /dev/zero, open+close, stat, pipe and futex
 * ping-pong, signal delivery, tmpfs file life cycle, getdents64, and
 * getppid in two processes at once (parallel).
 */
#include "kbench.h"

#include <sys/socket.h>

#include <sys/epoll.h>
#include <poll.h>
#include <sys/select.h>

int b_getppid(uint64_t *ns, uint64_t *ops)
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

int b_read_null(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/null", 0, 0, ns, ops); }
int b_write_null(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/null", 1, 1, ns, ops); }
int b_read_zero(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/zero", 0, 1, ns, ops); }
int b_write_zero(uint64_t *ns, uint64_t *ops) { return dev_io("/dev/zero", 1, 1, ns, ops); }

int b_open_close(uint64_t *ns, uint64_t *ops)
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

int b_stat(uint64_t *ns, uint64_t *ops)
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
/* A one-byte round trip between two processes over two pipes. */
int b_pipe_pingpong(uint64_t *ns, uint64_t *ops)
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

/* The same round trip over one AF_UNIX stream socketpair. */
int b_unix_pingpong(uint64_t *ns, uint64_t *ops)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return fail("socketpair");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        char c;
        close(sv[0]);
        while (read(sv[1], &c, 1) == 1)
            if (write(sv[1], &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    close(sv[1]);
    uint64_t n = iters(20000);
    char c = 'x';
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1)
            return fail("socket round trip");
    }
    *ns = now() - *ns;
    *ops = n;
    close(sv[0]);
    return reap(pid);
}

/* epoll_wait with timeout 0 on an instance whose one entry, a pipe with
 * data, is ready: the cost of asking (scan, re-poll, copy out). */
int b_epoll_wait(uint64_t *ns, uint64_t *ops)
{
    int p[2];
    if (pipe(p) != 0)
        return fail("pipe");
    int ep = epoll_create1(0);
    if (ep < 0)
        return fail("epoll_create1");
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
    if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0)
        return fail("epoll_ctl");
    if (write(p[1], "x", 1) != 1)
        return fail("write");
    uint64_t n = iters(50000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (epoll_wait(ep, &ev, 1, 0) != 1)
            return fail("epoll_wait");
    }
    *ns = now() - *ns;
    *ops = n;
    close(ep);
    close(p[0]);
    close(p[1]);
    return 0;
}

/* Sleeps in epoll_wait until the pipe has a byte, then reads it. */
static int epoll_read(int ep, int fd, char *c)
{
    struct epoll_event ev;
    if (epoll_wait(ep, &ev, 1, -1) != 1)
        return -1;
    return read(fd, c, 1) == 1 ? 0 : -1;
}

/* pipe_pingpong with each side sleeping in epoll_wait before its read:
 * a round trip is two epoll wakeups. */
int b_epoll_pingpong(uint64_t *ns, uint64_t *ops)
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
        int ep = epoll_create1(0);
        struct epoll_event ev = { .events = EPOLLIN };
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, there[0], &ev) != 0)
            _exit(1);
        for (;;) {
            struct epoll_event out;
            if (epoll_wait(ep, &out, 1, -1) != 1)
                _exit(1);
            if (read(there[0], &c, 1) != 1)
                _exit(0);
            if (write(back[1], &c, 1) != 1)
                _exit(1);
        }
    }
    close(there[0]);
    close(back[1]);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN };
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, back[0], &ev) != 0)
        return fail("epoll");
    uint64_t n = iters(20000);
    char c = 'x';
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (write(there[1], &c, 1) != 1 || epoll_read(ep, back[0], &c) != 0)
            return fail("epoll round trip");
    }
    *ns = now() - *ns;
    *ops = n;
    close(there[1]);
    close(back[0]);
    close(ep);
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

int b_futex_pingpong(uint64_t *ns, uint64_t *ops)
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

/* Kiln's component invocation (docs/components.md): a Kiln-only system
 * call, number 0x01000000, far from Linux's, which answers ENOSYS (the
 * row is n/a there). rdi = capability, rsi = operation, rdx, r10, r8, r9
 * = arguments; the reply comes back in rdx, the status in rax. A
 * process's capability 0 is the `calc` component, operation 0 `add`. */
#include "../tests/kiln_invoke.h"

/* One round trip into the `calc` component's protection domain and back:
 * the thread migrates there (address space and stack switched), adds,
 * and returns. Every reply is checked. */
int b_component_invoke(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(100000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        uint64_t v;
        long r = kiln_invoke(0, 0, i, 1, &v);
        if (r != 0) {
            errno = (int)-r;
            return fail("component invocation");
        }
        if (v != i + 1)
            return fail_msg("wrong reply from the component");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

/* The kernel's own component interface (kernel/src/component/control.rs):
 * capability -1, operations MERGE (1) and SPLIT (2) on component indices;
 * `calc` is component 0 and `client` 1, which a process holds at
 * capability 1 (Relay: op 3 add_loop(n) calls calc's add n times, op 4
 * local_loop(n) calls a plain local function n times). */
#define CONTROL_MERGE 1
#define CONTROL_SPLIT 2
#define COMP_CALC 0
#define COMP_CLIENT 1
#define CAP_CLIENT 1
#define RELAY_ADD_LOOP 3
#define RELAY_LOCAL_LOOP 4

/* n calls inside the client component, in one invocation (the one
 * round trip into it is ~1/n of the figure): `op` is add_loop or
 * local_loop, whose reply must be n. */
static int component_loop(long op, uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(1000000), v;
    long r = kiln_invoke(CAP_CLIENT, op, 1000, 0, &v); /* warm */
    if (r == 0) {
        *ns = now();
        r = kiln_invoke(CAP_CLIENT, op, n, 0, &v);
        *ns = now() - *ns;
    }
    if (r != 0) {
        errno = (int)-r;
        return fail("component invocation");
    }
    if (v != n)
        return fail_msg("wrong reply from the component");
    *ops = n;
    return 0;
}

/* A plain (not inlined) function call inside a component: the baseline
 * of the merged invocation. */
int b_component_local_call(uint64_t *ns, uint64_t *ops)
{
    return component_loop(RELAY_LOCAL_LOOP, ns, ops);
}

/* client -> calc add with both in one merged domain: a direct call
 * through the runtime's link word, no system call. */
int b_component_merged_call(uint64_t *ns, uint64_t *ops)
{
    uint64_t v;
    long r = kiln_invoke(KILN_CONTROL, CONTROL_MERGE, COMP_CLIENT, COMP_CALC, &v);
    if (r != 0) {
        errno = (int)-r;
        return fail("component merge");
    }
    int ret = component_loop(RELAY_ADD_LOOP, ns, ops);
    kiln_invoke(KILN_CONTROL, CONTROL_SPLIT, COMP_CLIENT, 0, &v);
    return ret;
}

/* merge(client, calc) then split(client), n times, each timed alone:
 * `which` 0 reports the merges, 1 the splits. */
static int component_merge_split(int which, uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(2000), spent[2] = {0, 0}, v;
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        uint64_t t0 = now();
        long r = kiln_invoke(KILN_CONTROL, CONTROL_MERGE, COMP_CLIENT, COMP_CALC, &v);
        uint64_t t1 = now();
        long s = r == 0 ? kiln_invoke(KILN_CONTROL, CONTROL_SPLIT, COMP_CLIENT, 0, &v) : 0;
        uint64_t t2 = now();
        if (r != 0 || s != 0) {
            errno = (int)-(r != 0 ? r : s);
            return fail(r != 0 ? "component merge" : "component split");
        }
        if (i >= warm(n)) {
            spent[0] += t1 - t0;
            spent[1] += t2 - t1;
        }
    }
    *ns = spent[which];
    *ops = n;
    return 0;
}

/* Micro-reboot (docs/components.md): `calc`'s lookup with a bad index
 * (operation 3) panics it, and the invocation comes back EOWNERDEAD; the
 * next invocation (add) finds calc failed, resets its memory from its
 * image, runs its init again and then adds. One operation is that pair:
 * from the invocation that faults to the first successful one after it.
 * Both replies are checked. */
int b_component_reboot(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(2000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        uint64_t v;
        long r = kiln_invoke(0, 3, 100, 0, &v);
        if (r != -EOWNERDEAD) {
            errno = r < 0 ? (int)-r : EPROTO;
            return fail(r == -ENOSYS ? "component invocation" : "fault in the component");
        }
        r = kiln_invoke(0, 0, i, 1, &v);
        if (r != 0) {
            errno = (int)-r;
            return fail("invocation after the reboot");
        }
        if (v != i + 1)
            return fail_msg("wrong reply from the rebooted component");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

int b_component_merge(uint64_t *ns, uint64_t *ops)
{
    return component_merge_split(0, ns, ops);
}

int b_component_split(uint64_t *ns, uint64_t *ops)
{
    return component_merge_split(1, ns, ops);
}

static volatile uint64_t caught;

static void on_usr1(int sig)
{
    (void)sig;
    caught++;
}

/* kill(2) to oneself: the signal is delivered on the way out of the call,
 * so each operation is a syscall, a handler frame and rt_sigreturn. */
int b_signal(uint64_t *ns, uint64_t *ops)
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
int b_tmpfs_file(uint64_t *ns, uint64_t *ops)
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

/* openat(AT_FDCWD) + close of a file 5 path components deep
 * (/tmp/kbench-d1/d2/d3/file): the walk of every component. */
int b_openat_deep(uint64_t *ns, uint64_t *ops)
{
    const char *dirs[] = {"/tmp/kbench-d1", "/tmp/kbench-d1/d2", "/tmp/kbench-d1/d2/d3"};
    const char *path = "/tmp/kbench-d1/d2/d3/file";
    for (unsigned i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (mkdir(dirs[i], 0755) != 0 && errno != EEXIST)
            return fail(dirs[i]);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd < 0)
        return fail(path);
    close(fd);
    uint64_t n = iters(50000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        fd = openat(AT_FDCWD, path, O_RDONLY);
        if (fd < 0)
            return fail(path);
        if (close(fd) != 0)
            return fail("close");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

#define WATCHED 100

/* 100 pipe read ends of which the last has a byte waiting. */
static int watched_fds(int fds[WATCHED])
{
    for (int i = 0; i < WATCHED; i++) {
        int p[2];
        if (pipe(p) != 0)
            return fail("pipe");
        fds[i] = p[0];
        if (i == WATCHED - 1 && write(p[1], "x", 1) != 1)
            return fail("write");
        /* The write ends stay open (leaked until the benchmark's process
         * exits), so no read end reports a hang-up. */
    }
    return 0;
}

/* poll(2), timeout 0, on 100 pipe read ends, the last one readable. */
int b_poll_100(uint64_t *ns, uint64_t *ops)
{
    int fds[WATCHED];
    if (watched_fds(fds) != 0)
        return -1;
    struct pollfd pfd[WATCHED];
    for (int i = 0; i < WATCHED; i++)
        pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    uint64_t n = iters(20000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        int r = poll(pfd, WATCHED, 0);
        if (r != 1 || pfd[WATCHED - 1].revents != POLLIN)
            return r < 0 ? fail("poll") : fail_msg("poll did not report exactly the one readable pipe");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

/* select(2), zero timeout, on the same 100 read ends. */
int b_select_100(uint64_t *ns, uint64_t *ops)
{
    int fds[WATCHED], maxfd = 0;
    if (watched_fds(fds) != 0)
        return -1;
    for (int i = 0; i < WATCHED; i++)
        maxfd = fds[i] > maxfd ? fds[i] : maxfd;
    if (maxfd >= FD_SETSIZE)
        return fail_msg("descriptors past FD_SETSIZE");
    uint64_t n = iters(20000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        fd_set set;
        FD_ZERO(&set);
        for (int j = 0; j < WATCHED; j++)
            FD_SET(fds[j], &set);
        struct timeval tv = {0, 0};
        int r = select(maxfd + 1, &set, NULL, NULL, &tv);
        if (r != 1 || !FD_ISSET(fds[WATCHED - 1], &set))
            return r < 0 ? fail("select") : fail_msg("select did not report exactly the one readable pipe");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

#define DIR_ENTRIES 1000

/* Lists a 1,000-entry tmpfs directory: open, getdents64 until the end,
 * close. Each file name is also the check that every entry came back. */
int b_getdents(uint64_t *ns, uint64_t *ops)
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

/* Parallel scaling: PAR_PROCS processes each make the same number of
 * getppid calls at once. The parent times from the start barrier (it
 * closes a pipe all children block on) to the last child's exit, so the
 * figure is machine throughput: wall time over all calls made. With one
 * CPU the children take turns; with two a kernel that scales runs them
 * side by side and the figure halves. N is fixed, not the CPU count, so
 * the work is the same at every -smp and the speedup is a plain ratio of
 * times. Each child first runs a warm-up share untimed, then reports the
 * CPU it ended on (getcpu) through a shared page; the parent prints how
 * many distinct CPUs the children used as a `kbench parallel` note. */
#define PAR_PROCS 2

int b_parallel(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(300000);
    int ready[2], start[2];
    if (pipe(ready) != 0 || pipe(start) != 0)
        return fail("pipe");
    volatile unsigned *cpu = (volatile unsigned *)map_anon(PAGE, MAP_SHARED);
    if (!cpu)
        return fail("mmap");
    pid_t pids[PAR_PROCS];
    for (int p = 0; p < PAR_PROCS; p++) {
        cpu[p] = ~0u;
        pids[p] = fork();
        if (pids[p] < 0)
            return fail("fork");
        if (pids[p] == 0) {
            char c = 'r';
            close(ready[0]);
            close(start[1]);
            for (uint64_t i = 0; i < warm(n); i++)
                syscall(SYS_getppid);
            if (write(ready[1], &c, 1) != 1 || read(start[0], &c, 1) != 0)
                _exit(1);
            for (uint64_t i = 0; i < n; i++)
                syscall(SYS_getppid);
            unsigned mine = ~0u;
            if (syscall(SYS_getcpu, &mine, NULL, NULL) == 0)
                cpu[p] = mine;
            _exit(0);
        }
    }
    close(ready[1]);
    close(start[0]);
    char c;
    for (int p = 0; p < PAR_PROCS; p++)
        if (read(ready[0], &c, 1) != 1)
            return fail_msg("a child did not reach the start barrier");
    uint64_t t0 = now();
    close(start[1]); /* every child's read returns 0: go */
    for (int p = 0; p < PAR_PROCS; p++)
        if (reap(pids[p]) != 0)
            return -1;
    *ns = now() - t0;
    *ops = n * PAR_PROCS;
    close(ready[0]);
    cpu_set_t set;
    int online = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    int distinct = 0;
    for (int p = 0; p < PAR_PROCS; p++) {
        int seen = 0;
        for (int q = 0; q < p; q++)
            seen |= cpu[q] == cpu[p];
        distinct += !seen && cpu[p] != ~0u;
    }
    say("kbench parallel: %d processes, %d CPUs allowed, finished on %d distinct CPUs\n", PAR_PROCS, online,
        distinct);
    munmap((void *)cpu, PAGE);
    return 0;
}
