//! NIC interfaces: how a driver's device joins the stack
//! ([`register_device`]) and gets its addresses, from the kernel command
//! line's `ip=` (Linux's syntax, parsed by `kiln_util::ipconfig`) or from
//! DHCP (`ip=dhcp`, smoltcp's DHCPv4 client, as Linux's in-kernel
//! autoconfiguration). Without `ip=` an interface comes up with no
//! address, as on Linux.

use alloc::boxed::Box;
use alloc::string::String;

use hal::sync::SpinLock;
use kiln_util::ipconfig::{self, IpConfig};
use linux_abi::errno::Errno;
use netdev::NetDevice;
use smoltcp::iface::{Config, Interface};
use smoltcp::socket::dhcpv4;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address, Ipv4Cidr};

use super::iface::{IfaceDevice, IfaceInfo, NicDevice};
use super::stack::{self, Iface, Stack};

/// The command line's `ip=` value (kept from boot).
static IP_PARAM: SpinLock<Option<String>> = SpinLock::new(None);

/// Remembers the command line's `ip=` for devices that come later.
pub fn set_cmdline(cmdline: &str) {
    if let Some(v) = ipconfig::find(cmdline) {
        let mut s = String::new();
        if s.try_reserve(v.len()).is_ok() {
            s.push_str(v);
            *IP_PARAM.lock() = Some(s);
        }
    }
}

/// Adds a NIC to the stack as `eth<N>` and configures it; returns the
/// interface's name. Drivers call this once their device is up.
pub fn register_device(mut dev: Box<dyn NetDevice>) -> Result<&'static str, Errno> {
    let mac = dev.mac().0;
    let mtu = dev.capabilities().mtu.max(576);
    dev.set_waker(alloc::sync::Arc::try_new(super::poller::wake).map_err(|_| Errno::ENOMEM)?);
    let mut device = IfaceDevice::Nic(NicDevice::new(dev)?);
    let mut st = stack::lock()?;
    let n = st.ifaces.iter().filter(|i| !i.info.loopback).count();
    let name: &'static str = match n {
        0 => "eth0",
        1 => "eth1",
        2 => "eth2",
        3 => "eth3",
        _ => return Err(Errno::ENOSPC),
    };
    let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
    cfg.random_seed = super::random_seed();
    cfg.slaac = true;
    let iface = Interface::new(cfg, &mut device, stack::now());
    let index = index_of(&st);
    if let IfaceDevice::Nic(n) = &mut device {
        n.ifindex = index;
    }
    if let Err(e) = crate::net::inet_ifaces::register_nic(index, name, mac, mtu as u32) {
        log::warn!("net: {name}: not in the interface table: {}", e.name());
    }
    let mut f = Iface {
        info: IfaceInfo { name, index, loopback: false, mac, mtu },
        iface,
        dev: device,
        sockets: Default::default(),
        dhcp: None,
        slaac: Default::default(),
    };
    super::addrconf::start(&mut f.iface, index, name, mac);
    let param = IP_PARAM.lock().clone();
    match param.as_deref().map(ipconfig::parse) {
        None => {}
        Some(Err(e)) => log::warn!("net: {name}: ip= not understood ({e:?}); no address"),
        Some(Ok(IpConfig::Dhcp { device, .. })) if device.is_none_or(|d| d == name) => {
            {
                let mut sock = dhcpv4::Socket::new();
                // Linux's ic_dhcp gives up after a while; smoltcp retries
                // forever, which is what a server wants.
                sock.set_max_lease_duration(None);
                f.dhcp = Some(f.sockets.set.add(sock));
                log::info!("net: {name}: DHCP");
            }
        }
        Some(Ok(IpConfig::Static(s))) if s.device.is_none_or(|d| d == name) => {
            let a = Ipv4Address::from(s.client);
            f.iface.update_ip_addrs(|v| {
                let _ = v.push(IpCidr::new(IpAddress::Ipv4(a), s.prefix));
            });
            if let Some(gw) = s.gateway {
                let _ = f.iface.routes_mut().add_default_ipv4_route(Ipv4Address::from(gw));
            }
            if let Err(e) = crate::net::inet_ifaces::record_address(index, name, s.client, s.prefix) {
                log::warn!("net: {name}: address not listed: {}", e.name());
            }
            log::info!("net: {name}: {a}/{} gateway {:?}", s.prefix, s.gateway.map(Ipv4Address::from));
        }
        // Off, or meant for another interface.
        Some(Ok(_)) => {}
    }
    let m = f.info.mac;
    log::info!(
        "net: {name} (index {}) MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        f.info.index,
        m[0],
        m[1],
        m[2],
        m[3],
        m[4],
        m[5]
    );
    st.add_iface(f)?;
    st.poll();
    Ok(name)
}

/// The Linux index the next interface gets.
fn index_of(st: &Stack) -> u32 {
    st.ifaces.len() as u32 + 1
}

/// Applies what the DHCP client of interface `i` reported.
pub fn poll_dhcp(st: &mut Stack, i: usize) {
    let f = &mut st.ifaces[i];
    let Some(h) = f.dhcp else { return };
    let event = f.sockets.set.get_mut::<dhcpv4::Socket>(h).poll();
    match event {
        None => {}
        Some(dhcpv4::Event::Configured(c)) => {
            let cidr: Ipv4Cidr = c.address;
            forget_v4(&mut f.iface, f.info.index);
            f.iface.update_ip_addrs(|v| {
                let _ = v.push(IpCidr::Ipv4(cidr));
            });
            // The listings (`ip addr`, SIOCGIFADDR, getifaddrs) read the
            // interface table, as for a static `ip=`.
            let (index, name) = (f.info.index, f.info.name);
            if let Err(e) =
                crate::net::inet_ifaces::record_address(index, name, cidr.address().octets(), cidr.prefix_len())
            {
                log::warn!("net: {name}: lease not listed: {}", e.name());
            }
            match c.router {
                Some(r) => {
                    let _ = f.iface.routes_mut().add_default_ipv4_route(r);
                }
                None => {
                    f.iface.routes_mut().remove_default_ipv4_route();
                }
            }
            log::info!("net: {}: DHCP gave {} gateway {:?}", f.info.name, cidr, c.router);
        }
        Some(dhcpv4::Event::Deconfigured) => {
            forget_v4(&mut f.iface, f.info.index);
            f.iface.routes_mut().remove_default_ipv4_route();
            log::info!("net: {}: DHCP lease lost", f.info.name);
        }
    }
}

/// Takes interface `index`'s IPv4 addresses (a lease's) out of smoltcp
/// and the interface table.
fn forget_v4(iface: &mut Interface, index: u32) {
    iface.update_ip_addrs(|v| {
        for a in v.iter() {
            if let IpCidr::Ipv4(c) = a {
                crate::net::inet_ifaces::forget_address(index, c.address().octets());
            }
        }
        v.retain(|a| !matches!(a, IpCidr::Ipv4(_)));
    });
}
