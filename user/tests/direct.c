/*
 * direct: O_DIRECT and pwritev2's RWF_DSYNC/RWF_SYNC on a file under
 * /tmp/direct.  On ext4 (the host's /tmp, and Kiln's in the storage
 * stage) O_DIRECT I/O bypasses the page cache: the file offset and the
 * length must be multiples of the logical block size (512), or the call
 * fails with EINVAL (the buffer's address too on Linux 6.1 and in Kiln;
 * newer Linux asks only the device's DMA alignment, so buffers here are
 * 512-aligned and "direct align" prints Kiln's answer for the storage
 * stage); a direct read sees data still
 * dirty in the cache (written back first), and a buffered read or a
 * shared mapping sees a direct write (the cache's pages of the range are
 * invalidated).  On tmpfs (Kiln's /tmp elsewhere) O_DIRECT opens and is
 * served by the cache with no alignment rule, as Linux 6.6+ does, so the
 * alignment checks expect success there; every other fact is the same.
 * fcntl(F_SETFL) turns O_DIRECT on and off.  pwritev2 with RWF_DSYNC,
 * RWF_SYNC writes; unknown flags are EOPNOTSUPP, an offset below -1 EINVAL.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <setjmp.h>

#define DIR_ "/tmp/direct"
#define EXT4_MAGIC 0xEF53
#define PG 4096

/* <linux/fs.h>'s, which musl's headers lack. */
#define BLKSSZGET 0x1268
#define BLKDISCARD 0x1277
#define BLKGETSIZE64 0x80081272

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x02
#define RWF_SYNC 0x04
#endif

/* Straight to the system call (musl has no wrappers). */
static long preadv2_(int fd, const struct iovec *iov, int n, long off, int flags)
{
    return syscall(SYS_preadv2, fd, iov, n, off, 0L, flags);
}

static long pwritev2_(int fd, const struct iovec *iov, int n, long off, int flags)
{
    return syscall(SYS_pwritev2, fd, iov, n, off, 0L, flags);
}

static unsigned char *buf, *back;

static void fill(unsigned char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 13 + seed);
}

static int same(const unsigned char *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 13 + seed))
            return 0;
    return 1;
}

/* On ext4 an unaligned call fails with EINVAL; on tmpfs it is served. */
static void unaligned(int ext4, long r, long served, const char *what)
{
    int e = errno;
    if (ext4)
        check(r == -1 && e == EINVAL, "%s: EINVAL on ext4 (served on tmpfs)", what);
    else
        check(r == served, "%s: EINVAL on ext4 (served on tmpfs)", what);
}


/* "direct align": Kiln's answer to a buffer not aligned to 512 (the
 * storage stage checks it is Linux 6.1's EINVAL). */
static int align_mode(void)
{
    int fd = open("/tmp/direct-align", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0 || pwrite(fd, buf, PG, 0) != PG)
        return 1;
    errno = 0;
    long r = pread(fd, buf + 1, 512, 0);
    printf("align: read into buffer+1: %ld %s\n", r, errname(r < 0 ? errno : 0));
    errno = 0;
    r = pwrite(fd, buf + 256, 512, 0);
    printf("align: write from buffer+256: %ld %s\n", r, errname(r < 0 ? errno : 0));
    r = pread(fd, buf + 512, 512, 0);
    printf("align: read into buffer+512: %ld\n", r);
    close(fd);
    unlink("/tmp/direct-align");
    return 0;
}

/* Prints what a call gave: the count, or -1 and the errno's name. */
static void said(const char *what, long r)
{
    int e = errno;
    printf("blockdev: %s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? errname(e) : "");
    errno = 0;
}

/* "direct blockdev DEV": O_DIRECT on a block device node (Linux's
 * blkdev_direct_IO rule: buffer address, offset and length multiples of
 * the logical block size, else EINVAL; a read at the end gives 0, one
 * running past it is cut short; a write at the end ENOSPC). Reads, and
 * writes back the device's last 4 KiB unchanged, so a mounted volume
 * on it is not disturbed. The host runs it on a loop device. */
static int blockdev_mode(const char *dev)
{
    int fd = open(dev, O_RDWR | O_DIRECT);
    int bfd = open(dev, O_RDWR);
    unsigned long long size = 0;
    int lbs = 0;
    if (fd < 0 || bfd < 0 || ioctl(fd, BLKGETSIZE64, &size) != 0 || ioctl(fd, BLKSSZGET, &lbs) != 0)
        return 1;
    long end = (long)size;
    printf("blockdev: logical block size %d, size a multiple of 4096: %d\n", lbs, size % PG == 0);
    errno = 0;
    said("pread 4096 at 0", pread(fd, buf, PG, 0));
    said("pread into buffer+1", pread(fd, buf + 1, 512, 0));
    said("pread into buffer+256", pread(fd, buf + 256, 512, 0));
    said("pread into buffer+512", pread(fd, buf + 512, 512, 0));
    said("pread length 100", pread(fd, buf, 100, 0));
    said("pread length 1024", pread(fd, buf, 1024, 0));
    said("pread at offset 100", pread(fd, buf, 512, 100));
    said("pread at offset 512", pread(fd, buf, 512, 512));
    said("pread at the end", pread(fd, buf, PG, end));
    said("pread at end+1", pread(fd, buf, PG, end + 1));
    said("pread 4096 at end-512", pread(fd, buf, PG, end - 512));
    said("pread 0 bytes into buffer+1", pread(fd, buf + 1, 0, 0));
    struct iovec v[2] = {{buf, 512}, {buf + PG + 100, 512}};
    said("preadv, second segment at +100", preadv(fd, v, 2, 0));
    v[1].iov_base = buf + PG;
    said("preadv, both aligned", preadv(fd, v, 2, 0));
    v[1].iov_len = 300;
    said("preadv, second segment 300 bytes", preadv(fd, v, 2, 0));
    said("buffered pread 100 at offset 100", pread(bfd, back, 100, 100));

    /* The last 4 KiB, written back as they are. */
    if (pread(fd, buf, PG, end - PG) != PG)
        return 1;
    memcpy(back, buf, PG);
    memcpy(buf + PG, buf, PG);
    said("pwrite from buffer+256", pwrite(fd, buf + 256, 512, end - PG));
    said("pwrite length 700", pwrite(fd, buf, 700, end - PG));
    said("pwrite at offset end-4000", pwrite(fd, buf, 512, end - 4000));
    said("pwrite 4096 at end-4096", pwrite(fd, buf, PG, end - PG));
    said("pwrite 4096 at end-512", pwrite(fd, buf + PG - 512, PG, end - 512));
    said("pwrite at the end", pwrite(fd, buf, 512, end));
    unsigned long long range[2] = {(unsigned long long)end - PG, PG};
    said("BLKDISCARD of the last 4 KiB", ioctl(fd, BLKDISCARD, range));
    range[0] = (unsigned long long)end - PG + 100;
    said("BLKDISCARD at a misaligned start", ioctl(fd, BLKDISCARD, range));
    range[0] = (unsigned long long)end;
    said("BLKDISCARD past the end", ioctl(fd, BLKDISCARD, range));
    said("pwrite the last 4 KiB back", pwrite(fd, back, PG, end - PG));
    said("fsync", fsync(fd));
    said("read back 4096 at end-4096", pread(fd, buf, PG, end - PG));
    printf("blockdev: last 4 KiB unchanged: %d\n", memcmp(buf, back, PG) == 0);
    said("F_SETFL without O_DIRECT", fcntl(fd, F_SETFL, 0));
    said("then pread 100 at offset 100", pread(fd, buf + 1, 100, 100));
    said("F_SETFL O_DIRECT", fcntl(fd, F_SETFL, O_DIRECT));
    said("then pread 100 at offset 100", pread(fd, buf + 1, 100, 100));
    close(fd);
    close(bfd);
    return 0;
}

/* "direct cut": files written with pwritev2 RWF_DSYNC and RWF_SYNC (a
 * buffered file each) and with O_DIRECT + RWF_DSYNC, then "=== start"
 * and a wait for the host to kill the machine: no fsync, close, sync or
 * umount after the writes returned. */
static int cut_mode(void)
{
    const char *names[2] = {"/tmp/rwf-dsync-kept", "/tmp/rwf-sync-kept"};
    int flags[2] = {RWF_DSYNC, RWF_SYNC};
    for (int k = 0; k < 2; k++) {
        int fd = open(names[k], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return 1;
        for (long i = 0; i < 5; i++) {
            char line[32];
            int n = snprintf(line, sizeof line, "%s line %ld\n", k ? "rwf-sync" : "rwf-dsync", i);
            struct iovec v = {line, (size_t)n};
            if (pwritev2_(fd, &v, 1, -1, flags[k]) != n)
                return 1;
        }
    }
    int fd = open("/tmp/direct-kept", O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0)
        return 1;
    fill(buf, 3 * PG, 42);
    struct iovec v = {buf, 3 * PG};
    if (pwritev2_(fd, &v, 1, 0, RWF_DSYNC) != 3 * PG)
        return 1;
    printf("=== start\n");
    for (;;)
        pause();
}

static sigjmp_buf bus_jump;

static void on_bus(int sig)
{
    (void)sig;
    siglongjmp(bus_jump, 1);
}

/* Stores `c` at `p`; whether it raised SIGBUS. */
static int store_faults(volatile unsigned char *p, unsigned char c)
{
    if (sigsetjmp(bus_jump, 1))
        return 1;
    *p = c;
    return 0;
}

/* "direct full": a shared mapping of a 4-page sparse file, page 0 stored
 * to; then the disk is filled until ENOSPC; a store to the hole page 2
 * must get SIGBUS (the disk cannot promise its blocks), page 0 keeps
 * working and reaches the disk with msync. */
static int full_mode(void)
{
    int fd = open("/tmp/full-map", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 4 * PG) != 0)
        return 1;
    unsigned char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 1;
    memset(m, 'p', PG);
    int filler = open("/tmp/filler", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    long total = 0, w;
    errno = 0;
    memset(buf, 'f', 8 * PG);
    while ((w = write(filler, buf, 8 * PG)) > 0)
        total += w;
    printf("full: filler stopped with %s\n", errname(errno));
    fsync(filler);
    close(filler);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_bus;
    sigaction(SIGBUS, &sa, NULL);
    printf("full: store to hole page 2: %s\n", store_faults(m + 2 * PG, 'h') ? "SIGBUS" : "no signal");
    printf("full: store to page 0 again: %s\n", store_faults(m + 5, 'P') ? "SIGBUS" : "no signal");
    printf("full: msync: %d\n", msync(m, 4 * PG, MS_SYNC));
    munmap(m, 4 * PG);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (posix_memalign((void **)&buf, PG, 8 * PG) != 0 || posix_memalign((void **)&back, PG, 8 * PG) != 0)
        return 1;
    if (argc > 1 && !strcmp(argv[1], "align"))
        return align_mode();
    if (argc > 1 && !strcmp(argv[1], "cut"))
        return cut_mode();
    if (argc > 1 && !strcmp(argv[1], "full"))
        return full_mode();
    if (argc > 2 && !strcmp(argv[1], "blockdev"))
        return blockdev_mode(argv[2]);
    t_init("direct");
    mkdir(DIR_, 0755);
    struct statfs sfs;
    int ext4 = statfs(DIR_, &sfs) == 0 && sfs.f_type == EXT4_MAGIC;
    char path[] = DIR_ "/f";
    unlink(path);

    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    check(fd >= 0, "open O_DIRECT");
    check((fcntl(fd, F_GETFL) & O_DIRECT) != 0, "F_GETFL shows O_DIRECT");
    int bfd = open(path, O_RDWR);
    check(bfd >= 0, "a second, buffered descriptor");

    /* Aligned direct write and read. */
    fill(buf, 4 * PG, 1);
    check(pwrite(fd, buf, 4 * PG, 0) == 4 * PG, "direct pwrite of 4 pages at 0");
    struct stat st;
    check(fstat(fd, &st) == 0 && st.st_size == 4 * PG, "size 16384 after it");
    memset(back, 0, 4 * PG);
    check(pread(fd, back, 4 * PG, 0) == 4 * PG && same(back, 4 * PG, 1), "direct pread reads it back");
    memset(back, 0, 4 * PG);
    check(pread(bfd, back, 4 * PG, 0) == 4 * PG && same(back, 4 * PG, 1), "buffered pread reads it too");

    /* Logical-block (512) alignment is enough: buffer, offset, length. */
    memset(back, 0, PG);
    check(pread(fd, back + 512, 1024, 1536) == 1024 && memcmp(back + 512, buf + 1536, 1024) == 0,
          "buffer, offset and length aligned to 512 (not 4096)");
    check(pwrite(fd, buf + 512, 512, 512) == 512, "512-byte direct write at 512");

    /* Misaligned buffer, offset or length. */
    errno = 0;
    unaligned(ext4, pread(fd, back, 512, 100), 512, "read at a misaligned offset");
    errno = 0;
    unaligned(ext4, pread(fd, back, 100, 0), 100, "read of a misaligned length");
    errno = 0;
    unaligned(ext4, pwrite(fd, buf, 512, 3), 512, "write at a misaligned offset");
    if (!ext4)
        check(pwrite(fd, buf, 512, 0) == 512 && pwrite(fd, buf + 512, 512, 512) == 512, "(the bytes put back)");
    else
        check(1, "(the bytes put back)");
    errno = 0;
    unaligned(ext4, pwrite(fd, buf, 700, 0), 700, "write of a misaligned length");
    memset(back, 0, 4 * PG);
    check(pread(bfd, back, 4 * PG, 0) == 4 * PG && same(back, 4 * PG, 1), "the file is unchanged");
    struct iovec iov[2] = {{back, 512}, {back + 1024, 100}};
    errno = 0;
    unaligned(ext4, preadv(fd, iov, 2, 0), 612, "readv with a segment of a misaligned length");

    /* Coherence: a direct read sees data still dirty in the cache. */
    check(pwrite(bfd, "dirty", 5, PG) == 5, "buffered write of 5 bytes at 4096");
    memset(back, 0, PG);
    check(pread(fd, back, PG, PG) == PG && memcmp(back, "dirty", 5) == 0 && back[5] == buf[PG + 5],
          "direct read sees the buffered write");
    /* A buffered read sees a direct write (the cached page is dropped). */
    memset(back, 0, PG);
    check(pread(bfd, back, PG, 2 * PG) == PG, "buffered read caches page 2");
    fill(buf, PG, 5);
    check(pwrite(fd, buf, PG, 2 * PG) == PG, "direct write over page 2");
    memset(back, 0, PG);
    check(pread(bfd, back, PG, 2 * PG) == PG && same(back, PG, 5), "buffered read sees the direct write");

    /* A shared mapping sees a direct write. */
    unsigned char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, bfd, 0);
    check(m != MAP_FAILED, "mmap MAP_SHARED");
    if (m != MAP_FAILED) {
        check(m[3 * PG] == (unsigned char)(3 * PG * 13 + 1), "mapping reads page 3");
        m[3 * PG + 1] = 'm';
        fill(buf, PG, 7);
        check(pwrite(fd, buf, PG, 3 * PG) == PG, "direct write over the mapped page 3");
        check(same(m + 3 * PG, PG, 7), "the mapping sees it");
        memset(back, 0, PG);
        check(pread(fd, back, PG, 3 * PG) == PG && same(back, PG, 7), "direct read sees it");
        m[3 * PG] = 'z';
        memset(back, 0, PG);
        check(pread(fd, back, PG, 3 * PG) == PG && back[0] == 'z', "direct read sees a store to the mapping");
        munmap(m, 4 * PG);
    }

    /* Past the end: an extending direct write leaves a hole of zeros. */
    fill(buf, PG, 3);
    check(pwrite(fd, buf, PG, 6 * PG) == PG, "direct write at 24576, past the end");
    check(fstat(fd, &st) == 0 && st.st_size == 7 * PG, "size 28672");
    memset(back, 0xff, 2 * PG);
    int zero = 1;
    check(pread(fd, back, 2 * PG, 4 * PG) == 2 * PG, "direct read of the hole");
    for (int i = 0; i < 2 * PG; i++)
        zero &= back[i] == 0;
    check(zero, "the hole reads as zeros");
    check(pwrite(bfd, "tail", 4, 7 * PG) == 4, "buffered write of 4 bytes at the end");
    memset(back, 0, 2 * PG);
    check(pread(fd, back, 2 * PG, 6 * PG) == PG + 4 && same(back, PG, 3) && memcmp(back + PG, "tail", 4) == 0,
          "direct read across the end is short (4100 bytes)");
    memset(back, 0, 2 * PG);
    check(pread(fd, back, 9000, 6 * PG) == PG + 4 && same(back, PG, 3),
          "a misaligned length running past the end's block: short, not EINVAL");
    errno = 0;
    unaligned(ext4, pread(fd, back, 5000, 6 * PG), PG + 4, "a misaligned length ending in the last block");
    check(pread(fd, back, PG, 8 * PG) == 0, "direct read past the end: 0");
    check(pread(fd, back, 100, 8 * PG + 3) == 0, "a misaligned read past the end: 0");
    /* Appending with O_DIRECT. */
    check(ftruncate(bfd, 8 * PG) == 0, "ftruncate to 32768");
    int afd = open(path, O_WRONLY | O_APPEND | O_DIRECT);
    fill(buf, PG, 11);
    check(afd >= 0 && write(afd, buf, PG) == PG, "O_APPEND|O_DIRECT write");
    check(fstat(fd, &st) == 0 && st.st_size == 9 * PG, "size 36864");
    memset(back, 0, PG);
    check(pread(bfd, back, PG, 8 * PG) == PG && same(back, PG, 11), "the appended page reads back");
    close(afd);

    /* read() and write() at the file position, with O_DIRECT. */
    check(lseek(fd, PG, SEEK_SET) == PG, "lseek 4096");
    check(read(fd, back, PG) == PG && lseek(fd, 0, SEEK_CUR) == 2 * PG, "read() moves the position by 4096");
    errno = 0;
    long r = read(fd, back, 100);
    unaligned(ext4, r, 100, "read() of a misaligned length");
    check(lseek(fd, 0, SEEK_CUR) == (ext4 ? 2 * PG : 2 * PG + 100), "the position moves only when served");

    /* fcntl(F_SETFL) turns O_DIRECT off and on. */
    int fl = fcntl(fd, F_GETFL);
    check(fcntl(fd, F_SETFL, fl & ~O_DIRECT) == 0 && (fcntl(fd, F_GETFL) & O_DIRECT) == 0, "F_SETFL clears O_DIRECT");
    check(pread(fd, back, 100, 3) == 100, "buffered again: a misaligned read is served");
    check(fcntl(fd, F_SETFL, fl) == 0 && (fcntl(fd, F_GETFL) & O_DIRECT) != 0, "F_SETFL sets O_DIRECT");
    errno = 0;
    unaligned(ext4, pread(fd, back, 100, 3), 100, "direct again: a misaligned read");
    check(fdatasync(fd) == 0 && fsync(fd) == 0, "fdatasync and fsync");

    /* pwritev2 flags. */
    struct iovec w = {(void *)"rwf-data", 8};
    int sfd = open(DIR_ "/rwf", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(sfd >= 0, "open a buffered file");
    struct iovec rv = {back, 8};
    check(pwritev2_(sfd, &w, 1, -1, RWF_DSYNC) == 8 && lseek(sfd, 0, SEEK_CUR) == 8,
          "pwritev2 RWF_DSYNC at the position moves it");
    check(pwritev2_(sfd, &w, 1, 8, RWF_SYNC) == 8 && lseek(sfd, 0, SEEK_CUR) == 8, "pwritev2 RWF_SYNC at 8");
    check(pwritev2_(sfd, &w, 1, 16, RWF_DSYNC | RWF_SYNC) == 8, "pwritev2 RWF_DSYNC|RWF_SYNC at 16");
    check(pread(sfd, back, 24, 0) == 24 && memcmp(back, "rwf-datarwf-datarwf-data", 24) == 0, "the three writes");
    EXPECT_ERR(EOPNOTSUPP, "pwritev2 with flag 0x10000", pwritev2_(sfd, &w, 1, 0, 0x10000));
    EXPECT_ERR(EOPNOTSUPP, "pwritev2 with flag 0x80000000", pwritev2_(sfd, &w, 1, 0, (int)0x80000000u));
    EXPECT_ERR(EOPNOTSUPP, "pwritev2 RWF_DSYNC with flag 0x10000", pwritev2_(sfd, &w, 1, 0, RWF_DSYNC | 0x10000));
    EXPECT_ERR(EOPNOTSUPP, "preadv2 with flag 0x10000", preadv2_(sfd, &rv, 1, 0, 0x10000));
    EXPECT_ERR(EINVAL, "pwritev2 at offset -2", pwritev2_(sfd, &w, 1, -2, RWF_DSYNC));
    EXPECT_ERR(EINVAL, "preadv2 at offset -5", preadv2_(sfd, &rv, 1, -5, 0));
    check(pread(sfd, back, 32, 0) == 24, "the file still holds 24 bytes");
    struct iovec dw = {buf, PG};
    fill(buf, PG, 2);
    check(pwritev2_(fd, &dw, 1, 0, RWF_DSYNC) == PG, "pwritev2 RWF_DSYNC on an O_DIRECT file");
    memset(back, 0, PG);
    check(pread(bfd, back, PG, 0) == PG && same(back, PG, 2), "read back");
    close(sfd);

    close(bfd);
    close(fd);
    unlink(path);
    unlink(DIR_ "/rwf");
    rmdir(DIR_);
    return t_done();
}
