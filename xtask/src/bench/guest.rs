//! The benchmark guest: building the C programs, packing them into an
//! initramfs that both kernels boot, finding Debian's Linux kernel, booting
//! one kernel under one clock, and reading the `bench` lines it prints.
//!
//! Both kernels get the same initramfs and the same QEMU machine
//! (`qemu::command`: CPU model, memory, CPU count); only `-kernel` and the
//! command line differ, so a difference in the numbers is the kernels'.
//! A `Guest` is one CPU count: `make bench` boots every kernel at `-smp 1`
//! and again at `-smp 2` for the rows that compare CPU counts.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::qemu;
use crate::Result;

/// A machine both kernels are measured on: QEMU's CPU model and what
/// Linux's command line adds. Kiln's command line never changes: it has
/// no mitigations to turn off and reads no CPU feature to pick its copy
/// loops (always `rep movsq`/`rep stosq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Short name, used in log file names and the JSON.
    pub name: &'static str,
    /// QEMU's `-cpu` argument.
    pub cpu: &'static str,
    /// Appended to Linux's command line.
    pub linux_cmdline: &'static str,
}

/// The primary comparison. Without ERMS/FSRM, Linux copies and clears
/// with `rep movsq`/`rep stosq` (REP_GOOD) as Kiln does, where with them it
/// uses `rep movsb`/`rep stosb`, which `-icount` charges one instruction
/// per byte (8x Kiln's count for the same page); and Linux turns off the
/// Spectre/Meltdown mitigations Kiln does not have.
/// Linux also leaves its address layouts alone (`nokaslr norandmaps`):
/// Kiln randomizes none, and Linux's random layouts made its icount
/// figures move by up to 1 % from boot to boot.
pub const FAIR: Setup =
    Setup { name: "fair", cpu: "max,-erms,-fsrm", linux_cmdline: "mitigations=off nokaslr norandmaps" };

/// The secondary column: QEMU's full CPU model, as `make test` boots,
/// where Linux's bulk copies are byte loops under icount.
pub const CPU_MAX: Setup = Setup { name: "cpumax", cpu: "max", linux_cmdline: "mitigations=off nokaslr norandmaps" };

/// Linux as Debian ships it, on the fair CPU model: default mitigations
/// (page-table isolation, retpolines, RSB filling where the model asks).
pub const LINUX_DEFAULT: Setup = Setup { name: "mitig", cpu: "max,-erms,-fsrm", linux_cmdline: "" };

/// QEMU's deterministic clock: guest time advances one nanosecond per
/// instruction, and never while the guest idles (`sleep=off`).
pub const ICOUNT: &str = "shift=0,align=off,sleep=off";

/// The RTC of the icount boots.
pub const ICOUNT_RTC: &str = "base=2026-01-01T00:00:00,clock=vm";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Kiln,
    Linux,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Kiln => "kiln",
            Kernel::Linux => "linux",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Icount,
    Wall,
}

impl Clock {
    pub fn name(self) -> &'static str {
        match self {
            Clock::Icount => "icount",
            Clock::Wall => "wall",
        }
    }
}

/// What one benchmark produced in one boot.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Nanoseconds per operation and the number of operations timed.
    Ok { ns: f64, ops: u64 },
    /// Why there is no number.
    Failed(String),
}

/// One boot's results and, if it ended badly, why.
pub struct RunResult {
    pub results: BTreeMap<String, Outcome>,
    pub problem: Option<String>,
    pub seconds: f64,
}

/// Builds `kbench` and `init` with `make -C user/bench`; returns the folder.
pub fn build_programs(root: &Path) -> Result<PathBuf> {
    let out = root.join("build/bench/b");
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(root.join("user/bench"))
        .arg(format!("OUT={}", out.display()))
        .status()
        .map_err(|e| format!("cannot run make -C user/bench: {e}"))?;
    if !status.success() {
        return Err(format!("building the benchmark programs failed ({status})"));
    }
    Ok(out)
}

/// An empty guest root under `out_dir/name` with the directories both
/// kernels' `/init` expects.
pub fn fresh_stage(out_dir: &Path, name: &str) -> Result<PathBuf> {
    let stage = out_dir.join(name);
    let _ = fs::remove_dir_all(&stage);
    for d in ["b", "bin", "dev", "proc", "tmp"] {
        fs::create_dir_all(stage.join(d)).map_err(|e| format!("create {}: {e}", stage.join(d).display()))?;
    }
    Ok(stage)
}

/// Copies a host file into the guest root at `to`.
pub fn copy_into(stage: &Path, from: &Path, to: &str) -> Result<()> {
    fs::copy(from, stage.join(to)).map(|_| ()).map_err(|e| format!("copy {}: {e}", from.display()))
}

/// The benchmark initramfs: `/init`, `/b/kbench`, `/bin/busybox` with a
/// `/bin/sh` link, and empty `/dev`, `/proc` and `/tmp` to mount on.
pub fn initramfs(progs: &Path, out_dir: &Path) -> Result<PathBuf> {
    let stage = fresh_stage(out_dir, "bench-root")?;
    let copy = |from: &Path, to: &str| copy_into(&stage, from, to);
    copy(&progs.join("init"), "init")?;
    copy(&progs.join("kbench"), "b/kbench")?;
    let busybox = Path::new("/bin/busybox");
    if busybox.exists() {
        copy(busybox, "bin/busybox")?;
        std::os::unix::fs::symlink("busybox", stage.join("bin/sh")).map_err(|e| format!("symlink bin/sh: {e}"))?;
    } else {
        // sh_true then reports "n/a" in both kernels; the rest still run.
        eprintln!("xtask: /bin/busybox is missing (Debian package busybox-static); sh_true will fail");
    }
    let archive = crate::initramfs::cpio(&[("", stage.as_path())])?;
    let path = out_dir.join("bench-initramfs.cpio.gz");
    let file = fs::File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    gz.write_all(&archive).map_err(|e| format!("write {}: {e}", path.display()))?;
    gz.finish().map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok(path)
}

/// The newest `/boot/vmlinuz-*-cloud-amd64`, installing Debian's
/// `linux-image-cloud-amd64` first when there is none.
pub fn linux_kernel() -> Result<PathBuf> {
    if let Some(k) = find_cloud_kernel() {
        return Ok(k);
    }
    println!("xtask: installing linux-image-cloud-amd64 (the Linux baseline)");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "linux-image-cloud-amd64"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !install() {
        // A fresh machine's package lists may not know the package yet.
        let _ = Command::new("apt-get").args(["update", "-q"]).status();
        install();
    }
    find_cloud_kernel().ok_or_else(|| "no /boot/vmlinuz-*-cloud-amd64 after installing linux-image-cloud-amd64".into())
}

fn find_cloud_kernel() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir("/boot")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            n.starts_with("vmlinuz-") && n.ends_with("-cloud-amd64")
        })
        .collect();
    // Version order is close enough to name order for Debian's ABI numbers
    // of one release; a machine normally has one such kernel anyway.
    found.sort();
    found.pop()
}

/// The kernel version in a vmlinuz path (`6.1.0-56-cloud-amd64`).
pub fn linux_version(vmlinuz: &Path) -> String {
    vmlinuz.file_name().map(|n| n.to_string_lossy().trim_start_matches("vmlinuz-").to_string()).unwrap_or_default()
}

/// What to boot and what to run in it.
pub struct Guest<'a> {
    pub kiln_elf: &'a Path,
    pub linux: Option<&'a Path>,
    pub initrd: &'a Path,
    /// Arguments for `/b/kbench`: `all PCT [FILTER]`.
    pub args: String,
    pub timeout: Duration,
    /// QEMU's `-smp`: the number of CPUs both kernels get.
    pub smp: u32,
    /// The CPU model and Linux's extra command line.
    pub setup: Setup,
}

impl Guest<'_> {
    fn boot(&self, kernel: Kernel, clock: Clock) -> Result<qemu::Boot> {
        let (elf, cmdline) = match kernel {
            Kernel::Kiln => {
                (self.kiln_elf.to_path_buf(), crate::usertest::init_cmdline("", &format!("/init {}", self.args)))
            }
            Kernel::Linux => {
                let vmlinuz = self.linux.ok_or("no Linux kernel to boot")?;
                let mut cmdline = String::from("console=ttyS0 quiet panic=-1 rdinit=/init");
                if !self.setup.linux_cmdline.is_empty() {
                    cmdline.push(' ');
                    cmdline.push_str(self.setup.linux_cmdline);
                }
                if clock == Clock::Icount && self.smp > 1 {
                    // Linux 6.1 hangs bringing up CPU 1 at boot under
                    // QEMU 7.2's -icount, but onlines it from user space:
                    // the bench init brings every CPU online before
                    // kbench starts (user/bench/init.c). QEMU's flags are
                    // the same for both kernels.
                    cmdline.push_str(" maxcpus=1");
                }
                (vmlinuz.to_path_buf(), format!("{cmdline} -- {}", self.args))
            }
        };
        let extra = match clock {
            // The guest's RTC starts at a fixed date and runs on the
            // instruction clock, so a boot does not depend on the host's time.
            Clock::Icount => ["-icount", ICOUNT, "-rtc", ICOUNT_RTC].map(String::from).to_vec(),
            Clock::Wall => Vec::new(),
        };
        Ok(qemu::Boot {
            image: qemu::Image::Kernel { elf, cmdline, initrd: Some(self.initrd.to_path_buf()) },
            smp: self.smp,
            extra,
        })
    }

    /// Boots `kernel` under `clock`, logging the serial output to `log` and
    /// echoing only the result lines (tagged with `tag`), and parses them.
    pub fn run(&self, kernel: Kernel, clock: Clock, tag: &str, log: &Path) -> Result<RunResult> {
        let boot = self.boot(kernel, clock)?;
        run_boot(&boot, self.setup.cpu, self.timeout, tag, log)
    }
}

/// Boots `boot` on CPU model `cpu`, logging the serial output to `log` and
/// echoing only the result lines (tagged with `tag`), kills QEMU after
/// `timeout`, and parses the `bench` lines; the guest must end with
/// `kbench done`.
pub fn run_boot(boot: &qemu::Boot, cpu: &str, timeout: Duration, tag: &str, log: &Path) -> Result<RunResult> {
    let start = Instant::now();
    let mut log_file = fs::File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
    let mut child = qemu::command_on(boot, cpu)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    let pipe = child.stdout.take().ok_or("qemu stdout not captured")?;
    let tag_owned = tag.to_string();
    // A thread reads so this one can watch the clock; the pipe closes
    // when QEMU exits or is killed.
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let mut lines = BufReader::new(pipe);
        let mut buf = Vec::new();
        let mut filter = qemu::AnsiFilter::default();
        while matches!(lines.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let mut clean = Vec::new();
            filter.filter(&buf, &mut clean);
            buf.clear();
            let line = String::from_utf8_lossy(&clean).into_owned();
            let _ = log_file.write_all(line.as_bytes());
            let t = line.trim();
            if t.starts_with("bench ")
                || t.starts_with("kbench parallel")
                || t.starts_with("init:")
                || t.starts_with("kstor")
                || t.contains("panic")
            {
                println!("[{tag_owned}] {t}");
            }
            out.push_str(&line);
        }
        out
    });
    let deadline = start + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| format!("wait for qemu: {e}"))? {
            break s;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().map_err(|e| format!("wait for qemu: {e}"))?;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = reader.join().unwrap_or_default();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let finished = output.lines().any(|l| l.trim().starts_with("kbench done"));
    let problem = if timed_out {
        Some(format!("timed out after {} s", timeout.as_secs()))
    } else if !finished {
        Some(format!("the guest stopped early (QEMU status {:?}) {}", status.code(), stderr.trim()))
    } else {
        None
    };
    Ok(RunResult { results: parse(&output), problem, seconds: start.elapsed().as_secs_f64() })
}

/// `bench NAME NS OPS` and `bench NAME n/a REASON` lines, by name.
pub fn parse(output: &str) -> BTreeMap<String, Outcome> {
    let mut out = BTreeMap::new();
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix("bench ") else { continue };
        let mut words = rest.splitn(3, ' ');
        let (Some(name), Some(value)) = (words.next(), words.next()) else { continue };
        let tail = words.next().unwrap_or("").trim();
        let outcome = if value == "n/a" {
            Outcome::Failed(tail.to_string())
        } else {
            match (value.parse::<f64>(), tail.parse::<u64>()) {
                (Ok(ns), Ok(ops)) => Outcome::Ok { ns, ops },
                _ => Outcome::Failed(format!("unreadable result line `{}`", line.trim())),
            }
        };
        out.insert(name.to_string(), outcome);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        let out = "kbench start 100\r\nbench getppid 123.4 200000\r\nnoise\nbench pipe_bw n/a pipe: Function not \
                   implemented\nbench odd x y\n";
        let r = parse(out);
        assert_eq!(r["getppid"], Outcome::Ok { ns: 123.4, ops: 200000 });
        assert_eq!(r["pipe_bw"], Outcome::Failed("pipe: Function not implemented".into()));
        assert!(matches!(r["odd"], Outcome::Failed(_)));
        assert_eq!(r.len(), 3);
    }
}
