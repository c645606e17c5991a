/*
 * inet_epoll: TCP sockets watched by epoll, poll and select, as AF_UNIX
 * ones are.  Level-triggered EPOLLIN repeats until the data is read;
 * edge-triggered reports once per arrival; EPOLLONESHOT reports once
 * until EPOLL_CTL_MOD re-arms it; a listener is readable while a
 * connection waits; a non-blocking connect completes as EPOLLOUT; the
 * peer's SHUT_WR is EPOLLIN|EPOLLRDHUP and both directions shut is
 * EPOLLHUP; a waiter blocked in epoll_wait is woken by another process's
 * write; a socket closed while watched leaves the epoll set; select and
 * poll agree with epoll.  IPv4 and IPv6.
 */
#include "common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>

/* Prints what one epoll_wait reports; checks it reported `want` entries. */
static void show(const char *what, int ep, int timeout, int want)
{
    struct epoll_event ev[8];
    int n = epoll_wait(ep, ev, 8, timeout);
    check_quiet(n == want, "%s: %d entries, want %d", what, n, want);
    printf("%s: %d", what, n);
    for (int i = 0; i < n; i++) {
        unsigned e = ev[i].events;
        printf(" [%u]%s%s%s%s%s", (unsigned)ev[i].data.u32, e & EPOLLIN ? " IN" : "", e & EPOLLOUT ? " OUT" : "",
               e & EPOLLRDHUP ? " RDHUP" : "", e & EPOLLHUP ? " HUP" : "", e & EPOLLERR ? " ERR" : "");
    }
    printf("\n");
}

static int add(int ep, int fd, unsigned events, unsigned tag)
{
    struct epoll_event ev = {.events = events, .data.u32 = tag};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int family_g;

static socklen_t make_addr(struct sockaddr_storage *ss, int port)
{
    memset(ss, 0, sizeof *ss);
    if (family_g == AF_INET) {
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

static int listener(int *port)
{
    int l = socket(family_g, SOCK_STREAM, 0);
    struct sockaddr_storage ss;
    socklen_t len = make_addr(&ss, 0);
    if (bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 8) < 0) {
        printf("FAIL: listener: %s\n", errname(errno));
        exit(1);
    }
    getsockname(l, (struct sockaddr *)&ss, &len);
    *port = ntohs(family_g == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return l;
}

static int dial(int port, int flags)
{
    int c = socket(family_g, SOCK_STREAM | flags, 0);
    struct sockaddr_storage ss;
    socklen_t len = make_addr(&ss, port);
    int r = connect(c, (struct sockaddr *)&ss, len);
    if (r < 0 && errno != EINPROGRESS) {
        printf("FAIL: connect: %s\n", errname(errno));
        exit(1);
    }
    return c;
}

static void run(int family)
{
    family_g = family;
    printf("== %s\n", family == AF_INET ? "ipv4" : "ipv6");
    int port;
    int l = listener(&port);
    int ep = epoll_create1(0);
    add(ep, l, EPOLLIN, 1);
    show("listener, nobody waiting", ep, 0, 0);
    int c = dial(port, SOCK_NONBLOCK);
    show("listener, a connection waiting", ep, 1000, 1);
    int s = accept(l, NULL, NULL);
    show("listener after accept", ep, 0, 0);
    epoll_ctl(ep, EPOLL_CTL_DEL, l, NULL);

    /* The non-blocking connect has completed: writable. */
    add(ep, c, EPOLLOUT, 2);
    show("client writable", ep, 1000, 1);
    epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);

    /* Level-triggered. */
    add(ep, s, EPOLLIN | EPOLLRDHUP, 3);
    show("LT nothing yet", ep, 0, 0);
    write(c, "ab", 2);
    show("LT data", ep, 1000, 1);
    show("LT data again", ep, 0, 1);
    char buf[64];
    read(s, buf, sizeof buf);
    show("LT after read", ep, 0, 0);

    /* Edge-triggered. */
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u32 = 4};
    epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
    write(c, "cd", 2);
    show("ET data", ep, 1000, 1);
    show("ET no new data", ep, 0, 0);
    write(c, "ef", 2);
    show("ET more data", ep, 1000, 1);
    read(s, buf, sizeof buf);
    show("ET after read", ep, 0, 0);

    /* One-shot. */
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u32 = 5;
    epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
    write(c, "g", 1);
    show("ONESHOT data", ep, 1000, 1);
    write(c, "h", 1);
    show("ONESHOT disarmed", ep, 0, 0);
    epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
    show("ONESHOT re-armed", ep, 1000, 1);
    read(s, buf, sizeof buf);

    /* A blocked waiter woken by another process's write. */
    ev.events = EPOLLIN;
    ev.data.u32 = 6;
    epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
    pid_t pid = fork();
    if (pid == 0) {
        usleep(100000);
        write(c, "late", 4);
        _exit(0);
    }
    show("woken by a write", ep, 5000, 1);
    waitpid(pid, NULL, 0);
    read(s, buf, sizeof buf);

    /* poll and select agree. */
    write(c, "x", 1);
    usleep(10000);
    struct pollfd p[2] = {{.fd = s, .events = POLLIN | POLLOUT}, {.fd = c, .events = POLLIN | POLLOUT}};
    int pn = poll(p, 2, 1000);
    printf("poll %d: server 0x%x client 0x%x\n", pn, p[0].revents, p[1].revents);
    fd_set r, w;
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(s, &r);
    FD_SET(c, &r);
    FD_SET(s, &w);
    int sn = select((s > c ? s : c) + 1, &r, &w, NULL, &(struct timeval){1, 0});
    printf("select %d: server r%d w%d client r%d\n", sn, FD_ISSET(s, &r), FD_ISSET(s, &w), FD_ISSET(c, &r));
    read(s, buf, sizeof buf);

    /* Shutdowns. */
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = 7;
    epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
    shutdown(c, SHUT_WR);
    show("peer SHUT_WR", ep, 1000, 1);
    shutdown(s, SHUT_WR);
    show("both directions shut", ep, 1000, 1);

    /* A watched socket closed leaves the set. */
    int c2 = dial(port, 0);
    int s2 = accept(l, NULL, NULL);
    epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
    add(ep, s2, EPOLLIN, 8);
    close(s2);
    write(c2, "zz", 2);
    show("closed socket", ep, 100, 0);
    close(c2);
    close(c);
    close(s);
    close(l);
    close(ep);
}

int main(void)
{
    t_init("inet_epoll");
    run(AF_INET);
    run(AF_INET6);
    return t_done();
}
