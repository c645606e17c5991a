//! POSIX message queue calls: mq_open, mq_unlink, mq_timedsend,
//! mq_timedreceive, mq_notify and mq_getsetattr. The queues live in
//! `ipc::mqueue`; this layer copies arguments in the order Linux checks
//! them. Timeouts are absolute CLOCK_REALTIME times.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::ipc::{MqAttr, Sigevent, MQ_PRIO_MAX};
use linux_abi::layout::Timespec;
use linux_abi::signal::{SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD};

use super::fs_io::{file, install};
use super::{SysResult, SyscallContext};
use crate::fs::OpenFile;
use crate::ipc::mqueue;
use crate::mm::uaccess;

fn name_arg(ctx: &SyscallContext, ptr: u64) -> Result<alloc::string::String, Errno> {
    uaccess::read_cstring(&ctx.vm()?, ptr, crate::fs::dentry::PATH_MAX)
}

pub fn sys_mq_open(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (name_ptr, oflag, mode, attr_ptr) = (a[0], a[1] as u32, a[2] as u32, a[3]);
    let attr = if attr_ptr != 0 {
        let mut b = [0u8; MqAttr::SIZE];
        ctx.copy_from_user(attr_ptr, &mut b)?;
        Some(MqAttr::from_bytes(&b))
    } else {
        None
    };
    let name = name_arg(ctx, name_ptr)?;
    let (ops, dentry) = mqueue::open(ctx.task, &name, oflag, mode, attr.as_ref())?;
    let flags = oflag & !(c::O_CREAT | c::O_EXCL | c::O_NOCTTY | c::O_TRUNC | c::O_CLOEXEC);
    // Message queue descriptors are always close-on-exec on Linux.
    install(ctx, OpenFile::with_dentry(ops, flags, dentry), true)
}

pub fn sys_mq_unlink(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let name = name_arg(ctx, a[0])?;
    mqueue::unlink(&name)?;
    Ok(0)
}

/// An absolute CLOCK_REALTIME timeout as a monotonic deadline; EFAULT
/// and EINVAL as Linux's prepare_timeout.
fn deadline(ctx: &SyscallContext, ptr: u64) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    let mut b = [0u8; Timespec::SIZE];
    ctx.copy_from_user(ptr, &mut b)?;
    let abs = Timespec::from_bytes(&b).as_nanos().ok_or(Errno::EINVAL)?;
    let left = abs.saturating_sub(crate::clock::realtime_ns());
    Ok(Some(crate::clock::now_ns().saturating_add(left)))
}

pub fn sys_mq_timedsend(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, ptr, len, prio) = (a[0] as i32, a[1], a[2] as usize, a[3]);
    let deadline = deadline(ctx, a[4])?;
    if (prio as u32 as u64) >= u64::from(MQ_PRIO_MAX) {
        return Err(Errno::EINVAL);
    }
    let f = file(ctx, fd)?;
    let q = mqueue::queue_of(&f.ops)?;
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    mqueue::check_send_size(&q, len)?;
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    data.resize(len, 0);
    ctx.copy_from_user(ptr, &mut data)?;
    mqueue::send(ctx.task, &q, data, prio as u32, f.nonblocking(), deadline)?;
    Ok(0)
}

pub fn sys_mq_timedreceive(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, ptr, len, prio_ptr) = (a[0] as i32, a[1], a[2] as usize, a[3]);
    let deadline = deadline(ctx, a[4])?;
    let f = file(ctx, fd)?;
    let q = mqueue::queue_of(&f.ops)?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    mqueue::check_receive_size(&q, len)?;
    let (data, prio) = mqueue::receive(&q, f.nonblocking(), deadline)?;
    // A fault here loses the message, as on Linux.
    if prio_ptr != 0 {
        ctx.copy_to_user(prio_ptr, &prio.to_le_bytes())?;
    }
    ctx.copy_to_user(ptr, &data)?;
    Ok(data.len() as u64)
}

pub fn sys_mq_notify(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, sevp) = (a[0] as i32, a[1]);
    let request = if sevp != 0 {
        let mut b = [0u8; Sigevent::SIZE];
        ctx.copy_from_user(sevp, &mut b)?;
        let ev = Sigevent::from_bytes(&b);
        match ev.notify {
            SIGEV_NONE => Some(mqueue::NotifyRequest { kind: SIGEV_NONE, signo: 0, value: ev.value }),
            SIGEV_SIGNAL => {
                // Linux's valid_signal: 0 through 64 (0 sends nothing).
                if !(0..=64).contains(&ev.signo) {
                    return Err(Errno::EINVAL);
                }
                Some(mqueue::NotifyRequest { kind: SIGEV_SIGNAL, signo: ev.signo as u32, value: ev.value })
            }
            SIGEV_THREAD => {
                // glibc passes a netlink socket in sigev_signo and a
                // cookie in sigev_value; Kiln has no netlink sockets, so
                // this fails where Linux fails for a descriptor that is
                // not one.
                let mut cookie = [0u8; 32];
                ctx.copy_from_user(ev.value, &mut cookie)?;
                let sock = file(ctx, ev.signo)?;
                let is_socket =
                    sock.ops.inode().map_or(sock.ops.mode(), |i| i.metadata().mode) & c::S_IFMT == c::S_IFSOCK;
                return Err(if is_socket { Errno::EINVAL } else { Errno::ENOTSOCK });
            }
            _ => return Err(Errno::EINVAL),
        }
    } else {
        None
    };
    let f = file(ctx, fd)?;
    let q = mqueue::queue_of(&f.ops)?;
    mqueue::notify(&q, ctx.process().pid, request)?;
    Ok(0)
}

pub fn sys_mq_getsetattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, new_ptr, old_ptr) = (a[0] as i32, a[1], a[2]);
    let new = if new_ptr != 0 {
        let mut b = [0u8; MqAttr::SIZE];
        ctx.copy_from_user(new_ptr, &mut b)?;
        let attr = MqAttr::from_bytes(&b);
        if attr.flags & !i64::from(c::O_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        Some(attr)
    } else {
        None
    };
    let f = file(ctx, fd)?;
    let q = mqueue::queue_of(&f.ops)?;
    let old = mqueue::attributes(&q, f.nonblocking());
    if let Some(new) = new {
        let flags = f.flags();
        let nonblock = if new.flags & i64::from(c::O_NONBLOCK) != 0 { c::O_NONBLOCK } else { 0 };
        f.flags.store((flags & !c::O_NONBLOCK) | nonblock, Ordering::Relaxed);
        mqueue::touch_attr(&q);
    }
    if old_ptr != 0 {
        ctx.copy_to_user(old_ptr, &old.to_bytes())?;
    }
    Ok(0)
}
