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
        c::CLOCK_MONOTONIC | c::CLOCK_MONOTONIC_COARSE | c::CLOCK_MONOTONIC_RAW | c::CLOCK_BOOTTIME => {
            crate::clock::now_ns()
        }
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
        // Sleeping on CPU-time clocks is not supported (Linux refuses the
        // thread clock the same way).
        c::CLOCK_THREAD_CPUTIME_ID | c::CLOCK_PROCESS_CPUTIME_ID => return Err(Errno::EOPNOTSUPP),
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
    let it = Itimerval {
        it_interval: Timeval::from_micros(value.1 / 1000),
        it_value: Timeval::from_micros(value.0.div_ceil(1000)),
    };
    uaccess::write_bytes(&ctx.vm()?, addr, &it.to_bytes())
}

pub fn sys_getitimer(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let cur = match a[0] as u32 {
        c::ITIMER_REAL => timer::get_real(ctx.process()),
        c::ITIMER_VIRTUAL => timer::get_cpu(ctx.process(), 0),
        c::ITIMER_PROF => timer::get_cpu(ctx.process(), 1),
        _ => return Err(Errno::EINVAL),
    };
    write_itimer(ctx, a[1], cur)?;
    Ok(0)
}

pub fn sys_setitimer(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let which = a[0] as u32;
    if !matches!(which, c::ITIMER_REAL | c::ITIMER_VIRTUAL | c::ITIMER_PROF) {
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
    let old = match which {
        c::ITIMER_REAL => timer::set_real(ctx.process(), new.0, new.1),
        c::ITIMER_VIRTUAL => timer::set_cpu(ctx.process(), 0, new.0, new.1),
        _ => timer::set_cpu(ctx.process(), 1, new.0, new.1),
    };
    write_itimer(ctx, a[2], old)?;
    Ok(0)
}

pub fn sys_clock_settime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let clock = a[0] as u32;
    let ts = read_timespec(ctx, a[1])?;
    let ns = ts.as_nanos().ok_or(Errno::EINVAL)?;
    match clock {
        c::CLOCK_REALTIME => {
            if !ctx.cred().capable(linux_abi::capability::CAP_SYS_TIME) {
                return Err(Errno::EPERM);
            }
            crate::clock::set_realtime_ns(ns);
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD_ID: i32 = 4;

pub fn sys_timer_create(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (clock, sevp, id_ptr) = (a[0] as u32, a[1], a[2]);
    if !matches!(clock, c::CLOCK_REALTIME | c::CLOCK_MONOTONIC | c::CLOCK_BOOTTIME) {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    let notify = if sevp == 0 {
        None
    } else {
        let mut b = [0u8; 64];
        uaccess::read_bytes(&vm, sevp, &mut b[..20])?;
        let value = u64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let signo = i32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4])) as u32;
        let kind = i32::from_le_bytes(b[12..16].try_into().unwrap_or([0; 4]));
        let tid = i32::from_le_bytes(b[16..20].try_into().unwrap_or([0; 4]));
        Some(match kind {
            SIGEV_NONE => timer::Notify::None,
            SIGEV_SIGNAL | SIGEV_THREAD_ID => {
                if !linux_abi::signal::is_valid(signo) {
                    return Err(Errno::EINVAL);
                }
                let tid = if kind == SIGEV_THREAD_ID {
                    let t = crate::proc::find_task(tid)
                        .filter(|t| t.process.pid == ctx.process().pid)
                        .ok_or(Errno::EINVAL)?;
                    Some(t.tid())
                } else {
                    None
                };
                timer::Notify::Signal { signo, value, tid }
            }
            _ => return Err(Errno::EINVAL),
        })
    };
    let id = timer::create(ctx.process(), timer::Notify::None)?;
    let notify =
        notify.unwrap_or(timer::Notify::Signal { signo: linux_abi::signal::SIGALRM, value: id as u64, tid: None });
    timer::set_notify(ctx.process(), id, notify);
    if let Err(e) = uaccess::write_u32(&vm, id_ptr, id as u32) {
        let _ = timer::delete(ctx.process(), id);
        return Err(e);
    }
    Ok(0)
}

fn write_itimerspec(ctx: &SyscallContext, addr: u64, value: (u64, u64)) -> Result<(), Errno> {
    let it = linux_abi::layout::Itimerspec {
        it_interval: Timespec::from_nanos(value.1),
        it_value: Timespec::from_nanos(value.0),
    };
    uaccess::write_bytes(&ctx.vm()?, addr, &it.to_bytes())
}

pub fn sys_timer_settime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (id, flags, new_ptr, old_ptr) = (a[0] as i32, a[1] as u32, a[2], a[3]);
    let mut b = [0u8; 32];
    uaccess::read_bytes(&ctx.vm()?, new_ptr, &mut b)?;
    let spec = linux_abi::layout::Itimerspec::from_bytes(&b);
    let mut value = spec.it_value.as_nanos().ok_or(Errno::EINVAL)?;
    let interval = spec.it_interval.as_nanos().ok_or(Errno::EINVAL)?;
    if flags & c::TIMER_ABSTIME != 0 && value != 0 {
        value = value.saturating_sub(crate::clock::now_ns()).max(1);
    }
    let old = timer::settime(ctx.process(), id, value, interval)?;
    if old_ptr != 0 {
        write_itimerspec(ctx, old_ptr, old)?;
    }
    Ok(0)
}

pub fn sys_timer_gettime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (left, interval, _) = timer::gettime(ctx.process(), a[0] as i32)?;
    write_itimerspec(ctx, a[1], (left, interval))?;
    Ok(0)
}

pub fn sys_timer_getoverrun(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (_, _, overrun) = timer::gettime(ctx.process(), a[0] as i32)?;
    Ok(overrun as u64)
}

pub fn sys_timer_delete(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    timer::delete(ctx.process(), a[0] as i32)?;
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
