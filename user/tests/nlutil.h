/*
 * Helpers of the netlink tests: building a NETLINK_ROUTE request,
 * sending it to the kernel, reading one datagram without waiting, and
 * the answer an NLMSG_ERROR carries.
 */
#ifndef KILN_TEST_NLUTIL_H
#define KILN_TEST_NLUTIL_H

#include "common.h"
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

static UNUSED int seq = 100;

static UNUSED int nl_open(void)
{
    return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
}

/* A request being built. */
struct req {
    char buf[1024];
    struct nlmsghdr *h;
};

static UNUSED struct nlmsghdr *req_init(struct req *r, int type, int flags, const void *fixed, int len)
{
    memset(r, 0, sizeof *r);
    r->h = (struct nlmsghdr *)r->buf;
    r->h->nlmsg_len = NLMSG_LENGTH(len);
    r->h->nlmsg_type = type;
    r->h->nlmsg_flags = flags;
    r->h->nlmsg_seq = ++seq;
    if (len)
        memcpy(NLMSG_DATA(r->h), fixed, len);
    return r->h;
}

static UNUSED void req_attr(struct req *r, int type, const void *data, int len)
{
    struct rtattr *a = (struct rtattr *)(r->buf + NLMSG_ALIGN(r->h->nlmsg_len));
    a->rta_type = type;
    a->rta_len = RTA_LENGTH(len);
    memcpy(RTA_DATA(a), data, len);
    r->h->nlmsg_len = NLMSG_ALIGN(r->h->nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static UNUSED long req_send(int fd, struct req *r)
{
    struct sockaddr_nl k = { .nl_family = AF_NETLINK };
    return sendto(fd, r->buf, r->h->nlmsg_len, 0, (struct sockaddr *)&k, sizeof k);
}

static UNUSED char rbuf[65536];

/* One datagram, without waiting; its length or -errno. */
static UNUSED long recv_one(int fd)
{
    long n = recv(fd, rbuf, sizeof rbuf, MSG_DONTWAIT);
    return n < 0 ? -errno : n;
}

/* The answer of an NLMSG_ERROR in rbuf (1 if it is none). */
static UNUSED int error_of(long n)
{
    struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
    if (n < (long)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR)
        return 1;
    return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

/* Sends the request and reports the NLMSG_ERROR that answers it. */
static UNUSED void expect_nlerr(int fd, struct req *r, int want, const char *what)
{
    if (req_send(fd, r) < 0) {
        check(0, "%s: send %s", what, errname(errno));
        return;
    }
    long n = recv_one(fd);
    int e = error_of(n);
    struct nlmsghdr *h = (struct nlmsghdr *)rbuf;
    if (e == 1) {
        check(0, "%s: no NLMSG_ERROR (%ld bytes, type %d)", what, n, n > 0 ? h->nlmsg_type : -1);
        return;
    }
    check(e == -want && h->nlmsg_seq == r->h->nlmsg_seq, "%s: NLMSG_ERROR %s", what, e ? errname(-e) : "0");
    if (e != -want)
        printf("  got %s\n", e ? errname(-e) : "0");
    /* Nothing more is queued. */
    long more = recv_one(fd);
    check(more == -EAGAIN, "%s: nothing after the error", what);
}

#endif
