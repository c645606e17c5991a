//! System calls: one declarative table from Linux x86_64 syscall numbers
//! to handlers, one file per family. Handlers validate their arguments at
//! the boundary and return `Result<u64, Errno>`; unsupported calls and
//! flags get the errno Linux would give, never a fake success.

mod acct;
mod adjtimex;
mod cred;
mod direct_io;
mod epoll;
mod eventfd;
mod exec;
mod fs_alloc;
mod fs_attr;
mod fs_io;
mod fs_mount;
mod fs_name;
mod fs_path;
mod fs_range;
mod futex;
mod ident;
mod inotify;
mod ipc;
mod kcmp;
mod lock;
mod mem;
mod membarrier;
mod memfd;
mod mqueue;
mod ns;
mod numa;
mod openat2;
mod pidfd;
mod poll;
mod process;
mod process_vm;
mod ptrace;
mod rseq;
mod rwf;
mod sched;
mod seccomp;
mod signal;
mod signalfd;
mod socket;
mod socket_msg;
mod splice;
mod syslog;
mod time;
mod timerfd;
mod xattr;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

use hal::user::UserContext;
use linux_abi::errno::Errno;
use linux_abi::nr;

use crate::mm::Vm;
use crate::proc::task::{SYSCALL_WORK_SECCOMP, SYSCALL_WORK_USER_DISPATCH};
use crate::proc::{Process, Task};

/// What a handler sees: the calling thread and its saved user registers.
pub struct SyscallContext<'a> {
    pub task: &'a Arc<Task>,
    pub uctx: &'a mut UserContext,
}

impl SyscallContext<'_> {
    pub fn process(&self) -> &Arc<Process> {
        &self.task.process
    }

    pub fn vm(&self) -> Result<Vm, Errno> {
        self.task.process.vm()
    }

    /// The calling thread's credentials.
    pub fn cred(&self) -> Arc<crate::cred::Cred> {
        self.task.cred()
    }

    /// Copies `data` to user memory at `addr`. The address space is only
    /// looked up when the copy faults (a page to fault in, or a bad
    /// address), so the common case skips its lock and reference count.
    pub fn copy_to_user(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        crate::mm::uaccess::write_bytes_with(|| self.vm(), addr, data)
    }

    /// Copies user memory at `addr` into `buf`, like `copy_to_user`.
    pub fn copy_from_user(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        crate::mm::uaccess::read_bytes_with(|| self.vm(), addr, buf)
    }
}

pub type SysResult = Result<u64, Errno>;
type Handler = fn(&mut SyscallContext, &[u64; 6]) -> SysResult;

const TABLE_SIZE: usize = 512;

macro_rules! syscall_table {
    ($($nr:ident => $handler:path),* $(,)?) => {
        const fn build_table() -> [Option<Handler>; TABLE_SIZE] {
            let mut table: [Option<Handler>; TABLE_SIZE] = [None; TABLE_SIZE];
            $( table[nr::$nr] = Some($handler as Handler); )*
            table
        }
    };
}

syscall_table! {
    READ => fs_io::sys_read,
    WRITE => fs_io::sys_write,
    OPEN => fs_io::sys_open,
    CLOSE => fs_io::sys_close,
    STAT => fs_path::sys_stat,
    FSTAT => fs_path::sys_fstat,
    LSTAT => fs_path::sys_lstat,
    LSEEK => fs_io::sys_lseek,
    MMAP => mem::sys_mmap,
    MPROTECT => mem::sys_mprotect,
    MUNMAP => mem::sys_munmap,
    BRK => mem::sys_brk,
    RT_SIGACTION => signal::sys_rt_sigaction,
    RT_SIGPROCMASK => signal::sys_rt_sigprocmask,
    RT_SIGRETURN => signal::sys_rt_sigreturn,
    IOCTL => fs_io::sys_ioctl,
    READV => fs_io::sys_readv,
    WRITEV => fs_io::sys_writev,
    ACCESS => fs_attr::sys_access,
    SCHED_YIELD => sched::sys_sched_yield,
    MADVISE => mem::sys_madvise,
    MREMAP => mem::sys_mremap,
    MSYNC => mem::sys_msync,
    MINCORE => mem::sys_mincore,
    MLOCK => mem::sys_mlock,
    MLOCK2 => mem::sys_mlock2,
    MUNLOCK => mem::sys_munlock,
    MLOCKALL => mem::sys_mlockall,
    MUNLOCKALL => mem::sys_munlockall,
    DUP => fs_io::sys_dup,
    DUP2 => fs_io::sys_dup2,
    PAUSE => signal::sys_pause,
    NANOSLEEP => time::sys_nanosleep,
    GETITIMER => time::sys_getitimer,
    ALARM => time::sys_alarm,
    SETITIMER => time::sys_setitimer,
    GETPID => process::sys_getpid,
    CLONE => process::sys_clone,
    CLONE3 => process::sys_clone3,
    FORK => process::sys_fork,
    VFORK => process::sys_vfork,
    EXECVE => exec::sys_execve,
    EXECVEAT => exec::sys_execveat,
    EXIT => process::sys_exit,
    WAIT4 => process::sys_wait4,
    KILL => signal::sys_kill,
    UNAME => ident::sys_uname,
    SETHOSTNAME => ident::sys_sethostname,
    SETDOMAINNAME => ident::sys_setdomainname,
    FCNTL => fs_io::sys_fcntl,
    FLOCK => lock::sys_flock,
    GETCWD => fs_path::sys_getcwd,
    CHDIR => fs_path::sys_chdir,
    READLINK => fs_path::sys_readlink,
    UMASK => ident::sys_umask,
    GETTIMEOFDAY => time::sys_gettimeofday,
    SETTIMEOFDAY => time::sys_settimeofday,
    GETRLIMIT => ident::sys_getrlimit,
    GETRUSAGE => ident::sys_getrusage,
    SYSINFO => ident::sys_sysinfo,
    TIMES => time::sys_times,
    GETUID => cred::sys_getuid,
    GETGID => cred::sys_getgid,
    SETUID => cred::sys_setuid,
    SETGID => cred::sys_setgid,
    GETEUID => cred::sys_geteuid,
    GETEGID => cred::sys_getegid,
    SETPGID => process::sys_setpgid,
    GETPPID => process::sys_getppid,
    GETPGRP => process::sys_getpgrp,
    SETSID => process::sys_setsid,
    SETREUID => cred::sys_setreuid,
    SETREGID => cred::sys_setregid,
    GETGROUPS => cred::sys_getgroups,
    SETGROUPS => cred::sys_setgroups,
    SETRESUID => cred::sys_setresuid,
    SETRESGID => cred::sys_setresgid,
    SETFSUID => cred::sys_setfsuid,
    SETFSGID => cred::sys_setfsgid,
    CAPGET => cred::sys_capget,
    CAPSET => cred::sys_capset,
    GETPGID => process::sys_getpgid,
    GETSID => process::sys_getsid,
    RT_SIGPENDING => signal::sys_rt_sigpending,
    RT_SIGSUSPEND => signal::sys_rt_sigsuspend,
    RT_SIGQUEUEINFO => signal::sys_rt_sigqueueinfo,
    RT_TGSIGQUEUEINFO => signal::sys_rt_tgsigqueueinfo,
    RT_SIGTIMEDWAIT => signal::sys_rt_sigtimedwait,
    SIGALTSTACK => signal::sys_sigaltstack,
    PRCTL => process::sys_prctl,
    ARCH_PRCTL => process::sys_arch_prctl,
    SETRLIMIT => ident::sys_setrlimit,
    GETTID => process::sys_gettid,
    TKILL => signal::sys_tkill,
    TIME => time::sys_time,
    FUTEX => futex::sys_futex,
    FUTEX_WAITV => futex::sys_futex_waitv,
    SCHED_SETAFFINITY => ident::sys_sched_setaffinity,
    SCHED_GETAFFINITY => ident::sys_sched_getaffinity,
    GETCPU => ident::sys_getcpu,
    SET_TID_ADDRESS => process::sys_set_tid_address,
    REBOOT => ident::sys_reboot,
    SET_ROBUST_LIST => process::sys_set_robust_list,
    GET_ROBUST_LIST => process::sys_get_robust_list,
    CLOCK_GETTIME => time::sys_clock_gettime,
    ADJTIMEX => adjtimex::sys_adjtimex,
    CLOCK_ADJTIME => adjtimex::sys_clock_adjtime,
    CLOCK_SETTIME => time::sys_clock_settime,
    TIMER_CREATE => time::sys_timer_create,
    TIMER_SETTIME => time::sys_timer_settime,
    TIMER_GETTIME => time::sys_timer_gettime,
    TIMER_GETOVERRUN => time::sys_timer_getoverrun,
    TIMER_DELETE => time::sys_timer_delete,
    GETRESUID => cred::sys_getresuid,
    GETRESGID => cred::sys_getresgid,
    GETPRIORITY => sched::sys_getpriority,
    SETPRIORITY => sched::sys_setpriority,
    SCHED_SETSCHEDULER => sched::sys_sched_setscheduler,
    SCHED_GETSCHEDULER => sched::sys_sched_getscheduler,
    SCHED_SETPARAM => sched::sys_sched_setparam,
    SCHED_GETPARAM => sched::sys_sched_getparam,
    SCHED_SETATTR => sched::sys_sched_setattr,
    SCHED_GETATTR => sched::sys_sched_getattr,
    SCHED_GET_PRIORITY_MAX => sched::sys_sched_get_priority_max,
    SCHED_GET_PRIORITY_MIN => sched::sys_sched_get_priority_min,
    SCHED_RR_GET_INTERVAL => sched::sys_sched_rr_get_interval,
    POLL => poll::sys_poll,
    PPOLL => poll::sys_ppoll,
    CLOCK_GETRES => time::sys_clock_getres,
    CLOCK_NANOSLEEP => time::sys_clock_nanosleep,
    EXIT_GROUP => process::sys_exit_group,
    TGKILL => signal::sys_tgkill,
    WAITID => process::sys_waitid,
    OPENAT => fs_io::sys_openat,
    NEWFSTATAT => fs_path::sys_newfstatat,
    READLINKAT => fs_path::sys_readlinkat,
    FACCESSAT => fs_attr::sys_faccessat,
    DUP3 => fs_io::sys_dup3,
    PRLIMIT64 => ident::sys_prlimit64,
    GETRANDOM => ident::sys_getrandom,
    PREAD64 => fs_io::sys_pread64,
    PWRITE64 => fs_io::sys_pwrite64,
    PREADV => fs_io::sys_preadv,
    PWRITEV => fs_io::sys_pwritev,
    CREAT => fs_io::sys_creat,
    CLOSE_RANGE => fs_io::sys_close_range,
    SENDFILE => splice::sys_sendfile,
    PIPE => fs_io::sys_pipe,
    PIPE2 => fs_io::sys_pipe2,
    FSYNC => fs_io::sys_fsync,
    FDATASYNC => fs_io::sys_fdatasync,
    SYNC => fs_path::sys_sync,
    SYNCFS => fs_io::sys_syncfs,
    STATX => fs_path::sys_statx,
    GETDENTS64 => fs_path::sys_getdents64,
    GETDENTS => fs_path::sys_getdents,
    MKDIR => fs_name::sys_mkdir,
    MKDIRAT => fs_name::sys_mkdirat,
    MKNOD => fs_name::sys_mknod,
    MKNODAT => fs_name::sys_mknodat,
    UNLINK => fs_name::sys_unlink,
    UNLINKAT => fs_name::sys_unlinkat,
    RMDIR => fs_name::sys_rmdir,
    RENAME => fs_name::sys_rename,
    RENAMEAT => fs_name::sys_renameat,
    RENAMEAT2 => fs_name::sys_renameat2,
    LINK => fs_name::sys_link,
    LINKAT => fs_name::sys_linkat,
    SYMLINK => fs_name::sys_symlink,
    SYMLINKAT => fs_name::sys_symlinkat,
    FACCESSAT2 => fs_attr::sys_faccessat2,
    CHMOD => fs_attr::sys_chmod,
    FCHMOD => fs_attr::sys_fchmod,
    FCHMODAT => fs_attr::sys_fchmodat,
    CHOWN => fs_attr::sys_chown,
    LCHOWN => fs_attr::sys_lchown,
    FCHOWN => fs_attr::sys_fchown,
    FCHOWNAT => fs_attr::sys_fchownat,
    TRUNCATE => fs_attr::sys_truncate,
    FTRUNCATE => fs_attr::sys_ftruncate,
    UTIMENSAT => fs_attr::sys_utimensat,
    UTIME => fs_attr::sys_utime,
    UTIMES => fs_attr::sys_utimes,
    FUTIMESAT => fs_attr::sys_futimesat,
    STATFS => fs_path::sys_statfs,
    FSTATFS => fs_path::sys_fstatfs,
    FCHDIR => fs_path::sys_fchdir,
    MOUNT => fs_mount::sys_mount,
    UMOUNT2 => fs_mount::sys_umount2,
    CHROOT => fs_mount::sys_chroot,
    PIVOT_ROOT => fs_mount::sys_pivot_root,
    SYSFS => fs_mount::sys_sysfs,
    ACCT => acct::sys_acct,
    OPENAT2 => openat2::sys_openat2,
    NAME_TO_HANDLE_AT => openat2::sys_name_to_handle_at,
    OPEN_BY_HANDLE_AT => openat2::sys_open_by_handle_at,
    PTRACE => ptrace::sys_ptrace,
    PERSONALITY => process::sys_personality,
    SELECT => poll::sys_select,
    MEMBARRIER => membarrier::sys_membarrier,
    KCMP => kcmp::sys_kcmp,
    PSELECT6 => poll::sys_pselect6,
    SETXATTR => xattr::sys_setxattr,
    LSETXATTR => xattr::sys_lsetxattr,
    FSETXATTR => xattr::sys_fsetxattr,
    GETXATTR => xattr::sys_getxattr,
    LGETXATTR => xattr::sys_lgetxattr,
    FGETXATTR => xattr::sys_fgetxattr,
    LISTXATTR => xattr::sys_listxattr,
    LLISTXATTR => xattr::sys_llistxattr,
    FLISTXATTR => xattr::sys_flistxattr,
    REMOVEXATTR => xattr::sys_removexattr,
    LREMOVEXATTR => xattr::sys_lremovexattr,
    FREMOVEXATTR => xattr::sys_fremovexattr,
    SPLICE => splice::sys_splice,
    TEE => splice::sys_tee,
    VMSPLICE => splice::sys_vmsplice,
    COPY_FILE_RANGE => splice::sys_copy_file_range,
    PREADV2 => rwf::sys_preadv2,
    PWRITEV2 => rwf::sys_pwritev2,
    FADVISE64 => fs_range::sys_fadvise64,
    READAHEAD => fs_range::sys_readahead,
    SYNC_FILE_RANGE => fs_range::sys_sync_file_range,
    UNSHARE => ns::sys_unshare,
    SETNS => ns::sys_setns,
    MEMFD_CREATE => memfd::sys_memfd_create,
    MSGGET => ipc::sys_msgget,
    MSGSND => ipc::sys_msgsnd,
    MSGRCV => ipc::sys_msgrcv,
    MSGCTL => ipc::sys_msgctl,
    SEMGET => ipc::sys_semget,
    SEMOP => ipc::sys_semop,
    SEMTIMEDOP => ipc::sys_semtimedop,
    SEMCTL => ipc::sys_semctl,
    SHMGET => ipc::sys_shmget,
    SHMAT => ipc::sys_shmat,
    SHMDT => ipc::sys_shmdt,
    SHMCTL => ipc::sys_shmctl,
    FALLOCATE => fs_alloc::sys_fallocate,
    MQ_OPEN => mqueue::sys_mq_open,
    MQ_UNLINK => mqueue::sys_mq_unlink,
    MQ_TIMEDSEND => mqueue::sys_mq_timedsend,
    MQ_TIMEDRECEIVE => mqueue::sys_mq_timedreceive,
    MQ_NOTIFY => mqueue::sys_mq_notify,
    MQ_GETSETATTR => mqueue::sys_mq_getsetattr,
    SOCKET => socket::sys_socket,
    SOCKETPAIR => socket::sys_socketpair,
    BIND => socket::sys_bind,
    CONNECT => socket::sys_connect,
    LISTEN => socket::sys_listen,
    ACCEPT => socket::sys_accept,
    ACCEPT4 => socket::sys_accept4,
    GETSOCKNAME => socket::sys_getsockname,
    GETPEERNAME => socket::sys_getpeername,
    SHUTDOWN => socket::sys_shutdown,
    SETSOCKOPT => socket::sys_setsockopt,
    GETSOCKOPT => socket::sys_getsockopt,
    SENDTO => socket_msg::sys_sendto,
    RECVFROM => socket_msg::sys_recvfrom,
    SENDMSG => socket_msg::sys_sendmsg,
    RECVMSG => socket_msg::sys_recvmsg,
    SENDMMSG => socket_msg::sys_sendmmsg,
    RECVMMSG => socket_msg::sys_recvmmsg,
    EPOLL_CREATE => epoll::sys_epoll_create,
    EPOLL_CREATE1 => epoll::sys_epoll_create1,
    EPOLL_CTL => epoll::sys_epoll_ctl,
    EPOLL_WAIT => epoll::sys_epoll_wait,
    EPOLL_PWAIT => epoll::sys_epoll_pwait,
    EPOLL_PWAIT2 => epoll::sys_epoll_pwait2,
    EVENTFD => eventfd::sys_eventfd,
    EVENTFD2 => eventfd::sys_eventfd2,
    TIMERFD_CREATE => timerfd::sys_timerfd_create,
    TIMERFD_SETTIME => timerfd::sys_timerfd_settime,
    TIMERFD_GETTIME => timerfd::sys_timerfd_gettime,
    SIGNALFD => signalfd::sys_signalfd,
    SIGNALFD4 => signalfd::sys_signalfd4,
    INOTIFY_INIT => inotify::sys_inotify_init,
    INOTIFY_INIT1 => inotify::sys_inotify_init1,
    INOTIFY_ADD_WATCH => inotify::sys_inotify_add_watch,
    INOTIFY_RM_WATCH => inotify::sys_inotify_rm_watch,
    PIDFD_OPEN => pidfd::sys_pidfd_open,
    PIDFD_SEND_SIGNAL => pidfd::sys_pidfd_send_signal,
    PIDFD_GETFD => pidfd::sys_pidfd_getfd,
    PROCESS_VM_READV => process_vm::sys_process_vm_readv,
    PROCESS_VM_WRITEV => process_vm::sys_process_vm_writev,
    RSEQ => rseq::sys_rseq,
    SECCOMP => seccomp::sys_seccomp,
    IOPRIO_SET => sched::sys_ioprio_set,
    IOPRIO_GET => sched::sys_ioprio_get,
    RESTART_SYSCALL => signal::sys_restart_syscall,
    PROCESS_MADVISE => mem::sys_process_madvise,
    SYSLOG => syslog::sys_syslog,
    SET_MEMPOLICY => numa::sys_set_mempolicy,
    GET_MEMPOLICY => numa::sys_get_mempolicy,
    MBIND => numa::sys_mbind,
    SET_MEMPOLICY_HOME_NODE => numa::sys_set_mempolicy_home_node,
    MIGRATE_PAGES => numa::sys_migrate_pages,
    MOVE_PAGES => numa::sys_move_pages,
}

static TABLE: [Option<Handler>; TABLE_SIZE] = build_table();

static TRACE: AtomicBool = AtomicBool::new(false);

/// `strace=1` on the command line logs every system call.
pub fn init(cmdline: &str) {
    socket::init();
    TRACE.store(cmdline.split_whitespace().any(|a| a == "strace=1"), Ordering::Relaxed);
}

pub(crate) fn is_restart(e: Errno) -> bool {
    matches!(e, Errno::ERESTARTSYS | Errno::ERESTARTNOINTR | Errno::ERESTARTNOHAND | Errno::ERESTART_RESTARTBLOCK)
}

/// Runs the system call the thread just made and stores its result.
/// Inlined into the thread's run loop (its one caller): the call, and a
/// frame of its own, are instructions every system call would pay.
#[inline]
pub fn dispatch(task: &Arc<Task>, uctx: &mut UserContext) {
    let number = uctx.regs.rax;
    // Syscall user dispatch comes first, as in Linux's syscall_trace_enter:
    // an intercepted call makes no ptrace stops and meets no filter.
    let work = task.syscall_work();
    if work & SYSCALL_WORK_USER_DISPATCH != 0 && crate::proc::user_dispatch::intercepts(task, uctx, number) {
        return;
    }
    // A traced thread takes the path with syscall stops; the untraced
    // one pays this one load.
    if task.ptrace.is_traced() {
        return ptrace::dispatch_traced(task, uctx);
    }
    if work & SYSCALL_WORK_SECCOMP != 0 {
        if let Some(nr) = crate::proc::seccomp::check(task, uctx, number) {
            run(task, uctx, nr);
        }
        return;
    }
    run(task, uctx, number);
}

/// Runs system call `number` with the arguments in the saved registers
/// and stores its result in rax.
#[inline(always)]
fn run(task: &Arc<Task>, uctx: &mut UserContext, number: u64) {
    // Kiln's own call (docs/components.md) is outside Linux's numbering,
    // past the table: it is tested only where the table's bounds check has
    // already branched, so Linux's calls pay nothing for it.
    let handler = match usize::try_from(number).ok().and_then(|n| TABLE.get(n)) {
        Some(slot) => *slot,
        None if number == crate::component::NR_INVOKE => return crate::component::syscall_invoke(uctx),
        None => None,
    };
    let r = &uctx.regs;
    let args = [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9];
    task.in_syscall.store(number.wrapping_add(1), Ordering::Relaxed);
    let mut ctx = SyscallContext { task, uctx };
    let result = match handler {
        Some(h) => h(&mut ctx, &args),
        None => Err(unimplemented(task, number)),
    };
    task.in_syscall.store(0, Ordering::Relaxed);
    if TRACE.load(Ordering::Relaxed) {
        trace(task, number, &args, &result);
    }
    ctx.uctx.regs.rax = match result {
        Ok(v) => v,
        Err(e) => {
            if is_restart(e) {
                note_restart(task, number);
            }
            e.as_neg_isize() as u64
        }
    };
}

// The rare branches of `run` are out of line, so its frame and register
// use are those of the common path.

#[cold]
#[inline(never)]
fn unimplemented(task: &Task, number: u64) -> Errno {
    log::debug!(
        "pid {}: unimplemented syscall {} ({})",
        task.process.pid,
        number,
        nr::name(number as usize).unwrap_or("?")
    );
    Errno::ENOSYS
}

#[cold]
#[inline(never)]
fn trace(task: &Task, number: u64, args: &[u64; 6], result: &SysResult) {
    log::info!(
        "[{}] {}({:#x}, {:#x}, {:#x}) = {:?}",
        task.tid(),
        nr::name(number as usize).unwrap_or("?"),
        args[0],
        args[1],
        args[2],
        result
    );
}

#[cold]
#[inline(never)]
fn note_restart(task: &Task, number: u64) {
    *task.restart_nr.lock() = Some(number);
    task.attention.store(true, Ordering::Release);
}
