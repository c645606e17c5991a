//! A zero-copy reader for cpio "newc" archives, the format of Linux
//! initramfs images.
//!
//! Each entry is a 110-byte ASCII header — the magic `070701` (or `070702`,
//! the "crc" variant, whose checksum field is ignored here) followed by
//! thirteen 8-digit hex fields — then the NUL-terminated name, padded so the
//! data starts on a 4-byte boundary, then the data, padded to 4 bytes. An
//! entry named `TRAILER!!!` ends an archive. Like Linux, [`Reader`] accepts
//! several archives back to back with NUL padding between them. Entries
//! borrow their name and data from the input; hard links (same `ino`,
//! `nlink > 1`, data carried by the last one) are reported as they appear,
//! and it is up to the caller to link them.
//!
//! The input is untrusted: every length is bounds-checked and a malformed
//! archive yields one [`CpioError`], after which the iterator is finished.

/// Why an archive could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpioError {
    /// A header does not start with `070701` or `070702`, or non-NUL bytes
    /// follow a trailer without forming a new header.
    BadMagic,
    /// The input ends inside a header, name or data, or before a trailer.
    Truncated,
    /// A header field is not 8 hex digits.
    BadHex,
    /// A name is empty, not NUL-terminated, contains a NUL or is not UTF-8.
    BadName,
}

impl CpioError {
    pub fn as_str(&self) -> &'static str {
        match self {
            CpioError::BadMagic => "bad cpio magic",
            CpioError::Truncated => "truncated cpio archive",
            CpioError::BadHex => "bad hex field in cpio header",
            CpioError::BadName => "bad cpio entry name",
        }
    }
}

impl core::fmt::Display for CpioError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Length of a newc header.
pub const HEADER_LEN: usize = 110;
/// Magic of the plain newc format.
pub const MAGIC_NEWC: &[u8; 6] = b"070701";
/// Magic of the newc format with a data checksum.
pub const MAGIC_CRC: &[u8; 6] = b"070702";
/// Name of the entry that ends an archive.
pub const TRAILER: &str = "TRAILER!!!";

/// File-type bits of `mode` and their values (as in `st_mode`).
pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;

/// One archive member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Path relative to the root, with any leading `./` and `/` removed;
    /// the empty string for the root itself (stored as `.`).
    pub name: &'a str,
    /// `st_mode`: file type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub mtime: u32,
    pub ino: u32,
    pub dev_major: u32,
    pub dev_minor: u32,
    /// Device number of a character or block special file.
    pub rdev_major: u32,
    pub rdev_minor: u32,
    /// File contents; for a symlink, the target.
    pub data: &'a [u8],
}

impl Entry<'_> {
    pub fn file_type(&self) -> u32 {
        self.mode & S_IFMT
    }
    /// Permission bits including set-id and sticky (`mode & 0o7777`).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }
    pub fn is_root(&self) -> bool {
        self.name.is_empty()
    }
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }
    pub fn is_file(&self) -> bool {
        self.file_type() == S_IFREG
    }
    pub fn is_symlink(&self) -> bool {
        self.file_type() == S_IFLNK
    }
    /// Character or block device, FIFO or socket.
    pub fn is_special(&self) -> bool {
        matches!(self.file_type(), S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK)
    }
}

/// Where the reader is between entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the first header or just after a trailer: NUL padding may
    /// follow, and the end of input is a clean end.
    BetweenArchives,
    /// Inside an archive: the next thing must be a header.
    InArchive,
    /// Finished, cleanly or after an error.
    Done,
}

/// Iterator over the entries of one or more concatenated newc archives.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    state: State,
}

fn align4(n: usize) -> Option<usize> {
    Some(n.checked_add(3)? & !3)
}

fn hex_field(h: &[u8], index: usize) -> Result<u32, CpioError> {
    let start = 6 + index * 8;
    let digits = h.get(start..start + 8).ok_or(CpioError::Truncated)?;
    let mut v: u32 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(CpioError::BadHex),
        };
        v = (v << 4) | d as u32;
    }
    Ok(v)
}

/// Removes the prefixes cpio tools commonly write (`./`, `/`) and maps the
/// root (`.`) to the empty string.
fn normalize(mut name: &str) -> &str {
    loop {
        if let Some(rest) = name.strip_prefix("./") {
            name = rest;
        } else if let Some(rest) = name.strip_prefix('/') {
            name = rest;
        } else {
            break;
        }
    }
    if name == "." {
        ""
    } else {
        name
    }
}

impl<'a> Reader<'a> {
    pub fn new(archive: &'a [u8]) -> Self {
        Reader { data: archive, pos: 0, state: State::BetweenArchives }
    }

    /// Byte offset of the next unread header (or padding) in the input.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Parses the entry at `self.pos`, returning it and the offset just
    /// past its padded data. The name is not yet normalized.
    fn parse_entry(&self) -> Result<(Entry<'a>, usize), CpioError> {
        let start = self.pos;
        let rest = &self.data[start..];
        // Check the magic on what is there before demanding a full header,
        // so garbage is reported as such even when it is short.
        let magic_len = rest.len().min(6);
        if rest[..magic_len] != MAGIC_NEWC[..magic_len] && rest[..magic_len] != MAGIC_CRC[..magic_len] {
            return Err(CpioError::BadMagic);
        }
        let h = rest.get(..HEADER_LEN).ok_or(CpioError::Truncated)?;
        let f = |i| hex_field(h, i);
        let ino = f(0)?;
        let mode = f(1)?;
        let uid = f(2)?;
        let gid = f(3)?;
        let nlink = f(4)?;
        let mtime = f(5)?;
        let filesize = f(6)? as usize;
        let dev_major = f(7)?;
        let dev_minor = f(8)?;
        let rdev_major = f(9)?;
        let rdev_minor = f(10)?;
        let namesize = f(11)? as usize;
        let _check = f(12)?;

        if namesize == 0 {
            return Err(CpioError::BadName);
        }
        let name_start = start + HEADER_LEN;
        let name_end = name_start.checked_add(namesize).ok_or(CpioError::Truncated)?;
        let raw = self.data.get(name_start..name_end).ok_or(CpioError::Truncated)?;
        let (nul, name) = raw.split_last().ok_or(CpioError::BadName)?;
        if *nul != 0 || name.contains(&0) || name.is_empty() {
            return Err(CpioError::BadName);
        }
        let name = core::str::from_utf8(name).map_err(|_| CpioError::BadName)?;

        let data_start = start
            .checked_add(align4(HEADER_LEN + namesize).ok_or(CpioError::Truncated)?)
            .ok_or(CpioError::Truncated)?;
        let data_end = data_start.checked_add(filesize).ok_or(CpioError::Truncated)?;
        let data = self.data.get(data_start..data_end).ok_or(CpioError::Truncated)?;
        // The final padding may be missing at the very end of the input.
        let next = (start + align4(data_end - start).ok_or(CpioError::Truncated)?).min(self.data.len());

        let entry =
            Entry { name, mode, uid, gid, nlink, mtime, ino, dev_major, dev_minor, rdev_major, rdev_minor, data };
        Ok((entry, next))
    }

    fn fail(&mut self, e: CpioError) -> Option<Result<Entry<'a>, CpioError>> {
        self.state = State::Done;
        Some(Err(e))
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Entry<'a>, CpioError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.state {
                State::Done => return None,
                State::BetweenArchives => {
                    while self.data.get(self.pos) == Some(&0) {
                        self.pos += 1;
                    }
                    if self.pos >= self.data.len() {
                        self.state = State::Done;
                        return None;
                    }
                    self.state = State::InArchive;
                }
                State::InArchive => {
                    if self.pos >= self.data.len() {
                        return self.fail(CpioError::Truncated);
                    }
                    let (mut entry, next) = match self.parse_entry() {
                        Ok(v) => v,
                        Err(e) => return self.fail(e),
                    };
                    self.pos = next;
                    if entry.name == TRAILER {
                        self.state = State::BetweenArchives;
                        continue;
                    }
                    entry.name = normalize(entry.name);
                    return Some(Ok(entry));
                }
            }
        }
    }
}

pub mod stream;

#[cfg(test)]
mod tests;
