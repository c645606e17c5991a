/*
 * semantics: corners where Kiln once differed from Linux.  Init ignores
 * signals it has no handler for (SIGKILL and SIGSTOP included), kill(-1)
 * skips the caller, kill of a thread id signals its process, process
 * group and wait calls on bad ids, SA_RESETHAND keeps the other flags,
 * unknown sigaction flags read back clear, pwrite on O_APPEND appends and
 * leaves the offset, and futex ops on unmapped, PROT_NONE, read-only and
 * kernel addresses fail (or not) exactly as Linux's do.
 */
#include "common.h"
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* musl has no <linux/futex.h> here: Linux's values. */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_OP_ADD 1
#define FUTEX_OP_OR 2
#define FUTEX_OP_CMP_EQ 0
#define FUTEX_OP_CMP_GT 4
#define FUTEX_OP(op, oparg, cmp, cmparg) \
    (((op & 0xf) << 28) | ((cmp & 0xf) << 24) | ((oparg & 0xfff) << 12) | (cmparg & 0xfff))

static volatile sig_atomic_t got_usr1, got_cont;

static void on_usr1(int s UNUSED) { got_usr1++; }
static void on_cont(int s UNUSED) { got_cont++; }

static void test_init_protected(void)
{
    /* Init has no handler for SIGKILL or SIGSTOP: they are dropped. */
    EXPECT_OK("kill(1, SIGKILL)", kill(1, SIGKILL));
    EXPECT_OK("kill(1, SIGSTOP)", kill(1, SIGSTOP));
    sleep_ms(50);
    EXPECT_OK("init still there: kill(1, 0)", kill(1, 0));
    char st[256] = "";
    FILE *f = fopen("/proc/1/stat", "r");
    if (f) {
        if (!fgets(st, sizeof st, f))
            st[0] = 0;
        fclose(f);
    }
    char *rp = strrchr(st, ')');
    check(rp && rp[1] == ' ' && rp[2] != 'T', "init not stopped");
}

static void test_kill_ids(void)
{
    /* kill(-1) reaches everyone else (here a stopped child, which it
     * continues) but never the caller. */
    signal(SIGCONT, on_cont);
    got_cont = 0;
    pid_t s = fork();
    if (s == 0) {
        for (;;)
            pause();
    }
    int sst;
    kill(s, SIGSTOP);
    check(wait_for(s, &sst, WUNTRACED) == s && WIFSTOPPED(sst), "child stopped");
    EXPECT_OK("kill(-1, SIGCONT)", kill(-1, SIGCONT));
    check(wait_for(s, &sst, WCONTINUED) == s && WIFCONTINUED(sst), "kill(-1) continued the child");
    sleep_ms(20);
    check(got_cont == 0, "kill(-1) skips the caller");
    signal(SIGCONT, SIG_DFL);
    kill(s, SIGKILL);
    wait_for(s, &sst, 0);

    EXPECT_ERR(ESRCH, "kill(INT_MIN, 0)", kill(INT_MIN, 0));
    EXPECT_ERR(ESRCH, "kill(-999999, 0)", kill(-999999, 0));
    EXPECT_ERR(ESRCH, "kill(999999, 0)", kill(999999, 0));

    /* A group of zombies is still a group. */
    pid_t c = fork();
    if (c == 0) {
        setpgid(0, 0);
        _exit(0);
    }
    setpgid(c, c);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    waitid(P_PID, c, &si, WEXITED | WNOWAIT);
    EXPECT_OK("kill(-zombie group, 0)", kill(-c, 0));
    EXPECT_OK("kill(-zombie group, SIGUSR1)", kill(-c, SIGUSR1));
    EXPECT_OK("kill(zombie, SIGKILL)", kill(c, SIGKILL));
    EXPECT_OK("getpgid(zombie)", getpgid(c));
    int st;
    check(wait_for(c, &st, 0) == c && WIFEXITED(st), "zombie reaped");
}

static volatile pid_t thread_tid;
static volatile int thread_stop;

static void *thread_main(void *arg UNUSED)
{
    thread_tid = (pid_t)syscall(SYS_gettid);
    while (!thread_stop)
        sleep_ms(1);
    return NULL;
}

static void test_thread_ids(void)
{
    pthread_t th;
    thread_stop = 0;
    thread_tid = 0;
    pthread_create(&th, NULL, thread_main, NULL);
    while (!thread_tid)
        sleep_ms(1);
    signal(SIGUSR1, on_usr1);
    got_usr1 = 0;
    EXPECT_OK("kill(thread id, SIGUSR1)", kill(thread_tid, SIGUSR1));
    for (int i = 0; i < 200 && !got_usr1; i++)
        sleep_ms(5);
    check(got_usr1 == 1, "kill of a thread id signals the process");
    check(getpgid(thread_tid) == getpgrp(), "getpgid(thread id) is the process's group");
    check(getsid(thread_tid) == getsid(0), "getsid(thread id) is the process's session");
    EXPECT_ERR(EINVAL, "setpgid(thread id, 0)", setpgid(thread_tid, 0));
    thread_stop = 1;
    pthread_join(th, NULL);
    signal(SIGUSR1, SIG_DFL);
}

static void test_bad_ids(void)
{
    int st;
    siginfo_t si;
    EXPECT_ERR(ESRCH, "getpgid(-1)", getpgid(-1));
    EXPECT_ERR(ESRCH, "getpgid(999999)", getpgid(999999));
    EXPECT_ERR(ESRCH, "getsid(-1)", getsid(-1));
    EXPECT_ERR(ESRCH, "getsid(999999)", getsid(999999));
    EXPECT_ERR(EINVAL, "setpgid(-5, 0)", setpgid(-5, 0));
    EXPECT_ERR(ESRCH, "setpgid(-5, 3)", setpgid(-5, 3));
    EXPECT_ERR(EINVAL, "setpgid(0, -1)", setpgid(0, -1));
    EXPECT_ERR(ESRCH, "setpgid(999999, 0)", setpgid(999999, 0));
    EXPECT_ERR(ESRCH, "waitpid(INT_MIN)", waitpid(INT_MIN, &st, WNOHANG));
    EXPECT_ERR(ECHILD, "waitpid(-999999)", waitpid(-999999, &st, WNOHANG));
    EXPECT_ERR(ECHILD, "waitpid(999999)", waitpid(999999, &st, 0));
    EXPECT_ERR(ECHILD, "waitpid(1)", waitpid(1, &st, 0));
    EXPECT_ERR(ECHILD, "waitpid(-1) with no children", waitpid(-1, &st, 0));
    EXPECT_ERR(EINVAL, "waitpid(bad options)", waitpid(-1, &st, 0x10000));
    EXPECT_ERR(EINVAL, "waitid(P_PID, 0)", waitid(P_PID, 0, &si, WEXITED));
    EXPECT_ERR(EINVAL, "waitid(P_PGID, -1)", waitid(P_PGID, (id_t)-1, &si, WEXITED));
    EXPECT_ERR(ECHILD, "waitid(P_PID, 999999)", waitid(P_PID, 999999, &si, WEXITED));
    EXPECT_ERR(ECHILD, "waitid(P_PGID, 999999)", waitid(P_PGID, 999999, &si, WEXITED));
    EXPECT_ERR(EINVAL, "waitid(99, 0)", waitid((idtype_t)99, 0, &si, WEXITED));
}

static void on_info(int s UNUSED, siginfo_t *i UNUSED, void *u UNUSED) { got_usr1++; }

static void test_resethand(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    sigaction(SIGUSR1, &sa, NULL);
    got_usr1 = 0;
    raise(SIGUSR1);
    check(got_usr1 == 1, "SA_RESETHAND handler ran once");
    sigaction(SIGUSR1, NULL, &old);
    check(old.sa_handler == SIG_DFL, "SA_RESETHAND: handler reset to SIG_DFL");
    int keep = SA_SIGINFO | SA_RESETHAND | SA_RESTART | SA_NODEFER | SA_ONSTACK;
    printf("flags after reset: %#x\n", old.sa_flags & keep);
    check(sigismember(&old.sa_mask, SIGUSR2) == 1, "SA_RESETHAND keeps the mask");

    /* Unknown flag bits are dropped; SA_UNSUPPORTED reads back clear. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART | 0x00000400 /* SA_UNSUPPORTED */ | 0x00100000;
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGUSR2, NULL, &old);
    printf("unknown flags read back: %#x\n", old.sa_flags & (0x00000400 | 0x00100000));
    check(old.sa_flags & SA_RESTART, "known flag kept");
    signal(SIGUSR1, SIG_DFL);
    signal(SIGUSR2, SIG_DFL);
}

static void test_append_pwrite(void)
{
    const char *path = "/tmp/semantics_append";
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_APPEND, 0644);
    check(fd >= 0, "open O_APPEND");
    write(fd, "abc", 3);
    lseek(fd, 1, SEEK_SET);
    check(pwrite(fd, "XY", 2, 0) == 2, "pwrite(O_APPEND) writes 2");
    check(lseek(fd, 0, SEEK_CUR) == 1, "pwrite(O_APPEND) leaves the offset");
    struct iovec iov[2] = { { "12", 2 }, { "3", 1 } };
    check(pwritev(fd, iov, 2, 0) == 3, "pwritev(O_APPEND) writes 3");
    check(lseek(fd, 0, SEEK_CUR) == 1, "pwritev(O_APPEND) leaves the offset");
    char buf[16] = { 0 };
    check(pread(fd, buf, sizeof buf - 1, 0) == 8, "file has 8 bytes");
    printf("content: %s\n", buf);
    close(fd);
    unlink(path);
}

static long fx(void *addr, int op, int val, void *timeout, void *addr2, int val3)
{
    return syscall(SYS_futex, addr, op, val, timeout, addr2, val3);
}

static void test_futex_faults(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *gone = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, pg);
    char *none = mmap(NULL, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ro = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static int word = 5;
    struct {
        const char *name;
        void *p;
    } addrs[] = {
        { "unmapped", gone }, { "NULL", NULL }, { "PROT_NONE", none }, { "read-only", ro }, { "kernel", KERNEL_PTR },
    };
    const int P = FUTEX_PRIVATE_FLAG;
    /* The errnos, one call at a time (errno is per call). */
    for (unsigned i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
        void *a = addrs[i].p;
        char what[128];
#define FX_ERR(opname, expr)                                                    \
    do {                                                                        \
        errno = 0;                                                              \
        long _r = (expr);                                                       \
        snprintf(what, sizeof what, "futex %s on %s", opname, addrs[i].name);   \
        t_checks++;                                                             \
        printf("%s: %ld %s\n", what, _r, _r == -1 ? errname(errno) : "");       \
    } while (0)
        FX_ERR("WAKE", fx(a, FUTEX_WAKE, 1, NULL, NULL, 0));
        FX_ERR("WAKE_PRIVATE", fx(a, FUTEX_WAKE | P, 1, NULL, NULL, 0));
        FX_ERR("WAIT", fx(a, FUTEX_WAIT, 1, NULL, NULL, 0));
        FX_ERR("WAIT_PRIVATE", fx(a, FUTEX_WAIT | P, 1, NULL, NULL, 0));
        FX_ERR("REQUEUE", fx(a, FUTEX_REQUEUE, 1, (void *)1, &word, 0));
        FX_ERR("REQUEUE_PRIVATE", fx(a, FUTEX_REQUEUE | P, 1, (void *)1, &word, 0));
        FX_ERR("REQUEUE_PRIVATE to", fx(&word, FUTEX_REQUEUE | P, 1, (void *)1, a, 0));
        FX_ERR("CMP_REQUEUE_PRIVATE", fx(a, FUTEX_CMP_REQUEUE | P, 1, (void *)1, &word, 0));
        FX_ERR("WAKE_OP to", fx(&word, FUTEX_WAKE_OP, 1, (void *)1, a, FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0)));
        FX_ERR("WAKE_OP_PRIVATE to",
               fx(&word, FUTEX_WAKE_OP | P, 1, (void *)1, a, FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0)));
        FX_ERR("WAKE_OP_PRIVATE bad op to", fx(&word, FUTEX_WAKE_OP | P, 1, (void *)1, a, 7 << 28));
    }
    check(word == 5, "futex word untouched by failed WAKE_OPs");
    /* WAKE_OP does its arithmetic. */
    word = 5;
    long r = fx(&word, FUTEX_WAKE_OP | P, 1, (void *)1, &word, FUTEX_OP(FUTEX_OP_ADD, 3, FUTEX_OP_CMP_EQ, 5));
    check(r == 0 && word == 8, "WAKE_OP ADD 3: 5 -> 8");
    r = fx(&word, FUTEX_WAKE_OP | P, 1, (void *)1, &word, FUTEX_OP(FUTEX_OP_OR, 4, FUTEX_OP_CMP_GT, 100) | (8u << 28));
    check(r == 0 && word == (8 | 16), "WAKE_OP OR (1<<4): 8 -> 24");
    EXPECT_ERR(EINVAL, "futex WAKE misaligned", fx((char *)&word + 1, FUTEX_WAKE, 1, NULL, NULL, 0));
    EXPECT_ERR(EINVAL, "futex WAKE misaligned unmapped", fx(gone + 1, FUTEX_WAKE, 1, NULL, NULL, 0));
    EXPECT_ERR(EINVAL, "futex WAKE_BITSET bitset 0", fx(gone, FUTEX_WAKE_BITSET, 1, NULL, NULL, 0));
    munmap(none, pg);
    munmap(ro, pg);
}

/* The -hold mode: fork, and the grandchild reports its pid on stdout and
 * sleeps until killed, so the program file stays busy after the process
 * that exec'd it is gone. */
static int hold_mode(void)
{
    pid_t g = fork();
    if (g != 0)
        return 0;
    char line[32];
    int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
    write(1, line, (size_t)n);
    for (;;)
        pause();
}

static int copy_file(const char *from, const char *to, int *keep_open)
{
    int in = open(from, O_RDONLY);
    int out = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0755);
    if (in < 0 || out < 0)
        return -1;
    char buf[8192];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        write(out, buf, (size_t)n);
    close(in);
    *keep_open = out;
    return 0;
}

static void test_etxtbsy(const char *self)
{
    const char *copy = "/tmp/semantics_exe";
    char *av[] = { (char *)copy, "-hold", NULL };
    int wfd = -1;
    check(copy_file(self, copy, &wfd) == 0, "copied the test program");
    pid_t c = fork();
    if (c == 0) {
        execv(copy, av);
        _exit(errno == ETXTBSY ? 42 : 43);
    }
    int st;
    wait_for(c, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 42, "execve of a file open for writing = ETXTBSY");
    close(wfd);

    int pfd[2];
    pipe(pfd);
    c = fork();
    if (c == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        execv(copy, av);
        _exit(127);
    }
    close(pfd[1]);
    wait_for(c, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the -hold runner exited");
    char line[32] = "";
    ssize_t n = read(pfd[0], line, sizeof line - 1);
    pid_t g = n > 0 ? atoi(line) : -1;
    close(pfd[0]);
    check(g > 0, "the grandchild runs the copy");
    EXPECT_ERR(ETXTBSY, "open(running program, O_WRONLY)", open(copy, O_WRONLY));
    EXPECT_ERR(ETXTBSY, "open(running program, O_RDWR)", open(copy, O_RDWR));
    EXPECT_ERR(ETXTBSY, "open(running program, O_RDONLY|O_TRUNC)", open(copy, O_RDONLY | O_TRUNC));
    EXPECT_ERR(ETXTBSY, "truncate(running program)", truncate(copy, 0));
    int r = open(copy, O_RDONLY);
    check(r >= 0, "open(running program, O_RDONLY) works");
    close(r);
    if (g > 0)
        kill(g, SIGKILL);
    int w = -1;
    for (int i = 0; i < 400 && w < 0; i++) {
        w = open(copy, O_WRONLY);
        if (w < 0)
            sleep_ms(5);
    }
    check(w >= 0, "open(O_WRONLY) works once the program is gone");
    close(w);

    /* A script is denied writers while it is loaded, not while its
     * interpreter runs; the interpreter, the program finally run, is. */
    const char *script = "/tmp/semantics_script";
    int sfd = open(script, O_CREAT | O_TRUNC | O_WRONLY, 0755);
    char text[64];
    int len = snprintf(text, sizeof text, "#!%s -hold\n", copy);
    check(sfd >= 0 && write(sfd, text, (size_t)len) == len, "wrote a script run by the copy");
    char *sav[] = { (char *)script, NULL };
    c = fork();
    if (c == 0) {
        execv(script, sav);
        _exit(errno == ETXTBSY ? 42 : 43);
    }
    wait_for(c, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 42, "execve of a script open for writing = ETXTBSY");
    close(sfd);
    pipe(pfd);
    c = fork();
    if (c == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        execv(script, sav);
        _exit(127);
    }
    close(pfd[1]);
    wait_for(c, &st, 0);
    memset(line, 0, sizeof line);
    n = read(pfd[0], line, sizeof line - 1);
    g = n > 0 ? atoi(line) : -1;
    close(pfd[0]);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0 && g > 0, "the script's interpreter runs");
    w = open(script, O_WRONLY);
    check(w >= 0, "open(running script, O_WRONLY) works");
    close(w);
    EXPECT_ERR(ETXTBSY, "open(the script's running interpreter, O_WRONLY)", open(copy, O_WRONLY));
    if (g > 0)
        kill(g, SIGKILL);
    w = -1;
    for (int i = 0; i < 400 && w < 0; i++) {
        w = open(copy, O_WRONLY);
        if (w < 0)
            sleep_ms(5);
    }
    close(w);
    unlink(script);
    unlink(copy);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "-hold") == 0)
        return hold_mode();
    t_init("semantics");
    test_init_protected();
    test_kill_ids();
    test_thread_ids();
    test_bad_ids();
    test_resethand();
    test_append_pwrite();
    test_futex_faults();
    test_etxtbsy(argv[0]);
    return t_done();
}
