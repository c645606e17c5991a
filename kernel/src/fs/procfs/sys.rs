//! /proc/sys: the sysctl files, one row per file in [`TABLE`].
//!
//! A row names its path under /proc/sys, its mode (Linux's: 0644 for
//! tunables, 0444 for read-only facts, 0200 for drop_caches) and how it
//! reads and writes. Most tunables are integers with Linux's default and
//! range; the ones that change Kiln's behaviour keep their value where
//! that behaviour lives (`uts` for hostname and domainname, `proc` for
//! pid_max, `proc::coredump` for core_pattern, `mm` for max_map_count,
//! mmap_min_addr and overcommit_memory, `fs::pipe` for pipe-max-size,
//! `fs::fdtable` for nr_open, `fs::inotify` and `fs::epoll` for their
//! per-user limits, `fs::lease` reads lease-break-time), the
//! others keep it in a [`Knob`] here. Subsystems above `fs` add their
//! own rows at boot with [`register`] (the IPC limits under kernel/ and
//! fs/mqueue/, kept in `ipc::limits`), so this table names none of them.
//! Values Linux derives from the amount of memory (file-max, threads-max,
//! min_free_kbytes, ...) use Linux's formula on Kiln's memory.
//!
//! Writes parse as Linux's proc_dointvec does: whitespace-separated
//! decimal integers, a value out of range is EINVAL; strings drop one
//! trailing newline. Directories are the paths' prefixes.

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use super::super::{epoll, inotify};

use linux_abi::errno::Errno;

/// An integer tunable that only this table reads.
pub struct Knob(AtomicI64);

impl Knob {
    pub const fn new(v: i64) -> Knob {
        Knob(AtomicI64::new(v))
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed)
    }
}

/// kernel.dmesg_restrict: reading the kernel log needs CAP_SYSLOG.
pub fn dmesg_restrict() -> bool {
    DMESG_RESTRICT.get() != 0
}

/// A string tunable that only this table reads (at most 255 bytes).
pub struct StrKnob(hal::sync::SpinLock<([u8; 256], usize)>);

impl StrKnob {
    pub const fn new(init: &[u8]) -> StrKnob {
        let mut b = [0u8; 256];
        let mut i = 0;
        while i < init.len() {
            b[i] = init[i];
            i += 1;
        }
        StrKnob(hal::sync::SpinLock::new((b, init.len())))
    }

    pub fn get(&self) -> String {
        let s = self.0.lock();
        String::from_utf8_lossy(&s.0[..s.1]).into_owned()
    }

    /// Keeps up to a newline, cut to 255 bytes (Linux's proc_dostring).
    fn set(&self, bytes: &[u8]) -> Result<(), Errno> {
        let v = crate::uts::sysctl_string(bytes, 255);
        let mut s = self.0.lock();
        s.0 = [0; 256];
        s.0[..v.len()].copy_from_slice(v);
        s.1 = v.len();
        Ok(())
    }
}

static POWEROFF_CMD: StrKnob = StrKnob::new(b"/sbin/poweroff");

/// A setter of a sysctl file, given the bytes written.
pub type Setter = fn(&[u8]) -> Result<(), Errno>;

/// How a sysctl file is read and written.
pub enum Access {
    /// A fixed text (read-only files).
    Text(&'static str),
    /// An integer kept in a knob, writable within `min..=max`; `then`
    /// runs after each write with the old and the new value.
    Int { knob: &'static Knob, min: i64, max: i64, then: Option<fn(i64, i64)> },
    /// Like `Int`, but until it is written the value is `default()`, a
    /// figure Linux derives from the amount of memory.
    Derived { knob: &'static Knob, default: fn() -> i64, min: i64, max: i64 },
    /// Computed on each read; written through `write` when it has one.
    Func { read: fn() -> String, write: Option<Setter> },
}

pub struct Sysctl {
    /// The path under /proc/sys.
    pub path: &'static str,
    /// Permission bits, as Linux shows them.
    pub mode: u32,
    pub access: Access,
}

const RW: u32 = 0o644;
const RO: u32 = 0o444;

const fn int(path: &'static str, knob: &'static Knob, min: i64, max: i64) -> Sysctl {
    Sysctl { path, mode: RW, access: Access::Int { knob, min, max, then: None } }
}

/// An `int` whose writes change another knob too (`then(old, new)`).
const fn int_then(path: &'static str, knob: &'static Knob, min: i64, max: i64, then: fn(i64, i64)) -> Sysctl {
    Sysctl { path, mode: RW, access: Access::Int { knob, min, max, then: Some(then) } }
}

const fn text(path: &'static str, value: &'static str) -> Sysctl {
    Sysctl { path, mode: RO, access: Access::Text(value) }
}

/// A knob that has not been written yet (`Access::Derived`).
const UNSET: i64 = i64::MIN;

const fn derived(path: &'static str, knob: &'static Knob, default: fn() -> i64, min: i64, max: i64) -> Sysctl {
    Sysctl { path, mode: RW, access: Access::Derived { knob, default, min, max } }
}

const fn func(path: &'static str, read: fn() -> String) -> Sysctl {
    Sysctl { path, mode: RO, access: Access::Func { read, write: None } }
}

const fn func_rw(path: &'static str, read: fn() -> String, write: Setter) -> Sysctl {
    Sysctl { path, mode: RW, access: Access::Func { read, write: Some(write) } }
}

const I32_MAX: i64 = i32::MAX as i64;

static PRINTK_RATELIMIT: Knob = Knob::new(5);
static PRINTK_RATELIMIT_BURST: Knob = Knob::new(10);
static PANIC: Knob = Knob::new(0);
static PANIC_ON_OOPS: Knob = Knob::new(0);
static KPTR_RESTRICT: Knob = Knob::new(0);
static DMESG_RESTRICT: Knob = Knob::new(0);
static PERF_EVENT_PARANOID: Knob = Knob::new(2);
static OVERFLOWUID: Knob = Knob::new(65534);
static OVERFLOWGID: Knob = Knob::new(65534);
static FS_OVERFLOWUID: Knob = Knob::new(65534);
static FS_OVERFLOWGID: Knob = Knob::new(65534);
static TAINTED: Knob = Knob::new(0);
static CTRL_ALT_DEL: Knob = Knob::new(1);
/// Kiln places mappings at fixed addresses: only 0 is true.
static RANDOMIZE_VA_SPACE: Knob = Knob::new(0);
static PTY_MAX: Knob = Knob::new(4096);
static THREADS_MAX: Knob = Knob::new(UNSET);
static MIN_FREE_KBYTES: Knob = Knob::new(UNSET);
static USER_RESERVE_KBYTES: Knob = Knob::new(UNSET);
static FILE_MAX: Knob = Knob::new(UNSET);
static OVERCOMMIT_RATIO: Knob = Knob::new(50);
static OVERCOMMIT_KBYTES: Knob = Knob::new(0);
static SWAPPINESS: Knob = Knob::new(60);
/// The writeback knobs, read by `fs::pagecache` each time it decides.
pub static DIRTY_RATIO: Knob = Knob::new(20);
pub static DIRTY_BACKGROUND_RATIO: Knob = Knob::new(10);
pub static DIRTY_BYTES: Knob = Knob::new(0);
pub static DIRTY_BACKGROUND_BYTES: Knob = Knob::new(0);
pub static DIRTY_EXPIRE: Knob = Knob::new(3000);
pub static DIRTY_WRITEBACK: Knob = Knob::new(500);
static VFS_CACHE_PRESSURE: Knob = Knob::new(100);
static PAGE_CLUSTER: Knob = Knob::new(3);
static OOM_KILL_ALLOCATING_TASK: Knob = Knob::new(0);
static PANIC_ON_OOM: Knob = Knob::new(0);
static ADMIN_RESERVE_KBYTES: Knob = Knob::new(8192);
static STAT_INTERVAL: Knob = Knob::new(1);
static PIPE_USER_PAGES_SOFT: Knob = Knob::new(16384);
static PIPE_USER_PAGES_HARD: Knob = Knob::new(0);
static AIO_MAX_NR: Knob = Knob::new(65536);
/// fs.lease-break-time, in seconds: read by `fs::lease`.
pub static LEASE_BREAK_TIME: Knob = Knob::new(45);
static LEASES_ENABLE: Knob = Knob::new(1);
static PROTECTED_HARDLINKS: Knob = Knob::new(0);
static PROTECTED_SYMLINKS: Knob = Knob::new(0);
static PROTECTED_FIFOS: Knob = Knob::new(0);
static PROTECTED_REGULAR: Knob = Knob::new(0);
/// Read by `proc::suid_dumpable` when a credential change ends dumpability.
pub static SUID_DUMPABLE: Knob = Knob::new(0);
static DIR_NOTIFY_ENABLE: Knob = Knob::new(1);
/// kernel.core_uses_pid, read by `proc::coredump`.
pub static CORE_USES_PID: Knob = Knob::new(0);
static PRINTK: [Knob; 4] = [Knob::new(4), Knob::new(4), Knob::new(1), Knob::new(7)];
/// Every sysctl file, by path.
pub static TABLE: &[Sysctl] = &[
    func_rw("kernel/hostname", || line(&crate::uts::hostname()), crate::uts::set_hostname_line),
    func_rw("kernel/domainname", || line(&crate::uts::domainname()), crate::uts::set_domainname_line),
    func("kernel/osrelease", || line(crate::uts::RELEASE)),
    func("kernel/ostype", || line(crate::uts::SYSNAME)),
    func("kernel/version", || line(crate::uts::VERSION)),
    func_rw("kernel/pid_max", || int_line(crate::proc::pid_max() as i64), write_pid_max),
    derived("kernel/threads-max", &THREADS_MAX, threads_max, 20, 0x3fff_ffff),
    func_rw(
        "kernel/core_pattern",
        || {
            let mut s = String::from_utf8_lossy(&crate::proc::coredump::pattern()).into_owned();
            s.push('\n');
            s
        },
        crate::proc::coredump::set_pattern,
    ),
    int("kernel/core_uses_pid", &CORE_USES_PID, i32::MIN as i64, I32_MAX),
    int("kernel/randomize_va_space", &RANDOMIZE_VA_SPACE, 0, 0),
    text("kernel/ngroups_max", "65536\n"),
    text("kernel/cap_last_cap", "40\n"),
    func_rw("kernel/printk", read_printk, write_printk),
    int("kernel/printk_ratelimit", &PRINTK_RATELIMIT, 0, I32_MAX),
    int("kernel/printk_ratelimit_burst", &PRINTK_RATELIMIT_BURST, 0, I32_MAX),
    int("kernel/panic", &PANIC, i32::MIN as i64, I32_MAX),
    int("kernel/panic_on_oops", &PANIC_ON_OOPS, i32::MIN as i64, I32_MAX),
    int("kernel/kptr_restrict", &KPTR_RESTRICT, 0, 2),
    int("kernel/dmesg_restrict", &DMESG_RESTRICT, 0, 1),
    int("kernel/perf_event_paranoid", &PERF_EVENT_PARANOID, i32::MIN as i64, I32_MAX),
    int("kernel/overflowuid", &OVERFLOWUID, 0, 65535),
    int("kernel/overflowgid", &OVERFLOWGID, 0, 65535),
    int("kernel/tainted", &TAINTED, 0, I32_MAX),
    int("kernel/ctrl-alt-del", &CTRL_ALT_DEL, i32::MIN as i64, I32_MAX),
    func_rw("kernel/poweroff_cmd", || line(&POWEROFF_CMD.get()), |b| POWEROFF_CMD.set(b)),
    int("kernel/pty/max", &PTY_MAX, 0, 1 << 20),
    text("kernel/pty/nr", "0\n"),
    func("kernel/random/boot_id", || line(&boot_id())),
    func("kernel/random/uuid", || line(&uuid())),
    text("kernel/random/entropy_avail", "256\n"),
    text("kernel/random/poolsize", "256\n"),
    func_rw("vm/overcommit_memory", || int_line(crate::mm::overcommit_memory()), write_overcommit),
    int("vm/overcommit_ratio", &OVERCOMMIT_RATIO, 0, I32_MAX),
    int("vm/overcommit_kbytes", &OVERCOMMIT_KBYTES, 0, i64::MAX),
    func_rw("vm/max_map_count", || int_line(crate::mm::max_map_count() as i64), write_max_map_count),
    func_rw("vm/mmap_min_addr", || int_line(crate::mm::mmap_min_addr() as i64), write_mmap_min_addr),
    int("vm/swappiness", &SWAPPINESS, 0, 200),
    // Each limit is a ratio or a byte count: writing one form zeroes the
    // other, as Linux's dirty_*_handler do (the foreground pair only when
    // the value changes; the bytes forms have a floor, so 0 cannot be
    // written there and the ratio is how one goes back).
    int_then("vm/dirty_ratio", &DIRTY_RATIO, 0, 100, |old, new| {
        if old != new {
            DIRTY_BYTES.set(0)
        }
    }),
    int_then("vm/dirty_background_ratio", &DIRTY_BACKGROUND_RATIO, 0, 100, |_, _| DIRTY_BACKGROUND_BYTES.set(0)),
    int_then("vm/dirty_bytes", &DIRTY_BYTES, 2 * 4096, i64::MAX, |old, new| {
        if old != new {
            DIRTY_RATIO.set(0)
        }
    }),
    int_then("vm/dirty_background_bytes", &DIRTY_BACKGROUND_BYTES, 1, i64::MAX, |_, _| DIRTY_BACKGROUND_RATIO.set(0)),
    int("vm/dirty_expire_centisecs", &DIRTY_EXPIRE, 0, I32_MAX),
    int("vm/dirty_writeback_centisecs", &DIRTY_WRITEBACK, 0, I32_MAX),
    Sysctl {
        path: "vm/drop_caches",
        mode: 0o200,
        access: Access::Func { read: || String::new(), write: Some(write_drop_caches) },
    },
    int("vm/vfs_cache_pressure", &VFS_CACHE_PRESSURE, 0, I32_MAX),
    int("vm/page-cluster", &PAGE_CLUSTER, 0, I32_MAX),
    // No huge pages: a request for some leaves the count at 0, as Linux
    // does when it cannot find the memory.
    func_rw("vm/nr_hugepages", || int_line(0), |b| parse_ints(b, 1).map(|_| ())),
    int("vm/oom_kill_allocating_task", &OOM_KILL_ALLOCATING_TASK, i32::MIN as i64, I32_MAX),
    int("vm/panic_on_oom", &PANIC_ON_OOM, 0, 2),
    derived("vm/min_free_kbytes", &MIN_FREE_KBYTES, min_free_kbytes, 0, I32_MAX),
    derived("vm/user_reserve_kbytes", &USER_RESERVE_KBYTES, || (free_kbytes() / 32).min(1 << 17), 0, i64::MAX),
    int("vm/admin_reserve_kbytes", &ADMIN_RESERVE_KBYTES, 0, i64::MAX),
    int("vm/stat_interval", &STAT_INTERVAL, 0, I32_MAX),
    derived("fs/file-max", &FILE_MAX, file_max, 0, i64::MAX),
    func("fs/file-nr", || format!("{}\t0\t{}\n", crate::proc::open_file_count(), derived_value(&FILE_MAX, file_max))),
    func_rw("fs/nr_open", || int_line(super::super::fdtable::nr_open() as i64), write_nr_open),
    func_rw("fs/pipe-max-size", || int_line(super::super::pipe::pipe_max_size() as i64), write_pipe_max_size),
    int("fs/pipe-user-pages-soft", &PIPE_USER_PAGES_SOFT, 0, i64::MAX),
    int("fs/pipe-user-pages-hard", &PIPE_USER_PAGES_HARD, 0, i64::MAX),
    func_rw(
        "fs/inotify/max_user_watches",
        || int_line(inotify::max_user_watches() as i64),
        |b| store_limit(&inotify::MAX_USER_WATCHES, b, I32_MAX),
    ),
    func_rw(
        "fs/inotify/max_user_instances",
        || int_line(load_limit(&inotify::MAX_USER_INSTANCES)),
        |b| store_limit(&inotify::MAX_USER_INSTANCES, b, I32_MAX),
    ),
    func_rw(
        "fs/inotify/max_queued_events",
        || int_line(load_limit(&inotify::MAX_QUEUED_EVENTS)),
        |b| store_limit(&inotify::MAX_QUEUED_EVENTS, b, I32_MAX),
    ),
    func_rw(
        "fs/epoll/max_user_watches",
        || int_line(epoll::max_user_watches() as i64),
        |b| store_limit(&epoll::MAX_USER_WATCHES, b, i64::MAX),
    ),
    int("fs/aio-max-nr", &AIO_MAX_NR, 0, i64::MAX),
    text("fs/aio-nr", "0\n"),
    int("fs/lease-break-time", &LEASE_BREAK_TIME, i32::MIN as i64, I32_MAX),
    int("fs/leases-enable", &LEASES_ENABLE, i32::MIN as i64, I32_MAX),
    int("fs/protected_hardlinks", &PROTECTED_HARDLINKS, 0, 1),
    int("fs/protected_symlinks", &PROTECTED_SYMLINKS, 0, 1),
    int("fs/protected_fifos", &PROTECTED_FIFOS, 0, 2),
    int("fs/protected_regular", &PROTECTED_REGULAR, 0, 2),
    int("fs/suid_dumpable", &SUID_DUMPABLE, 0, 2),
    int("fs/overflowuid", &FS_OVERFLOWUID, 0, 65535),
    int("fs/overflowgid", &FS_OVERFLOWGID, 0, 65535),
    int("fs/dir-notify-enable", &DIR_NOTIFY_ENABLE, i32::MIN as i64, I32_MAX),
];

/// Row groups other subsystems registered, after [`TABLE`] (a few: they
/// are added once each at boot).
static REGISTERED: hal::sync::SpinLock<[Option<&'static [Sysctl]>; 4]> = hal::sync::SpinLock::new([None; 4]);

/// Adds `rows` to /proc/sys (at boot, by the subsystem whose values they
/// read and write). Their paths must not repeat the table's.
pub fn register(rows: &'static [Sysctl]) {
    let mut slots = REGISTERED.lock();
    match slots.iter_mut().find(|s| s.is_none()) {
        Some(slot) => *slot = Some(rows),
        None => log::warn!("sysctl: no room to register {} rows", rows.len()),
    }
}

/// Every row: the table's, then the registered ones. A file's index in
/// this order is its inode's (rows are only ever added at the end).
pub fn rows() -> impl Iterator<Item = &'static Sysctl> {
    let registered = *REGISTERED.lock();
    TABLE.iter().chain(registered.into_iter().flatten().flatten())
}

/// The row at `index` in [`rows`] order.
pub fn row(index: usize) -> Option<&'static Sysctl> {
    rows().nth(index)
}

/// The index of the row for `path` (below /proc/sys).
pub fn find(path: &str) -> Option<usize> {
    rows().position(|r| r.path == path)
}

fn line(s: &str) -> String {
    format!("{s}\n")
}

fn int_line(v: i64) -> String {
    format!("{v}\n")
}

/// Parses up to `max` whitespace-separated decimal integers (Linux's
/// proc_dointvec): EINVAL for anything else, or for none at all.
pub fn parse_ints(bytes: &[u8], max: usize) -> Result<([i64; 4], usize), Errno> {
    let text = core::str::from_utf8(bytes).map_err(|_| Errno::EINVAL)?;
    let text = text.split('\0').next().unwrap_or("");
    let mut out = [0i64; 4];
    let mut n = 0;
    for word in text.split_ascii_whitespace() {
        if n == max.min(4) {
            break;
        }
        out[n] = word.parse::<i64>().map_err(|_| Errno::EINVAL)?;
        n += 1;
    }
    if n == 0 {
        return Err(Errno::EINVAL);
    }
    Ok((out, n))
}

/// One unsigned long (proc_doulongvec_minmax without bounds): None for a
/// negative one, which Linux skips without an error; EINVAL for anything
/// that is not a number.
pub fn parse_ulong(bytes: &[u8]) -> Result<Option<u64>, Errno> {
    let text = core::str::from_utf8(bytes).map_err(|_| Errno::EINVAL)?;
    let word = text.split('\0').next().unwrap_or("").split_ascii_whitespace().next().ok_or(Errno::EINVAL)?;
    match word.strip_prefix('-') {
        Some(rest) => rest.parse::<u64>().map(|_| None).map_err(|_| Errno::EINVAL),
        None => word.parse::<u64>().map(Some).map_err(|_| Errno::EINVAL),
    }
}

/// One integer in `min..=max` (proc_dointvec_minmax): EINVAL otherwise.
pub fn parse_one(bytes: &[u8], min: i64, max: i64) -> Result<i64, Errno> {
    let v = parse_ints(bytes, 1)?.0[0];
    if v < min || v > max {
        return Err(Errno::EINVAL);
    }
    Ok(v)
}

/// The text of a sysctl file.
pub fn read(row: &Sysctl) -> String {
    match &row.access {
        Access::Text(t) => String::from(*t),
        Access::Int { knob, .. } => int_line(knob.get()),
        Access::Derived { knob, default, .. } => int_line(derived_value(knob, *default)),
        Access::Func { read, .. } => read(),
    }
}

/// Writes `bytes` to a sysctl (EACCES for read-only ones).
pub fn write(row: &Sysctl, bytes: &[u8]) -> Result<(), Errno> {
    match &row.access {
        Access::Int { knob, min, max, then } if row.mode & 0o200 != 0 => {
            let new = parse_one(bytes, *min, *max)?;
            let old = knob.get();
            knob.set(new);
            if let Some(then) = then {
                then(old, new);
            }
            Ok(())
        }
        Access::Derived { knob, min, max, .. } if row.mode & 0o200 != 0 => {
            knob.set(parse_one(bytes, *min, *max)?);
            Ok(())
        }
        Access::Func { write: Some(w), .. } => w(bytes),
        _ => Err(Errno::EACCES),
    }
}

/// The entries of directory `path`: (name, is a directory), in table order.
pub fn list(path: &str) -> alloc::vec::Vec<(&'static str, bool)> {
    let mut out: alloc::vec::Vec<(&'static str, bool)> = alloc::vec::Vec::new();
    for r in rows() {
        let rest = if path.is_empty() {
            r.path
        } else if r.path.len() > path.len() && r.path.starts_with(path) && r.path.as_bytes()[path.len()] == b'/' {
            &r.path[path.len() + 1..]
        } else {
            continue;
        };
        let (name, dir) = match rest.split_once('/') {
            Some((first, _)) => (first, true),
            None => (rest, false),
        };
        if !out.iter().any(|(n, _)| *n == name) && out.try_reserve(1).is_ok() {
            out.push((name, dir));
        }
    }
    out
}

fn derived_value(knob: &Knob, default: fn() -> i64) -> i64 {
    match knob.get() {
        UNSET => default(),
        v => v,
    }
}

fn write_pid_max(b: &[u8]) -> Result<(), Errno> {
    // Linux's RESERVED_PIDS + 1 .. PID_MAX_LIMIT.
    crate::proc::set_pid_max(parse_one(b, 301, 4 * 1024 * 1024)? as i32);
    Ok(())
}

/// Linux's set_max_threads: memory / (8 thread stacks of 16 KiB).
fn threads_max() -> i64 {
    let bytes = hal::mm::total_frame_count() * 4096;
    ((bytes / (16384 * 8)) as i64).clamp(20, 0x3fff_ffff)
}

fn read_printk() -> String {
    format!("{}\t{}\t{}\t{}\n", PRINTK[0].get(), PRINTK[1].get(), PRINTK[2].get(), PRINTK[3].get())
}

fn write_printk(b: &[u8]) -> Result<(), Errno> {
    let (v, n) = parse_ints(b, 4)?;
    for (knob, value) in PRINTK.iter().zip(v.iter()).take(n) {
        knob.set(*value);
    }
    Ok(())
}

fn write_overcommit(b: &[u8]) -> Result<(), Errno> {
    // Mode 2 (strict accounting) needs a commit charge Kiln does not keep.
    crate::mm::set_overcommit_memory(parse_one(b, 0, 1)?);
    Ok(())
}

fn write_max_map_count(b: &[u8]) -> Result<(), Errno> {
    crate::mm::set_max_map_count(parse_one(b, 0, I32_MAX)? as usize);
    Ok(())
}

fn write_mmap_min_addr(b: &[u8]) -> Result<(), Errno> {
    // Page-rounded up, as Linux's mmap_min_addr_handler does.
    let v = parse_one(b, 0, i64::MAX)? as u64;
    crate::mm::set_mmap_min_addr(v.next_multiple_of(4096));
    Ok(())
}

fn write_drop_caches(b: &[u8]) -> Result<(), Errno> {
    // tmpfs pages are the only cache and cannot be dropped: nothing to do.
    parse_one(b, 1, 4).map(|_| ())
}

fn write_nr_open(b: &[u8]) -> Result<(), Errno> {
    // BITS_PER_LONG .. sysctl_nr_open_max.
    super::super::fdtable::set_nr_open(parse_one(b, 64, 1_073_741_816)? as usize);
    Ok(())
}

fn write_pipe_max_size(b: &[u8]) -> Result<(), Errno> {
    let v = parse_one(b, 0, u32::MAX as i64)? as usize;
    super::super::pipe::set_pipe_max_size(v)
}

fn total_kbytes() -> i64 {
    (hal::mm::total_frame_count() * 4) as i64
}

fn free_kbytes() -> i64 {
    (hal::mm::free_frame_count() * 4) as i64
}

/// Linux's files_maxfiles_init: 10% of memory at 1 KiB per file.
fn file_max() -> i64 {
    (total_kbytes() / 10).max(8192)
}

/// Linux's init_per_zone_wmark_min: sqrt(16 * lowmem KiB), 128..=262144.
fn min_free_kbytes() -> i64 {
    let x = (total_kbytes() * 16) as u64;
    let mut r = 0u64;
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    (r as i64).clamp(128, 262_144)
}

fn load_limit(limit: &AtomicU64) -> i64 {
    limit.load(Ordering::Relaxed).min(i64::MAX as u64) as i64
}

/// Writes an inotify or epoll limit, `0..=max`, where its subsystem reads it.
fn store_limit(limit: &AtomicU64, b: &[u8], max: i64) -> Result<(), Errno> {
    limit.store(parse_one(b, 0, max)? as u64, Ordering::Relaxed);
    Ok(())
}

fn hex_uuid(b: [u8; 16]) -> String {
    let mut b = b;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    format!(
        "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
    )
}

/// A random version-4 UUID, made anew on every read.
fn uuid() -> String {
    let mut b = [0u8; 16];
    crate::random::fill(&mut b);
    hex_uuid(b)
}

static BOOT_ID: hal::sync::Once<[u8; 16]> = hal::sync::Once::new();

/// One UUID for the whole boot.
fn boot_id() -> String {
    if BOOT_ID.get().is_none() {
        let mut b = [0u8; 16];
        crate::random::fill(&mut b);
        // Of two first readers, one sets it and both read that one.
        BOOT_ID.set(b);
    }
    hex_uuid(BOOT_ID.get().copied().unwrap_or([0; 16]))
}
