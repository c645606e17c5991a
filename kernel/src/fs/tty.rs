//! The console terminal: the serial port with a line discipline.
//!
//! Received bytes arrive in interrupt context and are processed at once:
//! signal characters (^C, ^Z, ^\) signal the foreground process group,
//! canonical mode edits a line (erase, kill, ^D for end of file) and
//! echoes it, and completed input waits in a queue for readers. termios
//! and job-control ioctls (foreground group, window size) work as on
//! Linux; a background process that reads the terminal gets SIGTTIN.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use hal::sync::SpinLock;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Siginfo, Termios, Winsize};
use linux_abi::signal as sig;

use super::file::FileOps;
use super::inode::S_IFCHR;
use crate::event::{Events, PollTable, Pollee};
use crate::mm::{uaccess, Vm};
use crate::sched::{Interrupted, WaitQueue};

struct Ldisc {
    termios: Termios,
    winsize: Winsize,
    /// The line being edited (canonical mode).
    line: Vec<u8>,
    /// Input ready for read(); `None` entries mark end-of-file (^D).
    ready: VecDeque<Option<u8>>,
    /// Complete lines in `ready` (canonical mode reads stop at one).
    lines: usize,
}

static LDISC: SpinLock<Option<Ldisc>> = SpinLock::new(None);
static READERS: WaitQueue = WaitQueue::new();
/// Pollers of the console: notified from the receive interrupt.
static POLLEE: Pollee = Pollee::new();
static FOREGROUND: AtomicI32 = AtomicI32::new(0);
static SESSION: AtomicI32 = AtomicI32::new(0);
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Makes the console a terminal; `sid` is the session that controls it.
pub fn activate(sid: i32) {
    *LDISC.lock() = Some(Ldisc {
        termios: Termios::linux_default(),
        winsize: Winsize { ws_row: 24, ws_col: 80, ws_xpixel: 0, ws_ypixel: 0 },
        line: Vec::new(),
        ready: VecDeque::new(),
        lines: 0,
    });
    SESSION.store(sid, Ordering::Relaxed);
    FOREGROUND.store(sid, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
}

pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

fn echo(termios: &Termios, bytes: &[u8]) {
    if termios.c_lflag & c::ECHO == 0 {
        return;
    }
    write_output(termios, bytes);
}

fn write_output(termios: &Termios, bytes: &[u8]) {
    if termios.c_oflag & c::OPOST != 0 && termios.c_oflag & c::ONLCR != 0 {
        hal::serial::write_bytes(bytes);
    } else {
        hal::serial::write_bytes_raw(bytes);
    }
}

fn signal_foreground(signo: u32) {
    let pgid = FOREGROUND.load(Ordering::Relaxed);
    for p in crate::proc::all_processes() {
        if p.pgid.load(Ordering::Relaxed) == pgid {
            crate::proc::signal::send_to_process(&p, Siginfo::kill(signo, sig::SI_KERNEL, 0, 0));
        }
    }
}

/// Interrupt context: run newly received bytes through the discipline.
pub fn receive() {
    if !is_active() {
        return;
    }
    let mut signals: Vec<u32> = Vec::new();
    {
        let mut guard = LDISC.lock();
        let Some(ld) = guard.as_mut() else {
            return;
        };
        while let Some(mut b) = hal::serial::read_byte() {
            let t = ld.termios;
            if t.c_iflag & c::ISTRIP != 0 {
                b &= 0x7f;
            }
            if b == b'\r' {
                if t.c_iflag & c::IGNCR != 0 {
                    continue;
                }
                if t.c_iflag & c::ICRNL != 0 {
                    b = b'\n';
                }
            } else if b == b'\n' && t.c_iflag & c::INLCR != 0 {
                b = b'\r';
            }
            let cc = t.c_cc;
            if b == 0x14 {
                // ^T: a process status report (as BSD's SIGINFO key), for
                // finding out what a hung system is waiting on.
                crate::proc::dump_processes();
                continue;
            }
            if t.c_lflag & c::ISIG != 0 {
                let signo = if b == cc[c::VINTR] {
                    Some(sig::SIGINT)
                } else if b == cc[c::VQUIT] {
                    Some(sig::SIGQUIT)
                } else if b == cc[c::VSUSP] {
                    Some(sig::SIGTSTP)
                } else {
                    None
                };
                if let Some(s) = signo {
                    if t.c_lflag & c::ECHO != 0 && t.c_lflag & c::ECHOCTL != 0 {
                        write_output(&t, &[b'^', b + 0x40, b'\n']);
                    }
                    ld.line.clear();
                    signals.push(s);
                    continue;
                }
            }
            if t.c_lflag & c::ICANON != 0 {
                if b == cc[c::VERASE] || b == 0x08 {
                    if ld.line.pop().is_some() && t.c_lflag & c::ECHOE != 0 {
                        echo(&t, b"\x08 \x08");
                    }
                    continue;
                }
                if b == cc[c::VKILL] {
                    let n = ld.line.len();
                    ld.line.clear();
                    if t.c_lflag & c::ECHOK != 0 {
                        for _ in 0..n {
                            echo(&t, b"\x08 \x08");
                        }
                    }
                    continue;
                }
                if b == cc[c::VEOF] {
                    let line = core::mem::take(&mut ld.line);
                    ld.ready.extend(line.into_iter().map(Some));
                    ld.ready.push_back(None);
                    ld.lines += 1;
                    continue;
                }
                if ld.line.len() < 4095 {
                    ld.line.push(b);
                }
                echo(&t, &[b]);
                if b == b'\n' || (b == cc[c::VEOL] && b != 0) || (b == cc[c::VEOL2] && b != 0) {
                    let line = core::mem::take(&mut ld.line);
                    ld.ready.extend(line.into_iter().map(Some));
                    ld.lines += 1;
                }
            } else {
                ld.ready.push_back(Some(b));
                echo(&t, &[b]);
            }
        }
    }
    for s in signals {
        signal_foreground(s);
    }
    READERS.wake_all();
    POLLEE.notify(Events::READABLE);
}

fn has_input(ld: &Ldisc) -> bool {
    if ld.termios.c_lflag & c::ICANON != 0 {
        ld.lines > 0
    } else {
        !ld.ready.is_empty()
    }
}

/// A background process reading its terminal is stopped with SIGTTIN
/// (or fails with EIO if it ignores or blocks that signal).
fn check_background_read() -> Result<(), Errno> {
    let Some(task) = crate::proc::current_task() else {
        return Ok(());
    };
    let p = &task.process;
    if p.sid.load(Ordering::Relaxed) != SESSION.load(Ordering::Relaxed) {
        return Ok(());
    }
    if p.pgid.load(Ordering::Relaxed) == FOREGROUND.load(Ordering::Relaxed) {
        return Ok(());
    }
    let action = p.signals.action(sig::SIGTTIN);
    if action.handler == crate::proc::signal::SIG_IGN || task.sigmask.lock().contains(sig::SIGTTIN) {
        return Err(Errno::EIO);
    }
    let pgid = p.pgid.load(Ordering::Relaxed);
    for q in crate::proc::all_processes() {
        if q.pgid.load(Ordering::Relaxed) == pgid {
            crate::proc::signal::send_to_process(&q, Siginfo::kill(sig::SIGTTIN, sig::SI_KERNEL, 0, 0));
        }
    }
    Err(Errno::ERESTARTSYS)
}

pub struct Console;

pub fn open(_flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    Ok(Arc::new(Console))
}

impl FileOps for Console {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        check_background_read()?;
        loop {
            {
                let mut guard = LDISC.lock();
                let ld = guard.as_mut().ok_or(Errno::EIO)?;
                let canonical = ld.termios.c_lflag & c::ICANON != 0;
                let vmin = ld.termios.c_cc[c::VMIN];
                if has_input(ld) {
                    let mut n = 0;
                    while n < buf.len() {
                        match ld.ready.pop_front() {
                            Some(Some(b)) => {
                                buf[n] = b;
                                n += 1;
                                if canonical && b == b'\n' {
                                    ld.lines -= 1;
                                    break;
                                }
                            }
                            Some(None) => {
                                // ^D ends the read here (0 bytes: end of file).
                                ld.lines -= 1;
                                break;
                            }
                            None => break,
                        }
                    }
                    return Ok(n);
                }
                if !canonical && vmin == 0 {
                    let vtime = u64::from(ld.termios.c_cc[c::VTIME]);
                    if vtime == 0 {
                        return Ok(0);
                    }
                    // Wait VTIME tenths of a second for the first byte.
                    drop(guard);
                    let deadline = crate::clock::now_ns() + vtime * 100_000_000;
                    match READERS
                        .wait_until_interruptible(Some(deadline), || LDISC.lock().as_ref().is_none_or(has_input))
                    {
                        Ok(()) => continue,
                        Err(Interrupted::TimedOut) => return Ok(0),
                        Err(Interrupted::Signal) => return Err(Errno::ERESTARTSYS),
                    }
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            READERS.wait_until_interruptible(None, || LDISC.lock().as_ref().is_none_or(has_input)).map_err(
                |e| match e {
                    Interrupted::Signal => Errno::ERESTARTSYS,
                    Interrupted::TimedOut => Errno::EAGAIN,
                },
            )?;
        }
    }

    fn write_at(&self, _offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        let termios = LDISC.lock().as_ref().map(|l| l.termios).unwrap_or_else(Termios::linux_default);
        write_output(&termios, buf);
        Ok(buf.len())
    }

    fn fasync(&self) -> bool {
        true
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&POLLEE);
        }
        let readable = LDISC.lock().as_ref().is_some_and(has_input);
        Events::WRITABLE | if readable { Events::READABLE } else { Events::EMPTY }
    }

    fn mode(&self) -> u32 {
        S_IFCHR | 0o620
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        match cmd {
            c::TCGETS => {
                let t = LDISC.lock().as_ref().map(|l| l.termios).ok_or(Errno::EIO)?;
                uaccess::write_bytes(vm, arg, &t.to_bytes())?;
                Ok(0)
            }
            c::TCSETS | c::TCSETSW | c::TCSETSF => {
                let mut b = [0u8; Termios::SIZE];
                uaccess::read_bytes(vm, arg, &mut b)?;
                let t = Termios::from_bytes(&b);
                let mut guard = LDISC.lock();
                let ld = guard.as_mut().ok_or(Errno::EIO)?;
                if cmd == c::TCSETSF {
                    ld.ready.clear();
                    ld.lines = 0;
                    ld.line.clear();
                }
                let was_canonical = ld.termios.c_lflag & c::ICANON != 0;
                ld.termios = t;
                if was_canonical && t.c_lflag & c::ICANON == 0 {
                    // Switching to raw: the partial line becomes readable.
                    let line = core::mem::take(&mut ld.line);
                    ld.ready.extend(line.into_iter().map(Some));
                }
                drop(guard);
                // Readiness follows the mode (raw input counts bytes, not lines).
                READERS.wake_all();
                POLLEE.notify(Events::READABLE);
                Ok(0)
            }
            c::TIOCGWINSZ => {
                let w = LDISC.lock().as_ref().map(|l| l.winsize).ok_or(Errno::EIO)?;
                uaccess::write_bytes(vm, arg, &w.to_bytes())?;
                Ok(0)
            }
            c::TIOCSWINSZ => {
                let mut b = [0u8; Winsize::SIZE];
                uaccess::read_bytes(vm, arg, &mut b)?;
                if let Some(l) = LDISC.lock().as_mut() {
                    l.winsize = Winsize::from_bytes(&b);
                }
                signal_foreground(sig::SIGWINCH);
                Ok(0)
            }
            c::TIOCGPGRP => {
                uaccess::write_u32(vm, arg, FOREGROUND.load(Ordering::Relaxed) as u32)?;
                Ok(0)
            }
            c::TIOCSPGRP => {
                let pgid = uaccess::read_u32(vm, arg)? as i32;
                if pgid < 0 {
                    return Err(Errno::EINVAL);
                }
                let sid = SESSION.load(Ordering::Relaxed);
                let exists = crate::proc::all_processes()
                    .iter()
                    .any(|p| p.pgid.load(Ordering::Relaxed) == pgid && p.sid.load(Ordering::Relaxed) == sid);
                if !exists {
                    return Err(Errno::EPERM);
                }
                FOREGROUND.store(pgid, Ordering::Relaxed);
                Ok(0)
            }
            c::TIOCGSID => {
                uaccess::write_u32(vm, arg, SESSION.load(Ordering::Relaxed) as u32)?;
                Ok(0)
            }
            c::TIOCSCTTY => {
                if let Some(t) = crate::proc::current_task() {
                    let sid = t.process.sid.load(Ordering::Relaxed);
                    SESSION.store(sid, Ordering::Relaxed);
                    FOREGROUND.store(t.process.pgid.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                Ok(0)
            }
            c::TIOCNOTTY => Ok(0),
            c::FIONREAD => {
                let n = LDISC.lock().as_ref().map_or(0, |l| l.ready.iter().filter(|b| b.is_some()).count());
                uaccess::write_u32(vm, arg, n as u32)?;
                Ok(0)
            }
            c::TCFLSH => {
                if arg <= 2 {
                    if arg != 1 {
                        if let Some(l) = LDISC.lock().as_mut() {
                            l.ready.clear();
                            l.lines = 0;
                            l.line.clear();
                        }
                    }
                    Ok(0)
                } else {
                    Err(Errno::EINVAL)
                }
            }
            c::TIOCOUTQ => {
                uaccess::write_u32(vm, arg, 0)?;
                Ok(0)
            }
            c::TCXONC | c::TCSBRK | c::TCSBRKP => Ok(0),
            _ => Err(Errno::ENOTTY),
        }
    }
}
