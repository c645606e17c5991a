//! The kernel's own component interface, which Linux processes reach by
//! invoking the reserved capability `CONTROL_CAP` (all ones: no list is
//! that long) with `NR_INVOKE`: how the command-line tool (`kcomp`)
//! merges, splits and injects faults. No Linux number is used, and the
//! Linux ABI is untouched; `/proc/kiln/components` is the read side.
//!
//! | op | arguments | does | returns |
//! |---|---|---|---|
//! | 0 `COUNT` | | | how many components |
//! | 1 `MERGE` | a, b | `merge(a, b)` | 0 |
//! | 2 `SPLIT` | a | `split(a)` | 0 |
//! | 3 `FAULT` | a | a real fault inside `a` | `a`'s fault count |
//! | 4 `DOMAIN` | a | | the domain `a` is in |
//!
//! Components are named by index (the first column of the /proc file).
//! Changing domains needs CAP_SYS_ADMIN (EPERM); reading does not.

use linux_abi::capability::CAP_SYS_ADMIN;
use linux_abi::errno::Errno;

use super::{components, domain, fault};

pub const CONTROL_CAP: u64 = u64::MAX;

pub const OP_COUNT: u64 = 0;
pub const OP_MERGE: u64 = 1;
pub const OP_SPLIT: u64 = 2;
pub const OP_FAULT: u64 = 3;
pub const OP_DOMAIN: u64 = 4;

/// One control operation from a Linux process.
pub(super) fn call(op: u64, args: [u64; 4]) -> Result<u64, Errno> {
    let index = |w: u64| usize::try_from(w).ok().filter(|&i| i < components().len()).ok_or(Errno::EINVAL);
    match op {
        OP_COUNT => Ok(components().len() as u64),
        OP_DOMAIN => Ok(domain::domain_of(index(args[0])?) as u64),
        OP_MERGE | OP_SPLIT | OP_FAULT => {
            let admin = crate::proc::current_task().is_some_and(|t| t.cred().capable(CAP_SYS_ADMIN));
            if !admin {
                return Err(Errno::EPERM);
            }
            match op {
                OP_MERGE => domain::merge(index(args[0])?, index(args[1])?).map(|()| 0),
                OP_SPLIT => domain::split(index(args[0])?).map(|()| 0),
                _ => fault::inject(index(args[0])?),
            }
        }
        _ => Err(Errno::ENOSYS),
    }
}
