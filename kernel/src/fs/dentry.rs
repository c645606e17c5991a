//! The dentry cache, path resolution, and where mounts hang in it.
//!
//! A [`Dentry`] names an inode within its parent directory. Looked-up
//! children stay cached in their parent (strong references down, weak up),
//! so repeated walks of the same path never ask the file system again. A
//! mount hangs the root dentry of another file system (or, for a bind
//! mount, a new root dentry over a directory of one) on a dentry; walks
//! step into it, and `..` from a mounted root steps back out. A mount's
//! root dentry carries its `fs::mount::Mount` (flags, file system,
//! propagation); `fs::mount` keeps the table and its rules.
//!
//! Walks start at the calling process's root (chroot) for absolute paths
//! and stop there for `..`; openat2's RESOLVE_* flags restrict them
//! further (`Lookup`). Two views of one directory (a bind mount and its
//! source) cache their children separately: while any bind mount exists,
//! a cached child is checked against the file system before it is used,
//! so a name removed through one view is gone through the other.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;

use super::inode::{FileType, Inode};
use super::mount::Mount;
use crate::cred::Cred;

pub struct Dentry {
    name: String,
    inode: Arc<dyn Inode>,
    parent: Weak<Dentry>,
    /// Uncached dentries (/proc) keep their parent alive themselves, since
    /// no cache holds the chain from the root.
    pinned_parent: Option<Arc<Dentry>>,
    children: SpinLock<Children>,
    /// Something was mounted on this dentry in some mount namespace (the
    /// namespace's table says what, now): walks ask only then.
    ever_mountpoint: AtomicBool,
    /// This is a mount's root in some mount namespace.
    ever_mount_root: AtomicBool,
    /// For the root dentry of a mount: the mount.
    mount: Once<Arc<Mount>>,
    /// For other dentries: the mount they were looked up in (a dentry
    /// belongs to one mount for its life), so asking is one load.
    in_mount: Option<Arc<Mount>>,
}

impl Drop for Dentry {
    fn drop(&mut self) {
        // The last reference to a name of a removed file: inotify's
        // DELETE_SELF comes now (one load when nothing is watched).
        super::notify::dentry_dropped(&self.inode);
        // Cached children go one level at a time, not by recursion: a tree
        // thousands of directories deep (or a corrupt disk's directory
        // loop walked to PATH_MAX) would overflow the kernel stack.
        let mut pending: Vec<Arc<Dentry>> = Vec::new();
        let take = |map: &mut Children, pending: &mut Vec<Arc<Dentry>>| {
            while let Some(child) = map.pop() {
                if pending.try_reserve(1).is_ok() {
                    pending.push(child);
                }
                // Else (no memory) it is dropped here, recursively.
            }
        };
        take(&mut self.children.lock(), &mut pending);
        while let Some(child) = pending.pop() {
            // Only a child this was the last holder of has a subtree to
            // take apart; dropping it afterwards finds no children.
            if let Ok(child) = Arc::try_unwrap(child) {
                take(&mut child.children.lock(), &mut pending);
            }
        }
    }
}

/// A directory's cached children, found by a hash of their name: a
/// `BTreeMap` keyed by the names compared them with `memcmp` at every
/// node it passed (about 170 instructions a look-up in a directory of a
/// dozen names), where a 64-bit key compares in one instruction and the
/// name is compared once, with the child found. Two names with one hash
/// are both kept: the later ones by name in `collided`.
struct Children {
    by_hash: BTreeMap<u64, Arc<Dentry>>,
    collided: BTreeMap<String, Arc<Dentry>>,
}

/// FNV-1a: names are short, and a few instructions a byte is less than
/// a comparison at every node.
fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Children {
    const fn new() -> Children {
        Children { by_hash: BTreeMap::new(), collided: BTreeMap::new() }
    }

    fn get(&self, name: &str) -> Option<&Arc<Dentry>> {
        if let Some(d) = self.by_hash.get(&name_hash(name)) {
            if d.name == name {
                return Some(d);
            }
        }
        if self.collided.is_empty() {
            return None;
        }
        self.collided.get(name)
    }

    /// Caches `d` under its name, in place of any child of that name.
    fn insert(&mut self, d: Arc<Dentry>) {
        match self.by_hash.get_mut(&name_hash(&d.name)) {
            Some(held) if held.name == d.name => *held = d,
            Some(_) => {
                self.collided.insert(d.name.clone(), d);
            }
            None => {
                if !self.collided.is_empty() {
                    self.collided.remove(d.name.as_str());
                }
                self.by_hash.insert(name_hash(&d.name), d);
            }
        }
    }

    fn remove(&mut self, name: &str) {
        let h = name_hash(name);
        if self.by_hash.get(&h).is_some_and(|d| d.name == name) {
            self.by_hash.remove(&h);
        }
        if !self.collided.is_empty() {
            self.collided.remove(name);
        }
    }

    /// Takes any one child out (to take a tree apart).
    fn pop(&mut self) -> Option<Arc<Dentry>> {
        match self.by_hash.pop_first() {
            Some((_, d)) => Some(d),
            None => self.collided.pop_first().map(|(_, d)| d),
        }
    }
}

/// A mount namespace: which mount roots hang on which dentries, and the
/// mount table (`fs::mount`) /proc/<pid>/mounts shows. Copied whole by
/// unshare/clone(CLONE_NEWNS): afterwards mounts made or removed in one
/// are not seen in the other. The copy shares the `Mount`s themselves
/// (ids, flags), where Linux's copy_tree makes new ones.
pub struct MountNamespace {
    /// Its /proc/<pid>/ns/mnt inode number.
    pub inum: u64,
    /// Mountpoint (by address) -> the mount root on it.
    on: SpinLock<BTreeMap<usize, Arc<Dentry>>>,
    /// Mount root (by address) -> the dentry it covers.
    under: SpinLock<BTreeMap<usize, Arc<Dentry>>>,
    /// The mount table, in mount order.
    pub(super) table: SpinLock<Vec<super::mount::Entry>>,
}

fn key(d: &Dentry) -> usize {
    d as *const Dentry as usize
}

impl MountNamespace {
    fn empty(inum: u64) -> MountNamespace {
        if inum != INIT_MNT_INUM {
            OTHER_NAMESPACES.fetch_add(1, Ordering::AcqRel);
        }
        MountNamespace {
            inum,
            on: SpinLock::new(BTreeMap::new()),
            under: SpinLock::new(BTreeMap::new()),
            table: SpinLock::new(Vec::new()),
        }
    }

    /// A copy of `self` with its own tables (ENOMEM when none can be made).
    pub fn copy(&self, inum: u64) -> Result<Arc<MountNamespace>, Errno> {
        let ns = MountNamespace::empty(inum);
        *ns.on.lock() = self.on.lock().clone();
        *ns.under.lock() = self.under.lock().clone();
        let src = self.table.lock().clone();
        *ns.table.lock() = src;
        Arc::try_new(ns).map_err(|_| Errno::ENOMEM)
    }

    fn mounted_on(&self, d: &Dentry) -> Option<Arc<Dentry>> {
        self.on.lock().get(&key(d)).cloned()
    }

    /// The root of the topmost mount stacked on `d`, or `d` itself: one
    /// visit to the table, and no look-up for a root that was never a
    /// mountpoint (`attach` marks a dentry before it enters the table).
    fn top_of(&self, d: &Arc<Dentry>) -> Arc<Dentry> {
        let on = self.on.lock();
        let Some(mut top) = on.get(&key(d)) else {
            return d.clone();
        };
        while top.ever_mountpoint.load(Ordering::Acquire) {
            match on.get(&key(top)) {
                Some(next) => top = next,
                None => break,
            }
        }
        top.clone()
    }

    fn covered_by(&self, root: &Dentry) -> Option<Arc<Dentry>> {
        self.under.lock().get(&key(root)).cloned()
    }
}

impl Drop for MountNamespace {
    fn drop(&mut self) {
        if self.inum != INIT_MNT_INUM {
            OTHER_NAMESPACES.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

static INIT_NS: Once<Arc<MountNamespace>> = Once::new();

/// Mount namespaces in existence besides the initial one. While there are
/// none, every process is in the initial one, and `current_namespace`
/// need not look the caller up (a look-up in the task table).
static OTHER_NAMESPACES: AtomicUsize = AtomicUsize::new(0);

/// The calling process's mount namespace (installed by the process layer).
static CURRENT_NS: Once<fn() -> Option<Arc<MountNamespace>>> = Once::new();

/// Linux's fixed proc inode number of the initial mount namespace.
pub const INIT_MNT_INUM: u64 = 0xEFFF_FFF8;

/// The namespace the boot mounts are made in (Linux's init_mnt_ns).
pub fn init_namespace() -> Arc<MountNamespace> {
    loop {
        if let Some(ns) = INIT_NS.get() {
            return ns.clone();
        }
        INIT_NS.set(Arc::new(MountNamespace::empty(INIT_MNT_INUM)));
    }
}

pub fn set_namespace_hook(current: fn() -> Option<Arc<MountNamespace>>) {
    CURRENT_NS.set(current);
}

/// The caller's mount namespace (the initial one in kernel threads).
pub fn current_namespace() -> Arc<MountNamespace> {
    if OTHER_NAMESPACES.load(Ordering::Acquire) == 0 {
        return init_namespace();
    }
    CURRENT_NS.get().and_then(|f| f()).unwrap_or_else(init_namespace)
}

/// The root of the mount tree (pivot_root may change it).
static ROOT: SpinLock<Option<Arc<Dentry>>> = SpinLock::new(None);

/// Bind mounts in existence: while there are any, cached children are
/// checked against their file system (see the module comment).
static BIND_MOUNTS: AtomicUsize = AtomicUsize::new(0);

/// Whether any process has a root other than the tree's (chroot): until
/// one does, walks need not ask for the caller's root.
static CHROOTED: AtomicBool = AtomicBool::new(false);

/// Asks the process layer for the calling process's root directory.
static CALLER_ROOT: Once<fn() -> Option<Arc<Dentry>>> = Once::new();

impl Dentry {
    fn with(
        name: String,
        inode: Arc<dyn Inode>,
        parent: Weak<Dentry>,
        pinned_parent: Option<Arc<Dentry>>,
        in_mount: Option<Arc<Mount>>,
    ) -> Dentry {
        Dentry {
            name,
            inode,
            parent,
            pinned_parent,
            children: SpinLock::new(Children::new()),
            ever_mountpoint: AtomicBool::new(false),
            ever_mount_root: AtomicBool::new(false),
            mount: Once::new(),
            in_mount,
        }
    }

    pub fn new_root(inode: Arc<dyn Inode>) -> Arc<Dentry> {
        Arc::new(Dentry::with(String::from("/"), inode, Weak::new(), None, None))
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
        let cached = self.children.lock().get(name).cloned();
        if let Some(d) = cached {
            if BIND_MOUNTS.load(Ordering::Relaxed) == 0 || d.is_mountpoint() {
                return Ok(d);
            }
            // Another view may have changed the directory.
            match self.inode.lookup(name) {
                Ok(inode) if Arc::ptr_eq(&inode, &d.inode) => return Ok(d),
                Ok(_) => self.forget(name),
                Err(e) => {
                    self.forget(name);
                    return Err(e);
                }
            }
        }
        let inode = self.inode.lookup(name)?;
        Ok(self.new_child(name, inode))
    }

    /// The child `name` for `inode`, which the caller just made under that
    /// name (Linux's `d_instantiate`): entered in the cache without asking
    /// the file system to find the name again. A cached child of that name
    /// for the same inode is kept.
    pub fn instantiate(self: &Arc<Self>, name: &str, inode: Arc<dyn Inode>) -> Arc<Dentry> {
        if let Some(d) = self.children.lock().get(name) {
            if Arc::ptr_eq(&d.inode, &inode) {
                return d.clone();
            }
        }
        self.new_child(name, inode)
    }

    /// A new dentry for `inode` under `name`, cached when it may be.
    fn new_child(self: &Arc<Self>, name: &str, inode: Arc<dyn Inode>) -> Arc<Dentry> {
        let cacheable = inode.cacheable();
        let d = Arc::new(Dentry::with(
            String::from(name),
            inode,
            Arc::downgrade(self),
            if cacheable { None } else { Some(self.clone()) },
            self.mount(),
        ));
        if cacheable {
            self.children.lock().insert(d.clone());
        }
        d
    }

    /// The child `name` only if the dentry cache can give it without
    /// waiting (RESOLVE_CACHED). Every file system here keeps its dentries
    /// in memory (Linux's tmpfs and, in 6.18, /proc answer from the cache
    /// too); a name that does not exist is EAGAIN, since no negative
    /// dentry is kept for it.
    fn cached_child(self: &Arc<Self>, name: &str) -> Result<Arc<Dentry>, Errno> {
        self.child(name).map_err(|e| if e == Errno::ENOENT { Errno::EAGAIN } else { e })
    }

    /// Forgets a cached child (after unlink, rmdir or rename).
    pub fn forget(&self, name: &str) {
        self.children.lock().remove(name);
    }

    /// The parent directory, stepping out of mounts; the root is its own parent.
    pub fn parent(self: &Arc<Self>) -> Arc<Dentry> {
        let d = self.outermost();
        d.pinned_parent.clone().or_else(|| d.parent.upgrade()).unwrap_or(d)
    }

    /// The dentry this one shows through its mounts: the mountpoint a
    /// mount root covers, and so on out.
    fn outermost(self: &Arc<Self>) -> Arc<Dentry> {
        let mut d = self.clone();
        while let Some(mp) = d.covering() {
            d = mp;
        }
        d
    }

    /// The dentry this mount root covers in the caller's namespace.
    fn covering(&self) -> Option<Arc<Dentry>> {
        if !self.ever_mount_root.load(Ordering::Acquire) {
            return None;
        }
        current_namespace().covered_by(self)
    }

    /// Follows mounts stacked on this dentry.
    pub fn mounted_root(self: &Arc<Self>) -> Arc<Dentry> {
        if !self.ever_mountpoint.load(Ordering::Acquire) {
            return self.clone();
        }
        current_namespace().top_of(self)
    }

    pub fn is_mount_root(&self) -> bool {
        self.covering().is_some()
    }

    /// Whether a file system is mounted on this dentry.
    pub fn is_mountpoint(&self) -> bool {
        self.ever_mountpoint.load(Ordering::Acquire) && current_namespace().mounted_on(self).is_some()
    }

    /// The root of the mount this dentry belongs to.
    pub fn fs_root(self: &Arc<Self>) -> Arc<Dentry> {
        let mut d = self.clone();
        loop {
            if d.is_mount_root() || d.mount.get().is_some() {
                return d;
            }
            match d.pinned_parent.clone().or_else(|| d.parent.upgrade()) {
                Some(p) => d = p,
                None => return d,
            }
        }
    }

    /// Whether this dentry lies in the mount rooted at `root`.
    pub fn is_within(self: &Arc<Self>, root: &Arc<Dentry>) -> bool {
        Arc::ptr_eq(&self.fs_root(), root)
    }

    /// The mount of a mount's root dentry.
    pub fn mount_of_root(&self) -> Option<&Arc<Mount>> {
        self.mount.get()
    }

    /// Makes this dentry the root of `mount` (once).
    pub(super) fn set_mount(&self, mount: Arc<Mount>) {
        self.mount.set(mount);
    }

    /// The mount this dentry is seen through (None for dentries outside
    /// any tree: pipes' and magic links').
    pub fn mount(&self) -> Option<Arc<Mount>> {
        self.mount_ref().cloned()
    }

    fn mount_ref(&self) -> Option<&Arc<Mount>> {
        self.mount.get().or(self.in_mount.as_ref())
    }

    fn mount_flag(&self, flag: u32) -> bool {
        self.mount_ref().is_some_and(|m| m.flags() & flag != 0)
    }

    /// MS_NODEV: device nodes on this mount cannot be opened.
    pub fn no_dev(&self) -> bool {
        self.mount_flag(super::mount::MNT_NODEV)
    }

    /// MS_NOSUID: exec ignores set-user-ID and set-group-ID bits here.
    pub fn no_suid(&self) -> bool {
        self.mount_flag(super::mount::MNT_NOSUID)
    }

    /// MS_NOEXEC: files on this mount cannot be executed or mapped executable.
    pub fn no_exec(&self) -> bool {
        self.mount_flag(super::mount::MNT_NOEXEC)
    }

    /// A read-only mount, or a mount of a read-only file system.
    pub fn is_read_only(&self) -> bool {
        self.mount_ref().is_some_and(|m| m.is_read_only())
    }

    /// The absolute path of this dentry in the mount tree.
    pub fn path(self: &Arc<Self>) -> String {
        self.path_from(&root()).0
    }

    /// The path of this dentry as seen from `root` (a process's root),
    /// and whether `root` is on its way up. When it is not, the path is
    /// the one from the tree's root, as Linux's d_path gives it.
    pub fn path_from(self: &Arc<Self>, root: &Arc<Dentry>) -> (String, bool) {
        let mut parts: Vec<String> = Vec::new();
        let mut d = self.clone();
        let mut reachable = false;
        loop {
            if Arc::ptr_eq(&d, root) {
                reachable = true;
                break;
            }
            if let Some(mp) = d.covering() {
                d = mp;
                continue;
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
            return (String::from("/"), reachable);
        }
        let mut s = String::new();
        for p in parts.iter().rev() {
            s.push('/');
            s.push_str(p);
        }
        (s, reachable)
    }

    /// The path as the calling process sees it (d_path from its root).
    pub fn path_for_caller(self: &Arc<Self>) -> String {
        self.path_from(&caller_root()).0
    }

    /// The path of this dentry inside its own file system, from the root
    /// of the mount it is in (a bind mount's root in /proc/<pid>/mountinfo).
    pub fn path_in_mount(self: &Arc<Self>) -> String {
        let base = self.mount().map(|m| m.root_path().clone()).unwrap_or_else(|| String::from("/"));
        let (rel, _) = self.path_from(&self.fs_root());
        match (base.as_str(), rel.as_str()) {
            (_, "/") => base,
            ("/", _) => rel,
            _ => alloc::format!("{base}{rel}"),
        }
    }
}

/// Sets the root of the mount tree (boot, pivot_root).
pub fn set_root(root: Arc<Dentry>) {
    *ROOT.lock() = Some(root);
}

/// The root of the mount tree.
pub fn root() -> Arc<Dentry> {
    ROOT.lock().clone().expect("root file system not mounted")
}

/// Registers how to find the calling process's root (proc does, at boot).
pub fn set_caller_root_hook(hook: fn() -> Option<Arc<Dentry>>) {
    CALLER_ROOT.set(hook);
}

/// A process now has a root of its own: walks must ask for it.
pub fn note_chroot() {
    CHROOTED.store(true, Ordering::Release);
}

/// The calling process's root: where absolute paths start and `..` stops.
pub fn caller_root() -> Arc<Dentry> {
    if CHROOTED.load(Ordering::Acquire) {
        if let Some(r) = CALLER_ROOT.get().and_then(|hook| hook()) {
            return r;
        }
    }
    root()
}

/// Bind mounts come and go (see `BIND_MOUNTS`).
pub(super) fn note_bind(added: bool) {
    if added {
        BIND_MOUNTS.fetch_add(1, Ordering::Relaxed);
    } else {
        BIND_MOUNTS.fetch_sub(1, Ordering::Relaxed);
    }
}

const MAX_SYMLINKS: usize = 40;
pub const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;

/// How a walk may go: openat2's RESOLVE_* flags (all false: a plain walk).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lookup {
    /// RESOLVE_NO_XDEV: never into or out of another mount (EXDEV).
    pub no_xdev: bool,
    /// RESOLVE_NO_MAGICLINKS: no /proc/<pid>/fd-style links (ELOOP).
    pub no_magiclinks: bool,
    /// RESOLVE_NO_SYMLINKS: no symlink at all (ELOOP).
    pub no_symlinks: bool,
    /// RESOLVE_BENEATH: never above the starting directory (EXDEV).
    pub beneath: bool,
    /// RESOLVE_IN_ROOT: the starting directory is the root.
    pub in_root: bool,
    /// RESOLVE_CACHED: only what the dentry cache holds (EAGAIN).
    pub cached: bool,
}

impl Lookup {
    pub fn scoped(&self) -> bool {
        self.beneath || self.in_root
    }
}

/// One walk: its rules, where "/" and ".." stop, and the symlinks it may
/// still follow.
struct Walk<'a> {
    cred: &'a Cred,
    how: Lookup,
    /// The process root, or the starting directory of a scoped walk.
    root: Arc<Dentry>,
    /// The mount the walk started in (RESOLVE_NO_XDEV).
    start_mount: Option<Arc<Dentry>>,
    budget: usize,
}

impl<'a> Walk<'a> {
    fn new(cred: &'a Cred, start: &Arc<Dentry>, how: Lookup) -> Walk<'a> {
        Walk {
            cred,
            how,
            root: if how.scoped() { start.clone() } else { caller_root() },
            start_mount: how.no_xdev.then(|| start.fs_root()),
            budget: MAX_SYMLINKS,
        }
    }

    /// RESOLVE_NO_XDEV: `d` must be in the mount the walk started in.
    fn same_mount(&self, d: &Arc<Dentry>) -> Result<(), Errno> {
        match &self.start_mount {
            Some(m) if !Arc::ptr_eq(&d.fs_root(), m) => Err(Errno::EXDEV),
            _ => Ok(()),
        }
    }

    /// An absolute path or symlink starts over at the root.
    fn jump_root(&self) -> Result<Arc<Dentry>, Errno> {
        if self.how.beneath {
            return Err(Errno::EXDEV);
        }
        self.same_mount(&self.root)?;
        Ok(self.root.clone())
    }

    fn walk(&mut self, start: &Arc<Dentry>, path: &str, follow: bool) -> Result<Arc<Dentry>, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let mut cur = if path.starts_with('/') { self.jump_root()? } else { start.clone() };
        // Components are taken straight from the path, without collecting
        // them first: a stat walks a few and this is its hot path.
        let mut parts = Components { path, at: 0 };
        let must_be_dir = path.ends_with('/');
        while let Some(part) = parts.next() {
            let last = parts.at_end();
            if !cur.is_dir() {
                return Err(Errno::ENOTDIR);
            }
            // Linux checks search permission on the directory before each
            // component, "." and ".." included (may_lookup).
            super::perm::may_search(self.cred, &cur)?;
            match part {
                "." => continue,
                ".." => {
                    // ".." stays at the root; a walk kept beneath its start
                    // may not go there.
                    if Arc::ptr_eq(&cur, &self.root) {
                        if self.how.beneath {
                            return Err(Errno::EXDEV);
                        }
                        continue;
                    }
                    let up = cur.parent();
                    self.same_mount(&up)?;
                    cur = up;
                    continue;
                }
                name if name.len() > NAME_MAX => return Err(Errno::ENAMETOOLONG),
                _ => {}
            }
            let child = if self.how.cached { cur.cached_child(part)? } else { cur.child(part)? };
            let top = child.mounted_root();
            if !Arc::ptr_eq(&top, &child) {
                self.same_mount(&top)?;
            }
            if top.inode.file_type() == FileType::Symlink && (!last || follow || must_be_dir) {
                if self.how.no_symlinks {
                    return Err(Errno::ELOOP);
                }
                // /proc/<pid>/fd/N and friends name a file, not a path.
                if let Some(target) = top.inode.magic_link() {
                    if self.how.no_magiclinks {
                        return Err(Errno::ELOOP);
                    }
                    if self.how.scoped() {
                        return Err(Errno::EXDEV);
                    }
                    let target = target?;
                    self.same_mount(&target)?;
                    cur = target;
                    continue;
                }
                if self.budget == 0 {
                    return Err(Errno::ELOOP);
                }
                self.budget -= 1;
                let target = top.inode.readlink()?;
                cur = self.walk(&cur, &target, true)?;
                continue;
            }
            cur = top;
        }
        if must_be_dir && !cur.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(cur)
    }
}

/// The non-empty components of a path, between its slashes. A byte loop
/// over the path: `str::split` with a filter and a peek cost about 100
/// instructions a component (its `memchr` is built for long haystacks),
/// a fifth of a five-component walk.
struct Components<'p> {
    path: &'p str,
    at: usize,
}

impl<'p> Components<'p> {
    /// Whether no component is left (only slashes, if anything).
    fn at_end(&self) -> bool {
        self.path.as_bytes()[self.at..].iter().all(|&b| b == b'/')
    }
}

impl<'p> Iterator for Components<'p> {
    type Item = &'p str;

    fn next(&mut self) -> Option<&'p str> {
        let bytes = self.path.as_bytes();
        let mut start = self.at;
        while start < bytes.len() && bytes[start] == b'/' {
            start += 1;
        }
        if start == bytes.len() {
            self.at = start;
            return None;
        }
        let mut end = start + 1;
        while end < bytes.len() && bytes[end] != b'/' {
            end += 1;
        }
        self.at = end;
        // Slashes are ASCII, so both ends are character boundaries.
        self.path.get(start..end)
    }
}

/// Resolves `path` from `start` (ignored for absolute paths) as `cred`,
/// which needs search permission on every directory it walks through; a
/// trailing symlink is followed only if `follow`.
pub fn resolve(cred: &Cred, start: &Arc<Dentry>, path: &str, follow: bool) -> Result<Arc<Dentry>, Errno> {
    resolve_how(cred, start, path, follow, Lookup::default())
}

/// `resolve` under openat2's rules.
pub fn resolve_how(
    cred: &Cred,
    start: &Arc<Dentry>,
    path: &str,
    follow: bool,
    how: Lookup,
) -> Result<Arc<Dentry>, Errno> {
    Walk::new(cred, start, how).walk(start, path, follow)
}

/// `resolve_how` from `start` for a walk whose scope (RESOLVE_BENEATH,
/// RESOLVE_IN_ROOT, RESOLVE_NO_XDEV) began at `scope`: the last step of
/// an open that walked to `start` first.
pub fn resolve_within(
    cred: &Cred,
    scope: &Arc<Dentry>,
    start: &Arc<Dentry>,
    path: &str,
    follow: bool,
    how: Lookup,
) -> Result<Arc<Dentry>, Errno> {
    Walk::new(cred, scope, how).walk(start, path, follow)
}

/// Resolves all but the last component: (directory, last name), with
/// search permission on the directory as for any component. The name is
/// "." for paths like "/" or "a/..": callers that create or remove reject
/// it.
pub fn resolve_parent(cred: &Cred, start: &Arc<Dentry>, path: &str) -> Result<(Arc<Dentry>, String), Errno> {
    resolve_parent_how(cred, start, path, Lookup::default())
}

/// `resolve_parent` under openat2's rules.
pub fn resolve_parent_how(
    cred: &Cred,
    start: &Arc<Dentry>,
    path: &str,
    how: Lookup,
) -> Result<(Arc<Dentry>, String), Errno> {
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
    let mut walk = Walk::new(cred, start, how);
    let dir = if dir_part.is_empty() {
        if path.starts_with('/') {
            walk.jump_root()?
        } else {
            start.clone()
        }
    } else {
        walk.walk(start, dir_part, true)?
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

/// A dentry standing for an already open file (a /proc magic link).
pub fn anonymous(inode: Arc<dyn Inode>) -> Arc<Dentry> {
    Dentry::new_root(inode)
}

/// A dentry for a file with no name in any directory (a memfd, a System
/// V shared memory segment): its path is `/<name> (deleted)`, as Linux's
/// d_path shows such files in /proc/<pid>/fd and /proc/<pid>/maps.
pub fn unnamed(name: &str, inode: Arc<dyn Inode>) -> Arc<Dentry> {
    Arc::new(Dentry::with(alloc::format!("{name} (deleted)"), inode, Weak::new(), Some(root()), None))
}

/// A new root dentry over `dir` (a bind mount's), with its own cache.
pub(super) fn view_of(dir: &Arc<Dentry>) -> Arc<Dentry> {
    Dentry::new_root(dir.inode.clone())
}

/// Hangs `root` (a mount's root dentry) on `target`, over whatever is
/// mounted there already; returns the dentry it now covers.
pub(super) fn attach(target: &Arc<Dentry>, root: &Arc<Dentry>) -> Arc<Dentry> {
    let top = target.mounted_root();
    let ns = current_namespace();
    top.ever_mountpoint.store(true, Ordering::Release);
    root.ever_mount_root.store(true, Ordering::Release);
    ns.under.lock().insert(key(root), top.clone());
    ns.on.lock().insert(key(&top), root.clone());
    top
}

/// Takes `root` (a mount's root dentry) off the dentry it covers; a
/// mount stacked on it stays on it.
pub(super) fn detach(root: &Arc<Dentry>) {
    let ns = current_namespace();
    let Some(mp) = ns.under.lock().remove(&key(root)) else { return };
    let mut on = ns.on.lock();
    if on.get(&key(&mp)).is_some_and(|m| Arc::ptr_eq(m, root)) {
        on.remove(&key(&mp));
    }
}

/// The dentry a mount root covers (its mountpoint).
pub(super) fn covered(root: &Arc<Dentry>) -> Option<Arc<Dentry>> {
    root.covering()
}

/// Whether `d` lies at or below `ancestor` in the tree (through mounts).
pub fn is_below(d: &Arc<Dentry>, ancestor: &Arc<Dentry>) -> bool {
    let mut cur = d.clone();
    loop {
        if Arc::ptr_eq(&cur, ancestor) {
            return true;
        }
        let up = cur.parent();
        if Arc::ptr_eq(&up, &cur) {
            return false;
        }
        cur = up;
    }
}
