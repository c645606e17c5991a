//! `make bench-servers`: issue 12's application rows, Kiln against
//! Linux. Each kernel boots the servers root (`crate::serverstest`) with a
//! virtio NIC on QEMU user networking, at `-smp 2` with 1 GiB, `nic.sh
//! bench` starting nginx, redis, memcached, iperf3 and netecho; the
//! clients run on the host through hostfwd: wrk (1 and 64 connections,
//! 1 KiB and 64 KiB files), redis-benchmark (plain and `-P 16`), iperf3
//! (each way), memcaslap (Debian's memaslap) and netecho. Linux is
//! Debian's cloud kernel, whose virtio_net is a module (`nic.sh` loads
//! it). Wall clock only: the clients run on the host in real time, so
//! `-icount` would not measure the guest. The rows are kept apart from
//! `make bench`'s (bench/results/servers.md); the figures include slirp,
//! which both kernels share.
//!
//! Not finished: the first run (2026-11-24) exceeded 10 minutes; in Kiln
//! redis-benchmark -c 50 met resets (more simultaneous SYNs than
//! `net::inet::tcp::LISTEN_SLOTS`), and under Linux `insmod virtio_net`
//! failed with an unknown symbol (a dependency besides failover and
//! net_failover is missing; `modinfo -F depends` would say which).

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use crate::serverstest::{self, Guest, Kernel};
use crate::{build, Result};

/// How long each timed client runs.
const SECONDS: &str = "5";

/// One row: name, unit, and the figure per kernel (None: did not run).
struct Row {
    name: &'static str,
    unit: &'static str,
    kiln: Option<f64>,
    linux: Option<f64>,
}

/// The most any one client may take: a server that stops answering
/// costs its row, not the run.
const CLIENT_LIMIT: &str = "60";

/// Runs `program args` (under `timeout`) and returns its stdout (stderr
/// appended), or None.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("timeout")
        .args(["-k", "5", CLIENT_LIMIT, program])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("bench-servers: {program} {}: {}", args.join(" "), out.status);
        return None;
    }
    Some(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The number after `key` on the first line holding it.
fn number_after(text: &str, key: &str) -> Option<f64> {
    let line = text.lines().flat_map(|l| l.split('\r')).find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    // iperf3's JSON separates with a tab and may write an exponent.
    let num: String = rest
        .trim_start_matches(|c: char| c.is_whitespace() || c == ':' || c == '=')
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        .collect();
    num.parse().ok()
}

/// redis-benchmark -q's final figure for `test`: its progress lines
/// (`GET: rps=...`, ended by carriage returns) come first.
fn redis_rate(out: &str, test: &str) -> Option<f64> {
    let key = format!("{}:", test.to_uppercase());
    let line = out.split(['\r', '\n']).find(|l| l.contains(&key) && l.contains("requests per second"))?;
    number_after(line, &key)
}

/// Every figure for one booted kernel, in `ROWS` order.
fn measure(repo: &Path, guest: &Guest) -> Vec<Option<f64>> {
    let p = &guest.ports;
    let url = |f: &str| format!("http://127.0.0.1:{}/{f}", p.http);
    let wrk = |conns: &str, threads: &str, file: &str| {
        output("wrk", &["-t", threads, "-c", conns, "-d", &format!("{SECONDS}s"), &url(file)])
            .and_then(|o| number_after(&o, "Requests/sec"))
    };
    let redis = p.redis.to_string();
    let rb = |extra: &[&str], test: &str| {
        let mut args = vec!["-p", redis.as_str(), "-q", "-c", "50", "-t", test];
        args.extend_from_slice(extra);
        output("redis-benchmark", &args).and_then(|o| redis_rate(&o, test))
    };
    let iperf = p.iperf3.to_string();
    let iperf3 = |reverse: bool| {
        let mut args = vec!["-c", "127.0.0.1", "-p", iperf.as_str(), "-t", SECONDS, "-J"];
        if reverse {
            args.push("-R");
        }
        // The receiver's rate, in Mbit/s.
        output("iperf3", &args).and_then(|o| {
            let end = &o[o.find("\"sum_received\"")?..];
            number_after(end, "\"bits_per_second\"").map(|b| b / 1e6)
        })
    };
    let memcached = format!("127.0.0.1:{}", p.memcached);
    let mcs = || {
        output("memcaslap", &["-s", &memcached, "-t", &format!("{SECONDS}s"), "-T", "2", "-c", "32"])
            .and_then(|o| number_after(&o, "TPS"))
    };
    let netecho = repo.join("build/user/t/netecho");
    let n = (64u64 << 20).to_string();
    let echo = std::cell::OnceCell::new();
    let rate = |key: &str| {
        echo.get_or_init(|| {
            output(netecho.to_str().unwrap_or("netecho"), &["send", "127.0.0.1", &p.echo.to_string(), &n, &n])
        })
        .as_deref()
        .and_then(|o| number_after(o, key))
    };
    // A redis that does not finish the first run within the limit is
    // not asked three more times (each would cost the limit again).
    let get = std::cell::OnceCell::new();
    let get_once = || *get.get_or_init(|| rb(&["-n", "3000"], "get"));
    let redis_rest = |extra: &[&str], test: &str| if get_once().is_some() { rb(extra, test) } else { None };
    let rows: [&dyn Fn() -> Option<f64>; 13] = [
        &|| wrk("1", "1", "1k.bin"),
        &|| wrk("64", "2", "1k.bin"),
        &|| wrk("1", "1", "64k.bin"),
        &|| wrk("64", "2", "64k.bin"),
        &get_once,
        &|| redis_rest(&["-n", "3000"], "set"),
        &|| redis_rest(&["-n", "30000", "-P", "16"], "get"),
        &|| redis_rest(&["-n", "30000", "-P", "16"], "set"),
        &|| iperf3(false),
        &|| iperf3(true),
        &mcs,
        &|| rate("netecho: up"),
        &|| rate(", down"),
    ];
    rows.iter().zip(ROWS).map(|(f, (name, _))| if selected(name) { f() } else { None }).collect()
}

/// `BENCH_SERVERS_ROWS=a,b` runs only the rows whose names contain one
/// of the words (a quicker loop than the whole run); unset, every row.
fn selected(name: &str) -> bool {
    match std::env::var("BENCH_SERVERS_ROWS") {
        Ok(f) if !f.is_empty() => f.split(',').any(|w| name.contains(w.trim())),
        _ => true,
    }
}

/// `BENCH_SERVERS_KERNELS=kiln` (or `linux`) boots only that kernel.
fn kernel_selected(kernel: &str) -> bool {
    match std::env::var("BENCH_SERVERS_KERNELS") {
        Ok(k) if !k.is_empty() => k.contains(kernel),
        _ => true,
    }
}

const ROWS: &[(&str, &str)] = &[
    ("nginx 1 KiB, wrk 1 connection", "requests/s"),
    ("nginx 1 KiB, wrk 64 connections", "requests/s"),
    ("nginx 64 KiB, wrk 1 connection", "requests/s"),
    ("nginx 64 KiB, wrk 64 connections", "requests/s"),
    ("redis GET, 50 clients", "ops/s"),
    ("redis SET, 50 clients", "ops/s"),
    ("redis GET, 50 clients, -P 16", "ops/s"),
    ("redis SET, 50 clients, -P 16", "ops/s"),
    ("iperf3 host -> guest", "Mbit/s"),
    ("iperf3 guest -> host (-R)", "Mbit/s"),
    ("memcached, memcaslap 2 threads x 32", "ops/s"),
    ("netecho 64 MiB host -> guest (checked)", "MB/s"),
    ("netecho 64 MiB guest -> host (checked)", "MB/s"),
];

/// Boots one kernel, measures, stops it.
fn run_kernel(repo: &Path, kernel: Kernel) -> Result<Vec<Option<f64>>> {
    // Boot, readiness and the clients' limits with room to spare: a
    // guest that does not stop is killed rather than waited for.
    let guest = serverstest::boot(repo, kernel, true, Duration::from_secs(480))?;
    if !serverstest::wait_ready(&guest) {
        let _ = serverstest::stop(repo, guest);
        return Err("the servers never answered".into());
    }
    let figures = measure(repo, &guest);
    serverstest::stop(repo, guest)?;
    Ok(figures)
}

fn fmt(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "n/a".into(),
    }
}

pub fn main() -> Result<ExitCode> {
    let repo = build::repo_root();
    let elf = build::kernel(build::Flavor::Normal)?;
    let vmlinuz = crate::bench::guest::linux_kernel()?;
    let skipped = || Err("not selected".into());
    let kiln = if kernel_selected("kiln") { run_kernel(&repo, Kernel::Kiln(&elf)) } else { skipped() };
    let kiln = kiln.unwrap_or_else(|e| {
        eprintln!("bench-servers: Kiln: {e}");
        vec![None; ROWS.len()]
    });
    let linux = if kernel_selected("linux") { run_kernel(&repo, Kernel::Linux(&vmlinuz)) } else { skipped() };
    let linux = linux.unwrap_or_else(|e| {
        eprintln!("bench-servers: Linux: {e}");
        vec![None; ROWS.len()]
    });
    let rows: Vec<Row> = ROWS
        .iter()
        .enumerate()
        .map(|(i, (name, unit))| Row {
            name,
            unit,
            kiln: kiln.get(i).copied().flatten(),
            linux: linux.get(i).copied().flatten(),
        })
        .collect();
    let mut md = format!(
        "Application rows (issue 12), {}: Kiln against Linux {}, each booted by QEMU TCG `-cpu max,-erms,-fsrm -m 1G -smp 2` (Linux with `mitigations=off nokaslr norandmaps`) with a virtio-net NIC on user networking (slirp), clients on the host through hostfwd on 127.0.0.1, {SECONDS} s per timed client; one run each, wall clock. ratio = Kiln / Linux; above 1 = Kiln ahead (all rows are throughputs).\n\n| benchmark | unit | Kiln | Linux | ratio |\n|---|---|---:|---:|---:|\n",
        chrono_free_date(),
        crate::bench::guest::linux_version(&vmlinuz)
    );
    for r in &rows {
        let ratio = match (r.kiln, r.linux) {
            (Some(k), Some(l)) if l > 0.0 => format!("{:.2}", k / l),
            _ => "n/a".into(),
        };
        md.push_str(&format!("| {} | {} | {} | {} | {ratio} |\n", r.name, r.unit, fmt(r.kiln), fmt(r.linux)));
    }
    print!("{md}");
    if !selected("") || !kernel_selected("kiln") || !kernel_selected("linux") {
        println!("(a subset: bench/results/servers.md left as it was)");
        return Ok(ExitCode::SUCCESS);
    }
    let out = repo.join("bench/results/servers.md");
    std::fs::write(&out, &md).map_err(|e| format!("write {}: {e}", out.display()))?;
    println!("written to {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Today's date (UTC) from `date`, to stamp the table.
fn chrono_free_date() -> String {
    output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).map(|s| s.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{number_after, redis_rate};

    #[test]
    fn client_figures() {
        let iperf = "\t\t\"sum_received\":\t{\n\t\t\t\"bits_per_second\":\t9.4017e+08,\n";
        assert_eq!(number_after(iperf, "\"bits_per_second\""), Some(9.4017e8));
        assert_eq!(number_after("Requests/sec:    360.12\n", "Requests/sec"), Some(360.12));
        let redis = "GET: rps=0.0 (overall: nan)\rGET: 1234.56 requests per second, p50=3.1 msec\n";
        assert_eq!(redis_rate(redis, "get"), Some(1234.56));
    }
}
