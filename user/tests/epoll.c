/*
 * epoll: epoll_create/create1/ctl/wait/pwait/pwait2 against Linux.
 * Level- and edge-triggered pipes, EPOLLONESHOT and re-arming with
 * EPOLL_CTL_MOD, EPOLLEXCLUSIVE rules, round robin under a small
 * maxevents, entries living as long as the open file description (dup'd
 * descriptors keep them), epoll across fork, nested epoll with Linux's
 * loop and depth limits, poll/select on an epoll fd, timeouts, signals
 * (EINTR even with SA_RESTART, epoll_pwait's mask), a FIFO, and every
 * errno of the argument checks in Linux's order.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/time.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

static volatile sig_atomic_t got_signal;

static void on_signal(int s)
{
    (void)s;
    got_signal++;
}

static const char *ev(unsigned e)
{
    static char buf[160];
    buf[0] = 0;
    if (e == 0)
        return "0";
    if (e & EPOLLIN) strcat(buf, "|IN");
    if (e & EPOLLPRI) strcat(buf, "|PRI");
    if (e & EPOLLOUT) strcat(buf, "|OUT");
    if (e & EPOLLERR) strcat(buf, "|ERR");
    if (e & EPOLLHUP) strcat(buf, "|HUP");
    if (e & EPOLLRDNORM) strcat(buf, "|RDNORM");
    if (e & EPOLLWRNORM) strcat(buf, "|WRNORM");
    if (e & EPOLLRDHUP) strcat(buf, "|RDHUP");
    if (e & ~(unsigned)(EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDNORM | EPOLLWRNORM | EPOLLRDHUP))
        strcat(buf, "|other");
    return buf + 1;
}

static int add(int ep, int fd, unsigned events, uint64_t data)
{
    struct epoll_event e = { .events = events, .data.u64 = data };
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static int mod(int ep, int fd, unsigned events, uint64_t data)
{
    struct epoll_event e = { .events = events, .data.u64 = data };
    return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
}

/* One epoll_wait with timeout 0, printed as "n: data=events ...". */
static void show(const char *what, int ep, int max)
{
    struct epoll_event out[8];
    int n = epoll_wait(ep, out, max, 0);
    char line[256];
    int len = snprintf(line, sizeof line, "%s: %d", what, n);
    if (n < 0)
        len += snprintf(line + len, sizeof line - len, " %s", errname(errno));
    for (int i = 0; i < n && len < (int)sizeof line; i++)
        len += snprintf(line + len, sizeof line - len, " %llu=%s", (unsigned long long)out[i].data.u64, ev(out[i].events));
    printf("%s\n", line);
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_create(void)
{
    EXPECT_ERR(EINVAL, "epoll_create(0)", syscall(SYS_epoll_create, 0));
    EXPECT_ERR(EINVAL, "epoll_create(-1)", syscall(SYS_epoll_create, -1));
    int ep = syscall(SYS_epoll_create, 1);
    check(ep >= 0, "epoll_create(1)");
    EXPECT_ERR(EINVAL, "epoll_create1(1)", epoll_create1(1));
    EXPECT_ERR(EINVAL, "epoll_create1(O_NONBLOCK)", epoll_create1(O_NONBLOCK));
    int ep2 = epoll_create1(EPOLL_CLOEXEC);
    check(fcntl(ep2, F_GETFD) == FD_CLOEXEC, "EPOLL_CLOEXEC sets FD_CLOEXEC");
    check(fcntl(ep, F_GETFD) == 0, "epoll_create leaves FD_CLOEXEC clear");
    check(fcntl(ep, F_GETFL) == O_RDWR, "an epoll fd is O_RDWR");
    struct stat st;
    fstat(ep, &st);
    printf("fstat: mode %o, nlink %lu, size %ld\n", st.st_mode, (unsigned long)st.st_nlink, (long)st.st_size);
    char link[64] = { 0 }, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", ep);
    readlink(path, link, sizeof link - 1);
    printf("/proc/self/fd link: %s\n", link);
    char b[16];
    EXPECT_ERR(EINVAL, "read(epoll fd)", read(ep, b, sizeof b));
    EXPECT_ERR(EINVAL, "write(epoll fd)", write(ep, b, sizeof b));
    check(lseek(ep, 5, SEEK_SET) == 0, "lseek(epoll fd) stays at 0");
    close(ep);
    close(ep2);
}

static void test_ctl_errors(void)
{
    int ep = epoll_create1(0);
    int p[2];
    pipe(p);
    struct epoll_event e = { .events = EPOLLIN };
    EXPECT_ERR(EFAULT, "ctl(bad epfd, ADD, NULL event): event first", epoll_ctl(99, EPOLL_CTL_ADD, p[0], NULL));
    EXPECT_ERR(EBADF, "ctl(bad epfd)", epoll_ctl(99, EPOLL_CTL_ADD, p[0], &e));
    EXPECT_ERR(EBADF, "ctl(bad fd)", epoll_ctl(ep, EPOLL_CTL_ADD, 99, &e));
    EXPECT_ERR(EBADF, "ctl(fd -1)", epoll_ctl(ep, EPOLL_CTL_ADD, -1, &e));
    EXPECT_ERR(EFAULT, "ctl(ADD, bad event pointer)", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], BAD_PTR));
    EXPECT_ERR(EFAULT, "ctl(MOD, kernel event pointer)", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], KERNEL_PTR));
    int reg = open("/proc/self/exe", O_RDONLY);
    EXPECT_ERR(EPERM, "ctl(ADD regular file)", epoll_ctl(ep, EPOLL_CTL_ADD, reg, &e));
    int dir = open("/", O_RDONLY | O_DIRECTORY);
    EXPECT_ERR(EPERM, "ctl(ADD directory)", epoll_ctl(ep, EPOLL_CTL_ADD, dir, &e));
    int null = open("/dev/null", O_RDWR);
    EXPECT_ERR(EPERM, "ctl(ADD /dev/null)", epoll_ctl(ep, EPOLL_CTL_ADD, null, &e));
    int urnd = open("/dev/urandom", O_RDONLY);
    EXPECT_ERR(EPERM, "ctl(ADD /dev/urandom)", epoll_ctl(ep, EPOLL_CTL_ADD, urnd, &e));
    int rnd = open("/dev/random", O_RDONLY);
    EXPECT_OK("ctl(ADD /dev/random)", epoll_ctl(ep, EPOLL_CTL_ADD, rnd, &e));
    show("/dev/random watched for IN", ep, 8);
    EXPECT_OK("ctl(DEL /dev/random, NULL event)", epoll_ctl(ep, EPOLL_CTL_DEL, rnd, NULL));
    EXPECT_ERR(EPERM, "ctl(regular file as target, pipe as epfd): EPERM before EINVAL",
               epoll_ctl(p[0], EPOLL_CTL_ADD, reg, &e));
    EXPECT_ERR(EINVAL, "ctl(pipe as epfd)", epoll_ctl(p[0], EPOLL_CTL_ADD, p[1], &e));
    EXPECT_ERR(EINVAL, "ctl(epfd on itself)", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &e));
    EXPECT_ERR(EINVAL, "ctl(op 0)", epoll_ctl(ep, 0, p[0], &e));
    EXPECT_ERR(EINVAL, "ctl(op 4)", epoll_ctl(ep, 4, p[0], &e));
    EXPECT_ERR(EFAULT, "ctl(op 4, NULL event)", epoll_ctl(ep, 4, p[0], NULL));
    EXPECT_ERR(ENOENT, "ctl(MOD not added)", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e));
    EXPECT_ERR(ENOENT, "ctl(DEL not added)", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    EXPECT_OK("ctl(ADD pipe)", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e));
    EXPECT_ERR(EEXIST, "ctl(ADD twice)", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e));
    int d = dup(p[0]);
    EXPECT_OK("ctl(ADD a dup of it)", epoll_ctl(ep, EPOLL_CTL_ADD, d, &e));
    EXPECT_OK("ctl(MOD)", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e));
    EXPECT_OK("ctl(DEL)", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], &e));
    EXPECT_ERR(ENOENT, "ctl(DEL again)", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], &e));
    int opath = open("/tmp", O_PATH);
    EXPECT_ERR(EBADF, "ctl(ADD an O_PATH fd)", epoll_ctl(ep, EPOLL_CTL_ADD, opath, &e));
    EXPECT_ERR(EBADF, "ctl(O_PATH fd as epfd)", epoll_ctl(opath, EPOLL_CTL_ADD, p[0], &e));

    /* EPOLLEXCLUSIVE. */
    int ex = epoll_create1(0);
    EXPECT_ERR(EINVAL, "ctl(ADD EXCLUSIVE|ONESHOT)", add(ex, p[0], EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT, 0));
    EXPECT_ERR(EINVAL, "ctl(ADD EXCLUSIVE|RDHUP)", add(ex, p[0], EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDHUP, 0));
    EXPECT_ERR(EINVAL, "ctl(ADD EXCLUSIVE|PRI)", add(ex, p[0], EPOLLPRI | EPOLLEXCLUSIVE, 0));
    EXPECT_ERR(EINVAL, "ctl(ADD EXCLUSIVE on an epoll fd)", add(ex, ep, EPOLLIN | EPOLLEXCLUSIVE, 0));
    EXPECT_ERR(EINVAL, "ctl(MOD with EXCLUSIVE, not added)", mod(ex, p[0], EPOLLIN | EPOLLEXCLUSIVE, 0));
    EXPECT_OK("ctl(ADD EXCLUSIVE|ET|WAKEUP)", add(ex, p[0], EPOLLIN | EPOLLEXCLUSIVE | EPOLLET | EPOLLWAKEUP, 0));
    EXPECT_ERR(EINVAL, "ctl(MOD an exclusive entry)", mod(ex, p[0], EPOLLIN, 0));
    EXPECT_OK("ctl(DEL an exclusive entry)", epoll_ctl(ex, EPOLL_CTL_DEL, p[0], NULL));
    EXPECT_OK("ctl(ADD WAKEUP|ONESHOT)", add(ex, p[0], EPOLLIN | EPOLLWAKEUP | EPOLLONESHOT, 0));
    close(ex);
    close(d);
    close(opath);
    close(reg);
    close(dir);
    close(null);
    close(urnd);
    close(rnd);
    close(p[0]);
    close(p[1]);
    close(ep);
}

static void test_wait_errors(void)
{
    int ep = epoll_create1(0);
    struct epoll_event out[4];
    EXPECT_ERR(EINVAL, "wait(maxevents 0)", epoll_wait(ep, out, 0, 0));
    EXPECT_ERR(EINVAL, "wait(maxevents -1)", epoll_wait(ep, out, -1, 0));
    EXPECT_ERR(EINVAL, "wait(maxevents INT_MAX/12+1)", epoll_wait(ep, out, 0x7fffffff / 12 + 1, 0));
    EXPECT_ERR(EFAULT, "wait(kernel buffer)", epoll_wait(ep, KERNEL_PTR, 1, 0));
    int p0[2];
    pipe(p0);
    EXPECT_ERR(EFAULT, "wait(pipe fd, kernel buffer): buffer before the epoll check",
               epoll_wait(p0[0], KERNEL_PTR, 1, 0));
    close(p0[0]);
    close(p0[1]);
    EXPECT_ERR(EBADF, "wait(bad fd)", epoll_wait(99, out, 4, 0));
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "wait(pipe fd)", epoll_wait(p[0], out, 4, 0));
    check(epoll_wait(ep, BAD_PTR, 1, 0) == 0, "wait(unmapped buffer) with nothing ready returns 0");
    add(ep, p[0], EPOLLIN, 1);
    write(p[1], "x", 1);
    EXPECT_ERR(EFAULT, "wait(unmapped buffer) with an event", epoll_wait(ep, BAD_PTR, 1, 0));
    show("the event is still there after EFAULT", ep, 4);
    EXPECT_ERR(EINVAL, "pwait(sigsetsize 7)", syscall(SYS_epoll_pwait, ep, out, 4, 0, out, 7));
    check(syscall(SYS_epoll_pwait, ep, out, 4, 0, NULL, 7) == 1, "pwait(NULL mask, sigsetsize 7) is fine");
    sigset_t m;
    sigemptyset(&m);
    EXPECT_ERR(EFAULT, "pwait(bad mask)", syscall(SYS_epoll_pwait, ep, out, 4, 0, BAD_PTR, 8));
    EXPECT_ERR(EINVAL, "pwait(sigsetsize 7, maxevents 0): mask size first",
               syscall(SYS_epoll_pwait, ep, out, 0, 0, &m, 7));
    struct timespec bad = { 0, 1000000000 };
    EXPECT_ERR(EINVAL, "pwait2(tv_nsec 1e9)", syscall(SYS_epoll_pwait2, ep, out, 4, &bad, NULL, 8));
    struct timespec neg = { -1, 0 };
    EXPECT_ERR(EINVAL, "pwait2(negative timeout)", syscall(SYS_epoll_pwait2, ep, out, 4, &neg, NULL, 8));
    EXPECT_ERR(EFAULT, "pwait2(bad timeout pointer)", syscall(SYS_epoll_pwait2, ep, out, 4, BAD_PTR, NULL, 8));
    EXPECT_ERR(EINVAL, "pwait2(bad timeout, maxevents 0): timeout first",
               syscall(SYS_epoll_pwait2, ep, out, 0, &bad, NULL, 8));
    EXPECT_ERR(EINVAL, "pwait2(sigsetsize 9)", syscall(SYS_epoll_pwait2, ep, out, 4, NULL, &m, 9));
    check(syscall(SYS_epoll_pwait2, ep, out, 4, NULL, NULL, 0) == 1, "pwait2(NULL timeout) returns the ready event");
    close(p[0]);
    close(p[1]);
    close(ep);
}

static void test_level_edge_oneshot(void)
{
    int ep = epoll_create1(0);
    int p[2];
    pipe(p);
    add(ep, p[0], EPOLLIN, 11);
    show("LT empty pipe", ep, 8);
    write(p[1], "ab", 2);
    show("LT after write", ep, 8);
    show("LT again (still readable)", ep, 8);
    char c;
    read(p[0], &c, 1);
    show("LT after reading 1 of 2", ep, 8);
    read(p[0], &c, 1);
    show("LT drained", ep, 8);
    mod(ep, p[0], EPOLLIN | EPOLLET, 12);
    show("ET after MOD, empty", ep, 8);
    write(p[1], "ab", 2);
    show("ET after write", ep, 8);
    show("ET again", ep, 8);
    write(p[1], "c", 1);
    show("ET after another write", ep, 8);
    read(p[0], &c, 1);
    show("ET after a read (no new event)", ep, 8);
    mod(ep, p[0], EPOLLIN | EPOLLET, 13);
    show("ET after MOD with data left", ep, 8);
    show("ET after that", ep, 8);
    mod(ep, p[0], EPOLLIN | EPOLLONESHOT, 14);
    show("ONESHOT with data", ep, 8);
    show("ONESHOT fired", ep, 8);
    write(p[1], "d", 1);
    show("ONESHOT fired, more data", ep, 8);
    mod(ep, p[0], EPOLLIN | EPOLLONESHOT, 15);
    show("ONESHOT re-armed by MOD", ep, 8);
    EXPECT_OK("ctl(MOD a fired one-shot entry)", mod(ep, p[0], 0, 16));
    show("MOD to events 0 with data", ep, 8);
    char buf[16];
    read(p[0], buf, sizeof buf);
    close(p[1]);
    show("events 0, writer closed (HUP is always on)", ep, 8);
    close(p[0]);

    /* The write side. */
    pipe(p);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    add(ep, p[1], EPOLLOUT | EPOLLET, 21);
    show("ET write end, empty pipe", ep, 8);
    show("ET write end again", ep, 8);
    write(p[1], "x", 1);
    read(p[0], &c, 1);
    show("ET write end after a write and a read", ep, 8);
    static char page[4096];
    int filled = 0;
    while (write(p[1], page, sizeof page) == (ssize_t)sizeof page)
        filled += sizeof page;
    check(errno == EAGAIN, "filled the pipe until EAGAIN");
    show("ET write end, pipe full", ep, 8);
    while (filled > 0) {
        int n = read(p[0], page, sizeof page);
        if (n <= 0)
            break;
        filled -= n;
    }
    show("ET write end after draining a full pipe", ep, 8);
    mod(ep, p[1], EPOLLOUT | EPOLLIN | EPOLLRDHUP, 22);
    show("write end watched for IN|OUT|RDHUP", ep, 8);
    close(p[0]);
    show("write end after the reader closed", ep, 8);
    close(p[1]);
    show("after closing the write end too", ep, 8);
    close(ep);
}

static void test_round_robin(void)
{
    int ep = epoll_create1(0);
    int p[3][2];
    for (int i = 0; i < 3; i++) {
        pipe(p[i]);
        add(ep, p[i][0], EPOLLIN, 100 + i);
        write(p[i][1], "x", 1);
    }
    show("3 ready, maxevents 8", ep, 8);
    for (int i = 0; i < 4; i++)
        show("3 ready, maxevents 1", ep, 1);
    show("3 ready, maxevents 2", ep, 2);
    show("3 ready, maxevents 2 again", ep, 2);
    char c;
    read(p[1][0], &c, 1);
    show("middle one drained", ep, 8);
    epoll_ctl(ep, EPOLL_CTL_DEL, p[0][0], NULL);
    show("first one deleted", ep, 8);
    for (int i = 0; i < 3; i++) {
        close(p[i][0]);
        close(p[i][1]);
    }
    show("all closed", ep, 8);
    close(ep);
}

static void test_close(void)
{
    int ep = epoll_create1(0);
    int p[2];
    pipe(p);
    int r = p[0];
    int r2 = dup(r);
    add(ep, r, EPOLLIN, 7);
    write(p[1], "x", 1);
    close(r);
    show("watched fd closed, a dup still open: entry stays", ep, 8);
    EXPECT_ERR(EBADF, "ctl(DEL the closed fd)", epoll_ctl(ep, EPOLL_CTL_DEL, r, NULL));
    EXPECT_ERR(ENOENT, "ctl(DEL the dup: another key)", epoll_ctl(ep, EPOLL_CTL_DEL, r2, NULL));
    int r3 = dup2(r2, r);
    check(r3 == r, "the closed number reused by a dup of the same description");
    EXPECT_OK("ctl(MOD through the reused number: same file, same fd)", mod(ep, r, EPOLLIN, 8));
    show("the entry's new data", ep, 8);
    EXPECT_OK("ctl(DEL through the reused number)", epoll_ctl(ep, EPOLL_CTL_DEL, r, NULL));
    show("after DEL", ep, 8);
    add(ep, r, EPOLLIN, 9);
    close(r);
    close(r2);
    show("last reference closed: entry gone", ep, 8);
    int q[2];
    pipe(q);
    EXPECT_OK("ctl(ADD a new pipe at the old number)", add(ep, q[0], EPOLLIN, 10));
    write(q[1], "y", 1);
    show("the new pipe", ep, 8);
    close(q[0]);
    close(q[1]);
    close(p[1]);
    /* Closing the epoll fd drops its entries; the pipe lives on. */
    pipe(q);
    int ep2 = epoll_create1(0);
    add(ep2, q[0], EPOLLIN, 1);
    close(ep2);
    write(q[1], "z", 1);
    char c;
    check(read(q[0], &c, 1) == 1 && c == 'z', "a pipe outlives the epoll that watched it");
    close(q[0]);
    close(q[1]);
    close(ep);
}

static void test_fork(void)
{
    int ep = epoll_create1(0);
    int p[2], q[2];
    pipe(p);
    pipe(q);
    add(ep, p[0], EPOLLIN, 1);
    write(p[1], "x", 1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct epoll_event out[4];
        int n = epoll_wait(ep, out, 4, 1000);
        /* The child's close does not remove the entry: the parent still
         * holds the description. */
        close(p[0]);
        add(ep, q[0], EPOLLIN, 2);
        _exit(n == 1 && out[0].data.u64 == 1 ? 0 : 1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child sees the parent's epoll entries");
    write(q[1], "y", 1);
    show("the parent sees the child's entry, and keeps its own", ep, 8);
    /* Wakeup from another process. */
    char c;
    read(p[0], &c, 1);
    read(q[0], &c, 1);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        usleep(20000);
        write(q[1], "z", 1);
        _exit(0);
    }
    struct epoll_event out[4];
    int n = epoll_wait(ep, out, 4, 5000);
    check(n == 1 && out[0].data.u64 == 2, "epoll_wait(-1-like) woken by a write in another process");
    wait_for(pid, &st, 0);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
    close(ep);
}

static void test_nested(void)
{
    int outer = epoll_create1(0), inner = epoll_create1(0);
    int p[2];
    pipe(p);
    add(inner, p[0], EPOLLIN, 1);
    EXPECT_OK("ctl(ADD an epoll fd to another)", add(outer, inner, EPOLLIN | EPOLLOUT, 2));
    show("outer, nothing ready", outer, 8);
    write(p[1], "x", 1);
    show("outer after a write under inner", outer, 8);
    show("inner", inner, 8);
    struct pollfd pf = { inner, POLLIN | POLLOUT, 0 };
    int r = poll(&pf, 1, 0);
    printf("poll(inner epoll): %d revents 0x%x\n", r, pf.revents);
    fd_set rs, ws;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_SET(inner, &rs);
    FD_SET(inner, &ws);
    struct timeval tv = { 0, 0 };
    r = select(inner + 1, &rs, &ws, NULL, &tv);
    printf("select(inner epoll): %d read %d write %d\n", r, FD_ISSET(inner, &rs), FD_ISSET(inner, &ws));
    char c;
    read(p[0], &c, 1);
    show("outer after draining", outer, 8);
    pf.revents = 0;
    printf("poll(inner epoll) drained: %d\n", poll(&pf, 1, 0));
    /* A sleeping outer wait woken through the inner one. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        usleep(20000);
        write(p[1], "y", 1);
        _exit(0);
    }
    struct epoll_event out[2];
    int n = epoll_wait(outer, out, 2, 5000);
    check(n == 1 && out[0].data.u64 == 2, "a sleeping outer epoll_wait woken through the inner epoll");
    int st;
    wait_for(pid, &st, 0);
    read(p[0], &c, 1);
    EXPECT_ERR(ELOOP, "ctl(ADD outer to inner: a loop)", add(inner, outer, EPOLLIN, 3));
    close(outer);
    close(inner);

    /* Depth: at most 5 epolls on a path, counted up and down. */
    int e[7];
    for (int i = 0; i < 7; i++)
        e[i] = epoll_create1(0);
    add(e[0], p[0], EPOLLIN, 0);
    for (int i = 1; i < 7; i++) {
        errno = 0;
        int rr = add(e[i], e[i - 1], EPOLLIN, i);
        printf("chain: e%d watches e%d: %s\n", i, i - 1, rr == 0 ? "ok" : errname(errno));
    }
    int f[7];
    for (int i = 0; i < 7; i++)
        f[i] = epoll_create1(0);
    for (int i = 0; i < 6; i++) {
        errno = 0;
        int rr = add(f[i], f[i + 1], EPOLLIN, i);
        printf("chain built downwards: f%d watches f%d: %s\n", i, i + 1, rr == 0 ? "ok" : errname(errno));
    }
    /* A loop through three. */
    int a = epoll_create1(0), b = epoll_create1(0), cc = epoll_create1(0);
    add(a, b, EPOLLIN, 0);
    add(b, cc, EPOLLIN, 0);
    EXPECT_ERR(ELOOP, "ctl(ADD closing a loop of three)", add(cc, a, EPOLLIN, 0));
    epoll_ctl(a, EPOLL_CTL_DEL, b, NULL);
    EXPECT_OK("ctl(ADD after the loop was broken)", add(cc, a, EPOLLIN, 0));
    /* Closing the middle of a chain removes it from the chain. */
    close(e[3]);
    errno = 0;
    int rr = add(e[6], e[5], EPOLLIN, 9);
    printf("after closing e3: e6 watches e5 again: %s\n", rr == 0 || errno == EEXIST ? "allowed" : errname(errno));
    for (int i = 0; i < 7; i++) {
        if (i != 3)
            close(e[i]);
        close(f[i]);
    }
    close(a);
    close(b);
    close(cc);
    close(p[0]);
    close(p[1]);
}

static void test_exclusive(void)
{
    /* With nobody waiting in epoll_wait, an event reaches every exclusive
     * entry (each callback "wakes nobody", so the next one is tried). */
    int efd = eventfd(0, EFD_NONBLOCK);
    int e1 = epoll_create1(0), e2 = epoll_create1(0);
    add(e1, efd, EPOLLIN | EPOLLEXCLUSIVE, 1);
    add(e2, efd, EPOLLIN | EPOLLEXCLUSIVE, 2);
    uint64_t one = 1;
    write(efd, &one, 8);
    show("exclusive entry 1, nobody waiting", e1, 8);
    show("exclusive entry 2, nobody waiting", e2, 8);
    close(e1);
    close(e2);
    close(efd);
}

static void test_timeouts_signals(void)
{
    int ep = epoll_create1(0);
    int p[2];
    pipe(p);
    add(ep, p[0], EPOLLIN, 1);
    struct epoll_event out[2];
    long t0 = now_ms();
    int n = epoll_wait(ep, out, 2, 30);
    long dt = now_ms() - t0;
    check(n == 0 && dt >= 30, "epoll_wait 30 ms times out with 0 after >= 30 ms");
    check(dt < 2000, "... and returns within 2 s");
    struct timespec ts = { 0, 20000000 };
    t0 = now_ms();
    n = syscall(SYS_epoll_pwait2, ep, out, 2, &ts, NULL, 8);
    dt = now_ms() - t0;
    check(n == 0 && dt >= 20, "epoll_pwait2 20 ms times out with 0 after >= 20 ms");
    ts.tv_nsec = 0;
    check(syscall(SYS_epoll_pwait2, ep, out, 2, &ts, NULL, 8) == 0, "epoll_pwait2 zero timeout");

    /* A handler interrupts with EINTR even with SA_RESTART. */
    struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 0 }, { 0, 20000 } };
    got_signal = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    errno = 0;
    n = epoll_wait(ep, out, 2, -1);
    check(n == -1 && errno == EINTR && got_signal == 1, "epoll_wait(-1) interrupted by SIGALRM: EINTR despite SA_RESTART");

    /* epoll_pwait: SIGUSR1 blocked, unblocked only while waiting. */
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t block, wait_mask, now;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, NULL);
    got_signal = 0;
    kill(getpid(), SIGUSR1);
    check(got_signal == 0, "SIGUSR1 blocked and pending");
    sigemptyset(&wait_mask);
    errno = 0;
    n = syscall(SYS_epoll_pwait, ep, out, 2, -1, &wait_mask, 8);
    check(n == -1 && errno == EINTR && got_signal == 1, "epoll_pwait with SIGUSR1 unblocked: handler ran, EINTR");
    sigprocmask(SIG_BLOCK, NULL, &now);
    check(sigismember(&now, SIGUSR1), "the mask blocks SIGUSR1 again after epoll_pwait");
    /* An event beats a pending signal. */
    kill(getpid(), SIGUSR1);
    write(p[1], "x", 1);
    got_signal = 0;
    n = syscall(SYS_epoll_pwait, ep, out, 2, -1, &wait_mask, 8);
    check(n == 1 && got_signal == 0, "epoll_pwait with an event ready returns it, the signal stays pending");
    sigset_t pend;
    sigpending(&pend);
    check(sigismember(&pend, SIGUSR1), "SIGUSR1 still pending");
    sigprocmask(SIG_UNBLOCK, &block, NULL);
    check(got_signal == 1, "delivered once unblocked");
    /* A blocked signal does not end the wait. */
    sigprocmask(SIG_BLOCK, &block, NULL);
    char c;
    read(p[0], &c, 1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        kill(getppid(), SIGUSR1);
        usleep(30000);
        write(p[1], "y", 1);
        _exit(0);
    }
    got_signal = 0;
    n = epoll_wait(ep, out, 2, 5000);
    check(n == 1, "a blocked signal does not interrupt epoll_wait");
    int st;
    wait_for(pid, &st, 0);
    sigprocmask(SIG_UNBLOCK, &block, NULL);
    check(got_signal == 1, "the blocked signal is delivered after");
    signal(SIGUSR1, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    close(p[0]);
    close(p[1]);
    close(ep);
}

static void test_fifo(void)
{
    unlink("/tmp/epoll_fifo");
    check(mkfifo("/tmp/epoll_fifo", 0600) == 0, "mkfifo");
    int rw = open("/tmp/epoll_fifo", O_RDWR | O_NONBLOCK);
    int ep = epoll_create1(0);
    add(ep, rw, EPOLLIN | EPOLLOUT | EPOLLET, 31);
    show("a FIFO opened O_RDWR, empty", ep, 8);
    int w = open("/tmp/epoll_fifo", O_WRONLY | O_NONBLOCK);
    write(w, "abc", 3);
    show("after a write through a second open", ep, 8);
    char b[8];
    read(rw, b, sizeof b);
    close(w);
    show("read back, the second writer closed", ep, 8);
    close(rw);
    show("closed: the entry is gone", ep, 8);
    close(ep);
    unlink("/tmp/epoll_fifo");
}

static void test_poll_regular(void)
{
    /* For comparison: poll() on a file epoll refuses says it is ready. */
    int reg = open("/proc/self/exe", O_RDONLY);
    struct pollfd pf = { reg, POLLIN | POLLOUT, 0 };
    poll(&pf, 1, 0);
    printf("poll(regular file): revents 0x%x\n", pf.revents);
    close(reg);
}

int main(void)
{
    t_init("epoll");
    test_create();
    test_ctl_errors();
    test_wait_errors();
    test_level_edge_oneshot();
    test_round_robin();
    test_close();
    test_fork();
    test_nested();
    test_exclusive();
    test_timeouts_signals();
    test_fifo();
    test_poll_regular();
    return t_done();
}
