//! Device files: /dev/null, zero, full, random, urandom, tty, console and
//! the character devices drivers register, and the block devices of
//! `crate::block`. /dev itself is a tmpfs holding device nodes; opening a
//! node finds its driver by device number.

use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::file::{FileOps, SinkKind};
use super::inode::{Inode, Owner, S_IFCHR};
use crate::event::{Events, PollTable, Pollee};

pub const fn makedev(major: u64, minor: u64) -> u64 {
    ((major & 0xfff) << 8) | (minor & 0xff) | ((minor & !0xff) << 12) | ((major & !0xfff) << 32)
}

/// The major number of a device number `makedev` built.
pub const fn major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
}

/// The minor number of a device number `makedev` built.
pub const fn minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & !0xff)
}

pub const NULL: u64 = makedev(1, 3);
pub const ZERO: u64 = makedev(1, 5);
pub const FULL: u64 = makedev(1, 7);
pub const RANDOM: u64 = makedev(1, 8);
pub const URANDOM: u64 = makedev(1, 9);
pub const TTY: u64 = makedev(5, 0);
pub const CONSOLE: u64 = makedev(5, 1);
pub const TTYS0: u64 = makedev(4, 64);

/// The `disk` group, which owns block device nodes on Debian.
const DISK_GID: u32 = 6;

/// Opens a driver's file operations for a device node.
pub type OpenFn = fn(flags: u32) -> Result<Arc<dyn FileOps>, Errno>;

static DRIVERS: SpinLock<Vec<(u64, OpenFn)>> = SpinLock::new(Vec::new());

/// Registers a character device driver for `rdev`.
pub fn register(rdev: u64, open: OpenFn) {
    DRIVERS.lock().push((rdev, open));
}

pub fn open_device(rdev: u64, flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    let open = DRIVERS.lock().iter().find(|(d, _)| *d == rdev).map(|(_, f)| *f);
    match open {
        Some(f) => f(flags),
        None => Err(Errno::ENXIO),
    }
}

enum Mem {
    Null,
    Zero,
    Full,
    /// /dev/random: pollable, and always readable once the generator is
    /// seeded (from boot on here).
    Random,
    /// /dev/urandom: like /dev/null and /dev/zero, no poll method (epoll
    /// refuses it with EPERM, as on Linux).
    Urandom,
}

/// /dev/random's head: its readiness never changes, so nobody notifies.
static RANDOM_POLLEE: Pollee = Pollee::new();

impl FileOps for Mem {
    fn read_at(&self, _offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        match self {
            Mem::Null => Ok(0),
            Mem::Zero | Mem::Full => {
                buf.fill(0);
                Ok(buf.len())
            }
            Mem::Random | Mem::Urandom => {
                crate::random::fill(buf);
                Ok(buf.len())
            }
        }
    }

    fn write_at(&self, _offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        match self {
            Mem::Full => Err(Errno::ENOSPC),
            _ => Ok(buf.len()),
        }
    }

    fn seekable(&self) -> bool {
        // The position never matters; keeping it unseekable avoids the
        // offset lock on every read and write.
        false
    }

    fn partial_reads(&self) -> bool {
        false
    }

    fn fixed_seek(&self) -> Option<u64> {
        Some(0)
    }

    fn maps_anonymous(&self) -> bool {
        matches!(self, Mem::Zero)
    }

    fn sink(&self) -> Option<SinkKind> {
        match self {
            Mem::Null => Some(SinkKind::Null),
            Mem::Zero => Some(SinkKind::Zero),
            Mem::Full | Mem::Random | Mem::Urandom => None,
        }
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        match self {
            Mem::Random => {
                if let Some(table) = table {
                    table.register(&RANDOM_POLLEE);
                }
                Events::READABLE
            }
            _ => Events::ALWAYS,
        }
    }

    fn mode(&self) -> u32 {
        S_IFCHR | 0o666
    }
}

/// Registers the built-in devices and creates /dev's nodes in `dev`.
pub fn populate(dev: &Arc<dyn Inode>) -> Result<(), Errno> {
    register(NULL, |_| Ok(Arc::new(Mem::Null)));
    register(ZERO, |_| Ok(Arc::new(Mem::Zero)));
    register(FULL, |_| Ok(Arc::new(Mem::Full)));
    register(RANDOM, |_| Ok(Arc::new(Mem::Random)));
    register(URANDOM, |_| Ok(Arc::new(Mem::Urandom)));
    register(TTY, super::tty::open_current);
    register(CONSOLE, super::tty::open_console);
    register(TTYS0, super::tty::open_console);
    register(super::devpts::PTMX, super::devpts::open_ptmx);
    register(crate::dev::mymem::RDEV, crate::dev::mymem::open);
    for (name, rdev, perm) in [
        ("null", NULL, 0o666),
        ("zero", ZERO, 0o666),
        ("full", FULL, 0o666),
        ("random", RANDOM, 0o666),
        ("urandom", URANDOM, 0o666),
        ("tty", TTY, 0o666),
        ("console", CONSOLE, 0o600),
        ("ttyS0", TTYS0, 0o660),
        ("ptmx", super::devpts::PTMX, 0o666),
        ("mymem", crate::dev::mymem::RDEV, 0o666),
    ] {
        dev.create(name, S_IFCHR | perm, rdev, Owner::ROOT)?;
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        dev.symlink(name, target, Owner::ROOT)?;
    }
    for q in crate::block::all() {
        dev.create(&q.name, super::inode::S_IFBLK | 0o660, q.rdev, Owner { uid: 0, gid: DISK_GID })?;
    }
    dev.create("shm", super::inode::S_IFDIR | 0o1777, 0, Owner::ROOT)?;
    dev.create("pts", super::inode::S_IFDIR | 0o755, 0, Owner::ROOT)?;
    Ok(())
}
