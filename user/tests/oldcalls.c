/*
 * Older and smaller system calls real programs still make: utime, utimes
 * and futimesat (whole seconds, microseconds, NULL for now, NULL paths,
 * EINVAL for bad microseconds, permissions as user 1000), the old
 * getdents (78) record format with d_type in the last byte,
 * ioprio_get/ioprio_set (validation, the nice-derived effective value
 * for groups, inheritance over fork, permissions), restart_syscall with
 * nothing to restart, process_madvise (its checks, and advice
 * through the caller's own pidfd), and
 * the NUMA policy calls as a machine with one node answers them, and
 * syslog's actions, checks and permissions (dmesg_restrict both ways).
 */
#include "common.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <utime.h>

#ifndef SYS_set_mempolicy_home_node
#define SYS_set_mempolicy_home_node 450
#endif

#define DIR_PATH "/tmp/oldcalls.d"
#define FILE_PATH DIR_PATH "/file"

/* A child's status; one whose own checks failed exits 99. */
static void report_child(const char *what, int st)
{
    printf("%s: %s\n", what, status_str(st));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 99)
        check(0, "%s: the child's checks passed", what);
}

static void show_times(const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        printf("FAIL: stat %s: %s\n", path, errname(errno));
        t_failed++;
        return;
    }
    printf("%s: atime %ld.%09ld mtime %ld.%09ld\n", what, (long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
           (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static int recent(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_mtim.tv_sec > time(NULL) - 600 && st.st_atim.tv_sec > time(NULL) - 600;
}

static int as_user(void *arg)
{
    (void)arg;
    if (setuid(1000) != 0)
        return 10;
    struct utimbuf ub = { 1, 2 };
    EXPECT_ERR(EPERM, "utime(root's file, times) as user 1000", syscall(SYS_utime, FILE_PATH, &ub));
    EXPECT_ERR(EACCES, "utime(root's 0644 file, NULL) as user 1000", syscall(SYS_utime, FILE_PATH, NULL));
    struct timeval tv[2] = { { 1, 0 }, { 2, 0 } };
    EXPECT_ERR(EPERM, "utimes(root's file, times) as user 1000", syscall(SYS_utimes, FILE_PATH, tv));
    /* I/O priorities: the real-time class needs a capability, other
     * users' threads need CAP_SYS_NICE. */
    EXPECT_ERR(EPERM, "ioprio_set(RT) as user 1000", syscall(SYS_ioprio_set, 1, 0, (1 << 13) | 4));
    EXPECT_ERR(EPERM, "ioprio_set(root's process) as user 1000",
               syscall(SYS_ioprio_set, 1, getppid(), (2 << 13) | 4));
    EXPECT_OK("ioprio_set(own, BE 5) as user 1000", syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 5));
    check(syscall(SYS_ioprio_get, 1, 0) == ((2 << 13) | 5), "ioprio_get = BE 5");
    EXPECT_OK("ioprio_set(own, IDLE) as user 1000", syscall(SYS_ioprio_set, 1, 0, 3 << 13));
    return t_failed ? 99 : 0;
}

static void utime_family(void)
{
    mkdir(DIR_PATH, 0755);
    int fd = open(FILE_PATH, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    check(fd >= 0, "create %s", FILE_PATH);
    close(fd);

    struct utimbuf ub = { 1000, 2000 };
    EXPECT_OK("utime(file, {1000, 2000})", syscall(SYS_utime, FILE_PATH, &ub));
    show_times("after utime", FILE_PATH);
    EXPECT_OK("utime(file, NULL)", syscall(SYS_utime, FILE_PATH, NULL));
    check(recent(FILE_PATH), "utime(NULL) sets the times to now");
    EXPECT_ERR(EFAULT, "utime(NULL path)", syscall(SYS_utime, NULL, &ub));
    EXPECT_ERR(EFAULT, "utime(file, bad times)", syscall(SYS_utime, FILE_PATH, BAD_PTR));
    EXPECT_ERR(ENOENT, "utime(missing)", syscall(SYS_utime, DIR_PATH "/missing", &ub));

    struct timeval tv[2] = { { 5, 123456 }, { 6, 999999 } };
    EXPECT_OK("utimes(file, {5.123456, 6.999999})", syscall(SYS_utimes, FILE_PATH, tv));
    show_times("after utimes", FILE_PATH);
    EXPECT_OK("utimes(file, NULL)", syscall(SYS_utimes, FILE_PATH, NULL));
    check(recent(FILE_PATH), "utimes(NULL) sets the times to now");
    struct timeval big[2] = { { 5, 1000000 }, { 6, 0 } };
    EXPECT_ERR(EINVAL, "utimes with tv_usec 1000000", syscall(SYS_utimes, FILE_PATH, big));
    struct timeval neg[2] = { { 5, 0 }, { 6, -1 } };
    EXPECT_ERR(EINVAL, "utimes with tv_usec -1", syscall(SYS_utimes, FILE_PATH, neg));
    EXPECT_ERR(EFAULT, "utimes(NULL path)", syscall(SYS_utimes, NULL, tv));

    int dfd = open(DIR_PATH, O_RDONLY | O_DIRECTORY);
    struct timeval tv2[2] = { { 7, 1 }, { 8, 2 } };
    EXPECT_OK("futimesat(dirfd, \"file\")", syscall(SYS_futimesat, dfd, "file", tv2));
    show_times("after futimesat", FILE_PATH);
    fd = open(FILE_PATH, O_RDONLY);
    struct timeval tv3[2] = { { 9, 0 }, { 10, 0 } };
    EXPECT_OK("futimesat(fd, NULL) changes the fd's file", syscall(SYS_futimesat, fd, NULL, tv3));
    show_times("after futimesat(fd, NULL)", FILE_PATH);
    EXPECT_ERR(EFAULT, "futimesat(AT_FDCWD, NULL)", syscall(SYS_futimesat, AT_FDCWD, NULL, tv3));
    EXPECT_ERR(EBADF, "futimesat(bad fd, \"file\")", syscall(SYS_futimesat, 999, "file", tv3));
    EXPECT_ERR(ENOTDIR, "futimesat(file fd, \"x\")", syscall(SYS_futimesat, fd, "x", tv3));
    close(fd);
    close(dfd);
    report_child("as user 1000", run_child(as_user, NULL));
}

/* ---- getdents (78) --------------------------------------------------- */

struct old_dirent {
    unsigned long d_ino;
    unsigned long d_off;
    unsigned short d_reclen;
    char d_name[];
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void old_getdents(void)
{
    mkdir(DIR_PATH "/sub", 0755);
    symlink("file", DIR_PATH "/link");
    int fd = open(DIR_PATH, O_RDONLY | O_DIRECTORY);
    char buf[4096];
    char *names[16];
    char lines[16][64];
    int n = 0, bad = 0;
    for (;;) {
        long got = syscall(SYS_getdents, fd, buf, sizeof buf);
        if (got <= 0) {
            check(got == 0, "getdents ends with 0");
            break;
        }
        for (long at = 0; at < got;) {
            struct old_dirent *d = (struct old_dirent *)(buf + at);
            unsigned char type = buf[at + d->d_reclen - 1];
            size_t len = strlen(d->d_name);
            /* header 18 + name + NUL + type, rounded up to 8 */
            if (d->d_reclen != ((18 + len + 2 + 7) & ~7UL) || d->d_off == 0)
                bad++;
            if (n < 16) {
                snprintf(lines[n], sizeof lines[n], "%.40s type %u", d->d_name, type);
                names[n] = lines[n];
                n++;
            }
            at += d->d_reclen;
        }
    }
    qsort(names, n, sizeof names[0], by_name);
    for (int i = 0; i < n; i++)
        printf("getdents: %s\n", names[i]);
    check(bad == 0, "record lengths and offsets");
    lseek(fd, 0, SEEK_SET);
    EXPECT_ERR(EINVAL, "getdents with a 10-byte buffer", syscall(SYS_getdents, fd, buf, 10));
    EXPECT_ERR(EFAULT, "getdents into a bad buffer", syscall(SYS_getdents, fd, BAD_PTR, sizeof buf));
    close(fd);
    fd = open(FILE_PATH, O_RDONLY);
    EXPECT_ERR(ENOTDIR, "getdents on a file", syscall(SYS_getdents, fd, buf, sizeof buf));
    close(fd);
    EXPECT_ERR(EBADF, "getdents on a bad fd", syscall(SYS_getdents, 999, buf, sizeof buf));
}

/* ---- ioprio ---------------------------------------------------------- */

#define IOPRIO(class, data) (((class) << 13) | (data))

static int ioprio_child(void *arg)
{
    (void)arg;
    check(syscall(SYS_ioprio_get, 1, 0) == IOPRIO(2, 2), "a forked child inherits BE 2");
    return t_failed ? 99 : 0;
}

static int ioprio_group(void *arg)
{
    (void)arg;
    setpgid(0, 0);
    EXPECT_OK("ioprio_set(NONE)", syscall(SYS_ioprio_set, 1, 0, 0));
    printf("ioprio_get(PGRP, own group), nice 0: %#lx\n", syscall(SYS_ioprio_get, 2, 0));
    setpriority(PRIO_PROCESS, 0, 10);
    printf("ioprio_get(PGRP, own group), nice 10: %#lx\n", syscall(SYS_ioprio_get, 2, 0));
    printf("ioprio_get(PROCESS, self), none set: %ld\n", syscall(SYS_ioprio_get, 1, 0));
    EXPECT_OK("ioprio_set(PGRP, own group, BE 1)", syscall(SYS_ioprio_set, 2, 0, IOPRIO(2, 1)));
    printf("ioprio_get(PGRP, own group): %#lx\n", syscall(SYS_ioprio_get, 2, getpgrp()));
    return t_failed ? 99 : 0;
}

static void ioprio(void)
{
    EXPECT_OK("ioprio_set(PROCESS, self, BE 3)", syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 3)));
    check(syscall(SYS_ioprio_get, 1, 0) == IOPRIO(2, 3), "ioprio_get = BE 3");
    check(syscall(SYS_ioprio_get, 1, getpid()) == IOPRIO(2, 3), "ioprio_get by pid = BE 3");
    EXPECT_OK("ioprio_set(RT 0) as root", syscall(SYS_ioprio_set, 1, 0, IOPRIO(1, 0)));
    check(syscall(SYS_ioprio_get, 1, 0) == IOPRIO(1, 0), "ioprio_get = RT 0");
    EXPECT_OK("ioprio_set(IDLE)", syscall(SYS_ioprio_set, 1, 0, IOPRIO(3, 0)));
    check(syscall(SYS_ioprio_get, 1, 0) == IOPRIO(3, 0), "ioprio_get = IDLE");
    EXPECT_ERR(EINVAL, "ioprio_set(NONE with data 1)", syscall(SYS_ioprio_set, 1, 0, IOPRIO(0, 1)));
    EXPECT_ERR(EINVAL, "ioprio_set(class 4)", syscall(SYS_ioprio_set, 1, 0, IOPRIO(4, 0)));
    EXPECT_ERR(EINVAL, "ioprio_set(class 7)", syscall(SYS_ioprio_set, 1, 0, IOPRIO(7, 0)));
    EXPECT_ERR(EINVAL, "ioprio_set(which 0)", syscall(SYS_ioprio_set, 0, 0, IOPRIO(2, 0)));
    EXPECT_ERR(EINVAL, "ioprio_set(which 4)", syscall(SYS_ioprio_set, 4, 0, IOPRIO(2, 0)));
    EXPECT_ERR(EINVAL, "ioprio_get(which 4)", syscall(SYS_ioprio_get, 4, 0));
    EXPECT_ERR(ESRCH, "ioprio_set(no such pid)", syscall(SYS_ioprio_set, 1, 999999, IOPRIO(2, 0)));
    EXPECT_ERR(ESRCH, "ioprio_get(no such pid)", syscall(SYS_ioprio_get, 1, 999999));
    EXPECT_ERR(ESRCH, "ioprio_get(no such group)", syscall(SYS_ioprio_get, 2, 999999));
    EXPECT_ERR(ESRCH, "ioprio_get(user 54321)", syscall(SYS_ioprio_get, 3, 54321));
    EXPECT_ERR(ESRCH, "ioprio_get(user -1)", syscall(SYS_ioprio_get, 3, -1));
    EXPECT_OK("ioprio_set(BE 2)", syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 2)));
    report_child("fork", run_child(ioprio_child, NULL));
    report_child("own group", run_child(ioprio_group, NULL));
    EXPECT_OK("ioprio_set(NONE) again", syscall(SYS_ioprio_set, 1, 0, 0));
    check(syscall(SYS_ioprio_get, 1, 0) == 0, "ioprio_get = 0");
}

/* ---- NUMA policies on a machine with one node ------------------------ */

static void show_policy(const char *what, unsigned long maxnode, unsigned long addr, unsigned long flags)
{
    int mode = -1;
    unsigned long mask[4] = { ~0UL, ~0UL, ~0UL, ~0UL };
    errno = 0;
    long r = syscall(SYS_get_mempolicy, &mode, mask, maxnode, addr, flags);
    if (r != 0)
        printf("%s: -1 %s\n", what, errname(errno));
    else
        printf("%s: mode %#x, mask %#lx %#lx\n", what, mode, mask[0], mask[1]);
}

static long setpol(int mode, unsigned long mask, unsigned long maxnode)
{
    return syscall(SYS_set_mempolicy, mode, &mask, maxnode);
}

static int numa_user(void *arg)
{
    (void)arg;
    if (setuid(1000) != 0)
        return 10;
    unsigned long one = 1;
    EXPECT_ERR(EPERM, "migrate_pages(root's process) as user 1000", syscall(SYS_migrate_pages, getppid(), 2, &one, &one));
    void *page = &one;
    int status = 5;
    EXPECT_ERR(EPERM, "move_pages(root's process) as user 1000", syscall(SYS_move_pages, getppid(), 1, &page, NULL, &status, 0));
    EXPECT_ERR(EPERM, "move_pages(MOVE_ALL) as user 1000", syscall(SYS_move_pages, 0, 1, &page, NULL, &status, 4));
    return t_failed ? 99 : 0;
}

static void numa(void)
{
    show_policy("default policy", 65, 0, 0);
    EXPECT_ERR(EINVAL, "get_mempolicy(mask, maxnode 0)", syscall(SYS_get_mempolicy, NULL, &(unsigned long){ 0 }, 0, 0, 0));
    EXPECT_ERR(EINVAL, "get_mempolicy(flags 8)", syscall(SYS_get_mempolicy, NULL, NULL, 0, 0, 8));
    show_policy("MPOL_F_MEMS_ALLOWED", 65, 0, 4);
    EXPECT_ERR(EINVAL, "MEMS_ALLOWED|NODE", syscall(SYS_get_mempolicy, NULL, NULL, 0, 0, 5));
    EXPECT_ERR(EINVAL, "an address without MPOL_F_ADDR", syscall(SYS_get_mempolicy, NULL, NULL, 0, 4096, 0));
    EXPECT_ERR(EINVAL, "MPOL_F_NODE of the default policy", syscall(SYS_get_mempolicy, NULL, NULL, 0, 0, 1));
    EXPECT_OK("set_mempolicy(BIND, {0})", setpol(2, 1, 2));
    show_policy("BIND {0}", 65, 0, 0);
    show_policy("BIND {0}, maxnode 200 (clears the rest)", 200, 0, 0);
    show_policy("BIND {0}, maxnode 1 (copies nothing)", 1, 0, 0);
    EXPECT_ERR(EINVAL, "set_mempolicy(BIND, {1}): no such node", setpol(2, 2, 3));
    EXPECT_ERR(EINVAL, "set_mempolicy(BIND, {})", setpol(2, 0, 2));
    EXPECT_ERR(EINVAL, "set_mempolicy(DEFAULT, {0})", setpol(0, 1, 2));
    EXPECT_ERR(EINVAL, "set_mempolicy(mode 7)", setpol(7, 1, 2));
    EXPECT_ERR(EINVAL, "STATIC and RELATIVE together", setpol(2 | 0x8000 | 0x4000, 1, 2));
    EXPECT_ERR(EINVAL, "NUMA_BALANCING with INTERLEAVE", setpol(3 | 0x2000, 1, 2));
    EXPECT_ERR(EINVAL, "LOCAL with a node", setpol(4, 1, 2));
    EXPECT_ERR(EINVAL, "PREFERRED, empty, STATIC", setpol(1 | 0x8000, 0, 2));
    EXPECT_ERR(EINVAL, "set_mempolicy maxnode 40000", setpol(2, 1, 40000));
    EXPECT_ERR(EFAULT, "set_mempolicy(bad mask)", syscall(SYS_set_mempolicy, 2, BAD_PTR, 65));
    EXPECT_OK("BIND with NUMA_BALANCING", setpol(2 | 0x2000, 1, 2));
    show_policy("BIND|NUMA_BALANCING", 65, 0, 0);
    EXPECT_OK("PREFERRED with no node", setpol(1, 0, 2));
    show_policy("PREFERRED {} (local)", 65, 0, 0);
    EXPECT_OK("LOCAL", setpol(4, 0, 2));
    show_policy("LOCAL", 65, 0, 0);
    EXPECT_OK("PREFERRED_MANY {0}", setpol(5, 1, 2));
    show_policy("PREFERRED_MANY", 65, 0, 0);
    EXPECT_OK("STATIC BIND {0, 5}", setpol(2 | 0x8000, 0x21, 7));
    show_policy("STATIC BIND {0, 5}", 65, 0, 0);
    EXPECT_OK("RELATIVE BIND {3}", setpol(2 | 0x4000, 0x8, 5));
    show_policy("RELATIVE BIND {3}", 65, 0, 0);
    EXPECT_OK("INTERLEAVE {0}", setpol(3, 1, 2));
    show_policy("INTERLEAVE", 65, 0, 0);
    show_policy("INTERLEAVE, MPOL_F_NODE", 65, 0, 1);

    long pg = 4096;
    char *p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    unsigned long one = 1;
    EXPECT_OK("mbind(page 1, BIND {0})", syscall(SYS_mbind, p + pg, pg, 2, &one, 2, 0));
    show_policy("MPOL_F_ADDR page 1", 65, (unsigned long)(p + pg), 2);
    show_policy("MPOL_F_ADDR page 0 (no area policy: default)", 65, (unsigned long)p, 2);
    show_policy("MPOL_F_ADDR|NODE page 0", 65, (unsigned long)p, 3);
    EXPECT_ERR(EINVAL, "mbind(unaligned)", syscall(SYS_mbind, p + 1, pg, 2, &one, 2, 0));
    EXPECT_OK("mbind(length 0)", syscall(SYS_mbind, p, 0, 2, &one, 2, 0));
    EXPECT_ERR(EINVAL, "mbind(flags 16)", syscall(SYS_mbind, p, pg, 2, &one, 2, 16));
    EXPECT_OK("mbind(MOVE_ALL|STRICT) as root", syscall(SYS_mbind, p, pg, 2, &one, 2, 5));
    EXPECT_ERR(EINVAL, "mbind(BIND, {})", syscall(SYS_mbind, p, pg, 2, NULL, 0, 0));
    EXPECT_OK("set_mempolicy_home_node(BIND pages, node 0)", syscall(SYS_set_mempolicy_home_node, p, 2 * pg, 0, 0));
    EXPECT_ERR(EINVAL, "set_mempolicy_home_node(node 1)", syscall(SYS_set_mempolicy_home_node, p, pg, 1, 0));
    EXPECT_ERR(EINVAL, "set_mempolicy_home_node(flags 1)", syscall(SYS_set_mempolicy_home_node, p, pg, 0, 1));
    EXPECT_ERR(EINVAL, "set_mempolicy_home_node(unaligned)", syscall(SYS_set_mempolicy_home_node, p + 1, pg, 0, 0));
    EXPECT_OK("mbind(page 2, INTERLEAVE)", syscall(SYS_mbind, p + 2 * pg, pg, 3, &one, 2, 0));
    EXPECT_ERR(EOPNOTSUPP, "set_mempolicy_home_node(INTERLEAVE page)", syscall(SYS_set_mempolicy_home_node, p, 3 * pg, 0, 0));
    /* An area with no policy: 6.1 skips it (0), later kernels say ENOENT. */
    munmap(p + pg, pg);
    EXPECT_ERR(EFAULT, "mbind(BIND) over a hole", syscall(SYS_mbind, p, 3 * pg, 2, &one, 2, 0));
    EXPECT_OK("mbind(DEFAULT) over a hole", syscall(SYS_mbind, p, 3 * pg, 0, NULL, 0, 0));
    show_policy("MPOL_F_ADDR page 2 after DEFAULT", 65, (unsigned long)(p + 2 * pg), 2);
    EXPECT_ERR(EFAULT, "mbind(DEFAULT) where nothing is mapped", syscall(SYS_mbind, p + pg, pg, 0, NULL, 0, 0));
    show_policy("MPOL_F_ADDR in the hole", 65, (unsigned long)(p + pg), 2);

    EXPECT_OK("migrate_pages(self, {0} -> {0})", syscall(SYS_migrate_pages, 0, 2, &one, &one));
    unsigned long none = 0, node1 = 2;
    EXPECT_ERR(EINVAL, "migrate_pages(-> {})", syscall(SYS_migrate_pages, 0, 2, &one, &none));
    EXPECT_ERR(EINVAL, "migrate_pages(-> {1}) as root", syscall(SYS_migrate_pages, 0, 3, &one, &node1));
    EXPECT_ERR(ESRCH, "migrate_pages(no such pid)", syscall(SYS_migrate_pages, 999999, 2, &one, &one));

    void *pages[3] = { p, p + pg, p + 3 * pg };
    int status[3] = { 7, 7, 7 };
    EXPECT_OK("move_pages(status only)", syscall(SYS_move_pages, 0, 3, pages, NULL, status, 0));
    printf("move_pages status: %d %d %d (written, unmapped, untouched)\n", status[0], status[1], status[2]);
    int nodes[3] = { 0, 0, 0 };
    status[0] = status[1] = status[2] = 7;
    EXPECT_OK("move_pages(to node 0)", syscall(SYS_move_pages, 0, 3, pages, nodes, status, 2));
    printf("move_pages status: %d %d %d\n", status[0], status[1], status[2]);
    int bad_node[1] = { 1 };
    EXPECT_ERR(ENODEV, "move_pages(to node 1)", syscall(SYS_move_pages, 0, 1, pages, bad_node, status, 0));
    bad_node[0] = -1;
    EXPECT_ERR(ENODEV, "move_pages(to node -1)", syscall(SYS_move_pages, 0, 1, pages, bad_node, status, 0));
    EXPECT_ERR(EINVAL, "move_pages(flags 8)", syscall(SYS_move_pages, 0, 1, pages, NULL, status, 8));
    EXPECT_ERR(ESRCH, "move_pages(no such pid)", syscall(SYS_move_pages, 999999, 1, pages, NULL, status, 0));
    munmap(p, 4 * pg);
    report_child("numa as user 1000", run_child(numa_user, NULL));
    EXPECT_OK("set_mempolicy(DEFAULT)", syscall(SYS_set_mempolicy, 0, NULL, 0));
    show_policy("back to default", 65, 0, 0);
}

/* ---- syslog (klogctl) ------------------------------------------------ */

static void set_restrict(const char *v)
{
    int fd = open("/proc/sys/kernel/dmesg_restrict", O_WRONLY);
    if (fd < 0 || write(fd, v, strlen(v)) != (ssize_t)strlen(v))
        printf("FAIL: writing dmesg_restrict\n");
    if (fd >= 0)
        close(fd);
}

static int syslog_user(void *arg)
{
    int restricted = (int)(long)arg;
    if (setuid(1000) != 0)
        return 10;
    static char buf[4096];
    if (restricted) {
        EXPECT_ERR(EPERM, "READ_ALL as user 1000, dmesg_restrict 1", syscall(SYS_syslog, 3, buf, sizeof buf));
        EXPECT_ERR(EPERM, "SIZE_BUFFER as user 1000, dmesg_restrict 1", syscall(SYS_syslog, 10, NULL, 0));
    } else {
        long n = syscall(SYS_syslog, 3, buf, sizeof buf);
        check(n > 0 && buf[0] == '<' && buf[n - 1] == '\n', "READ_ALL as user 1000, dmesg_restrict 0: whole records");
        check(syscall(SYS_syslog, 10, NULL, 0) > 0, "SIZE_BUFFER as user 1000, dmesg_restrict 0");
    }
    EXPECT_ERR(EPERM, "READ as user 1000", syscall(SYS_syslog, 2, buf, sizeof buf));
    EXPECT_ERR(EPERM, "CLEAR as user 1000", syscall(SYS_syslog, 5, NULL, 0));
    EXPECT_ERR(EPERM, "READ_CLEAR as user 1000", syscall(SYS_syslog, 4, buf, sizeof buf));
    EXPECT_ERR(EPERM, "CONSOLE_LEVEL as user 1000", syscall(SYS_syslog, 8, NULL, 7));
    EXPECT_ERR(EPERM, "SIZE_UNREAD as user 1000", syscall(SYS_syslog, 9, NULL, 0));
    EXPECT_ERR(EPERM, "OPEN as user 1000", syscall(SYS_syslog, 1, NULL, 0));
    EXPECT_ERR(EPERM, "action 99 as user 1000", syscall(SYS_syslog, 99, NULL, 0));
    return t_failed ? 99 : 0;
}

static void klog(void)
{
    static char buf[4096];
    char old[8] = "0";
    int fd = open("/proc/sys/kernel/dmesg_restrict", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, old, sizeof old - 1);
        old[n > 0 ? n : 0] = 0;
        close(fd);
    }
    check(syscall(SYS_syslog, 10, NULL, 0) > 0, "SIZE_BUFFER is positive");
    long n = syscall(SYS_syslog, 3, buf, sizeof buf);
    check(n > 0 && buf[0] == '<' && buf[n - 1] == '\n', "READ_ALL returns whole <level>-prefixed records");
    check(syscall(SYS_syslog, 3, buf, 0) == 0, "READ_ALL of 0 bytes");
    EXPECT_ERR(EINVAL, "READ_ALL into NULL", syscall(SYS_syslog, 3, NULL, 16));
    EXPECT_ERR(EINVAL, "READ_ALL with length -1", syscall(SYS_syslog, 3, buf, -1));
    EXPECT_ERR(EFAULT, "READ_ALL into a bad buffer", syscall(SYS_syslog, 3, BAD_PTR, 4096));
    EXPECT_ERR(EFAULT, "READ_ALL into a kernel address", syscall(SYS_syslog, 3, KERNEL_PTR, 64));
    EXPECT_ERR(EINVAL, "READ into NULL", syscall(SYS_syslog, 2, NULL, 16));
    EXPECT_OK("OPEN", syscall(SYS_syslog, 1, NULL, 0));
    EXPECT_OK("CLOSE", syscall(SYS_syslog, 0, NULL, 0));
    check(syscall(SYS_syslog, 9, NULL, 0) >= 0, "SIZE_UNREAD");
    EXPECT_ERR(EINVAL, "CONSOLE_LEVEL 0", syscall(SYS_syslog, 8, NULL, 0));
    EXPECT_ERR(EINVAL, "CONSOLE_LEVEL 9", syscall(SYS_syslog, 8, NULL, 9));
    EXPECT_ERR(EINVAL, "action 11", syscall(SYS_syslog, 11, NULL, 0));
    EXPECT_ERR(EINVAL, "action -1", syscall(SYS_syslog, -1, NULL, 0));
    set_restrict("1");
    report_child("syslog as user 1000, restricted", run_child(syslog_user, (void *)1L));
    set_restrict("0");
    report_child("syslog as user 1000, not restricted", run_child(syslog_user, (void *)0L));
    set_restrict(old);
}

/* ---- the rest -------------------------------------------------------- */

static void rest(void)
{
    EXPECT_ERR(EINTR, "restart_syscall with nothing to restart", syscall(SYS_restart_syscall));
    char page[16];
    struct iovec iov = { page, sizeof page };
    int fd = open(FILE_PATH, O_RDONLY);
    EXPECT_ERR(EINVAL, "process_madvise(flags 1)", syscall(SYS_process_madvise, fd, &iov, 1, MADV_WILLNEED, 1));
    EXPECT_ERR(EINVAL, "process_madvise(1025 vectors)", syscall(SYS_process_madvise, fd, &iov, 1025, MADV_WILLNEED, 0));
    EXPECT_ERR(EFAULT, "process_madvise(bad vector)", syscall(SYS_process_madvise, fd, BAD_PTR, 1, MADV_WILLNEED, 0));
    EXPECT_ERR(EBADF, "process_madvise(a file, not a pidfd)", syscall(SYS_process_madvise, fd, &iov, 1, MADV_WILLNEED, 0));
    EXPECT_ERR(EBADF, "process_madvise(closed fd)", syscall(SYS_process_madvise, 999, &iov, 1, MADV_WILLNEED, 0));
    close(fd);
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    char *m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct iovec two[2] = { { m, 4096 }, { m + 4096, 4096 } };
    check(syscall(SYS_process_madvise, pidfd, two, 2, MADV_WILLNEED, 0) == 8192,
          "process_madvise(own pidfd, WILLNEED, 2 pages) = 8192");
    check(syscall(SYS_process_madvise, pidfd, two, 1, MADV_COLD, 0) == 4096, "process_madvise(COLD) = 4096");
    /* Other advice: EINVAL in 6.1; kernels since 6.13 take any advice
     * for the caller's own process. */
    struct iovec odd = { m + 1, 4096 };
    EXPECT_ERR(EINVAL, "process_madvise(unaligned range)", syscall(SYS_process_madvise, pidfd, &odd, 1, MADV_WILLNEED, 0));
    munmap(m, 2 * 4096);
    close(pidfd);
}

static void cleanup(void)
{
    unlink(DIR_PATH "/link");
    unlink(FILE_PATH);
    rmdir(DIR_PATH "/sub");
    rmdir(DIR_PATH);
}

int main(void)
{
    t_init("oldcalls");
    cleanup();
    utime_family();
    old_getdents();
    ioprio();
    numa();
    klog();
    rest();
    cleanup();
    return t_done();
}
