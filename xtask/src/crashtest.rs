//! Power cuts of an ext4 workload in Kiln (`make test`'s storage stage and
//! `make crashtest N=...`). Each cut boots Kiln on a fresh copy of one
//! mkfs'd image, runs a workload that creates, appends to, renames and
//! deletes files, fsyncs some (logging each fsync that returned) and
//! commits larger transactions with `sync`, and SIGKILLs QEMU: half the
//! cuts at a random moment of the workload, half a few milliseconds after
//! a `sync` began, so that the journal often holds a transaction when the
//! power goes. Then, per cut: the host's `e2fsck -fy` on a copy may only
//! replay the journal (and free orphans), and every fsync'd file is
//! intact (one `debugfs` run dumps them all); that check runs on a host
//! thread while the next cut's QEMU runs. Every [`BATCH`] cuts, one Kiln
//! boot with all of the batch's images attached mounts each (Kiln's own
//! journal replay and orphan processing), compares the fsync'd files, and
//! unmounts it; `e2fsck -fn` must then find each image clean.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::storagetest::Bus;
use crate::{build, initramfs, qemu, usertest, Result};

/// Images attached to one checking boot.
const BATCH: usize = 10;
/// The size of the file system the workload runs on.
const IMAGE_SIZE: &str = "32M";

/// The workload. File descriptor 3 holds a file whose name is gone (an
/// orphan, freed by the next mount or by e2fsck). Every fourth round makes
/// a folder of 30 files and removes an older one, then `sync`s: one
/// transaction of a few dozen blocks, whose commit the host aims at.
fn workload(bus: Bus) -> String {
    format!("mkdir -p /mnt && mount -t ext4 {} /mnt || exit 1\n", bus.device)
        + "\
     exec 3<>/mnt/orphan; echo held >&3; rm /mnt/orphan\n\
     echo '=== start'\n\
     i=0\n\
     while [ $i -lt 100000 ]; do\n\
       dd if=/payload of=/mnt/c$i bs=4k conv=fsync 2>/dev/null && echo \"FSYNCED c$i\"\n\
       echo \"noise $i\" >> /mnt/log; echo x > /mnt/n$i; mv /mnt/n$i /mnt/m$i; echo $i >&3\n\
       [ $i -ge 2 ] && rm -f /mnt/m$((i-2))\n\
       if [ $((i % 4)) -eq 3 ]; then\n\
         mkdir /mnt/g$i; j=0; while [ $j -lt 30 ]; do echo $j > /mnt/g$i/f$j; j=$((j+1)); done\n\
         rm -rf /mnt/g$((i-8))\n\
         echo \"COMMIT $i\"; sync\n\
       fi\n\
       i=$((i+1))\n\
     done\n"
}

pub fn payload() -> Vec<u8> {
    (0..20480u32).map(|i| (i.wrapping_mul(2246822519) >> 11) as u8).collect()
}

fn tool(args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// One cut's result, as far as the host saw it.
struct Cut {
    index: u32,
    img: PathBuf,
    what: String,
    synced: Vec<String>,
    /// The journal held a transaction at the cut (`Journal start` ≠ 0).
    journal_full: bool,
    host_ok: bool,
    detail: String,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The cut run's disk on `bus`.
fn cut_drive_args(img: &Path, bus: Bus) -> Result<Vec<String>> {
    let img = img.to_str().ok_or("non-UTF-8 path")?;
    Ok([vec!["-m".to_string(), "512M".to_string()], crate::qemu::disk_args(img, bus.qemu)?].concat())
}

/// The check boot's disks: every cut image on virtio-blk (the image is
/// what is checked, whichever bus wrote it).
fn drive_args(images: &[&Path]) -> Vec<String> {
    let mut args = vec!["-m".to_string(), "512M".to_string()];
    for (k, img) in images.iter().enumerate() {
        args.push("-drive".into());
        args.push(format!("file={},if=none,id=d{k},format=raw,cache=writeback", img.display()));
        args.push("-device".into());
        args.push(format!("virtio-blk-pci,drive=d{k}"));
    }
    args
}

/// Runs the workload on `img` and kills QEMU as `aim` says: `Err(ms)` that
/// long after the workload started, `Ok((n, ms))` that long after the
/// `n`th `sync` began. Returns the serial output and whether QEMU had to
/// be killed (it must: the workload does not end).
pub(crate) fn run_and_cut(
    boot: &qemu::Boot,
    aim: std::result::Result<(u32, u64), u64>,
    log: &Path,
) -> Result<(String, bool)> {
    let mut child = qemu::command(boot)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    let mut pipe = child.stdout.take().ok_or("qemu stdout not captured")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        let mut line = Vec::new();
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            for &b in &buf[..n] {
                if b == b'\n' {
                    let _ = tx.send(String::from_utf8_lossy(&line).trim().to_string());
                    line.clear();
                } else {
                    line.push(b);
                }
            }
        }
        String::from_utf8_lossy(&all).replace('\r', "")
    });
    let give_up = Instant::now() + Duration::from_secs(180);
    let mut kill_at: Option<Instant> = None;
    let mut syncs = 0;
    let mut exited = false;
    loop {
        if let Some(t) = kill_at {
            if Instant::now() >= t {
                break;
            }
        }
        if Instant::now() >= give_up {
            break;
        }
        if child.try_wait().map_err(|e| format!("wait for qemu: {e}"))?.is_some() {
            exited = true;
            break;
        }
        let Ok(l) = rx.recv_timeout(Duration::from_millis(2)) else { continue };
        if kill_at.is_none() {
            match aim {
                Err(ms) if l == "=== start" => kill_at = Some(Instant::now() + Duration::from_millis(ms)),
                Ok((n, ms)) if l.starts_with("COMMIT ") => {
                    syncs += 1;
                    if syncs == n {
                        kill_at = Some(Instant::now() + Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let out = reader.join().map_err(|_| "serial reader panicked")?;
    let _ = std::fs::write(log, &out);
    Ok((out, !exited))
}

/// The host's checks of one cut image (on a copy, which it then deletes).
fn host_check(mut cut: Cut, payload: &[u8]) -> Result<Cut> {
    let copy = cut.img.with_extension("copy");
    let copy_s = copy.to_str().ok_or("non-UTF-8 path")?.to_string();
    std::fs::copy(&cut.img, &copy).map_err(|e| format!("copy image: {e}"))?;
    let (_, head) = tool(&["/sbin/dumpe2fs", "-h", &copy_s])?;
    cut.journal_full = head
        .lines()
        .find_map(|l| l.strip_prefix("Journal start:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|v| v != 0);
    let (_, fsck) = tool(&["/sbin/e2fsck", "-fy", &copy_s])?;
    let fixes: Vec<&str> = fsck.lines().filter(|l| l.contains("? yes")).collect();
    let (clean_after, _) = tool(&["/sbin/e2fsck", "-fn", &copy_s])?;
    let dump = cut.img.with_extension("dump");
    let _ = std::fs::remove_dir_all(&dump);
    std::fs::create_dir_all(&dump).map_err(|e| format!("{e}"))?;
    let mut cmds = String::new();
    for f in &cut.synced {
        let _ = writeln!(cmds, "dump /{f} {}/{f}", dump.display());
    }
    let cmd_file = dump.join("cmds");
    std::fs::write(&cmd_file, cmds).map_err(|e| format!("{e}"))?;
    tool(&["/sbin/debugfs", "-f", cmd_file.to_str().unwrap_or(""), &copy_s])?;
    let mut bad = String::new();
    for f in &cut.synced {
        let got = std::fs::read(dump.join(f)).unwrap_or_default();
        if got != payload {
            let _ = write!(bad, "{f} ({} bytes) ", got.len());
        }
    }
    let _ = std::fs::remove_dir_all(&dump);
    let _ = std::fs::remove_file(&copy);
    cut.host_ok = fixes.is_empty() && clean_after && bad.is_empty();
    if !cut.host_ok {
        cut.detail = format!("fixes {fixes:?}, clean after {clean_after}, bad {bad}\n{fsck}");
    }
    Ok(cut)
}

/// `cuts` power cuts; (passed, failed) checks, two per cut.
pub fn power_cuts(root: &Path, elf: &Path, smp: u32, cuts: u32, bus: Bus) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage/cuts");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{e}"))?;
    let template = work.join("template.img");
    let template_s = template.to_str().ok_or("non-UTF-8 path")?.to_string();
    let (ok, text) = tool(&["truncate", "-s", IMAGE_SIZE, &template_s])?;
    let (ok2, text2) = tool(&["/sbin/mkfs.ext4", "-q", "-F", &template_s])?;
    if !ok || !ok2 {
        return Err(format!("crash image: {text}{text2}"));
    }
    let extra = work.join("extra");
    std::fs::create_dir_all(&extra).map_err(|e| format!("{e}"))?;
    // A long run keeps its own kernel: a rebuild meanwhile does not change it.
    let own_elf = work.join("kiln.elf");
    std::fs::copy(elf, &own_elf).map_err(|e| format!("copy kernel: {e}"))?;
    let elf = own_elf.as_path();
    let payload = payload();
    std::fs::write(extra.join("payload"), &payload).map_err(|e| format!("{e}"))?;
    std::fs::write(extra.join("storage.sh"), workload(bus)).map_err(|e| format!("{e}"))?;
    // Its own copy of the initramfs too: another run in the same tree
    // (a `make test` beside a long crashtest) rewrites the shared one.
    let initrd = work.join("initrd.cpio");
    std::fs::copy(initramfs::make(root, &build::out_dir(), Some(&extra))?, &initrd)
        .map_err(|e| format!("copy initramfs: {e}"))?;
    // A seed from the clock: each run cuts at other moments; each cut's
    // aim is printed so a failure can be told apart.
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
            | 1;
    println!("  power cuts: seed {seed:#x}, {cuts} cuts in batches of {BATCH}");
    let mut rng = Rng(seed);
    let started = Instant::now();
    let (mut passed, mut failed) = (0, 0);
    let (mut journal_full, mut kiln_replays, mut fsyncs) = (0u32, 0u32, 0usize);
    let mut next = 0u32;
    while next < cuts {
        let batch: Vec<u32> = (next..cuts.min(next + BATCH as u32)).collect();
        next += batch.len() as u32;
        let mut checks: Vec<JoinHandle<Result<Cut>>> = Vec::new();
        for &index in &batch {
            let img = work.join(format!("cut{index}.img"));
            std::fs::copy(&template, &img).map_err(|e| format!("copy template: {e}"))?;
            let aim = if index % 2 == 0 {
                Err(rng.next() % 2500)
            } else {
                Ok((1 + (rng.next() % 3) as u32, rng.next() % 40))
            };
            let what = match aim {
                Err(ms) => format!("power cut {} at {ms} ms of the workload", index + 1),
                Ok((n, ms)) => format!("power cut {} {ms} ms into sync {n}", index + 1),
            };
            let boot = qemu::Boot {
                image: qemu::Image::Kernel {
                    elf: elf.to_path_buf(),
                    cmdline: usertest::shell_cmdline_via("", None, "sh /storage.sh")?,
                    initrd: Some(initrd.clone()),
                },
                smp,
                extra: cut_drive_args(&img, bus)?,
            };
            let (out, killed) = run_and_cut(&boot, aim, &work.join(format!("cut{index}.log")))?;
            if out.contains("ERROR frames:") {
                failed += 1;
                println!("  FAIL  {what}: hal reported a frame freed while held (cut{index}.log)");
            }
            let synced: Vec<String> =
                out.lines().filter_map(|l| l.trim().strip_prefix("FSYNCED ").map(String::from)).collect();
            let mut cut = Cut { index, img, what, synced, journal_full: false, host_ok: false, detail: String::new() };
            if !killed || !out.contains("=== start") {
                cut.detail = format!("the workload did not run until the cut (killed {killed})");
                checks.push(std::thread::spawn(move || Ok(cut)));
                continue;
            }
            let p = payload.clone();
            checks.push(std::thread::spawn(move || host_check(cut, &p)));
        }
        let mut done = Vec::new();
        for h in checks {
            done.push(h.join().map_err(|_| "host check panicked")??);
        }
        for c in &done {
            fsyncs += c.synced.len();
            journal_full += u32::from(c.journal_full);
            let what = format!(
                "{}: {} fsyncs logged, journal {}; host e2fsck -fy fixes nothing past replay, fsync'd files intact",
                c.what,
                c.synced.len(),
                if c.journal_full { "holding a transaction" } else { "empty" }
            );
            if c.host_ok {
                passed += 1;
                println!("  ok    {what}");
            } else {
                failed += 1;
                println!("  FAIL  {what}: {}", c.detail);
            }
        }
        // One Kiln boot mounts every image of the batch: its own replay.
        let mut check = String::from("mkdir -p /mnt\n");
        for (k, c) in done.iter().enumerate() {
            let dev = format!("vd{}", char::from(b'a' + k as u8));
            let _ = writeln!(check, "if mount -t ext4 /dev/{dev} /mnt; then");
            for f in &c.synced {
                let _ = writeln!(check, "  cmp -s /payload /mnt/{f} || echo \"BAD {dev} {f}\"");
            }
            let _ = writeln!(check, "  umount /mnt && echo '=== replayed {dev}'\nfi");
        }
        std::fs::write(extra.join("check.sh"), &check).map_err(|e| format!("{e}"))?;
        let initrd2 = initramfs::make(root, &build::out_dir(), Some(&extra))?;
        let images: Vec<&Path> = done.iter().map(|c| c.img.as_path()).collect();
        let b = qemu::Boot {
            image: qemu::Image::Kernel {
                elf: elf.to_path_buf(),
                cmdline: usertest::shell_cmdline_via("", None, "sh /check.sh")?,
                initrd: Some(initrd2),
            },
            smp,
            extra: drive_args(&images),
        };
        let log = work.join("replay.log");
        let replay = qemu::run_captured(&b, Duration::from_secs(300), &log)?;
        let rout = replay.output.replace('\r', "");
        for (k, c) in done.iter().enumerate() {
            let dev = format!("vd{}", char::from(b'a' + k as u8));
            let replayed = rout.contains(&format!("ext4 {dev}: journal replayed"));
            kiln_replays += u32::from(replayed);
            let img_s = c.img.to_str().unwrap_or("");
            let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", img_s])?;
            let ok = rout.contains(&format!("=== replayed {dev}\n"))
                && !rout.contains(&format!("BAD {dev} "))
                && usertest::frame_ownership_errors(&rout).is_none()
                && clean;
            let what = format!(
                "power cut {}: Kiln mounts the image ({}), fsync'd files intact, e2fsck -fn clean",
                c.index + 1,
                if replayed { "replaying the journal" } else { "journal empty" }
            );
            if ok {
                passed += 1;
                println!("  ok    {what}");
                let _ = std::fs::remove_file(&c.img);
                let _ = std::fs::remove_file(work.join(format!("cut{}.log", c.index)));
            } else {
                failed += 1;
                println!("  FAIL  {what} (image {}, {}):\n{fsck}", c.img.display(), log.display());
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "  power cuts: {cuts} in {secs:.0} s ({:.1} s each); {fsyncs} fsyncs checked; the journal held a transaction at {journal_full} cuts, Kiln replayed one at {kiln_replays}",
        secs / f64::from(cuts.max(1))
    );
    let _ = std::fs::remove_file(&template);
    Ok((passed, failed))
}
