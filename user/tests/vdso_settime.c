/*
 * vdso_settime: clock_settime(CLOCK_REALTIME) shows through the vDSO at
 * once, for clock_gettime, gettimeofday and time, and leaves the
 * monotonic clock alone. Kiln only: on the host the test would step the
 * host's own clock, so it skips itself there.
 */
#include "common.h"
#include <sys/time.h>
#include <sys/utsname.h>

static long long ns(struct timespec t)
{
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(void)
{
    t_init("vdso_settime");
    struct utsname u;
    if (uname(&u) != 0 || strstr(u.version, "Kiln") == NULL) {
        printf("not Kiln: skipped\n");
        return 0;
    }
    /* musl reads these through the vDSO; the raw syscall checks them. */
    struct timespec before, mono0, set, now, mono1, raw;
    clock_gettime(CLOCK_REALTIME, &before);
    clock_gettime(CLOCK_MONOTONIC, &mono0);
    const long long jump = 1000000LL * 1000000000LL; /* 10^6 s ahead */
    set.tv_sec = before.tv_sec + jump / 1000000000LL;
    set.tv_nsec = before.tv_nsec;
    check(clock_settime(CLOCK_REALTIME, &set) == 0, "clock_settime(CLOCK_REALTIME, +10^6 s)");
    clock_gettime(CLOCK_REALTIME, &now);
    clock_gettime(CLOCK_MONOTONIC, &mono1);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &raw);
    check(ns(now) >= ns(set) && ns(now) - ns(set) < 1000000000LL, "vDSO CLOCK_REALTIME jumped with it");
    check(ns(raw) >= ns(now), "the system call agrees (not behind the vDSO)");
    check(ns(mono1) >= ns(mono0) && ns(mono1) - ns(mono0) < 1000000000LL, "CLOCK_MONOTONIC did not jump");
    struct timeval tv;
    gettimeofday(&tv, NULL);
    check(tv.tv_sec >= set.tv_sec && tv.tv_sec - set.tv_sec < 2, "vDSO gettimeofday jumped");
    time_t t = time(NULL);
    check(t >= set.tv_sec && t - set.tv_sec < 2, "vDSO time jumped");
    /* And back. */
    clock_gettime(CLOCK_REALTIME, &now);
    now.tv_sec -= jump / 1000000000LL;
    check(clock_settime(CLOCK_REALTIME, &now) == 0, "clock_settime back");
    clock_gettime(CLOCK_REALTIME, &raw);
    check(ns(raw) >= ns(before) && ns(raw) - ns(before) < 10000000000LL, "vDSO CLOCK_REALTIME back where it was");
    return t_done();
}
