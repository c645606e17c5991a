/*
 * The data page the kernel shares with the vDSO (Kiln's own layout, not
 * Linux's): one read-only page mapped into every process four pages below
 * the vDSO text, as Linux places its [vvar] area.
 *
 * The kernel is the only writer. It bumps `seq` to an odd value, updates
 * the fields, and bumps it to the next even value; a reader retries while
 * `seq` is odd or changed under it. A kernel without a usable clock
 * (clock_mode KILN_CLOCK_SYSCALL) leaves `seq` odd for good, so the
 * vDSO's fast path tests one word and reads clock_mode only on the odd
 * path. libs/kiln-util/src/vdso.rs mirrors
 * this layout for the kernel, and its tests check it against this file.
 */
#ifndef KILN_VVAR_H
#define KILN_VVAR_H

#include <stdint.h>

/* clock_mode: how the vDSO reads the time. */
#define KILN_CLOCK_SYSCALL 0 /* no usable clock: every call is a syscall */
#define KILN_CLOCK_TSC 1     /* ns = ((tsc - tsc_epoch) * tsc_mult) >> KILN_TSC_SHIFT */

/* The fixed-point shift of tsc_mult (the kernel converts with the same). */
#define KILN_TSC_SHIFT 32

/* cpu_mode: how the vDSO learns the CPU number (IA32_TSC_AUX = node << 12 | cpu). */
#define KILN_CPU_SYSCALL 0
#define KILN_CPU_RDPID 1
#define KILN_CPU_RDTSCP 2

struct kiln_vvar {
    uint32_t seq;              /* 0: even when stable */
    uint32_t clock_mode;       /* 4 */
    uint64_t tsc_epoch;        /* 8: TSC at monotonic zero */
    uint64_t tsc_mult;         /* 16: nanoseconds per tick << KILN_TSC_SHIFT */
    uint64_t realtime_base_ns; /* 24: CLOCK_REALTIME - CLOCK_MONOTONIC */
    uint64_t coarse_res_ns;    /* 32: resolution of the *_COARSE clocks */
    uint32_t cpu_mode;         /* 40 */
    uint32_t reserved;         /* 44 */
};

/* Pages of the [vvar] area below the vDSO text; only the first is backed. */
#define KILN_VVAR_PAGES 4

#endif
