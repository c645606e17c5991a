//! The physical frame allocator: one bit per 4 KiB frame.
//!
//! This owns the bookkeeping of which physical frames are free, in storage
//! the caller provides (the kernel carves it out of usable memory before any
//! allocator exists). A set bit means "used"; everything starts used and the
//! kernel frees exactly what the memory map says is usable, so holes,
//! firmware areas and frames past the end can never be handed out by mistake.

pub const FRAME_SIZE: u64 = 4096;

const WORD_BITS: u64 = 64;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum FrameError {
    DoubleFree,
    OutOfRange,
    Unaligned,
}

/// Bitmap over frames `0..frame_count` (physical address 0 upward).
pub struct FrameBitmap<'a> {
    bits: &'a mut [u64],
    frame_count: u64,
    free: u64,
    /// Word index where the next single-frame search starts: at or below
    /// the lowest word with a free frame (every word under it is full), so
    /// `alloc` neither rescans the exhausted low words nor walks past
    /// freed ones. Lowest-first reuse keeps a workload on the frames it
    /// has already touched: under QEMU a frame the host never backed costs
    /// a host page fault on first touch (the page_fault bench ran 1.08x
    /// Linux's wall time while next-fit walked through all of memory).
    hint: usize,
}

impl<'a> FrameBitmap<'a> {
    /// Every frame starts as used; `bits.len()*64` must be >= frame_count
    /// (else returns None).
    pub fn new(bits: &'a mut [u64], frame_count: u64) -> Option<Self> {
        if Self::bits_needed(frame_count) > bits.len() {
            return None;
        }
        bits.fill(u64::MAX);
        Some(FrameBitmap { bits, frame_count, free: 0, hint: 0 })
    }

    /// Number of `u64` words needed to track `frame_count` frames
    /// (saturating at `usize::MAX`, which no slice can satisfy).
    pub fn bits_needed(frame_count: u64) -> usize {
        usize::try_from(frame_count.div_ceil(WORD_BITS)).unwrap_or(usize::MAX)
    }

    /// Marks the whole frames inside `[start_addr, end_addr)` free. Partial
    /// frames at either end stay used: they share a page with something
    /// that is not ours.
    pub fn mark_free_range(&mut self, start_addr: u64, end_addr: u64) {
        let first = start_addr.div_ceil(FRAME_SIZE);
        let last = (end_addr / FRAME_SIZE).min(self.frame_count);
        self.set_range(first, last, false);
    }

    /// Marks every frame touching `[start_addr, end_addr)` used.
    pub fn mark_used_range(&mut self, start_addr: u64, end_addr: u64) {
        let first = start_addr / FRAME_SIZE;
        let last = end_addr.div_ceil(FRAME_SIZE).min(self.frame_count);
        self.set_range(first, last, true);
    }

    /// Returns the physical address of a free frame and marks it used.
    pub fn alloc(&mut self) -> Option<u64> {
        if self.free == 0 {
            return None;
        }
        let words = self.words();
        let hint = if self.hint < words { self.hint } else { 0 };
        let idx = (hint..words).chain(0..hint).find(|&i| self.bits[i] != u64::MAX)?;
        let bit = u64::from((!self.bits[idx]).trailing_zeros());
        let frame = idx as u64 * WORD_BITS + bit;
        // Tail bits past `frame_count` are kept set, so a clear bit is
        // always a real frame; the check only guards against bugs.
        if frame >= self.frame_count {
            return None;
        }
        self.bits[idx] |= 1 << bit;
        self.free -= 1;
        self.hint = idx;
        Some(frame * FRAME_SIZE)
    }

    /// `count` physically contiguous frames, first one aligned to
    /// `align_frames` (power of two >= 1). Searches from the bottom of
    /// memory, since callers of this (DMA buffers, page-table pools) tend
    /// to prefer low addresses.
    pub fn alloc_contiguous(&mut self, count: u64, align_frames: u64) -> Option<u64> {
        if count == 0 || !align_frames.is_power_of_two() || count > self.free {
            return None;
        }
        let mut cand = 0u64;
        loop {
            cand = align_up(self.next_free(cand)?, align_frames)?;
            let end = cand.checked_add(count)?;
            if end > self.frame_count {
                return None;
            }
            match self.next_used(cand, end) {
                None => {
                    self.set_range(cand, end, true);
                    return Some(cand * FRAME_SIZE);
                }
                Some(used) => cand = used + 1,
            }
        }
    }

    /// Err on double free / out of range / unaligned address.
    pub fn free(&mut self, addr: u64) -> Result<(), FrameError> {
        self.free_contiguous(addr, 1)
    }

    /// Frees `count` frames starting at `addr`. Every frame is validated
    /// before any is released, so an error leaves the bitmap untouched.
    pub fn free_contiguous(&mut self, addr: u64, count: u64) -> Result<(), FrameError> {
        if !addr.is_multiple_of(FRAME_SIZE) {
            return Err(FrameError::Unaligned);
        }
        let first = addr / FRAME_SIZE;
        let end = first.checked_add(count).ok_or(FrameError::OutOfRange)?;
        if end > self.frame_count || first >= self.frame_count {
            return Err(FrameError::OutOfRange);
        }
        if self.next_free_in(first, end).is_some() {
            return Err(FrameError::DoubleFree);
        }
        self.set_range(first, end, false);
        self.hint = self.hint.min((first / WORD_BITS) as usize);
        Ok(())
    }

    /// Frames outside the bitmap report as used: they are not ours to give.
    pub fn is_used(&self, addr: u64) -> bool {
        let frame = addr / FRAME_SIZE;
        frame >= self.frame_count || self.bit(frame)
    }

    pub fn free_frames(&self) -> u64 {
        self.free
    }

    pub fn total_frames(&self) -> u64 {
        self.frame_count
    }

    /// Words that cover real frames; any extra caller-provided words are
    /// never scanned.
    fn words(&self) -> usize {
        Self::bits_needed(self.frame_count)
    }

    fn bit(&self, frame: u64) -> bool {
        self.bits[(frame / WORD_BITS) as usize] & (1 << (frame % WORD_BITS)) != 0
    }

    /// Mask of bits `[lo, hi)` within one word, `lo < hi <= 64`.
    fn mask(lo: u64, hi: u64) -> u64 {
        let upper = if hi == WORD_BITS { u64::MAX } else { (1u64 << hi) - 1 };
        upper & !((1u64 << lo) - 1)
    }

    /// Sets frames `[first, end)` (clamped to the bitmap) to `used`, a word
    /// at a time, keeping the free count exact even for partially-set
    /// ranges.
    fn set_range(&mut self, first: u64, end: u64, used: bool) {
        let end = end.min(self.frame_count);
        let mut f = first;
        while f < end {
            let idx = (f / WORD_BITS) as usize;
            let lo = f % WORD_BITS;
            let hi = (end - idx as u64 * WORD_BITS).min(WORD_BITS);
            let m = Self::mask(lo, hi);
            let w = &mut self.bits[idx];
            if used {
                self.free -= u64::from((!*w & m).count_ones());
                *w |= m;
            } else {
                self.free += u64::from((*w & m).count_ones());
                *w &= !m;
            }
            f = (idx as u64 + 1) * WORD_BITS;
        }
    }

    /// First frame in `[first, end)` that is used (if `find_used`) or free
    /// (otherwise), testing a whole word per step so long runs of the wrong
    /// state cost one comparison per 64 frames.
    fn find_in(&self, first: u64, end: u64, find_used: bool) -> Option<u64> {
        let end = end.min(self.frame_count);
        let mut f = first;
        while f < end {
            let idx = (f / WORD_BITS) as usize;
            let lo = f % WORD_BITS;
            let hi = (end - idx as u64 * WORD_BITS).min(WORD_BITS);
            let w = if find_used { self.bits[idx] } else { !self.bits[idx] };
            let hits = w & Self::mask(lo, hi);
            if hits != 0 {
                return Some(idx as u64 * WORD_BITS + u64::from(hits.trailing_zeros()));
            }
            f = (idx as u64 + 1) * WORD_BITS;
        }
        None
    }

    fn next_used(&self, first: u64, end: u64) -> Option<u64> {
        self.find_in(first, end, true)
    }

    fn next_free_in(&self, first: u64, end: u64) -> Option<u64> {
        self.find_in(first, end, false)
    }

    fn next_free(&self, first: u64) -> Option<u64> {
        self.next_free_in(first, self.frame_count)
    }
}

// Hand-written so that logging an allocator prints its counters, not a
// dump of thousands of bitmap words.
impl core::fmt::Debug for FrameBitmap<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameBitmap")
            .field("total_frames", &self.frame_count)
            .field("free_frames", &self.free)
            .field("hint_word", &self.hint)
            .finish()
    }
}

fn align_up(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

#[cfg(test)]
mod tests;
