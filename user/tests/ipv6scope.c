/*
 * Link-local IPv6 addresses name their interface: bind and connect
 * (TCP and UDP) to an fe80:: address need sin6_scope_id (EINVAL without
 * one), and an index no interface has is ENODEV; a sockaddr_in6 too short
 * for the scope id counts as none. Other addresses ignore the scope.
 *
 * `ipv6scope nic` (the network stage, on slirp's network, eth0 up with
 * its link-local address) checks the working side: bind to the machine's
 * own link-local address with eth0's index, connect a UDP socket to the
 * router fe80::2 through eth0, and send to it.
 */
#include "common.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

static struct sockaddr_in6 a6(const char *text, uint16_t port, uint32_t scope)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_scope_id = scope};
    inet_pton(AF_INET6, text, &a.sin6_addr);
    return a;
}

static int try_bind(int type, struct sockaddr_in6 a, socklen_t len)
{
    int s = socket(AF_INET6, type, 0);
    int r = bind(s, (struct sockaddr *)&a, len);
    int e = r < 0 ? errno : 0;
    close(s);
    return e;
}

static int try_connect(int type, struct sockaddr_in6 a, socklen_t len)
{
    int s = socket(AF_INET6, type, 0);
    int r = connect(s, (struct sockaddr *)&a, len);
    int e = r < 0 ? errno : 0;
    close(s);
    return e;
}

static void errors(void)
{
    const socklen_t full = sizeof(struct sockaddr_in6), rfc2133 = 24;
    int e;
    e = try_bind(SOCK_DGRAM, a6("fe80::1", 0, 0), full);
    check(e == EINVAL, "udp bind fe80::1 without scope: %s", errname(e));
    e = try_bind(SOCK_STREAM, a6("fe80::1", 0, 0), full);
    check(e == EINVAL, "tcp bind fe80::1 without scope: %s", errname(e));
    e = try_bind(SOCK_DGRAM, a6("fe80::1", 0, 999), full);
    check(e == ENODEV, "udp bind fe80::1%%999: %s", errname(e));
    e = try_bind(SOCK_STREAM, a6("fe80::1", 0, 999), full);
    check(e == ENODEV, "tcp bind fe80::1%%999: %s", errname(e));
    e = try_bind(SOCK_DGRAM, a6("fe80::1", 0, 999), rfc2133);
    check(e == EINVAL, "udp bind fe80::1 in a 24-byte address: %s", errname(e));
    e = try_bind(SOCK_DGRAM, a6("::1", 0, 999), full);
    check(e == 0, "udp bind ::1 with a scope id: %s", errname(e));
    e = try_connect(SOCK_DGRAM, a6("fe80::1", 9, 0), full);
    check(e == EINVAL, "udp connect fe80::1 without scope: %s", errname(e));
    e = try_connect(SOCK_STREAM, a6("fe80::1", 9, 0), full);
    check(e == EINVAL, "tcp connect fe80::1 without scope: %s", errname(e));
    e = try_connect(SOCK_DGRAM, a6("fe80::1", 9, 0), rfc2133);
    check(e == EINVAL, "udp connect fe80::1 in a 24-byte address: %s", errname(e));
}

static void nic(void)
{
    unsigned idx = if_nametoindex("eth0");
    check(idx != 0, "eth0 has an index");
    struct sockaddr_in6 self = a6("fe80::5054:ff:fe12:3456", 0, idx);
    int e = try_bind(SOCK_DGRAM, self, sizeof self);
    check(e == 0, "udp bind to the link-local address through eth0: %s", errname(e));
    int s = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 router = a6("fe80::2", 9, idx);
    int r = connect(s, (struct sockaddr *)&router, sizeof router);
    check(r == 0, "udp connect fe80::2 through eth0: %s", errname(r < 0 ? errno : 0));
    ssize_t n = send(s, "x", 1, 0);
    check(n == 1, "udp send to fe80::2: %s", n == 1 ? "1" : errname(errno));
    close(s);
}

int main(int argc, char **argv)
{
    t_init("ipv6scope");
    errors();
    if (argc > 1 && strcmp(argv[1], "nic") == 0)
        nic();
    return t_done();
}
