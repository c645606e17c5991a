//! The socket file and the interface a family implements.
//!
//! [`Socket`] is what a socket descriptor's `OpenFile` holds: an inode
//! number (what fstat, /proc/<pid>/fd and /proc/net report) and the
//! family's [`Protocol`] object. read(2), write(2) and sendfile reach the
//! protocol through `FileOps`; the socket calls reach it directly. When
//! the last descriptor goes, the file is dropped and the protocol
//! released (Linux's `sock_close`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::socket as s;

use super::io::{KernelSink, KernelSource, MsgSink, MsgSource};
use super::options::SockOptions;
use crate::event::{Events, PollTable};
use crate::fs::dentry::Dentry;
use crate::fs::file::{FileOps, OpenFile};
use crate::fs::inode::S_IFSOCK;
use crate::mm::{uaccess, Vm};

/// The socket types Kiln implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockType {
    Stream = 1,
    Dgram = 2,
    Raw = 3,
    SeqPacket = 5,
}

/// An address as the calls exchange it (at most a `sockaddr_storage`).
#[derive(Clone)]
pub struct AddrBuf {
    pub len: usize,
    pub bytes: [u8; s::SOCKADDR_STORAGE_SIZE],
}

impl AddrBuf {
    pub fn new(data: &[u8]) -> AddrBuf {
        let mut bytes = [0u8; s::SOCKADDR_STORAGE_SIZE];
        let len = data.len().min(bytes.len());
        bytes[..len].copy_from_slice(&data[..len]);
        AddrBuf { len, bytes }
    }

    /// An address of no length (a datagram from an unbound socket).
    pub fn empty() -> AddrBuf {
        AddrBuf { len: 0, bytes: [0; s::SOCKADDR_STORAGE_SIZE] }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Where names in the file system are looked up and created (bind and
/// connect of AF_UNIX path names): the caller's working directory,
/// umask and credentials (for the walk, the permission checks and the
/// new socket inode's owner).
pub struct NameCtx {
    pub cwd: Arc<Dentry>,
    pub umask: u32,
    pub cred: Arc<crate::cred::Cred>,
}

/// Ancillary data a sender attaches (already checked and resolved).
#[derive(Default)]
pub struct Control {
    /// SCM_RIGHTS: the open files to pass.
    pub rights: Vec<Arc<OpenFile>>,
    /// SCM_CREDENTIALS: the credentials the sender claims.
    pub cred: Option<s::Ucred>,
}

/// A send: where to (sendto's address), the MSG_* flags, the control
/// data, how long it may block.
pub struct SendArgs<'a> {
    pub addr: Option<&'a [u8]>,
    pub flags: u32,
    pub control: Control,
    pub nonblock: bool,
    pub names: Option<&'a NameCtx>,
}

/// A receive: the MSG_* flags, whether the sender's address is wanted.
pub struct RecvArgs {
    pub flags: u32,
    pub nonblock: bool,
    pub want_addr: bool,
}

/// What a receive produced besides the bytes.
#[derive(Default)]
pub struct Received {
    /// The call's return value (with MSG_TRUNC: the whole datagram's
    /// length, not what was copied).
    pub len: usize,
    /// MSG_TRUNC, MSG_EOR... for `msg_flags`.
    pub flags: u32,
    pub addr: Option<AddrBuf>,
    pub cred: Option<s::Ucred>,
    pub rights: Vec<Arc<OpenFile>>,
    /// The packet's hop limit, for a socket that asked (IPV6_RECVHOPLIMIT
    /// or RFC 2292's option): the control message type (IPV6_HOPLIMIT
    /// or IPV6_2292HOPLIMIT) and the value.
    pub hop_limit: Option<(i32, i32)>,
}

/// The operations of one family's sockets (Linux's `proto_ops`).
/// Defaults give the errno Linux gives for operations a family lacks.
pub trait Protocol: Send + Sync {
    fn family(&self) -> u16;
    fn sock_type(&self) -> SockType;
    fn protocol(&self) -> i32 {
        0
    }
    fn options(&self) -> &SockOptions;
    fn is_inet(&self) -> bool {
        false
    }

    fn bind(&self, addr: &[u8], names: &NameCtx) -> Result<(), Errno>;
    fn connect(&self, addr: &[u8], names: &NameCtx, nonblock: bool) -> Result<(), Errno>;
    fn listen(&self, _backlog: i32) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    /// A new connection and the peer's address.
    fn accept(&self, _nonblock: bool) -> Result<(Arc<dyn Protocol>, AddrBuf), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    fn sockname(&self) -> AddrBuf;
    fn peername(&self) -> Result<AddrBuf, Errno>;
    fn shutdown(&self, how: i32) -> Result<(), Errno>;

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno>;
    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno>;

    fn poll(&self, table: Option<&mut PollTable>) -> Events;

    /// Bytes waiting to be read (FIONREAD/SIOCINQ).
    fn unread(&self) -> Result<usize, Errno>;
    /// Bytes sent but not yet read by the peer (TIOCOUTQ/SIOCOUTQ).
    fn unsent(&self) -> usize;

    /// SO_ERROR: the pending error, cleared.
    fn take_error(&self) -> i32 {
        0
    }
    /// Records an error for the next call or SO_ERROR (recvmmsg's failure
    /// after some datagrams).
    fn set_error(&self, _e: Errno) {}
    fn is_listening(&self) -> bool {
        false
    }
    /// SO_PEERCRED: the peer's credentials when it connected.
    fn peer_cred(&self) -> s::Ucred {
        s::Ucred { pid: 0, uid: u32::MAX, gid: u32::MAX }
    }
    fn set_peek_off(&self, _off: i32) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    fn peek_off(&self) -> Result<i32, Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    /// SO_SNDBUF changed: writers waiting for room may go on.
    fn buffer_changed(&self) {}

    /// A SOL_SOCKET option was set (for the protocol to apply what it
    /// keeps itself, such as SO_KEEPALIVE).
    fn sol_socket_changed(&self, _name: i32) {}

    /// setsockopt(2) at the protocol's own levels (IPPROTO_TCP,
    /// IPPROTO_IP, ...). Linux's AF_UNIX has none: EOPNOTSUPP.
    fn setsockopt(&self, _level: i32, _name: i32, _val: &[u8]) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// getsockopt(2) at the protocol's own levels.
    fn getsockopt(&self, _level: i32, _name: i32) -> Result<super::options::OptValue, Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// The socket got its inode number.
    fn attach(&self, _ino: u64) {}

    /// The socket got its open file (the only one: a socket is never
    /// opened again).
    fn attach_file(&self, _file: &Arc<OpenFile>) {}

    /// The protocol object, for its family's own code to recognise it
    /// behind a file (the AF_UNIX collector).
    fn as_any(&self) -> &dyn Any;

    /// The last descriptor is gone.
    fn release(&self);
}

static NEXT_INO: AtomicU64 = AtomicU64::new(10_000);

/// An open socket: what a socket descriptor refers to.
pub struct Socket {
    proto: Arc<dyn Protocol>,
    ino: u64,
}

impl Socket {
    pub fn new(proto: Arc<dyn Protocol>) -> Result<Arc<Socket>, Errno> {
        let ino = NEXT_INO.fetch_add(1, Ordering::Relaxed);
        proto.attach(ino);
        Arc::try_new(Socket { proto, ino }).map_err(|_| Errno::ENOMEM)
    }

    pub fn proto(&self) -> &Arc<dyn Protocol> {
        &self.proto
    }

    /// The open file for a new socket, with status flags `flags`.
    pub fn open(self: &Arc<Socket>, flags: u32) -> Result<Arc<OpenFile>, Errno> {
        let file = Arc::try_new(OpenFile::new(self.clone(), flags)).map_err(|_| Errno::ENOMEM)?;
        self.proto.attach_file(&file);
        Ok(file)
    }

    /// The socket an open file is, if it is one.
    pub fn of(file: &OpenFile) -> Option<&Socket> {
        file.ops.as_any()?.downcast_ref::<Socket>()
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.proto.release();
    }
}

impl FileOps for Socket {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let args = RecvArgs { flags: 0, nonblock, want_addr: false };
        self.proto.recv(&mut KernelSink::new(buf), &args).map(|r| r.len)
    }

    fn write_at(&self, _offset: u64, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
        let flags = if self.proto.sock_type() == SockType::SeqPacket { s::MSG_EOR } else { 0 };
        let args = SendArgs { addr: None, flags, control: Control::default(), nonblock, names: None };
        self.proto.send(&mut KernelSource::new(buf), args)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        let n = match cmd {
            c::FIONREAD => self.proto.unread()?,
            c::TIOCOUTQ => self.proto.unsent(),
            // What the family does not know, the device layer answers
            // (Linux's `sock_do_ioctl` falling back to `dev_ioctl`).
            _ => return super::ifioctl::ioctl(self.proto.family(), cmd, arg, vm),
        };
        uaccess::write_u32(vm, arg, n.min(i32::MAX as usize) as u32)?;
        Ok(0)
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        self.proto.poll(table)
    }

    fn ino(&self) -> Option<u64> {
        Some(self.ino)
    }

    fn mode(&self) -> u32 {
        S_IFSOCK | 0o777
    }

    fn fasync(&self) -> bool {
        true
    }

    fn async_slot(&self) -> Option<&crate::fs::fasync::AsyncSlot> {
        Some(self.proto.options().async_io.slot())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
