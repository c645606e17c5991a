//! /proc/net/tcp, tcp6, udp, udp6, dev and route in Linux's formats (so
//! busybox `netstat` and `route` read them): one line per listening or
//! connected socket (the states as Linux numbers them), per interface,
//! per route.

use alloc::string::String;
use core::fmt::Write;

use linux_abi::errno::Errno;
use linux_abi::socket as s;
use smoltcp::socket::tcp::State;
use smoltcp::wire::{IpAddress, IpCidr};

use super::addr::SockAddr;
use super::ports::Transport;
use super::stack::{self, Stack};
use crate::mm::TryString;

/// One socket as the listings show it.
pub struct ProcEntry {
    pub transport: Transport,
    pub family: u16,
    pub local: SockAddr,
    pub remote: SockAddr,
    /// Linux's state number (TCP_ESTABLISHED = 1 ... TCP_CLOSING = 11).
    pub state: u8,
    pub tx_queue: usize,
    pub rx_queue: usize,
    pub uid: u32,
    pub inode: u64,
}

/// Linux's number for a TCP state.
pub fn tcp_state(s: State) -> u8 {
    match s {
        State::Established => 1,
        State::SynSent => 2,
        State::SynReceived => 3,
        State::FinWait1 => 4,
        State::FinWait2 => 5,
        State::TimeWait => 6,
        State::Closed => 7,
        State::CloseWait => 8,
        State::LastAck => 9,
        State::Listen => 10,
        State::Closing => 11,
    }
}

/// An address as /proc/net shows it: the 32-bit words of the network
/// bytes in the machine's (little-endian) order.
fn write_addr(out: &mut TryString, family: u16, a: SockAddr) -> core::fmt::Result {
    if family == s::AF_INET {
        let o = match a.addr {
            Some(IpAddress::Ipv4(v)) => v.octets(),
            _ => [0; 4],
        };
        write!(out, "{:08X}:{:04X}", u32::from_le_bytes(o), a.port)
    } else {
        let o = match a.addr {
            Some(IpAddress::Ipv6(v)) => v.octets(),
            Some(IpAddress::Ipv4(v)) => {
                let mut m = [0u8; 16];
                m[10] = 0xff;
                m[11] = 0xff;
                m[12..].copy_from_slice(&v.octets());
                m
            }
            None => [0; 16],
        };
        for w in o.chunks(4) {
            write!(out, "{:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]]))?;
        }
        write!(out, ":{:04X}", a.port)
    }
}

/// Writes `line` padded with blanks to `width` characters, as Linux's
/// seq_setwidth/seq_pad do.
fn padded(out: &mut TryString, line: &str, width: usize) -> core::fmt::Result {
    writeln!(out, "{line:<width$}")
}

fn sockets(transport: Transport, family: u16) -> Result<String, Errno> {
    let mut st = stack::lock()?;
    let entries = st.entries();
    drop(st);
    let mut out = TryString::new();
    let width = if transport == Transport::Tcp { 149 } else { 127 };
    let head = match (transport, family) {
        (Transport::Tcp, s::AF_INET) => {
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
        }
        (Transport::Tcp, _) => {
            "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
        }
        (Transport::Udp, s::AF_INET) => {
            "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops"
        }
        (Transport::Udp, _) => {
            "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops"
        }
    };
    let result = (|| {
        if family == s::AF_INET {
            padded(&mut out, head, width)?;
        } else {
            writeln!(out, "{head}")?;
        }
        for (n, e) in entries.iter().filter(|e| e.transport == transport && e.family == family).enumerate() {
            let mut line = TryString::new();
            if transport == Transport::Udp && family == s::AF_INET {
                write!(line, "{n:5}: ")?;
            } else {
                write!(line, "{n:4}: ")?;
            }
            write_addr(&mut line, family, e.local)?;
            line.write_char(' ')?;
            write_addr(&mut line, family, e.remote)?;
            write!(
                line,
                " {:02X} {:08X}:{:08X} 00:00000000 00000000 {:5} {:8} {}",
                e.state, e.tx_queue, e.rx_queue, e.uid, 0, e.inode
            )?;
            if transport == Transport::Tcp {
                write!(line, " 1 0000000000000000 20 4 0 10 -1")?;
            } else {
                write!(line, " 2 0000000000000000 0")?;
            }
            let text = line.finish(Ok(())).map_err(|_| core::fmt::Error)?;
            if family == s::AF_INET {
                padded(&mut out, &text, width)?;
            } else {
                writeln!(out, "{text}")?;
            }
        }
        Ok(())
    })();
    out.finish(result)
}

fn dev() -> Result<String, Errno> {
    let st = stack::lock()?;
    let mut out = TryString::new();
    let result = (|| {
        writeln!(out, "Inter-|   Receive                                                |  Transmit")?;
        writeln!(
            out,
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed"
        )?;
        for f in st.ifaces.iter() {
            let c = f.dev.counters();
            writeln!(
                out,
                "{:>6}:{:8} {:7} {:4} {:4} {:4} {:5} {:10} {:9} {:8} {:7} {:4} {:4} {:4} {:5} {:7} {:10}",
                f.info.name,
                c.rx_bytes,
                c.rx_packets,
                0,
                c.rx_dropped,
                0,
                0,
                0,
                0,
                c.tx_bytes,
                c.tx_packets,
                0,
                c.tx_dropped,
                0,
                0,
                0,
                0
            )?;
        }
        Ok(())
    })();
    out.finish(result)
}

fn route() -> Result<String, Errno> {
    let st = stack::lock()?;
    let mut out = TryString::new();
    let result = (|| {
        padded(&mut out, "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT", 127)?;
        for f in st.ifaces.iter().filter(|f| !f.info.loopback) {
            let le = |o: [u8; 4]| u32::from_le_bytes(o);
            if let Some(r) = f.iface.routes().get_default_ipv4_route() {
                if let IpAddress::Ipv4(gw) = r.via_router {
                    let mut line = TryString::new();
                    write!(
                        line,
                        "{}\t{:08X}\t{:08X}\t{:04X}\t0\t0\t0\t{:08X}\t0\t0\t0",
                        f.info.name,
                        0,
                        le(gw.octets()),
                        3,
                        0
                    )?;
                    padded(&mut out, &line.finish(Ok(())).map_err(|_| core::fmt::Error)?, 127)?;
                }
            }
            for c in f.iface.ip_addrs() {
                if let IpCidr::Ipv4(c) = c {
                    let net = c.network();
                    let mask = if c.prefix_len() == 0 { 0 } else { u32::MAX << (32 - c.prefix_len()) };
                    let mut line = TryString::new();
                    write!(
                        line,
                        "{}\t{:08X}\t{:08X}\t{:04X}\t0\t0\t0\t{:08X}\t0\t0\t0",
                        f.info.name,
                        le(net.address().octets()),
                        0,
                        1,
                        le(mask.to_be_bytes())
                    )?;
                    padded(&mut out, &line.finish(Ok(())).map_err(|_| core::fmt::Error)?, 127)?;
                }
            }
        }
        Ok(())
    })();
    out.finish(result)
}

/// Registers the files.
pub fn register() {
    use crate::fs::procfs::register as reg;
    reg("net/tcp", |_| sockets(Transport::Tcp, s::AF_INET).unwrap_or_default());
    reg("net/tcp6", |_| sockets(Transport::Tcp, s::AF_INET6).unwrap_or_default());
    reg("net/udp", |_| sockets(Transport::Udp, s::AF_INET).unwrap_or_default());
    reg("net/udp6", |_| sockets(Transport::Udp, s::AF_INET6).unwrap_or_default());
    reg("net/dev", |_| dev().unwrap_or_default());
    reg("net/route", |_| route().unwrap_or_default());
}

impl Stack {
    /// Every listed socket (open ones through their watchers, closing
    /// ones without a descriptor with inode 0).
    pub fn entries(&mut self) -> alloc::vec::Vec<ProcEntry> {
        let mut v = alloc::vec::Vec::new();
        let watchers = self.watchers_snapshot();
        for w in watchers {
            if let Some(e) = w.entry(self) {
                if v.try_reserve(1).is_err() {
                    break;
                }
                v.push(e);
            }
        }
        v
    }
}
