//! Running user programs inside Kiln: `make run CMD=...` and the test
//! stage that compares Kiln's output with the host Linux's (the oracle).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use crate::build;
use crate::qemu;
use crate::Result;

/// The line the kernel prints when the first process ends.
const INIT_EXIT: &str = "kiln: init exited with status ";

fn timeout() -> Duration {
    let secs = std::env::var("TIMEOUT").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(600);
    Duration::from_secs(secs)
}

/// The kernel command line that runs `command` (program and arguments,
/// split on whitespace) as the first process.
pub fn init_cmdline(base: &str, command: &str) -> String {
    let mut words = command.split_whitespace();
    let prog = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    let mut line = String::from(base.trim());
    if !line.is_empty() {
        line.push(' ');
    }
    line.push_str("init=");
    line.push_str(prog);
    if !args.is_empty() {
        line.push_str(" -- ");
        line.push_str(&args.join(" "));
    }
    line
}

/// The status from the kernel's init-exit line, if it got that far.
pub fn init_status(output: &str) -> Option<u8> {
    output.lines().rev().find_map(|l| l.trim().strip_prefix(INIT_EXIT)).and_then(|s| s.trim().parse().ok())
}

/// The kernel command line that runs `command` under `sh -c` as the
/// first process. Linux's command-line quoting has no escapes, so the
/// command itself must not contain double quotes. With a `loader`, the
/// shell is started through it (`init=LOADER -- /bin/sh -c "..."`), which is how a dynamically
/// linked /bin/sh runs on a kernel whose exec cannot load interpreters.
pub fn shell_cmdline_via(base: &str, loader: Option<&str>, command: &str) -> Result<String> {
    if command.contains('"') {
        return Err("CMD cannot contain double quotes (use single quotes)".to_string());
    }
    let mut line = String::from(base.trim());
    if !line.is_empty() {
        line.push(' ');
    }
    match loader {
        None => line.push_str(&format!("init=/bin/sh -- -c \"{command}\"")),
        Some(ld) => line.push_str(&format!("init={ld} -- /bin/sh -c \"{command}\"")),
    }
    // The kernel keeps 2048 bytes of its command line, as Linux on x86
    // (NUL included); the rest of a script would be lost without a word.
    if line.len() > 2047 {
        return Err(format!("kernel command line of {} bytes: at most 2047 are kept", line.len()));
    }
    Ok(line)
}

/// `make run CMD="prog args"`: boot, run it under `sh -c` as init, exit
/// with its status (1 if the kernel panicked, 124 on a timeout).
pub fn run_command(
    elf: PathBuf,
    initrd: PathBuf,
    base: &str,
    loader: Option<&str>,
    command: &str,
    smp: u32,
    extra: Vec<String>,
) -> Result<ExitCode> {
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf, cmdline: shell_cmdline_via(base, loader, command)?, initrd: Some(initrd) },
        smp,
        extra,
    };
    let log = build::out_dir().join("run.log");
    let run = qemu::run_captured(&boot, timeout(), &log)?;
    if run.timed_out {
        eprintln!("xtask: timed out after {} s", timeout().as_secs());
        return Ok(ExitCode::from(124));
    }
    match (run.status, init_status(&run.output)) {
        (Some(qemu::EXIT_SUCCESS), Some(code)) => Ok(ExitCode::from(code)),
        // `poweroff -f` / `reboot -f` (reboot(2)) end the machine on purpose.
        (Some(_), None) if powered_off(&run.output) => Ok(ExitCode::SUCCESS),
        _ => Ok(ExitCode::from(1)),
    }
}

/// Whether the kernel ended the machine for reboot(2).
fn powered_off(output: &str) -> bool {
    output.lines().any(|l| matches!(l.trim(), "kiln: power off (reboot(2))" | "kiln: restart (reboot(2))"))
}

/// Splits runall output into (test name, section text including the
/// closing status line).
pub fn sections(output: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for raw in output.lines() {
        let line = raw.trim_end_matches('\r');
        if let Some(name) = line.strip_prefix("=== ").and_then(|l| l.strip_suffix(" ===")) {
            if let Some((test, rest)) = name.split_once(" exit ") {
                if let Some((n, mut text)) = current.take() {
                    if n == test {
                        text.push_str(&format!("exit {rest}\n"));
                        out.push((n, text));
                    }
                }
                continue;
            }
            current = Some((name.to_string(), String::new()));
            continue;
        }
        if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    if let Some((n, mut text)) = current {
        text.push_str("(no exit line: the run ended inside this test)\n");
        out.push((n, text));
    }
    out
}

/// Compares the sections of a host run with a Kiln run of the same
/// script, printing `<label> <name> ... ok` for each that matches and
/// recording a failure for each that differs or never ran in Kiln;
/// returns (passed, failed).
pub fn compare_sections(label: &str, host: &[(String, String)], kiln: &[(String, String)]) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    for (name, h) in host {
        match kiln.iter().find(|(n, _)| n == name) {
            Some((_, k)) if k == h => {
                passed += 1;
                println!("{label} {name} ... ok");
            }
            Some((_, k)) => {
                failed += 1;
                crate::recap::failure(format!(
                    "{label} {name} ... FAILED (output differs from Linux)\n    {}",
                    first_difference(h, k)
                ));
            }
            None => {
                failed += 1;
                crate::recap::failure(format!("{label} {name} ... FAILED (did not run in Kiln)"));
            }
        }
    }
    (passed, failed)
}

pub fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n      linux: {x}\n      kiln:  {y}", i + 1);
        }
    }
    format!("linux has {} lines, kiln {}", a.lines().count(), b.lines().count())
}

/// Runs `names` natively through `runall` (the oracle's output), under
/// `pristine`: signals a CI runner or a background job ignores would
/// otherwise be ignored in the host tests too, and not in Kiln's.
fn host_runall(t: &Path, names: &[String]) -> Result<String> {
    let host = Command::new(t.join("pristine"))
        .arg(t.join("runall"))
        .arg(t)
        .args(names)
        .env_clear()
        .output()
        .map_err(|e| format!("run runall on the host: {e}"))?;
    Ok(String::from_utf8_lossy(&host.stdout).into_owned())
}

/// The names listed (one per line) in a list file `make -C user` wrote.
fn read_list(t: &Path, file: &str) -> Result<Vec<String>> {
    Ok(std::fs::read_to_string(t.join(file))
        .map_err(|e| format!("read {file}: {e}"))?
        .split_whitespace()
        .map(String::from)
        .collect())
}

/// Boots Kiln with `/t/runall <args>` as init at `-smp smp`.
fn kiln_runall(
    root: &Path,
    elf: &Path,
    runall_args: &str,
    smp: u32,
    limit: Duration,
    log: &str,
) -> Result<qemu::Captured> {
    let initrd = crate::initramfs::make(root, &build::out_dir(), None)?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: init_cmdline("", &format!("/t/runall {runall_args}")),
            initrd: Some(initrd),
        },
        smp,
        extra: Vec::new(),
    };
    qemu::run_captured(&boot, limit, &build::out_dir().join(log))
}

/// Judges one Kiln run of `names` against the host's output: one verdict
/// line per test (`<label> <name> ... ok`), then the frame-leak check and
/// the run's own end. `kiln_only` tests are judged by `kiln_only_passed`
/// instead of the host. Returns (passed, failed).
fn judge(
    label: &str,
    names: &[String],
    host_out: &str,
    run: &qemu::Captured,
    kiln_only: &dyn Fn(&str, &str) -> Option<String>,
    is_kiln_only: &dyn Fn(&str) -> bool,
) -> (u64, u64) {
    let host_sections = sections(host_out);
    let kiln_sections = sections(&run.output);
    let (mut passed, mut failed) = (0, 0);
    for name in names {
        let h = host_sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
        let k = kiln_sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
        if is_kiln_only(name) {
            // Kiln-only: pass when every check passed (and whatever else
            // `kiln_only` requires holds).
            let verdict = match k {
                None => Some("did not run in Kiln".to_string()),
                Some(k) => kiln_only(name, k),
            };
            match verdict {
                None => {
                    passed += 1;
                    println!("{label} {name} ... ok (Kiln-only checks)");
                }
                Some(why) => {
                    failed += 1;
                    let mut text = format!("{label} {name} ... FAILED ({why})");
                    if let Some(k) = k {
                        for l in k.lines().filter(|l| l.starts_with("FAIL")) {
                            text.push_str(&format!("\n    {l}"));
                        }
                    }
                    crate::recap::failure(text);
                }
            }
            continue;
        }
        if compare_one(label, name, h, k) {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    let (p, f) = leak_verdict(label, run);
    (passed + p, failed + f)
}

/// One section's verdict: printed when it passes, recorded for the recap
/// when it does not.
fn compare_one(label: &str, name: &str, host: Option<&str>, kiln: Option<&str>) -> bool {
    let failed = |why: &str| format!("{label} {name} ... FAILED ({why})");
    let text = match (host, kiln) {
        (Some(h), Some(k)) if h == k => {
            println!("{label} {name} ... ok");
            return true;
        }
        (Some(h), Some(k)) => format!("{}\n    {}", failed("output differs from Linux"), first_difference(h, k)),
        (None, _) => failed("no output on the host"),
        (_, None) => failed("did not run in Kiln"),
    };
    crate::recap::failure(text);
    false
}

/// The count of frame-ownership errors a Kiln run reported at init's exit
/// (`kiln: frame ownership errors N`, printed only when N > 0).
pub fn frame_ownership_errors(output: &str) -> Option<u64> {
    output.lines().find_map(|l| l.trim().strip_prefix("kiln: frame ownership errors ")?.trim().parse().ok())
}

/// The end of a Kiln run: the frame-leak check init's exit prints, and
/// whether the run itself ended well. Returns (passed, failed).
pub fn leak_verdict(label: &str, run: &qemu::Captured) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    // After every test process has been reaped, no user memory may remain.
    let leak_line =
        run.output.lines().find_map(|l| l.trim().strip_prefix("kiln: user frames in use ").map(String::from));
    match leak_line.as_deref().and_then(parse_leaks) {
        Some((0, 0)) => {
            passed += 1;
            println!("{label} no-leaked-frames ... ok (0 user frames, 0 page-table frames left)");
        }
        Some((frames, tables)) => {
            failed += 1;
            crate::recap::failure(format!(
                "{label} no-leaked-frames ... FAILED ({frames} user frames, {tables} page-table frames left)"
            ));
        }
        None => {
            failed += 1;
            crate::recap::failure(format!("{label} no-leaked-frames ... FAILED (no frame report)"));
        }
    }
    // hal found a frame freed while held (owner tags, reference counts):
    // a memory corruption caught before it spread; each was logged with a
    // backtrace ("ERROR frames: ...").
    if let Some(n) = frame_ownership_errors(&run.output) {
        failed += 1;
        crate::recap::failure(format!("{label} frame-ownership ... FAILED ({n} errors; see ERROR frames: lines)"));
    }
    if run.timed_out || run.status != Some(qemu::EXIT_SUCCESS) {
        crate::recap::bad_run(
            &format!("{label}: kiln run ended badly (status {:?}, timed out: {})", run.status, run.timed_out),
            &run.output,
        );
        failed += 1;
    }
    (passed, failed)
}

/// The test stage: every program under `user/tests` runs natively and in
/// Kiln (at `-smp smp`) through `runall`; a test passes when both outputs
/// are identical.
pub fn compare(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let t = crate::initramfs::build_user_programs(root)?;
    let names = read_list(&t, "tests.txt")?;
    let host_out = host_runall(&t, &names)?;
    let run = kiln_runall(root, elf, &format!("/t {}", names.join(" ")), smp, timeout(), "usertest.log")?;
    let kiln_only = |name: &str, section: &str| {
        (!kiln_only_test_passed(name, section)).then(|| "a check failed in Kiln".to_string())
    };
    Ok(judge("user", &names, &host_out, &run, &kiln_only, &|n| KILN_ONLY_TESTS.contains(&n)))
}

/// The SMP programs that only Kiln can run (/dev/mymem), and only with at
/// least two CPUs.
const SMP_KILN_ONLY: &[&str] = &["smp_race"];

/// How long one SMP program may run in Kiln before runall kills it; they
/// take a few seconds, so this is only hit by a hang.
const SMP_TEST_LIMIT: u64 = 90;

/// How long one SMP boot may take in all: every program hitting its limit,
/// plus boot and slack. A kernel deadlock that runall cannot kill ends here.
fn smp_boot_limit(programs: usize) -> Duration {
    Duration::from_secs(SMP_TEST_LIMIT * programs as u64 + 60)
}

/// The names an SMP run at `-smp cpus` includes: the Kiln-only ones need
/// two CPUs or more.
pub fn smp_names(all: &[String], cpus: u32) -> Vec<String> {
    all.iter().filter(|n| cpus >= 2 || !SMP_KILN_ONLY.contains(&n.as_str())).cloned().collect()
}

/// The Kiln-only verdict for an SMP program at `-smp cpus`: every check
/// passed, and the CPU count it saw (`online CPUs: N`) is `cpus`.
pub fn smp_kiln_only_verdict(name: &str, section: &str, cpus: u32) -> Option<String> {
    let online = section.lines().find_map(|l| l.strip_prefix("online CPUs: ")).map(str::trim);
    if online != Some(cpus.to_string().as_str()) {
        return Some(format!("the kernel shows {} online CPUs, QEMU has {cpus}", online.unwrap_or("no count of")));
    }
    if !kiln_only_test_passed(name, section) {
        return Some("a check failed in Kiln".to_string());
    }
    None
}

/// The SMP stage: the `smp_*` programs (user/tests, listed in
/// smp_tests.txt) in Kiln at each CPU count in `cpus`, against one host
/// run; `smp_race` is Kiln-only and runs from two CPUs up.
pub fn smp(root: &Path, elf: &Path, cpus: &[u32]) -> Result<(u64, u64)> {
    let t = crate::initramfs::build_user_programs(root)?;
    let all = read_list(&t, "smp_tests.txt")?;
    let host_names: Vec<String> = all.iter().filter(|n| !SMP_KILN_ONLY.contains(&n.as_str())).cloned().collect();
    let host_out = host_runall(&t, &host_names)?;
    let (mut passed, mut failed) = (0, 0);
    for &n in cpus {
        let names = smp_names(&all, n);
        let start = std::time::Instant::now();
        let args = format!("-t {SMP_TEST_LIMIT} /t {}", names.join(" "));
        let run = kiln_runall(root, elf, &args, n, smp_boot_limit(names.len()), &format!("smp{n}.log"))?;
        let label = format!("smp{n}");
        let verdict = |name: &str, section: &str| smp_kiln_only_verdict(name, section, n);
        let (p, f) = judge(&label, &names, &host_out, &run, &verdict, &|name| SMP_KILN_ONLY.contains(&name));
        println!("{label}: {p} passed, {f} failed in {:.1} s", start.elapsed().as_secs_f64());
        passed += p;
        failed += f;
    }
    Ok((passed, failed))
}

/// Tests the host oracle cannot run: `tty` needs a terminal on stdin,
/// `mymem` Kiln's /dev/mymem, `components` Kiln's components, and `vdso_settime` and `clockset` would
/// step the host's clock and `oom` would exhaust the host's memory (those
/// skip themselves there). They pass when every check passes in Kiln.
const KILN_ONLY_TESTS: &[&str] =
    &["tty", "mymem", "meminfo", "vdso_settime", "clockset", "fuzz", "oom", "netconf", "components"];

/// A Kiln-only test passed if its summary shows checks run and none failed.
fn kiln_only_test_passed(name: &str, section: &str) -> bool {
    let summary = format!("{name}: ");
    section.lines().any(|l| {
        l.strip_prefix(&summary)
            .and_then(|r| r.strip_suffix(" checks, 0 failed"))
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n > 0)
    }) && section.lines().any(|l| l == "exit 0")
}

/// "X, user page-table frames in use Y" -> (X, Y).
fn parse_leaks(rest: &str) -> Option<(u64, u64)> {
    let (frames, tables) = rest.split_once(", user page-table frames in use ")?;
    Some((frames.trim().parse().ok()?, tables.trim().parse().ok()?))
}

/// The busybox scripted sessions (user/busybox): `busybox sh run.sh`
/// on the host and in Kiln, compared section by section.
pub fn busybox_sessions(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let scripts = root.join("user/busybox");
    let t = crate::initramfs::build_user_programs(root)?;
    let host = Command::new(t.join("pristine"))
        .arg(crate::initramfs::BUSYBOX)
        .arg("sh")
        .arg(scripts.join("run.sh"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("run busybox on the host: {e}"))?;
    let host_out = String::from_utf8_lossy(&host.stdout).into_owned();
    let initrd = crate::initramfs::make(root, &build::out_dir(), None)?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: "init=/bin/sh -- /bb/run.sh".to_string(),
            initrd: Some(initrd),
        },
        smp,
        extra: Vec::new(),
    };
    let log = build::out_dir().join("busybox.log");
    let run = qemu::run_captured(&boot, timeout(), &log)?;
    let host_sections = sections(&host_out);
    let kiln_sections = sections(&run.output);
    let (passed, mut failed) = compare_sections("busybox", &host_sections, &kiln_sections);
    if host_sections.is_empty() {
        failed += 1;
        crate::recap::failure("busybox sessions: the host run printed nothing");
    }
    if run.timed_out || run.status != Some(qemu::EXIT_SUCCESS) {
        crate::recap::bad_run(
            &format!("busybox: kiln run ended badly (status {:?}, timed out: {})", run.status, run.timed_out),
            &run.output,
        );
        failed += 1;
    }
    Ok((passed, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_for_a_command() {
        assert_eq!(init_cmdline("", "/t/hello a b"), "init=/t/hello -- a b");
        assert_eq!(init_cmdline("loglevel=warn", "/t/hello"), "loglevel=warn init=/t/hello");
    }

    #[test]
    fn leak_line() {
        assert_eq!(parse_leaks("3, user page-table frames in use 0"), Some((3, 0)));
        assert_eq!(parse_leaks("garbage"), None);
    }

    #[test]
    fn shell_command_line() {
        assert_eq!(shell_cmdline_via("", None, "echo hi | wc -c").unwrap(), "init=/bin/sh -- -c \"echo hi | wc -c\"");
        assert!(shell_cmdline_via("", None, "echo \"x\"").is_err());
        assert_eq!(
            shell_cmdline_via("a", Some("/lib64/ld.so"), "ls").unwrap(),
            "a init=/lib64/ld.so -- /bin/sh -c \"ls\""
        );
        // The kernel keeps 2048 bytes with the NUL: a longer script is refused.
        let fits = "x".repeat(2047 - "init=/bin/sh -- -c \"\"".len());
        assert!(shell_cmdline_via("", None, &fits).is_ok());
        assert!(shell_cmdline_via("", None, &format!("{fits}y")).is_err());
    }

    #[test]
    fn terminal_summary() {
        assert!(kiln_only_test_passed("tty", "a\ntty: 24 checks, 0 failed\nexit 0\n"));
        assert!(!kiln_only_test_passed("tty", "tty: 0 checks, 0 failed\nexit 0\n"));
        assert!(!kiln_only_test_passed("tty", "tty: 24 checks, 1 failed\nexit 1\n"));
    }

    #[test]
    fn smp_kiln_only() {
        let good = "online CPUs: 2\nsmp_race: 5 checks, 0 failed\nexit 0\n";
        assert_eq!(smp_kiln_only_verdict("smp_race", good, 2), None);
        assert!(smp_kiln_only_verdict("smp_race", good, 4).unwrap().contains("shows 2 online CPUs"));
        let failing = "online CPUs: 2\nsmp_race: 5 checks, 1 failed\nexit 1\n";
        assert!(smp_kiln_only_verdict("smp_race", failing, 2).is_some());
        assert!(smp_kiln_only_verdict("smp_race", "smp_race: 5 checks, 0 failed\nexit 0\n", 2).is_some());
        let all: Vec<String> = ["smp_futex", "smp_race"].iter().map(|s| s.to_string()).collect();
        assert_eq!(smp_names(&all, 1), ["smp_futex"]);
        assert_eq!(smp_names(&all, 2), all);
    }

    #[test]
    fn reboot_lines() {
        assert!(powered_off("x\r\nkiln: power off (reboot(2))\r\n"));
        assert!(powered_off("kiln: restart (reboot(2))\n"));
        assert!(!powered_off("kiln: init exited with status 0\n"));
    }

    #[test]
    fn status_line() {
        assert_eq!(init_status("x\nkiln: init exited with status 7\n"), Some(7));
        assert_eq!(init_status("panic"), None);
    }

    #[test]
    fn splits_sections() {
        let s = sections("noise\n=== a ===\nx\n=== a exit 0 ===\n=== b ===\ny\r\n");
        assert_eq!(s[0], ("a".to_string(), "x\nexit 0\n".to_string()));
        assert_eq!(s[1].0, "b");
        assert!(s[1].1.contains("no exit line"));
    }
}
