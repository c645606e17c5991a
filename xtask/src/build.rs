//! Paths, toolchain selection and the kernel build. The kernel needs
//! `-Zbuild-std`, which only Debian's toolchain can do here (rustup's lacks
//! `rust-src`), so every cargo this tool starts is `/usr/bin/cargo` with
//! `RUSTC=/usr/bin/rustc`: mixing toolchains in one target dir would make
//! each invocation rebuild what the other built.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::{ksyms, Result};

pub const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
const DEBIAN_RUSTDOC: &str = "/usr/bin/rustdoc";
const KERNEL_TARGET: &str = "x86_64-unknown-none";
const LINKER: &str = "ld.lld-16";

/// The checkout this xtask was built from. Taken at compile time so it is
/// right whatever the current directory; a fresh clone elsewhere compiles
/// its own xtask and so gets its own path.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Where finished artifacts (patched ELFs, ISOs, logs) go.
pub fn out_dir() -> PathBuf {
    repo_root().join("target").join("kiln")
}

/// `/usr/bin/cargo` with Debian's compiler, in the repo root. Flags a
/// caller's environment may carry are cleared so builds are reproducible;
/// `CARGO_ENCODED_RUSTFLAGS` in particular would silently win over ours.
pub fn debian_cargo() -> Command {
    let mut c = Command::new(DEBIAN_CARGO);
    c.current_dir(repo_root())
        .env("RUSTC", DEBIAN_RUSTC)
        // Doc tests are compiled by rustdoc; rustup's would not read the
        // rlibs Debian's rustc wrote.
        .env("RUSTDOC", DEBIAN_RUSTDOC)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTUP_TOOLCHAIN");
    c
}

/// Runs `cmd` with inherited stdio and fails unless it exits 0.
pub fn run_checked(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// `deps`: the package check lives in a shell script because `make` must
/// run it before any Rust toolchain is known to exist.
pub fn deps() -> Result<()> {
    let script = repo_root().join("scripts").join("deps.sh");
    run_checked(Command::new("bash").arg(script), "scripts/deps.sh")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// The interactive kernel (`make run`).
    Normal,
    /// The in-kernel test runner (feature `ktest`).
    Test,
}

impl Flavor {
    pub fn from_test(test: bool) -> Self {
        if test {
            Flavor::Test
        } else {
            Flavor::Normal
        }
    }

    /// Separate target dirs: the two differ only by a feature, and sharing
    /// one would make each build invalidate the other's kernel crate.
    fn target_dir(self) -> PathBuf {
        let name = match self {
            Flavor::Normal => "kernel",
            Flavor::Test => "kernel-test",
        };
        repo_root().join("target").join(name)
    }

    fn elf_name(self) -> &'static str {
        match self {
            Flavor::Normal => "kiln.elf",
            Flavor::Test => "kiln-test.elf",
        }
    }
}

/// Builds the kernel in release mode (which keeps line-level debug info),
/// copies it to `target/kiln/` and writes the symbol table into the copy.
/// The copy, not cargo's output, is patched so cargo's fingerprints stay
/// valid and the next build is a no-op.
pub fn kernel(flavor: Flavor) -> Result<PathBuf> {
    vdso()?;
    components()?;
    let target_dir = flavor.target_dir();
    let mut cmd = kernel_cargo("build", flavor);
    run_checked(&mut cmd, "kernel build")?;

    let built = target_dir.join(KERNEL_TARGET).join("release").join("kiln");
    let out = out_dir();
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
    let elf = out.join(flavor.elf_name());
    let report = ksyms::patch_file(&built, &elf)?;
    println!("ksyms: {report}");
    Ok(elf)
}

/// Builds the vDSO image (`user/vdso`, C) the kernel embeds with
/// `include_bytes!`: it must exist before any kernel build or lint.
pub fn vdso() -> Result<()> {
    let mut make = Command::new("make");
    make.args(["-s", "-C"]).arg(repo_root().join("user").join("vdso"));
    run_checked(&mut make, "building the vDSO (make -C user/vdso)")
}

/// The component images, in the order of their slots in the global
/// layout (kernel `component::IMAGES` has the same list): component `i`
/// is linked at `COMPONENT_LAYOUT_BASE + i * COMPONENT_SLOT_SIZE`.
pub const COMPONENTS: &[&str] = &["calc", "client"];
const COMPONENT_LAYOUT_BASE: u64 = 0x10_0000_0000;
const COMPONENT_SLOT_SIZE: u64 = 0x1_0000_0000;

/// Builds the component images (`components/`, docs/components.md) into
/// `build/components/NAME.elf`, which the kernel embeds: each a static
/// executable at its slot's address, with no relocations left (checked
/// again by the kernel's loader).
pub fn components() -> Result<()> {
    let out = repo_root().join("build").join("components");
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
    for (slot, name) in COMPONENTS.iter().enumerate() {
        let base = COMPONENT_LAYOUT_BASE + slot as u64 * COMPONENT_SLOT_SIZE;
        let mut cmd = components_cargo("rustc", Some(name));
        cmd.args(["--", &format!("-Clinker={LINKER}"), "-Clink-arg=--no-pie"])
            .arg(format!("-Clink-arg=--image-base={base:#x}"))
            .arg("-Clink-arg=-zmax-page-size=4096");
        run_checked(&mut cmd, &format!("building component {name}"))?;
        let built = repo_root().join("target").join("components").join(KERNEL_TARGET).join("release").join(name);
        let dest = out.join(format!("{name}.elf"));
        let bytes = std::fs::read(&built).map_err(|e| format!("read {}: {e}", built.display()))?;
        // Only a changed image is rewritten, so the kernel is not rebuilt
        // for nothing.
        if std::fs::read(&dest).ok().as_deref() != Some(&bytes[..]) {
            std::fs::write(&dest, &bytes).map_err(|e| format!("write {}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

/// Debian's cargo in `components/`, for the bare-metal target.
fn components_cargo(subcommand: &str, package: Option<&str>) -> Command {
    let mut cmd = debian_cargo();
    let path = format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default());
    cmd.current_dir(repo_root().join("components"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env("PATH", path)
        .args([subcommand, "-q", "--release", "--target", KERNEL_TARGET])
        .args(["-Zbuild-std=core,alloc,compiler_builtins", "-Zbuild-std-features=compiler-builtins-mem"])
        .arg("--target-dir")
        .arg(repo_root().join("target").join("components"));
    if let Some(p) = package {
        cmd.args(["-p", p]);
    }
    cmd
}

/// Debian's cargo set up for the bare-metal kernel: `subcommand` is
/// `build` or `clippy`.
fn kernel_cargo(subcommand: &str, flavor: Flavor) -> Command {
    let root = repo_root();
    let linker_script = root.join("kernel").join("linker.ld");
    let rustflags = [
        "-Crelocation-model=static".to_string(),
        "-Ccode-model=kernel".to_string(),
        // Backtraces walk the frame-pointer chain.
        "-Cforce-frame-pointers=yes".to_string(),
        format!("-Clink-arg=-T{}", linker_script.display()),
        "-Clink-arg=--no-pie".to_string(),
        format!("-Clinker={LINKER}"),
    ]
    .join(" ");
    let target_dir = flavor.target_dir();
    let mut cmd = debian_cargo();
    // Debian's cargo-clippy must win over rustup's on PATH.
    let path = format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default());
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .env("PATH", path)
        .env("RUSTFLAGS", rustflags)
        .args([subcommand, "-p", "kiln-kernel", "--release", "--target", KERNEL_TARGET])
        .args(["-Zbuild-std=core,alloc,compiler_builtins", "-Zbuild-std-features=compiler-builtins-mem"])
        .arg("--target-dir")
        .arg(&target_dir);
    if flavor == Flavor::Test {
        cmd.args(["--features", "ktest"]);
    }
    cmd
}

/// `fmt` for every crate of the workspace, the kernel and hal included
/// (rustfmt only parses, so the bare-metal target is no obstacle). Debian's
/// cargo may come without rustfmt; the rustup one on PATH formats the same
/// way, so it is an acceptable fallback for a tool that does not compile
/// anything.
pub fn host_fmt(args: &[String]) -> Result<ExitCode> {
    let check = args.iter().any(|a| a == "--check");
    if !check && !args.is_empty() {
        return Err(format!("fmt: unexpected arguments {args:?}"));
    }
    // The root workspace, then components/ (a workspace of its own).
    for manifest in ["Cargo.toml", "components/Cargo.toml"] {
        let mut cmd = if has_subcommand("fmt") {
            debian_cargo()
        } else {
            eprintln!("xtask: /usr/bin/cargo has no fmt; using the cargo on PATH");
            path_cargo()
        };
        cmd.args(["fmt", "--all", "--manifest-path"]).arg(repo_root().join(manifest));
        if check {
            cmd.args(["--", "--check"]);
        }
        run_checked(&mut cmd, "cargo fmt")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `clippy` for the host crates, with the same fallback as [`host_fmt`].
/// The fallback compiles with another rustc, so it gets its own target dir
/// instead of invalidating Debian's build artifacts.
pub fn host_clippy() -> Result<ExitCode> {
    let mut cmd = if has_subcommand("clippy") {
        let mut c = debian_cargo();
        c.env("PATH", format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default()));
        c
    } else {
        eprintln!("xtask: /usr/bin/cargo has no clippy; using the cargo on PATH");
        let mut c = path_cargo();
        c.env("CARGO_TARGET_DIR", repo_root().join("target").join("rustup"));
        c
    };
    cmd.args(["clippy", "-p", "kiln-util", "-p", "kiln-ipc", "-p", "linux-abi", "-p", "kiln-netlink"])
        .args(["-p", "kiln-ext4", "-p", "xtask", "--all-targets"])
        .args(["--", "-D", "warnings"]);
    run_checked(&mut cmd, "cargo clippy")?;
    if has_subcommand("clippy") {
        vdso()?;
        components()?;
        let mut c = components_cargo("clippy", None);
        c.args(["--workspace", "--", "-D", "warnings"]);
        run_checked(&mut c, "cargo clippy (components)")?;
        // The kernel (and hal) in both flavours, with the same flags as the build.
        for flavor in [Flavor::Normal, Flavor::Test] {
            let mut k = kernel_cargo("clippy", flavor);
            k.args(["--", "-D", "warnings"]);
            run_checked(&mut k, "kernel clippy")?;
        }
    } else {
        eprintln!("xtask: no /usr/bin/cargo-clippy (package rust-web-clippy): kernel not linted");
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether Debian's cargo has `sub` of its own. `cargo X --version` is no
/// test: cargo also finds rustup's `cargo-X` on PATH, and rustup's
/// clippy-driver cannot read crates Debian's rustc compiled.
fn has_subcommand(sub: &str) -> bool {
    Path::new(&format!("/usr/bin/cargo-{sub}")).exists()
}

/// The rustup cargo, with our Debian-specific overrides removed so it uses
/// its own toolchain throughout.
fn path_cargo() -> Command {
    let mut c = Command::new("cargo");
    c.current_dir(repo_root())
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    c
}
