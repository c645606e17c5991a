//! The kernel log: `log` crate records to the serial console, each stamped
//! with the monotonic time since boot and its level.
//!
//! The level comes from `loglevel=` on the kernel command line (error,
//! warn, info, debug, trace); the default is info.
//!
//! Every record printed is also kept in a 64 KiB ring in the format
//! Linux's syslog(2) reads (`<level>[seconds.micros] text`), for
//! `syslog`/`dmesg`: [`read_all`], [`read_new`], [`clear`] and the sizes.
//! The ring never allocates and is written under an IRQ-safe lock that
//! nothing else is taken under.

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
        let syslog_level = match record.level() {
            Level::Error => 3,
            Level::Warn => 4,
            Level::Info => 6,
            Level::Debug | Level::Trace => 7,
        };
        let mut kept = LineBuffer::new();
        let _ = writeln!(
            kept,
            "<{}>[{:5}.{:06}] {}",
            syslog_level,
            ns / 1_000_000_000,
            ns / 1000 % 1_000_000,
            record.args()
        );
        if !kept.as_bytes().ends_with(b"\n") {
            // Cut short: keep the record a line.
            kept.len -= 1;
            let _ = kept.write_str("\n");
        }
        RING.lock().push(kept.as_bytes());
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

const RING_SIZE: usize = 1 << 16;

/// The kept records: byte `i` of the log ever written is at
/// `buf[i % RING_SIZE]` while `i >= written - RING_SIZE`.
struct Ring {
    buf: [u8; RING_SIZE],
    /// Bytes ever written.
    written: u64,
    /// Where SYSLOG_ACTION_CLEAR left the start of what READ_ALL returns.
    cleared: u64,
    /// Where SYSLOG_ACTION_READ goes on from.
    read: u64,
}

static RING: hal::sync::SpinLock<Ring> =
    hal::sync::SpinLock::new(Ring { buf: [0; RING_SIZE], written: 0, cleared: 0, read: 0 });

impl Ring {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.buf[(self.written % RING_SIZE as u64) as usize] = b;
            self.written += 1;
        }
    }

    /// The first whole record at or after `from`, within what is kept.
    fn start_at(&self, from: u64) -> u64 {
        let oldest = self.written.saturating_sub(RING_SIZE as u64);
        if from >= oldest {
            return from;
        }
        // Overwritten in part: skip to the next record.
        let mut at = oldest;
        while at < self.written && self.buf[(at % RING_SIZE as u64) as usize] != b'\n' {
            at += 1;
        }
        (at + 1).min(self.written)
    }

    fn byte(&self, at: u64) -> u8 {
        self.buf[(at % RING_SIZE as u64) as usize]
    }

    /// Copies [from, to) out; `out` holds at least `to - from` bytes.
    fn copy(&self, from: u64, to: u64, out: &mut [u8]) -> usize {
        let n = (to - from) as usize;
        for (i, o) in out[..n].iter_mut().enumerate() {
            *o = self.byte(from + i as u64);
        }
        n
    }
}

/// The ring's capacity (SYSLOG_ACTION_SIZE_BUFFER).
pub fn ring_size() -> usize {
    RING_SIZE
}

/// SYSLOG_ACTION_READ_ALL / READ_CLEAR: the newest whole records that fit
/// in `out` since the last clear; the bytes written.
pub fn read_all(out: &mut [u8], clear: bool) -> usize {
    let mut ring = RING.lock();
    let mut from = ring.start_at(ring.cleared);
    let end = ring.written;
    // Drop the oldest records until the rest fits.
    while end - from > out.len() as u64 {
        while from < end && ring.byte(from) != b'\n' {
            from += 1;
        }
        from = (from + 1).min(end);
    }
    let n = ring.copy(from, end, out);
    if clear {
        ring.cleared = end;
    }
    n
}

/// SYSLOG_ACTION_READ: whole unread records that fit in `out` (at least
/// one is cut to fit if it alone is longer), consumed; 0 when none.
pub fn read_new(out: &mut [u8]) -> usize {
    let mut ring = RING.lock();
    let from = ring.start_at(ring.read);
    let end = ring.written;
    let mut to = from;
    let mut at = from;
    while at < end && at - from < out.len() as u64 {
        if ring.byte(at) == b'\n' {
            to = at + 1;
        }
        at += 1;
    }
    if to == from {
        to = at; // a record longer than the buffer: its start
    }
    let n = ring.copy(from, to, out);
    ring.read = to;
    n
}

/// SYSLOG_ACTION_SIZE_UNREAD: bytes SYSLOG_ACTION_READ has not consumed.
pub fn unread() -> usize {
    let ring = RING.lock();
    (ring.written - ring.start_at(ring.read)) as usize
}

/// SYSLOG_ACTION_CLEAR: READ_ALL starts after what is there now.
pub fn clear() {
    let mut ring = RING.lock();
    ring.cleared = ring.written;
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
