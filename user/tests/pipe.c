/*
 * pipe: pipe/pipe2 (O_CLOEXEC|O_NONBLOCK), EOF after the writers close,
 * EAGAIN on empty/full non-blocking pipes, pipe capacity, PIPE_BUF
 * atomicity with several writer processes, SIGPIPE (default kills the
 * writer) and EPIPE (SIGPIPE ignored), FIFOs made with mknod/mkfifo
 * opened from two processes, and error cases.  Works under /tmp/pipe.
 */
#include "common.h"
#include <fcntl.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define DIR_ "/tmp/pipe"

static void test_basic(void)
{
    int p[2];
    check(pipe(p) == 0, "pipe");
    check(fcntl(p[0], F_GETFD) == 0 && fcntl(p[1], F_GETFD) == 0, "pipe fds without FD_CLOEXEC");
    printf("F_GETFL read end 0%o, write end 0%o\n", fcntl(p[0], F_GETFL), fcntl(p[1], F_GETFL));
    struct stat st;
    check(fstat(p[0], &st) == 0 && S_ISFIFO(st.st_mode), "fstat(pipe) is S_IFIFO");
    printf("pipe mode 0%o size %ld\n", st.st_mode, (long)st.st_size);
    struct stat st1;
    fstat(p[1], &st1);
    check(st.st_ino == st1.st_ino, "both ends have the same inode");
    check(write(p[1], "hello", 5) == 5, "write 5");
    char buf[64] = { 0 };
    check(read(p[0], buf, 2) == 2 && memcmp(buf, "he", 2) == 0, "read 2");
    check(read(p[0], buf, 64) == 3 && memcmp(buf, "llo", 3) == 0, "read returns the rest (3), not 64");
    EXPECT_ERR(EBADF, "read(write end)", read(p[1], buf, 1));
    EXPECT_ERR(EBADF, "write(read end)", write(p[0], "x", 1));
    check(write(p[1], "", 0) == 0, "write(len 0) == 0");
    write(p[1], "tail", 4);
    close(p[1]);
    memset(buf, 0, sizeof buf);
    check(read(p[0], buf, 64) == 4 && strcmp(buf, "tail") == 0, "data written before close is still read");
    check(read(p[0], buf, 64) == 0, "read after all writers closed returns 0 (EOF)");
    check(read(p[0], buf, 64) == 0, "EOF again");
    close(p[0]);

    EXPECT_ERR(EFAULT, "pipe(bad pointer)", syscall(SYS_pipe, BAD_PTR));
    EXPECT_ERR(EINVAL, "pipe2(bad flags)", pipe2(p, O_APPEND));
    EXPECT_ERR(EINVAL, "pipe2(O_RDWR)", pipe2(p, O_RDWR));

    check(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0, "pipe2(O_CLOEXEC|O_NONBLOCK)");
    check(fcntl(p[0], F_GETFD) == FD_CLOEXEC && fcntl(p[1], F_GETFD) == FD_CLOEXEC, "both ends FD_CLOEXEC");
    check((fcntl(p[0], F_GETFL) & O_NONBLOCK) && (fcntl(p[1], F_GETFL) & O_NONBLOCK), "both ends O_NONBLOCK");
    EXPECT_ERR(EAGAIN, "read(empty non-blocking pipe)", read(p[0], buf, 1));

    /* fill it */
    static char chunk[4096];
    memset(chunk, 'c', sizeof chunk);
    long total = 0;
    for (;;) {
        ssize_t w = write(p[1], chunk, sizeof chunk);
        if (w < 0) {
            expect_err_impl(w, errno, EAGAIN, "write(full non-blocking pipe)");
            break;
        }
        total += w;
    }
    printf("pipe capacity with 4096-byte writes: %ld\n", total);
    int cap = fcntl(p[1], F_GETPIPE_SZ);
    printf("F_GETPIPE_SZ: %d\n", cap);
    int n = -1;
    check(ioctl(p[0], FIONREAD, &n) == 0 && n == total, "FIONREAD == bytes buffered");
    EXPECT_ERR(EAGAIN, "1-byte write to full pipe", write(p[1], "x", 1));
    check(read(p[0], buf, 10) == 10, "read 10 from full pipe");
    /* 10 bytes of space is less than PIPE_BUF: a 4096-byte write must not be split */
    EXPECT_ERR(EAGAIN, "4096-byte write with only 10 bytes free", write(p[1], chunk, 4096));
    close(p[0]);
    close(p[1]);

    /* A non-blocking write larger than PIPE_BUF may be partial. */
    pipe2(p, O_NONBLOCK);
    static char big[100000];
    memset(big, 'b', sizeof big);
    ssize_t w = write(p[1], big, sizeof big);
    check(w > 0 && w < (ssize_t)sizeof big, "non-blocking 100000-byte write is partial");
    printf("partial write wrote %ld\n", (long)w);
    close(p[0]);
    close(p[1]);

    /* F_SETPIPE_SZ */
    pipe(p);
    check(fcntl(p[0], F_SETPIPE_SZ, 4096) == 4096, "F_SETPIPE_SZ(4096)");
    check(fcntl(p[1], F_GETPIPE_SZ) == 4096, "F_GETPIPE_SZ reads it back from the other end");
    check(fcntl(p[0], F_SETPIPE_SZ, 5000) == 8192, "F_SETPIPE_SZ(5000) rounds up to 8192");
    check(fcntl(p[0], F_SETPIPE_SZ, 0) == 4096, "F_SETPIPE_SZ(0) gives one page");
    check(fcntl(p[0], F_SETPIPE_SZ, 12289) == 16384, "F_SETPIPE_SZ(12289) rounds to a power of two pages");
    check(fcntl(p[0], F_SETPIPE_SZ, 1 << 20) == 1 << 20, "F_SETPIPE_SZ(pipe-max-size)");
    /* Past pipe-max-size needs CAP_SYS_RESOURCE (a CI container's root
     * may lack it). */
    errno = 0;
    int grown = fcntl(p[0], F_SETPIPE_SZ, (1 << 20) + 1);
    check(has_cap(CAP_SYS_RESOURCE) ? grown == 2 << 20 : grown == -1 && errno == EPERM,
          "F_SETPIPE_SZ(pipe-max-size + 1): 2 MiB with CAP_SYS_RESOURCE, else EPERM");
    EXPECT_ERR(EINVAL, "F_SETPIPE_SZ(2 GiB + 1)", syscall(SYS_fcntl, p[0], F_SETPIPE_SZ, (1UL << 31) + 1));
    EXPECT_ERR(EINVAL, "F_SETPIPE_SZ(-1)", syscall(SYS_fcntl, p[0], F_SETPIPE_SZ, -1L));
    printf("F_SETPIPE_SZ(4 GiB + 4096): %ld\n", syscall(SYS_fcntl, p[0], F_SETPIPE_SZ, (1UL << 32) + 4096));
    check(fcntl(p[0], F_SETPIPE_SZ, 65536) == 65536, "back to 64 KiB");
    static char data[3 * 4096];
    check(write(p[1], data, sizeof data) == sizeof data, "3 pages of data");
    EXPECT_ERR(EBUSY, "F_SETPIPE_SZ below the data (2 pages)", fcntl(p[0], F_SETPIPE_SZ, 8192));
    check(fcntl(p[0], F_SETPIPE_SZ, 16384) == 16384, "F_SETPIPE_SZ(4 pages) above the data");
    check(fcntl(p[1], F_GETPIPE_SZ) == 16384, "F_GETPIPE_SZ: 16384");
    close(p[0]);
    close(p[1]);
    int fd = open("/proc/self/status", O_RDONLY);
    EXPECT_ERR(EBADF, "F_GETPIPE_SZ on a file", fcntl(fd, F_GETPIPE_SZ));
    EXPECT_ERR(EBADF, "F_SETPIPE_SZ on a file", fcntl(fd, F_SETPIPE_SZ, 4096));
    close(fd);
}

#define WRITERS 4
#define RECORDS 16
#define REC 4096

static void test_atomic(void)
{
    int p[2];
    pipe(p);
    fflush(stdout);
    pid_t kids[WRITERS];
    for (int k = 0; k < WRITERS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            close(p[0]);
            char rec[REC];
            memset(rec, 'A' + k, sizeof rec);
            for (int i = 0; i < RECORDS; i++)
                if (write(p[1], rec, REC) != REC)
                    _exit(1);
            _exit(0);
        }
    }
    close(p[1]);
    static char all[WRITERS * RECORDS * REC + 1];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(p[0], all + got, sizeof all - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(p[0]);
    int ok = 1;
    for (int k = 0; k < WRITERS; k++) {
        int st;
        wait_for(kids[k], &st, 0);
        ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    check(ok, "4 writers exited 0");
    check(got == WRITERS * RECORDS * REC, "reader got 4*16*4096 bytes then EOF");
    int counts[WRITERS] = { 0 };
    int whole = 1;
    for (size_t off = 0; off + REC <= got; off += REC) {
        char c = all[off];
        for (size_t i = 1; i < REC; i++)
            if (all[off + i] != c)
                whole = 0;
        if (c >= 'A' && c < 'A' + WRITERS)
            counts[c - 'A']++;
    }
    check(whole, "no 4096-byte record interleaved (PIPE_BUF atomicity)");
    check(counts[0] == RECORDS && counts[1] == RECORDS && counts[2] == RECORDS && counts[3] == RECORDS,
          "16 records from each writer");
    check(PIPE_BUF == 4096, "PIPE_BUF == 4096");
}

static void test_sigpipe(void)
{
    int p[2];
    pipe(p);
    close(p[0]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        write(p[1], "x", 1);
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    printf("writer to a pipe without readers: %s\n", status_str(st));

    signal(SIGPIPE, SIG_IGN);
    EXPECT_ERR(EPIPE, "write with SIGPIPE ignored", write(p[1], "x", 1));

    /* blocked SIGPIPE: EPIPE and the signal stays pending */
    signal(SIGPIPE, SIG_DFL);
    sigset_t set, old, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, &old);
    EXPECT_ERR(EPIPE, "write with SIGPIPE blocked", write(p[1], "x", 1));
    sigpending(&pend);
    check(sigismember(&pend, SIGPIPE), "SIGPIPE pending after EPIPE");
    signal(SIGPIPE, SIG_IGN); /* discards the pending signal */
    sigpending(&pend);
    check(!sigismember(&pend, SIGPIPE), "setting SIG_IGN discards pending SIGPIPE");
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(p[1]);

    /* a writer blocked on a full pipe gets EPIPE when the reader goes away */
    pipe(p);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        close(p[0]);
        static char buf[65536 * 2];
        memset(buf, 'w', sizeof buf);
        ssize_t w = write(p[1], buf, sizeof buf);
        /* partial write count (pipe size), then EPIPE */
        if (w > 0 && w < (ssize_t)sizeof buf) {
            errno = 0;
            w = write(p[1], buf, 1);
            _exit(w == -1 && errno == EPIPE ? 0 : 2);
        }
        _exit(3);
    }
    close(p[1]);
    /* wait until the child has filled the pipe and is blocked in write */
    for (int i = 0; i < 500; i++) {
        int q = 0;
        ioctl(p[0], FIONREAD, &q);
        if (q >= 65536)
            break;
        sleep_ms(10);
    }
    sleep_ms(20);
    close(p[0]);
    wait_for(pid, &st, 0);
    printf("blocked writer after reader closed: %s\n", status_str(st));
    signal(SIGPIPE, SIG_DFL);
}

static void test_blocking(void)
{
    /* A reader blocks until a writer supplies data. */
    int p[2];
    pipe(p);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        sleep_ms(50);
        write(p[1], "late", 4);
        _exit(0);
    }
    close(p[1]);
    char buf[16] = { 0 };
    int64_t t0 = mono_ns();
    ssize_t r = read(p[0], buf, sizeof buf);
    int64_t dt = mono_ns() - t0;
    check(r == 4 && strcmp(buf, "late") == 0, "blocking read waited for the writer");
    check(dt >= 30000000, "read blocked for at least 30 ms");
    check(read(p[0], buf, sizeof buf) == 0, "then EOF");
    close(p[0]);
    int st;
    wait_for(pid, &st, 0);

    /* The write end stays open while a dup of it exists. */
    pipe(p);
    int d = dup(p[1]);
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    EXPECT_ERR(EAGAIN, "no EOF while a dup of the write end is open", read(p[0], buf, 1));
    close(d);
    check(read(p[0], buf, 1) == 0, "EOF once the last writer is closed");
    close(p[0]);
}

static void test_fifo(void)
{
    mkdir(DIR_, 0755);
    const char *f = DIR_ "/fifo";
    check(mknod(f, S_IFIFO | 0644, 0) == 0, "mknod(S_IFIFO)");
    struct stat st;
    check(stat(f, &st) == 0 && S_ISFIFO(st.st_mode), "stat: S_ISFIFO");
    EXPECT_ERR(EEXIST, "mkfifo(existing)", mkfifo(f, 0644));
    check(mkfifo(DIR_ "/fifo2", 0600) == 0, "mkfifo");
    unlink(DIR_ "/fifo2");

    EXPECT_ERR(ENXIO, "open(fifo, O_WRONLY|O_NONBLOCK) without reader", open(f, O_WRONLY | O_NONBLOCK));
    int r = open(f, O_RDONLY | O_NONBLOCK);
    check(r >= 0, "open(fifo, O_RDONLY|O_NONBLOCK) without writer");
    char buf[64];
    check(read(r, buf, sizeof buf) == 0, "read from writerless fifo returns 0");
    int w = open(f, O_WRONLY | O_NONBLOCK);
    check(w >= 0, "O_WRONLY|O_NONBLOCK open succeeds once a reader exists");
    EXPECT_ERR(EAGAIN, "read with a writer but no data", read(r, buf, sizeof buf));
    write(w, "nb", 2);
    check(read(r, buf, sizeof buf) == 2, "data through the fifo");
    EXPECT_ERR(ESPIPE, "lseek(fifo)", lseek(r, 0, SEEK_SET));
    close(w);
    close(r);
    int rw = open(f, O_RDWR);
    check(rw >= 0, "open(fifo, O_RDWR) does not block on Linux");
    close(rw);

    /* two processes: the writer's open blocks until the reader opens */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(f, O_WRONLY);
        if (fd < 0)
            _exit(1);
        const char *msg = "hello through a fifo";
        write(fd, msg, strlen(msg));
        close(fd);
        _exit(0);
    }
    sleep_ms(30);
    int fd = open(f, O_RDONLY);
    check(fd >= 0, "open(fifo, O_RDONLY) pairs with the child's writer");
    memset(buf, 0, sizeof buf);
    size_t got = 0;
    ssize_t n;
    while ((n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    printf("fifo message: %s\n", buf);
    close(fd);
    int stc;
    wait_for(pid, &stc, 0);
    check(WIFEXITED(stc) && WEXITSTATUS(stc) == 0, "fifo writer exited 0");

    /* reader in the child, writer here */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int rd = open(f, O_RDONLY);
        char b[16] = { 0 };
        ssize_t k = read(rd, b, sizeof b);
        _exit(k == 3 && memcmp(b, "abc", 3) == 0 ? 0 : 1);
    }
    fd = open(f, O_WRONLY);
    check(fd >= 0, "blocking O_WRONLY open completes when the child opens for reading");
    write(fd, "abc", 3);
    close(fd);
    wait_for(pid, &stc, 0);
    check(WIFEXITED(stc) && WEXITSTATUS(stc) == 0, "child read abc from the fifo");
    check(stat(f, &st) == 0 && st.st_size == 0, "fifo size stays 0");
    unlink(f);
    check(rmdir(DIR_) == 0, "scratch directory removed");
}

/* Reads and writes copy straight between user memory and the pipe:
 * buffers not yet touched (faulted in during the copy), and a write whose
 * buffer runs into an unmapped page (the bytes before it go in). */
static void test_user_buffers(void)
{
    int p[2];
    check(pipe(p) == 0, "pipe for the buffer tests");
    size_t len = 16 * 4096;
    char *src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(src != MAP_FAILED && dst != MAP_FAILED, "two fresh 64 KiB mappings");
    /* Untouched source: zero pages, faulted in by the write. */
    check(write(p[1], src, len) == (ssize_t)len, "64 KiB write from untouched memory");
    memset(dst, 1, 4096);
    check(read(p[0], dst, len) == (ssize_t)len, "64 KiB read into mostly untouched memory");
    size_t zeros = 0;
    for (size_t i = 0; i < len; i++)
        zeros += dst[i] == 0;
    check(zeros == len, "what was read is the zeros written");
    for (size_t i = 0; i < len; i++)
        src[i] = (char)(i * 7);
    check(munmap(src + 8192, len - 8192) == 0, "unmap all but the first 2 pages of the source");
    ssize_t w = write(p[1], src, len);
    printf("write running into an unmapped page = %zd\n", w);
    check(read(p[0], dst, len) == w, "read returns what that write put in");
    int same = 1;
    for (ssize_t i = 0; i < w; i++)
        same &= dst[i] == (char)(i * 7);
    check(same, "those bytes are the source's");
    EXPECT_ERR(EFAULT, "write from an unmapped page", write(p[1], src + 8192, 100));
    check(write(p[1], "abc", 3) == 3, "a small write after it goes in whole");
    EXPECT_ERR(EFAULT, "read into an unmapped page", read(p[0], src + 8192, 3));
    check(read(p[0], dst, 3) == 3 && memcmp(dst, "abc", 3) == 0, "the bytes stay for the next read");
    munmap(src, 8192);
    munmap(dst, len);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    t_init("pipe");
    unlink(DIR_ "/fifo");
    unlink(DIR_ "/fifo2");
    rmdir(DIR_);
    test_basic();
    test_atomic();
    test_sigpipe();
    test_blocking();
    test_fifo();
    test_user_buffers();
    return t_done();
}
