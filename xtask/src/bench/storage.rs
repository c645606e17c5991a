//! `make bench`'s storage rows (issue 13, part 5): Kiln's ext4 against
//! Linux's on the same QEMU machine and the same disk model.
//!
//! One static program, `kstor` (user/bench/kstor.c), runs under both
//! kernels on a copy of one pristine image made by the host's
//! `mkfs.ext4`: sequential write and read of 256 MiB, 4 KiB random reads
//! cold and warm, 4 KiB append + fsync, create+write 4 KiB+close of 10,000
//! files then their unlink (LMbench `lat_fs`), and an untar of a
//! 5,000-file tree + sync with busybox tar. Each boot gets a fresh copy of
//! the image, which the host's `e2fsck -fn` checks afterwards and then
//! deletes. The machine is the main benchmark's fair one
//! (`guest::FAIR`); Linux loads virtio_blk and what it needs from the
//! initramfs (`/m`), where Kiln has its drivers built in.
//!
//! Boots: per disk bus and kernel, one under `-icount` and
//! `BENCH_STORAGE_RUNS` (default 3) under wall-clock TCG.
//! `STORAGE_ROWS=seq_read,rand_read_warm` runs only the rows named (and
//! those they need first, see kstor.c), for a quick loop. The report is
//! its own table (bench/results/storage.md and .json, and in
//! docs/performance.md between the storage markers); a full `make bench`
//! also puts the rows into the run's JSON under `"storage"`.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::guest::{self, Clock, Kernel, RunResult};
use super::report::{human, Cell};
use crate::{qemu, Result};

/// One row: its name in kstor's output, what one operation is, and the
/// goal (Kiln's time per operation at most `goal` × Linux's).
pub struct StorBench {
    pub name: &'static str,
    pub op: &'static str,
    /// Operations measured in MiB, shown as MB/s too.
    pub per_mib: bool,
    pub goal: f64,
}

const fn row(name: &'static str, op: &'static str, per_mib: bool, goal: f64) -> StorBench {
    StorBench { name, op, per_mib, goal }
}

/// Throughput rows: at Linux's throughput or better (time ratio ≤ 1.0);
/// fsync latency: ≤ 0.8 × Linux's. Same names and order as kstor.c.
pub const ROWS: &[StorBench] = &[
    row("seq_write", "write 256 MiB in 1 MiB writes + fsync (per MiB)", true, 1.0),
    row("seq_read", "read the 256 MiB back in 1 MiB reads, cold (per MiB)", true, 1.0),
    row("rand_read_cold", "pread 4 KiB at a random offset of the 256 MiB file, cold", false, 1.0),
    row("rand_read_warm", "the same 2,000 preads again, warm", false, 1.0),
    row("fsync_4k", "append 4 KiB + fsync", false, 0.8),
    row("create_4k", "create + write 4 KiB + close, 10,000 files in one directory (per file)", false, 1.0),
    row("unlink", "unlink of those files (per file)", false, 1.0),
    row("untar_sync", "busybox tar x of a 5,000-file tree (10 MB in 14 MB of tar) + sync (per tree)", false, 1.0),
];

/// The disk models; both are measured unless `BENCH_STORAGE_BUS` names
/// only one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bus {
    Virtio,
    Nvme,
}

impl Bus {
    pub fn name(self) -> &'static str {
        match self {
            Bus::Virtio => "virtio",
            Bus::Nvme => "nvme",
        }
    }

    /// The disk's node in the guest: Linux's names, which Kiln uses too.
    fn device(self) -> &'static str {
        match self {
            Bus::Virtio => "/dev/vda",
            Bus::Nvme => "/dev/nvme0n1",
        }
    }
}

/// Linux's virtio_blk and the modules it needs, in load order (Debian's
/// cloud kernel has ext4 and NVMe built in, virtio as modules).
const LINUX_MODULES: &[&str] = &[
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "drivers/block/virtio_blk.ko",
];

/// The image: big enough for the 256 MiB file, the 10,000 files, the tree
/// and a 16 MiB journal, small for the shared disk (a sparse file; a run
/// writes about 300 MiB of it).
const IMAGE_SIZE: &str = "512M";

/// Fixed so both kernels see byte-identical images from run to run
/// (Linux's htree hashes depend on the seed).
const IMAGE_UUID: &str = "6b696c6e-7374-6f72-6167-650000000001";

/// The storage rows' instruction clock: as the main rows' (1 ns per
/// instruction), but `sleep=on`. With `sleep=off` QEMU jumps an idle
/// guest's clock straight to its next timer, so a kernel waiting for the
/// disk is charged whatever its next timer happens to be (Linux, tickless
/// when idle, was charged 19.6 s per MiB written and 41 s per fsync; the
/// figures moved 10-100x between two boots). With `sleep=on` an idle guest's
/// clock runs at host speed: the figure is the kernel's instructions plus
/// the real time it waited for the device.
pub const ICOUNT: &str = "shift=0,align=off,sleep=on";

/// The untar tree: `t/dDD/fFF`, 50 folders of 100 files; kstor.c checks
/// sizes with the same formula.
pub const TREE_DIRS: u32 = 50;
pub const TREE_FILES: u32 = 100;

fn tree_size(d: u32, f: u32) -> usize {
    (((d * 100 + f) as u64 * 1237) % 4096) as usize
}

fn run_tool(c: &mut Command, what: &str) -> Result<String> {
    let out = c.output().map_err(|e| format!("{what}: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{what} failed ({}): {text}", out.status))
    }
}

/// tree.tar, ustar with fixed owners, times and order.
fn make_tree(work: &Path) -> Result<PathBuf> {
    let base = work.join("tree");
    let _ = fs::remove_dir_all(&base);
    let io = |e: std::io::Error| format!("storage tree: {e}");
    for d in 0..TREE_DIRS {
        let dir = base.join(format!("t/d{d:02}"));
        fs::create_dir_all(&dir).map_err(io)?;
        for f in 0..TREE_FILES {
            let body: Vec<u8> = (0..tree_size(d, f))
                .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789\n"[(i + f as usize) % 37])
                .collect();
            fs::write(dir.join(format!("f{f:02}")), body).map_err(io)?;
        }
    }
    let tar = work.join("tree.tar");
    run_tool(
        Command::new("tar")
            .args(["--format=ustar", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@1767225600", "--sort=name"])
            .arg("-cf")
            .arg(&tar)
            .arg("-C")
            .arg(&base)
            .arg("t"),
        "tar",
    )?;
    let _ = fs::remove_dir_all(&base);
    Ok(tar)
}

/// The storage initramfs: the bench guest's `/init`, `/b/kstor`, busybox,
/// `/tree.tar`, Linux's modules under `/m` (numbered in load order), and
/// `/mnt`.
fn initramfs(progs: &Path, out_dir: &Path, linux_version: &str, tar: &Path) -> Result<PathBuf> {
    let stage = guest::fresh_stage(out_dir, "bench-storage-root")?;
    guest::copy_into(&stage, &progs.join("init"), "init")?;
    guest::copy_into(&stage, &progs.join("kstor"), "b/kstor")?;
    guest::copy_into(&stage, Path::new("/bin/busybox"), "bin/busybox")?;
    std::os::unix::fs::symlink("busybox", stage.join("bin/sh")).map_err(|e| format!("symlink bin/sh: {e}"))?;
    guest::copy_into(&stage, tar, "tree.tar")?;
    for d in ["m", "mnt"] {
        fs::create_dir_all(stage.join(d)).map_err(|e| format!("create {d}: {e}"))?;
    }
    if !linux_version.is_empty() {
        for (i, m) in LINUX_MODULES.iter().enumerate() {
            let from = Path::new("/lib/modules").join(linux_version).join("kernel").join(m);
            let name = from.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            guest::copy_into(&stage, &from, &format!("m/{i}-{name}"))?;
        }
    }
    let archive = crate::initramfs::cpio(&[("", stage.as_path())])?;
    let path = out_dir.join("bench-storage-initramfs.cpio.gz");
    let file = fs::File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &archive).map_err(|e| format!("write {}: {e}", path.display()))?;
    gz.finish().map_err(|e| format!("write {}: {e}", path.display()))?;
    let _ = fs::remove_dir_all(&stage);
    Ok(path)
}

/// The pristine image: Debian's default ext4 features, inode tables and
/// journal written out now (`lazy_itable_init=0`): otherwise Linux's
/// ext4lazyinit thread would zero them during the benchmark, which Kiln
/// does not do.
fn pristine_image(path: &Path) -> Result<()> {
    let _ = fs::remove_file(path);
    run_tool(Command::new("truncate").args(["-s", IMAGE_SIZE]).arg(path), "truncate")?;
    run_tool(
        Command::new("/sbin/mkfs.ext4")
            .args(["-q", "-F", "-U", IMAGE_UUID, "-E"])
            .arg(format!("lazy_itable_init=0,lazy_journal_init=0,hash_seed={IMAGE_UUID}"))
            .arg(path)
            .env("E2FSPROGS_FAKE_TIME", "1767225600"),
        "mkfs.ext4",
    )?;
    Ok(())
}

/// What to boot for one run.
pub struct Setup<'a> {
    pub kiln_elf: &'a Path,
    pub linux: &'a Path,
    pub initrd: &'a Path,
    pub pristine: &'a Path,
    pub work: &'a Path,
    pub pct: u32,
    /// `STORAGE_ROWS`: only these kstor rows (comma-separated; the rows
    /// they need run too), for a quick loop on a few rows.
    pub rows: Option<String>,
    pub timeout: Duration,
}

/// One boot's results, and the host's verdict on the image it left.
pub struct Boot {
    pub run: RunResult,
    /// `e2fsck -fn` found the image clean.
    pub fsck_clean: bool,
}

impl Setup<'_> {
    pub fn boot(&self, kernel: Kernel, clock: Clock, bus: Bus, tag: &str, log: &Path) -> Result<Boot> {
        let mut args = format!("/b/kstor {} {}", bus.device(), self.pct);
        if let Some(rows) = &self.rows {
            args.push(' ');
            args.push_str(rows);
        }
        let (elf, cmdline) = match kernel {
            Kernel::Kiln => (self.kiln_elf, crate::usertest::init_cmdline("", &format!("/init {args}"))),
            Kernel::Linux => (
                self.linux,
                format!("console=ttyS0 quiet panic=-1 rdinit=/init {} -- {args}", guest::FAIR.linux_cmdline),
            ),
        };
        let img = self.work.join(format!("disk-{}-{}-{}.img", kernel.name(), bus.name(), clock.name()));
        run_tool(Command::new("cp").arg("--sparse=always").arg(self.pristine).arg(&img), "cp image")?;
        let img_s = img.to_str().ok_or("non-UTF-8 path")?;
        let mut extra = qemu::disk_args(img_s, bus.name())?;
        if clock == Clock::Icount {
            extra.extend(["-icount", ICOUNT, "-rtc", guest::ICOUNT_RTC].map(String::from));
        }
        let boot = qemu::Boot {
            image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(self.initrd.to_path_buf()) },
            smp: 1,
            extra,
        };
        let run = guest::run_boot(&boot, guest::FAIR.cpu, self.timeout, tag, log);
        let fsck = Command::new("/sbin/e2fsck").args(["-fn", img_s]).output();
        let _ = fs::remove_file(&img);
        let fsck_clean = fsck.map(|o| o.status.success()).unwrap_or(false);
        Ok(Boot { run: run?, fsck_clean })
    }
}

/// Per bus, per row: `[kiln, linux]` for each clock.
#[derive(Default, Clone, Debug)]
pub struct Figures {
    pub icount: [Cell; 2],
    pub wall: [Cell; 2],
}

pub struct Report {
    pub buses: Vec<(Bus, Option<String>)>,
    /// `rows[bus][row]`.
    pub rows: Vec<Vec<Figures>>,
    /// Boots whose image e2fsck did not find clean.
    pub unclean: Vec<String>,
    pub wall_runs: usize,
    pub pct: u32,
    /// Only some rows ran (`STORAGE_ROWS`): printed, not kept in
    /// bench/results or the docs.
    pub partial: bool,
}

fn ratio(c: &[Cell; 2]) -> Option<f64> {
    match (c[0].median(), c[1].median()) {
        (Some(k), Some(l)) if l > 0.0 => Some(k / l),
        _ => None,
    }
}

fn env_num(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| format!("{name}={v} is not a number")),
        _ => Ok(default),
    }
}

/// The buses to measure: `BENCH_STORAGE_BUS` (comma-separated), or
/// both; a bus not measured keeps its column with the reason.
fn buses() -> Result<Vec<(Bus, Option<String>)>> {
    let want = std::env::var("BENCH_STORAGE_BUS").unwrap_or_else(|_| "virtio,nvme".into());
    let mut out = Vec::new();
    for bus in [Bus::Virtio, Bus::Nvme] {
        let on = want.split(',').any(|w| w.trim() == bus.name());
        let why = (!on).then(|| "skipped: not in BENCH_STORAGE_BUS".to_string());
        out.push((bus, why));
    }
    Ok(out)
}

/// Runs every boot and collects the figures.
pub fn measure(root: &Path, kiln_elf: &Path, linux: &Path, pct: u32) -> Result<Report> {
    let out_dir = crate::build::out_dir();
    let work = out_dir.join("bench-storage");
    fs::create_dir_all(&work).map_err(|e| format!("create {}: {e}", work.display()))?;
    let progs = guest::build_programs(root)?;
    let tar = make_tree(&work)?;
    let initrd = initramfs(&progs, &out_dir, &guest::linux_version(linux), &tar)?;
    let pristine = work.join("pristine.img");
    pristine_image(&pristine)?;
    let setup = Setup {
        kiln_elf,
        linux,
        initrd: &initrd,
        pristine: &pristine,
        work: &work,
        pct,
        rows: std::env::var("STORAGE_ROWS").ok().filter(|r| !r.trim().is_empty()),
        timeout: Duration::from_secs(env_num("BENCH_TIMEOUT", 900)?),
    };
    let wall_runs = env_num("BENCH_STORAGE_RUNS", 3)? as usize;
    let buses = buses()?;
    let mut rows = vec![vec![Figures::default(); ROWS.len()]; buses.len()];
    let mut unclean = Vec::new();
    let result = (|| -> Result<()> {
        for (b, (bus, skipped)) in buses.iter().enumerate() {
            let mut record = |kernel: Kernel, clock: Clock, boot: Result<Boot>, what: &str| -> Result<()> {
                let k = if kernel == Kernel::Kiln { 0 } else { 1 };
                let (results, problem) = match boot {
                    Ok(boot) => {
                        if !boot.fsck_clean {
                            unclean.push(what.to_string());
                        }
                        (boot.run.results, boot.run.problem)
                    }
                    Err(e) => (Default::default(), Some(e)),
                };
                for (r, fig) in ROWS.iter().zip(rows[b].iter_mut()) {
                    let cell = if clock == Clock::Icount { &mut fig.icount[k] } else { &mut fig.wall[k] };
                    cell.add(results.get(r.name), problem.as_deref());
                }
                Ok(())
            };
            if let Some(why) = skipped {
                for kernel in [Kernel::Kiln, Kernel::Linux] {
                    for clock in [Clock::Icount, Clock::Wall] {
                        record(kernel, clock, Err(why.clone()), "")?;
                    }
                }
                continue;
            }
            // One boot at a time: each writes its own 512 MiB image, and
            // two at once would make the host's disk the bottleneck.
            let mut boots = vec![(Clock::Icount, 0)];
            boots.extend((1..=wall_runs).map(|i| (Clock::Wall, i)));
            for (clock, i) in boots {
                for kernel in [Kernel::Kiln, Kernel::Linux] {
                    let run = if i == 0 { clock.name().to_string() } else { format!("wall-{i}") };
                    let what = format!("{} {} {run}", kernel.name(), bus.name());
                    println!("bench storage: {what}");
                    let log = out_dir.join(format!("bench-storage-{}-{}-{run}.log", kernel.name(), bus.name()));
                    let boot = setup.boot(kernel, clock, *bus, &format!("storage {what}"), &log);
                    if let Ok(b) = &boot {
                        println!(
                            "bench storage: {what}: {:.0} s{}{}",
                            b.run.seconds,
                            b.run.problem.as_deref().map(|p| format!(" ({p})")).unwrap_or_default(),
                            if b.fsck_clean { "" } else { "; e2fsck -fn: NOT clean" }
                        );
                    }
                    record(kernel, clock, boot, &what)?;
                }
            }
        }
        Ok(())
    })();
    let _ = fs::remove_file(&pristine);
    let _ = fs::remove_file(&tar);
    result?;
    let partial = setup.rows.is_some();
    Ok(Report { buses, rows, unclean, wall_runs, pct, partial })
}

/// [`human`], with seconds for the whole-tree row.
fn time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else {
        human(ns)
    }
}

fn cell_text(c: &Cell, per_mib: bool, wall: bool) -> String {
    let Some(m) = c.median() else {
        let e = c.errors.first().map(String::as_str).unwrap_or("no result");
        return format!("n/a ({})", e.replace('|', "/").chars().take(60).collect::<String>());
    };
    let fmt = |ns: f64| {
        if per_mib {
            format!("{} ({:.0} MB/s)", time(ns), 1_048_576.0 / ns * 1e3)
        } else {
            time(ns)
        }
    };
    match (c.min(), c.max()) {
        (Some(lo), Some(hi)) if wall && c.values.len() > 1 => format!("{} ({}–{})", fmt(m), time(lo), time(hi)),
        _ => fmt(m),
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map(|r| format!("{r:.2}")).unwrap_or_else(|| "n/a".into())
}

fn goal_text(r: Option<f64>, goal: f64) -> &'static str {
    match r {
        Some(x) if x <= goal => "met",
        Some(_) => "**missed**",
        None => "n/a",
    }
}

/// The markdown table, one block of rows per bus.
pub fn markdown(report: &Report, header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{header}; QEMU TCG `-cpu {} -m 512M -smp 1`, Linux `{}`; a fresh copy of one {IMAGE_SIZE} ext4 image \
         (host mkfs.ext4, Debian 12 defaults) per boot, `cache=writeback`; 1 icount boot and {} wall-clock boot(s) \
         per kernel and bus; size {}%.\n",
        guest::FAIR.cpu,
        guest::FAIR.linux_cmdline,
        report.wall_runs,
        report.pct
    );
    s.push_str(
        "Time per operation; ratio = Kiln / Linux (below 1 = Kiln faster). goal: throughput at least Linux's \
         (ratio ≤ 1.00), fsync latency ≤ 0.80, judged on the wall-clock column (see Method: the icount column \
         does not measure I/O waits alike for both kernels).\n\n",
    );
    s.push_str(
        "| disk | benchmark | one operation | Kiln icount | Linux icount | ratio | Kiln wall | Linux wall | ratio | goal |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for ((bus, skipped), figs) in report.buses.iter().zip(&report.rows) {
        if let Some(why) = skipped {
            let _ = writeln!(s, "| {} | (all) | | {why} | | | | | | |", bus.name());
            continue;
        }
        for (r, f) in ROWS.iter().zip(figs) {
            let wall_ratio = ratio(&f.wall);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} (≤ {:.2}) |",
                bus.name(),
                r.name,
                r.op,
                cell_text(&f.icount[0], r.per_mib, false),
                cell_text(&f.icount[1], r.per_mib, false),
                ratio_text(ratio(&f.icount)),
                cell_text(&f.wall[0], r.per_mib, true),
                cell_text(&f.wall[1], r.per_mib, true),
                ratio_text(wall_ratio),
                goal_text(wall_ratio, r.goal),
                r.goal
            );
        }
    }
    if !report.unclean.is_empty() {
        let _ = writeln!(s, "\nImages `e2fsck -fn` did not find clean after the boot: {}.", report.unclean.join(", "));
    } else {
        s.push_str("\nEvery boot's image was clean for the host's `e2fsck -fn` afterwards.\n");
    }
    s
}

fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

fn json_cell(c: &Cell) -> String {
    let values: Vec<String> = c.values.iter().map(|v| format!("{v}")).collect();
    let errors: Vec<String> = c.errors.iter().map(|e| format!("{:?}", e)).collect();
    format!(
        "{{\"median\": {}, \"values\": [{}], \"errors\": [{}]}}",
        json_num(c.median()),
        values.join(", "),
        errors.join(", ")
    )
}

/// The rows as a JSON array (for `"storage"` in the run's JSON).
pub fn json(report: &Report) -> String {
    let mut s = String::from("[\n");
    let mut first = true;
    for ((bus, skipped), figs) in report.buses.iter().zip(&report.rows) {
        for (r, f) in ROWS.iter().zip(figs) {
            if !first {
                s.push_str(",\n");
            }
            first = false;
            let _ = write!(
                s,
                "    {{\"name\": {:?}, \"disk\": {:?}, \"op\": {:?}, \"goal\": {}, \"skipped\": {},\n     \"icount\": \
                 {{\"kiln\": {}, \"linux\": {}, \"ratio\": {}}},\n     \"wall\": {{\"kiln\": {}, \"linux\": {}, \
                 \"ratio\": {}}}}}",
                r.name,
                bus.name(),
                r.op,
                r.goal,
                skipped.as_ref().map(|w| format!("{w:?}")).unwrap_or_else(|| "null".into()),
                json_cell(&f.icount[0]),
                json_cell(&f.icount[1]),
                json_num(ratio(&f.icount)),
                json_cell(&f.wall[0]),
                json_cell(&f.wall[1]),
                json_num(ratio(&f.wall)),
            );
        }
    }
    s.push_str("\n  ]");
    s
}

/// Puts `"storage": ROWS` into a run's JSON object (before its last `}`).
pub fn splice_json(run_json: &str, storage: &str) -> String {
    match run_json.rfind('}') {
        Some(end) => {
            let head = run_json[..end].trim_end();
            format!("{head},\n  \"storage\": {storage}\n}}\n")
        }
        None => run_json.to_string(),
    }
}

const DOC_BEGIN: &str = "<!-- storage-table:begin -->";
const DOC_END: &str = "<!-- storage-table:end -->";

/// Writes bench/results/storage.{md,json} and, for a full-size run, the
/// table into docs/performance.md.
/// `stamp` (UTC date and time) and `commit` name the history file.
pub fn write(root: &Path, report: &Report, header: &str, stamp: &str, commit: &str) -> Result<()> {
    let table = markdown(report, header);
    println!("\n{table}");
    if report.partial {
        println!("bench storage: only STORAGE_ROWS ran; bench/results and docs left as they were");
        return Ok(());
    }
    let results = root.join("bench/results");
    fs::create_dir_all(&results).map_err(|e| format!("create {}: {e}", results.display()))?;
    fs::write(results.join("storage.md"), &table).map_err(|e| format!("write storage.md: {e}"))?;
    let json = format!("{{\n  \"header\": {:?},\n  \"storage\": {}\n}}\n", header, json(report));
    fs::write(results.join("storage.json"), &json).map_err(|e| format!("write storage.json: {e}"))?;
    if report.pct == 100 {
        // Every full-size run is kept, as the main rows' are (in a folder
        // of its own: history.png charts the main rows' icount ratios).
        let dir = results.join("history/storage");
        fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let name = format!("{stamp}-{}.json", commit.replace(['/', ' ', '='], "_"));
        fs::write(dir.join(&name), &json).map_err(|e| format!("write history/storage/{name}: {e}"))?;
        println!("bench storage: kept this run as bench/results/history/storage/{name}");
        let doc = root.join("docs/performance.md");
        let text = fs::read_to_string(&doc).map_err(|e| format!("read {}: {e}", doc.display()))?;
        match (text.find(DOC_BEGIN), text.find(DOC_END)) {
            (Some(b), Some(e)) if b < e => {
                let new = format!("{}{DOC_BEGIN}\n{table}{}", &text[..b], &text[e..]);
                fs::write(&doc, new).map_err(|e| format!("write {}: {e}", doc.display()))?;
            }
            _ => println!("bench storage: docs/performance.md has no storage markers; table not copied there"),
        }
    }
    Ok(())
}

/// For `make test`: kstor at its smallest size in Kiln on virtio-blk;
/// every row must print a number and the image must stay e2fsck-clean.
/// No timing is checked. Returns (passed, failed).
pub fn smoke(root: &Path, kiln_elf: &Path) -> Result<(u64, u64)> {
    let out_dir = crate::build::out_dir();
    let work = out_dir.join("bench-storage");
    fs::create_dir_all(&work).map_err(|e| format!("create {}: {e}", work.display()))?;
    let progs = guest::build_programs(root)?;
    let tar = make_tree(&work)?;
    let initrd = initramfs(&progs, &out_dir, "", &tar)?;
    let pristine = work.join("pristine.img");
    pristine_image(&pristine)?;
    let setup = Setup {
        kiln_elf,
        linux: kiln_elf,
        initrd: &initrd,
        pristine: &pristine,
        work: &work,
        pct: 0,
        rows: None,
        timeout: Duration::from_secs(env_num("BENCH_TIMEOUT", 600)?),
    };
    let log = out_dir.join("bench-storage-smoke.log");
    let boot = setup.boot(Kernel::Kiln, Clock::Wall, Bus::Virtio, "storage smoke", &log);
    let _ = fs::remove_file(&pristine);
    let _ = fs::remove_file(&tar);
    let boot = boot?;
    let (mut passed, mut failed) = (0, 0);
    for r in ROWS {
        match boot.run.results.get(r.name) {
            Some(guest::Outcome::Ok { .. }) => {
                passed += 1;
                println!("bench storage {} ... ok", r.name);
            }
            other => {
                failed += 1;
                crate::recap::failure(format!(
                    "bench storage {} ... FAILED ({})",
                    r.name,
                    match other {
                        Some(guest::Outcome::Failed(e)) => e.clone(),
                        _ => boot.run.problem.clone().unwrap_or_else(|| "not reported".into()),
                    }
                ));
            }
        }
    }
    if boot.fsck_clean {
        passed += 1;
        println!("bench storage image e2fsck -fn clean ... ok");
    } else {
        failed += 1;
        crate::recap::failure("bench storage image e2fsck -fn clean ... FAILED".to_string());
    }
    Ok((passed, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ROWS and kstor.c's `rows[]` name the same rows in the same order.
    #[test]
    fn rows_match_kstor() {
        let src = fs::read_to_string(crate::build::repo_root().join("user/bench/kstor.c")).unwrap();
        let table = &src[src.find("} rows[] = {").unwrap()..];
        let names: Vec<&str> = table
            .lines()
            .skip(1)
            .map_while(|l| l.trim().strip_prefix("{\""))
            .map(|l| &l[..l.find('"').unwrap()])
            .collect();
        assert_eq!(names, ROWS.iter().map(|r| r.name).collect::<Vec<_>>());
    }

    #[test]
    fn storage_goes_into_the_run_json() {
        let run = "{\n  \"date\": \"x\",\n  \"benchmarks\": [\n  ]\n}\n";
        let out = splice_json(run, "[]");
        assert_eq!(out, "{\n  \"date\": \"x\",\n  \"benchmarks\": [\n  ],\n  \"storage\": []\n}\n");
    }

    #[test]
    fn tree_sizes_match_kstor() {
        // kstor.c: ((d * 100 + f) * 1237L) % 4096
        assert_eq!(tree_size(0, 0), 0);
        assert_eq!(tree_size(49, 99), (4999 * 1237) % 4096);
        assert!((0..TREE_DIRS).all(|d| (0..TREE_FILES).all(|f| tree_size(d, f) < 4096)));
    }
}
