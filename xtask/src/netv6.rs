//! The network stage's IPv6 check through each NIC model: a Kiln
//! machine on QEMU user networking (slirp, which advertises the prefix
//! fec0::/64 from its router fe80::2 = fec0::2) gets its link-local
//! address from its MAC, its SLAAC address and default route from the
//! router advertisement, lists them as Linux does (`ip -6 addr`,
//! `ip -6 route`, /proc/net/if_inet6), and pings the router at both
//! addresses, which takes neighbour discovery both ways.
//!
//! QEMU 7.2's hostfwd takes IPv4 host addresses only, so TCP and UDP
//! over IPv6 cross a NIC between two Kiln machines on a `NET=socket`
//! segment instead ([`segment`]): static addresses added by hand,
//! link-local ones chosen by scope id on a two-NIC machine, SLAAC from a
//! router the host plays, and hand-added addresses kept when the
//! advertised prefix is withdrawn.

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

/// Both NIC models from slirp, then the two-machine segment.
pub fn stage(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let mut totals = (0, 0);
    for net in [qemu::Net::Virtio, qemu::Net::E1000] {
        let (p, f) = nic(repo, elf, net)?;
        totals = (totals.0 + p, totals.1 + f);
    }
    let (p, f) = segment(repo, elf)?;
    Ok((totals.0 + p, totals.1 + f))
}

/// The two-machine IPv6 run's MACs: A's eth0 (alone on its own
/// segment), A's eth1 and B's eth0 (together on the other). Both of A's
/// NICs are e1000s (one driver probes them in slot order, so eth0 and
/// eth1 are known), B's is a virtio-net: the data crosses both drivers.
const A0_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x4b, 0x06, 0x00];
const A1_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x4b, 0x06, 0x01];
const B_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x4b, 0x06, 0x02];
/// The link-local addresses of A's eth1 and B's eth0 (from their MACs).
const A1_LL: &str = "fe80::5054:ff:fe4b:601";
const B_LL: &str = "fe80::5054:ff:fe4b:602";
/// The router the host plays on A's eth1 segment (its advertisements
/// only: nothing answers at this address).
const ROUTER_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x4b, 0x06, 0x99];
const ROUTER_LL: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99];
/// The prefix the router advertises.
const PREFIX: [u8; 16] = [0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

fn mac_text(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// A router advertisement (RFC 4861 4.2) from `ROUTER_LL` to all nodes:
/// the router's lifetime and the on-link, autonomous prefix `PREFIX`/64
/// with `lifetime` seconds valid and preferred (0 withdraws both).
fn router_advert(lifetime: u32) -> Vec<u8> {
    let mut icmp = vec![134u8, 0, 0, 0, 64, 0];
    icmp.extend_from_slice(&(lifetime.min(9000) as u16).to_be_bytes());
    icmp.extend_from_slice(&[0; 8]); // reachable time, retransmission timer
    icmp.extend_from_slice(&[1, 1]); // source link-layer address
    icmp.extend_from_slice(&ROUTER_MAC);
    icmp.extend_from_slice(&[3, 4, 64, 0xc0]); // prefix information, L and A
    icmp.extend_from_slice(&lifetime.to_be_bytes());
    icmp.extend_from_slice(&lifetime.to_be_bytes());
    icmp.extend_from_slice(&[0; 4]);
    icmp.extend_from_slice(&PREFIX);
    let dst: [u8; 16] = [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    // The checksum over the pseudo-header (RFC 8200 8.1) and the message.
    let mut sum: u32 = 0;
    let mut words = |b: &[u8]| {
        for c in b.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
    };
    words(&ROUTER_LL);
    words(&dst);
    words(&(icmp.len() as u32).to_be_bytes());
    words(&[0, 0, 0, 58]);
    words(&icmp);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    icmp[2..4].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let mut f = vec![0x33, 0x33, 0, 0, 0, 1];
    f.extend_from_slice(&ROUTER_MAC);
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
    f.extend_from_slice(&[58, 255]);
    f.extend_from_slice(&ROUTER_LL);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&icmp);
    f
}

/// Two hub ports whose machine ports do not overlap: `(first, second)`.
fn two_hub_ports() -> Result<(u16, u16)> {
    for _ in 0..20 {
        let a = crate::netseg::free_udp_port()?;
        let b = crate::netseg::free_udp_port()?;
        if a.abs_diff(b) > 3 {
            return Ok((a, b));
        }
    }
    Err("no two sets of free UDP ports on 127.0.0.1".into())
}

/// A `-netdev dgram` NIC `id` of model `model` with MAC `mac` on the hub
/// at `hub`, sending from `port`.
fn dgram_nic(id: &str, hub: u16, port: u16, model: &str, mac: [u8; 6]) -> [String; 4] {
    [
        "-netdev".into(),
        format!(
            "dgram,id={id},local.type=inet,local.host=127.0.0.1,local.port={port},remote.type=inet,remote.host=127.0.0.1,remote.port={hub}"
        ),
        "-device".into(),
        format!("{model},netdev={id},mac={}", mac_text(mac)),
    ]
}

/// Bytes each way of each TCP exchange in the two-machine run.
const SEG_BYTES: u64 = 4 << 20;

/// Two Kiln machines on a `NET=socket` segment over IPv6 (QEMU 7.2's
/// hostfwd takes no IPv6, so this is where TCP and UDP over IPv6 cross
/// a NIC). A has two e1000s: eth0 alone on a segment of its own, eth1
/// with B's virtio-net. Each gets a static global address by hand
/// (`ip -6 addr add`, netlink RTM_NEWADDR); A also adds by hand the very
/// address SLAAC will make from the host's advertised prefix. The host
/// plays a router (advertisements only); then:
///
/// * B → A: TCP (netecho, checked both ways) and UDP (200 echoed
///   datagrams) to A's static address, and TCP to A's link-local
///   address through B's eth0;
/// * A → B: TCP and UDP to B's link-local address through eth1 (the
///   scope id picks eth1, though eth0 is first and on fe80::/64 too),
///   and UDP to it through eth0 gets no answer;
/// * the host withdraws the prefix; B's SLAAC address goes, the
///   addresses added by hand in that prefix (B's fd00:1::2, A's
///   SLAAC-equal one) stay, and B reaches A's again.
pub fn segment(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let label = "nic-ipv6-segment";
    let start = std::time::Instant::now();
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let (lone_port, seg_port) = two_hub_ports()?;
    let lone = crate::nethub::start(lone_port, 1)?;
    let seg = crate::nethub::start(seg_port, 2)?;
    let n = SEG_BYTES;
    let wait_until = |cond: &str| format!("i=0; until {cond}; do i=$((i+1)); [ $i -gt 90 ] && break; sleep 1; done");
    let a_hand = "fd00:1::5054:ff:fe4b:601";
    let script_a = format!(
        "ip -6 addr add fd00::1/64 dev eth1 && echo v6 add ok; ip -6 addr add {a_hand}/64 dev eth1; \
         /t/netecho serve6 7000 >/dev/null & P1=$!; /t/netpeer udp6-echo 7001 & P2=$!; sleep 1; echo v6-a-ready; \
         {}; ip -6 addr show dev eth1; ip -6 route; \
         /t/netecho send {B_LL}%eth1 7000 {n} {n}; /t/netpeer udp-send {B_LL}%eth1 7001 200; \
         echo wrong link:; /t/netpeer udp-send {B_LL}%eth0 7001 1; \
         echo ping scoped:; ping -c 1 -W 5 {B_LL}%eth1 | grep 'packets received'; \
         echo ping wrong link:; ping -c 1 -W 2 {B_LL}%eth0 | grep 'packets received'; \
         /t/netecho stop {B_LL}%eth1 7000; echo v6-a-first; \
         {}; echo v6-a-expired; ip -6 addr show dev eth1; \
         sleep 20; kill $P1 $P2; wait; echo v6-a-done",
        wait_until("ip -6 route | grep -q 'default via fe80::99'"),
        wait_until("! ip -6 route | grep -q 'default via fe80::99'"),
    );
    let b_slaac = "fd00:1::5054:ff:fe4b:602/64";
    let small = 1 << 16;
    let script_b = format!(
        "ip -6 addr add fd00::2/64 dev eth0; ip -6 addr add fd00:1::2/64 dev eth0; \
         /t/netecho serve6 7000 >/dev/null & P1=$!; /t/netpeer udp6-echo 7001 & P2=$!; sleep 1; echo v6-b-ready; \
         {}; ip -6 addr show dev eth0; \
         /t/netecho send fd00::1 7000 {n} {n}; /t/netpeer udp-send fd00::1 7001 200; \
         /t/netecho send {A1_LL}%eth0 7000 {n} {n}; echo v6-b-first; \
         {}; echo v6-b-expired; ip -6 addr show dev eth0; \
         /t/netecho send {a_hand} 7000 {small} {small}; wait $P1; kill $P2; wait; echo v6-b-done",
        wait_until(&format!("ip -6 addr show dev eth0 | grep -q {b_slaac}")),
        wait_until(&format!("! ip -6 addr show dev eth0 | grep -q {b_slaac}")),
    );
    let limit = Duration::from_secs(600);
    let mut guests = Vec::new();
    for (name, script, nics) in [
        (
            "a",
            script_a,
            [
                dgram_nic("n0", lone_port, crate::nethub::node_port(lone_port, 0), "e1000", A0_MAC),
                dgram_nic("n1", seg_port, crate::nethub::node_port(seg_port, 0), "e1000", A1_MAC),
            ]
            .concat(),
        ),
        (
            "b",
            script_b,
            dgram_nic("n0", seg_port, crate::nethub::node_port(seg_port, 1), "virtio-net-pci", B_MAC).to_vec(),
        ),
    ] {
        let mut extra = vec!["-m".to_string(), "512M".to_string()];
        extra.extend(nics);
        let cmdline = crate::usertest::shell_cmdline_via("", None, &script)?;
        let boot = qemu::Boot {
            image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd.clone()) },
            smp: 1,
            extra,
        };
        let log = build::out_dir().join(format!("{label}-{name}.log"));
        let _ = std::fs::remove_file(&log);
        let l2 = log.clone();
        guests.push((log, std::thread::spawn(move || qemu::run_captured(&boot, limit, &l2))));
    }
    let (log_a, log_b) = (guests[0].0.clone(), guests[1].0.clone());
    let (mut passed, mut failed) = (0u64, 0u64);
    let router = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    // A few copies: the hub is UDP, and one lost advertisement is not a
    // fault of the guests.
    let advertise = |lifetime: u32| {
        for _ in 0..3 {
            let _ = router.send_to(&router_advert(lifetime), ("127.0.0.1", seg_port));
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let boot_limit = Duration::from_secs(300);
    let up = crate::netseg::wait_for(&log_a, "v6-a-ready", boot_limit, || {})
        && crate::netseg::wait_for(&log_b, "v6-b-ready", boot_limit, || {});
    let r = if up { Ok("both machines up".to_string()) } else { Err("a machine never came up".to_string()) };
    check(label, "boot", r, &mut passed, &mut failed);
    if up {
        advertise(600);
        let step = Duration::from_secs(240);
        let first = crate::netseg::wait_for(&log_a, "v6-a-first", step, || {})
            && crate::netseg::wait_for(&log_b, "v6-b-first", step, || {});
        if first {
            advertise(0);
        }
    }
    let mut outputs = Vec::new();
    for (name, (_, t)) in ["a", "b"].iter().zip(guests) {
        let run = t.join().map_err(|_| "a QEMU thread panicked".to_string())??;
        let (p, f) = crate::usertest::leak_verdict(&format!("{label}-{name}"), &run);
        passed += p;
        failed += f;
        outputs.push(run.output);
    }
    drop((lone, seg));
    let lines = |o: &str| o.lines().map(|l| l.trim_end().to_string()).collect::<Vec<_>>();
    let (a, b) = (lines(&outputs[0]), lines(&outputs[1]));
    let count = |v: &[String], s: &str| v.iter().filter(|l| l.trim() == s).count();
    let has = |v: &[String], parts: &[&str]| v.iter().any(|l| parts.iter().all(|p| l.contains(p)));
    let see = format!("see build/{label}-a.log and -b.log");
    let (up_ok, down_ok) = (format!("up {n} bytes: ok"), format!("down {n} bytes: ok"));
    let r = if has(&a, &["v6 add ok"]) && has(&a, &["inet6 fd00::1/64 scope global"]) {
        Ok("ip -6 addr add fd00::1/64 dev eth1 (RTM_NEWADDR) listed".to_string())
    } else {
        Err(format!("the static address is not on eth1 ({see})"))
    };
    check(label, "addr-add", r, &mut passed, &mut failed);
    let r = if has(&b, &["inet6", b_slaac, "scope global dynamic"])
        && has(&a, &["default via fe80::99 dev eth1", "metric 1024"])
    {
        Ok(format!("B took {b_slaac}, A a default route from the host's advertisement"))
    } else {
        Err(format!("no SLAAC address or route from the advertisement ({see})"))
    };
    check(label, "slaac", r, &mut passed, &mut failed);
    let r = if count(&b, &up_ok) >= 2 && count(&b, &down_ok) >= 2 && count(&b, "udp 200 datagrams: ok") == 1 {
        Ok(format!("{n} bytes each way to fd00::1 and to {A1_LL}%eth0, 200 datagrams, checked"))
    } else {
        Err(format!("a stream or datagram from B was lost or corrupted ({see})"))
    };
    check(label, "b-to-a", r, &mut passed, &mut failed);
    let r = if count(&a, &up_ok) == 1 && count(&a, &down_ok) == 1 && count(&a, "udp 200 datagrams: ok") == 1 {
        Ok(format!("{n} bytes each way and 200 datagrams to {B_LL}%eth1, checked"))
    } else {
        Err(format!("A's exchange through eth1 by scope id failed ({see})"))
    };
    check(label, "a-to-b-scoped", r, &mut passed, &mut failed);
    // The first line after `marker` that starts with `prefix` (other
    // programs' lines, the servers' among them, may come between).
    let after = |marker: &str, prefix: &str| {
        let i = a.iter().position(|l| l == marker)?;
        a[i + 1..].iter().find(|l| l.starts_with(prefix)).cloned()
    };
    let r = match after("wrong link:", "udp ").as_ref() {
        Some(l) if l == "udp 1 datagrams: LOST" => Ok(format!("{B_LL}%eth0 unanswered: eth0's segment has no B")),
        Some(l) => Err(format!("through eth0: {l} ({see})")),
        None => Err(format!("no verdict through eth0 ({see})")),
    };
    check(label, "scope-picks-link", r, &mut passed, &mut failed);
    // Interface indices: lo 1, eth0 2, eth1 3 (A); lo 1, eth0 2 (B).
    let r = if has(&a, &["netecho: link-local peer scope 3, own scope 3"])
        && has(&a, &["netecho: accepted a link-local peer, scope 3"])
        && has(&a, &["netpeer udp: link-local peer scope 3, own scope 3"])
        && has(&a, &["netpeer udp: link-local peer scope 2, own scope 2"])
        && has(&b, &["netecho: link-local peer scope 2, own scope 2"])
        && has(&b, &["netecho: accepted a link-local peer, scope 2"])
        && has(&b, &["netpeer: link-local sender, scope 2"])
    {
        Ok("link-local peers carry their link's index as sin6_scope_id in accept, getpeername, getsockname and recvfrom (A eth1 3, eth0 2; B eth0 2)".to_string())
    } else {
        Err(format!("a link-local address came back without its interface's scope id ({see})"))
    };
    check(label, "scope-ids-reported", r, &mut passed, &mut failed);
    let r = match (after("ping scoped:", "1 packets"), after("ping wrong link:", "1 packets")) {
        (Some(good), Some(wrong))
            if good.starts_with("1 packets transmitted, 1 packets received")
                && wrong.starts_with("1 packets transmitted, 0 packets received") =>
        {
            Ok(format!("busybox ping {B_LL}%eth1 answered, %eth0 not: the scope id picks the link for ICMP too"))
        }
        (good, wrong) => Err(format!("ping by scope id: {good:?}, wrong link {wrong:?} ({see})")),
    };
    check(label, "ping-scoped", r, &mut passed, &mut failed);
    let expired = b.iter().position(|l| l == "v6-b-expired");
    let after = expired.map(|i| &b[i..]).unwrap_or_default();
    let small_ok = format!("up {small} bytes: ok");
    let a_after = a.iter().position(|l| l == "v6-a-expired").map(|i| &a[i..]).unwrap_or_default();
    let r = if expired.is_some()
        && !has(after, &[b_slaac])
        && has(after, &["inet6 fd00:1::2/64"])
        && count(after, &small_ok) == 1
        && has(a_after, &["inet6", a_hand, "scope global"])
        && has(a_after, &["inet6 fd00::1/64"])
    {
        Ok(format!(
            "prefix withdrawn: B's SLAAC address gone, its fd00:1::2 kept; A's hand-added {a_hand} kept and answering, fd00::1 kept"
        ))
    } else {
        Err(format!("after the prefix was withdrawn ({see})"))
    };
    check(label, "hand-added-kept", r, &mut passed, &mut failed);
    println!("{label}: {passed} passed, {failed} failed; {:.0} s", start.elapsed().as_secs_f64());
    Ok((passed, failed))
}
