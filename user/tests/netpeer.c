/*
 * netpeer: the guest's helpers for the NET=socket segment test (xtask's
 * netseg stage: two Kiln machines on one L2 segment and a hostile host
 * program among them). Not a test of its own (in TOOLS).
 *
 *   netpeer udp-echo PORT           echo every UDP datagram back, forever
 *   netpeer udp6-echo PORT          the same on an IPv6 socket
 *   netpeer udp-send HOST PORT N    send N numbered datagrams of varying
 *                                   sizes, check each echo (retrying a
 *                                   lost one), print the verdict
 *   netpeer wait PORT               block until a UDP datagram arrives
 *                                   (the host's signal to go on)
 *   netpeer hold PORT               accept TCP connections (small
 *                                   buffers) and keep them open while
 *                                   descriptors last, forever
 *   netpeer wedge PORT DEAD         send a datagram from PORT to DEAD
 *                                   (on the link, never answering ARP),
 *                                   then echo on PORT forever; a
 *                                   socket connected to DEAD sends
 *                                   again after 6 s and prints what
 *                                   that send returned
 *   netpeer tcp-echo PORT           accept one TCP connection, echo it
 *                                   until its end (or reset), exit
 *   netpeer keepalive HOST PORT IDLE INTVL CNT
 *                                   connect, set SO_KEEPALIVE and the
 *                                   three TCP_KEEP* values, stay idle
 *                                   longer than IDLE + CNT * INTVL (the
 *                                   peer answers the probes: the
 *                                   connection must live), echo a byte,
 *                                   print `ka-alive` (the host then
 *                                   silences the peer) and report what
 *                                   recv returns and after how long
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int udp_bound(int port)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("netpeer: bind");
        exit(1);
    }
    return s;
}

static int udp6_bound(int port)
{
    int s = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("netpeer: bind");
        exit(1);
    }
    return s;
}

static int echo_on(int s)
{
    static unsigned char buf[65536];
    int told = 0;
    for (;;) {
        struct sockaddr_in6 from;
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
        /* The reply goes back by the scope id recvfrom reported: the
         * link the datagram came in on. */
        if (n >= 0 && !told && from.sin6_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&from.sin6_addr)) {
            told = 1;
            printf("netpeer: link-local sender, scope %u\n", from.sin6_scope_id);
            fflush(stdout);
        }
        if (n >= 0)
            sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, len);
    }
    return 0;
}

/* The scope ids getpeername and getsockname report for a socket
 * connected to a link-local address (the interface it is on). */
static void print_scopes(const char *who, int s)
{
    struct sockaddr_in6 peer, own;
    socklen_t pl = sizeof peer, ol = sizeof own;
    if (getpeername(s, (struct sockaddr *)&peer, &pl) != 0 || getsockname(s, (struct sockaddr *)&own, &ol) != 0)
        return;
    if (peer.sin6_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&peer.sin6_addr))
        printf("%s: link-local peer scope %u, own scope %u\n", who, peer.sin6_scope_id, own.sin6_scope_id);
}

static int udp_echo(int port)
{
    return echo_on(udp_bound(port));
}

static int wedge(int port, const char *dead)
{
    int s = udp_bound(port);
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, dead, &d.sin_addr);
    static unsigned char buf[65536];
    /* The first probe is echoed before the poison, so the host's address
     * is resolved: the check is that a resolved neighbour is not held up
     * behind a dead one (a neighbour first asked for while the dead one
     * is probed waits behind it: smoltcp rate-limits requests per
     * interface; docs/networking.md). */
    struct pollfd first = {.fd = s, .events = POLLIN};
    if (poll(&first, 1, 10000) > 0) {
        struct sockaddr_in from;
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
        if (n >= 0)
            sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, len);
    }
    if (sendto(s, "poison", 6, 0, (struct sockaddr *)&d, sizeof d) != 6)
        perror("netpeer: sendto the dead address");
    int c = socket(AF_INET, SOCK_DGRAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&d, sizeof d) != 0 || send(c, "x", 1, 0) != 1)
        perror("netpeer: connected send");
    /* One process (a forked sender would outlive the test's kill): echo,
     * and 6 s in, well after ARP gave up, send on the connected socket. */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int reported = 0;
    for (;;) {
        struct pollfd p = {.fd = s, .events = POLLIN};
        if (poll(&p, 1, 200) > 0) {
            struct sockaddr_in from;
            socklen_t len = sizeof from;
            ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
            if (n >= 0)
                sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, len);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!reported && now.tv_sec - t0.tv_sec >= 6) {
            reported = 1;
            ssize_t r = send(c, "y", 1, 0);
            printf("netpeer: connected send after ARP failed: %s\n", r < 0 ? strerror(errno) : "sent");
            fflush(stdout);
        }
    }
    return 0;
}

static void fill(unsigned char *p, size_t n, uint32_t seq)
{
    uint32_t x = seq * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    memcpy(p, &seq, n < 4 ? n : 4);
}

static int udp_send(const char *host, int port, int count)
{
    /* An IPv6 literal (fe80::1%eth0 names its interface) or IPv4. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST}, *res;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &res) != 0) {
        fprintf(stderr, "netpeer: bad address %s\n", host);
        return 1;
    }
    int s = socket(res->ai_family, SOCK_DGRAM, 0);
    if (s < 0 || connect(s, res->ai_addr, res->ai_addrlen) < 0) {
        perror("netpeer: connect");
        return 1;
    }
    freeaddrinfo(res);
    static unsigned char out[1500], in[2000];
    int good = 0, lost = 0;
    for (int i = 0; i < count; i++) {
        size_t n = 4 + (size_t)(i * 97) % 1400;
        fill(out, n, (uint32_t)i);
        int ok = 0;
        for (int tries = 0; tries < 5 && !ok; tries++) {
            send(s, out, n, 0);
            struct pollfd p = {s, POLLIN, 0};
            while (poll(&p, 1, 1000) == 1) {
                ssize_t r = recv(s, in, sizeof in, 0);
                /* An error (EHOSTUNREACH: the neighbour never answered)
                 * ends this try. */
                if (r < 0 && errno != EAGAIN)
                    break;
                if (r == (ssize_t)n && memcmp(in, out, n) == 0) {
                    ok = 1;
                    break;
                }
            }
            lost += !ok;
        }
        good += ok;
    }
    printf("udp %d datagrams: %s\n", count, good == count ? "ok" : "LOST");
    print_scopes("netpeer udp", s);
    fprintf(stderr, "netpeer: %d of %d echoed, %d resends\n", good, count, lost);
    return good == count ? 0 : 1;
}

static int wait_signal(int port)
{
    int s = udp_bound(port);
    char b[64];
    return recv(s, b, sizeof b, 0) < 0;
}

static int hold(int port)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1, small = 4096;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    setsockopt(l, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 128) < 0) {
        perror("netpeer: listen");
        return 1;
    }
    long held = 0;
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
                /* Out of descriptors: let the oldest ones go. */
                for (int fd = l + 1; fd < l + 257; fd++)
                    close(fd);
                held -= 256;
            }
            continue;
        }
        held++;
    }
}

static int tcp_echo(int port)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 8) < 0) {
        perror("netpeer: listen");
        return 1;
    }
    static char buf[4096];
    int c = accept(l, NULL, NULL);
    if (c < 0) {
        perror("netpeer: accept");
        return 1;
    }
    ssize_t n;
    while ((n = recv(c, buf, sizeof buf, 0)) > 0)
        send(c, buf, (size_t)n, MSG_NOSIGNAL);
    close(c);
    return 0;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static int keepalive(const char *host, int port, int idle, int intvl, int cnt)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("netpeer: connect");
        return 3; /* the caller tries again: the peer may not listen yet */
    }
    int one = 1;
    if (setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0 ||
        setsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
        setsockopt(s, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl) != 0 ||
        setsockopt(s, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt) != 0) {
        perror("netpeer: setsockopt");
        return 1;
    }
    int deadline = idle + cnt * intvl;
    /* Idle past the deadline: only the probes' answers keep it. */
    sleep((unsigned)(deadline + 3));
    struct pollfd p = {.fd = s, .events = POLLIN};
    char c = 'k';
    /* The deadline counts from the echo's arrival, after this. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int alive = poll(&p, 1, 0) == 0 && send(s, &c, 1, MSG_NOSIGNAL) == 1 && poll(&p, 1, 10000) == 1 &&
                recv(s, &c, 1, 0) == 1 && c == 'k';
    printf("keepalive: %s after %d s idle\n", alive ? "alive" : "DEAD", deadline + 3);
    if (!alive)
        return 1;
    printf("ka-alive\n");
    fflush(stdout);
    /* The host silences the peer now; the last word heard from it was
     * the echo (or a later probe's answer). */
    int r = poll(&p, 1, (deadline + 60) * 1000);
    double waited = seconds_since(&t0);
    ssize_t n = r == 1 ? recv(s, &c, 1, 0) : 0;
    int e = errno;
    if (r != 1)
        printf("keepalive: no error in %d s\n", deadline + 60);
    else if (n < 0)
        printf("keepalive: recv %s after %s%d s (%d + %d x %d)\n", e == ETIMEDOUT ? "ETIMEDOUT" : strerror(e),
               waited >= deadline ? "at least " : "under ", deadline, idle, cnt, intvl);
    else
        printf("keepalive: recv returned %zd\n", n);
    fflush(stdout);
    fprintf(stderr, "netpeer: keepalive error after %.2f s\n", waited);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "tcp-echo") == 0)
        return tcp_echo(atoi(argv[2]));
    if (argc == 7 && strcmp(argv[1], "keepalive") == 0)
        return keepalive(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    if (argc == 3 && strcmp(argv[1], "udp-echo") == 0)
        return udp_echo(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "udp6-echo") == 0)
        return echo_on(udp6_bound(atoi(argv[2])));
    if (argc == 5 && strcmp(argv[1], "udp-send") == 0)
        return udp_send(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 3 && strcmp(argv[1], "wait") == 0)
        return wait_signal(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "hold") == 0)
        return hold(atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "wedge") == 0)
        return wedge(atoi(argv[2]), argv[3]);
    fprintf(stderr, "usage: netpeer udp-echo PORT | udp-send HOST PORT N | wait PORT | hold PORT | wedge PORT DEAD | tcp-echo PORT | keepalive HOST PORT IDLE INTVL CNT\n");
    return 2;
}
