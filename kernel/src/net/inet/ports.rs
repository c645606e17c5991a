//! Who holds which port: the bind table of each transport protocol, with
//! Linux's sharing rules (`inet_csk_bind_conflict`) and its ephemeral
//! range (`net.ipv4.ip_local_port_range`, 32768–60999).
//!
//! smoltcp keeps no such table (a socket just claims an endpoint), so the
//! stack asks this one before it gives a smoltcp socket a port. An entry
//! lives from bind (or the automatic bind of connect, listen or a first
//! send) until the socket is gone from the stack.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use linux_abi::errno::Errno;
use smoltcp::wire::IpAddress;

/// The ephemeral range.
pub const EPHEMERAL_LOW: u16 = 32768;
pub const EPHEMERAL_HIGH: u16 = 60999;
/// Ports below this need CAP_NET_BIND_SERVICE.
pub const PROT_SOCK: u16 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transport {
    Tcp,
    Udp,
}

/// One socket's claim on a port.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    /// The socket's identity in the stack.
    pub owner: u64,
    /// None: every local address.
    pub addr: Option<IpAddress>,
    /// A wildcard AF_INET6 socket without IPV6_V6ONLY also takes IPv4.
    pub v6_any_dual: bool,
    /// A wildcard AF_INET6 socket (with or without IPV6_V6ONLY).
    pub v6_family: bool,
    pub reuseaddr: bool,
    pub reuseport: bool,
    pub uid: u32,
    pub listening: bool,
}

impl Binding {
    /// Whether the two claims cover a common local address.
    fn overlaps(&self, other: &Binding) -> bool {
        match (self.addr, other.addr) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.v6_family == other.v6_family || self.v6_any_dual || other.v6_any_dual,
            (None, Some(a)) | (Some(a), None) => {
                let wild = if self.addr.is_none() { self } else { other };
                match a {
                    IpAddress::Ipv4(_) => !wild.v6_family || wild.v6_any_dual,
                    IpAddress::Ipv6(_) => wild.v6_family,
                }
            }
        }
    }

    /// Whether the two may share the port (Linux's rules for TCP: both
    /// SO_REUSEADDR and neither listening, or both SO_REUSEPORT by the
    /// same user; UDP shares on SO_REUSEADDR alone).
    fn may_share(&self, other: &Binding, proto: Transport) -> bool {
        let addr_ok =
            self.reuseaddr && other.reuseaddr && (proto == Transport::Udp || (!self.listening && !other.listening));
        let port_ok = self.reuseport && other.reuseport && self.uid == other.uid;
        addr_ok || port_ok
    }
}

#[derive(Default)]
pub struct Ports {
    table: BTreeMap<(Transport, u16), Vec<Binding>>,
    next_ephemeral: u16,
}

impl Ports {
    pub const fn new() -> Ports {
        Ports { table: BTreeMap::new(), next_ephemeral: 0 }
    }

    fn conflicts(&self, proto: Transport, port: u16, b: &Binding) -> bool {
        self.table
            .get(&(proto, port))
            .is_some_and(|v| v.iter().any(|o| o.owner != b.owner && o.overlaps(b) && !o.may_share(b, proto)))
    }

    /// Claims `port` (0: a free ephemeral one) for `b`; returns the port.
    pub fn bind(&mut self, proto: Transport, port: u16, b: Binding) -> Result<u16, Errno> {
        let port = if port == 0 { self.pick(proto, &b)? } else { port };
        if self.conflicts(proto, port, &b) {
            return Err(Errno::EADDRINUSE);
        }
        let v = self.table.entry((proto, port)).or_default();
        v.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        v.push(b);
        Ok(port)
    }

    /// An ephemeral port nobody conflicting holds (EADDRNOTAVAIL when
    /// the range is used up, as Linux's connect says).
    fn pick(&mut self, proto: Transport, b: &Binding) -> Result<u16, Errno> {
        let span = (EPHEMERAL_HIGH - EPHEMERAL_LOW + 1) as u32;
        if self.next_ephemeral == 0 {
            let mut r = [0u8; 2];
            crate::random::fill(&mut r);
            self.next_ephemeral = EPHEMERAL_LOW + (u16::from_le_bytes(r) as u32 % span) as u16;
        }
        for _ in 0..span {
            let port = self.next_ephemeral;
            self.next_ephemeral = if port >= EPHEMERAL_HIGH { EPHEMERAL_LOW } else { port + 1 };
            // A fresh port is one nobody holds at all: sharing rules are
            // for ports chosen on purpose.
            if !self.table.contains_key(&(proto, port)) {
                let _ = b;
                return Ok(port);
            }
        }
        Err(Errno::EADDRNOTAVAIL)
    }

    /// listen(2) re-checks: two SO_REUSEADDR sockets may share a port
    /// until one of them listens.
    pub fn set_listening(&mut self, proto: Transport, port: u16, owner: u64) -> Result<(), Errno> {
        let Some(v) = self.table.get(&(proto, port)) else { return Ok(()) };
        let Some(me) = v.iter().find(|b| b.owner == owner).copied() else { return Ok(()) };
        let mut me = me;
        me.listening = true;
        if self.conflicts(proto, port, &me) {
            return Err(Errno::EADDRINUSE);
        }
        if let Some(b) = self.table.get_mut(&(proto, port)).and_then(|v| v.iter_mut().find(|b| b.owner == owner)) {
            b.listening = true;
        }
        Ok(())
    }

    pub fn release(&mut self, proto: Transport, port: u16, owner: u64) {
        if let Some(v) = self.table.get_mut(&(proto, port)) {
            v.retain(|b| b.owner != owner);
            if v.is_empty() {
                self.table.remove(&(proto, port));
            }
        }
    }
}
