//! NETLINK_ROUTE's messages: the fixed headers that follow `nlmsghdr`
//! (`struct ifinfomsg`, `struct ifaddrmsg`, `struct rtmsg`,
//! `struct ifa_cacheinfo`), the message types, attribute numbers and
//! flags of links, addresses and routes. Values are checked against the
//! C headers by `tests/layout.rs`.

// Message types (`RTM_*`).
pub const RTM_BASE: u16 = 16;
pub const RTM_NEWLINK: u16 = 16;
pub const RTM_DELLINK: u16 = 17;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_SETLINK: u16 = 19;
pub const RTM_NEWADDR: u16 = 20;
pub const RTM_DELADDR: u16 = 21;
pub const RTM_GETADDR: u16 = 22;
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_DELROUTE: u16 = 25;
pub const RTM_GETROUTE: u16 = 26;
pub const RTM_NEWNEIGH: u16 = 28;
pub const RTM_GETNEIGH: u16 = 30;
pub const RTM_NEWRULE: u16 = 32;
pub const RTM_GETRULE: u16 = 34;
pub const RTM_NEWQDISC: u16 = 36;
pub const RTM_GETQDISC: u16 = 38;
pub const RTM_GETNETCONF: u16 = 82;
/// The last message type Linux knows (`RTM_MAX`); past it, EOPNOTSUPP.
pub const RTM_MAX: u16 = 123;

/// What a message type asks: the low two bits of `type - RTM_BASE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    New,
    Del,
    Get,
    Set,
}

/// The kind of a message type at or above RTM_BASE.
pub fn kind(msg_type: u16) -> Kind {
    match msg_type.wrapping_sub(RTM_BASE) & 3 {
        0 => Kind::New,
        1 => Kind::Del,
        2 => Kind::Get,
        _ => Kind::Set,
    }
}

// Link attributes (`IFLA_*`).
pub const IFLA_ADDRESS: u16 = 1;
pub const IFLA_BROADCAST: u16 = 2;
pub const IFLA_IFNAME: u16 = 3;
pub const IFLA_MTU: u16 = 4;
pub const IFLA_LINK: u16 = 5;
pub const IFLA_QDISC: u16 = 6;
pub const IFLA_STATS: u16 = 7;
pub const IFLA_MASTER: u16 = 10;
pub const IFLA_TXQLEN: u16 = 13;
pub const IFLA_MAP: u16 = 14;
pub const IFLA_OPERSTATE: u16 = 16;
pub const IFLA_LINKMODE: u16 = 17;
pub const IFLA_LINKINFO: u16 = 18;
pub const IFLA_IFALIAS: u16 = 20;
pub const IFLA_STATS64: u16 = 23;
pub const IFLA_AF_SPEC: u16 = 26;
pub const IFLA_GROUP: u16 = 27;
pub const IFLA_EXT_MASK: u16 = 29;
pub const IFLA_PROMISCUITY: u16 = 30;
pub const IFLA_NUM_TX_QUEUES: u16 = 31;
pub const IFLA_NUM_RX_QUEUES: u16 = 32;
pub const IFLA_CARRIER: u16 = 33;
pub const IFLA_CARRIER_CHANGES: u16 = 35;
pub const IFLA_PROTO_DOWN: u16 = 39;
pub const IFLA_GSO_MAX_SEGS: u16 = 40;
pub const IFLA_GSO_MAX_SIZE: u16 = 41;
pub const IFLA_CARRIER_UP_COUNT: u16 = 47;
pub const IFLA_CARRIER_DOWN_COUNT: u16 = 48;
pub const IFLA_MIN_MTU: u16 = 50;
pub const IFLA_MAX_MTU: u16 = 51;

// Operational states (`IF_OPER_*`, RFC 2863).
pub const IF_OPER_UNKNOWN: u8 = 0;
pub const IF_OPER_DOWN: u8 = 2;
pub const IF_OPER_UP: u8 = 6;

// Hardware types (`ARPHRD_*`).
pub const ARPHRD_ETHER: u16 = 1;
pub const ARPHRD_LOOPBACK: u16 = 772;

// Address attributes (`IFA_*`) and flags (`IFA_F_*`).
pub const IFA_ADDRESS: u16 = 1;
pub const IFA_LOCAL: u16 = 2;
pub const IFA_LABEL: u16 = 3;
pub const IFA_BROADCAST: u16 = 4;
pub const IFA_ANYCAST: u16 = 5;
pub const IFA_CACHEINFO: u16 = 6;
pub const IFA_MULTICAST: u16 = 7;
pub const IFA_FLAGS: u16 = 8;
pub const IFA_RT_PRIORITY: u16 = 9;
pub const IFA_F_SECONDARY: u32 = 0x01;
pub const IFA_F_NODAD: u32 = 0x02;
pub const IFA_F_PERMANENT: u32 = 0x80;
pub const IFA_F_NOPREFIXROUTE: u32 = 0x200;

// Route attributes (`RTA_*`).
pub const RTA_DST: u16 = 1;
pub const RTA_SRC: u16 = 2;
pub const RTA_IIF: u16 = 3;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_PRIORITY: u16 = 6;
pub const RTA_PREFSRC: u16 = 7;
pub const RTA_METRICS: u16 = 8;
pub const RTA_CACHEINFO: u16 = 12;
pub const RTA_TABLE: u16 = 15;
pub const RTA_PREF: u16 = 20;

// Route types (`RTN_*`).
pub const RTN_UNSPEC: u8 = 0;
pub const RTN_UNICAST: u8 = 1;
pub const RTN_LOCAL: u8 = 2;
pub const RTN_BROADCAST: u8 = 3;
pub const RTN_MULTICAST: u8 = 5;
pub const RTN_BLACKHOLE: u8 = 6;
pub const RTN_UNREACHABLE: u8 = 7;
pub const RTN_PROHIBIT: u8 = 8;
/// The last route type Linux knows (`RTN_MAX`).
pub const RTN_MAX: u8 = 11;

// Who made a route (`RTPROT_*`).
pub const RTPROT_UNSPEC: u8 = 0;
pub const RTPROT_KERNEL: u8 = 2;
pub const RTPROT_BOOT: u8 = 3;
pub const RTPROT_STATIC: u8 = 4;
/// Learned from a router advertisement.
pub const RTPROT_RA: u8 = 9;

// Scopes (`RT_SCOPE_*`).
pub const RT_SCOPE_UNIVERSE: u8 = 0;
pub const RT_SCOPE_SITE: u8 = 200;
pub const RT_SCOPE_LINK: u8 = 253;
pub const RT_SCOPE_HOST: u8 = 254;
pub const RT_SCOPE_NOWHERE: u8 = 255;

// Tables (`RT_TABLE_*`).
pub const RT_TABLE_UNSPEC: u8 = 0;
pub const RT_TABLE_MAIN: u8 = 254;
pub const RT_TABLE_LOCAL: u8 = 255;

// Multicast groups: the legacy bit masks of `nl_groups` and the group
// numbers of NETLINK_ADD_MEMBERSHIP.
pub const RTMGRP_LINK: u32 = 0x1;
pub const RTMGRP_IPV4_IFADDR: u32 = 0x10;
pub const RTMGRP_IPV4_ROUTE: u32 = 0x40;
pub const RTMGRP_IPV6_IFADDR: u32 = 0x100;
pub const RTMGRP_IPV6_ROUTE: u32 = 0x400;
pub const RTNLGRP_LINK: u32 = 1;
pub const RTNLGRP_IPV4_IFADDR: u32 = 5;
pub const RTNLGRP_IPV4_ROUTE: u32 = 7;
pub const RTNLGRP_IPV6_IFADDR: u32 = 9;
pub const RTNLGRP_IPV6_ROUTE: u32 = 11;

/// `struct ifinfomsg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfInfoMsg {
    pub family: u8,
    pub kind: u16,
    pub index: i32,
    pub flags: u32,
    pub change: u32,
}

impl IfInfoMsg {
    pub const SIZE: usize = 16;

    pub fn parse(b: &[u8]) -> Option<IfInfoMsg> {
        let b = b.get(..Self::SIZE)?;
        Some(IfInfoMsg {
            family: b[0],
            kind: u16::from_le_bytes([b[2], b[3]]),
            index: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            flags: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            change: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
        })
    }

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0] = self.family;
        b[2..4].copy_from_slice(&self.kind.to_le_bytes());
        b[4..8].copy_from_slice(&self.index.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.change.to_le_bytes());
        b
    }
}

/// `struct ifaddrmsg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfAddrMsg {
    pub family: u8,
    pub prefixlen: u8,
    pub flags: u8,
    pub scope: u8,
    pub index: u32,
}

impl IfAddrMsg {
    pub const SIZE: usize = 8;

    pub fn parse(b: &[u8]) -> Option<IfAddrMsg> {
        let b = b.get(..Self::SIZE)?;
        Some(IfAddrMsg {
            family: b[0],
            prefixlen: b[1],
            flags: b[2],
            scope: b[3],
            index: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        })
    }

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0] = self.family;
        b[1] = self.prefixlen;
        b[2] = self.flags;
        b[3] = self.scope;
        b[4..8].copy_from_slice(&self.index.to_le_bytes());
        b
    }
}

/// `struct rtmsg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtMsg {
    pub family: u8,
    pub dst_len: u8,
    pub src_len: u8,
    pub tos: u8,
    pub table: u8,
    pub protocol: u8,
    pub scope: u8,
    pub kind: u8,
    pub flags: u32,
}

impl RtMsg {
    pub const SIZE: usize = 12;

    pub fn parse(b: &[u8]) -> Option<RtMsg> {
        let b = b.get(..Self::SIZE)?;
        Some(RtMsg {
            family: b[0],
            dst_len: b[1],
            src_len: b[2],
            tos: b[3],
            table: b[4],
            protocol: b[5],
            scope: b[6],
            kind: b[7],
            flags: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        })
    }

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[..8].copy_from_slice(&[
            self.family,
            self.dst_len,
            self.src_len,
            self.tos,
            self.table,
            self.protocol,
            self.scope,
            self.kind,
        ]);
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b
    }
}

/// `struct ifa_cacheinfo`: lifetimes in seconds (`INFINITY_LIFE_TIME`
/// for a permanent address) and creation/update stamps in hundredths of
/// a second since boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfaCacheinfo {
    pub prefered: u32,
    pub valid: u32,
    pub cstamp: u32,
    pub tstamp: u32,
}

/// The lifetime of an address that never expires.
pub const INFINITY_LIFE_TIME: u32 = 0xffff_ffff;

impl IfaCacheinfo {
    pub const SIZE: usize = 16;

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (i, v) in [self.prefered, self.valid, self.cstamp, self.tstamp].iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// `sizeof(struct rtnl_link_stats)`: 24 u32 counters.
pub const LINK_STATS_SIZE: usize = 96;
/// `sizeof(struct rtnl_link_stats64)` as Linux 6.x sends it: 25 u64 counters.
pub const LINK_STATS64_SIZE: usize = 200;

/// The counters of a link that both stats attributes carry, in their
/// order: rx_packets, tx_packets, rx_bytes, tx_bytes, rx_errors,
/// tx_errors, rx_dropped, tx_dropped, multicast (the rest stay zero).
pub fn link_stats(c: &[u64; 9]) -> ([u8; LINK_STATS_SIZE], [u8; LINK_STATS64_SIZE]) {
    let mut s32 = [0u8; LINK_STATS_SIZE];
    let mut s64 = [0u8; LINK_STATS64_SIZE];
    for (i, v) in c.iter().enumerate() {
        s32[i * 4..i * 4 + 4].copy_from_slice(&(*v as u32).to_le_bytes());
        s64[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    (s32, s64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_message_types() {
        assert_eq!(kind(RTM_NEWLINK), Kind::New);
        assert_eq!(kind(RTM_DELADDR), Kind::Del);
        assert_eq!(kind(RTM_GETROUTE), Kind::Get);
        assert_eq!(kind(RTM_SETLINK), Kind::Set);
    }

    #[test]
    fn fixed_headers_round_trip_and_refuse_short_input() {
        let i = IfInfoMsg { family: 0, kind: ARPHRD_LOOPBACK, index: 1, flags: 0x10049, change: 0 };
        assert_eq!(IfInfoMsg::parse(&i.to_bytes()), Some(i));
        assert_eq!(IfInfoMsg::parse(&[0; 15]), None);
        let a = IfAddrMsg { family: 2, prefixlen: 8, flags: 0x80, scope: RT_SCOPE_HOST, index: 1 };
        assert_eq!(IfAddrMsg::parse(&a.to_bytes()), Some(a));
        assert_eq!(IfAddrMsg::parse(&[0; 7]), None);
        let r = RtMsg { family: 2, dst_len: 8, table: RT_TABLE_LOCAL, kind: RTN_LOCAL, ..Default::default() };
        assert_eq!(RtMsg::parse(&r.to_bytes()), Some(r));
        assert_eq!(RtMsg::parse(&[0; 11]), None);
    }

    #[test]
    fn stats_put_counters_in_order() {
        let (s32, s64) = link_stats(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(&s32[8..12], &3u32.to_le_bytes());
        assert_eq!(&s64[64..72], &9u64.to_le_bytes());
        assert!(s64[72..].iter().all(|&b| b == 0));
    }
}
