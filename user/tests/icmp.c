/*
 * icmp: ICMP echo over the loopback, through the two kinds of ICMP
 * socket Linux has.  Ping sockets (SOCK_DGRAM, IPPROTO_ICMP and
 * IPPROTO_ICMPV6): gated by net.ipv4.ping_group_range (EACCES outside
 * it; the file's parsing and limits), the identifier as the socket's
 * port (bind, EADDRINUSE, autobind on send), the kernel filling the
 * identifier and checksum, the send errors in Linux's order, replies
 * only (never the request), MSG_PEEK/MSG_TRUNC, connect, poll.  Raw
 * sockets (SOCK_RAW, root or CAP_NET_RAW, EPERM otherwise): the IPv4
 * header on receive, the request and then the kernel's reply, the
 * sender's own checksum (a wrong one gets no reply), ICMP_FILTER,
 * IP_HDRINCL with the fields the kernel fills; ICMPv6 without the
 * header, its checksum filled by the kernel, ICMP6_FILTER.
 *
 * Runs as root; the host's ping_group_range is put back at the end.
 * The host sees other ICMP traffic on its raw sockets: receives skip
 * anything without this test's identifiers.
 */
#include "common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#define RANGE "/proc/sys/net/ipv4/ping_group_range"
#ifndef ICMP_FILTER
#define ICMP_FILTER 1 /* linux/icmp.h */
#endif

static char saved_range[64];

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

static int read_range(char *buf, size_t n)
{
    int fd = open(RANGE, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t r = read(fd, buf, n - 1);
    close(fd);
    buf[r < 0 ? 0 : r] = 0;
    return (int)r;
}

static int write_range(const char *s)
{
    int fd = open(RANGE, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t r = write(fd, s, strlen(s));
    int e = errno;
    close(fd);
    errno = e;
    return (int)r;
}

static uint16_t csum(const void *p, size_t n, uint32_t sum)
{
    const uint8_t *b = p;
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(b[i] << 8 | b[i + 1]);
    if (n & 1)
        sum += (uint32_t)b[n - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The ICMPv6 checksum over the pseudo header (RFC 8200 8.1). */
static uint16_t csum6(const struct in6_addr *src, const struct in6_addr *dst, const void *p, size_t n)
{
    uint8_t ph[40] = {0};
    memcpy(ph, src, 16);
    memcpy(ph + 16, dst, 16);
    ph[34] = (uint8_t)(n >> 8);
    ph[35] = (uint8_t)n;
    ph[39] = IPPROTO_ICMPV6;
    uint16_t a = (uint16_t)~csum(ph, 40, 0);
    return csum(p, n, a);
}

/* An echo request: type, id, seq, then `text` as payload. */
static size_t echo(uint8_t *b, int type, int code, int id, int seq, const char *text, int fill_sum)
{
    size_t n = 8 + strlen(text);
    memset(b, 0, 8);
    b[0] = (uint8_t)type;
    b[1] = (uint8_t)code;
    b[4] = (uint8_t)(id >> 8);
    b[5] = (uint8_t)id;
    b[6] = (uint8_t)(seq >> 8);
    b[7] = (uint8_t)seq;
    memcpy(b + 8, text, strlen(text));
    if (fill_sum) {
        uint16_t c = csum(b, n, 0);
        b[2] = (uint8_t)(c >> 8);
        b[3] = (uint8_t)c;
    }
    return n;
}

static int id_of(const uint8_t *icmp) { return icmp[4] << 8 | icmp[5]; }
static int seq_of(const uint8_t *icmp) { return icmp[6] << 8 | icmp[7]; }

static int wait_in(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms);
}

/* Receives on a raw IPv4 socket until a packet with ICMP id `id`
 * arrives (other traffic is skipped); its length, or -1 on a timeout. */
static int raw_recv_id(int fd, uint8_t *buf, size_t n, int id, struct sockaddr_in *from)
{
    for (int i = 0; i < 100; i++) {
        if (wait_in(fd, 2000) <= 0)
            return -1;
        socklen_t fl = sizeof *from;
        ssize_t r = recvfrom(fd, buf, n, MSG_DONTWAIT, (struct sockaddr *)from, &fl);
        if (r < 28)
            continue;
        int hl = (buf[0] & 15) * 4;
        if (r >= hl + 8 && id_of(buf + hl) == id)
            return (int)r;
    }
    return -1;
}

static int raw6_recv_id(int fd, uint8_t *buf, size_t n, int id, struct sockaddr_in6 *from)
{
    for (int i = 0; i < 100; i++) {
        if (wait_in(fd, 2000) <= 0)
            return -1;
        socklen_t fl = sizeof *from;
        ssize_t r = recvfrom(fd, buf, n, MSG_DONTWAIT, (struct sockaddr *)from, &fl);
        if (r >= 8 && id_of(buf) == id)
            return (int)r;
    }
    return -1;
}

static void range_file(void)
{
    char b[64];
    read_range(b, sizeof b);
    check(strcmp(b, "1\t0\n") == 0, "ping_group_range defaults to \"1\\t0\" (nobody)");
    EXPECT_ERR(EACCES, "socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP) outside the range",
               socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
    EXPECT_ERR(EACCES, "socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6) outside the range",
               socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6));
    EXPECT_ERR(EINVAL, "ping_group_range \"0 4294967295\" (above gid_t's range)", write_range("0 4294967295"));
    EXPECT_ERR(EINVAL, "ping_group_range \"-1 5\"", write_range("-1 5"));
    EXPECT_ERR(EINVAL, "ping_group_range \"x\"", write_range("x"));
    read_range(b, sizeof b);
    check(strcmp(b, "1\t0\n") == 0, "the range is unchanged after bad writes");
    EXPECT_OK("ping_group_range \"100 200\"", write_range("100 200\n"));
    read_range(b, sizeof b);
    check(strcmp(b, "100\t200\n") == 0, "it reads back \"100\\t200\"");
    EXPECT_ERR(EACCES, "socket as gid 0 outside 100..200", socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
    EXPECT_OK("ping_group_range \"5 2\" (low above high)", write_range("5 2"));
    read_range(b, sizeof b);
    check(strcmp(b, "1\t0\n") == 0, "turns ping sockets off: it reads back \"1\\t0\"");
    write_range("100 200");
    /* A supplementary group in the range lets a caller in. */
    pid_t pid = fork();
    if (pid == 0) {
        gid_t g = 150;
        if (setgroups(1, &g) != 0)
            _exit(2);
        int fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
        _exit(fd >= 0 ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a supplementary group 150 in the range may open one");
    pid = fork();
    if (pid == 0) {
        if (setgid(200) != 0 || setuid(1000) != 0)
            _exit(2);
        int fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
        _exit(fd >= 0 ? 0 : 1);
    }
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "user 1000 with gid 200 may open one");
    EXPECT_OK("ping_group_range \"0 2147483647\" (everyone)", write_range("0 2147483647"));
    read_range(b, sizeof b);
    check(strcmp(b, "0\t2147483647\n") == 0, "it reads back \"0\\t2147483647\"");
}

static void ping4(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    check(fd >= 0, "socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)");
    int v = 0;
    socklen_t vl = sizeof v;
    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl);
    check(v == IPPROTO_ICMP, "SO_PROTOCOL = %d", v);
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl);
    check(v == SOCK_DGRAM, "SO_TYPE = %d", v);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(al == 16 && a.sin_port == 0 && a.sin_addr.s_addr == 0, "getsockname before bind: port 0, address 0");

    struct sockaddr_in lo = v4("127.0.0.1", 0x4242);
    EXPECT_ERR(EINVAL, "bind with a short address", bind(fd, (struct sockaddr *)&lo, 8));
    struct sockaddr_in6 six = v6("::1", 0);
    EXPECT_ERR(EAFNOSUPPORT, "bind with an AF_INET6 address",
               bind(fd, (struct sockaddr *)&six, sizeof six));
    struct sockaddr_in far = v4("10.99.99.99", 1);
    EXPECT_ERR(EADDRNOTAVAIL, "bind to an address not of this machine", bind(fd, (struct sockaddr *)&far, sizeof far));
    EXPECT_OK("bind 127.0.0.1 ident 0x4242", bind(fd, (struct sockaddr *)&lo, sizeof lo));
    al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(ntohs(a.sin_port) == 0x4242, "getsockname: the identifier is the port (0x%x)", ntohs(a.sin_port));
    EXPECT_ERR(EINVAL, "bind again", bind(fd, (struct sockaddr *)&lo, sizeof lo));
    /* Ping sockets start with SO_REUSEADDR on (INET_PROTOSW_REUSE): a
     * socket that turns it off cannot share the identifier. */
    int fd2 = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    v = -1;
    vl = sizeof v;
    getsockopt(fd2, SOL_SOCKET, SO_REUSEADDR, &v, &vl);
    check(v == 1, "SO_REUSEADDR is %d on a new ping socket", v);
    int zero = 0;
    setsockopt(fd2, SOL_SOCKET, SO_REUSEADDR, &zero, sizeof zero);
    EXPECT_ERR(EADDRINUSE, "a second socket on the same identifier without SO_REUSEADDR",
               bind(fd2, (struct sockaddr *)&lo, sizeof lo));
    int fd6 = socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6);
    setsockopt(fd6, SOL_SOCKET, SO_REUSEADDR, &zero, sizeof zero);
    struct sockaddr_in6 lo6 = v6("::1", 0x4242);
    EXPECT_ERR(EADDRINUSE, "an ICMPv6 socket on the same identifier", bind(fd6, (struct sockaddr *)&lo6, sizeof lo6));
    close(fd6);

    uint8_t b[256], r[256];
    size_t n = echo(b, ICMP_ECHO, 0, 0x9999, 7, "hello kiln", 0);
    EXPECT_ERR(EINVAL, "send 4 bytes (less than a header)", sendto(fd, b, 4, 0, (struct sockaddr *)&lo, sizeof lo));
    EXPECT_ERR(EDESTADDRREQ, "send with no address, unconnected", send(fd, b, n, 0));
    EXPECT_ERR(EINVAL, "sendto with a short address", sendto(fd, b, n, 0, (struct sockaddr *)&lo, 8));
    EXPECT_ERR(EAFNOSUPPORT, "sendto an AF_INET6 address", sendto(fd, b, n, 0, (struct sockaddr *)&six, sizeof six));
    EXPECT_ERR(EOPNOTSUPP, "send MSG_OOB", sendto(fd, b, n, MSG_OOB, (struct sockaddr *)&lo, sizeof lo));
    b[0] = ICMP_ECHOREPLY;
    EXPECT_ERR(EINVAL, "send type 0 (only echo requests)", sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo));
    b[0] = ICMP_ECHO;
    b[1] = 1;
    EXPECT_ERR(EINVAL, "send code 1", sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo));
    b[1] = 0;
    static uint8_t big[70000];
    big[0] = ICMP_ECHO;
    EXPECT_ERR(EMSGSIZE, "send 65536 bytes", sendto(fd, big, 65536, 0, (struct sockaddr *)&lo, sizeof lo));
    check(wait_in(fd, 100) == 0, "nothing to receive after the failed sends");

    struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
    poll(&p, 1, 0);
    check(p.revents == POLLOUT, "poll before the echo: POLLOUT only");
    ssize_t s = sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    check(s == (ssize_t)n, "sendto an echo request with id 0x9999, no checksum: %zd", s);
    check(wait_in(fd, 2000) == 1, "the reply makes it readable");
    ssize_t got = recv(fd, r, sizeof r, MSG_PEEK);
    check(got == (ssize_t)n, "MSG_PEEK sees %zd bytes (the ICMP message, no IP header)", got);
    memset(&a, 0x55, sizeof a);
    al = sizeof a;
    got = recvfrom(fd, r, sizeof r, 0, (struct sockaddr *)&a, &al);
    check(got == (ssize_t)n, "recvfrom: %zd bytes", got);
    check(r[0] == ICMP_ECHOREPLY && r[1] == 0, "type %d code %d (an echo reply)", r[0], r[1]);
    check(id_of(r) == 0x4242, "the id is the socket's (0x%x), not the one sent", id_of(r));
    check(seq_of(r) == 7, "seq %d", seq_of(r));
    check(csum(r, (size_t)got, 0) == 0, "the checksum is valid");
    check(memcmp(r + 8, "hello kiln", 10) == 0, "the payload came back");
    check(al == 16 && a.sin_family == AF_INET && a.sin_port == 0 && a.sin_addr.s_addr == htonl(0x7f000001),
          "from 127.0.0.1 port 0 (length %u)", al);
    check(wait_in(fd, 100) == 0, "one reply only: the request itself is not received");

    /* A reply longer than the buffer. */
    n = echo(b, ICMP_ECHO, 0, 0, 8, "a longer payload of 40 bytes..........", 0);
    sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    wait_in(fd, 2000);
    struct iovec io = {.iov_base = r, .iov_len = 10};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
    got = recvmsg(fd, &m, MSG_TRUNC);
    check(got == 10 && (m.msg_flags & MSG_TRUNC), "MSG_TRUNC with 10 bytes of room: %zd (not the whole length), MSG_TRUNC set", got);
    EXPECT_ERR(EAGAIN, "then nothing (the rest is gone)", recv(fd, r, sizeof r, MSG_DONTWAIT));
    EXPECT_ERR(EOPNOTSUPP, "recv MSG_OOB", recv(fd, r, sizeof r, MSG_OOB | MSG_DONTWAIT));

    /* Connected: send without an address. */
    struct sockaddr_in dst = v4("127.0.0.1", 999);
    EXPECT_OK("connect 127.0.0.1", connect(fd, (struct sockaddr *)&dst, sizeof dst));
    al = sizeof a;
    getpeername(fd, (struct sockaddr *)&a, &al);
    check(a.sin_addr.s_addr == htonl(0x7f000001), "getpeername: 127.0.0.1");
    n = echo(b, ICMP_ECHO, 0, 0, 9, "connected", 0);
    check(send(fd, b, n, 0) == (ssize_t)n, "send on the connected socket");
    wait_in(fd, 2000);
    got = recv(fd, r, sizeof r, 0);
    check(got == (ssize_t)n && seq_of(r) == 9, "its reply (seq %d)", seq_of(r));
    close(fd);
    close(fd2);
    fd2 = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    EXPECT_ERR(ENOPROTOOPT, "ICMP_FILTER on a ping socket", setsockopt(fd2, SOL_RAW, ICMP_FILTER, &zero, sizeof zero));
    close(fd2);

    /* An unbound socket gets an identifier at its first send. */
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_ICMP);
    n = echo(b, ICMP_ECHO, 0, 0, 1, "auto", 0);
    check(sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo) == (ssize_t)n, "send from an unbound socket");
    al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(a.sin_port != 0, "it got an identifier");
    int ident = ntohs(a.sin_port);
    wait_in(fd, 2000);
    got = recv(fd, r, sizeof r, 0);
    check(got == (ssize_t)n && id_of(r) == ident, "the reply carries it");
    EXPECT_ERR(EAGAIN, "a non-blocking receive with nothing queued", recv(fd, r, sizeof r, 0));
    close(fd);
}

static void ping6(void)
{
    int fd = socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6);
    check(fd >= 0, "socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6)");
    int v = 0;
    socklen_t vl = sizeof v;
    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl);
    check(v == IPPROTO_ICMPV6, "SO_PROTOCOL = %d", v);
    EXPECT_ERR(EPROTONOSUPPORT, "socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMP)", socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMP));
    EXPECT_ERR(EPROTONOSUPPORT, "socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMPV6)", socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMPV6));
    struct sockaddr_in6 lo = v6("::1", 0x6161);
    EXPECT_OK("bind ::1 ident 0x6161", bind(fd, (struct sockaddr *)&lo, sizeof lo));
    uint8_t b[128], r[128];
    size_t n = echo(b, ICMP_ECHO, 0, 1, 3, "v6 payload", 0);
    EXPECT_ERR(EINVAL, "send type 8 (IPv4's echo) on ICMPv6", sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo));
    n = echo(b, ICMP6_ECHO_REQUEST, 0, 1, 3, "v6 payload", 0);
    struct sockaddr_in l4 = v4("127.0.0.1", 0);
    EXPECT_ERR(EINVAL, "sendto a short (IPv4-sized) address", sendto(fd, b, n, 0, (struct sockaddr *)&l4, sizeof l4));
    check(sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo) == (ssize_t)n, "sendto ::1 an echo request");
    check(wait_in(fd, 2000) == 1, "readable");
    struct sockaddr_in6 a;
    socklen_t al = sizeof a;
    ssize_t got = recvfrom(fd, r, sizeof r, 0, (struct sockaddr *)&a, &al);
    check(got == (ssize_t)n && r[0] == ICMP6_ECHO_REPLY, "an echo reply of %zd bytes (type %d)", got, r[0]);
    check(id_of(r) == 0x6161 && seq_of(r) == 3, "id 0x%x seq %d", id_of(r), seq_of(r));
    struct in6_addr one = IN6ADDR_LOOPBACK_INIT;
    check(csum6(&one, &one, r, (size_t)got) == 0, "the checksum is valid");
    check(al == 28 && a.sin6_family == AF_INET6 && a.sin6_port == 0 && memcmp(&a.sin6_addr, &one, 16) == 0,
          "from ::1 port 0 (length %u)", al);
    check(wait_in(fd, 100) == 0, "nothing more");
    close(fd);
}

static void raw4(void)
{
    EXPECT_ERR(EPROTONOSUPPORT, "socket(AF_INET, SOCK_RAW, 0)", socket(AF_INET, SOCK_RAW, 0));
    EXPECT_ERR(EINVAL, "socket(AF_INET, SOCK_RAW, 300)", socket(AF_INET, SOCK_RAW, 300));
    int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    check(fd >= 0, "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) as root");
    int v = 0;
    socklen_t vl = sizeof v;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl);
    check(v == SOCK_RAW, "SO_TYPE = %d", v);
    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl);
    check(v == IPPROTO_ICMP, "SO_PROTOCOL = %d", v);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(al == 16 && ntohs(a.sin_port) == IPPROTO_ICMP, "getsockname: the port is the protocol (%d)", ntohs(a.sin_port));
    pid_t pid = fork();
    if (pid == 0) {
        if (setuid(1000) != 0)
            _exit(2);
        int e = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) < 0 ? errno : 0;
        int e6 = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6) < 0 ? errno : 0;
        _exit(e == EPERM && e6 == EPERM ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "user 1000: EPERM for raw sockets of both families");

    uint8_t b[256], r[256];
    struct sockaddr_in lo = v4("127.0.0.1", 0);
    size_t n = echo(b, ICMP_ECHO, 0, 0x7a7a, 1, "raw hello", 1);
    EXPECT_ERR(EDESTADDRREQ, "send with no address", send(fd, b, n, 0));
    check(sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo) == (ssize_t)n, "sendto 127.0.0.1 an echo request");
    for (int k = 0; k < 2; k++) {
        memset(&a, 0x55, sizeof a);
        int got = raw_recv_id(fd, r, sizeof r, 0x7a7a, &a);
        check(got == (int)(20 + n), "packet %d: %d bytes (IP header included)", k, got);
        struct iphdr *ip = (struct iphdr *)r;
        uint8_t *ic = r + 20;
        check(ic[0] == (k == 0 ? ICMP_ECHO : ICMP_ECHOREPLY), "packet %d: type %d (%s)", k, ic[0],
              k == 0 ? "our request, looped back" : "the kernel's reply");
        check(ip->version == 4 && ip->ihl == 5 && ip->protocol == IPPROTO_ICMP, "packet %d: version 4, ihl 5, protocol 1", k);
        check(ntohs(ip->tot_len) == 20 + n, "packet %d: tot_len %d", k, ntohs(ip->tot_len));
        check(ip->ttl == 64, "packet %d: ttl %d", k, ip->ttl);
        check(ip->saddr == htonl(0x7f000001) && ip->daddr == htonl(0x7f000001), "packet %d: 127.0.0.1 to 127.0.0.1", k);
        check(csum(r, 20, 0) == 0, "packet %d: the header checksum is valid", k);
        check(csum(ic, n, 0) == 0, "packet %d: the ICMP checksum is valid", k);
        check(a.sin_family == AF_INET && a.sin_addr.s_addr == htonl(0x7f000001) && a.sin_port == 0,
              "packet %d: from 127.0.0.1, port 0", k);
        check(seq_of(ic) == 1 && memcmp(ic + 8, "raw hello", 9) == 0, "packet %d: seq and payload", k);
    }

    /* A wrong checksum: the request arrives, no reply comes. */
    n = echo(b, ICMP_ECHO, 0, 0x7a7b, 2, "bad sum", 1);
    b[2] ^= 0x55;
    sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    int got = raw_recv_id(fd, r, sizeof r, 0x7a7b, &a);
    check(got > 20 && r[20] == ICMP_ECHO, "a request with a wrong checksum is received");
    usleep(100000);
    int reply = 0;
    while (recv(fd, r, sizeof r, MSG_DONTWAIT) > 28)
        if (id_of(r + 20) == 0x7a7b)
            reply = 1;
    check(!reply, "and gets no reply");

    /* ICMP_FILTER: bit n drops type n. */
    uint32_t filt = 1u << ICMP_ECHO, f2 = 0;
    EXPECT_OK("ICMP_FILTER dropping echo requests", setsockopt(fd, SOL_RAW, ICMP_FILTER, &filt, sizeof filt));
    socklen_t fl = sizeof f2;
    getsockopt(fd, SOL_RAW, ICMP_FILTER, &f2, &fl);
    check(f2 == filt && fl == 4, "getsockopt ICMP_FILTER: 0x%x", f2);
    EXPECT_ERR(EINVAL, "ICMP_FILTER with a negative length", getsockopt(fd, SOL_RAW, ICMP_FILTER, &f2, &(socklen_t){-1}));
    EXPECT_ERR(ENOPROTOOPT, "SOL_RAW option 2", setsockopt(fd, SOL_RAW, 2, &filt, sizeof filt));
    n = echo(b, ICMP_ECHO, 0, 0x7a7c, 3, "filtered", 1);
    sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    got = raw_recv_id(fd, r, sizeof r, 0x7a7c, &a);
    check(got > 20 && r[20] == ICMP_ECHOREPLY, "with the filter the first packet is the reply (type %d)", got > 20 ? r[20] : -1);
    filt = 0;
    setsockopt(fd, SOL_RAW, ICMP_FILTER, &filt, sizeof filt);

    /* IP_HDRINCL: the kernel fills tot_len, the source, id, checksum. */
    int one = 1;
    EXPECT_OK("IP_HDRINCL", setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof one));
    v = 0;
    vl = sizeof v;
    getsockopt(fd, IPPROTO_IP, IP_HDRINCL, &v, &vl);
    check(v == 1, "getsockopt IP_HDRINCL = %d", v);
    uint8_t pk[256] = {0};
    struct iphdr *ip = (struct iphdr *)pk;
    ip->version = 4;
    ip->ihl = 5;
    ip->ttl = 33;
    ip->protocol = IPPROTO_ICMP;
    ip->daddr = htonl(0x7f000001);
    n = echo(pk + 20, ICMP_ECHO, 0, 0x7a7d, 4, "hdrincl", 1);
    check(sendto(fd, pk, 20 + n, 0, (struct sockaddr *)&lo, sizeof lo) == (ssize_t)(20 + n), "send a packet with our own header");
    got = raw_recv_id(fd, r, sizeof r, 0x7a7d, &a);
    ip = (struct iphdr *)r;
    check(got == (int)(20 + n) && r[20] == ICMP_ECHO, "it arrives as sent (type %d)", got > 20 ? r[20] : -1);
    check(ip->ttl == 33 && ntohs(ip->tot_len) == 20 + n && ip->saddr == htonl(0x7f000001),
          "ttl 33 kept, tot_len and the source filled in");
    check(csum(r, 20, 0) == 0, "header checksum filled in");
    got = raw_recv_id(fd, r, sizeof r, 0x7a7d, &a);
    check(got == (int)(20 + n) && r[20] == ICMP_ECHOREPLY, "and the kernel answers it");
    EXPECT_ERR(EINVAL, "IP_HDRINCL: a packet shorter than a header", sendto(fd, pk, 12, 0, (struct sockaddr *)&lo, sizeof lo));
    close(fd);

    /* A ping socket and a raw socket both see a reply. */
    fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    int pf = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    struct sockaddr_in pl = v4("127.0.0.1", 0x7a7e);
    bind(pf, (struct sockaddr *)&pl, sizeof pl);
    n = echo(b, ICMP_ECHO, 0, 0, 5, "both", 0);
    sendto(pf, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    got = raw_recv_id(fd, r, sizeof r, 0x7a7e, &a);
    check(got > 20 && r[20] == ICMP_ECHO, "the raw socket sees the ping socket's request");
    check(csum(r + 20, n, 0) == 0 && id_of(r + 20) == 0x7a7e, "with the kernel's identifier and checksum");
    got = raw_recv_id(fd, r, sizeof r, 0x7a7e, &a);
    check(got > 20 && r[20] == ICMP_ECHOREPLY, "and the reply");
    wait_in(pf, 2000);
    check(recv(pf, r, sizeof r, MSG_DONTWAIT) == (ssize_t)n && r[0] == ICMP_ECHOREPLY, "so does the ping socket");
    close(pf);
    close(fd);
}

static void raw6(void)
{
    int fd = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
    check(fd >= 0, "socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6) as root");
    struct icmp6_filter f;
    ICMP6_FILTER_SETBLOCKALL(&f);
    ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &f);
    EXPECT_OK("ICMP6_FILTER passing echo replies only", setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof f));
    struct icmp6_filter g;
    socklen_t gl = sizeof g;
    getsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &g, &gl);
    check(gl == sizeof g && memcmp(&f, &g, sizeof f) == 0, "getsockopt ICMP6_FILTER returns it");
    int two = 2;
    EXPECT_ERR(EINVAL, "IPV6_CHECKSUM at the IPv6 level on ICMPv6", setsockopt(fd, IPPROTO_IPV6, IPV6_CHECKSUM, &two, sizeof two));
    uint8_t b[128], r[128];
    struct sockaddr_in6 lo = v6("::1", 0);
    size_t n = echo(b, ICMP6_ECHO_REQUEST, 0, 0x6b6b, 11, "raw six", 0);
    check(sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo) == (ssize_t)n, "sendto ::1 an echo request, checksum 0");
    struct sockaddr_in6 a;
    memset(&a, 0x55, sizeof a);
    int got = raw6_recv_id(fd, r, sizeof r, 0x6b6b, &a);
    check(got == (int)n, "%d bytes: no IPv6 header", got);
    check(r[0] == ICMP6_ECHO_REPLY, "type %d: the filter kept the request out", r[0]);
    struct in6_addr l1 = IN6ADDR_LOOPBACK_INIT;
    check(got > 0 && csum6(&l1, &l1, r, (size_t)got) == 0, "the checksum is valid");
    check(a.sin6_family == AF_INET6 && a.sin6_port == 0 && memcmp(&a.sin6_addr, &l1, 16) == 0, "from ::1, port 0");
    ICMP6_FILTER_SETPASSALL(&f);
    setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof f);
    n = echo(b, ICMP6_ECHO_REQUEST, 0, 0x6b6c, 12, "pass all", 0);
    sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    got = raw6_recv_id(fd, r, sizeof r, 0x6b6c, &a);
    check(got == (int)n && r[0] == ICMP6_ECHO_REQUEST, "without the filter: our request first");
    check(csum6(&l1, &l1, r, (size_t)got) == 0, "with the checksum the kernel put in");
    got = raw6_recv_id(fd, r, sizeof r, 0x6b6c, &a);
    check(got == (int)n && r[0] == ICMP6_ECHO_REPLY, "then the reply");

    /* IPV6_RECVHOPLIMIT: the hop limit in a control message. */
    int on = 1;
    EXPECT_OK("IPV6_RECVHOPLIMIT", setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof on));
    ICMP6_FILTER_SETBLOCKALL(&f);
    ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &f);
    setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof f);
    n = echo(b, ICMP6_ECHO_REQUEST, 0, 0x6b6d, 13, "hops", 0);
    sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    int hops = -1, kind = -1;
    for (int i = 0; i < 100 && wait_in(fd, 2000) > 0; i++) {
        union { struct cmsghdr h; char b[64]; } cb;
        struct iovec io = {.iov_base = r, .iov_len = sizeof r};
        struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = &cb, .msg_controllen = sizeof cb};
        if (recvmsg(fd, &m, MSG_DONTWAIT) < 8 || id_of(r) != 0x6b6d)
            continue;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        if (c && c->cmsg_level == IPPROTO_IPV6) {
            kind = c->cmsg_type;
            memcpy(&hops, CMSG_DATA(c), sizeof hops);
        }
        break;
    }
    check(kind == IPV6_HOPLIMIT && hops == 64, "the reply's control message: IPV6_HOPLIMIT %d", hops);
    n = echo(b, ICMP6_ECHO_REQUEST, 0, 0x6b6e, 14, "fionread", 0);
    sendto(fd, b, n, 0, (struct sockaddr *)&lo, sizeof lo);
    int q = -1;
    wait_in(fd, 2000);
    ioctl(fd, FIONREAD, &q);
    check(q == (int)n, "FIONREAD: %d, the ICMPv6 message without the IPv6 header", q);
    close(fd);
}

int main(void)
{
    t_init("icmp");
    if (read_range(saved_range, sizeof saved_range) <= 0) {
        printf("no %s\n", RANGE);
        return 1;
    }
    range_file();
    ping4();
    ping6();
    raw4();
    raw6();
    write_range(saved_range);
    EXPECT_ERR(EACCES, "with the range put back, no ping socket", socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));
    return t_done();
}
