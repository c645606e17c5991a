/*
 * The labs' timing test: the average time of one pread and one pwrite on
 * /dev/mymem over TRIALS trials, at each of the labs' sizes.
 *
 *   timing [TRIALS]      (default 1000)
 *
 * Prints `mymem timing SIZE READ_NS WRITE_NS` per size. Each trial writes
 * fresh pseudo-random bytes, generated before the clock starts so only the
 * system call is timed; the read then fetches what was written and is
 * checked, so a broken device cannot pass as a fast one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mymem.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* xorshift64: cheap, and "fresh data each trial" only needs the bytes to
 * differ between trials, not to be unpredictable. */
static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        size_t k = n - i < 8 ? n - i : 8;
        memcpy(p + i, &rng, k);
    }
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1, 64, 1024, 64 * 1024, 512 * 1024};
    long trials = argc > 1 ? atol(argv[1]) : 1000;
    if (trials < 1)
        trials = 1;
    int fd = open("/dev/mymem", O_RDWR);
    if (fd < 0) {
        printf("mymem timing n/a open /dev/mymem: %s\n", strerror(errno));
        return 1;
    }
    uint8_t *out = malloc(MYMEM_SIZE), *in = malloc(MYMEM_SIZE);
    if (!out || !in)
        return 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s];
        uint64_t rsum = 0, wsum = 0;
        for (long t = 0; t < trials; t++) {
            fill(out, size);
            uint64_t t0 = now_ns();
            ssize_t w = pwrite(fd, out, size, 0);
            uint64_t t1 = now_ns();
            ssize_t r = pread(fd, in, size, 0);
            uint64_t t2 = now_ns();
            if (w != (ssize_t)size || r != (ssize_t)size || memcmp(in, out, size) != 0) {
                printf("mymem timing n/a size %zu: write %zd read %zd (%s)\n", size, w, r,
                       w < 0 || r < 0 ? strerror(errno) : "data mismatch");
                return 1;
            }
            wsum += t1 - t0;
            rsum += t2 - t1;
        }
        printf("mymem timing %zu %.1f %.1f\n", size, (double)rsum / trials, (double)wsum / trials);
        fflush(stdout);
    }
    close(fd);
    return 0;
}
