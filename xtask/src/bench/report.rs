//! Turning runs into the report: per benchmark, CPU count and kernel, the
//! icount figure and the wall-clock median/min/max; the Kiln/Linux ratios;
//! the parallel-scaling speedups (1 CPU against 2); and the three outputs
//! (markdown tables, JSON, PNG chart) plus the tables' copy in
//! docs/performance.md.
//!
//! JSON is written by hand: the shape is small and fixed, and the tool
//! stays free of a serialization dependency.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::guest::Outcome;
use super::Entry;
use crate::Result;

/// The two markers in docs/performance.md between which the latest table
/// is kept.
const DOC_BEGIN: &str = "<!-- bench-table:begin -->";
const DOC_END: &str = "<!-- bench-table:end -->";

/// One kernel's figure for one benchmark under one clock.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    /// ns/op of every run that produced a number.
    pub values: Vec<f64>,
    /// Why runs produced no number (deduplicated).
    pub errors: Vec<String>,
}

impl Cell {
    pub fn add(&mut self, outcome: Option<&Outcome>, run_problem: Option<&str>) {
        let error = match outcome {
            Some(Outcome::Ok { ns, .. }) => {
                self.values.push(*ns);
                return;
            }
            Some(Outcome::Failed(e)) => e.clone(),
            None => match run_problem {
                Some(p) => format!("did not run: {p}"),
                None => "did not run".to_string(),
            },
        };
        if !self.errors.contains(&error) {
            self.errors.push(error);
        }
    }

    pub fn median(&self) -> Option<f64> {
        let mut v = self.values.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
    }

    pub fn min(&self) -> Option<f64> {
        self.values.iter().copied().reduce(f64::min)
    }

    pub fn max(&self) -> Option<f64> {
        self.values.iter().copied().reduce(f64::max)
    }
}

/// Everything measured for one benchmark: `[kiln, linux]` per clock on the
/// fair machine (`guest::FAIR`), and the secondary icount figures.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub icount: [Cell; 2],
    pub wall: [Cell; 2],
    /// `[kiln, linux]` under icount on `-cpu max` (`guest::CPU_MAX`).
    pub icount_cpu_max: [Cell; 2],
    /// Linux under icount with its default mitigations
    /// (`guest::LINUX_DEFAULT`).
    pub icount_linux_default: Cell,
}

/// The goal for every row that measures the kernel: at most this many
/// times Linux's time per operation on the fair icount column (for a
/// bandwidth row, at least 1/0.8 = 1.25x its throughput).
pub const GOAL: f64 = 0.8;

/// Whether the row measures the kernel at all (the memcpy control runs
/// the same user code on both).
fn is_control(e: &Entry) -> bool {
    e.bench.name == "memcpy_bw"
}

fn goal_cell(e: &Entry, r: &Row) -> &'static str {
    match ratio(&r.icount) {
        _ if is_control(e) => "control",
        Some(x) if x <= GOAL => "met",
        Some(_) => "**missed**",
        None => "n/a",
    }
}

/// Linux with default mitigations over Linux with `mitigations=off`.
fn mitigation_ratio(r: &Row) -> Option<f64> {
    match (r.icount_linux_default.median(), r.icount[1].median()) {
        (Some(d), Some(off)) if off > 0.0 => Some(d / off),
        _ => None,
    }
}

fn ratio(cells: &[Cell; 2]) -> Option<f64> {
    match (cells[0].median(), cells[1].median()) {
        (Some(k), Some(l)) if l > 0.0 => Some(k / l),
        _ => None,
    }
}

/// A time in ns with a unit that keeps three significant digits.
pub fn human(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

fn first_error(cell: &Cell) -> String {
    let e = cell.errors.first().map(String::as_str).unwrap_or("no result");
    // Table cells cannot hold `|`, and long reasons belong in the JSON.
    let short: String = e.replace('|', "/").chars().take(48).collect();
    format!("n/a ({short})")
}

fn icount_cell(cell: &Cell) -> String {
    match cell.median() {
        Some(v) => human(v),
        None => first_error(cell),
    }
}

fn wall_cell(cell: &Cell) -> String {
    match (cell.median(), cell.min(), cell.max()) {
        (Some(m), Some(lo), Some(hi)) if cell.values.len() > 1 => {
            format!("{} ({}–{})", human(m), human(lo), human(hi))
        }
        (Some(m), _, _) => human(m),
        _ => first_error(cell),
    }
}

fn ratio_cell(r: Option<f64>) -> String {
    r.map(|r| format!("{r:.2}")).unwrap_or_else(|| "n/a".into())
}

/// Facts about the measurement that go above the table and into the JSON.
pub struct Meta {
    pub date: String,
    pub qemu: String,
    pub linux: String,
    pub kiln_commit: String,
    pub wall_runs: usize,
    pub scale: u32,
    /// `BENCH_FILTER` (empty: every benchmark).
    pub filter: String,
}

/// The scaling row: its name in `BENCHES` and the CPU counts compared.
const SCALING: &str = "parallel";

/// Median at 1 CPU over median at 2 for one kernel (index 0 Kiln, 1
/// Linux) under one clock: the parallel speedup (2 is perfect).
fn speedup(entries: &[Entry], rows: &[Row], kernel: usize, wall: bool) -> Option<f64> {
    let at = |smp: u32| {
        let i = entries.iter().position(|e| e.bench.name == SCALING && e.smp == smp)?;
        let cells = if wall { &rows[i].wall } else { &rows[i].icount };
        cells[kernel].median()
    };
    match (at(1), at(2)) {
        (Some(one), Some(two)) if two > 0.0 => Some(one / two),
        _ => None,
    }
}

fn scaling_cell(entries: &[Entry], rows: &[Row], kernel: usize, smp: u32, wall: bool) -> String {
    match entries.iter().position(|e| e.bench.name == SCALING && e.smp == smp) {
        Some(i) if wall => wall_cell(&rows[i].wall[kernel]),
        Some(i) => icount_cell(&rows[i].icount[kernel]),
        None => "n/a".into(),
    }
}

/// The markdown tables (with a short header naming the setup): every row,
/// then the parallel speedups when both CPU counts of `parallel` ran.
pub fn markdown(meta: &Meta, entries: &[Entry], rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Measured {} on {}, Linux {}, Kiln {}; QEMU TCG, `-m 512M -smp 1` (rows NAME@smp2: `-smp 2`); {} \
         wall-clock run(s); size {}%.\n",
        meta.date, meta.qemu, meta.linux, meta.kiln_commit, meta.wall_runs, meta.scale
    );
    let _ = writeln!(
        s,
        "Fair machine (the primary columns): `-cpu {}`, Linux booted with `{}`. Secondary: `-cpu {}` (Linux `{}`), \
         and Linux with its default mitigations on `-cpu {}`, both under icount at -smp 1 only.\n",
        super::guest::FAIR.cpu,
        super::guest::FAIR.linux_cmdline,
        super::guest::CPU_MAX.cpu,
        super::guest::CPU_MAX.linux_cmdline,
        super::guest::LINUX_DEFAULT.cpu,
    );
    s.push_str(
        "icount columns: guest ns per operation under `-icount shift=0` (= instructions per operation; at -smp 2 \
         the instructions of both CPUs, which QEMU runs in turn). wall columns: median (min–max) of TCG wall-clock \
         ns per operation (at -smp 2 one host thread per CPU). ratio = Kiln / Linux; below 1 = Kiln faster. goal: \
         fair icount ratio ≤ 0.80 (bandwidth rows: ≥ 1.25× Linux's throughput, the same bound on time per \
         operation). mitig. = Linux's default mitigations / `mitigations=off`.\n\n",
    );
    s.push_str(
        "| group | benchmark | one operation | Kiln icount | Linux icount | ratio | goal | Kiln wall | Linux wall | \
         ratio | Kiln `-cpu max` | Linux `-cpu max` | ratio | Linux default mitigations | mitig. |\n",
    );
    s.push_str("|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (e, r) in entries.iter().zip(rows) {
        let secondary = |c: &Cell| if e.smp == 1 { icount_cell(c) } else { "–".into() };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            e.bench.group,
            e.label(),
            e.bench.op,
            icount_cell(&r.icount[0]),
            icount_cell(&r.icount[1]),
            ratio_cell(ratio(&r.icount)),
            goal_cell(e, r),
            wall_cell(&r.wall[0]),
            wall_cell(&r.wall[1]),
            ratio_cell(ratio(&r.wall)),
            secondary(&r.icount_cpu_max[0]),
            secondary(&r.icount_cpu_max[1]),
            if e.smp == 1 { ratio_cell(ratio(&r.icount_cpu_max)) } else { "–".into() },
            secondary(&r.icount_linux_default),
            if e.smp == 1 { ratio_cell(mitigation_ratio(r)) } else { "–".into() },
        );
    }
    let has = |smp: u32| entries.iter().any(|e| e.bench.name == SCALING && e.smp == smp);
    if has(1) && has(2) {
        s.push_str(
            "\nParallel scaling (`parallel`: 2 processes of getppid() started together; wall time from the start \
             barrier to the last exit, per call). speedup = time at 1 CPU / time at 2 CPUs (2.00 = perfect; wall \
             medians). icount at 2 CPUs sums both CPUs' instructions, so its 1/2 ratio shows added work, not \
             parallelism.\n\n",
        );
        s.push_str(
            "| kernel | wall, 1 CPU | wall, 2 CPUs | speedup | icount, 1 CPU | icount, 2 CPUs | icount 1/2 |\n\
             |---|---:|---:|---:|---:|---:|---:|\n",
        );
        for (k, name) in ["Kiln", "Linux"].iter().enumerate() {
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} | {} |",
                scaling_cell(entries, rows, k, 1, true),
                scaling_cell(entries, rows, k, 2, true),
                ratio_cell(speedup(entries, rows, k, true)),
                scaling_cell(entries, rows, k, 1, false),
                scaling_cell(entries, rows, k, 2, false),
                ratio_cell(speedup(entries, rows, k, false)),
            );
        }
    }
    s
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

fn json_cell(c: &Cell) -> String {
    let values: Vec<String> = c.values.iter().map(|v| format!("{v}")).collect();
    let errors: Vec<String> = c.errors.iter().map(|e| json_str(e)).collect();
    format!(
        "{{\"median\": {}, \"min\": {}, \"max\": {}, \"values\": [{}], \"errors\": [{}]}}",
        json_num(c.median()),
        json_num(c.min()),
        json_num(c.max()),
        values.join(", "),
        errors.join(", ")
    )
}

/// The raw data: every run's value per benchmark, CPU count, kernel and
/// clock, and the parallel speedups.
pub fn json(meta: &Meta, entries: &[Entry], rows: &[Row]) -> String {
    let mut s = String::from("{\n");
    let _ = writeln!(s, "  \"date\": {},", json_str(&meta.date));
    let _ = writeln!(s, "  \"qemu\": {},", json_str(&meta.qemu));
    let _ = writeln!(s, "  \"linux\": {},", json_str(&meta.linux));
    let _ = writeln!(s, "  \"kiln_commit\": {},", json_str(&meta.kiln_commit));
    let _ = writeln!(
        s,
        "  \"machine\": \"qemu-system-x86_64 -accel tcg -cpu CPU -m 512M -smp N (N = each benchmark's smp)\","
    );
    let setup = |g: &super::guest::Setup| {
        format!("{{\"cpu\": {}, \"linux_cmdline\": {}}}", json_str(g.cpu), json_str(g.linux_cmdline))
    };
    let _ = writeln!(
        s,
        "  \"setups\": {{\"icount\": {}, \"wall\": {}, \"icount_cpu_max\": {}, \"icount_linux_default\": {}}},",
        setup(&super::guest::FAIR),
        setup(&super::guest::FAIR),
        setup(&super::guest::CPU_MAX),
        setup(&super::guest::LINUX_DEFAULT)
    );
    let _ = writeln!(s, "  \"filter\": {},", json_str(&meta.filter));
    let _ = writeln!(s, "  \"icount\": {},", json_str(super::guest::ICOUNT));
    let _ = writeln!(s, "  \"wall_runs\": {},", meta.wall_runs);
    let _ = writeln!(s, "  \"scale_percent\": {},", meta.scale);
    s.push_str("  \"unit\": \"ns per operation (icount: 1 ns = 1 guest instruction)\",\n");
    let _ = writeln!(
        s,
        "  \"scaling\": {{\"benchmark\": {}, \"speedup\": \"median at 1 CPU / median at 2 CPUs\", \"kiln\": \
         {{\"wall\": {}, \"icount\": {}}}, \"linux\": {{\"wall\": {}, \"icount\": {}}}}},",
        json_str(SCALING),
        json_num(speedup(entries, rows, 0, true)),
        json_num(speedup(entries, rows, 0, false)),
        json_num(speedup(entries, rows, 1, true)),
        json_num(speedup(entries, rows, 1, false)),
    );
    s.push_str("  \"benchmarks\": [\n");
    for (i, (e, r)) in entries.iter().zip(rows).enumerate() {
        let _ = write!(
            s,
            "    {{\"name\": {}, \"benchmark\": {}, \"smp\": {}, \"group\": {}, \"op\": {},\n     \"icount\": \
             {{\"kiln\": {}, \"linux\": {}, \"ratio\": {}}},\n     \"wall\": {{\"kiln\": {}, \"linux\": {}, \"ratio\": \
             {}}},\n     \"icount_cpu_max\": {{\"kiln\": {}, \"linux\": {}, \"ratio\": {}}},\n     \
             \"icount_linux_default\": {{\"linux\": {}, \"over_mitigations_off\": {}}}, \"goal\": {}}}{}\n",
            json_str(&e.label()),
            json_str(e.bench.name),
            e.smp,
            json_str(e.bench.group),
            json_str(e.bench.op),
            json_cell(&r.icount[0]),
            json_cell(&r.icount[1]),
            json_num(ratio(&r.icount)),
            json_cell(&r.wall[0]),
            json_cell(&r.wall[1]),
            json_num(ratio(&r.wall)),
            json_cell(&r.icount_cpu_max[0]),
            json_cell(&r.icount_cpu_max[1]),
            json_num(ratio(&r.icount_cpu_max)),
            json_cell(&r.icount_linux_default),
            json_num(mitigation_ratio(r)),
            json_str(goal_cell(e, r).trim_matches('*')),
            if i + 1 < entries.len() { "," } else { "" }
        );
    }
    s.push_str("  ]\n}\n");
    s
}

/// Replaces the table between the markers in docs/performance.md; the
/// prose around it is written by people and left alone.
pub fn update_doc(doc: &Path, table: &str) -> Result<()> {
    let text = std::fs::read_to_string(doc).map_err(|e| format!("read {}: {e}", doc.display()))?;
    let (Some(b), Some(e)) = (text.find(DOC_BEGIN), text.find(DOC_END)) else {
        return Err(format!("{} has no {DOC_BEGIN} ... {DOC_END} markers", doc.display()));
    };
    if e < b {
        return Err(format!("{}: the table markers are out of order", doc.display()));
    }
    let new = format!("{}{DOC_BEGIN}\n{table}{}", &text[..b], &text[e..]);
    std::fs::write(doc, new).map_err(|e| format!("write {}: {e}", doc.display()))
}

fn has_matplotlib(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import matplotlib"])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A Python that can import matplotlib, installing it if needed: first
/// with pip for the `python3` on PATH, then Debian's python3-matplotlib
/// for the system Python.
fn python_with_matplotlib() -> Result<String> {
    if has_matplotlib("python3") {
        return Ok("python3".into());
    }
    println!("xtask: installing matplotlib for the chart");
    let _ = Command::new("python3").args(["-m", "pip", "install", "-q", "matplotlib"]).status();
    if has_matplotlib("python3") {
        return Ok("python3".into());
    }
    let _ = Command::new("apt-get")
        .args(["install", "-y", "-q", "python3-matplotlib"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    if has_matplotlib("/usr/bin/python3") {
        return Ok("/usr/bin/python3".into());
    }
    Err("matplotlib is not available (pip install matplotlib, or apt-get install python3-matplotlib)".into())
}

/// Draws the ratio chart from the JSON, and the trend chart
/// (`history.png` next to `png`) from the kept runs in `history`, with
/// bench/chart.py.
pub fn chart(root: &Path, json: &Path, png: &Path, history: &Path) -> Result<()> {
    let python = python_with_matplotlib()?;
    crate::build::run_checked(
        Command::new(python)
            .arg(root.join("bench/chart.py"))
            .arg(json)
            .arg(png)
            .arg(history)
            .arg(png.with_file_name("history.png")),
        "bench/chart.py",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        let c = Cell { values: vec![5.0, 1.0, 3.0, 4.0], errors: vec![] };
        assert_eq!(c.median(), Some(3.5));
        assert_eq!(c.min(), Some(1.0));
        assert_eq!(c.max(), Some(5.0));
        let mut e = Cell::default();
        e.add(Some(&Outcome::Failed("pipe: ENOSYS".into())), None);
        e.add(None, Some("timed out"));
        e.add(Some(&Outcome::Failed("pipe: ENOSYS".into())), None);
        assert_eq!(e.errors, ["pipe: ENOSYS", "did not run: timed out"]);
        assert_eq!(e.median(), None);
    }

    #[test]
    fn ratios_and_units() {
        let k = Cell { values: vec![200.0], errors: vec![] };
        let l = Cell { values: vec![100.0], errors: vec![] };
        assert_eq!(ratio(&[k, l.clone()]), Some(2.0));
        assert_eq!(ratio(&[Cell::default(), l]), None);
        assert_eq!(human(999.0), "999 ns");
        assert_eq!(human(1500.0), "1.50 µs");
        assert_eq!(human(2_500_000.0), "2.50 ms");
    }

    #[test]
    fn scaling_table() {
        let par = super::super::BENCHES.iter().find(|b| b.name == SCALING).expect("no parallel benchmark");
        let entries = [Entry { bench: par, smp: 1 }, Entry { bench: par, smp: 2 }];
        let c = |v: f64| Cell { values: vec![v], errors: vec![] };
        let rows = [
            Row { icount: [c(400.0), c(380.0)], wall: [c(1000.0), c(900.0)], ..Row::default() },
            Row { icount: [c(420.0), c(400.0)], wall: [c(500.0), c(600.0)], ..Row::default() },
        ];
        assert_eq!(speedup(&entries, &rows, 0, true), Some(2.0));
        assert_eq!(speedup(&entries, &rows, 1, true), Some(1.5));
        let meta = Meta {
            date: "d".into(),
            qemu: "q".into(),
            linux: "l".into(),
            kiln_commit: "k".into(),
            wall_runs: 1,
            scale: 100,
            filter: String::new(),
        };
        let md = markdown(&meta, &entries, &rows);
        assert!(md.contains("| scaling | parallel@smp2 |"), "{md}");
        assert!(md.contains("| Kiln | 1.00 µs | 500 ns | 2.00 | 400 ns | 420 ns | 0.95 |"), "{md}");
        let js = json(&meta, &entries, &rows);
        assert!(js.contains("\"kiln\": {\"wall\": 2, \"icount\": 0.9523809523809523}"), "{js}");
        assert!(js.contains("\"name\": \"parallel@smp2\", \"benchmark\": \"parallel\", \"smp\": 2"), "{js}");
    }

    #[test]
    fn json_escapes() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        assert_eq!(json_num(None), "null");
    }
}
