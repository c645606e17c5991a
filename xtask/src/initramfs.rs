//! The initramfs: a gzip'd cpio "newc" archive of the user programs
//! (`build/user/t` becomes `/t`), plus whatever `EXTRA=<folder>` holds at
//! the root, which the kernel unpacks into its root file system.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Result;

/// Builds the C test programs with `make -C user` (musl-gcc, static).
pub fn build_user_programs(root: &Path) -> Result<PathBuf> {
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(root.join("user"))
        .status()
        .map_err(|e| format!("cannot run make -C user: {e}"))?;
    if !status.success() {
        return Err(format!("building user programs failed ({status})"));
    }
    Ok(root.join("build/user/t"))
}

/// One file-system entry to archive: its path inside the archive and the
/// host file it comes from.
struct Entry {
    name: String,
    source: PathBuf,
}

fn collect(dir: &Path, prefix: &str, out: &mut Vec<Entry>) -> Result<()> {
    let mut names: Vec<_> =
        fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))?.filter_map(|e| e.ok()).collect();
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        let path = e.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| format!("stat {}: {e}", path.display()))?;
        out.push(Entry { name: name.clone(), source: path.clone() });
        if meta.is_dir() {
            collect(&path, &format!("{name}/"), out)?;
        }
    }
    Ok(())
}

/// A writer that counts bytes, for the 4-byte padding newc needs.
struct Counted<W: Write> {
    inner: W,
    written: u64,
}

impl<W: Write> Counted<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad4(&mut self) -> std::io::Result<()> {
        let pad = (4 - self.written % 4) % 4;
        self.put(&[0u8; 3][..pad as usize])
    }

    fn header(&mut self, name: &str, mode: u32, ino: u32, mtime: u32, size: u64) -> std::io::Result<()> {
        let size = u32::try_from(size).map_err(|_| std::io::Error::other(format!("{name}: larger than 4 GiB")))?;
        let header = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{:08x}{mtime:08x}{size:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad4()
    }
}

/// Writes a newc archive of `dirs` (archive path prefix, host folder) to
/// `out`, one file at a time: a root of hundreds of megabytes is never
/// held in memory.
pub fn write_cpio<W: Write>(dirs: &[(&str, &Path)], out: W) -> Result<W> {
    let mut entries = Vec::new();
    for (prefix, dir) in dirs {
        if !prefix.is_empty() {
            entries.push(Entry { name: prefix.trim_end_matches('/').to_string(), source: dir.to_path_buf() });
        }
        collect(dir, prefix, &mut entries)?;
    }
    // A path given twice (the host libraries and an EXTRA folder may both
    // hold /lib/x86_64-linux-gnu/libc.so.6) is archived once, since the
    // kernel would refuse the second: a directory where it first appears
    // (before anything in it), anything else from the last folder.
    let mut keep: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let is_dir = fs::symlink_metadata(&e.source).is_ok_and(|m| m.is_dir());
        if !is_dir || !keep.contains_key(e.name.as_str()) {
            keep.insert(e.name.as_str(), i);
        }
    }
    let mut out = Counted { inner: out, written: 0 };
    let io = |e: std::io::Error| format!("write the archive: {e}");
    for (i, e) in entries.iter().enumerate().filter(|(i, e)| keep[e.name.as_str()] == *i) {
        let meta = fs::symlink_metadata(&e.source).map_err(|err| format!("stat {}: {err}", e.source.display()))?;
        let ino = i as u32 + 1;
        let mtime = meta.mtime().max(0) as u32;
        let mode = meta.permissions().mode();
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&e.source).map_err(|err| format!("readlink {}: {err}", e.source.display()))?;
            let t = target.to_string_lossy().into_owned();
            out.header(&e.name, mode, ino, mtime, t.len() as u64).map_err(io)?;
            out.put(t.as_bytes()).map_err(io)?;
        } else if meta.is_dir() {
            out.header(&e.name, mode, ino, mtime, 0).map_err(io)?;
        } else if meta.is_file() {
            let mut file = fs::File::open(&e.source).map_err(|err| format!("open {}: {err}", e.source.display()))?;
            out.header(&e.name, mode, ino, mtime, meta.len()).map_err(io)?;
            let copied = std::io::copy(&mut file, &mut out.inner).map_err(io)?;
            if copied != meta.len() {
                return Err(format!("{} changed size while being archived", e.source.display()));
            }
            out.written += copied;
        } else {
            continue;
        }
        out.pad4().map_err(io)?;
    }
    out.header("TRAILER!!!", 0, 0, 0, 0).map_err(io)?;
    Ok(out.inner)
}

/// Writes a newc archive of `dirs` into memory.
pub fn cpio(dirs: &[(&str, &Path)]) -> Result<Vec<u8>> {
    write_cpio(dirs, Vec::new())
}

/// Writes the newc archive of `dirs` to `path`, uncompressed.
pub fn write_plain(dirs: &[(&str, &Path)], path: &Path) -> Result<()> {
    let file = fs::File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let mut out = write_cpio(dirs, std::io::BufWriter::new(file))?;
    out.flush().map_err(|e| format!("write {}: {e}", path.display()))
}

/// Writes the gzip'd newc archive of `dirs` to `path`.
pub fn write_gz(dirs: &[(&str, &Path)], path: &Path) -> Result<()> {
    let file = fs::File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::fast());
    let gz = write_cpio(dirs, gz)?;
    let mut file = gz.finish().map_err(|e| format!("write {}: {e}", path.display()))?;
    file.flush().map_err(|e| format!("write {}: {e}", path.display()))
}

/// The busybox binary the userland comes from (Debian's busybox-static).
pub const BUSYBOX: &str = "/bin/busybox";

/// Lays out the base root file system under `out_dir/rootfs`: busybox with
/// a symlink per applet in /bin, and the few files in /etc that tools
/// look for. Rebuilt each time (it is small).
pub fn base_rootfs(out_dir: &Path) -> Result<PathBuf> {
    let rootfs = out_dir.join("rootfs");
    let _ = fs::remove_dir_all(&rootfs);
    for d in ["bin", "sbin", "usr/bin", "usr/sbin", "etc", "root", "home", "var/log", "mnt"] {
        fs::create_dir_all(rootfs.join(d)).map_err(|e| format!("create rootfs/{d}: {e}"))?;
    }
    if Path::new(BUSYBOX).exists() {
        fs::copy(BUSYBOX, rootfs.join("bin/busybox")).map_err(|e| format!("copy busybox: {e}"))?;
        let list = Command::new(BUSYBOX).arg("--list").output().map_err(|e| format!("busybox --list: {e}"))?;
        for applet in String::from_utf8_lossy(&list.stdout).split_whitespace() {
            if applet == "busybox" || applet.contains('/') {
                continue;
            }
            std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet))
                .map_err(|e| format!("link {applet}: {e}"))?;
        }
    }
    let files = [
        ("etc/hostname", "kiln\n"),
        ("etc/profile", "export PS1='kiln:\\w# '\nexport PATH=/sbin:/bin:/usr/sbin:/usr/bin\n"),
    ];
    for (path, text) in files {
        fs::write(rootfs.join(path), text).map_err(|e| format!("write {path}: {e}"))?;
    }
    Ok(rootfs)
}

/// Builds the gzip'd initramfs with the test programs under /t and the
/// `extra` folder's contents at the root; returns its path.
pub fn make(root: &Path, out_dir: &Path, extra: Option<&Path>) -> Result<PathBuf> {
    let t = build_user_programs(root)?;
    let base = base_rootfs(out_dir)?;
    let scripts = root.join("user/busybox");
    // Files kept in the source tree (/etc/passwd, /etc/group).
    let files = root.join("user/rootfs");
    let bench = crate::bench::guest::build_programs(root)?;
    let host_libs = crate::hostlibs::stage(&t, out_dir)?;
    let mut dirs: Vec<(&str, &Path)> = vec![
        ("", base.as_path()),
        ("", files.as_path()),
        ("t/", t.as_path()),
        ("bb/", scripts.as_path()),
        ("b/", bench.as_path()),
    ];
    if let Some(libs) = &host_libs {
        dirs.push(("", libs.as_path()));
    }
    if let Some(extra) = extra {
        if !extra.is_dir() {
            return Err(format!("EXTRA={} is not a folder", extra.display()));
        }
        dirs.push(("", extra));
    }
    let path = out_dir.join("initramfs.cpio.gz");
    write_gz(&dirs, &path)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_round_trips_through_the_kernel_parser() {
        let dir = std::env::temp_dir().join(format!("kiln-cpio-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/hello"), b"hello world").unwrap();
        std::os::unix::fs::symlink("sub/hello", dir.join("link")).unwrap();
        let archive = cpio(&[("t/", &dir)]).unwrap();
        let entries: Vec<_> = kiln_util::cpio::Reader::new(&archive).collect::<std::result::Result<_, _>>().unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
        assert_eq!(names, ["t", "t/link", "t/sub", "t/sub/hello"]);
        assert_eq!(entries[3].data, b"hello world");
        assert_eq!(entries[1].data, b"sub/hello");
        fs::remove_dir_all(&dir).unwrap();
    }
}
