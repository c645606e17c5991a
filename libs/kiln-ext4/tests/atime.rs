//! Recording an access: `set_atime` (a read under relatime or
//! strictatime) moves the atime only, and the host sees it.

mod common;
use common::*;
use kiln_ext4::{mode, Ext4, MountOptions, NewInode, ROOT_INO};

fn attr(m: u16) -> NewInode {
    NewInode { mode: m, uid: 0, gid: 0, now: t(1_700_000_000, 0), rdev: 0 }
}

/// An access (`set_atime`, a read under relatime) moves the atime only:
/// ctime and mtime stay, as Linux's touch_atime; debugfs reads the new
/// atime from the image and e2fsck finds it clean.
#[test]
fn set_atime_moves_the_atime_only() {
    let tmp = TempDir::new("atime");
    let img = tmp.path("a.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let f = fs.create(ROOT_INO, b"f", attr(mode::S_IFREG | 0o644)).unwrap();
    let before = fs.stat(f).unwrap();
    fs.set_atime(f, t(1_800_000_000, 5)).unwrap();
    let after = fs.stat(f).unwrap();
    assert_eq!(after.atime, t(1_800_000_000, 5));
    assert_eq!(after.ctime, before.ctime);
    assert_eq!(after.mtime, before.mtime);
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
    assert!(debugfs(&img, "stat /f", false).contains("atime: 0x6b49d200:00000014"));
}
