/*
 * pagecache: file pages shared with mmap and written back.  A MAP_SHARED
 * mapping's stores are seen by read() at once, survive msync, munmap,
 * close and reopen; fsync, fdatasync, sync_file_range, msync,
 * posix_fadvise and readahead return what Linux returns (errnos too);
 * /proc/meminfo has Cached, Dirty and Writeback, and Cached and Dirty
 * grow when an ext4 file is written (on tmpfs Dirty does not).  Works
 * under /tmp/pagecache (ext4 in the storage stage, tmpfs elsewhere).
 *
 * "pagecache keep" leaves /tmp/mmap-kept: 3 pages written through a
 * shared mapping and msync(MS_SYNC)ed, and /tmp/osync-kept and
 * /tmp/odsync-kept written with O_SYNC and O_DSYNC (no fsync), for the
 * host to find on the image after the machine powers off.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define DIR_ "/tmp/pagecache"
#define EXT4_MAGIC 0xEF53
#define PG 4096

static long meminfo_kb(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    size_t n = strlen(field);
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = atol(line + n + 1);
            break;
        }
    }
    fclose(f);
    return v;
}

static unsigned char pattern(long i)
{
    return (unsigned char)(i * 7 + 3);
}

static int keep(void)
{
    int fd = open("/tmp/mmap-kept", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 3 * PG) != 0)
        return 1;
    unsigned char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 1;
    for (long i = 0; i < 3 * PG; i++)
        m[i] = (unsigned char)('a' + i % 26);
    if (msync(m, 3 * PG, MS_SYNC) != 0)
        return 1;
    /* O_SYNC and O_DSYNC: write(2) itself must have made them durable. */
    const char *names[2] = {"/tmp/osync-kept", "/tmp/odsync-kept"};
    int modes[2] = {O_SYNC, O_DSYNC};
    for (int k = 0; k < 2; k++) {
        int s = open(names[k], O_WRONLY | O_CREAT | O_TRUNC | modes[k], 0644);
        if (s < 0)
            return 1;
        for (long i = 0; i < 5; i++) {
            char line[32];
            int n = snprintf(line, sizeof line, "%s line %ld\n", k ? "dsync" : "sync", i);
            if (write(s, line, n) != n)
                return 1;
        }
    }
    printf("kept\n");
    /* No munmap, no close: msync alone must have put it on the disk. */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "keep"))
        return keep();
    t_init("pagecache");
    mkdir(DIR_, 0755);
    struct statfs sfs;
    int ext4 = statfs("/tmp", &sfs) == 0 && sfs.f_type == EXT4_MAGIC;
    char path[] = DIR_ "/shared";
    unlink(path);

    /* A file of 3 pages written with write(). */
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0, "create");
    static unsigned char buf[3 * PG], back[3 * PG];
    for (long i = 0; i < (long)sizeof buf; i++)
        buf[i] = pattern(i);
    check(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "write 3 pages");

    /* Shared mapping: stores reach read() at once. */
    unsigned char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "mmap MAP_SHARED of the file");
    check(m[5] == pattern(5) && m[2 * PG + 9] == pattern(2 * PG + 9), "mapping shows the written bytes");
    memcpy(m + PG - 3, "HELLO", 5); /* across a page boundary */
    m[2 * PG + 100] = 'Z';
    check(pread(fd, back, 8, PG - 4) == 8 && !memcmp(back + 1, "HELLO", 5), "read() sees stores through the mapping");
    /* write() shows through the mapping. */
    check(pwrite(fd, "w", 1, 10) == 1 && m[10] == 'w', "the mapping sees write()");
    check(msync(m, 3 * PG, MS_SYNC) == 0, "msync MS_SYNC");
    check(msync(m, PG, MS_ASYNC) == 0, "msync MS_ASYNC");
    check(msync(m, PG, MS_INVALIDATE) == 0, "msync MS_INVALIDATE");
    m[PG + 7] = 'Q'; /* after msync, before munmap: munmap must not lose it */
    check(munmap(m, 3 * PG) == 0, "munmap");
    check(close(fd) == 0, "close");

    fd = open(path, O_RDONLY);
    memset(back, 0, sizeof back);
    check(read(fd, back, sizeof back) == (ssize_t)sizeof back, "reopen and read 3 pages");
    memcpy(buf + PG - 3, "HELLO", 5);
    buf[2 * PG + 100] = 'Z';
    buf[10] = 'w';
    buf[PG + 7] = 'Q';
    check(!memcmp(buf, back, sizeof buf), "every store through the mapping is in the file");
    close(fd);

    /* A shared mapping past the end: SIGBUS-free up to the last page. */
    fd = open(path, O_RDWR);
    check(ftruncate(fd, PG + 100) == 0, "shrink to a page and 100 bytes");
    m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED && m[PG + 99] == pattern(PG + 99) && m[PG + 100] == 0, "bytes past the end read zero");
    m[0] = 'A';
    check(fsync(fd) == 0 && pread(fd, back, 1, 0) == 1 && back[0] == 'A', "fsync with a dirty mapped page");
    munmap(m, 2 * PG);

    /* fsync family: return values and errnos. */
    check(fdatasync(fd) == 0, "fdatasync");
    EXPECT_ERR(EBADF, "fsync(bad fd)", fsync(999));
    EXPECT_ERR(EBADF, "fdatasync(bad fd)", fdatasync(999));
    int p[2];
    check(pipe(p) == 0, "pipe");
    EXPECT_ERR(EINVAL, "fsync(pipe)", fsync(p[0]));
    EXPECT_ERR(ESPIPE, "sync_file_range(pipe)", sync_file_range(p[0], 0, 0, SYNC_FILE_RANGE_WRITE));
    close(p[0]);
    close(p[1]);
    check(sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) == 0, "sync_file_range WRITE, whole file");
    check(sync_file_range(fd, 0, PG,
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) == 0,
          "sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER");
    EXPECT_ERR(EINVAL, "sync_file_range(flags 8)", sync_file_range(fd, 0, 0, 8));
    EXPECT_ERR(EINVAL, "sync_file_range(offset -1)", sync_file_range(fd, -1, 0, SYNC_FILE_RANGE_WRITE));
    EXPECT_ERR(EINVAL, "sync_file_range(nbytes -1)", sync_file_range(fd, 0, -1, SYNC_FILE_RANGE_WRITE));
    EXPECT_ERR(EBADF, "sync_file_range(bad fd)", sync_file_range(999, 0, 0, SYNC_FILE_RANGE_WRITE));
    check(syncfs(fd) == 0, "syncfs");
    sync();

    /* msync's own checks. */
    m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    EXPECT_ERR(EINVAL, "msync(MS_SYNC|MS_ASYNC)", msync(m, PG, MS_SYNC | MS_ASYNC));
    EXPECT_ERR(EINVAL, "msync(unknown flag)", msync(m, PG, 8));
    EXPECT_ERR(EINVAL, "msync(unaligned)", msync(m + 1, PG, MS_SYNC));
    munmap(m, PG);
    EXPECT_ERR(ENOMEM, "msync(unmapped)", msync(m, PG, MS_SYNC));

    /* posix_fadvise and readahead. */
    check(posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED) == 0, "fadvise WILLNEED");
    check(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "fadvise DONTNEED");
    check(pread(fd, back, 1, 0) == 1 && back[0] == 'A', "data survives DONTNEED");
    check(posix_fadvise(fd, 0, 0, 99) == EINVAL, "fadvise unknown advice: EINVAL");
    check(readahead(fd, 0, 2 * PG) == 0, "readahead");
    close(fd);
    unlink(path);

    /* meminfo: the fields, and the page cache growing with a file. */
    check(meminfo_kb("Cached") >= 0 && meminfo_kb("Dirty") >= 0 && meminfo_kb("Writeback") >= 0 &&
              meminfo_kb("Buffers") >= 0,
          "meminfo has Buffers, Cached, Dirty, Writeback");
    long cached0 = meminfo_kb("Cached"), dirty0 = meminfo_kb("Dirty");
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    static unsigned char mb[1 << 20];
    memset(mb, 'x', sizeof mb);
    for (int i = 0; i < 8; i++)
        write(fd, mb, sizeof mb);
    long cached1 = meminfo_kb("Cached"), dirty1 = meminfo_kb("Dirty");
    check(cached1 - cached0 >= 6 * 1024, "Cached grew with 8 MiB written");
    check(ext4 ? dirty1 - dirty0 >= 6 * 1024 : dirty1 - dirty0 < 2 * 1024,
          "Dirty grew with 8 MiB written on ext4 (not on tmpfs)");
    check(fsync(fd) == 0, "fsync 8 MiB");
    check(lseek(fd, 0, SEEK_END) == 8 << 20, "size 8 MiB");
    close(fd);
    unlink(path);
    rmdir(DIR_);
    return t_done();
}
