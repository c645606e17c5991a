//! Linux's `ip=` kernel parameter (Documentation/admin-guide/nfs/
//! nfsroot.rst): how the kernel configures a network interface at boot.
//!
//! `ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>:<dns0-ip>:<dns1-ip>:<ntp0-ip>`,
//! any field may be empty and trailing ones left out; `ip=dhcp` (or
//! `on`, `any`, `both`, `bootp`, `rarp`) alone asks for autoconfiguration
//! on every device, and `ip=off`/`none` for none. Kiln does DHCP for every
//! automatic method (it has no BOOTP or RARP client).

/// An IPv4 address as four octets.
pub type Ipv4 = [u8; 4];

/// What `ip=` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpConfig<'a> {
    /// No configuration (`off`, `none`).
    Off,
    /// DHCP on `device` (every device when None).
    Dhcp { device: Option<&'a str>, hostname: Option<&'a str> },
    /// A static address.
    Static(StaticConfig<'a>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticConfig<'a> {
    pub client: Ipv4,
    pub server: Option<Ipv4>,
    pub gateway: Option<Ipv4>,
    /// The prefix length (from the netmask; by the address class when
    /// no netmask is given, as Linux's `ic_defaults`).
    pub prefix: u8,
    pub hostname: Option<&'a str>,
    pub device: Option<&'a str>,
    pub dns: [Option<Ipv4>; 2],
}

/// Why an `ip=` value was not understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpConfigError {
    BadAddress,
    BadNetmask,
    BadAutoconf,
}

/// Parses a dotted quad (exactly four decimal octets).
pub fn parse_ipv4(s: &str) -> Option<Ipv4> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for o in out.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse::<u16>().ok().filter(|v| *v <= 255)? as u8;
    }
    parts.next().is_none().then_some(out)
}

fn is_auto(s: &str) -> bool {
    matches!(s, "on" | "any" | "dhcp" | "bootp" | "rarp" | "both")
}

fn field(s: Option<&str>) -> Option<&str> {
    s.filter(|v| !v.is_empty())
}

/// The netmask's prefix length, if it is a contiguous mask.
pub fn mask_prefix(m: Ipv4) -> Option<u8> {
    let v = u32::from_be_bytes(m);
    let ones = v.leading_ones();
    (v.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)
}

/// Parses the value of `ip=`.
pub fn parse(value: &str) -> Result<IpConfig<'_>, IpConfigError> {
    match value {
        "off" | "none" => return Ok(IpConfig::Off),
        v if is_auto(v) => return Ok(IpConfig::Dhcp { device: None, hostname: None }),
        _ => {}
    }
    let mut f = value.split(':');
    let client = field(f.next());
    let server = field(f.next());
    let gateway = field(f.next());
    let netmask = field(f.next());
    let hostname = field(f.next());
    let device = field(f.next());
    let autoconf = field(f.next());
    let dns0 = field(f.next());
    let dns1 = field(f.next());
    let addr = |s: Option<&str>| -> Result<Option<Ipv4>, IpConfigError> {
        s.map(|v| parse_ipv4(v).ok_or(IpConfigError::BadAddress)).transpose()
    };
    match autoconf {
        None | Some("off") | Some("none") => {}
        Some(a) if is_auto(a) => {
            if client.is_none() {
                return Ok(IpConfig::Dhcp { device, hostname });
            }
        }
        Some(_) => return Err(IpConfigError::BadAutoconf),
    }
    let Some(client) = addr(client)? else {
        // No address and no autoconfiguration: Linux does DHCP then too
        // (ic_enable with every protocol); Kiln says so plainly.
        return Ok(IpConfig::Dhcp { device, hostname });
    };
    let prefix = match addr(netmask).map_err(|_| IpConfigError::BadNetmask)? {
        Some(m) => mask_prefix(m).ok_or(IpConfigError::BadNetmask)?,
        None => match client[0] {
            0..=127 => 8,
            128..=191 => 16,
            _ => 24,
        },
    };
    Ok(IpConfig::Static(StaticConfig {
        client,
        server: addr(server)?,
        gateway: addr(gateway)?,
        prefix,
        hostname,
        device,
        dns: [addr(dns0)?, addr(dns1)?],
    }))
}

/// The `ip=` value on a kernel command line, if any (the last wins).
pub fn find(cmdline: &str) -> Option<&str> {
    cmdline.split_whitespace().rev().find_map(|a| a.strip_prefix("ip="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_with_gateway_and_device() {
        let c = parse("10.0.2.15::10.0.2.2:255.255.255.0::eth0:off").unwrap();
        assert_eq!(
            c,
            IpConfig::Static(StaticConfig {
                client: [10, 0, 2, 15],
                server: None,
                gateway: Some([10, 0, 2, 2]),
                prefix: 24,
                hostname: None,
                device: Some("eth0"),
                dns: [None, None],
            })
        );
    }

    #[test]
    fn keywords() {
        assert_eq!(parse("dhcp"), Ok(IpConfig::Dhcp { device: None, hostname: None }));
        assert_eq!(parse("off"), Ok(IpConfig::Off));
        assert_eq!(parse(":::::eth1:dhcp"), Ok(IpConfig::Dhcp { device: Some("eth1"), hostname: None }));
    }

    #[test]
    fn class_default_mask_and_dns() {
        let IpConfig::Static(s) = parse("192.168.7.2:::::eth0:none:1.1.1.1").unwrap() else { panic!() };
        assert_eq!(s.prefix, 24);
        assert_eq!(s.dns, [Some([1, 1, 1, 1]), None]);
        let IpConfig::Static(s) = parse("10.1.2.3").unwrap() else { panic!() };
        assert_eq!(s.prefix, 8);
    }

    #[test]
    fn errors() {
        assert_eq!(parse("10.0.2.300"), Err(IpConfigError::BadAddress));
        assert_eq!(parse("10.0.2.15:::255.0.255.0"), Err(IpConfigError::BadNetmask));
        assert_eq!(parse("10.0.2.15::::::bogus"), Err(IpConfigError::BadAutoconf));
        assert_eq!(parse_ipv4("1.2.3"), None);
        assert_eq!(parse_ipv4("1.2.3.4.5"), None);
    }

    #[test]
    fn find_last() {
        assert_eq!(find("console=ttyS0 ip=dhcp quiet ip=off"), Some("off"));
        assert_eq!(find("console=ttyS0"), None);
    }
}
