/*
 * signalfd: signalfd/signalfd4 arguments and flags, updating the mask of
 * an existing signalfd, reading blocked signals as 128-byte
 * signalfd_siginfo records (kill, tgkill, sigqueue with a value, SIGCHLD
 * with its status, several per read, real-time ones queued), readiness
 * for poll and epoll when a signal becomes pending, a blocking read woken
 * by another process, the interaction with the signal mask (an unblocked
 * signal goes to its handler), and a forked child seeing only its own
 * signals.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

static volatile sig_atomic_t handled;

static void on_signal(int s)
{
    (void)s;
    handled++;
}

static int pending_in(int fd)
{
    struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
    poll(&p, 1, 0);
    return p.revents;
}

static int read_one(int fd, struct signalfd_siginfo *si)
{
    errno = 0;
    ssize_t n = read(fd, si, sizeof *si);
    return n == (ssize_t)sizeof *si ? 0 : errno;
}

static sigset_t set_of(int a, int b)
{
    sigset_t s;
    sigemptyset(&s);
    if (a)
        sigaddset(&s, a);
    if (b)
        sigaddset(&s, b);
    return s;
}

static void test_create(void)
{
    sigset_t m = set_of(SIGUSR1, 0);
    EXPECT_ERR(EINVAL, "signalfd4(sizemask 4)", syscall(SYS_signalfd4, -1, &m, 4, 0));
    EXPECT_ERR(EINVAL, "signalfd4(sizemask 16)", syscall(SYS_signalfd4, -1, &m, 16, 0));
    EXPECT_ERR(EFAULT, "signalfd4(bad mask)", syscall(SYS_signalfd4, -1, BAD_PTR, 8, 0));
    EXPECT_ERR(EINVAL, "signalfd4(flags 1)", syscall(SYS_signalfd4, -1, &m, 8, 1));
    EXPECT_ERR(EINVAL, "signalfd4(sizemask 4, bad mask): size first", syscall(SYS_signalfd4, -1, BAD_PTR, 4, 0));
    EXPECT_ERR(EFAULT, "signalfd4(bad mask, flags 1): mask before flags", syscall(SYS_signalfd4, -1, BAD_PTR, 8, 1));
    EXPECT_ERR(EBADF, "signalfd4(fd 99)", syscall(SYS_signalfd4, 99, &m, 8, 0));
    EXPECT_ERR(EBADF, "signalfd4(fd -2)", syscall(SYS_signalfd4, -2, &m, 8, 0));
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "signalfd4(a pipe)", syscall(SYS_signalfd4, p[0], &m, 8, 0));
    close(p[0]);
    close(p[1]);
    int fd = syscall(SYS_signalfd, -1, &m, 8);
    check(fd >= 0, "signalfd (the old call)");
    check(fcntl(fd, F_GETFL) == O_RDWR, "O_RDWR");
    check(fcntl(fd, F_GETFD) == 0, "no FD_CLOEXEC");
    check(syscall(SYS_signalfd4, fd, &m, 8, SFD_NONBLOCK | SFD_CLOEXEC) == fd, "updating returns the same fd");
    check(fcntl(fd, F_GETFL) == O_RDWR && fcntl(fd, F_GETFD) == 0, "updating does not change its flags");
    close(fd);
    fd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
    check(fcntl(fd, F_GETFL) == (O_RDWR | O_NONBLOCK) && fcntl(fd, F_GETFD) == FD_CLOEXEC, "SFD_NONBLOCK|SFD_CLOEXEC");
    struct stat st;
    fstat(fd, &st);
    printf("fstat: mode %o\n", st.st_mode);
    char link[64] = { 0 }, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    readlink(path, link, sizeof link - 1);
    printf("/proc/self/fd link: %s\n", link);
    char b[200];
    EXPECT_ERR(EINVAL, "read(127 bytes)", read(fd, b, 127));
    EXPECT_ERR(EINVAL, "read(0 bytes)", read(fd, b, 0));
    EXPECT_ERR(EAGAIN, "read with nothing pending", read(fd, b, 128));
    EXPECT_ERR(EINVAL, "write", write(fd, b, 128));
    check(lseek(fd, 4, SEEK_SET) == 0, "lseek stays at 0");
    close(fd);
}

static void test_read(void)
{
    sigset_t both = set_of(SIGUSR1, SIGUSR2);
    sigprocmask(SIG_BLOCK, &both, NULL);
    int fd = signalfd(-1, &both, SFD_NONBLOCK);
    printf("poll, nothing pending: 0x%x\n", pending_in(fd));
    kill(getpid(), SIGUSR1);
    printf("poll, SIGUSR1 pending: 0x%x\n", pending_in(fd));
    struct signalfd_siginfo si;
    memset(&si, 0xa5, sizeof si);
    int e = read_one(fd, &si);
    check(e == 0, "read one record");
    printf("kill: signo %u code %d pid is mine %d uid %u errno %d tid %u int %d ptr %llu status %d addr %llu\n",
           si.ssi_signo, si.ssi_code, si.ssi_pid == (uint32_t)getpid(), si.ssi_uid, si.ssi_errno, si.ssi_tid,
           si.ssi_int, (unsigned long long)si.ssi_ptr, si.ssi_status, (unsigned long long)si.ssi_addr);
    static const unsigned char zeros[28];
    check(memcmp(si.__pad, zeros, sizeof zeros) == 0, "padding zeroed");
    sigset_t pend;
    sigpending(&pend);
    check(!sigismember(&pend, SIGUSR1), "the signal was consumed");
    printf("poll after the read: 0x%x\n", pending_in(fd));

    /* Two standard signals in one read; lowest first. */
    kill(getpid(), SIGUSR2);
    kill(getpid(), SIGUSR1);
    kill(getpid(), SIGUSR1); /* merged with the pending one */
    struct signalfd_siginfo many[4];
    ssize_t n = read(fd, many, sizeof many);
    printf("read(4 records) with SIGUSR2 and SIGUSR1 pending: %zd bytes, signals %u %u\n", n, many[0].ssi_signo,
           n >= 256 ? many[1].ssi_signo : 0);

    /* tgkill and sigqueue. */
    syscall(SYS_tgkill, getpid(), gettid(), SIGUSR1);
    read_one(fd, &si);
    printf("tgkill: signo %u code %d pid is mine %d\n", si.ssi_signo, si.ssi_code, si.ssi_pid == (uint32_t)getpid());
    union sigval v = { .sival_int = 77 };
    sigqueue(getpid(), SIGUSR2, v);
    read_one(fd, &si);
    printf("sigqueue: signo %u code %d int %d ptr %llu\n", si.ssi_signo, si.ssi_code, si.ssi_int,
           (unsigned long long)si.ssi_ptr);

    /* Updating the mask. */
    sigset_t one = set_of(SIGUSR2, 0);
    signalfd(fd, &one, 0);
    kill(getpid(), SIGUSR1);
    printf("mask now SIGUSR2 only, SIGUSR1 pending: poll 0x%x\n", pending_in(fd));
    e = read_one(fd, &si);
    printf("read: %s\n", errname(e));
    kill(getpid(), SIGUSR2);
    e = read_one(fd, &si);
    printf("SIGUSR2 sent: read %s signo %u\n", errname(e), si.ssi_signo);
    signalfd(fd, &both, 0);
    read_one(fd, &si);
    printf("mask back to both: the pending SIGUSR1 reads as %u\n", si.ssi_signo);

    /* SIGKILL and SIGSTOP are dropped from the mask. */
    sigset_t kill_stop = set_of(SIGKILL, SIGSTOP);
    int fd2 = signalfd(-1, &kill_stop, SFD_NONBLOCK);
    check(fd2 >= 0, "a mask of SIGKILL|SIGSTOP is accepted");
    e = read_one(fd2, &si);
    printf("... and reads %s\n", errname(e));
    close(fd2);
    close(fd);
    sigprocmask(SIG_UNBLOCK, &both, NULL);
}

static void test_realtime(void)
{
    int rt = SIGRTMIN + 1;
    sigset_t m = set_of(rt, 0);
    sigprocmask(SIG_BLOCK, &m, NULL);
    int fd = signalfd(-1, &m, SFD_NONBLOCK);
    for (int i = 0; i < 3; i++) {
        union sigval v = { .sival_int = 100 + i };
        sigqueue(getpid(), rt, v);
    }
    struct signalfd_siginfo si[4];
    ssize_t n = read(fd, si, sizeof si);
    printf("3 queued real-time signals: %zd bytes, values %d %d %d\n", n, si[0].ssi_int, n >= 256 ? si[1].ssi_int : 0,
           n >= 384 ? si[2].ssi_int : 0);
    close(fd);
    sigprocmask(SIG_UNBLOCK, &m, NULL);
}

static void test_mask_interaction(void)
{
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t m = set_of(SIGUSR1, 0);
    int fd = signalfd(-1, &m, SFD_NONBLOCK);
    handled = 0;
    kill(getpid(), SIGUSR1);
    check(handled == 1, "an unblocked signal goes to its handler");
    struct signalfd_siginfo si;
    int e = read_one(fd, &si);
    printf("... and the signalfd reads %s\n", errname(e));
    sigprocmask(SIG_BLOCK, &m, NULL);
    kill(getpid(), SIGUSR1);
    check(handled == 1 && pending_in(fd) == POLLIN, "blocked: pending and readable");
    check(read_one(fd, &si) == 0 && si.ssi_signo == SIGUSR1, "read it");
    sigprocmask(SIG_UNBLOCK, &m, NULL);
    check(handled == 1, "nothing left for the handler after the read");
    signal(SIGUSR1, SIG_DFL);
    close(fd);
}

static void test_wakeups(void)
{
    sigset_t m = set_of(SIGUSR1, SIGCHLD);
    sigprocmask(SIG_BLOCK, &m, NULL);
    int fd = signalfd(-1, &m, 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 3 }, out[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    printf("epoll, nothing pending: %d\n", epoll_wait(ep, out, 2, 0));
    fflush(stdout);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        usleep(20000);
        kill(parent, SIGUSR1);
        _exit(7);
    }
    int n = epoll_wait(ep, out, 2, 5000);
    check(n == 1 && out[0].data.u64 == 3 && out[0].events == EPOLLIN, "epoll_wait woken by a signal from another process");
    struct signalfd_siginfo si;
    check(read_one(fd, &si) == 0 && si.ssi_signo == SIGUSR1 && si.ssi_pid == (uint32_t)pid,
          "the record names the sender");
    /* Blocking read of the child's SIGCHLD. */
    int e = read_one(fd, &si);
    check(e == 0 && si.ssi_signo == SIGCHLD, "a blocking read gets SIGCHLD");
    printf("SIGCHLD: code %d status %d pid is the child %d\n", si.ssi_code, si.ssi_status, si.ssi_pid == (uint32_t)pid);
    int st;
    wait_for(pid, &st, 0);

    /* A child's signalfd sees the child's signals, not the parent's. */
    kill(getpid(), SIGUSR1);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int r = pending_in(fd) == 0 ? 0 : 1;
        kill(getpid(), SIGUSR1);
        struct signalfd_siginfo s2;
        if (read(fd, &s2, sizeof s2) != sizeof s2 || s2.ssi_pid != (uint32_t)getpid())
            r |= 2;
        _exit(r);
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "in a child: the parent's pending signal is not there, its own is");
    check(read_one(fd, &si) == 0 && si.ssi_signo == SIGUSR1 && si.ssi_pid == (uint32_t)getpid(),
          "the parent still has its own");
    /* Drain the child's SIGCHLD. */
    read_one(fd, &si);
    close(ep);
    close(fd);
    sigprocmask(SIG_UNBLOCK, &m, NULL);
}

int main(void)
{
    t_init("signalfd");
    test_create();
    test_read();
    test_realtime();
    test_mask_interaction();
    test_wakeups();
    return t_done();
}
