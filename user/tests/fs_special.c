/*
 * fs_special: special files in /tmp (ext4 on the host and in the storage
 * stage's files part, tmpfs in the plain user run) and on a tmpfs mounted
 * for the test: a FIFO works as a pipe (two processes, O_NONBLOCK rules),
 * a UNIX socket's bound path is a socket file that stays after close,
 * character and block nodes keep their type and device number (small and
 * large numbers), a char node opens its device and an unknown one is
 * ENXIO, and renameat2(RENAME_WHITEOUT) leaves a 0:0 char device with
 * mode 0 (its flag and errno rules included).
 *
 * `fs_special keep DIR` only makes one node of each kind in DIR (for the
 * storage stage's debugfs check of what reached the disk) and exits.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#define DIR_ "/tmp/fs_special"
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#define RENAME_WHITEOUT 4

static long rename2(const char *a, const char *b, unsigned flags)
{
    return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void put(const char *p, const char *s)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        write(fd, s, strlen(s));
        close(fd);
    }
}

static const char *kind(mode_t m)
{
    switch (m & S_IFMT) {
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    case S_IFCHR: return "char";
    case S_IFBLK: return "block";
    case S_IFREG: return "regular";
    case S_IFDIR: return "directory";
    default: return "other";
    }
}

static void show(const char *what, const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0) {
        printf("%s: lstat %s\n", what, errname(errno));
        return;
    }
    printf("%s: %s mode 0%o rdev %u:%u nlink %lu uid %u", what, kind(st.st_mode), st.st_mode & 07777,
           major(st.st_rdev), minor(st.st_rdev), (unsigned long)st.st_nlink, st.st_uid);
    /* A directory's size and a file's blocks differ between ext4 and
     * tmpfs (the plain run compares the host's ext4 /tmp with Kiln's
     * tmpfs); a special file has neither. */
    if (S_ISREG(st.st_mode))
        printf(" size %lld", (long long)st.st_size);
    else if (!S_ISDIR(st.st_mode))
        printf(" size %lld blocks %lld", (long long)st.st_size, (long long)st.st_blocks);
    printf("\n");
}

static void test_fifo(const char *dir)
{
    char f[128];
    snprintf(f, sizeof f, "%s/fifo", dir);
    check(mkfifo(f, 0640) == 0, "mkfifo");
    show("fifo", f);
    EXPECT_ERR(ENXIO, "fifo: O_WRONLY|O_NONBLOCK without a reader", open(f, O_WRONLY | O_NONBLOCK));
    int r = open(f, O_RDONLY | O_NONBLOCK);
    check(r >= 0, "fifo: O_RDONLY|O_NONBLOCK opens alone");
    int w = open(f, O_WRONLY | O_NONBLOCK);
    check(w >= 0, "fifo: O_WRONLY|O_NONBLOCK opens once a reader is there");
    char buf[64] = { 0 };
    EXPECT_ERR(EAGAIN, "fifo: read before any data", read(r, buf, sizeof buf));
    check(write(w, "12345", 5) == 5, "fifo: write 5 bytes");
    struct stat st;
    check(fstat(r, &st) == 0 && st.st_size == 0, "fifo: fstat size stays 0 with data inside");
    check(read(r, buf, sizeof buf) == 5 && memcmp(buf, "12345", 5) == 0, "fifo: the reader gets them");
    EXPECT_ERR(ESPIPE, "fifo: lseek", lseek(w, 0, SEEK_SET));
    close(w);
    check(read(r, buf, sizeof buf) == 0, "fifo: EOF after the last writer closed");
    close(r);

    /* Two processes: each blocking open waits for the other side. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(f, O_WRONLY);
        if (fd < 0)
            _exit(1);
        const char *msg = "through a fifo on this file system";
        ssize_t n = write(fd, msg, strlen(msg));
        close(fd);
        _exit(n == (ssize_t)strlen(msg) ? 0 : 2);
    }
    int fd = open(f, O_RDONLY);
    check(fd >= 0, "fifo: a blocking O_RDONLY open meets the child's writer");
    memset(buf, 0, sizeof buf);
    size_t got = 0;
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    printf("fifo message: %s\n", buf);
    close(fd);
    int status;
    wait_for(pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fifo: the writer exited 0");
    int rw = open(f, O_RDWR);
    check(rw >= 0 && write(rw, "x", 1) == 1 && read(rw, buf, 1) == 1, "fifo: O_RDWR is both ends");
    close(rw);
    show("fifo after use", f);
    check(unlink(f) == 0, "fifo: unlink");
}

static void test_socket(const char *dir)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s/sock", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    check(bind(s, (struct sockaddr *)&a, sizeof a) == 0, "socket: bind to a path");
    show("socket", a.sun_path);
    check(listen(s, 4) == 0, "socket: listen");
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    check(connect(c, (struct sockaddr *)&a, sizeof a) == 0, "socket: connect by the path");
    int acc = accept(s, NULL, NULL);
    char buf[8] = { 0 };
    check(acc >= 0 && write(c, "ping", 4) == 4 && read(acc, buf, sizeof buf) == 4 && memcmp(buf, "ping", 4) == 0,
          "socket: data through the connection");
    int again = socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_ERR(EADDRINUSE, "socket: bind to the same path again", bind(again, (struct sockaddr *)&a, sizeof a));
    close(acc);
    close(c);
    close(s);
    show("socket after close", a.sun_path);
    int late = socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_ERR(ECONNREFUSED, "socket: connect after the listener closed",
               connect(late, (struct sockaddr *)&a, sizeof a));
    close(late);
    EXPECT_ERR(ENXIO, "socket: open(2) of a socket file", open(a.sun_path, O_RDONLY));
    check(unlink(a.sun_path) == 0, "socket: unlink");
    check(bind(again, (struct sockaddr *)&a, sizeof a) == 0, "socket: bind once the file is gone");
    close(again);
    unlink(a.sun_path);
}

static void test_devices(const char *dir)
{
    char p[128];
    snprintf(p, sizeof p, "%s/null", dir);
    check(mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0, "mknod char 1:3");
    show("char 1:3", p);
    int fd = open(p, O_RDWR);
    char buf[16];
    check(fd >= 0 && write(fd, "gone", 4) == 4 && read(fd, buf, sizeof buf) == 0, "char 1:3 opens /dev/null");
    close(fd);
    unlink(p);

    snprintf(p, sizeof p, "%s/zero", dir);
    check(mknod(p, S_IFCHR | 0600, makedev(1, 5)) == 0, "mknod char 1:5");
    fd = open(p, O_RDONLY);
    memset(buf, 7, sizeof buf);
    check(fd >= 0 && read(fd, buf, sizeof buf) == (ssize_t)sizeof buf && buf[0] == 0 && buf[15] == 0,
          "char 1:5 reads zeros");
    close(fd);
    unlink(p);

    /* 240-254 are for local use: no driver on the host or in Kiln. */
    snprintf(p, sizeof p, "%s/nodrv", dir);
    check(mknod(p, S_IFCHR | 0600, makedev(240, 7)) == 0, "mknod char 240:7");
    EXPECT_ERR(ENXIO, "open of a char node without a driver", open(p, O_RDONLY));
    unlink(p);
    snprintf(p, sizeof p, "%s/blk", dir);
    check(mknod(p, S_IFBLK | 0600, makedev(240, 1)) == 0, "mknod block 240:1");
    show("block 240:1", p);
    EXPECT_ERR(ENXIO, "open of a block node without a driver", open(p, O_RDONLY));
    unlink(p);
    snprintf(p, sizeof p, "%s/big", dir);
    check(mknod(p, S_IFCHR | 0600, makedev(300, 70000)) == 0, "mknod char 300:70000 (the large encoding)");
    show("char 300:70000", p);
    unlink(p);
    EXPECT_ERR(EPERM, "mknod of a directory type", mknod(p, S_IFDIR | 0700, 0));
}

static void test_whiteout(const char *dir)
{
    char a[128], b[128], d[128];
    snprintf(a, sizeof a, "%s/wa", dir);
    snprintf(b, sizeof b, "%s/wb", dir);
    snprintf(d, sizeof d, "%s/wd", dir);
    put(a, "moved");
    EXPECT_ERR(EINVAL, "RENAME_WHITEOUT|RENAME_EXCHANGE", rename2(a, b, RENAME_WHITEOUT | RENAME_EXCHANGE));
    EXPECT_ERR(EINVAL, "RENAME_NOREPLACE|RENAME_EXCHANGE", rename2(a, b, RENAME_NOREPLACE | RENAME_EXCHANGE));
    EXPECT_ERR(EINVAL, "renameat2 flag 8", rename2(a, b, 8));
    EXPECT_ERR(ENOENT, "RENAME_WHITEOUT of a missing name", rename2(b, a, RENAME_WHITEOUT));
    check(rename2(a, b, RENAME_WHITEOUT) == 0, "RENAME_WHITEOUT of a file");
    show("whiteout", a);
    show("moved file", b);
    char buf[16] = { 0 };
    int fd = open(b, O_RDONLY);
    check(fd >= 0 && read(fd, buf, sizeof buf) == 5 && memcmp(buf, "moved", 5) == 0, "the moved file keeps its data");
    close(fd);
    EXPECT_ERR(ENXIO, "open of a whiteout", open(a, O_RDONLY));
    EXPECT_ERR(ENXIO, "O_CREAT open of a whiteout", open(a, O_WRONLY | O_CREAT, 0644));

    put(d, "target");
    EXPECT_ERR(EEXIST, "RENAME_WHITEOUT|RENAME_NOREPLACE onto a name", rename2(b, d, RENAME_WHITEOUT | RENAME_NOREPLACE));
    check(rename2(b, d, RENAME_WHITEOUT) == 0, "RENAME_WHITEOUT over an existing file");
    show("second whiteout", b);
    show("replaced target", d);
    check(link(d, b) == -1 && errno == EEXIST, "the whiteout holds its name (link EEXIST)");
    char e[128];
    snprintf(e, sizeof e, "%s/wlink", dir);
    check(link(d, e) == 0, "a second name of the file");
    check(rename2(d, e, RENAME_WHITEOUT) == 0, "RENAME_WHITEOUT between two names of one file");
    show("first name after the no-op", d);

    char sub[128], sub2[128];
    snprintf(sub, sizeof sub, "%s/wdir", dir);
    snprintf(sub2, sizeof sub2, "%s/wdir2", dir);
    mkdir(sub, 0755);
    check(rename2(sub, sub2, RENAME_WHITEOUT) == 0, "RENAME_WHITEOUT of a directory");
    show("directory whiteout", sub);
    show("moved directory", sub2);
    struct stat st;
    check(stat(dir, &st) == 0, "stat the parent");
    printf("parent nlink after the directory whiteout: %lu\n", (unsigned long)st.st_nlink);

    check(unlink(a) == 0 && unlink(b) == 0 && unlink(sub) == 0, "whiteouts unlink as files");
    unlink(d);
    unlink(e);
    rmdir(sub2);
}

static void keep(const char *dir)
{
    char p[160];
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/fifo", dir);
    mkfifo(p, 0640);
    snprintf(p, sizeof p, "%s/null", dir);
    mknod(p, S_IFCHR | 0666, makedev(1, 3));
    snprintf(p, sizeof p, "%s/big", dir);
    mknod(p, S_IFCHR | 0600, makedev(300, 70000));
    snprintf(p, sizeof p, "%s/blk", dir);
    mknod(p, S_IFBLK | 0600, makedev(240, 1));
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s/sock", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    close(s);
    char w[160];
    snprintf(p, sizeof p, "%s/whiteout", dir);
    snprintf(w, sizeof w, "%s/moved", dir);
    put(p, "moved");
    rename2(p, w, RENAME_WHITEOUT);
    sync();
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "keep") == 0) {
        keep(argv[2]);
        return 0;
    }
    t_init("fs_special");
    umask(022);
    mkdir(DIR_, 0755);
    test_fifo(DIR_);
    test_socket(DIR_);
    test_devices(DIR_);
    test_whiteout(DIR_);

    char t[128];
    snprintf(t, sizeof t, "%s/tmpfs", DIR_);
    mkdir(t, 0755);
    if (check(mount("tmpfs", t, "tmpfs", 0, "size=1m") == 0, "mount a tmpfs")) {
        printf("-- on tmpfs\n");
        test_fifo(t);
        test_whiteout(t);
        check(umount(t) == 0, "umount the tmpfs");
    }
    rmdir(t);
    check(rmdir(DIR_) == 0, "everything made was removed");
    return t_done();
}
