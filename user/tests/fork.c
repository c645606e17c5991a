/*
 * fork: fork/vfork, copy-on-write, wait4/waitpid/waitid status encoding,
 * ECHILD, WNOHANG, orphan reparenting and zombies.
 */
#include "common.h"
#include <sys/mman.h>
#include <sys/resource.h>

static int g_data = 100;          /* .data */
static int g_bss;                 /* .bss */

static void test_basic(void)
{
    pid_t parent = getpid();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = getppid() == parent && getpid() != parent;
        _exit(ok ? 7 : 1);
    }
    check(pid > 0, "fork() > 0 in parent");
    int st = 0;
    struct rusage ru;
    pid_t r = wait4(pid, &st, 0, &ru);
    check(r == pid, "wait4 returns the child's pid");
    check(WIFEXITED(st) && !WIFSIGNALED(st), "WIFEXITED");
    check(WEXITSTATUS(st) == 7, "child exit status 7 (child saw getppid()==parent)");
    check((st & 0xffff) == (7 << 8), "raw status encoding 0x0700");

    /* Exit codes are truncated to 8 bits. */
    static const int codes[] = { 0, 1, 127, 255, 256, 300 };
    for (unsigned i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        fflush(stdout);
        pid = fork();
        if (pid == 0)
            _exit(codes[i]);
        wait_for(pid, &st, 0);
        check(WIFEXITED(st) && WEXITSTATUS(st) == (codes[i] & 0xff),
              "_exit(%d) -> exit status %d", codes[i], codes[i] & 0xff);
    }

    /* exit() via return from a function in the child flushes stdio. */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        setvbuf(stdout, NULL, _IOFBF, 0);
        printf("child: buffered line flushed by exit()\n");
        exit(3);
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 3, "exit(3) status");
}

static void test_cow(void)
{
    int stack_var = 5;
    int *heap = malloc(64 * sizeof(int));
    for (int i = 0; i < 64; i++)
        heap[i] = i;
    g_bss = 9;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = g_data == 100 && g_bss == 9 && stack_var == 5 && heap[63] == 63;
        g_data = 1;
        g_bss = 2;
        stack_var = 3;
        for (int i = 0; i < 64; i++)
            heap[i] = -1;
        ok = ok && g_data == 1 && heap[0] == -1;
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child sees pre-fork values and its own writes");
    int ok = 1;
    for (int i = 0; i < 64; i++)
        if (heap[i] != i)
            ok = 0;
    check(g_data == 100 && g_bss == 9, "COW: globals unchanged in parent");
    check(*(volatile int *)&stack_var == 5, "COW: stack unchanged in parent");
    check(ok, "COW: heap unchanged in parent");
    free(heap);

    /* The parent writing after fork is invisible to the child. */
    int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared[0] = 0;
    g_data = 100;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        while (__atomic_load_n(&shared[0], __ATOMIC_SEQ_CST) == 0)
            sched_yield();
        _exit(g_data == 100 ? 0 : 1);
    }
    g_data = 555;
    __atomic_store_n(&shared[0], 1, __ATOMIC_SEQ_CST);
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "COW: parent's later write invisible to child");
    g_data = 100;
    munmap(shared, 4096);
}

static volatile int vfork_flag;

static void test_vfork(void)
{
    vfork_flag = 0;
    pid_t parent = getpid();
    fflush(stdout);
    pid_t pid = vfork();
    if (pid == 0) {
        /* Shares memory with the suspended parent until _exit. */
        vfork_flag = (getppid() == parent) ? 42 : 1;
        _exit(3);
    }
    check(pid > 0, "vfork() > 0 in parent");
    check(vfork_flag == 42, "vfork child ran first and shares memory");
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 3, "vfork child exit status 3");
}

static void test_signaled(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    int st = 0;
    check(waitpid(pid, &st, WNOHANG) == 0, "waitpid(WNOHANG) on running child returns 0");
    check(waitpid(-1, &st, WNOHANG) == 0, "waitpid(-1, WNOHANG) with only a running child returns 0");
    check(kill(pid, SIGKILL) == 0, "kill(child, SIGKILL)");
    check(wait_for(pid, &st, 0) == pid, "waitpid reaps killed child");
    check(WIFSIGNALED(st) && !WIFEXITED(st), "WIFSIGNALED");
    check(WTERMSIG(st) == SIGKILL, "WTERMSIG == SIGKILL");

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
        _exit(1);
    }
    wait_for(pid, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "child raise(SIGTERM) -> WTERMSIG == SIGTERM");
}

static void test_waitid(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(5);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    check(waitid(P_PID, pid, &si, WEXITED) == 0, "waitid(P_PID, WEXITED) returns 0");
    check(si.si_signo == SIGCHLD, "waitid si_signo == SIGCHLD");
    check(si.si_code == CLD_EXITED, "waitid si_code == CLD_EXITED");
    check(si.si_status == 5, "waitid si_status == 5");
    check(si.si_pid == pid, "waitid si_pid == child");
    check(si.si_uid == 0, "waitid si_uid == 0");

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    memset(&si, 0, sizeof si);
    check(waitid(P_PID, pid, &si, WEXITED | WNOHANG) == 0 && si.si_pid == 0,
          "waitid(WNOHANG) on running child: si_pid == 0");
    kill(pid, SIGKILL);
    memset(&si, 0, sizeof si);
    /* WNOWAIT leaves the child waitable. */
    check(waitid(P_PID, pid, &si, WEXITED | WNOWAIT) == 0, "waitid(WNOWAIT)");
    check(si.si_code == CLD_KILLED && si.si_status == SIGKILL, "WNOWAIT: si_code CLD_KILLED, si_status SIGKILL");
    memset(&si, 0, sizeof si);
    check(waitid(P_ALL, 0, &si, WEXITED) == 0, "waitid(P_ALL) after WNOWAIT reaps");
    check(si.si_pid == pid && si.si_code == CLD_KILLED && si.si_status == SIGKILL,
          "waitid si_code CLD_KILLED, si_status SIGKILL");
    EXPECT_ERR(EINVAL, "waitid(no WEXITED/WSTOPPED/WCONTINUED)", waitid(P_ALL, 0, &si, 0));
}

static void test_echild(void)
{
    int st;
    EXPECT_ERR(ECHILD, "wait() with no children", wait(&st));
    EXPECT_ERR(ECHILD, "waitpid(-1, WNOHANG) with no children", waitpid(-1, &st, WNOHANG));
    EXPECT_ERR(ECHILD, "waitpid(1) (not our child)", waitpid(1, &st, 0));
    EXPECT_ERR(ECHILD, "waitpid(getpid())", waitpid(getpid(), &st, 0));
    siginfo_t si;
    EXPECT_ERR(ECHILD, "waitid(P_ALL) with no children", waitid(P_ALL, 0, &si, WEXITED));
    EXPECT_ERR(EINVAL, "waitpid(bad options)", waitpid(-1, &st, 0x10000000));
}

static void test_many(void)
{
    /* Five children, reaped by wait() in whatever order. */
    pid_t pids[5];
    for (int i = 0; i < 5; i++) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(10 + i);
    }
    int seen = 0, sum = 0;
    for (int i = 0; i < 5; i++) {
        int st = 0;
        pid_t r = wait(&st);
        for (int j = 0; j < 5; j++)
            if (r == pids[j] && WIFEXITED(st) && WEXITSTATUS(st) == 10 + j)
                seen |= 1 << j;
        sum += WEXITSTATUS(st);
    }
    check(seen == 31 && sum == 60, "wait() reaps 5 children with matching statuses");
    int st;
    EXPECT_ERR(ECHILD, "wait() after all reaped", wait(&st));

    /* waitpid for a specific child among several. */
    pid_t a, b;
    fflush(stdout);
    a = fork();
    if (a == 0)
        _exit(21);
    fflush(stdout);
    b = fork();
    if (b == 0)
        _exit(22);
    int sb = 0, sa = 0;
    check(wait_for(b, &sb, 0) == b && WEXITSTATUS(sb) == 22, "waitpid(second child) first");
    check(wait_for(a, &sa, 0) == a && WEXITSTATUS(sa) == 21, "waitpid(first child) second");
}

static void test_zombie(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    sleep_ms(30);
    check(kill(pid, 0) == 0, "zombie child still exists (kill(pid, 0) == 0)");
    siginfo_t si;
    memset(&si, 0, sizeof si);
    check(waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid,
          "zombie is waitable with WNOHANG");
    int st;
    check(wait_for(pid, &st, 0) == pid, "zombie reaped");
    EXPECT_ERR(ESRCH, "kill(reaped pid, 0)", kill(pid, 0));
    EXPECT_ERR(ECHILD, "waitpid(reaped pid)", waitpid(pid, &st, 0));
}

struct orphan_info {
    volatile int grandchild_ppid_initial_ok;
    volatile int reparented;
    volatile int done;
};

static void test_orphan(void)
{
    struct orphan_info *info = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(info, 0, sizeof *info);
    fflush(stdout);
    pid_t mid = fork();
    if (mid == 0) {
        pid_t me = getpid();
        pid_t g = fork();
        if (g == 0) {
            /* Grandchild: writes results only to shared memory. */
            info->grandchild_ppid_initial_ok = (getppid() == me);
            __atomic_store_n(&info->done, 1, __ATOMIC_SEQ_CST);
            for (int i = 0; i < 2000; i++) {
                if (getppid() != me) {
                    info->reparented = 1;
                    break;
                }
                sleep_ms(2);
            }
            __atomic_store_n(&info->done, 2, __ATOMIC_SEQ_CST);
            _exit(0);
        }
        while (__atomic_load_n(&info->done, __ATOMIC_SEQ_CST) == 0)
            sched_yield();
        _exit(0); /* orphan the grandchild */
    }
    int st;
    check(wait_for(mid, &st, 0) == mid && WIFEXITED(st), "middle child exited");
    for (int i = 0; i < 5000 && __atomic_load_n(&info->done, __ATOMIC_SEQ_CST) != 2; i++)
        sleep_ms(1);
    check(info->grandchild_ppid_initial_ok, "grandchild's getppid() was the middle child");
    check(info->reparented, "orphaned grandchild reparented (getppid() changed)");
    EXPECT_ERR(ECHILD, "grandchild is not our child", waitpid(-1, &st, WNOHANG));
    munmap(info, 4096);
}

int main(void)
{
    t_init("fork");
    test_basic();
    test_cow();
    test_vfork();
    test_signaled();
    test_waitid();
    test_echild();
    test_many();
    test_zombie();
    test_orphan();
    return t_done();
}
