//! Writing jbd2 transactions (ordered mode, group commit).
//!
//! A commit logs every dirty metadata block of the running transaction:
//! the journal superblock is pointed at the log (`s_start`), descriptor
//! blocks with their tags and the block copies are written, the device is
//! flushed (so file data written earlier and the log are durable), then
//! the commit block is written with FUA: that write is the commit point.
//! The blocks are then written home, flushed, and the log is marked empty
//! again (`s_start = 0`, next sequence) without a flush of its own: until
//! the next flush makes that write durable, a crash replays a transaction
//! whose blocks are already home, which rewrites the same bytes (none of
//! its blocks can have been reused: blocks freed by a transaction wait for
//! its commit, and later metadata changes wait for a later commit, whose
//! first write points the log elsewhere). So a commit costs three flushes
//! (the FUA commit block is a write and a flush on virtio-blk), not four.
//! A crash before the commit block is durable leaves the old metadata;
//! after it, replay (by Kiln or e2fsck) redoes the transaction. The log is
//! emptied after each checkpoint, so no revoke records are needed.

use crate::bytes::*;
use crate::journal::*;
use crate::{BlockDevice, Ext4, Result, SECTOR_SIZE};
use alloc::vec;
use linux_abi::errno::Errno;

impl<D: BlockDevice> Ext4<D> {
    fn write_journal_block(&mut self, j: &Journal, pos: u32, data: &[u8], fua: bool) -> Result<()> {
        let phys = *j.blocks.get(pos as usize).ok_or(Errno::EUCLEAN)?;
        let s = phys * (self.bs / SECTOR_SIZE) as u64;
        if fua {
            self.dev.write_fua(s, data)
        } else {
            self.dev.write(s, data)
        }
    }

    /// How many home blocks fit in one transaction of this journal.
    fn transaction_capacity(&self, j: &Journal) -> usize {
        let per_desc = (self.bs - 12 - j.tail_size() - 16) / j.tag_size();
        let room = (j.maxlen - j.first) as usize - 1; // the commit block
                                                      // Each descriptor carries `per_desc` blocks in `per_desc + 1` slots.
        room / (per_desc + 1) * per_desc
    }

    /// Logs `blocks` (cached, dirty) in as many transactions as the journal
    /// size requires, checkpointing each.
    pub(crate) fn journal_commit(&mut self, blocks: &[u64]) -> Result<()> {
        let j = self.journal.clone().ok_or(Errno::EINVAL)?;
        let cap = self.transaction_capacity(&j).max(1);
        for chunk in blocks.chunks(cap) {
            self.commit_transaction(chunk)?;
        }
        Ok(())
    }

    fn commit_transaction(&mut self, blocks: &[u64]) -> Result<()> {
        let mut j = self.journal.take().ok_or(Errno::EINVAL)?;
        let r = self.commit_transaction_with(&mut j, blocks);
        self.journal = Some(j);
        r
    }

    fn commit_transaction_with(&mut self, j: &mut Journal, blocks: &[u64]) -> Result<()> {
        let tid = j.sequence;
        let bs = self.bs;
        // 1. Point the journal at the log about to be written.
        j.start = j.first;
        self.write_journal_sb_noflush(j)?;
        // 2. Descriptors and block copies.
        let per_desc = (bs - 12 - j.tail_size() - 16) / j.tag_size();
        let mut pos = j.first;
        for group in blocks.chunks(per_desc) {
            let mut desc = vec![0u8; bs];
            set_be32(&mut desc, 0, MAGIC);
            set_be32(&mut desc, 4, BLOCK_DESCRIPTOR);
            set_be32(&mut desc, 8, tid);
            let desc_pos = pos;
            pos = j.next(pos);
            let mut off = 12;
            for (k, &home) in group.iter().enumerate() {
                let mut data = self.cache.get(&home).cloned().ok_or(Errno::EUCLEAN)?;
                let mut flags = 0;
                if be32(&data, 0) == MAGIC {
                    set_be32(&mut data, 0, 0);
                    flags |= FLAG_ESCAPE;
                }
                if k > 0 {
                    flags |= FLAG_SAME_UUID;
                }
                if k + 1 == group.len() {
                    flags |= FLAG_LAST_TAG;
                }
                // Over the block as logged (escaped): what replay checks.
                let csum = if j.csum_v2v3() { j.tag_csum(tid, &data) } else { 0 };
                if j.incompat & INCOMPAT_CSUM_V3 != 0 {
                    set_be32(&mut desc, off, home as u32);
                    set_be32(&mut desc, off + 4, flags);
                    set_be32(&mut desc, off + 8, (home >> 32) as u32);
                    set_be32(&mut desc, off + 12, csum);
                } else {
                    set_be32(&mut desc, off, home as u32);
                    put(&mut desc, off + 4, &(csum as u16).to_be_bytes());
                    put(&mut desc, off + 6, &(flags as u16).to_be_bytes());
                    if j.is_64bit() {
                        set_be32(&mut desc, off + 8, (home >> 32) as u32);
                    }
                }
                off += j.tag_size();
                if k == 0 {
                    put(&mut desc, off, &j.uuid);
                    off += 16;
                }
                self.write_journal_block(j, pos, &data, false)?;
                pos = j.next(pos);
            }
            if j.csum_v2v3() {
                let c = j.block_csum(&desc, bs - 4);
                set_be32(&mut desc, bs - 4, c);
            }
            self.write_journal_block(j, desc_pos, &desc, false)?;
        }
        // 3. Everything before the commit block is durable first.
        self.dev.flush()?;
        let mut commit = vec![0u8; bs];
        set_be32(&mut commit, 0, MAGIC);
        set_be32(&mut commit, 4, BLOCK_COMMIT);
        set_be32(&mut commit, 8, tid);
        if j.csum_v2v3() {
            let c = j.block_csum(&commit, 16);
            set_be32(&mut commit, 16, c);
        }
        self.write_journal_block(j, pos, &commit, true)?;
        // 4. Checkpoint, then empty the log.
        for &b in blocks {
            self.checkpoint_block(b)?;
        }
        self.dev.flush()?;
        j.start = 0;
        j.sequence = tid.wrapping_add(1);
        self.write_journal_sb_noflush(j)
    }

    fn write_journal_sb_noflush(&mut self, j: &mut Journal) -> Result<()> {
        set_be32(&mut j.sb, 0x18, j.sequence);
        set_be32(&mut j.sb, 0x1C, j.start);
        if j.csum_v2v3() {
            let c = j.sb_csum();
            set_be32(&mut j.sb, 0xFC, c);
        }
        let mut b = vec![0u8; self.bs];
        put(&mut b, 0, &j.sb);
        // The rest of block 0 is unused by jbd2 (the users array lives in
        // the first 1024 bytes); zeros are what mkfs wrote there.
        self.write_journal_block(j, 0, &b, false)
    }
}
