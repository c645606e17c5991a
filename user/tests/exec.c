/*
 * exec: execve of itself in a child mode (argv/envp, what survives exec:
 * pid, fds without FD_CLOEXEC, ignored signals, the signal mask, pending
 * signals; what does not: handlers, mappings, FD_CLOEXEC fds, other
 * threads), execve error cases, fork+exec+wait of a sibling program.
 */
#include "common.h"
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#define MAP_ADDR 0x300000000000UL

static char self[1024];
static char *child_env[] = { "KILN_A=1", "KILN_B=two words", "KILN_EMPTY=", NULL };

extern char **environ;

static int child_mode(int argc, char **argv)
{
    /* argv: self --child PID KEEPFD CLOEXFD ARGS... */
    t_init("exec-child");
    printf("child: argc=%d\n", argc);
    for (int i = 6; i < argc; i++)
        printf("child: arg \"%s\"\n", argv[i]);
    for (char **e = environ; *e; e++)
        printf("child: env \"%s\"\n", *e);

    check(getpid() == (pid_t)atol(argv[2]), "child: pid preserved across execve");
    int keep = atoi(argv[3]), cloex = atoi(argv[4]);
    check(fcntl(keep, F_GETFD) == 0, "child: fd without FD_CLOEXEC stays open");
    char buf[4];
    check(pread(keep, buf, 4, 0) == 4 && memcmp(buf, "\x7f" "ELF", 4) == 0, "child: inherited fd readable");
    EXPECT_ERR(EBADF, "child: FD_CLOEXEC fd closed by execve", fcntl(cloex, F_GETFD));

    struct sigaction sa;
    sigaction(SIGUSR1, NULL, &sa);
    check(sa.sa_handler == SIG_DFL, "child: caught signal reset to SIG_DFL");
    sigaction(SIGUSR2, NULL, &sa);
    check(sa.sa_handler == SIG_IGN, "child: ignored signal stays SIG_IGN");
    sigset_t set;
    sigprocmask(SIG_BLOCK, NULL, &set);
    check(sigismember(&set, SIGHUP) && !sigismember(&set, SIGUSR1), "child: signal mask preserved");
    sigpending(&set);
    check(sigismember(&set, SIGHUP), "child: pending blocked signal preserved");
    EXPECT_ERR(ENOMEM, "child: old mapping gone (mprotect)",
               mprotect((void *)atol(argv[5]), 4096, PROT_READ));
    check(sbrk(0) != (void *)-1, "child: fresh brk");
    fflush(stdout);
    return t_failed ? 43 : 42;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void noop_handler(int sig)
{
    (void)sig;
}

static int do_child_exec(void *arg)
{
    (void)arg;
    char pidbuf[32], keepbuf[16], cloexbuf[16], mapbuf[32];
    int keep = open(self, O_RDONLY);
    int cloex = open(self, O_RDONLY | O_CLOEXEC);
    void *m = mmap((void *)MAP_ADDR, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (keep < 0 || cloex < 0 || m == MAP_FAILED)
        return 99;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = noop_handler;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGUSR2, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), SIGHUP); /* stays pending */
    snprintf(pidbuf, sizeof pidbuf, "%ld", (long)getpid());
    snprintf(keepbuf, sizeof keepbuf, "%d", keep);
    snprintf(cloexbuf, sizeof cloexbuf, "%d", cloex);
    snprintf(mapbuf, sizeof mapbuf, "%lu", (unsigned long)m);
    char *argv[] = { self, "--child", pidbuf, keepbuf, cloexbuf, mapbuf,
                     "hello world", "", "last", NULL };
    execve(self, argv, child_env);
    return 98;
}

static int do_thread_exec(void *arg)
{
    (void)arg;
    /* A multithreaded process execs: the other threads vanish. */
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0)
        return 97;
    char *argv[] = { self, "--plain", "from-main-thread", NULL };
    execve(self, argv, child_env);
    return 98;
}

static char pid_arg[32];

static void *exec_from_thread(void *arg)
{
    (void)arg;
    char *argv[] = { self, "--pidcheck", pid_arg, NULL };
    execve(self, argv, child_env);
    _exit(98);
}

static int do_exec_from_thread(void *arg)
{
    (void)arg;
    snprintf(pid_arg, sizeof pid_arg, "%ld", (long)getpid());
    pthread_t t;
    if (pthread_create(&t, NULL, exec_from_thread, NULL) != 0)
        return 97;
    for (;;)
        pause();
}

/*
 * execve ends the other threads before the new program starts, even one
 * asleep in pause(), as Linux's de_thread does: the new program sees one
 * thread in /proc/self/task, and the ended thread's CLONE_CHILD_CLEARTID
 * word, here in memory shared with the test, is zeroed in the old image.
 */
static volatile int *ctid_word;

static int blocked_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return 0;
}

static int do_exec_with_cleartid_thread(void *arg)
{
    (void)arg;
    static char stack[64 * 1024] __attribute__((aligned(16)));
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    int tid = clone(blocked_thread, stack + sizeof stack, flags, NULL, (int *)ctid_word, NULL, (int *)ctid_word);
    if (tid <= 0 || *ctid_word != tid)
        return 97;
    char *argv[] = { self, "--threads", NULL };
    execve(self, argv, child_env);
    return 98;
}

static int expect_exit(int st, int code)
{
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == code;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "--child") == 0)
        return child_mode(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "--plain") == 0) {
        setvbuf(stdout, NULL, _IONBF, 0);
        for (int i = 2; i < argc; i++)
            printf("plain: arg \"%s\"\n", argv[i]);
        return 42;
    }
    if (argc == 2 && strcmp(argv[1], "--threads") == 0) {
        setvbuf(stdout, NULL, _IONBF, 0);
        int n = 0;
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
            n += e->d_name[0] != '.';
        if (d)
            closedir(d);
        printf("threads: %d in /proc/self/task after execve\n", n);
        return n == 1 ? 42 : 43;
    }
    if (argc == 3 && strcmp(argv[1], "--pidcheck") == 0) {
        setvbuf(stdout, NULL, _IONBF, 0);
        int ok = getpid() == (pid_t)atol(argv[2]);
        printf("pidcheck: pid after exec from a thread %s\n", ok ? "is the old pid" : "CHANGED");
        /* The thread that exec'd took over the leader's identity. */
        int leader = syscall(SYS_gettid) == getpid();
        printf("pidcheck: its thread id %s\n", leader ? "is now the pid" : "is NOT the pid");
        return ok && leader ? 42 : 43;
    }

    t_init("exec");
    snprintf(self, sizeof self, "%s", argv[0]);

    int st = run_child(do_child_exec, NULL);
    check(expect_exit(st, 42), "fork+execve(self --child) -> exit 42");

    st = run_child(do_thread_exec, NULL);
    check(expect_exit(st, 42), "execve from a multithreaded process -> exit 42");

    st = run_child(do_exec_from_thread, NULL);
    check(expect_exit(st, 42), "execve from a non-main thread -> exit 42");

    ctid_word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (check(ctid_word != MAP_FAILED, "a shared page for a child-tid word")) {
        *ctid_word = -1;
        st = run_child(do_exec_with_cleartid_thread, NULL);
        check(expect_exit(st, 42), "execve ends a thread asleep in pause() first -> exit 42");
        check(*ctid_word == 0, "that thread's child-tid word was cleared in the old image (%d)", *ctid_word);
        munmap((void *)ctid_word, 4096);
    }

    /* fork + exec a sibling program. */
    char hello[1024];
    sibling_path(argv[0], "hello", hello, sizeof hello);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *hargv[] = { hello, "-q", NULL };
        execve(hello, hargv, child_env);
        _exit(127);
    }
    check(wait_for(pid, &st, 0) == pid && expect_exit(st, 0), "fork+execve(hello -q)+wait -> exit 0");

    /* Error cases; a failed execve returns to the caller. */
    char *eargv[] = { self, NULL };
    char nonexist[1100];
    sibling_path(argv[0], "no-such-program", nonexist, sizeof nonexist);
    EXPECT_ERR(ENOENT, "execve(nonexistent path)", execve(nonexist, eargv, child_env));
    EXPECT_ERR(ENOENT, "execve(\"\")", execve("", eargv, child_env));
    EXPECT_ERR(EACCES, "execve(\"/\") (a directory)", execve("/", eargv, child_env));
    char notdir[1100];
    snprintf(notdir, sizeof notdir, "%s/x", self);
    EXPECT_ERR(ENOTDIR, "execve(\"<file>/x\")", execve(notdir, eargv, child_env));
    EXPECT_ERR(EFAULT, "execve(bad path pointer)", syscall(SYS_execve, BAD_PTR, eargv, child_env));
    EXPECT_ERR(EFAULT, "execve(kernel path pointer)", syscall(SYS_execve, KERNEL_PTR, eargv, child_env));
    EXPECT_ERR(EFAULT, "execve(bad argv pointer)", syscall(SYS_execve, self, BAD_PTR, child_env));
    EXPECT_ERR(EFAULT, "execve(bad envp pointer)", syscall(SYS_execve, self, eargv, BAD_PTR));
    char *badelem[] = { self, BAD_PTR, NULL };
    EXPECT_ERR(EFAULT, "execve(argv[1] bad pointer)", syscall(SYS_execve, self, badelem, child_env));
    char *badenv[] = { "A=1", KERNEL_PTR, NULL };
    EXPECT_ERR(EFAULT, "execve(envp[1] kernel pointer)", syscall(SYS_execve, self, eargv, badenv));
    check(getpid() > 0, "still running after failed execve calls");

    return t_done();
}
