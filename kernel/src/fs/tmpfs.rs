//! tmpfs: a file system that lives in kernel memory. The root file system
//! (populated from the initramfs) and every `mount -t tmpfs` are tmpfs.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;
use linux_abi::ipc::{
    FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, F_SEAL_EXEC, F_SEAL_FUTURE_WRITE, F_SEAL_GROW, F_SEAL_SEAL,
    F_SEAL_SHRINK, F_SEAL_WRITE,
};

use super::file::FileOps;
use super::inode::{DirEntry, FileType, FsStats, Inode, Metadata, Owner, S_IFDIR, S_IFLNK, S_IFMT};
use super::pagestore::{PageBudget, PageStore};
use super::seek::{self, ByteSpan, Region};
use super::xattr::{XattrBudget, XattrKinds, XattrStore, Xattrs};
use crate::sync::Mutex;

pub const TMPFS_MAGIC: u64 = 0x0102_1994;
static NEXT_DEV: AtomicU64 = AtomicU64::new(0x20);

/// A device number for a new in-memory file system instance (Linux's
/// anonymous block devices, 0:N).
pub fn new_dev() -> u64 {
    NEXT_DEV.fetch_add(1, Ordering::Relaxed)
}

pub struct Tmpfs {
    dev: u64,
    next_ino: AtomicU64,
    inodes: AtomicU64,
    max_inodes: u64,
    /// Pages its files hold, up to half the memory (Linux's default size).
    pages: Arc<PageBudget>,
    /// What its files' extended attributes may be, and the space they take.
    xattr_kinds: XattrKinds,
    xattr_space: XattrBudget,
    /// Inodes a file handle was made for, by number (Linux hashes an
    /// inode when its first handle is encoded).
    handles: SpinLock<BTreeMap<u64, Weak<TmpInode>>>,
}

/// File handles of tmpfs files are type 1 (inode number and generation).
const FILEID_INO32_GEN: i32 = 1;
static NEXT_GENERATION: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(1);

enum Node {
    Dir(SpinLock<BTreeMap<String, Arc<TmpInode>>>),
    File(Mutex<PageStore>),
    Symlink(String),
    /// FIFOs and device nodes: behaviour comes from elsewhere.
    Special {
        fifo: Once<Arc<super::pipe::Pipe>>,
    },
    /// A sysfs attribute: a regular file a kernel object shows and stores.
    Attr(Arc<dyn Attribute>),
}

/// What a sysfs attribute file reads and writes (Linux's `show` and
/// `store`): each read shows the current value, a write at offset 0
/// stores what it carries, truncation is ignored (`echo 100 >` opens
/// with O_TRUNC), and the file's mode decides who may open it.
pub trait Attribute: Send + Sync {
    fn show(&self) -> Result<String, Errno>;
    /// A read-only attribute refuses with EACCES (Linux refuses the open).
    fn store(&self, _value: &[u8]) -> Result<(), Errno> {
        Err(Errno::EACCES)
    }
}

struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u64,
    rdev: u64,
    atime: u64,
    mtime: u64,
    ctime: u64,
}

pub struct TmpInode {
    fs: Arc<Tmpfs>,
    /// Pages of a regular file that have a frame (holes take no blocks)
    /// and its length, kept beside the data so that stat and drop never
    /// need the (sleeping) data lock.
    frames: AtomicU64,
    size: AtomicU64,
    /// Some process has mapped the file (it is never cleared).
    mapped: core::sync::atomic::AtomicBool,
    /// F_SEAL_* bits of a regular file.
    seals: core::sync::atomic::AtomicU32,
    ino: u64,
    /// The file type, fixed at creation (chmod keeps it), so that listing
    /// a directory reads it without the metadata lock.
    kind: FileType,
    meta: SpinLock<Meta>,
    node: Node,
    xattrs: XattrStore,
    /// Told apart from an earlier inode with the same number by handles.
    generation: u32,
    me: Weak<TmpInode>,
}

fn now() -> u64 {
    crate::clock::realtime_ns()
}

/// The inodes a tmpfs may hold (statfs's f_files).
const MAX_INODES: u64 = 65536;

/// A tmpfs's mount options (mount(2)'s data): size=, nr_inodes=, mode=,
/// uid= and gid=, as Linux's tmpfs parses them.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Pages it may hold (default: half the memory).
    pub pages: u64,
    pub inodes: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl Options {
    fn default_pages() -> u64 {
        hal::mm::total_frame_count() as u64 / 2
    }

    /// Parses comma-separated options; EINVAL for an unknown option or a
    /// bad value.
    pub fn parse(data: &str) -> Result<Options, Errno> {
        let mut o = Options { pages: Options::default_pages(), inodes: MAX_INODES, mode: 0o1777, uid: 0, gid: 0 };
        for opt in data.split(',').filter(|o| !o.is_empty()) {
            let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
            match key {
                "size" => {
                    let bytes = if let Some(pct) = value.strip_suffix('%') {
                        let pct: u64 = pct.parse().map_err(|_| Errno::EINVAL)?;
                        (hal::mm::total_frame_count() as u64 * crate::mm::PAGE_SIZE).saturating_mul(pct) / 100
                    } else {
                        memparse(value)?
                    };
                    o.pages = bytes.div_ceil(crate::mm::PAGE_SIZE);
                }
                "nr_inodes" => o.inodes = memparse(value)?,
                "mode" => o.mode = u32::from_str_radix(value, 8).ok().filter(|m| *m <= 0o7777).ok_or(Errno::EINVAL)?,
                "uid" => o.uid = value.parse().map_err(|_| Errno::EINVAL)?,
                "gid" => o.gid = value.parse().map_err(|_| Errno::EINVAL)?,
                _ if super::is_generic_option(opt) => {}
                _ => return Err(Errno::EINVAL),
            }
        }
        Ok(o)
    }

    /// What /proc/mounts shows: the options that differ from the defaults.
    pub fn shown(&self) -> Result<String, Errno> {
        use core::fmt::Write;
        let mut s = crate::mm::TryString::new();
        let r = (|| -> core::fmt::Result {
            if self.pages != Options::default_pages() {
                write!(s, ",size={}k", self.pages * 4)?;
            }
            if self.inodes != MAX_INODES {
                write!(s, ",nr_inodes={}", self.inodes)?;
            }
            if self.mode != 0o1777 {
                write!(s, ",mode={:03o}", self.mode)?;
            }
            if self.uid != 0 {
                write!(s, ",uid={}", self.uid)?;
            }
            if self.gid != 0 {
                write!(s, ",gid={}", self.gid)?;
            }
            Ok(())
        })();
        s.finish(r)
    }
}

/// A number with an optional k, m, g, t, p or e suffix (Linux's memparse).
fn memparse(value: &str) -> Result<u64, Errno> {
    let (digits, shift) = match value.as_bytes().last() {
        Some(b'k' | b'K') => (&value[..value.len() - 1], 10),
        Some(b'm' | b'M') => (&value[..value.len() - 1], 20),
        Some(b'g' | b'G') => (&value[..value.len() - 1], 30),
        Some(b't' | b'T') => (&value[..value.len() - 1], 40),
        Some(b'p' | b'P') => (&value[..value.len() - 1], 50),
        Some(b'e' | b'E') => (&value[..value.len() - 1], 60),
        _ => (value, 0),
    };
    let n: u64 = digits.parse().map_err(|_| Errno::EINVAL)?;
    n.checked_shl(shift).filter(|v| v >> shift == n).ok_or(Errno::EINVAL)
}

impl Tmpfs {
    /// A new empty tmpfs; returns its root directory.
    pub fn new_root(perm: u32) -> Arc<TmpInode> {
        Tmpfs::new_root_with(perm, XattrKinds::TMPFS)
    }

    /// A new empty tmpfs whose attributes follow `kinds` (sysfs's are
    /// kernfs's).
    pub fn new_root_with(perm: u32, kinds: XattrKinds) -> Arc<TmpInode> {
        let opts = Options { pages: Options::default_pages(), inodes: MAX_INODES, mode: perm, uid: 0, gid: 0 };
        Tmpfs::new_fs(&opts, kinds)
    }

    /// A new tmpfs as mount(2) asks for it.
    pub fn new_root_opts(opts: &Options) -> Arc<TmpInode> {
        Tmpfs::new_fs(opts, XattrKinds::TMPFS)
    }

    fn new_fs(opts: &Options, kinds: XattrKinds) -> Arc<TmpInode> {
        let fs = Arc::new(Tmpfs {
            dev: NEXT_DEV.fetch_add(1, Ordering::Relaxed),
            next_ino: AtomicU64::new(1),
            inodes: AtomicU64::new(0),
            max_inodes: opts.inodes,
            pages: Arc::new(PageBudget::new(opts.pages)),
            xattr_kinds: kinds,
            // Linux's tmpfs charges attributes to its inode space, 1 KiB
            // per inode it may hold.
            xattr_space: XattrBudget::new(opts.inodes.saturating_mul(1024)),
            handles: SpinLock::new(BTreeMap::new()),
        });
        let owner = Owner { uid: opts.uid, gid: opts.gid };
        TmpInode::new(&fs, S_IFDIR | opts.mode, 0, owner, Node::Dir(SpinLock::new(BTreeMap::new())))
    }
}

/// The internal tmpfs that holds memfd files and System V shared memory
/// segments (Linux's shm_mnt): never mounted, its files have no name.
static SHM_FS: Once<Arc<Tmpfs>> = Once::new();

/// A new unnamed regular file (nlink 0) of the internal tmpfs, with
/// permission bits `perm`, seals `seals` and owner `owner`: a memfd or an
/// IPC segment.
pub fn unnamed_file(perm: u32, seals: u32, owner: Owner) -> Arc<TmpInode> {
    if SHM_FS.get().is_none() {
        SHM_FS.set(Arc::new(Tmpfs {
            dev: NEXT_DEV.fetch_add(1, Ordering::Relaxed),
            next_ino: AtomicU64::new(1),
            inodes: AtomicU64::new(0),
            max_inodes: MAX_INODES,
            pages: Arc::new(PageBudget::new(hal::mm::total_frame_count() as u64 / 2)),
            xattr_kinds: XattrKinds::TMPFS,
            xattr_space: XattrBudget::new(MAX_INODES * 1024),
            handles: SpinLock::new(BTreeMap::new()),
        }));
    }
    let fs = SHM_FS.get().expect("set above");
    let node = Node::File(Mutex::new(PageStore::new(fs.pages.clone())));
    let inode = TmpInode::new(fs, super::inode::S_IFREG | (perm & 0o7777), 0, owner, node);
    inode.meta.lock().nlink = 0;
    inode.seals.store(seals, Ordering::Relaxed);
    inode
}

impl TmpInode {
    fn new(fs: &Arc<Tmpfs>, mode: u32, rdev: u64, owner: Owner, node: Node) -> Arc<TmpInode> {
        let t = now();
        let nlink = if mode & S_IFMT == S_IFDIR { 2 } else { 1 };
        fs.inodes.fetch_add(1, Ordering::Relaxed);
        Arc::new_cyclic(|me| TmpInode {
            fs: fs.clone(),
            frames: AtomicU64::new(0),
            mapped: core::sync::atomic::AtomicBool::new(false),
            seals: core::sync::atomic::AtomicU32::new(F_SEAL_SEAL),
            size: AtomicU64::new(0),
            ino: fs.next_ino.fetch_add(1, Ordering::Relaxed),
            kind: FileType::from_mode(mode).unwrap_or(FileType::Regular),
            meta: SpinLock::new(Meta {
                mode,
                uid: owner.uid,
                gid: owner.gid,
                nlink,
                rdev,
                atime: t,
                mtime: t,
                ctime: t,
            }),
            node,
            xattrs: XattrStore::new(),
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
            me: me.clone(),
        })
    }

    /// What of a write the file's seals let through: nothing under
    /// F_SEAL_WRITE or F_SEAL_FUTURE_WRITE; under F_SEAL_GROW, the pages
    /// that do not pass the end (Linux writes a page at a time, and the
    /// first page that would grow the file fails).
    fn sealed_write(seals: u32, offset: u64, buf: &[u8], size: u64) -> Result<&[u8], Errno> {
        if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
            return Err(Errno::EPERM);
        }
        let end = offset + buf.len() as u64;
        if seals & F_SEAL_GROW == 0 || end <= size || buf.is_empty() {
            return Ok(buf);
        }
        let limit = size / 4096 * 4096;
        if limit <= offset {
            return Err(Errno::EPERM);
        }
        Ok(&buf[..(limit - offset) as usize])
    }

    /// Publishes a file's size and frame count after a change (the
    /// file system's page total is kept by its `PageBudget`).
    fn sync_sizes(&self, data: &PageStore) {
        self.size.store(data.size(), Ordering::Relaxed);
        self.frames.store(data.frame_count(), Ordering::Relaxed);
    }

    fn dir(&self) -> Result<&SpinLock<BTreeMap<String, Arc<TmpInode>>>, Errno> {
        match &self.node {
            Node::Dir(d) => Ok(d),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn touch_dir(&self) {
        let t = now();
        let mut m = self.meta.lock();
        m.mtime = t;
        m.ctime = t;
    }

    fn check_name(name: &str) -> Result<(), Errno> {
        if name == "." || name == ".." {
            return Err(Errno::EEXIST);
        }
        if name.is_empty() || name.contains('/') {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// Adds the sysfs attribute file `name` (regular, permission bits
    /// `perm`, owned by root) to this directory.
    pub fn create_attribute(&self, name: &str, perm: u32, attr: Arc<dyn Attribute>) -> Result<Arc<dyn Inode>, Errno> {
        self.dir()?;
        let mode = super::inode::S_IFREG | (perm & 0o777);
        let child = TmpInode::new(&self.fs, mode, 0, Owner::ROOT, Node::Attr(attr));
        self.add_child(name, child)
    }

    fn add_child(&self, name: &str, child: Arc<TmpInode>) -> Result<Arc<dyn Inode>, Errno> {
        Self::check_name(name)?;
        if self.meta.lock().nlink == 0 {
            return Err(Errno::ENOENT); // the directory was removed
        }
        let mut dir = self.dir()?.lock();
        if dir.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        if child.node_is_dir() {
            self.meta.lock().nlink += 1;
        }
        dir.insert(String::from(name), child.clone());
        drop(dir);
        self.touch_dir();
        Ok(child)
    }

    fn node_is_dir(&self) -> bool {
        matches!(self.node, Node::Dir(_))
    }

    /// The pipe behind a FIFO node (created on first open).
    pub fn fifo(&self) -> Option<Arc<super::pipe::Pipe>> {
        match &self.node {
            Node::Special { fifo } if self.meta.lock().mode & S_IFMT == super::inode::S_IFIFO => {
                if fifo.get().is_none() {
                    fifo.set(super::pipe::Pipe::new());
                }
                fifo.get().cloned()
            }
            _ => None,
        }
    }

    fn drop_link(&self) {
        let mut m = self.meta.lock();
        m.nlink = m.nlink.saturating_sub(1);
        m.ctime = now();
    }
}

impl Drop for TmpInode {
    fn drop(&mut self) {
        self.fs.inodes.fetch_sub(1, Ordering::Relaxed);
        self.xattrs.release(&self.fs.xattr_space);
    }
}

impl Inode for TmpInode {
    fn metadata(&self) -> Metadata {
        let m = self.meta.lock();
        let size = match &self.node {
            Node::File(_) => self.size.load(Ordering::Relaxed),
            Node::Symlink(t) => t.len() as u64,
            Node::Dir(_) => 4096,
            Node::Special { .. } => 0,
            // sysfs shows every attribute as one page.
            Node::Attr(_) => 4096,
        };
        Metadata {
            dev: self.fs.dev,
            ino: self.ino,
            mode: m.mode,
            nlink: m.nlink,
            uid: m.uid,
            gid: m.gid,
            rdev: m.rdev,
            size,
            blocks: match &self.node {
                Node::File(_) => self.frames.load(Ordering::Relaxed) * 8,
                _ => size.div_ceil(4096) * 8,
            },
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
        }
    }

    /// The type is fixed at creation: path walks ask it of every
    /// component, without the metadata lock.
    fn file_type(&self) -> FileType {
        self.kind
    }

    fn fs_stats(&self) -> FsStats {
        // Blocks are the pages files hold (holes hold none), as on Linux.
        let total = self.fs.pages.limit();
        let used = self.fs.pages.used();
        FsStats {
            magic: TMPFS_MAGIC,
            block_size: 4096,
            blocks: total,
            blocks_free: total.saturating_sub(used),
            files: self.fs.max_inodes,
            files_free: self.fs.max_inodes.saturating_sub(self.fs.inodes.load(Ordering::Relaxed)),
            name_max: 255,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn set_mode(&self, mode: u32) -> Result<(), Errno> {
        let mut m = self.meta.lock();
        if (m.mode ^ mode) & 0o111 != 0 && self.seals.load(Ordering::Relaxed) & F_SEAL_EXEC != 0 {
            return Err(Errno::EPERM);
        }
        m.mode = (m.mode & S_IFMT) | (mode & 0o7777);
        m.ctime = now();
        Ok(())
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
        let mut m = self.meta.lock();
        if let Some(u) = uid {
            m.uid = u;
        }
        if let Some(g) = gid {
            m.gid = g;
        }
        m.ctime = now();
        Ok(())
    }

    fn set_times(&self, atime: Option<u64>, mtime: Option<u64>) -> Result<(), Errno> {
        let mut m = self.meta.lock();
        if let Some(a) = atime {
            m.atime = a;
        }
        if let Some(t) = mtime {
            m.mtime = t;
        }
        m.ctime = now();
        Ok(())
    }

    fn set_atime(&self, ns: u64) {
        self.meta.lock().atime = ns;
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        match &self.node {
            Node::File(data) => Ok(data.lock().read(offset, buf)),
            Node::Dir(_) => Err(Errno::EISDIR),
            Node::Attr(attr) => {
                let text = attr.show()?;
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
                let n = buf.len().min(text.len() - start);
                buf[..n].copy_from_slice(&text.as_bytes()[start..start + n]);
                Ok(n)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        if let Node::Attr(attr) = &self.node {
            // Only a write at the start stores (Linux's sysfs writes the
            // whole buffer to `store` and then ignores later writes).
            if offset == 0 {
                attr.store(buf)?;
            }
            return Ok(buf.len());
        }
        let Node::File(data) = &self.node else {
            return Err(if self.node_is_dir() { Errno::EISDIR } else { Errno::EINVAL });
        };
        let end = offset.checked_add(buf.len() as u64).ok_or(Errno::EFBIG)?;
        if end > isize::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        let mut data = data.lock();
        let buf = Self::sealed_write(self.seals.load(Ordering::Relaxed), offset, buf, data.size())?;
        let written = data.write(offset, buf);
        self.sync_sizes(&data);
        drop(data);
        let written = written?;
        let t = now();
        let mut m = self.meta.lock();
        m.mtime = t;
        m.ctime = t;
        Ok(written)
    }

    fn truncate(&self, size: u64) -> Result<(), Errno> {
        if let Node::Attr(_) = &self.node {
            return Ok(());
        }
        let Node::File(data) = &self.node else {
            return Err(if self.node_is_dir() { Errno::EISDIR } else { Errno::EINVAL });
        };
        if size > isize::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        let mut data = data.lock();
        let seals = self.seals.load(Ordering::Relaxed);
        if (size < data.size() && seals & F_SEAL_SHRINK != 0) || (size > data.size() && seals & F_SEAL_GROW != 0) {
            return Err(Errno::EPERM);
        }
        data.truncate(size);
        self.sync_sizes(&data);
        drop(data);
        let t = now();
        let mut m = self.meta.lock();
        m.mtime = t;
        m.ctime = t;
        Ok(())
    }

    fn seals(&self) -> Option<u32> {
        matches!(self.node, Node::File(_)).then(|| self.seals.load(Ordering::Relaxed))
    }

    fn add_seals(&self, seals: u32) -> Result<(), Errno> {
        let Node::File(data) = &self.node else { return Err(Errno::EINVAL) };
        // Under the data lock, so a write in progress finishes first.
        let _data = data.lock();
        let mut seals = seals;
        let old = self.seals.load(Ordering::Relaxed);
        if old & F_SEAL_SEAL != 0 {
            return Err(Errno::EPERM);
        }
        // F_SEAL_EXEC on an executable file seals writes too (W^X).
        if seals & F_SEAL_EXEC != 0 && self.meta.lock().mode & 0o111 != 0 {
            seals |= F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;
        }
        self.seals.store(old | seals, Ordering::Relaxed);
        Ok(())
    }

    fn allocate(&self, mode: u32, offset: u64, len: u64) -> Result<(), Errno> {
        let Node::File(data) = &self.node else { return Err(Errno::EOPNOTSUPP) };
        // shmem_fallocate: allocating and punching holes only.
        if mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
        let seals = self.seals.load(Ordering::Relaxed);
        let mut data = data.lock();
        let result = if mode & FALLOC_FL_PUNCH_HOLE != 0 {
            if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
                return Err(Errno::EPERM);
            }
            data.punch_bytes(offset, end);
            Ok(())
        } else {
            if seals & F_SEAL_GROW != 0 && end > data.size() {
                return Err(Errno::EPERM);
            }
            data.allocate(offset, end, mode & FALLOC_FL_KEEP_SIZE != 0)
        };
        self.sync_sizes(&data);
        drop(data);
        if result.is_ok() && mode & FALLOC_FL_PUNCH_HOLE == 0 {
            self.meta.lock().ctime = now();
        }
        result
    }

    fn note_mapped(&self) {
        self.mapped.store(true, Ordering::Relaxed);
    }

    fn ever_mapped(&self) -> bool {
        self.mapped.load(Ordering::Relaxed)
    }

    fn has_page_frames(&self) -> bool {
        matches!(self.node, Node::File(_))
    }

    fn frame_to_map(&self, index: u64, partial: bool) -> Option<Result<Option<hal::frame::UserFrame>, Errno>> {
        let Node::File(data) = &self.node else { return None };
        let mut data = data.lock();
        let frame = data.frame_to_map(index, partial);
        self.sync_sizes(&data);
        Some(frame)
    }

    fn existing_frames(&self, first: u64, end: u64, partial: bool, f: &mut dyn FnMut(u64, &hal::frame::UserFrame)) {
        if let Node::File(data) = &self.node {
            data.lock().existing_frames(first, end, partial, f);
        }
    }

    fn cached_page(&self, index: u64) -> Option<u64> {
        let Node::File(data) = &self.node else { return None };
        data.lock().frame_paddr(index)
    }

    /// tmpfs is data exactly where it has pages (shmem's
    /// `mapping_seek_hole_data`), except pages fallocate made and nothing
    /// has written or faulted since: those are holes, as Linux's
    /// not-uptodate folios are.
    fn seek_data(&self, offset: u64, size: u64, data: bool) -> Option<Result<u64, Errno>> {
        let Node::File(store) = &self.node else { return None };
        let whole = [ByteSpan { start: 0, end: size, region: Region::Cached { dirty_only: false } }];
        Some(seek::seek(&whole, offset, size, data, &*store.lock()))
    }

    fn has_page(&self, index: u64) -> bool {
        let Node::File(data) = &self.node else { return false };
        data.lock().has_page(index)
    }

    fn punch_hole(&self, index: u64, count: u64) -> Result<(), Errno> {
        let Node::File(data) = &self.node else {
            return Err(if self.node_is_dir() { Errno::EISDIR } else { Errno::ENODEV });
        };
        // A hole is a write: sealed files refuse it (MADV_REMOVE).
        if self.seals.load(Ordering::Relaxed) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0 {
            return Err(Errno::EPERM);
        }
        let mut data = data.lock();
        data.punch(index, count);
        self.sync_sizes(&data);
        Ok(())
    }

    fn lookup(&self, name: &str) -> Result<Arc<dyn Inode>, Errno> {
        let dir = self.dir()?.lock();
        dir.get(name).map(|i| i.clone() as Arc<dyn Inode>).ok_or(Errno::ENOENT)
    }

    fn create(&self, name: &str, mode: u32, rdev: u64, owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        self.dir()?;
        let node = match FileType::from_mode(mode).ok_or(Errno::EINVAL)? {
            FileType::Regular => Node::File(Mutex::new(PageStore::new(self.fs.pages.clone()))),
            FileType::Directory => Node::Dir(SpinLock::new(BTreeMap::new())),
            FileType::Symlink => return Err(Errno::EINVAL),
            _ => Node::Special { fifo: Once::new() },
        };
        let child = TmpInode::new(&self.fs, mode, rdev, owner, node);
        self.add_child(name, child)
    }

    fn symlink(&self, name: &str, target: &str, owner: Owner) -> Result<Arc<dyn Inode>, Errno> {
        self.dir()?;
        let child = TmpInode::new(&self.fs, S_IFLNK | 0o777, 0, owner, Node::Symlink(String::from(target)));
        self.add_child(name, child)
    }

    fn link(&self, name: &str, inode: &Arc<dyn Inode>) -> Result<(), Errno> {
        let other = inode.as_any().downcast_ref::<TmpInode>().ok_or(Errno::EXDEV)?;
        if !Arc::ptr_eq(&other.fs, &self.fs) {
            return Err(Errno::EXDEV);
        }
        if other.node_is_dir() {
            return Err(Errno::EPERM);
        }
        let strong = other.me.upgrade().ok_or(Errno::ENOENT)?;
        Self::check_name(name)?;
        let mut dir = self.dir()?.lock();
        if dir.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        dir.insert(String::from(name), strong);
        drop(dir);
        {
            let mut m = other.meta.lock();
            m.nlink += 1;
            m.ctime = now();
        }
        self.touch_dir();
        Ok(())
    }

    fn unlink(&self, name: &str) -> Result<(), Errno> {
        let mut dir = self.dir()?.lock();
        let child = dir.get(name).ok_or(Errno::ENOENT)?;
        if child.node_is_dir() {
            return Err(Errno::EISDIR);
        }
        let child = dir.remove(name).ok_or(Errno::ENOENT)?;
        drop(dir);
        child.drop_link();
        self.touch_dir();
        Ok(())
    }

    fn rmdir(&self, name: &str) -> Result<(), Errno> {
        if name == "." {
            return Err(Errno::EINVAL);
        }
        if name == ".." {
            return Err(Errno::ENOTEMPTY);
        }
        let mut dir = self.dir()?.lock();
        let child = dir.get(name).ok_or(Errno::ENOENT)?;
        let Node::Dir(entries) = &child.node else {
            return Err(Errno::ENOTDIR);
        };
        if !entries.lock().is_empty() {
            return Err(Errno::ENOTEMPTY);
        }
        let child = dir.remove(name).ok_or(Errno::ENOENT)?;
        drop(dir);
        child.meta.lock().nlink = 0;
        self.meta.lock().nlink -= 1;
        self.touch_dir();
        Ok(())
    }

    fn rename(&self, old: &str, new_dir: &Arc<dyn Inode>, new: &str, flags: u32) -> Result<(), Errno> {
        const NOREPLACE: u32 = 1;
        const EXCHANGE: u32 = 2;
        let target = new_dir.as_any().downcast_ref::<TmpInode>().ok_or(Errno::EXDEV)?;
        if !Arc::ptr_eq(&target.fs, &self.fs) {
            return Err(Errno::EXDEV);
        }
        if flags & !(NOREPLACE | EXCHANGE) != 0 || flags == NOREPLACE | EXCHANGE {
            return Err(Errno::EINVAL);
        }
        if matches!(old, "." | "..") || matches!(new, "." | "..") {
            return Err(Errno::EBUSY);
        }
        let same_dir = core::ptr::eq(self, target);
        let moving = self.dir()?.lock().get(old).cloned().ok_or(Errno::ENOENT)?;
        // A directory cannot move into itself or below itself.
        if moving.node_is_dir() && !same_dir && is_ancestor(&moving, target) {
            return Err(Errno::EINVAL);
        }
        let existing = target.dir()?.lock().get(new).cloned();
        if flags & EXCHANGE != 0 {
            let other = existing.ok_or(Errno::ENOENT)?;
            self.dir()?.lock().insert(String::from(old), other.clone());
            target.dir()?.lock().insert(String::from(new), moving.clone());
            if !same_dir && moving.node_is_dir() != other.node_is_dir() {
                let (gain, lose) = if moving.node_is_dir() { (target, self) } else { (self, target) };
                gain.meta.lock().nlink += 1;
                lose.meta.lock().nlink -= 1;
            }
            self.touch_dir();
            target.touch_dir();
            return Ok(());
        }
        if let Some(existing) = &existing {
            if Arc::ptr_eq(existing, &moving) {
                return Ok(());
            }
            if flags & NOREPLACE != 0 {
                return Err(Errno::EEXIST);
            }
            match (moving.node_is_dir(), existing.node_is_dir()) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) => {
                    if let Node::Dir(e) = &existing.node {
                        if !e.lock().is_empty() {
                            return Err(Errno::ENOTEMPTY);
                        }
                    }
                    target.meta.lock().nlink -= 1;
                    existing.meta.lock().nlink = 0;
                }
                (false, false) => existing.drop_link(),
            }
        }
        self.dir()?.lock().remove(old);
        target.dir()?.lock().insert(String::from(new), moving.clone());
        if moving.node_is_dir() && !same_dir {
            self.meta.lock().nlink -= 1;
            target.meta.lock().nlink += 1;
        }
        moving.meta.lock().ctime = now();
        self.touch_dir();
        target.touch_dir();
        Ok(())
    }

    fn rename_whiteout(
        &self,
        old: &str,
        new_dir: &Arc<dyn Inode>,
        new: &str,
        flags: u32,
        owner: Owner,
    ) -> Result<(), Errno> {
        if flags & !linux_abi::consts::RENAME_NOREPLACE != 0 {
            return Err(Errno::EINVAL);
        }
        // Made first, as Linux's shmem_whiteout: a rename that fails
        // leaves no whiteout behind.
        let whiteout = TmpInode::new(&self.fs, super::inode::S_IFCHR, 0, owner, Node::Special { fifo: Once::new() });
        let moving = self.dir()?.lock().get(old).cloned().ok_or(Errno::ENOENT)?;
        let target = new_dir.as_any().downcast_ref::<TmpInode>().ok_or(Errno::EXDEV)?;
        if target.dir()?.lock().get(new).is_some_and(|t| Arc::ptr_eq(t, &moving)) {
            return Ok(()); // two names of one file: nothing moves
        }
        self.rename(old, new_dir, new, flags)?;
        self.dir()?.lock().insert(String::from(old), whiteout);
        self.touch_dir();
        Ok(())
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        if self.meta.lock().nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let dir = self.dir()?.lock();
        let mut out = Vec::new();
        out.try_reserve(dir.len()).map_err(|_| Errno::ENOMEM)?;
        for (name, inode) in dir.iter() {
            out.push(DirEntry { name: name.clone(), ino: inode.ino, kind: inode.metadata_type() });
        }
        Ok(out)
    }

    fn visit_entries(
        &self,
        after: Option<&str>,
        f: &mut dyn FnMut(&str, u64, FileType) -> bool,
    ) -> Option<Result<(), Errno>> {
        use core::ops::Bound;
        if self.meta.lock().nlink == 0 {
            return Some(Err(Errno::ENOENT));
        }
        let dir = match self.dir() {
            Ok(d) => d.lock(),
            Err(e) => return Some(Err(e)),
        };
        let lower = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Unbounded,
        };
        for (name, inode) in dir.range::<str, _>((lower, Bound::Unbounded)) {
            if !f(name, inode.ino, inode.metadata_type()) {
                break;
            }
        }
        Some(Ok(()))
    }

    fn readlink(&self) -> Result<String, Errno> {
        match &self.node {
            Node::Symlink(t) => Ok(t.clone()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn file_handle(&self) -> Option<(i32, [u32; 3])> {
        let me = self.me.clone();
        let mut handles = self.fs.handles.lock();
        // Handles of inodes gone since are forgotten now and then.
        if handles.len() >= 64 && handles.len().is_power_of_two() {
            handles.retain(|_, w| w.strong_count() > 0);
        }
        handles.entry(self.ino).or_insert(me);
        Some((FILEID_INO32_GEN, [self.generation, self.ino as u32, (self.ino >> 32) as u32]))
    }

    fn inode_by_handle(&self, _kind: i32, words: &[u32]) -> Option<Arc<dyn Inode>> {
        let [generation, lo, hi, ..] = *words else { return None };
        let ino = u64::from(lo) | (u64::from(hi) << 32);
        let inode = self.fs.handles.lock().get(&ino)?.upgrade()?;
        (inode.generation == generation).then_some(inode as Arc<dyn Inode>)
    }

    fn xattrs(&self) -> Option<Xattrs<'_>> {
        Some(Xattrs { store: &self.xattrs, budget: &self.fs.xattr_space, kinds: self.fs.xattr_kinds })
    }

    fn open(&self, flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        let (mode, rdev) = {
            let m = self.meta.lock();
            (m.mode, m.rdev)
        };
        match mode & S_IFMT {
            super::inode::S_IFIFO => Some(super::pipe::open_fifo(self.fifo()?, flags)),
            super::inode::S_IFCHR => Some(super::devfs::open_device(rdev, flags)),
            super::inode::S_IFBLK => Some(crate::block::dev::open(rdev)),
            // A socket file is for connect(2); open(2) is ENXIO (sock_no_open).
            super::inode::S_IFSOCK => Some(Err(Errno::ENXIO)),
            _ => None,
        }
    }
}

impl TmpInode {
    fn metadata_type(&self) -> FileType {
        self.kind
    }
}

/// Whether `dir` is `ancestor` or lies below it (directories only).
fn is_ancestor(ancestor: &Arc<TmpInode>, dir: &TmpInode) -> bool {
    if core::ptr::eq(ancestor.as_ref(), dir) {
        return true;
    }
    let Node::Dir(children) = &ancestor.node else {
        return false;
    };
    let subdirs: Vec<Arc<TmpInode>> = children.lock().values().filter(|c| c.node_is_dir()).cloned().collect();
    subdirs.iter().any(|c| is_ancestor(c, dir))
}
