/*
 * pty: pseudo-terminals through /dev/ptmx and devpts.
 *
 * posix_openpt/grantpt/unlockpt/ptsname, the slave's default termios,
 * canonical and raw I/O both ways with echo and line editing, ^C and ^Z
 * to the slave's foreground group, packet mode, window size and
 * SIGWINCH, controlling terminals (open, TIOCSCTTY, TIOCNOTTY, /dev/tty,
 * /proc/self/stat), hangup when the master closes, EIO once the slave is
 * closed, poll readiness, TIOCGPTPEER and a second devpts instance.
 *
 * Linux moves pty data through a work queue, so every read of data the
 * other side just wrote waits for it (poll with a deadline) instead of
 * expecting it at once.
 */
#include "common.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* Reads exactly `want` bytes (or what came within 3 s). */
static int read_wait(int fd, char *buf, int want)
{
    int got = 0;
    while (got < want) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 3000) <= 0)
            break;
        ssize_t n = read(fd, buf + got, want - got);
        if (n <= 0)
            break;
        got += n;
    }
    buf[got < 0 ? 0 : got] = 0;
    return got;
}

/* Whether `fd` becomes readable within `ms`. */
static int readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void show(const char *what, const char *s, int n)
{
    printf("%s: \"", what);
    for (int i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '\n')
            printf("\\n");
        else if (c == '\r')
            printf("\\r");
        else if (c < 0x20 || c >= 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    printf("\"\n");
}

/* A new pair: master fd, slave opened with `slave_flags` (or -1: not opened). */
static int open_pair(int *slave, int slave_flags)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) || unlockpt(m))
        return -1;
    if (slave) {
        *slave = slave_flags < 0 ? -1 : open(ptsname(m), slave_flags);
    }
    return m;
}

static void test_open(void)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    check(m >= 0, "posix_openpt");
    check(isatty(m), "the master is a terminal");
    char *name = ptsname(m);
    check(name && strncmp(name, "/dev/pts/", 9) == 0, "ptsname is /dev/pts/N");
    unsigned n = 99999;
    check(ioctl(m, TIOCGPTN, &n) == 0 && name && (unsigned)atoi(name + 9) == n, "TIOCGPTN matches ptsname");
    int locked = -1;
    check(ioctl(m, TIOCGPTLCK, &locked) == 0 && locked == 1, "a new pty is locked");
    EXPECT_ERR(EIO, "open(locked slave)", open(name, O_RDWR | O_NOCTTY));
    EXPECT_ERR(EIO, "TIOCGPTPEER on a locked pty", ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY));
    check(grantpt(m) == 0, "grantpt");
    check(unlockpt(m) == 0, "unlockpt");
    check(ioctl(m, TIOCGPTLCK, &locked) == 0 && locked == 0, "unlocked");
    struct stat st;
    check(stat(name, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 136 + n / 256 &&
              minor(st.st_rdev) == n % 256,
          "the slave is char device 136+N/256:N%%256");
    printf("slave mode %o uid %u\n", st.st_mode & 07777, st.st_uid);
    int s = open(name, O_RDWR | O_NOCTTY);
    check(s >= 0 && isatty(s), "open(slave)");
    char *tn = ttyname(s);
    check(tn && strcmp(tn, name) == 0, "ttyname(slave) is its ptsname");
    EXPECT_ERR(ENOTTY, "TIOCGPTN on the slave", ioctl(s, TIOCGPTN, &n));
    int peer = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    check(peer >= 0 && isatty(peer), "TIOCGPTPEER opens the slave");
    tn = ttyname(peer);
    check(tn && strcmp(tn, name) == 0, "the peer is the same slave");
    check(fcntl(peer, F_GETFD) == FD_CLOEXEC, "TIOCGPTPEER honours O_CLOEXEC");
    EXPECT_ERR(EIO, "TIOCGPTPEER on the slave", ioctl(s, TIOCGPTPEER, O_RDWR));
    int pipefd[2];
    pipe(pipefd);
    EXPECT_ERR(ENOTTY, "TIOCGPTPEER on a pipe", ioctl(pipefd[0], TIOCGPTPEER, O_RDWR));
    close(pipefd[0]);
    close(pipefd[1]);
    close(peer);

    struct termios ts, tm;
    check(tcgetattr(s, &ts) == 0 && tcgetattr(m, &tm) == 0, "tcgetattr on both sides");
    printf("slave termios iflag %#o oflag %#o cflag %#o lflag %#o\n", ts.c_iflag, ts.c_oflag, ts.c_cflag & ~CBAUD,
           ts.c_lflag);
    check(memcmp(&ts, &tm, sizeof ts) == 0, "the master reports the slave's termios");
    printf("VINTR %d VEOF %d VERASE %d VMIN %d\n", ts.c_cc[VINTR], ts.c_cc[VEOF], ts.c_cc[VERASE], ts.c_cc[VMIN]);
    struct winsize w;
    check(ioctl(s, TIOCGWINSZ, &w) == 0 && w.ws_row == 0 && w.ws_col == 0, "a new pty is 0x0");
    close(s);
    close(m);
    struct stat st2;
    EXPECT_ERR(ENOENT, "stat(slave) after the master closed", stat(name, &st2));
}

static void test_canonical(void)
{
    int s;
    int m = open_pair(&s, O_RDWR | O_NOCTTY);
    char buf[256];
    int n;

    write(m, "abc\n", 4);
    n = read_wait(s, buf, 4);
    show("slave reads", buf, n);
    n = read_wait(m, buf, 5);
    show("echo", buf, n);

    write(m, "ab\x7f" "c\n", 5);
    n = read_wait(s, buf, 3);
    show("erase: slave reads", buf, n);
    n = read_wait(m, buf, 9);
    show("erase: echo", buf, n);

    write(m, "xyz\x15ok\n", 7);
    n = read_wait(s, buf, 3);
    show("kill: slave reads", buf, n);
    n = read_wait(m, buf, 3 + 9 + 4);
    show("kill: echo", buf, n);

    write(m, "one two\x17three\n", 14);
    n = read_wait(s, buf, 10);
    show("werase: slave reads", buf, n);
    n = read_wait(m, buf, 7 + 12 + 7);
    show("werase: echo", buf, n);

    write(m, "q\x01\n", 3);
    n = read_wait(s, buf, 3);
    show("control char: slave reads", buf, n);
    n = read_wait(m, buf, 5);
    show("control char: echo", buf, n);

    /* A partial line is not readable; ^D hands it over without a newline. */
    write(m, "par", 3);
    n = read_wait(m, buf, 3);
    check(!readable(s, 200), "a partial line is not readable");
    write(m, "\x04", 1);
    n = read(s, buf, sizeof buf);
    show("^D: slave reads", buf, n < 0 ? 0 : n);
    write(m, "\x04", 1);
    check(readable(s, 3000), "^D at the start of a line is readable");
    n = read(s, buf, sizeof buf);
    check(n == 0, "^D at the start of a line reads as end of file");

    /* Reads stop at a line end; a short buffer takes the line in pieces. */
    write(m, "l1\nl2\n", 6);
    n = read_wait(m, buf, 8);
    check(readable(s, 3000), "lines are readable");
    n = read(s, buf, sizeof buf);
    show("first read", buf, n);
    n = read(s, buf, 1);
    show("one byte of the second line", buf, n);
    n = read(s, buf, sizeof buf);
    show("the rest", buf, n);

    write(s, "out\nput", 7);
    n = read_wait(m, buf, 8);
    show("master reads (ONLCR)", buf, n);
    int avail = -1;
    write(s, "zz", 2);
    readable(m, 3000);
    check(ioctl(m, FIONREAD, &avail) == 0 && avail == 2, "FIONREAD on the master");
    read_wait(m, buf, 2);

    /* No echo, ECHONL. */
    struct termios t;
    tcgetattr(s, &t);
    t.c_lflag &= ~ECHO;
    t.c_lflag |= ECHONL;
    tcsetattr(s, TCSANOW, &t);
    write(m, "secret\n", 7);
    n = read_wait(s, buf, 7);
    show("no echo: slave reads", buf, n);
    n = read_wait(m, buf, 2);
    show("no echo: ECHONL echo", buf, n);
    check(!readable(m, 100), "nothing else echoed");
    close(s);
    close(m);
}

static void test_raw(void)
{
    int s;
    int m = open_pair(&s, O_RDWR | O_NOCTTY);
    char buf[64];
    int n;
    struct termios t;
    tcgetattr(s, &t);
    cfmakeraw(&t);
    check(tcsetattr(s, TCSANOW, &t) == 0, "cfmakeraw");
    struct termios back;
    tcgetattr(m, &back);
    printf("raw termios iflag %#o oflag %#o lflag %#o VMIN %d VTIME %d\n", back.c_iflag, back.c_oflag,
           back.c_lflag, back.c_cc[VMIN], back.c_cc[VTIME]);
    write(m, "\x03x\r\x7f", 4);
    n = read_wait(s, buf, 4);
    show("raw: slave reads", buf, n);
    check(!readable(m, 100), "raw: no echo");
    write(s, "a\nb", 3);
    n = read_wait(m, buf, 3);
    show("raw: master reads", buf, n);

    /* VMIN 0, VTIME 0: a read returns at once. */
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    tcsetattr(s, TCSANOW, &t);
    check(read(s, buf, sizeof buf) == 0, "VMIN=0 VTIME=0: read returns 0 at once");
    /* VMIN 0, VTIME 1: waits a tenth of a second, then 0. */
    t.c_cc[VTIME] = 1;
    tcsetattr(s, TCSANOW, &t);
    check(read(s, buf, sizeof buf) == 0, "VMIN=0 VTIME=1: read times out with 0");

    /* Echo in raw mode shows control characters as ^X. */
    t.c_lflag |= ECHO | ECHOCTL;
    t.c_cc[VMIN] = 1;
    tcsetattr(s, TCSANOW, &t);
    write(m, "k\x01", 2);
    n = read_wait(s, buf, 2);
    show("raw+echo: slave reads", buf, n);
    n = read_wait(m, buf, 3);
    show("raw+echo: echo", buf, n);

    /* Back to canonical: the bytes typed in raw mode are still there. */
    t.c_lflag |= ICANON;
    t.c_lflag &= ~ECHO;
    tcsetattr(s, TCSANOW, &t);
    write(m, "cooked\n", 7);
    n = read_wait(s, buf, 7);
    show("canonical again", buf, n);
    close(s);
    close(m);
}

static volatile sig_atomic_t got_sig[65];

static void on_sig(int s)
{
    got_sig[s]++;
}

/*
 * Runs `child` in a new session whose controlling terminal is the slave
 * of `m`; returns the child's exit status. The child writes one byte to
 * `sync` when it is ready for the parent's `parent` step.
 */
static int in_session(int m, int (*child)(int slave, int sync_fd), void (*parent)(int m, pid_t pid))
{
    int p[2];
    pipe(p);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        setsid();
        int s = open(ptsname(m), O_RDWR); /* no O_NOCTTY: becomes our terminal */
        close(m);
        _exit(child(s, p[1]));
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) == 1 && parent)
        parent(m, pid);
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static int child_signals(int s, int sync_fd)
{
    int bad = 0;
    signal(SIGINT, on_sig);
    signal(SIGTSTP, on_sig);
    signal(SIGQUIT, on_sig);
    pid_t sid = -1, pg = -1;
    if (ioctl(s, TIOCGSID, &sid) != 0 || sid != getpid())
        bad |= 1;
    if (tcgetpgrp(s) != getpid())
        bad |= 2;
    if (tcgetsid(s) != getpid())
        bad |= 4;
    (void)pg;
    /* The typed line before ^C is flushed. */
    write(sync_fd, "r", 1);
    for (int i = 0; i < 300 && !(got_sig[SIGINT] && got_sig[SIGTSTP] && got_sig[SIGQUIT]); i++)
        usleep(10000);
    if (got_sig[SIGINT] != 1 || got_sig[SIGTSTP] != 1 || got_sig[SIGQUIT] != 1)
        bad |= 8;
    char buf[32];
    int n = read(s, buf, sizeof buf);
    if (n != 6 || memcmp(buf, "after\n", 6) != 0)
        bad |= 16;
    return bad;
}

static void parent_signals(int m, pid_t pid)
{
    pid_t fg = -1;
    check(ioctl(m, TIOCGPGRP, &fg) == 0 && fg == pid, "TIOCGPGRP through the master: the child's group");
    char buf[64];
    write(m, "lost", 4);
    read_wait(m, buf, 4);
    write(m, "\x03", 1);
    int n = read_wait(m, buf, 2);
    show("^C echo", buf, n);
    write(m, "\x1a", 1);
    n = read_wait(m, buf, 2);
    show("^Z echo", buf, n);
    write(m, "\x1c", 1);
    n = read_wait(m, buf, 3);
    show("^\\ echo", buf, n);
    write(m, "after\n", 6);
    read_wait(m, buf, 7);
}

static void test_signals(void)
{
    int m = open_pair(NULL, 0);
    int st = in_session(m, child_signals, parent_signals);
    printf("signals child: %s\n", status_str(st));
    close(m);
}

static int child_ctty(int s, int sync_fd)
{
    int bad = 0;
    (void)sync_fd;
    /* /dev/tty is the slave. */
    int t = open("/dev/tty", O_RDWR);
    if (t < 0 || !isatty(t))
        bad |= 1;
    close(t);
    /* /proc/self/stat: tty_nr is the slave's device, tpgid our group. */
    struct stat st;
    fstat(s, &st);
    FILE *f = fopen("/proc/self/stat", "r");
    int tty_nr = -1, tpgid = -2;
    if (f) {
        char line[512];
        if (fgets(line, sizeof line, f)) {
            char *p = strrchr(line, ')');
            if (p)
                sscanf(p + 2, "%*c %*d %*d %*d %d %d", &tty_nr, &tpgid);
        }
        fclose(f);
    }
    if ((unsigned)tty_nr != ((minor(st.st_rdev) & 0xff) | (major(st.st_rdev) << 8)) || tpgid != getpid())
        bad |= 2;
    /* A session leader that already has a terminal cannot take another. */
    int m2 = posix_openpt(O_RDWR | O_NOCTTY);
    unlockpt(m2);
    int s2 = open(ptsname(m2), O_RDWR | O_NOCTTY);
    if (ioctl(s2, TIOCSCTTY, 0) != -1 || errno != EPERM)
        bad |= 4;
    /* TIOCSCTTY on our own terminal is a no-op success. */
    if (ioctl(s, TIOCSCTTY, 0) != 0)
        bad |= 8;
    /* TIOCNOTTY on a terminal that is not ours: ENOTTY. */
    if (ioctl(s2, TIOCNOTTY) != -1 || errno != ENOTTY)
        bad |= 16;
    /* Give ours up: SIGHUP to our (foreground) group, then no terminal. */
    signal(SIGHUP, on_sig);
    signal(SIGCONT, on_sig);
    if (ioctl(s, TIOCNOTTY) != 0)
        bad |= 32;
    if (got_sig[SIGHUP] != 1 || got_sig[SIGCONT] != 1)
        bad |= 64;
    if (open("/dev/tty", O_RDWR) != -1 || errno != ENXIO)
        bad |= 128;
    pid_t sid;
    if (ioctl(s, TIOCGSID, &sid) != -1 || errno != ENOTTY)
        bad |= 256;
    /* Now TIOCSCTTY takes the second pty; the first is free again. */
    if (ioctl(s2, TIOCSCTTY, 0) != 0)
        bad |= 512;
    if (ioctl(s2, TIOCGSID, &sid) != 0 || sid != getpid())
        bad |= 1024;
    if (tcgetpgrp(s) != -1 || errno != ENOTTY)
        bad |= 2048;
    close(s2);
    close(m2);
    return bad;
}

static void test_ctty(void)
{
    int m = open_pair(NULL, 0);
    int st = in_session(m, child_ctty, NULL);
    printf("controlling terminal child: %s\n", status_str(st));
    pid_t fg = -1;
    check(ioctl(m, TIOCGPGRP, &fg) == 0 && fg == 0, "the session ended with its leader: no foreground group");
    close(m);

    /* Without a session: TIOCSCTTY needs a session leader. */
    int s;
    m = open_pair(&s, O_RDWR | O_NOCTTY);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        if (ioctl(s, TIOCSCTTY, 0) != -1 || errno != EPERM)
            bad |= 1;
        setsid();
        if (open("/dev/tty", O_RDWR) != -1 || errno != ENXIO)
            bad |= 2;
        pid_t sid;
        if (ioctl(s, TIOCGSID, &sid) != -1 || errno != ENOTTY)
            bad |= 4;
        if (ioctl(s, TIOCSCTTY, 0) != 0)
            bad |= 8;
        if (ioctl(s, TIOCGSID, &sid) != 0 || sid != getpid())
            bad |= 16;
        _exit(bad);
    }
    int wst;
    waitpid(pid, &wst, 0);
    printf("TIOCSCTTY child: %s\n", status_str(wst));
    close(s);
    close(m);
}

static int child_winsize(int s, int sync_fd)
{
    int bad = 0;
    signal(SIGWINCH, on_sig);
    write(sync_fd, "r", 1);
    for (int i = 0; i < 300 && !got_sig[SIGWINCH]; i++)
        usleep(10000);
    if (got_sig[SIGWINCH] != 1)
        bad |= 1;
    struct winsize w;
    if (ioctl(s, TIOCGWINSZ, &w) != 0 || w.ws_row != 33 || w.ws_col != 101)
        bad |= 2;
    /* The same size again: no signal. */
    ioctl(s, TIOCSWINSZ, &w);
    if (got_sig[SIGWINCH] != 1)
        bad |= 4;
    w.ws_row = 40;
    ioctl(s, TIOCSWINSZ, &w);
    if (got_sig[SIGWINCH] != 2)
        bad |= 8;
    return bad;
}

static void parent_winsize(int m, pid_t pid)
{
    (void)pid;
    struct winsize w = {33, 101, 0, 0};
    check(ioctl(m, TIOCSWINSZ, &w) == 0, "TIOCSWINSZ through the master");
}

static void test_winsize(void)
{
    int m = open_pair(NULL, 0);
    int st = in_session(m, child_winsize, parent_winsize);
    printf("SIGWINCH child: %s\n", status_str(st));
    struct winsize w;
    check(ioctl(m, TIOCGWINSZ, &w) == 0 && w.ws_row == 40 && w.ws_col == 101, "the master sees the new size");
    close(m);
}

static int child_hangup(int s, int sync_fd)
{
    int bad = 0;
    signal(SIGHUP, on_sig);
    signal(SIGCONT, on_sig);
    write(sync_fd, "r", 1);
    for (int i = 0; i < 300 && !got_sig[SIGHUP]; i++)
        usleep(10000);
    if (got_sig[SIGHUP] != 1 || got_sig[SIGCONT] != 1)
        bad |= 1;
    char buf[8];
    if (read(s, buf, sizeof buf) != 0)
        bad |= 2;
    if (write(s, "x", 1) != -1 || errno != EIO)
        bad |= 4;
    struct pollfd p = {s, POLLIN | POLLOUT, 0};
    if (poll(&p, 1, 0) != 1 || p.revents != (POLLIN | POLLOUT | POLLERR | POLLHUP))
        bad |= 8;
    struct termios t;
    if (tcgetattr(s, &t) != -1 || errno != EIO)
        bad |= 16;
    if (open("/dev/tty", O_RDWR) != -1 || errno != ENXIO)
        bad |= 32;
    return bad;
}

static void parent_hangup(int m, pid_t pid)
{
    (void)pid;
    close(m);
}

static void test_hangup(void)
{
    int m = open_pair(NULL, 0);
    char name[64];
    snprintf(name, sizeof name, "%s", ptsname(m));
    int st = in_session(m, child_hangup, parent_hangup);
    printf("hangup child: %s\n", status_str(st));
    EXPECT_ERR(ENOENT, "open(slave) after the master closed", open(name, O_RDWR | O_NOCTTY));
}

static void test_eio_and_poll(void)
{
    int s;
    int m = open_pair(&s, -1);
    struct pollfd p = {m, POLLIN | POLLOUT | POLLPRI, 0};
    check(poll(&p, 1, 0) == 1 && p.revents == POLLOUT, "a new master: writable only");
    fcntl(m, F_SETFL, O_NONBLOCK);
    char buf[64];
    EXPECT_ERR(EAGAIN, "read(master) before the slave opens", read(m, buf, sizeof buf));
    s = open(ptsname(m), O_RDWR | O_NOCTTY);
    struct pollfd ps = {s, POLLIN | POLLOUT, 0};
    check(poll(&ps, 1, 0) == 1 && ps.revents == POLLOUT, "an idle slave: writable only");
    write(s, "data", 4);
    p.revents = 0;
    check(poll(&p, 1, 3000) == 1 && p.revents == (POLLIN | POLLOUT), "slave output: the master is readable");
    struct termios t;
    tcgetattr(s, &t);
    t.c_lflag &= ~ECHO;
    tcsetattr(s, TCSANOW, &t);
    write(m, "half", 4);
    ps.events = POLLIN;
    check(poll(&ps, 1, 200) == 0, "a partial line: the slave is not readable");
    write(m, "\n", 1);
    check(poll(&ps, 1, 3000) == 1 && ps.revents == POLLIN, "a whole line: the slave is readable");
    close(s);
    p.revents = 0;
    check(poll(&p, 1, 3000) == 1 && (p.revents & POLLHUP), "the slave closed: POLLHUP on the master");
    int n = read_wait(m, buf, 4);
    show("the slave's output is still read", buf, n);
    EXPECT_ERR(EIO, "read(master) after the slave closed", read(m, buf, sizeof buf));
    close(m);
}

/* Blocking reads and writes wake each other, with no poll in between. */
static void test_blocking(void)
{
    int s;
    int m = open_pair(&s, O_RDWR | O_NOCTTY);
    struct termios t;
    tcgetattr(s, &t);
    cfmakeraw(&t);
    tcsetattr(s, TCSANOW, &t);
    pid_t pid = fork();
    if (pid == 0) {
        /* 256 KiB through the slave: more than any queue holds. */
        char chunk[4096];
        for (int i = 0; i < (int)sizeof chunk; i++)
            chunk[i] = 'a' + i % 26;
        for (int i = 0; i < 64; i++)
            if (write(s, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
                _exit(1);
        /* Then read what the parent types, with blocking reads. */
        char in[4096];
        long got = 0;
        while (got < 64 * 1024) {
            ssize_t n = read(s, in, sizeof in);
            if (n <= 0)
                _exit(2);
            got += n;
        }
        _exit(0);
    }
    long got = 0, bad = 0;
    char buf[1000];
    while (got < 64 * 4096) {
        ssize_t n = read(m, buf, sizeof buf);
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            bad += buf[i] != 'a' + (got + i) % 4096 % 26;
        got += n;
    }
    check(got == 64 * 4096 && bad == 0, "256 KiB slave to master with blocking reads and writes");
    char out[4096];
    memset(out, 'z', sizeof out);
    long sent = 0;
    while (sent < 64 * 1024) {
        ssize_t n = write(m, out, sizeof out);
        if (n <= 0)
            break;
        sent += n;
    }
    check(sent == 64 * 1024, "64 KiB master to slave with blocking writes");
    int st;
    waitpid(pid, &st, 0);
    printf("blocking child: %s\n", status_str(st));
    close(s);
    close(m);
}

static void test_packet(void)
{
    int s;
    int m = open_pair(&s, O_RDWR | O_NOCTTY);
    int on = 1;
    check(ioctl(m, TIOCPKT, &on) == 0, "TIOCPKT on");
    int got = -1;
    check(ioctl(m, TIOCGPKT, &got) == 0 && got == 1, "TIOCGPKT");
    char buf[64];
    write(s, "x", 1);
    int n = read_wait(m, buf, 2);
    show("packet: data", buf, n);
    tcflush(s, TCIFLUSH);
    struct pollfd p = {m, POLLIN | POLLPRI, 0};
    check(poll(&p, 1, 3000) == 1 && p.revents == (POLLIN | POLLPRI), "packet: a status is POLLPRI");
    n = read(m, buf, sizeof buf);
    show("packet: TCIFLUSH", buf, n);
    tcflush(s, TCOFLUSH);
    readable(m, 3000);
    n = read(m, buf, sizeof buf);
    show("packet: TCOFLUSH", buf, n);
    struct termios t;
    tcgetattr(s, &t);
    t.c_iflag &= ~IXON;
    tcsetattr(s, TCSANOW, &t);
    readable(m, 3000);
    n = read(m, buf, sizeof buf);
    show("packet: IXON off", buf, n);
    t.c_iflag |= IXON;
    tcsetattr(s, TCSANOW, &t);
    readable(m, 3000);
    n = read(m, buf, sizeof buf);
    show("packet: IXON on", buf, n);
    on = 0;
    ioctl(m, TIOCPKT, &on);
    write(s, "y", 1);
    n = read_wait(m, buf, 1);
    show("packet off: data", buf, n);
    close(s);
    close(m);
}

static void test_instance(void)
{
    const char *dir = "/tmp/pty_devpts";
    mkdir(dir, 0755);
    EXPECT_ERR(EINVAL, "mount(devpts, bogus option)", mount("devpts", dir, "devpts", 0, "bogus=1"));
    if (!check(mount("devpts", dir, "devpts", 0, "newinstance,ptmxmode=0666,mode=0620,gid=5") == 0,
               "mount(devpts, newinstance)")) {
        rmdir(dir);
        return;
    }
    struct stat st;
    check(stat("/tmp/pty_devpts/ptmx", &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 &&
              minor(st.st_rdev) == 2,
          "its ptmx is 5:2");
    printf("ptmx mode %o\n", st.st_mode & 07777);
    int m = open("/tmp/pty_devpts/ptmx", O_RDWR | O_NOCTTY);
    unsigned n = 99;
    check(m >= 0 && ioctl(m, TIOCGPTN, &n) == 0 && n == 0, "a new instance numbers from 0");
    unlockpt(m);
    check(stat("/tmp/pty_devpts/0", &st) == 0, "its slave appears");
    printf("slave mode %o gid %u\n", st.st_mode & 07777, st.st_gid);
    int s = open("/tmp/pty_devpts/0", O_RDWR | O_NOCTTY);
    check(s >= 0, "open its slave");
    write(s, "inst\n", 5);
    char buf[16];
    int r = read_wait(m, buf, 6);
    show("the instance's pty works", buf, r);
    int m2 = open("/tmp/pty_devpts/ptmx", O_RDWR | O_NOCTTY);
    check(m2 >= 0 && ioctl(m2, TIOCGPTN, &n) == 0 && n == 1, "the next is 1");
    close(m2);
    close(s);
    close(m);
    EXPECT_ERR(ENOENT, "its slave goes with the master", stat("/tmp/pty_devpts/0", &st));
    check(umount(dir) == 0, "umount");
    rmdir(dir);
}

int main(void)
{
    t_init("pty");
    test_open();
    test_canonical();
    test_raw();
    test_signals();
    test_ctty();
    test_winsize();
    test_hangup();
    test_eio_and_poll();
    test_blocking();
    test_packet();
    test_instance();
    return t_done();
}
