//! The storage stage: a virtio-blk disk made by the host's mkfs.ext4 -d,
//! read back in Kiln identically; a tree Kiln writes on it (many files,
//! deep directories, symlinks, renames, a large sparse file), which the
//! host's `e2fsck -fn` must find clean and `debugfs` must read back; and
//! the file tests of `user/tests` run again with /tmp on an ext4 disk,
//! their output compared with the host's (whose /tmp is ext4 too). The
//! tree and one power cut run again on an NVMe disk (`/dev/nvme0n1`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::{build, initramfs, qemu, usertest, Result};

/// Files Kiln writes in the `kw` folder.
const KILN_FILES: u32 = 300;
/// The deep tree Kiln writes in `kw/t`: `DEEP_A` x `DEEP_B` leaf folders,
/// each five levels down, with `DEEP_FILES` small files, one larger file
/// (copied from the host's `big`), a hard link and a symlink; one file of
/// each leaf is chmod 600, one is renamed into the next leaf's parent.
const DEEP_A: u32 = 10;
const DEEP_B: u32 = 6;
const DEEP_FILES: u32 = 50;
/// Folders in the one chain of nested folders under `kw/t/deep`.
const DEEP_CHAIN: u32 = 100;
const SPARSE_SIZE: u64 = 5_000_000_001;

/// The listing of Kiln's deep tree, made by the same commands in Kiln (on
/// the mount) and on the host (in the folder `debugfs rdump` made, which
/// keeps modes, owners and mtimes): md5 of every file, then mode, owner,
/// size and mtime of every file and folder (a folder's size is the file
/// system's own, so not compared), then symlink targets.
const TREE_LISTING: &str = "export LC_ALL=C; \
     find . -type f | sort | xargs md5sum; \
     find . -type f | sort | xargs stat -c '%a %u %g %s %Y %n'; \
     find . -type d | sort | xargs stat -c '%a %u %g %Y %n'; \
     find . -type l | sort | while read l; do echo \"$l -> $(readlink $l)\"; done";

/// The same listing, made by the same commands, on the host (in the source
/// folder) and in Kiln (on the mount): md5 of every file, symlink targets.
const LISTING: &str = "find . -path ./lost+found -prune -o -type f -print | sort | xargs md5sum; \
     find . -type l | sort | while read l; do echo \"$l -> $(readlink $l)\"; done";

fn sh(dir: &Path, script: &str) -> Result<String> {
    let out = Command::new("sh").arg("-c").arg(script).current_dir(dir).output().map_err(|e| format!("sh: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn tool(args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// The host-written tree: files of several sizes, nested folders, symlinks.
fn make_source(src: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(src);
    let io = |e: std::io::Error| format!("storage source tree: {e}");
    for d in 0..5 {
        let dir = src.join(format!("d{d}/sub/deeper"));
        std::fs::create_dir_all(&dir).map_err(io)?;
        for f in 0..20u32 {
            let len = (f as usize * 1531 + d * 97) % 20000;
            let body: Vec<u8> = (0..len).map(|i| (i as u32 * 31 + f * 7 + d as u32) as u8).collect();
            std::fs::write(src.join(format!("d{d}/f{f}")), &body).map_err(io)?;
        }
        std::fs::write(dir.join("leaf"), format!("leaf {d}\n")).map_err(io)?;
    }
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(src.join("big"), big).map_err(io)?;
    std::fs::write(src.join("empty"), b"").map_err(io)?;
    std::os::unix::fs::symlink("d0/f1", src.join("link")).map_err(io)?;
    std::os::unix::fs::symlink("../../big", src.join("d1/sub/up")).map_err(io)?;
    Ok(())
}

/// The disk a bus shows in Kiln, and QEMU's name for the bus.
#[derive(Clone, Copy)]
pub struct Bus {
    pub qemu: &'static str,
    pub device: &'static str,
}

pub const VIRTIO: Bus = Bus { qemu: "virtio", device: "/dev/vda" };
pub const NVME: Bus = Bus { qemu: "nvme", device: "/dev/nvme0n1" };

fn kiln_script(bus: Bus) -> String {
    format!(
        "mkdir -p /mnt && mount -t ext4 {} /mnt || exit 1\n\
         cd /mnt\n\
         echo '=== read'\n\
         {LISTING}\n\
         mkdir -p kw/a/b/c/d/e/f/g/h\n\
         i=0; while [ $i -lt {KILN_FILES} ]; do echo \"kiln file $i\" > kw/f$i; i=$((i+1)); done\n\
         ln -s f1 kw/s1; ln -s ../big kw/s2\n\
         mkdir -p kw/t && cd kw/t\n\
         a=0; while [ $a -lt {DEEP_A} ]; do b=0; while [ $b -lt {DEEP_B} ]; do\n\
           d=a$a/b$b/c/d/e; mkdir -p $d; i=0\n\
           while [ $i -lt {DEEP_FILES} ]; do echo \"tree $a $b $i\" > $d/f$i; i=$((i+1)); done\n\
           dd if=/mnt/big of=$d/big bs=1k count=$((a*16+b*3+1)) 2>/dev/null\n\
           chmod 600 $d/f0; ln $d/f2 $d/hard; ln -s f1 $d/link; mv $d/f3 a$a/b$b/c/d/moved\n\
           b=$((b+1)); done; chmod 700 a$a/b0; a=$((a+1)); done\n\
         rm a0/b0/c/d/e/f4; mkdir a9/b5/c/gone a9/b5/c/d/empty; rmdir a9/b5/c/gone\n\
         p=deep; j=0; while [ $j -lt {DEEP_CHAIN} ]; do p=$p/l$j; j=$((j+1)); done; mkdir -p $p; echo bottom > $p/file\n\
         echo '=== deep'\n\
         {TREE_LISTING}\n\
         echo '=== write'\n\
         cd /mnt\n\
         dd if=/dev/urandom of=kw/a/b/c/d/e/f/g/h/rand bs=4k count=100 2>/dev/null\n\
         dd if=/dev/zero of=kw/sparse bs=1 count=1 seek={} 2>/dev/null\n\
         mv kw/f5 kw/a/moved; rm kw/f6; mv kw/f7 kw/f8\n\
         echo \"rand $(md5sum < kw/a/b/c/d/e/f/g/h/rand)\"\n\
         ls -l kw/sparse | awk '{{print \"sparse\", $5}}'\n\
         df -k /mnt | tail -1 | awk '{{print \"df\", $2}}'\n\
         cd /; sync; umount /mnt && echo '=== unmounted'\n",
        bus.device,
        SPARSE_SIZE - 1
    )
}

fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let start = format!("=== {name}\n");
    let Some(i) = out.find(&start) else { return "" };
    let rest = &out[i + start.len()..];
    &rest[..rest.find("=== ").unwrap_or(rest.len())]
}

/// The user tests run again on an ext4 /tmp (fs_dir reads an unlinked
/// file through an open descriptor: an orphan inode; and swaps names with
/// RENAME_EXCHANGE).
const FILE_TESTS: &[&str] = &[
    "fs_basic",
    "fs_meta",
    "fs_fd",
    "fs_dir",
    "fs_special",
    "xattr",
    "pagecache",
    "direct",
    "falloc_ext4",
    "seek_hole",
];

/// What `fs_special keep /tmp/keep` leaves in Kiln, as the host's debugfs
/// must read it from the image: (name, lines `stat` must print).
const KEPT_SPECIAL: &[(&str, &[&str])] = &[
    ("fifo", &["Type: FIFO    Mode:  0640"]),
    ("sock", &["Type: socket    Mode:  0755"]),
    ("null", &["Type: character special    Mode:  0644", "Device major/minor number: 01:03 (hex 01:03)"]),
    ("big", &["Type: character special    Mode:  0600", "Device major/minor number: 300:70000 (hex 12c:11170)"]),
    ("blk", &["Type: block special    Mode:  0600", "Device major/minor number: 240:01 (hex f0:01)"]),
    ("whiteout", &["Type: character special    Mode:  0000", "Device major/minor number: 00:00 (hex 00:00)"]),
    ("moved", &["Type: regular    Mode:  0644", "Size: 5"]),
];

/// A stage part's checks, each printed as `  ok` or `  FAIL` with its
/// detail, counted for the stage's totals.
#[derive(Default)]
pub struct Checks {
    passed: u64,
    failed: u64,
}

impl Checks {
    pub fn check(&mut self, ok: bool, what: &str, detail: &str) {
        if ok {
            self.passed += 1;
            println!("  ok    {what}");
        } else {
            self.failed += 1;
            println!("  FAIL  {what}\n{detail}");
        }
    }

    /// (passed, failed).
    pub fn totals(&self) -> (u64, u64) {
        (self.passed, self.failed)
    }
}

/// Boots Kiln with `script` and the disk `img` on `bus`, 512 MiB of RAM.
#[allow(clippy::too_many_arguments)]
fn boot(
    root: &Path,
    elf: &Path,
    smp: u32,
    img: &str,
    bus: Bus,
    script: &str,
    work: &Path,
    name: &str,
) -> Result<qemu::Captured> {
    boot_sized(root, elf, smp, img, bus, script, work, name, "512M", Duration::from_secs(300))
}

/// [`boot`] with the guest's RAM and time limit given.
#[allow(clippy::too_many_arguments)]
fn boot_sized(
    root: &Path,
    elf: &Path,
    smp: u32,
    img: &str,
    bus: Bus,
    script: &str,
    work: &Path,
    name: &str,
    mem: &str,
    limit: Duration,
) -> Result<qemu::Captured> {
    let boot = boot_config(root, elf, smp, img, bus, script, work, mem)?;
    qemu::run_captured(&boot, limit, &work.join(name))
}

/// The machine [`boot_sized`] starts: Kiln running `script` from its
/// initramfs, with the disk `img` on `bus` and `mem` of RAM.
#[allow(clippy::too_many_arguments)]
pub(crate) fn boot_config(
    root: &Path,
    elf: &Path,
    smp: u32,
    img: &str,
    bus: Bus,
    script: &str,
    work: &Path,
    mem: &str,
) -> Result<qemu::Boot> {
    let extra = work.join("extra");
    let _ = std::fs::remove_dir_all(&extra);
    std::fs::create_dir_all(&extra).map_err(|e| format!("{e}"))?;
    std::fs::write(extra.join("storage.sh"), script).map_err(|e| format!("{e}"))?;
    let initrd = initramfs::make(root, &build::out_dir(), Some(&extra))?;
    Ok(qemu::Boot {
        image: qemu::Image::Kernel {
            elf: elf.to_path_buf(),
            cmdline: usertest::shell_cmdline_via("", None, "sh /storage.sh")?,
            initrd: Some(initrd),
        },
        smp,
        extra: [
            vec!["-m".to_string(), mem.to_string()],
            if qemu::iommu_from_env() { qemu::iommu_args() } else { Vec::new() },
            qemu::disk_args(img, bus.qemu)?,
        ]
        .concat(),
    })
}

pub(crate) fn mkfs(img: &str, src: Option<&Path>) -> Result<()> {
    mkfs_sized(img, src, "64M")
}

fn mkfs_sized(img: &str, src: Option<&Path>, size: &str) -> Result<()> {
    mkfs_with(img, src, size, &[])
}

/// [`mkfs_sized`] with more mkfs.ext4 options (`extra`).
fn mkfs_with(img: &str, src: Option<&Path>, size: &str, extra: &[&str]) -> Result<()> {
    let _ = std::fs::remove_file(img);
    let (ok, text) = tool(&["truncate", "-s", size, img])?;
    if !ok {
        return Err(format!("truncate: {text}"));
    }
    let mut args = vec!["/sbin/mkfs.ext4", "-q", "-F"];
    args.extend(extra);
    if let Some(src) = src {
        args.extend(["-d", src.to_str().unwrap_or(".")]);
    }
    args.push(img);
    let (ok, text) = tool(&args)?;
    if !ok {
        return Err(format!("mkfs.ext4: {text}"));
    }
    Ok(())
}

/// The stage's parts; `STORAGE_ONLY=tree,files,cuts,nvme,hostile,fault,stall,rootdisk,pagecache,direct,ext2,options,linuxjournal,makedisk` runs
/// only those named.
pub fn run(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let only = std::env::var("STORAGE_ONLY").unwrap_or_default();
    let want = |part: &str| only.is_empty() || only.split(',').any(|p| p == part);
    let (mut passed, mut failed) = (0, 0);
    let mut add = |r: (u64, u64)| {
        passed += r.0;
        failed += r.1;
    };
    if want("tree") {
        add(tree(root, elf, smp, VIRTIO)?);
    }
    if want("files") {
        add(file_tests(root, elf, smp)?);
    }
    if want("cuts") {
        add(crate::crashtest::power_cuts(root, elf, smp, CUTS, VIRTIO)?);
    }
    if want("nvme") {
        println!("  on NVMe:");
        // Two CPUs, so ext4's requests go down two hardware queues.
        add(tree(root, elf, smp.max(2), NVME)?);
        add(crate::crashtest::power_cuts(root, elf, smp, NVME_CUTS, NVME)?);
    }
    if want("hostile") {
        add(crate::hostile::run(root, elf, smp, HOSTILE, 0x5EED_2000)?);
    }
    if want("fault") {
        add(crate::diskfault::run(root, elf, smp)?);
    }
    if want("stall") {
        add(crate::diskstall::run(root, elf, smp)?);
    }
    if want("rootdisk") {
        add(crate::diskstall::root_disk(root, elf, smp)?);
    }
    if want("pagecache") {
        add(page_cache(root, elf, smp)?);
        add(crate::writeback::background(root, elf, smp)?);
    }
    if want("direct") {
        add(direct(root, elf, smp)?);
    }
    if want("ext2") {
        add(ext2(root, elf, smp)?);
    }
    if want("options") {
        add(crate::mountopts::run(root, elf, smp)?);
    }
    if want("linuxjournal") {
        add(crate::linuxjournal::run(root, elf, smp)?);
    }
    if want("makedisk") {
        add(crate::makedisk::run(root)?);
    }
    Ok((passed, failed))
}

/// Power cuts in `make test` (`make crashtest N=...` for more).
const CUTS: u32 = 20;
/// Power cuts on NVMe in `make test` (the driver's FUA and flush paths).
const NVME_CUTS: u32 = 1;
/// Mutated images mounted in Kiln in `make test` (`make fuzz-ext4` for more).
const HOSTILE: u64 = 48;

/// The user file tests with /tmp on an ext4 disk, against the host.
fn file_tests(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let img = work.join("tmp.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    // 4 KiB blocks, as the host's /tmp has (a 64 MiB image would get 1
    // KiB ones): block counts after fallocate's punches and extent tree
    // blocks then compare with Linux's.
    mkfs_with(&img_s, None, "64M", &["-b", "4096"])?;
    let mut script = String::from("mount -t ext4 /dev/vda /tmp || exit 1\n");
    for t in FILE_TESTS {
        let _ = writeln!(script, "echo '=== {t}'; /t/{t}");
    }
    script.push_str("/t/fs_special keep /tmp/keep\n");
    script.push_str("cd /; umount /tmp && echo '=== unmounted'\n");
    let run = boot(root, elf, smp, &img_s, VIRTIO, &script, &work, "kiln-files.log")?;
    let out = run.output.replace('\r', "");
    let (mut passed, mut failed) = (0, 0);
    for t in FILE_TESTS {
        let host = Command::new(build::repo_root().join("build/user/t").join(t))
            .current_dir("/")
            .output()
            .map_err(|e| format!("host {t}: {e}"))?;
        let expected = String::from_utf8_lossy(&host.stdout).into_owned();
        let got = section(&out, t);
        if !expected.is_empty() && got == expected {
            passed += 1;
            println!("  ok    {t} on an ext4 /tmp: identical to the host");
        } else {
            failed += 1;
            println!("  FAIL  {t} on an ext4 /tmp differs from the host:");
            for (e, g) in expected.lines().zip(got.lines()).filter(|(e, g)| e != g).take(5) {
                println!("        host: {e}\n        kiln: {g}");
            }
            if expected.lines().count() != got.lines().count() {
                println!("        {} lines on the host, {} in Kiln", expected.lines().count(), got.lines().count());
            }
        }
    }
    let mut wrong = String::new();
    for (name, want) in KEPT_SPECIAL {
        let (_, stat) = tool(&["/sbin/debugfs", "-R", &format!("stat /keep/{name}"), &img_s])?;
        for w in want.iter().filter(|w| !stat.contains(*w)) {
            let _ = writeln!(wrong, "        /keep/{name}: no \"{w}\" in debugfs stat");
        }
    }
    if wrong.is_empty() {
        passed += 1;
        println!("  ok    debugfs reads Kiln's FIFO, socket, char and block nodes (1:3, 300:70000, 240:1) and whiteout with their types and numbers");
    } else {
        failed += 1;
        println!("  FAIL  special files on the image:\n{wrong}");
    }
    let unmounted = out.contains("=== unmounted");
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    if unmounted && clean {
        passed += 1;
        println!("  ok    e2fsck -fn clean after the file tests");
    } else {
        failed += 1;
        println!("  FAIL  after the file tests: unmounted {unmounted}, e2fsck:\n{fsck}");
    }
    Ok((passed, failed))
}

/// Host-written tree read in Kiln; Kiln-written tree checked by the host.
fn tree(root: &Path, elf: &Path, smp: u32, bus: Bus) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let src = work.join("src");
    make_source(&src)?;
    let img = work.join("disk.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    mkfs(&img_s, Some(&src))?;
    let log_name = format!("kiln-tree-{}.log", bus.qemu);
    let run = boot(root, elf, smp, &img_s, bus, &kiln_script(bus), &work, &log_name)?;
    let log = work.join(&log_name);
    let out = run.output.replace('\r', "");
    let mut passed = 0;
    let mut failed = 0;
    let mut check = |ok: bool, what: &str, detail: &str| {
        if ok {
            passed += 1;
            println!("  ok    {what}");
        } else {
            failed += 1;
            println!("  FAIL  {what}\n{detail}");
        }
    };
    check(!run.timed_out, "Kiln finished in time", &log.display().to_string());
    let expected = sh(&src, LISTING)?;
    let got = section(&out, "read");
    check(
        !expected.is_empty() && got == expected,
        "the host-written tree reads back identically in Kiln (md5 of every file, symlinks)",
        &format!("expected:\n{expected}\ngot:\n{got}"),
    );
    check(out.contains("=== unmounted"), "Kiln wrote its tree and unmounted", &log.display().to_string());
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    check(clean, "host e2fsck -fn finds the image Kiln wrote clean", &fsck);
    let written = section(&out, "write");
    let cat = |path: &str| -> Result<String> {
        let out = Command::new("/sbin/debugfs")
            .args(["-R", &format!("cat {path}"), &img_s])
            .output()
            .map_err(|e| format!("debugfs: {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let mut all_files = true;
    let mut first_bad = String::new();
    for i in 0..KILN_FILES {
        let want = match i {
            5..=7 => continue,
            8 => "kiln file 7\n".to_string(),
            _ => format!("kiln file {i}\n"),
        };
        let got = cat(&format!("/kw/f{i}"))?;
        if !got.ends_with(&want) {
            all_files = false;
            let _ = write!(first_bad, "/kw/f{i}: {got:?}");
            break;
        }
    }
    check(all_files, &format!("debugfs reads back Kiln's {} small files", KILN_FILES - 3), &first_bad);
    let dump = work.join("kwdump");
    let _ = std::fs::remove_dir_all(&dump);
    std::fs::create_dir_all(&dump).map_err(|e| format!("{}: {e}", dump.display()))?;
    let (_, rdump) = tool(&["/sbin/debugfs", "-R", &format!("rdump /kw/t {}", dump.display()), &img_s])?;
    let host_tree = sh(&dump.join("t"), TREE_LISTING)?;
    let _ = std::fs::remove_dir_all(&dump);
    let kiln_tree = section(&out, "deep");
    let files = host_tree.lines().filter(|l| l.len() > 32 && l.as_bytes()[32] == b' ').count();
    check(
        files >= 3000 && kiln_tree == host_tree,
        &format!(
            "debugfs rdump of Kiln's {files}-file tree ({} folders {} deep, a {}-folder chain) matches Kiln's own listing: \
             md5 of every file, mode, owner, size and mtime of every file and folder, symlinks",
            DEEP_A * DEEP_B,
            5,
            DEEP_CHAIN
        ),
        &format!("rdump: {rdump}\nhost {} lines, Kiln {} lines; first difference:\n{}", host_tree.lines().count(),
            kiln_tree.lines().count(),
            host_tree.lines().zip(kiln_tree.lines()).find(|(h, k)| h != k).map(|(h, k)| format!("host {h}\nkiln {k}")).unwrap_or_default()),
    );
    let (_, hard) = tool(&["/sbin/debugfs", "-R", "stat /kw/t/a4/b2/c/d/e/hard", &img_s])?;
    check(hard.contains("Links: 2"), "debugfs: Kiln's hard link (2 links)", &hard);
    let moved = cat("/kw/a/moved")?;
    check(moved.ends_with("kiln file 5\n"), "debugfs: the file renamed across directories", &moved);
    let (_, gone) = tool(&["/sbin/debugfs", "-R", "stat /kw/f6", &img_s])?;
    check(gone.contains("not found"), "debugfs: the unlinked file is gone", &gone);
    let (_, link) = tool(&["/sbin/debugfs", "-R", "stat /kw/s2", &img_s])?;
    check(link.contains("Fast link dest: \"../big\""), "debugfs: Kiln's symlink", &link);
    let (_, sparse) = tool(&["/sbin/debugfs", "-R", "stat /kw/sparse", &img_s])?;
    check(
        sparse.contains(&format!("Size: {SPARSE_SIZE}")) && written.contains(&format!("sparse {SPARSE_SIZE}")),
        "a 5 GB sparse file on a 64 MiB disk (size in Kiln and debugfs)",
        &sparse,
    );
    let dump = work.join("rand");
    let _ = std::fs::remove_file(&dump);
    tool(&["/sbin/debugfs", "-R", &format!("dump /kw/a/b/c/d/e/f/g/h/rand {}", dump.display()), &img_s])?;
    let host_md5 = sh(&work, "md5sum < rand")?;
    check(
        !host_md5.is_empty() && written.contains(&format!("rand {host_md5}")),
        "400 KiB of random data, 8 folders deep: same md5 in Kiln and from debugfs",
        &format!("host {host_md5}\nKiln {written}"),
    );
    Ok((passed, failed))
}

/// What Kiln writes on the ext2 volume: 300 KiB in a new folder (past the
/// 12 direct and 256 single-indirect blocks of a 1 KiB-block file: a
/// double-indirect map), a line, a rename across folders and an unlink.
const EXT2_SCRIPT: &str = "mkdir -p /mnt && mount -t ext2 /dev/vda /mnt || exit 1\n\
     grep ' /mnt ' /proc/mounts | sed 's/^/mounts: /'\n\
     cd /mnt\n\
     echo '=== read'\n\
     LISTING\n\
     echo '=== write'\n\
     mkdir kdir && echo 'written by kiln' > kiln-file\n\
     dd if=/dev/urandom of=kdir/big bs=1k count=300 2>/dev/null\n\
     mv d1/f2 kdir/f2; rm d0/f3\n\
     echo \"big $(md5sum < kdir/big)\"\n\
     cd /; umount /mnt && echo '=== unmounted'\n";

/// A clean ext2 volume made by the host's `mkfs.ext2 -d` from the source
/// tree: Kiln mounts it read-write (`mount -t ext2`; /proc/mounts says
/// so), reads the tree back identically, writes on it, and the host's
/// e2fsck finds it clean, still ext2 (no journal or extents added), with
/// Kiln's files in it (debugfs).
fn ext2(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let src = work.join("src");
    make_source(&src)?;
    let img = work.join("ext2.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let _ = std::fs::remove_file(&img);
    let (ok, text) = tool(&["truncate", "-s", "64M", &img_s])?;
    let (ok2, text2) = tool(&["/sbin/mkfs.ext2", "-q", "-F", "-d", src.to_str().unwrap_or("."), &img_s])?;
    if !ok || !ok2 {
        return Err(format!("mkfs.ext2: {text}{text2}"));
    }
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);
    let script = EXT2_SCRIPT.replace("LISTING", LISTING);
    let run = boot(root, elf, smp, &img_s, VIRTIO, &script, &work, "kiln-ext2.log")?;
    let out = run.output.replace('\r', "");
    check(
        out.lines().any(|l| l.trim() == "mounts: /dev/vda /mnt ext2 rw,relatime 0 0"),
        "mount -t ext2: read-write, /proc/mounts 'ext2 rw,relatime' as Linux",
        &out.lines().filter(|l| l.starts_with("mounts:")).collect::<Vec<_>>().join("\n"),
    );
    let expected = sh(&src, LISTING)?;
    let got = section(&out, "read");
    check(
        !expected.is_empty() && got == expected,
        "the tree mkfs.ext2 -d wrote reads back identically in Kiln (md5 of every file, symlinks)",
        &format!("expected:\n{expected}\ngot:\n{got}"),
    );
    check(out.contains("=== unmounted"), "Kiln wrote on the ext2 volume and unmounted", "kiln-ext2.log");
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    check(clean, "host e2fsck -fn finds the ext2 volume Kiln wrote clean", &fsck);
    let (_, head) = tool(&["/sbin/dumpe2fs", "-h", &img_s])?;
    let features = head.lines().find(|l| l.starts_with("Filesystem features:")).unwrap_or("").to_string();
    check(
        !features.is_empty() && !features.contains("has_journal") && !features.contains("extent"),
        "still ext2 after Kiln's writes: no journal or extents added (dumpe2fs)",
        &features,
    );
    let line = debugfs_cat(&img_s, "/kiln-file")?;
    let moved = debugfs_cat(&img_s, "/kdir/f2")?;
    let source = std::fs::read(src.join("d1/f2")).map_err(|e| format!("{e}"))?;
    let (_, gone) = tool(&["/sbin/debugfs", "-R", "stat /d0/f3", &img_s])?;
    check(
        line == b"written by kiln\n" && moved == source && gone.contains("not found"),
        "debugfs: Kiln's new file, the file it moved across folders, the one it removed gone",
        &format!(
            "kiln-file {:?}, moved {} bytes of {}, f3: {gone}",
            String::from_utf8_lossy(&line),
            moved.len(),
            source.len()
        ),
    );
    let big = debugfs_cat(&img_s, "/kdir/big")?;
    let dump = work.join("ext2-big");
    std::fs::write(&dump, &big).map_err(|e| format!("{e}"))?;
    let host_md5 = sh(&work, "md5sum < ext2-big")?;
    let _ = std::fs::remove_file(&dump);
    let (_, blocks) = tool(&["/sbin/debugfs", "-R", "stat /kdir/big", &img_s])?;
    check(
        big.len() == 300 * 1024
            && section(&out, "write").contains(&format!("big {host_md5}"))
            && blocks.contains("(DIND)"),
        "300 KiB through a double-indirect map: same md5 in Kiln and from debugfs",
        &format!("{} bytes, host md5 {host_md5}\n{blocks}", big.len()),
    );
    let _ = std::fs::remove_file(&img);
    Ok(checks.totals())
}

/// Bytes the memory-pressure run writes: three times the guest's RAM.
const PRESSURE_MIB: u64 = 192;
const PRESSURE_RAM: &str = "64M";

/// The page cache against the image: a file written only through a shared
/// mapping and msync(MS_SYNC), with no munmap, close or umount after it,
/// is on the image (debugfs); and a machine with 64 MiB writes 192 MiB to
/// one ext4 file (dirty limits throttle the writer, reclaim drops clean
/// pages), stays up, reads it back with the right md5 (from the disk: it
/// cannot all be cached), and the host reads the same bytes.
fn page_cache(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let img = work.join("cache.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);
    mkfs(&img_s, None)?;
    let script = "mkdir -p /mnt && mount -t ext4 /dev/vda /tmp || exit 1\n/t/pagecache keep\n";
    let run = boot(root, elf, smp, &img_s, VIRTIO, script, &work, "kiln-kept.log")?;
    let out = run.output.replace('\r', "");
    // What msync, O_SYNC and O_DSYNC promise is durability after
    // recovery: the metadata may still be in the journal only (the
    // checkpoint is lazy, as jbd2's), so the host replays it first, as a
    // mount would.
    let (_, replay) = tool(&["/sbin/e2fsck", "-E", "journal_only", "-y", &img_s])?;
    println!("  (host e2fsck -E journal_only: {})", replay.lines().next().unwrap_or("nothing to replay"));
    let got = Command::new("/sbin/debugfs")
        .args(["-R", "cat /mmap-kept", &img_s])
        .output()
        .map_err(|e| format!("debugfs: {e}"))?
        .stdout;
    let want: Vec<u8> = (0..3 * 4096).map(|i| b'a' + (i % 26) as u8).collect();
    check(
        out.contains("kept") && got == want,
        "a MAP_SHARED write + msync(MS_SYNC) reached the image (journal replayed, debugfs; no munmap, close or umount after it)",
        &format!("Kiln said kept: {}, debugfs read {} bytes", out.contains("kept"), got.len()),
    );
    for (name, word) in [("osync-kept", "sync"), ("odsync-kept", "dsync")] {
        let got = Command::new("/sbin/debugfs")
            .args(["-R", &format!("cat /{name}"), &img_s])
            .output()
            .map_err(|e| format!("debugfs: {e}"))?
            .stdout;
        let want: String = (0..5).map(|i| format!("{word} line {i}\n")).collect();
        check(
            out.contains("kept") && got == want.as_bytes(),
            &format!(
                "writes to an {} file reached the image with no fsync, close or umount (journal replayed, debugfs)",
                if word == "sync" { "O_SYNC" } else { "O_DSYNC" }
            ),
            &format!("debugfs read {:?}", String::from_utf8_lossy(&got)),
        );
    }
    mkfs_sized(&img_s, None, "320M")?;
    // The sampler watches Dirty while the writer runs, at dirty_ratio 20
    // (the default) and then 5 (a 48 MiB file, after a sync: the first
    // file's last pages, under the old limits, would be counted too).
    let script = format!(
        "mount -t ext4 /dev/vda /tmp || exit 1\n\
         {}\
         rm -f /done; sample 20 &\n\
         yes 0123456789abcdef | head -c {} > /tmp/big && echo '=== written'\n\
         touch /done; wait; sync\n\
         echo 5 > /proc/sys/vm/dirty_ratio\n\
         rm -f /done; sample 5 &\n\
         yes 5 | head -c {} > /tmp/five\n\
         touch /done; wait; rm /tmp/five; echo 20 > /proc/sys/vm/dirty_ratio\n\
         grep -E '^(MemTotal|Dirty|Writeback):' /proc/meminfo\n\
         echo \"md5 $(md5sum < /tmp/big)\"\n\
         cd /; umount /tmp && echo '=== unmounted'\n",
        crate::writeback::SAMPLER,
        PRESSURE_MIB << 20,
        48 << 20
    );
    let run = boot_sized(
        root,
        elf,
        smp,
        &img_s,
        VIRTIO,
        &script,
        &work,
        "kiln-pressure.log",
        PRESSURE_RAM,
        Duration::from_secs(600),
    )?;
    let out = run.output.replace('\r', "");
    let pattern = b"0123456789abcdef\n";
    let mut data = Vec::with_capacity((PRESSURE_MIB << 20) as usize);
    while data.len() < (PRESSURE_MIB << 20) as usize {
        data.extend_from_slice(pattern);
    }
    data.truncate((PRESSURE_MIB << 20) as usize);
    std::fs::write(work.join("big-expected"), &data).map_err(|e| format!("{e}"))?;
    let want_md5 = sh(&work, "md5sum < big-expected")?;
    let _ = std::fs::remove_file(work.join("big-expected"));
    check(
        out.contains("=== written") && out.contains("=== unmounted") && out.contains(&format!("md5 {want_md5}")),
        &format!("{PRESSURE_MIB} MiB written to an ext4 file with {PRESSURE_RAM} of RAM: Kiln stays up, reads the right md5 back"),
        &format!("expected md5 {want_md5}, see kiln-pressure.log"),
    );
    crate::writeback::ceiling_checks(&out, &mut check);
    let dump = work.join("big-dump");
    let _ = std::fs::remove_file(&dump);
    tool(&["/sbin/debugfs", "-R", &format!("dump /big {}", dump.display()), &img_s])?;
    let host_md5 = sh(&work, "md5sum < big-dump")?;
    let _ = std::fs::remove_file(&dump);
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    check(host_md5 == want_md5 && clean, "the host reads the same bytes (debugfs) and e2fsck -fn is clean", &fsck);
    let _ = std::fs::remove_file(&img);
    Ok(checks.totals())
}

/// `debugfs -R "cat path"` of `img`: the file's bytes.
pub(crate) fn debugfs_cat(img: &str, path: &str) -> Result<Vec<u8>> {
    Ok(Command::new("/sbin/debugfs")
        .args(["-R", &format!("cat {path}"), img])
        .output()
        .map_err(|e| format!("debugfs: {e}"))?
        .stdout)
}

/// `direct blockdev /dev/vda`'s answers: the host's on a loop device
/// (Linux 6.18), except for the buffer addresses at +1 and +256, which
/// Linux 6.1 refuses on virtio-blk (its DMA alignment is 511; the host's
/// loop device asks none).
const BLOCKDEV_DIRECT: &str = "logical block size 512, size a multiple of 4096: 1
    pread 4096 at 0: 4096
    pread into buffer+1: -1 EINVAL
    pread into buffer+256: -1 EINVAL
    pread into buffer+512: 512
    pread length 100: -1 EINVAL
    pread length 1024: 1024
    pread at offset 100: -1 EINVAL
    pread at offset 512: 512
    pread at the end: 0
    pread at end+1: 0
    pread 4096 at end-512: 512
    pread 0 bytes into buffer+1: 0
    preadv, second segment at +100: -1 EINVAL
    preadv, both aligned: 1024
    preadv, second segment 300 bytes: -1 EINVAL
    buffered pread 100 at offset 100: 100
    pwrite from buffer+256: -1 EINVAL
    pwrite length 700: -1 EINVAL
    pwrite at offset end-4000: -1 EINVAL
    pwrite 4096 at end-4096: 4096
    pwrite 4096 at end-512: 512
    pwrite at the end: -1 ENOSPC
    BLKDISCARD of the last 4 KiB: 0
    BLKDISCARD at a misaligned start: -1 EINVAL
    BLKDISCARD past the end: -1 EINVAL
    pwrite the last 4 KiB back: 4096
    fsync: 0
    read back 4096 at end-4096: 4096
    last 4 KiB unchanged: 1
    F_SETFL without O_DIRECT: 0
    then pread 100 at offset 100: 100
    F_SETFL O_DIRECT: 0
    then pread 100 at offset 100: -1 EINVAL";

/// O_DIRECT, pwritev2's RWF_DSYNC/RWF_SYNC and shared mappings on a full
/// disk, against the image. `direct align` shows Kiln's answer to a buffer
/// not aligned to 512 (Linux 6.1's EINVAL; the host's newer kernel is no
/// oracle for it). `direct cut` writes files with RWF_DSYNC, RWF_SYNC and
/// O_DIRECT + RWF_DSYNC, says `=== start` and waits: the host kills QEMU
/// then (a power cut: no fsync, close, sync or umount after the writes),
/// replays the journal and finds every byte with debugfs, e2fsck clean.
/// `direct full` on a 16 MiB disk: a store to a hole page of a MAP_SHARED
/// mapping once the disk is full gets SIGBUS (the fault reserves the
/// page's blocks, as ext4's page_mkwrite), a page stored to before keeps
/// its data through msync, and e2fsck finds the image clean.
fn direct(root: &Path, elf: &Path, smp: u32) -> Result<(u64, u64)> {
    let work = build::out_dir().join("storage");
    let img = work.join("direct.img");
    let img_s = img.to_str().ok_or("non-UTF-8 path")?.to_string();
    let mut checks = Checks::default();
    let mut check = |ok: bool, what: &str, detail: &str| checks.check(ok, what, detail);
    mkfs(&img_s, None)?;
    let script = "mount -t ext4 /dev/vda /tmp || exit 1\n/t/direct blockdev /dev/vda\n/t/direct align\n/t/direct cut\n";
    let machine = boot_config(root, elf, smp, &img_s, VIRTIO, script, &work, "512M")?;
    let (out, killed) = crate::crashtest::run_and_cut(&machine, Err(0), &work.join("kiln-direct-cut.log"))?;
    check(
        out.contains("align: read into buffer+1: -1 EINVAL")
            && out.contains("align: write from buffer+256: -1 EINVAL")
            && out.contains("align: read into buffer+512: 512"),
        "O_DIRECT on ext4: a buffer aligned to 512 is served, one at +1 or +256 is EINVAL (Linux 6.1)",
        &out.lines().filter(|l| l.starts_with("align:")).collect::<Vec<_>>().join("\n"),
    );
    let blockdev: Vec<&str> = out.lines().filter(|l| l.starts_with("blockdev:")).collect();
    let want: Vec<String> = BLOCKDEV_DIRECT.lines().map(|l| format!("blockdev: {}", l.trim())).collect();
    check(
        blockdev == want,
        "O_DIRECT on /dev/vda: address, offset and length must be 512-aligned (EINVAL), reads cut at the end, ENOSPC past it",
        &blockdev.join("\n"),
    );
    check(killed && out.contains("=== start"), "the machine was cut after the writes returned", "kiln-direct-cut.log");
    let (_, replay) = tool(&["/sbin/e2fsck", "-E", "journal_only", "-y", &img_s])?;
    println!("  (host e2fsck -E journal_only: {})", replay.lines().next().unwrap_or("nothing to replay"));
    for (name, word) in [("rwf-dsync-kept", "rwf-dsync"), ("rwf-sync-kept", "rwf-sync")] {
        let got = debugfs_cat(&img_s, &format!("/{name}"))?;
        let want: String = (0..5).map(|i| format!("{word} line {i}\n")).collect();
        check(
            got == want.as_bytes(),
            &format!("pwritev2 {} data on the image after a power cut, no fsync (debugfs)", word.to_uppercase()),
            &format!("debugfs read {:?}", String::from_utf8_lossy(&got)),
        );
    }
    let got = debugfs_cat(&img_s, "/direct-kept")?;
    let want: Vec<u8> = (0..3 * 4096usize).map(|i| (i * 13 + 42) as u8).collect();
    check(
        got == want,
        "O_DIRECT + RWF_DSYNC: 3 pages on the image after a power cut (debugfs)",
        &format!("debugfs read {} bytes", got.len()),
    );
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    check(clean, "e2fsck -fn clean after the cut and the replay", &fsck);

    mkfs_sized(&img_s, None, "16M")?;
    let script = "mount -t ext4 /dev/vda /tmp || exit 1\n/t/direct full\ncd /; umount /tmp && echo '=== unmounted'\n";
    let run = boot(root, elf, smp, &img_s, VIRTIO, script, &work, "kiln-direct-full.log")?;
    let out = run.output.replace('\r', "");
    let said = |l: &str| out.lines().any(|x| x.trim() == l);
    check(said("full: filler stopped with ENOSPC"), "a 16 MiB disk filled up to ENOSPC", "kiln-direct-full.log");
    check(
        said("full: store to hole page 2: SIGBUS"),
        "a store to a hole page of a MAP_SHARED mapping on the full disk: SIGBUS",
        &out.lines().filter(|l| l.starts_with("full:")).collect::<Vec<_>>().join("\n"),
    );
    check(
        said("full: store to page 0 again: no signal") && said("full: msync: 0") && out.contains("=== unmounted"),
        "the page stored to before the disk filled stays writable; msync and umount succeed",
        "kiln-direct-full.log",
    );
    let got = debugfs_cat(&img_s, "/full-map")?;
    let mut want = vec![b'p'; 4096];
    want[5] = b'P';
    want.resize(4 * 4096, 0);
    check(
        got == want,
        "its data is on the image, the refused page is zeros (debugfs)",
        &format!("{} bytes", got.len()),
    );
    let (clean, fsck) = tool(&["/sbin/e2fsck", "-fn", &img_s])?;
    check(clean, "e2fsck -fn clean after the full disk", &fsck);
    let _ = std::fs::remove_file(&img);
    Ok(checks.totals())
}
