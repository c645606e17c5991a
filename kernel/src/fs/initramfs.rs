//! Unpacks the boot module (a gzip'd or plain cpio "newc" archive) into
//! the root tmpfs.

use alloc::string::String;
use alloc::vec::Vec;

use kiln_util::cpio;

use super::dentry::{resolve, resolve_parent, root};
use super::inode::{Owner, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};

/// Populates the root from `archive`; returns how many entries were added.
pub fn unpack(archive: &[u8]) -> Result<usize, &'static str> {
    let inflated: Vec<u8>;
    let bytes = if archive.starts_with(&[0x1f, 0x8b]) {
        inflated = gunzip(archive)?;
        &inflated[..]
    } else {
        archive
    };
    let root = root();
    let cred = &crate::cred::ROOT;
    let mut count = 0;
    for entry in cpio::Reader::new(bytes) {
        let entry = entry.map_err(|_| "malformed cpio archive")?;
        if entry.name.is_empty() || entry.name == "." {
            continue;
        }
        let path = alloc::format!("/{}", entry.name);
        let (dir, name) = resolve_parent(cred, &root, &path).map_err(|_| "cpio entry under a missing directory")?;
        let perm = entry.mode & 0o7777;
        // Files keep the owners the archive gives them.
        let owner = Owner { uid: entry.uid, gid: entry.gid };
        let parent = dir.inode();
        match entry.mode & S_IFMT {
            S_IFDIR => {
                if resolve(cred, &root, &path, true).is_ok_and(|d| d.is_dir()) {
                    continue;
                }
                parent.create(&name, S_IFDIR | perm, 0, owner).map_err(|_| "cannot create a directory")?;
            }
            S_IFREG => {
                let file = parent.create(&name, S_IFREG | perm, 0, owner).map_err(|_| "cannot create a file")?;
                file.write_at(0, entry.data).map_err(|_| "out of memory unpacking the initramfs")?;
            }
            S_IFLNK => {
                let target = core::str::from_utf8(entry.data).map_err(|_| "symlink target not UTF-8")?;
                parent.symlink(&name, &String::from(target), owner).map_err(|_| "cannot create a symlink")?;
            }
            kind => {
                // Device nodes and FIFOs are kept as nodes.
                let rdev = super::devfs::makedev(u64::from(entry.rdev_major), u64::from(entry.rdev_minor));
                parent.create(&name, kind | perm, rdev, owner).map_err(|_| "cannot create a special file")?;
            }
        }
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
