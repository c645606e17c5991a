/*
 * sysv_sem: System V semaphores.  semget (keys, nsems rules), semop
 * (atomic multi-operation sets, IPC_NOWAIT, ERANGE, EFBIG, E2BIG),
 * sleepers across processes completed in arrival order, GETNCNT and
 * GETZCNT counting by the first blocked operation, SEM_UNDO applied at
 * exit (clamped, cleared by SETVAL), semtimedop timeouts, EINTR even
 * with SA_RESTART, EIDRM, every semctl command, /proc/sysvipc/sem and
 * /proc/sys/kernel/sem.  Identifiers are never printed.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/sem.h>

#ifndef SEM_STAT_ANY
#define SEM_STAT_ANY 20
#endif

union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
    struct seminfo *info;
};

static int op1(int id, unsigned short num, short op, short flg)
{
    struct sembuf b = { num, op, flg };
    return semop(id, &b, 1);
}

static int val(int id, int num)
{
    return semctl(id, num, GETVAL);
}

static int setval(int id, int num, int v)
{
    union semun u = { .val = v };
    return semctl(id, num, SETVAL, u);
}

/* Waits until process `pid` sleeps. */
static void wait_sleeping(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    for (int i = 0; i < 500; i++) {
        int fd = open(path, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = 0;
            char *p = strrchr(buf, ')');
            if (p && p[1] == ' ' && p[2] == 'S')
                break;
        }
        sleep_ms(10);
    }
    sleep_ms(50);
}

static void test_get(key_t key)
{
    EXPECT_ERR(EINVAL, "semget nsems -1", semget(IPC_PRIVATE, -1, 0600));
    EXPECT_ERR(EINVAL, "semget nsems 32001", semget(IPC_PRIVATE, 32001, 0600));
    EXPECT_ERR(EINVAL, "semget a new set of 0", semget(IPC_PRIVATE, 0, 0600));
    EXPECT_ERR(ENOENT, "semget a missing key", semget(key, 1, 0600));
    int id = semget(key, 3, IPC_CREAT | 0600);
    check(id >= 0, "semget(key, 3, IPC_CREAT)");
    check(semget(key, 0, 0) == id && semget(key, 2, 0) == id, "found again with nsems 0 or 2");
    EXPECT_ERR(EINVAL, "found with nsems 4 > 3", semget(key, 4, 0));
    EXPECT_ERR(EINVAL, "nsems checked before the lookup", semget(key, 32001, 0));
    EXPECT_ERR(EEXIST, "IPC_CREAT|IPC_EXCL", semget(key, 3, IPC_CREAT | IPC_EXCL | 0600));
    struct semid_ds ds;
    union semun u = { .buf = &ds };
    check(semctl(id, 0, IPC_STAT, u) == 0, "IPC_STAT");
    printf("new set: mode 0%o uid %d cuid %d nsems %lu otime %ld\n", ds.sem_perm.mode, ds.sem_perm.uid,
           ds.sem_perm.cuid, (unsigned long)ds.sem_nsems, (long)ds.sem_otime);
    long now = (long)time(NULL);
    check(ds.sem_ctime >= now - 2 && ds.sem_ctime <= now, "sem_ctime is now");
    check(val(id, 0) == 0 && val(id, 2) == 0, "values start at 0");
    check(semctl(id, 0, IPC_RMID) == 0, "IPC_RMID");
    EXPECT_ERR(EINVAL, "GETVAL of a removed set", val(id, 0));
    EXPECT_ERR(ENOENT, "its key is free again", semget(key, 1, 0));
}

static void test_ops(void)
{
    int id = semget(IPC_PRIVATE, 3, 0600);
    check(op1(id, 0, 2, 0) == 0 && val(id, 0) == 2, "+2");
    check(semctl(id, 0, GETPID) == getpid(), "GETPID is us");
    struct sembuf two[2] = { { 0, -1, 0 }, { 1, -1, IPC_NOWAIT } };
    EXPECT_ERR(EAGAIN, "{0: -1, 1: -1 NOWAIT}: the second cannot proceed", semop(id, two, 2));
    check(val(id, 0) == 2, "all or nothing: sem 0 unchanged");
    struct sembuf same[2] = { { 0, -1, 0 }, { 0, -2, IPC_NOWAIT } };
    EXPECT_ERR(EAGAIN, "{0: -1, 0: -2}: the second sees the first", semop(id, same, 2));
    struct sembuf mix[3] = { { 1, 5, 0 }, { 0, -2, 0 }, { 1, -5, 0 } };
    check(semop(id, mix, 3) == 0, "{1: +5, 0: -2, 1: -5}");
    printf("values %d %d %d\n", val(id, 0), val(id, 1), val(id, 2));
    struct sembuf zero[2] = { { 0, 0, 0 }, { 1, 0, 0 } };
    check(semop(id, zero, 2) == 0, "wait-for-zero on zeros passes");
    check(op1(id, 2, 1, 0) == 0, "+1 on sem 2");
    EXPECT_ERR(EAGAIN, "wait-for-zero on 1, IPC_NOWAIT", op1(id, 2, 0, IPC_NOWAIT));
    check(setval(id, 0, 32767) == 0, "SETVAL 32767");
    EXPECT_ERR(ERANGE, "+1 past SEMVMX", op1(id, 0, 1, 0));
    EXPECT_ERR(ERANGE, "+1 past SEMVMX even with IPC_NOWAIT", op1(id, 0, 1, IPC_NOWAIT));
    EXPECT_ERR(EFBIG, "sem_num 3 of 3", op1(id, 3, 1, 0));
    EXPECT_ERR(EINVAL, "nsops 0", semop(id, two, 0));
    static struct sembuf many[501];
    EXPECT_ERR(E2BIG, "nsops 501 (semopm 500)", semop(id, many, 501));
    EXPECT_ERR(EFAULT, "bad sops pointer", semop(id, BAD_PTR, 1));
    EXPECT_ERR(EINVAL, "negative id", op1(-1, 0, 1, 0));
    EXPECT_ERR(EINVAL, "unknown id", op1(id ^ 0x4000, 0, 1, 0));
    EXPECT_ERR(E2BIG, "E2BIG before the id check", semop(-1, many, 501));
    struct semid_ds ds;
    union semun u = { .buf = &ds };
    semctl(id, 0, IPC_STAT, u);
    long now = (long)time(NULL);
    check(ds.sem_otime >= now - 2 && ds.sem_otime <= now, "sem_otime is now");
    semctl(id, 0, IPC_RMID);
}

static void test_ctl(void)
{
    int id = semget(IPC_PRIVATE, 4, 0600);
    EXPECT_ERR(ERANGE, "SETVAL 32768", setval(id, 0, 32768));
    EXPECT_ERR(ERANGE, "SETVAL -1", setval(id, 0, -1));
    EXPECT_ERR(ERANGE, "SETVAL's range is checked before the id", setval(-5 & 0x7fffffff, 0, 40000));
    EXPECT_ERR(EINVAL, "SETVAL semnum 4", setval(id, 4, 1));
    EXPECT_ERR(EINVAL, "GETVAL semnum -1", val(id, -1));
    EXPECT_ERR(EINVAL, "GETNCNT semnum 4", semctl(id, 4, GETNCNT));
    unsigned short in[4] = { 1, 2, 3, 4 }, out[4] = { 0 };
    union semun a = { .array = in };
    check(semctl(id, 0, SETALL, a) == 0, "SETALL 1 2 3 4");
    a.array = out;
    check(semctl(id, 0, GETALL, a) == 0, "GETALL");
    printf("GETALL: %d %d %d %d\n", out[0], out[1], out[2], out[3]);
    in[2] = 32768;
    a.array = in;
    EXPECT_ERR(ERANGE, "SETALL with a value of 32768", semctl(id, 0, SETALL, a));
    a.array = BAD_PTR;
    EXPECT_ERR(EFAULT, "SETALL from a bad pointer", semctl(id, 0, SETALL, a));
    EXPECT_ERR(EFAULT, "GETALL to a bad pointer", semctl(id, 0, GETALL, a));
    check(semctl(id, 3, GETPID) == getpid(), "SETALL sets sempid");
    struct semid_ds ds;
    union semun u = { .buf = &ds };
    semctl(id, 0, IPC_STAT, u);
    ds.sem_perm.mode = 0640;
    ds.sem_perm.uid = 42;
    check(semctl(id, 0, IPC_SET, u) == 0, "IPC_SET mode 0640 uid 42");
    semctl(id, 0, IPC_STAT, u);
    printf("after IPC_SET: mode 0%o uid %d cuid %d\n", ds.sem_perm.mode, ds.sem_perm.uid, ds.sem_perm.cuid);
    EXPECT_ERR(EFAULT, "IPC_STAT to a bad pointer", semctl(id, 0, IPC_STAT, (union semun){ .buf = BAD_PTR }));
    check(semctl(id & 0x7fff, 0, SEM_STAT, u) == id, "SEM_STAT by index returns the id");
    check(semctl(id & 0x7fff, 0, SEM_STAT_ANY, u) == id, "SEM_STAT_ANY by index returns the id");
    struct seminfo si;
    union semun iu = { .info = &si };
    int max = semctl(0, 0, IPC_INFO, iu);
    check(max >= (id & 0x7fff), "IPC_INFO returns the highest index in use");
    printf("IPC_INFO: semmni %d semmns %d semmsl %d semopm %d semvmx %d semmnu %d semmap %d semume %d semusz %d "
           "semaem %d\n",
           si.semmni, si.semmns, si.semmsl, si.semopm, si.semvmx, si.semmnu, si.semmap, si.semume, si.semusz,
           si.semaem);
    max = semctl(0, 0, SEM_INFO, iu);
    check(max >= (id & 0x7fff) && si.semusz >= 1 && si.semaem >= 4, "SEM_INFO counts sets and semaphores");
    EXPECT_ERR(EINVAL, "semctl unknown command", semctl(id, 0, 99));
    EXPECT_ERR(EINVAL, "semctl negative id", semctl(-1, 0, GETVAL));
    EXPECT_ERR(EINVAL, "semctl IPC_64|IPC_STAT", semctl(id, 0, 0x100 | IPC_STAT, u));
    semctl(id, 0, IPC_RMID);
    int fd = open("/proc/sys/kernel/sem", O_RDONLY);
    char buf[64] = { 0 };
    read(fd, buf, sizeof buf - 1);
    close(fd);
    printf("/proc/sys/kernel/sem: %s", buf);
}

/* A child that runs `ops` and reports on `out` with `tag` once it has. */
static pid_t sleeper(int id, struct sembuf *ops, int n, int out, char tag)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int r = semop(id, ops, n);
        char c = r == 0 ? tag : '!';
        write(out, &c, 1);
        _exit(r == 0 ? 0 : 1);
    }
    return pid;
}

static void test_sleepers(void)
{
    int id = semget(IPC_PRIVATE, 2, 0600);
    int p[2];
    pipe(p);
    struct sembuf down = { 0, -1, 0 };
    pid_t a = sleeper(id, &down, 1, p[1], 'a');
    wait_sleeping(a);
    pid_t b = sleeper(id, &down, 1, p[1], 'b');
    wait_sleeping(b);
    printf("two sleepers on sem 0: GETNCNT %d GETZCNT %d\n", semctl(id, 0, GETNCNT), semctl(id, 0, GETZCNT));
    check(setval(id, 0, 1) == 0, "SETVAL 1 wakes one");
    char c[2] = { 0 };
    read(p[0], &c[0], 1);
    wait_for(a, NULL, 0);
    printf("first to go: %c; GETNCNT now %d, value %d\n", c[0], semctl(id, 0, GETNCNT), val(id, 0));
    check(op1(id, 0, 1, 0) == 0, "+1 wakes the other");
    read(p[0], &c[1], 1);
    wait_for(b, NULL, 0);
    printf("second: %c; value %d\n", c[1], val(id, 0));
    check(semctl(id, 0, GETPID) == b, "GETPID is the sleeper the kernel completed");

    /* Counts go by the first operation that blocked. */
    struct sembuf pair[2] = { { 0, -2, 0 }, { 1, 0, 0 } };
    setval(id, 1, 1);
    pid_t c1 = sleeper(id, pair, 2, p[1], 'c');
    wait_sleeping(c1);
    printf("{0: -2, 1: 0} asleep: ncnt(0) %d zcnt(0) %d ncnt(1) %d zcnt(1) %d\n", semctl(id, 0, GETNCNT),
           semctl(id, 0, GETZCNT), semctl(id, 1, GETNCNT), semctl(id, 1, GETZCNT));
    check(setval(id, 0, 2) == 0, "sem 0 = 2: now the wait for zero blocks");
    sleep_ms(50);
    printf("then: ncnt(0) %d zcnt(1) %d\n", semctl(id, 0, GETNCNT), semctl(id, 1, GETZCNT));
    check(op1(id, 1, -1, 0) == 0, "sem 1 = 0 completes it");
    read(p[0], &c[0], 1);
    wait_for(c1, NULL, 0);
    printf("completed: %c; values %d %d\n", c[0], val(id, 0), val(id, 1));

    /* Wait-for-zero sleepers. */
    setval(id, 1, 3);
    struct sembuf z = { 1, 0, 0 };
    pid_t d = sleeper(id, &z, 1, p[1], 'd');
    wait_sleeping(d);
    printf("zero-waiter: GETZCNT(1) %d\n", semctl(id, 1, GETZCNT));
    check(op1(id, 1, -3, 0) == 0, "-3 brings sem 1 to zero");
    read(p[0], &c[0], 1);
    wait_for(d, NULL, 0);
    printf("zero-waiter went: %c\n", c[0]);

    /* IPC_RMID wakes sleepers with EIDRM. */
    fflush(stdout);
    pid_t e = fork();
    if (e == 0) {
        errno = 0;
        int r = op1(id, 0, -5, 0);
        _exit(r == -1 && errno == EIDRM ? 0 : 1);
    }
    wait_sleeping(e);
    semctl(id, 0, IPC_RMID);
    int st;
    wait_for(e, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a sleeper on a removed set gets EIDRM");
    close(p[0]);
    close(p[1]);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int s)
{
    (void)s;
    alarms++;
}

static void test_timeouts(void)
{
    int id = semget(IPC_PRIVATE, 1, 0600);
    struct sembuf down = { 0, -1, 0 };
    struct timespec ts = { 0, 100000000 };
    int64_t t0 = mono_ns();
    EXPECT_ERR(EAGAIN, "semtimedop times out", semtimedop(id, &down, 1, &ts));
    check(mono_ns() - t0 >= 100000000, "after 100 ms");
    ts.tv_nsec = 1000000000;
    EXPECT_ERR(EINVAL, "tv_nsec 1e9", semtimedop(id, &down, 1, &ts));
    ts.tv_sec = -1;
    ts.tv_nsec = 0;
    EXPECT_ERR(EINVAL, "tv_sec -1", semtimedop(id, &down, 1, &ts));
    EXPECT_ERR(EFAULT, "bad timeout pointer", semtimedop(id, &down, 1, BAD_PTR));
    op1(id, 0, 1, 0);
    ts.tv_sec = 0;
    check(semtimedop(id, &down, 1, &ts) == 0, "semtimedop that can proceed");
    struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    EXPECT_ERR(EINTR, "semop interrupted, not restarted despite SA_RESTART", semop(id, &down, 1));
    check(alarms == 1, "the handler ran");
    signal(SIGALRM, SIG_DFL);
    semctl(id, 0, IPC_RMID);
}

static int child_then_exit(int id, struct sembuf *ops, int n)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(semop(id, ops, n) == 0 ? 0 : 1);
    int st;
    wait_for(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? pid : -1;
}

static void test_undo(void)
{
    int id = semget(IPC_PRIVATE, 3, 0600);
    struct sembuf up = { 0, 3, SEM_UNDO };
    pid_t pid = child_then_exit(id, &up, 1);
    check(pid > 0, "a child adds 3 with SEM_UNDO and exits");
    printf("after its exit: %d\n", val(id, 0));
    check(semctl(id, 0, GETPID) == pid, "GETPID: the exiting child undid it");
    setval(id, 1, 5);
    struct sembuf down = { 1, -1, SEM_UNDO };
    child_then_exit(id, &down, 1);
    printf("-1 undone at exit: %d\n", val(id, 1));
    /* Clamped to SEMVMX. */
    setval(id, 2, 32766);
    int sync[2], go[2];
    pipe(sync);
    pipe(go);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        struct sembuf d2 = { 2, -1, SEM_UNDO };
        char c = semop(id, &d2, 1) == 0 ? 'y' : 'n';
        write(sync[1], &c, 1);
        read(go[0], &c, 1);
        _exit(0);
    }
    char c;
    read(sync[0], &c, 1);
    check(op1(id, 2, 2, 0) == 0 && val(id, 2) == 32767, "the parent raises it to 32767 meanwhile");
    write(go[1], "x", 1);
    wait_for(pid, NULL, 0);
    printf("undo clamped at exit: %d\n", val(id, 2));
    /* SETVAL clears the adjustment. */
    setval(id, 0, 0);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        struct sembuf u5 = { 0, 5, SEM_UNDO };
        char ch = semop(id, &u5, 1) == 0 ? 'y' : 'n';
        write(sync[1], &ch, 1);
        read(go[0], &ch, 1);
        _exit(0);
    }
    read(sync[0], &c, 1);
    setval(id, 0, 10);
    write(go[1], "x", 1);
    wait_for(pid, NULL, 0);
    printf("SETVAL cleared the child's undo: %d\n", val(id, 0));
    /* The undo of a sleeper completed by someone else. */
    setval(id, 0, 0);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        struct sembuf d = { 0, -2, SEM_UNDO };
        _exit(semop(id, &d, 1) == 0 ? 0 : 1);
    }
    wait_sleeping(pid);
    op1(id, 0, 2, 0);
    int st;
    wait_for(pid, &st, 0);
    printf("a sleeper's SEM_UNDO is undone at its exit too: %d\n", val(id, 0));
    EXPECT_ERR(EINVAL, "SEM_UNDO on an unknown set", semop(id ^ 0x4000, &up, 1));
    semctl(id, 0, IPC_RMID);
    close(sync[0]);
    close(sync[1]);
    close(go[0]);
    close(go[1]);
}

static void test_proc(void)
{
    int id = semget(IPC_PRIVATE, 7, 0604);
    op1(id, 0, 1, 0);
    FILE *f = fopen("/proc/sysvipc/sem", "r");
    char line[512], header[512] = "";
    int found = 0;
    if (f && fgets(header, sizeof header, f)) {
        while (fgets(line, sizeof line, f)) {
            int key, sid;
            if (sscanf(line, "%d %d", &key, &sid) == 2 && sid == id) {
                struct semid_ds ds;
                union semun u = { .buf = &ds };
                semctl(id, 0, IPC_STAT, u);
                char expect[512];
                snprintf(expect, sizeof expect, "%10d %10d  %4o %10lu %5u %5u %5u %5u %10ld %10ld\n",
                         ds.sem_perm.__key, id, ds.sem_perm.mode, (unsigned long)ds.sem_nsems, ds.sem_perm.uid,
                         ds.sem_perm.gid, ds.sem_perm.cuid, ds.sem_perm.cgid, (long)ds.sem_otime,
                         (long)ds.sem_ctime);
                check(strcmp(line, expect) == 0, "/proc/sysvipc/sem line in Linux's format");
                found = 1;
            }
        }
    }
    if (f)
        fclose(f);
    printf("/proc/sysvipc/sem header: %s", header);
    check(found, "/proc/sysvipc/sem lists the set");
    semctl(id, 0, IPC_RMID);
}

int main(void)
{
    t_init("sysv_sem");
    key_t key = (key_t)(0x4b530000 | (getpid() & 0xffff));
    test_get(key);
    test_ops();
    test_ctl();
    test_sleepers();
    test_timeouts();
    test_undo();
    test_proc();
    return t_done();
}
