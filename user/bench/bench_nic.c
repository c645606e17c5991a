/*
 * bench_nic.c: the through-the-NIC rows (issue 12): a TCP bulk-transfer
 * and round-trip program whose server runs in the guest and whose client
 * runs on the host, reaching it through QEMU's hostfwd.
 *
 *   kbench nicserve PORT              guest: bring eth0 up, serve, exit on stop
 *   kbench nicclient HOST PORT up BYTES    host: send BYTES, time until acked
 *   kbench nicclient HOST PORT down BYTES  host: receive BYTES, time them
 *   kbench nicclient HOST PORT rtt COUNT   host: COUNT 1-byte round trips
 *   kbench nicclient HOST PORT stop        host: make the server exit
 *
 * A connection opens with two u64 (native order, both ends are x86_64):
 * the mode and its count. The bytes are not checked (netecho, in make
 * test, checks every byte through the same path); a checking loop here
 * would charge the guest's CPU to the kernel under test.
 *
 * Under Linux, nicserve first loads Debian's virtio-net modules from /m
 * (its cloud kernel builds virtio_net and its dependencies as modules)
 * and gives eth0 slirp's guest address with the SIOCSIF ioctls; Kiln has
 * its drivers built in and eth0's address from `ip=`, so there both are
 * skipped (finit_module is ENOSYS).
 */
#include "kbench.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

enum { MODE_STOP, MODE_UP, MODE_DOWN, MODE_RTT };

/* Debian's cloud kernel: virtio_net and what it needs, in load order. */
static const char *const modules[] = {"virtio_ring", "virtio",   "virtio_pci_modern_dev", "virtio_pci_legacy_dev",
                                      "virtio_pci",  "failover", "net_failover",          "virtio_net"};

/* Loads the modules; returns 0 when the kernel has no module loading
 * (ENOSYS: Kiln, whose drivers are built in and whose eth0 has its
 * address from `ip=` already). */
static int load_modules(void)
{
    for (unsigned i = 0; i < sizeof modules / sizeof modules[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/m/%s.ko", modules[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        long r = syscall(SYS_finit_module, fd, "", 0);
        int e = errno;
        close(fd);
        if (r != 0 && e == ENOSYS)
            return 0;
        if (r != 0 && e != EEXIST)
            say("kbench nic: load %s: %s\n", modules[i], strerror(e));
    }
    return 1;
}

static int set_addr(int s, unsigned long req, const char *addr)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "eth0");
    struct sockaddr_in *a = (struct sockaddr_in *)&ifr.ifr_addr;
    a->sin_family = AF_INET;
    inet_pton(AF_INET, addr, &a->sin_addr);
    return ioctl(s, req, &ifr);
}

/* eth0 up with slirp's guest address, unless it already has one. */
static int eth0_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0)
        return fail("socket");
    struct ifreq ifr;
    for (int tries = 0;; tries++) {
        memset(&ifr, 0, sizeof ifr);
        strcpy(ifr.ifr_name, "eth0");
        if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0)
            break;
        if (tries == 50)
            return fail("no eth0");
        usleep(100000);
    }
    if (!(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
            return fail("eth0 up");
    }
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "eth0");
    if (ioctl(s, SIOCGIFADDR, &ifr) != 0) {
        if (set_addr(s, SIOCSIFADDR, "10.0.2.15") || set_addr(s, SIOCSIFNETMASK, "255.255.255.0"))
            return fail("eth0 address");
    }
    close(s);
    return 0;
}

static int read_full(int fd, void *buf, size_t len)
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

static int write_full(int fd, const void *buf, size_t len)
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

static char bulk[CHUNK];

/* Reads `count` bytes and drops them. */
static int sink(int fd, uint64_t count)
{
    while (count > 0) {
        ssize_t n = read(fd, bulk, count < CHUNK ? count : CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        count -= (uint64_t)n;
    }
    return 0;
}

static int source(int fd, uint64_t count)
{
    while (count > 0) {
        size_t n = count < CHUNK ? count : CHUNK;
        if (write_full(fd, bulk, n))
            return -1;
        count -= n;
    }
    return 0;
}

/* One connection's work; returns 1 on stop. */
static int serve_one(int c)
{
    uint64_t hdr[2];
    if (read_full(c, hdr, sizeof hdr))
        return 0;
    switch (hdr[0]) {
    case MODE_STOP:
        return 1;
    case MODE_UP:
        if (sink(c, hdr[1]) == 0)
            write_full(c, &hdr[1], sizeof hdr[1]);
        break;
    case MODE_DOWN:
        source(c, hdr[1]);
        break;
    case MODE_RTT:
        for (uint64_t i = 0; i < hdr[1]; i++) {
            char b;
            if (read_full(c, &b, 1) || write_full(c, &b, 1))
                break;
        }
        break;
    }
    return 0;
}

int nic_serve(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    if (load_modules() && eth0_up()) {
        say("kbench nic n/a %s\n", err);
        return 1;
    }
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 8)) {
        say("kbench nic n/a listen: %s\n", strerror(errno));
        return 1;
    }
    memset(bulk, 'n', sizeof bulk);
    say("kbench nic ready\n");
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            say("kbench nic n/a accept: %s\n", strerror(errno));
            return 1;
        }
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int stop = serve_one(c);
        close(c);
        if (stop)
            break;
    }
    say("kbench done\n");
    return 0;
}

static int dial(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, res->ai_socktype, 0), one = 1;
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Prints `bench nic_MODE NS OPS`: ns per 64 KiB for up and down, per
 * round trip for rtt. */
int nic_client(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    const char *mode = argv[4];
    uint64_t count = argc > 5 ? strtoull(argv[5], NULL, 0) : 0;
    uint64_t hdr[2] = {MODE_STOP, count};
    if (strcmp(mode, "up") == 0)
        hdr[0] = MODE_UP;
    else if (strcmp(mode, "down") == 0)
        hdr[0] = MODE_DOWN;
    else if (strcmp(mode, "rtt") == 0)
        hdr[0] = MODE_RTT;
    else if (strcmp(mode, "stop") != 0)
        return 2;
    int fd = dial(argv[2], argv[3]);
    if (fd < 0) {
        say("bench nic_%s n/a connect: %s\n", mode, strerror(errno));
        return 1;
    }
    uint64_t t0 = now(), ops = count, ack = 0;
    int bad = write_full(fd, hdr, sizeof hdr);
    switch (bad ? -1 : (int)hdr[0]) {
    case MODE_STOP:
        close(fd);
        return 0;
    case MODE_UP:
        bad = source(fd, count) || read_full(fd, &ack, sizeof ack) || ack != count;
        ops = count / CHUNK;
        break;
    case MODE_DOWN:
        bad = sink(fd, count);
        ops = count / CHUNK;
        break;
    case MODE_RTT:
        for (uint64_t i = 0; i < count && !bad; i++) {
            char b = 'r';
            bad = write_full(fd, &b, 1) || read_full(fd, &b, 1);
        }
        break;
    }
    uint64_t ns = now() - t0;
    close(fd);
    if (bad || ops == 0) {
        say("bench nic_%s n/a transfer cut short\n", mode);
        return 1;
    }
    say("bench nic_%s %.1f %llu\n", mode, (double)ns / (double)ops, (unsigned long long)ops);
    return 0;
}
