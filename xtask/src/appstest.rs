//! `make test`'s Debian-workload stage: unmodified Debian programs
//! (python3, perl, git, make and gcc, sqlite3, jq, xz, zstd, openssl, vim,
//! node, strace, gdb, stress-ng, and a Go program) each run a
//! deterministic job from `user/debian/apps`, in Kiln booted with a Debian
//! root that holds them and on the host in the same tree under `chroot`;
//! each section's output must be identical, and after the run no user
//! frame may be left.
//!
//! The root (`PACKAGES`, built like `make rootfs` in `build/debian-apps`,
//! sharing its .deb cache) is unpacked once and cached. The workloads and
//! the programs built here (the Go program, `user/go/gotest`) go to `/apps`
//! in a second initramfs member; on the host the same folder is bound at
//! `/apps` inside a private mount namespace that also gives the chroot its
//! own /proc, /sys, /dev (the host's, with a fresh /dev/shm and devpts)
//! and /tmp, so nothing of the run is left in the tree.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::build;
use crate::qemu;
use crate::rootfs;
use crate::usertest::{first_difference, leak_verdict, sections};
use crate::Result;

/// What the workloads need beyond the base (libc6-dev: gcc's Depends do
/// not include the C library's headers and crt files).
pub const PACKAGES: &[&str] = &[
    "python3",
    "perl",
    "git",
    "make",
    "gcc",
    "libc6-dev",
    "sqlite3",
    "jq",
    "xz-utils",
    "zstd",
    "openssl",
    "vim",
    "nodejs",
    "strace",
    "gdb",
    "stress-ng",
    "procps",
];

/// The whole run in Kiln: boot, unpack and every section (about 5
/// minutes on a loaded 2-CPU host). A kernel that hangs costs this much,
/// so it stays well inside CI's budget.
const LIMIT: Duration = Duration::from_secs(720);
/// The guest's memory: the root (about 520 MiB) lives in a tmpfs that may
/// hold half of it, and the workloads (gcc, node, stress-ng's vm
/// stressor) need room beside it.
const MEMORY: &str = "2G";
/// CPUs in the guest: `make -j2`, the multiprocessing pools and
/// stress-ng are meant to run in parallel.
pub const CPUS: u32 = 2;

/// Workloads that cannot pass until a kernel feature reaches main, with
/// what each waits for. Such a failure is reported (`expected failure`)
/// but does not fail the stage; such a workload passing is a failure
/// until it is taken off this list, so the list cannot go stale and hide
/// a later regression.
pub const EXPECTED_TO_FAIL: &[(&str, &str)] = &[
    // Empty since main has every feature the workloads need (the last
    // to leave: strace, for xattrs and fadvise64 from the files merge).
];

/// How far MemFree may fall across the stress-ng section in Kiln. The
/// kernel heap keeps what it grew to: measured, three runs in one boot
/// lowered MemFree by 2056, 1056 and 0 KiB while /proc/meminfo's Slab
/// grew by 2080, 1024 and 0 KiB, and the first run of a fresh stage by
/// 2.0 to 3.1 MiB. A leak of what the stressors use (32 MiB vm and
/// 16 MiB mmap regions, thousands of forked processes' stacks and page
/// tables, message queues, semaphores) would pass it at once.
const STRESS_MEMFREE_TOLERANCE_KIB: i64 = 6144;

/// The section names `run.sh` runs, in its order (its `section NAME`
/// lines).
pub fn section_names(script: &str) -> Vec<String> {
    script
        .lines()
        .filter_map(|l| l.strip_prefix("section "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// One stage of Debian programs judged against the host: the apps stage
/// here, and the servers stage (`crate::serverstest`).
pub struct Suite {
    /// The stage's name in verdict lines (`apps nginx ... ok`).
    pub label: &'static str,
    /// The workload folder under `user/debian/`, with its `run.sh`.
    pub folder: &'static str,
    /// What the root holds beyond the base.
    pub packages: &'static [&'static str],
    /// The whole run in Kiln.
    pub limit: Duration,
    /// The guest's memory.
    pub memory: &'static str,
    /// The host's run gets its own network namespace with only `lo` up,
    /// so servers bind their stock ports without meeting the host's.
    pub own_network: bool,
    pub expected_to_fail: &'static [(&'static str, &'static str)],
}

/// This stage.
pub const APPS: Suite = Suite {
    label: "apps",
    folder: "apps",
    packages: PACKAGES,
    limit: LIMIT,
    memory: MEMORY,
    own_network: false,
    expected_to_fail: EXPECTED_TO_FAIL,
};

/// Copies the workload folder and the programs built here into
/// `out/apps`; returns `out`.
pub fn stage_files(repo: &Path, t: &Path, suite: &Suite) -> Result<PathBuf> {
    let out = build::out_dir().join(format!("debian-{}", suite.folder));
    let _ = fs::remove_dir_all(&out);
    let apps = out.join("apps");
    copy_tree(&repo.join("user/debian").join(suite.folder), &apps)?;
    // The Go program (user/go), built with Debian's Go by `make -C user`.
    let go = t.join("gotest");
    if suite.folder == "apps" && go.is_file() {
        fs::copy(&go, apps.join("gotest")).map_err(|e| format!("copy {}: {e}", go.display()))?;
    }
    Ok(out)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).map_err(|e| format!("create {}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("read {}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("read {}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).map_err(|e| format!("copy {}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// The host's run: `run.sh` in the tree under chroot, inside a private
/// mount namespace (util-linux `unshare`) whose mounts vanish with it.
fn host_run(t: &Path, tree: &Path, staged: &Path, sections: &[String], suite: &Suite) -> Result<String> {
    let apps_mount = tree.join("apps");
    fs::create_dir_all(&apps_mount).map_err(|e| format!("create {}: {e}", apps_mount.display()))?;
    // With its own network the run also gets fresh copies of what the
    // servers write beside their configuration (run files, logs, state,
    // a conf.d the scripts add a listening port to), so the cached tree
    // stays as built.
    let network = r#"ip link set lo up
for d in run var/log var/lib/nginx var/lib/redis var/www etc/nginx/conf.d; do
    mkdir -p "$R/$d" && mount -t tmpfs tmpfs "$R/$d"
done
"#;
    let script = r#"set -e
R=$1; A=$2; shift 2
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount --bind /dev "$R/dev"
mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mount --bind -o ro "$A" "$R/apps"
NETWORK
exec chroot "$R" /bin/sh /apps/run.sh "$@""#
        .replace("NETWORK\n", if suite.own_network { network } else { "" });
    let mut unshare = vec!["/usr/bin/unshare", "--mount", "--propagation", "private"];
    if suite.own_network {
        unshare.push("--net");
    }
    let out = Command::new(t.join("pristine"))
        .args(&unshare)
        .args(["/bin/sh", "-c", &script, "sh"])
        .arg(tree)
        .arg(staged.join("apps"))
        .args(sections)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("run the workloads under chroot: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.trim().is_empty() {
        return Err(format!("the host run printed nothing ({}): {}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(text)
}

/// Runs the stage (every section, or those named in `only`); returns
/// (passed, failed).
pub fn run(repo: &Path, elf: &Path, only: &[String]) -> Result<(u64, u64)> {
    run_suite(repo, elf, only, &APPS)
}

/// Runs `suite` (every section, or those named in `only`); returns
/// (passed, failed).
pub fn run_suite(repo: &Path, elf: &Path, only: &[String], suite: &Suite) -> Result<(u64, u64)> {
    let start = Instant::now();
    let label = suite.label;
    let work = repo.join(format!("build/debian-{}", suite.folder));
    let packages: Vec<String> = suite.packages.iter().map(|s| s.to_string()).collect();
    let archive = rootfs::make_in(&work, &rootfs::dir(repo).join("debs"), &packages)?;
    let run_sh = format!("user/debian/{}/run.sh", suite.folder);
    let script = fs::read_to_string(repo.join(&run_sh)).map_err(|e| format!("read {run_sh}: {e}"))?;
    let all = section_names(&script);
    for name in only {
        if !all.contains(name) {
            return Err(format!("no workload `{name}` in {run_sh} (there are: {})", all.join(" ")));
        }
    }
    let names: Vec<String> = if only.is_empty() { all } else { only.to_vec() };
    let t = crate::initramfs::build_user_programs(repo)?;
    let staged = stage_files(repo, &t, suite)?;

    let host_start = Instant::now();
    let host_out = host_run(&t, &work.join("root"), &staged, only, suite)?;
    let host_secs = host_start.elapsed().as_secs_f64();

    let initrd = rootfs::initramfs_with(
        repo,
        &archive,
        &build::out_dir().join(format!("initramfs-debian-{}.img", suite.folder)),
        Some(&staged),
    )?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: format!("init=/bin/sh -- /apps/run.sh {}", only.join(" ")).trim().to_string(),
            initrd: Some(initrd),
        },
        smp: CPUS,
        extra: vec!["-m".to_string(), suite.memory.to_string()],
    };
    let kiln_start = Instant::now();
    let run = qemu::run_captured(&boot, suite.limit, &build::out_dir().join(format!("debian-{}.log", suite.folder)))?;
    let kiln_secs = kiln_start.elapsed().as_secs_f64();

    let mut unavailable = Vec::new();
    if suite.folder == "apps" && !staged.join("apps/gotest").is_file() {
        unavailable.push(("go", "user/go/gotest is not built here"));
    }
    let v = judge(label, &names, &host_out, &run.output, &unavailable, suite.expected_to_fail);
    let (mut passed, mut failed, expected) = (v.passed, v.failed, v.expected);
    if names.iter().any(|n| n == "stress-ng") {
        match stress_memory_verdict(&run.output) {
            Ok(text) => {
                passed += 1;
                println!("apps stress-ng-memory ... ok ({text})");
            }
            Err(text) => {
                failed += 1;
                crate::recap::failure(format!("apps stress-ng-memory ... FAILED ({text})"));
            }
        }
    }
    let (p, f) = leak_verdict(label, &run);
    passed += p;
    failed += f;
    println!(
        "{label}: {passed} passed, {failed} failed, {expected} expected failures; host {host_secs:.0} s, Kiln {kiln_secs:.0} s, stage {:.0} s",
        start.elapsed().as_secs_f64()
    );
    Ok((passed, failed))
}

/// The stage's verdicts, counted.
#[derive(Debug, Default, PartialEq, Eq)]
struct Verdicts {
    passed: u64,
    failed: u64,
    /// Failures listed in `EXPECTED_TO_FAIL`.
    expected: u64,
}

/// Compares each section of Kiln's run with the host's; a section in
/// `expected_to_fail` (EXPECTED_TO_FAIL) is judged as it says. A section in
/// `unavailable` (a program this build could not make) fails whatever it
/// printed: host and Kiln would agree on its absence.
fn judge(
    label: &str,
    names: &[String],
    host_out: &str,
    kiln_out: &str,
    unavailable: &[(&str, &str)],
    expected_to_fail: &[(&str, &str)],
) -> Verdicts {
    let host_sections = sections(host_out);
    let kiln_sections = sections(kiln_out);
    let mut v = Verdicts::default();
    for name in names {
        let h = host_sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
        let k = kiln_sections.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
        // Why it fails, and the first differing lines when it ran.
        let why: Option<(String, Option<String>)> = match (h, k) {
            _ if unavailable.iter().any(|(n, _)| n == name) => {
                unavailable.iter().find(|(n, _)| n == name).map(|(_, w)| (w.to_string(), None))
            }
            (Some(h), Some(k)) if h == k => None,
            (Some(h), Some(k)) => Some(("output differs from Linux".to_string(), Some(first_difference(h, k)))),
            (None, _) => Some(("no output on the host".to_string(), None)),
            (_, None) => Some(("did not run in Kiln".to_string(), None)),
        };
        let expected = expected_to_fail.iter().find(|(n, _)| n == name).map(|(_, until)| *until);
        match (why, expected) {
            (None, None) => {
                v.passed += 1;
                println!("{label} {name} ... ok");
            }
            (None, Some(until)) => {
                v.failed += 1;
                crate::recap::failure(format!(
                    "{label} {name} ... FAILED (passes now: take it off its EXPECTED_TO_FAIL list; it waited for {until})"
                ));
            }
            (Some((why, detail)), Some(until)) => {
                v.expected += 1;
                println!("{label} {name} ... expected failure ({why}) until {until}");
                if let Some(detail) = detail {
                    println!("    {detail}");
                }
            }
            (Some((why, detail)), None) => {
                v.failed += 1;
                let detail = detail.map(|d| format!("\n    {d}")).unwrap_or_default();
                crate::recap::failure(format!("{label} {name} ... FAILED ({why}){detail}"));
            }
        }
    }
    v
}

/// The stress-ng section's memory check: `run.sh` prints MemFree (KiB)
/// before each section and after its files are gone (`--- NAME MemFree
/// BEFORE AFTER`, not compared); in Kiln it may not fall by more than
/// the tolerance across stress-ng. (The host's MemFree moves with
/// everything else the host runs, so only Kiln's is judged.)
fn stress_memory_verdict(kiln_out: &str) -> std::result::Result<String, String> {
    let line = kiln_out
        .lines()
        .find_map(|l| l.trim_end_matches('\r').strip_prefix("--- stress-ng MemFree "))
        .ok_or("no MemFree line for stress-ng in Kiln's output")?;
    let kib: Vec<i64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let [before, after] = kib[..] else { return Err(format!("unreadable MemFree line: {line}")) };
    let text = format!("MemFree {before} KiB before, {after} KiB after, tolerance {STRESS_MEMFREE_TOLERANCE_KIB} KiB");
    if before - after <= STRESS_MEMFREE_TOLERANCE_KIB {
        Ok(text)
    } else {
        Err(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_lines_name_the_workloads() {
        let script =
            "section() {\n    name=$1\n}\n\nsection perl perl \"$APPS/text.pl\"\nsection go \"$APPS/gotest\"\n";
        assert_eq!(section_names(script), ["perl", "go"]);
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn expected_failures_are_counted_apart_and_their_passing_fails() {
        let listed = "strace";
        let list = [(listed, "a feature")];
        let host = format!("=== perl ===\nsame\n=== perl exit 0 ===\n=== {listed} ===\nok\n=== {listed} exit 0 ===\n");
        let kiln =
            format!("=== perl ===\nsame\n=== perl exit 0 ===\n=== {listed} ===\nENOSYS\n=== {listed} exit 1 ===\n");
        // perl passes; the listed workload fails as expected.
        let v = judge("apps", &names(&["perl", listed]), &host, &kiln, &[], &list);
        assert_eq!(v, Verdicts { passed: 1, failed: 0, expected: 1 });
        // Passing while listed is a failure.
        assert_eq!(
            judge("apps", &names(&[listed]), &host, &host, &[], &list),
            Verdicts { passed: 0, failed: 1, expected: 0 }
        );
    }

    #[test]
    fn a_missing_program_fails_even_when_both_sides_agree() {
        let out = "=== vim ===\nno such file\n=== vim exit 127 ===\n";
        let v = judge("apps", &names(&["vim"]), out, out, &[("vim", "not built")], &[]);
        assert_eq!(v, Verdicts { passed: 0, failed: 1, expected: 0 });
        assert_eq!(judge("apps", &names(&["vim"]), out, out, &[], &[]), Verdicts { passed: 1, failed: 0, expected: 0 });
    }

    #[test]
    fn stress_memory_within_tolerance() {
        assert!(stress_memory_verdict("--- stress-ng MemFree 100000 98000\n").is_ok());
        assert!(stress_memory_verdict("--- stress-ng MemFree 100000 110000\n").is_ok());
        assert!(stress_memory_verdict("--- stress-ng MemFree 100000 90000\n").is_err());
        assert!(stress_memory_verdict("--- perl MemFree 1 1\n").is_err());
    }
}
