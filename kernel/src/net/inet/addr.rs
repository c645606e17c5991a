//! Internet socket addresses: `sockaddr_in` and `sockaddr_in6` as the
//! calls exchange them, and the IPv4-mapped IPv6 addresses
//! (`::ffff:a.b.c.d`) through which an AF_INET6 socket talks IPv4.

use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::wire::{IpAddress, IpEndpoint, Ipv4Address, Ipv6Address};

use crate::net::AddrBuf;

/// `sizeof(struct sockaddr_in)`.
pub const SIN_LEN: usize = 16;
/// `sizeof(struct sockaddr_in6)`.
pub const SIN6_LEN: usize = 28;
/// RFC 2133's sockaddr_in6 without `sin6_scope_id`, which Linux accepts.
const SIN6_LEN_RFC2133: usize = 24;

/// An address and port as a socket call names them: `addr` None is the
/// wildcard (INADDR_ANY / in6addr_any).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockAddr {
    pub addr: Option<IpAddress>,
    pub port: u16,
}

impl SockAddr {
    pub const ANY: SockAddr = SockAddr { addr: None, port: 0 };
}

/// An IPv4-mapped IPv6 address's IPv4 address.
fn unmap(a: Ipv6Address) -> Option<Ipv4Address> {
    let o = a.octets();
    (o[..10] == [0; 10] && o[10] == 0xff && o[11] == 0xff).then(|| Ipv4Address::new(o[12], o[13], o[14], o[15]))
}

fn map(a: Ipv4Address) -> Ipv6Address {
    let o = a.octets();
    Ipv6Address::new(0, 0, 0, 0, 0, 0xffff, u16::from_be_bytes([o[0], o[1]]), u16::from_be_bytes([o[2], o[3]]))
}

/// Parses an address argument for a socket of `family`. `unspec_ok`:
/// AF_UNSPEC with INADDR_ANY is taken as AF_INET (bind's old
/// compatibility rule).
pub fn parse(family: u16, bytes: &[u8], unspec_ok: bool) -> Result<SockAddr, Errno> {
    if bytes.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let fam = u16::from_le_bytes([bytes[0], bytes[1]]);
    match family {
        s::AF_INET => {
            if bytes.len() < SIN_LEN {
                return Err(Errno::EINVAL);
            }
            let port = u16::from_be_bytes([bytes[2], bytes[3]]);
            let a = Ipv4Address::new(bytes[4], bytes[5], bytes[6], bytes[7]);
            if fam != s::AF_INET && !(fam == s::AF_UNSPEC && unspec_ok && a.is_unspecified()) {
                return Err(Errno::EAFNOSUPPORT);
            }
            Ok(SockAddr { addr: (!a.is_unspecified()).then_some(IpAddress::Ipv4(a)), port })
        }
        _ => {
            if bytes.len() < SIN6_LEN_RFC2133 {
                return Err(Errno::EINVAL);
            }
            if fam != s::AF_INET6 {
                return Err(Errno::EAFNOSUPPORT);
            }
            let port = u16::from_be_bytes([bytes[2], bytes[3]]);
            let mut o = [0u8; 16];
            o.copy_from_slice(&bytes[8..24]);
            let a = Ipv6Address::from(o);
            let addr = if a.is_unspecified() {
                None
            } else if let Some(v4) = unmap(a) {
                Some(IpAddress::Ipv4(v4))
            } else {
                Some(IpAddress::Ipv6(a))
            };
            Ok(SockAddr { addr, port })
        }
    }
}

/// The address as a socket of `family` reports it: IPv4 addresses of an
/// AF_INET6 socket are mapped.
pub fn encode(family: u16, a: SockAddr) -> AddrBuf {
    encode_scoped(family, a, 0)
}

/// As [`encode`], with the interface `ifindex` as `sin6_scope_id` when
/// the address needs one (Linux's `ipv6_iface_scope_id`: link-local
/// unicast, and interface- or link-local multicast); other addresses
/// report 0 whatever `ifindex` is.
pub fn encode_scoped(family: u16, a: SockAddr, ifindex: u32) -> AddrBuf {
    if family == s::AF_INET {
        let mut b = [0u8; SIN_LEN];
        b[..2].copy_from_slice(&s::AF_INET.to_le_bytes());
        b[2..4].copy_from_slice(&a.port.to_be_bytes());
        if let Some(IpAddress::Ipv4(v4)) = a.addr {
            b[4..8].copy_from_slice(&v4.octets());
        }
        AddrBuf::new(&b)
    } else {
        let mut b = [0u8; SIN6_LEN];
        b[..2].copy_from_slice(&s::AF_INET6.to_le_bytes());
        b[2..4].copy_from_slice(&a.port.to_be_bytes());
        let v6 = match a.addr {
            Some(IpAddress::Ipv4(v4)) => map(v4),
            Some(IpAddress::Ipv6(v6)) => v6,
            None => Ipv6Address::UNSPECIFIED,
        };
        b[8..24].copy_from_slice(&v6.octets());
        if needs_scope(v6) {
            b[24..SIN6_LEN].copy_from_slice(&ifindex.to_le_bytes());
        }
        AddrBuf::new(&b)
    }
}

/// Whether an IPv6 address is only meaningful with its interface:
/// `fe80::/10`, or multicast of interface-local (1) or link-local (2)
/// scope (`__ipv6_addr_needs_scope_id`).
fn needs_scope(a: Ipv6Address) -> bool {
    let o = a.octets();
    a.is_unicast_link_local() || (o[0] == 0xff && matches!(o[1] & 0x0f, 1 | 2))
}

/// Linux's rule for a link-local IPv6 address in bind and connect
/// (`__ipv6_addr_needs_scope_id`): `sin6_scope_id` must name the
/// interface it is on. Without one EINVAL (Linux would take the socket's
/// SO_BINDTODEVICE, which Kiln does not have); ENODEV for an index no
/// interface has. Returns the interface index, if the address needs one.
pub fn check_scope(sa: &SockAddr, bytes: &[u8]) -> Result<Option<u32>, Errno> {
    let Some(IpAddress::Ipv6(a)) = sa.addr else { return Ok(None) };
    if !a.is_unicast_link_local() {
        return Ok(None);
    }
    let scope = match bytes.get(24..SIN6_LEN) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    };
    if scope == 0 {
        return Err(Errno::EINVAL);
    }
    // The table's own list: a socket call may hold the stack's lock,
    // which the stack-backed listing takes.
    use crate::net::ifaces::Interfaces;
    let links = crate::net::ifaces::builtin().links()?;
    if !links.iter().any(|l| l.index == scope) {
        return Err(Errno::ENODEV);
    }
    Ok(Some(scope))
}

/// The interface a link-local destination of sendto names
/// (`sin6_scope_id`, when not 0); other addresses have none. Linux's
/// udpv6_sendmsg takes it as the flow's output interface without the
/// checks of bind and connect.
pub fn send_scope(sa: &SockAddr, bytes: &[u8]) -> Option<u32> {
    let Some(IpAddress::Ipv6(a)) = sa.addr else { return None };
    let b = bytes.get(24..SIN6_LEN)?;
    let scope = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    (a.is_unicast_link_local() && scope != 0).then_some(scope)
}

pub fn from_endpoint(e: IpEndpoint) -> SockAddr {
    SockAddr { addr: Some(e.addr), port: e.port }
}
