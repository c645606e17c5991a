//! What a tracer's wait4/waitid finds among its tracees: their stops
//! (reported once each, `CLD_TRAPPED`) and the exits of traced threads it
//! collects apart from their parent.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use linux_abi::signal as sig;

use super::StopKind;
use crate::proc::wait::{WaitResult, WaitTarget};
use crate::proc::{cputime, Pid, Process, Task};

/// Whether `child`'s group stops are reported to `parent` as ptrace stops
/// (its leader is traced by the parent's own process), so not twice.
pub fn traced_by(child: &Process, parent: &Arc<Process>) -> bool {
    child.tasks.lock().iter().any(|t| {
        t.is_leader()
            && t.ptrace.is_traced()
            && t.ptrace.inner.lock().tracer_process().is_some_and(|tp| Arc::ptr_eq(&tp, parent))
    })
}

/// What wait reports for tracee `t`, built with its link's lock
/// released (the times take the process's thread list, which
/// `traced_by` holds while it takes the link's lock). The rusage is its
/// whole thread group's with the group's reaped children, as Linux's
/// getrusage(RUSAGE_BOTH); si_uid is its real uid.
fn result(t: &Task, status: i32, code: i32, si_status: i32) -> WaitResult {
    let (u, s) = cputime::process_times(&t.process);
    let (cu, cs) = cputime::children_times(&t.process);
    let times = (u.saturating_add(cu), s.saturating_add(cs));
    WaitResult { pid: t.tid(), status, code, si_status, times, uid: t.cred().uid }
}

/// Looks for a tracee of `p` with a stop or an exit to report. Returns
/// what it found and whether any tracee matched at all.
pub fn wait_scan(p: &Arc<Process>, caller: Pid, target: WaitTarget, options: u32) -> (Option<WaitResult>, bool) {
    use linux_abi::consts::{__WNOTHREAD, WEXITED, WNOWAIT};
    let tracees = p.tracer.tracees.lock().clone();
    let mut any = false;
    for t in tracees {
        let matches = match target {
            WaitTarget::Any => true,
            WaitTarget::Pid(pid) => t.tid() == pid,
            WaitTarget::Pgid(g) => t.process.pgid.load(Ordering::Relaxed) == g,
        };
        if !matches {
            continue;
        }
        let mut inner = t.ptrace.inner.lock();
        if options & __WNOTHREAD != 0 && inner.tracer.as_ref().is_some_and(|r| r.tid != caller) {
            continue;
        }
        any = true;
        if let Some(status) = inner.exit_status {
            if options & WEXITED == 0 {
                continue;
            }
            let code = if status & 0x7f == 0 {
                sig::CLD_EXITED
            } else if status & 0x80 != 0 {
                sig::CLD_DUMPED
            } else {
                sig::CLD_KILLED
            };
            let si_status = if code == sig::CLD_EXITED { (status >> 8) & 0xff } else { status & 0x7f };
            if options & WNOWAIT == 0 {
                inner.tracer = None;
                drop(inner);
                p.tracer.tracees.lock().retain(|x| !Arc::ptr_eq(x, &t));
            } else {
                drop(inner);
            }
            return (Some(result(&t, status, code, si_status)), true);
        }
        if let Some(stop) = inner.stop.as_mut() {
            if stop.reported {
                continue;
            }
            if options & WNOWAIT == 0 {
                stop.reported = true;
            }
            let status = stop.status;
            let code = if stop.kind == StopKind::Group && !inner.seized { sig::CLD_STOPPED } else { sig::CLD_TRAPPED };
            drop(inner);
            return (Some(result(&t, status, code, (status >> 8) & 0xffff)), true);
        }
    }
    (None, any)
}
