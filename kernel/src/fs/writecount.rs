//! Linux's `i_writecount`: a regular file is either open for writing by
//! some descriptors or being executed by some processes, never both. An
//! open for writing (or a truncate) of a running program fails with
//! ETXTBSY, and so does an exec of a file someone has open for writing.
//!
//! The count lives in one table keyed by the inode's address: positive is
//! the number of writers, negative the number of address spaces running
//! the file. Every entry is held by a guard that keeps its inode alive, so
//! a key is never reused while it is in the table, and the last guard to
//! go removes the entry. Only regular files take part.

use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::inode::{FileType, Inode};

/// (inode address, count). A list: it holds only files open for writing
/// and running programs, a few dozen, and it can grow without panicking.
static COUNTS: SpinLock<Vec<(usize, i32)>> = SpinLock::new(Vec::new());

fn key(inode: &Arc<dyn Inode>) -> usize {
    Arc::as_ptr(inode) as *const () as usize
}

/// Adds `delta` if the count has the same sign (or is 0), else ETXTBSY.
fn adjust(inode: &Arc<dyn Inode>, delta: i32) -> Result<(), Errno> {
    let k = key(inode);
    let mut counts = COUNTS.lock();
    match counts.iter().position(|e| e.0 == k) {
        Some(i) => {
            let now = counts[i].1;
            if (delta > 0 && now < 0) || (delta < 0 && now > 0) {
                return Err(Errno::ETXTBSY);
            }
            counts[i].1 = now + delta;
            if counts[i].1 == 0 {
                counts.swap_remove(i);
            }
        }
        None => {
            counts.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            counts.push((k, delta));
        }
    }
    Ok(())
}

/// Gives back the `delta` a guard took.
fn release(inode: &Arc<dyn Inode>, delta: i32) {
    let k = key(inode);
    let mut counts = COUNTS.lock();
    if let Some(i) = counts.iter().position(|e| e.0 == k) {
        counts[i].1 -= delta;
        if counts[i].1 == 0 {
            counts.swap_remove(i);
        }
    }
}

/// Held by a descriptor open for writing on a regular file.
pub struct WriteAccess {
    inode: Option<Arc<dyn Inode>>,
}

/// Takes write access to `inode`: ETXTBSY while a process runs it.
pub fn get_write_access(inode: &Arc<dyn Inode>) -> Result<WriteAccess, Errno> {
    if inode.file_type() != FileType::Regular {
        return Ok(WriteAccess { inode: None });
    }
    adjust(inode, 1)?;
    Ok(WriteAccess { inode: Some(inode.clone()) })
}

impl Drop for WriteAccess {
    fn drop(&mut self) {
        if let Some(inode) = &self.inode {
            release(inode, 1);
        }
    }
}

/// Held by an address space running a program file (and for the moment
/// of an exec, by the file being exec'd).
pub struct DenyWrite {
    inode: Arc<dyn Inode>,
}

/// Keeps writers away from `inode`: ETXTBSY while one has it open.
pub fn deny_write_access(inode: &Arc<dyn Inode>) -> Result<DenyWrite, Errno> {
    adjust(inode, -1)?;
    Ok(DenyWrite { inode: inode.clone() })
}

impl DenyWrite {
    /// Another address space runs the same file (fork).
    pub fn try_clone(&self) -> Result<DenyWrite, Errno> {
        deny_write_access(&self.inode)
    }
}

impl Drop for DenyWrite {
    fn drop(&mut self) {
        release(&self.inode, -1);
    }
}
