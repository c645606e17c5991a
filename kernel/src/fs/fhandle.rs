//! File handles: name_to_handle_at gives a file's handle, which
//! open_by_handle_at turns back into the file for as long as the inode
//! lives (ESTALE after). A file system that can make handles says so
//! through `Inode::file_handle` (tmpfs: inode number and generation);
//! /proc cannot (EOPNOTSUPP).
//!
//! Opening needs a dentry: the one the dentry cache holds for the inode
//! below the mount, else one found by searching the file system's
//! directories, else (an unlinked file) a nameless one.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;

use super::dentry::{self, Dentry};
use super::inode::{FileType, Inode};

/// The most directories a search for a handle's name visits.
const SEARCH_LIMIT: usize = 100_000;

/// The inode a handle names on the file system `mount_root` shows.
pub fn decode(mount_root: &Arc<Dentry>, kind: i32, words: &[u32]) -> Result<Arc<dyn Inode>, Errno> {
    let fs_root = mount_root.fs_root();
    fs_root.inode().inode_by_handle(kind, words).ok_or(Errno::ESTALE)
}

/// A dentry for `inode` below `mount_root` (the mount the handle was
/// opened through).
pub fn dentry_for(mount_root: &Arc<Dentry>, inode: &Arc<dyn Inode>) -> Arc<Dentry> {
    if Arc::ptr_eq(mount_root.inode(), inode) {
        return mount_root.clone();
    }
    if let Some(path) = find_path(mount_root.inode(), inode) {
        let cred = &crate::cred::ROOT;
        if let Ok(d) = dentry::resolve_how(cred, mount_root, &path, false, dentry::Lookup::default()) {
            if Arc::ptr_eq(d.inode(), inode) {
                return d;
            }
        }
    }
    dentry::unnamed("", inode.clone())
}

/// The path of `target` below the directory `dir`, breadth first.
fn find_path(dir: &Arc<dyn Inode>, target: &Arc<dyn Inode>) -> Option<String> {
    let mut queue: Vec<(Arc<dyn Inode>, String)> = Vec::new();
    queue.try_reserve(1).ok()?;
    queue.push((dir.clone(), String::new()));
    let mut at = 0;
    while at < queue.len() && at < SEARCH_LIMIT {
        let (d, path) = queue[at].clone();
        at += 1;
        let entries = d.readdir().ok()?;
        for e in entries {
            let Ok(child) = d.lookup(&e.name) else { continue };
            let mut p = path.clone();
            if p.try_reserve(e.name.len() + 1).is_err() {
                return None;
            }
            if !p.is_empty() {
                p.push('/');
            }
            p.push_str(&e.name);
            if Arc::ptr_eq(&child, target) {
                return Some(p);
            }
            if e.kind == FileType::Directory && queue.try_reserve(1).is_ok() {
                queue.push((child, p));
            }
        }
    }
    None
}
