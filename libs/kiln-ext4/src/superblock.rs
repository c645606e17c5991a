//! The ext2/ext4 superblock: the bytes at offset 1024 of the volume, kept
//! raw (so fields this crate does not know survive a rewrite) with typed
//! accessors, its validation, the feature sets and its checksum.

use crate::bytes::*;
use crate::checksum::crc32c;
use crate::Result;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

pub const SUPERBLOCK_OFFSET: u64 = 1024;
pub const SUPERBLOCK_SIZE: usize = 1024;
const MAGIC: u16 = 0xEF53;

pub const COMPAT_HAS_JOURNAL: u32 = 0x4;
pub const COMPAT_DIR_INDEX: u32 = 0x20;

pub const INCOMPAT_FILETYPE: u32 = 0x2;
pub const INCOMPAT_RECOVER: u32 = 0x4;
pub const INCOMPAT_JOURNAL_DEV: u32 = 0x8;
pub const INCOMPAT_EXTENTS: u32 = 0x40;
pub const INCOMPAT_64BIT: u32 = 0x80;
pub const INCOMPAT_FLEX_BG: u32 = 0x200;
pub const INCOMPAT_CSUM_SEED: u32 = 0x2000;
pub const INCOMPAT_LARGEDIR: u32 = 0x4000;
/// What this crate reads and writes correctly; any other incompat bit
/// refuses the mount, as Linux does for the bits it does not know.
pub const INCOMPAT_SUPPORTED: u32 = INCOMPAT_FILETYPE
    | INCOMPAT_RECOVER
    | INCOMPAT_EXTENTS
    | INCOMPAT_64BIT
    | INCOMPAT_FLEX_BG
    | INCOMPAT_CSUM_SEED
    | INCOMPAT_LARGEDIR;

pub const RO_COMPAT_SPARSE_SUPER: u32 = 0x1;
pub const RO_COMPAT_LARGE_FILE: u32 = 0x2;
pub const RO_COMPAT_HUGE_FILE: u32 = 0x8;
pub const RO_COMPAT_GDT_CSUM: u32 = 0x10;
pub const RO_COMPAT_DIR_NLINK: u32 = 0x20;
pub const RO_COMPAT_EXTRA_ISIZE: u32 = 0x40;
pub const RO_COMPAT_METADATA_CSUM: u32 = 0x400;
pub const RO_COMPAT_READONLY: u32 = 0x1000;
/// Bits this crate keeps right when writing; any other ro_compat bit makes
/// the mount read-only.
pub const RO_COMPAT_SUPPORTED: u32 = RO_COMPAT_SPARSE_SUPER
    | RO_COMPAT_LARGE_FILE
    | 0x4 // btree_dir: never set by Linux, harmless
    | RO_COMPAT_HUGE_FILE
    | RO_COMPAT_GDT_CSUM
    | RO_COMPAT_DIR_NLINK
    | RO_COMPAT_EXTRA_ISIZE
    | RO_COMPAT_METADATA_CSUM;

/// `s_state`: errors were detected.
pub const STATE_ERRORS: u16 = 2;

/// `s_flags` bits selecting the directory hash's char signedness.
const FLAG_UNSIGNED_HASH: u32 = 0x2;

#[derive(Clone)]
pub struct Superblock {
    pub raw: Vec<u8>,
}

macro_rules! field {
    ($get:ident, $set:ident, $ty:ty, $rd:ident, $wr:ident, $off:expr) => {
        #[inline]
        pub fn $get(&self) -> $ty {
            $rd(&self.raw, $off)
        }
        #[allow(dead_code)]
        pub fn $set(&mut self, v: $ty) {
            $wr(&mut self.raw, $off, v)
        }
    };
}

impl Superblock {
    field!(inodes_count, set_inodes_count, u32, le32, set_le32, 0x0);
    field!(free_inodes_count, set_free_inodes_count, u32, le32, set_le32, 0x10);
    field!(first_data_block, set_first_data_block, u32, le32, set_le32, 0x14);
    field!(log_block_size, set_log_block_size, u32, le32, set_le32, 0x18);
    field!(log_cluster_size, set_log_cluster_size, u32, le32, set_le32, 0x1C);
    field!(blocks_per_group, set_blocks_per_group, u32, le32, set_le32, 0x20);
    field!(clusters_per_group, set_clusters_per_group, u32, le32, set_le32, 0x24);
    field!(inodes_per_group, set_inodes_per_group, u32, le32, set_le32, 0x28);
    field!(mnt_count, set_mnt_count, u16, le16, set_le16, 0x34);
    field!(magic, set_magic, u16, le16, set_le16, 0x38);
    field!(state, set_state, u16, le16, set_le16, 0x3A);
    field!(rev_level, set_rev_level, u32, le32, set_le32, 0x4C);
    field!(first_ino_raw, set_first_ino_raw, u32, le32, set_le32, 0x54);
    field!(inode_size_raw, set_inode_size_raw, u16, le16, set_le16, 0x58);
    field!(feature_compat, set_feature_compat, u32, le32, set_le32, 0x5C);
    field!(feature_incompat, set_feature_incompat, u32, le32, set_le32, 0x60);
    field!(feature_ro_compat, set_feature_ro_compat, u32, le32, set_le32, 0x64);
    field!(reserved_gdt_blocks, set_reserved_gdt_blocks, u16, le16, set_le16, 0xCE);
    field!(journal_inum, set_journal_inum, u32, le32, set_le32, 0xE0);
    field!(journal_dev, set_journal_dev, u32, le32, set_le32, 0xE4);
    field!(last_orphan, set_last_orphan, u32, le32, set_le32, 0xE8);
    field!(def_hash_version, set_def_hash_version, u8, u8_at, set_u8, 0xFC);
    field!(desc_size_raw, set_desc_size_raw, u16, le16, set_le16, 0xFE);
    field!(min_extra_isize, set_min_extra_isize, u16, le16, set_le16, 0x15C);
    field!(want_extra_isize, set_want_extra_isize, u16, le16, set_le16, 0x15E);
    field!(flags, set_flags, u32, le32, set_le32, 0x160);
    field!(checksum_type, set_checksum_type, u8, u8_at, set_u8, 0x175);
    field!(checksum_seed, set_checksum_seed, u32, le32, set_le32, 0x270);
    field!(checksum, set_checksum, u32, le32, set_le32, 0x3FC);

    pub fn is_64bit(&self) -> bool {
        self.feature_incompat() & INCOMPAT_64BIT != 0
    }
    pub fn has_ro_compat(&self, bit: u32) -> bool {
        self.feature_ro_compat() & bit != 0
    }
    pub fn has_incompat(&self, bit: u32) -> bool {
        self.feature_incompat() & bit != 0
    }
    pub fn has_compat(&self, bit: u32) -> bool {
        self.feature_compat() & bit != 0
    }
    pub fn metadata_csum(&self) -> bool {
        self.has_ro_compat(RO_COMPAT_METADATA_CSUM)
    }
    pub fn uuid(&self) -> [u8; 16] {
        let mut u = [0u8; 16];
        u.copy_from_slice(slice(&self.raw, 0x68, 16));
        u
    }
    pub fn hash_seed(&self) -> [u32; 4] {
        [le32(&self.raw, 0xEC), le32(&self.raw, 0xF0), le32(&self.raw, 0xF4), le32(&self.raw, 0xF8)]
    }
    /// The char signedness of the directory hash: mkfs records it.
    pub fn unsigned_hash(&self) -> bool {
        self.flags() & FLAG_UNSIGNED_HASH != 0
    }
    pub fn blocks_count(&self) -> u64 {
        let hi = if self.is_64bit() { le32(&self.raw, 0x150) as u64 } else { 0 };
        le32(&self.raw, 0x4) as u64 | hi << 32
    }
    pub fn r_blocks_count(&self) -> u64 {
        let hi = if self.is_64bit() { le32(&self.raw, 0x154) as u64 } else { 0 };
        le32(&self.raw, 0x8) as u64 | hi << 32
    }
    pub fn free_blocks_count(&self) -> u64 {
        let hi = if self.is_64bit() { le32(&self.raw, 0x158) as u64 } else { 0 };
        le32(&self.raw, 0xC) as u64 | hi << 32
    }
    pub fn set_free_blocks_count(&mut self, v: u64) {
        set_le32(&mut self.raw, 0xC, v as u32);
        if self.is_64bit() {
            set_le32(&mut self.raw, 0x158, (v >> 32) as u32);
        }
    }
    pub fn block_size(&self) -> usize {
        1024usize << self.log_block_size().min(6)
    }
    pub fn inode_size(&self) -> usize {
        if self.rev_level() == 0 {
            128
        } else {
            self.inode_size_raw() as usize
        }
    }
    pub fn first_ino(&self) -> u32 {
        if self.rev_level() == 0 {
            11
        } else {
            self.first_ino_raw()
        }
    }
    pub fn desc_size(&self) -> usize {
        if self.is_64bit() {
            self.desc_size_raw() as usize
        } else {
            32
        }
    }

    pub fn compute_checksum(&self) -> u32 {
        crc32c(!0, slice(&self.raw, 0, 0x3FC))
    }

    /// Parses and validates `raw` (1024 bytes) against a device of
    /// `device_bytes`. Every value later used as a size, count or divisor is
    /// checked here, so the rest of the crate can rely on them.
    pub fn parse(raw: Vec<u8>, device_bytes: u64) -> Result<Superblock> {
        let sb = Superblock { raw };
        if sb.raw.len() != SUPERBLOCK_SIZE || sb.magic() != MAGIC {
            return Err(Errno::EINVAL);
        }
        let corrupt = Err(Errno::EUCLEAN);
        if sb.metadata_csum() {
            if sb.checksum_type() != 1 || sb.compute_checksum() != sb.checksum() {
                return corrupt;
            }
            if sb.has_ro_compat(RO_COMPAT_GDT_CSUM) {
                return corrupt;
            }
        }
        if sb.log_block_size() > 6 || sb.rev_level() > 1 {
            return corrupt;
        }
        let bs = sb.block_size() as u64;
        // bigalloc (clusters) is not supported: cluster size equals block size.
        if sb.log_cluster_size() != sb.log_block_size() {
            return Err(Errno::EINVAL);
        }
        let expected_first = if bs == 1024 { 1 } else { 0 };
        if sb.first_data_block() != expected_first {
            return corrupt;
        }
        let bpg = sb.blocks_per_group() as u64;
        if bpg == 0 || bpg > bs * 8 || sb.clusters_per_group() as u64 != bpg {
            return corrupt;
        }
        let ipg = sb.inodes_per_group() as u64;
        if ipg == 0 || ipg > bs * 8 || !ipg.is_multiple_of(8) {
            return corrupt;
        }
        let isz = sb.inode_size();
        if isz < 128 || isz > bs as usize || !isz.is_power_of_two() {
            return corrupt;
        }
        if isz > 128 {
            let extra = sb.min_extra_isize() as usize;
            if extra > isz - 128 {
                return corrupt;
            }
        }
        if sb.first_ino() < 11 || sb.first_ino() >= sb.inodes_count() {
            return corrupt;
        }
        let blocks = sb.blocks_count();
        if blocks <= sb.first_data_block() as u64 || blocks.checked_mul(bs).is_none_or(|b| b > device_bytes) {
            return corrupt;
        }
        let groups = (blocks - sb.first_data_block() as u64).div_ceil(bpg);
        if groups.checked_mul(ipg) != Some(sb.inodes_count() as u64) {
            return corrupt;
        }
        if sb.is_64bit() {
            let ds = sb.desc_size();
            if !(64..=1024).contains(&ds) || !ds.is_power_of_two() {
                return corrupt;
            }
        }
        if sb.free_blocks_count() > blocks || sb.free_inodes_count() > sb.inodes_count() {
            return corrupt;
        }
        Ok(sb)
    }

    pub fn group_count(&self) -> u32 {
        ((self.blocks_count() - self.first_data_block() as u64).div_ceil(self.blocks_per_group() as u64)) as u32
    }
}

/// Whether group `g` holds a superblock backup (and a descriptor-table
/// copy): all groups without `sparse_super`, else 0, 1 and powers of 3, 5, 7.
pub fn group_has_super(sb: &Superblock, g: u32) -> bool {
    if g <= 1 || !sb.has_ro_compat(RO_COMPAT_SPARSE_SUPER) {
        return true;
    }
    if g.is_multiple_of(2) {
        return false;
    }
    for base in [3u32, 5, 7] {
        let mut p = base;
        while p < g {
            match p.checked_mul(base) {
                Some(n) => p = n,
                None => break,
            }
        }
        if p == g {
            return true;
        }
    }
    false
}
