/*
 * memfd: memfd_create (flags, names, what fstat and /proc/self/fd show,
 * MFD_CLOEXEC, MFD_EXEC/MFD_NOEXEC_SEAL), file seals (F_ADD_SEALS,
 * F_GET_SEALS: F_SEAL_SEAL, SHRINK, GROW, WRITE, FUTURE_WRITE, EXEC)
 * honoured by write, ftruncate, fallocate, mmap and mprotect, EBUSY
 * while a writable shared mapping exists, sharing through fork and a
 * reopen through /proc/self/fd, and fallocate on it (allocate, keep
 * size, punch hole, Linux's argument checks).
 */
#include "common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#define MFD_ALLOW_SEALING 2U
#define MFD_HUGETLB 4U
#endif
#define MFD_NOEXEC_SEAL_ 8U
#define MFD_EXEC_ 0x10U
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 1
#define F_SEAL_SHRINK 2
#define F_SEAL_GROW 4
#define F_SEAL_WRITE 8
#endif
#define F_SEAL_FUTURE_WRITE_ 0x10
#define F_SEAL_EXEC_ 0x20
#define FALLOC_KEEP_SIZE 1
#define FALLOC_PUNCH_HOLE 2
#define FALLOC_ZERO_RANGE 0x10

static int mfd(const char *name, unsigned flags)
{
    return (int)syscall(SYS_memfd_create, name, flags);
}

static long falloc(int fd, int mode, long off, long len)
{
    return syscall(SYS_fallocate, fd, mode, off, len);
}

static void fd_link(int fd, char *out, size_t n)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    ssize_t r = readlink(p, out, n - 1);
    out[r < 0 ? 0 : r] = 0;
}

static void test_create(void)
{
    int fd = mfd("hello", 0);
    check(fd >= 0, "memfd_create(\"hello\", 0)");
    struct stat st;
    check(fstat(fd, &st) == 0, "fstat");
    printf("mode 0%o nlink %lu size %ld blksize %ld uid %d\n", st.st_mode, (unsigned long)st.st_nlink,
           (long)st.st_size, (long)st.st_blksize, st.st_uid);
    char link[512];
    fd_link(fd, link, sizeof link);
    printf("/proc/self/fd link: %s\n", link);
    printf("F_GETFL: 0%o\n", fcntl(fd, F_GETFL));
    check(fcntl(fd, F_GETFD) == 0, "no FD_CLOEXEC without MFD_CLOEXEC");
    check(write(fd, "hello world", 11) == 11, "write 11");
    check(lseek(fd, 6, SEEK_SET) == 6, "lseek");
    char buf[16] = { 0 };
    check(read(fd, buf, 5) == 5 && memcmp(buf, "world", 5) == 0, "read back");
    /* Reopening through /proc/self/fd gives a new description of the same file. */
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    int again = open(p, O_RDONLY);
    memset(buf, 0, sizeof buf);
    check(again >= 0 && read(again, buf, 11) == 11 && strcmp(buf, "hello world") == 0,
          "a reopen through /proc/self/fd reads the data from offset 0");
    struct stat st2;
    fstat(again, &st2);
    check(st2.st_ino == st.st_ino && st2.st_dev == st.st_dev, "same inode");
    close(again);
    close(fd);

    fd = mfd("cloexec", MFD_CLOEXEC);
    check(fcntl(fd, F_GETFD) == FD_CLOEXEC, "MFD_CLOEXEC sets FD_CLOEXEC");
    close(fd);
    char name[300];
    memset(name, 'n', sizeof name);
    name[249] = 0;
    fd = mfd(name, 0);
    check(fd >= 0, "a 249-byte name");
    fd_link(fd, link, sizeof link);
    check(strlen(link) == strlen("/memfd:") + 249 + strlen(" (deleted)"), "the link holds the whole name");
    close(fd);
    name[249] = 'n';
    name[250] = 0;
    EXPECT_ERR(EINVAL, "a 250-byte name", mfd(name, 0));
    fd = mfd("", 0);
    fd_link(fd, link, sizeof link);
    printf("empty name: %s\n", link);
    close(fd);
    EXPECT_ERR(EFAULT, "bad name pointer", mfd(BAD_PTR, 0));
    EXPECT_ERR(EINVAL, "unknown flag 0x40", mfd("x", 0x40));
    EXPECT_ERR(EINVAL, "MFD_EXEC|MFD_NOEXEC_SEAL", mfd("x", MFD_EXEC_ | MFD_NOEXEC_SEAL_));
    fd = mfd("x", MFD_HUGETLB);
    check_quiet(fd >= 0 || errno == EINVAL, "MFD_HUGETLB: a file, or EINVAL without huge pages");
    if (fd >= 0)
        close(fd);

    fd = mfd("noexec", MFD_NOEXEC_SEAL_);
    fstat(fd, &st);
    printf("MFD_NOEXEC_SEAL: mode 0%o seals 0x%x\n", st.st_mode, fcntl(fd, F_GET_SEALS));
    EXPECT_ERR(EPERM, "chmod +x under F_SEAL_EXEC", fchmod(fd, 0777));
    check(fchmod(fd, 0644) == 0, "chmod without touching x bits");
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW) == 0, "MFD_NOEXEC_SEAL allows sealing");
    close(fd);
    fd = mfd("exec", MFD_EXEC_);
    fstat(fd, &st);
    printf("MFD_EXEC: mode 0%o seals 0x%x\n", st.st_mode, fcntl(fd, F_GET_SEALS));
    close(fd);
}

static void test_seals(void)
{
    int fd = mfd("plain", 0);
    check(fcntl(fd, F_GET_SEALS) == F_SEAL_SEAL, "without MFD_ALLOW_SEALING: F_SEAL_SEAL");
    EXPECT_ERR(EPERM, "F_ADD_SEALS without MFD_ALLOW_SEALING", fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
    close(fd);

    fd = mfd("sealed", MFD_ALLOW_SEALING);
    check(fcntl(fd, F_GET_SEALS) == 0, "MFD_ALLOW_SEALING: no seals");
    EXPECT_ERR(EINVAL, "F_ADD_SEALS unknown bit", fcntl(fd, F_ADD_SEALS, 0x40));
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    int ro = open(p, O_RDONLY);
    EXPECT_ERR(EPERM, "F_ADD_SEALS through a read-only open", fcntl(ro, F_ADD_SEALS, F_SEAL_GROW));
    EXPECT_ERR(EPERM, "read-only open: EPERM comes before the bad-bit check", fcntl(ro, F_ADD_SEALS, 0x40));
    check(fcntl(ro, F_GET_SEALS) == 0, "F_GET_SEALS through a read-only open");

    check(ftruncate(fd, 10000) == 0, "ftruncate 10000");
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0, "F_SEAL_SHRINK");
    EXPECT_ERR(EPERM, "shrink under F_SEAL_SHRINK", ftruncate(fd, 100));
    check(ftruncate(fd, 10000) == 0, "ftruncate to the same size");
    check(ftruncate(fd, 12000) == 0, "grow under F_SEAL_SHRINK");
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW) == 0, "F_SEAL_GROW");
    check(fcntl(ro, F_GET_SEALS) == (F_SEAL_SHRINK | F_SEAL_GROW), "the seals belong to the file");
    EXPECT_ERR(EPERM, "grow under F_SEAL_GROW", ftruncate(fd, 12001));
    check(pwrite(fd, "x", 1, 11999) == 1, "a write inside the file");
    EXPECT_ERR(EPERM, "a write past the end", pwrite(fd, "xx", 2, 11999));
    static char big[8192];
    printf("a write from page 1 past the end in page 2: %ld\n", (long)pwrite(fd, big, 5001, 7000));
    EXPECT_ERR(EPERM, "fallocate past the end", falloc(fd, 0, 11000, 2000));
    check(falloc(fd, 0, 0, 12000) == 0, "fallocate inside the file");
    EXPECT_ERR(EPERM, "fallocate KEEP_SIZE past the end", falloc(fd, FALLOC_KEEP_SIZE, 11000, 2000));
    EXPECT_ERR(EPERM, "open(O_TRUNC) shrinks: EPERM", open(p, O_RDWR | O_TRUNC));

    char *m = mmap(NULL, 12000, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "writable shared mapping");
    EXPECT_ERR(EBUSY, "F_SEAL_WRITE while it exists", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
    char *r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro, 0);
    check(r != MAP_FAILED, "a read-only shared mapping of a read-only open");
    munmap(m, 12000);
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) == 0, "F_SEAL_WRITE once it is gone (read-only mappings may stay)");
    EXPECT_ERR(EPERM, "write under F_SEAL_WRITE", write(fd, "x", 1));
    EXPECT_ERR(EPERM, "mmap(PROT_WRITE, MAP_SHARED) under F_SEAL_WRITE",
               (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "mmap(PROT_READ, MAP_SHARED) under F_SEAL_WRITE");
    EXPECT_ERR(EACCES, "mprotect(PROT_WRITE) of it", mprotect(m, 4096, PROT_READ | PROT_WRITE));
    munmap(m, 4096);
    m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    check(m != MAP_FAILED && (m[0] = 'p') == 'p', "a private writable mapping copies");
    munmap(m, 4096);
    munmap(r, 4096);
    EXPECT_ERR(EPERM, "fallocate PUNCH_HOLE under F_SEAL_WRITE", falloc(fd, FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 0, 10));
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) == 0, "F_SEAL_SEAL");
    EXPECT_ERR(EPERM, "F_ADD_SEALS after F_SEAL_SEAL", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
    EXPECT_ERR(EPERM, "F_ADD_SEALS 0 after F_SEAL_SEAL", fcntl(fd, F_ADD_SEALS, 0));
    printf("F_GET_SEALS: 0x%x\n", fcntl(fd, F_GET_SEALS));
    close(ro);
    close(fd);

    /* F_SEAL_FUTURE_WRITE: mappings made before keep writing. */
    fd = mfd("future", MFD_ALLOW_SEALING);
    ftruncate(fd, 4096);
    m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE_) == 0, "F_SEAL_FUTURE_WRITE with a writable mapping");
    strcpy(m, "still");
    char buf[8] = { 0 };
    check(pread(fd, buf, 5, 0) == 5 && strcmp(buf, "still") == 0, "the old mapping still writes");
    EXPECT_ERR(EPERM, "write under F_SEAL_FUTURE_WRITE", write(fd, "x", 1));
    EXPECT_ERR(EPERM, "a new writable shared mapping", (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    check(ftruncate(fd, 8192) == 0, "ftruncate still works");
    munmap(m, 4096);
    close(fd);

    /* F_SEAL_EXEC on a 0777 file seals writes and size too. */
    fd = mfd("exec", MFD_ALLOW_SEALING);
    check(fcntl(fd, F_ADD_SEALS, F_SEAL_EXEC_) == 0, "F_SEAL_EXEC");
    printf("F_SEAL_EXEC on mode 0777 gives seals 0x%x\n", fcntl(fd, F_GET_SEALS));
    close(fd);

    int pp[2];
    pipe(pp);
    EXPECT_ERR(EINVAL, "F_GET_SEALS on a pipe", fcntl(pp[0], F_GET_SEALS));
    EXPECT_ERR(EINVAL, "F_ADD_SEALS on a pipe's write end", fcntl(pp[1], F_ADD_SEALS, F_SEAL_GROW));
    EXPECT_ERR(EPERM, "F_ADD_SEALS on a pipe's read end", fcntl(pp[0], F_ADD_SEALS, F_SEAL_GROW));
    close(pp[0]);
    close(pp[1]);
    int pf = open("/proc/self/status", O_RDONLY);
    EXPECT_ERR(EINVAL, "F_GET_SEALS on a /proc file", fcntl(pf, F_GET_SEALS));
    close(pf);
}

static void test_shared(void)
{
    int fd = mfd("shared", 0);
    check(ftruncate(fd, 8192) == 0, "ftruncate 8192");
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(m != MAP_FAILED, "map it shared");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        strcpy(m + 4096, "from the child");
        _exit(0);
    }
    int st;
    wait_for(pid, &st, 0);
    check(strcmp(m + 4096, "from the child") == 0, "the child's store shows in the parent's mapping");
    char buf[32] = { 0 };
    check(pread(fd, buf, 14, 4096) == 14 && strcmp(buf, "from the child") == 0, "and in the file");
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int named = 0;
    while (maps && fgets(line, sizeof line, maps))
        named |= strstr(line, "/memfd:shared (deleted)") != NULL;
    if (maps)
        fclose(maps);
    check(named, "/proc/self/maps names the mapping /memfd:shared (deleted)");
    munmap(m, 8192);
    close(fd);
}

static void test_fallocate(void)
{
    int fd = mfd("falloc", 0);
    struct stat st;
    check(falloc(fd, 0, 0, 10000) == 0, "fallocate 0..10000");
    fstat(fd, &st);
    printf("after fallocate: size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);
    check(falloc(fd, FALLOC_KEEP_SIZE, 10000, 10000) == 0, "fallocate KEEP_SIZE past the end");
    fstat(fd, &st);
    printf("after KEEP_SIZE: size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);
    static char ones[10000];
    memset(ones, 1, sizeof ones);
    pwrite(fd, ones, sizeof ones, 0);
    check(falloc(fd, FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 100, 8192) == 0, "punch 100..8291");
    static char back[10000];
    pread(fd, back, sizeof back, 0);
    int zero = 1, kept = 1;
    for (int i = 0; i < 10000; i++) {
        if (i >= 100 && i < 8292)
            zero &= back[i] == 0;
        else
            kept &= back[i] == 1;
    }
    check(zero && kept, "the hole reads zeros, the rest is kept");
    fstat(fd, &st);
    printf("after the punch: size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);
    EXPECT_ERR(EOPNOTSUPP, "PUNCH_HOLE without KEEP_SIZE", falloc(fd, FALLOC_PUNCH_HOLE, 0, 10));
    EXPECT_ERR(EOPNOTSUPP, "ZERO_RANGE on tmpfs", falloc(fd, FALLOC_ZERO_RANGE, 0, 10));
    EXPECT_ERR(EOPNOTSUPP, "unknown mode 0x100", falloc(fd, 0x100, 0, 10));
    EXPECT_ERR(EINVAL, "negative offset", falloc(fd, 0, -1, 10));
    EXPECT_ERR(EINVAL, "zero length", falloc(fd, 0, 0, 0));
    EXPECT_ERR(EFBIG, "offset + len past the largest file", falloc(fd, 0, 0x7ffffffffffff000L, 0x2000));
    EXPECT_ERR(EBADF, "bad fd", falloc(99, 0, 0, 10));
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    int ro = open(p, O_RDONLY);
    EXPECT_ERR(EBADF, "read-only descriptor", falloc(ro, 0, 0, 10));
    close(ro);
    int pp[2];
    pipe(pp);
    EXPECT_ERR(ESPIPE, "a pipe", falloc(pp[1], 0, 0, 10));
    close(pp[0]);
    close(pp[1]);
    close(fd);
}

int main(void)
{
    t_init("memfd");
    test_create();
    test_seals();
    test_shared();
    test_fallocate();
    return t_done();
}
