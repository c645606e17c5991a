/*
 * pidfd: pidfd_open (flags, close-on-exec, non-leader threads, reaped and
 * missing processes), pidfd_send_signal (signal 0, a real signal, a
 * siginfo to oneself and its EPERM/EINVAL/EFAULT cases, /proc/<pid>
 * directories, EPERM as another user, ESRCH once reaped), pidfd_getfd
 * (a copy of another process's descriptor, close-on-exec; EBADF, EINVAL,
 * EPERM for another user or a non-dumpable process, ESRCH once exited),
 * clone and clone3 with CLONE_PIDFD (and the flags it refuses), poll
 * (readable once the process exits), waitid(P_PIDFD) (PIDFD_NONBLOCK:
 * EAGAIN; ECHILD once reaped) and /proc/self/fdinfo's Pid: line.
 */
#include "common.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#define PIDFD_NONBLOCK O_NONBLOCK

static long pidfd_open(pid_t pid, unsigned flags)
{
    return syscall(SYS_pidfd_open, pid, flags);
}

static long send_signal(int fd, int sig, siginfo_t *info, unsigned flags)
{
    return syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

static long getfd(int pidfd, int fd, unsigned flags)
{
    return syscall(SYS_pidfd_getfd, pidfd, fd, flags);
}

struct clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/* A child that waits until its parent writes a byte to `gate`, then
 * exits with `code`. */
static pid_t gated_child(int gate[2], int code)
{
    if (pipe(gate) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(gate[1]);
        if (read(gate[0], &c, 1) != 1)
            _exit(99);
        _exit(code);
    }
    close(gate[0]);
    return pid;
}

static int readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int n = poll(&p, 1, 0);
    return n == 1 && (p.revents & POLLIN);
}

/* The Pid: line of /proc/self/fdinfo/<fd>, or -2 where there is none. */
static long fdinfo_pid(int fd)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int f = open(path, O_RDONLY);
    if (f < 0)
        return -3;
    ssize_t n = read(f, buf, sizeof buf - 1);
    close(f);
    if (n <= 0)
        return -4;
    buf[n] = 0;
    char *p = strstr(buf, "\nPid:\t");
    return p ? strtol(p + 6, NULL, 10) : -2;
}

static volatile int got_sig, got_code, got_value;
static void on_usr1(int s, siginfo_t *si, void *uc)
{
    (void)uc;
    got_sig = s;
    got_code = si->si_code;
    got_value = si->si_value.sival_int;
}

static void *idle_thread(void *arg)
{
    int *fds = arg;
    char c;
    write(fds[1], "t", 1);
    read(fds[2], &c, 1);
    return NULL;
}

static void test_open(void)
{
    int fd = (int)pidfd_open(getpid(), 0);
    check(fd >= 0, "pidfd_open(self)");
    check(fcntl(fd, F_GETFD) == FD_CLOEXEC, "a pidfd is close-on-exec");
    check((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR, "a pidfd is O_RDWR");
    check(fdinfo_pid(fd) == getpid(), "fdinfo Pid: is the process id");
    char c;
    EXPECT_ERR(EINVAL, "read(pidfd)", read(fd, &c, 1));
    check(!readable(fd), "a running process's pidfd is not readable");
    close(fd);
    fd = (int)pidfd_open(getpid(), PIDFD_NONBLOCK);
    check(fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK), "PIDFD_NONBLOCK makes it O_NONBLOCK");
    close(fd);
    EXPECT_ERR(EINVAL, "pidfd_open(flags 1)", pidfd_open(getpid(), 1));
    EXPECT_ERR(EINVAL, "pidfd_open(0)", pidfd_open(0, 0));
    EXPECT_ERR(EINVAL, "pidfd_open(-1)", pidfd_open(-1, 0));

    /* A thread that leads no group. */
    int fds[4];
    pipe(fds);
    pipe(fds + 2);
    int pass[3] = { 0, fds[1], fds[2] };
    pthread_t t;
    pthread_create(&t, NULL, idle_thread, pass);
    read(fds[0], &c, 1);
    /* The thread's id: the highest task of ours. */
    pid_t tid = -1;
    char path[64];
    for (pid_t i = getpid() + 1; i < getpid() + 1000; i++) {
        snprintf(path, sizeof path, "/proc/self/task/%d", i);
        if (access(path, F_OK) == 0) {
            tid = i;
            break;
        }
    }
    check(tid > 0, "found the thread's id");
    EXPECT_ERR(ENOENT, "pidfd_open(a non-leader thread)", pidfd_open(tid, 0));
    write(fds[3], "x", 1);
    pthread_join(t, NULL);
    for (int i = 0; i < 4; i++)
        close(fds[i]);

    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int st;
    wait_for(pid, &st, 0);
    EXPECT_ERR(ESRCH, "pidfd_open(a reaped process)", pidfd_open(pid, 0));
}

static void test_signal(void)
{
    int self = (int)pidfd_open(getpid(), 0);
    EXPECT_OK("pidfd_send_signal(self, 0)", send_signal(self, 0, NULL, 0));
    EXPECT_ERR(EINVAL, "pidfd_send_signal(flags 8)", send_signal(self, 0, NULL, 8));
    EXPECT_ERR(EINVAL, "pidfd_send_signal(two scope flags)", send_signal(self, 0, NULL, 3));
    EXPECT_ERR(EINVAL, "pidfd_send_signal(signal 99)", send_signal(self, 99, NULL, 0));
    EXPECT_ERR(EBADF, "pidfd_send_signal(bad fd)", send_signal(999, 0, NULL, 0));
    EXPECT_ERR(EBADF, "pidfd_send_signal(-1)", send_signal(-1, 0, NULL, 0));
    int devnull = open("/dev/null", O_RDONLY);
    EXPECT_ERR(EBADF, "pidfd_send_signal(/dev/null)", send_signal(devnull, 0, NULL, 0));
    close(devnull);
    EXPECT_ERR(EFAULT, "pidfd_send_signal(bad siginfo)", send_signal(self, SIGUSR1, BAD_PTR, 0));

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGUSR2;
    si.si_code = SI_QUEUE;
    EXPECT_ERR(EINVAL, "pidfd_send_signal(siginfo of another signal)", send_signal(self, SIGUSR1, &si, 0));
    si.si_signo = SIGUSR1;
    si.si_value.sival_int = 42;
    EXPECT_OK("pidfd_send_signal(self, SIGUSR1, SI_QUEUE siginfo)", send_signal(self, SIGUSR1, &si, 0));
    check(got_sig == SIGUSR1 && got_code == SI_QUEUE && got_value == 42, "the handler sees SI_QUEUE and the value");
    got_sig = 0;
    EXPECT_OK("pidfd_send_signal(self, SIGUSR1)", send_signal(self, SIGUSR1, NULL, 0));
    check(got_sig == SIGUSR1 && got_code == SI_USER, "without siginfo: SI_USER");

    got_sig = 0;
    EXPECT_OK("pidfd_send_signal(self, SIGUSR1, PIDFD_SIGNAL_THREAD)", send_signal(self, SIGUSR1, NULL, 1));
    check(got_sig == SIGUSR1 && got_code == SI_TKILL, "PIDFD_SIGNAL_THREAD: SI_TKILL");
    got_sig = 0;
    EXPECT_OK("pidfd_send_signal(self, SIGUSR1, PIDFD_SIGNAL_THREAD_GROUP)", send_signal(self, SIGUSR1, NULL, 2));
    check(got_sig == SIGUSR1 && got_code == SI_USER, "PIDFD_SIGNAL_THREAD_GROUP: SI_USER");
    si.si_code = SI_QUEUE;
    EXPECT_OK("pidfd_send_signal(self, SI_QUEUE siginfo, PIDFD_SIGNAL_THREAD)", send_signal(self, SIGUSR1, &si, 1));
    si.si_code = SI_USER;
    EXPECT_OK("pidfd_send_signal(self, SI_USER siginfo)", send_signal(self, SIGUSR1, &si, 0));
    EXPECT_ERR(EPERM, "pidfd_send_signal(self, SI_USER siginfo, PIDFD_SIGNAL_PROCESS_GROUP)",
               send_signal(self, SIGUSR1, &si, 4));
    si.si_code = SI_QUEUE;
    {
        /* A child leading its own process group, and one that does not. */
        int g[2];
        pid_t leader = gated_child(g, 0);
        setpgid(leader, leader);
        int lfd = (int)pidfd_open(leader, 0);
        EXPECT_OK("pidfd_send_signal(group leader, 0, PIDFD_SIGNAL_PROCESS_GROUP)", send_signal(lfd, 0, NULL, 4));
        int g2[2];
        pid_t member = gated_child(g2, 0);
        int mfd = (int)pidfd_open(member, 0);
        EXPECT_ERR(ESRCH, "pidfd_send_signal(no such group, 0, PIDFD_SIGNAL_PROCESS_GROUP)",
                   send_signal(mfd, 0, NULL, 4));
        EXPECT_OK("pidfd_send_signal(group leader, SIGKILL, PIDFD_SIGNAL_PROCESS_GROUP)",
                  send_signal(lfd, SIGKILL, NULL, 4));
        int st = 0;
        wait_for(leader, &st, 0);
        check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the group got SIGKILL");
        close(g2[1]);
        wait_for(member, &st, 0);
        check(WIFEXITED(st), "the other child did not");
        close(g[1]);
        close(lfd);
        close(mfd);
    }

    /* Another process: a forged kernel code is refused. */
    int gate[2];
    pid_t pid = gated_child(gate, 0);
    int fd = (int)pidfd_open(pid, 0);
    si.si_code = SI_USER;
    EXPECT_ERR(EPERM, "pidfd_send_signal(SI_USER siginfo to another process)", send_signal(fd, SIGUSR1, &si, 0));
    si.si_code = SI_TKILL;
    EXPECT_ERR(EPERM, "pidfd_send_signal(SI_TKILL siginfo to another process)", send_signal(fd, SIGUSR1, &si, 0));
    si.si_code = SI_QUEUE;
    EXPECT_OK("pidfd_send_signal(SI_QUEUE siginfo to a child, 0)", send_signal(fd, 0, NULL, 0));
    EXPECT_OK("pidfd_send_signal(child, SIGTERM)", send_signal(fd, SIGTERM, NULL, 0));
    siginfo_t wi;
    memset(&wi, 0, sizeof wi);
    check(waitid(P_PIDFD, fd, &wi, WEXITED | WNOWAIT) == 0 && wi.si_pid == pid && wi.si_code == CLD_KILLED &&
              wi.si_status == SIGTERM,
          "waitid(P_PIDFD) sees it killed by SIGTERM");
    check(readable(fd), "an exited child's pidfd is readable");
    check(fdinfo_pid(fd) == pid, "fdinfo Pid: of a zombie is its id");
    EXPECT_OK("pidfd_send_signal(zombie, SIGTERM)", send_signal(fd, SIGTERM, NULL, 0));
    check(waitid(P_PIDFD, fd, &wi, WEXITED) == 0 && wi.si_pid == pid, "waitid(P_PIDFD) reaps it");
    EXPECT_ERR(ESRCH, "pidfd_send_signal(reaped)", send_signal(fd, 0, NULL, 0));
    EXPECT_ERR(ECHILD, "waitid(P_PIDFD, reaped)", waitid(P_PIDFD, fd, &wi, WEXITED));
    check(fdinfo_pid(fd) == -1, "fdinfo Pid: -1 once reaped");
    check(readable(fd), "a reaped process's pidfd is readable");
    close(fd);
    close(gate[1]);
    EXPECT_ERR(EINVAL, "waitid(P_PIDFD, -1)", waitid(P_PIDFD, -1, &wi, WEXITED));
    EXPECT_ERR(EBADF, "waitid(P_PIDFD, a non-pidfd)", waitid(P_PIDFD, 0, &wi, WEXITED));

    /* A /proc/<pid> directory works as a pidfd for signals only. */
    pid = gated_child(gate, 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY);
    snprintf(path, sizeof path, "/proc/%d/task/%d", pid, pid);
    int tdir = open(path, O_RDONLY | O_DIRECTORY);
    EXPECT_ERR(EBADF, "pidfd_send_signal(/proc/<pid>/task/<tid>)", send_signal(tdir, 0, NULL, 0));
    EXPECT_ERR(EBADF, "pidfd_getfd(/proc/<pid>)", getfd(dir, 0, 0));
    EXPECT_ERR(EBADF, "waitid(P_PIDFD, /proc/<pid>)", waitid(P_PIDFD, dir, &wi, WEXITED));
    EXPECT_OK("pidfd_send_signal(/proc/<pid>, SIGKILL)", send_signal(dir, SIGKILL, NULL, 0));
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "killed through its /proc directory");
    EXPECT_ERR(ESRCH, "pidfd_send_signal(/proc/<reaped pid>)", send_signal(dir, 0, NULL, 0));
    close(dir);
    close(tdir);
    close(gate[1]);

    /* PIDFD_NONBLOCK: waitid does not block. */
    pid = gated_child(gate, 5);
    fd = (int)pidfd_open(pid, PIDFD_NONBLOCK);
    EXPECT_ERR(EAGAIN, "waitid(P_PIDFD, nonblocking, running)", waitid(P_PIDFD, fd, &wi, WEXITED));
    memset(&wi, 0, sizeof wi);
    check(waitid(P_PIDFD, fd, &wi, WEXITED | WNOHANG) == 0 && wi.si_pid == 0, "WNOHANG: 0 and no child");
    write(gate[1], "x", 1);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    check(poll(&p, 1, 10000) == 1 && (p.revents & POLLIN), "poll wakes when the child exits");
    check(waitid(P_PIDFD, fd, &wi, WEXITED) == 0 && wi.si_code == CLD_EXITED && wi.si_status == 5,
          "waitid(P_PIDFD) after poll: exit 5");
    close(fd);
    close(gate[1]);
    close(self);
}

static void test_getfd(void)
{
    int gate[2], back[2];
    pipe(back);
    pipe(gate);
    pid_t pid = fork();
    if (pid == 0) {
        /* fd 100: a file only the child has open. */
        int f = open("/proc/self/status", O_RDONLY);
        dup2(f, 100);
        close(f);
        write(back[1], "r", 1);
        char c;
        read(gate[0], &c, 1);
        _exit(0);
    }
    char c;
    read(back[0], &c, 1);
    int fd = (int)pidfd_open(pid, 0);
    int got = (int)getfd(fd, 100, 0);
    check(got >= 0, "pidfd_getfd(child, 100)");
    check(fcntl(got, F_GETFD) == FD_CLOEXEC, "the copy is close-on-exec");
    char buf[16];
    check(read(got, buf, 5) == 5 && memcmp(buf, "Name:", 5) == 0, "the copy reads the child's open file");
    close(got);
    EXPECT_ERR(EINVAL, "pidfd_getfd(flags 1)", getfd(fd, 100, 1));
    EXPECT_ERR(EBADF, "pidfd_getfd(child, 101)", getfd(fd, 101, 0));
    EXPECT_ERR(EBADF, "pidfd_getfd(child, -1)", getfd(fd, -1, 0));
    EXPECT_ERR(EBADF, "pidfd_getfd(not a pidfd)", getfd(back[0], 0, 0));
    EXPECT_ERR(EBADF, "pidfd_getfd(bad fd)", getfd(999, 0, 0));
    write(gate[1], "g", 1);
    close(gate[0]);
    close(gate[1]);
    siginfo_t wi;
    memset(&wi, 0, sizeof wi);
    waitid(P_PIDFD, fd, &wi, WEXITED | WNOWAIT);
    EXPECT_ERR(ESRCH, "pidfd_getfd(exited)", getfd(fd, 100, 0));
    waitid(P_PIDFD, fd, &wi, WEXITED);
    EXPECT_ERR(ESRCH, "pidfd_getfd(reaped)", getfd(fd, 100, 0));
    close(fd);
    close(back[0]);
    close(back[1]);

    /* Our own descriptors, through our own pidfd. */
    int self = (int)pidfd_open(getpid(), 0);
    got = (int)getfd(self, 1, 0);
    check(got >= 0, "pidfd_getfd(self, 1)");
    close(got);
    close(self);

    /* Permission: PTRACE_MODE_ATTACH_REALCREDS. */
    pid_t root_child = gated_child(gate, 0);
    pid = fork();
    if (pid == 0) {
        int rfd = (int)pidfd_open(root_child, 0);
        if (setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0)
            _exit(90);
        int fails = 0;
        errno = 0;
        if (!(getfd(rfd, 0, 0) == -1 && errno == EPERM))
            fails |= 1;
        errno = 0;
        if (!(send_signal(rfd, 0, NULL, 0) == -1 && errno == EPERM))
            fails |= 2;
        /* A process of our own uid that is not dumpable: no getfd, but
         * signals are fine. */
        int g2[2], r2[2];
        pipe(g2);
        pipe(r2);
        pid_t mine = fork();
        if (mine == 0) {
            char c2;
            prctl(PR_SET_DUMPABLE, 0);
            write(r2[1], "d", 1);
            read(g2[0], &c2, 1);
            _exit(0);
        }
        char c2;
        read(r2[0], &c2, 1);
        int mfd = (int)pidfd_open(mine, 0);
        errno = 0;
        if (!(getfd(mfd, 0, 0) == -1 && errno == EPERM))
            fails |= 4;
        if (send_signal(mfd, 0, NULL, 0) != 0)
            fails |= 8;
        prctl(PR_SET_DUMPABLE, 1);
        int sfd = (int)pidfd_open(getpid(), 0);
        int own = (int)getfd(sfd, 0, 0);
        if (own < 0)
            fails |= 16;
        write(g2[1], "x", 1);
        waitpid(mine, NULL, 0);
        _exit(fails);
    }
    int st = 0;
    wait_for(pid, &st, 0);
    /* Decode what failed. */
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "as user 1000: getfd and signal EPERM for root's process, getfd EPERM for an undumpable one of ours (%s)",
          status_str(st));
    close(gate[1]);
    wait_for(root_child, &st, 0);
}

static void test_clone(void)
{
    int pidfd = -1;
    errno = 0;
    long pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
    if (pid == 0)
        _exit(3);
    check(pid > 0 && pidfd >= 0, "clone(CLONE_PIDFD) returns a pidfd through parent_tid");
    check(fcntl(pidfd, F_GETFD) == FD_CLOEXEC, "clone's pidfd is close-on-exec");
    check(fdinfo_pid(pidfd) == pid, "its fdinfo Pid: is the child");
    siginfo_t wi;
    memset(&wi, 0, sizeof wi);
    check(waitid(P_PIDFD, pidfd, &wi, WEXITED) == 0 && wi.si_pid == pid && wi.si_status == 3,
          "waitid(P_PIDFD) on clone's pidfd: exit 3");
    close(pidfd);
    EXPECT_ERR(EINVAL, "clone(CLONE_PIDFD | CLONE_PARENT_SETTID, one pointer)",
               syscall(SYS_clone, CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, 0, &pidfd, 0, 0));
    EXPECT_ERR(EINVAL, "clone(CLONE_PIDFD | CLONE_DETACHED)",
               syscall(SYS_clone, CLONE_PIDFD | CLONE_DETACHED | SIGCHLD, 0, &pidfd, 0, 0));
    EXPECT_ERR(EFAULT, "clone(CLONE_PIDFD, bad pointer)", syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, BAD_PTR, 0, 0));
    EXPECT_ERR(ECHILD, "no child was left behind by the failed clone", waitpid(-1, NULL, WNOHANG));

    struct clone_args a;
    memset(&a, 0, sizeof a);
    int pfd = -1;
    a.flags = CLONE_PIDFD;
    a.pidfd = (uint64_t)(uintptr_t)&pfd;
    a.exit_signal = SIGCHLD;
    pid = syscall(SYS_clone3, &a, sizeof a);
    if (pid == 0)
        _exit(4);
    check(pid > 0 && pfd >= 0, "clone3(CLONE_PIDFD)");
    struct pollfd p = { .fd = pfd, .events = POLLIN };
    check(poll(&p, 1, 10000) == 1 && (p.revents & POLLIN), "clone3's pidfd polls readable at exit");
    memset(&wi, 0, sizeof wi);
    check(waitid(P_PIDFD, pfd, &wi, WEXITED) == 0 && wi.si_pid == pid && wi.si_status == 4,
          "waitid(P_PIDFD) on clone3's pidfd: exit 4");
    close(pfd);
    a.flags = CLONE_PIDFD | CLONE_PARENT_SETTID;
    a.parent_tid = a.pidfd;
    EXPECT_ERR(EINVAL, "clone3(CLONE_PIDFD and CLONE_PARENT_SETTID at one address)", syscall(SYS_clone3, &a, sizeof a));
    a.flags = CLONE_PIDFD;
    a.pidfd = 1;
    EXPECT_ERR(EFAULT, "clone3(CLONE_PIDFD, bad pointer)", syscall(SYS_clone3, &a, sizeof a));
    EXPECT_ERR(ECHILD, "no child left behind by clone3", waitpid(-1, NULL, WNOHANG));
}

int main(void)
{
    t_init("pidfd");
    test_open();
    test_signal();
    test_getfd();
    test_clone();
    return t_done();
}
