//! Hostile images in the kernel: kiln-ext4's fuzzer (its
//! `write_images_for_the_kernel` test, seeded, so a case is reproduced by
//! its seed and number) writes mutated small images (superblock,
//! descriptors, bitmaps, inode table, extent, directory, xattr and journal
//! blocks); one Kiln boot attaches [`PER_BOOT`] of them as virtio disks
//! and mounts each, walks it, reads every file, writes, syncs and
//! unmounts. A mount may fail or come up read-only; the kernel must not
//! panic or hang (every case reports done, QEMU exits by itself).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{build, initramfs, qemu, usertest, Result};

/// Images per boot (virtio disks vda..vdx).
const PER_BOOT: u64 = 24;

fn script(first: u64, n: u64) -> String {
    let mut s = String::from("mkdir -p /mnt\n");
    for k in 0..n {
        let dev = format!("vd{}", char::from(b'a' + k as u8));
        let case = first + k;
        let _ = writeln!(
            s,
            "echo '=== case {case}'\n\
             if mount -t ext4 /dev/{dev} /mnt 2>/dev/null; then\n\
               echo \"MOUNTED {case}\"\n\
               ls -lR /mnt > /dev/null 2>&1\n\
               find /mnt -type f 2>/dev/null | head -60 | while read f; do cat \"$f\" > /dev/null 2>&1; done\n\
               echo fuzz > /mnt/fuzz-new 2>/dev/null; mkdir /mnt/fuzz-dir 2>/dev/null; mv /mnt/fuzz-new /mnt/fuzz-dir/ 2>/dev/null\n\
               rm -rf /mnt/fuzz-dir 2>/dev/null; sync\n\
               umount /mnt || echo \"UMOUNT FAILED {case}\"\n\
             fi\n\
             echo '=== done {case}'"
        );
    }
    s
}

/// `count` mutated images from `seed` through Kiln; (passed, failed), one
/// check per image.
pub fn run(root: &Path, elf: &Path, smp: u32, count: u64, seed: u64) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage/hostile");
    let extra = work.join("extra");
    let (mut passed, mut failed) = (0, 0);
    let (mut mounted, mut slowest) = (0u64, Duration::ZERO);
    let mut first = 0;
    let started = Instant::now();
    while first < count {
        let n = PER_BOOT.min(count - first);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&extra).map_err(|e| format!("{e}"))?;
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let made = Command::new(cargo)
            .args(["test", "-q", "-p", "kiln-ext4", "--test", "fuzz", "--", "--ignored", "--exact"])
            .arg("write_images_for_the_kernel")
            .env("KILN_FUZZ_OUT", &work)
            .env("KILN_FUZZ_COUNT", n.to_string())
            .env("KILN_FUZZ_SEED", seed.to_string())
            .env("KILN_FUZZ_FIRST", first.to_string())
            .output()
            .map_err(|e| format!("cargo test (fuzz images): {e}"))?;
        if !made.status.success() {
            return Err(format!("fuzz images: {}", String::from_utf8_lossy(&made.stderr)));
        }
        std::fs::write(extra.join("hostile.sh"), script(first, n)).map_err(|e| format!("{e}"))?;
        let initrd = initramfs::make(root, &build::out_dir(), Some(&extra))?;
        let mut args = vec!["-m".to_string(), "512M".to_string()];
        for k in 0..n {
            let img = work.join(format!("case-{}.img", first + k));
            args.push("-drive".into());
            args.push(format!("file={},if=none,id=d{k},format=raw,cache=writeback", img.display()));
            args.push("-device".into());
            args.push(format!("virtio-blk-pci,drive=d{k}"));
        }
        let boot = qemu::Boot {
            image: qemu::Image::Kernel {
                elf: elf.to_path_buf(),
                cmdline: usertest::shell_cmdline_via("", None, "sh /hostile.sh")?,
                initrd: Some(initrd),
            },
            smp,
            extra: args,
        };
        let log = build::out_dir().join("storage/hostile.log");
        let t = Instant::now();
        let run = qemu::run_captured(&boot, Duration::from_secs(600), &log)?;
        slowest = slowest.max(t.elapsed());
        let out = run.output.replace('\r', "");
        let panicked = out.contains("KERNEL PANIC");
        let mut kept = log.clone();
        for case in first..first + n {
            let done = out.contains(&format!("=== done {case}\n"));
            mounted += u64::from(out.contains(&format!("MOUNTED {case}\n")));
            if done && !panicked {
                passed += 1;
            } else {
                failed += 1;
                if kept == log {
                    // Later boots overwrite hostile.log: keep this one's.
                    kept = build::out_dir().join(format!("storage/hostile-{first}.log"));
                    let _ = std::fs::copy(&log, &kept);
                }
                println!(
                    "  FAIL  hostile image {case} (seed {seed:#x}): {} (see {})",
                    if panicked { "kernel panic" } else { "no end (hang?)" },
                    kept.display()
                );
            }
        }
        first += n;
    }
    let _ = std::fs::remove_dir_all(&work);
    println!(
        "  {} hostile images (seed {seed:#x}) in Kiln: {passed} without panic or hang, {mounted} of them mounted (the rest refused); {:.0} s, slowest boot {:.0} s",
        count,
        started.elapsed().as_secs_f64(),
        slowest.as_secs_f64()
    );
    if failed == 0 {
        println!("  ok    mutated ext4 images: an error or a mount, never a panic or a hang");
    }
    Ok((passed, failed))
}
