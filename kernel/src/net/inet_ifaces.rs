//! The interface table over the smoltcp stack ([`super::inet`]): the
//! built-in [`IfTable`] keeps what the control plane configures (flags,
//! MTU, addresses with their labels and times, routes), and this layer
//! carries it to the stack and reads back what only the stack knows.
//!
//! * Addresses added or removed (netlink, SIOCSIFADDR) go into the smoltcp
//!   interface of the same index, so the stack answers on them; a link
//!   brought down takes its addresses out of smoltcp (no traffic, as on
//!   Linux where its routes go) and up puts them back.
//! * Routes through a gateway go into smoltcp's route table as well;
//!   routes straight to a link are the table's alone (smoltcp reaches
//!   only the prefixes of its own addresses directly).
//! * /proc/net/dev's counters and the TCP and UDP sockets of
//!   /proc/net/{tcp,udp,tcp6,udp6} come from the stack. smoltcp knows no
//!   owners or inodes: those columns show 0.
//!
//! Before the stack is up (early boot) the table alone answers.

use alloc::vec::Vec;

use kiln_netlink::procnet::InetSock;
use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::iface::Route as SmolRoute;
use smoltcp::wire::{IpAddress, IpCidr, Ipv4Address, Ipv6Address};

use super::ifaces::{self, AddMode, Address, IfTable, Interfaces, IpAddr, Link, Route, SockTable};
use super::inet::ports::Transport;
use super::inet::stack;

/// The table the stack provides (installed by [`install`]).
pub struct InetTable;

static INET_TABLE: InetTable = InetTable;

/// Makes the stack-backed table the one the control plane uses.
pub fn install() {
    ifaces::set_provider(&INET_TABLE);
}

/// A NIC the stack took as interface `index`: its link in the table,
/// up, as Linux shows an Ethernet device a network configuration
/// brought up (so SIOCGIFINDEX, `ip link` and a DHCP client find it).
/// Takes only the table's spin lock: the stack's lock may be held.
pub fn register_nic(index: u32, name: &str, mac: [u8; 6], mtu: u32) -> Result<(), Errno> {
    use kiln_netlink::ifreq as ifr;
    let link = Link {
        index: 0,
        name: ifaces::IfName::new(name.as_bytes()).ok_or(Errno::EINVAL)?,
        kind: kiln_netlink::rtnl::ARPHRD_ETHER,
        flags: ifr::IFF_UP | ifr::IFF_BROADCAST | ifr::IFF_RUNNING | ifr::IFF_MULTICAST | ifr::IFF_LOWER_UP,
        mtu,
        min_mtu: 68,
        max_mtu: mtu,
        mac,
        broadcast: [0xff; 6],
        txqlen: 1000,
        qdisc: "pfifo_fast",
        stats: Default::default(),
    };
    let got = base().add_link(link)?;
    if got != index {
        // The table numbers links in the order they come, as the stack
        // does; a mismatch would send the control plane to another NIC.
        log::warn!("net: {name}: the interface table gave index {got}, the stack {index}");
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// An IPv4 address `ip=` (or its DHCP lease) put on NIC `index`
/// (already in smoltcp): into the table too, so the listings show it.
pub fn record_address(index: u32, name: &str, addr: [u8; 4], prefix: u8) -> Result<(), Errno> {
    let now = ifaces::now_centis();
    let a = Address {
        index,
        addr: IpAddr::V4(addr),
        prefix,
        // Linux's ipconfig sets the broadcast too (SIOCSIFBRDADDR).
        broadcast: Some((u32::from_be_bytes(addr) | !mask_of(prefix)).to_be_bytes()),
        scope: kiln_netlink::rtnl::RT_SCOPE_UNIVERSE,
        flags: kiln_netlink::rtnl::IFA_F_PERMANENT,
        label: ifaces::IfName::new(name.as_bytes()).unwrap_or_default(),
        cstamp: now,
        tstamp: now,
    };
    base().add_address(a, AddMode { create: true, ..Default::default() })
}

/// The netmask of an IPv4 prefix length.
fn mask_of(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - prefix.min(32) as u32).unwrap_or(0)
}

/// An IPv4 address a DHCP lease gave NIC `index` and a later event
/// took back: out of the table too.
pub fn forget_address(index: u32, addr: [u8; 4]) {
    let _ = base().del_address(index, Some(IpAddr::V4(addr)), None);
}

fn base() -> &'static IfTable {
    ifaces::builtin()
}

fn to_smol(a: &IpAddr) -> IpAddress {
    match a {
        IpAddr::V4(b) => IpAddress::Ipv4(Ipv4Address::from(*b)),
        IpAddr::V6(b) => IpAddress::Ipv6(Ipv6Address::from(*b)),
    }
}

/// Runs `f` on the smoltcp interface with Linux index `index`, if the
/// stack is up and has it.
fn with_iface<T>(index: u32, f: impl FnOnce(&mut stack::Iface) -> T) -> Option<T> {
    let mut st = stack::lock().ok()?;
    st.ifaces.iter_mut().find(|i| i.info.index == index).map(f)
}

/// Puts an address into the stack (ENOMEM if its interface is full).
fn stack_add(index: u32, addr: &IpAddr, prefix: u8) -> Result<(), Errno> {
    let c = IpCidr::new(to_smol(addr), prefix);
    let added = with_iface(index, |f| {
        let mut ok = true;
        f.iface.update_ip_addrs(|v| {
            v.retain(|x| x.address() != c.address());
            ok = v.push(c).is_ok();
        });
        ok
    });
    if added == Some(false) {
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

fn stack_del(index: u32, addr: &IpAddr) {
    let a = to_smol(addr);
    with_iface(index, |f| f.iface.update_ip_addrs(|v| v.retain(|x| x.address() != a)));
}

fn addresses_of(index: u32) -> Vec<Address> {
    base().addresses().unwrap_or_default().into_iter().filter(|a| a.index == index).collect()
}

/// Fills a listing entry's address in its table's form: an IPv4 peer of
/// an IPv6 socket as `::ffff:a.b.c.d`, as Linux lists it.
fn put_listed(dst: &mut [u8; 16], a: Option<IpAddress>, v6: bool) {
    match a {
        Some(IpAddress::Ipv6(x)) if v6 => *dst = x.octets(),
        Some(IpAddress::Ipv4(x)) if v6 => {
            dst[10] = 0xff;
            dst[11] = 0xff;
            dst[12..].copy_from_slice(&x.octets());
        }
        Some(IpAddress::Ipv4(x)) => dst[..4].copy_from_slice(&x.octets()),
        _ => {}
    }
}

impl Interfaces for InetTable {
    fn links(&self) -> Result<Vec<Link>, Errno> {
        let mut links = base().links()?;
        if let Ok(st) = stack::lock() {
            for l in links.iter_mut() {
                if let Some(f) = st.ifaces.iter().find(|f| f.info.index == l.index) {
                    let c = f.dev.counters();
                    l.stats.rx_packets = c.rx_packets;
                    l.stats.rx_bytes = c.rx_bytes;
                    l.stats.tx_packets = c.tx_packets;
                    l.stats.tx_bytes = c.tx_bytes;
                    l.stats.rx_dropped = c.rx_dropped;
                    l.stats.tx_dropped = c.tx_dropped;
                }
            }
        }
        Ok(links)
    }

    fn addresses(&self) -> Result<Vec<Address>, Errno> {
        base().addresses()
    }

    fn routes(&self) -> Result<Vec<Route>, Errno> {
        base().routes()
    }

    fn set_flags(&self, index: u32, flags: u32, mask: u32) -> Result<(), Errno> {
        let was_up = ifaces::link_by_index(index)?.is_up();
        base().set_flags(index, flags, mask)?;
        let up = ifaces::link_by_index(index)?.is_up();
        if was_up && !up {
            for a in addresses_of(index) {
                stack_del(index, &a.addr);
            }
        } else if up && !was_up {
            for a in addresses_of(index) {
                stack_add(index, &a.addr, a.prefix)?;
            }
        }
        Ok(())
    }

    fn set_mtu(&self, index: u32, mtu: u32) -> Result<(), Errno> {
        let link = ifaces::link_by_index(index)?;
        // smoltcp takes a NIC's MTU from its device; only the loopback's
        // (which carries up to 64 KiB whatever it says) may be changed.
        if link.kind != kiln_netlink::rtnl::ARPHRD_LOOPBACK && mtu != link.mtu {
            return Err(Errno::EOPNOTSUPP);
        }
        base().set_mtu(index, mtu)
    }

    fn add_address(&self, a: Address, mode: AddMode) -> Result<(), Errno> {
        let (index, addr, prefix) = (a.index, a.addr, a.prefix);
        base().add_address(a, mode)?;
        if ifaces::link_by_index(index)?.is_up() {
            if let Err(e) = stack_add(index, &addr, prefix) {
                let _ = base().del_address(index, Some(addr), Some(prefix));
                return Err(e);
            }
        }
        Ok(())
    }

    fn del_address(&self, index: u32, addr: Option<IpAddr>, prefix: Option<u8>) -> Result<Address, Errno> {
        let gone = base().del_address(index, addr, prefix)?;
        stack_del(index, &gone.addr);
        Ok(gone)
    }

    fn add_route(&self, r: Route, mode: AddMode) -> Result<(), Errno> {
        let (oif, gw, dst, prefix) = (r.oif, r.gateway, r.dst, r.prefix);
        base().add_route(r, mode)?;
        if let Some(gw) = gw {
            let route = SmolRoute {
                cidr: IpCidr::new(to_smol(&dst), prefix),
                via_router: to_smol(&gw),
                preferred_until: None,
                expires_at: None,
            };
            let mut full = false;
            with_iface(oif, |f| {
                f.iface.routes_mut().update(|v| {
                    v.retain(|x| x.cidr != route.cidr);
                    full = v.push(route).is_err();
                })
            });
            if full {
                let key = Route { gateway: Some(gw), ..base_key(dst, prefix, oif) };
                let _ = base().del_route(&key);
                return Err(Errno::ENOMEM);
            }
        }
        Ok(())
    }

    fn del_route(&self, key: &Route) -> Result<Route, Errno> {
        let gone = base().del_route(key)?;
        if gone.gateway.is_some() {
            let cidr = IpCidr::new(to_smol(&gone.dst), gone.prefix);
            with_iface(gone.oif, |f| f.iface.routes_mut().update(|v| v.retain(|x| x.cidr != cidr)));
        }
        Ok(gone)
    }

    fn sockets(&self, table: SockTable) -> Result<Vec<InetSock>, Errno> {
        // The stack's own listing (through each socket's watcher) knows
        // the owner and inode, and shows a listener once however many
        // smoltcp sockets back it.
        let entries = match stack::lock() {
            Ok(mut st) => st.entries(),
            Err(_) => return Ok(Vec::new()),
        };
        let (transport, family) = match table {
            SockTable::Tcp => (Transport::Tcp, s::AF_INET),
            SockTable::Tcp6 => (Transport::Tcp, s::AF_INET6),
            SockTable::Udp => (Transport::Udp, s::AF_INET),
            SockTable::Udp6 => (Transport::Udp, s::AF_INET6),
        };
        let mut out: Vec<InetSock> = Vec::new();
        for e in entries.iter().filter(|e| e.transport == transport && e.family == family) {
            let mut sk = InetSock {
                local_port: e.local.port,
                remote_port: e.remote.port,
                state: e.state,
                tx_queue: u32::try_from(e.tx_queue).unwrap_or(u32::MAX),
                rx_queue: u32::try_from(e.rx_queue).unwrap_or(u32::MAX),
                uid: e.uid,
                inode: e.inode,
                ..InetSock::default()
            };
            let v6 = family == s::AF_INET6;
            put_listed(&mut sk.local, e.local.addr, v6);
            put_listed(&mut sk.remote, e.remote.addr, v6);
            out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            out.push(sk);
        }
        Ok(out)
    }
}

fn base_key(dst: IpAddr, prefix: u8, oif: u32) -> Route {
    Route { table: 0, kind: 0, dst, prefix, gateway: None, oif, scope: 0, protocol: 0, prefsrc: None, metric: 0 }
}
