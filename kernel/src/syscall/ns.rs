//! Namespaces: unshare and setns. The namespaces themselves are
//! `proc::ns`; sethostname and setdomainname (`ident`) change the
//! caller's UTS namespace through `uts`.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::{SysResult, SyscallContext};
use crate::fs::nsfs::NsInode;
use crate::proc::ns::{self, NsRef};

/// The flags unshare(2) knows (Linux's check_unshare_flags).
const UNSHARE_KNOWN: u64 =
    c::CLONE_THREAD | c::CLONE_FS | c::CLONE_SIGHAND | c::CLONE_VM | c::CLONE_FILES | c::CLONE_SYSVSEM | ns::ALL;

pub fn sys_unshare(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let mut flags = a[0];
    if flags & !UNSHARE_KNOWN != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & c::CLONE_NEWUSER != 0 {
        flags |= c::CLONE_THREAD | c::CLONE_FS;
    }
    let p = ctx.process().clone();
    // Sharing the address space, handlers or thread group can only be
    // undone by a process that is alone in them.
    if flags & (c::CLONE_THREAD | c::CLONE_SIGHAND | c::CLONE_VM) != 0 && p.tasks.lock().len() > 1 {
        return Err(Errno::EINVAL);
    }
    if flags & c::CLONE_FILES != 0 && p.files.is_shared() {
        // A process keeps its descriptor table for life here; one shared
        // with another process cannot be split off yet.
        return Err(Errno::EINVAL);
    }
    let ns_flags = flags & ns::ALL;
    if ns_flags == 0 {
        // CLONE_FS, CLONE_SYSVSEM: nothing is shared that would need a copy.
        return Ok(0);
    }
    if !ns::has_cap_sys_admin(&ctx.cred()) {
        return Err(Errno::EPERM);
    }
    let old = p.ns.lock().clone();
    let new = ns::copy(&old, ns_flags, &p.pid_ns)?;
    *p.ns.lock() = new;
    drop(old);
    Ok(0)
}

/// setns(fd, nstype): enter the namespace an nsfs file (from
/// /proc/<pid>/ns) stands for. pidfds are not supported (EINVAL).
pub fn sys_setns(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, nstype) = (a[0] as i32, a[1]);
    let file = ctx.process().files().lock().get(fd)?;
    let target = file
        .ops
        .inode()
        .and_then(|i| i.as_any().downcast_ref::<NsInode>())
        .and_then(|n| n.target.downcast_ref::<NsRef>().cloned())
        .ok_or(Errno::EINVAL)?;
    if nstype != 0 && nstype != target.flag() {
        return Err(Errno::EINVAL);
    }
    let p = ctx.process().clone();
    if !ns::has_cap_sys_admin(&ctx.cred()) {
        return Err(Errno::EPERM);
    }
    let mut new = (**p.ns.lock()).clone();
    match target {
        NsRef::Uts(u) => new.uts = u,
        NsRef::Cgroup(cg) => new.cgroup = cg,
        NsRef::Mnt(m) => {
            if p.tasks.lock().len() > 1 {
                // Threads share the caller's root and cwd (Linux: EINVAL).
                return Err(Errno::EINVAL);
            }
            new.mnt = m;
        }
        NsRef::Pid(pid_ns) => {
            // Only into the caller's own pid namespace or one below it.
            if !p.pid_ns.contains(&pid_ns) {
                return Err(Errno::EINVAL);
            }
            new.pid_for_children = pid_ns;
        }
        NsRef::Fixed(inum) => {
            // Already in the only one there is; the user namespace one
            // cannot re-enter (Linux: EINVAL).
            if inum == ns::INIT_USER_INUM {
                return Err(Errno::EINVAL);
            }
            return Ok(0);
        }
    }
    let entering_mnt = !Arc::ptr_eq(&new.mnt, &p.ns.lock().mnt);
    let new = Arc::try_new(new).map_err(|_| Errno::ENOMEM)?;
    *p.ns.lock() = new;
    if entering_mnt {
        // Entering a mount namespace moves the caller's root and working
        // directory to its root (a chroot ends), as Linux's mntns_install.
        *p.root.lock() = crate::fs::dentry::root();
        *p.cwd.lock() = crate::fs::dentry::root();
    }
    Ok(0)
}
