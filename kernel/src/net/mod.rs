//! The socket layer: what every socket is, whatever its family.
//!
//! * A socket is an open file ([`Socket`], a `FileOps`) with its family's
//!   protocol behind the [`Protocol`] trait: bind, connect, listen,
//!   accept, send and receive a message, shutdown, poll, options. AF_UNIX
//!   ([`unix`]) is the first family; AF_INET and AF_INET6 slot in beside
//!   it as further `Protocol` implementations and entries in [`create`];
//!   AF_PACKET ([`packet`]) sees and sends the NICs' Ethernet frames.
//! * The options every socket has (SOL_SOCKET: buffer sizes, timeouts,
//!   flags) live in [`SockOptions`], which each protocol embeds; the
//!   option calls are decoded once, in [`options`].
//! * Message data moves straight between user memory and the protocol's
//!   queues through [`MsgSource`] and [`MsgSink`], which the system-call
//!   layer implements over the caller's iovecs (one copy each way); the
//!   kernel's own callers (read(2) through `FileOps`, sendfile) use
//!   [`KernelSource`]/[`KernelSink`].
//! * Blocking calls wait on the socket's notification head (`event`) with
//!   the socket's timeouts ([`wait`]).
//! * O_ASYNC signals follow Linux's socket rules, not readiness alone
//!   ([`sigio`]).
//! * The control plane: AF_NETLINK route sockets ([`netlink`]), the
//!   SIOC*IF* ioctls every socket answers ([`ifioctl`]) and /proc/net
//!   ([`procnet`]), all over the interface table the stack provides
//!   ([`ifaces`]).
//!
//! The layer sits beside `fs/`: it knows files (`FileOps`, `OpenFile` for
//! descriptors in flight, dentries for socket names) but nothing of
//! processes. What it needs from above (the caller's identity, SIGPIPE)
//! comes through the [`Host`] hooks the system-call layer registers.

pub mod ifaces;
mod ifioctl;
pub mod inet;
pub mod inet_ifaces;
mod io;
pub mod netdevs;
pub mod netlink;
mod options;
pub mod packet;
pub mod procnet;
mod sigio;
mod socket;
pub mod unix;
mod wait;

use alloc::sync::Arc;

use hal::sync::Once;
use linux_abi::errno::Errno;
use linux_abi::socket as s;

pub use io::{MsgSink, MsgSource};
pub use options::{get as options_get, set as options_set};
pub use socket::{AddrBuf, Control, NameCtx, Received, RecvArgs, SendArgs, SockType, Socket};

/// The identity of the thread making a call, as sockets record it:
/// SCM_CREDENTIALS carries the real ids, SO_PEERCRED the effective ones,
/// both with the process id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
    pub euid: u32,
    pub egid: u32,
}

impl Caller {
    /// What SCM_CREDENTIALS reports for a message this caller sent.
    pub fn scm_cred(&self) -> s::Ucred {
        s::Ucred { pid: self.pid, uid: self.uid, gid: self.gid }
    }

    /// What SO_PEERCRED reports of a socket this caller connected.
    pub fn peer_cred(&self) -> s::Ucred {
        s::Ucred { pid: self.pid, uid: self.euid, gid: self.egid }
    }
}

/// What the socket layer needs from the layers above it.
pub trait Host: Sync {
    /// The calling thread's process id and credentials.
    fn caller(&self) -> Caller;
    /// Sends SIGPIPE to the calling thread (a write to a socket whose
    /// peer is gone, without MSG_NOSIGNAL).
    fn sigpipe(&self);
    /// Whether the calling thread has CAP_NET_ADMIN (configuring
    /// interfaces, addresses and routes).
    fn net_admin(&self) -> bool;
    /// Whether the calling thread has CAP_NET_RAW (raw and packet
    /// sockets).
    fn net_raw(&self) -> bool;
    /// Whether the calling thread's effective group or one of its
    /// supplementary groups lies in `low..=high` (ping sockets,
    /// net.ipv4.ping_group_range).
    fn in_groups(&self, low: u32, high: u32) -> bool;
    /// Whether the calling thread's process is exiting (its last thread
    /// is gone and its files are being closed): Linux's PF_EXITING,
    /// under which close(2) does not linger.
    fn exiting(&self) -> bool;
}

static HOST: Once<&'static dyn Host> = Once::new();

/// Registers the upper layers' hooks (once, at boot).
pub fn set_host(host: &'static dyn Host) {
    HOST.set(host);
}

fn host() -> Option<&'static dyn Host> {
    HOST.get().copied()
}

/// The calling thread's identity (all zero before the hooks exist).
pub fn caller() -> Caller {
    host().map(|h| h.caller()).unwrap_or_default()
}

/// CAP_NET_RAW of the calling thread (false before the hooks exist).
pub fn net_raw() -> bool {
    host().is_some_and(|h| h.net_raw())
}

/// Whether the caller's process is exiting (false before the hooks
/// exist).
pub fn exiting() -> bool {
    host().is_some_and(|h| h.exiting())
}

/// Whether the caller belongs to a group in `low..=high`.
pub fn in_groups(low: u32, high: u32) -> bool {
    host().is_some_and(|h| h.in_groups(low, high))
}

fn sigpipe() {
    if let Some(h) = host() {
        h.sigpipe();
    }
}

/// socket(2) for a family, type and protocol (the type without its
/// SOCK_NONBLOCK/SOCK_CLOEXEC flags).
pub fn create(family: u16, kind: u32, protocol: i32) -> Result<Arc<Socket>, Errno> {
    match family {
        s::AF_UNIX => Socket::new(unix::create(kind, protocol)?),
        s::AF_NETLINK => Socket::new(netlink::create(kind, protocol)?),
        s::AF_INET | s::AF_INET6 => Socket::new(inet::create(family, kind, protocol)?),
        s::AF_PACKET => Socket::new(packet::create(kind, protocol)?),
        _ => Err(Errno::EAFNOSUPPORT),
    }
}

/// socketpair(2): two sockets connected to each other.
pub fn create_pair(family: u16, kind: u32, protocol: i32) -> Result<(Arc<Socket>, Arc<Socket>), Errno> {
    match family {
        s::AF_UNIX => {
            let [a, b] = unix::create_pair(kind, protocol)?;
            Ok((Socket::new(a)?, Socket::new(b)?))
        }
        // Linux's inet families exist but cannot make pairs.
        s::AF_INET | s::AF_INET6 => Err(Errno::EOPNOTSUPP),
        s::AF_PACKET => {
            packet::create(kind, protocol)?.release();
            Err(Errno::EOPNOTSUPP)
        }
        // Netlink makes the sockets first (their errors come first).
        s::AF_NETLINK => {
            netlink::create(kind, protocol)?;
            Err(Errno::EOPNOTSUPP)
        }
        _ => Err(Errno::EAFNOSUPPORT),
    }
}
