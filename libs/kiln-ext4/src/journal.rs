//! The jbd2 journal: its superblock (big-endian, in the journal inode's
//! first block), the block formats (descriptor with block tags, commit,
//! revoke; csum v2/v3 tails and tag checksums) and replay at mount.
//!
//! Replay follows jbd2's three passes: scan from `s_start` for the last
//! committed transaction (a block whose magic, sequence or checksum is
//! wrong ends the log), collect the revoke records of committed
//! transactions, then write every logged block not revoked by the same or
//! a later transaction to its home. The scan is bounded by the journal
//! length, so a corrupt log cannot loop.

use crate::bytes::*;
use crate::checksum::crc32c;
use crate::superblock::{Superblock, INCOMPAT_RECOVER, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE};
use crate::{BlockDevice, Ext4, Result, SECTOR_SIZE};
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

pub const MAGIC: u32 = 0xC03B_3998;
pub const BLOCK_DESCRIPTOR: u32 = 1;
pub const BLOCK_COMMIT: u32 = 2;
const BLOCK_SB_V1: u32 = 3;
const BLOCK_SB_V2: u32 = 4;
pub const BLOCK_REVOKE: u32 = 5;

pub const INCOMPAT_REVOKE: u32 = 0x1;
pub const INCOMPAT_64BIT: u32 = 0x2;
const INCOMPAT_ASYNC_COMMIT: u32 = 0x4;
pub const INCOMPAT_CSUM_V2: u32 = 0x8;
pub const INCOMPAT_CSUM_V3: u32 = 0x10;
const INCOMPAT_KNOWN: u32 =
    INCOMPAT_REVOKE | INCOMPAT_64BIT | INCOMPAT_ASYNC_COMMIT | INCOMPAT_CSUM_V2 | INCOMPAT_CSUM_V3;

pub const FLAG_ESCAPE: u32 = 1;
pub const FLAG_SAME_UUID: u32 = 2;
pub const FLAG_LAST_TAG: u32 = 8;

/// The journal as mounted: where its blocks are and its header fields.
#[derive(Clone)]
pub struct Journal {
    /// Physical block of each journal block.
    pub blocks: Vec<u64>,
    pub first: u32,
    pub maxlen: u32,
    /// `s_sequence`: the next transaction id when the log is empty.
    pub sequence: u32,
    pub start: u32,
    pub incompat: u32,
    pub uuid: [u8; 16],
    pub seed: u32,
    /// The journal superblock (1024 bytes).
    pub sb: Vec<u8>,
    /// Where the next transaction goes: `first` when the log is empty
    /// (`start == 0`), else just past the last committed one.
    pub head: u32,
    /// The id of the next transaction; `sequence` is that of the oldest
    /// one still in the log while it is not empty.
    pub next_tid: u32,
}

impl Journal {
    pub fn csum_v2v3(&self) -> bool {
        self.incompat & (INCOMPAT_CSUM_V2 | INCOMPAT_CSUM_V3) != 0
    }
    pub fn is_64bit(&self) -> bool {
        self.incompat & INCOMPAT_64BIT != 0
    }
    pub fn tag_size(&self) -> usize {
        if self.incompat & INCOMPAT_CSUM_V3 != 0 {
            16
        } else if self.is_64bit() {
            12
        } else {
            8
        }
    }
    pub fn tail_size(&self) -> usize {
        if self.csum_v2v3() {
            4
        } else {
            0
        }
    }
    /// A transaction larger than this is committed early.
    pub fn max_transaction_blocks(&self) -> usize {
        ((self.maxlen - self.first) / 4).max(8) as usize
    }
    pub fn next(&self, pos: u32) -> u32 {
        if pos + 1 >= self.maxlen {
            self.first
        } else {
            pos + 1
        }
    }
    /// The checksum of a block with its 4-byte checksum field at `at` zeroed.
    pub fn block_csum(&self, b: &[u8], at: usize) -> u32 {
        let mut t = b.to_vec();
        set_be32(&mut t, at, 0);
        crc32c(self.seed, &t)
    }
    pub fn tag_csum(&self, seq: u32, data: &[u8]) -> u32 {
        crc32c(crc32c(self.seed, &seq.to_be_bytes()), data)
    }
    pub fn sb_csum(&self) -> u32 {
        let mut t = self.sb.clone();
        set_be32(&mut t, 0xFC, 0);
        crc32c(!0, &t)
    }

    pub(crate) fn load<D: BlockDevice>(fs: &mut Ext4<D>) -> Result<Journal> {
        let jino = fs.sb.journal_inum();
        if fs.sb.journal_dev() != 0 || jino == 0 || jino >= fs.sb.first_ino() {
            return Err(Errno::EINVAL);
        }
        let inode = fs.live_inode(jino)?;
        let map = fs.file_map(&inode)?;
        let first_phys = crate::extent::find(&map.extents, 0).ok_or(Errno::EUCLEAN)?.phys;
        let block0 = fs.read_block_uncached(first_phys)?;
        let sb = slice(&block0, 0, 1024).to_vec();
        if be32(&sb, 0) != MAGIC || !matches!(be32(&sb, 4), BLOCK_SB_V1 | BLOCK_SB_V2) {
            return Err(Errno::EUCLEAN);
        }
        let v2 = be32(&sb, 4) == BLOCK_SB_V2;
        let incompat = if v2 { be32(&sb, 0x28) } else { 0 };
        if incompat & !INCOMPAT_KNOWN != 0 {
            return Err(Errno::EINVAL);
        }
        let maxlen = be32(&sb, 0x10);
        let first = be32(&sb, 0x14);
        let in_inode = inode.size() / fs.bs as u64;
        if be32(&sb, 0xC) as usize != fs.bs || maxlen as u64 > in_inode || first == 0 || first >= maxlen || maxlen < 16
        {
            return Err(Errno::EUCLEAN);
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(slice(&sb, 0x30, 16));
        let mut j = Journal {
            blocks: Vec::new(),
            first,
            maxlen,
            sequence: be32(&sb, 0x18),
            start: be32(&sb, 0x1C),
            incompat,
            uuid,
            seed: crc32c(!0, &uuid),
            sb,
            head: first,
            next_tid: 0,
        };
        j.next_tid = j.sequence;
        if j.csum_v2v3() && (u8_at(&j.sb, 0x50) != 4 || j.sb_csum() != be32(&j.sb, 0xFC)) {
            return Err(Errno::EUCLEAN);
        }
        if j.start != 0 && (j.start < first || j.start >= maxlen) {
            return Err(Errno::EUCLEAN);
        }
        j.blocks.try_reserve(maxlen as usize).map_err(|_| Errno::ENOMEM)?;
        for l in 0..maxlen {
            let e = crate::extent::find(&map.extents, l).ok_or(Errno::EUCLEAN)?;
            j.blocks.push(e.phys + (l - e.logical) as u64);
        }
        Ok(j)
    }
}

/// One block logged by a committed transaction.
struct Logged {
    home: u64,
    pos: u32,
    flags: u32,
    csum: u32,
}

struct Committed {
    seq: u32,
    blocks: Vec<Logged>,
}

/// Parses the tags of a descriptor block: (home block, flags, checksum).
pub(crate) fn parse_tags(j: &Journal, b: &[u8], bs: usize) -> Vec<(u64, u32, u32)> {
    let ts = j.tag_size();
    let end = bs - j.tail_size();
    let v3 = j.incompat & INCOMPAT_CSUM_V3 != 0;
    let mut out = Vec::new();
    let mut off = 12;
    while off + ts <= end {
        let (home_lo, flags, hi, csum) = if v3 {
            (be32(b, off), be32(b, off + 4), be32(b, off + 8), be32(b, off + 12))
        } else {
            let hi = if j.is_64bit() { be32(b, off + 8) } else { 0 };
            (
                be32(b, off),
                u16::from_be_bytes([b[off + 6], b[off + 7]]) as u32,
                hi,
                u16::from_be_bytes([b[off + 4], b[off + 5]]) as u32,
            )
        };
        let hi = if j.is_64bit() { hi as u64 } else { 0 };
        out.push((home_lo as u64 | hi << 32, flags, csum));
        off += ts;
        if flags & FLAG_SAME_UUID == 0 {
            off += 16;
        }
        if flags & FLAG_LAST_TAG != 0 {
            break;
        }
    }
    out
}

impl<D: BlockDevice> Ext4<D> {
    fn journal_block(&mut self, j: &Journal, pos: u32) -> Result<Vec<u8>> {
        let phys = *j.blocks.get(pos as usize).ok_or(Errno::EUCLEAN)?;
        self.read_block_uncached(phys)
    }

    /// Replays the log left behind, then marks it empty and clears the
    /// needs-recovery flag. Reloads the superblock and descriptors, which
    /// replay may have rewritten.
    pub(crate) fn replay_journal(&mut self) -> Result<()> {
        let mut j = self.journal.clone().ok_or(Errno::EINVAL)?;
        let mut seq = j.sequence;
        let mut replayed_blocks = 0u32;
        let mut txns = 0u32;
        if j.start != 0 {
            let (committed, revokes, end_seq) = self.scan_log(&j)?;
            seq = end_seq;
            for t in &committed {
                for l in &t.blocks {
                    if revokes.get(&l.home).is_some_and(|&r| r >= t.seq) {
                        continue;
                    }
                    let mut data = self.journal_block(&j, l.pos)?;
                    if j.csum_v2v3() {
                        let c = j.tag_csum(t.seq, &data);
                        let want = if j.incompat & INCOMPAT_CSUM_V3 != 0 { c } else { c & 0xFFFF };
                        if want != l.csum {
                            // jbd2 skips a block whose checksum is wrong.
                            continue;
                        }
                    }
                    if l.flags & FLAG_ESCAPE != 0 {
                        set_be32(&mut data, 0, MAGIC);
                    }
                    if l.home >= self.sb.blocks_count() {
                        return Err(Errno::EUCLEAN);
                    }
                    self.dev.write(l.home * (self.bs / SECTOR_SIZE) as u64, &data)?;
                    replayed_blocks += 1;
                }
                txns += 1;
            }
            self.dev.flush()?;
        }
        j.start = 0;
        j.sequence = seq;
        j.next_tid = seq;
        j.head = j.first;
        self.write_journal_sb(&mut j)?;
        self.journal = Some(j);
        self.replayed = (txns, replayed_blocks);
        // The log may have carried the superblock and descriptors.
        self.cache.clear();
        self.verified.clear();
        self.dirty.clear();
        self.meta_gen += 1;
        let dev_bytes = self.dev.sector_count() * SECTOR_SIZE as u64;
        let mut raw = vec![0u8; SUPERBLOCK_SIZE];
        self.dev.read(SUPERBLOCK_OFFSET / SECTOR_SIZE as u64, &mut raw)?;
        let sb = Superblock::parse(raw, dev_bytes)?;
        if sb.block_size() != self.bs || sb.group_count() != self.sb.group_count() {
            return Err(Errno::EUCLEAN);
        }
        self.sb = sb;
        let inc = self.sb.feature_incompat() & !INCOMPAT_RECOVER;
        self.sb.set_feature_incompat(inc);
        self.groups.clear();
        self.load_groups()?;
        self.write_superblock_now()
    }

    pub(crate) fn write_journal_sb(&mut self, j: &mut Journal) -> Result<()> {
        set_be32(&mut j.sb, 0x18, j.sequence);
        set_be32(&mut j.sb, 0x1C, j.start);
        if j.csum_v2v3() {
            let c = j.sb_csum();
            set_be32(&mut j.sb, 0xFC, c);
        }
        let phys = *j.blocks.first().ok_or(Errno::EUCLEAN)?;
        let mut b = self.read_block_uncached(phys)?;
        put(&mut b, 0, &j.sb);
        self.dev.write(phys * (self.bs / SECTOR_SIZE) as u64, &b)?;
        self.dev.flush()
    }

    /// Pass 1 and 2: the committed transactions and the revoke table.
    fn scan_log(&mut self, j: &Journal) -> Result<(Vec<Committed>, BTreeMap<u64, u32>, u32)> {
        let mut pos = j.start;
        let mut seq = j.sequence;
        let mut committed = Vec::new();
        let mut revokes: BTreeMap<u64, u32> = BTreeMap::new();
        let mut pending: Vec<Logged> = Vec::new();
        let mut pending_revokes: Vec<u64> = Vec::new();
        let mut scanned = 0u32;
        let room = j.maxlen - j.first;
        while scanned < room {
            let b = self.journal_block(j, pos)?;
            if be32(&b, 0) != MAGIC || be32(&b, 8) != seq {
                break;
            }
            scanned += 1;
            match be32(&b, 4) {
                BLOCK_DESCRIPTOR => {
                    if j.csum_v2v3() && j.block_csum(&b, self.bs - 4) != be32(&b, self.bs - 4) {
                        break;
                    }
                    for (home, flags, csum) in parse_tags(j, &b, self.bs) {
                        pos = j.next(pos);
                        scanned += 1;
                        pending.push(Logged { home, pos, flags, csum });
                    }
                    pos = j.next(pos);
                }
                BLOCK_COMMIT => {
                    if j.csum_v2v3() && j.block_csum(&b, 16) != be32(&b, 16) {
                        break;
                    }
                    for r in pending_revokes.drain(..) {
                        let e = revokes.entry(r).or_insert(seq);
                        *e = (*e).max(seq);
                    }
                    committed.push(Committed { seq, blocks: core::mem::take(&mut pending) });
                    seq = seq.wrapping_add(1);
                    pos = j.next(pos);
                }
                BLOCK_REVOKE => {
                    if j.csum_v2v3() && j.block_csum(&b, self.bs - 4) != be32(&b, self.bs - 4) {
                        break;
                    }
                    let count = be32(&b, 12) as usize;
                    let rec = if j.is_64bit() { 8 } else { 4 };
                    if count < 16 || count > self.bs - j.tail_size() {
                        break;
                    }
                    let mut off = 16;
                    while off + rec <= count {
                        pending_revokes.push(if rec == 8 { be64(&b, off) } else { be32(&b, off) as u64 });
                        off += rec;
                    }
                    pos = j.next(pos);
                }
                _ => break,
            }
        }
        Ok((committed, revokes, seq))
    }
}
