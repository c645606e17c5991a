//! `make test`'s servers stage: Debian's own servers (nginx, redis,
//! memcached, iperf3), unmodified and with their stock configurations
//! plus a listening port, each driven by Debian's clients and busybox's
//! over 127.0.0.1 inside one machine (`user/debian/servers`). It runs
//! like the Debian-workload stage ([`crate::appstest`]): in Kiln booted
//! with a Debian root that holds the servers, and on the host in the same
//! tree under `chroot`, there in a fresh network namespace (only `lo`,
//! so the stock ports are free) with tmpfs copies of the folders the
//! servers write; each section's output must be identical.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::appstest::{run_suite, Suite};
use crate::tapnet::{self, TapNet};
use crate::Result;

/// The servers and their clients (busybox for `wget` and `nc`, procps
/// for `pgrep`).
pub const PACKAGES: &[&str] =
    &["nginx", "redis-server", "redis-tools", "memcached", "iperf3", "curl", "busybox", "procps"];

/// Sections that cannot pass until a kernel feature lands, with what
/// each waits for (see `appstest::EXPECTED_TO_FAIL`).
const EXPECTED_TO_FAIL: &[(&str, &str)] = &[];

pub const SERVERS: Suite = Suite {
    label: "servers",
    folder: "servers",
    packages: PACKAGES,
    // Boot, unpack and four sections of a few seconds each in Kiln; the
    // bound is for a server that hangs.
    limit: Duration::from_secs(600),
    memory: "1G",
    own_network: true,
    expected_to_fail: EXPECTED_TO_FAIL,
};

/// Bytes each way between the host's netecho and Kiln's in `make test`
/// (`make nettest-long` moves [`LONG_ECHO_BYTES`]).
pub const ECHO_BYTES: u64 = 64 << 20;
/// The figure: 1 GiB each way.
pub const LONG_ECHO_BYTES: u64 = 1 << 30;

/// `make test`'s stage: the loopback sections, then the servers through
/// the NIC; returns (passed, failed).
pub fn stage(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let (p, f) = run(repo, elf, &[])?;
    let (p2, f2) = nic(repo, elf, ECHO_BYTES)?;
    Ok((p + p2, f + f2))
}

/// Runs the loopback sections (every one, or those named in `only`);
/// returns (passed, failed).
pub fn run(repo: &Path, elf: &Path, only: &[String]) -> Result<(u64, u64)> {
    run_suite(repo, elf, only, &SERVERS)
}

/// The bytes of `fixed_file` in `user/debian/servers/common.sh`: the
/// decimal numbers from 1, one a line, cut to `len`.
pub fn fixed_file(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut n = 1u64;
    while out.len() < len {
        out.extend_from_slice(format!("{n}\n").as_bytes());
        n += 1;
    }
    out.truncate(len);
    out
}

/// `n` free TCP ports on the host's loopback for hostfwd rules.
fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .map_err(|e| format!("pick a free port: {e}"))?;
    listeners.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(|e| format!("local_addr: {e}"))).collect()
}

/// The ports the host's clients dial for the guest's servers: free
/// 127.0.0.1 ports forwarded by slirp, or the servers' own under tap.
pub struct Ports {
    pub http: u16,
    pub redis: u16,
    pub echo: u16,
    pub memcached: u16,
    pub iperf3: u16,
}

/// The kernel a servers boot runs.
pub enum Kernel<'a> {
    Kiln(&'a Path),
    /// Debian's cloud kernel (its virtio_net is a module, copied from
    /// /lib/modules into the initramfs).
    Linux(&'a Path),
}

/// How the guest's NIC meets the host's clients.
#[derive(Clone, Copy)]
pub enum Netdev<'a> {
    /// QEMU user networking (slirp): hostfwd rules on free 127.0.0.1
    /// ports, the guest at slirp's 10.0.2.15.
    Slirp,
    /// A tap device in a network namespace the caller made and keeps
    /// until the guest has stopped: QEMU and the clients run inside it,
    /// the guest at [`tapnet::GUEST_ADDR`], the servers on their own ports.
    Tap(&'a TapNet),
}

impl Netdev<'_> {
    /// The guest's address, its gateway and their prefix length.
    pub fn guest_addr(self) -> (&'static str, &'static str, u8) {
        match self {
            Netdev::Slirp => ("10.0.2.15", "10.0.2.2", 24),
            Netdev::Tap(_) => (tapnet::GUEST_ADDR, tapnet::HOST_ADDR, tapnet::PREFIX_LEN),
        }
    }

    /// The namespace QEMU and the clients run in, if any.
    pub fn netns(self) -> Option<String> {
        match self {
            Netdev::Slirp => None,
            Netdev::Tap(net) => Some(net.name().to_string()),
        }
    }
}

/// Where the host's clients find the guest's servers.
pub struct Reach {
    /// The address they dial.
    pub addr: &'static str,
    pub ports: Ports,
    /// The network namespace they run in (tap), or None (slirp).
    pub netns: Option<String>,
}

impl Reach {
    /// `program` as a host client: inside the namespace under tap.
    pub fn command(&self, program: &str) -> Command {
        match &self.netns {
            Some(ns) => tapnet::command_in(ns, program),
            None => Command::new(program),
        }
    }
}

/// A guest running `nic.sh` on its own thread.
pub struct Guest {
    pub reach: Reach,
    pub qemu: std::thread::JoinHandle<Result<crate::qemu::Captured>>,
}

/// Boots `kernel` with the servers root and a virtio NIC on `netdev`
/// (under slirp with hostfwd rules for the servers `nic.sh` starts;
/// `bench`: the fair machine's CPU model and Linux's fair command line).
pub fn boot(repo: &Path, kernel: Kernel, bench: bool, netdev: Netdev, limit: Duration) -> Result<Guest> {
    use crate::{build, qemu, rootfs};
    let work = repo.join("build/debian-servers");
    let packages: Vec<String> = PACKAGES.iter().map(|s| s.to_string()).collect();
    let archive = rootfs::make_in(&work, &rootfs::dir(repo).join("debs"), &packages)?;
    let t = crate::initramfs::build_user_programs(repo)?;
    let staged = crate::appstest::stage_files(repo, &t, &SERVERS)?;
    let (addr, gateway, prefix_len) = netdev.guest_addr();
    let (image, name, cmdline_head) = match kernel {
        Kernel::Kiln(elf) => {
            let mask = std::net::Ipv4Addr::from(u32::MAX << (32 - prefix_len));
            (elf, "kiln", format!("ip={addr}::{gateway}:{mask}::eth0:off init=/bin/sh"))
        }
        Kernel::Linux(vmlinuz) => {
            let modules = staged.join("apps/modules");
            std::fs::create_dir_all(&modules).map_err(|e| format!("create {}: {e}", modules.display()))?;
            let version = crate::bench::guest::linux_version(vmlinuz);
            // virtio_net's dependencies are modules too (modules.dep):
            // the virtio core and its PCI transport, then failover.
            for m in [
                "drivers/virtio/virtio_ring.ko",
                "drivers/virtio/virtio.ko",
                "drivers/virtio/virtio_pci_modern_dev.ko",
                "drivers/virtio/virtio_pci_legacy_dev.ko",
                "drivers/virtio/virtio_pci.ko",
                "net/core/failover.ko",
                "drivers/net/net_failover.ko",
                "drivers/net/virtio_net.ko",
            ] {
                let from = Path::new("/lib/modules").join(&version).join("kernel").join(m);
                let to = modules.join(from.file_name().unwrap_or_default());
                std::fs::copy(&from, &to).map_err(|e| format!("copy {}: {e}", from.display()))?;
            }
            // Measured against Kiln, Linux runs as the benchmarks' fair
            // machine boots it: no mitigations (Kiln has none), fixed layouts.
            let fair = if bench { crate::bench::guest::FAIR.linux_cmdline } else { "" };
            (vmlinuz, "linux", format!("console=ttyS0 quiet panic=-1 {fair} rdinit=/bin/sh"))
        }
    };
    let initrd = rootfs::initramfs_with(
        repo,
        &archive,
        &build::out_dir().join(format!("initramfs-debian-servers-{name}.img")),
        Some(&staged),
    )?;
    let (reach, net_args) = match netdev {
        Netdev::Slirp => {
            let p = free_ports(5)?;
            let ports = Ports { http: p[0], redis: p[1], echo: p[2], memcached: p[3], iperf3: p[4] };
            let rules = format!(
                "tcp:127.0.0.1:{}-:80 tcp:127.0.0.1:{}-:6379 tcp:127.0.0.1:{}-:7000 \
                 tcp:127.0.0.1:{}-:11211 tcp:127.0.0.1:{}-:5201",
                ports.http, ports.redis, ports.echo, ports.memcached, ports.iperf3
            );
            (Reach { addr: "127.0.0.1", ports, netns: None }, qemu::net_args(qemu::Net::Virtio, &rules)?)
        }
        Netdev::Tap(_) => {
            let ports = Ports { http: 80, redis: 6379, echo: 7000, memcached: 11211, iperf3: 5201 };
            (Reach { addr, ports, netns: netdev.netns() }, TapNet::netdev_args("virtio-net-pci"))
        }
    };
    let mut extra = vec!["-m".to_string(), SERVERS.memory.to_string()];
    if bench {
        // The fair CPU model (no ERMS/FSRM, so both kernels copy with
        // `rep movsq`); QEMU takes the last -cpu given.
        extra.extend(["-cpu".to_string(), crate::bench::guest::FAIR.cpu.to_string()]);
    }
    extra.extend(net_args);
    // QEMU_EXTRA: e.g. a monitor socket and `-D` for an instruction
    // profile of a row (docs/networking.md, Profiling the servers).
    extra.extend(qemu::env_extra());
    // nic.sh's arguments: the mode, and the address Linux's half gives
    // eth0 (Kiln's comes from `ip=`).
    let mode = if bench { "bench" } else { "test" };
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: image.to_path_buf(),
            cmdline: format!("{cmdline_head} -- /apps/nic.sh {mode} {addr}/{prefix_len}"),
            initrd: Some(initrd),
        },
        smp: crate::appstest::CPUS,
        extra,
    };
    let log = build::out_dir().join(format!("debian-servers-nic-{name}.log"));
    let netns = reach.netns.clone();
    let qemu = std::thread::spawn(move || qemu::run_captured_in(&boot, limit, &log, netns.as_deref()));
    Ok(Guest { reach, qemu })
}

/// Waits (at most 240 s) until nginx and redis answer: slirp accepts
/// and then drops connections until the guest listens, a tap guest is
/// not there until its NIC is up.
pub fn wait_ready(guest: &Guest) -> bool {
    let reach = &guest.reach;
    let ready_by = std::time::Instant::now() + Duration::from_secs(240);
    while std::time::Instant::now() < ready_by && !guest.qemu.is_finished() {
        let ok = reach
            .command("curl")
            .args(["-sf", "-m", "5", "-o", "/dev/null", &format!("http://{}:{}/1k.bin", reach.addr, reach.ports.http)])
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let pong = client(
            reach,
            "timeout",
            &["10", "redis-cli", "-h", reach.addr, "-p", &reach.ports.redis.to_string(), "ping"].map(String::from),
        )
        .is_ok_and(|o| o.trim() == "PONG");
        if ok && pong {
            return true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}

/// Asks `nic.sh` to stop (netecho's stop) and waits for QEMU.
pub fn stop(repo: &Path, guest: Guest) -> Result<crate::qemu::Captured> {
    let netecho = repo.join("build/user/t/netecho");
    let _ = client(
        &guest.reach,
        netecho.to_str().unwrap_or("netecho"),
        &["stop", guest.reach.addr, &guest.reach.ports.echo.to_string()].map(String::from),
    );
    guest.qemu.join().map_err(|_| "the QEMU thread panicked".to_string())?
}

/// Runs a host client where `reach` says; its stdout, or why it failed.
fn client(reach: &Reach, program: &str, args: &[String]) -> std::result::Result<String, String> {
    let out = reach
        .command(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e} (scripts/deps.sh installs the host clients)"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        println!("    {program}: {}", stderr.trim());
    }
    if !out.status.success() {
        return Err(format!("{program} {}: {}", args.join(" "), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Bytes each iperf3 run moves in `make test` (`-n`).
const IPERF3_BYTES: u64 = 16 << 20;

/// Debian's iperf3 client on the host against iperf3 -s in the guest,
/// [`IPERF3_BYTES`] one way (the host sending, or with `-R` the guest):
/// it must exit 0 and its JSON say the sender sent at least that many
/// bytes and the receiver got some (the exact totals move with timing,
/// on Linux too). The rate is printed, not judged.
fn iperf3_bounded(reach: &Reach, reverse: bool) -> std::result::Result<String, String> {
    let port = reach.ports.iperf3.to_string();
    let n = IPERF3_BYTES.to_string();
    let mut args = vec!["-c", reach.addr, "-p", &port, "-n", &n, "-J"];
    if reverse {
        args.push("-R");
    }
    let (out, refused) = iperf3_client(reach, &args, Duration::from_secs(120))?;
    let json = String::from_utf8_lossy(&out.stdout);
    let after = |section: &str, key: &str| {
        json.find(section).and_then(|at| crate::benchservers::number_after(&json[at..], key))
    };
    if let Some(at) = json.find("\"error\"") {
        return Err(json[at..(at + 200).min(json.len())].replace('\n', " "));
    }
    if !out.status.success() {
        return Err(format!(
            "iperf3 {}: {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let sent = after("\"sum_sent\"", "\"bytes\"").unwrap_or(0.0);
    let received = after("\"sum_received\"", "\"bytes\"").unwrap_or(0.0);
    let rate = after("\"sum_received\"", "\"bits_per_second\"").unwrap_or(0.0);
    if sent >= IPERF3_BYTES as f64 && received > 0.0 {
        Ok(format!(
            "sent {sent:.0} bytes, received {received:.0}; {:.0} Mbit/s; {refused} tries refused between tests",
            rate / 1e6
        ))
    } else {
        Err(format!("sent {sent:.0} bytes, received {received:.0}"))
    }
}

/// Runs the host's `iperf3 args` (under `timeout`, where `reach` says)
/// and returns its output and how many earlier tries found no server.
///
/// iperf3 -s serves one test at a time and closes its listening socket
/// between tests (Linux's too: "Server listening on 5201 (test #N)" is
/// printed as it listens again), so a client that follows another at
/// once can meet no listener: refused under a tap, and under slirp,
/// which accepted on the host before dialling the guest, a reset before
/// the first control message (the `-R` runs that "gave no figure").
/// Such a run, where the server never began a test, is tried again,
/// at most ten times a quarter second apart.
pub fn iperf3_client(
    reach: &Reach,
    args: &[&str],
    limit: Duration,
) -> std::result::Result<(std::process::Output, u32), String> {
    let mut refused = 0;
    loop {
        let out = reach
            .command("timeout")
            .args(["-k", "5", &limit.as_secs().to_string(), "iperf3"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("iperf3: {e} (scripts/deps.sh installs it)"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let no_server = text.contains("\"connected\":\t[]")
            && (text.contains("unable to receive control message: Connection reset by peer")
                || text.contains("unable to connect to server: Connection refused"));
        if !no_server || refused == 10 {
            return Ok((out, refused));
        }
        refused += 1;
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// memcached's text protocol from the host through hostfwd: a small
/// value and a 64 KiB one set and read back, an incr, a missing key;
/// every reply checked.
fn memcached_set_get(port: u16) -> std::result::Result<String, String> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    conn.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| format!("timeout: {e}"))?;
    let big = fixed_file(65536);
    let mut request = b"set greeting 5 0 19\r\nhello from the host\r\nget greeting\r\n".to_vec();
    request.extend_from_slice(b"set big 0 0 65536\r\n");
    request.extend_from_slice(&big);
    request.extend_from_slice(b"\r\nget big\r\nset n 0 0 1\r\n7\r\nincr n 35\r\nget missing\r\nquit\r\n");
    conn.write_all(&request).map_err(|e| format!("send: {e}"))?;
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).map_err(|e| format!("receive: {e}"))?;
    let mut want = b"STORED\r\nVALUE greeting 5 19\r\nhello from the host\r\nEND\r\n".to_vec();
    want.extend_from_slice(b"STORED\r\nVALUE big 0 65536\r\n");
    want.extend_from_slice(&big);
    want.extend_from_slice(b"\r\nEND\r\nSTORED\r\n42\r\nEND\r\n");
    if reply == want {
        Ok(format!("{} bytes of replies, as expected", reply.len()))
    } else {
        let at = reply.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(reply.len().min(want.len()));
        Err(format!(
            "{} bytes of replies (want {}), first difference at {at}: {:?}",
            reply.len(),
            want.len(),
            String::from_utf8_lossy(&reply[at..(at + 40).min(reply.len())])
        ))
    }
}

/// Tallies a check's verdict.
fn verdict(name: &str, result: std::result::Result<String, String>, passed: &mut u64, failed: &mut u64) {
    match result {
        Ok(text) => {
            *passed += 1;
            println!("servers-nic {name} ... ok ({text})");
        }
        Err(why) => {
            *failed += 1;
            crate::recap::failure(format!("servers-nic {name} ... FAILED ({why})"));
        }
    }
}

/// Servers in Kiln answering clients on the host through the NIC: Kiln
/// boots with a virtio NIC on QEMU user networking, hostfwd rules on free
/// 127.0.0.1 ports reach nginx (80), redis (6379), netecho (7000),
/// memcached (11211) and iperf3 -s (5201) started by
/// `user/debian/servers/nic.sh`; host `curl` checks nginx's
/// bytes, host `redis-cli` round trips and `redis-benchmark -n 1000`
/// runs, and the host's netecho moves `echo_bytes` each way, checked byte
/// by byte; host iperf3 runs 16 MiB each way (`-n`, then `-R`) against
/// iperf3 -s and memcached's replies to set/get are checked. Rates are
/// printed, not judged.
pub fn nic(repo: &Path, elf: &Path, echo_bytes: u64) -> Result<(u64, u64)> {
    let start = std::time::Instant::now();
    // Bytes each way at slirp's pace under TCG (a few MB/s at worst) plus
    // the boot.
    let limit = Duration::from_secs(300 + echo_bytes / 500_000);
    let guest = boot(repo, Kernel::Kiln(elf), false, Netdev::Slirp, limit)?;
    let reach = &guest.reach;
    let (http, redis, echo) = (reach.ports.http, reach.ports.redis, reach.ports.echo);
    let (mut passed, mut failed) = (0u64, 0u64);
    let base = format!("http://127.0.0.1:{http}");
    let ready = wait_ready(&guest);
    verdict(
        "ready",
        if ready { Ok(format!("ports {http}, {redis}, {echo}")) } else { Err("nginx and redis never answered".into()) },
        &mut passed,
        &mut failed,
    );
    if ready {
        for (file, len) in [("1k.bin", 1024usize), ("64k.bin", 65536), ("1m.bin", 1 << 20)] {
            let got = std::process::Command::new("curl")
                .args(["-sf", "-m", "60", &format!("{base}/{file}")])
                .output()
                .map_err(|e| format!("curl: {e}"));
            let result = got.and_then(|o| {
                if !o.status.success() {
                    Err(format!("curl: {}", o.status))
                } else if o.stdout == fixed_file(len) {
                    Ok(format!("{len} bytes, same"))
                } else {
                    Err(format!("{} bytes, not the file's {len}", o.stdout.len()))
                }
            });
            verdict(&format!("nginx-{file}"), result, &mut passed, &mut failed);
        }
        let cli = |args: &[&str]| {
            let mut a = vec!["-p".to_string(), redis.to_string()];
            a.extend(args.iter().map(|s| s.to_string()));
            client(reach, "redis-cli", &a).map(|o| o.trim().to_string())
        };
        let round_trip = cli(&["set", "greeting", "hello from the host"]).and_then(|set| {
            let get = cli(&["get", "greeting"])?;
            if set == "OK" && get == "hello from the host" {
                Ok("SET OK, GET same".to_string())
            } else {
                Err(format!("SET {set:?}, GET {get:?}"))
            }
        });
        verdict("redis-set-get", round_trip, &mut passed, &mut failed);
        let bench_once = || {
            client(
                reach,
                "redis-benchmark",
                &["-p", &redis.to_string(), "-n", "1000", "-c", "10", "-q", "-t", "set,get"].map(String::from),
            )
            .map(|o| {
                let lines: Vec<&str> =
                    o.split(['\r', '\n']).map(str::trim).filter(|l| l.contains("requests per second")).collect();
                lines.join("; ")
            })
        };
        let bench = bench_once();
        verdict("redis-benchmark", bench, &mut passed, &mut failed);
        let netecho = repo.join("build/user/t/netecho");
        let n = echo_bytes.to_string();
        let moved = client(
            reach,
            netecho.to_str().unwrap_or("netecho"),
            &["send", "127.0.0.1", &echo.to_string(), &n, &n].map(String::from),
        )
        .and_then(|o| {
            let want = format!("up {n} bytes: ok\ndown {n} bytes: ok\nthen end of stream: yes\n");
            if o == want {
                Ok(format!("{n} bytes each way, checked"))
            } else {
                Err(o.replace('\n', "; "))
            }
        });
        verdict("netecho", moved, &mut passed, &mut failed);
        for reverse in [false, true] {
            let name = if reverse { "iperf3-reverse" } else { "iperf3" };
            verdict(name, iperf3_bounded(reach, reverse), &mut passed, &mut failed);
        }
        verdict("memcached-set-get", memcached_set_get(reach.ports.memcached), &mut passed, &mut failed);
    }
    let run = stop(repo, guest)?;
    let stopped = run.output.contains("servers stopped");
    verdict(
        "guest-stopped",
        if stopped {
            Ok("nginx, redis and netecho exited".into())
        } else {
            Err("no `servers stopped` from nic.sh".into())
        },
        &mut passed,
        &mut failed,
    );
    let (p, f) = crate::usertest::leak_verdict("servers-nic", &run);
    passed += p;
    failed += f;
    println!("servers-nic: {passed} passed, {failed} failed; {:.0} s", start.elapsed().as_secs_f64());
    Ok((passed, failed))
}
