//! Extended attributes and POSIX ACLs: the VFS rules of Linux's
//! `fs/xattr.c` and `fs/posix_acl.c`, and the store tmpfs keeps them in.
//!
//! A name belongs to a namespace by its prefix. `user.` attributes live
//! on regular files and directories only (EPERM to set one elsewhere,
//! ENODATA to read one) and follow the file's permission bits; `trusted.`
//! needs CAP_SYS_ADMIN (without it reads find nothing and listings skip
//! them); `security.` is open to read and needs CAP_SYS_ADMIN to change,
//! except `security.capability`, whose value is checked and needs
//! CAP_SETFCAP. `system.posix_acl_access` and `system.posix_acl_default`
//! are not stored as attributes: they are the file's ACLs, which take
//! part in permission checks (`fs::perm`), change with chmod, and are
//! inherited by new files (`inherit`); only the owner may set them.
//!
//! A file system says what it keeps through `Inode::xattrs` (none: every
//! call is EOPNOTSUPP, as for /proc and pipes). tmpfs keeps every
//! namespace and ACLs, as Debian's kernel (CONFIG_TMPFS_XATTR,
//! CONFIG_TMPFS_POSIX_ACL) and Linux 6.6+'s user attributes on tmpfs do;
//! sysfs keeps `security.` and `trusted.` but refuses to set `user.`, and
//! has no ACLs. The space attributes take is charged to their file
//! system (ENOSPC past it), as tmpfs charges them to its inode space.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::sync::SpinLock;
use kiln_util::acl;
use linux_abi::capability::{CAP_SETFCAP, CAP_SYS_ADMIN};
use linux_abi::errno::Errno;
use linux_abi::fs as x;

use super::inode::{FileType, Inode, Metadata};
use crate::cred::{Cred, MAY_READ, MAY_WRITE};

/// Which ACL of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AclKind {
    /// Decides access to the file.
    Access,
    /// A directory's, given to what is created in it.
    Default,
}

impl AclKind {
    fn of(name: &[u8]) -> Option<AclKind> {
        match name {
            n if n == x::XATTR_NAME_POSIX_ACL_ACCESS.as_bytes() => Some(AclKind::Access),
            n if n == x::XATTR_NAME_POSIX_ACL_DEFAULT.as_bytes() => Some(AclKind::Default),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            AclKind::Access => x::XATTR_NAME_POSIX_ACL_ACCESS,
            AclKind::Default => x::XATTR_NAME_POSIX_ACL_DEFAULT,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Namespace {
    Security,
    Trusted,
    User,
}

/// The namespace of an attribute name and whether the name is nothing
/// but the prefix. `system.` names other than the ACLs have no store.
fn namespace(name: &[u8]) -> Option<(Namespace, bool)> {
    for (prefix, ns) in [
        (x::XATTR_SECURITY_PREFIX, Namespace::Security),
        (x::XATTR_TRUSTED_PREFIX, Namespace::Trusted),
        (x::XATTR_USER_PREFIX, Namespace::User),
    ] {
        if let Some(rest) = name.strip_prefix(prefix.as_bytes()) {
            return Some((ns, rest.is_empty()));
        }
    }
    None
}

/// What a file system does with extended attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XattrKinds {
    /// `user.` attributes may be set (sysfs reads them, never sets).
    pub user_settable: bool,
    /// The file system has POSIX ACLs.
    pub posix_acl: bool,
}

impl XattrKinds {
    /// tmpfs on Debian's kernel: every namespace, and ACLs.
    pub const TMPFS: XattrKinds = XattrKinds { user_settable: true, posix_acl: true };
    /// sysfs (kernfs): `security.` and `trusted.`, no ACLs.
    pub const KERNFS: XattrKinds = XattrKinds { user_settable: false, posix_acl: false };
}

/// The space the attributes of one file system may take: tmpfs's inode
/// space, 1 KiB per inode it may hold.
pub struct XattrBudget {
    used: AtomicU64,
    limit: u64,
}

impl XattrBudget {
    pub const fn new(limit: u64) -> XattrBudget {
        XattrBudget { used: AtomicU64::new(0), limit }
    }

    fn take(&self, bytes: u64) -> Result<(), Errno> {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| u.checked_add(bytes).filter(|n| *n <= self.limit))
            .map(|_| ())
            .map_err(|_| Errno::ENOSPC)
    }

    fn give_back(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// What one attribute costs its file system (Linux's simple_xattr_space:
/// the entry, the name with its NUL, the value).
fn space(name: &[u8], value: &[u8]) -> u64 {
    (48 + name.len() + 1 + value.len()) as u64
}

/// What an inode that keeps attributes gives the VFS.
pub struct Xattrs<'a> {
    pub store: &'a XattrStore,
    pub budget: &'a XattrBudget,
    pub kinds: XattrKinds,
}

struct Entries {
    /// Sorted by name, as tmpfs lists them.
    named: Vec<(Vec<u8>, Vec<u8>)>,
    access_acl: Option<Vec<u8>>,
    default_acl: Option<Vec<u8>>,
}

/// The attributes and ACLs of one inode. Empty (no allocation) until the
/// first one is set.
pub struct XattrStore {
    entries: SpinLock<Option<Box<Entries>>>,
    /// Kept beside the entries so that permission checks and writes ask
    /// without the lock whether there is an access ACL or a
    /// `security.capability` to remove.
    has_access_acl: AtomicBool,
    has_caps: AtomicBool,
}

impl Default for XattrStore {
    fn default() -> Self {
        XattrStore::new()
    }
}

fn copy_of(data: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(data.len()).map_err(|_| Errno::ENOMEM)?;
    v.extend_from_slice(data);
    Ok(v)
}

/// Copies `value` into `buf`, or measures it when `buf` is empty.
fn copy_out(value: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(value.len());
    }
    let out = buf.get_mut(..value.len()).ok_or(Errno::ERANGE)?;
    out.copy_from_slice(value);
    Ok(value.len())
}

impl XattrStore {
    pub const fn new() -> XattrStore {
        XattrStore {
            entries: SpinLock::new(None),
            has_access_acl: AtomicBool::new(false),
            has_caps: AtomicBool::new(false),
        }
    }

    fn get(&self, name: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
        let entries = self.entries.lock();
        let e = entries.as_ref().ok_or(Errno::ENODATA)?;
        let i = e.named.binary_search_by(|(n, _)| n.as_slice().cmp(name)).map_err(|_| Errno::ENODATA)?;
        copy_out(&e.named[i].1, buf)
    }

    /// Sets `name` to `value`, or removes it (`None`), as XATTR_CREATE
    /// (EEXIST if present) and XATTR_REPLACE (ENODATA if absent) say.
    fn set(&self, name: &[u8], value: Option<&[u8]>, flags: u32, budget: &XattrBudget) -> Result<(), Errno> {
        // Everything that allocates happens before the lock.
        let new = match value {
            Some(v) => {
                budget.take(space(name, v))?;
                match (copy_of(name), copy_of(v)) {
                    (Ok(n), Ok(v)) => Some((n, v)),
                    _ => {
                        budget.give_back(space(name, v));
                        return Err(Errno::ENOMEM);
                    }
                }
            }
            None => None,
        };
        let undo = |new: &Option<(Vec<u8>, Vec<u8>)>| {
            if let Some((n, v)) = new {
                budget.give_back(space(n, v));
            }
        };
        // The entries, once made, stay: only a first attribute needs them.
        let fresh = if new.is_some() && self.entries.lock().is_none() {
            match try_box_entries() {
                Ok(b) => Some(b),
                Err(e) => {
                    undo(&new);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let mut guard = self.entries.lock();
        let found = guard.as_ref().and_then(|e| e.named.binary_search_by(|(n, _)| n.as_slice().cmp(name)).ok());
        if found.is_some() && flags & x::XATTR_CREATE != 0 {
            undo(&new);
            return Err(Errno::EEXIST);
        }
        if found.is_none() && (flags & x::XATTR_REPLACE != 0 || new.is_none()) {
            undo(&new);
            return Err(Errno::ENODATA);
        }
        let old = match (found, new) {
            (Some(i), Some(entry)) => {
                let e = guard.as_mut().expect("found in entries");
                Some(core::mem::replace(&mut e.named[i], entry))
            }
            (Some(i), None) => Some(guard.as_mut().expect("found in entries").named.remove(i)),
            (None, Some(entry)) => {
                if guard.is_none() {
                    *guard = fresh;
                }
                let Some(e) = guard.as_mut() else {
                    drop(guard);
                    undo(&Some(entry));
                    return Err(Errno::ENOMEM);
                };
                if e.named.try_reserve(1).is_err() {
                    drop(guard);
                    undo(&Some(entry));
                    return Err(Errno::ENOMEM);
                }
                let at = e.named.binary_search_by(|(n, _)| n.as_slice().cmp(name)).unwrap_or_else(|i| i);
                e.named.insert(at, entry);
                None
            }
            (None, None) => None,
        };
        let caps = guard.as_ref().is_some_and(|e| e.named.iter().any(|(n, _)| n == x::XATTR_NAME_CAPS.as_bytes()));
        self.has_caps.store(caps, Ordering::Relaxed);
        drop(guard);
        if let Some((n, v)) = old {
            budget.give_back(space(&n, &v));
        }
        Ok(())
    }

    /// Calls `f` with each name: the ACLs first, then the attributes in
    /// descending name order (Linux 6.18's tmpfs keeps them in a tree it
    /// walks that way; 6.1 listed the newest first), leaving out
    /// `trusted.` ones unless `trusted`.
    fn list(&self, trusted: bool, f: &mut dyn FnMut(&[u8]) -> Result<(), Errno>) -> Result<(), Errno> {
        let entries = self.entries.lock();
        let Some(e) = entries.as_ref() else { return Ok(()) };
        if e.access_acl.is_some() {
            f(AclKind::Access.name().as_bytes())?;
        }
        if e.default_acl.is_some() {
            f(AclKind::Default.name().as_bytes())?;
        }
        for (name, _) in e.named.iter().rev() {
            if !trusted && name.starts_with(x::XATTR_TRUSTED_PREFIX.as_bytes()) {
                continue;
            }
            f(name)?;
        }
        Ok(())
    }

    /// Runs `f` on an ACL (the lock is held: `f` must not sleep).
    pub fn with_acl<R>(&self, kind: AclKind, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        if kind == AclKind::Access && !self.has_access_acl.load(Ordering::Acquire) {
            return f(None);
        }
        let entries = self.entries.lock();
        let acl = entries.as_ref().and_then(|e| match kind {
            AclKind::Access => e.access_acl.as_deref(),
            AclKind::Default => e.default_acl.as_deref(),
        });
        f(acl)
    }

    /// Replaces an ACL (`None` removes it).
    fn set_acl(&self, kind: AclKind, acl: Option<Vec<u8>>) -> Result<(), Errno> {
        let fresh = if acl.is_some() { try_box_entries().ok() } else { None };
        let mut guard = self.entries.lock();
        if guard.is_none() {
            if acl.is_none() {
                return Ok(());
            }
            *guard = Some(fresh.ok_or(Errno::ENOMEM)?);
        }
        let e = guard.as_mut().expect("entries present");
        let slot = match kind {
            AclKind::Access => &mut e.access_acl,
            AclKind::Default => &mut e.default_acl,
        };
        let old = core::mem::replace(slot, acl);
        if kind == AclKind::Access {
            self.has_access_acl.store(e.access_acl.is_some(), Ordering::Release);
        }
        drop(guard);
        drop(old);
        Ok(())
    }

    /// Gives the space of every attribute back to `budget` (the inode is
    /// going away).
    pub fn release(&self, budget: &XattrBudget) {
        let entries = self.entries.lock();
        if let Some(e) = entries.as_ref() {
            budget.give_back(e.named.iter().map(|(n, v)| space(n, v)).sum());
        }
    }

    /// Rewrites the access ACL after a chmod (`posix_acl_chmod`).
    fn chmod_acl(&self, mode: u32) -> Result<(), Errno> {
        if !self.has_access_acl.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut guard = self.entries.lock();
        match guard.as_mut().and_then(|e| e.access_acl.as_mut()) {
            Some(a) => acl::chmod_masq(a, mode),
            None => Ok(()),
        }
    }
}

fn try_box_entries() -> Result<Box<Entries>, Errno> {
    crate::mm::try_box(Entries { named: Vec::new(), access_acl: None, default_acl: None }).map_err(|_| Errno::ENOMEM)
}

/// What an xattr call acts on: an inode, or an open file without one (a
/// pipe), whose metadata is all there is and which keeps nothing.
pub struct Target<'a> {
    pub inode: Option<&'a dyn Inode>,
    pub meta: Metadata,
}

impl Target<'_> {
    fn xattrs(&self) -> Option<Xattrs<'_>> {
        self.inode.and_then(|i| i.xattrs())
    }

    fn kind(&self) -> FileType {
        self.meta.file_type()
    }

    fn permission(&self, cred: &Cred, mask: u32) -> Result<(), Errno> {
        match self.inode {
            Some(i) => super::perm::inode_permission(cred, i, mask),
            None if cred.permission(super::perm::attrs(&self.meta), mask) => Ok(()),
            None => Err(Errno::EACCES),
        }
    }

    /// ctime moves when attributes or ACLs change.
    fn touch(&self) {
        if let Some(i) = self.inode {
            let _ = i.set_times(None, None);
        }
    }
}

/// `xattr_permission`: who may read (`MAY_READ`) or write an attribute.
fn xattr_permission(cred: &Cred, t: &Target, name: &[u8], mask: u32) -> Result<(), Errno> {
    let write = mask & MAY_WRITE != 0;
    if name.starts_with(x::XATTR_SECURITY_PREFIX.as_bytes()) || name.starts_with(x::XATTR_SYSTEM_PREFIX.as_bytes()) {
        return Ok(());
    }
    let refuse = if write { Errno::EPERM } else { Errno::ENODATA };
    if name.starts_with(x::XATTR_TRUSTED_PREFIX.as_bytes()) {
        return if cred.capable(CAP_SYS_ADMIN) { Ok(()) } else { Err(refuse) };
    }
    if name.starts_with(x::XATTR_USER_PREFIX.as_bytes()) {
        match t.kind() {
            FileType::Regular => {}
            FileType::Directory => {
                // A sticky directory's attributes are its owner's.
                if write
                    && t.meta.mode & kiln_util::cred::S_ISVTX != 0
                    && !cred.owns_or_capable(super::perm::attrs(&t.meta))
                {
                    return Err(Errno::EPERM);
                }
            }
            _ => return Err(refuse),
        }
    }
    t.permission(cred, mask)
}

/// The store for `name`, as Linux finds a handler: none when the file
/// system keeps no attributes or the namespace is unknown (EOPNOTSUPP),
/// EINVAL for a bare prefix.
fn resolve<'a>(t: &'a Target, name: &[u8]) -> Result<(Xattrs<'a>, Namespace), Errno> {
    let store = t.xattrs().ok_or(Errno::EOPNOTSUPP)?;
    let (ns, bare) = namespace(name).ok_or(Errno::EOPNOTSUPP)?;
    if bare {
        return Err(Errno::EINVAL);
    }
    Ok((store, ns))
}

/// The file system's own attribute store, when it keeps one (ext4): the
/// name must be in a known namespace and more than a bare prefix.
fn disk_store<'a>(t: &'a Target, name: &[u8]) -> Result<Option<&'a dyn super::inode::DiskXattrs>, Errno> {
    let Some(disk) = t.inode.and_then(|i| i.disk_xattrs()) else { return Ok(None) };
    let (_, bare) = namespace(name).ok_or(Errno::EOPNOTSUPP)?;
    if bare {
        return Err(Errno::EINVAL);
    }
    Ok(Some(disk))
}

/// The ACLs of the target, if its file system has them: EOPNOTSUPP
/// otherwise, and for symlinks.
fn acl_store<'a>(t: &'a Target) -> Result<Xattrs<'a>, Errno> {
    let store = t.xattrs().filter(|s| s.kinds.posix_acl).ok_or(Errno::EOPNOTSUPP)?;
    if t.kind() == FileType::Symlink {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(store)
}

fn is_caps(name: &[u8]) -> bool {
    name == x::XATTR_NAME_CAPS.as_bytes()
}

/// The capability checks on `security.` (`cap_inode_setxattr`,
/// `cap_inode_removexattr`); `security.capability` is checked with its
/// value when set (`convert_caps`), with CAP_SETFCAP when removed.
fn security_check(cred: &Cred, name: &[u8], removing: bool) -> Result<(), Errno> {
    if !name.starts_with(x::XATTR_SECURITY_PREFIX.as_bytes()) {
        return Ok(());
    }
    let cap = if is_caps(name) {
        if !removing {
            return Ok(());
        }
        CAP_SETFCAP
    } else {
        CAP_SYS_ADMIN
    };
    if cred.capable(cap) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// `cap_convert_nscap`: a file-capability value must be a version 2 or
/// 3 record of its exact size (EINVAL) set with CAP_SETFCAP (EPERM). A
/// version 3 record whose root is uid 0 is what version 2 says, and is
/// stored (and read back) as one; others keep their root id.
fn convert_caps(cred: &Cred, value: &[u8]) -> Result<Option<Vec<u8>>, Errno> {
    let magic = u32::from_le_bytes(value.get(..4).and_then(|m| m.try_into().ok()).ok_or(Errno::EINVAL)?);
    let revision = magic & x::VFS_CAP_REVISION_MASK;
    let v2 = value.len() == x::XATTR_CAPS_SZ_2 && revision == x::VFS_CAP_REVISION_2;
    let v3 = value.len() == x::XATTR_CAPS_SZ_3 && revision == x::VFS_CAP_REVISION_3;
    if !v2 && !v3 {
        return Err(Errno::EINVAL);
    }
    if !cred.capable(CAP_SETFCAP) {
        return Err(Errno::EPERM);
    }
    if v2 {
        return Ok(None);
    }
    let rootid = u32::from_le_bytes([value[20], value[21], value[22], value[23]]);
    let mut out = copy_of(value)?;
    let magic =
        if rootid == 0 { x::VFS_CAP_REVISION_2 } else { x::VFS_CAP_REVISION_3 } | (magic & x::VFS_CAP_FLAGS_EFFECTIVE);
    out[..4].copy_from_slice(&magic.to_le_bytes());
    if rootid == 0 {
        out.truncate(x::XATTR_CAPS_SZ_2);
    }
    Ok(Some(out))
}

/// getxattr: the value of `name` copied into `buf` (or its size when
/// `buf` is empty); ERANGE when `buf` is too small.
pub fn get(cred: &Cred, t: &Target, name: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
    if let Some(kind) = AclKind::of(name) {
        // Reading an ACL needs no permission (Linux's vfs_get_acl).
        let store = acl_store(t)?;
        return store.store.with_acl(kind, |acl| copy_out(acl.ok_or(Errno::ENODATA)?, buf));
    }
    xattr_permission(cred, t, name, MAY_READ)?;
    if let Some(disk) = disk_store(t, name)? {
        return copy_out(&disk.get(name)?, buf);
    }
    let (store, _) = resolve(t, name)?;
    if is_caps(name) {
        // The capability module reads its attribute only when it is a
        // valid record (cap_inode_getsecurity).
        let mut rec = [0u8; x::XATTR_CAPS_SZ_3];
        let n = store.store.get(name, &mut rec).map_err(|e| if e == Errno::ERANGE { Errno::EINVAL } else { e })?;
        let magic = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) & x::VFS_CAP_REVISION_MASK;
        if !(n == x::XATTR_CAPS_SZ_2 && magic == x::VFS_CAP_REVISION_2
            || n == x::XATTR_CAPS_SZ_3 && magic == x::VFS_CAP_REVISION_3)
        {
            return Err(Errno::EINVAL);
        }
        return copy_out(&rec[..n], buf);
    }
    store.store.get(name, buf)
}

/// setxattr with a value (an empty one is a value too), as XATTR_CREATE
/// and XATTR_REPLACE say. The caller has checked the flags, the name's
/// length and the value's size, and that the mount is writable.
pub fn set(cred: &Cred, t: &Target, name: &[u8], value: &[u8], flags: u32) -> Result<(), Errno> {
    if let Some(kind) = AclKind::of(name) {
        // ACLs ignore XATTR_CREATE/REPLACE; an empty value removes one.
        return set_acl(cred, t, kind, value);
    }
    let converted = if is_caps(name) && !value.is_empty() { convert_caps(cred, value)? } else { None };
    let value = converted.as_deref().unwrap_or(value);
    xattr_permission(cred, t, name, MAY_WRITE)?;
    security_check(cred, name, false)?;
    if let Some(disk) = disk_store(t, name)? {
        return disk.set(name, value, flags);
    }
    let (store, ns) = resolve(t, name)?;
    if ns == Namespace::User && !store.kinds.user_settable {
        return Err(Errno::EOPNOTSUPP);
    }
    store.store.set(name, Some(value), flags, store.budget)?;
    t.touch();
    Ok(())
}

/// removexattr: ENODATA when there is no such attribute; removing an
/// ACL that is not there succeeds, as on Linux.
pub fn remove(cred: &Cred, t: &Target, name: &[u8]) -> Result<(), Errno> {
    if let Some(kind) = AclKind::of(name) {
        return set_acl(cred, t, kind, &[]);
    }
    xattr_permission(cred, t, name, MAY_WRITE)?;
    security_check(cred, name, true)?;
    if let Some(disk) = disk_store(t, name)? {
        return disk.remove(name);
    }
    let (store, ns) = resolve(t, name)?;
    if ns == Namespace::User && !store.kinds.user_settable {
        return Err(Errno::EOPNOTSUPP);
    }
    store.store.set(name, None, x::XATTR_REPLACE, store.budget)?;
    t.touch();
    Ok(())
}

/// listxattr: the names, each NUL-terminated, copied into `buf` (or
/// their total size when `buf` is empty); ERANGE when `buf` is too
/// small. A file system without attributes lists nothing.
pub fn list(cred: &Cred, t: &Target, buf: &mut [u8]) -> Result<usize, Errno> {
    let measure = buf.is_empty();
    if let Some(disk) = t.inode.and_then(|i| i.disk_xattrs()) {
        let mut at = 0usize;
        let trusted = cred.capable(CAP_SYS_ADMIN);
        for name in disk.list()? {
            if !trusted && name.starts_with(x::XATTR_TRUSTED_PREFIX.as_bytes()) {
                continue;
            }
            let len = name.len() + 1;
            if !measure {
                let out = buf.get_mut(at..at + len).ok_or(Errno::ERANGE)?;
                out[..name.len()].copy_from_slice(&name);
                out[name.len()] = 0;
            }
            at += len;
        }
        return Ok(at);
    }
    let Some(store) = t.xattrs() else { return Ok(0) };
    let mut at = 0usize;
    store.store.list(cred.capable(CAP_SYS_ADMIN), &mut |name: &[u8]| {
        let len = name.len() + 1;
        if !measure {
            let out = buf.get_mut(at..at + len).ok_or(Errno::ERANGE)?;
            out[..name.len()].copy_from_slice(name);
            out[name.len()] = 0;
        }
        at += len;
        Ok(())
    })?;
    Ok(at)
}

/// Sets or removes (`value` empty) an ACL (`vfs_set_acl`): the value is
/// parsed first (EINVAL, EOPNOTSUPP for another version), then the file
/// system must have ACLs (EOPNOTSUPP), a default ACL fits only a
/// directory (EACCES; removing one from a file is a no-op), only the
/// owner or CAP_FOWNER may set one (EPERM), and it must be valid
/// (EINVAL). An access ACL sets the mode's permission bits, and is
/// dropped when the mode says all it says; the set-group-ID bit goes for
/// a caller outside the file's group without CAP_FSETID.
fn set_acl(cred: &Cred, t: &Target, kind: AclKind, value: &[u8]) -> Result<(), Errno> {
    let mut acl = None;
    if !value.is_empty() {
        let mut v = copy_of(value)?;
        if acl::from_xattr(&mut v)? {
            acl = Some(v);
        }
    }
    let store = acl_store(t)?;
    let inode = t.inode.ok_or(Errno::EOPNOTSUPP)?;
    if kind == AclKind::Default && t.kind() != FileType::Directory {
        return if acl.is_some() { Err(Errno::EACCES) } else { Ok(()) };
    }
    let attrs = super::perm::attrs(&t.meta);
    if !cred.owns_or_capable(attrs) {
        return Err(Errno::EPERM);
    }
    if let Some(a) = &acl {
        acl::valid(a)?;
    }
    if kind == AclKind::Access {
        let (mut mode, keep) = match &acl {
            Some(a) => acl::equiv_mode(a, t.meta.mode),
            None => (t.meta.mode, false),
        };
        if !keep {
            acl = None;
        }
        if !cred.in_group_or_capable(t.meta.gid) {
            mode &= !crate::cred::S_ISGID;
        }
        inode.set_mode(mode & 0o7777)?;
    }
    store.store.set_acl(kind, acl)?;
    t.touch();
    Ok(())
}

/// After a chmod: the access ACL's owner, group-class and other entries
/// follow the new mode (`posix_acl_chmod`).
pub fn chmod(inode: &dyn Inode, mode: u32) -> Result<(), Errno> {
    match inode.xattrs() {
        Some(s) if s.kinds.posix_acl => s.store.chmod_acl(mode),
        _ => Ok(()),
    }
}

/// Whether `inode` has an access ACL (so permission checks must read it).
pub fn has_access_acl(inode: &dyn Inode) -> bool {
    inode.xattrs().is_some_and(|s| s.store.has_access_acl.load(Ordering::Acquire))
}

/// A write, truncate or chown removes a file's capabilities
/// (`security_inode_killpriv`), whoever makes it.
pub fn kill_priv(inode: &dyn Inode) {
    if let Some(s) = inode.xattrs() {
        if s.store.has_caps.load(Ordering::Relaxed) {
            let _ = s.store.set(x::XATTR_NAME_CAPS.as_bytes(), None, x::XATTR_REPLACE, s.budget);
        }
    }
}

/// The ACLs a new inode gets from its directory.
#[derive(Default)]
pub struct Inherited {
    access: Option<Vec<u8>>,
    default: Option<Vec<u8>>,
}

/// A new inode's permission bits and ACLs (`posix_acl_create`): in a
/// directory with a default ACL, the umask does not apply; the ACL and
/// the requested mode limit each other instead, the result becomes the
/// new file's access ACL (unless the mode says it all), and a new
/// directory inherits the default ACL itself. Elsewhere the umask
/// applies. `mode` carries the type bits.
pub fn inherit(dir: &dyn Inode, mode: u32, umask: u32) -> Result<(u32, Inherited), Errno> {
    let default = match dir.xattrs() {
        Some(s) if s.kinds.posix_acl && mode & super::inode::S_IFMT != super::inode::S_IFLNK => {
            s.store.with_acl(AclKind::Default, |a| a.map(copy_of)).transpose()?
        }
        _ => None,
    };
    let Some(default) = default else {
        return Ok((mode & !(umask & 0o777), Inherited::default()));
    };
    let mut access = copy_of(&default)?;
    let (mode, keep) = acl::create_masq(&mut access, mode)?;
    let is_dir = mode & super::inode::S_IFMT == super::inode::S_IFDIR;
    Ok((mode, Inherited { access: keep.then_some(access), default: is_dir.then_some(default) }))
}

/// Gives a new inode the ACLs `inherit` computed.
pub fn apply_inherited(inode: &dyn Inode, inherited: Inherited) -> Result<(), Errno> {
    let Some(s) = inode.xattrs() else { return Ok(()) };
    if inherited.access.is_some() {
        s.store.set_acl(AclKind::Access, inherited.access)?;
    }
    if inherited.default.is_some() {
        s.store.set_acl(AclKind::Default, inherited.default)?;
    }
    Ok(())
}
