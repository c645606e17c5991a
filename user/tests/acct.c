/*
 * acct: BSD process accounting. acct(2)'s errnos (not root, missing,
 * a directory, a device, a read-only mount, a bad pointer), then the
 * acct_v3 records of children ended in different ways: exit codes,
 * AFORK for a child that never exec'd, AXSIG for one a signal killed,
 * real ids of a child that dropped root, the command name after exec,
 * start and elapsed time, CPU time, memory. One record per process, a
 * threaded child included; none once accounting is off. The records
 * are found by pid (on the host other processes may write some too).
 * The file lives on a tmpfs at /tmp/acct_t.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define D "/tmp/acct_t"

struct acct_v3 {
    uint8_t ac_flag, ac_version;
    uint16_t ac_tty;
    uint32_t ac_exitcode, ac_uid, ac_gid, ac_pid, ac_ppid, ac_btime;
    float ac_etime;
    uint16_t ac_utime, ac_stime, ac_mem, ac_io, ac_rw, ac_minflt, ac_majflt, ac_swaps;
    char ac_comm[16];
};

#define AFORK 0x01
#define ASU 0x02
#define ACORE 0x08
#define AXSIG 0x10

/* comp_t: 13-bit mantissa, 3-bit base-8 exponent. */
static unsigned long comp(uint16_t c)
{
    return (unsigned long)(c & 0x1fff) << (3 * (c >> 13));
}

static int exit_code(void *arg)
{
    return (int)(long)arg;
}

static int killed(void *arg)
{
    (void)arg;
    raise(SIGKILL);
    return 0;
}

static int as_user(void *arg)
{
    (void)arg;
    if (setgid(1234) || setuid(1000))
        return 99;
    return 5;
}

/* Busy for 300 ms of its own CPU time, then a short sleep. */
static int busy(void *arg)
{
    (void)arg;
    struct timespec t;
    do
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while (t.tv_sec == 0 && t.tv_nsec < 300000000);
    sleep_ms(200);
    return 0;
}

static void *spin(void *arg)
{
    (void)arg;
    return NULL;
}

static int threaded(void *arg)
{
    (void)arg;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, spin, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    return 6;
}

static int start(int (*fn)(void *), void *arg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(arg));
    int st;
    waitpid(pid, &st, 0);
    return pid;
}

static int exec_self(const char *self)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, "acct", "child", (char *)NULL);
        _exit(97);
    }
    int st;
    waitpid(pid, &st, 0);
    return pid;
}

static struct acct_v3 records[4096];
static long nrecords;

static void load(void)
{
    int fd = open(D "/log", O_RDONLY);
    long n = read(fd, records, sizeof records);
    close(fd);
    nrecords = n > 0 ? n / (long)sizeof records[0] : 0;
}

static struct acct_v3 *find(pid_t pid, int *count)
{
    struct acct_v3 *r = NULL;
    *count = 0;
    for (long i = 0; i < nrecords; i++)
        if (records[i].ac_pid == (uint32_t)pid) {
            r = &records[i];
            (*count)++;
        }
    return r;
}

static void show(const char *what, pid_t pid)
{
    int count;
    struct acct_v3 *r = find(pid, &count);
    if (!r) {
        printf("%s: no record\n", what);
        return;
    }
    printf("%s: %d record(s), version %d, flags%s%s%s, exit code %#x, uid %u gid %u, parent %s, comm \"%.16s\"\n",
           what, count, r->ac_version, r->ac_flag & AFORK ? " AFORK" : "", r->ac_flag & AXSIG ? " AXSIG" : "",
           r->ac_flag & ACORE ? " ACORE" : "", r->ac_exitcode, r->ac_uid, r->ac_gid,
           r->ac_ppid == (uint32_t)getpid() ? "us" : "other", r->ac_comm);
}

static void test_errnos(void)
{
    EXPECT_ERR(ENOENT, "acct(missing)", acct(D "/missing"));
    EXPECT_ERR(EISDIR, "acct(a directory)", acct(D));
    EXPECT_ERR(EACCES, "acct(/dev/null)", acct("/dev/null"));
    EXPECT_ERR(EFAULT, "acct(bad pointer)", acct(BAD_PTR));
    EXPECT_OK("acct(NULL) while off", acct(NULL));
    mkdir(D "/ro", 0755);
    mount("none", D "/ro", "tmpfs", 0, NULL);
    mkfile(D "/ro/log", "");
    mount(NULL, D "/ro", NULL, MS_REMOUNT | MS_RDONLY, NULL);
    EXPECT_ERR(EROFS, "acct(a file on a read-only mount)", acct(D "/ro/log"));
    umount(D "/ro");
    mkfile(D "/log", "");
    chmod(D "/log", 0444);
    EXPECT_OK("acct(a read-only file) as root", acct(D "/log"));
    acct(NULL);
    chmod(D "/log", 0600);
}

static int unprivileged(void *arg)
{
    (void)arg;
    if (setuid(1000))
        return 99;
    EXPECT_ERR(EPERM, "user: acct(file)", acct(D "/log"));
    EXPECT_ERR(EPERM, "user: acct(NULL)", acct(NULL));
    return t_failed;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "child") == 0)
        return 4;
    t_init("acct");
    umount2(D, MNT_DETACH);
    mkdir(D, 0755);
    if (mount("none", D, "tmpfs", 0, NULL) != 0) {
        printf("FAIL: mount tmpfs: %s\n", errname(errno));
        return 1;
    }
    test_errnos();
    int st = run_child(unprivileged, NULL);
    check(st == 0, "unprivileged child: %s", status_str(st));

    EXPECT_OK("acct(file)", acct(D "/log"));
    chmod(D "/log", 0700);
    EXPECT_ERR(ETXTBSY, "exec of the accounting file", execl(D "/log", "log", (char *)NULL));
    time_t before = time(NULL);
    pid_t exited = start(exit_code, (void *)3);
    pid_t exited0 = start(exit_code, (void *)0);
    pid_t sig = start(killed, NULL);
    pid_t user = start(as_user, NULL);
    pid_t execd = exec_self(argv[0]);
    pid_t cpu = start(busy, NULL);
    pid_t threads = start(threaded, NULL);
    time_t after = time(NULL);
    EXPECT_OK("acct(NULL)", acct(NULL));
    pid_t late = start(exit_code, (void *)1);
    load();
    show("exit(3)", exited);
    show("exit(0)", exited0);
    show("SIGKILL", sig);
    show("setuid(1000)", user);
    show("exec'd", execd);
    show("threads", threads);
    show("after acct(NULL)", late);
    int count;
    struct acct_v3 *r = find(cpu, &count);
    check(r && count == 1, "one record for the busy child");
    if (r) {
        unsigned long ticks = comp(r->ac_utime) + comp(r->ac_stime);
        /* The host samples CPU time at ticks (less under steal), so only
         * a range: some, and not more than it had. */
        check(ticks >= 1 && ticks <= 150, "utime + stime count its CPU time");
        check(r->ac_etime >= 45 && r->ac_etime <= 3000, "elapsed time at least 0.5 s, in AHZ");
        check((time_t)r->ac_btime >= before - 1 && (time_t)r->ac_btime <= after + 1, "start time during the test");
        check(comp(r->ac_mem) > 0, "memory is counted");
    }
    umount2(D, MNT_DETACH);
    rmdir(D);
    return t_done();
}
