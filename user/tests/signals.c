/*
 * signals: sigaction/sigprocmask/pending/queuing, siginfo codes,
 * sigaltstack, synchronous faults (SIGSEGV, SIGFPE, SIGILL, SIGTRAP),
 * default actions, stop/continue, SIG_IGN, SIGCHLD, EINTR vs SA_RESTART,
 * register preservation across rt_sigreturn, and error cases.
 */
#include "common.h"
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>

#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

static volatile sig_atomic_t count;
static volatile int last_sig;

static void counter(int sig)
{
    last_sig = sig;
    count++;
}

static void set_handler(int sig, void (*h)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static void set_action(int sig, void (*h)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = flags | SA_SIGINFO;
    sigaction(sig, &sa, NULL);
}

static void block(int sig, int how)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(how, &s, NULL);
}

static int is_pending(int sig)
{
    sigset_t s;
    sigpending(&s);
    return sigismember(&s, sig);
}

static void test_basic(void)
{
    set_handler(SIGUSR1, counter, 0);
    count = 0;
    check(kill(getpid(), SIGUSR1) == 0, "kill(getpid(), SIGUSR1)");
    check(count == 1 && last_sig == SIGUSR1, "handler ran before kill() returned");
    count = 0;
    raise(SIGUSR1);
    check(count == 1, "raise(SIGUSR1) runs the handler");

    /* Blocking defers delivery until unblocked. */
    count = 0;
    block(SIGUSR1, SIG_BLOCK);
    kill(getpid(), SIGUSR1);
    check(count == 0, "blocked signal not delivered");
    check(is_pending(SIGUSR1), "blocked signal is pending");
    block(SIGUSR1, SIG_UNBLOCK);
    check(count == 1, "unblocking delivers the pending signal");
    check(!is_pending(SIGUSR1), "no longer pending");

    /* Standard signals do not queue; real-time signals do. */
    count = 0;
    block(SIGUSR1, SIG_BLOCK);
    for (int i = 0; i < 3; i++)
        kill(getpid(), SIGUSR1);
    block(SIGUSR1, SIG_UNBLOCK);
    check(count == 1, "3 x blocked SIGUSR1 delivered once");

    int rt = SIGRTMIN + 1;
    set_handler(rt, counter, 0);
    count = 0;
    block(rt, SIG_BLOCK);
    for (int i = 0; i < 3; i++)
        kill(getpid(), rt);
    block(rt, SIG_UNBLOCK);
    check(count == 3, "3 x blocked real-time signal delivered 3 times");
    set_handler(rt, SIG_DFL, 0);

    /* The old action is reported back. */
    struct sigaction old;
    set_handler(SIGUSR2, counter, SA_RESTART);
    sigaction(SIGUSR2, NULL, &old);
    check(old.sa_handler == counter && (old.sa_flags & SA_RESTART), "sigaction returns the installed action");
    set_handler(SIGUSR2, SIG_DFL, 0);
}

/* ---- siginfo ---- */
static volatile int si_signo_, si_code_, si_val_, si_pid_ok, si_uid_;

static void info_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    si_signo_ = si->si_signo;
    si_code_ = si->si_code;
    si_pid_ok = si->si_pid == getpid();
    si_uid_ = (int)si->si_uid;
    si_val_ = si->si_value.sival_int;
}

static void test_siginfo(void)
{
    set_action(SIGUSR1, info_handler, 0);
    kill(getpid(), SIGUSR1);
    check(si_signo_ == SIGUSR1, "SA_SIGINFO: si_signo == SIGUSR1");
    check(si_code_ == SI_USER, "kill -> si_code SI_USER");
    check(si_pid_ok && si_uid_ == 0, "kill -> si_pid == sender, si_uid == 0");

    si_code_ = 0;
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1);
    check(si_code_ == SI_TKILL && si_pid_ok, "tgkill -> si_code SI_TKILL");
    si_code_ = 0;
    syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR1);
    check(si_code_ == SI_TKILL, "tkill -> si_code SI_TKILL");

    union sigval v;
    v.sival_int = 1234;
    si_code_ = 0;
    check(sigqueue(getpid(), SIGUSR1, v) == 0, "sigqueue");
    check(si_code_ == SI_QUEUE && si_val_ == 1234, "sigqueue -> si_code SI_QUEUE, si_value 1234");
    set_handler(SIGUSR1, SIG_DFL, 0);
}

/* ---- masks inside handlers, SA_NODEFER, SA_RESETHAND, nesting ---- */
static volatile int in_usr1_blocked, in_usr2_blocked, depth, max_depth;

static void mask_handler(int sig)
{
    (void)sig;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    in_usr1_blocked = sigismember(&cur, SIGUSR1);
    in_usr2_blocked = sigismember(&cur, SIGUSR2);
}

static void nest_handler(int sig)
{
    depth++;
    if (depth > max_depth)
        max_depth = depth;
    count++;
    if (count == 1)
        raise(sig);
    depth--;
}

static void test_masks(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = mask_handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    check(in_usr1_blocked && in_usr2_blocked, "in handler: the signal and sa_mask are blocked");
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    check(!sigismember(&cur, SIGUSR1) && !sigismember(&cur, SIGUSR2), "after handler: mask restored");

    sa.sa_flags = SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    check(!in_usr1_blocked, "SA_NODEFER: the signal is not blocked in its handler");

    /* Without SA_NODEFER a raise() inside the handler waits. */
    set_handler(SIGUSR1, nest_handler, 0);
    count = depth = max_depth = 0;
    raise(SIGUSR1);
    check(count == 2 && max_depth == 1, "re-raised signal delivered after handler returns (no nesting)");
    set_handler(SIGUSR1, nest_handler, SA_NODEFER);
    count = depth = max_depth = 0;
    raise(SIGUSR1);
    check(count == 2 && max_depth == 2, "SA_NODEFER: re-raised signal nests");

    set_handler(SIGUSR1, counter, SA_RESETHAND);
    count = 0;
    raise(SIGUSR1);
    struct sigaction old;
    sigaction(SIGUSR1, NULL, &old);
    check(count == 1 && old.sa_handler == SIG_DFL, "SA_RESETHAND: handler reset to SIG_DFL after delivery");
    set_handler(SIGUSR1, SIG_DFL, 0);
}

/* ---- sigaltstack ---- */
static char *alt_base;
static size_t alt_size;
static volatile int on_alt, alt_flags_onstack, alt_change_err;

static void alt_handler(int sig)
{
    (void)sig;
    char local;
    on_alt = (char *)&local >= alt_base && (char *)&local < alt_base + alt_size;
    stack_t cur;
    sigaltstack(NULL, &cur);
    alt_flags_onstack = (cur.ss_flags & SS_ONSTACK) != 0;
    stack_t ns = { .ss_sp = alt_base, .ss_size = alt_size, .ss_flags = 0 };
    alt_change_err = sigaltstack(&ns, NULL) == -1 ? errno : 0;
}

static void test_altstack(void)
{
    alt_size = 64 * 1024;
    alt_base = mmap(NULL, alt_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    stack_t ss = { .ss_sp = alt_base, .ss_size = alt_size, .ss_flags = 0 };
    check(sigaltstack(&ss, NULL) == 0, "sigaltstack install 64 KiB");
    stack_t cur;
    sigaltstack(NULL, &cur);
    check(cur.ss_sp == alt_base && cur.ss_size == alt_size && cur.ss_flags == 0, "sigaltstack query");

    set_handler(SIGUSR1, alt_handler, SA_ONSTACK);
    raise(SIGUSR1);
    check(on_alt, "SA_ONSTACK handler runs on the alternate stack");
    check(alt_flags_onstack, "sigaltstack in handler reports SS_ONSTACK");
    check(alt_change_err == EPERM, "changing the alt stack while on it -> EPERM");

    set_handler(SIGUSR1, alt_handler, 0);
    raise(SIGUSR1);
    check(!on_alt, "handler without SA_ONSTACK runs on the normal stack");
    set_handler(SIGUSR1, SIG_DFL, 0);

    stack_t small = { .ss_sp = alt_base, .ss_size = 512, .ss_flags = 0 };
    EXPECT_ERR(ENOMEM, "sigaltstack(size 512)", sigaltstack(&small, NULL));
    stack_t badf = { .ss_sp = alt_base, .ss_size = alt_size, .ss_flags = 0x1234 };
    EXPECT_ERR(EINVAL, "sigaltstack(bad flags)", sigaltstack(&badf, NULL));
    stack_t dis = { .ss_flags = SS_DISABLE };
    check(sigaltstack(&dis, NULL) == 0, "sigaltstack SS_DISABLE");
    sigaltstack(NULL, &cur);
    check(cur.ss_flags == SS_DISABLE, "query after disable: SS_DISABLE");
}

/* ---- synchronous faults ---- */
static sigjmp_buf jb;
static volatile int f_signo, f_code;
static void *volatile f_addr;

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    f_signo = sig;
    f_code = si->si_code;
    f_addr = si->si_addr;
    siglongjmp(jb, 1);
}

static const char *code_name(int sig, int code)
{
    static char buf[32];
    if (sig == SIGSEGV && code == SEGV_MAPERR) return "SEGV_MAPERR";
    if (sig == SIGSEGV && code == SEGV_ACCERR) return "SEGV_ACCERR";
    if (sig == SIGFPE && code == FPE_INTDIV) return "FPE_INTDIV";
    if (sig == SIGILL && code == ILL_ILLOPN) return "ILL_ILLOPN";
    if (code == SI_KERNEL) return "SI_KERNEL";
    snprintf(buf, sizeof buf, "code %d", code);
    return buf;
}

static volatile int skipped;

static void ill_skip_handler(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    ucontext_t *uc = ucv;
    uc->uc_mcontext.gregs[REG_RIP] += 2; /* skip the 2-byte ud2 */
    skipped++;
}

static volatile int trapped;

static void trap_handler(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    (void)ucv;
    trapped++;
}

static void test_faults(void)
{
    set_action(SIGSEGV, fault_handler, 0);
    set_action(SIGFPE, fault_handler, 0);
    set_action(SIGILL, fault_handler, 0);

    volatile int *volatile nullp = NULL;
    f_signo = 0;
    if (sigsetjmp(jb, 1) == 0) {
        *nullp = 1;
        check(0, "NULL write faulted");
    } else {
        check(f_signo == SIGSEGV, "NULL deref -> SIGSEGV caught");
        check(f_addr == NULL, "SIGSEGV si_addr == 0");
        printf("SIGSEGV si_code %s\n", code_name(SIGSEGV, f_code));
    }

    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    volatile char *volatile rop = ro + 100;
    f_signo = 0;
    if (sigsetjmp(jb, 1) == 0) {
        *rop = 1;
        check(0, "write to read-only page faulted");
    } else {
        check(f_signo == SIGSEGV && f_addr == ro + 100, "write to read-only page -> SIGSEGV, si_addr exact");
        printf("SIGSEGV si_code %s\n", code_name(SIGSEGV, f_code));
    }
    munmap(ro, 4096);

    /* The handler's mask was restored by siglongjmp: SIGSEGV works again. */
    f_signo = 0;
    if (sigsetjmp(jb, 1) == 0) {
        volatile int c = *(volatile int *)KERNEL_PTR;
        (void)c;
        check(0, "kernel address read faulted");
    } else {
        check(f_signo == SIGSEGV, "read of kernel address -> SIGSEGV (second fault after siglongjmp)");
    }

    volatile int a = 7, b = 0;
    f_signo = 0;
    if (sigsetjmp(jb, 1) == 0) {
        volatile int c = a / b;
        (void)c;
        check(0, "division by zero faulted");
    } else {
        check(f_signo == SIGFPE, "integer divide by zero -> SIGFPE caught");
        printf("SIGFPE si_code %s\n", code_name(SIGFPE, f_code));
    }

    volatile long m = (long)(-9223372036854775807L - 1), n1 = -1;
    f_signo = 0;
    if (sigsetjmp(jb, 1) == 0) {
        volatile long c = m / n1;
        (void)c;
        check(0, "LONG_MIN / -1 faulted");
    } else {
        check(f_signo == SIGFPE, "LONG_MIN / -1 -> SIGFPE");
    }

    f_signo = 0;
    if (sigsetjmp(jb, 1) == 0) {
        __builtin_trap();
    } else {
        check(f_signo == SIGILL, "__builtin_trap (ud2) -> SIGILL caught");
        printf("SIGILL si_code %s\n", code_name(SIGILL, f_code));
    }

    /* A handler that edits the saved RIP: execution resumes after ud2. */
    set_action(SIGILL, ill_skip_handler, 0);
    skipped = 0;
    __asm__ volatile("ud2");
    __asm__ volatile("ud2");
    check(skipped == 2, "handler advancing RIP in ucontext resumes after ud2 (x2)");

    set_action(SIGTRAP, trap_handler, 0);
    __asm__ volatile("int3");
    check(trapped == 1, "int3 -> SIGTRAP, execution continues after handler returns");

    set_handler(SIGSEGV, SIG_DFL, 0);
    set_handler(SIGFPE, SIG_DFL, 0);
    set_handler(SIGILL, SIG_DFL, 0);
    set_handler(SIGTRAP, SIG_DFL, 0);
}

/* ---- stack overflow caught on the alternate stack ---- */
static void segv_exit(int sig)
{
    _exit(sig == SIGSEGV ? 77 : 1);
}

#pragma GCC diagnostic ignored "-Winfinite-recursion"
static int recurse(volatile char *prev)
{
    volatile char buf[1024];
    buf[0] = prev ? prev[0] + 1 : 0;
    return recurse(buf) + buf[1];
}

static int child_overflow(void *arg)
{
    (void)arg;
    stack_t ss = { .ss_sp = malloc(65536), .ss_size = 65536, .ss_flags = 0 };
    sigaltstack(&ss, NULL);
    set_handler(SIGSEGV, segv_exit, SA_ONSTACK);
    return recurse(NULL);
}

/* ---- default actions ---- */
static int child_raise(void *arg)
{
    int sig = (int)(long)arg;
    signal(sig, SIG_DFL);
    raise(sig);
    return 0;
}

static int child_abort(void *arg)
{
    (void)arg;
    abort();
}

static int child_segv(void *arg)
{
    (void)arg;
    volatile int *volatile p = NULL;
    *p = 0;
    return 0;
}

static int child_kill_blocked_kill(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    raise(SIGKILL);
    return 0;
}

static void test_defaults(void)
{
    int st;
    st = run_child(child_raise, (void *)(long)SIGTERM);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "default SIGTERM kills: WTERMSIG == SIGTERM");
    st = run_child(child_raise, (void *)(long)SIGUSR1);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1, "default SIGUSR1 kills");
    st = run_child(child_raise, (void *)(long)SIGALRM);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM, "default SIGALRM kills");
    st = run_child(child_abort, NULL);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "abort() -> WTERMSIG == SIGABRT");
    st = run_child(child_segv, NULL);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "unhandled NULL deref -> WTERMSIG == SIGSEGV");
    st = run_child(child_raise, (void *)(long)SIGCHLD);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "default SIGCHLD is ignored");
    st = run_child(child_raise, (void *)(long)SIGURG);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "default SIGURG is ignored");
    st = run_child(child_raise, (void *)(long)SIGCONT);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGCONT to a running process: no effect");
    st = run_child(child_kill_blocked_kill, NULL);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "SIGKILL cannot be blocked");
    st = run_child(child_overflow, NULL);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 77, "stack overflow -> SIGSEGV handled on alt stack");
}

static void test_stop_cont(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    int st = 0;
    kill(pid, SIGSTOP);
    check(wait_for(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP,
          "SIGSTOP: waitpid(WUNTRACED) reports stopped by SIGSTOP");
    check(waitpid(pid, &st, WUNTRACED | WNOHANG) == 0, "stop reported only once");
    kill(pid, SIGCONT);
    check(wait_for(pid, &st, WCONTINUED) == pid && WIFCONTINUED(st), "SIGCONT: waitpid(WCONTINUED) reports continued");
    siginfo_t si;
    kill(pid, SIGSTOP);
    memset(&si, 0, sizeof si);
    check(waitid(P_PID, pid, &si, WSTOPPED) == 0 && si.si_code == CLD_STOPPED && si.si_status == SIGSTOP,
          "waitid(WSTOPPED): CLD_STOPPED, si_status SIGSTOP");
    kill(pid, SIGCONT);
    memset(&si, 0, sizeof si);
    check(waitid(P_PID, pid, &si, WCONTINUED) == 0 && si.si_code == CLD_CONTINUED && si.si_status == SIGCONT,
          "waitid(WCONTINUED): CLD_CONTINUED, si_status SIGCONT");
    /* SIGKILL also ends a stopped process. */
    kill(pid, SIGSTOP);
    wait_for(pid, &st, WUNTRACED);
    kill(pid, SIGKILL);
    check(wait_for(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
          "SIGKILL ends a stopped child");
}

static void test_ignore(void)
{
    signal(SIGUSR2, SIG_IGN);
    check(kill(getpid(), SIGUSR2) == 0, "SIG_IGN: kill succeeds, nothing happens");
    check(!is_pending(SIGUSR2), "ignored unblocked signal is discarded");
    /* Linux: a blocked signal is queued even if ignored... */
    block(SIGUSR2, SIG_BLOCK);
    kill(getpid(), SIGUSR2);
    check(is_pending(SIGUSR2), "blocked + ignored signal is still pending");
    block(SIGUSR2, SIG_UNBLOCK);
    check(!is_pending(SIGUSR2), "...and discarded when unblocked");
    /* Setting SIG_IGN discards a pending signal. */
    set_handler(SIGUSR2, counter, 0);
    count = 0;
    block(SIGUSR2, SIG_BLOCK);
    kill(getpid(), SIGUSR2);
    signal(SIGUSR2, SIG_IGN);
    check(!is_pending(SIGUSR2), "setting SIG_IGN discards the pending signal");
    block(SIGUSR2, SIG_UNBLOCK);
    check(count == 0, "discarded signal never delivered");
    signal(SIGUSR2, SIG_DFL);
}

/* ---- SIGCHLD ---- */
static volatile int chld_count, chld_code;

static void chld_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    chld_count++;
    chld_code = si->si_code;
}

static void test_sigchld(void)
{
    set_action(SIGCHLD, chld_handler, SA_RESTART);
    chld_count = 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(4);
    int st;
    wait_for(pid, &st, 0);
    for (int i = 0; i < 1000 && !chld_count; i++)
        sleep_ms(1);
    check(chld_count == 1 && chld_code == CLD_EXITED, "SIGCHLD delivered on child exit (CLD_EXITED)");

    /* SA_NOCLDSTOP: no SIGCHLD when a child stops. */
    set_action(SIGCHLD, chld_handler, SA_RESTART | SA_NOCLDSTOP);
    chld_count = 0;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    kill(pid, SIGSTOP);
    wait_for(pid, &st, WUNTRACED);
    sleep_ms(10);
    check(chld_count == 0, "SA_NOCLDSTOP: no SIGCHLD on stop");
    kill(pid, SIGKILL);
    wait_for(pid, &st, 0);
    for (int i = 0; i < 1000 && !chld_count; i++)
        sleep_ms(1);
    check(chld_count == 1 && chld_code == CLD_KILLED, "SIGCHLD on kill (CLD_KILLED)");

    /* SIGCHLD set to SIG_IGN: children are reaped automatically. */
    signal(SIGCHLD, SIG_IGN);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(0);
    EXPECT_ERR(ECHILD, "SIGCHLD=SIG_IGN: child auto-reaped, waitpid", wait_for(pid, &st, 0));
    signal(SIGCHLD, SIG_DFL);
}

/* ---- EINTR and SA_RESTART ---- */
static int fword;

static void alarm_set_word(int sig)
{
    (void)sig;
    count++;
    __atomic_store_n(&fword, 1, __ATOMIC_SEQ_CST);
}

static void arm_ms(long ms)
{
    struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
    setitimer(ITIMER_REAL, &it, NULL);
}

static void test_eintr(void)
{
    struct timespec req = { 5, 0 }, rem = { 0, 0 };

    set_handler(SIGALRM, alarm_set_word, 0);
    arm_ms(30);
    int64_t t0 = mono_ns();
    EXPECT_ERR(EINTR, "nanosleep(5 s) interrupted by SIGALRM", nanosleep(&req, &rem));
    check(mono_ns() - t0 < 4000000000LL, "nanosleep returned early");
    check(rem.tv_sec > 0 && rem.tv_sec <= 5, "nanosleep reports remaining time");

    set_handler(SIGALRM, alarm_set_word, SA_RESTART);
    arm_ms(30);
    EXPECT_ERR(EINTR, "nanosleep with SA_RESTART handler still returns", nanosleep(&req, &rem));

    /* futex wait without timeout: restarted under SA_RESTART.  The handler
     * sets the word, so the restarted wait returns EAGAIN. */
    fword = 0;
    set_handler(SIGALRM, alarm_set_word, 0);
    arm_ms(30);
    EXPECT_ERR(EINTR, "futex wait, handler without SA_RESTART",
               syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
    fword = 0;
    set_handler(SIGALRM, alarm_set_word, SA_RESTART);
    arm_ms(30);
    EXPECT_ERR(EAGAIN, "futex wait, SA_RESTART: restarted, then value changed",
               syscall(SYS_futex, &fword, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));

    /* wait4 on a slow child. */
    int st;
    for (int restart = 0; restart < 2; restart++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            sleep_ms(300);
            _exit(6);
        }
        set_handler(SIGALRM, alarm_set_word, restart ? SA_RESTART : 0);
        arm_ms(30);
        errno = 0;
        pid_t r = waitpid(pid, &st, 0);
        if (restart) {
            check(r == pid && WEXITSTATUS(st) == 6, "waitpid with SA_RESTART handler is restarted");
        } else {
            expect_err_impl(r, errno, EINTR, "waitpid interrupted (no SA_RESTART)");
            wait_for(pid, &st, 0);
        }
    }

    /* pause() and sigsuspend(). */
    set_handler(SIGALRM, alarm_set_word, SA_RESTART);
    arm_ms(20);
    EXPECT_ERR(EINTR, "pause()", pause());

    block(SIGALRM, SIG_BLOCK);
    count = 0;
    arm_ms(20);
    sigset_t empty;
    sigemptyset(&empty);
    EXPECT_ERR(EINTR, "sigsuspend(empty mask)", sigsuspend(&empty));
    check(count == 1, "handler ran during sigsuspend");
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    check(sigismember(&cur, SIGALRM), "sigsuspend restored the old mask");
    block(SIGALRM, SIG_UNBLOCK);

    /* sigtimedwait takes a blocked signal synchronously. */
    block(SIGUSR1, SIG_BLOCK);
    kill(getpid(), SIGUSR1);
    sigset_t w;
    sigemptyset(&w);
    sigaddset(&w, SIGUSR1);
    siginfo_t si;
    struct timespec zero = { 0, 0 };
    check(sigtimedwait(&w, &si, &zero) == SIGUSR1 && si.si_code == SI_USER, "sigtimedwait returns pending SIGUSR1");
    struct timespec ten = { 0, 10 * 1000000L };
    EXPECT_ERR(EAGAIN, "sigtimedwait with nothing pending (10 ms)", sigtimedwait(&w, &si, &ten));
    block(SIGUSR1, SIG_UNBLOCK);
    set_handler(SIGALRM, SIG_DFL, 0);
}

/* ---- registers across signal delivery and rt_sigreturn ---- */
unsigned long kiln_reg_out[32];
volatile int kiln_reg_flag;

static void reg_handler(int sig)
{
    (void)sig;
    volatile double d = 1.0;
    for (int i = 0; i < 100; i++)
        d = d * 1.5 + 0.25;
    char buf[256];
    memset(buf, 0xee, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
    __asm__ volatile(
        "mov $-1, %%rcx\n\t"
        "mov $-1, %%rdx\n\t"
        "mov $-1, %%rsi\n\t"
        "mov $-1, %%rdi\n\t"
        "mov $-1, %%r8\n\t"
        "mov $-1, %%r9\n\t"
        "mov $-1, %%r10\n\t"
        "mov $-1, %%r11\n\t"
        "pcmpeqd %%xmm0, %%xmm0\n\t"
        "pcmpeqd %%xmm1, %%xmm1\n\t"
        "pcmpeqd %%xmm7, %%xmm7\n\t"
        "pcmpeqd %%xmm8, %%xmm8\n\t"
        "pcmpeqd %%xmm15, %%xmm15\n\t"
        "std\n\t"
        "cld\n\t"
        :
        :
        : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
          "xmm0", "xmm1", "xmm7", "xmm8", "xmm15", "memory");
    kiln_reg_flag = 1;
}

static void test_registers(void)
{
    set_handler(SIGALRM, reg_handler, 0);
    kiln_reg_flag = 0;
    memset(kiln_reg_out, 0, sizeof kiln_reg_out);
    arm_ms(20);
    __asm__ volatile(
        "movabs $0x1111111111111111, %%rbx\n\t"
        "movabs $0x2222222222222222, %%rcx\n\t"
        "movabs $0x3333333333333333, %%rdx\n\t"
        "movabs $0x4444444444444444, %%rsi\n\t"
        "movabs $0x5555555555555555, %%rdi\n\t"
        "movabs $0x6666666666666666, %%r8\n\t"
        "movabs $0x7777777777777777, %%r9\n\t"
        "movabs $0x8888888888888888, %%r10\n\t"
        "movabs $0x9999999999999999, %%r11\n\t"
        "movabs $0xaaaaaaaaaaaaaaaa, %%r12\n\t"
        "movabs $0xbbbbbbbbbbbbbbbb, %%r13\n\t"
        "movabs $0xcccccccccccccccc, %%r14\n\t"
        "movabs $0xdddddddddddddddd, %%r15\n\t"
        "movq %%rbx, %%xmm0\n\t"
        "movq %%rcx, %%xmm1\n\t"
        "movq %%rdx, %%xmm7\n\t"
        "movq %%rsi, %%xmm8\n\t"
        "movq %%rdi, %%xmm15\n\t"
        "lea kiln_reg_flag(%%rip), %%rax\n\t"
        "1: pause\n\t"
        "cmpl $0, (%%rax)\n\t"
        "je 1b\n\t"
        "lea kiln_reg_out(%%rip), %%rax\n\t"
        "mov %%rbx, 0(%%rax)\n\t"
        "mov %%rcx, 8(%%rax)\n\t"
        "mov %%rdx, 16(%%rax)\n\t"
        "mov %%rsi, 24(%%rax)\n\t"
        "mov %%rdi, 32(%%rax)\n\t"
        "mov %%r8, 40(%%rax)\n\t"
        "mov %%r9, 48(%%rax)\n\t"
        "mov %%r10, 56(%%rax)\n\t"
        "mov %%r11, 64(%%rax)\n\t"
        "mov %%r12, 72(%%rax)\n\t"
        "mov %%r13, 80(%%rax)\n\t"
        "mov %%r14, 88(%%rax)\n\t"
        "mov %%r15, 96(%%rax)\n\t"
        "movq %%xmm0, 104(%%rax)\n\t"
        "movq %%xmm1, 112(%%rax)\n\t"
        "movq %%xmm7, 120(%%rax)\n\t"
        "movq %%xmm8, 128(%%rax)\n\t"
        "movq %%xmm15, 136(%%rax)\n\t"
        :
        :
        : "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
          "r14", "r15", "xmm0", "xmm1", "xmm7", "xmm8", "xmm15", "memory", "cc");
    static const unsigned long want[] = {
        0x1111111111111111UL, 0x2222222222222222UL, 0x3333333333333333UL, 0x4444444444444444UL,
        0x5555555555555555UL, 0x6666666666666666UL, 0x7777777777777777UL, 0x8888888888888888UL,
        0x9999999999999999UL, 0xaaaaaaaaaaaaaaaaUL, 0xbbbbbbbbbbbbbbbbUL, 0xccccccccccccccccUL,
        0xddddddddddddddddUL, 0x1111111111111111UL, 0x2222222222222222UL, 0x3333333333333333UL,
        0x4444444444444444UL, 0x5555555555555555UL,
    };
    int ok = 1;
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
        if (kiln_reg_out[i] != want[i])
            ok = 0;
    check(ok, "GPRs and XMM registers preserved across a signal (rt_sigreturn)");
    set_handler(SIGALRM, SIG_DFL, 0);
}

static volatile int tick_count;

static void tick(int sig)
{
    (void)sig;
    volatile double x = 3.0;
    for (int i = 0; i < 50; i++)
        x = x * 0.5 + 1.0;
    tick_count++;
}

static double compute(unsigned iters)
{
    unsigned long h = 1469598103934665603UL;
    double acc = 0.0;
    for (unsigned i = 0; i < iters; i++) {
        h = (h ^ i) * 1099511628211UL;
        acc = acc * 0.999 + (double)(h & 0xffff) / 65536.0;
    }
    return acc + (double)(h % 1000003);
}

static void test_compute_under_signals(void)
{
    const unsigned iters = 200000;
    double ref = compute(iters);
    set_handler(SIGALRM, tick, SA_RESTART);
    struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
    setitimer(ITIMER_REAL, &it, NULL);
    tick_count = 0;
    int ok = 1;
    int64_t t0 = mono_ns();
    while (tick_count < 20 && mono_ns() - t0 < 10000000000LL) {
        if (compute(iters) != ref)
            ok = 0;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    set_handler(SIGALRM, SIG_DFL, 0);
    check(tick_count >= 20, "20 timer signals arrived during computation");
    check(ok, "computation results unchanged by signal delivery");
}

/* ---- x87/SSE state in the signal frame ---- */
static unsigned read_mxcsr(void)
{
    unsigned v;
    __asm__ volatile("stmxcsr %0" : "=m"(v));
    return v;
}

static void write_mxcsr(unsigned v)
{
    __asm__ volatile("ldmxcsr %0" : : "m"(v));
}

static volatile unsigned handler_mxcsr, frame_mxcsr;

static void edit_fpu_frame(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    ucontext_t *uc = ucv;
    handler_mxcsr = read_mxcsr();
    frame_mxcsr = uc->uc_mcontext.fpregs->mxcsr;
    uc->uc_mcontext.fpregs->mxcsr = 0x3f80; /* round down */
    write_mxcsr(0x5f80); /* the handler's own change must not leak out */
}

static void test_fpu_frame(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = edit_fpu_frame;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR2, &sa, NULL);
    write_mxcsr(0x7f80); /* round toward zero */
    raise(SIGUSR2);
    unsigned after = read_mxcsr();
    write_mxcsr(0x1f80);
    check(handler_mxcsr == 0x1f80, "a handler starts with the default MXCSR (0x%x)", handler_mxcsr);
    check(frame_mxcsr == 0x7f80, "the frame holds the interrupted MXCSR (0x%x)", frame_mxcsr);
    check(after == 0x3f80, "rt_sigreturn loads the MXCSR the handler put in the frame (0x%x)", after);
    set_handler(SIGUSR2, SIG_DFL, 0);
}

/* ---- errors ---- */
static void test_errors(void)
{
    EXPECT_ERR(EINVAL, "kill(self, 65)", kill(getpid(), 65));
    EXPECT_ERR(EINVAL, "kill(self, -1)", kill(getpid(), -1));
    EXPECT_ERR(ESRCH, "kill(nonexistent pid, SIGUSR1)", kill(0x3fffffff, SIGUSR1));
    EXPECT_ERR(ESRCH, "kill(nonexistent pid, 0)", kill(0x3fffffff, 0));
    check(kill(getpid(), 0) == 0, "kill(self, 0) == 0");
    EXPECT_ERR(EINVAL, "tgkill(self, self, 99)", syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 99));
    EXPECT_ERR(EINVAL, "tgkill(0, tid, SIGUSR1)", syscall(SYS_tgkill, 0, syscall(SYS_gettid), SIGUSR1));
    EXPECT_ERR(ESRCH, "tkill(nonexistent tid)", syscall(SYS_tkill, 0x3fffffff, SIGUSR1));

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = counter;
    EXPECT_ERR(EINVAL, "sigaction(SIGKILL, handler)", sigaction(SIGKILL, &sa, NULL));
    EXPECT_ERR(EINVAL, "sigaction(SIGSTOP, handler)", sigaction(SIGSTOP, &sa, NULL));
    sa.sa_handler = SIG_IGN;
    EXPECT_ERR(EINVAL, "sigaction(SIGKILL, SIG_IGN)", sigaction(SIGKILL, &sa, NULL));
    check(sigaction(SIGKILL, NULL, &sa) == 0, "sigaction(SIGKILL, NULL, &old) query is allowed");
    unsigned long kact[4] = { 0, 0, 0, 0 };
    EXPECT_ERR(EINVAL, "rt_sigaction(0)", syscall(SYS_rt_sigaction, 0, kact, NULL, 8));
    EXPECT_ERR(EINVAL, "rt_sigaction(65)", syscall(SYS_rt_sigaction, 65, kact, NULL, 8));
    EXPECT_ERR(EINVAL, "rt_sigaction(sigsetsize 4)", syscall(SYS_rt_sigaction, SIGUSR1, kact, NULL, 4));

    unsigned long set = 0;
    EXPECT_ERR(EINVAL, "rt_sigprocmask(bad how)", syscall(SYS_rt_sigprocmask, 99, &set, NULL, 8));
    EXPECT_ERR(EINVAL, "rt_sigprocmask(sigsetsize 16)", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 16));

    sigset_t all, cur;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, NULL, &cur);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &(unsigned long){ ~0UL }, NULL, 8);
    unsigned long got = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &got, 8);
    check(!(got & (1UL << (SIGKILL - 1))) && !(got & (1UL << (SIGSTOP - 1))),
          "blocking all signals leaves SIGKILL and SIGSTOP unblocked");
    sigprocmask(SIG_SETMASK, &cur, NULL);
}

static int child_inherit(void *arg)
{
    (void)arg;
    struct sigaction sa;
    sigaction(SIGUSR1, NULL, &sa);
    sigset_t m;
    sigprocmask(SIG_BLOCK, NULL, &m);
    int ok = sa.sa_handler == counter && sigismember(&m, SIGUSR2) && !is_pending(SIGUSR2);
    return ok ? 0 : 1;
}

static void test_fork_inherit(void)
{
    set_handler(SIGUSR1, counter, 0);
    block(SIGUSR2, SIG_BLOCK);
    kill(getpid(), SIGUSR2);
    int st = run_child(child_inherit, NULL);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork: handlers and mask inherited, pending signals not");
    signal(SIGUSR2, SIG_IGN); /* discard */
    block(SIGUSR2, SIG_UNBLOCK);
    signal(SIGUSR2, SIG_DFL);
    set_handler(SIGUSR1, SIG_DFL, 0);
}

int main(void)
{
    t_init("signals");
    test_basic();
    test_siginfo();
    test_masks();
    test_altstack();
    test_faults();
    test_defaults();
    test_stop_cont();
    test_ignore();
    test_sigchld();
    test_eintr();
    test_registers();
    test_compute_under_signals();
    test_fpu_frame();
    test_errors();
    test_fork_inherit();
    return t_done();
}
