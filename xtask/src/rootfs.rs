//! `make rootfs`: a Debian root file system built from Debian's own
//! packages, and the initramfs that carries it (`make run ROOT=debian`).
//!
//! The package set (the defaults below, or `ROOTFS_PACKAGES`) plus a
//! small base is resolved by apt's own resolver against an empty package
//! database (`apt-get install -s` with an empty dpkg status), so Depends
//! and Pre-Depends are followed recursively, virtual packages and
//! alternatives are chosen as apt would choose them on a fresh system, and
//! Recommends are left out. The `.deb` files are fetched with
//! `apt-get download` into `build/debian/debs/` (kept: a second run
//! downloads nothing) and unpacked with `dpkg-deb -x`. Maintainer scripts
//! do not run, so what they would have made is made here: the merged-/usr
//! layout, `/bin/sh` as dash, the alternatives their postinst scripts
//! register, the users and groups, `ld.so.cache` (the host's `ldconfig -r`)
//! and the mount points. Like Debian's slim images it leaves out manual
//! pages, message catalogues and documentation (copyright files stay).
//!
//! The tree is rebuilt only when the resolved set changes (a stamp lists
//! the .deb files); its cpio archive (uncompressed, see [`make_in`]) is
//! cached beside it. The initramfs booted is that archive followed by a
//! gzip member holding Kiln's test programs under `/t`, made fresh each
//! time: the kernel, like Linux, reads plain and compressed archives back
//! to back.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Result;

/// What `make rootfs` puts in by default (issue 11's list).
pub const DEFAULT_PACKAGES: &[&str] = &[
    "coreutils",
    "bash",
    "python3",
    "perl",
    "git",
    "make",
    "gcc",
    "binutils",
    "sqlite3",
    "xz-utils",
    "zstd",
    "jq",
    "openssl",
    "vim",
    "procps",
    "util-linux",
    "strace",
    "gdb",
    "nginx",
    "redis-server",
    "iperf3",
    "memcached",
    "stress-ng",
];

/// Always in the root, whatever `ROOTFS_PACKAGES` says: the shell, the
/// dynamic loader's tools and the few Essential packages that other
/// packages use without declaring it (Debian assumes Essential is there).
const BASE_PACKAGES: &[&str] = &[
    "base-files",
    "dash",
    "libc-bin",
    "coreutils",
    "debianutils",
    "sed",
    "grep",
    "findutils",
    "gzip",
    "tar",
    "diffutils",
    "mawk",
    "ncurses-base",
    "netbase",
];

/// The x86-64 dynamic loader's path in the root.
pub const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// Bumped when the layout code changes, so a cached tree is rebuilt.
const LAYOUT_VERSION: &str = "4";

/// Where the Debian root and its caches live.
pub fn dir(repo: &Path) -> PathBuf {
    repo.join("build/debian")
}

/// The requested packages: `ROOTFS_PACKAGES` (space- or comma-separated)
/// or the defaults.
pub fn requested_packages() -> Vec<String> {
    match std::env::var("ROOTFS_PACKAGES") {
        Ok(s) if !s.trim().is_empty() => {
            s.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).map(String::from).collect()
        }
        _ => DEFAULT_PACKAGES.iter().map(|s| s.to_string()).collect(),
    }
}

/// One resolved package: what `apt-get download` is asked for and the
/// file it writes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Resolved {
    pub name: String,
    pub version: String,
    pub arch: String,
}

impl Resolved {
    /// The file name `apt-get download` gives the package (an epoch's
    /// colon is written `%3a`).
    pub fn deb_name(&self) -> String {
        format!("{}_{}_{}.deb", self.name, self.version.replace(':', "%3a"), self.arch)
    }
}

/// Parses the `Inst` lines of `apt-get install -s`:
/// `Inst libc6 (2.36-9+deb12u10 Debian:12.15/oldstable [amd64])`.
pub fn parse_simulation(text: &str) -> Vec<Resolved> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("Inst ") else { continue };
        let Some((name, rest)) = rest.split_once(' ') else { continue };
        // "Inst pkg [oldver] (newver ...)" when upgrading: skip to the '('.
        let Some(paren) = rest.find('(') else { continue };
        let inner = &rest[paren + 1..];
        // "(VERSION RELEASE [ARCH])", sometimes followed by " []".
        let inner = inner.split_once(')').map_or(inner, |(i, _)| i);
        let Some(version) = inner.split_whitespace().next() else { continue };
        let arch = inner.rsplit_once('[').and_then(|(_, a)| a.split_once(']')).map_or("amd64", |(a, _)| a);
        out.push(Resolved { name: name.to_string(), version: version.to_string(), arch: arch.to_string() });
    }
    out.sort();
    out.dedup();
    out
}

/// [`resolve_uncached`], remembered in `work/resolved` until the request
/// or apt's package lists change: apt's resolver takes several seconds,
/// more than the rest of a `make run` with an unchanged root.
fn resolve(work: &Path, packages: &[String]) -> Result<Vec<Resolved>> {
    let lists = fs::metadata("/var/lib/apt/lists").and_then(|m| m.modified()).ok();
    let key = format!("request {} lists {lists:?}", packages.join(" "));
    let cache = work.join("resolved");
    if let Ok(text) = fs::read_to_string(&cache) {
        if let Some(rest) = text.strip_prefix(&format!("{key}\n")) {
            let resolved: Vec<Resolved> = rest
                .lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    Some(Resolved { name: w.next()?.into(), version: w.next()?.into(), arch: w.next()?.into() })
                })
                .collect();
            if !resolved.is_empty() {
                return Ok(resolved);
            }
        }
    }
    let resolved = resolve_uncached(work, packages)?;
    let mut text = format!("{key}\n");
    for r in &resolved {
        text.push_str(&format!("{} {} {}\n", r.name, r.version, r.arch));
    }
    fs::write(&cache, text).map_err(|e| format!("write {}: {e}", cache.display()))?;
    Ok(resolved)
}

/// Resolves `packages` (plus the base) with apt against an empty dpkg
/// status, as on a machine with nothing installed.
fn resolve_uncached(work: &Path, packages: &[String]) -> Result<Vec<Resolved>> {
    let status = work.join("empty-status");
    fs::write(&status, "").map_err(|e| format!("write {}: {e}", status.display()))?;
    let mut names: BTreeSet<String> = BASE_PACKAGES.iter().map(|s| s.to_string()).collect();
    names.extend(packages.iter().cloned());
    let simulate = || {
        Command::new("apt-get")
            .args(["install", "-s", "-q", "--no-install-recommends", "--no-install-suggests"])
            .arg(format!("-oDir::State::status={}", status.display()))
            .args(["-oDebug::NoLocking=1", "-oAPT::Get::Show-Versions=0"])
            .args(&names)
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| format!("cannot run apt-get: {e}"))
    };
    let mut out = simulate()?;
    if !out.status.success() {
        // A fresh machine has no package lists yet.
        eprintln!("rootfs: apt-get could not resolve the set; running apt-get update");
        crate::build::run_checked(Command::new("apt-get").args(["update", "-q"]), "apt-get update")?;
        out = simulate()?;
    }
    if !out.status.success() {
        return Err(format!(
            "apt-get cannot resolve {}:\n{}",
            names.iter().cloned().collect::<Vec<_>>().join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let resolved = parse_simulation(&String::from_utf8_lossy(&out.stdout));
    if resolved.is_empty() {
        return Err("apt-get resolved no packages".to_string());
    }
    Ok(resolved)
}

/// Downloads what is not in `debs` yet; returns the .deb paths in order.
fn download(debs: &Path, packages: &[Resolved]) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(debs).map_err(|e| format!("create {}: {e}", debs.display()))?;
    let missing: Vec<&Resolved> = packages.iter().filter(|p| !debs.join(p.deb_name()).is_file()).collect();
    if !missing.is_empty() {
        eprintln!("rootfs: downloading {} of {} packages", missing.len(), packages.len());
        // apt-get download writes into the current directory; as root it
        // warns that its sandbox user cannot write there, which is harmless.
        for chunk in missing.chunks(64) {
            let mut cmd = Command::new("apt-get");
            cmd.current_dir(debs).args(["download", "-q"]);
            for p in chunk {
                cmd.arg(format!("{}:{}={}", p.name, p.arch, p.version));
            }
            crate::build::run_checked(&mut cmd, "apt-get download")?;
        }
    }
    let mut paths = Vec::new();
    for p in packages {
        let path = debs.join(p.deb_name());
        if !path.is_file() {
            return Err(format!("apt-get download did not produce {}", path.display()));
        }
        paths.push(path);
    }
    Ok(paths)
}

/// The directories that merged /usr turns into symlinks (`/bin` ->
/// `usr/bin`), as Debian 12's usrmerge lays them out.
const MERGED_DIRS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Moves everything under `from` into `to`, merging directories; an
/// existing file under `to` wins (packages that ship both /bin/x and
/// /usr/bin/x ship the same program).
fn merge_into(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).map_err(|e| format!("create {}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("read {}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("read {}: {e}", from.display()))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let src_meta = fs::symlink_metadata(&src).map_err(|e| format!("stat {}: {e}", src.display()))?;
        match fs::symlink_metadata(&dst) {
            Ok(d) if d.is_dir() && src_meta.is_dir() => merge_into(&src, &dst)?,
            Ok(_) => {}
            Err(_) => fs::rename(&src, &dst).map_err(|e| format!("move {}: {e}", src.display()))?,
        }
    }
    Ok(())
}

/// Makes `/bin`, `/sbin`, `/lib*` symlinks into `/usr`.
fn merge_usr(tree: &Path) -> Result<()> {
    for d in MERGED_DIRS {
        let top = tree.join(d);
        let usr = tree.join("usr").join(d);
        match fs::symlink_metadata(&top) {
            Ok(m) if m.is_dir() => {
                merge_into(&top, &usr)?;
                fs::remove_dir_all(&top).map_err(|e| format!("remove {}: {e}", top.display()))?;
            }
            Ok(_) => continue,
            Err(_) => {}
        }
        if *d == "bin" || *d == "sbin" || *d == "lib" || usr.exists() {
            fs::create_dir_all(&usr).map_err(|e| format!("create {}: {e}", usr.display()))?;
            symlink(format!("usr/{d}"), &top).map_err(|e| format!("link {}: {e}", top.display()))?;
        }
    }
    Ok(())
}

/// One `update-alternatives --install` registration from a postinst.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alternative {
    pub link: String,
    pub name: String,
    pub path: String,
    pub priority: i64,
    /// (link, name, path) of each `--slave`.
    pub slaves: Vec<(String, String, String)>,
}

/// Finds the `update-alternatives --install LINK NAME PATH PRIORITY
/// [--slave LINK NAME PATH]...` calls in a maintainer script. Lines
/// continued with a backslash are joined; a call whose master uses shell
/// variables is skipped, and slaves end at the first such word (neither
/// can be read without running the script).
pub fn parse_alternatives(script: &str) -> Vec<Alternative> {
    let joined = script.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "--install") else { continue };
        if !words[..at].iter().any(|w| w.ends_with("update-alternatives")) {
            continue;
        }
        let args: Vec<&str> = words[at + 1..]
            .iter()
            .take_while(|w| !matches!(**w, ";" | "||" | "&&" | "|") && !w.starts_with('#'))
            .copied()
            .collect();
        // The master must be literal; slaves stop at the first word the
        // shell would expand (xz-utils builds its slaves in `$(...)`).
        let literal = |a: &&str| !a.contains('$') && !a.contains('`');
        if args.len() < 4 || !args[..4].iter().all(literal) {
            continue;
        }
        let args: Vec<&str> = args.into_iter().take_while(literal).collect();
        let Ok(priority) = args[3].parse() else { continue };
        let mut alt = Alternative {
            link: args[0].to_string(),
            name: args[1].to_string(),
            path: args[2].to_string(),
            priority,
            slaves: Vec::new(),
        };
        let mut rest = &args[4..];
        while let [flag, link, name, path, tail @ ..] = rest {
            if *flag != "--slave" && *flag != "--follower" {
                break;
            }
            alt.slaves.push((link.to_string(), name.to_string(), path.to_string()));
            rest = tail;
        }
        out.push(alt);
    }
    out
}

/// Picks the highest priority per name (update-alternatives' automatic
/// mode), keeping only choices whose target is in the tree.
pub fn choose_alternatives(all: Vec<Alternative>, exists: impl Fn(&str) -> bool) -> Vec<Alternative> {
    let mut best: BTreeMap<String, Alternative> = BTreeMap::new();
    for alt in all.into_iter().filter(|a| exists(&a.path)) {
        match best.get(&alt.name) {
            Some(b) if b.priority >= alt.priority => {}
            _ => {
                best.insert(alt.name.clone(), alt);
            }
        }
    }
    best.into_values().collect()
}

/// `dir/path` for an absolute path inside the tree.
fn in_tree(tree: &Path, path: &str) -> PathBuf {
    tree.join(path.trim_start_matches('/'))
}

/// Whether `path` (absolute, inside the root) exists in the tree,
/// resolving the merged-/usr links by hand (the host must not follow an
/// absolute symlink out of the tree).
fn tree_has(tree: &Path, path: &str) -> bool {
    let mut p = path.trim_start_matches('/').to_string();
    for d in MERGED_DIRS {
        if let Some(rest) = p.strip_prefix(&format!("{d}/")) {
            p = format!("usr/{d}/{rest}");
            break;
        }
    }
    fs::symlink_metadata(tree.join(&p)).is_ok()
}

/// Creates `link` -> `target` in the tree unless something is there.
fn link_if_missing(tree: &Path, link: &str, target: &str) -> Result<()> {
    let at = in_tree(tree, link);
    if fs::symlink_metadata(&at).is_ok() {
        return Ok(());
    }
    if let Some(parent) = at.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    }
    symlink(target, &at).map_err(|e| format!("link {}: {e}", at.display()))
}

/// Registers what the postinst scripts would have: `/etc/alternatives/NAME`
/// -> PATH and LINK -> `/etc/alternatives/NAME`, for each master and slave.
fn make_alternatives(tree: &Path, alternatives: &[Alternative]) -> Result<Vec<String>> {
    let mut made = Vec::new();
    for alt in alternatives {
        let mut pairs = vec![(alt.link.clone(), alt.name.clone(), alt.path.clone())];
        pairs.extend(alt.slaves.iter().filter(|(_, _, p)| tree_has(tree, p)).cloned());
        for (link, name, path) in pairs {
            link_if_missing(tree, &format!("/etc/alternatives/{name}"), &path)?;
            link_if_missing(tree, &link, &format!("/etc/alternatives/{name}"))?;
        }
        made.push(format!("{} -> {}", alt.link, alt.path));
    }
    Ok(made)
}

/// Users and groups: Debian's base-passwd master files' standard entries
/// plus the service users the default daemons' postinst scripts add.
const PASSWD: &str = "\
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
sync:x:4:65534:sync:/bin:/bin/sync
games:x:5:60:games:/usr/games:/usr/sbin/nologin
man:x:6:12:man:/var/cache/man:/usr/sbin/nologin
lp:x:7:7:lp:/var/spool/lpd:/usr/sbin/nologin
mail:x:8:8:mail:/var/mail:/usr/sbin/nologin
news:x:9:9:news:/var/spool/news:/usr/sbin/nologin
uucp:x:10:10:uucp:/var/spool/uucp:/usr/sbin/nologin
proxy:x:13:13:proxy:/bin:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
backup:x:34:34:backup:/var/backups:/usr/sbin/nologin
list:x:38:38:Mailing List Manager:/var/list:/usr/sbin/nologin
irc:x:39:39:ircd:/run/ircd:/usr/sbin/nologin
_apt:x:42:65534::/nonexistent:/usr/sbin/nologin
redis:x:100:101::/var/lib/redis:/usr/sbin/nologin
memcache:x:101:102:Memcached,,,:/nonexistent:/bin/false
iperf3:x:102:103::/nonexistent:/usr/sbin/nologin
user:x:1000:1000:Kiln user:/home/user:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
";

const GROUP: &str = "\
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
news:x:9:
uucp:x:10:
man:x:12:
proxy:x:13:
kmem:x:15:
dialout:x:20:
cdrom:x:24:
sudo:x:27:
audio:x:29:
www-data:x:33:
backup:x:34:
operator:x:37:
list:x:38:
irc:x:39:
src:x:40:
shadow:x:42:
utmp:x:43:
video:x:44:
plugdev:x:46:
staff:x:50:
games:x:60:
users:x:100:user
redis:x:101:
memcache:x:102:
iperf3:x:103:
user:x:1000:
nogroup:x:65534:
";

/// The files maintainer scripts or the installer would have written.
fn write_etc(tree: &Path) -> Result<()> {
    let profile = "\
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if [ \"$(id -u 2>/dev/null)\" = 0 ]; then PS1='kiln-debian:\\w# '; else PS1='kiln-debian:\\w$ '; fi
export PS1
";
    // base-files keeps pristine copies under /usr/share/base-files that
    // its postinst copies into /etc and /root.
    let base = tree.join("usr/share/base-files");
    for (src, dst) in [("profile", "etc/profile"), ("dot.bashrc", "root/.bashrc"), ("dot.profile", "root/.profile")] {
        let (src, dst) = (base.join(src), tree.join(dst));
        if src.is_file() && !dst.exists() {
            fs::copy(&src, &dst).map_err(|e| format!("copy {}: {e}", src.display()))?;
        }
    }
    let files: [(&str, &str); 7] = [
        ("etc/passwd", PASSWD),
        ("etc/group", GROUP),
        ("etc/hostname", "kiln\n"),
        ("etc/hosts", "127.0.0.1\tlocalhost\n127.0.1.1\tkiln\n::1\tlocalhost ip6-localhost ip6-loopback\n"),
        ("etc/shells", "/bin/sh\n/usr/bin/sh\n/bin/bash\n/usr/bin/bash\n/bin/dash\n/usr/bin/dash\n"),
        ("etc/fstab", "# Kiln mounts /proc, /sys, /dev and /tmp itself.\n"),
        ("etc/profile", profile),
    ];
    for (path, text) in files {
        let at = tree.join(path);
        // What a package or base-files put there stays, but for the user
        // tables, which the packages' postinst scripts would have filled.
        if path != "etc/passwd" && path != "etc/group" && at.exists() {
            continue;
        }
        fs::write(&at, text).map_err(|e| format!("write {path}: {e}"))?;
    }
    let shadow = PASSWD.lines().filter_map(|l| l.split(':').next()).map(|u| format!("{u}:*:19000:0:99999:7:::\n"));
    fs::write(tree.join("etc/shadow"), shadow.collect::<String>()).map_err(|e| format!("write etc/shadow: {e}"))?;
    fs::set_permissions(tree.join("etc/shadow"), fs::Permissions::from_mode(0o640))
        .map_err(|e| format!("chmod etc/shadow: {e}"))?;
    Ok(())
}

/// Leaves out what Debian's slim images leave out (dpkg's
/// `path-exclude` in their `excludes` file): manual pages, info, message
/// catalogues and documentation but the copyright files. About 90 MiB of
/// the default root, which would otherwise sit in memory.
fn slim(tree: &Path) -> Result<()> {
    for d in ["usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian", "usr/share/linda"] {
        let p = tree.join(d);
        if p.exists() {
            fs::remove_dir_all(&p).map_err(|e| format!("remove {}: {e}", p.display()))?;
        }
    }
    let doc = tree.join("usr/share/doc");
    let Ok(packages) = fs::read_dir(&doc) else { return Ok(()) };
    for pkg in packages.flatten() {
        let dir = pkg.path();
        if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        for item in fs::read_dir(&dir).map_err(|e| format!("read {}: {e}", dir.display()))?.flatten() {
            if item.file_name() == "copyright" {
                continue;
            }
            let p = item.path();
            let removed = if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(&p)
            } else {
                fs::remove_file(&p)
            };
            removed.map_err(|e| format!("remove {}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// Lays the unpacked packages out as an installed Debian system.
fn finish_tree(tree: &Path, control: &Path) -> Result<()> {
    merge_usr(tree)?;
    slim(tree)?;
    for (d, mode) in [
        ("tmp", 0o1777),
        ("proc", 0o555),
        ("sys", 0o555),
        ("dev", 0o755),
        ("run", 0o755),
        ("root", 0o700),
        ("home/user", 0o755),
        ("mnt", 0o755),
        ("var/tmp", 0o1777),
        ("var/log", 0o755),
        ("etc/alternatives", 0o755),
    ] {
        let p = tree.join(d);
        fs::create_dir_all(&p).map_err(|e| format!("create {}: {e}", p.display()))?;
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).map_err(|e| format!("chmod {d}: {e}"))?;
    }
    write_etc(tree)?;
    // dash's postinst makes /bin/sh (a diversion); bash ships none.
    link_if_missing(tree, "/usr/bin/sh", "dash")?;
    // Alternatives from every postinst, then the usual ones a postinst
    // makes in a way the parser cannot read.
    let mut all = Vec::new();
    for entry in fs::read_dir(control).map_err(|e| format!("read {}: {e}", control.display()))? {
        let path = entry.map_err(|e| format!("read {}: {e}", control.display()))?.path();
        if let Ok(text) = fs::read_to_string(path.join("postinst")) {
            all.extend(parse_alternatives(&text));
        }
    }
    let chosen = choose_alternatives(all, |p| tree_has(tree, p));
    make_alternatives(tree, &chosen)?;
    for (link, target) in [
        ("/usr/bin/cc", "gcc"),
        ("/usr/bin/c99", "gcc"),
        ("/usr/bin/vi", "vim.basic"),
        ("/usr/bin/vim", "vim.basic"),
        ("/usr/bin/awk", "mawk"),
        ("/usr/bin/editor", "vim.basic"),
        ("/usr/bin/pager", "less"),
    ] {
        let dir = Path::new(link).parent().and_then(Path::to_str).unwrap_or("/");
        if tree_has(tree, &format!("{dir}/{target}")) {
            link_if_missing(tree, link, target)?;
        }
    }
    // The dynamic loader's cache, as libc-bin's postinst builds it.
    if tree.join("etc/ld.so.conf").exists() {
        let status =
            Command::new("ldconfig").arg("-r").arg(tree).status().map_err(|e| format!("cannot run ldconfig: {e}"))?;
        if !status.success() {
            return Err(format!("ldconfig -r {} failed ({status})", tree.display()));
        }
    }
    Ok(())
}

/// Unpacks every package into a new tree and finishes its layout.
fn build_tree(work: &Path, debs: &[PathBuf]) -> Result<PathBuf> {
    let tree = work.join("root");
    let control = work.join("control");
    for d in [&tree, &control] {
        if d.exists() {
            fs::remove_dir_all(d).map_err(|e| format!("remove {}: {e}", d.display()))?;
        }
        fs::create_dir_all(d).map_err(|e| format!("create {}: {e}", d.display()))?;
    }
    for deb in debs {
        crate::build::run_checked(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&tree), "dpkg-deb -x")?;
        let name = deb.file_name().and_then(|n| n.to_str()).unwrap_or("pkg");
        let ctl = control.join(name.split('_').next().unwrap_or(name));
        crate::build::run_checked(Command::new("dpkg-deb").arg("-e").arg(deb).arg(&ctl), "dpkg-deb -e")?;
    }
    finish_tree(&tree, &control)?;
    Ok(tree)
}

/// Bytes under `dir` (files and symlink targets, not following links).
fn tree_bytes(dir: &Path) -> (u64, u64) {
    let (mut bytes, mut files) = (0, 0);
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let Ok(m) = fs::symlink_metadata(e.path()) else { continue };
            files += 1;
            if m.is_dir() {
                let (b, f) = tree_bytes(&e.path());
                bytes += b;
                files += f;
            } else {
                bytes += m.len();
            }
        }
    }
    (bytes, files)
}

/// `make rootfs`: resolves, downloads, unpacks and archives the root.
/// Returns the cached archive of the tree (without `/t`).
pub fn make(repo: &Path) -> Result<PathBuf> {
    make_in(&dir(repo), &dir(repo).join("debs"), &requested_packages())
}

/// Builds the root of `packages` in `work` (tree `root/`, archive
/// `root.cpio`), with .deb files cached in `debs`.
///
/// The archive is not compressed: inflating is what an unpack costs under
/// QEMU's TCG (the default root took 13.7 s to inflate and 1.4 s to copy
/// uncompressed), while QEMU loads the larger file in well under a second
/// and the kernel frees the module's pages as it reads them, so the peak
/// memory is the same.
pub fn make_in(work: &Path, debs: &Path, packages: &[String]) -> Result<PathBuf> {
    let work = work.to_path_buf();
    fs::create_dir_all(&work).map_err(|e| format!("create {}: {e}", work.display()))?;
    let mut resolved = resolve(&work, packages)?;
    let debs = match download(debs, &resolved) {
        Ok(d) => d,
        Err(e) => {
            // Stale package lists name versions the archive no longer
            // has: refresh them and resolve again, once.
            eprintln!("rootfs: {e}; running apt-get update and resolving again");
            crate::build::run_checked(Command::new("apt-get").args(["update", "-q"]), "apt-get update")?;
            let _ = fs::remove_file(work.join("resolved"));
            resolved = resolve(&work, packages)?;
            download(debs, &resolved)?
        }
    };
    let stamp_text = format!(
        "layout {LAYOUT_VERSION}\n{}\n",
        debs.iter().filter_map(|d| d.file_name()?.to_str()).collect::<Vec<_>>().join("\n")
    );
    let stamp = work.join("root.stamp");
    let archive = work.join("root.cpio");
    let tree = work.join("root");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(stamp_text.as_str()) && archive.is_file() && tree.is_dir() {
        eprintln!("rootfs: {} packages, tree and archive up to date", resolved.len());
        return Ok(archive);
    }
    let _ = fs::remove_file(&stamp);
    eprintln!("rootfs: unpacking {} packages", debs.len());
    let tree = build_tree(&work, &debs)?;
    crate::initramfs::write_plain(&[("", tree.as_path())], &archive)?;
    fs::write(&stamp, stamp_text).map_err(|e| format!("write {}: {e}", stamp.display()))?;
    let (bytes, files) = tree_bytes(&tree);
    let gz = fs::metadata(&archive).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "rootfs: {} packages, {files} files, {} MiB unpacked, archive {} MiB ({})",
        resolved.len(),
        bytes >> 20,
        gz >> 20,
        archive.display()
    );
    Ok(archive)
}

/// The initramfs for `ROOT=debian`: the root's archive, then a second
/// member with the test programs under `/t` and `extra` at the root.
pub fn initramfs(repo: &Path, out_dir: &Path, extra: Option<&Path>) -> Result<PathBuf> {
    let root_archive = make(repo)?;
    initramfs_with(repo, &root_archive, &out_dir.join("initramfs-debian.img"), extra)
}

/// The initramfs at `path`: `root_archive`, then the test programs and
/// `extra`.
pub fn initramfs_with(repo: &Path, root_archive: &Path, path: &Path, extra: Option<&Path>) -> Result<PathBuf> {
    let t = crate::initramfs::build_user_programs(repo)?;
    let mut dirs: Vec<(&str, &Path)> = vec![("t/", t.as_path())];
    if let Some(extra) = extra {
        if !extra.is_dir() {
            return Err(format!("EXTRA={} is not a folder", extra.display()));
        }
        dirs.push(("", extra));
    }
    let tail = path.with_extension("tail");
    crate::initramfs::write_gz(&dirs, &tail)?;
    let mut out = fs::File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    for part in [root_archive, tail.as_path()] {
        let mut f = fs::File::open(part).map_err(|e| format!("open {}: {e}", part.display()))?;
        std::io::copy(&mut f, &mut out).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    out.flush().map_err(|e| format!("write {}: {e}", path.display()))?;
    let _ = fs::remove_file(&tail);
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulation_lines_give_name_version_and_arch() {
        let text = "NOTE: This is only a simulation!\n\
            Inst libc6 (2.36-9+deb12u10 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [amd64])\n\
            Inst vim-runtime (2:9.0.1378-2+deb12u2 Debian:12.15/oldstable [all])\n\
            Inst libgcc-s1 (12.2.0-14+deb12u1 Debian:12.15/oldstable [amd64]) []\n\
            Conf libc6 (2.36-9+deb12u10 Debian:12.15/oldstable [amd64])\n";
        let r = parse_simulation(text);
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].deb_name(), "libgcc-s1_12.2.0-14+deb12u1_amd64.deb");
        assert_eq!(r[0], Resolved { name: "libc6".into(), version: "2.36-9+deb12u10".into(), arch: "amd64".into() });
        assert_eq!(r[2].deb_name(), "vim-runtime_2%3a9.0.1378-2+deb12u2_all.deb");
    }

    #[test]
    fn postinst_alternatives_with_slaves_and_continuations() {
        let script = "#!/bin/sh\nset -e\n\
            update-alternatives --install /usr/bin/vi vi /usr/bin/vim.basic 30 \\\n\
              --slave /usr/share/man/man1/vi.1.gz vi.1.gz /usr/share/man/man1/vim.1.gz\n\
            update-alternatives --install /usr/bin/$x x /usr/bin/$y 10\n\
            update-alternatives --install /usr/bin/lzma lzma /usr/bin/xz 20 $(slave lzma)\n\
            update-alternatives --quiet --install /usr/bin/awk awk /usr/bin/mawk 5 || true\n";
        let alts = parse_alternatives(script);
        assert_eq!(alts.len(), 3, "{alts:?}");
        assert_eq!(alts[0].name, "vi");
        assert_eq!(alts[0].priority, 30);
        assert_eq!(alts[0].slaves[0].1, "vi.1.gz");
        assert_eq!((alts[1].name.as_str(), alts[1].slaves.len()), ("lzma", 0));
        assert_eq!(alts[2].path, "/usr/bin/mawk");
    }

    #[test]
    fn highest_priority_present_alternative_wins() {
        let alt = |path: &str, priority| Alternative {
            link: "/usr/bin/editor".into(),
            name: "editor".into(),
            path: path.into(),
            priority,
            slaves: Vec::new(),
        };
        let chosen = choose_alternatives(
            vec![alt("/bin/nano", 40), alt("/usr/bin/vim.basic", 30), alt("/usr/bin/missing", 90)],
            |p| p != "/usr/bin/missing",
        );
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].path, "/bin/nano");
    }

    #[test]
    fn merged_usr_moves_files_and_links_directories() {
        let dir = std::env::temp_dir().join(format!("kiln-rootfs-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("bin")).unwrap();
        fs::create_dir_all(dir.join("usr/bin")).unwrap();
        fs::create_dir_all(dir.join("lib/x86_64-linux-gnu")).unwrap();
        fs::write(dir.join("bin/dash"), b"dash").unwrap();
        fs::write(dir.join("bin/both"), b"old").unwrap();
        fs::write(dir.join("usr/bin/both"), b"usr").unwrap();
        fs::write(dir.join("lib/x86_64-linux-gnu/libc.so.6"), b"libc").unwrap();
        merge_usr(&dir).unwrap();
        assert_eq!(fs::read_link(dir.join("bin")).unwrap(), Path::new("usr/bin"));
        assert_eq!(fs::read(dir.join("usr/bin/dash")).unwrap(), b"dash");
        assert_eq!(fs::read(dir.join("usr/bin/both")).unwrap(), b"usr");
        assert_eq!(fs::read(dir.join("usr/lib/x86_64-linux-gnu/libc.so.6")).unwrap(), b"libc");
        assert!(fs::symlink_metadata(dir.join("lib64")).is_err());
        assert!(tree_has(&dir, "/bin/dash"));
        assert!(tree_has(&dir, "/lib/x86_64-linux-gnu/libc.so.6"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
