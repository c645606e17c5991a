/*
 * Shared helpers for the Kiln user-level test programs.
 *
 * Every program prints only deterministic output, one fact per line, and
 * ends with "<name>: N checks, M failed".  Linux is the oracle: the output
 * of a program on the host and inside Kiln must be byte-identical.
 *
 * stdout is made unbuffered by t_init(), so every printf() is one write(2)
 * and nothing is left in a buffer across fork().
 */
#ifndef KILN_TEST_COMMON_H
#define KILN_TEST_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNUSED __attribute__((unused))

/* A user address that is never mapped, and a kernel-half address. */
#define BAD_PTR ((void *)1)
#define KERNEL_PTR ((void *)0xffff800000000000UL)

static const char *t_name = "?";
static int t_checks;
static int t_failed;

static UNUSED const char *errname(int e)
{
    static char buf[32];
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    case E2BIG: return "E2BIG";
    case ENOEXEC: return "ENOEXEC";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENODEV: return "ENODEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE";
    case EMFILE: return "EMFILE";
    case ENOTTY: return "ENOTTY";
    case EFBIG: return "EFBIG";
    case ETXTBSY: return "ETXTBSY";
    case ENOSPC: return "ENOSPC";
    case ESPIPE: return "ESPIPE";
    case EROFS: return "EROFS";
    case EPIPE: return "EPIPE";
    case EDOM: return "EDOM";
    case ERANGE: return "ERANGE";
    case EDEADLK: return "EDEADLK";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case ELIBBAD: return "ELIBBAD";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EOVERFLOW: return "EOVERFLOW";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENODATA: return "ENODATA";
    case ESTALE: return "ESTALE";
    case ENOMSG: return "ENOMSG";
    case EIDRM: return "EIDRM";
    case EMSGSIZE: return "EMSGSIZE";
    case ENOTSOCK: return "ENOTSOCK";
    case ENOLCK: return "ENOLCK";
    case ECANCELED: return "ECANCELED";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ECONNRESET: return "ECONNRESET";
    case ECONNABORTED: return "ECONNABORTED";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EISCONN: return "EISCONN";
    case ENOTCONN: return "ENOTCONN";
    case EINPROGRESS: return "EINPROGRESS";
    case EALREADY: return "EALREADY";
    case EDESTADDRREQ: return "EDESTADDRREQ";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EPROTOTYPE: return "EPROTOTYPE";
    default:
        snprintf(buf, sizeof buf, "errno%d", e);
        return buf;
    }
}

static UNUSED const char *signame(int s)
{
    static char buf[32];
    switch (s) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    case SIGIO: return "SIGIO";
    default:
        snprintf(buf, sizeof buf, "signal%d", s);
        return buf;
    }
}

static UNUSED void t_init(const char *name)
{
    t_name = name;
    setvbuf(stdout, NULL, _IONBF, 0);
}

/* Print the summary line; returns the exit status for main(). */
static UNUSED int t_done(void)
{
    printf("%s: %d checks, %d failed\n", t_name, t_checks, t_failed);
    fflush(stdout);
    return t_failed ? 1 : 0;
}

/* A check: prints "<what>: ok" or "FAIL: <what>". */
static UNUSED __attribute__((format(printf, 2, 3))) int check(int cond, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t_checks++;
    if (cond) {
        printf("%s: ok\n", msg);
    } else {
        t_failed++;
        printf("FAIL: %s\n", msg);
    }
    return cond;
}

/* Silent check: only prints on failure (for loops). */
static UNUSED __attribute__((format(printf, 2, 3))) int check_quiet(int cond, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t_checks++;
    if (!cond) {
        t_failed++;
        printf("FAIL: %s\n", msg);
    }
    return cond;
}

static UNUSED int expect_err_impl(long r, int e, int want, const char *what)
{
    t_checks++;
    if (r == -1 && e == want) {
        printf("%s = -1 %s\n", what, errname(want));
        return 1;
    }
    t_failed++;
    if (r == -1)
        printf("FAIL: %s: got -1 %s, want %s\n", what, errname(e), errname(want));
    else
        printf("FAIL: %s: succeeded (%ld), want %s\n", what, r, errname(want));
    return 0;
}

static UNUSED int expect_ok_impl(long r, int e, const char *what)
{
    t_checks++;
    if (r != -1) {
        printf("%s: ok\n", what);
        return 1;
    }
    t_failed++;
    printf("FAIL: %s: got -1 %s\n", what, errname(e));
    return 0;
}

/* EXPECT_ERR(EBADF, "read(bad fd)", read(99, buf, 1)) */
#define EXPECT_ERR(want, what, expr)                       \
    do {                                                   \
        errno = 0;                                         \
        long _r = (long)(expr);                            \
        int _e = errno;                                    \
        expect_err_impl(_r, _e, (want), (what));           \
    } while (0)

/* EXPECT_OK("munmap", munmap(p, n)) : succeeds unless result is -1. */
#define EXPECT_OK(what, expr)                              \
    do {                                                   \
        errno = 0;                                         \
        long _r = (long)(expr);                            \
        int _e = errno;                                    \
        expect_ok_impl(_r, _e, (what));                    \
    } while (0)

/* Describe a wait status deterministically: "exit 7", "signal 11", ... */
static UNUSED const char *status_str(int st)
{
    static char buf[64];
    if (WIFEXITED(st))
        snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "signal %d", WTERMSIG(st));
    else if (WIFSTOPPED(st))
        snprintf(buf, sizeof buf, "stopped %d", WSTOPSIG(st));
    else if (WIFCONTINUED(st))
        snprintf(buf, sizeof buf, "continued");
    else
        snprintf(buf, sizeof buf, "status 0x%x", st);
    return buf;
}

/* waitpid that retries on EINTR; returns pid or -1. */
static UNUSED pid_t wait_for(pid_t pid, int *st, int flags)
{
    pid_t r;
    do {
        r = waitpid(pid, st, flags);
    } while (r == -1 && errno == EINTR);
    return r;
}

/* Fork; the child runs fn(arg) and _exit()s with its return value.
 * Returns the wait status of the child, or -1. */
static UNUSED int run_child(int (*fn)(void *), void *arg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int rc = fn(arg);
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    if (wait_for(pid, &st, 0) != pid)
        return -1;
    return st;
}

static UNUSED int64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static UNUSED int64_t mono_ns(void)
{
    return now_ns(CLOCK_MONOTONIC);
}

static UNUSED void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Whether the process has capability `cap` in its effective set. Where
 * capget is missing (ENOSYS), the process is root with every capability,
 * as Kiln's processes are until credentials land. */
#define CAP_SYS_RESOURCE 24
static UNUSED int has_cap(int cap)
{
    struct {
        uint32_t version;
        int pid;
    } hdr = { 0x20080522, 0 };
    struct {
        uint32_t effective, permitted, inheritable;
    } data[2];
    if (syscall(SYS_capget, &hdr, data) != 0)
        return errno == ENOSYS;
    return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/* Directory part of a path ("." when there is no slash). */
static UNUSED void path_dir(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, n, ".");
    } else if (slash == path) {
        snprintf(out, n, "/");
    } else {
        size_t len = (size_t)(slash - path);
        if (len >= n)
            len = n - 1;
        memcpy(out, path, len);
        out[len] = 0;
    }
}

static UNUSED const char *path_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Path of a sibling program: "<dir of argv0>/<name>". */
static UNUSED void sibling_path(const char *argv0, const char *name, char *out, size_t n)
{
    char dir[512];
    path_dir(argv0, dir, sizeof dir);
    if (strcmp(dir, "/") == 0)
        snprintf(out, n, "/%s", name);
    else
        snprintf(out, n, "%s/%s", dir, name);
}

#endif
