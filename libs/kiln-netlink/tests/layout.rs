//! Checks the crate's constants and struct sizes against the kernel UAPI
//! headers installed on the build host: `tests/layout.c` is compiled
//! with the host C compiler (`$CC`, else `cc`) and prints them. Skipped,
//! with a note on stderr, when the compiler or headers are missing.

use kiln_netlink::ifreq::*;
use kiln_netlink::rtnl::*;
use kiln_netlink::wire::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn run_c() -> Option<HashMap<String, i128>> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    if !Command::new(&cc).arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("skipping the netlink layout check: no C compiler");
        return None;
    }
    if !Path::new("/usr/include/linux/rtnetlink.h").exists() {
        eprintln!("skipping the netlink layout check: no Linux headers in /usr/include");
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/layout.c");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("netlink-layout");
    let out = Command::new(&cc).arg("-o").arg(&exe).arg(&src).output().expect("running the C compiler");
    assert!(out.status.success(), "compiling layout.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().expect("running layout.c");
    assert!(run.status.success());
    let mut map = HashMap::new();
    for line in String::from_utf8(run.stdout).unwrap().lines() {
        let (k, v) = line.split_once(' ').unwrap();
        map.insert(k.to_string(), v.parse::<i128>().unwrap());
    }
    Some(map)
}

macro_rules! table {
    ($($n:ident),* $(,)?) => { vec![$((stringify!($n), $n as i128)),*] };
}

#[test]
fn constants_and_layouts_match_the_headers() {
    let Some(c) = run_c() else { return };
    let get = |k: &str| *c.get(k).unwrap_or_else(|| panic!("layout.c printed no value for {k}"));
    let sizes: &[(&str, usize)] = &[
        ("nlmsghdr", NLMSG_HDRLEN),
        ("rtattr", RTA_HDRLEN),
        ("nlattr", RTA_HDRLEN),
        ("sockaddr_nl", SOCKADDR_NL_SIZE),
        ("sockaddr_nl.nl_pid", 4),
        ("sockaddr_nl.nl_groups", 8),
        ("nlmsgerr", NLMSGERR_SIZE),
        ("ifinfomsg", IfInfoMsg::SIZE),
        ("ifinfomsg.ifi_type", 2),
        ("ifinfomsg.ifi_index", 4),
        ("ifinfomsg.ifi_flags", 8),
        ("ifinfomsg.ifi_change", 12),
        ("ifaddrmsg", IfAddrMsg::SIZE),
        ("ifaddrmsg.ifa_index", 4),
        ("rtmsg", RtMsg::SIZE),
        ("rtmsg.rtm_table", 4),
        ("rtmsg.rtm_type", 7),
        ("rtmsg.rtm_flags", 8),
        ("ifa_cacheinfo", IfaCacheinfo::SIZE),
        ("rtnl_link_stats", LINK_STATS_SIZE),
        ("ifreq", IFREQ_SIZE),
        ("ifconf", IFCONF_SIZE),
        ("ifreq.ifr_ifru", IFR_DATA),
        ("sockaddr", SOCKADDR_SIZE),
        ("ifmap", IFMAP_SIZE),
    ];
    for (k, v) in sizes {
        assert_eq!(get(k), *v as i128, "{k}");
    }
    let table = table![
        NLMSG_HDRLEN,
        NLMSG_NOOP,
        NLMSG_ERROR,
        NLMSG_DONE,
        NLMSG_OVERRUN,
        NLMSG_MIN_TYPE,
        NLM_F_REQUEST,
        NLM_F_MULTI,
        NLM_F_ACK,
        NLM_F_ECHO,
        NLM_F_DUMP_INTR,
        NLM_F_DUMP_FILTERED,
        NLM_F_ROOT,
        NLM_F_MATCH,
        NLM_F_ATOMIC,
        NLM_F_DUMP,
        NLM_F_REPLACE,
        NLM_F_EXCL,
        NLM_F_CREATE,
        NLM_F_APPEND,
        NLM_F_CAPPED,
        NLM_F_ACK_TLVS,
        NETLINK_ROUTE,
        NETLINK_USERSOCK,
        NETLINK_SOCK_DIAG,
        NETLINK_AUDIT,
        NETLINK_KOBJECT_UEVENT,
        NETLINK_GENERIC,
        MAX_LINKS,
        SOL_NETLINK,
        NETLINK_ADD_MEMBERSHIP,
        NETLINK_DROP_MEMBERSHIP,
        NETLINK_PKTINFO,
        NETLINK_BROADCAST_ERROR,
        NETLINK_NO_ENOBUFS,
        NETLINK_LISTEN_ALL_NSID,
        NETLINK_LIST_MEMBERSHIPS,
        NETLINK_CAP_ACK,
        NETLINK_EXT_ACK,
        NETLINK_GET_STRICT_CHK,
        NLA_F_NESTED,
        NLA_F_NET_BYTEORDER,
        RTM_BASE,
        RTM_NEWLINK,
        RTM_DELLINK,
        RTM_GETLINK,
        RTM_SETLINK,
        RTM_NEWADDR,
        RTM_DELADDR,
        RTM_GETADDR,
        RTM_NEWROUTE,
        RTM_DELROUTE,
        RTM_GETROUTE,
        RTM_NEWNEIGH,
        RTM_GETNEIGH,
        RTM_NEWRULE,
        RTM_GETRULE,
        RTM_NEWQDISC,
        RTM_GETQDISC,
        RTM_GETNETCONF,
        IFLA_ADDRESS,
        IFLA_BROADCAST,
        IFLA_IFNAME,
        IFLA_MTU,
        IFLA_LINK,
        IFLA_QDISC,
        IFLA_STATS,
        IFLA_MASTER,
        IFLA_TXQLEN,
        IFLA_MAP,
        IFLA_OPERSTATE,
        IFLA_LINKMODE,
        IFLA_LINKINFO,
        IFLA_IFALIAS,
        IFLA_STATS64,
        IFLA_AF_SPEC,
        IFLA_GROUP,
        IFLA_EXT_MASK,
        IFLA_PROMISCUITY,
        IFLA_NUM_TX_QUEUES,
        IFLA_NUM_RX_QUEUES,
        IFLA_CARRIER,
        IFLA_CARRIER_CHANGES,
        IFLA_PROTO_DOWN,
        IFLA_GSO_MAX_SEGS,
        IFLA_GSO_MAX_SIZE,
        IFLA_CARRIER_UP_COUNT,
        IFLA_CARRIER_DOWN_COUNT,
        IFLA_MIN_MTU,
        IFLA_MAX_MTU,
        IF_OPER_UNKNOWN,
        IF_OPER_DOWN,
        IF_OPER_UP,
        ARPHRD_ETHER,
        ARPHRD_LOOPBACK,
        IFA_ADDRESS,
        IFA_LOCAL,
        IFA_LABEL,
        IFA_BROADCAST,
        IFA_ANYCAST,
        IFA_CACHEINFO,
        IFA_MULTICAST,
        IFA_FLAGS,
        IFA_RT_PRIORITY,
        IFA_F_SECONDARY,
        IFA_F_NODAD,
        IFA_F_PERMANENT,
        IFA_F_NOPREFIXROUTE,
        RTA_DST,
        RTA_SRC,
        RTA_IIF,
        RTA_OIF,
        RTA_GATEWAY,
        RTA_PRIORITY,
        RTA_PREFSRC,
        RTA_METRICS,
        RTA_CACHEINFO,
        RTA_TABLE,
        RTA_PREF,
        RTN_UNSPEC,
        RTN_UNICAST,
        RTN_LOCAL,
        RTN_BROADCAST,
        RTN_MULTICAST,
        RTN_BLACKHOLE,
        RTN_UNREACHABLE,
        RTN_PROHIBIT,
        RTN_MAX,
        RTPROT_UNSPEC,
        RTPROT_KERNEL,
        RTPROT_BOOT,
        RTPROT_STATIC,
        RT_SCOPE_UNIVERSE,
        RT_SCOPE_LINK,
        RT_SCOPE_HOST,
        RT_SCOPE_NOWHERE,
        RT_TABLE_UNSPEC,
        RT_TABLE_MAIN,
        RT_TABLE_LOCAL,
        RTMGRP_LINK,
        RTMGRP_IPV4_IFADDR,
        RTMGRP_IPV4_ROUTE,
        RTMGRP_IPV6_IFADDR,
        RTMGRP_IPV6_ROUTE,
        RTNLGRP_LINK,
        RTNLGRP_IPV4_IFADDR,
        RTNLGRP_IPV4_ROUTE,
        RTNLGRP_IPV6_IFADDR,
        RTNLGRP_IPV6_ROUTE,
        IFNAMSIZ,
        IFF_UP,
        IFF_BROADCAST,
        IFF_DEBUG,
        IFF_LOOPBACK,
        IFF_POINTOPOINT,
        IFF_NOTRAILERS,
        IFF_RUNNING,
        IFF_NOARP,
        IFF_PROMISC,
        IFF_ALLMULTI,
        IFF_MASTER,
        IFF_SLAVE,
        IFF_MULTICAST,
        IFF_PORTSEL,
        IFF_AUTOMEDIA,
        IFF_DYNAMIC,
        IFF_LOWER_UP,
        IFF_DORMANT,
        IFF_ECHO,
        SIOCADDRT,
        SIOCDELRT,
        SIOCGIFNAME,
        SIOCGIFCONF,
        SIOCGIFFLAGS,
        SIOCSIFFLAGS,
        SIOCGIFADDR,
        SIOCSIFADDR,
        SIOCGIFDSTADDR,
        SIOCGIFBRDADDR,
        SIOCSIFBRDADDR,
        SIOCGIFNETMASK,
        SIOCSIFNETMASK,
        SIOCGIFMETRIC,
        SIOCSIFMETRIC,
        SIOCGIFMTU,
        SIOCSIFMTU,
        SIOCSIFNAME,
        SIOCSIFHWADDR,
        SIOCGIFHWADDR,
        SIOCGIFINDEX,
        SIOCGIFTXQLEN,
        SIOCGIFMAP,
    ];
    for (name, rust) in &table {
        assert_eq!(get(name), *rust, "value of {name}");
    }
    for k in c.keys() {
        if k.starts_with(|ch: char| ch.is_ascii_uppercase()) {
            assert!(table.iter().any(|(n, _)| n == k), "layout.c prints {k} but the Rust table does not check it");
        }
    }
}
