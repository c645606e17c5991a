//! Socket data calls: sendto/recvfrom, sendmsg/recvmsg (iovecs, names,
//! control messages), sendmmsg/recvmmsg, and read/write/readv/writev on
//! sockets. Data moves straight between the caller's buffers and the
//! protocol ([`UserIov`]); control messages are decoded and encoded here
//! with `linux_abi::socket`'s rules: SCM_RIGHTS descriptors are looked up
//! in the sender's table and installed in the receiver's, SCM_CREDENTIALS
//! are checked against the sender.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::capability::{CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN};
use linux_abi::errno::Errno;
use linux_abi::layout::{Iovec, Timespec};
use linux_abi::socket::{self as s, CmsgIter, CmsgWriter, Msghdr};

use super::socket::{addr_arg, names, put_addr, sock, socket_file};
use super::{SysResult, SyscallContext};
use crate::fs::OpenFile;
use crate::mm::uaccess;
use crate::net::{Control, MsgSink, MsgSource, Received, RecvArgs, SendArgs, Socket};

/// Largest single transfer (Linux's MAX_RW_COUNT).
const MAX_RW: usize = 0x7fff_f000;
/// `net.core.optmem_max`: the most control data a send may carry.
const OPTMEM_MAX: usize = 131_072;

/// The caller's buffers, walked in order; one buffer needs no allocation.
pub struct UserIov<'a, 'b> {
    ctx: &'a SyscallContext<'b>,
    one: (u64, usize),
    many: Vec<(u64, usize)>,
    idx: usize,
    off: usize,
    left: usize,
}

impl<'a, 'b> UserIov<'a, 'b> {
    /// One buffer (send, recv, read, write): EFAULT unless it lies in
    /// user space (`import_single_range`).
    pub fn single(ctx: &'a SyscallContext<'b>, base: u64, len: usize) -> Result<Self, Errno> {
        let len = len.min(MAX_RW);
        if !uaccess::access_ok(base, len) {
            return Err(Errno::EFAULT);
        }
        Ok(UserIov { ctx, one: (base, len), many: Vec::new(), idx: 0, off: 0, left: len })
    }

    /// `import_iovec`: `count` iovecs at `ptr` (a msghdr's: more than
    /// UIO_MAXIOV is EMSGSIZE).
    pub fn vector(ctx: &'a SyscallContext<'b>, ptr: u64, count: u64) -> Result<Self, Errno> {
        if count > Iovec::MAX as u64 {
            return Err(Errno::EMSGSIZE);
        }
        let mut raw = Vec::new();
        raw.try_reserve_exact(count as usize * Iovec::SIZE).map_err(|_| Errno::ENOMEM)?;
        raw.resize(count as usize * Iovec::SIZE, 0);
        ctx.copy_from_user(ptr, &mut raw)?;
        let mut list = Vec::new();
        list.try_reserve_exact(count as usize).map_err(|_| Errno::ENOMEM)?;
        for chunk in raw.chunks_exact(Iovec::SIZE) {
            list.push(Iovec::from_slice(chunk).ok_or(Errno::EFAULT)?);
        }
        Self::from_list(ctx, &list)
    }

    /// Iovecs already read from user memory (readv and writev).
    pub fn from_list(ctx: &'a SyscallContext<'b>, list: &[Iovec]) -> Result<Self, Errno> {
        let mut many = Vec::new();
        many.try_reserve_exact(list.len()).map_err(|_| Errno::ENOMEM)?;
        let mut total = 0usize;
        for iov in list {
            if (iov.iov_len as i64) < 0 {
                return Err(Errno::EINVAL);
            }
            let len = (iov.iov_len as usize).min(MAX_RW - total);
            if !uaccess::access_ok(iov.iov_base, len) {
                return Err(Errno::EFAULT);
            }
            total += len;
            many.push((iov.iov_base, len));
        }
        Ok(UserIov { ctx, one: (0, 0), many, idx: 0, off: 0, left: total })
    }

    fn segment(&self, i: usize) -> Option<(u64, usize)> {
        if self.many.is_empty() {
            (i == 0).then_some(self.one)
        } else {
            self.many.get(i).copied()
        }
    }

    /// Walks the next `n` bytes as (address, length) pieces.
    fn walk(&mut self, n: usize, mut f: impl FnMut(u64, usize, usize) -> Result<(), Errno>) -> Result<(), Errno> {
        let mut done = 0;
        while done < n {
            let (base, len) = self.segment(self.idx).ok_or(Errno::EFAULT)?;
            let take = (len - self.off).min(n - done);
            if take > 0 {
                f(base + self.off as u64, done, take)?;
            }
            done += take;
            self.off += take;
            self.left -= take;
            if self.off == len {
                self.idx += 1;
                self.off = 0;
            }
        }
        Ok(())
    }
}

impl MsgSource for UserIov<'_, '_> {
    fn remaining(&self) -> usize {
        self.left
    }

    fn read(&mut self, dst: &mut [u8]) -> Result<(), Errno> {
        let ctx = self.ctx;
        self.walk(dst.len(), |addr, at, len| ctx.copy_from_user(addr, &mut dst[at..at + len]))
    }
}

impl MsgSink for UserIov<'_, '_> {
    fn remaining(&self) -> usize {
        self.left
    }

    fn write(&mut self, src: &[u8]) -> Result<(), Errno> {
        let ctx = self.ctx;
        self.walk(src.len(), |addr, at, len| ctx.copy_to_user(addr, &src[at..at + len]))
    }
}

/// `__scm_send`: the control messages of a send, checked and resolved.
fn parse_control(ctx: &SyscallContext, sock: &Socket, ptr: u64, len: u64) -> Result<Control, Errno> {
    let mut control = Control::default();
    if len == 0 {
        return Ok(control);
    }
    if len > i32::MAX as u64 || len as usize > OPTMEM_MAX {
        return Err(Errno::ENOBUFS);
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(len as usize).map_err(|_| Errno::ENOBUFS)?;
    buf.resize(len as usize, 0);
    ctx.copy_from_user(ptr, &mut buf)?;
    for cmsg in CmsgIter::new(&buf) {
        let cmsg = cmsg.map_err(|()| Errno::EINVAL)?;
        if cmsg.level != s::SOL_SOCKET {
            continue;
        }
        match cmsg.kind {
            s::SCM_RIGHTS => {
                if sock.proto().family() != s::AF_UNIX {
                    return Err(Errno::EINVAL);
                }
                let n = cmsg.data.len() / 4;
                if n == 0 {
                    continue;
                }
                if n > s::SCM_MAX_FD || control.rights.len() + n > s::SCM_MAX_FD {
                    return Err(Errno::EINVAL);
                }
                control.rights.try_reserve(n).map_err(|_| Errno::ENOMEM)?;
                let files = ctx.process().files().lock();
                for fd in cmsg.data.chunks_exact(4) {
                    let fd = i32::from_le_bytes([fd[0], fd[1], fd[2], fd[3]]);
                    control.rights.push(files.get(fd)?);
                }
            }
            s::SCM_CREDENTIALS => {
                if cmsg.data.len() != s::Ucred::SIZE {
                    return Err(Errno::EINVAL);
                }
                let mut b = [0u8; s::Ucred::SIZE];
                b.copy_from_slice(cmsg.data);
                control.cred = Some(check_cred(ctx, s::Ucred::from_bytes(&b))?);
            }
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(control)
}

/// `scm_check_creds` and the pid lookup, in Linux's order: ids that are
/// no ids (-1) are EINVAL; a sender may claim another pid only with
/// CAP_SYS_ADMIN, a uid other than its real, effective or saved one only
/// with CAP_SETUID, and such a gid only with CAP_SETGID (EPERM); then the
/// pid must exist (ESRCH).
fn check_cred(ctx: &SyscallContext, claim: s::Ucred) -> Result<s::Ucred, Errno> {
    if claim.uid == u32::MAX || claim.gid == u32::MAX {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    // The claimed pid is the sender's pid namespace's; the message keeps
    // the global one, which the receiver sees in its own.
    let own_pid = ctx.process().pid_ns.local_or_zero(ctx.process().pid);
    let pid_ok = claim.pid == own_pid || cred.capable(CAP_SYS_ADMIN);
    let uid_ok = [cred.uid, cred.euid, cred.suid].contains(&claim.uid) || cred.capable(CAP_SETUID);
    let gid_ok = [cred.gid, cred.egid, cred.sgid].contains(&claim.gid) || cred.capable(CAP_SETGID);
    if !(pid_ok && uid_ok && gid_ok) {
        return Err(Errno::EPERM);
    }
    if claim.pid == own_pid {
        return Ok(s::Ucred { pid: ctx.process().pid, ..claim });
    }
    let t = crate::proc::find_task_seen_by(ctx.process(), claim.pid).ok_or(Errno::ESRCH)?;
    Ok(s::Ucred { pid: t.tid(), ..claim })
}

/// Sends from `data`; `addr` is sendto's or msg_name.
fn send_common(
    ctx: &SyscallContext,
    f: &OpenFile,
    data: &mut UserIov,
    addr: Option<&[u8]>,
    flags: u32,
    control: Control,
) -> Result<usize, Errno> {
    let sock = sock(f);
    let names = addr.map(|_| names(ctx));
    let args = SendArgs { addr, flags, control, nonblock: f.nonblocking(), names: names.as_ref() };
    sock.proto().send(data, args)
}

pub fn sys_sendto(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ctx = &*ctx;
    let mut data = UserIov::single(ctx, a[1], a[2] as usize)?;
    let f = socket_file(ctx, a[0] as i32)?;
    let addr = if a[4] != 0 { Some(addr_arg(ctx, a[4], a[5])?) } else { None };
    let addr = addr.as_ref().map(|x| x.as_bytes()).filter(|x| !x.is_empty());
    Ok(send_common(ctx, &f, &mut data, addr, a[3] as u32, Control::default())? as u64)
}

pub fn sys_recvfrom(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let ctx = &*ctx;
    let mut data = UserIov::single(ctx, a[1], a[2] as usize)?;
    let f = socket_file(ctx, a[0] as i32)?;
    let args = RecvArgs { flags: a[3] as u32, nonblock: f.nonblocking(), want_addr: a[4] != 0 };
    let r = sock(&f).proto().recv(&mut data, &args)?;
    if a[4] != 0 {
        put_addr(ctx, &r.addr.unwrap_or_else(crate::net::AddrBuf::empty), a[4], a[5])?;
    }
    Ok(r.len as u64)
}

fn read_msghdr(ctx: &SyscallContext, ptr: u64) -> Result<Msghdr, Errno> {
    let mut b = [0u8; Msghdr::SIZE];
    ctx.copy_from_user(ptr, &mut b)?;
    Ok(Msghdr::from_bytes(&b))
}

/// One sendmsg: the bytes sent, and whether all of the message went.
fn sendmsg_one(ctx: &SyscallContext, f: &OpenFile, hdr_ptr: u64, flags: u32) -> Result<(usize, bool), Errno> {
    let h = read_msghdr(ctx, hdr_ptr)?;
    let addr = if h.msg_name != 0 && h.msg_namelen != 0 {
        Some(addr_arg(ctx, h.msg_name, h.msg_namelen as u64)?)
    } else {
        None
    };
    let mut data = UserIov::vector(ctx, h.msg_iov, h.msg_iovlen)?;
    let control = parse_control(ctx, sock(f), h.msg_control, h.msg_controllen)?;
    let n = send_common(ctx, f, &mut data, addr.as_ref().map(|x| x.as_bytes()), flags, control)?;
    Ok((n, data.left == 0))
}

/// Linux refuses the compat flag from 64-bit callers.
fn check_flags(flags: u32) -> Result<u32, Errno> {
    if flags & s::MSG_CMSG_COMPAT != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(flags)
}

pub fn sys_sendmsg(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = check_flags(a[2] as u32)?;
    let f = socket_file(ctx, a[0] as i32)?;
    Ok(sendmsg_one(ctx, &f, a[1], flags)?.0 as u64)
}

/// sendmmsg: an error after some messages went is dropped (Linux returns
/// only the count), and a message that went only in part ends the batch.
pub fn sys_sendmmsg(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = check_flags(a[3] as u32)?;
    let f = socket_file(ctx, a[0] as i32)?;
    let vlen = (a[2] as u32).min(Iovec::MAX as u32) as u64;
    let mut sent = 0u64;
    while sent < vlen {
        let entry = a[1] + sent * s::Mmsghdr::SIZE as u64;
        let done = sendmsg_one(ctx, &f, entry, flags).and_then(|(n, all)| {
            ctx.copy_to_user(entry + s::Mmsghdr::LEN_OFFSET as u64, &(n as u32).to_le_bytes()).map(|()| all)
        });
        match done {
            Ok(all) => {
                sent += 1;
                if !all {
                    break;
                }
            }
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(sent)
}

/// Installs received descriptors and writes the control messages of a
/// receive (`scm_recv`); returns the msg_controllen to report.
fn put_control(ctx: &SyscallContext, r: &mut Received, ptr: u64, len: u64, flags: u32, out_flags: &mut u32) -> u64 {
    let rights = core::mem::take(&mut r.rights);
    if ptr == 0 {
        if r.cred.is_some() || !rights.is_empty() || r.hop_limit.is_some() {
            *out_flags |= s::MSG_CTRUNC;
        }
        return 0;
    }
    let mut w = CmsgWriter::new(len.min(i32::MAX as u64) as usize);
    let put = |at: usize, bytes: &[u8]| {
        let _ = ctx.copy_to_user(ptr + at as u64, bytes);
    };
    if let Some(cred) = r.cred {
        // The sender's pid as the receiver's pid namespace has it.
        let cred = s::Ucred { pid: ctx.process().pid_ns.local_or_zero(cred.pid), ..cred };
        if let Some(p) = w.put(s::SOL_SOCKET, s::SCM_CREDENTIALS, s::Ucred::SIZE) {
            put(p.at, &p.header.to_bytes());
            put(p.at + s::Cmsghdr::SIZE, &cred.to_bytes()[..p.data_len]);
        }
    }
    if let Some((kind, h)) = r.hop_limit {
        // At IPPROTO_IPV6: an int.
        if let Some(p) = w.put(41, kind, 4) {
            put(p.at, &p.header.to_bytes());
            put(p.at + s::Cmsghdr::SIZE, &h.to_le_bytes()[..p.data_len]);
        }
    }
    if !rights.is_empty() {
        let room = w.rights_room();
        let at = w.used() + s::Cmsghdr::SIZE;
        let cloexec = flags & s::MSG_CMSG_CLOEXEC != 0;
        let mut installed = 0;
        for file in rights.iter().take(room) {
            let fd = match install_received(ctx, file.clone(), cloexec) {
                Ok(fd) => fd,
                Err(_) => break,
            };
            if ctx.copy_to_user(ptr + (at + installed * 4) as u64, &fd.to_le_bytes()).is_err() {
                let _ = ctx.process().files().lock().close(fd);
                break;
            }
            installed += 1;
        }
        if let Some(p) = w.put_rights(installed, rights.len()) {
            put(p.at, &p.header.to_bytes());
        }
    }
    drop(rights);
    if w.truncated {
        *out_flags |= s::MSG_CTRUNC;
    }
    w.used() as u64
}

/// Installs a descriptor a message carried (EMFILE past RLIMIT_NOFILE).
fn install_received(ctx: &SyscallContext, file: Arc<OpenFile>, cloexec: bool) -> Result<i32, Errno> {
    let limit = (ctx.process().rlimits.lock()[linux_abi::consts::RLIMIT_NOFILE as usize].0 as usize).min(1 << 20);
    ctx.process().files().lock().install_from(0, file, cloexec, limit)
}

/// One recvmsg: the call's result.
fn recvmsg_one(ctx: &SyscallContext, f: &OpenFile, hdr_ptr: u64, flags: u32) -> Result<usize, Errno> {
    let h = read_msghdr(ctx, hdr_ptr)?;
    let mut data = UserIov::vector(ctx, h.msg_iov, h.msg_iovlen)?;
    let want_addr = h.msg_name != 0;
    let args = RecvArgs { flags, nonblock: f.nonblocking(), want_addr };
    let mut r = sock(f).proto().recv(&mut data, &args)?;
    let mut out_flags = (flags & s::MSG_CMSG_CLOEXEC) | r.flags;
    let controllen = put_control(ctx, &mut r, h.msg_control, h.msg_controllen, flags, &mut out_flags);
    if want_addr {
        let addr = r.addr.take().unwrap_or_else(crate::net::AddrBuf::empty);
        put_addr(ctx, &addr, h.msg_name, hdr_ptr + Msghdr::NAMELEN_OFFSET as u64)?;
    }
    ctx.copy_to_user(hdr_ptr + Msghdr::FLAGS_OFFSET as u64, &out_flags.to_le_bytes())?;
    ctx.copy_to_user(hdr_ptr + Msghdr::CONTROLLEN_OFFSET as u64, &controllen.to_le_bytes())?;
    Ok(r.len)
}

pub fn sys_recvmsg(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = check_flags(a[2] as u32)?;
    let f = socket_file(ctx, a[0] as i32)?;
    Ok(recvmsg_one(ctx, &f, a[1], flags)? as u64)
}

/// recvmmsg in Linux's order: the timeout is read (EFAULT) and checked
/// (EINVAL) before the descriptor. The timeout is looked at only between
/// datagrams, and what is left of it is written back. An error after
/// some datagrams is recorded as the socket's pending error (the next
/// call's, or SO_ERROR's), unless it is EAGAIN.
pub fn sys_recvmmsg(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let mut flags = check_flags(a[3] as u32)?;
    let deadline = if a[4] != 0 {
        let mut b = [0u8; Timespec::SIZE];
        ctx.copy_from_user(a[4], &mut b)?;
        let ts = Timespec::from_bytes(&b);
        if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
            return Err(Errno::EINVAL);
        }
        Some(
            hal::time::monotonic_ns()
                .saturating_add((ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64),
        )
    } else {
        None
    };
    let f = socket_file(ctx, a[0] as i32)?;
    let vlen = (a[2] as u32).min(Iovec::MAX as u32) as u64;
    let mut got = 0u64;
    let mut failed = None;
    while got < vlen {
        let entry = a[1] + got * s::Mmsghdr::SIZE as u64;
        let done = recvmsg_one(ctx, &f, entry, flags & !s::MSG_WAITFORONE)
            .and_then(|n| ctx.copy_to_user(entry + s::Mmsghdr::LEN_OFFSET as u64, &(n as u32).to_le_bytes()));
        if let Err(e) = done {
            failed = Some(e);
            break;
        }
        got += 1;
        if flags & s::MSG_WAITFORONE != 0 {
            flags |= s::MSG_DONTWAIT;
        }
        if deadline.is_some_and(|d| hal::time::monotonic_ns() >= d) {
            break;
        }
    }
    match failed {
        Some(e) if got == 0 => return Err(e),
        Some(Errno::EAGAIN) | None => {}
        // Linux stores its internal restart code here; an interrupted
        // wait is recorded as what user space knows it by.
        Some(e) => sock(&f).proto().set_error(if super::is_restart(e) { Errno::EINTR } else { e }),
    }
    if let Some(d) = deadline.filter(|_| got > 0) {
        let left = d.saturating_sub(hal::time::monotonic_ns());
        let ts = Timespec { tv_sec: (left / 1_000_000_000) as i64, tv_nsec: (left % 1_000_000_000) as i64 };
        ctx.copy_to_user(a[4], &ts.to_bytes())?;
    }
    Ok(got)
}

/// read(2) on a socket: a receive without flags (`sock_read_iter`).
pub fn read(ctx: &SyscallContext, f: &Arc<OpenFile>, buf: u64, len: usize) -> SysResult {
    let mut data = UserIov::single(ctx, buf, len)?;
    if data.left == 0 {
        return Ok(0);
    }
    let args = RecvArgs { flags: 0, nonblock: f.nonblocking(), want_addr: false };
    Ok(sock(f).proto().recv(&mut data, &args)?.len as u64)
}

/// write(2) on a socket: a send without flags (`sock_write_iter`;
/// seqpacket records end with MSG_EOR).
pub fn write(ctx: &SyscallContext, f: &Arc<OpenFile>, buf: u64, len: usize) -> SysResult {
    let mut data = UserIov::single(ctx, buf, len)?;
    Ok(write_data(ctx, f, &mut data)? as u64)
}

fn write_data(ctx: &SyscallContext, f: &OpenFile, data: &mut UserIov) -> Result<usize, Errno> {
    let flags = if sock(f).proto().sock_type() == crate::net::SockType::SeqPacket { s::MSG_EOR } else { 0 };
    send_common(ctx, f, data, None, flags, Control::default())
}

/// readv(2)/writev(2) on a socket: one message over all the buffers.
pub fn vector(ctx: &SyscallContext, f: &Arc<OpenFile>, iovs: &[Iovec], write: bool) -> SysResult {
    let mut data = UserIov::from_list(ctx, iovs)?;
    if write {
        return Ok(write_data(ctx, f, &mut data)? as u64);
    }
    if data.left == 0 {
        return Ok(0);
    }
    let args = RecvArgs { flags: 0, nonblock: f.nonblocking(), want_addr: false };
    Ok(sock(f).proto().recv(&mut data, &args)?.len as u64)
}
