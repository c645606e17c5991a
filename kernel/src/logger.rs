//! The kernel log: `log` crate records to the serial console, each stamped
//! with the monotonic time since boot and its level.
//!
//! The level comes from `loglevel=` on the kernel command line (error,
//! warn, info, debug, trace); the default is info.

use core::fmt::Write;

use log::{Level, LevelFilter, Log, Metadata, Record};

struct KernelLogger;

static LOGGER: KernelLogger = KernelLogger;

impl Log for KernelLogger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let ns = hal::time::monotonic_ns();
        let level = match record.level() {
            Level::Error => "ERROR",
            Level::Warn => "WARN ",
            Level::Info => "INFO ",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        };
        // One formatted line per record, written under the console lock so
        // lines from different CPUs do not interleave.
        let mut line = LineBuffer::new();
        let _ = writeln!(line, "[{:5}.{:06}] {} {}", ns / 1_000_000_000, ns / 1000 % 1_000_000, level, record.args());
        hal::serial::write_bytes(line.as_bytes());
    }

    fn flush(&self) {}
}

/// A fixed buffer so that logging never allocates (it must work when the
/// heap is exhausted); overlong lines are cut.
struct LineBuffer {
    buf: [u8; 512],
    len: usize,
}

impl LineBuffer {
    fn new() -> LineBuffer {
        LineBuffer { buf: [0; 512], len: 0 }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Write for LineBuffer {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Parses `loglevel=` from the command line.
fn level_from_cmdline(cmdline: &str) -> LevelFilter {
    cmdline
        .split_whitespace()
        .find_map(|arg| arg.strip_prefix("loglevel="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(LevelFilter::Info)
}

pub fn init(cmdline: &str) {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level_from_cmdline(cmdline));
    }
}
