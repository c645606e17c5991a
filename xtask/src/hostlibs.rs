//! The host's shared libraries that the dynamically linked test programs
//! need, for the test root: exactly what `ldd` names for the files listed
//! in `build/user/t/dynamic.txt`, copied to the same paths (so Kiln runs
//! the host's own `/lib64/ld-linux-x86-64.so.2` and libc, the ones the
//! host's run of the same programs used). Libraries of our own, under the
//! test directory, travel with it and are left out.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Result;

/// The absolute paths in `ldd` output: `name => /path (addr)` and the
/// interpreter's `/path (addr)`; the vDSO line has no path. A library
/// `ldd` could not find is an error.
pub fn parse_ldd(output: &str) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for line in output.lines().map(str::trim) {
        if line.is_empty() || line.ends_with(':') {
            continue;
        }
        if line.contains("not found") {
            return Err(format!("ldd: {line}"));
        }
        let target = match line.split_once("=>") {
            Some((_, rest)) => rest.trim(),
            None => line,
        };
        let path = target.split_whitespace().next().unwrap_or("");
        if path.starts_with('/') {
            paths.push(PathBuf::from(path));
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Copies the libraries into `out_dir/hostlibs` (rebuilt each time) and
/// returns that folder, or `None` when there is no dynamic program.
pub fn stage(t: &Path, out_dir: &Path) -> Result<Option<PathBuf>> {
    let list = match fs::read_to_string(t.join("dynamic.txt")) {
        Ok(list) => list,
        Err(_) => return Ok(None),
    };
    let files: Vec<PathBuf> = list.split_whitespace().map(|f| t.join(f)).collect();
    if files.is_empty() {
        return Ok(None);
    }
    let out = Command::new("ldd").args(&files).output().map_err(|e| format!("cannot run ldd: {e}"))?;
    if !out.status.success() {
        return Err(format!("ldd failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let ours = fs::canonicalize(t).unwrap_or_else(|_| t.to_path_buf());
    let staged = out_dir.join("hostlibs");
    let _ = fs::remove_dir_all(&staged);
    for lib in parse_ldd(&String::from_utf8_lossy(&out.stdout))? {
        if lib.starts_with(t) || lib.starts_with(&ours) {
            continue;
        }
        let dest = staged.join(lib.strip_prefix("/").unwrap_or(&lib));
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        }
        // fs::copy follows symlinks: the root gets the file itself.
        fs::copy(&lib, &dest).map_err(|e| format!("copy {}: {e}", lib.display()))?;
    }
    Ok(Some(staged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_paths_ldd_names() {
        let out = "build/user/t/dynamic:\n\
                   \tlinux-vdso.so.1 (0x00007ff316a27000)\n\
                   \tlibkt.so => /work/build/user/t/lib/libkt.so (0x00007ff316a15000)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007ff316827000)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007ff316a29000)\n\
                   build/user/t/lib/libkt_plugin.so:\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f665bc43000)\n\
                   \tstatically linked\n";
        let paths = parse_ldd(out).unwrap();
        assert_eq!(
            paths,
            ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/work/build/user/t/lib/libkt.so"]
                .map(PathBuf::from)
        );
    }

    #[test]
    fn a_missing_library_is_an_error() {
        assert!(parse_ldd("\tlibgone.so.1 => not found\n").is_err());
    }
}
