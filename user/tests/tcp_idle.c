/*
 * tcp_idle: many idle loopback TCP connections are still served.
 *
 * Kiln parks a connection that has nothing to do out of the set of
 * sockets its TCP/IP stack polls (docs/networking.md, "Many
 * connections"), and brings it back when it is used, when a segment for
 * it arrives or when its timer is due. This checks each way back:
 *
 *  - 256 connections opened and left idle (under epoll, which then
 *    reports nothing), then each answers a message both ways;
 *  - a FIN (shutdown) to half of the idle servers: epoll reports
 *    EPOLLIN|EPOLLRDHUP on exactly those, and each reads end of file,
 *    and can still send to its client;
 *  - a reset (SO_LINGER 0) to the other half: each reads ECONNRESET;
 *  - a keepalive (TCP_KEEPIDLE 1 s) on one idle connection among 64
 *    others: probes and their answers go over lo while nothing else
 *    moves (/proc/net/dev's lo packet count grows by at least 2 in
 *    2.5 s), and the connection still answers afterwards.
 */
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define MANY 256

static int listener(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4096) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    return l;
}

/* n connections to a fresh listener: clients in c, servers in s. */
static int open_pairs(int n, int *c, int *s)
{
    int port, l = listener(&port);
    if (l < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < n; i++) {
        c[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (c[i] < 0 || connect(c[i], (struct sockaddr *)&a, sizeof a) < 0)
            return -1;
        s[i] = accept(l, NULL, NULL);
        if (s[i] < 0)
            return -1;
    }
    close(l);
    return 0;
}

/* One message each way on a connection; 1 if both arrived intact. */
static int answers(int c, int s, uint32_t v)
{
    uint32_t got = 0;
    if (send(c, &v, sizeof v, 0) != sizeof v || recv(s, &got, sizeof got, MSG_WAITALL) != sizeof got || got != v)
        return 0;
    v = ~v;
    if (send(s, &v, sizeof v, 0) != sizeof v || recv(c, &got, sizeof got, MSG_WAITALL) != sizeof got || got != v)
        return 0;
    return 1;
}

static void many_idle(void)
{
    static int c[MANY], s[MANY];
    check(open_pairs(MANY, c, s) == 0, "%d loopback connections opened", MANY);
    int ep = epoll_create1(0);
    for (int i = 0; i < MANY; i++) {
        struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, s[i], &e);
    }
    /* Idle: long enough for every poll after the handshakes to be done. */
    sleep_ms(50);
    struct epoll_event ev[MANY];
    check(epoll_wait(ep, ev, MANY, 0) == 0, "idle servers: epoll reports nothing");

    int ok = 0;
    for (int i = 0; i < MANY; i++)
        ok += answers(c[i], s[i], 0x1000 + i);
    check(ok == MANY, "each idle connection answers both ways: %d of %d", ok, MANY);
    sleep_ms(50);
    check(epoll_wait(ep, ev, MANY, 0) == 0, "idle again: epoll reports nothing");

    /* A FIN to the even servers. */
    for (int i = 0; i < MANY; i += 2)
        shutdown(c[i], SHUT_WR);
    static char seen[MANY];
    int hup = 0, wrong = 0;
    int64_t until = mono_ns() + 5000000000LL;
    while (hup < MANY / 2 && mono_ns() < until) {
        int n = epoll_wait(ep, ev, MANY, 100);
        for (int k = 0; k < n; k++) {
            int i = ev[k].data.u32;
            if (i % 2 || (ev[k].events & (EPOLLIN | EPOLLRDHUP)) != (EPOLLIN | EPOLLRDHUP))
                wrong++;
            else if (!seen[i]) {
                seen[i] = 1;
                hup++;
            }
        }
    }
    check(hup == MANY / 2 && !wrong, "FIN to idle servers: EPOLLIN|EPOLLRDHUP on %d of %d, %d others", hup,
          MANY / 2, wrong);
    int eof = 0, back = 0;
    for (int i = 0; i < MANY; i += 2) {
        char b;
        eof += recv(s[i], &b, 1, 0) == 0;
        b = 'x';
        char got = 0;
        back += send(s[i], &b, 1, 0) == 1 && recv(c[i], &got, 1, 0) == 1 && got == 'x';
    }
    check(eof == MANY / 2, "each reads end of file: %d", eof);
    check(back == MANY / 2, "each still sends to its client: %d", back);

    /* A reset to the odd servers. */
    for (int i = 1; i < MANY; i += 2) {
        struct linger lg = {1, 0};
        setsockopt(c[i], SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(c[i]);
    }
    int reset = 0;
    for (int i = 1; i < MANY; i += 2) {
        struct pollfd p = {.fd = s[i], .events = POLLIN};
        char b;
        poll(&p, 1, 5000);
        reset += recv(s[i], &b, 1, 0) < 0 && errno == ECONNRESET;
    }
    check(reset == MANY / 2, "reset to idle servers: ECONNRESET on %d of %d", reset, MANY / 2);
    for (int i = 0; i < MANY; i++) {
        if (i % 2 == 0)
            close(c[i]);
        close(s[i]);
    }
    close(ep);
}

/* lo's received packets, from /proc/net/dev. */
static long lo_packets(void)
{
    FILE *f = fopen("/proc/net/dev", "r");
    char line[512];
    long bytes, packets = -1;
    while (f && fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ')
            p++;
        if (!strncmp(p, "lo:", 3) && sscanf(p + 3, "%ld %ld", &bytes, &packets) == 2)
            break;
    }
    if (f)
        fclose(f);
    return packets;
}

static void keepalive(void)
{
    enum { OTHERS = 64 };
    static int c[OTHERS + 1], s[OTHERS + 1];
    check(open_pairs(OTHERS + 1, c, s) == 0, "%d loopback connections opened", OTHERS + 1);
    int one = 1;
    /* The times first: smoltcp arms its keepalive timer at the first
     * poll after keepalive is switched on and does not re-arm it for a
     * new TCP_KEEPIDLE (docs/networking.md, Not done yet). */
    int r = setsockopt(c[0], IPPROTO_TCP, TCP_KEEPIDLE, &one, sizeof one);
    r |= setsockopt(c[0], IPPROTO_TCP, TCP_KEEPINTVL, &one, sizeof one);
    r |= setsockopt(c[0], SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    check(r == 0, "TCP_KEEPIDLE 1, TCP_KEEPINTVL 1, SO_KEEPALIVE");
    sleep_ms(100);
    long before = lo_packets();
    sleep_ms(2500);
    long after = lo_packets();
    check(before >= 0 && after - before >= 2, "keepalive probes on the idle connection: lo received at least 2");
    check(answers(c[0], s[0], 7), "the keepalive connection still answers");
    check(answers(c[OTHERS], s[OTHERS], 8), "an idle one beside it answers");
    for (int i = 0; i <= OTHERS; i++) {
        close(c[i]);
        close(s[i]);
    }
}

int main(void)
{
    t_init("tcp_idle");
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_NOFILE, &rl);
    many_idle();
    keepalive();
    return t_done();
}
