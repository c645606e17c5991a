//! poll and ppoll over the files Kiln has so far: regular files are
//! always ready; the console is writable, and readable once input waits.

use linux_abi::errno::Errno;
use linux_abi::layout::{Pollfd, Timespec};

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;
use crate::sched::Interrupted;

const POLLIN: u16 = 0x1;
const POLLOUT: u16 = 0x4;
const POLLNVAL: u16 = 0x20;

fn do_poll(ctx: &SyscallContext, fds_ptr: u64, nfds: u64, deadline: Option<u64>) -> SysResult {
    if nfds > ctx.process().rlimits.lock()[linux_abi::consts::RLIMIT_NOFILE as usize].0 {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    let mut fds = alloc::vec::Vec::new();
    fds.try_reserve_exact(nfds as usize).map_err(|_| Errno::ENOMEM)?;
    for i in 0..nfds {
        let mut b = [0u8; Pollfd::SIZE];
        uaccess::read_bytes(&vm, fds_ptr + i * Pollfd::SIZE as u64, &mut b)?;
        fds.push(Pollfd::from_bytes(&b));
    }
    loop {
        let mut ready = 0;
        for pfd in fds.iter_mut() {
            pfd.revents = 0;
            if pfd.fd < 0 {
                continue;
            }
            let revents = match ctx.process().files().lock().get(pfd.fd) {
                Err(_) => POLLNVAL,
                Ok(f) => {
                    let mut r = 0;
                    if f.ops.seekable() || crate::console::input_available() {
                        r |= POLLIN;
                    }
                    r |= POLLOUT;
                    r & (pfd.events | POLLNVAL)
                }
            };
            pfd.revents = revents;
            if revents != 0 {
                ready += 1;
            }
        }
        if ready > 0 || deadline.is_some_and(|d| crate::clock::now_ns() >= d) {
            for (i, pfd) in fds.iter().enumerate() {
                uaccess::write_bytes(&vm, fds_ptr + (i * Pollfd::SIZE) as u64, &pfd.to_bytes())?;
            }
            return Ok(ready);
        }
        // Re-check on every tick (input wakeups arrive with the next one).
        let next = crate::clock::now_ns() + 4_000_000;
        let until = deadline.map_or(next, |d| d.min(next));
        if let Err(Interrupted::Signal) = crate::sched::sleep_until_interruptible(until) {
            return Err(Errno::ERESTARTNOHAND);
        }
    }
}

pub fn sys_poll(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let timeout_ms = a[2] as i32;
    let deadline = (timeout_ms >= 0).then(|| crate::clock::now_ns() + timeout_ms as u64 * 1_000_000);
    do_poll(ctx, a[0], a[1], deadline)
}

pub fn sys_ppoll(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let deadline = if a[2] == 0 {
        None
    } else {
        let mut b = [0u8; Timespec::SIZE];
        uaccess::read_bytes(&ctx.vm()?, a[2], &mut b)?;
        let ns = Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
        Some(crate::clock::now_ns().saturating_add(ns))
    };
    if a[3] != 0 {
        // Temporarily swapping the signal mask is not implemented yet.
        return Err(Errno::EINVAL);
    }
    do_poll(ctx, a[0], a[1], deadline)
}
