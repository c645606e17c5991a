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
/// command itself must not contain double quotes.
pub fn shell_cmdline(base: &str, command: &str) -> Result<String> {
    if command.contains('"') {
        return Err("CMD cannot contain double quotes (use single quotes)".to_string());
    }
    let mut line = String::from(base.trim());
    if !line.is_empty() {
        line.push(' ');
    }
    line.push_str(&format!("init=/bin/sh -- -c \"{command}\""));
    Ok(line)
}

/// `make run CMD="prog args"`: boot, run it under `sh -c` as init, exit
/// with its status (1 if the kernel panicked, 124 on a timeout).
pub fn run_command(
    elf: PathBuf,
    initrd: PathBuf,
    base: &str,
    command: &str,
    smp: u32,
    extra: Vec<String>,
) -> Result<ExitCode> {
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf, cmdline: shell_cmdline(base, command)?, initrd: Some(initrd) },
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
        _ => Ok(ExitCode::from(1)),
    }
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

fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n      linux: {x}\n      kiln:  {y}", i + 1);
        }
    }
    format!("linux has {} lines, kiln {}", a.lines().count(), b.lines().count())
}

/// The test stage: every program under `user/tests` runs natively and in
/// Kiln through `runall`; a test passes when both outputs are identical.
pub fn compare(root: &Path, elf: &Path) -> Result<(u64, u64)> {
    let t = crate::initramfs::build_user_programs(root)?;
    let names: Vec<String> = std::fs::read_to_string(t.join("tests.txt"))
        .map_err(|e| format!("read tests.txt: {e}"))?
        .split_whitespace()
        .map(String::from)
        .collect();
    let host = Command::new(t.join("runall"))
        .arg(&t)
        .args(&names)
        .env_clear()
        .output()
        .map_err(|e| format!("run runall on the host: {e}"))?;
    let host_out = String::from_utf8_lossy(&host.stdout).into_owned();
    let initrd = crate::initramfs::make(root, &build::out_dir(), None)?;
    let command = format!("/t/runall /t {}", names.join(" "));
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: init_cmdline("", &command),
            initrd: Some(initrd),
        },
        smp: 1,
        extra: Vec::new(),
    };
    let log = build::out_dir().join("usertest.log");
    let run = qemu::run_captured(&boot, timeout(), &log)?;
    let host_sections = sections(&host_out);
    let kiln_sections = sections(&run.output);
    let (mut passed, mut failed) = (0, 0);
    for name in &names {
        let h = host_sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
        let k = kiln_sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
        if TERMINAL_TESTS.contains(&name.as_str()) {
            // Kiln-only (see TERMINAL_TESTS): pass when every check passed.
            let ok = k.is_some_and(|k| terminal_test_passed(name, k));
            println!("user {name} ... {}", if ok { "ok (Kiln-only checks)" } else { "FAILED" });
            if ok {
                passed += 1;
            } else {
                failed += 1;
            }
            continue;
        }
        match (h, k) {
            (Some(h), Some(k)) if h == k => {
                passed += 1;
                println!("user {name} ... ok");
            }
            (Some(h), Some(k)) => {
                failed += 1;
                println!("user {name} ... FAILED (output differs from Linux)\n    {}", first_difference(h, k));
            }
            (None, _) => {
                failed += 1;
                println!("user {name} ... FAILED (no output on the host)");
            }
            (_, None) => {
                failed += 1;
                println!("user {name} ... FAILED (did not run in Kiln)");
            }
        }
    }
    // After every test process has been reaped, no user memory may remain.
    let leak_line =
        run.output.lines().find_map(|l| l.trim().strip_prefix("kiln: user frames in use ").map(String::from));
    match leak_line.as_deref().and_then(parse_leaks) {
        Some((0, 0)) => {
            passed += 1;
            println!("user no-leaked-frames ... ok (0 user frames, 0 page-table frames left)");
        }
        Some((frames, tables)) => {
            failed += 1;
            println!("user no-leaked-frames ... FAILED ({frames} user frames, {tables} page-table frames left)");
        }
        None => {
            failed += 1;
            println!("user no-leaked-frames ... FAILED (no frame report)");
        }
    }
    if run.timed_out || run.status != Some(qemu::EXIT_SUCCESS) {
        println!("kiln run ended badly (status {:?}, timed out: {})", run.status, run.timed_out);
        failed += 1;
    }
    Ok((passed, failed))
}

/// Tests the host oracle cannot run: `tty` needs a terminal on stdin and
/// `mymem` Kiln's /dev/mymem. They pass when every check passes in Kiln.
const TERMINAL_TESTS: &[&str] = &["tty", "mymem"];

/// A terminal test passed if its summary shows checks run and none failed.
fn terminal_test_passed(name: &str, section: &str) -> bool {
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
pub fn busybox_sessions(root: &Path, elf: &Path) -> Result<(u64, u64)> {
    let scripts = root.join("user/busybox");
    let host = Command::new(crate::initramfs::BUSYBOX)
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
        smp: 1,
        extra: Vec::new(),
    };
    let log = build::out_dir().join("busybox.log");
    let run = qemu::run_captured(&boot, timeout(), &log)?;
    let host_sections = sections(&host_out);
    let kiln_sections = sections(&run.output);
    let (mut passed, mut failed) = (0, 0);
    for (name, h) in &host_sections {
        match kiln_sections.iter().find(|(n, _)| n == name) {
            Some((_, k)) if k == h => {
                passed += 1;
                println!("busybox {name} ... ok");
            }
            Some((_, k)) => {
                failed += 1;
                println!("busybox {name} ... FAILED (output differs from Linux)\n    {}", first_difference(h, k));
            }
            None => {
                failed += 1;
                println!("busybox {name} ... FAILED (did not run in Kiln)");
            }
        }
    }
    if host_sections.is_empty() {
        failed += 1;
        println!("busybox sessions: the host run printed nothing");
    }
    if run.timed_out || run.status != Some(qemu::EXIT_SUCCESS) {
        println!("kiln run ended badly (status {:?}, timed out: {})", run.status, run.timed_out);
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
        assert_eq!(shell_cmdline("", "echo hi | wc -c").unwrap(), "init=/bin/sh -- -c \"echo hi | wc -c\"");
        assert!(shell_cmdline("", "echo \"x\"").is_err());
    }

    #[test]
    fn terminal_summary() {
        assert!(terminal_test_passed("tty", "a\ntty: 24 checks, 0 failed\nexit 0\n"));
        assert!(!terminal_test_passed("tty", "tty: 0 checks, 0 failed\nexit 0\n"));
        assert!(!terminal_test_passed("tty", "tty: 24 checks, 1 failed\nexit 1\n"));
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
