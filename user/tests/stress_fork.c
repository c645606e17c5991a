/*
 * stress_fork: many processes.  Sequential fork+exit+wait, fork+exec+wait,
 * 50 children alive at once, and forks of a process with a large COW
 * address space.  Prints counts only.
 */
#include "common.h"
#include <sys/mman.h>

#define SEQ 300
#define EXECS 100
#define CONC 50
#define BIGFORKS 30

static char self[1024];

static void seq_forks(void)
{
    int ok = 0;
    for (int i = 0; i < SEQ; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(i & 0xff);
        if (pid < 0)
            continue;
        int st;
        if (wait_for(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == (i & 0xff))
            ok++;
    }
    printf("sequential fork+exit+wait: %d/%d\n", ok, SEQ);
    check(ok == SEQ, "all sequential children exited with the right status");
}

static void seq_execs(void)
{
    int ok = 0;
    for (int i = 0; i < EXECS; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            char *argv[] = { self, "--quiet-child", NULL };
            char *envp[] = { NULL };
            execve(self, argv, envp);
            _exit(127);
        }
        if (pid < 0)
            continue;
        int st;
        if (wait_for(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 33)
            ok++;
    }
    printf("fork+exec+wait: %d/%d\n", ok, EXECS);
    check(ok == EXECS, "all exec'd children exited 33");
}

static void concurrent(void)
{
    volatile int *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(sh != MAP_FAILED, "shared page"))
        return;
    sh[0] = 0; /* alive count */
    sh[1] = 0; /* release */
    pid_t pids[CONC];
    int forked = 0;
    for (int i = 0; i < CONC; i++) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0) {
            __atomic_fetch_add(&sh[0], 1, __ATOMIC_SEQ_CST);
            while (!__atomic_load_n(&sh[1], __ATOMIC_SEQ_CST))
                sleep_ms(2);
            _exit(100 + (i % 100));
        }
        if (pids[i] > 0)
            forked++;
    }
    int64_t t0 = mono_ns();
    while (__atomic_load_n(&sh[0], __ATOMIC_SEQ_CST) < forked && mono_ns() - t0 < 20000000000LL)
        sleep_ms(2);
    int alive = __atomic_load_n(&sh[0], __ATOMIC_SEQ_CST);
    int st;
    check(waitpid(-1, &st, WNOHANG) == 0, "none exited before release");
    printf("concurrent children alive at once: %d/%d\n", alive, CONC);
    __atomic_store_n(&sh[1], 1, __ATOMIC_SEQ_CST);
    int reaped = 0, good = 0;
    for (;;) {
        pid_t r = wait(&st);
        if (r < 0)
            break;
        reaped++;
        for (int i = 0; i < CONC; i++)
            if (pids[i] == r && WIFEXITED(st) && WEXITSTATUS(st) == 100 + (i % 100))
                good++;
    }
    printf("concurrent children reaped: %d (statuses ok: %d)\n", reaped, good);
    check(forked == CONC && alive == CONC && reaped == CONC && good == CONC, "50 concurrent children");
    EXPECT_ERR(ECHILD, "wait() afterwards", wait(&st));
    munmap((void *)sh, 4096);
}

static void big_forks(void)
{
    size_t n = 16UL << 20;
    unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!check(p != MAP_FAILED, "16 MiB mapping"))
        return;
    for (size_t i = 0; i < n; i += 4096)
        p[i] = (unsigned char)(i >> 12);
    int ok = 0;
    for (int k = 0; k < BIGFORKS; k++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            /* Check a few pages and dirty every 16th page. */
            int good = 1;
            for (size_t i = 0; i < n; i += 16 * 4096) {
                if (p[i] != (unsigned char)(i >> 12))
                    good = 0;
                p[i] = 0xff;
            }
            _exit(good ? 0 : 1);
        }
        int st;
        if (pid > 0 && wait_for(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    int intact = 1;
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != (unsigned char)(i >> 12))
            intact = 0;
    printf("forks of a 16 MiB process: %d/%d\n", ok, BIGFORKS);
    check(ok == BIGFORKS, "children of a 16 MiB process saw the right data");
    check(intact, "parent's 16 MiB unchanged after children dirtied their copies");
    munmap(p, n);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--quiet-child") == 0)
        return 33;
    t_init("stress_fork");
    snprintf(self, sizeof self, "%s", argv[0]);
    seq_forks();
    seq_execs();
    concurrent();
    big_forks();
    return t_done();
}
