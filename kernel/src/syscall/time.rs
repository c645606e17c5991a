//! Time calls: clocks, sleeps and interval timers.

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Itimerval, Rusage, Timespec, Timeval, Tms};

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;
use crate::proc::cputime::{self, CpuClock, CpuKind, CpuTarget};
use crate::proc::timer;
use crate::sched::{sleep_until_interruptible, Interrupted};

/// getrusage/wait4's struct rusage from (user, system) ns.
pub(super) fn rusage_from_times(times: (u64, u64)) -> Rusage {
    Rusage {
        ru_utime: Timeval::from_micros(times.0 / 1000),
        ru_stime: Timeval::from_micros(times.1 / 1000),
        ..Rusage::default()
    }
}

/// The CPU clock `clock` names, if it names one (see `cputime::decode_clock`).
fn cpu_clock(ctx: &SyscallContext, clock: u32, for_gettime: bool) -> Result<Option<CpuClock>, Errno> {
    cputime::decode_clock(clock as i32, ctx.task, for_gettime)
}

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
        _ => match cpu_clock(ctx, clock, true)? {
            Some(cpu) => cputime::read_clock(cpu)?,
            None => return Err(Errno::EINVAL),
        },
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
        let tick = 1_000_000_000 / u64::from(crate::clock::HZ);
        let res = match clock {
            c::CLOCK_REALTIME_COARSE | c::CLOCK_MONOTONIC_COARSE => tick,
            // The sampled CPU clocks tick; the exact one counts ns.
            _ => match cpu_clock(ctx, clock, true)? {
                Some(CpuClock { kind: CpuKind::Prof | CpuKind::Virt, .. }) => tick,
                _ => 1,
            },
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
    let absolute = flags & c::TIMER_ABSTIME != 0;
    let wall = match clock {
        c::CLOCK_REALTIME | c::CLOCK_TAI => true,
        c::CLOCK_MONOTONIC | c::CLOCK_BOOTTIME => false,
        // Linux's thread clock has no sleep at all.
        c::CLOCK_THREAD_CPUTIME_ID => return Err(Errno::EOPNOTSUPP),
        _ => {
            let cpu = cpu_clock(ctx, clock, false)?.ok_or(Errno::EINVAL)?;
            let ts = read_timespec(ctx, req)?;
            let ns = ts.as_nanos().ok_or(Errno::EINVAL)?;
            return cpu_sleep(ctx, cpu, ns, absolute, rem);
        }
    };
    let ts = read_timespec(ctx, req)?;
    let ns = ts.as_nanos().ok_or(Errno::EINVAL)?;
    // clock_nanosleep returns the error number instead of setting errno;
    // the libc wrapper handles both, the raw value is -EINTR either way.
    if absolute && wall {
        return sleep_until_wall(ns);
    }
    let deadline = if absolute { ns } else { crate::clock::now_ns().saturating_add(ns) };
    // With TIMER_ABSTIME the remaining time is not reported.
    sleep_until(ctx, deadline, if absolute { 0 } else { rem })
}

/// Sleeps until the wall clock reads `wall_ns`, waking early to look
/// again whenever the wall clock is set.
fn sleep_until_wall(wall_ns: u64) -> SysResult {
    loop {
        let seq = crate::clock::wall_clock_generation();
        let wall_now = crate::clock::realtime_ns();
        if wall_now >= wall_ns {
            return Ok(0);
        }
        let deadline = crate::clock::now_ns().saturating_add(wall_ns - wall_now);
        let changed = || crate::clock::wall_clock_generation() != seq;
        match crate::clock::WALL_CLOCK_SET.wait_until_interruptible(Some(deadline), changed) {
            Ok(()) | Err(Interrupted::TimedOut) => continue,
            Err(Interrupted::Signal) => return Err(Errno::EINTR),
        }
    }
}

/// clock_nanosleep on a process CPU clock: sleeps a tick at a time until
/// the clock (advanced by the process's other threads) reaches the time.
fn cpu_sleep(ctx: &SyscallContext, cpu: CpuClock, ns: u64, absolute: bool, rem: u64) -> SysResult {
    if let CpuTarget::Thread(tid) = cpu.target {
        // Sleeping on one's own thread clock would never end.
        if tid == ctx.task.tid() {
            return Err(Errno::EINVAL);
        }
    }
    let start = cputime::read_clock(cpu)?;
    let target = if absolute { ns } else { start.saturating_add(ns) };
    loop {
        let now = cputime::read_clock(cpu)?;
        if now >= target {
            return Ok(0);
        }
        let tick = crate::clock::now_ns().saturating_add(cputime::TICK_NS);
        if let Err(Interrupted::Signal) = sleep_until_interruptible(tick) {
            if rem != 0 && !absolute {
                let left = target.saturating_sub(cputime::read_clock(cpu).unwrap_or(target));
                uaccess::write_bytes(&ctx.vm()?, rem, &Timespec::from_nanos(left).to_bytes())?;
            }
            return Err(Errno::EINTR);
        }
        if let Some(kt) = ctx.task.kthread.get() {
            kt.set_interrupt(false);
        }
    }
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
        c::ITIMER_VIRTUAL => cputime::get_itimer(ctx.process(), 0),
        c::ITIMER_PROF => cputime::get_itimer(ctx.process(), 1),
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
        c::ITIMER_VIRTUAL => cputime::set_itimer(ctx.process(), 0, new.0, new.1),
        _ => cputime::set_itimer(ctx.process(), 1, new.0, new.1),
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
            may_set_time(ctx)?;
            set_wall_clock(ns);
            Ok(0)
        }
        c::CLOCK_PROCESS_CPUTIME_ID | c::CLOCK_THREAD_CPUTIME_ID => Err(Errno::EINVAL),
        // A CPU clock that exists cannot be set; one that does not is EINVAL.
        _ => match cpu_clock(ctx, clock, true)? {
            Some(_) => Err(Errno::EPERM),
            None => Err(Errno::EINVAL),
        },
    }
}

/// Setting the time needs CAP_SYS_TIME (Linux's security_settime64).
fn may_set_time(ctx: &SyscallContext) -> Result<(), Errno> {
    if !ctx.cred().capable(linux_abi::capability::CAP_SYS_TIME) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Sets the wall clock: sleepers and timers waiting for a wall time look
/// at it again. This is the one place that tells every keeper of wall
/// deadlines: POSIX timers move (or fire) and timerfds move or cancel.
fn set_wall_clock(ns: u64) {
    crate::clock::set_realtime_ns(ns);
    timer::clock_was_set();
    crate::fs::timerfd::clock_was_set();
}

pub fn sys_settimeofday(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let vm = ctx.vm()?;
    let tv = if a[0] != 0 {
        let mut b = [0u8; Timeval::SIZE];
        uaccess::read_bytes(&vm, a[0], &mut b)?;
        let sec = i64::from_le_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let usec = i64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8]));
        if sec < 0 || !(0..1_000_000).contains(&usec) {
            return Err(Errno::EINVAL);
        }
        Some((sec as u64).saturating_mul(1_000_000_000).saturating_add(usec as u64 * 1000))
    } else {
        None
    };
    if a[1] != 0 {
        // struct timezone: only its range is checked (the kernel keeps no
        // time zone that anything here reads).
        let mut b = [0u8; 8];
        uaccess::read_bytes(&vm, a[1], &mut b)?;
        let minutes_west = i32::from_le_bytes(b[0..4].try_into().unwrap_or([0; 4]));
        may_set_time(ctx)?;
        if !(-15 * 60..=15 * 60).contains(&minutes_west) {
            return Err(Errno::EINVAL);
        }
    }
    // Linux asks for CAP_SYS_TIME even when both pointers are NULL.
    may_set_time(ctx)?;
    if let Some(ns) = tv {
        set_wall_clock(ns);
    }
    Ok(0)
}

const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD_ID: i32 = 4;

pub fn sys_timer_create(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (clock, sevp, id_ptr) = (a[0] as u32, a[1], a[2]);
    let timer_clock = match clock {
        c::CLOCK_REALTIME | c::CLOCK_TAI => timer::TimerClock::Realtime,
        c::CLOCK_MONOTONIC | c::CLOCK_BOOTTIME => timer::TimerClock::Monotonic,
        _ => timer::TimerClock::Cpu(cpu_clock(ctx, clock, false)?.ok_or(Errno::EINVAL)?),
    };
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
                    let t = crate::proc::find_task_seen_by(ctx.process(), tid)
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
    let id = timer::create(ctx.process(), timer_clock, timer::Notify::None)?;
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
    let value = spec.it_value.as_nanos().ok_or(Errno::EINVAL)?;
    let interval = spec.it_interval.as_nanos().ok_or(Errno::EINVAL)?;
    let old = timer::settime(ctx.process(), id, value, interval, flags & c::TIMER_ABSTIME != 0)?;
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
        let (u, s) = cputime::process_times(p);
        let (cu, cs) = cputime::children_times(p);
        let tms = Tms { tms_utime: ticks(u), tms_stime: ticks(s), tms_cutime: ticks(cu), tms_cstime: ticks(cs) };
        uaccess::write_bytes(&ctx.vm()?, a[0], &tms.to_bytes())?;
    }
    Ok(ticks(crate::clock::now_ns()) as u64)
}
