//! `make test`'s network stage beyond the loopback: two Kiln machines on
//! one `NET=socket` segment talking TCP and UDP, a hostile member
//! attacking one of them (malformed frames, a SYN flood, a connection
//! flood), and a bulk transfer from the host through each NIC model
//! (virtio-net and e1000) over QEMU user networking and `hostfwd`, and
//! through a virtio-net on a tap device in a network namespace made for
//! the run (`nic-tap`, [`crate::tapnet`]).
//!
//! The segment run: machine A (10.0.3.1) serves netecho (TCP 7000), UDP
//! echoes (7001 for B and the probes, 7002 under attack) and a listener that accepts and keeps connections
//! (7004); machine B (10.0.3.2) moves netecho's checked stream and 200
//! echoed datagrams to A once before the attack and once after. Each
//! guest waits for the host's go (a UDP datagram to 7003, then to 7005)
//! between steps. A prints MemAvailable before and after the attack; the
//! drop must stay below what the connections it was made to keep open
//! can hold. `make fuzz-net` runs the full counts.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::netflood::{Member, Report, Target};
use crate::serverstest::Netdev;
use crate::tapnet::TapNet;
use crate::{build, nethub, qemu, Result};

/// How hard the attack is.
#[derive(Clone, Copy)]
pub struct Counts {
    pub frames: u64,
    pub syns: u64,
    pub connections: u16,
    /// Bytes each way of each netecho exchange between the machines.
    pub echo: u64,
}

/// `make test`'s counts.
pub const SHORT: Counts = Counts { frames: 10_000, syns: 5_000, connections: 1_000, echo: 4 << 20 };
/// The issue's: `make fuzz-net`.
pub const LONG: Counts = Counts { frames: 100_000, syns: 50_000, connections: 5_000, echo: 64 << 20 };

const SEED: u64 = 0x4b696c6e_6e657466;

const A_IP: [u8; 4] = [10, 0, 3, 1];

fn tally(label: &str, name: &str, r: std::result::Result<String, String>, passed: &mut u64, failed: &mut u64) {
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

/// Waits until `log` holds `marker` (or `limit` passes, or QEMU ends),
/// calling `poke` every second meanwhile.
pub fn wait_for(log: &Path, marker: &str, limit: Duration, mut poke: impl FnMut()) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l.trim() == marker) {
            return true;
        }
        if text.contains("kiln: init exited") || text.contains("PANIC") {
            return false;
        }
        poke();
        std::thread::sleep(Duration::from_secs(1));
    }
    false
}

pub fn free_udp_port() -> Result<u16> {
    // Three consecutive ports: the hub and two machines.
    for _ in 0..50 {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
        let p = s.local_addr().map_err(|e| format!("{e}"))?.port();
        if p < 65000
            && std::net::UdpSocket::bind(("127.0.0.1", p + 1)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", p + 2)).is_ok()
        {
            return Ok(p);
        }
    }
    Err("no three free UDP ports in a row on 127.0.0.1".into())
}

fn mem_available(output: &str) -> Vec<u64> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("MemAvailable:"))
        .filter_map(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .collect()
}

/// The segment run; returns (passed, failed).
pub fn segment(repo: &Path, elf: &Path, c: Counts) -> Result<(u64, u64)> {
    let label = "netseg";
    let start = Instant::now();
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let hub_port = free_udp_port()?;
    let hub = nethub::start(hub_port, 2)?;
    let n = c.echo;
    // The servers are killed and reaped at the end, so the kernel's
    // count of user memory left is 0 again.
    let script_a = "/t/netecho serve 7000 >/dev/null & P1=$!; /t/netpeer udp-echo 7001 & P2=$!; \
                    /t/netpeer udp-echo 7002 & P3=$!; /t/netpeer hold 7004 & P4=$!; \
                    sleep 1; echo seg-ready; grep MemAvailable /proc/meminfo; /t/netpeer wait 7003; \
                    sleep 2; grep MemAvailable /proc/meminfo; echo seg-after; /t/netpeer wait 7005; \
                    kill $P1 $P2 $P3 $P4; wait; echo seg-done"
        .to_string();
    let exchange = format!("/t/netecho send 10.0.3.1 7000 {n} {n}; /t/netpeer udp-send 10.0.3.1 7001 200");
    let script_b = format!(
        "echo seg-b-ready; /t/netpeer wait 7003; {exchange}; echo seg-first; /t/netpeer wait 7005; {exchange}; echo seg-second"
    );
    let limit = Duration::from_secs(900 + c.echo / 200_000 + c.frames / 200 + c.syns / 200);
    let mut guests = Vec::new();
    for (node, ip, script, mem) in [(0u8, "10.0.3.1", script_a, "1G"), (1, "10.0.3.2", script_b, "512M")] {
        let mut extra = vec!["-m".to_string(), mem.to_string()];
        extra.extend(nethub::netdev_args(hub_port, node, "virtio-net-pci"));
        let cmdline = crate::usertest::shell_cmdline_via(&format!("ip={ip}:::255.255.255.0::eth0:off"), None, &script)?;
        let boot = qemu::Boot {
            image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd.clone()) },
            smp: 1,
            extra,
        };
        let log = build::out_dir().join(format!("netseg-{}.log", if node == 0 { "a" } else { "b" }));
        let _ = std::fs::remove_file(&log);
        let l2 = log.clone();
        guests.push((log, std::thread::spawn(move || qemu::run_captured(&boot, limit, &l2))));
    }
    let (log_a, log_b) = (guests[0].0.clone(), guests[1].0.clone());
    let (mut passed, mut failed) = (0u64, 0u64);
    let boot_limit = Duration::from_secs(300);
    let up = wait_for(&log_a, "seg-ready", boot_limit, || {}) && wait_for(&log_b, "seg-b-ready", boot_limit, || {});
    tally(
        label,
        "boot",
        if up { Ok("both machines up".into()) } else { Err("a machine never came up".into()) },
        &mut passed,
        &mut failed,
    );
    let target = Target { mac: nethub::mac(0), ip: A_IP, tcp_ports: [7004, 7000], udp_port: 7002, probe_port: 7001 };
    let mut report = Report::default();
    if up {
        let member = Member::join(hub_port, target)?;
        let b = (nethub::mac(1), [10, 0, 3, 2]);
        let step = Duration::from_secs(120 + c.echo / 100_000);
        let first = wait_for(&log_b, "seg-first", step, || member.signal(b.0, b.1, 7003));
        tally(
            label,
            "b-to-a-before",
            if first { Ok("TCP and UDP exchange done".into()) } else { Err("B never finished".into()) },
            &mut passed,
            &mut failed,
        );
        let alive = |what: &str, passed: &mut u64, failed: &mut u64| {
            let up = member.ping(&target, Duration::from_secs(20));
            let r = if up { Ok("A echoes UDP".to_string()) } else { Err("A no longer echoes UDP".to_string()) };
            tally(label, &format!("alive-after-{what}"), r, passed, failed);
        };
        alive("exchange", &mut passed, &mut failed);
        let t0 = Instant::now();
        // NETSEG_KINDS=1: each kind of malformed frame in turn, with a
        // ping after each (to find the one that hurts).
        if std::env::var("NETSEG_KINDS").is_ok_and(|v| v == "1") {
            for k in 0..10 {
                member.hostile(&target, SEED + k, c.frames / 10, Some(k), Duration::from_secs(30), &mut report);
                alive(&format!("frame-kind-{k}"), &mut passed, &mut failed);
            }
        } else {
            member.hostile(&target, SEED, c.frames, None, Duration::from_secs(30 + c.frames / 1000), &mut report);
            alive("malformed-frames", &mut passed, &mut failed);
        }
        let t1 = Instant::now();
        member.syn_flood(&target, SEED + 1, c.syns, Duration::from_secs(30 + c.syns / 1000), &mut report);
        alive("syn-flood", &mut passed, &mut failed);
        let t2 = Instant::now();
        member.conn_flood(
            &target,
            7004,
            c.connections,
            64,
            Duration::from_secs(60 + c.connections as u64 / 20),
            &mut report,
        );
        let t3 = Instant::now();
        println!(
            "{label}: {} hostile frames in {:.1} s, {} SYNs in {:.1} s ({} SYN-ACKs back), {} of {} handshakes in {:.1} s",
            report.frames,
            (t1 - t0).as_secs_f64(),
            report.syns,
            (t2 - t1).as_secs_f64(),
            report.syn_acks_to_flood,
            report.handshakes,
            c.connections,
            (t3 - t2).as_secs_f64()
        );
        tally(
            label,
            "connection-flood",
            if report.handshakes * 10 >= c.connections as u64 * 9 {
                Ok(format!("{} handshakes finished and left open", report.handshakes))
            } else {
                Err(format!("only {} of {} handshakes finished", report.handshakes, c.connections))
            },
            &mut passed,
            &mut failed,
        );
        let after = wait_for(&log_a, "seg-after", Duration::from_secs(120), || member.signal(target.mac, A_IP, 7003));
        let second = after && wait_for(&log_b, "seg-second", step, || member.signal(b.0, b.1, 7005));
        tally(
            label,
            "b-to-a-after",
            if second {
                Ok("TCP and UDP exchange done after the attack".into())
            } else {
                Err("no exchange after the attack".into())
            },
            &mut passed,
            &mut failed,
        );
        let _ = wait_for(&log_a, "seg-done", Duration::from_secs(60), || member.signal(target.mac, A_IP, 7005));
    }
    let mut outputs = Vec::new();
    for (name, (_, t)) in ["a", "b"].iter().zip(guests) {
        let run = t.join().map_err(|_| "a QEMU thread panicked".to_string())??;
        let (p, f) = crate::usertest::leak_verdict(&format!("netseg-{name}"), &run);
        passed += p;
        failed += f;
        outputs.push(run.output);
    }
    drop(hub);
    let ok_lines = |out: &str, want: &str| out.lines().filter(|l| l.trim() == want).count();
    let b = &outputs[1];
    let checked = ok_lines(b, &format!("up {n} bytes: ok")) == 2
        && ok_lines(b, &format!("down {n} bytes: ok")) == 2
        && ok_lines(b, "udp 200 datagrams: ok") == 2;
    tally(
        label,
        "checksums",
        if checked {
            Ok(format!("{n} bytes each way twice and 400 datagrams, all checked"))
        } else {
            Err("a stream or a datagram was lost or corrupted".into())
        },
        &mut passed,
        &mut failed,
    );
    let mem = mem_available(&outputs[0]);
    // What the connections the flood left open may hold (a few KiB of
    // buffers each in `netpeer hold`, and the kernel's per-socket state),
    // plus slack.
    let allowed = c.connections as u64 * 64 + 64 * 1024;
    let mem_ok = match mem.as_slice() {
        [before, after] => {
            let drop = before.saturating_sub(*after);
            if drop <= allowed {
                Ok(format!("MemAvailable {before} kB before, {after} kB after ({drop} kB held, at most {allowed})"))
            } else {
                Err(format!("MemAvailable fell from {before} to {after} kB (more than {allowed})"))
            }
        }
        _ => Err("no MemAvailable before and after".into()),
    };
    tally(label, "memory-bounded", mem_ok, &mut passed, &mut failed);
    println!("{label}: {passed} passed, {failed} failed; {:.0} s", start.elapsed().as_secs_f64());
    Ok((passed, failed))
}

/// Bytes each way through each NIC in `make test`: issue 12's 1 GiB,
/// checked (about 1.5 minutes per NIC on a quiet machine; `make
/// nettest-long` runs these two alone).
pub const NIC_BYTES: u64 = crate::serverstest::LONG_ECHO_BYTES;

/// netecho in Kiln, the host's netecho through hostfwd, `bytes` each way
/// through NIC `model`; returns (passed, failed).
pub fn nic_echo(repo: &Path, elf: &Path, net: qemu::Net, bytes: u64) -> Result<(u64, u64)> {
    let name = match net {
        qemu::Net::E1000 => "e1000",
        _ => "virtio",
    };
    echo_through(repo, elf, net, Netdev::Slirp, &format!("nic-{name}"), (bytes, bytes), "")
}

/// Bytes each way through the tap in `make test` (`nic-tap`): enough to
/// show the path carries a checked stream, little enough to stay cheap.
pub const TAP_BYTES: u64 = 4 << 20;

/// As [`nic_echo`] with a virtio NIC on a tap device in a network
/// namespace made for the run and removed after it ([`crate::tapnet`]):
/// the path `make bench-servers TAP=1` measures.
pub fn tap_echo(repo: &Path, elf: &Path, bytes: u64) -> Result<(u64, u64)> {
    let start = Instant::now();
    let tap = match TapNet::create() {
        Ok(tap) => tap,
        // Counted, not thrown: the stage's other checks still run.
        Err(e) => return Ok(check("nic-tap", "namespace", Err(e))),
    };
    let name = tap.name().to_string();
    let (p, f) = echo_through(repo, elf, qemu::Net::Virtio, Netdev::Tap(&tap), "nic-tap", (bytes, bytes), "")?;
    drop(tap);
    let (p2, f2) = check(
        "nic-tap",
        "namespace-removed",
        if crate::tapnet::listed(&name) {
            Err(format!("{name} still listed by ip netns"))
        } else {
            Ok(format!("{name} gone; {:.0} s", start.elapsed().as_secs_f64()))
        },
    );
    Ok((p + p2, f + f2))
}

/// One verdict as (passed, failed).
fn check(label: &str, name: &str, r: std::result::Result<String, String>) -> (u64, u64) {
    let (mut p, mut f) = (0, 0);
    tally(label, name, r, &mut p, &mut f);
    (p, f)
}

/// `NETCHECK=bulk`: guest→host bulk (32 MiB) through virtio-net on slirp
/// and on the tap, with the guest's send ring at 64 KiB, 256 KiB and 1
/// MiB (netecho's SO_SNDBUF of 8 KiB, 32 KiB and 128 KiB: Kiln doubles
/// it as Linux does and makes the ring four times that), one boot each,
/// back to back; netecho's rates are in each line. A measurement, not a
/// check: it passes whenever the bytes arrive.
pub fn bulk_send_rings(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    const BYTES: u64 = 32 << 20;
    let mut totals = (0, 0);
    for sndbuf in ["8192", "32768", "131072"] {
        let env = format!("NETECHO_SNDBUF={sndbuf} ");
        let (p, f) = echo_through(
            repo,
            elf,
            qemu::Net::Virtio,
            Netdev::Slirp,
            &format!("bulk-slirp-{sndbuf}"),
            (1, BYTES),
            &env,
        )?;
        totals = (totals.0 + p, totals.1 + f);
        let tap = match TapNet::create() {
            Ok(tap) => tap,
            Err(e) => return Ok(check("bulk-tap", "namespace", Err(e))),
        };
        let (p, f) = echo_through(
            repo,
            elf,
            qemu::Net::Virtio,
            Netdev::Tap(&tap),
            &format!("bulk-tap-{sndbuf}"),
            (1, BYTES),
            &env,
        )?;
        drop(tap);
        totals = (totals.0 + p, totals.1 + f);
    }
    Ok(totals)
}

/// netecho in Kiln serving 7000 behind NIC `net` on `netdev` (`env`
/// before its command), the host's netecho moving `up` bytes to it and
/// `down` back, checked.
fn echo_through(
    repo: &Path,
    elf: &Path,
    net: qemu::Net,
    netdev: Netdev,
    label: &str,
    (up, down): (u64, u64),
    env: &str,
) -> Result<(u64, u64)> {
    let bytes = up.max(down);
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let mut extra = vec!["-m".to_string(), "512M".to_string()];
    if qemu::iommu_from_env() {
        extra.extend(qemu::iommu_args());
    }
    let (addr, gateway, prefix_len) = netdev.guest_addr();
    let (target, port, http_port) = match netdev {
        Netdev::Slirp => {
            // Both held until both are known, so they differ.
            let free: Vec<std::net::TcpListener> = (0..2)
                .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
                .collect::<std::io::Result<_>>()
                .map_err(|e| format!("free port: {e}"))?;
            let ports: Vec<u16> = free
                .iter()
                .map(|l| l.local_addr().map(|a| a.port()))
                .collect::<std::io::Result<_>>()
                .map_err(|e| format!("free port: {e}"))?;
            drop(free);
            extra.extend(qemu::net_args(
                net,
                &format!("tcp:127.0.0.1:{}-:7000 tcp:127.0.0.1:{}-:80", ports[0], ports[1]),
            )?);
            ("127.0.0.1", ports[0], ports[1])
        }
        Netdev::Tap(_) => {
            let model = if net == qemu::Net::E1000 { "e1000" } else { "virtio-net-pci" };
            extra.extend(TapNet::netdev_args(model));
            (addr, 7000, 80)
        }
    };
    let mask = std::net::Ipv4Addr::from(u32::MAX << (32 - prefix_len));
    // busybox httpd serves HTTP_FILE_BYTES of the fixed file beside
    // netecho, stopped when netecho is (nothing may outlive init).
    let cmdline = crate::usertest::shell_cmdline_via(
        &format!("ip={addr}::{gateway}:{mask}::eth0:off"),
        None,
        &format!(
            "mkdir -p /tmp/www; seq 1 300000 | head -c {HTTP_FILE_BYTES} >/tmp/www/numbers; \
             httpd -f -p 80 -h /tmp/www & h=$!; {env}/t/netecho serve 7000; s=$?; kill $h; wait $h; exit $s"
        ),
    )?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd) },
        smp: 1,
        extra,
    };
    let limit = Duration::from_secs(300 + bytes / 400_000);
    let log = build::out_dir().join(format!("{label}.log"));
    let netns = netdev.netns();
    let qemu_ns = netns.clone();
    let qemu_thread = std::thread::spawn(move || qemu::run_captured_in(&boot, limit, &log, qemu_ns.as_deref()));
    let netecho = repo.join("build/user/t/netecho");
    // Bounded: through a tap, a guest that died leaves a connection
    // retransmitting rather than reset (slirp resets it).
    let client_limit = (120 + bytes / 1_000_000).to_string();
    let run_netecho = |args: &[String]| {
        let mut c = match &netns {
            Some(ns) => crate::tapnet::command_in(ns, "timeout"),
            None => std::process::Command::new("timeout"),
        };
        c.args(["-k", "5", &client_limit])
            .arg(&netecho)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("netecho: {e}"))
    };
    let (mut passed, mut failed) = (0u64, 0u64);
    // slirp accepts and drops connections until the guest listens; a tap
    // guest answers nothing until its NIC is up.
    let ready_by = Instant::now() + Duration::from_secs(240);
    let mut ready = false;
    while Instant::now() < ready_by && !qemu_thread.is_finished() {
        let probe = run_netecho(&["send", target, &port.to_string(), "1", "1"].map(String::from));
        if probe.is_ok_and(|o| o.status.success()) {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    tally(
        label,
        "ready",
        if ready { Ok(format!("{target} port {port}")) } else { Err("netecho never answered".into()) },
        &mut passed,
        &mut failed,
    );
    if ready {
        let t = Instant::now();
        let (u, d) = (up.to_string(), down.to_string());
        let out = run_netecho(&["send", target, &port.to_string(), &u, &d].map(String::from));
        let secs = t.elapsed().as_secs_f64();
        let want = format!("up {u} bytes: ok\ndown {d} bytes: ok\nthen end of stream: yes\n");
        let r = match out {
            Ok(o) if String::from_utf8_lossy(&o.stdout) == want => Ok(format!(
                "{u} bytes up and {d} down, checked, in {secs:.1} s ({:.1} MB/s both ways together; {})",
                (up + down) as f64 / 1e6 / secs,
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Ok(o) => Err(String::from_utf8_lossy(&o.stdout).replace('\n', "; ")),
            Err(e) => Err(e),
        };
        tally(label, "netecho", r, &mut passed, &mut failed);
        tally(label, "busybox-httpd", fetch_httpd(netns.as_deref(), target, http_port), &mut passed, &mut failed);
    }
    let _ = run_netecho(&["stop", target, &port.to_string()].map(String::from));
    let run = qemu_thread.join().map_err(|_| "the QEMU thread panicked".to_string())??;
    if net == qemu::Net::Virtio && ready {
        let tap = matches!(netdev, Netdev::Tap(_));
        tally(label, "offloads", virtio_offloads(&run.output, tap), &mut passed, &mut failed);
    }
    let (p, f) = crate::usertest::leak_verdict(label, &run);
    Ok((passed + p, failed + f))
}

/// What the virtio-net driver's boot log says of its offloads, against
/// what the netdev should give: on a tap, QEMU offers checksum and
/// segmentation offload both ways, the echo's guest-to-host stream must
/// have used both and its host-to-guest stream must have come with
/// checksums the device vouched for and as large receives (the driver
/// logs the first frame of each); on slirp it offers none.
fn virtio_offloads(log: &str, tap: bool) -> std::result::Result<String, String> {
    let agreed = log
        .lines()
        .find_map(|l| l.split_once("virtio-net ").and_then(|(_, r)| r.split_once("offloads: ")).map(|(_, o)| o.trim()))
        .ok_or("no `offloads:` in the virtio-net boot line")?;
    let used = |what: &str| log.lines().any(|l| l.contains("virtio-net ") && l.contains(what));
    let (csum, tso) = (used("first frame with its checksum left"), used("first TCP segment cut by the device"));
    let (rx_csum, rx_large) = (used("first received frame with its checksum vouched"), used("first large receive"));
    if !tap {
        return if agreed == "none" && !csum && !tso && !rx_csum && !rx_large {
            Ok("none agreed or used, as slirp offers none".into())
        } else {
            Err(format!(
                "slirp offers no offload, yet: {agreed}; checksum used {csum}, segmentation used {tso}, \
                 received vouched for {rx_csum}, large receives {rx_large}"
            ))
        };
    }
    let want = "tx-checksum tx-tcp-segmentation rx-checksum large-receive";
    if agreed != want {
        return Err(format!("agreed `{agreed}`, wanted `{want}`"));
    }
    match (csum, tso, rx_csum, rx_large) {
        (true, true, true, true) => {
            Ok(format!("{agreed}; checksum and segmentation offload used, checksums vouched for and large receives"))
        }
        _ => Err(format!(
            "agreed `{agreed}` but used: checksum {csum}, segmentation {tso}, received vouched for {rx_csum}, \
             large receives {rx_large}"
        )),
    }
}

/// Bytes of the file busybox httpd serves in [`echo_through`].
const HTTP_FILE_BYTES: usize = 1 << 20;

/// The host's curl fetches busybox httpd's file from the guest
/// (through hostfwd, or inside the tap's namespace), twice: the bytes
/// must be the fixed file's.
fn fetch_httpd(netns: Option<&str>, target: &str, port: u16) -> std::result::Result<String, String> {
    let want = crate::serverstest::fixed_file(HTTP_FILE_BYTES);
    let t = Instant::now();
    for _ in 0..2 {
        let mut c = match netns {
            Some(ns) => crate::tapnet::command_in(ns, "curl"),
            None => std::process::Command::new("curl"),
        };
        let out = c
            .args(["-sSf", "-m", "60", &format!("http://{target}:{port}/numbers")])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("curl: {e} (scripts/deps.sh installs it)"))?;
        if !out.status.success() {
            return Err(format!("curl: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
        }
        if out.stdout != want {
            return Err(format!("{} bytes, not the fixed file's {HTTP_FILE_BYTES}", out.stdout.len()));
        }
    }
    Ok(format!("{HTTP_FILE_BYTES} bytes twice, same; {:.1} s", t.elapsed().as_secs_f64()))
}

/// The script udhcpc runs with the lease: the address and mask by
/// ioctl (busybox ifconfig), a router if the lease names one (slirp's
/// `restrict=on` names none), a line for the log.
const DHCP_SCRIPT: &str = "#!/bin/sh\n[ $1 = bound ] || exit 0\nifconfig $interface $ip netmask $subnet\n\
for r in $router; do route add default gw $r; done\necho lease $ip mask $subnet from $serverid\n";

/// busybox udhcpc on eth0 (no `ip=`: no address) through AF_PACKET
/// sockets gets slirp's lease, which its script applies; the address is
/// then on eth0 and slirp (10.0.2.2, on the link) answers a ping
/// through it.
pub fn udhcpc_lease(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let label = "nic-dhcp";
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let mut extra = vec!["-m".to_string(), "256M".to_string()];
    extra.extend(qemu::net_args(qemu::Net::Virtio, "")?);
    let command = format!(
        "printf '{DHCP_SCRIPT}' > /dhcp.sh; chmod 755 /dhcp.sh; \
         udhcpc -i eth0 -n -q -t 5 -T 2 -s /dhcp.sh; echo udhcpc status $?; \
         ip -4 addr show dev eth0 | grep inet; \
         ping -c 1 -W 5 10.0.2.2 > /dev/null && echo gateway answers"
    );
    let cmdline = crate::usertest::shell_cmdline_via("", None, &command)?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd) },
        smp: 1,
        extra,
    };
    let run = qemu::run_captured(&boot, Duration::from_secs(240), &build::out_dir().join("nic-dhcp.log"))?;
    let (mut passed, mut failed) = (0u64, 0u64);
    let out = &run.output;
    let has = |s: &str| out.lines().any(|l| l.trim_end().contains(s));
    let r = if has("lease 10.0.2.15 mask 255.255.255.0 from 10.0.2.2") && has("udhcpc status 0") {
        Ok("udhcpc took 10.0.2.15/24 from slirp's 10.0.2.2".to_string())
    } else {
        Err("no lease of 10.0.2.15 (see build/nic-dhcp.log)".to_string())
    };
    tally(label, "lease", r, &mut passed, &mut failed);
    let r = if has("inet 10.0.2.15/24 brd 10.0.2.255 scope global eth0") {
        Ok("ip addr: eth0 has 10.0.2.15/24".to_string())
    } else {
        Err("the lease is not on eth0 (see build/nic-dhcp.log)".to_string())
    };
    tally(label, "applied", r, &mut passed, &mut failed);
    let r = if has("gateway answers") { Ok("ping 10.0.2.2".to_string()) } else { Err("no echo reply".to_string()) };
    tally(label, "gateway", r, &mut passed, &mut failed);
    let (p, f) = crate::usertest::leak_verdict(label, &run);
    Ok((passed + p, failed + f))
}

/// The kernel's own DHCP client (`ip=dhcp`, no program): eth0 gets
/// slirp's lease, the listings show it, and slirp answers a ping
/// through it. The shell waits for the address (at most 30 s), so the
/// check does not depend on how fast the lease comes.
pub fn kernel_dhcp(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let label = "nic-ip-dhcp";
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let mut extra = vec!["-m".to_string(), "256M".to_string()];
    extra.extend(qemu::net_args(qemu::Net::Virtio, "")?);
    let command =
        "i=0; while [ $i -lt 30 ] && ! ip -4 addr show dev eth0 | grep -q inet; do sleep 1; i=$((i+1)); done; \
         ip -4 addr show dev eth0 | grep inet; \
         ping -c 1 -W 5 10.0.2.2 > /dev/null && echo gateway answers";
    let cmdline = crate::usertest::shell_cmdline_via("ip=dhcp", None, command)?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd) },
        smp: 1,
        extra,
    };
    let run = qemu::run_captured(&boot, Duration::from_secs(240), &build::out_dir().join("nic-ip-dhcp.log"))?;
    let (mut passed, mut failed) = (0u64, 0u64);
    let out = &run.output;
    let has = |s: &str| out.lines().any(|l| l.trim_end().contains(s));
    let r = if has("net: eth0: DHCP gave 10.0.2.15/24") {
        Ok("the kernel took 10.0.2.15/24 from slirp".to_string())
    } else {
        Err("no lease of 10.0.2.15 in the kernel log (see build/nic-ip-dhcp.log)".to_string())
    };
    tally(label, "lease", r, &mut passed, &mut failed);
    let r = if has("inet 10.0.2.15/24 brd 10.0.2.255 scope global eth0") {
        Ok("ip addr: eth0 has 10.0.2.15/24".to_string())
    } else {
        Err("ip addr does not list the lease (see build/nic-ip-dhcp.log)".to_string())
    };
    tally(label, "listed", r, &mut passed, &mut failed);
    let r = if has("gateway answers") { Ok("ping 10.0.2.2".to_string()) } else { Err("no echo reply".to_string()) };
    tally(label, "gateway", r, &mut passed, &mut failed);
    let (p, f) = crate::usertest::leak_verdict(label, &run);
    Ok((passed + p, failed + f))
}

/// What the wedge run's capture shows: when ARP asked for the dead
/// address, and when the guest echoed a probe onto the wire.
struct WedgeCapture {
    dead_arps: Vec<f64>,
    echoes: Vec<f64>,
}

/// Reads QEMU's filter-dump capture (pcap, Ethernet) of the wedge run.
fn wedge_capture(pcap: &Path, dead: [u8; 4], echo_port: u16) -> Result<WedgeCapture> {
    let d = std::fs::read(pcap).map_err(|e| format!("{}: {e}", pcap.display()))?;
    let mut cap = WedgeCapture { dead_arps: Vec::new(), echoes: Vec::new() };
    let u32le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mut off = 24;
    while off + 16 <= d.len() {
        let (sec, usec, len) = (u32le(&d[off..]), u32le(&d[off + 4..]), u32le(&d[off + 8..]) as usize);
        let Some(f) = d.get(off + 16..off + 16 + len) else { break };
        off += 16 + len;
        let t = sec as f64 + usec as f64 / 1e6;
        if f.len() < 42 {
            continue;
        }
        let guest = f[6..12] == [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        match (f[12], f[13]) {
            // An ARP request (opcode 1) from the guest for the dead address.
            (0x08, 0x06) if guest && f[20..22] == [0, 1] && f[38..42] == dead => cap.dead_arps.push(t),
            // IPv4 UDP from the guest's echo port, carrying a probe.
            (0x08, 0x00) if guest && f[23] == 17 => {
                let ihl = (f[14] & 0xf) as usize * 4;
                let udp = 14 + ihl;
                if f.len() >= udp + 8 + 6
                    && u16::from_be_bytes([f[udp], f[udp + 1]]) == echo_port
                    && f[udp + 8..].starts_with(b"probe ")
                {
                    cap.echoes.push(t);
                }
            }
            _ => {}
        }
    }
    Ok(cap)
}

/// A UDP socket whose first datagram goes to an on-link address nobody
/// answers ARP for (10.0.2.77 on slirp's network) must go on echoing
/// the host's probes to 10.0.2.2 while that neighbour is unresolved (its
/// datagram used to stay at the head of the socket's queue, and the
/// echoes behind it for good), and a socket connected to that address
/// gets EHOSTUNREACH from its next send once ARP gave up, as on Linux.
/// slirp's `restrict=on` drops the guest's UDP, echoes included, so the
/// echoes are seen in QEMU's capture of the link (filter-dump), beside
/// the guest's ARP requests for the dead address.
pub fn udp_wedge(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let label = "nic-udp-wedge";
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let port = free_udp_port()?;
    let (echo_port, stop_port) = (port, port + 1);
    let pcap = build::out_dir().join("nic-udp-wedge.pcap");
    let _ = std::fs::remove_file(&pcap);
    let mut extra = vec!["-m".to_string(), "256M".to_string()];
    let rules = format!("udp:127.0.0.1:{echo_port}-:7001 udp:127.0.0.1:{stop_port}-:7002");
    extra.extend(qemu::net_args(qemu::Net::Virtio, &rules)?);
    extra.extend(["-object".to_string(), format!("filter-dump,id=wedgecap,netdev=n0,file={}", pcap.display())]);
    let cmdline = crate::usertest::shell_cmdline_via(
        "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off",
        None,
        "/t/netpeer wedge 7001 10.0.2.77 & p=$!; /t/netpeer wait 7002; kill $p; wait $p; true",
    )?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd) },
        smp: 1,
        extra,
    };
    let log = build::out_dir().join("nic-udp-wedge.log");
    let _ = std::fs::remove_file(&log);
    let log_for_qemu = log.clone();
    let qemu_thread = std::thread::spawn(move || qemu::run_captured(&boot, Duration::from_secs(240), &log_for_qemu));
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Probes every 200 ms until the guest has reported (bounded by the
    // wait below: at most 900).
    let prober = {
        let (sock, stop) = (sock.try_clone().map_err(|e| format!("{e}"))?, stop.clone());
        std::thread::spawn(move || {
            for n in 0..900u32 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let _ = sock.send_to(format!("probe {n}").as_bytes(), ("127.0.0.1", echo_port));
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let reported = wait_for(
        &log,
        "netpeer: connected send after ARP failed: Host is unreachable",
        Duration::from_secs(180),
        || {},
    );
    // A second more of echoes after the drop.
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = prober.join();
    for _ in 0..10 {
        let _ = sock.send_to(b"stop", ("127.0.0.1", stop_port));
        if qemu_thread.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let run = qemu_thread.join().map_err(|_| "the QEMU thread panicked".to_string())??;
    let (mut passed, mut failed) = (0u64, 0u64);
    let r = match wedge_capture(&pcap, [10, 0, 2, 77], 7001) {
        Ok(c) => match (c.dead_arps.first(), c.dead_arps.last()) {
            (Some(&first), Some(&last)) => {
                let during = c.echoes.iter().filter(|&&t| t > first && t < last).count();
                let after = c.echoes.iter().filter(|&&t| t > last).count();
                if during > 0 && after > 0 {
                    Ok(format!(
                        "{during} probes echoed while 10.0.2.77 went unanswered ({} ARP requests over {:.1} s), {after} after",
                        c.dead_arps.len(),
                        last - first
                    ))
                } else {
                    Err(format!("echoes: {during} while ARP asked for 10.0.2.77, {after} after: the socket is wedged"))
                }
            }
            _ => Err("no ARP request for 10.0.2.77 in the capture (see build/nic-udp-wedge.log)".to_string()),
        },
        Err(e) => Err(e),
    };
    tally(label, "echo", r, &mut passed, &mut failed);
    let r = if reported {
        Ok("EHOSTUNREACH".to_string())
    } else {
        Err("the connected send did not get EHOSTUNREACH (see target/kiln/nic-udp-wedge.log)".to_string())
    };
    tally(label, "connected-error", r, &mut passed, &mut failed);
    let _ = std::fs::remove_file(&pcap);
    let (p, f) = crate::usertest::leak_verdict(label, &run);
    Ok((passed + p, failed + f))
}

/// `make test`'s stage: both NICs from the host, udhcpc's lease, the
/// UDP wedge, keepalive (netkeep.rs), IPv6 on both NICs (netv6.rs),
/// then the segment.
pub fn stage(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let mut totals = (0, 0);
    // NETCHECK=wedge|ipv6|ipv6seg|nic|tap|bulk|dhcp|keepalive: that check alone (work on it).
    match std::env::var("NETCHECK").as_deref() {
        Ok("wedge") => return udp_wedge(repo, elf),
        Ok("keepalive") => return crate::netkeep::keepalive(repo, elf),
        Ok("ipv6") => return crate::netv6::stage(repo, elf),
        Ok("ipv6seg") => return crate::netv6::segment(repo, elf),
        Ok("nic") => {
            let (p, f) = nic_echo(repo, elf, qemu::Net::Virtio, NIC_BYTES)?;
            let (p2, f2) = nic_echo(repo, elf, qemu::Net::E1000, NIC_BYTES)?;
            return Ok((p + p2, f + f2));
        }
        Ok("bulk") => return bulk_send_rings(repo, elf),
        Ok("tap") => return tap_echo(repo, elf, TAP_BYTES),
        Ok("dhcp") => {
            let (p, f) = udhcpc_lease(repo, elf)?;
            let (p2, f2) = kernel_dhcp(repo, elf)?;
            return Ok((p + p2, f + f2));
        }
        _ => {}
    }
    // NETSEG_ONLY=1: the segment run alone (work on the attack).
    let nics: &[qemu::Net] =
        if std::env::var("NETSEG_ONLY").is_ok_and(|v| v == "1") { &[] } else { &[qemu::Net::Virtio, qemu::Net::E1000] };
    for &net in nics {
        let (p, f) = nic_echo(repo, elf, net, NIC_BYTES)?;
        totals = (totals.0 + p, totals.1 + f);
    }
    if !nics.is_empty() {
        // A few seconds: the path `make bench-servers TAP=1` measures.
        let (p, f) = tap_echo(repo, elf, TAP_BYTES)?;
        totals = (totals.0 + p, totals.1 + f);
        let (p, f) = udhcpc_lease(repo, elf)?;
        totals = (totals.0 + p, totals.1 + f);
        let (p, f) = kernel_dhcp(repo, elf)?;
        totals = (totals.0 + p, totals.1 + f);
        let (p, f) = udp_wedge(repo, elf)?;
        totals = (totals.0 + p, totals.1 + f);
        let (p, f) = crate::netkeep::keepalive(repo, elf)?;
        totals = (totals.0 + p, totals.1 + f);
        let (p, f) = crate::netv6::stage(repo, elf)?;
        totals = (totals.0 + p, totals.1 + f);
    }
    let (p, f) = segment(repo, elf, SHORT)?;
    Ok((totals.0 + p, totals.1 + f))
}
