//! Syscall user dispatch (`prctl(PR_SET_SYSCALL_USER_DISPATCH)`), as
//! Linux 6.1 has it: a thread names one address range its system calls
//! are always allowed from and a selector byte in its memory; a system
//! call from anywhere else while the byte says BLOCK is not executed and
//! raises SIGSYS (SYS_USER_DISPATCH, with the call's address and number)
//! instead, for the program to emulate it.
//!
//! The setting belongs to one thread; fork, clone and execve start
//! without it. The syscall path tests one word (`Task::syscall_work`)
//! before looking further.

use alloc::sync::Arc;

use hal::user::UserContext;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use super::signal::{force_fault_signal, group_exit};
use super::task::SYSCALL_WORK_USER_DISPATCH;
use super::{ExitKind, Task};
use crate::mm::uaccess;

#[derive(Clone, Copy, Debug)]
pub struct UserDispatch {
    /// System calls from [offset, offset + len) always run.
    offset: u64,
    len: u64,
    /// The selector byte's address (0: every call outside the range is
    /// intercepted).
    selector: u64,
}

/// prctl(PR_SET_SYSCALL_USER_DISPATCH, mode, offset, len, selector).
pub fn configure(task: &Task, mode: u64, offset: u64, len: u64, selector: u64) -> Result<(), Errno> {
    let setting = match mode {
        c::PR_SYS_DISPATCH_OFF => {
            if offset != 0 || len != 0 || selector != 0 {
                return Err(Errno::EINVAL);
            }
            None
        }
        c::PR_SYS_DISPATCH_ON => {
            if offset != 0 && offset.wrapping_add(len) <= offset {
                return Err(Errno::EINVAL);
            }
            if selector != 0 && !uaccess::access_ok(selector, 1) {
                return Err(Errno::EFAULT);
            }
            Some(UserDispatch { offset, len, selector })
        }
        _ => return Err(Errno::EINVAL),
    };
    *task.user_dispatch.lock() = setting;
    task.set_syscall_work(SYSCALL_WORK_USER_DISPATCH, setting.is_some());
    Ok(())
}

/// Drops the setting (execve).
pub fn clear(task: &Task) {
    *task.user_dispatch.lock() = None;
    task.set_syscall_work(SYSCALL_WORK_USER_DISPATCH, false);
}

/// Kills the process with `signo` whatever its disposition.
fn fatal(task: &Arc<Task>, signo: u32) {
    group_exit(&task.process, ExitKind::Signaled { sig: signo, core: false });
}

/// Decides whether the system call `nr` the thread just made runs. When
/// it does not, the thread has been sent SIGSYS (or killed), and the
/// registers stay as the call left them (rax holds the number).
pub fn intercepts(task: &Arc<Task>, uctx: &UserContext, nr: u64) -> bool {
    let Some(d) = *task.user_dispatch.lock() else { return false };
    let rip = uctx.regs.rip;
    if rip.wrapping_sub(d.offset) < d.len {
        return false;
    }
    if d.selector != 0 {
        let mut state = [0u8; 1];
        let read = task.process.vm().and_then(|vm| uaccess::read_bytes(&vm, d.selector, &mut state));
        if read.is_err() {
            fatal(task, sig::SIGSEGV);
            return true;
        }
        match state[0] {
            c::SYSCALL_DISPATCH_FILTER_ALLOW => return false,
            c::SYSCALL_DISPATCH_FILTER_BLOCK => {}
            _ => {
                fatal(task, sig::SIGSYS);
                return true;
            }
        }
    }
    force_fault_signal(task, Siginfo::sys(sig::SYS_USER_DISPATCH, rip, nr as i32, c::AUDIT_ARCH_X86_64));
    true
}
