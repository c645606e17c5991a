//! futex(2): WAIT, WAKE, their BITSET forms and (CMP_)REQUEUE, private
//! or shared. PI futexes and WAKE_OP are not implemented (ENOSYS).

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Timespec;

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;
use crate::proc::futex;

fn timeout_deadline(ctx: &SyscallContext, ptr: u64, absolute: bool, realtime: bool) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut b = [0u8; Timespec::SIZE];
    uaccess::read_bytes(&ctx.vm()?, ptr, &mut b)?;
    let ns = Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
    let now = crate::clock::now_ns();
    Ok(Some(if !absolute {
        now.saturating_add(ns)
    } else if realtime {
        now.saturating_add(ns.saturating_sub(crate::clock::realtime_ns()))
    } else {
        ns
    }))
}

pub fn sys_futex(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (uaddr, op, val, timeout, uaddr2, val3) = (a[0], a[1] as u32, a[2] as u32, a[3], a[4], a[5] as u32);
    let cmd = op & c::FUTEX_CMD_MASK;
    let realtime = op & c::FUTEX_CLOCK_REALTIME != 0;
    if realtime && cmd != c::FUTEX_WAIT_BITSET {
        return Err(Errno::ENOSYS);
    }
    let vm = ctx.vm()?;
    match cmd {
        c::FUTEX_WAIT => {
            let deadline = timeout_deadline(ctx, timeout, false, false)?;
            futex::wait(&vm, uaddr, val, deadline, u32::MAX)?;
            Ok(0)
        }
        c::FUTEX_WAIT_BITSET => {
            let deadline = timeout_deadline(ctx, timeout, true, realtime)?;
            futex::wait(&vm, uaddr, val, deadline, val3)?;
            Ok(0)
        }
        c::FUTEX_WAKE => {
            if uaddr % 4 != 0 {
                return Err(Errno::EINVAL);
            }
            Ok(u64::from(futex::wake(&vm, uaddr, val, u32::MAX)))
        }
        c::FUTEX_WAKE_BITSET => {
            if uaddr % 4 != 0 || val3 == 0 {
                return Err(Errno::EINVAL);
            }
            Ok(u64::from(futex::wake(&vm, uaddr, val, val3)))
        }
        c::FUTEX_REQUEUE => Ok(u64::from(futex::requeue(&vm, uaddr, uaddr2, val, timeout as u32, None)?)),
        c::FUTEX_CMP_REQUEUE => Ok(u64::from(futex::requeue(&vm, uaddr, uaddr2, val, timeout as u32, Some(val3))?)),
        _ => Err(Errno::ENOSYS),
    }
}
