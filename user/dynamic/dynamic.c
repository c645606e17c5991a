/*
 * dynamic (PIE) and dynamic_nopie (ET_EXEC): dynamically linked glibc
 * programs, built with the host's gcc and run with the host's own
 * ld-linux-x86-64.so.2 and libc.so.6 (Kiln's test root carries copies).
 *
 * Checks: the auxiliary vector a dynamic program gets (AT_BASE is where
 * ld.so is mapped, AT_SYSINFO_EHDR the vDSO, AT_PHDR/AT_ENTRY the
 * program, AT_EXECFN, AT_PLATFORM, AT_MINSIGSTKSZ...), the objects the
 * dynamic linker loaded (in order), a shared library of ours linked at
 * start (function, data, constructor, thread-local variable in several
 * threads), one loaded with dlopen (its thread-local block allocated
 * later), glibc using the vDSO, and LD_LIBRARY_PATH (re-executing itself
 * with it set).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TEST_NAME
#define TEST_NAME "dynamic"
#endif

extern int kt_constructed, kt_data;
extern __thread int kt_tls;
int kt_add(int, int);
int *kt_tls_addr(void);
extern char _start[];

static int checks, failed;

static void check(int ok, const char *what)
{
    checks++;
    if (ok) {
        printf("%s: ok\n", what);
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The start of the first mapping of a file whose name ends in `suffix`. */
static unsigned long mapping_of(const char *suffix)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long found = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        size_t n = strlen(line), k = strlen(suffix);
        unsigned long start, offset;
        if (n >= k && strcmp(line + n - k, suffix) == 0 && sscanf(line, "%lx-%*x %*s %lx", &start, &offset) == 2 &&
            offset == 0) {
            found = start;
            break;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void test_auxv(void)
{
    unsigned long base = getauxval(AT_BASE);
    check(base != 0, "AT_BASE is not 0 (there is an interpreter)");
    check(base == mapping_of("/ld-linux-x86-64.so.2"), "AT_BASE is where ld-linux-x86-64.so.2 is mapped");
    unsigned long ehdr = getauxval(AT_SYSINFO_EHDR);
    check(ehdr != 0 && ehdr == mapping_of("[vdso]"), "AT_SYSINFO_EHDR is the [vdso] mapping");
    check(getauxval(AT_ENTRY) == (unsigned long)_start, "AT_ENTRY is the program's _start");
    ElfW(Phdr) *phdr = (ElfW(Phdr) *)getauxval(AT_PHDR);
    int has_interp = 0;
    for (unsigned long i = 0; i < getauxval(AT_PHNUM); i++)
        has_interp |= phdr[i].p_type == PT_INTERP;
    check(getauxval(AT_PHENT) == sizeof(ElfW(Phdr)) && has_interp, "AT_PHDR/AT_PHNUM show the program's PT_INTERP");
    check(getauxval(AT_PAGESZ) == 4096, "AT_PAGESZ is 4096");
    check(getauxval(AT_CLKTCK) == 100, "AT_CLKTCK is 100");
    check(getauxval(AT_FLAGS) == 0 && getauxval(AT_SECURE) == 0, "AT_FLAGS and AT_SECURE are 0");
    check(getauxval(AT_MINSIGSTKSZ) >= 1024 && getauxval(AT_MINSIGSTKSZ) <= 65536, "AT_MINSIGSTKSZ is plausible");
    check(sysconf(_SC_MINSIGSTKSZ) >= (long)getauxval(AT_MINSIGSTKSZ), "sysconf(_SC_MINSIGSTKSZ) honours it");
    const char *platform = (const char *)getauxval(AT_PLATFORM);
    check(platform && strcmp(platform, "x86_64") == 0, "AT_PLATFORM is x86_64");
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    check(execfn && strcmp(base_name(execfn), TEST_NAME) == 0, "AT_EXECFN names the program");
    unsigned char *rnd = (unsigned char *)getauxval(AT_RANDOM);
    int nonzero = 0;
    for (int i = 0; rnd && i < 16; i++)
        nonzero |= rnd[i];
    check(rnd && nonzero, "AT_RANDOM points at 16 bytes");
    errno = 0;
    getauxval(AT_HWCAP2);
    check(errno == 0, "AT_HWCAP2 present");
    check(getauxval(AT_UID) == (unsigned long)getuid() && getauxval(AT_EUID) == (unsigned long)geteuid() &&
              getauxval(AT_GID) == (unsigned long)getgid() && getauxval(AT_EGID) == (unsigned long)getegid(),
          "AT_UID/AT_EUID/AT_GID/AT_EGID match the process");
}

static int list_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    printf("  object \"%s\"\n", info->dlpi_name[0] ? base_name(info->dlpi_name) : "");
    return 0;
}

static void *tls_worker(void *arg)
{
    long id = (long)arg;
    int ok = kt_tls == 7 && kt_tls_addr() == &kt_tls;
    kt_tls += (int)id;
    long (*bump)(long) = dlsym(RTLD_DEFAULT, "kt_plugin_bump");
    long v1 = bump ? bump(id) : -1;
    long v2 = bump ? bump(id) : -1;
    ok = ok && kt_tls == 7 + id && v1 == 1000 + id && v2 == 1000 + 2 * id;
    return (void *)(long)ok;
}

static char *self_dir(void)
{
    static char dir[1024];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    dir[n > 0 ? n : 0] = 0;
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    return dir;
}

static void test_libraries(void)
{
    printf("loaded objects:\n");
    dl_iterate_phdr(list_object, NULL);
    check(kt_constructed == 1, "libkt.so's constructor ran before main");
    check(kt_add(2, 3) == 5 && kt_data == 41, "libkt.so's function and data");
    check(kt_tls == 7 && kt_tls_addr() == &kt_tls, "libkt.so's thread-local variable, from both sides");

    char path[1200];
    snprintf(path, sizeof path, "%s/lib/libkt_plugin.so", self_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    check(h != NULL, "dlopen(lib/libkt_plugin.so)");
    if (!h)
        return;
    int (*loaded)(void) = dlsym(h, "kt_plugin_loaded");
    long (*bump)(long) = dlsym(h, "kt_plugin_bump");
    check(loaded && bump && loaded() == 1, "dlsym, and the plugin's constructor ran");
    check(bump(5) == 1005 && bump(5) == 1010, "the plugin's thread-local variable");
    pthread_t th[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, tls_worker, (void *)(i + 1));
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(th[i], &r);
        ok = ok && r;
    }
    check(ok, "3 threads: their own copies of both libraries' thread-local variables");
    check(kt_tls == 7 && bump(0) == 1010, "the main thread's copies unchanged");
    check(dlopen("libkt_path.so", RTLD_NOW) == NULL, "libkt_path.so not found without LD_LIBRARY_PATH");
    check(dlclose(h) == 0, "dlclose");
}

static void test_time(void)
{
    struct timespec a, b;
    check(clock_gettime(CLOCK_MONOTONIC, &a) == 0 && clock_gettime(CLOCK_MONOTONIC, &b) == 0 &&
              (b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec)),
          "glibc clock_gettime (through the vDSO)");
    check(time(NULL) > 0 && sched_getcpu() >= 0, "glibc time and sched_getcpu");
}

static int ld_library_path_child(void)
{
    void *h = dlopen("libkt_path.so", RTLD_NOW);
    const char *(*hello)(void) = h ? dlsym(h, "kt_path_hello") : NULL;
    printf("  %s\n", hello ? hello() : "not found");
    return hello ? 0 : 1;
}

static void test_ld_library_path(char *argv0)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "LD_LIBRARY_PATH=%s/libpath", self_dir());
    printf("LD_LIBRARY_PATH:\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = { argv0, "--ld-library-path", NULL };
        char *env[] = { dir, NULL };
        execve("/proc/self/exe", args, env);
        _exit(99);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dlopen(libkt_path.so) through LD_LIBRARY_PATH");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "--ld-library-path") == 0)
        return ld_library_path_child();
    test_auxv();
    test_libraries();
    test_time();
    test_ld_library_path(argv[0]);
    printf("%s: %d checks, %d failed\n", TEST_NAME, checks, failed);
    return failed ? 1 : 0;
}
