//! process_vm_readv(2) and process_vm_writev(2): copies between the
//! caller's memory and another process's, as that process's own loads
//! and stores would make them (page faults resolved, copy-on-write
//! broken, protections honoured), for a caller that may ptrace it
//! (PTRACE_MODE_ATTACH_REALCREDS).
//!
//! Linux's order of checks: flags (EINVAL), the local vectors (EINVAL past
//! UIO_MAXIOV or for a length that is negative as ssize_t, EFAULT where
//! they cannot be read or a buffer lies outside user space; the total is
//! capped at MAX_RW_COUNT), nothing to copy (0), the remote vectors (no
//! range check: they are the other process's addresses), then the
//! target (ESRCH for no such thread or one without memory, EPERM). The
//! copy goes page by page and stops at the first remote page that cannot
//! be had or local byte that cannot be copied: the bytes moved so far are
//! the result, EFAULT if there were none.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;
use linux_abi::layout::Iovec;

use super::{SysResult, SyscallContext};
use crate::cred::PtraceMode;
use crate::mm::{page_floor, uaccess, PAGE_SIZE};
use crate::proc::ptrace;

/// Linux's MAX_RW_COUNT.
const MAX_RW: u64 = 0x7fff_f000;

pub fn sys_process_vm_readv(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    process_vm(ctx, a, false)
}

pub fn sys_process_vm_writev(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    process_vm(ctx, a, true)
}

/// Reads `count` iovecs one by one, as Linux's copy_iovec_from_user
/// does (a negative length stops the walk with EINVAL before a later
/// entry can fault).
fn read_iovecs(ctx: &SyscallContext, ptr: u64, count: u64) -> Result<Vec<Iovec>, Errno> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > Iovec::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    if !uaccess::access_ok(ptr, count as usize * Iovec::SIZE) {
        return Err(Errno::EFAULT);
    }
    let mut out = Vec::new();
    out.try_reserve_exact(count as usize).map_err(|_| Errno::ENOMEM)?;
    for i in 0..count {
        let mut b = [0u8; Iovec::SIZE];
        ctx.copy_from_user(ptr + i * Iovec::SIZE as u64, &mut b)?;
        let iov = Iovec::from_bytes(&b);
        if (iov.iov_len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        out.push(iov);
    }
    Ok(out)
}

/// The caller's side of the copy: its vectors in order, and how far in.
struct Local {
    iovs: Vec<Iovec>,
    index: usize,
    offset: u64,
}

impl Local {
    /// The next stretch of the caller's buffer: (address, length), at
    /// most `max` bytes; None when the vectors are used up.
    fn next(&mut self, max: u64) -> Option<(u64, u64)> {
        while let Some(iov) = self.iovs.get(self.index) {
            if self.offset < iov.iov_len {
                return Some((iov.iov_base + self.offset, (iov.iov_len - self.offset).min(max)));
            }
            self.index += 1;
            self.offset = 0;
        }
        None
    }

    fn advance(&mut self, n: u64) {
        self.offset += n;
    }

    fn exhausted(&mut self) -> bool {
        self.next(1).is_none()
    }
}

fn process_vm(ctx: &mut SyscallContext, a: &[u64; 6], write: bool) -> SysResult {
    let (pid, lvec, liovcnt, rvec, riovcnt, flags) = (a[0] as i32, a[1], a[2], a[3], a[4], a[5]);
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let mut local = read_iovecs(ctx, lvec, liovcnt)?;
    let mut total = 0u64;
    for iov in local.iter_mut() {
        if !uaccess::access_ok(iov.iov_base, iov.iov_len as usize) {
            return Err(Errno::EFAULT);
        }
        iov.iov_len = iov.iov_len.min(MAX_RW - total);
        total += iov.iov_len;
    }
    if total == 0 {
        return Ok(0);
    }
    let remote = read_iovecs(ctx, rvec, riovcnt)?;
    if remote.iter().all(|r| r.iov_len == 0) {
        return Ok(0);
    }
    let task = if pid > 0 { crate::proc::find_task_seen_by(ctx.process(), pid) } else { None }.ok_or(Errno::ESRCH)?;
    let target = task.process.vm().map_err(|_| Errno::ESRCH)?;
    let own = ctx.vm()?;
    if !Arc::ptr_eq(&target, &own) {
        // Linux asks about the named thread's credentials.
        ptrace::may_access(ctx.task, &task.process, &task.cred(), PtraceMode::ATTACH_REALCREDS)?;
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(PAGE_SIZE as usize).map_err(|_| Errno::ENOMEM)?;
    buf.resize(PAGE_SIZE as usize, 0u8);
    let mut local = Local { iovs: local, index: 0, offset: 0 };
    let mut moved = 0u64;
    let mut failed = false;
    'vectors: for r in remote.iter() {
        let mut addr = r.iov_base;
        let mut left = r.iov_len;
        while left > 0 {
            if local.exhausted() {
                break 'vectors;
            }
            let page = page_floor(addr);
            let in_page = (PAGE_SIZE - (addr - page)).min(left);
            // The other process's page, its lock dropped before our own
            // memory is touched (it may be the same address space).
            let frame = target.lock().frame_for_access(addr, write);
            let Some(frame) = frame else {
                failed = true;
                break 'vectors;
            };
            let mut done = 0u64;
            while done < in_page {
                let Some((laddr, n)) = local.next(in_page - done) else { break };
                let off = (addr - page + done) as usize;
                let chunk = &mut buf[..n as usize];
                let copied = if write {
                    let got = uaccess::read_prefix_with(|| Ok(own.clone()), laddr, chunk);
                    frame.write(off, &chunk[..got]);
                    got
                } else {
                    frame.read(off, chunk);
                    uaccess::write_prefix_with(|| Ok(own.clone()), laddr, chunk)
                };
                local.advance(copied as u64);
                done += copied as u64;
                moved += copied as u64;
                if copied < n as usize {
                    failed = true;
                    break 'vectors;
                }
            }
            if done < in_page {
                break 'vectors;
            }
            left -= in_page;
            match addr.checked_add(in_page) {
                Some(next) => addr = next,
                None if left == 0 => {}
                None => {
                    failed = true;
                    break 'vectors;
                }
            }
        }
    }
    if moved == 0 && failed {
        return Err(Errno::EFAULT);
    }
    Ok(moved)
}
