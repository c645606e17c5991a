//! Extended attributes: the in-inode area after `i_extra_isize` and the
//! external attribute block (refcounted, hashed, checksummed). Names are
//! stored as a prefix index plus suffix. A change rebuilds the whole set:
//! entries go in the inode while they fit, the rest in one block, which is
//! copied first when other inodes share it.

use crate::bytes::*;
use crate::checksum::crc32c;
use crate::inode::Inode;
use crate::{BlockDevice, Ext4, Result};
use alloc::vec;
use alloc::vec::Vec;
use linux_abi::errno::Errno;

const MAGIC: u32 = 0xEA02_0000;
const BLOCK_HEADER: usize = 32;
const ENTRY_HEADER: usize = 16;

/// The name prefixes and their on-disk index; longest first so that
/// `system.posix_acl_access` wins over `system.`.
const PREFIXES: &[(&[u8], u8)] = &[
    (b"system.posix_acl_default", 3),
    (b"system.posix_acl_access", 2),
    (b"security.", 6),
    (b"trusted.", 4),
    (b"system.", 7),
    (b"user.", 1),
];

/// `setxattr` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum XattrFlags {
    #[default]
    Any,
    /// `XATTR_CREATE`: fail with EEXIST when present.
    Create,
    /// `XATTR_REPLACE`: fail with ENODATA when absent.
    Replace,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Attr {
    index: u8,
    name: Vec<u8>,
    value: Vec<u8>,
}

fn split_name(full: &[u8]) -> Result<(u8, &[u8])> {
    for &(p, idx) in PREFIXES {
        if full.starts_with(p) {
            let rest = &full[p.len()..];
            // The ACL names are exact; others need a suffix.
            if (idx == 2 || idx == 3) && !rest.is_empty() {
                continue;
            }
            if idx != 2 && idx != 3 && rest.is_empty() {
                return Err(Errno::EINVAL);
            }
            if rest.len() > 255 {
                return Err(Errno::ERANGE);
            }
            return Ok((idx, rest));
        }
    }
    Err(Errno::EOPNOTSUPP)
}

fn full_name(a: &Attr) -> Option<Vec<u8>> {
    let p = PREFIXES.iter().find(|(_, i)| *i == a.index)?.0;
    let mut v = p.to_vec();
    v.extend_from_slice(&a.name);
    Some(v)
}

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn entry_hash(a: &Attr) -> u32 {
    let mut h = 0u32;
    for &c in &a.name {
        h = (h << 5) ^ (h >> 27) ^ (c as i8 as i32 as u32);
    }
    let mut padded = a.value.clone();
    padded.resize(pad4(a.value.len()), 0);
    for w in padded.chunks(4) {
        h = (h << 16) ^ (h >> 16) ^ le32(w, 0);
    }
    h
}

/// Parses entries starting at `first` of `area`; value offsets count from
/// `value_base`.
fn parse_entries(area: &[u8], first: usize, value_base: usize, out: &mut Vec<Attr>) -> Result<()> {
    let mut off = first;
    loop {
        if off + 4 > area.len() {
            return Err(Errno::EUCLEAN);
        }
        if le32(area, off) == 0 {
            return Ok(());
        }
        let name_len = u8_at(area, off) as usize;
        let index = u8_at(area, off + 1);
        let voff = le16(area, off + 2) as usize;
        let inum = le32(area, off + 4);
        let vsize = le32(area, off + 8) as usize;
        let esize = pad4(ENTRY_HEADER + name_len);
        if off + esize > area.len() || inum != 0 || name_len == 0 {
            return Err(Errno::EUCLEAN);
        }
        let vstart = value_base.checked_add(voff).ok_or(Errno::EUCLEAN)?;
        let value = area.get(vstart..vstart.checked_add(vsize).ok_or(Errno::EUCLEAN)?).ok_or(Errno::EUCLEAN)?;
        out.push(Attr { index, name: slice(area, off + ENTRY_HEADER, name_len).to_vec(), value: value.to_vec() });
        off += esize;
    }
}

impl<D: BlockDevice> Ext4<D> {
    fn inline_area_start(&self, inode: &Inode) -> Option<usize> {
        let start = 128 + inode.extra_isize();
        if inode.raw.len() > 128 && start + 4 + 4 <= inode.raw.len() {
            Some(start)
        } else {
            None
        }
    }

    fn xattr_block_csum(&self, blk: u64, b: &[u8]) -> u32 {
        let mut t = b.to_vec();
        set_le32(&mut t, 0x10, 0);
        crc32c(crc32c(self.csum_seed, &blk.to_le_bytes()), &t)
    }

    /// (in-inode attrs, block attrs).
    fn read_xattrs(&mut self, inode: &Inode) -> Result<(Vec<Attr>, Vec<Attr>)> {
        let mut inline = Vec::new();
        if let Some(start) = self.inline_area_start(inode) {
            if le32(&inode.raw, start) == MAGIC {
                let area = &inode.raw[start + 4..];
                parse_entries(area, 0, 0, &mut inline)?;
            }
        }
        let mut block = Vec::new();
        let blk = inode.file_acl();
        if blk != 0 {
            let b = self.xattr_block(blk)?;
            parse_entries(&b, BLOCK_HEADER, 0, &mut block)?;
        }
        Ok((inline, block))
    }

    fn xattr_block(&mut self, blk: u64) -> Result<Vec<u8>> {
        if blk < self.sb.first_data_block() as u64 || blk >= self.sb.blocks_count() {
            return Err(Errno::EUCLEAN);
        }
        let b = self.meta(blk)?;
        if le32(&b, 0) != MAGIC || le32(&b, 8) != 1 {
            return Err(Errno::EUCLEAN);
        }
        if self.sb.metadata_csum() && self.xattr_block_csum(blk, &b) != le32(&b, 0x10) {
            return Err(Errno::EUCLEAN);
        }
        Ok(b)
    }

    pub fn get_xattr(&mut self, ino: u32, name: &[u8]) -> Result<Vec<u8>> {
        let (index, suffix) = split_name(name)?;
        let inode = self.live_inode(ino)?;
        let (a, b) = self.read_xattrs(&inode)?;
        a.into_iter().chain(b).find(|x| x.index == index && x.name == suffix).map(|x| x.value).ok_or(Errno::ENODATA)
    }

    /// Every attribute name of `ino` (with its prefix).
    pub fn list_xattr(&mut self, ino: u32) -> Result<Vec<Vec<u8>>> {
        let inode = self.live_inode(ino)?;
        let (a, b) = self.read_xattrs(&inode)?;
        Ok(a.iter().chain(b.iter()).filter_map(full_name).collect())
    }

    pub(crate) fn set_xattr_inner(
        &mut self,
        ino: u32,
        name: &[u8],
        value: &[u8],
        flags: XattrFlags,
        now: crate::Timestamp,
    ) -> Result<()> {
        self.change_xattr(ino, name, Some(value), flags, now)
    }

    pub(crate) fn remove_xattr_inner(&mut self, ino: u32, name: &[u8], now: crate::Timestamp) -> Result<()> {
        self.change_xattr(ino, name, None, XattrFlags::Replace, now)
    }

    fn change_xattr(
        &mut self,
        ino: u32,
        name: &[u8],
        value: Option<&[u8]>,
        flags: XattrFlags,
        now: crate::Timestamp,
    ) -> Result<()> {
        self.writable()?;
        let (index, suffix) = split_name(name)?;
        if value.is_some_and(|v| v.len() > self.bs - BLOCK_HEADER - ENTRY_HEADER - 4 - pad4(suffix.len())) {
            return Err(Errno::E2BIG);
        }
        let mut inode = self.live_inode(ino)?;
        let (a, b) = self.read_xattrs(&inode)?;
        let mut all: Vec<Attr> = a.into_iter().chain(b).collect();
        let pos = all.iter().position(|x| x.index == index && x.name == suffix);
        match (pos, flags, value) {
            (Some(_), XattrFlags::Create, Some(_)) => return Err(Errno::EEXIST),
            (None, XattrFlags::Replace, _) => return Err(Errno::ENODATA),
            _ => {}
        }
        match (pos, value) {
            (Some(p), Some(v)) => all[p].value = v.to_vec(),
            (Some(p), None) => {
                all.remove(p);
            }
            (None, Some(v)) => all.push(Attr { index, name: suffix.to_vec(), value: v.to_vec() }),
            (None, None) => return Err(Errno::ENODATA),
        }
        self.write_xattrs(&mut inode, all)?;
        inode.set_time(crate::inode::TimeField::Change, now);
        self.store_inode(&mut inode)?;
        self.maybe_commit()
    }

    /// Lays `all` out over the inode area and (if needed) a block.
    fn write_xattrs(&mut self, inode: &mut Inode, all: Vec<Attr>) -> Result<()> {
        let mut inline = Vec::new();
        let mut rest = Vec::new();
        if let Some(start) = self.inline_area_start(inode) {
            let room = inode.raw.len() - start - 4 - 4;
            let mut used = 0;
            for a in all {
                let need = pad4(ENTRY_HEADER + a.name.len()) + pad4(a.value.len());
                if rest.is_empty() && used + need <= room {
                    used += need;
                    inline.push(a);
                } else {
                    rest.push(a);
                }
            }
            let len = inode.raw.len();
            let area = &mut inode.raw[start..len];
            area.fill(0);
            if !inline.is_empty() {
                set_le32(area, 0, MAGIC);
                let body = &mut area[4..];
                let mut voff = body.len();
                let mut eoff = 0;
                for a in &inline {
                    voff -= pad4(a.value.len());
                    emit_entry(body, eoff, voff, a);
                    put(body, voff, &a.value);
                    eoff += pad4(ENTRY_HEADER + a.name.len());
                }
            }
        } else {
            rest = all;
        }
        rest.sort_by(|x, y| (x.index, x.name.len(), &x.name).cmp(&(y.index, y.name.len(), &y.name)));
        let old = inode.file_acl();
        let needed: usize = BLOCK_HEADER
            + 4
            + rest.iter().map(|a| pad4(ENTRY_HEADER + a.name.len()) + pad4(a.value.len())).sum::<usize>();
        if needed > self.bs {
            return Err(Errno::ENOSPC);
        }
        if rest.is_empty() {
            self.release_xattr_block(inode)?;
            return Ok(());
        }
        // Reuse our own block; copy a shared one.
        let blk = if old != 0 && le32(&self.xattr_block(old)?, 4) == 1 {
            old
        } else {
            self.release_xattr_block(inode)?;
            let goal = self.group_first_block(self.block_group_of_inode(inode.ino));
            let (b, _) = self.alloc_blocks(goal, 1)?;
            inode.set_file_acl(b);
            inode.set_sectors(inode.sectors(self.bs) + (self.bs / 512) as u64);
            b
        };
        let mut b = vec![0u8; self.bs];
        set_le32(&mut b, 0, MAGIC);
        set_le32(&mut b, 4, 1);
        set_le32(&mut b, 8, 1);
        let mut voff = self.bs;
        let mut eoff = BLOCK_HEADER;
        let mut block_hash = 0u32;
        for a in &rest {
            voff -= pad4(a.value.len());
            emit_entry(&mut b, eoff, voff, a);
            put(&mut b, voff, &a.value);
            eoff += pad4(ENTRY_HEADER + a.name.len());
            block_hash = (block_hash << 16) ^ (block_hash >> 16) ^ entry_hash(a);
        }
        set_le32(&mut b, 0xC, block_hash);
        if self.sb.metadata_csum() {
            let c = self.xattr_block_csum(blk, &b);
            set_le32(&mut b, 0x10, c);
        }
        self.put_meta(blk, b)
    }

    /// Drops the inode's reference to its attribute block (freeing it when
    /// it was the last) and clears `i_file_acl`. The caller stores the inode.
    pub(crate) fn release_xattr_block(&mut self, inode: &mut Inode) -> Result<()> {
        let blk = inode.file_acl();
        if blk == 0 {
            return Ok(());
        }
        let mut b = self.xattr_block(blk)?;
        let refs = le32(&b, 4);
        if refs <= 1 {
            self.free_blocks(blk, 1)?;
        } else {
            set_le32(&mut b, 4, refs - 1);
            if self.sb.metadata_csum() {
                let c = self.xattr_block_csum(blk, &b);
                set_le32(&mut b, 0x10, c);
            }
            self.put_meta(blk, b)?;
        }
        inode.set_file_acl(0);
        inode.set_sectors(inode.sectors(self.bs).saturating_sub((self.bs / 512) as u64));
        Ok(())
    }
}

fn emit_entry(area: &mut [u8], eoff: usize, voff: usize, a: &Attr) {
    set_u8(area, eoff, a.name.len() as u8);
    set_u8(area, eoff + 1, a.index);
    set_le16(area, eoff + 2, voff as u16);
    set_le32(area, eoff + 4, 0);
    set_le32(area, eoff + 8, a.value.len() as u32);
    set_le32(area, eoff + 12, entry_hash(a));
    put(area, eoff + ENTRY_HEADER, &a.name);
}
