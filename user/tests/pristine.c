/*
 * pristine: run a command with every signal at its default action and
 * none blocked.
 *
 *   pristine PROG [ARG...]
 *
 * Dispositions set to "ignore" and the signal mask survive fork and exec,
 * so a host test started from a background job (where the shell ignores
 * SIGINT and SIGQUIT) or from a CI runner that ignores SIGINT sees a
 * different world than the same test as Kiln's init does.  A
 * non-interactive sh may not even trap a signal that was ignored when it
 * started (POSIX), so busybox's `trap ... INT` test prints something else
 * on such a host.  The host oracle therefore always runs under pristine.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pristine PROG [ARG...]\n");
        return 2;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < _NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        /* Numbers the C library reserves for itself fail with EINVAL. */
        sigaction(sig, &dfl, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "pristine: cannot run %s: %s\n", argv[1], strerror(errno));
    return 127;
}
