/*
 * Prints the netlink, rtnetlink and interface-ioctl constants and struct
 * layouts from the kernel UAPI headers as "name value" lines;
 * tests/layout.rs compares them with the kiln-netlink crate.
 */
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/sockios.h>

#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))

int main(void)
{
    SZ("nlmsghdr", struct nlmsghdr); SZ("rtattr", struct rtattr); SZ("nlattr", struct nlattr);
    SZ("sockaddr_nl", struct sockaddr_nl); OFF("sockaddr_nl.nl_pid", struct sockaddr_nl, nl_pid);
    OFF("sockaddr_nl.nl_groups", struct sockaddr_nl, nl_groups); SZ("nlmsgerr", struct nlmsgerr);
    SZ("ifinfomsg", struct ifinfomsg); OFF("ifinfomsg.ifi_type", struct ifinfomsg, ifi_type);
    OFF("ifinfomsg.ifi_index", struct ifinfomsg, ifi_index); OFF("ifinfomsg.ifi_flags", struct ifinfomsg, ifi_flags);
    OFF("ifinfomsg.ifi_change", struct ifinfomsg, ifi_change);
    SZ("ifaddrmsg", struct ifaddrmsg); OFF("ifaddrmsg.ifa_index", struct ifaddrmsg, ifa_index);
    SZ("rtmsg", struct rtmsg); OFF("rtmsg.rtm_table", struct rtmsg, rtm_table); OFF("rtmsg.rtm_type", struct rtmsg, rtm_type);
    OFF("rtmsg.rtm_flags", struct rtmsg, rtm_flags);
    SZ("ifa_cacheinfo", struct ifa_cacheinfo); SZ("rtnl_link_stats", struct rtnl_link_stats);
    SZ("ifreq", struct ifreq); SZ("ifconf", struct ifconf); OFF("ifreq.ifr_ifru", struct ifreq, ifr_ifru);
    SZ("sockaddr", struct sockaddr); SZ("ifmap", struct ifmap);
    VAL(NLMSG_HDRLEN); VAL(NLMSG_NOOP); VAL(NLMSG_ERROR); VAL(NLMSG_DONE); VAL(NLMSG_OVERRUN); VAL(NLMSG_MIN_TYPE);
    VAL(NLM_F_REQUEST); VAL(NLM_F_MULTI); VAL(NLM_F_ACK); VAL(NLM_F_ECHO); VAL(NLM_F_DUMP_INTR);
    VAL(NLM_F_DUMP_FILTERED); VAL(NLM_F_ROOT); VAL(NLM_F_MATCH); VAL(NLM_F_ATOMIC); VAL(NLM_F_DUMP);
    VAL(NLM_F_REPLACE); VAL(NLM_F_EXCL); VAL(NLM_F_CREATE); VAL(NLM_F_APPEND); VAL(NLM_F_CAPPED); VAL(NLM_F_ACK_TLVS);
    VAL(NETLINK_ROUTE); VAL(NETLINK_USERSOCK); VAL(NETLINK_SOCK_DIAG); VAL(NETLINK_AUDIT);
    VAL(NETLINK_KOBJECT_UEVENT); VAL(NETLINK_GENERIC); VAL(MAX_LINKS);
    VAL(SOL_NETLINK); VAL(NETLINK_ADD_MEMBERSHIP); VAL(NETLINK_DROP_MEMBERSHIP); VAL(NETLINK_PKTINFO);
    VAL(NETLINK_BROADCAST_ERROR); VAL(NETLINK_NO_ENOBUFS); VAL(NETLINK_LISTEN_ALL_NSID);
    VAL(NETLINK_LIST_MEMBERSHIPS); VAL(NETLINK_CAP_ACK); VAL(NETLINK_EXT_ACK); VAL(NETLINK_GET_STRICT_CHK);
    VAL(NLA_F_NESTED); VAL(NLA_F_NET_BYTEORDER);
    VAL(RTM_BASE); VAL(RTM_NEWLINK); VAL(RTM_DELLINK); VAL(RTM_GETLINK); VAL(RTM_SETLINK); VAL(RTM_NEWADDR);
    VAL(RTM_DELADDR); VAL(RTM_GETADDR); VAL(RTM_NEWROUTE); VAL(RTM_DELROUTE); VAL(RTM_GETROUTE);
    VAL(RTM_NEWNEIGH); VAL(RTM_GETNEIGH); VAL(RTM_NEWRULE); VAL(RTM_GETRULE); VAL(RTM_NEWQDISC); VAL(RTM_GETQDISC);
    VAL(RTM_GETNETCONF);
    VAL(IFLA_ADDRESS); VAL(IFLA_BROADCAST); VAL(IFLA_IFNAME); VAL(IFLA_MTU); VAL(IFLA_LINK); VAL(IFLA_QDISC);
    VAL(IFLA_STATS); VAL(IFLA_MASTER); VAL(IFLA_TXQLEN); VAL(IFLA_MAP); VAL(IFLA_OPERSTATE); VAL(IFLA_LINKMODE);
    VAL(IFLA_LINKINFO); VAL(IFLA_IFALIAS); VAL(IFLA_STATS64); VAL(IFLA_AF_SPEC); VAL(IFLA_GROUP); VAL(IFLA_EXT_MASK);
    VAL(IFLA_PROMISCUITY); VAL(IFLA_NUM_TX_QUEUES); VAL(IFLA_NUM_RX_QUEUES); VAL(IFLA_CARRIER);
    VAL(IFLA_CARRIER_CHANGES); VAL(IFLA_PROTO_DOWN); VAL(IFLA_GSO_MAX_SEGS); VAL(IFLA_GSO_MAX_SIZE);
    VAL(IFLA_CARRIER_UP_COUNT); VAL(IFLA_CARRIER_DOWN_COUNT); VAL(IFLA_MIN_MTU); VAL(IFLA_MAX_MTU);
    VAL(IF_OPER_UNKNOWN); VAL(IF_OPER_DOWN); VAL(IF_OPER_UP); VAL(ARPHRD_ETHER); VAL(ARPHRD_LOOPBACK);
    VAL(IFA_ADDRESS); VAL(IFA_LOCAL); VAL(IFA_LABEL); VAL(IFA_BROADCAST); VAL(IFA_ANYCAST); VAL(IFA_CACHEINFO);
    VAL(IFA_MULTICAST); VAL(IFA_FLAGS); VAL(IFA_RT_PRIORITY); VAL(IFA_F_SECONDARY); VAL(IFA_F_NODAD);
    VAL(IFA_F_PERMANENT); VAL(IFA_F_NOPREFIXROUTE);
    VAL(RTA_DST); VAL(RTA_SRC); VAL(RTA_IIF); VAL(RTA_OIF); VAL(RTA_GATEWAY); VAL(RTA_PRIORITY); VAL(RTA_PREFSRC);
    VAL(RTA_METRICS); VAL(RTA_CACHEINFO); VAL(RTA_TABLE); VAL(RTA_PREF);
    VAL(RTN_UNSPEC); VAL(RTN_UNICAST); VAL(RTN_LOCAL); VAL(RTN_BROADCAST); VAL(RTN_MULTICAST); VAL(RTN_BLACKHOLE);
    VAL(RTN_UNREACHABLE); VAL(RTN_PROHIBIT); VAL(RTN_MAX);
    VAL(RTPROT_UNSPEC); VAL(RTPROT_KERNEL); VAL(RTPROT_BOOT); VAL(RTPROT_STATIC);
    VAL(RT_SCOPE_UNIVERSE); VAL(RT_SCOPE_LINK); VAL(RT_SCOPE_HOST); VAL(RT_SCOPE_NOWHERE);
    VAL(RT_TABLE_UNSPEC); VAL(RT_TABLE_MAIN); VAL(RT_TABLE_LOCAL);
    VAL(RTMGRP_LINK); VAL(RTMGRP_IPV4_IFADDR); VAL(RTMGRP_IPV4_ROUTE); VAL(RTMGRP_IPV6_IFADDR); VAL(RTMGRP_IPV6_ROUTE);
    VAL(RTNLGRP_LINK); VAL(RTNLGRP_IPV4_IFADDR); VAL(RTNLGRP_IPV4_ROUTE); VAL(RTNLGRP_IPV6_IFADDR); VAL(RTNLGRP_IPV6_ROUTE);
    VAL(IFNAMSIZ); VAL(IFF_UP); VAL(IFF_BROADCAST); VAL(IFF_DEBUG); VAL(IFF_LOOPBACK); VAL(IFF_POINTOPOINT);
    VAL(IFF_NOTRAILERS); VAL(IFF_RUNNING); VAL(IFF_NOARP); VAL(IFF_PROMISC); VAL(IFF_ALLMULTI); VAL(IFF_MASTER);
    VAL(IFF_SLAVE); VAL(IFF_MULTICAST); VAL(IFF_PORTSEL); VAL(IFF_AUTOMEDIA); VAL(IFF_DYNAMIC); VAL(IFF_LOWER_UP);
    VAL(IFF_DORMANT); VAL(IFF_ECHO);
    VAL(SIOCADDRT); VAL(SIOCDELRT); VAL(SIOCGIFNAME); VAL(SIOCGIFCONF); VAL(SIOCGIFFLAGS); VAL(SIOCSIFFLAGS);
    VAL(SIOCGIFADDR); VAL(SIOCSIFADDR); VAL(SIOCGIFDSTADDR); VAL(SIOCGIFBRDADDR); VAL(SIOCSIFBRDADDR);
    VAL(SIOCGIFNETMASK); VAL(SIOCSIFNETMASK); VAL(SIOCGIFMETRIC); VAL(SIOCSIFMETRIC); VAL(SIOCGIFMTU);
    VAL(SIOCSIFMTU); VAL(SIOCSIFNAME); VAL(SIOCSIFHWADDR); VAL(SIOCGIFHWADDR); VAL(SIOCGIFINDEX);
    VAL(SIOCGIFTXQLEN); VAL(SIOCGIFMAP);
    return 0;
}
