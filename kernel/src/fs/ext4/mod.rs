//! ext4 and ext2 volumes in the VFS: kiln-ext4 (the on-disk format and
//! the jbd2 journal, a host-tested library) over a block device, behind
//! the same [`Inode`] trait tmpfs implements.
//!
//! One mounted volume is an [`Ext4Volume`]: the library's file system
//! behind a sleeping mutex (every operation may wait for the disk), the
//! table of live inodes (so hard links and repeated lookups share one
//! `Arc`), and the mount options that change behaviour here (`sync`
//! commits after every change). Metadata changes collect in the library's
//! running transaction and are committed as one jbd2 transaction (group
//! commit) by fsync, fdatasync, syncfs, sync, umount and the `ext4-commit`
//! thread every [`COMMIT_INTERVAL_NS`] (Linux's `commit=5`). As in jbd2, a
//! commit holds the volume's mutex only to close the running transaction
//! and send its log blocks down; the flush and the commit block (the
//! device waits) are written with the mutex let go, so operations go on
//! into the next transaction meanwhile. One commit is out at a time (the
//! `commit` mutex, taken before the volume's), and an fsync that waited
//! for another's commit returns at once if that one carried its changes
//! (`commits_done`). File data
//! lives in the page cache (`fs::pagecache`) until it is written back
//! (fsync, sync, the writeback thread, memory pressure): then the library
//! allocates its blocks and sends it to the block layer before the commit
//! that maps it (ordered mode), whose flush makes it durable.

mod disk;
mod inode;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::sync::SpinLock;
use kiln_ext4::{CommitTail, Ext4, MountOptions, Timestamp};
use linux_abi::errno::Errno;

use super::inode::Inode;
use super::mount::FsState;
use crate::block::plug::Plug;
use crate::block::BlockQueue;
use crate::sync::Mutex;
use disk::Disk;
pub use inode::Ext4Inode;

/// How often the background thread commits the running transaction.
pub const COMMIT_INTERVAL_NS: u64 = 5_000_000_000;
pub const EXT4_SUPER_MAGIC: u64 = 0xEF53;

pub struct Ext4Volume {
    fs: Mutex<Option<Ext4<Disk>>>,
    /// Held through a whole commit (taken before `fs`): one commit's tail
    /// is out at a time, and unmount and remount wait for it.
    commit: Mutex<()>,
    /// The device, for a commit's tail written without `fs` held.
    queue: Arc<BlockQueue>,
    /// The device's number: st_dev of every file.
    pub dev: u64,
    /// The device's logical block size: what O_DIRECT transfers align to.
    pub logical_block: u64,
    /// The file system's block size.
    pub block_size: u64,
    inodes: SpinLock<BTreeMap<u32, Weak<Ext4Inode>>>,
    /// Inodes whose last in-memory reference went. Each live
    /// [`Ext4Inode`] holds one pin in the library (so an unlinked file
    /// that is still open, mapped or someone's cwd stays on the orphan
    /// list); its `Drop` may run under a spin lock, where the sleeping
    /// mutex cannot be taken, so it only queues the number here and the
    /// next call holding the mutex drops the pin (freeing the inode if
    /// it has no name left).
    unpins: SpinLock<Vec<u32>>,
    /// Blocks reserved by the cached pages of inodes dropped since (given
    /// back under the mutex with the pins, for the same reason).
    unreserve: AtomicU64,
    /// `sync` / MS_SYNCHRONOUS: commit after every change.
    pub synchronous: AtomicBool,
    /// The library's read-only state, kept where a spin-locked caller
    /// (the mount table, /proc/mounts) can read it: set at a read-only
    /// mount or remount, or by an error (`errors=remount-ro`).
    read_only: AtomicBool,
    /// The device's name, for the log.
    name: String,
}

/// Every mounted volume, for sync(2) and the commit thread.
static VOLUMES: SpinLock<Vec<Weak<Ext4Volume>>> = SpinLock::new(Vec::new());
static COMMIT_THREAD: AtomicBool = AtomicBool::new(false);

pub(crate) fn now() -> Timestamp {
    let ns = crate::clock::realtime_ns();
    Timestamp { sec: (ns / 1_000_000_000) as i64, nsec: (ns % 1_000_000_000) as u32 }
}

impl Ext4Volume {
    /// Runs `f` on the mounted file system (EIO once it is unmounted).
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Ext4<Disk>) -> Result<T, Errno>) -> Result<T, Errno> {
        let mut guard = self.fs.lock();
        let fs = guard.as_mut().ok_or(Errno::EIO)?;
        self.drop_pins(fs);
        let r = f(fs);
        self.note_state(fs);
        r
    }

    /// After a call: an error that turned the volume read-only is logged
    /// once and shown by the mount table.
    fn note_state(&self, fs: &Ext4<Disk>) {
        let ro = fs.is_read_only();
        if ro && !self.read_only.swap(true, Ordering::AcqRel) {
            log::error!("ext4 {}: error; remounting the file system read-only (errors=remount-ro)", self.name);
        }
    }

    /// Runs `f`, which names an inode, and returns that inode live (and
    /// pinned) under the same lock, so no unlink can free it in between.
    pub(crate) fn with_inode(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Ext4<Disk>) -> Result<u32, Errno>,
    ) -> Result<Arc<dyn Inode>, Errno> {
        let mut guard = self.fs.lock();
        let fs = guard.as_mut().ok_or(Errno::EIO)?;
        self.drop_pins(fs);
        let r = f(fs);
        self.note_state(fs);
        self.live(fs, r?)
    }

    /// Drops the pins of inodes no longer referenced in memory.
    fn drop_pins(&self, fs: &mut Ext4<Disk>) {
        fs.release_blocks(self.unreserve.swap(0, Ordering::AcqRel));
        let pending = core::mem::take(&mut *self.unpins.lock());
        for ino in pending {
            if let Err(e) = fs.unpin(ino, now()) {
                // Left on the orphan list: the next mount frees it.
                log::warn!("ext4: could not release inode {ino}: {}", e.name());
            }
        }
    }

    /// Called by a dropped [`Ext4Inode`] whose pages held `blocks`
    /// reserved, possibly under a spin lock.
    pub(super) fn queue_unreserve(&self, blocks: u64) {
        self.unreserve.fetch_add(blocks, Ordering::AcqRel);
    }

    /// Called by a dropped [`Ext4Inode`], possibly under a spin lock.
    pub(super) fn queue_unpin(&self, ino: u32) {
        let mut q = self.unpins.lock();
        if q.try_reserve(1).is_ok() {
            q.push(ino);
        } else {
            log::warn!("ext4: no memory to release inode {ino}; freed at the next mount if unlinked");
        }
    }

    /// After a change: commits at once on a `sync` mount.
    pub(crate) fn changed(&self) -> Result<(), Errno> {
        if self.synchronous.load(Ordering::Relaxed) {
            self.commit()?;
        }
        Ok(())
    }

    /// Makes everything durable: the running transaction committed and the
    /// device's cache flushed.
    pub fn commit(&self) -> Result<(), Errno> {
        self.commit_after(None)
    }

    /// The number [`commit_after`](Self::commit_after) takes: the running
    /// transaction is durable once this many commits have completed.
    pub(crate) fn running_transaction(&self) -> Result<u64, Errno> {
        self.with(|fs| Ok(fs.running_commit()))
    }

    /// Commits, unless `done` commits have completed (another caller's
    /// commit carried the transaction that was running when `done` was
    /// read: see [`running_transaction`](Self::running_transaction)).
    pub(crate) fn commit_after(&self, done: Option<u64>) -> Result<(), Errno> {
        if self.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        let _one = self.commit.lock();
        // A commit that cannot reach the disk (the data or the log) loses
        // what it held: the volume goes read-only, as ext4 does when jbd2
        // aborts.
        let failed = |fs: &mut Ext4<Disk>, r: Result<(), Errno>| {
            if matches!(r, Err(Errno::EIO) | Err(Errno::EUCLEAN)) {
                fs.io_error();
            }
            r
        };
        let tail = self.with(|fs| {
            if done.is_some_and(|d| fs.commits_done() >= d) {
                return Ok(None);
            }
            let r = fs.commit_start();
            failed(fs, r.as_ref().map(|_| ()).map_err(|e| *e))?;
            r
        })?;
        let Some(tail) = tail else { return Ok(()) };
        let r = self.write_tail(&tail);
        self.with(|fs| {
            let r = fs.commit_end(&tail, r);
            failed(fs, r)
        })
    }

    /// A commit's tail, with the volume free for the next transaction
    /// (kiln-ext4's `finish_tail`, through the queue itself): the log's
    /// blocks (merged into large requests), everything before the commit
    /// block durable, the commit block with FUA, then a
    /// checkpoint that came with it (the committed copies home, a flush,
    /// the journal marked empty, a flush).
    fn write_tail(&self, tail: &CommitTail) -> Result<(), Errno> {
        let mut plug = Plug::new();
        for (sector, data) in &tail.log {
            plug.add(*sector, data)?;
        }
        self.queue.submit_plug(&mut plug, false)?;
        self.queue.flush()?;
        if let Some((sector, block)) = &tail.commit_block {
            self.queue.write(*sector, block, true)?;
        }
        if let Some(c) = &tail.checkpoint {
            let mut plug = Plug::new();
            for (sector, data) in &c.home {
                plug.add(*sector, data)?;
            }
            self.queue.submit_plug(&mut plug, false)?;
            self.queue.flush()?;
            self.queue.write(c.journal_sb.0, &c.journal_sb.1, false)?;
            self.queue.flush()?;
        }
        Ok(())
    }

    /// `sync(2)`/`syncfs`: every cached file's dirty pages written back,
    /// then committed as [`commit`](Self::commit) does and the journal
    /// checkpointed (metadata home, log empty).
    pub fn sync(self: &Arc<Self>) -> Result<(), Errno> {
        let written = super::pagecache::writeback_all(Some(super::pagecache::key_of(self)));
        if self.read_only.load(Ordering::Acquire) {
            return written;
        }
        let _one = self.commit.lock();
        self.with(|fs| {
            let r = fs.sync();
            if matches!(r, Err(Errno::EIO) | Err(Errno::EUCLEAN)) {
                fs.io_error();
            }
            r
        })?;
        written
    }

    /// The inode `ino` if something holds it now.
    pub(crate) fn held(&self, ino: u32) -> Option<Arc<Ext4Inode>> {
        self.inodes.lock().get(&ino).and_then(Weak::upgrade)
    }

    /// The live inode `ino`, or a new one.
    pub(crate) fn inode(self: &Arc<Self>, ino: u32) -> Result<Arc<dyn Inode>, Errno> {
        self.with_inode(|_| Ok(ino))
    }

    /// The live inode `ino` (the mutex held), or a new one, pinned.
    fn live(self: &Arc<Self>, fs: &mut Ext4<Disk>, ino: u32) -> Result<Arc<dyn Inode>, Errno> {
        let mut table = self.inodes.lock();
        if let Some(i) = table.get(&ino).and_then(Weak::upgrade) {
            return Ok(i);
        }
        if table.len() > 4096 {
            table.retain(|_, w| w.strong_count() > 0);
        }
        // Pinned first: an inode that fails to be made is dropped, and its
        // Drop queues the matching unpin.
        fs.pin(ino);
        let node = Arc::try_new(Ext4Inode::new(self.clone(), ino)).map_err(|_| Errno::ENOMEM)?;
        let weak: Weak<dyn super::pagecache::CachedFile> = Arc::downgrade(&node) as _;
        node.cache.set_owner(weak);
        table.insert(ino, Arc::downgrade(&node));
        Ok(node)
    }

    /// Unmount: commits, marks the volume clean, and lets go of it; the
    /// inodes still open answer EIO.
    pub fn unmount(self: &Arc<Self>) -> Result<(), Errno> {
        let owner = super::pagecache::key_of(self);
        if let Err(e) = super::pagecache::writeback_all(Some(owner)) {
            log::warn!("ext4: unmount could not write every cached page back: {}", e.name());
        }
        super::pagecache::forget_owner(owner);
        let _one = self.commit.lock();
        let mut guard = self.fs.lock();
        if let Some(fs) = guard.as_mut() {
            // Files closed since the last call: their orphans are freed
            // now rather than left on the list for the next mount.
            self.drop_pins(fs);
        }
        if let Some(fs) = guard.take() {
            match fs.unmount() {
                Ok(mut disk) => {
                    let _ = kiln_ext4::BlockDevice::flush(&mut disk);
                }
                Err(e) => log::warn!("ext4: unmount could not write everything back: {}", e.name()),
            }
        }
        Ok(())
    }
}

/// Mounts the ext4/ext2 volume on `queue`; returns its root inode and the
/// options /proc/mounts shows.
pub fn mount(queue: Arc<BlockQueue>, read_only: bool, synchronous: bool) -> Result<Arc<dyn Inode>, Errno> {
    let dev = queue.rdev;
    let name = queue.name.clone();
    let logical_block = u64::from(queue.info.logical_block_size).max(512);
    let fs = Ext4::mount(Disk::new(queue.clone(), read_only), MountOptions { read_only, now: now() })?;
    let (txs, blocks) = fs.replayed;
    if txs > 0 {
        log::info!("ext4 {name}: journal replayed: {txs} transactions, {blocks} blocks");
    }
    let read_only = fs.is_read_only();
    let block_size = fs.block_size() as u64;
    let vol = Arc::try_new(Ext4Volume {
        name,
        fs: Mutex::new(Some(fs)),
        commit: Mutex::new(()),
        queue,
        dev,
        logical_block,
        block_size,
        inodes: SpinLock::new(BTreeMap::new()),
        unpins: SpinLock::new(Vec::new()),
        unreserve: AtomicU64::new(0),
        synchronous: AtomicBool::new(synchronous),
        read_only: AtomicBool::new(read_only),
    })
    .map_err(|_| Errno::ENOMEM)?;
    {
        let mut all = VOLUMES.lock();
        all.retain(|v| v.strong_count() > 0);
        all.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        all.push(Arc::downgrade(&vol));
    }
    start_commit_thread();
    vol.inode(kiln_ext4::ROOT_INO)
}

/// What the mount table asks of the volume: its read-only state and the
/// flags a remount changes.
impl FsState for Ext4Volume {
    fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::Acquire)
    }

    fn remount(&self, read_only: bool, synchronous: bool) -> Result<(), Errno> {
        if read_only && !self.read_only.load(Ordering::Acquire) {
            // Linux's sync_filesystem before a read-only remount: the
            // cached data goes down first (the cache lock is taken before
            // the volume's, so not under it).
            let owner = self as *const Self as *const () as usize;
            super::pagecache::writeback_all(Some(owner))?;
        }
        let _one = self.commit.lock();
        let mut guard = self.fs.lock();
        let fs = guard.as_mut().ok_or(Errno::EIO)?;
        self.drop_pins(fs);
        let r = if read_only { fs.remount_read_only() } else { fs.remount_read_write() };
        self.read_only.store(fs.is_read_only(), Ordering::Release);
        r?;
        self.synchronous.store(synchronous, Ordering::Relaxed);
        Ok(())
    }
}

/// The volume an inode of ext4 belongs to, if it is one.
pub fn volume_of(inode: &dyn Inode) -> Option<Arc<Ext4Volume>> {
    inode.as_any().downcast_ref::<Ext4Inode>().map(|i| i.volume().clone())
}

/// The commit thread's round: every volume's running transaction
/// committed (dirty pages are the writeback thread's business).
fn commit_all() {
    let all: Vec<Arc<Ext4Volume>> = VOLUMES.lock().iter().filter_map(Weak::upgrade).collect();
    for v in all {
        // A volume unmounted since the list was read has nothing to
        // commit (its `with` answers EIO, meant for the files still open).
        if v.fs.lock().is_none() {
            continue;
        }
        if let Err(e) = v.commit() {
            log::warn!("ext4: commit failed: {}", e.name());
        }
    }
}

/// sync(2): every volume's cached pages written back, committed, flushed.
pub fn sync_all() {
    let all: Vec<Arc<Ext4Volume>> = VOLUMES.lock().iter().filter_map(Weak::upgrade).collect();
    for v in all {
        if let Err(e) = v.sync() {
            log::warn!("ext4: sync failed: {}", e.name());
        }
    }
}

fn start_commit_thread() {
    if COMMIT_THREAD.swap(true, Ordering::AcqRel) {
        return;
    }
    let spawned = crate::sched::spawn("ext4-commit", || loop {
        crate::sched::sleep_ns(COMMIT_INTERVAL_NS);
        commit_all();
    });
    if spawned.is_err() {
        COMMIT_THREAD.store(false, Ordering::Release);
        log::warn!("ext4: no memory for the commit thread; changes are committed by sync and fsync only");
    }
}

/// Splits mount(2)'s data for ext4: the options it accepts (and ignores
/// where the behaviour is already the one asked for) and what it shows.
pub fn parse_options(data: &str) -> Result<String, Errno> {
    for o in data.split(',').filter(|o| !o.is_empty()) {
        let known = super::is_generic_option(o)
            || matches!(
                o,
                "errors=remount-ro"
                    | "errors=continue"
                    | "data=ordered"
                    | "barrier"
                    | "barrier=1"
                    | "user_xattr"
                    | "acl"
                    | "noacl"
                    | "relatime"
                    | "noatime"
                    | "nodiratime"
                    | "strictatime"
                    | "discard"
                    | "nodiscard"
            )
            || o.starts_with("commit=");
        if !known {
            return Err(Errno::EINVAL);
        }
    }
    Ok(String::new())
}
