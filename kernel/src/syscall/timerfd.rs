//! timerfd_create, timerfd_settime and timerfd_gettime (the timer itself
//! is `fs::timerfd`).

use alloc::sync::Arc;

use linux_abi::capability::CAP_WAKE_ALARM;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Itimerspec, Timespec};

use super::fs_io::install;
use super::{SysResult, SyscallContext};
use crate::fs::file::FileOps;
use crate::fs::timerfd::{TimerClock, TimerFd};
use crate::fs::OpenFile;

pub fn sys_timerfd_create(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (clock, flags) = (a[0] as u32, a[1] as u32);
    if flags & !(c::TFD_CLOEXEC | c::TFD_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let alarm = clock == c::CLOCK_REALTIME_ALARM || clock == c::CLOCK_BOOTTIME_ALARM;
    let clock = TimerClock::from_id(clock)?;
    // Setting an alarm that could wake the machine is a privilege.
    if alarm && !ctx.cred().capable(CAP_WAKE_ALARM) {
        return Err(Errno::EPERM);
    }
    let ops: Arc<dyn FileOps> = TimerFd::new(clock)?;
    install(ctx, OpenFile::new(ops, c::O_RDWR | (flags & c::TFD_NONBLOCK)), flags & c::TFD_CLOEXEC != 0)
}

fn with_timerfd<T>(ctx: &SyscallContext, fd: i32, f: impl FnOnce(&TimerFd) -> Result<T, Errno>) -> Result<T, Errno> {
    let file = ctx.process().files().lock().get(fd)?;
    if file.is_path_only() {
        return Err(Errno::EBADF);
    }
    let timer = TimerFd::of(&file.ops).ok_or(Errno::EINVAL)?;
    f(timer)
}

fn write_setting(ctx: &SyscallContext, ptr: u64, (value, interval): (u64, u64)) -> Result<(), Errno> {
    let its = Itimerspec { it_interval: Timespec::from_nanos(interval), it_value: Timespec::from_nanos(value) };
    ctx.copy_to_user(ptr, &its.to_bytes())
}

pub fn sys_timerfd_settime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, flags, new_ptr, old_ptr) = (a[0] as i32, a[1] as u32, a[2], a[3]);
    let mut b = [0u8; Itimerspec::SIZE];
    ctx.copy_from_user(new_ptr, &mut b)?;
    let new = Itimerspec::from_bytes(&b);
    if flags & !(c::TFD_TIMER_ABSTIME | c::TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let value = new.it_value.as_nanos().ok_or(Errno::EINVAL)?;
    let interval = new.it_interval.as_nanos().ok_or(Errno::EINVAL)?;
    let old = with_timerfd(ctx, fd, |t| t.settime(flags, (value, interval)))?;
    if old_ptr != 0 {
        write_setting(ctx, old_ptr, old)?;
    }
    Ok(0)
}

pub fn sys_timerfd_gettime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let current = with_timerfd(ctx, a[0] as i32, |t| Ok(t.gettime()))?;
    write_setting(ctx, a[1], current)?;
    Ok(0)
}
