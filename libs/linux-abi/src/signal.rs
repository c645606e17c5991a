//! Signal numbers, signal sets, `sigaction` flags and `si_code` values for
//! x86_64 Linux.
//!
//! Signals are numbered `1..=64`: 1..=31 are the classic signals and
//! [`SIGRTMIN`]..=[`SIGRTMAX`] the real-time ones. A [`SigSet`] is the kernel's
//! 64-bit mask in which signal `n` is bit `n - 1` (the `sigsetsize` that
//! `rt_sigprocmask` and friends require is therefore 8). [`default_action`]
//! says what happens when a signal is delivered with `SIG_DFL` in place.

pub const SIGHUP: u32 = 1;
pub const SIGINT: u32 = 2;
pub const SIGQUIT: u32 = 3;
pub const SIGILL: u32 = 4;
pub const SIGTRAP: u32 = 5;
pub const SIGABRT: u32 = 6;
pub const SIGIOT: u32 = 6;
pub const SIGBUS: u32 = 7;
pub const SIGFPE: u32 = 8;
pub const SIGKILL: u32 = 9;
pub const SIGUSR1: u32 = 10;
pub const SIGSEGV: u32 = 11;
pub const SIGUSR2: u32 = 12;
pub const SIGPIPE: u32 = 13;
pub const SIGALRM: u32 = 14;
pub const SIGTERM: u32 = 15;
pub const SIGSTKFLT: u32 = 16;
pub const SIGCHLD: u32 = 17;
pub const SIGCONT: u32 = 18;
pub const SIGSTOP: u32 = 19;
pub const SIGTSTP: u32 = 20;
pub const SIGTTIN: u32 = 21;
pub const SIGTTOU: u32 = 22;
pub const SIGURG: u32 = 23;
pub const SIGXCPU: u32 = 24;
pub const SIGXFSZ: u32 = 25;
pub const SIGVTALRM: u32 = 26;
pub const SIGPROF: u32 = 27;
pub const SIGWINCH: u32 = 28;
pub const SIGIO: u32 = 29;
pub const SIGPOLL: u32 = SIGIO;
pub const SIGPWR: u32 = 30;
pub const SIGSYS: u32 = 31;
pub const SIGRTMIN: u32 = 32;
pub const SIGRTMAX: u32 = 64;
/// One more than the largest signal number (the kernel's `_NSIG + 1`).
pub const NSIG: u32 = 65;
/// The `sigsetsize` argument the rt_sig* system calls accept.
pub const SIGSET_SIZE: usize = 8;

// sigaction flags.
pub const SA_NOCLDSTOP: u64 = 0x0000_0001;
pub const SA_NOCLDWAIT: u64 = 0x0000_0002;
pub const SA_SIGINFO: u64 = 0x0000_0004;
pub const SA_UNSUPPORTED: u64 = 0x0000_0400;
pub const SA_EXPOSE_TAGBITS: u64 = 0x0000_0800;
pub const SA_RESTORER: u64 = 0x0400_0000;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;
pub const SA_NOMASK: u64 = SA_NODEFER;
pub const SA_ONESHOT: u64 = SA_RESETHAND;

// Handler values.
pub const SIG_DFL: u64 = 0;
pub const SIG_IGN: u64 = 1;
pub const SIG_ERR: u64 = u64::MAX;

// rt_sigprocmask `how`.
pub const SIG_BLOCK: u32 = 0;
pub const SIG_UNBLOCK: u32 = 1;
pub const SIG_SETMASK: u32 = 2;

// sigaltstack.
pub const SS_ONSTACK: i32 = 1;
pub const SS_DISABLE: i32 = 2;
pub const SS_AUTODISARM: i32 = 1 << 31;
pub const MINSIGSTKSZ: usize = 2048;
pub const SIGSTKSZ: usize = 8192;

// si_code: generic (<= 0 means sent from user space).
pub const SI_USER: i32 = 0;
pub const SI_KERNEL: i32 = 0x80;
pub const SI_QUEUE: i32 = -1;
pub const SI_TIMER: i32 = -2;
pub const SI_MESGQ: i32 = -3;
pub const SI_ASYNCIO: i32 = -4;
pub const SI_SIGIO: i32 = -5;
pub const SI_TKILL: i32 = -6;
pub const SI_DETHREAD: i32 = -7;
pub const SI_ASYNCNL: i32 = -60;

// si_code for SIGILL.
pub const ILL_ILLOPC: i32 = 1;
pub const ILL_ILLOPN: i32 = 2;
pub const ILL_ILLADR: i32 = 3;
pub const ILL_ILLTRP: i32 = 4;
pub const ILL_PRVOPC: i32 = 5;
pub const ILL_PRVREG: i32 = 6;
pub const ILL_COPROC: i32 = 7;
pub const ILL_BADSTK: i32 = 8;
pub const ILL_BADIADDR: i32 = 9;

// si_code for SIGFPE.
pub const FPE_INTDIV: i32 = 1;
pub const FPE_INTOVF: i32 = 2;
pub const FPE_FLTDIV: i32 = 3;
pub const FPE_FLTOVF: i32 = 4;
pub const FPE_FLTUND: i32 = 5;
pub const FPE_FLTRES: i32 = 6;
pub const FPE_FLTINV: i32 = 7;
pub const FPE_FLTSUB: i32 = 8;
pub const FPE_FLTUNK: i32 = 14;
pub const FPE_CONDTRAP: i32 = 15;

// si_code for SIGSEGV.
pub const SEGV_MAPERR: i32 = 1;
pub const SEGV_ACCERR: i32 = 2;
pub const SEGV_BNDERR: i32 = 3;
pub const SEGV_PKUERR: i32 = 4;

// si_code for SIGBUS.
pub const BUS_ADRALN: i32 = 1;
pub const BUS_ADRERR: i32 = 2;
pub const BUS_OBJERR: i32 = 3;
pub const BUS_MCEERR_AR: i32 = 4;
pub const BUS_MCEERR_AO: i32 = 5;

// si_code for SIGTRAP.
pub const TRAP_BRKPT: i32 = 1;
pub const TRAP_TRACE: i32 = 2;
pub const TRAP_BRANCH: i32 = 3;
pub const TRAP_HWBKPT: i32 = 4;
pub const TRAP_UNK: i32 = 5;

// si_code for SIGCHLD.
pub const CLD_EXITED: i32 = 1;
pub const CLD_KILLED: i32 = 2;
pub const CLD_DUMPED: i32 = 3;
pub const CLD_TRAPPED: i32 = 4;
pub const CLD_STOPPED: i32 = 5;
pub const CLD_CONTINUED: i32 = 6;

// si_code for SIGPOLL.
pub const POLL_IN: i32 = 1;
pub const POLL_OUT: i32 = 2;
pub const POLL_MSG: i32 = 3;
pub const POLL_ERR: i32 = 4;
pub const POLL_PRI: i32 = 5;
pub const POLL_HUP: i32 = 6;

// si_code for SIGSYS.
pub const SYS_SECCOMP: i32 = 1;
pub const SYS_USER_DISPATCH: i32 = 2;

// sigevent notify kinds.
pub const SIGEV_SIGNAL: i32 = 0;
pub const SIGEV_NONE: i32 = 1;
pub const SIGEV_THREAD: i32 = 2;
pub const SIGEV_THREAD_ID: i32 = 4;

/// Whether `sig` is a valid signal number (`1..=64`).
pub fn is_valid(sig: u32) -> bool {
    (1..NSIG).contains(&sig)
}

/// Whether `sig` is a real-time (queued) signal.
pub fn is_realtime(sig: u32) -> bool {
    (SIGRTMIN..=SIGRTMAX).contains(&sig)
}

/// A set of signals: bit `n - 1` stands for signal `n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SigSet(pub u64);

impl SigSet {
    pub const EMPTY: SigSet = SigSet(0);
    pub const FULL: SigSet = SigSet(u64::MAX);
    /// Signals that can never be blocked, ignored or caught.
    pub const UNBLOCKABLE: SigSet = SigSet((1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1)));

    /// The set holding only `sig`; empty for an invalid number.
    pub fn single(sig: u32) -> SigSet {
        if is_valid(sig) {
            SigSet(1 << (sig - 1))
        } else {
            SigSet::EMPTY
        }
    }

    pub fn bits(self) -> u64 {
        self.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Adds `sig`; invalid numbers are ignored.
    pub fn add(&mut self, sig: u32) {
        self.0 |= SigSet::single(sig).0;
    }

    /// Removes `sig`; invalid numbers are ignored.
    pub fn remove(&mut self, sig: u32) {
        self.0 &= !SigSet::single(sig).0;
    }

    pub fn contains(self, sig: u32) -> bool {
        is_valid(sig) && self.0 & SigSet::single(sig).0 != 0
    }

    pub fn union(self, other: SigSet) -> SigSet {
        SigSet(self.0 | other.0)
    }

    pub fn intersection(self, other: SigSet) -> SigSet {
        SigSet(self.0 & other.0)
    }

    /// Signals in `self` but not in `other`.
    pub fn difference(self, other: SigSet) -> SigSet {
        SigSet(self.0 & !other.0)
    }

    /// The set with `SIGKILL` and `SIGSTOP` removed, as the kernel does to
    /// every mask user space installs.
    pub fn without_unblockable(self) -> SigSet {
        self.difference(SigSet::UNBLOCKABLE)
    }

    /// The lowest-numbered signal in the set.
    pub fn first(self) -> Option<u32> {
        if self.0 == 0 {
            None
        } else {
            Some(self.0.trailing_zeros() + 1)
        }
    }

    /// The signals in the set, in increasing order.
    pub fn iter(self) -> SigSetIter {
        SigSetIter(self.0)
    }

    pub fn to_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }

    pub fn from_bytes(b: &[u8; 8]) -> SigSet {
        SigSet(u64::from_le_bytes(*b))
    }
}

impl IntoIterator for SigSet {
    type Item = u32;
    type IntoIter = SigSetIter;
    fn into_iter(self) -> SigSetIter {
        self.iter()
    }
}

/// Iterator over the signal numbers of a [`SigSet`].
#[derive(Clone, Debug)]
pub struct SigSetIter(u64);

impl Iterator for SigSetIter {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        let s = SigSet(self.0).first()?;
        self.0 &= self.0 - 1;
        Some(s)
    }
}

/// What delivering a signal does when its disposition is `SIG_DFL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    Terminate,
    CoreDump,
    Ignore,
    Stop,
    Continue,
}

/// The default action of `sig`, per signal(7). Real-time and unknown
/// signals terminate.
pub fn default_action(sig: u32) -> DefaultAction {
    match sig {
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ | SIGSYS => {
            DefaultAction::CoreDump
        }
        SIGCHLD | SIGURG | SIGWINCH => DefaultAction::Ignore,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => DefaultAction::Stop,
        SIGCONT => DefaultAction::Continue,
        _ => DefaultAction::Terminate,
    }
}

/// The symbolic name of `sig` (e.g. `"SIGSEGV"`); `"SIGRT"` for real-time
/// signals above `SIGRTMIN`, `"SIG?"` for invalid numbers.
pub fn name(sig: u32) -> &'static str {
    match sig {
        SIGHUP => "SIGHUP",
        SIGINT => "SIGINT",
        SIGQUIT => "SIGQUIT",
        SIGILL => "SIGILL",
        SIGTRAP => "SIGTRAP",
        SIGABRT => "SIGABRT",
        SIGBUS => "SIGBUS",
        SIGFPE => "SIGFPE",
        SIGKILL => "SIGKILL",
        SIGUSR1 => "SIGUSR1",
        SIGSEGV => "SIGSEGV",
        SIGUSR2 => "SIGUSR2",
        SIGPIPE => "SIGPIPE",
        SIGALRM => "SIGALRM",
        SIGTERM => "SIGTERM",
        SIGSTKFLT => "SIGSTKFLT",
        SIGCHLD => "SIGCHLD",
        SIGCONT => "SIGCONT",
        SIGSTOP => "SIGSTOP",
        SIGTSTP => "SIGTSTP",
        SIGTTIN => "SIGTTIN",
        SIGTTOU => "SIGTTOU",
        SIGURG => "SIGURG",
        SIGXCPU => "SIGXCPU",
        SIGXFSZ => "SIGXFSZ",
        SIGVTALRM => "SIGVTALRM",
        SIGPROF => "SIGPROF",
        SIGWINCH => "SIGWINCH",
        SIGIO => "SIGIO",
        SIGPWR => "SIGPWR",
        SIGSYS => "SIGSYS",
        SIGRTMIN => "SIGRTMIN",
        SIGRTMAX => "SIGRTMAX",
        33..=63 => "SIGRT",
        _ => "SIG?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigset_ops() {
        let mut s = SigSet::EMPTY;
        s.add(SIGINT);
        s.add(SIGCHLD);
        s.add(SIGRTMAX);
        s.add(0);
        s.add(65);
        assert_eq!(s.0, (1 << 1) | (1 << 16) | (1 << 63));
        assert!(s.contains(SIGINT) && s.contains(SIGRTMAX));
        assert!(!s.contains(SIGTERM) && !s.contains(0) && !s.contains(65));
        let v: [u32; 3] = [SIGINT, SIGCHLD, SIGRTMAX];
        assert!(s.iter().eq(v.iter().copied()));
        s.remove(SIGCHLD);
        assert!(!s.contains(SIGCHLD));
        assert_eq!(s.first(), Some(SIGINT));
        let t = SigSet::single(SIGKILL).union(SigSet::single(SIGINT));
        assert_eq!(t.difference(s), SigSet::single(SIGKILL));
        assert_eq!(t.intersection(s), SigSet::single(SIGINT));
        assert_eq!(t.without_unblockable(), SigSet::single(SIGINT));
        assert_eq!(SigSet::FULL.iter().count(), 64);
        assert_eq!(SigSet::EMPTY.first(), None);
        assert_eq!(SigSet::from_bytes(&s.to_bytes()), s);
    }

    #[test]
    fn defaults_and_names() {
        assert_eq!(default_action(SIGSEGV), DefaultAction::CoreDump);
        assert_eq!(default_action(SIGCHLD), DefaultAction::Ignore);
        assert_eq!(default_action(SIGTSTP), DefaultAction::Stop);
        assert_eq!(default_action(SIGCONT), DefaultAction::Continue);
        assert_eq!(default_action(SIGTERM), DefaultAction::Terminate);
        assert_eq!(default_action(40), DefaultAction::Terminate);
        assert_eq!(name(SIGSEGV), "SIGSEGV");
        assert_eq!(name(40), "SIGRT");
        assert_eq!(name(0), "SIG?");
        for s in 1..32 {
            assert!(name(s).starts_with("SIG") && name(s) != "SIG?");
        }
        assert!(is_realtime(SIGRTMIN) && !is_realtime(SIGSYS));
    }
}
