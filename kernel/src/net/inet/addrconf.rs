//! IPv6 address autoconfiguration of the NIC interfaces, as Linux's
//! `addrconf` does it: each NIC gets its link-local address from its MAC
//! (modified EUI-64 in fe80::/64) when it joins the stack, and smoltcp's
//! SLAAC (router solicitation, router advertisements, one address per
//! advertised prefix from the same interface identifier, a default
//! route through the advertising router) gives it the rest. What smoltcp
//! configured is mirrored into the interface table ([`sync`]), so
//! `ip -6 addr`, `ip -6 route` and /proc/net/if_inet6 list it with
//! Linux's flags, scopes and protocols.
//!
//! Neighbour discovery (solicitations answered, and sent for unresolved
//! neighbours) is smoltcp's. Duplicate address detection is not done:
//! an address is valid at once, which is what Linux shows once its DAD
//! has settled (no `tentative` flag); a duplicate goes unnoticed.

use kiln_netlink::rtnl as r;
use smoltcp::iface::Interface;
use smoltcp::time::Instant;
use smoltcp::wire::{IpAddress, IpCidr, Ipv6Address};

use super::stack::Stack;
use crate::net::ifaces::{self, AddMode, Address, Interfaces, IpAddr, Route};

/// What [`sync`] last mirrored of an interface's SLAAC state.
#[derive(Default)]
pub struct Slaac {
    /// When smoltcp last changed it (compared, not read as a time).
    seen: Option<Instant>,
}

/// The link-local address of a MAC: fe80::/64 with the modified EUI-64
/// interface identifier (RFC 4291, appendix A).
pub fn link_local(mac: [u8; 6]) -> Ipv6Address {
    let mut o = [0u8; 16];
    o[0] = 0xfe;
    o[1] = 0x80;
    o[8..11].copy_from_slice(&[mac[0] ^ 0x02, mac[1], mac[2]]);
    o[11] = 0xff;
    o[12] = 0xfe;
    o[13..].copy_from_slice(&mac[3..]);
    Ipv6Address::from(o)
}

/// Gives a new NIC interface its link-local address, in smoltcp (which
/// SLAAC's router solicitations need as their source) and in the table.
pub fn start(iface: &mut Interface, index: u32, name: &str, mac: [u8; 6]) {
    let ll = link_local(mac);
    let mut added = false;
    iface.update_ip_addrs(|v| added = v.push(IpCidr::new(IpAddress::Ipv6(ll), 64)).is_ok());
    if !added {
        log::warn!("net: {name}: no room for the link-local address");
        return;
    }
    record(index, name, ll, 64, r::IFA_F_PERMANENT);
    log::info!("net: {name}: {ll}/64 (link-local)");
}

/// The address's scope as Linux's `ipv6_addr_scope` gives it to netlink.
fn scope_of(a: Ipv6Address) -> u8 {
    let o = a.octets();
    if o[0] == 0xfe && o[1] & 0xc0 == 0x80 {
        r::RT_SCOPE_LINK
    } else if o[0] == 0xfe && o[1] & 0xc0 == 0xc0 {
        r::RT_SCOPE_SITE
    } else {
        r::RT_SCOPE_UNIVERSE
    }
}

fn record(index: u32, name: &str, a: Ipv6Address, prefix: u8, flags: u32) {
    let now = ifaces::now_centis();
    let entry = Address {
        index,
        addr: IpAddr::V6(a.octets()),
        prefix,
        broadcast: None,
        scope: scope_of(a),
        flags,
        label: ifaces::IfName::new(name.as_bytes()).unwrap_or_default(),
        cstamp: now,
        tstamp: now,
    };
    if let Err(e) = ifaces::builtin().add_address(entry, AddMode { create: true, ..Default::default() }) {
        if e != linux_abi::errno::Errno::EEXIST {
            log::warn!("net: {name}: {a} not listed: {}", e.name());
        }
    }
}

/// Mirrors what SLAAC changed on NIC interface `i` into the table: its
/// addresses from advertised prefixes ("dynamic": not permanent) and
/// its default routes (`proto ra`, metric 1024, as Linux's
/// `rt6_add_dflt_router`). Takes only the table's lock.
pub fn sync(st: &mut Stack, i: usize) {
    let f = &mut st.ifaces[i];
    let at = f.iface.slaac_updated_at();
    if f.slaac.seen == Some(at) {
        return;
    }
    f.slaac.seen = Some(at);
    let (index, name) = (f.info.index, f.info.name);
    let table = ifaces::builtin();
    let listed = table.addresses().unwrap_or_default();
    let ours = |a: &Ipv6Address| f.iface.ip_addrs().iter().any(|c| c.address() == IpAddress::Ipv6(*a));
    // Gone from smoltcp (the prefix expired): gone from the table.
    for a in listed.iter().filter(|a| a.index == index && a.flags & r::IFA_F_PERMANENT == 0) {
        if let IpAddr::V6(o) = a.addr {
            if !ours(&Ipv6Address::from(o)) {
                let _ = table.del_address(index, Some(a.addr), Some(a.prefix));
            }
        }
    }
    // Addresses put on the link by hand (permanent) stay in the stack
    // whatever SLAAC did: smoltcp drops an expired prefix's address even
    // when the user had added that very address, which Linux keeps (only
    // addresses without IFA_F_PERMANENT follow the prefix's lifetimes).
    let up = table.links().ok().and_then(|l| l.into_iter().find(|l| l.index == index)).is_some_and(|l| l.is_up());
    let lost = listed.iter().filter(|a| {
        a.index == index
            && a.flags & r::IFA_F_PERMANENT != 0
            && matches!(a.addr, IpAddr::V6(o) if !ours(&Ipv6Address::from(o)))
    });
    // At most the interface's few addresses: a fixed array holds them.
    let mut restore = [None; 4];
    for (slot, a) in restore.iter_mut().zip(lost.filter(|_| up)) {
        if let IpAddr::V6(o) = a.addr {
            *slot = Some(IpCidr::new(IpAddress::Ipv6(Ipv6Address::from(o)), a.prefix));
        }
    }
    for c in restore.iter().flatten() {
        let mut pushed = false;
        f.iface.update_ip_addrs(|v| pushed = v.push(*c).is_ok());
        if pushed {
            log::info!("net: {name}: {} kept (added by hand; its prefix expired)", c.address());
        } else {
            log::warn!("net: {name}: no room to keep {}", c.address());
        }
    }
    for c in f.iface.ip_addrs() {
        let IpCidr::Ipv6(c) = c else { continue };
        let a = c.address();
        if a.is_unicast_link_local() || listed.iter().any(|x| x.index == index && x.addr == IpAddr::V6(a.octets())) {
            continue;
        }
        record(index, name, a, c.prefix_len(), 0);
        log::info!("net: {name}: {a}/{} from a router advertisement", c.prefix_len());
    }
    let routes = table.routes().unwrap_or_default();
    let ra = |x: &Route| x.oif == index && x.protocol == r::RTPROT_RA;
    // smoltcp keeps a handful of routes: a fixed array holds them.
    let mut wanted = [None; 4];
    f.iface.routes_mut().update(|v| {
        let v6 = v.iter().filter_map(|rt| match (rt.cidr, rt.via_router) {
            (IpCidr::Ipv6(c), IpAddress::Ipv6(gw)) => Some((c.address(), c.prefix_len(), gw)),
            _ => None,
        });
        for (slot, w) in wanted.iter_mut().zip(v6) {
            *slot = Some(w);
        }
    });
    let wanted = wanted.iter().flatten().copied();
    for old in routes.iter().filter(|x| ra(x)) {
        let keep = wanted.clone().any(|(d, p, gw)| {
            old.dst == IpAddr::V6(d.octets()) && old.prefix == p && old.gateway == Some(IpAddr::V6(gw.octets()))
        });
        if !keep {
            let _ = table.del_route(old);
        }
    }
    for (d, p, gw) in wanted {
        let rt = Route {
            table: r::RT_TABLE_MAIN,
            kind: r::RTN_UNICAST,
            dst: IpAddr::V6(d.octets()),
            prefix: p,
            gateway: Some(IpAddr::V6(gw.octets())),
            oif: index,
            scope: r::RT_SCOPE_UNIVERSE,
            protocol: r::RTPROT_RA,
            prefsrc: None,
            metric: 1024,
        };
        // One the table has (made by SLAAC before, or by the user) stays.
        if !routes.iter().any(|x| x.oif == index && x.dst == rt.dst && x.prefix == p && x.gateway == rt.gateway) {
            match table.add_route(rt, AddMode { create: true, ..Default::default() }) {
                Ok(()) => log::info!("net: {name}: route {d}/{p} via {gw} from a router advertisement"),
                Err(e) => log::warn!("net: {name}: route via {gw} not listed: {}", e.name()),
            }
        }
    }
}
