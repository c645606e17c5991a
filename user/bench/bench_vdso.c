/*
 * bench_vdso.c: the time calls programs make most, through the vDSO:
 * clock_gettime(CLOCK_MONOTONIC), gettimeofday and getcpu, each called
 * through the function the vDSO exports (looked up by name and version
 * LINUX_2.6, as the C libraries do).
 *
 * A kernel whose vDSO cannot serve a call in user mode (say Linux on a
 * clock source other than the TSC) falls back to the system call; each
 * benchmark first checks, with syscall user dispatch, that one call makes
 * no system call, and reports n/a when it does, so a row never compares a
 * user-mode read with a system call without saying so.
 */
#include <elf.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/time.h>

#include "kbench.h"

#define PR_SET_SYSCALL_USER_DISPATCH 59
#define SYSCALL_DISPATCH_FILTER_ALLOW 0
#define SYSCALL_DISPATCH_FILTER_BLOCK 1

/* The vDSO's `name`@LINUX_2.6, or NULL. */
static void *vdso_sym(const char *name)
{
    uintptr_t base = getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return NULL;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)base;
    Elf64_Phdr *ph = (Elf64_Phdr *)(base + eh->e_phoff);
    Elf64_Dyn *dyn = NULL;
    uintptr_t load = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD)
            load = base + ph[i].p_offset - ph[i].p_vaddr;
        else if (ph[i].p_type == PT_DYNAMIC)
            dyn = (Elf64_Dyn *)(base + ph[i].p_offset);
    }
    const char *strtab = NULL;
    Elf64_Sym *symtab = NULL;
    Elf64_Word *hash = NULL;
    Elf64_Versym *versym = NULL;
    Elf64_Verdef *verdef = NULL;
    for (Elf64_Dyn *d = dyn; d && d->d_tag != DT_NULL; d++) {
        void *p = (void *)(load + d->d_un.d_ptr);
        if (d->d_tag == DT_STRTAB)
            strtab = p;
        else if (d->d_tag == DT_SYMTAB)
            symtab = p;
        else if (d->d_tag == DT_HASH)
            hash = p;
        else if (d->d_tag == DT_VERSYM)
            versym = p;
        else if (d->d_tag == DT_VERDEF)
            verdef = p;
    }
    if (!strtab || !symtab || !hash || !versym || !verdef)
        return NULL;
    for (Elf64_Word i = 0; i < hash[1]; i++) {
        if (symtab[i].st_shndx == SHN_UNDEF || strcmp(strtab + symtab[i].st_name, name))
            continue;
        for (Elf64_Verdef *v = verdef;; v = (Elf64_Verdef *)((char *)v + v->vd_next)) {
            Elf64_Verdaux *aux = (Elf64_Verdaux *)((char *)v + v->vd_aux);
            if (v->vd_ndx == (versym[i] & 0x7fff) && !strcmp(strtab + aux->vda_name, "LINUX_2.6"))
                return (void *)(load + symtab[i].st_value);
            if (!v->vd_next)
                break;
        }
    }
    return NULL;
}

static volatile char selector = SYSCALL_DISPATCH_FILTER_ALLOW;
static volatile int syscalls_seen;

static void on_sigsys(int sig)
{
    (void)sig;
    syscalls_seen++;
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
}

/* Runs `call` once with every system call trapped: 1 if it made none,
 * 0 if it made one, -1 when the kernel cannot tell (no user dispatch). */
static int makes_no_syscall(void (*call)(void))
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigsys;
    sigaction(SIGSYS, &sa, &old);
    if (prctl(PR_SET_SYSCALL_USER_DISPATCH, 1, 0, 0, &selector) != 0)
        return -1;
    syscalls_seen = 0;
    selector = SYSCALL_DISPATCH_FILTER_BLOCK;
    call();
    selector = SYSCALL_DISPATCH_FILTER_ALLOW;
    prctl(PR_SET_SYSCALL_USER_DISPATCH, 0, 0, 0, 0);
    sigaction(SIGSYS, &old, NULL);
    return syscalls_seen == 0;
}

typedef int (*gettime_fn)(clockid_t, struct timespec *);
typedef int (*gtod_fn)(struct timeval *, void *);
typedef long (*getcpu_fn)(unsigned *, unsigned *, void *);
static gettime_fn v_gettime;
static gtod_fn v_gtod;
static getcpu_fn v_getcpu;

static void once_gettime(void)
{
    struct timespec ts;
    v_gettime(CLOCK_MONOTONIC, &ts);
}

static void once_gtod(void)
{
    struct timeval tv;
    v_gtod(&tv, NULL);
}

static void once_getcpu(void)
{
    unsigned cpu;
    v_getcpu(&cpu, NULL, NULL);
}

/* Looks `name` up into *fn and checks that one call stays in user mode. */
static int prepare(const char *name, void **fn, void (*once)(void))
{
    *fn = vdso_sym(name);
    if (!*fn) {
        snprintf(err, sizeof err, "no %s@LINUX_2.6 in the vDSO", name);
        return -1;
    }
    if (makes_no_syscall(once) == 0) {
        snprintf(err, sizeof err, "%s makes a system call (clock source without a vDSO mode?)", name);
        return -1;
    }
    return 0;
}

int b_vdso_clock_gettime(uint64_t *ns, uint64_t *ops)
{
    if (prepare("__vdso_clock_gettime", (void **)&v_gettime, once_gettime))
        return -1;
    uint64_t n = iters(200000);
    struct timespec prev = { 0, 0 }, ts;
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (v_gettime(CLOCK_MONOTONIC, &ts) != 0)
            return fail_msg("clock_gettime failed");
        if (ts.tv_sec < prev.tv_sec || (ts.tv_sec == prev.tv_sec && ts.tv_nsec < prev.tv_nsec))
            return fail_msg("CLOCK_MONOTONIC went backwards");
        prev = ts;
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

int b_vdso_gettimeofday(uint64_t *ns, uint64_t *ops)
{
    if (prepare("__vdso_gettimeofday", (void **)&v_gtod, once_gtod))
        return -1;
    uint64_t n = iters(200000);
    struct timeval tv;
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (v_gtod(&tv, NULL) != 0 || tv.tv_usec >= 1000000)
            return fail_msg("gettimeofday failed");
    }
    *ns = now() - *ns;
    *ops = n;
    return 0;
}

int b_vdso_getcpu(uint64_t *ns, uint64_t *ops)
{
    if (prepare("__vdso_getcpu", (void **)&v_getcpu, once_getcpu))
        return -1;
    uint64_t n = iters(200000);
    unsigned cpu, first = ~0u;
    for (uint64_t i = 0; i < warm(n) + n; i++) {
        if (i == warm(n))
            *ns = now();
        if (v_getcpu(&cpu, NULL, NULL) != 0)
            return fail_msg("getcpu failed");
        if (first == ~0u)
            first = cpu;
    }
    *ns = now() - *ns;
    *ops = n;
    /* A single-CPU machine runs everything on CPU 0. */
    if (sysconf(_SC_NPROCESSORS_ONLN) == 1 && first != 0)
        return fail_msg("getcpu named a CPU other than 0");
    return 0;
}
