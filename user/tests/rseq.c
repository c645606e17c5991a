/*
 * rseq: registration rules (EINVAL for a bad length, alignment, flags or
 * a different area, EPERM for a different signature, EBUSY for the same
 * one, EFAULT for a kernel address), cpu_id/cpu_id_start/node_id/mm_cid
 * as written at registration and after a move to another CPU, the
 * unregistered values after unregistration, registrations kept by fork
 * and not by new threads, and a critical section aborted to its abort
 * handler by a signal (the handler's frame holds the abort address), by
 * preemption, and by membarrier(PRIVATE_EXPEDITED_RSEQ) from another
 * thread; a descriptor whose abort signature is wrong gets SIGSEGV.
 * The output does not depend on the number of CPUs.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>

#ifndef SYS_rseq
#define SYS_rseq 334
#endif
#define SIG 0x53053053
#define UNREGISTER 1
#define MB_PRIVATE_EXPEDITED_RSEQ 128
#define MB_REGISTER_PRIVATE_EXPEDITED_RSEQ 256

struct rseq_area {
    uint32_t cpu_id_start, cpu_id;
    uint64_t rseq_cs;
    uint32_t flags, node_id, mm_cid;
} __attribute__((aligned(32)));

struct rseq_desc {
    uint32_t version, flags;
    uint64_t start_ip, post_commit_offset, abort_ip;
} __attribute__((aligned(32)));

static long rseq(void *area, uint32_t len, int flags, uint32_t sig)
{
    return syscall(SYS_rseq, area, len, flags, sig);
}

/* run_section(area, desc): points the area at the descriptor, then spins
 * inside the critical section until stop_flag is set (returns 0, the
 * section completed) or the kernel aborts it (returns 1). */
volatile int stop_flag;
extern char cs_start[], cs_post[], cs_abort[], cs_bad_abort[];
int run_section(struct rseq_area *rs, struct rseq_desc *cs);
__asm__(".text\n"
        ".globl run_section\n"
        ".type run_section,@function\n"
        "run_section:\n"
        "    mov %rsi, 8(%rdi)\n"
        ".globl cs_start\n"
        "cs_start:\n"
        "    cmpl $0, stop_flag(%rip)\n"
        "    je cs_start\n"
        ".globl cs_post\n"
        "cs_post:\n"
        "    xor %eax, %eax\n"
        "    ret\n"
        "    .long 0x53053053\n"
        ".globl cs_abort\n"
        "cs_abort:\n"
        "    mov $1, %eax\n"
        "    ret\n"
        "    .long 0x12345678\n"
        ".globl cs_bad_abort\n"
        "cs_bad_abort:\n"
        "    mov $2, %eax\n"
        "    ret\n");

static struct rseq_area area_main, area_other, area_thread;
static struct rseq_desc desc;

static int cpu_now(void)
{
    unsigned cpu = 0;
    syscall(SYS_getcpu, &cpu, NULL, NULL);
    return (int)cpu;
}

static cpu_set_t allowed;
static int ncpus, cpus[CPU_SETSIZE];

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static volatile int sig_seen, watchdog;
static volatile uint64_t sig_rip;
static void on_alarm(int s, siginfo_t *si, void *uc)
{
    (void)s;
    (void)si;
    uint64_t rip = (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    sig_rip = rip;
    sig_seen = 1;
    /* Still inside the section: the kernel did not abort it; let it end. */
    if (rip >= (uint64_t)cs_start && rip < (uint64_t)cs_post)
        stop_flag = 1;
}

static void on_watchdog(int s)
{
    (void)s;
    watchdog = 1;
    stop_flag = 1;
}

static void arm(long usec)
{
    struct itimerval it = { { 0, 0 }, { usec / 1000000, usec % 1000000 } };
    setitimer(ITIMER_REAL, &it, NULL);
}

static void set_handler(int sig, void (*h)(int), void (*sa)(int, siginfo_t *, void *))
{
    struct sigaction act;
    memset(&act, 0, sizeof act);
    if (sa) {
        act.sa_sigaction = sa;
        act.sa_flags = SA_SIGINFO;
    } else {
        act.sa_handler = h;
    }
    sigaction(sig, &act, NULL);
}

static void fill_desc(struct rseq_desc *d, char *abort)
{
    memset(d, 0, sizeof *d);
    d->start_ip = (uint64_t)cs_start;
    d->post_commit_offset = (uint64_t)(cs_post - cs_start);
    d->abort_ip = (uint64_t)abort;
}

static void *thread_fn(void *arg)
{
    (void)arg;
    long fails = 0;
    errno = 0;
    if (!(rseq(&area_main, sizeof area_main, UNREGISTER, SIG) == -1 && errno == EINVAL))
        fails |= 1;
    area_thread.cpu_id = (uint32_t)-1;
    if (rseq(&area_thread, sizeof area_thread, 0, SIG) != 0)
        fails |= 2;
    if ((int)area_thread.cpu_id != cpu_now())
        fails |= 4;
    if (rseq(&area_thread, sizeof area_thread, UNREGISTER, SIG) != 0)
        fails |= 8;
    return (void *)fails;
}

static atomic_int compete_stop;
static void *competitor(void *arg)
{
    pin(*(int *)arg);
    while (!atomic_load(&compete_stop))
        ;
    return NULL;
}

static atomic_int barrier_stop;
static void *barrier_caller(void *arg)
{
    pin(*(int *)arg);
    while (!atomic_load(&barrier_stop))
        syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0);
    return NULL;
}

/* Runs the section once with a watchdog; the result and whether the
 * watchdog had to end it. */
static int section_with_watchdog(int *timed_out)
{
    set_handler(SIGALRM, on_watchdog, NULL);
    watchdog = 0;
    stop_flag = 0;
    arm(5000000);
    int r = run_section(&area_main, &desc);
    arm(0);
    *timed_out = watchdog;
    return r;
}

int main(void)
{
    t_init("rseq");
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &allowed))
            cpus[ncpus++] = i;

    /* Registration errors before anything is registered. */
    struct rseq_area *rs = &area_main;
    EXPECT_ERR(EINVAL, "rseq(length 31)", rseq(rs, 31, 0, SIG));
    EXPECT_ERR(EINVAL, "rseq(length 0)", rseq(rs, 0, 0, SIG));
    EXPECT_ERR(EINVAL, "rseq(misaligned)", rseq((char *)rs + 8, 32, 0, SIG));
    EXPECT_ERR(EINVAL, "rseq(flags 2)", rseq(rs, 32, 2, SIG));
    EXPECT_ERR(EINVAL, "rseq(unregister, nothing registered)", rseq(rs, 32, UNREGISTER, SIG));
    EXPECT_ERR(EFAULT, "rseq(kernel address)", rseq(KERNEL_PTR, 32, 0, SIG));

    rs->cpu_id = (uint32_t)-1;
    rs->mm_cid = 77;
    rs->node_id = 77;
    EXPECT_OK("rseq(register)", rseq(rs, 32, 0, SIG));
    check((int)rs->cpu_id == cpu_now() && rs->cpu_id_start == rs->cpu_id, "cpu_id and cpu_id_start are getcpu's");
    check(rs->node_id == 0 && rs->mm_cid == 0, "node_id 0, mm_cid 0 for a single thread");
    EXPECT_ERR(EBUSY, "rseq(register again)", rseq(rs, 32, 0, SIG));
    EXPECT_ERR(EPERM, "rseq(register again, other signature)", rseq(rs, 32, 0, SIG + 1));
    EXPECT_ERR(EINVAL, "rseq(register another area)", rseq(&area_other, 32, 0, SIG));
    EXPECT_ERR(EINVAL, "rseq(register again, length 64)", rseq(rs, 64, 0, SIG));
    EXPECT_ERR(EINVAL, "rseq(unregister another area)", rseq(&area_other, 32, UNREGISTER, SIG));
    EXPECT_ERR(EPERM, "rseq(unregister, other signature)", rseq(rs, 32, UNREGISTER, SIG + 1));
    EXPECT_ERR(EINVAL, "rseq(unregister, length 64)", rseq(rs, 64, UNREGISTER, SIG));
    EXPECT_ERR(EINVAL, "rseq(unregister with flag 2)", rseq(rs, 32, UNREGISTER | 2, SIG));

    /* Moves between CPUs. */
    int moved = 1;
    for (int i = 0; i < ncpus && i < 8; i++) {
        pin(cpus[i]);
        moved &= (int)rs->cpu_id == cpus[i] && rs->cpu_id_start == (uint32_t)cpus[i] && cpu_now() == cpus[i];
    }
    check(moved, "cpu_id follows each move to another CPU");
    sched_setaffinity(0, sizeof allowed, &allowed);

    /* A fork child keeps the registration; a new thread has none. */
    pid_t pid = fork();
    if (pid == 0) {
        int fails = 0;
        errno = 0;
        if (!(rseq(rs, 32, 0, SIG) == -1 && errno == EBUSY))
            fails |= 1;
        if ((int)rs->cpu_id != cpu_now())
            fails |= 2;
        _exit(fails);
    }
    int st = 0;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a fork child keeps the registration (%s)", status_str(st));
    pthread_t t;
    void *res = (void *)-1;
    pthread_create(&t, NULL, thread_fn, NULL);
    pthread_join(t, &res);
    check(res == NULL, "a new thread starts unregistered and registers its own area (%ld)", (long)res);

    /* A signal aborts the section before its handler runs. Preemption
     * may abort it first; then the signal is awaited and it is tried
     * again. */
    fill_desc(&desc, cs_abort);
    set_handler(SIGALRM, NULL, on_alarm);
    int signal_abort = 0, not_aborted = 0;
    for (int i = 0; i < 500 && !signal_abort && !not_aborted; i++) {
        sig_seen = 0;
        stop_flag = 0;
        arm(1000 + 100 * (i % 20));
        int r = run_section(rs, &desc);
        while (!sig_seen)
            ;
        if (r == 0)
            not_aborted = 1;
        else if (sig_rip == (uint64_t)cs_abort)
            signal_abort = 1;
    }
    check(signal_abort && !not_aborted, "a signal aborts the section: the handler's frame holds the abort address");
    check(rs->rseq_cs == 0, "the kernel cleared rseq_cs when it aborted");

    /* Preemption by another thread on the same CPU. */
    int cpu0 = cpus[0];
    pin(cpu0);
    atomic_store(&compete_stop, 0);
    pthread_create(&t, NULL, competitor, &cpu0);
    int timed_out = 0;
    int r = section_with_watchdog(&timed_out);
    atomic_store(&compete_stop, 1);
    pthread_join(t, NULL);
    check(r == 1 && !timed_out, "preemption aborts the section");
    sched_setaffinity(0, sizeof allowed, &allowed);

    /* membarrier's RSEQ command from another thread (on another CPU
     * where there is one). */
    errno = 0;
    long m = syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0);
    check(m == -1 && errno == EPERM, "membarrier(PRIVATE_EXPEDITED_RSEQ) unregistered: EPERM");
    EXPECT_OK("membarrier(REGISTER_PRIVATE_EXPEDITED_RSEQ)",
              syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0));
    check(syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0) == 0, "membarrier(PRIVATE_EXPEDITED_RSEQ)");
    check(syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 1, cpus[0]) == 0,
          "membarrier(PRIVATE_EXPEDITED_RSEQ, FLAG_CPU)");
    int cpu1 = cpus[ncpus > 1 ? 1 : 0];
    pin(cpu0);
    atomic_store(&barrier_stop, 0);
    pthread_create(&t, NULL, barrier_caller, &cpu1);
    r = section_with_watchdog(&timed_out);
    atomic_store(&barrier_stop, 1);
    pthread_join(t, NULL);
    check(r == 1 && !timed_out, "membarrier(PRIVATE_EXPEDITED_RSEQ) from another thread aborts the section");
    sched_setaffinity(0, sizeof allowed, &allowed);

    /* A descriptor whose abort address lacks the signature: SIGSEGV at
     * the next signal. */
    pid = fork();
    if (pid == 0) {
        fill_desc(&desc, cs_bad_abort);
        rs->rseq_cs = (uint64_t)&desc;
        set_handler(SIGUSR1, on_watchdog, NULL);
        raise(SIGUSR1);
        _exit(0);
    }
    wait_for(pid, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a wrong abort signature: %s", status_str(st));
    /* A descriptor of an unknown version. */
    pid = fork();
    if (pid == 0) {
        fill_desc(&desc, cs_abort);
        desc.version = 1;
        rs->rseq_cs = (uint64_t)&desc;
        set_handler(SIGUSR1, on_watchdog, NULL);
        raise(SIGUSR1);
        _exit(0);
    }
    wait_for(pid, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "descriptor version 1: %s", status_str(st));

    rs->rseq_cs = 0;
    EXPECT_OK("rseq(unregister)", rseq(rs, 32, UNREGISTER, SIG));
    check(rs->cpu_id == (uint32_t)-1 && rs->cpu_id_start == 0, "after unregistering: cpu_id -1, cpu_id_start 0");
    EXPECT_ERR(EINVAL, "rseq(unregister twice)", rseq(rs, 32, UNREGISTER, SIG));
    EXPECT_OK("rseq(register another area)", rseq(&area_other, 32, 0, SIG + 1));
    EXPECT_OK("rseq(unregister it)", rseq(&area_other, 32, UNREGISTER, SIG + 1));
    /* A longer area (Linux 6.3 and later): its length must be given again. */
    static struct rseq_area longer[2];
    EXPECT_ERR(EINVAL, "rseq(length 64, misaligned)", rseq((char *)longer + 16, 64, 0, SIG));
    EXPECT_OK("rseq(length 64)", rseq(longer, 64, 0, SIG));
    check((int)longer[0].cpu_id == cpu_now(), "a 64-byte area gets cpu_id");
    EXPECT_ERR(EINVAL, "rseq(register it again with length 32)", rseq(longer, 32, 0, SIG));
    EXPECT_ERR(EBUSY, "rseq(register it again with length 64)", rseq(longer, 64, 0, SIG));
    EXPECT_ERR(EINVAL, "rseq(unregister it with length 32)", rseq(longer, 32, UNREGISTER, SIG));
    EXPECT_OK("rseq(unregister it with length 64)", rseq(longer, 64, UNREGISTER, SIG));

    /* An unmapped area. */
    char *hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole, 4096);
    pid = fork();
    if (pid == 0) {
        errno = 0;
        long rr = rseq(hole, 32, 0, SIG);
        _exit(rr == -1 ? 100 + errno : 0);
    }
    wait_for(pid, &st, 0);
    printf("rseq(unmapped area): %s\n", status_str(st));
    return t_done();
}
