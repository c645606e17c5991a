/*
 * Memory calls beyond mmap: mlock/mlock2 (MLOCK_ONFAULT)/munlock,
 * mlockall/munlockall (MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT) with VmLck in
 * /proc/self/status and pages faulted in (mincore), locks not inherited
 * by fork; mincore's exact vector and errnos; madvise: every advice Linux
 * accepts, EINVAL for unknown ones, and the effects a program can see
 * (DONTNEED, FREE, REMOVE on shared memory, DONTFORK, WIPEONFORK,
 * POPULATE_READ/WRITE, DONTNEED on locked memory).
 */
#include "common.h"

#include <sys/mman.h>

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#define PG 4096L

static long vm_lck_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static char *map(long pages, int prot, int flags)
{
    char *p = mmap(NULL, pages * PG, prot, flags, -1, 0);
    if (p == MAP_FAILED) {
        printf("FAIL: mmap: %s\n", errname(errno));
        exit(1);
    }
    return p;
}

static const char *vec_str(const unsigned char *v, int n)
{
    static char buf[128];
    for (int i = 0; i < n && i < 127; i++)
        buf[i] = '0' + (v[i] & 1);
    buf[n < 127 ? n : 127] = 0;
    return buf;
}

static const char *residency(char *p, int pages)
{
    unsigned char v[64];
    memset(v, 7, sizeof v);
    if (mincore(p, pages * PG, v) != 0)
        return errname(errno);
    return vec_str(v, pages);
}

static void test_mincore(void)
{
    char *p = map(6, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    p[0] = 1;
    p[2 * PG] = 1;
    (void)*(volatile char *)(p + 4 * PG); /* a read maps the zero page */
    printf("mincore after touching pages 0, 2 (write) and 4 (read): %s\n", residency(p, 6));
    unsigned char v[8];
    EXPECT_ERR(EINVAL, "mincore(unaligned)", mincore(p + 1, PG, v));
    EXPECT_ERR(EFAULT, "mincore(bad vector)", mincore(p, PG, (unsigned char *)KERNEL_PTR));
    EXPECT_ERR(ENOMEM, "mincore(kernel range)", mincore((void *)0xffff800000000000UL, PG, v));
    check(mincore(p, 0, v) == 0, "mincore(len 0) = 0");
    check(mincore(p, 1, v) == 0 && v[0] == 1, "mincore(len 1) covers the whole first page");
    munmap(p + 3 * PG, PG);
    memset(v, 9, sizeof v);
    EXPECT_ERR(ENOMEM, "mincore(range with a hole)", mincore(p, 6 * PG, v));
    check(v[0] == 1 && v[1] == 0 && v[2] == 1 && v[3] == 9, "mincore filled the pages before the hole (%d%d%d%d)",
          v[0], v[1], v[2], v[3]);
    EXPECT_ERR(ENOMEM, "mincore(unmapped)", mincore(p + 3 * PG, PG, v));
    munmap(p, 6 * PG);

    /* Shared memory: pages another process touched are resident here. */
    char *s = map(4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
    pid_t pid = fork();
    if (pid == 0) {
        s[PG] = 5;
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    printf("mincore of shared memory a child touched at page 1: %s\n", residency(s, 4));
    munmap(s, 4 * PG);
}

static void test_mlock(void)
{
    long base = vm_lck_kb();
    check(base == 0, "VmLck starts at 0 kB");
    char *p = map(8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    EXPECT_OK("mlock(4 pages)", mlock(p + 1, 3 * PG)); /* rounds to pages 0..3 */
    check(vm_lck_kb() == 16, "VmLck 16 kB after mlock of an unaligned 3-page range (%ld)", vm_lck_kb());
    printf("mincore after mlock: %s\n", residency(p, 8));
    EXPECT_OK("mlock again (same pages)", mlock(p, 4 * PG));
    check(vm_lck_kb() == 16, "locking again counts once");
    EXPECT_ERR(EINVAL, "madvise(DONTNEED) on locked memory", madvise(p, PG, MADV_DONTNEED));
    EXPECT_ERR(EINVAL, "madvise(FREE) on locked memory", madvise(p, PG, MADV_FREE));
    p[0] = 42;
    EXPECT_OK("madvise(DONTNEED_LOCKED)", madvise(p, PG, MADV_DONTNEED_LOCKED));
    check(p[0] == 0, "DONTNEED_LOCKED dropped the page");
    EXPECT_ERR(EINVAL, "madvise(PAGEOUT) on locked memory", madvise(p, 4 * PG, MADV_PAGEOUT));
    EXPECT_ERR(EINVAL, "madvise(COLD) on locked memory", madvise(p, 4 * PG, MADV_COLD));
    EXPECT_OK("madvise(WILLNEED) on locked memory", madvise(p, 4 * PG, MADV_WILLNEED));
    EXPECT_OK("munlock(page 1)", munlock(p + PG, PG));
    check(vm_lck_kb() == 12, "VmLck 12 kB after unlocking one page");
    EXPECT_OK("munlock(all)", munlock(p, 8 * PG));
    check(vm_lck_kb() == 0, "VmLck 0 after munlock");
    EXPECT_OK("munlock(len 0)", munlock(p, 0));

    EXPECT_ERR(EINVAL, "mlock2(flags 2)", syscall(SYS_mlock2, p, PG, 2));
    EXPECT_OK("mlock2(MLOCK_ONFAULT)", syscall(SYS_mlock2, p + 4 * PG, 4 * PG, MLOCK_ONFAULT));
    check(vm_lck_kb() == 16, "VmLck counts MLOCK_ONFAULT areas");
    printf("mincore after mlock2(ONFAULT) of pages 4..7: %s\n", residency(p, 8));
    munlock(p, 8 * PG);

    munmap(p + 2 * PG, PG);
    EXPECT_ERR(ENOMEM, "mlock(range with a hole)", mlock(p, 4 * PG));
    check(vm_lck_kb() == 8, "pages before the hole were locked anyway");
    EXPECT_ERR(ENOMEM, "munlock(range with a hole)", munlock(p, 4 * PG));
    EXPECT_ERR(ENOMEM, "mlock(unmapped)", mlock(p + 2 * PG, PG));
    munmap(p, 8 * PG);
    check(vm_lck_kb() == 0, "munmap drops the locks");

    /* PROT_NONE may be locked; nothing is faulted in. */
    char *n = map(2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
    /* PROT_NONE: the lock is taken, but faulting in fails: ENOMEM. */
    EXPECT_ERR(ENOMEM, "mlock(PROT_NONE)", mlock(n, 2 * PG));
    check(vm_lck_kb() == 8, "the PROT_NONE area counts as locked (%ld)", vm_lck_kb());
    printf("mincore of locked PROT_NONE: %s\n", residency(n, 2));
    munmap(n, 2 * PG);

    /* Locks are not inherited. */
    p = map(2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    mlock(p, 2 * PG);
    pid_t pid = fork();
    if (pid == 0)
        _exit(vm_lck_kb() == 0 ? 0 : 1);
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child has VmLck 0");
    munmap(p, 2 * PG);

    /* mlockall. */
    EXPECT_ERR(EINVAL, "mlockall(0)", mlockall(0));
    EXPECT_ERR(EINVAL, "mlockall(MCL_ONFAULT alone)", mlockall(MCL_ONFAULT));
    EXPECT_ERR(EINVAL, "mlockall(8)", mlockall(8));
    pid = fork();
    if (pid == 0) {
        int ok = 1;
        char *q = map(4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        if (mlockall(MCL_CURRENT) != 0)
            ok = 0;
        unsigned char v[4];
        mincore(q, 4 * PG, v);
        if (strcmp(vec_str(v, 4), "1111") != 0)
            ok = 0;
        if (vm_lck_kb() <= 0)
            ok = 0;
        char *r = map(4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        mincore(r, 4 * PG, v);
        if (strcmp(vec_str(v, 4), "0000") != 0)
            ok = 0; /* MCL_CURRENT alone does not lock new areas */
        munlockall();
        if (vm_lck_kb() != 0)
            ok = 0;
        if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
            ok = 0;
        r = map(4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        mincore(r, 4 * PG, v);
        if (strcmp(vec_str(v, 4), "1111") != 0)
            ok = 0; /* MCL_FUTURE: faulted in at mmap */
        munlockall();
        if (mlockall(MCL_FUTURE | MCL_ONFAULT) != 0)
            ok = 0;
        long before = vm_lck_kb();
        r = map(4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        mincore(r, 4 * PG, v);
        if (strcmp(vec_str(v, 4), "0000") != 0 || vm_lck_kb() != before + 16)
            ok = 0; /* locked, but on fault */
        munlockall();
        _exit(ok ? 0 : 1);
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "mlockall(MCL_CURRENT) faults in and locks; MCL_FUTURE locks new areas; MCL_ONFAULT waits; munlockall");
}

static void test_madvise(void)
{
    char *p = map(4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    static const struct {
        int advice;
        const char *name;
    } all[] = {
        { MADV_NORMAL, "MADV_NORMAL" },         { MADV_RANDOM, "MADV_RANDOM" },
        { MADV_SEQUENTIAL, "MADV_SEQUENTIAL" }, { MADV_WILLNEED, "MADV_WILLNEED" },
        { MADV_DONTNEED, "MADV_DONTNEED" },     { MADV_FREE, "MADV_FREE" },
        { MADV_DONTFORK, "MADV_DONTFORK" },     { MADV_DOFORK, "MADV_DOFORK" },
        { MADV_MERGEABLE, "MADV_MERGEABLE" },   { MADV_UNMERGEABLE, "MADV_UNMERGEABLE" },
        { MADV_HUGEPAGE, "MADV_HUGEPAGE" },     { MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE" },
        { MADV_DONTDUMP, "MADV_DONTDUMP" },     { MADV_DODUMP, "MADV_DODUMP" },
        { MADV_WIPEONFORK, "MADV_WIPEONFORK" }, { MADV_KEEPONFORK, "MADV_KEEPONFORK" },
        { MADV_COLD, "MADV_COLD" },             { MADV_PAGEOUT, "MADV_PAGEOUT" },
        { MADV_POPULATE_READ, "MADV_POPULATE_READ" }, { MADV_POPULATE_WRITE, "MADV_POPULATE_WRITE" },
        { MADV_DONTNEED_LOCKED, "MADV_DONTNEED_LOCKED" },
    };
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "madvise(%s)", all[i].name);
        EXPECT_OK(what, madvise(p, 4 * PG, all[i].advice));
    }
    EXPECT_ERR(EINVAL, "madvise(MADV_REMOVE) on private memory", madvise(p, PG, MADV_REMOVE));
    EXPECT_ERR(EINVAL, "madvise(advice 5)", madvise(p, PG, 5));
    EXPECT_ERR(EINVAL, "madvise(advice 99)", madvise(p, PG, 99));
    EXPECT_ERR(EINVAL, "madvise(advice 200)", madvise(p, PG, 200));
    EXPECT_ERR(EINVAL, "madvise(unaligned)", madvise(p + 1, PG, MADV_NORMAL));
    EXPECT_ERR(EINVAL, "madvise(len -1)", madvise(p, (size_t)-1, MADV_NORMAL));
    check(madvise(p, 0, MADV_NORMAL) == 0, "madvise(len 0) = 0");
    check(madvise(p, 0, 99) == -1, "madvise(len 0, unknown advice) still EINVAL");
    munmap(p + 2 * PG, PG);
    EXPECT_ERR(ENOMEM, "madvise(range with a hole)", madvise(p, 4 * PG, MADV_NORMAL));
    EXPECT_ERR(ENOMEM, "madvise(unmapped)", madvise(p + 2 * PG, PG, MADV_NORMAL));
    p[0] = 7;
    p[PG] = 7;
    EXPECT_ERR(ENOMEM, "madvise(DONTNEED over a hole)", madvise(p, 4 * PG, MADV_DONTNEED));
    check(p[0] == 0 && p[PG] == 0, "DONTNEED dropped the pages before the hole");
    munmap(p, 4 * PG);

    /* DONTNEED: private memory reads zero again, shared memory keeps. */
    p = map(2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    memset(p, 3, 2 * PG);
    madvise(p, PG, MADV_DONTNEED);
    check(p[0] == 0 && p[PG] == 3, "DONTNEED: page 0 zero, page 1 kept");
    printf("mincore after DONTNEED of page 0: %s\n", residency(p, 2));
    /* FREE: contents may go; a write after it sticks. */
    memset(p, 4, 2 * PG);
    EXPECT_OK("madvise(FREE)", madvise(p, 2 * PG, MADV_FREE));
    p[0] = 9;
    check(p[0] == 9, "a write after FREE sticks");
    munmap(p, 2 * PG);

    char *s = map(3, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
    memset(s, 5, 3 * PG);
    madvise(s, PG, MADV_DONTNEED);
    check(s[0] == 5, "DONTNEED on shared memory keeps its contents");
    EXPECT_ERR(EINVAL, "madvise(FREE) on shared memory", madvise(s, PG, MADV_FREE));
    EXPECT_ERR(EINVAL, "madvise(WIPEONFORK) on shared memory", madvise(s, PG, MADV_WIPEONFORK));
    /* REMOVE frees the shared pages for every sharer. */
    pid_t pid = fork();
    if (pid == 0) {
        /* The child touches its view first, so it has the page mapped. */
        volatile char c = s[PG];
        (void)c;
        usleep(200000);
        _exit(s[PG] == 0 && s[2 * PG] == 5 ? 0 : 1);
    }
    usleep(50000);
    EXPECT_OK("madvise(REMOVE) on shared memory", madvise(s + PG, PG, MADV_REMOVE));
    check(s[PG] == 0 && s[2 * PG] == 5, "REMOVE: that page reads zero, the next is kept");
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other sharer sees the zeros too");
    munmap(s, 3 * PG);

    /* DONTFORK and WIPEONFORK. */
    char *d = map(1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    char *w = map(1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    char *k = map(1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    d[0] = w[0] = k[0] = 8;
    EXPECT_OK("madvise(DONTFORK)", madvise(d, PG, MADV_DONTFORK));
    EXPECT_OK("madvise(WIPEONFORK)", madvise(w, PG, MADV_WIPEONFORK));
    pid = fork();
    if (pid == 0) {
        unsigned char v;
        int gone = mincore(d, PG, &v) == -1 && errno == ENOMEM;
        _exit((gone ? 1 : 0) | (w[0] == 0 ? 2 : 0) | (k[0] == 8 ? 4 : 0));
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 7, "child: DONTFORK area absent, WIPEONFORK zeroed, other kept (%d)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    check(d[0] == 8 && w[0] == 8, "the parent keeps both");
    EXPECT_OK("madvise(DOFORK)", madvise(d, PG, MADV_DOFORK));
    EXPECT_OK("madvise(KEEPONFORK)", madvise(w, PG, MADV_KEEPONFORK));
    pid = fork();
    if (pid == 0)
        _exit(d[0] == 8 && w[0] == 8 ? 0 : 1);
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "after DOFORK/KEEPONFORK the child gets both");

    /* POPULATE. */
    char *q = map(3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    EXPECT_OK("madvise(POPULATE_WRITE, page 1)", madvise(q + PG, PG, MADV_POPULATE_WRITE));
    printf("mincore after POPULATE_WRITE of page 1: %s\n", residency(q, 3));
    char *r = map(2, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS);
    EXPECT_ERR(EINVAL, "madvise(POPULATE_WRITE) on read-only memory", madvise(r, PG, MADV_POPULATE_WRITE));
    EXPECT_OK("madvise(POPULATE_READ) on read-only memory", madvise(r, PG, MADV_POPULATE_READ));
    char *none = map(1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
    EXPECT_ERR(EINVAL, "madvise(POPULATE_READ) on PROT_NONE", madvise(none, PG, MADV_POPULATE_READ));
    munmap(q + 2 * PG, PG);
    EXPECT_ERR(ENOMEM, "madvise(POPULATE_READ) over a hole", madvise(q, 3 * PG, MADV_POPULATE_READ));
}

int main(void)
{
    t_init("mem2");
    test_mincore();
    test_mlock();
    test_madvise();
    return t_done();
}
