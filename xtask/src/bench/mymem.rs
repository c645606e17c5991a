//! `make bench`'s /dev/mymem part (docs/mymem.md): the Rust-for-Linux
//! labs' timing and race tests against Kiln's built-in device and against
//! a C module (linux/mymem) loaded into the same Debian kernel the main
//! benchmark boots.
//!
//! Per kernel there are two boots of one initramfs, as in the main bench:
//! `icount` (deterministic; timing only, since the race's outcome depends
//! on when the timer preempts, and icount would only make one schedule
//! repeatable) and `wall` (timing, the races and the close test). Kiln's
//! in-kernel figures come from its test kernel (`ktest.filter=mymem`);
//! Linux's from the module's `timing=1` load-time test. Both print
//! `mymem in-kernel size N read X ns write Y ns`.
//!
//! Knobs: `MYMEM_TRIALS` (default 1000) trials per size, `MYMEM_N`
//! (default 150000) rounds per worker of the 50-thread atomic race.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::guest::{Clock, Kernel, ICOUNT};
use crate::{build, qemu, Result};

pub const SIZES: [u64; 5] = [1, 64, 1024, 64 * 1024, 512 * 1024];

/// What one boot printed, by key: `timing`, `timing-rs`, `in-kernel` map
/// size to (read ns, write ns); races and the close test are kept as text.
#[derive(Default, Debug)]
pub struct Run {
    pub timing: BTreeMap<String, BTreeMap<u64, (f64, f64)>>,
    /// `race MODE W N` (or `race-rs ...`) -> "expected E actual A error P%".
    pub races: Vec<(String, String)>,
    pub other: Vec<String>,
    pub problem: Option<String>,
}

pub fn parse(output: &str) -> Run {
    let mut run = Run::default();
    for line in output.lines() {
        // Kernel log lines carry a timestamp and level before the text.
        let Some(at) = line.find("mymem ") else { continue };
        let rest = line[at + 6..].trim();
        let w: Vec<&str> = rest.split_whitespace().collect();
        let num = |s: &str| s.parse::<f64>().ok();
        match w.as_slice() {
            [kind @ ("timing" | "timing-rs"), size, r, wr] => {
                if let (Ok(s), Some(r), Some(wr)) = (size.parse::<u64>(), num(r), num(wr)) {
                    run.timing.entry(kind.to_string()).or_default().insert(s, (r, wr));
                }
            }
            ["in-kernel", "size", size, "read", r, "ns", "write", wr, "ns"] => {
                if let (Ok(s), Some(r), Some(wr)) = (size.parse::<u64>(), num(r), num(wr)) {
                    run.timing.entry("in-kernel".into()).or_default().insert(s, (r, wr));
                }
            }
            [kind @ ("race" | "race-rs"), mode, workers, rounds, "expected", ..] if !rest.contains(" n/a ") => {
                let tail = rest.splitn(5, ' ').nth(4).unwrap_or("").to_string();
                run.races.push((format!("{kind} {mode} {workers} {rounds}"), tail));
            }
            _ => run.other.push(rest.to_string()),
        }
    }
    run
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

fn run_cmd(c: &mut Command, what: &str) -> Result<()> {
    let s = c.status().map_err(|e| format!("{what}: {e}"))?;
    if s.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({s})"))
    }
}

/// The C programs (musl) and the Rust ones (glibc, static), into `out`.
fn build_programs(root: &Path, out: &Path) -> Result<()> {
    run_cmd(
        Command::new("make").args(["-s", "-C"]).arg(root.join("user/mymem")).arg(format!("OUT={}", out.display())),
        "make -C user/mymem",
    )?;
    let target_dir = root.join("build/mymem/rust-target");
    // The system toolchain, not the kernel's pinned nightly: these are
    // ordinary Linux programs. Non-PIE static, the simplest ELF to load.
    run_cmd(
        Command::new("/usr/bin/cargo")
            .args(["build", "-q", "--release", "--target", "x86_64-unknown-linux-gnu", "--target-dir"])
            .arg(&target_dir)
            .current_dir(root.join("user/mymem/rust"))
            .env("RUSTC", "/usr/bin/rustc")
            .env("RUSTFLAGS", "-C target-feature=+crt-static -C relocation-model=static")
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO_TARGET_DIR"),
        "cargo build (user/mymem/rust)",
    )?;
    for name in ["timing", "race"] {
        let from = target_dir.join("x86_64-unknown-linux-gnu/release").join(name);
        fs::copy(&from, out.join(format!("{name}-rs"))).map_err(|e| format!("copy {}: {e}", from.display()))?;
    }
    Ok(())
}

/// Builds linux/mymem against the headers of the kernel the bench boots
/// (`vmlinuz-VERSION`), installing Debian's matching headers package if
/// they are missing. Returns the stripped `mymem.ko`.
pub fn build_module(root: &Path, vmlinuz: &Path) -> Result<PathBuf> {
    let version = super::guest::linux_version(vmlinuz);
    let kdir = PathBuf::from(format!("/usr/src/linux-headers-{version}"));
    if !kdir.join("Makefile").exists() {
        let pkg = format!("linux-headers-{version}");
        println!("xtask: installing {pkg} (to build linux/mymem)");
        let install = || {
            Command::new("apt-get")
                .args(["install", "-y", "-q", &pkg])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        };
        if !install() {
            let _ = Command::new("apt-get").args(["update", "-q"]).status();
            install();
        }
        if !kdir.join("Makefile").exists() {
            return Err(format!("no {} after installing {pkg}", kdir.display()));
        }
    }
    // Kbuild writes objects beside the sources: build a copy under build/.
    let obj = root.join("build/mymem/kmod");
    fs::create_dir_all(&obj).map_err(|e| format!("create {}: {e}", obj.display()))?;
    for f in ["mymem.c", "Kbuild"] {
        fs::copy(root.join("linux/mymem").join(f), obj.join(f)).map_err(|e| format!("copy linux/mymem/{f}: {e}"))?;
    }
    run_cmd(
        Command::new("make").arg("-s").arg("-C").arg(&kdir).arg(format!("M={}", obj.display())).arg("modules"),
        "building linux/mymem",
    )?;
    let ko = obj.join("mymem.ko");
    // Debug info is 90% of the file and the guest has no use for it.
    let _ = Command::new("strip").arg("--strip-debug").arg(&ko).status();
    Ok(ko)
}

/// The guest script: timing in every boot; the races and the close test
/// only under wall time (see the module comment).
fn script(trials: u64, n: u64) -> String {
    format!(
        "echo mymem start $1\n\
         /b/timing {trials}\n\
         /b/timing-rs {trials}\n\
         if [ \"$1\" = wall ]; then\n\
         /b/race 50 {n} atomic\n\
         /b/race-rs 50 {n} atomic\n\
         /b/race 4 20000 unlocked\n\
         /b/race-rs 4 20000 unlocked\n\
         /b/race 4 20000 mutex\n\
         /b/closerace\n\
         fi\n\
         echo mymem done\n"
    )
}

/// One image for both kernels; under Kiln, init's finit_module of
/// `/mymem.ko` fails with ENOSYS and is ignored (the device is built in).
fn initramfs(root: &Path, ko: Option<&Path>, trials: u64, n: u64) -> Result<PathBuf> {
    let bench_progs = super::guest::build_programs(root)?;
    let progs = root.join("build/mymem");
    build_programs(root, &progs)?;
    let out_dir = build::out_dir();
    let stage = super::guest::fresh_stage(&out_dir, "mymem-root")?;
    let copy = |from: &Path, to: &str| super::guest::copy_into(&stage, from, to);
    copy(&bench_progs.join("init"), "init")?;
    copy(Path::new("/bin/busybox"), "bin/busybox")?;
    std::os::unix::fs::symlink("busybox", stage.join("bin/sh")).map_err(|e| format!("symlink bin/sh: {e}"))?;
    for p in ["timing", "race", "closerace", "timing-rs", "race-rs"] {
        copy(&progs.join(p), &format!("b/{p}"))?;
    }
    fs::write(stage.join("b/mymem.sh"), script(trials, n)).map_err(|e| format!("write mymem.sh: {e}"))?;
    if let Some(ko) = ko {
        copy(ko, "mymem.ko")?;
    }
    let archive = crate::initramfs::cpio(&[("", stage.as_path())])?;
    let path = out_dir.join("mymem-initramfs.cpio.gz");
    let file = fs::File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &archive).map_err(|e| format!("write {}: {e}", path.display()))?;
    gz.finish().map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok(path)
}

fn boot(image: qemu::Image, clock: Clock, log: &Path, timeout: Duration) -> Result<Run> {
    let extra = match clock {
        Clock::Icount => vec!["-icount".to_string(), ICOUNT.to_string()],
        Clock::Wall => Vec::new(),
    };
    let cap = qemu::run_captured(&qemu::Boot { image, smp: 1, extra }, timeout, log)?;
    let mut run = parse(&cap.output);
    if cap.timed_out {
        run.problem = Some(format!("timed out after {} s", timeout.as_secs()));
    }
    Ok(run)
}

/// Every measurement: `[kiln, linux]` per clock, plus Kiln's test kernel.
pub struct Results {
    pub icount: [Run; 2],
    pub wall: [Run; 2],
    pub kiln_ktest: [Run; 2],
    pub module_error: Option<String>,
    pub trials: u64,
}

pub fn measure(root: &Path, kiln_elf: &Path, linux: &Path) -> Result<Results> {
    let trials = env_u64("MYMEM_TRIALS", 1000);
    let n = env_u64("MYMEM_N", 150_000);
    let timeout = Duration::from_secs(env_u64("BENCH_TIMEOUT", 1800));
    let (ko, module_error) = match build_module(root, linux) {
        Ok(k) => (Some(k), None),
        Err(e) => {
            println!("bench mymem: no Linux module ({e}); the Linux column will be empty");
            (None, Some(e))
        }
    };
    let initrd = initramfs(root, ko.as_deref(), trials, n)?;
    let out = build::out_dir();
    let image = |k: Kernel, clock: Clock| {
        let arg = format!("/bin/sh /b/mymem.sh {}", clock.name());
        match k {
            Kernel::Kiln => qemu::Image::Kernel {
                elf: kiln_elf.to_path_buf(),
                cmdline: crate::usertest::init_cmdline("", &format!("/init {arg}")),
                initrd: Some(initrd.clone()),
            },
            Kernel::Linux => qemu::Image::Kernel {
                elf: linux.to_path_buf(),
                cmdline: format!("console=ttyS0 quiet panic=-1 rdinit=/init -- {arg}"),
                initrd: Some(initrd.clone()),
            },
        }
    };
    let mut res = Results {
        icount: Default::default(),
        wall: Default::default(),
        kiln_ktest: Default::default(),
        module_error,
        trials,
    };
    // One QEMU at a time: the wall figures must not share the host's CPUs.
    for clock in [Clock::Icount, Clock::Wall] {
        for k in [Kernel::Kiln, Kernel::Linux] {
            println!("bench mymem: {} {}", k.name(), clock.name());
            let log = out.join(format!("mymem-{}-{}.log", k.name(), clock.name()));
            let run = boot(image(k, clock), clock, &log, timeout)?;
            let slot = if k == Kernel::Kiln { 0 } else { 1 };
            match clock {
                Clock::Icount => res.icount[slot] = run,
                Clock::Wall => res.wall[slot] = run,
            }
        }
    }
    let test_elf = build::kernel(build::Flavor::Test)?;
    for (i, clock) in [Clock::Icount, Clock::Wall].into_iter().enumerate() {
        println!("bench mymem: kiln in-kernel {}", clock.name());
        let log = out.join(format!("mymem-kiln-ktest-{}.log", clock.name()));
        let img = qemu::Image::Kernel { elf: test_elf.clone(), cmdline: "ktest.filter=mymem".into(), initrd: None };
        res.kiln_ktest[i] = boot(img, clock, &log, timeout)?;
    }
    Ok(res)
}

const DOC_BEGIN: &str = "<!-- mymem-table:begin -->";
const DOC_END: &str = "<!-- mymem-table:end -->";

fn size_name(s: u64) -> String {
    match s {
        s if s >= 1024 => format!("{} KiB", s / 1024),
        s => format!("{s} B"),
    }
}

fn pair(run: &Run, kind: &str, size: u64) -> [String; 2] {
    match run.timing.get(kind).and_then(|m| m.get(&size)) {
        Some((r, w)) => [super::report::human(*r), super::report::human(*w)],
        None => {
            let why = run.problem.as_deref().unwrap_or("no result");
            [format!("n/a ({why})"), "n/a".into()]
        }
    }
}

/// The markdown report: user-level timing per clock, in-kernel timing,
/// races, and the close test.
pub fn markdown(res: &Results, meta: &str) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "{meta}; {} trials per size; figures are mean time per call.\n", res.trials);
    if let Some(e) = &res.module_error {
        let _ = writeln!(s, "The Linux module did not build: {e}\n");
    }
    for (clock, runs) in [("icount (1 ns per instruction)", &res.icount), ("TCG wall time", &res.wall)] {
        let _ = writeln!(s, "User level, {clock}: pread / pwrite of /dev/mymem\n");
        s.push_str("| size | Kiln, C prog | Linux C module, C prog | Kiln, Rust prog | Linux C module, Rust prog |\n");
        s.push_str("|---|---|---|---|---|\n");
        for size in SIZES {
            let _ = write!(s, "| {} ", size_name(size));
            for kind in ["timing", "timing-rs"] {
                for run in runs.iter() {
                    let [r, w] = pair(run, kind, size);
                    let _ = write!(s, "| {r} / {w} ");
                }
            }
            s.push_str("|\n");
        }
        s.push('\n');
    }
    s.push_str("In-kernel (no system call, no user copy): read / write\n\n");
    s.push_str(
        "| size | Kiln icount | Kiln wall | Linux C module icount | Linux C module wall |\n|---|---|---|---|---|\n",
    );
    for size in SIZES {
        let cells = [
            pair(&res.kiln_ktest[0], "in-kernel", size),
            pair(&res.kiln_ktest[1], "in-kernel", size),
            pair(&res.icount[1], "in-kernel", size),
            pair(&res.wall[1], "in-kernel", size),
        ];
        let _ = write!(s, "| {} ", size_name(size));
        for [r, w] in cells {
            let _ = write!(s, "| {r} / {w} ");
        }
        s.push_str("|\n");
    }
    s.push_str("\nThe race (wall-time boot): W workers × N rounds of counter += 1\n\n");
    s.push_str("| program mode W N | Kiln | Linux C module |\n|---|---|---|\n");
    let mut keys: Vec<&String> = res.wall.iter().flat_map(|r| r.races.iter().map(|(k, _)| k)).collect();
    keys.dedup();
    let mut seen = Vec::new();
    for k in keys {
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let cell = |r: &Run| r.races.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.clone()).unwrap_or("n/a".into());
        let _ = writeln!(s, "| {k} | {} | {} |", cell(&res.wall[0]), cell(&res.wall[1]));
    }
    s.push_str("\nClosing the descriptor under running readers (`closerace`):\n\n");
    for (name, run) in [("Kiln", &res.wall[0]), ("Linux", &res.wall[1])] {
        let line = run.other.iter().find(|l| l.starts_with("closerace")).cloned().unwrap_or("no result".into());
        let _ = writeln!(s, "- {name}: `{line}`");
    }
    s
}

/// The figures the chart needs, per clock, as JSON written by hand (see
/// report.rs).
pub fn json(res: &Results) -> String {
    let series = |runs: &[Run; 2], ktest: &Run| {
        let mut out = Vec::new();
        for (rw, read) in [("read", true), ("write", false)] {
            for (label, run, kind) in [
                (format!("Kiln user {rw}"), &runs[0], "timing"),
                (format!("Linux module user {rw}"), &runs[1], "timing"),
                (format!("Kiln in-kernel {rw}"), ktest, "in-kernel"),
                (format!("Linux module in-kernel {rw}"), &runs[1], "in-kernel"),
            ] {
                let vals: Vec<String> = SIZES
                    .iter()
                    .map(|sz| match run.timing.get(kind).and_then(|m| m.get(sz)) {
                        Some((r, w)) => format!("{:.1}", if read { r } else { w }),
                        None => "null".into(),
                    })
                    .collect();
                out.push(format!("      {{\"label\": \"{label}\", \"ns\": [{}]}}", vals.join(", ")));
            }
        }
        out.join(",\n")
    };
    let sizes: Vec<String> = SIZES.iter().map(u64::to_string).collect();
    format!(
        "{{\n  \"sizes\": [{}],\n  \"clocks\": {{\n    \"icount\": [\n{}\n    ],\n    \"wall\": [\n{}\n    ]\n  }}\n}}\n",
        sizes.join(", "),
        series(&res.icount, &res.kiln_ktest[0]),
        series(&res.wall, &res.kiln_ktest[1])
    )
}

/// Replaces the text between the markers in docs/mymem.md.
fn update_doc(path: &Path, table: &str) -> Result<()> {
    let doc = fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let (Some(a), Some(b)) = (doc.find(DOC_BEGIN), doc.find(DOC_END)) else {
        return Err(format!("{} lacks the {DOC_BEGIN} / {DOC_END} markers", path.display()));
    };
    let new = format!("{}{DOC_BEGIN}\n{table}{}", &doc[..a], &doc[b..]);
    fs::write(path, new).map_err(|e| format!("write {}: {e}", path.display()))
}

/// The last measurement again, from the boot logs it left in the build
/// folder: for redrawing the report without booting anything.
pub fn from_logs() -> Result<Results> {
    let out = build::out_dir();
    let read = |name: &str| -> Result<Run> {
        let p = out.join(name);
        Ok(parse(&fs::read_to_string(&p).map_err(|e| format!("read {}: {e}", p.display()))?))
    };
    Ok(Results {
        icount: [read("mymem-kiln-icount.log")?, read("mymem-linux-icount.log")?],
        wall: [read("mymem-kiln-wall.log")?, read("mymem-linux-wall.log")?],
        kiln_ktest: [read("mymem-kiln-ktest-icount.log")?, read("mymem-kiln-ktest-wall.log")?],
        module_error: None,
        trials: env_u64("MYMEM_TRIALS", 1000),
    })
}

/// Measures (or with `reuse`, takes the last logs), then writes
/// bench/results/mymem.{md,json,png} and the table in docs/mymem.md.
pub fn run(root: &Path, kiln_elf: &Path, linux: &Path, meta: &str, reuse: bool) -> Result<()> {
    let res = if reuse { from_logs()? } else { measure(root, kiln_elf, linux)? };
    let table = markdown(&res, meta);
    println!("\n{table}");
    let dir = root.join("bench/results");
    fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    fs::write(dir.join("mymem.md"), &table).map_err(|e| format!("write mymem.md: {e}"))?;
    fs::write(dir.join("mymem.json"), json(&res)).map_err(|e| format!("write mymem.json: {e}"))?;
    update_doc(&root.join("docs/mymem.md"), &table)?;
    let chart = Command::new("python3")
        .arg(root.join("user/mymem/chart.py"))
        .arg(dir.join("mymem.json"))
        .arg(dir.join("mymem.png"))
        .status();
    match chart {
        Ok(s) if s.success() => println!("bench mymem: wrote bench/results/mymem.{{md,json,png}} and docs/mymem.md"),
        _ => println!("bench mymem: wrote bench/results/mymem.{{md,json}} and docs/mymem.md; no chart"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_parsed() {
        let out = "mymem timing 64 812.5 900.0\r\n[ 1.2] mymem in-kernel size 1024 read 50 ns write 60 ns\n\
                   mymem race atomic 50 10 expected 500 actual 500 error 0.00%\nmymem closerace ok before 1\n";
        let r = parse(out);
        assert_eq!(r.timing["timing"][&64], (812.5, 900.0));
        assert_eq!(r.races[0], ("race atomic 50 10".into(), "expected 500 actual 500 error 0.00%".into()));
        assert_eq!(r.other, vec!["closerace ok before 1".to_string()]);
    }
}
