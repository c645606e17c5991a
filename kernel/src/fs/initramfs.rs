//! Unpacks the boot module (cpio "newc" archives, gzip'd or plain, back
//! to back as Linux accepts them) into the root tmpfs, streaming.
//!
//! Each gzip member is inflated a window at a time ([`WINDOW`] bytes, the
//! deflate history included) into [`StreamParser`], which hands each
//! file's data on in the pieces it arrives in; those are written straight
//! into the file's page frames. Nothing the size of the archive or of a
//! file is ever held: a root of hundreds of megabytes unpacks in the
//! memory it takes as files. The module's frames go back to the frame
//! allocator behind the read position, and all of them once it is read.
//!
//! Running out of memory (the root tmpfs may hold half of memory, as on
//! Linux) stops the unpacking with an [`UnpackError`] that names the file
//! and the sizes; the caller reports it and powers off.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::TakenModule;
use kiln_util::cpio::stream::{EntryStart, Sink, StreamError, StreamParser};
use kiln_util::cpio::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use kiln_util::gzip;
use linux_abi::errno::Errno;
use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use super::dentry::{resolve, root, Dentry};
use super::inode::{Inode, Owner};
use crate::mm::try_box;

/// The inflate output window: a power of two of at least deflate's 32 KiB
/// history, so the decompressor can wrap around in it.
const WINDOW: usize = 64 * 1024;

/// What was unpacked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unpacked {
    pub entries: u64,
    /// Bytes of file data written.
    pub bytes: u64,
    /// Bytes of archive read (compressed).
    pub archive: u64,
}

/// Why unpacking stopped.
#[derive(Debug)]
pub struct UnpackError {
    pub what: &'static str,
    /// The file system's errno, when a file operation failed.
    pub errno: Option<Errno>,
    /// The entry being unpacked, if any.
    pub path: String,
    /// How far it got.
    pub done: Unpacked,
}

impl UnpackError {
    fn new(what: &'static str) -> UnpackError {
        UnpackError { what, errno: None, path: String::new(), done: Unpacked::default() }
    }

    /// Whether memory (or the root's share of it) ran out.
    pub fn out_of_memory(&self) -> bool {
        matches!(self.errno, Some(Errno::ENOSPC | Errno::ENOMEM))
    }
}

impl core::fmt::Display for UnpackError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.what)?;
        if let Some(e) = self.errno {
            write!(f, " ({})", e.name())?;
        }
        if !self.path.is_empty() {
            write!(f, " at /{}", self.path)?;
        }
        write!(
            f,
            " after {} entries, {} MiB of files from {} MiB of archive",
            self.done.entries,
            self.done.bytes >> 20,
            self.done.archive >> 20
        )
    }
}

/// Populates the root from the boot module, consuming it (its frames are
/// free again when this returns, whatever happened).
pub fn unpack(mut module: TakenModule) -> Result<Unpacked, UnpackError> {
    let mut parser = try_box(StreamParser::new()).map_err(|_| UnpackError::new("out of memory for the cpio parser"))?;
    let mut sink = RootSink::new();
    let result = unpack_members(&mut module, &mut parser, &mut sink);
    let done = Unpacked { entries: parser.entries(), bytes: sink.bytes, archive: module.position() };
    let result = result.and_then(|()| parser.finish().map_err(|e| UnpackError::new(e.as_str())));
    match result {
        Ok(()) => {
            sink.set_dir_times();
            Ok(done)
        }
        Err(mut e) => {
            e.done = done;
            if e.path.is_empty() {
                e.path = core::mem::take(&mut sink.path);
            }
            Err(e)
        }
    }
}

fn unpack_members(module: &mut TakenModule, parser: &mut StreamParser, sink: &mut RootSink) -> Result<(), UnpackError> {
    let mut window: Option<Vec<u8>> = None;
    let mut inflater: Option<alloc::boxed::Box<DecompressorOxide>> = None;
    loop {
        // Padding between members and archives.
        let nuls = module.rest().iter().take_while(|&&b| b == 0).count();
        module.consume(nuls);
        let rest = module.rest();
        if rest.is_empty() {
            return Ok(());
        }
        if gzip::is_gzip(rest) {
            let header = gzip::header_len(rest).map_err(|e| UnpackError::new(e.as_str()))?;
            module.consume(header);
            let window = match &mut window {
                Some(w) => w,
                None => window.insert(zeroed_vec(WINDOW)?),
            };
            let inflater = match &mut inflater {
                Some(i) => {
                    i.init();
                    i
                }
                None => inflater.insert(
                    try_box(DecompressorOxide::new()).map_err(|_| UnpackError::new("out of memory for inflate"))?,
                ),
            };
            let size = inflate_member(module, inflater, window, parser, sink)?;
            let (_crc, recorded) = gzip::trailer(module.rest()).map_err(|e| UnpackError::new(e.as_str()))?;
            if recorded != size as u32 {
                return Err(UnpackError::new("gzip member size does not match its trailer"));
            }
            module.consume(gzip::TRAILER_LEN);
        } else {
            // A plain archive, up to its trailer.
            let used = parser.feed_one_archive(rest, sink).map_err(|e| sink.error(e))?;
            module.consume(used);
        }
    }
}

/// Inflates one member's deflate data into the parser; returns how many
/// bytes it inflated to.
fn inflate_member(
    module: &mut TakenModule,
    inflater: &mut DecompressorOxide,
    window: &mut [u8],
    parser: &mut StreamParser,
    sink: &mut RootSink,
) -> Result<u64, UnpackError> {
    let mut out_pos = 0usize;
    let mut total = 0u64;
    loop {
        // The whole rest is there: no TINFL_FLAG_HAS_MORE_INPUT, so a
        // member that ends early fails instead of waiting for more.
        let (status, used, written) = decompress(inflater, module.rest(), window, out_pos, 0);
        module.consume(used);
        if written > 0 {
            parser.feed(&window[out_pos..out_pos + written], sink).map_err(|e| sink.error(e))?;
            total += written as u64;
            out_pos = (out_pos + written) & (WINDOW - 1);
        }
        match status {
            TINFLStatus::Done => return Ok(total),
            TINFLStatus::HasMoreOutput => {}
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                return Err(UnpackError::new("truncated gzip data"))
            }
            _ => return Err(UnpackError::new("corrupt gzip data")),
        }
    }
}

fn zeroed_vec(len: usize) -> Result<Vec<u8>, UnpackError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| UnpackError::new("out of memory for the inflate window"))?;
    v.resize(len, 0);
    Ok(v)
}

/// The entry being unpacked.
enum Current {
    None,
    File { inode: Arc<dyn Inode>, offset: u64, mtime: u32 },
    Symlink { dir: Arc<Dentry>, name: String, target: Vec<u8>, owner: Owner },
}

/// A regular file with several names, by (ino, device): newc stores the
/// data with one of them, and the others become hard links to it.
struct Linked {
    key: (u32, u32, u32),
    inode: Arc<dyn Inode>,
}

/// Writes entries into the root file system.
struct RootSink {
    root: Arc<Dentry>,
    current: Current,
    links: Vec<Linked>,
    /// The last parent directory: archives list a directory's files
    /// together, so most entries skip the walk from the root.
    last_dir: Option<(String, Arc<Dentry>)>,
    /// Directories and their archived mtimes, set once everything is in
    /// (creating their entries would move the times on again).
    dir_times: Vec<(Arc<dyn Inode>, u32)>,
    /// The entry in progress (for error messages).
    path: String,
    bytes: u64,
}

type SinkResult = Result<(), UnpackError>;

fn fail(what: &'static str, errno: Errno) -> UnpackError {
    UnpackError { errno: Some(errno), ..UnpackError::new(what) }
}

impl RootSink {
    fn new() -> RootSink {
        RootSink {
            root: root(),
            current: Current::None,
            links: Vec::new(),
            last_dir: None,
            dir_times: Vec::new(),
            path: String::new(),
            bytes: 0,
        }
    }

    /// Gives directories their archived times.
    fn set_dir_times(&mut self) {
        for (dir, mtime) in self.dir_times.drain(..).rev() {
            let _ = dir.set_times(None, Some(u64::from(mtime) * 1_000_000_000));
        }
    }

    fn error(&mut self, e: StreamError<UnpackError>) -> UnpackError {
        let mut e = match e {
            StreamError::Cpio(c) => UnpackError::new(c.as_str()),
            StreamError::Sink(s) => s,
        };
        e.path = core::mem::take(&mut self.path);
        e
    }

    /// The directory that holds `name` (a relative path) and the last
    /// component.
    fn parent_of<'n>(&mut self, name: &'n str) -> Result<(Arc<Dentry>, &'n str), UnpackError> {
        let (dir_path, base) = name.rsplit_once('/').unwrap_or(("", name));
        if let Some((p, d)) = &self.last_dir {
            if p == dir_path {
                return Ok((d.clone(), base));
            }
        }
        let mut full = String::new();
        full.try_reserve(dir_path.len() + 2).map_err(|_| fail("out of memory", Errno::ENOMEM))?;
        full.push('/');
        full.push_str(dir_path);
        let dir = if dir_path.is_empty() {
            self.root.clone()
        } else {
            resolve(&crate::cred::ROOT, &self.root, &full, true)
                .map_err(|e| fail("entry under a missing directory", e))?
        };
        if !dir.is_dir() {
            return Err(fail("entry under a non-directory", Errno::ENOTDIR));
        }
        let mut key = String::new();
        key.try_reserve(dir_path.len()).map_err(|_| fail("out of memory", Errno::ENOMEM))?;
        key.push_str(dir_path);
        self.last_dir = Some((key, dir.clone()));
        Ok((dir, base))
    }

    /// Makes room for a new node called `name`: a later archive replaces
    /// what an earlier one put there (as Linux does), but a directory
    /// stays.
    fn clear_name(dir: &Arc<Dentry>, name: &str) -> SinkResult {
        match dir.inode().lookup(name) {
            Ok(old) if old.file_type() == super::inode::FileType::Directory => {
                Err(fail("a directory is in the way", Errno::EISDIR))
            }
            Ok(_) => {
                dir.inode().unlink(name).map_err(|e| fail("cannot replace a file", e))?;
                dir.forget(name);
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }

    fn start_entry(&mut self, e: &EntryStart<'_>) -> SinkResult {
        if e.name.is_empty() {
            return Ok(());
        }
        let perm = e.mode & 0o7777;
        // Files keep the owners the archive gives them.
        let owner = Owner { uid: e.uid, gid: e.gid };
        let (dir, base) = self.parent_of(e.name)?;
        match e.mode & S_IFMT {
            S_IFDIR => {
                if let Ok(old) = dir.inode().lookup(base) {
                    if old.file_type() == super::inode::FileType::Directory {
                        return Ok(());
                    }
                }
                Self::clear_name(&dir, base)?;
                let made = dir
                    .inode()
                    .create(base, S_IFDIR | perm, 0, owner)
                    .map_err(|e| fail("cannot create a directory", e))?;
                let _ = made.set_times(None, Some(u64::from(e.mtime) * 1_000_000_000));
            }
            S_IFREG => {
                let key = (e.ino, e.dev_major, e.dev_minor);
                let earlier = (e.nlink > 1).then(|| self.links.iter().find(|l| l.key == key)).flatten();
                Self::clear_name(&dir, base)?;
                let inode = match earlier {
                    Some(l) => {
                        let inode = l.inode.clone();
                        dir.inode().link(base, &inode).map_err(|e| fail("cannot make a hard link", e))?;
                        inode
                    }
                    None => {
                        let inode = dir
                            .inode()
                            .create(base, S_IFREG | perm, 0, owner)
                            .map_err(|e| fail("cannot create a file", e))?;
                        if e.nlink > 1 {
                            self.links.try_reserve(1).map_err(|_| fail("out of memory", Errno::ENOMEM))?;
                            self.links.push(Linked { key, inode: inode.clone() });
                        }
                        inode
                    }
                };
                self.current = Current::File { inode, offset: 0, mtime: e.mtime };
            }
            S_IFLNK => {
                let mut target = Vec::new();
                target.try_reserve_exact(e.size as usize).map_err(|_| fail("out of memory", Errno::ENOMEM))?;
                let mut name = String::new();
                name.try_reserve_exact(base.len()).map_err(|_| fail("out of memory", Errno::ENOMEM))?;
                name.push_str(base);
                Self::clear_name(&dir, base)?;
                self.current = Current::Symlink { dir, name, target, owner };
            }
            kind => {
                // Device nodes and FIFOs are kept as nodes.
                Self::clear_name(&dir, base)?;
                let rdev = super::devfs::makedev(u64::from(e.rdev_major), u64::from(e.rdev_minor));
                dir.inode()
                    .create(base, kind | perm, rdev, owner)
                    .map_err(|e| fail("cannot create a special file", e))?;
            }
        }
        Ok(())
    }
}

impl Sink for RootSink {
    type Error = UnpackError;

    fn start(&mut self, e: &EntryStart<'_>) -> SinkResult {
        self.path.clear();
        if self.path.try_reserve(e.name.len()).is_ok() {
            self.path.push_str(e.name);
        }
        if e.mode & S_IFMT == S_IFLNK && e.size as usize >= super::dentry::PATH_MAX {
            return Err(fail("symlink target too long", Errno::ENAMETOOLONG));
        }
        self.start_entry(e)
    }

    fn data(&mut self, bytes: &[u8]) -> SinkResult {
        match &mut self.current {
            Current::File { inode, offset, .. } => {
                let mut done = 0;
                while done < bytes.len() {
                    let n = inode
                        .write_at(*offset, &bytes[done..])
                        .map_err(|e| fail("out of memory for the root file system", e))?;
                    if n == 0 {
                        return Err(fail("out of memory for the root file system", Errno::ENOSPC));
                    }
                    done += n;
                    *offset += n as u64;
                }
                self.bytes += bytes.len() as u64;
            }
            // Reserved to the full size at the start.
            Current::Symlink { target, .. } => target.extend_from_slice(bytes),
            Current::None => {}
        }
        Ok(())
    }

    fn end(&mut self) -> SinkResult {
        match core::mem::replace(&mut self.current, Current::None) {
            Current::File { inode, mtime, .. } => {
                let _ = inode.set_times(None, Some(u64::from(mtime) * 1_000_000_000));
            }
            Current::Symlink { dir, name, target, owner } => {
                let target = String::from_utf8(target).map_err(|_| fail("symlink target not UTF-8", Errno::EINVAL))?;
                dir.inode().symlink(&name, &target, owner).map_err(|e| fail("cannot create a symlink", e))?;
            }
            Current::None => {}
        }
        Ok(())
    }
}
