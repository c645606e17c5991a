/*
 * bench_net.c: TCP and UDP over the loopback (issue 12's loopback rows):
 * a 1-byte TCP round trip, 64 KiB TCP writes to another process, a
 * 1-byte UDP round trip, and connect+accept+close.
 */
#include "kbench.h"

#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* A Linux guest's lo starts down: bring it up (Kiln's is always up, and
 * its answer to the ioctl does not matter). */
static void lo_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0)
        return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
}

static struct sockaddr_in lo_addr(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return a;
}

/* A listener on 127.0.0.1 and a connected pair through it. */
static int tcp_pair(int *cs, int *ss)
{
    lo_up();
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = lo_addr(0);
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4) || getsockname(l, (struct sockaddr *)&a, &len))
        return fail("tcp listener");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a))
        return fail("tcp connect");
    int s = accept(l, NULL, NULL);
    if (s < 0)
        return fail("accept");
    close(l);
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *cs = c;
    *ss = s;
    return 0;
}

int b_tcp_pingpong(uint64_t *ns, uint64_t *ops)
{
    int c, s;
    if (tcp_pair(&c, &s))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        char b;
        close(c);
        while (read(s, &b, 1) == 1)
            if (write(s, &b, 1) != 1)
                _exit(1);
        _exit(0);
    }
    close(s);
    uint64_t n = iters(10000);
    char b = 'x';
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (write(c, &b, 1) != 1 || read(c, &b, 1) != 1)
            return fail("tcp round trip");
    }
    *ns = now() - *ns;
    *ops = n;
    close(c);
    return reap(pid);
}

int b_tcp_bw(uint64_t *ns, uint64_t *ops)
{
    int c, s;
    if (tcp_pair(&c, &s))
        return -1;
    uint64_t n = iters(5000), total = warm(n) + n;
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    static char buf[CHUNK];
    if (pid == 0) {
        close(s);
        memset(buf, 't', sizeof buf);
        for (uint64_t i = 0; i < total; i++)
            for (long off = 0; off < CHUNK;) {
                long w = write(c, buf + off, CHUNK - off);
                if (w <= 0)
                    _exit(1);
                off += w;
            }
        _exit(0);
    }
    close(c);
    uint64_t got = 0;
    *ns = 0;
    while (got < total * CHUNK) {
        if (got >= warm(n) * CHUNK && *ns == 0)
            *ns = now();
        long r = read(s, buf, CHUNK);
        if (r <= 0)
            return r < 0 ? fail("read") : fail_msg("tcp closed early");
        got += r;
    }
    *ns = now() - *ns;
    *ops = n;
    close(s);
    return reap(pid);
}

int b_udp_pingpong(uint64_t *ns, uint64_t *ops)
{
    lo_up();
    int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in aa = lo_addr(0), ba = lo_addr(0);
    socklen_t len = sizeof aa;
    if (bind(a, (struct sockaddr *)&aa, sizeof aa) || bind(b, (struct sockaddr *)&ba, sizeof ba) ||
        getsockname(a, (struct sockaddr *)&aa, &len) || getsockname(b, (struct sockaddr *)&ba, &len) ||
        connect(a, (struct sockaddr *)&ba, sizeof ba) || connect(b, (struct sockaddr *)&aa, sizeof aa))
        return fail("udp sockets");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        char c;
        close(a);
        while (recv(b, &c, 1, 0) == 1)
            if (c == 'q' || send(b, &c, 1, 0) != 1)
                _exit(0);
        _exit(1);
    }
    close(b);
    uint64_t n = iters(10000);
    char c = 'x';
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (send(a, &c, 1, 0) != 1 || recv(a, &c, 1, 0) != 1)
            return fail("udp round trip");
    }
    *ns = now() - *ns;
    *ops = n;
    c = 'q';
    send(a, &c, 1, 0);
    close(a);
    return reap(pid);
}

int b_tcp_connect(uint64_t *ns, uint64_t *ops)
{
    lo_up();
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = lo_addr(0);
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 64) || getsockname(l, (struct sockaddr *)&a, &len))
        return fail("tcp listener");
    uint64_t n = iters(1000);
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a))
            return fail("connect");
        int s = accept(l, NULL, NULL);
        if (s < 0)
            return fail("accept");
        close(c);
        close(s);
    }
    *ns = now() - *ns;
    *ops = n;
    close(l);
    return 0;
}
