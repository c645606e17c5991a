/*
 * proc_sys: /proc/sys.  The common kernel, vm and fs files exist with
 * Linux's modes and default values (those that do not depend on the
 * machine), directories list them, read-only files refuse writers and
 * drop_caches refuses readers, writes parse as Linux's (bad numbers and
 * out-of-range values are EINVAL), and the files with an effect have it:
 * hostname and domainname are uname's, core_pattern names core files,
 * nr_open bounds RLIMIT_NOFILE and max_map_count bounds mmap.  Every
 * value written is put back.
 */
#include "common.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>

static int read_sys(const char *name, char *buf, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "/proc/sys/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t got = read(fd, buf, n - 1);
    close(fd);
    if (got < 0)
        return -errno;
    buf[got] = 0;
    return (int)got;
}

static int write_sys(const char *name, const char *value)
{
    char path[256];
    snprintf(path, sizeof path, "/proc/sys/%s", name);
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, value, strlen(value));
    int e = errno;
    close(fd);
    return n < 0 ? -e : 0;
}

static const char *show(const char *s)
{
    static char out[256];
    size_t j = 0;
    for (size_t i = 0; s[i] && j < sizeof out - 3; i++) {
        if (s[i] == '\n') {
            out[j++] = '\\';
            out[j++] = 'n';
        } else if (s[i] == '\t') {
            out[j++] = '\\';
            out[j++] = 't';
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = 0;
    return out;
}

/* Files whose default is the same on every Linux machine. */
static const char *fixed[] = {
    "kernel/ostype", "kernel/ngroups_max", "kernel/cap_last_cap", "kernel/core_pattern",
    "kernel/core_uses_pid", "kernel/printk", "kernel/printk_ratelimit", "kernel/printk_ratelimit_burst",
    "kernel/panic_on_oops", "kernel/kptr_restrict", "kernel/perf_event_paranoid", "kernel/overflowuid",
    "kernel/overflowgid", "kernel/ctrl-alt-del", "kernel/poweroff_cmd", "kernel/pty/max",
    "kernel/random/poolsize", "kernel/domainname",
    "vm/overcommit_memory", "vm/overcommit_ratio", "vm/overcommit_kbytes", "vm/max_map_count",
    "vm/swappiness", "vm/dirty_ratio", "vm/dirty_background_ratio", "vm/dirty_bytes",
    "vm/dirty_background_bytes", "vm/dirty_expire_centisecs", "vm/dirty_writeback_centisecs",
    "vm/vfs_cache_pressure", "vm/page-cluster", "vm/nr_hugepages", "vm/oom_kill_allocating_task",
    "vm/panic_on_oom", "vm/admin_reserve_kbytes", "vm/stat_interval",
    "fs/nr_open", "fs/pipe-max-size", "fs/pipe-user-pages-soft", "fs/pipe-user-pages-hard",
    "fs/inotify/max_user_instances", "fs/inotify/max_queued_events", "fs/mqueue/msg_max",
    "fs/mqueue/msgsize_max", "fs/mqueue/queues_max", "fs/mqueue/msg_default", "fs/mqueue/msgsize_default",
    "fs/aio-max-nr", "fs/aio-nr", "fs/lease-break-time", "fs/leases-enable", "fs/protected_fifos",
    "fs/protected_regular", "fs/suid_dumpable", "fs/overflowuid", "fs/overflowgid", "fs/dir-notify-enable",
    "kernel/msgmax", "kernel/msgmnb", "kernel/msgmni", "kernel/sem", "kernel/shmmni",
};

/* Files that exist everywhere but whose value depends on the machine. */
static const char *machine[] = {
    "kernel/hostname", "kernel/osrelease", "kernel/version", "kernel/pid_max", "kernel/threads-max",
    "kernel/randomize_va_space", "kernel/panic", "kernel/dmesg_restrict", "kernel/tainted",
    "kernel/pty/nr", "kernel/random/boot_id", "kernel/random/uuid", "kernel/random/entropy_avail",
    "vm/min_free_kbytes", "vm/mmap_min_addr", "vm/user_reserve_kbytes", "fs/file-max", "fs/file-nr",
    "fs/inotify/max_user_watches", "fs/epoll/max_user_watches", "fs/protected_hardlinks",
    "fs/protected_symlinks",
};

static void test_files(void)
{
    char buf[512], path[256];
    for (unsigned i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        struct stat sb;
        snprintf(path, sizeof path, "/proc/sys/%s", fixed[i]);
        int st = stat(path, &sb);
        int n = read_sys(fixed[i], buf, sizeof buf);
        t_checks++;
        if (st == 0 && n >= 0)
            printf("%s %04o: %s\n", fixed[i], (unsigned)(sb.st_mode & 07777), show(buf));
        else
            printf("FAIL: %s: %s\n", fixed[i], errname(n < 0 ? -n : errno)), t_failed++;
    }
    for (unsigned i = 0; i < sizeof machine / sizeof machine[0]; i++) {
        struct stat sb;
        snprintf(path, sizeof path, "/proc/sys/%s", machine[i]);
        int ok = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && read_sys(machine[i], buf, sizeof buf) > 1 &&
                 buf[strlen(buf) - 1] == '\n';
        check(ok, "%s %04o reads a line", machine[i], ok ? (unsigned)(sb.st_mode & 07777) : 0);
    }
    struct stat sb;
    check(stat("/proc/sys/vm/drop_caches", &sb) == 0 && (sb.st_mode & 07777) == 0200, "vm/drop_caches 0200");
    check(stat("/proc/sys/kernel", &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0555,
          "kernel/ is a 0555 directory");

    /* Facts tying files together. */
    struct utsname u;
    uname(&u);
    read_sys("kernel/osrelease", buf, sizeof buf);
    check(strncmp(buf, u.release, strlen(u.release)) == 0 && buf[strlen(u.release)] == '\n',
          "osrelease is uname's release");
    read_sys("kernel/version", buf, sizeof buf);
    check(strncmp(buf, u.version, strlen(u.version)) == 0, "version is uname's version");
    read_sys("kernel/hostname", buf, sizeof buf);
    check(strncmp(buf, u.nodename, strlen(u.nodename)) == 0, "hostname is uname's nodename");
    char fmax[64], fnr[128];
    read_sys("fs/file-max", fmax, sizeof fmax);
    read_sys("fs/file-nr", fnr, sizeof fnr);
    long open_files = -1, zero = -1, max = -1;
    sscanf(fnr, "%ld %ld %ld", &open_files, &zero, &max);
    check(open_files > 0 && zero == 0 && max == atol(fmax), "file-nr: open, 0, file-max");
    char id1[64], id2[64], u1[64], u2[64];
    read_sys("kernel/random/boot_id", id1, sizeof id1);
    read_sys("kernel/random/boot_id", id2, sizeof id2);
    read_sys("kernel/random/uuid", u1, sizeof u1);
    read_sys("kernel/random/uuid", u2, sizeof u2);
    check(strlen(id1) == 37 && id1[8] == '-' && id1[14] == '4' && strcmp(id1, id2) == 0, "boot_id: one v4 UUID");
    check(strlen(u1) == 37 && u1[14] == '4' && strcmp(u1, u2) != 0, "uuid: a new v4 UUID each read");
}

static int has_entry(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, name) == 0)
            found = 1;
    closedir(d);
    return found;
}

static void test_dirs(void)
{
    check(has_entry("/proc/sys", "kernel") && has_entry("/proc/sys", "vm") && has_entry("/proc/sys", "fs"),
          "/proc/sys lists kernel, vm, fs");
    check(has_entry("/proc/sys/kernel", "hostname") && has_entry("/proc/sys/kernel", "random"),
          "/proc/sys/kernel lists hostname and random/");
    check(has_entry("/proc/sys/fs/inotify", "max_user_watches"), "/proc/sys/fs/inotify lists max_user_watches");
    struct stat sb;
    EXPECT_ERR(ENOENT, "stat(/proc/sys/kernel/no_such_file)", stat("/proc/sys/kernel/no_such_file", &sb));
    EXPECT_ERR(ENOENT, "stat(/proc/sys/nosuchdir/x)", stat("/proc/sys/nosuchdir/x", &sb));
}

static void test_writes(void)
{
    char buf[256], saved[256];
    EXPECT_ERR(EACCES, "open(kernel/ostype, O_WRONLY)", open("/proc/sys/kernel/ostype", O_WRONLY));
    EXPECT_ERR(EACCES, "open(kernel/ngroups_max, O_RDWR)", open("/proc/sys/kernel/ngroups_max", O_RDWR));
    EXPECT_ERR(EACCES, "open(vm/drop_caches, O_RDONLY)", open("/proc/sys/vm/drop_caches", O_RDONLY));
    check(write_sys("vm/drop_caches", "3\n") == 0, "write 3 to vm/drop_caches");
    check(write_sys("vm/drop_caches", "0\n") == -EINVAL, "write 0 to vm/drop_caches = EINVAL");

    /* The writeback limits: a ratio or a byte count, writing one zeroes
     * the other; the byte forms have floors (two pages, one byte). */
    char ratio[64], bytes[64], bg_ratio[64], bg_bytes[64];
    read_sys("vm/dirty_ratio", ratio, sizeof ratio);
    read_sys("vm/dirty_bytes", bytes, sizeof bytes);
    read_sys("vm/dirty_background_ratio", bg_ratio, sizeof bg_ratio);
    read_sys("vm/dirty_background_bytes", bg_bytes, sizeof bg_bytes);
    check(write_sys("vm/dirty_bytes", "0\n") == -EINVAL, "vm/dirty_bytes 0 = EINVAL");
    check(write_sys("vm/dirty_bytes", "8191\n") == -EINVAL, "vm/dirty_bytes 8191 = EINVAL");
    check(write_sys("vm/dirty_background_bytes", "0\n") == -EINVAL, "vm/dirty_background_bytes 0 = EINVAL");
    check(write_sys("vm/dirty_bytes", "67108864\n") == 0, "vm/dirty_bytes: write 64 MiB");
    read_sys("vm/dirty_ratio", buf, sizeof buf);
    printf("after dirty_bytes: dirty_ratio %s", buf);
    check(write_sys("vm/dirty_ratio", "20\n") == 0, "vm/dirty_ratio: write 20");
    read_sys("vm/dirty_bytes", buf, sizeof buf);
    printf("after dirty_ratio: dirty_bytes %s", buf);
    check(write_sys("vm/dirty_background_bytes", "33554432\n") == 0, "vm/dirty_background_bytes: write 32 MiB");
    read_sys("vm/dirty_background_ratio", buf, sizeof buf);
    printf("after dirty_background_bytes: dirty_background_ratio %s", buf);
    check(write_sys("vm/dirty_background_ratio", "10\n") == 0, "vm/dirty_background_ratio: write 10");
    read_sys("vm/dirty_background_bytes", buf, sizeof buf);
    printf("after dirty_background_ratio: dirty_background_bytes %s", buf);
    /* Back as they were: the non-zero form of each pair last. */
    write_sys(strcmp(bytes, "0\n") ? "vm/dirty_bytes" : "vm/dirty_ratio", strcmp(bytes, "0\n") ? bytes : ratio);
    write_sys(strcmp(bg_bytes, "0\n") ? "vm/dirty_background_bytes" : "vm/dirty_background_ratio",
              strcmp(bg_bytes, "0\n") ? bg_bytes : bg_ratio);

    /* Integers: the same value back, then bad ones that change nothing. */
    static const char *ints[] = { "vm/swappiness", "vm/max_map_count", "kernel/pid_max", "fs/nr_open",
                                  "vm/overcommit_memory" };
    for (unsigned i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        read_sys(ints[i], saved, sizeof saved);
        check(write_sys(ints[i], saved) == 0, "%s: write its value back", ints[i]);
        check(write_sys(ints[i], "abc\n") == -EINVAL, "%s: write abc = EINVAL", ints[i]);
        check(write_sys(ints[i], "\n") == -EINVAL, "%s: write an empty line = EINVAL", ints[i]);
        read_sys(ints[i], buf, sizeof buf);
        check(strcmp(buf, saved) == 0, "%s: unchanged", ints[i]);
    }
    check(write_sys("vm/swappiness", "201\n") == -EINVAL, "vm/swappiness 201 = EINVAL");
    check(write_sys("vm/swappiness", "-1\n") == -EINVAL, "vm/swappiness -1 = EINVAL");
    check(write_sys("kernel/pid_max", "300\n") == -EINVAL, "kernel/pid_max 300 = EINVAL");
    check(write_sys("kernel/pid_max", "4194305\n") == -EINVAL, "kernel/pid_max 4194305 = EINVAL");
    check(write_sys("fs/nr_open", "63\n") == -EINVAL, "fs/nr_open 63 = EINVAL");
    check(write_sys("vm/panic_on_oom", "3\n") == -EINVAL, "vm/panic_on_oom 3 = EINVAL");

    /* The IPC limits (their rows come from the IPC code): values back,
     * Linux's ranges. */
    static const char *ipc[] = { "kernel/msgmax", "kernel/msgmnb", "kernel/msgmni", "kernel/shmmni",
                                 "kernel/shmmax", "kernel/sem", "fs/mqueue/msg_max",
                                 "fs/mqueue/msgsize_default", "fs/lease-break-time" };
    for (unsigned i = 0; i < sizeof ipc / sizeof ipc[0]; i++) {
        read_sys(ipc[i], saved, sizeof saved);
        check(write_sys(ipc[i], saved) == 0, "%s: write its value back", ipc[i]);
        check(write_sys(ipc[i], "abc\n") == -EINVAL, "%s: write abc = EINVAL", ipc[i]);
        read_sys(ipc[i], buf, sizeof buf);
        check(strcmp(buf, saved) == 0, "%s: unchanged", ipc[i]);
    }
    check(write_sys("kernel/msgmax", "-1\n") == -EINVAL, "kernel/msgmax -1 = EINVAL");
    check(write_sys("kernel/msgmni", "32769\n") == -EINVAL, "kernel/msgmni 32769 = EINVAL");
    check(write_sys("kernel/shmmni", "32769\n") == -EINVAL, "kernel/shmmni 32769 = EINVAL");
    /* A SEMMNI past IPCMNI is ERANGE (sem_check_semmni); the three values
     * before it are stored, so they are given as they are. */
    read_sys("kernel/sem", saved, sizeof saved);
    long semmsl = 0, semmns = 0, semopm = 0;
    sscanf(saved, "%ld %ld %ld", &semmsl, &semmns, &semopm);
    snprintf(buf, sizeof buf, "%ld %ld %ld 32769\n", semmsl, semmns, semopm);
    check(write_sys("kernel/sem", buf) == -ERANGE, "kernel/sem with SEMMNI 32769 = ERANGE");
    read_sys("kernel/sem", buf, sizeof buf);
    check(strcmp(buf, saved) == 0, "kernel/sem: unchanged");
    check(write_sys("fs/mqueue/msg_max", "0\n") == -EINVAL, "fs/mqueue/msg_max 0 = EINVAL");
    check(write_sys("fs/mqueue/msg_max", "65537\n") == -EINVAL, "fs/mqueue/msg_max 65537 = EINVAL");
    check(write_sys("fs/mqueue/msgsize_max", "127\n") == -EINVAL, "fs/mqueue/msgsize_max 127 = EINVAL");

    /* swappiness takes a new value. */
    read_sys("vm/swappiness", saved, sizeof saved);
    check(write_sys("vm/swappiness", "  42  \n") == 0, "vm/swappiness: write 42");
    read_sys("vm/swappiness", buf, sizeof buf);
    printf("vm/swappiness now: %s\n", show(buf));
    write_sys("vm/swappiness", saved);

    /* hostname is uname's nodename; domainname its domainname. */
    read_sys("kernel/hostname", saved, sizeof saved);
    check(write_sys("kernel/hostname", "kiln-test-host\n") == 0, "write kernel/hostname");
    struct utsname u;
    uname(&u);
    printf("uname nodename after the write: %s\n", u.nodename);
    check(sethostname("via-sethostname", 15) == 0, "sethostname");
    read_sys("kernel/hostname", buf, sizeof buf);
    printf("kernel/hostname after sethostname: %s\n", show(buf));
    char longname[80];
    memset(longname, 'a', sizeof longname);
    EXPECT_ERR(EINVAL, "sethostname(65 bytes)", sethostname(longname, 65));
    saved[strcspn(saved, "\n")] = 0;
    sethostname(saved, strlen(saved));
    read_sys("kernel/domainname", saved, sizeof saved);
    check(write_sys("kernel/domainname", "example.test\n") == 0, "write kernel/domainname");
    uname(&u);
    printf("uname domainname after the write: %s\n", u.domainname);
    write_sys("kernel/domainname", saved);

    /* core_pattern round trip. */
    read_sys("kernel/core_pattern", saved, sizeof saved);
    check(write_sys("kernel/core_pattern", "core.%p\n") == 0, "write kernel/core_pattern");
    read_sys("kernel/core_pattern", buf, sizeof buf);
    printf("kernel/core_pattern now: %s\n", show(buf));
    write_sys("kernel/core_pattern", saved);

    /* nr_open bounds RLIMIT_NOFILE. */
    read_sys("fs/nr_open", buf, sizeof buf);
    long nr_open = atol(buf);
    struct rlimit old, rl;
    getrlimit(RLIMIT_NOFILE, &old);
    rl.rlim_cur = old.rlim_cur;
    rl.rlim_max = (rlim_t)nr_open + 1;
    EXPECT_ERR(EPERM, "setrlimit(RLIMIT_NOFILE, nr_open + 1)", setrlimit(RLIMIT_NOFILE, &rl));
}

static void test_max_map_count(void)
{
    char buf[64];
    read_sys("vm/max_map_count", buf, sizeof buf);
    long max = atol(buf);
    /* Alternate protections so no two neighbours could merge. */
    long pg = sysconf(_SC_PAGESIZE);
    long n = 0;
    int err = 0;
    char *base = mmap(NULL, (size_t)(max + 100) * (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    munmap(base, (size_t)(max + 100) * (size_t)pg);
    for (; n < max + 100; n++) {
        void *p = mmap(base + n * pg, (size_t)pg, (n & 1) ? PROT_READ : PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == MAP_FAILED) {
            err = errno;
            break;
        }
    }
    check(err == ENOMEM && n < max && n > max - 100, "mmap fails with ENOMEM near vm.max_map_count");
    munmap(base, (size_t)(max + 100) * (size_t)pg);
}

int main(void)
{
    t_init("proc_sys");
    test_files();
    test_dirs();
    test_writes();
    test_max_map_count();
    return t_done();
}
