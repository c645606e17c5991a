//! Processes and their threads ("tasks").
//!
//! A [`Process`] owns what its threads share: address space, descriptor
//! table, signal handlers, children and identity. A [`Task`] is one user
//! thread; each runs on its own kernel thread in the loop of
//! [`task::run_task`]: enter user mode, handle what brought it back,
//! deliver signals, repeat. Processes and tasks are found by id in global
//! tables that hold weak references, so an exited process disappears from
//! them when its parent reaps it.

pub mod acct;
pub mod coredump;
pub mod cputime;
pub mod ctty;
pub mod exec;
pub mod exit;
pub mod futex;
pub mod init;
pub mod ns;
pub mod oom;
pub mod pidfd;
pub mod pidns;
pub mod ptrace;
pub mod robust;
pub mod rseq;
pub mod seccomp;
pub mod sigio;
pub mod signal;
pub mod signalfd;
pub mod task;
pub mod timer;
pub mod user_dispatch;
pub mod wait;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use crate::fs::SharedFdTable;
use crate::mm::Vm;
use crate::sched::WaitQueue;
pub use signal::SignalState;
pub use task::Task;

pub type Pid = i32;

/// kernel.pid_max: ids are below it (Linux's default for up to 32 CPUs).
static PID_MAX: AtomicI32 = AtomicI32::new(32_768);

pub fn pid_max() -> Pid {
    PID_MAX.load(Ordering::Relaxed)
}

/// /proc/sys/kernel/pid_max: new ids stay below `max`.
pub fn set_pid_max(max: Pid) {
    PID_MAX.store(max, Ordering::Relaxed);
}

/// Open file descriptions of all processes (each counted once), for
/// /proc/sys/fs/file-nr.
pub fn open_file_count() -> usize {
    let mut seen: Vec<usize> = Vec::new();
    for p in all_processes() {
        let table = p.files().lock();
        for f in table.files() {
            let key = Arc::as_ptr(f) as usize;
            if !seen.contains(&key) && seen.try_reserve(1).is_ok() {
                seen.push(key);
            }
        }
    }
    seen.len()
}

/// How a process ended or changed state, for wait4/waitid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    Exited(u8),
    Signaled { sig: u32, core: bool },
}

#[derive(Default)]
pub struct ProcState {
    pub exit: Option<ExitKind>,
    /// Set once every thread is gone: the parent may reap it.
    pub zombie: bool,
    /// Group exit in progress: the remaining threads must exit.
    pub exiting: Option<ExitKind>,
    /// Stopped by this signal, and whether the parent has seen it.
    pub stopped: Option<u32>,
    pub stop_reported: bool,
    pub continued_unreported: bool,
    /// Counts group stops, so a traced thread reports each one once.
    pub stop_gen: u64,
}

pub struct Process {
    pub pid: Pid,
    pub parent: SpinLock<Weak<Process>>,
    /// The parent's pid, kept beside `parent` so getppid reads one word
    /// instead of bumping the parent's reference count, which every sibling
    /// would fight over across CPUs. Changed with `parent` (reparenting).
    ppid: core::sync::atomic::AtomicI32,
    pub children: SpinLock<Vec<Arc<Process>>>,
    pub tasks: SpinLock<Vec<Arc<Task>>>,
    pub vm: SpinLock<Option<Vm>>,
    /// Fixed for the process's life (emptied at exit), so descriptor
    /// lookups need no lock to find it.
    pub files: Arc<SharedFdTable>,
    pub signals: SignalState,
    pub state: SpinLock<ProcState>,
    /// Children changed state (exit, stop, continue).
    pub child_events: WaitQueue,
    pub child_event_seq: AtomicU64,
    /// Continue after a stop.
    pub resume: WaitQueue,
    /// A thread left `tasks` (execve waits for the others to go).
    pub thread_exited: WaitQueue,
    /// A thread is in execve ending the others; a second one backs off.
    pub exec_in_progress: core::sync::atomic::AtomicBool,
    pub pgid: AtomicI32,
    pub sid: AtomicI32,
    pub cwd: SpinLock<Arc<crate::fs::Dentry>>,
    /// The root directory (chroot): where its absolute paths start.
    pub root: SpinLock<Arc<crate::fs::Dentry>>,
    /// Forked and not exec'd since (BSD accounting's AFORK).
    pub forked: core::sync::atomic::AtomicBool,
    pub exe: SpinLock<String>,
    /// The command name (basename of the exec'd path, or PR_SET_NAME), at most 15 bytes.
    pub comm: SpinLock<String>,
    pub cmdline: SpinLock<Vec<String>>,
    pub environ: SpinLock<Vec<String>>,
    /// The auxiliary vector exec gave the program, as the stack held it
    /// (key and value words, AT_NULL last): /proc/<pid>/auxv, which gdb
    /// reads for AT_ENTRY to find where a PIE program was loaded.
    pub auxv: SpinLock<Vec<u8>>,
    pub umask: AtomicU32,
    /// When the process started (monotonic ns), for /proc/<pid>/stat.
    pub start_ns: u64,
    pub rlimits: SpinLock<[(u64, u64); 16]>,
    /// Signal sent to the parent when this process exits (SIGCHLD or 0).
    pub exit_signal: u32,
    /// CPU time of exited threads.
    pub dead_tasks_cpu_ns: AtomicU64,
    /// User/system tick samples of all its threads, exited ones included.
    pub cpu: cputime::CpuAccount,
    /// (user, system) ns of reaped children and their reaped children.
    pub children_cpu: SpinLock<(u64, u64)>,
    pub timers: SpinLock<timer::Timers>,
    /// ITIMER_VIRTUAL and ITIMER_PROF.
    pub cpu_itimers: SpinLock<[cputime::CpuItimer; 2]>,
    /// POSIX timers (of any process) on this process's CPU clocks.
    pub cpu_watch: SpinLock<Vec<cputime::Watch>>,
    /// Whether the tick has CPU timers of this process to run.
    pub cpu_timer_armed: core::sync::atomic::AtomicBool,
    /// Set in a vfork child until it execs or exits.
    pub vfork_done: SpinLock<Option<Arc<wait::VforkDone>>>,
    /// The controlling terminal (see `ctty`).
    pub ctty: SpinLock<Option<Arc<crate::fs::tty::Tty>>>,
    /// The pid namespace its id belongs to (fixed for its life).
    pub pid_ns: Arc<pidns::PidNs>,
    /// Its namespaces (see `ns`).
    pub ns: SpinLock<Arc<ns::Namespaces>>,
    /// PR_GET_DUMPABLE: 1 normally, `suid_dumpable()` after a change of
    /// credentials or an exec that changed ids (Linux keeps it on the mm;
    /// it decides who owns /proc/<pid>).
    pub dumpable: core::sync::atomic::AtomicU8,
    /// The leader thread's credentials once it has exited, for whoever
    /// still asks about the process (signals, /proc, prlimit).
    pub exited_leader_cred: SpinLock<Option<Arc<crate::cred::Cred>>>,
    /// Linux's SIGNAL_UNKILLABLE: init ignores signals it has no handler
    /// for (see `signal::send_to_process`), until a fault it cannot
    /// handle clears this.
    pub unkillable: core::sync::atomic::AtomicBool,
    /// The program file this process runs, kept from being written
    /// (ETXTBSY) until the process execs another or exits.
    pub exe_file: SpinLock<Option<crate::fs::writecount::DenyWrite>>,
    /// Told when the last thread exits: pidfds poll it (Linux's
    /// `pid->wait_pidfd`).
    pub pidfd_wait: crate::event::Pollee,
    /// The address space's rseq concurrency ids, made at the first
    /// registration (shared with CLONE_VM children, dropped by exec).
    pub mm_cids: SpinLock<Option<Arc<rseq::MmCids>>>,
    /// The threads this process traces (ptrace), and its personality.
    pub tracer: ptrace::TracerState,
}

/// `/proc/sys/fs/suid_dumpable`: what a credential change sets dumpable
/// to (0 by default; 2 lets such a process dump core as root).
pub fn suid_dumpable() -> u8 {
    crate::fs::procfs::sys::SUID_DUMPABLE.get() as u8
}

static PROCESSES: SpinLock<BTreeMap<Pid, Weak<Process>>> = SpinLock::new(BTreeMap::new());
static TASKS: SpinLock<BTreeMap<Pid, Weak<Task>>> = SpinLock::new(BTreeMap::new());
static NEXT_PID: AtomicI32 = AtomicI32::new(1);

/// A free id for a process or thread (they share one number space).
pub fn alloc_pid() -> Result<Pid, Errno> {
    let tasks = TASKS.lock();
    let max = pid_max();
    for _ in 0..max {
        let mut pid = NEXT_PID.fetch_add(1, Ordering::Relaxed);
        if pid >= max {
            NEXT_PID.store(2, Ordering::Relaxed);
            pid = 2;
        }
        if !tasks.contains_key(&pid) && !PROCESSES.lock().contains_key(&pid) {
            return Ok(pid);
        }
    }
    Err(Errno::EAGAIN)
}

/// Takes `pid` for a new process or thread (clone3's set_tid): EEXIST
/// when it is in use.
pub fn claim_pid(pid: Pid) -> Result<Pid, Errno> {
    let tasks = TASKS.lock();
    if tasks.contains_key(&pid) || PROCESSES.lock().contains_key(&pid) {
        return Err(Errno::EEXIST);
    }
    Ok(pid)
}

/// Prints every process and thread with its state and the system call it
/// is in (the console's ^T).
pub fn dump_processes() {
    use core::fmt::Write;
    let mut out = hal::serial::Console;
    let _ = writeln!(
        out,
        "\n--- processes (last user rip {:#x}; cpus online {:#b}, {} steals, {} TLB shootdowns, {} RT throttlings) ---",
        hal::trap::last_user_rip(),
        crate::sched::online_cpus(),
        crate::sched::steals(),
        hal::tlb::shootdowns_sent(),
        crate::sched::rt_throttle_count()
    );
    for p in all_processes() {
        let st = p.state.lock();
        let _ = writeln!(
            out,
            "pid {} ppid {} pgid {} {} zombie={} stopped={:?} exiting={:?}",
            p.pid,
            p.parent_pid(),
            p.pgid.load(Ordering::Relaxed),
            p.comm.lock().as_str(),
            st.zombie,
            st.stopped,
            st.exiting
        );
        drop(st);
        for t in p.tasks.lock().iter() {
            let sc = t.in_syscall.load(Ordering::Relaxed);
            let state = t.kthread.get().map(|k| k.state());
            let _ = writeln!(
                out,
                "  tid {} {:?} cpu {} syscall {} pending {:#x} blocked {:#x}",
                t.tid(),
                state,
                t.kthread.get().map_or(0, |k| k.last_cpu()),
                if sc == 0 { "-" } else { linux_abi::nr::name((sc - 1) as usize).unwrap_or("?") },
                t.pending.lock().set.0 | p.signals.shared_pending.lock().set.0,
                t.sigmask.lock().0
            );
        }
    }
}

/// The most recently allocated id (/proc/loadavg).
pub fn last_pid() -> Pid {
    NEXT_PID.load(Ordering::Relaxed) - 1
}

/// The user task running on this CPU, if the current thread is one.
/// The calling process's root directory (for path walks; see
/// `fs::dentry::set_caller_root_hook`).
pub fn caller_root() -> Option<Arc<crate::fs::Dentry>> {
    current_task().map(|t| t.process.root.lock().clone())
}

pub fn current_task() -> Option<Arc<Task>> {
    let tid = crate::sched::current_opt()?.task_id();
    if tid == 0 {
        return None;
    }
    find_task(tid)
}

pub fn find_process(pid: Pid) -> Option<Arc<Process>> {
    PROCESSES.lock().get(&pid).and_then(Weak::upgrade)
}

pub fn find_task(tid: Pid) -> Option<Arc<Task>> {
    TASKS.lock().get(&tid).and_then(Weak::upgrade)
}

pub(crate) fn register_process(p: &Arc<Process>) {
    PROCESSES.lock().insert(p.pid, Arc::downgrade(p));
}

pub(crate) fn unregister_process(pid: Pid) {
    let gone = PROCESSES.lock().remove(&pid).and_then(|w| w.upgrade());
    if let Some(p) = gone {
        pidns::release(&p.pid_ns, pid);
    }
}

pub(crate) fn register_task(t: &Arc<Task>) {
    TASKS.lock().insert(t.tid(), Arc::downgrade(t));
}

pub(crate) fn unregister_task(tid: Pid) {
    let gone = TASKS.lock().remove(&tid).and_then(|w| w.upgrade());
    // A leader's id stays with its process until the process is reaped.
    if let Some(t) = gone {
        if t.process.pid != tid {
            pidns::release(&t.process.pid_ns, tid);
        }
    }
}

/// The process `viewer` calls `pid` (ESRCH when it sees none by that id).
pub fn find_process_seen_by(viewer: &Process, pid: Pid) -> Option<Arc<Process>> {
    find_process(viewer.pid_ns.global(pid)?)
}

/// The thread `viewer` calls `tid`.
pub fn find_task_seen_by(viewer: &Process, tid: Pid) -> Option<Arc<Task>> {
    find_task(viewer.pid_ns.global(tid)?)
}

/// Every live process (for kill(-1), process groups, ps).
pub fn all_processes() -> Vec<Arc<Process>> {
    PROCESSES.lock().values().filter_map(Weak::upgrade).collect()
}

/// How many distinct open file descriptions that `matches` picks are open
/// for writing, and how many for reading only, across every descriptor
/// table (a lease's conflicting-open check).
pub fn open_counts(matches: impl Fn(&crate::fs::OpenFile) -> bool) -> crate::fs::lease::OpenCounts {
    let mut seen: Vec<usize> = Vec::new();
    let mut counts = crate::fs::lease::OpenCounts { writers: 0, readers: 0 };
    for p in all_processes() {
        let table = p.files().lock();
        for f in table.files() {
            let id = Arc::as_ptr(f) as usize;
            if seen.contains(&id) || !matches(f) {
                continue;
            }
            if seen.try_reserve(1).is_ok() {
                seen.push(id);
            }
            if f.writable() {
                counts.writers += 1;
            } else if f.readable() {
                counts.readers += 1;
            }
        }
    }
    counts
}

pub const RLIM_INFINITY: u64 = u64::MAX;

fn default_rlimits() -> [(u64, u64); 16] {
    let mut r = [(RLIM_INFINITY, RLIM_INFINITY); 16];
    r[linux_abi::consts::RLIMIT_STACK as usize] = (8 << 20, RLIM_INFINITY);
    r[linux_abi::consts::RLIMIT_NOFILE as usize] = (1024, 4096);
    r[linux_abi::consts::RLIMIT_CORE as usize] = (0, RLIM_INFINITY);
    r[linux_abi::consts::RLIMIT_NPROC as usize] = (63_000, 63_000);
    r[linux_abi::consts::RLIMIT_SIGPENDING as usize] = (63_000, 63_000);
    r[linux_abi::consts::RLIMIT_MEMLOCK as usize] = (8 << 20, 8 << 20);
    r[linux_abi::consts::RLIMIT_MSGQUEUE as usize] = (819_200, 819_200);
    // As Linux's init: raising priority or a real-time policy takes
    // CAP_SYS_NICE unless an administrator raises these.
    r[linux_abi::consts::RLIMIT_NICE as usize] = (0, 0);
    r[linux_abi::consts::RLIMIT_RTPRIO as usize] = (0, 0);
    r
}

impl Process {
    pub fn new(pid: Pid, parent: Weak<Process>, vm: Vm, files: Arc<SharedFdTable>, signals: SignalState) -> Process {
        let ppid = parent.upgrade().map_or(0, |p| p.pid);
        Process {
            pid,
            ppid: core::sync::atomic::AtomicI32::new(ppid),
            parent: SpinLock::new(parent),
            children: SpinLock::new(Vec::new()),
            tasks: SpinLock::new(Vec::new()),
            vm: SpinLock::new(Some(vm)),
            files,
            signals,
            state: SpinLock::new(ProcState::default()),
            child_events: WaitQueue::new(),
            child_event_seq: AtomicU64::new(0),
            resume: WaitQueue::new(),
            thread_exited: WaitQueue::new(),
            exec_in_progress: core::sync::atomic::AtomicBool::new(false),
            pgid: AtomicI32::new(pid),
            sid: AtomicI32::new(pid),
            cwd: SpinLock::new(crate::fs::dentry::root()),
            root: SpinLock::new(crate::fs::dentry::root()),
            forked: core::sync::atomic::AtomicBool::new(false),
            start_ns: crate::clock::now_ns(),
            exe: SpinLock::new(String::new()),
            comm: SpinLock::new(String::new()),
            cmdline: SpinLock::new(Vec::new()),
            environ: SpinLock::new(Vec::new()),
            auxv: SpinLock::new(Vec::new()),
            umask: AtomicU32::new(0o022),
            rlimits: SpinLock::new(default_rlimits()),
            exit_signal: linux_abi::signal::SIGCHLD,
            dead_tasks_cpu_ns: AtomicU64::new(0),
            cpu: cputime::CpuAccount::default(),
            children_cpu: SpinLock::new((0, 0)),
            timers: SpinLock::new(timer::Timers::default()),
            cpu_itimers: SpinLock::new([cputime::CpuItimer::default(); 2]),
            cpu_watch: SpinLock::new(Vec::new()),
            cpu_timer_armed: core::sync::atomic::AtomicBool::new(false),
            vfork_done: SpinLock::new(None),
            ctty: SpinLock::new(None),
            pid_ns: pidns::initial(),
            ns: SpinLock::new(ns::initial()),
            dumpable: core::sync::atomic::AtomicU8::new(1),
            exited_leader_cred: SpinLock::new(None),
            unkillable: core::sync::atomic::AtomicBool::new(pid == 1),
            exe_file: SpinLock::new(None),
            pidfd_wait: crate::event::Pollee::new(),
            mm_cids: SpinLock::new(None),
            tracer: ptrace::TracerState::default(),
        }
    }

    /// The credentials the process is known by (its leader thread's, as
    /// Linux uses for kill and /proc): None only before its first thread.
    pub fn cred(&self) -> Option<Arc<crate::cred::Cred>> {
        if let Some(c) = self.tasks.lock().iter().find(|t| t.is_leader()).map(|t| t.cred()) {
            return Some(c);
        }
        if let Some(c) = self.exited_leader_cred.lock().clone() {
            return Some(c);
        }
        self.tasks.lock().first().map(|t| t.cred())
    }

    pub fn is_unkillable(&self) -> bool {
        self.unkillable.load(Ordering::Relaxed)
    }

    /// Sets the command name from an exec'd path, as Linux does.
    pub fn set_comm_from_path(&self, path: &str) {
        let base = path.rsplit('/').next().unwrap_or(path);
        *self.comm.lock() = base.chars().take(15).collect();
    }

    /// Start time in clock ticks since boot (USER_HZ = 100).
    pub fn start_ticks(&self) -> u64 {
        self.start_ns / 10_000_000
    }

    pub fn vm(&self) -> Result<Vm, Errno> {
        self.vm.lock().clone().ok_or(Errno::ESRCH)
    }

    pub fn files(&self) -> &SharedFdTable {
        &self.files
    }

    pub fn parent_pid(&self) -> Pid {
        self.ppid.load(Ordering::Relaxed)
    }

    /// Makes `parent` this process's parent (reparenting on exit).
    pub fn set_parent(&self, parent: &Arc<Process>) {
        let mut slot = self.parent.lock();
        *slot = Arc::downgrade(parent);
        self.ppid.store(parent.pid, Ordering::Relaxed);
    }

    /// Tells waiters in the parent that a child changed state.
    pub fn notify_parent_waiters(&self) {
        if let Some(parent) = self.parent.lock().upgrade() {
            parent.child_event_seq.fetch_add(1, Ordering::Release);
            parent.child_events.wake_all();
        }
    }

    /// CPU time of all threads, live and exited.
    pub fn cpu_ns(&self) -> u64 {
        let live: u64 = self.tasks.lock().iter().map(|t| t.cpu_ns()).sum();
        live + self.dead_tasks_cpu_ns.load(Ordering::Relaxed)
    }
}
