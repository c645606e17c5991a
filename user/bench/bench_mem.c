/*
 * bench_mem.c: memory, processes and bandwidth: anonymous and
 * copy-on-write page faults, mmap+munmap, fork/exec/sh life cycles, pipe
 * bandwidth and the user-space memcpy control.
 */
#include "kbench.h"

#include <sys/socket.h>

/* First touch of fresh anonymous pages, 1 MiB at a time; only the
 * touching is timed, not the mmap and munmap around it. */
int b_page_fault(uint64_t *ns, uint64_t *ops)
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

int b_mmap_munmap(uint64_t *ns, uint64_t *ops)
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
int b_cow_fault(uint64_t *ns, uint64_t *ops)
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

int b_fork_exit(uint64_t *ns, uint64_t *ops)
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

int b_fork_exec(uint64_t *ns, uint64_t *ops)
{
    char *const argv[] = {"kbench", "nop", NULL};
    return spawn_wait(self, argv, 1000, ns, ops);
}

int b_sh_true(uint64_t *ns, uint64_t *ops)
{
    char *const argv[] = {"sh", "-c", "true", NULL};
    return spawn_wait("/bin/sh", argv, 500, ns, ops);
}

/* A child writes 64 KiB chunks into a pipe; the parent reads them. */
int b_pipe_bw(uint64_t *ns, uint64_t *ops)
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

/* 64 KiB writes through an AF_UNIX stream socketpair to another process. */
int b_unix_bw(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(5000), total = warm(n) + n;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return fail("socketpair");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    static char buf[CHUNK];
    if (pid == 0) {
        close(sv[0]);
        memset(buf, 'u', sizeof buf);
        for (uint64_t i = 0; i < total; i++)
            if (write(sv[1], buf, CHUNK) != CHUNK)
                _exit(1);
        _exit(0);
    }
    close(sv[1]);
    uint64_t got = 0;
    while (got < total * CHUNK) {
        if (got >= warm(n) * CHUNK && *ns == 0)
            *ns = now();
        long r = read(sv[0], buf, CHUNK);
        if (r <= 0)
            return r < 0 ? fail("read") : fail_msg("socket closed early");
        got += r;
    }
    *ns = now() - *ns;
    *ops = n;
    close(sv[0]);
    return reap(pid);
}

/* User-space memcpy of 1 MiB: no kernel involved, so the ratio shows how
 * much the machine itself differs between the two runs. */
int b_memcpy_bw(uint64_t *ns, uint64_t *ops)
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

/* A 1 MiB file in /tmp (tmpfs on both kernels), written once. */
static int map_file_fd(void)
{
    static int fd = -1;
    if (fd >= 0)
        return fd;
    fd = open("/tmp/kbench.map", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return fail("open /tmp/kbench.map");
    static char page[PAGE];
    memset(page, 'f', sizeof page);
    for (int i = 0; i < MIB / PAGE; i++)
        if (write(fd, page, PAGE) != PAGE)
            return fail("write /tmp/kbench.map");
    return fd;
}

/* mmap of a 1 MiB file already in the page cache, then the first read of
 * each of its pages (the kernel may map neighbours of a faulting page at
 * once: Linux's fault-around maps up to 16). Timed: the mmap and the
 * reads; per page. */
int b_file_fault(uint64_t *ns, uint64_t *ops)
{
    uint64_t rounds = iters(200), pages = MIB / PAGE;
    int fd = map_file_fd();
    if (fd < 0)
        return -1;
    *ns = 0;
    for (uint64_t r = 0; r < warm(rounds) + rounds; r++) {
        uint64_t t0 = now();
        volatile char *p = mmap(NULL, MIB, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            return fail("mmap");
        for (uint64_t i = 0; i < pages; i++)
            if (p[i * PAGE] != 'f')
                return fail_msg("the mapping does not show the file's bytes");
        if (r >= warm(rounds))
            *ns += now() - t0;
        if (munmap((void *)p, MIB) != 0)
            return fail("munmap");
    }
    *ops = rounds * pages;
    return 0;
}

/* madvise(MADV_DONTNEED) of 1 MiB of written anonymous memory, then a
 * write to each of its 256 pages (zero-filled again); per page. */
int b_madv_refault(uint64_t *ns, uint64_t *ops)
{
    uint64_t rounds = iters(200), pages = MIB / PAGE;
    char *p = map_anon(MIB, MAP_PRIVATE);
    if (!p)
        return fail("mmap");
    memset(p, 1, MIB);
    for (uint64_t r = 0; r < warm(rounds) + rounds; r++) {
        if (r == warm(rounds))
            *ns = now();
        if (madvise(p, MIB, MADV_DONTNEED) != 0)
            return fail("madvise");
        for (uint64_t i = 0; i < pages; i++) {
            if (p[i * PAGE] != 0)
                return fail_msg("a page kept its bytes after MADV_DONTNEED");
            p[i * PAGE] = 1;
        }
    }
    *ns = now() - *ns;
    *ops = rounds * pages;
    return 0;
}

/* brk(2) growing the heap by 64 KiB and a write to each new page, as an
 * allocator extending its arena does; back to the start (untimed) every
 * 1 MiB. Per 64 KiB step. */
int b_brk_grow(uint64_t *ns, uint64_t *ops)
{
    uint64_t steps = MIB / CHUNK, rounds = iters(200);
    char *base = (char *)syscall(SYS_brk, 0);
    *ns = 0;
    for (uint64_t r = 0; r < warm(rounds) + rounds; r++) {
        uint64_t t0 = now();
        for (uint64_t s = 0; s < steps; s++) {
            char *top = base + (s + 1) * CHUNK;
            if ((char *)syscall(SYS_brk, top) != top)
                return fail_msg("brk did not grow");
            for (char *q = top - CHUNK; q < top; q += PAGE)
                *q = 1;
        }
        if (r >= warm(rounds))
            *ns += now() - t0;
        if ((char *)syscall(SYS_brk, base) != base)
            return fail_msg("brk did not shrink");
    }
    *ops = rounds * steps;
    return 0;
}

static void *thread_returns(void *arg)
{
    return arg;
}

/* pthread_create of a thread that returns at once, and pthread_join
 * (musl maps the thread's stack, clones, and unmaps it at join). */
int b_thread_clone(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = iters(2000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        pthread_t t;
        void *ret = NULL;
        if ((errno = pthread_create(&t, NULL, thread_returns, (void *)&n)) != 0)
            return fail("pthread_create");
        if ((errno = pthread_join(t, &ret)) != 0)
            return fail("pthread_join");
        if (ret != (void *)&n)
            return fail_msg("pthread_join returned the wrong value");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

int b_exec_busybox(uint64_t *ns, uint64_t *ops)
{
    char *const argv[] = {"true", NULL};
    return spawn_wait("/bin/busybox", argv, 500, ns, ops);
}
