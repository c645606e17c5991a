/*
 * oom: running out of memory (Kiln only: on the host the same program
 * would be a job for the host's OOM killer, so it skips itself there).
 *
 * A process that touches anonymous memory until none is left is killed
 * with SIGKILL, chosen as the largest, while a bystander that keeps making
 * system calls meanwhile (they may fail with ENOMEM, never crash) lives
 * on; all the memory comes back, three times over. When a small process is
 * the one whose fault finds no memory, the largest (a hoarder holding
 * nearly all of it) is killed instead and the small one carries on. A
 * tmpfs that fills up refuses the next write with ENOSPC and gives its
 * memory back when the file goes.
 */
#include "common.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#define HOG_CHUNK (32UL << 20)

static long meminfo_kib(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long value = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) == 0) {
            value = atol(line + strlen(key));
            break;
        }
    }
    if (f)
        fclose(f);
    return value;
}

static void hog(void)
{
    for (;;) {
        char *p = mmap(NULL, HOG_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            _exit(2);
        for (size_t i = 0; i < HOG_CHUNK; i += 4096)
            p[i] = 1;
    }
}

/* System calls that allocate kernel memory, until `stop` reads end of
 * file; 0 if every failure was a clean ENOMEM/ENFILE. */
static int bystander(int stop)
{
    char buf[256];
    for (;;) {
        struct pollfd pfd = { .fd = stop, .events = POLLIN };
        if (poll(&pfd, 1, 0) > 0)
            return 0;
        int fds[2];
        if (pipe(fds) == 0) {
            close(fds[0]);
            close(fds[1]);
        } else if (errno != ENOMEM && errno != ENFILE) {
            return 3;
        }
        int fd = open("/proc/self/status", O_RDONLY);
        if (fd >= 0) {
            if (read(fd, buf, sizeof buf) <= 0)
                return 4;
            close(fd);
        } else if (errno != ENOMEM) {
            return 5;
        }
    }
}

static void test_hog_rounds(long avail0)
{
    for (int round = 1; round <= 3; round++) {
        int stop[2];
        if (!check(pipe(stop) == 0, "round %d: a stop pipe", round))
            return;
        pid_t b = fork();
        if (b == 0) {
            close(stop[1]);
            _exit(bystander(stop[0]));
        }
        close(stop[0]);
        pid_t h = fork();
        if (h == 0)
            hog();
        int st = 0;
        waitpid(h, &st, 0);
        check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "round %d: the hog was killed with SIGKILL (%s)", round,
              status_str(st));
        close(stop[1]);
        waitpid(b, &st, 0);
        check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: the bystander lived, its calls failing cleanly (%s)",
              round, status_str(st));
        long avail = meminfo_kib("MemAvailable:");
        check(avail >= avail0 - 4096, "round %d: the memory came back (%ld of %ld KiB available)", round, avail,
              avail0);
    }
}

/* Touches memory 1 MiB at a time until MemFree drops under 2 MiB, says
 * so on `ready`, and holds it. */
static void hoarder(int ready)
{
    for (;;) {
        char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            _exit(2);
        for (size_t i = 0; i < (1 << 20); i += 4096)
            p[i] = 1;
        if (meminfo_kib("MemFree:") < 2048)
            break;
    }
    if (write(ready, "r", 1) != 1)
        _exit(3);
    for (;;)
        pause();
}

static void grower(void)
{
    size_t len = 16 << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(2);
    for (size_t i = 0; i < len; i += 4096)
        p[i] = 1;
    _exit(0);
}

static void test_largest_goes(long avail0)
{
    int ready[2];
    if (!check(pipe(ready) == 0, "a ready pipe"))
        return;
    pid_t h = fork();
    if (h == 0) {
        close(ready[0]);
        hoarder(ready[1]);
    }
    close(ready[1]);
    char c = 0;
    check(read(ready[0], &c, 1) == 1, "the hoarder holds all but 2 MiB");
    close(ready[0]);
    pid_t g = fork();
    if (g == 0)
        grower();
    int st = 0;
    waitpid(g, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a small process faulting for 16 MiB more lives (%s)", status_str(st));
    waitpid(h, &st, 0);
    check(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the hoarder, the largest, was killed instead (%s)",
          status_str(st));
    long avail = meminfo_kib("MemAvailable:");
    check(avail >= avail0 - 4096, "the memory came back (%ld of %ld KiB available)", avail, avail0);
}

static void test_full_tmpfs(long avail0)
{
    static char buf[1 << 20];
    memset(buf, 'x', sizeof buf);
    int fd = open("/tmp/oom-fill", O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (!check(fd >= 0, "create /tmp/oom-fill"))
        return;
    long written = 0;
    int err = 0;
    for (;;) {
        ssize_t n = write(fd, buf, sizeof buf);
        if (n < 0) {
            err = errno;
            break;
        }
        written += n;
    }
    check(err == ENOSPC, "filling /tmp ends in ENOSPC (after %ld MiB; errno %d)", written >> 20, err);
    check(written > 0, "some of it was written first");
    close(fd);
    check(unlink("/tmp/oom-fill") == 0, "unlink the file");
    long avail = meminfo_kib("MemAvailable:");
    check(avail >= avail0 - 4096, "its memory came back (%ld of %ld KiB available)", avail, avail0);
}

int main(void)
{
    t_init("oom");
    struct utsname u;
    if (uname(&u) != 0 || strstr(u.version, "Kiln") == NULL) {
        printf("not Kiln: skipped\n");
        return 0;
    }
    long avail0 = meminfo_kib("MemAvailable:");
    check(avail0 > 0, "MemAvailable is reported");
    test_hog_rounds(avail0);
    test_largest_goes(avail0);
    test_full_tmpfs(avail0);
    return t_done();
}
