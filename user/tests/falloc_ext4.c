/*
 * falloc_ext4: fallocate(2)'s modes on ext4 (the host's /tmp, and an ext4
 * /tmp in Kiln's storage stage: `files` part; not in the general run,
 * whose /tmp is tmpfs).  For each mode, on a file of known bytes whose
 * pages are cached, partly dirty (written, no fsync) and partly mapped
 * shared: the bytes read back and through the mapping, the size, st_blocks
 * before and after fsync, and Linux's errnos
 * (misaligned COLLAPSE/INSERT, COLLAPSE reaching the end, INSERT at the
 * end, EFBIG, KEEP_SIZE with them, PUNCH without KEEP_SIZE, mixed modes).
 * Also st_blocks right after a mode-0 fallocate over dirty (delayed)
 * pages, which Linux counts at once.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define DIR_ "/tmp/falloc_ext4"
#define EXT4_MAGIC 0xEF53
#define PG 4096L

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#define FALLOC_FL_COLLAPSE_RANGE 0x08
#define FALLOC_FL_ZERO_RANGE 0x10
#define FALLOC_FL_INSERT_RANGE 0x20
#ifndef SEEK_DATA
#define SEEK_DATA 3
#define SEEK_HOLE 4
#endif

static unsigned char model[1 << 20], back[1 << 20];
static long model_size;

static long falloc(int fd, int mode, long off, long len)
{
    return syscall(SYS_fallocate, fd, mode, off, len) == 0 ? 0 : -errno;
}

/* Mixed modes: Linux 6.1 answers EINVAL for some of these and later
 * kernels EOPNOTSUPP for all; the host's version is not Kiln's choice,
 * so either counts as refused. */
static const char *refusal(long r)
{
    return r == -EINVAL || r == -EOPNOTSUPP ? "refused" : errname(-r);
}

/* A byte that names its offset and a generation. */
static unsigned char byte_at(long i, int gen)
{
    return (unsigned char)((i * 7 + i / 4096 + gen * 31) | 1);
}

/* A new file of `pages` pages, written and synced (its blocks allocated
 * in one run, on Linux and in Kiln alike), then pages [dirty, pages)
 * written again: cached and dirty, over allocated blocks (so no delayed
 * allocation is pending, whose extents could differ). */
static int fresh(const char *name, long pages, long dirty, int gen)
{
    char path[128];
    snprintf(path, sizeof path, DIR_ "/%s", name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    model_size = pages * PG;
    for (long i = 0; i < model_size; i++)
        model[i] = byte_at(i, gen);
    if (pwrite(fd, model, model_size, 0) != model_size || fsync(fd) != 0)
        return -1;
    for (long i = dirty * PG; i < model_size; i++)
        model[i] = byte_at(i, gen + 1);
    long n = model_size - dirty * PG;
    if (pwrite(fd, model + dirty * PG, n, dirty * PG) != n)
        return -1;
    return fd;
}

static int matches(int fd)
{
    struct stat st;
    fstat(fd, &st);
    if (st.st_size != model_size)
        return 0;
    long got = pread(fd, back, model_size, 0);
    return got == model_size && memcmp(back, model, model_size) == 0;
}

static void facts(const char *what, int fd)
{
    struct stat st;
    fstat(fd, &st);
    printf("%s: size %ld blocks %ld bytes as modelled %d", what, (long)st.st_size, (long)st.st_blocks,
           matches(fd));
    printf("\n");
    fsync(fd);
    fstat(fd, &st);
    printf("%s: after fsync size %ld blocks %ld bytes as modelled %d\n", what, (long)st.st_size,
           (long)st.st_blocks, matches(fd));
}

static void model_zero(long off, long len)
{
    long end = off + len > model_size ? model_size : off + len;
    if (off < end)
        memset(model + off, 0, end - off);
}

static void test_punch(void)
{
    int fd = fresh("punch", 16, 8, 1);
    check(fd >= 0, "punch: file made");
    /* A shared mapping of the whole file, touched (pages in the cache
     * and mapped), and one page dirtied through it. */
    unsigned char *m = mmap(0, 16 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "punch: mapped");
    m[3 * PG + 5] = 'M';
    model[3 * PG + 5] = 'M';
    /* Without KEEP_SIZE: EOPNOTSUPP. */
    EXPECT_ERR(EOPNOTSUPP, "punch: without KEEP_SIZE", syscall(SYS_fallocate, fd, FALLOC_FL_PUNCH_HOLE, 0L, PG));
    /* Pages 2..5 whole, plus part of 1 and 6: both clean and dirty. */
    long off = 2 * PG - 100, len = 4 * PG + 300;
    check(falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) == 0, "punch: clean half");
    model_zero(off, len);
    off = 9 * PG + 17, len = 3 * PG;
    check(falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) == 0, "punch: dirty half");
    model_zero(off, len);
    /* The mapping sees the holes. */
    int seen = 1;
    for (long i = 0; i < model_size; i++)
        if (m[i] != model[i])
            seen = 0;
    check(seen, "punch: the shared mapping shows the holes");
    /* (No store into a punched page: Linux 6.18's page_mkwrite reserves
     * blocks for a whole large folio, a size Kiln cannot know.) */
    facts("punch", fd);
    /* Past the end: nothing, and 0; across the end: up to it. */
    check(falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 20 * PG, PG) == 0, "punch: past the end is 0");
    check(falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 15 * PG, 4 * PG) == 0, "punch: across the end");
    model_zero(15 * PG, 4 * PG);
    facts("punch end", fd);
    munmap(m, 16 * PG);
    close(fd);
    /* On an O_APPEND descriptor too. */
    fd = open(DIR_ "/punch", O_RDWR | O_APPEND);
    check(falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG) == 0, "punch: O_APPEND descriptor");
    close(fd);
}

static void test_zero(void)
{
    int fd = fresh("zero", 16, 8, 2);
    check(fd >= 0, "zero: file made");
    long off = PG + 1000, len = 5 * PG;
    check(falloc(fd, FALLOC_FL_ZERO_RANGE, off, len) == 0, "zero: inside, clean and dirty pages");
    model_zero(off, len);
    off = 10 * PG, len = 2 * PG;
    check(falloc(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len) == 0, "zero: KEEP_SIZE inside");
    model_zero(off, len);
    facts("zero", fd);
    /* Past the end with KEEP_SIZE: blocks, no size. */
    check(falloc(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 16 * PG, 4 * PG) == 0, "zero: KEEP_SIZE past the end");
    facts("zero keep past end", fd);
    /* Past the end without: the size grows to the range's end. */
    check(falloc(fd, FALLOC_FL_ZERO_RANGE, 15 * PG + 10, 2 * PG) == 0, "zero: past the end grows");
    memset(model + model_size, 0, 17 * PG + 10 - model_size);
    model_zero(15 * PG + 10, 2 * PG);
    model_size = 17 * PG + 10;
    facts("zero grow", fd);
    close(fd);
}

static void test_collapse(void)
{
    int fd = fresh("collapse", 16, 8, 3);
    check(fd >= 0, "collapse: file made");
    EXPECT_ERR(EINVAL, "collapse: offset not block-aligned", syscall(SYS_fallocate, fd, FALLOC_FL_COLLAPSE_RANGE, 100L, PG));
    EXPECT_ERR(EINVAL, "collapse: length not block-aligned", syscall(SYS_fallocate, fd, FALLOC_FL_COLLAPSE_RANGE, PG, 100L));
    EXPECT_ERR(EINVAL, "collapse: reaching the end", syscall(SYS_fallocate, fd, FALLOC_FL_COLLAPSE_RANGE, 8 * PG, 8 * PG));
    EXPECT_ERR(EINVAL, "collapse: past the end", syscall(SYS_fallocate, fd, FALLOC_FL_COLLAPSE_RANGE, 8 * PG, 9 * PG));
    printf("collapse: with KEEP_SIZE: %s\n",
           refusal(falloc(fd, FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_KEEP_SIZE, PG, PG)));
    printf("collapse: with ZERO_RANGE: %s\n",
           refusal(falloc(fd, FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_ZERO_RANGE, PG, PG)));
    unsigned char *m = mmap(0, 16 * PG, PROT_READ, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED && m[12 * PG] == model[12 * PG], "collapse: mapped");
    /* Across the clean/dirty boundary. */
    check(falloc(fd, FALLOC_FL_COLLAPSE_RANGE, 6 * PG, 4 * PG) == 0, "collapse: 4 pages at 6");
    memmove(model + 6 * PG, model + 10 * PG, 6 * PG);
    model_size -= 4 * PG;
    int seen = 1;
    for (long i = 0; i < model_size; i++)
        if (m[i] != model[i])
            seen = 0;
    check(seen, "collapse: the shared mapping shows the moved bytes");
    facts("collapse", fd);
    munmap(m, 16 * PG);
    close(fd);
}

static void test_insert(void)
{
    int fd = fresh("insert", 16, 8, 4);
    check(fd >= 0, "insert: file made");
    EXPECT_ERR(EINVAL, "insert: offset not block-aligned", syscall(SYS_fallocate, fd, FALLOC_FL_INSERT_RANGE, 100L, PG));
    EXPECT_ERR(EINVAL, "insert: length not block-aligned", syscall(SYS_fallocate, fd, FALLOC_FL_INSERT_RANGE, PG, 100L));
    EXPECT_ERR(EINVAL, "insert: at the end", syscall(SYS_fallocate, fd, FALLOC_FL_INSERT_RANGE, 16 * PG, PG));
    EXPECT_ERR(EFBIG, "insert: past the largest file", syscall(SYS_fallocate, fd, FALLOC_FL_INSERT_RANGE, 0L, 0xffffffffL * PG));
    printf("insert: with KEEP_SIZE: %s\n", errname(-falloc(fd, FALLOC_FL_INSERT_RANGE | FALLOC_FL_KEEP_SIZE, PG, PG)));
    printf("insert: with PUNCH_HOLE: %s\n",
           errname(-falloc(fd, FALLOC_FL_INSERT_RANGE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PG, PG)));
    check(falloc(fd, FALLOC_FL_INSERT_RANGE, 5 * PG, 3 * PG) == 0, "insert: 3 pages at 5");
    memmove(model + 8 * PG, model + 5 * PG, 11 * PG);
    memset(model + 5 * PG, 0, 3 * PG);
    model_size += 3 * PG;
    facts("insert", fd);
    /* Written into the new hole and past the old end. */
    memset(model + 6 * PG, 'i', 100);
    check(pwrite(fd, model + 6 * PG, 100, 6 * PG) == 100, "insert: write into the hole");
    facts("insert write", fd);
    close(fd);
}

static void test_modes(void)
{
    int fd = fresh("modes", 4, 4, 5);
    printf("modes: PUNCH_HOLE|ZERO_RANGE: %s\n",
           refusal(falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, PG)));
    printf("modes: ZERO_RANGE|INSERT_RANGE: %s\n", refusal(falloc(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_INSERT_RANGE, 0, PG)));
    printf("modes: unknown bit 0x100: %s\n", errname(-falloc(fd, 0x100, 0, PG)));
    printf("modes: ZERO_RANGE to 2^63-1: %s\n", errname(-falloc(fd, FALLOC_FL_ZERO_RANGE, PG, 0x7fffffffffffffffL - PG)));
    printf("modes: ZERO_RANGE past the largest file: %s\n",
           errname(-falloc(fd, FALLOC_FL_ZERO_RANGE, 0xffffffffL * PG, PG)));
    printf("modes: len 0: %s\n", errname(-falloc(fd, FALLOC_FL_ZERO_RANGE, 0, 0)));
    close(fd);
    fd = open(DIR_ "/modes", O_RDONLY);
    printf("modes: read-only descriptor: %s\n", errname(-falloc(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG)));
    close(fd);
}

/* Mode 0 over dirty pages: the delayed blocks count before fsync. */
static void test_delalloc_blocks(void)
{
    int fd = open(DIR_ "/delalloc", O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (long i = 0; i < 16 * PG; i++)
        model[i] = byte_at(i, 6);
    model_size = 16 * PG;
    check(pwrite(fd, model, 16 * PG, 0) == 16 * PG, "delalloc: 64 KiB written");
    struct stat st;
    fstat(fd, &st);
    printf("delalloc: written, no fsync: blocks %ld\n", (long)st.st_blocks);
    check(falloc(fd, 0, PG, 2 * PG) == 0, "delalloc: mode 0 inside");
    fstat(fd, &st);
    printf("delalloc: after mode 0 over dirty pages: blocks %ld\n", (long)st.st_blocks);
    check(falloc(fd, FALLOC_FL_KEEP_SIZE, 15 * PG, 4 * PG) == 0, "delalloc: KEEP_SIZE across the end");
    fstat(fd, &st);
    printf("delalloc: after KEEP_SIZE across the end: size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);
    facts("delalloc", fd);
    close(fd);
}

static void seek_show(int fd, int whence, long off)
{
    errno = 0;
    off_t r = lseek(fd, off, whence);
    const char *w = whence == SEEK_DATA ? "DATA" : "HOLE";
    if (r < 0)
        printf("SEEK_%s(%ld) = -1 %s\n", w, off, errname(errno));
    else
        printf("SEEK_%s(%ld) = %ld\n", w, off, (long)r);
}

/* SEEK_DATA/SEEK_HOLE over an unwritten extent: a hole until a page of
 * it is written (cached, then on the disk). */
static void test_seek_unwritten(void)
{
    int fd = open(DIR_ "/seek", O_RDWR | O_CREAT | O_TRUNC, 0644);
    static char page[PG];
    memset(page, 's', sizeof page);
    check(fd >= 0 && pwrite(fd, page, PG, 0) == PG && fsync(fd) == 0, "seek: one written page");
    check(falloc(fd, 0, PG, 4 * PG) == 0, "seek: fallocate pages 1-4");
    printf("seek: unwritten:\n");
    seek_show(fd, SEEK_DATA, PG);
    seek_show(fd, SEEK_HOLE, 0);
    seek_show(fd, SEEK_HOLE, 3 * PG);
    check(pwrite(fd, page, PG, 2 * PG) == PG, "seek: write page 2");
    printf("seek: page 2 written, cached:\n");
    seek_show(fd, SEEK_DATA, PG);
    seek_show(fd, SEEK_HOLE, 2 * PG);
    check(fsync(fd) == 0, "seek: fsync");
    printf("seek: page 2 on the disk:\n");
    seek_show(fd, SEEK_DATA, PG);
    seek_show(fd, SEEK_HOLE, 2 * PG);
    seek_show(fd, SEEK_DATA, 3 * PG);
    close(fd);
}

/* MADV_REMOVE on a shared mapping of an ext4 file punches the range:
 * zeros through the mapping and read(2), the size kept, the blocks freed
 * (st_blocks after fsync), a hole for SEEK_HOLE. */
static void test_madv_remove(void)
{
    int fd = open(DIR_ "/remove", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0 && ftruncate(fd, 8 * PG) == 0, "remove: an 8-page file");
    unsigned char *m = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "remove: mmap MAP_SHARED");
    memset(m, 'r', 8 * PG);
    check(msync(m, 8 * PG, MS_SYNC) == 0 && fsync(fd) == 0, "remove: written and synced");
    struct stat st;
    fstat(fd, &st);
    printf("remove: st_blocks before %ld\n", (long)st.st_blocks);
    check(madvise(m + 2 * PG, 3 * PG, MADV_REMOVE) == 0, "remove: MADV_REMOVE pages 2-4");
    int zeros = 1;
    for (long i = 2 * PG; i < 5 * PG; i++)
        zeros &= m[i] == 0;
    check(zeros && m[2 * PG - 1] == 'r' && m[5 * PG] == 'r', "remove: zeros through the mapping, neighbours kept");
    unsigned char buf[PG];
    check(pread(fd, buf, PG, 3 * PG) == PG && buf[0] == 0 && buf[PG - 1] == 0, "remove: read(2) sees zeros");
    check(fsync(fd) == 0, "remove: fsync");
    fstat(fd, &st);
    printf("remove: size %ld, st_blocks after %ld\n", (long)st.st_size, (long)st.st_blocks);
    seek_show(fd, SEEK_HOLE, 0);
    seek_show(fd, SEEK_DATA, 2 * PG);
    munmap(m, 8 * PG);
    /* What counts is whether the mapping may be made writable: a
     * PROT_READ mapping of an O_RDWR file may, one of O_RDONLY may not. */
    unsigned char *ro = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    check(madvise(ro, PG, MADV_REMOVE) == 0, "remove: MADV_REMOVE on a PROT_READ mapping of an O_RDWR file");
    munmap(ro, PG);
    int rfd = open(DIR_ "/remove", O_RDONLY);
    ro = mmap(NULL, PG, PROT_READ, MAP_SHARED, rfd, 0);
    EXPECT_ERR(EACCES, "remove: MADV_REMOVE on a mapping of an O_RDONLY file", madvise(ro, PG, MADV_REMOVE));
    munmap(ro, PG);
    close(rfd);
    close(fd);
}

int main(void)
{
    t_init("falloc_ext4");
    struct statfs sf;
    mkdir(DIR_, 0755);
    check(statfs(DIR_, &sf) == 0 && sf.f_type == EXT4_MAGIC, "the test directory is on ext4");
    printf("block size %ld\n", (long)sf.f_bsize);
    test_punch();
    test_zero();
    test_collapse();
    test_insert();
    test_modes();
    test_delalloc_blocks();
    test_seek_unwritten();
    test_madv_remove();
    const char *names[] = {"punch", "zero", "collapse", "insert", "modes", "delalloc", "seek", "remove"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[128];
        snprintf(p, sizeof p, DIR_ "/%s", names[i]);
        unlink(p);
    }
    rmdir(DIR_);
    return t_done();
}
