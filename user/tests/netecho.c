/*
 * netecho: a TCP bulk-transfer server and client that check every byte,
 * for moving data each way between the host and a server in Kiln
 * (make test's servers-nic section, make nettest-long).
 *
 *   netecho serve PORT                 serve connections until a stop
 *                                      (NETECHO_SNDBUF=n: their SO_SNDBUF)
 *   netecho send HOST PORT UP DOWN     send UP bytes, receive DOWN bytes
 *   netecho stop HOST PORT             make the server exit
 *
 * A connection starts with three little-endian u64: the bytes the client
 * sends (UP), the bytes it wants back (DOWN) and a seed; UP = DOWN = 0
 * asks the server to stop. Both streams are a position-dependent
 * pseudo-random sequence from the seed (the upward one from seed, the
 * downward one from seed + 1), so a lost, duplicated, reordered or
 * corrupted byte shows as a mismatch. The server reads all of UP, checks
 * it as it goes, answers with two u64 (an FNV-1a digest of what it got
 * and the count of bytes that differed), then sends DOWN bytes. The
 * client prints the byte counts and verdicts (deterministic) on stdout
 * and the rates on stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)

/* The stream for `seed` is one splitmix64 output per 8-byte word, so any
 * position can be computed on its own. */
static uint64_t word(uint64_t seed, uint64_t w)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + w + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(uint64_t seed, uint64_t pos, unsigned char *buf, size_t len)
{
    uint64_t z = word(seed, pos >> 3);
    for (size_t i = 0; i < len; i++) {
        uint64_t p = pos + i;
        if ((p & 7) == 0)
            z = word(seed, p >> 3);
        buf[i] = (unsigned char)(z >> ((p & 7) * 8));
    }
}

static uint64_t fnv(uint64_t h, const unsigned char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= buf[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads `len` bytes of the stream for `seed`; returns the mismatches, or
 * -1 if the connection ended early. */
static int64_t receive_checked(int fd, uint64_t seed, uint64_t len, uint64_t *digest)
{
    static unsigned char got[CHUNK], want[CHUNK];
    uint64_t pos = 0, bad = 0, h = 0xcbf29ce484222325ull;
    while (pos < len) {
        size_t want_len = len - pos < CHUNK ? (size_t)(len - pos) : CHUNK;
        ssize_t n = read(fd, got, want_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        fill(seed, pos, want, (size_t)n);
        for (ssize_t i = 0; i < n; i++)
            bad += got[i] != want[i];
        h = fnv(h, got, (size_t)n);
        pos += (uint64_t)n;
    }
    *digest = h;
    return (int64_t)bad;
}

static int send_stream(int fd, uint64_t seed, uint64_t len)
{
    static unsigned char buf[CHUNK];
    for (uint64_t pos = 0; pos < len;) {
        size_t n = len - pos < CHUNK ? (size_t)(len - pos) : CHUNK;
        fill(seed, pos, buf, n);
        if (write_all(fd, buf, n) < 0)
            return -1;
        pos += n;
    }
    return 0;
}

static uint64_t expected_digest(uint64_t seed, uint64_t len)
{
    static unsigned char buf[CHUNK];
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t pos = 0; pos < len;) {
        size_t n = len - pos < CHUNK ? (size_t)(len - pos) : CHUNK;
        fill(seed, pos, buf, n);
        h = fnv(h, buf, n);
        pos += n;
    }
    return h;
}

static int serve(int port, int family)
{
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(family, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* NETECHO_SNDBUF: the connections' SO_SNDBUF, set on the listener
     * (accepted sockets inherit it); the send-ring measurement uses it. */
    const char *sndbuf = getenv("NETECHO_SNDBUF");
    if (sndbuf) {
        int v = atoi(sndbuf);
        setsockopt(ls, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr *sa = family == AF_INET6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a;
    socklen_t len = family == AF_INET6 ? sizeof a6 : sizeof a;
    if (ls < 0 || bind(ls, sa, len) < 0 || listen(ls, 8) < 0) {
        perror("netecho: listen");
        return 1;
    }
    printf("netecho: listening on %d\n", port);
    fflush(stdout);
    for (;;) {
        struct sockaddr_in6 peer;
        socklen_t plen = sizeof peer;
        int c = accept(ls, (struct sockaddr *)&peer, &plen);
        /* stderr: the tests send stdout to /dev/null. accept reports a
         * link-local peer with the interface it came in on. */
        if (c >= 0 && peer.sin6_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&peer.sin6_addr))
            fprintf(stderr, "netecho: accepted a link-local peer, scope %u\n", peer.sin6_scope_id);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            perror("netecho: accept");
            return 1;
        }
        uint64_t hdr[3];
        if (read_all(c, hdr, sizeof hdr) < 0) {
            close(c);
            continue;
        }
        if (hdr[0] == 0 && hdr[1] == 0) {
            close(c);
            printf("netecho: stopped\n");
            return 0;
        }
        uint64_t digest = 0;
        int64_t bad = receive_checked(c, hdr[2], hdr[0], &digest);
        uint64_t reply[2] = {digest, (uint64_t)bad};
        if (bad < 0 || write_all(c, reply, sizeof reply) < 0 || send_stream(c, hdr[2] + 1, hdr[1]) < 0)
            fprintf(stderr, "netecho: connection ended early\n");
        printf("netecho: received %llu bytes (%lld differing), sent %llu\n", (unsigned long long)hdr[0],
               (long long)bad, (unsigned long long)hdr[1]);
        fflush(stdout);
        close(c);
    }
}

static int dial(const char *host, const char *port)
{
    /* An IPv6 literal (fe80::1%eth0 names its interface) or IPv4. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res;
    if (!strchr(host, ':'))
        hints.ai_flags = 0, hints.ai_family = AF_INET;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        fprintf(stderr, "netecho: cannot resolve %s\n", host);
        return -1;
    }
    int fd = socket(res->ai_family, res->ai_socktype, 0);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
        perror("netecho: connect");
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_in6 peer, own;
    socklen_t pl = sizeof peer, ol = sizeof own;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && getsockname(fd, (struct sockaddr *)&own, &ol) == 0 &&
        peer.sin6_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&peer.sin6_addr))
        printf("netecho: link-local peer scope %u, own scope %u\n", peer.sin6_scope_id, own.sin6_scope_id);
    return fd;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int send_cmd(const char *host, const char *port, uint64_t up, uint64_t down)
{
    signal(SIGPIPE, SIG_IGN);
    int fd = dial(host, port);
    if (fd < 0)
        return 1;
    uint64_t seed = 0x4b696c6e ^ up ^ (down << 1);
    uint64_t hdr[3] = {up, down, seed};
    double t0 = now();
    if (write_all(fd, hdr, sizeof hdr) < 0 || send_stream(fd, seed, up) < 0) {
        fprintf(stderr, "netecho: sending failed\n");
        return 1;
    }
    uint64_t reply[2];
    if (read_all(fd, reply, sizeof reply) < 0) {
        fprintf(stderr, "netecho: no reply\n");
        return 1;
    }
    double t1 = now();
    int ok_up = reply[1] == 0 && reply[0] == expected_digest(seed, up);
    printf("up %llu bytes: %s\n", (unsigned long long)up, ok_up ? "ok" : "CORRUPTED");
    uint64_t digest;
    int64_t bad = receive_checked(fd, seed + 1, down, &digest);
    double t2 = now();
    printf("down %llu bytes: %s\n", (unsigned long long)down,
           bad == 0 ? "ok" : bad < 0 ? "CUT SHORT" : "CORRUPTED");
    char extra;
    printf("then end of stream: %s\n", read(fd, &extra, 1) == 0 ? "yes" : "NO");
    fprintf(stderr, "netecho: up %.1f MB/s in %.2f s, down %.1f MB/s in %.2f s\n", (double)up / 1e6 / (t1 - t0),
            t1 - t0, (double)down / 1e6 / (t2 - t1), t2 - t1);
    close(fd);
    return ok_up && bad == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "serve") == 0)
        return serve(atoi(argv[2]), AF_INET);
    if (argc == 3 && strcmp(argv[1], "serve6") == 0)
        return serve(atoi(argv[2]), AF_INET6);
    if (argc == 6 && strcmp(argv[1], "send") == 0)
        return send_cmd(argv[2], argv[3], strtoull(argv[4], NULL, 0), strtoull(argv[5], NULL, 0));
    if (argc == 4 && strcmp(argv[1], "stop") == 0) {
        int fd = dial(argv[2], argv[3]);
        uint64_t hdr[3] = {0, 0, 0};
        return fd < 0 || write_all(fd, hdr, sizeof hdr) < 0;
    }
    fprintf(stderr, "usage: netecho serve|serve6 PORT | send HOST PORT UP DOWN | stop HOST PORT\n");
    return 2;
}
