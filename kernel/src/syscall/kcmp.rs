//! kcmp(2): whether two processes share a kernel resource (an open file
//! description, address space, descriptor table, signal handlers, ...).
//!
//! Like Linux the answer orders the two objects (0 equal, 1 less, 2
//! greater) by an address that means nothing outside the kernel; only
//! equality is meaningful to a program.

use alloc::sync::Arc;
use linux_abi::errno::Errno;

use super::{SysResult, SyscallContext};
use crate::cred::PtraceMode;
use crate::proc::{self, ptrace, Task};

const KCMP_FILE: u32 = 0;
const KCMP_VM: u32 = 1;
const KCMP_FILES: u32 = 2;
const KCMP_FS: u32 = 3;
const KCMP_SIGHAND: u32 = 4;
const KCMP_IO: u32 = 5;
const KCMP_SYSVSEM: u32 = 6;
const KCMP_EPOLL_TFD: u32 = 7;

/// The thread the caller calls `pid`.
fn task(ctx: &SyscallContext, pid: i32) -> Result<Arc<Task>, Errno> {
    proc::find_task_seen_by(ctx.process(), pid).ok_or(Errno::ESRCH)
}

fn order(a: usize, b: usize) -> u64 {
    match a.cmp(&b) {
        core::cmp::Ordering::Equal => 0,
        core::cmp::Ordering::Less => 1,
        core::cmp::Ordering::Greater => 2,
    }
}

fn file_key(t: &Task, fd: u64) -> Result<usize, Errno> {
    let fd = i32::try_from(fd).map_err(|_| Errno::EBADF)?;
    let file = t.process.files().lock().get(fd)?;
    Ok(Arc::as_ptr(&file) as *const () as usize)
}

pub fn sys_kcmp(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid1, pid2, kind, idx1, idx2) = (a[0] as i32, a[1] as i32, a[2] as u32, a[3], a[4]);
    let (t1, t2) = (task(ctx, pid1)?, task(ctx, pid2)?);
    // PTRACE_MODE_READ_REALCREDS on both, each thread's own credentials.
    let may_read = |t: &Arc<Task>| ptrace::may_access(ctx.task, &t.process, &t.cred(), PtraceMode::READ_REALCREDS);
    may_read(&t1)?;
    may_read(&t2)?;
    let (k1, k2) = match kind {
        KCMP_FILE => (file_key(&t1, idx1)?, file_key(&t2, idx2)?),
        KCMP_VM => {
            let key = |t: &Task| t.process.vm().map_or(0, |v| Arc::as_ptr(&v) as *const () as usize);
            (key(&t1), key(&t2))
        }
        KCMP_FILES => {
            let key = |t: &Task| t.process.files() as *const _ as *const () as usize;
            (key(&t1), key(&t2))
        }
        KCMP_SIGHAND => {
            let key = |t: &Task| Arc::as_ptr(&t.process.signals.actions.lock().clone()) as *const () as usize;
            (key(&t1), key(&t2))
        }
        // Kiln keeps the working directory per process (no CLONE_FS
        // sharing): two processes share it only by being one.
        KCMP_FS => {
            let key = |t: &Task| Arc::as_ptr(&t.process) as *const () as usize;
            (key(&t1), key(&t2))
        }
        // No I/O contexts and no SysV semaphore undo lists exist, so both
        // are "none" for everyone, as for Linux processes that never made
        // one: equal.
        KCMP_IO | KCMP_SYSVSEM => (0, 0),
        // Linux's checks in order: the file, the slot {efd, tfd, toff},
        // the epoll descriptor; Kiln has no epoll files yet, so the last
        // step finds none and answers as Linux does for a non-epoll file.
        KCMP_EPOLL_TFD => {
            file_key(&t1, idx1)?;
            let mut slot = [0u8; 12];
            ctx.copy_from_user(idx2, &mut slot)?;
            let efd = u32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]);
            file_key(&t2, u64::from(efd))?;
            return Err(Errno::EINVAL);
        }
        _ => return Err(Errno::EINVAL),
    };
    Ok(order(k1, k2))
}
