//! Time calls: clocks, sleeps and interval timers.

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Itimerval, Timespec, Timeval, Tms};

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;
use crate::proc::timer;
use crate::sched::{sleep_until_interruptible, Interrupted};

fn read_timespec(ctx: &SyscallContext, addr: u64) -> Result<Timespec, Errno> {
    let mut b = [0u8; Timespec::SIZE];
    uaccess::read_bytes(&ctx.vm()?, addr, &mut b)?;
    Ok(Timespec::from_bytes(&b))
}

/// Nanoseconds on `clock`, or EINVAL for clocks Linux does not have.
fn clock_now(ctx: &SyscallContext, clock: u32) -> Result<u64, Errno> {
    Ok(match clock {
        c::CLOCK_REALTIME | c::CLOCK_REALTIME_COARSE | c::CLOCK_TAI => crate::clock::realtime_ns(),
        c::CLOCK_MONOTONIC | c::CLOCK_MONOTONIC_COARSE | c::CLOCK_MONOTONIC_RAW | c::CLOCK_BOOTTIME => crate::clock::now_ns(),
        c::CLOCK_PROCESS_CPUTIME_ID => ctx.process().cpu_ns(),
        c::CLOCK_THREAD_CPUTIME_ID => ctx.task.cpu_ns(),
        _ => return Err(Errno::EINVAL),
    })
}

pub fn sys_clock_gettime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ns = clock_now(ctx, a[0] as u32)?;
    uaccess::write_bytes(&ctx.vm()?, a[1], &Timespec::from_nanos(ns).to_bytes())?;
    Ok(0)
}

pub fn sys_clock_getres(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let clock = a[0] as u32;
    clock_now(ctx, clock)?;
    if a[1] != 0 {
        let res = match clock {
            c::CLOCK_REALTIME_COARSE | c::CLOCK_MONOTONIC_COARSE => 1_000_000_000 / u64::from(crate::clock::HZ),
            _ => 1,
        };
        uaccess::write_bytes(&ctx.vm()?, a[1], &Timespec::from_nanos(res).to_bytes())?;
    }
    Ok(0)
}

pub fn sys_gettimeofday(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    if a[0] != 0 {
        let tv = Timeval::from_micros(crate::clock::realtime_ns() / 1000);
        uaccess::write_bytes(&ctx.vm()?, a[0], &tv.to_bytes())?;
    }
    if a[1] != 0 {
        // struct timezone: UTC, no DST.
        uaccess::write_bytes(&ctx.vm()?, a[1], &[0u8; 8])?;
    }
    Ok(0)
}

pub fn sys_time(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let secs = crate::clock::realtime_ns() / 1_000_000_000;
    if a[0] != 0 {
        uaccess::write_u64(&ctx.vm()?, a[0], secs)?;
    }
    Ok(secs)
}

/// Sleeps until `deadline` on the monotonic clock; on a signal, writes
/// the time left to `rem` (if given) and reports the interruption.
fn sleep_until(ctx: &SyscallContext, deadline: u64, rem: u64) -> SysResult {
    match sleep_until_interruptible(deadline) {
        Ok(()) => Ok(0),
        Err(Interrupted::TimedOut) => Ok(0),
        Err(Interrupted::Signal) => {
            if rem != 0 {
                let left = deadline.saturating_sub(crate::clock::now_ns());
                uaccess::write_bytes(&ctx.vm()?, rem, &Timespec::from_nanos(left).to_bytes())?;
            }
            Err(Errno::EINTR)
        }
    }
}

pub fn sys_nanosleep(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ts = read_timespec(ctx, a[0])?;
    let ns = ts.as_nanos().ok_or(Errno::EINVAL)?;
    sleep_until(ctx, crate::clock::now_ns().saturating_add(ns), a[1])
}

pub fn sys_clock_nanosleep(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (clock, flags, req, rem) = (a[0] as u32, a[1] as u32, a[2], a[3]);
    let ts = read_timespec(ctx, req)?;
    let ns = ts.as_nanos().ok_or(Errno::EINVAL)?;
    let now_on_clock = match clock {
        c::CLOCK_REALTIME | c::CLOCK_MONOTONIC | c::CLOCK_BOOTTIME | c::CLOCK_TAI => clock_now(ctx, clock)?,
        c::CLOCK_THREAD_CPUTIME_ID => return Err(Errno::EINVAL),
        c::CLOCK_PROCESS_CPUTIME_ID => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    };
    let deadline = if flags & c::TIMER_ABSTIME != 0 {
        crate::clock::now_ns().saturating_add(ns.saturating_sub(now_on_clock))
    } else {
        crate::clock::now_ns().saturating_add(ns)
    };
    // With TIMER_ABSTIME the remaining time is not reported.
    let rem = if flags & c::TIMER_ABSTIME != 0 { 0 } else { rem };
    // clock_nanosleep returns the error number instead of setting errno;
    // the libc wrapper handles both, the raw value is -EINTR either way.
    sleep_until(ctx, deadline, rem)
}

fn write_itimer(ctx: &SyscallContext, addr: u64, value: (u64, u64)) -> Result<(), Errno> {
    if addr == 0 {
        return Ok(());
    }
    let it = Itimerval { it_interval: Timeval::from_micros(value.1 / 1000), it_value: Timeval::from_micros(value.0.div_ceil(1000)) };
    uaccess::write_bytes(&ctx.vm()?, addr, &it.to_bytes())
}

pub fn sys_getitimer(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    match a[0] as u32 {
        c::ITIMER_REAL => {
            let cur = timer::get_real(ctx.process());
            write_itimer(ctx, a[1], cur)?;
            Ok(0)
        }
        c::ITIMER_VIRTUAL | c::ITIMER_PROF => {
            log::debug!("getitimer: virtual/profiling timers are not supported");
            Err(Errno::EINVAL)
        }
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_setitimer(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let which = a[0] as u32;
    if which != c::ITIMER_REAL {
        log::debug!("setitimer: only ITIMER_REAL is supported");
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let mut b = [0u8; Itimerval::SIZE];
        uaccess::read_bytes(&ctx.vm()?, a[1], &mut b)?;
        let it = Itimerval::from_bytes(&b);
        let value = it.it_value.as_micros().ok_or(Errno::EINVAL)? * 1000;
        let interval = it.it_interval.as_micros().ok_or(Errno::EINVAL)? * 1000;
        (value, interval)
    } else {
        (0, 0)
    };
    let old = timer::set_real(ctx.process(), new.0, new.1);
    write_itimer(ctx, a[2], old)?;
    Ok(0)
}

pub fn sys_alarm(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let old = timer::set_real(ctx.process(), a[0].saturating_mul(1_000_000_000), 0);
    // Round up to whole seconds; a pending alarm never reads as 0.
    Ok(if old.0 == 0 { 0 } else { old.0.div_ceil(1_000_000_000).max(1) })
}

pub fn sys_times(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ticks = |ns: u64| (ns / 10_000_000) as i64;
    if a[0] != 0 {
        let p = ctx.process();
        let tms = Tms {
            tms_utime: ticks(p.cpu_ns()),
            tms_stime: 0,
            tms_cutime: ticks(p.children_cpu_ns.load(core::sync::atomic::Ordering::Relaxed)),
            tms_cstime: 0,
        };
        uaccess::write_bytes(&ctx.vm()?, a[0], &tms.to_bytes())?;
    }
    Ok(ticks(crate::clock::now_ns()) as u64)
}
