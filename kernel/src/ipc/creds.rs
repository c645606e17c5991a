//! The credentials IPC objects and file locks are checked against, in
//! one place: the calling task's credentials (`crate::cred`).

use alloc::sync::Arc;

use crate::proc::Task;

/// Capabilities the IPC and lock code asks about (Linux's numbers).
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_IPC_OWNER: u32 = 15;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_RESOURCE: u32 = 24;
pub const CAP_LEASE: u32 = 28;

pub fn euid(task: &Arc<Task>) -> u32 {
    task.cred().euid
}

pub fn egid(task: &Arc<Task>) -> u32 {
    task.cred().egid
}

/// The uid file access is checked with.
pub fn fsuid(task: &Arc<Task>) -> u32 {
    task.cred().fsuid
}

/// Whether `gid` is the task's effective group or a supplementary one.
pub fn in_group(task: &Arc<Task>, gid: u32) -> bool {
    task.cred().in_group(gid)
}

pub fn capable(task: &Arc<Task>, cap: u32) -> bool {
    task.cred().capable(cap)
}
