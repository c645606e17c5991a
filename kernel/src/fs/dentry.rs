//! The dentry cache, mounts and path resolution.
//!
//! A [`Dentry`] names an inode within its parent directory. Looked-up
//! children stay cached in their parent (strong references down, weak up),
//! so repeated walks of the same path never ask the file system again. A
//! mount hangs the root dentry of another file system on a dentry; walks
//! step into it, and `..` from a mounted root steps back out.
//!
//! Mounts belong to a [`MountNamespace`]: a table from mountpoint to
//! mounted root (and back), so two namespaces share every dentry but see
//! different mounts on them. A walk asks the calling process's namespace
//! (through the hook the process layer installs) only at dentries that
//! have ever been a mountpoint or a mounted root, so a walk through
//! plain directories costs no table lookup.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use core::sync::atomic::{AtomicBool, Ordering};
use alloc::vec::Vec;

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;

use super::inode::{FileType, Inode};
use crate::cred::Cred;

pub struct Dentry {
    name: String,
    inode: Arc<dyn Inode>,
    parent: Weak<Dentry>,
    /// Uncached dentries (/proc) keep their parent alive themselves, since
    /// no cache holds the chain from the root.
    pinned_parent: Option<Arc<Dentry>>,
    children: SpinLock<BTreeMap<String, Arc<Dentry>>>,
    /// Something was mounted on this dentry in some namespace.
    ever_mountpoint: AtomicBool,
    /// This is the root of a file system mounted in some namespace.
    ever_mount_root: AtomicBool,
    /// For the root of a file system mounted MS_RDONLY.
    read_only: core::sync::atomic::AtomicBool,
    /// For the root of a mounted file system: MS_NOSUID, MS_NODEV and MS_NOEXEC.
    mount_flags: core::sync::atomic::AtomicU64,
}

impl Drop for Dentry {
    fn drop(&mut self) {
        // The last reference to a name of a removed file: inotify's
        // DELETE_SELF comes now (one load when nothing is watched).
        super::notify::dentry_dropped(&self.inode);
    }
}

static ROOT: Once<Arc<Dentry>> = Once::new();

/// A mounted file system, for /proc/mounts.
#[derive(Clone)]
pub struct MountInfo {
    pub source: String,
    pub path: String,
    pub fstype: String,
    pub root: Arc<Dentry>,
}

/// One namespace's mounts.
#[derive(Clone, Default)]
struct MountTable {
    /// Mountpoint (by address) -> (mountpoint, mounted root).
    on: BTreeMap<usize, (Arc<Dentry>, Arc<Dentry>)>,
    /// Mounted root (by address) -> its mountpoint.
    under: BTreeMap<usize, Arc<Dentry>>,
    /// In mount order, for /proc/mounts.
    list: Vec<MountInfo>,
}

/// A mount namespace: which file systems are mounted where. Copied
/// whole by unshare/clone(CLONE_NEWNS); afterwards mounts in one are not
/// seen in the other (every mount is private, Linux's default).
pub struct MountNamespace {
    /// Its /proc/<pid>/ns/mnt inode number.
    pub inum: u64,
    table: SpinLock<MountTable>,
}

fn key(d: &Arc<Dentry>) -> usize {
    Arc::as_ptr(d) as *const () as usize
}

impl MountNamespace {
    /// A copy of `self` with its own table (ENOMEM when none can be made).
    pub fn copy(&self, inum: u64) -> Result<Arc<MountNamespace>, Errno> {
        let table = self.table.lock().clone();
        Arc::try_new(MountNamespace { inum, table: SpinLock::new(table) }).map_err(|_| Errno::ENOMEM)
    }

    fn mounted_on(&self, d: &Arc<Dentry>) -> Option<Arc<Dentry>> {
        self.table.lock().on.get(&key(d)).map(|(_, root)| root.clone())
    }

    fn mountpoint_of(&self, root: &Arc<Dentry>) -> Option<Arc<Dentry>> {
        self.table.lock().under.get(&key(root)).cloned()
    }

    /// Its mounts, in mount order (/proc/<pid>/mounts).
    pub fn mounts(&self) -> Vec<MountInfo> {
        self.table.lock().list.clone()
    }
}

static INIT_NS: Once<Arc<MountNamespace>> = Once::new();

/// The calling process's mount namespace (installed by the process layer).
static CURRENT_NS: Once<fn() -> Option<Arc<MountNamespace>>> = Once::new();

/// The namespace the boot mounts are made in (Linux's init_mnt_ns).
pub fn init_namespace() -> Arc<MountNamespace> {
    loop {
        if let Some(ns) = INIT_NS.get() {
            return ns.clone();
        }
        INIT_NS.set(Arc::new(MountNamespace { inum: INIT_MNT_INUM, table: SpinLock::new(MountTable::default()) }));
    }
}

/// Linux's fixed proc inode number of the initial mount namespace.
pub const INIT_MNT_INUM: u64 = 0xEFFF_FFF8;

pub fn set_namespace_hook(current: fn() -> Option<Arc<MountNamespace>>) {
    CURRENT_NS.set(current);
}

/// The caller's mount namespace (the initial one in kernel threads).
pub fn current_namespace() -> Arc<MountNamespace> {
    CURRENT_NS.get().and_then(|f| f()).unwrap_or_else(init_namespace)
}

/// A mount namespace looked up once per walk, when first needed.
struct NsCache(Option<Arc<MountNamespace>>);

impl NsCache {
    fn get(&mut self) -> &Arc<MountNamespace> {
        self.0.get_or_insert_with(current_namespace)
    }
}

impl Dentry {
    pub fn new_root(inode: Arc<dyn Inode>) -> Arc<Dentry> {
        Arc::new(Dentry {
            name: String::from("/"),
            inode,
            parent: Weak::new(),
            pinned_parent: None,
            children: SpinLock::new(BTreeMap::new()),
            ever_mountpoint: AtomicBool::new(false),
            ever_mount_root: AtomicBool::new(false),
            read_only: core::sync::atomic::AtomicBool::new(false),
            mount_flags: core::sync::atomic::AtomicU64::new(0),
        })
    }

    pub fn inode(&self) -> &Arc<dyn Inode> {
        &self.inode
    }

    /// The name in its parent directory ("/" for a root).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn is_dir(&self) -> bool {
        self.inode.file_type() == FileType::Directory
    }

    /// The child `name`, from the cache or the file system.
    pub fn child(self: &Arc<Self>, name: &str) -> Result<Arc<Dentry>, Errno> {
        if let Some(d) = self.children.lock().get(name) {
            return Ok(d.clone());
        }
        let inode = self.inode.lookup(name)?;
        let cacheable = inode.cacheable();
        let d = Arc::new(Dentry {
            name: String::from(name),
            inode,
            parent: Arc::downgrade(self),
            pinned_parent: if cacheable { None } else { Some(self.clone()) },
            children: SpinLock::new(BTreeMap::new()),
            ever_mountpoint: AtomicBool::new(false),
            ever_mount_root: AtomicBool::new(false),
            read_only: core::sync::atomic::AtomicBool::new(false),
            mount_flags: core::sync::atomic::AtomicU64::new(0),
        });
        if cacheable {
            self.children.lock().insert(String::from(name), d.clone());
        }
        Ok(d)
    }

    /// Forgets a cached child (after unlink, rmdir or rename).
    pub fn forget(&self, name: &str) {
        self.children.lock().remove(name);
    }

    /// The parent directory, stepping out of mounts; the root is its own parent.
    pub fn parent(self: &Arc<Self>) -> Arc<Dentry> {
        self.parent_in(&mut NsCache(None))
    }

    fn parent_in(self: &Arc<Self>, ns: &mut NsCache) -> Arc<Dentry> {
        let mut d = self.clone();
        while let Some(mp) = d.covering(ns) {
            d = mp;
        }
        d.pinned_parent.clone().or_else(|| d.parent.upgrade()).unwrap_or(d)
    }

    /// Where this mounted root is mounted in the namespace.
    fn covering(self: &Arc<Self>, ns: &mut NsCache) -> Option<Arc<Dentry>> {
        if !self.ever_mount_root.load(Ordering::Acquire) {
            return None;
        }
        ns.get().mountpoint_of(self)
    }

    /// Follows mounts stacked on this dentry.
    fn mounted_root(self: &Arc<Self>, ns: &mut NsCache) -> Arc<Dentry> {
        let mut d = self.clone();
        while d.ever_mountpoint.load(Ordering::Acquire) {
            match ns.get().mounted_on(&d) {
                Some(m) => d = m,
                None => break,
            }
        }
        d
    }

    pub fn is_mount_root(self: &Arc<Self>) -> bool {
        self.covering(&mut NsCache(None)).is_some()
    }

    /// Whether a file system is mounted on this dentry.
    pub fn is_mountpoint(self: &Arc<Self>) -> bool {
        self.ever_mountpoint.load(Ordering::Acquire) && current_namespace().mounted_on(self).is_some()
    }

    /// The root of the file system this dentry belongs to.
    pub fn fs_root(self: &Arc<Self>) -> Arc<Dentry> {
        let mut ns = NsCache(None);
        let mut d = self.clone();
        loop {
            if d.covering(&mut ns).is_some() {
                return d;
            }
            match d.pinned_parent.clone().or_else(|| d.parent.upgrade()) {
                Some(p) => d = p,
                None => return d,
            }
        }
    }

    /// Whether this dentry lies in the file system rooted at `root`.
    pub fn is_within(self: &Arc<Self>, root: &Arc<Dentry>) -> bool {
        Arc::ptr_eq(&self.fs_root(), root)
    }

    /// MS_NODEV: device nodes on this mount cannot be opened.
    pub fn no_dev(self: &Arc<Self>) -> bool {
        self.fs_root().mount_flags.load(core::sync::atomic::Ordering::Relaxed) & MS_NODEV != 0
    }

    /// MS_NOSUID: exec ignores set-user-ID and set-group-ID bits here.
    pub fn no_suid(self: &Arc<Self>) -> bool {
        self.fs_root().mount_flags.load(core::sync::atomic::Ordering::Relaxed) & MS_NOSUID != 0
    }

    /// MS_NOEXEC: files on this mount cannot be executed or mapped executable.
    pub fn no_exec(self: &Arc<Self>) -> bool {
        self.fs_root().mount_flags.load(core::sync::atomic::Ordering::Relaxed) & MS_NOEXEC != 0
    }

    pub fn is_read_only(self: &Arc<Self>) -> bool {
        self.fs_root().read_only.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// The absolute path of this dentry.
    pub fn path(self: &Arc<Self>) -> String {
        let mut ns = NsCache(None);
        let mut parts: Vec<String> = Vec::new();
        let mut d = self.clone();
        loop {
            while let Some(mp) = d.covering(&mut ns) {
                d = mp;
            }
            match d.pinned_parent.clone().or_else(|| d.parent.upgrade()) {
                Some(p) => {
                    parts.push(d.name.clone());
                    d = p;
                }
                None => break,
            }
        }
        if parts.is_empty() {
            return String::from("/");
        }
        let mut s = String::new();
        for p in parts.iter().rev() {
            s.push('/');
            s.push_str(p);
        }
        s
    }
}

pub fn set_root(root: Arc<Dentry>) {
    ROOT.set(root);
}

pub fn root() -> Arc<Dentry> {
    ROOT.get().cloned().expect("root file system not mounted")
}

const MAX_SYMLINKS: usize = 40;
pub const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;

/// Resolves `path` from `start` (ignored for absolute paths) as `cred`,
/// which needs search permission on every directory it walks through; a
/// trailing symlink is followed only if `follow`.
pub fn resolve(cred: &Cred, start: &Arc<Dentry>, path: &str, follow: bool) -> Result<Arc<Dentry>, Errno> {
    let mut budget = MAX_SYMLINKS;
    walk(cred, start, path, follow, &mut budget)
}

fn walk(cred: &Cred, start: &Arc<Dentry>, path: &str, follow: bool, budget: &mut usize) -> Result<Arc<Dentry>, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut ns = NsCache(None);
    let mut cur = if path.starts_with('/') { root() } else { start.clone() };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let must_be_dir = path.ends_with('/');
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if !cur.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        // Linux checks search permission on the directory before each
        // component, "." and ".." included (may_lookup).
        super::perm::may_search(cred, &cur)?;
        match *part {
            "." => continue,
            ".." => {
                cur = cur.parent_in(&mut ns);
                continue;
            }
            name if name.len() > NAME_MAX => return Err(Errno::ENAMETOOLONG),
            _ => {}
        }
        let child = cur.child(part)?.mounted_root(&mut ns);
        if child.inode.file_type() == FileType::Symlink && (!last || follow || must_be_dir) {
            // /proc/<pid>/fd/N and friends name a file, not a path.
            if let Some(target) = child.inode.magic_link() {
                cur = target?;
                continue;
            }
            if *budget == 0 {
                return Err(Errno::ELOOP);
            }
            *budget -= 1;
            let target = child.inode.readlink()?;
            cur = walk(cred, &cur, &target, true, budget)?;
            continue;
        }
        cur = child;
    }
    if must_be_dir && !cur.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(cur)
}

/// Resolves all but the last component: (directory, last name), with
/// search permission on the directory as for any component. The name is
/// "." for paths like "/" or "a/..": callers that create or remove reject
/// it.
pub fn resolve_parent(cred: &Cred, start: &Arc<Dentry>, path: &str) -> Result<(Arc<Dentry>, String), Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let trimmed = path.trim_end_matches('/');
    let (dir_part, name) = match trimmed.rfind('/') {
        Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
        None => ("", trimmed),
    };
    let dir = if dir_part.is_empty() {
        if path.starts_with('/') {
            root()
        } else {
            start.clone()
        }
    } else {
        resolve(cred, start, dir_part, true)?
    };
    if !dir.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    // "/" alone has no component to search for.
    if !name.is_empty() {
        super::perm::may_search(cred, &dir)?;
    }
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let name = if name.is_empty() { "." } else { name };
    Ok((dir, String::from(name)))
}

/// Fails with EROFS if `d` is on a read-only mount.
pub fn check_writable(d: &Arc<Dentry>) -> Result<(), Errno> {
    if d.is_read_only() {
        Err(Errno::EROFS)
    } else {
        Ok(())
    }
}

/// Mounts `fs_root` on `target`.
pub fn mount(target: &Arc<Dentry>, fs_root: Arc<Dentry>, source: &str, fstype: &str) -> Result<(), Errno> {
    mount_with(target, fs_root, source, fstype, false, 0)
}

pub const MS_NOSUID: u64 = 2;
pub const MS_NODEV: u64 = 4;
pub const MS_NOEXEC: u64 = 8;

/// A dentry standing for an already open file (a /proc magic link).
pub fn anonymous(inode: Arc<dyn Inode>) -> Arc<Dentry> {
    Dentry::new_root(inode)
}

/// A dentry for a file with no name in any directory (a memfd, a System
/// V shared memory segment): its path is `/<name> (deleted)`, as Linux's
/// d_path shows such files in /proc/<pid>/fd and /proc/<pid>/maps.
pub fn unnamed(name: &str, inode: Arc<dyn Inode>) -> Arc<Dentry> {
    Arc::new(Dentry {
        name: alloc::format!("{name} (deleted)"),
        inode,
        parent: Weak::new(),
        pinned_parent: Some(root()),
        children: SpinLock::new(BTreeMap::new()),
        ever_mountpoint: AtomicBool::new(false),
        ever_mount_root: AtomicBool::new(false),
        read_only: core::sync::atomic::AtomicBool::new(false),
        mount_flags: core::sync::atomic::AtomicU64::new(0),
    })
}

pub fn mount_with(
    target: &Arc<Dentry>,
    fs_root: Arc<Dentry>,
    source: &str,
    fstype: &str,
    read_only: bool,
    flags: u64,
) -> Result<(), Errno> {
    if !target.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    fs_root.read_only.store(read_only, core::sync::atomic::Ordering::Relaxed);
    fs_root.mount_flags.store(flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC), core::sync::atomic::Ordering::Relaxed);
    let mut cache = NsCache(None);
    let top = target.mounted_root(&mut cache);
    let path = top.path();
    let ns = cache.get().clone();
    let mut table = ns.table.lock();
    table.list.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    top.ever_mountpoint.store(true, Ordering::Release);
    fs_root.ever_mount_root.store(true, Ordering::Release);
    table.on.insert(key(&top), (top.clone(), fs_root.clone()));
    table.under.insert(key(&fs_root), top);
    table.list.push(MountInfo { source: String::from(source), path, fstype: String::from(fstype), root: fs_root });
    Ok(())
}

/// Unmounts the file system whose root `root` is; `busy` says whether
/// something still uses it (open files, working directories).
pub fn umount(root: &Arc<Dentry>, detach: bool, busy: impl Fn(&Arc<Dentry>) -> bool) -> Result<(), Errno> {
    let ns = current_namespace();
    let Some(mp) = ns.mountpoint_of(root) else {
        return Err(Errno::EINVAL);
    };
    if !detach && (ns.mounted_on(root).is_some() || busy(root)) {
        return Err(Errno::EBUSY);
    }
    let removed = {
        let mut table = ns.table.lock();
        let on = table.on.remove(&key(&mp));
        let under = table.under.remove(&key(root));
        table.list.retain(|m| !Arc::ptr_eq(&m.root, root));
        (on, under)
    };
    drop(removed);
    Ok(())
}

/// The caller's namespace's mounts.
pub fn mounts() -> Vec<MountInfo> {
    current_namespace().mounts()
}

pub fn record_root_mount(fstype: &str) {
    init_namespace().table.lock().list.push(MountInfo {
        source: String::from("rootfs"),
        path: String::from("/"),
        fstype: String::from(fstype),
        root: root(),
    });
}
