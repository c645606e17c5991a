//! `RENAME_EXCHANGE`: two names swap their inodes, in one directory and
//! across two, file with file and file with directory; `..` and the
//! parents' link counts follow a directory that changed parent, and the
//! host's e2fsck finds the result clean.

mod common;
use common::*;
use kiln_ext4::{mode, Errno, Ext4, MountOptions, NewInode, ROOT_INO};

fn attr(m: u16) -> NewInode {
    NewInode { mode: m, uid: 0, gid: 0, now: t(1_700_000_000, 0), rdev: 0 }
}

#[test]
fn exchange_swaps_names_and_keeps_the_tree_consistent() {
    let tmp = TempDir::new("exchange");
    let img = tmp.path("x.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let now = t(1_700_000_001, 0);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let p = fs.create(ROOT_INO, b"p", attr(mode::S_IFREG | 0o644)).unwrap();
    let q = fs.create(ROOT_INO, b"q", attr(mode::S_IFREG | 0o644)).unwrap();
    fs.exchange(ROOT_INO, b"p", ROOT_INO, b"q", now).unwrap();
    assert_eq!(fs.lookup(ROOT_INO, b"p"), Ok(q));
    assert_eq!(fs.lookup(ROOT_INO, b"q"), Ok(p));
    assert_eq!(fs.exchange(ROOT_INO, b"p", ROOT_INO, b"missing", now), Err(Errno::ENOENT));
    // A file in the root and a directory (with a child) in `a`.
    let a = fs.mkdir(ROOT_INO, b"a", attr(mode::S_IFDIR | 0o755)).unwrap();
    let d = fs.mkdir(a, b"d", attr(mode::S_IFDIR | 0o755)).unwrap();
    let child = fs.create(d, b"child", attr(mode::S_IFREG | 0o644)).unwrap();
    let root_links = fs.stat(ROOT_INO).unwrap().nlink;
    let a_links = fs.stat(a).unwrap().nlink;
    fs.exchange(ROOT_INO, b"p", a, b"d", now).unwrap();
    assert_eq!(fs.lookup(ROOT_INO, b"p"), Ok(d));
    assert_eq!(fs.lookup(a, b"d"), Ok(q));
    assert_eq!(fs.lookup(d, b".."), Ok(ROOT_INO));
    assert_eq!(fs.lookup(d, b"child"), Ok(child));
    assert_eq!(fs.stat(ROOT_INO).unwrap().nlink, root_links + 1);
    assert_eq!(fs.stat(a).unwrap().nlink, a_links - 1);
    // A directory may not be swapped into its own subtree.
    assert_eq!(fs.exchange(ROOT_INO, b"p", d, b"child", now), Err(Errno::EINVAL));
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
}

/// `RENAME_WHITEOUT`: the rename and a 0:0 character device under the old
/// name, or neither (a failing rename leaves no whiteout behind); a
/// directory moved this way leaves its parent one link fewer.
#[test]
fn rename_whiteout_leaves_a_char_device_and_stays_clean() {
    let tmp = TempDir::new("whiteout");
    let img = tmp.path("w.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let f = fs.create(ROOT_INO, b"f", attr(mode::S_IFREG | 0o644)).unwrap();
    let wh = attr(mode::S_IFCHR);
    let w = fs.rename_whiteout(ROOT_INO, b"f", ROOT_INO, b"g", wh).unwrap();
    assert_eq!(fs.lookup(ROOT_INO, b"g"), Ok(f));
    assert_eq!(fs.lookup(ROOT_INO, b"f"), Ok(w));
    let st = fs.stat(w).unwrap();
    assert_eq!((st.mode, st.rdev, st.nlink), (mode::S_IFCHR, 0, 1));
    assert_eq!(fs.rename_whiteout(ROOT_INO, b"missing", ROOT_INO, b"h", wh), Err(Errno::ENOENT));
    assert_eq!(fs.lookup(ROOT_INO, b"missing"), Err(Errno::ENOENT));
    let d = fs.mkdir(ROOT_INO, b"d", attr(mode::S_IFDIR | 0o755)).unwrap();
    let sub = fs.mkdir(ROOT_INO, b"sub", attr(mode::S_IFDIR | 0o755)).unwrap();
    let root_links = fs.stat(ROOT_INO).unwrap().nlink;
    fs.rename_whiteout(ROOT_INO, b"d", sub, b"d", wh).unwrap();
    assert_eq!(fs.lookup(sub, b"d"), Ok(d));
    assert_eq!(fs.lookup(d, b".."), Ok(sub));
    assert_eq!(fs.stat(ROOT_INO).unwrap().nlink, root_links - 1);
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
}
