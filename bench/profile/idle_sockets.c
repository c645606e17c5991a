/* What idle TCP connections cost every poll of Kiln's stack: the time of
 * a UDP ping-pong on the loopback (each send polls the stack) alone, then
 * with N idle loopback TCP connections open (2N sockets). Under icount the
 * microseconds are thousands of instructions:
 *   cc -static -O2 -o /tmp/x/idle_sockets bench/profile/idle_sockets.c
 *   make run SMP=1 QEMU_EXTRA="-icount shift=0,align=off,sleep=off" \
 *       EXTRA=/tmp/x CMD="/idle_sockets 64"
 * (docs/networking.md, Many connections). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Microseconds per round trip of one byte between a and b. */
static double pingpong(int a, int b, int n) {
    char c = 1;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        send(a, &c, 1, 0);
        recv(b, &c, 1, 0);
        send(b, &c, 1, 0);
        recv(a, &c, 1, 0);
    }
    return (now() - t0) / n * 1e6;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 64, iters = 2000;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)}, aa, bb, ls;
    socklen_t l = sizeof sa;
    int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
    bind(a, (void *)&sa, l);
    bind(b, (void *)&sa, l);
    getsockname(a, (void *)&aa, &l);
    l = sizeof sa;
    getsockname(b, (void *)&bb, &l);
    connect(a, (void *)&bb, sizeof bb);
    connect(b, (void *)&aa, sizeof aa);
    pingpong(a, b, 200);
    double alone = pingpong(a, b, iters);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    ls = sa;
    bind(lfd, (void *)&ls, sizeof ls);
    listen(lfd, 4096);
    l = sizeof ls;
    getsockname(lfd, (void *)&ls, &l);
    for (int i = 0; i < n; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, (void *)&ls, sizeof ls) || accept(lfd, 0, 0) < 0) {
            perror("connect/accept");
            return 1;
        }
    }
    double with = pingpong(a, b, iters);
    printf("udp pingpong: %.1f us alone, %.1f us with %d idle tcp connections (%d sockets)\n", alone, with, n,
           2 * n);
    return 0;
}
