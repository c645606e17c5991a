//! Ping sockets: `socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)` and
//! `socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6)`, Linux's unprivileged
//! echo sockets, on smoltcp's raw sockets (as `raw.rs`'s are; smoltcp's
//! own ICMP sockets cannot peek, which poll and MSG_PEEK need).
//!
//! * Who may open one: a caller whose effective or supplementary group
//!   lies in net.ipv4.ping_group_range (both families), EACCES for the
//!   others; the range is "1 0" (nobody) until written, as on Linux.
//! * The socket's port is its echo identifier: chosen at bind or at the
//!   first send, from one table for both families, with SO_REUSEADDR on
//!   from the start (Linux's INET_PROTOSW_REUSE). A send carries an echo
//!   request whose identifier and checksum the kernel sets; a receive returns an echo reply with that identifier
//!   (ICMP header and data, no IP header), from the replying address
//!   with port 0.
//! * The raw sockets see every ICMP message: the refresh after each poll
//!   drops what Linux would not deliver (anything but an echo reply to
//!   the identifier and bound address), so poll never reports a message
//!   recv would not return.
//!
//! The kernel's own answers to echo requests are smoltcp's (its
//! `auto-icmp-echo-reply`); raw sockets are in `raw.rs`.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::wire::{IpAddress, Ipv4Address, Ipv6Address};

use super::addr::{self, SockAddr};
use super::common::{first_unread, release_or_defer, Common};
use super::stack::{self, SockRef, Stack, Watch};
use crate::event::{Events, PollTable};
use crate::fs::procfs::sys::{Access, Sysctl};
use crate::net::options::{OptValue, SockOptions};
use crate::net::socket::{AddrBuf, NameCtx, Protocol, Received, RecvArgs, SendArgs, SockType};
use crate::net::{MsgSink, MsgSource};

pub const IPPROTO_ICMP: i32 = 1;
pub const IPPROTO_ICMPV6: i32 = 58;

const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;

/// An ICMP header (type, code, checksum, identifier, sequence).
const HEADER: usize = 8;
/// Linux's limit on what a ping socket sends.
const MAX_SEND: usize = 0xffff;

/// net.ipv4.ping_group_range: (low, high); low above high lets nobody.
static GROUP_RANGE: SpinLock<(u32, u32)> = SpinLock::new((1, 0));

/// gid_t's largest value a range may name (Linux's GID_T_MAX).
const GID_MAX: i64 = i32::MAX as i64;

fn read_range() -> String {
    let (lo, hi) = *GROUP_RANGE.lock();
    format!("{lo}\t{hi}\n")
}

/// Linux's `ipv4_ping_group_range`: two integers in 0..=GID_T_MAX
/// (EINVAL otherwise); a range whose high end is below its low end is
/// stored as "1 0", which admits nobody.
fn write_range(bytes: &[u8]) -> Result<(), Errno> {
    let (v, n) = crate::fs::procfs::sys::parse_ints(bytes, 2)?;
    let mut r = GROUP_RANGE.lock();
    let lo = v[0];
    let hi = if n == 2 { v[1] } else { r.1 as i64 };
    if !(0..=GID_MAX).contains(&lo) || !(0..=GID_MAX).contains(&hi) {
        return Err(Errno::EINVAL);
    }
    *r = if hi < lo { (1, 0) } else { (lo as u32, hi as u32) };
    Ok(())
}

/// The /proc/sys files of the Internet sockets (registered at boot).
pub static SYSCTLS: &[Sysctl] = &[Sysctl {
    path: "net/ipv4/ping_group_range",
    mode: 0o644,
    access: Access::Func { read: read_range, write: Some(write_range) },
}];

/// Identifiers in use: (identifier, owner, SO_REUSEADDR at bind).
static IDENTS: SpinLock<Vec<(u16, u64, bool)>> = SpinLock::new(Vec::new());
/// Where the search for a free identifier starts (Linux's rover).
static ROVER: SpinLock<u16> = SpinLock::new(0);

/// Takes `want` (0: any free one) for `owner`; EADDRINUSE when taken by
/// a socket that does not share.
fn take_ident(want: u16, owner: u64, reuse: bool) -> Result<u16, Errno> {
    let mut t = IDENTS.lock();
    t.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    let ident = if want != 0 {
        if t.iter().any(|&(i, o, r)| i == want && o != owner && !(r && reuse)) {
            return Err(Errno::EADDRINUSE);
        }
        want
    } else {
        let mut rover = ROVER.lock();
        let mut cand = rover.wrapping_add(1);
        let mut found = None;
        for _ in 0..=u16::MAX as u32 {
            if cand == 0 {
                cand = 1;
            }
            if !t.iter().any(|&(i, _, _)| i == cand) {
                found = Some(cand);
                break;
            }
            cand = cand.wrapping_add(1);
        }
        let c = found.ok_or(Errno::EADDRINUSE)?;
        *rover = c;
        c
    };
    t.push((ident, owner, reuse));
    Ok(ident)
}

fn put_ident(ident: u16, owner: u64) {
    let mut t = IDENTS.lock();
    if let Some(i) = t.iter().position(|&(id, o, _)| id == ident && o == owner) {
        t.swap_remove(i);
    }
}

/// May the caller open a ping socket (ping_init_sock)?
fn may_ping() -> bool {
    let (lo, hi) = *GROUP_RANGE.lock();
    lo <= hi && crate::net::in_groups(lo, hi)
}

struct Inner {
    local: Option<IpAddress>,
    ident: Option<u16>,
    /// connect's address and port (the port only shows in getpeername).
    remote: Option<SockAddr>,
    /// The scope id connect named for a link-local `remote` (0: none).
    remote_scope: u32,
    conn_src: Option<IpAddress>,
    /// One smoltcp socket per interface, bound to the identifier.
    socks: Vec<SockRef>,
    rx_seen: usize,
    released: bool,
}

pub struct PingSocket {
    c: Common,
    inner: SpinLock<Inner>,
    me: hal::sync::Once<alloc::sync::Weak<PingSocket>>,
}

pub fn open(family: u16) -> Result<Arc<dyn Protocol>, Errno> {
    if !may_ping() {
        return Err(Errno::EACCES);
    }
    let sock = Arc::try_new(PingSocket {
        c: Common::new(family),
        inner: SpinLock::new(Inner {
            local: None,
            ident: None,
            remote: None,
            conn_src: None,
            socks: Vec::new(),
            rx_seen: 0,
            released: false,
            remote_scope: 0,
        }),
        me: hal::sync::Once::new(),
    })
    .map_err(|_| Errno::ENOMEM)?;
    sock.me.set(Arc::downgrade(&sock));
    sock.c.opts.set_reuseaddr(true);
    sock.c.events.store((Events::WRITABLE | Events::WRBAND).bits(), Ordering::Relaxed);
    stack::lock()?.watch(sock.clone())?;
    Ok(sock)
}

impl PingSocket {
    fn v6(&self) -> bool {
        self.c.family == s::AF_INET6
    }

    fn reply_type(&self) -> u8 {
        if self.v6() {
            ECHO_REPLY_V6
        } else {
            ECHO_REPLY_V4
        }
    }

    /// Gives the socket its identifier and a smoltcp socket on every
    /// interface.
    fn attach(&self, st: &mut Stack, inner: &mut Inner, want: u16) -> Result<(), Errno> {
        let ident = take_ident(want, self.c.id, self.c.opts.reuseaddr())?;
        let mut socks = Vec::new();
        let rcvbuf = self.c.opts.rcvbuf.load(Ordering::Relaxed) as usize;
        for i in 0..st.ifaces.len() {
            let made = socks
                .try_reserve(1)
                .map_err(|_| Errno::ENOMEM)
                .and_then(|_| super::raw::new_smoltcp(st, i, self.v6(), self.protocol() as u8, rcvbuf));
            match made {
                Ok(r) => socks.push(r),
                Err(e) => {
                    for r in socks {
                        st.remove(r);
                    }
                    put_ident(ident, self.c.id);
                    return Err(e);
                }
            }
        }
        inner.ident = Some(ident);
        inner.socks = socks;
        Ok(())
    }

    fn autobind(&self, st: &mut Stack, inner: &mut Inner) -> Result<(), Errno> {
        if inner.ident.is_some() {
            return Ok(());
        }
        self.attach(st, inner, 0)
    }

    /// The ICMP message in a queued packet and its source, if Linux
    /// would deliver it here: an echo reply to the socket's identifier
    /// (and bound address).
    fn wanted<'p>(&self, p: &'p [u8], ident: Option<u16>, local: Option<IpAddress>) -> Option<(&'p [u8], IpAddress)> {
        let (src, dst, start) = super::raw::split(self.v6(), p)?;
        let msg = &p[start..];
        let ok = msg.len() >= HEADER
            && msg[0] == self.reply_type()
            && msg[1] == 0
            && Some(u16::from_be_bytes([msg[4], msg[5]])) == ident
            && local.is_none_or(|l| l == dst);
        ok.then_some((msg, src))
    }

    /// Drops the queued messages Linux would not deliver here and counts
    /// the rest.
    fn queued(&self, st: &mut Stack, inner: &Inner) -> usize {
        let mut queued = 0;
        for r in inner.socks.iter().copied() {
            let sock = st.raw(r);
            while let Ok(p) = sock.peek() {
                if self.wanted(p, inner.ident, inner.local).is_some() {
                    break;
                }
                let _ = sock.recv();
            }
            queued += sock.recv_queue();
        }
        queued
    }

    fn refresh_locked(&self, st: &mut Stack, inner: &mut Inner) {
        let mut ev = Events::OUT | Events::WRNORM | Events::WRBAND;
        if self.c.has_err() {
            ev |= Events::ERR;
        }
        let queued = self.queued(st, inner);
        self.c.publish_queued(ev, queued, &mut inner.rx_seen);
    }

    /// The destination of a send: its address argument (checked as
    /// Linux's ping_v4/v6_sendmsg check it) or the connected peer.
    /// The scope id a send to `a` names (its `sin6_scope_id` for a
    /// link-local address), else the connected peer's.
    fn send_scope(&self, a: Option<&[u8]>, inner: &Inner) -> Option<u32> {
        match a {
            Some(a) if !a.is_empty() => {
                addr::parse(self.c.family, a, true).ok().and_then(|sa| addr::send_scope(&sa, a))
            }
            _ => (inner.remote_scope != 0).then_some(inner.remote_scope),
        }
    }

    fn destination(&self, a: Option<&[u8]>, inner: &Inner) -> Result<IpAddress, Errno> {
        match a {
            Some(a) if !a.is_empty() => {
                let sa = addr::parse(self.c.family, a, false)?;
                match (sa.addr, self.v6()) {
                    (Some(IpAddress::Ipv4(_)), true) => Err(Errno::EINVAL),
                    (Some(x), _) => Ok(x),
                    (None, false) => Ok(IpAddress::Ipv4(Ipv4Address::UNSPECIFIED)),
                    (None, true) => Ok(IpAddress::Ipv6(Ipv6Address::UNSPECIFIED)),
                }
            }
            _ => inner.remote.and_then(|r| r.addr).ok_or(Errno::EDESTADDRREQ),
        }
    }

    fn send_one(&self, msg: &[u8], dest: Option<&[u8]>) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        let mut to = self.destination(dest, &inner)?;
        // Linux sends to the unspecified address as to the machine itself.
        if to.is_unspecified() {
            to = if self.v6() {
                IpAddress::Ipv6(Ipv6Address::LOCALHOST)
            } else {
                IpAddress::Ipv4(Ipv4Address::new(127, 0, 0, 1))
            };
        }
        let iface = st.route_scoped(to, self.send_scope(dest, &inner))?;
        let ip_header = if self.v6() { 40 } else { 20 };
        if msg.len() + ip_header > st.ifaces[iface].info.mtu {
            return Err(Errno::EMSGSIZE);
        }
        let ident = inner.ident.ok_or(Errno::EINVAL)?;
        let r = inner.socks.iter().find(|r| r.iface == iface).copied().ok_or(Errno::ENETUNREACH)?;
        let src = match inner.local {
            Some(l) => l,
            None => st.ifaces[iface].iface.get_source_address(&to).ok_or(Errno::EADDRNOTAVAIL)?,
        };
        drop(inner);
        // The identifier is the socket's and the checksum the kernel's
        // (ICMPv6's, over the pseudo header, is filled in by `build`).
        let mut icmp = stack::zeroed(msg.len())?;
        icmp.copy_from_slice(msg);
        icmp[4..6].copy_from_slice(&ident.to_be_bytes());
        icmp[2..4].copy_from_slice(&[0, 0]);
        if !self.v6() {
            let c = checksum(&icmp, 0);
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
        }
        let ttl = self.c.hop_limit().unwrap_or(64);
        let tos = self.c.tos.load(Ordering::Relaxed) as u8;
        let p = super::raw::build(self.protocol() as u8, ttl, tos, &icmp, to, src)?;
        let sock = st.raw(r);
        if sock.payload_send_capacity() < p.len() {
            return Err(Errno::EMSGSIZE);
        }
        if sock.send_slice(&p).is_err() {
            return Err(Errno::EAGAIN);
        }
        st.poll();
        Ok(msg.len())
    }

    fn recv_one(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if let Some(e) = self.c.take_err() {
            return Err(e);
        }
        inner.rx_seen = self.queued(&mut st, &inner);
        let socks = inner.socks.clone();
        let (ident, local) = (inner.ident, inner.local);
        // User memory is written below: no spin lock held.
        drop(inner);
        let peek = args.flags & s::MSG_PEEK != 0;
        for r in socks {
            let ifindex = st.scope_of(r, 0);
            let sock = st.raw(r);
            let got = if peek { sock.peek() } else { sock.recv() };
            let Ok(p) = got else { continue };
            let Some((msg, from)) = self.wanted(p, ident, local) else { continue };
            let n = msg.len().min(data.remaining());
            let full = msg.len();
            data.write(&msg[..n])?;
            // Linux's ping_recvmsg returns what it copied, even with
            // MSG_TRUNC.
            let mut out = Received { len: n, ..Received::default() };
            if n < full {
                out.flags |= s::MSG_TRUNC;
            }
            if args.want_addr {
                let from = SockAddr { addr: Some(from), port: 0 };
                out.addr = Some(addr::encode_scoped(self.c.family, from, ifindex));
            }
            let mut inner = self.inner.lock();
            self.refresh_locked(&mut st, &mut inner);
            return Ok(out);
        }
        Err(Errno::EAGAIN)
    }

    fn release_now(&self) {
        let Ok(mut st) = stack::lock() else { return };
        st.unwatch(self.c.id);
        let mut inner = self.inner.lock();
        if inner.released {
            return;
        }
        inner.released = true;
        for r in core::mem::take(&mut inner.socks) {
            st.remove(r);
        }
        if let Some(i) = inner.ident.take() {
            put_ident(i, self.c.id);
        }
    }
}

impl Watch for PingSocket {
    fn id(&self) -> u64 {
        self.c.id
    }

    fn release_deferred(&self) {
        self.release_now();
    }

    fn refresh(&self, st: &mut Stack) {
        let mut inner = self.inner.lock();
        self.refresh_locked(st, &mut inner);
    }
}

impl Protocol for PingSocket {
    fn family(&self) -> u16 {
        self.c.family
    }

    fn sock_type(&self) -> SockType {
        SockType::Dgram
    }

    fn protocol(&self) -> i32 {
        if self.v6() {
            IPPROTO_ICMPV6
        } else {
            IPPROTO_ICMP
        }
    }

    fn options(&self) -> &SockOptions {
        &self.c.opts
    }

    fn is_inet(&self) -> bool {
        true
    }

    /// ping_bind: the address checks, then EINVAL if it has an
    /// identifier, then the identifier (sin_port; 0 picks one).
    fn bind(&self, a: &[u8], _names: &NameCtx) -> Result<(), Errno> {
        let sa = addr::parse(self.c.family, a, true)?;
        if let (true, Some(IpAddress::Ipv4(_))) = (self.v6(), sa.addr) {
            return Err(Errno::EINVAL);
        }
        let mut st = stack::lock()?;
        if let Some(x) = sa.addr {
            if st.iface_of_local(x).is_none() {
                return Err(Errno::EADDRNOTAVAIL);
            }
        }
        let mut inner = self.inner.lock();
        if inner.ident.is_some() {
            return Err(Errno::EINVAL);
        }
        self.attach(&mut st, &mut inner, sa.port)?;
        inner.local = sa.addr;
        Ok(())
    }

    fn connect(&self, a: &[u8], _names: &NameCtx, _nonblock: bool) -> Result<(), Errno> {
        let mut st = stack::lock()?;
        let mut inner = self.inner.lock();
        if a.len() >= 2 && u16::from_le_bytes([a[0], a[1]]) == s::AF_UNSPEC {
            inner.remote = None;
            inner.remote_scope = 0;
            inner.conn_src = None;
            return Ok(());
        }
        let sa = addr::parse(self.c.family, a, false)?;
        let to = self.destination(Some(a), &inner)?;
        let scope = self.send_scope(Some(a), &inner);
        let iface = st.route_scoped(to, scope)?;
        inner.remote_scope = scope.unwrap_or(0);
        self.autobind(&mut st, &mut inner)?;
        inner.conn_src = inner.local.or_else(|| st.ifaces[iface].iface.get_source_address(&to));
        inner.remote = Some(SockAddr { addr: Some(to), port: sa.port });
        Ok(())
    }

    fn sockname(&self) -> AddrBuf {
        let inner = self.inner.lock();
        let port = inner.ident.unwrap_or(0);
        addr::encode(self.c.family, SockAddr { addr: inner.local.or(inner.conn_src), port })
    }

    fn peername(&self) -> Result<AddrBuf, Errno> {
        let inner = self.inner.lock();
        Ok(addr::encode_scoped(self.c.family, inner.remote.ok_or(Errno::ENOTCONN)?, inner.remote_scope))
    }

    fn shutdown(&self, how: i32) -> Result<(), Errno> {
        if !(s::SHUT_RD..=s::SHUT_RDWR).contains(&how) {
            return Err(Errno::EINVAL);
        }
        Err(Errno::ENOTCONN)
    }

    /// ping_common_sendmsg's checks in its order (length, header, OOB,
    /// the echo request type), then the address.
    fn send(&self, data: &mut dyn MsgSource, args: SendArgs<'_>) -> Result<usize, Errno> {
        let len = data.remaining();
        {
            // inet_sendmsg binds first: even a failed send has an identifier.
            let mut st = stack::lock()?;
            let mut inner = self.inner.lock();
            self.autobind(&mut st, &mut inner)?;
        }
        if len > MAX_SEND {
            return Err(Errno::EMSGSIZE);
        }
        if len < HEADER {
            return Err(Errno::EINVAL);
        }
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut msg = stack::zeroed(len)?;
        data.read(&mut msg)?;
        let request = if self.v6() { ECHO_REQUEST_V6 } else { ECHO_REQUEST_V4 };
        if msg[0] != request || msg[1] != 0 {
            return Err(Errno::EINVAL);
        }
        let dest = args.addr;
        self.destination(dest, &self.inner.lock())?;
        let wait = self.c.send_wait(args.nonblock, args.flags);
        self.c.blocking(&wait, || self.send_one(&msg, dest))
    }

    fn recv(&self, data: &mut dyn MsgSink, args: &RecvArgs) -> Result<Received, Errno> {
        if args.flags & s::MSG_OOB != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let wait = self.c.recv_wait(args.nonblock, args.flags);
        self.c.blocking(&wait, || self.recv_one(data, args))
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        self.c.poll(table)
    }

    fn unread(&self) -> Result<usize, Errno> {
        let mut st = stack::lock()?;
        let inner = self.inner.lock();
        let (ident, local) = (inner.ident, inner.local);
        Ok(first_unread(&mut st, &inner.socks, |st, r| {
            st.raw(r).peek().ok().and_then(|p| self.wanted(p, ident, local)).map(|(m, _)| m.len())
        }))
    }

    fn unsent(&self) -> usize {
        0
    }

    fn take_error(&self) -> i32 {
        self.c.take_err().map_or(0, |e| e.as_i32())
    }

    fn set_error(&self, e: Errno) {
        self.c.set_err(e);
    }

    fn setsockopt(&self, level: i32, name: i32, val: &[u8]) -> Result<(), Errno> {
        let bound = self.inner.lock().ident.is_some();
        if self.c.set_ip_option(level, name, val, bound)? {
            return Ok(());
        }
        Err(Errno::ENOPROTOOPT)
    }

    fn getsockopt(&self, level: i32, name: i32) -> Result<OptValue, Errno> {
        if let Some(v) = self.c.get_ip_option(level, name)? {
            return Ok(v);
        }
        Err(Errno::EOPNOTSUPP)
    }

    fn attach(&self, ino: u64) {
        self.c.ino.store(ino, Ordering::Relaxed);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn release(&self) {
        release_or_defer(&self.me, || self.release_now());
    }
}

/// The Internet checksum of `data` with `sum` folded in first.
pub fn checksum(data: &[u8], mut sum: u32) -> u16 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        sum += (*b as u32) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
