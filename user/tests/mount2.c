/*
 * mount2: mount(2) beyond a plain mount. New mounts with options (tmpfs
 * size and mode) and their /proc/self/mountinfo and /proc/self/mounts
 * lines; MS_REMOUNT (read-only file system, EBUSY with a file open for
 * writing) and MS_REMOUNT|MS_BIND (a read-only mount of a writable file
 * system); MS_BIND of directories and files, MS_REC, what one view sees
 * of the other; MS_NOEXEC, MS_NODEV, MS_NOSUID honoured and shown in
 * statfs; atime under relatime, MS_STRICTATIME and MS_NOATIME; MS_MOVE;
 * MS_SHARED/MS_SLAVE/MS_PRIVATE/MS_UNBINDABLE and their validation;
 * umount2 (EBUSY, MNT_DETACH, MNT_EXPIRE, UMOUNT_NOFOLLOW); sysfs(2).
 * Everything lives under a tmpfs at /tmp/mount2_t; mountinfo lines are
 * printed from their fourth field on (ids and devices are the host's).
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#define D "/tmp/mount2_t"

static char text[65536];

static long slurp(const char *path)
{
    int fd = open(path, O_RDONLY);
    long n = 0, r;
    if (fd < 0)
        return -1;
    while ((r = read(fd, text + n, sizeof text - 1 - n)) > 0)
        n += r;
    close(fd);
    text[n] = 0;
    return n;
}

/* The mountinfo line of the mount at `path`, from field 4 on, with the
 * peer group numbers replaced by their order of appearance. */
static void show_mountinfo(const char *what, const char *path)
{
    slurp("/proc/self/mountinfo");
    char *found = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char mp[512];
        if (sscanf(line, "%*d %*d %*s %*s %511s", mp) == 1 && strcmp(mp, path) == 0)
            found = line;
    }
    if (!found) {
        printf("%s: not in mountinfo\n", what);
        return;
    }
    char *p = found;
    for (int i = 0; i < 3; i++)
        p = strchr(p, ' ') + 1;
    printf("%s: %s\n", what, p);
}

/* The optional fields (shared:N, master:N) of the mount at `path`:
 * fills `shared` and `master` (0 when absent). */
static void propagation_of(const char *path, int *shared, int *master, int *unbindable)
{
    slurp("/proc/self/mountinfo");
    *shared = *master = *unbindable = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char mp[512];
        if (sscanf(line, "%*d %*d %*s %*s %511s", mp) != 1 || strcmp(mp, path) != 0)
            continue;
        char *s = strstr(line, " shared:");
        *shared = s ? atoi(s + 8) : 0;
        char *m = strstr(line, " master:");
        *master = m ? atoi(m + 8) : 0;
        *unbindable = strstr(line, " unbindable") != NULL;
    }
}

static void show_mounts_line(const char *what, const char *path)
{
    slurp("/proc/self/mounts");
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char mp[512];
        if (sscanf(line, "%*s %511s", mp) == 1 && strcmp(mp, path) == 0) {
            printf("%s: %s\n", what, line);
            return;
        }
    }
    printf("%s: not in /proc/self/mounts\n", what);
}

static int is_mount_point(const char *path)
{
    struct stat a, b;
    char parent[512];
    snprintf(parent, sizeof parent, "%s/..", path);
    return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static void test_new_mounts(void)
{
    mkdir(D "/opts", 0755);
    EXPECT_OK("mount tmpfs size=1m,mode=700", mount("none", D "/opts", "tmpfs", 0, "size=1m,mode=700"));
    struct stat st;
    stat(D "/opts", &st);
    printf("root mode %o\n", st.st_mode);
    show_mountinfo("mountinfo of size=1m,mode=700", D "/opts");
    show_mounts_line("mounts of size=1m,mode=700", D "/opts");
    struct statfs sf;
    statfs(D "/opts", &sf);
    printf("statfs: %ld blocks of %ld, flags %#lx\n", (long)sf.f_blocks, (long)sf.f_bsize, (long)sf.f_flags);
    umount(D "/opts");
    EXPECT_ERR(EINVAL, "tmpfs with an unknown option", mount("none", D "/opts", "tmpfs", 0, "bogus=1"));
    EXPECT_ERR(EINVAL, "tmpfs with a bad mode", mount("none", D "/opts", "tmpfs", 0, "mode=99x"));
    EXPECT_ERR(ENODEV, "unknown file system type", mount("none", D "/opts", "nosuchfs", 0, NULL));
    EXPECT_ERR(ENODEV, "unknown type with options", mount("none", D "/opts", "nosuchfs", 0, "bogus"));
    EXPECT_ERR(EINVAL, "a new mount without a type", mount("none", D "/opts", NULL, 0, NULL));
    EXPECT_ERR(ENOENT, "mount on a missing directory", mount("none", D "/missing", "tmpfs", 0, NULL));
    EXPECT_ERR(EFAULT, "bad type pointer", mount("none", D "/opts", BAD_PTR, 0, NULL));
    EXPECT_ERR(EINVAL, "MS_NOUSER", mount("none", D "/opts", "tmpfs", 1UL << 31, NULL));
    mkfile(D "/afile", "x");
    EXPECT_ERR(ENOTDIR, "a tmpfs on a file", mount("none", D "/afile", "tmpfs", 0, NULL));
    EXPECT_OK("MS_MGC_VAL in the flags is ignored", mount("none", D "/opts", "tmpfs", 0xC0ED0000UL, NULL));
    EXPECT_OK("mount ro,nosuid,nodev,noexec,noatime",
              mount("none", D "/opts", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME, NULL));
    show_mountinfo("stacked read-only mount", D "/opts");
    show_mounts_line("its /proc/self/mounts line", D "/opts");
    statfs(D "/opts", &sf);
    printf("statfs flags %#lx\n", (long)sf.f_flags);
    EXPECT_ERR(EROFS, "create on it", open(D "/opts/x", O_CREAT | O_RDWR, 0644));
    umount(D "/opts");
    show_mountinfo("the one below again", D "/opts");
    umount(D "/opts");
}

static void test_remount(void)
{
    mkdir(D "/rm", 0755);
    mount("none", D "/rm", "tmpfs", 0, NULL);
    mkfile(D "/rm/f", "data");
    EXPECT_OK("MS_REMOUNT|MS_RDONLY", mount(NULL, D "/rm", NULL, MS_REMOUNT | MS_RDONLY, NULL));
    show_mountinfo("remounted read-only", D "/rm");
    EXPECT_ERR(EROFS, "write after the remount", open(D "/rm/f", O_WRONLY));
    EXPECT_OK("MS_REMOUNT read-write again", mount(NULL, D "/rm", NULL, MS_REMOUNT, NULL));
    show_mountinfo("read-write again", D "/rm");
    int fd = open(D "/rm/f", O_WRONLY);
    EXPECT_ERR(EBUSY, "MS_REMOUNT|MS_RDONLY with a file open for writing",
               mount(NULL, D "/rm", NULL, MS_REMOUNT | MS_RDONLY, NULL));
    close(fd);
    EXPECT_OK("MS_REMOUNT|MS_BIND|MS_RDONLY", mount(NULL, D "/rm", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL));
    show_mountinfo("a read-only mount of a writable file system", D "/rm");
    EXPECT_ERR(EROFS, "write through the read-only mount", open(D "/rm/f", O_WRONLY));
    EXPECT_OK("MS_REMOUNT|MS_BIND|MS_NOEXEC", mount(NULL, D "/rm", NULL, MS_REMOUNT | MS_BIND | MS_NOEXEC, NULL));
    show_mountinfo("the flags are replaced, not added", D "/rm");
    EXPECT_OK("MS_REMOUNT|MS_STRICTATIME", mount(NULL, D "/rm", NULL, MS_REMOUNT | MS_STRICTATIME, NULL));
    show_mountinfo("strictatime", D "/rm");
    EXPECT_OK("MS_REMOUNT keeps the atime mode", mount(NULL, D "/rm", NULL, MS_REMOUNT | MS_NODEV, NULL));
    show_mountinfo("nodev, still strictatime", D "/rm");
    mkdir(D "/rm/sub", 0755);
    EXPECT_ERR(EINVAL, "MS_REMOUNT of a directory that is not a mount", mount(NULL, D "/rm/sub", NULL, MS_REMOUNT, NULL));
    EXPECT_ERR(EINVAL, "MS_REMOUNT|MS_BIND of one", mount(NULL, D "/rm/sub", NULL, MS_REMOUNT | MS_BIND, NULL));
    umount(D "/rm");
}

static void test_bind(void)
{
    mkdir(D "/src", 0755);
    mount("none", D "/src", "tmpfs", 0, NULL);
    mkdir(D "/src/sub", 0755);
    mkfile(D "/src/sub/file", "bound");
    mkdir(D "/view", 0755);
    EXPECT_OK("MS_BIND of a subdirectory", mount(D "/src/sub", D "/view", NULL, MS_BIND, NULL));
    show_mountinfo("the bind mount", D "/view");
    check(slurp(D "/view/file") == 5 && strcmp(text, "bound") == 0, "the file shows through the bind");
    mkfile(D "/view/new", "made in the view");
    check(access(D "/src/sub/new", F_OK) == 0, "a file made through the view is in the source");
    struct stat a, b;
    stat(D "/view/new", &a);
    stat(D "/src/sub/new", &b);
    check(a.st_ino == b.st_ino && a.st_dev == b.st_dev, "same inode and device both ways");
    unlink(D "/src/sub/new");
    EXPECT_ERR(ENOENT, "removed through the source, gone from the view", access(D "/view/new", F_OK));
    mkfile(D "/src/sub/again", "y");
    rename(D "/view/again", D "/view/renamed");
    EXPECT_ERR(ENOENT, "renamed through the view: old name gone in the source", access(D "/src/sub/again", F_OK));
    check(access(D "/src/sub/renamed", F_OK) == 0, "new name in the source");
    /* Files on files. */
    mkfile(D "/target_file", "target");
    EXPECT_OK("MS_BIND of a file on a file", mount(D "/src/sub/file", D "/target_file", NULL, MS_BIND, NULL));
    check(slurp(D "/target_file") == 5 && strcmp(text, "bound") == 0, "the bound file's content shows");
    umount(D "/target_file");
    check(slurp(D "/target_file") == 6, "the original file again after umount");
    EXPECT_ERR(ENOTDIR, "MS_BIND of a directory on a file", mount(D "/src/sub", D "/target_file", NULL, MS_BIND, NULL));
    EXPECT_ERR(ENOTDIR, "MS_BIND of a file on a directory", mount(D "/src/sub/file", D "/view", NULL, MS_BIND, NULL));
    EXPECT_ERR(EINVAL, "MS_BIND without a source", mount(NULL, D "/view", NULL, MS_BIND, NULL));
    EXPECT_ERR(ENOENT, "MS_BIND of a missing source", mount(D "/missing", D "/view", NULL, MS_BIND, NULL));
    /* Read-only view of a writable tree. */
    mkdir(D "/roview", 0755);
    mount(D "/src", D "/roview", NULL, MS_BIND, NULL);
    EXPECT_OK("remount the bind read-only", mount(NULL, D "/roview", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL));
    EXPECT_ERR(EROFS, "write through the read-only view", open(D "/roview/sub/file", O_WRONLY));
    int fd = open(D "/src/sub/file", O_WRONLY);
    check(fd >= 0, "the source stays writable");
    close(fd);
    show_mountinfo("read-only view", D "/roview");
    /* MS_REC. */
    mkdir(D "/src/inner", 0755);
    mount("none", D "/src/inner", "tmpfs", 0, NULL);
    mkfile(D "/src/inner/deep", "deep");
    mkdir(D "/plain", 0755);
    mkdir(D "/rec", 0755);
    mount(D "/src", D "/plain", NULL, MS_BIND, NULL);
    EXPECT_OK("MS_BIND|MS_REC", mount(D "/src", D "/rec", NULL, MS_BIND | MS_REC, NULL));
    check(!is_mount_point(D "/plain/inner") && access(D "/plain/inner/deep", F_OK) != 0,
          "without MS_REC the submount is left out");
    check(is_mount_point(D "/rec/inner") && slurp(D "/rec/inner/deep") == 4, "with MS_REC it comes along");
    show_mountinfo("the copied submount", D "/rec/inner");
    EXPECT_ERR(EBUSY, "umount of a mount with a mount in it", umount(D "/rec"));
    EXPECT_OK("MNT_DETACH takes it all", umount2(D "/rec", MNT_DETACH));
    check(!is_mount_point(D "/rec"), "gone");
    umount(D "/plain");
    umount(D "/roview");
    umount(D "/view");
    umount(D "/src/inner");
    umount(D "/src");
}

static void copy_program(const char *self, const char *to)
{
    int in = open(self, O_RDONLY), out = open(to, O_CREAT | O_WRONLY, 0755);
    long n;
    while ((n = read(in, text, sizeof text)) > 0)
        write(out, text, n);
    close(in);
    close(out);
}

/* Runs `prog euid` as uid 1000: the program prints its effective uid. */
static int run_as_user(void *prog)
{
    if (setgid(1000) || setuid(1000))
        return 99;
    execl(prog, "prog", "euid", (char *)NULL);
    return 98;
}

static void test_flags_honoured(const char *self)
{
    mkdir(D "/fl", 0755);
    mount("none", D "/fl", "tmpfs", MS_NOEXEC | MS_NODEV | MS_NOSUID, NULL);
    copy_program(self, D "/fl/prog");
    EXPECT_ERR(EACCES, "exec on a noexec mount", execl(D "/fl/prog", "prog", (char *)NULL));
    int fd = open(D "/fl/prog", O_RDONLY);
    EXPECT_ERR(EPERM, "mmap PROT_EXEC on a noexec mount", (long)mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0));
    close(fd);
    mknod(D "/fl/null", S_IFCHR | 0666, makedev(1, 3));
    EXPECT_ERR(EACCES, "open a device on a nodev mount", open(D "/fl/null", O_RDWR));
    struct statfs sf;
    statfs(D "/fl", &sf);
    printf("statfs flags of nosuid,nodev,noexec: %#lx\n", (long)sf.f_flags);
    EXPECT_OK("remount without them", mount(NULL, D "/fl", NULL, MS_REMOUNT, NULL));
    fd = open(D "/fl/null", O_RDWR);
    check(fd >= 0, "the device opens after the remount");
    close(fd);
    umount(D "/fl");
    /* A set-user-ID program owned by uid 1234, run by uid 1000. */
    mkdir(D "/su", 0755);
    mount("none", D "/su", "tmpfs", MS_NOSUID, NULL);
    copy_program(self, D "/su/prog");
    chown(D "/su/prog", 1234, 1234);
    chmod(D "/su/prog", 04755);
    int st = run_child(run_as_user, D "/su/prog");
    check(st == 0, "set-user-ID program on a nosuid mount: %s", status_str(st));
    mount(NULL, D "/su", NULL, MS_REMOUNT, NULL);
    st = run_child(run_as_user, D "/su/prog");
    check(st == 0, "the same program after a remount without nosuid: %s", status_str(st));
    umount(D "/su");
}

/* Whether reading the file twice moved its atime (once, twice). */
static void atime_steps(const char *what, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY);
    char c;
    struct timespec t0, t1, t2;
    stat(path, &st);
    t0 = st.st_atim;
    sleep_ms(20);
    pread(fd, &c, 1, 0);
    stat(path, &st);
    t1 = st.st_atim;
    sleep_ms(20);
    pread(fd, &c, 1, 0);
    stat(path, &st);
    t2 = st.st_atim;
    close(fd);
    int first = t1.tv_sec != t0.tv_sec || t1.tv_nsec != t0.tv_nsec;
    int second = t2.tv_sec != t1.tv_sec || t2.tv_nsec != t1.tv_nsec;
    printf("%s: first read moves atime: %s, second: %s\n", what, first ? "yes" : "no", second ? "yes" : "no");
}

static void test_atime(void)
{
    mkdir(D "/at", 0755);
    mount("none", D "/at", "tmpfs", 0, NULL);
    mkfile(D "/at/f", "x");
    atime_steps("relatime (default)", D "/at/f");
    mount(NULL, D "/at", NULL, MS_REMOUNT | MS_STRICTATIME, NULL);
    atime_steps("strictatime", D "/at/f");
    mount(NULL, D "/at", NULL, MS_REMOUNT | MS_NOATIME, NULL);
    mkfile(D "/at/g", "y");
    atime_steps("noatime", D "/at/g");
    mount(NULL, D "/at", NULL, MS_REMOUNT | MS_STRICTATIME, NULL);
    int fd = open(D "/at/f", O_RDONLY | O_NOATIME);
    struct stat before, after;
    fstat(fd, &before);
    sleep_ms(20);
    char c;
    read(fd, &c, 1);
    fstat(fd, &after);
    check(before.st_atim.tv_nsec == after.st_atim.tv_nsec && before.st_atim.tv_sec == after.st_atim.tv_sec,
          "O_NOATIME reads leave atime");
    close(fd);
    umount(D "/at");
}

static void test_move(void)
{
    mkdir(D "/m1", 0755);
    mkdir(D "/m2", 0755);
    mount("none", D "/m1", "tmpfs", 0, NULL);
    mkfile(D "/m1/file", "moving");
    mkdir(D "/m1/child", 0755);
    EXPECT_OK("MS_MOVE", mount(D "/m1", D "/m2", NULL, MS_MOVE, NULL));
    check(!is_mount_point(D "/m1") && is_mount_point(D "/m2") && slurp(D "/m2/file") == 6, "the mount moved");
    show_mountinfo("moved mount", D "/m2");
    EXPECT_ERR(EINVAL, "MS_MOVE of a directory that is not a mount", mount(D "/m1", D "/m2", NULL, MS_MOVE, NULL));
    EXPECT_ERR(ELOOP, "MS_MOVE into itself", mount(D "/m2", D "/m2/child", NULL, MS_MOVE, NULL));
    EXPECT_ERR(EINVAL, "MS_MOVE without a source", mount(NULL, D "/m1", NULL, MS_MOVE, NULL));
    umount(D "/m2");
}

static void test_propagation(void)
{
    mkdir(D "/p", 0755);
    mkdir(D "/p2", 0755);
    mount("none", D "/p", "tmpfs", 0, NULL);
    int shared, master, unbindable;
    propagation_of(D "/p", &shared, &master, &unbindable);
    printf("new mount: shared %s, master %s\n", shared ? "yes" : "no", master ? "yes" : "no");
    EXPECT_OK("MS_SHARED", mount(NULL, D "/p", NULL, MS_SHARED, NULL));
    propagation_of(D "/p", &shared, &master, &unbindable);
    printf("after MS_SHARED: shared %s\n", shared ? "yes" : "no");
    EXPECT_OK("MS_SLAVE on a lone shared mount", mount(NULL, D "/p", NULL, MS_SLAVE, NULL));
    propagation_of(D "/p", &shared, &master, &unbindable);
    printf("a lone shared mount made slave: shared %s, master %s\n", shared ? "yes" : "no", master ? "yes" : "no");
    mount(NULL, D "/p", NULL, MS_SHARED, NULL);
    int group;
    propagation_of(D "/p", &group, &master, &unbindable);
    EXPECT_OK("bind of a shared mount", mount(D "/p", D "/p2", NULL, MS_BIND, NULL));
    propagation_of(D "/p2", &shared, &master, &unbindable);
    check(shared == group && group != 0, "the bind joins the peer group");
    EXPECT_OK("MS_SLAVE on one peer", mount(NULL, D "/p2", NULL, MS_SLAVE, NULL));
    propagation_of(D "/p2", &shared, &master, &unbindable);
    check(shared == 0 && master == group, "it follows the group as master");
    EXPECT_OK("MS_PRIVATE", mount(NULL, D "/p2", NULL, MS_PRIVATE, NULL));
    propagation_of(D "/p2", &shared, &master, &unbindable);
    check(shared == 0 && master == 0, "private: neither");
    EXPECT_OK("MS_UNBINDABLE", mount(NULL, D "/p2", NULL, MS_UNBINDABLE, NULL));
    propagation_of(D "/p2", &shared, &master, &unbindable);
    check(unbindable, "unbindable shown");
    mkdir(D "/p3", 0755);
    EXPECT_ERR(EINVAL, "MS_BIND of an unbindable mount", mount(D "/p2", D "/p3", NULL, MS_BIND, NULL));
    EXPECT_ERR(EINVAL, "MS_SHARED|MS_PRIVATE", mount(NULL, D "/p2", NULL, MS_SHARED | MS_PRIVATE, NULL));
    EXPECT_ERR(EINVAL, "MS_SHARED|MS_RDONLY", mount(NULL, D "/p2", NULL, MS_SHARED | MS_RDONLY, NULL));
    EXPECT_OK("MS_PRIVATE|MS_REC|MS_SILENT", mount(NULL, D "/p2", NULL, MS_PRIVATE | MS_REC | MS_SILENT, NULL));
    mkdir(D "/p/sub", 0755);
    EXPECT_ERR(EINVAL, "MS_SHARED on a directory that is not a mount", mount(NULL, D "/p/sub", NULL, MS_SHARED, NULL));
    mount(NULL, D "/p", NULL, MS_PRIVATE, NULL);
    umount(D "/p2");
    umount(D "/p");
}

static void test_umount(void)
{
    mkdir(D "/u", 0755);
    mount("none", D "/u", "tmpfs", 0, NULL);
    EXPECT_ERR(EINVAL, "umount2(flags 0x10)", umount2(D "/u", 0x10));
    EXPECT_ERR(EINVAL, "MNT_EXPIRE|MNT_DETACH", umount2(D "/u", MNT_EXPIRE | MNT_DETACH));
    EXPECT_ERR(EAGAIN, "MNT_EXPIRE the first time", umount2(D "/u", MNT_EXPIRE));
    EXPECT_OK("MNT_EXPIRE the second time", umount2(D "/u", MNT_EXPIRE));
    check(!is_mount_point(D "/u"), "expired");
    mount("none", D "/u", "tmpfs", 0, NULL);
    int fd = open(D "/u/busy", O_CREAT | O_RDWR, 0644);
    EXPECT_ERR(EBUSY, "umount with a file open", umount(D "/u"));
    EXPECT_ERR(EBUSY, "MNT_EXPIRE with a file open", umount2(D "/u", MNT_EXPIRE));
    EXPECT_OK("MNT_DETACH with a file open", umount2(D "/u", MNT_DETACH));
    check(write(fd, "still", 5) == 5, "the open file still works");
    close(fd);
    mount("none", D "/u", "tmpfs", 0, NULL);
    chdir(D "/u");
    EXPECT_ERR(EBUSY, "umount of the working directory's mount", umount(D "/u"));
    chdir("/");
    symlink(D "/u", D "/ulink");
    EXPECT_ERR(EINVAL, "UMOUNT_NOFOLLOW on a symlink to a mount", umount2(D "/ulink", UMOUNT_NOFOLLOW));
    EXPECT_OK("umount through the symlink", umount2(D "/ulink", 0));
    EXPECT_ERR(EINVAL, "umount of a directory that is not a mount", umount(D "/u"));
    EXPECT_ERR(ENOENT, "umount of a missing path", umount(D "/nope"));
}

static int unprivileged(void *arg)
{
    (void)arg;
    if (setgid(1000) || setuid(1000))
        return 99;
    EXPECT_ERR(EPERM, "user: mount", mount("none", D "/u", "tmpfs", 0, NULL));
    EXPECT_ERR(EPERM, "user: MS_BIND", mount(D "/src", D "/u", NULL, MS_BIND, NULL));
    EXPECT_ERR(EPERM, "user: umount2", umount2(D, 0));
    EXPECT_ERR(ENOENT, "user: mount on a missing path", mount("none", D "/nope", "tmpfs", 0, NULL));
    return t_failed;
}

static void test_sysfs(void)
{
    long count = syscall(SYS_sysfs, 3);
    check(count > 3, "sysfs(3) counts the types");
    slurp("/proc/filesystems");
    int ok = 1, line = 0;
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"), line++) {
        char *name = strchr(l, '\t');
        name = name ? name + 1 : l;
        char buf[64] = { 0 };
        if (syscall(SYS_sysfs, 2, line, buf) != 0 || strcmp(buf, name) != 0)
            ok = 0;
        if (syscall(SYS_sysfs, 1, name) != line)
            ok = 0;
    }
    check(ok && line == count, "sysfs(1) and sysfs(2) follow /proc/filesystems");
    EXPECT_ERR(EINVAL, "sysfs(1, unknown)", syscall(SYS_sysfs, 1, "nosuchfs"));
    EXPECT_ERR(EINVAL, "sysfs(2, count)", syscall(SYS_sysfs, 2, count, text));
    EXPECT_ERR(EFAULT, "sysfs(2, bad buffer)", syscall(SYS_sysfs, 2, 0, BAD_PTR));
    EXPECT_ERR(EINVAL, "sysfs(4)", syscall(SYS_sysfs, 4));
    EXPECT_ERR(EINVAL, "sysfs(0)", syscall(SYS_sysfs, 0));
    EXPECT_ERR(ENOENT, "sysfs(1, \"\")", syscall(SYS_sysfs, 1, ""));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "euid") == 0) {
        printf("exec'd as uid %d: euid %d\n", (int)getuid(), (int)geteuid());
        return 0;
    }
    t_init("mount2");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rm_rf(D);
    mkdir(D, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs: %s\n", errname(errno));
        return 1;
    }
    chmod(D, 0777);
    test_new_mounts();
    test_remount();
    test_bind();
    test_flags_honoured(argv[0]);
    test_atime();
    test_move();
    test_propagation();
    test_umount();
    mkdir(D "/src", 0755);
    int st = run_child(unprivileged, NULL);
    check(st == 0, "unprivileged child: %s", status_str(st));
    test_sysfs();
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rmdir(D);
    return t_done();
}
