//! `/proc/meminfo`: where every frame of RAM is, in Linux's fields.
//!
//! The lines add up: MemTotal (the RAM the frame allocator manages) is
//! MemFree plus the frames held by file data (Cached: tmpfs data, which is
//! also Shmem, and the page cache of disk files, of which Dirty are newer
//! than the disk and Writeback are being written), anonymous user memory (AnonPages), the kernel heap (Slab:
//! the small-object heap's chunks and the large objects' frames, none of
//! it reclaimable), kernel stacks (KernelStack) and user page tables
//! (PageTables). Device DMA memory (rings and packet buffers in the
//! drivers' pools) has no line of its own in Linux either; it is counted
//! here for the sum. What is left over is the kernel's own page tables and
//! per-CPU areas, well under a megabyte. The per-process figures in
//! `/proc/<pid>/status` (VmRSS) count the same frames from each process's
//! side: a page shared by several processes counts once here and in each
//! of them there.

use alloc::string::String;
use core::fmt::Write;

use linux_abi::errno::Errno;

use crate::mm::TryString;

/// The counts behind the file, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct MemInfo {
    pub total: u64,
    pub free: u64,
    pub file: u64,
    /// Of `file`, tmpfs data (the rest is the page cache of disk files).
    pub shmem: u64,
    pub dirty: u64,
    pub writeback: u64,
    pub anon: u64,
    pub slab: u64,
    pub kernel_stack: u64,
    pub page_tables: u64,
    /// Device DMA pools (no /proc/meminfo line; the test kernel's sum).
    #[cfg_attr(not(feature = "ktest"), allow(dead_code))]
    pub dma: u64,
}

impl MemInfo {
    pub fn now() -> MemInfo {
        let file = super::pagestore::file_frames();
        let user = hal::frame::live_user_frames() as u64;
        MemInfo {
            total: hal::mm::managed_frame_count() * 4,
            free: hal::mm::free_frame_count() * 4,
            file: file * 4,
            shmem: file.saturating_sub(super::pagestore::cache_frames()) * 4,
            dirty: super::pagestore::dirty_pages() * 4,
            writeback: super::pagestore::writeback_pages() * 4,
            anon: user.saturating_sub(file) * 4,
            slab: hal::heap::stats().held() / 1024,
            kernel_stack: hal::context::kernel_stack_bytes() / 1024,
            page_tables: hal::paging::live_user_table_frames() * 4,
            dma: hal::device::dma::pool_frames() * 4,
        }
    }

    /// KiB in use that no line accounts for.
    #[cfg(feature = "ktest")]
    pub fn unaccounted(&self) -> u64 {
        let counted = self.free + self.file + self.anon + self.slab + self.kernel_stack + self.page_tables + self.dma;
        self.total.saturating_sub(counted)
    }
}

pub fn text() -> Result<String, Errno> {
    let m = MemInfo::now();
    let mut s = TryString::new();
    // tmpfs data is page cache that cannot be dropped: Linux counts it in
    // Cached and Shmem, and not in MemAvailable; clean pages of disk files
    // can be dropped at once, so they count as available.
    // Linux pads "Name:" to 16 columns and the number to 8.
    let line = |s: &mut TryString, name: &str, kb: u64| writeln!(s, "{name}:{kb:>w$} kB", w = 23 - name.len());
    let result = (|| {
        line(&mut s, "MemTotal", m.total)?;
        line(&mut s, "MemFree", m.free)?;
        let clean = m.file.saturating_sub(m.shmem).saturating_sub(m.dirty);
        line(&mut s, "MemAvailable", m.free + clean)?;
        line(&mut s, "Buffers", 0)?;
        line(&mut s, "Cached", m.file)?;
        line(&mut s, "SwapCached", 0)?;
        line(&mut s, "SwapTotal", 0)?;
        line(&mut s, "SwapFree", 0)?;
        line(&mut s, "Dirty", m.dirty)?;
        line(&mut s, "Writeback", m.writeback)?;
        line(&mut s, "AnonPages", m.anon)?;
        line(&mut s, "Shmem", m.shmem)?;
        line(&mut s, "KReclaimable", 0)?;
        line(&mut s, "Slab", m.slab)?;
        line(&mut s, "SReclaimable", 0)?;
        line(&mut s, "SUnreclaim", m.slab)?;
        line(&mut s, "KernelStack", m.kernel_stack)?;
        line(&mut s, "PageTables", m.page_tables)
    })();
    s.finish(result)
}
