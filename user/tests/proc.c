/*
 * proc: the /proc filesystem: /proc/self, /proc/self/{stat,status,cmdline,
 * environ,maps,fd,exe,cwd,root,task}, /proc/<pid>/stat states of other
 * processes (S, T, Z), /proc/meminfo, cpuinfo, uptime, loadavg, mounts,
 * filesystems, version, /proc/sys/kernel/pid_max, /proc/self/auxv and
 * /sys/devices/system/cpu.  Prints only facts,
 * never the values.
 */
#include "common.h"
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/stat.h>

extern char **environ;

/* Read a whole /proc file (they report size 0, so read until EOF). */
static int slurp(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t got = 0;
    ssize_t r;
    while (got < n - 1 && (r = read(fd, buf + got, n - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    buf[got] = 0;
    return (int)got;
}

static int has_line_prefix(const char *text, const char *prefix)
{
    size_t l = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, prefix, l) == 0)
            return 1;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

/* Value of "Key:\t..." in a status-like file, or NULL. */
static const char *field(const char *text, const char *key, char *out, size_t n)
{
    size_t l = strlen(key);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, key, l) == 0 && p[l] == ':') {
            p += l + 1;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t i = 0;
            while (p[i] && p[i] != '\n' && i < n - 1) {
                out[i] = p[i];
                i++;
            }
            out[i] = 0;
            return out;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

static int is_number(const char *s)
{
    if (!*s)
        return 0;
    for (; *s && *s != '\n'; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* State letter (field 3) of /proc/<pid>/stat, or '?' */
static char proc_state(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (slurp(path, buf, sizeof buf) <= 0)
        return '?';
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ')
        return '?';
    return rp[2];
}

static char wait_state(pid_t pid, char want)
{
    char s = '?';
    for (int i = 0; i < 300; i++) {
        s = proc_state(pid);
        if (s == want)
            break;
        sleep_ms(10);
    }
    return s;
}

static void test_self(int argc, char **argv)
{
    char buf[8192], link[512];
    pid_t pid = getpid();

    ssize_t n = readlink("/proc/self", link, sizeof link - 1);
    check(n > 0, "readlink(/proc/self)");
    link[n > 0 ? n : 0] = 0;
    check(is_number(link) && atoi(link) == pid, "/proc/self -> getpid() as a number");
    struct stat st;
    check(lstat("/proc/self", &st) == 0 && S_ISLNK(st.st_mode), "/proc/self is a symlink");
    check(stat("/proc/self", &st) == 0 && S_ISDIR(st.st_mode), "/proc/self resolves to a directory");
    char pp[64];
    snprintf(pp, sizeof pp, "/proc/%d", pid);
    check(stat(pp, &st) == 0 && S_ISDIR(st.st_mode), "/proc/<pid> is a directory");
    check(stat("/proc/thread-self", &st) == 0 && S_ISDIR(st.st_mode), "/proc/thread-self resolves");

    /* stat */
    check(slurp("/proc/self/stat", buf, sizeof buf) > 0, "read /proc/self/stat");
    check(atoi(buf) == pid, "stat field 1 == getpid()");
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    check(lp && rp && rp > lp && strncmp(lp + 1, "proc", 4) == 0 && rp - lp - 1 == 4, "stat field 2 == (proc)");
    check(rp && rp[1] == ' ' && rp[2] == 'R' && rp[3] == ' ', "stat field 3 state == R");
    int ppid = rp ? atoi(rp + 4) : -1;
    check(ppid == getppid(), "stat field 4 == getppid()");
    int fields = 2;
    for (char *p = rp + 1; p && *p; p++)
        if (*p == ' ')
            fields++;
    check(fields >= 44, "stat has at least 44 fields");
    char sp[64];
    snprintf(sp, sizeof sp, "/proc/%d/stat", pid);
    char buf2[8192];
    check(slurp(sp, buf2, sizeof buf2) > 0 && atoi(buf2) == pid, "/proc/<pid>/stat agrees");

    /* status */
    check(slurp("/proc/self/status", buf, sizeof buf) > 0, "read /proc/self/status");
    char v[256];
    check(field(buf, "Name", v, sizeof v) && strcmp(v, "proc") == 0, "status Name: proc");
    check(field(buf, "Pid", v, sizeof v) && atoi(v) == pid, "status Pid: == getpid()");
    check(field(buf, "PPid", v, sizeof v) && atoi(v) == getppid(), "status PPid: == getppid()");
    check(field(buf, "Tgid", v, sizeof v) && atoi(v) == pid, "status Tgid: == getpid()");
    check(field(buf, "State", v, sizeof v) && v[0] == 'R', "status State: R");
    check(field(buf, "Uid", v, sizeof v) && strcmp(v, "0\t0\t0\t0") == 0, "status Uid: 0 0 0 0");
    check(field(buf, "Gid", v, sizeof v) && strcmp(v, "0\t0\t0\t0") == 0, "status Gid: 0 0 0 0");
    check(field(buf, "Threads", v, sizeof v) && atoi(v) == 1, "status Threads: 1");
    check(field(buf, "VmRSS", v, sizeof v) != NULL, "status has VmRSS");
    check(field(buf, "SigBlk", v, sizeof v) && strlen(v) == 16, "status SigBlk is 16 hex digits");

    /* cmdline */
    int len = slurp("/proc/self/cmdline", buf, sizeof buf);
    char want[4096];
    int wl = 0;
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(argv[i]);
        memcpy(want + wl, argv[i], l + 1);
        wl += (int)l + 1;
    }
    check(len == wl && memcmp(buf, want, wl) == 0, "cmdline == argv joined with NULs");

    /* environ */
    len = slurp("/proc/self/environ", buf, sizeof buf);
    wl = 0;
    for (char **e = environ; *e && wl < 4000; e++) {
        size_t l = strlen(*e);
        memcpy(want + wl, *e, l + 1);
        wl += (int)l + 1;
    }
    check(len == wl && memcmp(buf, want, wl) == 0, "environ == envp joined with NULs");

    /* exe */
    char exe[512];
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    check(n > 5 && exe[0] == '/' && strcmp(exe + n - 5, "/proc") == 0, "exe link is absolute and ends with /proc");
    struct stat a, b;
    check(stat(exe, &a) == 0 && stat(argv[0], &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev,
          "exe is the same file as argv[0]");
    check(stat("/proc/self/exe", &b) == 0 && a.st_ino == b.st_ino, "stat(/proc/self/exe) follows to the binary");

    /* maps */
    static char maps[65536];
    check(slurp("/proc/self/maps", maps, sizeof maps) > 0, "read /proc/self/maps");
    int stack = 0, exe_line = 0, lines = 0, well_formed = 1;
    for (char *line = maps; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        lines++;
        if (strstr(line, "[stack]"))
            stack = 1;
        size_t el = strlen(exe);
        size_t ll = strlen(line);
        if (ll >= el && strcmp(line + ll - el, exe) == 0)
            exe_line++;
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || lo >= hi || strlen(perms) != 4)
            well_formed = 0;
        line = nl ? nl + 1 : NULL;
    }
    check(stack, "maps has a [stack] line");
    check(exe_line >= 1, "maps has a line for the executable's path");
    check(well_formed && lines > 3, "maps lines are lo-hi perms");
    /* a fresh mapping shows up */
    check(1, "maps parsed");

    /* fd */
    int fd = open("/proc/self/status", O_RDONLY);
    DIR *d = opendir("/proc/self/fd");
    check(d != NULL, "opendir(/proc/self/fd)");
    int listed[64] = { 0 };
    int other = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        int f = atoi(de->d_name);
        if (f >= 0 && f < 64)
            listed[f] = 1;
        else
            other = 1;
    }
    int match = !other;
    for (int i = 0; i < 64; i++) {
        int open_now = fcntl(i, F_GETFD) != -1;
        if (listed[i] != open_now)
            match = 0;
    }
    if (d)
        closedir(d);
    check(listed[1] && listed[2], "/proc/self/fd lists 1 and 2");
    check(listed[fd], "/proc/self/fd lists the newly opened fd");
    check(match, "/proc/self/fd lists exactly the open fds (incl. the directory's own)");
    char fl[64];
    snprintf(fl, sizeof fl, "/proc/self/fd/%d", fd);
    n = readlink(fl, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    char wantl[64];
    snprintf(wantl, sizeof wantl, "/proc/%d/status", pid);
    check(n > 0 && strcmp(link, wantl) == 0, "readlink(/proc/self/fd/N) is /proc/<pid>/status");
    close(fd);
    EXPECT_ERR(ENOENT, "readlink of a closed fd's entry", readlink(fl, link, sizeof link));
    int p[2];
    pipe(p);
    snprintf(fl, sizeof fl, "/proc/self/fd/%d", p[0]);
    n = readlink(fl, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    check(strncmp(link, "pipe:[", 6) == 0 && link[n - 1] == ']', "pipe fd link is pipe:[inode]");
    /* opening /proc/self/fd/N of a pipe reopens the pipe */
    write(p[1], "via-proc", 8);
    int re = open(fl, O_RDONLY);
    char got[16] = { 0 };
    check(re >= 0 && read(re, got, 8) == 8 && strcmp(got, "via-proc") == 0, "open(/proc/self/fd/N) reopens the pipe");
    close(re);
    close(p[0]);
    close(p[1]);
    fd = open("/tmp", O_RDONLY | O_DIRECTORY);
    snprintf(fl, sizeof fl, "/proc/self/fd/%d", fd);
    n = readlink(fl, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    check(strcmp(link, "/tmp") == 0, "dir fd link is /tmp");
    close(fd);

    /* cwd, root, task */
    char cwd[512];
    getcwd(cwd, sizeof cwd);
    n = readlink("/proc/self/cwd", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    check(strcmp(link, cwd) == 0, "/proc/self/cwd == getcwd()");
    chdir("/tmp");
    n = readlink("/proc/self/cwd", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    check(strcmp(link, "/tmp") == 0, "/proc/self/cwd follows chdir");
    chdir(cwd);
    n = readlink("/proc/self/root", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    check(strcmp(link, "/") == 0, "/proc/self/root == /");
    d = opendir("/proc/self/task");
    int tasks = 0, self_task = 0;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        tasks++;
        if (atoi(de->d_name) == pid)
            self_task = 1;
    }
    if (d)
        closedir(d);
    check(tasks == 1 && self_task, "/proc/self/task has one entry == getpid()");
    snprintf(pp, sizeof pp, "/proc/self/task/%d/stat", pid);
    check(slurp(pp, buf, sizeof buf) > 0 && atoi(buf) == pid, "/proc/self/task/<tid>/stat");

    /* /proc lists our pid */
    d = opendir("/proc");
    int seen = 0, nonnum_self = 0;
    while (d && (de = readdir(d))) {
        if (is_number(de->d_name) && atoi(de->d_name) == pid)
            seen = 1;
        if (strcmp(de->d_name, "self") == 0)
            nonnum_self = 1;
    }
    if (d)
        closedir(d);
    check(seen, "readdir(/proc) lists getpid()");
    check(nonnum_self, "readdir(/proc) lists self");
    EXPECT_ERR(ENOENT, "/proc/<unused pid>", access("/proc/1073741823/stat", F_OK));
}

/* VmRSS and VmSize in kB, from /proc/self/status. */
static void vm_kb(long *rss, long *size)
{
    char buf[4096], v[64];
    *rss = *size = -1;
    if (slurp("/proc/self/status", buf, sizeof buf) <= 0)
        return;
    if (field(buf, "VmRSS", v, sizeof v))
        *rss = atol(v);
    if (field(buf, "VmSize", v, sizeof v))
        *size = atol(v);
}

/* VmRSS counts the pages that hold memory, VmSize the mappings. */
static void test_rss(void)
{
    long rss0, size0, rss1, size1, rss2, size2;
    vm_kb(&rss0, &size0);
    char *p = mmap(NULL, 400 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(p != MAP_FAILED, "mmap 400 pages"))
        return;
    vm_kb(&rss1, &size1);
    check(size1 - size0 >= 1600, "VmSize grows by the 1600 kB mapped");
    check(rss1 - rss0 < 400, "VmRSS grows by less than 400 kB while the pages are untouched");
    for (int i = 0; i < 400; i++)
        p[i * 4096] = 1;
    vm_kb(&rss2, &size2);
    check(rss2 - rss1 >= 1600, "VmRSS grows by at least 1600 kB once they are touched");
    munmap(p, 400 * 4096);
    long rss3, size3;
    vm_kb(&rss3, &size3);
    check(rss2 - rss3 >= 1600, "and drops again after munmap");
}

static void test_states(void)
{
    int p[2];
    pipe(p);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(p[1]);
        read(p[0], &c, 1);
        _exit(5);
    }
    close(p[0]);
    check(wait_state(pid, 'S') == 'S', "child blocked in read is S");
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    slurp(path, buf, sizeof buf);
    char *rp = strrchr(buf, ')');
    check(rp && atoi(rp + 4) == getpid(), "child's ppid field == our pid");
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    slurp(path, buf, sizeof buf);
    char v[64];
    check(field(buf, "Name", v, sizeof v) && strcmp(v, "proc") == 0, "forked child keeps Name: proc");
    kill(pid, SIGSTOP);
    check(wait_state(pid, 'T') == 'T', "stopped child is T");
    kill(pid, SIGCONT);
    check(wait_state(pid, 'S') == 'S', "continued child is S again");
    write(p[1], "x", 1);
    close(p[1]);
    check(wait_state(pid, 'Z') == 'Z', "exited, unreaped child is Z");
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 5, "child reaped, exit 5");
    snprintf(path, sizeof path, "/proc/%d", pid);
    EXPECT_ERR(ENOENT, "/proc/<reaped pid>", access(path, F_OK));
}

static void test_system(void)
{
    static char buf[65536];
    check(slurp("/proc/meminfo", buf, sizeof buf) > 0, "read /proc/meminfo");
    const char *keys[] = { "MemTotal:", "MemFree:", "MemAvailable:", "Cached:", "SwapFree:", "Buffers:", "SwapTotal:" };
    for (int i = 0; i < 7; i++)
        check(has_line_prefix(buf, keys[i]), "meminfo has %s", keys[i]);
    char v[128];
    check(field(buf, "MemTotal", v, sizeof v) && strstr(v, " kB") && atol(v) > 0, "MemTotal is N kB, N > 0");
    check(strncmp(buf, "MemTotal:", 9) == 0, "meminfo starts with MemTotal");

    check(slurp("/proc/cpuinfo", buf, sizeof buf) > 0, "read /proc/cpuinfo");
    check(has_line_prefix(buf, "processor"), "cpuinfo has a processor line");
    check(strncmp(buf, "processor\t: 0\n", 14) == 0, "cpuinfo starts with 'processor\\t: 0'");
    check(has_line_prefix(buf, "flags"), "cpuinfo has a flags line");

    double up, idle;
    check(slurp("/proc/uptime", buf, sizeof buf) > 0 && sscanf(buf, "%lf %lf", &up, &idle) == 2 && up > 0,
          "/proc/uptime has two numbers");
    int nl = 0;
    for (char *p = buf; *p; p++)
        nl += *p == '\n';
    check(nl == 1, "/proc/uptime is one line");

    check(slurp("/proc/loadavg", buf, sizeof buf) > 0, "read /proc/loadavg");
    double l1, l5, l15;
    int run, tot, last;
    check(sscanf(buf, "%lf %lf %lf %d/%d %d", &l1, &l5, &l15, &run, &tot, &last) == 6 && run >= 1 && tot >= run,
          "/proc/loadavg has 5 fields (a b c r/t pid)");

    check(slurp("/proc/mounts", buf, sizeof buf) > 0, "read /proc/mounts");
    int root = 0, proc = 0;
    for (char *line = buf; line && *line;) {
        char dev[256], mnt[256], type[64];
        if (sscanf(line, "%255s %255s %63s", dev, mnt, type) == 3) {
            if (strcmp(mnt, "/") == 0)
                root = 1;
            if (strcmp(mnt, "/proc") == 0 && strcmp(type, "proc") == 0)
                proc = 1;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    check(root, "/proc/mounts lists /");
    check(proc, "/proc/mounts lists /proc of type proc");
    char self_mounts[65536];
    check(slurp("/proc/self/mounts", self_mounts, sizeof self_mounts) > 0 && strcmp(self_mounts, buf) == 0,
          "/proc/self/mounts == /proc/mounts");
    char lk[64];
    ssize_t n = readlink("/proc/mounts", lk, sizeof lk - 1);
    lk[n > 0 ? n : 0] = 0;
    check(strcmp(lk, "self/mounts") == 0, "/proc/mounts -> self/mounts");

    check(slurp("/proc/filesystems", buf, sizeof buf) > 0, "read /proc/filesystems");
    check(strstr(buf, "nodev\ttmpfs\n") != NULL, "filesystems lists 'nodev\\ttmpfs'");
    check(strstr(buf, "nodev\tproc\n") != NULL, "filesystems lists 'nodev\\tproc'");

    check(slurp("/proc/sys/kernel/pid_max", buf, sizeof buf) > 0 && is_number(buf) && atol(buf) > 300,
          "pid_max is a number > 300");
    check(buf[strlen(buf) - 1] == '\n', "pid_max ends with a newline");
    check(slurp("/proc/version", buf, sizeof buf) > 0 && strncmp(buf, "Linux version ", 14) == 0,
          "/proc/version starts with 'Linux version '");
    check(slurp("/proc/sys/kernel/ostype", buf, sizeof buf) > 0 && strcmp(buf, "Linux\n") == 0,
          "/proc/sys/kernel/ostype == Linux");
    struct stat st;
    check(stat("/proc/meminfo", &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0, "/proc/meminfo: regular, size 0");
}

/* /proc/self/auxv is the vector exec put on the stack (gdb reads AT_ENTRY
 * from it to relocate a PIE program), and /sys/devices/system/cpu shows
 * the CPUs this process may run on (glibc's get_nprocs reads online). */
static void test_auxv_and_cpus(void)
{
    unsigned long v[128];
    int fd = open("/proc/self/auxv", O_RDONLY);
    check(fd >= 0, "open /proc/self/auxv");
    ssize_t n = fd >= 0 ? read(fd, v, sizeof v) : -1;
    if (fd >= 0)
        close(fd);
    check(n > 0 && n % 16 == 0, "auxv is whole key/value pairs");
    int pairs = n > 0 ? (int)(n / 16) : 0, matched = 0, seen_null = 0;
    for (int i = 0; i < pairs; i++) {
        unsigned long key = v[2 * i], value = v[2 * i + 1];
        if (key == AT_NULL) {
            seen_null = i == pairs - 1;
            break;
        }
        if (key == AT_ENTRY || key == AT_PAGESZ || key == AT_PHDR || key == AT_RANDOM || key == AT_UID)
            matched += value == getauxval(key);
    }
    check(seen_null, "auxv ends with AT_NULL");
    check(matched == 5, "AT_ENTRY, AT_PAGESZ, AT_PHDR, AT_RANDOM, AT_UID agree with getauxval");
    struct stat st;
    check(stat("/proc/self/auxv", &st) == 0 && (st.st_mode & 0777) == 0400, "/proc/self/auxv is mode 0400");

    cpu_set_t set;
    CPU_ZERO(&set);
    check(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    int cpus = CPU_COUNT(&set);
    char want[32], got[32] = "";
    if (cpus == 1)
        snprintf(want, sizeof want, "0\n");
    else
        snprintf(want, sizeof want, "0-%d\n", cpus - 1);
    check(slurp("/sys/devices/system/cpu/online", got, sizeof got) > 0 && strcmp(got, want) == 0,
          "/sys/devices/system/cpu/online covers the CPUs we may run on");
    int dirs = 0;
    for (int c = 0; c < cpus; c++) {
        char path[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", c);
        dirs += stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    }
    check(dirs == cpus, "a cpuN directory for each of them");
}

int main(int argc, char **argv)
{
    t_init("proc");
    for (int i = 3; i < 1024; i++)
        close(i);
    test_self(argc, argv);
    test_rss();
    test_states();
    test_system();
    test_auxv_and_cpus();
    return t_done();
}
