//! Process file descriptors: `pidfd_open(2)`'s flags and the
//! `waitid(2)` id type that names a child by one.

/// `pidfd_open(pid, PIDFD_NONBLOCK)`: the descriptor is O_NONBLOCK, so
/// waitid through it fails with EAGAIN instead of blocking.
pub const PIDFD_NONBLOCK: u32 = crate::consts::O_NONBLOCK;
/// `waitid(P_PIDFD, fd, ...)`.
pub const P_PIDFD: u32 = 3;
/// `pidfd_send_signal` scopes (Linux 6.9): the pidfd's thread only, its
/// thread group (the default for a process pidfd), or the process group
/// whose id is the pidfd's process id. At most one may be given.
pub const PIDFD_SIGNAL_THREAD: u32 = 1 << 0;
pub const PIDFD_SIGNAL_THREAD_GROUP: u32 = 1 << 1;
pub const PIDFD_SIGNAL_PROCESS_GROUP: u32 = 1 << 2;
