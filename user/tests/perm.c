/*
 * perm: permission checks on every path call. As root, builds a tree of
 * files and directories with various modes and owners (group 50 holds
 * the test user, 60 does not); then, as user 1000 in groups 1000 and 50
 * without capabilities, makes each path call against them and prints
 * the result: search permission on every directory walked, read and
 * write on open (O_TRUNC, O_NOATIME, O_CREAT), exec permission, write
 * and search on the parent to create, remove, rename and link, the
 * sticky bit, chmod/chown/utimensat/truncate rules with the set-id bits
 * they clear, the owner and group of new files (set-group-ID
 * directories), access() with the real ids against faccessat with
 * AT_EACCESS, and checks made with the file-system uid.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

static char dir[64];

/* Prints the outcome of a call and checks it: want 0 is success. */
static void expect(long r, int e, int want, const char *what)
{
    t_checks++;
    int got = r == -1 ? e : 0;
    if (got == 0)
        printf("%s: ok\n", what);
    else
        printf("%s = -1 %s\n", what, errname(got));
    if (got != want) {
        t_failed++;
        printf("FAIL: %s: want %s\n", what, want ? errname(want) : "success");
    }
}

#define E(want, what, expr)                                                                                     \
    do {                                                                                                        \
        errno = 0;                                                                                              \
        long _r = (long)(expr);                                                                                 \
        expect(_r, errno, (want), (what));                                                                      \
    } while (0)

/* An open whose descriptor is closed again. */
static long try_open(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags, mode);
    if (fd >= 0)
        close(fd);
    return fd < 0 ? -1 : 0;
}

static void show_mode(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        printf("%s: mode %04o owner %u:%u\n", path, st.st_mode & 07777, st.st_uid, st.st_gid);
    else
        printf("%s: lstat %s\n", path, errname(errno));
}

static void make(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
    if (S_ISDIR(mode))
        mkdir(path, 0700);
    else if (S_ISFIFO(mode))
        mknod(path, S_IFIFO | 0600, 0);
    else
        mkfile(path, "data");
    if (chown(path, uid, gid) != 0 || chmod(path, mode & 07777) != 0)
        printf("FAIL: setting up %s: %s\n", path, errname(errno));
}

static int copy_self(const char *path, mode_t mode)
{
    int in = open("/proc/self/exe", O_RDONLY);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    if (in < 0 || out < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            return -1;
    close(in);
    close(out);
    return chmod(path, mode);
}

static void setup(void)
{
    make("f644", S_IFREG | 0644, 0, 0);
    make("f600", S_IFREG | 0600, 0, 0);
    make("f640g", S_IFREG | 0640, 0, 50);
    make("f604g", S_IFREG | 0604, 0, 50);
    make("f666", S_IFREG | 0666, 0, 0);
    make("f4755", S_IFREG | 04755, 0, 0);
    make("u000", S_IFREG | 0000, 1000, 1000);
    make("u066", S_IFREG | 0066, 1000, 1000);
    make("u644", S_IFREG | 0644, 1000, 1000);
    make("u4755", S_IFREG | 04755, 1000, 1000);
    make("u2775g", S_IFREG | 02775, 1000, 50);
    make("u2745g", S_IFREG | 02745, 1000, 50);
    make("u2745h", S_IFREG | 02745, 1000, 60);
    make("u2745k", S_IFREG | 02745, 1000, 60);
    make("fifo666", S_IFIFO | 0666, 0, 0);
    copy_self("x711", 0711);
    copy_self("x644", 0644);
    make("d755", S_IFDIR | 0755, 0, 0);
    make("d755/f", S_IFREG | 0644, 0, 0);
    make("d700", S_IFDIR | 0755, 0, 0);
    make("d700/f", S_IFREG | 0644, 0, 0);
    symlink("f", "d700/sym");
    chmod("d700", 0700);
    make("d711", S_IFDIR | 0711, 0, 0);
    make("d711/f", S_IFREG | 0644, 0, 0);
    symlink("f", "d711/sym");
    make("d744", S_IFDIR | 0744, 0, 0);
    make("d744/f", S_IFREG | 0644, 0, 0);
    make("d733", S_IFDIR | 0733, 0, 0);
    make("d555", S_IFDIR | 0555, 0, 0);
    make("d777", S_IFDIR | 0777, 0, 0);
    make("d777/rootfile", S_IFREG | 0644, 0, 0);
    make("d1777", S_IFDIR | 01777, 0, 0);
    make("d1777/mine", S_IFREG | 0644, 1000, 1000);
    make("d1777/other", S_IFREG | 0666, 2000, 2000);
    make("d1777/otherdir", S_IFDIR | 0777, 2000, 2000);
    make("d1777/mydir", S_IFDIR | 0755, 1000, 1000);
    make("d1777u", S_IFDIR | 01777, 1000, 1000);
    make("d1777u/other", S_IFREG | 0644, 2000, 2000);
    make("d2777g60", S_IFDIR | 02777, 0, 60);
    make("d2777g50", S_IFDIR | 02777, 0, 50);
    make("ud755", S_IFDIR | 0755, 1000, 1000);
    make("ud755/sub", S_IFDIR | 0555, 1000, 1000);
    symlink("f600", "sym600");
    symlink("d700/f", "symd700");
}

static void as_user(void)
{
    gid_t groups[] = { 50 };
    if (setgroups(1, groups) != 0 || setresgid(1000, 1000, 1000) != 0 || setresuid(1000, 1000, 1000) != 0) {
        printf("FAIL: cannot become user 1000\n");
        _exit(1);
    }
    umask(022);
}

static int t_open(void)
{
    as_user();
    E(0, "open f644 O_RDONLY", try_open("f644", O_RDONLY, 0));
    E(EACCES, "open f644 O_WRONLY", try_open("f644", O_WRONLY, 0));
    E(EACCES, "open f644 O_RDWR", try_open("f644", O_RDWR, 0));
    E(EACCES, "open f644 O_RDONLY|O_TRUNC", try_open("f644", O_RDONLY | O_TRUNC, 0));
    E(EACCES, "open f600 O_RDONLY", try_open("f600", O_RDONLY, 0));
    E(0, "open f640g O_RDONLY (group 50)", try_open("f640g", O_RDONLY, 0));
    E(EACCES, "open f604g O_RDONLY (the group class decides)", try_open("f604g", O_RDONLY, 0));
    E(0, "open f666 O_RDWR", try_open("f666", O_RDWR, 0));
    E(0, "open f666 O_WRONLY|O_TRUNC", try_open("f666", O_WRONLY | O_TRUNC, 0));
    E(EACCES, "open u000 O_RDONLY (own file, mode 0)", try_open("u000", O_RDONLY, 0));
    E(EACCES, "open u066 O_RDONLY (the owner class decides)", try_open("u066", O_RDONLY, 0));
    E(0, "open u000 O_PATH", try_open("u000", O_PATH, 0));
    E(EACCES, "open d700/f O_PATH (search)", try_open("d700/f", O_PATH, 0));
    E(EACCES, "open d700/f", try_open("d700/f", O_RDONLY, 0));
    E(0, "open d711/f (search without read)", try_open("d711/f", O_RDONLY, 0));
    E(EACCES, "open d744/f (read without search)", try_open("d744/f", O_RDONLY, 0));
    E(EACCES, "open sym600 (the target's mode)", try_open("sym600", O_RDONLY, 0));
    E(EACCES, "open symd700 (search on the target's path)", try_open("symd700", O_RDONLY, 0));
    E(EACCES, "open d711 O_DIRECTORY (list without read)", try_open("d711", O_RDONLY | O_DIRECTORY, 0));
    E(EACCES, "open d733 O_DIRECTORY", try_open("d733", O_RDONLY | O_DIRECTORY, 0));
    E(0, "open d744 O_DIRECTORY", try_open("d744", O_RDONLY | O_DIRECTORY, 0));
    E(EISDIR, "open d777 O_WRONLY", try_open("d777", O_WRONLY, 0));
    E(EISDIR, "open d755 O_RDWR (EISDIR before EACCES)", try_open("d755", O_RDWR, 0));
    E(0, "open fifo666 O_RDWR", try_open("fifo666", O_RDWR, 0));
    E(0, "open /dev/null O_RDWR", try_open("/dev/null", O_RDWR, 0));
    E(EPERM, "open f644 O_NOATIME (not the owner)", try_open("f644", O_RDONLY | O_NOATIME, 0));
    E(0, "open u644 O_NOATIME", try_open("u644", O_RDONLY | O_NOATIME, 0));
    E(EACCES, "open(O_CREAT) in a root 0755 directory", try_open("new", O_WRONLY | O_CREAT, 0644));
    E(EACCES, "open(O_CREAT) in d755", try_open("d755/new", O_WRONLY | O_CREAT, 0644));
    E(EACCES, "open(O_CREAT) in d555", try_open("d555/new", O_WRONLY | O_CREAT, 0644));
    E(EACCES, "open(O_CREAT) in d700 (search)", try_open("d700/new", O_WRONLY | O_CREAT, 0644));
    E(0, "open(O_CREAT) in d777", try_open("d777/new", O_WRONLY | O_CREAT, 0644));
    E(0, "open(O_CREAT) in d733 (write and search, no read)", try_open("d733/new", O_WRONLY | O_CREAT, 0644));
    E(0, "open(O_CREAT, 0) then read and write it", try_open("d777/new0", O_RDWR | O_CREAT, 0));
    E(0, "open(O_CREAT) of an existing readable file", try_open("f644", O_RDONLY | O_CREAT, 0644));
    E(EEXIST, "open(O_CREAT|O_EXCL) of an existing file", try_open("f644", O_RDONLY | O_CREAT | O_EXCL, 0644));
    E(EACCES, "open(O_CREAT, O_RDWR) of an existing unwritable file", try_open("f644", O_RDWR | O_CREAT, 0644));
    show_mode("d777/new");
    show_mode("d777/new0");
    return 0;
}

static int t_lookup(void)
{
    as_user();
    struct stat st;
    struct statfs sf;
    char buf[64];
    E(0, "stat d700 (the directory itself)", stat("d700", &st));
    E(EACCES, "stat d700/f", stat("d700/f", &st));
    E(EACCES, "stat d700/. (search on d700)", stat("d700/.", &st));
    E(EACCES, "stat d700/.. (search on d700)", stat("d700/..", &st));
    E(0, "stat d711/f", stat("d711/f", &st));
    E(EACCES, "stat d744/f", stat("d744/f", &st));
    E(0, "lstat symd700 (the link itself)", lstat("symd700", &st));
    E(EACCES, "stat symd700", stat("symd700", &st));
    E(EACCES, "statfs d700/f", statfs("d700/f", &sf));
    E(EACCES, "readlink d700/sym", readlink("d700/sym", buf, sizeof buf));
    E(0, "readlink d711/sym", readlink("d711/sym", buf, sizeof buf));
    E(0, "access f644 R_OK", access("f644", R_OK));
    E(EACCES, "access f644 W_OK", access("f644", W_OK));
    E(EACCES, "access f644 X_OK", access("f644", X_OK));
    E(0, "access x711 X_OK", access("x711", X_OK));
    E(EACCES, "access x711 R_OK", access("x711", R_OK));
    E(0, "access f600 F_OK", access("f600", F_OK));
    E(EACCES, "access d700/f F_OK", access("d700/f", F_OK));
    E(0, "access d711 X_OK", access("d711", X_OK));
    E(EACCES, "access d744 X_OK", access("d744", X_OK));
    E(EACCES, "faccessat d755 W_OK AT_EACCESS", faccessat(AT_FDCWD, "d755", W_OK, AT_EACCESS));
    int here = open(".", O_RDONLY | O_DIRECTORY);
    E(EACCES, "chdir d700", chdir("d700"));
    E(EACCES, "chdir d744 (read, no search)", chdir("d744"));
    E(0, "chdir d711", chdir("d711"));
    E(0, "fchdir back", fchdir(here));
    int d = open("d744", O_RDONLY | O_DIRECTORY);
    E(EACCES, "fchdir to d744 (needs search)", fchdir(d));
    close(d);
    close(here);
    E(EACCES, "opendir of d733 for getdents", try_open("d733", O_RDONLY, 0));
    E(EACCES, "utimensat d700/f", utimensat(AT_FDCWD, "d700/f", NULL, 0));
    E(EACCES, "truncate d700/f", truncate("d700/f", 0));
    return 0;
}

static int t_namespace(void)
{
    as_user();
    E(EACCES, "mkdir d755/x", mkdir("d755/x", 0755));
    E(EACCES, "mkdir d700/x (search)", mkdir("d700/x", 0755));
    E(EEXIST, "mkdir of an existing name in a read-only directory", mkdir("d755", 0755));
    E(0, "mkdir d777/x", mkdir("d777/x", 0755));
    E(0, "mkdir d733/x", mkdir("d733/x", 0755));
    E(EACCES, "rmdir d755 (parent not writable)", rmdir("d755"));
    E(EPERM, "rmdir d1777/otherdir (sticky)", rmdir("d1777/otherdir"));
    E(0, "rmdir d1777/mydir", rmdir("d1777/mydir"));
    E(0, "rmdir d777/x", rmdir("d777/x"));
    E(EACCES, "unlink f644 (parent not writable)", unlink("f644"));
    E(EACCES, "unlink d755 (EACCES before EISDIR)", unlink("d755"));
    E(EPERM, "unlink d1777/other (sticky)", unlink("d1777/other"));
    E(0, "unlink d1777/mine", unlink("d1777/mine"));
    E(0, "unlink d1777u/other (owner of the directory)", unlink("d1777u/other"));
    E(0, "unlink d777/rootfile (no sticky bit)", unlink("d777/rootfile"));
    E(EISDIR, "unlink ud755/sub", unlink("ud755/sub"));
    mkfile("d777/a", "a");
    E(0, "rename d777/a d777/b", rename("d777/a", "d777/b"));
    E(EACCES, "rename f644 d777/f644 (source directory)", rename("f644", "d777/f644"));
    E(EACCES, "rename d777/b d755/b (target directory)", rename("d777/b", "d755/b"));
    E(EPERM, "rename d1777/other d1777/z (sticky source)", rename("d1777/other", "d1777/z"));
    E(EPERM, "rename d777/b over d1777/other (sticky target)", rename("d777/b", "d1777/other"));
    E(0, "rename ud755/sub ud755/sub2 (same directory)", rename("ud755/sub", "ud755/sub2"));
    E(EACCES, "rename ud755/sub2 d777/sub (a 0555 directory changing parent)", rename("ud755/sub2", "d777/sub"));
    E(0, "link u644 d777/l", link("u644", "d777/l"));
    E(EACCES, "link u644 d755/l", link("u644", "d755/l"));
    E(EACCES, "link d700/f d777/l2 (search)", link("d700/f", "d777/l2"));
    E(EACCES, "symlink in d755", symlink("x", "d755/s"));
    E(0, "symlink in d777", symlink("x", "d777/s"));
    E(0, "mknod a FIFO in d777", mknod("d777/p", S_IFIFO | 0644, 0));
    E(EPERM, "mknod a character device in d777", mknod("d777/c", S_IFCHR | 0644, makedev(1, 3)));
    E(EACCES, "mknod a character device in d755 (EACCES first)", mknod("d755/c", S_IFCHR | 0644, makedev(1, 3)));
    show_mode("d777/s");
    show_mode("d777/p");
    show_mode("d777/b");
    return 0;
}

static int t_attrs(void)
{
    as_user();
    E(0, "chmod u644 0600", chmod("u644", 0600));
    E(EPERM, "chmod f644 (not the owner)", chmod("f644", 0666));
    int fd = open("f666", O_RDONLY);
    E(EPERM, "fchmod f666 (not the owner)", fchmod(fd, 0600));
    close(fd);
    E(0, "chmod u644 02644 (file group is ours)", chmod("u644", 02644));
    show_mode("u644");
    E(0, "chmod u2745h 02755 (file group 60 is not ours)", chmod("u2745h", 02755));
    show_mode("u2745h");
    E(0, "chown u644 to ourselves", chown("u644", 1000, -1));
    E(EPERM, "chown u644 to uid 2000", chown("u644", 2000, -1));
    E(0, "chgrp u644 50 (a group we are in)", chown("u644", -1, 50));
    E(EPERM, "chgrp u644 60", chown("u644", -1, 60));
    E(EPERM, "chgrp f644 50 (not the owner)", chown("f644", -1, 50));
    E(0, "chown(-1, -1) of someone else's plain file", chown("f644", -1, -1));
    E(EPERM, "chown(-1, -1) of someone else's set-user-ID file", chown("f4755", -1, -1));
    show_mode("u644");
    E(0, "chown(-1, -1) of our own set-user-ID file", chown("u4755", -1, -1));
    show_mode("u4755");
    E(0, "utimensat(NULL) on f666 (writable)", utimensat(AT_FDCWD, "f666", NULL, 0));
    E(EACCES, "utimensat(NULL) on f644", utimensat(AT_FDCWD, "f644", NULL, 0));
    struct timespec now2[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
    struct timespec set[2] = { { 1000, 0 }, { 2000, 0 } };
    struct timespec half[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
    struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
    E(0, "utimensat(NOW, NOW) on f666", utimensat(AT_FDCWD, "f666", now2, 0));
    E(EPERM, "utimensat(explicit) on f666 (not the owner)", utimensat(AT_FDCWD, "f666", set, 0));
    E(EPERM, "utimensat(NOW, OMIT) on f666", utimensat(AT_FDCWD, "f666", half, 0));
    E(0, "utimensat(OMIT, OMIT) on f644 (nothing to do)", utimensat(AT_FDCWD, "f644", omit, 0));
    E(0, "utimensat(explicit) on our u644", utimensat(AT_FDCWD, "u644", set, 0));
    E(EACCES, "truncate f644", truncate("f644", 0));
    E(0, "truncate f666", truncate("f666", 0));
    return 0;
}

static int t_setid_writes(void)
{
    as_user();
    chmod("u4755", 04755);
    show_mode("u4755");
    int fd = open("u4755", O_WRONLY);
    E(0, "write to our set-user-ID file", write(fd, "x", 1));
    close(fd);
    show_mode("u4755");
    fd = open("u2775g", O_WRONLY);
    E(0, "write to a set-group-ID, group-executable file", write(fd, "x", 1));
    show_mode("u2775g");
    close(fd);
    fd = open("u2745g", O_WRONLY);
    E(0, "ftruncate of a set-group-ID file of our group, no group execute", ftruncate(fd, 0));
    close(fd);
    show_mode("u2745g");
    show_mode("u2745k");
    fd = open("u2745k", O_WRONLY);
    E(0, "write to a set-group-ID file of another group, no group execute", write(fd, "x", 1));
    close(fd);
    show_mode("u2745k");
    fd = open("u644", O_WRONLY);
    E(0, "a zero-length write", write(fd, "", 0));
    close(fd);
    return 0;
}

static int t_new_files(void)
{
    as_user();
    E(0, "create d2777g60/f", try_open("d2777g60/f", O_WRONLY | O_CREAT, 0644));
    E(0, "mkdir d2777g60/d", mkdir("d2777g60/d", 0755));
    E(0, "create d2777g60/sg 02755 (group 60 is not ours)", try_open("d2777g60/sg", O_WRONLY | O_CREAT, 02755));
    E(0, "create d2777g50/sg 02755 (group 50 is ours)", try_open("d2777g50/sg", O_WRONLY | O_CREAT, 02755));
    E(0, "mkdir d777/sgd 02755 (mkdir keeps no set-id bit)", mkdir("d777/sgd", 02755));
    E(0, "mknod a FIFO in d2777g60", mknod("d2777g60/p", S_IFIFO | 0640, 0));
    show_mode("d2777g60/f");
    show_mode("d2777g60/d");
    show_mode("d2777g60/sg");
    show_mode("d2777g50/sg");
    show_mode("d777/sgd");
    show_mode("d2777g60/p");
    return 0;
}

static int t_exec(void)
{
    as_user();
    char *argv[] = { "perm", "--exit", NULL };
    char *envp[] = { NULL };
    E(EACCES, "execve x644", execve("x644", argv, envp));
    E(EACCES, "execve d755", execve("d755", argv, envp));
    E(EACCES, "execve d700/f", execve("d700/f", argv, envp));
    E(EACCES, "execve fifo666", execve("fifo666", argv, envp));
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        execve("x711", argv, envp);
        _exit(99);
    }
    int st = 0;
    wait_for(p, &st, 0);
    printf("execve x711 (execute only): %s\n", status_str(st));
    return 0;
}

static int t_fsuid(void)
{
    /* Root with the file-system uid of user 1000. */
    setfsuid(1000);
    E(EACCES, "fsuid 1000: open f600", try_open("f600", O_RDONLY, 0));
    E(0, "fsuid 1000: open u000 O_PATH", try_open("u000", O_PATH, 0));
    E(0, "fsuid 1000: create in d777", try_open("d777/fsuid", O_WRONLY | O_CREAT, 0600));
    show_mode("d777/fsuid");
    E(0, "fsuid 1000: access f600 R_OK (real uid 0)", access("f600", R_OK));
    E(EACCES, "fsuid 1000: faccessat f600 R_OK AT_EACCESS", faccessat(AT_FDCWD, "f600", R_OK, AT_EACCESS));
    setfsuid(0);
    E(0, "fsuid 0 again: open f600", try_open("f600", O_RDONLY, 0));
    return 0;
}

static int t_access_real(void)
{
    if (setresuid(1000, 0, 0) != 0)
        return 1;
    E(EACCES, "ruid 1000 euid 0: access f600 R_OK", access("f600", R_OK));
    E(0, "ruid 1000 euid 0: faccessat f600 R_OK AT_EACCESS", faccessat(AT_FDCWD, "f600", R_OK, AT_EACCESS));
    E(0, "ruid 1000 euid 0: faccessat2 f600 R_OK AT_EACCESS",
      syscall(SYS_faccessat2, AT_FDCWD, "f600", R_OK, AT_EACCESS));
    E(0, "ruid 1000 euid 0: open f600", try_open("f600", O_RDONLY, 0));
    E(EACCES, "ruid 1000 euid 0: access d700/f F_OK (walk with the real uid)", access("d700/f", F_OK));
    if (setresuid(0, 1000, 0) != 0)
        return 1;
    E(0, "ruid 0 euid 1000: access f600 R_OK", access("f600", R_OK));
    E(EACCES, "ruid 0 euid 1000: open f600", try_open("f600", O_RDONLY, 0));
    E(EACCES, "ruid 0 euid 1000: faccessat f600 AT_EACCESS", faccessat(AT_FDCWD, "f600", R_OK, AT_EACCESS));
    return 0;
}

static void in_child(const char *what, int (*fn)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_checks = t_failed = 0;
        int rc = fn();
        _exit(rc ? rc : t_failed ? 1 : 0);
    }
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (child %s)", what, status_str(st));
}

int main(int argc, char **argv)
{
    t_init("perm");
    if (argc > 1 && strcmp(argv[1], "--exit") == 0)
        return 7;
    snprintf(dir, sizeof dir, "/tmp/perm.%d", getpid());
    check(mkdir(dir, 0755) == 0 && chdir(dir) == 0, "scratch directory");
    umask(0);
    setup();
    umask(022);
    in_child("open", t_open);
    in_child("lookup and search", t_lookup);
    in_child("namespace", t_namespace);
    in_child("attributes", t_attrs);
    in_child("set-id bits on write", t_setid_writes);
    in_child("new files", t_new_files);
    in_child("exec", t_exec);
    in_child("file-system uid", t_fsuid);
    in_child("real and effective ids", t_access_real);
    check(chdir("/") == 0, "leave the scratch directory");
    rm_rf(dir);
    check(access(dir, F_OK) != 0, "scratch directory removed");
    return t_done();
}
