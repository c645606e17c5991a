//! Process and thread lifetime: clone/fork/vfork, execve, exit, wait,
//! ids, process groups and sessions, arch_prctl.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

use hal::sync::SpinLock;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{CloneArgs, Siginfo};
use linux_abi::signal as sig;

use super::{SysResult, SyscallContext};
use crate::fs::SharedFdTable;
use crate::mm::uaccess;
use crate::proc::signal::SignalState;
use crate::proc::wait::{wait_child, VforkDone, WaitTarget};
use crate::proc::{self, task, ExitKind, Process, Task};
use crate::sched::WaitQueue;
use crate::sync::Mutex;

// Ids going out are the caller's pid namespace's view of them.
fn seen(ctx: &SyscallContext, global: i32) -> u64 {
    ctx.process().pid_ns.local_or_zero(global) as u64
}

pub fn sys_getpid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(seen(ctx, ctx.process().pid))
}

pub fn sys_gettid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(seen(ctx, ctx.task.tid()))
}

pub fn sys_getppid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(seen(ctx, ctx.process().parent_pid()))
}

pub fn sys_fork(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    do_clone(ctx, u64::from(sig::SIGCHLD), 0, 0, 0, 0)
}

pub fn sys_vfork(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    do_clone(ctx, c::CLONE_VM | c::CLONE_VFORK | u64::from(sig::SIGCHLD), 0, 0, 0, 0)
}

/// x86_64 clone(flags, stack, parent_tid, child_tid, tls).
pub fn sys_clone(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_clone(ctx, a[0], a[1], a[2], a[3], a[4])
}

const SUPPORTED_CLONE: u64 = c::CSIGNAL
    | c::CLONE_VM
    | c::CLONE_FS
    | c::CLONE_FILES
    | c::CLONE_SIGHAND
    | c::CLONE_VFORK
    | c::CLONE_PARENT
    | c::CLONE_THREAD
    | c::CLONE_SYSVSEM
    | c::CLONE_SETTLS
    | c::CLONE_PARENT_SETTID
    | c::CLONE_CHILD_CLEARTID
    | c::CLONE_DETACHED
    | c::CLONE_CHILD_SETTID
    | c::CLONE_PTRACE
    | c::CLONE_UNTRACED
    | proc::ns::ALL;

fn do_clone(ctx: &mut SyscallContext, flags: u64, stack: u64, parent_tid: u64, child_tid: u64, tls: u64) -> SysResult {
    let exit_signal = (flags & c::CSIGNAL) as u32;
    // clone(2) returns a CLONE_PIDFD descriptor through parent_tid.
    let req = CloneRequest {
        flags: flags & !c::CSIGNAL,
        exit_signal,
        stack,
        parent_tid,
        child_tid,
        tls,
        set_tid: None,
        pidfd: parent_tid,
    };
    clone_with(ctx, req)
}

/// What clone, fork, vfork and clone3 ask for, decoded.
struct CloneRequest {
    /// CLONE_* flags, without the exit signal.
    flags: u64,
    exit_signal: u32,
    /// The child's stack pointer (0: the parent's).
    stack: u64,
    parent_tid: u64,
    child_tid: u64,
    tls: u64,
    /// clone3's set_tid: the id the child must get.
    set_tid: Option<i32>,
    /// Where CLONE_PIDFD stores the child's pidfd (an int).
    pidfd: u64,
}

/// clone3(args, size): `struct clone_args` of any size from 64 bytes to a
/// page (bytes past the fields Kiln knows must be zero: E2BIG), checked as
/// Linux's `copy_clone_args_from_user` and `clone3_args_valid` do.
pub fn sys_clone3(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (ptr, size) = (a[0], a[1] as usize);
    if size > crate::mm::PAGE_SIZE as usize {
        return Err(Errno::E2BIG);
    }
    if size < c::CLONE_ARGS_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; crate::mm::PAGE_SIZE as usize];
    ctx.copy_from_user(ptr, &mut raw[..size])?;
    if raw[CloneArgs::SIZE.min(size)..size].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let mut known = [0u8; CloneArgs::SIZE];
    known.copy_from_slice(&raw[..CloneArgs::SIZE]);
    let args = CloneArgs::from_bytes(&known);
    // One pid namespace level: at most one id in set_tid.
    if args.set_tid_size > 32 || (args.set_tid == 0) != (args.set_tid_size == 0) {
        return Err(Errno::EINVAL);
    }
    if args.exit_signal & !c::CSIGNAL != 0 || args.exit_signal >= u64::from(sig::NSIG) {
        return Err(Errno::EINVAL);
    }
    if args.flags & c::CLONE_INTO_CGROUP != 0 && (args.cgroup > i32::MAX as u64 || size < c::CLONE_ARGS_SIZE_VER2) {
        return Err(Errno::EINVAL);
    }
    let set_tid = if args.set_tid_size > 0 {
        let mut ids = [0u8; 4 * 32];
        let n = args.set_tid_size as usize * 4;
        ctx.copy_from_user(args.set_tid, &mut ids[..n])?;
        if args.set_tid_size > 1 {
            // More levels than the one pid namespace there is.
            return Err(Errno::EINVAL);
        }
        let tid = i32::from_le_bytes([ids[0], ids[1], ids[2], ids[3]]);
        if !(1..proc::pid_max()).contains(&tid) {
            return Err(Errno::EINVAL);
        }
        Some(tid)
    } else {
        None
    };
    let legacy = 0xffff_ffffu64;
    if args.flags & !(legacy | c::CLONE_CLEAR_SIGHAND | c::CLONE_INTO_CGROUP) != 0
        || args.flags & (c::CLONE_DETACHED | (c::CSIGNAL & !c::CLONE_NEWTIME)) != 0
        || args.flags & (c::CLONE_SIGHAND | c::CLONE_CLEAR_SIGHAND) == (c::CLONE_SIGHAND | c::CLONE_CLEAR_SIGHAND)
        || (args.flags & (c::CLONE_THREAD | c::CLONE_PARENT) != 0 && args.exit_signal != 0)
    {
        return Err(Errno::EINVAL);
    }
    // The stack is given as its lowest address and size; it grows down.
    let stack = match (args.stack, args.stack_size) {
        (0, 0) => 0,
        (0, _) | (_, 0) => return Err(Errno::EINVAL),
        (s, n) => s.checked_add(n).filter(|&t| t <= hal::paging::USER_END).ok_or(Errno::EINVAL)?,
    };
    // Without cgroups, Linux ignores CLONE_INTO_CGROUP once it is valid.
    let req = CloneRequest {
        flags: args.flags & !c::CLONE_INTO_CGROUP,
        exit_signal: args.exit_signal as u32,
        stack,
        parent_tid: args.parent_tid,
        child_tid: args.child_tid,
        tls: args.tls,
        set_tid,
        pidfd: args.pidfd,
    };
    clone_with(ctx, req)
}

fn clone_with(ctx: &mut SyscallContext, req: CloneRequest) -> SysResult {
    let CloneRequest { flags, exit_signal, stack, parent_tid, child_tid, tls, set_tid, pidfd } = req;
    // As kernel_clone: clone(2) passes one pointer for both.
    if flags & c::CLONE_PIDFD != 0 && flags & c::CLONE_PARENT_SETTID != 0 && pidfd == parent_tid {
        return Err(Errno::EINVAL);
    }
    if flags & !(SUPPORTED_CLONE | c::CLONE_PIDFD | c::CLONE_CLEAR_SIGHAND) != 0 {
        log::debug!("clone: unsupported flags {:#x}", flags & !SUPPORTED_CLONE);
        return Err(Errno::EINVAL);
    }
    if flags & c::CLONE_THREAD != 0 && flags & c::CLONE_SIGHAND == 0 {
        return Err(Errno::EINVAL);
    }
    if flags & c::CLONE_SIGHAND != 0 && flags & c::CLONE_VM == 0 {
        return Err(Errno::EINVAL);
    }
    if exit_signal >= sig::NSIG {
        return Err(Errno::EINVAL);
    }
    // A pidfd names a process: not for a thread, and CLONE_DETACHED is
    // kept for a later meaning (copy_process).
    if flags & c::CLONE_PIDFD != 0 && flags & (c::CLONE_THREAD | c::CLONE_DETACHED) != 0 {
        return Err(Errno::EINVAL);
    }
    let parent = ctx.process().clone();
    let (child_ns, child_pid_ns) = clone_namespaces(&parent, &ctx.cred(), flags)?;
    let tid = match set_tid {
        Some(t) => {
            // Choosing an id is for checkpoint/restore tools (Linux's
            // checkpoint_restore_ns_capable), asked before the id is taken.
            let cred = ctx.cred();
            if !cred.capable(linux_abi::capability::CAP_SYS_ADMIN)
                && !cred.capable(linux_abi::capability::CAP_CHECKPOINT_RESTORE)
            {
                return Err(Errno::EPERM);
            }
            proc::claim_pid(t)?
        }
        None => proc::alloc_pid()?,
    };
    proc::pidns::register(&child_pid_ns, tid, flags & c::CLONE_THREAD == 0)?;
    let result = clone_registered(
        ctx,
        req_again(flags, exit_signal, stack, parent_tid, child_tid, tls, pidfd),
        tid,
        child_ns,
        &child_pid_ns,
    );
    if result.is_err() {
        proc::pidns::release(&child_pid_ns, tid);
    }
    result
}

fn req_again(
    flags: u64,
    exit_signal: u32,
    stack: u64,
    parent_tid: u64,
    child_tid: u64,
    tls: u64,
    pidfd: u64,
) -> CloneRequest {
    CloneRequest { flags, exit_signal, stack, parent_tid, child_tid, tls, set_tid: None, pidfd }
}

/// The namespaces of a new task: the parent's, or new ones for the
/// CLONE_NEW* flags; and the pid namespace its id belongs to.
fn clone_namespaces(
    parent: &Arc<Process>,
    cred: &crate::cred::Cred,
    flags: u64,
) -> Result<(Arc<proc::ns::Namespaces>, Arc<proc::pidns::PidNs>), Errno> {
    let parent_ns = parent.ns.lock().clone();
    if flags & c::CLONE_THREAD != 0 {
        // A thread shares its process's pid namespace, which a pending
        // unshare(CLONE_NEWPID) would contradict (Linux: EINVAL).
        if flags & (c::CLONE_NEWPID | c::CLONE_NEWUSER) != 0
            || !Arc::ptr_eq(&parent_ns.pid_for_children, &parent.pid_ns)
        {
            return Err(Errno::EINVAL);
        }
        return Ok((parent_ns, parent.pid_ns.clone()));
    }
    let ns_flags = flags & proc::ns::ALL;
    if ns_flags == 0 {
        let pid_ns = parent_ns.pid_for_children.clone();
        return Ok((parent_ns, pid_ns));
    }
    if flags & c::CLONE_NEWNS != 0 && flags & c::CLONE_FS != 0 {
        return Err(Errno::EINVAL);
    }
    if ns_flags & proc::ns::SUPPORTED != 0 && !proc::ns::has_cap_sys_admin(cred) {
        return Err(Errno::EPERM);
    }
    let ns = proc::ns::copy(&parent_ns, ns_flags, &parent.pid_ns)?;
    let pid_ns = ns.pid_for_children.clone();
    Ok((ns, pid_ns))
}

fn clone_registered(
    ctx: &mut SyscallContext,
    req: CloneRequest,
    tid: i32,
    child_ns: Arc<proc::ns::Namespaces>,
    child_pid_ns: &Arc<proc::pidns::PidNs>,
) -> SysResult {
    let CloneRequest { flags, exit_signal, stack, parent_tid, child_tid, tls, pidfd, .. } = req;
    let parent_task = ctx.task.clone();
    let parent = ctx.process().clone();

    let mut child_ctx = Box::try_new(ctx.uctx.clone()).map_err(|_| Errno::ENOMEM)?;
    child_ctx.regs.rax = 0;
    if stack != 0 {
        child_ctx.regs.rsp = stack;
    }
    if flags & c::CLONE_SETTLS != 0 {
        child_ctx.regs.fs_base = tls;
    }

    let sigmask = *parent_task.sigmask.lock();
    let (process, vfork, pidfd_fd) = if flags & c::CLONE_THREAD != 0 {
        (parent.clone(), None, None)
    } else {
        let vm = if flags & c::CLONE_VM != 0 {
            parent.vm()?
        } else {
            let child_space = parent.vm()?.lock().fork()?;
            Arc::try_new(Mutex::new(child_space)).map_err(|_| Errno::ENOMEM)?
        };
        let files = if flags & c::CLONE_FILES != 0 {
            parent.files.share()
        } else {
            let copy = parent.files().lock().clone();
            SharedFdTable::new(copy)?
        };
        let actions = if flags & c::CLONE_SIGHAND != 0 {
            parent.signals.actions.lock().clone()
        } else {
            let mut copy = *parent.signals.actions.lock().lock();
            if flags & c::CLONE_CLEAR_SIGHAND != 0 {
                // Handlers back to default; ignored signals stay ignored.
                let fresh = crate::proc::signal::default_actions();
                for (i, a) in copy.iter_mut().enumerate() {
                    if a.handler != crate::proc::signal::SIG_IGN {
                        *a = fresh[i];
                    }
                }
            }
            Arc::try_new(SpinLock::new(copy)).map_err(|_| Errno::ENOMEM)?
        };
        let real_parent =
            if flags & c::CLONE_PARENT != 0 { parent.parent.lock().clone() } else { Arc::downgrade(&parent) };
        let mut p = Process::new(tid, real_parent.clone(), vm, files, SignalState::new(actions));
        p.exit_signal = exit_signal;
        p.pid_ns = child_pid_ns.clone();
        // A pid namespace's first process is its init, protected as pid 1 is.
        if child_pid_ns.init_pid() == Some(tid) {
            p.unkillable.store(true, Ordering::Relaxed);
        }
        *p.ns.lock() = child_ns;
        p.pgid.store(parent.pgid.load(Ordering::Relaxed), Ordering::Relaxed);
        p.sid.store(parent.sid.load(Ordering::Relaxed), Ordering::Relaxed);
        *p.ctty.lock() = parent.ctty.lock().clone();
        *p.cwd.lock() = parent.cwd.lock().clone();
        *p.root.lock() = parent.root.lock().clone();
        p.forked.store(true, Ordering::Relaxed);
        *p.exe.lock() = parent.exe.lock().clone();
        *p.comm.lock() = parent.comm.lock().clone();
        *p.cmdline.lock() = parent.cmdline.lock().clone();
        *p.environ.lock() = parent.environ.lock().clone();
        *p.auxv.lock() = parent.auxv.lock().clone();
        p.umask.store(parent.umask.load(Ordering::Relaxed), Ordering::Relaxed);
        p.dumpable.store(parent.dumpable.load(Ordering::Relaxed), Ordering::Relaxed);
        p.tracer.personality.store(parent.tracer.personality.load(Ordering::Relaxed), Ordering::Relaxed);
        *p.rlimits.lock() = *parent.rlimits.lock();
        let exe_file = parent.exe_file.lock().as_ref().map(|d| d.try_clone()).transpose()?;
        *p.exe_file.lock() = exe_file;
        let vfork = if flags & c::CLONE_VFORK != 0 {
            let v = Arc::try_new(VforkDone { done: AtomicBool::new(false), queue: WaitQueue::new() })
                .map_err(|_| Errno::ENOMEM)?;
            *p.vfork_done.lock() = Some(v.clone());
            Some(v)
        } else {
            None
        };
        let p = Arc::try_new(p).map_err(|_| Errno::ENOMEM)?;
        // The pidfd goes in before the child is visible, and its number
        // to user memory, so a bad pointer leaves no child behind (EFAULT).
        let pidfd_fd =
            if flags & c::CLONE_PIDFD != 0 { Some(super::pidfd::install_for_clone(ctx, &p, pidfd)?) } else { None };
        if let Some(rp) = real_parent.upgrade() {
            rp.children.lock().push(p.clone());
        }
        proc::register_process(&p);
        (p, vfork, pidfd_fd)
    };

    // The new thread starts with the creating thread's credentials.
    let cred = parent_task.cred();
    let task = Arc::try_new(Task::new(tid, process.clone(), sigmask, cred)).map_err(|_| Errno::ENOMEM)?;
    task.ioprio.store(parent_task.ioprio.load(Ordering::Relaxed), Ordering::Relaxed);
    *task.mempolicy.lock() = *parent_task.mempolicy.lock();
    let new_process = flags & c::CLONE_THREAD == 0;
    proc::rseq::clone(&parent_task, &task, new_process, flags & c::CLONE_VM != 0)?;
    if flags & c::CLONE_CHILD_CLEARTID != 0 {
        task.clear_child_tid.store(child_tid, Ordering::Relaxed);
    }
    // Both stores are best effort, as Linux makes them once the child
    // exists: a bad pointer does not undo the clone.
    // Each side sees the id its own pid namespace gives the child.
    let tid_for_parent = parent.pid_ns.local_or_zero(tid);
    if flags & c::CLONE_PARENT_SETTID != 0 {
        if let Ok(vm) = parent.vm() {
            let _ = uaccess::write_u32(&vm, parent_tid, tid_for_parent as u32);
        }
    }
    if flags & c::CLONE_CHILD_SETTID != 0 {
        if let Ok(vm) = process.vm() {
            let local = child_pid_ns.local_or_zero(tid) as u32;
            let _ = vm.lock().write_remote(child_tid, &local.to_le_bytes());
        }
    }
    {
        // Filters are copied with the task list locked, so a TSYNC in
        // this process either sees the new thread or ran before the copy.
        let mut tasks = process.tasks.lock();
        crate::proc::seccomp::inherit(&task, &parent_task);
        tasks.push(task.clone());
    }
    // A traced parent's child is traced too when the tracer asked for
    // this kind of event (or CLONE_PTRACE).
    let event = proc::ptrace::clone_event(&parent_task, flags, exit_signal);
    let ptrace_child = flags & c::CLONE_PTRACE != 0 && flags & c::CLONE_UNTRACED == 0;
    if event != 0 || (ptrace_child && parent_task.ptrace.is_traced()) {
        proc::ptrace::attach_child(&parent_task, &task)?;
    }
    if let Err(e) = task::start(task.clone(), child_ctx) {
        process.tasks.lock().retain(|t| !Arc::ptr_eq(t, &task));
        if task.ptrace.is_traced() {
            proc::ptrace::detach(&task, 0);
        }
        if let Some(fd) = pidfd_fd {
            let _ = parent.files().lock().close(fd);
        }
        return Err(e);
    }
    if event != 0 {
        proc::ptrace::clone_event_stop(&parent_task, ctx.uctx, event, tid);
    }
    if let Some(v) = vfork {
        // The parent sleeps until the child execs or exits (it shares
        // our memory until then).
        v.queue.wait_until(|| v.done.load(Ordering::Acquire));
        if parent_task.ptrace.is_traced() {
            proc::ptrace::vfork_done(&parent_task, ctx.uctx, tid);
        }
    }
    Ok(tid_for_parent as u64)
}

pub fn sys_exit(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    *ctx.task.exit_request.lock() = Some(ExitKind::Exited(a[0] as u8));
    ctx.task.attention.store(true, Ordering::Release);
    Ok(0)
}

pub fn sys_exit_group(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    proc::signal::group_exit(ctx.process(), ExitKind::Exited(a[0] as u8));
    Ok(0)
}

/// An id coming in, as the caller's pid namespace names it, made global
/// (-1 when the caller sees no such id: it then matches nothing).
fn global_id(ctx: &SyscallContext, local: i32) -> i32 {
    ctx.process().pid_ns.global(local).unwrap_or(-1)
}

fn wait_target(ctx: &SyscallContext, pid: i32) -> WaitTarget {
    match pid {
        -1 => WaitTarget::Any,
        0 => WaitTarget::Pgid(ctx.process().pgid.load(Ordering::Relaxed)),
        p if p < -1 => WaitTarget::Pgid(global_id(ctx, -p)),
        p => WaitTarget::Pid(global_id(ctx, p)),
    }
}

pub fn sys_wait4(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, status_ptr, options, rusage_ptr) = (a[0] as i32, a[1], a[2] as u32, a[3]);
    let known = c::WNOHANG | c::WUNTRACED | c::WCONTINUED | c::__WALL | c::__WCLONE | c::__WNOTHREAD;
    if options & !known != 0 {
        return Err(Errno::EINVAL);
    }
    if pid == i32::MIN {
        // -INT_MIN is no group id: Linux answers ESRCH before anything else.
        return Err(Errno::ESRCH);
    }
    let target = wait_target(ctx, pid);
    let p = ctx.process().clone();
    let Some(r) = wait_child(&p, target, options | c::WEXITED)? else {
        return Ok(0);
    };
    let vm = ctx.vm()?;
    if status_ptr != 0 {
        uaccess::write_u32(&vm, status_ptr, r.status as u32)?;
    }
    if rusage_ptr != 0 {
        uaccess::write_bytes(&vm, rusage_ptr, &super::time::rusage_from_times(r.times).to_bytes())?;
    }
    Ok(r.pid as u64)
}

pub fn sys_waitid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (idtype, id, info_ptr, options) = (a[0] as u32, a[1] as i32, a[2], a[3] as u32);
    let known =
        c::WNOHANG | c::WUNTRACED | c::WCONTINUED | c::WEXITED | c::WNOWAIT | c::__WALL | c::__WCLONE | c::__WNOTHREAD;
    if options & !known != 0 || options & (c::WEXITED | c::WUNTRACED | c::WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    let mut options = options;
    let mut nonblocking_pidfd = false;
    let target = match idtype {
        c::P_ALL => WaitTarget::Any,
        c::P_PID if id > 0 => WaitTarget::Pid(global_id(ctx, id)),
        c::P_PGID if id > 0 => WaitTarget::Pgid(global_id(ctx, id)),
        c::P_PGID if id == 0 => WaitTarget::Pgid(ctx.process().pgid.load(Ordering::Relaxed)),
        linux_abi::pidfd::P_PIDFD if id >= 0 => {
            let file = ctx.process().files().lock().get(id)?;
            let pidfd = proc::pidfd::of_file(&file)?;
            // A PIDFD_NONBLOCK pidfd polls instead of sleeping (EAGAIN
            // below when the caller did not ask for WNOHANG itself).
            if file.nonblocking() {
                nonblocking_pidfd = options & c::WNOHANG == 0;
                options |= c::WNOHANG;
            }
            // A reaped process is nobody's child any more.
            if pidfd.process().is_none() {
                return Err(Errno::ECHILD);
            }
            WaitTarget::Pid(pidfd.pid())
        }
        _ => return Err(Errno::EINVAL),
    };
    let p = ctx.process().clone();
    let found = wait_child(&p, target, options)?;
    if found.is_none() && nonblocking_pidfd {
        return Err(Errno::EAGAIN);
    }
    if info_ptr != 0 {
        let info = match found {
            Some(r) => Siginfo::child(r.code, r.pid, r.uid, r.si_status),
            None => Siginfo::default(),
        };
        uaccess::write_bytes(&ctx.vm()?, info_ptr, &info.to_bytes())?;
    }
    Ok(0)
}

/// set_robust_list(head, len): only the head's size is checked, as on
/// Linux; the list itself is read when the thread exits or execs.
pub fn sys_set_robust_list(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    if a[1] != crate::proc::robust::HEAD_SIZE {
        return Err(Errno::EINVAL);
    }
    ctx.task.robust_list.store(a[0], Ordering::Relaxed);
    Ok(0)
}

/// get_robust_list(tid, &head, &len): any thread's head (0: the caller).
pub fn sys_get_robust_list(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let tid = a[0] as i32;
    let head = if tid == 0 {
        ctx.task.robust_list.load(Ordering::Relaxed)
    } else {
        let t = crate::proc::find_task_seen_by(ctx.process(), tid).ok_or(Errno::ESRCH)?;
        t.robust_list.load(Ordering::Relaxed)
    };
    ctx.copy_to_user(a[2], &crate::proc::robust::HEAD_SIZE.to_le_bytes())?;
    ctx.copy_to_user(a[1], &head.to_le_bytes())?;
    Ok(0)
}

pub fn sys_set_tid_address(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    ctx.task.clear_child_tid.store(a[0], Ordering::Relaxed);
    Ok(seen(ctx, ctx.task.tid()))
}

pub fn sys_arch_prctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (code, addr) = (a[0] as u32, a[1]);
    let canonical = addr < hal::paging::USER_END;
    match code {
        c::ARCH_SET_FS if canonical => ctx.uctx.regs.fs_base = addr,
        c::ARCH_SET_GS if canonical => ctx.uctx.regs.gs_base = addr,
        c::ARCH_SET_FS | c::ARCH_SET_GS => return Err(Errno::EPERM),
        c::ARCH_GET_FS => uaccess::write_u64(&ctx.vm()?, addr, ctx.uctx.regs.fs_base)?,
        c::ARCH_GET_GS => uaccess::write_u64(&ctx.vm()?, addr, ctx.uctx.regs.gs_base)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

/// The process that `pid` names for getpgid/getsid/setpgid: the caller
/// for 0, else the process of that process or thread id; a negative id
/// names nothing (ESRCH, as Linux's lookup finds no such task).
fn process_or_self(ctx: &SyscallContext, pid: i32) -> Result<Arc<Process>, Errno> {
    if pid == 0 {
        return Ok(ctx.process().clone());
    }
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    let me = ctx.process();
    proc::find_process_seen_by(me, pid)
        .or_else(|| proc::find_task_seen_by(me, pid).map(|t| t.process.clone()))
        .ok_or(Errno::ESRCH)
}

pub fn sys_setpgid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, pgid) = (a[0] as i32, a[1] as i32);
    // Linux fills in 0s before it checks the group: setpgid(-5, 0) is
    // EINVAL, setpgid(-5, 3) ESRCH.
    // Ids are the caller's pid namespace's; a 0 pgid (after the fill,
    // still 0 only when both were) means the target's own id.
    let pgid = if pgid == 0 { pid } else { pgid };
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let me = ctx.process().clone();
    if pid > 0 && proc::find_process_seen_by(&me, pid).is_none() && proc::find_task_seen_by(&me, pid).is_some() {
        return Err(Errno::EINVAL); // a thread that is not its group's leader
    }
    let target = process_or_self(ctx, pid)?;
    let is_child = target.parent.lock().upgrade().is_some_and(|pp| Arc::ptr_eq(&pp, &me));
    if !Arc::ptr_eq(&target, &me) && !is_child {
        return Err(Errno::ESRCH);
    }
    if target.sid.load(Ordering::Relaxed) == target.pid {
        return Err(Errno::EPERM); // a session leader cannot move
    }
    if target.sid.load(Ordering::Relaxed) != me.sid.load(Ordering::Relaxed) {
        return Err(Errno::EPERM);
    }
    let pgid = if pgid == 0 { target.pid } else { global_id(ctx, pgid) };
    if pgid != target.pid {
        let exists = proc::all_processes().iter().any(|p| {
            p.pgid.load(Ordering::Relaxed) == pgid && p.sid.load(Ordering::Relaxed) == me.sid.load(Ordering::Relaxed)
        });
        if !exists {
            return Err(Errno::EPERM);
        }
    }
    target.pgid.store(pgid, Ordering::Relaxed);
    Ok(0)
}

pub fn sys_getpgid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    Ok(seen(ctx, process_or_self(ctx, a[0] as i32)?.pgid.load(Ordering::Relaxed)))
}

pub fn sys_getpgrp(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Ok(seen(ctx, ctx.process().pgid.load(Ordering::Relaxed)))
}

pub fn sys_getsid(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    Ok(seen(ctx, process_or_self(ctx, a[0] as i32)?.sid.load(Ordering::Relaxed)))
}

pub fn sys_setsid(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    let p = ctx.process();
    let pid = p.pid;
    let leader = proc::all_processes().iter().any(|q| q.pgid.load(Ordering::Relaxed) == pid);
    if leader {
        return Err(Errno::EPERM);
    }
    p.sid.store(pid, Ordering::Relaxed);
    p.pgid.store(pid, Ordering::Relaxed);
    let old_terminal = p.ctty.lock().take();
    drop(old_terminal);
    Ok(seen(ctx, pid))
}

/// personality(persona): 0xffffffff queries; anything else is stored and
/// the old value returned, as Linux does (it keeps unknown domains too).
pub fn sys_personality(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let slot = &ctx.process().tracer.personality;
    let old = slot.load(Ordering::Relaxed);
    if a[0] as u32 != u32::MAX {
        slot.store(a[0] as u32, Ordering::Relaxed);
    }
    Ok(u64::from(old))
}

pub fn sys_prctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    if let Some(r) = super::cred::prctl(ctx, a) {
        return r;
    }
    match a[0] as u32 {
        c::PR_SET_NAME => {
            let vm = ctx.vm()?;
            let mut name = [0u8; 16];
            uaccess::read_bytes(&vm, a[1], &mut name[..15]).or_else(|_| {
                // Shorter names near the end of a mapping: read bytewise.
                let s = uaccess::read_cstring(&vm, a[1], 15)?;
                name[..s.len()].copy_from_slice(s.as_bytes());
                Ok::<(), Errno>(())
            })?;
            let end = name.iter().position(|&b| b == 0).unwrap_or(15);
            let comm = String::from_utf8_lossy(&name[..end]).into_owned();
            *ctx.process().comm.lock() = comm;
            Ok(0)
        }
        c::PR_GET_NAME => {
            let vm = ctx.vm()?;
            let base = ctx.process().comm.lock().clone();
            let mut name = [0u8; 16];
            let n = base.len().min(15);
            name[..n].copy_from_slice(&base.as_bytes()[..n]);
            uaccess::write_bytes(&vm, a[1], &name)?;
            Ok(0)
        }
        c::PR_SET_SECCOMP => super::seccomp::prctl_set(ctx, a[1], a[2]),
        c::PR_GET_SECCOMP => super::seccomp::prctl_get(ctx),
        c::PR_SET_SYSCALL_USER_DISPATCH => {
            crate::proc::user_dispatch::configure(ctx.task, a[1], a[2], a[3], a[4]).map(|()| 0)
        }
        _ => Err(Errno::EINVAL),
    }
}
