/*
 * mqueue: POSIX message queues.  mq_open (names, O_CREAT/O_EXCL,
 * attributes and their limits, close-on-exec descriptors, what fstat
 * and /proc/self/fd show), priorities, mq_timedsend/mq_timedreceive
 * (EMSGSIZE, EBADF for the wrong open mode or a file that is not a
 * queue, EAGAIN, ETIMEDOUT, EINTR, blocking across processes),
 * mq_getsetattr, mq_notify (SIGEV_SIGNAL with its siginfo, SIGEV_NONE,
 * EBUSY, one-shot, dropped at close, SIGEV_THREAD without a netlink
 * socket), the QSIZE line a read shows, mq_unlink, poll, the
 * RLIMIT_MSGQUEUE charge, the mqueue file system mounted on a directory,
 * and /proc/sys/fs/mqueue.
 */
#include "common.h"
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define MNT "/tmp/mqueue-mnt"

static long raw_open(const char *name, int oflag, int mode, struct mq_attr *attr)
{
    return syscall(SYS_mq_open, name, oflag, mode, attr);
}

static void show_attr(mqd_t q, const char *what)
{
    struct mq_attr a;
    if (mq_getattr(q, &a) != 0) {
        printf("%s: mq_getattr -1 %s\n", what, errname(errno));
        return;
    }
    printf("%s: flags 0%lo maxmsg %ld msgsize %ld curmsgs %ld\n", what, a.mq_flags, a.mq_maxmsg, a.mq_msgsize,
           a.mq_curmsgs);
}

/* The read() line of a queue, with the notifying pid made "ME"/"OTHER". */
static void show_line(mqd_t q, const char *what)
{
    char buf[128] = { 0 };
    lseek(q, 0, SEEK_SET);
    ssize_t n = read(q, buf, sizeof buf - 1);
    char *pid = strstr(buf, "NOTIFY_PID:");
    if (pid) {
        int p = atoi(pid + 11);
        snprintf(pid + 11, 32, "%s\n", p == 0 ? "0" : p == getpid() ? "ME" : "OTHER");
    }
    printf("%s: read %ld: %s", what, (long)n, buf);
}

static void test_open(void)
{
    mq_unlink("/kiln-a");
    mqd_t q = mq_open("/kiln-a", O_RDWR | O_CREAT | O_EXCL, 0640, NULL);
    check(q >= 0, "mq_open O_CREAT|O_EXCL");
    show_attr(q, "defaults");
    check(fcntl(q, F_GETFD) == FD_CLOEXEC, "the descriptor is close-on-exec");
    printf("F_GETFL 0%o\n", fcntl(q, F_GETFL));
    struct stat st;
    fstat(q, &st);
    printf("fstat: mode 0%o size %ld nlink %lu uid %d\n", st.st_mode, (long)st.st_size, (unsigned long)st.st_nlink,
           st.st_uid);
    char p[64], link[256];
    snprintf(p, sizeof p, "/proc/self/fd/%d", q);
    ssize_t n = readlink(p, link, sizeof link - 1);
    link[n < 0 ? 0 : n] = 0;
    printf("/proc/self/fd link: %s\n", link);
    show_line(q, "empty queue");
    EXPECT_ERR(EEXIST, "O_CREAT|O_EXCL again", mq_open("/kiln-a", O_RDWR | O_CREAT | O_EXCL, 0640, NULL));
    mqd_t again = mq_open("/kiln-a", O_RDONLY);
    check(again >= 0 && again != q, "open it again without O_CREAT");
    mq_close(again);
    EXPECT_ERR(EINVAL, "O_ACCMODE 3 on an existing queue", raw_open("kiln-a", 3, 0, NULL));
    EXPECT_ERR(EFAULT, "a bad attr pointer, even without O_CREAT", raw_open("kiln-a", O_RDWR, 0, BAD_PTR));
    EXPECT_ERR(ENOENT, "a missing queue", mq_open("/kiln-missing", O_RDWR));
    EXPECT_ERR(ENOENT, "empty name", raw_open("", O_RDWR | O_CREAT, 0600, NULL));
    EXPECT_ERR(EACCES, "a slash inside the name", raw_open("a/b", O_RDWR | O_CREAT, 0600, NULL));
    EXPECT_ERR(EACCES, "a leading slash (the library strips it)", raw_open("/x", O_RDWR | O_CREAT, 0600, NULL));
    EXPECT_ERR(EACCES, "\".\"", raw_open(".", O_RDWR | O_CREAT, 0600, NULL));
    EXPECT_ERR(EACCES, "\"..\"", raw_open("..", O_RDWR, 0, NULL));
    char name[300];
    memset(name, 'n', sizeof name);
    name[256] = 0;
    EXPECT_ERR(ENAMETOOLONG, "a 256-byte name", raw_open(name, O_RDWR | O_CREAT, 0600, NULL));
    name[255] = 0;
    long l = raw_open(name, O_RDWR | O_CREAT, 0600, NULL);
    check(l >= 0, "a 255-byte name");
    close((int)l);
    syscall(SYS_mq_unlink, name);
    EXPECT_ERR(EFAULT, "a bad name pointer", raw_open(BAD_PTR, O_RDWR, 0, NULL));

    struct mq_attr a = { .mq_maxmsg = 0, .mq_msgsize = 16 };
    EXPECT_ERR(EINVAL, "mq_maxmsg 0", mq_open("/kiln-b", O_RDWR | O_CREAT, 0600, &a));
    a.mq_maxmsg = 2;
    a.mq_msgsize = -1;
    EXPECT_ERR(EINVAL, "mq_msgsize -1", mq_open("/kiln-b", O_RDWR | O_CREAT, 0600, &a));
    a.mq_maxmsg = 11;
    a.mq_msgsize = 16;
    errno = 0;
    mqd_t big = mq_open("/kiln-b", O_RDWR | O_CREAT, 0600, &a);
    check(has_cap(CAP_SYS_RESOURCE) ? big >= 0 : big == -1 && errno == EINVAL,
          "mq_maxmsg 11 > msg_max: allowed with CAP_SYS_RESOURCE, else EINVAL");
    if (big >= 0) {
        mq_close(big);
        mq_unlink("/kiln-b");
    }
    a.mq_maxmsg = 65537;
    EXPECT_ERR(EINVAL, "mq_maxmsg past the hard limit", mq_open("/kiln-b", O_RDWR | O_CREAT, 0600, &a));
    a.mq_maxmsg = 3;
    a.mq_msgsize = 16;
    mqd_t small = mq_open("/kiln-b", O_RDWR | O_CREAT, 0600, &a);
    show_attr(small, "custom");
    mq_close(small);
    mq_close(q);
}

static void test_messages(void)
{
    mqd_t q = mq_open("/kiln-a", O_RDWR);
    const char *text[] = { "a", "b", "c", "d", "e" };
    unsigned prio[] = { 1, 5, 1, 5, 0 };
    for (int i = 0; i < 5; i++)
        check(mq_send(q, text[i], 1, prio[i]) == 0, "send %s at priority %u", text[i], prio[i]);
    show_line(q, "five messages");
    show_attr(q, "five messages");
    char buf[8192];
    printf("received:");
    for (int i = 0; i < 5; i++) {
        unsigned pr = 99;
        ssize_t n = mq_receive(q, buf, sizeof buf, &pr);
        printf(" %.*s/%u", (int)n, buf, pr);
    }
    printf("\n");
    EXPECT_ERR(EINVAL, "priority 32768", mq_send(q, "x", 1, 32768));
    static char huge[8193];
    EXPECT_ERR(EMSGSIZE, "8193 bytes into 8192-byte messages", mq_send(q, huge, 8193, 0));
    EXPECT_ERR(EMSGSIZE, "a receive buffer smaller than mq_msgsize", mq_receive(q, buf, 8191, NULL));
    EXPECT_ERR(EFAULT, "a bad message pointer", mq_send(q, BAD_PTR, 1, 0));
    EXPECT_ERR(EBADF, "a bad descriptor", mq_send(99, "x", 1, 0));
    int pp[2];
    pipe(pp);
    EXPECT_ERR(EBADF, "a pipe is not a queue", mq_send(pp[1], "x", 1, 0));
    EXPECT_ERR(EBADF, "mq_getattr of a pipe", mq_getattr(pp[0], &(struct mq_attr){ 0 }));
    close(pp[0]);
    close(pp[1]);
    mqd_t ro = mq_open("/kiln-a", O_RDONLY), wo = mq_open("/kiln-a", O_WRONLY);
    EXPECT_ERR(EBADF, "send through O_RDONLY", mq_send(ro, "x", 1, 0));
    EXPECT_ERR(EBADF, "receive through O_WRONLY", mq_receive(wo, buf, sizeof buf, NULL));
    EXPECT_ERR(EINVAL, "write(2) on a queue", write(q, "x", 1));
    check(mq_send(wo, "", 0, 3) == 0, "a zero-length message");
    unsigned pr = 0;
    check(mq_receive(ro, buf, sizeof buf, &pr) == 0 && pr == 3, "received through another descriptor");
    mq_close(ro);
    mq_close(wo);
    mq_close(q);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int s)
{
    (void)s;
    alarms++;
}

static void test_blocking(void)
{
    struct mq_attr a = { .mq_maxmsg = 2, .mq_msgsize = 32 };
    mqd_t q = mq_open("/kiln-c", O_RDWR | O_CREAT, 0600, &a);
    char buf[32];
    struct mq_attr na = { .mq_flags = O_NONBLOCK }, old;
    check(mq_setattr(q, &na, &old) == 0 && old.mq_flags == 0, "mq_setattr O_NONBLOCK");
    show_attr(q, "after mq_setattr");
    EXPECT_ERR(EAGAIN, "receive from an empty queue, O_NONBLOCK", mq_receive(q, buf, sizeof buf, NULL));
    mq_send(q, "1", 1, 0);
    mq_send(q, "2", 1, 0);
    EXPECT_ERR(EAGAIN, "send to a full queue, O_NONBLOCK", mq_send(q, "3", 1, 0));
    na.mq_flags = 0;
    na.mq_maxmsg = 99;
    check(mq_setattr(q, &na, NULL) == 0, "mq_setattr back (other fields ignored)");
    show_attr(q, "after mq_setattr 0");
    na.mq_flags = O_NONBLOCK | O_APPEND;
    EXPECT_ERR(EINVAL, "mq_setattr with another flag", mq_setattr(q, &na, NULL));
    EXPECT_ERR(EFAULT, "mq_setattr bad pointer", syscall(SYS_mq_getsetattr, q, BAD_PTR, NULL));
    EXPECT_ERR(EFAULT, "mq_getattr bad pointer", syscall(SYS_mq_getsetattr, q, NULL, BAD_PTR));

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int64_t t0 = mono_ns();
    EXPECT_ERR(ETIMEDOUT, "mq_timedsend to a full queue", mq_timedsend(q, "3", 1, 0, &ts));
    check(mono_ns() - t0 >= 90000000, "it waited for the timeout");
    struct timespec bad = { 0, 1000000000 };
    EXPECT_ERR(EINVAL, "tv_nsec 1e9, even with room", mq_timedreceive(q, buf, sizeof buf, NULL, &bad));
    EXPECT_ERR(EINVAL, "the timeout is checked before the descriptor", mq_timedsend(99, "x", 1, 0, &bad));
    EXPECT_ERR(EFAULT, "a bad timeout pointer", mq_timedsend(q, "3", 1, 0, BAD_PTR));
    struct timespec past = { 1, 0 };
    EXPECT_ERR(ETIMEDOUT, "a timeout in the past on a full queue", mq_timedsend(q, "3", 1, 0, &past));

    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int64_t s = mono_ns();
        int r = mq_send(q, "3", 1, 7);
        _exit(r == 0 && mono_ns() - s > 50000000 ? 0 : 1);
    }
    sleep_ms(200);
    ssize_t n = mq_receive(q, buf, sizeof buf, NULL);
    int st;
    wait_for(pid, &st, 0);
    check(n == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "a blocked sender goes once there is room");
    unsigned pr;
    mq_receive(q, buf, sizeof buf, &pr);
    printf("next: %c/%u\n", buf[0], pr);
    mq_receive(q, buf, sizeof buf, &pr);
    printf("last: %c/%u\n", buf[0], pr);

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        unsigned p2;
        ssize_t r = mq_receive(q, buf, sizeof buf, &p2);
        _exit(r == 4 && p2 == 9 && memcmp(buf, "wake", 4) == 0 ? 0 : 1);
    }
    sleep_ms(200);
    mq_send(q, "wake", 4, 9);
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a blocked receiver gets the message");

    struct sigaction sa = { .sa_handler = on_alarm };
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    EXPECT_ERR(EINTR, "mq_receive interrupted by a handler", mq_receive(q, buf, sizeof buf, NULL));
    signal(SIGALRM, SIG_DFL);

    struct pollfd pfd = { .fd = q, .events = POLLIN | POLLOUT };
    check(poll(&pfd, 1, 0) == 1 && pfd.revents == POLLOUT, "poll: empty queue is writable only");
    mq_send(q, "p", 1, 0);
    mq_send(q, "p", 1, 0);
    check(poll(&pfd, 1, 0) == 1 && pfd.revents == POLLIN, "poll: full queue is readable only");
    mq_receive(q, buf, sizeof buf, NULL);
    mq_receive(q, buf, sizeof buf, NULL);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        sleep_ms(100);
        mq_send(q, "late", 4, 0);
        _exit(0);
    }
    pfd.events = POLLIN;
    int r = poll(&pfd, 1, 5000);
    check(r == 1 && pfd.revents == POLLIN, "poll wakes when a message arrives");
    wait_for(pid, NULL, 0);
    mq_close(q);
    mq_unlink("/kiln-c");
}

static volatile sig_atomic_t got_sig, got_code, got_pid, got_value;
static void on_usr1(int s, siginfo_t *si, void *uc)
{
    (void)uc;
    got_sig = s;
    got_code = si->si_code;
    got_pid = si->si_pid;
    got_value = si->si_value.sival_int;
}

static void test_notify(void)
{
    mqd_t q = mq_open("/kiln-a", O_RDWR);
    struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART };
    sigaction(SIGUSR1, &sa, NULL);
    struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1, .sigev_value.sival_int = 4242 };
    check(mq_notify(q, &ev) == 0, "mq_notify SIGEV_SIGNAL");
    show_line(q, "registered");
    EXPECT_ERR(EBUSY, "a second registration by the same process", mq_notify(q, &ev));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        errno = 0;
        int r = mq_notify(q, &ev);
        _exit(r == -1 && errno == EBUSY ? 0 : 1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process gets EBUSY");
    check(mq_send(q, "n", 1, 0) == 0, "a message into the empty queue");
    for (int i = 0; i < 100 && !got_sig; i++)
        sleep_ms(10);
    check(got_sig == SIGUSR1 && got_code == SI_MESGQ && got_pid == getpid() && got_value == 4242,
          "SIGUSR1 with SI_MESGQ, our pid and the value");
    show_line(q, "after the notification");
    got_sig = 0;
    mq_send(q, "n", 1, 0);
    sleep_ms(50);
    check(got_sig == 0, "one-shot: the next message sends nothing");
    char buf[8192];
    mq_receive(q, buf, sizeof buf, NULL);
    mq_receive(q, buf, sizeof buf, NULL);

    check(mq_notify(q, &ev) == 0, "register again");
    mq_send(q, "n", 1, 0);
    mq_send(q, "m", 1, 0);
    for (int i = 0; i < 100 && !got_sig; i++)
        sleep_ms(10);
    check(got_sig == SIGUSR1, "notified once more");
    mq_receive(q, buf, sizeof buf, NULL);
    mq_receive(q, buf, sizeof buf, NULL);

    check(mq_notify(q, &ev) == 0 && mq_notify(q, NULL) == 0, "register, then unregister with NULL");
    show_line(q, "unregistered");
    check(mq_notify(q, NULL) == 0, "unregistering again is fine");
    struct sigevent none = { .sigev_notify = SIGEV_NONE };
    check(mq_notify(q, &none) == 0, "SIGEV_NONE");
    show_line(q, "SIGEV_NONE");
    mqd_t other = mq_open("/kiln-a", O_RDONLY);
    mq_close(other);
    show_line(q, "after closing another descriptor");

    /* A receiver waiting on the empty queue takes the message: no signal. */
    mq_notify(q, NULL);
    check(mq_notify(q, &ev) == 0, "register for the waiting-receiver case");
    got_sig = 0;
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(mq_receive(q, buf, sizeof buf, NULL) == 1 ? 0 : 1);
    sleep_ms(200);
    mq_send(q, "w", 1, 0);
    wait_for(pid, &st, 0);
    sleep_ms(50);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the waiting child got it");
    printf("notified while a receiver waited: %s\n", got_sig ? "yes" : "no");
    show_line(q, "the registration stays");
    mq_notify(q, NULL);

    ev.sigev_notify = 7;
    EXPECT_ERR(EINVAL, "sigev_notify 7", mq_notify(q, &ev));
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = 65;
    EXPECT_ERR(EINVAL, "signal 65", mq_notify(q, &ev));
    ev.sigev_signo = 0;
    check(mq_notify(q, &ev) == 0 && mq_notify(q, NULL) == 0, "signal 0 is accepted");
    EXPECT_ERR(EFAULT, "a bad sigevent pointer", syscall(SYS_mq_notify, q, BAD_PTR));
    EXPECT_ERR(EBADF, "mq_notify on a bad descriptor", mq_notify(99, &none));
    char cookie[32] = { 0 };
    struct sigevent th = { .sigev_notify = SIGEV_THREAD, .sigev_signo = 1, .sigev_value.sival_ptr = cookie };
    EXPECT_ERR(ENOTSOCK, "raw SIGEV_THREAD with a terminal for a netlink socket", syscall(SYS_mq_notify, q, &th));
    th.sigev_signo = 99;
    EXPECT_ERR(EBADF, "raw SIGEV_THREAD with a bad descriptor", syscall(SYS_mq_notify, q, &th));
    th.sigev_value.sival_ptr = BAD_PTR;
    EXPECT_ERR(EFAULT, "raw SIGEV_THREAD with a bad cookie (read first)", syscall(SYS_mq_notify, q, &th));
    /* Closing our only descriptor ends the registration. */
    mq_notify(q, &ev);
    mq_close(q);
    q = mq_open("/kiln-a", O_RDWR);
    show_line(q, "after the owner closed its descriptor");
    mq_close(q);
    signal(SIGUSR1, SIG_DFL);
}

static void test_unlink_and_limit(void)
{
    mqd_t q = mq_open("/kiln-a", O_RDWR);
    check(mq_unlink("/kiln-a") == 0, "mq_unlink");
    EXPECT_ERR(ENOENT, "mq_unlink again", mq_unlink("/kiln-a"));
    EXPECT_ERR(ENOENT, "mq_open after the unlink", mq_open("/kiln-a", O_RDWR));
    char buf[8192];
    check(mq_send(q, "s", 1, 0) == 0 && mq_receive(q, buf, sizeof buf, NULL) == 1, "the open queue still works");
    mq_close(q);
    mq_unlink("/kiln-b");
    EXPECT_ERR(ENOENT, "mq_unlink of an empty name", syscall(SYS_mq_unlink, ""));
    EXPECT_ERR(EACCES, "mq_unlink of a name with a slash", syscall(SYS_mq_unlink, "a/b"));
    EXPECT_ERR(EFAULT, "mq_unlink of a bad pointer", syscall(SYS_mq_unlink, BAD_PTR));

    /* RLIMIT_MSGQUEUE: each default queue charges 10 * 8192 bytes plus
     * Linux's bookkeeping. */
    int made = 0;
    for (; made < 100; made++) {
        char name[32];
        snprintf(name, sizeof name, "/kiln-limit-%d", made);
        mqd_t x = mq_open(name, O_RDWR | O_CREAT, 0600, NULL);
        if (x < 0) {
            printf("queue %d: %s\n", made, errname(errno));
            break;
        }
        mq_close(x);
    }
    printf("default queues within RLIMIT_MSGQUEUE: %d\n", made);
    for (int i = 0; i < made; i++) {
        char name[32];
        snprintf(name, sizeof name, "/kiln-limit-%d", i);
        mq_unlink(name);
    }
    mqd_t x = mq_open("/kiln-limit-x", O_RDWR | O_CREAT, 0600, NULL);
    check(x >= 0, "unlinked queues give their charge back");
    mq_close(x);
    mq_unlink("/kiln-limit-x");
}

static void test_fs(void)
{
    mkdir(MNT, 0755);
    check(mount("none", MNT, "mqueue", 0, NULL) == 0, "mount -t mqueue");
    struct stat st;
    stat(MNT, &st);
    printf("root: mode 0%o\n", st.st_mode);
    mqd_t q = mq_open("/kiln-fs", O_RDWR | O_CREAT, 0604, NULL);
    mq_send(q, "hello", 5, 1);
    check(stat(MNT "/kiln-fs", &st) == 0, "the queue shows in the mount");
    printf("queue file: mode 0%o size %ld nlink %lu\n", st.st_mode, (long)st.st_size, (unsigned long)st.st_nlink);
    int fd = open(MNT "/kiln-fs", O_RDONLY);
    char buf[128] = { 0 };
    read(fd, buf, sizeof buf - 1);
    printf("cat: %s", buf);
    close(fd);
    fd = open(MNT "/kiln-made", O_RDWR | O_CREAT, 0600);
    check(fd >= 0, "open(O_CREAT) in the mount makes a queue");
    close(fd);
    mqd_t made = mq_open("/kiln-made", O_RDWR);
    show_attr(made, "made by open(2)");
    mq_close(made);
    check(unlink(MNT "/kiln-made") == 0, "rm of a queue file");
    EXPECT_ERR(ENOENT, "mq_open after rm", mq_open("/kiln-made", O_RDWR));
    EXPECT_ERR(EPERM, "mkdir in the mount", mkdir(MNT "/dir", 0755));
    EXPECT_ERR(EPERM, "mkfifo in the mount", mkfifo(MNT "/fifo", 0600));
    mq_close(q);
    mq_unlink("/kiln-fs");
    EXPECT_ERR(ENOENT, "mq_unlink shows in the mount", stat(MNT "/kiln-fs", &st));
    check(umount(MNT) == 0, "umount");
    rmdir(MNT);
    fd = open("/proc/filesystems", O_RDONLY);
    int n = read(fd, buf, sizeof buf - 1), listed = 0;
    while (n > 0) {
        buf[n] = 0;
        listed |= strstr(buf, "\tmqueue\n") != NULL;
        n = read(fd, buf, sizeof buf - 1);
    }
    close(fd);
    check(listed, "/proc/filesystems lists mqueue");
    const char *files[] = { "queues_max", "msg_max", "msgsize_max", "msg_default", "msgsize_default" };
    for (int i = 0; i < 5; i++) {
        char path[64], v[32] = { 0 };
        snprintf(path, sizeof path, "/proc/sys/fs/mqueue/%s", files[i]);
        fd = open(path, O_RDONLY);
        read(fd, v, sizeof v - 1);
        close(fd);
        printf("%s: %s", path, v);
    }
}

int main(void)
{
    t_init("mqueue");
    test_open();
    test_messages();
    test_blocking();
    test_notify();
    test_unlink_and_limit();
    test_fs();
    return t_done();
}
