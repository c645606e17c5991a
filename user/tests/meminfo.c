/*
 * /proc/meminfo adds up and follows what programs do: anonymous memory
 * shows in AnonPages and in the process's VmRSS, tmpfs files in Cached and
 * Shmem, kernel buffers (full pipes) in Slab, and each goes back down
 * when freed, the kernel heap included. AF_UNIX sockets that hold each
 * other in flight keep their queued data until the collector frees them.
 *
 * Kiln-only: the deltas are exact to a few pages only on an otherwise
 * idle machine, which a host running other jobs is not, and Linux has
 * categories (vmalloc, per-CPU, buffers) that Kiln's sum leaves out.
 * On the host it prints what it finds and checks only that the fields
 * exist.
 */
#include "common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct meminfo {
    long total, free, available, buffers, cached, shmem, anon, slab, sunreclaim, kstack, ptables;
};

static long field(const char *text, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s:", name);
    const char *at = strstr(text, key);
    if (!at && strncmp(text, key + 1, strlen(key + 1)) == 0)
        at = text - 1;
    if (!at)
        return -1;
    return strtol(at + strlen(key), NULL, 10);
}

static int read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(fd);
    return (int)n;
}

static struct meminfo meminfo(void)
{
    static char text[8192];
    struct meminfo m = {0};
    if (read_file("/proc/meminfo", text, sizeof text) <= 0)
        return m;
    m.total = field(text, "MemTotal");
    m.free = field(text, "MemFree");
    m.available = field(text, "MemAvailable");
    m.buffers = field(text, "Buffers");
    m.cached = field(text, "Cached");
    m.shmem = field(text, "Shmem");
    m.anon = field(text, "AnonPages");
    m.slab = field(text, "Slab");
    m.sunreclaim = field(text, "SUnreclaim");
    m.kstack = field(text, "KernelStack");
    m.ptables = field(text, "PageTables");
    return m;
}

static long vm_rss(void)
{
    static char text[4096];
    if (read_file("/proc/self/status", text, sizeof text) <= 0)
        return -1;
    return field(text, "VmRSS");
}

/* Within [want, want + slack] kB. */
static int about(long got, long want, long slack)
{
    return got >= want && got <= want + slack;
}

int main(void)
{
    t_init("meminfo");
    int kiln = getenv("KILN_TEST") && access("/dev/mymem", F_OK) == 0;
    struct meminfo m = meminfo();
    check(m.total > 0 && m.free >= 0 && m.available >= 0 && m.buffers >= 0 && m.cached >= 0 && m.shmem >= 0 &&
              m.anon >= 0 && m.slab >= 0 && m.sunreclaim >= 0 && m.kstack >= 0 && m.ptables >= 0,
          "every field is there");
    if (!kiln) {
        printf("not Kiln: deltas not checked\n");
        return t_done();
    }

    long parts = m.free + m.cached + m.anon + m.slab + m.kstack + m.ptables;
    check(parts <= m.total && parts >= m.total - 2048, "the parts add up to MemTotal (%ld of %ld kB)", parts,
          m.total);
    check(m.free <= m.available && m.shmem <= m.cached, "MemFree <= MemAvailable, Shmem <= Cached");

    /* 16 MiB of anonymous memory, touched. */
    long rss0 = vm_rss();
    struct meminfo before = meminfo();
    size_t len = 16 << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(p != MAP_FAILED, "mmap 16 MiB");
    for (size_t i = 0; i < len; i += 4096)
        p[i] = 1;
    struct meminfo during = meminfo();
    long rss1 = vm_rss();
    check(about(during.anon - before.anon, 16384, 512), "AnonPages +16 MiB (%ld kB)", during.anon - before.anon);
    check(about(rss1 - rss0, 16384, 512), "VmRSS +16 MiB (%ld kB)", rss1 - rss0);
    check(about(before.free - during.free, 16384, 1024), "MemFree -16 MiB (%ld kB)", before.free - during.free);
    munmap(p, len);
    struct meminfo after = meminfo();
    check(about(after.anon, before.anon - 64, 128), "munmap gives it back (%ld kB left)", after.anon - before.anon);

    /* An 8 MiB tmpfs file. */
    before = meminfo();
    int fd = open("/tmp/meminfo.dat", O_CREAT | O_TRUNC | O_RDWR, 0600);
    static char block[65536];
    memset(block, 7, sizeof block);
    for (int i = 0; i < 128; i++)
        if (write(fd, block, sizeof block) != sizeof block)
            break;
    during = meminfo();
    check(about(during.cached - before.cached, 8192, 64), "Cached +8 MiB (%ld kB)", during.cached - before.cached);
    check(about(during.shmem - before.shmem, 8192, 64), "Shmem +8 MiB (%ld kB)", during.shmem - before.shmem);
    close(fd);
    unlink("/tmp/meminfo.dat");
    after = meminfo();
    check(after.cached <= before.cached + 16, "unlink gives it back (%ld kB left)", after.cached - before.cached);

    /* 64 full pipes: 4 MiB of kernel buffers, returned when closed. */
    before = meminfo();
    int pipes[64][2];
    int made = 0;
    for (; made < 64; made++) {
        if (pipe(pipes[made]) != 0)
            break;
        fcntl(pipes[made][1], F_SETFL, O_NONBLOCK);
        while (write(pipes[made][1], block, sizeof block) > 0)
            ;
    }
    during = meminfo();
    check(made == 64, "64 pipes");
    check(during.slab - before.slab >= 4096, "Slab +4 MiB for full pipes (%ld kB)", during.slab - before.slab);
    for (int i = 0; i < made; i++) {
        close(pipes[i][0]);
        close(pipes[i][1]);
    }
    after = meminfo();
    check(after.slab <= before.slab + 256, "the kernel heap gives it back (%ld kB kept)", after.slab - before.slab);

    /* 32 pairs of datagram sockets, each end in flight in the other's
     * queue with 200,000 bytes: 6.4 MB only the collector can free. */
    before = meminfo();
    static char big[200000];
    int cycles = 0;
    for (; cycles < 32; cycles++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
            break;
        for (int end = 0; end < 2; end++) {
            char ctl[CMSG_SPACE(sizeof(int))] = {0};
            struct iovec iv = {big, end == 0 ? sizeof big : 1};
            struct msghdr m = {0};
            m.msg_iov = &iv;
            m.msg_iovlen = 1;
            m.msg_control = ctl;
            m.msg_controllen = sizeof ctl;
            struct cmsghdr *c = CMSG_FIRSTHDR(&m);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &sv[end], sizeof(int));
            sendmsg(sv[end], &m, 0);
        }
        close(sv[0]);
        close(sv[1]);
    }
    during = meminfo();
    check(cycles == 32, "32 socket cycles");
    check(during.slab - before.slab >= 6000, "Slab +6.4 MB held by the cycles (%ld kB)", during.slab - before.slab);
    /* Releasing any socket starts a collection. */
    close(socket(AF_UNIX, SOCK_DGRAM, 0));
    after = meminfo();
    check(after.slab <= before.slab + 256, "the collector gives it back (%ld kB kept)", after.slab - before.slab);
    return t_done();
}
