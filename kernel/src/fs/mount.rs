//! Mounts: the mount table and Linux's rules for changing it.
//!
//! A [`Mount`] is one place a file system shows in the tree (Linux's
//! vfsmount): its per-mount flags (MNT_READONLY, nosuid, nodev, noexec,
//! the atime mode), its propagation type, and the [`Super`] it shows (the
//! file-system instance, shared by bind mounts of it, with the flags a
//! plain remount changes: read-only, sync, ...). Its root dentry carries
//! it and every dentry looked up below records it (`Dentry::mount`), so
//! the per-mount flags are one load away on every path call; the table
//! here lists the mounts in the order /proc/mounts shows them.
//!
//! The operations are mount(2)'s: a new mount, MS_BIND (MS_REC copies the
//! mounts below the source too), MS_REMOUNT (of the file system; with
//! MS_BIND of the mount alone), MS_MOVE, the propagation types
//! (MS_SHARED, MS_PRIVATE, MS_SLAVE, MS_UNBINDABLE, with MS_REC), and
//! umount2's (MNT_DETACH, MNT_EXPIRE, MNT_FORCE), and pivot_root.
//! Propagation is recorded, validated and shown (shared:N, master:N,
//! unbindable in /proc/<pid>/mountinfo) as Linux does, but mount events
//! are not copied to peers and slaves: every mount behaves as private.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use hal::sync::SpinLock;
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::dentry::{self, Dentry};
use crate::mm::TryString;

// Per-mount flags (Linux's MNT_*).
pub const MNT_NOSUID: u32 = 0x01;
pub const MNT_NODEV: u32 = 0x02;
pub const MNT_NOEXEC: u32 = 0x04;
pub const MNT_NOATIME: u32 = 0x08;
pub const MNT_NODIRATIME: u32 = 0x10;
pub const MNT_RELATIME: u32 = 0x20;
pub const MNT_READONLY: u32 = 0x40;
pub const MNT_NOSYMFOLLOW: u32 = 0x80;
const MNT_ATIME_MASK: u32 = MNT_NOATIME | MNT_NODIRATIME | MNT_RELATIME;

// Flags of the file system itself (SB_*) that /proc/mounts shows.
const SB_SYNCHRONOUS: u32 = c::MS_SYNCHRONOUS as u32;
const SB_MANDLOCK: u32 = c::MS_MANDLOCK as u32;
const SB_DIRSYNC: u32 = c::MS_DIRSYNC as u32;
const SB_LAZYTIME: u32 = c::MS_LAZYTIME as u32;
/// The file-system flags a remount may change (MS_RMT_MASK).
const SB_RMT_MASK: u32 = c::MS_RDONLY as u32 | SB_SYNCHRONOUS | SB_MANDLOCK | c::MS_I_VERSION as u32 | SB_LAZYTIME;

/// A file system with state of its own under its super block (ext4's
/// volume): it may turn read-only by itself (`errors=remount-ro`), and a
/// remount's read-only and sync flags must reach it.
pub trait FsState: Send + Sync {
    fn is_read_only(&self) -> bool;
    fn remount(&self, read_only: bool, synchronous: bool) -> Result<(), Errno>;
}

/// A file-system instance (Linux's super_block): what every mount of it
/// shares.
pub struct Super {
    pub fstype: String,
    /// SB_RDONLY and the other flags a plain remount changes.
    flags: AtomicU32,
    /// The options its type shows in /proc/mounts (",size=1024k,mode=700").
    options: SpinLock<String>,
    state: Option<Arc<dyn FsState>>,
}

impl Super {
    pub fn new(fstype: &str, options: String) -> Result<Arc<Super>, Errno> {
        Self::with_state(fstype, options, None)
    }

    pub fn with_state(fstype: &str, options: String, state: Option<Arc<dyn FsState>>) -> Result<Arc<Super>, Errno> {
        let mut t = String::new();
        t.try_reserve(fstype.len()).map_err(|_| Errno::ENOMEM)?;
        t.push_str(fstype);
        Arc::try_new(Super { fstype: t, flags: AtomicU32::new(0), options: SpinLock::new(options), state })
            .map_err(|_| Errno::ENOMEM)
    }

    pub fn is_read_only(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & c::MS_RDONLY as u32 != 0
            || self.state.as_ref().is_some_and(|s| s.is_read_only())
    }
}

/// How mount events would propagate to and from a mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Propagation {
    Private,
    /// A member of peer group `group`.
    Shared {
        group: u32,
    },
    /// Receives from peer group `master`; `group` if also shared.
    Slave {
        master: u32,
        group: Option<u32>,
    },
    Unbindable,
}

impl Propagation {
    fn group(self) -> Option<u32> {
        match self {
            Propagation::Shared { group } => Some(group),
            Propagation::Slave { group, .. } => group,
            _ => None,
        }
    }
}

static NEXT_MOUNT_ID: AtomicU32 = AtomicU32::new(21);
static NEXT_GROUP_ID: AtomicU32 = AtomicU32::new(1);

/// One mount.
pub struct Mount {
    pub id: u32,
    pub sb: Arc<Super>,
    flags: AtomicU32,
    propagation: SpinLock<Propagation>,
    /// What mount(2) was given as the source ("none", "/dev/sda1").
    source: String,
    /// The mount's root inside its file system ("/", or a bind mount's
    /// directory).
    root_path: String,
    /// MNT_EXPIRE's mark.
    expiry_mark: AtomicBool,
    /// Made by MS_BIND (pivot_root and the table count them).
    bind: bool,
}

impl Mount {
    fn new(sb: Arc<Super>, flags: u32, source: &str, root_path: String, bind: bool) -> Result<Arc<Mount>, Errno> {
        let mut src = String::new();
        src.try_reserve(source.len()).map_err(|_| Errno::ENOMEM)?;
        src.push_str(source);
        Arc::try_new(Mount {
            id: NEXT_MOUNT_ID.fetch_add(1, Ordering::Relaxed),
            sb,
            flags: AtomicU32::new(flags),
            propagation: SpinLock::new(Propagation::Private),
            source: src,
            root_path,
            expiry_mark: AtomicBool::new(false),
            bind,
        })
        .map_err(|_| Errno::ENOMEM)
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// The mount is read-only, or its file system is.
    pub fn is_read_only(&self) -> bool {
        self.flags() & MNT_READONLY != 0 || self.sb.is_read_only()
    }

    pub fn root_path(&self) -> &String {
        &self.root_path
    }

    /// statfs's f_flags (ST_*): ST_VALID with the mount's and the file
    /// system's flags.
    pub fn statfs_flags(&self) -> u64 {
        const ST_VALID: u64 = 0x20;
        let f = self.flags();
        let mut st = ST_VALID;
        for (mnt, bit) in [
            (MNT_NOSUID, 0x2),
            (MNT_NODEV, 0x4),
            (MNT_NOEXEC, 0x8),
            (MNT_NOATIME, 0x400),
            (MNT_NODIRATIME, 0x800),
            (MNT_RELATIME, 0x1000),
            (MNT_NOSYMFOLLOW, 0x2000),
        ] {
            if f & mnt != 0 {
                st |= bit;
            }
        }
        let sb = self.sb.flags.load(Ordering::Relaxed);
        if self.is_read_only() {
            st |= 0x1;
        }
        if sb & SB_SYNCHRONOUS != 0 {
            st |= 0x10;
        }
        if sb & SB_MANDLOCK != 0 {
            st |= 0x40;
        }
        st
    }
}

/// One row of a mount namespace's table (`dentry::MountNamespace`).
#[derive(Clone)]
pub(super) struct Entry {
    mount: Arc<Mount>,
    root: Arc<Dentry>,
    /// The mount this one is mounted in (None for the tree's root).
    parent: Option<Arc<Mount>>,
}

/// The caller's mount namespace, whose table the operations here read
/// and change.
fn ns() -> Arc<dentry::MountNamespace> {
    dentry::current_namespace()
}

/// mount(2)'s flags as per-mount flags (`path_mount`): relatime unless
/// MS_NOATIME (MS_STRICTATIME clears both).
pub fn mnt_flags_of(flags: u64) -> u32 {
    let mut f = 0;
    if flags & c::MS_NOATIME == 0 {
        f |= MNT_RELATIME;
    }
    for (ms, mnt) in [
        (c::MS_NOSUID, MNT_NOSUID),
        (c::MS_NODEV, MNT_NODEV),
        (c::MS_NOEXEC, MNT_NOEXEC),
        (c::MS_NOATIME, MNT_NOATIME),
        (c::MS_NODIRATIME, MNT_NODIRATIME),
        (c::MS_RDONLY, MNT_READONLY),
        (c::MS_NOSYMFOLLOW, MNT_NOSYMFOLLOW),
    ] {
        if flags & ms != 0 {
            f |= mnt;
        }
    }
    if flags & c::MS_STRICTATIME != 0 {
        f &= !(MNT_RELATIME | MNT_NOATIME);
    }
    f
}

fn push_entry(mount: Arc<Mount>, root: Arc<Dentry>, parent: Option<Arc<Mount>>) -> Result<(), Errno> {
    let ns = ns();
    let mut table = ns.table.lock();
    table.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    table.push(Entry { mount, root, parent });
    Ok(())
}

/// Records the tree's root (at boot).
pub fn mount_root(root: &Arc<Dentry>, fstype: &str, source: &str) -> Result<(), Errno> {
    // A disk root (root=/dev/vdX): its volume's state reaches the table.
    let state = super::ext4::volume_of(root.inode().as_ref()).map(|v| v as Arc<dyn FsState>);
    let sb = Super::with_state(fstype, String::new(), state)?;
    let mount = Mount::new(sb, 0, source, String::from("/"), false)?;
    root.set_mount(mount.clone());
    push_entry(mount, root.clone(), None)
}

/// Mounts a new file-system instance `fs_root` on `target` (a new mount
/// of `sb`, with per-mount `mnt_flags`). The file system's own flags
/// come from `sb_flags` (MS_RDONLY, MS_SYNCHRONOUS...). A file system
/// mounted under a shared mount becomes shared (in a group of its own:
/// nothing is propagated).
pub fn mount_new(
    target: &Arc<Dentry>,
    fs_root: Arc<Dentry>,
    sb: Arc<Super>,
    source: &str,
    sb_flags: u64,
    mnt_flags: u32,
) -> Result<(), Errno> {
    if target.is_dir() != fs_root.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    sb.flags.store(sb_flags as u32 & SB_RMT_MASK | sb_flags as u32 & SB_DIRSYNC, Ordering::Relaxed);
    let mount = Mount::new(sb, mnt_flags, source, String::from("/"), false)?;
    fs_root.set_mount(mount.clone());
    graft(target, mount, fs_root)
}

/// Attaches a mount at `target` and records it.
fn graft(target: &Arc<Dentry>, mount: Arc<Mount>, root: Arc<Dentry>) -> Result<(), Errno> {
    let parent = target.mount();
    if let Some(p) = &parent {
        if p.propagation.lock().group().is_some() && *mount.propagation.lock() == Propagation::Private {
            *mount.propagation.lock() = Propagation::Shared { group: NEXT_GROUP_ID.fetch_add(1, Ordering::Relaxed) };
        }
    }
    push_entry(mount, root.clone(), parent)?;
    dentry::attach(target, &root);
    Ok(())
}

/// The mount whose root `d` is (EINVAL when `d` is not a mount's root).
fn mount_at(d: &Arc<Dentry>) -> Result<Arc<Mount>, Errno> {
    d.mount_of_root().cloned().ok_or(Errno::EINVAL)
}

/// Whether `d` is the root of a mount in the table.
fn in_table(d: &Arc<Dentry>) -> bool {
    ns().table.lock().iter().any(|e| Arc::ptr_eq(&e.root, d))
}

/// MS_BIND: a new mount at `target` showing `source` (a directory or a
/// file, as the target is), with the source mount's flags; MS_REC copies
/// the mounts below the source too. An unbindable source is EINVAL.
pub fn bind(source: &Arc<Dentry>, target: &Arc<Dentry>, recursive: bool) -> Result<(), Errno> {
    let Some(src_mount) = source.mount() else { return Err(Errno::EINVAL) };
    if *src_mount.propagation.lock() == Propagation::Unbindable {
        return Err(Errno::EINVAL);
    }
    if source.is_dir() != target.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let root = clone_at(source, &src_mount)?;
    let new_mount = mount_at(&root)?;
    graft(target, new_mount, root.clone())?;
    if recursive {
        // The mounts below the source, in table order (a parent before
        // its children), each at the matching place of the copy.
        let below: Vec<(Arc<Dentry>, Arc<Dentry>)> = {
            let ns = ns();
            let table = ns.table.lock();
            table
                .iter()
                .filter(|e| e.parent.is_some() && !Arc::ptr_eq(&e.root, &root))
                .filter_map(|e| dentry::covered(&e.root).map(|mp| (e.root.clone(), mp)))
                .filter(|(_, mp)| dentry::is_below(mp, source))
                .collect()
        };
        for (sub_root, mountpoint) in below {
            let Some(sub_mount) = sub_root.mount_of_root().cloned() else { continue };
            if *sub_mount.propagation.lock() == Propagation::Unbindable {
                continue;
            }
            let (rel, reachable) = mountpoint.path_from(source);
            if !reachable {
                continue;
            }
            let cred = &crate::cred::ROOT;
            let Ok(copy_mp) = dentry::resolve(cred, &root, rel.trim_start_matches('/'), false).or_else(|e| {
                if rel == "/" {
                    Ok(root.clone())
                } else {
                    Err(e)
                }
            }) else {
                continue;
            };
            let sub_copy = clone_at(&sub_root, &sub_mount)?;
            let m = mount_at(&sub_copy)?;
            graft(&copy_mp, m, sub_copy)?;
        }
    }
    Ok(())
}

/// A new mount root over `dir` (in `mount`), sharing its file system and
/// taking its flags and peer group.
fn clone_at(dir: &Arc<Dentry>, mount: &Arc<Mount>) -> Result<Arc<Dentry>, Errno> {
    let root = dentry::view_of(dir);
    let m = Mount::new(mount.sb.clone(), mount.flags(), &mount.source, dir.path_in_mount(), true)?;
    *m.propagation.lock() = match *mount.propagation.lock() {
        // A bind of a shared mount joins its peer group.
        Propagation::Shared { group } => Propagation::Shared { group },
        Propagation::Slave { master, group } => Propagation::Slave { master, group },
        _ => Propagation::Private,
    };
    root.set_mount(m);
    dentry::note_bind(true);
    Ok(root)
}

/// MS_REMOUNT without MS_BIND: the file system's flags (read-only and
/// the others a remount may change) and the mount's flags both change,
/// the atime mode kept unless given. Going read-only while a file of the
/// file system is open for writing is EBUSY.
pub fn remount(target: &Arc<Dentry>, sb_flags: u64, mnt_flags: u32, flags: u64) -> Result<(), Errno> {
    let mount = mount_at(target)?;
    let mnt_flags = keep_atime(&mount, mnt_flags, flags);
    let going_ro = sb_flags & c::MS_RDONLY != 0 && !mount.sb.is_read_only();
    if going_ro && has_writers(|m| Arc::ptr_eq(&m.sb, &mount.sb)) {
        return Err(Errno::EBUSY);
    }
    if let Some(state) = &mount.sb.state {
        state.remount(sb_flags & c::MS_RDONLY != 0, sb_flags & c::MS_SYNCHRONOUS != 0)?;
    }
    let old = mount.sb.flags.load(Ordering::Relaxed);
    mount.sb.flags.store((old & !SB_RMT_MASK) | (sb_flags as u32 & SB_RMT_MASK), Ordering::Relaxed);
    set_mount_attributes(&mount, mnt_flags);
    Ok(())
}

/// MS_REMOUNT|MS_BIND: this mount's flags alone (do_reconfigure_mnt).
pub fn reconfigure(target: &Arc<Dentry>, mnt_flags: u32, flags: u64) -> Result<(), Errno> {
    let mount = mount_at(target)?;
    let mnt_flags = keep_atime(&mount, mnt_flags, flags);
    let want_ro = mnt_flags & MNT_READONLY != 0;
    if want_ro && !mount.is_read_only() && has_writers(|m| Arc::ptr_eq(m, &mount)) {
        return Err(Errno::EBUSY);
    }
    set_mount_attributes(&mount, mnt_flags);
    Ok(())
}

/// A remount keeps the atime mode unless one is given.
fn keep_atime(mount: &Mount, mnt_flags: u32, flags: u64) -> u32 {
    if flags & (c::MS_NOATIME | c::MS_NODIRATIME | c::MS_RELATIME | c::MS_STRICTATIME) == 0 {
        (mnt_flags & !MNT_ATIME_MASK) | (mount.flags() & MNT_ATIME_MASK)
    } else {
        mnt_flags
    }
}

fn set_mount_attributes(mount: &Mount, mnt_flags: u32) {
    mount.flags.store(mnt_flags, Ordering::Relaxed);
}

/// Whether a file open for writing lies on a mount `matches` picks.
fn has_writers(matches: impl Fn(&Arc<Mount>) -> bool) -> bool {
    crate::proc::all_processes().iter().any(|p| {
        p.files()
            .lock()
            .files()
            .any(|f| f.writable() && f.dentry.as_ref().and_then(|d| d.mount()).is_some_and(|m| matches(&m)))
    })
}

/// MS_SHARED, MS_PRIVATE, MS_SLAVE or MS_UNBINDABLE (exactly one, with
/// MS_REC and MS_SILENT allowed beside it) on the mount at `target`, and
/// with MS_REC on every mount below it.
pub fn change_type(target: &Arc<Dentry>, flags: u64) -> Result<(), Errno> {
    let mount = mount_at(target)?;
    let kind = flags & !(c::MS_REC | c::MS_SILENT);
    if kind & !(c::MS_SHARED | c::MS_PRIVATE | c::MS_SLAVE | c::MS_UNBINDABLE) != 0 || !kind.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    let mut targets = alloc::vec![mount.clone()];
    if flags & c::MS_REC != 0 {
        let ns = ns();
        let table = ns.table.lock();
        targets.try_reserve(table.len()).map_err(|_| Errno::ENOMEM)?;
        for e in table.iter() {
            if !Arc::ptr_eq(&e.mount, &mount) && descends_from(&table, &e.mount, &mount) {
                targets.push(e.mount.clone());
            }
        }
    }
    for m in targets {
        let old = *m.propagation.lock();
        let new = match kind {
            c::MS_SHARED => match old {
                Propagation::Shared { .. } => old,
                Propagation::Slave { master, group: None } => {
                    Propagation::Slave { master, group: Some(NEXT_GROUP_ID.fetch_add(1, Ordering::Relaxed)) }
                }
                Propagation::Slave { .. } => old,
                _ => Propagation::Shared { group: NEXT_GROUP_ID.fetch_add(1, Ordering::Relaxed) },
            },
            c::MS_SLAVE => match old {
                // A shared mount with peers follows its group; alone, it
                // has nobody to follow and becomes private.
                Propagation::Shared { group } if peers(group) > 1 => Propagation::Slave { master: group, group: None },
                Propagation::Slave { master, .. } => Propagation::Slave { master, group: None },
                _ => Propagation::Private,
            },
            c::MS_UNBINDABLE => Propagation::Unbindable,
            _ => Propagation::Private,
        };
        *m.propagation.lock() = new;
    }
    Ok(())
}

fn peers(group: u32) -> usize {
    ns().table.lock().iter().filter(|e| e.mount.propagation.lock().group() == Some(group)).count()
}

/// Whether `m` is mounted somewhere below `ancestor`.
fn descends_from(table: &[Entry], m: &Arc<Mount>, ancestor: &Arc<Mount>) -> bool {
    let mut cur = m.clone();
    for _ in 0..table.len() {
        let parent = table.iter().find(|e| Arc::ptr_eq(&e.mount, &cur)).and_then(|e| e.parent.clone());
        match parent {
            Some(p) if Arc::ptr_eq(&p, ancestor) => return true,
            Some(p) => cur = p,
            None => return false,
        }
    }
    false
}

/// MS_MOVE: the mount whose root is `source` moves to `target` (EINVAL
/// if `source` is not a mount's root, is the tree's root, or sits in a
/// shared mount; ELOOP if `target` lies inside it).
pub fn move_mount(source: &Arc<Dentry>, target: &Arc<Dentry>) -> Result<(), Errno> {
    mount_at(source)?;
    let parent = {
        let ns = ns();
        let table = ns.table.lock();
        let entry = table.iter().find(|e| Arc::ptr_eq(&e.root, source)).ok_or(Errno::EINVAL)?;
        entry.parent.clone().ok_or(Errno::EINVAL)?
    };
    if source.is_dir() != target.is_dir() {
        return Err(Errno::EINVAL);
    }
    if parent.propagation.lock().group().is_some() && matches!(*parent.propagation.lock(), Propagation::Shared { .. }) {
        return Err(Errno::EINVAL);
    }
    if dentry::is_below(target, source) {
        return Err(Errno::ELOOP);
    }
    dentry::detach(source);
    let new_parent = target.mount();
    {
        let ns = ns();
        let mut table = ns.table.lock();
        if let Some(i) = table.iter().position(|e| Arc::ptr_eq(&e.root, source)) {
            // A moved mount goes to the end of the list, as on Linux.
            let mut e = table.remove(i);
            e.parent = new_parent;
            table.push(e);
        }
    }
    dentry::attach(target, source);
    Ok(())
}

/// umount2: EINVAL unless `root` is a mount's root; MNT_EXPIRE (alone)
/// marks an unused mount the first time (EAGAIN) and unmounts it the
/// second; without MNT_DETACH a mount with mounts on it or `busy` is
/// EBUSY; MNT_DETACH takes it and everything below out of the tree at
/// once, whatever still uses them.
pub fn umount(root: &Arc<Dentry>, flags: u32, busy: impl Fn(&Arc<Dentry>) -> bool) -> Result<(), Errno> {
    let mount = mount_at(root)?;
    if !in_table(root) || dentry::covered(root).is_none() {
        return Err(Errno::EINVAL);
    }
    let detach = flags & c::MNT_DETACH != 0;
    if flags & c::MNT_EXPIRE != 0 {
        if flags & (c::MNT_FORCE | c::MNT_DETACH) != 0 {
            return Err(Errno::EINVAL);
        }
        if has_children(&mount) || busy(root) {
            return Err(Errno::EBUSY);
        }
        if !mount.expiry_mark.swap(true, Ordering::Relaxed) {
            return Err(Errno::EAGAIN);
        }
    }
    if !detach && (has_children(&mount) || busy(root)) {
        return Err(Errno::EBUSY);
    }
    // The mount and, for MNT_DETACH, every mount below it leave the table.
    let gone: Vec<Entry> = {
        let ns = ns();
        let mut table = ns.table.lock();
        let mut keep = Vec::new();
        keep.try_reserve(table.len()).map_err(|_| Errno::ENOMEM)?;
        let mut gone = Vec::new();
        gone.try_reserve(table.len()).map_err(|_| Errno::ENOMEM)?;
        let all = core::mem::take(&mut *table);
        for e in all {
            if Arc::ptr_eq(&e.mount, &mount) || (detach && descends_from_list(&gone, &keep, &e, &mount)) {
                gone.push(e);
            } else {
                keep.push(e);
            }
        }
        *table = keep;
        gone
    };
    dentry::detach(root);
    for _ in gone.iter().filter(|e| e.mount.bind) {
        dentry::note_bind(false);
    }
    drop(gone);
    Ok(())
}

/// Whether some mount in the table still shows the file system `sb`.
pub fn super_mounted(sb: &Arc<Super>) -> bool {
    ns().table.lock().iter().any(|e| Arc::ptr_eq(&e.mount.sb, sb))
}

/// Whether mounts are mounted in `m` (they keep it busy).
fn has_children(m: &Arc<Mount>) -> bool {
    ns().table.lock().iter().any(|e| e.parent.as_ref().is_some_and(|p| Arc::ptr_eq(p, m)))
}

/// Whether the table entry `e` hangs below `top` (through the entries
/// already sorted into `gone` or `keep`).
fn descends_from_list(gone: &[Entry], keep: &[Entry], e: &Entry, top: &Arc<Mount>) -> bool {
    let mut parent = e.parent.clone();
    let mut steps = gone.len() + keep.len() + 1;
    while let Some(p) = parent {
        if Arc::ptr_eq(&p, top) {
            return true;
        }
        steps -= 1;
        if steps == 0 {
            return false;
        }
        parent = gone.iter().chain(keep.iter()).find(|x| Arc::ptr_eq(&x.mount, &p)).and_then(|x| x.parent.clone());
    }
    false
}

/// pivot_root's move (the checks are the caller's): the mount rooted at
/// `new_root` takes the place of the one rooted at `old_root` (the
/// caller's root), which goes to `put_old`.
pub fn pivot(new_root: &Arc<Dentry>, old_root: &Arc<Dentry>, put_old: &Arc<Dentry>) -> Result<(), Errno> {
    let Some(root_mp) = dentry::covered(old_root) else { return Err(Errno::EINVAL) };
    dentry::detach(new_root);
    dentry::detach(old_root);
    dentry::attach(put_old, old_root);
    dentry::attach(&root_mp, new_root);
    let ns = ns();
    let mut table = ns.table.lock();
    let new_parent_of_old = new_root.mount_of_root().cloned();
    let parent_of_new = root_mp.mount();
    for e in table.iter_mut() {
        if Arc::ptr_eq(&e.root, old_root) {
            e.parent = new_parent_of_old.clone();
        } else if Arc::ptr_eq(&e.root, new_root) {
            e.parent = parent_of_new.clone();
        }
    }
    Ok(())
}

/// Whether the mount rooted at `d` has a parent mount (is attached).
pub fn has_parent(d: &Arc<Dentry>) -> bool {
    ns().table.lock().iter().any(|e| Arc::ptr_eq(&e.root, d) && e.parent.is_some())
}

/// Whether `m` is shared (pivot_root refuses shared mounts).
pub fn is_shared(m: &Mount) -> bool {
    matches!(*m.propagation.lock(), Propagation::Shared { .. } | Propagation::Slave { group: Some(_), .. })
}

/// The parent mount of the mount rooted at `d`.
pub fn parent_of(d: &Arc<Dentry>) -> Option<Arc<Mount>> {
    ns().table.lock().iter().find(|e| Arc::ptr_eq(&e.root, d)).and_then(|e| e.parent.clone())
}

/// A read of `inode` through `d` records the access as the mount says
/// (`touch_atime`): never under MS_NOATIME (or MS_NODIRATIME for a
/// directory); under relatime (the default) only when the last access is
/// older than the last change or a day old; under MS_STRICTATIME always.
pub fn touch_atime(d: &Dentry, inode: &dyn super::Inode) {
    let Some(mount) = d.mount() else { return };
    let flags = mount.flags();
    if flags & MNT_NOATIME != 0 || mount.is_read_only() {
        return;
    }
    let m = inode.metadata();
    if flags & MNT_NODIRATIME != 0 && m.file_type() == super::inode::FileType::Directory {
        return;
    }
    let now = crate::clock::realtime_ns();
    if flags & MNT_RELATIME != 0
        && m.mtime < m.atime
        && m.ctime < m.atime
        && now.saturating_sub(m.atime) < 86_400 * 1_000_000_000
    {
        return;
    }
    if m.atime != now {
        inode.set_atime(now);
    }
}

/// Escapes what /proc/mounts cannot show raw (space, tab, newline,
/// backslash) as octal, as Linux's `mangle`.
fn mangle(s: &mut TryString, text: &str) -> core::fmt::Result {
    for ch in text.chars() {
        match ch {
            ' ' | '\t' | '\n' | '\\' => write!(s, "\\{:03o}", ch as u32)?,
            _ => s.write_char(ch)?,
        }
    }
    Ok(())
}

fn mnt_opts(s: &mut TryString, flags: u32) -> core::fmt::Result {
    for (bit, name) in [
        (MNT_NOSUID, ",nosuid"),
        (MNT_NODEV, ",nodev"),
        (MNT_NOEXEC, ",noexec"),
        (MNT_NOATIME, ",noatime"),
        (MNT_NODIRATIME, ",nodiratime"),
        (MNT_RELATIME, ",relatime"),
        (MNT_NOSYMFOLLOW, ",nosymfollow"),
    ] {
        if flags & bit != 0 {
            s.write_str(name)?;
        }
    }
    Ok(())
}

fn sb_opts(s: &mut TryString, sb: &Super) -> core::fmt::Result {
    let f = sb.flags.load(Ordering::Relaxed);
    for (bit, name) in
        [(SB_SYNCHRONOUS, ",sync"), (SB_DIRSYNC, ",dirsync"), (SB_MANDLOCK, ",mand"), (SB_LAZYTIME, ",lazytime")]
    {
        if f & bit != 0 {
            s.write_str(name)?;
        }
    }
    Ok(())
}

/// A mount as a process sees it: its root dentry, the mount it is
/// mounted in (None for the tree's root) and the path it shows at.
struct Visible {
    mount: Arc<Mount>,
    root: Arc<Dentry>,
    parent: Option<Arc<Mount>>,
    path: String,
}

/// The mounts `root` (a process's root) sees, in table order, with the
/// path each is mounted on as seen from there (as many as memory allows).
fn visible(root: &Arc<Dentry>) -> Vec<Visible> {
    let mut entries = Vec::new();
    {
        let ns = ns();
        let table = ns.table.lock();
        if entries.try_reserve(table.len()).is_err() {
            return entries;
        }
        for e in table.iter() {
            entries.push(Visible {
                mount: e.mount.clone(),
                root: e.root.clone(),
                parent: e.parent.clone(),
                path: String::new(),
            });
        }
    }
    entries.retain_mut(|v| {
        let (path, reachable) = v.root.path_from(root);
        v.path = path;
        reachable
    });
    entries
}

/// /proc/mounts (and /proc/<pid>/mounts) as `root` sees it.
pub fn mounts_text(root: &Arc<Dentry>) -> Result<String, Errno> {
    let mut s = TryString::new();
    let text = (|| -> core::fmt::Result {
        for Visible { mount: m, path, .. } in visible(root) {
            mangle(&mut s, &m.source)?;
            s.write_char(' ')?;
            mangle(&mut s, &path)?;
            write!(s, " {} {}", m.sb.fstype, if m.is_read_only() { "ro" } else { "rw" })?;
            sb_opts(&mut s, &m.sb)?;
            mnt_opts(&mut s, m.flags())?;
            s.write_str(&m.sb.options.lock())?;
            s.write_str(" 0 0\n")?;
        }
        Ok(())
    })();
    s.finish(text)
}

/// /proc/<pid>/mountinfo as `root` sees it.
pub fn mountinfo_text(root: &Arc<Dentry>) -> Result<String, Errno> {
    let mut s = TryString::new();
    let text = (|| -> core::fmt::Result {
        for Visible { mount: m, root: r, parent, path } in visible(root) {
            let dev = r.inode().metadata().dev;
            // The tree's root is its own parent.
            let parent_id = parent.map_or(m.id, |p| p.id);
            write!(s, "{} {} {}:{} ", m.id, parent_id, (dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & !0xff))?;
            mangle(&mut s, &m.root_path)?;
            s.write_char(' ')?;
            mangle(&mut s, &path)?;
            s.write_str(if m.flags() & MNT_READONLY != 0 { " ro" } else { " rw" })?;
            mnt_opts(&mut s, m.flags())?;
            match *m.propagation.lock() {
                Propagation::Shared { group } => write!(s, " shared:{group}")?,
                Propagation::Slave { master, group } => {
                    if let Some(g) = group {
                        write!(s, " shared:{g}")?;
                    }
                    write!(s, " master:{master}")?;
                }
                Propagation::Unbindable => s.write_str(" unbindable")?,
                Propagation::Private => {}
            }
            write!(s, " - {} ", m.sb.fstype)?;
            mangle(&mut s, &m.source)?;
            s.write_str(if m.sb.is_read_only() { " ro" } else { " rw" })?;
            sb_opts(&mut s, &m.sb)?;
            s.write_str(&m.sb.options.lock())?;
            s.write_char('\n')?;
        }
        Ok(())
    })();
    s.finish(text)
}
