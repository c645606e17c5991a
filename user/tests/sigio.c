/*
 * sigio: signal-driven I/O.  O_ASYNC (by F_SETFL and by FIOASYNC) on
 * pipe ends with an owner from F_SETOWN: plain SIGIO (SI_KERNEL), or the
 * F_SETSIG signal with si_code POLL_IN/POLL_OUT, si_band and si_fd;
 * nothing without an owner, after O_ASYNC is cleared, or on a regular
 * file (where O_ASYNC is only a flag); another process as the owner;
 * the hang-up of the last writer. Of the event files only inotify has
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
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

static volatile sig_atomic_t count, last_sig, last_code, last_fd;
static volatile long last_band;

static void on_signal(int s, siginfo_t *si, void *uc)
{
    (void)uc;
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
    case POLL_HUP: return "POLL_HUP";
    default: return "other";
    }
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
    event_files();
    return t_done();
}
