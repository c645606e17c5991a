//! A journal written by the Linux kernel itself, replayed by Kiln, in the
//! storage stage (`linuxjournal`). Debian's Linux cloud kernel (the one
//! `make bench` boots) mounts a fresh ext4 image on its built-in NVMe
//! driver with `commit=600` and the page cache's writeback held off
//! (`vm.dirty_expire_centisecs` and `dirty_writeback_centisecs` at one
//! hour), creates, renames, overwrites and links files and fsyncs them:
//! each fsync commits the running jbd2 transaction to the log, while the
//! metadata blocks' home copies stay dirty in Linux's memory (nothing
//! checkpoints a log that is far from full). When the guest prints that
//! its last fsync returned, QEMU is killed (SIGKILL: no unmount, no
//! sync). The host then checks that the image needs the log: `dumpe2fs`
//! shows `needs_recovery` and a nonzero journal start, `debugfs logdump`
//! finds committed transactions, and `debugfs` (which does not replay)
//! cannot find the new directory. Kiln mounts the image on virtio-blk,
//! replays the log (logged), reads every file back against the bytes
//! Linux wrote, and unmounts; the host's `e2fsck -fn` is then clean and
//! `debugfs` dumps the same bytes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::diskfault::{boot_one_disk, Disk};
use crate::storagetest::Checks;
use crate::{build, initramfs, qemu, Result};

fn tool(args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// Linux's `/init`: the workload, then a line the host waits for.
const LINUX_INIT: &str = "#!/bin/sh\n\
    /bin/busybox --install -s /bin\n\
    export PATH=/bin\n\
    mkdir -p /proc /dev /mnt\n\
    mount -t proc proc /proc\n\
    mount -t devtmpfs dev /dev\n\
    echo 360000 > /proc/sys/vm/dirty_expire_centisecs\n\
    echo 360000 > /proc/sys/vm/dirty_writeback_centisecs\n\
    i=0; while [ ! -b /dev/nvme0n1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n\
    mount -t ext4 -o commit=600 /dev/nvme0n1 /mnt || echo 'linuxjournal: mount failed'\n\
    dd if=/payload-a of=/mnt/a bs=64k conv=fsync 2>/dev/null\n\
    mkdir /mnt/dir\n\
    echo 'written by Linux' | dd of=/mnt/dir/note conv=fsync 2>/dev/null\n\
    dd if=/payload-b of=/mnt/dir/b bs=4k conv=fsync 2>/dev/null\n\
    mv /mnt/a /mnt/dir/a\n\
    dd if=/payload-c of=/mnt/dir/b bs=4k seek=3 conv=notrunc,fsync 2>/dev/null\n\
    ln -s dir/note /mnt/link\n\
    echo gone > /mnt/gone; rm /mnt/gone\n\
    dd if=/payload-c of=/mnt/last bs=4k conv=fsync 2>/dev/null && echo 'linuxjournal: fsynced'\n\
    sleep 1000\n";

/// Kiln's script: mount (replaying), read back, unmount.
const KILN_SCRIPT: &str = "mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || exit 1\n\
    cmp /mnt/dir/a /payload-a && echo 'a: same'\n\
    cmp /mnt/dir/b /expect-b && echo 'b: same'\n\
    cmp /mnt/last /payload-c && echo 'last: same'\n\
    echo \"note: $(cat /mnt/link)\"\n\
    ls /mnt | tr '\\n' ' ' | sed 's/^/root: /'; echo\n\
    cd /; umount /mnt && echo '=== unmounted'\n";

fn payload(seed: u32, len: u32) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(2246822519).wrapping_add(seed << 24) >> 13) as u8).collect()
}

/// Boots Linux on `img` (NVMe) until its workload's last fsync returned,
/// then kills QEMU. Returns the console output.
fn linux_writes(img: &str, stage: &Path, work: &Path) -> Result<String> {
    let vmlinuz = crate::bench::guest::linux_kernel()?;
    let initrd = work.join("linux-initramfs.cpio.gz");
    initramfs::write_gz(&[("", stage)], &initrd)?;
    let boot = qemu::Boot {
        image: qemu::Image::Kernel {
            elf: vmlinuz,
            cmdline: "console=ttyS0 quiet panic=-1 rdinit=/init".into(),
            initrd: Some(initrd),
        },
        smp: 1,
        extra: vec![
            "-drive".into(),
            format!("file={img},if=none,id=d0,format=raw,cache=writeback"),
            "-device".into(),
            "nvme,drive=d0,serial=linuxjournal".into(),
        ],
    };
    let mut child = qemu::command(&boot)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    let pipe = child.stdout.take().ok_or("qemu stdout not captured")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        for line in BufReader::new(pipe).lines().map_while(|l| l.ok()) {
            let done = line.contains("linuxjournal: fsynced") || line.contains("linuxjournal: mount failed");
            out.push_str(&line);
            out.push('\n');
            if done {
                let _ = tx.send(());
            }
        }
        out
    });
    let start = Instant::now();
    let got = rx.recv_timeout(Duration::from_secs(240));
    // SIGKILL: Linux gets no chance to write back or checkpoint.
    let _ = child.kill();
    let _ = child.wait();
    let out = reader.join().unwrap_or_default().replace('\r', "");
    let _ = std::fs::write(work.join("linux.log"), &out);
    println!("  (Linux booted, wrote and fsynced in {:.1} s)", start.elapsed().as_secs_f64());
    if got.is_err() {
        return Err(format!("Linux did not finish its workload in 240 s; see {}", work.join("linux.log").display()));
    }
    Ok(out)
}

pub fn run(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage/linuxjournal");
    let _ = std::fs::remove_dir_all(&work);
    let stage = work.join("linux-root");
    let extra = work.join("extra");
    std::fs::create_dir_all(stage.join("bin")).map_err(|e| format!("{e}"))?;
    std::fs::create_dir_all(&extra).map_err(|e| format!("{e}"))?;
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);

    let (a, b, c) = (payload(1, 200 * 1024), payload(2, 24 * 1024), payload(3, 8 * 1024));
    let mut expect_b = b.clone();
    expect_b[3 * 4096..3 * 4096 + c.len()].copy_from_slice(&c);
    std::fs::copy("/bin/busybox", stage.join("bin/busybox")).map_err(|e| format!("/bin/busybox: {e}"))?;
    std::os::unix::fs::symlink("busybox", stage.join("bin/sh")).map_err(|e| format!("{e}"))?;
    std::fs::write(stage.join("init"), LINUX_INIT).map_err(|e| format!("{e}"))?;
    std::fs::set_permissions(stage.join("init"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(|e| format!("{e}"))?;
    for (dir, name, bytes) in [(&stage, "payload-a", &a), (&stage, "payload-b", &b), (&stage, "payload-c", &c)]
        .into_iter()
        .chain([(&extra, "payload-a", &a), (&extra, "expect-b", &expect_b), (&extra, "payload-c", &c)])
    {
        std::fs::write(dir.join(name), bytes).map_err(|e| format!("{e}"))?;
    }

    let img = work.join("linux.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let (ok, text) = tool(&["truncate", "-s", "32M", &img_s])?;
    // No lazy initialisation: Linux's ext4lazyinit thread would write
    // the inode tables behind the workload's back.
    let (ok2, text2) = tool(&["/sbin/mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", &img_s])?;
    if !ok || !ok2 {
        return Err(format!("mkfs.ext4: {text}{text2}"));
    }
    let out = linux_writes(&img_s, &stage, &work)?;
    let linux_log = work.join("linux.log").display().to_string();
    check(out.contains("linuxjournal: fsynced"), "Linux mounted the image, wrote and fsynced its files", &linux_log);

    // The image as Linux left it: the log must hold what Kiln is to replay.
    let (_, header) = tool(&["/sbin/dumpe2fs", "-h", &img_s])?;
    let journal_start = header
        .lines()
        .find_map(|l| l.strip_prefix("Journal start:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let needs_recovery = header.lines().any(|l| l.starts_with("Filesystem features:") && l.contains("needs_recovery"));
    let (_, logdump) = tool(&["/sbin/debugfs", "-R", "logdump", &img_s])?;
    let commits = logdump.lines().filter(|l| l.contains("(commit block)")).count();
    println!("  (Linux's log: journal start {journal_start}, {commits} committed transaction(s) to replay)");
    check(
        needs_recovery && journal_start != 0 && commits >= 1,
        "the killed Linux left needs_recovery, a nonzero journal start and committed transactions (debugfs logdump)",
        &format!("{header}\n{logdump}"),
    );
    let (_, before) = tool(&["/sbin/debugfs", "-R", "ls -l /", &img_s])?;
    check(
        !before.contains(" dir ") && !before.lines().any(|l| l.trim_end().ends_with(" dir")),
        "before replay the host's debugfs does not find /dir: its entry is only in Linux's log",
        &before,
    );

    // Kiln replays and reads.
    let log = work.join("kiln.log");
    let disk = Disk {
        drive: format!("file={img_s},if=none,id=d0,format=raw,cache=writeback"),
        device: "virtio-blk-pci,drive=d0",
    };
    let kout = boot_one_disk(root, elf, smp, ("linuxjournal.sh", KILN_SCRIPT), disk, &extra, &log)?;
    let logname = log.display().to_string();
    let replayed = kout.lines().find(|l| l.contains("ext4 vda: journal replayed")).unwrap_or("").to_string();
    println!("  (Kiln: {})", replayed.trim());
    check(!replayed.is_empty(), "Kiln replays the journal Linux left (logged)", &logname);
    check(
        kout.contains("a: same")
            && kout.contains("b: same")
            && kout.contains("last: same")
            && kout.contains("note: written by Linux")
            && kout.lines().any(|l| l.starts_with("root: ") && l.contains("dir") && l.contains("link") && !l.contains("gone")),
        "after Kiln's replay every file Linux fsynced reads back byte for byte (renamed, overwritten in place, symlink; the removed file gone)",
        &logname,
    );
    check(kout.contains("=== unmounted"), "Kiln unmounts the replayed volume", &logname);

    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    let (_, header) = tool(&["/sbin/dumpe2fs", "-h", &img_s])?;
    let still = header.lines().any(|l| l.starts_with("Filesystem features:") && l.contains("needs_recovery"));
    check(clean && !still, "host e2fsck -fn finds the volume Kiln replayed clean, needs_recovery cleared", &fsck);
    let dumped = work.join("a.out");
    let _ = tool(&["/sbin/debugfs", "-R", &format!("dump /dir/a {}", dumped.display()), &img_s])?;
    let same = std::fs::read(&dumped).map(|d| d == a).unwrap_or(false);
    check(same, "the host's debugfs dumps Linux's renamed 200 KiB file intact after Kiln's replay", "");
    let _ = std::fs::remove_dir_all(&work);
    Ok(checks.totals())
}
