//! A push parser for cpio "newc" archives that arrive in pieces: the
//! kernel inflates the initramfs a window at a time and hands each piece
//! here, and the parser reports each entry's start, its data in the
//! pieces it came in, and its end, so the data can go straight into the
//! file's pages with no buffer the size of the archive or of a file.
//!
//! It reads exactly what [`super::Reader`] reads (the same magics,
//! concatenated archives with NUL padding between them, a missing final
//! padding after a trailer) and reports the same [`CpioError`]s; the only
//! state it keeps is the header being read and the entry's name, which is
//! at most [`NAME_MAX`] bytes (Linux's `PATH_MAX`). The input is
//! untrusted: nothing in it can make the parser panic or allocate.

use super::{align4, hex_field, normalize, CpioError, HEADER_LEN, MAGIC_CRC, MAGIC_NEWC, TRAILER};

/// Longest name accepted, with its NUL (Linux's `PATH_MAX`). Longer names
/// are [`CpioError::BadName`].
pub const NAME_MAX: usize = 4096;

/// An entry's header, given when the entry starts; its data follows in
/// [`Sink::data`] calls that add up to `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStart<'a> {
    /// As in [`super::Entry::name`]: relative, `./` and `/` removed, the
    /// root as the empty string.
    pub name: &'a str,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub mtime: u32,
    pub ino: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub rdev_major: u32,
    pub rdev_minor: u32,
    /// Bytes of data (a symlink's target length).
    pub size: u32,
}

/// Where the entries go. Any error stops the parse and comes back from
/// [`StreamParser::feed`] as [`StreamError::Sink`].
pub trait Sink {
    type Error;
    fn start(&mut self, entry: &EntryStart<'_>) -> Result<(), Self::Error>;
    /// The next piece of the current entry's data (never empty).
    fn data(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;
    /// The current entry's data is complete.
    fn end(&mut self) -> Result<(), Self::Error>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamError<E> {
    Cpio(CpioError),
    Sink(E),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between archives: NUL padding, a header, or a clean end.
    Between,
    /// Reading the header (`have` bytes of it so far).
    Header,
    /// Reading the name (`have` of `need` bytes so far).
    Name { need: usize },
    /// Skipping `left` padding bytes, then going to `next`.
    Pad { left: usize, next: AfterPad },
    /// Passing on `left` more bytes of an entry's data.
    Data { left: u32 },
    /// Skipping a trailer's data (normally none) and its padding; the end
    /// of input here is a clean end, as for [`super::Reader`].
    Trailer { left: usize },
    /// Stopped after an error.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterPad {
    /// The data of the entry whose name was just read.
    Data,
    /// The next header of the same archive.
    Header,
}

/// The parser's state between pieces of input.
pub struct StreamParser {
    state: State,
    header: [u8; HEADER_LEN],
    name: [u8; NAME_MAX],
    have: usize,
    /// The current entry's header fields (valid from `Name` on).
    current: Fields,
    /// Entries reported so far.
    entries: u64,
    /// Trailers seen so far.
    trailers: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Fields {
    ino: u32,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    mtime: u32,
    size: u32,
    dev_major: u32,
    dev_minor: u32,
    rdev_major: u32,
    rdev_minor: u32,
    namesize: usize,
}

impl Default for StreamParser {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamParser {
    pub const fn new() -> Self {
        StreamParser {
            state: State::Between,
            header: [0; HEADER_LEN],
            name: [0; NAME_MAX],
            have: 0,
            current: Fields {
                ino: 0,
                mode: 0,
                uid: 0,
                gid: 0,
                nlink: 0,
                mtime: 0,
                size: 0,
                dev_major: 0,
                dev_minor: 0,
                rdev_major: 0,
                rdev_minor: 0,
                namesize: 0,
            },
            entries: 0,
            trailers: 0,
        }
    }

    /// Entries started so far (trailers not counted).
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Whether the input so far ends cleanly: after a trailer (and any
    /// NUL padding), or before anything at all.
    pub fn at_clean_end(&self) -> bool {
        matches!(self.state, State::Between | State::Trailer { left: _ }) && !self.in_trailer_data()
    }

    fn in_trailer_data(&self) -> bool {
        // A trailer's own data must be there; only its padding may be cut.
        matches!(self.state, State::Trailer { left } if left > self.trailer_padding())
    }

    fn trailer_padding(&self) -> usize {
        let size = self.current.size as usize;
        align4(size).map_or(0, |a| a - size)
    }

    /// Ends the input: Ok if it ended cleanly, else [`CpioError::Truncated`].
    pub fn finish(&self) -> Result<(), CpioError> {
        match self.state {
            State::Failed => Err(CpioError::Truncated),
            _ if self.at_clean_end() => Ok(()),
            _ => Err(CpioError::Truncated),
        }
    }

    /// Parses the next piece of input, calling `sink` for what it
    /// completes. After an error every later call fails the same way.
    pub fn feed<S: Sink>(&mut self, mut input: &[u8], sink: &mut S) -> Result<(), StreamError<S::Error>> {
        while !input.is_empty() {
            match self.step(input, sink) {
                Ok(used) => input = &input[used..],
                Err(e) => {
                    self.state = State::Failed;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Like [`StreamParser::feed`], but stops right after the first
    /// trailer ends (its padding included) and returns how much of `input`
    /// it used: what follows an archive may be something else, such as a
    /// compressed one, as in Linux's initramfs.
    pub fn feed_one_archive<S: Sink>(&mut self, input: &[u8], sink: &mut S) -> Result<usize, StreamError<S::Error>> {
        let trailers = self.trailers;
        let mut used = 0;
        while used < input.len() {
            match self.step(&input[used..], sink) {
                Ok(n) => used += n,
                Err(e) => {
                    self.state = State::Failed;
                    return Err(e);
                }
            }
            if self.trailers != trailers && self.state == State::Between {
                break;
            }
        }
        Ok(used)
    }

    /// Consumes a prefix of `input` (at least one byte) and returns its
    /// length.
    fn step<S: Sink>(&mut self, input: &[u8], sink: &mut S) -> Result<usize, StreamError<S::Error>> {
        let bad = |e| Err(StreamError::Cpio(e));
        match self.state {
            State::Failed => bad(CpioError::Truncated),
            State::Between => {
                let nuls = input.iter().take_while(|&&b| b == 0).count();
                if nuls == 0 {
                    self.state = State::Header;
                    self.have = 0;
                }
                Ok(nuls)
            }
            State::Header => {
                let n = (HEADER_LEN - self.have).min(input.len());
                self.header[self.have..self.have + n].copy_from_slice(&input[..n]);
                // Check the magic on what is there, so garbage is reported
                // as such even when the input then ends.
                let upto = (self.have + n).min(6);
                let seen = &self.header[..upto];
                if seen != &MAGIC_NEWC[..upto] && seen != &MAGIC_CRC[..upto] {
                    return bad(CpioError::BadMagic);
                }
                self.have += n;
                if self.have == HEADER_LEN {
                    self.parse_header().map_err(StreamError::Cpio)?;
                }
                Ok(n)
            }
            State::Name { need } => {
                let n = (need - self.have).min(input.len());
                self.name[self.have..self.have + n].copy_from_slice(&input[..n]);
                self.have += n;
                if self.have == need {
                    self.name_done(sink)?;
                }
                Ok(n)
            }
            State::Pad { left, next } => {
                let n = left.min(input.len());
                if n == left {
                    self.state = match next {
                        AfterPad::Header => {
                            self.have = 0;
                            State::Header
                        }
                        AfterPad::Data => self.data_or_end(sink)?,
                    };
                } else {
                    self.state = State::Pad { left: left - n, next };
                }
                Ok(n)
            }
            State::Data { left } => {
                let n = (left as usize).min(input.len());
                sink.data(&input[..n]).map_err(StreamError::Sink)?;
                let left = left - n as u32;
                self.state = if left == 0 { self.entry_done(sink)? } else { State::Data { left } };
                Ok(n)
            }
            State::Trailer { left } => {
                let n = left.min(input.len());
                self.state = if n == left { State::Between } else { State::Trailer { left: left - n } };
                Ok(n)
            }
        }
    }

    fn parse_header(&mut self) -> Result<(), CpioError> {
        let h = &self.header;
        let f = |i| hex_field(h, i);
        let fields = Fields {
            ino: f(0)?,
            mode: f(1)?,
            uid: f(2)?,
            gid: f(3)?,
            nlink: f(4)?,
            mtime: f(5)?,
            size: f(6)?,
            dev_major: f(7)?,
            dev_minor: f(8)?,
            rdev_major: f(9)?,
            rdev_minor: f(10)?,
            namesize: f(11)? as usize,
        };
        f(12)?;
        if fields.namesize == 0 || fields.namesize > NAME_MAX {
            return Err(CpioError::BadName);
        }
        self.current = fields;
        self.have = 0;
        self.state = State::Name { need: fields.namesize };
        Ok(())
    }

    /// The whole name is in: check it, skip its padding, then the data.
    fn name_done<S: Sink>(&mut self, sink: &mut S) -> Result<(), StreamError<S::Error>> {
        let namesize = self.current.namesize;
        let name = self.valid_name().map_err(StreamError::Cpio)?;
        let is_trailer = name == TRAILER;
        let pad = align4(HEADER_LEN + namesize).map_or(0, |a| a - (HEADER_LEN + namesize));
        if is_trailer {
            self.trailers += 1;
            let size = self.current.size as usize;
            self.state = State::Trailer { left: pad + align4(size).unwrap_or(size) };
            if self.state == (State::Trailer { left: 0 }) {
                self.state = State::Between;
            }
            return Ok(());
        }
        self.state = if pad > 0 { State::Pad { left: pad, next: AfterPad::Data } } else { self.data_or_end(sink)? };
        Ok(())
    }

    fn valid_name(&self) -> Result<&str, CpioError> {
        let raw = &self.name[..self.current.namesize];
        let (nul, name) = raw.split_last().ok_or(CpioError::BadName)?;
        if *nul != 0 || name.contains(&0) || name.is_empty() {
            return Err(CpioError::BadName);
        }
        core::str::from_utf8(name).map_err(|_| CpioError::BadName)
    }

    /// Reports the entry's start; its data comes next, or its end if it
    /// has none.
    fn data_or_end<S: Sink>(&mut self, sink: &mut S) -> Result<State, StreamError<S::Error>> {
        let c = self.current;
        let name = normalize(self.valid_name().map_err(StreamError::Cpio)?);
        let start = EntryStart {
            name,
            mode: c.mode,
            uid: c.uid,
            gid: c.gid,
            nlink: c.nlink,
            mtime: c.mtime,
            ino: c.ino,
            dev_major: c.dev_major,
            dev_minor: c.dev_minor,
            rdev_major: c.rdev_major,
            rdev_minor: c.rdev_minor,
            size: c.size,
        };
        sink.start(&start).map_err(StreamError::Sink)?;
        self.entries += 1;
        if c.size == 0 {
            self.entry_done(sink)
        } else {
            Ok(State::Data { left: c.size })
        }
    }

    /// The entry's data is complete: report it and skip its padding.
    fn entry_done<S: Sink>(&mut self, sink: &mut S) -> Result<State, StreamError<S::Error>> {
        sink.end().map_err(StreamError::Sink)?;
        let size = self.current.size as usize;
        let pad = align4(size).map_or(0, |a| a - size);
        self.have = 0;
        Ok(if pad > 0 { State::Pad { left: pad, next: AfterPad::Header } } else { State::Header })
    }
}

#[cfg(test)]
mod tests;
