/*
 * chroot: a process root. Paths, absolute symlinks and ".." stop at it;
 * getcwd shows a working directory outside it as "(unreachable)";
 * /proc/self/root, /proc/self/mounts and mountinfo see the tree from it;
 * a descriptor opened before leads outside; children inherit it; the
 * errnos (ENOTDIR, ENOENT, EACCES, EPERM without CAP_SYS_CHROOT). Then
 * pivot_root's refusals (EPERM, ENOTDIR, EINVAL when the root is not a
 * mount point, EBUSY). The new root is a tmpfs at /tmp/chroot_t with a
 * /proc inside.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define D "/tmp/chroot_t"

static long raw_getcwd(char *buf, size_t n)
{
    return syscall(SYS_getcwd, buf, n);
}

static void show_cwd(const char *what)
{
    char buf[256];
    long n = raw_getcwd(buf, sizeof buf);
    if (n < 0)
        printf("%s: getcwd %s\n", what, errname(errno));
    else
        printf("%s: getcwd \"%s\"\n", what, buf);
}

static void show_file(const char *what, const char *path)
{
    char buf[128] = { 0 };
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("%s: %s\n", what, errname(errno));
        return;
    }
    read(fd, buf, sizeof buf - 1);
    close(fd);
    printf("%s: \"%s\"\n", what, buf);
}

/* A mountinfo file from field 4 on (ids and devices differ). */
static void show_mountinfo(const char *path)
{
    static char text[65536];
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("mountinfo: %s\n", errname(errno));
        return;
    }
    long n = 0, r;
    while ((r = read(fd, text + n, sizeof text - 1 - n)) > 0)
        n += r;
    close(fd);
    text[n] = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *p = line;
        for (int i = 0; i < 3 && p; i++) {
            p = strchr(p, ' ');
            if (p)
                p++;
        }
        printf("mountinfo: %s\n", p ? p : line);
    }
}

static int in_chroot(void *arg)
{
    (void)arg;
    int outside = open("/", O_RDONLY | O_DIRECTORY);
    chdir("/tmp");
    if (chroot(D) != 0) {
        printf("chroot: %s\n", errname(errno));
        return 1;
    }
    check(1, "chroot(" D ")");
    show_cwd("cwd left outside the new root");
    show_file("/file in the new root", "/file");
    show_file("/sub/../file", "/sub/../file");
    show_file("/.. stays at the root", "/../../file");
    show_file("absolute symlink resolves inside", "/abs_link");
    check(chdir("/") == 0, "chdir(/)");
    show_cwd("after chdir(/)");
    check(chdir("sub") == 0, "chdir(sub)");
    show_cwd("in /sub");
    show_file("../file from /sub", "../file");
    char link[256];
    long n = readlink("/proc/self/root", link, sizeof link - 1);
    if (n >= 0)
        link[n] = 0;
    printf("/proc/self/root: %s\n", n >= 0 ? link : errname(errno));
    n = readlink("/proc/self/cwd", link, sizeof link - 1);
    if (n >= 0)
        link[n] = 0;
    printf("/proc/self/cwd: %s\n", n >= 0 ? link : errname(errno));
    show_file("/proc/self/root/file", "/proc/self/root/file");
    int m = open("/proc/self/mounts", O_RDONLY);
    char mounts[1024] = { 0 };
    read(m, mounts, sizeof mounts - 1);
    close(m);
    printf("/proc/self/mounts:\n%s", mounts);
    show_mountinfo("/proc/self/mountinfo");
    /* A child keeps the root. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/file", O_RDONLY);
        _exit(fd >= 0 ? 0 : 1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child inherits the root");
    /* A directory opened before leads outside, and ".." from there
     * climbs past the root (Linux stops ".." only at the root itself). */
    check(fchdir(outside) == 0, "fchdir to the old root");
    show_cwd("back outside");
    check(chdir("tmp/chroot_t/sub") == 0, "relative walk from outside into the tree");
    show_cwd("inside again through the old root");
    chdir("/");
    EXPECT_ERR(ENOTDIR, "pivot_root(file, ...)", syscall(SYS_pivot_root, "/file", "/sub"));
    EXPECT_ERR(ENOENT, "pivot_root(missing, ...)", syscall(SYS_pivot_root, "/missing", "/sub"));
    EXPECT_ERR(EBUSY, "pivot_root(/, /sub): the new root is on the root's mount", syscall(SYS_pivot_root, "/", "/sub"));
    EXPECT_ERR(EBUSY, "pivot_root(/mnt, /sub): put_old on the root's mount", syscall(SYS_pivot_root, "/mnt", "/sub"));
    EXPECT_ERR(EBUSY, "pivot_root(/sub, /mnt): the new root is on the root's mount", syscall(SYS_pivot_root, "/sub", "/mnt"));
    EXPECT_ERR(EINVAL, "pivot_root(/mnt, /sub2): put_old not under the new root", syscall(SYS_pivot_root, "/mnt", "/proc"));
    /* The root here is the tmpfs mounted at /tmp/chroot_t: it can be
     * pivoted. The tmpfs on /mnt becomes the root, the old root moves to
     * /mnt/old, and the working directory (the old root) follows. */
    check(syscall(SYS_pivot_root, "/mnt", "/mnt/old") == 0, "pivot_root(/mnt, /mnt/old)");
    show_cwd("after pivot_root");
    show_file("/inner in the new root", "/inner");
    show_file("/old/file: the old root", "/old/file");
    /* /proc went with the old root. */
    n = readlink("/old/proc/self/root", link, sizeof link - 1);
    printf("/old/proc/self/root after pivot_root: %s\n", n >= 0 ? (link[n] = 0, link) : errname(errno));
    show_mountinfo("/old/proc/self/mountinfo");
    check(umount2("/old", MNT_DETACH) == 0, "the old root can be detached");
    show_file("/old/file after detaching", "/old/file");
    return t_failed;
}

/* Chrooted in a plain directory, the root is not a mount point. */
static int in_plain_chroot(void *arg)
{
    (void)arg;
    if (chroot(D "/sub") != 0 || chdir("/") != 0) {
        printf("chroot(sub): %s\n", errname(errno));
        return 1;
    }
    EXPECT_ERR(EINVAL, "in a plain directory: pivot_root(/m, /m/old): the root is not a mount point",
               syscall(SYS_pivot_root, "/m", "/m/old"));
    return t_failed;
}

static int unprivileged(void *arg)
{
    (void)arg;
    if (setgid(1000) || setuid(1000))
        return 99;
    EXPECT_ERR(EPERM, "user: chroot(searchable dir)", chroot(D "/sub"));
    EXPECT_ERR(EACCES, "user: chroot(dir without search permission)", chroot(D "/closed"));
    EXPECT_ERR(EPERM, "user: pivot_root", syscall(SYS_pivot_root, D "/mnt", D "/mnt/old"));
    return t_failed;
}

int main(void)
{
    t_init("chroot");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rm_rf(D);
    mkdir(D, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs: %s\n", errname(errno));
        return 1;
    }
    mkfile(D "/file", "root-file");
    mkdir(D "/sub", 0755);
    mkdir(D "/sub/m", 0755);
    mkdir(D "/closed", 0700);
    mkdir(D "/proc", 0555);
    mkdir(D "/mnt", 0755);
    symlink("/file", D "/abs_link");
    if (mount("proc", D "/proc", "proc", 0, NULL) != 0)
        printf("FAIL: mount proc: %s\n", errname(errno));
    if (mount("none", D "/mnt", "tmpfs", 0, NULL) != 0)
        printf("FAIL: mount inner tmpfs: %s\n", errname(errno));
    mkdir(D "/mnt/old", 0755);
    mkfile(D "/mnt/inner", "inner-file");
    if (mount("none", D "/sub/m", "tmpfs", 0, NULL) != 0)
        printf("FAIL: mount tmpfs on sub/m: %s\n", errname(errno));
    mkdir(D "/sub/m/old", 0755);
    EXPECT_ERR(ENOTDIR, "chroot(a file)", chroot(D "/file"));
    EXPECT_ERR(ENOENT, "chroot(missing)", chroot(D "/missing"));
    EXPECT_ERR(EFAULT, "chroot(bad pointer)", chroot(BAD_PTR));
    int st = run_child(in_plain_chroot, NULL);
    check(st == 0, "plain chroot child: %s", status_str(st));
    st = run_child(unprivileged, NULL);
    check(st == 0, "unprivileged child: %s", status_str(st));
    st = run_child(in_chroot, NULL);
    check(st == 0, "chroot child: %s", status_str(st));
    /* The pivot moved the mounts for everyone: the inner tmpfs is now at
     * /tmp/chroot_t, the old one at /tmp/chroot_t/old. */
    show_file("seen from outside: /tmp/chroot_t/inner", D "/inner");
    show_file("seen from outside: /tmp/chroot_t/old/file", D "/old/file");
    char cwd[512];
    check(raw_getcwd(cwd, sizeof cwd) > 0 && cwd[0] == '/', "the parent keeps its root");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rmdir(D);
    return t_done();
}
