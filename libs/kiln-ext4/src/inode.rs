//! On-disk inodes: the raw `inode_size` bytes with typed accessors, file
//! types, flags, timestamps with nanoseconds (the `_extra` words), the
//! 48-bit block count and the inode checksum.

use crate::bytes::*;
use crate::checksum::crc32c;
use alloc::vec::Vec;

pub const S_IFMT: u16 = 0o170000;
pub const S_IFSOCK: u16 = 0o140000;
pub const S_IFLNK: u16 = 0o120000;
pub const S_IFREG: u16 = 0o100000;
pub const S_IFBLK: u16 = 0o060000;
pub const S_IFDIR: u16 = 0o040000;
pub const S_IFCHR: u16 = 0o020000;
pub const S_IFIFO: u16 = 0o010000;

pub const FL_INDEX: u32 = 0x1000;
pub const FL_HUGE_FILE: u32 = 0x40000;
pub const FL_EXTENTS: u32 = 0x80000;
pub const FL_INLINE_DATA: u32 = 0x1000_0000;

pub const ROOT_INO: u32 = 2;

/// A time as ext4 stores it: seconds since the epoch and nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timestamp {
    pub sec: i64,
    pub nsec: u32,
}

/// Which of an inode's four times.
#[derive(Clone, Copy, Debug)]
pub enum TimeField {
    Access,
    Change,
    Modify,
    Create,
}

impl TimeField {
    /// (offset of the 32-bit seconds, offset of the `_extra` word).
    fn offsets(self) -> (usize, usize) {
        match self {
            TimeField::Access => (0x8, 0x8C),
            TimeField::Change => (0xC, 0x84),
            TimeField::Modify => (0x10, 0x88),
            TimeField::Create => (0x90, 0x94),
        }
    }
}

#[derive(Clone)]
pub struct Inode {
    pub ino: u32,
    pub raw: Vec<u8>,
}

impl Inode {
    pub fn mode(&self) -> u16 {
        le16(&self.raw, 0x0)
    }
    pub fn set_mode(&mut self, v: u16) {
        set_le16(&mut self.raw, 0x0, v)
    }
    pub fn file_type(&self) -> u16 {
        self.mode() & S_IFMT
    }
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }
    pub fn is_reg(&self) -> bool {
        self.file_type() == S_IFREG
    }
    pub fn is_symlink(&self) -> bool {
        self.file_type() == S_IFLNK
    }
    pub fn uid(&self) -> u32 {
        le16(&self.raw, 0x2) as u32 | (le16(&self.raw, 0x78) as u32) << 16
    }
    pub fn set_uid(&mut self, v: u32) {
        set_le16(&mut self.raw, 0x2, v as u16);
        set_le16(&mut self.raw, 0x78, (v >> 16) as u16);
    }
    pub fn gid(&self) -> u32 {
        le16(&self.raw, 0x18) as u32 | (le16(&self.raw, 0x7A) as u32) << 16
    }
    pub fn set_gid(&mut self, v: u32) {
        set_le16(&mut self.raw, 0x18, v as u16);
        set_le16(&mut self.raw, 0x7A, (v >> 16) as u16);
    }
    pub fn size(&self) -> u64 {
        le32(&self.raw, 0x4) as u64 | (le32(&self.raw, 0x6C) as u64) << 32
    }
    pub fn set_size(&mut self, v: u64) {
        set_le32(&mut self.raw, 0x4, v as u32);
        set_le32(&mut self.raw, 0x6C, (v >> 32) as u32);
    }
    pub fn links(&self) -> u16 {
        le16(&self.raw, 0x1A)
    }
    pub fn set_links(&mut self, v: u16) {
        set_le16(&mut self.raw, 0x1A, v)
    }
    /// `i_dtime`, which on the orphan list holds the next orphan.
    pub fn dtime_raw(&self) -> u32 {
        le32(&self.raw, 0x14)
    }
    pub fn set_dtime(&mut self, v: u32) {
        set_le32(&mut self.raw, 0x14, v)
    }
    pub fn flags(&self) -> u32 {
        le32(&self.raw, 0x20)
    }
    pub fn set_flags(&mut self, v: u32) {
        set_le32(&mut self.raw, 0x20, v)
    }
    pub fn has_extents(&self) -> bool {
        self.flags() & FL_EXTENTS != 0
    }
    pub fn block_area(&self) -> &[u8] {
        slice(&self.raw, 0x28, 60)
    }
    pub fn set_block_area(&mut self, v: &[u8]) {
        put(&mut self.raw, 0x28, v)
    }
    pub fn generation(&self) -> u32 {
        le32(&self.raw, 0x64)
    }
    pub fn set_generation(&mut self, v: u32) {
        set_le32(&mut self.raw, 0x64, v)
    }
    pub fn file_acl(&self) -> u64 {
        le32(&self.raw, 0x68) as u64 | (le16(&self.raw, 0x76) as u64) << 32
    }
    pub fn set_file_acl(&mut self, v: u64) {
        set_le32(&mut self.raw, 0x68, v as u32);
        set_le16(&mut self.raw, 0x76, (v >> 32) as u16);
    }
    /// `i_blocks` in 512-byte sectors (translating `HUGE_FILE_FL` units).
    pub fn sectors(&self, block_size: usize) -> u64 {
        let v = le32(&self.raw, 0x1C) as u64 | (le16(&self.raw, 0x74) as u64) << 32;
        if self.flags() & FL_HUGE_FILE != 0 {
            v.saturating_mul(block_size as u64 / 512)
        } else {
            v
        }
    }
    /// Stores a sector count; the caller keeps it below 2^48.
    pub fn set_sectors(&mut self, v: u64) {
        self.set_flags(self.flags() & !FL_HUGE_FILE);
        set_le32(&mut self.raw, 0x1C, v as u32);
        set_le16(&mut self.raw, 0x74, (v >> 32) as u16);
    }
    /// `i_extra_isize`, or 0 for a 128-byte inode.
    pub fn extra_isize(&self) -> usize {
        if self.raw.len() > 128 {
            le16(&self.raw, 0x80) as usize
        } else {
            0
        }
    }
    pub fn set_extra_isize(&mut self, v: u16) {
        if self.raw.len() > 128 {
            set_le16(&mut self.raw, 0x80, v)
        }
    }
    fn has_extra_field(&self, end: usize) -> bool {
        128 + self.extra_isize() >= end && self.raw.len() >= end
    }

    pub fn time(&self, which: TimeField) -> Timestamp {
        let (s, x) = which.offsets();
        if matches!(which, TimeField::Create) && !self.has_extra_field(s + 4) {
            return Timestamp::default();
        }
        let mut sec = le32(&self.raw, s) as i32 as i64;
        let mut nsec = 0;
        if self.has_extra_field(x + 4) {
            let extra = le32(&self.raw, x);
            sec += ((extra & 3) as i64) << 32;
            nsec = (extra >> 2).min(999_999_999);
        }
        Timestamp { sec, nsec }
    }
    pub fn set_time(&mut self, which: TimeField, t: Timestamp) {
        let (s, x) = which.offsets();
        if matches!(which, TimeField::Create) && !self.has_extra_field(s + 4) {
            return;
        }
        set_le32(&mut self.raw, s, t.sec as u32);
        if self.has_extra_field(x + 4) {
            let epoch = ((t.sec - (t.sec as i32 as i64)) >> 32) as u32 & 3;
            set_le32(&mut self.raw, x, epoch | (t.nsec.min(999_999_999) << 2));
        }
    }

    fn checksum_seed(&self, fs_seed: u32) -> u32 {
        let c = crc32c(fs_seed, &self.ino.to_le_bytes());
        crc32c(c, &self.generation().to_le_bytes())
    }
    /// The per-inode seed that extent, directory and htree checksums chain from.
    pub fn csum_seed(&self, fs_seed: u32) -> u32 {
        self.checksum_seed(fs_seed)
    }
    pub fn compute_checksum(&self, fs_seed: u32) -> u32 {
        raw_checksum(&self.raw, self.ino, fs_seed)
    }
    pub fn update_checksum(&mut self, fs_seed: u32) {
        let c = self.compute_checksum(fs_seed);
        set_le16(&mut self.raw, 0x7C, c as u16);
        if self.has_extra_field(0x84) {
            set_le16(&mut self.raw, 0x82, (c >> 16) as u16);
        }
    }
}

/// The directory-entry file type code for a mode.
pub fn dirent_type(mode: u16) -> u8 {
    match mode & S_IFMT {
        S_IFREG => 1,
        S_IFDIR => 2,
        S_IFCHR => 3,
        S_IFBLK => 4,
        S_IFIFO => 5,
        S_IFSOCK => 6,
        S_IFLNK => 7,
        _ => 0,
    }
}

/// The metadata_csum checksum of raw inode `raw` (numbered `ino`): the
/// crc32c of the inode with its checksum fields taken as zero, chained
/// from the inode's seed. Computed in pieces around those fields, so no
/// copy of the inode is made (every inode load checks one).
pub(crate) fn raw_checksum(raw: &[u8], ino: u32, fs_seed: u32) -> u32 {
    let seed = crc32c(crc32c(fs_seed, &ino.to_le_bytes()), &le32(raw, 0x64).to_le_bytes());
    let extra = if raw.len() > 128 { le16(raw, 0x80) as usize } else { 0 };
    let has_hi = 128 + extra >= 0x84 && raw.len() >= 0x84;
    let mut c = crc32c(seed, slice(raw, 0, 0x7C));
    c = crc32c(c, &[0, 0]);
    if !has_hi {
        return crc32c(c, raw.get(0x7E..).unwrap_or(&[])) & 0xFFFF;
    }
    c = crc32c(c, slice(raw, 0x7E, 0x82 - 0x7E));
    c = crc32c(c, &[0, 0]);
    crc32c(c, raw.get(0x84..).unwrap_or(&[]))
}
