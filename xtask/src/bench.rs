//! `make bench`: Kiln against Linux on the same emulated machine. The C
//! programs in `user/bench` run under Kiln and under Debian's
//! `linux-image-cloud-amd64`, booted by the same QEMU command, first once
//! under `-icount shift=0` (guest time = instructions executed:
//! deterministic, the primary comparison), then `BENCH_RUNS` times (default
//! 5) under plain TCG wall time. Every benchmark runs at `-smp 1`; those in
//! `SMP2_BENCHES` (context switches, forks, parallel scaling) run again at
//! `-smp 2` as rows `NAME@smp2`, in boots of their own under both clocks.
//! The report goes to bench/results/ (latest.md, latest.json, latest.png,
//! history.png) and into docs/performance.md; every full run's JSON is
//! kept as bench/results/history/DATE-COMMIT.json for the trend chart.
//!
//! A benchmark that a kernel cannot run yet is "n/a" with its reason; the
//! others go on. `smoke` runs every benchmark once at a tiny size inside
//! Kiln for `make test`, with no timing checks.
//!
//! Knobs (environment): `BENCH_RUNS=N` wall-clock runs, `BENCH_FILTER=a,b`
//! only benchmarks whose names contain a word, `BENCH_SCALE=PCT` iteration
//! counts in percent of the defaults, `BENCH_TIMEOUT=SECS` per boot,
//! `BENCH_KERNEL=path` a Kiln ELF to measure instead of building one
//! (`BENCH_KERNEL_COMMIT=rev` names the commit it was built from),
//! `BENCH_SECONDARY=0` only the fair machine's columns.

pub mod guest;
mod mymem;
mod net;
mod report;
pub mod storage;

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Duration;

use guest::{Clock, Guest, Kernel, Outcome, RunResult};
use report::Row;

use crate::build;
use crate::Result;

/// One benchmark of `kbench`, in the table's order.
pub struct Bench {
    pub name: &'static str,
    pub group: &'static str,
    /// What one operation is: the unit of the ns/op figures.
    pub op: &'static str,
}

const fn b(group: &'static str, name: &'static str, op: &'static str) -> Bench {
    Bench { name, group, op }
}

/// Must list the same names, in the same order, as `benches[]` in
/// user/bench/kbench.c; `smoke` fails on any name the program does not
/// report.
pub const BENCHES: &[Bench] = &[
    b("syscalls", "getppid", "getppid()"),
    b("syscalls", "read_null", "1-byte read of /dev/null"),
    b("syscalls", "write_null", "1-byte write to /dev/null"),
    b("syscalls", "read_zero", "1-byte read of /dev/zero"),
    b("syscalls", "write_zero", "1-byte write to /dev/zero"),
    b("syscalls", "open_close", "open+close of /b/kbench"),
    b("syscalls", "stat", "stat of /b/kbench"),
    b("syscalls", "openat_deep", "openat+close of /tmp/kbench-d1/d2/d3/file (5 components)"),
    b("vdso", "vdso_clock_gettime", "clock_gettime(CLOCK_MONOTONIC) through the vDSO"),
    b("vdso", "vdso_gettimeofday", "gettimeofday through the vDSO"),
    b("vdso", "vdso_getcpu", "getcpu through the vDSO"),
    b("switching", "pipe_pingpong", "1-byte round trip, 2 processes, 2 pipes"),
    b("switching", "unix_pingpong", "1-byte round trip, 2 processes, AF_UNIX socketpair"),
    b("switching", "futex_pingpong", "round trip between 2 threads via futex (2 switches)"),
    b("switching", "component_invoke", "invocation round trip into another protection domain (Kiln only)"),
    b(
        "switching",
        "component_local_call",
        "plain function call inside a component (Kiln only; baseline of the next row)",
    ),
    b("switching", "component_merged_call", "invocation within one merged domain: a direct call (Kiln only)"),
    b("switching", "component_merge", "merge(client, calc) of two components' domains (Kiln only)"),
    b("switching", "component_split", "split(client) out of a merged domain (Kiln only)"),
    b(
        "switching",
        "component_reboot",
        "a component's fault to its first successful invocation after a micro-reboot (Kiln only)",
    ),
    b("events", "epoll_wait", "epoll_wait(timeout 0) on a ready pipe"),
    b("events", "epoll_pingpong", "1-byte round trip, 2 processes, each in epoll_wait"),
    b("events", "poll_100", "poll(timeout 0) on 100 pipes, the last readable"),
    b("events", "select_100", "select(timeout 0) on 100 pipes, the last readable"),
    b("switching", "signal", "kill(self) + handler + sigreturn"),
    b("memory", "page_fault", "first write to an anonymous page"),
    b("memory", "mmap_munmap", "mmap+munmap of 1 MiB (untouched)"),
    b("memory", "cow_fault", "copy-on-write fault in a forked child"),
    b("memory", "file_fault", "mmap of a 1 MiB tmpfs file + first read of each page (per page)"),
    b("memory", "madv_refault", "madvise(MADV_DONTNEED) of 1 MiB + rewrite (per page)"),
    b("memory", "brk_grow", "brk(+64 KiB) + first write to its 16 pages"),
    b("process", "fork_exit", "fork+exit+wait"),
    b("process", "thread_clone", "pthread_create+join of a thread that returns"),
    b("process", "fork_exec", "fork+execve(static musl)+wait"),
    b("process", "exec_busybox", "fork+execve static busybox `true`+wait"),
    b("process", "sh_true", "fork+execve busybox `sh -c true`+wait"),
    b("bandwidth", "pipe_bw", "64 KiB through a pipe to another process"),
    b("bandwidth", "unix_bw", "64 KiB through an AF_UNIX stream socket to another process"),
    b("bandwidth", "memcpy_bw", "user-space memcpy of 1 MiB (control)"),
    b("files", "tmpfs_file", "create+write 4 KiB+close+unlink in /tmp"),
    b("files", "getdents", "open+getdents64+close of a 1,000-entry dir"),
    b("scaling", "parallel", "getppid() in 2 processes at once (wall time / all calls)"),
    b("network", "tcp_pingpong", "1-byte TCP round trip over 127.0.0.1, 2 processes (TCP_NODELAY)"),
    b("network", "udp_pingpong", "1-byte UDP round trip over 127.0.0.1, 2 processes"),
    b("network", "tcp_bw", "64 KiB writes through a TCP connection over 127.0.0.1 to another process"),
    b("network", "tcp_connect", "connect+accept+close over 127.0.0.1"),
];

/// The benchmarks that run a second time at `-smp 2`: the context
/// switches and forks (a second CPU turns a switch into a cross-CPU
/// wakeup) and the parallel-scaling row. Exact names: they are passed to
/// kbench as its filter.
pub const SMP2_BENCHES: &[&str] =
    &["pipe_pingpong", "futex_pingpong", "epoll_pingpong", "fork_exit", "fork_exec", "parallel"];

/// The CPU counts `make bench` boots with, in order.
pub const SMP_COUNTS: [u32; 2] = [1, 2];

/// One row of the report: a benchmark at a CPU count.
#[derive(Clone, Copy)]
pub struct Entry {
    pub bench: &'static Bench,
    pub smp: u32,
}

impl Entry {
    /// The row's name: the benchmark's, with `@smpN` unless N is 1.
    pub fn label(&self) -> String {
        if self.smp == 1 {
            self.bench.name.to_string()
        } else {
            format!("{}@smp{}", self.bench.name, self.smp)
        }
    }
}

/// The rows for the benchmarks `selected` picks: each at `-smp 1`, and
/// those in `SMP2_BENCHES` at `-smp 2` right after.
fn entries(selected: impl Fn(&str) -> bool) -> Vec<Entry> {
    let mut out = Vec::new();
    for bench in BENCHES.iter().filter(|b| selected(b.name)) {
        for smp in SMP_COUNTS {
            if smp == 1 || SMP2_BENCHES.contains(&bench.name) {
                out.push(Entry { bench, smp });
            }
        }
    }
    out
}

struct Config {
    runs: usize,
    filter: String,
    scale: u32,
    timeout: Duration,
    /// Whether the secondary icount columns (`-cpu max`, Linux's default
    /// mitigations) are measured; `BENCH_SECONDARY=0` skips them.
    secondary: bool,
}

fn env_num(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| format!("{name}={v} is not a number")),
        _ => Ok(default),
    }
}

impl Config {
    fn from_env() -> Result<Config> {
        let filter = std::env::var("BENCH_FILTER").unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(",");
        Ok(Config {
            runs: env_num("BENCH_RUNS", 5)? as usize,
            filter,
            scale: env_num("BENCH_SCALE", 100)? as u32,
            timeout: Duration::from_secs(env_num("BENCH_TIMEOUT", 900)?),
            secondary: env_num("BENCH_SECONDARY", 1)? != 0,
        })
    }

    fn selected(&self, name: &str) -> bool {
        self.filter.is_empty() || self.filter.split(',').any(|w| !w.is_empty() && name.contains(w))
    }

    /// kbench's arguments for a boot at `smp` CPUs: at 1 the user's
    /// filter as it is (kbench matches words the same way); at more, the
    /// exact names of that CPU count's rows.
    fn kbench_args(&self, smp: u32, entries: &[Entry]) -> String {
        let mut a = format!("all {}", self.scale);
        let filter = if smp == 1 {
            self.filter.clone()
        } else {
            entries.iter().filter(|e| e.smp == smp).map(|e| e.bench.name).collect::<Vec<_>>().join(",")
        };
        if !filter.is_empty() {
            a.push(' ');
            a.push_str(&filter);
        }
        a
    }
}

/// `xtask bench`.
/// `xtask bench smoke` runs `smoke` alone against the normal kernel.
pub fn main(args: &[String]) -> Result<ExitCode> {
    if let [one] = args {
        if one == "smoke" {
            let root = build::repo_root();
            let (passed, failed) = smoke(&root, &kiln_kernel()?)?;
            println!("bench smoke: {passed} passed, {failed} failed");
            return Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
        }
    }
    // `xtask bench storage [smoke]`: only the storage rows (virtio-blk,
    // ext4; storage.rs), at BENCH_SCALE percent.
    if args.first().map(String::as_str) == Some("storage") && args.len() <= 2 {
        let root = build::repo_root();
        if args.get(1).map(String::as_str) == Some("smoke") {
            let (passed, failed) = storage::smoke(&root, &kiln_kernel()?)?;
            println!("bench storage smoke: {passed} passed, {failed} failed");
            return Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
        }
        let (kiln, linux) = (kiln_kernel()?, guest::linux_kernel()?);
        let report = storage::measure(&root, &kiln, &linux, env_num("BENCH_SCALE", 100)? as u32)?;
        let (header, commit) = storage_header(&root, &linux);
        let stamp = command_line_output("date", &["-u", "+%Y-%m-%dT%H%M"]);
        storage::write(&root, &report, &header, &stamp, &commit)?;
        return Ok(ExitCode::SUCCESS);
    }
    // `xtask bench mymem [report]`: only the /dev/mymem labs
    // (docs/mymem.md); `report` redraws from the last run's logs.
    if args.first().map(String::as_str) == Some("mymem") && args.len() <= 2 {
        let root = build::repo_root();
        let reuse = args.get(1).map(String::as_str) == Some("report");
        let (kiln, linux) = if reuse { Default::default() } else { (kiln_kernel()?, guest::linux_kernel()?) };
        mymem::run(&root, &kiln, &linux, &mymem_meta(&root), reuse)?;
        return Ok(ExitCode::SUCCESS);
    }
    // `xtask bench nic`: only the through-the-NIC rows (bench/net.rs).
    if args.first().map(String::as_str) == Some("nic") && args.len() == 1 {
        let root = build::repo_root();
        let (kiln, linux) = (kiln_kernel()?, guest::linux_kernel()?);
        let md = net::run(&root, &kiln, &linux, env_num("BENCH_RUNS", 3)? as usize, true)?;
        net::update_doc(&root.join("docs/performance.md"), &md)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.is_empty() {
        return Err(format!("bench: unexpected arguments {args:?} (use BENCH_RUNS, BENCH_FILTER, BENCH_SCALE)"));
    }
    let cfg = Config::from_env()?;
    let root = build::repo_root();
    let out_dir = build::out_dir();
    let kiln_elf = kiln_kernel()?;
    let progs = guest::build_programs(&root)?;
    let initrd = guest::initramfs(&progs, &out_dir)?;
    let linux = guest::linux_kernel()?;
    let entries = entries(|name| cfg.selected(name));
    if entries.is_empty() {
        return Err(format!("BENCH_FILTER={} matches no benchmark", cfg.filter));
    }
    // One guest per CPU count that has rows, on the fair machine.
    let guests: Vec<Guest> = SMP_COUNTS
        .iter()
        .filter(|&&smp| entries.iter().any(|e| e.smp == smp))
        .map(|&smp| Guest {
            kiln_elf: &kiln_elf,
            linux: Some(&linux),
            initrd: &initrd,
            args: cfg.kbench_args(smp, &entries),
            timeout: cfg.timeout,
            smp,
            setup: guest::FAIR,
        })
        .collect();
    let mut rows: Vec<Row> = entries.iter().map(|_| Row::default()).collect();
    let record = |rows: &mut Vec<Row>, g: &Guest, clock: Clock, kernel: Kernel, run: &RunResult| {
        let k = if kernel == Kernel::Kiln { 0 } else { 1 };
        for (e, row) in entries.iter().zip(rows.iter_mut()).filter(|(e, _)| e.smp == g.smp) {
            let cell = match (g.setup, clock) {
                (s, Clock::Wall) if s == guest::FAIR => &mut row.wall[k],
                (s, Clock::Icount) if s == guest::FAIR => &mut row.icount[k],
                (s, Clock::Icount) if s == guest::CPU_MAX => &mut row.icount_cpu_max[k],
                (s, Clock::Icount) if s == guest::LINUX_DEFAULT && k == 1 => &mut row.icount_linux_default,
                _ => continue,
            };
            cell.add(run.results.get(e.bench.name), run.problem.as_deref());
        }
    };
    // Log names: `bench-KERNEL-CLOCK.log` at -smp 1 on the fair machine
    // (as before), with `-smpN` and the other machines' names after the
    // kernel otherwise.
    let log_name = |kernel: Kernel, g: &Guest, rest: &str| {
        let cpus = if g.smp == 1 { String::new() } else { format!("-smp{}", g.smp) };
        let setup = if g.setup == guest::FAIR { String::new() } else { format!("-{}", g.setup.name) };
        out_dir.join(format!("bench-{}{cpus}{setup}-{rest}.log", kernel.name()))
    };
    let tag = |kernel: Kernel, g: &Guest, rest: &str| format!("{} smp{} {} {rest}", kernel.name(), g.smp, g.setup.name);

    // The icount runs are deterministic (at -smp 2 too: QEMU then runs
    // the vCPUs in turn on one host thread), so the two kernels may share
    // the host's CPUs; the wall-clock runs go one at a time, alternating
    // kernels so slow drift on the host touches both alike. The secondary
    // machines (`-cpu max`, Linux's default mitigations) run at -smp 1
    // only, and only under icount.
    let mut icount_guests: Vec<(Guest, bool)> = Vec::new();
    for g in &guests {
        icount_guests.push((Guest { args: g.args.clone(), ..*g }, true));
        if g.smp == 1 && cfg.secondary {
            icount_guests.push((Guest { args: g.args.clone(), setup: guest::CPU_MAX, ..*g }, true));
            icount_guests.push((Guest { args: g.args.clone(), setup: guest::LINUX_DEFAULT, ..*g }, false));
        }
    }
    for (g, with_kiln) in &icount_guests {
        println!("bench: icount runs at -smp {} on -cpu {} (Kiln and Linux side by side)", g.smp, g.setup.cpu);
        let (kiln_ic, linux_ic) = std::thread::scope(|s| {
            let (kt, kl) = (tag(Kernel::Kiln, g, "icount"), log_name(Kernel::Kiln, g, "icount"));
            let k = with_kiln.then(|| s.spawn(move || g.run(Kernel::Kiln, Clock::Icount, &kt, &kl)));
            // At -smp 2 Linux boots with `maxcpus=1` and its init onlines
            // CPU 1 (guest.rs: it hangs bringing it up at boot under icount).
            let l = g.run(
                Kernel::Linux,
                Clock::Icount,
                &tag(Kernel::Linux, g, "icount"),
                &log_name(Kernel::Linux, g, "icount"),
            );
            (k.map(|k| k.join().unwrap_or_else(|_| Err("the Kiln icount run panicked".into()))), l)
        });
        let linux_ic = linux_ic?;
        report_run(Kernel::Linux, g, Clock::Icount, &linux_ic);
        record(&mut rows, g, Clock::Icount, Kernel::Linux, &linux_ic);
        if let Some(kiln_ic) = kiln_ic {
            let kiln_ic = kiln_ic?;
            report_run(Kernel::Kiln, g, Clock::Icount, &kiln_ic);
            record(&mut rows, g, Clock::Icount, Kernel::Kiln, &kiln_ic);
        }
    }
    for i in 1..=cfg.runs {
        for g in &guests {
            for kernel in [Kernel::Kiln, Kernel::Linux] {
                let t = tag(kernel, g, &format!("wall {i}/{}", cfg.runs));
                let run = g.run(kernel, Clock::Wall, &t, &log_name(kernel, g, &format!("wall-{i}")))?;
                report_run(kernel, g, Clock::Wall, &run);
                record(&mut rows, g, Clock::Wall, kernel, &run);
            }
        }
    }

    let meta = report::Meta {
        date: command_line_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        qemu: command_line_output("qemu-system-x86_64", &["--version"]),
        linux: guest::linux_version(&linux),
        kiln_commit: match (std::env::var("BENCH_KERNEL"), std::env::var("BENCH_KERNEL_COMMIT")) {
            (Ok(p), Ok(c)) if !p.trim().is_empty() && !c.trim().is_empty() => c.trim().to_string(),
            (Ok(p), _) if !p.trim().is_empty() => format!("from BENCH_KERNEL={}", p.trim()),
            _ => command_line_output("git", &["-C", &root.to_string_lossy(), "describe", "--always", "--dirty"]),
        },
        wall_runs: cfg.runs,
        scale: cfg.scale,
        filter: cfg.filter.clone(),
    };
    // The storage rows boot with a disk of their own (storage.rs): on a
    // full run, or when the filter names `storage`.
    let storage = if cfg.filter.is_empty() || cfg.selected("storage") {
        let r = storage::measure(&root, &kiln_elf, &linux, cfg.scale)?;
        let (header, commit) = storage_header(&root, &linux);
        let stamp = command_line_output("date", &["-u", "+%Y-%m-%dT%H%M"]);
        storage::write(&root, &r, &header, &stamp, &commit)?;
        Some(r)
    } else {
        None
    };
    let table = report::markdown(&meta, &entries, &rows);
    println!("\n{table}");
    let results = root.join("bench/results");
    std::fs::create_dir_all(&results).map_err(|e| format!("create {}: {e}", results.display()))?;
    let write = |name: &str, text: &str| {
        let p = results.join(name);
        std::fs::write(&p, text).map_err(|e| format!("write {}: {e}", p.display()))
    };
    write("latest.md", &table)?;
    let mut json = report::json(&meta, &entries, &rows);
    if let Some(r) = &storage {
        json = storage::splice_json(&json, &storage::json(r));
    }
    write("latest.json", &json)?;
    // Every full run is kept, named by date and commit, so the chart can
    // show how the ratios moved (a filtered or scaled run is a partial
    // picture and is not kept).
    if cfg.filter.is_empty() && cfg.scale == 100 {
        let stamp = command_line_output("date", &["-u", "+%Y-%m-%dT%H%M"]);
        let name = format!("history/{stamp}-{}.json", meta.kiln_commit.replace(['/', ' ', '='], "_"));
        std::fs::create_dir_all(results.join("history")).map_err(|e| format!("create history: {e}"))?;
        write(&name, &json)?;
        println!("bench: kept this run as bench/results/{name}");
    }
    // A filtered or shortened run is for development: it must not replace
    // the documented table.
    if cfg.filter.is_empty() && cfg.scale == 100 {
        report::update_doc(&root.join("docs/performance.md"), &table)?;
    } else {
        println!("bench: docs/performance.md left alone (BENCH_FILTER or BENCH_SCALE set)");
    }
    match report::chart(&root, &results.join("latest.json"), &results.join("latest.png"), &results.join("history")) {
        Ok(()) => println!("bench: wrote bench/results/latest.{{md,json,png}} and history.png"),
        Err(e) => println!("bench: wrote bench/results/latest.{{md,json}}; no chart: {e}"),
    }
    // The through-the-NIC rows and the /dev/mymem labs, on a full run
    // only; a failure there leaves the main report standing.
    if cfg.filter.is_empty() && cfg.scale == 100 {
        match net::run(&root, &kiln_elf, &linux, cfg.runs.max(1), true) {
            Ok(md) => {
                if let Err(e) = net::update_doc(&root.join("docs/performance.md"), &md) {
                    println!("bench nic: {e}");
                }
            }
            Err(e) => println!("bench nic: {e}"),
        }
        if let Err(e) = mymem::run(&root, &kiln_elf, &linux, &mymem_meta(&root), false) {
            println!("bench mymem: {e}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first line of the storage table (when, on what, which kernels),
/// and Kiln's commit.
fn storage_header(root: &Path, linux: &Path) -> (String, String) {
    let commit = match std::env::var("BENCH_KERNEL_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => command_line_output("git", &["-C", &root.to_string_lossy(), "describe", "--always", "--dirty"]),
    };
    let header = format!(
        "Measured {} on {}, Linux {}, Kiln {commit}",
        command_line_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        command_line_output("qemu-system-x86_64", &["--version"]),
        guest::linux_version(linux),
    );
    (header, commit)
}

/// The first line of the /dev/mymem report: what was measured with what.
fn mymem_meta(root: &Path) -> String {
    format!(
        "{}, QEMU TCG ({}), Kiln {}",
        command_line_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        command_line_output("qemu-system-x86_64", &["--version"]),
        command_line_output("git", &["-C", &root.to_string_lossy(), "describe", "--always", "--dirty"]),
    )
}

/// The Kiln to measure: `BENCH_KERNEL` (an already built ELF, e.g. of
/// another commit) or the working tree's, built now.
fn kiln_kernel() -> Result<std::path::PathBuf> {
    match std::env::var("BENCH_KERNEL") {
        Ok(p) if !p.trim().is_empty() => {
            let p = std::path::PathBuf::from(p.trim());
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!("BENCH_KERNEL={} is not a file", p.display()))
            }
        }
        _ => build::kernel(build::Flavor::Normal),
    }
}

fn report_run(kernel: Kernel, g: &Guest, clock: Clock, run: &RunResult) {
    let ok = run.results.values().filter(|o| matches!(o, Outcome::Ok { .. })).count();
    print!(
        "bench: {} -smp {} -cpu {} {}: {ok} results in {:.0} s",
        kernel.name(),
        g.smp,
        g.setup.cpu,
        clock.name(),
        run.seconds
    );
    match &run.problem {
        Some(p) => println!(" ({p})"),
        None => println!(),
    }
}

/// The first line a command prints, or "unknown" (for the report's header
/// only, so a missing tool is not an error).
fn command_line_output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(|l| l.trim().to_string()))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// For `make test`: every benchmark once at a tiny size inside Kiln. A
/// benchmark passes when it printed a number; no timing is checked.
/// Returns (passed, failed).
pub fn smoke(root: &Path, kernel_elf: &Path) -> Result<(u64, u64)> {
    let out_dir = build::out_dir();
    let progs = guest::build_programs(root)?;
    let initrd = guest::initramfs(&progs, &out_dir)?;
    let guest = Guest {
        kiln_elf: kernel_elf,
        linux: None,
        initrd: &initrd,
        args: "all 0".into(),
        timeout: Duration::from_secs(env_num("BENCH_TIMEOUT", 600)?),
        smp: 1,
        setup: guest::FAIR,
    };
    let run = guest.run(Kernel::Kiln, Clock::Wall, "bench smoke", &out_dir.join("bench-smoke.log"))?;
    let (mut passed, mut failed) = (0, 0);
    for b in BENCHES {
        match run.results.get(b.name) {
            Some(Outcome::Ok { .. }) => {
                passed += 1;
                println!("bench {} ... ok", b.name);
            }
            Some(Outcome::Failed(e)) => {
                failed += 1;
                crate::recap::failure(format!("bench {} ... FAILED ({e})", b.name));
            }
            None => {
                failed += 1;
                crate::recap::failure(format!(
                    "bench {} ... FAILED (no result: {})",
                    b.name,
                    run.problem.as_deref().unwrap_or("not reported")
                ));
            }
        }
    }
    if let Some(p) = &run.problem {
        failed += 1;
        let console = std::fs::read_to_string(out_dir.join("bench-smoke.log")).unwrap_or_default();
        crate::recap::bad_run(&format!("bench smoke run ... FAILED ({p})"), &console);
    }
    // The storage program on a small ext4 disk (correctness only).
    let (p, f) = storage::smoke(root, kernel_elf)?;
    Ok((passed + p, failed + f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smp2_rows_follow_their_smp1_rows() {
        let all = entries(|_| true);
        assert_eq!(all.len(), BENCHES.len() + SMP2_BENCHES.len());
        for name in SMP2_BENCHES {
            let i = all.iter().position(|e| e.bench.name == *name).expect("an SMP2 name is not in BENCHES");
            assert_eq!((all[i].smp, all[i + 1].smp), (1, 2));
            assert_eq!(all[i + 1].label(), format!("{name}@smp2"));
        }
        let cfg = Config {
            runs: 1,
            filter: "pipe,getppid".into(),
            scale: 10,
            timeout: Duration::from_secs(1),
            secondary: true,
        };
        let some = entries(|n| cfg.selected(n));
        let labels: Vec<String> = some.iter().map(Entry::label).collect();
        assert_eq!(labels, ["getppid", "pipe_pingpong", "pipe_pingpong@smp2", "pipe_bw"]);
        assert_eq!(cfg.kbench_args(1, &some), "all 10 pipe,getppid");
        assert_eq!(cfg.kbench_args(2, &some), "all 10 pipe_pingpong");
    }
}
