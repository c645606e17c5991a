//! File change notification (Linux's fsnotify), for inotify.
//!
//! The VFS calls these hooks where it changes or uses files (open,
//! read, write, close, attribute changes, directory entries), so the
//! file systems need not know: a hook turns the operation into events
//! for the watches on the inodes involved. An event about a file goes
//! first to the watches on its directory, with the file's name, then to
//! the watches on the file itself; an event about a directory entry
//! (create, delete, moves) goes to the directory's watches only. With no
//! watch anywhere each hook is one load.
//!
//! Watches are found by inode identity (the `Arc`'s address; a watch
//! holds the inode, as Linux's marks pin theirs, so the address is not
//! reused while watched) in one sorted table. A removed inode dies
//! (DELETE_SELF) when the last reference to its last name goes, which
//! `Dentry`'s `Drop` reports.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use hal::sync::SpinLock;
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::dentry::Dentry;
use super::file::OpenFile;
use super::inode::{FileType, Inode};
use super::inotify::Inotify;

/// One inotify watch on an inode.
#[derive(Clone)]
pub(super) struct Mark {
    pub(super) group: Weak<Inotify>,
    pub(super) wd: i32,
}

/// Watched inodes by key, sorted, each with its marks.
static MARKS: SpinLock<Vec<(usize, Vec<Mark>)>> = SpinLock::new(Vec::new());
/// `MARKS.len()`, read without the lock by every hook.
static WATCHED: AtomicUsize = AtomicUsize::new(0);
/// The cookie tying a MOVED_FROM to its MOVED_TO.
static NEXT_COOKIE: AtomicU32 = AtomicU32::new(1);

/// What a watch is keyed by: the inode's identity.
pub(super) fn key(inode: &Arc<dyn Inode>) -> usize {
    Arc::as_ptr(inode) as *const () as usize
}

#[inline]
fn active() -> bool {
    WATCHED.load(Ordering::Relaxed) != 0
}

pub(super) fn add_mark(key: usize, mark: Mark) -> Result<(), Errno> {
    let mut marks = MARKS.lock();
    match marks.binary_search_by_key(&key, |(k, _)| *k) {
        Ok(i) => {
            marks[i].1.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            marks[i].1.push(mark);
        }
        Err(i) => {
            let mut list = Vec::new();
            list.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            list.push(mark);
            marks.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            marks.insert(i, (key, list));
        }
    }
    WATCHED.store(marks.len(), Ordering::Relaxed);
    Ok(())
}

/// Removes the mark of (`group`, `wd`) on `key`.
pub(super) fn remove_mark(key: usize, group: &Weak<Inotify>, wd: i32) {
    let removed = {
        let mut marks = MARKS.lock();
        let Ok(i) = marks.binary_search_by_key(&key, |(k, _)| *k) else {
            return;
        };
        marks[i].1.retain(|m| !(m.wd == wd && m.group.ptr_eq(group)));
        let removed = if marks[i].1.is_empty() { Some(marks.remove(i)) } else { None };
        WATCHED.store(marks.len(), Ordering::Relaxed);
        removed
    };
    drop(removed);
}

fn marks_of(key: usize) -> Vec<Mark> {
    let marks = MARKS.lock();
    match marks.binary_search_by_key(&key, |(k, _)| *k) {
        Ok(i) => {
            let mut copy = Vec::new();
            if copy.try_reserve(marks[i].1.len()).is_ok() {
                copy.extend(marks[i].1.iter().cloned());
            }
            copy
        }
        Err(_) => Vec::new(),
    }
}

fn is_dir(inode: &Arc<dyn Inode>) -> bool {
    inode.file_type() == FileType::Directory
}

/// An event on `inode` itself, for its own watches.
fn to_inode(inode: &Arc<dyn Inode>, mask: u32) {
    for mark in marks_of(key(inode)) {
        if let Some(group) = mark.group.upgrade() {
            group.deliver(mark.wd, mask, 0, None);
        }
    }
}

/// An event about entry `name` of directory `dir`, for its watches.
fn to_dir(dir: &Arc<dyn Inode>, name: &str, mask: u32, cookie: u32) {
    for mark in marks_of(key(dir)) {
        if let Some(group) = mark.group.upgrade() {
            group.deliver(mark.wd, mask, cookie, Some(name));
        }
    }
}

/// An event about the file at `dentry`: its directory's watches (with
/// the name; none at a file system's root), then its own.
fn to_file(dentry: &Arc<Dentry>, mask: u32) {
    let inode = dentry.inode();
    let mask = if is_dir(inode) { mask | c::IN_ISDIR } else { mask };
    if !dentry.is_mount_root() {
        let parent = dentry.parent();
        if !Arc::ptr_eq(&parent, dentry) {
            to_dir(parent.inode(), dentry.name(), mask, 0);
        }
    }
    to_inode(inode, mask);
}

/// The dentry an open file's events are about (none for pipes and other
/// files without a path, and for O_PATH descriptors, which never notify).
fn file_dentry(f: &OpenFile) -> Option<&Arc<Dentry>> {
    if f.is_path_only() {
        return None;
    }
    f.dentry.as_ref()
}

/// The last reference to an open file description went.
pub fn closed(f: &OpenFile) {
    if active() {
        if let Some(d) = file_dentry(f) {
            to_file(d, if f.writable() { c::IN_CLOSE_WRITE } else { c::IN_CLOSE_NOWRITE });
        }
    }
}

/// Data was read from `f` (or its directory listed).
#[inline]
pub fn accessed(f: &OpenFile) {
    if active() {
        if let Some(d) = file_dentry(f) {
            to_file(d, c::IN_ACCESS);
        }
    }
}

/// Data was written to `f`, or it was truncated through it.
#[inline]
pub fn modified(f: &OpenFile) {
    if active() {
        if let Some(d) = file_dentry(f) {
            to_file(d, c::IN_MODIFY);
        }
    }
}

/// The file at `dentry` changed in a way given by `mask` (IN_ATTRIB for
/// chmod, chown and utimes, IN_MODIFY for truncate...).
pub fn changed(dentry: &Arc<Dentry>, mask: u32) {
    if active() && mask != 0 {
        to_file(dentry, mask);
    }
}

/// `name` was created in `dir` (open O_CREAT, mkdir, mknod, symlink).
pub fn created(dir: &Arc<Dentry>, name: &str, inode_is_dir: bool) {
    if active() {
        to_dir(dir.inode(), name, c::IN_CREATE | if inode_is_dir { c::IN_ISDIR } else { 0 }, 0);
    }
}

/// A hard link `name` to `inode` was made in `dir`.
pub fn linked(dir: &Arc<Dentry>, name: &str, inode: &Arc<dyn Inode>) {
    if active() {
        to_inode(inode, c::IN_ATTRIB);
        to_dir(dir.inode(), name, c::IN_CREATE, 0);
    }
}

/// The inode is gone (no name left, and the last reference to its last
/// name went): DELETE_SELF, then its watches go.
fn gone(inode: &Arc<dyn Inode>) {
    to_inode(inode, c::IN_DELETE_SELF);
    for mark in marks_of(key(inode)) {
        if let Some(group) = mark.group.upgrade() {
            group.drop_watch(mark.wd);
        }
    }
}

/// Whether the name `dentry` (just taken out of the cache) was the last
/// way to the inode: no link left, and the caller holds the only
/// reference. Otherwise (an open file, a working directory) the inode
/// dies when that reference goes (`dentry_dropped`), as Linux reports
/// DELETE_SELF at the last dput.
fn last_reference(dentry: &Arc<Dentry>) -> bool {
    let inode = dentry.inode();
    (is_dir(inode) || inode.metadata().nlink == 0) && Arc::strong_count(dentry) == 1
}

/// A dentry is being freed: if its inode has no name left, it is gone.
pub fn dentry_dropped(inode: &Arc<dyn Inode>) {
    if active() && inode.metadata().nlink == 0 {
        gone(inode);
    }
}

/// `name` (the dentry `victim`, already out of `dir`'s cache) was
/// removed by unlink or rmdir. Linux reports the inode's own death
/// before the directory's DELETE when nothing else holds it.
pub fn removed(dir: &Arc<Dentry>, name: &str, victim: &Arc<Dentry>) {
    if !active() {
        return;
    }
    let inode = victim.inode();
    let dir_gone = is_dir(inode);
    if !dir_gone {
        to_inode(inode, c::IN_ATTRIB); // its link count changed
    }
    if last_reference(victim) {
        gone(inode);
    }
    to_dir(dir.inode(), name, c::IN_DELETE | if dir_gone { c::IN_ISDIR } else { 0 }, 0);
}

/// `inode` moved from `old_dir`/`old_name` to `new_dir`/`new_name`,
/// replacing `replaced` (out of the cache already) if there was a file
/// there.
pub fn moved(
    old_dir: &Arc<Dentry>,
    old_name: &str,
    new_dir: &Arc<Dentry>,
    new_name: &str,
    inode: &Arc<dyn Inode>,
    replaced: Option<&Arc<Dentry>>,
) {
    if !active() {
        return;
    }
    let cookie = NEXT_COOKIE.fetch_add(1, Ordering::Relaxed);
    let isdir = if is_dir(inode) { c::IN_ISDIR } else { 0 };
    to_dir(old_dir.inode(), old_name, c::IN_MOVED_FROM | isdir, cookie);
    to_dir(new_dir.inode(), new_name, c::IN_MOVED_TO | isdir, cookie);
    if let Some(target) = replaced {
        if !is_dir(target.inode()) {
            to_inode(target.inode(), c::IN_ATTRIB);
        }
    }
    to_inode(inode, c::IN_MOVE_SELF);
    if let Some(target) = replaced {
        if last_reference(target) {
            gone(target.inode());
        }
    }
}
