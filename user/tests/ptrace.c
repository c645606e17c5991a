/*
 * ptrace: a program that is its own tracer. TRACEME + exec (the legacy
 * SIGTRAP), SEIZE, syscall stops (TRACESYSGOOD, -ENOSYS at entry,
 * orig_rax, changing the number, skipping with -1, changing arguments and
 * results, GET_SYSCALL_INFO, GETEVENTMSG), event stops (fork, vfork,
 * vfork-done, clone, exec, exit) with auto-attached children, PEEK/POKE
 * of data and text, an int3 breakpoint, single-stepping (over a system
 * call too), GETREGS/SETREGS/GETFPREGS/SETFPREGS/GETREGSET, PEEKUSER/
 * POKEUSER (debug registers), signal injection and suppression, group
 * stops with and without SEIZE (LISTEN, INTERRUPT), detach, EXITKILL,
 * PTRACE_KILL, /proc TracerPid and state, the errno cases, and who may
 * trace or open /proc/<pid>/mem of whom (ids, dumpable, capabilities).
 *
 * Children say nothing: they report through exit codes, so only the
 * tracer prints and the output is the same wherever it runs.
 */
#include "common.h"
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#ifndef PTRACE_O_EXITKILL
#define PTRACE_O_EXITKILL (1 << 20)
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#define NT_PRSTATUS 1
#define NT_PRFPREG 2

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

static char *self;

static long pt(long req, pid_t pid, unsigned long addr, unsigned long data)
{
    return syscall(SYS_ptrace, req, pid, addr, data);
}

/* PEEK* through the raw call: the word lands at *out. */
static long peek(long req, pid_t pid, unsigned long addr, unsigned long *out)
{
    return syscall(SYS_ptrace, req, pid, addr, out);
}

static int wait_stop(pid_t pid, int *status)
{
    int st = 0;
    pid_t r = waitpid(pid, &st, __WALL);
    if (status)
        *status = st;
    return r == pid;
}

static const char *pstatus(int st)
{
    static char buf[64];
    if (WIFEXITED(st))
        snprintf(buf, sizeof buf, "exited %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "killed by %s", signame(WTERMSIG(st)));
    else if (WIFSTOPPED(st))
        snprintf(buf, sizeof buf, "stopped %s%s event %d", signame(WSTOPSIG(st) & 0x7f),
                 (WSTOPSIG(st) & 0x80) ? "|0x80" : "", st >> 16);
    else
        snprintf(buf, sizeof buf, "status %#x", st);
    return buf;
}

static void expect_status(pid_t pid, const char *want, const char *what)
{
    int st;
    int ok = wait_stop(pid, &st);
    /* A tracee whose children exit sees SIGCHLD, which the tracer is
     * shown like any signal (how many depends on timing): pass them on. */
    while (ok && WIFSTOPPED(st) && WSTOPSIG(st) == SIGCHLD && st >> 16 == 0 && strstr(want, "SIGCHLD") == NULL) {
        pt(PTRACE_CONT, pid, 0, SIGCHLD);
        ok = wait_stop(pid, &st);
    }
    check(ok && strcmp(pstatus(st), want) == 0, "%s: %s", what, ok ? pstatus(st) : "wait failed");
}

/* A child that blocks until the tracer writes to `fd` (then runs `fn`). */
static pid_t spawn_waiting(int *wfd, int (*fn)(void))
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        char c;
        while (read(p[0], &c, 1) != 1) {
        }
        _exit(fn ? fn() : 0);
    }
    close(p[0]);
    *wfd = p[1];
    return pid;
}

static int nothing(void)
{
    return 0;
}

/* ------------------------------------------------------------------ */

static void test_errors(void)
{
    errno = 0;
    EXPECT_ERR(ESRCH, "PTRACE_CONT on an untraced process", pt(PTRACE_CONT, getppid(), 0, 0));
    EXPECT_ERR(EPERM, "PTRACE_ATTACH to itself", pt(PTRACE_ATTACH, getpid(), 0, 0));
    EXPECT_ERR(ESRCH, "PTRACE_ATTACH to no such pid", pt(PTRACE_ATTACH, 4000000, 0, 0));
    EXPECT_ERR(ESRCH, "PTRACE_GETREGS on no such pid", pt(PTRACE_GETREGS, 4000000, 0, 0));

    int w;
    pid_t c = spawn_waiting(&w, nothing);
    EXPECT_ERR(EIO, "PTRACE_SEIZE with addr != 0", pt(PTRACE_SEIZE, c, 1, 0));
    EXPECT_ERR(EIO, "PTRACE_SEIZE with unknown options", pt(PTRACE_SEIZE, c, 0, 1u << 30));
    EXPECT_OK("PTRACE_SEIZE", pt(PTRACE_SEIZE, c, 0, 0));
    EXPECT_ERR(EPERM, "PTRACE_SEIZE twice", pt(PTRACE_SEIZE, c, 0, 0));
    EXPECT_ERR(ESRCH, "PTRACE_GETREGS on a running tracee", pt(PTRACE_GETREGS, c, 0, 0));
    EXPECT_ERR(ESRCH, "PTRACE_CONT on a running tracee", pt(PTRACE_CONT, c, 0, 0));
    EXPECT_OK("PTRACE_INTERRUPT", pt(PTRACE_INTERRUPT, c, 0, 0));
    int st;
    wait_stop(c, &st);
    check(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && st >> 16 == PTRACE_EVENT_STOP,
          "INTERRUPT of a seized tracee: %s", pstatus(st));
    unsigned long word;
    EXPECT_ERR(EIO, "PTRACE_PEEKDATA at an unmapped address", peek(PTRACE_PEEKDATA, c, 8, &word));
    EXPECT_ERR(EIO, "PTRACE_POKEDATA at an unmapped address", pt(PTRACE_POKEDATA, c, 8, 1));
    EXPECT_ERR(EIO, "PTRACE_PEEKUSER misaligned", peek(PTRACE_PEEKUSER, c, 3, &word));
    EXPECT_ERR(EIO, "PTRACE_PEEKUSER past struct user", peek(PTRACE_PEEKUSER, c, 928, &word));
    /* The kernel's struct user ends with error_code and fault_address
     * past libc's: they read 0. */
    EXPECT_OK("PTRACE_PEEKUSER at 920", peek(PTRACE_PEEKUSER, c, 920, &word));
    EXPECT_ERR(EIO, "PTRACE_POKEUSER u_debugreg[4]",
               pt(PTRACE_POKEUSER, c, offsetof(struct user, u_debugreg[4]), 0));
    EXPECT_ERR(EIO, "PTRACE_POKEUSER u_fpvalid", pt(PTRACE_POKEUSER, c, offsetof(struct user, u_fpvalid), 0));
    EXPECT_ERR(EINVAL, "PTRACE_SETOPTIONS unknown", pt(PTRACE_SETOPTIONS, c, 0, 1u << 30));
    EXPECT_ERR(EIO, "PTRACE_CONT with signal 65", pt(PTRACE_CONT, c, 0, 65));
    EXPECT_ERR(EIO, "unknown request 0x1234", pt(0x1234, c, 0, 0));
    uint64_t mask;
    EXPECT_ERR(EINVAL, "PTRACE_GETSIGMASK size 4", pt(PTRACE_GETSIGMASK, c, 4, (unsigned long)&mask));
    EXPECT_ERR(EFAULT, "PTRACE_GETREGS to a bad pointer", pt(PTRACE_GETREGS, c, 0, 1));
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    struct user_regs_struct bad = r;
    bad.cs = 0;
    EXPECT_ERR(EIO, "PTRACE_SETREGS with cs 0", pt(PTRACE_SETREGS, c, 0, (unsigned long)&bad));
    bad = r;
    bad.fs_base = 0x800000000000UL;
    EXPECT_ERR(EIO, "PTRACE_SETREGS with a kernel fs_base", pt(PTRACE_SETREGS, c, 0, (unsigned long)&bad));
    struct iovec iov = { &r, 20 };
    EXPECT_ERR(EINVAL, "PTRACE_GETREGSET length 20", pt(PTRACE_GETREGSET, c, NT_PRSTATUS, (unsigned long)&iov));
    EXPECT_ERR(EINVAL, "PTRACE_GETREGSET unknown note", pt(PTRACE_GETREGSET, c, 0x999, (unsigned long)&iov));
    EXPECT_OK("PTRACE_DETACH", pt(PTRACE_DETACH, c, 0, 0));
    EXPECT_ERR(ESRCH, "PTRACE_GETREGS after detach", pt(PTRACE_GETREGS, c, 0, 0));
    write(w, "x", 1);
    expect_status(c, "exited 0", "detached child runs to the end");
    close(w);

    /* personality(2), which debuggers use to turn randomization off. */
    fflush(stdout);
    pid_t pp = fork();
    if (pp == 0) {
        int ok = personality(0xffffffff) == 0 && personality(ADDR_NO_RANDOMIZE) == 0;
        pid_t g = fork();
        if (g == 0)
            _exit(personality(0xffffffff) == ADDR_NO_RANDOMIZE ? 0 : 1);
        int gs;
        waitpid(g, &gs, 0);
        ok &= WIFEXITED(gs) && WEXITSTATUS(gs) == 0;
        _exit(ok ? 0 : 1);
    }
    expect_status(pp, "exited 0", "personality: query, set ADDR_NO_RANDOMIZE, inherited by fork");

    /* No Yama: PR_SET_PTRACER is unknown; a non-dumpable process can
     * still be traced by root (CAP_SYS_PTRACE). */
    EXPECT_ERR(EINVAL, "prctl(PR_SET_PTRACER) without Yama", prctl(0x59616d61, 0, 0, 0, 0));
    EXPECT_ERR(EINVAL, "prctl(PR_SET_DUMPABLE, 2)", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
    check(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "PR_GET_DUMPABLE is 1");
    fflush(stdout);
    int pw[2];
    if (pipe(pw) != 0)
        return;
    pid_t nd = fork();
    if (nd == 0) {
        close(pw[0]);
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        int d = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        if (write(pw[1], &d, sizeof d) != sizeof d)
            _exit(1);
        pause();
        _exit(0);
    }
    close(pw[1]);
    int dumpable = -1;
    if (read(pw[0], &dumpable, sizeof dumpable) != sizeof dumpable)
        dumpable = -1;
    close(pw[0]);
    check(dumpable == 0, "PR_SET_DUMPABLE 0 in the child");
    EXPECT_OK("root SEIZEs a non-dumpable process", pt(PTRACE_SEIZE, nd, 0, 0));
    kill(nd, SIGKILL);
    expect_status(nd, "killed by SIGKILL", "non-dumpable tracee killed");

    /* TRACEME twice; LISTEN and INTERRUPT need SEIZE. */
    fflush(stdout);
    pid_t t = fork();
    if (t == 0) {
        int first = ptrace(PTRACE_TRACEME, 0, 0, 0);
        int second = ptrace(PTRACE_TRACEME, 0, 0, 0);
        int e = errno;
        raise(SIGSTOP);
        _exit(first == 0 && second == -1 && e == EPERM ? 0 : 1);
    }
    expect_status(t, "stopped SIGSTOP event 0", "TRACEME child stops at its SIGSTOP");
    EXPECT_ERR(EIO, "PTRACE_LISTEN without SEIZE", pt(PTRACE_LISTEN, t, 0, 0));
    EXPECT_ERR(EIO, "PTRACE_INTERRUPT without SEIZE", pt(PTRACE_INTERRUPT, t, 0, 0));
    pt(PTRACE_CONT, t, 0, 0);
    expect_status(t, "exited 0", "second PTRACE_TRACEME = -1 EPERM");
}

/* ------------------------------------------------------------------ */

static void test_traceme_exec(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        char *argv[] = { self, "--exit", "42", NULL };
        execv(self, argv);
        _exit(99);
    }
    int st;
    wait_stop(c, &st);
    check(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && st >> 16 == 0, "TRACEME + exec: %s", pstatus(st));
    siginfo_t si;
    memset(&si, 0, sizeof si);
    EXPECT_OK("GETSIGINFO after exec", pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si));
    check(si.si_signo == SIGTRAP && si.si_code == SI_USER && si.si_pid == c,
          "exec SIGTRAP: SI_USER from the tracee itself (code %d)", si.si_code);
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check(r.orig_rax == SYS_execve && r.rax == 0, "after exec: orig_rax execve, rax 0");
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/status", c);
    int fd = open(path, O_RDONLY);
    int n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    char want[64];
    snprintf(want, sizeof want, "TracerPid:\t%d\n", getpid());
    check(strstr(buf, want) != NULL, "/proc/<pid>/status TracerPid is the tracer");
    check(strstr(buf, "State:\tt (tracing stop)") != NULL, "/proc/<pid>/status State t (tracing stop)");
    snprintf(path, sizeof path, "/proc/%d/stat", c);
    fd = open(path, O_RDONLY);
    n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    char *rp = strrchr(buf, ')');
    check(rp && rp[1] == ' ' && rp[2] == 't', "/proc/<pid>/stat state t");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 42", "exec'd tracee exits");
}

/* ------------------------------------------------------------------ */

/* The child's system calls, made raw so that libc adds none. */
static int syscall_child(void)
{
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    syscall(SYS_kill, syscall(SYS_getpid), SIGSTOP);
    int ok = 1;
    /* The tracer turns getppid into getpid. */
    ok &= syscall(SYS_getppid) == syscall(SYS_getpid);
    /* ... skips this getuid with -1 and a result of 12345. */
    ok &= syscall(SYS_getuid) == 12345;
    /* ... changes the argument of getpgid(99999) to 0. */
    ok &= syscall(SYS_getpgid, 99999) == getpgid(0);
    /* ... changes the result of getgid to 77. */
    ok &= syscall(SYS_getgid) == 77;
    /* ... and sees this one without TRACESYSGOOD. */
    ok &= syscall(SYS_getegid) == (long)getegid();
    return ok ? 0 : 1;
}

/* Runs the tracee to the entry of system call `nr` (stopping at every
 * stop on the way); returns 1 at that entry stop. */
static int run_to_entry(pid_t c, long nr)
{
    for (int i = 0; i < 200; i++) {
        if (pt(PTRACE_SYSCALL, c, 0, 0) != 0)
            return 0;
        int st;
        if (!wait_stop(c, &st) || !WIFSTOPPED(st))
            return 0;
        struct syscall_info info;
        long n = pt(PTRACE_GET_SYSCALL_INFO, c, sizeof info, (unsigned long)&info);
        if (n > 0 && info.op == 1 && (long)info.entry.nr == nr)
            return 1;
    }
    return 0;
}

static void test_syscall_stops(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(syscall_child());
    expect_status(c, "stopped SIGSTOP event 0", "syscall child stopped");
    EXPECT_OK("PTRACE_SETOPTIONS TRACESYSGOOD", pt(PTRACE_SETOPTIONS, c, 0, PTRACE_O_TRACESYSGOOD));

    check(run_to_entry(c, SYS_getppid), "stopped at getppid entry");
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check((long)r.rax == -ENOSYS, "entry stop: rax = -ENOSYS");
    check(r.orig_rax == SYS_getppid, "entry stop: orig_rax = getppid");
    unsigned long msg = 0;
    pt(PTRACE_GETEVENTMSG, c, 0, (unsigned long)&msg);
    check(msg == 1, "entry stop: GETEVENTMSG = %lu", msg);
    struct syscall_info info;
    memset(&info, 0, sizeof info);
    long n = pt(PTRACE_GET_SYSCALL_INFO, c, sizeof info, (unsigned long)&info);
    check(n == 80 && info.op == 1 && info.arch == 0xc000003e && info.ip == r.rip && info.sp == r.rsp,
          "GET_SYSCALL_INFO at entry: size %ld op %d", n, info.op);
    siginfo_t si;
    pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si);
    check(si.si_signo == SIGTRAP && si.si_code == (SIGTRAP | 0x80) && si.si_pid == c, "syscall stop siginfo");
    r.orig_rax = SYS_getpid;
    EXPECT_OK("SETREGS orig_rax = getpid", pt(PTRACE_SETREGS, c, 0, (unsigned long)&r));
    pt(PTRACE_SYSCALL, c, 0, 0);
    int st;
    wait_stop(c, &st);
    check(WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80), "exit stop: %s", pstatus(st));
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check(r.rax == (unsigned long)c && r.orig_rax == SYS_getpid, "exit stop: rax = pid, orig_rax = getpid");
    pt(PTRACE_GETEVENTMSG, c, 0, (unsigned long)&msg);
    check(msg == 2, "exit stop: GETEVENTMSG = %lu", msg);
    n = pt(PTRACE_GET_SYSCALL_INFO, c, sizeof info, (unsigned long)&info);
    check(n == 33 && info.op == 2 && info.exit.rval == c && info.exit.is_error == 0,
          "GET_SYSCALL_INFO at exit: size %ld op %d", n, info.op);
    n = pt(PTRACE_GET_SYSCALL_INFO, c, 8, (unsigned long)&info);
    check(n == 33, "GET_SYSCALL_INFO with a short buffer still says 33");

    /* Skip getuid: orig_rax -1, result chosen at entry. */
    check(run_to_entry(c, SYS_getuid), "stopped at getuid entry");
    EXPECT_OK("POKEUSER orig_rax = -1",
              pt(PTRACE_POKEUSER, c, offsetof(struct user_regs_struct, orig_rax), (unsigned long)-1));
    EXPECT_OK("POKEUSER rax = 12345", pt(PTRACE_POKEUSER, c, offsetof(struct user_regs_struct, rax), 12345));
    pt(PTRACE_SYSCALL, c, 0, 0);
    wait_stop(c, &st);
    unsigned long rax = 0, orig = 0;
    peek(PTRACE_PEEKUSER, c, offsetof(struct user_regs_struct, rax), &rax);
    peek(PTRACE_PEEKUSER, c, offsetof(struct user_regs_struct, orig_rax), &orig);
    check(rax == 12345 && orig == (unsigned long)-1, "skipped call: exit stop rax 12345, orig_rax -1");
    n = pt(PTRACE_GET_SYSCALL_INFO, c, sizeof info, (unsigned long)&info);
    check(n == 33 && info.exit.rval == 12345, "skipped call: GET_SYSCALL_INFO exit rval 12345");

    /* Change an argument. */
    check(run_to_entry(c, SYS_getpgid), "stopped at getpgid entry");
    n = pt(PTRACE_GET_SYSCALL_INFO, c, sizeof info, (unsigned long)&info);
    check(info.entry.args[0] == 99999, "GET_SYSCALL_INFO entry args[0] = 99999");
    pt(PTRACE_POKEUSER, c, offsetof(struct user_regs_struct, rdi), 0);
    pt(PTRACE_SYSCALL, c, 0, 0);
    wait_stop(c, &st);

    /* Change a result at the exit stop. */
    check(run_to_entry(c, SYS_getgid), "stopped at getgid entry");
    pt(PTRACE_SYSCALL, c, 0, 0);
    wait_stop(c, &st);
    pt(PTRACE_POKEUSER, c, offsetof(struct user_regs_struct, rax), 77);

    /* Without TRACESYSGOOD: plain SIGTRAP, and no syscall info. */
    check(run_to_entry(c, SYS_getegid), "stopped at getegid entry");
    pt(PTRACE_SETOPTIONS, c, 0, 0);
    pt(PTRACE_SYSCALL, c, 0, 0);
    wait_stop(c, &st);
    check(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "exit stop without TRACESYSGOOD: %s", pstatus(st));
    n = pt(PTRACE_GET_SYSCALL_INFO, c, sizeof info, (unsigned long)&info);
    check(n == 24 && info.op == 0, "GET_SYSCALL_INFO without TRACESYSGOOD: size %ld op %d", n, info.op);
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 0", "syscall child saw every change");
}

/* ------------------------------------------------------------------ */

static volatile long data_word = 0x1122334455667788L;

__attribute__((noinline)) static int bp_target(int x)
{
    __asm__ volatile("" ::: "memory");
    return x * 3 + 1;
}

static int (*volatile bp_fn)(int) = bp_target;

static int peek_child(void)
{
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    int ok = data_word == 0x0badc0de;
    /* The tracer plants int3 at bp_target and then removes it. */
    ok &= bp_fn(5) == 16;
    return ok ? 0 : 1;
}

static void test_peek_poke_breakpoint(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(peek_child());
    expect_status(c, "stopped SIGSTOP event 0", "peek child stopped");
    unsigned long w = 0;
    EXPECT_OK("PEEKDATA", peek(PTRACE_PEEKDATA, c, (unsigned long)&data_word, &w));
    check(w == 0x1122334455667788UL, "PEEKDATA reads the child's word");
    EXPECT_OK("POKEDATA", pt(PTRACE_POKEDATA, c, (unsigned long)&data_word, 0x0badc0de));
    peek(PTRACE_PEEKDATA, c, (unsigned long)&data_word, &w);
    check(w == 0x0badc0de && data_word == 0x1122334455667788L, "POKEDATA changed the child's copy only");

    /* /proc/<pid>/mem reads and writes the same memory. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", c);
    int fd = open(path, O_RDWR);
    check(fd >= 0, "open /proc/<pid>/mem of the tracee");
    long v = 0;
    check(pread(fd, &v, 8, (off_t)(unsigned long)&data_word) == 8 && v == 0x0badc0de,
          "/proc/<pid>/mem reads what POKEDATA wrote");
    v = 0x0badc0de;
    check(pwrite(fd, &v, 8, (off_t)(unsigned long)&data_word) == 8, "/proc/<pid>/mem write");
    EXPECT_ERR(EIO, "/proc/<pid>/mem read at an unmapped address", pread(fd, &v, 8, 8));
    close(fd);

    unsigned long text = 0, addr = (unsigned long)bp_target;
    EXPECT_OK("PEEKTEXT", peek(PTRACE_PEEKTEXT, c, addr, &text));
    unsigned long mine;
    memcpy(&mine, (void *)addr, 8);
    check(text == mine, "PEEKTEXT reads the same code as the tracer's");
    unsigned long planted = (text & ~0xffUL) | 0xcc;
    EXPECT_OK("POKETEXT int3 into read-only text", pt(PTRACE_POKETEXT, c, addr, planted));
    memcpy(&mine, (void *)addr, 8);
    check(mine == text, "the tracer's own text (shared with the file) is unchanged");
    peek(PTRACE_PEEKTEXT, c, addr, &w);
    check(w == planted, "PEEKTEXT sees the breakpoint");
    pt(PTRACE_CONT, c, 0, 0);
    int st;
    wait_stop(c, &st);
    check(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "int3: %s", pstatus(st));
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check(r.rip == addr + 1, "int3: rip is just past the breakpoint");
    check(r.orig_rax == (unsigned long)-1, "int3: orig_rax -1 (not in a system call)");
    siginfo_t si;
    pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si);
    check(si.si_signo == SIGTRAP && si.si_code == SI_KERNEL, "int3 siginfo: SIGTRAP SI_KERNEL (code %d)", si.si_code);
    pt(PTRACE_POKETEXT, c, addr, text);
    r.rip = addr;
    pt(PTRACE_SETREGS, c, 0, (unsigned long)&r);
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 0", "breakpoint removed, child ran on");

    /* A fresh process of the same program has clean text. */
    fflush(stdout);
    pid_t d = fork();
    if (d == 0)
        _exit(memcmp((void *)addr, &text, 8) == 0 ? 0 : 1);
    expect_status(d, "exited 0", "another process's text never saw the int3");
}

/* ------------------------------------------------------------------ */

/* Straight-line code for single-stepping: offsets 0,1,2,7,10,15, then
 * the syscall (getpid) at 15 and `ret` at 17. */
extern char step_code[], step_after[];
__asm__(".text\n"
        ".globl step_code\n"
        "step_code:\n"
        "  nop\n"                 /* 0 */
        "  nop\n"                 /* 1 */
        "  mov $1, %eax\n"        /* 2 (5 bytes) */
        "  add $2, %eax\n"        /* 7 (3 bytes) */
        "  mov $39, %eax\n"       /* 10 (5 bytes) */
        "  syscall\n"             /* 15 */
        ".globl step_after\n"
        "step_after:\n"
        "  ret\n");               /* 17 */

static int step_child(void)
{
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    long pid;
    __asm__ volatile("call step_code" : "=a"(pid) : : "rcx", "r11", "memory");
    return pid == getpid() ? 0 : 1;
}

static void test_single_step(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(step_child());
    expect_status(c, "stopped SIGSTOP event 0", "step child stopped");
    unsigned long addr = (unsigned long)step_code, text;
    peek(PTRACE_PEEKTEXT, c, addr, &text);
    pt(PTRACE_POKETEXT, c, addr, (text & ~0xffUL) | 0xcc);
    pt(PTRACE_CONT, c, 0, 0);
    int st;
    wait_stop(c, &st);
    pt(PTRACE_POKETEXT, c, addr, text);
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    r.rip = addr;
    pt(PTRACE_SETREGS, c, 0, (unsigned long)&r);
    unsigned long dr6 = 0;
    peek(PTRACE_PEEKUSER, c, offsetof(struct user, u_debugreg[6]), &dr6);
    printf("DR6 before stepping: %#lx\n", dr6);

    char trace[128] = "";
    int steps = 0, codes_ok = 1, tf_hidden = 1;
    while (steps < 10) {
        pt(PTRACE_SINGLESTEP, c, 0, 0);
        if (!wait_stop(c, &st) || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP)
            break;
        steps++;
        pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
        siginfo_t si;
        pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si);
        long off = (long)(r.rip - addr);
        char one[16];
        snprintf(one, sizeof one, " %ld", off);
        strcat(trace, one);
        int want = r.rip == (unsigned long)step_after ? TRAP_BRKPT : TRAP_TRACE;
        codes_ok &= si.si_code == want && si.si_addr == (void *)r.rip;
        tf_hidden &= !(r.eflags & 0x100);
        if (r.rip == (unsigned long)step_after)
            break;
    }
    printf("single-step offsets:%s\n", trace);
    check(steps == 6, "6 steps from step_code to after its syscall (%d)", steps);
    check(codes_ok, "each step: SIGTRAP TRAP_TRACE at rip; over the syscall TRAP_BRKPT");
    check(tf_hidden, "the tracer never sees the TF it set");
    check(r.rax == (unsigned long)c, "stepped over getpid: rax = pid");
    peek(PTRACE_PEEKUSER, c, offsetof(struct user, u_debugreg[6]), &dr6);
    printf("DR6 after stepping: %#lx\n", dr6);
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 0", "stepped child finishes");
}

/* A tracer that writes the registers back while stepping (gdb does)
 * leaves TF to the kernel: it stays hidden, and PTRACE_CONT runs on
 * instead of stepping once more. */
static void test_step_setregs_cont(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(step_child());
    expect_status(c, "stopped SIGSTOP event 0", "setregs step child stopped");
    int st, traps = 0, tf_seen = 0;
    struct user_regs_struct r;
    for (int i = 0; i < 3; i++) {
        pt(PTRACE_SINGLESTEP, c, 0, 0);
        if (!wait_stop(c, &st) || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP)
            break;
        traps++;
        pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
        pt(PTRACE_SETREGS, c, 0, (unsigned long)&r);
        pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
        tf_seen |= (r.eflags & 0x100) != 0;
    }
    check(traps == 3, "three steps, registers written back after each");
    check(!tf_seen, "TF stays hidden after SETREGS");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 0", "PTRACE_CONT after them runs the child to its end");
}

/* ------------------------------------------------------------------ */

static const uint8_t xmm_pattern[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static uint8_t xmm_out[16];

static int regs_child(void)
{
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    long pid = syscall(SYS_getpid);
    /* xmm0 holds the pattern across the stop; the tracer sets xmm1. */
    __asm__ volatile("movdqu %[p], %%xmm0\n"
                     "mov %[nr], %%eax\n"
                     "syscall\n"
                     "movdqu %%xmm1, %[o]\n"
                     : [o] "=m"(xmm_out)
                     : [p] "m"(xmm_pattern), [nr] "i"(SYS_kill), "D"(pid), "S"(SIGSTOP)
                     : "rax", "rcx", "r11", "xmm0", "xmm1", "memory");
    for (int i = 0; i < 16; i++)
        if (xmm_out[i] != 0xa0 + i)
            return 1;
    return 0;
}

static void test_regs(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(regs_child());
    expect_status(c, "stopped SIGSTOP event 0", "regs child stopped");
    struct user_regs_struct r, r2;
    EXPECT_OK("GETREGS", pt(PTRACE_GETREGS, c, 0, (unsigned long)&r));
    check(r.cs == 0x33 && r.ss == 0x2b, "cs 0x33, ss 0x2b");
    check((r.eflags & 0x202) == 0x202, "eflags has IF and bit 1");
    EXPECT_OK("SETREGS unchanged", pt(PTRACE_SETREGS, c, 0, (unsigned long)&r));
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r2);
    check(memcmp(&r, &r2, sizeof r) == 0, "GETREGS/SETREGS round trip");
    unsigned long w;
    peek(PTRACE_PEEKUSER, c, offsetof(struct user_regs_struct, rip), &w);
    check(w == r.rip, "PEEKUSER rip = GETREGS rip");
    peek(PTRACE_PEEKUSER, c, offsetof(struct user, u_debugreg[7]), &w);
    check(w == 0, "PEEKUSER DR7 = 0");
    EXPECT_OK("POKEUSER DR0", pt(PTRACE_POKEUSER, c, offsetof(struct user, u_debugreg[0]), (unsigned long)&data_word));
    peek(PTRACE_PEEKUSER, c, offsetof(struct user, u_debugreg[0]), &w);
    check(w == (unsigned long)&data_word, "PEEKUSER DR0 reads it back");
    pt(PTRACE_POKEUSER, c, offsetof(struct user, u_debugreg[0]), 0);
    peek(PTRACE_PEEKUSER, c, offsetof(struct user, u_tsize), &w);
    check(w == 0, "PEEKUSER of the rest of struct user reads 0");

    struct iovec iov = { &r2, sizeof r2 };
    memset(&r2, 0, sizeof r2);
    EXPECT_OK("GETREGSET NT_PRSTATUS", pt(PTRACE_GETREGSET, c, NT_PRSTATUS, (unsigned long)&iov));
    check(iov.iov_len == sizeof r2 && memcmp(&r, &r2, sizeof r) == 0, "GETREGSET = GETREGS, length 216");
    iov.iov_len = 1000;
    pt(PTRACE_GETREGSET, c, NT_PRSTATUS, (unsigned long)&iov);
    check(iov.iov_len == 216, "GETREGSET trims the length to 216");
    iov.iov_len = 64;
    memset(&r2, 0, sizeof r2);
    pt(PTRACE_GETREGSET, c, NT_PRSTATUS, (unsigned long)&iov);
    check(iov.iov_len == 64 && r2.r15 == r.r15 && r2.rbx == r.rbx && r2.rax == 0, "GETREGSET of 64 bytes");

    struct user_fpregs_struct fp;
    EXPECT_OK("GETFPREGS", pt(PTRACE_GETFPREGS, c, 0, (unsigned long)&fp));
    check(fp.cwd == 0x37f && fp.mxcsr == 0x1f80, "fpregs: cwd 0x37f, mxcsr 0x1f80");
    check(memcmp(&fp.xmm_space[0], xmm_pattern, 16) == 0, "fpregs: xmm0 holds the child's pattern");
    struct user_fpregs_struct fp2;
    struct iovec fiov = { &fp2, sizeof fp2 };
    pt(PTRACE_GETREGSET, c, NT_PRFPREG, (unsigned long)&fiov);
    check(fiov.iov_len == 512 && memcmp(&fp, &fp2, 160 + 32) == 0, "GETREGSET NT_PRFPREG = GETFPREGS");
    fp.mxcsr = 0x10000000;
    EXPECT_ERR(EINVAL, "SETFPREGS with a reserved MXCSR bit", pt(PTRACE_SETFPREGS, c, 0, (unsigned long)&fp));
    fp.mxcsr = 0x1f80;
    for (int i = 0; i < 16; i++)
        ((uint8_t *)&fp.xmm_space[4])[i] = 0xa0 + i;
    EXPECT_OK("SETFPREGS xmm1", pt(PTRACE_SETFPREGS, c, 0, (unsigned long)&fp));

    uint64_t mask = 0;
    EXPECT_OK("GETSIGMASK", pt(PTRACE_GETSIGMASK, c, 8, (unsigned long)&mask));
    check(mask == 0, "sigmask empty");
    mask = 1UL << (SIGUSR1 - 1) | 1UL << (SIGKILL - 1);
    pt(PTRACE_SETSIGMASK, c, 8, (unsigned long)&mask);
    pt(PTRACE_GETSIGMASK, c, 8, (unsigned long)&mask);
    check(mask == 1UL << (SIGUSR1 - 1), "SETSIGMASK drops SIGKILL");
    mask = 0;
    pt(PTRACE_SETSIGMASK, c, 8, (unsigned long)&mask);
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 0", "child saw the xmm1 the tracer wrote");
}

/* ------------------------------------------------------------------ */

static volatile int usr1_count, usr2_count, usr2_code, usr2_pid;

static void on_usr1(int s)
{
    (void)s;
    usr1_count++;
}

static void on_usr2(int s, siginfo_t *si, void *u)
{
    (void)s;
    (void)u;
    usr2_count++;
    usr2_code = si->si_code;
    usr2_pid = si->si_pid;
}

static int signal_child(void)
{
    signal(SIGUSR1, on_usr1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR2, &sa, NULL);
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    kill(getpid(), SIGUSR1); /* suppressed by the tracer */
    int ok = usr1_count == 0;
    kill(getpid(), SIGUSR1); /* replaced by SIGUSR2 */
    ok &= usr1_count == 0 && usr2_count == 1 && usr2_code == SI_USER && usr2_pid == getppid();
    kill(getpid(), SIGWINCH); /* ignored, but the tracer sees it */
    kill(getpid(), SIGSTOP);  /* the tracer turns it into a group stop */
    return ok ? 0 : 1;
}

static void test_signals(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(signal_child());
    expect_status(c, "stopped SIGUSR1 event 0", "signal-delivery-stop for SIGUSR1");
    siginfo_t si;
    pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si);
    check(si.si_signo == SIGUSR1 && si.si_code == SI_USER && si.si_pid == c, "GETSIGINFO: the kill's siginfo");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "stopped SIGUSR1 event 0", "second SIGUSR1");
    pt(PTRACE_CONT, c, 0, SIGUSR2);
    expect_status(c, "stopped signal28 event 0", "an ignored signal still stops for the tracer");
    pt(PTRACE_CONT, c, 0, SIGWINCH);
    expect_status(c, "stopped SIGSTOP event 0", "signal-delivery-stop for SIGSTOP");
    EXPECT_OK("GETSIGINFO in signal-delivery-stop", pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si));
    pt(PTRACE_CONT, c, 0, SIGSTOP);
    expect_status(c, "stopped SIGSTOP event 0", "group-stop after injecting SIGSTOP");
    EXPECT_ERR(EINVAL, "GETSIGINFO in a group-stop", pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si));
    int st;
    check(waitpid(c, &st, WNOHANG | WUNTRACED) == 0, "the group stop is reported once");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 0", "signal child: suppression and injection as expected");
}

/* ------------------------------------------------------------------ */

static void test_seize_group_stop(void)
{
    int w;
    pid_t c = spawn_waiting(&w, nothing);
    EXPECT_OK("SEIZE", pt(PTRACE_SEIZE, c, 0, 0));
    kill(c, SIGSTOP);
    expect_status(c, "stopped SIGSTOP event 0", "seized: signal-delivery-stop for SIGSTOP");
    pt(PTRACE_CONT, c, 0, SIGSTOP);
    expect_status(c, "stopped SIGSTOP event 128", "seized: group-stop is PTRACE_EVENT_STOP");
    siginfo_t si;
    EXPECT_OK("GETSIGINFO in a SEIZE group-stop", pt(PTRACE_GETSIGINFO, c, 0, (unsigned long)&si));
    check(si.si_signo == SIGSTOP && si.si_code >> 8 == PTRACE_EVENT_STOP, "its siginfo code says EVENT_STOP");
    EXPECT_OK("PTRACE_LISTEN", pt(PTRACE_LISTEN, c, 0, 0));
    EXPECT_ERR(ESRCH, "GETREGS while listening", pt(PTRACE_GETREGS, c, 0, 0));
    int st;
    check(waitpid(c, &st, __WALL | WNOHANG) == 0, "nothing to report while listening");
    kill(c, SIGCONT);
    expect_status(c, "stopped SIGTRAP event 128", "SIGCONT ends the listen with an EVENT_STOP trap");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "stopped SIGCONT event 0", "then the SIGCONT's signal-delivery-stop");
    pt(PTRACE_CONT, c, 0, 0);

    /* INTERRUPT a read: the call restarts after the trap. The child
     * must be asleep in it first. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", c);
    for (int i = 0; i < 5000; i++) {
        char buf[256];
        int fd = open(path, O_RDONLY);
        int n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        char *rp = strrchr(buf, ')');
        if (rp && rp[2] == 'S')
            break;
        usleep(1000);
    }
    EXPECT_OK("PTRACE_INTERRUPT", pt(PTRACE_INTERRUPT, c, 0, 0));
    expect_status(c, "stopped SIGTRAP event 128", "INTERRUPT traps the tracee");
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check(r.orig_rax == SYS_read && (long)r.rax == -512, "interrupted read: orig_rax %ld, rax %ld", (long)r.orig_rax,
          (long)r.rax);
    pt(PTRACE_CONT, c, 0, 0);
    write(w, "x", 1);
    expect_status(c, "exited 0", "the restarted read got its byte");
    close(w);
}

/* ------------------------------------------------------------------ */

static void *thread_fn(void *arg)
{
    return arg;
}

static int event_child(void)
{
    volatile int ok = 1;
    pid_t g = fork();
    if (g == 0)
        _exit(5);
    int st;
    ok &= waitpid(g, &st, 0) == g && WIFEXITED(st) && WEXITSTATUS(st) == 5;
    g = vfork();
    if (g == 0)
        _exit(6);
    ok &= waitpid(g, &st, 0) == g && WIFEXITED(st) && WEXITSTATUS(st) == 6;
    pthread_t th;
    void *ret = NULL;
    ok &= pthread_create(&th, NULL, thread_fn, (void *)7) == 0;
    ok &= pthread_join(th, &ret) == 0 && ret == (void *)7;
    if (!ok)
        return 1;
    char *argv[] = { self, "--exit", "3", NULL };
    execv(self, argv);
    return 2;
}

static pid_t event_pid(pid_t c)
{
    unsigned long msg = 0;
    pt(PTRACE_GETEVENTMSG, c, 0, (unsigned long)&msg);
    return (pid_t)msg;
}

static void test_events(void)
{
    int w;
    pid_t c = spawn_waiting(&w, event_child);
    long opts = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
                PTRACE_O_TRACEEXIT | PTRACE_O_TRACEVFORKDONE;
    EXPECT_OK("SEIZE with event options", pt(PTRACE_SEIZE, c, 0, opts));
    write(w, "x", 1);
    close(w);

    expect_status(c, "stopped SIGTRAP event 1", "fork event");
    pid_t g = event_pid(c);
    struct user_regs_struct r;
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check(r.orig_rax == SYS_fork || r.orig_rax == SYS_clone, "fork event inside fork/clone");
    check((long)r.rax == -ENOSYS, "fork event: rax -ENOSYS (the call has not returned)");
    expect_status(g, "stopped SIGTRAP event 128", "the new child starts in an EVENT_STOP");
    pt(PTRACE_CONT, g, 0, 0);
    expect_status(g, "stopped SIGTRAP event 6", "child's exit event");
    unsigned long msg = 0;
    pt(PTRACE_GETEVENTMSG, g, 0, (unsigned long)&msg);
    check(msg == 5 << 8, "exit event message: the wait status");
    pt(PTRACE_CONT, g, 0, 0);
    expect_status(g, "exited 5", "the tracer sees the grandchild exit");
    pt(PTRACE_CONT, c, 0, 0);

    expect_status(c, "stopped SIGTRAP event 2", "vfork event");
    g = event_pid(c);
    expect_status(g, "stopped SIGTRAP event 128", "the vfork child starts in an EVENT_STOP");
    pt(PTRACE_CONT, g, 0, 0);
    expect_status(g, "stopped SIGTRAP event 6", "vfork child's exit event");
    pt(PTRACE_CONT, g, 0, 0);
    expect_status(g, "exited 6", "vfork child exits");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "stopped SIGTRAP event 5", "vfork-done event");
    check(event_pid(c) == g, "vfork-done message: the child");
    pt(PTRACE_CONT, c, 0, 0);

    expect_status(c, "stopped SIGTRAP event 3", "clone event (pthread_create)");
    pid_t t = event_pid(c);
    expect_status(t, "stopped SIGTRAP event 128", "the new thread starts in an EVENT_STOP");
    pt(PTRACE_CONT, t, 0, 0);
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(t, "stopped SIGTRAP event 6", "thread's exit event");
    pt(PTRACE_CONT, t, 0, 0);
    expect_status(t, "exited 0", "the tracer sees the thread exit");

    expect_status(c, "stopped SIGTRAP event 4", "exec event");
    check(event_pid(c) == c, "exec event message: the former thread id");
    pt(PTRACE_GETREGS, c, 0, (unsigned long)&r);
    check(r.orig_rax == SYS_execve && (long)r.rax == -ENOSYS, "exec event: orig_rax execve, rax -ENOSYS");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "stopped SIGTRAP event 6", "exit event of the exec'd program");
    pt(PTRACE_GETEVENTMSG, c, 0, (unsigned long)&msg);
    check(msg == 3 << 8, "its message: exit status 3");
    pt(PTRACE_CONT, c, 0, 0);
    expect_status(c, "exited 3", "one exit report for a child traced by its parent");
    int st;
    check(waitpid(-1, &st, __WALL | WNOHANG) == -1 && errno == ECHILD, "nothing left to wait for");
}

/* ------------------------------------------------------------------ */

static void test_detach_and_kill(void)
{
    /* Detach from a signal-delivery-stop with the signal delivered. */
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        signal(SIGUSR1, on_usr1);
        kill(getpid(), SIGUSR1);
        _exit(usr1_count == 1 ? 0 : 1);
    }
    expect_status(c, "stopped SIGUSR1 event 0", "stop before detach");
    EXPECT_OK("DETACH with SIGUSR1", pt(PTRACE_DETACH, c, 0, SIGUSR1));
    expect_status(c, "exited 0", "detached child got the signal once");

    /* PTRACE_KILL. */
    c = fork();
    if (c == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        _exit(1);
    }
    expect_status(c, "stopped SIGSTOP event 0", "stop before PTRACE_KILL");
    EXPECT_OK("PTRACE_KILL", pt(PTRACE_KILL, c, 0, 0));
    expect_status(c, "killed by SIGKILL", "PTRACE_KILL kills");

    /* A tracer that exits: EXITKILL kills the tracee, otherwise it runs on. */
    for (int exitkill = 0; exitkill < 2; exitkill++) {
        int w;
        pid_t victim = spawn_waiting(&w, nothing);
        fflush(stdout);
        pid_t tracer = fork();
        if (tracer == 0) {
            if (pt(PTRACE_SEIZE, victim, 0, exitkill ? PTRACE_O_EXITKILL : 0) != 0)
                _exit(1);
            pt(PTRACE_INTERRUPT, victim, 0, 0);
            int st;
            waitpid(victim, &st, __WALL);
            _exit(WIFSTOPPED(st) ? 0 : 2);
        }
        expect_status(tracer, "exited 0", "tracer stopped its tracee and exited");
        write(w, "x", 1);
        close(w);
        expect_status(victim, exitkill ? "killed by SIGKILL" : "exited 0",
                      exitkill ? "EXITKILL: tracee killed" : "without EXITKILL: tracee released");
    }

    /* SIGKILL ends a tracee sitting in a stop. */
    c = fork();
    if (c == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        _exit(1);
    }
    expect_status(c, "stopped SIGSTOP event 0", "stop before SIGKILL");
    kill(c, SIGKILL);
    expect_status(c, "killed by SIGKILL", "SIGKILL ends a stopped tracee");
}

/* ------------------------------------------------------------------ */

/* A process with the given real/effective-and-saved uid and gid that
 * waits to be killed; `dumpable` is what it sets PR_SET_DUMPABLE to
 * after changing ids (which made it non-dumpable). */
static pid_t spawn_as(uid_t ruid, uid_t uid, gid_t gid, int dumpable)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (setresgid(gid, gid, gid) != 0 || setresuid(ruid, uid, uid) != 0)
            _exit(1);
        prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
        if (write(p[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1)
        pid = -1;
    close(p[0]);
    return pid;
}

/* 0 or the errno of a call that returned -1. */
static int err_of(long r)
{
    return r == -1 ? errno : 0;
}

static int open_mem(pid_t pid, long *word)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return errno;
    int e = pread(fd, word, sizeof *word, (off_t)(unsigned long)&data_word) == sizeof *word ? 0 : EIO;
    close(fd);
    return e;
}

static void test_permissions(void)
{
    /* Targets: root; user 1000 (dumpable again, not dumpable); user 1000
     * in group 1001; user 1001 in group 1000. */
    pid_t root_p = spawn_as(0, 0, 0, 1);
    pid_t same = spawn_as(1000, 1000, 1000, 1);
    pid_t nodump = spawn_as(1000, 1000, 1000, 0);
    pid_t other_gid = spawn_as(1000, 1000, 1001, 1);
    pid_t other_uid = spawn_as(1001, 1001, 1000, 1);
    int rp[2];
    if (pipe(rp) != 0)
        return;
    /* Probers without capabilities: real uid 1000, then real uid 1001
     * with effective (so file-system) uid 1000. */
    for (int fs_differs = 0; fs_differs < 2; fs_differs++) {
        fflush(stdout);
        pid_t prober = fork();
        if (prober == 0) {
            close(rp[0]);
            if (setresgid(1000, 1000, 1000) != 0 || setresuid(fs_differs ? 1001 : 1000, 1000, 1000) != 0)
                _exit(1);
            long word = 0;
            int r[11];
            r[0] = err_of(pt(PTRACE_SEIZE, root_p, 0, 0));
            r[1] = err_of(pt(PTRACE_SEIZE, same, 0, 0));
            r[2] = err_of(pt(PTRACE_SEIZE, nodump, 0, 0));
            r[3] = err_of(pt(PTRACE_SEIZE, other_gid, 0, 0));
            r[4] = err_of(pt(PTRACE_ATTACH, other_uid, 0, 0));
            r[5] = open_mem(root_p, &word);
            r[6] = open_mem(same, &word);
            r[7] = word == 0x1122334455667788L || word == 0x0badc0de;
            r[8] = open_mem(other_gid, &word);
            r[9] = open_mem(getpid(), &word);
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
            r[10] = open_mem(getpid(), &word);
            _exit(write(rp[1], r, sizeof r) == sizeof r ? 0 : 1);
        }
        int r[11];
        int ok = read(rp[0], r, sizeof r) == sizeof r;
        const char *who = fs_differs ? "uid 1001 euid 1000" : "uid 1000";
        check(ok && r[0] == EPERM, "%s SEIZEs root: %s", who, errname(r[0]));
        check(ok && r[1] == (fs_differs ? EPERM : 0), "%s SEIZEs uid 1000: %s", who, errname(r[1]));
        check(ok && r[2] == EPERM, "%s SEIZEs a non-dumpable uid 1000: %s", who, errname(r[2]));
        check(ok && r[3] == EPERM, "%s SEIZEs uid 1000 gid 1001: %s", who, errname(r[3]));
        check(ok && r[4] == (fs_differs ? 0 : EPERM), "%s ATTACHes uid 1001: %s", who, errname(r[4]));
        check(ok && r[5] == EACCES, "%s opens root's /proc/pid/mem: %s", who, errname(r[5]));
        check(ok && r[6] == 0 && r[7], "%s opens and reads uid 1000's /proc/pid/mem: %s", who, errname(r[6]));
        check(ok && r[8] == EACCES, "%s opens uid 1000 gid 1001's /proc/pid/mem: %s", who, errname(r[8]));
        check(ok && r[9] == EACCES, "%s opens its own /proc/pid/mem, not dumpable (root's): %s", who, errname(r[9]));
        check(ok && r[10] == 0, "%s opens its own /proc/pid/mem, dumpable again: %s", who, errname(r[10]));
        expect_status(prober, "exited 0", "prober");
        /* The prober's exit let its tracees go; ATTACH's SIGSTOP stopped one. */
        kill(other_uid, SIGCONT);
    }
    close(rp[0]);
    close(rp[1]);

    /* TRACEME asks the parent's capabilities, not its ids. */
    fflush(stdout);
    pid_t parent = fork();
    if (parent == 0) {
        if (setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0)
            _exit(1);
        pid_t c = fork();
        if (c == 0) {
            if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
                _exit(2);
            raise(SIGSTOP);
            _exit(0);
        }
        int st;
        if (waitpid(c, &st, 0) != c || !WIFSTOPPED(st))
            _exit(3);
        pt(PTRACE_CONT, c, 0, 0);
        waitpid(c, &st, 0);
        _exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 4);
    }
    expect_status(parent, "exited 0", "uid 1000 child TRACEMEs to a uid 1000 parent");

    pid_t all[] = { root_p, same, nodump, other_gid, other_uid };
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
        kill(all[i], SIGKILL);
        waitpid(all[i], NULL, 0);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--exit") == 0)
        return atoi(argv[2]);
    t_init("ptrace");
    signal(SIGPIPE, SIG_IGN);
    self = argv[0];
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        { "errors", test_errors },       { "exec", test_traceme_exec },
        { "syscalls", test_syscall_stops }, { "peek", test_peek_poke_breakpoint },
        { "step", test_single_step },    { "step-setregs", test_step_setregs_cont },
        { "regs", test_regs },
        { "signals", test_signals },     { "seize", test_seize_group_stop },
        { "events", test_events },       { "detach", test_detach_and_kill },
        { "perm", test_permissions },
    };
    /* `ptrace NAME...` runs only those (for debugging). */
    for (unsigned i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int run = argc < 2;
        for (int a = 1; a < argc; a++)
            run |= strcmp(argv[a], tests[i].name) == 0;
        if (run)
            tests[i].fn();
    }
    return t_done();
}
