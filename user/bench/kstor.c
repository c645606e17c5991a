/*
 * kstor: the storage benchmarks of `make bench` (issue 13, part 5), one
 * static musl program that Kiln and Debian's Linux both run, in the same
 * QEMU machine, on the same ext4 image made by the host's mkfs.ext4.
 *
 *   kstor DEV PCT [ROWS]
 *                     mount DEV (ext4) on /mnt and run every row at PCT %
 *                     of its default size (0 or 1: the smoke run's minimum);
 *                     ROWS (comma-separated names) runs only those rows and
 *                     the rows they need first (the read rows need
 *                     seq_write's file, rand_read_warm its cold pass,
 *                     unlink create_4k's files), which report too
 *
 * Before mounting, the modules under /m (sorted by name; the Linux guest
 * needs virtio_blk and what it depends on) are loaded with finit_module;
 * Kiln has its drivers built in and answers ENOSYS, which is ignored.
 *
 * Rows (one line each, `bench NAME NS_PER_OP OPS`, or `bench NAME n/a
 * REASON`), in this order, on one mount of a fresh image:
 *
 *   seq_write       write 256 MiB to a new file in 1 MiB writes + fsync (per MiB)
 *   seq_read        read it back in 1 MiB reads, cold (per MiB)
 *   rand_read_cold  2,000 preads of 4 KiB at random 4 KiB offsets, cold
 *   rand_read_warm  the same 2,000 preads again
 *   fsync_4k        append 4 KiB + fsync, 300 times (per append)
 *   create_4k       create + write 4 KiB + close, 10,000 files in one
 *                   directory (per file; LMbench lat_fs)
 *   unlink          unlink those 10,000 files (per file)
 *   untar_sync      busybox tar x of /tree.tar (5,000 files) + sync (per tree)
 *
 * "Cold" means: sync, umount, write 3 to /proc/sys/vm/drop_caches (Linux;
 * Kiln has no such file and no page cache, which the log says), mount
 * again. So under Linux the file's pages, its inode and the block
 * device's cached metadata are gone; under Kiln the volume is opened
 * anew, with no block of it in memory.
 *
 * Every read checks the page index the writer put at the start of each
 * 4 KiB page, so a kernel that returns the wrong data cannot be fast.
 * Between the timed parts, `sync` (untimed) leaves no dirty data behind
 * for the next row to pay for.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define MIB (1024 * 1024)
#define MNT "/mnt"

static const char *dev;
static long pct = 100;
static char err[200];
static char *buf; /* 1 MiB, page aligned */

static void say(const char *fmt, ...)
{
    char line[300];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 1)
        n = sizeof line - 1;
    if (n > 0 && write(1, line, n) < 0)
        _exit(3);
}

static int fail(const char *what)
{
    snprintf(err, sizeof err, "%s: %s", what, strerror(errno));
    return -1;
}

static int fail_msg(const char *what)
{
    snprintf(err, sizeof err, "%s", what);
    return -1;
}

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* `base` at the chosen size, at least `min`. */
static uint64_t scaled(uint64_t base, uint64_t min)
{
    uint64_t n = base * (uint64_t)pct / 100;
    return n < min ? min : n;
}

static void load_modules(void)
{
    DIR *d = opendir("/m");
    if (!d)
        return;
    char names[16][256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 16)
        if (e->d_name[0] != '.')
            snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; i++) {
        char path[300];
        snprintf(path, sizeof path, "/m/%.250s", names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            say("kstor: open %s: %s\n", path, strerror(errno));
            continue;
        }
        if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST && errno != ENOSYS)
            say("kstor: finit_module %s: %s\n", path, strerror(errno));
        close(fd);
    }
}

/* Waits up to 20 s for the disk's node (devtmpfs fills it in after the
 * driver probed); if /dev has none but sysfs names the device, makes it. */
static int wait_for_disk(void)
{
    for (int i = 0; i < 2000; i++) {
        struct stat st;
        if (stat(dev, &st) == 0)
            return 0;
        char sys[96], num[32] = "";
        snprintf(sys, sizeof sys, "/sys/class/block/%s/dev", strrchr(dev, '/') + 1);
        int fd = open(sys, O_RDONLY);
        if (fd >= 0) {
            ssize_t len = read(fd, num, sizeof num - 1);
            close(fd);
            unsigned maj, min;
            if (len > 0 && sscanf(num, "%u:%u", &maj, &min) == 2 && mknod(dev, S_IFBLK | 0600, makedev(maj, min)) == 0)
                return 0;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return fail_msg("the disk's device node never appeared");
}

static int do_mount(void)
{
    if (mount(dev, MNT, "ext4", MS_NOATIME, NULL) != 0)
        return fail("mount");
    return 0;
}

/* See "cold" above. */
static int cold(void)
{
    sync();
    if (umount(MNT) != 0)
        return fail("umount");
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd >= 0) {
        if (write(fd, "3\n", 2) != 2)
            return fail("drop_caches");
        close(fd);
    }
    return do_mount();
}

static void fill(char *p, size_t len, uint64_t first_page)
{
    for (size_t off = 0; off < len; off += PAGE) {
        uint64_t idx = first_page + off / PAGE;
        memcpy(p + off, &idx, sizeof idx);
    }
}

static int check(const char *p, size_t len, uint64_t first_page)
{
    for (size_t off = 0; off < len; off += PAGE) {
        uint64_t idx;
        memcpy(&idx, p + off, sizeof idx);
        if (idx != first_page + off / PAGE) {
            snprintf(err, sizeof err, "page %llu holds the mark of page %llu",
                     (unsigned long long)(first_page + off / PAGE), (unsigned long long)idx);
            return -1;
        }
    }
    return 0;
}

static uint64_t seq_mib;

static int b_seq_write(uint64_t *ns, uint64_t *ops)
{
    seq_mib = scaled(256, 4);
    int fd = open(MNT "/seq", O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        return fail("open");
    uint64_t t0 = now();
    for (uint64_t m = 0; m < seq_mib; m++) {
        fill(buf, MIB, m * (MIB / PAGE));
        if (write(fd, buf, MIB) != MIB)
            return fail("write");
    }
    if (fsync(fd) != 0)
        return fail("fsync");
    *ns = now() - t0;
    *ops = seq_mib;
    close(fd);
    return cold();
}

static int b_seq_read(uint64_t *ns, uint64_t *ops)
{
    int fd = open(MNT "/seq", O_RDONLY);
    if (fd < 0)
        return fail("open");
    uint64_t t0 = now();
    for (uint64_t m = 0; m < seq_mib; m++) {
        if (read(fd, buf, MIB) != MIB)
            return fail("read");
        if (check(buf, MIB, m * (MIB / PAGE)))
            return -1;
    }
    *ns = now() - t0;
    *ops = seq_mib;
    close(fd);
    return cold();
}

/* The random offsets: the same on both kernels and in both passes. */
static uint64_t rand_n;
static uint64_t *rand_pages;

static int rand_pass(uint64_t *ns, uint64_t *ops)
{
    int fd = open(MNT "/seq", O_RDONLY);
    if (fd < 0)
        return fail("open");
    uint64_t t0 = now();
    for (uint64_t i = 0; i < rand_n; i++) {
        if (pread(fd, buf, PAGE, (off_t)(rand_pages[i] * PAGE)) != PAGE)
            return fail("pread");
        if (check(buf, PAGE, rand_pages[i]))
            return -1;
    }
    *ns = now() - t0;
    *ops = rand_n;
    close(fd);
    return 0;
}

static int b_rand_read_cold(uint64_t *ns, uint64_t *ops)
{
    rand_n = scaled(2000, 20);
    rand_pages = malloc(rand_n * sizeof *rand_pages);
    if (!rand_pages)
        return fail("malloc");
    uint64_t x = 0x9e3779b97f4a7c15u, pages = seq_mib * (MIB / PAGE);
    for (uint64_t i = 0; i < rand_n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        rand_pages[i] = (x >> 24) % pages;
    }
    return rand_pass(ns, ops);
}

static int b_rand_read_warm(uint64_t *ns, uint64_t *ops)
{
    return rand_pass(ns, ops);
}

static int b_fsync_4k(uint64_t *ns, uint64_t *ops)
{
    uint64_t n = scaled(300, 5), first = n / 10 < 1 ? 1 : n / 10;
    int fd = open(MNT "/log", O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        return fail("open");
    uint64_t t0 = 0;
    for (uint64_t i = 0; i < first + n; i++) {
        if (i == first)
            t0 = now();
        fill(buf, PAGE, i);
        if (write(fd, buf, PAGE) != PAGE)
            return fail("write");
        if (fsync(fd) != 0)
            return fail("fsync");
    }
    *ns = now() - t0;
    *ops = n;
    close(fd);
    sync();
    return 0;
}

static uint64_t files_n;

static int b_create_4k(uint64_t *ns, uint64_t *ops)
{
    files_n = scaled(10000, 50);
    if (mkdir(MNT "/lat", 0755) != 0)
        return fail("mkdir");
    memset(buf, 'f', PAGE);
    char name[64];
    uint64_t t0 = now();
    for (uint64_t i = 0; i < files_n; i++) {
        snprintf(name, sizeof name, MNT "/lat/%llu", (unsigned long long)i);
        int fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0)
            return fail("open");
        if (write(fd, buf, PAGE) != PAGE)
            return fail("write");
        close(fd);
    }
    *ns = now() - t0;
    *ops = files_n;
    sync();
    return 0;
}

static int b_unlink(uint64_t *ns, uint64_t *ops)
{
    char name[64];
    uint64_t t0 = now();
    for (uint64_t i = 0; i < files_n; i++) {
        snprintf(name, sizeof name, MNT "/lat/%llu", (unsigned long long)i);
        if (unlink(name) != 0)
            return fail("unlink");
    }
    *ns = now() - t0;
    *ops = files_n;
    sync();
    return 0;
}

/* The tree's file sizes, as xtask/src/bench/storage.rs makes them. */
static long tree_size(int d, int f)
{
    return (long)(((d * 100 + f) * 1237L) % 4096);
}

static int b_untar_sync(uint64_t *ns, uint64_t *ops)
{
    if (mkdir(MNT "/untar", 0755) != 0)
        return fail("mkdir");
    /* The smoke run unpacks one folder of the 50. */
    int dirs = pct >= 100 ? 50 : 1;
    char *argv[] = {"/bin/busybox", "tar", "xf", "/tree.tar", "-C", MNT "/untar", pct >= 100 ? NULL : "t/d00", NULL};
    char *envp[] = {"PATH=/bin", NULL};
    uint64_t t0 = now();
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        execve(argv[0], argv, envp);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return fail("waitpid");
    sync();
    *ns = now() - t0;
    *ops = 1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, sizeof err, "busybox tar exited with status %#x", status);
        return -1;
    }
    for (int d = 0; d < dirs; d++)
        for (int f = 0; f < 100; f += 7) {
            char name[64];
            struct stat st;
            snprintf(name, sizeof name, MNT "/untar/t/d%02d/f%02d", d, f);
            if (stat(name, &st) != 0)
                return fail(name);
            if (st.st_size != tree_size(d, f)) {
                snprintf(err, sizeof err, "%s: %lld bytes, expected %ld", name, (long long)st.st_size, tree_size(d, f));
                return -1;
            }
        }
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(uint64_t *ns, uint64_t *ops);
    /* The row whose files this one uses (run too when this one is). */
    const char *needs;
} rows[] = {
    {"seq_write", b_seq_write, NULL},
    {"seq_read", b_seq_read, "seq_write"},
    {"rand_read_cold", b_rand_read_cold, "seq_write"},
    {"rand_read_warm", b_rand_read_warm, "rand_read_cold"},
    {"fsync_4k", b_fsync_4k, NULL},
    {"create_4k", b_create_4k, NULL},
    {"unlink", b_unlink, "create_4k"},
    {"untar_sync", b_untar_sync, NULL},
};

/* Whether NAME is in the comma-separated LIST. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

/* Row I runs when no list was given, when it is listed, or when a row
 * that runs needs its files. */
static int wanted(const char *list, unsigned i)
{
    if (!list || listed(list, rows[i].name))
        return 1;
    for (unsigned j = i + 1; j < sizeof rows / sizeof rows[0]; j++)
        if (rows[j].needs && strcmp(rows[j].needs, rows[i].name) == 0 && wanted(list, j))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        say("usage: kstor DEV [PCT [ROW,ROW...]]\n");
        return 2;
    }
    dev = argv[1];
    if (argc > 2)
        pct = atol(argv[2]);
    /* Only these rows (and the rows they need): STORAGE_ROWS in xtask. */
    const char *only = argc > 3 ? argv[3] : NULL;
    say("kstor start %s %ld\n", dev, pct);
    buf = aligned_alloc(PAGE, MIB);
    if (!buf)
        return 1;
    load_modules();
    mkdir(MNT, 0755);
    if (access("/proc/sys/vm/drop_caches", W_OK) != 0)
        say("kstor: no /proc/sys/vm/drop_caches (%s): cold = umount + mount\n", strerror(errno));
    /* A row that fails leaves the mount in an unknown state: the rows
     * after it report why they did not run. */
    const char *broken = NULL;
    if (wait_for_disk() != 0 || do_mount() != 0)
        broken = err;
    static char first_err[200];
    for (unsigned i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (!wanted(only, i)) {
            say("bench %s n/a not run: not in STORAGE_ROWS\n", rows[i].name);
            continue;
        }
        if (broken) {
            say("bench %s n/a not run: %s\n", rows[i].name, broken);
            continue;
        }
        uint64_t ns = 0, ops = 0;
        err[0] = 0;
        if (rows[i].fn(&ns, &ops) != 0 || ops == 0) {
            say("bench %s n/a %s\n", rows[i].name, err[0] ? err : "no operations");
            snprintf(first_err, sizeof first_err, "%s failed", rows[i].name);
            broken = first_err;
            continue;
        }
        say("bench %s %.1f %llu\n", rows[i].name, (double)ns / (double)ops, (unsigned long long)ops);
    }
    if (umount(MNT) != 0)
        say("kstor: umount: %s\n", strerror(errno));
    say("kbench done\n");
    return 0;
}
