/*
 * hello_glibc: a static glibc program (malloc, a pthread, clock_gettime).
 * Exercises glibc's static start-up path (TLS setup, IRELATIVE relocs,
 * set_robust_list/rseq, ...) which differs from musl's.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int checks, failed;

static void check(int cond, const char *what)
{
    checks++;
    if (cond) {
        printf("%s: ok\n", what);
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}

static __thread int tls_counter = 3;

static void *worker(void *arg)
{
    long n = (long)arg;
    long sum = 0;
    for (long i = 1; i <= n; i++)
        sum += i;
    tls_counter += 100;
    int tid_differs = syscall(SYS_gettid) != getpid();
    return (void *)(sum * 2 + (tls_counter == 103 && tid_differs));
}

int main(int argc, char **argv)
{
    (void)argc;
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *base = strrchr(argv[0], '/');
    printf("hello from glibc (%s)\n", base ? base + 1 : argv[0]);

    /* malloc: small, large (mmap-backed), realloc, calloc. */
    char *small = malloc(100);
    strcpy(small, "malloc works");
    check(strcmp(small, "malloc works") == 0, "malloc(100)");
    size_t big_n = 8 << 20;
    unsigned char *big = malloc(big_n);
    check(big != NULL, "malloc(8 MiB)");
    memset(big, 0xab, big_n);
    check(big[0] == 0xab && big[big_n - 1] == 0xab, "8 MiB block writable");
    small = realloc(small, 100000);
    check(small && strcmp(small, "malloc works") == 0, "realloc keeps contents");
    int *z = calloc(1000, sizeof(int));
    int allzero = 1;
    for (int i = 0; i < 1000; i++)
        if (z[i])
            allzero = 0;
    check(allzero, "calloc zeroes");
    free(z);
    free(big);
    free(small);
    void *ptrs[1000];
    for (int i = 0; i < 1000; i++)
        ptrs[i] = malloc((size_t)(i % 37 + 1) * 16);
    for (int i = 0; i < 1000; i += 2)
        free(ptrs[i]);
    for (int i = 1; i < 1000; i += 2)
        free(ptrs[i]);
    check(1, "1000 malloc/free");

    /* A pthread. */
    pthread_t t;
    void *ret = NULL;
    check(pthread_create(&t, NULL, worker, (void *)1000L) == 0, "pthread_create");
    check(pthread_join(t, &ret) == 0, "pthread_join");
    check((long)ret == 500500L * 2 + 1, "thread result, TLS and tid");
    check(tls_counter == 3, "main thread TLS untouched");

    /* Clocks. */
    struct timespec a, b;
    check(clock_gettime(CLOCK_MONOTONIC, &a) == 0, "clock_gettime(CLOCK_MONOTONIC)");
    struct timespec req = { 0, 5 * 1000000L };
    nanosleep(&req, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long dt = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    check(dt >= 5000000LL, "monotonic advanced across nanosleep(5 ms)");
    check(clock_gettime(CLOCK_REALTIME, &a) == 0 && a.tv_sec > 1600000000L, "CLOCK_REALTIME after 2020");

    printf("hello_glibc: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
