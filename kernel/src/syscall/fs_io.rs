//! Descriptor calls: open, read, write and their vector and positional
//! forms, lseek, close, dup, fcntl, ioctl, pipes. (sendfile is with
//! splice in `splice`, preadv2/pwritev2 in `rwf`.)

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::Iovec;
use linux_abi::socket as s;

use super::fs_path::{path_arg, start_dir};
use super::{SysResult, SyscallContext};
use crate::cred::{MAY_READ, MAY_WRITE};
use crate::fs::dentry::{resolve_how, resolve_parent_how, resolve_within, Lookup};
use crate::fs::file::{FileOps, InodeFile, SinkKind};
use crate::fs::inode::{FileType, S_IFMT, S_IFREG};
use crate::fs::perm;
use crate::fs::OpenFile;
use crate::mm::uaccess;

/// Largest single read/write Linux performs (MAX_RW_COUNT).
const MAX_RW: usize = 0x7fff_f000;
/// Bounce-buffer size for moving data between files and user memory.
const CHUNK: usize = 64 * 1024;

pub fn file(ctx: &SyscallContext, fd: i32) -> Result<Arc<OpenFile>, Errno> {
    ctx.process().files().lock().get(fd)
}

pub fn nofile_limit(ctx: &SyscallContext) -> usize {
    (ctx.process().rlimits.lock()[c::RLIMIT_NOFILE as usize].0 as usize).min(1 << 20)
}

pub fn install(ctx: &SyscallContext, f: OpenFile, cloexec: bool) -> SysResult {
    let f = Arc::try_new(f).map_err(|_| Errno::ENOMEM)?;
    let limit = nofile_limit(ctx);
    Ok(ctx.process().files().lock().install_from(0, f, cloexec, limit)? as u64)
}

/// Transfers up to this size go through a stack buffer, larger ones
/// through a heap buffer.
const SMALL: usize = 64;

/// Where a transfer is staged between a file and user memory. Built in
/// place by the caller (an enum holding the array cost ~30 instructions
/// of moves per call).
struct Staging {
    small: [u8; SMALL],
    heap: Vec<u8>,
}

impl Staging {
    #[inline(always)]
    fn new() -> Staging {
        Staging { small: [0; SMALL], heap: Vec::new() }
    }

    /// A buffer for a transfer of `len` bytes (at most one chunk).
    #[inline(always)]
    fn buf(&mut self, len: usize) -> Result<&mut [u8], Errno> {
        if len <= SMALL {
            Ok(&mut self.small)
        } else {
            self.heap = bounce(len.min(CHUNK))?;
            Ok(&mut self.heap)
        }
    }
}

pub(super) fn bounce(len: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    v.resize(len, 0);
    Ok(v)
}

/// Devices with a fixed extent take a request whole or not at all: one
/// that crosses the end fails before any byte moves.
fn check_extent(f: &OpenFile, len: usize, at: Option<u64>) -> Result<(), Errno> {
    if let Some(limit) = f.io.seek_limit {
        let start = match at {
            Some(o) => o,
            None => *f.offset.lock(),
        };
        if start.checked_add(len as u64).is_none_or(|end| end > limit) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// Reads from `f` into user memory; `at` reads at an offset without moving it.
pub(super) fn read_into_user(ctx: &SyscallContext, f: &OpenFile, buf: u64, len: usize, at: Option<u64>) -> SysResult {
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    if f.is_dir() {
        return Err(Errno::EISDIR);
    }
    let len = len.min(MAX_RW);
    if len == 0 {
        // Files with rules of their own still see empty reads (an eventfd
        // refuses them), as they see empty writes.
        if f.ops.anon_name().is_some() {
            return f.ops.read_at(0, &mut [], f.nonblocking()).map(|n| n as u64);
        }
        return Ok(0);
    }
    if let Some(sink) = f.io.sink {
        return read_sink(ctx, sink, buf, len);
    }
    check_extent(f, len, at)?;
    super::direct_io::check_device(f, buf, len as u64, at, false)?;
    update_atime(f);
    if let Some((inode, align)) = super::direct_io::direct(f) {
        let n = super::direct_io::read(ctx, f, inode, align, buf, len, at)?;
        if n > 0 {
            crate::fs::notify::accessed(f);
        }
        return Ok(n);
    }
    if f.io.user_direct && at.is_none() {
        let n = f.ops.read_user(&|| ctx.vm(), buf, len, f.nonblocking())?;
        if n > 0 {
            crate::fs::notify::accessed(f);
        }
        return Ok(n as u64);
    }
    if f.io.reads_to_user {
        if let Some(inode) = f.ops.inode() {
            let vm = || ctx.vm();
            let n = match at {
                Some(off) => inode.read_user_at(off, buf, len, &vm)?,
                None => {
                    let mut off = f.offset.lock();
                    let n = inode.read_user_at(*off, buf, len, &vm)?;
                    *off += n as u64;
                    n
                }
            };
            if n > 0 {
                crate::fs::notify::accessed(f);
            }
            return Ok(n as u64);
        }
    }
    let mut staging = Staging::new();
    let tmp = staging.buf(len)?;
    let mut done = 0;
    while done < len {
        let want = (len - done).min(CHUNK);
        let n = match at {
            Some(off) => f.ops.read_at(off + done as u64, &mut tmp[..want], f.nonblocking()),
            None => f.read(&mut tmp[..want]),
        };
        let n = match n {
            Ok(n) => n,
            Err(e) if done > 0 && matches!(e, Errno::EAGAIN | Errno::ERESTARTSYS) => break,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        ctx.copy_to_user(buf + done as u64, &tmp[..n])?;
        done += n;
        if n < want || f.io.partial_reads {
            break;
        }
    }
    if done > 0 {
        crate::fs::notify::accessed(f);
    }
    Ok(done as u64)
}

/// A read of a file with an inode records the access (unless O_NOATIME),
/// as the mount's atime mode says (`fs::mount::touch_atime`).
pub(super) fn update_atime(f: &OpenFile) {
    if f.flags() & c::O_NOATIME != 0 {
        return;
    }
    if let (Some(d), Some(inode)) = (&f.dentry, f.ops.inode()) {
        crate::fs::mount::touch_atime(d, inode.as_ref());
    }
}

/// A read from a sink device: end of file, or zeros straight into the
/// caller's buffer. A fault after some bytes landed returns the count
/// that did, as Linux's read_zero does.
fn read_sink(ctx: &SyscallContext, sink: SinkKind, buf: u64, len: usize) -> SysResult {
    if !uaccess::access_ok(buf, len) {
        return Err(Errno::EFAULT);
    }
    if sink == SinkKind::Null {
        return Ok(0);
    }
    static ZEROS: [u8; 4096] = [0; 4096];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZEROS.len());
        let copied = uaccess::write_prefix_with(|| ctx.vm(), buf + done as u64, &ZEROS[..n]);
        done += copied;
        if copied < n {
            return if done > 0 { Ok(done as u64) } else { Err(Errno::EFAULT) };
        }
        if done < len {
            // A huge read yields the CPU and stops early for a signal, as
            // Linux's does.
            if crate::proc::signal::has_deliverable(ctx.task) {
                break;
            }
            crate::sched::preempt_point();
        }
    }
    Ok(done as u64)
}

/// RLIMIT_FSIZE for a write of `len` bytes at `pos` to a regular file:
/// the bytes that fit under the limit, or, when none do, SIGXFSZ for the
/// calling thread and EFBIG (what the caller sees when it survives the
/// signal: ignored or handled), as Linux's generic_write_check_limits.
pub(super) fn fsize_limit(
    ctx: &SyscallContext,
    inode: Option<&Arc<dyn crate::fs::Inode>>,
    pos: u64,
    len: usize,
) -> Result<usize, Errno> {
    if !inode.is_some_and(|i| i.file_type() == FileType::Regular) {
        return Ok(len);
    }
    let limit = ctx.process().rlimits.lock()[c::RLIMIT_FSIZE as usize].0;
    if limit == crate::proc::RLIM_INFINITY {
        return Ok(len);
    }
    if pos >= limit {
        file_too_big(ctx);
        return Err(Errno::EFBIG);
    }
    Ok(len.min((limit - pos).min(usize::MAX as u64) as usize))
}

/// A file would grow past RLIMIT_FSIZE: SIGXFSZ to the calling thread.
pub(super) fn file_too_big(ctx: &SyscallContext) {
    let info = linux_abi::layout::Siginfo::kill(
        linux_abi::signal::SIGXFSZ,
        linux_abi::signal::SI_USER,
        ctx.process().pid_ns.local_or_zero(ctx.process().pid),
        ctx.cred().uid,
    );
    crate::proc::signal::send_to_task(ctx.task, info);
}

pub(super) fn write_from_user(ctx: &SyscallContext, f: &OpenFile, buf: u64, len: usize, at: Option<u64>) -> SysResult {
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    let len = len.min(MAX_RW);
    if len == 0 {
        // Devices still see empty writes (/dev/full fails them).
        if f.ops.inode().is_none() {
            return f.ops.write_at(0, &[], f.nonblocking()).map(|n| n as u64);
        }
        return Ok(0);
    }
    if f.io.sink.is_some() {
        // Discarded unread, as Linux's write_null does.
        return if uaccess::access_ok(buf, len) { Ok(len as u64) } else { Err(Errno::EFAULT) };
    }
    check_extent(f, len, at)?;
    let append = f.flags() & c::O_APPEND != 0;
    let pos = match at {
        _ if append => f.ops.inode().map_or(0, |i| i.metadata().size),
        Some(off) => off,
        None if f.io.seekable => *f.offset.lock(),
        None => 0,
    };
    let len = fsize_limit(ctx, f.ops.inode(), pos, len)?;
    // After the limit check, as Linux's file_remove_privs follows
    // generic_write_checks.
    if let Some(inode) = f.ops.inode() {
        perm::clear_setid_on_write(inode.as_ref(), || ctx.cred())?;
    }
    super::direct_io::check_device(f, buf, len as u64, at, true)?;
    if let Some((inode, align)) = super::direct_io::direct(f) {
        let n = super::direct_io::write(ctx, f, inode, align, buf, len, at)?;
        if n > 0 {
            crate::fs::notify::modified(f);
            sync_after_write(f)?;
        }
        return Ok(n);
    }
    if f.io.user_direct && at.is_none() {
        let n = f.ops.write_user(&|| ctx.vm(), buf, len, f.nonblocking())?;
        if n > 0 {
            crate::fs::notify::modified(f);
            sync_after_write(f)?;
        }
        return Ok(n as u64);
    }
    let mut staging = Staging::new();
    let tmp = staging.buf(len)?;
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK);
        ctx.copy_from_user(buf + done as u64, &mut tmp[..n])?;
        // pwrite on an O_APPEND file appends, as on Linux, and like any
        // pwrite leaves the file offset alone.
        let written = match at {
            Some(_) if f.flags() & c::O_APPEND != 0 => {
                let end = f.ops.inode().map_or(0, |i| i.metadata().size);
                f.ops.write_at(end, &tmp[..n], f.nonblocking())
            }
            Some(off) => f.ops.write_at(off + done as u64, &tmp[..n], f.nonblocking()),
            None => f.write(&tmp[..n]),
        };
        let written = match written {
            Ok(w) => w,
            Err(e) if done > 0 && matches!(e, Errno::EAGAIN | Errno::ERESTARTSYS | Errno::EPIPE) => break,
            Err(e) => return Err(e),
        };
        done += written;
        if written < n {
            break;
        }
    }
    if done > 0 {
        crate::fs::notify::modified(f);
        sync_after_write(f)?;
    }
    Ok(done as u64)
}

/// O_DSYNC and O_SYNC (Linux's generic_write_sync): before the write
/// returns, its data is durable, and with O_SYNC (which includes O_DSYNC)
/// the metadata too, as fdatasync and fsync make them; their error is the
/// write's.
fn sync_after_write(f: &OpenFile) -> Result<(), Errno> {
    let flags = f.flags();
    if flags & c::O_DSYNC == 0 {
        return Ok(());
    }
    sync_written(f, flags & c::__O_SYNC == 0)
}

/// Makes what was written to `f` durable: its data, and unless
/// `data_only` its metadata too (fdatasync or fsync); for O_DSYNC/O_SYNC
/// and pwritev2's RWF_DSYNC/RWF_SYNC.
pub(super) fn sync_written(f: &OpenFile, data_only: bool) -> Result<(), Errno> {
    match f.ops.inode() {
        Some(inode) => inode.sync(data_only),
        None => Ok(()),
    }
}

pub fn sys_read(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if crate::net::Socket::of(&f).is_some() {
        return super::socket_msg::read(ctx, &f, a[1], a[2] as usize);
    }
    read_into_user(ctx, &f, a[1], a[2] as usize, None)
}

pub fn sys_write(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if crate::net::Socket::of(&f).is_some() {
        return super::socket_msg::write(ctx, &f, a[1], a[2] as usize);
    }
    write_from_user(ctx, &f, a[1], a[2] as usize, None)
}

fn positional(f: &OpenFile, offset: u64) -> Result<u64, Errno> {
    if !f.io.seekable && f.ops.fixed_seek().is_none() {
        return Err(Errno::ESPIPE);
    }
    if (offset as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(offset)
}

pub fn sys_pread64(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let off = positional(&f, a[3])?;
    read_into_user(ctx, &f, a[1], a[2] as usize, Some(off))
}

pub fn sys_pwrite64(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let off = positional(&f, a[3])?;
    write_from_user(ctx, &f, a[1], a[2] as usize, Some(off))
}

pub(super) fn read_iovecs(ctx: &SyscallContext, ptr: u64, count: u64) -> Result<Vec<Iovec>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    let mut out = Vec::new();
    let mut total: u64 = 0;
    for i in 0..count {
        let mut b = [0u8; Iovec::SIZE];
        uaccess::read_bytes(&vm, ptr + i * Iovec::SIZE as u64, &mut b)?;
        let iov = Iovec::from_bytes(&b);
        if (iov.iov_len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        total = total.checked_add(iov.iov_len).filter(|t| *t <= isize::MAX as u64).ok_or(Errno::EINVAL)?;
        out.push(iov);
    }
    Ok(out)
}

fn vector_io(ctx: &SyscallContext, a: &[u64; 6], write: bool, at: Option<u64>) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let iovs = read_iovecs(ctx, a[1], a[2])?;
    if at.is_none() && crate::net::Socket::of(&f).is_some() {
        return super::socket_msg::vector(ctx, &f, &iovs, write);
    }
    super::direct_io::check_vector(&f, &iovs, at, write)?;
    // RLIMIT_FSIZE counts the whole vector once, so a vector that reaches
    // the limit part way is a short write, not a signal.
    let mut budget = u64::MAX;
    if write && f.writable() {
        let wanted: u64 = iovs.iter().map(|v| v.iov_len).sum();
        let pos = match at {
            _ if f.flags() & c::O_APPEND != 0 => f.ops.inode().map_or(0, |i| i.metadata().size),
            Some(off) => off,
            None if f.io.seekable => *f.offset.lock(),
            None => 0,
        };
        if wanted > 0 {
            budget = fsize_limit(ctx, f.ops.inode(), pos, wanted.min(usize::MAX as u64) as usize)? as u64;
        }
    }
    let mut total = 0;
    for iov in iovs {
        let pos = at.map(|o| o + total);
        let len = iov.iov_len.min(budget.saturating_sub(total));
        if write && len == 0 && iov.iov_len > 0 {
            break;
        }
        let n = if write {
            write_from_user(ctx, &f, iov.iov_base, len as usize, pos)
        } else {
            read_into_user(ctx, &f, iov.iov_base, iov.iov_len as usize, pos)
        };
        let n = match n {
            Ok(n) => n,
            Err(e) if total > 0 => {
                let _ = e;
                break;
            }
            Err(e) => return Err(e),
        };
        total += n;
        if n < if write { len } else { iov.iov_len } {
            break;
        }
    }
    Ok(total)
}

pub fn sys_readv(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    vector_io(ctx, a, false, None)
}

pub fn sys_writev(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    vector_io(ctx, a, true, None)
}

pub fn sys_preadv(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let off = positional(&f, a[3])?;
    vector_io(ctx, a, false, Some(off))
}

pub fn sys_pwritev(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let off = positional(&f, a[3])?;
    vector_io(ctx, a, true, Some(off))
}

const OPEN_KNOWN: u32 = 3
    | c::O_CREAT
    | c::O_EXCL
    | c::O_NOCTTY
    | c::O_TRUNC
    | c::O_APPEND
    | c::O_NONBLOCK
    | c::O_DSYNC
    | c::O_ASYNC
    | c::O_DIRECT
    | c::O_LARGEFILE
    | c::O_DIRECTORY
    | c::O_NOFOLLOW
    | c::O_NOATIME
    | c::O_CLOEXEC
    | c::O_PATH
    | c::O_TMPFILE
    | 0o4000000; // __O_SYNC

/// open(2) and friends: resolve (creating with O_CREAT), check the flags
/// against what the file is, and install a descriptor.
pub fn do_open(ctx: &SyscallContext, dirfd: i32, path_ptr: u64, flags: u32, mode: u32) -> SysResult {
    let path = path_arg(ctx, path_ptr)?;
    open_path(ctx, dirfd, &path, flags, mode, Lookup::default())
}

/// do_open's work once the path is read, walking as `how` says (openat2).
pub fn open_path(ctx: &SyscallContext, dirfd: i32, path: &str, flags: u32, mode: u32, how: Lookup) -> SysResult {
    if flags & c::O_TMPFILE == c::O_TMPFILE {
        // O_TMPFILE needs write access; anonymous tmpfs files are not supported.
        return Err(if flags & 3 == c::O_RDONLY { Errno::EINVAL } else { Errno::EOPNOTSUPP });
    }
    if flags & c::O_CREAT != 0 && flags & c::O_DIRECTORY != 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    // An absolute path ignores the directory, unless the walk is scoped to it.
    let start =
        if path.starts_with('/') && !how.scoped() { crate::fs::dentry::caller_root() } else { start_dir(ctx, dirfd)? };
    let follow = flags & c::O_NOFOLLOW == 0;
    let mut created = false;
    let dentry = if flags & c::O_CREAT != 0 && flags & c::O_PATH == 0 {
        let (dir, name) = resolve_parent_how(&cred, &start, path, how)?;
        if name == "." || name == ".." || path.ends_with('/') {
            return Err(Errno::EISDIR);
        }
        match dir.child(&name) {
            Ok(_) => {
                if flags & c::O_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                // Follow a trailing symlink to its target (creating it if dangling is not supported).
                resolve_within(&cred, &start, &dir, &name, follow, how)?
            }
            Err(Errno::ENOENT) => {
                crate::fs::dentry::check_writable(&dir)?;
                perm::may_create(&cred, &dir)?;
                let umask = ctx.process().umask.load(Ordering::Relaxed);
                let inode = perm::create(&cred, &dir, &name, S_IFREG | (mode & 0o7777), umask, 0)?;
                crate::fs::notify::created(&dir, &name, false);
                created = true;
                // The new inode, not a second look-up of the name: that
                // walked the whole directory leaf again.
                dir.instantiate(&name, inode)
            }
            Err(e) => return Err(e),
        }
    } else {
        resolve_how(&cred, &start, path, follow, how)?
    };
    finish_open(ctx, &cred, dentry, flags, created)
}

/// Opens `dentry` as `flags` ask (the checks of an open once the file is
/// found); `created` when this call made it.
pub(super) fn finish_open(
    ctx: &SyscallContext,
    cred: &Arc<crate::cred::Cred>,
    dentry: Arc<crate::fs::Dentry>,
    flags: u32,
    created: bool,
) -> SysResult {
    let cred = cred.clone();
    let access = flags & 3;
    let inode = dentry.inode().clone();
    let kind = inode.file_type();
    if flags & c::O_PATH != 0 {
        if flags & c::O_DIRECTORY != 0 && kind != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let f = OpenFile::with_dentry(
            Arc::new(InodeFile::new(inode)),
            flags & (c::O_PATH | 3 | c::O_DIRECTORY | c::O_NOFOLLOW),
            dentry,
        );
        return install(ctx, f, flags & c::O_CLOEXEC != 0);
    }
    if kind == FileType::Symlink {
        return Err(Errno::ELOOP);
    }
    if kind == FileType::Directory && flags & c::O_CREAT != 0 {
        return Err(Errno::EISDIR);
    }
    if flags & c::O_DIRECTORY != 0 && kind != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    // A file this call created is not checked against its own mode.
    let mask = if created {
        0
    } else {
        let mut m = match access {
            c::O_RDONLY => MAY_READ,
            c::O_WRONLY => MAY_WRITE,
            _ => MAY_READ | MAY_WRITE,
        };
        if flags & c::O_TRUNC != 0 {
            m |= MAY_WRITE;
        }
        m
    };
    perm::may_open(&cred, &dentry, mask, flags)?;
    if access == 3 {
        return Err(Errno::EINVAL);
    }
    let ops: Arc<dyn FileOps> = match inode.open(flags) {
        Some(r) => r?,
        // A running program cannot be opened for writing (ETXTBSY).
        None if access != c::O_RDONLY => Arc::new(InodeFile::for_writing(inode.clone())?),
        None => Arc::new(InodeFile::new(inode.clone())),
    };
    if kind == FileType::Regular {
        // Opening breaks the leases it conflicts with, and waits for them
        // (after taking write access, as Linux's do_dentry_open).
        let key = crate::fs::lock::inode_key(inode.as_ref());
        crate::fs::lease::break_leases(key, access != c::O_RDONLY, flags & c::O_NONBLOCK != 0)?;
    }
    // Linux truncates even for O_RDONLY when O_TRUNC is given (and that
    // too needs write access).
    if flags & c::O_TRUNC != 0 && kind == FileType::Regular && !created {
        let _write = crate::fs::writecount::get_write_access(&inode)?;
        perm::clear_setid_on_write(inode.as_ref(), || cred.clone())?;
        crate::fs::truncate::truncate(&inode, 0)?;
    }
    let status = flags
        & (3 | c::O_APPEND
            | c::O_NONBLOCK
            | c::O_DSYNC
            | c::O_ASYNC
            | c::O_DIRECT
            | c::O_LARGEFILE
            | c::O_NOATIME
            | 0o4000000);
    let f = OpenFile::with_dentry(ops, status, dentry.clone());
    let fd = install(ctx, f, flags & c::O_CLOEXEC != 0)?;
    crate::fs::notify::changed(&dentry, c::IN_OPEN);
    if flags & c::O_TRUNC != 0 && kind == FileType::Regular && !created {
        crate::fs::notify::changed(&dentry, c::IN_MODIFY);
    }
    Ok(fd)
}

pub fn sys_open(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_open(ctx, c::AT_FDCWD, a[0], a[1] as u32 & OPEN_KNOWN, a[2] as u32)
}

pub fn sys_openat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_open(ctx, a[0] as i32, a[1], a[2] as u32 & OPEN_KNOWN, a[3] as u32)
}

pub fn sys_creat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_open(ctx, c::AT_FDCWD, a[0], c::O_CREAT | c::O_WRONLY | c::O_TRUNC, a[1] as u32)
}

pub fn sys_close(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let entry = ctx.process().files().lock().close(a[0] as i32)?;
    // The description may be the last reference: dropping it here (not
    // under the table lock) runs pipe and device release.
    drop(entry);
    Ok(0)
}

pub fn sys_close_range(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    const CLOSE_RANGE_UNSHARE: u32 = 1 << 1;
    const CLOSE_RANGE_CLOEXEC: u32 = 1 << 2;
    let (first, last, flags) = (a[0] as u32, a[1] as u32, a[2] as u32);
    if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    let files = ctx.process().files();
    let mut closed = Vec::new();
    {
        let mut table = files.lock();
        let last = last.min(1 << 20);
        for fd in first..=last {
            if flags & CLOSE_RANGE_CLOEXEC != 0 {
                let _ = table.set_cloexec(fd as i32, true);
            } else if let Ok(e) = table.close(fd as i32) {
                closed.push(e);
            }
        }
    }
    drop(closed);
    Ok(0)
}

pub fn sys_lseek(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if let Some(pos) = f.ops.fixed_seek() {
        return Ok(pos);
    }
    if !f.io.seekable {
        return Err(Errno::ESPIPE);
    }
    let (offset, whence) = (a[1] as i64, a[2] as u32);
    let size = f.ops.size().unwrap_or(0) as i64;
    let mut pos = f.offset.lock();
    let new = match whence {
        c::SEEK_SET => offset,
        c::SEEK_CUR => (*pos as i64).checked_add(offset).ok_or(Errno::EOVERFLOW)?,
        c::SEEK_END => size.checked_add(offset).ok_or(Errno::EOVERFLOW)?,
        c::SEEK_DATA | c::SEEK_HOLE => {
            if offset >= size || offset < 0 {
                return Err(Errno::ENXIO);
            }
            let data = whence == c::SEEK_DATA;
            match f.ops.inode().and_then(|i| i.seek_data(offset as u64, size as u64, data)) {
                Some(found) => found? as i64,
                // A file without holes: data up to its size.
                None if data => offset,
                None => size,
            }
        }
        _ => return Err(Errno::EINVAL),
    };
    if new < 0 || f.io.seek_limit.is_some_and(|limit| new as u64 > limit) {
        return Err(Errno::EINVAL);
    }
    *pos = new as u64;
    Ok(new as u64)
}

pub fn sys_dup(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let limit = nofile_limit(ctx);
    let files = ctx.process().files();
    let mut table = files.lock();
    let f = table.get(a[0] as i32)?;
    Ok(table.install_from(0, f, false, limit)? as u64)
}

fn dup_to(ctx: &SyscallContext, old: i32, new: i32, cloexec: bool) -> SysResult {
    let limit = nofile_limit(ctx);
    if new < 0 || new as usize >= limit {
        return Err(Errno::EBADF);
    }
    let files = ctx.process().files();
    let replaced = {
        let mut table = files.lock();
        let f = table.get(old)?;
        table.install_at(new as usize, f, cloexec)?
    };
    drop(replaced);
    Ok(new as u64)
}

pub fn sys_dup2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (old, new) = (a[0] as i32, a[1] as i32);
    if old == new {
        file(ctx, old)?;
        return Ok(new as u64);
    }
    dup_to(ctx, old, new, false)
}

pub fn sys_dup3(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (old, new, flags) = (a[0] as i32, a[1] as i32, a[2] as u32);
    if flags & !c::O_CLOEXEC != 0 || old == new {
        return Err(Errno::EINVAL);
    }
    dup_to(ctx, old, new, flags & c::O_CLOEXEC != 0)
}

pub fn sys_fcntl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, cmd, arg) = (a[0] as i32, a[1] as u32, a[2]);
    let f = file(ctx, fd)?;
    // A path-only descriptor answers only the descriptor commands.
    if f.is_path_only() && !matches!(cmd, c::F_DUPFD | c::F_DUPFD_CLOEXEC | c::F_GETFD | c::F_SETFD | c::F_GETFL) {
        return Err(Errno::EBADF);
    }
    match cmd {
        c::F_DUPFD | c::F_DUPFD_CLOEXEC => {
            let limit = nofile_limit(ctx);
            let min = usize::try_from(arg as i64).map_err(|_| Errno::EINVAL)?;
            if min >= limit {
                return Err(Errno::EINVAL);
            }
            Ok(ctx.process().files().lock().install_from(min, f, cmd == c::F_DUPFD_CLOEXEC, limit)? as u64)
        }
        c::F_GETFD => Ok(u64::from(ctx.process().files().lock().is_cloexec(fd)?)),
        c::F_SETFD => {
            ctx.process().files().lock().set_cloexec(fd, arg & u64::from(c::FD_CLOEXEC) != 0)?;
            Ok(0)
        }
        c::F_GETFL => Ok(u64::from(f.flags())),
        c::F_SETFL => {
            let changeable = c::O_APPEND | c::O_NONBLOCK | c::O_DIRECT | c::O_NOATIME;
            let old = f.flags();
            let mut new = (old & !changeable) | (arg as u32 & changeable);
            // O_ASYNC changes only where signal-driven I/O exists (Linux:
            // the file's ->fasync sets the bit), starting or stopping it.
            if (old ^ arg as u32) & c::O_ASYNC != 0 && f.ops.fasync() {
                if arg as u32 & c::O_ASYNC != 0 {
                    crate::fs::fasync::enable(&f, fd)?;
                    new |= c::O_ASYNC;
                } else {
                    crate::fs::fasync::disable(&f);
                    new &= !c::O_ASYNC;
                }
            }
            f.flags.store(new, Ordering::Relaxed);
            Ok(0)
        }
        c::F_GETPIPE_SZ => f.ops.pipe_size().map(|s| s as u64).ok_or(Errno::EBADF),
        c::F_SETPIPE_SZ => {
            let privileged = crate::ipc::creds::capable(ctx.task, crate::ipc::creds::CAP_SYS_RESOURCE);
            // The size is an int (Linux 6.7 on): the high half is ignored.
            f.ops.set_pipe_size(u64::from(arg as u32), privileged).map(|s| s as u64)
        }
        c::F_GETLK | c::F_SETLK | c::F_SETLKW | c::F_OFD_GETLK | c::F_OFD_SETLK | c::F_OFD_SETLKW => {
            super::lock::fcntl_record_lock(ctx, fd, &f, cmd, arg)
        }
        c::F_ADD_SEALS | c::F_GET_SEALS => super::memfd::fcntl_seals(&f, cmd, arg as u32),
        c::F_SETLEASE | c::F_GETLEASE => super::lock::fcntl_lease(ctx, fd, &f, cmd, arg),
        c::F_SETOWN | c::F_GETOWN | c::F_SETOWN_EX | c::F_GETOWN_EX | c::F_SETSIG | c::F_GETSIG => {
            super::lock::fcntl_owner(ctx, &f, cmd, arg)
        }
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_ioctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    let (cmd, arg) = (a[1] as u32, a[2]);
    let vm = ctx.vm()?;
    match cmd {
        c::FIONBIO => {
            let on = uaccess::read_u32(&vm, arg)? != 0;
            let old = f.flags();
            let new = if on { old | c::O_NONBLOCK } else { old & !c::O_NONBLOCK };
            f.flags.store(new, Ordering::Relaxed);
            Ok(0)
        }
        c::FIOASYNC => {
            let on = uaccess::read_u32(&vm, arg)? != 0;
            let old = f.flags();
            if (on != (old & c::O_ASYNC != 0)) && !f.ops.fasync() {
                return Err(Errno::ENOTTY);
            }
            if on && old & c::O_ASYNC == 0 {
                crate::fs::fasync::enable(&f, a[0] as i32)?;
            } else if !on && old & c::O_ASYNC != 0 {
                crate::fs::fasync::disable(&f);
            }
            let new = if on { old | c::O_ASYNC } else { old & !c::O_ASYNC };
            f.flags.store(new, Ordering::Relaxed);
            Ok(0)
        }
        c::FIOCLEX => ctx.process().files().lock().set_cloexec(a[0] as i32, true).map(|_| 0),
        c::FIONCLEX => ctx.process().files().lock().set_cloexec(a[0] as i32, false).map(|_| 0),
        c::FIONREAD if f.ops.inode().is_some_and(|i| i.file_type() == FileType::Regular) => {
            let size = f.ops.inode().map_or(0, |i| i.metadata().size);
            let pos = *f.offset.lock();
            uaccess::write_u32(&vm, arg, size.saturating_sub(pos).min(u32::MAX as u64) as u32)?;
            Ok(0)
        }
        c::TIOCGPTPEER => {
            // Like open(2) of the slave (creation flags mean nothing here).
            let flags = arg as u32;
            let (ops, dentry) = f.ops.open_peer(flags)?;
            let status = flags & (3 | c::O_NONBLOCK | c::O_LARGEFILE);
            let file = match dentry {
                Some(d) => OpenFile::with_dentry(ops, status, d),
                None => OpenFile::new(ops, status),
            };
            install(ctx, file, flags & c::O_CLOEXEC != 0)
        }
        // A socket's owner, as F_SETOWN/F_GETOWN (Linux's sock_ioctl).
        s::FIOSETOWN | s::SIOCSPGRP if crate::net::Socket::of(&f).is_some() => {
            let who = uaccess::read_u32(&vm, arg)? as i32;
            super::lock::fcntl_owner(ctx, &f, c::F_SETOWN, who as i64 as u64)
        }
        s::FIOGETOWN | s::SIOCGPGRP if crate::net::Socket::of(&f).is_some() => {
            let who = super::lock::fcntl_owner(ctx, &f, c::F_GETOWN, 0)? as i32;
            uaccess::write_u32(&vm, arg, who as u32)?;
            Ok(0)
        }
        _ => f.ops.ioctl(cmd, arg, &vm),
    }
}

fn make_pipe(ctx: &SyscallContext, fds_ptr: u64, flags: u32) -> SysResult {
    if flags & !(c::O_CLOEXEC | c::O_NONBLOCK | c::O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    let (r, w) = crate::fs::pipe::new_pair();
    let status = flags & c::O_NONBLOCK;
    let cloexec = flags & c::O_CLOEXEC != 0;
    let rfd = install(ctx, OpenFile::new(r, c::O_RDONLY | status), cloexec)?;
    let wfd = match install(ctx, OpenFile::new(w, c::O_WRONLY | status), cloexec) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = ctx.process().files().lock().close(rfd as i32);
            return Err(e);
        }
    };
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(rfd as u32).to_le_bytes());
    b[4..].copy_from_slice(&(wfd as u32).to_le_bytes());
    if let Err(e) = uaccess::write_bytes(&ctx.vm()?, fds_ptr, &b) {
        let files = ctx.process().files();
        let mut t = files.lock();
        let _ = t.close(rfd as i32);
        let _ = t.close(wfd as i32);
        return Err(e);
    }
    Ok(0)
}

pub fn sys_pipe(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    make_pipe(ctx, a[0], 0)
}

pub fn sys_pipe2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    make_pipe(ctx, a[0], a[1] as u32)
}

pub fn sys_syncfs(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if let Some(inode) = f.ops.inode() {
        inode.sync_fs()?;
    }
    Ok(0)
}

pub fn sys_fsync(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    fsync(ctx, a, false)
}

pub fn sys_fdatasync(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    fsync(ctx, a, true)
}

fn fsync(ctx: &mut SyscallContext, a: &[u64; 6], datasync: bool) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    // Pipes and sockets cannot be synced at all.
    if f.ops.mode() & S_IFMT == crate::fs::inode::S_IFIFO {
        return Err(Errno::EINVAL);
    }
    f.ops.fsync()?;
    if let Some(inode) = f.ops.inode() {
        inode.sync(datasync)?;
    }
    Ok(0)
}
