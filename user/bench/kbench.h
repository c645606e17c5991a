/*
 * kbench.h: what the benchmark files share: the helpers defined in
 * kbench.c and every benchmark's entry point. A benchmark sets *ns to the
 * time of its timed part and *ops to the operations done in it, and
 * returns 0, or -1 with the reason in `err`.
 */
#ifndef KBENCH_H
#define KBENCH_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define MIB (1024 * 1024)
#define CHUNK (64 * 1024)

/* musl-gcc ships no kernel headers: the futex ABI constants. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129


#define ERR_LEN 160

extern const char *self; /* this program's path: opened, stat'ed, exec'ed */
extern char err[ERR_LEN];
extern long pct;

void say(const char *fmt, ...);
int fail(const char *what);
int fail_msg(const char *what);
uint64_t now(void);
uint64_t iters(uint64_t base);
uint64_t warm(uint64_t n);
int reap(pid_t pid);
char *map_anon(size_t len, int flags);

typedef int (*bench_fn)(uint64_t *ns, uint64_t *ops);

/* bench_net.c */
int b_tcp_pingpong(uint64_t *ns, uint64_t *ops);
int b_tcp_bw(uint64_t *ns, uint64_t *ops);
int b_udp_pingpong(uint64_t *ns, uint64_t *ops);
int b_tcp_connect(uint64_t *ns, uint64_t *ops);

/* bench_nic.c: the through-the-NIC server (guest) and client (host). */
int nic_serve(int argc, char **argv);
int nic_client(int argc, char **argv);

/* bench_sys.c */
int b_getppid(uint64_t *ns, uint64_t *ops);
int b_read_null(uint64_t *ns, uint64_t *ops);
int b_write_null(uint64_t *ns, uint64_t *ops);
int b_read_zero(uint64_t *ns, uint64_t *ops);
int b_write_zero(uint64_t *ns, uint64_t *ops);
int b_open_close(uint64_t *ns, uint64_t *ops);
int b_stat(uint64_t *ns, uint64_t *ops);
int b_pipe_pingpong(uint64_t *ns, uint64_t *ops);
int b_unix_pingpong(uint64_t *ns, uint64_t *ops);
int b_futex_pingpong(uint64_t *ns, uint64_t *ops);
int b_component_invoke(uint64_t *ns, uint64_t *ops);
int b_component_local_call(uint64_t *ns, uint64_t *ops);
int b_component_merged_call(uint64_t *ns, uint64_t *ops);
int b_component_merge(uint64_t *ns, uint64_t *ops);
int b_component_split(uint64_t *ns, uint64_t *ops);
int b_component_reboot(uint64_t *ns, uint64_t *ops);
int b_epoll_wait(uint64_t *ns, uint64_t *ops);
int b_epoll_pingpong(uint64_t *ns, uint64_t *ops);
int b_signal(uint64_t *ns, uint64_t *ops);
int b_tmpfs_file(uint64_t *ns, uint64_t *ops);
int b_getdents(uint64_t *ns, uint64_t *ops);
int b_parallel(uint64_t *ns, uint64_t *ops);
int b_openat_deep(uint64_t *ns, uint64_t *ops);
int b_poll_100(uint64_t *ns, uint64_t *ops);
int b_select_100(uint64_t *ns, uint64_t *ops);

/* bench_mem.c */
int b_page_fault(uint64_t *ns, uint64_t *ops);
int b_mmap_munmap(uint64_t *ns, uint64_t *ops);
int b_cow_fault(uint64_t *ns, uint64_t *ops);
int b_fork_exit(uint64_t *ns, uint64_t *ops);
int b_fork_exec(uint64_t *ns, uint64_t *ops);
int b_sh_true(uint64_t *ns, uint64_t *ops);
int b_pipe_bw(uint64_t *ns, uint64_t *ops);
int b_unix_bw(uint64_t *ns, uint64_t *ops);
int b_memcpy_bw(uint64_t *ns, uint64_t *ops);
int b_file_fault(uint64_t *ns, uint64_t *ops);
int b_madv_refault(uint64_t *ns, uint64_t *ops);
int b_brk_grow(uint64_t *ns, uint64_t *ops);
int b_thread_clone(uint64_t *ns, uint64_t *ops);
int b_exec_busybox(uint64_t *ns, uint64_t *ops);

/* bench_vdso.c */
int b_vdso_clock_gettime(uint64_t *ns, uint64_t *ops);
int b_vdso_gettimeofday(uint64_t *ns, uint64_t *ops);
int b_vdso_getcpu(uint64_t *ns, uint64_t *ops);

#endif
