/*
 * proc_vm: what /proc tells about a process's memory and threads.
 * maps (offsets, device and inode of file mappings, [heap], [stack], the
 * name column, the trailing space of unnamed lines, splits), smaps
 * (fields, sizes, Rss, private vs shared after fork, Pss, VmFlags),
 * smaps_rollup, pagemap (present, exclusive, file bits, frame numbers,
 * EINVAL for unaligned reads), every Vm* line of status and how they move,
 * and thread states in /proc/<pid>/task/<tid>/stat and status: S for a
 * thread asleep in nanosleep, a futex, a pipe read or pause, R when
 * running, T stopped, Z a zombie, D for a vfork parent.
 */
#include "common.h"
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define PG 4096UL

/* `pages` read-write pages between two PROT_NONE guard pages, so the
 * area cannot merge with a neighbour (Linux merges compatible ones). */
static char *isolated(unsigned long pages)
{
    char *p = mmap(NULL, (pages + 2) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(p + PG, pages * PG, PROT_READ | PROT_WRITE);
    return p + PG;
}

static void release(char *p, unsigned long pages)
{
    munmap(p - PG, (pages + 2) * PG);
}

static char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while (buf && (n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    close(fd);
    if (buf)
        buf[len] = 0;
    return buf;
}

struct map_line {
    unsigned long start, end, offset, ino;
    unsigned major, minor;
    char perms[5];
    char name[256];
    int name_col;
    int trailing_space;
};

/* The maps line covering `addr` (0 if none). */
static int find_map(const char *maps, unsigned long addr, struct map_line *out)
{
    const char *p = maps;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        struct map_line m;
        memset(&m, 0, sizeof m);
        int used = 0;
        if (sscanf(p, "%lx-%lx %4s %lx %x:%x %lu %n", &m.start, &m.end, m.perms, &m.offset, &m.major, &m.minor,
                   &m.ino, &used) >= 7) {
            if (addr >= m.start && addr < m.end) {
                m.trailing_space = len > 0 && p[len - 1] == ' ';
                if ((size_t)used < len) {
                    m.name_col = used;
                    size_t n = len - (size_t)used;
                    if (n >= sizeof m.name)
                        n = sizeof m.name - 1;
                    memcpy(m.name, p + used, n);
                    m.name[n] = 0;
                }
                *out = m;
                return 1;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

static void test_maps(void)
{
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    struct stat es;
    stat("/proc/self/exe", &es);
    char *maps = slurp("/proc/self/maps");
    check(maps != NULL, "read /proc/self/maps");

    /* Every PT_LOAD of this program: its file offset, device, inode, name. */
    const Elf64_Phdr *ph = (const void *)getauxval(AT_PHDR);
    unsigned long phnum = getauxval(AT_PHNUM);
    int loads = 0, good = 0;
    for (unsigned long i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        loads++;
        struct map_line m;
        if (find_map(maps, ph[i].p_vaddr, &m) && m.offset == (ph[i].p_offset & ~(PG - 1)) &&
            m.major == major(es.st_dev) && m.minor == minor(es.st_dev) && m.ino == es.st_ino &&
            strcmp(m.name, exe) == 0 && m.name_col == 73)
            good++;
        else
            printf("FAIL: PT_LOAD %lu: line %lx-%lx off %lx dev %x:%x ino %lu name '%s' col %d\n", i, m.start,
                   m.end, m.offset, m.major, m.minor, m.ino, m.name, m.name_col);
    }
    check(loads > 0 && good == loads, "program segments: offset, device, inode, path at column 73");

    /* [heap] and [stack]. */
    /* musl's sbrk only reads the break: move it with the system call. */
    char *brk0 = (char *)syscall(SYS_brk, 0);
    syscall(SYS_brk, brk0 + 4 * PG);
    brk0[0] = 1;
    free(maps);
    maps = slurp("/proc/self/maps");
    struct map_line m;
    check(find_map(maps, (unsigned long)brk0, &m) && strcmp(m.name, "[heap]") == 0 && m.perms[0] == 'r' &&
              m.perms[1] == 'w' && m.ino == 0 && m.major == 0,
          "the program break is in [heap]");
    int local = 0;
    check(find_map(maps, (unsigned long)&local, &m) && strcmp(m.name, "[stack]") == 0 && strcmp(m.perms, "rw-p") == 0,
          "a local variable is in [stack]");

    /* Anonymous: no name, 00:00 0 and a trailing space. */
    char *anon = isolated(3);
    mprotect(anon + PG, PG, PROT_READ);
    free(maps);
    maps = slurp("/proc/self/maps");
    check(find_map(maps, (unsigned long)anon, &m) && m.name[0] == 0 && m.trailing_space && m.major == 0 &&
              m.minor == 0 && m.ino == 0 && m.offset == 0,
          "anonymous mapping: no name, 00:00 0 and a trailing space");
    struct map_line a1, a2, a3;
    find_map(maps, (unsigned long)anon, &a1);
    find_map(maps, (unsigned long)anon + PG, &a2);
    find_map(maps, (unsigned long)anon + 2 * PG, &a3);
    printf("mprotect split: %s %s %s, sizes %lu %lu %lu\n", a1.perms, a2.perms, a3.perms, (a1.end - a1.start) / PG,
           (a2.end - a2.start) / PG, (a3.end - a3.start) / PG);
    release(anon, 3);

    /* A file mapped from its third page. */
    const char *path = "/tmp/proc_vm_file";
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    char page[PG];
    memset(page, 'f', sizeof page);
    for (int i = 0; i < 4; i++)
        write(fd, page, sizeof page);
    struct stat fs;
    fstat(fd, &fs);
    char *fm = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE, fd, 2 * PG);
    free(maps);
    maps = slurp("/proc/self/maps");
    check(find_map(maps, (unsigned long)fm, &m) && m.offset == 2 * PG && m.ino == fs.st_ino &&
              m.major == major(fs.st_dev) && m.minor == minor(fs.st_dev) && strcmp(m.name, path) == 0 &&
              strcmp(m.perms, "r--p") == 0,
          "file mapping: offset 2000, the file's device and inode, its path");
    munmap(fm, 2 * PG);
    close(fd);
    unlink(path);
    free(maps);
}

/* The value of `field` in the smaps entry that covers `addr` (-1: none). */
static long smaps_field(const char *smaps, unsigned long addr, const char *field)
{
    const char *p = smaps;
    int in = 0;
    size_t flen = strlen(field);
    while (p && *p) {
        unsigned long s, e;
        if (sscanf(p, "%lx-%lx ", &s, &e) == 2 && strchr(p, '-') < strchr(p, ' '))
            in = addr >= s && addr < e;
        else if (in && strncmp(p, field, flen) == 0 && p[flen] == ':')
            return atol(p + flen + 1);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

static const char *smaps_vmflags(const char *smaps, unsigned long addr, char *out, size_t n)
{
    const char *p = smaps;
    int in = 0;
    out[0] = 0;
    while (p && *p) {
        unsigned long s, e;
        if (sscanf(p, "%lx-%lx ", &s, &e) == 2 && strchr(p, '-') < strchr(p, ' '))
            in = addr >= s && addr < e;
        else if (in && strncmp(p, "VmFlags: ", 9) == 0) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p - 9) : strlen(p + 9);
            if (len >= n)
                len = n - 1;
            memcpy(out, p + 9, len);
            out[len] = 0;
            return out;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return out;
}

static uint64_t pagemap(unsigned long addr)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t e = 0;
    pread(fd, &e, 8, (off_t)(addr / PG * 8));
    close(fd);
    return e;
}

static void test_smaps_pagemap(void)
{
    char *region = isolated(16);
    for (int i = 0; i < 5; i++)
        region[i * PG] = 1;
    char *smaps = slurp("/proc/self/smaps");
    unsigned long r = (unsigned long)region;
    printf("smaps of 16 pages, 5 written: Size %ld Rss %ld Pss %ld Private_Dirty %ld Shared_Dirty %ld Anonymous %ld "
           "Swap %ld KernelPageSize %ld\n",
           smaps_field(smaps, r, "Size"), smaps_field(smaps, r, "Rss"), smaps_field(smaps, r, "Pss"),
           smaps_field(smaps, r, "Private_Dirty"), smaps_field(smaps, r, "Shared_Dirty"),
           smaps_field(smaps, r, "Anonymous"), smaps_field(smaps, r, "Swap"),
           smaps_field(smaps, r, "KernelPageSize"));
    char flags[128];
    printf("VmFlags: %s\n", smaps_vmflags(smaps, r, flags, sizeof flags));
    /* The 6.1 field list, in order (newer kernels add lines between). */
    static const char *fields[] = { "Size", "KernelPageSize", "MMUPageSize", "Rss", "Pss", "Pss_Dirty",
                                    "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty",
                                    "Referenced", "Anonymous", "LazyFree", "AnonHugePages", "ShmemPmdMapped",
                                    "FilePmdMapped", "Shared_Hugetlb", "Private_Hugetlb", "Swap", "SwapPss",
                                    "Locked", "THPeligible", "VmFlags" };
    const char *p = smaps;
    int ok = 1;
    for (unsigned i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "\n%s:", fields[i]);
        const char *q = strstr(p, key);
        if (!q) {
            printf("FAIL: smaps has no %s line after the previous field\n", fields[i]);
            ok = 0;
            break;
        }
        p = q + 1;
    }
    check(ok, "smaps lists Linux 6.1's fields in order");
    free(smaps);

    /* pagemap: present and exclusive for written pages, nothing else. */
    uint64_t e0 = pagemap(r), e9 = pagemap(r + 9 * PG);
    check((e0 >> 63) & 1, "pagemap: a written page is present");
    check((e0 >> 56) & 1, "pagemap: ... mapped only here");
    check(!((e0 >> 61) & 1), "pagemap: ... not a file page");
    check((e0 & ((1ULL << 55) - 1)) != 0, "pagemap: ... with its frame number (root)");
    check(e9 == 0, "pagemap: an untouched page reads 0");
    check(pagemap(0x1000) == 0, "pagemap: an unmapped address reads 0");
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t e;
    EXPECT_ERR(EINVAL, "pagemap: pread at an unaligned offset", pread(fd, &e, 8, 4));
    EXPECT_ERR(EINVAL, "pagemap: pread of 5 bytes", pread(fd, &e, 5, 0));
    close(fd);
    int pfd = open("/proc/self/pagemap", O_RDONLY);
    char ex[16];
    int efd = open("/proc/self/exe", O_RDONLY);
    read(efd, ex, sizeof ex);
    close(efd);
    const Elf64_Phdr *ph = (const void *)getauxval(AT_PHDR);
    unsigned long text = 0;
    for (unsigned long i = 0; i < getauxval(AT_PHNUM); i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
            text = ph[i].p_vaddr;
    volatile char touch = *(volatile char *)(text & ~(PG - 1));
    (void)touch;
    pread(pfd, &e, 8, (off_t)(text / PG * 8));
    close(pfd);
    check((e >> 63) & 1 && (e >> 61) & 1, "pagemap: the program's text is a present file page");

    /* After fork the written pages are shared: Pss halves. */
    int to_child[2], from_child[2];
    pipe(to_child);
    pipe(from_child);
    pid_t c = fork();
    if (c == 0) {
        char b;
        write(from_child[1], "r", 1);
        read(to_child[0], &b, 1);
        _exit(0);
    }
    char b;
    read(from_child[0], &b, 1);
    smaps = slurp("/proc/self/smaps");
    printf("after fork: Rss %ld Pss %ld Shared_Dirty %ld Private_Dirty %ld\n", smaps_field(smaps, r, "Rss"),
           smaps_field(smaps, r, "Pss"), smaps_field(smaps, r, "Shared_Dirty"), smaps_field(smaps, r, "Private_Dirty"));
    free(smaps);
    check(!((pagemap(r) >> 56) & 1), "pagemap: a page shared with the child is not exclusive");
    write(to_child[1], "x", 1);
    int st;
    wait_for(c, &st, 0);

    /* smaps_rollup adds up smaps. */
    smaps = slurp("/proc/self/smaps");
    char *rollup = slurp("/proc/self/smaps_rollup");
    long total = 0;
    for (const char *q = smaps; (q = strstr(q, "\nRss:")); q++)
        total += atol(q + 5);
    const char *rr = strstr(rollup, "\nRss:");
    check(strstr(rollup, "[rollup]\n") != NULL, "smaps_rollup header names [rollup]");
    long rolled = rr ? atol(rr + 5) : -1;
    check(rolled > 0 && rolled >= total - 64 && rolled <= total + 64, "smaps_rollup Rss is the sum of smaps");
    check(strstr(rollup, "\nPss_Anon:") && strstr(rollup, "\nPss_File:") && strstr(rollup, "\nPss_Shmem:"),
          "smaps_rollup has Pss_Anon, Pss_File, Pss_Shmem");
    free(smaps);
    free(rollup);
    release(region, 16);
}

static long status_kb(const char *field)
{
    char *s = slurp("/proc/self/status");
    char key[64];
    snprintf(key, sizeof key, "\n%s:", field);
    char *p = s ? strstr(s, key) : NULL;
    long v = p ? atol(p + strlen(key)) : -1;
    free(s);
    return v;
}

static void test_status(void)
{
    static const char *vm[] = { "VmPeak", "VmSize", "VmLck", "VmPin", "VmHWM", "VmRSS", "RssAnon", "RssFile",
                                "RssShmem", "VmData", "VmStk", "VmExe", "VmLib", "VmPTE", "VmSwap" };
    char *s = slurp("/proc/self/status");
    const char *p = s;
    int ok = 1;
    for (unsigned i = 0; i < sizeof vm / sizeof vm[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "\n%s:\t", vm[i]);
        const char *q = strstr(p, key);
        if (!q || !strstr(q, " kB\n")) {
            printf("FAIL: status has no %s line in order\n", vm[i]);
            ok = 0;
            break;
        }
        p = q + 1;
    }
    check(ok, "status has every Vm* line of Linux 6.1, in order");
    free(s);
    check(status_kb("VmRSS") == status_kb("RssAnon") + status_kb("RssFile") + status_kb("RssShmem"),
          "VmRSS = RssAnon + RssFile + RssShmem");
    check(status_kb("VmPeak") >= status_kb("VmSize"), "VmPeak >= VmSize");
    check(status_kb("VmHWM") >= status_kb("VmRSS"), "VmHWM >= VmRSS");
    check(status_kb("VmLck") == 0 && status_kb("VmPin") == 0 && status_kb("VmSwap") == 0, "VmLck, VmPin, VmSwap 0");
    check(status_kb("VmStk") > 0 && status_kb("VmExe") > 0 && status_kb("VmPTE") > 0, "VmStk, VmExe, VmPTE > 0");

    long size0 = status_kb("VmSize"), data0 = status_kb("VmData"), anon0 = status_kb("RssAnon");
    char *big = isolated(256);
    for (unsigned long i = 0; i < (1 << 20); i += PG)
        big[i] = 1;
    long size1 = status_kb("VmSize"), data1 = status_kb("VmData"), anon1 = status_kb("RssAnon");
    long hwm1 = status_kb("VmHWM"), peak1 = status_kb("VmPeak");
    check(size1 - size0 == 1024 + 8, "VmSize grew by 1024 kB and two guard pages");
    check(data1 - data0 == 1024, "VmData grew by 1024 kB");
    check(anon1 - anon0 >= 1024 && anon1 - anon0 < 1024 + 64, "RssAnon grew by 1024 kB");
    release(big, 256);
    check(status_kb("VmSize") == size0, "VmSize back after munmap");
    check(status_kb("VmHWM") >= status_kb("VmRSS"), "VmHWM >= VmRSS after munmap");
    check(status_kb("VmPeak") >= peak1, "VmPeak keeps the peak");
    check(status_kb("VmRSS") < hwm1, "VmRSS fell after munmap");
}

static char task_state(pid_t pid, pid_t tid, int status_file)
{
    char path[128];
    if (status_file) {
        snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, tid);
        char *s = slurp(path);
        char *p = s ? strstr(s, "\nState:\t") : NULL;
        char c = p ? p[8] : '?';
        free(s);
        return c;
    }
    if (tid)
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
    else
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
    char *s = slurp(path);
    char *p = s ? strrchr(s, ')') : NULL;
    char c = p ? p[2] : '?';
    if (s && tid && atoi(s) != tid)
        c = '!';
    free(s);
    return c;
}

static volatile int futex_word;
static int sleeper_pipe[2];
static volatile pid_t tids[4];
static volatile int stop_spinning;

static void *sleep_nanosleep(void *a UNUSED)
{
    tids[0] = (pid_t)syscall(SYS_gettid);
    sleep_ms(100000);
    return NULL;
}
static void *sleep_futex(void *a UNUSED)
{
    tids[1] = (pid_t)syscall(SYS_gettid);
    while (futex_word == 0)
        syscall(SYS_futex, &futex_word, 128 /* FUTEX_WAIT_PRIVATE */, 0, NULL, NULL, 0);
    return NULL;
}
static void *sleep_pipe(void *a UNUSED)
{
    tids[2] = (pid_t)syscall(SYS_gettid);
    char b;
    read(sleeper_pipe[0], &b, 1);
    return NULL;
}
static void *spin(void *a UNUSED)
{
    tids[3] = (pid_t)syscall(SYS_gettid);
    while (!stop_spinning)
        ;
    return NULL;
}

static char wait_state(pid_t pid, pid_t tid, char want)
{
    char c = '?';
    for (int i = 0; i < 400; i++) {
        c = task_state(pid, tid, 0);
        if (c == want)
            break;
        sleep_ms(5);
    }
    return c;
}

static void test_thread_states(void)
{
    pipe(sleeper_pipe);
    pthread_t th[4];
    pthread_create(&th[0], NULL, sleep_nanosleep, NULL);
    pthread_create(&th[1], NULL, sleep_futex, NULL);
    pthread_create(&th[2], NULL, sleep_pipe, NULL);
    pthread_create(&th[3], NULL, spin, NULL);
    while (!tids[0] || !tids[1] || !tids[2] || !tids[3])
        sleep_ms(1);
    pid_t me = getpid();
    static const char *what[] = { "nanosleep", "futex wait", "pipe read", "spinning" };
    static const char want[] = { 'S', 'S', 'S', 'R' };
    for (int i = 0; i < 4; i++) {
        char c = wait_state(me, tids[i], want[i]);
        printf("thread in %s: stat %c, status %c\n", what[i], c, task_state(me, tids[i], 1));
    }
    printf("the process (its leader, reading): %c\n", task_state(me, 0, 0));
    futex_word = 1;
    syscall(SYS_futex, &futex_word, 129 /* FUTEX_WAKE_PRIVATE */, 1, NULL, NULL, 0);
    write(sleeper_pipe[1], "x", 1);
    stop_spinning = 1;
    pthread_join(th[1], NULL);
    pthread_join(th[2], NULL);
    pthread_join(th[3], NULL);
    pthread_kill(th[0], SIGUSR2);

    /* A child asleep in pause, stopped, then a zombie. */
    pid_t c = fork();
    if (c == 0) {
        for (;;)
            pause();
    }
    printf("child in pause: %c\n", wait_state(c, 0, 'S'));
    kill(c, SIGSTOP);
    printf("stopped child: %c\n", wait_state(c, 0, 'T'));
    kill(c, SIGKILL);
    printf("killed child before wait: %c\n", wait_state(c, 0, 'Z'));
    int st;
    wait_for(c, &st, 0);

    /* A vfork parent waits where no signal wakes it: D. */
    pid_t parent = getpid();
    int fds[2];
    pipe(fds);
    pid_t v = vfork();
    if (v == 0) {
        char c2 = wait_state(parent, 0, 'D');
        write(fds[1], &c2, 1);
        _exit(0);
    }
    char seen = '?';
    read(fds[0], &seen, 1);
    wait_for(v, &st, 0);
    printf("vfork parent seen by its child: %c\n", seen);
}

static void on_usr2(int s UNUSED) {}

int main(void)
{
    t_init("proc_vm");
    signal(SIGUSR2, on_usr2);
    test_maps();
    test_smaps_pagemap();
    test_status();
    test_thread_states();
    return t_done();
}
