/*
 * interp: how exec treats the ELF interpreter a program's PT_INTERP
 * names (interp_prog names /tmp/interp/ld.so; this test puts different
 * things there): missing (ENOENT), a directory or a file without execute
 * permission (EACCES), empty (EIO: its ELF header cannot be read), text
 * or an ELF for another machine (ELIBBAD), a symlink to the real ld.so
 * (runs), and a static ET_EXEC program (this test itself), which the
 * kernel maps at its own addresses and enters with the program's auxv
 * (AT_BASE 0, AT_ENTRY and AT_PHDR the program's). Also PT_GNU_STACK: a
 * program that asks for an executable stack gets one, others do not.
 */
#include "common.h"
#include "fsutil.h"
#include <elf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#define DIR_ "/tmp/interp"
#define INTERP DIR_ "/ld.so"

static char prog[1024];

/* Run as interp_prog's interpreter: describe what the kernel gave us. */
static int as_interpreter(void)
{
    printf("  running as the interpreter\n");
    printf("  AT_BASE %s\n", getauxval(AT_BASE) == 0 ? "0" : "not 0");
    extern char _start[];
    printf("  AT_ENTRY is %s\n", getauxval(AT_ENTRY) == (unsigned long)_start ? "ours" : "not ours");
    Elf64_Phdr *ph = (Elf64_Phdr *)getauxval(AT_PHDR);
    const char *interp = NULL;
    unsigned long base = getauxval(AT_PHDR);
    for (unsigned long i = 0; i < getauxval(AT_PHNUM); i++) {
        if (ph[i].p_type == PT_PHDR)
            base -= ph[i].p_vaddr;
    }
    for (unsigned long i = 0; i < getauxval(AT_PHNUM); i++) {
        if (ph[i].p_type == PT_INTERP)
            interp = (const char *)(base + ph[i].p_vaddr);
    }
    printf("  AT_PHDR shows PT_INTERP %s\n", interp ? interp : "(none)");
    return 0;
}

static void run_path(const char *what, const char *path)
{
    printf("%s:\n", what);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = { (char *)path, NULL };
        char *env[] = { "INTERP_HELPER=1", NULL };
        execve(path, args, env);
        printf("  execve = -1 %s\n", errname(errno));
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    t_checks++;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        t_failed++;
        printf("FAIL: %s: %s\n", what, status_str(st));
    }
}

static void run(const char *what)
{
    run_path(what, prog);
}

static void copy(const char *from, const char *to, int mode, int patch_machine)
{
    int in = open(from, O_RDONLY);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
    char buf[65536];
    ssize_t n;
    for (int first = 1; (n = read(in, buf, sizeof buf)) > 0; first = 0) {
        if (first && patch_machine && n > 20) {
            buf[18] = EM_386;
            buf[19] = 0;
        }
        write(out, buf, n);
    }
    close(in);
    close(out);
    chmod(to, mode);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (getenv("INTERP_HELPER"))
        return as_interpreter();
    t_init("interp");
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    snprintf(prog, sizeof prog, "%.*s/interp_prog", (int)(strrchr(self, '/') - self), self);
    rm_rf(DIR_);
    mkdir(DIR_, 0755);

    run("missing interpreter");
    mkdir(INTERP, 0755);
    run("a directory");
    rmdir(INTERP);
    mkfile(INTERP, "");
    chmod(INTERP, 0755);
    run("an empty file");
    mkfile(INTERP, "#!/bin/sh\n# a script is no ELF interpreter, however long its header is\n");
    chmod(INTERP, 0755);
    run("a script");
    unlink(INTERP);
    check(symlink("/lib64/ld-linux-x86-64.so.2", INTERP) == 0, "link to the real ld.so");
    run("the real ld.so, through a symlink");
    unlink(INTERP);
    copy("/lib64/ld-linux-x86-64.so.2", INTERP, 0755, 1);
    run("ld.so with e_machine EM_386");
    copy("/lib64/ld-linux-x86-64.so.2", INTERP, 0644, 0);
    run("ld.so without execute permission");
    copy(self, INTERP, 0755, 0);
    run("a static ET_EXEC program");
    rm_rf(DIR_);

    char path[1100];
    snprintf(path, sizeof path, "%.*s/execstack_prog", (int)(strrchr(self, '/') - self), self);
    run_path("PT_GNU_STACK with PF_X", path);
    snprintf(path, sizeof path, "%.*s/noexecstack_prog", (int)(strrchr(self, '/') - self), self);
    run_path("PT_GNU_STACK without PF_X", path);
    return t_done();
}
