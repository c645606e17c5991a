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
use std::time::Duration;

use crate::appstest::{run_suite, Suite};
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
fn fixed_file(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut n = 1u64;
    while out.len() < len {
        out.extend_from_slice(format!("{n}\n").as_bytes());
        n += 1;
    }
    out.truncate(len);
    out
}

/// Three free TCP ports on the host's loopback for the hostfwd rules.
fn free_ports() -> Result<[u16; 3]> {
    let listeners: Vec<std::net::TcpListener> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .map_err(|e| format!("pick a free port: {e}"))?;
    let port = |i: usize| listeners[i].local_addr().map(|a| a.port()).map_err(|e| format!("local_addr: {e}"));
    Ok([port(0)?, port(1)?, port(2)?])
}

/// Runs a host client; its stdout, or why it failed.
fn client(program: &str, args: &[String]) -> std::result::Result<String, String> {
    let out = std::process::Command::new(program)
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
/// boots with a virtio NIC on QEMU user networking, three hostfwd rules on
/// free 127.0.0.1 ports reach nginx (80), redis (6379) and netecho (7000)
/// started by `user/debian/servers/nic.sh`; host `curl` checks nginx's
/// bytes, host `redis-cli` round trips and `redis-benchmark -n 1000`
/// runs, and the host's netecho moves `echo_bytes` each way, checked byte
/// by byte. Rates are printed, not judged.
pub fn nic(repo: &Path, elf: &Path, echo_bytes: u64) -> Result<(u64, u64)> {
    use crate::{build, qemu, rootfs};
    let start = std::time::Instant::now();
    let work = repo.join("build/debian-servers");
    let packages: Vec<String> = PACKAGES.iter().map(|s| s.to_string()).collect();
    let archive = rootfs::make_in(&work, &rootfs::dir(repo).join("debs"), &packages)?;
    let t = crate::initramfs::build_user_programs(repo)?;
    let staged = crate::appstest::stage_files(repo, &t, &SERVERS)?;
    let initrd =
        rootfs::initramfs_with(repo, &archive, &build::out_dir().join("initramfs-debian-servers.img"), Some(&staged))?;
    let [http, redis, echo] = free_ports()?;
    let mut extra = vec!["-m".to_string(), SERVERS.memory.to_string()];
    extra.extend(qemu::net_args(
        qemu::Net::Virtio,
        &format!("tcp:127.0.0.1:{http}-:80 tcp:127.0.0.1:{redis}-:6379 tcp:127.0.0.1:{echo}-:7000"),
    )?);
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off init=/bin/sh -- /apps/nic.sh".to_string(),
            initrd: Some(initrd),
        },
        smp: crate::appstest::CPUS,
        extra,
    };
    // Bytes each way at slirp's pace under TCG (a few MB/s at worst) plus
    // the boot.
    let limit = Duration::from_secs(300 + echo_bytes / 500_000);
    let log = build::out_dir().join("debian-servers-nic.log");
    let guest = std::thread::spawn(move || qemu::run_captured(&boot, limit, &log));

    let (mut passed, mut failed) = (0u64, 0u64);
    let base = format!("http://127.0.0.1:{http}");
    // Ready when nginx answers through the forward (slirp accepts and
    // then drops connections until the guest listens).
    let ready_by = std::time::Instant::now() + Duration::from_secs(240);
    let mut ready = false;
    while std::time::Instant::now() < ready_by && !guest.is_finished() {
        let ok = std::process::Command::new("curl")
            .args(["-sf", "-m", "5", "-o", "/dev/null", &format!("{base}/1k.bin")])
            .status()
            .is_ok_and(|s| s.success());
        let pong =
            client("redis-cli", &["-p".into(), redis.to_string(), "ping".into()]).is_ok_and(|o| o.trim() == "PONG");
        if ok && pong {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
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
            client("redis-cli", &a).map(|o| o.trim().to_string())
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
        let bench = client(
            "redis-benchmark",
            &["-p", &redis.to_string(), "-n", "1000", "-c", "10", "-q", "-t", "set,get"].map(String::from),
        )
        .map(|o| {
            let lines: Vec<&str> =
                o.split(['\r', '\n']).map(str::trim).filter(|l| l.contains("requests per second")).collect();
            lines.join("; ")
        });
        verdict("redis-benchmark", bench, &mut passed, &mut failed);
        let netecho = t.join("netecho");
        let n = echo_bytes.to_string();
        let moved = client(
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
    }
    let _ = client(
        t.join("netecho").to_str().unwrap_or("netecho"),
        &["stop", "127.0.0.1", &echo.to_string()].map(String::from),
    );
    let run = guest.join().map_err(|_| "the QEMU thread panicked".to_string())??;
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
