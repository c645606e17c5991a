/*
 * clockset (Kiln only; it skips itself on the host, whose wall clock a
 * test must not move): what setting CLOCK_REALTIME does to timerfds.
 * A timer armed with TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET is
 * cancelled (readable, the read fails with ECANCELED, the next read is
 * back to normal); absolute and relative CLOCK_REALTIME timers follow the
 * clock (a jump past their expiry fires them); CLOCK_MONOTONIC timers do
 * not move. The clock is put back at the end.
 */
#include "common.h"
#include <poll.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>

static int readable(int fd, int ms)
{
    struct pollfd p = { fd, POLLIN, 0 };
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static int read_err(int fd, uint64_t *v)
{
    errno = 0;
    return read(fd, v, 8) == 8 ? 0 : errno;
}

static void set_realtime(struct timespec t)
{
    if (clock_settime(CLOCK_REALTIME, &t) != 0)
        printf("clock_settime: %s\n", errname(errno));
}

int main(void)
{
    t_init("clockset");
    struct utsname u;
    if (uname(&u) != 0 || strstr(u.version, "Kiln") == NULL) {
        printf("not Kiln: skipped\n");
        return 0;
    }
    struct timespec start, mono_start;
    clock_gettime(CLOCK_REALTIME, &start);
    clock_gettime(CLOCK_MONOTONIC, &mono_start);

    /* Cancel on set. */
    int cancel = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
    struct itimerspec far = { { 0, 0 }, { start.tv_sec + 100, 0 } };
    check(timerfd_settime(cancel, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &far, NULL) == 0,
          "REALTIME timer armed with ABSTIME|CANCEL_ON_SET");
    /* The same kind without the flag, and a relative one, both 3 s out;
     * a monotonic one 3 s out as well. */
    int absolute = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
    int relative = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
    int mono = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct itimerspec abs3 = { { 0, 0 }, { start.tv_sec + 3, start.tv_nsec } };
    struct itimerspec rel3 = { { 0, 0 }, { 3, 0 } };
    timerfd_settime(absolute, TFD_TIMER_ABSTIME, &abs3, NULL);
    timerfd_settime(relative, 0, &rel3, NULL);
    timerfd_settime(mono, 0, &rel3, NULL);
    check(!readable(cancel, 0) && !readable(absolute, 0), "nothing expired yet");

    /* Jump the wall clock 10 s ahead. */
    struct timespec ahead = start;
    ahead.tv_sec += 10;
    set_realtime(ahead);
    check(readable(cancel, 1000), "the cancel-on-set timer is readable after the clock was set");
    uint64_t v;
    check(read_err(cancel, &v) == ECANCELED, "its read fails with ECANCELED");
    check(read_err(cancel, &v) == EAGAIN, "the next read is back to EAGAIN");
    check(readable(absolute, 1000), "an absolute REALTIME timer the jump went past fires");
    check(read_err(absolute, &v) == 0 && v == 1, "... once");
    check(readable(relative, 1000), "a relative REALTIME timer follows the clock too");
    check(!readable(mono, 0), "a MONOTONIC timer does not move");
    struct itimerspec left;
    timerfd_gettime(mono, &left);
    check(left.it_value.tv_sec >= 1 && left.it_value.tv_sec <= 3, "... and still has about 3 s to go");

    /* A timer armed without CANCEL_ON_SET is never cancelled. */
    struct timespec back;
    clock_gettime(CLOCK_MONOTONIC, &back);
    long elapsed_ns = (back.tv_sec - mono_start.tv_sec) * 1000000000L + (back.tv_nsec - mono_start.tv_nsec);
    struct timespec restore = start;
    restore.tv_nsec += elapsed_ns % 1000000000L;
    restore.tv_sec += elapsed_ns / 1000000000L + restore.tv_nsec / 1000000000L;
    restore.tv_nsec %= 1000000000L;
    set_realtime(restore);
    check(read_err(absolute, &v) == EAGAIN, "setting the clock back does not fire a timer that already fired");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    check(now.tv_sec - start.tv_sec < 5, "the wall clock is back");
    close(cancel);
    close(absolute);
    close(relative);
    close(mono);
    return t_done();
}
