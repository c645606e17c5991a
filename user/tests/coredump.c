/*
 * coredump: core-dumping signals.  The wait status has the core bit
 * exactly when a core file was written in full: never with RLIMIT_CORE 0
 * (the test default) or below a page, and for every core signal
 * (SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU,
 * SIGXFSZ, SIGSYS) when the limit allows it with the default pattern
 * "core".  The file is a fresh 0600 ELF core (an old "core" is replaced)
 * with NT_PRSTATUS, NT_PRPSINFO and NT_SIGINFO notes for the dying
 * thread and PT_LOAD segments holding the memory it wrote.  A dump cut
 * short by the limit still has the bit (Linux sets it once it starts).
 * A process that is not dumpable dumps nothing; one running as user 1000
 * needs to be allowed to create the file, which it then owns.
 */
#include "common.h"
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define DIR "/tmp/coredump_dir"

static char marker[64];
/* What die_of's child does first: drop dumpability, or become `as_user`
 * (which drops it) and then take it back. */
static int make_undumpable;
static uid_t as_user;

static void set_core_limit(rlim_t soft)
{
    struct rlimit rl;
    getrlimit(RLIMIT_CORE, &rl);
    rl.rlim_cur = soft;
    setrlimit(RLIMIT_CORE, &rl);
}

/* Forks a child that sets its core limit, enters DIR and dies of `sig`
 * (raised, or by the fault that causes it); returns the wait status. */
static int die_of(int sig, rlim_t limit, pid_t *pid_out, char **anon_out)
{
    char *anon = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        set_core_limit(limit);
        if (chdir(DIR) != 0)
            _exit(99);
        if (make_undumpable)
            prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        if (as_user) {
            if (setresgid(as_user, as_user, as_user) != 0 || setresuid(as_user, as_user, as_user) != 0)
                _exit(97);
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        }
        signal(sig, SIG_DFL); /* a shell may have left SIGQUIT ignored */
        snprintf(marker, sizeof marker, "KILN-CORE-MARKER-%d", (int)getpid());
        snprintf(anon, 8192, "ANON-MARKER-%d", (int)getpid());
        switch (sig) {
        case SIGSEGV: {
            volatile int *volatile bad = (int *)8;
            *bad = 1;
            break;
        }
        case SIGILL:
            __asm__ volatile("ud2");
            break;
        case SIGTRAP:
            __asm__ volatile("int3");
            break;
        case SIGFPE: {
            int one = 1, zero = 0, q;
            __asm__ volatile("cltd; idivl %2" : "=a"(q) : "a"(one), "r"(zero) : "edx");
            (void)q;
            break;
        }
        default:
            raise(sig);
        }
        _exit(98);
    }
    int st = 0;
    wait_for(c, &st, 0);
    if (pid_out)
        *pid_out = c;
    if (anon_out)
        *anon_out = anon;
    else
        munmap(anon, 8192);
    return st;
}

static unsigned char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat sb;
    fstat(fd, &sb);
    unsigned char *buf = malloc((size_t)sb.st_size + 1);
    size_t got = 0;
    ssize_t n;
    while (buf && got < (size_t)sb.st_size && (n = read(fd, buf + got, (size_t)sb.st_size - got)) > 0)
        got += (size_t)n;
    close(fd);
    *len = got;
    return buf;
}

/* The bytes at user address `addr` as the core file holds them. */
static const unsigned char *core_bytes(const unsigned char *f, size_t len, uint64_t addr, size_t n)
{
    const Elf64_Ehdr *eh = (const void *)f;
    for (int i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const void *)(f + eh->e_phoff + (size_t)i * eh->e_phentsize);
        if (ph->p_type != PT_LOAD || addr < ph->p_vaddr || addr + n > ph->p_vaddr + ph->p_filesz)
            continue;
        uint64_t off = ph->p_offset + (addr - ph->p_vaddr);
        if (off + n <= len)
            return f + off;
    }
    return NULL;
}

static void check_core(int sig, pid_t pid, const char *anon)
{
    char path[128];
    snprintf(path, sizeof path, "%s/core", DIR);
    struct stat sb;
    check(stat(path, &sb) == 0, "%s: core file written", signame(sig));
    check((sb.st_mode & 07777) == 0600, "%s: core file mode 0600", signame(sig));
    size_t len = 0;
    unsigned char *f = read_file(path, &len);
    if (!f || len < sizeof(Elf64_Ehdr)) {
        check(0, "%s: core file readable", signame(sig));
        free(f);
        return;
    }
    const Elf64_Ehdr *eh = (const void *)f;
    check(memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64, "%s: ELF64",
          signame(sig));
    check(eh->e_type == ET_CORE && eh->e_machine == EM_X86_64, "%s: ET_CORE for x86-64", signame(sig));
    const Elf64_Phdr *ph0 = (const void *)(f + eh->e_phoff);
    check(eh->e_phnum > 1 && ph0->p_type == PT_NOTE, "%s: PT_NOTE first, then segments", signame(sig));
    int prstatus = 0, psinfo = 0, siginfo = 0, rsp_ok = 0;
    size_t at = ph0->p_offset, end = ph0->p_offset + ph0->p_filesz;
    while (at + 12 <= end && end <= len) {
        const Elf64_Nhdr *nh = (const void *)(f + at);
        const unsigned char *desc = f + at + 12 + ((nh->n_namesz + 3) & ~3u);
        if (nh->n_type == NT_PRSTATUS && !prstatus) {
            short cursig;
            int npid;
            uint64_t rsp;
            memcpy(&cursig, desc + 12, 2);
            memcpy(&npid, desc + 32, 4);
            memcpy(&rsp, desc + 112 + 19 * 8, 8);
            prstatus = cursig == sig && npid == pid;
            rsp_ok = core_bytes(f, len, rsp, 8) != NULL;
        } else if (nh->n_type == NT_PRPSINFO) {
            psinfo = strncmp((const char *)desc + 40, "coredump", 16) == 0;
        } else if (nh->n_type == 0x53494749 /* NT_SIGINFO */) {
            int signo;
            memcpy(&signo, desc, 4);
            siginfo = signo == sig;
        }
        at = (size_t)(desc - f) + ((nh->n_descsz + 3) & ~3u);
    }
    check(prstatus, "%s: NT_PRSTATUS names the signal and the pid", signame(sig));
    check(psinfo, "%s: NT_PRPSINFO names the program", signame(sig));
    check(siginfo, "%s: NT_SIGINFO has the signal", signame(sig));
    check(rsp_ok, "%s: the stack pointer is in a dumped segment", signame(sig));
    char want[64];
    snprintf(want, sizeof want, "KILN-CORE-MARKER-%d", (int)pid);
    const unsigned char *m = core_bytes(f, len, (uint64_t)(uintptr_t)marker, strlen(want));
    check(m && memcmp(m, want, strlen(want)) == 0, "%s: written .bss is in the core", signame(sig));
    snprintf(want, sizeof want, "ANON-MARKER-%d", (int)pid);
    m = core_bytes(f, len, (uint64_t)(uintptr_t)anon, strlen(want));
    check(m && memcmp(m, want, strlen(want)) == 0, "%s: written anonymous memory is in the core", signame(sig));
    free(f);
}

int main(void)
{
    t_init("coredump");
    mkdir(DIR, 0755);
    unlink(DIR "/core");
    struct stat sb;

    /* The limit decides: 0 (the default here) and below a page dump nothing. */
    static const int core_sigs[] = { SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
                                     SIGSEGV, SIGXCPU, SIGXFSZ, SIGSYS };
    for (unsigned i = 0; i < sizeof core_sigs / sizeof core_sigs[0]; i++) {
        int st = die_of(core_sigs[i], 0, NULL, NULL);
        printf("RLIMIT_CORE 0, %s: %s, core bit %d\n", signame(core_sigs[i]), status_str(st), WCOREDUMP(st) ? 1 : 0);
    }
    check(stat(DIR "/core", &sb) != 0, "no core file with RLIMIT_CORE 0");
    int st = die_of(SIGABRT, 4095, NULL, NULL);
    printf("RLIMIT_CORE 4095, SIGABRT: %s, core bit %d\n", status_str(st), WCOREDUMP(st) ? 1 : 0);
    check(stat(DIR "/core", &sb) != 0, "no core file below a page");
    st = die_of(SIGTERM, RLIM_INFINITY, NULL, NULL);
    printf("SIGTERM with RLIMIT_CORE unlimited: %s, core bit %d\n", status_str(st), WCOREDUMP(st) ? 1 : 0);
    check(stat(DIR "/core", &sb) != 0, "no core file for SIGTERM");

    /* Unlimited: every core signal writes one; an old "core" is replaced. */
    for (unsigned i = 0; i < sizeof core_sigs / sizeof core_sigs[0]; i++) {
        int sig = core_sigs[i];
        int fd = open(DIR "/core", O_CREAT | O_TRUNC | O_WRONLY, 0644);
        write(fd, "old core", 8);
        close(fd);
        pid_t pid;
        char *anon;
        st = die_of(sig, RLIM_INFINITY, &pid, &anon);
        printf("RLIMIT_CORE unlimited, %s: %s, core bit %d\n", signame(sig), status_str(st), WCOREDUMP(st) ? 1 : 0);
        check_core(sig, pid, anon);
        munmap(anon, 8192);
        unlink(DIR "/core");
    }

    /* Not dumpable: no core and no bit, whatever the limit. */
    make_undumpable = 1;
    st = die_of(SIGABRT, RLIM_INFINITY, NULL, NULL);
    make_undumpable = 0;
    printf("not dumpable, SIGABRT: %s, core bit %d\n", status_str(st), WCOREDUMP(st) ? 1 : 0);
    check(stat(DIR "/core", &sb) != 0, "no core file when not dumpable");

    /* The dump is made with the process's credentials: user 1000 cannot
     * create a file in root's 0755 directory, and owns the one it makes
     * in a 0777 one. */
    as_user = 1000;
    st = die_of(SIGABRT, RLIM_INFINITY, NULL, NULL);
    printf("uid 1000 in a 0755 root directory, SIGABRT: %s, core bit %d\n", status_str(st), WCOREDUMP(st) ? 1 : 0);
    check(stat(DIR "/core", &sb) != 0, "no core file where uid 1000 may not create one");
    chmod(DIR, 0777);
    st = die_of(SIGABRT, RLIM_INFINITY, NULL, NULL);
    printf("uid 1000 in a 0777 directory, SIGABRT: %s, core bit %d\n", status_str(st), WCOREDUMP(st) ? 1 : 0);
    check(stat(DIR "/core", &sb) == 0, "uid 1000 wrote a core file");
    printf("its core file: owner %u:%u mode %o\n", sb.st_uid, sb.st_gid, sb.st_mode & 07777);
    unlink(DIR "/core");
    chmod(DIR, 0755);
    as_user = 0;

    /* A limit the dump would pass: a partial file, and still the bit. */
    st = die_of(SIGABRT, 8192, NULL, NULL);
    printf("RLIMIT_CORE 8192, SIGABRT: %s, core bit %d\n", status_str(st), WCOREDUMP(st) ? 1 : 0);
    check(stat(DIR "/core", &sb) == 0 && sb.st_size <= 8192, "partial core within the limit");
    unlink(DIR "/core");
    rmdir(DIR);
    return t_done();
}
