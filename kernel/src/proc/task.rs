//! User threads and the loop that runs them.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::{Once, SpinLock};
use hal::user::{ReturnReason, UserContext};
use linux_abi::signal::{self as sig, SigSet};

use super::signal::{PendingSignals, SigInfo};
use super::{Pid, Process};
use crate::cred::Cred;
use crate::mm::{FaultAccess, FaultError};
use crate::sched;

/// An alternate signal stack (sigaltstack).
#[derive(Clone, Copy, Debug, Default)]
pub struct AltStack {
    pub sp: u64,
    pub size: u64,
    pub flags: i32,
}

pub struct Task {
    /// Fixed, except that a thread which execs takes over its leader's
    /// (Linux's de_thread): read it with `tid()`.
    tid: core::sync::atomic::AtomicI32,
    pub process: Arc<Process>,
    pub kthread: Once<Arc<sched::Thread>>,
    pub sigmask: SpinLock<SigSet>,
    pub pending: SpinLock<PendingSignals>,
    pub altstack: SpinLock<AltStack>,
    /// set_tid_address / CLONE_CHILD_CLEARTID: zeroed and futex-woken at exit.
    pub clear_child_tid: AtomicU64,
    /// set_robust_list: the user address of this thread's robust-futex
    /// list head (0: none), walked when the thread exits or execs.
    pub robust_list: AtomicU64,
    /// Mask to restore after a handler that rt_sigsuspend set up.
    pub saved_sigmask: SpinLock<Option<SigSet>>,
    /// The number of an interrupted syscall that may restart.
    pub restart_nr: SpinLock<Option<u64>>,
    /// Set by exit(2): this thread leaves before its next return to user.
    pub exit_request: SpinLock<Option<super::ExitKind>>,
    /// Something may need doing before the next return to user mode (a
    /// signal, an exit, a stop, a syscall restart). Clear means the return
    /// path can skip signal handling entirely.
    pub attention: core::sync::atomic::AtomicBool,
    /// The system call in progress + 1 (0: none), for the ^T dump.
    pub in_syscall: AtomicU64,
    /// The last user page fault (address, error code, repeats): a fault
    /// that keeps coming back is a kernel bug worth reporting.
    pub last_fault: SpinLock<(u64, u64, u64)>,
    /// prctl(PR_SET_SYSCALL_USER_DISPATCH) for this thread.
    pub user_dispatch: SpinLock<Option<super::user_dispatch::UserDispatch>>,
    /// Strict mode or the stack of seccomp filters.
    pub seccomp: SpinLock<super::seccomp::Seccomp>,
    /// What the system-call path must look at before running a call
    /// (`SYSCALL_WORK_*` bits, Linux's SYSCALL_WORK flags): one load
    /// decides for a thread with neither syscall user dispatch nor seccomp.
    syscall_work: core::sync::atomic::AtomicU8,
    /// ioprio_set's value (0: none set, the priority follows the nice
    /// value); inherited by fork and clone.
    pub ioprio: core::sync::atomic::AtomicU32,
    /// set_mempolicy's policy (None: the default); inherited by fork and
    /// clone, kept over execve.
    pub mempolicy: SpinLock<Option<crate::mm::vma::MemPolicy>>,
    /// The credentials this thread acts with, replaced whole on change
    /// (`commit_cred`), never changed in place.
    cred: SpinLock<Arc<Cred>>,
    /// The thread's restartable-sequence registration (rseq).
    pub rseq: super::rseq::TaskRseq,
    /// User/system tick samples (see `cputime`).
    pub cpu: super::cputime::CpuAccount,
    /// The ptrace link (tracer, options, the current stop).
    pub ptrace: super::ptrace::TaskPtrace,
    /// This thread's futex waiter, reused from wait to wait.
    pub futex_waiter: super::futex::WaiterCache,
}

impl Task {
    pub fn new(tid: Pid, process: Arc<Process>, sigmask: SigSet, cred: Arc<Cred>) -> Task {
        Task {
            tid: core::sync::atomic::AtomicI32::new(tid),
            process,
            kthread: Once::new(),
            sigmask: SpinLock::new(sigmask),
            pending: SpinLock::new(PendingSignals::default()),
            altstack: SpinLock::new(AltStack { flags: sig::SS_DISABLE, ..AltStack::default() }),
            clear_child_tid: AtomicU64::new(0),
            robust_list: AtomicU64::new(0),
            saved_sigmask: SpinLock::new(None),
            restart_nr: SpinLock::new(None),
            exit_request: SpinLock::new(None),
            attention: core::sync::atomic::AtomicBool::new(true),
            in_syscall: AtomicU64::new(0),
            last_fault: SpinLock::new((0, 0, 0)),
            user_dispatch: SpinLock::new(None),
            seccomp: SpinLock::new(super::seccomp::Seccomp::default()),
            syscall_work: core::sync::atomic::AtomicU8::new(0),
            ioprio: core::sync::atomic::AtomicU32::new(0),
            mempolicy: SpinLock::new(None),
            cred: SpinLock::new(cred),
            rseq: super::rseq::TaskRseq::new(),
            cpu: super::cputime::CpuAccount::default(),
            ptrace: super::ptrace::TaskPtrace::new(),
            futex_waiter: super::futex::WaiterCache::new(),
        }
    }

    /// The `SYSCALL_WORK_*` bits set now.
    #[inline]
    pub fn syscall_work(&self) -> u8 {
        self.syscall_work.load(Ordering::Relaxed)
    }

    /// Sets or clears one `SYSCALL_WORK_*` bit.
    pub fn set_syscall_work(&self, bit: u8, on: bool) {
        if on {
            self.syscall_work.fetch_or(bit, Ordering::Release);
        } else {
            self.syscall_work.fetch_and(!bit, Ordering::Release);
        }
    }

    /// The thread's credentials now (a snapshot that later changes do
    /// not touch).
    pub fn cred(&self) -> Arc<Cred> {
        self.cred.lock().clone()
    }

    /// Makes `new` the thread's credentials (Linux's `commit_creds`). A
    /// change of an effective or file-system id, or a grown permitted
    /// set, makes the process non-dumpable.
    pub fn commit_cred(&self, new: Cred) -> Result<(), linux_abi::errno::Errno> {
        let new = Arc::try_new(new).map_err(|_| linux_abi::errno::Errno::ENOMEM)?;
        let old = self.install_cred(new.clone());
        if old.change_drops_dumpable(&new) {
            self.process.dumpable.store(super::suid_dumpable(), Ordering::Relaxed);
        }
        Ok(())
    }

    /// Swaps in credentials already allocated (exec, past its point of
    /// no return); returns the old ones.
    pub fn install_cred(&self, new: Arc<Cred>) -> Arc<Cred> {
        core::mem::replace(&mut *self.cred.lock(), new)
    }

    /// Time on a CPU so far, user and kernel (Linux's thread CPU clock
    /// counts both), in ns. Kept by the scheduler in TSC ticks; converted
    /// here, so no hot path divides.
    pub fn cpu_ns(&self) -> u64 {
        self.kthread.get().map_or(0, |k| hal::time::tsc_to_ns(k.cpu_tsc()))
    }

    pub fn tid(&self) -> Pid {
        self.tid.load(Ordering::Relaxed)
    }

    pub fn is_leader(&self) -> bool {
        self.tid() == self.process.pid
    }

    /// execve from a thread that is not the leader, once the others are
    /// gone: the thread becomes the leader, with the process id as its
    /// thread id, and its own id is released.
    pub fn become_leader(self: &Arc<Self>) {
        let old = self.tid();
        if old == self.process.pid {
            return;
        }
        super::unregister_task(old);
        self.tid.store(self.process.pid, Ordering::Relaxed);
        super::register_task(self);
        if let Some(k) = self.kthread.get() {
            k.set_task_id(self.process.pid);
        }
    }

    /// Wakes the thread out of an interruptible wait.
    pub fn interrupt(&self) {
        self.attention.store(true, Ordering::Release);
        if let Some(t) = self.kthread.get() {
            t.set_interrupt(true);
            if !sched::wake(t) {
                // Running, perhaps in user mode on another CPU: an IPI
                // brings it back to its run loop, which sees `attention`,
                // instead of waiting up to a tick.
                sched::kick_running(t);
            }
        }
    }
}

/// `Task::syscall_work` bits: syscall user dispatch is configured.
pub const SYSCALL_WORK_USER_DISPATCH: u8 = 1;
/// `Task::syscall_work` bits: strict mode or filters.
pub const SYSCALL_WORK_SECCOMP: u8 = 2;

/// Whether a thread goes on running or leaves its run loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
}

/// Starts `task` on a new kernel thread, entering user mode with `ctx`.
pub fn start(task: Arc<Task>, ctx: Box<UserContext>) -> Result<(), linux_abi::errno::Errno> {
    let vm_root = task.process.vm()?.lock().page_table().clone();
    let t = task.clone();
    // Registered before the thread can run, so it can find itself.
    super::register_task(&task);
    let tid = task.tid();
    let publish = task.clone();
    let configure = move |k: &Arc<sched::Thread>| {
        k.set_vm_root(Some(vm_root));
        k.set_task_id(tid);
        // Published before the thread can run: it may exec, or be
        // signalled, before spawn returns here.
        publish.kthread.set(k.clone());
    };
    if sched::spawn_configured("user", configure, move || run_task(t, ctx)).is_err() {
        super::unregister_task(tid);
        return Err(linux_abi::errno::Errno::EAGAIN);
    }
    Ok(())
}

/// The life of a user thread.
fn run_task(task: Arc<Task>, mut ctx: Box<UserContext>) {
    loop {
        if super::signal::handle_pending(&task, &mut ctx) == Flow::Exit {
            return;
        }
        // One load for a thread without rseq; a registered one may go
        // round again (a section aborted into a signal, a late switch).
        if task.rseq.is_registered() && !super::rseq::ready_for_user(&task, &mut ctx) {
            continue;
        }
        // No clock is read here: CPU time is kept at context switches and
        // split into user and system time by the tick's samples (see
        // `cputime`). Under QEMU's TCG each rdtsc takes a lock every vCPU
        // contends for.
        let reason = ctx.run();
        match reason {
            ReturnReason::Syscall => crate::syscall::dispatch(&task, &mut ctx),
            ReturnReason::Exception { vector, error_code, fault_addr } => {
                handle_exception(&task, &mut ctx, vector, error_code, fault_addr)
            }
            ReturnReason::Interrupt => {
                if task.ptrace.is_traced() {
                    super::ptrace::note_trap(&task);
                }
            }
        }
        sched::preempt_point();
    }
}

/// A CPU exception in user mode: resolve page faults the address space
/// allows, turn everything else into the signal Linux would send.
fn handle_exception(task: &Arc<Task>, ctx: &mut UserContext, vector: u8, error_code: u64, addr: u64) {
    if task.ptrace.is_traced() {
        super::ptrace::note_trap(task);
    }
    let info = match vector {
        14 => {
            let access = if error_code & 0x10 != 0 {
                FaultAccess::Execute
            } else if error_code & 0x2 != 0 {
                FaultAccess::Write
            } else {
                FaultAccess::Read
            };
            let result = match task.process.vm() {
                Ok(vm) => vm.lock().handle_fault(addr, access),
                Err(_) => Err(FaultError::Unmapped),
            };
            // A fault that "resolves" without the access then succeeding
            // would loop forever: report it loudly.
            let same = {
                let mut last = task.last_fault.lock();
                let same = last.0 == addr && last.1 == error_code;
                if same {
                    last.2 += 1
                } else {
                    *last = (addr, error_code, 0)
                };
                last.2
            };
            if same > 0 && same % 1000 == 0 {
                let (pte, vma) = match task.process.vm() {
                    Ok(vm) => {
                        let space = vm.lock();
                        (space.page_table().query(addr & !0xfff), space.describe_fault(addr))
                    }
                    Err(_) => (None, alloc::string::String::new()),
                };
                log::error!(
                    "pid {}: page fault at {addr:#x} (error {error_code:#x}, rip {:#x}) repeats {same} times: pte {pte:?} vma {vma} cr3 {:#x}",
                    task.process.pid,
                    ctx.regs.rip,
                    hal::paging::current_root().0
                );
            }
            match result {
                Ok(()) => return,
                Err(FaultError::Unmapped) => SigInfo::fault(sig::SIGSEGV, sig::SEGV_MAPERR, addr),
                Err(FaultError::Forbidden) => SigInfo::fault(sig::SIGSEGV, sig::SEGV_ACCERR, addr),
                Err(FaultError::BusError) => SigInfo::fault(sig::SIGBUS, sig::BUS_ADRERR, addr),
                Err(FaultError::OutOfMemory) => match super::oom::out_of_memory(task) {
                    super::oom::OomOutcome::Retry => return,
                    super::oom::OomOutcome::KillSelf => SigInfo::fault(sig::SIGKILL, sig::SI_KERNEL, 0),
                },
            }
        }
        0 => SigInfo::fault(sig::SIGFPE, sig::FPE_INTDIV, ctx.regs.rip),
        16 | 19 => SigInfo::fault(sig::SIGFPE, 0, ctx.regs.rip),
        // #DB: `addr` is DR6. Single step (a program's own TF or a
        // tracer's PTRACE_SINGLESTEP), else a breakpoint; Linux reports
        // the instruction pointer.
        1 => {
            super::ptrace::note_debug_exception(task, addr);
            let code = if addr & linux_abi::ptrace::DR_STEP != 0 {
                sig::TRAP_TRACE
            } else if addr & 0xf != 0 {
                sig::TRAP_HWBKPT
            } else {
                sig::TRAP_BRKPT
            };
            SigInfo::fault(sig::SIGTRAP, code, ctx.regs.rip)
        }
        // int3: rip is already past it; Linux sends a bare SI_KERNEL.
        3 => SigInfo::kill(sig::SIGTRAP, sig::SI_KERNEL, 0, 0),
        6 => SigInfo::fault(sig::SIGILL, sig::ILL_ILLOPN, ctx.regs.rip),
        17 => SigInfo::fault(sig::SIGBUS, sig::BUS_ADRALN, addr),
        // #GP and friends: Linux reports SIGSEGV with SI_KERNEL and address 0.
        _ => SigInfo::fault(sig::SIGSEGV, sig::SI_KERNEL, 0),
    };
    super::signal::force_fault_signal(task, info);
}
