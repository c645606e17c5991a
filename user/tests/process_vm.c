/*
 * process_vm: process_vm_readv/process_vm_writev between a parent and a
 * forked child (the same addresses, different memory): gather and
 * scatter across several vectors and page boundaries, a copy-on-write
 * page written in the child only, partial transfers stopping at an
 * unmapped remote page, EFAULT for nothing copied (unmapped, read-only
 * for writev, a bad local buffer), EINVAL (flags, too many vectors, a
 * negative length), ESRCH, a thread id as target, the caller itself,
 * and the permission rule (PTRACE_MODE_ATTACH_REALCREDS: EPERM for
 * another user or a non-dumpable process as an unprivileged user).
 */
#include "common.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>

static long vm_readv(pid_t pid, const struct iovec *l, unsigned long ln, const struct iovec *r, unsigned long rn,
                     unsigned long flags)
{
    return syscall(SYS_process_vm_readv, pid, l, ln, r, rn, flags);
}

static long vm_writev(pid_t pid, const struct iovec *l, unsigned long ln, const struct iovec *r, unsigned long rn,
                      unsigned long flags)
{
    return syscall(SYS_process_vm_writev, pid, l, ln, r, rn, flags);
}

#define PAGE 4096
static char data[3 * PAGE] __attribute__((aligned(PAGE)));
static char *area; /* 4 pages: rw, rw, unmapped, read-only */

/* A child that sets up its memory, reports, waits, then exits with 0 if
 * the memory holds what the parent wrote. */
static int to_child[2], from_child[2];

static pid_t start_child(void)
{
    pipe(to_child);
    pipe(from_child);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 3 * PAGE; i++)
            data[i] = (char)('a' + i % 26);
        memcpy(area, "child area", 10);
        write(from_child[1], "r", 1);
        char c;
        read(to_child[0], &c, 1);
        int ok = memcmp(data + PAGE - 3, "PARENT", 6) == 0 && memcmp(area + 100, "XY", 2) == 0 &&
                 memcmp(area + PAGE - 1, "12", 2) == 0;
        _exit(ok ? 0 : 1);
    }
    char c;
    read(from_child[0], &c, 1);
    return pid;
}

static void *idle(void *arg)
{
    int *p = arg;
    char c;
    *(volatile pid_t *)&p[2] = (pid_t)syscall(SYS_gettid);
    write(p[1], "t", 1);
    read(p[3], &c, 1);
    return NULL;
}

int main(void)
{
    t_init("process_vm");
    area = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(area + 2 * PAGE, PAGE);
    mprotect(area + 3 * PAGE, PAGE, PROT_READ);
    memset(data, 'p', sizeof data);

    pid_t pid = start_child();
    char buf[64];
    struct iovec l[3], r[3];

    /* A read across two of the child's pages into three local buffers. */
    char b1[5], b2[3], b3[10];
    l[0] = (struct iovec){ b1, 5 };
    l[1] = (struct iovec){ b2, 3 };
    l[2] = (struct iovec){ b3, 10 };
    r[0] = (struct iovec){ data + PAGE - 4, 8 };
    r[1] = (struct iovec){ area, 10 };
    long n = vm_readv(pid, l, 3, r, 2, 0);
    check(n == 18, "readv gathers 18 bytes (%ld)", n);
    char want[8];
    for (int i = 0; i < 8; i++)
        want[i] = (char)('a' + (PAGE - 4 + i) % 26);
    check(memcmp(b1, want, 5) == 0 && memcmp(b2, want + 5, 3) == 0 && memcmp(b3, "child area", 10) == 0,
          "the child's bytes, not ours, in order");
    check(data[0] == 'p', "our own memory is untouched");

    /* The remote side running into an unmapped page: a partial read. */
    l[0] = (struct iovec){ buf, 64 };
    r[0] = (struct iovec){ area + 2 * PAGE - 8, 16 };
    n = vm_readv(pid, l, 1, r, 1, 0);
    check(n == 8, "readv up to an unmapped page: 8 bytes (%ld)", n);
    r[0] = (struct iovec){ area + 2 * PAGE, 16 };
    EXPECT_ERR(EFAULT, "readv of an unmapped page", vm_readv(pid, l, 1, r, 1, 0));
    r[0] = (struct iovec){ area + 2 * PAGE, 16 };
    r[1] = (struct iovec){ area, 4 };
    EXPECT_ERR(EFAULT, "readv stops at the first bad vector", vm_readv(pid, l, 1, r, 2, 0));
    r[0] = (struct iovec){ (void *)0xffff800000000000UL, 16 };
    EXPECT_ERR(EFAULT, "readv of a kernel address", vm_readv(pid, l, 1, r, 1, 0));
    r[0] = (struct iovec){ area, 16 };
    l[0] = (struct iovec){ BAD_PTR, 16 };
    EXPECT_ERR(EFAULT, "readv into a bad local buffer", vm_readv(pid, l, 1, r, 1, 0));
    l[0] = (struct iovec){ area + 3 * PAGE, 16 };
    EXPECT_ERR(EFAULT, "readv into a read-only local buffer", vm_readv(pid, l, 1, r, 1, 0));
    l[0] = (struct iovec){ buf, 8 };
    l[1] = (struct iovec){ area + 2 * PAGE, 8 };
    n = vm_readv(pid, l, 2, r, 1, 0);
    check(n == 8, "readv stops at a bad second local buffer after 8 bytes (%ld)", n);
    l[0] = (struct iovec){ KERNEL_PTR, 8 };
    EXPECT_ERR(EFAULT, "readv into a kernel address", vm_readv(pid, l, 1, r, 1, 0));

    /* Argument errors. */
    l[0] = (struct iovec){ buf, 8 };
    EXPECT_ERR(EINVAL, "readv(flags 1)", vm_readv(pid, l, 1, r, 1, 1));
    EXPECT_ERR(EINVAL, "readv(1025 local vectors)", vm_readv(pid, l, 1025, r, 1, 0));
    EXPECT_ERR(EINVAL, "readv(1025 remote vectors)", vm_readv(pid, l, 1, r, 1025, 0));
    l[1] = (struct iovec){ buf, (size_t)-1 };
    EXPECT_ERR(EINVAL, "readv(negative local length)", vm_readv(pid, l, 2, r, 1, 0));
    r[1] = (struct iovec){ buf, (size_t)-1 };
    EXPECT_ERR(EINVAL, "readv(negative remote length)", vm_readv(pid, l, 1, r, 2, 0));
    EXPECT_ERR(EFAULT, "readv(bad local vector array)", vm_readv(pid, BAD_PTR, 1, r, 1, 0));
    EXPECT_ERR(EFAULT, "readv(bad remote vector array)", vm_readv(pid, l, 1, BAD_PTR, 1, 0));
    check(vm_readv(pid, l, 0, r, 1, 0) == 0, "readv with no local vectors: 0");
    check(vm_readv(pid, l, 1, r, 0, 0) == 0, "readv with no remote vectors: 0");
    l[0] = (struct iovec){ buf, 0 };
    check(vm_readv(pid, l, 1, r, 1, 0) == 0, "readv with zero lengths: 0");
    check(vm_readv(-1, l, 1, r, 1, 0) == 0, "readv of nobody with nothing to copy: 0");
    l[0] = (struct iovec){ buf, 8 };
    EXPECT_ERR(ESRCH, "readv(pid -1)", vm_readv(-1, l, 1, r, 1, 0));
    EXPECT_ERR(ESRCH, "readv(pid 0)", vm_readv(0, l, 1, r, 1, 0));

    /* Writes: into a copy-on-write page and across a page boundary. */
    l[0] = (struct iovec){ "PARENT", 6 };
    r[0] = (struct iovec){ data + PAGE - 3, 6 };
    check(vm_writev(pid, l, 1, r, 1, 0) == 6, "writev across a page boundary");
    check(data[PAGE - 3] == 'p', "our copy of the page is untouched");
    l[0] = (struct iovec){ "X", 1 };
    l[1] = (struct iovec){ "Y12", 3 };
    r[0] = (struct iovec){ area + 100, 2 };
    r[1] = (struct iovec){ area + PAGE - 1, 2 };
    check(vm_writev(pid, l, 2, r, 2, 0) == 4, "writev scatters 4 bytes");
    l[0] = (struct iovec){ "zz", 2 };
    r[0] = (struct iovec){ area + 3 * PAGE, 2 };
    EXPECT_ERR(EFAULT, "writev to a read-only page", vm_writev(pid, l, 1, r, 1, 0));
    r[0] = (struct iovec){ area + 2 * PAGE, 2 };
    EXPECT_ERR(EFAULT, "writev to an unmapped page", vm_writev(pid, l, 1, r, 1, 0));
    l[0] = (struct iovec){ BAD_PTR, 2 };
    r[0] = (struct iovec){ area, 2 };
    EXPECT_ERR(EFAULT, "writev from a bad local buffer", vm_writev(pid, l, 1, r, 1, 0));
    EXPECT_ERR(EINVAL, "writev(flags 1)", vm_writev(pid, l, 1, r, 1, 1));
    write(to_child[1], "g", 1);
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child found what was written (%s)", status_str(st));
    l[0] = (struct iovec){ buf, 8 };
    r[0] = (struct iovec){ area, 8 };
    EXPECT_ERR(ESRCH, "readv of a reaped child", vm_readv(pid, l, 1, r, 1, 0));

    /* Ourselves, and one of our threads by its id. */
    memcpy(area, "own data", 8);
    memset(buf, 0, sizeof buf);
    check(vm_readv(getpid(), l, 1, r, 1, 0) == 8 && memcmp(buf, "own data", 8) == 0, "readv of ourselves");
    int p[4];
    pipe(p);
    pipe(p + 2);
    int targ[4] = { p[0], p[1], 0, p[2] };
    pthread_t t;
    pthread_create(&t, NULL, idle, targ);
    char c;
    read(p[0], &c, 1);
    memset(buf, 0, sizeof buf);
    n = vm_readv(targ[2], l, 1, r, 1, 0);
    check(n == 8 && memcmp(buf, "own data", 8) == 0, "readv naming a thread id");
    write(p[3], "x", 1);
    pthread_join(t, NULL);

    /* Permission: an unprivileged user and root's process, then one of
     * its own that is not dumpable. */
    pid = start_child();
    pid_t checker = fork();
    if (checker == 0) {
        if (setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0)
            _exit(90);
        /* Changing ids made us undumpable; our children inherit that. */
        prctl(PR_SET_DUMPABLE, 1);
        int fails = 0;
        char lb[8];
        struct iovec li = { lb, 8 }, ri = { area, 8 };
        errno = 0;
        if (!(vm_readv(pid, &li, 1, &ri, 1, 0) == -1 && errno == EPERM))
            fails |= 1;
        errno = 0;
        if (!(vm_writev(pid, &li, 1, &ri, 1, 0) == -1 && errno == EPERM))
            fails |= 2;
        int g[2], b[2];
        pipe(g);
        pipe(b);
        pid_t mine = fork();
        if (mine == 0) {
            prctl(PR_SET_DUMPABLE, 0);
            write(b[1], "d", 1);
            read(g[0], lb, 1);
            _exit(0);
        }
        read(b[0], lb, 1);
        errno = 0;
        if (!(vm_readv(mine, &li, 1, &ri, 1, 0) == -1 && errno == EPERM))
            fails |= 4;
        /* Nothing to copy: 0 before the permission check. */
        li.iov_len = 0;
        if (vm_readv(mine, &li, 1, &ri, 1, 0) != 0)
            fails |= 8;
        write(g[1], "x", 1);
        waitpid(mine, NULL, 0);
        /* A dumpable one of ours. */
        pipe(g);
        pipe(b);
        mine = fork();
        if (mine == 0) {
            memcpy(area, "user1000", 8);
            write(b[1], "d", 1);
            read(g[0], lb, 1);
            _exit(0);
        }
        read(b[0], lb, 1);
        li.iov_len = 8;
        if (!(vm_readv(mine, &li, 1, &ri, 1, 0) == 8 && memcmp(lb, "user1000", 8) == 0))
            fails |= 16;
        write(g[1], "x", 1);
        waitpid(mine, NULL, 0);
        _exit(fails);
    }
    wait_for(checker, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "as user 1000: EPERM for root's process and an undumpable one of its own, 0 with nothing to copy, "
          "a dumpable one of its own read (%s)",
          status_str(st));
    /* Root reads a process of user 1000. */
    int g[2], b[2];
    pipe(g);
    pipe(b);
    pid_t user = fork();
    if (user == 0) {
        if (setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0)
            _exit(90);
        prctl(PR_SET_DUMPABLE, 0);
        memcpy(area, "nobody's", 8);
        write(b[1], "d", 1);
        read(g[0], &c, 1);
        _exit(0);
    }
    read(b[0], &c, 1);
    memset(buf, 0, sizeof buf);
    check(vm_readv(user, l, 1, r, 1, 0) == 8 && memcmp(buf, "nobody's", 8) == 0,
          "root reads an undumpable process of user 1000");
    write(g[1], "x", 1);
    wait_for(user, &st, 0);
    memcpy(area, "child area", 10);
    write(to_child[1], "g", 1);
    wait_for(pid, &st, 0);
    return t_done();
}
