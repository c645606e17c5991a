//! Unpacks the boot module (a gzip'd or plain cpio "newc" archive) into
//! the in-memory file tree.

use alloc::string::String;
use alloc::vec::Vec;

use kiln_util::cpio;

use super::ramfs::{mkdir_all, split_parent, Inode, InodeKind, S_IFDIR, S_IFLNK, S_IFREG};
use crate::sync::Mutex;

/// Populates the tree from `archive`; returns how many entries were added.
pub fn unpack(archive: &[u8]) -> Result<usize, &'static str> {
    let inflated: Vec<u8>;
    let bytes = if archive.starts_with(&[0x1f, 0x8b]) {
        inflated = gunzip(archive)?;
        &inflated[..]
    } else {
        archive
    };
    let mut count = 0;
    for entry in cpio::Reader::new(bytes) {
        let entry = entry.map_err(|_| "malformed cpio archive")?;
        if entry.name == "." || entry.name.is_empty() {
            continue;
        }
        let kind = entry.mode & 0o170000;
        let perm = entry.mode & 0o7777;
        let (parent, name) = split_parent(entry.name);
        let dir = mkdir_all(parent).map_err(|_| "cpio path through a non-directory")?;
        let inode = match kind {
            S_IFDIR => {
                if dir.child(name).is_some_and(|d| d.is_dir()) {
                    continue;
                }
                Inode::new_dir(perm)
            }
            S_IFREG => Inode::new(S_IFREG | perm, InodeKind::File(Mutex::new(entry.data.to_vec()))),
            S_IFLNK => {
                let target = core::str::from_utf8(entry.data).map_err(|_| "symlink target not UTF-8")?;
                Inode::new(S_IFLNK | 0o777, InodeKind::Symlink(String::from(target)))
            }
            _ => continue, // device nodes and FIFOs come with devfs
        };
        dir.insert_child(name, inode).map_err(|_| "cpio parent is not a directory")?;
        count += 1;
    }
    Ok(count)
}

/// Decompresses a gzip member (RFC 1952) with `miniz_oxide`'s inflater.
fn gunzip(data: &[u8]) -> Result<Vec<u8>, &'static str> {
    if data.len() < 18 || data[2] != 8 {
        return Err("not a deflate gzip stream");
    }
    let flags = data[3];
    let mut pos = 10;
    if flags & 0x04 != 0 {
        let xlen = u16::from_le_bytes([data[pos], data[pos + 1]]) as usize;
        pos += 2 + xlen;
    }
    for bit in [0x08u8, 0x10] {
        if flags & bit != 0 {
            while pos < data.len() && data[pos] != 0 {
                pos += 1;
            }
            pos += 1;
        }
    }
    if flags & 0x02 != 0 {
        pos += 2;
    }
    if pos >= data.len() {
        return Err("truncated gzip header");
    }
    miniz_oxide::inflate::decompress_to_vec(&data[pos..]).map_err(|_| "corrupt gzip data")
}
