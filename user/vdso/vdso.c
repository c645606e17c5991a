/*
 * Kiln's vDSO: the time calls and getcpu served in user mode from the
 * kernel's data page (vvar.h), so they cost no system call.
 *
 * Every function returns what the system call would: 0 or a value on
 * success, -errno on failure (glibc and musl both read it that way). A
 * clock the data page cannot serve (CPU-time clocks, unknown ids, or a
 * kernel without a usable TSC) goes to the real system call, so the
 * answer, errno included, is always the kernel's own.
 *
 * The code must not need relocations or a C library: it is mapped as is
 * at a different address in every process. It reads the data page
 * through `kiln_vvar`, which the linker script places KILN_VVAR_PAGES
 * pages below the image; hidden visibility makes every access
 * RIP-relative.
 */
#include "vvar.h"

struct vdso_timespec {
    long tv_sec;
    long tv_nsec;
};

struct vdso_timeval {
    long tv_sec;
    long tv_usec;
};

struct vdso_timezone {
    int tz_minuteswest;
    int tz_dsttime;
};

#define NSEC_PER_SEC 1000000000ULL

#define SYS_gettimeofday 96
#define SYS_time 201
#define SYS_clock_gettime 228
#define SYS_clock_getres 229
#define SYS_getcpu 309

/* Clock ids (linux/time.h). */
#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1
#define CLOCK_MONOTONIC_RAW 4
#define CLOCK_REALTIME_COARSE 5
#define CLOCK_MONOTONIC_COARSE 6
#define CLOCK_BOOTTIME 7
#define CLOCK_TAI 11

/* Kiln's clocks: these read the wall clock, the other served ones the
 * monotonic clock (kernel/src/syscall/time.rs does the same). */
#define WALL_CLOCKS ((1u << CLOCK_REALTIME) | (1u << CLOCK_REALTIME_COARSE) | (1u << CLOCK_TAI))
#define MONO_CLOCKS                                                                                  \
    ((1u << CLOCK_MONOTONIC) | (1u << CLOCK_MONOTONIC_RAW) | (1u << CLOCK_MONOTONIC_COARSE) |        \
     (1u << CLOCK_BOOTTIME))
#define COARSE_CLOCKS ((1u << CLOCK_REALTIME_COARSE) | (1u << CLOCK_MONOTONIC_COARSE))

extern const struct kiln_vvar kiln_vvar __attribute__((visibility("hidden")));

static inline long syscall2(long nr, long a, long b)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
    return ret;
}

static inline long syscall3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define barrier() __asm__ volatile("" ::: "memory")

/*
 * TSC ticks since *epoch, the TSC not read ahead of earlier loads (the
 * seqlock's). A TSC behind the epoch (another CPU's, not quite in step)
 * counts 0, as Linux's vDSO clamps to its last cycle count. RDTSC clears
 * the upper halves of RAX and RDX, so the halves combine in two
 * instructions, and the epoch is subtracted straight from memory: the
 * compiler would spend a load, a zeroed register and a cmov on this.
 */
static inline unsigned long long tsc_since(const uint64_t *epoch)
{
    unsigned long long delta, hi;
    __asm__ volatile("lfence\n\t"
                     "rdtsc\n\t"
                     "shl $32, %%rdx\n\t"
                     "or %%rdx, %%rax\n\t"
                     "sub %2, %%rax\n\t"
                     "jae 1f\n\t"
                     "xor %%eax, %%eax\n"
                     "1:"
                     : "=a"(delta), "=d"(hi)
                     : "m"(*epoch)
                     : "cc", "memory");
    return delta;
}

/* (delta * *mult) >> KILN_TSC_SHIFT, the multiplier read from memory by
 * the multiply itself (the compiler loads it into a register first). */
static inline unsigned long long tsc_to_ns(unsigned long long delta, const uint64_t *mult)
{
    _Static_assert(KILN_TSC_SHIFT == 32, "the shift below is KILN_TSC_SHIFT");
    unsigned long long ns, hi;
    __asm__ volatile("mulq %2; shrd $32, %%rdx, %%rax" : "=a"(ns), "=d"(hi) : "m"(*mult), "a"(delta) : "cc");
    return ns;
}

/*
 * Nanoseconds on the monotonic clock (wall == 0) or the wall clock, with
 * the kernel's own formula (hal/src/time.rs), into *out; 0 when the data
 * page has no usable clock. Inlined into each caller, so the result stays
 * in a register.
 */
static inline __attribute__((always_inline)) int read_clock_ns(int wall, unsigned long long *out)
{
    const struct kiln_vvar *v = &kiln_vvar;
    unsigned int seq;
    unsigned long long ns;
    do {
        seq = READ_ONCE(v->seq);
        /* Odd: an update is under way, or (for good) the data page has no
         * clock, which only then is worth a look. */
        while (__builtin_expect(seq & 1, 0)) {
            if (READ_ONCE(v->clock_mode) != KILN_CLOCK_TSC)
                return 0;
            __asm__ volatile("pause");
            seq = READ_ONCE(v->seq);
        }
        barrier();
        ns = tsc_to_ns(tsc_since(&v->tsc_epoch), &v->tsc_mult);
        if (wall)
            ns += READ_ONCE(v->realtime_base_ns);
        barrier();
    } while (__builtin_expect(READ_ONCE(v->seq) != seq, 0));
    *out = ns;
    return 1;
}

/* Fills *ts from nanoseconds. */
static inline __attribute__((always_inline)) void to_timespec(unsigned long long ns, struct vdso_timespec *ts)
{
    ts->tv_sec = (long)(ns / NSEC_PER_SEC);
    ts->tv_nsec = (long)(ns % NSEC_PER_SEC);
}

int __vdso_clock_gettime(int clock, struct vdso_timespec *ts)
{
    unsigned long long ns;
    /* The two clocks programs read most get a test of their own, ahead of
     * the general one. */
    if (__builtin_expect(clock == CLOCK_MONOTONIC, 1)) {
        if (read_clock_ns(0, &ns)) {
            to_timespec(ns, ts);
            return 0;
        }
    } else if (clock == CLOCK_REALTIME) {
        if (read_clock_ns(1, &ns)) {
            to_timespec(ns, ts);
            return 0;
        }
    } else {
        unsigned int bit = 1u << (clock & 31);
        if ((unsigned int)clock < 32 && (bit & (WALL_CLOCKS | MONO_CLOCKS)) &&
            read_clock_ns((bit & WALL_CLOCKS) != 0, &ns)) {
            to_timespec(ns, ts);
            return 0;
        }
    }
    return (int)syscall2(SYS_clock_gettime, clock, (long)ts);
}

int __vdso_gettimeofday(struct vdso_timeval *tv, struct vdso_timezone *tz)
{
    unsigned long long ns;
    if (tv) {
        if (!read_clock_ns(1, &ns))
            return (int)syscall2(SYS_gettimeofday, (long)tv, (long)tz);
        unsigned long long secs = ns / NSEC_PER_SEC, rem = ns - secs * NSEC_PER_SEC;
        tv->tv_sec = (long)secs;
        /* rem / 1000 the way a compiler divides a 32-bit value (rem <
         * 10^9): exact for every value below 2^32. */
        tv->tv_usec = (long)((rem * 274877907ull) >> 38);
    }
    if (tz) {
        /* Kiln keeps no time zone: UTC, no DST, as its gettimeofday says. */
        tz->tz_minuteswest = 0;
        tz->tz_dsttime = 0;
    }
    return 0;
}

long __vdso_time(long *t)
{
    unsigned long long ns;
    if (!read_clock_ns(1, &ns))
        return syscall2(SYS_time, (long)t, 0);
    long secs = (long)(ns / NSEC_PER_SEC);
    if (t)
        *t = secs;
    return secs;
}

int __vdso_clock_getres(int clock, struct vdso_timespec *res)
{
    if ((unsigned int)clock < 32 && ((1u << clock) & (WALL_CLOCKS | MONO_CLOCKS)) &&
        READ_ONCE(kiln_vvar.clock_mode) == KILN_CLOCK_TSC) {
        if (res) {
            res->tv_sec = 0;
            res->tv_nsec = ((1u << clock) & COARSE_CLOCKS) ? (long)READ_ONCE(kiln_vvar.coarse_res_ns) : 1;
        }
        return 0;
    }
    return (int)syscall2(SYS_clock_getres, clock, (long)res);
}

long __vdso_getcpu(unsigned int *cpu, unsigned int *node, void *unused)
{
    unsigned int aux, mode = READ_ONCE(kiln_vvar.cpu_mode);
    /* Each mode one compare: RDTSCP (QEMU's TCG CPUs, Intel before Ice
     * Lake) first, then RDPID. */
    if (__builtin_expect(mode == KILN_CPU_RDTSCP, 1)) {
        unsigned int lo, hi;
        __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    } else if (mode == KILN_CPU_RDPID) {
        unsigned long long id;
        __asm__ volatile("rdpid %0" : "=r"(id));
        aux = (unsigned int)id;
    } else {
        return syscall3(SYS_getcpu, (long)cpu, (long)node, (long)unused);
    }
    if (cpu)
        *cpu = aux & 0xfff;
    if (node)
        *node = aux >> 12;
    return 0;
}

/* The plain names too, as Linux's vDSO exports both. */
int clock_gettime(int, struct vdso_timespec *) __attribute__((weak, alias("__vdso_clock_gettime")));
int gettimeofday(struct vdso_timeval *, struct vdso_timezone *) __attribute__((weak, alias("__vdso_gettimeofday")));
long time(long *) __attribute__((weak, alias("__vdso_time")));
int clock_getres(int, struct vdso_timespec *) __attribute__((weak, alias("__vdso_clock_getres")));
long getcpu(unsigned int *, unsigned int *, void *) __attribute__((weak, alias("__vdso_getcpu")));
