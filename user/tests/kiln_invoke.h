/*
 * kiln_invoke.h: Kiln's component invocation (docs/components.md), shared
 * by the `components` test, the `kcomp` tool and kbench's component rows.
 * A Kiln-only system call, number 0x01000000, far from Linux's table
 * (Linux answers ENOSYS). rdi = capability (-1: the kernel's control
 * interface), rsi = operation, rdx, r10 = the first two arguments (r8, r9
 * zero); the reply comes back in rdx, the status (0 or -errno) in rax.
 */
#ifndef KILN_INVOKE_H
#define KILN_INVOKE_H

#include <stdint.h>

#define KILN_INVOKE 0x01000000L
#define KILN_CONTROL (-1L)

static inline long kiln_invoke(long cap, long op, uint64_t a, uint64_t b, uint64_t *value)
{
    long rax = KILN_INVOKE;
    uint64_t rdx = a;
    register uint64_t r10 __asm__("r10") = b;
    register uint64_t r8 __asm__("r8") = 0;
    register uint64_t r9 __asm__("r9") = 0;
    __asm__ volatile("syscall"
                     : "+a"(rax), "+d"(rdx)
                     : "D"(cap), "S"(op), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    *value = rdx;
    return rax;
}

#endif
