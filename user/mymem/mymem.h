/*
 * The /dev/mymem interface shared by Kiln's driver, the Linux module and
 * the user programs: a 512 KiB buffer, and one ioctl that atomically adds
 * to an 8-byte little-endian counter and returns the new value.
 */
#ifndef MYMEM_H
#define MYMEM_H

#include <stdint.h>
#include <sys/ioctl.h>

#define MYMEM_SIZE (512 * 1024)

struct mymem_add {
    uint64_t offset; /* 8-byte aligned, inside the buffer */
    uint64_t value;  /* added */
    uint64_t result; /* the counter after the addition */
};

#define MYMEM_IOC_ADD _IOWR('m', 1, struct mymem_add)

#endif
