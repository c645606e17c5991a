//! The unsafe boundary: all `unsafe` lives in `hal/`, and there each
//! `unsafe` block or impl says why it is sound.
//!
//! `#![forbid(unsafe_code)]` in each crate root is what the compiler
//! enforces; this check also catches a crate that forgot that line, and
//! keeps `hal/`'s justifications from going missing. It is textual, on
//! source with comments and string literals blanked out (newlines kept, so
//! line numbers stay right): good enough for our own code, and it needs no
//! parser.

use std::path::{Path, PathBuf};

use crate::Result;

/// How far above an `unsafe` block its `// SAFETY:` comment may start.
const SAFETY_WINDOW: usize = 4;

/// Problems found, as `file:line: message`; empty means the check passed.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut files = Vec::new();
    rust_files(root, root, &mut files)?;
    files.sort();
    for file in &files {
        let rel = file.strip_prefix(root).unwrap_or(file);
        let src = std::fs::read_to_string(file).map_err(|e| format!("read {}: {e}", file.display()))?;
        let first = rel.components().next().and_then(|c| c.as_os_str().to_str());
        // hal/ holds every unsafe block, the components' runtime
        // (hal/component-rt) included.
        match first {
            Some("hal") => {
                for line in missing_safety_comments(&src) {
                    problems
                        .push(format!("{}:{line}: unsafe block or impl without a `// SAFETY:` comment", rel.display()));
                }
            }
            Some("user") => {}
            _ => {
                for line in unsafe_lines(&src) {
                    problems.push(format!("{}:{line}: `unsafe` outside hal/", rel.display()));
                }
            }
        }
    }
    let mut members = workspace_members(root)?;
    // Every component crate forbids unsafe code too (the runtime, a
    // member from hal/, is checked as hal/ is).
    if root.join("components").join("Cargo.toml").exists() {
        let inner = workspace_members(&root.join("components"))?;
        members.extend(inner.into_iter().filter(|m| !m.starts_with("../")).map(|m| format!("components/{m}")));
    }
    for member in members {
        if member == "hal" || member == "xtask" {
            continue;
        }
        let roots: Vec<PathBuf> =
            ["src/lib.rs", "src/main.rs"].iter().map(|p| root.join(&member).join(p)).filter(|p| p.exists()).collect();
        if roots.is_empty() {
            problems.push(format!("{member}: no src/lib.rs or src/main.rs to check"));
        }
        for path in roots {
            let src = std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
            if !forbids_unsafe(&src) {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                problems.push(format!("{}:1: crate root lacks #![forbid(unsafe_code)]", rel.display()));
            }
        }
    }
    Ok(problems)
}

/// Every `*.rs` under `dir`, skipping `target/` and `user/` at the top,
/// any nested `target/`, and hidden directories (`.git`).
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("read {}: {e}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ty = entry.file_type().map_err(|e| format!("stat {}: {e}", path.display()))?;
        if ty.is_dir() {
            let top = dir == root;
            if name.starts_with('.') || name == "target" || (top && name == "user") {
                continue;
            }
            rust_files(root, &path, out)?;
        } else if ty.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The `members = [...]` of the `Cargo.toml` in `root`. A full TOML parser
/// would be a dependency for one list of plain strings.
fn workspace_members(root: &Path) -> Result<Vec<String>> {
    let path = root.join("Cargo.toml");
    let toml = std::fs::read_to_string(&path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let start = toml
        .find("members")
        .and_then(|i| toml[i..].find('[').map(|j| i + j + 1))
        .ok_or("no workspace members in Cargo.toml")?;
    let end = toml[start..].find(']').ok_or("unterminated members list")? + start;
    Ok(toml[start..end].split(',').map(|s| s.trim().trim_matches('"').to_string()).filter(|s| !s.is_empty()).collect())
}

/// `src` with comments and the contents of string and char literals
/// replaced by spaces. Handles nested block comments, escapes, raw strings
/// (`r#"..."#`), byte strings, and tells char literals from lifetimes.
pub fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    // Blanks a char but keeps line structure.
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&c, i) {
            // Skip the prefix, then blank up to `"` followed by the hashes.
            while c[i] != '"' {
                out.push(c[i]);
                i += 1;
            }
            out.push('"');
            i += 1;
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
            for _ in 0..=hashes {
                if i < c.len() {
                    out.push(c[i]);
                    i += 1;
                }
            }
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' && i + 1 < c.len() {
                    out.push(' ');
                    i += 1;
                }
                out.push(blank(c[i]));
                i += 1;
            }
            if i < c.len() {
                out.push('"');
                i += 1;
            }
        } else if c[i] == '\'' {
            // A char literal is `'x'` or `'\...'`; anything else is a
            // lifetime or label, which is kept as code.
            let end = if next == Some('\\') {
                // The escaped char is never the closing quote (`'\''`).
                (i + 3..c.len().min(i + 14)).find(|&j| c[j] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push('\'');
                    out.extend(c[i + 1..end].iter().map(|&ch| blank(ch)));
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// If a raw (byte) string starts at `i` and is not the tail of an
/// identifier (`bar"`), the number of `#`s it uses.
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && is_ident(c[i - 1]) {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some(hashes)
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Byte offsets of `word` as a whole identifier in `line`.
fn word_positions<'a>(line: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    line.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        let before = line[..i].chars().next_back().is_some_and(is_ident);
        let after = line[i + word.len()..].chars().next().is_some_and(is_ident);
        !before && !after
    })
}

/// 1-based lines of `src` that use the `unsafe` keyword in code.
pub fn unsafe_lines(src: &str) -> Vec<usize> {
    strip(src)
        .lines()
        .enumerate()
        .filter(|(_, l)| word_positions(l, "unsafe").next().is_some())
        .map(|(n, _)| n + 1)
        .collect()
}

/// 1-based lines with an `unsafe {` block or `unsafe impl` that have no
/// `// SAFETY:` comment on the line or starting within [`SAFETY_WINDOW`]
/// lines above. A longer comment counts as a whole: if the window reaches
/// into a run of comment lines, the run's earlier lines are searched too.
pub fn missing_safety_comments(src: &str) -> Vec<usize> {
    let raw: Vec<&str> = src.lines().collect();
    let code = strip(src);
    let mut missing = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let needs = word_positions(line, "unsafe").any(|i| {
            let rest = line[i + "unsafe".len()..].trim_start();
            rest.starts_with('{') || (rest.starts_with("impl") && !rest[4..].starts_with(is_ident))
        });
        if !needs {
            continue;
        }
        let is_comment = |k: usize| raw[k].trim_start().starts_with("//");
        let mut k = n;
        let mut found = raw[n].contains("// SAFETY:");
        while !found && k > 0 && (n - k < SAFETY_WINDOW || is_comment(k)) {
            k -= 1;
            if n - k > SAFETY_WINDOW && !is_comment(k) {
                break;
            }
            found = raw[k].contains("// SAFETY:");
        }
        if !found {
            missing.push(n + 1);
        }
    }
    missing
}

/// Whether an inner `#![forbid(...)]` attribute lists `unsafe_code`.
pub fn forbids_unsafe(src: &str) -> bool {
    let code: String = strip(src).chars().filter(|c| !c.is_whitespace()).collect();
    code.match_indices("#![forbid(").any(|(i, m)| {
        let args = &code[i + m.len()..];
        let args = &args[..args.find(')').unwrap_or(args.len())];
        args.split(',').any(|a| a == "unsafe_code")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_strings_are_ignored() {
        let src = "// unsafe here\n/* unsafe /* nested */ unsafe */ fn a() {}\n\
                   let s = \"unsafe \\\" unsafe\";\nlet r = r#\"unsafe \" unsafe\"#;\n\
                   let c = '\"'; let d = 'x'; fn f<'a>(x: &'a u8) {}\n\
                   let not_unsafe_ident = 1; let unsafe_code = 2;";
        assert_eq!(unsafe_lines(src), Vec::<usize>::new());
    }

    #[test]
    fn code_unsafe_is_found_with_its_line() {
        let src = "fn a() {}\n/* x\n y */ fn b() { unsafe { core::hint::unreachable_unchecked() } }\n\
                   let s = \"a\"; unsafe impl Send for X {}\n";
        assert_eq!(unsafe_lines(src), vec![3, 4]);
        // A char literal with a quote must not open a string.
        assert_eq!(unsafe_lines("let q = '\"'; unsafe fn f() {}"), vec![1]);
        assert_eq!(unsafe_lines("let e = '\\''; unsafe fn f() {}"), vec![1]);
        assert_eq!(unsafe_lines("let b = br\"x\"; unsafe {}"), vec![1]);
    }

    #[test]
    fn strip_keeps_line_numbers() {
        let src = "a /* one\ntwo */ b \"x\ny\" c";
        assert_eq!(strip(src).lines().count(), src.lines().count());
        assert!(strip(src).contains('c'));
    }

    #[test]
    fn safety_comments() {
        let ok = "// SAFETY: fine\n\nfoo();\nbar();\nunsafe { x() }\n\
                  let y = unsafe { z() }; // SAFETY: same line\n";
        assert_eq!(missing_safety_comments(ok), Vec::<usize>::new());
        let far = "// SAFETY: too far\n\n\n\n\nunsafe { x() }\n";
        assert_eq!(missing_safety_comments(far), vec![6]);
        let long =
            "// SAFETY: a long\n// explanation\n// that goes\n// on and\n// on and on\nunsafe impl Sync for T {}\n";
        assert_eq!(missing_safety_comments(long), Vec::<usize>::new());
        // `unsafe fn` and `unsafe extern` need no comment here; `implx` is
        // not `impl`; a commented-out block does not count.
        let other = "unsafe fn f() {}\nunsafe extern \"C\" {}\nunsafe implx\n// unsafe {\n";
        assert_eq!(missing_safety_comments(other), Vec::<usize>::new());
        assert_eq!(missing_safety_comments("x();\nunsafe{ y() }"), vec![2]);
    }

    #[test]
    fn forbid_attribute() {
        assert!(forbids_unsafe("//! doc\n#![no_std]\n#![forbid(unsafe_code)]\n"));
        assert!(forbids_unsafe("#![forbid(missing_docs, unsafe_code)]"));
        assert!(!forbids_unsafe("#![deny(unsafe_code)]"));
        assert!(!forbids_unsafe("// #![forbid(unsafe_code)]"));
        assert!(!forbids_unsafe("#[forbid(unsafe_code)] fn f() {}"));
    }
}
