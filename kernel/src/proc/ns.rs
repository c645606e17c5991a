//! Namespaces: what a process sees of host names, mounts and process ids.
//!
//! Each process holds a [`Namespaces`] set (Linux's nsproxy), shared with
//! its parent until unshare, clone with CLONE_NEW* or setns gives it a new
//! one. Real here: UTS (host and domain name), mount (a copy of the mount
//! table, `fs::dentry::MountNamespace`), PID (`pidns`), and cgroup (Kiln
//! has no cgroup hierarchy, so a cgroup namespace has nothing to
//! virtualise but its identity, which is all it shows). IPC, network,
//! user and time namespaces are answered as a Linux built without them
//! answers (EINVAL): their state belongs to subsystems that are not
//! namespace-aware yet (System V IPC, sockets, credentials, the vDSO's
//! clocks), and a namespace that changed nothing would be a fake success.
//!
//! Every namespace has a proc inode number (`uts:[4026531838]`): the
//! initial ones have Linux's fixed numbers, new ones count up from
//! Linux's first dynamic number.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::Once;
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::pidns::PidNs;
use crate::fs::dentry::MountNamespace;
use crate::uts::UtsNs;

pub const INIT_IPC_INUM: u64 = 0xEFFF_FFFF;
pub const INIT_USER_INUM: u64 = 0xEFFF_FFFD;
pub const INIT_PID_INUM: u64 = 0xEFFF_FFFC;
pub const INIT_CGROUP_INUM: u64 = 0xEFFF_FFFB;
pub const INIT_TIME_INUM: u64 = 0xEFFF_FFFA;
pub const INIT_NET_INUM: u64 = 0xEFFF_FFF9;

/// Linux's first dynamic proc inode number.
static NEXT_INUM: AtomicU64 = AtomicU64::new(0xF000_0000);

/// A proc inode number for a new namespace.
pub fn alloc_inum() -> u64 {
    NEXT_INUM.fetch_add(1, Ordering::Relaxed)
}

pub struct CgroupNs {
    pub inum: u64,
}

/// A process's namespaces. Immutable: a change makes a new set.
#[derive(Clone)]
pub struct Namespaces {
    pub uts: Arc<UtsNs>,
    pub mnt: Arc<MountNamespace>,
    /// Where the process's children get their ids (its own pid
    /// namespace is `Process::pid_ns`).
    pub pid_for_children: Arc<PidNs>,
    pub cgroup: Arc<CgroupNs>,
}

static INIT: Once<Arc<Namespaces>> = Once::new();

/// The initial namespaces (init's).
pub fn initial() -> Arc<Namespaces> {
    loop {
        if let Some(ns) = INIT.get() {
            return ns.clone();
        }
        INIT.set(Arc::new(Namespaces {
            uts: crate::uts::initial(),
            mnt: crate::fs::dentry::init_namespace(),
            pid_for_children: super::pidns::initial(),
            cgroup: Arc::new(CgroupNs { inum: INIT_CGROUP_INUM }),
        }));
    }
}

/// The namespace flags Kiln has; the others get Linux's answer for a
/// namespace type that is not configured.
pub const SUPPORTED: u64 = c::CLONE_NEWUTS | c::CLONE_NEWNS | c::CLONE_NEWPID | c::CLONE_NEWCGROUP;
pub const UNCONFIGURED: u64 = c::CLONE_NEWIPC | c::CLONE_NEWNET | c::CLONE_NEWUSER | c::CLONE_NEWTIME;
pub const ALL: u64 = SUPPORTED | UNCONFIGURED;

/// CAP_SYS_ADMIN, which creating or entering a namespace needs (in the
/// one user namespace there is).
pub fn has_cap_sys_admin(cred: &crate::cred::Cred) -> bool {
    cred.capable(linux_abi::capability::CAP_SYS_ADMIN)
}

/// `old` with new namespaces for the CLONE_NEW* bits in `flags`
/// (`caller_pid_ns`: the caller's own pid namespace).
pub fn copy(old: &Namespaces, flags: u64, caller_pid_ns: &Arc<PidNs>) -> Result<Arc<Namespaces>, Errno> {
    if flags & UNCONFIGURED != 0 {
        return Err(Errno::EINVAL);
    }
    let mut ns = old.clone();
    if flags & c::CLONE_NEWUTS != 0 {
        ns.uts = old.uts.copy(alloc_inum())?;
    }
    if flags & c::CLONE_NEWNS != 0 {
        ns.mnt = old.mnt.copy(alloc_inum())?;
    }
    if flags & c::CLONE_NEWPID != 0 {
        // Only from the caller's own namespace (a second unshare before
        // the first child: EINVAL, as Linux's copy_pid_ns).
        if !Arc::ptr_eq(&old.pid_for_children, caller_pid_ns) {
            return Err(Errno::EINVAL);
        }
        ns.pid_for_children = PidNs::new_child(caller_pid_ns)?;
    }
    if flags & c::CLONE_NEWCGROUP != 0 {
        ns.cgroup = Arc::try_new(CgroupNs { inum: alloc_inum() }).map_err(|_| Errno::ENOMEM)?;
    }
    Arc::try_new(ns).map_err(|_| Errno::ENOMEM)
}

/// Installs the hooks the dentry layer and `uts` ask for the caller's
/// mount and UTS namespaces.
pub fn init() {
    crate::fs::dentry::set_namespace_hook(|| Some(super::current_task()?.process.ns.lock().mnt.clone()));
    crate::uts::set_current_hook(|| Some(super::current_task()?.process.ns.lock().uts.clone()));
}

/// What a /proc/<pid>/ns link names.
#[derive(Clone)]
pub enum NsRef {
    Uts(Arc<UtsNs>),
    Mnt(Arc<MountNamespace>),
    Pid(Arc<PidNs>),
    Cgroup(Arc<CgroupNs>),
    /// The only instance of a type Kiln has no namespaces of.
    Fixed(u64),
}

/// The names in /proc/<pid>/ns, in Linux's order.
pub const NS_LINKS: &[&str] =
    &["cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time", "time_for_children", "user", "uts"];

impl NsRef {
    pub fn inum(&self) -> u64 {
        match self {
            NsRef::Uts(n) => n.inum,
            NsRef::Mnt(n) => n.inum,
            NsRef::Pid(n) => n.inum,
            NsRef::Cgroup(n) => n.inum,
            NsRef::Fixed(i) => *i,
        }
    }

    /// The CLONE_NEW* flag of its type (setns's nstype).
    pub fn flag(&self) -> u64 {
        match self {
            NsRef::Uts(_) => c::CLONE_NEWUTS,
            NsRef::Mnt(_) => c::CLONE_NEWNS,
            NsRef::Pid(_) => c::CLONE_NEWPID,
            NsRef::Cgroup(_) => c::CLONE_NEWCGROUP,
            NsRef::Fixed(i) => match *i {
                INIT_IPC_INUM => c::CLONE_NEWIPC,
                INIT_USER_INUM => c::CLONE_NEWUSER,
                INIT_TIME_INUM => c::CLONE_NEWTIME,
                _ => c::CLONE_NEWNET,
            },
        }
    }
}

/// Process `p`'s namespace of link `name`.
pub fn of_process(p: &super::Process, name: &str) -> Option<NsRef> {
    let ns = p.ns.lock().clone();
    Some(match name {
        "uts" => NsRef::Uts(ns.uts.clone()),
        "mnt" => NsRef::Mnt(ns.mnt.clone()),
        "pid" => NsRef::Pid(p.pid_ns.clone()),
        "pid_for_children" => NsRef::Pid(ns.pid_for_children.clone()),
        "cgroup" => NsRef::Cgroup(ns.cgroup.clone()),
        "ipc" => NsRef::Fixed(INIT_IPC_INUM),
        "net" => NsRef::Fixed(INIT_NET_INUM),
        "user" => NsRef::Fixed(INIT_USER_INUM),
        "time" | "time_for_children" => NsRef::Fixed(INIT_TIME_INUM),
        _ => return None,
    })
}
