//! The credentials IPC objects and file locks are checked against, in
//! one place. Kiln runs everything as root today (uid and gid 0, every
//! capability); when real credentials land, these functions are the only
//! ones to point at them.

use alloc::sync::Arc;

use crate::proc::Task;

/// Capabilities the IPC and lock code asks about (Linux's numbers).
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_IPC_OWNER: u32 = 15;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_RESOURCE: u32 = 24;
pub const CAP_LEASE: u32 = 28;

pub fn euid(_task: &Arc<Task>) -> u32 {
    0
}

pub fn egid(_task: &Arc<Task>) -> u32 {
    0
}

/// The uid file access is checked with.
pub fn fsuid(task: &Arc<Task>) -> u32 {
    euid(task)
}

/// Whether `gid` is the task's effective group or a supplementary one.
pub fn in_group(task: &Arc<Task>, gid: u32) -> bool {
    egid(task) == gid
}

pub fn capable(_task: &Arc<Task>, _cap: u32) -> bool {
    true
}
