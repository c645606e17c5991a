//! Controlling terminals: the process side of the terminal hooks.
//!
//! A process's controlling terminal (`Process::ctty`) is inherited by
//! fork and cleared by setsid, as Linux keeps it in the signal struct.
//! Terminals (`fs::tty`) reach processes only through the [`Sessions`]
//! implementation here, installed at boot.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use crate::fs::tty::{Caller, Sessions, Tty};

struct ProcessSessions;

static HOOKS: ProcessSessions = ProcessSessions;

/// Installs the hooks terminals use (once, at boot).
pub fn init() {
    crate::fs::tty::set_sessions(&HOOKS);
}

impl Sessions for ProcessSessions {
    fn seen_by_caller(&self, global: i32) -> i32 {
        super::current_task().map_or(global, |t| t.process.pid_ns.local_or_zero(global))
    }

    fn global_of(&self, local: i32) -> Option<i32> {
        match super::current_task() {
            Some(t) => t.process.pid_ns.global(local),
            None => Some(local),
        }
    }

    fn caller(&self) -> Option<Caller> {
        let t = super::current_task()?;
        let p = &t.process;
        let sid = p.sid.load(Ordering::Relaxed);
        Some(Caller { pgid: p.pgid.load(Ordering::Relaxed), sid, session_leader: sid == p.pid })
    }

    fn controlling(&self) -> Option<Arc<Tty>> {
        super::current_task()?.process.ctty.lock().clone()
    }

    fn set_controlling(&self, tty: Option<Arc<Tty>>) {
        if let Some(t) = super::current_task() {
            let old = core::mem::replace(&mut *t.process.ctty.lock(), tty);
            drop(old);
        }
    }

    fn clear_controlling(&self, sid: i32, tty: &Arc<Tty>) {
        for p in super::all_processes() {
            if p.sid.load(Ordering::Relaxed) != sid {
                continue;
            }
            let old = {
                let mut slot = p.ctty.lock();
                if slot.as_ref().is_some_and(|t| Arc::ptr_eq(t, tty)) {
                    slot.take()
                } else {
                    None
                }
            };
            drop(old);
        }
    }

    fn signal_group(&self, pgid: i32, signo: u32) {
        for p in super::all_processes() {
            if p.pgid.load(Ordering::Relaxed) == pgid {
                super::signal::send_to_process(&p, Siginfo::kill(signo, sig::SI_KERNEL, 0, 0));
            }
        }
    }

    fn signal_process(&self, pid: i32, signo: u32) {
        if let Some(p) = super::find_process(pid) {
            super::signal::send_to_process(&p, Siginfo::kill(signo, sig::SI_KERNEL, 0, 0));
        }
    }

    fn group_in_session(&self, pgid: i32, sid: i32) -> Option<bool> {
        let mut found = None;
        for p in super::all_processes() {
            if p.pgid.load(Ordering::Relaxed) == pgid {
                if p.sid.load(Ordering::Relaxed) == sid {
                    return Some(true);
                }
                found = Some(false);
            }
        }
        found
    }

    fn caller_ignores(&self, signo: u32) -> bool {
        let Some(t) = super::current_task() else {
            return true;
        };
        t.process.signals.action(signo).handler == super::signal::SIG_IGN || t.sigmask.lock().contains(signo)
    }

    fn caller_fs_ids(&self) -> (u32, u32) {
        super::current_task().map_or((0, 0), |t| {
            let c = t.cred();
            (c.fsuid, c.fsgid)
        })
    }

    fn caller_is_admin(&self) -> bool {
        super::current_task().is_some_and(|t| t.cred().capable(linux_abi::capability::CAP_SYS_ADMIN))
    }
}

/// A process is exiting: a session leader takes its controlling
/// terminal's session down with it (Linux's disassociate_ctty(1)).
pub fn exiting(p: &super::Process) {
    let tty = p.ctty.lock().take();
    if let Some(tty) = tty {
        if p.sid.load(Ordering::Relaxed) == p.pid && tty.session() == p.pid {
            tty.leader_exited();
        }
    }
}
