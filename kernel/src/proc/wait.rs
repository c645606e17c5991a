//! wait4/waitid: finding a child whose state changed, and reaping it;
//! and the completion a vfork parent waits for.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use linux_abi::consts::{__WALL, __WCLONE, WCONTINUED, WEXITED, WNOHANG, WNOWAIT, WUNTRACED};
use linux_abi::errno::Errno;
use linux_abi::signal as sig;

use super::{ExitKind, Pid, Process};
use crate::sched::WaitQueue;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitTarget {
    Any,
    Pid(Pid),
    Pgid(Pid),
}

/// What waiting found.
#[derive(Clone, Copy, Debug)]
pub struct WaitResult {
    /// The child's id as the waiter's pid namespace sees it (taken before
    /// a reaped child's ids are given back).
    pub pid: Pid,
    /// The wait4 status word.
    pub status: i32,
    /// waitid: CLD_* code and status (exit code or signal).
    pub code: i32,
    pub si_status: i32,
    /// (user, system) ns of the child and its reaped children (wait4's
    /// rusage).
    pub times: (u64, u64),
    /// The child's real uid (waitid's si_uid).
    pub uid: u32,
}

fn matches(target: WaitTarget, child: &Process, options: u32) -> bool {
    let id = match target {
        WaitTarget::Any => true,
        WaitTarget::Pid(pid) => child.pid == pid,
        WaitTarget::Pgid(pgid) => child.pgid.load(Ordering::Relaxed) == pgid,
    };
    // Without __WALL, __WCLONE selects the children that report with a
    // signal other than SIGCHLD ("clone" children), and only those.
    let clone_child = child.exit_signal != sig::SIGCHLD;
    id && (options & __WALL != 0 || clone_child == (options & __WCLONE != 0))
}

fn exit_result(child: &Process, how: ExitKind, uid: u32) -> WaitResult {
    let (status, code, si_status) = match how {
        ExitKind::Exited(c) => (i32::from(c) << 8, sig::CLD_EXITED, i32::from(c)),
        ExitKind::Signaled { sig: s, core } => {
            (s as i32 | if core { 0x80 } else { 0 }, if core { sig::CLD_DUMPED } else { sig::CLD_KILLED }, s as i32)
        }
    };
    WaitResult {
        pid: child.pid,
        status,
        code,
        si_status,
        times: {
            let (u, s) = super::cputime::process_times(child);
            let (cu, cs) = super::cputime::children_times(child);
            (u.saturating_add(cu), s.saturating_add(cs))
        },
        uid,
    }
}

/// One pass over the children: a reportable change, or whether any child
/// matched at all.
fn scan(p: &Arc<Process>, target: WaitTarget, options: u32) -> (Option<WaitResult>, bool) {
    // Threads this process traces report first: their stops, and exits
    // the tracer collects apart from the parent.
    let mut any = false;
    if !p.tracer.tracees.lock().is_empty() {
        let caller = crate::sched::current().task_id();
        let (found, traced) = super::ptrace::wait_scan(p, caller, target, options);
        if let Some(mut r) = found {
            r.pid = p.pid_ns.local_or_zero(r.pid);
            return (Some(r), true);
        }
        any = traced;
    }
    let children = p.children.lock().clone();
    for child in children.iter().filter(|c| matches(target, c, options)) {
        any = true;
        let uid = child.cred().map_or(0, |c| c.uid);
        let mut st = child.state.lock();
        if st.zombie && options & WEXITED != 0 {
            let how = st.exit.unwrap_or(ExitKind::Exited(0));
            drop(st);
            let mut result = exit_result(child, how, uid);
            result.pid = p.pid_ns.local_or_zero(child.pid);
            if options & WNOWAIT == 0 {
                p.children.lock().retain(|c| !Arc::ptr_eq(c, child));
                super::cputime::account_reaped(p, child);
                super::unregister_process(child.pid);
            }
            return (Some(result), true);
        }
        if let Some(signo) = st.stopped {
            // A child this process traces reports its stops as ptrace
            // stops, not a second time here.
            if options & WUNTRACED != 0 && !st.stop_reported && !super::ptrace::traced_by(child, p) {
                if options & WNOWAIT == 0 {
                    st.stop_reported = true;
                }
                let status = ((signo as i32) << 8) | 0x7f;
                return (
                    Some(WaitResult {
                        pid: p.pid_ns.local_or_zero(child.pid),
                        status,
                        code: sig::CLD_STOPPED,
                        si_status: signo as i32,
                        times: (0, 0),
                        uid,
                    }),
                    true,
                );
            }
        }
        if options & WCONTINUED != 0 && st.continued_unreported {
            if options & WNOWAIT == 0 {
                st.continued_unreported = false;
            }
            return (
                Some(WaitResult {
                    pid: p.pid_ns.local_or_zero(child.pid),
                    status: 0xffff,
                    code: sig::CLD_CONTINUED,
                    si_status: sig::SIGCONT as i32,
                    times: (0, 0),
                    uid,
                }),
                true,
            );
        }
    }
    (None, any)
}

/// Waits for a child matching `target`; `Ok(None)` for WNOHANG with
/// nothing to report.
pub fn wait_child(p: &Arc<Process>, target: WaitTarget, options: u32) -> Result<Option<WaitResult>, Errno> {
    loop {
        let seq = p.child_event_seq.load(Ordering::Acquire);
        let (found, any) = scan(p, target, options);
        if found.is_some() {
            return Ok(found);
        }
        if !any {
            return Err(Errno::ECHILD);
        }
        if options & WNOHANG != 0 {
            return Ok(None);
        }
        p.child_events
            .wait_until_interruptible(None, || p.child_event_seq.load(Ordering::Acquire) != seq)
            .map_err(|_| Errno::ERESTARTSYS)?;
    }
}

/// A vfork parent sleeps until the child execs or exits.
pub struct VforkDone {
    pub done: core::sync::atomic::AtomicBool,
    pub queue: WaitQueue,
}

pub fn complete_vfork(child: &Process) {
    if let Some(v) = child.vfork_done.lock().take() {
        v.done.store(true, Ordering::Release);
        v.queue.wake_all();
    }
}
