//! devpts: the file system of pty slaves (`/dev/pts`).
//!
//! As on Linux since 4.7 every mount is a new instance with its own
//! numbering (`newinstance` is accepted and changes nothing). An
//! instance holds `ptmx`, which makes a new pair when opened, and one
//! character device `N` (major 136 + N / 256) per pty whose master is
//! open. Mount options: `mode` (the slaves' permissions, default 0600),
//! `ptmxmode` (default 0000), `gid` (the slaves' group; default the
//! opener's), `uid`, `max`. `/dev/ptmx` opens the instance mounted at
//! `/dev/pts` in the opener's mount namespace (Linux looks for `pts`
//! beside the ptmx node it opened, which is the same place in any
//! standard /dev).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::dentry::Dentry;
use super::devfs::makedev;
use super::file::FileOps;
use super::inode::{DirEntry, FileType, FsStats, Inode, Metadata, S_IFCHR, S_IFDIR};
use super::tty::Tty;

const DEVPTS_SUPER_MAGIC: u64 = 0x1cd1;
/// /proc/sys/kernel/pty/max.
const PTY_MAX: u32 = 4096;
pub const PTMX: u64 = makedev(5, 2);

static NEXT_DEV: AtomicU64 = AtomicU64::new(1);

#[derive(Clone, Copy)]
struct Options {
    mode: u32,
    ptmxmode: u32,
    gid: Option<u32>,
    uid: Option<u32>,
    max: u32,
}

/// A visible slave: its terminal and owner.
struct Entry {
    tty: Weak<Tty>,
    uid: u32,
    gid: u32,
    mode: u32,
    ctime: u64,
}

pub struct Devpts {
    dev: u64,
    opts: SpinLock<Options>,
    /// Slaves whose master is open, by number.
    entries: SpinLock<BTreeMap<u32, Entry>>,
    /// Numbers in use (until both sides of the pair are gone).
    used: SpinLock<Vec<u32>>,
    /// The instance's root dentry, once mounted (for TIOCGPTPEER's file).
    root: SpinLock<Weak<Dentry>>,
    ctime: u64,
}

/// A pty number taken from an instance; given back when dropped.
pub struct PtyIndex {
    fs: Weak<Devpts>,
    n: u32,
}

impl PtyIndex {
    pub fn number(&self) -> u32 {
        self.n
    }
}

impl Drop for PtyIndex {
    fn drop(&mut self) {
        if let Some(fs) = self.fs.upgrade() {
            fs.used.lock().retain(|&n| n != self.n);
        }
    }
}

fn parse_octal(v: &str) -> Result<u32, Errno> {
    u32::from_str_radix(v, 8).map_err(|_| Errno::EINVAL)
}

fn parse_dec(v: &str) -> Result<u32, Errno> {
    v.parse::<u32>().map_err(|_| Errno::EINVAL)
}

/// A new instance with mount options `data` (comma separated).
pub fn new_instance(data: Option<&str>) -> Result<Arc<dyn Inode>, Errno> {
    let mut opts = Options { mode: 0o600, ptmxmode: 0, gid: None, uid: None, max: PTY_MAX };
    for opt in data.unwrap_or("").split(',').filter(|o| !o.is_empty()) {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        match (key, value) {
            ("newinstance", None) => {}
            ("mode", Some(v)) => opts.mode = parse_octal(v)? & 0o7777,
            ("ptmxmode", Some(v)) => opts.ptmxmode = parse_octal(v)? & 0o7777,
            ("gid", Some(v)) => opts.gid = Some(parse_dec(v)?),
            ("uid", Some(v)) => opts.uid = Some(parse_dec(v)?),
            ("max", Some(v)) => opts.max = parse_dec(v)?.min(PTY_MAX),
            _ => return Err(Errno::EINVAL),
        }
    }
    let fs = Arc::try_new(Devpts {
        dev: makedev(0, 0x100 + NEXT_DEV.fetch_add(1, Ordering::Relaxed)),
        opts: SpinLock::new(opts),
        entries: SpinLock::new(BTreeMap::new()),
        used: SpinLock::new(Vec::new()),
        root: SpinLock::new(Weak::new()),
        ctime: crate::clock::realtime_ns(),
    })
    .map_err(|_| Errno::ENOMEM)?;
    Ok(Arc::new(DevptsNode { fs, kind: NodeKind::Root }))
}

/// The instance a mounted devpts root belongs to.
pub fn instance_of(root: &Arc<Dentry>) -> Option<Arc<Devpts>> {
    let node = root.inode().as_any().downcast_ref::<DevptsNode>()?;
    if !matches!(node.kind, NodeKind::Root) {
        return None;
    }
    let mut slot = node.fs.root.lock();
    if slot.upgrade().is_none() {
        *slot = Arc::downgrade(root);
    }
    Some(node.fs.clone())
}

/// Opens /dev/ptmx: a new pair in the devpts mounted at /dev/pts (ENODEV
/// when none is, as Linux answers).
pub fn open_ptmx(_flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    // The kernel looks it up, not the opener: no permission applies.
    let root = super::dentry::resolve(&crate::cred::ROOT, &super::dentry::root(), "/dev/pts", true)
        .map_err(|_| Errno::ENODEV)?;
    if !root.is_mount_root() {
        return Err(Errno::ENODEV);
    }
    let fs = instance_of(&root).ok_or(Errno::ENODEV)?;
    super::pty::open_master(&fs)
}

impl Devpts {
    /// The lowest free number (ENOSPC past `max`).
    pub fn alloc_index(self: &Arc<Self>) -> Result<PtyIndex, Errno> {
        let max = self.opts.lock().max;
        let mut used = self.used.lock();
        let n = (0..max).find(|n| !used.contains(n)).ok_or(Errno::ENOSPC)?;
        used.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        used.push(n);
        Ok(PtyIndex { fs: Arc::downgrade(self), n })
    }

    /// Makes /dev/pts/N appear for a new pair, owned by the opener.
    pub fn publish(&self, n: u32, tty: &Arc<Tty>) -> Result<(), Errno> {
        let opts = *self.opts.lock();
        let (uid, gid) = super::tty::sessions().map_or((0, 0), |s| s.caller_fs_ids());
        let entry = Entry {
            tty: Arc::downgrade(tty),
            uid: opts.uid.unwrap_or(uid),
            gid: opts.gid.unwrap_or(gid),
            mode: opts.mode,
            ctime: crate::clock::realtime_ns(),
        };
        self.entries.lock().insert(n, entry);
        Ok(())
    }

    /// The master closed: /dev/pts/N goes.
    pub fn unpublish(&self, n: u32) {
        let gone = self.entries.lock().remove(&n);
        drop(gone);
    }

    pub fn slave_dentry(&self, n: u32) -> Option<Arc<Dentry>> {
        let root = self.root.lock().upgrade()?;
        root.child(&alloc::format!("{n}")).ok()
    }

    fn tty(&self, n: u32) -> Option<Arc<Tty>> {
        self.entries.lock().get(&n).and_then(|e| e.tty.upgrade())
    }
}

enum NodeKind {
    Root,
    Ptmx,
    Slave(u32),
}

struct DevptsNode {
    fs: Arc<Devpts>,
    kind: NodeKind,
}

impl Inode for DevptsNode {
    fn metadata(&self) -> Metadata {
        let fs = &self.fs;
        let opts = *fs.opts.lock();
        let mut m =
            Metadata { dev: fs.dev, nlink: 1, atime: fs.ctime, mtime: fs.ctime, ctime: fs.ctime, ..Default::default() };
        match self.kind {
            NodeKind::Root => {
                m.ino = 1;
                m.mode = S_IFDIR | 0o755;
                m.nlink = 2;
            }
            NodeKind::Ptmx => {
                m.ino = 2;
                m.mode = S_IFCHR | opts.ptmxmode;
                m.rdev = PTMX;
            }
            NodeKind::Slave(n) => {
                m.ino = u64::from(n) + 3;
                m.rdev = makedev(136 + u64::from(n) / 256, u64::from(n) % 256);
                let entries = fs.entries.lock();
                let e = entries.get(&n);
                m.mode = S_IFCHR | e.map_or(opts.mode, |e| e.mode);
                m.uid = e.map_or(0, |e| e.uid);
                m.gid = e.map_or(0, |e| e.gid);
                let t = e.map_or(fs.ctime, |e| e.ctime);
                (m.atime, m.mtime, m.ctime) = (t, t, t);
            }
        }
        m
    }

    fn fs_stats(&self) -> FsStats {
        FsStats { magic: DEVPTS_SUPER_MAGIC, block_size: 4096, name_max: 255, ..Default::default() }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn set_mode(&self, mode: u32) -> Result<(), Errno> {
        match self.kind {
            NodeKind::Slave(n) => {
                let mut entries = self.fs.entries.lock();
                let e = entries.get_mut(&n).ok_or(Errno::ENOENT)?;
                e.mode = mode & 0o7777;
                Ok(())
            }
            NodeKind::Ptmx => {
                self.fs.opts.lock().ptmxmode = mode & 0o7777;
                Ok(())
            }
            NodeKind::Root => Err(Errno::EPERM),
        }
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
        let NodeKind::Slave(n) = self.kind else {
            return Err(Errno::EPERM);
        };
        let mut entries = self.fs.entries.lock();
        let e = entries.get_mut(&n).ok_or(Errno::ENOENT)?;
        if let Some(u) = uid {
            e.uid = u;
        }
        if let Some(g) = gid {
            e.gid = g;
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Result<Arc<dyn Inode>, Errno> {
        if !matches!(self.kind, NodeKind::Root) {
            return Err(Errno::ENOTDIR);
        }
        let kind = if name == "ptmx" {
            NodeKind::Ptmx
        } else {
            // Only canonical numbers name slaves ("01" does not).
            let n: u32 = name.parse().map_err(|_| Errno::ENOENT)?;
            if alloc::format!("{n}") != name || !self.fs.entries.lock().contains_key(&n) {
                return Err(Errno::ENOENT);
            }
            NodeKind::Slave(n)
        };
        Ok(Arc::new(DevptsNode { fs: self.fs.clone(), kind }))
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        if !matches!(self.kind, NodeKind::Root) {
            return Err(Errno::ENOTDIR);
        }
        let mut out = Vec::new();
        out.push(DirEntry { name: String::from("ptmx"), ino: 2, kind: FileType::CharDevice });
        for &n in self.fs.entries.lock().keys() {
            out.push(DirEntry { name: alloc::format!("{n}"), ino: u64::from(n) + 3, kind: FileType::CharDevice });
        }
        Ok(out)
    }

    fn cacheable(&self) -> bool {
        // Slaves come and go with their masters.
        !matches!(self.kind, NodeKind::Slave(_))
    }

    fn open(&self, flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        match self.kind {
            NodeKind::Root => None,
            NodeKind::Ptmx => Some(super::pty::open_master(&self.fs)),
            NodeKind::Slave(n) => Some(match self.fs.tty(n) {
                Some(tty) => super::pty::open_slave(&tty, flags),
                None => Err(Errno::EIO),
            }),
        }
    }
}
