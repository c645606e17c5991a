/*
 * seccomp: strict mode (read/write/exit/rt_sigreturn only, SIGKILL
 * otherwise), filter mode: the queries (GET_ACTION_AVAIL,
 * GET_NOTIF_SIZES), the privilege rule (EACCES without no_new_privs or
 * CAP_SYS_ADMIN), the checks on a program (lengths, opcodes, data loads,
 * jumps, returns, scratch memory, EFAULT), each action (ERRNO with its
 * cap, TRAP with its siginfo and registers, TRACE and USER_NOTIF without
 * a tracer or listener, LOG, KILL_THREAD, KILL_PROCESS, unknown values),
 * argument and number matching, stacking and precedence, the path
 * length limit, inheritance over fork, threads and execve, TSYNC (success,
 * no_new_privs carried over, the failing thread's id, TSYNC_ESRCH), and
 * the Seccomp:/Seccomp_filters:/NoNewPrivs: lines of /proc status.
 *
 * Every scenario runs in a child, since filters cannot be removed.
 */
#include "common.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <ucontext.h>

/* <linux/seccomp.h> and <linux/filter.h>, which musl does not ship. */
struct sock_filter {
    uint16_t code;
    uint8_t jt, jf;
    uint32_t k;
};
struct sock_fprog {
    unsigned short len;
    struct sock_filter *filter;
};
#define SECCOMP_MODE_STRICT 1
#define SECCOMP_MODE_FILTER 2
#define SECCOMP_SET_MODE_STRICT 0
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_GET_ACTION_AVAIL 2
#define SECCOMP_GET_NOTIF_SIZES 3
#define FLAG_TSYNC 1u
#define FLAG_LOG 2u
#define FLAG_SPEC_ALLOW 4u
#define FLAG_NEW_LISTENER 8u
#define FLAG_TSYNC_ESRCH 16u
#define FLAG_WAIT_KILLABLE_RECV 32u
#define RET_KILL_PROCESS 0x80000000u
#define RET_KILL_THREAD 0x00000000u
#define RET_TRAP 0x00030000u
#define RET_ERRNO 0x00050000u
#define RET_USER_NOTIF 0x7fc00000u
#define RET_TRACE 0x7ff00000u
#define RET_LOG 0x7ffc0000u
#define RET_ALLOW 0x7fff0000u
#define AUDIT_ARCH_X86_64 0xc000003eu
#define SYS_SECCOMP_CODE 1

#define BPF_LD 0x00
#define BPF_LDX 0x01
#define BPF_ST 0x02
#define BPF_ALU 0x04
#define BPF_JMP 0x05
#define BPF_RET 0x06
#define BPF_W 0x00
#define BPF_H 0x08
#define BPF_ABS 0x20
#define BPF_MEM 0x60
#define BPF_LEN 0x80
#define BPF_IMM 0x00
#define BPF_DIV 0x30
#define BPF_LSH 0x60
#define BPF_MOD 0x90
#define BPF_JA 0x00
#define BPF_JEQ 0x10
#define BPF_K 0x00
#define BPF_A 0x10
#define STMT(c, k) { (uint16_t)(c), 0, 0, (uint32_t)(k) }
#define JUMP(c, k, t, f) { (uint16_t)(c), (t), (f), (uint32_t)(k) }
#define LD_NR STMT(BPF_LD | BPF_W | BPF_ABS, 0)
#define LD_ARCH STMT(BPF_LD | BPF_W | BPF_ABS, 4)
#define LD_ARG_LO(n) STMT(BPF_LD | BPF_W | BPF_ABS, 16 + 8 * (n))
#define LD_ARG_HI(n) STMT(BPF_LD | BPF_W | BPF_ABS, 20 + 8 * (n))
#define RET(v) STMT(BPF_RET | BPF_K, (v))
#define ALLOW RET(RET_ALLOW)
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static long sc(unsigned op, unsigned flags, void *args)
{
    return syscall(SYS_seccomp, op, flags, args);
}

static long install_flags(struct sock_filter *f, int n, unsigned flags)
{
    struct sock_fprog p = { (unsigned short)n, f };
    return sc(SECCOMP_SET_MODE_FILTER, flags, &p);
}

static long install(struct sock_filter *f, int n)
{
    return install_flags(f, n, 0);
}

/* A filter answering `ret` for system call `nr` and allowing the rest. */
static long on_call(long nr, unsigned ret)
{
    struct sock_filter f[] = {
        LD_NR,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        RET(ret),
        ALLOW,
    };
    return install(f, N(f));
}

static long ppid(void)
{
    return syscall(SYS_getppid);
}

static int nnp(void)
{
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* The value of `key` in /proc/<path>/status, or -1. */
static long status_field(const char *path, const char *key)
{
    char buf[4096];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char want[64];
    snprintf(want, sizeof want, "\n%s:\t", key);
    char *at = strstr(buf, want);
    return at ? strtol(at + strlen(want), NULL, 10) : -1;
}

static void show_status(const char *who, const char *path)
{
    printf("%s: Seccomp %ld, Seccomp_filters %ld, NoNewPrivs %ld\n", who, status_field(path, "Seccomp"),
           status_field(path, "Seccomp_filters"), status_field(path, "NoNewPrivs"));
}

static void report(const char *what, int st)
{
    printf("%s: %s\n", what, status_str(st));
}

/* run_child, but a child whose own checks failed exits 99, which counts
 * as a failure here. */
static int child(int (*fn)(void *), void *arg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = fn(arg);
        _exit(t_failed ? 99 : rc);
    }
    int st = 0;
    if (pid < 0 || wait_for(pid, &st, 0) != pid)
        return -1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 99)
        check(0, "a child's checks passed");
    return st;
}

static void no_core(void)
{
    struct rlimit r = { 0, 0 };
    setrlimit(RLIMIT_CORE, &r);
}

/* ---- queries ------------------------------------------------------- */

static void queries(void)
{
    static const unsigned actions[] = { RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRAP, RET_ERRNO,
                                        RET_USER_NOTIF, RET_TRACE, RET_LOG, RET_ALLOW };
    for (int i = 0; i < N(actions); i++) {
        unsigned a = actions[i];
        check(sc(SECCOMP_GET_ACTION_AVAIL, 0, &a) == 0, "action %#x available", actions[i]);
    }
    unsigned odd = 0x00010000, with_data = RET_ERRNO | 1;
    EXPECT_ERR(EOPNOTSUPP, "GET_ACTION_AVAIL(0x10000)", sc(SECCOMP_GET_ACTION_AVAIL, 0, &odd));
    EXPECT_ERR(EOPNOTSUPP, "GET_ACTION_AVAIL(ERRNO|1)", sc(SECCOMP_GET_ACTION_AVAIL, 0, &with_data));
    EXPECT_ERR(EINVAL, "GET_ACTION_AVAIL with flags", sc(SECCOMP_GET_ACTION_AVAIL, 1, &odd));
    EXPECT_ERR(EFAULT, "GET_ACTION_AVAIL(bad pointer)", sc(SECCOMP_GET_ACTION_AVAIL, 0, BAD_PTR));
    uint16_t sizes[3] = { 0 };
    EXPECT_OK("GET_NOTIF_SIZES", sc(SECCOMP_GET_NOTIF_SIZES, 0, sizes));
    printf("notif sizes: %u %u %u\n", sizes[0], sizes[1], sizes[2]);
    EXPECT_ERR(EINVAL, "GET_NOTIF_SIZES with flags", sc(SECCOMP_GET_NOTIF_SIZES, 1, sizes));
    EXPECT_ERR(EFAULT, "GET_NOTIF_SIZES(bad pointer)", sc(SECCOMP_GET_NOTIF_SIZES, 0, BAD_PTR));
    EXPECT_ERR(EINVAL, "operation 4", sc(4, 0, NULL));
    EXPECT_ERR(EINVAL, "SET_MODE_STRICT with flags", sc(SECCOMP_SET_MODE_STRICT, 1, NULL));
    EXPECT_ERR(EINVAL, "SET_MODE_STRICT with args", sc(SECCOMP_SET_MODE_STRICT, 0, sizes));
    EXPECT_ERR(EINVAL, "PR_SET_SECCOMP mode 3", prctl(PR_SET_SECCOMP, 3, 0, 0, 0));
    EXPECT_ERR(EINVAL, "PR_SET_SECCOMP mode 0", prctl(PR_SET_SECCOMP, 0, 0, 0, 0));
    check(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0, "PR_GET_SECCOMP = 0");
    show_status("start", "/proc/self/status");
}

/* ---- privilege ------------------------------------------------------ */

static int unprivileged(void *arg)
{
    (void)arg;
    if (setuid(1000) != 0)
        return 10;
    struct sock_filter f[] = { ALLOW };
    EXPECT_ERR(EACCES, "filter as user 1000 without no_new_privs", install(f, 1));
    EXPECT_ERR(EACCES, "PR_SET_SECCOMP filter as user 1000", ({
                   struct sock_fprog p = { 1, f };
                   prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p, 0, 0);
               }));
    /* The length is checked before the privilege. */
    EXPECT_ERR(EINVAL, "empty filter as user 1000", install(f, 0));
    EXPECT_OK("no_new_privs", nnp());
    EXPECT_OK("filter as user 1000 with no_new_privs", install(f, 1));
    show_status("user 1000", "/proc/self/status");
    return 0;
}

static int privileged(void *arg)
{
    (void)arg;
    struct sock_filter f[] = { ALLOW };
    EXPECT_OK("filter as root without no_new_privs", install(f, 1));
    struct sock_fprog p = { 1, f };
    EXPECT_OK("PR_SET_SECCOMP filter", prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p, 0, 0));
    check(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2, "PR_GET_SECCOMP = 2");
    show_status("root, two filters", "/proc/self/status");
    EXPECT_ERR(EINVAL, "strict mode over filters", sc(SECCOMP_SET_MODE_STRICT, 0, NULL));
    EXPECT_ERR(EINVAL, "PR_SET_SECCOMP strict over filters", prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0));
    return 0;
}

/* ---- program checks ------------------------------------------------ */

static struct sock_filter big[4097];

static int validation(void *arg)
{
    (void)arg;
    nnp();
    struct sock_filter one[] = { ALLOW };
    EXPECT_ERR(EINVAL, "length 0", install(one, 0));
    for (int i = 0; i < N(big); i++)
        big[i] = (struct sock_filter)ALLOW;
    EXPECT_ERR(EINVAL, "length 4097", install(big, 4097));
    EXPECT_ERR(EFAULT, "fprog at a bad address", sc(SECCOMP_SET_MODE_FILTER, 0, BAD_PTR));
    EXPECT_ERR(EFAULT, "instructions at a bad address", install(BAD_PTR, 1));
    EXPECT_ERR(EINVAL, "unknown flag 64", install_flags(one, 1, 64));
    EXPECT_ERR(EINVAL, "TSYNC with NEW_LISTENER", install_flags(one, 1, FLAG_TSYNC | FLAG_NEW_LISTENER));
    EXPECT_ERR(EINVAL, "WAIT_KILLABLE_RECV alone", install_flags(one, 1, FLAG_WAIT_KILLABLE_RECV));
    struct {
        const char *what;
        struct sock_filter f[4];
        int n;
    } bad[] = {
        { "unaligned load", { STMT(BPF_LD | BPF_W | BPF_ABS, 2), ALLOW }, 2 },
        { "load past seccomp_data", { STMT(BPF_LD | BPF_W | BPF_ABS, 64), ALLOW }, 2 },
        { "ancillary load", { STMT(BPF_LD | BPF_W | BPF_ABS, 0xfffff000), ALLOW }, 2 },
        { "half-word load", { STMT(BPF_LD | BPF_H | BPF_ABS, 0), ALLOW }, 2 },
        { "BPF_MOD", { STMT(BPF_ALU | BPF_MOD | BPF_K, 3), ALLOW }, 2 },
        { "unknown opcode 0xff", { STMT(0xff, 0), ALLOW }, 2 },
        { "division by constant 0", { STMT(BPF_ALU | BPF_DIV | BPF_K, 0), ALLOW }, 2 },
        { "shift by 32", { STMT(BPF_ALU | BPF_LSH | BPF_K, 32), ALLOW }, 2 },
        { "scratch word 16", { STMT(BPF_ST, 16), ALLOW }, 2 },
        { "scratch read before write", { STMT(BPF_LD | BPF_MEM, 1), ALLOW }, 2 },
        { "jump true past the end", { LD_NR, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 1, 0), ALLOW }, 3 },
        { "jump false past the end", { LD_NR, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1), ALLOW }, 3 },
        { "JA past the end", { STMT(BPF_JMP | BPF_JA, 1), ALLOW }, 2 },
        { "no return at the end", { ALLOW, LD_NR }, 2 },
    };
    for (int i = 0; i < N(bad); i++)
        EXPECT_ERR(EINVAL, bad[i].what, install(bad[i].f, bad[i].n));
    check(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0, "refused filters leave the mode at 0");
    struct sock_filter good[] = {
        STMT(BPF_LD | BPF_W | BPF_LEN, 0),
        STMT(BPF_ST, 1),
        STMT(BPF_LDX | BPF_MEM, 1),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 64, 1, 0),
        RET(RET_KILL_PROCESS),
        ALLOW,
    };
    EXPECT_OK("a program using LEN, ST, LDX MEM and jumps", install(good, N(good)));
    /* Every filter counts its length plus 4 toward 32768. */
    int attached = 1;
    while (install(big, 4096) == 0)
        attached++;
    check(errno == ENOMEM, "stacking 4096-instruction filters ends in ENOMEM");
    printf("filters attached before ENOMEM: %d\n", attached);
    show_status("full path", "/proc/self/status");
    check(ppid() == getppid(), "system calls still run");
    return 0;
}

/* ---- actions -------------------------------------------------------- */

static volatile sig_atomic_t trap_ok, trap_count;
static volatile long trap_errno, trap_syscall, trap_arch, trap_rax;

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    trap_count++;
    trap_errno = si->si_errno;
    trap_syscall = si->si_syscall;
    trap_arch = si->si_arch;
    trap_rax = uc->uc_mcontext.gregs[REG_RAX];
    trap_ok = sig == SIGSYS && si->si_code == SYS_SECCOMP_CODE &&
              si->si_call_addr == (void *)uc->uc_mcontext.gregs[REG_RIP];
    /* The call's result is whatever the handler leaves in rax. */
    uc->uc_mcontext.gregs[REG_RAX] = 1234;
}

static void sigsys_handler(void)
{
    struct sigaction sa = { 0 };
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSYS, &sa, NULL);
}

static int act_errno(void *arg)
{
    (void)arg;
    nnp();
    on_call(SYS_getppid, RET_ERRNO | EPERM);
    EXPECT_ERR(EPERM, "ERRNO|EPERM on getppid", ppid());
    on_call(SYS_getpid, RET_ERRNO | 5000);
    errno = 0;
    long r = syscall(SYS_getpid);
    printf("ERRNO|5000 on getpid: %ld, errno %d (capped at 4095)\n", r, errno);
    on_call(SYS_gettid, RET_ERRNO | 0);
    check(syscall(SYS_gettid) == 0, "ERRNO|0 on gettid returns 0");
    on_call(1000, RET_ERRNO | E2BIG);
    EXPECT_ERR(E2BIG, "ERRNO on unknown call 1000 (instead of ENOSYS)", syscall(1000));
    EXPECT_ERR(ENOSYS, "unknown call 1001 still ENOSYS", syscall(1001));
    /* Argument words: dup(42) fails ENOTTY, dup with 1 in the high half E2BIG. */
    struct sock_filter args[] = {
        LD_NR,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_dup, 0, 6),
        LD_ARG_HI(0),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
        RET(RET_ERRNO | E2BIG),
        LD_ARG_LO(0),
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 42, 0, 1),
        RET(RET_ERRNO | ENOTTY),
        ALLOW,
    };
    EXPECT_OK("argument filter", install(args, N(args)));
    EXPECT_ERR(ENOTTY, "dup(42)", syscall(SYS_dup, 42L));
    EXPECT_ERR(EBADF, "dup(43) runs", syscall(SYS_dup, 43L));
    EXPECT_ERR(E2BIG, "dup(1 << 32 | 42)", syscall(SYS_dup, (1L << 32) | 42));
    struct sock_filter arch[] = {
        LD_ARCH,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        RET(RET_KILL_PROCESS),
        LD_NR,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 0, 1),
        RET(RET_ERRNO | ENOEXEC),
        ALLOW,
    };
    EXPECT_OK("arch filter", install(arch, N(arch)));
    EXPECT_ERR(ENOEXEC, "system call -1 seen as nr 0xffffffff", syscall(-1L));
    show_status("errno filters", "/proc/self/status");
    return 0;
}

static int act_trap(void *arg)
{
    (void)arg;
    nnp();
    sigsys_handler();
    on_call(SYS_getppid, RET_TRAP | 0x42);
    long r = ppid();
    check(trap_count == 1, "TRAP raised one SIGSYS");
    check(trap_ok, "si_code SYS_SECCOMP, si_call_addr the return address");
    printf("TRAP: si_errno %#lx, si_syscall %ld, si_arch %#lx, rax %ld, result %ld\n", trap_errno, trap_syscall,
           trap_arch, trap_rax, r);
    /* Blocked, SIGSYS still comes, and kills. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    sigprocmask(SIG_BLOCK, &set, NULL);
    no_core();
    ppid();
    printf("FAIL: survived a TRAP with SIGSYS blocked\n");
    return 1;
}

static int act_misc(void *arg)
{
    (void)arg;
    nnp();
    on_call(SYS_getppid, RET_TRACE | 3);
    EXPECT_ERR(ENOSYS, "TRACE without a tracer", ppid());
    on_call(SYS_getpid, RET_USER_NOTIF);
    EXPECT_ERR(ENOSYS, "USER_NOTIF without a listener", syscall(SYS_getpid));
    on_call(SYS_gettid, RET_LOG);
    check(syscall(SYS_gettid) > 0, "LOG lets gettid run");
    struct sock_filter f[] = { ALLOW };
    EXPECT_OK("LOG and SPEC_ALLOW flags", install_flags(f, 1, FLAG_LOG | FLAG_SPEC_ALLOW));
    check(syscall(SYS_gettid) > 0, "still runs");
    return 0;
}

static int kill_with(void *arg)
{
    unsigned ret = *(unsigned *)arg;
    nnp();
    no_core();
    sigsys_handler(); /* kills are not caught */
    on_call(SYS_getppid, ret);
    ppid();
    printf("FAIL: survived action %#x\n", ret);
    return 1;
}

static atomic_int thread_stage;

static void *filtered_thread(void *arg)
{
    (void)arg;
    on_call(SYS_getppid, RET_KILL_THREAD);
    ppid();
    atomic_store(&thread_stage, -1); /* not reached */
    return NULL;
}

static int kill_thread_of_many(void *arg)
{
    (void)arg;
    nnp();
    pthread_t t;
    pthread_create(&t, NULL, filtered_thread, NULL);
    /* musl's pthread_join waits for the thread's own exit path, which a
     * killed thread never runs: watch the thread count instead. */
    int64_t end = mono_ns() + 10000000000LL;
    while (status_field("/proc/self/status", "Threads") != 1 && mono_ns() < end)
        sleep_ms(1);
    check(status_field("/proc/self/status", "Threads") == 1, "the filtered thread is gone");
    check(atomic_load(&thread_stage) == 0, "KILL_THREAD ended only the thread");
    check(ppid() > 0, "the main thread has no filter");
    return 3;
}

static int strict(void *arg)
{
    long how = (long)arg;
    static const char msg[] = "strict mode: write works\n";
    if (how == 0 ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0)
                 : sc(SECCOMP_SET_MODE_STRICT, 0, NULL))
        return 10;
    if (syscall(SYS_write, 1, msg, sizeof msg - 1) != (long)sizeof msg - 1)
        syscall(SYS_exit, 11);
    if (how == 2)
        syscall(SYS_exit, 7); /* exit is allowed, exit_group is not */
    if (how == 3)
        syscall(SYS_exit_group, 8);
    ppid();
    syscall(SYS_exit, 12);
    return 13;
}

/* ---- precedence ----------------------------------------------------- */

static int stack_of(void *arg)
{
    const unsigned *rets = arg; /* oldest first, 0-terminated after the count */
    nnp();
    no_core();
    sigsys_handler();
    for (unsigned i = 1; i <= rets[0]; i++)
        on_call(SYS_getppid, rets[i]);
    errno = 0;
    long r = ppid();
    if (r == 1234)
        printf("  -> result 1234 (from the SIGSYS handler), SIGSYS %d\n", (int)trap_count);
    else if (r > 0)
        printf("  -> the call ran, SIGSYS %d\n", (int)trap_count);
    else
        printf("  -> result %ld errno %s, SIGSYS %d\n", r, errname(errno), (int)trap_count);
    return 0;
}

static void precedence(void)
{
    static const struct {
        const char *what;
        unsigned rets[4];
    } cases[] = {
        { "ERRNO|1 then ERRNO|2 (the newer wins a tie)", { 2, RET_ERRNO | 1, RET_ERRNO | 2 } },
        { "ERRNO then TRAP", { 2, RET_ERRNO | 1, RET_TRAP } },
        { "TRAP then ERRNO", { 2, RET_TRAP, RET_ERRNO | 1 } },
        { "TRACE then ERRNO", { 2, RET_TRACE, RET_ERRNO | 7 } },
        { "LOG then TRACE", { 2, RET_LOG, RET_TRACE } },
        { "ALLOW then LOG", { 2, RET_ALLOW, RET_LOG } },
        { "ERRNO then ALLOW then LOG", { 3, RET_ERRNO | 9, RET_ALLOW, RET_LOG } },
        { "TRAP then KILL_THREAD", { 2, RET_TRAP, RET_KILL_THREAD } },
        { "KILL_THREAD then KILL_PROCESS", { 2, RET_KILL_THREAD, RET_KILL_PROCESS } },
        { "USER_NOTIF then ERRNO then TRACE", { 3, RET_USER_NOTIF, RET_ERRNO | 4, RET_TRACE } },
    };
    for (int i = 0; i < N(cases); i++) {
        printf("%s:\n", cases[i].what);
        report("  status", child(stack_of, (void *)cases[i].rets));
    }
}

/* ---- inheritance ---------------------------------------------------- */

static int child_sees(void *arg)
{
    (void)arg;
    EXPECT_ERR(EPERM, "forked child inherits the filter", ppid());
    show_status("forked child", "/proc/self/status");
    return 0;
}

static void *thread_sees(void *arg)
{
    (void)arg;
    EXPECT_ERR(EPERM, "new thread inherits the filter", ppid());
    return NULL;
}

static const char *self_exe;

static int inherit(void *arg)
{
    (void)arg;
    nnp();
    on_call(SYS_getppid, RET_ERRNO | EPERM);
    report("fork", child(child_sees, NULL));
    pthread_t t;
    pthread_create(&t, NULL, thread_sees, NULL);
    pthread_join(t, NULL);
    fflush(stdout);
    execl(self_exe, self_exe, "exec-child", (char *)NULL);
    printf("FAIL: exec: %s\n", errname(errno));
    return 1;
}

static int exec_child(void)
{
    t_init("seccomp");
    EXPECT_ERR(EPERM, "the filter survives execve", ppid());
    show_status("after exec", "/proc/self/status");
    check(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2, "PR_GET_SECCOMP = 2 after exec");
    /* The counts of this process end here: report them to the parent. */
    return t_failed ? 2 : 0;
}

/* ---- TSYNC ---------------------------------------------------------- */

static atomic_int go, done_flag;
static volatile long thread_tid;

static void *waiter(void *arg)
{
    long own_filter = (long)arg;
    thread_tid = syscall(SYS_gettid);
    if (own_filter)
        on_call(SYS_getuid, RET_ERRNO | EIO);
    atomic_store(&done_flag, 1);
    while (!atomic_load(&go))
        sleep_ms(1);
    errno = 0;
    long r = ppid();
    printf("thread: getppid %s\n", r == -1 ? errname(errno) : "runs");
    return NULL;
}

static void thread_status(const char *who)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", thread_tid);
    show_status(who, path);
}

static int tsync(void *arg)
{
    long variant = (long)arg;
    pthread_t t;
    atomic_store(&go, 0);
    atomic_store(&done_flag, 0);
    if (variant == 2) {
        /* An older filter the thread inherits is fine. */
        nnp();
        on_call(SYS_getgid, RET_ERRNO | EIO);
    }
    pthread_create(&t, NULL, waiter, (void *)(long)(variant == 1));
    while (!atomic_load(&done_flag))
        sleep_ms(1);
    if (variant != 2)
        nnp(); /* only this thread */
    thread_status("thread before TSYNC");
    struct sock_filter f[] = {
        LD_NR,
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        RET(RET_ERRNO | EPERM),
        ALLOW,
    };
    if (variant == 1) {
        long r = install_flags(f, N(f), FLAG_TSYNC);
        check(r == thread_tid, "TSYNC fails with the id of the thread with its own filter");
        EXPECT_ERR(ESRCH, "TSYNC|TSYNC_ESRCH", install_flags(f, N(f), FLAG_TSYNC | FLAG_TSYNC_ESRCH));
        check(ppid() > 0, "nothing was attached");
    } else {
        EXPECT_OK("TSYNC", install_flags(f, N(f), FLAG_TSYNC));
        EXPECT_ERR(EPERM, "the caller is filtered", ppid());
        thread_status("thread after TSYNC");
    }
    atomic_store(&go, 1);
    pthread_join(t, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    self_exe = argv[0];
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0)
        return exec_child();
    t_init("seccomp");
    queries();
    report("user 1000", child(unprivileged, NULL));
    report("root", child(privileged, NULL));
    report("validation", child(validation, NULL));
    report("errno", child(act_errno, NULL));
    report("trap, then trap with SIGSYS blocked", child(act_trap, NULL));
    report("trace, user_notif, log", child(act_misc, NULL));
    static unsigned kp = RET_KILL_PROCESS, kt = RET_KILL_THREAD, odd = 0x00010000, kpd = RET_KILL_PROCESS | 9;
    report("KILL_PROCESS", child(kill_with, &kp));
    report("KILL_PROCESS with data", child(kill_with, &kpd));
    report("KILL_THREAD, one thread", child(kill_with, &kt));
    report("unknown action 0x10000", child(kill_with, &odd));
    report("KILL_THREAD, two threads", child(kill_thread_of_many, NULL));
    report("strict via prctl, then getppid", child(strict, (void *)0));
    report("strict via seccomp, then getppid", child(strict, (void *)1));
    report("strict, then exit(7)", child(strict, (void *)2));
    report("strict, then exit_group(8)", child(strict, (void *)3));
    precedence();
    int st = child(inherit, NULL);
    report("inheritance (exec'd child's own checks: exit 0)", st);
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        check(0, "the exec'd child passed");
    report("TSYNC", child(tsync, (void *)0));
    report("TSYNC refused", child(tsync, (void *)1));
    report("TSYNC over an inherited filter", child(tsync, (void *)2));
    show_status("parent at the end", "/proc/self/status");
    return t_done();
}
