/*
 * creds: user and group ids, supplementary groups and capabilities by
 * Linux's rules. Every rule runs in a forked child that first brings its
 * capabilities to a known set (KNOWN, which a container's root also has:
 * the host may lack some, Kiln's root has all) so the output is the same
 * everywhere; then it changes ids and prints what the kernel says.
 * Covered: setuid/setgid, setreuid/setregid, setresuid/setresgid and
 * their errnos, setfsuid/setfsgid, setgroups/getgroups, per-thread
 * credentials (raw calls change one thread, libc's all), capget/capset
 * with v1/v2/v3 headers, the bounding set, ambient capabilities,
 * securebits and keepcaps, no_new_privs, dumpability, exec of set-user-ID
 * and set-group-ID copies of this program (AT_SECURE, nosuid mounts),
 * signal permission, waitid's si_uid, /proc/self/status and a thread's
 * own status, pagemap's frame numbers and mode, and the calls that need
 * a capability (mount, umount, reboot, clock_settime, settimeofday,
 * sethostname, setdomainname, clone3's set_tid, setrlimit, prlimit,
 * sched_setaffinity, mlock past RLIMIT_MEMLOCK), PRIO_USER by real uid.
 */
#include "common.h"
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* <linux/capability.h> is not in musl's include path. */
#define _LINUX_CAPABILITY_VERSION_1 0x19980330
#define _LINUX_CAPABILITY_VERSION_2 0x20071026
#define _LINUX_CAPABILITY_VERSION_3 0x20080522
struct __user_cap_header_struct {
    uint32_t version;
    int pid;
};
struct __user_cap_data_struct {
    uint32_t effective, permitted, inheritable;
};
enum {
    CAP_CHOWN = 0, CAP_DAC_OVERRIDE = 1, CAP_FOWNER = 3, CAP_FSETID = 4, CAP_KILL = 5, CAP_SETGID = 6,
    CAP_SETUID = 7, CAP_SETPCAP = 8, CAP_NET_BIND_SERVICE = 10, CAP_NET_RAW = 13, CAP_SYS_CHROOT = 18,
    CAP_MKNOD = 27, CAP_AUDIT_WRITE = 29, CAP_SETFCAP = 31,
};

#define BIT(n) (1ULL << (n))
/* Capabilities Docker's default root has (and Kiln's root and the host's). */
#define KNOWN                                                                                                   \
    (BIT(CAP_CHOWN) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_FOWNER) | BIT(CAP_FSETID) | BIT(CAP_KILL) |              \
     BIT(CAP_SETGID) | BIT(CAP_SETUID) | BIT(CAP_SETPCAP) | BIT(CAP_NET_BIND_SERVICE) | BIT(CAP_NET_RAW) |     \
     BIT(CAP_SYS_CHROOT) | BIT(CAP_MKNOD) | BIT(CAP_AUDIT_WRITE) | BIT(CAP_SETFCAP))
#define LAST_CAP 40

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_RAISE 2
#define PR_CAP_AMBIENT_LOWER 3
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

static char dir[64];
static char self_copy[128], suid_root[128], sgid_file[128], sgid_noexec[128], nosuid_copy[128];

struct caps {
    uint64_t eff, prm, inh;
};

static long capget_v(uint32_t version, int pid, struct __user_cap_data_struct *d)
{
    struct __user_cap_header_struct h = { version, pid };
    return syscall(SYS_capget, &h, d);
}

static struct caps get_caps(void)
{
    struct __user_cap_data_struct d[2] = { 0 };
    struct caps c = { 0, 0, 0 };
    if (capget_v(_LINUX_CAPABILITY_VERSION_3, 0, d) == 0) {
        c.eff = d[0].effective | (uint64_t)d[1].effective << 32;
        c.prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
        c.inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
    }
    return c;
}

static long set_caps(uint64_t eff, uint64_t prm, uint64_t inh)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2] = {
        { (uint32_t)eff, (uint32_t)prm, (uint32_t)inh },
        { (uint32_t)(eff >> 32), (uint32_t)(prm >> 32), (uint32_t)(inh >> 32) },
    };
    return syscall(SYS_capset, &h, d);
}

static uint64_t bounding(void)
{
    uint64_t b = 0;
    for (int i = 0; i <= LAST_CAP; i++)
        if (prctl(PR_CAPBSET_READ, i, 0, 0, 0) == 1)
            b |= BIT(i);
    return b;
}

static uint64_t ambient(void)
{
    uint64_t a = 0;
    for (int i = 0; i <= LAST_CAP; i++)
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, i, 0, 0) == 1)
            a |= BIT(i);
    return a;
}

/* The capability sets, as the known part and whether anything else is there. */
static void show_caps(const char *what)
{
    struct caps c = get_caps();
    uint64_t b = bounding(), a = ambient();
    printf("%s: eff %llx prm %llx inh %llx bnd %llx amb %llx%s\n", what, (unsigned long long)(c.eff & KNOWN),
           (unsigned long long)(c.prm & KNOWN), (unsigned long long)(c.inh & KNOWN),
           (unsigned long long)(b & KNOWN), (unsigned long long)(a & KNOWN),
           ((c.eff | c.prm | c.inh | b | a) & ~KNOWN) ? " (and others)" : "");
}

static void show_ids(const char *what)
{
    uid_t r, e, s;
    gid_t gr, ge, gs;
    getresuid(&r, &e, &s);
    getresgid(&gr, &ge, &gs);
    int fu = setfsuid(-1), fg = setfsgid(-1);
    printf("%s: uid %u %u %u %d gid %u %u %u %d\n", what, r, e, s, fu, gr, ge, gs, fg);
}

/* A child's first step: only KNOWN capabilities, in every set that has any. */
static void normalize(void)
{
    for (int i = 0; i <= LAST_CAP; i++)
        if (!(KNOWN & BIT(i)))
            prctl(PR_CAPBSET_DROP, i, 0, 0, 0);
    struct caps c = get_caps();
    set_caps(c.eff & KNOWN, c.prm & KNOWN, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    setgroups(0, NULL);
}

/* Runs fn in a normalized child; the child's failures count in its exit code. */
static void in_child(const char *what, int (*fn)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_checks = t_failed = 0;
        normalize();
        int rc = fn();
        _exit(rc ? rc : t_failed ? 1 : 0);
    }
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s (child %s)", what, status_str(st));
}

static int t_initial(void)
{
    show_ids("initial ids");
    show_caps("initial caps");
    struct caps c = get_caps();
    check(c.eff == KNOWN && c.prm == KNOWN && c.inh == 0, "root: effective == permitted == KNOWN");
    check(geteuid() == 0 && getegid() == 0, "geteuid() == getegid() == 0");
    check(prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) == 0, "securebits 0");
    check(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 0, "keepcaps 0");
    check(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0, "no_new_privs 0");
    check(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "dumpable 1");
    check(prctl(PR_CAPBSET_READ, LAST_CAP, 0, 0, 0) == 0, "PR_CAPBSET_READ(last) after the drop");
    EXPECT_ERR(EINVAL, "PR_CAPBSET_READ(41)", prctl(PR_CAPBSET_READ, LAST_CAP + 1, 0, 0, 0));
    EXPECT_ERR(EINVAL, "PR_CAPBSET_READ(-1)", prctl(PR_CAPBSET_READ, -1L, 0, 0, 0));
    return 0;
}

static int t_setuid(void)
{
    check(setuid(1000) == 0, "setuid(1000) as root");
    show_ids("after setuid(1000)");
    show_caps("caps after setuid(1000)");
    EXPECT_ERR(EPERM, "setuid(0) after dropping root", setuid(0));
    EXPECT_ERR(EINVAL, "raw setuid(-1)", syscall(SYS_setuid, -1));
    check(setuid(1000) == 0, "setuid(own uid) unprivileged");
    EXPECT_ERR(EPERM, "setgid(5) unprivileged", setgid(5));
    check(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0, "dumpable 0 after the effective uid changed");
    check(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0 && prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1, "PR_SET_DUMPABLE 1");
    EXPECT_ERR(EINVAL, "PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
    return 0;
}

static int t_saved_ids(void)
{
    check(setresuid(1000, 2000, 3000) == 0, "setresuid(1000, 2000, 3000) as root");
    show_ids("res 1000 2000 3000");
    show_caps("caps with no uid 0");
    check(setuid(3000) == 0, "setuid(saved uid) unprivileged");
    show_ids("after setuid(3000)");
    EXPECT_ERR(EPERM, "setuid(2000) (the old effective uid) unprivileged", setuid(2000));
    check(setresuid(-1, 1000, -1) == 0, "setresuid(-1, real, -1)");
    EXPECT_ERR(EPERM, "setresuid(-1, 4000, -1)", setresuid(-1, 4000, -1));
    EXPECT_ERR(EPERM, "setresuid(0, -1, -1)", setresuid(0, -1, -1));
    check(setresuid(3000, 3000, 1000) == 0, "setresuid permuting own ids");
    show_ids("res 3000 3000 1000");
    check(setreuid(-1, 1000) == 0, "setreuid(-1, saved) unprivileged");
    show_ids("after setreuid(-1, 1000)");
    check(setreuid(1000, -1) == 0, "setreuid(effective, -1): saved follows effective");
    show_ids("after setreuid(1000, -1)");
    EXPECT_ERR(EPERM, "setreuid(3000, -1) (only saved) unprivileged", setreuid(3000, -1));
    EXPECT_ERR(EPERM, "setreuid(-1, 5) unprivileged", setreuid(-1, 5));
    return 0;
}

static int t_reuid_root(void)
{
    check(setreuid(1000, 2000) == 0, "setreuid(1000, 2000) as root");
    show_ids("after setreuid(1000, 2000)");
    return 0;
}

static int t_reuid_keep_saved(void)
{
    check(setreuid(-1, 0) == 0, "setreuid(-1, 0) as root (euid == old ruid)");
    check(setreuid(-1, 500) == 0, "setreuid(-1, 500): saved follows");
    show_ids("after setreuid(-1, 500)");
    return 0;
}

static int t_seteuid(void)
{
    check(seteuid(1000) == 0, "seteuid(1000) as root");
    show_ids("after seteuid(1000)");
    show_caps("caps after seteuid(1000)");
    check(geteuid() == 1000 && getuid() == 0, "geteuid() 1000, getuid() 0");
    check(seteuid(0) == 0, "seteuid(0) back (saved uid 0)");
    show_caps("caps after seteuid(0)");
    check(setresuid(-1, -1, -1) == 0, "setresuid(-1, -1, -1)");
    return 0;
}

static int t_gids(void)
{
    check(setgid(50) == 0, "setgid(50) as root");
    show_ids("after setgid(50)");
    check(setregid(60, 70) == 0, "setregid(60, 70) as root");
    show_ids("after setregid(60, 70)");
    check(setresgid(1, 2, 3) == 0, "setresgid(1, 2, 3) as root");
    check(setresuid(1000, 1000, 1000) == 0, "drop to uid 1000");
    EXPECT_ERR(EPERM, "setgid(9) unprivileged", setgid(9));
    check(setgid(3) == 0, "setgid(saved gid) unprivileged");
    show_ids("after setgid(3)");
    EXPECT_ERR(EPERM, "setresgid(-1, 9, -1) unprivileged", setresgid(-1, 9, -1));
    EXPECT_ERR(EPERM, "setregid(9, -1) unprivileged", setregid(9, -1));
    check(setregid(-1, 1) == 0, "setregid(-1, real gid) unprivileged");
    EXPECT_ERR(EINVAL, "raw setgid(-1)", syscall(SYS_setgid, -1));
    int old = setfsgid(9);
    printf("setfsgid(9) unprivileged returns %d, fsgid now %d\n", old, setfsgid(-1));
    old = setfsgid(3);
    printf("setfsgid(3) returns %d, fsgid now %d\n", old, setfsgid(-1));
    EXPECT_ERR(EPERM, "setgroups unprivileged", setgroups(0, NULL));
    return 0;
}

static int t_fsuid(void)
{
    printf("setfsuid(1000) returns %d\n", setfsuid(1000));
    show_ids("after setfsuid(1000)");
    show_caps("caps with fsuid 1000");
    printf("setfsuid(0) returns %d\n", setfsuid(0));
    show_caps("caps with fsuid 0 again");
    check(setfsuid(5) == 0 && syscall(SYS_setresuid, -1, -1, -1) == 0 && setfsuid(-1) == 5,
          "a setresuid that changes nothing keeps fsuid");
    check(syscall(SYS_setresuid, -1, 0, -1) == 0 && setfsuid(-1) == 0, "setresuid naming euid resets fsuid");
    check(setresuid(1000, 1000, 1000) == 0, "drop to uid 1000");
    int old = setfsuid(0);
    printf("setfsuid(0) unprivileged returns %d, fsuid now %d\n", old, setfsuid(-1));
    check(setfsuid(-1) == 1000, "setfsuid(-1) only asks");
    return 0;
}

static int t_groups(void)
{
    gid_t set[] = { 5, 3, 1, 3 }, got[8];
    check(setgroups(4, set) == 0, "setgroups({5, 3, 1, 3})");
    int n = getgroups(8, got);
    printf("getgroups: %d:", n);
    for (int i = 0; i < n; i++)
        printf(" %u", got[i]);
    printf("\n");
    check(getgroups(0, NULL) == 4, "getgroups(0, NULL) counts");
    EXPECT_ERR(EINVAL, "getgroups(2) too small", getgroups(2, got));
    EXPECT_ERR(EINVAL, "getgroups(-1)", syscall(SYS_getgroups, -1, got));
    EXPECT_ERR(EFAULT, "getgroups(bad buffer)", syscall(SYS_getgroups, 4, BAD_PTR));
    gid_t bad[] = { 7, (gid_t)-1 };
    EXPECT_ERR(EINVAL, "setgroups with gid -1", setgroups(2, bad));
    EXPECT_ERR(EINVAL, "setgroups(65537)", syscall(SYS_setgroups, 65537, set));
    EXPECT_ERR(EINVAL, "setgroups(-1)", syscall(SYS_setgroups, -1, set));
    EXPECT_ERR(EFAULT, "setgroups(bad buffer)", syscall(SYS_setgroups, 2, BAD_PTR));
    check(getgroups(0, NULL) == 4, "failed setgroups change nothing");
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    buf[len > 0 ? len : 0] = 0;
    char *g = strstr(buf, "\nGroups:");
    char *end = g ? strchr(g + 1, '\n') : NULL;
    if (g && end) {
        *end = 0;
        printf("status%s|\n", g);
    }
    check(setgroups(0, NULL) == 0 && getgroups(0, NULL) == 0, "setgroups(0) empties the list");
    check(setresuid(1000, 1000, 1000) == 0, "drop to uid 1000");
    EXPECT_ERR(EPERM, "setgroups(0) unprivileged", setgroups(0, NULL));
    return 0;
}

static void *thread_raw_setuid(void *arg)
{
    (void)arg;
    long r = syscall(SYS_setuid, 1000);
    printf("thread: raw setuid(1000) = %ld, thread getuid %ld\n", r, syscall(SYS_getuid));
    return NULL;
}

static pthread_barrier_t bar;

static void *thread_waits(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    printf("thread: after libc setuid in main, getuid %ld\n", syscall(SYS_getuid));
    return NULL;
}

static int t_threads(void)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_raw_setuid, NULL);
    pthread_join(t, NULL);
    printf("main: getuid %ld (credentials are per thread)\n", syscall(SYS_getuid));
    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&t, NULL, thread_waits, NULL);
    pthread_barrier_wait(&bar);
    check(setuid(2000) == 0, "libc setuid(2000) with two threads");
    pthread_barrier_wait(&bar);
    pthread_join(t, NULL);
    return 0;
}

static int t_capset(void)
{
    struct __user_cap_data_struct d[2] = { 0 };
    uint64_t chown_ = BIT(CAP_CHOWN), kill_ = BIT(CAP_KILL);
    EXPECT_ERR(EPERM, "capset: effective beyond permitted", set_caps(chown_ | kill_, chown_, 0));
    check(set_caps(chown_, chown_ | kill_, kill_) == 0, "capset: lower to {chown, kill}");
    show_caps("after capset");
    EXPECT_ERR(EPERM, "capset: permitted grows", set_caps(chown_, KNOWN, 0));
    check(set_caps(0, chown_, chown_ | kill_) == 0, "capset: inheritable within old permitted");
    EXPECT_ERR(EPERM, "capset: inheritable beyond permitted without CAP_SETPCAP",
               set_caps(0, chown_, chown_ | BIT(CAP_SETUID)));
    struct __user_cap_header_struct h = { 0x12345678, 0 };
    EXPECT_ERR(EINVAL, "capget: bad version", syscall(SYS_capget, &h, d));
    printf("capget wrote back version %#x\n", h.version);
    h.version = 0x12345678;
    check(syscall(SYS_capget, &h, NULL) == 0, "capget(bad version, NULL) asks the version");
    printf("capget(NULL) wrote back version %#x\n", h.version);
    h.version = _LINUX_CAPABILITY_VERSION_3;
    check(syscall(SYS_capget, &h, NULL) == 0, "capget(v3, NULL)");
    EXPECT_ERR(EFAULT, "capget: bad header", syscall(SYS_capget, BAD_PTR, d));
    EXPECT_ERR(EFAULT, "capget: bad data", syscall(SYS_capget, &h, BAD_PTR));
    h.pid = -1;
    EXPECT_ERR(EINVAL, "capget: pid -1", syscall(SYS_capget, &h, d));
    h.pid = 0x3fffffff;
    EXPECT_ERR(ESRCH, "capget: no such pid", syscall(SYS_capget, &h, d));
    h.pid = getppid();
    check(syscall(SYS_capget, &h, d) == 0, "capget of the parent");
    h.pid = getppid();
    EXPECT_ERR(EPERM, "capset of another process", syscall(SYS_capset, &h, d));
    h.pid = getpid();
    memset(d, 0xff, sizeof d);
    check(capget_v(_LINUX_CAPABILITY_VERSION_1, getpid(), d) == 0 && d[1].effective == 0xffffffff,
          "capget v1 (own pid) writes one word");
    printf("v1: eff %x prm %x inh %x\n", d[0].effective, d[0].permitted, d[0].inheritable);
    check(capget_v(_LINUX_CAPABILITY_VERSION_2, 0, d) == 0, "capget v2");
    printf("v2: eff %x/%x prm %x/%x\n", d[0].effective, d[1].effective, d[0].permitted, d[1].permitted);
    struct __user_cap_header_struct h1 = { _LINUX_CAPABILITY_VERSION_1, 0 };
    struct __user_cap_data_struct one = { (uint32_t)chown_, (uint32_t)chown_, 0 };
    check(syscall(SYS_capset, &h1, &one) == 0, "capset v1");
    show_caps("after capset v1");
    EXPECT_ERR(EFAULT, "capset: bad data", syscall(SYS_capset, &h1, BAD_PTR));
    return 0;
}

static int t_bounding(void)
{
    check(prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0) == 0, "PR_CAPBSET_DROP(CAP_NET_RAW)");
    check(prctl(PR_CAPBSET_READ, CAP_NET_RAW, 0, 0, 0) == 0, "dropped from the bounding set");
    EXPECT_ERR(EINVAL, "PR_CAPBSET_DROP(41)", prctl(PR_CAPBSET_DROP, LAST_CAP + 1, 0, 0, 0));
    show_caps("after dropping NET_RAW from the bounding set");
    EXPECT_ERR(EPERM, "capset: inheritable outside the bounding set",
               set_caps(KNOWN, KNOWN, BIT(CAP_NET_RAW)));
    check(set_caps(KNOWN & ~BIT(CAP_SETPCAP), KNOWN, 0) == 0, "drop CAP_SETPCAP from effective");
    EXPECT_ERR(EPERM, "PR_CAPBSET_DROP without CAP_SETPCAP", prctl(PR_CAPBSET_DROP, CAP_CHOWN, 0, 0, 0));
    EXPECT_ERR(EPERM, "PR_SET_SECUREBITS without CAP_SETPCAP", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
    return 0;
}

static int t_keepcaps(void)
{
    EXPECT_ERR(EINVAL, "PR_SET_KEEPCAPS 2", prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0));
    check(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0 && prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 1, "PR_SET_KEEPCAPS 1");
    printf("securebits %d\n", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
    check(setresuid(1000, 1000, 1000) == 0, "setresuid(1000) with keepcaps");
    show_caps("caps kept");
    check(set_caps(BIT(CAP_CHOWN), KNOWN, 0) == 0, "raise CAP_CHOWN into the effective set");
    check(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == 1, "keepcaps still set");
    return 0;
}

static int t_securebits(void)
{
    check(prctl(PR_SET_SECUREBITS, 1 << 2, 0, 0, 0) == 0, "PR_SET_SECUREBITS(NO_SETUID_FIXUP)");
    check(setuid(1000) == 0, "setuid(1000) without fixup");
    show_caps("caps after setuid with NO_SETUID_FIXUP");
    printf("setfsuid(0) returns %d\n", setfsuid(0));
    show_caps("caps after setfsuid(0) with NO_SETUID_FIXUP");
    check(prctl(PR_SET_SECUREBITS, (1 << 4) | (1 << 5) | (1 << 2), 0, 0, 0) == 0, "lock KEEP_CAPS on");
    EXPECT_ERR(EPERM, "PR_SET_KEEPCAPS 0 when locked", prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
    EXPECT_ERR(EPERM, "clearing a locked bit", prctl(PR_SET_SECUREBITS, (1 << 5) | (1 << 2), 0, 0, 0));
    EXPECT_ERR(EPERM, "unlocking", prctl(PR_SET_SECUREBITS, (1 << 4) | (1 << 2), 0, 0, 0));
    EXPECT_ERR(EPERM, "an unknown bit", prctl(PR_SET_SECUREBITS, (1 << 4) | (1 << 5) | (1 << 2) | (1 << 12), 0, 0, 0));
    printf("securebits %#x\n", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
    return 0;
}

static int t_ambient(void)
{
    uint64_t raw = BIT(CAP_NET_RAW);
    EXPECT_ERR(EPERM, "ambient raise: not inheritable", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0));
    check(set_caps(KNOWN, KNOWN, raw) == 0, "NET_RAW inheritable");
    check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) == 0, "ambient raise NET_RAW");
    check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_RAW, 0, 0) == 1, "ambient IS_SET");
    EXPECT_ERR(EINVAL, "ambient IS_SET(41)", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, LAST_CAP + 1, 0, 0));
    EXPECT_ERR(EINVAL, "ambient with arg4", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_RAW, 1, 0));
    EXPECT_ERR(EINVAL, "ambient CLEAR_ALL with arg3", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0));
    EXPECT_ERR(EINVAL, "ambient op 9", prctl(PR_CAP_AMBIENT, 9, CAP_NET_RAW, 0, 0));
    show_caps("with NET_RAW ambient");
    check(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0 && setresuid(1000, 1000, 1000) == 0, "keepcaps, then uid 1000");
    show_caps("ambient after leaving root with keepcaps");
    check(set_caps(0, raw | BIT(CAP_CHOWN), raw) == 0, "permitted {NET_RAW, CHOWN}, inheritable NET_RAW");
    check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) == 0, "ambient raise again");
    fflush(stdout);
    execl(self_copy, "creds", "--report", "exec with ambient NET_RAW as uid 1000", (char *)NULL);
    printf("FAIL: exec: %s\n", errname(errno));
    return 1;
}

static int t_ambient_lost(void)
{
    check(set_caps(KNOWN, KNOWN, BIT(CAP_NET_RAW)) == 0 &&
              prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) == 0,
          "ambient NET_RAW");
    check(set_caps(KNOWN, KNOWN, 0) == 0 && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_RAW, 0, 0) == 0,
          "leaving the inheritable set clears it from ambient");
    check(set_caps(KNOWN, KNOWN, BIT(CAP_NET_RAW)) == 0 &&
              prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0) == 0 && setuid(1000) == 0 &&
              prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_RAW, 0, 0) == 0,
          "leaving uid 0 without keepcaps clears ambient");
    check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_NET_RAW, 0, 0) == 0, "ambient LOWER");
    return 0;
}

static int t_exec_root(void)
{
    check(set_caps(0, KNOWN, 0) == 0, "empty effective set");
    fflush(stdout);
    execl(self_copy, "creds", "--report", "exec as root", (char *)NULL);
    return 1;
}

static int t_exec_suid(void)
{
    check(setgroups(0, NULL) == 0 && setresgid(1000, 1000, 1000) == 0 && setresuid(1000, 1000, 1000) == 0,
          "become 1000:1000");
    fflush(stdout);
    execl(suid_root, "creds", "--report", "exec of set-user-ID root as 1000", (char *)NULL);
    return 1;
}

static int t_exec_sgid(void)
{
    check(setresgid(1000, 1000, 1000) == 0 && setresuid(1000, 1000, 1000) == 0, "become 1000:1000");
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        execl(sgid_noexec, "creds", "--report", "exec of set-group-ID without group execute", (char *)NULL);
        _exit(1);
    }
    int st;
    wait_for(p, &st, 0);
    execl(sgid_file, "creds", "--report", "exec of set-group-ID 42 as 1000", (char *)NULL);
    return 1;
}

static int t_exec_nosuid(void)
{
    check(setresuid(1000, 1000, 1000) == 0, "become 1000");
    fflush(stdout);
    execl(nosuid_copy, "creds", "--report", "exec of set-user-ID root on a nosuid mount", (char *)NULL);
    return 1;
}

static int t_exec_nnp(void)
{
    EXPECT_ERR(EINVAL, "PR_SET_NO_NEW_PRIVS 2", prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0));
    EXPECT_ERR(EINVAL, "PR_SET_NO_NEW_PRIVS with arg3", prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0));
    EXPECT_ERR(EINVAL, "PR_GET_NO_NEW_PRIVS with arg2", prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0));
    check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS");
    check(setresuid(1000, 1000, 1000) == 0, "become 1000");
    fflush(stdout);
    execl(suid_root, "creds", "--report", "exec of set-user-ID root with no_new_privs", (char *)NULL);
    return 1;
}

static int t_exec_euid_root(void)
{
    check(setresuid(1000, 0, 0) == 0, "real uid 1000, effective 0");
    fflush(stdout);
    execl(self_copy, "creds", "--report", "exec with real 1000, effective 0", (char *)NULL);
    return 1;
}

static int report(const char *label)
{
    show_ids(label);
    show_caps(label);
    printf("%s: AT_SECURE %lu AT_UID %lu AT_EUID %lu AT_GID %lu AT_EGID %lu nnp %d dumpable %d keepcaps %d\n",
           label, getauxval(AT_SECURE), getauxval(AT_UID), getauxval(AT_EUID), getauxval(AT_GID),
           getauxval(AT_EGID), prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
           prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
    return 0;
}

/* A process with the given ids that waits to be signalled. */
static pid_t sleeper(uid_t r, uid_t e, uid_t s, int *ready)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (setresuid(r, e, s) != 0)
            _exit(2);
        write(p[1], "x", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    *ready = read(p[0], &c, 1) == 1;
    close(p[0]);
    return pid;
}

static int t_kill(void)
{
    int ok1, ok2;
    pid_t other = sleeper(2000, 2000, 2000, &ok1);
    pid_t saved = sleeper(3000, 3000, 1000, &ok2);
    check(ok1 && ok2, "two sleepers with other uids");
    check(kill(other, 0) == 0, "root: kill(uid 2000, 0) with CAP_KILL");
    pid_t me = fork();
    if (me == 0) {
        t_failed = 0;
        if (setresuid(1000, 1000, 1000) != 0)
            _exit(3);
        EXPECT_ERR(EPERM, "uid 1000: kill(uid 2000, SIGTERM)", kill(other, SIGTERM));
        EXPECT_ERR(EPERM, "uid 1000: kill(uid 2000, 0)", kill(other, 0));
        EXPECT_ERR(EPERM, "uid 1000: tkill(uid 2000)", syscall(SYS_tkill, other, 0));
        EXPECT_ERR(EPERM, "uid 1000: tgkill(uid 2000)", syscall(SYS_tgkill, other, other, SIGUSR1));
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_code = SI_QUEUE;
        EXPECT_ERR(EPERM, "uid 1000: rt_sigqueueinfo(uid 2000)", syscall(SYS_rt_sigqueueinfo, other, SIGUSR1, &si));
        check(kill(saved, 0) == 0, "uid 1000: kill(saved uid 1000, 0)");
        check(kill(other, SIGCONT) == 0, "uid 1000: SIGCONT within the session");
        check(kill(-1, 0) == 0, "uid 1000: kill(-1, 0) (refusals do not count)");
        check(kill(getpid(), 0) == 0, "uid 1000: kill(self, 0)");
        EXPECT_ERR(ESRCH, "uid 1000: kill(no such pid)", kill(0x3fffffff, 0));
        _exit(t_failed ? 1 : 0);
    }
    int st;
    wait_for(me, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unprivileged kill checks (%s)", status_str(st));
    kill(other, SIGKILL);
    kill(saved, SIGKILL);
    wait_for(other, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "uid 2000 sleeper killed by root, not by uid 1000");
    wait_for(saved, &st, 0);
    return 0;
}

static int t_waitid_uid(void)
{
    pid_t p = fork();
    if (p == 0) {
        setuid(1234);
        _exit(5);
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    check(waitid(P_PID, p, &si, WEXITED) == 0, "waitid");
    printf("waitid: si_uid %u si_status %d\n", si.si_uid, si.si_status);
    return 0;
}

static int t_privileged_calls(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    struct rlimit lower = { 32, 64 };
    check(setrlimit(RLIMIT_NOFILE, &lower) == 0, "lower the NOFILE hard limit");
    struct rlimit raise = { 32, 128 };
    EXPECT_ERR(EPERM, "raising a hard limit without CAP_SYS_RESOURCE", setrlimit(RLIMIT_NOFILE, &raise));
    pid_t parent = getppid();
    check(prlimit(parent, RLIMIT_NOFILE, NULL, &rl) == 0, "root: prlimit of the (root) parent");
    cpu_set_t set;
    CPU_ZERO(&set);
    check(sched_getaffinity(parent, sizeof set, &set) == 0, "sched_getaffinity(parent)");
    check(setresuid(1000, 1000, 1000) == 0, "become 1000");
    EXPECT_ERR(EPERM, "uid 1000: prlimit of a root process", prlimit(parent, RLIMIT_NOFILE, NULL, &rl));
    check(prlimit(getpid(), RLIMIT_NOFILE, NULL, &rl) == 0, "uid 1000: prlimit of itself");
    EXPECT_ERR(EPERM, "uid 1000: sched_setaffinity of a root process", sched_setaffinity(parent, sizeof set, &set));
    check(sched_getaffinity(parent, sizeof set, &set) == 0, "uid 1000: sched_getaffinity of a root process");
    EXPECT_ERR(EPERM, "uid 1000: mount", mount("none", dir, "tmpfs", 0, NULL));
    EXPECT_ERR(EPERM, "uid 1000: umount2", umount2(dir, 0));
    EXPECT_ERR(ENOENT, "uid 1000: umount2(missing path) looks up first", umount2("/nonexistent/x", 0));
    EXPECT_ERR(EINVAL, "uid 1000: umount2(bad flags)", umount2(dir, 0x100));
    /* A bad magic: without CAP_SYS_BOOT this is EPERM before the magic is looked at. */
    EXPECT_ERR(EPERM, "uid 1000: reboot", syscall(SYS_reboot, 1, 2, 0, 0));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    EXPECT_ERR(EPERM, "uid 1000: clock_settime(CLOCK_REALTIME)", clock_settime(CLOCK_REALTIME, &now));
    EXPECT_ERR(EPERM, "uid 1000: capset raising permitted", set_caps(0, BIT(CAP_CHOWN), 0));
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    check(errno == 0, "uid 1000: getpriority");
    EXPECT_ERR(EPERM, "uid 1000: setpriority of a root process", setpriority(PRIO_PROCESS, parent, nice));
    check(setpriority(PRIO_PROCESS, 0, nice + 1) == 0, "uid 1000: lowering its own priority");
    EXPECT_ERR(EACCES, "uid 1000: raising it back (RLIMIT_NICE 0)", setpriority(PRIO_PROCESS, 0, nice));
    struct sched_param sp = { .sched_priority = 1 };
    EXPECT_ERR(EPERM, "uid 1000: SCHED_FIFO (RLIMIT_RTPRIO 0)", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp));
    /* CAP_SYS_ADMIN is asked before the length is looked at. */
    EXPECT_ERR(EPERM, "uid 1000: sethostname", syscall(SYS_sethostname, "kiln", 4));
    EXPECT_ERR(EPERM, "uid 1000: sethostname(len 1000)", syscall(SYS_sethostname, "kiln", 1000));
    EXPECT_ERR(EPERM, "uid 1000: setdomainname", syscall(SYS_setdomainname, "kiln", 4));
    EXPECT_ERR(EACCES, "uid 1000: open /proc/sys/kernel/hostname for writing",
               open("/proc/sys/kernel/hostname", O_WRONLY));
    /* settimeofday asks CAP_SYS_TIME even with nothing to set, after
     * checking the time and before the time zone's range. */
    struct timeval bad_tv = { 0, 2000000 };
    struct timezone far_tz = { 16 * 60, 0 };
    EXPECT_ERR(EPERM, "uid 1000: settimeofday(NULL, NULL)", syscall(SYS_settimeofday, NULL, NULL));
    EXPECT_ERR(EINVAL, "uid 1000: settimeofday(bad usec)", syscall(SYS_settimeofday, &bad_tv, NULL));
    EXPECT_ERR(EPERM, "uid 1000: settimeofday(NULL, tz out of range)", syscall(SYS_settimeofday, NULL, &far_tz));
    /* clone3's set_tid needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE,
     * asked before whether the id is free. */
    uint64_t ca[11] = { 0 };
    pid_t own = getpid();
    ca[4] = SIGCHLD;
    ca[8] = (uint64_t)(uintptr_t)&own;
    ca[9] = 1;
    EXPECT_ERR(EPERM, "uid 1000: clone3 with set_tid", syscall(SYS_clone3, ca, sizeof ca));
    return 0;
}

/* RLIMIT_MEMLOCK binds a caller without CAP_IPC_LOCK (a normalized
 * root has none either). */
static int t_memlock(void)
{
    char *p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct rlimit rl = { 2 * 4096, 2 * 4096 };
    check(p != MAP_FAILED && setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "RLIMIT_MEMLOCK two pages");
    check(setresuid(1000, 1000, 1000) == 0, "become 1000");
    EXPECT_ERR(ENOMEM, "uid 1000: mlock of three pages", mlock(p, 3 * 4096));
    EXPECT_OK("uid 1000: mlock of two pages", mlock(p, 2 * 4096));
    EXPECT_ERR(ENOMEM, "uid 1000: one page more", mlock(p + 2 * 4096, 4096));
    EXPECT_OK("uid 1000: munlock", munlock(p, 2 * 4096));
    rl.rlim_cur = 0;
    check(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "RLIMIT_MEMLOCK 0");
    EXPECT_ERR(EPERM, "uid 1000: mlock with RLIMIT_MEMLOCK 0", mlock(p, 4096));
    EXPECT_ERR(EPERM, "uid 1000: mlockall with RLIMIT_MEMLOCK 0", mlockall(MCL_CURRENT));
    return 0;
}

/* PRIO_USER names the processes of a real uid (an uncommon one here, so
 * no other process on the host shares it). */
static int t_prio_user(void)
{
    check(setresuid(43210, 43210, 43210) == 0, "become 43210");
    errno = 0;
    int nice = getpriority(PRIO_USER, 0);
    check(errno == 0 && nice == getpriority(PRIO_PROCESS, 0), "getpriority(PRIO_USER, 0) is its own");
    check(setpriority(PRIO_USER, 0, nice + 1) == 0, "setpriority(PRIO_USER, 0) lowers its own priority");
    check(getpriority(PRIO_PROCESS, 0) == nice + 1, "... the process's nice moved");
    errno = 0;
    check(getpriority(PRIO_USER, 43210) == nice + 1 && errno == 0, "getpriority(PRIO_USER, 43210)");
    EXPECT_ERR(ESRCH, "getpriority(PRIO_USER, uid without processes)", getpriority(PRIO_USER, 43211));
    return 0;
}

static int t_nice_without_cap(void)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    check(errno == 0 && setpriority(PRIO_PROCESS, 0, nice + 1) == 0, "root: lower its priority");
    EXPECT_ERR(EACCES, "root without CAP_SYS_NICE: raise it back", setpriority(PRIO_PROCESS, 0, nice));
    struct rlimit rl;
    check(getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur == 0 && rl.rlim_max == 0, "RLIMIT_NICE 0");
    check(getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur == 0 && rl.rlim_max == 0, "RLIMIT_RTPRIO 0");
    return 0;
}

static int t_status(void)
{
    check(setresgid(7, 8, 9) == 0 && setresuid(1000, 2000, 3000) == 0, "setresgid(7,8,9), setresuid(1000,2000,3000)");
    setfsuid(1000);
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char *keys[] = { "\nUid:", "\nGid:", "\nNoNewPrivs:" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *k = strstr(buf, keys[i]);
        char *end = k ? strchr(k + 1, '\n') : NULL;
        if (k && end) {
            printf("status %.*s\n", (int)(end - k - 1), k + 1);
        } else {
            check(0, "status has %s", keys[i] + 1);
        }
    }
    struct stat st;
    check(stat("/proc/self", &st) == 0, "stat /proc/self");
    printf("/proc/self owner %u:%u (a 0555 directory: effective ids)\n", st.st_uid, st.st_gid);
    check(stat("/proc/self/status", &st) == 0, "stat /proc/self/status");
    printf("/proc/self/status owner %u:%u (not dumpable: root)\n", st.st_uid, st.st_gid);
    check(stat("/proc/self/fd", &st) == 0, "stat /proc/self/fd");
    printf("/proc/self/fd owner %u:%u mode %o\n", st.st_uid, st.st_gid, st.st_mode);
    int fdd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
    check(fdd >= 0, "the process still opens its own root-owned /proc/self/fd");
    close(fdd);
    EXPECT_ERR(EACCES, "but not init's", open("/proc/1/fd", O_RDONLY | O_DIRECTORY));
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    check(stat("/proc/self/status", &st) == 0, "stat /proc/self/status");
    printf("/proc/self/status owner %u:%u (dumpable: effective ids)\n", st.st_uid, st.st_gid);
    return 0;
}

/* The pagemap entry of `addr` read through `fd`. */
static uint64_t pagemap_entry(int fd, const volatile void *addr)
{
    uint64_t e = 0;
    if (pread(fd, &e, sizeof e, (off_t)((uintptr_t)addr / 4096 * 8)) != sizeof e)
        return ~0ULL;
    return e;
}

#define PM_PRESENT (1ULL << 63)
#define PM_PFN ((1ULL << 55) - 1)

static volatile char touched[4096] __attribute__((aligned(4096)));

/* pagemap shows frame numbers only to an opener with CAP_SYS_ADMIN, and
 * is the process's own only while it is dumpable (0400). */
static int t_pagemap(void)
{
    touched[0] = 1;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t e = pagemap_entry(fd, touched);
    check(fd >= 0 && e != ~0ULL, "root: read /proc/self/pagemap");
    printf("root without CAP_SYS_ADMIN: present %d, frame number %s\n", !!(e & PM_PRESENT),
           (e & PM_PFN) ? "shown" : "0");
    check(setresuid(1000, 1000, 1000) == 0, "become 1000");
    e = pagemap_entry(fd, touched);
    printf("uid 1000, through root's descriptor: present %d, frame number %s\n", !!(e & PM_PRESENT),
           (e & PM_PFN) ? "shown" : "0");
    close(fd);
    EXPECT_ERR(EACCES, "uid 1000, not dumpable: open /proc/self/pagemap", open("/proc/self/pagemap", O_RDONLY));
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    fd = open("/proc/self/pagemap", O_RDONLY);
    e = pagemap_entry(fd, touched);
    check(fd >= 0 && e != ~0ULL, "uid 1000, dumpable: read /proc/self/pagemap");
    printf("uid 1000: present %d, frame number %s\n", !!(e & PM_PRESENT), (e & PM_PFN) ? "shown" : "0");
    close(fd);
    return 0;
}

static pid_t status_tid;

static void *thread_changes_ids(void *arg)
{
    (void)arg;
    /* Raw calls: only this thread's credentials change. */
    syscall(SYS_setresgid, 7, 8, 9);
    syscall(SYS_setresuid, 1000, 1001, 1002);
    status_tid = (pid_t)syscall(SYS_gettid);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    return NULL;
}

/* Prints the lines of `path` that start with one of `keys`. */
static void show_status_lines(const char *label, const char *path)
{
    char buf[4096];
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char *keys[] = { "\nUid:", "\nGid:", "\nCapPrm:", "\nCapEff:" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *k = strstr(buf, keys[i]);
        char *end = k ? strchr(k + 1, '\n') : NULL;
        if (k && end)
            printf("%s %.*s\n", label, (int)(end - k - 1), k + 1);
        else
            check(0, "%s has %s", path, keys[i] + 1);
    }
}

/* A thread's status under task/ shows its own credentials, and its
 * directory belongs to its own effective ids. */
static int t_thread_status(void)
{
    pthread_t t;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&t, NULL, thread_changes_ids, NULL);
    pthread_barrier_wait(&bar);
    char path[96];
    show_status_lines("process:", "/proc/self/status");
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)getpid());
    show_status_lines("main thread:", path);
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)status_tid);
    show_status_lines("other thread:", path);
    struct stat st;
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)status_tid);
    check(stat(path, &st) == 0, "stat the other thread's directory");
    printf("other thread's directory owner %u:%u\n", st.st_uid, st.st_gid);
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)getpid());
    check(stat(path, &st) == 0, "stat the main thread's directory");
    printf("main thread's directory owner %u:%u\n", st.st_uid, st.st_gid);
    pthread_barrier_wait(&bar);
    pthread_join(t, NULL);
    return 0;
}

/* Copies this program to `path` with the given owner and mode. */
static int copy_self(const char *path, uid_t uid, gid_t gid, mode_t mode)
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
    if (chown(path, uid, gid) != 0 || chmod(path, mode) != 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    t_init("creds");
    if (argc > 2 && strcmp(argv[1], "--report") == 0)
        return report(argv[2]);
    snprintf(dir, sizeof dir, "/tmp/creds.%d", getpid());
    char mnt[96], nosuid_mnt[96];
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    snprintf(nosuid_mnt, sizeof nosuid_mnt, "%s/nosuid", dir);
    /* Set-id copies live on tmpfs mounts of our own, so the host's /tmp
     * mount options do not matter. */
    check(mkdir(dir, 0755) == 0 && mkdir(mnt, 0755) == 0 && mkdir(nosuid_mnt, 0755) == 0, "scratch directories");
    check(mount("none", mnt, "tmpfs", 0, "mode=0755") == 0, "mount a tmpfs");
    check(mount("none", nosuid_mnt, "tmpfs", MS_NOSUID, "mode=0755") == 0, "mount a nosuid tmpfs");
    snprintf(self_copy, sizeof self_copy, "%s/self", mnt);
    snprintf(suid_root, sizeof suid_root, "%s/suid", mnt);
    snprintf(sgid_file, sizeof sgid_file, "%s/sgid", mnt);
    snprintf(sgid_noexec, sizeof sgid_noexec, "%s/sgidnox", mnt);
    snprintf(nosuid_copy, sizeof nosuid_copy, "%s/suid", nosuid_mnt);
    check(copy_self(self_copy, 0, 0, 0755) == 0 && copy_self(suid_root, 0, 0, 04755) == 0 &&
              copy_self(sgid_file, 0, 42, 02755) == 0 && copy_self(sgid_noexec, 0, 42, 02745) == 0 &&
              copy_self(nosuid_copy, 0, 0, 04755) == 0,
          "set-id copies of this program");

    /* /etc/passwd and /etc/group name the accounts both systems have. */
    struct passwd *pw = getpwnam("root");
    check(pw && pw->pw_uid == 0 && pw->pw_gid == 0, "getpwnam(root): uid 0 gid 0");
    pw = getpwnam("nobody");
    check(pw && pw->pw_uid == 65534, "getpwnam(nobody): uid 65534");
    pw = getpwuid(1);
    check(pw && strcmp(pw->pw_name, "daemon") == 0, "getpwuid(1): daemon");
    struct group *gr = getgrnam("root");
    check(gr && gr->gr_gid == 0, "getgrnam(root): gid 0");
    gr = getgrgid(65534);
    check(gr && strcmp(gr->gr_name, "nogroup") == 0, "getgrgid(65534): nogroup");

    in_child("initial state", t_initial);
    in_child("setuid", t_setuid);
    in_child("saved ids", t_saved_ids);
    in_child("setreuid as root", t_reuid_root);
    in_child("setreuid keeps saved", t_reuid_keep_saved);
    in_child("seteuid", t_seteuid);
    in_child("group ids", t_gids);
    in_child("fsuid", t_fsuid);
    in_child("groups", t_groups);
    in_child("threads", t_threads);
    in_child("capset", t_capset);
    in_child("bounding set", t_bounding);
    in_child("keepcaps", t_keepcaps);
    in_child("securebits", t_securebits);
    in_child("ambient across exec", t_ambient);
    in_child("ambient rules", t_ambient_lost);
    in_child("exec as root", t_exec_root);
    in_child("exec set-user-ID", t_exec_suid);
    in_child("exec set-group-ID", t_exec_sgid);
    in_child("exec on nosuid", t_exec_nosuid);
    in_child("exec with no_new_privs", t_exec_nnp);
    in_child("exec with effective root", t_exec_euid_root);
    in_child("kill permission", t_kill);
    in_child("waitid si_uid", t_waitid_uid);
    in_child("privileged calls", t_privileged_calls);
    in_child("nice without CAP_SYS_NICE", t_nice_without_cap);
    in_child("RLIMIT_MEMLOCK without CAP_IPC_LOCK", t_memlock);
    in_child("PRIO_USER by real uid", t_prio_user);
    in_child("/proc/self/status", t_status);
    in_child("pagemap", t_pagemap);
    in_child("thread status", t_thread_status);

    check(umount2(mnt, 0) == 0 && umount2(nosuid_mnt, 0) == 0, "unmount the scratch mounts");
    rmdir(mnt);
    rmdir(nosuid_mnt);
    check(rmdir(dir) == 0, "scratch directory removed");
    return t_done();
}
