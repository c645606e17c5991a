//! Who may inspect or control another process: Linux's ptrace access
//! check (`ptrace_may_access`), in one place for every call that asks it
//! (pidfd_getfd and process_vm_readv/writev with ATTACH_REALCREDS, kcmp
//! with READ_REALCREDS; ptrace and /proc will ask it too).
//!
//! A thread always passes for its own thread group. Otherwise the rule is
//! the credential model's (`Cred::may_ptrace`): the caller's real (or
//! file-system) ids must be every one of the target's ids, the target
//! dumpable and holding no capability the caller lacks, unless the caller
//! has CAP_SYS_PTRACE. Without Yama (Linux without the module, as the
//! kernels Kiln is compared with), READ and ATTACH differ in nothing else.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use super::{Process, Task};
use crate::cred::Cred;

/// Linux's `PTRACE_MODE_*`: how much access is asked for, and whose ids
/// speak for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtraceMode {
    /// ATTACH (control: ptrace itself, pidfd_getfd, process_vm_*) rather
    /// than READ (inspection: kcmp, most of /proc).
    pub attach: bool,
    /// FSCREDS (the file-system ids, for /proc files) rather than
    /// REALCREDS (the real ids, for system calls).
    pub fscreds: bool,
}

pub const READ_REALCREDS: PtraceMode = PtraceMode { attach: false, fscreds: false };
pub const READ_FSCREDS: PtraceMode = PtraceMode { attach: false, fscreds: true };
pub const ATTACH_REALCREDS: PtraceMode = PtraceMode { attach: true, fscreds: false };

/// Whether `caller` may access `target`, whose thread with credentials
/// `tcred` is the one asked about (None: the process has no thread left
/// to ask, which only a zombie's reaper could meet: allowed, as Linux
/// finds no credentials to refuse with).
pub fn may_access(caller: &Task, target: &Arc<Process>, tcred: Option<Arc<Cred>>, mode: PtraceMode) -> bool {
    if Arc::ptr_eq(&caller.process, target) {
        return true;
    }
    let Some(tcred) = tcred else { return true };
    // A zombie has no memory, so no dumpability to refuse with.
    let dumpable = target.vm.lock().is_none() || target.dumpable.load(Ordering::Relaxed) == 1;
    caller.cred().may_ptrace(&tcred, mode.fscreds, dumpable)
}

/// `may_access` for the process as a whole (its leader's credentials).
pub fn may_access_process(caller: &Task, target: &Arc<Process>, mode: PtraceMode) -> bool {
    may_access(caller, target, target.cred(), mode)
}

/// `may_access` for one thread of the target (process_vm_* name a
/// thread id, and Linux asks about that thread's credentials).
pub fn may_access_task(caller: &Task, target: &Arc<Task>, mode: PtraceMode) -> bool {
    may_access(caller, &target.process, Some(target.cred()), mode)
}
