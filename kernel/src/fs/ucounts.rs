//! Per-user counts of the objects Linux limits per user rather than per
//! process (its ucounts and `user_struct` counters): inotify instances
//! and watches, epoll watches. Each object holds a [`UserCharge`], which
//! gives its one back when it goes, so a count is exactly what the user
//! has alive. The limits themselves belong to the subsystems
//! (`/proc/sys/fs/inotify/*`, `/proc/sys/fs/epoll/max_user_watches`) and
//! bind root too: Linux has no capability that bypasses them.

use alloc::vec::Vec;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// inotify instances, by the effective uid of their creator.
    InotifyInstances = 0,
    /// inotify watches, charged to the instance's user.
    InotifyWatches = 1,
    /// epoll entries, by the real uid of the epoll's creator (Linux's
    /// `user_struct`).
    EpollWatches = 2,
}

const KINDS: usize = 3;

/// Users with anything counted, each with its counts; a user whose
/// counts all drop to zero leaves the table.
static COUNTS: SpinLock<Vec<(u32, [u64; KINDS])>> = SpinLock::new(Vec::new());

/// One object's share of its user's count, given back on drop.
#[derive(Debug)]
pub struct UserCharge {
    uid: u32,
    what: Counted,
}

impl UserCharge {
    /// Counts one more `what` for `uid` unless it already has `limit`:
    /// then `over` (EMFILE for instances, ENOSPC for watches, as Linux).
    pub fn take(uid: u32, what: Counted, limit: u64, over: Errno) -> Result<UserCharge, Errno> {
        let mut counts = COUNTS.lock();
        let at = match counts.iter().position(|(u, _)| *u == uid) {
            Some(i) => i,
            None => {
                counts.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                counts.push((uid, [0; KINDS]));
                counts.len() - 1
            }
        };
        let count = &mut counts[at].1[what as usize];
        if *count >= limit {
            if counts[at].1.iter().all(|&c| c == 0) {
                counts.swap_remove(at);
            }
            return Err(over);
        }
        *count += 1;
        Ok(UserCharge { uid, what })
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }
}

impl Drop for UserCharge {
    fn drop(&mut self) {
        let mut counts = COUNTS.lock();
        if let Some(i) = counts.iter().position(|(u, _)| *u == self.uid) {
            let c = &mut counts[i].1[self.what as usize];
            *c = c.saturating_sub(1);
            if counts[i].1.iter().all(|&c| c == 0) {
                counts.swap_remove(i);
            }
        }
    }
}

/// How many `what` `uid` has now.
#[cfg(feature = "ktest")]
pub fn count(uid: u32, what: Counted) -> u64 {
    COUNTS.lock().iter().find(|(u, _)| *u == uid).map_or(0, |(_, c)| c[what as usize])
}
