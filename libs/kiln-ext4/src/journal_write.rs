//! Writing jbd2 transactions (ordered mode, group commit, lazy
//! checkpoint).
//!
//! A commit logs every dirty metadata block of the running transaction
//! after the transactions already in the log: when the log is empty, the
//! journal superblock is first pointed at it (`s_start`, `s_sequence`);
//! descriptor blocks with their tags and the block copies are written, the
//! device is flushed (so file data written earlier and the log are
//! durable), then the commit block is written with FUA: that write is the
//! commit point. So a commit costs two flushes (the FUA commit block is a
//! write and a flush on virtio-blk), as jbd2's. A crash before the commit
//! block is durable leaves the metadata of the transactions before it;
//! after it, replay (by Kiln or e2fsck) redoes every committed transaction
//! in order.
//!
//! The blocks stay in the log, and the cache keeps their newest committed
//! copies, until a checkpoint writes them home, flushes, and marks the log
//! empty (flushed too). A checkpoint runs when the log is half full (so the
//! next transaction, at most half the log, always fits without wrapping),
//! when the cache would pin too many blocks, at unmount and remount
//! read-only, and at a commit that freed a block still in the log: a freed
//! block may be reused for file data as soon as that commit is durable,
//! and replaying an older copy over it would corrupt the file, so the log
//! is emptied first. That is what jbd2's revoke records are for; Kiln
//! never needs them.

use crate::bytes::*;
use crate::journal::*;
use crate::{BlockDevice, Ext4, Result, SECTOR_SIZE};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

/// The part of a commit that only waits for the device: a flush, then the
/// commit block written with FUA (the commit point). [`Ext4::commit_start`]
/// hands it out so that the kernel can write it without holding the file
/// system's lock (new operations join the next transaction meanwhile);
/// [`Ext4::finish_tail`] writes it through the library's own device.
#[derive(Debug)]
pub struct CommitTail {
    /// The log's blocks (sector, data): the journal superblock of an empty
    /// log, the descriptors and the block copies.
    pub log: Vec<(u64, Vec<u8>)>,
    /// The commit block and its first sector; `None`: a flush only (no
    /// metadata changed, but file data may have been written).
    pub commit_block: Option<(u64, Vec<u8>)>,
    /// A checkpoint due after this commit, taken when the transaction
    /// closed: written after the commit block.
    pub checkpoint: Option<CheckpointOut>,
}

/// A checkpoint written by the caller after a commit's tail: every logged
/// block's committed copy to its home (sector, data), a **flush**, the
/// journal superblock marking the log empty, a **flush**. The copies are
/// taken when the transaction closes, so the operations that run
/// meanwhile change only the cache.
#[derive(Debug)]
pub struct CheckpointOut {
    pub home: Vec<(u64, Vec<u8>)>,
    pub journal_sb: (u64, Vec<u8>),
}

impl<D: BlockDevice> Ext4<D> {
    /// The first sector of journal block `pos`.
    fn journal_sector(&self, j: &Journal, pos: u32) -> Result<u64> {
        let phys = *j.blocks.get(pos as usize).ok_or(Errno::EUCLEAN)?;
        Ok(phys * (self.bs / SECTOR_SIZE) as u64)
    }

    /// How many home blocks fit in one transaction: half the log.
    fn transaction_capacity(&self, j: &Journal) -> usize {
        let per_desc = (self.bs - 12 - j.tail_size() - 16) / j.tag_size();
        let room = log_half(j).saturating_sub(1); // the commit block
                                                  // Each descriptor carries `per_desc` blocks in `per_desc + 1` slots.
        room / (per_desc + 1) * per_desc
    }

    /// Logs `blocks` (cached, dirty) in as many transactions as half the
    /// journal requires; checkpoints when the log is half full, or when
    /// `freed_logged` (a block freed by this commit is still in the log).
    pub(crate) fn journal_commit(&mut self, blocks: &[u64], freed_logged: bool) -> Result<()> {
        let j = self.journal.clone().ok_or(Errno::EINVAL)?;
        let cap = self.transaction_capacity(&j).max(1);
        for chunk in blocks.chunks(cap) {
            if self.log_wants_checkpoint() {
                self.checkpoint()?;
            }
            self.commit_transaction(chunk)?;
        }
        if freed_logged || self.log_wants_checkpoint() {
            self.checkpoint()?;
        }
        Ok(())
    }

    fn commit_transaction(&mut self, blocks: &[u64]) -> Result<()> {
        let tail = self.log_transaction(blocks)?;
        self.finish_tail(&tail)
    }

    /// Whether `blocks` can be committed as one transaction whose tail
    /// (the flush and the commit block) the caller writes without the
    /// file system's lock: it fits in one transaction and no checkpoint
    /// is due first.
    pub(crate) fn can_commit_concurrently(&self, blocks: usize) -> bool {
        match &self.journal {
            Some(j) => blocks <= self.transaction_capacity(j) && !self.log_wants_checkpoint(),
            None => false,
        }
    }

    /// Steps 1 and 2 of a commit, made ready: the journal superblock of an
    /// empty log, the descriptors and block copies, for the tail to write
    /// first; the file data written before goes to the device now
    /// (`submit`), and the blocks count as logged from now on (the cache
    /// keeps them). Returns the tail for [`Ext4::finish_tail`].
    pub(crate) fn log_transaction(&mut self, blocks: &[u64]) -> Result<CommitTail> {
        let mut j = self.journal.take().ok_or(Errno::EINVAL)?;
        let r = self.log_transaction_with(&mut j, blocks);
        self.journal = Some(j);
        let tail = r?;
        for &b in blocks {
            self.logged.insert(b);
        }
        self.dev.submit()?;
        Ok(tail)
    }

    fn log_transaction_with(&mut self, j: &mut Journal, blocks: &[u64]) -> Result<CommitTail> {
        let tid = j.next_tid;
        let bs = self.bs;
        let per_desc = (bs - 12 - j.tail_size() - 16) / j.tag_size();
        let slots = blocks.len() + blocks.len().div_ceil(per_desc) + 1;
        let mut log = Vec::new();
        log.try_reserve(slots).map_err(|_| Errno::ENOMEM)?;
        if j.start == 0 {
            j.head = j.first;
        }
        if j.head as usize + slots > j.maxlen as usize {
            // The checkpoint at half full keeps this from happening.
            return Err(Errno::EUCLEAN);
        }
        // 1. An empty log: point the journal at the one about to be written.
        if j.start == 0 {
            j.start = j.first;
            j.sequence = tid;
            log.push(self.journal_sb_block(j)?);
        }
        // 2. Descriptors and block copies.
        let mut pos = j.head;
        for group in blocks.chunks(per_desc) {
            let mut desc = vec![0u8; bs];
            set_be32(&mut desc, 0, MAGIC);
            set_be32(&mut desc, 4, BLOCK_DESCRIPTOR);
            set_be32(&mut desc, 8, tid);
            let desc_pos = pos;
            pos += 1;
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
                log.push((self.journal_sector(j, pos)?, data));
                pos += 1;
            }
            if j.csum_v2v3() {
                let c = j.block_csum(&desc, bs - 4);
                set_be32(&mut desc, bs - 4, c);
            }
            log.push((self.journal_sector(j, desc_pos)?, desc));
        }
        // 3 and 4 (the flush, the commit block) are the tail.
        let mut commit = vec![0u8; bs];
        set_be32(&mut commit, 0, MAGIC);
        set_be32(&mut commit, 4, BLOCK_COMMIT);
        set_be32(&mut commit, 8, tid);
        if j.csum_v2v3() {
            let c = j.block_csum(&commit, 16);
            set_be32(&mut commit, 16, c);
        }
        let commit_block = Some((self.journal_sector(j, pos)?, commit));
        j.head = pos + 1;
        j.next_tid = tid.wrapping_add(1);
        Ok(CommitTail { log, commit_block, checkpoint: None })
    }

    /// The checkpoint of everything logged, as of now (the transaction
    /// just closed: every cached copy of a logged block is committed, or
    /// is by the tail's end), for the caller to write after the tail.
    pub(crate) fn checkpoint_out(&mut self) -> Result<CheckpointOut> {
        let mut j = self.journal.clone().ok_or(Errno::EINVAL)?;
        let mut home = Vec::new();
        home.try_reserve(self.logged.len()).map_err(|_| Errno::ENOMEM)?;
        for &b in &self.logged {
            // A block freed since it was logged is gone from the cache
            // and needs no home copy.
            if let Some(d) = self.cache.get(&b) {
                home.push((self.sector_of(b)?, d.clone()));
            }
        }
        j.start = 0;
        j.sequence = j.next_tid;
        let journal_sb = self.journal_sb_block(&mut j)?;
        Ok(CheckpointOut { home, journal_sb })
    }

    /// After a tail whose checkpoint was written: the log is empty.
    pub(crate) fn checkpoint_done(&mut self) {
        if let Some(j) = self.journal.as_mut() {
            j.start = 0;
            j.sequence = j.next_tid;
            j.head = j.first;
            set_be32(&mut j.sb, 0x18, j.sequence);
            set_be32(&mut j.sb, 0x1C, j.start);
            if j.csum_v2v3() {
                let c = j.sb_csum();
                set_be32(&mut j.sb, 0xFC, c);
            }
        }
        self.logged.clear();
    }

    /// The tail of a commit: the log's blocks; 3. **flush**: the file data
    /// written before and the log are durable; 4. the commit block with
    /// **FUA**: the commit point; then a checkpoint that came with it. (A
    /// tail with no commit block only flushes.)
    pub fn finish_tail(&mut self, tail: &CommitTail) -> Result<()> {
        for (sector, data) in &tail.log {
            self.dev.write(*sector, data)?;
        }
        self.dev.flush()?;
        if let Some((sector, block)) = &tail.commit_block {
            self.dev.write_fua(*sector, block)?;
        }
        if let Some(c) = &tail.checkpoint {
            for (sector, data) in &c.home {
                self.dev.write(*sector, data)?;
            }
            self.dev.flush()?;
            self.dev.write(c.journal_sb.0, &c.journal_sb.1)?;
            self.dev.flush()?;
        }
        Ok(())
    }

    /// Whether the log should be checkpointed now: half full (in slots or
    /// in blocks the cache must keep).
    pub(crate) fn log_wants_checkpoint(&self) -> bool {
        match &self.journal {
            Some(j) if j.start != 0 => {
                (j.head - j.first) as usize > log_half(j) || self.logged.len() > crate::fs::CACHE_CLEAN_LIMIT / 2
            }
            _ => false,
        }
    }

    /// Writes every block of the log home (the cache holds their newest
    /// committed copies: nothing runs between a commit and this), flushes,
    /// and marks the log empty, durably. Only between operations, with
    /// nothing dirty that is not committed.
    pub(crate) fn checkpoint(&mut self) -> Result<()> {
        let mut j = match self.journal.take() {
            Some(j) => j,
            None => return Ok(()),
        };
        let r = self.checkpoint_with(&mut j);
        self.journal = Some(j);
        r
    }

    fn checkpoint_with(&mut self, j: &mut Journal) -> Result<()> {
        if j.start == 0 {
            return Ok(());
        }
        let blocks: alloc::vec::Vec<u64> = self.logged.iter().copied().collect();
        for b in blocks {
            // A block freed since it was logged is gone from the cache
            // and needs no home copy.
            self.checkpoint_block(b)?;
        }
        self.dev.flush()?;
        j.start = 0;
        j.sequence = j.next_tid;
        j.head = j.first;
        self.write_journal_sb_noflush(j)?;
        self.dev.flush()?;
        self.logged.clear();
        Ok(())
    }

    fn write_journal_sb_noflush(&mut self, j: &mut Journal) -> Result<()> {
        let (sector, b) = self.journal_sb_block(j)?;
        self.dev.write(sector, &b)
    }

    /// Block 0 of the journal as `j` says (its superblock updated), and
    /// its first sector.
    fn journal_sb_block(&self, j: &mut Journal) -> Result<(u64, Vec<u8>)> {
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
        Ok((self.journal_sector(j, 0)?, b))
    }
}

/// Half the log's slots: the most one transaction takes, and the fill at
/// which the log is checkpointed.
fn log_half(j: &Journal) -> usize {
    ((j.maxlen - j.first) / 2) as usize
}
