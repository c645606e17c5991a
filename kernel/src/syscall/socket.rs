//! Socket calls that set sockets up: socket, socketpair, bind, listen,
//! accept/accept4, connect, getsockname, getpeername, shutdown,
//! setsockopt and getsockopt, with Linux's order of checks (descriptor,
//! then user memory, then the protocol). The data calls are in
//! `socket_msg.rs`; the sockets themselves in `net/`.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;
use linux_abi::socket as s;

use super::fs_io::{file, nofile_limit};
use super::{SysResult, SyscallContext};
use crate::fs::OpenFile;
use crate::net::{self, AddrBuf, NameCtx, Socket};

/// The socket layer's view of the calling thread.
struct KernelHost;

impl net::Host for KernelHost {
    /// The one place that says who the caller is to sockets: the calling
    /// thread's process id and credentials (SCM_CREDENTIALS takes the
    /// real ids, SO_PEERCRED the effective ones).
    fn caller(&self) -> net::Caller {
        let Some(t) = crate::proc::current_task() else {
            return net::Caller::default();
        };
        let cred = t.cred();
        net::Caller { pid: t.process.pid, uid: cred.uid, gid: cred.gid, euid: cred.euid, egid: cred.egid }
    }

    fn net_admin(&self) -> bool {
        crate::proc::current_task().is_some_and(|t| t.cred().capable(linux_abi::capability::CAP_NET_ADMIN))
    }

    fn net_raw(&self) -> bool {
        crate::proc::current_task().is_some_and(|t| t.cred().capable(linux_abi::capability::CAP_NET_RAW))
    }

    fn in_groups(&self, low: u32, high: u32) -> bool {
        crate::proc::current_task().is_some_and(|t| {
            let cred = t.cred();
            (low..=high).contains(&cred.egid) || cred.groups.as_ref().iter().any(|g| (low..=high).contains(g))
        })
    }

    fn exiting(&self) -> bool {
        crate::proc::current_task().is_some_and(|t| t.process.tasks.lock().is_empty())
    }

    fn sigpipe(&self) {
        if let Some(t) = crate::proc::current_task() {
            crate::proc::signal::send_to_task(
                &t,
                Siginfo::kill(sig::SIGPIPE, sig::SI_USER, t.process.pid_ns.local_or_zero(t.process.pid), 0),
            );
        }
    }
}

static HOST: KernelHost = KernelHost;

pub fn init() {
    net::set_host(&HOST);
    crate::fs::procfs::register("net/unix", |_| net::unix::proc_net_unix().unwrap_or_default());
    net::ifaces::init();
    net::inet_ifaces::install();
    net::procnet::register();
    crate::fs::procfs::sys::register(net::inet::icmp::SYSCTLS);
}

/// The socket behind descriptor `fd`: EBADF, or ENOTSOCK for other files.
pub fn socket_file(ctx: &SyscallContext, fd: i32) -> Result<Arc<OpenFile>, Errno> {
    let f = file(ctx, fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    if Socket::of(&f).is_none() {
        return Err(Errno::ENOTSOCK);
    }
    Ok(f)
}

pub fn sock(f: &OpenFile) -> &Socket {
    Socket::of(f).expect("checked by socket_file")
}

/// `move_addr_to_kernel`: an address argument (at most a sockaddr_storage).
pub fn addr_arg(ctx: &SyscallContext, ptr: u64, len: u64) -> Result<AddrBuf, Errno> {
    let len = len as i32;
    if len < 0 || len as usize > s::SOCKADDR_STORAGE_SIZE {
        return Err(Errno::EINVAL);
    }
    let mut buf = AddrBuf::empty();
    buf.len = len as usize;
    if len > 0 {
        ctx.copy_from_user(ptr, &mut buf.bytes[..len as usize])?;
    }
    Ok(buf)
}

/// `move_addr_to_user`: copies as much of `addr` as the caller's length
/// allows and stores the full length.
pub fn put_addr(ctx: &SyscallContext, addr: &AddrBuf, ptr: u64, len_ptr: u64) -> Result<(), Errno> {
    let mut b = [0u8; 4];
    ctx.copy_from_user(len_ptr, &mut b)?;
    let room = i32::from_le_bytes(b);
    let n = room.min(addr.len as i32);
    if n < 0 {
        return Err(Errno::EINVAL);
    }
    if n > 0 {
        ctx.copy_to_user(ptr, &addr.bytes[..n as usize])?;
    }
    ctx.copy_to_user(len_ptr, &(addr.len as u32).to_le_bytes())
}

pub fn names(ctx: &SyscallContext) -> NameCtx {
    NameCtx {
        cwd: ctx.process().cwd.lock().clone(),
        umask: ctx.process().umask.load(core::sync::atomic::Ordering::Relaxed),
        cred: ctx.cred(),
    }
}

/// Splits socket(2)'s type argument into the type and the file flags.
fn type_flags(kind: u64) -> Result<(u32, u32), Errno> {
    let kind = kind as u32;
    let flags = kind & !s::SOCK_TYPE_MASK;
    if flags & !(s::SOCK_CLOEXEC | s::SOCK_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok((kind & s::SOCK_TYPE_MASK, flags))
}

fn family_arg(family: u64) -> Result<u16, Errno> {
    let f = family as i32;
    if !(0..s::AF_MAX as i32).contains(&f) {
        return Err(Errno::EAFNOSUPPORT);
    }
    Ok(f as u16)
}

fn open_socket(ctx: &SyscallContext, sock: Arc<Socket>, flags: u32) -> SysResult {
    let file = sock.open(c::O_RDWR | (flags & s::SOCK_NONBLOCK))?;
    let limit = nofile_limit(ctx);
    Ok(ctx.process().files().lock().install_from(0, file, flags & s::SOCK_CLOEXEC != 0, limit)? as u64)
}

pub fn sys_socket(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (kind, flags) = type_flags(a[1])?;
    let family = family_arg(a[0])?;
    if kind >= s::SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    let sock = net::create(family, kind, a[2] as i32)?;
    open_socket(ctx, sock, flags)
}

pub fn sys_socketpair(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (kind, flags) = type_flags(a[1])?;
    // Linux stores the descriptors before it makes the sockets, so a bad
    // pointer is EFAULT whatever else is wrong.
    ctx.copy_to_user(a[3], &[0xff; 8])?;
    let family = family_arg(a[0])?;
    if kind >= s::SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    let (x, y) = net::create_pair(family, kind, a[2] as i32)?;
    let fd1 = open_socket(ctx, x, flags)?;
    let fd2 = match open_socket(ctx, y, flags) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = ctx.process().files().lock().close(fd1 as i32);
            return Err(e);
        }
    };
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(fd1 as u32).to_le_bytes());
    b[4..].copy_from_slice(&(fd2 as u32).to_le_bytes());
    if let Err(e) = ctx.copy_to_user(a[3], &b) {
        let files = ctx.process().files();
        let mut t = files.lock();
        let _ = t.close(fd1 as i32);
        let _ = t.close(fd2 as i32);
        return Err(e);
    }
    Ok(0)
}

pub fn sys_bind(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    let addr = addr_arg(ctx, a[1], a[2])?;
    sock(&f).proto().bind(addr.as_bytes(), &names(ctx))?;
    Ok(0)
}

pub fn sys_connect(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    // Linux copies the address before it asks whether this is a socket.
    let f = file(ctx, a[0] as i32)?;
    let addr = addr_arg(ctx, a[1], a[2])?;
    if f.is_path_only() || Socket::of(&f).is_none() {
        return Err(Errno::ENOTSOCK);
    }
    sock(&f).proto().connect(addr.as_bytes(), &names(ctx), f.nonblocking())?;
    Ok(0)
}

pub fn sys_listen(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    sock(&f).proto().listen(a[1] as i32)?;
    Ok(0)
}

/// accept4 in Linux's order: the descriptor (EBADF), the flags (EINVAL),
/// a free descriptor reserved before anything is dequeued (EMFILE keeps
/// the connection waiting), then the socket (ENOTSOCK) and the protocol.
/// A bad address buffer is EFAULT after the connection is taken, and the
/// connection is closed, as on Linux.
fn do_accept(ctx: &SyscallContext, fd: i32, addr: u64, len_ptr: u64, flags: u32) -> SysResult {
    let f = file(ctx, fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    if flags & !(s::SOCK_CLOEXEC | s::SOCK_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let files = ctx.process().files();
    let newfd = files.lock().reserve(nofile_limit(ctx))?;
    let accepted = accept_file(ctx, &f, addr, len_ptr, flags);
    let mut table = files.lock();
    match accepted {
        Ok(new) => {
            table.install_reserved(newfd, new, flags & s::SOCK_CLOEXEC != 0);
            Ok(newfd as u64)
        }
        Err(e) => {
            table.unreserve(newfd);
            Err(e)
        }
    }
}

/// The accepted connection's open file (dropped again if its address
/// cannot be stored).
fn accept_file(
    ctx: &SyscallContext,
    f: &OpenFile,
    addr: u64,
    len_ptr: u64,
    flags: u32,
) -> Result<Arc<OpenFile>, Errno> {
    let sock = Socket::of(f).ok_or(Errno::ENOTSOCK)?;
    let (proto, peer) = sock.proto().accept(f.nonblocking())?;
    let new = Socket::new(proto)?.open(c::O_RDWR | (flags & s::SOCK_NONBLOCK))?;
    if addr != 0 {
        put_addr(ctx, &peer, addr, len_ptr)?;
    }
    Ok(new)
}

pub fn sys_accept(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_accept(ctx, a[0] as i32, a[1], a[2], 0)
}

pub fn sys_accept4(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_accept(ctx, a[0] as i32, a[1], a[2], a[3] as u32)
}

pub fn sys_getsockname(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    let addr = sock(&f).proto().sockname();
    put_addr(ctx, &addr, a[1], a[2])?;
    Ok(0)
}

pub fn sys_getpeername(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    let addr = sock(&f).proto().peername()?;
    put_addr(ctx, &addr, a[1], a[2])?;
    Ok(0)
}

pub fn sys_shutdown(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    sock(&f).proto().shutdown(a[1] as i32)?;
    Ok(0)
}

pub fn sys_setsockopt(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    let (level, name, len) = (a[1] as i32, a[2] as i32, a[4] as i32);
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    // No option is larger than ICMP6_FILTER's 32 bytes.
    let mut val = [0u8; 32];
    let n = (len as usize).min(val.len());
    ctx.copy_from_user(a[3], &mut val[..n])?;
    let proto = sock(&f).proto();
    if level != s::SOL_SOCKET {
        proto.setsockopt(level, name, &val[..n])?;
        return Ok(0);
    }
    net::options_set(proto.as_ref(), name, &val[..n])?;
    proto.sol_socket_changed(name);
    Ok(0)
}

pub fn sys_getsockopt(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = socket_file(ctx, a[0] as i32)?;
    let (level, name) = (a[1] as i32, a[2] as i32);
    let mut b = [0u8; 4];
    ctx.copy_from_user(a[4], &mut b)?;
    let len = i32::from_le_bytes(b);
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let proto = sock(&f).proto();
    let mut value = if level == s::SOL_SOCKET {
        net::options_get(proto.as_ref(), name)?.into_bytes()
    } else {
        proto.getsockopt(level, name)?.into_bytes()
    };
    if name == s::SO_PEERCRED && value.len() >= 4 {
        // The peer's pid as the caller's pid namespace has it.
        let global = i32::from_le_bytes([value[0], value[1], value[2], value[3]]);
        value[..4].copy_from_slice(&ctx.process().pid_ns.local_or_zero(global).to_le_bytes());
    }
    let n = (len as usize).min(value.len());
    ctx.copy_to_user(a[3], &value[..n])?;
    ctx.copy_to_user(a[4], &(n as u32).to_le_bytes())?;
    Ok(0)
}
