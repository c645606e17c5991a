//! Process descriptors: pidfd_open, pidfd_send_signal, pidfd_getfd, and
//! the pidfd clone(CLONE_PIDFD) returns. The file itself is
//! `proc::pidfd`; waitid(P_PIDFD) is in `process.rs`.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::pidfd::{PIDFD_NONBLOCK, PIDFD_SIGNAL_PROCESS_GROUP, PIDFD_SIGNAL_THREAD, PIDFD_SIGNAL_THREAD_GROUP};
use linux_abi::signal as sig;

use super::{SysResult, SyscallContext};
use crate::cred::PtraceMode;
use crate::proc::{self, pidfd, ptrace, Process};

/// Installs a new pidfd for `p` in the caller's table (close-on-exec, as
/// every pidfd starts), within RLIMIT_NOFILE.
fn install(ctx: &SyscallContext, p: &Arc<Process>, nonblock: bool) -> Result<i32, Errno> {
    let file = pidfd::open(p, nonblock)?;
    let limit = (ctx.process().rlimits.lock()[c::RLIMIT_NOFILE as usize].0 as usize).min(1 << 20);
    ctx.process().files().lock().install_from(0, file, true, limit)
}

/// clone's CLONE_PIDFD: a pidfd for the new process, its number stored
/// at `ptr` (EFAULT, and no descriptor, when it cannot be).
pub(super) fn install_for_clone(ctx: &SyscallContext, p: &Arc<Process>, ptr: u64) -> Result<i32, Errno> {
    let fd = install(ctx, p, false)?;
    if let Err(e) = ctx.copy_to_user(ptr, &fd.to_le_bytes()) {
        let _ = ctx.process().files().lock().close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// pidfd_open(pid, flags): a thread group's leader only (ENOENT for any
/// other thread, as Linux since 6.9 reports it), zombies included; ESRCH
/// once reaped. PIDFD_THREAD (thread pidfds) is not supported: EINVAL.
pub fn sys_pidfd_open(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, flags) = (a[0] as i32, a[1] as u32);
    if flags & !PIDFD_NONBLOCK != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    let Some(p) = proc::find_process_seen_by(ctx.process(), pid) else {
        // An id in use by a thread that leads no group.
        return Err(if proc::find_task_seen_by(ctx.process(), pid).is_some() { Errno::ENOENT } else { Errno::ESRCH });
    };
    Ok(install(ctx, &p, flags & PIDFD_NONBLOCK != 0)? as u64)
}

/// The process a descriptor names for pidfd_send_signal: a pidfd, or a
/// /proc/<pid> directory (Linux's `pidfd_to_pid`). Err(ESRCH) for a
/// reaped one (or a /proc directory whose process is gone), EBADF for
/// anything else.
fn signal_target(ctx: &SyscallContext, fd: i32) -> Result<(proc::Pid, Result<Arc<Process>, Errno>), Errno> {
    let file = ctx.process().files().lock().get(fd)?;
    if let Ok(p) = pidfd::of_file(&file) {
        return Ok((p.pid(), p.process().cloned().ok_or(Errno::ESRCH)));
    }
    let pid =
        file.dentry.as_ref().and_then(|d| crate::fs::procfs::tgid_of_dir(d.inode().as_ref())).ok_or(Errno::EBADF)?;
    Ok((pid, proc::find_process(pid).ok_or(Errno::ESRCH)))
}

/// pidfd_send_signal(pidfd, sig, info, flags), in Linux's order: flags
/// (EINVAL for an unknown one or more than one scope), the descriptor
/// (EBADF), the siginfo (EFAULT; EINVAL if it names another signal;
/// EPERM for a kernel-only si_code sent anywhere but to oneself's thread
/// group), then as kill: a reaped process (ESRCH), the signal number
/// (EINVAL), permission (EPERM). The scope is the process (default), its
/// leader thread only (PIDFD_SIGNAL_THREAD: SI_TKILL, ESRCH once that
/// thread has exited) or the process group whose id is the process's
/// (PIDFD_SIGNAL_PROCESS_GROUP: ESRCH when there is no such group).
pub fn sys_pidfd_send_signal(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, signo, info_ptr, flags) = (a[0] as i32, a[1] as u32, a[2], a[3] as u32);
    let scopes = PIDFD_SIGNAL_THREAD | PIDFD_SIGNAL_THREAD_GROUP | PIDFD_SIGNAL_PROCESS_GROUP;
    if flags & !scopes != 0 || flags.count_ones() > 1 {
        return Err(Errno::EINVAL);
    }
    let (pid, target) = signal_target(ctx, fd)?;
    let info = if info_ptr != 0 {
        let mut b = [0u8; Siginfo::SIZE];
        ctx.copy_from_user(info_ptr, &mut b)?;
        let info = Siginfo::from_bytes(&b);
        if info.si_signo as u32 != signo {
            return Err(Errno::EINVAL);
        }
        // Only the kernel forges these codes, except to oneself.
        let to_self = ctx.task.tid() == pid && flags != PIDFD_SIGNAL_PROCESS_GROUP;
        if (info.si_code >= 0 || info.si_code == sig::SI_TKILL) && !to_self {
            return Err(Errno::EPERM);
        }
        info
    } else {
        let code = if flags == PIDFD_SIGNAL_THREAD { sig::SI_TKILL } else { sig::SI_USER };
        Siginfo::kill(signo, code, ctx.process().pid, ctx.cred().uid)
    };
    let p = target?;
    if signo != 0 && !sig::is_valid(signo) {
        return Err(Errno::EINVAL);
    }
    match flags {
        PIDFD_SIGNAL_THREAD => {
            let leader = p.tasks.lock().iter().find(|t| t.tid() == pid).cloned().ok_or(Errno::ESRCH)?;
            super::signal::signal_task_info(ctx, &leader, signo, info)
        }
        PIDFD_SIGNAL_PROCESS_GROUP => super::signal::signal_group(ctx, pid, signo, info),
        _ => {
            super::signal::may_signal_process(ctx, &p, signo)?;
            if signo != 0 {
                // A zombie takes the signal silently, as kill does.
                proc::signal::send_from(ctx.process(), &p, info);
            }
            Ok(0)
        }
    }
}

/// pidfd_getfd(pidfd, fd, flags): a copy of another process's descriptor
/// (close-on-exec), for a caller that may ptrace it
/// (PTRACE_MODE_ATTACH_REALCREDS). ESRCH once the process has exited, as
/// Linux reports it since 6.8 (6.1 said EBADF for an exited one).
pub fn sys_pidfd_getfd(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pidfd_fd, target_fd, flags) = (a[0] as i32, a[1] as i32, a[2] as u32);
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let file = ctx.process().files().lock().get(pidfd_fd)?;
    let p = pidfd::of_file(&file)?.process().cloned().ok_or(Errno::ESRCH)?;
    ptrace::may_access_process(ctx.task, &p, PtraceMode::ATTACH_REALCREDS)?;
    let theirs = p.files().lock().get(target_fd).map_err(|e| {
        // No descriptor table left: the process has exited.
        let st = p.state.lock();
        if st.zombie || st.exiting.is_some() {
            Errno::ESRCH
        } else {
            e
        }
    })?;
    let limit = (ctx.process().rlimits.lock()[c::RLIMIT_NOFILE as usize].0 as usize).min(1 << 20);
    Ok(ctx.process().files().lock().install_from(0, theirs, true, limit)? as u64)
}
