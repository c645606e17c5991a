/*
 * mmap_file: file mappings of a tmpfs file, private and shared, against
 * the file's own contents: what write() does to a mapping and what a
 * store through a mapping does to the file, across fork too; SIGBUS past
 * the end of a mapping, and after truncating a mapped file; msync; and
 * the error cases.  Works under
 * /tmp/mmap_file (a tmpfs on Kiln; on the host whatever /tmp is, which
 * behaves the same for all of this through the page cache).
 */
#include "common.h"
#include <fcntl.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define PG 4096UL
#define DIR_ "/tmp/mmap_file"
#define FILE_ DIR_ "/data"

static int fd;

/* Byte i of the file as first written: a pattern no page repeats. */
static char pattern(size_t i)
{
    return (char)('a' + (i * 7 + i / PG) % 26);
}

static char file_byte(off_t at)
{
    char c = 0;
    if (pread(fd, &c, 1, at) != 1)
        return -1;
    return c;
}

static void setup(void)
{
    mkdir(DIR_, 0755);
    unlink(FILE_);
    fd = open(FILE_, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0, "create " FILE_);
    /* Three whole pages and 100 bytes. */
    static char buf[3 * PG + 100];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = pattern(i);
    check(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "write 3 pages + 100 bytes");
}

static void test_private(void)
{
    char *p = mmap(NULL, 4 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
    if (!check(p != MAP_FAILED, "mmap private read-only"))
        return;
    int same = 1;
    for (size_t i = 0; i < 3 * PG + 100; i++)
        same &= p[i] == pattern(i);
    check(same, "private mapping shows the file's bytes");
    int zero = 1;
    for (size_t i = 3 * PG + 100; i < 4 * PG; i++)
        zero &= p[i] == 0;
    check(zero, "bytes past the end of the file in the last page read 0");

    /* An untouched-by-us private page still follows the file. */
    check(pwrite(fd, "X", 1, PG + 5) == 1, "pwrite into page 1");
    check(p[PG + 5] == 'X', "private mapping sees a later write() to a page it did not write");
    check(munmap(p, 4 * PG) == 0, "munmap private read-only");

    char *w = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (!check(w != MAP_FAILED, "mmap private read-write"))
        return;
    w[10] = 'Q';
    check(w[10] == 'Q', "store through a private mapping");
    check(file_byte(10) == pattern(10), "the file does not see a private store");
    check(pwrite(fd, "Z", 1, 11) == 1, "pwrite into the page we copied");
    check(w[11] == pattern(11), "a copied page no longer follows the file");
    check(w[PG + 5] == 'X', "the other page still shows the file");
    check(pwrite(fd, "Y", 1, PG + 6) == 1 && w[PG + 6] == 'Y', "and keeps following it");
    /* Put the file back. */
    char orig[3] = { pattern(11), pattern(PG + 5), pattern(PG + 6) };
    pwrite(fd, &orig[0], 1, 11);
    pwrite(fd, &orig[1], 1, PG + 5);
    pwrite(fd, &orig[2], 1, PG + 6);
    check(munmap(w, 2 * PG) == 0, "munmap private read-write");
}

static int child_store(void *arg)
{
    char *s = arg;
    s[2 * PG + 1] = '#';
    return 0;
}

static void test_shared(void)
{
    char *s = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!check(s != MAP_FAILED, "mmap shared read-write"))
        return;
    check(s[PG] == pattern(PG), "shared mapping shows the file's bytes");
    s[20] = '!';
    check(file_byte(20) == '!', "a store through a shared mapping reaches the file");
    check(pwrite(fd, "W", 1, 21) == 1 && s[21] == 'W', "a write() reaches the shared mapping");

    char *s2 = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    check(s2 != MAP_FAILED && s2[20] == '!', "a second shared mapping sees the first one's store");

    int st = run_child(child_store, s);
    check(st == 0, "child stores through the inherited shared mapping: %s", status_str(st));
    check(s[2 * PG + 1] == '#' && file_byte(2 * PG + 1) == '#', "parent and file see the child's store");

    /* The last page is partial: the tail past the end is 0, and stores
     * there do not make the file longer. */
    check(s[3 * PG + 100] == 0, "shared mapping past the end of the file reads 0");
    s[3 * PG + 200] = 'T';
    struct stat sb;
    check(fstat(fd, &sb) == 0 && sb.st_size == (off_t)(3 * PG + 100), "a store past the end leaves the size");

    EXPECT_OK("msync(MS_SYNC)", msync(s, 4 * PG, MS_SYNC));
    EXPECT_OK("msync(MS_ASYNC)", msync(s, PG, MS_ASYNC));
    EXPECT_OK("msync(MS_INVALIDATE)", msync(s, PG, MS_INVALIDATE));
    EXPECT_OK("msync(len 0)", msync(s, 0, MS_SYNC));
    EXPECT_ERR(EINVAL, "msync(MS_ASYNC|MS_SYNC)", msync(s, PG, MS_ASYNC | MS_SYNC));
    EXPECT_ERR(EINVAL, "msync(unknown flag)", msync(s, PG, 0x100));
    EXPECT_ERR(EINVAL, "msync(unaligned)", msync(s + 1, PG, MS_SYNC));

    /* Restore the bytes we changed. */
    char b[2] = { pattern(20), pattern(21) };
    pwrite(fd, b, 2, 20);
    char c = pattern(2 * PG + 1);
    pwrite(fd, &c, 1, 2 * PG + 1);
    if (s2 != MAP_FAILED)
        munmap(s2, PG);
    check(munmap(s, 4 * PG) == 0, "munmap shared");
    EXPECT_ERR(ENOMEM, "msync(unmapped range)", msync(s, PG, MS_SYNC));
}

static volatile char *g_addr;
static int child_touch(void *arg)
{
    (void)arg;
    volatile char c = *g_addr;
    (void)c;
    return 0;
}

static sigjmp_buf bus_env;
static volatile int bus_code;
static void on_bus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    bus_code = si->si_code;
    siglongjmp(bus_env, 1);
}

static void test_past_end(void)
{
    /* Two pages mapped over a 3-page-and-a-bit file cut to one page. */
    int f2 = open(DIR_ "/small", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(f2 >= 0 && ftruncate(f2, PG) == 0, "a one-page file");
    char *s = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, f2, 0);
    if (!check(s != MAP_FAILED, "mmap shared, two pages over a one-page file"))
        return;
    check(s[0] == 0 && s[PG - 1] == 0, "the file's hole reads 0 through the mapping");
    g_addr = s + PG;
    int st = run_child(child_touch, NULL);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS, "touching a page past the end: %s", status_str(st));

    struct sigaction sa = { 0 };
    sa.sa_sigaction = on_bus;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    bus_code = 0;
    if (sigsetjmp(bus_env, 1) == 0) {
        volatile char c = s[PG + 10];
        (void)c;
    }
    check(bus_code == BUS_ADRERR, "SIGBUS past the end has si_code BUS_ADRERR");
    signal(SIGBUS, SIG_DFL);

    check(ftruncate(f2, 2 * PG) == 0, "grow the file to two pages");
    check(s[PG + 10] == 0, "the grown page maps and reads 0");
    s[PG + 10] = 'g';
    char c = 0;
    check(pread(f2, &c, 1, PG + 10) == 1 && c == 'g', "a store into the grown page reaches the file");
    munmap(s, 2 * PG);
    close(f2);
}

static int touch_raises_sigbus(volatile char *addr)
{
    g_addr = addr;
    int st = run_child(child_touch, NULL);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS;
}

/*
 * Truncating a mapped file: every page past the new end leaves every
 * mapping, private copies included, and touching one raises SIGBUS; the
 * page holding the new end reads 0 past it; growing the file again maps
 * fresh zero pages. A private mapping longer than its file raises SIGBUS
 * past the end as well. (The children see their parent's page tables, so
 * a stale page in the parent would show up there.)
 */
static void test_truncate_mapped(void)
{
    int f = open(DIR_ "/cut", O_RDWR | O_CREAT | O_TRUNC, 0644);
    static char buf[3 * PG];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = pattern(i);
    check(f >= 0 && write(f, buf, sizeof buf) == (ssize_t)sizeof buf, "a three-page file to cut");
    char *s = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, f, 0);
    if (!check(s != MAP_FAILED && p != MAP_FAILED, "mapped shared and private"))
        return;
    check(touch_raises_sigbus(p + 3 * PG), "private: a page wholly past the end raises SIGBUS");
    int seen = s[0] == pattern(0) && s[2 * PG] == pattern(2 * PG) && p[PG] == pattern(PG);
    p[2 * PG] = 'P';
    check(seen && p[2 * PG] == 'P', "both mappings show the file; one private page is a copy");

    check(ftruncate(f, PG + 100) == 0, "ftruncate to one page and 100 bytes");
    check(s[0] == pattern(0) && p[0] == pattern(0), "the first page stays mapped in both");
    check(s[PG + 99] == pattern(PG + 99) && s[PG + 100] == 0 && s[2 * PG - 1] == 0,
          "shared: the page holding the new end reads 0 past it");
    check(p[PG + 99] == pattern(PG + 99) && p[PG + 100] == 0, "private, not yet copied: the same");
    check(touch_raises_sigbus(s + 2 * PG), "shared: a page past the new end raises SIGBUS");
    check(touch_raises_sigbus(p + 2 * PG), "private: the copied page past the new end is gone (SIGBUS)");

    check(ftruncate(f, 3 * PG) == 0, "grow it back to three pages");
    check(s[2 * PG] == 0 && s[2 * PG - 1] == 0, "shared: the regrown bytes read 0");
    check(p[2 * PG] == 0, "private: the regrown page reads 0, not the old copy");

    int g = open(DIR_ "/cut", O_RDWR | O_TRUNC);
    check(g >= 0 && touch_raises_sigbus(s), "after open(O_TRUNC) even the first page raises SIGBUS");
    check(touch_raises_sigbus(p), "in the private mapping too");
    munmap(s, 3 * PG);
    munmap(p, 4 * PG);
    close(g);
    close(f);
    unlink(DIR_ "/cut");
}

static void test_errors(void)
{
    int ro = open(FILE_, O_RDONLY);
    char *s = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
    if (check(s != MAP_FAILED, "mmap shared read-only of an O_RDONLY fd")) {
        EXPECT_ERR(EACCES, "mprotect(PROT_WRITE) of that mapping", mprotect(s, PG, PROT_READ | PROT_WRITE));
        check(mprotect(s, PG, PROT_NONE) == 0, "mprotect(PROT_NONE) of it is fine");
        munmap(s, PG);
    }
    EXPECT_ERR(EACCES, "mmap(MAP_SHARED, PROT_WRITE) of an O_RDONLY fd",
               (long)mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0));
    /* A private writable mapping of a read-only fd is fine. */
    char *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
    check(p != MAP_FAILED, "mmap(MAP_PRIVATE, PROT_WRITE) of an O_RDONLY fd");
    if (p != MAP_FAILED) {
        check(mprotect(p, PG, PROT_READ | PROT_WRITE | PROT_EXEC) == 0, "mprotect of a private file mapping");
        munmap(p, PG);
    }
    close(ro);
    int wo = open(FILE_, O_WRONLY);
    EXPECT_ERR(EACCES, "mmap of an O_WRONLY fd", (long)mmap(NULL, PG, PROT_READ, MAP_SHARED, wo, 0));
    close(wo);
    int pfd[2];
    if (pipe(pfd) == 0) {
        EXPECT_ERR(ENODEV, "mmap(MAP_SHARED) of a pipe", (long)mmap(NULL, PG, PROT_READ, MAP_SHARED, pfd[0], 0));
        close(pfd[0]);
        close(pfd[1]);
    }
    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    EXPECT_ERR(ENODEV, "mmap(MAP_SHARED) of a directory", (long)mmap(NULL, PG, PROT_READ, MAP_SHARED, dfd, 0));
    close(dfd);
    EXPECT_ERR(EINVAL, "mmap(MAP_SHARED) with an unaligned offset",
               (long)mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 100));
}

static void test_maps_line(void)
{
    char *s = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
    if (!check(s != MAP_FAILED, "mmap shared at file offset 4096"))
        return;
    char want[64];
    snprintf(want, sizeof want, "%lx-", (unsigned long)s);
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512], perms[8] = "", path[256] = "";
    unsigned long off = 0;
    while (m && fgets(line, sizeof line, m)) {
        if (strncmp(line, want, strlen(want)) == 0) {
            sscanf(line, "%*s %7s %lx %*s %*s %255s", perms, &off, path);
            break;
        }
    }
    if (m)
        fclose(m);
    check(strcmp(perms, "rw-s") == 0, "/proc/self/maps shows rw-s (got %s)", perms);
    check(off == PG, "/proc/self/maps shows offset 1000 (got %lx)", off);
    check(strcmp(path, FILE_) == 0, "/proc/self/maps names the file (got %s)", path);
    munmap(s, PG);
}

int main(void)
{
    t_init("mmap_file");
    setup();
    test_private();
    test_shared();
    test_past_end();
    test_truncate_mapped();
    test_errors();
    test_maps_line();
    close(fd);
    unlink(FILE_);
    unlink(DIR_ "/small");
    rmdir(DIR_);
    return t_done();
}
