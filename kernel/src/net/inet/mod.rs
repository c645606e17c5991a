//! AF_INET and AF_INET6: the TCP/IP stack (smoltcp) and the Internet
//! sockets on it.
//!
//! * [`stack`]: the one stack (interfaces, their smoltcp sockets, the
//!   port tables), its lock, and the poll that moves packets.
//! * [`iface`]: the loopback and the adapter from the drivers'
//!   `netdev::NetDevice` to smoltcp's `phy::Device`; [`config`]: the
//!   NIC interfaces' addresses (`ip=` on the command line, or DHCP);
//!   [`addrconf`]: their IPv6 addresses (link-local, SLAAC).
//! * [`poller`]: the network thread (device wakeups and timers).
//! * [`tcp`], [`udp`]: the sockets (with [`direct`], a loopback TCP
//!   connection's bytes handed straight to the reader), with [`common`] what both carry,
//!   [`addr`] the socket address formats, [`ports`] the bind table;
//!   [`sockets`]: an interface's smoltcp sockets, idle connections
//!   parked out of the set smoltcp polls.
//! * [`icmp`]: ping sockets (SOCK_DGRAM ICMP and ICMPv6) and
//!   net.ipv4.ping_group_range; [`raw`]: SOCK_RAW sockets.
//!
//! docs/networking.md tells how a packet travels through these.

pub mod addr;
pub mod addrconf;
mod common;
pub mod config;
mod direct;
pub mod icmp;
pub mod iface;
mod poller;
mod pollstats;
pub mod ports;
mod procnet;
mod raw;
mod sockets;
pub mod stack;
mod tcp;
mod tcp_info;
mod tcp_listen;
mod udp;

use alloc::sync::Arc;

use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::iface::{Config, Interface};
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr, Ipv4Address, Ipv6Address};

use crate::net::socket::Protocol;
use iface::{IfaceDevice, IfaceInfo};
use stack::{Iface, Stack, STACK};

pub const IPPROTO_IP: i32 = 0;
pub const IPPROTO_TCP: i32 = 6;
pub const IPPROTO_UDP: i32 = 17;

/// socket(AF_INET or AF_INET6, kind, protocol), with Linux's lookup
/// (`inet_create`): a type it has no protocol of is ESOCKTNOSUPPORT, a
/// protocol the type does not carry EPROTONOSUPPORT. SOCK_RAW takes any
/// protocol but 0 below IPPROTO_MAX (EINVAL above) and needs
/// CAP_NET_RAW; a ping socket needs a group in ping_group_range.
pub fn create(family: u16, kind: u32, protocol: i32) -> Result<Arc<dyn Protocol>, Errno> {
    let icmp = if family == s::AF_INET { icmp::IPPROTO_ICMP } else { icmp::IPPROTO_ICMPV6 };
    match kind {
        s::SOCK_STREAM => match protocol {
            IPPROTO_IP | IPPROTO_TCP => tcp::open(family),
            _ => Err(Errno::EPROTONOSUPPORT),
        },
        s::SOCK_DGRAM => match protocol {
            IPPROTO_IP | IPPROTO_UDP => udp::open(family),
            p if p == icmp => icmp::open(family),
            _ => Err(Errno::EPROTONOSUPPORT),
        },
        s::SOCK_RAW => match protocol {
            p if !(0..raw::IPPROTO_MAX).contains(&p) => Err(Errno::EINVAL),
            IPPROTO_IP => Err(Errno::EPROTONOSUPPORT),
            p => raw::open(family, p),
        },
        _ => Err(Errno::ESOCKTNOSUPPORT),
    }
}

/// May the caller bind a port below 1024 (CAP_NET_BIND_SERVICE; the
/// socket layer knows only ids, so root).
fn may_bind_privileged() -> bool {
    crate::net::caller().euid == 0
}

fn random_seed() -> u64 {
    let mut b = [0u8; 8];
    crate::random::fill(&mut b);
    u64::from_le_bytes(b)
}

/// Brings up the stack with its loopback interface and starts the
/// network thread.
pub fn init(cmdline: &str) {
    config::set_cmdline(cmdline);
    let Ok(mut dev) = IfaceDevice::loopback() else {
        log::warn!("net: no memory for the loopback");
        return;
    };
    let mut cfg = Config::new(HardwareAddress::Ip);
    cfg.random_seed = random_seed();
    let mut iface = Interface::new(cfg, &mut dev, stack::now());
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(IpAddress::Ipv4(Ipv4Address::new(127, 0, 0, 1)), 8));
        let _ = a.push(IpCidr::new(IpAddress::Ipv6(Ipv6Address::LOCALHOST), 128));
    });
    let lo = Iface {
        info: IfaceInfo { name: "lo", index: 1, loopback: true, mac: [0; 6], mtu: iface::LOOPBACK_MTU },
        iface,
        dev,
        sockets: Default::default(),
        dhcp: None,
        slaac: Default::default(),
    };
    *STACK.lock() = Some(Stack::new(lo));
    poller::start();
    pollstats::register();
    // The NICs the drivers found (now, and any later) join the stack.
    crate::net::netdevs::set_consumer(take_device);
}

/// What the drivers' registry hands each NIC to.
fn take_device(dev: alloc::boxed::Box<dyn netdev::NetDevice>) {
    let driver = dev.driver_name();
    match config::register_device(dev) {
        Ok(name) => log::info!("net: {driver} is {name}"),
        Err(e) => log::warn!("net: {driver} not added: {}", e.name()),
    }
}
