/*
 * sysv_msg: System V message queues.  msgget (keys, IPC_PRIVATE,
 * IPC_CREAT/IPC_EXCL, ENOENT), msgsnd/msgrcv (message types, the
 * msgtyp search modes, MSG_EXCEPT, MSG_NOERROR and E2BIG, MSG_COPY,
 * IPC_NOWAIT, the byte and message-count limits, blocking senders and
 * receivers across processes, EINTR with and without SA_RESTART, EIDRM),
 * msgctl (IPC_STAT, IPC_SET, IPC_RMID, IPC_INFO, MSG_INFO, MSG_STAT,
 * MSG_STAT_ANY), the error paths in Linux's order, /proc/sysvipc/msg and
 * the /proc/sys/kernel limits.  Identifiers and keys are never printed:
 * they depend on what else the machine has done.
 */
#include "common.h"
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/msg.h>

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif
#ifndef MSG_STAT_ANY
#define MSG_STAT_ANY 13
#endif

struct msg {
    long mtype;
    char text[64];
};

static int snd(int id, long type, const char *text, int flags)
{
    struct msg m = { .mtype = type };
    snprintf(m.text, sizeof m.text, "%s", text);
    return msgsnd(id, &m, strlen(text), flags);
}

/* Receives and prints "type N text T (len L)" or the errno. */
static void rcv(int id, long type, size_t size, int flags, const char *what)
{
    struct msg m;
    memset(&m, 0, sizeof m);
    errno = 0;
    ssize_t n = msgrcv(id, &m, size, type, flags);
    if (n < 0)
        printf("%s: -1 %s\n", what, errname(errno));
    else
        printf("%s: type %ld text \"%.*s\" (len %ld)\n", what, m.mtype, (int)n, m.text, (long)n);
}

static long qnum(int id)
{
    struct msqid_ds ds;
    return msgctl(id, IPC_STAT, &ds) == 0 ? (long)ds.msg_qnum : -1;
}

static void read_sysctl(const char *path)
{
    char buf[64] = { 0 };
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    printf("%s: %s", path, n > 0 ? buf : "(unreadable)\n");
}

static void test_get(key_t key)
{
    EXPECT_ERR(ENOENT, "msgget(key, 0) of a missing queue", msgget(key, 0600));
    int id = msgget(key, IPC_CREAT | 0600);
    check(id >= 0, "msgget(key, IPC_CREAT)");
    check(msgget(key, IPC_CREAT | 0600) == id, "IPC_CREAT again finds it");
    check(msgget(key, 0) == id, "msgget(key, 0) finds it");
    EXPECT_ERR(EEXIST, "IPC_CREAT|IPC_EXCL of an existing key", msgget(key, IPC_CREAT | IPC_EXCL | 0600));
    int priv = msgget(IPC_PRIVATE, 0640);
    int priv2 = msgget(IPC_PRIVATE, IPC_CREAT | IPC_EXCL | 0600);
    check(priv >= 0 && priv2 >= 0 && priv != priv2 && priv != id, "IPC_PRIVATE always makes a new queue");
    struct msqid_ds ds;
    check(msgctl(priv, IPC_STAT, &ds) == 0, "IPC_STAT");
    printf("new queue: mode 0%o uid %d gid %d cuid %d cgid %d key %d qbytes %lu qnum %lu cbytes %lu lspid %d lrpid %d "
           "stime %ld rtime %ld\n",
           ds.msg_perm.mode, ds.msg_perm.uid, ds.msg_perm.gid, ds.msg_perm.cuid, ds.msg_perm.cgid,
           ds.msg_perm.__key, (unsigned long)ds.msg_qbytes, (unsigned long)ds.msg_qnum,
           (unsigned long)ds.__msg_cbytes, ds.msg_lspid, ds.msg_lrpid, (long)ds.msg_stime, (long)ds.msg_rtime);
    long now = (long)time(NULL);
    check(ds.msg_ctime >= now - 2 && ds.msg_ctime <= now, "msg_ctime is now");
    check(msgctl(priv, IPC_RMID, NULL) == 0 && msgctl(priv2, IPC_RMID, NULL) == 0, "IPC_RMID");
    EXPECT_ERR(EINVAL, "IPC_STAT of a removed queue", msgctl(priv, IPC_STAT, &ds));
    EXPECT_ERR(EINVAL, "msgsnd to a removed queue", snd(priv, 1, "x", 0));
    check(msgctl(id, IPC_RMID, NULL) == 0, "IPC_RMID of the keyed queue");
    EXPECT_ERR(ENOENT, "its key is free again", msgget(key, 0));
}

static void test_types(void)
{
    int id = msgget(IPC_PRIVATE, 0600);
    check(snd(id, 3, "three", 0) == 0 && snd(id, 1, "one", 0) == 0 && snd(id, 2, "two", 0) == 0 &&
              snd(id, 3, "three-b", 0) == 0 && snd(id, 5, "five", 0) == 0 && snd(id, 4, "four", 0) == 0,
          "send types 3 1 2 3 5 4");
    struct msqid_ds ds;
    msgctl(id, IPC_STAT, &ds);
    printf("qnum %lu cbytes %lu lspid is me %d\n", (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes,
           ds.msg_lspid == getpid());
    rcv(id, 2, 64, 0, "msgtyp 2");
    rcv(id, -4, 64, 0, "msgtyp -4 (lowest type <= 4)");
    rcv(id, 3, 64, MSG_EXCEPT, "msgtyp 3 MSG_EXCEPT");
    rcv(id, 0, 64, 0, "msgtyp 0 (the first)");
    rcv(id, 7, 64, IPC_NOWAIT, "msgtyp 7 IPC_NOWAIT");
    rcv(id, 3, 2, IPC_NOWAIT, "msgtyp 3 into 2 bytes");
    rcv(id, 3, 2, MSG_NOERROR, "msgtyp 3 into 2 bytes, MSG_NOERROR");
    printf("qnum now %ld\n", qnum(id));
    check(snd(id, 6, "six", 0) == 0, "send type 6");
    rcv(id, 1, 64, MSG_COPY | IPC_NOWAIT, "MSG_COPY index 1");
    rcv(id, 0, 64, MSG_COPY | IPC_NOWAIT, "MSG_COPY index 0");
    rcv(id, 2, 64, MSG_COPY | IPC_NOWAIT, "MSG_COPY index 2 (past the end)");
    rcv(id, 0, 64, MSG_COPY, "MSG_COPY without IPC_NOWAIT");
    rcv(id, 0, 64, MSG_COPY | IPC_NOWAIT | MSG_EXCEPT, "MSG_COPY with MSG_EXCEPT");
    rcv(id, 0, 2, MSG_COPY | IPC_NOWAIT, "MSG_COPY into 2 bytes");
    printf("MSG_COPY left qnum %ld\n", qnum(id));
    rcv(id, -100, 64, 0, "msgtyp -100");
    rcv(id, 0, 64, 0, "msgtyp 0");
    rcv(id, 0, 64, IPC_NOWAIT, "empty queue, IPC_NOWAIT");
    msgctl(id, IPC_STAT, &ds);
    printf("after: qnum %lu cbytes %lu lrpid is me %d rtime set %d\n", (unsigned long)ds.msg_qnum,
           (unsigned long)ds.__msg_cbytes, ds.msg_lrpid == getpid(), ds.msg_rtime > 0);
    /* A zero-length message. */
    check(snd(id, 9, "", 0) == 0, "a zero-length message");
    rcv(id, 9, 0, 0, "receive it into 0 bytes");
    msgctl(id, IPC_RMID, NULL);
}

static void test_errors(void)
{
    int id = msgget(IPC_PRIVATE, 0600);
    struct msg m = { .mtype = 1 };
    EXPECT_ERR(EINVAL, "msgsnd mtype 0", (m.mtype = 0, msgsnd(id, &m, 1, 0)));
    m.mtype = 1;
    EXPECT_ERR(EINVAL, "msgsnd mtype -1", (m.mtype = -1, msgsnd(id, &m, 1, 0)));
    m.mtype = 1;
    static char big[9000];
    EXPECT_ERR(EINVAL, "msgsnd 8193 bytes (msgmax 8192)", msgsnd(id, big, 8193, IPC_NOWAIT));
    EXPECT_ERR(EINVAL, "msgsnd negative size", syscall(SYS_msgsnd, id, &m, -1L, 0));
    EXPECT_ERR(EINVAL, "msgsnd negative id", msgsnd(-1, &m, 1, 0));
    EXPECT_ERR(EINVAL, "msgsnd unknown id", msgsnd(id ^ 0x4000, &m, 1, 0));
    EXPECT_ERR(EFAULT, "msgsnd bad pointer", msgsnd(id, BAD_PTR, 1, 0));
    EXPECT_ERR(EFAULT, "msgsnd mtype read first: bad pointer with a bad size", syscall(SYS_msgsnd, id, BAD_PTR, -1L, 0));
    EXPECT_ERR(EINVAL, "msgrcv negative size", syscall(SYS_msgrcv, id, &m, -1L, 0, 0));
    EXPECT_ERR(EINVAL, "msgrcv negative id", msgrcv(-1, &m, 8, 0, 0));
    check(snd(id, 1, "lost", 0) == 0, "send a message");
    EXPECT_ERR(EFAULT, "msgrcv into a bad buffer", msgrcv(id, BAD_PTR, 8, 0, 0));
    printf("the message went anyway: qnum %ld\n", qnum(id));
    struct msqid_ds ds;
    EXPECT_ERR(EFAULT, "IPC_STAT to a bad buffer", msgctl(id, IPC_STAT, BAD_PTR));
    EXPECT_ERR(EFAULT, "IPC_SET from a bad buffer", msgctl(id, IPC_SET, BAD_PTR));
    EXPECT_ERR(EINVAL, "msgctl unknown command", msgctl(id, 99, &ds));
    EXPECT_ERR(EINVAL, "msgctl IPC_64|IPC_STAT (x86_64 does not strip IPC_64)", syscall(SYS_msgctl, id, 0x100 | IPC_STAT, &ds));
    EXPECT_ERR(EINVAL, "msgctl negative id", msgctl(-1, IPC_STAT, &ds));
    EXPECT_ERR(EINVAL, "msgctl negative command", msgctl(id, -1, &ds));
    EXPECT_ERR(EINVAL, "IPC_RMID unknown id", msgctl(id ^ 0x4000, IPC_RMID, NULL));
    msgctl(id, IPC_STAT, &ds);
    ds.msg_perm.uid = (uid_t)-1;
    EXPECT_ERR(EINVAL, "IPC_SET uid -1", msgctl(id, IPC_SET, &ds));
    msgctl(id, IPC_RMID, NULL);
}

static void test_ctl(void)
{
    int id = msgget(IPC_PRIVATE, 0600);
    struct msqid_ds ds;
    msgctl(id, IPC_STAT, &ds);
    ds.msg_perm.mode = 0644 | 01000;
    ds.msg_perm.uid = 1234;
    ds.msg_perm.gid = 2345;
    ds.msg_qbytes = 100;
    check(msgctl(id, IPC_SET, &ds) == 0, "IPC_SET mode 0644, uid 1234, gid 2345, qbytes 100");
    msgctl(id, IPC_STAT, &ds);
    printf("after IPC_SET: mode 0%o uid %d gid %d cuid %d qbytes %lu\n", ds.msg_perm.mode, ds.msg_perm.uid,
           ds.msg_perm.gid, ds.msg_perm.cuid, (unsigned long)ds.msg_qbytes);
    ds.msg_qbytes = 16385;
    errno = 0;
    int r = msgctl(id, IPC_SET, &ds);
    check(has_cap(CAP_SYS_RESOURCE) ? r == 0 : r == -1 && errno == EPERM,
          "qbytes past msgmnb: allowed with CAP_SYS_RESOURCE, else EPERM");
    check(msgctl(id & 0x7fff, MSG_STAT, &ds) == id, "MSG_STAT by index returns the id");
    check(msgctl(id & 0x7fff, MSG_STAT_ANY, &ds) == id, "MSG_STAT_ANY by index returns the id");
    EXPECT_ERR(EINVAL, "MSG_STAT of a free index", msgctl(0x7ffe, MSG_STAT, &ds));
    struct msginfo info;
    int max = msgctl(0, IPC_INFO, (struct msqid_ds *)&info);
    check(max >= (id & 0x7fff), "IPC_INFO returns the highest index in use");
    printf("IPC_INFO: msgmax %d msgmnb %d msgmni %d msgssz %d msgseg %u msgpool %d msgmap %d msgtql %d\n",
           info.msgmax, info.msgmnb, info.msgmni, info.msgssz, info.msgseg, info.msgpool, info.msgmap, info.msgtql);
    snd(id, 1, "abcde", 0);
    max = msgctl(0, MSG_INFO, (struct msqid_ds *)&info);
    check(max >= (id & 0x7fff) && info.msgpool >= 1 && info.msgmap >= 1 && info.msgtql >= 5,
          "MSG_INFO counts queues, messages and bytes in use");
    EXPECT_ERR(EFAULT, "IPC_INFO to a bad buffer", msgctl(0, IPC_INFO, BAD_PTR));
    msgctl(id, IPC_RMID, NULL);
    read_sysctl("/proc/sys/kernel/msgmax");
    read_sysctl("/proc/sys/kernel/msgmnb");
    read_sysctl("/proc/sys/kernel/msgmni");
}

static void test_limits(void)
{
    int id = msgget(IPC_PRIVATE, 0600);
    struct msqid_ds ds;
    msgctl(id, IPC_STAT, &ds);
    ds.msg_qbytes = 3;
    msgctl(id, IPC_SET, &ds);
    check(snd(id, 1, "", IPC_NOWAIT) == 0 && snd(id, 1, "", IPC_NOWAIT) == 0 && snd(id, 1, "", IPC_NOWAIT) == 0,
          "three empty messages fit qbytes 3");
    EXPECT_ERR(EAGAIN, "a fourth: qbytes also bounds the message count", snd(id, 1, "", IPC_NOWAIT));
    msgctl(id, IPC_RMID, NULL);

    id = msgget(IPC_PRIVATE, 0600);
    msgctl(id, IPC_STAT, &ds);
    ds.msg_qbytes = 100;
    msgctl(id, IPC_SET, &ds);
    static char sixty[61];
    memset(sixty, 's', 60);
    check(snd(id, 1, sixty, IPC_NOWAIT) == 0, "60 bytes into a 100-byte queue");
    EXPECT_ERR(EAGAIN, "60 more, IPC_NOWAIT", snd(id, 2, sixty, IPC_NOWAIT));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int64_t t0 = mono_ns();
        int r = snd(id, 2, sixty, 0);
        _exit(r == 0 && mono_ns() - t0 > 50000000 ? 0 : 1);
    }
    sleep_ms(200);
    rcv(id, 1, 64, 0, "the parent makes room");
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the blocked sender went through");
    msgctl(id, IPC_STAT, &ds);
    check(ds.msg_lspid == pid, "msg_lspid is the child");
    rcv(id, 0, 64, IPC_NOWAIT, "its message");
    msgctl(id, IPC_RMID, NULL);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int s)
{
    (void)s;
    alarms++;
}

static void test_blocking(void)
{
    int id = msgget(IPC_PRIVATE, 0600);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct msg m;
        ssize_t n = msgrcv(id, &m, sizeof m.text, 7, 0);
        _exit(n == 5 && m.mtype == 7 && memcmp(m.text, "seven", 5) == 0 ? 0 : 1);
    }
    sleep_ms(100);
    snd(id, 6, "six", 0);
    snd(id, 7, "seven", 0);
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a blocked receiver gets the type it waits for");
    struct msqid_ds ds;
    msgctl(id, IPC_STAT, &ds);
    check(ds.msg_lrpid == pid && ds.msg_qnum == 1, "msg_lrpid is the child; type 6 is still queued");

    struct sigaction sa = { .sa_handler = on_alarm };
    sigaction(SIGALRM, &sa, NULL);
    struct msg m;
    alarm(1);
    EXPECT_ERR(EINTR, "msgrcv interrupted by a handler", msgrcv(id, &m, sizeof m.text, 99, 0));
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    EXPECT_ERR(EINTR, "msgrcv is not restarted even with SA_RESTART", msgrcv(id, &m, sizeof m.text, 99, 0));
    check(alarms == 2, "both alarms ran their handler");
    signal(SIGALRM, SIG_DFL);

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        errno = 0;
        ssize_t n = msgrcv(id, &m, sizeof m.text, 99, 0);
        _exit(n == -1 && errno == EIDRM ? 0 : 1);
    }
    sleep_ms(100);
    msgctl(id, IPC_RMID, NULL);
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a receiver blocked on a removed queue gets EIDRM");
}

static void test_proc(void)
{
    int id = msgget(IPC_PRIVATE, 0604);
    snd(id, 1, "hello", 0);
    FILE *f = fopen("/proc/sysvipc/msg", "r");
    char line[512], header[512] = "";
    int found = 0;
    if (f && fgets(header, sizeof header, f)) {
        while (fgets(line, sizeof line, f)) {
            int key, qid;
            if (sscanf(line, "%d %d", &key, &qid) == 2 && qid == id) {
                struct msqid_ds ds;
                msgctl(id, IPC_STAT, &ds);
                char expect[512];
                snprintf(expect, sizeof expect,
                         "%10d %10d  %4o  %10lu %10lu %5u %5u %5u %5u %5u %5u %10ld %10ld %10ld\n", ds.msg_perm.__key,
                         id, ds.msg_perm.mode, (unsigned long)ds.__msg_cbytes, (unsigned long)ds.msg_qnum,
                         ds.msg_lspid, ds.msg_lrpid, ds.msg_perm.uid, ds.msg_perm.gid, ds.msg_perm.cuid,
                         ds.msg_perm.cgid, (long)ds.msg_stime, (long)ds.msg_rtime, (long)ds.msg_ctime);
                check(strcmp(line, expect) == 0, "/proc/sysvipc/msg line in Linux's format");
                found = 1;
            }
        }
    }
    if (f)
        fclose(f);
    printf("/proc/sysvipc/msg header: %s", header);
    check(found, "/proc/sysvipc/msg lists the queue");
    msgctl(id, IPC_RMID, NULL);
}

int main(void)
{
    t_init("sysv_msg");
    key_t key = (key_t)(0x4b490000 | (getpid() & 0xffff));
    test_get(key);
    test_types();
    test_errors();
    test_ctl();
    test_limits();
    test_blocking();
    test_proc();
    return t_done();
}
