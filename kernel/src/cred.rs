//! Credentials: the user and group ids, supplementary groups,
//! capabilities and securebits a thread acts with.
//!
//! The model and Linux's rules for it are `kiln_util::cred` (host-tested);
//! this module gives it the kernel's group-list storage and the boot
//! credentials. It sits below `fs/` and `proc/`, which both use it: each
//! task holds an `Arc<Cred>` that is never changed in place. A change
//! builds a new `Cred` and swaps it in (`Task::commit_cred`), so a reader
//! that cloned the `Arc` keeps a consistent snapshot, as with Linux's
//! `commit_creds`. Threads have their own credentials, as on Linux; libc
//! makes set*id calls on every thread of a process itself.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;

pub use kiln_util::cred::{ExecFile, FileAttrs, PtraceMode, MAY_EXEC, MAY_READ, MAY_WRITE, NO_ID, S_ISGID};

/// A thread's credentials.
pub type Cred = kiln_util::cred::Cred<GroupList>;

/// A sorted list of supplementary groups, shared by the credentials that
/// carry it (an empty list holds no allocation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupList(Option<Arc<Vec<u32>>>);

impl AsRef<[u32]> for GroupList {
    fn as_ref(&self) -> &[u32] {
        self.0.as_deref().map_or(&[], |v| v.as_slice())
    }
}

impl GroupList {
    /// No supplementary groups (the first process has none).
    pub const EMPTY: GroupList = GroupList(None);

    /// Takes `groups` in any order; stores them sorted, as Linux does.
    pub fn new(mut groups: Vec<u32>) -> Result<GroupList, Errno> {
        if groups.is_empty() {
            return Ok(GroupList::EMPTY);
        }
        groups.sort_unstable();
        Ok(GroupList(Some(Arc::try_new(groups).map_err(|_| Errno::ENOMEM)?)))
    }
}

/// The credentials of the first process and of the kernel's own file
/// operations (unpacking the initramfs, mounting /proc): root with every
/// capability.
pub static ROOT: Cred = Cred::root(GroupList::EMPTY);
