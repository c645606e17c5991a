/*
 * sigio: signal-driven I/O.  O_ASYNC (by F_SETFL and by FIOASYNC) on
 * pipe ends with an owner from F_SETOWN: plain SIGIO (SI_KERNEL), or the
 * F_SETSIG signal with si_code POLL_IN/POLL_OUT, si_band and si_fd;
 * nothing without an owner, after O_ASYNC is cleared, or on a regular
 * file (where O_ASYNC is only a flag); another process as the owner;
 * the hang-up of the last writer.
 * AF_UNIX sockets follow Linux's socket rules (sock_wake_async): POLL_IN
 * for data, a connection or the peer's SHUT_WR; POLL_OUT only after a
 * writer found the buffer full; POLL_HUP when the peer goes; POLL_ERR for
 * a datagram peer's ECONNRESET; nothing while a reader sleeps for data.
 * A socket's owner may also be set and read by ioctl (FIOSETOWN,
 * SIOCSPGRP, FIOGETOWN, SIOCGPGRP); a pipe refuses those (ENOTTY).
 * The other socket ioctls as Linux gives them on AF_UNIX: FIOASYNC off,
 * FIONBIO both ways, SIOCINQ (a stream's bytes, a datagram's first
 * length, EINVAL on a listener), SIOCOUTQ, ENOTTY for a tty request.
 * Of the event files only inotify has
 * signal-driven I/O (a signal per queued event, none for a merged one,
 * one for IN_IGNORED); eventfd, timerfd, signalfd and epoll keep O_ASYNC
 * off and refuse FIOASYNC, as on Linux.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stddef.h>
#include <sys/un.h>

#ifndef SIOCINQ
#define SIOCINQ FIONREAD
#endif
#ifndef SIOCOUTQ
#define SIOCOUTQ TIOCOUTQ
#endif
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

static volatile sig_atomic_t count, last_sig, last_code, last_fd;
static volatile long last_band;
/* Every signal's reason, in order (socket cases). */
static volatile sig_atomic_t codes[64];

static void on_signal(int s, siginfo_t *si, void *uc)
{
    (void)uc;
    if (count < 64)
        codes[count] = si->si_code;
    count++;
    last_sig = s;
    last_code = si->si_code;
    last_fd = si->si_fd;
    last_band = si->si_band;
}

static void reset(void)
{
    count = 0;
    last_sig = last_code = last_fd = 0;
    last_band = 0;
}

/* Waits up to `ms` for a signal; returns whether one came. */
static int wait_signal(int ms)
{
    for (int i = 0; i < ms / 10 && count == 0; i++)
        sleep_ms(10);
    return count > 0;
}

static const char *code_name(int code)
{
    switch (code) {
    case SI_KERNEL: return "SI_KERNEL";
    case POLL_IN: return "POLL_IN";
    case POLL_OUT: return "POLL_OUT";
    case POLL_ERR: return "POLL_ERR";
    case POLL_HUP: return "POLL_HUP";
    default: return "other";
    }
}

/* Waits up to a second for `want` signals and 100 ms more for any extra
 * one, then prints what came: "what: POLL_IN POLL_OUT" (or "none"). */
static void expect_codes(const char *what, int want)
{
    for (int i = 0; i < 100 && count < want; i++)
        sleep_ms(10);
    sleep_ms(100);
    printf("%s:", what);
    if (count == 0)
        printf(" none");
    for (int i = 0; i < count && i < 64; i++)
        printf(" %s", code_name(codes[i]));
    printf("\n");
}

/* O_ASYNC on `fd` with this process as owner and SIGRTMIN as signal. */
static void async_on(int fd)
{
    fcntl(fd, F_SETOWN, getpid());
    fcntl(fd, F_SETSIG, SIGRTMIN);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC);
}

static void sockets(void)
{
    static char buf[65536];
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    check(fcntl(sv[0], F_SETOWN, getpid()) == 0 && fcntl(sv[0], F_SETSIG, SIGRTMIN) == 0, "F_SETOWN, F_SETSIG on a socket");
    check(fcntl(sv[0], F_SETFL, O_ASYNC | O_NONBLOCK) == 0, "O_ASYNC on a socket");
    printf("socket F_GETFL has O_ASYNC %d\n", (fcntl(sv[0], F_GETFL) & O_ASYNC) != 0);
    reset();
    write(sv[1], "x", 1);
    expect_codes("socket, peer writes", 1);
    printf("band 0x%lx si_fd is the socket %d\n", last_band, last_fd == sv[0]);
    reset();
    read(sv[0], buf, sizeof buf);
    write(sv[0], "y", 1);
    read(sv[1], buf, sizeof buf);
    expect_codes("socket reads, writes, peer reads", 0);

    /* Room only counts after a writer found none. */
    int n = 0;
    while (write(sv[0], buf, sizeof buf) > 0)
        n++;
    reset();
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    while (read(sv[1], buf, sizeof buf) > 0)
        ;
    expect_codes("full socket drained by its peer", 1);
    printf("band 0x%lx\n", last_band);
    reset();
    write(sv[0], "z", 1);
    read(sv[1], buf, sizeof buf);
    expect_codes("and after one more write and read", 0);

    reset();
    shutdown(sv[1], SHUT_WR);
    expect_codes("peer's SHUT_WR", 1);
    reset();
    close(sv[1]);
    expect_codes("peer's close", 1);
    printf("band 0x%lx\n", last_band);
    close(sv[0]);

    /* A reader asleep for data holds POLL_IN back. */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    async_on(sv[0]);
    int ready[2];
    pipe(ready);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        write(ready[1], "r", 1);
        _exit(read(sv[0], buf, 1) == 1 ? 0 : 1);
    }
    char c;
    read(ready[0], &c, 1);
    sleep_ms(200);
    reset();
    write(sv[1], "w", 1);
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sleeping reader got the byte");
    expect_codes("a write to a sleeping reader", 0);
    close(sv[0]);
    close(sv[1]);
    close(ready[0]);
    close(ready[1]);

    /* A listener: a connection is POLL_IN; plain SIGIO without F_SETSIG. */
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    memcpy(a.sun_path, "\0kiln-sigio", 11);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 11);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    bind(l, (struct sockaddr *)&a, alen);
    listen(l, 4);
    fcntl(l, F_SETOWN, getpid());
    fcntl(l, F_SETFL, O_ASYNC);
    reset();
    int cl = socket(AF_UNIX, SOCK_STREAM, 0);
    check(connect(cl, (struct sockaddr *)&a, alen) == 0, "connect to the listener");
    expect_codes("listener, a connection", 1);
    printf("signal %s\n", signame(last_sig));
    reset();
    int acc = accept(l, NULL, NULL);
    expect_codes("accept", 0);
    close(acc);
    close(cl);
    close(l);

    /* Datagrams: one to a bound receiver; a connected peer's reset. */
    int r = socket(AF_UNIX, SOCK_DGRAM, 0), s2 = socket(AF_UNIX, SOCK_DGRAM, 0);
    bind(r, (struct sockaddr *)&a, alen);
    async_on(r);
    reset();
    sendto(s2, "d", 1, 0, (struct sockaddr *)&a, alen);
    expect_codes("datagram to a bound socket", 1);
    recv(r, buf, sizeof buf, 0);
    struct sockaddr_un b = { .sun_family = AF_UNIX };
    memcpy(b.sun_path, "\0kiln-sigio2", 12);
    socklen_t blen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 12);
    bind(s2, (struct sockaddr *)&b, blen);
    connect(r, (struct sockaddr *)&b, blen);
    connect(s2, (struct sockaddr *)&a, alen);
    send(r, "e", 1, 0);
    reset();
    struct sockaddr unspec = { .sa_family = AF_UNSPEC };
    connect(s2, &unspec, sizeof unspec);
    expect_codes("peer disconnects with our datagram unread", 1);
    printf("band 0x%lx\n", last_band);
    int err = 0;
    socklen_t elen = sizeof err;
    getsockopt(r, SOL_SOCKET, SO_ERROR, &err, &elen);
    printf("SO_ERROR is ECONNRESET %d\n", err == ECONNRESET);
    close(r);
    close(s2);

    /* The owner by ioctl, as sockets allow (FIOSETOWN/SIOCSPGRP). */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int who = getpid(), got = 0;
    check(ioctl(sv[0], FIOSETOWN, &who) == 0, "FIOSETOWN on a socket");
    ioctl(sv[0], FIOGETOWN, &got);
    printf("FIOGETOWN is me %d, F_GETOWN is me %d\n", got == getpid(), fcntl(sv[0], F_GETOWN) == getpid());
    who = -getpgrp();
    check(ioctl(sv[0], SIOCSPGRP, &who) == 0, "SIOCSPGRP to my group");
    ioctl(sv[0], SIOCGPGRP, &got);
    printf("SIOCGPGRP is minus my group %d\n", got == -getpgrp());
    who = 999999;
    EXPECT_ERR(ESRCH, "FIOSETOWN to no process", ioctl(sv[0], FIOSETOWN, &who));
    EXPECT_ERR(EFAULT, "FIOSETOWN from a bad address", ioctl(sv[0], FIOSETOWN, BAD_PTR));
    who = getpid();
    ioctl(sv[0], FIOSETOWN, &who);
    int on = 1;
    check(ioctl(sv[0], FIOASYNC, &on) == 0, "FIOASYNC on a socket");
    reset();
    write(sv[1], "o", 1);
    expect_codes("owner set by ioctl, plain SIGIO", 1);
    printf("signal %s\n", signame(last_sig));
    int off = 0;
    check(ioctl(sv[0], FIOASYNC, &off) == 0, "FIOASYNC off on a socket");
    printf("F_GETFL has O_ASYNC after FIOASYNC off %d\n", (fcntl(sv[0], F_GETFL) & O_ASYNC) != 0);
    reset();
    write(sv[1], "p", 1);
    expect_codes("after FIOASYNC off", 0);

    /* Byte counts (SIOCINQ is FIONREAD, SIOCOUTQ is TIOCOUTQ). */
    int q = -1;
    check(ioctl(sv[0], SIOCINQ, &q) == 0, "SIOCINQ");
    printf("SIOCINQ %d\n", q);
    check(ioctl(sv[1], SIOCOUTQ, &q) == 0, "SIOCOUTQ");
    printf("SIOCOUTQ holds the unread bytes %d\n", q > 0);
    read(sv[0], buf, sizeof buf);
    ioctl(sv[0], SIOCINQ, &q);
    printf("SIOCINQ after read %d\n", q);
    ioctl(sv[1], SIOCOUTQ, &q);
    printf("SIOCOUTQ after read %d\n", q);
    EXPECT_ERR(EFAULT, "SIOCINQ to a bad address", ioctl(sv[0], SIOCINQ, BAD_PTR));
    EXPECT_ERR(ENOTTY, "TCGETS on a socket", ioctl(sv[0], TCGETS, buf));

    /* FIONBIO is O_NONBLOCK, both ways. */
    on = 1;
    check(ioctl(sv[0], FIONBIO, &on) == 0, "FIONBIO on");
    printf("F_GETFL has O_NONBLOCK %d\n", (fcntl(sv[0], F_GETFL) & O_NONBLOCK) != 0);
    EXPECT_ERR(EAGAIN, "read with FIONBIO set", read(sv[0], buf, 1));
    on = 0;
    check(ioctl(sv[0], FIONBIO, &on) == 0, "FIONBIO off");
    printf("F_GETFL has O_NONBLOCK after off %d\n", (fcntl(sv[0], F_GETFL) & O_NONBLOCK) != 0);

    /* A datagram socket's SIOCINQ is its first datagram's length. */
    int dv[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, dv);
    send(dv[1], "abc", 3, 0);
    send(dv[1], "defgh", 5, 0);
    ioctl(dv[0], SIOCINQ, &q);
    printf("datagram SIOCINQ %d\n", q);
    close(dv[0]);
    close(dv[1]);

    /* A listener has no byte queue. */
    int l2 = socket(AF_UNIX, SOCK_STREAM, 0);
    sa_family_t fam = AF_UNIX;
    bind(l2, (struct sockaddr *)&fam, sizeof fam);
    check(listen(l2, 1) == 0, "listen after autobind");
    EXPECT_ERR(EINVAL, "SIOCINQ on a listener", ioctl(l2, SIOCINQ, &q));
    q = -1;
    check(ioctl(l2, SIOCOUTQ, &q) == 0, "SIOCOUTQ on a listener");
    printf("listener SIOCOUTQ %d\n", q);
    close(l2);

    int p2[2];
    pipe(p2);
    EXPECT_ERR(ENOTTY, "FIOSETOWN on a pipe", ioctl(p2[0], FIOSETOWN, &who));
    close(p2[0]);
    close(p2[1]);
    close(sv[0]);
    close(sv[1]);
    (void)n;
}

/* inotify signals each event it queues; the other event files have no
 * signal-driven I/O. */
static void event_files(void)
{
    mkdir("/tmp/sigio-dir", 0755);
    close(open("/tmp/sigio-dir/f", O_CREAT | O_WRONLY, 0644));
    int in = inotify_init1(IN_NONBLOCK);
    int wd = inotify_add_watch(in, "/tmp/sigio-dir/f", IN_MODIFY);
    fcntl(in, F_SETOWN, getpid());
    fcntl(in, F_SETSIG, SIGRTMIN);
    check(fcntl(in, F_SETFL, O_ASYNC | O_NONBLOCK) == 0 && (fcntl(in, F_GETFL) & O_ASYNC), "O_ASYNC on inotify stays on");
    int f = open("/tmp/sigio-dir/f", O_WRONLY);
    reset();
    write(f, "a", 1);
    check(wait_signal(1000), "an inotify event sends the F_SETSIG signal");
    sleep_ms(50);
    printf("inotify: %d signal, code %s band 0x%lx si_fd is the inotify fd %d\n", count, code_name(last_code), last_band,
           last_fd == in);
    reset();
    write(f, "b", 1);
    check(!wait_signal(100), "an event merged into the last one sends nothing");
    char buf[4096];
    read(in, buf, sizeof buf);
    reset();
    write(f, "c", 1);
    check(wait_signal(1000), "after a read, the next event signals again");
    read(in, buf, sizeof buf);
    reset();
    inotify_rm_watch(in, wd);
    check(wait_signal(1000), "IN_IGNORED from rm_watch signals too");
    close(f);
    close(in);
    unlink("/tmp/sigio-dir/f");
    rmdir("/tmp/sigio-dir");

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR2);
    struct {
        const char *name;
        int fd;
    } others[] = {
        { "eventfd", eventfd(0, 0) },
        { "timerfd", timerfd_create(CLOCK_MONOTONIC, 0) },
        { "signalfd", signalfd(-1, &mask, 0) },
        { "epoll", epoll_create1(0) },
    };
    for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++) {
        int fd = others[i].fd;
        fcntl(fd, F_SETOWN, getpid());
        int ok = fcntl(fd, F_SETFL, O_ASYNC) == 0;
        printf("%s: F_SETFL O_ASYNC succeeds %d, the flag stays off %d\n", others[i].name, ok,
               (fcntl(fd, F_GETFL) & O_ASYNC) == 0);
        int on = 1;
        char what[64];
        snprintf(what, sizeof what, "FIOASYNC on %s", others[i].name);
        EXPECT_ERR(ENOTTY, what, ioctl(fd, FIOASYNC, &on));
    }
    uint64_t one = 1;
    reset();
    write(others[0].fd, &one, sizeof one);
    check(!wait_signal(100), "an eventfd write sends nothing");
    for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++)
        close(others[i].fd);
}

int main(void)
{
    t_init("sigio");
    struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
    sigaction(SIGIO, &sa, NULL);
    sigaction(SIGRTMIN, &sa, NULL);

    int p[2];
    pipe(p);
    check(fcntl(p[0], F_SETFL, O_ASYNC) == 0, "O_ASYNC on the read end, no owner yet");
    write(p[1], "x", 1);
    check(!wait_signal(100), "no owner: no signal");
    char buf[70000];
    read(p[0], buf, sizeof buf);
    check(fcntl(p[0], F_SETOWN, getpid()) == 0, "F_SETOWN(getpid())");
    reset();
    write(p[1], "x", 1);
    check(wait_signal(1000), "a write to the pipe sends SIGIO");
    printf("signal %s code %s\n", signame(last_sig), code_name(last_code));
    read(p[0], buf, sizeof buf);

    check(fcntl(p[0], F_SETSIG, SIGRTMIN) == 0, "F_SETSIG(SIGRTMIN)");
    reset();
    write(p[1], "y", 1);
    check(wait_signal(1000), "the F_SETSIG signal comes");
    printf("signal is SIGRTMIN %d code %s band 0x%lx si_fd is the read end %d\n", last_sig == SIGRTMIN,
           code_name(last_code), last_band, last_fd == p[0]);
    read(p[0], buf, sizeof buf);

    int flags = fcntl(p[0], F_GETFL);
    check(fcntl(p[0], F_SETFL, flags & ~O_ASYNC) == 0, "clear O_ASYNC");
    reset();
    write(p[1], "z", 1);
    check(!wait_signal(100), "no signal once O_ASYNC is off");
    read(p[0], buf, sizeof buf);

    int on = 1;
    check(ioctl(p[0], FIOASYNC, &on) == 0 && (fcntl(p[0], F_GETFL) & O_ASYNC), "FIOASYNC turns it on");
    reset();
    write(p[1], "w", 1);
    check(wait_signal(1000), "and signals come again");
    read(p[0], buf, sizeof buf);

    /* The write end: room after a read. */
    fcntl(p[1], F_SETOWN, getpid());
    fcntl(p[1], F_SETSIG, SIGRTMIN);
    fcntl(p[1], F_SETFL, O_ASYNC | O_NONBLOCK);
    static char fill[65536];
    while (write(p[1], fill, sizeof fill) > 0)
        ;
    sleep_ms(50);
    reset();
    read(p[0], buf, 4096);
    check(wait_signal(1000), "a read from a full pipe signals the write end");
    printf("write end: code %s band 0x%lx si_fd is the write end %d\n", code_name(last_code), last_band,
           last_fd == p[1]);
    while (read(p[0], buf, sizeof buf) == (ssize_t)sizeof buf)
        ;
    fcntl(p[1], F_SETFL, O_NONBLOCK);

    /* The last writer's close is a hang-up for the reader. */
    reset();
    close(p[1]);
    check(wait_signal(1000), "closing the write end signals the reader");
    printf("hang-up: code %s\n", code_name(last_code));
    close(p[0]);

    /* Another process as the owner. */
    pipe(p);
    int sync[2];
    pipe(sync);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        reset();
        write(sync[1], "r", 1);
        int got = wait_signal(2000);
        _exit(got && last_sig == SIGIO ? 0 : 1);
    }
    char c;
    read(sync[0], &c, 1);
    fcntl(p[0], F_SETOWN, pid);
    fcntl(p[0], F_SETFL, O_ASYNC);
    reset();
    write(p[1], "c", 1);
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the owning child got SIGIO");
    check(!wait_signal(100), "the parent got nothing");
    close(p[0]);
    close(p[1]);

    /* A regular file keeps O_ASYNC as a flag only. */
    int fd = open("/tmp/sigio-file", O_RDWR | O_CREAT | O_TRUNC, 0600);
    fcntl(fd, F_SETOWN, getpid());
    check(fcntl(fd, F_SETFL, O_ASYNC) == 0, "F_SETFL O_ASYNC on a regular file succeeds");
    printf("but the flag stays off: F_GETFL has O_ASYNC %d\n", (fcntl(fd, F_GETFL) & O_ASYNC) != 0);
    EXPECT_ERR(ENOTTY, "FIOASYNC on a regular file", ioctl(fd, FIOASYNC, &on));
    reset();
    write(fd, "data", 4);
    check(!wait_signal(100), "a regular file sends nothing");
    close(fd);
    fd = open("/tmp/sigio-file", O_RDWR | O_ASYNC);
    printf("open(O_ASYNC) keeps the flag: %d\n", (fcntl(fd, F_GETFL) & O_ASYNC) != 0);
    close(fd);
    unlink("/tmp/sigio-file");
    sockets();
    event_files();
    return t_done();
}
