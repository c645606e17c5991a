//! The storage stage's `makedisk` part: the README's way to a disk, run as
//! a user runs it. `make disk` fills an image from a folder with the
//! host's `mkfs.ext4 -d`, and `make run DISK=... DISK_BUS=... CMD=...`
//! boots Kiln with it attached; the command mounts it and prints a file's
//! checksum, which must be the host's.

use std::path::Path;
use std::process::Command;

use crate::storagetest::Checks;
use crate::{build, Result};

/// Runs `make` in the repository with `args`: (succeeded, stdout and stderr).
fn make(root: &Path, args: &[String]) -> Result<(bool, String)> {
    let out = Command::new("make")
        .current_dir(root)
        .arg("-s")
        .args(args)
        // A `make run` of the user's would be the interactive one: this
        // one must not inherit a command or extra disk from the caller.
        .env_remove("CMD")
        .env_remove("DISK")
        .env_remove("DISK_BUS")
        .output()
        .map_err(|e| format!("make: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

pub fn run(root: &Path) -> Result<(u64, u64)> {
    println!("  make disk, then make run DISK= on each bus:");
    let work = build::out_dir().join("storage");
    let src = work.join("makedisk-src");
    let img = work.join("makedisk.img");
    let io = |e: std::io::Error| format!("makedisk: {e}");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(src.join("sub")).map_err(io)?;
    let body: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(src.join("sub/data"), &body).map_err(io)?;
    let (_, host_sum) = crate::storagetest::tool(&["md5sum", src.join("sub/data").to_str().ok_or("non-UTF-8 path")?])?;
    let want = host_sum.split_whitespace().next().unwrap_or("?").to_string();

    let mut checks = Checks::default();
    let (ok, text) = make(
        root,
        &[
            "disk".to_string(),
            format!("DISK_DIR={}", src.display()),
            format!("DISK_OUT={}", img.display()),
            "DISK_SIZE=16M".to_string(),
        ],
    )?;
    checks.check(ok && img.exists(), "make disk DISK_DIR=... builds an ext4 image from the folder", &text);
    for (bus, dev) in [("virtio", "/dev/vda"), ("nvme", "/dev/nvme0n1")] {
        let cmd = format!("mkdir -p /tmp/m && mount -t ext4 {dev} /tmp/m && md5sum /tmp/m/sub/data && umount /tmp/m");
        let (ok, text) = make(
            root,
            &[
                "run".to_string(),
                format!("DISK={}", img.display()),
                format!("DISK_BUS={bus}"),
                format!("CMD={cmd}"),
                "TIMEOUT=180".to_string(),
            ],
        )?;
        let read = text.lines().any(|l| l.starts_with(&want) && l.ends_with("/tmp/m/sub/data"));
        checks.check(
            ok && read,
            &format!("make run DISK=<image> DISK_BUS={bus}: Kiln mounts {dev}, reads the host's bytes (md5 {want})"),
            &text,
        );
    }
    let _ = std::fs::remove_file(&img);
    let _ = std::fs::remove_dir_all(&src);
    Ok(checks.totals())
}
