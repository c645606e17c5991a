//! `make bench-servers`: issue 12's application rows, Kiln against
//! Linux. Each kernel boots the servers root (`crate::serverstest`) with a
//! virtio NIC at `-smp 2` with 1 GiB, `nic.sh bench` starting nginx,
//! redis, memcached, iperf3 and netecho. The NIC is on QEMU user
//! networking (slirp, clients through hostfwd on 127.0.0.1) or, with
//! `tap` (`TAP=1`), on a tap device in a network namespace the run makes
//! and removes ([`crate::tapnet`]; QEMU and the clients run inside it),
//! which takes slirp out of the figures; `both` measures each, one table
//! per backend in the results file. The clients: wrk (1 and 64 connections,
//! 1 KiB and 64 KiB files), redis-benchmark (plain and `-P 16`), iperf3
//! (each way), memcaslap (Debian's memaslap) and netecho. Linux is
//! Debian's cloud kernel, whose virtio_net is a module (`nic.sh` loads
//! it). Wall clock only: the clients run on the host in real time, so
//! `-icount` would not measure the guest. The rows are kept apart from
//! `make bench`'s (bench/results/servers.md); under slirp the figures
//! include slirp's own cost, which both kernels share.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use crate::serverstest::{self, Guest, Kernel, Netdev, Reach};
use crate::tapnet::{self, TapNet};
use crate::{build, Result};

/// The NIC backend a table is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// QEMU user networking, clients through hostfwd.
    Slirp,
    /// A tap device in a network namespace of the run's own.
    Tap,
}

impl Backend {
    /// The results file's section heading for this backend's table.
    fn heading(self) -> &'static str {
        match self {
            Backend::Slirp => "## NIC on QEMU user networking (slirp)",
            Backend::Tap => "## NIC on a tap device in a network namespace",
        }
    }

    /// How the clients reach the guest, for the table's method line.
    fn method(self) -> String {
        match self {
            Backend::Slirp => "a virtio-net NIC on user networking (slirp), clients on the host through hostfwd on 127.0.0.1".into(),
            Backend::Tap => format!(
                "a virtio-net NIC on a tap device (`-netdev tap`, no vhost) in a network namespace the run creates and removes, guest {} and host end {}/{}, QEMU and the clients running inside the namespace",
                tapnet::GUEST_ADDR,
                tapnet::HOST_ADDR,
                tapnet::PREFIX_LEN
            ),
        }
    }
}

/// The backends `args` ask for: `slirp` (the default), `tap` or `both`.
fn backends(args: &[String]) -> Result<Vec<Backend>> {
    match args {
        [] => Ok(vec![Backend::Slirp]),
        [one] => match one.as_str() {
            "slirp" => Ok(vec![Backend::Slirp]),
            "tap" => Ok(vec![Backend::Tap]),
            "both" => Ok(vec![Backend::Slirp, Backend::Tap]),
            other => Err(format!("bench-servers {other}: expected slirp, tap or both")),
        },
        _ => Err(format!("bench-servers {}: one of slirp, tap or both", args.join(" "))),
    }
}

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

/// Runs `program args` (under `timeout`, where `reach` says) and returns
/// its stdout (stderr appended), or None.
fn output(reach: &Reach, program: &str, args: &[&str]) -> Option<String> {
    let out = reach
        .command("timeout")
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
pub fn number_after(text: &str, key: &str) -> Option<f64> {
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
    let reach = &guest.reach;
    let (p, addr) = (&reach.ports, reach.addr);
    let url = |f: &str| format!("http://{addr}:{}/{f}", p.http);
    let wrk = |conns: &str, threads: &str, file: &str| {
        output(reach, "wrk", &["-t", threads, "-c", conns, "-d", &format!("{SECONDS}s"), &url(file)])
            .and_then(|o| number_after(&o, "Requests/sec"))
    };
    let redis = p.redis.to_string();
    let rb = |extra: &[&str], test: &str| {
        let mut args = vec!["-h", addr, "-p", redis.as_str(), "-q", "-c", "50", "-t", test];
        args.extend_from_slice(extra);
        output(reach, "redis-benchmark", &args).and_then(|o| redis_rate(&o, test))
    };
    let iperf = p.iperf3.to_string();
    let iperf3 = |reverse: bool| {
        let mut args = vec!["-c", addr, "-p", iperf.as_str(), "-t", SECONDS, "-J"];
        if reverse {
            args.push("-R");
        }
        // The receiver's rate, in Mbit/s. Tried again while iperf3 -s is
        // between tests (see serverstest::iperf3_client).
        let limit = Duration::from_secs(CLIENT_LIMIT.parse().unwrap_or(120));
        let run = crate::serverstest::iperf3_client(reach, &args, limit);
        let out = match run {
            Ok((o, _)) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
            Ok((o, _)) => {
                eprintln!("bench-servers: iperf3 {}: {}", args.join(" "), o.status);
                // Its JSON says why.
                Some(String::from_utf8_lossy(&o.stdout).into_owned())
            }
            Err(e) => {
                eprintln!("bench-servers: {e}");
                None
            }
        };
        out.and_then(|o| {
            let rate = o.find("\"sum_received\"").and_then(|at| number_after(&o[at..], "\"bits_per_second\""));
            if rate.is_none() {
                // A run that ended early says why in its JSON ("error").
                let why = o.find("\"error\"").map_or("no sum_received", |at| &o[at..(at + 200).min(o.len())]);
                eprintln!("bench-servers: iperf3 {}: {why}", args.join(" "));
            }
            rate.map(|b| b / 1e6)
        })
    };
    let memcached = format!("{addr}:{}", p.memcached);
    let mcs = || {
        output(reach, "memcaslap", &["-s", &memcached, "-t", &format!("{SECONDS}s"), "-T", "2", "-c", "32"])
            .and_then(|o| number_after(&o, "TPS"))
    };
    let netecho = repo.join("build/user/t/netecho");
    let n = (64u64 << 20).to_string();
    let echo = std::cell::OnceCell::new();
    let rate = |key: &str| {
        echo.get_or_init(|| {
            output(reach, netecho.to_str().unwrap_or("netecho"), &["send", addr, &p.echo.to_string(), &n, &n])
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

/// Boots one kernel on `backend`, measures, stops it.
fn run_kernel(repo: &Path, kernel: Kernel, backend: Backend) -> Result<Vec<Option<f64>>> {
    // A fresh namespace per boot (no ARP or socket state carried from
    // the other kernel's run); the guard outlives the guest.
    let tap = match backend {
        Backend::Slirp => None,
        Backend::Tap => Some(TapNet::create()?),
    };
    let netdev = match &tap {
        Some(net) => Netdev::Tap(net),
        None => Netdev::Slirp,
    };
    // Boot, readiness and the clients' limits with room to spare: a
    // guest that does not stop is killed rather than waited for.
    let guest = serverstest::boot(repo, kernel, true, netdev, Duration::from_secs(480))?;
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

pub fn main(args: &[String]) -> Result<ExitCode> {
    let backends = backends(args)?;
    let repo = build::repo_root();
    // BENCH_SERVERS_KILN_ELF: a kernel built earlier (a before/after
    // comparison measures both back to back without rebuilding).
    let elf = match std::env::var_os("BENCH_SERVERS_KILN_ELF") {
        Some(p) => std::path::PathBuf::from(p),
        None => build::kernel(build::Flavor::Normal)?,
    };
    let vmlinuz = crate::bench::guest::linux_kernel()?;
    let out = repo.join("bench/results/servers.md");
    for backend in backends {
        let started = std::time::Instant::now();
        let load = host_load();
        let measured = |name: &str, kernel: Kernel| {
            let run = if kernel_selected(&name.to_lowercase()) {
                run_kernel(&repo, kernel, backend)
            } else {
                Err("not selected".into())
            };
            run.unwrap_or_else(|e| {
                eprintln!("bench-servers: {name} on {backend:?}: {e}");
                vec![None; ROWS.len()]
            })
        };
        let kiln = measured("Kiln", Kernel::Kiln(&elf));
        let linux = measured("Linux", Kernel::Linux(&vmlinuz));
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
            "Application rows (issue 12), {}, kernel {}: Kiln against Linux {}, each booted by QEMU TCG `-cpu max,-erms,-fsrm -m 1G -smp 2` (Linux with `mitigations=off nokaslr norandmaps`) with {}, {SECONDS} s per timed client; one run each, wall clock; host load average {load} at the start, both kernels measured in {:.0} s. ratio = Kiln / Linux; above 1 = Kiln ahead (all rows are throughputs).\n\n| benchmark | unit | Kiln | Linux | ratio |\n|---|---|---:|---:|---:|\n",
            chrono_free_date(),
            commit(&repo),
            crate::bench::guest::linux_version(&vmlinuz),
            backend.method(),
            started.elapsed().as_secs_f64()
        );
        for r in &rows {
            let ratio = match (r.kiln, r.linux) {
                (Some(k), Some(l)) if l > 0.0 => format!("{:.2}", k / l),
                _ => "n/a".into(),
            };
            md.push_str(&format!("| {} | {} | {} | {} | {ratio} |\n", r.name, r.unit, fmt(r.kiln), fmt(r.linux)));
        }
        println!("{}\n\n{md}", backend.heading());
        if !selected("") || !kernel_selected("kiln") || !kernel_selected("linux") {
            println!("(a subset: bench/results/servers.md left as it was)");
            continue;
        }
        let old = std::fs::read_to_string(&out).unwrap_or_default();
        let merged = with_section(&old, backend.heading(), &md);
        std::fs::write(&out, merged).map_err(|e| format!("write {}: {e}", out.display()))?;
        println!("written to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The results file's title line.
const TITLE: &str = "# make bench-servers";

/// `file` with the section under `heading` replaced by `body` (or added
/// after the others), the other backend's table kept. A file without
/// the title (the one-table format) is started afresh.
fn with_section(file: &str, heading: &str, body: &str) -> String {
    let mut sections: Vec<(String, String)> = Vec::new();
    if file.starts_with(TITLE) {
        for part in file.split("\n## ").skip(1) {
            let (head, text) = part.split_once('\n').unwrap_or((part, ""));
            sections.push((format!("## {head}"), text.trim().to_string()));
        }
    }
    match sections.iter_mut().find(|(h, _)| h == heading) {
        Some(s) => s.1 = body.trim().to_string(),
        None => sections.push((heading.to_string(), body.trim().to_string())),
    }
    // slirp's table first, whichever was measured last.
    sections.sort_by_key(|(h, _)| h != Backend::Slirp.heading());
    let mut out = format!("{TITLE}\n");
    for (head, text) in sections {
        out.push_str(&format!("\n{head}\n\n{text}\n"));
    }
    out
}

/// The load average over the last minute, from /proc/loadavg.
fn host_load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "unknown".into())
}

/// The commit measured (short hash, `+changes` when the tree differs).
fn commit(repo: &Path) -> String {
    let git = |args: &[&str]| Command::new("git").arg("-C").arg(repo).args(args).stdin(Stdio::null()).output().ok();
    let hash = git(&["rev-parse", "--short", "HEAD"])
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|o| !o.stdout.is_empty());
    if dirty {
        format!("{hash}+changes")
    } else {
        hash
    }
}

/// Today's date (UTC) from `date`, to stamp the table.
fn chrono_free_date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{backends, number_after, redis_rate, with_section, Backend, TITLE};

    #[test]
    fn client_figures() {
        let iperf = "\t\t\"sum_received\":\t{\n\t\t\t\"bits_per_second\":\t9.4017e+08,\n";
        assert_eq!(number_after(iperf, "\"bits_per_second\""), Some(9.4017e8));
        assert_eq!(number_after("Requests/sec:    360.12\n", "Requests/sec"), Some(360.12));
        let redis = "GET: rps=0.0 (overall: nan)\rGET: 1234.56 requests per second, p50=3.1 msec\n";
        assert_eq!(redis_rate(redis, "get"), Some(1234.56));
    }

    #[test]
    fn one_table_per_backend() {
        let slirp = Backend::Slirp.heading();
        let tap = Backend::Tap.heading();
        let first = with_section("old one-table file\n", slirp, "slirp v1\n");
        assert_eq!(first, format!("{TITLE}\n\n{slirp}\n\nslirp v1\n"));
        let tap_only = with_section("", tap, "tap v1\n");
        let both = with_section(&tap_only, slirp, "slirp v1\n");
        assert_eq!(both, format!("{TITLE}\n\n{slirp}\n\nslirp v1\n\n{tap}\n\ntap v1\n"));
        let again = with_section(&both, slirp, "slirp v2\n");
        assert_eq!(again, format!("{TITLE}\n\n{slirp}\n\nslirp v2\n\n{tap}\n\ntap v1\n"));
    }

    #[test]
    fn backend_arguments() {
        assert_eq!(backends(&[]), Ok(vec![Backend::Slirp]));
        assert_eq!(backends(&["both".to_string()]), Ok(vec![Backend::Slirp, Backend::Tap]));
        assert!(backends(&["wifi".to_string()]).is_err());
    }
}
