//! Signals: sending, the pending sets, default actions, and delivery to
//! handlers through the x86_64 `rt_sigframe` that `rt_sigreturn` undoes.

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use hal::sync::SpinLock;
use hal::user::UserContext;
use linux_abi::errno::Errno;
use linux_abi::layout::{rt_sigframe, Mcontext, Siginfo, Stack, Ucontext};
use linux_abi::signal::{self as sig, DefaultAction, SigSet};

use super::task::{Flow, Task};
use super::{ExitKind, Process};
use crate::event::{Events, Pollee};
use crate::mm::uaccess;

pub type SigInfo = Siginfo;

pub const SIG_DFL: u64 = 0;
pub const SIG_IGN: u64 = 1;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: SigSet,
}

pub type Actions = [SigAction; sig::NSIG as usize];

/// A process's signal handlers (shared with CLONE_SIGHAND) and its
/// process-wide pending signals.
pub struct SignalState {
    pub actions: SpinLock<Arc<SpinLock<Actions>>>,
    pub shared_pending: SpinLock<PendingSignals>,
    /// Notified whenever a signal becomes pending for the process or one
    /// of its threads (signalfd readiness, Linux's signalfd_wqh).
    pub pollee: Pollee,
}

impl SignalState {
    pub fn new(actions: Arc<SpinLock<Actions>>) -> SignalState {
        SignalState {
            actions: SpinLock::new(actions),
            shared_pending: SpinLock::new(PendingSignals::default()),
            pollee: Pollee::new(),
        }
    }

    pub fn action(&self, signo: u32) -> SigAction {
        self.actions.lock().lock()[signo as usize]
    }
}

pub fn default_actions() -> Actions {
    [SigAction::default(); sig::NSIG as usize]
}

/// Signals waiting for delivery. Standard signals are not queued (a
/// second one while pending is merged); real-time ones are.
#[derive(Default)]
pub struct PendingSignals {
    pub set: SigSet,
    queue: VecDeque<Siginfo>,
}

impl PendingSignals {
    fn add(&mut self, info: Siginfo) {
        let signo = info.si_signo as u32;
        if !sig::is_realtime(signo) && self.set.contains(signo) {
            return;
        }
        if self.queue.try_reserve(1).is_ok() {
            self.set.add(signo);
            self.queue.push_back(info);
        }
    }

    fn take(&mut self, signo: u32) -> Option<Siginfo> {
        let pos = self.queue.iter().position(|i| i.si_signo as u32 == signo)?;
        // Mostly the only one queued: popping it moves nothing else.
        let info = if pos == 0 { self.queue.pop_front() } else { self.queue.remove(pos) };
        if !self.queue.iter().any(|i| i.si_signo as u32 == signo) {
            self.set.remove(signo);
        }
        info
    }

    /// Lowest-numbered pending signal not in `blocked` (synchronous
    /// faults were queued first and are taken first by `take_front`).
    fn next(&self, blocked: SigSet) -> Option<u32> {
        self.set.difference(blocked).first()
    }

    /// The queued signals in order (PTRACE_PEEKSIGINFO).
    pub fn queued(&self) -> impl Iterator<Item = &Siginfo> {
        self.queue.iter()
    }

    fn discard(&mut self, signo: u32) {
        self.queue.retain(|i| i.si_signo as u32 != signo);
        self.set.remove(signo);
    }
}

fn is_ignored(p: &Process, signo: u32) -> bool {
    let action = p.signals.action(signo);
    let ignored =
        action.handler == SIG_IGN || (action.handler == SIG_DFL && sig::default_action(signo) == DefaultAction::Ignore);
    // A tracer sees even ignored signals (never SIGKILL, which is not
    // queued at all).
    ignored && !p.tasks.lock().iter().any(|t| t.ptrace.is_traced())
}

fn is_stop_signal(signo: u32) -> bool {
    matches!(signo, sig::SIGSTOP | sig::SIGTSTP | sig::SIGTTIN | sig::SIGTTOU)
}

/// Whether a user-sent signal was sent by the kernel on its own behalf
/// (a fault, a timer, SIGCHLD, SIGPIPE, ...) rather than by kill, tkill or
/// sigqueue: those carry SI_USER or a negative code.
fn from_kernel(info: &Siginfo) -> bool {
    info.si_code > 0
}

/// Linux's SIGNAL_UNKILLABLE rule: an init (the system's or a pid
/// namespace's) drops every signal whose action is the default, SIGKILL
/// and SIGSTOP included, unless the kernel itself sends SIGKILL or
/// SIGSTOP (the OOM killer) or `force` says a process of an ancestor pid
/// namespace did. A handler it installed runs.
fn init_drops(p: &Process, info: &Siginfo, force: bool) -> bool {
    let signo = info.si_signo as u32;
    p.is_unkillable()
        && p.signals.action(signo).handler == SIG_DFL
        && !((force || from_kernel(info)) && matches!(signo, sig::SIGKILL | sig::SIGSTOP))
}

/// A user-sent signal from `sender` to a process of pid namespace
/// `target_ns`: a sender the target cannot see (one in an ancestor
/// namespace) shows as pid 0 and forces SIGKILL and SIGSTOP through to a
/// namespace's init, as Linux's send_signal_locked does. Rewrites `info`
/// as the target gets it (in place: it is 128 bytes) and returns whether
/// it is forced.
fn from_sender(info: &mut Siginfo, sender: &Process, target_ns: &super::pidns::PidNs) -> bool {
    if info.si_code > 0 || target_ns.local(sender.pid).is_some() {
        return false;
    }
    // si_pid: the union's first four bytes.
    info.fields[0..4].copy_from_slice(&0i32.to_le_bytes());
    true
}

/// Sends a signal to a process (kill).
pub fn send_to_process(p: &Arc<Process>, info: Siginfo) {
    deliver_to_process(p, info, false);
}

/// Sends a user's signal (kill, sigqueue) from `sender` to a process.
pub fn send_from(sender: &Process, p: &Arc<Process>, mut info: Siginfo) {
    let force = from_sender(&mut info, sender, &p.pid_ns);
    deliver_to_process(p, info, force);
}

/// Sends a user's signal (tkill, tgkill, rt_tgsigqueueinfo) from
/// `sender` to one thread.
pub fn send_to_task_from(sender: &Process, t: &Arc<Task>, mut info: Siginfo) {
    let force = from_sender(&mut info, sender, &t.process.pid_ns);
    deliver_to_task(t, info, force);
}

fn deliver_to_process(p: &Arc<Process>, info: Siginfo, force: bool) {
    let signo = info.si_signo as u32;
    if signo == 0 {
        return;
    }
    if p.state.lock().zombie {
        return;
    }
    // A blocked signal stays pending even if ignored now: the handler may
    // change before it is unblocked, and sigwait may take it (it is
    // dropped at delivery otherwise; Linux's sig_ignored asks the mask
    // first, for init too). Asked only of an ignored signal: most are not.
    let blocked_everywhere = || p.tasks.lock().iter().all(|t| t.sigmask.lock().contains(signo));
    if init_drops(p, &info, force) && !blocked_everywhere() {
        return;
    }
    if signo == sig::SIGKILL {
        group_exit(p, ExitKind::Signaled { sig: sig::SIGKILL, core: false });
        continue_process(p, false);
        return;
    }
    if signo == sig::SIGCONT {
        p.signals.shared_pending.lock().discard(sig::SIGSTOP);
        p.signals.shared_pending.lock().discard(sig::SIGTSTP);
        p.signals.shared_pending.lock().discard(sig::SIGTTIN);
        p.signals.shared_pending.lock().discard(sig::SIGTTOU);
        continue_process(p, true);
    } else if is_stop_signal(signo) {
        p.signals.shared_pending.lock().discard(sig::SIGCONT);
    }
    if is_ignored(p, signo) && !blocked_everywhere() {
        return;
    }
    p.signals.shared_pending.lock().add(info);
    p.signals.pollee.notify(Events::IN);
    // Wake a thread that can take it (woken outside the list's lock).
    let target = {
        let tasks = p.tasks.lock();
        tasks.iter().find(|t| !t.sigmask.lock().contains(signo)).or(tasks.first()).cloned()
    };
    if let Some(t) = target {
        t.interrupt();
    }
}

/// Sends a signal to one thread.
pub fn send_to_task(t: &Arc<Task>, info: Siginfo) {
    deliver_to_task(t, info, false);
}

fn deliver_to_task(t: &Arc<Task>, info: Siginfo, force: bool) {
    let signo = info.si_signo as u32;
    if signo == 0 {
        return;
    }
    if matches!(signo, sig::SIGKILL | sig::SIGCONT) || is_stop_signal(signo) {
        // Process-wide in effect.
        deliver_to_process(&t.process, info, force);
        return;
    }
    if (is_ignored(&t.process, signo) || init_drops(&t.process, &info, force)) && !t.sigmask.lock().contains(signo) {
        return;
    }
    t.pending.lock().add(info);
    t.process.signals.pollee.notify(Events::IN);
    t.interrupt();
}

/// Queues `info` for `t` alone, as pending from the start (a traced new
/// child's SIGSTOP).
pub fn queue_private(t: &Task, info: Siginfo) {
    t.pending.lock().add(info);
}

/// Takes a pending signal from `set` (thread-directed first), for
/// rt_sigtimedwait.
pub fn take_from_set(t: &Task, set: SigSet) -> Option<Siginfo> {
    let others = SigSet(!set.0);
    {
        let mut own = t.pending.lock();
        if let Some(s) = own.next(others) {
            return own.take(s);
        }
    }
    let mut shared = t.process.signals.shared_pending.lock();
    let s = shared.next(others)?;
    shared.take(s)
}

/// A synchronous fault: if the program blocks or ignores the signal, it
/// dies of it anyway (as on Linux).
pub fn force_fault_signal(t: &Arc<Task>, info: Siginfo) {
    let signo = info.si_signo as u32;
    if signo == sig::SIGKILL {
        group_exit(&t.process, ExitKind::Signaled { sig: sig::SIGKILL, core: false });
        return;
    }
    {
        let actions = t.process.signals.actions.lock().clone();
        let mut actions = actions.lock();
        let blocked = t.sigmask.lock().contains(signo);
        if blocked || actions[signo as usize].handler == SIG_IGN {
            actions[signo as usize].handler = SIG_DFL;
        }
        // A fault init cannot handle kills it, as on Linux.
        if actions[signo as usize].handler == SIG_DFL {
            t.process.unkillable.store(false, core::sync::atomic::Ordering::Relaxed);
        }
    }
    t.sigmask.lock().remove(signo);
    t.pending.lock().add(info);
    t.interrupt();
}

/// A signal that ends the process by its default action whatever the
/// program did with it (Linux's HANDLER_EXIT): the disposition goes back
/// to default and the signal is unblocked.
pub fn force_default_signal(t: &Arc<Task>, info: Siginfo) {
    let signo = info.si_signo as u32;
    {
        let actions = t.process.signals.actions.lock().clone();
        actions.lock()[signo as usize].handler = SIG_DFL;
        t.process.unkillable.store(false, core::sync::atomic::Ordering::Relaxed);
    }
    t.sigmask.lock().remove(signo);
    t.pending.lock().add(info);
    t.interrupt();
}

/// Starts a group exit: every thread of `p` will exit with `how`.
pub fn group_exit(p: &Arc<Process>, how: ExitKind) {
    {
        let mut st = p.state.lock();
        if st.exiting.is_none() {
            st.exiting = Some(how);
        }
    }
    for t in p.tasks.lock().iter() {
        t.interrupt();
    }
    p.resume.wake_all();
}

fn continue_process(p: &Arc<Process>, report: bool) {
    let was_stopped = {
        let mut st = p.state.lock();
        let was = st.stopped.take().is_some();
        if was && report {
            st.continued_unreported = true;
        }
        was
    };
    p.resume.wake_all();
    if was_stopped && report {
        p.notify_parent_waiters();
        notify_parent_signal(p, sig::CLD_CONTINUED, sig::SIGCONT as i32);
    }
}

fn notify_parent_signal(p: &Arc<Process>, code: i32, status: i32) {
    let Some(parent) = p.parent.lock().upgrade() else {
        return;
    };
    let action = parent.signals.action(sig::SIGCHLD);
    if code != sig::CLD_EXITED
        && code != sig::CLD_KILLED
        && code != sig::CLD_DUMPED
        && action.flags & sig::SA_NOCLDSTOP != 0
    {
        return;
    }
    let uid = p.cred().map_or(0, |c| c.uid);
    send_to_process(&parent, Siginfo::child(code, parent.pid_ns.local_or_zero(p.pid), uid, status));
}

/// Tells the parent that `p` exited.
pub fn notify_parent_exit(p: &Arc<Process>, how: ExitKind) {
    if p.exit_signal == 0 {
        return;
    }
    let (code, status) = match how {
        ExitKind::Exited(c) => (sig::CLD_EXITED, i32::from(c)),
        ExitKind::Signaled { sig: s, core } => (if core { sig::CLD_DUMPED } else { sig::CLD_KILLED }, s as i32),
    };
    notify_parent_signal(p, code, status);
}

/// Stops the process for `signo` and waits until continued or killed.
fn stop_process(t: &Arc<Task>, signo: u32) {
    let p = &t.process;
    {
        let mut st = p.state.lock();
        if st.stopped.is_none() {
            st.stopped = Some(signo);
            st.stop_reported = false;
            st.stop_gen += 1;
        }
    }
    p.notify_parent_waiters();
    notify_parent_signal(p, sig::CLD_STOPPED, signo as i32);
    // A traced thread reports the stop to its tracer instead (the caller
    // loops back to `ptrace::group_stop`).
    if !t.ptrace.is_traced() {
        wait_while_stopped(t);
    }
}

fn wait_while_stopped(t: &Arc<Task>) {
    let p = &t.process;
    p.resume.wait_until(|| {
        let st = p.state.lock();
        // An exec in another thread ends this one even while stopped; a
        // thread that became traced reports the stop to its tracer.
        st.stopped.is_none() || st.exiting.is_some() || t.exit_request.lock().is_some() || t.ptrace.is_traced()
    });
}

/// Runs before every return to user mode: exits, stops, and delivers
/// one pending signal (building a handler frame if it has a handler).
///
/// Inlined: this runs before every return to user mode, and almost always
/// finds nothing to do, which a plain load decides.
#[inline]
pub fn handle_pending(t: &Arc<Task>, ctx: &mut UserContext) -> Flow {
    // Fast path: nothing was signalled, requested or interrupted since the
    // last check (every sender sets `attention` through Task::interrupt).
    // A flag set just after the load is seen at the next return: the
    // sender also interrupts the thread, which brings it back here.
    if !t.attention.load(core::sync::atomic::Ordering::Acquire) {
        return Flow::Continue;
    }
    if !t.attention.swap(false, core::sync::atomic::Ordering::AcqRel) {
        return Flow::Continue;
    }
    handle_attention(t, ctx)
}

#[inline(never)]
fn handle_attention(t: &Arc<Task>, ctx: &mut UserContext) -> Flow {
    loop {
        // Bound first: a guard in the `if let` would stay held through the exit.
        let requested = t.exit_request.lock().take();
        // One look at the process state for both questions.
        let (exiting, stopped) = {
            let st = t.process.state.lock();
            (st.exiting, st.stopped.is_some())
        };
        if let Some(how) = requested.or(exiting) {
            if t.ptrace.is_traced() {
                super::ptrace::exit_event(t, ctx, how);
            }
            super::exit::exit_task(t, how);
            return Flow::Exit;
        }
        let traced = t.ptrace.is_traced();
        if traced && super::ptrace::pending_trap(t, ctx) {
            continue;
        }
        // A tracee's trap check above may have changed the state.
        let stopped = if traced { t.process.state.lock().stopped.is_some() } else { stopped };
        if stopped {
            if !traced {
                wait_while_stopped(t);
                continue;
            }
            if super::ptrace::group_stop(t, ctx) {
                continue;
            }
        }
        let blocked = *t.sigmask.lock();
        let taken = {
            let mut own = t.pending.lock();
            match own.next(blocked) {
                Some(s) => own.take(s),
                None => {
                    let mut shared = t.process.signals.shared_pending.lock();
                    shared.next(blocked).and_then(|s| shared.take(s))
                }
            }
        };
        let Some(mut info) = taken else {
            if let Some(kt) = t.kthread.get() {
                kt.set_interrupt(false);
            }
            // A call that swapped the mask (ppoll, epoll_pwait...) left it
            // for a handler that did not come (the signal was ignored):
            // the caller's own mask comes back now, as Linux's
            // restore_saved_sigmask does.
            let saved = t.saved_sigmask.lock().take();
            if let Some(mask) = saved {
                *t.sigmask.lock() = mask;
            }
            finish_restart(t, ctx, None);
            return Flow::Continue;
        };
        // Signal-delivery-stop: the tracer decides what is delivered (an
        // untraced thread's siginfo is not moved again: 128 bytes).
        if traced {
            match super::ptrace::signal_stop(t, ctx, info) {
                Some(changed) => info = changed,
                None => continue,
            }
        }
        let signo = info.si_signo as u32;
        let action = t.process.signals.action(signo);
        if action.handler == SIG_IGN {
            continue;
        }
        if action.handler == SIG_DFL {
            // Init drops a default-action signal that was blocked when it
            // came and got through only now (Linux's get_signal does too).
            if t.process.is_unkillable() && !matches!(signo, sig::SIGKILL | sig::SIGSTOP) {
                continue;
            }
            match sig::default_action(signo) {
                DefaultAction::Ignore | DefaultAction::Continue => continue,
                DefaultAction::Stop => {
                    stop_process(t, signo);
                    continue;
                }
                DefaultAction::Terminate => {
                    group_exit(&t.process, ExitKind::Signaled { sig: signo, core: false });
                    continue;
                }
                DefaultAction::CoreDump => {
                    core_dump_exit(t, ctx, &info);
                    continue;
                }
            }
        }
        finish_restart(t, ctx, Some(&action));
        if deliver(t, ctx, &info, &action).is_err() {
            // The stack is unusable: die of SIGSEGV, as Linux does.
            core_dump_exit(t, ctx, &Siginfo::fault(sig::SIGSEGV, sig::SI_KERNEL, 0));
            continue;
        }
        if let Some(kt) = t.kthread.get() {
            kt.set_interrupt(false);
        }
        if traced {
            super::ptrace::handler_entered(t, ctx);
        }
        return Flow::Continue;
    }
}

/// A core-dumping signal's default action: the other threads are told to
/// exit first (Linux's coredump_wait), the dump is written, and the exit
/// status has the core bit only if it was (`coredump`).
fn core_dump_exit(t: &Arc<Task>, ctx: &mut UserContext, info: &Siginfo) {
    let signo = info.si_signo as u32;
    let first = {
        let mut st = t.process.state.lock();
        let first = st.exiting.is_none();
        if first {
            st.exiting = Some(ExitKind::Signaled { sig: signo, core: false });
        }
        first
    };
    if !first {
        return; // someone else's exit (or dump) came first
    }
    group_exit(&t.process, ExitKind::Signaled { sig: signo, core: false });
    if super::coredump::dump(t, ctx, info) {
        t.process.state.lock().exiting = Some(ExitKind::Signaled { sig: signo, core: true });
    }
}

/// Settles a system call that was interrupted: restart it or fail it
/// with EINTR, depending on the restart code and the handler's SA_RESTART.
fn finish_restart(t: &Arc<Task>, ctx: &mut UserContext, handler: Option<&SigAction>) {
    let Some(orig_nr) = t.restart_nr.lock().take() else {
        return;
    };
    let code = -(ctx.regs.rax as i64) as i32;
    let restart = match (Errno::from_i32(code), handler) {
        (Some(Errno::ERESTARTNOINTR), _) => true,
        (Some(_), None) => true,
        (Some(Errno::ERESTARTSYS), Some(a)) => a.flags & sig::SA_RESTART != 0,
        _ => false,
    };
    if restart {
        ctx.regs.rax = orig_nr;
        ctx.regs.rip -= 2; // back onto the SYSCALL instruction
    } else {
        ctx.regs.rax = Errno::EINTR.as_neg_isize() as u64;
    }
}

fn on_alt_stack(alt: &super::task::AltStack, sp: u64) -> bool {
    alt.size != 0 && sp > alt.sp && sp - alt.sp <= alt.size
}

/// Builds the rt_sigframe and points the thread at the handler.
/// The most stack a signal frame takes (AT_MINSIGSTKSZ): the FXSAVE
/// image and its 64-byte alignment, the rt_sigframe and its alignment,
/// rounded up to 16 as Linux reports it. The red zone is not counted: a
/// frame on an alternate stack does not skip one.
pub fn max_frame_size() -> u64 {
    (512 + 63 + rt_sigframe::SIZE as u64 + 15 + 8).next_multiple_of(16)
}

fn deliver(t: &Arc<Task>, ctx: &mut UserContext, info: &Siginfo, action: &SigAction) -> Result<(), Errno> {
    let vm = t.process.vm()?;
    let signo = info.si_signo as u32;
    if t.rseq.is_registered() {
        // An rseq critical section is aborted before the frame saves rip.
        super::rseq::signal_delivery(t, ctx, signo);
    }
    let alt = *t.altstack.lock();
    let mut sp = ctx.regs.rsp;
    let use_alt = action.flags & sig::SA_ONSTACK != 0
        && alt.flags & sig::SS_DISABLE == 0
        && alt.size != 0
        && !on_alt_stack(&alt, sp);
    if use_alt {
        sp = alt.sp + alt.size;
    } else {
        sp = sp.wrapping_sub(128); // the red zone below rsp is the program's
    }
    let fpstate = (sp.wrapping_sub(512)) & !63;
    let frame = ((fpstate - rt_sigframe::SIZE as u64) & !15) - 8;

    let old_mask = *t.sigmask.lock();
    let saved_mask = t.saved_sigmask.lock().take().unwrap_or(old_mask);
    let r = &ctx.regs;
    let mcontext = Mcontext {
        r8: r.r8,
        r9: r.r9,
        r10: r.r10,
        r11: r.r11,
        r12: r.r12,
        r13: r.r13,
        r14: r.r14,
        r15: r.r15,
        rdi: r.rdi,
        rsi: r.rsi,
        rbp: r.rbp,
        rbx: r.rbx,
        rdx: r.rdx,
        rax: r.rax,
        rcx: r.rcx,
        rsp: r.rsp,
        rip: r.rip,
        eflags: r.rflags,
        cs: 0x33,
        gs: 0,
        fs: 0,
        ss: 0x2b,
        err: 0,
        trapno: if signo == sig::SIGSEGV { 14 } else { 0 },
        oldmask: saved_mask.0,
        cr2: if matches!(signo, sig::SIGSEGV | sig::SIGBUS) { info.addr() } else { 0 },
        fpstate,
    };
    let uc = Ucontext {
        uc_flags: 0,
        uc_link: 0,
        uc_stack: Stack {
            ss_sp: alt.sp,
            ss_flags: if on_alt_stack(&alt, ctx.regs.rsp) { sig::SS_ONSTACK } else { alt.flags },
            ss_size: alt.size,
        },
        uc_mcontext: mcontext,
        uc_sigmask: saved_mask,
    };
    let restorer = if action.flags & sig::SA_RESTORER != 0 { action.restorer } else { 0 };
    uaccess::write_bytes(&vm, fpstate, ctx.save_fpu().as_bytes())?;
    uaccess::write_bytes(&vm, frame, &rt_sigframe::encode(restorer, &uc, info))?;

    let mut new_mask = old_mask.union(action.mask);
    if action.flags & sig::SA_NODEFER == 0 {
        new_mask.add(signo);
    }
    *t.sigmask.lock() = new_mask.without_unblockable();
    if action.flags & sig::SA_RESETHAND != 0 {
        // Only the handler goes back to SIG_DFL: the flags (SA_SIGINFO,
        // SA_RESETHAND itself...), mask and restorer stay, as on Linux.
        let actions = t.process.signals.actions.lock().clone();
        actions.lock()[signo as usize].handler = SIG_DFL;
    }

    ctx.regs.rsp = frame;
    ctx.regs.rip = action.handler;
    ctx.regs.rdi = u64::from(signo);
    ctx.regs.rsi = frame + rt_sigframe::INFO as u64;
    ctx.regs.rdx = frame + rt_sigframe::UC as u64;
    ctx.regs.rax = 0;
    // Handlers start with clean direction and trap flags, as on Linux.
    ctx.regs.rflags &= !((1 << 10) | hal::user::RFLAGS_TF);
    ctx.reset_fpu();
    Ok(())
}

/// rt_sigreturn: restores the state saved by `deliver`.
pub fn sigreturn(t: &Arc<Task>, ctx: &mut UserContext) -> Result<u64, Errno> {
    let vm = t.process.vm()?;
    let frame = ctx.regs.rsp - 8;
    let mut ucb = [0u8; Ucontext::SIZE];
    uaccess::read_bytes(&vm, frame + rt_sigframe::UC as u64, &mut ucb)?;
    let uc = Ucontext::from_bytes(&ucb);
    let m = &uc.uc_mcontext;
    let r = &mut ctx.regs;
    r.r8 = m.r8;
    r.r9 = m.r9;
    r.r10 = m.r10;
    r.r11 = m.r11;
    r.r12 = m.r12;
    r.r13 = m.r13;
    r.r14 = m.r14;
    r.r15 = m.r15;
    r.rdi = m.rdi;
    r.rsi = m.rsi;
    r.rbp = m.rbp;
    r.rbx = m.rbx;
    r.rdx = m.rdx;
    r.rax = m.rax;
    r.rcx = m.rcx;
    r.rsp = m.rsp;
    r.rip = m.rip;
    r.rflags = m.eflags; // sanitized on the way back to user mode
    if m.fpstate != 0 {
        let at = m.fpstate;
        ctx.load_fpu_with(|image| uaccess::read_bytes(&vm, at, image))?;
    }
    let mask = uc.uc_sigmask.without_unblockable();
    *t.sigmask.lock() = mask;
    // The restored mask may let through a signal the handler's mask held
    // back. Anything else (a signal sent from now on, an exit, a stop)
    // sets `attention` itself, so the run loop is asked to look only when
    // something pending is deliverable now, as Linux's set_current_blocked
    // recalculates TIF_SIGPENDING; a tracee always looks (its traps).
    if t.ptrace.is_traced() || unblocked_pending(t, mask) {
        t.attention.store(true, core::sync::atomic::Ordering::Release);
    }
    // Linux restores the alternate stack setting too (errors ignored).
    let _ = set_altstack(t, &uc.uc_stack, ctx.regs.rsp);
    // Never restart: this "call" returns the interrupted rax.
    t.restart_nr.lock().take();
    Ok(ctx.regs.rax)
}

/// sigaltstack's update rule, shared with rt_sigreturn.
pub fn set_altstack(t: &Arc<Task>, ss: &Stack, current_sp: u64) -> Result<(), Errno> {
    let mut alt = t.altstack.lock();
    if on_alt_stack(&alt, current_sp) {
        return Err(Errno::EPERM);
    }
    if ss.ss_flags & !(sig::SS_DISABLE | sig::SS_AUTODISARM) != 0 {
        return Err(Errno::EINVAL);
    }
    if ss.ss_flags & sig::SS_DISABLE != 0 {
        *alt = super::task::AltStack { sp: 0, size: 0, flags: sig::SS_DISABLE };
        return Ok(());
    }
    if ss.ss_size < sig::MINSIGSTKSZ as u64 {
        return Err(Errno::ENOMEM);
    }
    *alt = super::task::AltStack { sp: ss.ss_sp, size: ss.ss_size, flags: 0 };
    Ok(())
}

/// Whether a signal pending for `t` or its process is not in `blocked`.
fn unblocked_pending(t: &Task, blocked: SigSet) -> bool {
    !t.pending.lock().set.difference(blocked).is_empty()
        || !t.process.signals.shared_pending.lock().set.difference(blocked).is_empty()
}

/// Whether `t` must leave a sleep for its run loop: a signal pending that
/// it does not block, a group exit, or its own exit requested (another
/// thread's execve).
pub fn has_deliverable(t: &Task) -> bool {
    let blocked = *t.sigmask.lock();
    unblocked_pending(t, blocked) || t.process.state.lock().exiting.is_some() || t.exit_request.lock().is_some()
}

/// A wait interrupted by a signal that `t` cannot take now (it blocks
/// it, or another thread took it): clears the thread's interrupt flag so
/// the wait can go on, unless something became deliverable, which the
/// next `has_deliverable` check then reports. The flag is cleared before
/// the check, so a signal sent in between sets it again.
pub fn settle_interrupt(t: &Task) {
    if let Some(k) = t.kthread.get() {
        k.set_interrupt(false);
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        if has_deliverable(t) {
            k.set_interrupt(true);
        }
    }
}

pub fn pending_set(t: &Task) -> SigSet {
    t.pending.lock().set.union(t.process.signals.shared_pending.lock().set)
}
