//! AF_NETLINK sockets (Linux's `af_netlink.c`): port ids, multicast
//! groups and the datagram queue between the kernel and a process.
//!
//! * A socket is SOCK_RAW or SOCK_DGRAM (the same thing) of one protocol;
//!   only NETLINK_ROUTE ([`route`]) exists, so every other protocol is
//!   EPROTONOSUPPORT, as on a kernel built without it.
//! * Port ids are unique per protocol: bind chooses one, or the first
//!   send, connect or bind with `nl_pid` 0 takes the caller's process id,
//!   then negative numbers from -4096 down (`netlink_autobind`).
//! * A message sent to port 0 is a request to the kernel, handled at
//!   once in the sender's context; replies, acks and errors are queued on
//!   the sender as datagrams before send(2) returns (musl reads them with
//!   MSG_DONTWAIT). A message to another port id is delivered to that
//!   socket; one with `nl_groups` to every member of the group.
//! * A dump is one reply at a time: its datagrams wait on the socket and
//!   move to the receive queue while the queue holds less than the
//!   receive buffer, the next as the reader drains it (Linux's
//!   `netlink_dump` from recvmsg). A second dump while one runs is
//!   EBUSY. Other replies that do not fit the buffer are dropped and the
//!   next receive reports ENOBUFS, so a process that never reads holds
//!   at most its SO_RCVBUF.

pub mod route;

use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::Ordering;

use hal::sync::{Once, SpinLock};
use kiln_netlink::wire::{self as nl, SockaddrNl};
use linux_abi::errno::Errno;
use linux_abi::socket as s;

use super::options::{OptValue, SockOptions};
use super::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use super::wait::{block_on, Timeout};
use super::{MsgSink, MsgSource};
use crate::event::{Events, PollTable, Pollee};

/// Groups a socket may join: the first 32 (what `nl_groups` can name).
const NGROUPS: u32 = 32;
/// The largest datagram a dump fills before any receive told it the
/// reader's buffer size (`NLMSG_GOODSIZE` on 4 KiB pages).
const DUMP_CHUNK: usize = 3776;
/// The largest dump datagram at all (`SKB_WITH_OVERHEAD(32768)`).
const DUMP_CHUNK_MAX: usize = 32768 - 320;

/// One datagram waiting to be read.
struct Datagram {
    data: Vec<u8>,
    /// The sender's port id (0: the kernel).
    from: u32,
    /// The group it was sent to (0: unicast).
    group: u32,
}

#[derive(Default)]
struct State {
    /// The port id (0 until bound).
    portid: u32,
    bound: bool,
    /// Multicast groups joined: bit n-1 for group n.
    groups: u32,
    /// connect(2)'s destination.
    dst_pid: u32,
    dst_group: u32,
    queue: VecDeque<Datagram>,
    queued: usize,
    /// A running dump's datagrams not yet queued.
    dump: VecDeque<Vec<u8>>,
    /// The largest buffer a receive offered (sizes dump datagrams).
    max_recvmsg_len: usize,
    err: Option<Errno>,
    cap_ack: bool,
    ext_ack: bool,
    no_enobufs: bool,
    broadcast_error: bool,
    released: bool,
}

/// An AF_NETLINK socket.
pub struct NetlinkSocket {
    kind: SockType,
    protocol: i32,
    opts: SockOptions,
    pollee: Pollee,
    state: SpinLock<State>,
    /// This socket, for the port table (set once, after construction).
    me: Once<Weak<NetlinkSocket>>,
}

/// Every bound socket: (protocol, port id, socket).
static PORTS: SpinLock<Vec<(i32, u32, Weak<NetlinkSocket>)>> = SpinLock::new(Vec::new());

/// socket(AF_NETLINK, kind, protocol).
pub fn create(kind: u32, protocol: i32) -> Result<Arc<dyn Protocol>, Errno> {
    let kind = match kind {
        s::SOCK_RAW => SockType::Raw,
        s::SOCK_DGRAM => SockType::Dgram,
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    if !(0..nl::MAX_LINKS).contains(&protocol) || protocol != nl::NETLINK_ROUTE {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let sock = Arc::try_new(NetlinkSocket {
        kind,
        protocol,
        opts: SockOptions::new(),
        pollee: Pollee::new(),
        state: SpinLock::new(State::default()),
        me: Once::new(),
    })
    .map_err(|_| Errno::ENOMEM)?;
    sock.me.set(Arc::downgrade(&sock));
    Ok(sock)
}

fn sockaddr(pid: u32, groups: u32) -> AddrBuf {
    AddrBuf::new(&SockaddrNl { pid, groups }.to_bytes(s::AF_NETLINK))
}

/// The group mask `nl_groups` shows for group number `g`.
fn group_mask(g: u32) -> u32 {
    if g == 0 || g > NGROUPS {
        0
    } else {
        1 << (g - 1)
    }
}

/// `ffs`: the group number of the lowest bit of a mask.
fn first_group(mask: u32) -> u32 {
    if mask == 0 {
        0
    } else {
        mask.trailing_zeros() + 1
    }
}

fn net_admin() -> bool {
    super::host().is_some_and(|h| h.net_admin())
}

impl NetlinkSocket {
    /// The port id, bound now if it was not (`netlink_autobind`).
    fn ensure_bound(&self) -> Result<u32, Errno> {
        let bound = {
            let st = self.state.lock();
            st.bound.then_some(st.portid)
        };
        match bound {
            Some(p) => Ok(p),
            None => self.insert(0),
        }
    }

    /// Binds to `pid`, or autobinds for 0 (`netlink_insert`).
    fn insert(&self, pid: u32) -> Result<u32, Errno> {
        let me = self.me.get().cloned().unwrap_or_default();
        let mut ports = PORTS.lock();
        ports.retain(|(_, _, w)| w.strong_count() > 0);
        let mut st = self.state.lock();
        if st.bound {
            return Ok(st.portid);
        }
        let taken = |p: u32| ports.iter().any(|(proto, q, _)| *proto == self.protocol && *q == p);
        let pid = if pid != 0 {
            if taken(pid) {
                return Err(Errno::EADDRINUSE);
            }
            pid
        } else {
            let own = super::caller().pid as u32;
            if own != 0 && !taken(own) {
                own
            } else {
                let mut rover = -4096i32;
                while taken(rover as u32) {
                    rover = rover.checked_sub(1).ok_or(Errno::EADDRINUSE)?;
                }
                rover as u32
            }
        };
        ports.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        ports.push((self.protocol, pid, me));
        st.portid = pid;
        st.bound = true;
        Ok(pid)
    }

    /// Queues a datagram for the reader; ENOBUFS (recorded for the next
    /// receive) when the receive buffer is full.
    fn deliver(&self, data: Vec<u8>, from: u32, group: u32) -> Result<(), Errno> {
        {
            let mut st = self.state.lock();
            if st.released {
                return Ok(());
            }
            if st.queued > self.opts.rcvbuf.load(Ordering::Relaxed) as usize {
                if !st.no_enobufs {
                    st.err = Some(Errno::ENOBUFS);
                }
                drop(st);
                self.pollee.notify(Events::ERR);
                return Err(Errno::ENOBUFS);
            }
            st.queue.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            st.queued += data.len();
            st.queue.push_back(Datagram { data, from, group });
        }
        self.pollee.notify(Events::READABLE);
        self.opts.async_io.data_ready(linux_abi::signal::POLL_IN);
        Ok(())
    }

    /// Moves a running dump's datagrams to the queue while it has room.
    fn refill(&self) {
        let moved = {
            let mut st = self.state.lock();
            let limit = self.opts.rcvbuf.load(Ordering::Relaxed) as usize;
            let mut moved = false;
            while !st.dump.is_empty() && (st.queued < limit / 2 || st.queue.is_empty()) {
                if st.queue.try_reserve(1).is_err() {
                    break;
                }
                let Some(data) = st.dump.pop_front() else { break };
                st.queued += data.len();
                st.queue.push_back(Datagram { data, from: 0, group: 0 });
                moved = true;
            }
            moved
        };
        if moved {
            self.pollee.notify(Events::READABLE);
            self.opts.async_io.data_ready(linux_abi::signal::POLL_IN);
        }
    }

    /// The size dump datagrams are cut to.
    fn dump_chunk(&self) -> usize {
        self.state.lock().max_recvmsg_len.clamp(DUMP_CHUNK, DUMP_CHUNK_MAX)
    }

    /// Starts a dump whose datagrams are `chunks` (EBUSY if one runs).
    fn start_dump(&self, chunks: VecDeque<Vec<u8>>) -> Result<(), Errno> {
        {
            let mut st = self.state.lock();
            if !st.dump.is_empty() {
                return Err(Errno::EBUSY);
            }
            st.dump = chunks;
        }
        self.refill();
        Ok(())
    }

    fn dump_running(&self) -> bool {
        !self.state.lock().dump.is_empty()
    }

    fn cap_ack(&self) -> bool {
        self.state.lock().cap_ack
    }

    /// A request to the kernel.
    fn to_kernel(&self, portid: u32, data: &[u8]) {
        if self.protocol == nl::NETLINK_ROUTE {
            route::receive(self, portid, data);
        }
    }

    /// Delivers a message from this socket to another port (unicast).
    fn to_port(&self, portid: u32, dst: u32, data: Vec<u8>) -> Result<(), Errno> {
        let target = PORTS
            .lock()
            .iter()
            .find(|(p, q, _)| *p == self.protocol && *q == dst)
            .and_then(|(_, _, w)| w.upgrade())
            .ok_or(Errno::ECONNREFUSED)?;
        target.deliver(data, portid, 0).map_err(|_| Errno::EAGAIN)
    }
}

/// Sends `data` from the kernel to every socket of `protocol` in group
/// `group` (an event: an address or link changed).
pub fn broadcast(protocol: i32, group: u32, data: &[u8]) {
    let mask = group_mask(group);
    let targets: Vec<Arc<NetlinkSocket>> = {
        let ports = PORTS.lock();
        ports
            .iter()
            .filter(|(p, _, _)| *p == protocol)
            .filter_map(|(_, _, w)| w.upgrade())
            .filter(|sk| sk.state.lock().groups & mask != 0)
            .collect()
    };
    for sk in targets {
        let mut copy = Vec::new();
        if copy.try_reserve_exact(data.len()).is_err() {
            continue;
        }
        copy.extend_from_slice(data);
        let _ = sk.deliver(copy, 0, group);
    }
}

impl Protocol for NetlinkSocket {
    fn family(&self) -> u16 {
        s::AF_NETLINK
    }

    fn sock_type(&self) -> SockType {
        self.kind
    }

    fn protocol(&self) -> i32 {
        self.protocol
    }

    fn options(&self) -> &SockOptions {
        &self.opts
    }

    fn bind(&self, addr: &[u8], _names: &NameCtx) -> Result<(), Errno> {
        let (family, a) = SockaddrNl::parse(addr).ok_or(Errno::EINVAL)?;
        if family != s::AF_NETLINK {
            return Err(Errno::EINVAL);
        }
        // NETLINK_ROUTE lets anyone listen (NL_CFG_F_NONROOT_RECV).
        {
            let st = self.state.lock();
            if st.bound && a.pid != st.portid {
                return Err(Errno::EINVAL);
            }
        }
        self.insert(a.pid)?;
        self.state.lock().groups = a.groups;
        Ok(())
    }

    fn connect(&self, addr: &[u8], _names: &NameCtx, _nonblock: bool) -> Result<(), Errno> {
        if addr.len() < 2 {
            return Err(Errno::EINVAL);
        }
        let family = u16::from_le_bytes([addr[0], addr[1]]);
        if family == s::AF_UNSPEC {
            let mut st = self.state.lock();
            st.dst_pid = 0;
            st.dst_group = 0;
            return Ok(());
        }
        let (family, a) = SockaddrNl::parse(addr).ok_or(Errno::EINVAL)?;
        if family != s::AF_NETLINK {
            return Err(Errno::EINVAL);
        }
        if (a.groups != 0 || a.pid != 0) && !net_admin() {
            return Err(Errno::EPERM);
        }
        self.ensure_bound()?;
        let mut st = self.state.lock();
        st.dst_pid = a.pid;
        st.dst_group = first_group(a.groups);
        Ok(())
    }

    fn sockname(&self) -> AddrBuf {
        let st = self.state.lock();
        sockaddr(st.portid, st.groups)
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        let st = self.state.lock();
        Ok(sockaddr(st.dst_pid, group_mask(st.dst_group)))
    }

    fn shutdown(&self, _how: i32) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let (dst_pid, dst_group) = match args.addr {
            Some(a) if !a.is_empty() => {
                let (family, a) = SockaddrNl::parse(a).ok_or(Errno::EINVAL)?;
                if family != s::AF_NETLINK {
                    return Err(Errno::EINVAL);
                }
                let group = first_group(a.groups);
                if (group != 0 || a.pid != 0) && !net_admin() {
                    return Err(Errno::EPERM);
                }
                (a.pid, group)
            }
            _ => {
                let st = self.state.lock();
                (st.dst_pid, st.dst_group)
            }
        };
        let portid = self.ensure_bound()?;
        let len = data.remaining();
        if len > self.opts.sndbuf().saturating_sub(32) {
            return Err(Errno::EMSGSIZE);
        }
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| Errno::ENOBUFS)?;
        buf.resize(len, 0);
        data.read(&mut buf)?;
        if dst_group != 0 {
            broadcast(self.protocol, dst_group, &buf);
        }
        if dst_pid == 0 {
            self.to_kernel(portid, &buf);
        } else {
            self.to_port(portid, dst_pid, buf)?;
        }
        Ok(len)
    }

    fn recv(&self, sink: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        {
            let mut st = self.state.lock();
            st.max_recvmsg_len = st.max_recvmsg_len.max(sink.remaining());
        }
        let nonblock = args.nonblock || args.flags & s::MSG_DONTWAIT != 0;
        let timeout = Timeout::from_jiffies(nonblock, self.opts.rcvtimeo.load(Ordering::Relaxed));
        let peek = args.flags & s::MSG_PEEK != 0;
        let dgram = block_on(&self.pollee, Events::READABLE, timeout, || {
            let mut st = self.state.lock();
            if let Some(e) = st.err.take() {
                return Err(e);
            }
            if peek {
                return match st.queue.front() {
                    Some(d) => {
                        let mut data = Vec::new();
                        data.try_reserve_exact(d.data.len()).map_err(|_| Errno::ENOMEM)?;
                        data.extend_from_slice(&d.data);
                        Ok(Datagram { data, from: d.from, group: d.group })
                    }
                    None => Err(Errno::EAGAIN),
                };
            }
            let d = st.queue.pop_front().ok_or(Errno::EAGAIN)?;
            st.queued -= d.data.len();
            Ok(d)
        })?;
        if !peek {
            self.refill();
        }
        let full = dgram.data.len();
        let n = full.min(sink.remaining());
        sink.write(&dgram.data[..n])?;
        let mut out = Received {
            len: if args.flags & s::MSG_TRUNC != 0 { full } else { n },
            flags: if n < full { s::MSG_TRUNC } else { 0 },
            ..Default::default()
        };
        if args.want_addr {
            out.addr = Some(sockaddr(dgram.from, group_mask(dgram.group)));
        }
        if self.opts.passcred() {
            // The kernel's credentials (Linux's NETLINK_CB(skb).creds).
            out.cred = Some(s::Ucred { pid: 0, uid: 0, gid: 0 });
        }
        Ok(out)
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(t) = table {
            t.register(&self.pollee);
        }
        let st = self.state.lock();
        let mut ev = Events::WRITABLE;
        if !st.queue.is_empty() {
            ev |= Events::READABLE;
        }
        if st.err.is_some() {
            ev |= Events::ERR;
        }
        ev
    }

    fn unread(&self) -> Result<usize, Errno> {
        // netlink_ioctl knows no FIONREAD, and it is no device ioctl.
        Err(Errno::ENOTTY)
    }

    fn unsent(&self) -> usize {
        0
    }

    fn take_error(&self) -> i32 {
        self.state.lock().err.take().map_or(0, |e| e as i32)
    }

    fn set_error(&self, e: Errno) {
        self.state.lock().err = Some(e);
    }

    fn setsockopt(&self, level: i32, name: i32, val: &[u8]) -> Result<(), Errno> {
        if level != nl::SOL_NETLINK {
            return Err(Errno::ENOPROTOOPT);
        }
        let v = (val.len() >= 4).then(|| i32::from_le_bytes([val[0], val[1], val[2], val[3]]));
        let mut st = self.state.lock();
        let flag = match name {
            nl::NETLINK_ADD_MEMBERSHIP | nl::NETLINK_DROP_MEMBERSHIP => {
                let g = v.unwrap_or(0);
                if g <= 0 || g as u32 > NGROUPS {
                    return Err(Errno::EINVAL);
                }
                drop(st);
                self.ensure_bound()?;
                let mut st = self.state.lock();
                if name == nl::NETLINK_ADD_MEMBERSHIP {
                    st.groups |= group_mask(g as u32);
                } else {
                    st.groups &= !group_mask(g as u32);
                }
                return Ok(());
            }
            nl::NETLINK_CAP_ACK => &mut st.cap_ack,
            nl::NETLINK_EXT_ACK => &mut st.ext_ack,
            nl::NETLINK_NO_ENOBUFS => &mut st.no_enobufs,
            nl::NETLINK_BROADCAST_ERROR => &mut st.broadcast_error,
            // PKTINFO, LISTEN_ALL_NSID and GET_STRICT_CHK change what the
            // kernel sends; Kiln has none of them, as kernels before them.
            _ => return Err(Errno::ENOPROTOOPT),
        };
        // A value shorter than an int reads as 0, as Linux's does.
        *flag = v.unwrap_or(0) != 0;
        Ok(())
    }

    fn getsockopt(&self, level: i32, name: i32) -> Result<OptValue, Errno> {
        if level != nl::SOL_NETLINK {
            return Err(Errno::ENOPROTOOPT);
        }
        let st = self.state.lock();
        let v = match name {
            nl::NETLINK_LIST_MEMBERSHIPS => st.groups as i32,
            nl::NETLINK_CAP_ACK => st.cap_ack as i32,
            nl::NETLINK_EXT_ACK => st.ext_ack as i32,
            nl::NETLINK_NO_ENOBUFS => st.no_enobufs as i32,
            nl::NETLINK_BROADCAST_ERROR => st.broadcast_error as i32,
            nl::NETLINK_PKTINFO | nl::NETLINK_LISTEN_ALL_NSID => 0,
            _ => return Err(Errno::ENOPROTOOPT),
        };
        Ok(OptValue::Int(v))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn release(&self) {
        let (queue, dump) = {
            let mut st = self.state.lock();
            st.released = true;
            st.queued = 0;
            (core::mem::take(&mut st.queue), core::mem::take(&mut st.dump))
        };
        drop((queue, dump));
        let me = self as *const NetlinkSocket;
        PORTS.lock().retain(|(_, _, w)| w.strong_count() > 0 && !core::ptr::eq(w.as_ptr(), me));
    }
}
