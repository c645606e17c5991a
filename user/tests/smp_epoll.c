/*
 * smp_epoll: epoll between CPUs.
 *
 *   - Ping-pong between two threads pinned to different CPUs (when there
 *     are two), each sleeping in epoll_wait on its own eventfd: every
 *     wakeup crosses CPUs, none may be lost.
 *   - The same between two processes over pipes, edge-triggered.
 *   - EPOLLEXCLUSIVE: threads on several CPUs, each with its own epoll
 *     instance watching one eventfd exclusively, all asleep: one write
 *     wakes exactly one of them (a round in which a thread was not asleep
 *     yet may wake more: up to 20 rounds are tried); without
 *     EPOLLEXCLUSIVE it wakes all, asleep or not.
 *   - Threads in epoll_wait on one shared instance with an edge-triggered
 *     entry: one write wakes exactly one of them.
 *   - Stress: readers on every CPU share one epoll over four pipes that
 *     writers on other CPUs fill; every byte written is read once.
 */
#include "smp.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#define PING_ROUNDS 5000
#define WAITERS 4
/* A bound only: every sleeper is released by RELEASE_TAG's eventfd. */
#define SLEEP_MS 20000
/* The data of each instance's entry for the release eventfd, written
 * once the poke has had time to wake whoever it wakes. Sleepers that
 * were not woken return with it instead of timing out, so a host stall
 * cannot turn "not woken" into "woken late" or the reverse. */
#define RELEASE_TAG 1000

static int wait_one(int ep, uint64_t *data, int timeout)
{
    struct epoll_event ev;
    int n;
    do {
        n = epoll_wait(ep, &ev, 1, timeout);
    } while (n < 0 && errno == EINTR);
    if (n == 1 && data)
        *data = ev.data.u64;
    return n;
}

/* ---- ping-pong between threads ---- */

struct side {
    int my_efd, peer_efd, first, cpu;
    long bad;
    int pinned;
};

static void *ping_thread(void *arg)
{
    struct side *s = arg;
    s->pinned = smp_pin(s->cpu);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
    epoll_ctl(ep, EPOLL_CTL_ADD, s->my_efd, &ev);
    uint64_t one = 1, v;
    if (s->first)
        write(s->peer_efd, &one, 8);
    for (int i = 0; i < PING_ROUNDS; i++) {
        if (wait_one(ep, NULL, 10000) != 1 || read(s->my_efd, &v, 8) != 8 || v != 1) {
            s->bad += PING_ROUNDS - i;
            break;
        }
        if (!(s->first && i == PING_ROUNDS - 1))
            write(s->peer_efd, &one, 8);
    }
    close(ep);
    return NULL;
}

static void test_thread_ping_pong(void)
{
    int a = eventfd(0, EFD_NONBLOCK), b = eventfd(0, EFD_NONBLOCK);
    struct side s[2] = { { a, b, 1, smp_cpu_for(0), 0, 0 }, { b, a, 0, smp_cpu_for(1), 0, 0 } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, ping_thread, &s[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    check(s[0].pinned && s[1].pinned, "ping-pong threads run where pinned%s", smp_why(s[0].pinned && s[1].pinned));
    check(s[0].bad == 0 && s[1].bad == 0, "%d eventfd round trips between threads through epoll_wait", PING_ROUNDS);
    close(a);
    close(b);
}

/* ---- ping-pong between processes, edge-triggered pipes ---- */

static long process_side(int in, int out, int first, int cpu)
{
    if (!smp_pin(cpu))
        return -1;
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 2 };
    epoll_ctl(ep, EPOLL_CTL_ADD, in, &ev);
    uint32_t v = 0, expect = first ? 1 : 0;
    long bad = 0;
    if (first)
        write(out, &v, 4);
    for (int i = 0; i < PING_ROUNDS; i++) {
        /* Edge-triggered: drain until EAGAIN before waiting again. */
        ssize_t r;
        while ((r = read(in, &v, 4)) < 0 && errno == EAGAIN) {
            if (wait_one(ep, NULL, 10000) != 1)
                return bad + PING_ROUNDS - i;
        }
        if (r != 4 || v != expect)
            bad++;
        expect = v + 2;
        v++;
        if (!(first && i == PING_ROUNDS - 1))
            write(out, &v, 4);
    }
    close(ep);
    return bad;
}

static void test_process_ping_pong(void)
{
    int ab[2], ba[2];
    pipe2(ab, O_NONBLOCK);
    pipe2(ba, O_NONBLOCK);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long bad = process_side(ab[0], ba[1], 0, smp_cpu_for(1));
        _exit(bad == 0 ? 0 : bad < 0 ? 2 : 1);
    }
    long bad = process_side(ba[0], ab[1], 1, smp_cpu_for(0));
    int st;
    wait_for(pid, &st, 0);
    check(bad == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "%d edge-triggered pipe round trips between processes through epoll_wait", PING_ROUNDS);
    close(ab[0]);
    close(ab[1]);
    close(ba[0]);
    close(ba[1]);
}

/* ---- sleepers: EPOLLEXCLUSIVE and shared instances ---- */

struct sleeper {
    int ep, cpu, got, pinned;
    atomic_int *ready;
};

/* Adds the release eventfd to `ep`, level-triggered and shared. */
static void watch_release(int ep, int release)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = RELEASE_TAG };
    epoll_ctl(ep, EPOLL_CTL_ADD, release, &ev);
}

static void *sleeper_thread(void *arg)
{
    struct sleeper *s = arg;
    s->pinned = smp_pin(s->cpu);
    atomic_fetch_add(s->ready, 1);
    uint64_t data;
    s->got = wait_one(s->ep, &data, SLEEP_MS) == 1 && data != RELEASE_TAG;
    return NULL;
}

/* Starts one sleeper per entry of `eps` (each watching `release`), lets
 * them reach epoll_wait, runs `poke`, releases the rest, joins them;
 * returns how many got the poke's event. */
static int run_sleepers(int *eps, int n, int release, void (*poke)(void *), void *arg)
{
    pthread_t t[WAITERS];
    struct sleeper s[WAITERS];
    atomic_int ready = 0;
    for (int i = 0; i < n; i++) {
        s[i] = (struct sleeper){ eps[i], smp_cpu_for(i), 0, 0, &ready };
        pthread_create(&t[i], NULL, sleeper_thread, &s[i]);
    }
    while (atomic_load(&ready) < n)
        sched_yield();
    usleep(30000);
    poke(arg);
    usleep(100000);
    uint64_t one = 1;
    write(release, &one, 8);
    int got = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        got += s[i].got;
    }
    return got;
}

static void poke_once(void *arg)
{
    uint64_t one = 1;
    write(*(int *)arg, &one, 8);
}

/* One round: WAITERS instances each watching a fresh eventfd, one write. */
static int exclusive_round(int exclusive)
{
    int efd = eventfd(0, EFD_NONBLOCK);
    int release = eventfd(0, EFD_NONBLOCK);
    int eps[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        eps[i] = epoll_create1(0);
        struct epoll_event ev = { .events = EPOLLIN | (exclusive ? EPOLLEXCLUSIVE : 0), .data.u64 = i };
        epoll_ctl(eps[i], EPOLL_CTL_ADD, efd, &ev);
        watch_release(eps[i], release);
    }
    int got = run_sleepers(eps, WAITERS, release, poke_once, &efd);
    for (int i = 0; i < WAITERS; i++)
        close(eps[i]);
    close(release);
    close(efd);
    return got;
}

static void test_exclusive(void)
{
    int got = 0;
    for (int round = 0; round < 20 && got != 1; round++)
        got = exclusive_round(1);
    check(got == 1, "EPOLLEXCLUSIVE: one write wakes exactly one of %d sleeping instances", WAITERS);
    check(exclusive_round(0) == WAITERS, "without EPOLLEXCLUSIVE one write wakes all %d instances", WAITERS);
}

static void test_shared_instance(void)
{
    int efd = eventfd(0, EFD_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 7 };
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    int release = eventfd(0, EFD_NONBLOCK);
    watch_release(ep, release);
    int eps[WAITERS];
    for (int i = 0; i < WAITERS; i++)
        eps[i] = ep;
    int got = run_sleepers(eps, WAITERS, release, poke_once, &efd);
    close(release);
    check(got == 1, "%d threads asleep on one instance, edge-triggered entry: one write wakes one", WAITERS);
    close(ep);
    close(efd);
}

/* ---- stress ---- */

#define PIPES 4
#define PER_WRITER 5000

struct stress {
    int ep, rfd[PIPES];
    atomic_long total;
    atomic_int writers_done;
    int cpu, pinned;
};

static void *stress_reader(void *arg)
{
    struct stress *st = arg;
    char buf[512];
    for (;;) {
        uint64_t data;
        int n = wait_one(st->ep, &data, 100);
        if (n == 1) {
            ssize_t r;
            while ((r = read(st->rfd[data], buf, sizeof buf)) > 0)
                atomic_fetch_add(&st->total, r);
        } else if (atomic_load(&st->writers_done) == PIPES) {
            /* Nothing for 100 ms after the writers finished: drain what
             * another reader may have left and stop. */
            for (int i = 0; i < PIPES; i++) {
                ssize_t r;
                while ((r = read(st->rfd[i], buf, sizeof buf)) > 0)
                    atomic_fetch_add(&st->total, r);
            }
            return NULL;
        }
    }
}

struct writer {
    int wfd, cpu, pinned;
    struct stress *st;
};

static void *stress_writer(void *arg)
{
    struct writer *w = arg;
    w->pinned = smp_pin(w->cpu);
    char byte = 'x';
    for (int i = 0; i < PER_WRITER; i++) {
        while (write(w->wfd, &byte, 1) != 1)
            sched_yield();
        if (i % 64 == 0)
            sched_yield();
    }
    atomic_fetch_add(&w->st->writers_done, 1);
    return NULL;
}

struct reader_arg {
    struct stress *st;
    int cpu, pinned;
};

static void *pinned_reader(void *arg)
{
    struct reader_arg *r = arg;
    r->pinned = smp_pin(r->cpu);
    return stress_reader(r->st);
}

static void test_stress(void)
{
    static struct stress st;
    st.ep = epoll_create1(0);
    int wfd[PIPES];
    for (int i = 0; i < PIPES; i++) {
        int p[2];
        pipe2(p, O_NONBLOCK);
        st.rfd[i] = p[0];
        wfd[i] = p[1];
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };
        epoll_ctl(st.ep, EPOLL_CTL_ADD, p[0], &ev);
    }
    pthread_t rt[WAITERS], wt[PIPES];
    struct reader_arg ra[WAITERS];
    struct writer wa[PIPES];
    for (int i = 0; i < WAITERS; i++) {
        ra[i] = (struct reader_arg){ &st, smp_cpu_for(i), 0 };
        pthread_create(&rt[i], NULL, pinned_reader, &ra[i]);
    }
    for (int i = 0; i < PIPES; i++) {
        wa[i] = (struct writer){ wfd[i], smp_cpu_for(i + 1), 0, &st };
        pthread_create(&wt[i], NULL, stress_writer, &wa[i]);
    }
    for (int i = 0; i < PIPES; i++)
        pthread_join(wt[i], NULL);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(rt[i], NULL);
    check(atomic_load(&st.total) == (long)PIPES * PER_WRITER,
          "%d readers on one epoll, %d writers on other CPUs: every byte read once", WAITERS, PIPES);
    for (int i = 0; i < PIPES; i++) {
        close(st.rfd[i]);
        close(wfd[i]);
    }
    close(st.ep);
}

int main(void)
{
    t_init("smp_epoll");
    smp_init();
    test_thread_ping_pong();
    test_process_ping_pong();
    test_exclusive();
    test_shared_instance();
    test_stress();
    return t_done();
}
