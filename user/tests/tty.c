/*
 * tty: terminal checks that need a real terminal on stdin (TCGETS/TCSETS
 * round trip, ECHO and ICANON toggling, VMIN/VTIME reads, TIOCGWINSZ,
 * FIONREAD, speeds, controlling-terminal queries, epoll on the terminal:
 * always writable, readable only with input).  The host oracle runs
 * without a terminal, so when stdin is not a tty the program prints only
 * "no terminal: skipped" (plus the summary line).  ENOTTY cases on
 * non-terminals are in fs_fd.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>

int main(void)
{
    t_init("tty");
    if (!isatty(0)) {
        printf("no terminal: skipped\n");
        return t_done();
    }
    struct stat st;
    check(fstat(0, &st) == 0 && S_ISCHR(st.st_mode), "stdin is a character device");

    struct termios orig, t, back;
    memset(&orig, 0, sizeof orig);
    check(ioctl(0, TCGETS, &orig) == 0, "TCGETS");
    check(tcgetattr(0, &t) == 0 && t.c_lflag == orig.c_lflag && t.c_iflag == orig.c_iflag &&
              memcmp(t.c_cc, orig.c_cc, 19) == 0,
          "tcgetattr agrees with TCGETS");
    speed_t sp = cfgetospeed(&t);
    check(sp != 0 && cfgetispeed(&t) != (speed_t)-1, "output speed nonzero");

    t.c_lflag &= ~(tcflag_t)ECHO;
    check(tcsetattr(0, TCSANOW, &t) == 0, "tcsetattr(ECHO off)");
    check(tcgetattr(0, &back) == 0 && !(back.c_lflag & ECHO), "ECHO off reads back");
    t.c_lflag &= ~(tcflag_t)ICANON;
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    check(tcsetattr(0, TCSAFLUSH, &t) == 0, "tcsetattr(ICANON off, VMIN=0 VTIME=0, TCSAFLUSH)");
    check(tcgetattr(0, &back) == 0 && !(back.c_lflag & ICANON) && back.c_cc[VMIN] == 0, "raw settings read back");
    char c;
    int64_t t0 = mono_ns();
    ssize_t r = read(0, &c, 1);
    check(r >= 0 && mono_ns() - t0 < 1000000000, "VMIN=0 VTIME=0 read returns at once");
    t.c_cc[VTIME] = 1; /* 100 ms */
    tcsetattr(0, TCSANOW, &t);
    t0 = mono_ns();
    r = read(0, &c, 1);
    int64_t dt = mono_ns() - t0;
    check(r == 1 || (r == 0 && dt >= 50000000), "VMIN=0 VTIME=1 read times out after ~100 ms (or gets a byte)");
    int n = -1;
    check(ioctl(0, FIONREAD, &n) == 0 && n >= 0, "FIONREAD on the terminal");
    check(tcsetattr(0, TCSANOW, &orig) == 0, "restore original settings");
    check(tcgetattr(0, &back) == 0 && back.c_lflag == orig.c_lflag && back.c_iflag == orig.c_iflag &&
              back.c_oflag == orig.c_oflag && back.c_cflag == orig.c_cflag,
          "original settings restored");
    check(tcflush(0, TCIFLUSH) == 0, "tcflush(TCIFLUSH)");
    if (isatty(1))
        check(tcdrain(1) == 0, "tcdrain(stdout)");
    else
        check(1, "tcdrain(stdout) (stdout not a tty)");

    struct winsize ws;
    check(ioctl(0, TIOCGWINSZ, &ws) == 0, "TIOCGWINSZ");
    struct winsize ws2 = ws;
    check(ioctl(0, TIOCSWINSZ, &ws2) == 0, "TIOCSWINSZ (same size)");
    EXPECT_ERR(EINVAL, "tcsetattr(bad action)", tcsetattr(0, 99, &orig));
    EXPECT_ERR(EFAULT, "TCGETS(bad pointer)", ioctl(0, TCGETS, BAD_PTR));

    /* Controlling terminal: either this terminal is ours, or the queries say so consistently. */
    pid_t pg = -1;
    errno = 0;
    int rc = ioctl(0, TIOCGPGRP, &pg);
    check((rc == 0 && pg > 0) || (rc == -1 && errno == ENOTTY), "TIOCGPGRP: a group, or ENOTTY if not our ctty");
    pid_t sid = -1;
    errno = 0;
    rc = ioctl(0, TIOCGSID, &sid);
    check((rc == 0 && sid == getsid(0)) || (rc == -1 && errno == ENOTTY), "TIOCGSID == getsid(0), or ENOTTY");
    errno = 0;
    int fd = open("/dev/tty", O_RDWR);
    check(fd >= 0 || errno == ENXIO, "open(/dev/tty): ok with a ctty, else ENXIO");
    if (fd >= 0) {
        check(isatty(fd), "/dev/tty is a tty");
        close(fd);
    }
    char *name = ttyname(0);
    check(name && strncmp(name, "/dev/", 5) == 0, "ttyname(0) is under /dev");
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u64 = 1 }, out[2];
    check(epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) == 0, "epoll_ctl(ADD the terminal)");
    n = epoll_wait(ep, out, 2, 0);
    check(n == 1 && (out[0].events & EPOLLOUT), "the terminal is writable through epoll");
    check(n == 1 && !(out[0].events & EPOLLIN), "... and not readable with no input typed");
    close(ep);
    return t_done();
}
