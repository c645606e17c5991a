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
use crate::usertest::{judge_sections, leak_verdict};
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

/// The whole run in Kiln: boot, unpack and every section.
const LIMIT: Duration = Duration::from_secs(1500);
/// The guest's memory: the root (about 520 MiB) lives in a tmpfs that may
/// hold half of it, and the workloads (gcc, node, stress-ng's vm
/// stressor) need room beside it.
const MEMORY: &str = "2G";
/// CPUs in the guest: `make -j2`, the multiprocessing pools and
/// stress-ng are meant to run in parallel.
pub const CPUS: u32 = 2;

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

/// Copies the workload folder and the programs built here into
/// `out/apps`; returns `out`.
fn stage_files(repo: &Path, t: &Path) -> Result<PathBuf> {
    let out = build::out_dir().join("debian-apps");
    let _ = fs::remove_dir_all(&out);
    let apps = out.join("apps");
    copy_tree(&repo.join("user/debian/apps"), &apps)?;
    // The Go program (user/go), built with Debian's Go by `make -C user`.
    let go = t.join("gotest");
    if go.is_file() {
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
fn host_run(t: &Path, tree: &Path, staged: &Path, sections: &[String]) -> Result<String> {
    let apps_mount = tree.join("apps");
    fs::create_dir_all(&apps_mount).map_err(|e| format!("create {}: {e}", apps_mount.display()))?;
    let script = r#"set -e
R=$1; A=$2; shift 2
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount --bind /dev "$R/dev"
mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mount --bind -o ro "$A" "$R/apps"
exec chroot "$R" /bin/sh /apps/run.sh "$@""#;
    let out = Command::new(t.join("pristine"))
        .args(["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh"])
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
        return Err(format!(
            "the host run printed nothing ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(text)
}

/// Runs the stage (every section, or those named in `only`); returns
/// (passed, failed).
pub fn run(repo: &Path, elf: &Path, only: &[String]) -> Result<(u64, u64)> {
    let start = Instant::now();
    let work = repo.join("build/debian-apps");
    let packages: Vec<String> = PACKAGES.iter().map(|s| s.to_string()).collect();
    let archive = rootfs::make_in(&work, &rootfs::dir(repo).join("debs"), &packages)?;
    let script = fs::read_to_string(repo.join("user/debian/apps/run.sh")).map_err(|e| format!("read run.sh: {e}"))?;
    let all = section_names(&script);
    for name in only {
        if !all.contains(name) {
            return Err(format!("no workload `{name}` in user/debian/apps/run.sh (there are: {})", all.join(" ")));
        }
    }
    let names: Vec<String> = if only.is_empty() { all } else { only.to_vec() };
    let t = crate::initramfs::build_user_programs(repo)?;
    let staged = stage_files(repo, &t)?;

    let host_start = Instant::now();
    let host_out = host_run(&t, &work.join("root"), &staged, only)?;
    let host_secs = host_start.elapsed().as_secs_f64();

    let initrd =
        rootfs::initramfs_with(repo, &archive, &build::out_dir().join("initramfs-debian-apps.img"), Some(&staged))?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: format!("init=/bin/sh -- /apps/run.sh {}", only.join(" ")).trim().to_string(),
            initrd: Some(initrd),
        },
        smp: CPUS,
        extra: vec!["-m".to_string(), MEMORY.to_string()],
    };
    let kiln_start = Instant::now();
    let run = qemu::run_captured(&boot, LIMIT, &build::out_dir().join("debian-apps.log"))?;
    let kiln_secs = kiln_start.elapsed().as_secs_f64();

    let (mut passed, mut failed) = judge_sections("apps", &names, &host_out, &run.output);
    let (p, f) = leak_verdict("apps", &run);
    passed += p;
    failed += f;
    println!(
        "apps: {passed} passed, {failed} failed; host {host_secs:.0} s, Kiln {kiln_secs:.0} s, stage {:.0} s",
        start.elapsed().as_secs_f64()
    );
    Ok((passed, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_lines_name_the_workloads() {
        let script = "section() {\n    name=$1\n}\n\nsection perl perl \"$APPS/text.pl\"\nsection go \"$APPS/gotest\"\n";
        assert_eq!(section_names(script), ["perl", "go"]);
    }
}
