//! ptrace(2), and the system-call path of a traced thread: the
//! syscall-enter and syscall-exit stops around the handler, with the
//! tracer's changes to the number (orig_rax, -1 skips the call), the
//! arguments and the result. The state machine lives in `proc::ptrace`.

use alloc::sync::Arc;

use hal::user::UserContext;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::ptrace::*;
use linux_abi::signal as sig;

use super::{SysResult, SyscallContext};
use crate::cred::PtraceMode;
use crate::mm::uaccess;
use crate::proc::ptrace::{self as pt, flag, RunMode};
use crate::proc::{self, Task};

/// `dispatch` for a traced thread. Never inlined: the untraced path stays
/// as lean as it was.
#[cold]
#[inline(never)]
pub fn dispatch_traced(task: &Arc<Task>, uctx: &mut UserContext) {
    let mut number = uctx.regs.rax;
    pt::note_syscall(task, number);
    let flags = task.ptrace.flags();
    if flags & flag::SYSCALL != 0 {
        match pt::syscall_enter_stop(task, uctx, number) {
            Some(nr) => number = nr,
            // Killed while stopped: the call never runs.
            None => return,
        }
        pt::note_syscall(task, number);
        if flags & flag::SYSEMU != 0 {
            // PTRACE_SYSEMU: the tracer emulates the call; rax is what it
            // left there.
            return exit_work(task, uctx, true);
        }
    }
    // Filters judge the call after the tracer saw it (and perhaps
    // changed it), as in Linux's syscall_trace_enter; a call they stop
    // still reports its exit.
    if number != u64::MAX && task.syscall_work() & crate::proc::task::SYSCALL_WORK_SECCOMP != 0 {
        match crate::proc::seccomp::check(task, uctx, number) {
            Some(nr) => number = nr,
            None => return exit_work(task, uctx, false),
        }
    }
    // -1 skips the call and leaves rax alone (-ENOSYS unless the tracer
    // wrote a result); other unknown numbers give ENOSYS in `run`.
    if number != u64::MAX {
        super::run(task, uctx, number);
    }
    exit_work(task, uctx, false);
}

/// Syscall-exit-stop, or the single-step trap after the call.
fn exit_work(task: &Arc<Task>, uctx: &mut UserContext, emulated: bool) {
    let flags = task.ptrace.flags();
    if flags & flag::SYSCALL != 0 && !(emulated && flags & flag::SYSEMU != 0) {
        pt::syscall_exit_stop(task, uctx);
    } else if flags & flag::STEP != 0 && !emulated {
        pt::step_over_syscall(task, uctx);
    }
}

/// ptrace(request, pid, addr, data).
pub fn sys_ptrace(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (request, pid, addr, data) = (a[0], a[1] as i32, a[2], a[3]);
    // The tracee as the caller's pid namespace names it (-1: nobody).
    let pid = if pid > 0 { ctx.process().pid_ns.global(pid).unwrap_or(-1) } else { pid };
    match request {
        PTRACE_TRACEME => return traceme(ctx),
        PTRACE_ATTACH | PTRACE_SEIZE => return attach(ctx, request == PTRACE_SEIZE, pid, addr, data),
        _ => {}
    }
    // KILL and INTERRUPT work on a running tracee; the rest need a stop.
    let stopped = !matches!(request, PTRACE_KILL | PTRACE_INTERRUPT | PTRACE_LISTEN);
    let t = pt::tracee_of(ctx.task, pid, stopped)?;
    match request {
        PTRACE_PEEKTEXT | PTRACE_PEEKDATA => {
            let word = peek(&t, addr)?;
            ctx.copy_to_user(data, &word.to_le_bytes())?;
            Ok(0)
        }
        PTRACE_POKETEXT | PTRACE_POKEDATA => {
            poke(&t, addr, data)?;
            Ok(0)
        }
        PTRACE_PEEKUSR => {
            let word = pt::peek_user(&t, addr)?;
            ctx.copy_to_user(data, &word.to_le_bytes())?;
            Ok(0)
        }
        PTRACE_POKEUSR => {
            pt::poke_user(&t, addr, data)?;
            Ok(0)
        }
        PTRACE_GETREGS => {
            ctx.copy_to_user(data, &pt::user_regs(&t)?.to_bytes())?;
            Ok(0)
        }
        PTRACE_SETREGS => {
            let mut b = [0u8; UserRegs::SIZE];
            ctx.copy_from_user(data, &mut b)?;
            pt::set_user_regs(&t, &UserRegs::from_bytes(&b))?;
            Ok(0)
        }
        PTRACE_GETFPREGS => {
            ctx.copy_to_user(data, &pt::fpregs(&t)?)?;
            Ok(0)
        }
        PTRACE_SETFPREGS => {
            let mut b = [0u8; 512];
            ctx.copy_from_user(data, &mut b)?;
            pt::set_fpregs(&t, &b)?;
            Ok(0)
        }
        PTRACE_GETREGSET | PTRACE_SETREGSET => regset(ctx, &t, request == PTRACE_SETREGSET, addr, data),
        PTRACE_GETSIGINFO => {
            let info = pt::siginfo(&t)?;
            ctx.copy_to_user(data, &info.to_bytes())?;
            Ok(0)
        }
        PTRACE_SETSIGINFO => {
            let mut b = [0u8; Siginfo::SIZE];
            ctx.copy_from_user(data, &mut b)?;
            pt::set_siginfo(&t, Siginfo::from_bytes(&b))?;
            Ok(0)
        }
        PTRACE_GETEVENTMSG => {
            let msg = pt::event_msg(&t)?;
            ctx.copy_to_user(data, &msg.to_le_bytes())?;
            Ok(0)
        }
        PTRACE_SETOPTIONS => {
            if data & !u64::from(PTRACE_O_MASK) != 0 {
                return Err(Errno::EINVAL);
            }
            pt::set_options(&t, data as u32)?;
            Ok(0)
        }
        PTRACE_CONT => resume(&t, RunMode::Cont, data),
        PTRACE_SYSCALL => resume(&t, RunMode::Syscall, data),
        PTRACE_SINGLESTEP => resume(&t, RunMode::Step, data),
        PTRACE_SYSEMU => resume(&t, RunMode::Sysemu, data),
        PTRACE_SYSEMU_SINGLESTEP => resume(&t, RunMode::SysemuStep, data),
        PTRACE_KILL => {
            proc::signal::send_to_process(&t.process, Siginfo::kill(sig::SIGKILL, sig::SI_USER, 0, 0));
            Ok(0)
        }
        PTRACE_DETACH => {
            let signo = pt::resume_signal(data)?;
            pt::detach(&t, signo);
            Ok(0)
        }
        PTRACE_INTERRUPT => {
            pt::interrupt_request(&t)?;
            Ok(0)
        }
        PTRACE_LISTEN => {
            if !t.ptrace.in_stop() {
                return Err(Errno::ESRCH);
            }
            pt::listen_request(&t)?;
            Ok(0)
        }
        PTRACE_GET_SYSCALL_INFO => {
            let (bytes, size) = pt::syscall_info(&t)?.encode();
            let n = (addr as usize).min(size);
            ctx.copy_to_user(data, &bytes[..n])?;
            Ok(size as u64)
        }
        PTRACE_PEEKSIGINFO => peek_siginfo(ctx, &t, addr, data),
        PTRACE_GETSIGMASK => {
            if addr != 8 {
                return Err(Errno::EINVAL);
            }
            let mask = pt::sigmask(&t)?;
            ctx.copy_to_user(data, &mask.to_le_bytes())?;
            Ok(0)
        }
        PTRACE_SETSIGMASK => {
            if addr != 8 {
                return Err(Errno::EINVAL);
            }
            let mut b = [0u8; 8];
            ctx.copy_from_user(data, &mut b)?;
            pt::set_sigmask(&t, u64::from_le_bytes(b))?;
            Ok(0)
        }
        PTRACE_ARCH_PRCTL => arch_prctl(ctx, &t, addr, data),
        // Not in Kiln: block stepping (BTF), seccomp filters, i386 regs.
        _ => Err(Errno::EIO),
    }
}

/// PTRACE_TRACEME: the parent becomes the tracer.
fn traceme(ctx: &mut SyscallContext) -> SysResult {
    if ctx.task.ptrace.is_traced() {
        return Err(Errno::EPERM);
    }
    let parent = ctx.process().parent.lock().upgrade().ok_or(Errno::EPERM)?;
    // Linux links the tracee to the parent's main thread (the real
    // parent is a thread group there too).
    let tracer = {
        let tasks = parent.tasks.lock();
        tasks.iter().find(|t| t.is_leader()).or(tasks.first()).cloned()
    };
    let tracer = tracer.ok_or(Errno::EPERM)?;
    if !ctx.task.cred().may_be_traced_by(&tracer.cred()) {
        return Err(Errno::EPERM);
    }
    pt::link(&tracer, ctx.task, false, 0)?;
    Ok(0)
}

/// PTRACE_ATTACH and PTRACE_SEIZE.
fn attach(ctx: &mut SyscallContext, seize: bool, pid: i32, addr: u64, data: u64) -> SysResult {
    let options = if seize {
        if addr != 0 || data & !u64::from(PTRACE_O_MASK) != 0 {
            return Err(Errno::EIO);
        }
        data as u32
    } else {
        0
    };
    let t = proc::find_task(pid).ok_or(Errno::ESRCH)?;
    if Arc::ptr_eq(&t.process, ctx.process()) {
        return Err(Errno::EPERM);
    }
    pt::may_access(ctx.task, &t.process, &t.cred(), PtraceMode::ATTACH_REALCREDS)?;
    if t.process.state.lock().zombie {
        return Err(Errno::EPERM);
    }
    pt::link(ctx.task, &t, seize, options)?;
    if !seize {
        proc::signal::send_to_process(&t.process, Siginfo::kill(sig::SIGSTOP, sig::SI_KERNEL, 0, 0));
    }
    // A thread already in a group stop reports it to its new tracer.
    t.process.resume.wake_all();
    t.interrupt();
    Ok(0)
}

fn resume(t: &Arc<Task>, mode: RunMode, data: u64) -> SysResult {
    let signo = pt::resume_signal(data)?;
    pt::resume(t, mode, signo)?;
    Ok(0)
}

/// A word of the tracee's memory; EIO where it has none.
fn peek(t: &Task, addr: u64) -> Result<u64, Errno> {
    let vm = t.process.vm().map_err(|_| Errno::EIO)?;
    let mut b = [0u8; 8];
    if vm.lock().access_forced(addr, &mut b, false) != 8 {
        return Err(Errno::EIO);
    }
    Ok(u64::from_le_bytes(b))
}

/// Writes a word of the tracee's memory (text included, copy-on-write).
fn poke(t: &Task, addr: u64, value: u64) -> Result<(), Errno> {
    let vm = t.process.vm().map_err(|_| Errno::EIO)?;
    let mut b = value.to_le_bytes();
    if vm.lock().access_forced(addr, &mut b, true) != 8 {
        return Err(Errno::EIO);
    }
    Ok(())
}

/// GETREGSET/SETREGSET: `data` points at an iovec whose length is
/// trimmed to the set's size (and written back on GET).
fn regset(ctx: &mut SyscallContext, t: &Arc<Task>, set: bool, note: u64, iov_ptr: u64) -> SysResult {
    let mut iov = [0u8; 16];
    ctx.copy_from_user(iov_ptr, &mut iov)?;
    let base = u64::from_le_bytes(iov[..8].try_into().unwrap_or([0; 8]));
    let len = u64::from_le_bytes(iov[8..].try_into().unwrap_or([0; 8]));
    let size = match note {
        NT_PRSTATUS => UserRegs::SIZE as u64,
        NT_PRFPREG => 512,
        // Kiln keeps only the FXSAVE state: no XSAVE area, which Linux
        // reports as ENODEV on a CPU without XSAVE.
        NT_X86_XSTATE => return Err(Errno::ENODEV),
        _ => return Err(Errno::EINVAL),
    };
    // Both sets are arrays of 8-byte words.
    if len % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    let n = len.min(size) as usize;
    match (note, set) {
        (NT_PRSTATUS, false) => ctx.copy_to_user(base, &pt::user_regs(t)?.to_bytes()[..n])?,
        (NT_PRFPREG, false) => ctx.copy_to_user(base, &pt::fpregs(t)?[..n])?,
        (NT_PRSTATUS, true) => {
            let mut b = pt::user_regs(t)?.to_bytes();
            ctx.copy_from_user(base, &mut b[..n])?;
            pt::set_user_regs(t, &UserRegs::from_bytes(&b))?;
        }
        _ => {
            let mut b = pt::fpregs(t)?;
            ctx.copy_from_user(base, &mut b[..n])?;
            pt::set_fpregs(t, &b)?;
        }
    }
    if !set {
        ctx.copy_to_user(iov_ptr + 8, &(n as u64).to_le_bytes())?;
    }
    Ok(0)
}

/// PTRACE_PEEKSIGINFO: copies up to `nr` queued siginfos from `off` in
/// the thread's (or with PTRACE_PEEKSIGINFO_SHARED the process's) queue;
/// returns how many.
fn peek_siginfo(ctx: &mut SyscallContext, t: &Arc<Task>, args_ptr: u64, data: u64) -> SysResult {
    let mut b = [0u8; PeekSiginfoArgs::SIZE];
    ctx.copy_from_user(args_ptr, &mut b)?;
    let args = PeekSiginfoArgs::from_bytes(&b);
    if args.flags & !PTRACE_PEEKSIGINFO_SHARED != 0 || args.nr < 0 {
        return Err(Errno::EINVAL);
    }
    let infos: alloc::vec::Vec<Siginfo> = {
        let collect = |q: &proc::signal::PendingSignals| {
            q.queued().skip(args.off.min(usize::MAX as u64) as usize).take(args.nr as usize).copied().collect()
        };
        if args.flags & PTRACE_PEEKSIGINFO_SHARED != 0 {
            collect(&t.process.signals.shared_pending.lock())
        } else {
            collect(&t.pending.lock())
        }
    };
    let mut copied = 0u64;
    for info in &infos {
        if ctx.copy_to_user(data + copied * Siginfo::SIZE as u64, &info.to_bytes()).is_err() {
            if copied == 0 {
                return Err(Errno::EFAULT);
            }
            break;
        }
        copied += 1;
    }
    Ok(copied)
}

/// PTRACE_ARCH_PRCTL(pid, addr, code): the tracee's FS/GS base.
fn arch_prctl(ctx: &mut SyscallContext, t: &Arc<Task>, addr: u64, code: u64) -> SysResult {
    match code as u32 {
        c::ARCH_GET_FS | c::ARCH_GET_GS => {
            let v = pt::fs_gs_base(t, code as u32 == c::ARCH_GET_GS)?;
            uaccess::write_u64(&ctx.vm()?, addr, v)?;
        }
        c::ARCH_SET_FS | c::ARCH_SET_GS => {
            pt::set_fs_gs_base(t, code as u32 == c::ARCH_SET_GS, addr).map_err(|_| Errno::EPERM)?;
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}
