//! Booting the kernel in QEMU, interactively or under a timeout.
//!
//! The kernel ends a run by writing to the `isa-debug-exit` port, which
//! makes QEMU exit with `(value << 1) | 1`: 33 for success and 35 for
//! failure. Any other status is QEMU's own (bad option, signal), so callers
//! keep those apart from a kernel verdict.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::Result;

pub const EXIT_SUCCESS: i32 = 33;
pub const EXIT_FAILURE: i32 = 35;

pub enum Image {
    /// Direct boot through QEMU's multiboot/PVH loader.
    Kernel { elf: PathBuf, cmdline: String, initrd: Option<PathBuf> },
    /// A bootable ISO, through the BIOS and GRUB.
    Cdrom(PathBuf),
}

pub struct Boot {
    pub image: Image,
    pub smp: u32,
    pub extra: Vec<String>,
}

/// Extra QEMU arguments from `QEMU_EXTRA`, split on whitespace (no
/// quoting: arguments with spaces go after `--` instead).
pub fn env_extra() -> Vec<String> {
    std::env::var("QEMU_EXTRA").unwrap_or_default().split_whitespace().map(String::from).collect()
}

/// QEMU's VT-d IOMMU, on the q35 machine it needs (it has no `pc`
/// model). Interrupt remapping stays off: Kiln drives DMA remapping only.
pub fn iommu_args() -> Vec<String> {
    ["-machine", "q35", "-device", "intel-iommu,intremap=off"].into_iter().map(String::from).collect()
}

/// `IOMMU=1`: boot with [`iommu_args`].
pub fn iommu_from_env() -> bool {
    std::env::var("IOMMU").is_ok_and(|v| v.trim() == "1")
}

/// The NIC a boot gets (`NET=`): none, virtio-net or e1000, each on QEMU
/// user networking, or a virtio-net on a `NET=socket` segment
/// ([`crate::nethub`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Net {
    None,
    Virtio,
    E1000,
    Socket,
}

impl Net {
    /// `NET=` from the environment, or `default` when unset or empty.
    pub fn from_env(default: Net) -> Result<Net> {
        match std::env::var("NET").unwrap_or_default().trim() {
            "" => Ok(default),
            "none" => Ok(Net::None),
            "virtio" => Ok(Net::Virtio),
            "e1000" => Ok(Net::E1000),
            "socket" => Ok(Net::Socket),
            other => Err(format!("NET={other}: expected virtio, e1000, socket or none")),
        }
    }
}

/// QEMU arguments for `net` on user networking (slirp) with `restrict=on`:
/// the guest reaches nothing beyond slirp's own gateway and DNS, and only
/// the `hostfwd` rules (QEMU's syntax, separated by spaces) connect it to
/// the host, each bound to 127.0.0.1.
pub fn net_args(net: Net, hostfwd: &str) -> Result<Vec<String>> {
    let model = match net {
        Net::None => return Ok(Vec::new()),
        Net::Virtio => "virtio-net-pci",
        Net::E1000 => "e1000",
        Net::Socket => return Err("NET=socket takes no hostfwd rules (see nethub::netdev_args)".into()),
    };
    let mut netdev = "user,id=n0,restrict=on".to_string();
    for rule in hostfwd.split_whitespace() {
        if !(rule.starts_with("tcp:127.0.0.1:") || rule.starts_with("udp:127.0.0.1:")) {
            return Err(format!("HOSTFWD rule {rule:?}: must start with tcp:127.0.0.1: or udp:127.0.0.1:"));
        }
        netdev.push_str(",hostfwd=");
        netdev.push_str(rule);
    }
    Ok(vec!["-netdev".into(), netdev, "-device".into(), format!("{model},netdev=n0")])
}

/// QEMU arguments attaching the raw disk image `path` (`DISK=`) on `bus`
/// (`DISK_BUS=`: virtio, the default, or nvme). Writes go to the image
/// file itself (cache=writeback: a guest flush reaches the host's page
/// cache, which a killed QEMU does not lose).
pub fn disk_args(path: &str, bus: &str) -> Result<Vec<String>> {
    if !std::path::Path::new(path).is_file() {
        return Err(format!("DISK={path}: no such image file (make disk builds one)"));
    }
    let device = match bus {
        "" | "virtio" => "virtio-blk-pci,drive=d0".to_string(),
        "nvme" => "nvme,drive=d0,serial=kiln0".to_string(),
        other => return Err(format!("DISK_BUS={other}: expected virtio or nvme")),
    };
    Ok(vec![
        "-drive".into(),
        format!("file={path},if=none,id=d0,format=raw,cache=writeback,discard=unmap"),
        "-device".into(),
        device,
    ])
}

/// KVM is opt-in: CI machines and most containers have no `/dev/kvm`, and
/// TCG is the configuration the tests are written against.
fn accel() -> &'static str {
    match std::env::var("KVM") {
        Ok(v) if v == "1" => "kvm",
        _ => "tcg",
    }
}

/// The CPU model every boot but the benchmarks' uses: everything TCG can
/// emulate, so the kernel's feature paths (SMAP, FSGSBASE, RDRAND...) are
/// exercised.
pub const DEFAULT_CPU: &str = "max";

/// The QEMU command for `boot` on the default CPU model.
pub fn command(boot: &Boot) -> Command {
    command_on(boot, DEFAULT_CPU)
}

/// The QEMU command for `boot` on CPU model `cpu` (QEMU's `-cpu` syntax,
/// e.g. `max,-erms,-fsrm`): `make bench` chooses its models per column.
pub fn command_on(boot: &Boot, cpu: &str) -> Command {
    let mut c = Command::new("qemu-system-x86_64");
    c.args(["-accel", accel(), "-cpu", cpu, "-m", "512M"])
        .arg("-smp")
        .arg(boot.smp.to_string())
        .args(["-nographic", "-no-reboot", "-nic", "none"])
        .args(["-serial", "mon:stdio"])
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=4"]);
    match &boot.image {
        Image::Kernel { elf, cmdline, initrd } => {
            c.arg("-kernel").arg(elf);
            if let Some(initrd) = initrd {
                c.arg("-initrd").arg(initrd);
            }
            if !cmdline.is_empty() {
                c.arg("-append").arg(cmdline);
            }
        }
        Image::Cdrom(iso) => {
            // Boot the CD first rather than after SeaBIOS gives up on the
            // (absent) disk and floppy.
            c.arg("-cdrom").arg(iso).args(["-boot", "d"]);
        }
    }
    c.args(behind_iommu(&boot.extra));
    c
}

/// `extra` with every virtio device put behind the IOMMU when the boot
/// has one: QEMU's virtio devices bypass it unless `iommu_platform=on`
/// (then they offer VIRTIO_F_ACCESS_PLATFORM, which Kiln's drivers
/// accept; QEMU allows it only on a modern-only device, hence
/// `disable-legacy=on`). The e1000 and NVMe models always go through it.
pub fn behind_iommu(extra: &[String]) -> Vec<String> {
    let has_iommu = extra.iter().any(|a| a.starts_with("intel-iommu"));
    extra
        .iter()
        .map(|a| {
            if has_iommu && a.starts_with("virtio-") && a.contains("-pci") && !a.contains("iommu_platform") {
                format!("{a},disable-legacy=on,iommu_platform=on")
            } else {
                a.clone()
            }
        })
        .collect()
}

/// Maps QEMU's status to ours: the kernel's verdict becomes 0 or 1, and
/// anything else (QEMU's own errors) passes through.
pub fn exit_code(status: Option<i32>) -> u8 {
    match status {
        Some(EXIT_SUCCESS) => 0,
        Some(EXIT_FAILURE) => 1,
        Some(n) => u8::try_from(n).unwrap_or(1),
        None => 1,
    }
}

/// Boots with the terminal attached. Returns QEMU's exit code (`None` if
/// a signal ended it).
pub fn run_interactive(boot: &Boot) -> Result<Option<i32>> {
    let status = command(boot).status().map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    // SeaBIOS turns off line wrapping (ESC[?7l) and QEMU leaves it so.
    print!("\x1b[?7h");
    let _ = std::io::stdout().flush();
    Ok(status.code())
}

pub struct Captured {
    /// QEMU's exit code; `None` if it was killed for taking too long (or
    /// died from a signal, reported the same way).
    pub status: Option<i32>,
    pub timed_out: bool,
    pub output: String,
}

/// Boots without a terminal, copying the serial output to ours and to
/// `log` as it arrives, and kills QEMU after `timeout`.
///
/// stdin is `/dev/null` so QEMU never puts a terminal into raw mode that
/// it might not get to restore if killed. Terminal escape sequences are
/// dropped from the copy: SeaBIOS and GRUB clear the screen, which would
/// wipe the earlier stages' output from view and clutter the log.
pub fn run_captured(boot: &Boot, timeout: Duration, log: &std::path::Path) -> Result<Captured> {
    run_captured_with_monitor(boot, timeout, log, None)
}

/// As [`run_captured`], with QEMU started inside the network namespace
/// `netns` (`ip netns exec`) when given, so a tap device made there is
/// the one its `-netdev tap` opens ([`crate::tapnet`]).
pub fn run_captured_in(boot: &Boot, timeout: Duration, log: &std::path::Path, netns: Option<&str>) -> Result<Captured> {
    let cmd = match netns {
        Some(ns) => in_netns(ns, &command(boot)),
        None => command(boot),
    };
    run_command_captured(cmd, timeout, log, None)
}

/// `cmd` run by `ip netns exec ns` (which execs it: killing the child
/// kills QEMU itself).
pub fn in_netns(ns: &str, cmd: &Command) -> Command {
    let mut wrapped = Command::new("ip");
    wrapped.args(["netns", "exec", ns]).arg(cmd.get_program()).args(cmd.get_args());
    wrapped
}

/// The marker a guest prints to ask for a monitor command (the test
/// kernel's NIC fault tests): `qemu-monitor: set_link n1 off`.
pub const MONITOR_MARKER: &str = "qemu-monitor: ";

/// QEMU arguments for a human monitor on the unix socket `path`.
pub fn monitor_args(path: &std::path::Path) -> Vec<String> {
    vec!["-monitor".into(), format!("unix:{},server=on,wait=off", path.display())]
}

/// The monitor command a guest line asks for, if it is one the guest may
/// ask for: only `set_link <netdev> on|off` (link faults), nothing that
/// reaches beyond the VM.
pub fn monitor_request(line: &str) -> Option<String> {
    let (_, cmd) = line.split_once(MONITOR_MARKER)?;
    let words: Vec<&str> = cmd.split_whitespace().collect();
    match words.as_slice() {
        ["set_link", id, state @ ("on" | "off")]
            if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Some(format!("set_link {id} {state}\n"))
        }
        _ => None,
    }
}

/// Sends `cmd` to the monitor socket at `path`, connecting anew each time
/// (QEMU's monitor takes one client at a time).
fn send_monitor(path: &std::path::Path, cmd: &str) {
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(mut s) => {
            let _ = s.write_all(cmd.as_bytes());
            // The monitor reads input a character at a time and drops what
            // is unread when the client goes: wait for the prompt after
            // the command (the second one, after the banner's), 2 s at most.
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let deadline = Instant::now() + Duration::from_secs(2);
            let mut seen = Vec::new();
            let mut buf = [0u8; 512];
            while Instant::now() < deadline && seen.windows(7).filter(|w| w == b"(qemu) ").count() < 2 {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                    Err(_) => {}
                }
            }
        }
        Err(e) => eprintln!("monitor {}: {e}", path.display()),
    }
}

/// As [`run_captured`], and lines carrying [`MONITOR_MARKER`] are turned
/// into commands on the monitor socket `monitor` (see [`monitor_request`]).
pub fn run_captured_with_monitor(
    boot: &Boot,
    timeout: Duration,
    log: &std::path::Path,
    monitor: Option<std::path::PathBuf>,
) -> Result<Captured> {
    run_command_captured(command(boot), timeout, log, monitor)
}

/// The body of [`run_captured_with_monitor`] for a QEMU command already
/// built.
fn run_command_captured(
    mut cmd: Command,
    timeout: Duration,
    log: &std::path::Path,
    monitor: Option<std::path::PathBuf>,
) -> Result<Captured> {
    let mut log_file = std::fs::File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    let mut pipe = child.stdout.take().ok_or("qemu stdout not captured")?;
    // A thread does the copying so the main thread can watch the clock;
    // reading ends when QEMU exits or is killed and the pipe closes.
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        let mut ansi = AnsiFilter::default();
        let stdout = std::io::stdout();
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let start = all.len();
                    ansi.filter(&buf[..n], &mut all);
                    let mut out = stdout.lock();
                    let _ = out.write_all(&all[start..]);
                    let _ = out.flush();
                    let _ = log_file.write_all(&all[start..]);
                    if let Some(path) = &monitor {
                        // Lines that end in this chunk, from the start of
                        // the first (which may have begun in an earlier one).
                        let from = all[..start].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                        let text = String::from_utf8_lossy(&all[from..]).into_owned();
                        let complete = text.rfind('\n').map_or("", |i| &text[..i]);
                        for line in complete.lines() {
                            if let Some(cmd) = monitor_request(line) {
                                send_monitor(path, &cmd);
                            }
                        }
                    }
                }
            }
        }
        all
    });
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    let status: ExitStatus = loop {
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
    println!();
    Ok(Captured {
        status: if timed_out { None } else { status.code() },
        timed_out,
        output: String::from_utf8_lossy(&output).into_owned(),
    })
}

/// Removes ANSI escape sequences from a byte stream that arrives in
/// chunks: CSI sequences (`ESC [ params final`) and two-byte `ESC x` ones.
#[derive(Default)]
pub struct AnsiFilter {
    state: AnsiState,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum AnsiState {
    #[default]
    Text,
    Escape,
    Csi,
}

impl AnsiFilter {
    pub fn filter(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.state = match (self.state, b) {
                (AnsiState::Text, 0x1b) => AnsiState::Escape,
                (AnsiState::Text, _) => {
                    out.push(b);
                    AnsiState::Text
                }
                (AnsiState::Escape, b'[') => AnsiState::Csi,
                (AnsiState::Escape, _) => AnsiState::Text,
                // Parameter and intermediate bytes, then one final byte.
                (AnsiState::Csi, 0x20..=0x3f) => AnsiState::Csi,
                (AnsiState::Csi, _) => AnsiState::Text,
            };
        }
    }
}

#[cfg(test)]
mod net_tests {
    use super::*;

    #[test]
    fn monitor_requests() {
        assert_eq!(monitor_request("[ 1.0] INFO  qemu-monitor: set_link n1 off").as_deref(), Some("set_link n1 off\n"));
        assert_eq!(monitor_request("qemu-monitor: set_link n1 on\r").as_deref(), Some("set_link n1 on\n"));
        assert_eq!(monitor_request("qemu-monitor: quit"), None);
        assert_eq!(monitor_request("qemu-monitor: set_link n1 off; quit"), None);
        assert_eq!(monitor_request("qemu-monitor: set_link n1,x on"), None);
        assert_eq!(monitor_request("set_link n1 on"), None);
    }

    #[test]
    fn net_arguments() {
        assert!(net_args(Net::None, "").unwrap().is_empty());
        let a = net_args(Net::Virtio, "tcp:127.0.0.1:8080-:80 udp:127.0.0.1:5353-:53").unwrap();
        assert_eq!(a[1], "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=udp:127.0.0.1:5353-:53");
        assert_eq!(a[3], "virtio-net-pci,netdev=n0");
        assert!(net_args(Net::E1000, "tcp::8080-:80").is_err(), "a rule open to every address");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_are_dropped_across_chunks() {
        let mut f = AnsiFilter::default();
        let mut out = Vec::new();
        f.filter(b"\x1b[2J\x1b[?7lSeaBIOS\r\n\x1b[0;3", &mut out);
        f.filter(b"0;47mGRUB\x1b[H\x1b[Jhello\x1bc!", &mut out);
        assert_eq!(out, b"SeaBIOS\r\nGRUBhello!");
    }

    /// Needs QEMU, so it is not part of the hermetic host tests; run with
    /// `cargo test -p xtask -- --ignored`. An empty CD boots nothing and
    /// SeaBIOS waits forever, which is what a hung kernel looks like.
    #[test]
    #[ignore]
    fn captured_run_times_out() {
        let dir = std::env::temp_dir().join(format!("xtask-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let iso = dir.join("empty.iso");
        std::fs::write(&iso, [0u8; 4096]).unwrap();
        let boot = Boot { image: Image::Cdrom(iso), smp: 1, extra: Vec::new() };
        let start = Instant::now();
        let run = run_captured(&boot, Duration::from_secs(3), &dir.join("log")).unwrap();
        assert!(run.timed_out);
        assert_eq!(run.status, None);
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(run.output.contains("SeaBIOS"), "{}", run.output);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code(Some(33)), 0);
        assert_eq!(exit_code(Some(35)), 1);
        assert_eq!(exit_code(Some(2)), 2);
        assert_eq!(exit_code(None), 1);
    }

    #[test]
    fn virtio_goes_behind_the_iommu() {
        let args: Vec<String> = ["-device", "virtio-net-pci,netdev=n0", "-device", "e1000,netdev=n1"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(behind_iommu(&args), args);
        let with: Vec<String> = iommu_args().into_iter().chain(args.iter().cloned()).collect();
        let out = behind_iommu(&with);
        assert!(out.contains(&"virtio-net-pci,netdev=n0,disable-legacy=on,iommu_platform=on".to_string()));
        assert!(out.contains(&"e1000,netdev=n1".to_string()));
    }

    #[test]
    fn command_line() {
        let boot = Boot {
            image: Image::Kernel { elf: "k.elf".into(), cmdline: "a=1 b".into(), initrd: None },
            smp: 2,
            extra: vec!["-s".into()],
        };
        let args: Vec<String> = command(&boot).get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let joined = args.join(" ");
        assert!(joined.contains("-smp 2 "), "{joined}");
        assert!(joined.contains("-kernel k.elf -append"), "{joined}");
        assert!(args.contains(&"a=1 b".to_string()));
        assert_eq!(args.last().map(String::as_str), Some("-s"));
        assert!(joined.contains("isa-debug-exit,iobase=0xf4,iosize=4"));
    }
}
