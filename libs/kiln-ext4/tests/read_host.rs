//! Images written by the host's mkfs (`-d` from a folder) read back
//! identically: contents, sizes, modes, owners, times, symlinks, xattrs,
//! sparse files, and htree lookups in directories e2fsck indexed.

mod common;
use common::*;
use kiln_ext4::{Ext4, MountOptions, ROOT_INO};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

fn build_host_tree(root: &Path) {
    std::fs::create_dir_all(root.join("a/b/c/d/e")).unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(root.join("small.txt"), b"hello, ext4\n").unwrap();
    std::fs::write(root.join("a/b/c/d/e/deep"), pattern(7, 5000)).unwrap();
    std::fs::write(root.join("big.bin"), pattern(1, 3 * 1024 * 1024 + 123)).unwrap();
    // Sparse: data at 0 and at 40 MiB.
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(root.join("sparse")).unwrap();
        f.write_all(b"start").unwrap();
        f.seek(SeekFrom::Start(40 << 20)).unwrap();
        f.write_all(b"end").unwrap();
    }
    std::os::unix::fs::symlink("small.txt", root.join("fastlink")).unwrap();
    let long = "x/".repeat(60) + "target";
    std::os::unix::fs::symlink(&long, root.join("slowlink")).unwrap();
    std::fs::create_dir(root.join("many")).unwrap();
    for i in 0..1500 {
        std::fs::write(root.join(format!("many/file-{i:05}-with-a-longer-name")), format!("{i}\n")).unwrap();
    }
    std::fs::set_permissions(root.join("small.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    host_setxattr(&root.join("small.txt"), "user.color", "blue");
    host_setxattr(&root.join("big.bin"), "user.big", &"v".repeat(300));
}

fn compare_tree<D: kiln_ext4::BlockDevice>(fs: &mut Ext4<D>, dir_ino: u32, host: &Path, count: &mut usize) {
    let mut names: Vec<Vec<u8>> = fs.read_dir(dir_ino).unwrap().into_iter().map(|e| e.name).collect();
    names.retain(|n| n != b"." && n != b".." && n != b"lost+found");
    names.sort();
    let mut host_names: Vec<Vec<u8>> =
        std::fs::read_dir(host).unwrap().map(|e| e.unwrap().file_name().into_encoded_bytes()).collect();
    host_names.sort();
    assert_eq!(names, host_names, "names in {host:?}");
    for n in names {
        let hp = host.join(std::str::from_utf8(&n).unwrap());
        let ino = fs.lookup(dir_ino, &n).unwrap();
        let st = fs.stat(ino).unwrap();
        let hm = std::fs::symlink_metadata(&hp).unwrap();
        assert_eq!(st.mode as u32, hm.mode(), "mode of {hp:?}");
        if !hm.is_dir() {
            assert_eq!(st.size, hm.len(), "size of {hp:?}");
        }
        // mkfs -d copies whole seconds only (nanoseconds are checked in
        // the write tests, against debugfs).
        assert_eq!(st.mtime.sec, hm.mtime(), "mtime of {hp:?}");
        assert_eq!(st.uid, 0);
        *count += 1;
        if hm.file_type().is_symlink() {
            let target = std::fs::read_link(&hp).unwrap().into_os_string().into_encoded_bytes();
            assert_eq!(fs.readlink(ino).unwrap(), target);
        } else if hm.is_dir() {
            compare_tree(fs, ino, &hp, count);
        } else {
            let want = std::fs::read(&hp).unwrap();
            let mut got = vec![0u8; want.len() + 10];
            let n = fs.read(ino, 0, &mut got).unwrap();
            assert_eq!(n, want.len());
            assert!(got[..n] == want[..], "contents of {hp:?}");
            // The page cache's scattered read: 4 KiB pages from page 1
            // (or 0) on, bytes past the end left as they were.
            let from = if want.len() > 4096 { 4096 } else { 0 };
            let mut pages = vec![[0xa5u8; 4096]; (want.len() - from).div_ceil(4096).clamp(1, 5)];
            let mut parts: Vec<&mut [u8]> = pages.iter_mut().map(|p| &mut p[..]).collect();
            let n = fs.read_scatter(ino, from as u64, &mut parts).unwrap();
            let flat = pages.concat();
            assert_eq!(n, (want.len() - from).min(flat.len()), "scattered read of {hp:?}");
            assert!(flat[..n] == want[from..from + n], "scattered contents of {hp:?}");
            assert!(flat[n..].iter().all(|&b| b == 0xa5), "scattered read past the end of {hp:?}");
        }
    }
}

#[test]
fn debian_default_ext4_reads_back_identically() {
    let tmp = TempDir::new("readhost");
    let src = tmp.path("src");
    build_host_tree(&src);
    for (tag, args) in [("4k", &["-b", "4096"][..]), ("1k", &["-b", "1024"][..])] {
        let img = tmp.path(&format!("{tag}.img"));
        mkfs("ext4", &img, 96 * 1024, args, Some(&src));
        // Index the big directory the way Linux would have.
        let (code, out) = e2fsck(&img, &["-fyD"]);
        assert!(code <= 1, "e2fsck -fyD: {out}");
        assert!(debugfs(&img, "htree many", false).contains("Root node dump"), "many/ is indexed");
        let mut fs =
            Ext4::mount(MemDevice::open(&img), MountOptions { read_only: true, ..Default::default() }).unwrap();
        let mut count = 0;
        compare_tree(&mut fs, ROOT_INO, &src, &mut count);
        assert!(count > 1500);
        // Every name of the indexed directory resolves through the htree.
        let many = fs.lookup(ROOT_INO, b"many").unwrap();
        assert!(fs.stat(many).unwrap().flags & 0x1000 != 0, "INDEX_FL");
        for i in (0..1500).step_by(7) {
            let ino = fs.lookup(many, format!("file-{i:05}-with-a-longer-name").as_bytes()).unwrap();
            let mut b = [0u8; 16];
            let n = fs.read(ino, 0, &mut b).unwrap();
            assert_eq!(&b[..n], format!("{i}\n").as_bytes());
        }
        assert_eq!(fs.lookup(many, b"file-99999-absent"), Err(kiln_ext4::Errno::ENOENT));
        // Sparse file: holes read as zeros; few blocks allocated.
        let sp = fs.lookup(ROOT_INO, b"sparse").unwrap();
        let st = fs.stat(sp).unwrap();
        assert!(st.blocks < 64, "sparse file allocates little: {}", st.blocks);
        let mut b = vec![1u8; 4096];
        fs.read(sp, 20 << 20, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0));
        let mut pages = vec![[1u8; 4096]; 3];
        let mut parts: Vec<&mut [u8]> = pages.iter_mut().map(|p| &mut p[..]).collect();
        fs.read_scatter(sp, 20 << 20, &mut parts).unwrap();
        assert!(pages.iter().all(|p| p.iter().all(|&x| x == 0)), "scattered read of a hole");
        // Extended attributes, in the inode and in a block.
        let small = fs.lookup(ROOT_INO, b"small.txt").unwrap();
        if let Ok(v) = fs.get_xattr(small, b"user.color") {
            assert_eq!(v, b"blue");
            let big = fs.lookup(ROOT_INO, b"big.bin").unwrap();
            assert_eq!(fs.get_xattr(big, b"user.big").unwrap(), "v".repeat(300).as_bytes());
        }
        assert_eq!(fs.get_xattr(small, b"user.none"), Err(kiln_ext4::Errno::ENODATA));
    }
}

#[test]
fn ext2_image_reads_back_identically() {
    let tmp = TempDir::new("ext2");
    let src = tmp.path("src");
    build_host_tree(&src);
    let img = tmp.path("ext2.img");
    mkfs("ext2", &img, 64 * 1024, &["-b", "1024"], Some(&src));
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    assert!(!fs.is_read_only());
    let mut count = 0;
    compare_tree(&mut fs, ROOT_INO, &src, &mut count);
    assert!(count > 1500);
}
