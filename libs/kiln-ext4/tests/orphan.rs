//! Open files without names: a pinned inode survives its last unlink on
//! the orphan list, is freed at its last unpin, and after a crash the
//! orphan list is processed by Kiln's mount and by e2fsck alike.

mod common;
use common::*;
use kiln_ext4::{mode, Errno, Ext4, MountOptions, NewInode, ROOT_INO};

fn attr() -> NewInode {
    NewInode { mode: mode::S_IFREG | 0o644, uid: 0, gid: 0, now: t(1_700_000_000, 0), rdev: 0 }
}

#[test]
fn unlinked_open_file_lives_until_unpinned_or_crash() {
    let tmp = TempDir::new("orphan");
    let img = tmp.path("o.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let now = t(1_700_000_001, 0);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let before = fs.statfs();
    // Unpinned after the unlink: freed then.
    let a = fs.create(ROOT_INO, b"a", attr()).unwrap();
    fs.write(a, 0, &pattern(1, 50_000), now).unwrap();
    fs.pin(a);
    fs.unlink(ROOT_INO, b"a", now).unwrap();
    assert_eq!(fs.lookup(ROOT_INO, b"a"), Err(Errno::ENOENT));
    let mut got = vec![0u8; 50_000];
    fs.read(a, 0, &mut got).unwrap();
    assert!(got == pattern(1, 50_000), "still readable while open");
    fs.write(a, 50_000, b"more", now).unwrap();
    fs.unpin(a, now).unwrap();
    assert!(fs.stat(a).is_err());
    fs.commit().unwrap();
    assert_eq!(fs.statfs().free_blocks, before.free_blocks);
    assert_eq!(fs.statfs().free_inodes, before.free_inodes);
    // Still open at a crash: on the orphan list.
    let b = fs.create(ROOT_INO, b"b", attr()).unwrap();
    fs.write(b, 0, &pattern(2, 30_000), now).unwrap();
    fs.pin(b);
    fs.unlink(ROOT_INO, b"b", now).unwrap();
    fs.commit().unwrap();
    let crashed = fs.into_device();
    // e2fsck frees the orphan.
    crashed.save(&img);
    let (code, out) = e2fsck(&img, &["-fy"]);
    assert!(code <= 1, "{out}");
    assert_clean(&img);
    // So does Kiln's mount.
    let opts = MountOptions { now: t(1_700_000_100, 0), ..Default::default() };
    let fs = Ext4::mount(MemDevice::new(crashed.data), opts).unwrap();
    assert_eq!(fs.statfs().free_inodes, before.free_inodes);
    assert_eq!(fs.statfs().free_blocks, before.free_blocks);
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
}
