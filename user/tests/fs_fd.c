/*
 * fs_fd: file descriptors: dup/dup2/dup3, fcntl (F_DUPFD, F_DUPFD_CLOEXEC,
 * F_GETFL/F_SETFL, F_GETFD/F_SETFD), close_range (incl.
 * CLOSE_RANGE_CLOEXEC), lowest-free-fd allocation, EMFILE, shared file
 * offsets, inheritance across fork and exec (a child mode "report" of this
 * program lists its open fds), ioctl FIONREAD/FIONBIO and ENOTTY for
 * terminal ioctls on non-terminals.  Works under /tmp/fs_fd.
 */
#include "common.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>

#define DIR_ "/tmp/fs_fd"
#define CLOSE_RANGE_UNSHARE 2
#define CLOSE_RANGE_CLOEXEC 4

static int is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1;
}

/* Child mode: list fds 3..32 that are open, with their FD_CLOEXEC flag. */
static int report(void)
{
    printf("exec child open fds:");
    for (int fd = 3; fd <= 32; fd++)
        if (is_open(fd))
            printf(" %d", fd);
    printf("\n");
    char buf[16] = { 0 };
    /* fd 6 is a file at offset 3 in the parent */
    if (is_open(6)) {
        printf("fd 6 offset after exec: %ld\n", (long)lseek(6, 0, SEEK_CUR));
        read(6, buf, 4);
        printf("fd 6 reads: %s\n", buf);
    }
    if (is_open(20))
        printf("fd 20 flags: 0%o\n", fcntl(20, F_GETFL));
    return 0;
}

static void test_dup(void)
{
    int fd = open(DIR_ "/f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd == 3, "first open gets fd 3 (lowest free)");
    write(fd, "0123456789", 10);
    int d = dup(fd);
    check(d == 4, "dup returns lowest free fd (4)");
    lseek(fd, 2, SEEK_SET);
    check(lseek(d, 0, SEEK_CUR) == 2, "dup shares the file offset");
    check(fcntl(d, F_GETFD) == 0, "dup clears FD_CLOEXEC");
    close(3);
    int e = dup(d);
    check(e == 3, "dup reuses the freed fd 3");
    check(dup2(d, 10) == 10, "dup2(4, 10) == 10");
    check(dup2(d, 10) == 10, "dup2 onto an open fd replaces it");
    check(dup2(d, d) == d, "dup2(fd, fd) returns fd");
    EXPECT_ERR(EBADF, "dup2(bad fd, fd)", dup2(999, 11));
    EXPECT_ERR(EBADF, "dup2(bad fd, same bad fd)", dup2(999, 999));
    EXPECT_ERR(EBADF, "dup2(fd, -1)", dup2(d, -1));
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    EXPECT_ERR(EBADF, "dup2(fd, RLIMIT_NOFILE)", dup2(d, (int)rl.rlim_cur));
    EXPECT_ERR(EBADF, "dup(bad fd)", dup(999));

    check(dup3(d, 12, O_CLOEXEC) == 12 && fcntl(12, F_GETFD) == FD_CLOEXEC, "dup3(O_CLOEXEC) sets FD_CLOEXEC");
    check(dup3(d, 13, 0) == 13 && fcntl(13, F_GETFD) == 0, "dup3(0) clear");
    EXPECT_ERR(EINVAL, "raw dup3(fd, fd, 0)", syscall(SYS_dup3, d, d, 0));
    EXPECT_ERR(EINVAL, "raw dup3(O_NONBLOCK)", syscall(SYS_dup3, d, 14, O_NONBLOCK));
    EXPECT_ERR(EBADF, "raw dup3(bad fd)", syscall(SYS_dup3, 999, 14, 0));
    check(syscall(SYS_dup3, d, 14, 0) == 14 && fcntl(14, F_GETFD) == 0, "raw dup3(flags 0)");

    check(fcntl(d, F_DUPFD, 20) == 20, "F_DUPFD(20) == 20");
    check(fcntl(d, F_DUPFD, 20) == 21, "F_DUPFD(20) again == 21");
    int c = fcntl(d, F_DUPFD_CLOEXEC, 0);
    check(c == 5 && fcntl(c, F_GETFD) == FD_CLOEXEC, "F_DUPFD_CLOEXEC(0) -> 5 with FD_CLOEXEC");
    EXPECT_ERR(EINVAL, "F_DUPFD(-1)", fcntl(d, F_DUPFD, -1));
    EXPECT_ERR(EINVAL, "F_DUPFD(RLIMIT_NOFILE)", fcntl(d, F_DUPFD, (int)rl.rlim_cur));
    EXPECT_ERR(EBADF, "fcntl(bad fd, F_GETFD)", fcntl(999, F_GETFD));
    EXPECT_ERR(EINVAL, "fcntl(bad cmd)", fcntl(d, 9999));

    check(fcntl(d, F_SETFD, FD_CLOEXEC) == 0 && fcntl(d, F_GETFD) == FD_CLOEXEC, "F_SETFD FD_CLOEXEC");
    check(fcntl(e, F_GETFD) == 0, "FD_CLOEXEC is per descriptor, not shared with dups");
    check(fcntl(d, F_SETFD, 0) == 0 && fcntl(d, F_GETFD) == 0, "F_SETFD 0");
    check(fcntl(d, F_SETFD, 0xfe) == 0 && fcntl(d, F_GETFD) == 0, "F_SETFD ignores unknown bits");

    /* status flags are shared by dups (same open file description) */
    int fl = fcntl(d, F_GETFL);
    check((fl & O_ACCMODE) == O_RDWR && !(fl & O_APPEND), "F_GETFL: O_RDWR, no O_APPEND");
    check(fcntl(d, F_SETFL, fl | O_APPEND | O_NONBLOCK) == 0, "F_SETFL O_APPEND|O_NONBLOCK");
    check((fcntl(e, F_GETFL) & (O_APPEND | O_NONBLOCK)) == (O_APPEND | O_NONBLOCK), "status flags shared with dup");
    lseek(d, 0, SEEK_SET);
    write(d, "X", 1);
    check(lseek(e, 0, SEEK_CUR) == 11, "O_APPEND set by F_SETFL takes effect");
    check(fcntl(d, F_SETFL, O_WRONLY) == 0 && (fcntl(d, F_GETFL) & O_ACCMODE) == O_RDWR,
          "F_SETFL cannot change the access mode");
    printf("F_GETFL after F_SETFL(O_WRONLY): 0%o\n", fcntl(d, F_GETFL));
    check(fcntl(d, F_SETFL, O_APPEND) == 0 && (fcntl(d, F_GETFL) & O_NONBLOCK) == 0, "F_SETFL clears O_NONBLOCK");

    /* an independent open has its own offset */
    int o = open(DIR_ "/f", O_RDONLY);
    lseek(e, 5, SEEK_SET);
    check(lseek(o, 0, SEEK_CUR) == 0, "separate open has its own offset");
    close(o);

    check(close(13) == 0, "close");
    EXPECT_ERR(EBADF, "close(already closed)", close(13));
    EXPECT_ERR(EBADF, "close(-1)", close(-1));
    for (int i = 3; i < 64; i++)
        close(i);
}

static void test_close_range(void)
{
    for (int i = 0; i < 10; i++)
        dup2(1, 10 + i);
    check(syscall(SYS_close_range, 12, 14, 0) == 0, "close_range(12, 14)");
    check(is_open(11) && !is_open(12) && !is_open(14) && is_open(15), "fds 12..14 closed, 11 and 15 open");
    check(syscall(SYS_close_range, 16, 18, CLOSE_RANGE_CLOEXEC) == 0, "close_range(16, 18, CLOEXEC)");
    check(fcntl(16, F_GETFD) == FD_CLOEXEC && fcntl(18, F_GETFD) == FD_CLOEXEC && fcntl(19, F_GETFD) == 0,
          "16..18 marked FD_CLOEXEC, 19 not");
    check(syscall(SYS_close_range, 100, 200, 0) == 0, "close_range over closed fds succeeds");
    EXPECT_ERR(EINVAL, "close_range(first > last)", syscall(SYS_close_range, 15, 14, 0));
    EXPECT_ERR(EINVAL, "close_range(bad flags)", syscall(SYS_close_range, 10, 11, 0x80));
    check(syscall(SYS_close_range, 10, ~0U, CLOSE_RANGE_UNSHARE) == 0, "close_range(10, ~0, UNSHARE)");
    int any = 0;
    for (int i = 10; i < 64; i++)
        any |= is_open(i);
    check(!any, "all fds >= 10 closed");
}

static void test_emfile(void)
{
    struct rlimit old, rl;
    getrlimit(RLIMIT_NOFILE, &old);
    rl.rlim_cur = 16;
    rl.rlim_max = old.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int last = -1, n = 0;
    for (;;) {
        int fd = open(DIR_ "/f", O_RDONLY);
        if (fd < 0) {
            expect_err_impl(fd, errno, EMFILE, "open beyond RLIMIT_NOFILE 16");
            break;
        }
        last = fd;
        n++;
    }
    check(last == 15, "highest fd is 15");
    printf("opened %d more fds\n", n);
    EXPECT_ERR(EMFILE, "dup at limit", dup(0));
    int p[2];
    EXPECT_ERR(EMFILE, "pipe at limit", pipe(p));
    EXPECT_ERR(EMFILE, "F_DUPFD at limit", fcntl(1, F_DUPFD, 0));
    EXPECT_ERR(EBADF, "dup2 to fd 16 (>= limit)", dup2(1, 16));
    close(7);
    check(dup(1) == 7, "freed slot is reused");
    check(open(DIR_ "/f", O_RDONLY) == -1, "full again");
    for (int i = 3; i <= 15; i++)
        close(i);
    setrlimit(RLIMIT_NOFILE, &old);
    check(dup2(1, 100) == 100, "dup2 to 100 after restoring the limit");
    close(100);
}

static void test_inherit(const char *self)
{
    int fd = open(DIR_ "/f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "abcdefgh", 8);
    lseek(fd, 0, SEEK_SET);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = is_open(fd) && lseek(fd, 3, SEEK_SET) == 3;
        char c;
        ok = ok && read(fd, &c, 1) == 1 && c == 'd';
        close(fd);
        _exit(ok ? 0 : 1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child inherited the fd");
    check(lseek(fd, 0, SEEK_CUR) == 4, "child's read moved the shared offset to 4");
    check(is_open(fd), "child's close did not close the parent's fd");

    /* Set up fds 5..10 and 20 with various close-on-exec states, then exec. */
    close(fd);
    fd = open(DIR_ "/f", O_RDONLY);
    dup2(fd, 5);
    fcntl(5, F_SETFD, FD_CLOEXEC);
    dup2(fd, 6);
    lseek(6, 3, SEEK_SET);
    int o = open(DIR_ "/f", O_RDONLY | O_CLOEXEC);
    dup2(o, 7);
    fcntl(7, F_SETFD, FD_CLOEXEC);
    close(o);
    dup3(fd, 8, O_CLOEXEC);
    int x = fcntl(fd, F_DUPFD_CLOEXEC, 9);
    check(x == 9, "F_DUPFD_CLOEXEC(9) == 9");
    dup2(fd, 10);
    fcntl(10, F_SETFD, FD_CLOEXEC);
    fcntl(10, F_SETFD, 0);
    int p[2];
    pipe2(p, O_NONBLOCK);
    dup2(p[0], 20);
    close(p[0]);
    close(p[1]);
    close(fd);
    for (int i = 11; i < 20; i++)
        close(i);
    int q = open(DIR_ "/f", O_RDONLY);
    dup2(q, 25);
    close(q);
    syscall(SYS_close_range, 25, 25, CLOSE_RANGE_CLOEXEC);
    printf("parent open fds before exec:");
    for (int i = 3; i <= 32; i++)
        if (is_open(i))
            printf(" %d", i);
    printf("\n");
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char *argv[] = { (char *)self, "report", NULL };
        char *envp[] = { NULL };
        execve(self, argv, envp);
        _exit(127);
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec child reported");
    for (int i = 3; i < 64; i++)
        close(i);
}

static void test_ioctl(void)
{
    int p[2];
    pipe(p);
    int n = -1;
    check(ioctl(p[0], FIONREAD, &n) == 0 && n == 0, "FIONREAD on empty pipe == 0");
    write(p[1], "hello", 5);
    check(ioctl(p[0], FIONREAD, &n) == 0 && n == 5, "FIONREAD after writing 5 == 5");
    int on = 1;
    char buf[16];
    read(p[0], buf, 5);
    check(ioctl(p[0], FIONBIO, &on) == 0, "FIONBIO on");
    check(fcntl(p[0], F_GETFL) & O_NONBLOCK, "FIONBIO sets O_NONBLOCK");
    EXPECT_ERR(EAGAIN, "read on empty pipe after FIONBIO", read(p[0], buf, 1));
    on = 0;
    check(ioctl(p[0], FIONBIO, &on) == 0 && !(fcntl(p[0], F_GETFL) & O_NONBLOCK), "FIONBIO off");

    struct termios t;
    struct winsize ws;
    EXPECT_ERR(ENOTTY, "TCGETS on a pipe", ioctl(p[0], TCGETS, &t));
    EXPECT_ERR(ENOTTY, "TIOCGWINSZ on a pipe", ioctl(p[1], TIOCGWINSZ, &ws));
    errno = 0;
    check(isatty(p[0]) == 0 && errno == ENOTTY, "isatty(pipe) == 0 with ENOTTY");
    int f = open(DIR_ "/f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(f, "0123456789", 10);
    lseek(f, 4, SEEK_SET);
    EXPECT_ERR(ENOTTY, "TCGETS on a regular file", ioctl(f, TCGETS, &t));
    EXPECT_ERR(ENOTTY, "tcgetattr(regular file)", tcgetattr(f, &t));
    EXPECT_ERR(ENOTTY, "TIOCGPGRP on a regular file", ioctl(f, TIOCGPGRP, &n));
    EXPECT_ERR(ENOTTY, "TIOCSCTTY on a regular file", ioctl(f, TIOCSCTTY, 0));
    EXPECT_ERR(ENOTTY, "unknown ioctl on a regular file", ioctl(f, 0x5401ff, 0));
    check(ioctl(f, FIONREAD, &n) == 0 && n == 6, "FIONREAD on a regular file == size - offset (6)");
    check(ioctl(f, FIONBIO, &on) == 0, "FIONBIO on a regular file");
    check(ioctl(f, FIOCLEX) == 0 && fcntl(f, F_GETFD) == FD_CLOEXEC, "FIOCLEX sets FD_CLOEXEC");
    check(ioctl(f, FIONCLEX) == 0 && fcntl(f, F_GETFD) == 0, "FIONCLEX clears it");
    EXPECT_ERR(EBADF, "ioctl(bad fd)", ioctl(999, FIONREAD, &n));
    EXPECT_ERR(EFAULT, "FIONREAD(bad pointer)", ioctl(p[0], FIONREAD, BAD_PTR));
    int d = open(DIR_, O_RDONLY | O_DIRECTORY);
    EXPECT_ERR(ENOTTY, "TCGETS on a directory", ioctl(d, TCGETS, &t));
    close(d);
    int nul = open("/dev/null", O_RDWR);
    EXPECT_ERR(ENOTTY, "TCGETS on /dev/null", ioctl(nul, TCGETS, &t));
    close(nul);
    close(f);
    close(p[0]);
    close(p[1]);
}

/*
 * CLONE_FILES without CLONE_THREAD: two processes share one table. What
 * the child opens and closes is the parent's too, and the table outlives
 * the child (the last sharer to exit closes it, not the first).
 */
static int shared_fd_victim;

static int files_child(void *arg)
{
    (void)arg;
    int fd = open(DIR_ "/f", O_RDONLY);
    close(shared_fd_victim);
    _exit(fd < 0 ? 255 : fd);
}

static void test_clone_files(void)
{
    static char stack[64 * 1024] __attribute__((aligned(16)));
    int keep = open("/dev/null", O_RDONLY);
    shared_fd_victim = open("/dev/null", O_RDONLY);
    pid_t pid = clone(files_child, stack + sizeof stack, CLONE_FILES | SIGCHLD, NULL);
    int st = 0;
    check(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) != 255,
          "CLONE_FILES child opened a file and exited");
    int child_fd = WEXITSTATUS(st);
    check(fcntl(child_fd, F_GETFD) >= 0, "the descriptor the child opened is open in the parent");
    EXPECT_ERR(EBADF, "the descriptor the child closed", fcntl(shared_fd_victim, F_GETFD));
    check(fcntl(keep, F_GETFD) >= 0, "the parent's other descriptors outlive the child");
    close(child_fd);
    close(keep);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "report") == 0) {
        setvbuf(stdout, NULL, _IONBF, 0);
        return report();
    }
    t_init("fs_fd");
    /* Start from a known table: only 0, 1, 2 may be open. */
    for (int i = 3; i < 1024; i++)
        close(i);
    for (int i = 0; i < 3; i++)
        if (!is_open(i))
            open("/dev/null", O_RDWR);
    umask(022);
    unlink(DIR_ "/f");
    rmdir(DIR_);
    check(mkdir(DIR_, 0755) == 0, "mkdir " DIR_);
    test_dup();
    test_close_range();
    test_emfile();
    test_inherit(argv[0]);
    test_ioctl();
    test_clone_files();
    unlink(DIR_ "/f");
    check(rmdir(DIR_) == 0, "scratch directory removed");
    return t_done();
}
