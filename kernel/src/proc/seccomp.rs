//! Secure computing, as Linux 6.1 has it: a thread in strict mode may
//! only read, write, exit and return from signals; a thread in filter
//! mode runs every system call past its stack of classic BPF filters
//! (checked and run by `kiln_util::seccomp`) and does what the strictest
//! verdict says: kill the process or the thread with SIGSYS, raise
//! SIGSYS for the program to handle, fail with an errno, or let it run.
//!
//! Filters belong to threads: they are stacked (a new one is pushed on
//! top of the old, which it can only tighten), inherited by fork and
//! clone, kept across execve, and copied to the other threads of the
//! process with SECCOMP_FILTER_FLAG_TSYNC. A filter is shared by every
//! thread that has it, so the chain is a list of `Arc`s, newest first.
//!
//! The system-call path tests one word (`Task::syscall_work`, shared with
//! syscall user dispatch) before looking further, so a thread with
//! neither pays the one load it paid before seccomp existed.
//!
//! Not implemented: user notification (SECCOMP_FILTER_FLAG_NEW_LISTENER
//! is refused as an unknown flag, so SECCOMP_RET_USER_NOTIF always finds
//! no listener and fails the call with ENOSYS, as Linux does without
//! one); SECCOMP_RET_TRACE stops a tracer that set
//! PTRACE_O_TRACESECCOMP (PTRACE_EVENT_SECCOMP, the data as the message)
//! and fails the call with ENOSYS otherwise; strict mode does not make rdtsc
//! fault (Linux sets CR4.TSD for it).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use hal::user::UserContext;
use kiln_util::seccomp::{self as rules, Action, Insn, SeccompData};
use linux_abi::consts::AUDIT_ARCH_X86_64;
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::seccomp::*;
use linux_abi::signal as sig;

use super::ptrace::SeccompTrace;
use super::task::SYSCALL_WORK_SECCOMP;
use super::{ExitKind, Task};

/// One attached filter and, through `prev`, the ones attached before it.
pub struct Filter {
    prog: Vec<Insn>,
    prev: Option<Arc<Filter>>,
    /// SECCOMP_FILTER_FLAG_LOG: actions other than ALLOW are logged.
    log: bool,
    /// Instructions on the path through this filter and all older ones,
    /// each older filter counting `FILTER_PENALTY` more (Linux's limit).
    path_insns: usize,
    /// Filters in the chain, this one included (Seccomp_filters).
    count: u32,
}

impl Drop for Filter {
    // A chain may hold thousands of filters: unlink it iteratively, not
    // by the recursion of nested drops on a 32 KiB kernel stack.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(f) = next {
            next = Arc::into_inner(f).and_then(|mut f| f.prev.take());
        }
    }
}

/// A thread's seccomp state.
#[derive(Clone, Default)]
pub struct Seccomp {
    mode: u32,
    filter: Option<Arc<Filter>>,
}

impl Seccomp {
    pub fn mode(&self) -> u32 {
        self.mode
    }

    /// The filters attached, as /proc/<pid>/status's Seccomp_filters.
    pub fn filter_count(&self) -> u32 {
        self.filter.as_ref().map_or(0, |f| f.count)
    }
}

fn set_state(task: &Task, state: &mut Seccomp, new: Seccomp) {
    *state = new;
    task.set_syscall_work(SYSCALL_WORK_SECCOMP, state.mode != SECCOMP_MODE_DISABLED);
}

/// fork and clone: the new thread starts with its creator's mode and
/// filters. Called with the new thread's process's task list locked, so
/// a TSYNC in the creator's process sees the thread with its filters.
pub fn inherit(child: &Task, parent: &Task) {
    let state = parent.seccomp.lock().clone();
    let mut mine = child.seccomp.lock();
    set_state(child, &mut mine, state);
}

/// SECCOMP_SET_MODE_STRICT: allowed from no mode or strict mode.
pub fn set_strict(task: &Task) -> Result<(), Errno> {
    let _serial = task.process.tasks.lock();
    let mut me = task.seccomp.lock();
    if me.mode != SECCOMP_MODE_DISABLED && me.mode != SECCOMP_MODE_STRICT {
        return Err(Errno::EINVAL);
    }
    let state = Seccomp { mode: SECCOMP_MODE_STRICT, filter: None };
    set_state(task, &mut me, state);
    Ok(())
}

/// Whether `older` is `newer` or one of the filters below it (a thread
/// with no filter is below everyone).
fn is_ancestor(older: Option<&Arc<Filter>>, newer: Option<&Arc<Filter>>) -> bool {
    let Some(older) = older else { return true };
    let mut walk = newer;
    while let Some(f) = walk {
        if Arc::ptr_eq(f, older) {
            return true;
        }
        walk = f.prev.as_ref();
    }
    false
}

/// SECCOMP_SET_MODE_FILTER with a checked program. Returns 0, or with
/// TSYNC the id of a thread whose filters are not an ancestor of the
/// caller's (nothing attached then), as Linux does.
pub fn attach(task: &Arc<Task>, prog: Vec<Insn>, flags: u32) -> Result<u64, Errno> {
    let mut node = Arc::try_new(Filter {
        path_insns: rules::converted_len(&prog),
        prog,
        prev: None,
        log: flags & SECCOMP_FILTER_FLAG_LOG != 0,
        count: 1,
    })
    .map_err(|_| Errno::ENOMEM)?;
    let tsync = flags & SECCOMP_FILTER_FLAG_TSYNC != 0;
    // The process's task list serializes every change of filters in it
    // (Linux's siglock): lock order task list, then seccomp states, then
    // credentials.
    let tasks = task.process.tasks.lock();
    let mut me = task.seccomp.lock();
    if me.mode != SECCOMP_MODE_DISABLED && me.mode != SECCOMP_MODE_FILTER {
        return Err(Errno::EINVAL);
    }
    let older = me.filter.as_ref().map_or(0, |f| f.path_insns + rules::FILTER_PENALTY);
    let path = node.path_insns + older;
    if path > rules::MAX_INSNS_PER_PATH {
        return Err(Errno::ENOMEM);
    }
    // With TSYNC, the threads that will change, and the credentials with
    // no_new_privs each needs, are found and allocated before anything
    // changes.
    let mut sync: Vec<(Arc<Task>, Option<Arc<crate::cred::Cred>>)> = Vec::new();
    if tsync {
        let caller_nnp = task.cred().no_new_privs;
        sync.try_reserve(tasks.len()).map_err(|_| Errno::ENOMEM)?;
        for t in tasks.iter().filter(|t| !Arc::ptr_eq(t, task)) {
            let theirs = t.seccomp.lock();
            let ok = theirs.mode == SECCOMP_MODE_DISABLED
                || (theirs.mode == SECCOMP_MODE_FILTER && is_ancestor(theirs.filter.as_ref(), me.filter.as_ref()));
            if !ok {
                if flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH != 0 {
                    return Err(Errno::ESRCH);
                }
                return Ok(t.tid() as u64);
            }
            let old = t.cred();
            let cred = if caller_nnp && !old.no_new_privs {
                let mut new = (*old).clone();
                new.no_new_privs = true;
                Some(Arc::try_new(new).map_err(|_| Errno::ENOMEM)?)
            } else {
                None
            };
            sync.push((t.clone(), cred));
        }
    }
    {
        let Some(n) = Arc::get_mut(&mut node) else { return Err(Errno::ENOMEM) };
        n.path_insns = path;
        n.count = me.filter.as_ref().map_or(0, |f| f.count) + 1;
        n.prev = me.filter.take();
    }
    let state = Seccomp { mode: SECCOMP_MODE_FILTER, filter: Some(node) };
    set_state(task, &mut me, state.clone());
    for (t, cred) in sync {
        if let Some(cred) = cred {
            drop(t.install_cred(cred));
        }
        let mut theirs = t.seccomp.lock();
        let old = core::mem::take(&mut *theirs);
        set_state(&t, &mut theirs, state.clone());
        drop(theirs);
        drop(old);
    }
    drop(me);
    drop(tasks);
    Ok(0)
}

/// Decides whether the system call `nr` the thread just made runs:
/// `Some` with the call to run (a tracer woken by SECCOMP_RET_TRACE may
/// have changed it), or `None` when it does not, its result being already
/// in the registers, or the thread sent SIGSYS or told to exit.
pub fn check(task: &Arc<Task>, uctx: &mut UserContext, nr: u64) -> Option<u64> {
    let (mode, filter) = {
        let s = task.seccomp.lock();
        (s.mode, s.filter.clone())
    };
    match mode {
        SECCOMP_MODE_STRICT => {
            if rules::strict_allows(nr) {
                return Some(nr);
            }
            log::debug!("pid {}: seccomp strict mode: killed for system call {nr}", task.process.pid);
            kill_thread(task, sig::SIGKILL);
            None
        }
        SECCOMP_MODE_FILTER => match filter {
            Some(f) => judge(task, uctx, nr, &f, false),
            None => Some(nr),
        },
        _ => Some(nr),
    }
}

/// Runs the filters over the call and acts on the verdict. `rechecked`:
/// the call was already let through a tracer, which a second TRACE
/// verdict does not stop again (Linux's recheck_after_trace).
fn judge(task: &Arc<Task>, uctx: &mut UserContext, nr: u64, newest: &Arc<Filter>, rechecked: bool) -> Option<u64> {
    let r = &uctx.regs;
    let data = SeccompData {
        nr: nr as i32,
        arch: AUDIT_ARCH_X86_64,
        instruction_pointer: r.rip,
        args: [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9],
    };
    let mut verdict = SECCOMP_RET_ALLOW;
    let mut logged = false;
    let mut walk = Some(newest);
    while let Some(f) = walk {
        let ret = rules::run(&f.prog, &data);
        let winner = rules::stricter(verdict, ret);
        if winner != verdict {
            verdict = winner;
            logged = f.log;
        }
        walk = f.prev.as_ref();
    }
    let action = Action::of(verdict);
    let data_bits = verdict & SECCOMP_RET_DATA;
    if action == Action::Log || (logged && action != Action::Allow) {
        log::debug!("pid {}: seccomp: system call {nr} -> {action:?} ({data_bits})", task.process.pid);
    }
    match action {
        Action::Allow | Action::Log => Some(nr),
        Action::Errno => {
            // The data is the errno, capped at MAX_ERRNO.
            let errno = u64::from(data_bits.min(4095));
            uctx.regs.rax = errno.wrapping_neg();
            None
        }
        Action::Trace if rechecked => Some(nr),
        Action::Trace => match super::ptrace::seccomp_event(task, uctx, data_bits) {
            // No tracer asked for the event: ENOSYS, as Linux answers.
            SeccompTrace::NoTracer => {
                uctx.regs.rax = Errno::ENOSYS.as_neg_isize() as u64;
                None
            }
            // Skipped by the tracer (rax is what it left) or dying.
            SeccompTrace::Skip => None,
            // The tracer let it go on, perhaps as another call: the
            // filters judge that one again.
            SeccompTrace::Run(new_nr) => judge(task, uctx, new_nr, newest, true),
        },
        Action::UserNotif => {
            // No listener (Kiln has no user notification): ENOSYS, as
            // Linux answers without one.
            uctx.regs.rax = Errno::ENOSYS.as_neg_isize() as u64;
            None
        }
        Action::Trap => {
            // The handler sees the registers of the call (rax holds its
            // number); the call does not run.
            uctx.regs.rax = nr;
            super::signal::force_fault_signal(task, sigsys(uctx.regs.rip, nr, data_bits));
            None
        }
        Action::KillThread | Action::KillProcess => {
            uctx.regs.rax = nr;
            let alone = task.process.tasks.lock().len() <= 1;
            if action == Action::KillThread && !alone {
                kill_thread(task, sig::SIGSYS);
            } else {
                // Dies of SIGSYS whatever the program did with it, with a
                // core dump where allowed (Linux's force_sig_seccomp with
                // force_coredump).
                super::signal::force_default_signal(task, sigsys(uctx.regs.rip, nr, data_bits));
            }
            None
        }
    }
}

fn sigsys(rip: u64, nr: u64, data: u32) -> Siginfo {
    let mut info = Siginfo::sys(sig::SYS_SECCOMP, rip, nr as i32, AUDIT_ARCH_X86_64);
    info.si_errno = data as i32;
    info
}

/// Ends only the calling thread, as Linux's do_exit(signo) (the process
/// ends with it if it was the last).
fn kill_thread(task: &Task, signo: u32) {
    *task.exit_request.lock() = Some(ExitKind::Signaled { sig: signo, core: false });
    task.attention.store(true, Ordering::Release);
}
