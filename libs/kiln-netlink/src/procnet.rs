//! The line formats of /proc/net: `dev`, `route`, `tcp`, `udp`, `tcp6`,
//! `udp6` and `if_inet6`, byte for byte as Linux prints them (field
//! widths, hexadecimal cases, the padding of `route`, `tcp` and `udp`
//! lines to a fixed width), so `netstat`, `route` and `ifconfig` parse
//! them as they parse Linux's. Addresses print as Linux prints a
//! `__be32`: the four bytes in memory order read as a little-endian word.
//! Kernel pointers print as zero, as Linux shows them to a reader
//! without CAP_SYSLOG.

use core::fmt::{self, Write};

/// Writes `line` padded with spaces to `width` characters, then a newline
/// (Linux's `seq_setwidth` + `seq_pad`).
struct Padded<'a, W: Write> {
    out: &'a mut W,
    len: usize,
}

impl<W: Write> Write for Padded<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.len += s.len();
        self.out.write_str(s)
    }
}

fn padded<W: Write>(out: &mut W, width: usize, f: impl FnOnce(&mut Padded<'_, W>) -> fmt::Result) -> fmt::Result {
    let mut p = Padded { out, len: 0 };
    f(&mut p)?;
    let len = p.len;
    for _ in len..width {
        out.write_char(' ')?;
    }
    out.write_char('\n')
}

/// A `__be32` as Linux's `%08X` prints it.
fn be32(a: [u8; 4]) -> u32 {
    u32::from_le_bytes(a)
}

/// Counters of one interface, as /proc/net/dev lists them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevStats {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errors: u64,
    pub rx_dropped: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub tx_dropped: u64,
    pub multicast: u64,
}

/// /proc/net/dev's two header lines.
pub fn dev_header<W: Write>(out: &mut W) -> fmt::Result {
    out.write_str("Inter-|   Receive                                                |  Transmit\n")?;
    out.write_str(
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n",
    )
}

/// One interface's line of /proc/net/dev.
pub fn dev_line<W: Write>(out: &mut W, name: &str, s: &DevStats) -> fmt::Result {
    writeln!(
        out,
        "{:>6}:{:8} {:7} {:4} {:4} {:4} {:5} {:10} {:9} {:8} {:7} {:4} {:4} {:4} {:5} {:7} {:10}",
        name,
        s.rx_bytes,
        s.rx_packets,
        s.rx_errors,
        s.rx_dropped,
        0,
        0,
        0,
        s.multicast,
        s.tx_bytes,
        s.tx_packets,
        s.tx_errors,
        s.tx_dropped,
        0,
        0,
        0,
        0
    )
}

// Route flags of /proc/net/route (`RTF_*`).
pub const RTF_UP: u32 = 0x1;
pub const RTF_GATEWAY: u32 = 0x2;
pub const RTF_HOST: u32 = 0x4;
pub const RTF_REJECT: u32 = 0x200;

/// /proc/net/route's header, padded to 127 characters.
pub fn route_header<W: Write>(out: &mut W) -> fmt::Result {
    padded(out, 127, |p| {
        p.write_str("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT")
    })
}

/// One IPv4 route of the main table: `dst`/`prefix` via `gateway` (zero
/// for none) on `dev`, with its metric and `reject` for unreachable and
/// prohibit routes (Linux's `fib_flag_trans`).
pub fn route_line<W: Write>(
    out: &mut W,
    dev: &str,
    dst: [u8; 4],
    prefix: u8,
    gateway: [u8; 4],
    metric: u32,
    reject: bool,
) -> fmt::Result {
    let mask = crate::ifreq::netmask(prefix);
    let mut flags = RTF_UP;
    if reject {
        flags |= RTF_REJECT;
    }
    if gateway != [0; 4] {
        flags |= RTF_GATEWAY;
    }
    if prefix >= 32 {
        flags |= RTF_HOST;
    }
    padded(out, 127, |p| {
        write!(
            p,
            "{}\t{:08X}\t{:08X}\t{:04X}\t{}\t{}\t{}\t{:08X}\t{}\t{}\t{}",
            dev,
            be32(dst),
            be32(gateway),
            flags,
            0,
            0,
            metric as i32,
            be32(mask),
            0,
            0,
            0
        )
    })
}

/// TCP states as /proc/net/tcp numbers them (`TCP_*`).
pub const TCP_ESTABLISHED: u8 = 1;
pub const TCP_SYN_SENT: u8 = 2;
pub const TCP_SYN_RECV: u8 = 3;
pub const TCP_FIN_WAIT1: u8 = 4;
pub const TCP_FIN_WAIT2: u8 = 5;
pub const TCP_TIME_WAIT: u8 = 6;
pub const TCP_CLOSE: u8 = 7;
pub const TCP_CLOSE_WAIT: u8 = 8;
pub const TCP_LAST_ACK: u8 = 9;
pub const TCP_LISTEN: u8 = 10;
pub const TCP_CLOSING: u8 = 11;

/// One Internet socket as /proc/net/{tcp,udp}[6] show it. Addresses are
/// IPv6-sized; an IPv4 socket uses the first four bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InetSock {
    pub local: [u8; 16],
    pub local_port: u16,
    pub remote: [u8; 16],
    pub remote_port: u16,
    /// A `TCP_*` state (UDP: TCP_CLOSE unconnected, TCP_ESTABLISHED connected).
    pub state: u8,
    pub tx_queue: u32,
    pub rx_queue: u32,
    pub uid: u32,
    pub inode: u64,
}

fn v4(a: &[u8; 16]) -> [u8; 4] {
    [a[0], a[1], a[2], a[3]]
}

fn v6<W: Write>(out: &mut W, a: &[u8; 16]) -> fmt::Result {
    for w in a.chunks_exact(4) {
        write!(out, "{:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]]))?;
    }
    Ok(())
}

/// /proc/net/tcp's header, padded to 149 characters.
pub fn tcp_header<W: Write>(out: &mut W) -> fmt::Result {
    padded(out, 149, |p| {
        p.write_str("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
    })
}

/// /proc/net/tcp6's header.
pub fn tcp6_header<W: Write>(out: &mut W) -> fmt::Result {
    out.write_str("  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
}

/// /proc/net/udp's header, padded to 127 characters.
pub fn udp_header<W: Write>(out: &mut W) -> fmt::Result {
    padded(out, 127, |p| {
        p.write_str("   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops")
    })
}

/// /proc/net/udp6's header.
pub fn udp6_header<W: Write>(out: &mut W) -> fmt::Result {
    out.write_str("  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n")
}

/// The TCP fields after the inode: reference count, pointer, rto and ato
/// (hundredths), quick ack, congestion window, slow-start threshold (the
/// accept queue's limit for a listener; -1 in initial slow start).
fn tcp_tail<W: Write>(out: &mut W, s: &InetSock) -> fmt::Result {
    let ssthresh = if s.state == TCP_LISTEN { 0 } else { -1 };
    write!(out, " {} {:016x} {} {} {} {} {}", 1, 0, 100, 0, 0, 10, ssthresh)
}

/// Line `i` of /proc/net/tcp.
pub fn tcp_line<W: Write>(out: &mut W, i: usize, s: &InetSock) -> fmt::Result {
    padded(out, 149, |p| {
        write!(
            p,
            "{:4}: {:08X}:{:04X} {:08X}:{:04X} {:02X} {:08X}:{:08X} {:02X}:{:08X} {:08X} {:5} {:8} {}",
            i,
            be32(v4(&s.local)),
            s.local_port,
            be32(v4(&s.remote)),
            s.remote_port,
            s.state,
            s.tx_queue,
            s.rx_queue,
            0,
            0,
            0,
            s.uid,
            0,
            s.inode
        )?;
        tcp_tail(p, s)
    })
}

/// Line `i` of /proc/net/tcp6.
pub fn tcp6_line<W: Write>(out: &mut W, i: usize, s: &InetSock) -> fmt::Result {
    write!(out, "{:4}: ", i)?;
    v6(out, &s.local)?;
    write!(out, ":{:04X} ", s.local_port)?;
    v6(out, &s.remote)?;
    write!(
        out,
        ":{:04X} {:02X} {:08X}:{:08X} {:02X}:{:08X} {:08X} {:5} {:8} {}",
        s.remote_port, s.state, s.tx_queue, s.rx_queue, 0, 0, 0, s.uid, 0, s.inode
    )?;
    tcp_tail(out, s)?;
    out.write_char('\n')
}

/// Line `bucket` of /proc/net/udp (the hash bucket the socket is in).
pub fn udp_line<W: Write>(out: &mut W, bucket: usize, s: &InetSock) -> fmt::Result {
    padded(out, 127, |p| {
        write!(
            p,
            "{:5}: {:08X}:{:04X} {:08X}:{:04X} {:02X} {:08X}:{:08X} {:02X}:{:08X} {:08X} {:5} {:8} {} {} {:016x} {}",
            bucket,
            be32(v4(&s.local)),
            s.local_port,
            be32(v4(&s.remote)),
            s.remote_port,
            s.state,
            s.tx_queue,
            s.rx_queue,
            0,
            0,
            0,
            s.uid,
            0,
            s.inode,
            2,
            0,
            0
        )
    })
}

/// Line `bucket` of /proc/net/udp6.
pub fn udp6_line<W: Write>(out: &mut W, bucket: usize, s: &InetSock) -> fmt::Result {
    write!(out, "{:5}: ", bucket)?;
    v6(out, &s.local)?;
    write!(out, ":{:04X} ", s.local_port)?;
    v6(out, &s.remote)?;
    writeln!(
        out,
        ":{:04X} {:02X} {:08X}:{:08X} {:02X}:{:08X} {:08X} {:5} {:8} {} {} {:016x} {}",
        s.remote_port, s.state, s.tx_queue, s.rx_queue, 0, 0, 0, s.uid, 0, s.inode, 2, 0, 0
    )
}

// IPv6 address scopes as if_inet6 prints them (`IPV6_ADDR_*` scope bits).
pub const IPV6_ADDR_GLOBAL: u8 = 0x00;
pub const IPV6_ADDR_LOOPBACK: u8 = 0x10;
pub const IPV6_ADDR_LINKLOCAL: u8 = 0x20;
pub const IPV6_ADDR_SITELOCAL: u8 = 0x40;

/// The scope bits Linux's `ipv6_addr_scope` gives an address.
pub fn ipv6_scope(a: &[u8; 16]) -> u8 {
    if a[..15].iter().all(|&b| b == 0) && a[15] == 1 {
        IPV6_ADDR_LOOPBACK
    } else if a[0] == 0xfe && a[1] & 0xc0 == 0x80 {
        IPV6_ADDR_LINKLOCAL
    } else if a[0] == 0xfe && a[1] & 0xc0 == 0xc0 {
        IPV6_ADDR_SITELOCAL
    } else {
        IPV6_ADDR_GLOBAL
    }
}

/// One line of /proc/net/if_inet6: address, interface index, prefix,
/// scope, IFA_F_* flags, device name.
pub fn if_inet6_line<W: Write>(
    out: &mut W,
    addr: &[u8; 16],
    index: u32,
    prefix: u8,
    flags: u8,
    dev: &str,
) -> fmt::Result {
    for b in addr {
        write!(out, "{:02x}", b)?;
    }
    writeln!(out, " {:02x} {:02x} {:02x} {:02x} {:>8}", index, prefix, ipv6_scope(addr), flags, dev)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    #[test]
    fn dev_lines_match_linux() {
        let mut s = String::new();
        dev_header(&mut s).unwrap();
        let st = DevStats { rx_bytes: 9579, rx_packets: 87, tx_bytes: 9579, tx_packets: 87, ..Default::default() };
        dev_line(&mut s, "lo", &st).unwrap();
        let want = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo:    9579      87    0    0    0     0          0         0     9579      87    0    0    0     0       0          0\n";
        assert_eq!(s, want);
    }

    #[test]
    fn route_lines_match_linux() {
        let mut s = String::new();
        route_header(&mut s).unwrap();
        route_line(&mut s, "eth0", [0; 4], 0, [192, 0, 2, 1], 0, false).unwrap();
        route_line(&mut s, "eth0", [192, 0, 2, 0], 24, [0; 4], 0, false).unwrap();
        let lines: std::vec::Vec<&str> = s.lines().collect();
        assert_eq!(lines[0].len(), 127);
        assert_eq!(
            lines[0].trim_end(),
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
        );
        assert_eq!(lines[1].trim_end(), "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0");
        assert_eq!(lines[1].len(), 127);
        assert_eq!(lines[2].trim_end(), "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0");
    }

    #[test]
    fn tcp_listener_line_matches_linux() {
        let mut s = String::new();
        tcp_header(&mut s).unwrap();
        let l = InetSock { local_port: 2024, state: TCP_LISTEN, inode: 1673, ..Default::default() };
        tcp_line(&mut s, 0, &l).unwrap();
        let lines: std::vec::Vec<&str> = s.lines().collect();
        assert_eq!(lines[0].len(), 149);
        assert_eq!(lines[1].len(), 149);
        // Linux's line, its pointer zeroed.
        assert_eq!(
            lines[1].trim_end(),
            "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1673 1 0000000000000000 100 0 0 10 0"
        );
    }

    #[test]
    fn udp_and_v6_lines() {
        let mut s = String::new();
        udp_header(&mut s).unwrap();
        let mut u = InetSock { local_port: 53, state: TCP_CLOSE, inode: 9, ..Default::default() };
        u.local[..4].copy_from_slice(&[127, 0, 0, 1]);
        udp_line(&mut s, 5, &u).unwrap();
        let lines: std::vec::Vec<&str> = s.lines().collect();
        assert_eq!(lines[0].len(), 127);
        assert_eq!(
            lines[1].trim_end(),
            "    5: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 9 2 0000000000000000 0"
        );
        let mut s = String::new();
        let mut t = InetSock { local_port: 22, state: TCP_LISTEN, inode: 7, ..Default::default() };
        t.local[15] = 1;
        tcp6_line(&mut s, 0, &t).unwrap();
        assert_eq!(
            s,
            "   0: 00000000000000000000000001000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1 0000000000000000 100 0 0 10 0\n"
        );
    }

    #[test]
    fn if_inet6_matches_linux() {
        let mut s = String::new();
        let mut lo = [0u8; 16];
        lo[15] = 1;
        if_inet6_line(&mut s, &lo, 1, 128, 0x80, "lo").unwrap();
        assert_eq!(s, "00000000000000000000000000000001 01 80 10 80       lo\n");
        let ll = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xfc, 0, 0xff, 0xfe, 0, 0, 1];
        assert_eq!(ipv6_scope(&ll), IPV6_ADDR_LINKLOCAL);
    }
}
