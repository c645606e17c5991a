//! ptrace: the tracer-tracee link and the stops a traced thread makes.
//!
//! A traced thread (a [`Task`]) keeps its link in [`TaskPtrace`]: who
//! traces it, the options, and, while it is stopped, the stop (the wait
//! status the tracer collects, the siginfo, the event message) and a copy
//! of its registers. The tracee stops itself, always on its own kernel
//! thread: it copies its user registers into the link, tells the tracer,
//! and sleeps until the tracer resumes it; it then takes the (possibly
//! edited) registers back. The tracer only ever touches that copy, under
//! the link's lock, never the tracee's live context. The stops are
//! Linux's: signal-delivery-stop, group-stop (PTRACE_EVENT_STOP under
//! SEIZE, with LISTEN), syscall-enter/exit stops, and the event stops of
//! fork, vfork, clone, exec, vfork-done and exit. The tracer's process
//! lists its tracees ([`TracerState`]), which `wait4`/`waitid` scan.
//!
//! Permission is Linux's without Yama (the host's Debian kernel has none
//! either: there is no /proc/sys/kernel/yama): [`may_access`] is
//! `__ptrace_may_access` with the capability module's check over the
//! caller's and the target's real credentials (`kiln_util::cred`'s
//! `may_ptrace`): the same ids and a dumpable target, with capabilities
//! no greater than the caller's, or CAP_SYS_PTRACE. PTRACE_ATTACH and
//! SEIZE ask it with the real ids, /proc/<pid>/mem with the file-system
//! ids; PTRACE_TRACEME asks the parent's capabilities. PR_SET_PTRACER is
//! Yama's and gives EINVAL.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use hal::sync::SpinLock;
use hal::user::{FpuState, GeneralRegs, UserContext, RFLAGS_TF};
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;
use linux_abi::ptrace::*;
use linux_abi::signal as sig;

use super::signal::{self as psig};
use super::task::Task;
use super::{ExitKind, Pid, Process};
use crate::cred::{Cred, PtraceMode};
use crate::sched::WaitQueue;

mod requests;
mod wait;
pub use requests::*;
pub use wait::{traced_by, wait_scan};

/// Bits of [`TaskPtrace::flags`], read without the lock on hot paths.
pub mod flag {
    /// The thread is traced: system calls take the traced path.
    pub const TRACED: u32 = 1;
    /// Stop at syscall entry and exit (PTRACE_SYSCALL).
    pub const SYSCALL: u32 = 2;
    /// Stop at syscall entry and skip the call (PTRACE_SYSEMU).
    pub const SYSEMU: u32 = 4;
    /// Single-stepping (PTRACE_SINGLESTEP): a system call ends in SIGTRAP.
    pub const STEP: u32 = 8;
}

/// What kind of stop the tracee is in (for LISTEN, GET_SYSCALL_INFO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    Signal,
    Group,
    SyscallEntry,
    SyscallExit,
    Event(u32),
}

#[derive(Clone, Copy, Debug)]
struct Stop {
    kind: StopKind,
    /// The wait status word.
    status: i32,
    /// Collected by the tracer's wait.
    reported: bool,
}

/// How the tracer let the tracee go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    /// Run, with this signal (0: none) for a signal-delivery-stop.
    Run(u32),
    /// PTRACE_LISTEN: stay stopped, but out of the tracer's hands.
    Listen,
}

struct TracerRef {
    process: Weak<Process>,
    /// The tracing thread: only it may make requests.
    tid: Pid,
}

/// The state of one traced thread, under [`TaskPtrace`]'s lock.
struct Tracee {
    tracer: Option<TracerRef>,
    seized: bool,
    options: u32,
    stop: Option<Stop>,
    resume: Option<Resume>,
    /// Registers while stopped (the tracer reads and edits these).
    regs: GeneralRegs,
    orig_rax: u64,
    fpu: Option<FpuState>,
    fpu_changed: bool,
    /// The siginfo of the current stop (none for a non-SEIZE group-stop).
    siginfo: Option<Siginfo>,
    event_msg: u64,
    /// The number of the system call the thread is in, or last made, and
    /// whether it is in one (otherwise orig_rax reads -1).
    last_syscall: u64,
    in_syscall: bool,
    /// TF was set by PTRACE_SINGLESTEP, not by the program: hidden from
    /// the tracer and cleared at the next resume.
    forced_tf: bool,
    /// PTRACE_INTERRUPT (or a SEIZE-attached new child): trap at once.
    interrupt: bool,
    /// After PTRACE_LISTEN: stopped, but not in the tracer's hands.
    listening: bool,
    /// The group stop this thread already reported to the tracer.
    group_stop_seen: u64,
    /// The thread exited: its wait status, collected by the tracer.
    exit_status: Option<i32>,
    /// The thread has started to exit: it can no longer be attached.
    exited: bool,
    /// Debug registers as PEEKUSER shows them (DR6 in positive polarity).
    debugreg: [u64; 8],
}

impl Tracee {
    const fn new() -> Tracee {
        Tracee {
            tracer: None,
            seized: false,
            options: 0,
            stop: None,
            resume: None,
            regs: GeneralRegs {
                rax: 0,
                rbx: 0,
                rcx: 0,
                rdx: 0,
                rsi: 0,
                rdi: 0,
                rbp: 0,
                rsp: 0,
                r8: 0,
                r9: 0,
                r10: 0,
                r11: 0,
                r12: 0,
                r13: 0,
                r14: 0,
                r15: 0,
                rip: 0,
                rflags: 0,
                fs_base: 0,
                gs_base: 0,
            },
            orig_rax: u64::MAX,
            fpu: None,
            fpu_changed: false,
            siginfo: None,
            event_msg: 0,
            last_syscall: 0,
            in_syscall: false,
            forced_tf: false,
            interrupt: false,
            listening: false,
            group_stop_seen: 0,
            exit_status: None,
            exited: false,
            debugreg: [0; 8],
        }
    }

    fn tracer_process(&self) -> Option<Arc<Process>> {
        self.tracer.as_ref().and_then(|t| t.process.upgrade())
    }
}

/// A thread's ptrace link.
pub struct TaskPtrace {
    flags: AtomicU32,
    inner: SpinLock<Tracee>,
    /// The stopped tracee sleeps here until resumed.
    resumed: WaitQueue,
}

impl Default for TaskPtrace {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskPtrace {
    pub const fn new() -> TaskPtrace {
        TaskPtrace { flags: AtomicU32::new(0), inner: SpinLock::new(Tracee::new()), resumed: WaitQueue::new() }
    }

    /// Whether system calls must take the traced path (one load).
    #[inline(always)]
    pub fn is_traced(&self) -> bool {
        self.flags.load(Ordering::Relaxed) != 0
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// The tracing thread's id (0: none), for /proc TracerPid.
    pub fn tracer_tid(&self) -> Pid {
        self.inner.lock().tracer.as_ref().map_or(0, |t| t.tid)
    }

    /// Whether the thread sits in a ptrace stop (/proc state `t`).
    pub fn in_stop(&self) -> bool {
        let inner = self.inner.lock();
        inner.stop.is_some() || inner.listening
    }
}

/// A process's side as a tracer: the threads it traces; and its
/// personality, which ptrace's users set.
pub struct TracerState {
    pub tracees: SpinLock<Vec<Arc<Task>>>,
    /// personality(2): the execution domain and its flags. Kiln has one
    /// domain (PER_LINUX) and no address-space randomization, so
    /// ADDR_NO_RANDOMIZE, which debuggers set, holds by itself.
    pub personality: AtomicU32,
}

impl Default for TracerState {
    fn default() -> Self {
        TracerState { tracees: SpinLock::new(Vec::new()), personality: AtomicU32::new(0) }
    }
}

/// The signal that a resume carries (a tracer's `data`), or EIO.
pub fn resume_signal(data: u64) -> Result<u32, Errno> {
    if data >= u64::from(sig::NSIG) {
        return Err(Errno::EIO);
    }
    Ok(data as u32)
}

fn wait_status(how: ExitKind) -> i32 {
    match how {
        ExitKind::Exited(c) => i32::from(c) << 8,
        ExitKind::Signaled { sig: s, core } => s as i32 | if core { 0x80 } else { 0 },
    }
}

// ---------------------------------------------------------------------
// Permission, linking and unlinking.

/// Whether `caller` may trace or inspect `target`, a process whose
/// credentials (of the thread asked about) are `target_cred`: always its
/// own thread group, otherwise as Linux's `__ptrace_may_access` (EPERM).
/// The target's dumpable flag counts only while it has memory.
pub fn may_access(caller: &Task, target: &Process, target_cred: &Cred, mode: PtraceMode) -> Result<(), Errno> {
    if core::ptr::eq(&*caller.process, target) {
        return Ok(());
    }
    let dumpable = target.vm.lock().is_some().then(|| target.dumpable.load(Ordering::Relaxed));
    if caller.cred().may_ptrace(target_cred, dumpable, mode) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// [`may_access`] for a process as a whole (/proc/<pid>/mem): its
/// leader's credentials, kept after the leader exits.
pub fn may_access_process(caller: &Task, target: &Process, mode: PtraceMode) -> Result<(), Errno> {
    let cred = target.cred().ok_or(Errno::ESRCH)?;
    may_access(caller, target, &cred, mode)
}

/// Makes `tracer` (a thread) trace `t`. The caller checked permission.
pub fn link(tracer: &Arc<Task>, t: &Arc<Task>, seized: bool, options: u32) -> Result<(), Errno> {
    {
        let mut inner = t.ptrace.inner.lock();
        // Already traced, or on its way out (Linux: EPERM for an exiting
        // task).
        if inner.tracer.is_some() || inner.exited {
            return Err(Errno::EPERM);
        }
        inner.tracer = Some(TracerRef { process: Arc::downgrade(&tracer.process), tid: tracer.tid() });
        inner.seized = seized;
        inner.options = options;
        inner.stop = None;
        inner.resume = None;
        inner.exit_status = None;
        inner.interrupt = false;
        inner.forced_tf = false;
        // A stop already in progress is reported to the new tracer.
        inner.group_stop_seen = 0;
        // Attached in the middle of a system call (blocked in read, say):
        // its number is what orig_rax shows.
        let nr = t.in_syscall.load(Ordering::Relaxed);
        inner.in_syscall = nr != 0;
        inner.last_syscall = nr.wrapping_sub(1);
    }
    let mut list = tracer.process.tracer.tracees.lock();
    if list.try_reserve(1).is_err() {
        drop(list);
        t.ptrace.inner.lock().tracer = None;
        return Err(Errno::ENOMEM);
    }
    list.push(t.clone());
    t.ptrace.flags.store(flag::TRACED, Ordering::Release);
    Ok(())
}

/// Ends tracing of `t`, which resumes with `signo` if it sits in a
/// signal-delivery-stop (PTRACE_DETACH, or the tracer's exit).
fn unlink(t: &Arc<Task>, signo: u32) {
    let tracer = {
        let mut inner = t.ptrace.inner.lock();
        let tracer = inner.tracer.take();
        if inner.stop.is_some() {
            inner.resume = Some(Resume::Run(signo));
        }
        inner.options = 0;
        inner.seized = false;
        inner.interrupt = false;
        tracer
    };
    t.ptrace.flags.store(0, Ordering::Release);
    if let Some(p) = tracer.and_then(|r| r.process.upgrade()) {
        p.tracer.tracees.lock().retain(|x| !Arc::ptr_eq(x, t));
    }
    t.ptrace.resumed.wake_all();
    // Back to its run loop, which sees whether the group is stopped.
    t.interrupt();
}

/// PTRACE_DETACH.
pub fn detach(t: &Arc<Task>, signo: u32) {
    unlink(t, signo);
}

/// The tracing thread `tracer` exits: its tracees are let go, or killed
/// with PTRACE_O_EXITKILL.
pub fn tracer_exited(tracer: &Arc<Task>) {
    let tid = tracer.tid();
    let mine: Vec<Arc<Task>> = {
        let list = tracer.process.tracer.tracees.lock();
        list.iter().filter(|t| t.ptrace.inner.lock().tracer.as_ref().is_some_and(|r| r.tid == tid)).cloned().collect()
    };
    for t in mine {
        let kill = t.ptrace.inner.lock().options & PTRACE_O_EXITKILL != 0;
        if kill {
            psig::send_to_process(&t.process, Siginfo::kill(sig::SIGKILL, sig::SI_KERNEL, 0, 0));
        }
        unlink(&t, 0);
    }
}

/// The tracee `t` exited with `how`. A traced thread other than a
/// leader whose tracer is its parent stays listed until the tracer
/// collects its exit; a leader traced by its own parent is reported
/// once, as the parent's child.
pub fn tracee_exited(t: &Arc<Task>, how: ExitKind) {
    // Marked under the lock `link` takes: an attach racing with the exit
    // either came first (and is reported here) or is refused.
    let tracer = {
        let mut inner = t.ptrace.inner.lock();
        inner.exited = true;
        inner.tracer_process()
    };
    let Some(tracer) = tracer else {
        return;
    };
    let own_child = t.is_leader() && t.process.parent.lock().upgrade().is_some_and(|pp| Arc::ptr_eq(&pp, &tracer));
    if own_child {
        unlink(t, 0);
        return;
    }
    {
        let mut inner = t.ptrace.inner.lock();
        inner.exit_status = Some(wait_status(how));
        inner.stop = None;
    }
    t.ptrace.flags.store(0, Ordering::Release);
    notify_tracer(&tracer, t, child_code(how), wait_status(how) & 0x7f);
}

fn child_code(how: ExitKind) -> i32 {
    match how {
        ExitKind::Exited(_) => sig::CLD_EXITED,
        ExitKind::Signaled { core: true, .. } => sig::CLD_DUMPED,
        ExitKind::Signaled { .. } => sig::CLD_KILLED,
    }
}

/// Wakes the tracer's waiters and sends it SIGCHLD (unless SA_NOCLDSTOP
/// hides stops).
fn notify_tracer(tracer: &Arc<Process>, t: &Task, code: i32, status: i32) {
    tracer.child_event_seq.fetch_add(1, Ordering::Release);
    tracer.child_events.wake_all();
    let action = tracer.signals.action(sig::SIGCHLD);
    let is_stop = matches!(code, sig::CLD_TRAPPED | sig::CLD_STOPPED);
    if is_stop && action.flags & sig::SA_NOCLDSTOP != 0 {
        return;
    }
    let status = match code {
        sig::CLD_EXITED => (status >> 8) & 0xff,
        _ => status,
    };
    psig::send_to_process(tracer, Siginfo::child(code, tracer.pid_ns.local_or_zero(t.tid()), 0, status));
}

// ---------------------------------------------------------------------
// The tracee's side: stopping.

/// Whether the thread is going away and must not stop (or stop any
/// longer): a group exit or its own exit requested. For the exit event
/// itself only SIGKILL counts.
fn dying(t: &Task, exit_event: bool) -> bool {
    let exiting = t.process.state.lock().exiting;
    if exit_event {
        return matches!(exiting, Some(ExitKind::Signaled { sig: sig::SIGKILL, .. }));
    }
    exiting.is_some() || t.exit_request.lock().is_some()
}

/// Stops the calling tracee until the tracer resumes it; `None` if it is
/// not traced (any more) or is being killed. `status` is the wait status.
fn stop(
    t: &Arc<Task>,
    ctx: &mut UserContext,
    kind: StopKind,
    status: i32,
    siginfo: Option<Siginfo>,
    msg: u64,
) -> Option<Resume> {
    let exit_event = kind == StopKind::Event(PTRACE_EVENT_EXIT);
    if dying(t, exit_event) {
        return None;
    }
    let fpu = ctx.fpu_snapshot();
    let tracer = {
        let mut inner = t.ptrace.inner.lock();
        let tracer = inner.tracer_process()?;
        inner.regs = ctx.regs;
        if inner.forced_tf {
            inner.regs.rflags &= !RFLAGS_TF;
        }
        inner.orig_rax = if inner.in_syscall { inner.last_syscall } else { u64::MAX };
        inner.fpu = Some(fpu);
        inner.fpu_changed = false;
        inner.siginfo = siginfo;
        inner.event_msg = msg;
        inner.resume = None;
        inner.stop = Some(Stop { kind, status, reported: false });
        tracer
    };
    let (code, si_status) = match kind {
        StopKind::Group if !t.ptrace.inner.lock().seized => (sig::CLD_STOPPED, (status >> 8) & 0x7f),
        _ => (sig::CLD_TRAPPED, (status >> 8) & 0x7f),
    };
    notify_tracer(&tracer, t, code, si_status);
    t.ptrace.resumed.wait_until(|| {
        let released = {
            let inner = t.ptrace.inner.lock();
            inner.resume.is_some() || inner.tracer.is_none()
        };
        released || dying(t, exit_event)
    });
    let mut inner = t.ptrace.inner.lock();
    inner.stop = None;
    let resume = inner.resume.take().unwrap_or(Resume::Run(0));
    // The tracer's edits take effect.
    ctx.regs = inner.regs;
    if inner.fpu_changed {
        if let Some(f) = inner.fpu.take() {
            ctx.set_fpu(f);
        }
    }
    inner.fpu = None;
    let step = t.ptrace.flags() & flag::STEP != 0;
    let user_tf = ctx.regs.rflags & RFLAGS_TF != 0;
    if step && inner.tracer.is_some() {
        inner.forced_tf = !user_tf;
        ctx.regs.rflags |= RFLAGS_TF;
    } else if inner.forced_tf {
        inner.forced_tf = false;
        ctx.regs.rflags &= !RFLAGS_TF;
    }
    if inner.tracer.is_none() {
        // Detached while stopped: a LISTEN is over too.
        return Some(match resume {
            Resume::Listen => Resume::Run(0),
            r => r,
        });
    }
    drop(inner);
    if dying(t, exit_event) {
        return None;
    }
    Some(resume)
}

/// An event stop (`PTRACE_EVENT_*`) if the tracer asked for it with
/// `option`; returns whether the thread stopped. Inside a system call the
/// tracer sees rax = -ENOSYS, as on Linux (the result is stored later).
fn event_stop(t: &Arc<Task>, ctx: &mut UserContext, event: u32, msg: u64, in_syscall: bool) {
    let status = stop_status(sig::SIGTRAP, event);
    let mut info = Siginfo::kill(sig::SIGTRAP, (sig::SIGTRAP | (event << 8)) as i32, own_id(t, t.tid()), 0);
    info.si_errno = 0;
    let saved_rax = ctx.regs.rax;
    if in_syscall {
        ctx.regs.rax = Errno::ENOSYS.as_neg_isize() as u64;
    }
    let _ = stop(t, ctx, StopKind::Event(event), status, Some(info), msg);
    if in_syscall {
        ctx.regs.rax = saved_rax;
    }
}

fn option_set(t: &Task, option: u32) -> bool {
    t.ptrace.is_traced() && t.ptrace.inner.lock().options & option != 0
}

/// Signal-delivery-stop: the tracer sees `info` first and decides what is
/// delivered (`None`: nothing, the signal is suppressed or was queued
/// again because it is now blocked).
pub fn signal_stop(t: &Arc<Task>, ctx: &mut UserContext, info: Siginfo) -> Option<Siginfo> {
    let signo = info.si_signo as u32;
    let status = stop_status(signo, 0);
    let resume = match stop(t, ctx, StopKind::Signal, status, Some(info), 0) {
        Some(r) => r,
        // Not traced any more, or dying: handled as if untraced.
        None => return Some(info),
    };
    let new = match resume {
        Resume::Run(s) => s,
        Resume::Listen => 0,
    };
    if new == 0 {
        return None;
    }
    let (edited, tracer_tid) = {
        let inner = t.ptrace.inner.lock();
        (inner.siginfo, inner.tracer.as_ref().map_or(0, |r| r.tid))
    };
    let mut delivered = edited.unwrap_or(info);
    if delivered.si_signo as u32 != new {
        delivered = Siginfo::kill(new, sig::SI_USER, tracer_tid, 0);
    }
    if t.sigmask.lock().contains(new) {
        psig::send_to_task(t, delivered);
        return None;
    }
    Some(delivered)
}

/// The thread's part in a group stop while traced: report it to the
/// tracer once per stop (status with the stop signal, PTRACE_EVENT_STOP
/// under SEIZE); after the tracer resumes it, it runs even though the
/// group is stopped. LISTEN keeps it stopped until the group stop ends or
/// the tracer interrupts it, when it traps again. Returns whether it
/// stopped (the caller looks at its state again).
pub fn group_stop(t: &Arc<Task>, ctx: &mut UserContext) -> bool {
    let (gen, signo) = {
        let st = t.process.state.lock();
        match st.stopped {
            Some(s) => (st.stop_gen, s),
            None => return false,
        }
    };
    let seized = {
        let mut inner = t.ptrace.inner.lock();
        if inner.group_stop_seen == gen {
            return false;
        }
        inner.group_stop_seen = gen;
        inner.seized
    };
    let resume = if seized {
        trap_event_stop(t, ctx, signo)
    } else {
        stop(t, ctx, StopKind::Group, stop_status(signo, 0), None, 0)
    };
    if resume == Some(Resume::Listen) {
        listen(t, ctx);
    }
    true
}

/// A PTRACE_EVENT_STOP trap (SEIZE): the group stop's signal, or SIGTRAP
/// when the group is not stopped (INTERRUPT, a new child, the end of a
/// LISTEN).
fn trap_event_stop(t: &Arc<Task>, ctx: &mut UserContext, signo: u32) -> Option<Resume> {
    let code = (signo | (PTRACE_EVENT_STOP << 8)) as i32;
    let info = Siginfo::kill(signo, code, own_id(t, t.tid()), 0);
    let kind = if signo == sig::SIGTRAP { StopKind::Event(PTRACE_EVENT_STOP) } else { StopKind::Group };
    stop(t, ctx, kind, stop_status(signo, PTRACE_EVENT_STOP), Some(info), 0)
}

/// After PTRACE_LISTEN: stay stopped until the group stop ends, the
/// tracer interrupts or detaches, or the thread is killed; then trap
/// again (SEIZE's PTRACE_EVENT_STOP with SIGTRAP) while still traced.
fn listen(t: &Arc<Task>, ctx: &mut UserContext) {
    loop {
        let p = &t.process;
        t.ptrace.inner.lock().listening = true;
        p.resume.wait_until(|| {
            let released = {
                let inner = t.ptrace.inner.lock();
                inner.tracer.is_none() || inner.interrupt
            };
            released || p.state.lock().stopped.is_none() || dying(t, false)
        });
        {
            let mut inner = t.ptrace.inner.lock();
            inner.listening = false;
            if inner.tracer.is_none() {
                return;
            }
            inner.interrupt = false;
        }
        if dying(t, false) {
            return;
        }
        let signo = t.process.state.lock().stopped.unwrap_or(sig::SIGTRAP);
        match trap_event_stop(t, ctx, signo) {
            Some(Resume::Listen) => continue,
            _ => return,
        }
    }
}

/// Runs at the top of the tracee's signal handling: a PTRACE_INTERRUPT
/// (or a SEIZE-attached child's first) trap. Returns whether it stopped.
pub fn pending_trap(t: &Arc<Task>, ctx: &mut UserContext) -> bool {
    {
        let mut inner = t.ptrace.inner.lock();
        if !inner.interrupt {
            return false;
        }
        inner.interrupt = false;
    }
    let signo = t.process.state.lock().stopped.unwrap_or(sig::SIGTRAP);
    if signo != sig::SIGTRAP {
        // The group is stopped: that is the stop the tracer sees.
        let gen = t.process.state.lock().stop_gen;
        t.ptrace.inner.lock().group_stop_seen = gen;
    }
    if trap_event_stop(t, ctx, signo) == Some(Resume::Listen) {
        listen(t, ctx);
    }
    true
}

// ---------------------------------------------------------------------
// System calls, exec, fork and exit.

/// Records the system call the traced thread is making (orig_rax).
pub fn note_syscall(t: &Task, nr: u64) {
    let mut inner = t.ptrace.inner.lock();
    inner.last_syscall = nr;
    inner.in_syscall = true;
}

/// The traced thread entered the kernel other than by a system call:
/// orig_rax reads -1.
pub fn note_trap(t: &Task) {
    t.ptrace.inner.lock().in_syscall = false;
}

/// Syscall-enter-stop. Returns the number to run (the tracer may change
/// orig_rax; -1 skips the call), or `None` if the thread is being killed.
pub fn syscall_enter_stop(t: &Arc<Task>, ctx: &mut UserContext, nr: u64) -> Option<u64> {
    let sysgood = t.ptrace.inner.lock().options & PTRACE_O_TRACESYSGOOD != 0;
    let signo = sig::SIGTRAP | if sysgood { 0x80 } else { 0 };
    let info = Siginfo::kill(sig::SIGTRAP, signo as i32, own_id(t, t.tid()), 0);
    ctx.regs.rax = Errno::ENOSYS.as_neg_isize() as u64;
    let resume = stop(t, ctx, StopKind::SyscallEntry, stop_status(signo, 0), Some(info), PTRACE_EVENTMSG_SYSCALL_ENTRY);
    // The tracer may have changed orig_rax.
    let nr = if resume.is_some() { t.ptrace.inner.lock().orig_rax } else { nr };
    match resume {
        None if dying(t, false) => None,
        Some(Resume::Run(s)) => {
            inject(t, s);
            Some(nr)
        }
        _ => Some(nr),
    }
}

/// What became of a SECCOMP_RET_TRACE verdict.
pub enum SeccompTrace {
    /// No tracer asked for PTRACE_EVENT_SECCOMP.
    NoTracer,
    /// The tracer skipped the call (orig_rax -1), or the thread is dying.
    Skip,
    /// Go on with this call (the tracer may have changed orig_rax).
    Run(u64),
}

/// PTRACE_EVENT_SECCOMP for a filter's SECCOMP_RET_TRACE, the filter's
/// data as the message. During the stop rax reads -ENOSYS; a skipped
/// call returns whatever the tracer left there.
pub fn seccomp_event(t: &Arc<Task>, ctx: &mut UserContext, data: u32) -> SeccompTrace {
    if !option_set(t, PTRACE_O_TRACESECCOMP) {
        return SeccompTrace::NoTracer;
    }
    let status = stop_status(sig::SIGTRAP, PTRACE_EVENT_SECCOMP);
    let mut info = Siginfo::kill(sig::SIGTRAP, (sig::SIGTRAP | (PTRACE_EVENT_SECCOMP << 8)) as i32, t.tid(), 0);
    info.si_errno = 0;
    ctx.regs.rax = Errno::ENOSYS.as_neg_isize() as u64;
    let _ = stop(t, ctx, StopKind::Event(PTRACE_EVENT_SECCOMP), status, Some(info), u64::from(data));
    if dying(t, false) {
        return SeccompTrace::Skip;
    }
    let nr = t.ptrace.inner.lock().orig_rax;
    if (nr as i64) < 0 {
        SeccompTrace::Skip
    } else {
        SeccompTrace::Run(nr)
    }
}

/// Syscall-exit-stop (the result is in rax; the tracer may change it).
pub fn syscall_exit_stop(t: &Arc<Task>, ctx: &mut UserContext) {
    let sysgood = t.ptrace.inner.lock().options & PTRACE_O_TRACESYSGOOD != 0;
    let signo = sig::SIGTRAP | if sysgood { 0x80 } else { 0 };
    let info = Siginfo::kill(sig::SIGTRAP, signo as i32, own_id(t, t.tid()), 0);
    if let Some(Resume::Run(s)) =
        stop(t, ctx, StopKind::SyscallExit, stop_status(signo, 0), Some(info), PTRACE_EVENTMSG_SYSCALL_EXIT)
    {
        inject(t, s);
    }
}

/// A signal given when resuming from a syscall stop is sent, as Linux's
/// ptrace_report_syscall does.
fn inject(t: &Arc<Task>, signo: u32) {
    if signo != 0 {
        psig::send_to_task(t, Siginfo::kill(signo, sig::SI_KERNEL, 0, 0));
    }
}

/// A system call made while single-stepping ends in SIGTRAP (TRAP_BRKPT)
/// at the instruction after it: the CPU masks TF on SYSCALL, so no debug
/// exception reports it.
pub fn step_over_syscall(t: &Arc<Task>, ctx: &UserContext) {
    psig::send_to_task(t, Siginfo::fault(sig::SIGTRAP, sig::TRAP_BRKPT, ctx.regs.rip));
}

/// A signal handler was just set up: a single-stepping tracee stops at
/// its first instruction (SIGTRAP), with stepping turned off, as Linux's
/// signal_delivered does.
pub fn handler_entered(t: &Arc<Task>, ctx: &mut UserContext) {
    if t.ptrace.flags() & flag::STEP == 0 {
        return;
    }
    t.ptrace.flags.fetch_and(!flag::STEP, Ordering::AcqRel);
    t.ptrace.inner.lock().forced_tf = false;
    let info = Siginfo::kill(sig::SIGTRAP, sig::SIGTRAP as i32, own_id(t, t.tid()), 0);
    let _ = stop(t, ctx, StopKind::Signal, stop_status(sig::SIGTRAP, 0), Some(info), 0);
}

/// The event a clone would report (`PTRACE_EVENT_*`), or 0.
pub fn clone_event(parent: &Task, clone_flags: u64, exit_signal: u32) -> u32 {
    if !parent.ptrace.is_traced() || clone_flags & linux_abi::consts::CLONE_UNTRACED != 0 {
        return 0;
    }
    let (event, option) = if clone_flags & linux_abi::consts::CLONE_VFORK != 0 {
        (PTRACE_EVENT_VFORK, PTRACE_O_TRACEVFORK)
    } else if exit_signal != sig::SIGCHLD {
        (PTRACE_EVENT_CLONE, PTRACE_O_TRACECLONE)
    } else {
        (PTRACE_EVENT_FORK, PTRACE_O_TRACEFORK)
    };
    if option_set(parent, option) {
        event
    } else {
        0
    }
}

/// Attaches a new child to its parent's tracer (an enabled fork/clone
/// event, or CLONE_PTRACE): same tracer and options; it starts with a
/// PTRACE_EVENT_STOP under SEIZE, else with SIGSTOP pending.
pub fn attach_child(parent: &Arc<Task>, child: &Arc<Task>) -> Result<(), Errno> {
    let (tracer_process, tracer_tid, seized, options) = {
        let inner = parent.ptrace.inner.lock();
        let Some(r) = inner.tracer.as_ref() else {
            return Ok(());
        };
        (r.process.upgrade(), r.tid, inner.seized, inner.options)
    };
    let Some(tp) = tracer_process else {
        return Ok(());
    };
    let tracer = tp.tasks.lock().iter().find(|x| x.tid() == tracer_tid).cloned();
    let Some(tracer) = tracer else {
        return Ok(());
    };
    link(&tracer, child, seized, options)?;
    if seized {
        child.ptrace.inner.lock().interrupt = true;
    } else {
        psig::queue_private(child, Siginfo::kill(sig::SIGSTOP, sig::SI_USER, 0, 0));
    }
    child.attention.store(true, Ordering::Release);
    Ok(())
}

/// The fork/vfork/clone event stop in the parent (`event` from
/// [`clone_event`]), with the new thread's id as the message.
pub fn clone_event_stop(t: &Arc<Task>, ctx: &mut UserContext, event: u32, child: Pid) {
    event_stop(t, ctx, event, tracer_sees(t, child) as u64, true);
}

/// A thread's own id (or its process's) as its own pid namespace has it,
/// for the siginfo of its stops.
fn own_id(t: &Task, global: Pid) -> Pid {
    t.process.pid_ns.local_or_zero(global)
}

/// A global id as `t`'s tracer's pid namespace has it (0 when it cannot
/// see it), for event messages that carry ids.
fn tracer_sees(t: &Task, global: Pid) -> Pid {
    let tracer = t.ptrace.inner.lock().tracer_process();
    tracer.map_or(global, |tp| tp.pid_ns.local_or_zero(global))
}

/// PTRACE_EVENT_VFORK_DONE: the vfork child let go of the memory.
pub fn vfork_done(t: &Arc<Task>, ctx: &mut UserContext, child: Pid) {
    if option_set(t, PTRACE_O_TRACEVFORKDONE) {
        event_stop(t, ctx, PTRACE_EVENT_VFORK_DONE, tracer_sees(t, child) as u64, true);
    }
}

/// After a successful execve: PTRACE_EVENT_EXEC (message: the thread id
/// before the exec), or for a tracee attached without SEIZE and without
/// the option, Linux's legacy SIGTRAP.
pub fn exec_event(t: &Arc<Task>, ctx: &mut UserContext, old_tid: Pid) {
    if !t.ptrace.is_traced() {
        return;
    }
    {
        let mut inner = t.ptrace.inner.lock();
        inner.forced_tf = false;
    }
    if option_set(t, PTRACE_O_TRACEEXEC) {
        event_stop(t, ctx, PTRACE_EVENT_EXEC, tracer_sees(t, old_tid) as u64, true);
    } else if !t.ptrace.inner.lock().seized {
        psig::send_to_process(&t.process, Siginfo::kill(sig::SIGTRAP, sig::SI_USER, own_id(t, t.process.pid), 0));
    }
}

/// PTRACE_EVENT_EXIT, before a traced thread exits (not for SIGKILL);
/// the message is the exit's wait status.
pub fn exit_event(t: &Arc<Task>, ctx: &mut UserContext, how: ExitKind) {
    if option_set(t, PTRACE_O_TRACEEXIT) {
        event_stop(t, ctx, PTRACE_EVENT_EXIT, wait_status(how) as u32 as u64, false);
    }
}
