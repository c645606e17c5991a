/*
 * ifconf: what programs see of the interfaces, lo only (the host has
 * others). The device ioctls on an AF_UNIX and an AF_NETLINK socket
 * (SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFFLAGS, SIOCGIFMTU, SIOCGIFHWADDR,
 * SIOCGIFTXQLEN, SIOCGIFMETRIC, SIOCGIFMAP, SIOCGIFCONF with a null, a
 * short and a full buffer; ENODEV, EFAULT, ENOTTY; the IPv4 address
 * ioctls, which only AF_INET sockets answer (and SIOCSIFADDR of the
 * address lo has), SIOCADDRT/SIOCDELRT's errors; SIOCSIFFLAGS/SIOCSIFMTU
 * that change nothing, and EPERM for them as user 1000), libc's
 * getifaddrs, if_nameindex, if_nametoindex and if_indextoname (musl's
 * go through netlink), and the /proc/net files' headers and lo lines.
 */
#include "common.h"
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif

static int dev_ioctls(int fd, const char *what)
{
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    printf("%s:\n", what);
    EXPECT_OK("SIOCGIFINDEX lo", ioctl(fd, SIOCGIFINDEX, &r));
    check(r.ifr_ifindex == 1, "lo's index is 1");
    memset(&r, 0, sizeof r);
    r.ifr_ifindex = 1;
    EXPECT_OK("SIOCGIFNAME 1", ioctl(fd, SIOCGIFNAME, &r));
    check(strcmp(r.ifr_name, "lo") == 0, "interface 1 is lo");
    r.ifr_ifindex = 9999;
    EXPECT_ERR(ENODEV, "SIOCGIFNAME 9999", ioctl(fd, SIOCGIFNAME, &r));
    strcpy(r.ifr_name, "lo");
    EXPECT_OK("SIOCGIFFLAGS lo", ioctl(fd, SIOCGIFFLAGS, &r));
    printf("lo flags %#x\n", (unsigned short)r.ifr_flags);
    EXPECT_OK("SIOCGIFMTU lo", ioctl(fd, SIOCGIFMTU, &r));
    printf("lo mtu %d\n", r.ifr_mtu);
    EXPECT_OK("SIOCGIFHWADDR lo", ioctl(fd, SIOCGIFHWADDR, &r));
    unsigned char *m = (unsigned char *)r.ifr_hwaddr.sa_data;
    printf("lo hwaddr family %d %02x:%02x:%02x:%02x:%02x:%02x\n", r.ifr_hwaddr.sa_family, m[0], m[1], m[2], m[3], m[4],
           m[5]);
    EXPECT_OK("SIOCGIFTXQLEN lo", ioctl(fd, SIOCGIFTXQLEN, &r));
    printf("lo txqlen %d\n", r.ifr_qlen);
    r.ifr_metric = 7;
    EXPECT_OK("SIOCGIFMETRIC lo", ioctl(fd, SIOCGIFMETRIC, &r));
    printf("lo metric %d\n", r.ifr_metric);
    memset(&r.ifr_map, 0xff, sizeof r.ifr_map);
    EXPECT_OK("SIOCGIFMAP lo", ioctl(fd, SIOCGIFMAP, &r));
    check(r.ifr_map.base_addr == 0 && r.ifr_map.irq == 0, "lo's map is zero");
    strcpy(r.ifr_name, "nosuch0");
    EXPECT_ERR(ENODEV, "SIOCGIFFLAGS nosuch0", ioctl(fd, SIOCGIFFLAGS, &r));
    EXPECT_ERR(ENODEV, "SIOCGIFINDEX nosuch0", ioctl(fd, SIOCGIFINDEX, &r));
    /* The name is cut at 15 bytes: "lo" followed by garbage is not lo. */
    memset(r.ifr_name, 'x', sizeof r.ifr_name);
    EXPECT_ERR(ENODEV, "SIOCGIFFLAGS of 16 unterminated bytes", ioctl(fd, SIOCGIFFLAGS, &r));
    EXPECT_ERR(EFAULT, "SIOCGIFFLAGS with a bad pointer", ioctl(fd, SIOCGIFFLAGS, BAD_PTR));
    strcpy(r.ifr_name, "lo");
    EXPECT_ERR(ENOTTY, "SIOCGIFADDR (not an AF_INET socket)", ioctl(fd, SIOCGIFADDR, &r));
    EXPECT_ERR(ENOTTY, "SIOCGIFNETMASK (not an AF_INET socket)", ioctl(fd, SIOCGIFNETMASK, &r));
    EXPECT_ERR(ENOTTY, "an unassigned 0x89 ioctl", ioctl(fd, 0x8950, &r));

    /* SIOCGIFCONF: IPv4 addresses. */
    struct ifconf c = { .ifc_len = 0, .ifc_buf = NULL };
    EXPECT_OK("SIOCGIFCONF with no buffer", ioctl(fd, SIOCGIFCONF, &c));
    int need = c.ifc_len;
    check(need >= (int)sizeof(struct ifreq) && need % (int)sizeof(struct ifreq) == 0,
          "it gives the length, a multiple of struct ifreq");
    struct ifreq list[64];
    c.ifc_len = sizeof(struct ifreq) - 1;
    c.ifc_req = list;
    EXPECT_OK("SIOCGIFCONF with room for less than one", ioctl(fd, SIOCGIFCONF, &c));
    check(c.ifc_len == 0, "nothing stored");
    c.ifc_len = sizeof list;
    EXPECT_OK("SIOCGIFCONF", ioctl(fd, SIOCGIFCONF, &c));
    check(c.ifc_len == need, "as long as announced");
    int found = 0;
    for (int i = 0; i < c.ifc_len / (int)sizeof(struct ifreq); i++) {
        struct sockaddr_in *a = (struct sockaddr_in *)&list[i].ifr_addr;
        if (strcmp(list[i].ifr_name, "lo") == 0) {
            printf("ifconf lo: family %d %s port %d\n", a->sin_family, inet_ntoa(a->sin_addr), a->sin_port);
            found++;
        }
    }
    check(found == 1, "lo has one IPv4 address");
    c.ifc_len = sizeof list;
    c.ifc_req = BAD_PTR;
    EXPECT_ERR(EFAULT, "SIOCGIFCONF into a bad buffer", ioctl(fd, SIOCGIFCONF, &c));
    EXPECT_ERR(EFAULT, "SIOCGIFCONF with a bad ifconf", ioctl(fd, SIOCGIFCONF, BAD_PTR));

    /* Changes that change nothing. */
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    ioctl(fd, SIOCGIFFLAGS, &r);
    EXPECT_OK("SIOCSIFFLAGS lo with its own flags", ioctl(fd, SIOCSIFFLAGS, &r));
    r.ifr_mtu = 65536;
    EXPECT_OK("SIOCSIFMTU lo 65536 (its MTU)", ioctl(fd, SIOCSIFMTU, &r));
    r.ifr_mtu = -1;
    EXPECT_ERR(EINVAL, "SIOCSIFMTU -1", ioctl(fd, SIOCSIFMTU, &r));
    strcpy(r.ifr_name, "nosuch0");
    EXPECT_ERR(ENODEV, "SIOCSIFFLAGS nosuch0", ioctl(fd, SIOCSIFFLAGS, &r));
    strcpy(r.ifr_name, "lo");
    EXPECT_ERR(EOPNOTSUPP, "SIOCSIFMETRIC lo", ioctl(fd, SIOCSIFMETRIC, &r));
    return 0;
}

/* The IPv4 address ioctls, which only AF_INET sockets answer. */
static void inet_ioctls(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    check(fd >= 0, "AF_INET socket");
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    struct sockaddr_in *a = (struct sockaddr_in *)&r.ifr_addr;
    EXPECT_OK("SIOCGIFADDR lo", ioctl(fd, SIOCGIFADDR, &r));
    printf("lo address: family %d %s\n", a->sin_family, inet_ntoa(a->sin_addr));
    EXPECT_OK("SIOCGIFNETMASK lo", ioctl(fd, SIOCGIFNETMASK, &r));
    printf("lo netmask: %s\n", inet_ntoa(a->sin_addr));
    EXPECT_OK("SIOCGIFBRDADDR lo", ioctl(fd, SIOCGIFBRDADDR, &r));
    printf("lo broadcast: %s\n", inet_ntoa(a->sin_addr));
    EXPECT_OK("SIOCGIFDSTADDR lo", ioctl(fd, SIOCGIFDSTADDR, &r));
    printf("lo destination: %s\n", inet_ntoa(a->sin_addr));
    EXPECT_OK("SIOCGIFFLAGS lo on AF_INET", ioctl(fd, SIOCGIFFLAGS, &r));
    printf("lo flags %#x\n", (unsigned short)r.ifr_flags);
    strcpy(r.ifr_name, "nosuch0");
    EXPECT_ERR(ENODEV, "SIOCGIFADDR nosuch0", ioctl(fd, SIOCGIFADDR, &r));
    strcpy(r.ifr_name, "lo");
    a->sin_family = AF_UNIX;
    EXPECT_ERR(EINVAL, "SIOCSIFADDR with family AF_UNIX", ioctl(fd, SIOCSIFADDR, &r));
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(0x7f000001);
    EXPECT_OK("SIOCSIFADDR lo 127.0.0.1 (its address)", ioctl(fd, SIOCSIFADDR, &r));
    struct ifconf c = { .ifc_len = 0, .ifc_buf = NULL };
    EXPECT_OK("SIOCGIFCONF on AF_INET", ioctl(fd, SIOCGIFCONF, &c));
    check(c.ifc_len > 0 && c.ifc_len % (int)sizeof(struct ifreq) == 0, "a length of whole ifreqs");

    /* SIOCADDRT/SIOCDELRT: their errors (the host's routes stay as they are). */
    struct rtentry rt;
    memset(&rt, 0, sizeof rt);
    struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst, *mask = (struct sockaddr_in *)&rt.rt_genmask,
                       *gw = (struct sockaddr_in *)&rt.rt_gateway;
    dst->sin_family = mask->sin_family = AF_INET;
    dst->sin_addr.s_addr = htonl(0x0a630000);
    mask->sin_addr.s_addr = htonl(0xffff0000);
    char lo_name[] = "lo", none[] = "nosuch0";
    rt.rt_dev = lo_name;
    EXPECT_ERR(EFAULT, "SIOCADDRT with a bad pointer", ioctl(fd, SIOCADDRT, BAD_PTR));
    dst->sin_family = AF_UNIX;
    EXPECT_ERR(EAFNOSUPPORT, "SIOCADDRT to an AF_UNIX destination", ioctl(fd, SIOCADDRT, &rt));
    dst->sin_family = AF_INET;
    mask->sin_addr.s_addr = htonl(0xff00ff00);
    EXPECT_ERR(EINVAL, "SIOCADDRT with a mask with holes", ioctl(fd, SIOCADDRT, &rt));
    mask->sin_addr.s_addr = htonl(0xff000000);
    EXPECT_ERR(EINVAL, "SIOCADDRT 10.99.0.0/8 (host bits set)", ioctl(fd, SIOCADDRT, &rt));
    mask->sin_addr.s_addr = htonl(0xffff0000);
    rt.rt_dev = none;
    EXPECT_ERR(ENODEV, "SIOCADDRT via nosuch0", ioctl(fd, SIOCADDRT, &rt));
    rt.rt_dev = lo_name;
    rt.rt_flags = RTF_UP | RTF_GATEWAY;
    EXPECT_ERR(EINVAL, "SIOCADDRT RTF_GATEWAY without a gateway", ioctl(fd, SIOCADDRT, &rt));
    rt.rt_dev = NULL;
    gw->sin_family = AF_INET;
    gw->sin_addr.s_addr = htonl(0xcb007101);
    EXPECT_ERR(ENETUNREACH, "SIOCADDRT via a gateway no link reaches", ioctl(fd, SIOCADDRT, &rt));
    rt.rt_flags = RTF_UP;
    EXPECT_ERR(ESRCH, "SIOCDELRT of a route that does not exist", ioctl(fd, SIOCDELRT, &rt));
    int u = socket(AF_UNIX, SOCK_DGRAM, 0);
    EXPECT_ERR(ENOTTY, "SIOCADDRT on an AF_UNIX socket", ioctl(u, SIOCADDRT, &rt));
    close(u);
    close(fd);
    int fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
    check(fd6 >= 0, "AF_INET6 socket");
    strcpy(r.ifr_name, "lo");
    EXPECT_ERR(ENOTTY, "SIOCGIFADDR on AF_INET6", ioctl(fd6, SIOCGIFADDR, &r));
    EXPECT_OK("SIOCGIFMTU on AF_INET6", ioctl(fd6, SIOCGIFMTU, &r));
    close(fd6);
}

static int unprivileged(void *arg)
{
    int fd = *(int *)arg;
    t_failed = 0;
    if (setgid(1000) != 0 || setuid(1000) != 0)
        return 1;
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strcpy(r.ifr_name, "lo");
    EXPECT_OK("user 1000: SIOCGIFFLAGS lo", ioctl(fd, SIOCGIFFLAGS, &r));
    EXPECT_ERR(EPERM, "user 1000: SIOCSIFFLAGS lo", ioctl(fd, SIOCSIFFLAGS, &r));
    EXPECT_ERR(EPERM, "user 1000: SIOCSIFMTU lo", ioctl(fd, SIOCSIFMTU, &r));
    strcpy(r.ifr_name, "nosuch0");
    EXPECT_ERR(EPERM, "user 1000: SIOCSIFFLAGS nosuch0 (EPERM first)", ioctl(fd, SIOCSIFFLAGS, &r));
    int in = socket(AF_INET, SOCK_DGRAM, 0);
    strcpy(r.ifr_name, "lo");
    EXPECT_OK("user 1000: SIOCGIFADDR lo", ioctl(in, SIOCGIFADDR, &r));
    EXPECT_ERR(EPERM, "user 1000: SIOCSIFADDR lo", ioctl(in, SIOCSIFADDR, &r));
    EXPECT_ERR(EPERM, "user 1000: SIOCSIFNETMASK lo", ioctl(in, SIOCSIFNETMASK, &r));
    struct rtentry rt;
    memset(&rt, 0, sizeof rt);
    EXPECT_ERR(EPERM, "user 1000: SIOCADDRT", ioctl(in, SIOCADDRT, &rt));
    EXPECT_ERR(EFAULT, "user 1000: SIOCADDRT with a bad pointer (EFAULT first)", ioctl(in, SIOCADDRT, BAD_PTR));
    return t_failed;
}

static void libc_view(void)
{
    struct ifaddrs *ifa;
    EXPECT_OK("getifaddrs", getifaddrs(&ifa));
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (strcmp(i->ifa_name, "lo") != 0 || !i->ifa_addr)
            continue;
        char a[64] = "", n[64] = "";
        int fam = i->ifa_addr->sa_family;
        if (fam == AF_INET) {
            inet_ntop(fam, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof a);
            inet_ntop(fam, &((struct sockaddr_in *)i->ifa_netmask)->sin_addr, n, sizeof n);
        } else if (fam == AF_INET6) {
            inet_ntop(fam, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, a, sizeof a);
            inet_ntop(fam, &((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr, n, sizeof n);
        }
        printf("getifaddrs lo: family %d flags %#x addr %s netmask %s data %s\n", fam, i->ifa_flags, a, n,
               i->ifa_data ? "yes" : "no");
    }
    freeifaddrs(ifa);

    struct if_nameindex *ni = if_nameindex();
    check(ni != NULL, "if_nameindex");
    int lo = 0;
    for (struct if_nameindex *p = ni; p && p->if_index; p++)
        if (strcmp(p->if_name, "lo") == 0)
            lo = p->if_index;
    check(lo == 1, "if_nameindex lists lo as 1");
    if_freenameindex(ni);
    check(if_nametoindex("lo") == 1, "if_nametoindex(lo)");
    check(if_nametoindex("nosuch0") == 0 && errno == ENODEV, "if_nametoindex(nosuch0): 0, ENODEV");
    char name[IF_NAMESIZE];
    check(if_indextoname(1, name) && strcmp(name, "lo") == 0, "if_indextoname(1)");
    check(if_indextoname(9999, name) == NULL && errno == ENXIO, "if_indextoname(9999): NULL, ENXIO");
}

/* Prints the first `lines` lines of a /proc/net file, and those naming lo. */
static void proc_file(const char *path, int lines, const char *lo_prefix, int strip_counters)
{
    FILE *f = fopen(path, "r");
    if (!check(f != NULL, "open %s", path))
        return;
    char line[512];
    int n = 0, lo = 0;
    while (fgets(line, sizeof line, f)) {
        if (n++ < lines) {
            printf("%s: [%s]\n", path, strtok(line, "\n"));
            continue;
        }
        if (lo_prefix && strncmp(line, lo_prefix, strlen(lo_prefix)) == 0) {
            lo++;
            if (strip_counters)
                line[strlen(lo_prefix)] = 0;
            printf("%s: lo [%s]\n", path, strtok(line, "\n"));
        }
    }
    fclose(f);
    if (lo_prefix)
        check(lo == 1, "%s lists lo once", path);
}

int main(void)
{
    t_init("ifconf");
    int u = socket(AF_UNIX, SOCK_DGRAM, 0);
    dev_ioctls(u, "AF_UNIX socket");
    int nl = socket(AF_NETLINK, SOCK_RAW, 0);
    dev_ioctls(nl, "AF_NETLINK socket");
    inet_ioctls();
    check(run_child(unprivileged, &u) == 0, "the unprivileged checks passed");
    libc_view();
    proc_file("/proc/net/dev", 2, "    lo:", 1);
    proc_file("/proc/net/if_inet6", 0, "00000000000000000000000000000001", 0);
    proc_file("/proc/net/route", 1, NULL, 0);
    proc_file("/proc/net/tcp", 1, NULL, 0);
    proc_file("/proc/net/udp", 1, NULL, 0);
    proc_file("/proc/net/tcp6", 1, NULL, 0);
    proc_file("/proc/net/udp6", 1, NULL, 0);
    return t_done();
}
