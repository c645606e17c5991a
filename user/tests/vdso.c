/*
 * vdso: the vDSO every process gets. Its symbols resolve by name and
 * version (LINUX_2.6) through AT_SYSINFO_EHDR; [vdso] and the read-only
 * [vvar] below it are in /proc/self/maps; what its functions return
 * agrees with the system calls (each value lies between two syscall
 * readings) and unknown or CPU-time clocks fall back to the system call;
 * its monotonic clock never steps back between threads on different
 * CPUs; getcpu says where a pinned thread runs; it survives fork and is
 * remapped at exec; mremap moves it (still working) but cannot grow it,
 * and a write after mprotect copies the page for this process only.
 *
 * That no system call is made is shown with syscall user dispatch
 * (prctl PR_SET_SYSCALL_USER_DISPATCH): with the selector on BLOCK every
 * system call raises SIGSYS, and the vDSO's time calls raise none.
 */
#include "common.h"
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#define SYSCALL_DISPATCH_FILTER_ALLOW 0
#define SYSCALL_DISPATCH_FILTER_BLOCK 1
#endif
#ifndef SYS_USER_DISPATCH
#define SYS_USER_DISPATCH 2
#endif
#define AUDIT_ARCH_X86_64 0xc000003eu

typedef int (*gettime_fn)(clockid_t, struct timespec *);
typedef int (*gtod_fn)(struct timeval *, struct timezone *);
typedef time_t (*time_fn)(time_t *);
typedef long (*getcpu_fn)(unsigned *, unsigned *, void *);

static uintptr_t vdso_base;

/* Looks `name`@`version` up in the vDSO's dynamic symbol table (DT_HASH
 * gives the symbol count; versions through DT_VERSYM/DT_VERDEF). */
static void *vdso_sym(const char *name, const char *version)
{
    Elf64_Ehdr *eh = (Elf64_Ehdr *)vdso_base;
    Elf64_Phdr *ph = (Elf64_Phdr *)(vdso_base + eh->e_phoff);
    Elf64_Dyn *dyn = NULL;
    uintptr_t load = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD)
            load = vdso_base + ph[i].p_offset - ph[i].p_vaddr;
        else if (ph[i].p_type == PT_DYNAMIC)
            dyn = (Elf64_Dyn *)(vdso_base + ph[i].p_offset);
    }
    if (!dyn || !load)
        return NULL;
    const char *strtab = NULL;
    Elf64_Sym *symtab = NULL;
    Elf64_Word *hash = NULL;
    Elf64_Versym *versym = NULL;
    Elf64_Verdef *verdef = NULL;
    for (Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++) {
        void *p = (void *)(load + d->d_un.d_ptr);
        switch (d->d_tag) {
        case DT_STRTAB: strtab = p; break;
        case DT_SYMTAB: symtab = p; break;
        case DT_HASH: hash = p; break;
        case DT_VERSYM: versym = p; break;
        case DT_VERDEF: verdef = p; break;
        }
    }
    if (!strtab || !symtab || !hash || !versym || !verdef)
        return NULL;
    for (Elf64_Word i = 0; i < hash[1]; i++) {
        Elf64_Sym *s = &symtab[i];
        if (s->st_shndx == SHN_UNDEF || strcmp(strtab + s->st_name, name) != 0)
            continue;
        Elf64_Half want = versym[i] & 0x7fff;
        for (Elf64_Verdef *v = verdef;; v = (Elf64_Verdef *)((char *)v + v->vd_next)) {
            Elf64_Verdaux *aux = (Elf64_Verdaux *)((char *)v + v->vd_aux);
            if (!(v->vd_flags & VER_FLG_BASE) && v->vd_ndx == want &&
                strcmp(strtab + aux->vda_name, version) == 0)
                return (void *)(load + s->st_value);
            if (!v->vd_next)
                break;
        }
    }
    return NULL;
}

static long long ts_ns(struct timespec t)
{
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static gettime_fn vgettime;
static gtod_fn vgtod;
static time_fn vtime;
static getcpu_fn vgetcpu;

static void test_symbols(void)
{
    vdso_base = getauxval(AT_SYSINFO_EHDR);
    check(vdso_base != 0, "AT_SYSINFO_EHDR present");
    if (!vdso_base)
        return;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)vdso_base;
    check(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_type == ET_DYN && eh->e_machine == EM_X86_64,
          "AT_SYSINFO_EHDR is an x86_64 ELF shared object");
    static const char *names[] = {
        "__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time", "__vdso_getcpu", "__vdso_clock_getres",
        "clock_gettime", "gettimeofday", "time", "getcpu",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        check(vdso_sym(names[i], "LINUX_2.6") != NULL, "%s@LINUX_2.6 resolves", names[i]);
    check(vdso_sym("__vdso_clock_gettime", "LINUX_9.9") == NULL, "no __vdso_clock_gettime@LINUX_9.9");
    check(vdso_sym("__vdso_no_such_call", "LINUX_2.6") == NULL, "no __vdso_no_such_call");
    vgettime = (gettime_fn)vdso_sym("__vdso_clock_gettime", "LINUX_2.6");
    vgtod = (gtod_fn)vdso_sym("__vdso_gettimeofday", "LINUX_2.6");
    vtime = (time_fn)vdso_sym("__vdso_time", "LINUX_2.6");
    vgetcpu = (getcpu_fn)vdso_sym("__vdso_getcpu", "LINUX_2.6");
}

/* The [vdso] and [vvar] lines of /proc/self/maps. */
static int find_mapping(const char *name, uintptr_t *start, uintptr_t *end, char perms[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n')
            line[--n] = 0;
        if (n >= strlen(name) && strcmp(line + n - strlen(name), name) == 0) {
            unsigned long s, e;
            sscanf(line, "%lx-%lx %4s", &s, &e, perms);
            *start = s;
            *end = e;
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void test_maps(void)
{
    uintptr_t vs, ve, ds, de;
    char vp[5] = "", dp[5] = "";
    check(find_mapping("[vdso]", &vs, &ve, vp), "[vdso] in /proc/self/maps");
    check(vs == vdso_base, "[vdso] starts at AT_SYSINFO_EHDR");
    check(strcmp(vp, "r-xp") == 0, "[vdso] is r-xp");
    check(find_mapping("[vvar]", &ds, &de, dp), "[vvar] in /proc/self/maps");
    check(de <= vs && vs - ds <= 64 * 4096, "[vvar] lies just below [vdso]");
    check(strcmp(dp, "r--p") == 0, "[vvar] is r--p");
    EXPECT_ERR(EACCES, "mprotect([vvar], PROT_READ|PROT_WRITE)", mprotect((void *)ds, 4096, PROT_READ | PROT_WRITE));
    EXPECT_ERR(EACCES, "mprotect([vvar], PROT_READ|PROT_EXEC)", mprotect((void *)ds, 4096, PROT_READ | PROT_EXEC));
    EXPECT_ERR(EINVAL, "madvise([vvar], MADV_DONTNEED)", madvise((void *)ds, de - ds, MADV_DONTNEED));
    EXPECT_OK("madvise([vdso], MADV_DONTNEED)", madvise((void *)vs, ve - vs, MADV_DONTNEED));
    struct timespec t;
    check(vgettime(CLOCK_MONOTONIC, &t) == 0, "the vDSO works after MADV_DONTNEED");
    unsigned char resident[16] = { 0 };
    check(mincore((void *)vs, 4096, resident) == 0 && (resident[0] & 1), "mincore: the vDSO's first page is resident");
}

static void test_agreement(void)
{
    static const struct { clockid_t id; const char *name; } clocks[] = {
        { CLOCK_REALTIME, "REALTIME" }, { CLOCK_MONOTONIC, "MONOTONIC" },
        { CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW" }, { CLOCK_REALTIME_COARSE, "REALTIME_COARSE" },
        { CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE" }, { CLOCK_BOOTTIME, "BOOTTIME" },
        { CLOCK_TAI, "TAI" },
    };
    for (size_t c = 0; c < sizeof clocks / sizeof *clocks; c++) {
        int ok = 1;
        for (int i = 0; i < 200 && ok; i++) {
            struct timespec a, v, b;
            syscall(SYS_clock_gettime, clocks[c].id, &a);
            ok = vgettime(clocks[c].id, &v) == 0;
            syscall(SYS_clock_gettime, clocks[c].id, &b);
            ok = ok && ts_ns(a) <= ts_ns(v) && ts_ns(v) <= ts_ns(b) && v.tv_nsec < 1000000000;
        }
        check(ok, "vDSO clock_gettime(%s) between two system calls", clocks[c].name);
        struct timespec rs = { -1, -1 }, rv = { -2, -2 };
        long sr = syscall(SYS_clock_getres, clocks[c].id, &rs);
        typedef int (*getres_fn)(clockid_t, struct timespec *);
        getres_fn vgetres = (getres_fn)vdso_sym("__vdso_clock_getres", "LINUX_2.6");
        long vr = vgetres(clocks[c].id, &rv);
        check(sr == 0 && vr == 0 && rs.tv_sec == rv.tv_sec && rs.tv_nsec == rv.tv_nsec,
              "vDSO clock_getres(%s) equals the system call's", clocks[c].name);
    }
    /* CPU-time clocks go to the system call: still correct. */
    struct timespec t1, t2;
    check(vgettime(CLOCK_PROCESS_CPUTIME_ID, &t1) == 0 && vgettime(CLOCK_THREAD_CPUTIME_ID, &t2) == 0,
          "vDSO clock_gettime(CPU-time clocks) succeeds");
    printf("vDSO clock_gettime(clock 100) returns %d\n", vgettime(100, &t1));
    printf("vDSO clock_gettime(clock -1) returns %d\n", vgettime(-1, &t1));

    int ok = 1;
    for (int i = 0; i < 200 && ok; i++) {
        struct timeval a, v, b;
        syscall(SYS_gettimeofday, &a, NULL);
        ok = vgtod(&v, NULL) == 0;
        syscall(SYS_gettimeofday, &b, NULL);
        long long la = a.tv_sec * 1000000LL + a.tv_usec, lv = v.tv_sec * 1000000LL + v.tv_usec,
                  lb = b.tv_sec * 1000000LL + b.tv_usec;
        ok = ok && la <= lv && lv <= lb && v.tv_usec < 1000000;
    }
    check(ok, "vDSO gettimeofday between two system calls");
    struct timezone zs = { -1, -1 }, zv = { -2, -2 };
    struct timeval tv;
    syscall(SYS_gettimeofday, NULL, &zs);
    check(vgtod(&tv, &zv) == 0 && zs.tz_minuteswest == zv.tz_minuteswest && zs.tz_dsttime == zv.tz_dsttime,
          "vDSO gettimeofday time zone equals the system call's");
    check(vgtod(NULL, NULL) == 0, "vDSO gettimeofday(NULL, NULL)");

    ok = 1;
    for (int i = 0; i < 50 && ok; i++) {
        time_t a = syscall(SYS_time, NULL), out = 0;
        time_t v = vtime(&out);
        time_t b = syscall(SYS_time, NULL);
        ok = a <= v && v <= b && out == v;
    }
    check(ok, "vDSO time between two system calls, and stored");
    check(vtime(NULL) > 0, "vDSO time(NULL)");
}

static void test_getcpu(void)
{
    cpu_set_t all;
    sched_getaffinity(0, sizeof all, &all);
    int ok = 1, cpus = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &all))
            continue;
        cpus++;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        sched_setaffinity(0, sizeof one, &one);
        unsigned vc = 99, vn = 99, sc = 98, sn = 98;
        long r = vgetcpu(&vc, &vn, NULL);
        syscall(SYS_getcpu, &sc, &sn, NULL);
        ok = ok && r == 0 && vc == (unsigned)c && sc == vc && sn == vn;
        ok = ok && vgetcpu(NULL, NULL, NULL) == 0;
    }
    sched_setaffinity(0, sizeof all, &all);
    check(ok && cpus > 0, "vDSO getcpu names the CPU a pinned thread runs on, as the system call does");
    check(sched_getcpu() >= 0, "libc sched_getcpu");
}

/* Threads pinned to every CPU take turns reading the monotonic clock
 * under a lock: each reading must be at least the previous one. */
static atomic_int turn_lock;
static long long last_reading;
static atomic_int backwards;

static void *reader(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
    for (int i = 0; i < 5000; i++) {
        while (atomic_exchange(&turn_lock, 1))
            ;
        struct timespec t;
        vgettime(CLOCK_MONOTONIC, &t);
        if (ts_ns(t) < last_reading)
            atomic_fetch_add(&backwards, 1);
        last_reading = ts_ns(t);
        atomic_store(&turn_lock, 0);
    }
    return NULL;
}

static void test_cross_cpu(void)
{
    cpu_set_t all;
    sched_getaffinity(0, sizeof all, &all);
    pthread_t th[64];
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 64; c++)
        if (CPU_ISSET(c, &all))
            pthread_create(&th[n++], NULL, reader, (void *)(intptr_t)c);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    check(atomic_load(&backwards) == 0, "vDSO CLOCK_MONOTONIC never steps back across CPUs");
}

/* Syscall user dispatch: count SIGSYS while the selector says BLOCK. */
static volatile char selector = SYSCALL_DISPATCH_FILTER_ALLOW;
static volatile int sigsys_count, sigsys_nr, sigsys_code;
static volatile unsigned sigsys_arch;
static volatile uintptr_t sigsys_addr;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    sigsys_count++;
    sigsys_nr = si->si_syscall;
    sigsys_code = si->si_code;
    sigsys_arch = si->si_arch;
    sigsys_addr = (uintptr_t)si->si_call_addr;
    /* rt_sigreturn is a system call too. */
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
}

static void test_no_syscall(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSYS, &sa, NULL);
    EXPECT_ERR(EINVAL, "prctl(SYSCALL_USER_DISPATCH, mode 2)", prctl(PR_SET_SYSCALL_USER_DISPATCH, 2, 0, 0, 0));
    EXPECT_ERR(EINVAL, "prctl(SYSCALL_USER_DISPATCH, OFF, offset 1)",
               prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 1, 0, 0));
    EXPECT_ERR(EINVAL, "prctl(SYSCALL_USER_DISPATCH, ON, wrapping range)",
               prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, -4096UL, 8192, &selector));
    EXPECT_ERR(EFAULT, "prctl(SYSCALL_USER_DISPATCH, ON, kernel selector)",
               prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, KERNEL_PTR));
    EXPECT_OK("prctl(SYSCALL_USER_DISPATCH, ON)",
              prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &selector));

    struct timespec t;
    struct timeval tv;
    unsigned cpu;
    selector = SYSCALL_DISPATCH_FILTER_BLOCK;
    for (int i = 0; i < 1000; i++) {
        vgettime(CLOCK_MONOTONIC, &t);
        vgettime(CLOCK_REALTIME, &t);
        vgettime(CLOCK_BOOTTIME, &t);
        vgtod(&tv, NULL);
        vtime(NULL);
        vgetcpu(&cpu, NULL, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t); /* through libc */
    }
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
    check(sigsys_count == 0, "7000 vDSO time and getcpu calls made no system call");

    selector = SYSCALL_DISPATCH_FILTER_BLOCK;
    vgettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
    uintptr_t vs = 0, ve = 0;
    char perms[5];
    find_mapping("[vdso]", &vs, &ve, perms);
    check(sigsys_count == 1 && sigsys_nr == SYS_clock_gettime, "CPU-time clock: one clock_gettime system call");
    check(sigsys_code == SYS_USER_DISPATCH && sigsys_arch == AUDIT_ARCH_X86_64,
          "SIGSYS: si_code SYS_USER_DISPATCH, si_arch AUDIT_ARCH_X86_64");
    check(sigsys_addr > vs && sigsys_addr <= ve, "SIGSYS: si_call_addr inside [vdso]");

    selector = SYSCALL_DISPATCH_FILTER_BLOCK;
    syscall(SYS_getppid);
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
    check(sigsys_count == 2 && sigsys_nr == SYS_getppid, "a direct getppid is intercepted");

    /* Calls from the allowed range always run. */
    EXPECT_OK("prctl(SYSCALL_USER_DISPATCH, ON, [vdso] allowed)",
              prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, vs, ve - vs, &selector));
    selector = SYSCALL_DISPATCH_FILTER_BLOCK;
    vgettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
    check(sigsys_count == 2, "the fallback from the allowed range is not intercepted");
    EXPECT_OK("prctl(SYSCALL_USER_DISPATCH, OFF)", prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0));
    selector = SYSCALL_DISPATCH_FILTER_BLOCK;
    syscall(SYS_getppid);
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
    check(sigsys_count == 2, "off again: nothing intercepted");
}

static int child_uses_vdso(void *arg)
{
    uintptr_t parent_base = (uintptr_t)arg;
    struct timespec t;
    int ok = getauxval(AT_SYSINFO_EHDR) == parent_base && vgettime(CLOCK_MONOTONIC, &t) == 0 && t.tv_sec >= 0;
    uintptr_t vs, ve;
    char perms[5];
    ok = ok && find_mapping("[vdso]", &vs, &ve, perms) && vs == parent_base;
    return ok ? 0 : 1;
}

/* mremap moves [vvar] and [vdso] together; the moved code still works. */
static int child_mremap(void *arg)
{
    (void)arg;
    uintptr_t vs, ve, ds, de;
    char p[5];
    if (!find_mapping("[vdso]", &vs, &ve, p) || !find_mapping("[vvar]", &ds, &de, p))
        return 10;
    size_t total = ve - ds;
    char *area = mmap(NULL, total + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return 11;
    char *nd = area + 4096;
    /* Growing a special mapping fails. */
    errno = 0;
    if (mremap((void *)vs, ve - vs, ve - vs + 4096, 0) != MAP_FAILED || errno != EFAULT)
        return 12;
    if (mremap((void *)ds, de - ds, de - ds, MREMAP_MAYMOVE | MREMAP_FIXED, nd) != nd)
        return 13;
    char *nv = nd + (vs - ds);
    if (mremap((void *)vs, ve - vs, ve - vs, MREMAP_MAYMOVE | MREMAP_FIXED, nv) != nv)
        return 14;
    gettime_fn moved = (gettime_fn)((uintptr_t)vgettime - vs + (uintptr_t)nv);
    struct timespec a, b;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a);
    if (moved(CLOCK_MONOTONIC, &b) != 0 || ts_ns(b) < ts_ns(a))
        return 15;
    uintptr_t ms, me;
    if (!find_mapping("[vdso]", &ms, &me, p) || ms != (uintptr_t)nv)
        return 16;
    if (munmap(nv, me - ms) != 0 || find_mapping("[vdso]", &ms, &me, p))
        return 17;
    return 0;
}

/* A write after mprotect copies the page: the parent's stays as it was.
 * (The whole mapping: recent kernels refuse to split a special one.) */
static int child_write(void *arg)
{
    (void)arg;
    uintptr_t vs, ve;
    char p[5];
    if (!find_mapping("[vdso]", &vs, &ve, p) || mprotect((void *)vs, ve - vs, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return 20;
    ((volatile char *)vdso_base)[EI_PAD] = 0x5a;
    return ((volatile char *)vdso_base)[EI_PAD] == 0x5a ? 0 : 21;
}

static void test_lifetime(char *self)
{
    check(run_child(child_uses_vdso, (void *)vdso_base) == 0, "a forked child has the vDSO at the same address");
    int st = run_child(child_mremap, NULL);
    check(st == 0, "mremap moves [vvar] and [vdso] (growing: EFAULT), munmap removes them (%s)", status_str(st));
    st = run_child(child_write, NULL);
    check(st == 0, "mprotect(PROT_WRITE) on [vdso] and a write in a child (%s)", status_str(st));
    check(((volatile char *)vdso_base)[EI_PAD] == 0, "the parent's vDSO page is unchanged");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = { self, "--after-exec", NULL };
        execv(self, args);
        _exit(99);
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "after execve: a vDSO that works (%s)", status_str(st));
}

static int after_exec(void)
{
    vdso_base = getauxval(AT_SYSINFO_EHDR);
    if (!vdso_base)
        return 1;
    gettime_fn f = (gettime_fn)vdso_sym("__vdso_clock_gettime", "LINUX_2.6");
    struct timespec t;
    return f && f(CLOCK_MONOTONIC, &t) == 0 && ((volatile char *)vdso_base)[EI_PAD] == 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--after-exec") == 0)
        return after_exec();
    t_init("vdso");
    test_symbols();
    if (!vgettime || !vgtod || !vtime || !vgetcpu)
        return t_done();
    test_maps();
    test_agreement();
    test_getcpu();
    test_cross_cpu();
    test_no_syscall();
    static char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    test_lifetime(self);
    return t_done();
}
