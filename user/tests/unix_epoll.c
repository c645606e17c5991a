/*
 * unix_epoll: AF_UNIX sockets watched by epoll.  A stream pair level- and
 * edge-triggered (EPOLLIN on data, nothing more in edge mode until new
 * data, EPOLLRDHUP at the peer's SHUT_WR, EPOLLHUP when both directions
 * are shut or the peer is gone), a waiter blocked in epoll_wait woken by
 * another process's write and by the peer's shutdown, a listener (EPOLLIN
 * for a waiting connection, gone after accept), a connected datagram
 * socket losing EPOLLOUT as its peer's queue fills and regaining it
 * (edge-triggered, waking a blocked waiter) when the peer drains it, seqpacket's EPOLLRDHUP, and a socket dropped from the epoll
 * when its last descriptor closes.
 */
#include "common.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

/* The events one epoll_wait(timeout ms) reports, as "IN|OUT" (or "none"),
 * with the tag of the entry, and how many entries came. */
static void show(const char *what, int ep, int timeout)
{
    struct epoll_event ev[8];
    int n = epoll_wait(ep, ev, 8, timeout);
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

static void stream_pair(void)
{
    int sv[2];
    char buf[64];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    check(add(ep, sv[0], EPOLLIN | EPOLLOUT | EPOLLRDHUP, 1) == 0, "add a stream socket");
    show("idle pair", ep, 0);
    write(sv[1], "ab", 2);
    show("with data", ep, 0);
    read(sv[0], buf, sizeof buf);
    show("drained", ep, 0);

    /* Edge-triggered: one report per arrival. */
    struct epoll_event mod = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u32 = 2};
    check(epoll_ctl(ep, EPOLL_CTL_MOD, sv[0], &mod) == 0, "mod to IN|RDHUP|ET");
    write(sv[1], "c", 1);
    show("edge, first data", ep, 0);
    show("edge, again without new data", ep, 0);
    write(sv[1], "d", 1);
    show("edge, more data", ep, 0);
    read(sv[0], buf, sizeof buf);

    /* A waiter blocked in epoll_wait, woken from another process. */
    pid_t pid = fork();
    if (pid == 0) {
        sleep_ms(30);
        write(sv[1], "e", 1);
        _exit(0);
    }
    show("blocked wait, peer writes", ep, 5000);
    wait_for(pid, NULL, 0);
    read(sv[0], buf, sizeof buf);

    pid = fork();
    if (pid == 0) {
        sleep_ms(30);
        shutdown(sv[1], SHUT_WR);
        _exit(0);
    }
    show("blocked wait, peer's SHUT_WR", ep, 5000);
    wait_for(pid, NULL, 0);

    /* Level-triggered again: the shutdown stays reported. */
    mod.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    mod.data.u32 = 3;
    epoll_ctl(ep, EPOLL_CTL_MOD, sv[0], &mod);
    show("after peer's SHUT_WR", ep, 0);
    shutdown(sv[0], SHUT_WR);
    show("both directions shut", ep, 0);
    close(sv[1]);
    show("peer closed", ep, 0);
    close(sv[0]);
    show("socket closed (entry gone)", ep, 0);
    close(ep);

    /* RDHUP only when asked for; HUP always. */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    ep = epoll_create1(0);
    add(ep, sv[0], EPOLLIN, 4);
    shutdown(sv[1], SHUT_WR);
    show("SHUT_WR, RDHUP not asked", ep, 0);
    close(sv[1]);
    show("peer closed, IN only asked", ep, 0);
    close(sv[0]);
    close(ep);
}

static void listener(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0kiln-unix-epoll", 16);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 16);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    bind(l, (struct sockaddr *)&a, alen);
    listen(l, 4);
    int ep = epoll_create1(0);
    check(add(ep, l, EPOLLIN | EPOLLOUT | EPOLLRDHUP, 5) == 0, "add a listener");
    show("idle listener", ep, 0);
    pid_t pid = fork();
    if (pid == 0) {
        sleep_ms(30);
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        connect(c, (struct sockaddr *)&a, alen);
        sleep_ms(200);
        _exit(0);
    }
    show("blocked wait, a client connects", ep, 5000);
    int s = accept(l, NULL, NULL);
    check(s >= 0, "accept");
    show("after accept", ep, 0);
    wait_for(pid, NULL, 0);
    check(add(ep, s, EPOLLIN | EPOLLRDHUP, 6) == 0, "add the accepted socket");
    show("client exited", ep, 0);
    close(s);
    close(l);
    close(ep);
}

static void datagram(void)
{
    int sv[2];
    static char buf[4096];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    int ep = epoll_create1(0);
    add(ep, sv[0], EPOLLOUT, 7);
    add(ep, sv[1], EPOLLIN, 8);
    show("datagram pair idle", ep, 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    int sent = 0;
    while (send(sv[0], buf, 64, 0) > 0)
        sent++;
    printf("datagrams sent until full > 0: %d\n", sent > 0);
    show("peer's queue full", ep, 0);
    struct epoll_event mod = {.events = EPOLLOUT | EPOLLET, .data.u32 = 9};
    epoll_ctl(ep, EPOLL_CTL_MOD, sv[0], &mod);
    epoll_ctl(ep, EPOLL_CTL_DEL, sv[1], NULL);
    pid_t pid = fork();
    if (pid == 0) {
        sleep_ms(30);
        while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0)
            ;
        _exit(0);
    }
    show("blocked wait, peer drains its queue", ep, 5000);
    wait_for(pid, NULL, 0);
    close(sv[0]);
    close(sv[1]);
    close(ep);

    /* seqpacket reports the peer's shutdown as a stream does. */
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
    ep = epoll_create1(0);
    add(ep, sv[0], EPOLLIN | EPOLLRDHUP, 10);
    send(sv[1], "r", 1, 0);
    show("seqpacket record", ep, 0);
    recv(sv[0], buf, sizeof buf, 0);
    shutdown(sv[1], SHUT_WR);
    show("seqpacket peer's SHUT_WR", ep, 0);
    close(sv[0]);
    close(sv[1]);
    close(ep);
}

int main(void)
{
    t_init("unix_epoll");
    stream_pair();
    listener();
    datagram();
    return t_done();
}
