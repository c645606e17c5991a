//! Block group descriptors: where each group's bitmaps and inode table
//! are, its free counts and `*_UNINIT` flags, and their checksums
//! (crc32c with `metadata_csum`, crc16 with `gdt_csum`).

use crate::bytes::*;
use crate::checksum::{crc16, crc32c};
use crate::superblock::{Superblock, RO_COMPAT_GDT_CSUM};
use alloc::vec::Vec;

pub const BG_INODE_UNINIT: u16 = 0x1;
pub const BG_BLOCK_UNINIT: u16 = 0x2;

/// One descriptor, raw (`desc_size` bytes) with typed accessors.
#[derive(Clone)]
pub struct GroupDesc {
    pub raw: Vec<u8>,
}

impl GroupDesc {
    fn wide(&self) -> bool {
        self.raw.len() >= 64
    }
    fn lohi32(&self, lo: usize, hi: usize) -> u64 {
        let h = if self.wide() { le32(&self.raw, hi) as u64 } else { 0 };
        le32(&self.raw, lo) as u64 | h << 32
    }
    fn lohi16(&self, lo: usize, hi: usize) -> u32 {
        let h = if self.wide() { le16(&self.raw, hi) as u32 } else { 0 };
        le16(&self.raw, lo) as u32 | h << 16
    }
    fn set_lohi16(&mut self, lo: usize, hi: usize, v: u32) {
        set_le16(&mut self.raw, lo, v as u16);
        if self.wide() {
            set_le16(&mut self.raw, hi, (v >> 16) as u16);
        }
    }
    pub fn block_bitmap(&self) -> u64 {
        self.lohi32(0x0, 0x20)
    }
    pub fn inode_bitmap(&self) -> u64 {
        self.lohi32(0x4, 0x24)
    }
    pub fn inode_table(&self) -> u64 {
        self.lohi32(0x8, 0x28)
    }
    pub fn free_blocks(&self) -> u32 {
        self.lohi16(0xC, 0x2C)
    }
    pub fn set_free_blocks(&mut self, v: u32) {
        self.set_lohi16(0xC, 0x2C, v)
    }
    pub fn free_inodes(&self) -> u32 {
        self.lohi16(0xE, 0x2E)
    }
    pub fn set_free_inodes(&mut self, v: u32) {
        self.set_lohi16(0xE, 0x2E, v)
    }
    pub fn used_dirs(&self) -> u32 {
        self.lohi16(0x10, 0x30)
    }
    pub fn set_used_dirs(&mut self, v: u32) {
        self.set_lohi16(0x10, 0x30, v)
    }
    pub fn flags(&self) -> u16 {
        le16(&self.raw, 0x12)
    }
    pub fn set_flags(&mut self, v: u16) {
        set_le16(&mut self.raw, 0x12, v)
    }
    pub fn itable_unused(&self) -> u32 {
        self.lohi16(0x1C, 0x32)
    }
    pub fn set_itable_unused(&mut self, v: u32) {
        self.set_lohi16(0x1C, 0x32, v)
    }
    pub fn checksum(&self) -> u16 {
        le16(&self.raw, 0x1E)
    }
    pub fn block_bitmap_csum(&self) -> u32 {
        self.lohi16(0x18, 0x38)
    }
    pub fn set_block_bitmap_csum(&mut self, v: u32) {
        self.set_lohi16(0x18, 0x38, v)
    }
    pub fn inode_bitmap_csum(&self) -> u32 {
        self.lohi16(0x1A, 0x3A)
    }
    pub fn set_inode_bitmap_csum(&mut self, v: u32) {
        self.set_lohi16(0x1A, 0x3A, v)
    }

    /// The descriptor checksum of group `g` as the superblock's features
    /// define it, or `None` when descriptors carry none (ext2).
    pub fn compute_checksum(&self, sb: &Superblock, csum_seed: u32, g: u32) -> Option<u16> {
        if sb.metadata_csum() {
            let mut c = crc32c(csum_seed, &g.to_le_bytes());
            c = crc32c(c, slice(&self.raw, 0, 0x1E));
            c = crc32c(c, &[0, 0]);
            c = crc32c(c, slice(&self.raw, 0x20, self.raw.len().saturating_sub(0x20)));
            Some(c as u16)
        } else if sb.has_ro_compat(RO_COMPAT_GDT_CSUM) {
            let mut c = crc16(!0, &sb.uuid());
            c = crc16(c, &g.to_le_bytes());
            c = crc16(c, slice(&self.raw, 0, 0x1E));
            if self.raw.len() > 0x20 {
                c = crc16(c, slice(&self.raw, 0x20, self.raw.len() - 0x20));
            }
            Some(c)
        } else {
            None
        }
    }

    pub fn update_checksum(&mut self, sb: &Superblock, csum_seed: u32, g: u32) {
        if let Some(c) = self.compute_checksum(sb, csum_seed, g) {
            set_le16(&mut self.raw, 0x1E, c);
        }
    }
}
