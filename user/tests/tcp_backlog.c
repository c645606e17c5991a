/*
 * tcp_backlog: what listen(2)'s backlog does on the loopback, as far as
 * Linux makes it deterministic.
 *
 *  - 256 clients connect to a listener with backlog 256 before it
 *    accepts any: all connect, /proc/net/tcp shows the listener's accept
 *    queue (rx_queue 256) and the 256 queued connections, and accept
 *    returns them in the order they connected;
 *  - backlog 1: of four non-blocking clients two get in (the queue holds
 *    backlog + 1); the SYNs of the other two are dropped, not reset, so
 *    they are still connecting; once the queue is drained their
 *    retransmitted SYNs get in too;
 *  - families: a 0.0.0.0 listener refuses an IPv6 client, an IPV6_V6ONLY
 *    one an IPv4 client, both with a reset (ECONNREFUSED), and a 0.0.0.0
 *    and a v6-only [::] listener share a port, each taking its family.
 */
#include "common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define MANY 256

static socklen_t addr_of(int family, struct sockaddr_storage *ss, int port, int any)
{
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
        return sizeof *a;
    }
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = any ? in6addr_any : in6addr_loopback;
    return sizeof *a;
}

static int port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int peer_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* A listener on the wildcard of `family` at `port` (0: any). */
static int listener(int family, int v6only, int port, int backlog)
{
    int l = socket(family, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (family == AF_INET6)
        setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    struct sockaddr_storage ss;
    socklen_t len = addr_of(family, &ss, port, 1);
    if (bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, backlog) < 0) {
        printf("FAIL: listener: %s\n", errname(errno));
        exit(1);
    }
    return l;
}

static int dial(int family, int port, int nonblock)
{
    int c = socket(family, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
    struct sockaddr_storage ss;
    socklen_t len = addr_of(family, &ss, port, 0);
    if (connect(c, (struct sockaddr *)&ss, len) < 0 && !(nonblock && errno == EINPROGRESS)) {
        int e = errno;
        close(c);
        errno = e;
        return -1;
    }
    return c;
}

/* The listener's rx_queue and the ESTABLISHED connections on its port
 * in /proc/net/tcp (IPv4 only: the test's listeners there are AF_INET). */
static void proc_figures(int port, long *rxq, int *established)
{
    *rxq = -1;
    *established = 0;
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned lport, rport, st;
        unsigned long txq, rq;
        char la[64], ra[64];
        if (sscanf(line, " %*d: %63[0-9A-F]:%X %63[0-9A-F]:%X %X %lX:%lX", la, &lport, ra, &rport, &st, &txq,
                   &rq) != 7)
            continue;
        if ((int)lport != port)
            continue;
        if (st == 0x0A)
            *rxq = (long)rq;
        else if (st == 0x01)
            (*established)++;
    }
    fclose(f);
}

static void many_before_accept(void)
{
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_NOFILE, &rl);
    int l = listener(AF_INET, 0, 0, MANY);
    int port = port_of(l);
    static int c[MANY], s[MANY], cport[MANY];
    int connected = 0;
    for (int i = 0; i < MANY; i++) {
        c[i] = dial(AF_INET, port, 0);
        connected += c[i] >= 0;
        cport[i] = c[i] >= 0 ? port_of(c[i]) : -1;
    }
    check(connected == MANY, "%d clients connected before any accept", MANY);
    long rxq;
    int est;
    proc_figures(port, &rxq, &est);
    /* The server ends and the client ends, both on the loopback. */
    check(rxq == MANY, "/proc/net/tcp: the listener's accept queue holds %d (%ld)", MANY, rxq);
    check(est == MANY, "/proc/net/tcp: %d queued connections on its port (%d)", MANY, est);
    int accepted = 0, in_order = 0;
    for (int i = 0; i < MANY; i++) {
        s[i] = accept(l, NULL, NULL);
        accepted += s[i] >= 0;
        in_order += s[i] >= 0 && peer_port(s[i]) == cport[i];
    }
    check(accepted == MANY, "all %d accepted", MANY);
    check(in_order == MANY, "accepted in the order they connected (%d in place)", in_order);
    int fl = fcntl(l, F_GETFL);
    fcntl(l, F_SETFL, fl | O_NONBLOCK);
    int extra = accept(l, NULL, NULL);
    check(extra < 0 && errno == EAGAIN, "then the queue is empty: %s", errname(errno));
    proc_figures(port, &rxq, &est);
    check(rxq == 0, "/proc/net/tcp: accept queue 0 after the accepts (%ld)", rxq);
    for (int i = 0; i < MANY; i++) {
        close(s[i]);
        close(c[i]);
    }
    close(l);
}

/* Whether a non-blocking connect finished within `ms`. */
static int connected_within(int c, int ms)
{
    struct pollfd p = {c, POLLOUT, 0};
    if (poll(&p, 1, ms) != 1)
        return 0;
    int err = -1;
    socklen_t len = sizeof err;
    getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0;
}

static void backlog_one(void)
{
    int l = listener(AF_INET, 0, 0, 1);
    int port = port_of(l);
    int c[4];
    for (int i = 0; i < 4; i++)
        c[i] = dial(AF_INET, port, 1);
    int in = 0;
    for (int i = 0; i < 4; i++)
        in += connected_within(c[i], 300);
    check(in == 2, "backlog 1: %d of 4 clients got in (backlog + 1)", in);
    long rxq;
    int est;
    proc_figures(port, &rxq, &est);
    check(rxq == 2, "/proc/net/tcp: the listener's accept queue holds 2 (%ld)", rxq);
    int fl = fcntl(l, F_GETFL);
    fcntl(l, F_SETFL, fl | O_NONBLOCK);
    int s[4], n = 0;
    while (n < 4 && (s[n] = accept(l, NULL, NULL)) >= 0)
        n++;
    check(n == 2 && errno == EAGAIN, "2 accepted, then %s (%d)", errname(errno), n);
    /* The others' SYNs were dropped, not reset: still connecting. */
    int err = -1;
    socklen_t len = sizeof err;
    getsockopt(c[3], SOL_SOCKET, SO_ERROR, &err, &len);
    check(err == 0, "the last client was not refused (SO_ERROR %s)", errname(err));
    int late = 0;
    for (int i = 2; i < 4; i++)
        late += connected_within(c[i], 5000);
    check(late == 2, "after the accepts the retransmitted SYNs got in (%d)", late);
    struct pollfd p = {l, POLLIN, 0};
    int m = 0;
    while (m < 2 && poll(&p, 1, 2000) == 1 && (s[n + m] = accept(l, NULL, NULL)) >= 0)
        m++;
    check(m == 2, "and were accepted (%d)", m);
    for (int i = 0; i < n + m; i++)
        close(s[i]);
    for (int i = 0; i < 4; i++)
        close(c[i]);
    close(l);
}

static void families(void)
{
    int l4 = listener(AF_INET, 0, 0, 4);
    int port = port_of(l4);
    int c = dial(AF_INET6, port, 0);
    check(c < 0 && errno == ECONNREFUSED, "0.0.0.0 listener, IPv6 client: %s", errname(c < 0 ? errno : 0));
    if (c >= 0)
        close(c);
    int l6 = listener(AF_INET6, 1, port, 4);
    int c4 = dial(AF_INET, port, 0);
    int c6 = dial(AF_INET6, port, 0);
    check(c4 >= 0 && c6 >= 0, "with a v6-only [::] listener on the same port both connect");
    int fl = fcntl(l4, F_GETFL);
    fcntl(l4, F_SETFL, fl | O_NONBLOCK);
    fl = fcntl(l6, F_GETFL);
    fcntl(l6, F_SETFL, fl | O_NONBLOCK);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int a4 = accept(l4, (struct sockaddr *)&ss, &len);
    check(a4 >= 0 && ss.ss_family == AF_INET, "the IPv4 client went to the 0.0.0.0 listener");
    len = sizeof ss;
    int a6 = accept(l6, (struct sockaddr *)&ss, &len);
    check(a6 >= 0 && ss.ss_family == AF_INET6, "the IPv6 client went to the [::] listener");
    check(accept(l4, NULL, NULL) < 0 && accept(l6, NULL, NULL) < 0, "nothing else queued");
    close(a4);
    close(a6);
    close(c4);
    close(c6);
    close(l4);
    /* The v6-only listener alone: IPv4 clients are refused. */
    c = dial(AF_INET, port, 0);
    check(c < 0 && errno == ECONNREFUSED, "v6-only [::] listener, IPv4 client: %s", errname(c < 0 ? errno : 0));
    if (c >= 0)
        close(c);
    close(l6);
}

int main(void)
{
    t_init("tcp_backlog");
    many_before_accept();
    backlog_one();
    families();
    return t_done();
}
