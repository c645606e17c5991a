/*
 * netlink: AF_NETLINK NETLINK_ROUTE sockets against the host. socket(2)
 * and socketpair(2) errors, port ids (autobind to the process id, then
 * negative numbers; EADDRINUSE; rebinding), getsockname/getpeername,
 * dumps of lo's link, addresses and routes (multipart, sequence numbers,
 * port ids, NLMSG_DONE), RTM_GETLINK by index and by name, acks
 * (NLM_F_CAPPED) and errors (the request echoed, or capped with
 * NETLINK_CAP_ACK), malformed requests (short and long nlmsg_len,
 * control messages, no NLM_F_REQUEST, no payload, short fixed headers,
 * short attributes), unknown message types, truncated reads (MSG_TRUNC
 * in and out, MSG_PEEK), the sender's address, SOL_NETLINK options, the
 * errors of address, link and route changes that change nothing, and
 * EPERM for them as user 1000. Only lo is looked at: the host has other
 * interfaces.
 */
#include "common.h"
#include "nlutil.h"
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static unsigned my_port;
static int lo_index;

static void print_mac(const char *what, struct rtattr *a)
{
    unsigned char *m = RTA_DATA(a);
    printf("  %s len %d", what, (int)RTA_PAYLOAD(a));
    for (int i = 0; i < (int)RTA_PAYLOAD(a); i++)
        printf("%s%02x", i ? ":" : " ", m[i]);
    printf("\n");
}

/* Prints a RTM_NEWLINK's deterministic facts. */
static void show_link(struct nlmsghdr *h)
{
    struct ifinfomsg *ifi = NLMSG_DATA(h);
    printf("link: family %d type %d index %d flags %#x change %#x\n", ifi->ifi_family, ifi->ifi_type,
           ifi->ifi_index, ifi->ifi_flags, ifi->ifi_change);
    int len = IFLA_PAYLOAD(h);
    for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        unsigned *u = RTA_DATA(a);
        unsigned char *c = RTA_DATA(a);
        switch (a->rta_type) {
        case IFLA_IFNAME: printf("  ifname %s\n", (char *)RTA_DATA(a)); break;
        case IFLA_MTU: printf("  mtu %u\n", *u); break;
        case IFLA_MIN_MTU: printf("  min_mtu %u\n", *u); break;
        case IFLA_MAX_MTU: printf("  max_mtu %u\n", *u); break;
        case IFLA_TXQLEN: printf("  txqlen %u\n", *u); break;
        case IFLA_QDISC: printf("  qdisc %s\n", (char *)RTA_DATA(a)); break;
        case IFLA_OPERSTATE: printf("  operstate %u\n", *c); break;
        case IFLA_LINKMODE: printf("  linkmode %u\n", *c); break;
        case IFLA_CARRIER: printf("  carrier %u\n", *c); break;
        case IFLA_NUM_TX_QUEUES: printf("  num_tx_queues %u\n", *u); break;
        case IFLA_NUM_RX_QUEUES: printf("  num_rx_queues %u\n", *u); break;
        case IFLA_GSO_MAX_SEGS: printf("  gso_max_segs %u\n", *u); break;
        case IFLA_PROMISCUITY: printf("  promiscuity %u\n", *u); break;
        case IFLA_GROUP: printf("  group %u\n", *u); break;
        case IFLA_ADDRESS: print_mac("address", a); break;
        case IFLA_BROADCAST: print_mac("broadcast", a); break;
        case IFLA_STATS: printf("  stats len %d\n", (int)RTA_PAYLOAD(a)); break;
        }
    }
}

static void show_addr(struct nlmsghdr *h)
{
    struct ifaddrmsg *ifa = NLMSG_DATA(h);
    char txt[64];
    printf("addr: family %d prefixlen %d flags %#x scope %d\n", ifa->ifa_family, ifa->ifa_prefixlen,
           ifa->ifa_flags, ifa->ifa_scope);
    int len = IFA_PAYLOAD(h);
    for (struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        switch (a->rta_type) {
        case IFA_ADDRESS:
        case IFA_LOCAL:
        case IFA_BROADCAST:
            inet_ntop(ifa->ifa_family, RTA_DATA(a), txt, sizeof txt);
            printf("  %s %s\n", a->rta_type == IFA_ADDRESS ? "address" : a->rta_type == IFA_LOCAL ? "local" : "broadcast",
                   txt);
            break;
        case IFA_LABEL: printf("  label %s\n", (char *)RTA_DATA(a)); break;
        case IFA_FLAGS: printf("  ifa_flags %#x\n", *(unsigned *)RTA_DATA(a)); break;
        case IFA_CACHEINFO: {
            struct ifa_cacheinfo *ci = RTA_DATA(a);
            printf("  lifetimes %u %u\n", ci->ifa_prefered, ci->ifa_valid);
            break;
        }
        }
    }
}

/* The route's output interface (0 for none). */
static int route_oif(struct nlmsghdr *h)
{
    struct rtmsg *rt = NLMSG_DATA(h);
    int len = RTM_PAYLOAD(h);
    for (struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len))
        if (a->rta_type == RTA_OIF)
            return *(int *)RTA_DATA(a);
    return 0;
}

static void show_route(struct nlmsghdr *h)
{
    struct rtmsg *rt = NLMSG_DATA(h);
    char txt[64] = "default";
    printf("route: family %d dst_len %d table %d protocol %d scope %d type %d\n", rt->rtm_family, rt->rtm_dst_len,
           rt->rtm_table, rt->rtm_protocol, rt->rtm_scope, rt->rtm_type);
    int len = RTM_PAYLOAD(h);
    for (struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        switch (a->rta_type) {
        case RTA_DST:
        case RTA_PREFSRC:
        case RTA_GATEWAY:
            inet_ntop(rt->rtm_family, RTA_DATA(a), txt, sizeof txt);
            printf("  %s %s\n", a->rta_type == RTA_DST ? "dst" : a->rta_type == RTA_PREFSRC ? "prefsrc" : "gateway", txt);
            break;
        case RTA_TABLE: printf("  table %u\n", *(unsigned *)RTA_DATA(a)); break;
        case RTA_PRIORITY: printf("  priority %u\n", *(unsigned *)RTA_DATA(a)); break;
        case RTA_OIF: printf("  oif %s\n", *(int *)RTA_DATA(a) == lo_index ? "lo" : "other"); break;
        case RTA_PREF: printf("  pref %u\n", *(unsigned char *)RTA_DATA(a)); break;
        }
    }
}

/*
 * Runs a dump of `type` for `family` and calls `each` on every message
 * (after checking the multipart framing). Returns the number of messages
 * or -errno.
 */
static int dump(int fd, int type, int family, void (*each)(struct nlmsghdr *))
{
    struct req r;
    struct rtgenmsg g = { .rtgen_family = family };
    req_init(&r, type, NLM_F_REQUEST | NLM_F_DUMP, &g, sizeof g);
    if (req_send(fd, &r) < 0)
        return -errno;
    int count = 0, framing_ok = 1;
    for (;;) {
        long n = recv_one(fd);
        if (n <= 0) {
            check(0, "dump %d: datagram (%s)", type, errname(-n));
            return -1;
        }
        int len = n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_seq != r.h->nlmsg_seq || h->nlmsg_pid != my_port || !(h->nlmsg_flags & NLM_F_MULTI))
                framing_ok = 0;
            if (h->nlmsg_type == NLMSG_DONE) {
                check(framing_ok, "dump %d: every message multipart with our seq and port", type);
                check(h->nlmsg_len == NLMSG_LENGTH(4) && *(int *)NLMSG_DATA(h) == 0, "dump %d: NLMSG_DONE carries 0",
                      type);
                check(len == (int)NLMSG_ALIGN(h->nlmsg_len), "dump %d: NLMSG_DONE ends its datagram", type);
                check(recv_one(fd) == -EAGAIN, "dump %d: nothing after NLMSG_DONE", type);
                return count;
            }
            if (h->nlmsg_type == NLMSG_ERROR)
                return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
            count++;
            if (each)
                each(h);
        }
    }
}

static void each_link(struct nlmsghdr *h)
{
    struct ifinfomsg *ifi = NLMSG_DATA(h);
    if (h->nlmsg_type == RTM_NEWLINK && ifi->ifi_index == lo_index)
        show_link(h);
}

static int v6_seen, v4_after_v6;

static void each_addr(struct nlmsghdr *h)
{
    struct ifaddrmsg *ifa = NLMSG_DATA(h);
    if (ifa->ifa_family == AF_INET6)
        v6_seen = 1;
    else if (v6_seen)
        v4_after_v6 = 1;
    if (h->nlmsg_type == RTM_NEWADDR && (int)ifa->ifa_index == lo_index)
        show_addr(h);
}

static int wrong_family;

static void each_addr4(struct nlmsghdr *h)
{
    if (((struct ifaddrmsg *)NLMSG_DATA(h))->ifa_family != AF_INET)
        wrong_family = 1;
}

static void each_route(struct nlmsghdr *h)
{
    if (h->nlmsg_type == RTM_NEWROUTE && route_oif(h) == lo_index)
        show_route(h);
}

static void sockets_and_names(void)
{
    EXPECT_ERR(ESOCKTNOSUPPORT, "socket(AF_NETLINK, SOCK_STREAM)", socket(AF_NETLINK, SOCK_STREAM, 0));
    EXPECT_ERR(ESOCKTNOSUPPORT, "socket(AF_NETLINK, SOCK_SEQPACKET)", socket(AF_NETLINK, SOCK_SEQPACKET, 0));
    EXPECT_ERR(EPROTONOSUPPORT, "socket(AF_NETLINK, protocol 32)", socket(AF_NETLINK, SOCK_RAW, 32));
    EXPECT_ERR(EPROTONOSUPPORT, "socket(AF_NETLINK, protocol -1)", socket(AF_NETLINK, SOCK_RAW, -1));
    EXPECT_ERR(EPROTONOSUPPORT, "socket(AF_NETLINK, NETLINK_UNUSED)", socket(AF_NETLINK, SOCK_RAW, 1));
    int sv[2];
    EXPECT_ERR(EOPNOTSUPP, "socketpair(AF_NETLINK)", socketpair(AF_NETLINK, SOCK_RAW, 0, sv));
    EXPECT_ERR(EPROTONOSUPPORT, "socketpair(AF_NETLINK, protocol 32)", socketpair(AF_NETLINK, SOCK_RAW, 32, sv));

    int d = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE);
    check(d >= 0, "SOCK_DGRAM route socket");
    int v = -1;
    socklen_t vl = sizeof v;
    getsockopt(d, SOL_SOCKET, SO_TYPE, &v, &vl);
    check(v == SOCK_DGRAM, "SO_TYPE of a SOCK_DGRAM netlink socket");
    close(d);

    int fd = nl_open();
    check(fd >= 0, "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)");
    vl = sizeof v;
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &vl);
    check(v == AF_NETLINK, "SO_DOMAIN is AF_NETLINK");
    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl);
    check(v == NETLINK_ROUTE, "SO_PROTOCOL is NETLINK_ROUTE");
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl);
    check(v == SOCK_RAW, "SO_TYPE is SOCK_RAW");

    struct sockaddr_nl a;
    socklen_t al = sizeof a;
    memset(&a, 0xff, sizeof a);
    check(getsockname(fd, (struct sockaddr *)&a, &al) == 0 && al == sizeof a && a.nl_family == AF_NETLINK &&
              a.nl_pid == 0 && a.nl_groups == 0,
          "getsockname before bind: port 0");
    al = sizeof a;
    check(getpeername(fd, (struct sockaddr *)&a, &al) == 0 && al == sizeof a && a.nl_pid == 0,
          "getpeername: the kernel, never ENOTCONN");

    struct sockaddr_nl b = { .nl_family = AF_NETLINK };
    EXPECT_ERR(EINVAL, "bind with a short address", bind(fd, (struct sockaddr *)&b, 8));
    b.nl_family = AF_INET;
    EXPECT_ERR(EINVAL, "bind with family AF_INET", bind(fd, (struct sockaddr *)&b, sizeof b));
    b.nl_family = AF_NETLINK;
    EXPECT_OK("bind with nl_pid 0", bind(fd, (struct sockaddr *)&b, sizeof b));
    al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(a.nl_pid == (unsigned)getpid(), "autobind takes the process id");
    my_port = a.nl_pid;
    b.nl_pid = 12345;
    EXPECT_ERR(EINVAL, "bind again to another port", bind(fd, (struct sockaddr *)&b, sizeof b));
    b.nl_pid = my_port;
    b.nl_groups = RTMGRP_LINK;
    EXPECT_OK("bind again to the same port with a group", bind(fd, (struct sockaddr *)&b, sizeof b));
    al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(a.nl_groups == RTMGRP_LINK, "getsockname shows the groups bound");
    b.nl_groups = 0;
    bind(fd, (struct sockaddr *)&b, sizeof b);

    int fd2 = nl_open();
    b.nl_pid = my_port;
    EXPECT_ERR(EADDRINUSE, "bind a second socket to the same port", bind(fd2, (struct sockaddr *)&b, sizeof b));
    b.nl_pid = 0;
    EXPECT_OK("autobind a second socket", bind(fd2, (struct sockaddr *)&b, sizeof b));
    al = sizeof a;
    getsockname(fd2, (struct sockaddr *)&a, &al);
    check((int)a.nl_pid < 0, "the second socket's port is negative");
    close(fd2);

    /* connect binds, and names the peer. */
    int fd3 = nl_open();
    struct sockaddr_nl k = { .nl_family = AF_NETLINK };
    EXPECT_OK("connect to the kernel", connect(fd3, (struct sockaddr *)&k, sizeof k));
    al = sizeof a;
    getsockname(fd3, (struct sockaddr *)&a, &al);
    check((int)a.nl_pid < 0, "connect autobinds");
    k.nl_family = AF_INET;
    EXPECT_ERR(EINVAL, "connect to family AF_INET", connect(fd3, (struct sockaddr *)&k, sizeof k));
    EXPECT_ERR(EINVAL, "connect with a short address", connect(fd3, (struct sockaddr *)&k, 1));
    k.nl_family = AF_UNSPEC;
    EXPECT_OK("connect to AF_UNSPEC", connect(fd3, (struct sockaddr *)&k, sizeof k));
    EXPECT_ERR(EOPNOTSUPP, "listen", listen(fd3, 1));
    EXPECT_ERR(EOPNOTSUPP, "shutdown", shutdown(fd3, SHUT_RDWR));
    close(fd3);
    close(fd);
}

static void dumps(int fd)
{
    lo_index = if_nametoindex("lo");
    check(lo_index == 1, "lo is interface 1");
    int n = dump(fd, RTM_GETLINK, AF_UNSPEC, each_link);
    check(n >= 1, "RTM_GETLINK dump");
    n = dump(fd, RTM_GETLINK, AF_INET, NULL);
    check(n >= 1, "RTM_GETLINK dump for AF_INET lists the links too");
    printf("IPv6's view of lo:\n");
    n = dump(fd, RTM_GETLINK, AF_INET6, each_link);
    check(n >= 1, "RTM_GETLINK dump for AF_INET6");
    n = dump(fd, RTM_GETADDR, AF_UNSPEC, each_addr);
    check(n >= 2 && !v4_after_v6, "RTM_GETADDR dump: IPv4 addresses, then IPv6");
    n = dump(fd, RTM_GETADDR, AF_INET, each_addr4);
    check(n >= 1 && !wrong_family, "RTM_GETADDR dump for AF_INET: IPv4 only");
    printf("IPv4 routes of lo:\n");
    n = dump(fd, RTM_GETROUTE, AF_INET, each_route);
    check(n >= 3, "RTM_GETROUTE dump for AF_INET");
    printf("IPv6 routes of lo:\n");
    n = dump(fd, RTM_GETROUTE, AF_INET6, each_route);
    check(n >= 1, "RTM_GETROUTE dump for AF_INET6");
    n = dump(fd, RTM_GETNEIGH, AF_INET6, NULL);
    check(n >= 0, "RTM_GETNEIGH dump");
}

static void requests(int fd)
{
    struct req r;
    struct ifinfomsg ifi = { .ifi_index = lo_index };
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    req_send(fd, &r);
    long n = recv_one(fd);
    struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
    check(n > 0 && h->nlmsg_type == RTM_NEWLINK && h->nlmsg_flags == 0 && h->nlmsg_seq == r.h->nlmsg_seq &&
              h->nlmsg_pid == my_port && (long)NLMSG_ALIGN(h->nlmsg_len) == n,
          "RTM_GETLINK by index: one RTM_NEWLINK, not multipart");
    show_link(h);
    n = recv_one(fd);
    check(n == NLMSG_LENGTH(sizeof(struct nlmsgerr)) && error_of(n) == 0 && h->nlmsg_flags == NLM_F_CAPPED &&
              h->nlmsg_seq == r.h->nlmsg_seq && h->nlmsg_pid == my_port,
          "then an ack: error 0, NLM_F_CAPPED, our seq and port");
    struct nlmsgerr *e = NLMSG_DATA(h);
    check(e->msg.nlmsg_type == RTM_GETLINK && e->msg.nlmsg_seq == r.h->nlmsg_seq && e->msg.nlmsg_len == r.h->nlmsg_len,
          "the ack carries the request's header");
    check(recv_one(fd) == -EAGAIN, "nothing more");

    /* By name. */
    ifi.ifi_index = 0;
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    req_attr(&r, IFLA_IFNAME, "lo", 3);
    req_send(fd, &r);
    n = recv_one(fd);
    check(n > 0 && h->nlmsg_type == RTM_NEWLINK && ((struct ifinfomsg *)NLMSG_DATA(h))->ifi_index == lo_index,
          "RTM_GETLINK by IFLA_IFNAME");
    check(recv_one(fd) == -EAGAIN, "no ack without NLM_F_ACK");

    /* Errors echo the request. */
    ifi.ifi_index = 9999;
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    req_send(fd, &r);
    n = recv_one(fd);
    check(error_of(n) == -ENODEV, "RTM_GETLINK of index 9999: ENODEV");
    check(n == (long)(NLMSG_LENGTH(sizeof(int)) + r.h->nlmsg_len) && h->nlmsg_len == n && h->nlmsg_flags == 0 &&
              memcmp(&e->msg, r.buf, r.h->nlmsg_len) == 0,
          "the error echoes the whole request");
    int one = 1;
    EXPECT_OK("NETLINK_CAP_ACK on", setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one));
    req_send(fd, &r);
    n = recv_one(fd);
    check(error_of(n) == -ENODEV && n == NLMSG_LENGTH(sizeof(struct nlmsgerr)) && h->nlmsg_flags == NLM_F_CAPPED,
          "with NETLINK_CAP_ACK the error carries only the header");
    int zero = 0;
    setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &zero, sizeof zero);

    ifi.ifi_index = 0;
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, EINVAL, "RTM_GETLINK with neither index nor name");
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    req_attr(&r, IFLA_IFNAME, "nosuch0", 8);
    expect_nlerr(fd, &r, ENODEV, "RTM_GETLINK of a name that does not exist");
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, 4);
    expect_nlerr(fd, &r, EINVAL, "RTM_GETLINK with a short ifinfomsg");
    struct rtgenmsg g = { .rtgen_family = AF_INET };
    req_init(&r, RTM_GETADDR, NLM_F_REQUEST, &g, sizeof g);
    expect_nlerr(fd, &r, EOPNOTSUPP, "RTM_GETADDR for AF_INET without NLM_F_DUMP");
    req_init(&r, RTM_MAX + 1, NLM_F_REQUEST, &g, sizeof g);
    expect_nlerr(fd, &r, EOPNOTSUPP, "a type past RTM_MAX");
    req_init(&r, RTM_MAX, NLM_F_REQUEST, &g, sizeof g);
    expect_nlerr(fd, &r, EOPNOTSUPP, "type RTM_MAX, which nothing handles");

    /* What is acked without being handled. */
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, NULL, 0);
    expect_nlerr(fd, &r, 0, "a request with no payload is acked");
    req_init(&r, NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, NULL, 0);
    expect_nlerr(fd, &r, 0, "NLMSG_NOOP is acked");
    req_init(&r, NLMSG_DONE, NLM_F_REQUEST | NLM_F_ACK, &g, sizeof g);
    expect_nlerr(fd, &r, 0, "NLMSG_DONE is acked");
    ifi.ifi_index = lo_index;
    req_init(&r, RTM_GETLINK, NLM_F_ACK, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, 0, "a message without NLM_F_REQUEST is only acked");
    req_init(&r, RTM_GETLINK, 0, &ifi, sizeof ifi);
    req_send(fd, &r);
    check(recv_one(fd) == -EAGAIN, "a message without NLM_F_REQUEST or NLM_F_ACK: no answer");
}

static void malformed(int fd)
{
    struct req r;
    struct ifinfomsg ifi = { .ifi_index = lo_index };
    long n;

    req_init(&r, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    check(send(fd, r.buf, 15, 0) == 15, "send of 15 bytes (less than a header) succeeds");
    check(recv_one(fd) == -EAGAIN, "and is ignored");
    r.h->nlmsg_len = 12;
    check(send(fd, r.buf, 32, 0) == 32, "send of nlmsg_len 12");
    check(recv_one(fd) == -EAGAIN, "is ignored");
    r.h->nlmsg_len = 200;
    check(send(fd, r.buf, 32, 0) == 32, "send of nlmsg_len past the buffer");
    check(recv_one(fd) == -EAGAIN, "is ignored");
    r.h->nlmsg_len = 0xffffffff;
    check(send(fd, r.buf, 32, 0) == 32, "send of nlmsg_len 0xffffffff");
    check(recv_one(fd) == -EAGAIN, "is ignored");

    /* Two requests in one datagram, then a truncated third. */
    char two[256];
    req_init(&r, NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, NULL, 0);
    memcpy(two, r.buf, 16);
    int first_seq = r.h->nlmsg_seq;
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    memcpy(two + 16, r.buf, r.h->nlmsg_len);
    int len = 16 + r.h->nlmsg_len;
    memcpy(two + len, r.buf, 10);
    check(send(fd, two, len + 10, 0) == len + 10, "send of two requests and a piece");
    n = recv_one(fd);
    struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
    check(error_of(n) == 0 && h->nlmsg_seq == (unsigned)first_seq, "the first is acked");
    n = recv_one(fd);
    check(n > 0 && h->nlmsg_type == RTM_NEWLINK, "the second answered");
    n = recv_one(fd);
    check(error_of(n) == 0 && h->nlmsg_seq == r.h->nlmsg_seq, "and acked");
    check(recv_one(fd) == -EAGAIN, "the piece is ignored");

    /* An attribute that ends past the message, or is too short for its type. */
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    req_attr(&r, IFLA_IFNAME, "lo", 3);
    ((struct rtattr *)(r.buf + NLMSG_LENGTH(sizeof ifi)))->rta_len = 100;
    req_send(fd, &r);
    n = recv_one(fd);
    check(n > 0 && h->nlmsg_type == RTM_NEWLINK, "an attribute longer than the message ends the attributes");
    check(error_of(recv_one(fd)) == 0, "and the request is acked");
    ifi.ifi_index = 0;
    req_init(&r, RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK, &ifi, 0);
    struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 8, .ifa_index = lo_index };
    req_init(&r, RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, "\x7f\x00", 2);
    expect_nlerr(fd, &r, ERANGE, "RTM_NEWADDR with a 2-byte IFA_LOCAL");
}

static void truncation(int fd)
{
    struct req r;
    struct ifinfomsg ifi = { .ifi_index = lo_index };
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    req_send(fd, &r);
    char small[16];
    struct sockaddr_nl from;
    struct iovec iov = { small, sizeof small };
    struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1 };
    long full = recv(fd, small, sizeof small, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
    check(full > (long)sizeof small, "MSG_PEEK|MSG_TRUNC returns the whole datagram's length");
    memset(&from, 0xff, sizeof from);
    long n = recvmsg(fd, &m, MSG_DONTWAIT);
    check(n == sizeof small && (m.msg_flags & MSG_TRUNC), "a short read returns what fits, with MSG_TRUNC");
    check(m.msg_namelen == sizeof from && from.nl_family == AF_NETLINK && from.nl_pid == 0 && from.nl_groups == 0 &&
              from.nl_pad == 0,
          "the sender is the kernel: port 0, no groups");
    check(recv_one(fd) == -EAGAIN, "the rest of the datagram is gone");
    req_send(fd, &r);
    n = recv(fd, small, sizeof small, MSG_TRUNC | MSG_DONTWAIT);
    check(n == full, "MSG_TRUNC returns the whole length");
}

static void addressing(int fd)
{
    struct req r;
    struct ifinfomsg ifi = { .ifi_index = lo_index };
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    struct sockaddr_nl to = { .nl_family = AF_NETLINK };
    EXPECT_ERR(EINVAL, "sendto with a 4-byte address", sendto(fd, r.buf, r.h->nlmsg_len, 0, (struct sockaddr *)&to, 4));
    to.nl_family = AF_INET;
    EXPECT_ERR(EINVAL, "sendto family AF_INET",
               sendto(fd, r.buf, r.h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof to));
    to.nl_family = AF_NETLINK;
    to.nl_pid = 0x7ffffff0;
    EXPECT_ERR(ECONNREFUSED, "sendto a port nobody has",
               sendto(fd, r.buf, r.h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof to));
    EXPECT_ERR(EOPNOTSUPP, "send with MSG_OOB", send(fd, r.buf, r.h->nlmsg_len, MSG_OOB));
    int big = 1 << 20;
    char *huge = calloc(1, big);
    EXPECT_ERR(EMSGSIZE, "send of 1 MiB", send(fd, huge, big, 0));
    free(huge);
    check(recv_one(fd) == -EAGAIN, "none of these reached the kernel");

    /* One process's sockets talk to each other by port id. */
    int other = nl_open();
    struct sockaddr_nl b = { .nl_family = AF_NETLINK };
    bind(other, (struct sockaddr *)&b, sizeof b);
    struct sockaddr_nl oa;
    socklen_t ol = sizeof oa;
    getsockname(other, (struct sockaddr *)&oa, &ol);
    to.nl_pid = oa.nl_pid;
    check(sendto(fd, "hello", 5, 0, (struct sockaddr *)&to, sizeof to) == 5, "sendto another socket's port");
    char buf[16];
    struct sockaddr_nl from;
    socklen_t fl = sizeof from;
    long n = recvfrom(other, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
    check(n == 5 && memcmp(buf, "hello", 5) == 0 && from.nl_pid == my_port, "it arrives, from our port");
    close(other);
}

static void options(int fd)
{
    int v = 0;
    socklen_t vl = sizeof v;
    EXPECT_ERR(EINVAL, "NETLINK_ADD_MEMBERSHIP group 0",
               setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &v, sizeof v));
    v = RTNLGRP_IPV4_IFADDR;
    EXPECT_OK("NETLINK_ADD_MEMBERSHIP RTNLGRP_IPV4_IFADDR",
              setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &v, sizeof v));
    unsigned groups[8] = { 0 };
    socklen_t gl = sizeof groups;
    EXPECT_OK("NETLINK_LIST_MEMBERSHIPS", getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, groups, &gl));
    check(groups[0] == RTMGRP_IPV4_IFADDR, "the group is listed");
    struct sockaddr_nl a;
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    check(a.nl_groups == RTMGRP_IPV4_IFADDR, "getsockname shows the group");
    EXPECT_OK("NETLINK_DROP_MEMBERSHIP", setsockopt(fd, SOL_NETLINK, NETLINK_DROP_MEMBERSHIP, &v, sizeof v));
    short s = 1;
    EXPECT_OK("NETLINK_CAP_ACK with a short value", setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &s, sizeof s));
    EXPECT_ERR(ENOPROTOOPT, "option 99", setsockopt(fd, SOL_NETLINK, 99, &v, sizeof v));
    EXPECT_ERR(ENOPROTOOPT, "getsockopt option 99", getsockopt(fd, SOL_NETLINK, 99, &v, &vl));
    EXPECT_ERR(ENOPROTOOPT, "level SOL_IP", setsockopt(fd, 0, 1, &v, sizeof v));
    v = -1;
    vl = sizeof v;
    EXPECT_OK("getsockopt NETLINK_CAP_ACK", getsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &v, &vl));
    check(v == 0 && vl == sizeof v, "NETLINK_CAP_ACK is off");
    EXPECT_ERR(ENOTTY, "FIONREAD on a netlink socket", ioctl(fd, FIONREAD, &v));
}

/* Requests that would change something but fail first. */
static void changes(int fd)
{
    struct req r;
    struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 8, .ifa_index = lo_index };
    unsigned char lo4[4] = { 127, 0, 0, 1 }, other4[4] = { 127, 0, 0, 9 };
    int f = NLM_F_REQUEST | NLM_F_ACK;

    ifa.ifa_prefixlen = 33;
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo4, 4);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWADDR prefix 33");
    ifa.ifa_prefixlen = 8;
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWADDR without IFA_LOCAL");
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, 4);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWADDR with a short ifaddrmsg");
    ifa.ifa_index = 9999;
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo4, 4);
    expect_nlerr(fd, &r, ENODEV, "RTM_NEWADDR on interface 9999");
    ifa.ifa_index = lo_index;
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo4, 4);
    req_attr(&r, IFA_ADDRESS, lo4, 4);
    expect_nlerr(fd, &r, EEXIST, "RTM_NEWADDR of 127.0.0.1/8 again, NLM_F_EXCL");
    req_init(&r, RTM_NEWADDR, f, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo4, 4);
    expect_nlerr(fd, &r, EEXIST, "RTM_NEWADDR of 127.0.0.1/8 again, no flags");
    req_init(&r, RTM_DELADDR, f, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, other4, 4);
    expect_nlerr(fd, &r, EADDRNOTAVAIL, "RTM_DELADDR of an address lo lacks");
    ifa.ifa_index = 9999;
    req_init(&r, RTM_DELADDR, f, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo4, 4);
    expect_nlerr(fd, &r, ENODEV, "RTM_DELADDR on interface 9999");
    ifa.ifa_family = AF_INET6;
    ifa.ifa_index = lo_index;
    ifa.ifa_prefixlen = 129;
    unsigned char lo6[16] = { [15] = 1 }, two6[16] = { [15] = 2 };
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo6, 16);
    expect_nlerr(fd, &r, EEXIST, "RTM_NEWADDR ::1/129 (it exists, whatever the prefix)");
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, two6, 16);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWADDR ::2/129");
    ifa.ifa_prefixlen = 128;
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWADDR IPv6 without an address");
    req_init(&r, RTM_NEWADDR, f | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, lo6, 16);
    expect_nlerr(fd, &r, EEXIST, "RTM_NEWADDR of ::1/128 again");
    ifa.ifa_family = AF_PACKET;
    req_init(&r, RTM_NEWADDR, f, &ifa, sizeof ifa);
    expect_nlerr(fd, &r, EOPNOTSUPP, "RTM_NEWADDR for AF_PACKET");

    /* Links. */
    struct ifinfomsg ifi = { .ifi_index = 9999 };
    req_init(&r, RTM_SETLINK, f, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, ENODEV, "RTM_SETLINK of interface 9999");
    ifi.ifi_index = 0;
    req_init(&r, RTM_SETLINK, f, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, EINVAL, "RTM_SETLINK naming no interface");
    ifi.ifi_index = lo_index;
    ifi.ifi_flags = IFF_UP;
    ifi.ifi_change = IFF_UP;
    req_init(&r, RTM_SETLINK, f, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, 0, "RTM_SETLINK lo up (it is up)");
    unsigned mtu = 65536;
    ifi.ifi_flags = ifi.ifi_change = 0;
    req_init(&r, RTM_SETLINK, f, &ifi, sizeof ifi);
    req_attr(&r, IFLA_MTU, &mtu, 4);
    expect_nlerr(fd, &r, 0, "RTM_SETLINK lo mtu 65536 (its MTU)");
    req_init(&r, RTM_SETLINK, f, &ifi, sizeof ifi);
    req_attr(&r, IFLA_MTU, &mtu, 2);
    expect_nlerr(fd, &r, ERANGE, "RTM_SETLINK with a 2-byte IFLA_MTU");
    req_init(&r, RTM_NEWLINK, f | NLM_F_EXCL, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, EEXIST, "RTM_NEWLINK of lo with NLM_F_EXCL");
    ifi.ifi_index = 9999;
    req_init(&r, RTM_NEWLINK, f, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, ENODEV, "RTM_NEWLINK of interface 9999 without NLM_F_CREATE");
    ifi.ifi_index = 0;
    req_init(&r, RTM_NEWLINK, f | NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof ifi);
    req_attr(&r, IFLA_IFNAME, "kt0", 4);
    expect_nlerr(fd, &r, EOPNOTSUPP, "RTM_NEWLINK creating kt0 without a kind");
    ifi.ifi_index = lo_index;
    req_init(&r, RTM_DELLINK, f, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, EOPNOTSUPP, "RTM_DELLINK of lo");

    /* Routes. */
    struct rtmsg rt = { .rtm_family = AF_INET, .rtm_dst_len = 33, .rtm_table = RT_TABLE_MAIN,
                        .rtm_protocol = RTPROT_BOOT, .rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST };
    unsigned char net[4] = { 10, 99, 0, 0 }, gw[4] = { 203, 0, 113, 1 };
    int oif = 9999;
    req_init(&r, RTM_NEWROUTE, f | NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof rt);
    req_attr(&r, RTA_DST, net, 4);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWROUTE /33");
    rt.rtm_dst_len = 8;
    req_init(&r, RTM_NEWROUTE, f | NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof rt);
    req_attr(&r, RTA_DST, net, 4);
    req_attr(&r, RTA_OIF, &oif, 4);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWROUTE 10.99.0.0/8 (host bits set)");
    rt.rtm_dst_len = 16;
    req_init(&r, RTM_NEWROUTE, f | NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof rt);
    req_attr(&r, RTA_DST, net, 4);
    req_attr(&r, RTA_OIF, &oif, 4);
    expect_nlerr(fd, &r, ENODEV, "RTM_NEWROUTE via interface 9999");
    req_init(&r, RTM_NEWROUTE, f | NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof rt);
    req_attr(&r, RTA_DST, net, 4);
    req_attr(&r, RTA_GATEWAY, gw, 4);
    expect_nlerr(fd, &r, ENETUNREACH, "RTM_NEWROUTE via a gateway no link reaches");
    req_init(&r, RTM_NEWROUTE, f | NLM_F_CREATE | NLM_F_EXCL, &rt, 6);
    expect_nlerr(fd, &r, EINVAL, "RTM_NEWROUTE with a short rtmsg");
    req_init(&r, RTM_DELROUTE, f, &rt, sizeof rt);
    req_attr(&r, RTA_DST, net, 4);
    expect_nlerr(fd, &r, ESRCH, "RTM_DELROUTE of a route that does not exist");

    /* A lookup. */
    rt = (struct rtmsg){ .rtm_family = AF_INET };
    req_init(&r, RTM_GETROUTE, NLM_F_REQUEST, &rt, sizeof rt);
    req_attr(&r, RTA_DST, lo4, 4);
    req_send(fd, &r);
    long n = recv_one(fd);
    struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
    check(n > 0 && h->nlmsg_type == RTM_NEWROUTE, "RTM_GETROUTE 127.0.0.1 answers a route");
    if (n > 0 && h->nlmsg_type == RTM_NEWROUTE) {
        struct rtmsg *got = NLMSG_DATA(h);
        printf("lookup: dst_len %d table %d type %d oif %s\n", got->rtm_dst_len, got->rtm_table, got->rtm_type,
               route_oif(h) == lo_index ? "lo" : "other");
    }
}

static int unprivileged(void *arg)
{
    (void)arg;
    t_failed = 0;
    if (setgid(1000) != 0 || setuid(1000) != 0)
        return 1;
    int fd = nl_open();
    struct req r;
    struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 8, .ifa_index = 9999 };
    req_init(&r, RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK, &ifa, sizeof ifa);
    expect_nlerr(fd, &r, EPERM, "user 1000: RTM_NEWADDR");
    struct ifinfomsg ifi = { .ifi_index = 9999 };
    req_init(&r, RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, EPERM, "user 1000: RTM_SETLINK");
    req_init(&r, RTM_MAX, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    expect_nlerr(fd, &r, EPERM, "user 1000: type RTM_MAX (a NEW type)");
    ifi.ifi_index = lo_index;
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    req_send(fd, &r);
    check(recv_one(fd) > 0 && error_of(recv_one(fd)) == 0, "user 1000: RTM_GETLINK works");
    struct sockaddr_nl to = { .nl_family = AF_NETLINK, .nl_pid = 5 };
    EXPECT_ERR(EPERM, "user 1000: sendto port 5", sendto(fd, r.buf, r.h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof to));
    EXPECT_ERR(EPERM, "user 1000: connect to port 5", connect(fd, (struct sockaddr *)&to, sizeof to));
    struct sockaddr_nl b = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
    int fd2 = nl_open();
    EXPECT_OK("user 1000: bind to a group", bind(fd2, (struct sockaddr *)&b, sizeof b));
    return t_failed;
}

int main(void)
{
    t_init("netlink");
    sockets_and_names();
    int fd = nl_open();
    struct sockaddr_nl b = { .nl_family = AF_NETLINK };
    bind(fd, (struct sockaddr *)&b, sizeof b);
    struct sockaddr_nl a;
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    my_port = a.nl_pid;
    dumps(fd);
    requests(fd);
    malformed(fd);
    truncation(fd);
    addressing(fd);
    options(fd);
    changes(fd);
    check(run_child(unprivileged, NULL) == 0, "the unprivileged checks passed");
    return t_done();
}
