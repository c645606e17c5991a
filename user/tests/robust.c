/*
 * robust: robust futexes.  set_robust_list/get_robust_list and their
 * errors; a hand-built robust list whose owner dies (the kernel marks the
 * word FUTEX_OWNER_DIED, keeps FUTEX_WAITERS, wakes a waiter, and handles
 * list_op_pending); and pthread robust mutexes, private and shared across
 * processes, whose owner dies without unlocking (process exit, SIGKILL):
 * the next locker gets EOWNERDEAD.  Linux is the oracle.
 */
#include "common.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* From <linux/futex.h>, which musl-gcc does not see. */
#define FUTEX_WAITERS 0x80000000u
#define FUTEX_OWNER_DIED 0x40000000u

struct robust_head {
    uintptr_t next;   /* first entry, or &head when empty */
    long futex_offset;
    uintptr_t pending;
};

struct entry {
    uintptr_t next;
    uint32_t word;    /* the futex word, at futex_offset from the entry */
};

static long set_list(void *head, size_t len)
{
    return syscall(SYS_set_robust_list, head, len);
}

static void test_calls(void)
{
    EXPECT_ERR(EINVAL, "set_robust_list(len 23)", set_list(NULL, 23));
    EXPECT_ERR(EINVAL, "set_robust_list(len 0)", set_list(NULL, 0));
    void *head = NULL;
    size_t len = 0;
    check(syscall(SYS_get_robust_list, 0, &head, &len) == 0 && len == sizeof(struct robust_head),
          "get_robust_list(self): len is sizeof(struct robust_list_head)");
    static struct robust_head mine;
    mine.next = (uintptr_t)&mine;
    check(set_list(&mine, sizeof mine) == 0, "set_robust_list(own head)");
    check(syscall(SYS_get_robust_list, 0, &head, &len) == 0 && head == &mine, "get_robust_list returns it");
    check(syscall(SYS_get_robust_list, getpid(), &head, &len) == 0 && head == &mine, "get_robust_list(own tid)");
    EXPECT_ERR(ESRCH, "get_robust_list(no such thread)", syscall(SYS_get_robust_list, 999999, &head, &len));
    EXPECT_ERR(EFAULT, "get_robust_list(bad head pointer)", syscall(SYS_get_robust_list, 0, BAD_PTR, &len));
    EXPECT_ERR(EFAULT, "get_robust_list(bad len pointer)", syscall(SYS_get_robust_list, 0, &head, BAD_PTR));
}

/* Shared memory for the hand-built list: the child registers a list in
 * it, "holds" the words, and dies; the parent looks afterwards. */
struct shared_list {
    struct robust_head head;
    struct entry held[3];
    struct entry pending;
    uint32_t other_owner;  /* an entry owned by someone else */
    struct entry not_mine;
    volatile int woken;
};

static int child_dies_holding(void *arg)
{
    struct shared_list *s = arg;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    s->head.futex_offset = offsetof(struct entry, word);
    /* head -> held[0] -> held[1] -> held[2] -> not_mine -> head */
    s->head.next = (uintptr_t)&s->held[0];
    s->held[0].next = (uintptr_t)&s->held[1];
    s->held[1].next = (uintptr_t)&s->held[2];
    s->held[2].next = (uintptr_t)&s->not_mine;
    s->not_mine.next = (uintptr_t)&s->head;
    s->held[0].word = tid;
    s->held[1].word = tid | FUTEX_WAITERS;
    s->held[2].word = tid;
    s->not_mine.word = 12345;
    /* A lock being taken when death came: owned, not yet listed. */
    s->pending.word = tid;
    s->head.pending = (uintptr_t)&s->pending;
    if (set_list(&s->head, sizeof s->head) != 0)
        return 1;
    return 0; /* exit: the kernel walks the list */
}

static void test_hand_built(void)
{
    struct shared_list *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(s != MAP_FAILED, "shared page for a hand-built list"))
        return;
    int st = run_child(child_dies_holding, s);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child registered its list and exited");
    check(s->held[0].word == FUTEX_OWNER_DIED, "held word -> FUTEX_OWNER_DIED (%#x)", s->held[0].word);
    check(s->held[1].word == (FUTEX_OWNER_DIED | FUTEX_WAITERS), "waiters bit kept (%#x)", s->held[1].word);
    check(s->held[2].word == FUTEX_OWNER_DIED, "third entry too (%#x)", s->held[2].word);
    check(s->pending.word == FUTEX_OWNER_DIED, "list_op_pending entry too (%#x)", s->pending.word);
    check(s->not_mine.word == 12345, "a word owned by another tid is left alone");
    munmap(s, sizeof *s);
}

/* A robust mutex whose owner thread is killed with the whole process. */
struct shared_mutex {
    pthread_mutex_t m;
    volatile int locked;
};

static void init_robust(pthread_mutex_t *m, int pshared)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (pshared)
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
}

static void test_process_dies(int by_kill)
{
    const char *how = by_kill ? "SIGKILL" : "_exit";
    struct shared_mutex *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(s != MAP_FAILED, "shared page for a robust mutex (%s)", how))
        return;
    init_robust(&s->m, 1);
    s->locked = 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&s->m);
        s->locked = 1;
        if (by_kill)
            for (;;)
                pause();
        _exit(0); /* no unlock, no pthread_exit: only the kernel can tell */
    }
    while (!s->locked)
        sched_yield();
    if (by_kill)
        kill(pid, SIGKILL);
    int st;
    wait_for(pid, &st, 0);
    int r = pthread_mutex_lock(&s->m);
    check(r == EOWNERDEAD, "lock after the owner process died by %s: %s", how, r == EOWNERDEAD ? "EOWNERDEAD" : errname(r));
    if (r == EOWNERDEAD) {
        check(pthread_mutex_consistent(&s->m) == 0, "pthread_mutex_consistent (%s)", how);
        check(pthread_mutex_unlock(&s->m) == 0, "unlock (%s)", how);
        check(pthread_mutex_lock(&s->m) == 0, "lock again: 0 (%s)", how);
        pthread_mutex_unlock(&s->m);
    }
    munmap(s, sizeof *s);
}

/* A waiter already asleep on the mutex when the owner process dies. */
static pthread_mutex_t *waiting_on;
static volatile int waiter_result = -1;

static void *waiter(void *arg)
{
    (void)arg;
    waiter_result = pthread_mutex_lock(waiting_on);
    if (waiter_result == EOWNERDEAD) {
        pthread_mutex_consistent(waiting_on);
        pthread_mutex_unlock(waiting_on);
    }
    return NULL;
}

static void test_waiter_woken(void)
{
    struct shared_mutex *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!check(s != MAP_FAILED, "shared page for a contended robust mutex"))
        return;
    init_robust(&s->m, 1);
    s->locked = 0;
    int go[2];
    if (pipe(go) != 0)
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&s->m);
        s->locked = 1;
        char c;
        read(go[0], &c, 1); /* hold it until the parent's waiter sleeps */
        _exit(0);
    }
    while (!s->locked)
        sched_yield();
    waiting_on = &s->m;
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    sleep_ms(100); /* let the waiter block in FUTEX_WAIT */
    write(go[1], "x", 1);
    int st;
    wait_for(pid, &st, 0);
    pthread_join(t, NULL);
    check(waiter_result == EOWNERDEAD, "a waiter asleep when the owner died is woken with EOWNERDEAD (%s)",
          waiter_result == EOWNERDEAD ? "EOWNERDEAD" : errname(waiter_result));
    close(go[0]);
    close(go[1]);
    munmap(s, sizeof *s);
}

int main(void)
{
    t_init("robust");
    test_calls();
    test_hand_built();
    test_process_dies(0);
    test_process_dies(1);
    test_waiter_woken();
    return t_done();
}
