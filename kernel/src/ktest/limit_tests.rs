//! The per-user limits of the event files (`fs::ucounts`): epoll entries
//! against max_user_watches (ENOSPC), inotify instances against
//! max_user_instances (EMFILE) and watches against max_user_watches
//! (ENOSPC), each counted per user and given back when the object goes.
//! The user tests cannot lower these limits (the host's /proc/sys is not
//! theirs to write), so they are checked here with small ones.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::EpollEvent;

use super::{KTest, TestResult};
use crate::ensure;
use crate::fs::epoll::{self, Epoll};
use crate::fs::eventfd::EventFd;
use crate::fs::file::FileOps;
use crate::fs::inode::Inode;
use crate::fs::inotify::{self, Inotify};
use crate::fs::ucounts::{count, Counted, UserCharge};
use crate::fs::OpenFile;

pub const TESTS: &[KTest] = &[
    KTest { name: "limits::user_counts_stop_at_the_limit", run: user_counts_stop_at_the_limit },
    KTest { name: "limits::epoll_entries_within_max_user_watches", run: epoll_entries_within_max_user_watches },
    KTest { name: "limits::inotify_instances_within_max_user_instances", run: inotify_instances_within_limit },
    KTest { name: "limits::inotify_watches_within_max_user_watches", run: inotify_watches_within_limit },
];

fn err(e: Errno) -> alloc::string::String {
    alloc::string::ToString::to_string(e.name())
}

/// Runs `f` with `knob` set to `value`, then puts the old value back.
fn with_limit(knob: &AtomicU64, value: u64, f: impl FnOnce() -> TestResult) -> TestResult {
    let old = knob.swap(value, Ordering::SeqCst);
    let result = f();
    knob.store(old, Ordering::SeqCst);
    result
}

fn user_counts_stop_at_the_limit() -> TestResult {
    let (a, b) = (90_001, 90_002);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(UserCharge::take(a, Counted::InotifyWatches, 3, Errno::ENOSPC).map_err(err)?);
    }
    ensure!(count(a, Counted::InotifyWatches) == 3);
    let over = UserCharge::take(a, Counted::InotifyWatches, 3, Errno::ENOSPC);
    ensure!(matches!(over, Err(Errno::ENOSPC)), "a fourth charge under a limit of 3: {over:?}");
    // Another user, and another kind for the same user, count apart.
    let other = UserCharge::take(b, Counted::InotifyWatches, 3, Errno::ENOSPC).map_err(err)?;
    let kind = UserCharge::take(a, Counted::EpollWatches, 1, Errno::ENOSPC).map_err(err)?;
    held.pop();
    ensure!(count(a, Counted::InotifyWatches) == 2, "a dropped charge is given back");
    held.push(UserCharge::take(a, Counted::InotifyWatches, 3, Errno::ENOSPC).map_err(err)?);
    drop((held, other, kind));
    ensure!(count(a, Counted::InotifyWatches) == 0 && count(b, Counted::InotifyWatches) == 0);
    ensure!(count(a, Counted::EpollWatches) == 0);
    Ok(())
}

fn eventfd_file() -> Result<Arc<OpenFile>, alloc::string::String> {
    let ops: Arc<dyn FileOps> = EventFd::new(0, false).map_err(err)?;
    Arc::try_new(OpenFile::new(ops, c::O_RDWR)).map_err(|_| "no memory".into())
}

fn epoll_entries_within_max_user_watches() -> TestResult {
    let uid = 90_003;
    with_limit(&epoll::MAX_USER_WATCHES, 2, || {
        let ep = Epoll::new(uid).map_err(err)?;
        let files: Vec<Arc<OpenFile>> = (0..3).map(|_| eventfd_file()).collect::<Result<_, _>>()?;
        let event = EpollEvent { events: c::EPOLLIN | c::EPOLLERR | c::EPOLLHUP, data: 0 };
        ep.add(&files[0], 3, event).map_err(err)?;
        ep.add(&files[1], 4, event).map_err(err)?;
        let third = ep.add(&files[2], 5, event);
        ensure!(matches!(third, Err(Errno::ENOSPC)), "a third entry under a limit of 2: {third:?}");
        // A second epoll of the same user shares the count.
        let other = Epoll::new(uid).map_err(err)?;
        ensure!(matches!(other.add(&files[2], 5, event), Err(Errno::ENOSPC)));
        ep.delete(&files[0], 3).map_err(err)?;
        other.add(&files[2], 5, event).map_err(err)?;
        // The last close of a watched file gives its entry back too.
        let [_, second, third] = <[Arc<OpenFile>; 3]>::try_from(files).map_err(|_| "three files")?;
        drop(second);
        ensure!(count(uid, Counted::EpollWatches) == 1, "closing a watched file frees its entry");
        drop((ep, other, third));
        ensure!(count(uid, Counted::EpollWatches) == 0, "entries of closed epolls are given back");
        Ok(())
    })
}

fn inotify_instances_within_limit() -> TestResult {
    let uid = 90_004;
    with_limit(&inotify::MAX_USER_INSTANCES, 2, || {
        let a = Inotify::new(uid).map_err(err)?;
        let _b = Inotify::new(uid).map_err(err)?;
        ensure!(matches!(Inotify::new(uid), Err(Errno::EMFILE)), "a third instance under a limit of 2");
        ensure!(Inotify::new(uid + 1).is_ok(), "another user has instances of its own");
        drop(a);
        ensure!(Inotify::new(uid).is_ok(), "a freed instance is given back");
        Ok(())
    })
}

fn inotify_watches_within_limit() -> TestResult {
    let uid = 90_005;
    with_limit(&inotify::MAX_USER_WATCHES, 2, || {
        let inodes: Vec<Arc<dyn Inode>> =
            (0..3).map(|_| -> Arc<dyn Inode> { crate::fs::tmpfs::Tmpfs::new_root(0o755) }).collect();
        let group = Inotify::new(uid).map_err(err)?;
        let first = group.add_watch(inodes[0].clone(), c::IN_CREATE).map_err(err)?;
        group.add_watch(inodes[1].clone(), c::IN_CREATE).map_err(err)?;
        // Changing an existing watch takes nothing more.
        ensure!(group.add_watch(inodes[1].clone(), c::IN_DELETE).is_ok());
        let third = group.add_watch(inodes[2].clone(), c::IN_CREATE);
        ensure!(matches!(third, Err(Errno::ENOSPC)), "a third watch under a limit of 2: {third:?}");
        group.rm_watch(first).map_err(err)?;
        let wd = group.add_watch(inodes[2].clone(), c::IN_CREATE).map_err(err)?;
        // The refused watch used up its descriptor, as Linux's idr does.
        ensure!(wd == 4, "the watch after a refused one is wd {wd}, not 4");
        drop(group);
        ensure!(count(uid, Counted::InotifyWatches) == 0 && count(uid, Counted::InotifyInstances) == 0);
        Ok(())
    })
}
