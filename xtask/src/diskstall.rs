//! A disk that stops answering, in the storage stage. QEMU's throttling
//! (`throttling.bps-write`, 128 KiB/s) holds a 128 KiB write that follows
//! another for about a second, so with /sys/block/<dev>/queue/io_timeout
//! set below that a request times out in Kiln. On NVMe, at 600 ms, the
//! driver sends an Abort (QEMU 7.2 answers "not aborted"), waits another
//! timeout, and the write completes: fsync succeeds and the data is on
//! the image. At 100 ms on NVMe the request times out again after the
//! abort and the controller reset: fsync gets EIO and the volume goes
//! read-only, logged, as ext4's errors=remount-ro. On virtio-blk a
//! timeout resets the device, and QEMU 7.2 finishes the throttled
//! requests before its reset completes, so the write completes at 600 ms
//! and at 100 ms alike (after one reset or several), fsync succeeds and
//! the bytes are on the image. Then io_timeout goes
//! back to 30 s, the late completions arrive, the volume unmounts, and
//! the host's `e2fsck -fp` needs nothing beyond preening (journal
//! replay, the superblock's free counts), after which `-fn` is clean. The same boot checks io_timeout's file: 30000 by
//! default, 0 refused with EINVAL, 1 shown as 4 (Linux at HZ=250).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::diskfault::{boot_one_disk, eio, Disk};
use crate::storagetest::Checks;
use crate::{build, initramfs, qemu, usertest, Result};

fn tool(args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// The guest script for disk `name`; `abort` adds the 600 ms part.
fn script(name: &str, abort: bool) -> String {
    let mut s = format!(
        "Q=/sys/block/{name}/queue\n\
         mkdir -p /mnt && mount -t ext4 /dev/{name} /mnt || exit 1\n\
         echo \"io_timeout default: $(cat $Q/io_timeout)\"\n\
         ls -l $Q/io_timeout | awk '{{print \"io_timeout mode\", $1}}'\n\
         echo 0 > $Q/io_timeout 2>/tmp/err; echo \"io_timeout 0: $(cat /tmp/err)\"\n\
         echo 1 > $Q/io_timeout; echo \"io_timeout 1 reads: $(cat $Q/io_timeout)\"\n"
    );
    if abort {
        s.push_str(
            "echo 600 > $Q/io_timeout; sleep 2\n\
             dd if=/payload-a of=/mnt/a bs=128k conv=fsync 2>/tmp/err; echo \"stalled write+fsync: status $?\"\n",
        );
    }
    s.push_str(
        "echo 100 > $Q/io_timeout; sleep 2\n\
         dd if=/payload-b of=/mnt/b bs=128k conv=fsync 2>/tmp/err; echo \"lost write+fsync: status $? $(cat /tmp/err)\"\n\
         echo 30000 > $Q/io_timeout; sleep 6\n\
         touch /mnt/new 2>/tmp/err; echo \"then create: $(cat /tmp/err)\"\n\
         grep ' /mnt ' /proc/mounts | awk '{print \"proc/mounts:\", $4}' | cut -d, -f1\n\
         cd /; umount /mnt && echo '=== unmounted'\n",
    );
    s
}

fn boot(root: &Path, elf: &Path, smp: u32, img: &str, nvme: bool, extra: &Path, log: &Path) -> Result<String> {
    let name = if nvme { "nvme0n1" } else { "vda" };
    let disk = Disk {
        drive: format!("file={img},if=none,id=d0,format=raw,cache=writeback,throttling.bps-write=131072"),
        device: if nvme { "nvme,drive=d0,serial=kilnstall" } else { "virtio-blk-pci,drive=d0" },
    };
    boot_one_disk(root, elf, smp, ("stall.sh", &script(name, true)), disk, extra, log)
}

pub fn run(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage/stall");
    let _ = std::fs::remove_dir_all(&work);
    let extra = work.join("extra");
    std::fs::create_dir_all(&extra).map_err(|e| format!("{e}"))?;
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);
    let payload = |seed: u32, len: u32| -> Vec<u8> {
        (0..len).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed) >> 11) as u8).collect()
    };
    let a = payload(1, 256 * 1024);
    std::fs::write(extra.join("payload-a"), &a).map_err(|e| format!("{e}"))?;
    let b = payload(2, 512 * 1024);
    std::fs::write(extra.join("payload-b"), &b).map_err(|e| format!("{e}"))?;
    for nvme in [true, false] {
        let bus = if nvme { "NVMe" } else { "virtio-blk" };
        let img = work.join("stall.img");
        let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
        let _ = std::fs::remove_file(&img);
        let (ok, text) = tool(&["truncate", "-s", "32M", &img_s])?;
        let (ok2, text2) = tool(&["/sbin/mkfs.ext4", "-q", "-F", &img_s])?;
        if !ok || !ok2 {
            return Err(format!("mkfs.ext4: {text}{text2}"));
        }
        let log = work.join(format!("stall-{}.log", if nvme { "nvme" } else { "virtio" }));
        let out = boot(root, elf, smp, &img_s, nvme, &extra, &log)?;
        let logname = log.display().to_string();
        check(
            out.contains("io_timeout default: 30000")
                && out.contains("io_timeout mode -rw-r--r--")
                && out.lines().any(|l| l.starts_with("io_timeout 0:") && l.contains("Invalid argument"))
                && out.contains("io_timeout 1 reads: 4"),
            &format!("{bus}: /sys/block/*/queue/io_timeout reads 30000, 0644, refuses 0 (EINVAL), rounds 1 ms to a 4 ms jiffy"),
            &logname,
        );
        if nvme {
            check(
                out.contains("stalled write+fsync: status 0")
                    && out.contains("abort sent")
                    && out.contains("not aborted by the controller"),
                "NVMe: a write stalled past io_timeout (600 ms) is aborted first (Abort logged), then completes: fsync succeeds",
                &logname,
            );
            check(
                out.contains("controller reset"),
                "NVMe: a write still stalled after its abort (100 ms) resets the controller (logged)",
                &logname,
            );
        }
        if nvme {
            check(
                out.lines().any(|l| l.starts_with("lost write+fsync: status 1") && eio(l))
                    && out.contains("failing it with EIO")
                    && out.contains("remounting the file system read-only")
                    && out.lines().any(|l| l.starts_with("then create:") && l.contains("Read-only file system"))
                    && out.contains("proc/mounts: ro"),
                "NVMe: a write that keeps timing out fails with EIO (logged); fsync gets EIO, the volume goes read-only",
                &logname,
            );
        } else {
            let resets = out.lines().filter(|l| l.contains("virtio-blk") && l.contains("device reset after")).count();
            println!("  (virtio-blk: {resets} device reset(s) after timeouts)");
            check(
                out.contains("stalled write+fsync: status 0") && out.contains("completed during the reset") && resets >= 1,
                "virtio-blk: a write stalled past io_timeout (600 ms) is recovered by a device reset (logged): fsync succeeds",
                &logname,
            );
            // QEMU 7.2 drains a virtio-blk device's requests (throttling
            // off) before its reset completes, so no request outlives a
            // reset there: at 100 ms each timeout resets the device again
            // and the write completes instead of failing.
            check(
                out.lines().any(|l| l.starts_with("lost write+fsync: status 0"))
                    && !out.contains("failing it with EIO")
                    && out.contains("proc/mounts: rw"),
                "virtio-blk: at 100 ms every timeout resets the device and the 512 KiB write still completes: fsync 0, the volume stays rw",
                &logname,
            );
        }
        check(out.contains("=== unmounted"), &format!("{bus}: the volume unmounts"), &logname);
        let copy = work.join("copy.img");
        std::fs::copy(&img, &copy).map_err(|e| format!("{e}"))?;
        let copy_s = copy.to_str().ok_or("non-UTF-8 path")?;
        // Preen mode: journal replay and the fixes e2fsck makes without
        // asking (the superblock's free counts, which an error written
        // mid-transaction leaves ahead of the committed bitmaps, as
        // Linux's ext4_commit_super does); anything else exits 4.
        let preen = Command::new("/sbin/e2fsck").args(["-fp", copy_s]).output().map_err(|e| format!("e2fsck: {e}"))?;
        let preened = format!("{}{}", String::from_utf8_lossy(&preen.stdout), String::from_utf8_lossy(&preen.stderr));
        let code = preen.status.code().unwrap_or(8);
        let (clean, after) = tool(&["/sbin/e2fsck", "-fn", copy_s])?;
        println!("  ({bus}: host e2fsck -fp exit {code}: {})", preened.lines().last().unwrap_or(""));
        check(
            code < 4 && clean,
            &format!("{bus}: host e2fsck -fp needs nothing beyond preening (replay, free counts), then -fn is clean"),
            &format!("{preened}\n{after}"),
        );
        let dumped = work.join("a.out");
        let _ = tool(&["/sbin/debugfs", "-R", &format!("dump /a {}", dumped.display()), copy_s])?;
        let same = std::fs::read(&dumped).map(|d| d == a).unwrap_or(false);
        check(
            same,
            &format!("{bus}: the write that was stalled and recovered is on the image (debugfs dump after replay)"),
            &logname,
        );
        if !nvme {
            let dumped = work.join("b.out");
            let _ = tool(&["/sbin/debugfs", "-R", &format!("dump /b {}", dumped.display()), copy_s])?;
            let same = std::fs::read(&dumped).map(|d| d == b).unwrap_or(false);
            check(same, "virtio-blk: the 512 KiB write recovered by resets is on the image (debugfs dump)", &logname);
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(checks.totals())
}

/// Boot from disk: `root=/dev/vda` mounts an ext4 image (busybox and a
/// script, made by the host's `mkfs.ext4 -d`) as `/` instead of the
/// initramfs. The script finds the host's file, /proc/mounts shows the
/// disk as the root, it writes a file and syncs; the host finds that
/// file with debugfs, and e2fsck needs nothing beyond preening.
pub fn root_disk(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage/rootdisk");
    let _ = std::fs::remove_dir_all(&work);
    let src = work.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("{e}"))?;
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);
    let base = initramfs::base_rootfs(&build::out_dir())?;
    let (ok, text) = tool(&["cp", "-a", &format!("{}/.", base.display()), &src.display().to_string()])?;
    if !ok {
        return Err(format!("cp: {text}"));
    }
    for d in ["dev", "proc", "sys", "tmp"] {
        std::fs::create_dir_all(src.join(d)).map_err(|e| format!("{e}"))?;
    }
    std::fs::write(src.join("marker"), "written by the host\n").map_err(|e| format!("{e}"))?;
    std::fs::write(
        src.join("check.sh"),
        "grep ' / ' /proc/mounts | head -1 | sed 's/^/root mount: /'\n\
         echo \"marker: $(cat /marker)\"\n\
         echo 'written in Kiln' > /from-kiln && sync && echo '=== synced'\n\
         dd if=/marker of=/dev/null 2>/dev/null; set -- $(cat /sys/block/vda/stat)\n\
         echo \"stat fields $#: reads $1 writes $5 merges $6 flushes ${16}\"\n\
         dd if=/dev/zero of=/merged bs=64k count=16 conv=fsync 2>/dev/null; set -- $(cat /sys/block/vda/stat)\n\
         echo \"after 1 MiB + fsync: merges $6\"\n",
    )
    .map_err(|e| format!("{e}"))?;
    let img = work.join("root.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let (ok, text) = tool(&["truncate", "-s", "64M", &img_s])?;
    let (ok2, text2) = tool(&["/sbin/mkfs.ext4", "-q", "-F", "-d", &src.display().to_string(), &img_s])?;
    if !ok || !ok2 {
        return Err(format!("mkfs.ext4: {text}{text2}"));
    }
    let empty = work.join("extra");
    std::fs::create_dir_all(&empty).map_err(|e| format!("{e}"))?;
    let initrd = initramfs::make(root, &build::out_dir(), Some(&empty))?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: usertest::shell_cmdline_via("root=/dev/vda", None, "sh /check.sh")?,
            initrd: Some(initrd),
        },
        smp,
        extra: [vec!["-m".to_string(), "512M".to_string()], qemu::disk_args(&img_s, "virtio")?].concat(),
    };
    let log = work.join("rootdisk.log");
    let run = qemu::run_captured(&boot, Duration::from_secs(300), &log)?;
    let out = run.output.replace('\r', "");
    check(
        out.contains("root mount: /dev/vda / ext4 rw") && out.contains("marker: written by the host"),
        "root=/dev/vda: the disk's ext4 is / (/proc/mounts), the host's files are there",
        &out,
    );
    let merges = out
        .lines()
        .find_map(|l| l.strip_prefix("after 1 MiB + fsync: merges "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    check(
        out.lines().any(|l| l.starts_with("stat fields 17: reads ") && !l.contains("reads 0 ")) && merges > 0,
        "/sys/block/vda/stat has Linux's 17 fields; writing 1 MiB in 64 KiB pieces merges requests (write merges > 0)",
        &out.lines()
            .filter(|l| l.starts_with("stat fields") || l.starts_with("after 1 MiB"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let preen = Command::new("/sbin/e2fsck").args(["-fp", &img_s]).output().map_err(|e| format!("e2fsck: {e}"))?;
    let code = preen.status.code().unwrap_or(8);
    let (_, got) = tool(&["/sbin/debugfs", "-R", "cat /from-kiln", &img_s])?;
    check(
        out.contains("=== synced") && code < 4 && got.lines().any(|l| l == "written in Kiln"),
        "root=/dev/vda: a file written and synced on the disk root is on the image; e2fsck -fp needs nothing more",
        &format!("e2fsck exit {code}\n{got}"),
    );
    let _ = std::fs::remove_dir_all(&work);
    Ok(checks.totals())
}
