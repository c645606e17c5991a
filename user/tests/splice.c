/*
 * splice: moving data between descriptors in the kernel. splice between
 * files and pipes and between pipes (offsets, the file position, pipe
 * room counted in pages, SPLICE_F_NONBLOCK and O_NONBLOCK, end of file,
 * EPIPE), tee, vmsplice both ways, copy_file_range (offsets, overlap,
 * end of file, another file system), sendfile, RLIMIT_FSIZE, and the
 * calls chained: file -> pipe -> tee -> pipe -> file; the inotify events
 * each call reports (IN_ACCESS on what it read, IN_MODIFY on what it
 * wrote). Works on a tmpfs
 * mounted at /tmp/splice_t (and a second one for EXDEV).
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define D "/tmp/splice_t"
#define D2 "/tmp/splice_t2"

static char big[300000];
static char buf[300000];

static int make_file(const char *path, size_t len)
{
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    for (size_t i = 0; i < len; i++)
        big[i] = (char)('a' + i % 23);
    if (len)
        write(fd, big, len);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static long pipe_len(int fd)
{
    int n = -1;
    ioctl(fd, FIONREAD, &n);
    return n;
}

static long drain(int fd)
{
    long total = 0, n;
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += n;
    fcntl(fd, F_SETFL, fl);
    return total;
}

static int same_as_pattern(const char *b, size_t from, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != (char)('a' + (from + i) % 23))
            return 0;
    return 1;
}

static void test_splice_basic(void)
{
    int f = make_file(D "/src", 100000);
    int p[2];
    pipe(p);
    check(splice(f, NULL, p[1], NULL, 1000, 0) == 1000, "splice file -> pipe, 1000 bytes");
    check(lseek(f, 0, SEEK_CUR) == 1000, "the file position moved to 1000");
    check(read(p[0], buf, 2000) == 1000 && same_as_pattern(buf, 0, 1000), "the pipe holds the first 1000 bytes");
    loff_t off = 5000;
    check(splice(f, &off, p[1], NULL, 100, 0) == 100 && off == 5100, "splice with an offset updates it (5100)");
    check(lseek(f, 0, SEEK_CUR) == 1000, "and leaves the file position");
    check(read(p[0], buf, 200) == 100 && same_as_pattern(buf, 5000, 100), "the data came from offset 5000");
    /* Room is counted in pages: from an offset inside a page, the first
     * page is short. */
    off = 100;
    printf("splice 70000 at offset 100 into an empty pipe: %ld\n", (long)splice(f, &off, p[1], NULL, 70000, 0));
    printf("pipe holds %ld\n", drain(p[0]));
    write(p[1], "0123456789", 10);
    off = 0;
    printf("splice 70000 at offset 0 into a pipe holding 10 bytes: %ld\n", (long)splice(f, &off, p[1], NULL, 70000, 0));
    check(drain(p[0]) == 10 + 61440, "10 + 15 pages in the pipe");
    /* Past the end of the file. */
    off = 100000;
    check(splice(f, &off, p[1], NULL, 10, 0) == 0, "splice at the end of the file gives 0");
    /* Pipe into a file. */
    int g = open(D "/dst", O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(p[1], "hello, splice", 13);
    check(splice(p[0], NULL, g, NULL, 100, 0) == 13, "splice pipe -> file takes what the pipe has");
    check(lseek(g, 0, SEEK_CUR) == 13, "the file position moved to 13");
    write(p[1], "XYZ", 3);
    off = 4;
    check(splice(p[0], NULL, g, &off, 2, 0) == 2 && off == 6, "pipe -> file at an offset, 2 of 3 bytes");
    check(pipe_len(p[0]) == 1, "one byte stays in the pipe");
    check(pread(g, buf, 100, 0) == 13 && memcmp(buf, "hellXY splice", 13) == 0, "file content hellXY splice");
    drain(p[0]);
    /* Pipe to pipe. */
    int q[2];
    pipe(q);
    write(p[1], "abcdef", 6);
    check(splice(p[0], NULL, q[1], NULL, 4, 0) == 4, "splice pipe -> pipe, 4 of 6");
    check(read(q[0], buf, 10) == 4 && memcmp(buf, "abcd", 4) == 0, "the second pipe got abcd");
    check(read(p[0], buf, 10) == 2 && memcmp(buf, "ef", 2) == 0, "the first kept ef");
    close(q[0]);
    close(q[1]);
    close(f);
    close(g);
    close(p[0]);
    close(p[1]);
}

static void test_splice_errors(void)
{
    int f = make_file(D "/e", 100);
    int p[2];
    pipe(p);
    check(splice(f, NULL, p[1], NULL, 0, 0) == 0, "len 0 is 0");
    check(splice(-1, NULL, -1, NULL, 0, 99) == 0, "len 0 comes before anything else");
    EXPECT_ERR(EINVAL, "splice(flags 0x10)", splice(f, NULL, p[1], NULL, 10, 0x10));
    EXPECT_ERR(EBADF, "splice(bad in)", splice(99, NULL, p[1], NULL, 10, 0));
    EXPECT_ERR(EBADF, "splice(bad out)", splice(f, NULL, 99, NULL, 10, 0));
    EXPECT_ERR(EBADF, "splice(into the read end)", splice(f, NULL, p[0], NULL, 10, 0));
    EXPECT_ERR(EBADF, "splice(from the write end)", splice(p[1], NULL, f, NULL, 10, 0));
    loff_t off = 0;
    EXPECT_ERR(ESPIPE, "splice(offset on the pipe)", splice(p[0], &off, f, NULL, 10, 0));
    EXPECT_ERR(ESPIPE, "splice(offset on the out pipe)", splice(f, NULL, p[1], &off, 10, 0));
    EXPECT_ERR(EINVAL, "splice(file -> file)", splice(f, NULL, f, NULL, 10, 0));
    EXPECT_ERR(EINVAL, "splice(pipe -> itself)", splice(p[0], NULL, p[1], NULL, 10, 0));
    EXPECT_ERR(EINVAL, "splice(SIZE_MAX)", splice(f, NULL, p[1], NULL, (size_t)-1, 0));
    off = -1;
    EXPECT_ERR(EINVAL, "splice(negative offset)", splice(f, &off, p[1], NULL, 10, 0));
    EXPECT_ERR(EFAULT, "splice(bad offset pointer)", splice(f, (loff_t *)1, p[1], NULL, 10, 0));
    int ap = open(D "/e", O_WRONLY | O_APPEND);
    write(p[1], "x", 1);
    EXPECT_ERR(EINVAL, "splice(into an O_APPEND file)", splice(p[0], NULL, ap, NULL, 10, 0));
    close(ap);
    int dir = open(D, O_RDONLY);
    EXPECT_ERR(EINVAL, "splice(from a directory)", splice(dir, NULL, p[1], NULL, 10, 0));
    close(dir);
    int proc = open("/proc/self/status", O_RDONLY);
    EXPECT_ERR(EINVAL, "splice(from /proc/self/status)", splice(proc, NULL, p[1], NULL, 10, 0));
    close(proc);
    drain(p[0]);
    int g = open(D "/e2", O_CREAT | O_RDWR, 0644);
    EXPECT_ERR(EAGAIN, "splice(empty pipe, SPLICE_F_NONBLOCK)", splice(p[0], NULL, g, NULL, 10, SPLICE_F_NONBLOCK));
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    EXPECT_ERR(EAGAIN, "splice(empty O_NONBLOCK pipe)", splice(p[0], NULL, g, NULL, 10, 0));
    fcntl(p[0], F_SETFL, 0);
    /* A full pipe. */
    int big_fd = make_file(D "/big", 200000);
    while (splice(big_fd, NULL, p[1], NULL, 65536, SPLICE_F_NONBLOCK) > 0)
        ;
    check(pipe_len(p[0]) == 65536, "the pipe is full (65536)");
    EXPECT_ERR(EAGAIN, "splice(into a full pipe, NONBLOCK)", splice(big_fd, NULL, p[1], NULL, 10, SPLICE_F_NONBLOCK));
    drain(p[0]);
    /* End of file and no reader. */
    close(p[1]);
    check(splice(p[0], NULL, g, NULL, 10, 0) == 0, "splice from a pipe without writers gives 0");
    int r[2];
    pipe(r);
    close(r[0]);
    signal(SIGPIPE, SIG_IGN);
    EXPECT_ERR(EPIPE, "splice(into a pipe without readers)", splice(big_fd, NULL, r[1], NULL, 10, 0));
    signal(SIGPIPE, SIG_DFL);
    close(r[1]);
    close(p[0]);
    close(big_fd);
    close(g);
    close(f);
}

static void test_tee(void)
{
    int p[2], q[2];
    pipe(p);
    pipe(q);
    write(p[1], "teedata", 7);
    check(tee(p[0], q[1], 100, 0) == 7, "tee copies 7 bytes");
    check(pipe_len(p[0]) == 7, "the input keeps them");
    check(read(q[0], buf, 100) == 7 && memcmp(buf, "teedata", 7) == 0, "the output has them");
    check(tee(p[0], q[1], 3, 0) == 3, "tee of 3");
    check(read(q[0], buf, 100) == 3 && memcmp(buf, "tee", 3) == 0, "the first 3");
    EXPECT_ERR(EINVAL, "tee(flags 0x10)", tee(p[0], q[1], 0, 0x10));
    check(tee(p[0], q[1], 0, 0) == 0, "tee(len 0) is 0");
    EXPECT_ERR(EINVAL, "tee(same pipe)", tee(p[0], p[1], 10, 0));
    int f = make_file(D "/t", 10);
    EXPECT_ERR(EINVAL, "tee(to a file)", tee(p[0], f, 10, 0));
    EXPECT_ERR(EBADF, "tee(from the write end)", tee(p[1], q[1], 10, 0));
    EXPECT_ERR(EBADF, "tee(bad fd)", tee(99, q[1], 10, 0));
    drain(p[0]);
    EXPECT_ERR(EAGAIN, "tee(empty, NONBLOCK)", tee(p[0], q[1], 10, SPLICE_F_NONBLOCK));
    close(p[1]);
    check(tee(p[0], q[1], 10, 0) == 0, "tee from an empty pipe without writers gives 0");
    close(f);
    close(p[0]);
    close(q[0]);
    close(q[1]);
}

static void test_vmsplice(void)
{
    int p[2];
    pipe(p);
    char a[] = "first", b[] = "second";
    struct iovec iov[2] = { { a, 5 }, { b, 6 } };
    check(vmsplice(p[1], iov, 2, 0) == 11, "vmsplice two iovecs into the pipe");
    char x[4], y[20];
    struct iovec out[2] = { { x, 4 }, { y, 20 } };
    check(vmsplice(p[0], out, 2, 0) == 11, "vmsplice from the read end into two iovecs");
    check(memcmp(x, "firs", 4) == 0 && memcmp(y, "tsecond", 7) == 0, "the data was split across them");
    EXPECT_ERR(EINVAL, "vmsplice(flags 0x10)", vmsplice(p[1], iov, 2, 0x10));
    EXPECT_ERR(EINVAL, "vmsplice(1025 segments)", vmsplice(p[1], iov, 1025, 0));
    EXPECT_ERR(EFAULT, "vmsplice(bad iovec array)", vmsplice(p[1], (struct iovec *)1, 1, 0));
    EXPECT_ERR(EBADF, "vmsplice(bad fd)", vmsplice(99, iov, 1, 0));
    int f = make_file(D "/v", 10);
    EXPECT_ERR(EBADF, "vmsplice(a file)", vmsplice(f, iov, 1, 0));
    struct iovec none = { a, 0 };
    check(vmsplice(f, &none, 1, 0) == 0, "vmsplice of nothing is 0, even to a file");
    EXPECT_ERR(EAGAIN, "vmsplice(from an empty pipe, NONBLOCK)", vmsplice(p[0], out, 1, SPLICE_F_NONBLOCK));
    /* Room: one page left takes one page. */
    int big_fd = make_file(D "/vbig", 100000);
    loff_t off = 0;
    splice(big_fd, &off, p[1], NULL, 15 * 4096, 0);
    static char page_aligned[8192] __attribute__((aligned(4096)));
    struct iovec two_pages = { page_aligned, 8192 };
    check(vmsplice(p[1], &two_pages, 1, SPLICE_F_GIFT) == 4096, "vmsplice of 2 pages into 1 free page: 4096");
    EXPECT_ERR(EAGAIN, "vmsplice(full pipe, NONBLOCK)", vmsplice(p[1], &two_pages, 1, SPLICE_F_NONBLOCK));
    drain(p[0]);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    EXPECT_ERR(EPIPE, "vmsplice(no reader)", vmsplice(p[1], iov, 1, 0));
    signal(SIGPIPE, SIG_DFL);
    close(p[1]);
    close(big_fd);
    close(f);
}

static void test_copy_file_range(void)
{
    int a = make_file(D "/ca", 10000);
    int b = open(D "/cb", O_CREAT | O_RDWR | O_TRUNC, 0644);
    check(copy_file_range(a, NULL, b, NULL, 4000, 0) == 4000, "copy 4000 bytes");
    check(lseek(a, 0, SEEK_CUR) == 4000 && lseek(b, 0, SEEK_CUR) == 4000, "both positions moved");
    loff_t oi = 9000, oo = 100;
    check(copy_file_range(a, &oi, b, &oo, 5000, 0) == 1000, "short at the end of the input: 1000");
    check(oi == 10000 && oo == 1100, "offsets moved by 1000");
    check(lseek(a, 0, SEEK_CUR) == 4000, "the position stays with offsets");
    check(pread(b, buf, 2000, 100) == 2000 && same_as_pattern(buf, 9000, 1000), "data from 9000 at 100");
    oi = 20000;
    check(copy_file_range(a, &oi, b, NULL, 100, 0) == 0, "past the end of the input: 0");
    check(copy_file_range(a, NULL, b, NULL, 0, 0) == 0, "len 0: 0");
    /* The same file. */
    oi = 0;
    oo = 5000;
    check(copy_file_range(a, &oi, a, &oo, 100, 0) == 100, "within one file, no overlap");
    oi = 0;
    oo = 50;
    EXPECT_ERR(EINVAL, "overlapping ranges of one file", copy_file_range(a, &oi, a, &oo, 100, 0));
    oi = 9900;
    oo = 10000;
    check(copy_file_range(a, &oi, a, &oo, 1000, 0) == 100, "touching ranges after shortening are fine");
    EXPECT_ERR(EINVAL, "flags 1", copy_file_range(a, NULL, b, NULL, 10, 1));
    EXPECT_ERR(EBADF, "bad in", copy_file_range(99, NULL, b, NULL, 10, 0));
    EXPECT_ERR(EBADF, "bad out", copy_file_range(a, NULL, 99, NULL, 10, 0));
    int ro = open(D "/cb", O_RDONLY);
    EXPECT_ERR(EBADF, "into a read-only descriptor", copy_file_range(a, NULL, ro, NULL, 10, 0));
    int ap = open(D "/cb", O_WRONLY | O_APPEND);
    EXPECT_ERR(EBADF, "into an O_APPEND descriptor", copy_file_range(a, NULL, ap, NULL, 10, 0));
    int wo = open(D "/ca", O_WRONLY);
    EXPECT_ERR(EBADF, "from a write-only descriptor", copy_file_range(wo, NULL, b, NULL, 10, 0));
    int dir = open(D, O_RDONLY);
    EXPECT_ERR(EISDIR, "from a directory", copy_file_range(dir, NULL, b, NULL, 10, 0));
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "into a pipe", copy_file_range(a, NULL, p[1], NULL, 10, 0));
    int dn = open("/dev/null", O_WRONLY);
    EXPECT_ERR(EINVAL, "into /dev/null", copy_file_range(a, NULL, dn, NULL, 10, 0));
    EXPECT_ERR(EFAULT, "bad offset pointer", copy_file_range(a, (loff_t *)1, b, NULL, 10, 0));
    /* Offsets are added to the length as unsigned numbers. */
    oi = -1;
    EXPECT_ERR(EOVERFLOW, "negative offset", copy_file_range(a, &oi, b, NULL, 10, 0));
    oi = 10;
    EXPECT_ERR(EOVERFLOW, "offset + len wraps", copy_file_range(a, &oi, b, NULL, (size_t)-1, 0));
    oi = -1;
    EXPECT_ERR(EINVAL, "negative offset, len 0", copy_file_range(a, &oi, b, NULL, 0, 0));
    int other = open(D2 "/x", O_CREAT | O_RDWR, 0644);
    EXPECT_ERR(EXDEV, "to another tmpfs", copy_file_range(a, NULL, other, NULL, 10, 0));
    int proc = open("/proc/self/status", O_RDONLY);
    EXPECT_ERR(EXDEV, "from /proc", copy_file_range(proc, NULL, b, NULL, 10, 0));
    close(proc);
    close(other);
    close(dn);
    close(p[0]);
    close(p[1]);
    close(dir);
    close(wo);
    close(ap);
    close(ro);
    close(a);
    close(b);
}

static void test_sendfile(void)
{
    int a = make_file(D "/sa", 50000);
    int b = open(D "/sb", O_CREAT | O_RDWR | O_TRUNC, 0644);
    check(sendfile(b, a, NULL, 20000) == 20000, "sendfile file -> file");
    check(lseek(a, 0, SEEK_CUR) == 20000 && lseek(b, 0, SEEK_CUR) == 20000, "both positions moved");
    off_t off = 45000;
    check(sendfile(b, a, &off, 20000) == 5000 && off == 50000, "with an offset, short at the end: 5000");
    check(lseek(a, 0, SEEK_CUR) == 20000, "the input position stays");
    check(pread(b, buf, 30000, 0) == 25000 && same_as_pattern(buf, 0, 20000) && same_as_pattern(buf + 20000, 45000, 5000),
          "sendfile wrote the expected bytes");
    int p[2];
    pipe(p);
    off = 0;
    check(sendfile(p[1], a, &off, 100) == 100, "sendfile into a pipe");
    check(read(p[0], buf, 200) == 100 && same_as_pattern(buf, 0, 100), "the pipe got the data");
    int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
    check(sendfile(null, zero, NULL, 300000) == 300000, "sendfile /dev/zero -> /dev/null, 300000");
    write(p[1], "x", 1);
    EXPECT_ERR(EINVAL, "sendfile from a pipe", sendfile(b, p[0], NULL, 1));
    off = 0;
    EXPECT_ERR(ESPIPE, "sendfile from a pipe with an offset", sendfile(b, p[0], &off, 1));
    int ap = open(D "/sb", O_WRONLY | O_APPEND);
    EXPECT_ERR(EINVAL, "sendfile into O_APPEND", sendfile(ap, a, NULL, 1));
    EXPECT_ERR(EBADF, "sendfile(bad in)", sendfile(b, 99, NULL, 1));
    EXPECT_ERR(EBADF, "sendfile(bad out)", sendfile(99, a, NULL, 1));
    EXPECT_ERR(EBADF, "sendfile into the read end", sendfile(p[0], a, NULL, 1));
    EXPECT_ERR(EFAULT, "sendfile(bad offset pointer)", sendfile(b, a, (off_t *)1, 1));
    off = -5;
    EXPECT_ERR(EINVAL, "sendfile(negative offset)", sendfile(b, a, &off, 1));
    check(off == -5, "the offset is written back unchanged");
    close(ap);
    close(zero);
    close(null);
    close(p[0]);
    close(p[1]);
    close(a);
    close(b);
}

static void test_chain(void)
{
    /* file -> pipe p -> tee into q -> both to files; vmsplice appended. */
    int src = make_file(D "/chain_src", 30000);
    int d1 = open(D "/chain1", O_CREAT | O_RDWR | O_TRUNC, 0644);
    int d2 = open(D "/chain2", O_CREAT | O_RDWR | O_TRUNC, 0644);
    int p[2], q[2];
    pipe(p);
    pipe(q);
    long moved = 0;
    for (;;) {
        long n = splice(src, NULL, p[1], NULL, 8192, SPLICE_F_MORE);
        if (n <= 0)
            break;
        long t = tee(p[0], q[1], n, 0);
        long a = splice(p[0], NULL, d1, NULL, n, SPLICE_F_MOVE);
        long b = splice(q[0], NULL, d2, NULL, t, 0);
        if (t != n || a != n || b != n) {
            printf("FAIL: chain step n=%ld tee=%ld a=%ld b=%ld\n", n, t, a, b);
            t_failed++;
            break;
        }
        moved += n;
    }
    check(moved == 30000, "30000 bytes went through the chain");
    check(pread(d1, buf, 40000, 0) == 30000 && same_as_pattern(buf, 0, 30000), "the first copy is intact");
    check(pread(d2, buf, 40000, 0) == 30000 && same_as_pattern(buf, 0, 30000), "the tee'd copy is intact");
    struct iovec tail = { "-end", 4 };
    vmsplice(p[1], &tail, 1, 0);
    check(splice(p[0], NULL, d1, NULL, 10, 0) == 4, "vmsplice'd bytes spliced on");
    int d3 = open(D "/chain3", O_CREAT | O_RDWR | O_TRUNC, 0644);
    loff_t oi = 29990;
    check(copy_file_range(d1, &oi, d3, NULL, 100, 0) == 14, "copy_file_range of the tail");
    check(pread(d3, buf, 100, 0) == 14 && memcmp(buf + 10, "-end", 4) == 0, "ends with -end");
    close(d3);
    close(src);
    close(d1);
    close(d2);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
}

/* Under RLIMIT_FSIZE the child reports through a pipe: its stdout may
 * be a file the limit would cut short. */
static int fsize_pipe[2];

static int fsize_child(void *arg)
{
    (void)arg;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { 100, 100 };
    setrlimit(RLIMIT_FSIZE, &rl);
    int a = open(D "/fa", O_RDONLY);
    int b = open(D "/fb", O_CREAT | O_RDWR | O_TRUNC, 0644);
    long r[6];
    loff_t oo = 50;
    r[0] = copy_file_range(a, NULL, b, &oo, 200, 0);
    oo = 100;
    errno = 0;
    r[1] = copy_file_range(a, NULL, b, &oo, 10, 0) == -1 ? errno : 0;
    int p[2];
    pipe(p);
    write(p[1], big, 300);
    loff_t off = 90;
    r[2] = splice(p[0], NULL, b, &off, 300, 0);
    off = 150;
    errno = 0;
    r[3] = splice(p[0], NULL, b, &off, 10, 0) == -1 ? errno : 0;
    off = 0;
    r[4] = sendfile(b, a, NULL, 1000);
    r[5] = lseek(b, 0, SEEK_END);
    write(fsize_pipe[1], r, sizeof r);
    return 0;
}

static void test_fsize(void)
{
    close(make_file(D "/fa", 1000));
    pipe(fsize_pipe);
    int st = run_child(fsize_child, NULL);
    check(st == 0, "RLIMIT_FSIZE child: %s", status_str(st));
    long r[6] = { 0 };
    read(fsize_pipe[0], r, sizeof r);
    printf("copy_file_range 200 at 50 under a 100-byte limit: %ld\n", r[0]);
    printf("copy_file_range at the limit: %s\n", errname((int)r[1]));
    printf("splice 300 at 90 under the limit: %ld\n", r[2]);
    printf("splice past the limit: %s\n", errname((int)r[3]));
    printf("sendfile 1000 under the limit: %ld, size %ld\n", r[4], r[5]);
    close(fsize_pipe[0]);
    close(fsize_pipe[1]);
}

/* The events waiting on `ino`, by watch: "in:ACCESS out:MODIFY". */
static void show_events(const char *what, int ino, int wd_in, int wd_out)
{
    char ev[4096];
    printf("%s:", what);
    long n = read(ino, ev, sizeof ev);
    for (long off = 0; n > 0 && off < n;) {
        struct inotify_event *e = (struct inotify_event *)(ev + off);
        printf(" %s:%s%s%s", e->wd == wd_in ? "in" : e->wd == wd_out ? "out" : "?", e->mask & IN_ACCESS ? "ACCESS" : "",
               e->mask & IN_MODIFY ? "MODIFY" : "", e->mask & IN_ATTRIB ? "ATTRIB" : "");
        off += sizeof *e + e->len;
    }
    printf("\n");
}

static void test_notify(void)
{
    close(make_file(D "/n_in", 10000));
    int in = open(D "/n_in", O_RDONLY), out = open(D "/n_out", O_CREAT | O_RDWR | O_TRUNC, 0644);
    int ino = inotify_init1(IN_NONBLOCK);
    int wd_in = inotify_add_watch(ino, D "/n_in", IN_ACCESS | IN_MODIFY | IN_ATTRIB);
    int wd_out = inotify_add_watch(ino, D "/n_out", IN_ACCESS | IN_MODIFY | IN_ATTRIB);
    int p[2];
    pipe(p);
    loff_t a = 0, b = 0;
    check(splice(in, &a, p[1], NULL, 100, 0) == 100, "splice file -> pipe");
    show_events("splice file -> pipe", ino, wd_in, wd_out);
    check(splice(p[0], NULL, out, &b, 100, 0) == 100, "splice pipe -> file");
    show_events("splice pipe -> file", ino, wd_in, wd_out);
    a = 0;
    b = 200;
    check(copy_file_range(in, &a, out, &b, 50, 0) == 50, "copy_file_range");
    show_events("copy_file_range", ino, wd_in, wd_out);
    a = 0;
    lseek(out, 0, SEEK_END);
    check(sendfile(out, in, &a, 70) == 70, "sendfile");
    show_events("sendfile", ino, wd_in, wd_out);
    a = 20000;
    check(copy_file_range(in, &a, out, NULL, 50, 0) == 0, "copy_file_range past the end");
    show_events("nothing copied", ino, wd_in, wd_out);
    close(p[0]);
    close(p[1]);
    close(in);
    close(out);
    close(ino);
}

int main(void)
{
    t_init("splice");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    while (umount2(D2, MNT_DETACH) == 0)
        ;
    rm_rf(D);
    rm_rf(D2);
    mkdir(D, 0755);
    mkdir(D2, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0 || mount("none", D2, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs: %s\n", errname(errno));
        return 1;
    }
    test_splice_basic();
    test_splice_errors();
    test_tee();
    test_vmsplice();
    test_copy_file_range();
    test_sendfile();
    test_chain();
    test_fsize();
    test_notify();
    umount2(D, MNT_DETACH);
    umount2(D2, MNT_DETACH);
    rmdir(D);
    rmdir(D2);
    return t_done();
}
