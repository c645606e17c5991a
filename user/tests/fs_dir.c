/*
 * fs_dir: the namespace: mkdir/mkdirat, rmdir, unlink/unlinkat,
 * rename/renameat/renameat2 (RENAME_NOREPLACE, RENAME_EXCHANGE),
 * link/linkat, symlink/symlinkat, readlink/readlinkat, getdents64 (names
 * sorted before printing), getcwd/chdir/fchdir.  Works under /tmp/fs_dir.
 */
#include "common.h"
#include "fsutil.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#define DIR_ "/tmp/fs_dir"
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#define RENAME_WHITEOUT 4



static const char *content(const char *p)
{
    static char buf[64];
    memset(buf, 0, sizeof buf);
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        return "(missing)";
    read(fd, buf, sizeof buf - 1);
    close(fd);
    return buf;
}

static int exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

static void test_mkdir_rmdir(void)
{
    check(mkdir(DIR_ "/d", 0755) == 0, "mkdir d");
    EXPECT_ERR(EEXIST, "mkdir(existing dir)", mkdir(DIR_ "/d", 0755));
    mkfile(DIR_ "/f", "file");
    EXPECT_ERR(EEXIST, "mkdir(existing file)", mkdir(DIR_ "/f", 0755));
    EXPECT_ERR(ENOENT, "mkdir(missing parent)", mkdir(DIR_ "/nope/d", 0755));
    EXPECT_ERR(ENOTDIR, "mkdir(under a file)", mkdir(DIR_ "/f/d", 0755));
    check(mkdir(DIR_ "/slash/", 0755) == 0, "mkdir with trailing slash");
    symlink("d", DIR_ "/dlink");
    EXPECT_ERR(EEXIST, "mkdir(existing symlink)", mkdir(DIR_ "/dlink", 0755));
    symlink("nowhere", DIR_ "/dangle");
    EXPECT_ERR(EEXIST, "mkdir(dangling symlink)", mkdir(DIR_ "/dangle", 0755));

    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(mkdirat(dfd, "d/e", 0700) == 0, "mkdirat(dirfd, \"d/e\")");
    EXPECT_ERR(EBADF, "mkdirat(bad dirfd)", mkdirat(999, "x", 0755));
    EXPECT_ERR(ENOTEMPTY, "rmdir(non-empty)", rmdir(DIR_ "/d"));
    EXPECT_ERR(ENOTDIR, "rmdir(file)", rmdir(DIR_ "/f"));
    EXPECT_ERR(ENOTDIR, "rmdir(symlink to dir)", rmdir(DIR_ "/dlink"));
    EXPECT_ERR(ENOENT, "rmdir(missing)", rmdir(DIR_ "/missing"));
    EXPECT_ERR(EINVAL, "rmdir(\"d/e/.\")", rmdir(DIR_ "/d/e/."));
    EXPECT_ERR(ENOTEMPTY, "rmdir(\"d/e/..\")", rmdir(DIR_ "/d/e/.."));
    check(rmdir(DIR_ "/d/e/") == 0, "rmdir with trailing slash");
    check(unlinkat(dfd, "slash", AT_REMOVEDIR) == 0, "unlinkat(AT_REMOVEDIR)");
    EXPECT_ERR(ENOTDIR, "unlinkat(file, AT_REMOVEDIR)", unlinkat(dfd, "f", AT_REMOVEDIR));
    EXPECT_ERR(EISDIR, "unlink(directory)", unlink(DIR_ "/d"));
    EXPECT_ERR(EISDIR, "unlinkat(directory, 0)", unlinkat(dfd, "d", 0));
    EXPECT_ERR(EINVAL, "unlinkat(bad flags)", unlinkat(dfd, "f", 0x1));
    EXPECT_ERR(ENOENT, "unlink(missing)", unlink(DIR_ "/missing"));
    EXPECT_ERR(ENOTDIR, "unlink(\"f/\")", unlink(DIR_ "/f/"));
    check(unlink(DIR_ "/dlink") == 0 && exists(DIR_ "/d"), "unlink(symlink) removes only the link");

    /* An unlinked open file stays readable. */
    int fd = open(DIR_ "/f", O_RDONLY);
    check(unlinkat(dfd, "f", 0) == 0, "unlinkat(file)");
    char buf[8] = { 0 };
    check(read(fd, buf, 4) == 4 && memcmp(buf, "file", 4) == 0, "unlinked open file still readable");
    struct stat st;
    check(fstat(fd, &st) == 0 && st.st_nlink == 0, "fstat(unlinked) nlink 0");
    close(fd);
    unlink(DIR_ "/dangle");
    close(dfd);

    char name[300];
    snprintf(name, sizeof name, "%s/", DIR_);
    size_t l = strlen(name);
    memset(name + l, 'n', 256);
    name[l + 256] = 0;
    EXPECT_ERR(ENAMETOOLONG, "mkdir(256-char name)", mkdir(name, 0755));
    name[l + 255] = 0;
    check(mkdir(name, 0755) == 0, "mkdir(255-char name)");
    check(rmdir(name) == 0, "rmdir(255-char name)");
    rmdir(DIR_ "/d");
}

static void test_rename(void)
{
    mkfile(DIR_ "/a", "A");
    mkfile(DIR_ "/b", "B");
    check(rename(DIR_ "/a", DIR_ "/c") == 0, "rename a -> c");
    check(!exists(DIR_ "/a") && strcmp(content(DIR_ "/c"), "A") == 0, "a gone, c has A");
    check(rename(DIR_ "/c", DIR_ "/b") == 0, "rename c over b");
    printf("b contains %s, c exists %d\n", content(DIR_ "/b"), exists(DIR_ "/c"));
    check(rename(DIR_ "/b", DIR_ "/b") == 0, "rename(b, b) is a no-op");
    link(DIR_ "/b", DIR_ "/b2");
    check(rename(DIR_ "/b", DIR_ "/b2") == 0, "rename between hard links of one inode");
    printf("after rename of hard links: b %d b2 %d\n", exists(DIR_ "/b"), exists(DIR_ "/b2"));
    unlink(DIR_ "/b2");

    mkdir(DIR_ "/d1", 0755);
    mkdir(DIR_ "/d2", 0755);
    mkfile(DIR_ "/d2/x", "x");
    mkdir(DIR_ "/d3", 0755);
    EXPECT_ERR(ENOTEMPTY, "rename(dir over non-empty dir)", rename(DIR_ "/d1", DIR_ "/d2"));
    EXPECT_ERR(EISDIR, "rename(file over dir)", rename(DIR_ "/b", DIR_ "/d1"));
    EXPECT_ERR(ENOTDIR, "rename(dir over file)", rename(DIR_ "/d1", DIR_ "/b"));
    EXPECT_ERR(EINVAL, "rename(dir into its own subdir)", rename(DIR_ "/d2", DIR_ "/d2/sub"));
    EXPECT_ERR(ENOENT, "rename(missing)", rename(DIR_ "/missing", DIR_ "/z"));
    EXPECT_ERR(ENOENT, "rename(to missing dir)", rename(DIR_ "/b", DIR_ "/nodir/z"));
    EXPECT_ERR(ENOTDIR, "rename(file, \"x/\")", rename(DIR_ "/b", DIR_ "/newname/"));
    /* Both on the root mount: across mounts Linux answers EXDEV first. */
    EXPECT_ERR(EBUSY, "rename(\"/\", ...)", rename("/", "/fs_dir-root"));
    check(rename(DIR_ "/d1", DIR_ "/d3") == 0, "rename(dir over empty dir)");
    check(!exists(DIR_ "/d1") && exists(DIR_ "/d3"), "d1 gone, d3 exists");
    check(rename(DIR_ "/d3", DIR_ "/d2/d3moved") == 0, "move dir into another dir");
    struct stat st;
    stat(DIR_ "/d2", &st);
    printf("d2 nlink after gaining a subdir: %ld\n", (long)st.st_nlink);

    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    int d2 = open(DIR_ "/d2", O_RDONLY | O_DIRECTORY);
    check(renameat(dfd, "b", d2, "b_in_d2") == 0, "renameat between dirfds");
    check(strcmp(content(DIR_ "/d2/b_in_d2"), "A") == 0, "renameat moved content");
    EXPECT_ERR(EBADF, "renameat(bad dirfd)", renameat(999, "b", dfd, "c"));

    mkfile(DIR_ "/p", "P");
    mkfile(DIR_ "/q", "Q");
    EXPECT_ERR(EEXIST, "renameat2(RENAME_NOREPLACE, existing)",
               syscall(SYS_renameat2, dfd, "p", dfd, "q", RENAME_NOREPLACE));
    check(syscall(SYS_renameat2, dfd, "p", dfd, "r", RENAME_NOREPLACE) == 0, "renameat2(RENAME_NOREPLACE, new name)");
    check(syscall(SYS_renameat2, dfd, "r", dfd, "q", RENAME_EXCHANGE) == 0, "renameat2(RENAME_EXCHANGE)");
    printf("after exchange: r=%s ", content(DIR_ "/r"));
    printf("q=%s\n", content(DIR_ "/q"));
    EXPECT_ERR(ENOENT, "renameat2(RENAME_EXCHANGE, missing target)",
               syscall(SYS_renameat2, dfd, "r", dfd, "zz", RENAME_EXCHANGE));
    EXPECT_ERR(EINVAL, "renameat2(NOREPLACE|EXCHANGE)",
               syscall(SYS_renameat2, dfd, "r", dfd, "q", RENAME_NOREPLACE | RENAME_EXCHANGE));
    EXPECT_ERR(EINVAL, "renameat2(flags 0x80)", syscall(SYS_renameat2, dfd, "r", dfd, "q", 0x80));
    check(syscall(SYS_renameat2, dfd, "r", dfd, "d2", RENAME_EXCHANGE) == 0, "RENAME_EXCHANGE file <-> dir");
    check(S_ISDIR((stat(DIR_ "/r", &st), st.st_mode)) && strcmp(content(DIR_ "/d2"), "Q") == 0 &&
              exists(DIR_ "/r/b_in_d2"),
          "file and dir swapped");
    close(d2);
    close(dfd);
}

static void test_links(void)
{
    mkfile(DIR_ "/orig", "O");
    check(link(DIR_ "/orig", DIR_ "/hard") == 0, "link orig -> hard");
    struct stat a, b;
    stat(DIR_ "/orig", &a);
    stat(DIR_ "/hard", &b);
    check(a.st_ino == b.st_ino && a.st_nlink == 2, "same inode, nlink 2");
    EXPECT_ERR(EEXIST, "link(to existing)", link(DIR_ "/orig", DIR_ "/hard"));
    EXPECT_ERR(ENOENT, "link(missing)", link(DIR_ "/missing", DIR_ "/h2"));
    mkdir(DIR_ "/ld", 0755);
    EXPECT_ERR(EPERM, "link(directory)", link(DIR_ "/ld", DIR_ "/ld2"));
    unlink(DIR_ "/orig");
    stat(DIR_ "/hard", &b);
    check(b.st_nlink == 1 && strcmp(content(DIR_ "/hard"), "O") == 0, "unlink one name: nlink 1, data kept");

    check(symlink("hard", DIR_ "/sym") == 0, "symlink sym -> hard");
    EXPECT_ERR(EEXIST, "symlink(existing)", symlink("x", DIR_ "/sym"));
    EXPECT_ERR(ENOENT, "symlink(empty target)", symlink("", DIR_ "/sym_empty"));
    EXPECT_ERR(ENOENT, "symlink(missing parent)", symlink("x", DIR_ "/nodir/s"));
    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(symlinkat("/tmp/fs_dir/hard", dfd, "abs") == 0, "symlinkat absolute target");
    char buf[64];
    memset(buf, 0, sizeof buf);
    check(readlink(DIR_ "/sym", buf, sizeof buf) == 4 && strcmp(buf, "hard") == 0, "readlink == \"hard\" (4, no NUL)");
    memset(buf, 'z', sizeof buf);
    check(readlink(DIR_ "/sym", buf, 2) == 2 && memcmp(buf, "haz", 3) == 0, "readlink(bufsiz 2) truncates to 2");
    memset(buf, 0, sizeof buf);
    check(readlinkat(dfd, "abs", buf, sizeof buf) == 16 && strcmp(buf, "/tmp/fs_dir/hard") == 0, "readlinkat(dirfd)");
    EXPECT_ERR(EINVAL, "readlink(regular file)", readlink(DIR_ "/hard", buf, sizeof buf));
    EXPECT_ERR(EINVAL, "raw readlink(bufsiz 0)", syscall(SYS_readlink, DIR_ "/sym", buf, 0));
    EXPECT_ERR(ENOENT, "readlink(missing)", readlink(DIR_ "/missing", buf, sizeof buf));
    EXPECT_ERR(EFAULT, "readlink(bad buf)", readlink(DIR_ "/sym", BAD_PTR, 10));
    int fd = open(DIR_ "/sym", O_PATH | O_NOFOLLOW);
    memset(buf, 0, sizeof buf);
    check(readlinkat(fd, "", buf, sizeof buf) == 4 && strcmp(buf, "hard") == 0, "readlinkat(O_PATH symlink fd, \"\")");
    close(fd);
    check(strcmp(content(DIR_ "/sym"), "O") == 0, "read through symlink");
    check(strcmp(content(DIR_ "/abs"), "O") == 0, "read through absolute symlink");

    /* linkat: default does not follow a symlink; AT_SYMLINK_FOLLOW does. */
    check(linkat(dfd, "sym", dfd, "sym_hard", 0) == 0, "linkat(symlink, 0)");
    struct stat st;
    lstat(DIR_ "/sym_hard", &st);
    check(S_ISLNK(st.st_mode), "linkat(0) links the symlink itself");
    check(linkat(dfd, "sym", dfd, "sym_follow", AT_SYMLINK_FOLLOW) == 0, "linkat(AT_SYMLINK_FOLLOW)");
    lstat(DIR_ "/sym_follow", &st);
    check(S_ISREG(st.st_mode), "AT_SYMLINK_FOLLOW links the target");
    printf("nlink of target now %ld\n", (long)st.st_nlink);
    EXPECT_ERR(EINVAL, "linkat(bad flags)", linkat(dfd, "sym", dfd, "x", 0x1));

    /* Symlinks in the middle of a path; relative links resolve from their directory. */
    symlink("ld", DIR_ "/ldlink");
    mkfile(DIR_ "/ld/inner", "I");
    check(strcmp(content(DIR_ "/ldlink/inner"), "I") == 0, "path through symlinked dir");
    symlink("../hard", DIR_ "/ld/up");
    check(strcmp(content(DIR_ "/ld/up"), "O") == 0, "relative symlink with ..");
    symlink("self", DIR_ "/self");
    EXPECT_ERR(ELOOP, "stat(self-loop)", stat(DIR_ "/self", &st));
    /* a chain of 40 links is allowed, 41 is not */
    char n1[64], n2[64];
    for (int i = 0; i < 41; i++) {
        snprintf(n1, sizeof n1, DIR_ "/ch%d", i);
        snprintf(n2, sizeof n2, "ch%d", i + 1);
        symlink(n2, n1);
    }
    mkfile(DIR_ "/ch41", "end");
    check(stat(DIR_ "/ch1", &st) == 0, "chain of 40 symlinks resolves");
    EXPECT_ERR(ELOOP, "chain of 41 symlinks", stat(DIR_ "/ch0", &st));
    close(dfd);
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_getdents(void)
{
    mkdir(DIR_ "/g", 0755);
    const char *names[] = { "zeta", "alpha", "Mid", "b.txt", "dot.d" };
    for (int i = 0; i < 5; i++) {
        char p[128];
        snprintf(p, sizeof p, DIR_ "/g/%s", names[i]);
        mkfile(p, "x");
    }
    mkdir(DIR_ "/g/sub", 0755);
    symlink("alpha", DIR_ "/g/lnk");
    mkfifo(DIR_ "/g/fifo", 0644);

    int fd = open(DIR_ "/g", O_RDONLY | O_DIRECTORY);
    char buf[8192];
    char *list[32];
    int n = 0;
    long r;
    int calls = 0;
    /* small buffer (one entry at a time-ish) to exercise continuation */
    while ((r = syscall(SYS_getdents64, fd, buf, 64)) > 0) {
        calls++;
        for (long off = 0; off < r;) {
            unsigned short reclen = *(unsigned short *)(buf + off + 16);
            unsigned char type = *(unsigned char *)(buf + off + 18);
            const char *name = buf + off + 19;
            char *s = malloc(300);
            snprintf(s, 300, "%s %s", name,
                     type == DT_REG ? "REG" : type == DT_DIR ? "DIR" : type == DT_LNK ? "LNK" :
                     type == DT_FIFO ? "FIFO" : "?");
            if (n < 32)
                list[n++] = s;
            check_quiet(reclen % 8 == 0, "d_reclen multiple of 8");
            off += reclen;
        }
    }
    check(r == 0, "getdents64 ends with 0");
    check(calls > 1, "64-byte buffer needed several calls");
    qsort(list, n, sizeof list[0], cmpstr);
    printf("entries:");
    for (int i = 0; i < n; i++)
        printf(" [%s]", list[i]);
    printf("\n");
    check(syscall(SYS_getdents64, fd, buf, sizeof buf) == 0, "getdents64 at end returns 0 again");
    check(lseek(fd, 0, SEEK_SET) == 0, "lseek(dir, 0) rewinds");
    r = syscall(SYS_getdents64, fd, buf, sizeof buf);
    int count = 0;
    for (long off = 0; off < r; off += *(unsigned short *)(buf + off + 16))
        count++;
    check(count == n, "after rewind all entries come back");
    EXPECT_ERR(EINVAL, "getdents64(buffer too small)", (lseek(fd, 0, SEEK_SET), syscall(SYS_getdents64, fd, buf, 1)));
    EXPECT_ERR(EFAULT, "getdents64(bad buffer)", syscall(SYS_getdents64, fd, BAD_PTR, 4096));
    close(fd);
    fd = open(DIR_ "/g/alpha", O_RDONLY);
    EXPECT_ERR(ENOTDIR, "getdents64(file)", syscall(SYS_getdents64, fd, buf, sizeof buf));
    close(fd);
    EXPECT_ERR(EBADF, "getdents64(bad fd)", syscall(SYS_getdents64, 999, buf, sizeof buf));

    /* readdir through libc, counting only */
    DIR *d = opendir(DIR_ "/g");
    int c = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        c++;
    closedir(d);
    check(c == n, "readdir sees the same number of entries");

    /* an empty dir has . and .. only */
    mkdir(DIR_ "/g/sub/empty", 0755);
    fd = open(DIR_ "/g/sub/empty", O_RDONLY | O_DIRECTORY);
    r = syscall(SYS_getdents64, fd, buf, sizeof buf);
    count = 0;
    for (long off = 0; off < r; off += *(unsigned short *)(buf + off + 16))
        count++;
    check(count == 2, "empty directory lists 2 entries");
    /* removing the directory while open: getdents returns nothing */
    rmdir(DIR_ "/g/sub/empty");
    lseek(fd, 0, SEEK_SET);
    EXPECT_ERR(ENOENT, "getdents64 on a removed dir", syscall(SYS_getdents64, fd, buf, sizeof buf));
    EXPECT_ERR(ENOENT, "openat(removed dir fd, new file)", openat(fd, "new", O_WRONLY | O_CREAT, 0644));
    close(fd);
    for (int i = 0; i < n; i++)
        free(list[i]);
}

static void test_cwd(void)
{
    char buf[PATH_MAX];
    int home = open(".", O_RDONLY | O_DIRECTORY);
    check(chdir(DIR_) == 0, "chdir(scratch)");
    check(getcwd(buf, sizeof buf) && strcmp(buf, DIR_) == 0, "getcwd == /tmp/fs_dir");
    long r = syscall(SYS_getcwd, buf, sizeof buf);
    check(r == (long)strlen(DIR_) + 1, "raw getcwd returns length including NUL");
    mkdir("rel", 0755);
    check(chdir("rel") == 0, "chdir(relative)");
    check(getcwd(buf, sizeof buf) && strcmp(buf, DIR_ "/rel") == 0, "getcwd after relative chdir");
    check(chdir("..") == 0 && getcwd(buf, sizeof buf) && strcmp(buf, DIR_) == 0, "chdir(\"..\")");
    symlink("rel", "rel_link");
    check(chdir("rel_link") == 0 && getcwd(buf, sizeof buf) && strcmp(buf, DIR_ "/rel") == 0,
          "chdir through symlink: getcwd shows the real path");
    chdir("/");
    check(getcwd(buf, sizeof buf) && strcmp(buf, "/") == 0, "getcwd == /");
    check(chdir("..") == 0 && getcwd(buf, sizeof buf) && strcmp(buf, "/") == 0, "/.. is /");
    int dfd = open(DIR_ "/rel", O_RDONLY | O_DIRECTORY);
    check(fchdir(dfd) == 0 && getcwd(buf, sizeof buf) && strcmp(buf, DIR_ "/rel") == 0, "fchdir");
    close(dfd);
    mkfile(DIR_ "/cf", "x");
    EXPECT_ERR(ENOTDIR, "chdir(file)", chdir(DIR_ "/cf"));
    EXPECT_ERR(ENOENT, "chdir(missing)", chdir(DIR_ "/missing"));
    EXPECT_ERR(ENOENT, "chdir(\"\")", chdir(""));
    int ffd = open(DIR_ "/cf", O_RDONLY);
    EXPECT_ERR(ENOTDIR, "fchdir(file fd)", fchdir(ffd));
    close(ffd);
    EXPECT_ERR(EBADF, "fchdir(bad fd)", fchdir(999));
    EXPECT_ERR(ERANGE, "getcwd(size too small)", syscall(SYS_getcwd, buf, 5));
    EXPECT_ERR(EFAULT, "getcwd(bad buffer)", syscall(SYS_getcwd, BAD_PTR, 100));

    /* cwd removed from under us */
    mkdir(DIR_ "/gone", 0755);
    chdir(DIR_ "/gone");
    rmdir(DIR_ "/gone");
    EXPECT_ERR(ENOENT, "getcwd after cwd removed", syscall(SYS_getcwd, buf, sizeof buf));
    EXPECT_ERR(ENOENT, "create in removed cwd", open("x", O_WRONLY | O_CREAT, 0644));
    check(chdir("..") == 0 && getcwd(buf, sizeof buf) && strcmp(buf, DIR_) == 0, "chdir(\"..\") from removed cwd");
    fchdir(home);
    close(home);
}

int main(void)
{
    t_init("fs_dir");
    umask(022);
    rm_rf(DIR_);
    check(mkdir(DIR_, 0755) == 0, "mkdir " DIR_);
    test_mkdir_rmdir();
    test_rename();
    test_links();
    test_getdents();
    test_cwd();
    rm_rf(DIR_);
    check(access(DIR_, F_OK) != 0, "scratch directory removed");
    return t_done();
}
