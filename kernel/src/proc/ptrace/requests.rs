//! The tracer's requests on a traced thread: finding it, resuming it
//! (CONT, SYSCALL, SINGLESTEP, SYSEMU, LISTEN, INTERRUPT), and reading or
//! changing what its stop holds: registers as `user_regs_struct` and the
//! `struct user` words PEEKUSER/POKEUSER address (with Linux's checks),
//! debug registers, the FXSAVE image, the siginfo, the event message,
//! the syscall info and the signal mask.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use hal::user::{FpuState, GeneralRegs, RFLAGS_TF};
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::ptrace::*;
use linux_abi::signal as sig;

use super::{flag, Resume, StopKind, Tracee};
use crate::proc::{Pid, Task};

/// Finds `tid` traced by the calling thread; `stopped`: it must also sit
/// in a ptrace stop (not LISTENing). ESRCH otherwise, as Linux.
pub fn tracee_of(caller: &Arc<Task>, tid: Pid, stopped: bool) -> Result<Arc<Task>, Errno> {
    let t = crate::proc::find_task(tid).ok_or(Errno::ESRCH)?;
    {
        let inner = t.ptrace.inner.lock();
        let mine = inner.tracer.as_ref().is_some_and(|r| r.tid == caller.tid())
            && inner.tracer_process().is_some_and(|tp| Arc::ptr_eq(&tp, &caller.process));
        if !mine || inner.exit_status.is_some() {
            return Err(Errno::ESRCH);
        }
        if stopped && inner.stop.is_none() {
            return Err(Errno::ESRCH);
        }
    }
    Ok(t)
}

/// Runs `f` on the stopped tracee's state.
fn with_stopped<R>(t: &Task, f: impl FnOnce(&mut Tracee) -> R) -> Result<R, Errno> {
    let mut inner = t.ptrace.inner.lock();
    if inner.stop.is_none() {
        return Err(Errno::ESRCH);
    }
    Ok(f(&mut inner))
}

/// How PTRACE_CONT and friends resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunMode {
    Cont,
    Syscall,
    Step,
    Sysemu,
    SysemuStep,
}

/// Resumes a stopped tracee (CONT, SYSCALL, SINGLESTEP, SYSEMU).
pub fn resume(t: &Arc<Task>, mode: RunMode, signo: u32) -> Result<(), Errno> {
    let bits = flag::TRACED
        | match mode {
            RunMode::Cont => 0,
            RunMode::Syscall => flag::SYSCALL,
            RunMode::Step => flag::STEP,
            RunMode::Sysemu => flag::SYSCALL | flag::SYSEMU,
            RunMode::SysemuStep => flag::SYSCALL | flag::SYSEMU | flag::STEP,
        };
    // Out of the stop at once, as on Linux: the tracer's next request
    // finds it running even before it is scheduled.
    with_stopped(t, |inner| {
        inner.resume = Some(Resume::Run(signo));
        inner.stop = None;
    })?;
    t.ptrace.flags.store(bits, Ordering::Release);
    t.ptrace.resumed.wake_all();
    Ok(())
}

/// PTRACE_LISTEN: only from a SEIZE group-stop (PTRACE_EVENT_STOP).
pub fn listen_request(t: &Arc<Task>) -> Result<(), Errno> {
    let ok = with_stopped(t, |inner| {
        let event_stop = inner.siginfo.is_some_and(|si| si.si_code >> 8 == PTRACE_EVENT_STOP as i32);
        if !inner.seized || !event_stop {
            return false;
        }
        inner.resume = Some(Resume::Listen);
        inner.stop = None;
        inner.listening = true;
        true
    })?;
    if !ok {
        return Err(Errno::EIO);
    }
    t.ptrace.flags.store(flag::TRACED, Ordering::Release);
    t.ptrace.resumed.wake_all();
    Ok(())
}

/// PTRACE_INTERRUPT (SEIZE only): trap the running tracee, or end a
/// LISTEN with a new trap.
pub fn interrupt_request(t: &Arc<Task>) -> Result<(), Errno> {
    {
        let mut inner = t.ptrace.inner.lock();
        if !inner.seized {
            return Err(Errno::EIO);
        }
        inner.interrupt = true;
    }
    t.process.resume.wake_all();
    t.interrupt();
    Ok(())
}

/// PTRACE_SETOPTIONS.
pub fn set_options(t: &Task, options: u32) -> Result<(), Errno> {
    with_stopped(t, |inner| inner.options = options)
}

pub fn event_msg(t: &Task) -> Result<u64, Errno> {
    with_stopped(t, |inner| inner.event_msg)
}

/// The stop's siginfo (GETSIGINFO); EINVAL in a stop that has none.
pub fn siginfo(t: &Task) -> Result<Siginfo, Errno> {
    with_stopped(t, |inner| inner.siginfo)?.ok_or(Errno::EINVAL)
}

pub fn set_siginfo(t: &Task, info: Siginfo) -> Result<(), Errno> {
    with_stopped(t, |inner| match inner.siginfo.as_mut() {
        Some(si) => {
            *si = info;
            Ok(())
        }
        None => Err(Errno::EINVAL),
    })?
}

/// The registers as user_regs_struct shows them.
pub fn user_regs(t: &Task) -> Result<UserRegs, Errno> {
    with_stopped(t, |inner| to_user_regs(&inner.regs, inner.orig_rax))
}

fn to_user_regs(r: &GeneralRegs, orig_rax: u64) -> UserRegs {
    UserRegs {
        r15: r.r15,
        r14: r.r14,
        r13: r.r13,
        r12: r.r12,
        rbp: r.rbp,
        rbx: r.rbx,
        r11: r.r11,
        r10: r.r10,
        r9: r.r9,
        r8: r.r8,
        rax: r.rax,
        rcx: r.rcx,
        rdx: r.rdx,
        rsi: r.rsi,
        rdi: r.rdi,
        orig_rax,
        rip: r.rip,
        cs: USER_CS,
        eflags: r.rflags,
        rsp: r.rsp,
        ss: USER_SS,
        fs_base: r.fs_base,
        gs_base: r.gs_base,
        ds: 0,
        es: 0,
        fs: 0,
        gs: 0,
    }
}

/// The selectors a 64-bit Linux process runs with.
const USER_CS: u64 = 0x33;
const USER_SS: u64 = 0x2b;
/// Linux's TASK_SIZE_MAX: the highest user address plus one page.
const TASK_SIZE_MAX: u64 = 0x7fff_ffff_f000;
/// The flags a tracer may change (Linux's FLAG_MASK): CF PF AF ZF SF TF
/// DF OF RF AC.
const FLAG_MASK: u64 = 0x0001_0dd5 | (1 << 18);

/// Writes one register word (POKEUSER offset / 8), with Linux's checks.
fn put_reg(inner: &mut Tracee, index: usize, value: u64) -> Result<(), Errno> {
    let r = &mut inner.regs;
    match index {
        reg::R15 => r.r15 = value,
        reg::R14 => r.r14 = value,
        reg::R13 => r.r13 = value,
        reg::R12 => r.r12 = value,
        reg::RBP => r.rbp = value,
        reg::RBX => r.rbx = value,
        reg::R11 => r.r11 = value,
        reg::R10 => r.r10 = value,
        reg::R9 => r.r9 = value,
        reg::R8 => r.r8 = value,
        reg::RAX => r.rax = value,
        reg::RCX => r.rcx = value,
        reg::RDX => r.rdx = value,
        reg::RSI => r.rsi = value,
        reg::RDI => r.rdi = value,
        reg::ORIG_RAX => inner.orig_rax = value,
        reg::RIP => r.rip = value,
        reg::RSP => r.rsp = value,
        reg::EFLAGS => {
            // The registers kept here are the tracer's view, our TF
            // already hidden (`forced_tf` remembers it): a TF written is
            // the program's own, and a write without it must not put
            // ours back in the view. Put back, the next PTRACE_SINGLESTEP
            // took it for the program's and it stuck: gdb, which writes
            // the registers back while stepping, saw its `finish` after
            // `next` stop one instruction on.
            if value & RFLAGS_TF != 0 {
                inner.forced_tf = false;
            }
            let r = &mut inner.regs;
            r.rflags = (r.rflags & !FLAG_MASK) | (value & FLAG_MASK);
        }
        reg::FS_BASE | reg::GS_BASE => {
            if value >= TASK_SIZE_MAX {
                return Err(Errno::EIO);
            }
            if index == reg::FS_BASE {
                r.fs_base = value;
            } else {
                r.gs_base = value;
            }
        }
        reg::CS | reg::SS | reg::DS | reg::ES | reg::FS | reg::GS => {
            // Linux refuses a selector without RPL 3 (and a null CS/SS).
            let null_forbidden = matches!(index, reg::CS | reg::SS);
            if (value != 0 && value & 3 != 3) || (null_forbidden && value == 0) {
                return Err(Errno::EIO);
            }
            // Kiln runs every process with Linux's 64-bit selectors and
            // cannot load others: only those are accepted.
            let current = match index {
                reg::CS => USER_CS,
                reg::SS => USER_SS,
                _ => 0,
            };
            if value != current {
                return Err(Errno::EIO);
            }
        }
        _ => return Err(Errno::EIO),
    }
    Ok(())
}

/// SETREGS: every field in order, stopping at the first refused.
pub fn set_user_regs(t: &Task, regs: &UserRegs) -> Result<(), Errno> {
    with_stopped(t, |inner| {
        for (i, w) in regs.to_words().iter().enumerate() {
            put_reg(inner, i, *w)?;
        }
        Ok(())
    })?
}

/// PEEKUSER at byte offset `off` of struct user.
pub fn peek_user(t: &Task, off: u64) -> Result<u64, Errno> {
    let off = user_offset(off)?;
    with_stopped(t, |inner| {
        if off < UserRegs::SIZE {
            return to_user_regs(&inner.regs, inner.orig_rax).to_words()[off / 8];
        }
        if let Some(n) = debugreg_index(off) {
            return match n {
                6 => inner.debugreg[6] ^ DR6_RESERVED,
                _ => inner.debugreg[n],
            };
        }
        0
    })
}

/// POKEUSER at byte offset `off`: registers and debug registers.
pub fn poke_user(t: &Task, off: u64, value: u64) -> Result<(), Errno> {
    let off = user_offset(off)?;
    with_stopped(t, |inner| {
        if off < UserRegs::SIZE {
            return put_reg(inner, off / 8, value);
        }
        match debugreg_index(off) {
            Some(n) => set_debugreg(inner, n, value),
            None => Err(Errno::EIO),
        }
    })?
}

fn user_offset(off: u64) -> Result<usize, Errno> {
    if !off.is_multiple_of(8) || off >= user_area::KERNEL_SIZE as u64 {
        return Err(Errno::EIO);
    }
    Ok(off as usize)
}

fn debugreg_index(off: usize) -> Option<usize> {
    (user_area::DEBUGREG..user_area::DEBUGREG + 64).contains(&off).then(|| (off - user_area::DEBUGREG) / 8)
}

/// Debug registers as Linux's ptrace accepts them: DR0-3 user addresses,
/// DR4/5 refused, DR6 kept (positive polarity), DR7 with valid lengths and
/// types. Kiln does not arm hardware breakpoints, so DR7 may only
/// disable them: enabling one gives EIO instead of a breakpoint that
/// would never fire.
fn set_debugreg(inner: &mut Tracee, n: usize, value: u64) -> Result<(), Errno> {
    match n {
        0..=3 => {
            if value >= TASK_SIZE_MAX {
                return Err(Errno::EINVAL);
            }
            inner.debugreg[n] = value;
        }
        6 => inner.debugreg[6] = value ^ DR6_RESERVED,
        7 => {
            if value & 0xff != 0 {
                return Err(Errno::EIO);
            }
            inner.debugreg[7] = value;
        }
        _ => return Err(Errno::EIO),
    }
    Ok(())
}

/// A single-step or breakpoint debug exception: DR6 as the tracer reads
/// it afterwards (Linux keeps the single-step bit).
pub fn note_debug_exception(t: &Task, dr6: u64) {
    if t.ptrace.is_traced() {
        t.ptrace.inner.lock().debugreg[6] = dr6 & DR_STEP;
    }
}

/// GETFPREGS: the FXSAVE image.
pub fn fpregs(t: &Task) -> Result<[u8; 512], Errno> {
    with_stopped(t, |inner| *inner.fpu.unwrap_or_else(FpuState::initial).as_bytes())
}

/// SETFPREGS: EINVAL for MXCSR bits the CPU does not have, as Linux.
pub fn set_fpregs(t: &Task, image: &[u8; 512]) -> Result<(), Errno> {
    let mxcsr = u32::from_le_bytes([image[24], image[25], image[26], image[27]]);
    if mxcsr & !0xffff != 0 {
        return Err(Errno::EINVAL);
    }
    let state = FpuState::from_bytes(image);
    with_stopped(t, |inner| {
        inner.fpu = Some(state);
        inner.fpu_changed = true;
    })
}

/// PTRACE_GET_SYSCALL_INFO.
pub fn syscall_info(t: &Task) -> Result<SyscallInfo, Errno> {
    with_stopped(t, |inner| {
        let r = &inner.regs;
        let mut info = SyscallInfo {
            op: PTRACE_SYSCALL_INFO_NONE,
            arch: AUDIT_ARCH_X86_64,
            instruction_pointer: r.rip,
            stack_pointer: r.rsp,
            ..SyscallInfo::default()
        };
        // Linux tells the stops apart by the siginfo's code, which only
        // TRACESYSGOOD makes SIGTRAP|0x80, and the event message.
        let sysgood = inner.siginfo.is_some_and(|si| si.si_code == (sig::SIGTRAP | 0x80) as i32);
        let kind = inner.stop.map(|s| s.kind);
        if sysgood && kind == Some(StopKind::SyscallEntry) && inner.event_msg == PTRACE_EVENTMSG_SYSCALL_ENTRY {
            info.op = PTRACE_SYSCALL_INFO_ENTRY;
            info.nr = inner.orig_rax;
            info.args = [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9];
        } else if sysgood && kind == Some(StopKind::SyscallExit) && inner.event_msg == PTRACE_EVENTMSG_SYSCALL_EXIT {
            info.op = PTRACE_SYSCALL_INFO_EXIT;
            let rval = r.rax as i64;
            let is_error = (-4095..0).contains(&rval);
            info.rval = rval;
            info.is_error = u8::from(is_error);
        }
        info
    })
}

/// PTRACE_GETSIGMASK / SETSIGMASK on a stopped tracee.
pub fn sigmask(t: &Task) -> Result<u64, Errno> {
    with_stopped(t, |_| ())?;
    Ok(t.sigmask.lock().0)
}

pub fn set_sigmask(t: &Task, mask: u64) -> Result<(), Errno> {
    with_stopped(t, |_| ())?;
    *t.sigmask.lock() = sig::SigSet(mask).without_unblockable();
    t.attention.store(true, Ordering::Release);
    Ok(())
}

/// PTRACE_ARCH_PRCTL's FS/GS bases.
pub fn fs_gs_base(t: &Task, gs: bool) -> Result<u64, Errno> {
    with_stopped(t, |inner| if gs { inner.regs.gs_base } else { inner.regs.fs_base })
}

pub fn set_fs_gs_base(t: &Task, gs: bool, value: u64) -> Result<(), Errno> {
    with_stopped(t, |inner| put_reg(inner, if gs { reg::GS_BASE } else { reg::FS_BASE }, value))?
}
