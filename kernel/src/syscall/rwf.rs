//! preadv2 and pwritev2: vector reads and writes at an offset, or at the
//! file position when the offset is -1, with per-call RWF_* flags.
//! RWF_HIPRI changes nothing; RWF_DSYNC and RWF_SYNC make the written
//! data (and with RWF_SYNC the metadata) durable before the call returns,
//! as O_DSYNC and O_SYNC do for every write; RWF_APPEND writes at the end of the file; RWF_NOWAIT makes the call
//! fail with EAGAIN instead of waiting, on the files Linux allows it on
//! (pipes and the memory devices; tmpfs and /proc files answer
//! EOPNOTSUPP, as Linux 6.18's do). Flags Linux 6.1 does not know are
//! EOPNOTSUPP; like Linux, the flags are only looked at when there is
//! something to transfer.

use linux_abi::errno::Errno;
use linux_abi::fs as x;

use super::fs_io::{file, fsize_limit, read_into_user, read_iovecs, sync_written, write_from_user};
use super::{SysResult, SyscallContext};
use crate::fs::OpenFile;

/// Files that can be asked not to wait (FMODE_NOWAIT).
fn can_nowait(f: &OpenFile) -> bool {
    f.ops.as_pipe().is_some() || f.io.sink.is_some()
}

/// A pipe read or write that must not wait: one attempt per iovec.
fn nowait_io(ctx: &SyscallContext, f: &OpenFile, iovs: &[linux_abi::layout::Iovec], write: bool) -> SysResult {
    let mut buf = alloc::vec::Vec::new();
    let mut total = 0u64;
    for iov in iovs {
        let len = (iov.iov_len as usize).min(64 * 1024);
        if len == 0 {
            continue;
        }
        buf.try_reserve(len.saturating_sub(buf.len())).map_err(|_| Errno::ENOMEM)?;
        buf.resize(len, 0);
        let r = if write {
            ctx.copy_from_user(iov.iov_base, &mut buf[..len]).and_then(|()| f.ops.write_at(0, &buf[..len], true))
        } else {
            f.ops.read_at(0, &mut buf[..len], true).and_then(|n| ctx.copy_to_user(iov.iov_base, &buf[..n]).map(|()| n))
        };
        let n = match r {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if n < len {
            break;
        }
    }
    Ok(total)
}

fn rw2(ctx: &SyscallContext, a: &[u64; 6], write: bool) -> SysResult {
    let (fd, iov_ptr, count, pos, flags) = (a[0] as i32, a[1], a[2], a[3] as i64, a[5] as u32);
    // On x86_64 the offset is the low word alone (pos_from_hilo).
    let at_position = pos == -1;
    if !at_position && pos < 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(ctx, fd)?;
    if !at_position && !f.io.seekable && f.ops.fixed_seek().is_none() {
        return Err(Errno::ESPIPE);
    }
    if (write && !f.writable()) || (!write && !f.readable()) {
        return Err(Errno::EBADF);
    }
    let iovs = read_iovecs(ctx, iov_ptr, count)?;
    let total: u64 = iovs.iter().map(|v| v.iov_len).sum();
    if total == 0 {
        return Ok(0);
    }
    if !at_position && pos.checked_add(total as i64).is_none() {
        return Err(Errno::EINVAL);
    }
    if flags & !x::RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    super::direct_io::check_vector(&f, &iovs, (!at_position).then_some(pos as u64), write)?;
    // Directories have no iterating read method: only RWF_HIPRI passes.
    if f.is_dir() && flags & !x::RWF_HIPRI != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & x::RWF_NOWAIT != 0 {
        if !can_nowait(&f) {
            return Err(Errno::EOPNOTSUPP);
        }
        if f.ops.as_pipe().is_some() {
            let n = nowait_io(ctx, &f, &iovs, write)?;
            if n > 0 {
                if write {
                    crate::fs::notify::modified(&f);
                } else {
                    crate::fs::notify::accessed(&f);
                }
            }
            return Ok(n);
        }
    }
    let append = write && flags & x::RWF_APPEND != 0;
    let size = || f.ops.inode().map(|i| i.metadata().size);
    // RLIMIT_FSIZE counts the whole vector once (as fs_io's vector_io):
    // reaching the limit part way is a short write, not a signal.
    let mut budget = u64::MAX;
    if write {
        let start = if append || f.flags() & linux_abi::consts::O_APPEND != 0 {
            size().unwrap_or(0)
        } else if at_position {
            if f.io.seekable {
                *f.offset.lock()
            } else {
                0
            }
        } else {
            pos as u64
        };
        budget = fsize_limit(ctx, f.ops.inode(), start, total.min(usize::MAX as u64) as usize)? as u64;
    }
    let mut done = 0u64;
    for iov in &iovs {
        let len = iov.iov_len.min(budget - done);
        if len == 0 {
            break;
        }
        let at = match (append, at_position) {
            (true, _) => size().or((!at_position).then_some(pos as u64 + done)),
            (false, true) => None,
            (false, false) => Some(pos as u64 + done),
        };
        let r = if write {
            write_from_user(ctx, &f, iov.iov_base, len as usize, at)
        } else {
            read_into_user(ctx, &f, iov.iov_base, len as usize, at)
        };
        let n = match r {
            Ok(n) => n,
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        done += n;
        if n < iov.iov_len {
            break;
        }
    }
    // Appending at the file position leaves the position at the end.
    if append && at_position && f.io.seekable && done > 0 {
        if let Some(end) = size() {
            *f.offset.lock() = end;
        }
    }
    // Per call, as Linux's IOCB_DSYNC/IOCB_SYNC: its error is the call's.
    if write && done > 0 && flags & (x::RWF_DSYNC | x::RWF_SYNC) != 0 {
        sync_written(&f, flags & x::RWF_SYNC == 0)?;
    }
    Ok(done)
}

pub fn sys_preadv2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    rw2(ctx, a, false)
}

pub fn sys_pwritev2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    rw2(ctx, a, true)
}
