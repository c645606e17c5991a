/*
 * Prints the sizes and field offsets of the x86_64 Linux ABI structs, and
 * the values of selected constants, as "name value" lines. tests/layout.rs
 * compiles this twice and compares the output with the linux-abi crate:
 *   - default: against the kernel UAPI headers (<asm/...>, <linux/...>);
 *   - with -DLIBC: against glibc's view (ucontext_t gregs, dirent64, stat).
 * The two sets of headers cannot be mixed in one translation unit.
 */
#ifdef LIBC
#define _GNU_SOURCE /* REG_* names, struct dirent64 */
#endif
#include <stddef.h>
#include <stdio.h>

#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))

#ifndef LIBC
#include <asm/signal.h>
#include <linux/signal.h>
#include <linux/mman.h>
#include <asm/siginfo.h>
#include <asm/sigcontext.h>
#include <asm/ucontext.h>
#include <asm/stat.h>
#include <asm/statfs.h>
#include <asm/termbits.h>
#include <asm/ioctls.h>
#include <asm/poll.h>
#include <asm/mman.h>
#include <asm/prctl.h>
#include <asm/auxvec.h>
#include <linux/auxvec.h>
#include <linux/time_types.h>
#include <linux/time.h>
#include <linux/resource.h>
#include <linux/utsname.h>
#include <linux/sysinfo.h>
#include <linux/uio.h>
#include <linux/stat.h>
#include <linux/fcntl.h>
#include <linux/sched.h>
#ifndef LIBC
#include <linux/sched/types.h>
#endif
#include <linux/wait.h>
#include <linux/futex.h>
#include <linux/timex.h>
#include <linux/random.h>
#include <linux/prctl.h>
#include <linux/mount.h>
#include <linux/fs.h>
#include <linux/close_range.h>
#include <linux/eventpoll.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <linux/signalfd.h>
#include <linux/inotify.h>
#include <linux/timerfd.h>

int main(void)
{
    SZ("timespec", struct __kernel_timespec);
    SZ("futex_waitv", struct futex_waitv);
    SZ("timex", struct timex);
    OFF("timex.offset", struct timex, offset); OFF("timex.freq", struct timex, freq);
    OFF("timex.maxerror", struct timex, maxerror); OFF("timex.esterror", struct timex, esterror);
    OFF("timex.status", struct timex, status); OFF("timex.constant", struct timex, constant);
    OFF("timex.precision", struct timex, precision); OFF("timex.tolerance", struct timex, tolerance);
    OFF("timex.time", struct timex, time); OFF("timex.tick", struct timex, tick);
    OFF("timex.ppsfreq", struct timex, ppsfreq); OFF("timex.shift", struct timex, shift);
    OFF("timex.stbcnt", struct timex, stbcnt); OFF("timex.tai", struct timex, tai);
    OFF("futex_waitv.uaddr", struct futex_waitv, uaddr);
    OFF("futex_waitv.flags", struct futex_waitv, flags);
    OFF("futex_waitv.__reserved", struct futex_waitv, __reserved);
    SZ("timeval", struct __kernel_old_timeval);
    SZ("itimerval", struct __kernel_itimerspec);
    SZ("rusage", struct rusage);
    OFF("rusage.ru_stime", struct rusage, ru_stime);
    OFF("rusage.ru_maxrss", struct rusage, ru_maxrss);
    OFF("rusage.ru_minflt", struct rusage, ru_minflt);
    OFF("rusage.ru_nivcsw", struct rusage, ru_nivcsw);
    SZ("rlimit", struct rlimit);
    SZ("utsname", struct new_utsname);
    OFF("utsname.release", struct new_utsname, release);
    OFF("utsname.domainname", struct new_utsname, domainname);

    SZ("sigaction", struct sigaction);
    OFF("sigaction.handler", struct sigaction, sa_handler);
    OFF("sigaction.flags", struct sigaction, sa_flags);
    OFF("sigaction.restorer", struct sigaction, sa_restorer);
    OFF("sigaction.mask", struct sigaction, sa_mask);
    SZ("stack", stack_t);
    OFF("stack.ss_sp", stack_t, ss_sp);
    OFF("stack.ss_flags", stack_t, ss_flags);
    OFF("stack.ss_size", stack_t, ss_size);

    SZ("siginfo", siginfo_t);
    OFF("siginfo.si_signo", siginfo_t, si_signo);
    OFF("siginfo.si_errno", siginfo_t, si_errno);
    OFF("siginfo.si_code", siginfo_t, si_code);
    OFF("siginfo.si_pid", siginfo_t, si_pid);
    OFF("siginfo.si_uid", siginfo_t, si_uid);
    OFF("siginfo.si_value", siginfo_t, si_value);
    OFF("siginfo.si_status", siginfo_t, si_status);
    OFF("siginfo.si_utime", siginfo_t, si_utime);
    OFF("siginfo.si_stime", siginfo_t, si_stime);
    OFF("siginfo.si_addr", siginfo_t, si_addr);
    OFF("siginfo.si_tid", siginfo_t, si_tid);
    OFF("siginfo.si_overrun", siginfo_t, si_overrun);
    OFF("siginfo.si_band", siginfo_t, si_band);
    OFF("siginfo.si_fd", siginfo_t, si_fd);
    OFF("siginfo.si_call_addr", siginfo_t, si_call_addr);
    OFF("siginfo.si_syscall", siginfo_t, si_syscall);
    OFF("siginfo.si_arch", siginfo_t, si_arch);

    SZ("sigcontext", struct sigcontext);
    OFF("sigcontext.r8", struct sigcontext, r8);
    OFF("sigcontext.r15", struct sigcontext, r15);
    OFF("sigcontext.rdi", struct sigcontext, rdi);
    OFF("sigcontext.rsi", struct sigcontext, rsi);
    OFF("sigcontext.rbp", struct sigcontext, rbp);
    OFF("sigcontext.rbx", struct sigcontext, rbx);
    OFF("sigcontext.rdx", struct sigcontext, rdx);
    OFF("sigcontext.rax", struct sigcontext, rax);
    OFF("sigcontext.rcx", struct sigcontext, rcx);
    OFF("sigcontext.rsp", struct sigcontext, rsp);
    OFF("sigcontext.rip", struct sigcontext, rip);
    OFF("sigcontext.eflags", struct sigcontext, eflags);
    OFF("sigcontext.cs", struct sigcontext, cs);
    OFF("sigcontext.gs", struct sigcontext, gs);
    OFF("sigcontext.fs", struct sigcontext, fs);
    OFF("sigcontext.ss", struct sigcontext, ss);
    OFF("sigcontext.err", struct sigcontext, err);
    OFF("sigcontext.trapno", struct sigcontext, trapno);
    OFF("sigcontext.oldmask", struct sigcontext, oldmask);
    OFF("sigcontext.cr2", struct sigcontext, cr2);
    OFF("sigcontext.fpstate", struct sigcontext, fpstate);
    SZ("fpstate", struct _fpstate_64);
    SZ("ucontext", struct ucontext);
    OFF("ucontext.uc_flags", struct ucontext, uc_flags);
    OFF("ucontext.uc_link", struct ucontext, uc_link);
    OFF("ucontext.uc_stack", struct ucontext, uc_stack);
    OFF("ucontext.uc_mcontext", struct ucontext, uc_mcontext);
    OFF("ucontext.uc_sigmask", struct ucontext, uc_sigmask);

    SZ("stat", struct stat);
    OFF("stat.st_dev", struct stat, st_dev);
    OFF("stat.st_ino", struct stat, st_ino);
    OFF("stat.st_nlink", struct stat, st_nlink);
    OFF("stat.st_mode", struct stat, st_mode);
    OFF("stat.st_uid", struct stat, st_uid);
    OFF("stat.st_gid", struct stat, st_gid);
    OFF("stat.st_rdev", struct stat, st_rdev);
    OFF("stat.st_size", struct stat, st_size);
    OFF("stat.st_blksize", struct stat, st_blksize);
    OFF("stat.st_blocks", struct stat, st_blocks);
    OFF("stat.st_atime", struct stat, st_atime);
    OFF("stat.st_atime_nsec", struct stat, st_atime_nsec);
    OFF("stat.st_mtime", struct stat, st_mtime);
    OFF("stat.st_mtime_nsec", struct stat, st_mtime_nsec);
    OFF("stat.st_ctime", struct stat, st_ctime);
    OFF("stat.st_ctime_nsec", struct stat, st_ctime_nsec);

    SZ("statx", struct statx);
    OFF("statx.stx_mask", struct statx, stx_mask);
    OFF("statx.stx_blksize", struct statx, stx_blksize);
    OFF("statx.stx_attributes", struct statx, stx_attributes);
    OFF("statx.stx_nlink", struct statx, stx_nlink);
    OFF("statx.stx_uid", struct statx, stx_uid);
    OFF("statx.stx_gid", struct statx, stx_gid);
    OFF("statx.stx_mode", struct statx, stx_mode);
    OFF("statx.stx_ino", struct statx, stx_ino);
    OFF("statx.stx_size", struct statx, stx_size);
    OFF("statx.stx_blocks", struct statx, stx_blocks);
    OFF("statx.stx_attributes_mask", struct statx, stx_attributes_mask);
    OFF("statx.stx_atime", struct statx, stx_atime);
    OFF("statx.stx_btime", struct statx, stx_btime);
    OFF("statx.stx_ctime", struct statx, stx_ctime);
    OFF("statx.stx_mtime", struct statx, stx_mtime);
    OFF("statx.stx_atime.tv_nsec", struct statx, stx_atime.tv_nsec);
    OFF("statx.stx_rdev_major", struct statx, stx_rdev_major);
    OFF("statx.stx_rdev_minor", struct statx, stx_rdev_minor);
    OFF("statx.stx_dev_major", struct statx, stx_dev_major);
    OFF("statx.stx_dev_minor", struct statx, stx_dev_minor);
    OFF("statx.stx_mnt_id", struct statx, stx_mnt_id);
    OFF("statx.stx_dio_mem_align", struct statx, stx_dio_mem_align);
    OFF("statx.stx_dio_offset_align", struct statx, stx_dio_offset_align);

    SZ("statfs", struct statfs);
    OFF("statfs.f_type", struct statfs, f_type);
    OFF("statfs.f_bsize", struct statfs, f_bsize);
    OFF("statfs.f_blocks", struct statfs, f_blocks);
    OFF("statfs.f_bfree", struct statfs, f_bfree);
    OFF("statfs.f_bavail", struct statfs, f_bavail);
    OFF("statfs.f_files", struct statfs, f_files);
    OFF("statfs.f_ffree", struct statfs, f_ffree);
    OFF("statfs.f_fsid", struct statfs, f_fsid);
    OFF("statfs.f_namelen", struct statfs, f_namelen);
    OFF("statfs.f_frsize", struct statfs, f_frsize);
    OFF("statfs.f_flags", struct statfs, f_flags);

    SZ("sysinfo", struct sysinfo);
    OFF("sysinfo.uptime", struct sysinfo, uptime);
    OFF("sysinfo.loads", struct sysinfo, loads);
    OFF("sysinfo.totalram", struct sysinfo, totalram);
    OFF("sysinfo.freeram", struct sysinfo, freeram);
    OFF("sysinfo.sharedram", struct sysinfo, sharedram);
    OFF("sysinfo.bufferram", struct sysinfo, bufferram);
    OFF("sysinfo.totalswap", struct sysinfo, totalswap);
    OFF("sysinfo.freeswap", struct sysinfo, freeswap);
    OFF("sysinfo.procs", struct sysinfo, procs);
    OFF("sysinfo.totalhigh", struct sysinfo, totalhigh);
    OFF("sysinfo.freehigh", struct sysinfo, freehigh);
    OFF("sysinfo.mem_unit", struct sysinfo, mem_unit);

    SZ("iovec", struct iovec);
    OFF("iovec.iov_len", struct iovec, iov_len);
    SZ("termios", struct termios);
    OFF("termios.c_iflag", struct termios, c_iflag);
    OFF("termios.c_oflag", struct termios, c_oflag);
    OFF("termios.c_cflag", struct termios, c_cflag);
    OFF("termios.c_lflag", struct termios, c_lflag);
    OFF("termios.c_line", struct termios, c_line);
    OFF("termios.c_cc", struct termios, c_cc);
    SZ("flock", struct flock);
    OFF("flock.l_type", struct flock, l_type);
    OFF("flock.l_whence", struct flock, l_whence);
    OFF("flock.l_start", struct flock, l_start);
    OFF("flock.l_len", struct flock, l_len);
    OFF("flock.l_pid", struct flock, l_pid);
    SZ("epoll_event", struct epoll_event);
    OFF("epoll_event.data", struct epoll_event, data);
    SZ("itimerspec", struct __kernel_itimerspec);
    OFF("itimerspec.it_value", struct __kernel_itimerspec, it_value);
    SZ("signalfd_siginfo", struct signalfd_siginfo);
    OFF("signalfd_siginfo.ssi_signo", struct signalfd_siginfo, ssi_signo);
    OFF("signalfd_siginfo.ssi_errno", struct signalfd_siginfo, ssi_errno);
    OFF("signalfd_siginfo.ssi_code", struct signalfd_siginfo, ssi_code);
    OFF("signalfd_siginfo.ssi_pid", struct signalfd_siginfo, ssi_pid);
    OFF("signalfd_siginfo.ssi_uid", struct signalfd_siginfo, ssi_uid);
    OFF("signalfd_siginfo.ssi_fd", struct signalfd_siginfo, ssi_fd);
    OFF("signalfd_siginfo.ssi_tid", struct signalfd_siginfo, ssi_tid);
    OFF("signalfd_siginfo.ssi_band", struct signalfd_siginfo, ssi_band);
    OFF("signalfd_siginfo.ssi_overrun", struct signalfd_siginfo, ssi_overrun);
    OFF("signalfd_siginfo.ssi_trapno", struct signalfd_siginfo, ssi_trapno);
    OFF("signalfd_siginfo.ssi_status", struct signalfd_siginfo, ssi_status);
    OFF("signalfd_siginfo.ssi_int", struct signalfd_siginfo, ssi_int);
    OFF("signalfd_siginfo.ssi_ptr", struct signalfd_siginfo, ssi_ptr);
    OFF("signalfd_siginfo.ssi_utime", struct signalfd_siginfo, ssi_utime);
    OFF("signalfd_siginfo.ssi_stime", struct signalfd_siginfo, ssi_stime);
    OFF("signalfd_siginfo.ssi_addr", struct signalfd_siginfo, ssi_addr);
    OFF("signalfd_siginfo.ssi_addr_lsb", struct signalfd_siginfo, ssi_addr_lsb);
    OFF("signalfd_siginfo.ssi_syscall", struct signalfd_siginfo, ssi_syscall);
    OFF("signalfd_siginfo.ssi_call_addr", struct signalfd_siginfo, ssi_call_addr);
    OFF("signalfd_siginfo.ssi_arch", struct signalfd_siginfo, ssi_arch);
    SZ("inotify_event", struct inotify_event);
    OFF("inotify_event.wd", struct inotify_event, wd);
    OFF("inotify_event.mask", struct inotify_event, mask);
    OFF("inotify_event.cookie", struct inotify_event, cookie);
    OFF("inotify_event.len", struct inotify_event, len);
    OFF("inotify_event.name", struct inotify_event, name);
    SZ("clone_args", struct clone_args);
    OFF("clone_args.exit_signal", struct clone_args, exit_signal);
    OFF("clone_args.tls", struct clone_args, tls);
    OFF("clone_args.set_tid", struct clone_args, set_tid);
    OFF("clone_args.cgroup", struct clone_args, cgroup);
    SZ("sched_attr", struct sched_attr);
    OFF("sched_attr.sched_flags", struct sched_attr, sched_flags);
    OFF("sched_attr.sched_nice", struct sched_attr, sched_nice);
    OFF("sched_attr.sched_priority", struct sched_attr, sched_priority);
    OFF("sched_attr.sched_period", struct sched_attr, sched_period);
    OFF("sched_attr.sched_util_max", struct sched_attr, sched_util_max);
    VAL(SCHED_FLAG_RESET_ON_FORK); VAL(SCHED_FLAG_KEEP_POLICY); VAL(SCHED_FLAG_KEEP_PARAMS);
    VAL(SCHED_FLAG_UTIL_CLAMP); VAL(SCHED_FLAG_ALL);

    /* Constants. */
    VAL(SA_NOCLDSTOP); VAL(SA_NOCLDWAIT); VAL(SA_SIGINFO); VAL(SA_ONSTACK);
    VAL(SA_RESTART); VAL(SA_NODEFER); VAL(SA_RESETHAND); VAL(SA_RESTORER);
    VAL(SIG_BLOCK); VAL(SIG_UNBLOCK); VAL(SIG_SETMASK);
    VAL(SS_ONSTACK); VAL(SS_DISABLE); VAL(MINSIGSTKSZ); VAL(SIGSTKSZ);
    VAL(SIGHUP); VAL(SIGSTKFLT); VAL(SIGCHLD); VAL(SIGSTOP); VAL(SIGTSTP); VAL(SIGSYS); VAL(SIGRTMIN);
    VAL(SI_USER); VAL(SI_KERNEL); VAL(SI_QUEUE); VAL(SI_TIMER); VAL(SI_TKILL);
    VAL(ILL_ILLOPN); VAL(FPE_INTDIV); VAL(SEGV_MAPERR); VAL(SEGV_ACCERR); VAL(BUS_ADRERR);
    VAL(TRAP_BRKPT); VAL(CLD_EXITED); VAL(CLD_KILLED); VAL(CLD_DUMPED); VAL(CLD_STOPPED);
    VAL(CLD_CONTINUED); VAL(POLL_IN);
    VAL(UC_FP_XSTATE); VAL(UC_SIGCONTEXT_SS); VAL(UC_STRICT_RESTORE_SS);
    VAL(PROT_READ); VAL(PROT_WRITE); VAL(PROT_EXEC); VAL(PROT_GROWSDOWN);
    VAL(MAP_SHARED); VAL(MAP_PRIVATE); VAL(MAP_FIXED); VAL(MAP_ANONYMOUS);
    VAL(MAP_NORESERVE); VAL(MAP_GROWSDOWN); VAL(MAP_STACK); VAL(MAP_POPULATE);
    VAL(MAP_FIXED_NOREPLACE); VAL(MAP_32BIT); VAL(MAP_LOCKED); VAL(MAP_HUGETLB);
    VAL(MADV_DONTNEED); VAL(MADV_FREE); VAL(MADV_HUGEPAGE); VAL(MADV_COLLAPSE);
    VAL(MREMAP_MAYMOVE); VAL(MREMAP_FIXED);
    VAL(CSIGNAL); VAL(CLONE_VM); VAL(CLONE_FS); VAL(CLONE_FILES); VAL(CLONE_SIGHAND);
    VAL(CLONE_PIDFD); VAL(CLONE_PTRACE); VAL(CLONE_VFORK); VAL(CLONE_PARENT);
    VAL(CLONE_THREAD); VAL(CLONE_NEWNS); VAL(CLONE_SYSVSEM); VAL(CLONE_SETTLS);
    VAL(CLONE_PARENT_SETTID); VAL(CLONE_CHILD_CLEARTID); VAL(CLONE_DETACHED);
    VAL(CLONE_UNTRACED); VAL(CLONE_CHILD_SETTID); VAL(CLONE_NEWPID); VAL(CLONE_IO);
    VAL(CLONE_CLEAR_SIGHAND); VAL(CLONE_INTO_CGROUP); VAL(CLONE_NEWTIME);
    VAL(WNOHANG); VAL(WUNTRACED); VAL(WEXITED); VAL(WCONTINUED); VAL(WNOWAIT);
    VAL(__WALL); VAL(__WCLONE); VAL(__WNOTHREAD); VAL(P_ALL); VAL(P_PID); VAL(P_PGID); VAL(P_PIDFD);
    VAL(FUTEX_WAIT); VAL(FUTEX_WAKE); VAL(FUTEX_WAIT_BITSET); VAL(FUTEX_WAKE_BITSET);
    VAL(FUTEX_PRIVATE_FLAG); VAL(FUTEX_CLOCK_REALTIME); VAL(FUTEX_BITSET_MATCH_ANY);
    VAL(FUTEX_LOCK_PI2); VAL(FUTEX_WAITERS); VAL(FUTEX_TID_MASK); VAL(FUTEX_32); VAL(FUTEX_WAITV_MAX);
    VAL(ADJ_OFFSET); VAL(ADJ_FREQUENCY); VAL(ADJ_MAXERROR); VAL(ADJ_ESTERROR); VAL(ADJ_STATUS);
    VAL(ADJ_TIMECONST); VAL(ADJ_TAI); VAL(ADJ_SETOFFSET); VAL(ADJ_MICRO); VAL(ADJ_NANO); VAL(ADJ_TICK);
    VAL(ADJ_OFFSET_SINGLESHOT); VAL(ADJ_OFFSET_SS_READ); VAL(STA_PLL); VAL(STA_UNSYNC);
    VAL(STA_CLOCKERR); VAL(STA_NANO); VAL(STA_RONLY); VAL(TIME_OK); VAL(TIME_ERROR);
    VAL(CLOCK_REALTIME); VAL(CLOCK_MONOTONIC); VAL(CLOCK_BOOTTIME); VAL(CLOCK_TAI);
    VAL(TIMER_ABSTIME); VAL(ITIMER_REAL); VAL(ITIMER_VIRTUAL); VAL(ITIMER_PROF);
    VAL(RLIMIT_CPU); VAL(RLIMIT_STACK); VAL(RLIMIT_NOFILE); VAL(RLIMIT_AS);
    VAL(RLIMIT_RTTIME); VAL(RLIM_NLIMITS);
    VAL(ARCH_SET_FS); VAL(ARCH_GET_FS); VAL(ARCH_SET_GS); VAL(ARCH_GET_GS);
    VAL(AT_NULL); VAL(AT_PHDR); VAL(AT_PHENT); VAL(AT_PHNUM); VAL(AT_PAGESZ); VAL(AT_BASE);
    VAL(AT_FLAGS); VAL(AT_ENTRY); VAL(AT_UID); VAL(AT_EUID); VAL(AT_GID); VAL(AT_EGID);
    VAL(AT_PLATFORM); VAL(AT_HWCAP); VAL(AT_CLKTCK); VAL(AT_SECURE); VAL(AT_RANDOM);
    VAL(AT_HWCAP2); VAL(AT_EXECFN); VAL(AT_SYSINFO_EHDR); VAL(AT_MINSIGSTKSZ);
    VAL(O_RDONLY); VAL(O_WRONLY); VAL(O_RDWR); VAL(O_CREAT); VAL(O_EXCL); VAL(O_NOCTTY);
    VAL(O_TRUNC); VAL(O_APPEND); VAL(O_NONBLOCK); VAL(O_DSYNC); VAL(O_DIRECTORY);
    VAL(O_NOFOLLOW); VAL(O_CLOEXEC); VAL(O_PATH); VAL(O_TMPFILE); VAL(O_SYNC);
    VAL(O_LARGEFILE); VAL(O_DIRECT); VAL(O_NOATIME);
    VAL(AT_FDCWD); VAL(AT_SYMLINK_NOFOLLOW); VAL(AT_REMOVEDIR); VAL(AT_EMPTY_PATH);
    VAL(AT_SYMLINK_FOLLOW); VAL(AT_EACCESS); VAL(AT_NO_AUTOMOUNT); VAL(AT_RECURSIVE);
    VAL(F_DUPFD); VAL(F_GETFD); VAL(F_SETFD); VAL(F_GETFL); VAL(F_SETFL); VAL(F_GETLK);
    VAL(F_SETLK); VAL(F_SETLKW); VAL(F_DUPFD_CLOEXEC); VAL(FD_CLOEXEC); VAL(F_OFD_GETLK);
    VAL(F_SETPIPE_SZ); VAL(F_GETPIPE_SZ); VAL(F_ADD_SEALS); VAL(F_GET_SEALS);
    VAL(F_RDLCK); VAL(F_WRLCK); VAL(F_UNLCK);
    VAL(SEEK_SET); VAL(SEEK_CUR); VAL(SEEK_END); VAL(SEEK_DATA); VAL(SEEK_HOLE);
    VAL(TCGETS); VAL(TCSETS); VAL(TCSETSW); VAL(TCSETSF); VAL(TIOCGPGRP); VAL(TIOCSPGRP);
    VAL(TIOCGWINSZ); VAL(TIOCSWINSZ); VAL(FIONREAD); VAL(FIONBIO); VAL(TIOCSCTTY);
    VAL(TIOCNOTTY); VAL(TIOCGSID); VAL(TIOCGPTN); VAL(TIOCSPTLCK); VAL(FIOCLEX);
    VAL(TIOCGPTPEER); VAL(TIOCGPKT); VAL(TIOCGPTLCK); VAL(TIOCPKT); VAL(TIOCSIG);
    VAL(FIONCLEX); VAL(FIOASYNC); VAL(FIOQSIZE); VAL(TCFLSH); VAL(TCSBRK); VAL(TIOCOUTQ);
    VAL(BLKROGET); VAL(BLKGETSIZE); VAL(BLKFLSBUF); VAL(BLKSSZGET); VAL(BLKDISCARD);
    VAL(BLKPBSZGET); VAL(BLKGETSIZE64);
    VAL(NCCS); VAL(VINTR); VAL(VQUIT); VAL(VERASE); VAL(VKILL); VAL(VEOF); VAL(VTIME);
    VAL(VMIN); VAL(VSTART); VAL(VSTOP); VAL(VSUSP); VAL(VEOL); VAL(VREPRINT);
    VAL(VWERASE); VAL(VLNEXT); VAL(VEOL2);
    VAL(ICRNL); VAL(INLCR); VAL(IGNCR); VAL(IXON); VAL(IXOFF); VAL(IUTF8); VAL(BRKINT);
    VAL(ISTRIP); VAL(OPOST); VAL(ONLCR); VAL(OCRNL); VAL(TABDLY);
    VAL(CBAUD); VAL(B38400); VAL(B9600); VAL(B115200); VAL(CSIZE); VAL(CS8);
    VAL(CREAD); VAL(HUPCL); VAL(CLOCAL); VAL(PARENB); VAL(CRTSCTS);
    VAL(ISIG); VAL(ICANON); VAL(ECHO); VAL(ECHOE); VAL(ECHOK); VAL(ECHONL); VAL(NOFLSH);
    VAL(TOSTOP); VAL(ECHOCTL); VAL(ECHOKE); VAL(IEXTEN);
    VAL(TCSANOW); VAL(TCSADRAIN); VAL(TCSAFLUSH); VAL(TCIFLUSH); VAL(TCOFLUSH); VAL(TCIOFLUSH);
    VAL(POLLIN); VAL(POLLPRI); VAL(POLLOUT); VAL(POLLERR); VAL(POLLHUP); VAL(POLLNVAL);
    VAL(POLLRDNORM); VAL(POLLWRNORM); VAL(POLLRDHUP);
    VAL(EPOLL_CLOEXEC); VAL(EPOLL_CTL_ADD); VAL(EPOLL_CTL_DEL); VAL(EPOLL_CTL_MOD);
    VAL(EPOLLIN); VAL(EPOLLPRI); VAL(EPOLLOUT); VAL(EPOLLERR); VAL(EPOLLHUP); VAL(EPOLLNVAL);
    VAL(EPOLLRDNORM); VAL(EPOLLRDBAND); VAL(EPOLLWRNORM); VAL(EPOLLWRBAND); VAL(EPOLLMSG);
    VAL(EPOLLRDHUP); VAL(EPOLLEXCLUSIVE); VAL(EPOLLWAKEUP); VAL(EPOLLONESHOT); VAL(EPOLLET);
    VAL(TFD_TIMER_ABSTIME); VAL(TFD_TIMER_CANCEL_ON_SET); VAL(TFD_CLOEXEC); VAL(TFD_NONBLOCK);
    VAL(TFD_IOC_SET_TICKS); VAL(SFD_CLOEXEC); VAL(SFD_NONBLOCK);
    VAL(IN_CLOEXEC); VAL(IN_NONBLOCK); VAL(IN_ACCESS); VAL(IN_MODIFY); VAL(IN_ATTRIB);
    VAL(IN_CLOSE_WRITE); VAL(IN_CLOSE_NOWRITE); VAL(IN_OPEN); VAL(IN_MOVED_FROM);
    VAL(IN_MOVED_TO); VAL(IN_CREATE); VAL(IN_DELETE); VAL(IN_DELETE_SELF); VAL(IN_MOVE_SELF);
    VAL(IN_ALL_EVENTS); VAL(IN_UNMOUNT); VAL(IN_Q_OVERFLOW); VAL(IN_IGNORED); VAL(IN_ONLYDIR);
    VAL(IN_DONT_FOLLOW); VAL(IN_EXCL_UNLINK); VAL(IN_MASK_CREATE); VAL(IN_MASK_ADD);
    VAL(IN_ISDIR); VAL(IN_ONESHOT);
    VAL(GRND_NONBLOCK); VAL(GRND_RANDOM); VAL(GRND_INSECURE);
    VAL(PR_SET_NAME); VAL(PR_GET_NAME); VAL(PR_SET_CHILD_SUBREAPER);
    VAL(PR_GET_CHILD_SUBREAPER); VAL(PR_SET_PDEATHSIG); VAL(PR_SET_NO_NEW_PRIVS);
    VAL(PR_SET_DUMPABLE);
    VAL(SCHED_NORMAL); VAL(SCHED_FIFO); VAL(SCHED_RR); VAL(SCHED_BATCH); VAL(SCHED_IDLE);
    VAL(SCHED_RESET_ON_FORK);
    VAL(MS_RDONLY); VAL(MS_NOSUID); VAL(MS_NODEV); VAL(MS_NOEXEC); VAL(MS_REMOUNT);
    VAL(MS_BIND); VAL(MS_MOVE); VAL(MS_REC); VAL(MS_PRIVATE); VAL(MS_SHARED);
    VAL(MS_RELATIME); VAL(MS_LAZYTIME);
    VAL(RENAME_NOREPLACE); VAL(RENAME_EXCHANGE); VAL(RENAME_WHITEOUT);
    VAL(CLOSE_RANGE_UNSHARE); VAL(CLOSE_RANGE_CLOEXEC);
    VAL(STATX_TYPE); VAL(STATX_MODE); VAL(STATX_INO); VAL(STATX_SIZE);
    VAL(STATX_BASIC_STATS); VAL(STATX_BTIME); VAL(STATX_MNT_ID); VAL(STATX_ATTR_IMMUTABLE);
    VAL(AT_STATX_SYNC_AS_STAT); VAL(AT_STATX_FORCE_SYNC); VAL(AT_STATX_DONT_SYNC);
    VAL(PR_SET_SYSCALL_USER_DISPATCH); VAL(PR_SYS_DISPATCH_OFF); VAL(PR_SYS_DISPATCH_ON);
    VAL(SYSCALL_DISPATCH_FILTER_ALLOW); VAL(SYSCALL_DISPATCH_FILTER_BLOCK);
    VAL(AUDIT_ARCH_X86_64); VAL(SYS_SECCOMP); VAL(SYS_USER_DISPATCH);
    VAL(CAP_CHOWN); VAL(CAP_DAC_OVERRIDE); VAL(CAP_DAC_READ_SEARCH); VAL(CAP_FOWNER);
    VAL(CAP_FSETID); VAL(CAP_KILL); VAL(CAP_SETGID); VAL(CAP_SETUID); VAL(CAP_SETPCAP);
    VAL(CAP_LINUX_IMMUTABLE); VAL(CAP_NET_BIND_SERVICE); VAL(CAP_NET_BROADCAST);
    VAL(CAP_NET_ADMIN); VAL(CAP_NET_RAW); VAL(CAP_IPC_LOCK); VAL(CAP_IPC_OWNER);
    VAL(CAP_SYS_MODULE); VAL(CAP_SYS_RAWIO); VAL(CAP_SYS_CHROOT); VAL(CAP_SYS_PTRACE);
    VAL(CAP_SYS_PACCT); VAL(CAP_SYS_ADMIN); VAL(CAP_SYS_BOOT); VAL(CAP_SYS_NICE);
    VAL(CAP_SYS_RESOURCE); VAL(CAP_SYS_TIME); VAL(CAP_SYS_TTY_CONFIG); VAL(CAP_MKNOD);
    VAL(CAP_LEASE); VAL(CAP_AUDIT_WRITE); VAL(CAP_AUDIT_CONTROL); VAL(CAP_SETFCAP);
    VAL(CAP_MAC_OVERRIDE); VAL(CAP_MAC_ADMIN); VAL(CAP_SYSLOG); VAL(CAP_WAKE_ALARM);
    VAL(CAP_BLOCK_SUSPEND); VAL(CAP_AUDIT_READ); VAL(CAP_PERFMON); VAL(CAP_BPF);
    VAL(CAP_CHECKPOINT_RESTORE); VAL(CAP_LAST_CAP);
    printf("LINUX_CAPABILITY_VERSION_1 %lld\n", (long long)_LINUX_CAPABILITY_VERSION_1);
    printf("LINUX_CAPABILITY_VERSION_2 %lld\n", (long long)_LINUX_CAPABILITY_VERSION_2);
    printf("LINUX_CAPABILITY_VERSION_3 %lld\n", (long long)_LINUX_CAPABILITY_VERSION_3);
    printf("LINUX_CAPABILITY_U32S_1 %lld\n", (long long)_LINUX_CAPABILITY_U32S_1);
    printf("LINUX_CAPABILITY_U32S_2 %lld\n", (long long)_LINUX_CAPABILITY_U32S_2);
    printf("LINUX_CAPABILITY_U32S_3 %lld\n", (long long)_LINUX_CAPABILITY_U32S_3);
    SZ("cap_header", struct __user_cap_header_struct);
    OFF("cap_header.pid", struct __user_cap_header_struct, pid);
    SZ("cap_data", struct __user_cap_data_struct);
    OFF("cap_data.permitted", struct __user_cap_data_struct, permitted);
    OFF("cap_data.inheritable", struct __user_cap_data_struct, inheritable);
    VAL(PR_GET_DUMPABLE); VAL(PR_GET_KEEPCAPS); VAL(PR_SET_KEEPCAPS); VAL(PR_CAPBSET_READ);
    VAL(PR_CAPBSET_DROP); VAL(PR_GET_SECUREBITS); VAL(PR_SET_SECUREBITS); VAL(PR_GET_NO_NEW_PRIVS);
    VAL(PR_CAP_AMBIENT); VAL(PR_CAP_AMBIENT_IS_SET); VAL(PR_CAP_AMBIENT_RAISE);
    VAL(PR_CAP_AMBIENT_LOWER); VAL(PR_CAP_AMBIENT_CLEAR_ALL);
    VAL(SECURE_NOROOT); VAL(SECURE_NOROOT_LOCKED); VAL(SECURE_NO_SETUID_FIXUP);
    VAL(SECURE_NO_SETUID_FIXUP_LOCKED); VAL(SECURE_KEEP_CAPS); VAL(SECURE_KEEP_CAPS_LOCKED);
    VAL(SECURE_NO_CAP_AMBIENT_RAISE); VAL(SECURE_NO_CAP_AMBIENT_RAISE_LOCKED);
    VAL(SECURE_ALL_BITS); VAL(SECURE_ALL_LOCKS);
    return 0;
}

#else /* LIBC */
#include <signal.h>
#include <ucontext.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/times.h>
#include <sys/utsname.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/eventfd.h>

int main(void)
{
    SZ("sockaddr_un", struct sockaddr_un);
    OFF("sockaddr_un.sun_path", struct sockaddr_un, sun_path);
    SZ("msghdr", struct msghdr);
    OFF("msghdr.msg_namelen", struct msghdr, msg_namelen);
    OFF("msghdr.msg_iov", struct msghdr, msg_iov);
    OFF("msghdr.msg_iovlen", struct msghdr, msg_iovlen);
    OFF("msghdr.msg_control", struct msghdr, msg_control);
    OFF("msghdr.msg_controllen", struct msghdr, msg_controllen);
    OFF("msghdr.msg_flags", struct msghdr, msg_flags);
    SZ("mmsghdr", struct mmsghdr);
    OFF("mmsghdr.msg_len", struct mmsghdr, msg_len);
    SZ("cmsghdr", struct cmsghdr);
    OFF("cmsghdr.cmsg_level", struct cmsghdr, cmsg_level);
    OFF("cmsghdr.cmsg_type", struct cmsghdr, cmsg_type);
    SZ("ucred", struct ucred);
    OFF("ucred.uid", struct ucred, uid);
    OFF("ucred.gid", struct ucred, gid);
    SZ("linger", struct linger);
    OFF("linger.l_linger", struct linger, l_linger);
    SZ("sockaddr_storage", struct sockaddr_storage);
    printf("cmsg_len_4 %lu\n", (unsigned long)CMSG_LEN(4));
    printf("cmsg_space_4 %lu\n", (unsigned long)CMSG_SPACE(4));
    printf("cmsg_space_12 %lu\n", (unsigned long)CMSG_SPACE(12));
    VAL(AF_UNSPEC); VAL(AF_UNIX); VAL(AF_INET); VAL(AF_INET6); VAL(AF_NETLINK); VAL(AF_PACKET);
    VAL(SOCK_STREAM); VAL(SOCK_DGRAM); VAL(SOCK_RAW); VAL(SOCK_RDM); VAL(SOCK_SEQPACKET);
    VAL(SOCK_DCCP); VAL(SOCK_PACKET); VAL(SOCK_NONBLOCK); VAL(SOCK_CLOEXEC);
    VAL(SOL_SOCKET); VAL(SO_DEBUG); VAL(SO_REUSEADDR); VAL(SO_TYPE); VAL(SO_ERROR);
    VAL(SO_DONTROUTE); VAL(SO_BROADCAST); VAL(SO_SNDBUF); VAL(SO_RCVBUF); VAL(SO_KEEPALIVE);
    VAL(SO_OOBINLINE); VAL(SO_NO_CHECK); VAL(SO_PRIORITY); VAL(SO_LINGER); VAL(SO_BSDCOMPAT);
    VAL(SO_REUSEPORT); VAL(SO_PASSCRED); VAL(SO_PEERCRED); VAL(SO_RCVLOWAT); VAL(SO_SNDLOWAT);
    VAL(SO_RCVTIMEO_OLD); VAL(SO_SNDTIMEO_OLD); VAL(SO_ACCEPTCONN); VAL(SO_SNDBUFFORCE);
    VAL(SO_RCVBUFFORCE); VAL(SO_PROTOCOL); VAL(SO_DOMAIN); VAL(SO_PEEK_OFF);
    VAL(SO_RCVTIMEO_NEW); VAL(SO_SNDTIMEO_NEW); VAL(SCM_RIGHTS); VAL(SCM_CREDENTIALS);
    VAL(MSG_OOB); VAL(MSG_PEEK); VAL(MSG_DONTROUTE); VAL(MSG_CTRUNC);
    VAL(MSG_TRUNC); VAL(MSG_DONTWAIT); VAL(MSG_EOR); VAL(MSG_WAITALL); VAL(MSG_CONFIRM);
    VAL(MSG_ERRQUEUE); VAL(MSG_NOSIGNAL); VAL(MSG_MORE); VAL(MSG_WAITFORONE); VAL(MSG_BATCH);
    VAL(MSG_ZEROCOPY); VAL(MSG_FASTOPEN); VAL(MSG_CMSG_CLOEXEC);
    VAL(SHUT_RD); VAL(SHUT_WR); VAL(SHUT_RDWR); VAL(SOMAXCONN);
    VAL(FIOSETOWN); VAL(SIOCSPGRP); VAL(FIOGETOWN); VAL(SIOCGPGRP);

    OFF("ucontext_t.uc_stack", ucontext_t, uc_stack);
    OFF("ucontext_t.uc_mcontext", ucontext_t, uc_mcontext);
    OFF("ucontext_t.uc_sigmask", ucontext_t, uc_sigmask);
    OFF("ucontext_t.fpregs", ucontext_t, uc_mcontext.fpregs);
    VAL(NGREG);
    VAL(REG_R8); VAL(REG_R9); VAL(REG_R10); VAL(REG_R11); VAL(REG_R12); VAL(REG_R13);
    VAL(REG_R14); VAL(REG_R15); VAL(REG_RDI); VAL(REG_RSI); VAL(REG_RBP); VAL(REG_RBX);
    VAL(REG_RDX); VAL(REG_RAX); VAL(REG_RCX); VAL(REG_RSP); VAL(REG_RIP); VAL(REG_EFL);
    VAL(REG_CSGSFS); VAL(REG_ERR); VAL(REG_TRAPNO); VAL(REG_OLDMASK); VAL(REG_CR2);
    SZ("libc_stat", struct stat);
    OFF("libc_stat.st_mode", struct stat, st_mode);
    OFF("libc_stat.st_rdev", struct stat, st_rdev);
    OFF("libc_stat.st_atim", struct stat, st_atim);
    OFF("dirent64.d_off", struct dirent64, d_off);
    OFF("dirent64.d_reclen", struct dirent64, d_reclen);
    OFF("dirent64.d_type", struct dirent64, d_type);
    OFF("dirent64.d_name", struct dirent64, d_name);
    SZ("tms", struct tms);
    OFF("tms.tms_cutime", struct tms, tms_cutime);
    SZ("pollfd", struct pollfd);
    OFF("pollfd.events", struct pollfd, events);
    OFF("pollfd.revents", struct pollfd, revents);
    SZ("winsize", struct winsize);
    OFF("winsize.ws_col", struct winsize, ws_col);
    OFF("winsize.ws_ypixel", struct winsize, ws_ypixel);
    /* linux/stat.h leaves these to libc, which uses the kernel values. */
    VAL(S_IFMT); VAL(S_IFSOCK); VAL(S_IFLNK); VAL(S_IFREG); VAL(S_IFBLK); VAL(S_IFDIR);
    VAL(S_IFCHR); VAL(S_IFIFO); VAL(S_ISUID); VAL(S_ISGID); VAL(S_ISVTX);
    VAL(MNT_DETACH); VAL(MNT_FORCE); VAL(MNT_EXPIRE); VAL(UMOUNT_NOFOLLOW);
    VAL(DT_UNKNOWN); VAL(DT_FIFO); VAL(DT_CHR); VAL(DT_DIR); VAL(DT_BLK); VAL(DT_REG);
    VAL(DT_LNK); VAL(DT_SOCK); VAL(DT_WHT);
    VAL(EFD_SEMAPHORE); VAL(EFD_CLOEXEC); VAL(EFD_NONBLOCK);
    printf("makedev_259_74565 %llu\n", (unsigned long long)makedev(259, 74565));
    printf("makedev_4095_4096 %llu\n", (unsigned long long)makedev(4095, 4096));
    printf("makedev_70000_3 %llu\n", (unsigned long long)makedev(70000, 3));
    return 0;
}
#endif
