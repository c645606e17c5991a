/*
 * adjtimex: adjtimex(2) and clock_adjtime(2): reading the NTP state (the
 * clock state agrees with STA_UNSYNC, Linux's constant fields, the time
 * next to CLOCK_REALTIME, padding left alone), clock ids (EOPNOTSUPP for
 * clocks that cannot be adjusted, EINVAL for ids that do not exist),
 * EFAULT, EINVAL for bad ticks, adjtime-style modes, offsets and
 * frequencies, EPERM without CAP_SYS_TIME. The only state it sets is the
 * error estimates, to the values they have, so running it on the host
 * changes nothing there.
 */
#include "common.h"
#include <limits.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/timex.h>

static const char *ename(long r)
{
    static char buf[32];
    if (r >= 0) {
        snprintf(buf, sizeof buf, "%ld", r);
        return buf;
    }
    return errname(errno);
}

static long clock_adj(long clk, struct timex *t)
{
    return syscall(SYS_clock_adjtime, clk, t);
}

static void test_read(void)
{
    union {
        struct timex t;
        unsigned char b[sizeof(struct timex)];
    } u;
    memset(&u, 0xaa, sizeof u);
    u.t.modes = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long r = syscall(SYS_adjtimex, &u.t);
    check(sizeof(struct timex) == 208, "struct timex is 208 bytes");
    check(r == TIME_OK || r == TIME_ERROR, "adjtimex(modes 0) returns TIME_OK or TIME_ERROR");
    check((r == TIME_ERROR) == ((u.t.status & (STA_UNSYNC | STA_CLOCKERR)) != 0),
          "TIME_ERROR exactly when STA_UNSYNC or STA_CLOCKERR is set");
    check(u.t.modes == 0, "modes left as given");
    check(u.t.tick == 10000, "tick is 10000 us (USER_HZ 100)");
    check(u.t.precision == 1, "precision 1");
    check(u.t.tolerance == 500 << 16, "tolerance 500 ppm");
    check(u.t.constant >= 0 && u.t.constant <= 10, "time constant within 0..MAXTC");
    check(u.t.maxerror >= 0 && u.t.maxerror <= 16000000, "maxerror within 0..16 s");
    check(u.t.esterror >= 0 && u.t.esterror <= 16000000, "esterror within 0..16 s");
    check(u.t.freq >= -(500 << 16) && u.t.freq <= 500 << 16, "freq within +-500 ppm");
    long sub = u.t.status & STA_NANO ? u.t.time.tv_usec / 1000 : u.t.time.tv_usec;
    int64_t got_us = (int64_t)u.t.time.tv_sec * 1000000 + sub;
    int64_t want_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    check(got_us >= want_us && got_us - want_us < 2000000, "time is CLOCK_REALTIME's");
    check(u.t.ppsfreq == 0 && u.t.jitter == 0 && u.t.shift == 0 && u.t.stabil == 0 && u.t.jitcnt == 0 &&
              u.t.calcnt == 0 && u.t.errcnt == 0 && u.t.stbcnt == 0,
          "PPS fields are zero");
    int pad_kept = 1;
    for (size_t i = offsetof(struct timex, tai) + 4; i < sizeof u; i++)
        pad_kept &= u.b[i] == 0xaa;
    check(pad_kept, "padding after tai left alone");
    check(u.b[4] == 0xaa && u.b[44] == 0xaa, "holes after modes and status left alone");

    struct timex t2 = { 0 };
    long r2 = clock_adj(CLOCK_REALTIME, &t2);
    check(r2 == r && t2.status == u.t.status && t2.tick == u.t.tick,
          "clock_adjtime(CLOCK_REALTIME) reads the same state");
    struct timex ss = { .modes = ADJ_OFFSET_SS_READ };
    r2 = syscall(SYS_adjtimex, &ss);
    check(r2 == r && ss.offset == 0, "ADJ_OFFSET_SS_READ: no adjtime offset outstanding");

    /* Setting the error estimates to the values they have changes nothing. */
    struct timex set = { .modes = ADJ_MAXERROR | ADJ_ESTERROR, .maxerror = u.t.maxerror, .esterror = u.t.esterror };
    r2 = syscall(SYS_adjtimex, &set);
    check(r2 == r && set.maxerror == u.t.maxerror && set.esterror == u.t.esterror,
          "ADJ_MAXERROR|ADJ_ESTERROR as root: set and read back");
}

static void test_clocks(void)
{
    for (long id = -10; id < 18; id++) {
        struct timex t = { 0 };
        long r = clock_adj(id, &t);
        printf("clock_adjtime(%ld) = %s\n", id, r >= 0 ? "state" : errname(errno));
    }
    for (long id = INT_MIN; id != 0; id = 0) {
        struct timex t = { 0 };
        long r = clock_adj(id, &t);
        printf("clock_adjtime(INT_MIN) = %s\n", r >= 0 ? "state" : errname(errno));
    }
}

static void test_errors(void)
{
    EXPECT_ERR(EFAULT, "adjtimex(NULL)", syscall(SYS_adjtimex, NULL));
    EXPECT_ERR(EFAULT, "adjtimex(kernel address)", syscall(SYS_adjtimex, KERNEL_PTR));
    EXPECT_ERR(EFAULT, "clock_adjtime(99, bad pointer): the struct is read first",
               clock_adj(99, BAD_PTR));
    EXPECT_ERR(EFAULT, "clock_adjtime(CLOCK_MONOTONIC, NULL)", clock_adj(CLOCK_MONOTONIC, NULL));
    struct timex *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(ro, 4096, PROT_READ);
    EXPECT_ERR(EFAULT, "adjtimex on a read-only page (the write back fails)", syscall(SYS_adjtimex, ro));
    struct timex *tail = (struct timex *)((char *)ro + 4096 - 100);
    EXPECT_ERR(EFAULT, "adjtimex struct running off the mapping", syscall(SYS_adjtimex, tail));
    munmap(ro, 4096);

    struct timex t = { .modes = ADJ_TICK, .tick = 5 };
    EXPECT_ERR(EINVAL, "ADJ_TICK 5", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_TICK, .tick = 11001 };
    EXPECT_ERR(EINVAL, "ADJ_TICK 11001", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = 0x8000 };
    EXPECT_ERR(EINVAL, "adjtime bit without ADJ_OFFSET", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = 0x8000 | ADJ_STATUS };
    EXPECT_ERR(EINVAL, "adjtime bit with ADJ_STATUS", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_SETOFFSET, .time = { 0, -1 } };
    EXPECT_ERR(EINVAL, "ADJ_SETOFFSET tv_usec -1", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_SETOFFSET, .time = { 0, 1000000 } };
    EXPECT_ERR(EINVAL, "ADJ_SETOFFSET tv_usec 1e6", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_SETOFFSET | ADJ_NANO, .time = { 0, 1000000000 } };
    EXPECT_ERR(EINVAL, "ADJ_SETOFFSET|ADJ_NANO tv_nsec 1e9", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_FREQUENCY, .freq = LONG_MAX };
    EXPECT_ERR(EINVAL, "ADJ_FREQUENCY LONG_MAX", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_FREQUENCY, .freq = LONG_MIN / 2 };
    EXPECT_ERR(EINVAL, "ADJ_FREQUENCY LONG_MIN/2", syscall(SYS_adjtimex, &t));
    t = (struct timex){ .modes = ADJ_TICK, .tick = 5 };
    EXPECT_ERR(EOPNOTSUPP, "clock_adjtime(CLOCK_MONOTONIC) before the tick check",
               clock_adj(CLOCK_MONOTONIC, &t));
}

/* Without CAP_SYS_TIME: reading works, setting is EPERM. */
static void test_unprivileged(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setuid(65534) != 0)
            _exit(99);
        struct timex t = { 0 };
        long r = syscall(SYS_adjtimex, &t);
        printf("unprivileged modes 0: %s\n", r == TIME_OK || r == TIME_ERROR ? "state" : ename(r));
        t = (struct timex){ .modes = ADJ_OFFSET_SS_READ };
        r = syscall(SYS_adjtimex, &t);
        printf("unprivileged ADJ_OFFSET_SS_READ: %s\n", r == TIME_OK || r == TIME_ERROR ? "state" : ename(r));
        static const struct {
            unsigned modes;
            const char *what;
        } sets[] = {
            { ADJ_MAXERROR, "ADJ_MAXERROR" },
            { ADJ_OFFSET_SINGLESHOT, "ADJ_OFFSET_SINGLESHOT" },
            { ADJ_SETOFFSET, "ADJ_SETOFFSET" },
            { ADJ_NANO, "ADJ_NANO" },
            { ADJ_TICK, "ADJ_TICK 5 (EPERM before EINVAL)" },
            { 0x8000, "adjtime bit alone (EINVAL before EPERM)" },
            { 0x40000000, "an unknown bit" },
        };
        for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
            t = (struct timex){ .modes = sets[i].modes, .tick = 5 };
            r = syscall(SYS_adjtimex, &t);
            printf("unprivileged %s: %s\n", sets[i].what, ename(r));
        }
        t = (struct timex){ .modes = ADJ_MAXERROR };
        r = clock_adj(CLOCK_REALTIME, &t);
        printf("unprivileged clock_adjtime ADJ_MAXERROR: %s\n", ename(r));
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unprivileged child ran");
}

int main(void)
{
    t_init("adjtimex");
    test_read();
    test_clocks();
    test_errors();
    test_unprivileged();
    return t_done();
}
