//! PID namespaces: the ids a process has as seen from each namespace.
//!
//! Kiln's process and thread tables are keyed by the global id (the
//! initial namespace's, `Process::pid`, `Task::tid`). A process in a
//! nested namespace also has an id in its namespace and in each one
//! between it and the initial one; every namespace keeps a two-way map
//! between its ids and global ones, and system calls translate at the
//! boundary: ids coming in are looked up in the caller's namespace, ids
//! going out are the caller's view (0 when the caller cannot see the
//! process, as Linux's getppid for a parent outside the namespace).
//!
//! The first process in a new namespace gets id 1 and is its init: its
//! orphans are reparented to it, and when it exits every other process
//! of the namespace is killed and no new one may enter (ENOMEM).

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;

use super::Pid;

/// Linux's MAX_PID_NS_LEVEL.
const MAX_LEVEL: usize = 32;

#[derive(Default)]
struct IdMaps {
    to_global: BTreeMap<Pid, Pid>,
    to_local: BTreeMap<Pid, Pid>,
    next: Pid,
}

pub struct PidNs {
    pub inum: u64,
    /// 0 for the initial namespace.
    pub level: usize,
    pub parent: Option<Arc<PidNs>>,
    ids: SpinLock<IdMaps>,
    /// The global id of its init (0 before its first process).
    init: AtomicI32,
    /// Its init exited: nobody may enter any more.
    dead: AtomicBool,
}

static INITIAL: Once<Arc<PidNs>> = Once::new();

/// The initial pid namespace, whose ids are the global ones.
pub fn initial() -> Arc<PidNs> {
    loop {
        if let Some(ns) = INITIAL.get() {
            return ns.clone();
        }
        INITIAL.set(Arc::new(PidNs {
            inum: super::ns::INIT_PID_INUM,
            level: 0,
            parent: None,
            ids: SpinLock::new(IdMaps::default()),
            init: AtomicI32::new(1),
            dead: AtomicBool::new(false),
        }));
    }
}

impl PidNs {
    /// A namespace nested in `parent` (ENOSPC past 32 levels).
    pub fn new_child(parent: &Arc<PidNs>) -> Result<Arc<PidNs>, Errno> {
        if parent.level + 1 > MAX_LEVEL {
            return Err(Errno::ENOSPC);
        }
        Arc::try_new(PidNs {
            inum: super::ns::alloc_inum(),
            level: parent.level + 1,
            parent: Some(parent.clone()),
            ids: SpinLock::new(IdMaps { next: 1, ..IdMaps::default() }),
            init: AtomicI32::new(0),
            dead: AtomicBool::new(false),
        })
        .map_err(|_| Errno::ENOMEM)
    }

    #[inline]
    pub fn is_initial(&self) -> bool {
        self.level == 0
    }

    // `local`, `local_or_zero` and `global` sit on getpid/getppid/gettid's
    // path: `#[inline]` keeps the initial namespace's answer (no lock, no
    // map) inlined into the caller whatever codegen unit it lands in; the
    // map look-ups stay out of line.

    /// The id global id `global` has here (None: not visible here).
    #[inline]
    pub fn local(&self, global: Pid) -> Option<Pid> {
        if self.is_initial() {
            return Some(global);
        }
        self.local_in_map(global)
    }

    #[inline(never)]
    fn local_in_map(&self, global: Pid) -> Option<Pid> {
        self.ids.lock().to_local.get(&global).copied()
    }

    /// Like `local`, 0 for an id not visible here (getppid's answer for
    /// a parent outside the namespace).
    #[inline]
    pub fn local_or_zero(&self, global: Pid) -> Pid {
        if global <= 0 || self.is_initial() {
            return global;
        }
        self.local_in_map(global).unwrap_or(0)
    }

    /// The global id of this namespace's id `local`.
    #[inline]
    pub fn global(&self, local: Pid) -> Option<Pid> {
        if self.is_initial() {
            return Some(local);
        }
        self.global_in_map(local)
    }

    #[inline(never)]
    fn global_in_map(&self, local: Pid) -> Option<Pid> {
        self.ids.lock().to_global.get(&local).copied()
    }

    /// Whether `self` is `other` or one of its ancestors (it sees all of
    /// `other`'s processes).
    pub fn contains(&self, other: &Arc<PidNs>) -> bool {
        let mut n = Some(other.clone());
        while let Some(ns) = n {
            if core::ptr::eq(&*ns, self) {
                return true;
            }
            n = ns.parent.clone();
        }
        false
    }

    /// The global id of its init, if it has one.
    pub fn init_pid(&self) -> Option<Pid> {
        let p = self.init.load(Ordering::Relaxed);
        (p != 0).then_some(p)
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }

    /// Its init exited.
    pub fn mark_dead(&self) {
        self.dead.store(true, Ordering::Relaxed);
    }

    fn alloc(&self, global: Pid) -> Result<Pid, Errno> {
        let max = super::pid_max();
        let mut ids = self.ids.lock();
        for _ in 0..max {
            let mut local = ids.next;
            if !(1..max).contains(&local) {
                local = 2;
            }
            ids.next = local + 1;
            if let alloc::collections::btree_map::Entry::Vacant(slot) = ids.to_global.entry(local) {
                slot.insert(global);
                ids.to_local.insert(global, local);
                return Ok(local);
            }
        }
        Err(Errno::EAGAIN)
    }

    fn release(&self, global: Pid) {
        let mut ids = self.ids.lock();
        if let Some(local) = ids.to_local.remove(&global) {
            ids.to_global.remove(&local);
        }
    }
}

/// Gives global id `global` an id in `ns` and each namespace above it up
/// to the initial one. A process (`process`: not a thread) that gets id
/// 1 becomes the namespace's init. ENOMEM once the namespace's init has
/// exited, as Linux's alloc_pid.
pub fn register(ns: &Arc<PidNs>, global: Pid, process: bool) -> Result<(), Errno> {
    if ns.is_dead() {
        return Err(Errno::ENOMEM);
    }
    let mut level = Some(ns.clone());
    while let Some(n) = level {
        if n.is_initial() {
            break;
        }
        match n.alloc(global) {
            Ok(local) => {
                if local == 1 && process {
                    n.init.store(global, Ordering::Relaxed);
                }
            }
            Err(e) => {
                release(ns, global);
                return Err(e);
            }
        }
        level = n.parent.clone();
    }
    Ok(())
}

/// Gives back the ids of global id `global` in `ns` and above.
pub fn release(ns: &Arc<PidNs>, global: Pid) {
    let mut level = Some(ns.clone());
    while let Some(n) = level {
        if n.is_initial() {
            break;
        }
        n.release(global);
        level = n.parent.clone();
    }
}

/// `global`'s ids from namespace `from` (its level) down to its own
/// namespace `own`: /proc/<pid>/status's NSpid line.
pub fn ids_from(from: &Arc<PidNs>, own: &Arc<PidNs>, global: Pid) -> alloc::vec::Vec<Pid> {
    let mut chain = alloc::vec::Vec::new();
    let mut n = Some(own.clone());
    while let Some(ns) = n {
        chain.push(ns.local(global).unwrap_or(0));
        if Arc::ptr_eq(&ns, from) {
            break;
        }
        n = ns.parent.clone();
    }
    chain.reverse();
    chain
}
