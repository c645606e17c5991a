//! A full disk and a failing disk, in the storage stage. Full: Kiln fills
//! a small ext4 volume with one large file and then with small files;
//! both stop with ENOSPC, the space comes back after removing them, and
//! the host's `e2fsck -fn` finds the volume clean. Failing: QEMU's
//! `blkdebug` fails one read and one write of a file's blocks with EIO
//! (`inject-error`, `once`); the reader gets EIO, the fsync that sends the
//! write down gets EIO, and the volume turns read-only as ext4's
//! `errors=remount-ro` does: logged, further changes EROFS, /proc/mounts
//! showing `ro`. The file then reads as written: the failed write's
//! bytes are still in the page cache, as on Linux, where a page whose
//! writeback failed keeps its new data. Remount: `remount,ro` followed by
//! a power cut leaves a clean image holding the files written before it
//! (their cached pages written back first, as Linux's sync_filesystem).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::storagetest::Checks;
use crate::{build, initramfs, qemu, usertest, Result};

fn tool(args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

fn mkfs(img: &str, size: &str, src: Option<&Path>) -> Result<()> {
    let _ = std::fs::remove_file(img);
    let (ok, text) = tool(&["truncate", "-s", size, img])?;
    let mut args = vec!["/sbin/mkfs.ext4", "-q", "-F"];
    if let Some(src) = src {
        args.extend(["-d", src.to_str().unwrap_or(".")]);
    }
    args.push(img);
    let (ok2, text2) = tool(&args)?;
    if !ok || !ok2 {
        return Err(format!("mkfs.ext4: {text}{text2}"));
    }
    Ok(())
}

const FULL: &str = "mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || exit 1\n\
    dd if=/dev/zero of=/mnt/fill bs=64k 2>&1 | grep -o 'No space left on device' | sed 's/^/big file: /'\n\
    i=0; while echo x > /mnt/s$i; do i=$((i+1)); [ $i -ge 20000 ] && break; done 2>&1 | head -1 | grep -o 'No space left on device' | sed 's/^/small files: /'\n\
    df /mnt | tail -1 | awk '{print \"available\", $4}'\n\
    rm -f /mnt/fill /mnt/s*; sync\n\
    dd if=/dev/zero of=/mnt/after bs=64k count=16 2>/dev/null && ls -l /mnt/after | awk '{print \"after removal\", $5}'\n\
    mount -o remount,ro /mnt; touch /mnt/ro 2>/tmp/err; echo \"remount ro: $(grep -o 'Read-only file system' /tmp/err)\"\n\
    grep ' /mnt ' /proc/mounts | awk '{print \"remounted:\", $4}' | cut -d, -f1\n\
    mount -o remount,rw /mnt && echo back > /mnt/rw && echo \"remount rw: $(cat /mnt/rw)\"\n\
    cd /; umount /mnt && echo '=== unmounted'\n";

/// remount,ro must reach the volume, not only the mount's flag: the
/// journal is committed and checkpointed and the superblock marked clean,
/// so a power cut right after it (busybox `poweroff -n -f`: no sync)
/// leaves an image the host finds clean, with no journal to replay and
/// the files written just before it present.
const REMOUNT_CUT: &str = "mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || exit 1\n\
    echo kept > /mnt/kept && mkdir /mnt/dir && echo inner > /mnt/dir/f\n\
    mount -o remount,ro /mnt && echo 'remounted ro'\n\
    poweroff -n -f\n";

const FAILING: &str = "mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || exit 1\n\
    dd if=/mnt/victim of=/dev/null bs=1k skip=8 count=1 2>/tmp/err; echo \"read: status $? $(cat /tmp/err)\"\n\
    cmp -s /mnt/victim /victim && echo 'read again: intact'\n\
    grep -q ' /mnt ext4 rw' /proc/mounts && echo 'still rw after a read error'\n\
    dd if=/dev/zero of=/mnt/victim bs=1k seek=4 count=1 conv=notrunc,fsync 2>/tmp/err; echo \"write+fsync: status $? $(cat /tmp/err)\"\n\
    touch /mnt/new 2>/tmp/err; echo \"then create: $(cat /tmp/err)\"\n\
    grep ' /mnt ' /proc/mounts | awk '{print \"proc/mounts:\", $4}' | cut -d, -f1\n\
    cp /victim /tmp/expect; dd if=/dev/zero of=/tmp/expect bs=1k seek=4 count=1 conv=notrunc 2>/dev/null\n\
    cmp -s /mnt/victim /tmp/expect && echo 'file still readable'\n\
    cd /; umount /mnt && echo '=== unmounted'\n";

/// The image as the guest's virtio disk `d0`, with nothing injected.
fn plain_drive(img: &str) -> String {
    format!("file={img},if=none,id=d0,format=raw,cache=writeback")
}

/// musl's and glibc's words for EIO.
pub(crate) fn eio(line: &str) -> bool {
    line.contains("I/O error") || line.contains("Input/output error")
}

fn boot(root: &Path, elf: &Path, smp: u32, drive: String, script: &str, extra: &Path, log: &Path) -> Result<String> {
    let disk = Disk { drive, device: "virtio-blk-pci,drive=d0" };
    boot_one_disk(root, elf, smp, ("fault.sh", script), disk, extra, log)
}

/// One disk of a fault check: QEMU's `-drive` (id `d0`) and the
/// `-device` that attaches it.
pub(crate) struct Disk<'a> {
    pub drive: String,
    pub device: &'a str,
}

/// Boots Kiln with `extra` plus the script `(name, text)` in its
/// initramfs, run by the shell, and `disk` attached; the console output.
pub(crate) fn boot_one_disk(
    root: &Path,
    elf: &Path,
    smp: u32,
    (name, script): (&str, &str),
    disk: Disk,
    extra: &Path,
    log: &Path,
) -> Result<String> {
    std::fs::write(extra.join(name), script).map_err(|e| format!("{e}"))?;
    let initrd = initramfs::make(root, &build::out_dir(), Some(extra))?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: usertest::shell_cmdline_via("", None, &format!("sh /{name}"))?,
            initrd: Some(initrd),
        },
        smp,
        extra: vec!["-m".into(), "512M".into(), "-drive".into(), disk.drive, "-device".into(), disk.device.into()],
    };
    let run = qemu::run_captured(&boot, Duration::from_secs(300), log)?;
    Ok(run.output.replace('\r', ""))
}

pub fn run(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage/fault");
    let _ = std::fs::remove_dir_all(&work);
    let extra = work.join("extra");
    let src = work.join("src");
    std::fs::create_dir_all(&extra).map_err(|e| format!("{e}"))?;
    std::fs::create_dir_all(&src).map_err(|e| format!("{e}"))?;
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);

    // A full disk.
    let img = work.join("full.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    mkfs(&img_s, "8M", None)?;
    let out = boot(root, elf, smp, plain_drive(&img_s), FULL, &extra, &work.join("full.log"))?;
    check(
        out.contains("big file: No space left on device") && out.contains("small files: No space left on device"),
        "a full ext4 volume: a large write and new files get ENOSPC",
        &out,
    );
    check(
        out.contains("after removal 1048576") && out.contains("=== unmounted"),
        "the space comes back after removing the files",
        &out,
    );
    check(
        out.contains("remount ro: Read-only file system")
            && out.contains("remounted: ro")
            && out.contains("remount rw: back"),
        "mount -o remount,ro: EROFS, /proc/mounts ro; remount,rw makes it writable again",
        &out,
    );
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    check(clean, "host e2fsck -fn finds the volume that ran full clean", &fsck);

    // remount,ro, then a power cut.
    mkfs(&img_s, "8M", None)?;
    let out = boot(root, elf, smp, plain_drive(&img_s), REMOUNT_CUT, &extra, &work.join("remount.log"))?;
    let (_, head) = tool(&["/sbin/dumpe2fs", "-h", &img_s])?;
    let features = head.lines().find(|l| l.starts_with("Filesystem features:")).unwrap_or("");
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    let (_, kept) = tool(&["/sbin/debugfs", "-R", "cat /kept", &img_s])?;
    let (_, inner) = tool(&["/sbin/debugfs", "-R", "cat /dir/f", &img_s])?;
    check(
        out.contains("remounted ro")
            && !features.contains("needs_recovery")
            && clean
            && kept.lines().any(|l| l == "kept")
            && inner.lines().any(|l| l == "inner"),
        "remount,ro commits the volume: a power cut right after it leaves no journal to replay, e2fsck -fn clean, the new files there",
        &format!("{out}\n{features}\n{fsck}\n{kept}\n{inner}"),
    );

    // A failing disk: one read and one write of /victim fail.
    let victim: Vec<u8> = (0..65536u32).map(|i| (i.wrapping_mul(2654435761) >> 9) as u8).collect();
    std::fs::write(src.join("victim"), &victim).map_err(|e| format!("{e}"))?;
    std::fs::write(extra.join("victim"), &victim).map_err(|e| format!("{e}"))?;
    let img = work.join("fail.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    mkfs(&img_s, "16M", Some(&src))?;
    let (_, blocks) = tool(&["/sbin/debugfs", "-R", "blocks /victim", &img_s])?;
    let (_, head) = tool(&["/sbin/dumpe2fs", "-h", &img_s])?;
    let bs: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("Block size:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or("dumpe2fs: no block size")?;
    let blocks: Vec<u64> = blocks.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let byte_of = |k: usize| -> Result<u64> {
        let b = blocks.get(k).ok_or_else(|| format!("debugfs: /victim has no block {k}"))?;
        Ok(b * bs)
    };
    // blkdebug's `sector` (512-byte units): a request covering it fails.
    let read_at = byte_of((8192 / bs) as usize)?;
    let write_at = byte_of((4096 / bs) as usize)?;
    let conf = work.join("blkdebug.conf");
    std::fs::write(
        &conf,
        format!(
            "[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"{}\"\nonce = \"on\"\n\n\
             [inject-error]\nevent = \"write_aio\"\nerrno = \"5\"\nsector = \"{}\"\nonce = \"on\"\n",
            read_at / 512,
            write_at / 512
        ),
    )
    .map_err(|e| format!("{e}"))?;
    let drive = format!("file=blkdebug:{}:{img_s},if=none,id=d0,format=raw,cache=writeback", conf.display());
    let out = boot(root, elf, smp, drive, FAILING, &extra, &work.join("fail.log"))?;
    check(
        out.lines().any(|l| l.starts_with("read: status 1") && eio(l))
            && out.contains("read again: intact")
            && out.contains("still rw after a read error"),
        "blkdebug fails a read: EIO to the reader, the next read works, the volume stays rw",
        &out,
    );
    check(
        out.lines().any(|l| l.starts_with("write+fsync: status 1") && eio(l))
            && out.lines().any(|l| l.starts_with("then create:") && l.contains("Read-only file system"))
            && out.contains("proc/mounts: ro")
            && out.contains("remounting the file system read-only"),
        "blkdebug fails a write: fsync gets EIO, the volume goes read-only (logged, EROFS, /proc/mounts ro)",
        &out,
    );
    check(
        out.contains("file still readable") && out.contains("=== unmounted"),
        "the read-only volume still reads and unmounts",
        &out,
    );
    let _ = std::fs::remove_dir_all(&work);
    Ok(checks.totals())
}
