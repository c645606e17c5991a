//! seccomp(2) and prctl(PR_SET_SECCOMP / PR_GET_SECCOMP): argument
//! checks in Linux's order (`do_seccomp`), the copy of the filter program
//! from user memory and its validation; the modes and filters themselves
//! are `proc::seccomp`'s.

use alloc::vec::Vec;

use kiln_util::seccomp::{check_filter, Action, Insn};
use linux_abi::capability::CAP_SYS_ADMIN;
use linux_abi::errno::Errno;
use linux_abi::seccomp::*;

use super::{SysResult, SyscallContext};
use crate::proc::seccomp as state;

/// The filter flags Kiln knows. SECCOMP_FILTER_FLAG_NEW_LISTENER (and
/// WAIT_KILLABLE_RECV, which needs it) are left out: without user
/// notification they are refused as unknown flags, as by a Linux before 5.0.
const KNOWN_FLAGS: u32 = SECCOMP_FILTER_FLAG_TSYNC
    | SECCOMP_FILTER_FLAG_LOG
    | SECCOMP_FILTER_FLAG_SPEC_ALLOW
    | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;

pub fn sys_seccomp(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_seccomp(ctx, a[0] as u32, a[1] as u32, a[2])
}

fn do_seccomp(ctx: &mut SyscallContext, op: u32, flags: u32, uargs: u64) -> SysResult {
    match op {
        SECCOMP_SET_MODE_STRICT => {
            if flags != 0 || uargs != 0 {
                return Err(Errno::EINVAL);
            }
            state::set_strict(ctx.task).map(|()| 0)
        }
        SECCOMP_SET_MODE_FILTER => set_filter(ctx, flags, uargs),
        SECCOMP_GET_ACTION_AVAIL => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            let mut action = [0u8; 4];
            ctx.copy_from_user(uargs, &mut action)?;
            if Action::available(u32::from_le_bytes(action)) {
                Ok(0)
            } else {
                Err(Errno::EOPNOTSUPP)
            }
        }
        SECCOMP_GET_NOTIF_SIZES => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            let mut sizes = [0u8; 6];
            for (i, size) in [SECCOMP_NOTIF_SIZE, SECCOMP_NOTIF_RESP_SIZE, SECCOMP_DATA_SIZE].into_iter().enumerate() {
                sizes[2 * i..2 * i + 2].copy_from_slice(&(size as u16).to_le_bytes());
            }
            ctx.copy_to_user(uargs, &sizes)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn set_filter(ctx: &mut SyscallContext, flags: u32, uargs: u64) -> SysResult {
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let prog = copy_filter(ctx, uargs)?;
    state::attach(ctx.task, prog, flags)
}

/// Linux's seccomp_prepare_user_filter: the `struct sock_fprog`, its
/// length, the privilege to filter, the instructions, their checks.
fn copy_filter(ctx: &SyscallContext, uargs: u64) -> Result<Vec<Insn>, Errno> {
    let mut fprog = [0u8; SOCK_FPROG_SIZE];
    ctx.copy_from_user(uargs, &mut fprog)?;
    let len = usize::from(u16::from_le_bytes([fprog[0], fprog[1]]));
    let mut ptr = [0u8; 8];
    ptr.copy_from_slice(&fprog[SOCK_FPROG_FILTER..SOCK_FPROG_FILTER + 8]);
    let filter = u64::from_le_bytes(ptr);
    if len == 0 || len > BPF_MAXINSNS {
        return Err(Errno::EINVAL);
    }
    // Without no_new_privs a filter could fool a set-id program it execs
    // into running with privilege and a call failing; only CAP_SYS_ADMIN
    // may take that risk.
    let cred = ctx.cred();
    if !cred.no_new_privs && !cred.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EACCES);
    }
    let mut raw = Vec::new();
    raw.try_reserve_exact(len * SOCK_FILTER_SIZE).map_err(|_| Errno::ENOMEM)?;
    raw.resize(len * SOCK_FILTER_SIZE, 0u8);
    ctx.copy_from_user(filter, &mut raw)?;
    let mut prog = Vec::new();
    prog.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    for chunk in raw.chunks_exact(SOCK_FILTER_SIZE) {
        let mut b = [0u8; SOCK_FILTER_SIZE];
        b.copy_from_slice(chunk);
        prog.push(Insn::from_bytes(b));
    }
    let mut masks: Vec<u16> = Vec::new();
    masks.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    masks.resize(len, 0);
    check_filter(&prog, &mut masks).map_err(|why| {
        log::debug!("seccomp: filter refused: {why:?}");
        Errno::EINVAL
    })?;
    Ok(prog)
}

/// prctl(PR_SET_SECCOMP, mode, filter): strict mode ignores the filter
/// argument; prctl has no flags.
pub fn prctl_set(ctx: &mut SyscallContext, mode: u64, filter: u64) -> SysResult {
    match mode {
        m if m == u64::from(SECCOMP_MODE_STRICT) => do_seccomp(ctx, SECCOMP_SET_MODE_STRICT, 0, 0),
        m if m == u64::from(SECCOMP_MODE_FILTER) => do_seccomp(ctx, SECCOMP_SET_MODE_FILTER, 0, filter),
        _ => Err(Errno::EINVAL),
    }
}

/// prctl(PR_GET_SECCOMP): the mode (a thread in strict mode never gets here).
pub fn prctl_get(ctx: &SyscallContext) -> SysResult {
    Ok(u64::from(ctx.task.seccomp.lock().mode()))
}
