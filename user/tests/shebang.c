/*
 * shebang: "#!" interpreter scripts as Linux runs them. The test writes
 * scripts into a scratch directory whose interpreter is this program (by
 * the symlink DIR/i), which then runs in helper mode and prints the argv
 * it got, AT_EXECFN and its command name, with the scratch directory
 * written as DIR. Covered: the argument rules (none, one, inner spaces
 * kept, trailing blanks cut, NUL, no newline), argv rewriting (the
 * script's path replaces argv[0]), relative paths, nesting up to Linux's
 * limit and ELOOP past it, the 256-byte line limit, and the errnos of a
 * missing, non-executable, directory or unrecognized interpreter.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#define DIR_ "/tmp/shebang"

extern char **environ;

/* Prints a string with the scratch directory as DIR. */
static void print_path(const char *label, const char *s)
{
    size_t n = strlen(DIR_);
    if (strncmp(s, DIR_, n) == 0)
        printf("%s DIR%s\n", label, s + n);
    else
        printf("%s \"%s\"\n", label, s);
}

static int helper(int argc, char **argv)
{
    printf("  argc %d\n", argc);
    for (int i = 0; i < argc; i++) {
        char label[32];
        snprintf(label, sizeof label, "  argv[%d]", i);
        print_path(label, argv[i]);
    }
    print_path("  AT_EXECFN", (const char *)getauxval(AT_EXECFN));
    char comm[32] = "";
    int fd = open("/proc/self/comm", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, comm, sizeof comm - 1);
        comm[n > 0 ? n - 1 : 0] = 0;
        close(fd);
    }
    printf("  comm \"%s\"\n", comm);
    char exe[1024] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *self = getenv("SHEBANG_SELF");
    printf("  /proc/self/exe is the interpreter: %s\n", self && strcmp(exe, self) == 0 ? "yes" : "no");
    return 0;
}

static char *helper_env[] = { "SHEBANG_HELPER=1", NULL, NULL };

/* Runs `path` with `argv` in a child; prints how it ended. */
static void run(const char *what, const char *path, char *const argv[])
{
    printf("%s:\n", what);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execve(path, argv, helper_env);
        printf("  execve = -1 %s\n", errname(errno));
        _exit(100);
    }
    int st;
    wait_for(pid, &st, 0);
    t_checks++;
    if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 100)) {
        t_failed++;
        printf("FAIL: %s: %s\n", what, status_str(st));
    }
}

/* execve in this process, which must fail with `want`. */
static void expect_fail(int want, const char *what, const char *path)
{
    char *argv[] = { "x", NULL };
    EXPECT_ERR(want, what, execve(path, argv, helper_env));
}

static void script(const char *name, const char *text, int mode)
{
    char p[256];
    snprintf(p, sizeof p, DIR_ "/%s", name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
    write(fd, text, strlen(text));
    close(fd);
    chmod(p, mode);
}

int main(int argc, char **argv)
{
    if (getenv("SHEBANG_HELPER"))
        return helper(argc, argv);
    t_init("shebang");

    static char self[1024], selfenv[1100];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    snprintf(selfenv, sizeof selfenv, "SHEBANG_SELF=%s", self);
    helper_env[1] = selfenv;
    rm_rf(DIR_);
    mkdir(DIR_, 0755);
    check(symlink(self, DIR_ "/i") == 0, "interpreter link");

    script("plain", "#!" DIR_ "/i\necho not for the shell\n", 0755);
    script("arg", "#!" DIR_ "/i -x\n", 0755);
    script("spaces", "#! \t" DIR_ "/i  one  two \t \n", 0755);
    script("nonl", "#!" DIR_ "/i", 0755);
    script("nonl_arg", "#!" DIR_ "/i -y", 0755);
    script("nularg", "#!" DIR_ "/i -a\0b\n", 0755);

    char *args[] = { "ignored-argv0", "a", "b c", NULL };
    run("no argument", DIR_ "/plain", args);
    run("one argument", DIR_ "/arg", args);
    run("inner spaces kept, blanks trimmed", DIR_ "/spaces", args);
    run("no newline", DIR_ "/nonl", args);
    run("no newline, argument", DIR_ "/nonl_arg", args);
    {
        /* The C string in the file ends at its NUL. */
        int fd = open(DIR_ "/nularg", O_WRONLY | O_TRUNC);
        write(fd, "#!" DIR_ "/i -a\0b\n", sizeof("#!" DIR_ "/i -a\0b\n") - 1);
        close(fd);
        run("NUL ends the argument", DIR_ "/nularg", args);
    }
    char *only0[] = { "zero", NULL };
    run("argv[0] replaced by the script path", DIR_ "/plain", only0);
    chdir(DIR_);
    run("relative path", "./plain", args);
    chdir("/");

    /* Nesting: n1 runs the helper, nK runs n(K-1). */
    script("n1", "#!" DIR_ "/i\n", 0755);
    for (int k = 2; k <= 6; k++) {
        char name[8], text[64];
        snprintf(name, sizeof name, "n%d", k);
        snprintf(text, sizeof text, "#!" DIR_ "/n%d nest%d\n", k - 1, k);
        script(name, text, 0755);
    }
    run("nested 5 deep", DIR_ "/n5", args);
    expect_fail(ELOOP, "nested 6 deep", DIR_ "/n6");

    /* The 256-byte buffer: a path that does not end inside it is refused,
     * an argument is cut at its end. */
    {
        char text[400];
        int len = snprintf(text, sizeof text, "#!" DIR_ "/");
        while (len < 300)
            text[len++] = 'p';
        text[len++] = '\n';
        text[len] = 0;
        script("longpath", text, 0755);
        expect_fail(ENOEXEC, "interpreter path past 256 bytes", DIR_ "/longpath");
        len = snprintf(text, sizeof text, "#!" DIR_ "/i ");
        while (len < 300)
            text[len++] = 'q';
        text[len++] = '\n';
        text[len] = 0;
        script("longarg", text, 0755);
        run("argument cut at 256 bytes", DIR_ "/longarg", only0);
    }

    script("missing", "#!" DIR_ "/nonexistent\n", 0755);
    expect_fail(ENOENT, "missing interpreter", DIR_ "/missing");
    script("crlf", "#!" DIR_ "/i\r\n", 0755);
    expect_fail(ENOENT, "interpreter name ending in CR", DIR_ "/crlf");
    script("dirinterp", "#!" DIR_ "\n", 0755);
    expect_fail(EACCES, "directory as interpreter", DIR_ "/dirinterp");
    script("noexec_interp", "#!/bin/true\n", 0644);
    script("to_noexec", "#!" DIR_ "/noexec_interp\n", 0755);
    expect_fail(EACCES, "interpreter without execute permission", DIR_ "/to_noexec");
    script("text", "just text\n", 0755);
    script("to_text", "#!" DIR_ "/text\n", 0755);
    expect_fail(ENOEXEC, "interpreter neither ELF nor script", DIR_ "/to_text");
    expect_fail(ENOEXEC, "executable text file", DIR_ "/text");
    script("empty", "#!\n", 0755);
    expect_fail(ENOEXEC, "#! with no interpreter", DIR_ "/empty");
    script("blank", "#!  \t \n", 0755);
    expect_fail(ENOEXEC, "#! with only blanks", DIR_ "/blank");
    script("notexec", "#!" DIR_ "/i\n", 0644);
    expect_fail(EACCES, "script without execute permission", DIR_ "/notexec");
    script("zero", "", 0755);
    expect_fail(ENOEXEC, "empty file", DIR_ "/zero");

    rm_rf(DIR_);
    return t_done();
}
