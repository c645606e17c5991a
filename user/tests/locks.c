/*
 * locks: advisory file locks between processes.  POSIX record locks
 * (F_GETLK/F_SETLK/F_SETLKW: byte ranges, splitting and merging,
 * l_whence, l_len 0 and negative, the open mode each type needs,
 * EDEADLK between two processes, release on any close and at exit, no
 * inheritance by fork, EINTR), open-file-description locks (F_OFD_*:
 * owned by the description, conflicting with POSIX locks), flock
 * (shared/exclusive, conversion, LOCK_NB, owned by the description,
 * independent of POSIX locks), leases (F_SETLEASE/F_GETLEASE, the break
 * signal with F_SETSIG, EWOULDBLOCK and waiting opens), /proc/locks
 * lines, and the file-owner commands (F_SETOWN/F_GETOWN,
 * F_SETOWN_EX/F_GETOWN_EX, F_SETSIG/F_GETSIG).  Works under /tmp/locks.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>

#define DIR_ "/tmp/locks"
#define FILE_ DIR_ "/f"

static int open_file(int flags)
{
    return open(FILE_, flags | O_CREAT, 0644);
}

static int setlk(int fd, int cmd, short type, short whence, off_t start, off_t len)
{
    struct flock fl = { .l_type = type, .l_whence = whence, .l_start = start, .l_len = len };
    return fcntl(fd, cmd, &fl);
}

/* F_GETLK for a write lock on [start, start+len): "unlocked" or
 * "TYPE start len pid=<who>" where who is parent/child/-1/other. */
static const char *getlk(int fd, int cmd, short type, off_t start, off_t len, pid_t parent)
{
    static char buf[128];
    struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len };
    if (fcntl(fd, cmd, &fl) != 0) {
        snprintf(buf, sizeof buf, "error %s", errname(errno));
        return buf;
    }
    if (fl.l_type == F_UNLCK)
        return "unlocked";
    const char *who = fl.l_pid == parent ? "parent" : fl.l_pid == -1 ? "-1" : fl.l_pid == getpid() ? "self" : "other";
    snprintf(buf, sizeof buf, "%s whence %d start %ld len %ld pid %s", fl.l_type == F_WRLCK ? "WRLCK" : "RDLCK",
             fl.l_whence, (long)fl.l_start, (long)fl.l_len, who);
    return buf;
}

/* Runs fn in a child that reports on stdout; returns its exit status. */
static int in_child(void (*fn)(pid_t parent))
{
    pid_t parent = getpid();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_failed = 0;
        fn(parent);
        fflush(stdout);
        _exit(t_failed ? 1 : 0);
    }
    int st = 0;
    wait_for(pid, &st, 0);
    return st;
}

/* Waits until process `pid` sleeps (a blocked lock request, say). */
static void wait_sleeping(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    for (int i = 0; i < 500; i++) {
        int fd = open(path, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = 0;
            char *p = strrchr(buf, ')');
            if (p && p[1] == ' ' && p[2] == 'S')
                break;
        }
        sleep_ms(10);
    }
    sleep_ms(100);
}

static void child_sees_split(pid_t parent)
{
    int fd = open_file(O_RDWR);
    printf("child: byte 50: %s\n", getlk(fd, F_GETLK, F_WRLCK, 50, 1, parent));
    printf("child: byte 30: %s\n", getlk(fd, F_GETLK, F_WRLCK, 30, 1, parent));
    printf("child: bytes 45..: %s\n", getlk(fd, F_GETLK, F_WRLCK, 45, 0, parent));
    printf("child: read lock at 65: %s\n", getlk(fd, F_GETLK, F_RDLCK, 65, 1, parent));
    printf("child: read lock at 35: %s\n", getlk(fd, F_GETLK, F_RDLCK, 35, 1, parent));
    printf("child: bytes 200..: %s\n", getlk(fd, F_GETLK, F_WRLCK, 200, 0, parent));
    EXPECT_ERR(EAGAIN, "child: F_SETLK write over the parent's lock", setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));
    EXPECT_ERR(EAGAIN, "child: F_SETLK read over the parent's write lock",
               setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 10, 5));
    check(setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 65, 5) == 0, "child: read lock beside the parent's read lock");
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 45, 10) == 0, "child: write lock in the unlocked gap");
    close(fd);
}

static void test_ranges(void)
{
    int fd = open_file(O_RDWR | O_TRUNC);
    check(write(fd, "0123456789", 10) == 10, "write 10 bytes");
    pid_t me = getpid();
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 100) == 0, "write lock 0..99");
    printf("own lock does not conflict: %s\n", getlk(fd, F_GETLK, F_WRLCK, 0, 100, me));
    check(setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 40, 20) == 0, "unlock 40..59 splits it");
    check(setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 60, 10) == 0, "read lock 60..69 converts part of it");
    check(in_child(child_sees_split) == 0, "child sees the split locks");
    /* The child's locks went when it exited. */
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 40, 20) == 0, "the child's locks went at its exit");
    check(setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0) == 0, "unlock everything");

    /* l_whence and l_len forms */
    lseek(fd, 5, SEEK_SET);
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_CUR, 10, 5) == 0, "SEEK_CUR +10 len 5 (bytes 15..19)");
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_END, -2, 2) == 0, "SEEK_END -2 len 2 (bytes 8..9)");
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 50, -10) == 0, "len -10 at 50 (bytes 40..49)");
    check(setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 1000, 0) == 0, "len 0 at 1000 (to end of file)");
    close(fd);

    fd = open_file(O_RDWR);
    EXPECT_ERR(EINVAL, "l_whence 3", setlk(fd, F_SETLK, F_WRLCK, 3, 0, 1));
    EXPECT_ERR(EINVAL, "l_type 7", setlk(fd, F_SETLK, 7, SEEK_SET, 0, 1));
    EXPECT_ERR(EINVAL, "start before 0", setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, -1, 1));
    EXPECT_ERR(EINVAL, "negative length past 0", setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 5, -6));
    EXPECT_ERR(EINVAL, "SEEK_END past 0", setlk(fd, F_SETLK, F_WRLCK, SEEK_END, -11, 1));
    EXPECT_ERR(EOVERFLOW, "end past OFFSET_MAX", setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0x7fffffffffffffffL, 2));
    EXPECT_ERR(EOVERFLOW, "SEEK_END start past OFFSET_MAX",
               setlk(fd, F_SETLK, F_WRLCK, SEEK_END, 0x7fffffffffffffffL, 1));
    EXPECT_ERR(EINVAL, "bad type checked after the range (l_whence 3, l_type 7)", setlk(fd, F_SETLK, 7, 3, 0, 1));
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0x7fffffffffffffffL, 1) == 0, "a lock on the last byte");
    struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
    EXPECT_ERR(EINVAL, "F_GETLK with F_UNLCK", fcntl(fd, F_GETLK, &fl));
    EXPECT_ERR(EFAULT, "F_SETLK bad pointer", fcntl(fd, F_SETLK, BAD_PTR));
    EXPECT_ERR(EFAULT, "F_GETLK bad pointer", fcntl(fd, F_GETLK, BAD_PTR));
    EXPECT_ERR(EBADF, "F_SETLK bad fd", setlk(99, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));
    close(fd);
    int ro = open(FILE_, O_RDONLY), wo = open(FILE_, O_WRONLY), po = open(FILE_, O_PATH);
    EXPECT_ERR(EBADF, "write lock on O_RDONLY", setlk(ro, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));
    EXPECT_ERR(EBADF, "read lock on O_WRONLY", setlk(wo, F_SETLK, F_RDLCK, SEEK_SET, 0, 1));
    check(setlk(ro, F_SETLK, F_RDLCK, SEEK_SET, 0, 1) == 0, "read lock on O_RDONLY");
    check(setlk(wo, F_SETLK, F_WRLCK, SEEK_SET, 5, 1) == 0, "write lock on O_WRONLY");
    check(setlk(ro, F_SETLK, F_UNLCK, SEEK_SET, 0, 0) == 0, "unlock on O_RDONLY unlocks all (same process)");
    EXPECT_ERR(EBADF, "F_SETLK on O_PATH", setlk(po, F_SETLK, F_RDLCK, SEEK_SET, 0, 1));
    EXPECT_ERR(EBADF, "F_GETLK on O_PATH", fcntl(po, F_GETLK, &fl));
    close(ro);
    close(wo);
    close(po);
}

static void child_merged(pid_t parent)
{
    int fd = open_file(O_RDWR);
    printf("child: merged read locks: %s\n", getlk(fd, F_GETLK, F_WRLCK, 0, 0, parent));
    close(fd);
}

static void child_after_close(pid_t parent)
{
    int fd = open_file(O_RDWR);
    printf("child: after the parent closed another fd: %s\n", getlk(fd, F_GETLK, F_WRLCK, 0, 0, parent));
    close(fd);
}

static void child_fork_inherit(pid_t parent)
{
    int fd = 3; /* inherited from the parent */
    printf("child: inherited fd sees: %s\n", getlk(fd, F_GETLK, F_WRLCK, 0, 1, parent));
    EXPECT_ERR(EAGAIN, "child: the parent's POSIX lock is not inherited", setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));
}

static void test_owner_semantics(void)
{
    int fd = open_file(O_RDWR | O_TRUNC);
    check(fd == 3, "file on fd 3");
    check(setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 0, 10) == 0 && setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 10, 10) == 0,
          "two adjacent read locks");
    check(in_child(child_merged) == 0, "child sees one merged lock");
    check(in_child(child_fork_inherit) == 0, "fork does not inherit POSIX locks");
    int other = open(FILE_, O_RDONLY);
    close(other);
    check(in_child(child_after_close) == 0, "closing another descriptor of the file released the locks");
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1) == 0, "lock again");
    int d = dup(fd);
    close(d);
    check(in_child(child_after_close) == 0, "closing a dup releases them too");
    close(fd);
}

static volatile sig_atomic_t got_alarm;
static void on_alarm(int s)
{
    (void)s;
    got_alarm = 1;
}

static void child_blocks(pid_t parent)
{
    (void)parent;
    int fd = open_file(O_RDWR);
    int64_t t0 = mono_ns();
    check(setlk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1) == 0, "child: F_SETLKW waits and gets the lock");
    check(mono_ns() - t0 > 50000000, "child: it waited for the parent's unlock");
    /* EINTR: an alarm without SA_RESTART interrupts a wait. */
    struct sigaction sa = { .sa_handler = on_alarm };
    sigaction(SIGALRM, &sa, NULL);
    int fd2 = open(FILE_, O_RDWR);
    check(syscall(SYS_fcntl, fd2, F_OFD_SETLK, &(struct flock){ .l_type = F_WRLCK, .l_len = 1, .l_start = 10 }) == 0,
          "child: an OFD lock on byte 10 through a second description");
    alarm(1);
    errno = 0;
    int r = setlk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 10, 1);
    int e = errno;
    expect_err_impl(r, e, EINTR, "child: F_SETLKW on its own OFD lock, interrupted by SIGALRM");
    check(got_alarm, "child: the handler ran");
}

static void test_wait_and_intr(void)
{
    int fd = open_file(O_RDWR);
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1) == 0, "parent: write lock byte 0");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_failed = 0;
        child_blocks(getppid());
        _exit(t_failed ? 1 : 0);
    }
    wait_sleeping(pid);
    int unlocked = setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 1) == 0;
    int st = 0;
    wait_for(pid, &st, 0);
    check(unlocked, "parent: unlock byte 0 (while the child waited)");
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child passed");
    close(fd);
}

static void test_deadlock(void)
{
    int fd = open_file(O_RDWR);
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 1) == 0, "parent: lock byte 0");
    int sync[2];
    pipe(sync);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open_file(O_RDWR);
        int ok = setlk(cfd, F_SETLK, F_WRLCK, SEEK_SET, 1, 1) == 0;
        write(sync[1], &ok, sizeof ok);
        /* Waits for byte 0, held by the parent. */
        int r = setlk(cfd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 1);
        _exit(r == 0 ? 0 : 10 + errno);
    }
    int ok = 0;
    read(sync[0], &ok, sizeof ok);
    check(ok, "child: lock byte 1");
    wait_sleeping(pid);
    EXPECT_ERR(EDEADLK, "parent: F_SETLKW on the child's byte 1 while it waits for byte 0",
               setlk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 1, 1));
    EXPECT_ERR(EAGAIN, "parent: F_SETLK on byte 1 is just EAGAIN", setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 1, 1));
    check(setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 1) == 0, "parent: unlock byte 0");
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child got byte 0 after the parent let go");
    check(setlk(fd, F_SETLKW, F_WRLCK, SEEK_SET, 0, 2) == 0, "the child's locks went at exit");
    close(fd);
    close(sync[0]);
    close(sync[1]);
}

static void child_ofd(pid_t parent)
{
    int fd = open_file(O_RDWR);
    printf("child: POSIX F_GETLK sees the OFD lock: %s\n", getlk(fd, F_GETLK, F_WRLCK, 0, 1, parent));
    printf("child: F_OFD_GETLK: %s\n", getlk(fd, F_OFD_GETLK, F_WRLCK, 0, 1, parent));
    printf("child: inherited description owns it: %s\n", getlk(4, F_OFD_GETLK, F_WRLCK, 0, 1, parent));
    check(setlk(4, F_OFD_SETLK, F_WRLCK, SEEK_SET, 0, 1) == 0, "child: the inherited description may relock");
    close(fd);
}

static void test_ofd(void)
{
    int a = open_file(O_RDWR | O_TRUNC);
    int b = open_file(O_RDWR);
    check(a == 3 && b == 4, "descriptions on fds 3 and 4");
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1, .l_pid = 1 };
    EXPECT_ERR(EINVAL, "F_OFD_SETLK with l_pid != 0", fcntl(b, F_OFD_SETLK, &fl));
    EXPECT_ERR(EINVAL, "F_OFD_GETLK with l_pid != 0", fcntl(b, F_OFD_GETLK, &fl));
    EXPECT_ERR(EINVAL, "F_OFD_SETLKW with l_pid != 0", fcntl(b, F_OFD_SETLKW, &fl));
    check(setlk(b, F_OFD_SETLK, F_WRLCK, SEEK_SET, 0, 1) == 0, "OFD write lock through description b");
    EXPECT_ERR(EAGAIN, "OFD lock through description a conflicts, same process",
               setlk(a, F_OFD_SETLK, F_WRLCK, SEEK_SET, 0, 1));
    printf("F_OFD_GETLK through a: %s\n", getlk(a, F_OFD_GETLK, F_RDLCK, 0, 1, getpid()));
    printf("F_OFD_GETLK through b: %s\n", getlk(b, F_OFD_GETLK, F_RDLCK, 0, 1, getpid()));
    EXPECT_ERR(EAGAIN, "POSIX lock of the same process conflicts with the OFD lock",
               setlk(a, F_SETLK, F_WRLCK, SEEK_SET, 0, 1));
    check(setlk(a, F_SETLK, F_WRLCK, SEEK_SET, 5, 1) == 0, "POSIX lock on byte 5");
    EXPECT_ERR(EAGAIN, "OFD lock conflicts with the process's POSIX lock",
               setlk(b, F_OFD_SETLK, F_WRLCK, SEEK_SET, 5, 1));
    int d = dup(b);
    check(setlk(d, F_OFD_SETLK, F_RDLCK, SEEK_SET, 0, 1) == 0, "a dup of b owns b's OFD lock (converts it)");
    close(d);
    printf("after closing the dup, F_OFD_GETLK through a: %s\n", getlk(a, F_OFD_GETLK, F_WRLCK, 0, 1, getpid()));
    check(in_child(child_ofd) == 0, "child sees the OFD lock");
    close(b);
    printf("after closing b: %s\n", getlk(a, F_OFD_GETLK, F_WRLCK, 0, 1, getpid()));
    close(a);
}

static void child_flock(pid_t parent)
{
    (void)parent;
    int fd = open_file(O_RDONLY);
    EXPECT_ERR(EWOULDBLOCK, "child: LOCK_EX|LOCK_NB against the parent's LOCK_SH", flock(fd, LOCK_EX | LOCK_NB));
    check(flock(fd, LOCK_SH | LOCK_NB) == 0, "child: LOCK_SH beside it");
    EXPECT_ERR(EWOULDBLOCK, "child: flock through the inherited description (converting to LOCK_EX) conflicts",
               flock(3, LOCK_EX | LOCK_NB));
    check(flock(fd, LOCK_UN) == 0, "child: LOCK_UN");
    close(fd);
}

static void test_flock(void)
{
    int fd = open_file(O_RDWR | O_TRUNC);
    check(fd == 3, "fd 3");
    check(flock(fd, LOCK_SH) == 0, "LOCK_SH");
    check(flock(fd, LOCK_SH) == 0, "LOCK_SH again");
    check(in_child(child_flock) == 0, "child");
    /* The child's conversion dropped the shared lock of description 3:
     * flock conversion is not atomic on Linux. */
    int other = open_file(O_RDONLY);
    check(flock(other, LOCK_EX | LOCK_NB) == 0, "the failed conversion left description 3 unlocked");
    EXPECT_ERR(EWOULDBLOCK, "LOCK_SH through fd 3 against it", flock(fd, LOCK_SH | LOCK_NB));
    check(flock(other, LOCK_UN) == 0, "LOCK_UN");
    check(flock(fd, LOCK_EX | LOCK_NB) == 0, "LOCK_EX");
    check(setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 0, 0) == 0, "a POSIX write lock beside the flock");
    EXPECT_ERR(EWOULDBLOCK, "LOCK_SH on another description", flock(other, LOCK_SH | LOCK_NB));
    check(flock(fd, LOCK_SH) == 0, "downgrade to LOCK_SH");
    check(flock(other, LOCK_SH | LOCK_NB) == 0, "now another LOCK_SH fits");
    close(other);
    EXPECT_ERR(EINVAL, "flock(LOCK_SH|LOCK_EX)", flock(fd, LOCK_SH | LOCK_EX));
    EXPECT_ERR(EINVAL, "flock(0)", flock(fd, 0));
    EXPECT_ERR(EINVAL, "flock(LOCK_NB)", flock(fd, LOCK_NB));
    EXPECT_ERR(EINVAL, "flock(bad cmd) is checked before the fd", flock(99, 64));
    EXPECT_ERR(EBADF, "flock(bad fd)", flock(99, LOCK_SH));
    check(syscall(SYS_flock, 99, 32 | LOCK_SH) == 0, "LOCK_MAND is ignored with success, even on a bad fd");
    int po = open(FILE_, O_PATH);
    EXPECT_ERR(EBADF, "flock on O_PATH", flock(po, LOCK_SH));
    close(po);
    check(flock(fd, LOCK_UN) == 0 && flock(fd, LOCK_UN) == 0, "LOCK_UN twice");

    /* A blocking LOCK_EX waits for the other description's lock. */
    check(flock(fd, LOCK_EX) == 0, "LOCK_EX held");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd); /* its copy would keep the description's lock alive */
        int cfd = open_file(O_RDONLY);
        int64_t t0 = mono_ns();
        int r = flock(cfd, LOCK_EX);
        _exit(r == 0 && mono_ns() - t0 > 50000000 ? 0 : 1);
    }
    wait_sleeping(pid);
    close(fd); /* the last descriptor of the description: its flock goes */
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the waiting child got LOCK_EX after the close");
}

static volatile sig_atomic_t lease_sig, lease_code, lease_fd;
static void on_lease(int s, siginfo_t *si, void *uc)
{
    (void)uc;
    lease_sig = s;
    lease_code = si->si_code;
    lease_fd = si->si_fd;
}

static void test_leases(void)
{
    int rw = open_file(O_RDWR | O_TRUNC);
    close(rw);
    int fd = open(FILE_, O_RDONLY);
    check(fcntl(fd, F_GETLEASE) == F_UNLCK, "F_GETLEASE without a lease: F_UNLCK");
    EXPECT_ERR(EAGAIN, "F_SETLEASE F_UNLCK without a lease", fcntl(fd, F_SETLEASE, F_UNLCK));
    EXPECT_ERR(EINVAL, "F_SETLEASE 7", fcntl(fd, F_SETLEASE, 7));
    check(fcntl(fd, F_SETLEASE, F_RDLCK) == 0, "read lease on O_RDONLY");
    check(fcntl(fd, F_GETLEASE) == F_RDLCK, "F_GETLEASE: F_RDLCK");
    check(fcntl(fd, F_GETOWN) == getpid(), "taking the lease made us the owner");
    int other = open(FILE_, O_RDONLY);
    check(other >= 0, "another read-only open does not break a read lease");
    check(fcntl(other, F_SETLEASE, F_RDLCK) == 0, "a second read lease");
    EXPECT_ERR(EAGAIN, "a write lease while the file is open elsewhere", fcntl(other, F_SETLEASE, F_WRLCK));
    check(fcntl(other, F_SETLEASE, F_UNLCK) == 0, "drop the second lease");
    close(other);
    check(fcntl(fd, F_SETLEASE, F_WRLCK) == 0, "upgrade to a write lease when ours is the only open");
    check(fcntl(fd, F_GETLEASE) == F_WRLCK, "F_GETLEASE: F_WRLCK");
    check(fcntl(fd, F_SETLEASE, F_RDLCK) == 0, "downgrade");
    int wr = open(DIR_ "/g", O_RDWR | O_CREAT, 0644);
    EXPECT_ERR(EAGAIN, "a read lease on a file open for writing", fcntl(wr, F_SETLEASE, F_RDLCK));
    close(wr);
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "a lease on a pipe", fcntl(p[0], F_SETLEASE, F_RDLCK));
    close(p[0]);
    close(p[1]);

    /* Breaking: the holder gets its F_SETSIG signal, the opener waits. */
    struct sigaction sa = { .sa_sigaction = on_lease, .sa_flags = SA_SIGINFO | SA_RESTART };
    sigaction(SIGUSR1, &sa, NULL);
    check(fcntl(fd, F_SETSIG, SIGUSR1) == 0, "F_SETSIG SIGUSR1");
    int sync[2];
    pipe(sync);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        errno = 0;
        int r = open(FILE_, O_WRONLY | O_NONBLOCK);
        int e = r < 0 ? errno : 0;
        write(sync[1], &e, sizeof e);
        int64_t t0 = mono_ns();
        r = open(FILE_, O_WRONLY);
        _exit(r >= 0 && mono_ns() - t0 > 50000000 ? 0 : 1);
    }
    int e = 0;
    read(sync[0], &e, sizeof e);
    check(e == EWOULDBLOCK, "a non-blocking open for writing: EWOULDBLOCK (%s)", errname(e));
    for (int i = 0; i < 200 && !lease_sig; i++)
        sleep_ms(10);
    check(lease_sig == SIGUSR1, "the holder got SIGUSR1");
    check(lease_code == POLL_MSG, "si_code POLL_MSG");
    check(lease_fd == fd, "si_fd is the lease's descriptor");
    check(fcntl(fd, F_GETLEASE) == F_UNLCK, "F_GETLEASE during the break: the target, F_UNLCK");
    wait_sleeping(pid);
    check(fcntl(fd, F_SETLEASE, F_UNLCK) == 0, "the holder lets go");
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the blocked open went through after the release");
    check(fcntl(fd, F_GETLEASE) == F_UNLCK, "no lease left");
    close(fd);
    close(sync[0]);
    close(sync[1]);
    signal(SIGUSR1, SIG_DFL);
}

/* The /proc/locks line of ours on the test file, with the id stripped. */
static void show_proc_locks(const char *what, int fd, const char *format)
{
    struct stat st;
    fstat(fd, &st);
    char where[64];
    snprintf(where, sizeof where, " %02x:%02x:%lu ", major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino);
    FILE *f = fopen("/proc/locks", "r");
    char line[256];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strstr(line, where))
            continue;
        char *body = strchr(line, ':');
        if (!body || strstr(line, "->"))
            continue;
        /* The exact spacing, as Linux prints it. */
        char expect[256], dev[32];
        snprintf(dev, sizeof dev, "%02x:%02x:%lu", major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino);
        char me[16];
        snprintf(me, sizeof me, "%d", getpid());
        snprintf(expect, sizeof expect, format, me, dev);
        check(strcmp(body + 2, expect) == 0, "/proc/locks %s: spacing as Linux's", what);
        /* Our pid becomes "PID" and the file "FILE", so the line is the
         * same everywhere. */
        char pid[16], out[256] = "";
        snprintf(pid, sizeof pid, " %d ", getpid());
        for (char *tok = strtok(body + 2, " \n"); tok; tok = strtok(NULL, " \n")) {
            char word[64];
            snprintf(word, sizeof word, " %s ", tok);
            const char *w = strcmp(word, pid) == 0 ? "PID" : strcmp(word, where) == 0 ? "FILE" : tok;
            strncat(out, w, sizeof out - strlen(out) - 2);
            strcat(out, " ");
        }
        out[strlen(out) - 1] = '\n';
        printf("/proc/locks %s: %s", what, out);
        found++;
    }
    if (f)
        fclose(f);
    check(found > 0, "/proc/locks lists %s", what);
}

static void test_proc_locks(void)
{
    int fd = open_file(O_RDWR | O_TRUNC);
    setlk(fd, F_SETLK, F_WRLCK, SEEK_SET, 10, 90);
    show_proc_locks("a POSIX write lock", fd, "POSIX  ADVISORY  WRITE %s %s 10 99\n");
    setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0);
    setlk(fd, F_SETLK, F_RDLCK, SEEK_SET, 5, 0);
    show_proc_locks("a POSIX read lock to EOF", fd, "POSIX  ADVISORY  READ %s %s 5 EOF\n");
    setlk(fd, F_SETLK, F_UNLCK, SEEK_SET, 0, 0);
    setlk(fd, F_OFD_SETLK, F_WRLCK, SEEK_SET, 0, 1);
    show_proc_locks("an OFD lock", fd, "OFDLCK ADVISORY  WRITE -1 %.0s%s 0 0\n");
    setlk(fd, F_OFD_SETLK, F_UNLCK, SEEK_SET, 0, 0);
    flock(fd, LOCK_EX);
    show_proc_locks("a flock", fd, "FLOCK  ADVISORY  WRITE %s %s 0 EOF\n");
    flock(fd, LOCK_UN);
    close(fd);
    fd = open(FILE_, O_RDONLY);
    fcntl(fd, F_SETLEASE, F_RDLCK);
    show_proc_locks("a lease", fd, "LEASE  ACTIVE    READ %s %s 0 EOF\n");
    close(fd);
}

static void test_owner_commands(void)
{
    int fd = open_file(O_RDWR);
    struct f_owner_ex ex = { 5, 5 };
    check(fcntl(fd, F_GETOWN) == 0, "F_GETOWN of a fresh file: 0");
    check(fcntl(fd, F_GETOWN_EX, &ex) == 0 && ex.type == F_OWNER_TID && ex.pid == 0,
          "F_GETOWN_EX of a fresh file: F_OWNER_TID, 0");
    check(fcntl(fd, F_GETSIG) == 0, "F_GETSIG: 0");
    check(fcntl(fd, F_SETOWN, getpid()) == 0 && fcntl(fd, F_GETOWN) == getpid(), "F_SETOWN(getpid())");
    check(fcntl(fd, F_GETOWN_EX, &ex) == 0 && ex.type == F_OWNER_PID && ex.pid == getpid(),
          "F_GETOWN_EX: F_OWNER_PID");
    check(fcntl(fd, F_SETOWN, -getpgrp()) == 0 && fcntl(fd, F_GETOWN) == -getpgrp(), "F_SETOWN(-pgrp)");
    check(fcntl(fd, F_GETOWN_EX, &ex) == 0 && ex.type == F_OWNER_PGRP && ex.pid == getpgrp(),
          "F_GETOWN_EX: F_OWNER_PGRP");
    ex.type = F_OWNER_TID;
    ex.pid = (pid_t)syscall(SYS_gettid);
    check(fcntl(fd, F_SETOWN_EX, &ex) == 0 && fcntl(fd, F_GETOWN) == getpid(), "F_SETOWN_EX(F_OWNER_TID)");
    ex.type = 3;
    EXPECT_ERR(EINVAL, "F_SETOWN_EX type 3", fcntl(fd, F_SETOWN_EX, &ex));
    ex.type = F_OWNER_PID;
    ex.pid = 999999;
    EXPECT_ERR(ESRCH, "F_SETOWN_EX of a missing process", fcntl(fd, F_SETOWN_EX, &ex));
    EXPECT_ERR(ESRCH, "F_SETOWN of a missing process", fcntl(fd, F_SETOWN, 999999));
    EXPECT_ERR(ESRCH, "F_SETOWN of a missing group", fcntl(fd, F_SETOWN, -999999));
    EXPECT_ERR(EFAULT, "F_SETOWN_EX bad pointer", fcntl(fd, F_SETOWN_EX, BAD_PTR));
    EXPECT_ERR(EFAULT, "F_GETOWN_EX bad pointer", fcntl(fd, F_GETOWN_EX, BAD_PTR));
    check(fcntl(fd, F_SETOWN, 0) == 0 && fcntl(fd, F_GETOWN) == 0, "F_SETOWN(0) clears");
    check(fcntl(fd, F_SETSIG, SIGRTMIN) == 0 && fcntl(fd, F_GETSIG) == SIGRTMIN, "F_SETSIG(SIGRTMIN)");
    check(fcntl(fd, F_SETSIG, 64) == 0, "F_SETSIG(64)");
    EXPECT_ERR(EINVAL, "F_SETSIG(65)", fcntl(fd, F_SETSIG, 65));
    EXPECT_ERR(EINVAL, "F_SETSIG(-1)", fcntl(fd, F_SETSIG, -1));
    check(fcntl(fd, F_SETSIG, 0) == 0 && fcntl(fd, F_GETSIG) == 0, "F_SETSIG(0) restores SIGIO");
    int d = dup(fd);
    fcntl(fd, F_SETOWN, getpid());
    check(fcntl(d, F_GETOWN) == getpid(), "the owner belongs to the description (a dup sees it)");
    close(d);
    close(fd);
}

int main(void)
{
    t_init("locks");
    unlink(FILE_);
    unlink(DIR_ "/g");
    rmdir(DIR_);
    check(mkdir(DIR_, 0755) == 0, "mkdir " DIR_);
    test_ranges();
    test_owner_semantics();
    test_wait_and_intr();
    test_deadlock();
    test_ofd();
    test_flock();
    test_leases();
    test_proc_locks();
    test_owner_commands();
    unlink(FILE_);
    unlink(DIR_ "/g");
    rmdir(DIR_);
    return t_done();
}
