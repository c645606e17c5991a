/*
 * Ancillary data on AF_UNIX sockets: SCM_RIGHTS (descriptors in flight
 * outlive the sender's copies, pass across fork and exec, MSG_CTRUNC when
 * the receiver's buffer is short or absent, MSG_CMSG_CLOEXEC, the 253-fd
 * limit, bad descriptors and malformed headers, MSG_PEEK duplicating,
 * streams not gluing past a message with descriptors), SCM_CREDENTIALS
 * with SO_PASSCRED (attached, claimed, refused), SO_PEERCRED across
 * listen/connect and socketpair. In children with other ids: messages
 * carry the real uid and gid, SO_PEERCRED the effective ones; a sender
 * may claim its real, effective or saved ids and its own pid, and others
 * only with CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN (Linux's
 * scm_check_creds), EINVAL before EPERM before ESRCH. Sockets only in
 * flight in each other's queues (pairs, a socket in itself, a listener in
 * its waiting connection) are collected once a socket is released, with
 * what they carried; a cycle a live socket can reach is kept.
 */
#include "common.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <grp.h>

/* <linux/capability.h> is not in musl's include path. */
#define CAP_V3 0x20080522
#define CAP_SETGID 6
#define CAP_SETUID 7
#define CAP_SYS_ADMIN 21
struct cap_header {
    uint32_t version;
    int pid;
};
struct cap_data {
    uint32_t effective, permitted, inheritable;
};

/* Drops capability `cap` from the effective set. */
static void drop_cap(int cap)
{
    struct cap_header h = {CAP_V3, 0};
    struct cap_data d[2];
    syscall(SYS_capget, &h, d);
    d[cap / 32].effective &= ~(1u << (cap % 32));
    if (syscall(SYS_capset, &h, d) != 0)
        printf("capset failed: %s\n", errname(errno));
}

static const char *sockerr(int e)
{
    switch (e) {
    case ETOOMANYREFS: return "ETOOMANYREFS";
    case ENOBUFS: return "ENOBUFS";
    default: return errname(e);
    }
}

#define SHOW(what, expr)                                                         \
    do {                                                                         \
        errno = 0;                                                               \
        long _r = (long)(expr);                                                  \
        if (_r < 0)                                                              \
            printf("%s = -1 %s\n", what, sockerr(errno));                        \
        else                                                                     \
            printf("%s = %ld\n", what, _r);                                      \
        t_checks++;                                                              \
    } while (0)

/* Sends `len` bytes with `n` descriptors. */
static long send_fds(int s, const char *data, size_t len, const int *fds, int n)
{
    char ctl[CMSG_SPACE(sizeof(int) * 300)];
    struct iovec iv = {(void *)data, len};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    if (n > 0) {
        memset(ctl, 0, sizeof ctl);
        m.msg_control = ctl;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    }
    return syscall(SYS_sendmsg, s, &m, 0);
}

/* Receives into buf; stores up to `max` received descriptors in fds,
 * their count in *nfds, and the msg flags and control length. */
static long recv_fds(int s, char *buf, size_t len, size_t ctl_len, int flags, int *fds, int *nfds, int *mflags,
                     size_t *clen)
{
    char ctl[4096];
    struct iovec iv = {buf, len};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl_len ? ctl : NULL;
    m.msg_controllen = ctl_len;
    memset(ctl, 0, sizeof ctl);
    long r = syscall(SYS_recvmsg, s, &m, flags);
    *nfds = 0;
    if (r < 0)
        return r;
    *mflags = m.msg_flags;
    *clen = m.msg_controllen;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            memcpy(fds + *nfds, CMSG_DATA(c), n * sizeof(int));
            *nfds += n;
        }
    }
    return r;
}

static void test_rights(void)
{
    int sv[2], fds[300], nfds, mflags;
    size_t clen;
    char buf[64];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    int p[2];
    pipe(p);
    SHOW("send a pipe's read end", send_fds(sv[0], "r", 1, &p[0], 1));
    close(p[0]); /* in flight: the pipe stays open */
    SHOW("recvmsg", recv_fds(sv[1], buf, sizeof buf, CMSG_SPACE(sizeof(int)), 0, fds, &nfds, &mflags, &clen));
    printf("got %d fd(s), CTRUNC %d, controllen %zu (CMSG_SPACE %zu)\n", nfds, !!(mflags & MSG_CTRUNC), clen,
           (size_t)CMSG_SPACE(sizeof(int)));
    write(p[1], "through", 7);
    SHOW("read through the passed fd", read(fds[0], buf, sizeof buf));
    printf("cloexec on received fd %d\n", !!(fcntl(fds[0], F_GETFD) & FD_CLOEXEC));
    close(fds[0]);

    /* MSG_CMSG_CLOEXEC. */
    send_fds(sv[0], "c", 1, &p[1], 1);
    recv_fds(sv[1], buf, sizeof buf, 64, MSG_CMSG_CLOEXEC, fds, &nfds, &mflags, &clen);
    printf("MSG_CMSG_CLOEXEC: %d fd, cloexec %d, flags has CMSG_CLOEXEC %d\n", nfds,
           !!(fcntl(fds[0], F_GETFD) & FD_CLOEXEC), !!(mflags & MSG_CMSG_CLOEXEC));
    struct stat a, b;
    fstat(fds[0], &a);
    fstat(p[1], &b);
    printf("same pipe: %d\n", a.st_ino == b.st_ino);
    close(fds[0]);

    /* Short control buffers: MSG_CTRUNC, the rest closed. */
    int three[3] = {p[0] = dup(p[1]), p[1], 0};
    SHOW("send 3 fds", send_fds(sv[0], "3", 1, three, 3));
    recv_fds(sv[1], buf, sizeof buf, CMSG_LEN(sizeof(int) * 2), 0, fds, &nfds, &mflags, &clen);
    printf("room for 2: got %d, CTRUNC %d, controllen %zu\n", nfds, !!(mflags & MSG_CTRUNC), clen);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    send_fds(sv[0], "3", 1, three, 3);
    recv_fds(sv[1], buf, sizeof buf, 0, 0, fds, &nfds, &mflags, &clen);
    printf("no control buffer: got %d, CTRUNC %d\n", nfds, !!(mflags & MSG_CTRUNC));
    send_fds(sv[0], "3", 1, three, 3);
    recv_fds(sv[1], buf, sizeof buf, 16, 0, fds, &nfds, &mflags, &clen);
    printf("header only: got %d, CTRUNC %d, controllen %zu\n", nfds, !!(mflags & MSG_CTRUNC), clen);
    send_fds(sv[0], "3", 1, three, 3);
    SHOW("read(2) drops passed fds", read(sv[1], buf, sizeof buf));

    /* MSG_PEEK duplicates the descriptors; the read gets them again. */
    send_fds(sv[0], "k", 1, three, 1);
    recv_fds(sv[1], buf, sizeof buf, 64, MSG_PEEK, fds, &nfds, &mflags, &clen);
    printf("peek: %d fd\n", nfds);
    int peeked = fds[0];
    recv_fds(sv[1], buf, sizeof buf, 64, 0, fds, &nfds, &mflags, &clen);
    printf("read after peek: %d fd, a new number %d\n", nfds, fds[0] != peeked);
    close(peeked);
    close(fds[0]);

    /* Limits and errors. */
    int many[300];
    for (int i = 0; i < 300; i++)
        many[i] = p[1];
    SHOW("send 253 fds", send_fds(sv[0], "m", 1, many, 253));
    recv_fds(sv[1], buf, sizeof buf, sizeof(int) * 300, 0, fds, &nfds, &mflags, &clen);
    printf("received %d\n", nfds);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    SHOW("send 254 fds", send_fds(sv[0], "m", 1, many, 254));
    int bad = 999;
    SHOW("send a bad fd", send_fds(sv[0], "b", 1, &bad, 1));
    bad = -1;
    SHOW("send fd -1", send_fds(sv[0], "b", 1, &bad, 1));

    char ctl[64];
    struct iovec iv = {"x", 1};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    struct cmsghdr *c = (struct cmsghdr *)ctl;
    memset(ctl, 0, sizeof ctl);
    c->cmsg_len = 8;
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    m.msg_controllen = 24;
    SHOW("cmsg_len shorter than a header", syscall(SYS_sendmsg, sv[0], &m, 0));
    c->cmsg_len = 100;
    SHOW("cmsg_len past the buffer", syscall(SYS_sendmsg, sv[0], &m, 0));
    c->cmsg_len = CMSG_LEN(4);
    c->cmsg_type = 77;
    SHOW("unknown SOL_SOCKET type", syscall(SYS_sendmsg, sv[0], &m, 0));
    c->cmsg_level = 41;
    SHOW("other level is skipped", syscall(SYS_sendmsg, sv[0], &m, 0));
    recv(sv[1], buf, sizeof buf, 0);
    m.msg_controllen = 8;
    SHOW("controllen < header: ignored", syscall(SYS_sendmsg, sv[0], &m, 0));
    recv(sv[1], buf, sizeof buf, 0);
    m.msg_control = BAD_PTR;
    m.msg_controllen = 32;
    SHOW("control at a bad address", syscall(SYS_sendmsg, sv[0], &m, 0));
    m.msg_controllen = 1 << 20;
    SHOW("1 MiB of control", syscall(SYS_sendmsg, sv[0], &m, 0));
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);

    /* Streams: descriptors ride with their bytes and end a read. */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pipe(p);
    write(sv[0], "ab", 2);
    send_fds(sv[0], "cd", 2, &p[0], 1);
    write(sv[0], "ef", 2);
    SHOW("stream read 1", recv_fds(sv[1], buf, sizeof buf, 64, 0, fds, &nfds, &mflags, &clen));
    printf("fds %d\n", nfds);
    SHOW("stream read 2", recv_fds(sv[1], buf, sizeof buf, 64, 0, fds, &nfds, &mflags, &clen));
    printf("fds %d\n", nfds);
    SHOW("stream read 3", recv_fds(sv[1], buf, sizeof buf, 64, MSG_DONTWAIT, fds, &nfds, &mflags, &clen));
    SHOW("zero bytes with an fd on a stream", send_fds(sv[0], "", 0, &p[0], 1));
    SHOW("nothing arrives", recv(sv[1], buf, sizeof buf, MSG_DONTWAIT));
    close(sv[0]);
    close(sv[1]);

    close(p[0]);
    close(p[1]);
}

/* Fork and exec: the child gets a descriptor from its parent over a
 * socket and checks it after exec. */
static void test_fork_exec(const char *self)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        char buf[8];
        int fds[4], nfds, mflags;
        size_t clen;
        recv_fds(sv[1], buf, sizeof buf, 64, 0, fds, &nfds, &mflags, &clen);
        if (nfds != 1)
            _exit(2);
        char arg[16];
        snprintf(arg, sizeof arg, "%d", fds[0]);
        execl(self, self, "child", arg, (char *)NULL);
        _exit(3);
    }
    close(sv[1]);
    int fd = open("/proc/self/exe", O_RDONLY);
    lseek(fd, 1, SEEK_SET);
    SHOW("parent sends its executable", send_fds(sv[0], "f", 1, &fd, 1));
    close(fd);
    int st;
    wait_for(pid, &st, 0);
    printf("child after exec: %s\n", status_str(st));
    close(sv[0]);
}

static int child_main(const char *arg)
{
    int fd = atoi(arg);
    char elf[4];
    /* Shared offset: the parent moved it to 1. */
    if (read(fd, elf, 3) != 3 || memcmp(elf, "ELF", 3) != 0)
        return 1;
    return 0;
}

static void test_creds(void)
{
    int sv[2];
    char buf[64], ctl[256];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    send(sv[0], "before", 6, 0);
    int on = 1;
    SHOW("SO_PASSCRED", setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
    send(sv[0], "after", 5, 0);
    for (int i = 0; i < 2; i++) {
        struct iovec iv = {buf, sizeof buf};
        struct msghdr m = {0};
        m.msg_iov = &iv;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        long r = recvmsg(sv[1], &m, 0);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        if (r > 0 && c && c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred u;
            memcpy(&u, CMSG_DATA(c), sizeof u);
            printf("message %d: creds len %zu pid is mine %d (pid %d) uid %d gid %d controllen %zu\n", i,
                   (size_t)c->cmsg_len, u.pid == getpid(), u.pid == getpid() ? 1 : u.pid, (int)u.uid,
                   (int)u.gid, (size_t)m.msg_controllen);
        } else {
            printf("message %d: no credentials\n", i);
        }
    }
    /* A short control buffer truncates the credentials. */
    send(sv[0], "x", 1, 0);
    struct iovec iv = {buf, sizeof buf};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = 20;
    recvmsg(sv[1], &m, 0);
    printf("20-byte buffer: CTRUNC %d controllen %zu cmsg_len %zu\n", !!(m.msg_flags & MSG_CTRUNC),
           (size_t)m.msg_controllen, (size_t)((struct cmsghdr *)ctl)->cmsg_len);
    send(sv[0], "x", 1, 0);
    m.msg_control = NULL;
    m.msg_controllen = 0;
    recvmsg(sv[1], &m, 0);
    printf("no buffer with SO_PASSCRED: CTRUNC %d\n", !!(m.msg_flags & MSG_CTRUNC));

    /* Claimed credentials. */
    struct ucred u = {getpid(), 0, 0};
    char sctl[CMSG_SPACE(sizeof u)];
    struct msghdr sm = {0};
    struct iovec siv = {"y", 1};
    sm.msg_iov = &siv;
    sm.msg_iovlen = 1;
    sm.msg_control = sctl;
    sm.msg_controllen = sizeof sctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&sm);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof u);
    memcpy(CMSG_DATA(c), &u, sizeof u);
    SHOW("claim own credentials", sendmsg(sv[0], &sm, 0));
    recv(sv[1], buf, sizeof buf, 0);
    u.pid = 999999;
    memcpy(CMSG_DATA(c), &u, sizeof u);
    SHOW("claim a missing pid", sendmsg(sv[0], &sm, 0));
    u.pid = getpid();
    u.uid = -1;
    memcpy(CMSG_DATA(c), &u, sizeof u);
    SHOW("claim uid -1", sendmsg(sv[0], &sm, 0));
    c->cmsg_len = CMSG_LEN(sizeof u) - 1;
    SHOW("credentials of the wrong size", sendmsg(sv[0], &sm, 0));
    close(sv[0]);
    close(sv[1]);

    /* Streams with SO_PASSCRED do not glue writes of different senders. */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    write(sv[0], "aa", 2);
    pid_t pid = fork();
    if (pid == 0) {
        write(sv[0], "bb", 2);
        _exit(0);
    }
    wait_for(pid, NULL, 0);
    SHOW("stream read, first writer", read(sv[1], buf, sizeof buf));
    SHOW("stream read, second writer", read(sv[1], buf, sizeof buf));
    close(sv[0]);
    close(sv[1]);

    /* SO_PEERCRED over listen/connect: each side sees the other. */
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, "\0kiln-scm", 9);
    socklen_t al = offsetof(struct sockaddr_un, sun_path) + 9;
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    bind(l, (struct sockaddr *)&a, al);
    listen(l, 1);
    struct ucred pc;
    socklen_t pl = sizeof pc;
    getsockopt(l, SOL_SOCKET, SO_PEERCRED, &pc, &pl);
    printf("listener's SO_PEERCRED is its own: %d\n", pc.pid == getpid());
    pid = fork();
    if (pid == 0) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        connect(s, (struct sockaddr *)&a, al);
        struct ucred cc;
        socklen_t cl = sizeof cc;
        getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cc, &cl);
        write(s, &cc.pid, sizeof cc.pid);
        read(s, &cc, 1);
        _exit(0);
    }
    int n = accept(l, NULL, NULL);
    pl = sizeof pc;
    getsockopt(n, SOL_SOCKET, SO_PEERCRED, &pc, &pl);
    printf("server sees the client: %d\n", pc.pid == pid);
    pid_t seen = 0;
    read(n, &seen, sizeof seen);
    printf("client sees the server: %d\n", seen == getpid());
    write(n, "x", 1);
    wait_for(pid, NULL, 0);
    close(n);
    close(l);
}

/* sendmsg of one byte claiming `u` (SCM_CREDENTIALS). */
static long claim(int s, pid_t pid, int uid, int gid)
{
    struct ucred u = {pid, (uid_t)uid, (gid_t)gid};
    char ctl[CMSG_SPACE(sizeof u)];
    struct iovec iv = {"c", 1};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof u);
    memcpy(CMSG_DATA(c), &u, sizeof u);
    return sendmsg(s, &m, 0);
}

/* Receives one message and prints the credentials it carries. */
static void show_received(int s, const char *what)
{
    char buf[16], ctl[64];
    struct iovec iv = {buf, sizeof buf};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    if (recvmsg(s, &m, MSG_DONTWAIT) < 0) {
        printf("%s: recvmsg %s\n", what, errname(errno));
        return;
    }
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_CREDENTIALS) {
        printf("%s: no credentials\n", what);
        return;
    }
    struct ucred u;
    memcpy(&u, CMSG_DATA(c), sizeof u);
    printf("%s: pid is mine %d uid %d gid %d\n", what, u.pid == getpid(), (int)u.uid, (int)u.gid);
}

/* Credentials of processes that are not plain root, each in a child. */
static void test_cred_ids(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* Real 1000/1001, effective 1003/1002, saved 0/0: no capabilities. */
        if (setgroups(0, NULL) != 0 || setresgid(1001, 1002, 0) != 0 || setresuid(1000, 1003, 0) != 0)
            _exit(2);
        int sv[2], on = 1;
        socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
        setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
        struct ucred pc;
        socklen_t pl = sizeof pc;
        getsockopt(sv[1], SOL_SOCKET, SO_PEERCRED, &pc, &pl);
        printf("user: SO_PEERCRED of a pair: pid is mine %d uid %d gid %d\n", pc.pid == getpid(), (int)pc.uid,
               (int)pc.gid);
        send(sv[0], "a", 1, 0);
        show_received(sv[1], "user: attached credentials");
        SHOW("user: claim real ids", claim(sv[0], getpid(), 1000, 1001));
        show_received(sv[1], "user: received");
        SHOW("user: claim effective ids", claim(sv[0], getpid(), 1003, 1002));
        SHOW("user: claim saved ids", claim(sv[0], getpid(), 0, 0));
        show_received(sv[1], "user: received");
        show_received(sv[1], "user: received");
        SHOW("user: claim another uid", claim(sv[0], getpid(), 5, 1001));
        SHOW("user: claim another gid", claim(sv[0], getpid(), 1000, 5));
        SHOW("user: claim the parent's pid", claim(sv[0], getppid(), 1000, 1001));
        SHOW("user: claim a missing pid", claim(sv[0], 999999, 1000, 1001));
        SHOW("user: claim uid -1 and another pid", claim(sv[0], getppid(), -1, 1001));
        SHOW("user: claim gid -1", claim(sv[0], getpid(), 1000, -1));
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child with other ids ran");

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        /* Root, without CAP_SYS_ADMIN, then without CAP_SETUID. */
        int sv[2], on = 1;
        socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
        setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
        SHOW("root: claim the parent's pid", claim(sv[0], getppid(), 0, 0));
        show_received(sv[1], "root: received");
        SHOW("root: claim a missing pid and uid -1", claim(sv[0], 999999, -1, 0));
        drop_cap(CAP_SYS_ADMIN);
        SHOW("no CAP_SYS_ADMIN: claim the parent's pid", claim(sv[0], getppid(), 0, 0));
        SHOW("no CAP_SYS_ADMIN: claim a missing pid", claim(sv[0], 999999, 0, 0));
        SHOW("no CAP_SYS_ADMIN: claim uid 5 gid 7", claim(sv[0], getpid(), 5, 7));
        show_received(sv[1], "no CAP_SYS_ADMIN: received");
        drop_cap(CAP_SETUID);
        SHOW("no CAP_SETUID: claim uid 5", claim(sv[0], getpid(), 5, 0));
        SHOW("no CAP_SETUID: claim gid 7", claim(sv[0], getpid(), 0, 7));
        drop_cap(CAP_SETGID);
        SHOW("no CAP_SETGID: claim gid 7", claim(sv[0], getpid(), 0, 7));
        _exit(0);
    }
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the root child without capabilities ran");
}

/* Whether socket inode `ino` is listed in /proc/net/unix. */
static int listed(unsigned long ino)
{
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512];
    int found = 0;
    if (!f)
        return -1;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned long i;
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu", &i) == 1 && i == ino)
            found = 1;
    }
    fclose(f);
    return found;
}

static unsigned long ino_of(int fd)
{
    struct stat st;
    fstat(fd, &st);
    return st.st_ino;
}

/* Releases a socket (what starts a collection) until none of the `n`
 * inodes is listed, for up to 3 s; returns how many still are. */
static int collect(const unsigned long *inos, int n)
{
    int left = n;
    for (int t = 0; t < 300; t++) {
        close(socket(AF_UNIX, SOCK_DGRAM, 0));
        left = 0;
        for (int i = 0; i < n; i++)
            left += listed(inos[i]) == 1;
        if (left == 0)
            break;
        sleep_ms(10);
    }
    return left;
}

/* Sockets only in flight in each other's queues are collected; what a
 * live socket can still reach is not. */
static void test_gc(void)
{
    unsigned long inos[8];
    int n = 0, fds[4], nfds, mflags;
    size_t clen;
    char buf[16];

    /* a and b hold each other: a's file in b's queue, b's in a's. */
    int ab[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, ab);
    inos[n++] = ino_of(ab[0]);
    inos[n++] = ino_of(ab[1]);
    send_fds(ab[0], "a", 1, &ab[0], 1);
    send_fds(ab[1], "b", 1, &ab[1], 1);
    printf("before closing: both listed %d\n", listed(inos[0]) + listed(inos[1]));

    /* A stream socket holding itself and a pipe's write end. */
    int st[2], p[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, st);
    pipe(p);
    inos[n++] = ino_of(st[1]);
    int two[2] = {st[1], p[1]};
    send_fds(st[0], "s", 1, two, 2);
    close(p[1]);

    /* A listener held by a message in its own waiting connection. */
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, "\0kiln-gc", 8);
    socklen_t al = offsetof(struct sockaddr_un, sun_path) + 8;
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    bind(l, (struct sockaddr *)&a, al);
    listen(l, 4);
    inos[n++] = ino_of(l);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&a, al);
    send_fds(c, "l", 1, &l, 1);

    /* g and h hold each other, and h is also in flight to a socket that
     * stays open: reachable, so kept. */
    int gh[2], keep[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, gh);
    socketpair(AF_UNIX, SOCK_DGRAM, 0, keep);
    send_fds(gh[0], "g", 1, &gh[0], 1);
    send_fds(gh[1], "h", 1, &gh[1], 1);
    send_fds(keep[0], "k", 1, &gh[1], 1);
    unsigned long g_ino = ino_of(gh[0]);

    close(ab[0]);
    close(ab[1]);
    close(st[0]);
    close(st[1]);
    close(c);
    close(l);
    close(gh[0]);
    close(gh[1]);
    printf("cycles collected: %d of %d left\n", collect(inos, n), n);
    SHOW("the pipe's write end went with them: read", read(p[0], buf, sizeof buf));
    close(p[0]);
    printf("the reachable cycle is listed: %d\n", listed(g_ino));
    recv_fds(keep[1], buf, sizeof buf, 64, 0, fds, &nfds, &mflags, &clen);
    int h = nfds == 1 ? fds[0] : -1;
    recv_fds(h, buf, sizeof buf, 64, MSG_DONTWAIT, fds, &nfds, &mflags, &clen);
    int g = nfds == 1 ? fds[0] : -1;
    printf("h from the open socket %d, g from h %d, g is g %d\n", h >= 0, g >= 0, g >= 0 && ino_of(g) == g_ino);
    SHOW("g sends to h", send(g, "x", 1, 0));
    SHOW("h receives", recv(h, buf, sizeof buf, MSG_DONTWAIT));
    /* h's own message (in g's queue) still carries h. */
    recv_fds(g, buf, sizeof buf, 64, MSG_DONTWAIT, fds, &nfds, &mflags, &clen);
    printf("g's queue still holds h: %d\n", nfds == 1 && ino_of(fds[0]) == ino_of(h));
    if (nfds == 1)
        close(fds[0]);
    close(g);
    close(h);
    close(keep[0]);
    close(keep[1]);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child_main(argv[2]);
    t_init("scm");
    test_rights();
    test_fork_exec(argv[0]);
    test_creds();
    test_cred_ids();
    test_gc();
    return t_done();
}
