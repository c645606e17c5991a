/*
 * dev: character devices: /dev/null (EOF, writes vanish), /dev/zero
 * (zeros, also via mmap), /dev/full (ENOSPC), /dev/random and /dev/urandom
 * (full-length reads), their fixed device numbers (1:3, 1:5, 1:7, 1:8,
 * 1:9), /dev/tty and /dev/console exist as character devices, and a
 * device node made with mknod behaves like the original. Writes to the
 * sinks never read their buffer (only its range is checked).
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#define DIR_ "/tmp/dev"

static void test_numbers(void)
{
    const char *names[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom" };
    for (int i = 0; i < 5; i++) {
        struct stat st;
        if (stat(names[i], &st) != 0) {
            check(0, "stat(%s)", names[i]);
            continue;
        }
        printf("%s: %s %u:%u mode 0%o\n", names[i], S_ISCHR(st.st_mode) ? "char" : "not-char",
               major(st.st_rdev), minor(st.st_rdev), st.st_mode & 07777);
    }
    struct stat st;
    check(stat("/dev/tty", &st) == 0 && S_ISCHR(st.st_mode), "/dev/tty is a character device");
    check(stat("/dev/console", &st) == 0 && S_ISCHR(st.st_mode), "/dev/console is a character device");
    check(stat("/dev", &st) == 0 && S_ISDIR(st.st_mode), "/dev is a directory");
    EXPECT_ERR(ENOENT, "stat(/dev/kiln-no-such-device)", stat("/dev/kiln-no-such-device", &st));
}

static void test_null(void)
{
    int fd = open("/dev/null", O_RDWR);
    check(fd >= 0, "open /dev/null O_RDWR");
    char buf[64];
    check(read(fd, buf, sizeof buf) == 0, "read(/dev/null) == 0 (EOF)");
    check(write(fd, "abc", 3) == 3, "write(/dev/null) == 3");
    static char big[1 << 20];
    check(write(fd, big, sizeof big) == (ssize_t)sizeof big, "write 1 MiB to /dev/null");
    check(lseek(fd, 100, SEEK_SET) == 0, "lseek(/dev/null, 100) returns 0");
    check(pwrite(fd, "x", 1, 5) == 1 && pread(fd, buf, 1, 5) == 0, "pread/pwrite on /dev/null");
    struct iovec iov[2] = { { "ab", 2 }, { "cde", 3 } };
    check(writev(fd, iov, 2) == 5, "writev(/dev/null) == 5");
    struct stat st;
    check(fstat(fd, &st) == 0 && st.st_size == 0, "fstat size 0");
    close(fd);
    fd = open("/dev/null", O_WRONLY | O_TRUNC | O_APPEND);
    check(fd >= 0 && write(fd, "q", 1) == 1, "open /dev/null O_TRUNC|O_APPEND and write");
    close(fd);
    EXPECT_ERR(EEXIST, "open(/dev/null, O_CREAT|O_EXCL)", open("/dev/null", O_WRONLY | O_CREAT | O_EXCL, 0644));
    fd = open("/dev/null", O_WRONLY | O_CREAT, 0644);
    check(fd >= 0, "open(/dev/null, O_CREAT) of existing node");
    close(fd);
}

static void test_zero(void)
{
    int fd = open("/dev/zero", O_RDWR);
    check(fd >= 0, "open /dev/zero");
    char buf[5000];
    memset(buf, 'x', sizeof buf);
    check(read(fd, buf, sizeof buf) == (ssize_t)sizeof buf, "read 5000 from /dev/zero");
    int zero = 1;
    for (size_t i = 0; i < sizeof buf; i++)
        zero &= buf[i] == 0;
    check(zero, "all zeros");
    check(write(fd, "abc", 3) == 3, "write(/dev/zero) == 3");
    check(lseek(fd, 123, SEEK_SET) == 0, "lseek(/dev/zero) returns 0");
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    check(m != MAP_FAILED, "mmap(/dev/zero, MAP_PRIVATE)");
    if (m != MAP_FAILED) {
        check(m[0] == 0 && m[8191] == 0, "mapping reads zeros");
        m[100] = 7;
        check(m[100] == 7, "mapping is writable");
        munmap(m, 8192);
    }
    /* MAP_SHARED /dev/zero is shared anonymous memory across fork */
    int *s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(s != MAP_FAILED, "mmap(/dev/zero, MAP_SHARED)");
    if (s != MAP_FAILED) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            s[10] = 4242;
            _exit(0);
        }
        int st;
        wait_for(pid, &st, 0);
        check(s[10] == 4242, "MAP_SHARED /dev/zero mapping shared with child");
        munmap(s, 4096);
    }
    close(fd);
}

/*
 * Linux never reads the buffer of a write to /dev/null or /dev/zero, nor
 * writes one for a read of /dev/null; only the range is checked. A read of
 * /dev/zero that faults part way returns the bytes that landed.
 */
static void test_sink_buffers(void)
{
    int n = open("/dev/null", O_RDWR), z = open("/dev/zero", O_RDWR);
    void *unmapped = (void *)8;
    check(write(n, unmapped, 4) == 4, "write(/dev/null, unmapped buffer) == 4");
    check(read(n, unmapped, 4) == 0, "read(/dev/null, unmapped buffer) == 0");
    check(pwrite(n, unmapped, 4, 9) == 4, "pwrite(/dev/null, unmapped buffer) == 4");
    check(write(z, unmapped, 4) == 4, "write(/dev/zero, unmapped buffer) == 4");
    EXPECT_ERR(EFAULT, "read(/dev/zero, unmapped buffer)", read(z, unmapped, 4));
    EXPECT_ERR(EFAULT, "write(/dev/null, kernel address)", write(n, (void *)0xffff800000001000UL, 4));
    EXPECT_ERR(EFAULT, "read(/dev/null, kernel address)", read(n, (void *)0xffff800000001000UL, 4));
    EXPECT_ERR(EFAULT, "write(/dev/null, range past the user half)", write(n, (void *)0x7fffffffe000UL, 0x3000));

    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(p != MAP_FAILED && munmap(p + 4096, 4096) == 0, "two pages mapped, the second unmapped");
    memset(p, 0x55, 4096);
    check(read(z, p, 8192) == 4096 && p[0] == 0 && p[4095] == 0, "read(/dev/zero) into 1 good page of 2 == 4096");
    memset(p, 0x55, 4096);
    check(read(z, p + 100, 8192) == 3996 && p[99] == 0x55 && p[100] == 0 && p[4095] == 0,
          "read(/dev/zero) at an unaligned start returns the 3996 bytes before the hole");
    munmap(p, 4096);
    close(n);
    close(z);
}

static void test_full(void)
{
    int fd = open("/dev/full", O_RDWR);
    check(fd >= 0, "open /dev/full");
    EXPECT_ERR(ENOSPC, "write(/dev/full)", write(fd, "x", 1));
    char buf[100];
    memset(buf, 'x', sizeof buf);
    check(read(fd, buf, sizeof buf) == 100 && buf[0] == 0 && buf[99] == 0, "read(/dev/full) gives zeros");
    EXPECT_ERR(ENOSPC, "zero-length write to /dev/full", write(fd, "", 0));
    close(fd);
}

static void test_random(void)
{
    const char *names[] = { "/dev/random", "/dev/urandom" };
    for (int i = 0; i < 2; i++) {
        int fd = open(names[i], O_RDONLY);
        check(fd >= 0, "open %s", names[i]);
        unsigned char a[256], b[256];
        check(read(fd, a, sizeof a) == 256, "%s: read 256 returns 256", names[i]);
        check(read(fd, b, sizeof b) == 256, "%s: second read returns 256", names[i]);
        check(memcmp(a, b, sizeof a) != 0, "%s: two reads differ", names[i]);
        int nz = 0;
        for (int j = 0; j < 256; j++)
            nz += a[j] != 0;
        check(nz > 200, "%s: mostly non-zero bytes", names[i]);
        check(read(fd, a, 1) == 1, "%s: read 1", names[i]);
        static unsigned char big[100000];
        ssize_t n = read(fd, big, sizeof big);
        check(n == (ssize_t)sizeof big, "%s: read 100000 returns 100000", names[i]);
        close(fd);
        fd = open(names[i], O_WRONLY);
        check(fd >= 0 && write(fd, "seed", 4) == 4, "%s: writing (mixing entropy) returns the count", names[i]);
        close(fd);
    }
}

static void test_mknod(void)
{
    mkdir(DIR_, 0755);
    const char *p = DIR_ "/mynull";
    unlink(p);
    check(mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0, "mknod(S_IFCHR, 1:3) under /tmp");
    struct stat st;
    check(stat(p, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3,
          "node is char 1:3");
    int fd = open(p, O_RDWR);
    char buf[8];
    check(fd >= 0 && write(fd, "gone", 4) == 4 && read(fd, buf, sizeof buf) == 0, "it behaves like /dev/null");
    close(fd);
    unlink(p);
    check(mknod(DIR_ "/myzero", S_IFCHR | 0600, makedev(1, 5)) == 0, "mknod(1:5)");
    fd = open(DIR_ "/myzero", O_RDONLY);
    memset(buf, 'x', sizeof buf);
    check(fd >= 0 && read(fd, buf, sizeof buf) == 8 && buf[0] == 0 && buf[7] == 0, "it behaves like /dev/zero");
    close(fd);
    unlink(DIR_ "/myzero");
    check(mknod(DIR_ "/reg", S_IFREG | 0644, 0) == 0, "mknod(S_IFREG) creates a regular file");
    check(stat(DIR_ "/reg", &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0, "empty regular file");
    EXPECT_ERR(EEXIST, "mknod(existing)", mknod(DIR_ "/reg", S_IFREG | 0644, 0));
    unlink(DIR_ "/reg");
    EXPECT_ERR(EPERM, "mknod(S_IFDIR)", mknod(DIR_ "/d", S_IFDIR | 0755, 0));
    EXPECT_ERR(ENOENT, "mknod(missing parent)", mknod(DIR_ "/no/x", S_IFIFO | 0644, 0));
    check(rmdir(DIR_) == 0, "scratch directory removed");
}

int main(void)
{
    t_init("dev");
    umask(022);
    unlink(DIR_ "/mynull");
    unlink(DIR_ "/myzero");
    unlink(DIR_ "/reg");
    rmdir(DIR_);
    test_numbers();
    test_null();
    test_zero();
    test_sink_buffers();
    test_full();
    test_random();
    test_mknod();
    return t_done();
}
