/*
 * limits: RLIMIT_FSIZE on every path that grows a regular file.  A write
 * is cut short at the limit; one that starts at or past it raises SIGXFSZ
 * (whose default action kills, with a core if RLIMIT_CORE allows) and,
 * when the signal is ignored or handled, fails with EFBIG.  pwrite,
 * writev, O_APPEND, sendfile and growing truncates obey it; shrinking,
 * pipes, /dev/null and reads do not.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define LIMIT 10000
#define FILE_A "/tmp/limits_a"
#define FILE_B "/tmp/limits_b"

static char big[3 * LIMIT];
static volatile sig_atomic_t xfsz_count;
static volatile int xfsz_code, xfsz_pid;

static void on_xfsz(int s UNUSED, siginfo_t *si, void *u UNUSED)
{
    xfsz_count++;
    xfsz_code = si->si_code;
    xfsz_pid = si->si_pid;
}

static void set_fsize(rlim_t soft)
{
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = soft;
    setrlimit(RLIMIT_FSIZE, &rl);
}

static off_t size_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

static int default_action_child(void *arg UNUSED)
{
    set_fsize(LIMIT);
    int fd = open(FILE_A, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ssize_t n = write(fd, big, sizeof big);
    printf("first write: %zd\n", n);
    n = write(fd, big, 1);
    printf("FAIL: survived the second write (%zd)\n", n);
    return 0;
}

static void test_fsize(void)
{
    memset(big, 'x', sizeof big);
    int st = run_child(default_action_child, NULL);
    printf("write past RLIMIT_FSIZE with SIGXFSZ default: %s, core bit %d\n", status_str(st),
           WCOREDUMP(st) ? 1 : 0);
    check(size_of(FILE_A) == LIMIT, "the file stopped at the limit");

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_xfsz;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGXFSZ, &sa, NULL);
    set_fsize(LIMIT);

    int fd = open(FILE_A, O_CREAT | O_TRUNC | O_RDWR, 0644);
    check(write(fd, big, sizeof big) == LIMIT, "write is cut short at the limit");
    xfsz_count = 0;
    EXPECT_ERR(EFBIG, "write at the limit", write(fd, big, 1));
    check(xfsz_count == 1, "SIGXFSZ handled once");
    check(xfsz_code == SI_USER && xfsz_pid == getpid(), "SIGXFSZ is SI_USER from the process itself");
    EXPECT_ERR(EFBIG, "pwrite at the limit", pwrite(fd, big, 5, LIMIT));
    check(pwrite(fd, big, 5, LIMIT - 1) == 1, "pwrite across the limit writes 1 byte");
    struct iovec iov[2] = { { big, 3 }, { big, 3 } };
    check(pwritev(fd, iov, 2, LIMIT - 4) == 4, "pwritev across the limit writes 4 bytes");
    xfsz_count = 0;
    check(pwritev(fd, iov, 2, LIMIT - 3) == 3, "pwritev reaching the limit at a vector boundary writes 3");
    check(xfsz_count == 0, "... and raises no SIGXFSZ");
    EXPECT_ERR(EFBIG, "ftruncate past the limit", ftruncate(fd, LIMIT + 1));
    EXPECT_OK("ftruncate to the limit", ftruncate(fd, LIMIT));
    EXPECT_OK("ftruncate shrinking", ftruncate(fd, 100));
    EXPECT_ERR(EFBIG, "truncate past the limit", truncate(FILE_A, LIMIT + 100));
    EXPECT_OK("truncate within the limit", truncate(FILE_A, LIMIT - 100));
    close(fd);
    fd = open(FILE_A, O_WRONLY | O_APPEND);
    check(write(fd, big, 500) == 100, "O_APPEND write stops at the limit");
    EXPECT_ERR(EFBIG, "O_APPEND write at the limit", write(fd, big, 1));
    close(fd);

    /* sendfile into a limited file. */
    int src = open(FILE_B, O_CREAT | O_TRUNC | O_RDWR, 0644);
    set_fsize(RLIM_INFINITY);
    write(src, big, sizeof big);
    set_fsize(LIMIT);
    int dst = open(FILE_A, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    off_t off = 0;
    check(sendfile(dst, src, &off, sizeof big) == LIMIT, "sendfile stops at the limit");
    off = 0;
    EXPECT_ERR(EFBIG, "sendfile at the limit", sendfile(dst, src, &off, 10));
    /* Reads are not limited, wherever they start. */
    xfsz_count = 0;
    check(pread(src, big, LIMIT, 2 * LIMIT) == LIMIT, "pread past RLIMIT_FSIZE reads");
    lseek(src, LIMIT + 5, SEEK_SET);
    check(read(src, big, 10) == 10, "read past RLIMIT_FSIZE reads");
    struct iovec riov[2] = { { big, 4 }, { big + 4, 4 } };
    check(preadv(src, riov, 2, 2 * LIMIT) == 8, "preadv past RLIMIT_FSIZE reads");
    check(xfsz_count == 0, "... and raises no SIGXFSZ");
    close(src);
    close(dst);

    /* Not regular files: no limit. */
    int p[2];
    pipe(p);
    check(write(p[1], big, sizeof big) == sizeof big, "pipe write past RLIMIT_FSIZE");
    close(p[0]);
    close(p[1]);
    int null = open("/dev/null", O_WRONLY);
    check(write(null, big, sizeof big) == sizeof big, "/dev/null write past RLIMIT_FSIZE");
    close(null);

    /* Ignored: just EFBIG. */
    signal(SIGXFSZ, SIG_IGN);
    fd = open(FILE_A, O_WRONLY);
    lseek(fd, LIMIT, SEEK_SET);
    xfsz_count = 0;
    EXPECT_ERR(EFBIG, "write with SIGXFSZ ignored", write(fd, big, 1));
    close(fd);
    check(xfsz_count == 0, "ignored SIGXFSZ not delivered");
    signal(SIGXFSZ, SIG_DFL);
    set_fsize(RLIM_INFINITY);
    unlink(FILE_A);
    unlink(FILE_B);
}

int main(void)
{
    t_init("limits");
    test_fsize();
    return t_done();
}
