/*
 * The benchmark guest's /init, the same file under Kiln and Linux: mount
 * what the benchmarks need, run `/b/kbench ARGS...` (ARGS are this
 * program's arguments, i.e. what follows `--` on the kernel command line)
 * and power the machine off.
 *
 * Linux needs the mounts done here; Kiln does them itself (or lacks the
 * call), so a failed mount is reported and ignored. Powering off tries
 * QEMU's isa-debug-exit port first, which gives QEMU the same exit status
 * (33) that Kiln's own shutdown gives, then reboot(2); under Kiln both
 * fail and init simply exits, which Kiln turns into a power-off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/io.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Prints the /proc/cpuinfo flags that decide Linux's copy and clear
 * loops (erms, fsrm: byte-wise `rep movsb`; rep_good: `rep movsq`; none:
 * unrolled moves), so a log shows which loops the kernel chose. */
static void print_copy_flags(void)
{
    static char buf[8192];
    int fd = open("/proc/cpuinfo", O_RDONLY);
    if (fd < 0)
        return;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[len > 0 ? len : 0] = 0;
    char *flags = strstr(buf, "\nflags");
    if (!flags)
        return;
    char *end = strchr(flags + 1, '\n');
    if (end)
        *end = 0;
    static const char *const names[] = {"erms", "fsrm", "rep_good"};
    dprintf(1, "init: cpu flags:");
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        int found = 0;
        for (char *p = flags; (p = strstr(p, names[i])) != NULL; p += n)
            if (p[-1] == ' ' && (p[n] == ' ' || p[n] == 0))
                found = 1;
        dprintf(1, " %s=%d", names[i], found);
    }
    dprintf(1, "\n");
}

/* Prints one /sys/devices/system/cpu/vulnerabilities file (Linux's view
 * of a mitigation), if there is one. */
static void print_vulnerability(const char *name)
{
    char path[96], state[128] = "";
    snprintf(path, sizeof path, "/sys/devices/system/cpu/vulnerabilities/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    ssize_t len = read(fd, state, sizeof state - 1);
    close(fd);
    state[len > 0 ? len : 0] = 0;
    dprintf(1, "init: %s: %s", name, state);
}

static void mount_one(const char *src, const char *dir, const char *type)
{
    mkdir(dir, 0755);
    if (mount(src, dir, type, 0, NULL) != 0 && errno != EBUSY && errno != ENOSYS)
        dprintf(1, "init: mount %s on %s: %s\n", type, dir, strerror(errno));
}

/* Brings every offline CPU online. Under -icount at -smp 2, Linux 6.1
 * hangs bringing up its second CPU at boot ("x86: Booting SMP
 * configuration"), but onlines it from user space; so the icount boots
 * at -smp > 1 give Linux `maxcpus=1` (xtask/src/bench/guest.rs) and both
 * CPUs are online before kbench starts. Kiln has no such files. */
static void online_cpus(void)
{
    for (int cpu = 1; cpu < 64; cpu++) {
        char path[64], state = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/online", cpu);
        int fd = open(path, O_RDWR);
        if (fd < 0)
            continue;
        if (read(fd, &state, 1) == 1 && state == '0') {
            if (pwrite(fd, "1", 1, 0) == 1)
                dprintf(1, "init: cpu%d onlined\n", cpu);
            else
                dprintf(1, "init: online cpu%d: %s\n", cpu, strerror(errno));
        }
        close(fd);
    }
}

int main(int argc, char **argv)
{
    mount_one("devtmpfs", "/dev", "devtmpfs");
    /* Linux opens /dev/console for init only if the initramfs has the
     * node; ours has no device nodes, so take the console from devtmpfs. */
    if (fcntl(1, F_GETFD) < 0) {
        int fd = open("/dev/console", O_RDWR);
        for (int i = 0; fd >= 0 && i < 3; i++)
            if (fd != i)
                dup2(fd, i);
    }
    mount_one("proc", "/proc", "proc");
    mount_one("tmpfs", "/tmp", "tmpfs");
    mount_one("sysfs", "/sys", "sysfs");
    online_cpus();
    /* The /dev/mymem initramfs (xtask/src/bench/mymem.rs) carries the Linux
     * module: load it, with its in-kernel timing test, and let that test's
     * log lines through `quiet`. Kiln boots the same image but has the
     * device built in and no finit_module: ENOSYS there is expected. */
    int ko = open("/mymem.ko", O_RDONLY);
    if (ko >= 0) {
        klogctl(8 /* SYSLOG_ACTION_CONSOLE_LEVEL */, NULL, 7);
        if (syscall(SYS_finit_module, ko, "timing=1", 0) != 0 && errno != ENOSYS)
            dprintf(1, "init: insmod /mymem.ko: %s\n", strerror(errno));
        klogctl(8, NULL, 4);
        close(ko);
    }
    /* A first argument that is a path names the program to run instead
     * of kbench (the mymem guest runs `/bin/sh /b/mymem.sh`). */
    char *args[16] = {"/b/kbench"};
    int n = 1, first = 1;
    /* Linux hands init the words of its command line it does not know
     * itself: `nokaslr` is read by its boot stub only. */
    while (first < argc && strcmp(argv[first], "nokaslr") == 0)
        first++;
    if (first < argc && argv[first][0] == '/') {
        args[0] = argv[first];
        first++;
    }
    for (int i = first; i < argc && n < 15; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    char *envp[] = {"HOME=/", "TERM=linux", "PATH=/bin", NULL};
    int status = 0;
    pid_t pid = fork();
    if (pid == 0) {
        execve(args[0], args, envp);
        dprintf(1, "init: execve %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        dprintf(1, "init: fork: %s\n", strerror(errno));
    else
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    dprintf(1, "init: %s exited with status %d\n", args[0], code);
    /* Which clock the kernel ended on: Linux's vDSO reads the time in
     * user mode only with the TSC (its watchdog may switch away). Kiln
     * has no such file; its vDSO always uses the TSC. */
    int cs = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
    if (cs >= 0) {
        char name[32] = "";
        ssize_t len = read(cs, name, sizeof name - 1);
        name[len > 0 ? len : 0] = 0;
        dprintf(1, "init: clocksource %s", name);
        close(cs);
    }
    print_copy_flags();
    print_vulnerability("meltdown");
    print_vulnerability("spectre_v2");
    sync();
    if (ioperm(0xf4, 4, 1) == 0)
        outl(16, 0xf4); /* QEMU exits with (16 << 1) | 1 = 33 */
    reboot(RB_POWER_OFF);
    return code;
}
