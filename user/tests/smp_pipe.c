/*
 * smp_pipe: pipes between CPUs.
 *
 *   - Ping-pong between two processes pinned to different CPUs (when
 *     there are two): a counter bounces over two pipes, each side checks
 *     every value it receives and sends it back plus one.
 *   - The same between two threads of one process.
 *   - Several writer processes on different CPUs write PIPE_BUF-sized
 *     records into one pipe; the reader checks that no record is torn
 *     or interleaved and that each writer's records arrive in order.
 */
#include "smp.h"

#include <fcntl.h>
#include <limits.h>

#define PROC_ROUNDS 20000
#define THREAD_ROUNDS 10000
#define WRITERS 4
#define RECORDS 500
#define RECORD PIPE_BUF

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

/* One side of the ping-pong: the first side sends 0 and expects odd
 * numbers back; the other expects even numbers. Returns the number of
 * values that were wrong or missing. */
static long bounce(int in, int out, int first, long rounds)
{
    long bad = 0;
    uint64_t v = 0;
    if (first && write(out, &v, 8) != 8)
        return rounds;
    for (long i = 0; i < rounds; i++) {
        uint64_t want = first ? 2 * (uint64_t)i + 1 : 2 * (uint64_t)i;
        if (!read_full(in, &v, 8))
            return bad + rounds - i;
        if (v != want)
            bad++;
        v++;
        if ((first && i == rounds - 1))
            break;
        if (write(out, &v, 8) != 8)
            return bad + rounds - i;
    }
    return bad;
}

static void process_pingpong(void)
{
    int ab[2], ba[2];
    if (!check(pipe(ab) == 0 && pipe(ba) == 0, "processes: two pipes"))
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(ab[1]);
        close(ba[0]);
        int pinned = smp_pin(smp_cpu_for(1));
        long bad = bounce(ab[0], ba[1], 0, PROC_ROUNDS);
        _exit((bad ? 1 : 0) | (pinned ? 0 : 2));
    }
    close(ab[0]);
    close(ba[1]);
    int pinned = smp_pin(smp_cpu_for(0));
    long bad = bounce(ba[0], ab[1], 1, PROC_ROUNDS);
    close(ab[1]);
    char c;
    check(read(ba[0], &c, 1) == 0, "processes: EOF after the last value");
    close(ba[0]);
    int st = 0;
    check(pid > 0 && wait_for(pid, &st, 0) == pid, "processes: partner reaped");
    {
        int ok_ = pinned && WIFEXITED(st) && !(WEXITSTATUS(st) & 2);
        check(ok_, "processes: each side runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(bad == 0, "processes: %d round trips, every value received in order", PROC_ROUNDS);
    check(WIFEXITED(st) && !(WEXITSTATUS(st) & 1), "processes: the partner received every value in order");
}

struct side {
    int in, out, first;
    int pinned;
    long bad;
};

static void *thread_side(void *arg)
{
    struct side *s = arg;
    s->pinned = smp_pin(smp_cpu_for(s->first ? 0 : 1));
    s->bad = bounce(s->in, s->out, s->first, THREAD_ROUNDS);
    return NULL;
}

static void thread_pingpong(void)
{
    int ab[2], ba[2];
    if (!check(pipe(ab) == 0 && pipe(ba) == 0, "threads: two pipes"))
        return;
    struct side a = { ba[0], ab[1], 1, 0, 0 }, b = { ab[0], ba[1], 0, 0, 0 };
    pthread_t ta, tb;
    int ok = pthread_create(&tb, NULL, thread_side, &b) == 0;
    ok &= pthread_create(&ta, NULL, thread_side, &a) == 0;
    if (!check(ok, "threads: two threads created"))
        return;
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    {
        int ok_ = a.pinned && b.pinned;
        check(ok_, "threads: each side runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(a.bad == 0 && b.bad == 0, "threads: %d round trips, every value received in order", THREAD_ROUNDS);
    close(ab[0]);
    close(ab[1]);
    close(ba[0]);
    close(ba[1]);
}

static void writers(void)
{
    int p[2];
    if (!check(pipe(p) == 0, "writers: pipe"))
        return;
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        fflush(stdout);
        pids[w] = fork();
        if (pids[w] == 0) {
            close(p[0]);
            int pinned = smp_pin(smp_cpu_for(w + 1));
            unsigned char rec[RECORD];
            for (int n = 0; n < RECORDS; n++) {
                memset(rec, (w * 31 + n) & 0xff, sizeof rec);
                rec[0] = (unsigned char)w;
                memcpy(rec + 1, &n, sizeof n);
                if (write(p[1], rec, sizeof rec) != (ssize_t)sizeof rec)
                    _exit(1);
            }
            _exit(pinned ? 0 : 2);
        }
    }
    close(p[1]);
    int pinned = smp_pin(smp_cpu_for(0));
    int next[WRITERS] = { 0 };
    long records = 0, torn = 0, out_of_order = 0;
    unsigned char rec[RECORD];
    while (read_full(p[0], rec, sizeof rec)) {
        records++;
        int w = rec[0], n;
        memcpy(&n, rec + 1, sizeof n);
        if (w >= WRITERS) {
            torn++;
            continue;
        }
        for (size_t i = 1 + sizeof n; i < sizeof rec; i++)
            if (rec[i] != ((w * 31 + n) & 0xff)) {
                torn++;
                break;
            }
        if (n != next[w])
            out_of_order++;
        next[w] = n + 1;
    }
    close(p[0]);
    int good = 0;
    for (int w = 0; w < WRITERS; w++) {
        int st;
        if (pids[w] > 0 && wait_for(pids[w], &st, 0) == pids[w] && WIFEXITED(st)) {
            good += !(WEXITSTATUS(st) & 1);
            pinned &= WEXITSTATUS(st) != 2;
        }
    }
    {
        int ok_ = pinned;
        check(ok_, "writers: every process runs on the CPU it was pinned to%s", smp_why(ok_));
    }
    check(good == WRITERS, "writers: %d writers exited 0", WRITERS);
    check(records == (long)WRITERS * RECORDS, "writers: %d records of PIPE_BUF bytes arrived", WRITERS * RECORDS);
    check(torn == 0, "writers: no record torn or interleaved");
    check(out_of_order == 0, "writers: each writer's records in order");
}

int main(void)
{
    t_init("smp_pipe");
    check(smp_init() > 0, "sched_getaffinity lists at least one CPU");
    process_pingpong();
    thread_pingpong();
    writers();
    return t_done();
}
