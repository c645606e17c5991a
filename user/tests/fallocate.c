/*
 * fallocate: space and hints on a tmpfs mounted for the test.
 * fallocate (mode 0 growing the file, FALLOC_FL_KEEP_SIZE, PUNCH_HOLE
 * with partial pages zeroed and shared mappings seeing the hole, the
 * modes tmpfs refuses, the argument and file-type errnos,
 * RLIMIT_FSIZE); preadv2/pwritev2 (offset -1 meaning the file position,
 * RWF_HIPRI/DSYNC/SYNC, RWF_APPEND, RWF_NOWAIT on pipes and files,
 * unknown flags, flags ignored for empty transfers); fadvise64,
 * readahead and sync_file_range.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define D "/tmp/fallocate_t"

/* musl's <fcntl.h> has only the first two. */
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#define FALLOC_FL_NO_HIDE_STALE 0x04
#define FALLOC_FL_COLLAPSE_RANGE 0x08
#define FALLOC_FL_ZERO_RANGE 0x10
#define FALLOC_FL_INSERT_RANGE 0x20
#define FALLOC_FL_UNSHARE_RANGE 0x40
#ifndef RWF_HIPRI
#define RWF_HIPRI 0x01
#define RWF_DSYNC 0x02
#define RWF_SYNC 0x04
#define RWF_NOWAIT 0x08
#define RWF_APPEND 0x10
#endif

/* musl has no wrappers; the offset goes in two words (low, high). */
static long preadv2(int fd, const struct iovec *iov, int n, long off, int flags)
{
    return syscall(SYS_preadv2, fd, iov, n, off, 0L, flags);
}

static long pwritev2(int fd, const struct iovec *iov, int n, long off, int flags)
{
    return syscall(SYS_pwritev2, fd, iov, n, off, 0L, flags);
}

static char buf[70000];

static void show_stat(const char *what, int fd)
{
    struct stat st;
    fstat(fd, &st);
    printf("%s: size %ld blocks %ld\n", what, (long)st.st_size, (long)st.st_blocks);
}

static long fallocate_raw(int fd, int mode, long off, long len)
{
    return syscall(SYS_fallocate, fd, mode, off, len);
}

static void test_allocate(void)
{
    int fd = open(D "/a", O_CREAT | O_RDWR, 0644);
    EXPECT_OK("fallocate 10000 bytes", fallocate(fd, 0, 0, 10000));
    show_stat("after fallocate(0, 10000)", fd);
    check(pread(fd, buf, 20000, 0) == 10000 && buf[0] == 0 && buf[9999] == 0, "reads 10000 zeros");
    EXPECT_OK("fallocate KEEP_SIZE past the end", fallocate(fd, FALLOC_FL_KEEP_SIZE, 8192, 16384));
    show_stat("after KEEP_SIZE to 24576", fd);
    EXPECT_OK("fallocate inside the file", fallocate(fd, 0, 100, 100));
    show_stat("after fallocate inside", fd);
    EXPECT_OK("fallocate at an offset past the end", fallocate(fd, 0, 40000, 1));
    show_stat("after fallocate(40000, 1)", fd);
    check(ftruncate(fd, 5000) == 0, "truncate to 5000 frees what lay past it");
    show_stat("after truncate", fd);
    close(fd);
}

static void test_punch(void)
{
    int fd = open(D "/p", O_CREAT | O_RDWR, 0644);
    memset(buf, 'x', 5 * 4096);
    write(fd, buf, 5 * 4096);
    char *map = mmap(NULL, 5 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(map != MAP_FAILED && map[4096] == 'x', "mapped shared, page 1 reads x");
    EXPECT_OK("punch [1000, 1000 + 3*4096)", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 3 * 4096));
    show_stat("after the punch", fd);
    pread(fd, buf, 5 * 4096, 0);
    int zeros = 0, xs = 0;
    for (int i = 0; i < 5 * 4096; i++) {
        zeros += buf[i] == 0;
        xs += buf[i] == 'x';
    }
    printf("after the punch: %d zeros, %d x\n", zeros, xs);
    check(buf[999] == 'x' && buf[1000] == 0 && buf[1000 + 3 * 4096 - 1] == 0 && buf[1000 + 3 * 4096] == 'x',
          "the hole is exactly [1000, 13288)");
    check(map[999] == 'x' && map[1000] == 0 && map[4096] == 0 && map[3 * 4096 + 1000] == 'x',
          "the shared mapping sees the hole");
    map[4096] = 'y';
    check(pread(fd, buf, 1, 4096) == 1 && buf[0] == 'y', "writing the mapping again fills the hole");
    munmap(map, 5 * 4096);
    EXPECT_OK("punch past the end", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100000, 4096));
    show_stat("after a punch past the end", fd);
    EXPECT_ERR(EOPNOTSUPP, "PUNCH_HOLE without KEEP_SIZE", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10));
    EXPECT_ERR(EOPNOTSUPP, "ZERO_RANGE", fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 10));
    EXPECT_ERR(EOPNOTSUPP, "PUNCH_HOLE|ZERO_RANGE", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, 10));
    EXPECT_ERR(EOPNOTSUPP, "COLLAPSE_RANGE", fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096));
    EXPECT_ERR(EOPNOTSUPP, "INSERT_RANGE", fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 4096));
    EXPECT_ERR(EOPNOTSUPP, "UNSHARE_RANGE", fallocate(fd, FALLOC_FL_UNSHARE_RANGE, 0, 4096));
    EXPECT_ERR(EOPNOTSUPP, "NO_HIDE_STALE", fallocate(fd, FALLOC_FL_NO_HIDE_STALE, 0, 4096));
    EXPECT_ERR(EOPNOTSUPP, "unknown mode 0x100", fallocate_raw(fd, 0x100, 0, 4096));
    close(fd);
}

static void test_fallocate_errors(void)
{
    int fd = open(D "/e", O_CREAT | O_RDWR, 0644);
    EXPECT_ERR(EINVAL, "negative offset", fallocate_raw(fd, 0, -1, 10));
    EXPECT_ERR(EINVAL, "len 0", fallocate(fd, 0, 0, 0));
    EXPECT_ERR(EINVAL, "negative len", fallocate_raw(fd, 0, 0, -5));
    EXPECT_ERR(EINVAL, "len 0 before the mode", fallocate_raw(fd, 0x100, 0, 0));
    EXPECT_ERR(EFBIG, "offset + len past the largest size", fallocate_raw(fd, 0, 0x7fffffffffffff00L, 0x1000));
    EXPECT_ERR(EBADF, "bad fd", fallocate(99, 0, 0, 10));
    int ro = open(D "/e", O_RDONLY);
    EXPECT_ERR(EBADF, "read-only descriptor", fallocate(ro, 0, 0, 10));
    close(ro);
    int p[2];
    pipe(p);
    EXPECT_ERR(ESPIPE, "pipe write end", fallocate(p[1], 0, 0, 10));
    EXPECT_ERR(EBADF, "pipe read end", fallocate(p[0], 0, 0, 10));
    int dir = open(D, O_RDONLY);
    EXPECT_ERR(EBADF, "directory (read-only)", fallocate(dir, 0, 0, 10));
    close(dir);
    int null = open("/dev/null", O_WRONLY);
    EXPECT_ERR(ENODEV, "/dev/null", fallocate(null, 0, 0, 10));
    close(null);
    int op = open(D "/e", O_PATH);
    EXPECT_ERR(EBADF, "O_PATH", fallocate(op, 0, 0, 10));
    close(op);
    close(p[0]);
    close(p[1]);
    close(fd);
}

/* The child reports through a pipe: its stdout may be a file the limit
 * would cut short. */
static int limit_fd, report[2];

static int fsize_child(void *arg)
{
    (void)arg;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { 8192, 8192 };
    setrlimit(RLIMIT_FSIZE, &rl);
    long r[3];
    errno = 0;
    r[0] = fallocate(limit_fd, 0, 0, 8192) == 0 ? 0 : errno;
    errno = 0;
    r[1] = fallocate(limit_fd, 0, 0, 8193) == 0 ? 0 : errno;
    errno = 0;
    r[2] = fallocate(limit_fd, FALLOC_FL_KEEP_SIZE, 8000, 1000) == 0 ? 0 : errno;
    write(report[1], r, sizeof r);
    return 0;
}

static void test_fallocate_fsize(void)
{
    limit_fd = open(D "/limit", O_CREAT | O_RDWR | O_TRUNC, 0644);
    pipe(report);
    int st = run_child(fsize_child, NULL);
    long r[3] = { -1, -1, -1 };
    read(report[0], r, sizeof r);
    check(st == 0, "RLIMIT_FSIZE child: %s", status_str(st));
    printf("under an 8192-byte limit: fallocate to 8192: %s, to 8193: %s, KEEP_SIZE to 9000: %s\n",
           errname((int)r[0]), errname((int)r[1]), errname((int)r[2]));
    close(limit_fd);
    close(report[0]);
    close(report[1]);
}

static void test_rwv2(void)
{
    int fd = open(D "/rw", O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "hello world", 11);
    char a[5], b[20];
    struct iovec iov[2] = { { a, 5 }, { b, 20 } };
    check(preadv2(fd, iov, 2, 0, 0) == 11 && memcmp(a, "hello", 5) == 0 && memcmp(b, " world", 6) == 0,
          "preadv2 at 0 into two iovecs");
    check(lseek(fd, 0, SEEK_CUR) == 11, "the position stays at 11");
    lseek(fd, 6, SEEK_SET);
    check(preadv2(fd, iov, 1, -1, 0) == 5 && memcmp(a, "world", 5) == 0, "offset -1 reads at the position");
    check(lseek(fd, 0, SEEK_CUR) == 11, "and moves it");
    check(preadv2(fd, iov, 1, 0, RWF_HIPRI) == 5, "RWF_HIPRI");
    check(preadv2(fd, iov, 1, 0, RWF_DSYNC | RWF_SYNC) == 5, "RWF_DSYNC|RWF_SYNC");
    check(preadv2(fd, iov, 1, 0, RWF_APPEND) == 5, "RWF_APPEND on a read is ignored");
    EXPECT_ERR(EOPNOTSUPP, "RWF_NOWAIT on a tmpfs file", preadv2(fd, iov, 1, 0, RWF_NOWAIT));
    EXPECT_ERR(EOPNOTSUPP, "unknown flag 1<<20", preadv2(fd, iov, 1, 0, 1 << 20));
    EXPECT_ERR(EOPNOTSUPP, "pwritev2 unknown flag", pwritev2(fd, iov, 1, 0, 1 << 20));
    struct iovec empty = { a, 0 };
    check(preadv2(fd, &empty, 1, 0, 1 << 20) == 0, "no bytes: the flags are not looked at");
    EXPECT_ERR(EINVAL, "offset -2", preadv2(fd, iov, 1, -2, 0));
    EXPECT_ERR(EINVAL, "offset -2 before the descriptor", preadv2(99, iov, 1, -2, 0));
    EXPECT_ERR(EBADF, "bad fd", preadv2(99, iov, 1, -1, 0));
    EXPECT_ERR(EINVAL, "1025 iovecs", preadv2(fd, iov, 1025, 0, 0));
    EXPECT_ERR(EFAULT, "bad iovec array", preadv2(fd, (struct iovec *)1, 1, 0, 0));
    /* RWF_APPEND writes at the end; an explicit offset keeps the position. */
    struct iovec xy = { "XY", 2 };
    lseek(fd, 3, SEEK_SET);
    check(pwritev2(fd, &xy, 1, 0, RWF_APPEND) == 2, "pwritev2 RWF_APPEND at offset 0");
    check(lseek(fd, 0, SEEK_CUR) == 3, "the position stays at 3");
    check(pread(fd, buf, 100, 0) == 13 && memcmp(buf, "hello worldXY", 13) == 0, "XY went to the end");
    check(pwritev2(fd, &xy, 1, -1, RWF_APPEND) == 2, "RWF_APPEND at the position");
    check(lseek(fd, 0, SEEK_CUR) == 15, "the position is the new end (15)");
    check(pwritev2(fd, &xy, 1, 1, RWF_DSYNC) == 2 && pread(fd, buf, 4, 0) == 4 && memcmp(buf, "hXYl", 4) == 0,
          "pwritev2 RWF_DSYNC at offset 1");
    int dir = open(D, O_RDONLY);
    EXPECT_ERR(EISDIR, "preadv2(directory)", preadv2(dir, iov, 1, 0, 0));
    EXPECT_ERR(EOPNOTSUPP, "preadv2(directory, RWF_DSYNC)", preadv2(dir, iov, 1, 0, RWF_DSYNC));
    check(preadv2(dir, &empty, 1, 0, RWF_DSYNC) == 0, "preadv2(directory, nothing)");
    close(dir);
    int proc = open("/proc/self/status", O_RDONLY);
    EXPECT_ERR(EOPNOTSUPP, "RWF_NOWAIT on /proc", preadv2(proc, iov, 1, 0, RWF_NOWAIT));
    close(proc);
    int p[2];
    pipe(p);
    EXPECT_ERR(EAGAIN, "RWF_NOWAIT on an empty pipe", preadv2(p[0], iov, 1, -1, RWF_NOWAIT));
    EXPECT_ERR(ESPIPE, "preadv2(pipe, offset 0)", preadv2(p[0], iov, 1, 0, 0));
    check(pwritev2(p[1], &xy, 1, -1, RWF_NOWAIT) == 2, "pwritev2(pipe, RWF_NOWAIT)");
    check(preadv2(p[0], iov, 1, -1, RWF_NOWAIT) == 2, "preadv2(pipe, RWF_NOWAIT) with data");
    close(p[0]);
    close(p[1]);
    int null = open("/dev/null", O_RDWR), zero = open("/dev/zero", O_RDONLY);
    check(preadv2(null, iov, 1, 0, RWF_NOWAIT) == 0, "RWF_NOWAIT on /dev/null");
    check(preadv2(zero, iov, 1, 0, RWF_NOWAIT) == 5, "RWF_NOWAIT on /dev/zero");
    close(null);
    close(zero);
    close(fd);
}

static void test_hints(void)
{
    int fd = open(D "/h", O_CREAT | O_RDWR, 0644);
    for (int adv = 0; adv <= 5; adv++)
        check(posix_fadvise(fd, 0, 100, adv) == 0, "fadvise %d", adv);
    check(posix_fadvise(fd, 0, 100, 6) == EINVAL, "fadvise 6: EINVAL");
    check(posix_fadvise(fd, -100, 100, POSIX_FADV_WILLNEED) == 0, "fadvise with a negative offset");
    check(posix_fadvise(fd, 0, -1, POSIX_FADV_WILLNEED) == EINVAL, "fadvise with a negative length: EINVAL");
    check(posix_fadvise(99, 0, 0, 0) == EBADF, "fadvise(bad fd): EBADF");
    int p[2];
    pipe(p);
    check(posix_fadvise(p[0], 0, 0, 0) == ESPIPE, "fadvise(pipe): ESPIPE");
    int null = open("/dev/null", O_RDONLY);
    check(posix_fadvise(null, 0, 0, POSIX_FADV_DONTNEED) == 0, "fadvise(/dev/null)");
    int dir = open(D, O_RDONLY);
    check(posix_fadvise(dir, 0, 0, POSIX_FADV_NORMAL) == 0, "fadvise(directory)");
    EXPECT_OK("readahead", readahead(fd, 0, 4096));
    EXPECT_ERR(EINVAL, "readahead(pipe)", readahead(p[0], 0, 10));
    EXPECT_ERR(EINVAL, "readahead(/dev/null)", readahead(null, 0, 10));
    EXPECT_ERR(EINVAL, "readahead(directory)", readahead(dir, 0, 10));
    EXPECT_ERR(EBADF, "readahead(write-only)", readahead(p[1], 0, 10));
    EXPECT_ERR(EBADF, "readahead(bad fd)", readahead(99, 0, 10));
    EXPECT_OK("sync_file_range", sync_file_range(fd, 0, 100, SYNC_FILE_RANGE_WRITE));
    EXPECT_OK("sync_file_range all flags", sync_file_range(fd, 0, 0, 7));
    EXPECT_ERR(EINVAL, "sync_file_range(flags 8)", sync_file_range(fd, 0, 0, 8));
    EXPECT_ERR(EINVAL, "sync_file_range(negative offset)", sync_file_range(fd, -1, 0, 0));
    EXPECT_ERR(EINVAL, "sync_file_range(negative length)", sync_file_range(fd, 100, -200, 0));
    EXPECT_ERR(ESPIPE, "sync_file_range(pipe)", sync_file_range(p[0], 0, 0, 0));
    EXPECT_ERR(ESPIPE, "sync_file_range(/dev/null)", sync_file_range(null, 0, 0, 0));
    EXPECT_OK("sync_file_range(directory)", sync_file_range(dir, 0, 0, 0));
    EXPECT_ERR(EBADF, "sync_file_range(bad fd)", sync_file_range(99, 0, 0, 0));
    close(dir);
    close(null);
    close(p[0]);
    close(p[1]);
    close(fd);
}

/*
 * `fallocate modes FILE`: what each mode answers on FILE's file system
 * (the storage stage runs it on Kiln's ext4 and compares with Linux's
 * ext4), and what the file's bytes, size and blocks are after them all.
 */
static int show_modes(const char *path)
{
    static const struct {
        const char *name;
        int mode;
    } modes[] = {
        {"0", 0},
        {"KEEP_SIZE", FALLOC_FL_KEEP_SIZE},
        {"PUNCH_HOLE|KEEP_SIZE", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE},
        {"ZERO_RANGE", FALLOC_FL_ZERO_RANGE},
        {"ZERO_RANGE|KEEP_SIZE", FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE},
        {"COLLAPSE_RANGE", FALLOC_FL_COLLAPSE_RANGE},
        {"INSERT_RANGE", FALLOC_FL_INSERT_RANGE},
    };
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("modes: open %s: %s\n", path, errname(errno));
        return 1;
    }
    for (int i = 0; i < (int)sizeof buf; i++)
        buf[i] = (char)('a' + i % 26);
    if (write(fd, buf, 65536) != 65536) {
        printf("modes: write: %s\n", errname(errno));
        return 1;
    }
    for (unsigned i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        long r = fallocate(fd, modes[i].mode, 4096, 8192);
        printf("modes: %s: %s\n", modes[i].name, r == 0 ? "0" : errname(errno));
    }
    /* The bytes now (each mode changed them on Linux), and before fsync
     * the size and blocks, delayed allocation counted. */
    static unsigned char back[65536];
    long got = pread(fd, back, sizeof back, 0);
    unsigned long sum = 0;
    for (long i = 0; i < got; i++)
        sum = sum * 31 + back[i];
    printf("modes: read back %ld bytes, sum %lu\n", got, sum);
    show_stat("modes: before fsync", fd);
    fsync(fd);
    show_stat("modes: after fsync", fd);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "modes") == 0)
        return show_modes(argv[2]);
    t_init("fallocate");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rm_rf(D);
    mkdir(D, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs: %s\n", errname(errno));
        return 1;
    }
    test_allocate();
    test_punch();
    test_fallocate_errors();
    test_fallocate_fsize();
    test_rwv2();
    test_hints();
    umount2(D, MNT_DETACH);
    rmdir(D);
    return t_done();
}
