//! The network stage's IPv6 check through each NIC model: a Kiln
//! machine on QEMU user networking (slirp, which advertises the prefix
//! fec0::/64 from its router fe80::2 = fec0::2) gets its link-local
//! address from its MAC, its SLAAC address and default route from the
//! router advertisement, lists them as Linux does (`ip -6 addr`,
//! `ip -6 route`, /proc/net/if_inet6), and pings the router at both
//! addresses, which takes neighbour discovery both ways.
//!
//! QEMU 7.2's hostfwd takes IPv4 host addresses only, so TCP and UDP
//! over IPv6 from the host are not checked here.

use std::path::Path;
use std::time::Duration;

use crate::{build, qemu, Result};

/// QEMU's default MAC 52:54:00:12:34:56 as an EUI-64 interface id.
const LINK_LOCAL: &str = "fe80::5054:ff:fe12:3456/64";
const SLAAC: &str = "fec0::5054:ff:fe12:3456/64";

fn check(label: &str, name: &str, r: std::result::Result<String, String>, passed: &mut u64, failed: &mut u64) {
    match r {
        Ok(text) => {
            *passed += 1;
            println!("{label} {name} ... ok ({text})");
        }
        Err(why) => {
            *failed += 1;
            crate::recap::failure(format!("{label} {name} ... FAILED ({why})"));
        }
    }
}

/// One boot on `net`: addresses, routes, if_inet6, pings.
fn nic(repo: &Path, elf: &Path, net: qemu::Net) -> Result<(u64, u64)> {
    let model = if net == qemu::Net::E1000 { "e1000" } else { "virtio" };
    let label = format!("nic-ipv6-{model}");
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let mut extra = vec!["-m".to_string(), "256M".to_string()];
    extra.extend(qemu::net_args(net, "")?);
    // The router answers a solicitation at once; the sleep leaves room
    // for a slow machine.
    let command = "sleep 2; ip -6 addr show dev eth0; ip -6 route; cat /proc/net/if_inet6; \
         ping -6 -c 2 -W 5 fec0::2 > /dev/null && echo router answers ping6; \
         ping -6 -c 1 -W 5 fe80::2%eth0 > /dev/null && echo link-local router answers ping6; \
         /t/ipv6scope nic";
    let cmdline = crate::usertest::shell_cmdline_via("", None, command)?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd) },
        smp: 1,
        extra,
    };
    let log = build::out_dir().join(format!("{label}.log"));
    let run = qemu::run_captured(&boot, Duration::from_secs(240), &log)?;
    let (mut passed, mut failed) = (0u64, 0u64);
    let lines: Vec<&str> = run.output.lines().map(str::trim_end).collect();
    let has = |parts: &[&str]| lines.iter().any(|l| parts.iter().all(|p| l.contains(p)));
    let see = format!("see build/{label}.log");
    let r = if has(&["inet6", LINK_LOCAL, "scope link"]) {
        Ok(format!("{LINK_LOCAL} scope link"))
    } else {
        Err(format!("no link-local address from the MAC ({see})"))
    };
    check(&label, "link-local", r, &mut passed, &mut failed);
    let r = if has(&["inet6", SLAAC, "scope site", "dynamic"]) {
        Ok(format!("{SLAAC} scope site dynamic"))
    } else {
        Err(format!("no SLAAC address from slirp's advertisement ({see})"))
    };
    check(&label, "slaac", r, &mut passed, &mut failed);
    let r = if has(&["default via fe80::2 dev eth0", "metric 1024"]) && has(&["fec0::/64 dev eth0", "metric 256"]) {
        Ok("default via fe80::2, fec0::/64 on eth0".to_string())
    } else {
        Err(format!("ip -6 route lacks the default or the prefix route ({see})"))
    };
    check(&label, "routes", r, &mut passed, &mut failed);
    let r = if has(&["fe80000000000000505400fffe123456 02 40 20 80     eth0"])
        && has(&["fec0000000000000505400fffe123456 02 40 40 00     eth0"])
    {
        Ok("both addresses, Linux's columns".to_string())
    } else {
        Err(format!("/proc/net/if_inet6 lacks an address ({see})"))
    };
    check(&label, "if_inet6", r, &mut passed, &mut failed);
    let r = if has(&["router answers ping6"]) && has(&["link-local router answers ping6"]) {
        Ok("fec0::2 and fe80::2%eth0 answer".to_string())
    } else {
        Err(format!("no echo reply from slirp's router ({see})"))
    };
    check(&label, "ping6", r, &mut passed, &mut failed);
    let r = match lines.iter().find(|l| l.starts_with("ipv6scope:")) {
        Some(l) if l.ends_with(" 0 failed") => Ok(l.to_string()),
        Some(l) => Err(format!("{l} ({see})")),
        None => Err(format!("ipv6scope did not finish ({see})")),
    };
    check(&label, "scope-ids", r, &mut passed, &mut failed);
    let (p, f) = crate::usertest::leak_verdict(&label, &run);
    Ok((passed + p, failed + f))
}

/// Both NIC models.
pub fn stage(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let mut totals = (0, 0);
    for net in [qemu::Net::Virtio, qemu::Net::E1000] {
        let (p, f) = nic(repo, elf, net)?;
        totals = (totals.0 + p, totals.1 + f);
    }
    Ok(totals)
}
