//! adjtimex(2) and clock_adjtime(2): the kernel's NTP state (status,
//! error estimates, frequency and PLL offset, time constant, tick, TAI
//! offset), read by anyone and set with CAP_SYS_TIME. Kiln owns the state
//! here and reports it as Linux does, but does not discipline the clock
//! with it: a stored frequency, PLL offset or tick does not change the
//! clock's rate, an adjtime(3)-style offset is stored and reported but not
//! slewed, and the maximum error does not grow by itself. ADJ_SETOFFSET
//! is honoured: it steps the wall clock. Leap-second states are not
//! modelled (the state is TIME_OK, or TIME_ERROR while unsynchronised).

use hal::sync::SpinLock;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Timeval, Timex};

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;

/// Linux's NTP_PHASE_LIMIT: the error bound of an unsynchronised clock (us).
const PHASE_LIMIT: i64 = 16_000_000;
/// MAXFREQ (500 ppm) in the scaled-ppm unit of `freq` and `tolerance`.
const MAX_FREQ_SCALED: i64 = 500 << 16;
/// MAXTC: the largest PLL time constant.
const MAX_TIME_CONSTANT: i64 = 10;
/// USER_HZ: `tick` is microseconds per 1/100 s.
const USER_HZ: i64 = 100;

struct NtpState {
    status: i32,
    /// PLL offset in ns, kept only while STA_PLL is set.
    offset_ns: i64,
    freq: i64,
    maxerror: i64,
    esterror: i64,
    constant: i64,
    tick: i64,
    tai: i32,
    /// Outstanding adjtime(3) offset (us).
    adjust_us: i64,
}

static NTP: SpinLock<NtpState> = SpinLock::new(NtpState {
    status: c::STA_UNSYNC,
    offset_ns: 0,
    freq: 0,
    maxerror: PHASE_LIMIT,
    esterror: PHASE_LIMIT,
    constant: 2,
    tick: 1_000_000 / USER_HZ,
    tai: 0,
    adjust_us: 0,
});

/// Linux's timekeeping_validate_timex.
fn validate(ctx: &SyscallContext, tx: &Timex) -> Result<(), Errno> {
    let capable = ctx.cred().capable(linux_abi::capability::CAP_SYS_TIME);
    if tx.modes & c::ADJ_ADJTIME != 0 {
        if tx.modes & c::ADJ_OFFSET_SINGLESHOT != c::ADJ_OFFSET_SINGLESHOT {
            return Err(Errno::EINVAL);
        }
        if tx.modes & c::ADJ_OFFSET_READONLY == 0 && !capable {
            return Err(Errno::EPERM);
        }
    } else {
        if tx.modes != 0 && !capable {
            return Err(Errno::EPERM);
        }
        if tx.modes & c::ADJ_TICK != 0 && !(900_000 / USER_HZ..=1_100_000 / USER_HZ).contains(&tx.tick) {
            return Err(Errno::EINVAL);
        }
    }
    if tx.modes & c::ADJ_SETOFFSET != 0 {
        if !capable {
            return Err(Errno::EPERM);
        }
        let limit = if tx.modes & c::ADJ_NANO != 0 { 1_000_000_000 } else { 1_000_000 };
        if !(0..limit).contains(&tx.time.tv_usec) {
            return Err(Errno::EINVAL);
        }
    }
    // PPM_SCALE (65536000) times freq must not overflow.
    if tx.modes & c::ADJ_FREQUENCY != 0 && tx.freq.checked_mul(65_536_000).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Steps the wall clock by `tx.time` (ADJ_SETOFFSET).
fn inject_offset(tx: &Timex) -> Result<(), Errno> {
    let unit = if tx.modes & c::ADJ_NANO != 0 { 1 } else { 1000 };
    let delta = i128::from(tx.time.tv_sec) * 1_000_000_000 + i128::from(tx.time.tv_usec) * unit;
    let now = i128::from(crate::clock::realtime_ns());
    let new = now + delta;
    if new < 0 || new > i128::from(u64::MAX) {
        return Err(Errno::EINVAL);
    }
    super::time::set_wall_clock(new as u64);
    Ok(())
}

/// Applies `tx.modes` to the state and fills `tx` in (Linux's
/// __do_adjtimex); returns the clock state.
fn adjtimex(ctx: &SyscallContext, tx: &mut Timex) -> SysResult {
    validate(ctx, tx)?;
    if tx.modes & c::ADJ_SETOFFSET != 0 {
        inject_offset(tx)?;
    }
    let mut ntp = NTP.lock();
    if tx.modes & c::ADJ_ADJTIME != 0 {
        let saved = ntp.adjust_us;
        if tx.modes & c::ADJ_OFFSET_READONLY == 0 {
            ntp.adjust_us = tx.offset;
        }
        tx.offset = saved;
    } else {
        let modes = tx.modes;
        if modes & c::ADJ_STATUS != 0 {
            if ntp.status & c::STA_PLL != 0 && tx.status & c::STA_PLL == 0 {
                ntp.status = c::STA_UNSYNC;
                ntp.offset_ns = 0;
            }
            ntp.status = (ntp.status & c::STA_RONLY) | (tx.status & !c::STA_RONLY);
        }
        if modes & c::ADJ_NANO != 0 {
            ntp.status |= c::STA_NANO;
        }
        if modes & c::ADJ_MICRO != 0 {
            ntp.status &= !c::STA_NANO;
        }
        if modes & c::ADJ_FREQUENCY != 0 {
            ntp.freq = tx.freq.clamp(-MAX_FREQ_SCALED, MAX_FREQ_SCALED);
        }
        if modes & c::ADJ_MAXERROR != 0 {
            ntp.maxerror = tx.maxerror.clamp(0, PHASE_LIMIT);
        }
        if modes & c::ADJ_ESTERROR != 0 {
            ntp.esterror = tx.esterror.clamp(0, PHASE_LIMIT);
        }
        if modes & c::ADJ_TIMECONST != 0 {
            ntp.constant = tx.constant.clamp(0, MAX_TIME_CONSTANT);
        }
        // ADJ_TAI takes its value from `constant`, as in Linux.
        if modes & c::ADJ_TAI != 0 && tx.constant >= 0 {
            ntp.tai = tx.constant.clamp(0, i64::from(i32::MAX)) as i32;
        }
        if modes & c::ADJ_OFFSET != 0 && ntp.status & c::STA_PLL != 0 {
            let unit = if ntp.status & c::STA_NANO != 0 { 1 } else { 1000 };
            // Linux clamps the PLL offset to MAXPHASE (0.5 s).
            ntp.offset_ns = tx.offset.saturating_mul(unit).clamp(-500_000_000, 500_000_000);
        }
        if modes & c::ADJ_TICK != 0 {
            ntp.tick = tx.tick;
        }
        tx.offset = if ntp.status & c::STA_NANO != 0 { ntp.offset_ns } else { ntp.offset_ns / 1000 };
    }
    tx.freq = ntp.freq;
    tx.maxerror = ntp.maxerror;
    tx.esterror = ntp.esterror;
    tx.status = ntp.status;
    tx.constant = ntp.constant;
    tx.precision = 1;
    tx.tolerance = MAX_FREQ_SCALED;
    tx.tick = ntp.tick;
    tx.tai = ntp.tai;
    tx.pps = [0; 8];
    let now = crate::clock::realtime_ns();
    let sub = if ntp.status & c::STA_NANO != 0 { now % 1_000_000_000 } else { now % 1_000_000_000 / 1000 };
    tx.time = Timeval { tv_sec: (now / 1_000_000_000) as i64, tv_usec: sub as i64 };
    Ok(if ntp.status & (c::STA_UNSYNC | c::STA_CLOCKERR) != 0 { c::TIME_ERROR } else { c::TIME_OK })
}

/// Reads the user's struct, adjusts, and writes the whole struct back.
fn adjtimex_user(ctx: &SyscallContext, addr: u64, clock: Option<u32>) -> SysResult {
    let vm = ctx.vm()?;
    let mut b = [0u8; Timex::SIZE];
    uaccess::read_bytes(&vm, addr, &mut b)?;
    if let Some(clock) = clock {
        check_clock(clock)?;
    }
    let mut tx = Timex::from_bytes(&b);
    let state = adjtimex(ctx, &mut tx)?;
    tx.write_to(&mut b);
    uaccess::write_bytes(&vm, addr, &b)?;
    Ok(state)
}

/// clock_adjtime's clocks: only CLOCK_REALTIME can be adjusted; the other
/// clocks Linux has are EOPNOTSUPP, ids it has not (and fd clocks, which
/// Kiln has none of) EINVAL.
fn check_clock(clock: u32) -> Result<(), Errno> {
    let id = clock as i32;
    match id {
        0 => Ok(()),
        1..=9 | 11 => Err(Errno::EOPNOTSUPP),
        // CPU clocks (any pid) have no clock_adj; CLOCKFD ids name a
        // descriptor that is not a POSIX clock.
        _ if id < 0 && id & 7 != 3 => Err(Errno::EOPNOTSUPP),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_adjtimex(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    adjtimex_user(ctx, a[0], None)
}

pub fn sys_clock_adjtime(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    adjtimex_user(ctx, a[1], Some(a[0] as u32))
}
