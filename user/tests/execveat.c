/*
 * execveat: running a program through a directory descriptor, through a
 * descriptor of the program itself (AT_EMPTY_PATH, fexecve), or a script
 * that way; the name the program is told (AT_EXECFN: /dev/fd/N[/path]),
 * AT_SYMLINK_NOFOLLOW, the error cases; and execve with an empty or NULL
 * argv, which Linux (since 6.1) runs with argv[0] = "".
 *
 * The program copies itself to DIR/prog and runs that copy in helper mode
 * (EXECVEAT_HELPER in the environment), which prints what it got.
 */
#include "common.h"
#include "fsutil.h"
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#define DIR_ "/tmp/execveat"

extern char **environ;

static void print_str(const char *label, const char *s)
{
    size_t n = strlen(DIR_);
    if (!s)
        printf("%s (null)\n", label);
    else if (strlen(s) > 64)
        printf("%s <%zu bytes>\n", label, strlen(s));
    else if (strncmp(s, DIR_, n) == 0)
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
        print_str(label, argv[i]);
    }
    print_str("  argv[argc]", argv[argc]);
    print_str("  AT_EXECFN", (const char *)getauxval(AT_EXECFN));
    int envc = 0;
    for (char **e = environ; e && *e; e++)
        envc++;
    printf("  envc %d\n", envc);
    /* Linux puts the strings end to end: argv, envp, then AT_EXECFN
     * (programs that rewrite their title rely on it). */
    const char *next = argv[0];
    int contiguous = 1;
    for (int i = 0; i < argc; i++) {
        contiguous &= argv[i] == next;
        next = argv[i] + strlen(argv[i]) + 1;
    }
    for (int i = 0; i < envc; i++) {
        contiguous &= environ[i] == next;
        next = environ[i] + strlen(environ[i]) + 1;
    }
    contiguous &= (const char *)getauxval(AT_EXECFN) == next;
    printf("  strings end to end: %s\n", contiguous ? "yes" : "no");
    if (getenv("EXECVEAT_COMM")) {
        char comm[32] = "";
        int fd = open("/proc/self/comm", O_RDONLY);
        ssize_t n = read(fd, comm, sizeof comm - 1);
        comm[n > 0 ? n - 1 : 0] = 0;
        close(fd);
        printf("  comm \"%s\"\n", comm);
    }
    return 0;
}

static char *henv[] = { "EXECVEAT_HELPER=1", NULL };
static char *henv_comm[] = { "EXECVEAT_HELPER=1", "EXECVEAT_COMM=1", NULL };
static char *hargs[] = { "first", "second", NULL };

/* Runs execveat(dirfd, path, argv, envp, flags) in a child. */
static void run_at(const char *what, int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    printf("%s:\n", what);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        syscall(SYS_execveat, dirfd, path, argv, envp, flags);
        printf("  execveat = -1 %s\n", errname(errno));
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

static void copy_self(const char *to)
{
    int in = open("/proc/self/exe", O_RDONLY);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        write(out, buf, n);
    close(in);
    close(out);
}

int main(int argc, char **argv)
{
    /* Run with no environment and no arguments, it can only be a helper. */
    if (getenv("EXECVEAT_HELPER") || (argc == 1 && argv[0][0] == 0))
        return helper(argc, argv);
    t_init("execveat");
    rm_rf(DIR_);
    mkdir(DIR_, 0755);
    copy_self(DIR_ "/prog");
    check(symlink("prog", DIR_ "/link") == 0, "symlink to the program");
    mkfile(DIR_ "/script", "#!" DIR_ "/prog -s\n");
    chmod(DIR_ "/script", 0755);
    mkfile(DIR_ "/data", "data\n");

    int dir = open(DIR_, O_RDONLY | O_DIRECTORY);
    int prog = open(DIR_ "/prog", O_RDONLY);
    int path_fd = open(DIR_ "/prog", O_PATH);
    int script = open(DIR_ "/script", O_RDONLY);
    int script_cloexec = open(DIR_ "/script", O_RDONLY | O_CLOEXEC);
    /* Fixed descriptor numbers: AT_EXECFN names them. */
    dup2(dir, 10);
    dup2(prog, 11);
    dup2(path_fd, 12);
    dup2(script, 13);
    dup3(script_cloexec, 14, O_CLOEXEC);

    run_at("absolute path, AT_FDCWD", AT_FDCWD, DIR_ "/prog", hargs, henv_comm, 0);
    run_at("absolute path ignores dirfd", 11, DIR_ "/prog", hargs, henv, 0);
    run_at("relative to a directory fd", 10, "prog", hargs, henv_comm, 0);
    run_at("relative with a slash", 10, "./prog", hargs, henv, 0);
    run_at("AT_EMPTY_PATH on the program's fd", 11, "", hargs, henv, AT_EMPTY_PATH);
    run_at("AT_EMPTY_PATH on an O_PATH fd", 12, "", hargs, henv, AT_EMPTY_PATH);
    run_at("symlink followed", 10, "link", hargs, henv, 0);
    run_at("script through its fd", 13, "", hargs, henv, AT_EMPTY_PATH);
    run_at("script through a directory fd", 10, "script", hargs, henv, 0);
    run_at("script through a close-on-exec fd", 14, "", hargs, henv, AT_EMPTY_PATH);
    chdir(DIR_);
    run_at("relative to the cwd", AT_FDCWD, "prog", hargs, henv, 0);
    chdir("/");

    char *empty[] = { NULL };
    run_at("execve with an empty argv", AT_FDCWD, DIR_ "/prog", empty, henv, 0);
    run_at("execve with a NULL argv", AT_FDCWD, DIR_ "/prog", NULL, henv, 0);
    printf("execve with NULL argv and envp:\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        syscall(SYS_execve, DIR_ "/link", NULL, NULL);
        _exit(100);
    }
    int st;
    wait_for(pid, &st, 0);
    printf("  %s\n", status_str(st));

    EXPECT_ERR(ELOOP, "AT_SYMLINK_NOFOLLOW on a symlink", syscall(SYS_execveat, 10, "link", hargs, henv, AT_SYMLINK_NOFOLLOW));
    EXPECT_ERR(EINVAL, "unknown flag", syscall(SYS_execveat, 10, "prog", hargs, henv, 0x1));
    EXPECT_ERR(ENOENT, "empty path without AT_EMPTY_PATH", syscall(SYS_execveat, 11, "", hargs, henv, 0));
    EXPECT_ERR(EACCES, "AT_EMPTY_PATH on a directory fd", syscall(SYS_execveat, 10, "", hargs, henv, AT_EMPTY_PATH));
    EXPECT_ERR(EACCES, "AT_EMPTY_PATH with AT_FDCWD", syscall(SYS_execveat, AT_FDCWD, "", hargs, henv, AT_EMPTY_PATH));
    EXPECT_ERR(ENOTDIR, "relative path from a file fd", syscall(SYS_execveat, 11, "prog", hargs, henv, 0));
    EXPECT_ERR(EBADF, "bad dirfd", syscall(SYS_execveat, 99, "prog", hargs, henv, 0));
    EXPECT_ERR(EBADF, "bad fd with AT_EMPTY_PATH", syscall(SYS_execveat, 99, "", hargs, henv, AT_EMPTY_PATH));
    EXPECT_ERR(ENOENT, "missing file", syscall(SYS_execveat, 10, "nothing", hargs, henv, 0));
    EXPECT_ERR(EACCES, "not executable", syscall(SYS_execveat, 10, "data", hargs, henv, 0));
    int pipefd[2];
    pipe(pipefd);
    EXPECT_ERR(EACCES, "AT_EMPTY_PATH on a pipe", syscall(SYS_execveat, pipefd[0], "", hargs, henv, AT_EMPTY_PATH));
    EXPECT_ERR(EFAULT, "bad path pointer", syscall(SYS_execveat, 10, BAD_PTR, hargs, henv, 0));
    EXPECT_ERR(EFAULT, "bad argv pointer", syscall(SYS_execveat, 10, "prog", BAD_PTR, henv, 0));
    EXPECT_ERR(ENOENT, "missing file with a bad argv", syscall(SYS_execveat, 10, "nothing", BAD_PTR, henv, 0));
    {
        /* One string past MAX_ARG_STRLEN (32 pages). */
        size_t len = 32 * 4096;
        char *big = malloc(len + 1);
        memset(big, 'x', len);
        big[len] = 0;
        char *bigargs[] = { "x", big, NULL };
        EXPECT_ERR(E2BIG, "argument of 128 KiB", syscall(SYS_execveat, 10, "prog", bigargs, henv, 0));
        big[len - 1] = 0;
        run_at("argument of 128 KiB - 1 bytes", 10, "prog", bigargs, henv, 0);
        free(big);
    }
    rm_rf(DIR_);
    return t_done();
}
