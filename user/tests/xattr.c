/*
 * xattr: extended attributes and POSIX ACLs on a tmpfs mounted for the
 * test (so the host's /tmp file system does not matter): the user.,
 * trusted., security. and system. namespaces on every kind of file,
 * XATTR_CREATE/XATTR_REPLACE, sizes (ERANGE, E2BIG), listings, the
 * l* and f* variants, O_PATH descriptors, pipes, /proc and /sys, a
 * read-only mount; the rules for a user without privileges; ACLs (their
 * format and validation, the mode they set, chmod, inheritance through a
 * default ACL, permission checks); file capabilities (format, version 3
 * with root 0 read back as version 2, removal by write, truncate and
 * chown); inotify IN_ATTRIB for set and remove.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#define D "/tmp/xattr_t"

static char buf[70000];

static void show_list(const char *what, long n, const char *b)
{
    printf("%s (%ld):", what, n);
    for (long i = 0; i < n; i++)
        putchar(b[i] ? b[i] : ' ');
    printf("\n");
}

static void show_value(const char *path, const char *name)
{
    unsigned char v[256];
    long n = getxattr(path, name, v, sizeof v);
    if (n < 0) {
        printf("%s %s: %s\n", path_base(path), name, errname(errno));
        return;
    }
    printf("%s %s (%ld):", path_base(path), name, n);
    for (long i = 0; i < n; i++)
        printf(" %02x", v[i]);
    printf("\n");
}

static unsigned mode_of(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 ? st.st_mode : 0;
}

struct acl_entry {
    uint16_t tag, perm;
    uint32_t id;
};
struct acl {
    uint32_t version;
    struct acl_entry e[8];
};
#define ACL_SIZE(n) (4 + 8 * (n))
enum { UOBJ = 1, USER = 2, GOBJ = 4, GROUP = 8, MASK = 0x10, OTHER = 0x20 };
#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"

static void test_namespaces(void)
{
    mkfile(D "/f", "data");
    symlink("f", D "/l");
    mkfifo(D "/p", 0644);
    mknod(D "/c", S_IFCHR | 0644, makedev(1, 3));
    mkdir(D "/d", 0755);
    EXPECT_OK("setxattr user.a", setxattr(D "/f", "user.a", "va", 2, 0));
    EXPECT_ERR(EINVAL, "setxattr(\"user.\")", setxattr(D "/f", "user.", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "setxattr(foo.bar)", setxattr(D "/f", "foo.bar", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "setxattr(system.foo)", setxattr(D "/f", "system.foo", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "setxattr(\"system.\")", setxattr(D "/f", "system.", "v", 1, 0));
    EXPECT_OK("setxattr trusted.t", setxattr(D "/f", "trusted.t", "vt", 2, 0));
    EXPECT_OK("setxattr security.s", setxattr(D "/f", "security.s", "vs", 2, 0));
    EXPECT_OK("setxattr user.empty (size 0)", setxattr(D "/f", "user.empty", "", 0, 0));
    EXPECT_ERR(EPERM, "lsetxattr(symlink, user.a)", lsetxattr(D "/l", "user.a", "v", 1, 0));
    EXPECT_OK("lsetxattr(symlink, trusted.a)", lsetxattr(D "/l", "trusted.a", "v", 1, 0));
    EXPECT_ERR(EPERM, "setxattr(fifo, user.a)", setxattr(D "/p", "user.a", "v", 1, 0));
    EXPECT_ERR(EPERM, "setxattr(chardev, user.a)", setxattr(D "/c", "user.a", "v", 1, 0));
    EXPECT_OK("setxattr(chardev, security.a)", setxattr(D "/c", "security.a", "v", 1, 0));
    EXPECT_OK("setxattr(dir, user.a)", setxattr(D "/d", "user.a", "v", 1, 0));
    EXPECT_ERR(ENODATA, "lgetxattr(symlink, user.a)", lgetxattr(D "/l", "user.a", buf, 10));
    EXPECT_ERR(ENODATA, "getxattr(fifo, user.a)", getxattr(D "/p", "user.a", buf, 10));
    check(getxattr(D "/l", "user.a", buf, 10) == 2 && memcmp(buf, "va", 2) == 0, "getxattr(symlink) follows to the file");
    check(lgetxattr(D "/l", "trusted.a", buf, 10) == 1, "lgetxattr(symlink, trusted.a)");
    check(getxattr(D "/f", "user.empty", buf, 10) == 0, "empty value reads back as 0 bytes");
    check(getxattr(D "/f", "user.a", NULL, 0) == 2, "getxattr(size 0) gives the size");
    EXPECT_ERR(ERANGE, "getxattr(buffer too small)", getxattr(D "/f", "user.a", buf, 1));
    EXPECT_ERR(ENODATA, "getxattr(missing)", getxattr(D "/f", "user.missing", buf, 10));
    EXPECT_ERR(EOPNOTSUPP, "getxattr(foo.bar)", getxattr(D "/f", "foo.bar", buf, 10));
    EXPECT_ERR(EINVAL, "getxattr(\"trusted.\")", getxattr(D "/f", "trusted.", buf, 10));
    long n = listxattr(D "/f", buf, sizeof buf);
    show_list("listxattr(f)", n, buf);
    check(listxattr(D "/f", NULL, 0) == n, "listxattr(size 0) gives the size");
    EXPECT_ERR(ERANGE, "listxattr(buffer too small)", listxattr(D "/f", buf, 5));
    n = llistxattr(D "/l", buf, sizeof buf);
    show_list("llistxattr(l)", n, buf);
    n = listxattr(D "/c", buf, sizeof buf);
    show_list("listxattr(c)", n, buf);
    check(listxattr(D "/p", buf, sizeof buf) == 0, "listxattr(fifo) is empty");
}

static void test_flags_and_sizes(void)
{
    EXPECT_ERR(EEXIST, "XATTR_CREATE on existing", setxattr(D "/f", "user.a", "x", 1, XATTR_CREATE));
    EXPECT_ERR(ENODATA, "XATTR_REPLACE on missing", setxattr(D "/f", "user.new", "x", 1, XATTR_REPLACE));
    EXPECT_OK("XATTR_CREATE on missing", setxattr(D "/f", "user.new", "x", 1, XATTR_CREATE));
    EXPECT_OK("XATTR_REPLACE on existing", setxattr(D "/f", "user.new", "yy", 2, XATTR_REPLACE));
    check(getxattr(D "/f", "user.new", buf, 10) == 2 && memcmp(buf, "yy", 2) == 0, "replaced value");
    EXPECT_ERR(ENODATA, "CREATE|REPLACE on missing", setxattr(D "/f", "user.x", "x", 1, XATTR_CREATE | XATTR_REPLACE));
    EXPECT_ERR(EINVAL, "setxattr(flags 4)", setxattr(D "/f", "user.x", "x", 1, 4));
    EXPECT_ERR(E2BIG, "setxattr(65537 bytes)", setxattr(D "/f", "user.big", buf, 65537, 0));
    memset(buf, 'z', 65536);
    EXPECT_OK("setxattr(65536 bytes)", setxattr(D "/f", "user.big", buf, 65536, 0));
    check(getxattr(D "/f", "user.big", buf, sizeof buf) == 65536 && buf[65535] == 'z', "65536-byte value reads back");
    EXPECT_OK("removexattr user.big", removexattr(D "/f", "user.big"));
    EXPECT_ERR(ENODATA, "removexattr again", removexattr(D "/f", "user.big"));
    EXPECT_ERR(EOPNOTSUPP, "removexattr(foo.bar)", removexattr(D "/f", "foo.bar"));
    char name[300];
    memset(name, 'a', sizeof name);
    memcpy(name, "user.", 5);
    name[255] = 0;
    EXPECT_OK("setxattr(255-byte name)", setxattr(D "/f", name, "v", 1, 0));
    EXPECT_OK("removexattr(255-byte name)", removexattr(D "/f", name));
    name[255] = 'a';
    name[256] = 0;
    EXPECT_ERR(ERANGE, "setxattr(256-byte name)", setxattr(D "/f", name, "v", 1, 0));
    EXPECT_ERR(ERANGE, "getxattr(256-byte name)", getxattr(D "/f", name, buf, 1));
    EXPECT_ERR(ERANGE, "setxattr(empty name)", setxattr(D "/f", "", "v", 1, 0));
    EXPECT_ERR(ERANGE, "removexattr(empty name)", removexattr(D "/f", ""));
    /* The name and flags are checked before the path is walked. */
    EXPECT_ERR(ERANGE, "setxattr(missing path, empty name)", setxattr(D "/missing", "", "v", 1, 0));
    EXPECT_ERR(EINVAL, "setxattr(missing path, bad flags)", setxattr(D "/missing", "user.x", "v", 1, 8));
    EXPECT_ERR(E2BIG, "setxattr(missing path, 70000 bytes)", setxattr(D "/missing", "user.x", buf, 70000, 0));
    EXPECT_ERR(ENOENT, "getxattr(missing path)", getxattr(D "/missing", "user.x", buf, 1));
    EXPECT_ERR(EFAULT, "setxattr(bad name pointer)", setxattr(D "/f", BAD_PTR, "v", 1, 0));
    EXPECT_ERR(EFAULT, "setxattr(bad value pointer)", setxattr(D "/f", "user.x", BAD_PTR, 4, 0));
    EXPECT_ERR(EFAULT, "getxattr(bad buffer)", getxattr(D "/f", "user.a", BAD_PTR, 10));
    EXPECT_ERR(EFAULT, "listxattr(bad buffer)", listxattr(D "/f", BAD_PTR, 100));
    EXPECT_ERR(ENODATA, "getxattr(missing, bad buffer)", getxattr(D "/f", "user.none", BAD_PTR, 10));
}

static void test_descriptors(void)
{
    int fd = open(D "/f", O_RDONLY);
    check(fgetxattr(fd, "user.a", buf, 10) == 2, "fgetxattr");
    EXPECT_OK("fsetxattr on an O_RDONLY descriptor", fsetxattr(fd, "user.fd", "1", 1, 0));
    check(flistxattr(fd, NULL, 0) == listxattr(D "/f", NULL, 0), "flistxattr agrees with listxattr");
    EXPECT_OK("fremovexattr", fremovexattr(fd, "user.fd"));
    close(fd);
    int op = open(D "/f", O_PATH);
    EXPECT_ERR(EBADF, "fgetxattr(O_PATH)", fgetxattr(op, "user.a", buf, 10));
    EXPECT_ERR(EBADF, "fsetxattr(O_PATH)", fsetxattr(op, "user.a", "v", 1, 0));
    EXPECT_ERR(EBADF, "flistxattr(O_PATH)", flistxattr(op, buf, 10));
    EXPECT_ERR(EBADF, "fremovexattr(O_PATH)", fremovexattr(op, "user.a"));
    close(op);
    EXPECT_ERR(EBADF, "fgetxattr(bad fd)", fgetxattr(99, "user.a", buf, 10));
    EXPECT_ERR(ERANGE, "fsetxattr(bad fd, empty name)", fsetxattr(99, "", "v", 1, 0));
    /* An unlinked file keeps its attributes while open. */
    fd = open(D "/f", O_RDONLY);
    link(D "/f", D "/f2");
    check(getxattr(D "/f2", "user.a", buf, 10) == 2, "a hard link shares the attributes");
    rename(D "/f2", D "/f3");
    check(getxattr(D "/f3", "user.a", buf, 10) == 2, "rename keeps the attributes");
    unlink(D "/f3");
    int p[2];
    pipe(p);
    EXPECT_ERR(ENODATA, "fgetxattr(pipe, user.a)", fgetxattr(p[0], "user.a", buf, 10));
    EXPECT_ERR(EPERM, "fsetxattr(pipe, user.a)", fsetxattr(p[1], "user.a", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "fgetxattr(pipe, trusted.a)", fgetxattr(p[0], "trusted.a", buf, 10));
    EXPECT_ERR(EOPNOTSUPP, "fsetxattr(pipe, security.a)", fsetxattr(p[0], "security.a", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "fgetxattr(pipe, ACL)", fgetxattr(p[0], ACCESS, buf, 10));
    check(flistxattr(p[0], buf, 10) == 0, "flistxattr(pipe) is empty");
    close(p[0]);
    close(p[1]);
    close(fd);
}

static void test_other_file_systems(void)
{
    EXPECT_ERR(EOPNOTSUPP, "getxattr(/proc file, user.a)", getxattr("/proc/self/status", "user.a", buf, 10));
    EXPECT_ERR(EOPNOTSUPP, "getxattr(/proc file, security.a)", getxattr("/proc/self/status", "security.a", buf, 10));
    EXPECT_ERR(EOPNOTSUPP, "setxattr(/proc file, user.a)", setxattr("/proc/self/status", "user.a", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "getxattr(/proc file, ACL)", getxattr("/proc/self/status", ACCESS, buf, 10));
    EXPECT_ERR(EOPNOTSUPP, "removexattr(/proc file, ACL)", removexattr("/proc/self/status", ACCESS));
    check(listxattr("/proc/self/status", buf, 100) == 0, "listxattr(/proc file) is empty");
    EXPECT_ERR(ENODATA, "getxattr(/sys dir, user.a)", getxattr("/sys/kernel", "user.a", buf, 10));
    EXPECT_ERR(EOPNOTSUPP, "setxattr(/sys dir, user.a)", setxattr("/sys/kernel", "user.a", "v", 1, 0));
    EXPECT_ERR(ENODATA, "setxattr(/sys dir, trusted.a, REPLACE)",
               setxattr("/sys/kernel", "trusted.a", "v", 1, XATTR_REPLACE));
    EXPECT_ERR(EOPNOTSUPP, "getxattr(/sys dir, ACL)", getxattr("/sys/kernel", ACCESS, buf, 10));
    check(listxattr("/sys/kernel", buf, 100) == 0, "listxattr(/sys dir) is empty");
    EXPECT_ERR(ENODATA, "getxattr(/dev/null, user.a)", getxattr("/dev/null", "user.a", buf, 10));
    EXPECT_ERR(ENODATA, "getxattr(/dev/null, ACL)", getxattr("/dev/null", ACCESS, buf, 10));
    /* A read-only mount refuses changes after the name is checked. */
    mkdir(D "/ro", 0755);
    if (mount("none", D "/ro", "tmpfs", MS_RDONLY, NULL) == 0) {
        EXPECT_ERR(EROFS, "setxattr on a read-only mount", setxattr(D "/ro", "user.a", "v", 1, 0));
        EXPECT_ERR(EROFS, "removexattr on a read-only mount", removexattr(D "/ro", "user.a"));
        EXPECT_ERR(EROFS, "ACL on a read-only mount", setxattr(D "/ro", ACCESS, "\2\0\0\0", 4, 0));
        EXPECT_ERR(ERANGE, "empty name on a read-only mount", setxattr(D "/ro", "", "v", 1, 0));
        EXPECT_ERR(ENODATA, "getxattr on a read-only mount", getxattr(D "/ro", "user.a", buf, 1));
        umount(D "/ro");
    } else {
        check(0, "mount a read-only tmpfs");
    }
}

static void test_acls(void)
{
    const char *f = D "/af";
    mkfile(f, "x");
    chmod(f, 0640);
    EXPECT_ERR(ENODATA, "getxattr(ACL) without one", getxattr(f, ACCESS, buf, 100));
    EXPECT_ERR(ENODATA, "getxattr(default ACL) of a file", getxattr(f, DEFAULT, buf, 100));
    struct acl a = { 2, { { UOBJ, 7, 5 }, { USER, 5, 1000 }, { GOBJ, 5, 7 }, { MASK, 7, 9 }, { OTHER, 4, 1 } } };
    EXPECT_OK("set an access ACL", setxattr(f, ACCESS, &a, ACL_SIZE(5), 0));
    show_value(f, ACCESS);
    printf("mode after the ACL: %o\n", mode_of(f));
    long n = listxattr(f, buf, sizeof buf);
    show_list("listxattr with an ACL", n, buf);
    EXPECT_OK("chmod 0700", chmod(f, 0700));
    show_value(f, ACCESS);
    EXPECT_OK("chmod 0754", chmod(f, 0754));
    show_value(f, ACCESS);
    /* An ACL that says no more than the mode is not kept; flags are ignored. */
    struct acl min = { 2, { { UOBJ, 6, 0 }, { GOBJ, 4, 0 }, { OTHER, 0, 0 } } };
    EXPECT_OK("set a minimal ACL with XATTR_CREATE", setxattr(f, ACCESS, &min, ACL_SIZE(3), XATTR_CREATE));
    show_value(f, ACCESS);
    printf("mode after the minimal ACL: %o\n", mode_of(f));
    EXPECT_OK("set the ACL again", setxattr(f, ACCESS, &a, ACL_SIZE(5), 0));
    EXPECT_OK("remove the ACL", removexattr(f, ACCESS));
    EXPECT_OK("remove it again (no error)", removexattr(f, ACCESS));
    printf("mode after removal: %o\n", mode_of(f));
    EXPECT_OK("header-only ACL removes", setxattr(f, ACCESS, "\2\0\0\0", 4, 0));
    EXPECT_ERR(EOPNOTSUPP, "ACL version 3", setxattr(f, ACCESS, "\3\0\0\0", 4, 0));
    EXPECT_ERR(EINVAL, "ACL of 3 bytes", setxattr(f, ACCESS, "\2\0\0", 3, 0));
    EXPECT_ERR(EINVAL, "ACL of 5 bytes", setxattr(f, ACCESS, "\2\0\0\0\1", 5, 0));
    struct acl nomask = { 2, { { UOBJ, 7, 0 }, { USER, 5, 1000 }, { GOBJ, 5, 0 }, { OTHER, 4, 0 } } };
    EXPECT_ERR(EINVAL, "named entry without a mask", setxattr(f, ACCESS, &nomask, ACL_SIZE(4), 0));
    struct acl order = { 2, { { UOBJ, 7, 0 }, { GOBJ, 5, 0 }, { OTHER, 4, 0 }, { MASK, 7, 0 } } };
    EXPECT_ERR(EINVAL, "entries out of order", setxattr(f, ACCESS, &order, ACL_SIZE(4), 0));
    struct acl perm8 = { 2, { { UOBJ, 8, 0 }, { GOBJ, 5, 0 }, { OTHER, 4, 0 } } };
    EXPECT_ERR(EINVAL, "permission bit 8", setxattr(f, ACCESS, &perm8, ACL_SIZE(3), 0));
    struct acl badid = { 2, { { UOBJ, 7, 0 }, { USER, 5, 0xffffffff }, { GOBJ, 5, 0 }, { MASK, 7, 0 }, { OTHER, 4, 0 } } };
    EXPECT_ERR(EINVAL, "named user -1", setxattr(f, ACCESS, &badid, ACL_SIZE(5), 0));
    struct acl badtag = { 2, { { UOBJ, 7, 0 }, { 0x40, 5, 0 }, { GOBJ, 5, 0 }, { OTHER, 4, 0 } } };
    EXPECT_ERR(EINVAL, "unknown tag", setxattr(f, ACCESS, &badtag, ACL_SIZE(4), 0));
    struct acl dup = { 2, { { UOBJ, 7, 0 }, { USER, 5, 5 }, { USER, 5, 5 }, { GOBJ, 5, 0 }, { MASK, 7, 0 }, { OTHER, 4, 0 } } };
    EXPECT_OK("duplicate named entries are kept", setxattr(f, ACCESS, &dup, ACL_SIZE(6), 0));
    show_value(f, ACCESS);
    EXPECT_ERR(EACCES, "default ACL on a file", setxattr(f, DEFAULT, &a, ACL_SIZE(5), 0));
    EXPECT_OK("removing a default ACL from a file", setxattr(f, DEFAULT, "", 0, 0));
    EXPECT_ERR(EOPNOTSUPP, "lgetxattr(symlink, ACL)", lgetxattr(D "/l", ACCESS, buf, 100));
    EXPECT_ERR(EOPNOTSUPP, "lsetxattr(symlink, ACL)", lsetxattr(D "/l", ACCESS, "", 0, 0));
    EXPECT_ERR(EOPNOTSUPP, "lremovexattr(symlink, ACL)", lremovexattr(D "/l", ACCESS));
    EXPECT_OK("ACL on a FIFO", setxattr(D "/p", ACCESS, &a, ACL_SIZE(5), 0));
    show_value(D "/p", ACCESS);
    EXPECT_ERR(ERANGE, "getxattr(ACL, small buffer)", getxattr(f, ACCESS, buf, 8));
    check(getxattr(f, ACCESS, NULL, 0) == ACL_SIZE(6), "getxattr(ACL, size 0) gives its size");

    /* Inheritance: the umask gives way to the default ACL. */
    mkdir(D "/inh", 0755);
    struct acl def = { 2, { { UOBJ, 7, 0 }, { USER, 5, 1000 }, { GOBJ, 5, 0 }, { MASK, 5, 0 }, { OTHER, 0, 0 } } };
    EXPECT_OK("set a default ACL", setxattr(D "/inh", DEFAULT, &def, ACL_SIZE(5), 0));
    show_value(D "/inh", DEFAULT);
    EXPECT_ERR(ENODATA, "the directory itself has no access ACL", getxattr(D "/inh", ACCESS, buf, 100));
    mode_t old = umask(077);
    close(open(D "/inh/file", O_CREAT | O_RDWR, 0666));
    mkdir(D "/inh/sub", 0777);
    mknod(D "/inh/fifo", S_IFIFO | 0666, 0);
    symlink("file", D "/inh/sym");
    umask(old);
    show_value(D "/inh/file", ACCESS);
    show_value(D "/inh/file", DEFAULT);
    printf("inherited file mode %o\n", mode_of(D "/inh/file"));
    show_value(D "/inh/sub", ACCESS);
    show_value(D "/inh/sub", DEFAULT);
    printf("inherited dir mode %o\n", mode_of(D "/inh/sub"));
    show_value(D "/inh/fifo", ACCESS);
    printf("inherited fifo mode %o, symlink mode %o\n", mode_of(D "/inh/fifo"), mode_of(D "/inh/sym"));
    close(open(D "/inh/sub/deeper", O_CREAT | O_RDWR, 0600));
    show_value(D "/inh/sub/deeper", ACCESS);
    printf("deeper mode %o\n", mode_of(D "/inh/sub/deeper"));
    struct acl def2 = { 2, { { UOBJ, 7, 0 }, { GOBJ, 5, 0 }, { OTHER, 0, 0 } } };
    EXPECT_OK("a minimal default ACL", setxattr(D "/inh", DEFAULT, &def2, ACL_SIZE(3), 0));
    old = umask(077);
    close(open(D "/inh/plain", O_CREAT | O_RDWR, 0666));
    umask(old);
    show_value(D "/inh/plain", ACCESS);
    printf("plain mode %o (umask ignored)\n", mode_of(D "/inh/plain"));
    n = listxattr(D "/inh", buf, sizeof buf);
    show_list("listxattr(dir with a default ACL)", n, buf);
    EXPECT_OK("remove the default ACL", removexattr(D "/inh", DEFAULT));
    old = umask(077);
    close(open(D "/inh/after", O_CREAT | O_RDWR, 0666));
    umask(old);
    printf("mode after removal %o (umask applies)\n", mode_of(D "/inh/after"));
}

static void test_caps(void)
{
    const char *f = D "/capfile";
    mkfile(f, "x");
    unsigned char v2[20] = { 0, 0, 0, 2, 1, 0, 0, 0 };
    unsigned char v2e[20] = { 1, 0, 0, 2, 1, 0, 0, 0 };
    unsigned char v3[24] = { 0, 0, 0, 3, 1, 0, 0, 0 };
    EXPECT_OK("security.capability v2", setxattr(f, "security.capability", v2, 20, 0));
    show_value(f, "security.capability");
    EXPECT_ERR(EINVAL, "v2 header, 24 bytes", setxattr(f, "security.capability", v2, 24, 0));
    EXPECT_ERR(EINVAL, "10 bytes", setxattr(f, "security.capability", v2, 10, 0));
    EXPECT_ERR(EINVAL, "v3 header, 20 bytes", setxattr(f, "security.capability", v3, 20, 0));
    EXPECT_OK("v3 with root 0", setxattr(f, "security.capability", v3, 24, 0));
    show_value(f, "security.capability");
    v3[20] = 0xe8;
    v3[21] = 3;
    EXPECT_OK("v3 with root 1000", setxattr(f, "security.capability", v3, 24, 0));
    show_value(f, "security.capability");
    EXPECT_OK("v2 with the effective flag", setxattr(f, "security.capability", v2e, 20, 0));
    show_value(f, "security.capability");
    int fd = open(f, O_WRONLY);
    write(fd, "y", 1);
    close(fd);
    EXPECT_ERR(ENODATA, "a write removes the capabilities", getxattr(f, "security.capability", buf, 100));
    setxattr(f, "security.capability", v2, 20, 0);
    EXPECT_OK("truncate", truncate(f, 0));
    EXPECT_ERR(ENODATA, "a truncate removes them", getxattr(f, "security.capability", buf, 100));
    setxattr(f, "security.capability", v2, 20, 0);
    EXPECT_OK("chown", chown(f, 0, 0));
    EXPECT_ERR(ENODATA, "a chown removes them", getxattr(f, "security.capability", buf, 100));
    setxattr(f, "security.capability", v2, 20, 0);
    EXPECT_OK("chmod keeps them", chmod(f, 0755));
    check(getxattr(f, "security.capability", buf, 100) == 20, "still there after chmod");
    setxattr(f, "user.keep", "k", 1, 0);
    fd = open(f, O_WRONLY);
    write(fd, "y", 1);
    close(fd);
    check(getxattr(f, "user.keep", buf, 100) == 1, "a write keeps other attributes");
    EXPECT_OK("an empty security.capability", setxattr(f, "security.capability", "", 0, 0));
    EXPECT_ERR(EINVAL, "reading an invalid one", getxattr(f, "security.capability", buf, 100));
    EXPECT_OK("removing it", removexattr(f, "security.capability"));
}

static int unprivileged(void *arg)
{
    (void)arg;
    if (setgid(1000) || setuid(1000))
        return 99;
    EXPECT_ERR(ENODATA, "user: getxattr trusted.t", getxattr(D "/f", "trusted.t", buf, 10));
    EXPECT_ERR(EPERM, "user: setxattr trusted.t", setxattr(D "/f", "trusted.t", "v", 1, 0));
    EXPECT_ERR(EPERM, "user: removexattr trusted.t", removexattr(D "/f", "trusted.t"));
    long n = listxattr(D "/f", buf, sizeof buf);
    show_list("user: listxattr(f)", n, buf);
    check(getxattr(D "/f", "user.a", buf, 10) == 2, "user: getxattr user.a of a readable file");
    EXPECT_ERR(EACCES, "user: setxattr user.a without write permission", setxattr(D "/f", "user.a", "v", 1, 0));
    EXPECT_ERR(EPERM, "user: setxattr security.s", setxattr(D "/f", "security.s", "v", 1, 0));
    check(getxattr(D "/f", "security.s", buf, 10) == 2, "user: security.s is readable");
    EXPECT_ERR(EACCES, "user: setxattr foo.x without write permission", setxattr(D "/f", "foo.x", "v", 1, 0));
    EXPECT_ERR(EOPNOTSUPP, "user: getxattr foo.x", getxattr(D "/f", "foo.x", buf, 10));
    EXPECT_ERR(EPERM, "user: ACL on someone else's file", setxattr(D "/f", ACCESS, "\2\0\0\0", 4, 0));
    EXPECT_ERR(EPERM, "user: removing someone else's ACL", removexattr(D "/f", ACCESS));
    EXPECT_OK("user: removing a default ACL of a file", setxattr(D "/f", DEFAULT, "", 0, 0));
    close(open(D "/mine", O_CREAT | O_RDWR, 0600));
    EXPECT_OK("user: setxattr user.u on an own file", setxattr(D "/mine", "user.u", "v", 1, 0));
    EXPECT_ERR(EPERM, "user: security.capability", setxattr(D "/mine", "security.capability", "\0\0\0\2\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 20, 0));
    EXPECT_ERR(EPERM, "user: setxattr(sticky dir of root)", setxattr(D "/sticky", "user.u", "v", 1, 0));
    EXPECT_ERR(ENODATA, "user: getxattr(sticky dir of root)", getxattr(D "/sticky", "user.u", buf, 1));
    chmod(D "/mine", 0);
    EXPECT_ERR(EACCES, "user: getxattr user.u of a mode 0 file", getxattr(D "/mine", "user.u", buf, 1));
    check(listxattr(D "/mine", buf, 100) == 7, "user: listxattr needs no permission");
    chmod(D "/mine", 0600);
    /* ACL permission: root's 0600 file opened to user 1000 by a named entry. */
    EXPECT_ERR(EACCES, "user: open the root-only file", open(D "/acl_only", O_RDONLY));
    EXPECT_ERR(EACCES, "user: write the masked file", open(D "/acl_masked", O_WRONLY));
    int fd = open(D "/acl_masked", O_RDONLY);
    check(fd >= 0, "user: read the masked file through its named entry");
    close(fd);
    fd = open(D "/acl_rw", O_RDWR);
    check(fd >= 0, "user: open for writing through the ACL");
    close(fd);
    check(access(D "/acl_rw", R_OK | W_OK) == 0, "user: access() sees the ACL");
    EXPECT_ERR(EACCES, "user: the group entry refuses", open(D "/acl_group_no", O_RDONLY));
    fd = open(D "/acl_dir/inside", O_CREAT | O_RDWR, 0600);
    check(fd >= 0, "user: create in a directory the ACL opens");
    close(fd);
    struct acl mine = { 2, { { UOBJ, 6, 0 }, { USER, 4, 2000 }, { GOBJ, 0, 0 }, { MASK, 4, 0 }, { OTHER, 0, 0 } } };
    EXPECT_OK("user: ACL on an own file", setxattr(D "/mine", ACCESS, &mine, ACL_SIZE(5), 0));
    return t_failed;
}

static void set_acl(const char *p, struct acl *a, int n)
{
    if (setxattr(p, ACCESS, a, ACL_SIZE(n), 0))
        printf("set ACL on %s: %s\n", p, errname(errno));
}

static void test_unprivileged(void)
{
    chmod(D, 0777);
    chmod(D "/f", 0644);
    mkdir(D "/sticky", 01777);
    mkfile(D "/acl_only", "x");
    chmod(D "/acl_only", 0600);
    mkfile(D "/acl_masked", "x");
    chmod(D "/acl_masked", 0600);
    struct acl masked = { 2, { { UOBJ, 6, 0 }, { USER, 6, 1000 }, { GOBJ, 0, 0 }, { MASK, 4, 0 }, { OTHER, 0, 0 } } };
    set_acl(D "/acl_masked", &masked, 5);
    mkfile(D "/acl_rw", "x");
    struct acl rw = { 2, { { UOBJ, 6, 0 }, { USER, 6, 1000 }, { GOBJ, 0, 0 }, { MASK, 6, 0 }, { OTHER, 0, 0 } } };
    set_acl(D "/acl_rw", &rw, 5);
    mkfile(D "/acl_group_no", "x");
    struct acl grp = { 2, { { UOBJ, 6, 0 }, { GOBJ, 0, 0 }, { GROUP, 0, 1000 }, { MASK, 6, 0 }, { OTHER, 4, 0 } } };
    set_acl(D "/acl_group_no", &grp, 5);
    mkdir(D "/acl_dir", 0700);
    struct acl dir = { 2, { { UOBJ, 7, 0 }, { USER, 7, 1000 }, { GOBJ, 0, 0 }, { MASK, 7, 0 }, { OTHER, 0, 0 } } };
    set_acl(D "/acl_dir", &dir, 5);
    printf("modes with ACLs: %o %o %o %o\n", mode_of(D "/acl_masked"), mode_of(D "/acl_rw"),
           mode_of(D "/acl_group_no"), mode_of(D "/acl_dir"));
    int st = run_child(unprivileged, NULL);
    check(st == 0, "unprivileged checks: %s", status_str(st));
    show_value(D "/mine", ACCESS);
}

/* inotify: setting or removing an attribute is IN_ATTRIB; reading and
 * listing report nothing; a failed set reports nothing. */
static void test_notify(void)
{
    mkfile(D "/watched", "w");
    int ino = inotify_init1(IN_NONBLOCK);
    inotify_add_watch(ino, D "/watched", IN_ALL_EVENTS);
    const char *steps[] = { "setxattr", "getxattr", "listxattr", "removexattr", "failed removexattr" };
    for (int i = 0; i < 5; i++) {
        char v[16];
        switch (i) {
        case 0:
            setxattr(D "/watched", "user.n", "1", 1, 0);
            break;
        case 1:
            getxattr(D "/watched", "user.n", v, sizeof v);
            break;
        case 2:
            listxattr(D "/watched", v, sizeof v);
            break;
        case 3:
            removexattr(D "/watched", "user.n");
            break;
        case 4:
            removexattr(D "/watched", "user.n");
            break;
        }
        char ev[1024];
        long n = read(ino, ev, sizeof ev);
        printf("inotify after %s:", steps[i]);
        for (long off = 0; n > 0 && off < n;) {
            struct inotify_event *e = (struct inotify_event *)(ev + off);
            printf(" %#x", e->mask);
            off += sizeof *e + e->len;
        }
        printf("\n");
    }
    close(ino);
    unlink(D "/watched");
}

int main(void)
{
    t_init("xattr");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rm_rf(D);
    mkdir(D, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs on " D ": %s\n", errname(errno));
        return 1;
    }
    test_namespaces();
    test_flags_and_sizes();
    test_descriptors();
    test_other_file_systems();
    test_acls();
    test_caps();
    test_unprivileged();
    test_notify();
    umount2(D, MNT_DETACH);
    rmdir(D);
    return t_done();
}
