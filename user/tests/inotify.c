/*
 * inotify: inotify_init/init1 flags, inotify_add_watch/rm_watch errors
 * and masks (IN_MASK_ADD, IN_MASK_CREATE, IN_ONLYDIR, IN_DONT_FOLLOW,
 * IN_ONESHOT), and the events the VFS operations produce on a watched
 * directory and on watched files: create, open, access, modify,
 * close-write/nowrite, attrib (chmod, chown, utimes, link count),
 * truncate, delete, delete-self with IN_IGNORED, moves with matching
 * cookies and move-self, mkdir/rmdir with IN_ISDIR, merging of identical
 * events, IN_Q_OVERFLOW, FIONREAD, short-buffer reads (EINVAL), blocking
 * and non-blocking reads, and poll/epoll readiness. As another user: a
 * watch needs read permission on its file (EACCES, ENOTDIR first), and
 * instances stop at /proc/sys/fs/inotify/max_user_instances (EMFILE).
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <utime.h>

#define DIR_ "/tmp/inotify_test"

static const char *maskstr(uint32_t m)
{
    static char buf[256];
    static const struct { uint32_t bit; const char *name; } names[] = {
        { IN_ACCESS, "ACCESS" }, { IN_MODIFY, "MODIFY" }, { IN_ATTRIB, "ATTRIB" },
        { IN_CLOSE_WRITE, "CLOSE_WRITE" }, { IN_CLOSE_NOWRITE, "CLOSE_NOWRITE" }, { IN_OPEN, "OPEN" },
        { IN_MOVED_FROM, "MOVED_FROM" }, { IN_MOVED_TO, "MOVED_TO" }, { IN_CREATE, "CREATE" },
        { IN_DELETE, "DELETE" }, { IN_DELETE_SELF, "DELETE_SELF" }, { IN_MOVE_SELF, "MOVE_SELF" },
        { IN_UNMOUNT, "UNMOUNT" }, { IN_Q_OVERFLOW, "Q_OVERFLOW" }, { IN_IGNORED, "IGNORED" },
        { IN_ISDIR, "ISDIR" },
    };
    buf[0] = 0;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (m & names[i].bit) {
            strcat(buf, "|");
            strcat(buf, names[i].name);
            m &= ~names[i].bit;
        }
    if (m)
        sprintf(buf + strlen(buf), "|0x%x", m);
    return buf[0] ? buf + 1 : "0";
}

/* Cookies differ from run to run: events print the cookie as a letter,
 * the same letter for the same cookie within one drain. */
static void drain(const char *what, int fd)
{
    char buf[8192] __attribute__((aligned(8)));
    uint32_t cookies[16];
    int ncookies = 0;
    printf("%s:", what);
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            printf(" [wd%d %s", e->wd, maskstr(e->mask));
            if (e->len)
                printf(" '%s'(len %u)", e->name, e->len);
            if (e->cookie) {
                int c = 0;
                while (c < ncookies && cookies[c] != e->cookie)
                    c++;
                if (c == ncookies && ncookies < 16)
                    cookies[ncookies++] = e->cookie;
                printf(" cookie %c", 'A' + c);
            }
            printf("]");
            p += sizeof *e + e->len;
            total++;
        }
    }
    fcntl(fd, F_SETFL, fl);
    if (!total)
        printf(" none");
    printf("\n");
}

static void test_init(void)
{
    EXPECT_ERR(EINVAL, "inotify_init1(1)", inotify_init1(1));
    EXPECT_ERR(EINVAL, "inotify_init1(O_RDWR)", inotify_init1(O_RDWR));
    int fd = syscall(SYS_inotify_init);
    check(fd >= 0, "inotify_init (the old call)");
    check(fcntl(fd, F_GETFL) == O_RDONLY, "an inotify fd is O_RDONLY");
    close(fd);
    fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    check(fcntl(fd, F_GETFL) == (O_RDONLY | O_NONBLOCK) && fcntl(fd, F_GETFD) == FD_CLOEXEC, "IN_NONBLOCK|IN_CLOEXEC");
    struct stat st;
    fstat(fd, &st);
    printf("fstat: mode %o\n", st.st_mode);
    char link[64] = { 0 }, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    readlink(path, link, sizeof link - 1);
    printf("/proc/self/fd link: %s\n", link);
    char b[64];
    EXPECT_ERR(EAGAIN, "read with no event", read(fd, b, sizeof b));
    EXPECT_ERR(EAGAIN, "read(0 bytes) with no event", read(fd, b, 0));
    EXPECT_ERR(EBADF, "write (read-only file)", write(fd, b, 1));
    int n = -1;
    check(ioctl(fd, FIONREAD, &n) == 0 && n == 0, "FIONREAD 0");
    check(lseek(fd, 5, SEEK_SET) == 0, "lseek stays at 0");
    close(fd);
}

static void test_watch_errors(void)
{
    int fd = inotify_init1(IN_NONBLOCK);
    mkdir(DIR_, 0755);
    close(open(DIR_ "/f", O_CREAT | O_WRONLY, 0644));
    symlink("f", DIR_ "/link");
    EXPECT_ERR(EINVAL, "add_watch(mask 0)", inotify_add_watch(fd, DIR_, 0));
    EXPECT_ERR(EINVAL, "add_watch(unknown bit)", inotify_add_watch(fd, DIR_, IN_MODIFY | 0x800000));
    EXPECT_ERR(EINVAL, "add_watch(MASK_ADD|MASK_CREATE)", inotify_add_watch(fd, DIR_, IN_MODIFY | IN_MASK_ADD | IN_MASK_CREATE));
    EXPECT_ERR(EBADF, "add_watch(bad fd)", inotify_add_watch(99, DIR_, IN_MODIFY));
    EXPECT_ERR(EINVAL, "add_watch(mask 0, bad fd): mask first", inotify_add_watch(99, DIR_, 0));
    int p[2];
    pipe(p);
    EXPECT_ERR(EINVAL, "add_watch(a pipe)", inotify_add_watch(p[0], DIR_, IN_MODIFY));
    EXPECT_ERR(ENOENT, "add_watch(missing path)", inotify_add_watch(fd, DIR_ "/missing", IN_MODIFY));
    EXPECT_ERR(EFAULT, "add_watch(bad path pointer)", inotify_add_watch(fd, BAD_PTR, IN_MODIFY));
    EXPECT_ERR(ENOTDIR, "add_watch(file, IN_ONLYDIR)", inotify_add_watch(fd, DIR_ "/f", IN_MODIFY | IN_ONLYDIR));
    int w1 = inotify_add_watch(fd, DIR_, IN_MODIFY);
    int w2 = inotify_add_watch(fd, DIR_ "/f", IN_MODIFY);
    printf("watch descriptors: %d %d\n", w1, w2);
    printf("same file again: %d\n", inotify_add_watch(fd, DIR_ "/f", IN_ATTRIB));
    printf("through the symlink: %d\n", inotify_add_watch(fd, DIR_ "/link", IN_ATTRIB));
    int w3 = inotify_add_watch(fd, DIR_ "/link", IN_ATTRIB | IN_DONT_FOLLOW);
    printf("the symlink itself (IN_DONT_FOLLOW): a new wd %d\n", w3 != w2 && w3 > 0);
    EXPECT_ERR(EEXIST, "add_watch(IN_MASK_CREATE on a watched file)", inotify_add_watch(fd, DIR_ "/f", IN_MODIFY | IN_MASK_CREATE));
    EXPECT_ERR(EINVAL, "rm_watch(unknown wd)", inotify_rm_watch(fd, 1000));
    EXPECT_ERR(EINVAL, "rm_watch(wd -1)", inotify_rm_watch(fd, -1));
    EXPECT_ERR(EBADF, "rm_watch(bad fd)", inotify_rm_watch(99, w1));
    EXPECT_ERR(EINVAL, "rm_watch(a pipe)", inotify_rm_watch(p[0], w1));
    EXPECT_OK("rm_watch", inotify_rm_watch(fd, w1));
    EXPECT_ERR(EINVAL, "rm_watch twice", inotify_rm_watch(fd, w1));
    int w4 = inotify_add_watch(fd, DIR_, IN_CREATE);
    printf("a new watch after a removal gets a fresh wd: %d\n", w4 > w3);
    drain("queue after rm_watch", fd);
    close(p[0]);
    close(p[1]);
    close(fd);
    unlink(DIR_ "/link");
    unlink(DIR_ "/f");
}

static void test_dir_events(void)
{
    int fd = inotify_init1(0);
    int wd = inotify_add_watch(fd, DIR_, IN_ALL_EVENTS);
    printf("dir wd %d\n", wd);
    int f = open(DIR_ "/a", O_CREAT | O_WRONLY, 0644);
    drain("create", fd);
    write(f, "hello", 5);
    write(f, "hello", 5);
    drain("two writes (merged)", fd);
    close(f);
    drain("close after writing", fd);
    f = open(DIR_ "/a", O_RDONLY);
    char b[16];
    read(f, b, sizeof b);
    read(f, b, sizeof b); /* end of file: no event */
    close(f);
    drain("open, read, read at EOF, close", fd);
    chmod(DIR_ "/a", 0600);
    drain("chmod", fd);
    chown(DIR_ "/a", 0, 0);
    drain("chown", fd);
    utime(DIR_ "/a", NULL);
    drain("utime(NULL)", fd);
    truncate(DIR_ "/a", 2);
    drain("truncate", fd);
    f = open(DIR_ "/a", O_WRONLY | O_TRUNC);
    close(f);
    drain("open O_TRUNC, close", fd);
    link(DIR_ "/a", DIR_ "/b");
    drain("link", fd);
    unlink(DIR_ "/b");
    drain("unlink one link", fd);
    rename(DIR_ "/a", DIR_ "/c");
    drain("rename in the directory", fd);
    mkdir(DIR_ "/sub", 0755);
    drain("mkdir", fd);
    rename(DIR_ "/c", DIR_ "/sub/c");
    drain("rename out of the directory", fd);
    rename(DIR_ "/sub/c", DIR_ "/d");
    drain("rename into the directory", fd);
    int g = open(DIR_ "/sub", O_RDONLY | O_DIRECTORY);
    close(g);
    drain("open and close a subdirectory", fd);
    rmdir(DIR_ "/sub");
    drain("rmdir", fd);
    symlink("d", DIR_ "/s");
    drain("symlink", fd);
    mknod(DIR_ "/fifo", S_IFIFO | 0644, 0);
    drain("mknod fifo", fd);
    unlink(DIR_ "/s");
    unlink(DIR_ "/fifo");
    unlink(DIR_ "/d");
    drain("three unlinks", fd);
    int n = -1;
    ioctl(fd, FIONREAD, &n);
    printf("FIONREAD empty: %d\n", n);
    close(fd);
}

static void test_file_watch(void)
{
    int fd = inotify_init1(IN_NONBLOCK);
    int f = open(DIR_ "/x", O_CREAT | O_RDWR, 0644);
    int dw = inotify_add_watch(fd, DIR_, IN_ALL_EVENTS);
    int fw = inotify_add_watch(fd, DIR_ "/x", IN_ALL_EVENTS);
    printf("dir wd %d, file wd %d\n", dw, fw);
    write(f, "x", 1);
    drain("write to a file watched directly and through its directory", fd);
    int n = -1;
    write(f, "y", 1);
    ioctl(fd, FIONREAD, &n);
    printf("FIONREAD after a write: %d\n", n);
    char small[20];
    EXPECT_ERR(EINVAL, "read(1 byte) with an event queued", read(fd, small, 1));
    EXPECT_ERR(EINVAL, "read(0 bytes) with an event queued", read(fd, small, 0));
    EXPECT_ERR(EINVAL, "read(16 bytes): the named event first needs 32", read(fd, small, 16));
    char one[40];
    check(read(fd, one, 40) == 32, "read(40 bytes) takes the named event only");
    check(read(fd, small, 16) == 16, "read(16 bytes) takes the nameless one");
    close(f);
    drain("close", fd);
    rename(DIR_ "/x", DIR_ "/y");
    drain("rename the watched file", fd);
    unlink(DIR_ "/y");
    drain("unlink the watched file", fd);
    EXPECT_ERR(EINVAL, "rm_watch of the deleted file's wd", inotify_rm_watch(fd, fw));

    /* Unlinked while open: the file dies at its last close. */
    f = open(DIR_ "/open", O_CREAT | O_RDWR, 0644);
    int opw = inotify_add_watch(fd, DIR_ "/open", IN_ALL_EVENTS);
    unlink(DIR_ "/open");
    printf("watched file unlinked while open (wd %d):\n", opw);
    drain("  at the unlink", fd);
    write(f, "z", 1);
    close(f);
    drain("  a write and the last close", fd);

    /* Watch a directory, remove it. */
    mkdir(DIR_ "/gone", 0755);
    int gw = inotify_add_watch(fd, DIR_ "/gone", IN_ALL_EVENTS);
    rmdir(DIR_ "/gone");
    printf("watched subdirectory removed (wd %d):\n", gw);
    drain("  events", fd);

    /* IN_ONESHOT. */
    f = open(DIR_ "/o", O_CREAT | O_WRONLY, 0644);
    int ow = inotify_add_watch(fd, DIR_ "/o", IN_MODIFY | IN_ONESHOT);
    write(f, "1", 1);
    write(f, "2", 1);
    printf("one-shot watch wd %d:\n", ow);
    drain("  two writes", fd);
    EXPECT_ERR(EINVAL, "rm_watch of a fired one-shot watch", inotify_rm_watch(fd, ow));
    /* IN_MASK_ADD. */
    ow = inotify_add_watch(fd, DIR_ "/o", IN_MODIFY);
    inotify_add_watch(fd, DIR_ "/o", IN_ATTRIB | IN_MASK_ADD);
    write(f, "3", 1);
    fchmod(f, 0600);
    drain("IN_MASK_ADD: modify and attrib", fd);
    inotify_add_watch(fd, DIR_ "/o", IN_ATTRIB);
    write(f, "4", 1);
    fchmod(f, 0644);
    drain("mask replaced by IN_ATTRIB alone", fd);
    close(f);
    unlink(DIR_ "/o");
    drain("(cleanup)", fd);
    inotify_rm_watch(fd, dw);
    drain("rm_watch of the directory", fd);
    close(fd);
}

static void test_readiness(void)
{
    int fd = inotify_init1(0);
    inotify_add_watch(fd, DIR_, IN_CREATE);
    struct pollfd p = { fd, POLLIN | POLLOUT, 0 };
    printf("poll, empty: %d\n", poll(&p, 1, 0));
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 9 }, out[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        usleep(20000);
        close(open(DIR_ "/child", O_CREAT | O_WRONLY, 0644));
        _exit(0);
    }
    int n = epoll_wait(ep, out, 2, 5000);
    check(n == 1 && out[0].data.u64 == 9, "epoll_wait woken by a file created in another process");
    p.revents = 0;
    int pr = poll(&p, 1, 0);
    printf("poll, event queued: %d revents 0x%x\n", pr, p.revents);
    drain("the child's create", fd);
    int st;
    wait_for(pid, &st, 0);
    /* A blocking read. */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        usleep(20000);
        close(open(DIR_ "/child2", O_CREAT | O_WRONLY, 0644));
        _exit(0);
    }
    char buf[256];
    ssize_t r = read(fd, buf, sizeof buf);
    struct inotify_event *e = (struct inotify_event *)buf;
    check(r > 0 && (e->mask & IN_CREATE) && strcmp(e->name, "child2") == 0, "a blocking read gets the event");
    wait_for(pid, &st, 0);
    unlink(DIR_ "/child");
    unlink(DIR_ "/child2");
    close(ep);
    close(fd);
}

static void test_overflow(void)
{
    int fd = inotify_init1(IN_NONBLOCK);
    close(open(DIR_ "/ov", O_CREAT | O_WRONLY, 0644));
    inotify_add_watch(fd, DIR_ "/ov", IN_OPEN | IN_CLOSE_NOWRITE);
    /* Alternating events are never merged: 2 per open and close. */
    for (int i = 0; i < 8300; i++)
        close(open(DIR_ "/ov", O_RDONLY));
    int n = -1;
    ioctl(fd, FIONREAD, &n);
    printf("FIONREAD after 16600 events: %d\n", n);
    static char buf[65536];
    int events = 0, overflow = 0, last_wd = 0;
    uint32_t last_mask = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r <= 0)
            break;
        for (char *p = buf; p < buf + r;) {
            struct inotify_event *e = (struct inotify_event *)p;
            events++;
            if (e->mask & IN_Q_OVERFLOW)
                overflow++;
            last_wd = e->wd;
            last_mask = e->mask;
            p += sizeof *e + e->len;
        }
    }
    printf("read %d events, %d overflow, the last one wd %d %s\n", events, overflow, last_wd, maskstr(last_mask));
    close(open(DIR_ "/ov", O_RDONLY));
    drain("after the overflow was read", fd);
    unlink(DIR_ "/ov");
    close(fd);
}

/* As a user of its own (so no other process's instances count): a watch
 * needs read permission on what it watches and search permission on the
 * way there; the user's instances stop at max_user_instances. */
static void test_permission_and_limits(void)
{
    mkdir(DIR_ "/priv", 0700);
    close(open(DIR_ "/priv/in", O_CREAT | O_WRONLY, 0644));
    close(open(DIR_ "/secret", O_CREAT | O_WRONLY, 0600));
    close(open(DIR_ "/pub", O_CREAT | O_WRONLY, 0644));
    long max = -1;
    FILE *f = fopen("/proc/sys/fs/inotify/max_user_instances", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = -1;
        fclose(f);
    }
    check(max > 0, "/proc/sys/fs/inotify/max_user_instances is readable");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_checks = t_failed = 0;
        if (setresgid(54321, 54321, 54321) != 0 || setresuid(54321, 54321, 54321) != 0) {
            printf("FAIL: cannot become user 54321\n");
            _exit(1);
        }
        int fd = inotify_init1(0);
        EXPECT_ERR(EACCES, "as a user: watch root's 0600 file", inotify_add_watch(fd, DIR_ "/secret", IN_MODIFY));
        EXPECT_ERR(EACCES, "as a user: watch root's 0700 directory", inotify_add_watch(fd, DIR_ "/priv", IN_CREATE));
        EXPECT_ERR(EACCES, "as a user: watch a file under it (no search)", inotify_add_watch(fd, DIR_ "/priv/in", IN_MODIFY));
        EXPECT_ERR(ENOTDIR, "as a user: IN_ONLYDIR on the 0600 file (ENOTDIR first)",
                   inotify_add_watch(fd, DIR_ "/secret", IN_MODIFY | IN_ONLYDIR));
        check(inotify_add_watch(fd, DIR_ "/pub", IN_MODIFY) > 0, "as a user: watch a 0644 file");
        int n = 1, last = fd, e = 0;
        for (;;) {
            int more = inotify_init1(IN_CLOEXEC);
            if (more < 0) {
                e = errno;
                break;
            }
            last = more;
            if (++n > max + 8)
                break;
        }
        printf("the user's instance max_user_instances + 1 fails with %s: %d\n", errname(e), n == max);
        close(last);
        check(inotify_init1(0) >= 0, "closing one makes room for another");
        _exit(t_failed ? 1 : 0);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the user's checks passed");
    unlink(DIR_ "/priv/in");
    rmdir(DIR_ "/priv");
    unlink(DIR_ "/secret");
    unlink(DIR_ "/pub");
}

/* Leftovers of an interrupted earlier run. */
static void clean(void)
{
    static const char *names[] = { "f", "link", "a", "b", "c", "d", "s", "fifo", "x", "y", "o", "ov", "child",
                                   "child2", "sub/c", "sub", "gone", "open", "priv/in", "priv", "secret", "pub" };
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", DIR_, names[i]);
        if (unlink(path) != 0)
            rmdir(path);
    }
    rmdir(DIR_);
}

int main(void)
{
    t_init("inotify");
    clean();
    test_init();
    test_watch_errors();
    test_dir_events();
    test_file_watch();
    test_readiness();
    test_overflow();
    test_permission_and_limits();
    rmdir(DIR_);
    return t_done();
}
