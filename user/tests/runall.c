/*
 * runall: run test programs one after another.
 *
 *   runall [-t SECS] [DIR] [NAME...]
 *
 * DIR (recognised because it contains a '/' or is "." or "..", or given as
 * "-d DIR") defaults
 * to the directory of argv[0].  Without names, the built-in list (the
 * Makefile's TESTS) is run.  For each name, <DIR>/<NAME> is fork+execve'd
 * with a fixed environment, and its exit is reported:
 *
 *   === name ===
 *   ...output of the test...
 *   === name exit 0 ===           (or "exit 3", "signal 11")
 *
 * A test running longer than the timeout (-t SECS, else KILN_TIMEOUT
 * seconds, default 300) is killed with SIGKILL.  Exit status 0 iff every test exited 0.
 */
#include "common.h"

#ifndef DEFAULT_TESTS
#define DEFAULT_TESTS "hello"
#endif

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
}

static char *child_env[] = {
    "HOME=/",
    "PATH=/t",
    "KILN_TEST=1",
    NULL,
};

static int run_one(const char *dir, const char *name, unsigned timeout)
{
    char path[1024];
    if (strcmp(dir, "/") == 0)
        snprintf(path, sizeof path, "/%s", name);
    else
        snprintf(path, sizeof path, "%s/%s", dir, name);

    printf("=== %s ===\n", name);
    fflush(stdout);

    pid_t pid = fork();
    if (pid < 0) {
        printf("=== %s exit fork-failed ===\n", name);
        return 0;
    }
    if (pid == 0) {
        char *argv[] = { path, NULL };
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGALRM, SIG_DFL);
        execve(path, argv, child_env);
        printf("runall: execve %s failed: %s\n", name, errname(errno));
        fflush(stdout);
        _exit(127);
    }

    timed_out = 0;
    alarm(timeout);
    int st = 0;
    for (;;) {
        /* Wait for any child: if runall is init, it also reaps orphans. */
        pid_t r = waitpid(-1, &st, 0);
        if (r == pid)
            break;
        if (r > 0)
            continue;
        if (r == -1 && errno == EINTR) {
            if (timed_out) {
                kill(pid, SIGKILL);
                timed_out = 0;
            }
            continue;
        }
        printf("=== %s exit wait-failed ===\n", name);
        alarm(0);
        return 0;
    }
    alarm(0);

    char desc[64];
    if (WIFEXITED(st))
        snprintf(desc, sizeof desc, "%d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(desc, sizeof desc, "signal %d", WTERMSIG(st));
    else
        snprintf(desc, sizeof desc, "status 0x%x", st);
    printf("=== %s exit %s ===\n", name, desc);
    fflush(stdout);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
    char dir[512];
    int i = 1;
    path_dir(argc > 0 ? argv[0] : "runall", dir, sizeof dir);

    unsigned timeout = 300;
    const char *t = getenv("KILN_TIMEOUT");
    if (t && atoi(t) > 0)
        timeout = (unsigned)atoi(t);
    if (i + 1 < argc && strcmp(argv[i], "-t") == 0) {
        if (atoi(argv[i + 1]) > 0)
            timeout = (unsigned)atoi(argv[i + 1]);
        i += 2;
    }

    if (i < argc && strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
        snprintf(dir, sizeof dir, "%s", argv[i + 1]);
        i += 2;
    } else if (i < argc && (strchr(argv[i], '/') || strcmp(argv[i], ".") == 0 ||
                            strcmp(argv[i], "..") == 0)) {
        snprintf(dir, sizeof dir, "%s", argv[i]);
        i++;
    }
    /* Strip trailing slashes (but keep "/"). */
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        dir[--len] = 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid gets EINTR */
    sigaction(SIGALRM, &sa, NULL);

    int total = 0, failed = 0;
    if (i < argc) {
        for (; i < argc; i++) {
            total++;
            if (!run_one(dir, argv[i], timeout))
                failed++;
        }
    } else {
        char list[] = DEFAULT_TESTS;
        for (char *save = NULL, *tok = strtok_r(list, " ", &save); tok;
             tok = strtok_r(NULL, " ", &save)) {
            total++;
            if (!run_one(dir, tok, timeout))
                failed++;
        }
    }
    printf("runall: %d tests, %d failed\n", total, failed);
    fflush(stdout);
    return failed ? 1 : 0;
}
