//! `make test`'s Debian stage: a small Debian root (the base packages
//! and coreutils, built like `make rootfs` in `build/debian-small`, sharing
//! its .deb cache) boots in Kiln and runs `user/debian/smoke.sh`; the host
//! runs the same script in the same tree under `chroot`, and each section's
//! output must match. It takes about half a minute; the full default root
//! is for `make rootfs` and `make run ROOT=debian`.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::build;
use crate::qemu;
use crate::rootfs;
use crate::usertest::{compare_sections, sections};
use crate::Result;

/// What the small root holds beyond the base.
const SMALL_PACKAGES: &[&str] = &["coreutils"];
const LIMIT: Duration = Duration::from_secs(300);

/// Runs the stage; returns (passed, failed).
pub fn run(repo: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = repo.join("build/debian-small");
    let packages: Vec<String> = SMALL_PACKAGES.iter().map(|s| s.to_string()).collect();
    let archive = rootfs::make_in(&work, &rootfs::dir(repo).join("debs"), &packages)?;
    let script = fs::read_to_string(repo.join("user/debian/smoke.sh")).map_err(|e| format!("read smoke.sh: {e}"))?;

    let host = Command::new("/usr/sbin/chroot")
        .arg(work.join("root"))
        .args([rootfs::LOADER, "/bin/sh", "-c", &script])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("run the script under chroot: {e}"))?;
    let host_out = String::from_utf8_lossy(&host.stdout).into_owned();

    let extra = build::out_dir().join("debian-smoke");
    let _ = fs::remove_dir_all(&extra);
    fs::create_dir_all(&extra).map_err(|e| format!("create {}: {e}", extra.display()))?;
    fs::write(extra.join("smoke.sh"), &script).map_err(|e| format!("write smoke.sh: {e}"))?;
    let initrd =
        rootfs::initramfs_with(repo, &archive, &build::out_dir().join("initramfs-debian-small.img"), Some(&extra))?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: format!("init={} -- /bin/sh /smoke.sh", rootfs::LOADER),
            initrd: Some(initrd),
        },
        smp,
        extra: Vec::new(),
    };
    let run = qemu::run_captured(&boot, LIMIT, &build::out_dir().join("debian.log"))?;
    let host_sections = sections(&host_out);
    let kiln_sections = sections(&run.output);
    let (passed, mut failed) = compare_sections("debian", &host_sections, &kiln_sections);
    if host_sections.is_empty() {
        failed += 1;
        crate::recap::failure(format!(
            "debian: the host run printed nothing ({}): {}",
            host.status,
            String::from_utf8_lossy(&host.stderr)
        ));
    }
    if run.timed_out || run.status != Some(qemu::EXIT_SUCCESS) {
        crate::recap::bad_run(
            &format!("debian: kiln run ended badly (status {:?}, timed out: {})", run.status, run.timed_out),
            &run.output,
        );
        failed += 1;
    }
    Ok((passed, failed))
}
