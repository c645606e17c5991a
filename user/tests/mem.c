/*
 * mem: brk, mmap/munmap/mprotect/madvise/mremap, COW of shared vs private
 * mappings across fork, a private file mapping of our own binary, stack
 * growth, and the error cases.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>

#define PG 4096UL

static long raw_brk(unsigned long addr)
{
    return syscall(SYS_brk, addr);
}

/* Run fn in a child and return its wait status. */
static volatile char *g_addr;

static int child_read(void *arg)
{
    (void)arg;
    volatile char c = *g_addr;
    (void)c;
    return 0;
}

static int child_write(void *arg)
{
    (void)arg;
    *g_addr = 1;
    return 0;
}

static int is_sigsegv(int st)
{
    return st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static int all_equal(const volatile char *p, size_t n, char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void test_brk(void)
{
    /* Done first, before malloc could use brk. */
    long cur = raw_brk(0);
    check(cur > 0, "brk(0) returns the current break");
    long want = cur + 16 * PG;
    long got = raw_brk(want);
    check(got == want, "brk grows by 16 pages");
    char *p = (char *)cur;
    int zero = 1;
    for (long i = 0; i < 16 * (long)PG; i++)
        if (p[i])
            zero = 0;
    check(zero, "new brk memory is zero-filled");
    memset(p, 0x5a, 16 * PG);
    check(all_equal(p, 16 * PG, 0x5a), "brk memory writable");
    check(raw_brk(0) == want, "brk(0) reports the new break");

    /* Shrink, then grow again: the pages come back zeroed. */
    check(raw_brk(cur + PG) == (long)(cur + PG), "brk shrinks");
    check(raw_brk(0) == (long)(cur + PG), "brk(0) after shrink");
    g_addr = (volatile char *)(cur + 8 * PG);
    check(is_sigsegv(run_child(child_read, NULL)), "read above shrunk brk -> SIGSEGV");
    check(raw_brk(want) == want, "brk grows again");
    check(all_equal(p + 2 * PG, 14 * PG, 0), "re-grown brk pages are zero");
    check(p[0] == 0x5a, "brk memory below the shrink point kept");

    /* An impossible break leaves the break unchanged. */
    check(raw_brk(0x7ffffffff000UL) == want, "brk(huge) fails: returns old break");
    check(raw_brk(cur) == cur, "brk restored");
    check(sbrk(0) == (void *)cur, "sbrk(0) == brk");
}

static void test_anon(void)
{
    size_t n = 16 * PG;
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(p != MAP_FAILED, "mmap anonymous 16 pages");
    if (p == MAP_FAILED)
        return;
    check(((uintptr_t)p & (PG - 1)) == 0, "mmap result page aligned");
    check(all_equal(p, n, 0), "anonymous memory zero-filled");
    for (size_t i = 0; i < n; i += PG)
        p[i] = (char)(i / PG + 1);
    int good = 1;
    for (size_t i = 0; i < n; i += PG)
        if (p[i] != (char)(i / PG + 1))
            good = 0;
    check(good, "touching every page");

    /* munmap the middle page: the rest survives, the hole faults. */
    check(munmap(p + 4 * PG, PG) == 0, "munmap one page in the middle");
    g_addr = p + 4 * PG;
    check(is_sigsegv(run_child(child_read, NULL)), "read of unmapped page -> child SIGSEGV");
    check(p[3 * PG] == 4 && p[5 * PG] == 6, "neighbours of the hole intact");

    /* MAP_FIXED over an existing mapping replaces it. */
    memset(p, 'A', 4 * PG);
    char *q = mmap(p + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    check(q == p + PG, "MAP_FIXED returns the requested address");
    check(all_equal(p + PG, PG, 0), "MAP_FIXED page is fresh (zero)");
    check(all_equal(p, PG, 'A') && all_equal(p + 2 * PG, 2 * PG, 'A'), "pages around MAP_FIXED intact");

    /* MAP_FIXED_NOREPLACE over an existing mapping fails. */
    EXPECT_ERR(EEXIST, "mmap(MAP_FIXED_NOREPLACE over mapping)",
               mmap(p, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));

    /* mprotect read-only: reading is fine, writing faults. */
    check(mprotect(p, PG, PROT_READ) == 0, "mprotect PROT_READ");
    check(p[0] == 'A', "read of read-only page");
    g_addr = p;
    check(is_sigsegv(run_child(child_write, NULL)), "write to read-only page -> child SIGSEGV");
    check(mprotect(p, PG, PROT_READ | PROT_WRITE) == 0, "mprotect back to read-write");
    p[0] = 'B';
    check(p[0] == 'B', "write after mprotect back");

    /* PROT_NONE: even reads fault. */
    check(mprotect(p + 2 * PG, PG, PROT_NONE) == 0, "mprotect PROT_NONE");
    g_addr = p + 2 * PG;
    check(is_sigsegv(run_child(child_read, NULL)), "read of PROT_NONE page -> child SIGSEGV");
    check(mprotect(p + 2 * PG, PG, PROT_READ) == 0, "mprotect PROT_NONE -> PROT_READ");
    check(p[2 * PG] == 'A', "contents survive PROT_NONE");

    /* madvise(MADV_DONTNEED) zeroes private anonymous pages. */
    p[6 * PG] = 'x';
    check(madvise(p + 6 * PG, PG, MADV_DONTNEED) == 0, "madvise(MADV_DONTNEED)");
    check(all_equal(p + 6 * PG, PG, 0), "MADV_DONTNEED page reads back zero");

    check(munmap(p, n) == 0, "munmap whole range (with a hole in it)");
    check(munmap(p, n) == 0, "munmap of already-unmapped range succeeds");
}

static volatile char *g_priv;
static volatile int *g_shared;

static int child_cow(void *arg)
{
    (void)arg;
    int ok = g_priv[0] == 'p' && g_shared[0] == 1;
    g_priv[0] = 'c';
    g_shared[0] = 2;
    g_shared[1] = 0x1234;
    return ok ? 0 : 1;
}

static void test_shared(void)
{
    char *priv = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int *sh = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    check(priv != MAP_FAILED && sh != MAP_FAILED, "mmap private + shared anonymous");
    if (priv == MAP_FAILED || sh == MAP_FAILED)
        return;
    priv[0] = 'p';
    sh[0] = 1;
    g_priv = priv;
    g_shared = sh;
    int st = run_child(child_cow, NULL);
    check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child sees parent's values");
    check(priv[0] == 'p', "private mapping: child's write invisible to parent");
    check(sh[0] == 2 && sh[1] == 0x1234, "shared mapping: child's write visible to parent");
    munmap(priv, PG);
    munmap(sh, PG);
}

static void test_file(const char *self)
{
    int fd = open(self, O_RDONLY);
    check(fd >= 0, "open own binary read-only");
    if (fd < 0)
        return;
    unsigned char *m = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0);
    check(m != MAP_FAILED, "mmap own binary PROT_READ MAP_PRIVATE");
    if (m == MAP_FAILED) {
        close(fd);
        return;
    }
    check(memcmp(m, "\x7f" "ELF", 4) == 0, "file mapping starts with \\x7fELF");
    char hdr[64];
    check(read(fd, hdr, sizeof hdr) == (ssize_t)sizeof hdr && memcmp(hdr, m, sizeof hdr) == 0,
          "read() agrees with the mapping");

    /* A writable private file mapping: writes are private. */
    unsigned char *w = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    check(w != MAP_FAILED, "mmap own binary PROT_WRITE MAP_PRIVATE (fd is O_RDONLY)");
    if (w != MAP_FAILED) {
        w[0] = 'Z';
        check(w[0] == 'Z' && m[0] == 0x7f, "private write does not reach other mappings");
        munmap(w, PG);
    }
    EXPECT_ERR(EACCES, "mmap(MAP_SHARED, PROT_WRITE) of O_RDONLY fd",
               mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    EXPECT_ERR(EINVAL, "mmap(file, unaligned offset)", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 100));
    munmap(m, PG);
    close(fd);
    EXPECT_ERR(EBADF, "mmap(closed fd)", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0));
}

static void test_mremap(void)
{
    char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(p != MAP_FAILED, "mmap for mremap"))
        return;
    p[0] = 'm';
    p[PG] = 'n';
    char *q = mremap(p, 2 * PG, 64 * PG, MREMAP_MAYMOVE);
    check(q != MAP_FAILED, "mremap grow with MREMAP_MAYMOVE");
    if (q == MAP_FAILED)
        return;
    check(q[0] == 'm' && q[PG] == 'n', "mremap preserves contents");
    check(all_equal(q + 2 * PG, 62 * PG, 0), "mremap new tail zero");
    q[63 * PG] = 1;
    char *r = mremap(q, 64 * PG, PG, 0);
    check(r == q, "mremap shrink in place");
    EXPECT_ERR(EINVAL, "mremap(unaligned)", mremap(q + 1, PG, 2 * PG, MREMAP_MAYMOVE));
    munmap(r, PG);
}

static void test_big(void)
{
    size_t n = 32UL << 20;
    unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(p != MAP_FAILED, "mmap 32 MiB"))
        return;
    for (size_t i = 0; i < n; i += PG)
        p[i] = (unsigned char)(i >> 12);
    unsigned long sum = 0;
    for (size_t i = 0; i < n; i += PG)
        sum += p[i];
    unsigned long want = 0;
    for (size_t i = 0; i < n; i += PG)
        want += (unsigned char)(i >> 12);
    check(sum == want, "32 MiB touched and read back");
    check(munmap(p, n) == 0, "munmap 32 MiB");
}

static unsigned long deep(int depth, volatile char *prev)
{
    volatile char frame[4096];
    frame[0] = (char)depth;
    frame[4095] = prev ? prev[0] : 0;
    if (depth == 0)
        return frame[0] + frame[4095];
    return deep(depth - 1, frame) + frame[0];
}

static void test_stack(void)
{
    /* About 2 MiB of stack: the stack grows on demand. */
    unsigned long r = deep(512, NULL);
    unsigned long want = (unsigned long)(long)(char)1; /* depth 0: prev[0] */
    for (int d = 1; d <= 512; d++)
        want += (unsigned long)(long)(char)d;
    check(r == want, "stack grows to 2 MiB");
}

static void test_errors(void)
{
    EXPECT_ERR(EINVAL, "mmap(len 0)", mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_ERR(EINVAL, "mmap(neither SHARED nor PRIVATE)", mmap(NULL, PG, PROT_READ, MAP_ANONYMOUS, -1, 0));
    EXPECT_ERR(EINVAL, "mmap(MAP_FIXED unaligned addr)",
               mmap((void *)0x10000001, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
    EXPECT_ERR(ENOMEM, "mmap(1<<46 bytes)",
               mmap(NULL, 1UL << 46, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_ERR(ENOMEM, "mmap(1<<47 bytes)",
               mmap(NULL, 1UL << 47, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_ERR(EBADF, "mmap(non-anonymous, fd -1)", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, -1, 0));

    char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_ERR(EINVAL, "munmap(unaligned)", munmap(p + 1, PG));
    EXPECT_ERR(EINVAL, "munmap(len 0)", munmap(p, 0));
    /* raw syscall: musl's mprotect() wrapper rounds the address down */
    EXPECT_ERR(EINVAL, "mprotect(unaligned)", syscall(SYS_mprotect, p + 1, PG, PROT_READ));
    EXPECT_ERR(EINVAL, "mprotect(bad prot bits)", mprotect(p, PG, 0x1000));
    munmap(p + PG, PG);
    EXPECT_ERR(ENOMEM, "mprotect(range with unmapped page)", mprotect(p, 2 * PG, PROT_READ));
    EXPECT_ERR(EINVAL, "madvise(unaligned)", madvise(p + 1, PG, MADV_DONTNEED));
    munmap(p, PG);
}

/* Kernel copies into and out of fresh (not yet faulted-in) pages at odd
 * offsets: every page crossing faults in the middle of the copy, and the
 * copy must resume exactly where it stopped. */
static void test_copy_across_fresh_pages(void)
{
    int p2[2];
    if (!check(pipe(p2) == 0, "pipe for the page-crossing copies"))
        return;
    char *src = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *dst = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(src != MAP_FAILED && dst != MAP_FAILED, "two fresh 4-page mappings"))
        return;
    size_t len = 2 * PG + 1001;
    for (size_t i = 0; i < len; i++)
        src[3 + i] = (char)(i * 13 + 7);
    /* src bytes [3, 3 + len) now hold the pattern; write them from an odd
     * offset, read them back into untouched pages at another odd offset. */
    check(write(p2[1], src + 3, 4096) == 4096 && write(p2[1], src + 3 + 4096, len - 4096) == (ssize_t)(len - 4096),
          "write from an odd offset across pages");
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(p2[0], dst + 4093 + got, len - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    int same = got == len;
    for (size_t i = 0; same && i < len; i++)
        same = dst[4093 + i] == (char)(i * 13 + 7);
    check(same, "read into untouched pages at an odd offset: every byte arrives");
    check(dst[4092] == 0 && dst[4093 + len] == 0, "bytes around the copy untouched");
    munmap(src, 4 * PG);
    munmap(dst, 4 * PG);
    close(p2[0]);
    close(p2[1]);
}

int main(int argc, char **argv)
{
    (void)argc;
    t_init("mem");
    test_brk();
    test_anon();
    test_shared();
    test_file(argv[0]);
    test_mremap();
    test_big();
    test_stack();
    test_errors();
    test_copy_across_fresh_pages();
    return t_done();
}
