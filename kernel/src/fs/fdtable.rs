//! Per-process file descriptor tables, and their sharing between
//! processes created with CLONE_FILES.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use linux_abi::errno::Errno;

use super::file::OpenFile;
use crate::sync::{Mutex, MutexGuard};

/// A descriptor table and the number of processes sharing it. A process
/// holds its handle for its whole life, so a descriptor lookup (every
/// read and write) takes the table's lock and nothing else; the table is
/// emptied, closing its files, when the last sharer exits.
pub struct SharedFdTable {
    table: Mutex<FdTable>,
    sharers: AtomicUsize,
}

impl SharedFdTable {
    /// A table with one sharer, the process it is made for.
    /// The table is a new owner of POSIX locks: a fork's copy holds none
    /// of its parent's.
    pub fn new(mut table: FdTable) -> Result<Arc<SharedFdTable>, Errno> {
        table.lock_owner = NEXT_LOCK_OWNER.fetch_add(1, Ordering::Relaxed);
        table.posix_locked = false;
        // A descriptor another thread reserved is not the copy's.
        table.reserved.clear();
        Arc::try_new(SharedFdTable { table: Mutex::new(table), sharers: AtomicUsize::new(1) })
            .map_err(|_| Errno::ENOMEM)
    }

    pub fn lock(&self) -> MutexGuard<'_, FdTable> {
        self.table.lock()
    }

    /// The handle for a new process that shares this table (CLONE_FILES).
    pub fn share(self: &Arc<Self>) -> Arc<SharedFdTable> {
        self.sharers.fetch_add(1, Ordering::Relaxed);
        self.clone()
    }

    /// Whether another process shares the table (CLONE_FILES).
    pub fn is_shared(&self) -> bool {
        self.sharers.load(Ordering::Relaxed) > 1
    }

    /// An exiting process is done with the table. The last sharer closes
    /// every descriptor now (pipe readers must see end of file before the
    /// parent's wait returns), outside the lock, since closing may sleep.
    pub fn release(&self) {
        if self.sharers.fetch_sub(1, Ordering::AcqRel) == 1 {
            let files = core::mem::take(&mut *self.table.lock());
            for entry in files.slots.iter().flatten() {
                files.closed(entry);
            }
            drop(files);
        }
    }
}

#[derive(Clone)]
pub struct FdEntry {
    pub file: Arc<OpenFile>,
    pub cloexec: bool,
}

#[derive(Clone, Default)]
pub struct FdTable {
    slots: Vec<Option<FdEntry>>,
    /// Who owns the POSIX locks taken through this table (Linux's
    /// `current->files`), and whether it ever took one, so a close looks
    /// for locks to drop only then.
    lock_owner: u64,
    posix_locked: bool,
    /// Descriptors taken but not filled yet (`reserve`): no file, yet not
    /// free for others (Linux's open bit without a file).
    reserved: Vec<usize>,
}

static NEXT_LOCK_OWNER: AtomicU64 = AtomicU64::new(1);

/// RLIMIT_NOFILE default, as on Linux.
pub const DEFAULT_NOFILE: usize = 1024;

/// fs.nr_open: no process's RLIMIT_NOFILE may exceed it.
static NR_OPEN: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(1024 * 1024);

pub fn nr_open() -> usize {
    NR_OPEN.load(core::sync::atomic::Ordering::Relaxed)
}

pub fn set_nr_open(n: usize) {
    NR_OPEN.store(n, core::sync::atomic::Ordering::Relaxed);
}

impl FdTable {
    pub fn new() -> FdTable {
        FdTable { slots: Vec::new(), lock_owner: 0, posix_locked: false, reserved: Vec::new() }
    }

    /// The owner id for POSIX locks taken through this table; from now
    /// on closes look for its locks.
    pub fn posix_lock_owner(&mut self) -> u64 {
        self.posix_locked = true;
        self.lock_owner
    }

    /// A descriptor left the table: the file hears of it (`flush`), and
    /// POSIX's "closing any descriptor of a file releases the process's
    /// locks on it".
    fn closed(&self, entry: &FdEntry) {
        entry.file.ops.flush();
        if self.posix_locked {
            super::lock::descriptor_closed(self.lock_owner, &entry.file);
        }
    }

    /// The open file of `fd`, borrowed from the table: for a caller that
    /// holds the lock for a whole scan (poll, select) instead of taking a
    /// reference per descriptor.
    pub fn file(&self, fd: i32) -> Option<&OpenFile> {
        usize::try_from(fd).ok().and_then(|i| self.slots.get(i)).and_then(|s| s.as_ref()).map(|e| &*e.file)
    }

    pub fn get(&self, fd: i32) -> Result<Arc<OpenFile>, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(|s| s.as_ref())
            .map(|e| e.file.clone())
            .ok_or(Errno::EBADF)
    }

    /// The lowest free descriptor >= `min` and below `limit`, with its
    /// slot made (EMFILE, ENOMEM).
    fn free_slot(&mut self, min: usize, limit: usize) -> Result<usize, Errno> {
        let free = (min..limit)
            .find(|&i| self.slots.get(i).is_none_or(|s| s.is_none()) && !self.reserved.contains(&i))
            .ok_or(Errno::EMFILE)?;
        if free >= self.slots.len() {
            self.slots.try_reserve(free + 1 - self.slots.len()).map_err(|_| Errno::ENOMEM)?;
            self.slots.resize(free + 1, None);
        }
        Ok(free)
    }

    /// Installs `file` at the lowest free descriptor >= `min`.
    pub fn install_from(&mut self, min: usize, file: Arc<OpenFile>, cloexec: bool, limit: usize) -> Result<i32, Errno> {
        let free = self.free_slot(min, limit)?;
        self.slots[free] = Some(FdEntry { file, cloexec });
        Ok(free as i32)
    }

    /// Takes the lowest free descriptor for a file made later
    /// (`get_unused_fd_flags`): accept reserves it before it dequeues a
    /// connection, so EMFILE loses none. Fill it with `install_reserved`
    /// or give it back with `unreserve`.
    pub fn reserve(&mut self, limit: usize) -> Result<i32, Errno> {
        self.reserved.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        let free = self.free_slot(0, limit)?;
        self.reserved.push(free);
        Ok(free as i32)
    }

    /// Fills a reserved descriptor (`fd_install`).
    pub fn install_reserved(&mut self, fd: i32, file: Arc<OpenFile>, cloexec: bool) {
        let fd = fd as usize;
        self.reserved.retain(|&r| r != fd);
        if let Some(slot) = self.slots.get_mut(fd) {
            *slot = Some(FdEntry { file, cloexec });
        }
    }

    /// Gives a reserved descriptor back unused (`put_unused_fd`).
    pub fn unreserve(&mut self, fd: i32) {
        self.reserved.retain(|&r| r != fd as usize);
    }

    pub fn install(&mut self, file: Arc<OpenFile>, cloexec: bool) -> Result<i32, Errno> {
        self.install_from(0, file, cloexec, DEFAULT_NOFILE)
    }

    /// Puts `file` exactly at `fd`, returning what was there; EBUSY on a
    /// descriptor reserved and not filled yet, as Linux's dup2.
    pub fn install_at(&mut self, fd: usize, file: Arc<OpenFile>, cloexec: bool) -> Result<Option<FdEntry>, Errno> {
        if fd >= DEFAULT_NOFILE {
            return Err(Errno::EBADF);
        }
        if self.reserved.contains(&fd) {
            return Err(Errno::EBUSY);
        }
        if fd >= self.slots.len() {
            self.slots.try_reserve(fd + 1 - self.slots.len()).map_err(|_| Errno::ENOMEM)?;
            self.slots.resize(fd + 1, None);
        }
        let old = self.slots[fd].replace(FdEntry { file, cloexec });
        if let Some(e) = &old {
            self.closed(e);
        }
        Ok(old)
    }

    pub fn close(&mut self, fd: i32) -> Result<FdEntry, Errno> {
        let entry =
            usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)).and_then(|s| s.take()).ok_or(Errno::EBADF)?;
        self.closed(&entry);
        Ok(entry)
    }

    /// Drops every close-on-exec descriptor (execve).
    pub fn close_on_exec(&mut self) {
        for i in 0..self.slots.len() {
            if self.slots[i].as_ref().is_some_and(|e| e.cloexec) {
                if let Some(e) = self.slots[i].take() {
                    self.closed(&e);
                }
            }
        }
    }
}

impl FdTable {
    /// Every open file description in the table (one per descriptor).
    pub fn files(&self) -> impl Iterator<Item = &Arc<OpenFile>> {
        self.slots.iter().flatten().map(|e| &e.file)
    }

    /// The dentries of every open file (umount's busy check).
    pub fn open_dentries(&self) -> Vec<Arc<crate::fs::Dentry>> {
        self.slots.iter().flatten().filter_map(|e| e.file.dentry.clone()).collect()
    }

    pub fn is_cloexec(&self, fd: i32) -> Result<bool, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(|s| s.as_ref())
            .map(|e| e.cloexec)
            .ok_or(Errno::EBADF)
    }

    pub fn set_cloexec(&mut self, fd: i32, cloexec: bool) -> Result<(), Errno> {
        let entry = usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get_mut(i))
            .and_then(|s| s.as_mut())
            .ok_or(Errno::EBADF)?;
        entry.cloexec = cloexec;
        Ok(())
    }
}
