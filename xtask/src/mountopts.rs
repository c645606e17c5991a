//! ext4 mount options in the storage stage (part `options`): `noatime`
//! keeps a file's atime through reads, the default `relatime` updates it
//! as Linux does, `sync` puts a write on the image with no fsync, and
//! /proc/mounts shows each as Linux does. One boot mounts the volume
//! three ways; the host cuts the power right after the `sync` writes and
//! reads them with debugfs. A second boot writes the same files on a
//! default mount and is cut the same way: there they are missing, so the
//! `sync` check can fail. On the default mount `fallocate modes` runs
//! every fallocate mode on ext4 and must leave Linux's bytes and blocks.

use std::path::Path;
use std::process::Command;

use crate::storagetest::{boot_config, debugfs_cat, mkfs, Checks, VIRTIO};
use crate::{build, Result};

/// The atime rules, run on a mount of the volume: `touch -a` sets an old
/// atime (2001), then reads follow. Under `relatime` a read updates the
/// atime when it is not newer than mtime or ctime (or older than 24 h,
/// which this cannot show apart: `touch -a` sets ctime to now).
const ATIME_SCRIPT: &str = r#"M=$1
OLD=978307200
at() { stat -c %X $M/f; }
echo hello > $M/f; touch -a -d '2001-01-01 00:00:00' $M/f
echo "atime set: $(( $(at) == OLD ))"
cat $M/f > /dev/null
if [ "$(grep " $M " /proc/mounts | grep -c noatime)" = 1 ]; then
  echo "noatime: read after touch -a: atime kept $(( $(at) == OLD ))"
  echo more >> $M/f; cat $M/f > /dev/null
  echo "noatime: read after a write: atime kept $(( $(at) == OLD ))"
else
  A=$(at); echo "relatime: read with atime <= ctime: updated $(( A > OLD ))"
  sleep 2; cat $M/f > /dev/null
  echo "relatime: read again, atime newer than mtime and ctime, within 24 h: kept $(( $(at) == A ))"
  echo more >> $M/f; cat $M/f > /dev/null
  echo "relatime: read after a write (mtime >= atime): updated $(( $(at) > A ))"
fi
"#;

/// Linux 6.18's lines for [`ATIME_SCRIPT`] and /proc/mounts (a loop
/// mount of the same kind of image, run with busybox sh on the host).
const LINUX_LINES: &str = "mounts: /dev/vda /mnt ext4 rw,noatime 0 0
atime set: 1
noatime: read after touch -a: atime kept 1
noatime: read after a write: atime kept 1
mounts: /dev/vda /mnt ext4 rw,relatime 0 0
atime set: 1
relatime: read with atime <= ctime: updated 1
relatime: read again, atime newer than mtime and ctime, within 24 h: kept 1
relatime: read after a write (mtime >= atime): updated 1
mounts: /dev/vda /mnt ext4 rw,sync,relatime 0 0";

/// `fallocate modes` on ext4 (on [4096, 12288) of a 64 KiB file written
/// with no fsync): Linux 6.18's lines on the host's ext4 /tmp. Every mode
/// succeeds and changes the bytes (PUNCH_HOLE and ZERO_RANGE zero the
/// range, COLLAPSE_RANGE removes it and INSERT_RANGE puts a hole back);
/// st_blocks counts the delayed blocks before fsync (Kiln showed 120 here
/// after a mode-0 fallocate over dirty cached pages, before it counted
/// reservations as Linux does).
const FALLOCATE_MODES: &str = "modes: 0: 0
modes: KEEP_SIZE: 0
modes: PUNCH_HOLE|KEEP_SIZE: 0
modes: ZERO_RANGE: 0
modes: ZERO_RANGE|KEEP_SIZE: 0
modes: COLLAPSE_RANGE: 0
modes: INSERT_RANGE: 0
modes: read back 65536 bytes, sum 15141399837217585856
modes: before fsync: size 65536 blocks 112
modes: after fsync: size 65536 blocks 112";

/// Files written on the last mount, then the power is cut: a short write
/// by the shell (open, write, close), 100,000 bytes through `head`, and a
/// new folder. No fsync, sync or umount follows.
fn cut_script(options: &str) -> String {
    format!(
        "mount -t ext4 {options} /dev/vda /mnt || exit 1\n\
         grep ' /mnt ' /proc/mounts | sed 's/^/mounts: /'\n\
         echo 'one line' > /mnt/line\n\
         yes sync | head -c 100000 > /mnt/big\n\
         mkdir /mnt/dir\n\
         echo '=== start'\n\
         sleep 100\n"
    )
}

fn e2fsck(args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new("/sbin/e2fsck").args(args).output().map_err(|e| format!("e2fsck: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// What a cut image holds after the host replays its journal, as mount
/// would: (the line file right, the big file right, the folder there).
fn kept(img: &str) -> Result<(bool, bool, bool)> {
    let (_, replay) = e2fsck(&["-E", "journal_only", "-y", img])?;
    println!("  (host e2fsck -E journal_only: {})", replay.lines().next().unwrap_or("nothing to replay"));
    let line = debugfs_cat(img, "/line")? == b"one line\n";
    let want: Vec<u8> = b"sync\n".iter().copied().cycle().take(100_000).collect();
    let big = debugfs_cat(img, "/big")? == want;
    let out =
        Command::new("/sbin/debugfs").args(["-R", "stat /dir", img]).output().map_err(|e| format!("debugfs: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).contains("Type: directory");
    Ok((line, big, dir))
}

pub fn run(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let img = work.join("options.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);

    mkfs(&img_s, None)?;
    let mut script = format!("mkdir -p /mnt\ncat > /tmp/atime.sh <<'END'\n{ATIME_SCRIPT}END\n");
    for options in ["-o noatime", ""] {
        script.push_str(&format!(
            "mount -t ext4 {options} /dev/vda /mnt || exit 1\n\
             grep ' /mnt ' /proc/mounts | sed 's/^/mounts: /'\n\
             sh /tmp/atime.sh /mnt\n\
             {}\
             umount /mnt\n",
            if options.is_empty() { "/t/fallocate modes /mnt/falloc\n" } else { "" }
        ));
    }
    script.push_str(&cut_script("-o sync"));
    let machine = boot_config(root, elf, smp, &img_s, VIRTIO, &script, &work, "512M")?;
    let (out, killed) = crate::crashtest::run_and_cut(&machine, Err(0), &work.join("kiln-options.log"))?;
    let lines: Vec<&str> =
        out.lines().map(str::trim).filter(|l| l.starts_with("mounts:") || l.contains(": ")).collect();
    let said = |want: &str| lines.contains(&want);
    let section = |prefix: &str| -> String {
        LINUX_LINES.lines().filter(|l| l.starts_with(prefix)).collect::<Vec<_>>().join("\n")
    };
    for (what, prefix) in [
        ("-o noatime: a read after touch -a and after a write leaves the atime (Linux's lines)", "noatime:"),
        (
            "relatime (the default): a read updates an atime not newer than ctime, keeps one newer than mtime and ctime, updates after a write (Linux's lines)",
            "relatime:",
        ),
    ] {
        let want = section(prefix);
        check(
            said("atime set: 1") && want.lines().all(said),
            what,
            &format!("want:\n{want}\nKiln:\n{}", lines.join("\n")),
        );
    }
    let modes: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("modes:")).collect();
    check(
        modes == FALLOCATE_MODES.lines().collect::<Vec<_>>(),
        "fallocate on ext4: modes 0, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE (with and without KEEP_SIZE), \
         COLLAPSE_RANGE and INSERT_RANGE succeed with Linux's bytes, size and st_blocks (before and after fsync)",
        &modes.join("\n"),
    );
    let mounts = section("mounts:");
    check(
        mounts.lines().all(said),
        "/proc/mounts: rw,noatime / rw,relatime / rw,sync,relatime, as Linux",
        &format!("want:\n{mounts}\nKiln:\n{}", lines.join("\n")),
    );
    check(
        killed && out.contains("=== start"),
        "the machine was cut right after the -o sync writes",
        "kiln-options.log",
    );
    let (line, big, dir) = kept(&img_s)?;
    check(
        line && big && dir,
        "-o sync: a shell write, 100,000 bytes through a pipe and a mkdir are on the image after a power cut, no fsync (debugfs)",
        &format!("line {line}, big {big}, dir {dir}"),
    );
    let (clean, fsck) = e2fsck(&["-fn", &img_s])?;
    check(clean, "e2fsck -fn clean after the -o sync cut", &fsck);

    mkfs(&img_s, None)?;
    let machine = boot_config(root, elf, smp, &img_s, VIRTIO, &cut_script(""), &work, "512M")?;
    let (out, killed) = crate::crashtest::run_and_cut(&machine, Err(0), &work.join("kiln-options-nosync.log"))?;
    let (line, big, dir) = kept(&img_s)?;
    check(
        killed && out.contains("=== start") && !line && !big,
        "without -o sync the same writes, cut at once, are not on the image (the sync check can fail)",
        &format!("line {line}, big {big}, dir {dir}"),
    );
    let _ = std::fs::remove_file(&img);
    Ok(checks.totals())
}
