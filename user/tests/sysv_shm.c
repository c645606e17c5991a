/*
 * sysv_shm: System V shared memory.  shmget (keys, sizes, limits),
 * shmat (anywhere, at an address, SHM_RND, SHM_RDONLY, SHM_REMAP and
 * their EINVAL cases), shmdt (pieces left by munmap and mprotect too),
 * shm_nattch through attach, fork, split areas, detach, exec and exit,
 * shm_atime/dtime/lpid/cpid, IPC_RMID of an attached segment (SHM_DEST,
 * the key hidden, destroyed at the last detach), the memory shared
 * across processes, every shmctl command, /proc/sysvipc/shm and the
 * segment's name in /proc/self/maps.  Identifiers are never printed.
 */
#include "common.h"
#include <fcntl.h>
#include <setjmp.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif

static struct shmid_ds stat_of(int id)
{
    struct shmid_ds ds;
    memset(&ds, 0, sizeof ds);
    shmctl(id, IPC_STAT, &ds);
    return ds;
}

static long nattch(int id)
{
    struct shmid_ds ds;
    return shmctl(id, IPC_STAT, &ds) == 0 ? (long)ds.shm_nattch : -1;
}

/* Whether touching (writing if `write`) `p` in a child raises SIGSEGV. */
static const char *touch(volatile char *p, int write)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (write)
            *p = 1;
        else
            (void)*p;
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    return WIFSIGNALED(st) ? signame(WTERMSIG(st)) : "ok";
}

static void test_get(key_t key)
{
    EXPECT_ERR(EINVAL, "shmget size 0", shmget(IPC_PRIVATE, 0, 0600));
    EXPECT_ERR(ENOENT, "shmget a missing key", shmget(key, 4096, 0600));
    int id = shmget(key, 10000, IPC_CREAT | 0600);
    check(id >= 0, "shmget(key, 10000, IPC_CREAT)");
    check(shmget(key, 0, 0) == id && shmget(key, 10000, 0) == id, "found with size 0 and 10000");
    EXPECT_ERR(EINVAL, "found with a larger size", shmget(key, 10001, 0));
    EXPECT_ERR(EEXIST, "IPC_CREAT|IPC_EXCL", shmget(key, 10000, IPC_CREAT | IPC_EXCL | 0600));
    EXPECT_ERR(ENOMEM, "1 TiB (more than memory)", shmget(IPC_PRIVATE, 1UL << 40, 0600));
    struct shmid_ds ds = stat_of(id);
    printf("new segment: mode 0%o uid %d cuid %d segsz %lu nattch %lu lpid %d atime %ld dtime %ld cpid is me %d\n",
           ds.shm_perm.mode, ds.shm_perm.uid, ds.shm_perm.cuid, (unsigned long)ds.shm_segsz,
           (unsigned long)ds.shm_nattch, ds.shm_lpid, (long)ds.shm_atime, (long)ds.shm_dtime,
           ds.shm_cpid == getpid());
    long now = (long)time(NULL);
    check(ds.shm_ctime >= now - 2 && ds.shm_ctime <= now, "shm_ctime is now");
    check(shmctl(id, IPC_RMID, NULL) == 0, "IPC_RMID");
    EXPECT_ERR(EINVAL, "IPC_STAT of a removed segment", shmctl(id, IPC_STAT, &ds));
    EXPECT_ERR(ENOENT, "its key is free again", shmget(key, 4096, 0));
}

static void test_attach(void)
{
    int id = shmget(IPC_PRIVATE, 3 * 4096, 0600);
    char *p = shmat(id, NULL, 0);
    check(p != (void *)-1, "shmat anywhere");
    check(p[0] == 0 && p[3 * 4096 - 1] == 0, "the segment starts zeroed");
    strcpy(p, "hello");
    struct shmid_ds ds = stat_of(id);
    long now = (long)time(NULL);
    check(ds.shm_nattch == 1 && ds.shm_lpid == getpid() && ds.shm_atime >= now - 2, "nattch 1, lpid me, atime now");
    char *q = shmat(id, NULL, SHM_RDONLY);
    check(q != (void *)-1 && q != p && strcmp(q, "hello") == 0, "a second, read-only attachment sees the data");
    printf("nattch with two attachments: %ld\n", nattch(id));
    printf("writing the read-only attachment: %s\n", touch(q, 1));
    EXPECT_ERR(EACCES, "mprotect(PROT_WRITE) of a read-only attachment", mprotect(q, 4096, PROT_READ | PROT_WRITE));
    check(shmdt(q) == 0, "shmdt the read-only one");
    printf("reading it after shmdt: %s\n", touch(q, 0));
    EXPECT_ERR(EINVAL, "shmdt where nothing is attached", shmdt(q));
    EXPECT_ERR(EINVAL, "shmdt of an unaligned address", shmdt(p + 1));
    EXPECT_ERR(EINVAL, "shmdt inside the attachment", shmdt(p + 4096));

    /* Fork shares the attachment; the child's exit detaches it. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int ok = nattch(id) == 2;
        strcpy(p + 4096, "from the child");
        _exit(ok ? 0 : 1);
    }
    int st;
    wait_for(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child sees nattch 2");
    ds = stat_of(id);
    check(strcmp(p + 4096, "from the child") == 0, "the child's store shows in the parent");
    check(ds.shm_nattch == 1 && ds.shm_lpid == pid && ds.shm_dtime >= now - 2, "its exit detached: nattch 1, lpid it");

    /* Splitting an attachment makes more areas, each counted (as Linux). */
    check(mprotect(p + 4096, 4096, PROT_READ) == 0, "mprotect the middle page");
    printf("nattch after the split: %ld\n", nattch(id));
    check(munmap(p + 4096, 4096) == 0, "munmap the middle page");
    printf("nattch after munmap of it: %ld\n", nattch(id));
    check(shmdt(p) == 0, "shmdt detaches both pieces");
    printf("nattch after shmdt: %ld; the last page is gone: %s\n", nattch(id), touch(p + 2 * 4096, 0));

    /* Fixed addresses. */
    char *fixed = mmap(NULL, 8 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(fixed, 8 * 4096);
    check(shmat(id, fixed, 0) == fixed, "shmat at a free address");
    EXPECT_ERR(EINVAL, "shmat over it again", (long)shmat(id, fixed, 0));
    EXPECT_ERR(EINVAL, "shmat at an unaligned address", (long)shmat(id, fixed + 4 * 4096 + 10, 0));
    check(shmat(id, fixed + 4 * 4096 + 10, SHM_RND) == fixed + 4 * 4096, "SHM_RND rounds down");
    check(shmat(id, fixed, SHM_REMAP) == fixed, "SHM_REMAP replaces the old attachment");
    EXPECT_ERR(EINVAL, "SHM_REMAP without an address", (long)shmat(id, NULL, SHM_REMAP));
    EXPECT_ERR(EINVAL, "SHM_RND|SHM_REMAP rounding to 0", (long)shmat(id, (void *)100, SHM_RND | SHM_REMAP));
    printf("nattch with two fixed attachments: %ld\n", nattch(id));
    shmdt(fixed);
    shmdt(fixed + 4 * 4096);
    EXPECT_ERR(EINVAL, "shmat negative id", (long)shmat(-1, NULL, 0));
    EXPECT_ERR(EINVAL, "shmat unknown id", (long)shmat(id ^ 0x4000, NULL, 0));
    shmctl(id, IPC_RMID, NULL);
}

static void test_rmid_attached(key_t key)
{
    int id = shmget(key, 4096, IPC_CREAT | 0600);
    char *p = shmat(id, NULL, 0);
    strcpy(p, "kept");
    check(shmctl(id, IPC_RMID, NULL) == 0, "IPC_RMID while attached");
    struct shmid_ds ds = stat_of(id);
    printf("after IPC_RMID: mode 0%o key %d nattch %lu\n", ds.shm_perm.mode, ds.shm_perm.__key,
           (unsigned long)ds.shm_nattch);
    EXPECT_ERR(ENOENT, "the key no longer finds it", shmget(key, 4096, 0));
    char *again = shmat(id, NULL, 0);
    check(again != (void *)-1 && strcmp(again, "kept") == 0, "the id still attaches it (as Linux allows)");
    shmdt(again);
    check(strcmp(p, "kept") == 0, "the first attachment still works");
    shmdt(p);
    EXPECT_ERR(EINVAL, "gone at the last detach", shmctl(id, IPC_STAT, &ds));
}

static void test_ctl(void)
{
    int id = shmget(IPC_PRIVATE, 4096, 0600);
    struct shmid_ds ds = stat_of(id);
    ds.shm_perm.mode = 0640;
    ds.shm_perm.uid = 77;
    ds.shm_perm.gid = 88;
    check(shmctl(id, IPC_SET, &ds) == 0, "IPC_SET mode 0640 uid 77 gid 88");
    ds = stat_of(id);
    printf("after IPC_SET: mode 0%o uid %d gid %d cuid %d\n", ds.shm_perm.mode, ds.shm_perm.uid, ds.shm_perm.gid,
           ds.shm_perm.cuid);
    check(shmctl(id, SHM_LOCK, NULL) == 0, "SHM_LOCK");
    printf("locked mode 0%o\n", stat_of(id).shm_perm.mode);
    check(shmctl(id, SHM_UNLOCK, NULL) == 0, "SHM_UNLOCK");
    printf("unlocked mode 0%o\n", stat_of(id).shm_perm.mode);
    check(shmctl(id & 0x7fff, SHM_STAT, &ds) == id, "SHM_STAT by index returns the id");
    check(shmctl(id & 0x7fff, SHM_STAT_ANY, &ds) == id, "SHM_STAT_ANY by index returns the id");
    struct shminfo si;
    int max = shmctl(0, IPC_INFO, (struct shmid_ds *)&si);
    check(max >= (id & 0x7fff), "IPC_INFO returns the highest index in use");
    printf("IPC_INFO: shmmax %lu shmmin %lu shmmni %lu shmseg %lu shmall %lu\n", (unsigned long)si.shmmax,
           (unsigned long)si.shmmin, (unsigned long)si.shmmni, (unsigned long)si.shmseg, (unsigned long)si.shmall);
    char *p = shmat(id, NULL, 0);
    p[0] = 1;
    struct shm_info info;
    max = shmctl(0, SHM_INFO, (struct shmid_ds *)&info);
    check(max >= (id & 0x7fff) && info.used_ids >= 1 && info.shm_tot >= 1 && info.shm_rss >= 1,
          "SHM_INFO counts segments, pages and resident pages");
    shmdt(p);
    EXPECT_ERR(EFAULT, "IPC_STAT to a bad pointer", shmctl(id, IPC_STAT, BAD_PTR));
    EXPECT_ERR(EFAULT, "IPC_SET from a bad pointer", shmctl(id, IPC_SET, BAD_PTR));
    EXPECT_ERR(EFAULT, "IPC_INFO to a bad pointer", shmctl(0, IPC_INFO, BAD_PTR));
    EXPECT_ERR(EINVAL, "shmctl unknown command", shmctl(id, 99, &ds));
    EXPECT_ERR(EINVAL, "shmctl negative id", shmctl(-1, IPC_STAT, &ds));
    EXPECT_ERR(EINVAL, "shmctl IPC_64|IPC_STAT", shmctl(id, 0x100 | IPC_STAT, &ds));
    ds.shm_perm.gid = (gid_t)-1;
    EXPECT_ERR(EINVAL, "IPC_SET gid -1", shmctl(id, IPC_SET, &ds));
    shmctl(id, IPC_RMID, NULL);
    int fd = open("/proc/sys/kernel/shmmni", O_RDONLY);
    char buf[64] = { 0 };
    read(fd, buf, sizeof buf - 1);
    close(fd);
    printf("/proc/sys/kernel/shmmni: %s", buf);
}

static void test_proc(key_t key)
{
    int id = shmget(key, 5000, IPC_CREAT | 0604);
    char *p = shmat(id, NULL, 0);
    p[0] = 1;
    FILE *f = fopen("/proc/sysvipc/shm", "r");
    char line[512], header[512] = "";
    int found = 0;
    if (f && fgets(header, sizeof header, f)) {
        while (fgets(line, sizeof line, f)) {
            int k, sid;
            if (sscanf(line, "%d %d", &k, &sid) == 2 && sid == id) {
                struct shmid_ds ds = stat_of(id);
                char expect[512];
                snprintf(expect, sizeof expect,
                         "%10d %10d  %4o %21lu %5u %5u  %5lu %5u %5u %5u %5u %10ld %10ld %10ld %21lu %21lu\n",
                         ds.shm_perm.__key, id, ds.shm_perm.mode, (unsigned long)ds.shm_segsz, ds.shm_cpid,
                         ds.shm_lpid, (unsigned long)ds.shm_nattch, ds.shm_perm.uid, ds.shm_perm.gid,
                         ds.shm_perm.cuid, ds.shm_perm.cgid, (long)ds.shm_atime, (long)ds.shm_dtime,
                         (long)ds.shm_ctime, 4096UL, 0UL);
                check(strcmp(line, expect) == 0, "/proc/sysvipc/shm line in Linux's format");
                found = 1;
            }
        }
    }
    if (f)
        fclose(f);
    printf("/proc/sysvipc/shm header: %s", header);
    check(found, "/proc/sysvipc/shm lists the segment");
    char name[64];
    snprintf(name, sizeof name, "/SYSV%08x (deleted)", (unsigned)key);
    f = fopen("/proc/self/maps", "r");
    int named = 0;
    while (f && fgets(line, sizeof line, f))
        named |= strstr(line, name) != NULL;
    if (f)
        fclose(f);
    check(named, "/proc/self/maps names the attachment /SYSV<key> (deleted)");
    shmdt(p);
    shmctl(id, IPC_RMID, NULL);
}

/* Exec mode: report on the inherited descriptor that exec went well. */
static int exec_child(char **argv)
{
    int fd = atoi(argv[2]);
    write(fd, "e", 1);
    char c;
    read(fd + 1, &c, 1);
    return 0;
}

static void test_exec(const char *self)
{
    int id = shmget(IPC_PRIVATE, 4096, 0600);
    int up[2], down[2];
    pipe(up);
    pipe(down);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        shmat(id, NULL, 0);
        char c = nattch(id) == 1 ? 'a' : '!';
        write(up[1], &c, 1);
        /* The exec'd program reports on fd 10 and waits on fd 11. */
        dup2(up[1], 10);
        dup2(down[0], 11);
        char *argv[] = { (char *)self, "exec-child", "10", NULL };
        execv(self, argv);
        _exit(127);
    }
    char a = 0, e = 0;
    read(up[0], &a, 1);
    read(up[0], &e, 1);
    check(a == 'a' && e == 'e', "the child attached, then exec'd");
    printf("nattch after the child's exec: %ld\n", nattch(id));
    write(down[1], "x", 1);
    wait_for(pid, NULL, 0);
    shmctl(id, IPC_RMID, NULL);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "exec-child") == 0)
        return exec_child(argv);
    t_init("sysv_shm");
    key_t key = (key_t)(0x4b4d0000 | (getpid() & 0xffff));
    test_get(key);
    test_attach();
    test_rmid_attached(key);
    test_ctl();
    test_proc(key);
    test_exec(argv[0]);
    return t_done();
}
