//! Pseudo-terminals: a master file and a slave terminal.
//!
//! Opening a devpts instance's `ptmx` makes a pair: the master is an open
//! file ([`PtyMaster`]); the slave is a [`Tty`] of kind `PtySlave(n)`,
//! reached through `/dev/pts/n` (or TIOCGPTPEER) once unlocked. Bytes the
//! master writes are the slave's typed input and go through its line
//! discipline (echo comes back to the master); bytes the slave writes go
//! through output processing into a queue the master reads. The pair has
//! one termios and window size, the slave's, which the master's ioctls
//! act on as Linux's do.
//!
//! Closing the master hangs the slave up (its session leader gets SIGHUP
//! and SIGCONT, its files read end of file and fail writes with EIO) and
//! removes `/dev/pts/n`; once every slave file is closed, master reads
//! fail with EIO and poll reports POLLHUP. Packet mode (TIOCPKT) prefixes
//! each master read with a status byte.

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Termios;

use super::devpts::{Devpts, PtyIndex};
use super::file::FileOps;
use super::inode::S_IFCHR;
use super::ldisc::{self, LineDiscipline};
use super::tty::{Tty, TtyFile, TtyKind};
use crate::event::{block_on, Events, PollTable};
use crate::mm::{uaccess, Vm};

/// What a blocked reader or writer of a pty listens for on a head: any
/// change (data, room, hangup) may end its wait.
const ANY: Events =
    Events::from_bits(Events::READABLE.bits() | Events::WRITABLE.bits() | Events::HUP.bits() | Events::ERR.bits());

/// Bytes the slave may write ahead of the master's reads.
const TO_MASTER_MAX: usize = 16 * 1024;

/// TIOCPKT status bits (the byte a packet-mode read returns).
const TIOCPKT_FLUSHREAD: u8 = 1;
const TIOCPKT_FLUSHWRITE: u8 = 2;
const TIOCPKT_NOSTOP: u8 = 16;
const TIOCPKT_DOSTOP: u8 = 32;

/// The master side of a pty, kept in the slave's terminal state (the
/// console has an empty one).
pub struct PtyState {
    /// Slave output (after OPOST) and echoes, for master reads;
    /// allocated once, never grown.
    to_master: VecDeque<u8>,
    is_pty: bool,
    /// TIOCPKT is on.
    packet: bool,
    /// Status for the next packet-mode read (TIOCPKT_* bits).
    pktstatus: u8,
    /// TIOCSPTLCK: the slave cannot be opened (EIO) while set.
    locked: bool,
    /// Open slave files.
    slave_opens: usize,
    /// Every slave file was closed after one was opened: master reads
    /// fail with EIO once drained, and poll says POLLHUP.
    other_closed: bool,
    /// The master is gone: slave files are hung up.
    pub hung_up: bool,
    /// The devpts index, released when the pair is freed.
    _index: Option<PtyIndex>,
}

impl PtyState {
    /// No pty (the console).
    pub fn none() -> PtyState {
        PtyState {
            to_master: VecDeque::new(),
            is_pty: false,
            packet: false,
            pktstatus: 0,
            locked: false,
            slave_opens: 0,
            other_closed: false,
            hung_up: false,
            _index: None,
        }
    }

    fn new(index: PtyIndex) -> Result<PtyState, Errno> {
        let mut to_master = VecDeque::new();
        to_master.try_reserve_exact(TO_MASTER_MAX).map_err(|_| Errno::ENOMEM)?;
        Ok(PtyState { to_master, is_pty: true, locked: true, _index: Some(index), ..PtyState::none() })
    }

    /// Queues output for the master (what does not fit is lost, as
    /// echoes are on Linux when the master does not read).
    pub fn push_to_master(&mut self, bytes: &[u8]) {
        if !self.is_pty {
            return;
        }
        let room = self.master_room();
        self.to_master.extend(&bytes[..bytes.len().min(room)]);
    }

    /// Room left in the master's queue.
    pub fn master_room(&self) -> usize {
        TO_MASTER_MAX.saturating_sub(self.to_master.len())
    }

    pub fn to_master_len(&self) -> usize {
        self.to_master.len()
    }

    /// A flush of the slave's input (TCIFLUSH) or output (TCOFLUSH)
    /// shows in packet mode.
    pub fn note_flush(&mut self, how: u32) {
        if self.packet {
            self.pktstatus |= if how == c::TCIFLUSH { TIOCPKT_FLUSHREAD } else { TIOCPKT_FLUSHWRITE };
        }
    }

    /// Flow control turning on or off (IXON with ^S/^Q) shows in packet mode.
    pub fn note_termios(&mut self, old: &Termios, new: &Termios) {
        let flow = |t: &Termios| t.c_iflag & c::IXON != 0 && t.c_cc[c::VSTOP] == 0x13 && t.c_cc[c::VSTART] == 0x11;
        if self.packet && flow(old) != flow(new) {
            self.pktstatus &= !(TIOCPKT_DOSTOP | TIOCPKT_NOSTOP);
            self.pktstatus |= if flow(new) { TIOCPKT_DOSTOP } else { TIOCPKT_NOSTOP };
        }
    }
}

/// A pty's defaults: Linux's pty slave termios (tty_std_termios with
/// 38400 8N1 and CREAD, no HUPCL).
fn slave_termios() -> Termios {
    let mut t = Termios::linux_default();
    t.c_cflag = c::B38400 | c::CS8 | c::CREAD;
    t
}

/// Makes a new pair in `fs` (opening its ptmx).
pub fn open_master(fs: &Arc<Devpts>) -> Result<Arc<dyn FileOps>, Errno> {
    let index = fs.alloc_index()?;
    let n = index.number();
    let state = PtyState::new(index)?;
    let ldisc = LineDiscipline::try_new(slave_termios())?;
    let slave = Arc::try_new(Tty::new(TtyKind::PtySlave(n), ldisc, state)).map_err(|_| Errno::ENOMEM)?;
    fs.publish(n, &slave)?;
    Ok(Arc::new(PtyMaster { slave, fs: fs.clone() }))
}

/// A slave file is being opened: EIO while locked or after the master
/// closed.
pub fn slave_opened(tty: &Arc<Tty>) -> Result<(), Errno> {
    let mut st = tty.state.lock();
    if st.pty.locked || st.pty.hung_up {
        return Err(Errno::EIO);
    }
    st.pty.slave_opens += 1;
    st.pty.other_closed = false;
    Ok(())
}

/// Opens the slave (from /dev/pts/N or TIOCGPTPEER).
pub fn open_slave(tty: &Arc<Tty>, flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    slave_opened(tty)?;
    // From here the file's drop undoes the count.
    let file = Arc::new(TtyFile { tty: tty.clone() });
    tty.open_acquire(flags);
    Ok(file)
}

/// A slave file was closed.
pub fn slave_closed(tty: &Arc<Tty>) {
    {
        let mut st = tty.state.lock();
        st.pty.slave_opens = st.pty.slave_opens.saturating_sub(1);
        if st.pty.slave_opens == 0 {
            st.pty.other_closed = true;
        }
    }
    tty.output.notify(Events::EMPTY);
}

/// The slave writes: output processing into the master's queue, waiting
/// for room (EIO once hung up).
pub fn slave_write(tty: &Arc<Tty>, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
    if buf.is_empty() {
        return Ok(0);
    }
    let attempt = |buf: &[u8]| -> Result<usize, Errno> {
        let mut st = tty.state.lock();
        if st.pty.hung_up {
            return Err(Errno::EIO);
        }
        let termios = st.ldisc.termios;
        let mut taken = 0;
        for &b in buf {
            let need =
                if b == b'\n' && termios.c_oflag & c::OPOST != 0 && termios.c_oflag & c::ONLCR != 0 { 2 } else { 1 };
            if st.pty.master_room() < need {
                break;
            }
            ldisc::output(&termios, &[b], &mut |out| st.pty.push_to_master(out));
            taken += 1;
        }
        if taken == 0 {
            return Err(Errno::EAGAIN);
        }
        Ok(taken)
    };
    write_all(&tty.output, buf, nonblock, attempt, || tty.output.notify(Events::READABLE))
}

/// A terminal write as Linux's n_tty_write: a blocking one goes on until
/// every byte is taken (a signal ends it with what was written), a
/// non-blocking one takes what fits. `attempt` takes a prefix of what it
/// is given (EAGAIN: no room); `taken` tells the reader after each piece.
fn write_all(
    head: &crate::event::Pollee,
    buf: &[u8],
    nonblock: bool,
    attempt: impl Fn(&[u8]) -> Result<usize, Errno>,
    taken: impl Fn(),
) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &buf[done..];
        let r = if nonblock { attempt(rest) } else { block_on(head, ANY, || attempt(rest)) };
        match r {
            Ok(n) => {
                done += n;
                taken();
            }
            Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
        }
    }
    Ok(done)
}

/// The master side's open file.
pub struct PtyMaster {
    slave: Arc<Tty>,
    fs: Arc<Devpts>,
}

impl PtyMaster {
    fn number(&self) -> u32 {
        match self.slave.kind {
            TtyKind::PtySlave(n) => n,
            TtyKind::Console => 0,
        }
    }

    fn try_read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut st = self.slave.state.lock();
        let pty = &mut st.pty;
        if pty.packet && pty.pktstatus != 0 {
            buf[0] = pty.pktstatus;
            pty.pktstatus = 0;
            return Ok(1);
        }
        if pty.to_master.is_empty() {
            return Err(if pty.other_closed { Errno::EIO } else { Errno::EAGAIN });
        }
        let mut n = 0;
        if pty.packet {
            buf[0] = 0; // TIOCPKT_DATA
            n = 1;
        }
        while n < buf.len() {
            match pty.to_master.pop_front() {
                Some(b) => {
                    buf[n] = b;
                    n += 1;
                }
                None => break,
            }
        }
        Ok(n)
    }

    fn try_write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let n = self.slave.receive(buf);
        if n == 0 {
            return Err(Errno::EAGAIN);
        }
        Ok(n)
    }
}

impl FileOps for PtyMaster {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = if nonblock { self.try_read(buf)? } else { block_on(&self.slave.output, ANY, || self.try_read(buf))? };
        // Room for the slave's writes.
        self.slave.output.notify(Events::WRITABLE);
        Ok(n)
    }

    fn write_at(&self, _offset: u64, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        // The slave's receive already told its readers.
        write_all(&self.slave.input, buf, nonblock, |b| self.try_write(b), || {})
    }

    fn seekable(&self) -> bool {
        false
    }

    fn fasync(&self) -> bool {
        true
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.slave.input);
            table.register(&self.slave.output);
        }
        let st = self.slave.state.lock();
        let mut ev = Events::EMPTY;
        if !st.pty.to_master.is_empty() {
            ev |= Events::READABLE;
        }
        if st.pty.packet && st.pty.pktstatus != 0 {
            ev |= Events::READABLE | Events::PRI;
        }
        if st.pty.other_closed {
            ev |= Events::HUP;
        }
        if st.ldisc.has_room() {
            ev |= Events::WRITABLE;
        }
        ev
    }

    fn mode(&self) -> u32 {
        S_IFCHR | 0o666
    }

    fn open_peer(&self, flags: u32) -> Result<super::file::PeerFile, Errno> {
        let file = open_slave(&self.slave, flags)?;
        Ok((file, self.fs.slave_dentry(self.number())))
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        match cmd {
            c::TIOCGPTN => {
                uaccess::write_u32(vm, arg, self.number())?;
                Ok(0)
            }
            c::TIOCSPTLCK => {
                let lock = uaccess::read_u32(vm, arg)? != 0;
                self.slave.state.lock().pty.locked = lock;
                Ok(0)
            }
            c::TIOCGPTLCK => {
                let locked = self.slave.state.lock().pty.locked;
                uaccess::write_u32(vm, arg, u32::from(locked))?;
                Ok(0)
            }
            c::TIOCPKT => {
                let on = uaccess::read_u32(vm, arg)? != 0;
                let mut st = self.slave.state.lock();
                if on && !st.pty.packet {
                    st.pty.pktstatus = 0;
                }
                st.pty.packet = on;
                Ok(0)
            }
            c::TIOCGPKT => {
                let on = self.slave.state.lock().pty.packet;
                uaccess::write_u32(vm, arg, u32::from(on))?;
                Ok(0)
            }
            c::FIONREAD => {
                let n = self.slave.state.lock().pty.to_master.len();
                uaccess::write_u32(vm, arg, n as u32)?;
                Ok(0)
            }
            c::TIOCOUTQ => {
                uaccess::write_u32(vm, arg, 0)?;
                Ok(0)
            }
            _ => self.slave.ioctl(cmd, arg, vm, true),
        }
    }
}

impl Drop for PtyMaster {
    fn drop(&mut self) {
        self.fs.unpublish(self.number());
        self.slave.state.lock().pty.hung_up = true;
        self.slave.hang_up();
    }
}
