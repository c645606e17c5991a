//! eventfd and eventfd2 (the counter itself is `fs::eventfd`).

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::fs_io::install;
use super::{SysResult, SyscallContext};
use crate::fs::eventfd::EventFd;
use crate::fs::file::FileOps;
use crate::fs::OpenFile;

fn create(ctx: &SyscallContext, initial: u32, flags: u32) -> SysResult {
    if flags & !(c::EFD_SEMAPHORE | c::EFD_CLOEXEC | c::EFD_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let ops: Arc<dyn FileOps> = EventFd::new(u64::from(initial), flags & c::EFD_SEMAPHORE != 0)?;
    install(ctx, OpenFile::new(ops, c::O_RDWR | (flags & c::EFD_NONBLOCK)), flags & c::EFD_CLOEXEC != 0)
}

pub fn sys_eventfd(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create(ctx, a[0] as u32, 0)
}

pub fn sys_eventfd2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    create(ctx, a[0] as u32, a[1] as u32)
}
