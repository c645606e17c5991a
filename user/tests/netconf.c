/*
 * netconf (Kiln only; it skips itself on the host, whose interfaces a
 * test must not change): configuring lo through netlink and the ioctls
 * and seeing it everywhere. An IPv4 address added (acked, announced to
 * RTNLGRP_IPV4_IFADDR, in the dump and in SIOCGIFCONF, with its local,
 * prefix and broadcast routes; EEXIST again, NLM_F_REPLACE accepted) and
 * removed (EADDRNOTAVAIL again); a route through lo and one through a
 * gateway (in /proc/net/route with Linux's flags, found by RTM_GETROUTE,
 * EEXIST with NLM_F_EXCL, ENOENT without NLM_F_CREATE, ESRCH once gone);
 * lo down and up again (flags, operstate, its routes gone and back,
 * RTNLGRP_LINK told); the MTU by SIOCSIFMTU and RTM_SETLINK (EINVAL past
 * the bounds); an IPv6 address with its prefix route and if_inet6 line;
 * and a socket that never reads: its queue stops at SO_RCVBUF and the
 * next receive reports ENOBUFS. Everything is put back.
 */
#include "common.h"
#include "nlutil.h"
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>

static int fd, listener, lo;

static void ack(struct req *r, int want, const char *what)
{
    expect_nlerr(fd, r, want, what);
}

/* Counts the messages of a dump for which `match` holds. */
static int dump_count(int type, int family, int (*match)(struct nlmsghdr *))
{
    struct req r;
    struct rtgenmsg g = { .rtgen_family = family };
    req_init(&r, type, NLM_F_REQUEST | NLM_F_DUMP, &g, sizeof g);
    req_send(fd, &r);
    int count = 0;
    for (;;) {
        long n = recv_one(fd);
        if (n <= 0)
            return -1;
        int len = n;
        for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type == NLMSG_DONE)
                return count;
            if (h->nlmsg_type == NLMSG_ERROR)
                return -2;
            count += match(h);
        }
    }
}

static struct rtattr *attr(struct nlmsghdr *h, int fixed, int type)
{
    int len = h->nlmsg_len - NLMSG_LENGTH(fixed);
    for (struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) + NLMSG_ALIGN(fixed)); RTA_OK(a, len);
         a = RTA_NEXT(a, len))
        if (a->rta_type == type)
            return a;
    return NULL;
}

static unsigned char want4[4];
static int want_len, want_type;

static int is_addr(struct nlmsghdr *h)
{
    struct ifaddrmsg *ifa = NLMSG_DATA(h);
    struct rtattr *a = attr(h, sizeof *ifa, IFA_LOCAL);
    return ifa->ifa_family == AF_INET && (int)ifa->ifa_index == lo && ifa->ifa_prefixlen == want_len && a &&
           memcmp(RTA_DATA(a), want4, 4) == 0;
}

static int is_route(struct nlmsghdr *h)
{
    struct rtmsg *rt = NLMSG_DATA(h);
    struct rtattr *a = attr(h, sizeof *rt, RTA_DST);
    return rt->rtm_family == AF_INET && rt->rtm_dst_len == want_len && rt->rtm_type == want_type && a &&
           memcmp(RTA_DATA(a), want4, 4) == 0;
}

static int is_lo_route(struct nlmsghdr *h)
{
    struct rtmsg *rt = NLMSG_DATA(h);
    struct rtattr *a = attr(h, sizeof *rt, RTA_OIF);
    return a && *(int *)RTA_DATA(a) == lo;
}

static int has_addr(const char *a, int len)
{
    inet_pton(AF_INET, a, want4);
    want_len = len;
    return dump_count(RTM_GETADDR, AF_INET, is_addr);
}

static int has_route(const char *a, int len, int type)
{
    inet_pton(AF_INET, a, want4);
    want_len = len;
    want_type = type;
    return dump_count(RTM_GETROUTE, AF_INET, is_route);
}

/* The next announcement on the listener: its type, or -errno. */
static int announced(void)
{
    long n = recv(listener, rbuf, sizeof rbuf, MSG_DONTWAIT);
    return n < 0 ? -errno : ((struct nlmsghdr *)rbuf)->nlmsg_type;
}

static void addr4(int type, int flags, const char *a, int len, int want, const char *what)
{
    struct req r;
    struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = len, .ifa_index = lo };
    unsigned char b[4];
    inet_pton(AF_INET, a, b);
    req_init(&r, type, NLM_F_REQUEST | NLM_F_ACK | flags, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, b, 4);
    req_attr(&r, IFA_ADDRESS, b, 4);
    ack(&r, want, what);
}

static void route4(int type, int flags, const char *dst, int len, const char *gw, int want, const char *what)
{
    struct req r;
    struct rtmsg rt = { .rtm_family = AF_INET, .rtm_dst_len = len, .rtm_table = RT_TABLE_MAIN,
                        .rtm_protocol = RTPROT_BOOT, .rtm_scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
                        .rtm_type = RTN_UNICAST };
    unsigned char b[4];
    inet_pton(AF_INET, dst, b);
    req_init(&r, type, NLM_F_REQUEST | NLM_F_ACK | flags, &rt, sizeof rt);
    req_attr(&r, RTA_DST, b, 4);
    if (gw) {
        inet_pton(AF_INET, gw, b);
        req_attr(&r, RTA_GATEWAY, b, 4);
    } else {
        req_attr(&r, RTA_OIF, &lo, 4);
    }
    ack(&r, want, what);
}

static int proc_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        found += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return found;
}

static void addresses(void)
{
    int u = socket(AF_UNIX, SOCK_DGRAM, 0);
    addr4(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, "10.9.0.1", 24, 0, "add 10.9.0.1/24 to lo");
    check(announced() == RTM_NEWADDR, "RTNLGRP_IPV4_IFADDR hears RTM_NEWADDR");
    check(has_addr("10.9.0.1", 24) == 1, "the dump lists 10.9.0.1/24");
    check(has_route("10.9.0.1", 32, RTN_LOCAL) == 1, "a local route to 10.9.0.1");
    check(has_route("10.9.0.0", 24, RTN_LOCAL) == 1, "lo's prefix route is local");
    check(has_route("10.9.0.255", 32, RTN_BROADCAST) == 1, "a broadcast route to 10.9.0.255");
    struct ifreq list[16];
    struct ifconf c = { .ifc_len = sizeof list, .ifc_req = list };
    ioctl(u, SIOCGIFCONF, &c);
    int n = 0;
    for (int i = 0; i < c.ifc_len / (int)sizeof(struct ifreq); i++)
        n += strcmp(list[i].ifr_name, "lo") == 0;
    check(n == 2, "SIOCGIFCONF lists both addresses of lo");
    addr4(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, "10.9.0.1", 24, EEXIST, "add it again");
    addr4(RTM_NEWADDR, NLM_F_REPLACE, "10.9.0.1", 24, 0, "replace it");
    announced();

    route4(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, "10.20.0.0", 16, NULL, 0, "route 10.20.0.0/16 dev lo");
    route4(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, "10.20.0.0", 16, NULL, EEXIST, "again, NLM_F_EXCL");
    route4(RTM_NEWROUTE, 0, "10.21.0.0", 16, NULL, ENOENT, "a new route without NLM_F_CREATE");
    route4(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, "10.30.0.0", 16, "10.20.0.1", 0, "route 10.30.0.0/16 via 10.20.0.1");
    check(proc_has("/proc/net/route", "lo\t0000140A\t00000000\t0001\t0\t0\t0\t0000FFFF") == 1,
          "/proc/net/route: 10.20.0.0/16 on lo, flags U");
    check(proc_has("/proc/net/route", "lo\t00001E0A\t0100140A\t0003\t0\t0\t0\t0000FFFF") == 1,
          "/proc/net/route: 10.30.0.0/16 via 10.20.0.1, flags UG");
    struct req r;
    struct rtmsg q = { .rtm_family = AF_INET };
    unsigned char dst[4] = { 10, 30, 1, 1 };
    req_init(&r, RTM_GETROUTE, NLM_F_REQUEST, &q, sizeof q);
    req_attr(&r, RTA_DST, dst, 4);
    req_send(fd, &r);
    recv_one(fd);
    struct rtattr *gw = attr((struct nlmsghdr *)rbuf, sizeof q, RTA_GATEWAY);
    check(gw && memcmp(RTA_DATA(gw), "\x0a\x14\x00\x01", 4) == 0, "RTM_GETROUTE 10.30.1.1: via 10.20.0.1");
    route4(RTM_DELROUTE, 0, "10.30.0.0", 16, "10.20.0.1", 0, "delete the gateway route");
    route4(RTM_DELROUTE, 0, "10.30.0.0", 16, "10.20.0.1", ESRCH, "delete it again");
    route4(RTM_DELROUTE, 0, "10.20.0.0", 16, NULL, 0, "delete the route through lo");

    /* The same through SIOCADDRT/SIOCDELRT (busybox route). */
    int in = socket(AF_INET, SOCK_DGRAM, 0);
    struct rtentry rte;
    memset(&rte, 0, sizeof rte);
    struct sockaddr_in *d = (struct sockaddr_in *)&rte.rt_dst, *m = (struct sockaddr_in *)&rte.rt_genmask;
    d->sin_family = m->sin_family = AF_INET;
    d->sin_addr.s_addr = htonl(0x0a280000);
    m->sin_addr.s_addr = htonl(0xffff0000);
    char lo_name[] = "lo";
    rte.rt_dev = lo_name;
    rte.rt_flags = RTF_UP;
    EXPECT_OK("SIOCADDRT 10.40.0.0/16 dev lo", ioctl(in, SIOCADDRT, &rte));
    check(proc_has("/proc/net/route", "lo\t0000280A\t00000000\t0001\t0\t0\t0\t0000FFFF") == 1,
          "/proc/net/route: 10.40.0.0/16 on lo");
    EXPECT_ERR(EEXIST, "SIOCADDRT again", ioctl(in, SIOCADDRT, &rte));
    EXPECT_OK("SIOCDELRT 10.40.0.0/16", ioctl(in, SIOCDELRT, &rte));
    EXPECT_ERR(ESRCH, "SIOCDELRT again", ioctl(in, SIOCDELRT, &rte));
    close(in);
    check(proc_has("/proc/net/route", "lo\t") == 0, "/proc/net/route is empty again");

    addr4(RTM_DELADDR, 0, "10.9.0.1", 24, 0, "remove 10.9.0.1/24");
    check(announced() == RTM_DELADDR, "RTNLGRP_IPV4_IFADDR hears RTM_DELADDR");
    check(has_addr("10.9.0.1", 24) == 0, "the dump no longer lists it");
    check(has_route("10.9.0.255", 32, RTN_BROADCAST) == 0, "nor its routes");
    addr4(RTM_DELADDR, 0, "10.9.0.1", 24, EADDRNOTAVAIL, "remove it again");
    close(u);
}

static unsigned link_flags(void)
{
    int u = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    ioctl(u, SIOCGIFFLAGS, &r);
    close(u);
    return (unsigned short)r.ifr_flags;
}

static void link_state(void)
{
    struct req r;
    struct ifinfomsg ifi = { .ifi_index = lo, .ifi_change = IFF_UP, .ifi_flags = 0 };
    req_init(&r, RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    ack(&r, 0, "lo down");
    check(link_flags() == IFF_LOOPBACK, "SIOCGIFFLAGS: LOOPBACK only");
    check(announced() == RTM_NEWLINK, "RTNLGRP_LINK hears RTM_NEWLINK");
    check(dump_count(RTM_GETROUTE, AF_UNSPEC, is_lo_route) == 0, "lo's routes are gone");
    ifi.ifi_flags = IFF_UP;
    req_init(&r, RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    ack(&r, 0, "lo up");
    check(link_flags() == (IFF_UP | IFF_LOOPBACK | IFF_RUNNING), "SIOCGIFFLAGS: UP LOOPBACK RUNNING");
    check(dump_count(RTM_GETROUTE, AF_UNSPEC, is_lo_route) == 4, "lo's four routes are back");
    announced();

    int u = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct ifreq m;
    memset(&m, 0, sizeof m);
    strcpy(m.ifr_name, "lo");
    m.ifr_mtu = 1500;
    EXPECT_OK("SIOCSIFMTU lo 1500", ioctl(u, SIOCSIFMTU, &m));
    m.ifr_mtu = 0;
    ioctl(u, SIOCGIFMTU, &m);
    check(m.ifr_mtu == 1500, "SIOCGIFMTU: 1500");
    unsigned mtu = 65536;
    ifi.ifi_flags = ifi.ifi_change = 0;
    req_init(&r, RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, &ifi, sizeof ifi);
    req_attr(&r, IFLA_MTU, &mtu, 4);
    ack(&r, 0, "RTM_SETLINK mtu 65536");
    ioctl(u, SIOCGIFMTU, &m);
    check(m.ifr_mtu == 65536, "SIOCGIFMTU: 65536 again");
    close(u);
    while (announced() > 0)
        ;
}

static void ipv6(void)
{
    struct req r;
    struct ifaddrmsg ifa = { .ifa_family = AF_INET6, .ifa_prefixlen = 64, .ifa_index = lo };
    unsigned char a[16];
    inet_pton(AF_INET6, "fd00::1", a);
    req_init(&r, RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, a, 16);
    ack(&r, 0, "add fd00::1/64 to lo");
    check(proc_has("/proc/net/if_inet6", "fd000000000000000000000000000001 01 40 00 80       lo") == 1,
          "/proc/net/if_inet6 lists it");
    req_init(&r, RTM_DELADDR, NLM_F_REQUEST | NLM_F_ACK, &ifa, sizeof ifa);
    req_attr(&r, IFA_LOCAL, a, 16);
    ack(&r, 0, "remove fd00::1/64");
    check(proc_has("/proc/net/if_inet6", "fd00") == 0, "/proc/net/if_inet6 no longer lists it");
}

/* A socket that asks and never reads holds at most its receive buffer. */
static void never_reads(void)
{
    int s = nl_open();
    int size = 8192;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    struct req r;
    struct ifinfomsg ifi = { .ifi_index = lo };
    req_init(&r, RTM_GETLINK, NLM_F_REQUEST, &ifi, sizeof ifi);
    for (int i = 0; i < 200; i++)
        req_send(s, &r);
    long n = recv(s, rbuf, sizeof rbuf, MSG_DONTWAIT);
    check(n < 0 && errno == ENOBUFS, "after 200 unread replies: ENOBUFS");
    int queued = 0;
    while (recv(s, rbuf, sizeof rbuf, MSG_DONTWAIT) > 0)
        queued++;
    check(queued > 0 && queued < 60, "the queue held a few replies, not 200");
    req_send(s, &r);
    check(recv(s, rbuf, sizeof rbuf, MSG_DONTWAIT) > 0, "and works again once read");
    close(s);
}

int main(void)
{
    t_init("netconf");
    struct utsname u;
    if (uname(&u) != 0 || strstr(u.version, "Kiln") == NULL) {
        printf("not Kiln: skipped\n");
        return 0;
    }
    lo = if_nametoindex("lo");
    fd = nl_open();
    listener = nl_open();
    struct sockaddr_nl b = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_LINK };
    bind(listener, (struct sockaddr *)&b, sizeof b);
    addresses();
    link_state();
    ipv6();
    never_reads();
    return t_done();
}
