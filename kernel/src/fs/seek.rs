//! SEEK_DATA and SEEK_HOLE (lseek(2)) on files that may be sparse. A
//! file system describes its blocks as byte spans (data on the disk, or
//! data only where the page cache holds it), and the page cache fills in
//! the rest, as Linux's `iomap_seek_data`/`iomap_seek_hole` do: a written
//! extent is data, an unwritten one is data only where its pages are
//! cached, and a range with no block is data only where dirty pages wait
//! for delayed allocation. tmpfs, which has no disk, is data exactly where
//! it has pages, less those fallocate made and nothing has touched.

use linux_abi::errno::Errno;

use crate::mm::PAGE_SIZE;

/// What one span of a file holds, as far as its file system knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// Data, whatever the cache holds.
    Data,
    /// Data only in the pages the cache holds there (with `dirty_only`,
    /// only in its dirty pages: a clean cached page over a hole is zeros
    /// read from nothing, and Linux reports it as a hole).
    Cached { dirty_only: bool },
}

/// Bytes `[start, end)` of a file and what they hold.
#[derive(Clone, Copy, Debug)]
pub struct ByteSpan {
    pub start: u64,
    pub end: u64,
    pub region: Region,
}

/// The page-cache questions SEEK_DATA and SEEK_HOLE ask, in page indexes.
pub trait CacheView {
    /// The first page of `[first, end)` held (dirty, with `dirty_only`).
    fn first_present(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64>;
    /// The first page of `[first, end)` not held (not dirty, with
    /// `dirty_only`).
    fn first_absent(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64>;
}

/// Where SEEK_DATA (`data`) or SEEK_HOLE lands from `offset` in a file of
/// `size` bytes whose spans from `offset` on are `spans` (in order). The
/// caller has refused `offset >= size` (ENXIO) already. SEEK_DATA past
/// the last data is ENXIO; SEEK_HOLE finds the implicit hole at `size`.
pub fn seek(spans: &[ByteSpan], offset: u64, size: u64, data: bool, cache: &dyn CacheView) -> Result<u64, Errno> {
    for span in spans {
        let (start, end) = (span.start.max(offset), span.end.min(size));
        if start >= end {
            continue;
        }
        let (first, last) = (start / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
        let found = match (span.region, data) {
            (Region::Data, true) => Some(start),
            (Region::Data, false) => None,
            (Region::Cached { dirty_only }, true) => cache.first_present(first, last, dirty_only),
            (Region::Cached { dirty_only }, false) => cache.first_absent(first, last, dirty_only),
        };
        // A page may begin before the span (1 KiB blocks share a page).
        if let Some(at) = found.map(|p| match span.region {
            Region::Data => p,
            Region::Cached { .. } => (p * PAGE_SIZE).max(start),
        }) {
            if at < end {
                return Ok(at);
            }
        }
    }
    if data {
        Err(Errno::ENXIO)
    } else {
        Ok(size)
    }
}

impl CacheView for super::pagestore::PageStore {
    fn first_present(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        super::pagestore::PageStore::first_present(self, first, end, dirty_only)
    }
    fn first_absent(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        super::pagestore::PageStore::first_absent(self, first, end, dirty_only)
    }
}

impl CacheView for super::pagecache::PageCache {
    fn first_present(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        super::pagecache::PageCache::first_present(self, first, end, dirty_only)
    }
    fn first_absent(&self, first: u64, end: u64, dirty_only: bool) -> Option<u64> {
        super::pagecache::PageCache::first_absent(self, first, end, dirty_only)
    }
}
