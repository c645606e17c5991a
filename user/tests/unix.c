/*
 * AF_UNIX sockets: stream, datagram and seqpacket; socketpair, path and
 * abstract names, autobind, listen/accept/connect with the backlog,
 * shutdown, EOF and EPIPE/SIGPIPE, message boundaries and truncation,
 * MSG_PEEK/DONTWAIT/WAITALL/TRUNC, SO_PEEK_OFF, buffer limits with
 * non-blocking writers and a blocked writer woken by a reader, options,
 * ioctls, fstat, /proc/net/unix and /proc/self/fd, poll/select readiness,
 * timeouts, readv/writev, sendmmsg/recvmmsg, and the errnos of each call.
 * As an unprivileged user (a child with uid and gid 1000): bind needs
 * write and search permission on the directory and makes a socket owned
 * by the file-system ids (umask applied, a set-group-ID directory's
 * group); connect and sendto need search permission along the path and
 * write permission on the socket, checked before its type. accept keeps
 * a connection waiting when no descriptor is left (EMFILE).
 */
#include "common.h"

#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <grp.h>

static const char *sockerr(int e)
{
    switch (e) {
    case ENOTSOCK: return "ENOTSOCK";
    case EADDRINUSE: return "EADDRINUSE";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EISCONN: return "EISCONN";
    case ENOTCONN: return "ENOTCONN";
    case EPROTOTYPE: return "EPROTOTYPE";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    case EMSGSIZE: return "EMSGSIZE";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case ECONNRESET: return "ECONNRESET";
    case EDOM: return "EDOM";
    case ENOBUFS: return "ENOBUFS";
    default: return errname(e);
    }
}

/* ERR(EXPR): prints "what = -1 ENAME" or "what = N". */
#define SHOW(what, expr)                                                         \
    do {                                                                         \
        errno = 0;                                                               \
        long _r = (long)(expr);                                                  \
        if (_r < 0)                                                              \
            printf("%s = -1 %s\n", what, sockerr(errno));                        \
        else                                                                     \
            printf("%s = %ld\n", what, _r);                                      \
        t_checks++;                                                              \
    } while (0)

static int sigpipes;
static void on_pipe(int s) { (void)s; sigpipes++; }

static socklen_t un_addr(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (path[0] == '@') {
        size_t n = strlen(path);
        memcpy(a->sun_path + 1, path + 1, n - 1);
        return offsetof(struct sockaddr_un, sun_path) + n;
    }
    strcpy(a->sun_path, path);
    return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

static short revents(int fd, short ev)
{
    struct pollfd p = {fd, ev, 0};
    if (poll(&p, 1, 0) < 0)
        return -1;
    return p.revents;
}

static void pollstr(const char *what, int fd)
{
    short r = revents(fd, POLLIN | POLLOUT | POLLRDHUP | POLLPRI);
    printf("poll %s:%s%s%s%s%s%s\n", what, r & POLLIN ? " IN" : "", r & POLLOUT ? " OUT" : "",
           r & POLLHUP ? " HUP" : "", r & POLLRDHUP ? " RDHUP" : "", r & POLLERR ? " ERR" : "",
           r ? "" : " none");
}

static void test_creation(void)
{
    int sv[2];
    SHOW("socket(AF_UNIX, SOCK_RDM)", socket(AF_UNIX, SOCK_RDM, 0));
    SHOW("socket(AF_UNIX, 12)", socket(AF_UNIX, 12, 0));
    SHOW("socket(AF_UNIX, STREAM|0x100)", socket(AF_UNIX, SOCK_STREAM | 0x100, 0));
    SHOW("socket(AF_UNIX, STREAM, 2)", socket(AF_UNIX, SOCK_STREAM, 2));
    SHOW("socket(46, STREAM)", socket(46, SOCK_STREAM, 0));
    SHOW("socket(-1, 12)", socket(-1, 12, 0));
    SHOW("socket(AF_UNSPEC)", socket(AF_UNSPEC, SOCK_STREAM, 0));
    int s = socket(AF_UNIX, SOCK_STREAM, PF_UNIX);
    check(s >= 0, "socket(AF_UNIX, SOCK_STREAM, PF_UNIX)");
    close(s);
    SHOW("socketpair(AF_INET)", socketpair(AF_INET, SOCK_STREAM, 0, sv));
    SHOW("socketpair(bad pointer)", syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, BAD_PTR));
    check(socketpair(AF_UNIX, SOCK_RAW, 0, sv) == 0, "socketpair(SOCK_RAW)");
    int v = 0;
    socklen_t l = sizeof v;
    getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &v, &l);
    printf("SOCK_RAW makes type %d\n", v);
    close(sv[0]);
    close(sv[1]);

    check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair with flags");
    printf("flags: nonblock %d cloexec %d\n", !!(fcntl(sv[0], F_GETFL) & O_NONBLOCK),
           !!(fcntl(sv[1], F_GETFD) & FD_CLOEXEC));
    printf("access mode O_RDWR %d\n", (fcntl(sv[0], F_GETFL) & O_ACCMODE) == O_RDWR);
    struct stat st;
    fstat(sv[0], &st);
    printf("fstat: S_ISSOCK %d mode %o size %ld\n", S_ISSOCK(st.st_mode), st.st_mode & 0777, (long)st.st_size);
    char link[64], want[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", sv[0]);
    ssize_t n = readlink(link, want, sizeof want - 1);
    want[n > 0 ? n : 0] = 0;
    char expect[64];
    snprintf(expect, sizeof expect, "socket:[%lu]", (unsigned long)st.st_ino);
    check(strcmp(want, expect) == 0, "/proc/self/fd shows socket:[ino]");
    struct stat st2;
    fstat(sv[1], &st2);
    check(st2.st_ino != st.st_ino, "each end has its own inode");
    SHOW("lseek(socket)", lseek(sv[0], 0, SEEK_SET));
    SHOW("pread(socket)", pread(sv[0], want, 1, 0));
    SHOW("read(nonblocking, empty)", read(sv[0], want, 1));
    SHOW("bind(not a socket)", bind(0, (struct sockaddr *)&st, 4));
    SHOW("listen(bad fd)", listen(99, 1));
    SHOW("getsockname(not a socket)", getsockname(1, NULL, NULL));
    close(sv[0]);
    close(sv[1]);
}

static void test_stream_pair(void)
{
    int sv[2];
    char buf[256];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    SHOW("write 5", write(sv[0], "hello", 5));
    SHOW("write 6", write(sv[0], " world", 6));
    int n = 0;
    ioctl(sv[1], FIONREAD, &n);
    printf("FIONREAD %d\n", n);
    ioctl(sv[0], TIOCOUTQ, &n);
    printf("TIOCOUTQ > 0: %d\n", n > 0);
    SHOW("recv PEEK 3", recv(sv[1], buf, 3, MSG_PEEK));
    SHOW("recv 100 (glued)", recv(sv[1], buf, 100, 0));
    buf[11] = 0;
    printf("got '%s'\n", buf);
    ioctl(sv[0], TIOCOUTQ, &n);
    printf("TIOCOUTQ after read %d\n", n);
    SHOW("recv DONTWAIT empty", recv(sv[1], buf, 10, MSG_DONTWAIT));
    SHOW("send with address", sendto(sv[0], "x", 1, 0, (struct sockaddr *)&sv, 4));
    SHOW("send MSG_OOB-free 0 bytes", send(sv[0], buf, 0, 0));

    /* SO_PEEK_OFF walks forward through the stream. */
    int off = 0;
    SHOW("SO_PEEK_OFF 0", setsockopt(sv[1], SOL_SOCKET, SO_PEEK_OFF, &off, sizeof off));
    write(sv[0], "abcdef", 6);
    recv(sv[1], buf, 2, MSG_PEEK);
    recv(sv[1], buf + 2, 2, MSG_PEEK);
    buf[4] = 0;
    printf("peeks with offset: %s\n", buf);
    socklen_t l = sizeof off;
    getsockopt(sv[1], SOL_SOCKET, SO_PEEK_OFF, &off, &l);
    printf("peek offset now %d\n", off);
    recv(sv[1], buf, 3, 0);
    getsockopt(sv[1], SOL_SOCKET, SO_PEEK_OFF, &off, &l);
    printf("after reading 3: %d\n", off);
    recv(sv[1], buf, 3, 0);

    /* MSG_WAITALL gathers across writes from a child. */
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 4; i++) {
            usleep(2000);
            write(sv[0], "wxyz", 4);
        }
        _exit(0);
    }
    SHOW("recv WAITALL 16", recv(sv[1], buf, 16, MSG_WAITALL));
    wait_for(pid, NULL, 0);

    /* readv/writev keep the byte order across buffers. */
    struct iovec wv[3] = {{"ab", 2}, {"", 0}, {"cde", 3}};
    SHOW("writev", writev(sv[0], wv, 3));
    char p1[2], p2[4];
    struct iovec rv[2] = {{p1, 2}, {p2, 4}};
    SHOW("readv", readv(sv[1], rv, 2));
    printf("readv: %.2s %.3s\n", p1, p2);

    /* Shutdown: SHUT_WR gives the peer EOF, our writes EPIPE. */
    signal(SIGPIPE, on_pipe);
    SHOW("shutdown(7)", shutdown(sv[0], 7));
    SHOW("shutdown(SHUT_WR)", shutdown(sv[0], SHUT_WR));
    pollstr("peer after SHUT_WR", sv[1]);
    pollstr("self after SHUT_WR", sv[0]);
    SHOW("read at EOF", read(sv[1], buf, 10));
    sigpipes = 0;
    SHOW("write after SHUT_WR", write(sv[0], "x", 1));
    printf("SIGPIPE count %d\n", sigpipes);
    SHOW("send NOSIGNAL after SHUT_WR", send(sv[0], "x", 1, MSG_NOSIGNAL));
    printf("SIGPIPE count %d\n", sigpipes);
    SHOW("write other way", write(sv[1], "back", 4));
    SHOW("read other way", read(sv[0], buf, 10));
    SHOW("shutdown(SHUT_RD)", shutdown(sv[0], SHUT_RD));
    pollstr("self after SHUT_RDWR", sv[0]);
    pollstr("peer after both", sv[1]);
    SHOW("peer write after our SHUT_RD", send(sv[1], "x", 1, MSG_NOSIGNAL));
    close(sv[0]);
    close(sv[1]);

    /* Closing with unread data: ECONNRESET once, then EOF. */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    write(sv[0], "unread", 6);
    write(sv[1], "data", 4);
    close(sv[1]);
    pollstr("after peer closed with unread data", sv[0]);
    int err = -1;
    l = sizeof err;
    SHOW("read (data first)", read(sv[0], buf, 10));
    SHOW("read", read(sv[0], buf, 10));
    SHOW("read again", read(sv[0], buf, 10));
    getsockopt(sv[0], SOL_SOCKET, SO_ERROR, &err, &l);
    printf("SO_ERROR after %d\n", err);
    sigpipes = 0;
    SHOW("write to closed peer", write(sv[0], "x", 1));
    printf("SIGPIPE count %d\n", sigpipes);
    close(sv[0]);

    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    write(sv[0], "unread", 6);
    close(sv[0]);
    err = -1;
    getsockopt(sv[1], SOL_SOCKET, SO_ERROR, &err, &l);
    printf("SO_ERROR when the peer left data behind: %d\n", err);
    SHOW("read after", read(sv[1], buf, 100));
    close(sv[1]);
    signal(SIGPIPE, SIG_DFL);
}

static void test_stream_buffer(void)
{
    int sv[2];
    static char big[200000];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    long total = 0, r;
    int calls = 0;
    while ((r = write(sv[0], big, 65536)) > 0) {
        total += r;
        calls++;
    }
    printf("non-blocking 64 KiB writes: stop with %s, %d calls, %ld bytes\n", sockerr(errno), calls, total);
    pollstr("full writer", sv[0]);
    int ones = 0;
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv + 0);
    int sv2[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv2);
    while (write(sv2[0], "x", 1) == 1)
        ones++;
    printf("1-byte writes until EAGAIN: %d\n", ones);
    close(sv2[0]);
    close(sv2[1]);
    close(sv[0]);
    close(sv[1]);

    /* A blocking writer waits until a reader drains the socket. */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pid_t pid = fork();
    if (pid == 0) {
        long left = sizeof big * 3, w;
        while (left > 0 && (w = write(sv[0], big, left > (long)sizeof big ? (long)sizeof big : left)) > 0)
            left -= w;
        _exit(left == 0 ? 0 : 1);
    }
    usleep(20000);
    long got = 0;
    while (got < (long)sizeof big * 3) {
        r = read(sv[1], big, sizeof big);
        if (r <= 0)
            break;
        got += r;
    }
    int st;
    wait_for(pid, &st, 0);
    printf("blocked writer: reader got %ld, writer %s\n", got, status_str(st));
    close(sv[0]);
    close(sv[1]);
}

static void test_options(void)
{
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    int v;
    socklen_t l = sizeof v;
    int opts[] = {SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ERROR, SO_ACCEPTCONN, SO_SNDBUF, SO_RCVBUF,
                  SO_REUSEADDR, SO_KEEPALIVE, SO_PASSCRED, SO_RCVLOWAT, SO_SNDLOWAT, SO_PEEK_OFF};
    const char *names[] = {"SO_TYPE", "SO_DOMAIN", "SO_PROTOCOL", "SO_ERROR", "SO_ACCEPTCONN", "SO_SNDBUF",
                           "SO_RCVBUF", "SO_REUSEADDR", "SO_KEEPALIVE", "SO_PASSCRED", "SO_RCVLOWAT",
                           "SO_SNDLOWAT", "SO_PEEK_OFF"};
    for (unsigned i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        v = 12345;
        l = sizeof v;
        int r = getsockopt(s, SOL_SOCKET, opts[i], &v, &l);
        printf("getsockopt %s = %d (%s, len %d)\n", names[i], v, r ? sockerr(errno) : "ok", (int)l);
    }
    v = 65536;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    l = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &l);
    printf("SO_SNDBUF 65536 reads %d\n", v);
    v = 1;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &l);
    printf("SO_SNDBUF 1 reads %d\n", v);
    v = 1000;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &l);
    printf("SO_RCVBUF 1000 reads %d\n", v);
    v = 1;
    SHOW("SO_KEEPALIVE 1", setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v));
    SHOW("SO_REUSEADDR 1", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v));
    getsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &l);
    printf("SO_KEEPALIVE reads %d\n", v);
    SHOW("SO_REUSEPORT 1", setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &v, sizeof v));
    SHOW("SO_TYPE set", setsockopt(s, SOL_SOCKET, SO_TYPE, &v, sizeof v));
    SHOW("int option, short length", setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, 2));
    SHOW("negative length", setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, -1));
    SHOW("level SOL_IP", setsockopt(s, 0, 1, &v, sizeof v));
    SHOW("getsockopt level SOL_IP", getsockopt(s, 0, 1, &v, &l));
    SHOW("unknown option", getsockopt(s, SOL_SOCKET, 9999, &v, &l));
    l = -1;
    SHOW("getsockopt negative length", getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &l));
    l = 2;
    v = 0;
    getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &l);
    printf("short getsockopt: len %d value %d\n", (int)l, v);
    v = 0;
    SHOW("SO_RCVLOWAT 0", setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v));
    l = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, &l);
    printf("SO_RCVLOWAT reads %d\n", v);

    struct timeval tv = {0, 1500};
    SHOW("SO_RCVTIMEO 1.5 ms", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    l = sizeof tv;
    getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, &l);
    printf("SO_RCVTIMEO reads %ld.%06ld (len %d)\n", (long)tv.tv_sec, (long)tv.tv_usec, (int)l);
    tv.tv_usec = 1000000;
    SHOW("SO_SNDTIMEO usec 1e6", setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    SHOW("SO_SNDTIMEO short", setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, 8));
    struct linger lg = {1, 7};
    SHOW("SO_LINGER", setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
    memset(&lg, 0, sizeof lg);
    l = sizeof lg;
    getsockopt(s, SOL_SOCKET, SO_LINGER, &lg, &l);
    printf("SO_LINGER reads %d %d\n", lg.l_onoff, lg.l_linger);
    struct ucred uc;
    l = sizeof uc;
    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &l);
    printf("SO_PEERCRED unconnected: pid %d uid %d gid %d len %d\n", uc.pid, (int)uc.uid, (int)uc.gid, (int)l);
    close(s);

    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    l = sizeof uc;
    getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &uc, &l);
    printf("SO_PEERCRED of a pair: pid is mine %d uid %d gid %d\n", uc.pid == getpid(), (int)uc.uid, (int)uc.gid);
    /* A receive timeout: EAGAIN after it passes. */
    tv.tv_sec = 0;
    tv.tv_usec = 20000;
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    SHOW("read with a 20 ms timeout", read(sv[0], &c, 1));
    close(sv[0]);
    close(sv[1]);
}

static void test_names(void)
{
    struct sockaddr_un a, g;
    socklen_t al, gl;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    gl = sizeof g;
    getsockname(s, (struct sockaddr *)&g, &gl);
    printf("unbound name length %d\n", (int)gl);
    SHOW("listen unbound", listen(s, 1));
    SHOW("accept unconnected", accept(s, NULL, NULL));
    SHOW("getpeername unconnected", getpeername(s, (struct sockaddr *)&g, &gl));
    SHOW("bind len 1", bind(s, (struct sockaddr *)&a, 1));
    SHOW("bind len 111", bind(s, (struct sockaddr *)&a, 111));
    SHOW("bind len 200", bind(s, (struct sockaddr *)&a, 200));
    SHOW("bind bad pointer", bind(s, BAD_PTR, 10));
    a.sun_family = AF_INET;
    SHOW("bind AF_INET family", bind(s, (struct sockaddr *)&a, 10));
    SHOW("connect len 2", connect(s, (struct sockaddr *)&a, 2));

    /* Autobind: five hex digits of an abstract name. */
    a.sun_family = AF_UNIX;
    SHOW("bind(family only)", bind(s, (struct sockaddr *)&a, sizeof(sa_family_t)));
    gl = sizeof g;
    getsockname(s, (struct sockaddr *)&g, &gl);
    int hex = 1;
    for (int i = 1; i < 6; i++)
        hex &= strchr("0123456789abcdef", g.sun_path[i]) != NULL;
    printf("autobind: length %d, leading NUL %d, hex %d\n", (int)gl, g.sun_path[0] == 0, hex);
    SHOW("bind again", bind(s, (struct sockaddr *)&a, sizeof(sa_family_t)));
    close(s);

    /* Abstract names are per type; a second bind is EADDRINUSE. */
    al = un_addr(&a, "@kiln-unix-test");
    int s1 = socket(AF_UNIX, SOCK_STREAM, 0), s2 = socket(AF_UNIX, SOCK_STREAM, 0);
    int d1 = socket(AF_UNIX, SOCK_DGRAM, 0);
    SHOW("bind abstract", bind(s1, (struct sockaddr *)&a, al));
    SHOW("bind same abstract", bind(s2, (struct sockaddr *)&a, al));
    SHOW("bind same abstract, dgram", bind(d1, (struct sockaddr *)&a, al));
    gl = sizeof g;
    getsockname(s1, (struct sockaddr *)&g, &gl);
    printf("abstract name length %d matches %d\n", (int)gl, gl == al && memcmp(&g, &a, al) == 0);
    SHOW("connect to a non-listening stream", connect(s2, (struct sockaddr *)&a, al));
    SHOW("listen backlog 0", listen(s1, 0));
    int c1 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int c2 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    SHOW("connect 1", connect(c1, (struct sockaddr *)&a, al));
    SHOW("connect 2 (backlog full)", connect(c2, (struct sockaddr *)&a, al));
    SHOW("connect 1 again (backlog full first)", connect(c1, (struct sockaddr *)&a, al));
    pollstr("listener with a pending connection", s1);
    int v;
    socklen_t l = sizeof v;
    getsockopt(s1, SOL_SOCKET, SO_ACCEPTCONN, &v, &l);
    printf("SO_ACCEPTCONN %d\n", v);
    gl = sizeof g;
    int n = accept4(s1, (struct sockaddr *)&g, &gl, SOCK_CLOEXEC);
    check(n >= 0, "accept4");
    printf("accepted: peer name length %d cloexec %d\n", (int)gl, !!(fcntl(n, F_GETFD) & FD_CLOEXEC));
    gl = sizeof g;
    getsockname(n, (struct sockaddr *)&g, &gl);
    printf("accepted socket's name is the listener's: %d\n", gl == al && memcmp(&g, &a, al) == 0);
    gl = sizeof g;
    getpeername(c1, (struct sockaddr *)&g, &gl);
    printf("client's peer is the listener's name: %d\n", gl == al && memcmp(&g, &a, al) == 0);
    fcntl(s1, F_SETFL, O_NONBLOCK);
    SHOW("accept4 bad flags", syscall(SYS_accept4, s1, NULL, NULL, 0x10));
    SHOW("accept on O_NONBLOCK listener", accept(s1, NULL, NULL));
    SHOW("connect 1 again", connect(c1, (struct sockaddr *)&a, al));
    SHOW("connect a listener", connect(s1, (struct sockaddr *)&a, al));
    SHOW("connect 2 after accept", connect(c2, (struct sockaddr *)&a, al));
    write(c1, "ping", 4);
    char buf[16];
    SHOW("read accepted", read(n, buf, sizeof buf));
    close(c2);
    close(n);
    close(c1);
    close(s1);
    close(s2);
    close(d1);
    SHOW("connect after listener closed", connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&a, al));

    /* Path names: a socket inode in the file system. */
    unlink("/tmp/kiln-unix.sock");
    al = un_addr(&a, "/tmp/kiln-unix.sock");
    umask(022);
    s1 = socket(AF_UNIX, SOCK_STREAM, 0);
    SHOW("bind path", bind(s1, (struct sockaddr *)&a, al));
    struct stat st;
    stat("/tmp/kiln-unix.sock", &st);
    printf("socket file: S_ISSOCK %d mode %o\n", S_ISSOCK(st.st_mode), st.st_mode & 0777);
    s2 = socket(AF_UNIX, SOCK_STREAM, 0);
    SHOW("bind existing path", bind(s2, (struct sockaddr *)&a, al));
    SHOW("bind path in missing dir", bind(s2, (struct sockaddr *)&g, un_addr(&g, "/nonexistent/x")));
    SHOW("connect before listen", connect(s2, (struct sockaddr *)&a, al));
    listen(s1, 5);
    d1 = socket(AF_UNIX, SOCK_DGRAM, 0);
    SHOW("dgram connect to stream path", connect(d1, (struct sockaddr *)&a, al));
    SHOW("dgram sendto stream path", sendto(d1, "x", 1, 0, (struct sockaddr *)&a, al));
    SHOW("connect to a regular file", connect(s2, (struct sockaddr *)&g, un_addr(&g, "/dev/null")));
    SHOW("connect to a missing path", connect(s2, (struct sockaddr *)&g, un_addr(&g, "/tmp/kiln-none.sock")));
    /* A path of 108 bytes with no NUL. */
    memset(&g, 0, sizeof g);
    g.sun_family = AF_UNIX;
    memset(g.sun_path, 'z', sizeof g.sun_path);
    SHOW("connect 108-byte path", connect(s2, (struct sockaddr *)&g, sizeof g));
    SHOW("connect path", connect(s2, (struct sockaddr *)&a, al));
    gl = sizeof g;
    getpeername(s2, (struct sockaddr *)&g, &gl);
    printf("peer path %s length %d\n", g.sun_path, (int)gl);

    /* /proc/net/unix lists the listener with its path. */
    fstat(s1, &st);
    FILE *f = fopen("/proc/net/unix", "r");
    char line[256];
    int found = 0;
    if (f) {
        if (fgets(line, sizeof line, f))
            printf("header: %s", line);
        while (fgets(line, sizeof line, f)) {
            unsigned long ino = 0;
            unsigned flags, type, state;
            char path[128] = "";
            if (sscanf(line, "%*s %*s %*s %x %x %x %lu %127s", &flags, &type, &state, &ino, path) >= 4 &&
                ino == st.st_ino) {
                printf("/proc/net/unix: flags %x type %x state %x path %s\n", flags, type, state, path);
                found = 1;
            }
        }
        fclose(f);
    }
    check(found, "listener in /proc/net/unix");

    /* Unlinking the name leaves the socket working but unreachable. */
    unlink("/tmp/kiln-unix.sock");
    int c3 = socket(AF_UNIX, SOCK_STREAM, 0);
    SHOW("connect after unlink", connect(c3, (struct sockaddr *)&a, al));
    n = accept(s1, NULL, NULL);
    SHOW("accept after unlink", n >= 0 ? 0 : -1);
    SHOW("write", write(s2, "ok", 2));
    SHOW("read", read(n, buf, sizeof buf));
    gl = sizeof g;
    getsockname(s1, (struct sockaddr *)&g, &gl);
    printf("name kept after unlink: %s\n", g.sun_path);
    close(n);
    close(s1);
    close(s2);
    close(c3);
    close(d1);
}

static void test_dgram(void)
{
    int sv[2];
    char buf[64];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    send(sv[0], "first", 5, 0);
    send(sv[0], "second!", 7, 0);
    send(sv[0], "", 0, 0);
    int n = 0;
    ioctl(sv[1], FIONREAD, &n);
    printf("FIONREAD (first datagram) %d\n", n);
    SHOW("recv 3 of 5", recv(sv[1], buf, 3, 0));
    SHOW("recv TRUNC 2 of 7", recv(sv[1], buf, 2, MSG_TRUNC));
    SHOW("recv empty datagram", recv(sv[1], buf, sizeof buf, 0));
    struct iovec iv = {buf, 2};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    send(sv[0], "abcdef", 6, 0);
    SHOW("recvmsg short buffer", recvmsg(sv[1], &m, 0));
    printf("msg_flags TRUNC %d\n", !!(m.msg_flags & MSG_TRUNC));
    SHOW("recv DONTWAIT empty", recv(sv[1], buf, sizeof buf, MSG_DONTWAIT));
    static char big[300000];
    SHOW("send larger than sndbuf", send(sv[0], big, 212992, 0));
    SHOW("send sndbuf - 32", send(sv[0], big, 212992 - 32, MSG_DONTWAIT));
    SHOW("recv it", recv(sv[1], big, sizeof big, 0));

    /* Peer queue of a socketpair: the sender's buffer is the limit. */
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    int count = 0;
    while (send(sv[0], "x", 1, 0) == 1)
        count++;
    printf("pair datagrams until %s: %d\n", sockerr(errno), count);
    pollstr("full dgram writer", sv[0]);
    close(sv[0]);
    close(sv[1]);

    /* A named receiver: senders that are not its peer stop at 11. */
    struct sockaddr_un a, from;
    socklen_t al = un_addr(&a, "@kiln-dgram"), fl;
    int r = socket(AF_UNIX, SOCK_DGRAM, 0);
    SHOW("bind", bind(r, (struct sockaddr *)&a, al));
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    count = 0;
    while (sendto(s, "y", 1, 0, (struct sockaddr *)&a, al) == 1)
        count++;
    printf("datagrams to a named socket until %s: %d\n", sockerr(errno), count);
    fl = sizeof from;
    SHOW("recvfrom unbound sender", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    printf("sender address length %d\n", (int)fl);
    struct sockaddr_un sa;
    socklen_t sal = un_addr(&sa, "@kiln-dgram-sender");
    int s2 = socket(AF_UNIX, SOCK_DGRAM, 0);
    bind(s2, (struct sockaddr *)&sa, sal);
    while (recv(r, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
    sendto(s2, "named", 5, 0, (struct sockaddr *)&a, al);
    fl = sizeof from;
    SHOW("recvfrom named sender", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    printf("sender address matches %d\n", fl == sal && memcmp(&from, &sa, sal) == 0);
    SHOW("sendto missing abstract", sendto(s2, "x", 1, 0, (struct sockaddr *)&from, un_addr(&from, "@kiln-none")));
    SHOW("send unconnected", send(s2, "x", 1, 0));
    SHOW("sendto bad addr length", sendto(s2, "x", 1, 0, (struct sockaddr *)&a, 1));
    SHOW("sendto bad buffer", sendto(s2, BAD_PTR, 1, 0, (struct sockaddr *)&a, al));
    SHOW("getpeername unconnected dgram", getpeername(s2, (struct sockaddr *)&from, &fl));

    /* connect filters senders: r accepts only s2 once connected to it. */
    SHOW("connect r to s2", connect(r, (struct sockaddr *)&sa, sal));
    SHOW("others get EPERM", sendto(s, "z", 1, 0, (struct sockaddr *)&a, al));
    SHOW("s2 may send", sendto(s2, "ok", 2, 0, (struct sockaddr *)&a, al));
    SHOW("connect s to r", connect(s, (struct sockaddr *)&a, al));
    struct sockaddr_un un = {AF_UNSPEC};
    SHOW("disconnect AF_UNSPEC", connect(r, (struct sockaddr *)&un, sizeof(sa_family_t)));
    SHOW("connect s to r again", connect(s, (struct sockaddr *)&a, al));
    SHOW("now s may send", send(s, "z", 1, 0));
    SHOW("recv", recv(r, buf, sizeof buf, 0));
    SHOW("recv (disconnecting dropped s2's)", recv(r, buf, sizeof buf, MSG_DONTWAIT));
    SHOW("shutdown(SHUT_RD) receiver", shutdown(r, SHUT_RD));
    SHOW("send to shut receiver", send(s, "z", 1, 0));
    SHOW("recv blocking after SHUT_RD", recv(r, buf, sizeof buf, 0));
    SHOW("recv nonblocking after SHUT_RD", recv(r, buf, sizeof buf, MSG_DONTWAIT));
    SHOW("shutdown(SHUT_WR) sender", shutdown(s2, SHUT_WR));
    SHOW("send after own SHUT_WR", sendto(s2, "x", 1, 0, (struct sockaddr *)&a, al));
    close(r);
    SHOW("send to closed peer", send(s, "z", 1, 0));
    SHOW("send again", send(s, "z", 1, 0));
    pollstr("dgram after peer closed", s);
    close(s);
    close(s2);
}

static void test_seqpacket(void)
{
    int sv[2];
    char buf[64];
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
    send(sv[0], "one", 3, 0);
    send(sv[0], "twotwo", 6, MSG_EOR);
    write(sv[0], "3", 1);
    int n = 0;
    ioctl(sv[1], FIONREAD, &n);
    printf("seqpacket FIONREAD %d\n", n);
    struct iovec iv = {buf, 4};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    SHOW("recvmsg", recvmsg(sv[1], &m, 0));
    printf("flags: TRUNC %d EOR %d\n", !!(m.msg_flags & MSG_TRUNC), !!(m.msg_flags & MSG_EOR));
    SHOW("recvmsg (cut)", recvmsg(sv[1], &m, 0));
    printf("flags: TRUNC %d EOR %d\n", !!(m.msg_flags & MSG_TRUNC), !!(m.msg_flags & MSG_EOR));
    SHOW("read", read(sv[1], buf, sizeof buf));
    signal(SIGPIPE, on_pipe);
    sigpipes = 0;
    close(sv[1]);
    pollstr("seqpacket after peer closed", sv[0]);
    SHOW("write to closed peer", write(sv[0], "x", 1));
    printf("SIGPIPE count %d\n", sigpipes);
    SHOW("read at EOF", read(sv[0], buf, sizeof buf));
    close(sv[0]);
    signal(SIGPIPE, SIG_DFL);

    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    SHOW("send unconnected", send(s, "x", 1, 0));
    SHOW("recv unconnected", recv(s, buf, 1, 0));
    pollstr("unconnected seqpacket", s);
    struct sockaddr_un a;
    socklen_t al = un_addr(&a, "@kiln-seq");
    bind(s, (struct sockaddr *)&a, al);
    listen(s, 4);
    int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    SHOW("connect", connect(c, (struct sockaddr *)&a, al));
    int d = accept(s, NULL, NULL);
    SHOW("sendto ignores the address", sendto(c, "rec", 3, 0, (struct sockaddr *)&a, al));
    SHOW("recv", recv(d, buf, sizeof buf, 0));
    close(c);
    close(d);
    close(s);
}

static void test_poll_select(void)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pollstr("idle pair", sv[0]);
    write(sv[1], "x", 1);
    pollstr("with data", sv[0]);
    fd_set r, w;
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(sv[0], &r);
    FD_SET(sv[0], &w);
    struct timeval tv = {0, 0};
    int n = select(sv[0] + 1, &r, &w, NULL, &tv);
    printf("select: %d readable %d writable %d\n", n, FD_ISSET(sv[0], &r), FD_ISSET(sv[0], &w));
    char c;
    read(sv[0], &c, 1);

    /* A poller woken by a write from another process. */
    pid_t pid = fork();
    if (pid == 0) {
        usleep(20000);
        write(sv[1], "y", 1);
        _exit(0);
    }
    struct pollfd p = {sv[0], POLLIN, 0};
    n = poll(&p, 1, 5000);
    printf("poll woken: %d revents IN %d\n", n, !!(p.revents & POLLIN));
    wait_for(pid, NULL, 0);
    /* A reader blocked in read wakes when the peer closes. */
    pid = fork();
    if (pid == 0) {
        usleep(20000);
        close(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    read(sv[0], &c, 1);
    SHOW("blocked read at peer close", read(sv[0], &c, 1));
    wait_for(pid, NULL, 0);
    close(sv[0]);

    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    pollstr("unconnected stream", s);
    close(s);
    s = socket(AF_UNIX, SOCK_DGRAM, 0);
    pollstr("unconnected dgram", s);
    close(s);
}

static void test_mmsg(void)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    struct mmsghdr mm[3];
    struct iovec iv[3];
    char bufs[3][8];
    const char *words[] = {"a", "bb", "ccc"};
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        iv[i].iov_base = (void *)words[i];
        iv[i].iov_len = strlen(words[i]);
        mm[i].msg_hdr.msg_iov = &iv[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    SHOW("sendmmsg 3", syscall(SYS_sendmmsg, sv[0], mm, 3, 0));
    printf("msg_len %u %u %u\n", mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        iv[i].iov_base = bufs[i];
        iv[i].iov_len = sizeof bufs[i];
        mm[i].msg_hdr.msg_iov = &iv[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    SHOW("recvmmsg WAITFORONE", syscall(SYS_recvmmsg, sv[1], mm, 3, MSG_WAITFORONE, NULL));
    printf("msg_len %u %u %u\n", mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
    SHOW("recvmmsg DONTWAIT empty", syscall(SYS_recvmmsg, sv[1], mm, 3, MSG_DONTWAIT, NULL));
    SHOW("sendmmsg bad vector", syscall(SYS_sendmmsg, sv[0], BAD_PTR, 2, 0));
    struct msghdr m = {0};
    m.msg_iovlen = 1025;
    SHOW("sendmsg 1025 iovecs", sendmsg(sv[0], &m, 0));
    m.msg_iovlen = 0;
    m.msg_namelen = 200;
    m.msg_name = bufs;
    SHOW("sendmsg namelen 200", sendmsg(sv[0], &m, 0));
    SHOW("sendmsg bad msghdr", syscall(SYS_sendmsg, sv[0], BAD_PTR, 0));
    SHOW("recvmsg bad msghdr", syscall(SYS_recvmsg, sv[1], BAD_PTR, 0));
    SHOW("recvmsg MSG_CMSG_COMPAT", syscall(SYS_recvmsg, sv[1], &m, 0x80000000u | MSG_DONTWAIT));
    SHOW("sendmsg MSG_CMSG_COMPAT", syscall(SYS_sendmsg, sv[0], &m, 0x80000000u));

    /* An error after some datagrams: recorded for SO_ERROR or the next
     * call; EAGAIN is not. The datagram whose copy faulted is lost. */
    const char *more[] = {"1", "22", "333", "4444", "55555", "666666"};
    for (int i = 0; i < 6; i++)
        send(sv[0], more[i], strlen(more[i]), 0);
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        iv[i].iov_base = i == 1 ? BAD_PTR : bufs[i];
        iv[i].iov_len = sizeof bufs[i];
        mm[i].msg_hdr.msg_iov = &iv[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    SHOW("recvmmsg, second buffer bad", syscall(SYS_recvmmsg, sv[1], mm, 3, MSG_DONTWAIT, NULL));
    int err = 0;
    socklen_t el = sizeof err;
    getsockopt(sv[1], SOL_SOCKET, SO_ERROR, &err, &el);
    printf("SO_ERROR then %s\n", sockerr(err));
    getsockopt(sv[1], SOL_SOCKET, SO_ERROR, &err, &el);
    printf("SO_ERROR again %s\n", sockerr(err));
    SHOW("recvmmsg, second buffer bad, again", syscall(SYS_recvmmsg, sv[1], mm, 3, MSG_DONTWAIT, NULL));
    SHOW("the next recv gets the error", recv(sv[1], bufs[0], sizeof bufs[0], MSG_DONTWAIT));
    SHOW("and then the datagram after", recv(sv[1], bufs[0], sizeof bufs[0], MSG_DONTWAIT));
    send(sv[0], "7", 1, 0);
    iv[1].iov_base = bufs[1];
    SHOW("recvmmsg of 3 with 1 queued", syscall(SYS_recvmmsg, sv[1], mm, 3, MSG_DONTWAIT, NULL));
    getsockopt(sv[1], SOL_SOCKET, SO_ERROR, &err, &el);
    printf("SO_ERROR after EAGAIN %s\n", sockerr(err));

    /* The timeout: checked before the descriptor, what is left written
     * back. */
    struct timespec ts = {0, 2000000000L};
    SHOW("recvmmsg bad timeout, bad fd", syscall(SYS_recvmmsg, 999, mm, 3, 0, &ts));
    SHOW("recvmmsg timeout at a bad address", syscall(SYS_recvmmsg, 999, mm, 3, 0, BAD_PTR));
    send(sv[0], "8", 1, 0);
    send(sv[0], "9", 1, 0);
    ts.tv_sec = 5;
    ts.tv_nsec = 0;
    SHOW("recvmmsg 2 with a 5 s timeout", syscall(SYS_recvmmsg, sv[1], mm, 2, 0, &ts));
    printf("timeout left between 4 and 5 s: %d\n", ts.tv_sec == 4 && ts.tv_nsec > 0);
    close(sv[0]);
    close(sv[1]);

    /* sendmmsg: a message that goes only in part ends the batch. */
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
    static char big[300000];
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 2; i++) {
        iv[i].iov_base = big;
        iv[i].iov_len = sizeof big;
        mm[i].msg_hdr.msg_iov = &iv[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    SHOW("sendmmsg of 2 x 300000 bytes, non-blocking", syscall(SYS_sendmmsg, sv[0], mm, 2, 0));
    printf("msg_len %u %u\n", mm[0].msg_len, mm[1].msg_len);
    SHOW("sendmmsg on a full socket", syscall(SYS_sendmmsg, sv[0], mm, 2, 0));
    close(sv[0]);
    close(sv[1]);
}

/* Prints the owner and mode of a socket file. */
static void show_owner(const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        printf("%s: stat failed %s\n", what, errname(errno));
        return;
    }
    printf("%s: S_ISSOCK %d uid %d gid %d mode %o\n", what, S_ISSOCK(st.st_mode), (int)st.st_uid, (int)st.st_gid,
           (unsigned)(st.st_mode & 07777));
}

/* A socket of `type` bound at `path` (listening if a stream). */
static int bound(int type, const char *path)
{
    struct sockaddr_un a;
    socklen_t al = un_addr(&a, path);
    int s = socket(AF_UNIX, type, 0);
    if (bind(s, (struct sockaddr *)&a, al) != 0)
        printf("bind %s failed: %s\n", path, sockerr(errno));
    if (type == SOCK_STREAM)
        listen(s, 8);
    return s;
}

static long connect_to(int s, const char *path)
{
    struct sockaddr_un a;
    socklen_t al = un_addr(&a, path);
    return connect(s, (struct sockaddr *)&a, al);
}

/* accept reserves the new descriptor before it takes a connection:
 * EMFILE leaves the connection waiting. Linux's order of checks. */
static void test_accept_emfile(void)
{
    int l = bound(SOCK_STREAM, "@kiln-unix-emfile");
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    connect_to(c, "@kiln-unix-emfile");
    write(c, "hi", 2);
    int reg = open("/tmp/kiln-unix-reg", O_CREAT | O_RDWR, 0600);
    unlink("/tmp/kiln-unix-reg");
    SHOW("accept4(a regular file, bad flags)", syscall(SYS_accept4, reg, NULL, NULL, 0x40));
    SHOW("accept(a regular file)", accept(reg, NULL, NULL));
    struct rlimit old, low;
    getrlimit(RLIMIT_NOFILE, &old);
    low = old;
    low.rlim_cur = 32;
    setrlimit(RLIMIT_NOFILE, &low);
    int fill[32], n = 0;
    while (n < 32 && (fill[n] = dup(0)) >= 0)
        n++;
    SHOW("accept with no descriptor left", accept(l, NULL, NULL));
    SHOW("accept(a regular file) with none left", accept(reg, NULL, NULL));
    printf("listener still readable: %d\n", (revents(l, POLLIN) & POLLIN) != 0);
    close(fill[--n]);
    int a = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    check(a >= 0, "accept once a descriptor is free");
    char buf[4] = {0};
    SHOW("the connection's data", read(a, buf, sizeof buf));
    close(a);
    while (n > 0)
        close(fill[--n]);
    setrlimit(RLIMIT_NOFILE, &old);
    /* A bad address buffer: EFAULT, and the connection is closed. */
    int c2 = socket(AF_UNIX, SOCK_STREAM, 0);
    connect_to(c2, "@kiln-unix-emfile");
    socklen_t len = sizeof(struct sockaddr_un);
    SHOW("accept with a bad address", accept(l, BAD_PTR, &len));
    SHOW("the client then reads", read(c2, buf, sizeof buf));
    close(c2);
    close(c);
    close(reg);
    /* A listener shut for reading: accept waits no more, connects are
     * refused. */
    shutdown(l, SHUT_RD);
    pollstr("listener after SHUT_RD", l);
    SHOW("blocking accept after SHUT_RD", accept(l, NULL, NULL));
    fcntl(l, F_SETFL, O_NONBLOCK);
    SHOW("non-blocking accept after SHUT_RD", accept(l, NULL, NULL));
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    SHOW("connect to it", connect_to(c, "@kiln-unix-emfile"));
    close(c);
    close(l);
}

static void test_perm(void)
{
    mkdir("/tmp/kiln-unix-ro", 0755);
    mkdir("/tmp/kiln-unix-nx", 0700);
    mkdir("/tmp/kiln-unix-sgid", 0777);
    chown("/tmp/kiln-unix-sgid", 0, 50);
    chmod("/tmp/kiln-unix-sgid", 02777);
    mode_t old = umask(022);
    int l1 = bound(SOCK_STREAM, "/tmp/kiln-unix-root.sock");
    show_owner("root's socket", "/tmp/kiln-unix-root.sock");
    int l2 = bound(SOCK_STREAM, "/tmp/kiln-unix-nx/in.sock");
    chmod("/tmp/kiln-unix-nx/in.sock", 0777);
    int l3 = bound(SOCK_STREAM, "/tmp/kiln-unix-open.sock");
    chmod("/tmp/kiln-unix-open.sock", 0777);
    int d1 = bound(SOCK_DGRAM, "/tmp/kiln-unix-rootd.sock");
    int d2 = bound(SOCK_DGRAM, "/tmp/kiln-unix-opend.sock");
    chmod("/tmp/kiln-unix-opend.sock", 0666);
    close(open("/tmp/kiln-unix-file", O_CREAT | O_WRONLY, 0644));
    close(open("/tmp/kiln-unix-wfile", O_CREAT | O_WRONLY, 0644));
    chmod("/tmp/kiln-unix-wfile", 0666);

    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0)
            _exit(2);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a;
        socklen_t al = un_addr(&a, "/tmp/kiln-unix-ro/x.sock");
        SHOW("user: bind in root's 0755 directory", bind(s, (struct sockaddr *)&a, al));
        al = un_addr(&a, "/tmp/kiln-unix-nx/x.sock");
        SHOW("user: bind in root's 0700 directory", bind(s, (struct sockaddr *)&a, al));
        al = un_addr(&a, "/tmp/kiln-unix-user.sock");
        SHOW("user: bind in /tmp", bind(s, (struct sockaddr *)&a, al));
        show_owner("user's socket, umask 022", "/tmp/kiln-unix-user.sock");
        umask(077);
        close(bound(SOCK_STREAM, "/tmp/kiln-unix-user2.sock"));
        show_owner("user's socket, umask 077", "/tmp/kiln-unix-user2.sock");
        close(bound(SOCK_DGRAM, "/tmp/kiln-unix-sgid/s.sock"));
        show_owner("in a set-group-ID directory", "/tmp/kiln-unix-sgid/s.sock");
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        SHOW("user: connect to root's 0755 socket", connect_to(c, "/tmp/kiln-unix-root.sock"));
        SHOW("user: connect through a 0700 directory", connect_to(c, "/tmp/kiln-unix-nx/in.sock"));
        SHOW("user: connect to a 0644 regular file", connect_to(c, "/tmp/kiln-unix-file"));
        SHOW("user: connect to a 0666 regular file", connect_to(c, "/tmp/kiln-unix-wfile"));
        SHOW("user: connect to a missing name", connect_to(c, "/tmp/kiln-unix-ro/none.sock"));
        SHOW("user: connect to a 0777 socket", connect_to(c, "/tmp/kiln-unix-open.sock"));
        int d = socket(AF_UNIX, SOCK_DGRAM, 0);
        al = un_addr(&a, "/tmp/kiln-unix-rootd.sock");
        SHOW("user: sendto root's 0755 datagram socket", sendto(d, "x", 1, 0, (struct sockaddr *)&a, al));
        SHOW("user: connect a datagram socket to it", connect(d, (struct sockaddr *)&a, al));
        al = un_addr(&a, "/tmp/kiln-unix-opend.sock");
        SHOW("user: sendto a 0666 datagram socket", sendto(d, "y", 1, 0, (struct sockaddr *)&a, al));
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the unprivileged child ran");
    char buf[8];
    SHOW("root: the user's datagram arrived", recv(d2, buf, sizeof buf, MSG_DONTWAIT));
    SHOW("root: nothing from the refused one", recv(d1, buf, sizeof buf, MSG_DONTWAIT));
    int acc = accept4(l3, NULL, NULL, SOCK_NONBLOCK);
    check(acc >= 0, "root accepts the user's connection");
    struct ucred pc;
    socklen_t pl = sizeof pc;
    getsockopt(acc, SOL_SOCKET, SO_PEERCRED, &pc, &pl);
    printf("its SO_PEERCRED: uid %d gid %d\n", (int)pc.uid, (int)pc.gid);
    close(acc);
    /* Root passes any mode; a socket nobody listens on refuses. */
    chmod("/tmp/kiln-unix-user2.sock", 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    SHOW("root: connect to a mode 0 closed socket", connect_to(c, "/tmp/kiln-unix-user2.sock"));
    close(c);

    /* The file-system ids own what bind makes. */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        setfsgid(1000);
        setfsuid(1000);
        umask(0);
        close(bound(SOCK_STREAM, "/tmp/kiln-unix-fs.sock"));
        show_owner("bound with fsuid and fsgid 1000, umask 0", "/tmp/kiln-unix-fs.sock");
        _exit(0);
    }
    wait_for(pid, &st, 0);
    umask(old);
    int fds[] = {l1, l2, l3, d1, d2};
    for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
        close(fds[i]);
    const char *files[] = {"/tmp/kiln-unix-root.sock", "/tmp/kiln-unix-nx/in.sock", "/tmp/kiln-unix-open.sock",
                           "/tmp/kiln-unix-rootd.sock", "/tmp/kiln-unix-opend.sock", "/tmp/kiln-unix-file",
                           "/tmp/kiln-unix-wfile", "/tmp/kiln-unix-user.sock", "/tmp/kiln-unix-user2.sock",
                           "/tmp/kiln-unix-sgid/s.sock", "/tmp/kiln-unix-fs.sock"};
    for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir("/tmp/kiln-unix-ro");
    rmdir("/tmp/kiln-unix-nx");
    rmdir("/tmp/kiln-unix-sgid");
}

int main(void)
{
    t_init("unix");
    test_creation();
    test_stream_pair();
    test_stream_buffer();
    test_options();
    test_names();
    test_dgram();
    test_seqpacket();
    test_poll_select();
    test_mmsg();
    test_perm();
    test_accept_emfile();
    return t_done();
}
