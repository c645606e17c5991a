/*
 * ns: namespaces through unshare, clone and setns.
 *
 * /proc/<pid>/ns links and their inode numbers; UTS (sethostname,
 * setdomainname and /proc/sys/kernel/{hostname,domainname}, per
 * namespace, errnos); mount (a mount made in a new
 * namespace is not seen outside; /proc/self/mounts); PID (the first child
 * is pid 1, getppid 0, a grandchild is 2, kill cannot see outside, a
 * fresh /proc shows only the namespace, NSpid from outside, the
 * namespace's init dying takes the rest with it, no entry after that,
 * setns into a child namespace and back, its init drops a SIGKILL from
 * inside and dies of one from outside, a terminal's TIOCGSID/TIOCGPGRP/
 * TIOCSPGRP and SO_PEERCRED in the namespace's ids); namespace types Kiln may not
 * have (IPC, network, user, time, cgroup): either a real new namespace
 * or Linux's EINVAL for a type it was built without.
 *
 * Every namespace change happens in a child process, so the runner's
 * own namespaces stay as they were. Names and inode numbers differ
 * between machines, so only comparisons are printed.
 */
#include "common.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x80
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

static void ns_link(pid_t pid, const char *name, char *out, size_t n)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, name);
    else
        snprintf(path, sizeof path, "/proc/self/ns/%s", name);
    ssize_t r = readlink(path, out, n - 1);
    out[r < 0 ? 0 : r] = 0;
}

/* Runs f in a forked child; returns its exit status word. */
static int in_child(int (*f)(void))
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(f());
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static long raw_clone(unsigned long flags)
{
    return syscall(SYS_clone, flags, 0, 0, 0, 0);
}

static void test_links(void)
{
    static const char *names[] = {"cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time",
                                  "time_for_children", "user", "uts"};
    DIR *d = opendir("/proc/self/ns");
    check(d != NULL, "opendir(/proc/self/ns)");
    int found = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
            if (strcmp(e->d_name, names[i]) == 0)
                found |= 1 << i;
    }
    if (d)
        closedir(d);
    check(found == (1 << 10) - 1, "/proc/self/ns lists all ten links");
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        char link[64], type[32];
        unsigned long inum = 0;
        ns_link(0, names[i], link, sizeof link);
        int ok = sscanf(link, "%31[a-z]:[%lu]", type, &inum) == 2;
        char want[32];
        snprintf(want, sizeof want, "%s", names[i]);
        char *us = strstr(want, "_for_children");
        if (us)
            *us = 0;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", names[i]);
        struct stat st;
        ok = ok && strcmp(type, want) == 0 && stat(path, &st) == 0 && st.st_ino == inum;
        check(ok, "ns/%s reads %s:[N] and stats as inode N", names[i], want);
    }
    char a[64], b[64];
    ns_link(0, "pid", a, sizeof a);
    ns_link(0, "pid_for_children", b, sizeof b);
    check(strcmp(a, b) == 0, "pid_for_children is our pid namespace");
    ns_link(getppid(), "uts", a, sizeof a);
    ns_link(0, "uts", b, sizeof b);
    check(strcmp(a, b) == 0, "parent and child share a UTS namespace");
    int fd = open("/proc/self/ns/uts", O_RDONLY);
    check(fd >= 0, "open(/proc/self/ns/uts)");
    char fdpath[64], target[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    ssize_t r = readlink(fdpath, target, sizeof target - 1);
    target[r < 0 ? 0 : r] = 0;
    check(strcmp(target, b) == 0, "its descriptor reads as the namespace");
    close(fd);
}

static struct utsname orig;

static int uts_child(void)
{
    int bad = 0;
    char before[64], after[64];
    ns_link(0, "uts", before, sizeof before);
    int keep = open("/proc/self/ns/uts", O_RDONLY);
    if (unshare(CLONE_NEWUTS) != 0)
        return 1;
    ns_link(0, "uts", after, sizeof after);
    if (strcmp(before, after) == 0)
        bad |= 2;
    struct utsname u;
    uname(&u);
    if (strcmp(u.nodename, orig.nodename) != 0)
        bad |= 4; /* the copy starts with the old names */
    if (sethostname("kiln-ns-test", 12) != 0 || setdomainname("ns.example", 10) != 0)
        bad |= 8;
    uname(&u);
    if (strcmp(u.nodename, "kiln-ns-test") != 0 || strcmp(u.domainname, "ns.example") != 0)
        bad |= 16;
    char h[80];
    if (gethostname(h, sizeof h) != 0 || strcmp(h, "kiln-ns-test") != 0)
        bad |= 32;
    int pfd = open("/proc/sys/kernel/hostname", O_RDONLY);
    ssize_t n = pfd >= 0 ? read(pfd, h, sizeof h - 1) : -1;
    h[n < 0 ? 0 : n] = 0;
    if (strcmp(h, "kiln-ns-test\n") != 0)
        bad |= 64;
    close(pfd);
    /* /proc/sys/kernel/{hostname,domainname} are this namespace's too. */
    pfd = open("/proc/sys/kernel/domainname", O_RDONLY);
    n = pfd >= 0 ? read(pfd, h, sizeof h - 1) : -1;
    h[n < 0 ? 0 : n] = 0;
    if (strcmp(h, "ns.example\n") != 0)
        bad |= 2048;
    close(pfd);
    pfd = open("/proc/sys/kernel/hostname", O_WRONLY);
    if (pfd < 0 || write(pfd, "viaproc\n", 8) != 8)
        bad |= 4096;
    close(pfd);
    uname(&u);
    if (strcmp(u.nodename, "viaproc") != 0)
        bad |= 8192;
    /* Back to the old namespace. */
    if (setns(keep, CLONE_NEWNS) != -1 || errno != EINVAL)
        bad |= 128;
    if (setns(keep, CLONE_NEWUTS) != 0)
        bad |= 256;
    uname(&u);
    if (strcmp(u.nodename, orig.nodename) != 0)
        bad |= 512;
    ns_link(0, "uts", after, sizeof after);
    if (strcmp(before, after) != 0)
        bad |= 1024;
    return bad;
}

static int uts_clone_child(void)
{
    long pid = raw_clone(CLONE_NEWUTS | SIGCHLD);
    if (pid == 0) {
        sethostname("cloned", 6);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    struct utsname u;
    uname(&u);
    return pid > 0 && WIFEXITED(st) && strcmp(u.nodename, orig.nodename) == 0 ? 0 : 1;
}

static void test_uts(void)
{
    uname(&orig);
    printf("UTS child: %s\n", status_str(in_child(uts_child)));
    struct utsname u;
    uname(&u);
    check(strcmp(u.nodename, orig.nodename) == 0 && strcmp(u.domainname, orig.domainname) == 0,
          "our host and domain names did not change");
    printf("clone(CLONE_NEWUTS) child: %s\n", status_str(in_child(uts_clone_child)));
    char big[80];
    memset(big, 'x', sizeof big);
    EXPECT_ERR(EINVAL, "sethostname(65 bytes)", sethostname(big, 65));
    EXPECT_ERR(EINVAL, "sethostname(len -1)", syscall(SYS_sethostname, big, -1L));
    EXPECT_ERR(EINVAL, "setdomainname(65 bytes)", setdomainname(big, 65));
    EXPECT_ERR(EFAULT, "sethostname(bad pointer)", sethostname(BAD_PTR, 4));
    EXPECT_ERR(EINVAL, "unshare(unknown flag)", unshare(0x1000));
    EXPECT_ERR(EBADF, "setns(bad fd)", setns(999, 0));
    int f = open("/proc/self/stat", O_RDONLY);
    EXPECT_ERR(EINVAL, "setns(not a namespace)", setns(f, 0));
    close(f);
}

static void test_mnt(void)
{
    mkdir("/tmp/ns_mnt", 0755);
    int sv[2];
    pipe(sv);
    int back[2];
    pipe(back);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        close(back[1]);
        int bad = 0;
        {
            char before[64], after[64];
            ns_link(0, "mnt", before, sizeof before);
            if (unshare(CLONE_NEWNS) != 0)
                _exit(1);
            ns_link(0, "mnt", after, sizeof after);
            if (strcmp(before, after) == 0)
                bad |= 2;
            if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
                bad |= 4;
            if (mount("nsfs-test", "/tmp/ns_mnt", "tmpfs", 0, NULL) != 0)
                bad |= 8;
            int fd = open("/tmp/ns_mnt/inside", O_CREAT | O_WRONLY, 0644);
            if (fd < 0)
                bad |= 16;
            close(fd);
            FILE *m = fopen("/proc/self/mounts", "r");
            char line[512];
            int seen = 0;
            while (m && fgets(line, sizeof line, m))
                seen |= strstr(line, "nsfs-test /tmp/ns_mnt tmpfs") != NULL;
            if (m)
                fclose(m);
            if (!seen)
                bad |= 32;
        }
        write(sv[1], "m", 1);
        char c;
        read(back[0], &c, 1);
        _exit(bad);
    }
    close(sv[1]);
    close(back[0]);
    char c;
    read(sv[0], &c, 1);
    struct stat st;
    EXPECT_ERR(ENOENT, "the child's mount is not seen outside", stat("/tmp/ns_mnt/inside", &st));
    FILE *m = fopen("/proc/self/mounts", "r");
    char line[512];
    int seen = 0;
    while (m && fgets(line, sizeof line, m))
        seen |= strstr(line, "nsfs-test") != NULL;
    if (m)
        fclose(m);
    check(!seen, "nor in our /proc/self/mounts");
    write(back[1], "k", 1);
    int wst;
    waitpid(pid, &wst, 0);
    printf("mount namespace child: %s\n", status_str(wst));
    rmdir("/tmp/ns_mnt");
}

/* Child of clone(CLONE_NEWPID | CLONE_NEWNS): pid 1 of a new namespace. */
static int pid_init(pid_t outside)
{
    int bad = 0;
    if (getpid() != 1)
        bad |= 1;
    if (getppid() != 0)
        bad |= 2;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 || mount("proc", "/proc", "proc", 0, NULL) != 0)
        bad |= 4;
    char link[32];
    ssize_t n = readlink("/proc/self", link, sizeof link - 1);
    link[n < 0 ? 0 : n] = 0;
    if (strcmp(link, "1") != 0)
        bad |= 8;
    pid_t g = fork();
    if (g == 0) {
        _exit(getpid() == 2 && getppid() == 1 ? 0 : 1);
    }
    int st;
    if (g != 2 || waitpid(g, &st, 0) != 2 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad |= 16;
    /* Only our namespace's processes are visible. */
    DIR *d = opendir("/proc");
    int others = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && strcmp(e->d_name, "1") != 0)
            others++;
    if (d)
        closedir(d);
    if (others != 0)
        bad |= 32;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int nspid_ok = 0;
    while (f && fgets(line, sizeof line, f))
        if (strcmp(line, "NSpid:\t1\n") == 0)
            nspid_ok = 1;
    if (f)
        fclose(f);
    if (!nspid_ok)
        bad |= 64;
    /* The parent's pid means nothing here (unless it is one of ours: 1 or 2). */
    if (outside > 2 && (kill(outside, 0) != -1 || errno != ESRCH))
        bad |= 128;
    if (kill(1, 0) != 0)
        bad |= 256;
    /* The namespace's init is protected as pid 1 is: a default-action
     * SIGKILL or SIGTERM from inside its namespace is dropped. */
    if (kill(1, SIGKILL) != 0 || kill(1, SIGTERM) != 0)
        bad |= 512;
    g = fork();
    if (g == 0)
        _exit(kill(1, SIGKILL) == 0 ? 0 : 1);
    if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad |= 1024;
    n = readlink("/proc/1/exe", link, sizeof link - 1);
    if (n <= 0)
        bad |= 2048;
    /* A terminal's session and foreground group in the namespace's ids. */
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    int sid = -1, fg = -1, one = 1;
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || setsid() != 1)
        bad |= 4096;
    int s = m >= 0 ? open(ptsname(m), O_RDWR) : -1;
    if (s < 0 || ioctl(s, TIOCGSID, &sid) != 0 || ioctl(s, TIOCGPGRP, &fg) != 0 || sid != 1 || fg != 1)
        bad |= 8192;
    if (s < 0 || ioctl(s, TIOCSPGRP, &one) != 0 || ioctl(m, TIOCGPGRP, &fg) != 0 || fg != 1)
        bad |= 16384;
    close(s);
    close(m);
    /* SO_PEERCRED names the peer in our namespace's ids. */
    int sv[2];
    struct ucred uc = {0};
    socklen_t ul = sizeof uc;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &uc, &ul) != 0 ||
        uc.pid != 1)
        bad |= 32768;
    close(sv[0]);
    close(sv[1]);
    return bad;
}

static void test_pid_clone(void)
{
    int p[2], q[2];
    pipe(p);
    pipe(q);
    pid_t parent = getpid();
    long pid = raw_clone(CLONE_NEWPID | CLONE_NEWNS | SIGCHLD);
    if (pid == 0) {
        close(p[0]);
        close(q[1]);
        int bad = pid_init(parent);
        /* Stay until the parent has read our status from outside. */
        write(p[1], "r", 1);
        char c;
        read(q[0], &c, 1);
        _exit(bad);
    }
    close(p[1]);
    close(q[0]);
    check(pid > 1, "clone(CLONE_NEWPID) returns the child's pid in our namespace");
    char c;
    read(p[0], &c, 1);
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    long outer = -1, inner = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "NSpid:", 6) == 0)
            sscanf(line + 6, "%ld %ld", &outer, &inner);
    if (f)
        fclose(f);
    check(outer == pid && inner == 1, "NSpid from outside: our id, then 1");
    char a[64], b[64];
    ns_link(0, "pid", a, sizeof a);
    ns_link(pid, "pid", b, sizeof b);
    check(strcmp(a, b) != 0, "the child's pid namespace is new");
    write(q[1], "k", 1);
    close(q[1]);
    int st;
    check(waitpid(pid, &st, 0) == pid, "waitpid(child) with its outer id");
    printf("pid namespace init: %s\n", status_str(st));
    close(p[0]);

    /* From the parent's namespace, SIGKILL reaches the init. */
    pipe(p);
    pid = raw_clone(CLONE_NEWPID | SIGCHLD);
    if (pid == 0) {
        close(p[0]);
        kill(1, SIGKILL);
        write(p[1], "r", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    c = 0;
    check(read(p[0], &c, 1) == 1 && c == 'r', "the namespace's init survived its own SIGKILL");
    close(p[0]);
    check(kill(pid, SIGKILL) == 0, "kill(namespace init, SIGKILL) from outside");
    waitpid(pid, &st, 0);
    printf("init killed from outside: %s\n", status_str(st));
}

static int pid_death_child(void)
{
    /* unshare(CLONE_NEWPID): our next child is pid 1 of a new namespace. */
    int bad = 0;
    pid_t me = getpid();
    if (unshare(CLONE_NEWPID) != 0)
        return 1;
    if (getpid() != me)
        bad |= 2;
    char a[64], b[64];
    ns_link(0, "pid", a, sizeof a);
    ns_link(0, "pid_for_children", b, sizeof b);
    if (strcmp(a, b) == 0)
        bad |= 4;
    if (unshare(CLONE_NEWPID) != -1 || errno != EINVAL)
        bad |= 8; /* a second one before entering the first */
    int p[2];
    pipe(p);
    pid_t init = fork();
    if (init == 0) {
        /* pid 1: leave a grandchild behind holding the pipe, then die. */
        pid_t g = fork();
        if (g == 0) {
            close(p[0]);
            for (;;)
                pause();
        }
        close(p[1]);
        _exit(g == 2 ? 7 : 8);
    }
    close(p[1]);
    int st;
    waitpid(init, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
        bad |= 16;
    /* The grandchild died with its init: the pipe is at end of file. */
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    char c;
    if (read(p[0], &c, 1) != 0)
        bad |= 32;
    /* Nobody may enter a namespace whose init is gone. */
    pid_t late = fork();
    if (late == 0)
        _exit(0);
    if (late != -1 || errno != ENOMEM)
        bad |= 64;
    if (late > 0)
        waitpid(late, &st, 0);
    return bad;
}

static int pid_setns_child(void)
{
    int bad = 0;
    int own = open("/proc/self/ns/pid", O_RDONLY);
    int p[2];
    pipe(p);
    long init = raw_clone(CLONE_NEWPID | SIGCHLD);
    if (init == 0) {
        char c;
        close(p[1]);
        read(p[0], &c, 1); /* until the parent is done */
        _exit(0);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/ns/pid", init);
    int theirs = open(path, O_RDONLY);
    if (setns(theirs, CLONE_NEWPID) != 0)
        bad |= 1;
    pid_t c = fork();
    if (c == 0)
        _exit(getpid() == 2 && getppid() == 0 ? 0 : 1);
    int st;
    if (c <= 1 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad |= 2;
    if (setns(own, CLONE_NEWPID) != 0)
        bad |= 4;
    c = fork();
    if (c == 0)
        _exit(getppid() > 1 ? 0 : 1);
    if (waitpid(c, &st, 0) != c || WEXITSTATUS(st) != 0)
        bad |= 8;
    write(p[1], "x", 1);
    waitpid(init, &st, 0);
    close(own);
    close(theirs);
    return bad;
}

static void test_pid(void)
{
    test_pid_clone();
    printf("unshare(CLONE_NEWPID) child: %s\n", status_str(in_child(pid_death_child)));
    printf("setns(CLONE_NEWPID) child: %s\n", status_str(in_child(pid_setns_child)));
    EXPECT_ERR(EINVAL, "clone(CLONE_NEWPID | CLONE_THREAD)",
               raw_clone(CLONE_NEWPID | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM));
    EXPECT_ERR(EINVAL, "clone(CLONE_NEWNS | CLONE_FS)", raw_clone(CLONE_NEWNS | CLONE_FS | SIGCHLD));
}

static int unconfigured_flag;
static const char *unconfigured_link;

static int unconfigured_child(void)
{
    char before[64], after[64];
    ns_link(0, unconfigured_link, before, sizeof before);
    int r = unshare(unconfigured_flag);
    int e = errno;
    ns_link(0, unconfigured_link, after, sizeof after);
    if (r == 0 && strcmp(before, after) != 0)
        return 0; /* a real new namespace */
    if (r == -1 && e == EINVAL && strcmp(before, after) == 0)
        return 0; /* not configured, as Linux without it answers */
    return 1;
}

static void test_unconfigured(void)
{
    static const struct {
        int flag;
        const char *name, *link;
    } types[] = {
        {CLONE_NEWIPC, "CLONE_NEWIPC", "ipc"},
        {CLONE_NEWNET, "CLONE_NEWNET", "net"},
        {CLONE_NEWUSER, "CLONE_NEWUSER", "user"},
        {CLONE_NEWTIME, "CLONE_NEWTIME", "time_for_children"},
        {CLONE_NEWCGROUP, "CLONE_NEWCGROUP", "cgroup"},
    };
    for (unsigned i = 0; i < sizeof types / sizeof *types; i++) {
        unconfigured_flag = types[i].flag;
        unconfigured_link = types[i].link;
        int st = in_child(unconfigured_child);
        check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unshare(%s): a new namespace, or EINVAL", types[i].name);
    }
}

int main(void)
{
    t_init("ns");
    test_links();
    test_uts();
    test_mnt();
    test_pid();
    test_unconfigured();
    return t_done();
}
