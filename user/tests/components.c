/*
 * Kiln's components from a Linux process (docs/components.md): the
 * /proc/kiln/components listing, and the kcomp tool's merge, split and
 * fault, each checked through what a process can see: the reply of an
 * invocation, the per-edge counts (a merged edge counts direct calls,
 * which the kernel no longer carries), the domains and the fault count.
 *
 * Kiln-only: the host has no components, so there this prints
 * "no /proc/kiln/components: skipped".
 */
#include "common.h"

#include <fcntl.h>

#include "kiln_invoke.h"
#define CAP_CLIENT 1
#define RELAY_ADD_LOOP 3

static char dir[512];

static long invoke(long cap, long op, uint64_t a, uint64_t b, uint64_t *value)
{
    return kiln_invoke(cap, op, a, b, value);
}

/* Runs `kcomp ARGS...` with its output in `out`; its exit status. */
static int kcomp(char *out, size_t size, const char *a, const char *b, const char *c)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char path[600];
        snprintf(path, sizeof path, "%s/kcomp", dir);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        char *argv[] = {"kcomp", (char *)a, (char *)b, (char *)c, NULL};
        execv(path, argv);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    while (got + 1 < size && (n = read(fds[0], out + got, size - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The (kernel, direct) counts of edge caller -> callee; 0, 0 if absent. */
static void edge(const char *caller, const char *callee, unsigned long long *kernel, unsigned long long *direct)
{
    char buf[4096], from[64], to[64];
    unsigned long long k, d;
    *kernel = *direct = 0;
    int fd = open("/proc/kiln/components", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    char *edges = strstr(buf, "\n\n");
    for (char *line = edges ? edges + 2 : buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (sscanf(line, "%63s %63s %llu %llu", from, to, &k, &d) == 4 && !strcmp(from, caller) && !strcmp(to, callee))
            *kernel = k, *direct = d;
}

/* The number after "<what> " in kcomp's output line. */
static unsigned long long after(const char *out, const char *what)
{
    const char *p = strstr(out, what);
    return p ? strtoull(p + strlen(what), NULL, 10) : ~0ULL;
}

int main(int argc, char **argv)
{
    t_init("components");
    if (access("/proc/kiln/components", R_OK) != 0) {
        printf("no /proc/kiln/components: skipped\n");
        return t_done();
    }
    snprintf(dir, sizeof dir, "%s", argc > 0 ? argv[0] : ".");
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");

    char out[4096];
    check(kcomp(out, sizeof out, "list", NULL, NULL) == 0, "kcomp list");
    check(strstr(out, "calc") && strstr(out, "client") && strstr(out, "domain"), "the listing names calc, client, domains");

    unsigned long long k0, d0, k1, d1, k2, d2;
    uint64_t v;
    /* Split: client's 50 calls to calc go through the kernel. */
    edge("client", "calc", &k0, &d0);
    check(invoke(CAP_CLIENT, RELAY_ADD_LOOP, 50, 0, &v) == 0 && v == 50, "split: add_loop(50) = 50");
    edge("client", "calc", &k1, &d1);
    check(k1 - k0 == 50 && d1 == d0, "split: 50 more on the kernel column, none direct");

    /* Merged: the same calls are direct. */
    check(kcomp(out, sizeof out, "merge", "client", "calc") == 0, "kcomp merge client calc");
    unsigned long long dc, dl;
    kcomp(out, sizeof out, "domain", "calc", NULL);
    dc = after(out, "domain");
    kcomp(out, sizeof out, "domain", "client", NULL);
    dl = after(out, "domain");
    check(dc == dl, "merged: calc and client in one domain");
    check(invoke(CAP_CLIENT, RELAY_ADD_LOOP, 50, 0, &v) == 0 && v == 50, "merged: add_loop(50) = 50");
    edge("client", "calc", &k2, &d2);
    check(k2 == k1 && d2 - d1 == 50, "merged: 50 more on the direct column, none through the kernel");

    /* Split again. */
    check(kcomp(out, sizeof out, "split", "client", NULL) == 0, "kcomp split client");
    kcomp(out, sizeof out, "domain", "client", NULL);
    check(after(out, "domain") != dc, "split: client in a domain of its own");
    check(invoke(CAP_CLIENT, RELAY_ADD_LOOP, 5, 0, &v) == 0 && v == 5, "split: add_loop(5) = 5");

    /* A fault: counted once, and calc serves the next call. */
    check(kcomp(out, sizeof out, "fault", "calc", NULL) == 0, "kcomp fault calc");
    unsigned long long f1 = after(out, "faults");
    kcomp(out, sizeof out, "fault", "calc", NULL);
    check(after(out, "faults") == f1 + 1, "a second fault counts one more");
    check(invoke(0, 0, 20, 22, &v) == 0 && v == 42, "calc serves after its faults");

    /* Refusals. */
    check(kcomp(out, sizeof out, "merge", "calc", "calc") == 1, "merge of a component with itself refused");
    check(kcomp(out, sizeof out, "merge", "calc", "nosuch") == 2, "an unknown name is a usage error");
    check(kcomp(out, sizeof out, "bogus", NULL, NULL) == 2, "an unknown command is a usage error");
    check(invoke(KILN_CONTROL, 99, 0, 0, &v) == -ENOSYS, "an unknown control operation is ENOSYS");
    check(invoke(KILN_CONTROL, 1, 0, 99, &v) == -EINVAL, "merge with no such component is EINVAL");
    return t_done();
}
