//! The failure recap that closes `xtask test`.
//!
//! A CI log may be cut in the middle, keeping only its head and tail; a
//! failing test printed in stage 3 is then lost and the run says only
//! `289 passed, 1 failed`. Every stage records its failures here as it
//! prints them, and `print` repeats them, with the last console lines of
//! any boot that ended badly, just before the closing total.

use std::sync::Mutex;

static FAILURES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Console lines kept for a boot that crashed, hung or exited wrongly.
const TAIL_LINES: usize = 30;

/// Prints a failure line now and keeps it for the recap.
pub fn failure(text: impl Into<String>) {
    let text = text.into();
    println!("{text}");
    if let Ok(mut list) = FAILURES.lock() {
        list.push(text);
    }
}

/// A boot that ended badly: the recap shows the end of its console, which
/// is where a panic, a hang or a stuck test shows itself.
pub fn bad_run(what: &str, console: &str) {
    failure(format!("{what}; its console ended:\n{}", tail(console, TAIL_LINES)));
}

/// The last `n` lines of `text`, indented.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(n);
    lines[from..].iter().map(|l| format!("    | {}", l.trim_end_matches('\r'))).collect::<Vec<_>>().join("\n")
}

/// Repeats every recorded failure; prints nothing when there were none.
pub fn print() {
    let Ok(list) = FAILURES.lock() else { return };
    if list.is_empty() {
        return;
    }
    println!("\n==> recap: {} failure line(s)", list.len());
    for f in list.iter() {
        println!("  - {f}");
    }
}

#[cfg(test)]
mod tests {
    use super::tail;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\r\n", 2), "    | b\n    | c");
        assert_eq!(tail("only", 5), "    | only");
        assert_eq!(tail("", 3), "");
    }
}
