//! NETLINK_ROUTE (Linux's `rtnetlink.c` with the handlers of `devinet`,
//! `addrconf` and `fib_frontend`): links, addresses and routes of the
//! interface table ([`crate::net::ifaces`]).
//!
//! Requests are walked as `netlink_rcv_skb` walks them; each answers
//! with its reply, then an NLMSG_ERROR carrying 0 (an ack, if
//! NLM_F_ACK) or the errno. Dumps (RTM_GETLINK, RTM_GETADDR,
//! RTM_GETROUTE, RTM_GETNEIGH with NLM_F_DUMP) are multipart messages
//! closed by NLMSG_DONE and never acked. Changes need CAP_NET_ADMIN
//! and are announced to the matching multicast group. Message types
//! Kiln does not implement answer EOPNOTSUPP, as Linux does for types no
//! family registered.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use kiln_netlink::ifreq as ifr;
use kiln_netlink::rtnl::{self as r, IfAddrMsg, IfInfoMsg, IfaCacheinfo, Kind, RtMsg};
use kiln_netlink::wire::{self as nl, Attrs, Msg, MsgBuilder, Msgs, NoMemory};
use linux_abi::errno::Errno;
use linux_abi::socket as s;

use super::NetlinkSocket;
use crate::net::ifaces::{self, AddMode, Address, IfName, IpAddr, Link, Route};

/// `RTA_UID`: the user a route lookup was made for.
const RTA_UID: u16 = 25;
/// `RTM_F_CLONED`: a lookup's answer, not a table entry.
const RTM_F_CLONED: u32 = 0x200;
/// `struct rtnl_link_ifmap` (u64 mem_start, mem_end, base_addr; u16 irq;
/// u8 dma, port; padding).
const IFMAP64_SIZE: usize = 32;

fn nomem(_: NoMemory) -> Errno {
    Errno::ENOMEM
}

/// What handling one request did.
enum Done {
    /// Replied (or had nothing to do): ack if asked.
    Handled,
    /// Started a dump: no ack.
    Dump,
}

/// Handles the requests in `data`, sent by port `portid` of `sock`.
pub fn receive(sock: &NetlinkSocket, portid: u32, data: &[u8]) {
    for msg in Msgs::new(data) {
        let h = msg.header;
        let result = if h.flags & nl::NLM_F_REQUEST == 0 || h.kind < nl::NLMSG_MIN_TYPE {
            Ok(Done::Handled)
        } else {
            handle(sock, portid, &msg)
        };
        let errno = match result {
            Ok(Done::Dump) => continue,
            Ok(Done::Handled) => 0,
            Err(e) => e as i32,
        };
        if h.flags & nl::NLM_F_ACK != 0 || errno != 0 {
            let mut b = MsgBuilder::new();
            if b.error(&msg, errno, portid, sock.cap_ack()).is_ok() {
                let _ = sock.deliver(b.into_bytes(), 0, 0);
            }
        }
    }
}

fn handle(sock: &NetlinkSocket, portid: u32, msg: &Msg<'_>) -> Result<Done, Errno> {
    let h = msg.header;
    if h.kind > r::RTM_MAX {
        return Err(Errno::EOPNOTSUPP);
    }
    // Every rtnetlink message has at least its family byte.
    let Some(&family) = msg.payload.first() else {
        return Ok(Done::Handled);
    };
    let kind = r::kind(h.kind);
    if kind != Kind::Get && !super::net_admin() {
        return Err(Errno::EPERM);
    }
    if kind == Kind::Get && h.flags & nl::NLM_F_DUMP != 0 {
        if sock.dump_running() {
            return Err(Errno::EBUSY);
        }
        let chunks = dump(h.kind, family, h.seq, portid, sock.dump_chunk())?;
        sock.start_dump(chunks)?;
        return Ok(Done::Dump);
    }
    let req = Request { sock, portid, msg };
    match h.kind {
        r::RTM_GETLINK => req.get_link(),
        r::RTM_NEWLINK => req.set_link(true),
        r::RTM_SETLINK => req.set_link(false),
        r::RTM_DELLINK => req.del_link(),
        r::RTM_NEWADDR | r::RTM_DELADDR if family as u16 == s::AF_INET || family as u16 == s::AF_INET6 => {
            if h.kind == r::RTM_NEWADDR {
                req.new_addr(family as u16)
            } else {
                req.del_addr(family as u16)
            }
        }
        r::RTM_NEWROUTE | r::RTM_DELROUTE | r::RTM_GETROUTE
            if family as u16 == s::AF_INET || family as u16 == s::AF_INET6 =>
        {
            match h.kind {
                r::RTM_NEWROUTE => req.new_route(family as u16),
                r::RTM_DELROUTE => req.del_route(family as u16),
                _ => req.get_route(family as u16),
            }
        }
        _ => Err(Errno::EOPNOTSUPP),
    }?;
    Ok(Done::Handled)
}

/// A dump's datagrams being filled: a message that would take the
/// current one past the limit starts the next.
struct Dump {
    chunks: VecDeque<Vec<u8>>,
    cur: MsgBuilder,
    limit: usize,
}

impl Dump {
    fn add(&mut self, f: impl FnOnce(&mut MsgBuilder) -> Result<(), NoMemory>) -> Result<(), Errno> {
        let start = self.cur.len();
        f(&mut self.cur).map_err(nomem)?;
        if self.cur.len() > self.limit && start > 0 {
            let mut rest = Vec::new();
            rest.try_reserve_exact(self.cur.len() - start).map_err(|_| Errno::ENOMEM)?;
            rest.extend_from_slice(&self.cur.as_bytes()[start..]);
            self.cur.truncate(start);
            let full = core::mem::replace(&mut self.cur, MsgBuilder::from_bytes(rest));
            self.chunks.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            self.chunks.push_back(full.into_bytes());
        }
        Ok(())
    }

    fn finish(mut self, seq: u32, pid: u32) -> Result<VecDeque<Vec<u8>>, Errno> {
        self.add(|b| b.done(seq, pid, nl::NLM_F_MULTI))?;
        self.chunks.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.chunks.push_back(self.cur.into_bytes());
        Ok(self.chunks)
    }
}

/// The datagrams of a dump of `msg_type` for `family`.
fn dump(msg_type: u16, family: u8, seq: u32, pid: u32, limit: usize) -> Result<VecDeque<Vec<u8>>, Errno> {
    let mut d = Dump { chunks: VecDeque::new(), cur: MsgBuilder::new(), limit };
    let t = ifaces::table();
    let multi = nl::NLM_F_MULTI;
    let wants = |f: u16| family == 0 || family as u16 == f || !matches!(family as u16, s::AF_INET | s::AF_INET6);
    match msg_type {
        // IPv6 has a link dump of its own (`inet6_dump_ifinfo`).
        r::RTM_GETLINK if family as u16 == s::AF_INET6 => {
            for l in t.links()? {
                d.add(|b| fill_inet6_link(b, &l, multi, seq, pid))?;
            }
        }
        r::RTM_GETLINK => {
            for l in t.links()? {
                d.add(|b| fill_link(b, &l, multi, seq, pid, 0))?;
            }
        }
        r::RTM_GETADDR => {
            let links = t.links()?;
            for a in t.addresses()?.iter().filter(|a| wants(a.addr.family())) {
                if let Some(l) = links.iter().find(|l| l.index == a.index) {
                    d.add(|b| fill_addr(b, a, l, r::RTM_NEWADDR, multi, seq, pid))?;
                }
            }
        }
        r::RTM_GETROUTE => {
            for rt in t.routes()?.iter().filter(|rt| wants(rt.dst.family())) {
                d.add(|b| fill_route(b, rt, r::RTM_NEWROUTE, multi, seq, pid))?;
            }
        }
        // No neighbours are known: the dump is empty.
        r::RTM_GETNEIGH => {}
        _ => return Err(Errno::EOPNOTSUPP),
    }
    d.finish(seq, pid)
}

fn fill_link(b: &mut MsgBuilder, l: &Link, flags: u16, seq: u32, pid: u32, change: u32) -> Result<(), NoMemory> {
    b.begin(r::RTM_NEWLINK, flags, seq, pid)?;
    let info = IfInfoMsg { family: 0, kind: l.kind, index: l.index as i32, flags: l.flags, change };
    b.put_fixed(&info.to_bytes())?;
    b.attr_str(r::IFLA_IFNAME, l.name.as_bytes())?;
    b.attr_u32(r::IFLA_TXQLEN, l.txqlen)?;
    b.attr_u8(r::IFLA_OPERSTATE, l.operstate())?;
    b.attr_u8(r::IFLA_LINKMODE, 0)?;
    b.attr_u32(r::IFLA_MTU, l.mtu)?;
    b.attr_u32(r::IFLA_MIN_MTU, l.min_mtu)?;
    b.attr_u32(r::IFLA_MAX_MTU, l.max_mtu)?;
    b.attr_u32(r::IFLA_GROUP, 0)?;
    b.attr_u32(r::IFLA_PROMISCUITY, 0)?;
    b.attr_u32(r::IFLA_NUM_TX_QUEUES, 1)?;
    b.attr_u32(r::IFLA_GSO_MAX_SEGS, 65535)?;
    b.attr_u32(r::IFLA_GSO_MAX_SIZE, 65536)?;
    b.attr_u32(r::IFLA_NUM_RX_QUEUES, 1)?;
    b.attr_u8(r::IFLA_CARRIER, (l.flags & ifr::IFF_LOWER_UP != 0) as u8)?;
    b.attr_u32(r::IFLA_CARRIER_CHANGES, 0)?;
    b.attr_u32(r::IFLA_CARRIER_UP_COUNT, 0)?;
    b.attr_u32(r::IFLA_CARRIER_DOWN_COUNT, 0)?;
    b.attr_u8(r::IFLA_PROTO_DOWN, 0)?;
    b.attr(r::IFLA_MAP, &[0u8; IFMAP64_SIZE])?;
    b.attr(r::IFLA_ADDRESS, &l.mac)?;
    b.attr(r::IFLA_BROADCAST, &l.broadcast)?;
    let st = &l.stats;
    let counters = [
        st.rx_packets,
        st.tx_packets,
        st.rx_bytes,
        st.tx_bytes,
        st.rx_errors,
        st.tx_errors,
        st.rx_dropped,
        st.tx_dropped,
        st.multicast,
    ];
    let (s32, s64) = r::link_stats(&counters);
    b.attr(r::IFLA_STATS64, &s64)?;
    b.attr(r::IFLA_STATS, &s32)?;
    b.attr_str(r::IFLA_QDISC, l.qdisc.as_bytes())?;
    b.end();
    Ok(())
}

/// A link as IPv6 describes it (`inet6_fill_ifinfo`; Kiln sends no
/// IFLA_PROTINFO, the per-device IPv6 settings it does not keep).
fn fill_inet6_link(b: &mut MsgBuilder, l: &Link, flags: u16, seq: u32, pid: u32) -> Result<(), NoMemory> {
    b.begin(r::RTM_NEWLINK, flags, seq, pid)?;
    let info = IfInfoMsg { family: s::AF_INET6 as u8, kind: l.kind, index: l.index as i32, flags: l.flags, change: 0 };
    b.put_fixed(&info.to_bytes())?;
    b.attr_str(r::IFLA_IFNAME, l.name.as_bytes())?;
    b.attr(r::IFLA_ADDRESS, &l.mac)?;
    b.attr_u32(r::IFLA_MTU, l.mtu)?;
    b.attr_u8(r::IFLA_OPERSTATE, l.operstate())?;
    b.end();
    Ok(())
}

fn fill_addr(
    b: &mut MsgBuilder,
    a: &Address,
    l: &Link,
    kind: u16,
    flags: u16,
    seq: u32,
    pid: u32,
) -> Result<(), NoMemory> {
    b.begin(kind, flags, seq, pid)?;
    let family = a.addr.family() as u8;
    let m = IfAddrMsg { family, prefixlen: a.prefix, flags: a.flags as u8, scope: a.scope, index: a.index };
    b.put_fixed(&m.to_bytes())?;
    let ci = IfaCacheinfo {
        prefered: r::INFINITY_LIFE_TIME,
        valid: r::INFINITY_LIFE_TIME,
        cstamp: a.cstamp,
        tstamp: a.tstamp,
    };
    match a.addr {
        IpAddr::V4(v4) => {
            b.attr(r::IFA_ADDRESS, &v4)?;
            b.attr(r::IFA_LOCAL, &v4)?;
            if let Some(bc) = a.broadcast {
                b.attr(r::IFA_BROADCAST, &bc)?;
            }
            let label = if a.label.as_bytes().is_empty() { l.name } else { a.label };
            b.attr_str(r::IFA_LABEL, label.as_bytes())?;
            b.attr_u32(r::IFA_FLAGS, a.flags)?;
            b.attr(r::IFA_CACHEINFO, &ci.to_bytes())?;
        }
        IpAddr::V6(v6) => {
            b.attr(r::IFA_ADDRESS, &v6)?;
            b.attr(r::IFA_CACHEINFO, &ci.to_bytes())?;
            b.attr_u32(r::IFA_FLAGS, a.flags)?;
        }
    }
    b.end();
    Ok(())
}

fn fill_route(b: &mut MsgBuilder, rt: &Route, kind: u16, flags: u16, seq: u32, pid: u32) -> Result<(), NoMemory> {
    b.begin(kind, flags, seq, pid)?;
    let m = RtMsg {
        family: rt.dst.family() as u8,
        dst_len: rt.prefix,
        src_len: 0,
        tos: 0,
        table: rt.table,
        protocol: rt.protocol,
        scope: rt.scope,
        kind: rt.kind,
        flags: 0,
    };
    b.put_fixed(&m.to_bytes())?;
    b.attr_u32(r::RTA_TABLE, rt.table as u32)?;
    if rt.prefix > 0 {
        b.attr(r::RTA_DST, rt.dst.bytes())?;
    }
    let v6 = matches!(rt.dst, IpAddr::V6(_));
    if rt.metric != 0 || v6 {
        b.attr_u32(r::RTA_PRIORITY, rt.metric)?;
    }
    if let Some(src) = rt.prefsrc {
        b.attr(r::RTA_PREFSRC, src.bytes())?;
    }
    if let Some(gw) = rt.gateway {
        b.attr(r::RTA_GATEWAY, gw.bytes())?;
    }
    if rt.oif != 0 {
        b.attr_u32(r::RTA_OIF, rt.oif)?;
    }
    if v6 {
        // ICMPV6_ROUTER_PREF_MEDIUM.
        b.attr_u8(r::RTA_PREF, 0)?;
    }
    b.end();
    Ok(())
}

/// Checks the attributes' lengths against the policy Linux parses them
/// with: an attribute shorter than its type is ERANGE; a string longer
/// than `max_str` is ERANGE.
fn check(attrs: &Attrs<'_>, min_len: impl Fn(u16) -> usize, strings: &[(u16, usize)]) -> Result<(), Errno> {
    for a in attrs.clone() {
        if a.data.len() < min_len(a.kind) {
            return Err(Errno::ERANGE);
        }
        if let Some((_, max)) = strings.iter().find(|(k, _)| *k == a.kind) {
            if a.str_bytes().len() > *max {
                return Err(Errno::ERANGE);
            }
        }
    }
    Ok(())
}

fn u32_of(attrs: &Attrs<'_>, kind: u16) -> Option<u32> {
    attrs.find(kind).and_then(|a| a.u32())
}

fn addr_of(attrs: &Attrs<'_>, kind: u16, family: u16) -> Option<IpAddr> {
    attrs.find(kind).and_then(|a| IpAddr::from_bytes(family, a.data))
}

fn addr_len(family: u16) -> usize {
    if family == s::AF_INET {
        4
    } else {
        16
    }
}

/// The IPv6 scope Linux gives an address (`ipv6_addr_scope` as RT_SCOPE).
fn v6_scope(a: &[u8; 16]) -> u8 {
    match kiln_netlink::procnet::ipv6_scope(a) {
        kiln_netlink::procnet::IPV6_ADDR_LOOPBACK => r::RT_SCOPE_HOST,
        kiln_netlink::procnet::IPV6_ADDR_LINKLOCAL => r::RT_SCOPE_LINK,
        kiln_netlink::procnet::IPV6_ADDR_SITELOCAL => 200,
        _ => r::RT_SCOPE_UNIVERSE,
    }
}

struct Request<'a> {
    sock: &'a NetlinkSocket,
    portid: u32,
    msg: &'a Msg<'a>,
}

impl Request<'_> {
    /// Queues a reply message built by `f` for the requester.
    fn reply(&self, f: impl FnOnce(&mut MsgBuilder) -> Result<(), NoMemory>) -> Result<(), Errno> {
        let mut b = MsgBuilder::new();
        f(&mut b).map_err(nomem)?;
        self.sock.deliver(b.into_bytes(), 0, 0)
    }

    /// Announces a change to group `group`.
    fn announce(&self, group: u32, f: impl FnOnce(&mut MsgBuilder) -> Result<(), NoMemory>) {
        let mut b = MsgBuilder::new();
        if f(&mut b).is_ok() {
            super::broadcast(nl::NETLINK_ROUTE, group, b.as_bytes());
        }
    }

    fn seq(&self) -> u32 {
        self.msg.header.seq
    }

    fn link_attrs(&self) -> Result<(IfInfoMsg, Attrs<'_>), Errno> {
        let info = IfInfoMsg::parse(self.msg.payload).ok_or(Errno::EINVAL)?;
        let attrs = Attrs::after(self.msg.payload, IfInfoMsg::SIZE);
        let min = |k| match k {
            r::IFLA_MTU | r::IFLA_TXQLEN | r::IFLA_GROUP | r::IFLA_EXT_MASK | r::IFLA_LINK | r::IFLA_MASTER => 4,
            r::IFLA_OPERSTATE | r::IFLA_LINKMODE | r::IFLA_CARRIER | r::IFLA_PROTO_DOWN => 1,
            _ => 0,
        };
        check(&attrs, min, &[(r::IFLA_IFNAME, ifr::IFNAMSIZ - 1)])?;
        Ok((info, attrs))
    }

    /// The link a request names: by index, else by IFLA_IFNAME; EINVAL
    /// for neither, ENODEV for no such link.
    fn target(info: &IfInfoMsg, attrs: &Attrs<'_>) -> Result<Link, Errno> {
        if info.index > 0 {
            ifaces::link_by_index(info.index as u32)
        } else if let Some(name) = attrs.find(r::IFLA_IFNAME) {
            ifaces::link_by_name(name.str_bytes())
        } else {
            Err(Errno::EINVAL)
        }
    }

    fn get_link(&self) -> Result<(), Errno> {
        let (info, attrs) = self.link_attrs()?;
        let link = Self::target(&info, &attrs)?;
        self.reply(|b| fill_link(b, &link, 0, self.seq(), self.portid, 0))
    }

    /// RTM_SETLINK, or RTM_NEWLINK on an existing link (`do_setlink`):
    /// the IFF_* flags under `ifi_change`, the MTU.
    fn set_link(&self, new: bool) -> Result<(), Errno> {
        let (info, attrs) = self.link_attrs()?;
        let flags = self.msg.header.flags;
        let link = match Self::target(&info, &attrs) {
            Ok(l) => l,
            // Creating links (IFLA_LINKINFO kinds) is not implemented.
            Err(Errno::ENODEV) if new && flags & nl::NLM_F_CREATE != 0 => return Err(Errno::EOPNOTSUPP),
            Err(Errno::EINVAL) if new => {
                if flags & nl::NLM_F_CREATE != 0 {
                    return Err(Errno::EOPNOTSUPP);
                }
                return Err(Errno::ENODEV);
            }
            Err(e) => return Err(e),
        };
        if new && flags & nl::NLM_F_EXCL != 0 {
            return Err(Errno::EEXIST);
        }
        if new && flags & nl::NLM_F_REPLACE != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        for a in attrs.clone() {
            match a.kind {
                r::IFLA_IFNAME if a.str_bytes() == link.name.as_bytes() => {}
                r::IFLA_MTU | r::IFLA_EXT_MASK => {}
                // Renaming, new hardware addresses and the rest: a device
                // without those operations (a loopback) refuses them.
                _ => return Err(Errno::EOPNOTSUPP),
            }
        }
        let t = ifaces::table();
        if let Some(mtu) = u32_of(&attrs, r::IFLA_MTU) {
            t.set_mtu(link.index, mtu)?;
        }
        if info.flags != 0 || info.change != 0 {
            let mask = if info.change == 0 { u32::MAX } else { info.change };
            t.set_flags(link.index, info.flags, mask)?;
        }
        let after = ifaces::link_by_index(link.index)?;
        self.announce(r::RTNLGRP_LINK, |b| fill_link(b, &after, 0, 0, 0, 0));
        Ok(())
    }

    fn del_link(&self) -> Result<(), Errno> {
        let (info, attrs) = self.link_attrs()?;
        Self::target(&info, &attrs)?;
        // No link Kiln has was made by RTM_NEWLINK (`rtnl_link_ops`).
        Err(Errno::EOPNOTSUPP)
    }

    fn addr_attrs(&self, family: u16) -> Result<(IfAddrMsg, Attrs<'_>), Errno> {
        let m = IfAddrMsg::parse(self.msg.payload).ok_or(Errno::EINVAL)?;
        let attrs = Attrs::after(self.msg.payload, IfAddrMsg::SIZE);
        let alen = addr_len(family);
        let min = |k| match k {
            r::IFA_ADDRESS | r::IFA_LOCAL | r::IFA_BROADCAST => alen,
            r::IFA_FLAGS | r::IFA_RT_PRIORITY => 4,
            r::IFA_CACHEINFO => IfaCacheinfo::SIZE,
            _ => 0,
        };
        check(&attrs, min, &[(r::IFA_LABEL, ifr::IFNAMSIZ - 1)])?;
        Ok((m, attrs))
    }

    fn new_addr(&self, family: u16) -> Result<(), Errno> {
        let (m, attrs) = self.addr_attrs(family)?;
        let local = if family == s::AF_INET {
            if m.prefixlen > 32 {
                return Err(Errno::EINVAL);
            }
            addr_of(&attrs, r::IFA_LOCAL, family).ok_or(Errno::EINVAL)?
        } else {
            addr_of(&attrs, r::IFA_LOCAL, family)
                .or_else(|| addr_of(&attrs, r::IFA_ADDRESS, family))
                .ok_or(Errno::EINVAL)?
        };
        if let Some(ci) = attrs.find(r::IFA_CACHEINFO) {
            let prefered = u32::from_le_bytes([ci.data[0], ci.data[1], ci.data[2], ci.data[3]]);
            let valid = u32::from_le_bytes([ci.data[4], ci.data[5], ci.data[6], ci.data[7]]);
            if valid == 0 || prefered > valid {
                return Err(Errno::EINVAL);
            }
            // Addresses that expire are not implemented.
            if valid != r::INFINITY_LIFE_TIME {
                return Err(Errno::EOPNOTSUPP);
            }
        }
        let link = ifaces::link_by_index(m.index)?;
        let hf = self.msg.header.flags;
        if let IpAddr::V6(_) = local {
            // addrconf looks for the address before it checks the prefix.
            let exists = ifaces::table().addresses()?.iter().any(|a| a.index == link.index && a.addr == local);
            if exists && (hf & nl::NLM_F_EXCL != 0 || hf & nl::NLM_F_REPLACE == 0) {
                return Err(Errno::EEXIST);
            }
            if m.prefixlen > 128 {
                return Err(Errno::EINVAL);
            }
        }
        let flags = u32_of(&attrs, r::IFA_FLAGS).unwrap_or(m.flags as u32) | r::IFA_F_PERMANENT;
        let (scope, broadcast, label) = match local {
            IpAddr::V4(_) => {
                let bc = addr_of(&attrs, r::IFA_BROADCAST, family).and_then(|a| match a {
                    IpAddr::V4(b) => Some(b),
                    IpAddr::V6(_) => None,
                });
                let label = match attrs.find(r::IFA_LABEL) {
                    Some(l) => IfName::new(l.str_bytes()).unwrap_or(link.name),
                    None => link.name,
                };
                (m.scope, bc, label)
            }
            IpAddr::V6(v6) => (v6_scope(&v6), None, link.name),
        };
        let now = ifaces::now_centis();
        let a = Address {
            index: link.index,
            addr: local,
            prefix: m.prefixlen,
            broadcast,
            scope,
            flags: flags & !r::IFA_F_SECONDARY,
            label,
            cstamp: now,
            tstamp: now,
        };
        let mode = AddMode {
            excl: hf & nl::NLM_F_EXCL != 0,
            replace: hf & nl::NLM_F_REPLACE != 0,
            create: hf & nl::NLM_F_CREATE != 0,
        };
        ifaces::table().add_address(a.clone(), mode)?;
        let group = if family == s::AF_INET { r::RTNLGRP_IPV4_IFADDR } else { r::RTNLGRP_IPV6_IFADDR };
        let (seq, pid) = (self.seq(), self.portid);
        self.announce(group, |b| fill_addr(b, &a, &link, r::RTM_NEWADDR, 0, seq, pid));
        Ok(())
    }

    fn del_addr(&self, family: u16) -> Result<(), Errno> {
        let (m, attrs) = self.addr_attrs(family)?;
        let (addr, prefix) = if family == s::AF_INET {
            let addr = addr_of(&attrs, r::IFA_LOCAL, family).or_else(|| addr_of(&attrs, r::IFA_ADDRESS, family));
            let prefix = attrs.find(r::IFA_ADDRESS).map(|_| m.prefixlen);
            (addr, prefix)
        } else {
            let a = addr_of(&attrs, r::IFA_LOCAL, family)
                .or_else(|| addr_of(&attrs, r::IFA_ADDRESS, family))
                .ok_or(Errno::EINVAL)?;
            if m.prefixlen > 128 {
                return Err(Errno::EINVAL);
            }
            (Some(a), Some(m.prefixlen))
        };
        let link = ifaces::link_by_index(m.index)?;
        let gone = ifaces::table().del_address(m.index, addr, prefix)?;
        let group = if family == s::AF_INET { r::RTNLGRP_IPV4_IFADDR } else { r::RTNLGRP_IPV6_IFADDR };
        let (seq, pid) = (self.seq(), self.portid);
        self.announce(group, |b| fill_addr(b, &gone, &link, r::RTM_DELADDR, 0, seq, pid));
        Ok(())
    }

    /// The route a NEWROUTE/DELROUTE request describes (`rtm_to_fib_config`).
    fn route_of(&self, family: u16, adding: bool) -> Result<Route, Errno> {
        let m = RtMsg::parse(self.msg.payload).ok_or(Errno::EINVAL)?;
        let attrs = Attrs::after(self.msg.payload, RtMsg::SIZE);
        let alen = addr_len(family);
        let min = |k| match k {
            r::RTA_DST | r::RTA_SRC | r::RTA_GATEWAY | r::RTA_PREFSRC => alen,
            r::RTA_OIF | r::RTA_IIF | r::RTA_PRIORITY | r::RTA_TABLE => 4,
            _ => 0,
        };
        check(&attrs, min, &[])?;
        let max = if family == s::AF_INET { 32 } else { 128 };
        if m.dst_len > max || m.src_len > max || m.kind > r::RTN_MAX {
            return Err(Errno::EINVAL);
        }
        let zero = IpAddr::from_bytes(family, &[0u8; 16]).ok_or(Errno::EINVAL)?;
        let dst = addr_of(&attrs, r::RTA_DST, family).unwrap_or(zero);
        if dst.network(m.dst_len) != dst {
            return Err(Errno::EINVAL);
        }
        let table = u32_of(&attrs, r::RTA_TABLE).map_or(m.table, |t| t.min(255) as u8);
        let table = if table == r::RT_TABLE_UNSPEC && adding { r::RT_TABLE_MAIN } else { table };
        Ok(Route {
            table,
            kind: m.kind,
            dst,
            prefix: m.dst_len,
            gateway: addr_of(&attrs, r::RTA_GATEWAY, family).filter(|g| *g != zero),
            oif: u32_of(&attrs, r::RTA_OIF).unwrap_or(0),
            scope: m.scope,
            protocol: m.protocol,
            prefsrc: addr_of(&attrs, r::RTA_PREFSRC, family),
            metric: u32_of(&attrs, r::RTA_PRIORITY).unwrap_or(if family == s::AF_INET6 { 1024 } else { 0 }),
        })
    }

    fn new_route(&self, family: u16) -> Result<(), Errno> {
        let rt = self.route_of(family, true)?;
        let hf = self.msg.header.flags;
        let mode = AddMode {
            excl: hf & nl::NLM_F_EXCL != 0,
            replace: hf & nl::NLM_F_REPLACE != 0,
            create: hf & nl::NLM_F_CREATE != 0,
        };
        let rt = add_unicast_route(rt, mode)?;
        let group = if family == s::AF_INET { r::RTNLGRP_IPV4_ROUTE } else { r::RTNLGRP_IPV6_ROUTE };
        let (seq, pid) = (self.seq(), self.portid);
        self.announce(group, |b| fill_route(b, &rt, r::RTM_NEWROUTE, 0, seq, pid));
        Ok(())
    }

    fn del_route(&self, family: u16) -> Result<(), Errno> {
        let key = self.route_of(family, false)?;
        let gone = ifaces::table().del_route(&key)?;
        let group = if family == s::AF_INET { r::RTNLGRP_IPV4_ROUTE } else { r::RTNLGRP_IPV6_ROUTE };
        let (seq, pid) = (self.seq(), self.portid);
        self.announce(group, |b| fill_route(b, &gone, r::RTM_DELROUTE, 0, seq, pid));
        Ok(())
    }

    /// RTM_GETROUTE without NLM_F_DUMP: the route a packet to RTA_DST
    /// would take (the local table first, then main, longest prefix).
    fn get_route(&self, family: u16) -> Result<(), Errno> {
        let m = RtMsg::parse(self.msg.payload).ok_or(Errno::EINVAL)?;
        let attrs = Attrs::after(self.msg.payload, RtMsg::SIZE);
        let alen = addr_len(family);
        check(&attrs, |k| if k == r::RTA_DST || k == r::RTA_SRC { alen } else { 0 }, &[])?;
        let zero = IpAddr::from_bytes(family, &[0u8; 16]).ok_or(Errno::EINVAL)?;
        let dst = addr_of(&attrs, r::RTA_DST, family).unwrap_or(zero);
        let t = ifaces::table();
        let routes = t.routes()?;
        let hit = [r::RT_TABLE_LOCAL, r::RT_TABLE_MAIN]
            .iter()
            .find_map(|table| {
                routes
                    .iter()
                    .filter(|rt| {
                        rt.table == *table && rt.kind != r::RTN_BROADCAST && dst.same_prefix(&rt.dst, rt.prefix)
                    })
                    .max_by_key(|rt| rt.prefix)
            })
            .ok_or(Errno::ENETUNREACH)?;
        let src = hit.prefsrc.or_else(|| {
            t.addresses().ok()?.into_iter().find(|a| a.index == hit.oif && a.addr.family() == family).map(|a| a.addr)
        });
        let uid = crate::net::caller().uid;
        let (seq, pid) = (self.seq(), self.portid);
        self.reply(|b| {
            b.begin(r::RTM_NEWROUTE, 0, seq, pid)?;
            let out = RtMsg {
                family: family as u8,
                dst_len: dst.max_prefix(),
                src_len: 0,
                tos: m.tos,
                // Without policy rules Linux looks the local and main
                // tables up as one, which answers as the main table.
                table: r::RT_TABLE_MAIN,
                protocol: r::RTPROT_UNSPEC,
                scope: r::RT_SCOPE_UNIVERSE,
                kind: hit.kind,
                flags: RTM_F_CLONED,
            };
            b.put_fixed(&out.to_bytes())?;
            b.attr_u32(r::RTA_TABLE, r::RT_TABLE_MAIN as u32)?;
            b.attr(r::RTA_DST, dst.bytes())?;
            b.attr_u32(r::RTA_OIF, hit.oif)?;
            if let Some(src) = src {
                b.attr(r::RTA_PREFSRC, src.bytes())?;
            }
            if let Some(gw) = hit.gateway {
                b.attr(r::RTA_GATEWAY, gw.bytes())?;
            }
            b.attr_u32(RTA_UID, uid)?;
            b.end();
            Ok(())
        })
    }
}

/// Adds a unicast route (RTM_NEWROUTE, SIOCADDRT) after Linux's checks
/// of its next hop (`fib_check_nh`): a gateway must be on a link a
/// direct route reaches (ENETUNREACH), which gives the output link; the
/// link must exist (ENODEV) and be up (ENETDOWN). Returns the route as
/// added.
pub fn add_unicast_route(mut rt: Route, mode: AddMode) -> Result<Route, Errno> {
    if rt.kind != r::RTN_UNICAST {
        // Blackhole, unreachable, local... routes are not implemented.
        return Err(Errno::EOPNOTSUPP);
    }
    let t = ifaces::table();
    if let Some(gw) = rt.gateway {
        let via = t
            .routes()?
            .into_iter()
            .filter(|d| d.gateway.is_none() && d.kind == r::RTN_UNICAST && gw.same_prefix(&d.dst, d.prefix))
            .filter(|d| rt.oif == 0 || d.oif == rt.oif)
            .max_by_key(|d| d.prefix)
            .ok_or(Errno::ENETUNREACH)?;
        rt.oif = via.oif;
    }
    if rt.oif == 0 {
        return Err(Errno::ENODEV);
    }
    let link = ifaces::link_by_index(rt.oif)?;
    if !link.is_up() {
        return Err(Errno::ENETDOWN);
    }
    if rt.scope == r::RT_SCOPE_NOWHERE {
        return Err(Errno::EINVAL);
    }
    t.add_route(rt.clone(), mode)?;
    Ok(rt)
}

/// Tells RTNLGRP_LINK listeners that `link` changed (an ioctl changed it).
pub fn announce_link(link: &Link) {
    let mut b = MsgBuilder::new();
    if fill_link(&mut b, link, 0, 0, 0, 0).is_ok() {
        super::broadcast(nl::NETLINK_ROUTE, r::RTNLGRP_LINK, b.as_bytes());
    }
}
