//! kiln-ext4's [`BlockDevice`] over a block layer queue. Writes wait in a
//! plug until the file system flushes, reads something they cover, or the
//! plug grows past [`PLUG_LIMIT`]; then they go down sorted and merged, so
//! a journal commit or a file's data becomes a few large requests. A
//! later write of the same sectors replaces the waiting one.
//!
//! Memory: the plug's copies and its request lists come from the heap,
//! which the page cache competes with. A write or an unplug that finds no
//! memory waits for it (clean cache pages dropped, the plug sent down to
//! free its copies) up to [`MEMORY_WAIT_NS`]; the waiting writes are kept
//! until they really went down, never dropped on ENOMEM.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use kiln_ext4::{BlockDevice, Errno};

use crate::block::plug::Plug;
use crate::block::BlockQueue;

/// Bytes of writes the plug holds before it is sent down anyway.
const PLUG_LIMIT: usize = 4 << 20;
/// How long a write waits for memory before failing with ENOMEM.
const MEMORY_WAIT_NS: u64 = 30_000_000_000;
const MEMORY_RETRY_NS: u64 = 10_000_000;

/// Runs `f` until it stops failing with ENOMEM, dropping clean cache pages
/// and sleeping between tries, for at most [`MEMORY_WAIT_NS`].
fn waiting_for_memory<T>(mut f: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
    let mut waited = 0;
    loop {
        match f() {
            Err(Errno::ENOMEM) if waited < MEMORY_WAIT_NS => {
                crate::fs::pagecache::reclaim_clean(64);
                crate::sched::sleep_ns(MEMORY_RETRY_NS);
                waited += MEMORY_RETRY_NS;
            }
            r => return r,
        }
    }
}

pub struct Disk {
    pub queue: Arc<BlockQueue>,
    /// Waiting writes by first sector.
    pending: BTreeMap<u64, Vec<u8>>,
    pending_bytes: usize,
    read_only: bool,
}

impl Disk {
    pub fn new(queue: Arc<BlockQueue>, read_only: bool) -> Disk {
        let read_only = read_only || queue.info.read_only;
        Disk { queue, pending: BTreeMap::new(), pending_bytes: 0, read_only }
    }

    /// Sends every waiting write to the device (not yet durable).
    pub fn unplug(&mut self) -> Result<(), Errno> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // ENOMEM comes before any request is sent (the plug's lists are
        // built first), so the writes are still waiting and sent again.
        let queue = &self.queue;
        let pending = &self.pending;
        let r = waiting_for_memory(|| {
            let mut plug = Plug::new();
            for (sector, data) in pending {
                plug.add(*sector, data)?;
            }
            queue.submit_plug(&mut plug, false)
        });
        if r != Err(Errno::ENOMEM) {
            // Sent, or failed on the device (the caller's error path).
            self.pending.clear();
            self.pending_bytes = 0;
        }
        r
    }

    fn overlaps_pending(&self, sector: u64, sectors: u64) -> bool {
        let end = sector + sectors;
        // A waiting write that starts before `end` and ends after `sector`.
        self.pending.range(..end).next_back().is_some_and(|(s, d)| s + (d.len() / 512) as u64 > sector)
            || self.pending.range(sector..end).next().is_some()
    }
}

impl BlockDevice for Disk {
    fn sector_count(&self) -> u64 {
        self.queue.info.sectors
    }

    fn read(&mut self, sector: u64, buf: &mut [u8]) -> kiln_ext4::Result<()> {
        if self.overlaps_pending(sector, (buf.len() / 512) as u64) {
            self.unplug()?;
        }
        self.queue.read(sector, buf)
    }

    fn read_scatter(&mut self, sector: u64, bufs: &mut [&mut [u8]]) -> kiln_ext4::Result<()> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        if self.overlaps_pending(sector, (len / 512) as u64) {
            self.unplug()?;
        }
        self.queue.read_scatter(sector, bufs)
    }

    fn write(&mut self, sector: u64, buf: &[u8]) -> kiln_ext4::Result<()> {
        if self.read_only {
            return Err(Errno::EROFS);
        }
        let sectors = (buf.len() / 512) as u64;
        // Only an exact replacement may be dropped; any other overlap goes
        // down first so the later bytes win.
        let same = self.pending.get(&sector).is_some_and(|d| d.len() == buf.len());
        if !same && self.overlaps_pending(sector, sectors) {
            self.unplug()?;
        }
        let mut data = Vec::new();
        if data.try_reserve_exact(buf.len()).is_err() {
            // The waiting writes go down first, freeing their copies.
            self.unplug()?;
            waiting_for_memory(|| data.try_reserve_exact(buf.len()).map_err(|_| Errno::ENOMEM))?;
        }
        data.extend_from_slice(buf);
        if self.pending.insert(sector, data).is_none() {
            self.pending_bytes += buf.len();
        }
        if self.pending_bytes >= PLUG_LIMIT {
            self.unplug()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> kiln_ext4::Result<()> {
        self.unplug()?;
        self.queue.flush()
    }

    fn submit(&mut self) -> kiln_ext4::Result<()> {
        self.unplug()
    }

    fn write_fua(&mut self, sector: u64, buf: &[u8]) -> kiln_ext4::Result<()> {
        self.unplug()?;
        self.queue.write(sector, buf, true)
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn crc32c(&self, crc: u32, data: &[u8]) -> u32 {
        hal::cpu::crc32c(crc, data).unwrap_or_else(|| kiln_ext4::crc32c(crc, data))
    }
}
