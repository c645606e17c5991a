//! The line discipline every terminal shares (Linux's n_tty): input
//! processing (CR/NL mapping, signal characters, canonical line editing,
//! echo), the queue readers take input from, and output processing
//! (OPOST: NL to CR-NL). It knows nothing of serial ports, ptys or
//! processes: the terminal feeds it bytes and hands it a sink for the
//! bytes that go back to the screen, and acts on the signals it reports.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Termios, Winsize};
use linux_abi::signal as sig;

/// Linux's N_TTY_BUF_SIZE: input the discipline holds for readers.
pub const INPUT_MAX: usize = 4096;

/// Where output and echoes go: the screen (a serial port) or a pty's
/// master side. Called with bytes already output-processed.
pub type Sink<'a> = &'a mut dyn FnMut(&[u8]);

/// What received bytes asked the terminal to do besides queueing input.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub struct Effects {
    /// A signal character was typed: the foreground group gets this.
    pub signal: Option<u32>,
    /// The input queue was flushed (a signal character without NOFLSH):
    /// a pty in packet mode tells its master.
    pub flushed: bool,
}

pub struct LineDiscipline {
    pub termios: Termios,
    pub winsize: Winsize,
    /// The line being edited (canonical mode).
    line: Vec<u8>,
    /// Input ready for read(); `None` entries mark end-of-file (^D).
    ready: VecDeque<Option<u8>>,
    /// Complete lines in `ready` (canonical mode reads stop at one).
    lines: usize,
    /// The last byte was ^V (IEXTEN): take the next one literally.
    literal_next: bool,
}

impl LineDiscipline {
    /// A discipline with its queues allocated up front, so receiving
    /// input (in an interrupt, for the console) never allocates.
    pub fn try_new(termios: Termios) -> Result<LineDiscipline, Errno> {
        let mut line = Vec::new();
        line.try_reserve_exact(INPUT_MAX).map_err(|_| Errno::ENOMEM)?;
        let mut ready = VecDeque::new();
        ready.try_reserve_exact(INPUT_MAX + 1).map_err(|_| Errno::ENOMEM)?;
        Ok(LineDiscipline {
            termios,
            winsize: Winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 },
            line,
            ready,
            lines: 0,
            literal_next: false,
        })
    }

    fn lflag(&self, flag: u32) -> bool {
        self.termios.c_lflag & flag != 0
    }

    pub fn canonical(&self) -> bool {
        self.lflag(c::ICANON)
    }

    /// Whether a read would return now (a line, or in raw mode a byte).
    pub fn has_input(&self) -> bool {
        if self.canonical() {
            self.lines > 0
        } else {
            !self.ready.is_empty()
        }
    }

    /// Bytes a read could take now (FIONREAD).
    pub fn available(&self) -> usize {
        self.ready.iter().filter(|b| b.is_some()).count()
    }

    /// Whether another byte of input fits (a pty's writer waits otherwise).
    pub fn has_room(&self) -> bool {
        self.ready.len() + self.line.len() < INPUT_MAX
    }

    pub fn flush_input(&mut self) {
        self.ready.clear();
        self.line.clear();
        self.lines = 0;
    }

    /// New settings; leaving canonical mode makes the partial line readable.
    pub fn set_termios(&mut self, t: Termios) {
        let was_canonical = self.canonical();
        self.termios = t;
        if was_canonical && !self.canonical() {
            let line = core::mem::take(&mut self.line);
            self.ready.extend(line.into_iter().map(Some));
        }
    }

    pub fn output(&self, bytes: &[u8], sink: Sink) {
        output(&self.termios, bytes, sink);
    }

    /// Echoes one input byte: control characters as ^X under ECHOCTL.
    fn echo_char(&self, b: u8, sink: Sink) {
        if self.lflag(c::ECHOCTL) && (b < 0x20 || b == 0x7f) && b != b'\t' && b != b'\n' {
            self.output(&[b'^', b ^ 0x40], sink);
        } else {
            self.output(&[b], sink);
        }
    }

    /// Columns an echoed byte took (for erasing it).
    fn echo_width(&self, b: u8) -> usize {
        if self.lflag(c::ECHOCTL) && (b < 0x20 || b == 0x7f) && b != b'\t' {
            2
        } else {
            1
        }
    }

    fn erase_one(&mut self, sink: Sink) -> bool {
        let Some(b) = self.line.pop() else {
            return false;
        };
        if self.lflag(c::ECHO) && self.lflag(c::ECHOE) {
            for _ in 0..self.echo_width(b) {
                self.output(b"\x08 \x08", sink);
            }
        }
        true
    }

    fn end_line(&mut self) {
        let line = core::mem::take(&mut self.line);
        self.ready.extend(line.into_iter().map(Some));
        self.lines += 1;
    }

    /// Runs one received byte through the discipline; echoes go to `sink`.
    pub fn receive(&mut self, mut b: u8, sink: Sink) -> Effects {
        let t = self.termios;
        let mut effects = Effects::default();
        if self.literal_next {
            self.literal_next = false;
            self.queue(b, sink);
            return effects;
        }
        if t.c_iflag & c::ISTRIP != 0 {
            b &= 0x7f;
        }
        if b == b'\r' {
            if t.c_iflag & c::IGNCR != 0 {
                return effects;
            }
            if t.c_iflag & c::ICRNL != 0 {
                b = b'\n';
            }
        } else if b == b'\n' && t.c_iflag & c::INLCR != 0 {
            b = b'\r';
        }
        let cc = t.c_cc;
        let is = |idx: usize| b == cc[idx] && cc[idx] != 0;
        if t.c_lflag & c::ISIG != 0 {
            let signo = if is(c::VINTR) {
                Some(sig::SIGINT)
            } else if is(c::VQUIT) {
                Some(sig::SIGQUIT)
            } else if is(c::VSUSP) {
                Some(sig::SIGTSTP)
            } else {
                None
            };
            if let Some(s) = signo {
                if t.c_lflag & c::NOFLSH == 0 {
                    self.flush_input();
                    effects.flushed = true;
                }
                if t.c_lflag & c::ECHO != 0 {
                    self.echo_char(b, sink);
                }
                effects.signal = Some(s);
                return effects;
            }
        }
        if t.c_lflag & c::ICANON != 0 {
            let iexten = t.c_lflag & c::IEXTEN != 0;
            if is(c::VERASE) {
                self.erase_one(sink);
                return effects;
            }
            if iexten && is(c::VWERASE) {
                while self.line.last().is_some_and(|c| *c == b' ' || *c == b'\t') {
                    self.erase_one(sink);
                }
                while self.line.last().is_some_and(|c| *c != b' ' && *c != b'\t') {
                    self.erase_one(sink);
                }
                return effects;
            }
            if is(c::VKILL) {
                if t.c_lflag & c::ECHO != 0 && t.c_lflag & c::ECHOK != 0 && t.c_lflag & c::ECHOKE == 0 {
                    // Without ECHOKE the kill character shows, then a newline.
                    self.echo_char(b, sink);
                    self.output(b"\n", sink);
                    self.line.clear();
                } else {
                    while self.erase_one(sink) {}
                }
                return effects;
            }
            if iexten && is(c::VLNEXT) {
                self.literal_next = true;
                if t.c_lflag & c::ECHO != 0 && t.c_lflag & c::ECHOCTL != 0 {
                    self.output(b"^\x08", sink);
                }
                return effects;
            }
            if is(c::VEOF) {
                if !self.has_room() {
                    return effects;
                }
                let line = core::mem::take(&mut self.line);
                self.ready.extend(line.into_iter().map(Some));
                self.ready.push_back(None);
                self.lines += 1;
                return effects;
            }
        }
        self.queue(b, sink);
        effects
    }

    /// Queues an ordinary input byte: into the line (canonical) or the
    /// read queue (raw), echoing it.
    fn queue(&mut self, b: u8, sink: Sink) {
        let t = self.termios;
        let echo = t.c_lflag & c::ECHO != 0;
        if t.c_lflag & c::ICANON == 0 {
            if self.ready.len() < INPUT_MAX {
                self.ready.push_back(Some(b));
            }
            if echo {
                self.echo_char(b, sink);
            }
            return;
        }
        let cc = t.c_cc;
        let newline = b == b'\n' || (b == cc[c::VEOL] && b != 0) || (b == cc[c::VEOL2] && b != 0);
        // Room is kept for the newline that ends the line (Linux: the
        // last byte of the buffer only takes a line end).
        if self.ready.len() + self.line.len() + 1 >= INPUT_MAX && !newline {
            return;
        }
        self.line.push(b);
        if echo || (b == b'\n' && t.c_lflag & c::ECHONL != 0) {
            self.echo_char(b, sink);
        }
        if newline {
            self.end_line();
        }
    }

    /// Takes input for read(2): in canonical mode at most one line (a ^D
    /// ends the read, with 0 bytes at the start of a line: end of file).
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let canonical = self.canonical();
        let mut n = 0;
        while n < buf.len() {
            match self.ready.front() {
                Some(Some(b)) => {
                    let b = *b;
                    self.ready.pop_front();
                    buf[n] = b;
                    n += 1;
                    if canonical && (b == b'\n' || is_eol(&self.termios, b)) {
                        self.lines = self.lines.saturating_sub(1);
                        break;
                    }
                }
                Some(None) => {
                    if canonical || n == 0 {
                        self.ready.pop_front();
                        self.lines = self.lines.saturating_sub(1);
                    }
                    break;
                }
                None => break,
            }
        }
        if !canonical {
            // Raw mode counts no lines; end-of-file marks left over from
            // canonical mode are only skipped.
            self.lines = 0;
        }
        n
    }
}

fn is_eol(t: &Termios, b: u8) -> bool {
    b != 0 && (b == t.c_cc[c::VEOL] || b == t.c_cc[c::VEOL2])
}

/// Output processing (OPOST): what reaches the screen for `bytes`.
pub fn output(termios: &Termios, bytes: &[u8], sink: Sink) {
    let o = termios.c_oflag;
    if o & c::OPOST == 0 || o & (c::ONLCR | c::OCRNL) == 0 {
        sink(bytes);
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let replacement: &[u8] = match b {
            b'\n' if o & c::ONLCR != 0 => b"\r\n",
            b'\r' if o & c::OCRNL != 0 => b"\n",
            _ => continue,
        };
        sink(&bytes[start..i]);
        sink(replacement);
        start = i + 1;
    }
    sink(&bytes[start..]);
}
