/*
 * fs_basic: opening files and moving bytes: open/openat/creat and their
 * flags (O_APPEND, O_CLOEXEC, O_NONBLOCK, O_DIRECTORY, O_CREAT|O_EXCL,
 * O_TRUNC, O_PATH, O_NOFOLLOW), read/write/readv/writev/pread64/pwrite64,
 * lseek (holes read as zeros), sendfile, truncate/ftruncate,
 * fsync/fdatasync, and their error cases.  Works under /tmp/fs_basic.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <limits.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define DIR_ "/tmp/fs_basic"

static long file_size(const char *p)
{
    struct stat st;
    if (stat(p, &st) != 0)
        return -1;
    return (long)st.st_size;
}

static void test_open(void)
{
    int fd = open(DIR_ "/a", O_WRONLY | O_CREAT | O_EXCL, 0644);
    check(fd >= 0, "open(O_CREAT|O_EXCL) new file");
    check(write(fd, "hello", 5) == 5, "write 5 bytes");
    close(fd);
    EXPECT_ERR(EEXIST, "open(O_CREAT|O_EXCL) existing", open(DIR_ "/a", O_WRONLY | O_CREAT | O_EXCL, 0644));
    EXPECT_ERR(ENOENT, "open(missing)", open(DIR_ "/missing", O_RDONLY));
    EXPECT_ERR(ENOENT, "open(missing dir/x, O_CREAT)", open(DIR_ "/nodir/x", O_WRONLY | O_CREAT, 0644));
    EXPECT_ERR(ENOTDIR, "open(file/x)", open(DIR_ "/a/x", O_RDONLY));
    EXPECT_ERR(ENOTDIR, "open(file, O_DIRECTORY)", open(DIR_ "/a", O_RDONLY | O_DIRECTORY));
    EXPECT_ERR(EISDIR, "open(dir, O_WRONLY)", open(DIR_, O_WRONLY));
    EXPECT_ERR(EISDIR, "open(dir, O_RDWR)", open(DIR_, O_RDWR));
    EXPECT_ERR(EISDIR, "open(\"new/\", O_CREAT)", open(DIR_ "/newfile/", O_WRONLY | O_CREAT, 0644));
    EXPECT_ERR(ENOENT, "open(\"\")", open("", O_RDONLY));
    EXPECT_ERR(EFAULT, "open(bad pointer)", syscall(SYS_open, BAD_PTR, O_RDONLY));
    EXPECT_ERR(EINVAL, "open(O_CREAT|O_DIRECTORY)", open(DIR_ "/newdir", O_RDONLY | O_CREAT | O_DIRECTORY, 0755));
    EXPECT_ERR(EINVAL, "open(O_TMPFILE|O_RDONLY)",
               open(DIR_, O_RDONLY | O_TMPFILE, 0644));

    char longname[300];
    memset(longname, 'x', sizeof longname);
    memcpy(longname, DIR_ "/", sizeof DIR_);
    longname[sizeof longname - 1] = 0;
    EXPECT_ERR(ENAMETOOLONG, "open(component of 285 chars)", open(longname, O_RDONLY));
    static char huge[5000];
    memset(huge, 'a', sizeof huge);
    huge[0] = '/';
    for (int i = 100; i < 4999; i += 100)
        huge[i] = '/';
    huge[4999] = 0;
    EXPECT_ERR(ENAMETOOLONG, "open(path of 4999 chars)", open(huge, O_RDONLY));

    check(symlink("loop2", DIR_ "/loop1") == 0 && symlink("loop1", DIR_ "/loop2") == 0, "symlink loop created");
    EXPECT_ERR(ELOOP, "open(symlink loop)", open(DIR_ "/loop1", O_RDONLY));
    check(symlink("a", DIR_ "/link_a") == 0, "symlink link_a -> a");
    EXPECT_ERR(ELOOP, "open(symlink, O_NOFOLLOW)", open(DIR_ "/link_a", O_RDONLY | O_NOFOLLOW));
    fd = open(DIR_ "/link_a", O_RDONLY);
    char buf[64] = { 0 };
    check(fd >= 0 && read(fd, buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0, "open follows symlink");
    close(fd);

    /* openat relative to a directory fd. */
    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(dfd >= 0, "open(dir, O_DIRECTORY)");
    fd = openat(dfd, "a", O_RDONLY);
    memset(buf, 0, sizeof buf);
    check(fd >= 0 && read(fd, buf, 5) == 5 && memcmp(buf, "hello", 5) == 0, "openat(dirfd, \"a\")");
    close(fd);
    fd = openat(-1, DIR_ "/a", O_RDONLY);
    check(fd >= 0, "openat(-1, absolute path) ignores dirfd");
    close(fd);
    EXPECT_ERR(EBADF, "openat(bad dirfd, relative)", openat(999, "a", O_RDONLY));
    int ffd = open(DIR_ "/a", O_RDONLY);
    EXPECT_ERR(ENOTDIR, "openat(file fd, relative)", openat(ffd, "a", O_RDONLY));
    close(ffd);
    close(dfd);

    /* creat == O_WRONLY|O_CREAT|O_TRUNC */
    fd = creat(DIR_ "/a", 0600);
    check(fd >= 0, "creat(existing) succeeds");
    check(file_size(DIR_ "/a") == 0, "creat truncates to 0");
    EXPECT_ERR(EBADF, "read(creat fd)", read(fd, buf, 1));
    check((fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY, "creat fd is O_WRONLY");
    close(fd);

    /* O_TRUNC */
    fd = open(DIR_ "/t", O_RDWR | O_CREAT, 0644);
    write(fd, "0123456789", 10);
    close(fd);
    fd = open(DIR_ "/t", O_RDONLY | O_TRUNC);
    check(fd >= 0, "open(O_RDONLY|O_TRUNC)");
    close(fd);
    printf("size after O_RDONLY|O_TRUNC: %ld\n", file_size(DIR_ "/t"));
    fd = open(DIR_ "/t", O_WRONLY | O_TRUNC);
    close(fd);
    check(file_size(DIR_ "/t") == 0, "O_WRONLY|O_TRUNC empties the file");

    /* O_APPEND: writes go to the end whatever the offset. */
    fd = open(DIR_ "/ap", O_RDWR | O_CREAT | O_APPEND, 0644);
    write(fd, "abc", 3);
    check(lseek(fd, 0, SEEK_SET) == 0, "lseek(O_APPEND fd, 0)");
    write(fd, "def", 3);
    check(lseek(fd, 0, SEEK_CUR) == 6, "offset after O_APPEND write is end of file");
    memset(buf, 0, sizeof buf);
    check(pread(fd, buf, 64, 0) == 6 && memcmp(buf, "abcdef", 6) == 0, "O_APPEND write went to the end");
    /* Linux quirk: pwrite on an O_APPEND fd appends, ignoring the offset. */
    check(pwrite(fd, "XY", 2, 0) == 2, "pwrite(O_APPEND fd, off 0)");
    memset(buf, 0, sizeof buf);
    pread(fd, buf, 64, 0);
    printf("after pwrite at 0 on O_APPEND: %s\n", buf);
    close(fd);

    /* O_CLOEXEC and O_NONBLOCK flags are visible. */
    fd = open(DIR_ "/a", O_RDONLY | O_CLOEXEC);
    check(fcntl(fd, F_GETFD) == FD_CLOEXEC, "O_CLOEXEC sets FD_CLOEXEC");
    close(fd);
    fd = open(DIR_ "/a", O_RDONLY | O_NONBLOCK);
    check((fcntl(fd, F_GETFL) & O_NONBLOCK) != 0, "O_NONBLOCK visible in F_GETFL");
    check(read(fd, buf, 1) == 0, "O_NONBLOCK read of empty regular file returns 0");
    close(fd);

    /* O_PATH: a handle that cannot do I/O. */
    fd = open(DIR_ "/t", O_PATH);
    check(fd >= 0, "open(O_PATH)");
    EXPECT_ERR(EBADF, "read(O_PATH fd)", read(fd, buf, 1));
    EXPECT_ERR(EBADF, "write(O_PATH fd)", write(fd, "x", 1));
    struct stat st;
    check(fstat(fd, &st) == 0 && S_ISREG(st.st_mode), "fstat(O_PATH fd)");
    printf("F_GETFL(O_PATH fd) = 0%o\n", fcntl(fd, F_GETFL));
    close(fd);
    fd = open(DIR_ "/link_a", O_PATH | O_NOFOLLOW);
    check(fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode), "open(symlink, O_PATH|O_NOFOLLOW) refers to the link");
    close(fd);
    fd = open(DIR_, O_PATH | O_DIRECTORY);
    int fd2 = openat(fd, "a", O_RDONLY);
    check(fd2 >= 0, "openat(O_PATH dir fd, \"a\")");
    close(fd2);
    close(fd);

    /* Raw F_GETFL values (the kernel adds O_LARGEFILE on 64-bit). */
    fd = open(DIR_ "/a", O_RDONLY);
    printf("F_GETFL(O_RDONLY) = 0%o\n", fcntl(fd, F_GETFL));
    close(fd);
    fd = open(DIR_ "/a", O_RDWR | O_APPEND);
    printf("F_GETFL(O_RDWR|O_APPEND) = 0%o\n", fcntl(fd, F_GETFL));
    close(fd);
    fd = open(DIR_ "/a", O_WRONLY | O_NONBLOCK);
    printf("F_GETFL(O_WRONLY|O_NONBLOCK) = 0%o\n", fcntl(fd, F_GETFL));
    close(fd);
}

static void test_rw(void)
{
    char buf[128];
    int fd = open(DIR_ "/rw", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(write(fd, "0123456789", 10) == 10, "write 10");
    check(lseek(fd, 0, SEEK_CUR) == 10, "lseek(0, SEEK_CUR) == 10");
    check(lseek(fd, 2, SEEK_SET) == 2, "lseek(2, SEEK_SET)");
    memset(buf, 0, sizeof buf);
    check(read(fd, buf, 3) == 3 && strcmp(buf, "234") == 0, "read 3 at 2");
    check(lseek(fd, -1, SEEK_CUR) == 4, "lseek(-1, SEEK_CUR)");
    check(lseek(fd, -3, SEEK_END) == 7, "lseek(-3, SEEK_END)");
    memset(buf, 0, sizeof buf);
    check(read(fd, buf, 100) == 3 && strcmp(buf, "789") == 0, "short read at end");
    check(read(fd, buf, 100) == 0, "read at EOF returns 0");
    check(read(fd, buf, 0) == 0, "read(len 0) returns 0");
    EXPECT_ERR(EINVAL, "lseek(-1, SEEK_SET)", lseek(fd, -1, SEEK_SET));
    EXPECT_ERR(EINVAL, "lseek(-11, SEEK_END)", lseek(fd, -11, SEEK_END));
    EXPECT_ERR(EINVAL, "lseek(whence 99)", lseek(fd, 0, 99));
    check(lseek(fd, 0, SEEK_CUR) == 10, "offset unchanged by failed lseek");
    EXPECT_ERR(EBADF, "lseek(bad fd)", lseek(999, 0, SEEK_SET));

    /* SEEK_DATA / SEEK_HOLE on a file without holes. */
    check(lseek(fd, 0, SEEK_DATA) == 0, "SEEK_DATA(0) == 0");
    check(lseek(fd, 0, SEEK_HOLE) == 10, "SEEK_HOLE(0) == size");
    EXPECT_ERR(ENXIO, "SEEK_DATA at end of file", lseek(fd, 10, SEEK_DATA));

    /* A hole past the end reads as zeros. */
    check(lseek(fd, 100, SEEK_SET) == 100, "lseek past end");
    check(file_size(DIR_ "/rw") == 10, "lseek alone does not grow the file");
    check(write(fd, "Z", 1) == 1, "write past end");
    check(file_size(DIR_ "/rw") == 101, "size is 101");
    char big[128];
    memset(big, 'q', sizeof big);
    check(pread(fd, big, sizeof big, 0) == 101, "pread whole file");
    int zeros = 1;
    for (int i = 10; i < 100; i++)
        zeros &= big[i] == 0;
    check(zeros && big[100] == 'Z' && memcmp(big, "0123456789", 10) == 0, "hole reads as zeros");

    /* pread/pwrite do not move the offset. */
    off_t off = lseek(fd, 5, SEEK_SET);
    check(pwrite(fd, "ab", 2, 0) == 2, "pwrite at 0");
    memset(buf, 0, sizeof buf);
    check(pread(fd, buf, 4, 0) == 4 && strcmp(buf, "ab23") == 0, "pread sees pwrite");
    check(lseek(fd, 0, SEEK_CUR) == off, "pread/pwrite leave offset alone");
    check(pread(fd, buf, 10, 1000) == 0, "pread past EOF returns 0");
    EXPECT_ERR(EINVAL, "pread(negative offset)", pread(fd, buf, 1, -1));
    EXPECT_ERR(EINVAL, "pwrite(negative offset)", pwrite(fd, buf, 1, -1));

    /* readv / writev */
    check(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0, "reset file");
    struct iovec iov[3] = { { "abc", 3 }, { "", 0 }, { "defgh", 5 } };
    check(writev(fd, iov, 3) == 8, "writev 3+0+5");
    lseek(fd, 0, SEEK_SET);
    char x[2], y[4], z[10];
    memset(z, 0, sizeof z);
    struct iovec riov[3] = { { x, 2 }, { y, 4 }, { z, 10 } };
    check(readv(fd, riov, 3) == 8, "readv returns 8");
    check(memcmp(x, "ab", 2) == 0 && memcmp(y, "cdef", 4) == 0 && strcmp(z, "gh") == 0, "readv scatters correctly");
    check(preadv(fd, riov, 2, 4) == 4 && memcmp(x, "ef", 2) == 0 && memcmp(y, "gh", 2) == 0, "preadv at offset 4");
    check(pwritev(fd, iov, 1, 8) == 3 && file_size(DIR_ "/rw") == 11, "pwritev at end grows file");
    EXPECT_ERR(EINVAL, "writev(iovcnt 1025)", writev(fd, iov, 1025));
    EXPECT_ERR(EINVAL, "writev(iovcnt -1)", writev(fd, iov, -1));
    check(writev(fd, iov, 0) == 0, "writev(iovcnt 0) == 0");
    struct iovec biov[1] = { { BAD_PTR, 4 } };
    EXPECT_ERR(EFAULT, "writev(bad iov_base)", writev(fd, biov, 1));
    EXPECT_ERR(EFAULT, "readv(bad iov array)", readv(fd, BAD_PTR, 1));

    EXPECT_ERR(EFAULT, "read(bad buffer)", (lseek(fd, 0, SEEK_SET), read(fd, BAD_PTR, 4)));
    EXPECT_ERR(EFAULT, "write(bad buffer)", write(fd, BAD_PTR, 4));
    EXPECT_ERR(EBADF, "read(closed fd)", read(999, buf, 1));
    EXPECT_ERR(EBADF, "write(closed fd)", write(999, buf, 1));
    close(fd);

    int ro = open(DIR_ "/rw", O_RDONLY);
    EXPECT_ERR(EBADF, "write(O_RDONLY fd)", write(ro, "x", 1));
    EXPECT_ERR(EBADF, "pwrite(O_RDONLY fd)", pwrite(ro, "x", 1, 0));
    close(ro);
    int d = open(DIR_, O_RDONLY | O_DIRECTORY);
    EXPECT_ERR(EISDIR, "read(directory fd)", read(d, buf, 1));
    close(d);

    int p[2];
    pipe(p);
    EXPECT_ERR(ESPIPE, "lseek(pipe)", lseek(p[0], 0, SEEK_SET));
    EXPECT_ERR(ESPIPE, "pread(pipe)", pread(p[0], buf, 1, 0));
    EXPECT_ERR(ESPIPE, "pwrite(pipe)", pwrite(p[1], buf, 1, 0));
    close(p[0]);
    close(p[1]);
}

static void test_sendfile(void)
{
    int src = open(DIR_ "/sf_src", O_RDWR | O_CREAT | O_TRUNC, 0644);
    char data[10000];
    for (int i = 0; i < (int)sizeof data; i++)
        data[i] = (char)('a' + i % 26);
    write(src, data, sizeof data);
    lseek(src, 0, SEEK_SET);

    int dst = open(DIR_ "/sf_dst", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(sendfile(dst, src, NULL, sizeof data) == (ssize_t)sizeof data, "sendfile file->file, all 10000 bytes");
    check(lseek(src, 0, SEEK_CUR) == (off_t)sizeof data, "sendfile(NULL offset) advances source offset");
    char back[10000];
    check(pread(dst, back, sizeof back, 0) == (ssize_t)sizeof back && memcmp(back, data, sizeof data) == 0,
          "destination has identical bytes");

    off_t off = 100;
    lseek(src, 7, SEEK_SET);
    ftruncate(dst, 0);
    lseek(dst, 0, SEEK_SET);
    check(sendfile(dst, src, &off, 50) == 50, "sendfile with offset 100, 50 bytes");
    check(off == 150, "offset pointer updated to 150");
    check(lseek(src, 0, SEEK_CUR) == 7, "source file offset untouched with an offset pointer");
    check(pread(dst, back, 100, 0) == 50 && memcmp(back, data + 100, 50) == 0, "bytes 100..149 copied");
    off = 9990;
    check(sendfile(dst, src, &off, 100) == 10, "sendfile near EOF is short (10)");
    check(sendfile(dst, src, &off, 100) == 0, "sendfile at EOF returns 0");

    int p[2];
    pipe(p);
    off = 0;
    check(sendfile(p[1], src, &off, 26) == 26, "sendfile file->pipe 26 bytes");
    memset(back, 0, 64);
    check(read(p[0], back, 64) == 26 && memcmp(back, "abcdefghijklmnopqrstuvwxyz", 26) == 0, "pipe received the alphabet");
    EXPECT_ERR(EBADF, "sendfile(bad in fd)", sendfile(dst, 999, NULL, 1));
    EXPECT_ERR(EBADF, "sendfile(out fd O_RDONLY)",
               ({ int r = open(DIR_ "/sf_src", O_RDONLY); long x = sendfile(r, src, NULL, 1); int e = errno; close(r); errno = e; x; }));
    EXPECT_ERR(EBADF, "sendfile(in fd O_WRONLY)",
               ({ int w = open(DIR_ "/sf_src", O_WRONLY); long x = sendfile(dst, w, NULL, 1); int e = errno; close(w); errno = e; x; }));
    EXPECT_ERR(EINVAL, "sendfile(in fd is pipe read end, out file)", sendfile(dst, p[0], NULL, 1));
    close(p[0]);
    close(p[1]);
    close(src);
    close(dst);
}

static void test_truncate(void)
{
    const char *f = DIR_ "/tr";
    int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "abcdefgh", 8);
    check(ftruncate(fd, 3) == 0 && file_size(f) == 3, "ftruncate shrink to 3");
    check(ftruncate(fd, 20) == 0 && file_size(f) == 20, "ftruncate grow to 20");
    char buf[32];
    memset(buf, 'q', sizeof buf);
    int n = (int)pread(fd, buf, sizeof buf, 0);
    int zeros = 1;
    for (int i = 3; i < 20; i++)
        zeros &= buf[i] == 0;
    check(n == 20 && memcmp(buf, "abc", 3) == 0 && zeros, "grown part reads as zeros");
    check(lseek(fd, 0, SEEK_CUR) == 8, "ftruncate does not move the offset");
    check(truncate(f, 5) == 0 && file_size(f) == 5, "truncate(path, 5)");
    check(truncate(f, 0) == 0 && file_size(f) == 0, "truncate(path, 0)");
    /* shrinking then growing must not resurrect old bytes */
    pwrite(fd, "XXXXXXXX", 8, 0);
    ftruncate(fd, 2);
    ftruncate(fd, 8);
    memset(buf, 'q', sizeof buf);
    pread(fd, buf, 8, 0);
    check(memcmp(buf, "XX\0\0\0\0\0\0", 8) == 0, "shrink+grow gives zeros, not old data");
    EXPECT_ERR(EINVAL, "ftruncate(negative)", ftruncate(fd, -1));
    EXPECT_ERR(EINVAL, "truncate(negative)", truncate(f, -1));
    EXPECT_ERR(EISDIR, "truncate(directory)", truncate(DIR_, 0));
    EXPECT_ERR(ENOENT, "truncate(missing)", truncate(DIR_ "/missing", 0));
    EXPECT_ERR(EBADF, "ftruncate(bad fd)", ftruncate(999, 0));
    close(fd);
    fd = open(f, O_RDONLY);
    EXPECT_ERR(EINVAL, "ftruncate(O_RDONLY fd)", ftruncate(fd, 0));
    close(fd);
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "ftruncate(pipe)", ftruncate(p[1], 0));

    /* durability calls */
    fd = open(f, O_RDWR);
    check(fsync(fd) == 0, "fsync(file) == 0");
    check(fdatasync(fd) == 0, "fdatasync(file) == 0");
    close(fd);
    fd = open(f, O_RDONLY);
    check(fsync(fd) == 0, "fsync(O_RDONLY file) == 0");
    close(fd);
    int d = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(fsync(d) == 0, "fsync(directory) == 0");
    close(d);
    EXPECT_ERR(EINVAL, "fsync(pipe)", fsync(p[0]));
    EXPECT_ERR(EINVAL, "fdatasync(pipe)", fdatasync(p[1]));
    EXPECT_ERR(EBADF, "fsync(bad fd)", fsync(999));
    close(p[0]);
    close(p[1]);
    sync();
    check(1, "sync() returns");
    fd = open(f, O_RDONLY);
    check(syncfs(fd) == 0, "syncfs(fd) == 0");
    close(fd);
}

int main(void)
{
    t_init("fs_basic");
    umask(022);
    rm_rf(DIR_);
    check(mkdir(DIR_, 0755) == 0, "mkdir " DIR_);
    test_open();
    test_rw();
    test_sendfile();
    test_truncate();
    rm_rf(DIR_);
    check(access(DIR_, F_OK) != 0, "scratch directory removed");
    return t_done();
}
