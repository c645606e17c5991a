/*
 * seek_hole: lseek(2)'s SEEK_DATA and SEEK_HOLE on a sparse file under
 * /tmp: data written and not yet synced (delayed allocation on ext4),
 * the same after fsync, a hole at the end after ftruncate, a hole that
 * was read (a cached page of zeros is still a hole), a punched hole, a
 * partial page, a store through a shared mapping, data a terabyte in, and
 * the errnos.  Runs in the general run (Kiln's tmpfs /tmp) and in the
 * storage stage (Kiln's ext4 /tmp); the host's /tmp is ext4 both times,
 * so every answer here is one tmpfs and ext4 give alike (fallocate's
 * unwritten extents, where they differ, are in falloc_ext4).  Last, a
 * memfd (shmem on both kernels) with fallocated pages.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define FILE_ "/tmp/seek_hole.f"
#define PG 4096L

static int fd;

static void show(const char *what, long off)
{
    errno = 0;
    off_t r = lseek(fd, off, strcmp(what, "DATA") == 0 ? SEEK_DATA : SEEK_HOLE);
    if (r < 0)
        printf("SEEK_%s(%ld) = -1 %s\n", what, off, errname(errno));
    else
        printf("SEEK_%s(%ld) = %ld\n", what, off, (long)r);
}

static void fill(long off, long len, char c)
{
    static char buf[2 * 4096];
    memset(buf, c, sizeof buf);
    check(pwrite(fd, buf, len, off) == len, "pwrite");
}

int main(void)
{
    t_init("seek_hole");
    unlink(FILE_);
    fd = open(FILE_, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0, "open " FILE_);

    /* Two data pages 60 KiB apart, not synced. */
    fill(0, PG, 'a');
    fill(16 * PG, PG, 'b');
    printf("unsynced:\n");
    show("DATA", 0);
    show("HOLE", 0);
    show("HOLE", 100);
    show("DATA", PG);
    show("DATA", 5000);
    show("HOLE", 16 * PG);
    show("DATA", 17 * PG - 1);
    show("DATA", 17 * PG);
    show("DATA", -1);

    check(fsync(fd) == 0, "fsync");
    printf("synced:\n");
    show("DATA", 0);
    show("HOLE", 0);
    show("DATA", PG);
    show("HOLE", 16 * PG + 10);

    /* A hole at the end. */
    check(ftruncate(fd, 256 * PG) == 0, "ftruncate to 1 MiB");
    printf("extended:\n");
    show("HOLE", 16 * PG);
    show("DATA", 17 * PG);
    show("HOLE", 100 * PG + 7);
    show("HOLE", 256 * PG - 1);
    show("DATA", 256 * PG);

    /* Reading a hole leaves it one. */
    char rb[PG];
    check(pread(fd, rb, PG, 8 * PG) == PG && rb[0] == 0 && rb[PG - 1] == 0, "a hole reads as zeros");
    printf("after reading the hole:\n");
    show("DATA", PG);
    show("HOLE", PG);

    /* A punched page. */
    check(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16 * PG, PG) == 0, "punch the second page");
    printf("punched:\n");
    show("DATA", PG);
    show("HOLE", 0);

    /* One byte in the middle of a page: the page is data. */
    check(pwrite(fd, "x", 1, 50 * PG + 100) == 1, "one byte at page 50 + 100");
    printf("one byte:\n");
    show("DATA", PG);
    show("DATA", 50 * PG + 200);
    show("HOLE", 50 * PG);

    /* A store through a shared mapping fills a hole. */
    char *m = mmap(NULL, 256 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "mmap MAP_SHARED");
    m[100 * PG + 5] = 'm';
    printf("stored through the mapping:\n");
    show("DATA", 51 * PG);
    show("HOLE", 100 * PG);
    check(msync(m, 256 * PG, MS_SYNC) == 0, "msync");
    munmap(m, 256 * PG);
    show("DATA", 51 * PG);

    /* Far in. */
    check(pwrite(fd, "t", 1, 1L << 40) == 1, "one byte a terabyte in");
    printf("a terabyte in:\n");
    show("DATA", 101 * PG);
    show("HOLE", (1L << 40) - 1);
    show("HOLE", 1L << 40);
    show("DATA", (1L << 40) + 1);
    check(ftruncate(fd, 0) == 0, "truncate to 0");
    printf("empty:\n");
    show("DATA", 0);
    show("HOLE", 0);
    close(fd);

    /* shmem (a memfd: tmpfs under both kernels, whatever /tmp is): pages
     * fallocate made are holes until a write or a fault touches them; a
     * read() leaves them holes. */
    fd = memfd_create("seek_hole", 0);
    check(fd >= 0, "memfd_create");
    check(fallocate(fd, 0, 0, 8 * PG) == 0, "fallocate 8 pages");
    printf("memfd fallocated:\n");
    show("DATA", 0);
    show("HOLE", 0);
    fill(2 * PG + 100, 10, 'w');
    printf("memfd page 2 written:\n");
    show("DATA", 0);
    show("HOLE", 2 * PG);
    check(pread(fd, rb, PG, 4 * PG) == PG && rb[0] == 0, "a fallocated page reads as zeros");
    printf("memfd page 4 read:\n");
    show("DATA", 3 * PG);
    char *sm = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(sm != MAP_FAILED, "mmap the memfd");
    check(((volatile char *)sm)[6 * PG + 1] == 0, "a load from page 6");
    printf("memfd page 6 faulted by a load:\n");
    show("DATA", 3 * PG);
    show("HOLE", 6 * PG);
    sm[7 * PG] = 's';
    printf("memfd page 7 stored:\n");
    show("DATA", 7 * PG - 1);
    show("HOLE", 7 * PG);
    munmap(sm, 8 * PG);
    check(fallocate(fd, FALLOC_FL_KEEP_SIZE, 8 * PG, 2 * PG) == 0, "fallocate past the size");
    printf("memfd past the size:\n");
    show("DATA", 7 * PG + 1);
    show("HOLE", 7 * PG + 1);
    close(fd);

    int p[2];
    check(pipe(p) == 0, "pipe");
    EXPECT_ERR(ESPIPE, "SEEK_DATA on a pipe", lseek(p[0], 0, SEEK_DATA));
    close(p[0]);
    close(p[1]);
    unlink(FILE_);
    return t_done();
}
