/*
 * inet_stress: many TCP connections over the loopback.  10,000 short
 * connections one after another (connect, accept, a byte each way,
 * close), 256 connections open at once (all connected before any is
 * accepted, each carrying its own byte, then all closed), and a bulk
 * transfer of 32 MiB each over IPv4 and IPv6 between two processes with
 * reads and writes of varying sizes, checked with a hash of every byte.
 */
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define SHORT 10000
#define OPEN 256
#define BULK (32u << 20)

static socklen_t addr_of(int family, struct sockaddr_storage *ss, int port)
{
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return sizeof *a;
    }
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = in6addr_loopback;
    return sizeof *a;
}

static int listener(int family, int backlog, int *port)
{
    int l = socket(family, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_storage ss;
    socklen_t len = addr_of(family, &ss, 0);
    /* IPv6 listeners take every address (and IPv4 too). */
    if (family == AF_INET6)
        ((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_any;
    if (bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, backlog) < 0) {
        printf("FAIL: listener: %s\n", errname(errno));
        exit(1);
    }
    getsockname(l, (struct sockaddr *)&ss, &len);
    *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return l;
}

static int dial(int family, int port)
{
    int c = socket(family, SOCK_STREAM, 0);
    struct sockaddr_storage ss;
    socklen_t len = addr_of(family, &ss, port);
    if (connect(c, (struct sockaddr *)&ss, len) < 0) {
        close(c);
        return -1;
    }
    return c;
}

static void short_connections(void)
{
    int port;
    int l = listener(AF_INET, 16, &port);
    int bad = 0;
    for (int i = 0; i < SHORT; i++) {
        int c = dial(AF_INET, port);
        int s = c >= 0 ? accept(l, NULL, NULL) : -1;
        char b = (char)i, got = 0, back = 0;
        if (c < 0 || s < 0 || write(c, &b, 1) != 1 || read(s, &got, 1) != 1 || got != b || write(s, &got, 1) != 1 ||
            read(c, &back, 1) != 1 || back != b) {
            if (bad++ < 3)
                printf("FAIL: short connection %d: %s\n", i, errname(errno));
        }
        if (s >= 0)
            close(s);
        if (c >= 0)
            close(c);
    }
    check(bad == 0, "%d short connections", SHORT);
    close(l);
}

static void open_at_once(void)
{
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_NOFILE, &rl);
    int port;
    int l = listener(AF_INET6, OPEN + 8, &port);
    static int c[OPEN], s[OPEN];
    int connected = 0, accepted = 0, echoed = 0;
    for (int i = 0; i < OPEN; i++) {
        /* Half over IPv4 to the dual-stack listener. */
        c[i] = dial(i % 2 ? AF_INET : AF_INET6, port);
        connected += c[i] >= 0;
    }
    for (int i = 0; i < OPEN; i++) {
        s[i] = accept(l, NULL, NULL);
        accepted += s[i] >= 0;
    }
    check(connected == OPEN && accepted == OPEN, "%d connections open at once", OPEN);
    for (int i = 0; i < OPEN; i++) {
        unsigned char b = (unsigned char)i;
        if (c[i] >= 0)
            write(c[i], &b, 1);
    }
    /* Accept order is connection order: each server end gets its byte. */
    for (int i = 0; i < OPEN; i++) {
        unsigned char got = 0;
        if (s[i] >= 0 && read(s[i], &got, 1) == 1 && got == (unsigned char)i)
            echoed++;
    }
    check(echoed == OPEN, "each of the %d carried its own byte", OPEN);
    for (int i = 0; i < OPEN; i++) {
        if (s[i] >= 0)
            close(s[i]);
        if (c[i] >= 0)
            close(c[i]);
    }
    close(l);
}

static uint64_t hash(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void fill(unsigned char *p, size_t n, uint32_t *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1103515245u + 12345u;
        p[i] = (unsigned char)(*state >> 16);
    }
}

static void bulk(int family)
{
    int port;
    int l = listener(family, 4, &port);
    pid_t pid = fork();
    if (pid == 0) {
        int c = dial(family, port);
        static unsigned char buf[200000];
        uint32_t st = 7;
        size_t sent = 0;
        size_t sizes[] = {1, 1000, 65536, 199999, 4096, 17};
        int k = 0;
        while (sent < BULK) {
            size_t n = sizes[k++ % 6];
            if (n > BULK - sent)
                n = BULK - sent;
            fill(buf, n, &st);
            size_t off = 0;
            while (off < n) {
                ssize_t w = write(c, buf + off, n - off);
                if (w <= 0)
                    _exit(2);
                off += w;
            }
            sent += n;
        }
        close(c);
        _exit(0);
    }
    int s = accept(l, NULL, NULL);
    static unsigned char buf[100000];
    uint64_t h = 0xcbf29ce484222325ull;
    size_t got = 0;
    size_t sizes[] = {7, 65536, 100000, 1, 3000};
    int k = 0;
    for (;;) {
        ssize_t r = read(s, buf, sizes[k++ % 5]);
        if (r <= 0)
            break;
        h = hash(h, buf, r);
        got += r;
    }
    int st;
    waitpid(pid, &st, 0);
    /* The same bytes, made here. */
    static unsigned char want[1 << 16];
    uint32_t gen = 7;
    uint64_t hw = 0xcbf29ce484222325ull;
    size_t sizes_w[] = {1, 1000, 65536, 199999, 4096, 17};
    size_t made = 0;
    k = 0;
    while (made < BULK) {
        size_t n = sizes_w[k++ % 6];
        if (n > BULK - made)
            n = BULK - made;
        for (size_t off = 0; off < n;) {
            size_t m = n - off < sizeof want ? n - off : sizeof want;
            fill(want, m, &gen);
            hw = hash(hw, want, m);
            off += m;
        }
        made += n;
    }
    printf("bulk %s: %zu bytes, writer %s\n", family == AF_INET ? "ipv4" : "ipv6", got, status_str(st));
    check(got == BULK && h == hw, "bulk %s: every byte in order (hash %016llx)", family == AF_INET ? "ipv4" : "ipv6",
          (unsigned long long)h);
    close(s);
    close(l);
}

int main(void)
{
    t_init("inet_stress");
    short_connections();
    open_at_once();
    bulk(AF_INET);
    bulk(AF_INET6);
    return t_done();
}
