/*
 * The labs' question "what happens if the file descriptor is closed before
 * the worker threads are done?", asked of the running kernel.
 *
 * W threads loop on 512 KiB preads of one shared descriptor; the main
 * thread closes it while they run. A read already inside the kernel holds
 * the open file itself (not the descriptor number), so it must finish with
 * a full, correct result; every later call must fail cleanly with EBADF.
 * Anything else (a short read, wrong data, another errno, a crash) is a bug.
 *
 * Prints `mymem closerace ok before B after A straddling S ebadf E` (B
 * full reads begun before the close, A begun after it, S of the B seen
 * finishing after close() returned) or `mymem closerace FAILED why`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mymem.h"

#define WORKERS 4

static int fd;
static atomic_int closed;
static atomic_long ok_before, ok_after, straddled, ebadf, bad;

static void *worker(void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(MYMEM_SIZE);
    for (;;) {
        int was_closed = atomic_load(&closed);
        ssize_t r = pread(fd, buf, MYMEM_SIZE, 0);
        int now_closed = atomic_load(&closed);
        if (r == MYMEM_SIZE && buf[0] == 0xa5 && buf[MYMEM_SIZE - 1] == 0x5a) {
            atomic_fetch_add(was_closed ? &ok_after : &ok_before, 1);
            /* Began before close() and seen ending after it returned:
             * usually a read that was inside the kernel (e.g. waiting for
             * the device lock) while the descriptor went away. */
            if (was_closed == 0 && now_closed == 2)
                atomic_fetch_add(&straddled, 1);
        }
        else if (r < 0 && errno == EBADF)
            break;
        else {
            atomic_fetch_add(&bad, 1);
            printf("mymem closerace: read returned %zd (%s)\n", r, r < 0 ? strerror(errno) : "short/wrong");
            break;
        }
    }
    atomic_fetch_add(&ebadf, 1);
    free(buf);
    return NULL;
}

int main(void)
{
    fd = open("/dev/mymem", O_RDWR);
    if (fd < 0) {
        printf("mymem closerace FAILED open: %s\n", strerror(errno));
        return 1;
    }
    uint8_t *pat = calloc(1, MYMEM_SIZE);
    pat[0] = 0xa5;
    pat[MYMEM_SIZE - 1] = 0x5a;
    if (pwrite(fd, pat, MYMEM_SIZE, 0) != MYMEM_SIZE) {
        printf("mymem closerace FAILED fill: %s\n", strerror(errno));
        return 1;
    }
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    /* Let every worker get going before pulling the descriptor away. */
    while (atomic_load(&ok_before) < 4 * WORKERS)
        sched_yield();
    atomic_store(&closed, 1);
    int c = close(fd);
    atomic_store(&closed, 2);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    if (c != 0 || bad != 0 || ebadf != WORKERS)
        printf("mymem closerace FAILED close %d bad %ld ebadf %ld\n", c, (long)bad, (long)ebadf);
    else
        printf("mymem closerace ok before %ld after %ld straddling %ld ebadf %ld\n", (long)ok_before,
               (long)ok_after, (long)straddled, (long)ebadf);
    return 0;
}
