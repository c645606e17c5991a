/*
 * membarrier: QUERY, GLOBAL, the registration rules of the expedited
 * private commands (EPERM before registering, GET_REGISTRATIONS after),
 * flag errors, registrations kept across fork, and barriers while
 * another thread spins.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

#define Q 0
#define GLOBAL 1
#define GLOBAL_EXP 2
#define REG_GLOBAL_EXP 4
#define PRIV_EXP 8
#define REG_PRIV_EXP 16
#define PRIV_SYNC 32
#define REG_PRIV_SYNC 64
#define PRIV_RSEQ 128
#define REG_PRIV_RSEQ 256
#define GET_REG 512

static long mb(int cmd, unsigned flags, int cpu)
{
    return syscall(SYS_membarrier, cmd, flags, cpu);
}

static atomic_int stop;

static void *spinner(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        ;
    return NULL;
}

int main(void)
{
    t_init("membarrier");
    check(mb(Q, 0, 0) == 1023, "QUERY lists every command (1023)");
    EXPECT_ERR(EINVAL, "QUERY with flags", mb(Q, 1, 0));
    EXPECT_ERR(EINVAL, "command 3", mb(3, 0, 0));
    EXPECT_ERR(EINVAL, "command 1024", mb(1024, 0, 0));
    EXPECT_ERR(EINVAL, "GLOBAL with flags", mb(GLOBAL, 1, 0));
    check(mb(GET_REG, 0, 0) == 0, "no registrations at first");
    EXPECT_ERR(EPERM, "PRIVATE_EXPEDITED unregistered", mb(PRIV_EXP, 0, 0));
    EXPECT_ERR(EPERM, "PRIVATE_EXPEDITED_SYNC_CORE unregistered", mb(PRIV_SYNC, 0, 0));
    EXPECT_ERR(EPERM, "PRIVATE_EXPEDITED_RSEQ unregistered", mb(PRIV_RSEQ, 0, 0));
    EXPECT_OK("GLOBAL", mb(GLOBAL, 0, 0));
    EXPECT_OK("GLOBAL_EXPEDITED (nobody registered)", mb(GLOBAL_EXP, 0, 0));
    EXPECT_OK("REGISTER_PRIVATE_EXPEDITED", mb(REG_PRIV_EXP, 0, 0));
    check(mb(GET_REG, 0, 0) == REG_PRIV_EXP, "GET_REGISTRATIONS = 16");
    EXPECT_ERR(EPERM, "SYNC_CORE still unregistered", mb(PRIV_SYNC, 0, 0));
    EXPECT_OK("REGISTER_PRIVATE_EXPEDITED_SYNC_CORE", mb(REG_PRIV_SYNC, 0, 0));
    EXPECT_OK("REGISTER_GLOBAL_EXPEDITED", mb(REG_GLOBAL_EXP, 0, 0));
    check(mb(GET_REG, 0, 0) == (REG_PRIV_EXP | REG_PRIV_SYNC | REG_GLOBAL_EXP), "GET_REGISTRATIONS = 84");
    EXPECT_ERR(EINVAL, "RSEQ with flag 2", mb(PRIV_RSEQ, 2, 0));

    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL);
    int ok = 1;
    for (int i = 0; i < 200; i++)
        ok &= mb(PRIV_EXP, 0, 0) == 0 && mb(PRIV_SYNC, 0, 0) == 0;
    check(ok, "200 expedited barriers with a thread spinning");
    atomic_store(&stop, 1);
    pthread_join(t, NULL);

    pid_t pid = fork();
    if (pid == 0)
        _exit(mb(GET_REG, 0, 0) == (REG_PRIV_EXP | REG_PRIV_SYNC | REG_GLOBAL_EXP) ? 0 : 1);
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a fork child keeps the registrations");
    return t_done();
}
