//! syslog(2) (klogctl): the kernel log ring `logger` keeps, with Linux's
//! actions, argument checks and permission rules (CAP_SYSLOG, or
//! CAP_SYS_ADMIN as Linux still accepts, for everything but READ_ALL and
//! SIZE_BUFFER, and for those too under kernel.dmesg_restrict). The
//! console level maps onto the `log` crate's filter.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, Ordering};

use linux_abi::capability::{CAP_SYSLOG, CAP_SYS_ADMIN};
use linux_abi::errno::Errno;
use log::LevelFilter;

use super::{SysResult, SyscallContext};
use crate::logger;

const CLOSE: i32 = 0;
const OPEN: i32 = 1;
const READ: i32 = 2;
const READ_ALL: i32 = 3;
const READ_CLEAR: i32 = 4;
const CLEAR: i32 = 5;
const CONSOLE_OFF: i32 = 6;
const CONSOLE_ON: i32 = 7;
const CONSOLE_LEVEL: i32 = 8;
const SIZE_UNREAD: i32 = 9;
const SIZE_BUFFER: i32 = 10;

/// Linux's console_loglevel (messages below it are printed; 7 shows
/// info, Kiln's default), minimum_console_loglevel, and the level
/// CONSOLE_OFF saved (-1: none, LOGLEVEL_DEFAULT).
static CONSOLE_LOGLEVEL: AtomicI32 = AtomicI32::new(7);
const MINIMUM_CONSOLE_LOGLEVEL: i32 = 1;
static SAVED_CONSOLE_LOGLEVEL: AtomicI32 = AtomicI32::new(-1);

fn set_console_loglevel(level: i32) {
    CONSOLE_LOGLEVEL.store(level, Ordering::Relaxed);
    // A message of Linux level L is printed when L < level: errors are 3,
    // warnings 4, information 6, debugging 7.
    log::set_max_level(match level {
        ..=3 => LevelFilter::Off,
        4 => LevelFilter::Error,
        5 | 6 => LevelFilter::Warn,
        7 => LevelFilter::Info,
        _ => LevelFilter::Debug,
    });
}

/// The buffer arguments of the reading actions.
fn check_buffer(buf: u64, len: i32) -> Result<bool, Errno> {
    if buf == 0 || len < 0 {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(false);
    }
    if !crate::mm::uaccess::access_ok(buf, len as usize) {
        return Err(Errno::EFAULT);
    }
    Ok(true)
}

fn scratch(len: i32) -> Result<Vec<u8>, Errno> {
    let n = (len as usize).min(logger::ring_size());
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    v.resize(n, 0);
    Ok(v)
}

pub fn sys_syslog(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (kind, buf, len) = (a[0] as i32, a[1], a[2] as i32);
    let restricted = crate::fs::procfs::sys::dmesg_restrict() || (kind != READ_ALL && kind != SIZE_BUFFER);
    if restricted {
        let cred = ctx.cred();
        if !cred.capable(CAP_SYSLOG) && !cred.capable(CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
    }
    match kind {
        CLOSE | OPEN => Ok(0),
        READ => {
            if !check_buffer(buf, len)? {
                return Ok(0);
            }
            let mut out = scratch(len)?;
            loop {
                let n = logger::read_new(&mut out);
                if n > 0 {
                    ctx.copy_to_user(buf, &out[..n])?;
                    return Ok(n as u64);
                }
                // Nothing new: wait for more, as Linux's log_wait does
                // (the logger wakes no one, so look again every 50 ms).
                let deadline = hal::time::monotonic_ns() + 50_000_000;
                if crate::sched::sleep_until_interruptible(deadline).is_err() {
                    return Err(Errno::ERESTARTSYS);
                }
            }
        }
        READ_ALL | READ_CLEAR => {
            if !check_buffer(buf, len)? {
                return Ok(0);
            }
            let mut out = scratch(len)?;
            let n = logger::read_all(&mut out, kind == READ_CLEAR);
            ctx.copy_to_user(buf, &out[..n])?;
            Ok(n as u64)
        }
        CLEAR => {
            logger::clear();
            Ok(0)
        }
        CONSOLE_OFF => {
            if SAVED_CONSOLE_LOGLEVEL.load(Ordering::Relaxed) == -1 {
                SAVED_CONSOLE_LOGLEVEL.store(CONSOLE_LOGLEVEL.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            set_console_loglevel(MINIMUM_CONSOLE_LOGLEVEL);
            Ok(0)
        }
        CONSOLE_ON => {
            let saved = SAVED_CONSOLE_LOGLEVEL.swap(-1, Ordering::Relaxed);
            if saved != -1 {
                set_console_loglevel(saved);
            }
            Ok(0)
        }
        CONSOLE_LEVEL => {
            if !(1..=8).contains(&len) {
                return Err(Errno::EINVAL);
            }
            set_console_loglevel(len.max(MINIMUM_CONSOLE_LOGLEVEL));
            SAVED_CONSOLE_LOGLEVEL.store(-1, Ordering::Relaxed);
            Ok(0)
        }
        SIZE_UNREAD => Ok(logger::unread() as u64),
        SIZE_BUFFER => Ok(logger::ring_size() as u64),
        _ => Err(Errno::EINVAL),
    }
}
