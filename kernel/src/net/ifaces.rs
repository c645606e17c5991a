//! The interface table: what the control plane (netlink, the SIOC*IF*
//! ioctls, /proc/net) sees of the network stack and asks it to change.
//!
//! * [`Interfaces`] is the surface: list the links, the addresses and
//!   the routes, bring a link up or down or change its MTU, add and
//!   remove addresses and routes, list the Internet sockets. The stack
//!   provides one ([`set_provider`], once, at boot); until then the
//!   built-in [`IfTable`] answers with `lo` alone.
//! * [`IfTable`] is a complete table any stack may use as its
//!   configuration store: links with Linux's defaults, addresses with
//!   their lifetimes, static routes, and the kernel routes Linux derives
//!   from each address of a link that is up (`fib_add_ifaddr` for IPv4,
//!   the prefix route for IPv6), in Linux's table order.
//!
//! Errors are the errnos Linux's `devinet`/`addrconf`/`fib` code gives;
//! the callers turn them into netlink errors or ioctl results unchanged.

use alloc::vec::Vec;

use hal::sync::{Once, SpinLock};
use kiln_netlink::ifreq as ifr;
use kiln_netlink::procnet::{DevStats, InetSock};
use kiln_netlink::rtnl as r;
use linux_abi::errno::Errno;
use linux_abi::socket as s;

/// An interface name (at most 15 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IfName {
    bytes: [u8; ifr::IFNAMSIZ],
    len: u8,
}

impl IfName {
    /// The name `b` names, or None if it is empty or too long.
    pub fn new(b: &[u8]) -> Option<IfName> {
        if b.is_empty() || b.len() >= ifr::IFNAMSIZ {
            return None;
        }
        let mut bytes = [0u8; ifr::IFNAMSIZ];
        bytes[..b.len()].copy_from_slice(b);
        Some(IfName { bytes, len: b.len() as u8 })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("?")
    }
}

/// An IPv4 or IPv6 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl IpAddr {
    pub fn family(&self) -> u16 {
        match self {
            IpAddr::V4(_) => s::AF_INET,
            IpAddr::V6(_) => s::AF_INET6,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            IpAddr::V4(a) => a,
            IpAddr::V6(a) => a,
        }
    }

    /// The longest prefix this family allows.
    pub fn max_prefix(&self) -> u8 {
        match self {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    /// An address of `family` from its bytes (None for a wrong length).
    pub fn from_bytes(family: u16, b: &[u8]) -> Option<IpAddr> {
        match family {
            s::AF_INET => b.get(..4).map(|a| IpAddr::V4([a[0], a[1], a[2], a[3]])),
            s::AF_INET6 => {
                let a: [u8; 16] = b.get(..16)?.try_into().ok()?;
                Some(IpAddr::V6(a))
            }
            _ => None,
        }
    }

    /// The address with everything past `prefix` bits cleared.
    pub fn network(&self, prefix: u8) -> IpAddr {
        let mut out = *self;
        let bytes: &mut [u8] = match &mut out {
            IpAddr::V4(a) => a,
            IpAddr::V6(a) => a,
        };
        for (i, b) in bytes.iter_mut().enumerate() {
            let keep = (prefix as usize).saturating_sub(i * 8).min(8);
            *b &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
        }
        out
    }

    /// Whether the first `prefix` bits of both are the same.
    pub fn same_prefix(&self, other: &IpAddr, prefix: u8) -> bool {
        self.family() == other.family() && self.network(prefix) == other.network(prefix)
    }

    fn order_key(&self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..self.bytes().len()].copy_from_slice(self.bytes());
        k
    }
}

/// One link (a network device) as the control plane sees it.
#[derive(Clone, Debug)]
pub struct Link {
    pub index: u32,
    pub name: IfName,
    /// ARPHRD_* hardware type.
    pub kind: u16,
    /// IFF_* flags, IFF_RUNNING and IFF_LOWER_UP included.
    pub flags: u32,
    pub mtu: u32,
    pub min_mtu: u32,
    pub max_mtu: u32,
    pub mac: [u8; 6],
    pub broadcast: [u8; 6],
    pub txqlen: u32,
    /// The queueing discipline's name, as `ip link` shows it.
    pub qdisc: &'static str,
    pub stats: DevStats,
}

impl Link {
    pub fn is_up(&self) -> bool {
        self.flags & ifr::IFF_UP != 0
    }

    /// IF_OPER_* as Linux reports it: a loopback's state is unknown.
    pub fn operstate(&self) -> u8 {
        if self.kind == r::ARPHRD_LOOPBACK {
            r::IF_OPER_UNKNOWN
        } else if self.is_up() && self.flags & ifr::IFF_LOWER_UP != 0 {
            r::IF_OPER_UP
        } else {
            r::IF_OPER_DOWN
        }
    }
}

/// An address on a link.
#[derive(Clone, Debug)]
pub struct Address {
    pub index: u32,
    pub addr: IpAddr,
    pub prefix: u8,
    /// IPv4's broadcast address, if one was given.
    pub broadcast: Option<[u8; 4]>,
    pub scope: u8,
    /// IFA_F_* flags.
    pub flags: u32,
    /// IPv4's label (the link's name unless set).
    pub label: IfName,
    /// Creation and last-change times, hundredths of a second since boot.
    pub cstamp: u32,
    pub tstamp: u32,
}

/// A route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub table: u8,
    /// RTN_* route type.
    pub kind: u8,
    pub dst: IpAddr,
    pub prefix: u8,
    pub gateway: Option<IpAddr>,
    /// Output interface (0: none).
    pub oif: u32,
    pub scope: u8,
    /// RTPROT_* origin.
    pub protocol: u8,
    pub prefsrc: Option<IpAddr>,
    pub metric: u32,
}

/// The Internet socket tables /proc/net lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockTable {
    Tcp,
    Udp,
    Tcp6,
    Udp6,
}

/// How an address or route being added meets an existing one.
#[derive(Clone, Copy, Debug, Default)]
pub struct AddMode {
    /// NLM_F_EXCL: EEXIST if it exists.
    pub excl: bool,
    /// NLM_F_REPLACE: replace it.
    pub replace: bool,
    /// NLM_F_CREATE: create it if missing.
    pub create: bool,
}

/// The stack's control surface (see the module documentation).
pub trait Interfaces: Send + Sync {
    /// Every link, by index.
    fn links(&self) -> Result<Vec<Link>, Errno>;
    /// Every address: IPv4 ones first, then IPv6, each by link.
    fn addresses(&self) -> Result<Vec<Address>, Errno>;
    /// Every route of every table, in Linux's dump order.
    fn routes(&self) -> Result<Vec<Route>, Errno>;
    /// Sets a link's changeable IFF_* flags (`flags` under `mask`).
    fn set_flags(&self, index: u32, flags: u32, mask: u32) -> Result<(), Errno>;
    fn set_mtu(&self, index: u32, mtu: u32) -> Result<(), Errno>;
    fn add_address(&self, a: Address, mode: AddMode) -> Result<(), Errno>;
    /// Removes the address `addr` (any prefix when None) from a link.
    fn del_address(&self, index: u32, addr: Option<IpAddr>, prefix: Option<u8>) -> Result<Address, Errno>;
    fn add_route(&self, r: Route, mode: AddMode) -> Result<(), Errno>;
    /// Removes the first route that `key` matches (fields left zero or
    /// None match anything, as `fib_table_delete` does).
    fn del_route(&self, key: &Route) -> Result<Route, Errno>;
    /// The sockets of one table for /proc/net.
    fn sockets(&self, _table: SockTable) -> Result<Vec<InetSock>, Errno> {
        Ok(Vec::new())
    }
}

static PROVIDER: Once<&'static dyn Interfaces> = Once::new();
static BUILTIN: IfTable = IfTable::new();

/// Installs the network stack's interface table (once, at boot).
pub fn set_provider(p: &'static dyn Interfaces) {
    PROVIDER.set(p);
}

/// The interface table in use.
pub fn table() -> &'static dyn Interfaces {
    match PROVIDER.get() {
        Some(p) => *p,
        None => &BUILTIN,
    }
}

/// Brings up `lo` in the built-in table (once, at boot, before any
/// socket exists).
pub fn init() {
    BUILTIN.ensure_loopback();
}

/// The built-in table (the stack may register its devices here and
/// install it with [`set_provider`]).
pub fn builtin() -> &'static IfTable {
    &BUILTIN
}

/// Finds a link by name.
pub fn link_by_name(name: &[u8]) -> Result<Link, Errno> {
    table().links()?.into_iter().find(|l| l.name.as_bytes() == name).ok_or(Errno::ENODEV)
}

/// Finds a link by index.
pub fn link_by_index(index: u32) -> Result<Link, Errno> {
    table().links()?.into_iter().find(|l| l.index == index).ok_or(Errno::ENODEV)
}

/// Hundredths of a second since boot (the stamps of `ifa_cacheinfo`).
pub fn now_centis() -> u32 {
    (hal::time::monotonic_ns() / 10_000_000) as u32
}

struct TableState {
    links: Vec<Link>,
    addrs: Vec<Address>,
    routes: Vec<Route>,
    next_index: u32,
}

/// A complete interface table (see the module documentation).
pub struct IfTable {
    state: SpinLock<TableState>,
    loopback: Once<()>,
}

fn grow<T>(v: &mut Vec<T>) -> Result<(), Errno> {
    v.try_reserve(1).map_err(|_| Errno::ENOMEM)
}

impl Default for IfTable {
    fn default() -> Self {
        Self::new()
    }
}

impl IfTable {
    pub const fn new() -> IfTable {
        IfTable {
            state: SpinLock::new(TableState {
                links: Vec::new(),
                addrs: Vec::new(),
                routes: Vec::new(),
                next_index: 1,
            }),
            loopback: Once::new(),
        }
    }

    /// `lo` as Linux brings it up: index 1, MTU 65536, 127.0.0.1/8 and
    /// ::1/128.
    fn ensure_loopback(&self) {
        if !self.loopback.set(()) {
            return;
        }
        let flags = ifr::IFF_UP | ifr::IFF_LOOPBACK | ifr::IFF_RUNNING | ifr::IFF_LOWER_UP;
        let lo = Link {
            index: 0,
            name: IfName::new(b"lo").unwrap_or_default(),
            kind: r::ARPHRD_LOOPBACK,
            flags,
            mtu: 65536,
            min_mtu: 0,
            max_mtu: 0,
            mac: [0; 6],
            broadcast: [0; 6],
            txqlen: 1000,
            qdisc: "noqueue",
            stats: DevStats::default(),
        };
        let Ok(index) = self.add_link(lo) else { return };
        let now = now_centis();
        let mut v6 = [0u8; 16];
        v6[15] = 1;
        for (addr, prefix) in [(IpAddr::V4([127, 0, 0, 1]), 8), (IpAddr::V6(v6), 128)] {
            let a = Address {
                index,
                addr,
                prefix,
                broadcast: None,
                scope: r::RT_SCOPE_HOST,
                flags: r::IFA_F_PERMANENT,
                label: IfName::new(b"lo").unwrap_or_default(),
                cstamp: now,
                tstamp: now,
            };
            let _ = self.add_address(a, AddMode { create: true, ..Default::default() });
        }
    }

    /// Adds a link (its `index` is chosen here) and returns its index.
    pub fn add_link(&self, mut link: Link) -> Result<u32, Errno> {
        let mut st = self.state.lock();
        if st.links.iter().any(|l| l.name == link.name) {
            return Err(Errno::EEXIST);
        }
        grow(&mut st.links)?;
        link.index = st.next_index;
        st.next_index += 1;
        let index = link.index;
        st.links.push(link);
        Ok(index)
    }

    /// Updates a link's counters or carrier (the driver's side).
    #[allow(dead_code)] // for the network stack (issue 12)
    pub fn update_link(&self, index: u32, f: impl FnOnce(&mut Link)) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let link = st.links.iter_mut().find(|l| l.index == index).ok_or(Errno::ENODEV)?;
        f(link);
        Ok(())
    }

    /// The kernel routes of one address on an up link (Linux's
    /// `fib_add_ifaddr` for IPv4; the prefix and local routes of
    /// `addrconf` for IPv6).
    fn derived(link: &Link, a: &Address, out: &mut Vec<Route>) -> Result<(), Errno> {
        let loopback = link.flags & ifr::IFF_LOOPBACK != 0;
        let base = Route {
            table: r::RT_TABLE_LOCAL,
            kind: r::RTN_LOCAL,
            dst: a.addr,
            prefix: a.addr.max_prefix(),
            gateway: None,
            oif: link.index,
            scope: r::RT_SCOPE_HOST,
            protocol: r::RTPROT_KERNEL,
            prefsrc: Some(a.addr),
            metric: 0,
        };
        out.try_reserve(4).map_err(|_| Errno::ENOMEM)?;
        match a.addr {
            IpAddr::V4(v4) => {
                out.push(base.clone());
                if a.prefix < 32 && a.flags & r::IFA_F_NOPREFIXROUTE == 0 {
                    let kind = if loopback { r::RTN_LOCAL } else { r::RTN_UNICAST };
                    let (table, scope) = if loopback {
                        (r::RT_TABLE_LOCAL, r::RT_SCOPE_HOST)
                    } else {
                        (r::RT_TABLE_MAIN, r::RT_SCOPE_LINK)
                    };
                    out.push(Route {
                        table,
                        kind,
                        dst: a.addr.network(a.prefix),
                        prefix: a.prefix,
                        scope,
                        ..base.clone()
                    });
                }
                if a.prefix < 31 {
                    let mask = u32::from_be_bytes(ifr::netmask(a.prefix));
                    let bcast = (u32::from_be_bytes(v4) | !mask).to_be_bytes();
                    out.push(Route {
                        kind: r::RTN_BROADCAST,
                        dst: IpAddr::V4(bcast),
                        prefix: 32,
                        scope: r::RT_SCOPE_LINK,
                        ..base.clone()
                    });
                }
            }
            IpAddr::V6(_) => {
                // IPv6 routes all have universe scope (`rt6_fill_node`).
                out.push(Route { prefsrc: None, scope: r::RT_SCOPE_UNIVERSE, ..base.clone() });
                // A /128 has no prefix beyond itself.
                if a.flags & r::IFA_F_NOPREFIXROUTE == 0 && a.prefix < 128 {
                    out.push(Route {
                        table: r::RT_TABLE_MAIN,
                        kind: r::RTN_UNICAST,
                        dst: a.addr.network(a.prefix),
                        prefix: a.prefix,
                        scope: r::RT_SCOPE_UNIVERSE,
                        prefsrc: None,
                        metric: 256,
                        ..base
                    });
                }
            }
        }
        Ok(())
    }
}

/// Linux's dump order: IPv4 before IPv6; within a family the main table
/// before the local one; then by destination and prefix.
fn route_order(a: &Route, b: &Route) -> core::cmp::Ordering {
    (a.dst.family(), a.table, a.dst.order_key(), a.prefix, a.kind).cmp(&(
        b.dst.family(),
        b.table,
        b.dst.order_key(),
        b.prefix,
        b.kind,
    ))
}

impl Interfaces for IfTable {
    fn links(&self) -> Result<Vec<Link>, Errno> {
        let st = self.state.lock();
        let mut v = Vec::new();
        v.try_reserve_exact(st.links.len()).map_err(|_| Errno::ENOMEM)?;
        v.extend(st.links.iter().cloned());
        Ok(v)
    }

    fn addresses(&self) -> Result<Vec<Address>, Errno> {
        let st = self.state.lock();
        let mut v: Vec<Address> = Vec::new();
        v.try_reserve_exact(st.addrs.len()).map_err(|_| Errno::ENOMEM)?;
        for family in [s::AF_INET, s::AF_INET6] {
            for link in &st.links {
                v.extend(st.addrs.iter().filter(|a| a.index == link.index && a.addr.family() == family).cloned());
            }
        }
        Ok(v)
    }

    fn routes(&self) -> Result<Vec<Route>, Errno> {
        let st = self.state.lock();
        let mut v: Vec<Route> = Vec::new();
        v.try_reserve(st.routes.len()).map_err(|_| Errno::ENOMEM)?;
        v.extend(st.routes.iter().filter(|r| st.links.iter().any(|l| l.index == r.oif && l.is_up())).cloned());
        for a in &st.addrs {
            if let Some(link) = st.links.iter().find(|l| l.index == a.index && l.is_up()) {
                Self::derived(link, a, &mut v)?;
            }
        }
        v.sort_by(route_order);
        v.dedup();
        Ok(v)
    }

    fn set_flags(&self, index: u32, flags: u32, mask: u32) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let link = st.links.iter_mut().find(|l| l.index == index).ok_or(Errno::ENODEV)?;
        let mask = mask & ifr::IFF_CHANGEABLE;
        link.flags = (link.flags & !mask) | (flags & mask);
        // A loopback (or any link without a carrier to lose) runs while up.
        if link.is_up() {
            link.flags |= ifr::IFF_RUNNING | ifr::IFF_LOWER_UP;
        } else {
            link.flags &= !(ifr::IFF_RUNNING | ifr::IFF_LOWER_UP);
        }
        Ok(())
    }

    fn set_mtu(&self, index: u32, mtu: u32) -> Result<(), Errno> {
        let mut st = self.state.lock();
        let link = st.links.iter_mut().find(|l| l.index == index).ok_or(Errno::ENODEV)?;
        // `dev_validate_mtu`: a bound of 0 means none.
        if mtu < link.min_mtu || (link.max_mtu != 0 && mtu > link.max_mtu) || mtu > i32::MAX as u32 {
            return Err(Errno::EINVAL);
        }
        link.mtu = mtu;
        Ok(())
    }

    fn add_address(&self, a: Address, mode: AddMode) -> Result<(), Errno> {
        let mut st = self.state.lock();
        if !st.links.iter().any(|l| l.index == a.index) {
            return Err(Errno::ENODEV);
        }
        let same = |b: &Address| {
            b.index == a.index
                && b.addr == a.addr
                && match a.addr {
                    // IPv4 addresses are one per (local, prefix) pair.
                    IpAddr::V4(_) => b.prefix == a.prefix,
                    IpAddr::V6(_) => true,
                }
        };
        if let Some(old) = st.addrs.iter_mut().find(|b| same(b)) {
            if mode.excl || !mode.replace {
                return Err(Errno::EEXIST);
            }
            let cstamp = old.cstamp;
            *old = Address { cstamp, ..a };
            return Ok(());
        }
        let mut a = a;
        // A second IPv4 address in a subnet the link already has is secondary.
        if let IpAddr::V4(_) = a.addr {
            if st
                .addrs
                .iter()
                .any(|b| b.index == a.index && b.prefix == a.prefix && b.addr.same_prefix(&a.addr, a.prefix))
            {
                a.flags |= r::IFA_F_SECONDARY;
            }
        }
        grow(&mut st.addrs)?;
        st.addrs.push(a);
        Ok(())
    }

    fn del_address(&self, index: u32, addr: Option<IpAddr>, prefix: Option<u8>) -> Result<Address, Errno> {
        let mut st = self.state.lock();
        if !st.links.iter().any(|l| l.index == index) {
            return Err(Errno::ENODEV);
        }
        let pos = st
            .addrs
            .iter()
            .position(|b| b.index == index && addr.is_none_or(|x| x == b.addr) && prefix.is_none_or(|p| p == b.prefix))
            .ok_or(Errno::EADDRNOTAVAIL)?;
        Ok(st.addrs.remove(pos))
    }

    fn add_route(&self, rt: Route, mode: AddMode) -> Result<(), Errno> {
        let mut st = self.state.lock();
        if !st.links.iter().any(|l| l.index == rt.oif) {
            return Err(Errno::ENODEV);
        }
        let same = |b: &Route| b.table == rt.table && b.dst == rt.dst && b.prefix == rt.prefix && b.metric == rt.metric;
        if let Some(old) = st.routes.iter_mut().find(|b| same(b)) {
            // Linux keeps several routes to one prefix only when they
            // differ (NLM_F_APPEND); Kiln keeps one: again is EEXIST.
            if mode.excl || !mode.replace {
                return Err(Errno::EEXIST);
            }
            *old = rt;
            return Ok(());
        } else if !mode.create {
            return Err(Errno::ENOENT);
        }
        grow(&mut st.routes)?;
        st.routes.push(rt);
        Ok(())
    }

    fn del_route(&self, key: &Route) -> Result<Route, Errno> {
        let mut st = self.state.lock();
        let pos = st
            .routes
            .iter()
            .position(|b| {
                b.dst == key.dst
                    && b.prefix == key.prefix
                    && (key.table == r::RT_TABLE_UNSPEC || key.table == b.table)
                    && (key.oif == 0 || key.oif == b.oif)
                    && (key.gateway.is_none() || key.gateway == b.gateway)
                    && (key.metric == 0 || key.metric == b.metric)
                    && (key.protocol == 0 || key.protocol == b.protocol)
            })
            .ok_or(Errno::ESRCH)?;
        Ok(st.routes.remove(pos))
    }
}
