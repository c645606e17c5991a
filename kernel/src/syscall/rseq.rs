//! rseq(2): registering and unregistering a thread's restartable
//! sequence area. What the kernel then does with it is `proc::rseq`.

use super::{SysResult, SyscallContext};

pub fn sys_rseq(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    crate::proc::rseq::rseq(ctx.task, a[0], a[1] as u32, a[2] as i32, a[3] as u32)?;
    Ok(0)
}
