//! /proc/net's interface and socket files: `dev`, `route`, `if_inet6`,
//! `tcp`, `udp`, `tcp6` and `udp6`, in Linux's exact formats
//! (`kiln_netlink::procnet`), from the interface table
//! ([`super::ifaces`]). `unix` is AF_UNIX's own.

use alloc::string::String;

use kiln_netlink::procnet as pn;
use kiln_netlink::rtnl as r;

use super::ifaces::{self, IpAddr, SockTable};
use crate::mm::TryString;

/// Adds the files to /proc/net (once, at boot).
pub fn register() {
    crate::fs::procfs::register("net/dev", |_| dev().unwrap_or_default());
    crate::fs::procfs::register("net/route", |_| route().unwrap_or_default());
    crate::fs::procfs::register("net/if_inet6", |_| if_inet6().unwrap_or_default());
    crate::fs::procfs::register("net/tcp", |_| sockets(SockTable::Tcp).unwrap_or_default());
    crate::fs::procfs::register("net/udp", |_| sockets(SockTable::Udp).unwrap_or_default());
    crate::fs::procfs::register("net/tcp6", |_| sockets(SockTable::Tcp6).unwrap_or_default());
    crate::fs::procfs::register("net/udp6", |_| sockets(SockTable::Udp6).unwrap_or_default());
}

type Text = Result<String, linux_abi::errno::Errno>;

fn dev() -> Text {
    let links = ifaces::table().links()?;
    let mut out = TryString::new();
    let result = (|| {
        pn::dev_header(&mut out)?;
        for l in &links {
            pn::dev_line(&mut out, l.name.as_str(), &l.stats)?;
        }
        Ok(())
    })();
    out.finish(result)
}

/// The IPv4 routes of the main table (Linux's `fib_route_seq_show`).
fn route() -> Text {
    let t = ifaces::table();
    let (links, routes) = (t.links()?, t.routes()?);
    let mut out = TryString::new();
    let result = (|| {
        pn::route_header(&mut out)?;
        for rt in routes.iter().filter(|rt| rt.table == r::RT_TABLE_MAIN) {
            let IpAddr::V4(dst) = rt.dst else { continue };
            if rt.kind == r::RTN_BROADCAST || rt.kind == r::RTN_MULTICAST {
                continue;
            }
            let gw = match rt.gateway {
                Some(IpAddr::V4(g)) => g,
                _ => [0; 4],
            };
            let dev = links.iter().find(|l| l.index == rt.oif).map_or("*", |l| l.name.as_str());
            let reject = rt.kind == r::RTN_UNREACHABLE || rt.kind == r::RTN_PROHIBIT;
            pn::route_line(&mut out, dev, dst, rt.prefix, gw, rt.metric, reject)?;
        }
        Ok(())
    })();
    out.finish(result)
}

fn if_inet6() -> Text {
    let t = ifaces::table();
    let (links, addrs) = (t.links()?, t.addresses()?);
    let mut out = TryString::new();
    let result = (|| {
        for a in &addrs {
            let IpAddr::V6(v6) = a.addr else { continue };
            let dev = links.iter().find(|l| l.index == a.index).map_or("", |l| l.name.as_str());
            pn::if_inet6_line(&mut out, &v6, a.index, a.prefix, a.flags as u8, dev)?;
        }
        Ok(())
    })();
    out.finish(result)
}

fn sockets(table: SockTable) -> Text {
    let socks = ifaces::table().sockets(table)?;
    let mut out = TryString::new();
    let result = (|| {
        match table {
            SockTable::Tcp => pn::tcp_header(&mut out)?,
            SockTable::Tcp6 => pn::tcp6_header(&mut out)?,
            SockTable::Udp => pn::udp_header(&mut out)?,
            SockTable::Udp6 => pn::udp6_header(&mut out)?,
        }
        for (i, sk) in socks.iter().enumerate() {
            // UDP numbers a line by its hash bucket (the port's low bits).
            let bucket = (sk.local_port & 0x7f) as usize;
            match table {
                SockTable::Tcp => pn::tcp_line(&mut out, i, sk)?,
                SockTable::Tcp6 => pn::tcp6_line(&mut out, i, sk)?,
                SockTable::Udp => pn::udp_line(&mut out, bucket, sk)?,
                SockTable::Udp6 => pn::udp6_line(&mut out, bucket, sk)?,
            }
        }
        Ok(())
    })();
    out.finish(result)
}
