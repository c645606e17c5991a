//! The through-the-NIC rows of `make bench` (issue 12, part 7): TCP
//! bandwidth host→guest and guest→host and the 1-byte round trip between
//! a client on the host and a server in the guest, Kiln against Linux on
//! the same NIC model. `xtask bench nic` runs them alone; a full
//! `make bench` runs them after the main table.
//!
//! Each kernel boots the benchmark initramfs (plus Debian's virtio-net
//! modules under /m, which only Linux loads) on the fair machine
//! (`guest::FAIR`: `-cpu max,-erms,-fsrm`, Linux with `mitigations=off
//! nokaslr norandmaps`), `-smp 1`, with a NIC on QEMU user networking
//! (slirp) and one hostfwd rule from a free 127.0.0.1 port to the guest's
//! `kbench nicserve`. The host runs `kbench nicclient` (the same static
//! program) against it. Wall clock only: the host side runs in real
//! time, so `-icount` would not measure the guest. slirp copies every
//! byte through the host's sockets and caps both kernels alike.
//!
//! Debian's cloud kernel has no e1000 driver (`CONFIG_E1000` and
//! `CONFIG_E1000E` unset), so the e1000 rows are Kiln's alone, shown
//! beside RustKPI's claim of parity with C.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::guest::{self, Kernel, Outcome};
use crate::{qemu, Result};

/// The guest port `nicserve` listens on.
const GUEST_PORT: u16 = 7001;

/// Debian's modules for virtio-net on the cloud kernel, in load order
/// (`modules.dep`): the virtio core, its PCI transport, failover, then
/// the driver. `bench_nic.c` loads them in the same order.
const LINUX_MODULES: &[&str] = &[
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "net/core/failover.ko",
    "drivers/net/net_failover.ko",
    "drivers/net/virtio_net.ko",
];

/// Bytes per bandwidth transfer, and round trips per latency run.
const BULK_BYTES: u64 = 128 << 20;
const ROUND_TRIPS: u64 = 2000;

/// One row: what the host client measures.
pub struct NicBench {
    /// `kbench nicclient`'s mode, and the row's name after `nic_`.
    pub mode: &'static str,
    pub op: &'static str,
    pub count: u64,
}

pub const NIC_BENCHES: &[NicBench] = &[
    NicBench { mode: "up", op: "64 KiB host → guest (TCP, one stream; MB/s = 65.5 / µs)", count: BULK_BYTES },
    NicBench { mode: "down", op: "64 KiB guest → host (TCP, one stream)", count: BULK_BYTES },
    NicBench { mode: "rtt", op: "1-byte TCP round trip host ↔ guest (TCP_NODELAY)", count: ROUND_TRIPS },
];

/// The NIC models measured, with the kernels that have a driver for it.
const NICS: &[(qemu::Net, &str, bool)] = &[(qemu::Net::Virtio, "virtio", true), (qemu::Net::E1000, "e1000", false)];

/// Wall-clock figures per row: [kernel][nic] → ns per operation, every run.
#[derive(Default, Clone)]
struct Cell {
    values: Vec<f64>,
    error: Option<String>,
}

impl Cell {
    fn median(&self) -> Option<f64> {
        let mut v = self.values.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        Some(v[v.len() / 2])
    }
}

/// The NIC initramfs: the benchmark one's files and the Linux modules.
fn initramfs(progs: &Path, out_dir: &Path, linux: &Path) -> Result<PathBuf> {
    let stage = guest::fresh_stage(out_dir, "bench-nic-root")?;
    guest::copy_into(&stage, &progs.join("init"), "init")?;
    guest::copy_into(&stage, &progs.join("kbench"), "b/kbench")?;
    std::fs::create_dir_all(stage.join("m")).map_err(|e| format!("create m: {e}"))?;
    let modules = Path::new("/lib/modules").join(guest::linux_version(linux)).join("kernel");
    for m in LINUX_MODULES {
        let from = modules.join(m);
        let name = from.file_name().unwrap_or_default().to_string_lossy().into_owned();
        guest::copy_into(&stage, &from, &format!("m/{name}"))?;
    }
    let archive = crate::initramfs::cpio(&[("", stage.as_path())])?;
    let path = out_dir.join("bench-nic-initramfs.cpio.gz");
    let file = std::fs::File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    gz.write_all(&archive).map_err(|e| format!("write {}: {e}", path.display()))?;
    gz.finish().map_err(|e| format!("write {}: {e}", path.display()))?;
    let _ = std::fs::remove_dir_all(&stage);
    Ok(path)
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("pick a free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| format!("local_addr: {e}"))
}

/// One booted guest serving `nicserve`.
struct Served {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    port: u16,
}

fn boot(kernel: Kernel, elf: &Path, initrd: &Path, net: qemu::Net, log: &Path) -> Result<Served> {
    let port = free_port()?;
    let cmdline = match kernel {
        Kernel::Kiln => crate::usertest::init_cmdline(
            "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off",
            &format!("/init nicserve {GUEST_PORT}"),
        ),
        Kernel::Linux => {
            format!("console=ttyS0 quiet panic=-1 rdinit=/init {} -- nicserve {GUEST_PORT}", guest::FAIR.linux_cmdline)
        }
    };
    let boot = qemu::Boot {
        image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd.to_path_buf()) },
        smp: 1,
        extra: qemu::net_args(net, &format!("tcp:127.0.0.1:{port}-:{GUEST_PORT}"))?,
    };
    let mut child = qemu::command_on(&boot, guest::FAIR.cpu)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    let pipe = child.stdout.take().ok_or("qemu stdout not captured")?;
    let mut log_file = std::fs::File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut buf = Vec::new();
        let mut filter = qemu::AnsiFilter::default();
        while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let mut clean = Vec::new();
            filter.filter(&buf, &mut clean);
            buf.clear();
            let line = String::from_utf8_lossy(&clean).into_owned();
            let _ = log_file.write_all(line.as_bytes());
            if tx.send(line.trim().to_string()).is_err() {
                break;
            }
        }
    });
    Ok(Served { child, lines, port })
}

/// Waits for `kbench nic ready`; the reason otherwise.
fn wait_ready(s: &Served, limit: Duration) -> std::result::Result<(), String> {
    let until = Instant::now() + limit;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match s.lines.recv_timeout(left) {
            Ok(l) if l.contains("kbench nic ready") => return Ok(()),
            Ok(l) if l.contains("kbench nic n/a") || l.contains("panic") => return Err(l),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Err(format!("no `kbench nic ready` within {} s", limit.as_secs()))
}

/// Runs the host client once; ns per operation or why not.
fn client(kbench: &Path, port: u16, b: &NicBench) -> Outcome {
    let out = Command::new("timeout")
        .arg("120")
        .arg(kbench)
        .args(["nicclient", "127.0.0.1", &port.to_string(), b.mode, &b.count.to_string()])
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            match guest::parse(&text).remove(&format!("nic_{}", b.mode)) {
                Some(r) => r,
                None => Outcome::Failed(format!("no result ({})", o.status)),
            }
        }
        Err(e) => Outcome::Failed(format!("cannot run {}: {e}", kbench.display())),
    }
}

/// Boots `kernel` on `net`, runs every row `runs` times, stops it.
fn measure(
    kernel: Kernel,
    elf: &Path,
    initrd: &Path,
    net: (qemu::Net, &str),
    kbench: &Path,
    runs: usize,
) -> Result<Vec<Cell>> {
    let log = crate::build::out_dir().join(format!("bench-nic-{}-{}.log", kernel.name(), net.1));
    let mut s = boot(kernel, elf, initrd, net.0, &log)?;
    let mut cells = vec![Cell::default(); NIC_BENCHES.len()];
    match wait_ready(&s, Duration::from_secs(180)) {
        Ok(()) => {
            for run in 0..runs {
                for (b, cell) in NIC_BENCHES.iter().zip(cells.iter_mut()) {
                    match client(kbench, s.port, b) {
                        Outcome::Ok { ns, .. } => {
                            println!("[{} {} {}/{runs}] nic_{} {ns:.0} ns", kernel.name(), net.1, run + 1, b.mode);
                            cell.values.push(ns)
                        }
                        Outcome::Failed(e) => {
                            println!("[{} {}] nic_{} n/a {e}", kernel.name(), net.1, b.mode);
                            cell.error = Some(e)
                        }
                    }
                }
            }
            let _ = Command::new(kbench)
                .args(["nicclient", "127.0.0.1", &s.port.to_string(), "stop"])
                .stdin(Stdio::null())
                .status();
        }
        Err(e) => {
            println!("[{} {}] {e}", kernel.name(), net.1);
            for c in &mut cells {
                c.error = Some(e.clone());
            }
        }
    }
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if let Ok(Some(_)) = s.child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    Ok(cells)
}

fn fmt_time(c: &Cell) -> String {
    match c.median() {
        Some(v) => super::report::human(v),
        None => format!("n/a ({})", c.error.as_deref().unwrap_or("did not run")),
    }
}

/// MB/s from ns per 64 KiB.
fn rate(ns: Option<f64>) -> String {
    ns.map(|v| format!("{:.0} MB/s", 65536.0 / v * 1e3)).unwrap_or_else(|| "–".into())
}

/// Runs the NIC rows and writes bench/results/nic.{md,json} (and a
/// history copy for a full run); returns the Markdown.
pub fn run(root: &Path, kiln_elf: &Path, linux: &Path, runs: usize, keep_history: bool) -> Result<String> {
    let out_dir = crate::build::out_dir();
    let progs = guest::build_programs(root)?;
    let kbench = progs.join("kbench");
    let initrd = initramfs(&progs, &out_dir, linux)?;
    // [nic][kernel] → cells.
    let mut all: Vec<[Vec<Cell>; 2]> = Vec::new();
    for &(net, name, linux_has_driver) in NICS {
        let kiln = measure(Kernel::Kiln, kiln_elf, &initrd, (net, name), &kbench, runs)?;
        let lin = if linux_has_driver {
            measure(Kernel::Linux, linux, &initrd, (net, name), &kbench, runs)?
        } else {
            vec![
                Cell { values: Vec::new(), error: Some("Debian's cloud kernel has no e1000 driver".into()) };
                NIC_BENCHES.len()
            ]
        };
        all.push([kiln, lin]);
    }
    let date = super::command_line_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let commit = super::command_line_output("git", &["-C", &root.to_string_lossy(), "describe", "--always", "--dirty"]);
    let mut md = format!(
        "Through the NIC, measured {date}, Kiln {commit} against Linux {}: QEMU TCG `-cpu {} -m 512M -smp 1`, \
         Linux with `{}`; the NIC on QEMU user networking (slirp, `restrict=on`) with one hostfwd rule on \
         127.0.0.1; `kbench nicserve` in the guest, `kbench nicclient` on the host. Wall clock, median of {runs} \
         runs per boot; {} MiB per bandwidth run, {ROUND_TRIPS} round trips per latency run. ratio = Kiln / \
         Linux time per operation (below 1 = Kiln faster). slirp relays every byte through host sockets in QEMU's \
         main loop and caps both kernels alike. Debian's cloud kernel has no e1000 driver, so that column is \
         Kiln's alone.\n\n\
         | benchmark | one operation | Kiln virtio | Linux virtio | ratio | Kiln e1000 |\n|---|---|---:|---:|---:|---:|\n",
        guest::linux_version(linux),
        guest::FAIR.cpu,
        guest::FAIR.linux_cmdline,
        BULK_BYTES >> 20,
    );
    let mut json_rows = Vec::new();
    for (i, b) in NIC_BENCHES.iter().enumerate() {
        let (kv, lv, ke) = (&all[0][0][i], &all[0][1][i], &all[1][0][i]);
        let ratio = match (kv.median(), lv.median()) {
            (Some(k), Some(l)) if l > 0.0 => format!("{:.2}", k / l),
            _ => "n/a".into(),
        };
        let with_rate = |c: &Cell| {
            if b.mode == "rtt" {
                fmt_time(c)
            } else {
                format!("{} ({})", fmt_time(c), rate(c.median()))
            }
        };
        md.push_str(&format!(
            "| nic_{} | {} | {} | {} | {ratio} | {} |\n",
            b.mode,
            b.op,
            with_rate(kv),
            with_rate(lv),
            with_rate(ke)
        ));
        let num = |c: &Cell| c.median().map(|v| format!("{v:.1}")).unwrap_or_else(|| "null".into());
        json_rows.push(format!(
            "    {{\"name\": \"nic_{}\", \"op\": {:?}, \"wall_ns\": {{\"kiln_virtio\": {}, \"linux_virtio\": {}, \
             \"kiln_e1000\": {}}}}}",
            b.mode,
            b.op,
            num(kv),
            num(lv),
            num(ke)
        ));
    }
    let json = format!(
        "{{\n  \"date\": {date:?},\n  \"kiln_commit\": {commit:?},\n  \"linux\": {:?},\n  \"machine\": \
         \"qemu-system-x86_64 -accel tcg -cpu {} -m 512M -smp 1, -netdev user (slirp) with hostfwd\",\n  \"runs\": \
         {runs},\n  \"benchmarks\": [\n{}\n  ]\n}}\n",
        guest::linux_version(linux),
        guest::FAIR.cpu,
        json_rows.join(",\n")
    );
    let results = root.join("bench/results");
    let write = |name: &str, text: &str| {
        let p = results.join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("create {}: {e}", d.display()))?;
        }
        std::fs::write(&p, text).map_err(|e| format!("write {}: {e}", p.display()))
    };
    write("nic.md", &md)?;
    write("nic.json", &json)?;
    if keep_history {
        // In a folder of their own: the trend chart reads the main
        // table's JSON files only.
        let stamp = super::command_line_output("date", &["-u", "+%Y-%m-%dT%H%M"]);
        write(&format!("history/nic/{stamp}-{}.json", commit.replace(['/', ' ', '='], "_")), &json)?;
    }
    println!("\n{md}");
    Ok(md)
}

const DOC_BEGIN: &str = "<!-- bench-nic:begin -->";
const DOC_END: &str = "<!-- bench-nic:end -->";

/// Replaces the NIC table between its markers in docs/performance.md.
pub fn update_doc(doc: &Path, table: &str) -> Result<()> {
    let text = std::fs::read_to_string(doc).map_err(|e| format!("read {}: {e}", doc.display()))?;
    let (Some(b), Some(e)) = (text.find(DOC_BEGIN), text.find(DOC_END)) else {
        return Err(format!("{} has no {DOC_BEGIN} ... {DOC_END} markers", doc.display()));
    };
    if e < b {
        return Err(format!("{}: the NIC table markers are out of order", doc.display()));
    }
    let new = format!("{}{DOC_BEGIN}\n{table}{}", &text[..b], &text[e..]);
    std::fs::write(doc, new).map_err(|e| format!("write {}: {e}", doc.display()))
}
