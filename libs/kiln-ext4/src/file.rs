//! File contents: reading through the block map (holes and unwritten
//! extents read as zeros), writing with extent allocation, truncation,
//! `fallocate`, and the inode's block count. Data goes straight to the
//! device, before the metadata that maps it is committed (ordered mode).

use crate::extent::{find, normalize, Extent, ExtentMap, MAX_INIT_LEN};
use crate::inode::{Inode, TimeField, Timestamp, FL_INLINE_DATA};
use crate::{BlockDevice, Ext4, Result};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// Splits `extents` at logical blocks `lo` and `hi`, returning the pieces
/// inside `[lo, hi)` and leaving the rest in place.
pub(crate) fn carve(extents: &mut Vec<Extent>, lo: u64, hi: u64) -> Vec<Extent> {
    let mut kept = Vec::with_capacity(extents.len());
    let mut cut = Vec::new();
    for e in extents.drain(..) {
        let (s, t) = (e.logical as u64, e.end());
        if t <= lo || s >= hi {
            kept.push(e);
            continue;
        }
        let piece = |from: u64, to: u64| Extent {
            logical: from as u32,
            len: (to - from) as u32,
            phys: e.phys + (from - s),
            uninit: e.uninit,
        };
        if s < lo {
            kept.push(piece(s, lo));
        }
        cut.push(piece(s.max(lo), t.min(hi)));
        if t > hi {
            kept.push(piece(hi, t));
        }
    }
    *extents = kept;
    cut
}

impl<D: BlockDevice> Ext4<D> {
    /// Whether a symlink keeps its target in `i_block`.
    pub(crate) fn is_fast_symlink(&self, inode: &Inode) -> bool {
        let xattr_sectors = if inode.file_acl() != 0 { (self.bs / 512) as u64 } else { 0 };
        inode.is_symlink() && inode.size() < 60 && inode.sectors(self.bs) == xattr_sectors
    }

    pub(crate) fn file_map(&mut self, inode: &Inode) -> Result<ExtentMap> {
        if inode.flags() & FL_INLINE_DATA != 0 {
            return Err(Errno::EUCLEAN);
        }
        if self.is_fast_symlink(inode) {
            return Ok(ExtentMap { extents: Vec::new(), tree_blocks: Vec::new() });
        }
        if inode.has_extents() {
            self.read_extent_map(inode)
        } else {
            self.read_indirect_map(inode)
        }
    }

    /// Reads `buf.len()` bytes at `offset` of a file (of any inode with a
    /// block map); returns how many were read (short at end of file).
    pub fn read(&mut self, ino: u32, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let inode = self.live_inode(ino)?;
        if inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        let map = self.file_map(&inode)?;
        self.read_mapped(&inode, &map, offset, buf)
    }

    pub(crate) fn read_mapped(&mut self, inode: &Inode, map: &ExtentMap, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let size = inode.size();
        if offset >= size {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(size - offset) as usize;
        let bs = self.bs as u64;
        let mut done = 0usize;
        let mut block = vec![0u8; self.bs];
        while done < n {
            let pos = offset + done as u64;
            let lblk = pos / bs;
            let in_block = (pos % bs) as usize;
            let lblk32 = u32::try_from(lblk).map_err(|_| Errno::EFBIG)?;
            match find(&map.extents, lblk32) {
                Some(e) if !e.uninit => {
                    let phys = e.phys + (lblk - e.logical as u64);
                    // Whole blocks of the run go straight into `buf`.
                    let run = (e.end() - lblk) as usize;
                    let whole = ((n - done) / self.bs).min(run);
                    if in_block == 0 && whole > 0 {
                        let dst = &mut buf[done..done + whole * self.bs];
                        self.read_run(phys, dst)?;
                        done += whole * self.bs;
                        continue;
                    }
                    self.read_data_into(phys, &mut block)?;
                    let take = (self.bs - in_block).min(n - done);
                    buf[done..done + take].copy_from_slice(&block[in_block..in_block + take]);
                    done += take;
                }
                _ => {
                    let take = (self.bs - in_block).min(n - done);
                    buf[done..done + take].fill(0);
                    done += take;
                }
            }
        }
        Ok(n)
    }

    /// [`Ext4::read`] into `bufs` laid end to end (a page cache's frames,
    /// each a whole number of 512-byte sectors): runs of whole blocks go
    /// from the device into the buffers in one scattered read each.
    /// Returns the bytes read (short at the end of the file); bytes past
    /// them are left as they were.
    pub fn read_scatter(&mut self, ino: u32, offset: u64, bufs: &mut [&mut [u8]]) -> Result<usize> {
        let inode = self.live_inode(ino)?;
        if inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        let map = self.file_map(&inode)?;
        let size = inode.size();
        if offset >= size {
            return Ok(0);
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let n = (total as u64).min(size - offset) as usize;
        let bs = self.bs as u64;
        let mut done = 0usize;
        let mut block = Vec::new();
        while done < n {
            let pos = offset + done as u64;
            let lblk = pos / bs;
            let in_block = (pos % bs) as usize;
            let lblk32 = u32::try_from(lblk).map_err(|_| Errno::EFBIG)?;
            let take = (self.bs - in_block).min(n - done);
            match find(&map.extents, lblk32) {
                Some(e) if !e.uninit => {
                    let phys = e.phys + (lblk - e.logical as u64);
                    let run = (e.end() - lblk) as usize;
                    let whole = ((n - done) / self.bs).min(run);
                    let count = whole as u64;
                    let uncached = self.cache.range(phys..phys + count).next().is_none();
                    if in_block == 0 && whole > 0 && uncached {
                        if phys.checked_add(count).is_none_or(|e| e > self.sb.blocks_count()) {
                            return Err(Errno::EUCLEAN);
                        }
                        let mut parts = pieces(bufs, done, whole * self.bs)?;
                        self.dev.read_scatter(phys * (bs / 512), &mut parts)?;
                        done += whole * self.bs;
                        continue;
                    }
                    if block.is_empty() {
                        block.try_reserve_exact(self.bs).map_err(|_| Errno::ENOMEM)?;
                        block.resize(self.bs, 0);
                    }
                    self.read_data_into(phys, &mut block)?;
                    scatter_copy(bufs, done, &block[in_block..in_block + take]);
                }
                _ => scatter_zero(bufs, done, take),
            }
            done += take;
        }
        Ok(n)
    }

    fn read_run(&mut self, phys: u64, dst: &mut [u8]) -> Result<()> {
        // Metadata blocks in the cache never back file data, but a
        // directory read through here might: keep it simple and per block
        // when any block of the run is cached.
        let count = (dst.len() / self.bs) as u64;
        if self.cache.range(phys..phys + count).next().is_some() {
            for (i, chunk) in dst.chunks_mut(self.bs).enumerate() {
                self.read_data_into(phys + i as u64, chunk)?;
            }
            return Ok(());
        }
        if phys.checked_add(count).is_none_or(|e| e > self.sb.blocks_count()) {
            return Err(Errno::EUCLEAN);
        }
        self.dev.read(phys * (self.bs / 512) as u64, dst)
    }

    /// Recomputes `i_blocks` from the mapping.
    pub(crate) fn set_block_count(&self, inode: &mut Inode, extents: &[Extent], tree_blocks: u64) {
        let data: u64 = extents.iter().map(|e| e.len as u64).sum();
        let xattr = if inode.file_acl() != 0 { 1 } else { 0 };
        inode.set_sectors((data + tree_blocks + xattr) * (self.bs / 512) as u64);
    }

    pub(crate) fn max_file_size(&self) -> u64 {
        (u32::MAX as u64) * self.bs as u64
    }

    pub(crate) fn writable_file(&mut self, ino: u32) -> Result<Inode> {
        self.writable()?;
        let inode = self.live_inode(ino)?;
        if inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        if !inode.is_reg() {
            return Err(Errno::EINVAL);
        }
        Ok(inode)
    }

    /// Writes `data` at `offset`; allocates blocks for holes, converts
    /// unwritten extents, extends the size.
    pub(crate) fn write_inner(&mut self, ino: u32, offset: u64, data: &[u8], now: Timestamp) -> Result<usize> {
        let mut inode = self.writable_file(ino)?;
        if data.is_empty() {
            return Ok(0);
        }
        self.write_inode_data(&mut inode, offset, data)?;
        inode.set_time(TimeField::Modify, now);
        inode.set_time(TimeField::Change, now);
        self.store_inode(&mut inode)?;
        self.maybe_commit()?;
        Ok(data.len())
    }

    /// `write_back`: a write that keeps the inode's times.
    pub(crate) fn write_back_inner(&mut self, ino: u32, offset: u64, data: &[u8]) -> Result<()> {
        let mut inode = self.writable_file(ino)?;
        if data.is_empty() {
            return Ok(());
        }
        self.write_inode_data(&mut inode, offset, data)?;
        self.store_inode(&mut inode)?;
        self.maybe_commit()
    }

    /// The block work of a write; the caller stores the inode.
    pub(crate) fn write_inode_data(&mut self, inode: &mut Inode, offset: u64, data: &[u8]) -> Result<()> {
        let ino = inode.ino;
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        if end > self.max_file_size() {
            return Err(Errno::EFBIG);
        }
        let bs = self.bs as u64;
        let (first, last) = (offset / bs, (end - 1) / bs);
        let ExtentMap { mut extents, tree_blocks } = self.file_map(inode)?;
        let old = extents.clone();
        // Unwritten pieces in range become written (zero-filled around the data).
        let mut pieces = carve(&mut extents, first, last + 1);
        for p in pieces.iter_mut() {
            p.uninit = false;
        }
        // Holes in range get new blocks.
        let mut holes = Vec::new();
        let mut cursor = first;
        pieces.sort_by_key(|p| p.logical);
        for p in &pieces {
            if (p.logical as u64) > cursor {
                holes.push((cursor, p.logical as u64));
            }
            cursor = p.end();
        }
        if cursor <= last {
            holes.push((cursor, last + 1));
        }
        let mut goal = old.iter().rev().find(|e| (e.logical as u64) < first).map_or_else(
            || self.group_first_block(self.block_group_of_inode(ino)),
            |e| e.phys + e.len as u64 + first.saturating_sub(e.end()),
        );
        let mut allocated = Vec::new();
        for (mut lo, hi) in holes {
            while lo < hi {
                let want = (hi - lo).min(MAX_INIT_LEN as u64) as u32;
                let got = self.alloc_blocks(goal, want);
                let (phys, n) = match got {
                    Ok(v) => v,
                    Err(e) => {
                        for a in &allocated {
                            let a: &Extent = a;
                            let _ = self.free_blocks(a.phys, a.len as u64);
                        }
                        return Err(e);
                    }
                };
                allocated.push(Extent { logical: lo as u32, len: n, phys, uninit: false });
                goal = phys + n as u64;
                lo += n as u64;
            }
        }
        pieces.extend_from_slice(&allocated);
        pieces.sort_by_key(|p| p.logical);
        // Write the data, block run by block run.
        let mut buf = vec![0u8; self.bs];
        for p in &pieces {
            let mut l = p.logical as u64;
            while l < p.end() {
                let phys = p.phys + (l - p.logical as u64);
                let bstart = l * bs;
                let full = bstart >= offset && bstart + bs <= end;
                if full {
                    // A run of whole blocks in one device write.
                    let mut n = 1;
                    while l + n < p.end() && (l + n + 1) * bs <= end {
                        n += 1;
                    }
                    let src = &data[(bstart - offset) as usize..(bstart - offset + n * bs) as usize];
                    self.write_run(phys, src)?;
                    l += n;
                    continue;
                }
                let was_written = find(&old, l as u32).is_some_and(|e| !e.uninit);
                if was_written {
                    self.read_data_into(phys, &mut buf)?;
                } else {
                    buf.fill(0);
                }
                let from = offset.max(bstart);
                let to = end.min(bstart + bs);
                buf[(from - bstart) as usize..(to - bstart) as usize]
                    .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
                self.write_data(phys, &buf)?;
                l += 1;
            }
        }
        extents.extend_from_slice(&pieces);
        normalize(&mut extents);
        if extents != old {
            let used = self.write_map(inode, &extents, &tree_blocks)?;
            self.set_block_count(inode, &extents, used);
        }
        if end > inode.size() {
            inode.set_size(end);
        }
        Ok(())
    }

    fn write_run(&mut self, phys: u64, src: &[u8]) -> Result<()> {
        let count = (src.len() / self.bs) as u64;
        for b in phys..phys + count {
            self.forget_meta(b);
        }
        if phys.checked_add(count).is_none_or(|e| e > self.sb.blocks_count()) {
            return Err(Errno::EUCLEAN);
        }
        self.dev.write(phys * (self.bs / 512) as u64, src)
    }

    pub(crate) fn block_group_of_inode(&self, ino: u32) -> u32 {
        (ino.saturating_sub(1)) / self.sb.inodes_per_group()
    }

    /// Sets a file's size: frees blocks past a new end, zeroes the tail of
    /// the last partial block, leaves growth sparse.
    pub(crate) fn truncate_inner(&mut self, ino: u32, size: u64, now: Timestamp) -> Result<()> {
        let mut inode = self.writable_file(ino)?;
        if size > self.max_file_size() {
            return Err(Errno::EFBIG);
        }
        self.truncate_inode(&mut inode, size)?;
        inode.set_time(TimeField::Modify, now);
        inode.set_time(TimeField::Change, now);
        self.store_inode(&mut inode)?;
        self.maybe_commit()
    }

    /// The block work of a truncation; the caller stores the inode.
    pub(crate) fn truncate_inode(&mut self, inode: &mut Inode, size: u64) -> Result<()> {
        let bs = self.bs as u64;
        let ExtentMap { mut extents, tree_blocks } = self.file_map(inode)?;
        if size < inode.size() {
            let keep = size.div_ceil(bs);
            let cut = carve(&mut extents, keep, u64::MAX);
            for c in &cut {
                self.free_blocks(c.phys, c.len as u64)?;
            }
            // Zero the rest of the last block so a later extension reads zeros.
            if !size.is_multiple_of(bs) {
                if let Some(e) = find(&extents, (size / bs) as u32).copied().filter(|e| !e.uninit) {
                    let phys = e.phys + (size / bs - e.logical as u64);
                    let mut buf = vec![0u8; self.bs];
                    self.read_data_into(phys, &mut buf)?;
                    buf[(size % bs) as usize..].fill(0);
                    self.write_data(phys, &buf)?;
                }
            }
            let used = self.write_map(inode, &extents, &tree_blocks)?;
            self.set_block_count(inode, &extents, used);
        }
        inode.set_size(size);
        Ok(())
    }

    /// Allocates unwritten extents over the holes of `[offset, offset+len)`;
    /// extends the size unless `keep_size`.
    pub(crate) fn fallocate_inner(
        &mut self,
        ino: u32,
        offset: u64,
        len: u64,
        keep_size: bool,
        now: Timestamp,
    ) -> Result<()> {
        let mut inode = self.writable_file(ino)?;
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
        if end > self.max_file_size() {
            return Err(Errno::EFBIG);
        }
        let bs = self.bs as u64;
        let (first, last) = (offset / bs, (end - 1) / bs);
        if !inode.has_extents() {
            // Block maps cannot record unwritten blocks (ext2/ext3 too
            // answer EOPNOTSUPP).
            return Err(Errno::EOPNOTSUPP);
        }
        let ExtentMap { mut extents, tree_blocks } = self.read_extent_map(&inode)?;
        let mut cursor = first;
        let mut holes = Vec::new();
        for e in extents.iter().filter(|e| e.end() > first && (e.logical as u64) <= last) {
            if (e.logical as u64) > cursor {
                holes.push((cursor, e.logical as u64));
            }
            cursor = e.end();
        }
        if cursor <= last {
            holes.push((cursor, last + 1));
        }
        let mut goal = self.group_first_block(self.block_group_of_inode(ino));
        let mut added = Vec::new();
        for (mut lo, hi) in holes {
            while lo < hi {
                let want = (hi - lo).min(crate::extent::MAX_UNINIT_LEN as u64) as u32;
                let (phys, n) = match self.alloc_blocks(goal, want) {
                    Ok(v) => v,
                    Err(e) => {
                        for a in &added {
                            let a: &Extent = a;
                            let _ = self.free_blocks(a.phys, a.len as u64);
                        }
                        return Err(e);
                    }
                };
                added.push(Extent { logical: lo as u32, len: n, phys, uninit: true });
                goal = phys + n as u64;
                lo += n as u64;
            }
        }
        if !added.is_empty() {
            extents.extend_from_slice(&added);
            normalize(&mut extents);
            let used = self.write_extent_tree(&mut inode, &extents, &tree_blocks)?;
            self.set_block_count(&mut inode, &extents, used);
        }
        if !keep_size && end > inode.size() {
            inode.set_size(end);
        }
        inode.set_time(TimeField::Change, now);
        if !keep_size {
            inode.set_time(TimeField::Modify, now);
        }
        self.store_inode(&mut inode)?;
        self.maybe_commit()
    }
}

/// The parts of `bufs` (laid end to end) that [at, at + len) covers.
fn pieces<'a>(bufs: &'a mut [&mut [u8]], at: usize, len: usize) -> Result<Vec<&'a mut [u8]>> {
    let mut out = Vec::new();
    let end = at + len;
    let mut base = 0;
    for b in bufs.iter_mut() {
        let blen = b.len();
        let (s, e) = (at.max(base), end.min(base + blen));
        if s < e {
            out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
            out.push(&mut b[s - base..e - base]);
        }
        base += blen;
        if base >= end {
            break;
        }
    }
    Ok(out)
}

/// Copies `data` into `bufs` (laid end to end) at `at`.
fn scatter_copy(bufs: &mut [&mut [u8]], at: usize, data: &[u8]) {
    let mut base = 0;
    for b in bufs.iter_mut() {
        let blen = b.len();
        let (s, e) = (at.max(base), (at + data.len()).min(base + blen));
        if s < e {
            b[s - base..e - base].copy_from_slice(&data[s - at..e - at]);
        }
        base += blen;
    }
}

/// Zeroes `len` bytes of `bufs` (laid end to end) at `at`.
fn scatter_zero(bufs: &mut [&mut [u8]], at: usize, len: usize) {
    let mut base = 0;
    for b in bufs.iter_mut() {
        let blen = b.len();
        let (s, e) = (at.max(base), (at + len).min(base + blen));
        if s < e {
            b[s - base..e - base].fill(0);
        }
        base += blen;
    }
}
