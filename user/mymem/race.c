/*
 * The labs' race: W worker threads each do N rounds of "read the 8-byte
 * counter at offset 0 of /dev/mymem, write it back plus one".
 *
 *   race W N [unlocked|atomic|mutex]
 *
 * unlocked  pread + pwrite with nothing around them: two threads that read
 *           the same value both write value+1, and one increment is lost.
 * atomic    the MYMEM_IOC_ADD ioctl: the kernel does the read-modify-write
 *           under its own lock, so no increment can be lost.
 * mutex     a pthread mutex around the pread + pwrite: correct, but only
 *           among threads that share the mutex (this process).
 *
 * Prints `mymem race MODE W N expected E actual A error P%`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "mymem.h"

enum mode { UNLOCKED, ATOMIC, MUTEX };

static int fd;
static long rounds;
static enum mode mode;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int failed;

static void fail(const char *what)
{
    if (!failed)
        printf("mymem race n/a %s: %s\n", what, strerror(errno));
    failed = 1;
}

static void *worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds && !failed; i++) {
        if (mode == ATOMIC) {
            struct mymem_add a = {.offset = 0, .value = 1};
            if (ioctl(fd, MYMEM_IOC_ADD, &a) != 0)
                fail("ioctl MYMEM_IOC_ADD");
            continue;
        }
        if (mode == MUTEX)
            pthread_mutex_lock(&lock);
        uint64_t v;
        if (pread(fd, &v, 8, 0) != 8)
            fail("pread");
        v++;
        if (pwrite(fd, &v, 8, 0) != 8)
            fail("pwrite");
        if (mode == MUTEX)
            pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: race W N [unlocked|atomic|mutex]\n");
        return 2;
    }
    long workers = atol(argv[1]);
    rounds = atol(argv[2]);
    const char *m = argc > 3 ? argv[3] : "unlocked";
    if (strcmp(m, "unlocked") == 0)
        mode = UNLOCKED;
    else if (strcmp(m, "atomic") == 0)
        mode = ATOMIC;
    else if (strcmp(m, "mutex") == 0)
        mode = MUTEX;
    else {
        fprintf(stderr, "race: unknown mode %s\n", m);
        return 2;
    }
    if (workers < 1 || workers > 1024 || rounds < 0)
        return 2;
    fd = open("/dev/mymem", O_RDWR);
    if (fd < 0) {
        printf("mymem race n/a open /dev/mymem: %s\n", strerror(errno));
        return 1;
    }
    uint64_t zero = 0;
    if (pwrite(fd, &zero, 8, 0) != 8) {
        printf("mymem race n/a reset: %s\n", strerror(errno));
        return 1;
    }
    pthread_t *t = calloc(workers, sizeof *t);
    for (long i = 0; i < workers; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
            printf("mymem race n/a pthread_create %ld\n", i);
            return 1;
        }
    for (long i = 0; i < workers; i++)
        pthread_join(t[i], NULL);
    uint64_t actual = 0;
    if (failed || pread(fd, &actual, 8, 0) != 8)
        return 1;
    uint64_t expected = (uint64_t)workers * (uint64_t)rounds;
    double err = expected ? 100.0 * ((double)expected - (double)actual) / (double)expected : 0.0;
    printf("mymem race %s %ld %ld expected %llu actual %llu error %.2f%%\n", m, workers, rounds,
           (unsigned long long)expected, (unsigned long long)actual, err);
    close(fd);
    return 0;
}
