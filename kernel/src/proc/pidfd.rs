//! Process file descriptors (pidfds): a file that names one process for
//! as long as it is open, so signals and waits through it can never
//! reach a later process that reused the id.
//!
//! A pidfd holds the process (Linux holds its `struct pid`). The process
//! stays "alive" for a pidfd until it is reaped: a zombie can still be
//! signalled (nothing happens) and waited for; once reaped, calls through
//! the pidfd fail with ESRCH (ECHILD for waitid) and /proc's fdinfo says
//! `Pid: -1`. The file is readable to poll, select and epoll once the
//! whole thread group has exited, through the process's `pidfd_wait`
//! head, which the exit path notifies.

use alloc::sync::Arc;
use core::any::Any;
use core::fmt::Write;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::{Pid, Process};
use crate::event::{Events, PollTable};
use crate::fs::file::FileOps;
use crate::fs::OpenFile;

/// The file behind a pidfd.
pub struct PidFd {
    process: Arc<Process>,
}

impl PidFd {
    /// The process, if it has not been reaped yet (zombies included).
    pub fn process(&self) -> Option<&Arc<Process>> {
        let live = super::find_process(self.process.pid).is_some_and(|p| Arc::ptr_eq(&p, &self.process));
        live.then_some(&self.process)
    }

    /// The id the process had (and keeps until it is reaped).
    pub fn pid(&self) -> Pid {
        self.process.pid
    }

    /// Whether every thread of the process has exited (Linux's
    /// `thread_group_exited`): a zombie, or reaped.
    fn exited(&self) -> bool {
        self.process().is_none_or(|p| p.state.lock().zombie)
    }
}

impl FileOps for PidFd {
    fn read_at(&self, _offset: u64, _buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.process.pidfd_wait);
        }
        if self.exited() {
            Events::READABLE
        } else {
            Events::EMPTY
        }
    }

    /// An anonymous inode's mode, as Linux 6.1 shows it: no file type.
    fn mode(&self) -> u32 {
        0o600
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[pidfd]")
    }

    fn fdinfo(&self, out: &mut dyn Write) -> core::fmt::Result {
        // As the reader's pid namespace sees it (0: outside it); -1 once
        // reaped.
        let pid = match self.process() {
            Some(_) => super::current_task().map_or(self.pid(), |t| t.process.pid_ns.local_or_zero(self.pid())),
            None => -1,
        };
        write!(out, "Pid:\t{pid}\nNSpid:\t{pid}\n")
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

/// A new open pidfd for `process` (always O_RDWR, as Linux opens them;
/// the caller installs it close-on-exec).
pub fn open(process: &Arc<Process>, nonblock: bool) -> Result<Arc<OpenFile>, Errno> {
    let ops: Arc<dyn FileOps> = Arc::try_new(PidFd { process: process.clone() }).map_err(|_| Errno::ENOMEM)?;
    let flags = c::O_RDWR | if nonblock { c::O_NONBLOCK } else { 0 };
    Arc::try_new(OpenFile::new(ops, flags)).map_err(|_| Errno::ENOMEM)
}

/// The pidfd behind an open file, or EBADF for any other file.
pub fn of_file(file: &OpenFile) -> Result<&PidFd, Errno> {
    file.ops.as_any().and_then(|a| a.downcast_ref::<PidFd>()).ok_or(Errno::EBADF)
}

/// Tells pidfd pollers that `p`'s last thread has exited.
pub fn notify_exit(p: &Process) {
    p.pidfd_wait.notify(Events::READABLE);
}
