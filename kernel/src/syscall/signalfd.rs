//! signalfd and signalfd4 (the file itself is `proc::signalfd`).

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::signal::SigSet;

use super::fs_io::install;
use super::{SysResult, SyscallContext};
use crate::fs::file::FileOps;
use crate::fs::OpenFile;
use crate::proc::signalfd::SignalFd;

fn do_signalfd(ctx: &SyscallContext, fd: i32, mask_ptr: u64, size: u64, flags: u32) -> SysResult {
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 8];
    ctx.copy_from_user(mask_ptr, &mut b)?;
    let mask = SigSet(u64::from_le_bytes(b));
    if flags & !(c::SFD_CLOEXEC | c::SFD_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    if fd == -1 {
        let ops: Arc<dyn FileOps> = SignalFd::new(mask)?;
        return install(ctx, OpenFile::new(ops, c::O_RDWR | (flags & c::SFD_NONBLOCK)), flags & c::SFD_CLOEXEC != 0);
    }
    let file = ctx.process().files().lock().get(fd)?;
    if file.is_path_only() {
        return Err(Errno::EBADF);
    }
    SignalFd::of(&file.ops).ok_or(Errno::EINVAL)?.set_mask(mask);
    Ok(fd as u64)
}

pub fn sys_signalfd(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_signalfd(ctx, a[0] as i32, a[1], a[2], 0)
}

pub fn sys_signalfd4(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_signalfd(ctx, a[0] as i32, a[1], a[2], a[3] as u32)
}
