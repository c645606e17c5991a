/*
 * packet: AF_PACKET sockets on the loopback.  Who may open one (EPERM
 * without CAP_NET_RAW, ESOCKTNOSUPPORT for a stream), what
 * socketpair, connect, listen, shutdown and getpeername say; bind's
 * checks (length, family, ENODEV) and getsockname's sockaddr_ll before
 * and after; PACKET_ADD_MEMBERSHIP's errnos (DROP_MEMBERSHIP of what is not
 * there succeeds); the send
 * errors (no interface, a short address, too long); and frames through
 * lo: a whole frame from a SOCK_RAW socket and a payload from a
 * SOCK_DGRAM one, received by a SOCK_DGRAM socket of that EtherType
 * with the sockaddr_ll Linux fills in, FIONREAD, MSG_PEEK and MSG_TRUNC.
 *
 * Runs as root (CAP_NET_RAW).  The EtherType is 0x88b5 (IEEE's local
 * experimental one), which nothing else on the host's lo carries.
 */
#include "common.h"

#include <arpa/inet.h>
#include <netpacket/packet.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#define PROTO 0x88b5

static struct sockaddr_ll ll(int ifindex, int proto)
{
    struct sockaddr_ll a = {.sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = ifindex};
    return a;
}

static void show(const char *what, const struct sockaddr_ll *a, socklen_t len)
{
    printf("%s: len %u family %d protocol 0x%04x ifindex %d hatype %d pkttype %d halen %d addr %02x%02x%02x%02x%02x%02x\n",
           what, (unsigned)len, a->sll_family, ntohs(a->sll_protocol), a->sll_ifindex, a->sll_hatype, a->sll_pkttype,
           a->sll_halen, a->sll_addr[0], a->sll_addr[1], a->sll_addr[2], a->sll_addr[3], a->sll_addr[4],
           a->sll_addr[5]);
}

static void creation(void)
{
    EXPECT_ERR(ESOCKTNOSUPPORT, "SOCK_STREAM", socket(AF_PACKET, SOCK_STREAM, htons(ETH_P_ALL)));
    int sv[2];
    EXPECT_ERR(EOPNOTSUPP, "socketpair", socketpair(AF_PACKET, SOCK_DGRAM, 0, sv));
    pid_t pid = fork();
    if (pid == 0) {
        if (setuid(1000) != 0)
            _exit(2);
        int e = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)) < 0 ? errno : 0;
        int e2 = socket(AF_PACKET, SOCK_DGRAM, 0) < 0 ? errno : 0;
        int e3 = socketpair(AF_PACKET, SOCK_DGRAM, 0, sv) < 0 ? errno : 0;
        printf("user 1000: SOCK_RAW %s, SOCK_DGRAM %s, socketpair %s\n", errname(e), errname(e2), errname(e3));
        _exit(e == EPERM && e2 == EPERM ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "user 1000: EPERM without CAP_NET_RAW");
}

static void binding(void)
{
    int fd = socket(AF_PACKET, SOCK_DGRAM, htons(PROTO));
    check(fd >= 0, "socket(AF_PACKET, SOCK_DGRAM, 0x88b5)");
    int v;
    socklen_t vl = sizeof v;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl);
    check(v == SOCK_DGRAM, "SO_TYPE = %d", v);
    struct sockaddr_ll a;
    socklen_t al = sizeof a;
    memset(&a, 0xee, sizeof a);
    EXPECT_OK("getsockname unbound", getsockname(fd, (struct sockaddr *)&a, &al));
    show("unbound", &a, al);

    struct sockaddr_ll b = ll(1, 0);
    EXPECT_ERR(EINVAL, "bind with a short address", bind(fd, (struct sockaddr *)&b, sizeof b - 1));
    b.sll_family = AF_INET;
    EXPECT_ERR(EINVAL, "bind with family AF_INET", bind(fd, (struct sockaddr *)&b, sizeof b));
    b = ll(9999, 0);
    EXPECT_ERR(ENODEV, "bind to ifindex 9999", bind(fd, (struct sockaddr *)&b, sizeof b));
    b = ll(1, 0);
    EXPECT_OK("bind to lo, protocol 0 (kept)", bind(fd, (struct sockaddr *)&b, sizeof b));
    al = sizeof a;
    memset(&a, 0xee, sizeof a);
    EXPECT_OK("getsockname bound", getsockname(fd, (struct sockaddr *)&a, &al));
    show("bound", &a, al);

    EXPECT_ERR(EOPNOTSUPP, "connect", connect(fd, (struct sockaddr *)&b, sizeof b));
    EXPECT_ERR(EOPNOTSUPP, "listen", listen(fd, 1));
    EXPECT_ERR(EOPNOTSUPP, "shutdown", shutdown(fd, SHUT_RDWR));
    al = sizeof a;
    EXPECT_ERR(EOPNOTSUPP, "getpeername", getpeername(fd, (struct sockaddr *)&a, &al));
    close(fd);
}

static void membership(void)
{
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    struct packet_mreq m = {.mr_ifindex = 1, .mr_type = PACKET_MR_ALLMULTI};
    EXPECT_ERR(EINVAL, "ADD_MEMBERSHIP, optlen 15",
               setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m, sizeof m - 1));
    m.mr_ifindex = 9999;
    EXPECT_ERR(ENODEV, "ADD_MEMBERSHIP on ifindex 9999", setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m, sizeof m));
    m.mr_ifindex = 1;
    m.mr_alen = 7;
    EXPECT_ERR(EINVAL, "ADD_MEMBERSHIP, address length 7 on lo",
               setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m, sizeof m));
    m.mr_alen = 9;
    EXPECT_ERR(EINVAL, "ADD_MEMBERSHIP, address length 9 past optlen",
               setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m, sizeof m));
    m.mr_alen = 0;
    EXPECT_OK("ADD_MEMBERSHIP allmulti on lo", setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m, sizeof m));
    m.mr_type = PACKET_MR_PROMISC;
    /* Linux 4.x+ drops what is not there without an error. */
    EXPECT_OK("DROP_MEMBERSHIP promisc (never added)", setsockopt(fd, SOL_PACKET, PACKET_DROP_MEMBERSHIP, &m, sizeof m));
    m.mr_type = PACKET_MR_ALLMULTI;
    EXPECT_OK("DROP_MEMBERSHIP allmulti", setsockopt(fd, SOL_PACKET, PACKET_DROP_MEMBERSHIP, &m, sizeof m));
    EXPECT_OK("DROP_MEMBERSHIP allmulti again", setsockopt(fd, SOL_PACKET, PACKET_DROP_MEMBERSHIP, &m, sizeof m));
    int one = 1;
    EXPECT_ERR(ENOPROTOOPT, "setsockopt SOL_PACKET 999", setsockopt(fd, SOL_PACKET, 999, &one, sizeof one));
    socklen_t l = sizeof one;
    EXPECT_ERR(ENOPROTOOPT, "getsockopt SOL_PACKET 999", getsockopt(fd, SOL_PACKET, 999, &one, &l));
    close(fd);
}

static void traffic(void)
{
    int rx = socket(AF_PACKET, SOCK_DGRAM, htons(PROTO));
    struct sockaddr_ll b = ll(1, 0);
    EXPECT_OK("bind the receiver to lo", bind(rx, (struct sockaddr *)&b, sizeof b));
    int raw = socket(AF_PACKET, SOCK_RAW, 0);
    int dgram = socket(AF_PACKET, SOCK_DGRAM, 0);
    char frame[64] = {0};
    frame[12] = PROTO >> 8;
    frame[13] = PROTO & 0xff;
    memcpy(frame + 14, "kiln packet", 11);

    EXPECT_ERR(ENXIO, "send, unbound, no address", send(raw, frame, 25, 0));
    struct sockaddr_ll to = ll(9999, PROTO);
    EXPECT_ERR(ENXIO, "sendto ifindex 9999", sendto(raw, frame, 25, 0, (struct sockaddr *)&to, sizeof to));
    to = ll(1, PROTO);
    to.sll_halen = 6;
    EXPECT_ERR(EINVAL, "sendto with a 19-byte address", sendto(raw, frame, 25, 0, (struct sockaddr *)&to, 19));
    static char big[70000];
    EXPECT_ERR(EMSGSIZE, "sendto 70000 bytes", sendto(dgram, big, sizeof big, 0, (struct sockaddr *)&to, sizeof to));

    check(sendto(raw, frame, 25, 0, (struct sockaddr *)&to, sizeof to) == 25, "SOCK_RAW: sendto lo a 25-byte frame");
    struct pollfd p = {.fd = rx, .events = POLLIN};
    check(poll(&p, 1, 2000) == 1 && (p.revents & POLLIN), "the receiver is readable");
    int avail = -1;
    ioctl(rx, FIONREAD, &avail);
    check(avail == 11, "FIONREAD = %d (the payload)", avail);
    char buf[64];
    check(recv(rx, buf, sizeof buf, MSG_PEEK) == 11, "MSG_PEEK: 11 bytes");
    struct sockaddr_ll from;
    socklen_t fl = sizeof from;
    memset(&from, 0xee, sizeof from);
    ssize_t n = recvfrom(rx, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    check(n == 11 && memcmp(buf, "kiln packet", 11) == 0, "recvfrom: the payload, no header (%zd)", n);
    show("from", &from, fl);

    check(sendto(dgram, "second", 6, 0, (struct sockaddr *)&to, sizeof to) == 6, "SOCK_DGRAM: sendto lo 6 bytes");
    check(poll(&p, 1, 2000) == 1, "readable again");
    struct iovec iov = {.iov_base = buf, .iov_len = 4};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    n = recvmsg(rx, &mh, MSG_TRUNC);
    check(n == 6 && (mh.msg_flags & MSG_TRUNC) && memcmp(buf, "seco", 4) == 0,
          "recvmsg into 4 bytes with MSG_TRUNC: %zd, MSG_TRUNC set", n);
    EXPECT_ERR(EAGAIN, "nothing more", recv(rx, buf, sizeof buf, MSG_DONTWAIT));
    close(rx);
    close(raw);
    close(dgram);
}

int main(void)
{
    t_init("packet");
    creation();
    binding();
    membership();
    traffic();
    return t_done();
}
