//! `xtask test`: every test stage in order, with one total at the end.
//!
//! A stage that cannot even start (a build error, QEMU missing) counts as
//! a failure and the remaining stages still run, so one run shows every
//! problem. The closing `N passed, N failed` line is the CI's verdict, so
//! it is printed last and the exit code agrees with it.

use std::io::{Read, Write};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use crate::build::{self, Flavor};
use crate::{iso, qemu, unsafe_check, Result};

const KTEST_TIMEOUT: Duration = Duration::from_secs(300);
const GRUB_TIMEOUT: Duration = Duration::from_secs(120);
const STAGES: usize = 14;
const CRASH_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub passed: u64,
    pub failed: u64,
}

impl Totals {
    fn add(&mut self, other: Totals) {
        self.passed += other.passed;
        self.failed += other.failed;
    }

    fn one(ok: bool) -> Totals {
        Totals { passed: u64::from(ok), failed: u64::from(!ok) }
    }
}

fn header(n: usize, title: &str) {
    println!("\n==> [{n}/{STAGES}] {title}");
}

/// The CPU counts the QEMU stages boot with. By default everything runs
/// at `-smp 1` but the SMP stage, which runs at 2 and at 4; `make test
/// SMP=n` (`xtask test --smp n`) runs every QEMU stage at `-smp n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpus {
    /// Every QEMU stage but the SMP one.
    pub stages: u32,
    /// The SMP stage, once per count.
    pub smp_stage: Vec<u32>,
}

impl Cpus {
    pub fn new(explicit: Option<u32>) -> Cpus {
        match explicit {
            Some(n) => Cpus { stages: n, smp_stage: vec![n] },
            None => Cpus { stages: 1, smp_stage: vec![2, 4] },
        }
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self.smp_stage.iter().map(|n| format!("-smp {n}")).collect();
        list.join(" and ")
    }
}

pub fn all(cpus: &Cpus) -> Result<ExitCode> {
    let mut totals = Totals::default();
    let n = cpus.stages;
    if n != 1 {
        println!("QEMU stages run at -smp {n}");
    }

    header(1, "host unit tests (kiln-util, kiln-ipc, kiln-netlink, linux-abi, kiln-ext4, kiln-c-oracle, xtask)");
    totals.add(report("host unit tests", host_tests()));

    header(2, "unsafe boundary");
    totals.add(report("unsafe boundary", unsafe_boundary()));

    header(3, "in-kernel tests (QEMU, -kernel)");
    let elf = build::kernel(Flavor::Test);
    totals.add(report("in-kernel tests", elf.clone().and_then(|elf| ktests(&elf, n, false))));
    // The SMP suite only has something to test with several CPUs.
    if n == 1 {
        totals.add(report("in-kernel tests at -smp 4", elf.clone().and_then(|elf| ktests(&elf, 4, false))));
    }
    // The drivers again with DMA remapping on (q35, QEMU's VT-d IOMMU):
    // every device confined to its own buffers, and the confinement test.
    totals.add(report("in-kernel tests under the IOMMU", elf.clone().and_then(|elf| ktests(&elf, n, true))));

    header(4, "fatal exception reports (ktest.crash=...)");
    totals.add(report("crash reports", elf.clone().and_then(|elf| crash_reports(&elf, n))));

    header(5, "GRUB boot (multiboot2, -cdrom)");
    totals.add(report("GRUB boot", elf.and_then(|elf| grub_boot(&elf, n))));

    header(6, "user programs: Kiln against the host Linux");
    let normal = build::kernel(Flavor::Normal);
    totals.add(report(
        "user programs",
        normal
            .clone()
            .and_then(|elf| crate::usertest::compare(&build::repo_root(), &elf, n))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(7, &format!("SMP programs at {}: Kiln against the host Linux", cpus.describe()));
    totals.add(report(
        "SMP programs",
        normal
            .clone()
            .and_then(|elf| crate::usertest::smp(&build::repo_root(), &elf, &cpus.smp_stage))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(8, "busybox sessions: Kiln against the host Linux");
    totals.add(report(
        "busybox sessions",
        normal
            .clone()
            .and_then(|elf| crate::usertest::busybox_sessions(&build::repo_root(), &elf, n))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(9, "storage: virtio-blk and NVMe disks with ext4, Kiln against the host's e2fsprogs");
    totals.add(report(
        "storage",
        normal
            .clone()
            .and_then(|elf| crate::storagetest::run(&build::repo_root(), &elf, n))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(10, "benchmark programs, once each at a tiny size, in Kiln");
    totals.add(report(
        "benchmark smoke",
        normal
            .clone()
            .and_then(|elf| crate::bench::smoke(&build::repo_root(), &elf))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(11, "a small Debian root: Debian's programs in Kiln against the host (chroot)");
    totals.add(report(
        "Debian root",
        normal
            .clone()
            .and_then(|elf| crate::debiantest::run(&build::repo_root(), &elf, n))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(12, &format!("Debian workloads at -smp {}: Kiln against the host (chroot)", crate::appstest::CPUS));
    totals.add(report(
        "Debian workloads",
        normal
            .clone()
            .and_then(|elf| crate::appstest::run(&build::repo_root(), &elf, &[]))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(13, "Debian's servers: over loopback against the host (chroot), then host clients through the NIC");
    totals.add(report(
        "Debian servers",
        normal
            .and_then(|elf| crate::serverstest::stage(&build::repo_root(), &elf))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    header(14, "Networking: the host through each NIC, two machines on a NET=socket segment under attack");
    totals.add(report(
        "Networking",
        build::kernel(build::Flavor::Normal)
            .and_then(|elf| crate::netseg::stage(&build::repo_root(), &elf))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    ));

    crate::recap::print();
    println!();
    println!("{} passed, {} failed", totals.passed, totals.failed);
    Ok(if totals.failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `xtask test-smp`: the SMP stage alone, for work on the SMP kernel.
pub fn smp_only(cpus: &Cpus) -> Result<ExitCode> {
    let totals = report(
        "SMP programs",
        build::kernel(Flavor::Normal)
            .and_then(|elf| crate::usertest::smp(&build::repo_root(), &elf, &cpus.smp_stage))
            .map(|(p, f)| Totals { passed: p, failed: f }),
    );
    crate::recap::print();
    println!();
    println!("{} passed, {} failed", totals.passed, totals.failed);
    Ok(if totals.failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A stage that errored counts as one failure.
fn report(stage: &str, result: Result<Totals>) -> Totals {
    match result {
        Ok(t) => {
            println!("{stage}: {} passed, {} failed", t.passed, t.failed);
            t
        }
        Err(e) => {
            crate::recap::failure(format!("{stage}: FAILED: {e}"));
            Totals::one(false)
        }
    }
}

/// Stage 1: `cargo test` on the host crates, output shown as it comes and
/// its `test result:` lines summed.
fn host_tests() -> Result<Totals> {
    let mut child = build::debian_cargo()
        .args([
            "test",
            "-p",
            "kiln-util",
            "-p",
            "kiln-ipc",
            "-p",
            "kiln-netlink",
            "-p",
            "linux-abi",
            "-p",
            "kiln-ext4",
            "-p",
            "kiln-c-oracle",
            "-p",
            "xtask",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", build::DEBIAN_CARGO))?;
    let mut pipe = child.stdout.take().ok_or("cargo stdout not captured")?;
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    // stderr is not piped, so reading stdout alone cannot deadlock.
    loop {
        let n = pipe.read(&mut buf).map_err(|e| format!("read cargo output: {e}"))?;
        if n == 0 {
            break;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&buf[..n]);
        let _ = out.flush();
        all.extend_from_slice(&buf[..n]);
    }
    let status = child.wait().map_err(|e| format!("wait for cargo: {e}"))?;
    let mut totals = parse_cargo_results(&String::from_utf8_lossy(&all));
    if !status.success() && totals.failed == 0 {
        // Compile errors print no `test result:` line at all.
        crate::recap::failure(format!("host unit tests: cargo test exited with {status}"));
        totals.failed += 1;
    }
    Ok(totals)
}

/// Sums every `test result: ok. N passed; M failed; ...` line (one per test
/// binary and one for doc tests).
pub fn parse_cargo_results(output: &str) -> Totals {
    let mut totals = Totals::default();
    for line in output.lines() {
        let Some(rest) = line.split_once("test result: ").map(|(_, r)| r) else {
            continue;
        };
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(kind), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match kind {
                "passed" => totals.passed += n,
                "failed" => totals.failed += n,
                _ => {}
            }
        }
    }
    totals
}

/// Stage 2: one test, failed with a list of `file:line` on any problem.
fn unsafe_boundary() -> Result<Totals> {
    let problems = unsafe_check::check(&build::repo_root())?;
    for p in &problems {
        crate::recap::failure(format!("unsafe boundary: {p}"));
    }
    if problems.is_empty() {
        println!("no unsafe outside hal/, every crate root forbids it, hal/ is justified");
    }
    Ok(Totals::one(problems.is_empty()))
}

/// What the test kernel printed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ktest {
    pub passed: Vec<String>,
    pub failed: Vec<String>,
    /// The closing `N passed, N failed` line, if it came.
    pub summary: Option<Totals>,
}

/// Reads `test <name> ... ok|FAILED [details]` lines and the last `N
/// passed, N failed` line. Lines may carry a prefix (a log level, a CPU number): the
/// test line starts at the first `test ` that begins a word.
pub fn parse_ktest(output: &str) -> Ktest {
    let mut k = Ktest::default();
    for line in output.lines() {
        let line = line.trim_end_matches(['\r', ' ']);
        if let Some(t) = parse_summary(line) {
            k.summary = Some(t);
            continue;
        }
        // The verdict may be followed by details, e.g. `ok (0.17 ms)`.
        let Some((body, verdict)) = line.rsplit_once(" ... ") else {
            continue;
        };
        let ok = match verdict.split_whitespace().next() {
            Some("ok") => true,
            Some("FAILED") => false,
            _ => continue,
        };
        let start =
            body.match_indices("test ").map(|(i, _)| i).find(|&i| i == 0 || body[..i].ends_with([' ', ']', ':']));
        let Some(start) = start else { continue };
        let name = body[start + 5..].trim().to_string();
        if ok {
            k.passed.push(name);
        } else {
            k.failed.push(name);
        }
    }
    k
}

/// `N passed, M failed`, possibly followed by `, K skipped` and preceded
/// by a prefix; `None` if the line is not one.
fn parse_summary(line: &str) -> Option<Totals> {
    let (before, after) = line.split_once(" passed, ")?;
    let passed = before.rsplit(|c: char| !c.is_ascii_digit()).next()?;
    let (failed, rest) = after.split_once(" failed")?;
    if !(rest.is_empty() || rest.starts_with(',')) {
        return None;
    }
    Some(Totals { passed: passed.parse().ok()?, failed: failed.trim().parse().ok()? })
}

/// Stage 3: boot the test kernel, count its tests. Anything but a clean
/// exit with a complete, failure-free summary adds one failure, so a
/// crash after the last test line still fails the run.
fn ktests(elf: &std::path::Path, smp: u32, iommu: bool) -> Result<Totals> {
    let tag = if iommu { "-iommu" } else { "" };
    let monitor = build::out_dir().join(format!("ktest-smp{smp}{tag}.monitor"));
    // A scratch NVMe disk for the NVMe driver's tests (no file system).
    let nvme_img = build::out_dir().join(format!("ktest-nvme-smp{smp}{tag}.img"));
    std::fs::File::create(&nvme_img)
        .and_then(|f| f.set_len(KTEST_NVME_BYTES))
        .map_err(|e| format!("{}: {e}", nvme_img.display()))?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline: ktest_cmdline(), initrd: None },
        smp,
        // The device-layer tests drive two virtio NICs, one with MSI-X and
        // one on an INTx pin (no MSI-X vectors), and an e1000, each on its
        // own user network, and ARP slirp's gateway; the e1000 fault tests
        // take its link down and up through the monitor. The NVMe tests
        // use the scratch disk.
        extra: [
            if iommu { qemu::iommu_args() } else { Vec::new() },
            ktest_nics(&monitor),
            qemu::disk_args(&nvme_img.to_string_lossy(), "nvme")?,
        ]
        .concat(),
    };
    let log = build::out_dir().join(ktest_log_name(smp, iommu));
    let _ = std::fs::remove_file(&monitor);
    let run = qemu::run_captured_with_monitor(&boot, KTEST_TIMEOUT, &log, Some(monitor.clone()));
    let _ = std::fs::remove_file(&monitor);
    let _ = std::fs::remove_file(&nvme_img);
    let run = run?;
    let k = parse_ktest(&run.output);
    let totals = ktest_verdict(&k, run.status, run.timed_out);
    let label = format!("in-kernel tests at -smp {smp}{}", if iommu { " under the IOMMU" } else { "" });
    for line in failure_details(&run.output) {
        crate::recap::failure(format!("{label}: {line}"));
    }
    if run.timed_out || run.status != Some(qemu::EXIT_SUCCESS) || k.summary.is_none() {
        crate::recap::bad_run(&format!("{label}: the test kernel ended badly"), &run.output);
    }
    Ok(totals)
}

/// `xtask test-kernel`: only the in-kernel stage at `-smp smp`, `runs`
/// times in a row (a loop that makes an intermittent failure repeat). It
/// stops at the first failing run and prints each run's figures and time.
pub fn kernel_stage(smp: u32, runs: u32) -> Result<ExitCode> {
    let elf = build::kernel(Flavor::Test)?;
    let start = std::time::Instant::now();
    for run in 1..=runs {
        let t0 = std::time::Instant::now();
        let t = ktests(&elf, smp, qemu::iommu_from_env())?;
        println!(
            "run {run}/{runs} at -smp {smp}: {} passed, {} failed ({:.1} s)",
            t.passed,
            t.failed,
            t0.elapsed().as_secs_f64()
        );
        if t.failed != 0 {
            println!(
                "failed at run {run} of {runs}; the log is {}",
                build::out_dir().join(ktest_log_name(smp, qemu::iommu_from_env())).display()
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    println!("{runs} of {runs} runs at -smp {smp} passed in {:.1} s", start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

fn ktest_log_name(smp: u32, iommu: bool) -> String {
    let tag = if iommu { "-iommu" } else { "" };
    if smp == 1 {
        format!("ktest{tag}.log")
    } else {
        format!("ktest-smp{smp}{tag}.log")
    }
}

/// The test kernel's scratch NVMe disk: 16 MiB.
const KTEST_NVME_BYTES: u64 = 16 << 20;

/// The test kernel's NICs, in this order so QEMU's default MACs go
/// 52:54:00:12:34:56, :57, :58: virtio-net on `n0` (MSI-X), virtio-net on
/// `n1` (INTx), e1000 on `n2` (INTx); and the monitor socket through which
/// the e1000 link test has xtask run `set_link n2 off|on`.
fn ktest_nics(monitor: &std::path::Path) -> Vec<String> {
    ["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0"]
        .into_iter()
        .chain(["-netdev", "user,id=n1,restrict=on", "-device", "virtio-net-pci,netdev=n1,vectors=0"])
        .chain(["-netdev", "user,id=n2,restrict=on", "-device", "e1000,netdev=n2"])
        .map(String::from)
        .chain(qemu::monitor_args(monitor))
        .collect()
}

/// Each `test <name> ... FAILED` line with the indented message lines
/// that follow it.
fn failure_details(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.contains(" ... FAILED") {
            continue;
        }
        let mut text = line.trim().to_string();
        for more in lines[i + 1..].iter().take_while(|l| l.starts_with("    ")).take(8) {
            text.push('\n');
            text.push_str(more);
        }
        found.push(text);
    }
    found
}

/// The test kernel always gets a `ktest.` option (its boot tests check the
/// command line arrives); `KTEST_FILTER` narrows the run, and the empty
/// default filter matches every test.
fn ktest_cmdline() -> String {
    format!("ktest.filter={}", std::env::var("KTEST_FILTER").unwrap_or_default())
}

pub fn ktest_verdict(k: &Ktest, status: Option<i32>, timed_out: bool) -> Totals {
    let mut totals = k.summary.unwrap_or(Totals { passed: k.passed.len() as u64, failed: k.failed.len() as u64 });
    for name in &k.failed {
        println!("  FAILED: {name}");
    }
    if let Some(s) = k.summary {
        if (s.passed, s.failed) != (k.passed.len() as u64, k.failed.len() as u64) {
            println!(
                "  note: summary says {} passed, {} failed but {} ok / {} FAILED lines were seen",
                s.passed,
                s.failed,
                k.passed.len(),
                k.failed.len()
            );
        }
    }
    let problem = if timed_out {
        Some(format!("timed out after {} s", KTEST_TIMEOUT.as_secs()))
    } else if status != Some(qemu::EXIT_SUCCESS) {
        Some(format!("QEMU exit status {status:?}, expected {}", qemu::EXIT_SUCCESS))
    } else if k.summary.is_none() {
        Some("no closing `N passed, N failed` line".to_string())
    } else {
        None
    };
    if let Some(p) = problem {
        println!("  in-kernel tests: {p}");
        if totals.failed == 0 {
            totals.failed = 1;
        }
    }
    totals
}

/// Stage 4: the test kernel through GRUB, running only the boot tests.
fn grub_boot(elf: &std::path::Path, smp: u32) -> Result<Totals> {
    let out = build::out_dir();
    let iso_path = out.join("kiln-test.iso");
    iso::make(elf, "ktest.filter=boot", &iso_path)?;
    let boot = qemu::Boot { image: qemu::Image::Cdrom(iso_path), smp, extra: Vec::new() };
    let run = qemu::run_captured(&boot, GRUB_TIMEOUT, &out.join("grub-boot.log"))?;
    let saw_multiboot2 = run.output.lines().any(|l| l.contains("boot loader: multiboot2"));
    if run.timed_out {
        println!("  GRUB boot: timed out after {} s", GRUB_TIMEOUT.as_secs());
    } else if run.status != Some(qemu::EXIT_SUCCESS) {
        println!("  GRUB boot: QEMU exit status {:?}", run.status);
    }
    if !saw_multiboot2 {
        println!("  GRUB boot: no `boot loader: multiboot2` line");
    }
    let ok = saw_multiboot2 && run.status == Some(qemu::EXIT_SUCCESS);
    if !ok {
        crate::recap::bad_run("GRUB boot ... FAILED", &run.output);
    }
    Ok(Totals::one(ok))
}

/// What each deliberate crash must show: the exception's name, a register
/// dump and a backtrace that names the function that faulted.
const CRASHES: &[(&str, &[&str])] = &[
    (
        "pagefault",
        &["CPU exception 14 (page fault)", "fault address (cr2) = 0xfffffe0000004000", "rip=", "hal::debug::crash"],
    ),
    ("divide", &["CPU exception 0 (divide error)", "rax=", "hal::debug::crash"]),
    ("ud2", &["CPU exception 6 (invalid opcode)", "rip=", "hal::debug::crash"]),
    ("stackoverflow", &["CPU exception 8 (double fault)", "kernel stack overflow", "hal::debug::recurse"]),
    ("panic", &["KERNEL PANIC", "deliberate panic", "backtrace:"]),
];

/// Stage 4: each crash kind must end the run with the failure status and
/// a complete report.
fn crash_reports(elf: &std::path::Path, smp: u32) -> Result<Totals> {
    let mut totals = Totals::default();
    for (kind, needles) in CRASHES {
        let boot = qemu::Boot {
            image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline: format!("ktest.crash={kind}"), initrd: None },
            smp,
            extra: Vec::new(),
        };
        let log = build::out_dir().join(format!("crash-{kind}.log"));
        let run = qemu::run_captured(&boot, CRASH_TIMEOUT, &log)?;
        let missing: Vec<&&str> = needles.iter().filter(|n| !run.output.contains(**n)).collect();
        let ok = run.status == Some(qemu::EXIT_FAILURE) && missing.is_empty();
        if ok {
            println!("crash {kind} ... ok");
        } else {
            crate::recap::bad_run(
                &format!("crash {kind} ... FAILED (status {:?}, missing {missing:?})", run.status),
                &run.output,
            );
        }
        totals.add(Totals::one(ok));
    }
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_results_are_summed() {
        let out = "running 3 tests\ntest a ... ok\n\
                   test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\
                   test result: FAILED. 10 passed; 2 failed; 1 ignored; 0 measured\n\
                   test result: ok. 0 passed; 0 failed; 0 ignored\n";
        assert_eq!(parse_cargo_results(out), Totals { passed: 13, failed: 2 });
        assert_eq!(parse_cargo_results("error[E0425]: oops"), Totals::default());
    }

    const LOG: &str = "\x1b[2JSeaBIOS\r\nBooting from ROM..hello\r\n\
        test boot::multiboot2_info ... ok (0.048 ms)\r\n\
        [cpu0] test mm::frames ... FAILED (0.414 ms)\r\n\
            kernel/src/ktest/mm_tests.rs:53: oops ... ok\r\n\
        test not::a::verdict ... okay\r\n\
        test testing::name with spaces ... ok\r\n\
        ktest: 2 passed, 1 failed\r\n";

    #[test]
    fn ktest_log_is_parsed() {
        let k = parse_ktest(LOG);
        assert_eq!(k.passed, ["boot::multiboot2_info", "testing::name with spaces"]);
        assert_eq!(k.failed, ["mm::frames"]);
        assert_eq!(k.summary, Some(Totals { passed: 2, failed: 1 }));
    }

    #[test]
    fn summary_lines() {
        let t = |p, f| Some(Totals { passed: p, failed: f });
        assert_eq!(parse_summary("5 passed, 0 failed"), t(5, 0));
        assert_eq!(parse_summary("5 passed, 0 failed, 2 skipped"), t(5, 0));
        assert_eq!(parse_summary("done: 12 passed, 3 failed"), t(12, 3));
        assert_eq!(parse_summary("test x passed, y failed"), None);
        assert_eq!(parse_summary("5 passed, 0 failedx"), None);
    }

    #[test]
    fn cpu_counts() {
        assert_eq!(Cpus::new(None), Cpus { stages: 1, smp_stage: vec![2, 4] });
        assert_eq!(Cpus::new(Some(4)), Cpus { stages: 4, smp_stage: vec![4] });
        assert_eq!(Cpus::new(None).describe(), "-smp 2 and -smp 4");
    }

    #[test]
    fn ktest_verdicts() {
        let good = parse_ktest("test a ... ok\n1 passed, 0 failed\n");
        assert_eq!(ktest_verdict(&good, Some(33), false), Totals::one(true));
        // Crash or timeout after a clean summary is still a failure.
        assert_eq!(ktest_verdict(&good, Some(35), false).failed, 1);
        assert_eq!(ktest_verdict(&good, None, true).failed, 1);
        // Missing summary: count the lines and fail once.
        let cut = parse_ktest("test a ... ok\ntest b ... ok\n");
        assert_eq!(ktest_verdict(&cut, Some(33), false), Totals { passed: 2, failed: 1 });
        let bad = parse_ktest(LOG);
        assert_eq!(ktest_verdict(&bad, Some(35), false), Totals { passed: 2, failed: 1 });
    }
}
