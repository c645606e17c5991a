//! Terminals: what the console and every pty slave share.
//!
//! A [`Tty`] is a line discipline ([`super::ldisc`]) plus job control:
//! the session it controls and its foreground process group, which gets
//! the signals typed at it (^C, ^Z, ^\) and SIGWINCH when its size
//! changes. What a terminal does with its output is its kind's business:
//! the console writes to the serial port, a pty slave queues it for its
//! master (`super::pty`). Open files of a terminal are [`TtyFile`]s.
//!
//! Terminals know processes only through the [`Sessions`] hooks the
//! process layer installs at boot (which process is calling, its group
//! and session, its controlling terminal, how to signal a group), so
//! this layer imports nothing from above it.
//!
//! The console receives input in interrupt context ([`receive`]) and runs
//! it through the discipline at once; a ^T there prints every process
//! (BSD's status key), for finding out what a hung system is waiting on.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use hal::sync::{Once, SpinLock};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Termios, Winsize};
use linux_abi::signal as sig;

use super::file::FileOps;
use super::inode::S_IFCHR;
use super::ldisc::{self, LineDiscipline};
use super::pty::PtyState;
use crate::event::{Events, PollTable, Pollee, Poller};
use crate::mm::{uaccess, Vm};

/// The calling process, as a terminal sees it.
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub pgid: i32,
    pub sid: i32,
    /// It made its session (setsid): only a leader acquires a terminal.
    pub session_leader: bool,
}

/// What terminals need of the process layer (installed by `proc` at boot).
pub trait Sessions: Send + Sync {
    /// The process making the current call (None in a kernel thread or
    /// an interrupt).
    fn caller(&self) -> Option<Caller>;
    /// The caller's controlling terminal.
    fn controlling(&self) -> Option<Arc<Tty>>;
    /// Sets (or with None clears) the caller's controlling terminal.
    fn set_controlling(&self, tty: Option<Arc<Tty>>);
    /// Every process of session `sid` whose controlling terminal is `tty`
    /// loses it.
    fn clear_controlling(&self, sid: i32, tty: &Arc<Tty>);
    /// Sends `signo` from the kernel to every process of group `pgid`.
    fn signal_group(&self, pgid: i32, signo: u32);
    /// Sends `signo` from the kernel to process `pid`.
    fn signal_process(&self, pid: i32, signo: u32);
    /// Whether process group `pgid` exists in session `sid`.
    fn group_in_session(&self, pgid: i32, sid: i32) -> Option<bool>;
    /// Whether the caller ignores or blocks `signo` (job-control stops).
    fn caller_ignores(&self, signo: u32) -> bool;
    /// The caller's file-system uid and gid (owners of new pty slaves).
    fn caller_fs_ids(&self) -> (u32, u32);
    /// Whether the caller has CAP_SYS_ADMIN (stealing a terminal).
    fn caller_is_admin(&self) -> bool;
    /// A process or group id as the caller's pid namespace has it (0
    /// when it cannot see it).
    fn seen_by_caller(&self, global: i32) -> i32;
    /// The global id the caller means by `local` (None: nobody).
    fn global_of(&self, local: i32) -> Option<i32>;
}

/// An id the terminal keeps, for the caller (TIOCGPGRP, TIOCGSID).
fn seen_by_caller(global: i32) -> i32 {
    match sessions() {
        Some(s) if global > 0 => s.seen_by_caller(global),
        _ => global,
    }
}

static SESSIONS: Once<&'static dyn Sessions> = Once::new();

/// Installs the process layer's hooks (once, at boot).
pub fn set_sessions(hooks: &'static dyn Sessions) {
    SESSIONS.set(hooks);
}

pub(super) fn sessions() -> Option<&'static dyn Sessions> {
    SESSIONS.get().copied()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TtyKind {
    /// The serial console (/dev/console, /dev/ttyS0).
    Console,
    /// A pty slave, /dev/pts/N.
    PtySlave(u32),
}

/// A terminal's mutable state, under one IRQ-safe lock.
pub struct TtyState {
    pub ldisc: LineDiscipline,
    /// For a pty slave: the master side (unused by the console).
    pub pty: PtyState,
}

pub struct Tty {
    pub kind: TtyKind,
    pub state: SpinLock<TtyState>,
    /// The session this terminal controls (0: none).
    session: AtomicI32,
    /// Its foreground process group (0: none).
    pgrp: AtomicI32,
    /// The input queue: data for readers (the console's receive
    /// interrupt, a pty master's writes), room for a pty master's
    /// writers (reads), and hangups.
    pub input: Pollee,
    /// A pty's queue to its master: data for the master (slave writes,
    /// echoes), room for slave writers (master reads), hangups.
    pub output: Pollee,
}

impl Tty {
    pub fn new(kind: TtyKind, ldisc: LineDiscipline, pty: PtyState) -> Tty {
        Tty {
            kind,
            state: SpinLock::new(TtyState { ldisc, pty }),
            session: AtomicI32::new(0),
            pgrp: AtomicI32::new(0),
            input: Pollee::new(),
            output: Pollee::new(),
        }
    }

    pub fn session(&self) -> i32 {
        self.session.load(Ordering::Relaxed)
    }

    pub fn foreground(&self) -> i32 {
        self.pgrp.load(Ordering::Relaxed)
    }

    /// The device number (/proc/<pid>/stat's tty_nr, in Linux's encoding).
    pub fn rdev(&self) -> u64 {
        match self.kind {
            TtyKind::Console => super::devfs::TTYS0,
            TtyKind::PtySlave(n) => super::devfs::makedev(136 + u64::from(n) / 256, u64::from(n) % 256),
        }
    }

    fn is_console(&self) -> bool {
        self.kind == TtyKind::Console
    }

    /// Makes this the controlling terminal of the caller's session.
    fn attach(self: &Arc<Self>, caller: &Caller) {
        self.session.store(caller.sid, Ordering::Relaxed);
        self.pgrp.store(caller.pgid, Ordering::Relaxed);
        if let Some(s) = sessions() {
            s.set_controlling(Some(self.clone()));
        }
    }

    /// Ends this terminal's session: its processes lose it (Linux's
    /// session_clear_tty), and it controls nothing.
    pub fn detach(self: &Arc<Self>) {
        let sid = self.session.swap(0, Ordering::Relaxed);
        self.pgrp.store(0, Ordering::Relaxed);
        if sid != 0 {
            if let Some(s) = sessions() {
                s.clear_controlling(sid, self);
            }
        }
    }

    /// A session leader with this controlling terminal exits (Linux's
    /// disassociate_ctty(1)): a pty's foreground group gets SIGHUP, and
    /// the session loses the terminal.
    pub fn leader_exited(self: &Arc<Self>) {
        if !self.is_console() {
            let pgrp = self.foreground();
            if pgrp > 0 {
                if let Some(s) = sessions() {
                    s.signal_group(pgrp, sig::SIGHUP);
                }
            }
        }
        self.detach();
    }

    /// The master went away: the session leader gets SIGHUP and SIGCONT,
    /// the session loses the terminal, and readers and writers wake to
    /// end of file and EIO.
    pub fn hang_up(self: &Arc<Self>) {
        let sid = self.session();
        if sid > 0 {
            if let Some(s) = sessions() {
                s.signal_process(sid, sig::SIGHUP);
                s.signal_process(sid, sig::SIGCONT);
            }
        }
        self.detach();
        self.input.notify(Events::EMPTY);
        self.output.notify(Events::EMPTY);
    }

    fn signal_foreground(&self, signo: u32) {
        let pgrp = self.foreground();
        if pgrp > 0 {
            if let Some(s) = sessions() {
                s.signal_group(pgrp, signo);
            }
        }
    }

    fn is_callers(self: &Arc<Self>) -> bool {
        sessions().and_then(|s| s.controlling()).is_some_and(|t| Arc::ptr_eq(&t, self))
    }

    /// Linux's __tty_check_change: a background process using its
    /// controlling terminal is stopped with `signo` (SIGTTIN for reads,
    /// SIGTTOU for writes under TOSTOP and for changes), unless it
    /// ignores or blocks that signal (then a read fails with EIO and
    /// anything else goes ahead).
    fn check_change(self: &Arc<Self>, signo: u32) -> Result<(), Errno> {
        let Some(s) = sessions() else {
            return Ok(());
        };
        let Some(caller) = s.caller() else {
            return Ok(());
        };
        let pgrp = self.foreground();
        if pgrp == 0 || pgrp == caller.pgid || !self.is_callers() {
            return Ok(());
        }
        if s.caller_ignores(signo) {
            return if signo == sig::SIGTTIN { Err(Errno::EIO) } else { Ok(()) };
        }
        s.signal_group(caller.pgid, signo);
        Err(Errno::ERESTARTSYS)
    }

    /// Acquires this terminal as the caller's controlling terminal on an
    /// open without O_NOCTTY, as Linux's tty_open_proc_set_tty does: only
    /// for a session leader without one, and a terminal without a session.
    pub fn open_acquire(self: &Arc<Self>, flags: u32) {
        if flags & c::O_NOCTTY != 0 || self.session() != 0 {
            return;
        }
        let Some(s) = sessions() else {
            return;
        };
        let Some(caller) = s.caller() else {
            return;
        };
        if caller.session_leader && s.controlling().is_none() {
            self.attach(&caller);
        }
    }

    /// Linux's n_tty_read on this terminal (pty slave or console).
    fn read(self: &Arc<Self>, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.check_change(sig::SIGTTIN)?;
        let (vmin, vtime) = {
            let st = self.state.lock();
            let t = &st.ldisc.termios;
            (t.c_cc[c::VMIN], t.c_cc[c::VTIME])
        };
        let attempt = || -> Result<usize, Errno> {
            let mut st = self.state.lock();
            if st.ldisc.has_input() {
                let n = st.ldisc.read(buf);
                drop(st);
                // Room for the master's writes.
                self.input.notify(Events::WRITABLE);
                return Ok(n);
            }
            if st.pty.hung_up {
                return Ok(0);
            }
            if !st.ldisc.canonical() && vmin == 0 && vtime == 0 {
                return Ok(0);
            }
            Err(Errno::EAGAIN)
        };
        let mut attempt = attempt;
        match attempt() {
            Err(Errno::EAGAIN) if nonblock => Err(Errno::EAGAIN),
            Err(Errno::EAGAIN) => {
                let canonical = self.state.lock().ldisc.canonical();
                // Raw mode, VMIN 0, VTIME t: wait t tenths for the first byte.
                let deadline =
                    (!canonical && vmin == 0).then(|| crate::clock::now_ns() + u64::from(vtime) * 100_000_000);
                let poller = Poller::new()?;
                let _sub = self.input.subscribe(poller.observer().clone(), Events::READABLE | Events::HUP, false)?;
                loop {
                    match attempt() {
                        Err(Errno::EAGAIN) => {}
                        done => return done,
                    }
                    match poller.wait(deadline) {
                        Ok(()) => {}
                        Err(crate::sched::Interrupted::TimedOut) => return Ok(0),
                        Err(crate::sched::Interrupted::Signal) => return Err(Errno::ERESTARTSYS),
                    }
                }
            }
            done => done,
        }
    }

    fn write(self: &Arc<Self>, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
        let termios = self.state.lock().ldisc.termios;
        if termios.c_lflag & c::TOSTOP != 0 {
            self.check_change(sig::SIGTTOU)?;
        }
        match self.kind {
            TtyKind::Console => {
                ldisc::output(&termios, buf, &mut |b| hal::serial::write_bytes_raw(b));
                Ok(buf.len())
            }
            TtyKind::PtySlave(_) => super::pty::slave_write(self, buf, nonblock),
        }
    }

    pub fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.input);
            table.register(&self.output);
        }
        let st = self.state.lock();
        if st.pty.hung_up {
            return Events::READABLE | Events::WRITABLE | Events::ERR | Events::HUP;
        }
        let mut ev = if st.ldisc.has_input() { Events::READABLE } else { Events::EMPTY };
        if self.is_console() || st.pty.master_room() > 0 {
            ev |= Events::WRITABLE;
        }
        ev
    }

    pub fn termios(&self) -> Termios {
        self.state.lock().ldisc.termios
    }

    /// TCSETS*: new settings (`flush`: TCSETSF drops pending input first).
    pub fn set_termios(self: &Arc<Self>, t: Termios, flush: bool) {
        let mut st = self.state.lock();
        let old = st.ldisc.termios;
        if flush {
            st.ldisc.flush_input();
            st.pty.note_flush(c::TCIFLUSH);
        }
        st.ldisc.set_termios(t);
        st.pty.note_termios(&old, &t);
        drop(st);
        // Readiness follows the mode (raw input counts bytes, not lines),
        // and packet mode may have a status for the master.
        self.input.notify(Events::EMPTY);
        self.output.notify(Events::EMPTY);
    }

    /// TIOCSWINSZ: a changed size signals the foreground group.
    pub fn set_winsize(&self, w: Winsize) {
        let changed = {
            let mut st = self.state.lock();
            let old = st.ldisc.winsize;
            st.ldisc.winsize = w;
            old.to_bytes() != w.to_bytes()
        };
        if changed {
            self.signal_foreground(sig::SIGWINCH);
        }
    }

    /// TCFLSH: TCIFLUSH drops typed input, TCOFLUSH output not yet read.
    pub fn flush(self: &Arc<Self>, how: u32) -> Result<(), Errno> {
        if how > c::TCIOFLUSH {
            return Err(Errno::EINVAL);
        }
        let mut st = self.state.lock();
        if how != c::TCOFLUSH {
            st.ldisc.flush_input();
            st.pty.note_flush(c::TCIFLUSH);
        }
        if how != c::TCIFLUSH {
            st.pty.note_flush(c::TCOFLUSH);
        }
        drop(st);
        self.output.notify(Events::EMPTY);
        self.input.notify(Events::EMPTY);
        Ok(())
    }

    /// Runs received bytes through the discipline (console input, or a
    /// pty master's writes); echoes go out through the terminal's own
    /// output. Returns how many bytes it took (a full pty input queue
    /// takes no more).
    pub fn receive(self: &Arc<Self>, bytes: &[u8]) -> usize {
        let mut signals = [0u32; 8];
        let mut nsig = 0;
        let mut taken = 0;
        {
            let mut guard = self.state.lock();
            let TtyState { ldisc, pty } = &mut *guard;
            for &b in bytes {
                if !ldisc.has_room() && !self.is_console() {
                    break;
                }
                let effects = if self.is_console() {
                    ldisc.receive(b, &mut |out| hal::serial::write_bytes_raw(out))
                } else {
                    ldisc.receive(b, &mut |out| pty.push_to_master(out))
                };
                taken += 1;
                if effects.flushed {
                    pty.note_flush(c::TCIFLUSH);
                }
                if let Some(s) = effects.signal {
                    if nsig < signals.len() {
                        signals[nsig] = s;
                        nsig += 1;
                    }
                }
            }
        }
        for &s in &signals[..nsig] {
            self.signal_foreground(s);
        }
        self.input.notify(Events::READABLE);
        if !self.is_console() {
            self.output.notify(Events::READABLE);
        }
        taken
    }

    /// The ioctls every terminal answers: termios, window size, job
    /// control, queue sizes. `via_master` says the call came through a
    /// pty master, which acts on its slave without being anyone's
    /// controlling terminal.
    pub fn ioctl(self: &Arc<Self>, cmd: u32, arg: u64, vm: &Vm, via_master: bool) -> Result<u64, Errno> {
        let own = || via_master || self.is_callers();
        match cmd {
            c::TCGETS => {
                uaccess::write_bytes(vm, arg, &self.termios().to_bytes())?;
                Ok(0)
            }
            c::TCSETS | c::TCSETSW | c::TCSETSF => {
                let mut b = [0u8; Termios::SIZE];
                uaccess::read_bytes(vm, arg, &mut b)?;
                if !via_master {
                    self.check_change(sig::SIGTTOU)?;
                }
                self.set_termios(Termios::from_bytes(&b), cmd == c::TCSETSF);
                Ok(0)
            }
            c::TIOCGWINSZ => {
                let w = self.state.lock().ldisc.winsize;
                uaccess::write_bytes(vm, arg, &w.to_bytes())?;
                Ok(0)
            }
            c::TIOCSWINSZ => {
                let mut b = [0u8; Winsize::SIZE];
                uaccess::read_bytes(vm, arg, &mut b)?;
                self.set_winsize(Winsize::from_bytes(&b));
                Ok(0)
            }
            c::TIOCGPGRP => {
                if !own() {
                    return Err(Errno::ENOTTY);
                }
                uaccess::write_u32(vm, arg, seen_by_caller(self.foreground()) as u32)?;
                Ok(0)
            }
            c::TIOCSPGRP => self.set_foreground(vm, arg, via_master),
            c::TIOCGSID => {
                if !own() || self.session() == 0 {
                    return Err(Errno::ENOTTY);
                }
                uaccess::write_u32(vm, arg, seen_by_caller(self.session()) as u32)?;
                Ok(0)
            }
            c::TIOCSCTTY => self.set_controlling(arg),
            c::TIOCNOTTY => {
                if via_master || !self.is_callers() {
                    return Err(Errno::ENOTTY);
                }
                self.give_up()
            }
            c::FIONREAD => {
                let n = self.state.lock().ldisc.available();
                uaccess::write_u32(vm, arg, n as u32)?;
                Ok(0)
            }
            c::TCFLSH => {
                if !via_master {
                    self.check_change(sig::SIGTTOU)?;
                }
                self.flush(arg as u32).map(|_| 0)
            }
            c::TIOCOUTQ => {
                let n = self.state.lock().pty.to_master_len();
                uaccess::write_u32(vm, arg, n as u32)?;
                Ok(0)
            }
            c::TCXONC | c::TCSBRK | c::TCSBRKP => Ok(0),
            _ => Err(Errno::ENOTTY),
        }
    }

    /// TIOCSPGRP: only on the caller's controlling terminal, to a group
    /// of its session.
    fn set_foreground(self: &Arc<Self>, vm: &Vm, arg: u64, via_master: bool) -> Result<u64, Errno> {
        match self.check_change(sig::SIGTTOU) {
            Err(Errno::EIO) => return Err(Errno::ENOTTY),
            r => r?,
        }
        let Some(s) = sessions() else {
            return Err(Errno::ENOTTY);
        };
        let caller = s.caller().ok_or(Errno::ENOTTY)?;
        let _ = via_master;
        if !self.is_callers() || self.session() != caller.sid {
            return Err(Errno::ENOTTY);
        }
        let pgid = uaccess::read_u32(vm, arg)? as i32;
        if pgid < 0 {
            return Err(Errno::EINVAL);
        }
        let pgid = s.global_of(pgid).ok_or(Errno::ESRCH)?;
        match s.group_in_session(pgid, caller.sid) {
            None => return Err(Errno::ESRCH),
            Some(false) => return Err(Errno::EPERM),
            Some(true) => {}
        }
        self.pgrp.store(pgid, Ordering::Relaxed);
        Ok(0)
    }

    /// TIOCSCTTY, as Linux's tiocsctty (stealing with arg 1 needs
    /// CAP_SYS_ADMIN).
    fn set_controlling(self: &Arc<Self>, arg: u64) -> Result<u64, Errno> {
        let Some(s) = sessions() else {
            return Err(Errno::EPERM);
        };
        let caller = s.caller().ok_or(Errno::EPERM)?;
        if caller.session_leader && self.session() == caller.sid {
            return Ok(0);
        }
        if !caller.session_leader || s.controlling().is_some() {
            return Err(Errno::EPERM);
        }
        if self.session() != 0 {
            if arg == 1 && s.caller_is_admin() {
                self.detach();
            } else {
                return Err(Errno::EPERM);
            }
        }
        self.attach(&caller);
        Ok(0)
    }

    /// TIOCNOTTY: the caller gives up its controlling terminal; a session
    /// leader gives it up for the session, and its foreground group gets
    /// SIGHUP and SIGCONT (Linux's disassociate_ctty(0)).
    fn give_up(self: &Arc<Self>) -> Result<u64, Errno> {
        let s = sessions().ok_or(Errno::ENOTTY)?;
        let caller = s.caller().ok_or(Errno::ENOTTY)?;
        if caller.session_leader {
            let pgrp = self.foreground();
            if pgrp > 0 {
                s.signal_group(pgrp, sig::SIGHUP);
                s.signal_group(pgrp, sig::SIGCONT);
            }
            self.detach();
        } else {
            s.set_controlling(None);
        }
        Ok(0)
    }
}

/// An open terminal: the console, a pty slave, or /dev/tty's target.
pub struct TtyFile {
    pub tty: Arc<Tty>,
}

impl FileOps for TtyFile {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        self.tty.read(buf, nonblock)
    }

    fn write_at(&self, _offset: u64, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
        if self.tty.state.lock().pty.hung_up {
            return Err(Errno::EIO);
        }
        self.tty.write(buf, nonblock)
    }

    fn fasync(&self) -> bool {
        true
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        self.tty.poll(table)
    }

    fn mode(&self) -> u32 {
        S_IFCHR | 0o620
    }

    fn open_peer(&self, _flags: u32) -> Result<super::file::PeerFile, Errno> {
        // Only a pty master has a peer (Linux's ptm_open_peer).
        Err(Errno::EIO)
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        if self.tty.state.lock().pty.hung_up {
            // Linux's hung_up_tty_ioctl.
            return Err(if cmd == c::TIOCSPGRP { Errno::ENOTTY } else { Errno::EIO });
        }
        self.tty.ioctl(cmd, arg, vm, false)
    }
}

impl Drop for TtyFile {
    fn drop(&mut self) {
        if let TtyKind::PtySlave(_) = self.tty.kind {
            super::pty::slave_closed(&self.tty);
        }
    }
}

// ---- the console ----

static CONSOLE: Once<Arc<Tty>> = Once::new();
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Makes the serial port a terminal. Fails only for want of memory.
pub fn init_console() -> Result<(), Errno> {
    let mut ld = LineDiscipline::try_new(Termios::linux_default())?;
    ld.winsize = Winsize { ws_row: 24, ws_col: 80, ws_xpixel: 0, ws_ypixel: 0 };
    let tty = Arc::try_new(Tty::new(TtyKind::Console, ld, PtyState::none())).map_err(|_| Errno::ENOMEM)?;
    CONSOLE.set(tty);
    Ok(())
}

/// Makes the console the controlling terminal of init's session (init
/// itself records it as its terminal).
pub fn activate(init: Caller) {
    if let Some(tty) = CONSOLE.get() {
        tty.session.store(init.sid, Ordering::Relaxed);
        tty.pgrp.store(init.pgid, Ordering::Relaxed);
        ACTIVE.store(true, Ordering::Release);
    }
}

pub fn console() -> Option<Arc<Tty>> {
    CONSOLE.get().cloned()
}

pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// Interrupt context: run newly received bytes through the console's discipline.
pub fn receive() {
    let Some(tty) = CONSOLE.get() else {
        return;
    };
    let mut buf = [0u8; 64];
    loop {
        let mut n = 0;
        while n < buf.len() {
            match hal::serial::read_byte() {
                Some(0x14) => crate::proc::dump_processes(),
                Some(b) => {
                    buf[n] = b;
                    n += 1;
                }
                None => break,
            }
        }
        if n == 0 {
            return;
        }
        tty.receive(&buf[..n]);
    }
}

/// Opens /dev/console or /dev/ttyS0.
pub fn open_console(flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    let tty = console().ok_or(Errno::ENXIO)?;
    tty.open_acquire(flags);
    Ok(Arc::new(TtyFile { tty }))
}

/// Opens /dev/tty: the caller's controlling terminal (ENXIO without one).
pub fn open_current(_flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    let tty = sessions().and_then(|s| s.controlling()).ok_or(Errno::ENXIO)?;
    if let TtyKind::PtySlave(_) = tty.kind {
        super::pty::slave_opened(&tty)?;
    }
    Ok(Arc::new(TtyFile { tty }))
}
