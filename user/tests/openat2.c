/*
 * openat2: struct open_how (sizes, E2BIG for unknown non-zero bytes,
 * every flag and mode checked before the path), the RESOLVE_* rules
 * (NO_XDEV, NO_MAGICLINKS, NO_SYMLINKS, BENEATH, IN_ROOT, CACHED) with
 * their errnos, and file handles (name_to_handle_at sizes and EOVERFLOW,
 * the mount id, open_by_handle_at while the inode lives, ESTALE after,
 * EPERM without CAP_DAC_READ_SEARCH). Works on a tmpfs mounted at
 * /tmp/openat2_t, with a second one mounted inside it.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define D "/tmp/openat2_t"

struct how {
    uint64_t flags, mode, resolve;
};
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#define RESOLVE_CACHED 0x20

static long openat2(int dirfd, const char *path, struct how *h, size_t size)
{
    return syscall(SYS_openat2, dirfd, path, h, size);
}

/* Whether an open worked; the descriptor is closed again. */
static int opened(long fd)
{
    if (fd >= 0)
        close((int)fd);
    return fd >= 0;
}

/* An open that either fails (prints the errno) or opens the expected file. */
static void try_open(const char *what, int dirfd, const char *path, uint64_t flags, uint64_t resolve, const char *expect)
{
    struct how h = { flags, 0, resolve };
    errno = 0;
    long fd = openat2(dirfd, path, &h, sizeof h);
    if (fd < 0) {
        printf("%s: %s\n", what, errname(errno));
        return;
    }
    char buf[64] = { 0 };
    long n = read((int)fd, buf, sizeof buf - 1);
    close((int)fd);
    if (expect)
        check(n >= 0 && strcmp(buf, expect) == 0, "%s opens the file holding \"%s\"", what, expect);
    else
        printf("%s: opened\n", what);
}

static void test_how(void)
{
    struct how h = { O_RDONLY, 0, 0 };
    char big[64];
    memset(big, 0, sizeof big);
    memcpy(big, &h, sizeof h);
    check(opened(openat2(AT_FDCWD, D "/f", &h, sizeof h)), "openat2 with a 24-byte open_how");
    EXPECT_ERR(EINVAL, "size 23", openat2(AT_FDCWD, D "/f", &h, 23));
    EXPECT_ERR(E2BIG, "size 4097", openat2(AT_FDCWD, D "/f", &h, 4097));
    check(opened(openat2(AT_FDCWD, D "/f", (struct how *)big, 64)), "size 64 with zeros past the known fields");
    big[40] = 1;
    EXPECT_ERR(E2BIG, "size 64 with a non-zero byte past them", openat2(AT_FDCWD, D "/f", (struct how *)big, 64));
    EXPECT_ERR(EFAULT, "bad open_how pointer", openat2(AT_FDCWD, D "/f", (struct how *)1, 24));
    struct how bad = { 1ULL << 40, 0, 0 };
    EXPECT_ERR(EINVAL, "unknown flag bit 40", openat2(AT_FDCWD, D "/f", &bad, 24));
    EXPECT_ERR(EINVAL, "the flags before the path", openat2(AT_FDCWD, (char *)1, &bad, 24));
    struct how m = { O_RDONLY, 0644, 0 };
    EXPECT_ERR(EINVAL, "a mode without O_CREAT", openat2(AT_FDCWD, D "/f", &m, 24));
    struct how m2 = { O_CREAT | O_WRONLY, 010000, 0 };
    EXPECT_ERR(EINVAL, "mode bits beyond 07777", openat2(AT_FDCWD, D "/new", &m2, 24));
    struct how dc = { O_CREAT | O_DIRECTORY, 0644, 0 };
    EXPECT_ERR(EINVAL, "O_CREAT|O_DIRECTORY", openat2(AT_FDCWD, D "/new", &dc, 24));
    struct how tmp = { O_TMPFILE | O_RDONLY, 0600, 0 };
    EXPECT_ERR(EINVAL, "O_TMPFILE read-only", openat2(AT_FDCWD, D, &tmp, 24));
    struct how pa = { O_PATH | O_APPEND, 0, 0 };
    EXPECT_ERR(EINVAL, "O_PATH|O_APPEND", openat2(AT_FDCWD, D "/f", &pa, 24));
    struct how pc = { O_PATH | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY, 0, 0 };
    long fd = openat2(AT_FDCWD, D, &pc, 24);
    check(fd >= 0 && fcntl((int)fd, F_GETFD) == FD_CLOEXEC, "O_PATH|O_CLOEXEC|O_NOFOLLOW|O_DIRECTORY, close-on-exec");
    close((int)fd);
    struct how r = { O_RDONLY, 0, 0x40 };
    EXPECT_ERR(EINVAL, "unknown resolve flag 0x40", openat2(AT_FDCWD, D "/f", &r, 24));
    struct how bi = { O_RDONLY, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT };
    EXPECT_ERR(EINVAL, "RESOLVE_BENEATH|RESOLVE_IN_ROOT", openat2(AT_FDCWD, D "/f", &bi, 24));
    struct how cc = { O_CREAT | O_WRONLY, 0600, RESOLVE_CACHED };
    EXPECT_ERR(EAGAIN, "RESOLVE_CACHED with O_CREAT", openat2(AT_FDCWD, D "/f", &cc, 24));
    struct how ct = { O_WRONLY | O_TRUNC, 0, RESOLVE_CACHED };
    EXPECT_ERR(EAGAIN, "RESOLVE_CACHED with O_TRUNC", openat2(AT_FDCWD, D "/f", &ct, 24));
    struct how cr = { O_CREAT | O_RDWR | O_CLOEXEC, 0640, 0 };
    fd = openat2(AT_FDCWD, D "/created", &cr, 24);
    struct stat st;
    check(fd >= 0 && fstat((int)fd, &st) == 0 && (st.st_mode & 07777) == (0640 & ~022), "O_CREAT with mode 0640");
    check(fcntl((int)fd, F_GETFD) == FD_CLOEXEC, "O_CLOEXEC through openat2");
    close((int)fd);
    EXPECT_ERR(ENOENT, "openat2(empty path)", openat2(AT_FDCWD, "", &h, 24));
}

static void test_resolve(void)
{
    int dfd = open(D "/tree", O_RDONLY | O_DIRECTORY);
    try_open("plain sub/file", dfd, "sub/file", O_RDONLY, 0, "in-sub");
    try_open("BENEATH sub/file", dfd, "sub/file", O_RDONLY, RESOLVE_BENEATH, "in-sub");
    try_open("BENEATH sub/../top", dfd, "sub/../top", O_RDONLY, RESOLVE_BENEATH, "in-tree");
    try_open("BENEATH ../f", dfd, "../f", O_RDONLY, RESOLVE_BENEATH, NULL);
    try_open("BENEATH absolute", dfd, D "/tree/top", O_RDONLY, RESOLVE_BENEATH, NULL);
    try_open("BENEATH absolute symlink", dfd, "abs_link", O_RDONLY, RESOLVE_BENEATH, NULL);
    try_open("BENEATH symlink up", dfd, "up_link", O_RDONLY, RESOLVE_BENEATH, NULL);
    try_open("BENEATH relative symlink inside", dfd, "rel_link", O_RDONLY, RESOLVE_BENEATH, "in-sub");
    try_open("IN_ROOT /top", dfd, "/top", O_RDONLY, RESOLVE_IN_ROOT, "in-tree");
    try_open("IN_ROOT ../../top", dfd, "../../top", O_RDONLY, RESOLVE_IN_ROOT, "in-tree");
    try_open("IN_ROOT absolute symlink", dfd, "root_link", O_RDONLY, RESOLVE_IN_ROOT, "in-tree");
    try_open("plain absolute symlink", dfd, "root_link", O_RDONLY, 0, NULL);
    try_open("NO_SYMLINKS through a symlink", dfd, "dir_link/file", O_RDONLY, RESOLVE_NO_SYMLINKS, NULL);
    try_open("NO_SYMLINKS last symlink", dfd, "rel_link", O_RDONLY, RESOLVE_NO_SYMLINKS, NULL);
    try_open("NO_SYMLINKS O_PATH|O_NOFOLLOW of a symlink", dfd, "rel_link", O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS, NULL);
    try_open("NO_SYMLINKS plain path", dfd, "sub/file", O_RDONLY, RESOLVE_NO_SYMLINKS, "in-sub");
    try_open("plain through a symlink", dfd, "dir_link/file", O_RDONLY, 0, "in-sub");
    /* Magic links. */
    int f = open(D "/tree/top", O_RDONLY);
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", f);
    try_open("NO_MAGICLINKS /proc/self/fd/N", AT_FDCWD, fdpath, O_RDONLY, RESOLVE_NO_MAGICLINKS, NULL);
    try_open("plain /proc/self/fd/N", AT_FDCWD, fdpath, O_RDONLY, 0, "in-tree");
    try_open("NO_SYMLINKS /proc/self/fd/N", AT_FDCWD, fdpath, O_RDONLY, RESOLVE_NO_SYMLINKS, NULL);
    try_open("NO_MAGICLINKS /proc/self/cwd/...", AT_FDCWD, "/proc/self/cwd/top", O_RDONLY, RESOLVE_NO_MAGICLINKS, NULL);
    struct how nm = { O_RDONLY, 0, RESOLVE_NO_MAGICLINKS };
    long s = openat2(AT_FDCWD, "/proc/self/status", &nm, 24);
    check(s >= 0, "NO_MAGICLINKS through /proc/self (a plain symlink)");
    close((int)s);
    close(f);
    /* Mounts. */
    try_open("NO_XDEV inside one mount", dfd, "sub/file", O_RDONLY, RESOLVE_NO_XDEV, "in-sub");
    try_open("NO_XDEV into a mount", dfd, "mnt/inner", O_RDONLY, RESOLVE_NO_XDEV, NULL);
    try_open("plain into a mount", dfd, "mnt/inner", O_RDONLY, 0, "in-mount");
    int mfd = open(D "/tree/mnt", O_RDONLY | O_DIRECTORY);
    try_open("NO_XDEV out of a mount with ..", mfd, "../top", O_RDONLY, RESOLVE_NO_XDEV, NULL);
    try_open("NO_XDEV absolute path to another mount", mfd, D "/tree/top", O_RDONLY, RESOLVE_NO_XDEV, NULL);
    try_open("NO_XDEV staying in the inner mount", mfd, "inner", O_RDONLY, RESOLVE_NO_XDEV, "in-mount");
    try_open("BENEATH ok into a mount", dfd, "mnt/inner", O_RDONLY, RESOLVE_BENEATH, "in-mount");
    close(mfd);
    /* The cache. */
    try_open("CACHED existing file", dfd, "sub/file", O_RDONLY, RESOLVE_CACHED, "in-sub");
    try_open("CACHED missing file", dfd, "sub/missing", O_RDONLY, RESOLVE_CACHED, NULL);
    try_open("CACHED /proc", AT_FDCWD, "/proc/self/status", O_RDONLY, RESOLVE_CACHED, NULL);
    try_open("missing file", dfd, "sub/missing", O_RDONLY, 0, NULL);
    /* O_CREAT walks the same way. */
    try_open("BENEATH O_CREAT ../x", dfd, "../escape", O_CREAT | O_RDWR, RESOLVE_BENEATH, NULL);
    struct how cb = { O_CREAT | O_RDWR, 0600, RESOLVE_BENEATH };
    long c = openat2(dfd, "sub/made", &cb, 24);
    check(c >= 0, "BENEATH O_CREAT sub/made");
    close((int)c);
    EXPECT_ERR(EBADF, "BENEATH with a bad dirfd", openat2(99, "x", &cb, 24));
    close(dfd);
}

struct handle {
    unsigned int handle_bytes;
    int handle_type;
    unsigned char f_handle[128];
};

/* The mount id of the mount at `path`, from /proc/self/mountinfo. */
static int mount_id_of(const char *path)
{
    static char text[65536];
    int fd = open("/proc/self/mountinfo", O_RDONLY);
    long n = 0, r;
    while ((r = read(fd, text + n, sizeof text - 1 - n)) > 0)
        n += r;
    close(fd);
    text[n] = 0;
    int found = -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int id;
        char root[256], mp[256];
        if (sscanf(line, "%d %*d %*s %255s %255s", &id, root, mp) == 3 && strcmp(mp, path) == 0)
            found = id;
    }
    return found;
}

static int unprivileged_open(void *arg)
{
    struct handle *h = arg;
    if (setgid(1000) || setuid(1000))
        return 99;
    int mfd = open(D, O_RDONLY | O_DIRECTORY);
    errno = 0;
    long r = syscall(SYS_open_by_handle_at, mfd, h, O_RDONLY);
    return r == -1 && errno == EPERM ? 0 : 1;
}

static void test_handles(void)
{
    struct handle h;
    int mount_id = -1;
    h.handle_bytes = 128;
    check(syscall(SYS_name_to_handle_at, AT_FDCWD, D "/f", &h, &mount_id, 0) == 0, "name_to_handle_at");
    printf("tmpfs handle: %u bytes, type %d\n", h.handle_bytes, h.handle_type);
    check(mount_id == mount_id_of(D), "the mount id is the one /proc/self/mountinfo gives");
    int inner_id = -1;
    struct handle h2;
    h2.handle_bytes = 128;
    syscall(SYS_name_to_handle_at, AT_FDCWD, D "/tree/mnt/inner", &h2, &inner_id, 0);
    check(inner_id == mount_id_of(D "/tree/mnt") && inner_id != mount_id, "a file of the inner mount gives its id");
    int mfd = open(D, O_RDONLY | O_DIRECTORY);
    long fd = syscall(SYS_open_by_handle_at, mfd, &h, O_RDONLY);
    char buf[32] = { 0 };
    check(fd >= 0 && read((int)fd, buf, sizeof buf) == 4 && memcmp(buf, "data", 4) == 0, "open_by_handle_at reads the file");
    close((int)fd);
    struct handle small;
    small.handle_bytes = 4;
    EXPECT_ERR(EOVERFLOW, "handle buffer of 4 bytes", syscall(SYS_name_to_handle_at, AT_FDCWD, D "/f", &small, &mount_id, 0));
    printf("after EOVERFLOW: handle_bytes %u, type %d\n", small.handle_bytes, small.handle_type);
    struct handle huge;
    huge.handle_bytes = 129;
    EXPECT_ERR(EINVAL, "handle_bytes 129", syscall(SYS_name_to_handle_at, AT_FDCWD, D "/f", &huge, &mount_id, 0));
    EXPECT_ERR(EINVAL, "name_to_handle_at(flags 4)", syscall(SYS_name_to_handle_at, AT_FDCWD, D "/f", &h2, &mount_id, 4));
    EXPECT_ERR(EFAULT, "name_to_handle_at(bad handle)", syscall(SYS_name_to_handle_at, AT_FDCWD, D "/f", (void *)1, &mount_id, 0));
    EXPECT_ERR(ENOENT, "name_to_handle_at(missing)", syscall(SYS_name_to_handle_at, AT_FDCWD, D "/missing", &h2, &mount_id, 0));
    EXPECT_ERR(EOPNOTSUPP, "name_to_handle_at(/proc file)",
               syscall(SYS_name_to_handle_at, AT_FDCWD, "/proc/self/status", &h2, &mount_id, 0));
    /* A symlink's own handle, or its target's with AT_SYMLINK_FOLLOW. */
    struct handle hl, ht;
    hl.handle_bytes = ht.handle_bytes = 128;
    syscall(SYS_name_to_handle_at, AT_FDCWD, D "/tree/rel_link", &hl, &mount_id, 0);
    syscall(SYS_name_to_handle_at, AT_FDCWD, D "/tree/rel_link", &ht, &mount_id, AT_SYMLINK_FOLLOW);
    check(memcmp(hl.f_handle, ht.f_handle, hl.handle_bytes) != 0, "a symlink's handle differs from its target's");
    EXPECT_ERR(ELOOP, "open_by_handle_at(symlink handle)", syscall(SYS_open_by_handle_at, mfd, &hl, O_RDONLY));
    fd = syscall(SYS_open_by_handle_at, mfd, &hl, O_PATH | O_NOFOLLOW);
    check(fd >= 0, "open_by_handle_at(symlink handle, O_PATH)");
    close((int)fd);
    /* AT_EMPTY_PATH gives the descriptor's file. */
    int ffd = open(D "/f", O_RDONLY);
    struct handle he;
    he.handle_bytes = 128;
    check(syscall(SYS_name_to_handle_at, ffd, "", &he, &mount_id, AT_EMPTY_PATH) == 0 &&
              memcmp(he.f_handle, h.f_handle, h.handle_bytes) == 0,
          "AT_EMPTY_PATH gives the same handle");
    close(ffd);
    /* A directory. */
    struct handle hd;
    hd.handle_bytes = 128;
    syscall(SYS_name_to_handle_at, AT_FDCWD, D "/tree/sub", &hd, &mount_id, 0);
    fd = syscall(SYS_open_by_handle_at, mfd, &hd, O_RDONLY | O_DIRECTORY);
    check(fd >= 0 && faccessat((int)fd, "file", F_OK, 0) == 0, "a directory by handle, used as a dirfd");
    close((int)fd);
    /* Alive while open, stale once gone. */
    int keep = open(D "/victim", O_CREAT | O_RDWR, 0644);
    write(keep, "vict", 4);
    struct handle hv;
    hv.handle_bytes = 128;
    syscall(SYS_name_to_handle_at, AT_FDCWD, D "/victim", &hv, &mount_id, 0);
    unlink(D "/victim");
    fd = syscall(SYS_open_by_handle_at, mfd, &hv, O_RDONLY);
    check(fd >= 0 && read((int)fd, buf, 4) == 4 && memcmp(buf, "vict", 4) == 0, "an unlinked file still open, by handle");
    close((int)fd);
    close(keep);
    EXPECT_ERR(ESTALE, "open_by_handle_at once the file is gone", syscall(SYS_open_by_handle_at, mfd, &hv, O_RDONLY));
    struct handle zero;
    zero.handle_bytes = 0;
    EXPECT_ERR(EINVAL, "open_by_handle_at(handle_bytes 0)", syscall(SYS_open_by_handle_at, mfd, &zero, O_RDONLY));
    EXPECT_ERR(EBADF, "open_by_handle_at(bad mount fd)", syscall(SYS_open_by_handle_at, 99, &h, O_RDONLY));
    int inner = open(D "/tree/mnt", O_RDONLY | O_DIRECTORY);
    EXPECT_ERR(ESTALE, "a handle through another file system's fd", syscall(SYS_open_by_handle_at, inner, &h, O_RDONLY));
    close(inner);
    int st = run_child(unprivileged_open, &h);
    check(st == 0, "open_by_handle_at without CAP_DAC_READ_SEARCH is EPERM (%s)", status_str(st));
    close(mfd);
}

int main(void)
{
    t_init("openat2");
    while (umount2(D, MNT_DETACH) == 0)
        ;
    rm_rf(D);
    mkdir(D, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs: %s\n", errname(errno));
        return 1;
    }
    mkfile(D "/f", "data");
    mkdir(D "/tree", 0755);
    mkdir(D "/tree/sub", 0755);
    mkfile(D "/tree/sub/file", "in-sub");
    mkfile(D "/tree/top", "in-tree");
    symlink(D "/tree/top", D "/tree/abs_link");
    symlink("../f", D "/tree/up_link");
    symlink("sub/file", D "/tree/rel_link");
    symlink("/top", D "/tree/root_link");
    symlink("sub", D "/tree/dir_link");
    mkdir(D "/tree/mnt", 0755);
    if (mount("none", D "/tree/mnt", "tmpfs", 0, NULL) != 0)
        printf("FAIL: mount the inner tmpfs: %s\n", errname(errno));
    mkfile(D "/tree/mnt/inner", "in-mount");
    chdir(D "/tree");
    test_how();
    test_resolve();
    test_handles();
    chdir("/");
    umount2(D, MNT_DETACH);
    rmdir(D);
    return t_done();
}
