//! Permission checks of the VFS: the one place that decides, with the
//! caller's credentials, whether it may search, read, write or execute an
//! inode, create or remove a name in a directory, or change a file's
//! mode, owner or times, and what a new file's owner and mode are.
//!
//! The discretionary rules are Linux's, in `kiln_util::cred`
//! (`generic_permission`, the sticky bit, set-id bits); this module adds
//! what only the VFS knows, in the order Linux's namei.c and attr.c check
//! it: read-only mounts (EROFS before the mode bits, for files,
//! directories and symlinks), removed directories, file types, nodev and
//! noexec mounts.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::dentry::Dentry;
use super::inode::{FileType, Inode, Metadata, Owner};
use crate::cred::{Cred, FileAttrs, MAY_EXEC, MAY_READ, MAY_WRITE};

pub fn attrs(m: &Metadata) -> FileAttrs {
    FileAttrs { mode: m.mode, uid: m.uid, gid: m.gid }
}

/// Whether `cred` may access `inode` as `mask` (`MAY_*`) by its mode
/// bits and the capabilities that override them (`generic_permission`).
pub fn inode_permission(cred: &Cred, inode: &dyn Inode, mask: u32) -> Result<(), Errno> {
    if mask == 0 {
        return Ok(());
    }
    // CAP_DAC_OVERRIDE passes everything but execute, without reading the
    // metadata (root's opens stay as cheap as before).
    if mask & MAY_EXEC == 0 && cred.overrides(mask, false) {
        return Ok(());
    }
    if allows(cred, inode, &inode.metadata(), mask) || inode.grants_caller(mask) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// The mode bits, or the access ACL when the inode has one, and the
/// capabilities that override them.
fn allows(cred: &Cred, inode: &dyn Inode, m: &Metadata, mask: u32) -> bool {
    let a = attrs(m);
    // The owner's class never reads the ACL, nor does a mode without
    // group bits.
    if cred.fsuid == m.uid || m.mode & 0o070 == 0 || !super::xattr::has_access_acl(inode) {
        return cred.permission(a, mask);
    }
    match inode.xattrs() {
        Some(x) => x.store.with_acl(super::xattr::AclKind::Access, |acl| cred.permission_acl(a, acl, mask)),
        None => cred.permission(a, mask),
    }
}

/// Search permission on a directory a path walks through (`may_lookup`).
pub fn may_search(cred: &Cred, dir: &Dentry) -> Result<(), Errno> {
    if cred.overrides(MAY_EXEC, true) {
        return Ok(());
    }
    inode_permission(cred, dir.inode().as_ref(), MAY_EXEC)
}

fn read_only_applies(d: &Arc<Dentry>) -> bool {
    matches!(d.inode().file_type(), FileType::Regular | FileType::Directory | FileType::Symlink) && d.is_read_only()
}

/// `inode_permission` with the mount: writing to a file, directory or
/// symlink of a read-only mount is EROFS whatever the mode says.
pub fn permission(cred: &Cred, d: &Arc<Dentry>, mask: u32) -> Result<(), Errno> {
    if mask & MAY_WRITE != 0 && read_only_applies(d) {
        return Err(Errno::EROFS);
    }
    inode_permission(cred, d.inode().as_ref(), mask)
}

/// May `cred` add a name to `dir` (`may_create`): not in a removed
/// directory (ENOENT), and with write and search permission on it.
pub fn may_create(cred: &Cred, dir: &Arc<Dentry>) -> Result<(), Errno> {
    let m = dir.inode().metadata();
    if m.nlink == 0 {
        return Err(Errno::ENOENT);
    }
    if cred.overrides(MAY_WRITE | MAY_EXEC, true) || allows(cred, dir.inode().as_ref(), &m, MAY_WRITE | MAY_EXEC) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// May `cred` remove (or rename away) `victim` from `dir` (`may_delete`):
/// write and search permission on the directory (EACCES), the sticky bit
/// (EPERM), then the type the call wants (ENOTDIR for rmdir of a
/// non-directory, EISDIR for unlink of a directory), then a removed
/// directory (ENOENT).
pub fn may_delete(cred: &Cred, dir: &Arc<Dentry>, victim: &Arc<Dentry>, want_dir: bool) -> Result<(), Errno> {
    let dm = dir.inode().metadata();
    if !(cred.overrides(MAY_WRITE | MAY_EXEC, true) || allows(cred, dir.inode().as_ref(), &dm, MAY_WRITE | MAY_EXEC)) {
        return Err(Errno::EACCES);
    }
    let vm = victim.inode().metadata();
    if cred.sticky_forbids(attrs(&dm), attrs(&vm)) {
        return Err(Errno::EPERM);
    }
    let is_dir = vm.file_type() == FileType::Directory;
    if want_dir && !is_dir {
        return Err(Errno::ENOTDIR);
    }
    if !want_dir && is_dir {
        return Err(Errno::EISDIR);
    }
    if dm.nlink == 0 {
        return Err(Errno::ENOENT);
    }
    Ok(())
}

/// The owner and mode of a new inode in `dir` for the requested mode
/// (type bits included, umask applied): see `Cred::new_file`.
pub fn new_inode(cred: &Cred, dir: &Arc<Dentry>, mode: u32) -> (u32, Owner) {
    let (uid, gid, mode) = cred.new_file(attrs(&dir.inode().metadata()), mode);
    (mode, Owner { uid, gid })
}

/// Creates `name` in `dir` (`mode` carries the type and the requested
/// permission bits): the umask or the directory's default ACL decides
/// the permission bits (`xattr::inherit`), `new_inode` the owner and the
/// set-group-ID bit, and the new inode gets the ACLs it inherits.
pub fn create(
    cred: &Cred,
    dir: &Arc<Dentry>,
    name: &str,
    mode: u32,
    umask: u32,
    rdev: u64,
) -> Result<Arc<dyn Inode>, Errno> {
    let (mode, inherited) = super::xattr::inherit(dir.inode().as_ref(), mode, umask)?;
    let (mode, owner) = new_inode(cred, dir, mode);
    let inode = dir.inode().create(name, mode, rdev, owner)?;
    super::xattr::apply_inherited(inode.as_ref(), inherited)?;
    Ok(inode)
}

/// The checks of an open (`may_open`) on `d`, for the access in `mask`
/// (MAY_READ, MAY_WRITE; MAY_EXEC for execve): what the file's type
/// allows, nodev and noexec mounts, then the permission itself, then
/// O_NOATIME, which only the owner may ask for.
pub fn may_open(cred: &Cred, d: &Arc<Dentry>, mask: u32, flags: u32) -> Result<(), Errno> {
    match d.inode().file_type() {
        FileType::Symlink => return Err(Errno::ELOOP),
        FileType::Directory => {
            if mask & MAY_WRITE != 0 {
                return Err(Errno::EISDIR);
            }
            if mask & MAY_EXEC != 0 {
                return Err(Errno::EACCES);
            }
        }
        FileType::CharDevice | FileType::BlockDevice if d.no_dev() => return Err(Errno::EACCES),
        FileType::CharDevice | FileType::BlockDevice | FileType::Fifo | FileType::Socket => {
            if mask & MAY_EXEC != 0 {
                return Err(Errno::EACCES);
            }
        }
        FileType::Regular => {
            if mask & MAY_EXEC != 0 && d.no_exec() {
                return Err(Errno::EACCES);
            }
        }
    }
    permission(cred, d, mask)?;
    if flags & c::O_NOATIME != 0 && !cred.owns_or_capable(attrs(&d.inode().metadata())) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// chmod: the owner or CAP_FOWNER (EPERM); a caller outside the file's
/// group without CAP_FSETID cannot set the set-group-ID bit.
pub fn chmod(cred: &Cred, inode: &dyn Inode, mode: u32) -> Result<(), Errno> {
    let mode = cred.chmod_mode(attrs(&inode.metadata()), mode)?;
    inode.set_mode(mode)?;
    // An access ACL follows the new mode.
    super::xattr::chmod(inode, mode)
}

/// chown: changing the owner needs CAP_CHOWN, the group ownership and
/// membership (or CAP_CHOWN). A non-directory loses its set-user-ID bit
/// (and set-group-ID as `Cred::setid_bits_chown_drops` says), which is a
/// mode change the caller must be allowed (so chown(-1, -1) of a set-id
/// file by someone else is EPERM, as on Linux).
pub fn chown(cred: &Cred, inode: &dyn Inode, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
    let m = inode.metadata();
    let a = attrs(&m);
    if !cred.may_chown(a, uid, gid) {
        return Err(Errno::EPERM);
    }
    let mut drop = 0;
    if m.file_type() != FileType::Directory {
        drop = cred.setid_bits_chown_drops(a);
        if drop != 0 {
            if !cred.owns_or_capable(a) {
                return Err(Errno::EPERM);
            }
            // The mode change re-checks the set-group-ID bit against the
            // new group.
            if !cred.in_group_or_capable(gid.unwrap_or(m.gid)) {
                drop |= m.mode & crate::cred::S_ISGID;
            }
        }
    }
    inode.set_owner(uid, gid)?;
    if m.file_type() != FileType::Directory {
        super::xattr::kill_priv(inode);
    }
    if drop != 0 {
        inode.set_mode(m.mode & 0o7777 & !drop)?;
    }
    Ok(())
}

/// How utimensat sets the times.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeChange {
    /// Both to now (times NULL or both UTIME_NOW): the owner, CAP_FOWNER
    /// or anyone who may write the file.
    Touch,
    /// Explicit values: the owner or CAP_FOWNER only.
    Explicit,
}

pub fn may_set_times(cred: &Cred, inode: &dyn Inode, how: TimeChange) -> Result<(), Errno> {
    let m = inode.metadata();
    if cred.owns_or_capable(attrs(&m)) {
        return Ok(());
    }
    match how {
        TimeChange::Explicit => Err(Errno::EPERM),
        TimeChange::Touch => {
            if cred.permission(attrs(&m), MAY_WRITE) {
                Ok(())
            } else {
                Err(Errno::EACCES)
            }
        }
    }
}

/// A write or truncate by `cred` clears the set-user-ID bit of a regular
/// file, and set-group-ID as Linux does (`file_remove_privs`), unless the
/// caller holds CAP_FSETID, and removes its file capabilities. `cred` is asked for only when the file has
/// such a bit.
pub fn clear_setid_on_write(inode: &dyn Inode, cred: impl FnOnce() -> Arc<Cred>) -> Result<(), Errno> {
    let m = inode.metadata();
    // File capabilities go with any write, a privileged one too.
    if m.file_type() == FileType::Regular {
        super::xattr::kill_priv(inode);
    }
    if m.mode & 0o6000 == 0 || m.file_type() != FileType::Regular {
        return Ok(());
    }
    let drop = cred().setid_bits_to_drop(attrs(&m));
    if drop != 0 {
        inode.set_mode(m.mode & 0o7777 & !drop)?;
    }
    Ok(())
}

/// Whether `cred` may read `inode` (for the dumpability of an exec).
pub fn may_read(cred: &Cred, inode: &dyn Inode) -> bool {
    inode_permission(cred, inode, MAY_READ).is_ok()
}

/// May `cred` execute `d` (`do_open_execat`): a regular file, not on a
/// noexec mount, with execute permission.
pub fn may_exec(cred: &Cred, d: &Arc<Dentry>) -> Result<(), Errno> {
    if d.inode().file_type() != FileType::Regular {
        return Err(Errno::EACCES);
    }
    may_open(cred, d, MAY_EXEC, 0)
}

/// The credentials after `cred` executes `d`, with its set-id bits
/// unless the mount is nosuid (see `Cred::exec`), and whether the process
/// stays dumpable: only if its ids did not change and it could read the
/// file.
pub fn exec_creds(cred: &Cred, d: &Arc<Dentry>) -> (kiln_util::cred::ExecCreds<crate::cred::GroupList>, bool) {
    let m = d.inode().metadata();
    let file = crate::cred::ExecFile { attrs: attrs(&m), nosuid: d.no_suid() };
    let new = cred.exec(&file);
    let dumpable = new.cred.euid == new.cred.uid && new.cred.egid == new.cred.gid && may_read(cred, d.inode().as_ref());
    (new, dumpable)
}
