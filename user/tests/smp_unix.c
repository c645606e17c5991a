/*
 * smp_unix: AF_UNIX sockets between CPUs.
 *
 *   - Streaming: two processes pinned to different CPUs send each other
 *     4 MiB at once through a stream socketpair (a reader and a writer
 *     thread on each side), in writes and reads of varying sizes; every
 *     byte is checked against its position and each side's checksum
 *     against the other's.
 *   - Many clients: four client processes on different CPUs make 50
 *     connections each to one listening socket (backlog 4, so connects
 *     wait for room) served by two accepting threads on different CPUs;
 *     every request gets its own answer, no connection is lost.
 *   - Descriptors in flight: two threads of one process pass 400 pipe
 *     read ends and socket ends, each carrying a token, to two receiving
 *     threads of another process on other CPUs, while a third thread
 *     makes socket cycles for the collector; every token arrives once,
 *     the receiver ends with the descriptors it started with, and the
 *     cycles are collected.
 */
#include "smp.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <dirent.h>

#define STREAM_BYTES (4 << 20)
#define CLIENTS 4
#define CONNECTIONS 50
#define ACCEPTORS 2
#define SENDERS 2
#define RECEIVERS 2
#define PASSES 200 /* per sender */
#define CYCLES 100

/* The byte at position i of side s's stream. */
static unsigned char pattern(int side, long i)
{
    return (unsigned char)((i * 7 + (i >> 9) + side * 101) & 0xff);
}

/* A small deterministic generator for chunk sizes. */
static uint32_t next_size(uint32_t *state, uint32_t max)
{
    *state = *state * 1103515245u + 12345u;
    return 1 + (*state >> 8) % max;
}

struct stream_side {
    int fd, side;
    int pinned;
    uint64_t sent_sum, got_sum;
    long got, bad;
};

static void *stream_writer(void *arg)
{
    struct stream_side *s = arg;
    unsigned char *buf = malloc(70000);
    uint32_t st = 1 + (uint32_t)s->side;
    if (!buf)
        return NULL;
    long at = 0;
    uint64_t sum = 0;
    while (at < STREAM_BYTES) {
        long n = next_size(&st, 70000);
        if (n > STREAM_BYTES - at)
            n = STREAM_BYTES - at;
        for (long i = 0; i < n; i++) {
            buf[i] = pattern(s->side, at + i);
            sum = sum * 31 + buf[i];
        }
        long done = 0;
        while (done < n) {
            ssize_t w = write(s->fd, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                free(buf);
                return NULL;
            }
            done += w;
        }
        at += n;
    }
    s->sent_sum = sum;
    free(buf);
    return NULL;
}

static void stream_read(struct stream_side *s)
{
    unsigned char *buf = malloc(70000);
    uint32_t st = 77 + (uint32_t)s->side;
    if (!buf)
        return;
    uint64_t sum = 0;
    int from = 1 - s->side;
    while (s->got < STREAM_BYTES) {
        ssize_t r = read(s->fd, buf, next_size(&st, 70000));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != pattern(from, s->got + i))
                s->bad++;
            sum = sum * 31 + buf[i];
        }
        s->got += r;
    }
    s->got_sum = sum;
    free(buf);
}

/* One side: a writer thread, and reading here. */
static void stream_side_run(struct stream_side *s, int cpu)
{
    s->pinned = smp_pin(smp_cpu_for(cpu));
    pthread_t w;
    if (pthread_create(&w, NULL, stream_writer, s) != 0)
        return;
    stream_read(s);
    pthread_join(w, NULL);
}

static void streaming(void)
{
    int sv[2];
    if (!check(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "stream: socketpair"))
        return;
    int sums[2];
    if (!check(pipe(sums) == 0, "stream: a pipe for the child's sums"))
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        struct stream_side s = {sv[1], 1, 0, 0, 0, 0, 0};
        stream_side_run(&s, 1);
        uint64_t out[4] = {s.sent_sum, s.got_sum, (uint64_t)s.got, (uint64_t)s.bad};
        write(sums[1], out, sizeof out);
        _exit(s.pinned ? 0 : 2);
    }
    close(sv[1]);
    struct stream_side s = {sv[0], 0, 0, 0, 0, 0, 0};
    stream_side_run(&s, 0);
    uint64_t theirs[4] = {0};
    int ok_read = read(sums[0], theirs, sizeof theirs) == (ssize_t)sizeof theirs;
    int st = 0;
    check(pid > 0 && wait_for(pid, &st, 0) == pid && WIFEXITED(st), "stream: the other side exited");
    {
        int ok_ = s.pinned && WEXITSTATUS(st) == 0;
        check(ok_, "stream: each side runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(s.got == STREAM_BYTES && ok_read && theirs[2] == STREAM_BYTES, "stream: 4 MiB each way");
    check(s.bad == 0 && theirs[3] == 0, "stream: every byte where it belongs");
    check(ok_read && s.got_sum == theirs[0] && theirs[1] == s.sent_sum, "stream: checksums agree both ways");
    close(sv[0]);
    close(sums[0]);
    close(sums[1]);
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(a->sun_path + 1, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

struct request {
    int client, seq;
    unsigned char data[120];
};

struct acceptor {
    int listener, index;
    int pinned;
    long served, bad;
};

static int read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    return 1;
}

/* Reads n bytes, or what came before EOF or an error (*e: its errno). */
static long read_all(int fd, void *buf, size_t n, int *e)
{
    size_t got = 0;
    *e = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            *e = errno;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return (long)got;
}

/* A client's first problem: which connection, what failed, how. */
struct client_why {
    char text[100];
    int problems;
};

static int client_problem(struct client_why *w, int seq, const char *what, long n, int e)
{
    if (w->problems++ == 0)
        snprintf(w->text, sizeof w->text, "connection %d: %s gave %ld, %s", seq, what, n, e ? errname(e) : "no errno");
    return 1;
}

static void *acceptor(void *arg)
{
    struct acceptor *a = arg;
    a->pinned = smp_pin(smp_cpu_for(a->index));
    for (int n = 0; n < CLIENTS * CONNECTIONS / ACCEPTORS; n++) {
        int c = accept(a->listener, NULL, NULL);
        if (c < 0) {
            a->bad++;
            continue;
        }
        struct request r;
        if (!read_full(c, &r, sizeof r)) {
            a->bad++;
            close(c);
            continue;
        }
        for (size_t i = 0; i < sizeof r.data; i++)
            r.data[i] = (unsigned char)(r.data[i] + 1);
        if (write(c, &r, sizeof r) != (ssize_t)sizeof r)
            a->bad++;
        close(c);
        a->served++;
    }
    return NULL;
}

static void many_clients(void)
{
    struct sockaddr_un addr;
    socklen_t len = abstract_addr(&addr, "kiln-smp-unix");
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    if (!check(l >= 0 && bind(l, (struct sockaddr *)&addr, len) == 0 && listen(l, 4) == 0, "clients: a listener"))
        return;
    /* Each client's first problem, for the failure message. */
    struct client_why *why = mmap(NULL, CLIENTS * sizeof *why, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(why != MAP_FAILED, "clients: shared memory for their reports"))
        return;
    memset(why, 0, CLIENTS * sizeof *why);
    pid_t pids[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) {
        fflush(stdout);
        pids[c] = fork();
        if (pids[c] == 0) {
            close(l);
            int pinned = smp_pin(smp_cpu_for(c + 1));
            int bad = 0;
            for (int seq = 0; seq < CONNECTIONS; seq++) {
                int s = socket(AF_UNIX, SOCK_STREAM, 0);
                if (connect(s, (struct sockaddr *)&addr, len) != 0) {
                    bad += client_problem(&why[c], seq, "connect", -1, errno);
                    close(s);
                    continue;
                }
                struct request r = {c, seq, {0}};
                for (size_t i = 0; i < sizeof r.data; i++)
                    r.data[i] = (unsigned char)(c * 13 + seq + i);
                struct request back;
                ssize_t w = write(s, &r, sizeof r);
                int e = errno;
                long got = 0;
                if (w != (ssize_t)sizeof r)
                    bad += client_problem(&why[c], seq, "write", w, e);
                else if ((got = read_all(s, &back, sizeof back, &e)) != (long)sizeof back)
                    bad += client_problem(&why[c], seq, "read of the answer", got, e);
                else if (back.client != c || back.seq != seq)
                    bad += client_problem(&why[c], seq, "answer to another request", got, 0);
                else
                    for (size_t i = 0; i < sizeof r.data; i++)
                        if (back.data[i] != (unsigned char)(r.data[i] + 1)) {
                            bad += client_problem(&why[c], seq, "answer with wrong bytes", got, 0);
                            break;
                        }
                char x;
                ssize_t end = read(s, &x, 1);
                if (end != 0)
                    bad += client_problem(&why[c], seq, "read at the end (not EOF)", end, errno);
                close(s);
            }
            _exit((bad ? 1 : 0) | (pinned ? 0 : 2));
        }
    }
    struct acceptor acc[ACCEPTORS];
    pthread_t t[ACCEPTORS];
    int made = 0;
    for (int i = 0; i < ACCEPTORS; i++) {
        acc[i] = (struct acceptor){l, i, 0, 0, 0};
        made += pthread_create(&t[i], NULL, acceptor, &acc[i]) == 0;
    }
    check(made == ACCEPTORS, "clients: %d accepting threads", ACCEPTORS);
    int good = 0, pinned = 1;
    for (int c = 0; c < CLIENTS; c++) {
        int st;
        if (pids[c] > 0 && wait_for(pids[c], &st, 0) == pids[c] && WIFEXITED(st)) {
            good += !(WEXITSTATUS(st) & 1);
            pinned &= !(WEXITSTATUS(st) & 2);
        }
    }
    long served = 0, bad = 0;
    for (int i = 0; i < made; i++) {
        pthread_join(t[i], NULL);
        served += acc[i].served;
        bad += acc[i].bad;
        pinned &= acc[i].pinned;
    }
    check(pinned, "clients: every process and thread runs on the CPU it was pinned to%s", smp_why(pinned));
    char whys[CLIENTS * 120 + 1] = "";
    for (int c = 0; c < CLIENTS; c++)
        if (why[c].text[0])
            snprintf(whys + strlen(whys), sizeof whys - strlen(whys), " [client %d: %s]", c, why[c].text);
    check(good == CLIENTS, "clients: %d clients got every answer%s", CLIENTS, good == CLIENTS ? "" : whys);
    check(served == CLIENTS * CONNECTIONS && bad == 0, "clients: %d connections served, none lost",
          CLIENTS * CONNECTIONS);
    close(l);
    munmap(why, CLIENTS * sizeof *why);
}

/* --- descriptors in flight --- */

static long send_fd(int s, uint32_t token, int fd)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    memset(ctl, 0, sizeof ctl);
    struct iovec iv = {&token, sizeof token};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    long r;
    do
        r = sendmsg(s, &m, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Receives a token and a descriptor; 0 at the end (an empty message). */
static int recv_fd(int s, uint32_t *token, int *fd)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iv = {token, sizeof *token};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    long r;
    do
        r = recvmsg(s, &m, 0);
    while (r < 0 && errno == EINTR);
    if (r != (long)sizeof *token)
        return 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    *fd = -1;
    if (c && c->cmsg_type == SCM_RIGHTS)
        memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return 1;
}

struct sender {
    int sock, index, pinned, bad;
};

static void *sender(void *arg)
{
    struct sender *s = arg;
    s->pinned = smp_pin(smp_cpu_for(s->index));
    for (int i = 0; i < PASSES; i++) {
        uint32_t token = (uint32_t)(s->index * 100000 + i);
        int p[2];
        /* Even tokens travel in a pipe, odd ones in a socket. */
        int made = i % 2 ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p);
        if (made != 0) {
            s->bad++;
            continue;
        }
        if (write(p[1], &token, sizeof token) != (ssize_t)sizeof token || send_fd(s->sock, token, p[0]) < 0)
            s->bad++;
        close(p[0]);
        close(p[1]);
    }
    return NULL;
}

struct receiver {
    int sock, index, pinned, bad;
    _Atomic unsigned char *seen;
};

static void *receiver(void *arg)
{
    struct receiver *r = arg;
    r->pinned = smp_pin(smp_cpu_for(r->index));
    uint32_t token;
    int fd;
    while (recv_fd(r->sock, &token, &fd)) {
        uint32_t inside = ~0u;
        if (fd < 0 || !read_full(fd, &inside, sizeof inside) || inside != token) {
            r->bad++;
        } else {
            uint32_t sender = token / 100000, i = token % 100000;
            if (sender >= SENDERS || i >= PASSES || atomic_fetch_add(&r->seen[sender * PASSES + i], 1) != 0)
                r->bad++;
        }
        if (fd >= 0)
            close(fd);
    }
    return NULL;
}

/* Whether socket inode `ino` is listed in /proc/net/unix. */
static int listed(unsigned long ino)
{
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512];
    int found = 0;
    if (!f)
        return 1;
    while (fgets(line, sizeof line, f)) {
        unsigned long i;
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu", &i) == 1 && i == ino)
            found = 1;
    }
    fclose(f);
    return found;
}

static unsigned long cycle_inos[CYCLES];

/* Makes CYCLES pairs of sockets that hold each other, and closes them. */
static void *cycle_maker(void *arg)
{
    (void)arg;
    for (int i = 0; i < CYCLES; i++) {
        int p[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM, 0, p) != 0)
            continue;
        struct stat st;
        fstat(p[0], &st);
        cycle_inos[i] = st.st_ino;
        send_fd(p[0], 0, p[0]);
        send_fd(p[1], 0, p[1]);
        close(p[0]);
        close(p[1]);
        /* A release: what starts a collection. */
        close(socket(AF_UNIX, SOCK_DGRAM, 0));
    }
    return NULL;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void in_flight(void)
{
    int sv[2];
    if (!check(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "fds: a seqpacket pair"))
        return;
    _Atomic unsigned char *seen = mmap(NULL, SENDERS * PASSES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int result[2];
    pipe(result);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        close(result[0]);
        int before = open_fds();
        struct receiver r[RECEIVERS];
        pthread_t t[RECEIVERS];
        for (int i = 0; i < RECEIVERS; i++) {
            r[i] = (struct receiver){sv[1], SENDERS + 1 + i, 0, 0, seen};
            pthread_create(&t[i], NULL, receiver, &r[i]);
        }
        int bad = 0, pinned = 1;
        for (int i = 0; i < RECEIVERS; i++) {
            pthread_join(t[i], NULL);
            bad += r[i].bad;
            pinned &= r[i].pinned;
        }
        int out[3] = {bad, pinned, open_fds() == before};
        write(result[1], out, sizeof out);
        _exit(0);
    }
    close(sv[1]);
    close(result[1]);
    struct sender s[SENDERS];
    pthread_t t[SENDERS], cy;
    for (int i = 0; i < SENDERS; i++) {
        s[i] = (struct sender){sv[0], i, 0, 0};
        pthread_create(&t[i], NULL, sender, &s[i]);
    }
    int cycles = pthread_create(&cy, NULL, cycle_maker, NULL) == 0;
    int bad = 0, pinned = 1;
    for (int i = 0; i < SENDERS; i++) {
        pthread_join(t[i], NULL);
        bad += s[i].bad;
        pinned &= s[i].pinned;
    }
    /* One empty record per receiver ends it. */
    for (int i = 0; i < RECEIVERS; i++)
        send(sv[0], "", 0, 0);
    int out[3] = {1, 0, 0};
    int got = read_full(result[0], out, sizeof out);
    int st;
    wait_for(pid, &st, 0);
    if (cycles)
        pthread_join(cy, NULL);
    int all_once = 1;
    for (int i = 0; i < SENDERS * PASSES; i++)
        all_once &= seen[i] == 1;
    {
        int ok_ = pinned && got && out[1];
        check(ok_, "fds: every thread runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(bad == 0 && got && out[0] == 0, "fds: %d descriptors passed, each with its token", SENDERS * PASSES);
    check(all_once, "fds: every token arrived once");
    check(got && out[2], "fds: the receiver ends with the descriptors it started with");
    /* Collection may run later on Linux: release sockets until done. */
    int left = CYCLES;
    for (int tries = 0; tries < 300 && left > 0; tries++) {
        close(socket(AF_UNIX, SOCK_DGRAM, 0));
        left = 0;
        for (int i = 0; i < CYCLES; i++)
            left += cycle_inos[i] != 0 && listed(cycle_inos[i]);
        if (left)
            sleep_ms(10);
    }
    check(cycles && left == 0, "fds: %d socket cycles made meanwhile are collected", CYCLES);
    close(sv[0]);
    close(result[0]);
}

int main(void)
{
    t_init("smp_unix");
    check(smp_init() > 0, "sched_getaffinity lists at least one CPU");
    streaming();
    many_clients();
    in_flight();
    return t_done();
}
