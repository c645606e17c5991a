/*
 * poll: readiness on pipes and files with select, pselect6, poll and ppoll:
 * readable after a write, writable when empty, POLLHUP after the writer
 * closes, POLLERR after the reader closes, POLLNVAL for a closed fd,
 * timeouts of 0 and 10 ms, wakeup by another process, signal masks of
 * pselect/ppoll (EINTR), and error cases.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/select.h>

static volatile sig_atomic_t got_usr1;

static void on_usr1(int s)
{
    (void)s;
    got_usr1++;
}

static const char *ev(short r)
{
    static char buf[128];
    buf[0] = 0;
    if (r == 0)
        return "0";
    if (r & POLLIN) strcat(buf, "|IN");
    if (r & POLLPRI) strcat(buf, "|PRI");
    if (r & POLLOUT) strcat(buf, "|OUT");
    if (r & POLLERR) strcat(buf, "|ERR");
    if (r & POLLHUP) strcat(buf, "|HUP");
    if (r & POLLNVAL) strcat(buf, "|NVAL");
    if (r & POLLRDNORM) strcat(buf, "|RDNORM");
    if (r & POLLWRNORM) strcat(buf, "|WRNORM");
    if (r & ~(POLLIN | POLLPRI | POLLOUT | POLLERR | POLLHUP | POLLNVAL | POLLRDNORM | POLLWRNORM))
        strcat(buf, "|other");
    return buf + 1;
}

static void test_poll(void)
{
    int p[2];
    pipe(p);
    struct pollfd fds[2] = { { p[0], POLLIN | POLLOUT, 0 }, { p[1], POLLIN | POLLOUT, 0 } };
    int r = poll(fds, 2, 0);
    printf("empty pipe: poll=%d read end %s, ", r, ev(fds[0].revents));
    printf("write end %s\n", ev(fds[1].revents));
    write(p[1], "x", 1);
    r = poll(fds, 2, 0);
    printf("after write: poll=%d read end %s, ", r, ev(fds[0].revents));
    printf("write end %s\n", ev(fds[1].revents));
    struct pollfd rn = { p[0], POLLRDNORM | POLLIN, 0 };
    poll(&rn, 1, 0);
    printf("POLLRDNORM|POLLIN requested: %s\n", ev(rn.revents));
    close(p[1]);
    fds[1].fd = -1;
    r = poll(fds, 2, 0);
    printf("writer closed, data left: poll=%d read end %s, ", r, ev(fds[0].revents));
    printf("ignored fd -1 %s\n", ev(fds[1].revents));
    char c;
    read(p[0], &c, 1);
    r = poll(fds, 1, 0);
    printf("writer closed, empty: poll=%d read end %s\n", r, ev(fds[0].revents));
    fds[0].events = 0;
    poll(fds, 1, 0);
    printf("events 0 still reports: %s\n", ev(fds[0].revents));
    close(p[0]);

    pipe(p);
    close(p[0]);
    struct pollfd w = { p[1], POLLOUT, 0 };
    r = poll(&w, 1, 0);
    printf("reader closed: poll=%d write end %s\n", r, ev(w.revents));
    close(p[1]);

    struct pollfd bad = { 999, POLLIN, 0 };
    r = poll(&bad, 1, 0);
    printf("closed fd: poll=%d revents %s\n", r, ev(bad.revents));

    int f = open("/tmp", O_RDONLY | O_DIRECTORY);
    struct pollfd fp = { f, POLLIN | POLLOUT, 0 };
    r = poll(&fp, 1, 0);
    printf("directory: poll=%d revents %s\n", r, ev(fp.revents));
    close(f);
    f = open("/dev/null", O_RDWR);
    fp.fd = f;
    r = poll(&fp, 1, 0);
    printf("/dev/null: poll=%d revents %s\n", r, ev(fp.revents));
    close(f);

    /* timeouts */
    pipe(p);
    struct pollfd pr = { p[0], POLLIN, 0 };
    int64_t t0 = mono_ns();
    r = poll(&pr, 1, 10);
    int64_t dt = mono_ns() - t0;
    check(r == 0 && pr.revents == 0, "poll 10 ms on empty pipe times out with 0");
    check(dt >= 10000000, "poll waited >= 10 ms");
    check(dt < 2000000000, "poll returned within 2 s");
    t0 = mono_ns();
    check(poll(NULL, 0, 10) == 0 && mono_ns() - t0 >= 10000000, "poll(NULL, 0, 10) sleeps 10 ms");

    /* wakeup by another process */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        sleep_ms(30);
        write(p[1], "w", 1);
        _exit(0);
    }
    r = poll(&pr, 1, -1);
    check(r == 1 && pr.revents == POLLIN, "poll(-1) woken by a write from another process");
    int st;
    wait_for(pid, &st, 0);

    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    EXPECT_ERR(EINVAL, "poll(nfds > RLIMIT_NOFILE)", poll(&pr, rl.rlim_cur + 1, 0));
    EXPECT_ERR(EFAULT, "poll(bad pointer)", poll(BAD_PTR, 1, 0));

    /* ppoll */
    struct timespec ts = { 0, 10000000 };
    read(p[0], &c, 1);
    t0 = mono_ns();
    r = ppoll(&pr, 1, &ts, NULL);
    check(r == 0 && mono_ns() - t0 >= 10000000, "ppoll 10 ms times out");
    printf("ppoll timespec after timeout (libc copy): %ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
    struct timespec zero = { 0, 0 };
    write(p[1], "y", 1);
    r = ppoll(&pr, 1, &zero, NULL);
    check(r == 1 && pr.revents == POLLIN, "ppoll(zero timeout) sees data");
    struct timespec badts = { 0, 1000000000 };
    EXPECT_ERR(EINVAL, "ppoll(tv_nsec 1e9)", ppoll(&pr, 1, &badts, NULL));
    struct timespec negts = { -1, 0 };
    EXPECT_ERR(EINVAL, "ppoll(negative timeout)", ppoll(&pr, 1, &negts, NULL));
    read(p[0], &c, 1);

    /* ppoll's mask lets a blocked, pending signal in */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t block, old, empty;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigemptyset(&empty);
    sigprocmask(SIG_BLOCK, &block, &old);
    raise(SIGUSR1);
    check(got_usr1 == 0, "SIGUSR1 blocked and pending");
    struct timespec longts = { 5, 0 };
    EXPECT_ERR(EINTR, "ppoll with empty mask and pending signal", ppoll(&pr, 1, &longts, &empty));
    check(got_usr1 == 1, "handler ran once");
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    check(sigismember(&now, SIGUSR1), "original mask restored after ppoll");
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(p[0]);
    close(p[1]);
}

static void test_select(void)
{
    int p[2];
    pipe(p);
    fd_set rd, wr;
    FD_ZERO(&rd);
    FD_ZERO(&wr);
    FD_SET(p[0], &rd);
    FD_SET(p[1], &wr);
    int nfds = p[1] + 1;
    struct timeval tv = { 0, 0 };
    int r = select(nfds, &rd, &wr, NULL, &tv);
    check(r == 1 && !FD_ISSET(p[0], &rd) && FD_ISSET(p[1], &wr), "select: empty pipe writable, not readable");
    write(p[1], "x", 1);
    FD_ZERO(&rd);
    FD_ZERO(&wr);
    FD_SET(p[0], &rd);
    FD_SET(p[1], &wr);
    r = select(nfds, &rd, &wr, NULL, &tv);
    check(r == 2 && FD_ISSET(p[0], &rd) && FD_ISSET(p[1], &wr), "select: after write both ready (returns 2)");
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    FD_SET(p[1], &rd);
    r = select(nfds, &rd, NULL, NULL, &tv);
    check(r == 1 && FD_ISSET(p[0], &rd) && !FD_ISSET(p[1], &rd), "select: write end never readable");

    char c;
    read(p[0], &c, 1);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    tv.tv_sec = 0;
    tv.tv_usec = 10000;
    int64_t t0 = mono_ns();
    r = select(nfds, &rd, NULL, NULL, &tv);
    int64_t dt = mono_ns() - t0;
    check(r == 0 && !FD_ISSET(p[0], &rd), "select 10 ms times out, set cleared");
    check(dt >= 10000000, "select waited >= 10 ms");
    printf("select timeval after timeout (libc copy): %ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);

    t0 = mono_ns();
    tv.tv_sec = 0;
    tv.tv_usec = 10000;
    check(select(0, NULL, NULL, NULL, &tv) == 0 && mono_ns() - t0 >= 10000000, "select(0, NULL...) sleeps");

    close(p[1]);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    tv.tv_sec = 0;
    tv.tv_usec = 0;
    check(select(p[0] + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(p[0], &rd), "select: EOF counts as readable");

    fd_set ex;
    FD_ZERO(&rd);
    FD_ZERO(&ex);
    FD_SET(p[0], &ex);
    check(select(p[0] + 1, NULL, NULL, &ex, &tv) == 0, "select: no exceptional condition on a pipe");

    FD_ZERO(&rd);
    FD_SET(40, &rd);
    EXPECT_ERR(EBADF, "select(closed fd 40 in set)", select(41, &rd, NULL, NULL, &tv));
    EXPECT_ERR(EINVAL, "select(nfds -1)", select(-1, NULL, NULL, NULL, &tv));
    struct timeval badtv = { 0, -1 };
    EXPECT_ERR(EINVAL, "raw select(negative usec)", syscall(SYS_select, 0, NULL, NULL, NULL, &badtv));
    EXPECT_ERR(EFAULT, "select(bad fd_set)", syscall(SYS_select, 1, BAD_PTR, NULL, NULL, &tv));

    /* pselect6 with a signal mask */
    int q[2];
    pipe(q);
    FD_ZERO(&rd);
    FD_SET(q[0], &rd);
    struct timespec ts = { 0, 10000000 };
    t0 = mono_ns();
    r = pselect(q[0] + 1, &rd, NULL, NULL, &ts, NULL);
    check(r == 0 && mono_ns() - t0 >= 10000000, "pselect 10 ms times out");
    printf("pselect timespec after timeout (libc copy): %ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
    write(q[1], "z", 1);
    FD_ZERO(&rd);
    FD_SET(q[0], &rd);
    struct timespec zero = { 0, 0 };
    check(pselect(q[0] + 1, &rd, NULL, NULL, &zero, NULL) == 1 && FD_ISSET(q[0], &rd), "pselect sees data");
    read(q[0], &c, 1);

    got_usr1 = 0;
    sigset_t block, old, empty;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigemptyset(&empty);
    sigprocmask(SIG_BLOCK, &block, &old);
    raise(SIGUSR1);
    FD_ZERO(&rd);
    FD_SET(q[0], &rd);
    struct timespec longts = { 5, 0 };
    EXPECT_ERR(EINTR, "pselect with empty mask and pending signal", pselect(q[0] + 1, &rd, NULL, NULL, &longts, &empty));
    check(got_usr1 == 1, "handler ran once");
    sigprocmask(SIG_SETMASK, &old, NULL);

    /* raw pselect6: the timeout is updated with the remaining time */
    struct timespec kts = { 0, 10000000 };
    FD_ZERO(&rd);
    FD_SET(q[0], &rd);
    long kr = syscall(SYS_pselect6, q[0] + 1, &rd, NULL, NULL, &kts, NULL);
    check(kr == 0, "raw pselect6 times out");
    printf("raw pselect6 timespec after timeout: %ld.%09ld\n", (long)kts.tv_sec, kts.tv_nsec);
    struct timespec badts = { 0, 2000000000L };
    EXPECT_ERR(EINVAL, "pselect6(tv_nsec 2e9)", syscall(SYS_pselect6, 0, NULL, NULL, NULL, &badts, NULL));

    /* a child writes while we block in select */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        sleep_ms(30);
        write(q[1], "w", 1);
        _exit(0);
    }
    FD_ZERO(&rd);
    FD_SET(q[0], &rd);
    check(select(q[0] + 1, &rd, NULL, NULL, NULL) == 1 && FD_ISSET(q[0], &rd), "select(NULL timeout) woken by child");
    int st;
    wait_for(pid, &st, 0);
    close(p[0]);
    close(q[0]);
    close(q[1]);
}

int main(void)
{
    t_init("poll");
    for (int i = 3; i < 64; i++)
        close(i);
    test_poll();
    test_select();
    return t_done();
}
