//! Signal calls: rt_sigaction, rt_sigprocmask, rt_sigreturn, kill,
//! tkill, tgkill, sigaltstack, rt_sigpending, rt_sigsuspend, pause.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use linux_abi::errno::Errno;
use linux_abi::layout::{KernelSigaction, Siginfo, Stack};
use linux_abi::signal::{self as sig, SigSet};

use super::{SysResult, SyscallContext};
use crate::cred::Cred;
use crate::mm::uaccess;
use crate::proc::signal::{self as psig, SigAction};
use crate::proc::{self, Process, Task};

fn check_sigsetsize(size: u64) -> Result<(), Errno> {
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

pub fn sys_rt_sigaction(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (signo, act_ptr, old_ptr, size) = (a[0] as u32, a[1], a[2], a[3]);
    check_sigsetsize(size)?;
    if !sig::is_valid(signo) {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    let new = if act_ptr != 0 {
        let mut b = [0u8; KernelSigaction::SIZE];
        uaccess::read_bytes(&vm, act_ptr, &mut b)?;
        let k = KernelSigaction::from_bytes(&b);
        if matches!(signo, sig::SIGKILL | sig::SIGSTOP) {
            return Err(Errno::EINVAL);
        }
        // Unknown flag bits are dropped, so a program can tell which ones
        // this kernel knows (Linux 5.11's UAPI_SA_FLAGS; SA_UNSUPPORTED is
        // the bit meant to come back clear).
        let known = sig::SA_NOCLDSTOP
            | sig::SA_NOCLDWAIT
            | sig::SA_SIGINFO
            | sig::SA_EXPOSE_TAGBITS
            | sig::SA_RESTORER
            | sig::SA_ONSTACK
            | sig::SA_RESTART
            | sig::SA_NODEFER
            | sig::SA_RESETHAND;
        Some(SigAction {
            handler: k.handler,
            flags: k.flags & known,
            restorer: k.restorer,
            mask: k.mask.without_unblockable(),
        })
    } else {
        None
    };
    let table = ctx.process().signals.actions.lock().clone();
    let old = {
        let mut actions = table.lock();
        let old = actions[signo as usize];
        if let Some(n) = new {
            actions[signo as usize] = n;
        }
        old
    };
    if let Some(n) = new {
        // Setting SIG_IGN (or a default of ignore) drops pending instances.
        let ignored = n.handler == psig::SIG_IGN
            || (n.handler == psig::SIG_DFL && sig::default_action(signo) == sig::DefaultAction::Ignore);
        if ignored {
            ctx.process().signals.shared_pending.lock().set.remove(signo);
            for t in ctx.process().tasks.lock().iter() {
                t.pending.lock().set.remove(signo);
            }
        }
    }
    if old_ptr != 0 {
        let k = KernelSigaction { handler: old.handler, flags: old.flags, restorer: old.restorer, mask: old.mask };
        uaccess::write_bytes(&vm, old_ptr, &k.to_bytes())?;
    }
    Ok(0)
}

pub fn sys_rt_sigprocmask(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (how, set_ptr, old_ptr, size) = (a[0] as u32, a[1], a[2], a[3]);
    check_sigsetsize(size)?;
    let vm = ctx.vm()?;
    let old = *ctx.task.sigmask.lock();
    if set_ptr != 0 {
        let set = SigSet(uaccess::read_u64(&vm, set_ptr)?);
        let new = match how {
            sig::SIG_BLOCK => old.union(set),
            sig::SIG_UNBLOCK => old.difference(set),
            sig::SIG_SETMASK => set,
            _ => return Err(Errno::EINVAL),
        };
        *ctx.task.sigmask.lock() = new.without_unblockable();
    }
    if old_ptr != 0 {
        uaccess::write_u64(&vm, old_ptr, old.0)?;
    }
    // Unblocking may have made something deliverable.
    if psig::has_deliverable(ctx.task) {
        ctx.task.interrupt();
    }
    Ok(0)
}

pub fn sys_rt_sigreturn(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    match psig::sigreturn(ctx.task, ctx.uctx) {
        Ok(rax) => Ok(rax),
        Err(_) => {
            // A corrupt frame: Linux kills the task with SIGSEGV.
            psig::force_fault_signal(ctx.task, Siginfo::fault(sig::SIGSEGV, sig::SI_KERNEL, 0));
            Ok(ctx.uctx.regs.rax)
        }
    }
}

/// A signal from the caller: si_pid is its id in its own pid namespace
/// (the receiver's view whenever they share one).
fn user_info(ctx: &SyscallContext, signo: u32, code: i32) -> Siginfo {
    let p = ctx.process();
    Siginfo::kill(signo, code, p.pid_ns.local_or_zero(p.pid), ctx.cred().uid)
}

/// The global id of the caller's `local` (-1: it sees no such id).
fn global_id(ctx: &SyscallContext, local: i32) -> i32 {
    ctx.process().pid_ns.global(local).unwrap_or(-1)
}

/// Whether a signal from the caller may reach a thread of `target` with
/// credentials `tcred` (Linux's check_kill_permission): within the
/// process always; else a real or effective uid of the sender must be
/// the target's real or saved uid, or CAP_KILL; SIGCONT also reaches
/// the sender's session.
fn may_signal(ctx: &SyscallContext, target: &Arc<Process>, tcred: Option<Arc<Cred>>, signo: u32) -> SysResult {
    if Arc::ptr_eq(target, ctx.process()) {
        return Ok(0);
    }
    let Some(tcred) = tcred else { return Ok(0) };
    if ctx.cred().may_signal(&tcred) {
        return Ok(0);
    }
    if signo == sig::SIGCONT && target.sid.load(Ordering::Relaxed) == ctx.process().sid.load(Ordering::Relaxed) {
        return Ok(0);
    }
    Err(Errno::EPERM)
}

pub(super) fn may_signal_process(ctx: &SyscallContext, p: &Arc<Process>, signo: u32) -> SysResult {
    may_signal(ctx, p, p.cred(), signo)
}

pub fn sys_kill(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, signo) = (a[0] as i32, a[1] as u32);
    if signo != 0 && !sig::is_valid(signo) {
        return Err(Errno::EINVAL);
    }
    let info = user_info(ctx, signo, sig::SI_USER);
    if pid > 0 {
        // Any thread id names its whole process, as on Linux; the
        // permission check asks the named thread's credentials.
        let me = ctx.process();
        // kill(getpid(), ...) needs no look-up in the process table, and
        // a signal within the process no permission check (so neither a
        // reference to the process nor its credentials).
        if me.pid_ns.global(pid) == Some(me.pid) {
            psig::send_from(me, me, info);
            return Ok(0);
        }
        let (p, tcred) = match proc::find_process_seen_by(me, pid) {
            Some(p) => {
                let cred = p.cred();
                (p, cred)
            }
            None => {
                let t = proc::find_task_seen_by(ctx.process(), pid).ok_or(Errno::ESRCH)?;
                (t.process.clone(), Some(t.cred()))
            }
        };
        may_signal(ctx, &p, tcred, signo)?;
        psig::send_from(ctx.process(), &p, info);
        return Ok(0);
    }
    if pid == i32::MIN {
        // -INT_MIN names no group (Linux checks this first).
        return Err(Errno::ESRCH);
    }
    let me = ctx.process().pid;
    // kill(-1) skips init and the caller; a group's zombies still count as
    // members (the signal is then dropped), so only a group with no
    // member at all is ESRCH.
    let targets: alloc::vec::Vec<_> = match pid {
        0 => {
            let pgid = ctx.process().pgid.load(Ordering::Relaxed);
            return signal_group(ctx, pgid, signo, info);
        }
        -1 => {
            // Everyone the caller's pid namespace holds, but its init and the caller.
            let ns = ctx.process().pid_ns.clone();
            proc::all_processes()
                .into_iter()
                .filter(|p| p.pid != me && ns.contains(&p.pid_ns) && ns.local(p.pid).is_some_and(|l| l != 1))
                .collect()
        }
        _ => return signal_group(ctx, global_id(ctx, -pid), signo, info),
    };
    if targets.is_empty() {
        return Err(Errno::ESRCH);
    }
    // kill(-1) succeeds when only permission stopped it.
    for p in &targets {
        if may_signal_process(ctx, p, signo).is_ok() {
            psig::send_from(ctx.process(), p, info);
        }
    }
    Ok(0)
}

/// Signals every process of group `pgid` (kill(-pgid), and
/// pidfd_send_signal's PIDFD_SIGNAL_PROCESS_GROUP): a group's zombies
/// still count as members (the signal is then dropped), so only a group
/// with no member at all is ESRCH; it succeeds when one member got the
/// signal, else gives the last error.
pub(super) fn signal_group(ctx: &SyscallContext, pgid: i32, signo: u32, info: Siginfo) -> SysResult {
    let targets: alloc::vec::Vec<_> =
        proc::all_processes().into_iter().filter(|p| p.pgid.load(Ordering::Relaxed) == pgid).collect();
    if targets.is_empty() {
        return Err(Errno::ESRCH);
    }
    let mut sent = false;
    let mut last = Ok(0);
    for p in &targets {
        match may_signal_process(ctx, p, signo) {
            Ok(_) => {
                psig::send_from(ctx.process(), p, info);
                sent = true;
            }
            Err(e) => last = Err(e),
        }
    }
    if sent {
        Ok(0)
    } else {
        last
    }
}

fn signal_task(ctx: &SyscallContext, t: &Arc<Task>, signo: u32) -> SysResult {
    signal_task_info(ctx, t, signo, user_info(ctx, signo, sig::SI_TKILL))
}

/// A thread-directed signal with the given siginfo, after the kill
/// permission check (signal 0 only checks).
pub(super) fn signal_task_info(ctx: &SyscallContext, t: &Arc<Task>, signo: u32, info: Siginfo) -> SysResult {
    may_signal(ctx, &t.process, Some(t.cred()), signo)?;
    if signo == 0 {
        return Ok(0);
    }
    psig::send_to_task_from(ctx.process(), t, info);
    Ok(0)
}

pub fn sys_tkill(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (tid, signo) = (a[0] as i32, a[1] as u32);
    if tid <= 0 || (signo != 0 && !sig::is_valid(signo)) {
        return Err(Errno::EINVAL);
    }
    let t = proc::find_task_seen_by(ctx.process(), tid).ok_or(Errno::ESRCH)?;
    signal_task(ctx, &t, signo)
}

pub fn sys_tgkill(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (tgid, tid, signo) = (a[0] as i32, a[1] as i32, a[2] as u32);
    if tgid <= 0 || tid <= 0 || (signo != 0 && !sig::is_valid(signo)) {
        return Err(Errno::EINVAL);
    }
    let tgid = global_id(ctx, tgid);
    let t = proc::find_task_seen_by(ctx.process(), tid).filter(|t| t.process.pid == tgid).ok_or(Errno::ESRCH)?;
    signal_task(ctx, &t, signo)
}

pub fn sys_sigaltstack(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (ss_ptr, old_ptr) = (a[0], a[1]);
    let vm = ctx.vm()?;
    let sp = ctx.uctx.regs.rsp;
    let current = *ctx.task.altstack.lock();
    if ss_ptr != 0 {
        let mut b = [0u8; Stack::SIZE];
        uaccess::read_bytes(&vm, ss_ptr, &mut b)?;
        psig::set_altstack(ctx.task, &Stack::from_bytes(&b), sp)?;
    }
    if old_ptr != 0 {
        let on = current.size != 0 && sp > current.sp && sp - current.sp <= current.size;
        let flags = if on { sig::SS_ONSTACK } else { current.flags };
        let old = Stack { ss_sp: current.sp, ss_flags: flags, ss_size: current.size };
        uaccess::write_bytes(&vm, old_ptr, &old.to_bytes())?;
    }
    Ok(0)
}

pub fn sys_rt_sigpending(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    check_sigsetsize(a[1])?;
    let pending = psig::pending_set(ctx.task).intersection(*ctx.task.sigmask.lock());
    uaccess::write_u64(&ctx.vm()?, a[0], pending.0)?;
    Ok(0)
}

pub fn sys_rt_sigsuspend(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    check_sigsetsize(a[1])?;
    let mask = SigSet(uaccess::read_u64(&ctx.vm()?, a[0])?).without_unblockable();
    let old = core::mem::replace(&mut *ctx.task.sigmask.lock(), mask);
    *ctx.task.saved_sigmask.lock() = Some(old);
    wait_for_signal(ctx);
    Err(Errno::ERESTARTNOHAND)
}

pub fn sys_pause(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    wait_for_signal(ctx);
    Err(Errno::ERESTARTNOHAND)
}

fn wait_for_signal(ctx: &SyscallContext) {
    loop {
        if psig::has_deliverable(ctx.task) {
            return;
        }
        let _ = crate::sched::sleep_until_interruptible(u64::MAX);
        if let Some(kt) = ctx.task.kthread.get() {
            kt.set_interrupt(false);
        }
    }
}

fn read_siginfo(ctx: &SyscallContext, ptr: u64, signo: u32) -> Result<Siginfo, Errno> {
    let mut b = [0u8; Siginfo::SIZE];
    uaccess::read_bytes(&ctx.vm()?, ptr, &mut b)?;
    let mut info = Siginfo::from_bytes(&b);
    info.si_signo = signo as i32;
    Ok(info)
}

/// Only the kernel may forge si_code values >= 0 (or SI_TKILL) for
/// another process; user space uses negative codes such as SI_QUEUE.
fn check_queue_code(ctx: &SyscallContext, info: &Siginfo, target_pid: i32) -> Result<(), Errno> {
    if (info.si_code >= 0 || info.si_code == sig::SI_TKILL) && target_pid != ctx.process().pid {
        return Err(Errno::EPERM);
    }
    Ok(())
}

pub fn sys_rt_sigqueueinfo(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, signo, uinfo) = (a[0] as i32, a[1] as u32, a[2]);
    if !sig::is_valid(signo) {
        return Err(Errno::EINVAL);
    }
    let info = read_siginfo(ctx, uinfo, signo)?;
    let p = proc::find_process_seen_by(ctx.process(), pid).ok_or(Errno::ESRCH)?;
    check_queue_code(ctx, &info, p.pid)?;
    may_signal_process(ctx, &p, signo)?;
    psig::send_from(ctx.process(), &p, info);
    Ok(0)
}

pub fn sys_rt_tgsigqueueinfo(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (tgid, tid, signo, uinfo) = (a[0] as i32, a[1] as i32, a[2] as u32, a[3]);
    if !sig::is_valid(signo) || tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let info = read_siginfo(ctx, uinfo, signo)?;
    let tgid = global_id(ctx, tgid);
    let t = proc::find_task_seen_by(ctx.process(), tid).filter(|t| t.process.pid == tgid).ok_or(Errno::ESRCH)?;
    check_queue_code(ctx, &info, tgid)?;
    may_signal(ctx, &t.process, Some(t.cred()), signo)?;
    psig::send_to_task_from(ctx.process(), &t, info);
    Ok(0)
}

pub fn sys_rt_sigtimedwait(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (set_ptr, info_ptr, timeout_ptr, size) = (a[0], a[1], a[2], a[3]);
    check_sigsetsize(size)?;
    let vm = ctx.vm()?;
    let set = SigSet(uaccess::read_u64(&vm, set_ptr)?).without_unblockable();
    let deadline = if timeout_ptr != 0 {
        let mut b = [0u8; linux_abi::layout::Timespec::SIZE];
        uaccess::read_bytes(&vm, timeout_ptr, &mut b)?;
        let ns = linux_abi::layout::Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
        Some(crate::clock::now_ns().saturating_add(ns))
    } else {
        None
    };
    loop {
        if let Some(info) = psig::take_from_set(ctx.task, set) {
            if info_ptr != 0 {
                uaccess::write_bytes(&vm, info_ptr, &info.to_bytes())?;
            }
            return Ok(info.si_signo as u64);
        }
        if psig::has_deliverable(ctx.task) {
            return Err(Errno::EINTR);
        }
        let until = deadline.unwrap_or(u64::MAX);
        if crate::clock::now_ns() >= until {
            return Err(Errno::EAGAIN);
        }
        let _ = crate::sched::sleep_until_interruptible(until);
        if let Some(kt) = ctx.task.kthread.get() {
            kt.set_interrupt(false);
        }
    }
}

/// restart_syscall: Kiln restarts interrupted calls by running them again
/// (never through a restart block), so a direct call finds none pending
/// and fails as Linux's do_no_restart_syscall does.
pub fn sys_restart_syscall(_ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    Err(Errno::EINTR)
}
