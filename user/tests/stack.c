/*
 * stack: stacks that grow as Linux's do.  The main stack starts small
 * ([stack] holds the arguments and 128 KiB) and grows on a fault anywhere
 * below it, up to RLIMIT_STACK; past that, or closer than the 1 MiB guard
 * gap to an accessible area below, the fault is SIGSEGV (SEGV_MAPERR at
 * the address).  An inaccessible area below needs no gap.  MAP_GROWSDOWN
 * areas grow the same way; mprotect with PROT_GROWSDOWN reaches down to
 * their start; MAP_SHARED|MAP_ANONYMOUS|MAP_GROWSDOWN is EINVAL.
 */
#include "common.h"
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define PG 4096UL
#define MB (1024UL * 1024UL)

static sigjmp_buf jump;
static volatile unsigned long fault_addr;
static volatile int fault_code;

static void on_segv(int s UNUSED, siginfo_t *si, void *u UNUSED)
{
    fault_addr = (unsigned long)si->si_addr;
    fault_code = si->si_code;
    siglongjmp(jump, 1);
}

/* Writes a byte at `addr`: 1 if it worked, 0 on SIGSEGV. */
static int touch(unsigned long addr)
{
    fault_addr = 0;
    if (sigsetjmp(jump, 1))
        return 0;
    *(volatile char *)addr = 1;
    return 1;
}

/* The maps area holding `addr`: its bounds and name (0 if none). */
static int area_of(unsigned long addr, unsigned long *start, unsigned long *end, char *perms, char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        char p[8] = "", n[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &s, &e, p, n) >= 3 && addr >= s && addr < e) {
            *start = s;
            *end = e;
            if (perms)
                strcpy(perms, p);
            if (name)
                strcpy(name, n);
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void test_main_stack(void)
{
    int local;
    unsigned long sp = (unsigned long)&local, s, e;
    char name[256];
    check(area_of(sp, &s, &e, NULL, name) && strcmp(name, "[stack]") == 0, "a local is in [stack]");
    check(e - s < MB, "[stack] starts small (under 1 MiB)");
    unsigned long top = e;

    unsigned long below = (sp & ~(PG - 1)) - 2 * MB;
    check(touch(below), "a write 2 MiB below the stack pointer works");
    check(area_of(below, &s, &e, NULL, name) && strcmp(name, "[stack]") == 0 && s == below && e == top,
          "[stack] grew down to that page");
    check(touch(below + 100 * PG), "a page between is part of it");

    unsigned long past = top - 9 * MB;
    check(!touch(past), "a write past RLIMIT_STACK (8 MiB) faults");
    check(fault_addr == past && fault_code == SEGV_MAPERR, "... SIGSEGV, SEGV_MAPERR at that address");
    area_of(below, &s, &e, NULL, NULL);
    check(s == below, "[stack] did not grow for it");

    /* An accessible area below keeps the stack 1 MiB away. */
    unsigned long stack_start = s;
    unsigned long p = stack_start - 3 * MB;
    char *guard = mmap((void *)p, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    check(guard == (char *)p, "a read-only page 3 MiB below [stack]");
    check(touch(p + PG + MB + MB / 2), "growing to 1.5 MiB above it works");
    check(!touch(p + PG + MB / 2), "growing to 0.5 MiB above it faults (guard gap)");
    check(fault_code == SEGV_MAPERR, "... SEGV_MAPERR");
    mprotect(guard, PG, PROT_NONE);
    check(touch(p + PG + MB / 2), "with the page PROT_NONE, the gap is not needed");
    munmap(guard, PG);
}

static int small_limit_child(void *arg UNUSED)
{
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    rl.rlim_cur = MB;
    setrlimit(RLIMIT_STACK, &rl);
    int local;
    unsigned long sp = (unsigned long)&local;
    int ok_near = touch((sp & ~(PG - 1)) - MB / 2);
    int ok_far = touch((sp & ~(PG - 1)) - 2 * MB);
    return ok_near * 10 + ok_far;
}

static void test_growsdown(void)
{
    unsigned long at = 0x700000000000UL, s, e;
    char perms[8];
    char *g = mmap((void *)at, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN | MAP_FIXED_NOREPLACE,
                   -1, 0);
    check(g == (char *)at, "MAP_GROWSDOWN mapping");
    check(touch(at - PG) && area_of(at - PG, &s, &e, NULL, NULL) && s == at - PG && e == at + PG,
          "a write one page below grows it");
    check(touch(at - 64 * PG) && area_of(at - 64 * PG, &s, &e, NULL, NULL) && s == at - 64 * PG,
          "a write 64 pages below grows it");
    check(!touch(at - 100 * MB), "a write 100 MiB below faults (RLIMIT_STACK)");
    char *plain = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_ERR(EINVAL, "mprotect(PROT_GROWSDOWN) of an ordinary mapping",
               mprotect(plain, PG, PROT_READ | PROT_GROWSDOWN));
    munmap(plain, PG);
    EXPECT_OK("mprotect(PROT_GROWSDOWN) of its top page", mprotect(g, PG, PROT_READ | PROT_GROWSDOWN));
    check(area_of(at - 64 * PG, &s, &e, perms, NULL) && s == at - 64 * PG && e == at + PG && strcmp(perms, "r--p") == 0,
          "... changed the whole area, down to its start");
    munmap((void *)(at - 64 * PG), 65 * PG);

    /* Close above an accessible area: no room to grow. */
    unsigned long lo = 0x6fff00000000UL;
    mmap((void *)lo, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *g2 = mmap((void *)(lo + 100 * PG), PG, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN | MAP_FIXED_NOREPLACE, -1, 0);
    check(!touch((unsigned long)g2 - PG), "MAP_GROWSDOWN 100 pages above an area cannot grow (guard gap)");
    munmap(g2, PG);
    munmap((void *)lo, PG);
    EXPECT_ERR(EINVAL, "mmap(MAP_SHARED|MAP_ANONYMOUS|MAP_GROWSDOWN)",
               mmap(NULL, PG, PROT_READ, MAP_SHARED | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0));
}

int main(void)
{
    t_init("stack");
    static char alt[65536];
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
    /* First, while the stack is still small (a child's is a copy). */
    int st = run_child(small_limit_child, NULL);
    printf("RLIMIT_STACK 1 MiB: 0.5 MiB below %s, 2 MiB below %s\n",
           WIFEXITED(st) && WEXITSTATUS(st) / 10 ? "grows" : "faults",
           WIFEXITED(st) && WEXITSTATUS(st) % 10 ? "grows" : "faults");
    test_main_stack();
    test_growsdown();
    return t_done();
}
