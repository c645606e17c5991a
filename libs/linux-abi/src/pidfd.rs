//! Process file descriptors: `pidfd_open(2)`'s flags and the
//! `waitid(2)` id type that names a child by one.

/// `pidfd_open(pid, PIDFD_NONBLOCK)`: the descriptor is O_NONBLOCK, so
/// waitid through it fails with EAGAIN instead of blocking.
pub const PIDFD_NONBLOCK: u32 = crate::consts::O_NONBLOCK;
/// `waitid(P_PIDFD, fd, ...)`.
pub const P_PIDFD: u32 = 3;
