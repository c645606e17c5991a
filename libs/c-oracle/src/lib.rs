//! The C side of the ABI crates' layout tests. A test names a C probe
//! (a `tests/*.c` file that prints one `name value` line per size, field
//! offset or constant), a header whose presence says the host has the
//! kernel's UAPI headers, and any `-D` defines. [`probe`] compiles it with
//! the host compiler (`$CC`, else `cc`), runs it and returns the values;
//! it returns `None`, after a note on stderr, when the compiler or the
//! headers are missing, so the tests skip rather than fail on a bare host.
//! Linux's own headers are the oracle; the Rust side is what is checked.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one probe printed: names to values.
pub struct CValues {
    probe: String,
    values: HashMap<String, i128>,
}

impl CValues {
    /// Parses `name value` lines.
    pub fn parse(probe: &str, output: &str) -> CValues {
        let mut values = HashMap::new();
        for line in output.lines() {
            let (k, v) = line.split_once(' ').unwrap_or_else(|| panic!("{probe}: line {line:?} is not `name value`"));
            let v = v.parse::<i128>().unwrap_or_else(|_| panic!("{probe}: value of {k} is not a number: {v:?}"));
            values.insert(k.to_string(), v);
        }
        CValues { probe: probe.to_string(), values }
    }

    pub fn get(&self, k: &str) -> i128 {
        *self.values.get(k).unwrap_or_else(|| panic!("{} printed no value for {k}", self.probe))
    }

    pub fn contains(&self, k: &str) -> bool {
        self.values.contains_key(k)
    }

    /// Every name the probe printed.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// Asserts that C's `sizeof` named `k` is `rust`.
    pub fn size(&self, k: &str, rust: usize) {
        assert_eq!(self.get(k), rust as i128, "sizeof({k})");
    }

    /// Asserts that `expect` (a field's little-endian encoding) sits in
    /// `bytes` at the offset C reports for `k`.
    pub fn field(&self, k: &str, bytes: &[u8], expect: &[u8]) {
        let off = self.get(k) as usize;
        assert_eq!(&bytes[off..off + expect.len()], expect, "field {k} should be at offset {off}");
    }

    /// Asserts each (C name, Rust value) pair, and that the table covers
    /// every name the probe printed that `covered` selects.
    pub fn constants(&self, table: &[(&str, i128)], covered: impl Fn(&str) -> bool) {
        for (name, rust) in table {
            assert_eq!(self.get(name), *rust, "value of {name}");
        }
        for name in self.names().filter(|n| covered(n)) {
            assert!(
                table.iter().any(|(t, _)| *t == name),
                "{} prints {name} but the test does not check it",
                self.probe
            );
        }
    }
}

/// Compiles `tests/<probe>` of the crate at `manifest_dir` with `defines`,
/// runs it, and returns what it printed; `None` when there is no C
/// compiler or `header` is not installed. `tag` names the executable (a
/// probe compiled twice needs two).
pub fn probe(
    manifest_dir: &str,
    target_tmpdir: &str,
    probe: &str,
    tag: &str,
    header: &str,
    defines: &[&str],
) -> Option<CValues> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    if !Command::new(&cc).arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("skipping the {probe} check: no C compiler");
        return None;
    }
    if !Path::new(header).exists() {
        eprintln!("skipping the {probe} check: no {header}");
        return None;
    }
    let src = Path::new(manifest_dir).join("tests").join(probe);
    let exe = PathBuf::from(target_tmpdir).join(tag);
    let out = Command::new(&cc).args(defines).arg("-o").arg(&exe).arg(&src).output().expect("running the C compiler");
    assert!(out.status.success(), "compiling {probe} ({tag}) failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().expect("running the probe");
    assert!(run.status.success(), "{probe} ({tag}) exited with {}", run.status);
    Some(CValues::parse(probe, &String::from_utf8(run.stdout).expect("probe output is UTF-8")))
}

/// `probe` for the calling crate: `c_probe!("x.c", "linux/x.h")`, or with a
/// tag and defines: `c_probe!("x.c", "linux/x.h", "x-glibc", &["-DGLIBC"])`.
/// The header is looked for under /usr/include.
#[macro_export]
macro_rules! c_probe {
    ($probe:expr, $header:expr) => {
        $crate::c_probe!($probe, $header, $probe, &[])
    };
    ($probe:expr, $header:expr, $tag:expr, $defines:expr) => {
        $crate::probe(
            env!("CARGO_MANIFEST_DIR"),
            env!("CARGO_TARGET_TMPDIR"),
            $probe,
            $tag,
            &format!("/usr/include/{}", $header),
            $defines,
        )
    };
}

/// Pairs of (C name, Rust value) for constants: `table![O_RDONLY, O_PATH]`.
#[macro_export]
macro_rules! table {
    ($($n:ident),* $(,)?) => { vec![$((stringify!($n), $n as i128)),*] };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_checks() {
        let c = CValues::parse("t.c", "sizeof_x 8\nA -1\nB 5\n");
        c.size("sizeof_x", 8);
        assert_eq!(c.get("A"), -1);
        assert!(c.contains("B"));
        c.field("sizeof_x", &[0; 12], &[0; 4]);
        c.constants(&[("A", -1)], |n| n.len() == 1 && n != "B");
    }

    #[test]
    #[should_panic(expected = "prints A but the test does not check it")]
    fn an_unchecked_constant_fails() {
        CValues::parse("t.c", "A 1\n").constants(&[], |_| true);
    }

    #[test]
    #[should_panic(expected = "sizeof(x)")]
    fn a_wrong_size_fails() {
        CValues::parse("t.c", "x 4\n").size("x", 8);
    }
}
