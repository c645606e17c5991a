/*
 * fs_meta: file metadata: stat/fstat/lstat/fstatat/statx, access/faccessat,
 * utimensat (explicit times, UTIME_NOW, UTIME_OMIT), statfs/fstatfs,
 * chmod/fchmod/fchmodat, chown/fchown/lchown/fchownat, umask and its effect
 * on new files, mount/umount2 of a tmpfs.  Works under /tmp/fs_meta.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#define DIR_ "/tmp/fs_meta"
#define TMPFS_MAGIC 0x01021994
#define PROC_SUPER_MAGIC 0x9fa0

struct kstatx_ts {
    int64_t tv_sec;
    uint32_t tv_nsec;
    int32_t reserved;
};
struct kstatx {
    uint32_t stx_mask, stx_blksize;
    uint64_t stx_attributes;
    uint32_t stx_nlink, stx_uid, stx_gid;
    uint16_t stx_mode, spare0;
    uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
    struct kstatx_ts stx_atime, stx_btime, stx_ctime, stx_mtime;
    uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
    uint64_t spare2[14];
};
#define STATX_BASIC_STATS 0x7ffU
#define AT_STATX_FORCE_SYNC 0x2000
#define AT_STATX_DONT_SYNC 0x4000



static unsigned mode_of(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return 0xffffffff;
    return st.st_mode;
}

static void test_stat(void)
{
    const char *f = DIR_ "/file";
    mkfile(f, "0123456789");
    struct stat st, st2, st3;
    check(stat(f, &st) == 0, "stat(file)");
    printf("file: mode 0%o size %ld nlink %ld uid %d gid %d\n", st.st_mode, (long)st.st_size,
           (long)st.st_nlink, st.st_uid, st.st_gid);
    check(st.st_blksize > 0, "st_blksize > 0");
    check(st.st_ino != 0, "st_ino != 0");
    int fd = open(f, O_RDONLY);
    check(fstat(fd, &st2) == 0 && st2.st_ino == st.st_ino && st2.st_dev == st.st_dev && st2.st_size == 10,
          "fstat agrees with stat");
    check(st.st_mtim.tv_sec == st.st_ctim.tv_sec || st.st_ctim.tv_sec >= st.st_mtim.tv_sec, "ctime >= mtime");

    check(symlink("file", DIR_ "/lnk") == 0, "symlink lnk -> file");
    check(lstat(DIR_ "/lnk", &st3) == 0 && S_ISLNK(st3.st_mode) && st3.st_size == 4,
          "lstat(symlink): S_IFLNK, size == strlen(target)");
    printf("symlink mode 0%o\n", st3.st_mode);
    check(stat(DIR_ "/lnk", &st3) == 0 && st3.st_ino == st.st_ino, "stat(symlink) follows");

    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(fstatat(dfd, "file", &st3, 0) == 0 && st3.st_ino == st.st_ino, "fstatat(dirfd, \"file\")");
    check(fstatat(dfd, "lnk", &st3, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st3.st_mode), "fstatat(AT_SYMLINK_NOFOLLOW)");
    check(fstatat(fd, "", &st3, AT_EMPTY_PATH) == 0 && st3.st_ino == st.st_ino, "fstatat(fd, \"\", AT_EMPTY_PATH)");
    check(fstatat(AT_FDCWD, f, &st3, 0) == 0 && st3.st_ino == st.st_ino, "fstatat(AT_FDCWD, abs)");
    EXPECT_ERR(ENOENT, "fstatat(fd, \"\", 0)", fstatat(fd, "", &st3, 0));
    EXPECT_ERR(EINVAL, "fstatat(bad flags)", fstatat(dfd, "file", &st3, 0x1));
    EXPECT_ERR(ENOTDIR, "fstatat(file fd, \"x\")", fstatat(fd, "x", &st3, 0));
    EXPECT_ERR(EBADF, "fstatat(bad dirfd, \"x\")", fstatat(999, "x", &st3, 0));
    EXPECT_ERR(ENOENT, "stat(missing)", stat(DIR_ "/missing", &st3));
    EXPECT_ERR(ENOTDIR, "stat(file/x)", stat(DIR_ "/file/x", &st3));
    EXPECT_ERR(EFAULT, "stat(bad buf)", syscall(SYS_stat, f, BAD_PTR));
    EXPECT_ERR(EFAULT, "stat(bad path)", syscall(SYS_stat, BAD_PTR, &st3));
    EXPECT_ERR(EBADF, "fstat(bad fd)", fstat(999, &st3));
    check(symlink("missing", DIR_ "/dangling") == 0, "dangling symlink");
    EXPECT_ERR(ENOENT, "stat(dangling symlink)", stat(DIR_ "/dangling", &st3));
    check(lstat(DIR_ "/dangling", &st3) == 0 && S_ISLNK(st3.st_mode), "lstat(dangling symlink)");
    check(lstat(DIR_ "/file/", &st3) == -1 && errno == ENOTDIR, "lstat(\"file/\") = ENOTDIR");

    struct stat ds;
    mkdir(DIR_ "/sub", 0755);
    check(stat(DIR_, &ds) == 0 && S_ISDIR(ds.st_mode), "stat(dir) S_ISDIR");
    printf("dir nlink with one subdir: %ld\n", (long)ds.st_nlink);

    /* statx */
    struct kstatx sx;
    memset(&sx, 0, sizeof sx);
    check(syscall(SYS_statx, AT_FDCWD, f, 0, STATX_BASIC_STATS, &sx) == 0, "statx(file)");
    check((sx.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS, "statx mask has basic stats");
    check(sx.stx_size == 10 && sx.stx_mode == st.st_mode && sx.stx_ino == st.st_ino && sx.stx_nlink == 1,
          "statx size/mode/ino/nlink agree with stat");
    check(sx.stx_mtime.tv_sec == st.st_mtim.tv_sec && sx.stx_mtime.tv_nsec == (uint32_t)st.st_mtim.tv_nsec,
          "statx mtime agrees with stat");
    check(makedev(sx.stx_dev_major, sx.stx_dev_minor) == st.st_dev, "statx dev agrees with stat");
    memset(&sx, 0, sizeof sx);
    check(syscall(SYS_statx, AT_FDCWD, DIR_ "/lnk", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
              (sx.stx_mode & S_IFMT) == S_IFLNK,
          "statx(AT_SYMLINK_NOFOLLOW) on symlink");
    check(syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) == 0 && sx.stx_ino == st.st_ino,
          "statx(fd, \"\", AT_EMPTY_PATH)");
    check(syscall(SYS_statx, AT_FDCWD, f, 0, 0, &sx) == 0, "statx(mask 0) succeeds");
    EXPECT_ERR(EINVAL, "statx(FORCE_SYNC|DONT_SYNC)",
               syscall(SYS_statx, AT_FDCWD, f, AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &sx));
    EXPECT_ERR(EINVAL, "statx(reserved mask bit)", syscall(SYS_statx, AT_FDCWD, f, 0, 0x80000000U, &sx));
    EXPECT_ERR(ENOENT, "statx(missing)", syscall(SYS_statx, AT_FDCWD, DIR_ "/missing", 0, STATX_BASIC_STATS, &sx));
    EXPECT_ERR(EFAULT, "statx(bad buf)", syscall(SYS_statx, AT_FDCWD, f, 0, STATX_BASIC_STATS, BAD_PTR));
    close(fd);
    close(dfd);
}

static void test_access(void)
{
    const char *f = DIR_ "/acc";
    mkfile(f, "x");
    chmod(f, 0644);
    check(access(f, F_OK) == 0, "access(F_OK)");
    check(access(f, R_OK | W_OK) == 0, "access(R_OK|W_OK) as root");
    EXPECT_ERR(EACCES, "access(X_OK) on 0644 file as root", access(f, X_OK));
    chmod(f, 0001);
    check(access(f, X_OK) == 0, "access(X_OK) on 0001 file as root");
    check(access(f, R_OK | W_OK) == 0, "root reads/writes a 0001 file");
    chmod(f, 0000);
    check(access(f, R_OK | W_OK) == 0, "root reads/writes a 0000 file");
    check(access(DIR_, X_OK) == 0, "access(dir, X_OK)");
    EXPECT_ERR(ENOENT, "access(missing)", access(DIR_ "/missing", F_OK));
    EXPECT_ERR(EINVAL, "access(mode 8)", access(f, 8));
    EXPECT_ERR(ENOTDIR, "access(file/x)", access(DIR_ "/acc/x", F_OK));
    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(faccessat(dfd, "acc", F_OK, 0) == 0, "faccessat(dirfd, \"acc\")");
    check(faccessat(dfd, "acc", R_OK, AT_EACCESS) == 0, "faccessat(AT_EACCESS)");
    EXPECT_ERR(EACCES, "faccessat(X_OK) on 0000 file", faccessat(dfd, "acc", X_OK, 0));
    EXPECT_ERR(EINVAL, "faccessat2(bad flags)", syscall(SYS_faccessat2, dfd, "acc", F_OK, 0x1));
    check(syscall(SYS_faccessat2, dfd, "acc", F_OK, AT_EACCESS) == 0, "faccessat2(AT_EACCESS)");
    symlink("missing", DIR_ "/acc_dangle");
    EXPECT_ERR(ENOENT, "faccessat(dangling symlink)", faccessat(dfd, "acc_dangle", F_OK, 0));
    check(syscall(SYS_faccessat2, dfd, "acc_dangle", F_OK, AT_SYMLINK_NOFOLLOW) == 0,
          "faccessat2(dangling, AT_SYMLINK_NOFOLLOW)");
    close(dfd);
}

static void test_utimensat(void)
{
    const char *f = DIR_ "/times";
    mkfile(f, "t");
    struct timespec ts[2] = { { 1000000000, 123456789 }, { 1200000000, 5 } };
    check(utimensat(AT_FDCWD, f, ts, 0) == 0, "utimensat(explicit times)");
    struct stat st;
    stat(f, &st);
    printf("atime %ld.%09ld mtime %ld.%09ld\n", (long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
           (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    time_t before = time(NULL);
    check(st.st_ctim.tv_sec >= before - 5, "ctime is now, not the set time");

    struct timespec om[2] = { { 0, UTIME_OMIT }, { 1300000000, 0 } };
    check(utimensat(AT_FDCWD, f, om, 0) == 0, "utimensat(UTIME_OMIT atime)");
    stat(f, &st);
    printf("after OMIT: atime %ld.%09ld mtime %ld.%09ld\n", (long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
           (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);

    struct timespec nw[2] = { { 1, 0 }, { 0, UTIME_NOW } };
    check(utimensat(AT_FDCWD, f, nw, 0) == 0, "utimensat(UTIME_NOW mtime)");
    stat(f, &st);
    time_t after = time(NULL);
    check(st.st_atim.tv_sec == 1 && st.st_mtim.tv_sec >= before - 1 && st.st_mtim.tv_sec <= after + 1,
          "UTIME_NOW sets mtime to now, atime to 1");

    check(utimensat(AT_FDCWD, f, NULL, 0) == 0, "utimensat(NULL) = now");
    stat(f, &st);
    check(st.st_atim.tv_sec >= before - 1 && st.st_mtim.tv_sec >= before - 1, "both times now");

    int fd = open(f, O_RDONLY);
    check(futimens(fd, ts) == 0, "futimens(fd)");
    fstat(fd, &st);
    check(st.st_mtim.tv_sec == 1200000000 && st.st_mtim.tv_nsec == 5, "futimens times read back");
    close(fd);

    symlink("times", DIR_ "/times_lnk");
    struct timespec lt[2] = { { 500000000, 0 }, { 600000000, 0 } };
    check(utimensat(AT_FDCWD, DIR_ "/times_lnk", lt, AT_SYMLINK_NOFOLLOW) == 0, "utimensat(AT_SYMLINK_NOFOLLOW)");
    lstat(DIR_ "/times_lnk", &st);
    check(st.st_mtim.tv_sec == 600000000, "symlink's own mtime set");
    stat(f, &st);
    check(st.st_mtim.tv_sec == 1200000000, "target untouched");

    struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };
    EXPECT_ERR(EINVAL, "utimensat(tv_nsec 1e9)", utimensat(AT_FDCWD, f, bad, 0));
    struct timespec neg[2] = { { 0, -1 }, { 0, 0 } };
    EXPECT_ERR(EINVAL, "utimensat(tv_nsec -1)", utimensat(AT_FDCWD, f, neg, 0));
    EXPECT_ERR(ENOENT, "utimensat(missing)", utimensat(AT_FDCWD, DIR_ "/missing", ts, 0));
    EXPECT_ERR(EINVAL, "utimensat(bad flags)", utimensat(AT_FDCWD, f, ts, 0x4));
    EXPECT_ERR(EBADF, "futimens(bad fd)", futimens(999, ts));

    /* writing updates mtime */
    utimensat(AT_FDCWD, f, ts, 0);
    fd = open(f, O_WRONLY);
    write(fd, "x", 1);
    fstat(fd, &st);
    check(st.st_mtim.tv_sec >= before - 1, "write updates mtime");
    close(fd);
}

static void test_chmod_chown(void)
{
    const char *f = DIR_ "/perm";
    mkfile(f, "p");
    check(chmod(f, 0640) == 0 && (mode_of(f) & 07777) == 0640, "chmod 0640");
    check(chmod(f, 04755) == 0 && (mode_of(f) & 07777) == 04755, "chmod 04755 (setuid)");
    check(chmod(f, 0107777) == 0, "chmod with file-type bits in mode");
    printf("mode after chmod(0107777): 0%o\n", mode_of(f));
    int fd = open(f, O_RDONLY);
    check(fchmod(fd, 0600) == 0 && (mode_of(f) & 07777) == 0600, "fchmod 0600 (on O_RDONLY fd)");
    check(syscall(SYS_fchmodat, AT_FDCWD, f, 0444) == 0 && (mode_of(f) & 07777) == 0444, "fchmodat 0444");
    int dfd = open(DIR_, O_RDONLY | O_DIRECTORY);
    check(fchmodat(dfd, "perm", 0644, 0) == 0 && (mode_of(f) & 07777) == 0644, "fchmodat(dirfd, \"perm\")");
    EXPECT_ERR(ENOENT, "chmod(missing)", chmod(DIR_ "/missing", 0644));
    EXPECT_ERR(EBADF, "fchmod(bad fd)", fchmod(999, 0644));
    int opath = open(f, O_PATH);
    EXPECT_ERR(EBADF, "raw fchmod(O_PATH fd)", syscall(SYS_fchmod, opath, 0644));
    close(opath);

    struct stat st;
    check(chown(f, 1000, 1000) == 0, "chown 1000:1000");
    stat(f, &st);
    printf("after chown: uid %d gid %d\n", st.st_uid, st.st_gid);
    check(fchown(fd, 0, -1) == 0, "fchown uid 0, gid unchanged");
    stat(f, &st);
    printf("after fchown(0,-1): uid %d gid %d\n", st.st_uid, st.st_gid);
    check(fchownat(dfd, "perm", -1, 0, 0) == 0, "fchownat gid 0");
    stat(f, &st);
    printf("after fchownat(-1,0): uid %d gid %d\n", st.st_uid, st.st_gid);

    /* chown clears setuid/setgid, even for root */
    chmod(f, 06755);
    chown(f, 1000, 1000);
    printf("mode after chmod 06755 + chown: 0%o\n", mode_of(f) & 07777);
    chmod(f, 06755);
    chown(f, -1, -1);
    printf("mode after chmod 06755 + chown(-1,-1): 0%o\n", mode_of(f) & 07777);
    chmod(f, 02745);
    chown(f, 0, 0);
    printf("mode after chmod 02745 (no group x) + chown: 0%o\n", mode_of(f) & 07777);

    symlink("perm", DIR_ "/perm_lnk");
    check(lchown(DIR_ "/perm_lnk", 1000, 1000) == 0, "lchown symlink");
    lstat(DIR_ "/perm_lnk", &st);
    struct stat tst;
    stat(f, &tst);
    printf("link uid %d, target uid %d\n", st.st_uid, tst.st_uid);
    check(fchownat(dfd, "perm_lnk", 0, 0, AT_SYMLINK_NOFOLLOW) == 0, "fchownat(AT_SYMLINK_NOFOLLOW)");
    lstat(DIR_ "/perm_lnk", &st);
    check(st.st_uid == 0, "symlink uid back to 0");
    check(chown(DIR_ "/perm_lnk", 1000, 1000) == 0, "chown via symlink");
    stat(f, &tst);
    lstat(DIR_ "/perm_lnk", &st);
    printf("after chown via link: link uid %d, target uid %d\n", st.st_uid, tst.st_uid);
    chown(f, 0, 0);
    EXPECT_ERR(EBADF, "fchown(bad fd)", fchown(999, 0, 0));
    EXPECT_ERR(ENOENT, "chown(missing)", chown(DIR_ "/missing", 0, 0));
    EXPECT_ERR(EINVAL, "fchownat(bad flags)", fchownat(dfd, "perm", 0, 0, 0x1));
    close(fd);
    close(dfd);

    /* root may still open a 0000 file */
    chmod(f, 0);
    fd = open(f, O_RDWR);
    check(fd >= 0, "root opens a mode-0000 file O_RDWR");
    close(fd);
}

static void test_umask(void)
{
    mode_t old = umask(027);
    check(old == 022, "umask was 022");
    int fd = open(DIR_ "/um_file", O_WRONLY | O_CREAT, 0666);
    close(fd);
    mkdir(DIR_ "/um_dir", 0777);
    printf("umask 027: file 0%o dir 0%o\n", mode_of(DIR_ "/um_file") & 07777, mode_of(DIR_ "/um_dir") & 07777);
    umask(0);
    fd = open(DIR_ "/um_file0", O_WRONLY | O_CREAT, 0666);
    close(fd);
    mkdir(DIR_ "/um_dir0", 01777);
    printf("umask 0: file 0%o dir 0%o\n", mode_of(DIR_ "/um_file0") & 07777, mode_of(DIR_ "/um_dir0") & 07777);
    umask(0777);
    fd = open(DIR_ "/um_file7", O_RDWR | O_CREAT, 0666);
    check(fd >= 0, "umask 0777: creating with O_RDWR still gives a usable fd");
    check(write(fd, "x", 1) == 1, "write through it");
    close(fd);
    printf("umask 0777: file 0%o\n", mode_of(DIR_ "/um_file7") & 07777);
    check(umask(022) == 0777, "umask returns 0777");
    check(mknod(DIR_ "/um_fifo", S_IFIFO | 0666, 0) == 0, "mknod fifo");
    printf("umask 022 fifo 0%o\n", mode_of(DIR_ "/um_fifo"));
    check(symlink("x", DIR_ "/um_lnk") == 0, "symlink");
    printf("symlink mode ignores umask: 0%o\n", mode_of(DIR_ "/um_lnk") & 07777);
}

static void test_statfs_mount(void)
{
    struct statfs sf;
    check(statfs(DIR_, &sf) == 0 && sf.f_bsize > 0, "statfs(scratch dir): f_bsize > 0");
    check(sf.f_namelen == 255, "f_namelen == 255");
    int fd = open(DIR_, O_RDONLY);
    struct statfs sf2;
    check(fstatfs(fd, &sf2) == 0 && sf2.f_type == sf.f_type, "fstatfs agrees with statfs");
    close(fd);
    check(statfs("/proc", &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC, "statfs(/proc) magic 0x9fa0");
    EXPECT_ERR(ENOENT, "statfs(missing)", statfs(DIR_ "/missing", &sf));
    EXPECT_ERR(EBADF, "fstatfs(bad fd)", fstatfs(999, &sf));
    EXPECT_ERR(EFAULT, "statfs(bad buf)", syscall(SYS_statfs, DIR_, BAD_PTR));

    const char *mnt = DIR_ "/mnt";
    mkdir(mnt, 0755);
    mkfile(DIR_ "/mnt/under", "hidden");
    check(mount("tmpfs", mnt, "tmpfs", 0, NULL) == 0, "mount tmpfs");
    check(statfs(mnt, &sf) == 0 && sf.f_type == TMPFS_MAGIC, "statfs(mount) magic 0x01021994");
    check(sf.f_bsize > 0 && sf.f_blocks > 0, "tmpfs f_bsize, f_blocks > 0");
    printf("tmpfs root mode 0%o\n", mode_of(mnt));
    EXPECT_ERR(ENOENT, "file under the mount point is hidden", access(DIR_ "/mnt/under", F_OK));
    mkfile(DIR_ "/mnt/f", "on tmpfs");
    check(access(DIR_ "/mnt/f", F_OK) == 0, "file created on tmpfs");
    struct stat a, b;
    stat(mnt, &a);
    stat(DIR_, &b);
    check(a.st_dev != b.st_dev, "mount has its own st_dev");
    EXPECT_ERR(EXDEV, "rename across mounts", rename(DIR_ "/mnt/f", DIR_ "/f_moved"));
    EXPECT_ERR(EXDEV, "link across mounts", link(DIR_ "/mnt/f", DIR_ "/f_linked"));
    EXPECT_ERR(EBUSY, "rmdir(mount point)", rmdir(mnt));
    fd = open(DIR_ "/mnt/f", O_RDONLY);
    EXPECT_ERR(EBUSY, "umount2 with an open file", umount2(mnt, 0));
    close(fd);
    check(umount2(mnt, 0) == 0, "umount2");
    EXPECT_ERR(ENOENT, "file gone after umount", access(DIR_ "/mnt/f", F_OK));
    check(access(DIR_ "/mnt/under", F_OK) == 0, "underlying file visible again");
    EXPECT_ERR(EINVAL, "umount2(not a mount point)", umount2(mnt, 0));
    EXPECT_ERR(ENOENT, "umount2(missing)", umount2(DIR_ "/missing", 0));
    EXPECT_ERR(EINVAL, "umount2(bad flags)", umount2(mnt, 0x80000000));
    EXPECT_ERR(ENODEV, "mount(unknown fs type)", mount("none", mnt, "kilnfs-nope", 0, NULL));
    EXPECT_ERR(ENOENT, "mount(missing target)", mount("tmpfs", DIR_ "/missing", "tmpfs", 0, NULL));

    check(mount("tmpfs", mnt, "tmpfs", MS_RDONLY, NULL) == 0, "mount tmpfs read-only");
    EXPECT_ERR(EROFS, "create on read-only tmpfs", open(DIR_ "/mnt/x", O_WRONLY | O_CREAT, 0644));
    EXPECT_ERR(EROFS, "mkdir on read-only tmpfs", mkdir(DIR_ "/mnt/d", 0755));
    check(statfs(mnt, &sf) == 0 && (sf.f_flags & ST_RDONLY), "statfs f_flags has ST_RDONLY");
    check(umount2(mnt, 0) == 0, "umount2 read-only tmpfs");

    /* two stacked mounts: the top one is removed first */
    mount("tmpfs", mnt, "tmpfs", 0, NULL);
    mkfile(DIR_ "/mnt/one", "1");
    mount("tmpfs", mnt, "tmpfs", 0, NULL);
    check(access(DIR_ "/mnt/one", F_OK) != 0, "second mount hides the first");
    umount2(mnt, 0);
    check(access(DIR_ "/mnt/one", F_OK) == 0, "first mount visible after umount of second");
    check(umount2(mnt, MNT_DETACH) == 0, "umount2(MNT_DETACH)");
    check(access(DIR_ "/mnt/one", F_OK) != 0, "both gone");
}

int main(void)
{
    t_init("fs_meta");
    umask(022);
    umount2(DIR_ "/mnt", MNT_DETACH);
    rm_rf(DIR_);
    check(mkdir(DIR_, 0755) == 0, "mkdir " DIR_);
    test_stat();
    test_access();
    test_utimensat();
    test_chmod_chown();
    test_umask();
    test_statfs_mount();
    rm_rf(DIR_);
    check(access(DIR_, F_OK) != 0, "scratch directory removed");
    return t_done();
}
