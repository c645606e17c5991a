/*
 * clone3: struct clone_args sizes (E2BIG, EINVAL below 64 bytes, a zero
 * tail past the known fields accepted), flag and exit_signal rules,
 * stack/stack_size checks, set_tid (EEXIST for a used id),
 * CLONE_CLEAR_SIGHAND, CLONE_INTO_CGROUP's checks; and kcmp on what fork
 * shares. (CLONE_PIDFD is in pidfd.c.)
 */
#include "common.h"

#include <fcntl.h>
#include <sys/mman.h>

#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif
#define KCMP_FILE 0
#define KCMP_VM 1
#define KCMP_FILES 2
#define KCMP_SIGHAND 4
#define KCMP_IO 5

struct args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

static long clone3(struct args *a, size_t size)
{
    return syscall(SYS_clone3, a, size);
}

static int reap(pid_t pid)
{
    int st = 0;
    if (wait_for(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void on_usr1(int s)
{
    (void)s;
}

int main(void)
{
    t_init("clone3");
    struct args a;
    unsigned char big[256];

    memset(&a, 0, sizeof a);
    a.exit_signal = SIGCHLD;
    EXPECT_ERR(EINVAL, "clone3(size 56)", clone3(&a, 56));
    EXPECT_ERR(E2BIG, "clone3(size 8192)", clone3(&a, 8192));
    EXPECT_ERR(EFAULT, "clone3(bad pointer)", syscall(SYS_clone3, BAD_PTR, sizeof a));
    memset(big, 0, sizeof big);
    memcpy(big, &a, sizeof a);
    big[200] = 1;
    EXPECT_ERR(E2BIG, "clone3(non-zero tail)", clone3((struct args *)big, sizeof big));
    a.exit_signal = 65;
    EXPECT_ERR(EINVAL, "clone3(exit_signal 65)", clone3(&a, sizeof a));
    a.exit_signal = 0x100000000ULL | SIGCHLD;
    EXPECT_ERR(EINVAL, "clone3(exit_signal high bits)", clone3(&a, sizeof a));
    a.exit_signal = SIGCHLD;
    a.flags = CLONE_DETACHED;
    EXPECT_ERR(EINVAL, "clone3(CLONE_DETACHED)", clone3(&a, sizeof a));
    a.flags = 0x11; /* a CSIGNAL bit */
    EXPECT_ERR(EINVAL, "clone3(CSIGNAL bits in flags)", clone3(&a, sizeof a));
    a.flags = CLONE_SIGHAND | CLONE_VM | CLONE_CLEAR_SIGHAND;
    EXPECT_ERR(EINVAL, "clone3(CLONE_SIGHAND|CLONE_CLEAR_SIGHAND)", clone3(&a, sizeof a));
    a.flags = CLONE_PARENT;
    EXPECT_ERR(EINVAL, "clone3(CLONE_PARENT with exit_signal)", clone3(&a, sizeof a));
    a.flags = 1ULL << 40;
    EXPECT_ERR(EINVAL, "clone3(unknown flag)", clone3(&a, sizeof a));
    a.flags = 0;
    a.stack = 0;
    a.stack_size = 4096;
    EXPECT_ERR(EINVAL, "clone3(stack_size without stack)", clone3(&a, sizeof a));
    a.stack = 0x10000;
    a.stack_size = 0;
    EXPECT_ERR(EINVAL, "clone3(stack without stack_size)", clone3(&a, sizeof a));
    a.stack = 0;
    pid_t used = getpid();
    a.set_tid = (uint64_t)(uintptr_t)&used;
    a.set_tid_size = 0;
    EXPECT_ERR(EINVAL, "clone3(set_tid without size)", clone3(&a, sizeof a));
    a.set_tid_size = 2;
    EXPECT_ERR(EINVAL, "clone3(set_tid_size 2)", clone3(&a, sizeof a));
    a.set_tid_size = 1;
    EXPECT_ERR(EEXIST, "clone3(set_tid = own pid)", clone3(&a, sizeof a));
    used = -3;
    EXPECT_ERR(EINVAL, "clone3(set_tid -3)", clone3(&a, sizeof a));
    a.set_tid = 0;
    a.set_tid_size = 0;
    a.flags = (1ULL << 33); /* CLONE_INTO_CGROUP */
    a.cgroup = 1ULL << 40;
    EXPECT_ERR(EINVAL, "clone3(CLONE_INTO_CGROUP, cgroup > INT_MAX)", clone3(&a, sizeof a));
    a.cgroup = 0;
    EXPECT_ERR(EINVAL, "clone3(CLONE_INTO_CGROUP, size 64)", clone3(&a, 64));
    a.flags = 0;

    /* A plain fork through clone3, at the smallest size. */
    long pid = clone3(&a, 64);
    if (pid == 0)
        _exit(7);
    check(pid > 0 && reap(pid) == 7, "clone3(64 bytes) forks; the child exits 7");
    /* A zero tail past the known fields is fine. */
    memset(big, 0, sizeof big);
    memcpy(big, &a, sizeof a);
    pid = clone3((struct args *)big, sizeof big);
    if (pid == 0)
        _exit(8);
    check(pid > 0 && reap(pid) == 8, "clone3(256 bytes, zero tail) forks");

    /* exit_signal 0: no SIGCHLD, still waitable with __WALL. */
    a.exit_signal = 0;
    pid = clone3(&a, sizeof a);
    if (pid == 0)
        _exit(9);
    int st = 0;
    check(pid > 0 && waitpid(pid, &st, __WALL) == pid && WEXITSTATUS(st) == 9, "exit_signal 0 child reaped with __WALL");
    a.exit_signal = SIGCHLD;

    /* set_tid: a free id. */
    pid_t want = 0;
    for (pid_t p = 30000; p < 31000 && !want; p++)
        if (kill(p, 0) == -1 && errno == ESRCH)
            want = p;
    a.set_tid = (uint64_t)(uintptr_t)&want;
    a.set_tid_size = 1;
    pid = clone3(&a, sizeof a);
    if (pid == 0)
        _exit(getpid() == want ? 0 : 1);
    check(pid == want && reap(pid) == 0, "set_tid gives the child the id asked for");
    a.set_tid = 0;
    a.set_tid_size = 0;

    /* CLONE_CLEAR_SIGHAND: handlers reset, ignored stays ignored. */
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, SIG_IGN);
    a.flags = CLONE_CLEAR_SIGHAND;
    pid = clone3(&a, sizeof a);
    if (pid == 0) {
        struct sigaction s1, s2;
        sigaction(SIGUSR1, NULL, &s1);
        sigaction(SIGUSR2, NULL, &s2);
        _exit(s1.sa_handler == SIG_DFL && s2.sa_handler == SIG_IGN ? 0 : 1);
    }
    check(pid > 0 && reap(pid) == 0, "CLONE_CLEAR_SIGHAND: handler reset, SIG_IGN kept");
    a.flags = 0;
    signal(SIGUSR1, SIG_DFL);
    signal(SIGUSR2, SIG_DFL);

    /* kcmp. */
    pid_t me = getpid();
    int fd = dup(1);
    check(syscall(SYS_kcmp, me, me, KCMP_FILE, 1, fd) == 0, "kcmp: a dup is the same open file");
    int other = open("/proc/self/stat", O_RDONLY);
    check(syscall(SYS_kcmp, me, me, KCMP_FILE, 1, other) > 0, "kcmp: another open file differs");
    EXPECT_ERR(EBADF, "kcmp(KCMP_FILE, bad fd)", syscall(SYS_kcmp, me, me, KCMP_FILE, 1, 999));
    EXPECT_ERR(EINVAL, "kcmp(type 9)", syscall(SYS_kcmp, me, me, 9, 0, 0));
    EXPECT_ERR(ESRCH, "kcmp(no such pid)", syscall(SYS_kcmp, me, 999999, KCMP_VM, 0, 0));
    check(syscall(SYS_kcmp, me, me, KCMP_IO, 0, 0) == 0, "kcmp(KCMP_IO) of itself: equal");
    int go[2], back[2];
    pipe(go);
    pipe(back);
    pid = fork();
    if (pid == 0) {
        char c;
        write(back[1], "r", 1);
        read(go[0], &c, 1);
        _exit(0);
    }
    char c;
    read(back[0], &c, 1);
    check(syscall(SYS_kcmp, me, pid, KCMP_VM, 0, 0) > 0, "kcmp: a fork child has its own address space");
    check(syscall(SYS_kcmp, me, pid, KCMP_FILES, 0, 0) > 0, "kcmp: and its own descriptor table");
    check(syscall(SYS_kcmp, me, pid, KCMP_FILE, fd, fd) == 0, "kcmp: but shares the open files");
    write(go[1], "g", 1);
    reap(pid);
    return t_done();
}
