/*
 * hello: argv, envp and the auxiliary vector.
 *
 * "hello -q" exits 0 silently (used by other tests as a cheap exec target).
 * Prints argv[1..] and the environment variables whose names start with
 * "KILN_" (runall passes KILN_TEST=1), never host-specific values.
 */
#include "common.h"
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

extern char **environ;
extern char _start[];

int main(int argc, char **argv, char **envp)
{
    if (argc == 2 && strcmp(argv[1], "-q") == 0)
        return 0;

    t_init("hello");
    printf("hello from %s\n", path_base(argv[0]));
    printf("argc = %d\n", argc);
    for (int i = 1; i < argc; i++)
        printf("argv[%d] = \"%s\"\n", i, argv[i]);
    check(argv[argc] == NULL, "argv[argc] == NULL");
    check(envp == argv + argc + 1, "envp follows argv on the stack");
    check(environ == envp, "environ == envp");

    int nenv = 0;
    for (char **e = envp; *e; e++) {
        if (strncmp(*e, "KILN_", 5) == 0)
            printf("env %s\n", *e);
        nenv++;
    }
    (void)nenv;

    /* The argument strings are writable. */
    char saved = argv[0][0];
    argv[0][0] = 'X';
    check(argv[0][0] == 'X', "argv strings writable");
    argv[0][0] = saved;

    /* Auxiliary vector. */
    check(getauxval(AT_PAGESZ) == 4096, "AT_PAGESZ == 4096");
    check(sysconf(_SC_PAGESIZE) == 4096, "sysconf(_SC_PAGESIZE) == 4096");

    unsigned long phdr = getauxval(AT_PHDR);
    unsigned long phnum = getauxval(AT_PHNUM);
    unsigned long phent = getauxval(AT_PHENT);
    check(phdr != 0, "AT_PHDR nonzero");
    check(phnum != 0, "AT_PHNUM nonzero");
    check(phent == sizeof(ElfW(Phdr)), "AT_PHENT == sizeof(Elf64_Phdr)");
    if (phdr && phnum) {
        const ElfW(Phdr) *ph = (const ElfW(Phdr) *)phdr;
        int loads = 0, has_phdr_or_load = 0;
        for (unsigned long i = 0; i < phnum; i++) {
            if (ph[i].p_type == PT_LOAD)
                loads++;
            if (ph[i].p_type == PT_LOAD || ph[i].p_type == PT_PHDR)
                has_phdr_or_load = 1;
        }
        check(loads >= 1 && has_phdr_or_load, "AT_PHDR points at program headers with PT_LOAD");
    }

    unsigned long entry = getauxval(AT_ENTRY);
    check(entry != 0, "AT_ENTRY nonzero");
    check(entry == (unsigned long)_start, "AT_ENTRY == &_start");

    unsigned char *rnd = (unsigned char *)getauxval(AT_RANDOM);
    check(rnd != NULL, "AT_RANDOM nonzero");
    if (rnd) {
        volatile unsigned sum = 0;
        for (int i = 0; i < 16; i++)
            sum += rnd[i];
        (void)sum;
        check(1, "AT_RANDOM 16 bytes readable");
    }

    errno = 0;
    volatile unsigned long hw = getauxval(AT_HWCAP);
    (void)hw;
    check(1, "AT_HWCAP readable");

    check(getauxval(AT_UID) == 0 && getauxval(AT_EUID) == 0, "AT_UID == AT_EUID == 0");
    check(getauxval(AT_GID) == 0 && getauxval(AT_EGID) == 0, "AT_GID == AT_EGID == 0");
    check(getauxval(AT_SECURE) == 0, "AT_SECURE == 0");
    check(getauxval(AT_CLKTCK) == 100, "AT_CLKTCK == 100");

    const char *execfn = (const char *)getauxval(AT_EXECFN);
    check(execfn && strcmp(path_base(execfn), path_base(argv[0])) == 0,
          "AT_EXECFN names this program");

    /* Stack pointer alignment at a call boundary: a 16-aligned local. */
    __attribute__((aligned(16))) volatile char aligned_local[16];
    check(((uintptr_t)aligned_local & 15) == 0, "16-byte aligned stack local");

    return t_done();
}
