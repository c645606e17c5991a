//! The interface ioctls every socket answers (Linux's `dev_ioctl`,
//! `dev_ifconf` and, on AF_INET sockets, `devinet_ioctl`): SIOCGIFCONF,
//! SIOCGIFNAME, SIOCGIFINDEX, SIOCG/SIFFLAGS, SIOCG/SIFMTU,
//! SIOCGIFHWADDR, SIOCGIFMETRIC, SIOCGIFTXQLEN, SIOCGIFMAP, and the IPv4
//! ones SIOCG/SIFADDR, SIOCG/SIFNETMASK, SIOCG/SIFBRDADDR,
//! SIOCGIFDSTADDR, and the routes of SIOCADDRT/SIOCDELRT, over the
//! interface table ([`super::ifaces`]).
//!
//! The order of checks is Linux's: the ifreq is copied (EFAULT), a
//! change needs CAP_NET_ADMIN (EPERM) and an AF_INET address (EINVAL),
//! the device must exist (ENODEV), an address ioctl needs an address
//! labelled with the name (EADDRNOTAVAIL). A command no layer knows is
//! ENOTTY.

use kiln_netlink::ifreq::{self as ifr, Ifreq};
use kiln_netlink::rtnl as r;
use linux_abi::errno::Errno;
use linux_abi::socket as s;

use super::ifaces::{self, AddMode, Address, IfName, IpAddr};
use crate::mm::{uaccess, Vm};

/// Whether `cmd` is a socket ioctl of the device layer (type 0x89).
fn is_socket_ioctl(cmd: u32) -> bool {
    cmd >> 8 == 0x89
}

fn net_admin() -> bool {
    super::host().is_some_and(|h| h.net_admin())
}

/// An ioctl on a socket of `family` that its protocol did not take.
pub fn ioctl(family: u16, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
    if !is_socket_ioctl(cmd) {
        return Err(Errno::ENOTTY);
    }
    if cmd == ifr::SIOCGIFCONF {
        return ifconf(arg, vm);
    }
    if matches!(cmd, ifr::SIOCADDRT | ifr::SIOCDELRT) && family == s::AF_INET {
        return route(cmd, arg, vm);
    }
    let mut b = [0u8; ifr::IFREQ_SIZE];
    uaccess::read_bytes(vm, arg, &mut b)?;
    let mut req = Ifreq::from_bytes(b);
    let changed = match cmd {
        ifr::SIOCGIFADDR
        | ifr::SIOCSIFADDR
        | ifr::SIOCGIFNETMASK
        | ifr::SIOCSIFNETMASK
        | ifr::SIOCGIFBRDADDR
        | ifr::SIOCSIFBRDADDR
        | ifr::SIOCGIFDSTADDR
            if family == s::AF_INET =>
        {
            inet(cmd, &mut req)?
        }
        _ => dev(cmd, &mut req)?,
    };
    if changed {
        uaccess::write_bytes(vm, arg, &req.bytes)?;
    }
    Ok(0)
}

/// SIOCGIFCONF: an ifreq per IPv4 address, or with a null buffer the
/// length they need.
fn ifconf(arg: u64, vm: &Vm) -> Result<u64, Errno> {
    let mut b = [0u8; ifr::IFCONF_SIZE];
    uaccess::read_bytes(vm, arg, &mut b)?;
    let len = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let buf = u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
    let addrs = ifaces::table().addresses()?;
    let mut done = 0usize;
    for a in addrs.iter() {
        let IpAddr::V4(v4) = a.addr else { continue };
        if buf == 0 {
            done += ifr::IFREQ_SIZE;
            continue;
        }
        if (len.max(0) as usize).saturating_sub(done) < ifr::IFREQ_SIZE {
            break;
        }
        let mut req = Ifreq::with_name(a.label.as_bytes());
        req.set_in_addr(v4);
        uaccess::write_bytes(vm, buf + done as u64, &req.bytes)?;
        done += ifr::IFREQ_SIZE;
    }
    uaccess::write_bytes(vm, arg, &(done as i32).to_le_bytes())?;
    Ok(0)
}

/// The device ioctls (`dev_ioctl`); true if `req` goes back to the caller.
fn dev(cmd: u32, req: &mut Ifreq) -> Result<bool, Errno> {
    let t = ifaces::table();
    if cmd == ifr::SIOCGIFNAME {
        let link = ifaces::link_by_index(req.int() as u32)?;
        req.set_name(link.name.as_bytes());
        return Ok(true);
    }
    match cmd {
        ifr::SIOCGIFFLAGS
        | ifr::SIOCGIFMETRIC
        | ifr::SIOCGIFMTU
        | ifr::SIOCGIFMAP
        | ifr::SIOCGIFINDEX
        | ifr::SIOCGIFTXQLEN
        | ifr::SIOCGIFHWADDR => {
            let link = ifaces::link_by_name(req.name())?;
            match cmd {
                ifr::SIOCGIFFLAGS => req.set_flags(link.flags as u16),
                ifr::SIOCGIFMETRIC => req.set_int(0),
                ifr::SIOCGIFMTU => req.set_int(link.mtu as i32),
                ifr::SIOCGIFMAP => req.set_data(&[0u8; ifr::IFMAP_SIZE]),
                ifr::SIOCGIFINDEX => req.set_int(link.index as i32),
                ifr::SIOCGIFTXQLEN => req.set_int(link.txqlen as i32),
                _ => req.set_hwaddr(link.kind, &link.mac),
            }
            Ok(true)
        }
        ifr::SIOCSIFFLAGS | ifr::SIOCSIFMTU | ifr::SIOCSIFMETRIC | ifr::SIOCSIFNAME | ifr::SIOCSIFHWADDR => {
            if !net_admin() {
                return Err(Errno::EPERM);
            }
            let link = ifaces::link_by_name(req.name())?;
            match cmd {
                ifr::SIOCSIFFLAGS => {
                    t.set_flags(link.index, req.flags() as u32, 0xffff)?;
                    announce_link(link.index);
                }
                ifr::SIOCSIFMTU => {
                    let mtu = req.int();
                    if mtu < 0 {
                        return Err(Errno::EINVAL);
                    }
                    t.set_mtu(link.index, mtu as u32)?;
                    announce_link(link.index);
                }
                // A running device cannot be renamed; renaming is not
                // implemented, nor are metrics (Linux: EOPNOTSUPP) or
                // new hardware addresses (a loopback has none to set).
                ifr::SIOCSIFNAME if link.is_up() => return Err(Errno::EBUSY),
                _ => return Err(Errno::EOPNOTSUPP),
            }
            Ok(false)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// The address of link `name` an IPv4 ioctl means: one labelled with
/// the name, the one equal to the ifreq's address first.
fn labelled(name: &[u8], hint: [u8; 4]) -> Result<(u32, Option<Address>), Errno> {
    let link = ifaces::link_by_name(name)?;
    let addrs = ifaces::table().addresses()?;
    let mine = |a: &&Address| a.index == link.index && matches!(a.addr, IpAddr::V4(_)) && a.label.as_bytes() == name;
    let exact = addrs.iter().filter(mine).find(|a| a.addr == IpAddr::V4(hint));
    let any = exact.or_else(|| addrs.iter().find(mine));
    Ok((link.index, any.cloned()))
}

/// The classful prefix SIOCSIFADDR gives a new address (`inet_abc_len`).
fn classful(a: [u8; 4]) -> Option<u8> {
    match a[0] {
        _ if a == [0; 4] => Some(0),
        0..=127 => Some(8),
        128..=191 => Some(16),
        192..=223 => Some(24),
        _ => None,
    }
}

fn v4(a: &Address) -> [u8; 4] {
    match a.addr {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => [0; 4],
    }
}

/// The IPv4 address ioctls of AF_INET sockets (`devinet_ioctl`).
fn inet(cmd: u32, req: &mut Ifreq) -> Result<bool, Errno> {
    let setting = matches!(cmd, ifr::SIOCSIFADDR | ifr::SIOCSIFNETMASK | ifr::SIOCSIFBRDADDR);
    let given = req.in_addr();
    if setting {
        if !net_admin() {
            return Err(Errno::EPERM);
        }
        if req.sockaddr_family() != s::AF_INET {
            return Err(Errno::EINVAL);
        }
    }
    let name = req.name();
    let Some(label) = IfName::new(name) else {
        return Err(Errno::ENODEV);
    };
    let (index, found) = labelled(name, if setting { [0; 4] } else { given })?;
    let t = ifaces::table();
    let found = match (found, cmd) {
        (Some(a), _) => a,
        (None, ifr::SIOCSIFADDR) => {
            let prefix = classful(given).ok_or(Errno::EINVAL)?;
            let link = ifaces::link_by_index(index)?;
            let now = ifaces::now_centis();
            let bcast = (link.flags & ifr::IFF_BROADCAST != 0 && prefix < 31).then(|| broadcast_of(given, prefix));
            let a = Address {
                index,
                addr: IpAddr::V4(given),
                prefix,
                broadcast: bcast,
                scope: if given[0] == 127 { r::RT_SCOPE_HOST } else { r::RT_SCOPE_UNIVERSE },
                flags: r::IFA_F_PERMANENT,
                label,
                cstamp: now,
                tstamp: now,
            };
            t.add_address(a, AddMode { create: true, ..Default::default() })?;
            return Ok(false);
        }
        (None, _) => return Err(Errno::EADDRNOTAVAIL),
    };
    match cmd {
        ifr::SIOCGIFADDR | ifr::SIOCGIFDSTADDR => req.set_in_addr(v4(&found)),
        ifr::SIOCGIFNETMASK => req.set_in_addr(ifr::netmask(found.prefix)),
        ifr::SIOCGIFBRDADDR => req.set_in_addr(found.broadcast.unwrap_or([0; 4])),
        _ => {
            let mut a = found.clone();
            match cmd {
                ifr::SIOCSIFADDR => {
                    if v4(&a) == given {
                        return Ok(false);
                    }
                    a.addr = IpAddr::V4(given);
                }
                ifr::SIOCSIFNETMASK => {
                    let prefix = ifr::prefix_of(given).ok_or(Errno::EINVAL)?;
                    if a.broadcast == Some(broadcast_of(v4(&a), a.prefix)) && prefix < 31 {
                        a.broadcast = Some(broadcast_of(v4(&a), prefix));
                    }
                    a.prefix = prefix;
                }
                _ => a.broadcast = Some(given),
            }
            a.tstamp = ifaces::now_centis();
            t.del_address(index, Some(found.addr), Some(found.prefix))?;
            t.add_address(a, AddMode { create: true, ..Default::default() })?;
            return Ok(false);
        }
    }
    Ok(true)
}

fn broadcast_of(a: [u8; 4], prefix: u8) -> [u8; 4] {
    (u32::from_be_bytes(a) | !u32::from_be_bytes(ifr::netmask(prefix))).to_be_bytes()
}

// `struct rtentry`: its size, the offsets of the fields Kiln reads, and
// its flags (`RTF_*`).
const RTENTRY_SIZE: usize = 120;
const RT_DST: usize = 8;
const RT_GATEWAY: usize = 24;
const RT_GENMASK: usize = 40;
const RT_FLAGS: usize = 56;
const RT_METRIC: usize = 80;
const RT_DEV: usize = 88;
const RTF_GATEWAY: u16 = 0x2;
const RTF_HOST: u16 = 0x4;
const RTF_REJECT: u16 = 0x200;

/// The family and IPv4 address of the `struct sockaddr` at `off`.
fn sockaddr_at(b: &[u8], off: usize) -> (u16, [u8; 4]) {
    (u16::from_le_bytes([b[off], b[off + 1]]), [b[off + 4], b[off + 5], b[off + 6], b[off + 7]])
}

/// SIOCADDRT and SIOCDELRT on AF_INET sockets (`ip_rt_ioctl` and
/// `rtentry_to_fib_config`): IPv4 routes of the main table.
fn route(cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
    let mut b = [0u8; RTENTRY_SIZE];
    uaccess::read_bytes(vm, arg, &mut b)?;
    if !net_admin() {
        return Err(Errno::EPERM);
    }
    let (family, dst) = sockaddr_at(&b, RT_DST);
    if family != s::AF_INET {
        return Err(Errno::EAFNOSUPPORT);
    }
    let flags = u16::from_le_bytes([b[RT_FLAGS], b[RT_FLAGS + 1]]);
    let prefix = if flags & RTF_HOST != 0 {
        32
    } else {
        let (mfamily, mask) = sockaddr_at(&b, RT_GENMASK);
        if mfamily != s::AF_INET && (mask != [0; 4] || mfamily != 0) {
            return Err(Errno::EAFNOSUPPORT);
        }
        let m = u32::from_be_bytes(mask);
        if u32::from_be_bytes(dst) & !m != 0 {
            return Err(Errno::EINVAL);
        }
        ifr::prefix_of(mask).ok_or(Errno::EINVAL)?
    };
    let metric = i16::from_le_bytes([b[RT_METRIC], b[RT_METRIC + 1]]);
    let metric = if metric > 0 { metric as u32 - 1 } else { 0 };
    if flags & RTF_REJECT != 0 {
        // Unreachable routes are not implemented.
        return Err(Errno::EOPNOTSUPP);
    }
    let dev = u64::from_le_bytes([
        b[RT_DEV],
        b[RT_DEV + 1],
        b[RT_DEV + 2],
        b[RT_DEV + 3],
        b[RT_DEV + 4],
        b[RT_DEV + 5],
        b[RT_DEV + 6],
        b[RT_DEV + 7],
    ]);
    let mut oif = 0;
    if dev != 0 {
        let mut name = [0u8; ifr::IFNAMSIZ - 1];
        uaccess::read_bytes(vm, dev, &mut name)?;
        let end = name.iter().position(|&c| c == 0 || c == b':').unwrap_or(name.len());
        oif = ifaces::link_by_name(&name[..end])?.index;
    }
    let (gfamily, gw) = sockaddr_at(&b, RT_GATEWAY);
    let gateway = (gfamily == s::AF_INET && gw != [0; 4]).then_some(IpAddr::V4(gw));
    let rt = ifaces::Route {
        table: r::RT_TABLE_MAIN,
        kind: r::RTN_UNICAST,
        dst: IpAddr::V4(dst),
        prefix,
        gateway,
        oif,
        scope: if gateway.is_some() && flags & RTF_GATEWAY != 0 { r::RT_SCOPE_UNIVERSE } else { r::RT_SCOPE_LINK },
        protocol: if cmd == ifr::SIOCADDRT { r::RTPROT_BOOT } else { 0 },
        prefsrc: None,
        metric,
    };
    if cmd == ifr::SIOCDELRT {
        ifaces::table().del_route(&rt)?;
        return Ok(0);
    }
    if flags & RTF_GATEWAY != 0 && gateway.is_none() {
        return Err(Errno::EINVAL);
    }
    super::netlink::route::add_unicast_route(rt, AddMode { create: true, ..Default::default() })?;
    Ok(0)
}

/// Tells RTNLGRP_LINK listeners a link changed.
fn announce_link(index: u32) {
    if let Ok(link) = ifaces::link_by_index(index) {
        super::netlink::route::announce_link(&link);
    }
}
