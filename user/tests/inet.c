/*
 * inet: AF_INET and AF_INET6 sockets over the loopback.  socket(2)'s
 * type/protocol errors; option defaults and round trips (SO_TYPE,
 * SO_PROTOCOL, SO_DOMAIN, SO_RCVBUF/SO_SNDBUF, SO_REUSEADDR/REUSEPORT,
 * SO_KEEPALIVE, SO_LINGER, SO_RCVTIMEO, TCP_NODELAY, TCP_CORK,
 * TCP_KEEPIDLE, IPV6_V6ONLY, IP_TTL); bind errors (EINVAL, EAFNOSUPPORT,
 * EADDRNOTAVAIL, EADDRINUSE and SO_REUSEADDR/SO_REUSEPORT sharing); TCP
 * connect/accept over 127.0.0.1, ::1 and an IPv4 client of a dual-stack
 * listener (v4-mapped peer), names agreeing on both ends, data both ways,
 * MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL, MSG_TRUNC, FIONREAD, SHUT_WR as
 * end of file, ECONNREFUSED blocking and non-blocking (EINPROGRESS, poll,
 * SO_ERROR), a second connect (0, then EISCONN), EALREADY-free paths,
 * ENOTCONN/EPIPE/EINVAL/EISCONN on wrong states, SIGPIPE and
 * MSG_NOSIGNAL, a reset from SO_LINGER 0 and from closing with unread
 * data (ECONNRESET), SO_RCVTIMEO expiring, a non-blocking writer filling
 * the socket (partial write, EAGAIN); UDP: sendto/recvfrom with
 * addresses, MSG_TRUNC, FIONREAD, EDESTADDRREQ, EMSGSIZE, connected
 * sockets (getsockname's chosen source, peer filtering, SHUT_RD),
 * sendmmsg/recvmmsg, IPv6; TCP_INFO (state, lengths, bytes acknowledged
 * and received), SO_LINGER with a time (close waits for the
 * acknowledgement or the time).
 */
#include "common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

static volatile int sigpipes;
static void on_sigpipe(int s) { (void)s; sigpipes++; }

static struct sockaddr_in v4(const char *a, int port)
{
    struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

static struct sockaddr_in6 v6(const char *a, int port)
{
    struct sockaddr_in6 s = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    inet_pton(AF_INET6, a, &s.sin6_addr);
    return s;
}

static int port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
        return -1;
    return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* The address part of a name, as text (no port: ports are ephemeral). */
static const char *addr_str(int fd, int peer)
{
    static char buf[80];
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    int r = peer ? getpeername(fd, (struct sockaddr *)&ss, &l) : getsockname(fd, (struct sockaddr *)&ss, &l);
    if (r < 0) {
        snprintf(buf, sizeof buf, "-1 %s", errname(errno));
        return buf;
    }
    char a[64];
    if (ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof a);
    else
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof a);
    snprintf(buf, sizeof buf, "%s len %u", a, (unsigned)l);
    return buf;
}

static int same_name(int a, int b)
{
    struct sockaddr_storage x, y;
    socklen_t lx = sizeof x, ly = sizeof y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    if (getsockname(a, (struct sockaddr *)&x, &lx) < 0 || getpeername(b, (struct sockaddr *)&y, &ly) < 0)
        return 0;
    return lx == ly && memcmp(&x, &y, lx) == 0;
}

static int geti(int fd, int level, int name)
{
    int v = -12345;
    socklen_t l = sizeof v;
    if (getsockopt(fd, level, name, &v, &l) < 0)
        return -errno;
    return v;
}

static int seti(int fd, int level, int name, int v)
{
    return setsockopt(fd, level, name, &v, sizeof v);
}

/* A listener on addr (family by sa), port 0; returns fd, port in *port. */
static int listener(int family, const char *addr, int *port)
{
    int s = socket(family, SOCK_STREAM, 0);
    seti(s, SOL_SOCKET, SO_REUSEADDR, 1);
    int r;
    if (family == AF_INET) {
        struct sockaddr_in a = v4(addr, 0);
        r = bind(s, (struct sockaddr *)&a, sizeof a);
    } else {
        struct sockaddr_in6 a = v6(addr, 0);
        r = bind(s, (struct sockaddr *)&a, sizeof a);
    }
    if (r < 0 || listen(s, 16) < 0) {
        printf("FAIL: listener %s: %s\n", addr, errname(errno));
        exit(1);
    }
    *port = port_of(s);
    return s;
}

static int connect_to(int family, const char *addr, int port)
{
    int c = socket(family, SOCK_STREAM, 0);
    int r;
    if (family == AF_INET) {
        struct sockaddr_in a = v4(addr, port);
        r = connect(c, (struct sockaddr *)&a, sizeof a);
    } else {
        struct sockaddr_in6 a = v6(addr, port);
        r = connect(c, (struct sockaddr *)&a, sizeof a);
    }
    if (r < 0) {
        printf("FAIL: connect %s: %s\n", addr, errname(errno));
        close(c);
        return -1;
    }
    return c;
}

/* A port nobody listens on (bound, then closed). */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = v4("127.0.0.1", 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    int p = port_of(s);
    close(s);
    return p;
}

static void creation(void)
{
    EXPECT_ERR(ESOCKTNOSUPPORT, "socket(INET, SEQPACKET)", socket(AF_INET, SOCK_SEQPACKET, 0));
    EXPECT_ERR(EPROTONOSUPPORT, "socket(INET, STREAM, UDP)", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
    EXPECT_ERR(EPROTONOSUPPORT, "socket(INET6, DGRAM, TCP)", socket(AF_INET6, SOCK_DGRAM, IPPROTO_TCP));
    int sv[2];
    EXPECT_ERR(EOPNOTSUPP, "socketpair(INET, STREAM)", socketpair(AF_INET, SOCK_STREAM, 0, sv));
    int t = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    int u = socket(AF_INET6, SOCK_DGRAM, 0);
    printf("tcp: type %d protocol %d domain %d\n", geti(t, SOL_SOCKET, SO_TYPE), geti(t, SOL_SOCKET, SO_PROTOCOL),
           geti(t, SOL_SOCKET, SO_DOMAIN));
    printf("udp6: type %d protocol %d domain %d\n", geti(u, SOL_SOCKET, SO_TYPE), geti(u, SOL_SOCKET, SO_PROTOCOL),
           geti(u, SOL_SOCKET, SO_DOMAIN));
    printf("tcp: rcvbuf %d sndbuf %d\n", geti(t, SOL_SOCKET, SO_RCVBUF), geti(t, SOL_SOCKET, SO_SNDBUF));
    printf("tcp: nodelay %d cork %d keepalive %d reuseaddr %d reuseport %d\n", geti(t, IPPROTO_TCP, TCP_NODELAY),
           geti(t, IPPROTO_TCP, TCP_CORK), geti(t, SOL_SOCKET, SO_KEEPALIVE), geti(t, SOL_SOCKET, SO_REUSEADDR),
           geti(t, SOL_SOCKET, SO_REUSEPORT));
    seti(t, IPPROTO_TCP, TCP_NODELAY, 1);
    seti(t, IPPROTO_TCP, TCP_CORK, 1);
    seti(t, SOL_SOCKET, SO_KEEPALIVE, 1);
    seti(t, SOL_SOCKET, SO_REUSEPORT, 1);
    seti(t, IPPROTO_TCP, TCP_KEEPIDLE, 30);
    printf("tcp: set nodelay %d cork %d keepalive %d reuseport %d keepidle %d\n", geti(t, IPPROTO_TCP, TCP_NODELAY),
           geti(t, IPPROTO_TCP, TCP_CORK), geti(t, SOL_SOCKET, SO_KEEPALIVE), geti(t, SOL_SOCKET, SO_REUSEPORT),
           geti(t, IPPROTO_TCP, TCP_KEEPIDLE));
    EXPECT_ERR(EINVAL, "setsockopt(TCP_KEEPIDLE, 0)", seti(t, IPPROTO_TCP, TCP_KEEPIDLE, 0));
    /* The keepalive triple: defaults, round trips, Linux's bounds. */
    printf("tcp: keepintvl %d keepcnt %d\n", geti(t, IPPROTO_TCP, TCP_KEEPINTVL), geti(t, IPPROTO_TCP, TCP_KEEPCNT));
    printf("tcp: keepidle 32767 %d, keepintvl 32767 %d, keepcnt 127 %d\n", seti(t, IPPROTO_TCP, TCP_KEEPIDLE, 32767),
           seti(t, IPPROTO_TCP, TCP_KEEPINTVL, 32767), seti(t, IPPROTO_TCP, TCP_KEEPCNT, 127));
    EXPECT_ERR(EINVAL, "setsockopt(TCP_KEEPIDLE, 32768)", seti(t, IPPROTO_TCP, TCP_KEEPIDLE, 32768));
    EXPECT_ERR(EINVAL, "setsockopt(TCP_KEEPINTVL, 0)", seti(t, IPPROTO_TCP, TCP_KEEPINTVL, 0));
    EXPECT_ERR(EINVAL, "setsockopt(TCP_KEEPINTVL, 32768)", seti(t, IPPROTO_TCP, TCP_KEEPINTVL, 32768));
    EXPECT_ERR(EINVAL, "setsockopt(TCP_KEEPCNT, 0)", seti(t, IPPROTO_TCP, TCP_KEEPCNT, 0));
    EXPECT_ERR(EINVAL, "setsockopt(TCP_KEEPCNT, 128)", seti(t, IPPROTO_TCP, TCP_KEEPCNT, 128));
    seti(t, IPPROTO_TCP, TCP_KEEPINTVL, 5);
    seti(t, IPPROTO_TCP, TCP_KEEPCNT, 4);
    printf("tcp: set keepidle %d keepintvl %d keepcnt %d\n", geti(t, IPPROTO_TCP, TCP_KEEPIDLE),
           geti(t, IPPROTO_TCP, TCP_KEEPINTVL), geti(t, IPPROTO_TCP, TCP_KEEPCNT));
    EXPECT_ERR(ENOPROTOOPT, "setsockopt(IPPROTO_TCP, 9999)", seti(t, IPPROTO_TCP, 9999, 1));
    printf("getsockopt(IPV6_V6ONLY) on AF_INET: %s\n", errname(-geti(t, IPPROTO_IPV6, IPV6_V6ONLY)));
    printf("getsockopt(level 250) on AF_INET: %s\n", errname(-geti(t, 250, 1)));
    EXPECT_ERR(ENOPROTOOPT, "setsockopt(level 250)", seti(t, 250, 1, 1));
    printf("getsockopt(SOL_IP, 250): %s\n", errname(-geti(t, IPPROTO_IP, 250)));
    printf("tcp: ttl %d\n", geti(t, IPPROTO_IP, IP_TTL));
    seti(t, IPPROTO_IP, IP_TTL, 9);
    printf("tcp: ttl set %d\n", geti(t, IPPROTO_IP, IP_TTL));
    printf("udp6: v6only %d\n", geti(u, IPPROTO_IPV6, IPV6_V6ONLY));
    seti(u, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    printf("udp6: v6only set %d\n", geti(u, IPPROTO_IPV6, IPV6_V6ONLY));
    struct linger lg = {1, 0};
    setsockopt(t, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    socklen_t ll = sizeof lg;
    memset(&lg, 0xff, sizeof lg);
    getsockopt(t, SOL_SOCKET, SO_LINGER, &lg, &ll);
    printf("tcp: linger %d %d\n", lg.l_onoff, lg.l_linger);
    struct pollfd p = {.fd = t, .events = POLLIN | POLLOUT | POLLRDHUP};
    int n = poll(&p, 1, 0);
    printf("tcp: fresh poll %d revents 0x%x\n", n, p.revents);
    p.fd = u;
    n = poll(&p, 1, 0);
    printf("udp6: fresh poll %d revents 0x%x\n", n, p.revents);
    close(t);
    close(u);
}

static void binding(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = v4("127.0.0.1", 0);
    EXPECT_ERR(EINVAL, "bind(short length)", bind(s, (struct sockaddr *)&a, sizeof a - 1));
    struct sockaddr_in6 b6 = v6("::1", 0);
    EXPECT_ERR(EAFNOSUPPORT, "bind(AF_INET socket, AF_INET6 address)", bind(s, (struct sockaddr *)&b6, sizeof b6));
    struct sockaddr_in far = v4("10.254.253.1", 0);
    EXPECT_ERR(EADDRNOTAVAIL, "bind(10.254.253.1)", bind(s, (struct sockaddr *)&far, sizeof far));
    EXPECT_OK("bind(127.0.0.1:0)", bind(s, (struct sockaddr *)&a, sizeof a));
    check(port_of(s) > 0, "bind(port 0) chose a port");
    printf("bound name: %s\n", addr_str(s, 0));
    EXPECT_ERR(EINVAL, "bind twice", bind(s, (struct sockaddr *)&a, sizeof a));
    EXPECT_ERR(ENOTCONN, "getpeername(unconnected)", getpeername(s, (struct sockaddr *)&a, &(socklen_t){sizeof a}));
    int port = port_of(s);
    EXPECT_OK("listen", listen(s, 4));
    {
        /* /proc/net/tcp lists the listener: its port, LISTEN, its inode. */
        struct stat sb;
        fstat(s, &sb);
        FILE *f = fopen("/proc/net/tcp", "r");
        char line[256];
        int found = 0;
        while (f && fgets(line, sizeof line, f)) {
            unsigned la, lp, ra, rp, st;
            unsigned long ino;
            if (sscanf(line, " %*d: %x:%x %x:%x %x %*x:%*x %*x:%*x %*x %*u %*d %lu", &la, &lp, &ra, &rp, &st, &ino) == 6 &&
                la == 0x0100007F && lp == (unsigned)port && st == 0x0A && ino == sb.st_ino)
                found = 1;
        }
        if (f)
            fclose(f);
        check(found, "/proc/net/tcp lists the listener");
    }
    int t = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in same = v4("127.0.0.1", port);
    EXPECT_ERR(EADDRINUSE, "bind(port in use)", bind(t, (struct sockaddr *)&same, sizeof same));
    seti(t, SOL_SOCKET, SO_REUSEADDR, 1);
    seti(s, SOL_SOCKET, SO_REUSEADDR, 1);
    EXPECT_ERR(EADDRINUSE, "bind(listening port, both SO_REUSEADDR)", bind(t, (struct sockaddr *)&same, sizeof same));
    struct sockaddr_in any = v4("0.0.0.0", port);
    EXPECT_ERR(EADDRINUSE, "bind(0.0.0.0, same port)", bind(t, (struct sockaddr *)&any, sizeof any));
    close(s);
    EXPECT_OK("bind(port of a closed listener, SO_REUSEADDR)", bind(t, (struct sockaddr *)&same, sizeof same));
    close(t);

    /* SO_REUSEPORT: two listeners on one port. */
    int r1 = socket(AF_INET, SOCK_STREAM, 0), r2 = socket(AF_INET, SOCK_STREAM, 0);
    seti(r1, SOL_SOCKET, SO_REUSEPORT, 1);
    seti(r2, SOL_SOCKET, SO_REUSEPORT, 1);
    EXPECT_OK("bind(SO_REUSEPORT 1)", bind(r1, (struct sockaddr *)&a, sizeof a));
    struct sockaddr_in rp = v4("127.0.0.1", port_of(r1));
    EXPECT_OK("bind(SO_REUSEPORT 2, same port)", bind(r2, (struct sockaddr *)&rp, sizeof rp));
    EXPECT_OK("listen(SO_REUSEPORT 1)", listen(r1, 4));
    EXPECT_OK("listen(SO_REUSEPORT 2)", listen(r2, 4));
    close(r1);
    close(r2);

    /* UDP: SO_REUSEADDR shares. */
    int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
    bind(u1, (struct sockaddr *)&a, sizeof a);
    struct sockaddr_in up = v4("127.0.0.1", port_of(u1));
    EXPECT_ERR(EADDRINUSE, "udp bind(port in use)", bind(u2, (struct sockaddr *)&up, sizeof up));
    close(u1);
    close(u2);

    int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
    seti(s6, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    struct sockaddr_in6 mapped = v6("::ffff:127.0.0.1", 0);
    EXPECT_ERR(EINVAL, "bind(v4-mapped, IPV6_V6ONLY)", bind(s6, (struct sockaddr *)&mapped, sizeof mapped));
    struct sockaddr_in6 lo6 = v6("::1", 0);
    EXPECT_OK("bind(::1)", bind(s6, (struct sockaddr *)&lo6, sizeof lo6));
    EXPECT_ERR(EINVAL, "setsockopt(IPV6_V6ONLY) after bind", seti(s6, IPPROTO_IPV6, IPV6_V6ONLY, 0));
    close(s6);
}

static void tcp_pair(int family, const char *laddr, const char *caddr, int cfamily)
{
    printf("-- tcp %s <- %s\n", laddr, caddr);
    int port;
    int l = listener(family, laddr, &port);
    int c = connect_to(cfamily, caddr, port);
    if (c < 0)
        return;
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    int s = accept(l, (struct sockaddr *)&peer, &pl);
    if (!check(s >= 0, "accept"))
        return;
    printf("accept peer len %u family %d\n", (unsigned)pl, peer.ss_family);
    printf("server name %s\n", addr_str(s, 0));
    printf("server peer %s\n", addr_str(s, 1));
    printf("client name %s\n", addr_str(c, 0));
    printf("client peer %s\n", addr_str(c, 1));
    if (family == cfamily)
        check(same_name(c, s) && same_name(s, c), "names agree on both ends");
    check(port_of(s) == port, "accepted socket has the listener's port");

    char buf[256];
    EXPECT_ERR(EAGAIN, "recv(MSG_DONTWAIT) empty", recv(s, buf, sizeof buf, MSG_DONTWAIT));
    check(send(c, "hello world", 11, 0) == 11, "send 11");
    int n = -1;
    ioctl(s, FIONREAD, &n);
    printf("FIONREAD %d\n", n);
    memset(buf, 0, sizeof buf);
    printf("peek %zd '%s'\n", recv(s, buf, 5, MSG_PEEK), buf);
    memset(buf, 0, sizeof buf);
    printf("recv %zd '%s'\n", recv(s, buf, 5, 0), buf);
    printf("recv MSG_TRUNC %zd\n", recv(s, NULL, 3, MSG_TRUNC));
    memset(buf, 0, sizeof buf);
    printf("recv rest %zd '%s'\n", recv(s, buf, sizeof buf, 0), buf);
    check(write(s, "reply", 5) == 5, "write from the server");
    memset(buf, 0, sizeof buf);
    printf("client read %zd '%s'\n", read(c, buf, sizeof buf), buf);

    /* MSG_WAITALL across two writes from a child. */
    pid_t pid = fork();
    if (pid == 0) {
        write(c, "abc", 3);
        usleep(50000);
        write(c, "defgh", 5);
        _exit(0);
    }
    memset(buf, 0, sizeof buf);
    printf("recv MSG_WAITALL %zd '%s'\n", recv(s, buf, 8, MSG_WAITALL), buf);
    waitpid(pid, NULL, 0);

    EXPECT_ERR(EISCONN, "connect(connected)", connect(c, (struct sockaddr *)&peer, pl));
    EXPECT_ERR(EINVAL, "listen(connected)", listen(c, 1));
    EXPECT_ERR(EINVAL, "accept(not listening)", accept(c, NULL, NULL));
    EXPECT_ERR(ENOTCONN, "recv(listening)", recv(l, buf, 1, 0));

    EXPECT_OK("shutdown(client, SHUT_WR)", shutdown(c, SHUT_WR));
    struct pollfd p = {.fd = s, .events = POLLIN | POLLOUT | POLLRDHUP};
    poll(&p, 1, 1000);
    printf("server poll after peer SHUT_WR 0x%x\n", p.revents);
    printf("server recv at end %zd\n", recv(s, buf, sizeof buf, 0));
    check(send(s, "after", 5, 0) == 5, "the server still sends after the client's SHUT_WR");
    memset(buf, 0, sizeof buf);
    printf("client read %zd '%s'\n", read(c, buf, sizeof buf), buf);
    EXPECT_ERR(EPIPE, "send after SHUT_WR", send(c, "x", 1, MSG_NOSIGNAL));
    close(s);
    p.fd = c;
    poll(&p, 1, 1000);
    printf("client poll after both ends shut 0x%x\n", p.revents);
    printf("client read at end %zd\n", read(c, buf, sizeof buf));
    close(c);
    close(l);
}

static void errors(void)
{
    printf("-- errors\n");
    char buf[16];
    int port = free_port();
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = v4("127.0.0.1", port);
    EXPECT_ERR(ECONNREFUSED, "connect(no listener)", connect(c, (struct sockaddr *)&a, sizeof a));
    printf("SO_ERROR after refused connect %d\n", geti(c, SOL_SOCKET, SO_ERROR));
    close(c);

    c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    EXPECT_ERR(EINPROGRESS, "non-blocking connect(no listener)", connect(c, (struct sockaddr *)&a, sizeof a));
    struct pollfd p = {.fd = c, .events = POLLIN | POLLOUT | POLLRDHUP};
    poll(&p, 1, 2000);
    printf("poll after refusal 0x%x\n", p.revents);
    printf("SO_ERROR %s\n", errname(geti(c, SOL_SOCKET, SO_ERROR)));
    printf("SO_ERROR again %d\n", geti(c, SOL_SOCKET, SO_ERROR));
    close(c);

    int l = listener(AF_INET, "127.0.0.1", &port);
    c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    a = v4("127.0.0.1", port);
    EXPECT_ERR(EINPROGRESS, "non-blocking connect", connect(c, (struct sockaddr *)&a, sizeof a));
    p.fd = c;
    p.events = POLLOUT;
    int pn = poll(&p, 1, 2000);
    printf("poll for completion %d 0x%x\n", pn, p.revents);
    printf("SO_ERROR %d\n", geti(c, SOL_SOCKET, SO_ERROR));
    printf("connect again %d\n", connect(c, (struct sockaddr *)&a, sizeof a));
    EXPECT_ERR(EISCONN, "connect a third time", connect(c, (struct sockaddr *)&a, sizeof a));
    int s = accept(l, NULL, NULL);
    check(s >= 0, "accept the non-blocking connection");

    /* A non-blocking writer fills the connection. */
    static char big[4 << 20];
    ssize_t w = send(c, big, sizeof big, 0);
    check(w > 0 && w < (ssize_t)sizeof big, "non-blocking send of 4 MiB is partial");
    EXPECT_ERR(EAGAIN, "send on a full socket", send(c, big, sizeof big, 0));
    close(c);
    close(s);

    int u = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_ERR(ENOTCONN, "recv(unconnected)", recv(u, buf, 1, 0));
    EXPECT_ERR(EPIPE, "send(unconnected, MSG_NOSIGNAL)", send(u, "x", 1, MSG_NOSIGNAL));
    EXPECT_ERR(ENOTCONN, "shutdown(unconnected)", shutdown(u, SHUT_RDWR));
    EXPECT_ERR(EINVAL, "shutdown(how 7)", shutdown(u, 7));
    EXPECT_ERR(EINVAL, "accept(unbound)", accept(u, NULL, NULL));
    signal(SIGPIPE, on_sigpipe);
    EXPECT_ERR(EPIPE, "send(unconnected)", send(u, "x", 1, 0));
    printf("SIGPIPEs %d\n", sigpipes);
    close(u);

    /* SO_RCVTIMEO. */
    c = connect_to(AF_INET, "127.0.0.1", port);
    s = accept(l, NULL, NULL);
    struct timeval tv = {0, 100000};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_ERR(EAGAIN, "recv with SO_RCVTIMEO", recv(c, buf, 1, 0));

    /* The server closes; the client's write draws a reset; the next is EPIPE. */
    close(s);
    usleep(50000);
    check(send(c, "x", 1, 0) == 1, "send to a closed peer succeeds once");
    usleep(50000);
    EXPECT_ERR(EPIPE, "send after the peer's reset", send(c, "x", 1, 0));
    printf("SIGPIPEs %d\n", sigpipes);
    EXPECT_ERR(EPIPE, "send again, MSG_NOSIGNAL", send(c, "x", 1, MSG_NOSIGNAL));
    printf("SIGPIPEs %d\n", sigpipes);
    close(c);

    /* SO_LINGER 0: close sends a reset. */
    c = connect_to(AF_INET, "127.0.0.1", port);
    s = accept(l, NULL, NULL);
    struct linger lg = {1, 0};
    setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(s);
    usleep(50000);
    EXPECT_ERR(ECONNRESET, "recv after the peer's SO_LINGER 0 close", recv(c, buf, 1, 0));
    printf("recv after the reset %zd\n", recv(c, buf, 1, 0));
    close(c);

    /* Closing with unread data sends a reset. */
    c = connect_to(AF_INET, "127.0.0.1", port);
    s = accept(l, NULL, NULL);
    send(c, "unread", 6, 0);
    usleep(50000);
    close(s);
    usleep(50000);
    EXPECT_ERR(ECONNRESET, "recv after the peer closed with unread data", recv(c, buf, 1, 0));
    close(c);
    close(l);
    signal(SIGPIPE, SIG_DFL);
}

static void udp(int family, const char *addr)
{
    printf("-- udp %s\n", addr);
    int a = socket(family, SOCK_DGRAM, 0), b = socket(family, SOCK_DGRAM, 0);
    struct sockaddr_storage sa;
    socklen_t sl;
    if (family == AF_INET) {
        *(struct sockaddr_in *)&sa = v4(addr, 0);
        sl = sizeof(struct sockaddr_in);
    } else {
        *(struct sockaddr_in6 *)&sa = v6(addr, 0);
        sl = sizeof(struct sockaddr_in6);
    }
    EXPECT_ERR(EDESTADDRREQ, "send(unconnected udp)", send(a, "x", 1, 0));
    /* The failed send bound the socket (inet_send_prepare). */
    EXPECT_ERR(EINVAL, "bind after a failed send", bind(a, (struct sockaddr *)&sa, sl));
    close(a);
    a = socket(family, SOCK_DGRAM, 0);
    EXPECT_OK("bind a", bind(a, (struct sockaddr *)&sa, sl));
    struct sockaddr_storage to = sa;
    ((struct sockaddr_in *)&to)->sin_port = htons(port_of(a));
    check(sendto(b, "datagram", 8, 0, (struct sockaddr *)&to, sl) == 8, "sendto a");
    check(sendto(b, "second!", 7, 0, (struct sockaddr *)&to, sl) == 7, "sendto a again");
    printf("b autobound %s\n", addr_str(b, 0));
    int n = -1;
    ioctl(a, FIONREAD, &n);
    printf("FIONREAD %d\n", n);
    char buf[70000];
    struct sockaddr_storage from;
    socklen_t fl = sizeof from;
    printf("recvfrom MSG_TRUNC %zd\n", recvfrom(a, buf, 4, MSG_TRUNC, (struct sockaddr *)&from, &fl));
    check(fl == sl && ((struct sockaddr_in *)&from)->sin_port == htons(port_of(b)), "recvfrom names the sender");
    struct iovec iov = {buf, 3};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t r = recvmsg(a, &mh, 0);
    printf("recvmsg short %zd flags MSG_TRUNC %d\n", r, !!(mh.msg_flags & MSG_TRUNC));
    EXPECT_ERR(EAGAIN, "recv(MSG_DONTWAIT) empty", recv(a, buf, 1, MSG_DONTWAIT));
    /* The largest IPv4 datagram; a large IPv6 one that needs no
     * fragmentation on the loopback. */
    int big = family == AF_INET ? 65507 : 65000;
    check(sendto(b, buf, big, 0, (struct sockaddr *)&to, sl) == big, "sendto a %d-byte datagram", big);
    printf("recv large %zd\n", recv(a, buf, sizeof buf, 0));
    int max = family == AF_INET ? 65507 : 65527;
    EXPECT_ERR(EMSGSIZE, "sendto a datagram too large", sendto(b, buf, max + 1, 0, (struct sockaddr *)&to, sl));

    /* Connected: only the peer's datagrams, a chosen source address. */
    int c = socket(family, SOCK_DGRAM, 0);
    struct sockaddr_storage bn;
    socklen_t bl = sizeof bn;
    getsockname(b, (struct sockaddr *)&bn, &bl);
    if (family == AF_INET)
        ((struct sockaddr_in *)&bn)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else
        ((struct sockaddr_in6 *)&bn)->sin6_addr = in6addr_loopback;
    EXPECT_OK("connect(udp)", connect(a, (struct sockaddr *)&bn, bl));
    printf("connected name %s\n", addr_str(a, 0));
    printf("connected peer %s\n", addr_str(a, 1));
    sendto(c, "stranger", 8, 0, (struct sockaddr *)&to, sl);
    sendto(b, "friend", 6, 0, (struct sockaddr *)&to, sl);
    memset(buf, 0, 16);
    printf("connected recv %zd '%s'\n", recv(a, buf, sizeof buf, 0), buf);
    EXPECT_ERR(EAGAIN, "nothing from the stranger", recv(a, buf, 1, MSG_DONTWAIT));
    check(send(a, "back", 4, 0) == 4, "send on the connected socket");
    memset(buf, 0, 16);
    printf("b got %zd '%s'\n", recv(b, buf, sizeof buf, 0), buf);

    /* sendmmsg / recvmmsg. */
    struct mmsghdr mm[3];
    struct iovec iv[3];
    char *words[3] = {"one", "three", "seven!!"};
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        iv[i].iov_base = words[i];
        iv[i].iov_len = strlen(words[i]);
        mm[i].msg_hdr.msg_iov = &iv[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    printf("sendmmsg %d\n", sendmmsg(a, mm, 3, 0));
    (void)mm;
    struct mmsghdr rm[4];
    struct iovec ri[4];
    char rb[4][16];
    memset(rm, 0, sizeof rm);
    for (int i = 0; i < 4; i++) {
        ri[i].iov_base = rb[i];
        ri[i].iov_len = sizeof rb[i];
        rm[i].msg_hdr.msg_iov = &ri[i];
        rm[i].msg_hdr.msg_iovlen = 1;
    }
    usleep(20000);
    int got = recvmmsg(b, rm, 4, MSG_DONTWAIT, NULL);
    printf("recvmmsg %d:", got);
    for (int i = 0; i < got; i++)
        printf(" %u", rm[i].msg_len);
    printf("\n");

    EXPECT_ERR(ENOTCONN, "shutdown(unconnected udp)", shutdown(c, SHUT_RD));
    EXPECT_OK("shutdown(connected udp, SHUT_RD)", shutdown(a, SHUT_RD));
    printf("recv after SHUT_RD %zd\n", recv(a, buf, 1, 0));
    close(a);
    close(b);
    close(c);
}

/* accept4's flags, FIONBIO and SO_SNDTIMEO on an Internet socket (the
 * AF_UNIX tests have their own). */
static void flags_and_ioctls(int family, const char *addr)
{
    printf("-- accept4, FIONBIO, SO_SNDTIMEO on %s\n", addr);
    int port;
    int l = listener(family, addr, &port);
    int c = connect_to(family, addr, port);
    if (c < 0)
        return;
    int s = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (!check(s >= 0, "accept4(SOCK_NONBLOCK | SOCK_CLOEXEC)"))
        return;
    printf("accepted O_NONBLOCK %d FD_CLOEXEC %d\n", !!(fcntl(s, F_GETFL) & O_NONBLOCK),
           !!(fcntl(s, F_GETFD) & FD_CLOEXEC));
    char b[8];
    EXPECT_ERR(EAGAIN, "recv on the non-blocking accepted socket", recv(s, b, sizeof b, 0));
    int on = 1, off = 0;
    EXPECT_OK("ioctl(FIONBIO, 1)", ioctl(c, FIONBIO, &on));
    printf("after FIONBIO 1: O_NONBLOCK %d\n", !!(fcntl(c, F_GETFL) & O_NONBLOCK));
    EXPECT_ERR(EAGAIN, "recv after FIONBIO 1", recv(c, b, sizeof b, 0));
    EXPECT_OK("ioctl(FIONBIO, 0)", ioctl(c, FIONBIO, &off));
    printf("after FIONBIO 0: O_NONBLOCK %d\n", !!(fcntl(c, F_GETFL) & O_NONBLOCK));
    struct timeval tv = {1, 500000}, got = {0, 0};
    socklen_t len = sizeof got;
    EXPECT_OK("setsockopt(SO_SNDTIMEO 1.5 s)", setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    EXPECT_OK("getsockopt(SO_SNDTIMEO)", getsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &got, &len));
    printf("SO_SNDTIMEO %ld.%06ld len %u\n", (long)got.tv_sec, (long)got.tv_usec, (unsigned)len);
    tv.tv_usec = 1000000;
    EXPECT_ERR(EDOM, "setsockopt(SO_SNDTIMEO usec 1000000)", setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    check(send(c, "x", 1, 0) == 1, "send with a send timeout");
    close(s);
    close(c);
    close(l);
}

/* TCP_INFO: only what is the same on any loaded machine (the state, the
 * lengths, bytes acknowledged and received once the peer's reply proves
 * it); timers, windows and options differ between kernels. */
static unsigned char tinfo_buf[512];

static int tinfo(int fd, socklen_t len)
{
    memset(tinfo_buf, 0, sizeof tinfo_buf);
    socklen_t l = len;
    int r = getsockopt(fd, IPPROTO_TCP, TCP_INFO, tinfo_buf, &l);
    return r < 0 ? -1 : (int)l;
}

static unsigned long long tinfo_u64(int off)
{
    unsigned long long v;
    memcpy(&v, tinfo_buf + off, 8);
    return v;
}

static void tcp_info_and_linger(int family, const char *addr)
{
    printf("-- TCP_INFO, SO_LINGER with a time on %s\n", addr);
    int f = socket(family, SOCK_STREAM, 0);
    int len = tinfo(f, sizeof tinfo_buf);
    printf("new socket: len >= 248 %d, state %u\n", len >= 248, tinfo_buf[0]);
    printf("len 104 -> %d, len 8 -> %d\n", tinfo(f, 104), tinfo(f, 8));
    close(f);
    int u = socket(family, SOCK_DGRAM, 0);
    socklen_t ul = sizeof tinfo_buf;
    /* udp_getsockopt's EOPNOTSUPP; IPv6 goes through ipv6_getsockopt. */
    EXPECT_ERR(family == AF_INET ? EOPNOTSUPP : ENOPROTOOPT, "TCP_INFO on a UDP socket",
               getsockopt(u, IPPROTO_TCP, TCP_INFO, tinfo_buf, &ul));
    close(u);
    int port;
    int l = listener(family, addr, &port);
    tinfo(l, sizeof tinfo_buf);
    printf("listener: state %u\n", tinfo_buf[0]);
    int c = connect_to(family, addr, port);
    if (c < 0)
        return;
    int s = accept(l, NULL, NULL);
    tinfo(c, sizeof tinfo_buf);
    printf("client: state %u acked %llu received %llu\n", tinfo_buf[0], tinfo_u64(120), tinfo_u64(128));
    tinfo(s, sizeof tinfo_buf);
    printf("server: state %u acked %llu received %llu\n", tinfo_buf[0], tinfo_u64(120), tinfo_u64(128));
    static char data[5000];
    check(send(c, data, sizeof data, 0) == (ssize_t)sizeof data, "send 5000");
    check(recv(s, data, sizeof data, MSG_WAITALL) == (ssize_t)sizeof data, "recv 5000");
    check(send(s, "k", 1, 0) == 1, "reply");
    check(recv(c, data, 1, 0) == 1, "recv the reply");
    tinfo(c, sizeof tinfo_buf);
    printf("client after the reply: acked %llu received %llu\n", tinfo_u64(120), tinfo_u64(128));
    tinfo(s, sizeof tinfo_buf);
    printf("server after the reply: received %llu\n", tinfo_u64(128));
    close(s);
    printf("client reads end of file %zd\n", recv(c, data, 1, 0));
    tinfo(c, sizeof tinfo_buf);
    printf("client after the FIN: state %u received %llu\n", tinfo_buf[0], tinfo_u64(128));
    close(c);

    /* SO_LINGER 1 s with data the peer does not read: close waits the
     * whole second (non-blocking or not), returns 0, and the data still
     * arrives after it. */
    c = connect_to(family, addr, port);
    s = accept(l, NULL, NULL);
    fcntl(c, F_SETFL, O_NONBLOCK);
    static char chunk[65536];
    long sent = 0;
    ssize_t n;
    while ((n = send(c, chunk, sizeof chunk, 0)) > 0)
        sent += n;
    struct linger lg = {1, 1};
    EXPECT_OK("setsockopt(SO_LINGER 1 s)", setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
    int64_t t0 = mono_ns();
    int r = close(c);
    int64_t waited = mono_ns() - t0;
    printf("close with unacknowledged data %d, waited the linger time %d\n", r, waited >= 900000000LL);
    long got = 0;
    while ((n = recv(s, chunk, sizeof chunk, 0)) > 0)
        got += n;
    printf("after it the peer reads all %d, then %zd\n", got == sent, n);
    close(s);

    /* SO_LINGER 5 s with data that fits the peer's buffer: acknowledged
     * at once; close returns 0 and the peer reads it and end of file. */
    c = connect_to(family, addr, port);
    s = accept(l, NULL, NULL);
    lg.l_linger = 5;
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    check(send(c, "lingering", 9, 0) == 9, "send 9");
    printf("close with acknowledged data %d\n", close(c));
    memset(data, 0, 16);
    n = recv(s, data, 16, MSG_WAITALL);
    printf("peer reads %zd '%.9s', then %zd\n", n, data, recv(s, data + 16, 1, 0));
    close(s);
    close(l);
}

int main(void)
{
    t_init("inet");
    creation();
    binding();
    tcp_pair(AF_INET, "127.0.0.1", "127.0.0.1", AF_INET);
    tcp_pair(AF_INET6, "::1", "::1", AF_INET6);
    tcp_pair(AF_INET6, "::", "127.0.0.1", AF_INET);
    errors();
    flags_and_ioctls(AF_INET, "127.0.0.1");
    flags_and_ioctls(AF_INET6, "::1");
    tcp_info_and_linger(AF_INET, "127.0.0.1");
    tcp_info_and_linger(AF_INET6, "::1");
    udp(AF_INET, "127.0.0.1");
    udp(AF_INET6, "::1");
    return t_done();
}
