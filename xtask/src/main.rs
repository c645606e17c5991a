//! `xtask`: Kiln's host-side build tool. It builds the kernel with Debian's
//! toolchain (the only one here with `rust-src` for `-Zbuild-std`), writes
//! the symbol table into the image, makes a GRUB ISO, boots QEMU and runs
//! every test stage. Arguments are parsed by hand: there are few, and a
//! dependency-free parser keeps the tool quick to build before every `make`.
#![forbid(unsafe_code)]

mod appstest;
mod bench;
mod benchservers;
mod build;
mod crashtest;
mod debiantest;
mod diskfault;
mod diskstall;
mod hostile;
mod hostlibs;
mod initramfs;
mod iso;
mod ksyms;
mod linuxjournal;
mod makedisk;
mod mountopts;
mod netflood;
mod nethub;
mod netkeep;
mod netseg;
mod netv6;
mod qemu;
mod recap;
mod rootfs;
mod serverstest;
mod storagetest;
mod tapnet;
mod testrun;
mod unsafe_check;
mod usertest;
mod writeback;

use std::process::ExitCode;

/// Errors are reported once, at the top, as text: the tool's user wants the
/// message, not a type.
pub type Result<T> = std::result::Result<T, String>;

const USAGE: &str = "\
usage: cargo run -p xtask -- <command>

commands:
  deps                      install missing Debian packages (scripts/deps.sh)
  build [--test]            build the kernel (or the ktest kernel), patch ksyms
  run [--smp N] [--cmdline \"...\"] [-- <qemu args>]
                            build and boot in QEMU (env: SMP, default 2;
                            MEM, default 512M or 2G with ROOT=debian;
                            ROOT=debian for the Debian root; QEMU_EXTRA, KVM=1;
                            IOMMU=1: q35 with a VT-d IOMMU (DMA remapping);
                            NET=virtio|e1000|none, default virtio, on user
                            networking; HOSTFWD=\"tcp:127.0.0.1:8080-:80 ...\";
                            NET=socket NODE=n [SEGMENT=port]: machine n of the
                            segment whose hub `nethub` runs)
  nethub [PORT [N]]         the hub of a NET=socket segment (127.0.0.1:PORT,
                            default 10400; machines 0..N, default 4)
  rootfs                    build the Debian root from Debian's packages into
                            build/debian (env: ROOTFS_PACKAGES)
  iso                       build the kernel and make target/kiln/kiln.iso
  test [--smp N]            every test stage; QEMU stages at -smp 1 and the SMP
                            stage at 2 and 4, or all of them at N with --smp
                            (env: KTEST_FILTER=TEXT runs only matching kernel tests)
  test-kernel [--smp N] [-n RUNS]
                            only the in-kernel stage at -smp N (default 4),
                            RUNS times in a row (default 1), stopping at the
                            first failing run (env: KTEST_FILTER=TEXT)
  test-storage              only the storage stage (virtio-blk and NVMe disks, ext4)
  crashtest [-n N]          N power cuts of an ext4 workload (default 20;
                            env DISK_BUS=nvme cuts an NVMe disk)
  fuzz-ext4 [-n N]          10,000 mutated ext4 images through kiln-ext4 on the
                            host, then N of them (default 240) mounted in Kiln
  test-smp [--smp N]        only the SMP stage (at 2 and 4, or at N)
  test-debian               only the Debian-root stage (a small root from
                            Debian's packages, against the host in chroot)
  test-apps [WORKLOAD...]   only the Debian-workload stage (user/debian/apps),
                            or the named workloads of it
  test-servers [SECTION...] only the servers stage (user/debian/servers:
                            nginx, redis, memcached, iperf3 over loopback)
  test-servers-nic          nginx, redis and netecho in Kiln reached by host
                            clients through a virtio NIC (64 MiB each way)
  test-net                  netecho from the host through each NIC (virtio, e1000;
                            64 MiB each way), then two machines on a NET=socket
                            segment under malformed frames and floods
  nettest-long              netecho through each NIC with 1 GiB each way
  test-tap                  netecho through a virtio NIC on a tap device in a
                            network namespace made and removed for the run
                            (root; the path of bench-servers tap)
  fuzz-net                  the segment run with the issue's counts (100,000
                            frames, 50,000 SYNs, 5,000 connections)
  bench [smoke]             Kiln against Linux under icount and wall clock
                            (env: BENCH_RUNS, BENCH_FILTER, BENCH_SCALE, BENCH_KERNEL)
  bench-servers [slirp|tap|both]
                            issue 12's application rows (nginx, redis, iperf3,
                            memcached, netecho) through a virtio NIC on slirp
                            (default) or on a tap in a network namespace,
                            Kiln against Linux, to bench/results/servers.md
  fmt [--check]             rustfmt every crate
  clippy                    clippy on the host crates";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(args: &[String]) -> Result<ExitCode> {
    let Some((cmd, rest)) = args.split_first() else {
        println!("{USAGE}");
        return Ok(ExitCode::from(2));
    };
    match cmd.as_str() {
        "deps" => {
            no_args(cmd, rest)?;
            build::deps()?;
            Ok(ExitCode::SUCCESS)
        }
        "build" => {
            let test = match rest {
                [] => false,
                [t] if t == "--test" => true,
                _ => return Err(format!("build: unexpected arguments {rest:?}")),
            };
            let elf = build::kernel(build::Flavor::from_test(test))?;
            println!("{}", elf.display());
            Ok(ExitCode::SUCCESS)
        }
        "run" => run(rest),
        "rootfs" => {
            no_args(cmd, rest)?;
            rootfs::make(&build::repo_root())?;
            Ok(ExitCode::SUCCESS)
        }
        "iso" => {
            no_args(cmd, rest)?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let cmdline = std::env::var("CMDLINE").unwrap_or_default();
            let out = build::out_dir().join("kiln.iso");
            iso::make(&elf, &cmdline, &out)?;
            println!("{}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        "test" => {
            let smp = match rest {
                [] => None,
                [flag, n] if flag == "--smp" => Some(parse_smp(n)?),
                _ => return Err(format!("test: unexpected arguments {rest:?}")),
            };
            testrun::all(&testrun::Cpus::new(smp))
        }
        "test-kernel" => {
            let (mut smp, mut runs) = (4, 1);
            let mut it = rest.iter();
            while let Some(flag) = it.next() {
                let value = it.next().ok_or_else(|| format!("test-kernel: {flag} wants a value"))?;
                match flag.as_str() {
                    "--smp" => smp = parse_smp(value)?,
                    "-n" => runs = value.parse::<u32>().map_err(|_| format!("test-kernel: bad count {value}"))?,
                    _ => return Err(format!("test-kernel: unexpected argument {flag}")),
                }
            }
            testrun::kernel_stage(smp, runs)
        }
        "test-storage" => {
            if !rest.is_empty() {
                return Err(format!("test-storage: unexpected arguments {rest:?}"));
            }
            let elf = build::kernel(build::Flavor::Normal)?;
            let (p, f) = storagetest::run(&build::repo_root(), &elf, 1)?;
            println!("{p} passed, {f} failed");
            Ok(if f == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "crashtest" => {
            let n = match rest {
                [] => 20,
                [flag, n] if flag == "-n" => n.parse::<u32>().map_err(|_| format!("crashtest: bad count {n}"))?,
                _ => return Err(format!("crashtest: unexpected arguments {rest:?}")),
            };
            let elf = build::kernel(build::Flavor::Normal)?;
            let bus = match std::env::var("DISK_BUS").unwrap_or_default().as_str() {
                "nvme" => storagetest::NVME,
                _ => storagetest::VIRTIO,
            };
            let (p, f) = crashtest::power_cuts(&build::repo_root(), &elf, 1, n, bus)?;
            println!("{p} passed, {f} failed");
            Ok(if f == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "fuzz-ext4" => {
            let n = match rest {
                [] => 240,
                [flag, n] if flag == "-n" => n.parse::<u64>().map_err(|_| format!("fuzz-ext4: bad count {n}"))?,
                _ => return Err(format!("fuzz-ext4: unexpected arguments {rest:?}")),
            };
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let host = std::process::Command::new(cargo)
                .args(["test", "--release", "-p", "kiln-ext4", "--test", "fuzz", "--", "--ignored", "--exact"])
                .arg("ten_thousand_mutated_images_never_panic")
                .arg("--nocapture")
                .status()
                .map_err(|e| format!("cargo test: {e}"))?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let (p, f) = hostile::run(&build::repo_root(), &elf, 1, n, 0x5EED_1000)?;
            let f = f + u64::from(!host.success());
            println!("{p} passed, {f} failed");
            Ok(if f == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "test-smp" => {
            let smp = match rest {
                [] => None,
                [flag, n] if flag == "--smp" => Some(parse_smp(n)?),
                _ => return Err(format!("test-smp: unexpected arguments {rest:?}")),
            };
            testrun::smp_only(&testrun::Cpus::new(smp))
        }
        "test-debian" => {
            no_args(cmd, rest)?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let (passed, failed) = debiantest::run(&build::repo_root(), &elf, 1)?;
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "test-apps" => {
            let elf = build::kernel(build::Flavor::Normal)?;
            let (passed, failed) = appstest::run(&build::repo_root(), &elf, rest)?;
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "test-servers" => {
            let elf = build::kernel(build::Flavor::Normal)?;
            let (passed, failed) = serverstest::run(&build::repo_root(), &elf, rest)?;
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "nettest-long" => {
            // The 1 GiB each way through each NIC from the host.
            no_args(cmd, rest)?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let (mut passed, mut failed) = (0, 0);
            for net in [qemu::Net::Virtio, qemu::Net::E1000] {
                let (p, f) = netseg::nic_echo(&build::repo_root(), &elf, net, serverstest::LONG_ECHO_BYTES)?;
                passed += p;
                failed += f;
            }
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "test-net" | "fuzz-net" => {
            no_args(cmd, rest)?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let (passed, failed) = if cmd == "fuzz-net" {
                netseg::segment(&build::repo_root(), &elf, netseg::LONG)?
            } else {
                netseg::stage(&build::repo_root(), &elf)?
            };
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "nethub" => nethub::main(rest),
        "test-tap" => {
            no_args(cmd, rest)?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let (passed, failed) = netseg::tap_echo(&build::repo_root(), &elf, netseg::TAP_BYTES)?;
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "test-servers-nic" => {
            no_args(cmd, rest)?;
            let elf = build::kernel(build::Flavor::Normal)?;
            let bytes = if cmd == "nettest-long" { serverstest::LONG_ECHO_BYTES } else { serverstest::ECHO_BYTES };
            let (passed, failed) = serverstest::nic(&build::repo_root(), &elf, bytes)?;
            recap::print();
            println!("{passed} passed, {failed} failed");
            Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        "bench" => bench::main(rest),
        "bench-servers" => benchservers::main(rest),
        "fmt" => build::host_fmt(rest),
        "clippy" => {
            no_args(cmd, rest)?;
            build::host_clippy()
        }
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(format!("unknown command `{cmd}`\n{USAGE}")),
    }
}

fn no_args(cmd: &str, rest: &[String]) -> Result<()> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(format!("{cmd}: unexpected arguments {rest:?}"))
    }
}

/// `run`: flags win over the environment (`SMP`, `CMDLINE`), and extra QEMU
/// arguments from `QEMU_EXTRA` come before those after `--`, so the command
/// line has the last word where QEMU lets a later option override.
fn run(args: &[String]) -> Result<ExitCode> {
    let mut smp = match std::env::var("SMP") {
        Ok(s) if !s.trim().is_empty() => parse_smp(&s)?,
        _ => 2,
    };
    let mut cmdline = std::env::var("CMDLINE").unwrap_or_default();
    let mut extra = qemu::env_extra();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smp" => smp = parse_smp(it.next().ok_or("--smp needs a value")?)?,
            "--cmdline" => cmdline = it.next().ok_or("--cmdline needs a value")?.clone(),
            "--" => {
                extra.extend(it.by_ref().cloned());
            }
            _ => return Err(format!("run: unexpected argument `{a}`")),
        }
    }
    let root = RootChoice::from_env()?;
    extra.splice(0..0, ["-m".to_string(), root.memory()]);
    let net = qemu::Net::from_env(qemu::Net::Virtio)?;
    let hostfwd = std::env::var("HOSTFWD").unwrap_or_default();
    if net == qemu::Net::Socket {
        // One machine of a segment whose hub (`make nethub`) is at
        // 127.0.0.1:SEGMENT; NODE numbers the machine (its port and MAC).
        let env_num = |name: &str, default: u16| -> Result<u16> {
            match std::env::var(name) {
                Ok(v) if !v.trim().is_empty() => v.trim().parse().map_err(|_| format!("{name}={v}: not a number")),
                _ => Ok(default),
            }
        };
        let hub = env_num("SEGMENT", nethub::DEFAULT_PORT)?;
        let node = env_num("NODE", 0)?;
        let node = u8::try_from(node).map_err(|_| format!("NODE={node}: at most 255"))?;
        extra.splice(0..0, nethub::netdev_args(hub, node, "virtio-net-pci"));
    } else {
        extra.splice(0..0, qemu::net_args(net, &hostfwd)?);
    }
    let disk = std::env::var("DISK").unwrap_or_default();
    if !disk.trim().is_empty() {
        extra.splice(0..0, qemu::disk_args(disk.trim(), std::env::var("DISK_BUS").unwrap_or_default().trim())?);
    }
    if qemu::iommu_from_env() {
        // Before the devices: QEMU wants the IOMMU created first.
        extra.splice(0..0, qemu::iommu_args());
    }
    let elf = build::kernel(build::Flavor::Normal)?;
    let extra_dir = std::env::var("EXTRA").ok().filter(|s| !s.trim().is_empty()).map(std::path::PathBuf::from);
    let initrd = match root {
        RootChoice::Busybox => initramfs::make(&build::repo_root(), &build::out_dir(), extra_dir.as_deref())?,
        RootChoice::Debian => rootfs::initramfs(&build::repo_root(), &build::out_dir(), extra_dir.as_deref())?,
    };
    // VIA_LDSO=1 starts Debian's /bin/sh (dash, dynamically linked)
    // through the dynamic loader, for kernels whose exec cannot load an
    // ELF interpreter yet; with one that can, /bin/sh runs as it is.
    let loader = (root == RootChoice::Debian && std::env::var("VIA_LDSO").is_ok_and(|v| v.trim() == "1"))
        .then_some(rootfs::LOADER);
    let command = std::env::var("CMD").unwrap_or_default();
    if !command.trim().is_empty() {
        return usertest::run_command(elf, initrd, &cmdline, loader, &command, smp, extra);
    }
    // Without a command, boot to an interactive shell unless the command
    // line picks something else (init=..., or `banner` for the live banner).
    if !cmdline.split_whitespace().any(|w| w.starts_with("init=") || w == "banner") {
        let init = match loader {
            Some(ld) => format!("init={ld} -- /bin/sh"),
            None => "init=/bin/sh".to_string(),
        };
        cmdline = format!("{} {init}", cmdline.trim()).trim().to_string();
    }
    let boot = qemu::Boot { image: qemu::Image::Kernel { elf, cmdline, initrd: Some(initrd) }, smp, extra };
    println!("Ctrl-A X quits QEMU; `exit` in the shell powers off");
    let status = qemu::run_interactive(&boot)?;
    Ok(ExitCode::from(qemu::exit_code(status)))
}

/// `ROOT=`: the busybox root the tests use (the default), or the Debian
/// root `make rootfs` builds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RootChoice {
    Busybox,
    Debian,
}

impl RootChoice {
    fn from_env() -> Result<RootChoice> {
        match std::env::var("ROOT").unwrap_or_default().trim() {
            "" | "busybox" => Ok(RootChoice::Busybox),
            "debian" => Ok(RootChoice::Debian),
            other => Err(format!("ROOT={other}: expected `debian` or `busybox`")),
        }
    }

    /// Guest memory: `MEM` (QEMU's `-m` syntax), else 512M for the busybox
    /// root and 2G for Debian's, which unpacks to a tmpfs that may hold
    /// half of memory (as on Linux) and then runs compilers and servers.
    fn memory(self) -> String {
        match std::env::var("MEM") {
            Ok(m) if !m.trim().is_empty() => m.trim().to_string(),
            _ if self == RootChoice::Debian => "2G".to_string(),
            _ => "512M".to_string(),
        }
    }
}

fn parse_smp(s: &str) -> Result<u32> {
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("bad CPU count `{s}`")),
    }
}
