//! Moving data between descriptors without a trip through user memory:
//! splice (a pipe and a file, or two pipes), tee (duplicating a pipe's
//! contents into another), vmsplice (user memory and a pipe),
//! copy_file_range (between regular files of one file system) and
//! sendfile (from a file to anything writable).
//!
//! Kiln's pipes hold bytes, not page references, so the data is copied
//! once through a kernel buffer where Linux moves pages; what user space
//! sees is the same: the same counts, offsets, blocking rules and
//! errnos. Linux counts a pipe's room in page slots; `Pipe::free_pages`
//! does too, and a splice from a regular file fills slots from the file
//! offset's page boundaries, as the page cache does. Two things differ:
//! data vmspliced into a pipe is a copy (Linux maps the pages, so a later
//! change to the memory would show), and SPLICE_F_MOVE and SPLICE_F_GIFT,
//! hints Linux accepts and ignores, are accepted and ignored.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::fs as x;
use linux_abi::layout::Iovec;

use super::fs_io::file;
use super::{SysResult, SyscallContext};
use crate::fs::inode::FileType;
use crate::fs::pipe::{Pipe, PIPE_BUF};
use crate::fs::OpenFile;
use crate::mm::uaccess;

/// Largest single transfer (MAX_RW_COUNT).
const MAX_RW: usize = 0x7fff_f000;
/// The kernel buffer data passes through.
const CHUNK: usize = 64 * 1024;
/// The largest file offset (MAX_LFS_FILESIZE).
const MAX_FILE_SIZE: u64 = i64::MAX as u64;

fn staging(len: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    v.resize(len, 0);
    Ok(v)
}

fn pipe_of(f: &OpenFile) -> Option<&Arc<Pipe>> {
    f.ops.as_pipe()
}

/// Whether reads and writes of `f` may name their own offset (Linux's
/// FMODE_PREAD and FMODE_PWRITE).
fn positional(f: &OpenFile) -> bool {
    f.io.seekable || f.ops.fixed_seek().is_some()
}

fn is_regular(f: &OpenFile) -> bool {
    f.ops.inode().is_some_and(|i| i.file_type() == FileType::Regular)
}

/// `rw_verify_area`: a negative offset, or a count that does not fit a
/// signed size or would run past the largest offset, is EINVAL.
fn verify_area(pos: u64, count: usize) -> Result<(), Errno> {
    if (count as isize) < 0 || (pos as i64) < 0 || (pos as i64).checked_add(count as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// RLIMIT_FSIZE for writing `len` bytes at `pos` of `f`: how many fit
/// under the limit, or SIGXFSZ and EFBIG when none do (the write path's
/// `fs_io::fsize_limit`), and EFBIG past the largest file size.
pub(super) fn fsize_limit(ctx: &SyscallContext, f: &OpenFile, pos: u64, len: usize) -> Result<usize, Errno> {
    if !is_regular(f) {
        return Ok(len);
    }
    let len = super::fs_io::fsize_limit(ctx, f.ops.inode(), pos, len)?;
    if pos >= MAX_FILE_SIZE {
        return Err(Errno::EFBIG);
    }
    Ok(len)
}

/// Whether Linux's file has a `splice_read`: not directories, pipes or
/// files that say so (per-process /proc files).
fn splice_readable(f: &OpenFile) -> bool {
    !f.is_dir() && pipe_of(f).is_none() && f.ops.splice_read()
}

/// Reads from `f` at `pos` (ignored by files without an offset).
fn read_from(f: &OpenFile, pos: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    f.ops.read_at(pos, buf, nonblock || f.nonblocking())
}

/// Writes all of `data` to `out` at `pos`, or as much as the file takes:
/// a short count ends the transfer. A regular file's set-user-ID bit and
/// capabilities go, as with any write.
fn write_to(ctx: &SyscallContext, out: &OpenFile, pos: u64, data: &[u8]) -> Result<usize, Errno> {
    let len = fsize_limit(ctx, out, pos, data.len())?;
    if let Some(inode) = out.ops.inode() {
        if inode.file_type() == FileType::Regular {
            crate::fs::perm::clear_setid_on_write(inode.as_ref(), || ctx.cred())?;
        }
    }
    let mut done = 0;
    while done < len {
        let n = match out.ops.write_at(pos + done as u64, &data[done..len], out.nonblocking()) {
            Ok(n) => n,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// Stops a long transfer early for a signal, as Linux's splice loops do.
fn interrupted(ctx: &SyscallContext) -> bool {
    crate::proc::signal::has_deliverable(ctx.task)
}

/// A file into a pipe (`splice_file_to_pipe`): waits for room (EPIPE
/// without readers), then fills the free slots: from a regular file one
/// page of the file per slot, from anything else a page per slot.
fn file_to_pipe(
    ctx: &SyscallContext,
    input: &OpenFile,
    pos: &mut u64,
    pipe: &Pipe,
    len: usize,
    nonblock: bool,
) -> Result<usize, Errno> {
    if !splice_readable(input) {
        return Err(Errno::EINVAL);
    }
    pipe.wait_for_space(nonblock)?;
    let slots = pipe.free_pages();
    let room = if is_regular(input) {
        (PIPE_BUF - (*pos % PIPE_BUF as u64) as usize) + (slots - 1) * PIPE_BUF
    } else {
        slots * PIPE_BUF
    };
    let want = len.min(room).min(MAX_RW);
    let mut buf = staging(want.min(CHUNK))?;
    let mut done = 0;
    while done < want {
        let n = (want - done).min(buf.len());
        // Only the first read may wait; a file without offsets gives what
        // it has.
        let got = match read_from(input, *pos, &mut buf[..n], done > 0) {
            Ok(got) => got,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        if got == 0 {
            break;
        }
        pipe.push(&buf[..got])?;
        *pos += got as u64;
        done += got;
        if got < n || interrupted(ctx) {
            break;
        }
    }
    Ok(done)
}

/// A pipe into a file (`iter_file_splice_write`): waits for data (0 at
/// end of file, EAGAIN when `nonblock`), then writes what the pipe holds,
/// up to `len`, without waiting for more. What the file does not take
/// stays in the pipe.
fn pipe_to_file(
    ctx: &SyscallContext,
    pipe: &Pipe,
    out: &OpenFile,
    pos: &mut u64,
    len: usize,
    nonblock: bool,
) -> Result<usize, Errno> {
    if interrupted(ctx) {
        return Err(Errno::ERESTARTSYS);
    }
    if !pipe.wait_for_data(nonblock)? {
        return Ok(0);
    }
    let mut buf = staging(len.min(CHUNK))?;
    let mut done = 0;
    while done < len {
        let n = pipe.take(&mut buf[..(len - done).min(CHUNK)]);
        if n == 0 {
            break;
        }
        let written = match write_to(ctx, out, *pos, &buf[..n]) {
            Ok(w) => w,
            Err(e) => {
                pipe.unread(&buf[..n]);
                if done > 0 {
                    break;
                }
                return Err(e);
            }
        };
        pipe.unread(&buf[written..n]);
        *pos += written as u64;
        done += written;
        if written < n || interrupted(ctx) {
            break;
        }
    }
    Ok(done)
}

/// Moves (`keep` false, splice) or copies (`keep` true, tee) up to `len`
/// bytes from one pipe to another: waits for data in `from`, then for
/// room in `to`, then moves what both allow.
fn pipe_to_pipe(from: &Pipe, to: &Pipe, len: usize, nonblock: bool, keep: bool) -> Result<usize, Errno> {
    let has_data = from.wait_for_data(nonblock)?;
    to.wait_for_space(nonblock)?;
    if !has_data {
        return Ok(0);
    }
    let want = len.min(to.free_pages() * PIPE_BUF).min(from.len());
    let mut buf = staging(want.min(CHUNK))?;
    let mut done = 0;
    while done < want {
        let n = (want - done).min(buf.len());
        let got = if keep { from.peek(&mut buf[..n]) } else { from.take(&mut buf[..n]) };
        if got == 0 {
            break;
        }
        to.push(&buf[..got])?;
        done += got;
        // tee copies from the front each time: one pass.
        if keep {
            break;
        }
    }
    Ok(done)
}

/// A file to a file through a kernel buffer (`splice_direct_to_actor`):
/// until `count` bytes, the end of the input, or a short write.
fn direct(
    ctx: &SyscallContext,
    input: &OpenFile,
    in_pos: &mut u64,
    out: &OpenFile,
    out_pos: &mut u64,
    count: usize,
) -> Result<usize, Errno> {
    let mut buf = staging(count.min(CHUNK))?;
    let mut done = 0;
    while done < count {
        let want = (count - done).min(buf.len());
        let n = match read_from(input, *in_pos, &mut buf[..want], false) {
            Ok(n) => n,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        let w = match write_to(ctx, out, *out_pos, &buf[..n]) {
            Ok(w) => w,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        *in_pos += w as u64;
        *out_pos += w as u64;
        done += w;
        if w < n || (done < count && interrupted(ctx)) {
            break;
        }
    }
    Ok(done)
}

fn read_offset(ctx: &SyscallContext, ptr: u64) -> Result<Option<u64>, Errno> {
    if ptr == 0 {
        return Ok(None);
    }
    Ok(Some(uaccess::read_u64(&ctx.vm()?, ptr)?))
}

/// The file position a transfer starts at (0 for files without one).
fn file_pos(f: &OpenFile) -> u64 {
    if f.io.seekable {
        *f.offset.lock()
    } else {
        0
    }
}

fn set_file_pos(f: &OpenFile, pos: u64) {
    if f.io.seekable {
        *f.offset.lock() = pos;
    }
}

/// A transfer of `n` bytes happened: the input was read (atime, inotify
/// IN_ACCESS) and the output written (IN_MODIFY), as Linux's splice,
/// tee, copy_file_range and sendfile report on success.
fn transferred(input: &OpenFile, out: &OpenFile, n: usize) {
    if n > 0 {
        super::fs_io::update_atime(input);
        crate::fs::notify::accessed(input);
        crate::fs::notify::modified(out);
    }
}

pub fn sys_splice(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd_in, off_in, fd_out, off_out, len, flags) =
        (a[0] as i32, a[1], a[2] as i32, a[3], a[4] as usize, a[5] as u32);
    if len == 0 {
        return Ok(0);
    }
    if flags & !x::SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let input = file(ctx, fd_in)?;
    let out = file(ctx, fd_out)?;
    let (ipipe, opipe) = (pipe_of(&input), pipe_of(&out));
    if (ipipe.is_some() && off_in != 0) || (opipe.is_some() && off_out != 0) {
        return Err(Errno::ESPIPE);
    }
    let given_out = read_offset(ctx, off_out)?;
    let given_in = read_offset(ctx, off_in)?;
    if !input.readable() || !out.writable() {
        return Err(Errno::EBADF);
    }
    let flag_nonblock = flags & x::SPLICE_F_NONBLOCK != 0;
    let n = match (ipipe, opipe) {
        (Some(ip), Some(op)) => {
            if Arc::ptr_eq(ip, op) {
                return Err(Errno::EINVAL);
            }
            let nonblock = flag_nonblock || input.nonblocking() || out.nonblocking();
            pipe_to_pipe(ip, op, len, nonblock, false)?
        }
        (Some(ip), None) => {
            if given_out.is_some() && !positional(&out) {
                return Err(Errno::EINVAL);
            }
            let mut pos = given_out.unwrap_or_else(|| file_pos(&out));
            if out.flags() & c::O_APPEND != 0 {
                return Err(Errno::EINVAL);
            }
            verify_area(pos, len)?;
            let nonblock = flag_nonblock || input.nonblocking();
            let n = pipe_to_file(ctx, ip, &out, &mut pos, len, nonblock)?;
            match given_out {
                Some(_) => uaccess::write_u64(&ctx.vm()?, off_out, pos)?,
                None => set_file_pos(&out, pos),
            }
            n
        }
        (None, Some(op)) => {
            if given_in.is_some() && !positional(&input) {
                return Err(Errno::EINVAL);
            }
            let mut pos = given_in.unwrap_or_else(|| file_pos(&input));
            verify_area(pos, len)?;
            let nonblock = flag_nonblock || out.nonblocking();
            let n = file_to_pipe(ctx, &input, &mut pos, op, len, nonblock)?;
            match given_in {
                Some(_) => uaccess::write_u64(&ctx.vm()?, off_in, pos)?,
                None => set_file_pos(&input, pos),
            }
            n
        }
        (None, None) => return Err(Errno::EINVAL),
    };
    transferred(&input, &out, n);
    Ok(n as u64)
}

pub fn sys_tee(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd_in, fd_out, len, flags) = (a[0] as i32, a[1] as i32, a[2] as usize, a[3] as u32);
    if flags & !x::SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let input = file(ctx, fd_in)?;
    let out = file(ctx, fd_out)?;
    if !input.readable() || !out.writable() {
        return Err(Errno::EBADF);
    }
    match (pipe_of(&input), pipe_of(&out)) {
        (Some(ip), Some(op)) if !Arc::ptr_eq(ip, op) => {
            let nonblock = flags & x::SPLICE_F_NONBLOCK != 0 || input.nonblocking() || out.nonblocking();
            let n = pipe_to_pipe(ip, op, len, nonblock, true)?;
            transferred(&input, &out, n);
            Ok(n as u64)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn read_iovecs(ctx: &SyscallContext, ptr: u64, count: u64) -> Result<Vec<Iovec>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let mut out = Vec::new();
    out.try_reserve(count as usize).map_err(|_| Errno::ENOMEM)?;
    let mut total: u64 = 0;
    for i in 0..count {
        let mut b = [0u8; Iovec::SIZE];
        ctx.copy_from_user(ptr + i * Iovec::SIZE as u64, &mut b)?;
        let iov = Iovec::from_bytes(&b);
        total = total.checked_add(iov.iov_len).filter(|t| *t <= isize::MAX as u64).ok_or(Errno::EINVAL)?;
        out.push(iov);
    }
    Ok(out)
}

/// User memory into a pipe: after waiting for room (only
/// SPLICE_F_NONBLOCK makes it not wait, as on Linux), as many user
/// pages as there are free slots, each page of an iovec a slot.
fn vmsplice_to_pipe(ctx: &SyscallContext, pipe: &Pipe, iovs: &[Iovec], nonblock: bool) -> Result<usize, Errno> {
    pipe.wait_for_space(nonblock)?;
    let mut slots = pipe.free_pages();
    let mut buf = staging(CHUNK.min(slots * PIPE_BUF))?;
    let mut done = 0;
    'segments: for iov in iovs {
        let mut addr = iov.iov_base;
        let end = iov.iov_base + iov.iov_len;
        while addr < end {
            if slots == 0 {
                break 'segments;
            }
            // One slot per page the data touches.
            let page_end = (addr | (PIPE_BUF as u64 - 1)) + 1;
            let n = (end.min(page_end) - addr) as usize;
            if ctx.copy_from_user(addr, &mut buf[..n]).is_err() {
                if done == 0 {
                    return Err(Errno::EFAULT);
                }
                break 'segments;
            }
            pipe.push(&buf[..n])?;
            done += n;
            addr += n as u64;
            slots -= 1;
        }
    }
    Ok(done)
}

/// A pipe into user memory: waits for data (SPLICE_F_NONBLOCK only),
/// then copies what there is, up to the iovecs' total.
fn vmsplice_to_user(ctx: &SyscallContext, pipe: &Pipe, iovs: &[Iovec], nonblock: bool) -> Result<usize, Errno> {
    if !pipe.wait_for_data(nonblock)? {
        return Ok(0);
    }
    let mut buf = staging(CHUNK)?;
    let mut done = 0;
    for iov in iovs {
        let mut off = 0u64;
        while off < iov.iov_len {
            let want = ((iov.iov_len - off) as usize).min(CHUNK);
            let n = pipe.take(&mut buf[..want]);
            if n == 0 {
                return Ok(done);
            }
            if ctx.copy_to_user(iov.iov_base + off, &buf[..n]).is_err() {
                pipe.unread(&buf[..n]);
                return if done > 0 { Ok(done) } else { Err(Errno::EFAULT) };
            }
            done += n;
            off += n as u64;
        }
    }
    Ok(done)
}

pub fn sys_vmsplice(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, iov_ptr, nr_segs, flags) = (a[0] as i32, a[1], a[2], a[3] as u32);
    if flags & !x::SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(ctx, fd)?;
    // A descriptor open for writing gives the pipe data; one open only
    // for reading takes it.
    let to_pipe = if f.writable() {
        true
    } else if f.readable() {
        false
    } else {
        return Err(Errno::EBADF);
    };
    let iovs = read_iovecs(ctx, iov_ptr, nr_segs)?;
    if iovs.iter().all(|v| v.iov_len == 0) {
        return Ok(0);
    }
    let pipe = pipe_of(&f).ok_or(Errno::EBADF)?;
    let nonblock = flags & x::SPLICE_F_NONBLOCK != 0;
    let n = if to_pipe {
        vmsplice_to_pipe(ctx, pipe, &iovs, nonblock)?
    } else {
        vmsplice_to_user(ctx, pipe, &iovs, nonblock)?
    };
    if n > 0 {
        if to_pipe {
            crate::fs::notify::modified(&f);
        } else {
            crate::fs::notify::accessed(&f);
        }
    }
    Ok(n as u64)
}

pub fn sys_copy_file_range(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd_in, off_in, fd_out, off_out, len, flags) =
        (a[0] as i32, a[1], a[2] as i32, a[3], a[4] as usize, a[5] as u32);
    let input = file(ctx, fd_in)?;
    let out = file(ctx, fd_out)?;
    let mut pos_in = match read_offset(ctx, off_in)? {
        Some(p) => p,
        None => file_pos(&input),
    };
    let mut pos_out = match read_offset(ctx, off_out)? {
        Some(p) => p,
        None => file_pos(&out),
    };
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    // generic_file_rw_checks, on the inodes behind the descriptors (a
    // /proc file's is its dentry's).
    let inode_of = |f: &Arc<OpenFile>| f.ops.inode().or(f.dentry.as_ref().map(|d| d.inode())).cloned();
    let (Some(inode_in), Some(inode_out)) = (inode_of(&input), inode_of(&out)) else {
        return Err(if input.is_dir() || out.is_dir() { Errno::EISDIR } else { Errno::EINVAL });
    };
    let (kind_in, kind_out) = (inode_in.file_type(), inode_out.file_type());
    if kind_in == FileType::Directory || kind_out == FileType::Directory {
        return Err(Errno::EISDIR);
    }
    if kind_in != FileType::Regular || kind_out != FileType::Regular {
        return Err(Errno::EINVAL);
    }
    if !input.readable() || !out.writable() || out.flags() & c::O_APPEND != 0 {
        return Err(Errno::EBADF);
    }
    // Linux 6.1 copies only within one file system (one superblock: the
    // device number tells).
    let (meta_in, meta_out) = (inode_in.metadata(), inode_out.metadata());
    if meta_in.dev != meta_out.dev {
        return Err(Errno::EXDEV);
    }
    let mut count = len as u64;
    if pos_in.checked_add(count).is_none() || pos_out.checked_add(count).is_none() {
        return Err(Errno::EOVERFLOW);
    }
    // Offsets are signed here, as Linux's loff_t: a negative one passes
    // these steps and fails `verify_area` below.
    let (sin, sout) = (pos_in as i64, pos_out as i64);
    // Shortened to the end of the input.
    count = if sin >= meta_in.size as i64 { 0 } else { count.min((meta_in.size as i64 - sin) as u64) };
    if sout >= 0 {
        count = fsize_limit(ctx, &out, pos_out, count as usize)? as u64;
    }
    let same = Arc::ptr_eq(&inode_in, &inode_out) || (meta_in.ino == meta_out.ino && meta_in.dev == meta_out.dev);
    let (lo_in, lo_out, n) = (i128::from(sin), i128::from(sout), i128::from(count));
    if same && lo_out + n > lo_in && lo_out < lo_in + n {
        return Err(Errno::EINVAL);
    }
    verify_area(pos_in, count as usize)?;
    verify_area(pos_out, count as usize)?;
    if count == 0 {
        return Ok(0);
    }
    let n = direct(ctx, &input, &mut pos_in, &out, &mut pos_out, (count as usize).min(MAX_RW))?;
    transferred(&input, &out, n);
    if n > 0 {
        match off_in {
            0 => set_file_pos(&input, pos_in),
            p => uaccess::write_u64(&ctx.vm()?, p, pos_in)?,
        }
        match off_out {
            0 => set_file_pos(&out, pos_out),
            p => uaccess::write_u64(&ctx.vm()?, p, pos_out)?,
        }
    }
    Ok(n as u64)
}

/// sendfile's work (`do_sendfile`), `given` the offset read from user
/// memory: the input must be readable (EBADF) and, with an offset,
/// positional (ESPIPE); into a pipe the data is spliced, into anything
/// else copied (EINVAL for an O_APPEND output or an input that cannot be
/// spliced: pipes, directories).
fn do_sendfile(ctx: &SyscallContext, out_fd: i32, in_fd: i32, given: Option<&mut u64>, count: usize) -> SysResult {
    let input = file(ctx, in_fd)?;
    if !input.readable() {
        return Err(Errno::EBADF);
    }
    if given.is_some() && !positional(&input) {
        return Err(Errno::ESPIPE);
    }
    let mut pos = match &given {
        Some(p) => **p,
        None => file_pos(&input),
    };
    verify_area(pos, count)?;
    let count = count.min(MAX_RW);
    let out = file(ctx, out_fd)?;
    if !out.writable() {
        return Err(Errno::EBADF);
    }
    let n = match pipe_of(&out) {
        Some(op) => file_to_pipe(ctx, &input, &mut pos, op, count, out.nonblocking())?,
        None => {
            let mut out_pos = file_pos(&out);
            verify_area(out_pos, count)?;
            if out.flags() & c::O_APPEND != 0 || !splice_readable(&input) {
                return Err(Errno::EINVAL);
            }
            let n = direct(ctx, &input, &mut pos, &out, &mut out_pos, count)?;
            if n > 0 {
                set_file_pos(&out, out_pos);
            }
            n
        }
    };
    transferred(&input, &out, n);
    if n > 0 {
        match given {
            Some(p) => *p = pos,
            None => set_file_pos(&input, pos),
        }
    }
    Ok(n as u64)
}

pub fn sys_sendfile(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (out_fd, in_fd, off_ptr, count) = (a[0] as i32, a[1] as i32, a[2], a[3] as usize);
    let Some(mut pos) = read_offset(ctx, off_ptr)? else {
        return do_sendfile(ctx, out_fd, in_fd, None, count);
    };
    let r = do_sendfile(ctx, out_fd, in_fd, Some(&mut pos), count);
    // The offset is written back whatever the outcome, as Linux does.
    uaccess::write_u64(&ctx.vm()?, off_ptr, pos)?;
    r
}
