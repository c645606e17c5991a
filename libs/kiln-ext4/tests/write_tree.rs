//! Kiln writes a tree (thousands of files, deep directories, large and
//! sparse files, symlinks, hard links, xattrs, renames, deletions) and the
//! host's `e2fsck -fn` finds the image clean; debugfs then shows the same
//! contents and metadata.

mod common;
use common::*;
use kiln_ext4::{mode, Errno, Ext4, MountOptions, NewInode, XattrFlags, ROOT_INO};
use std::collections::BTreeMap;

fn attr(m: u16, sec: i64) -> NewInode {
    NewInode { mode: m, uid: 1000, gid: 100, now: t(sec, 123_456_789), rdev: 0 }
}

/// What a file should contain, by path.
type Model = BTreeMap<String, Vec<u8>>;

fn write_tree(fs: &mut Ext4<MemDevice>, model: &mut Model, files: usize, extents: bool) {
    let now = t(1_700_000_100, 5);
    // Deep directories.
    let mut dir = ROOT_INO;
    let mut path = String::new();
    for depth in 0..24 {
        let name = format!("d{depth}");
        dir = fs.mkdir(dir, name.as_bytes(), attr(0o755, 1_700_000_000)).unwrap();
        path = format!("{path}/{name}");
    }
    let deep = fs.create(dir, b"bottom", attr(mode::S_IFREG | 0o644, 1)).unwrap();
    fs.write(deep, 0, b"deep data", now).unwrap();
    model.insert(format!("{path}/bottom"), b"deep data".to_vec());
    // Many files over a few directories (one directory grows big).
    let mut dirs = Vec::new();
    for k in 0..4 {
        let n = format!("many{k}");
        dirs.push((fs.mkdir(ROOT_INO, n.as_bytes(), attr(0o755, 2)).unwrap(), n));
    }
    for i in 0..files {
        let (d, dn) = &dirs[if i % 2 == 0 { 0 } else { 1 + i % 3 }];
        let name = format!("f{i:05}");
        let ino = fs.create(*d, name.as_bytes(), attr(mode::S_IFREG | 0o600, 3)).unwrap();
        let data = pattern(i as u64, (i * 37) % 3000);
        fs.write(ino, 0, &data, now).unwrap();
        model.insert(format!("/{dn}/{name}"), data);
    }
    // A large file written in pieces, and one > 4 GiB, sparse.
    let big = fs.create(ROOT_INO, b"big", attr(mode::S_IFREG | 0o644, 4)).unwrap();
    let data = pattern(99, 5 * 1024 * 1024 + 777);
    for (k, chunk) in data.chunks(200_000).enumerate() {
        fs.write(big, (k * 200_000) as u64, chunk, now).unwrap();
    }
    model.insert("/big".into(), data);
    let sparse = fs.create(ROOT_INO, b"sparse", attr(mode::S_IFREG | 0o644, 5)).unwrap();
    fs.write(sparse, 0, b"head", now).unwrap();
    fs.write(sparse, 5 << 30, b"tail beyond 4 GiB", now).unwrap();
    let mut want = vec![0u8; (5 << 30) + 17];
    want[..4].copy_from_slice(b"head");
    want[5 << 30..].copy_from_slice(b"tail beyond 4 GiB");
    assert!(fs.stat(sparse).unwrap().blocks < 100);
    // Symlinks, fast and slow.
    fs.symlink(ROOT_INO, b"fast", b"big", attr(0, 6)).unwrap();
    let long = "long/".repeat(40);
    fs.symlink(ROOT_INO, b"slow", long.as_bytes(), attr(0, 6)).unwrap();
    // Hard links, renames, unlinks, rmdir.
    let (d0, _) = dirs[0];
    let f0 = fs.lookup(d0, b"f00000").unwrap();
    fs.link(f0, ROOT_INO, b"hardlink", now).unwrap();
    model.insert("/hardlink".into(), model["/many0/f00000"].clone());
    fs.rename(d0, b"f00002", dirs[1].0, b"moved", now).unwrap();
    let v = model.remove("/many0/f00002").unwrap();
    model.insert("/many1/moved".into(), v);
    fs.rename(ROOT_INO, b"many3", ROOT_INO, b"renamed3", now).unwrap();
    let moved: Vec<(String, Vec<u8>)> =
        model.iter().filter(|(k, _)| k.starts_with("/many3/")).map(|(k, v)| (k.clone(), v.clone())).collect();
    for (k, v) in moved {
        model.remove(&k);
        model.insert(k.replacen("/many3/", "/renamed3/", 1), v);
    }
    let sub = fs.mkdir(dirs[1].0, b"sub", attr(0o700, 7)).unwrap();
    fs.rename(dirs[1].0, b"sub", dirs[2].0, b"sub-moved", now).unwrap();
    assert_eq!(fs.lookup(sub, b"..").unwrap(), dirs[2].0);
    for i in (4..files).step_by(10) {
        let (d, dn) = &dirs[if i % 2 == 0 { 0 } else { 1 + i % 3 }];
        let dn = if dn == "many3" { "renamed3" } else { dn.as_str() };
        let name = format!("f{i:05}");
        fs.unlink(*d, name.as_bytes(), now).unwrap();
        model.remove(&format!("/{dn}/{name}"));
    }
    let gone = fs.mkdir(ROOT_INO, b"gone", attr(0o755, 8)).unwrap();
    fs.create(gone, b"x", attr(mode::S_IFREG | 0o644, 8)).unwrap();
    assert_eq!(fs.rmdir(ROOT_INO, b"gone", now), Err(Errno::ENOTEMPTY));
    fs.unlink(gone, b"x", now).unwrap();
    fs.rmdir(ROOT_INO, b"gone", now).unwrap();
    // Truncate and fallocate.
    let tr = fs.create(ROOT_INO, b"truncated", attr(mode::S_IFREG | 0o644, 9)).unwrap();
    fs.write(tr, 0, &pattern(5, 100_000), now).unwrap();
    fs.truncate(tr, 5000, now).unwrap();
    fs.truncate(tr, 9000, now).unwrap();
    let mut w = pattern(5, 5000);
    w.resize(9000, 0);
    model.insert("/truncated".into(), w);
    let fa = fs.create(ROOT_INO, b"fallocated", attr(mode::S_IFREG | 0o644, 10)).unwrap();
    if extents {
        fs.fallocate(fa, 0, 1 << 20, false, now).unwrap();
    } else {
        assert_eq!(fs.fallocate(fa, 0, 1 << 20, false, now), Err(Errno::EOPNOTSUPP));
        fs.truncate(fa, 1 << 20, now).unwrap();
    }
    fs.write(fa, 4096 + 10, b"in the middle", now).unwrap();
    let mut w = vec![0u8; 1 << 20];
    w[4106..4106 + 13].copy_from_slice(b"in the middle");
    model.insert("/fallocated".into(), w);
    // Extended attributes: small ones in the inode, a big one in a block.
    fs.set_xattr(big, b"user.small", b"1", XattrFlags::Create, now).unwrap();
    fs.set_xattr(big, b"user.large", &[b'z'; 700], XattrFlags::Any, now).unwrap();
    fs.set_xattr(big, b"trusted.t", b"trusted value", XattrFlags::Any, now).unwrap();
    assert_eq!(fs.set_xattr(big, b"user.small", b"2", XattrFlags::Create, now), Err(Errno::EEXIST));
    fs.set_xattr(tr, b"user.gone", b"soon", XattrFlags::Any, now).unwrap();
    fs.remove_xattr(tr, b"user.gone", now).unwrap();
    assert_eq!(fs.get_xattr(tr, b"user.gone"), Err(Errno::ENODATA));
    model.insert("/sparse".into(), want);
}

fn check_model(fs: &mut Ext4<MemDevice>, model: &Model) {
    for (path, want) in model {
        let mut ino = ROOT_INO;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            ino = fs.lookup(ino, part.as_bytes()).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        }
        let st = fs.stat(ino).unwrap();
        assert_eq!(st.size, want.len() as u64, "{path}");
        if want.len() > 64 << 20 {
            continue;
        }
        let mut got = vec![0u8; want.len()];
        fs.read(ino, 0, &mut got).unwrap();
        assert!(&got == want, "{path} contents");
    }
}

fn run(kind: &str, block_size: &str, files: usize) {
    let tmp = TempDir::new(&format!("write{block_size}"));
    let img = tmp.path("w.img");
    mkfs(kind, &img, 64 * 1024, &["-b", block_size], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    assert!(!fs.is_read_only());
    let mut model = Model::new();
    write_tree(&mut fs, &mut model, files, kind == "ext4");
    check_model(&mut fs, &model);
    let dev = fs.unmount().unwrap();
    dev.save(&img);
    assert_clean(&img);
    // The host sees what Kiln wrote.
    let out = debugfs(&img, "stat /big", false);
    assert!(out.contains("Size: 5243657"), "{out}");
    assert!(out.contains("User:  1000   Group:   100"), "{out}");
    assert!(out.contains("mtime: 0x6553f164:00000014"), "nanoseconds kept: {out}");
    assert!(out.contains("user.large (700)") && out.contains("user.small (1) = \"1\""), "{out}");
    assert!(debugfs_bytes(&img, "cat /many1/moved") == model["/many1/moved"]);
    let out = debugfs(&img, "stat /slow", false);
    assert!(out.contains("Type: symlink"), "{out}");
    let out = debugfs(&img, "stat /sparse", false);
    assert!(out.contains("Size: 5368709137"), "{out}");
    let dump = tmp.path("dump");
    std::fs::create_dir(&dump).unwrap();
    debugfs(&img, &format!("rdump /renamed3 {}", dump.display()), false);
    for (path, want) in model.iter().filter(|(k, _)| k.starts_with("/renamed3/")) {
        let got = std::fs::read(dump.join(&path[1..])).unwrap();
        assert!(&got == want, "{path} as debugfs dumps it");
    }
    // Kiln mounts its own image again and reads the same.
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    check_model(&mut fs, &model);
    let slow = fs.lookup(ROOT_INO, b"slow").unwrap();
    assert_eq!(fs.readlink(slow).unwrap(), "long/".repeat(40).as_bytes());
    let big = fs.lookup(ROOT_INO, b"big").unwrap();
    let mut names = fs.list_xattr(big).unwrap();
    names.sort();
    assert_eq!(names, vec![b"trusted.t".to_vec(), b"user.large".to_vec(), b"user.small".to_vec()]);
}

#[test]
fn kiln_written_tree_is_clean_for_e2fsck_4k() {
    run("ext4", "4096", 3000);
}

#[test]
fn kiln_written_tree_is_clean_for_e2fsck_1k() {
    run("ext4", "1024", 1200);
}

#[test]
fn kiln_written_tree_is_clean_for_e2fsck_ext2() {
    run("ext2", "1024", 600);
}

#[test]
fn full_disk_gives_enospc_and_nothing_is_corrupted() {
    let tmp = TempDir::new("full");
    let img = tmp.path("full.img");
    mkfs("ext4", &img, 4 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let now = t(1_700_000_000, 0);
    let data = pattern(1, 70_000);
    let mut made = Vec::new();
    let mut hit = None;
    for i in 0..10_000 {
        let name = format!("fill{i}");
        let r = fs.create(ROOT_INO, name.as_bytes(), attr(mode::S_IFREG | 0o644, 1)).and_then(|ino| {
            made.push(name.clone());
            fs.write(ino, 0, &data, now)
        });
        if let Err(e) = r {
            hit = Some(e);
            break;
        }
    }
    assert_eq!(hit, Some(Errno::ENOSPC));
    // Directories and xattr blocks fail cleanly too.
    let mut dirs = 0;
    while fs.mkdir(ROOT_INO, format!("dir{dirs}").as_bytes(), attr(0o755, 1)).is_ok() {
        dirs += 1;
    }
    let ino = fs.lookup(ROOT_INO, made[0].as_bytes()).unwrap();
    let _ = fs.set_xattr(ino, b"user.x", &[1; 800], XattrFlags::Any, now);
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
    // Space comes back after unlinks.
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    for n in made.iter().step_by(2) {
        fs.unlink(ROOT_INO, n.as_bytes(), now).unwrap_or_else(|e| panic!("unlink {n}: {e:?} free {:?}", fs.statfs()));
    }
    let ino = fs.create(ROOT_INO, b"after", attr(mode::S_IFREG | 0o644, 1)).unwrap();
    fs.write(ino, 0, &data, now).unwrap();
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
}

#[test]
fn indexed_directory_grows_through_its_index_and_stays_valid() {
    let tmp = TempDir::new("htree");
    let src = tmp.path("src");
    std::fs::create_dir_all(src.join("idx")).unwrap();
    for i in 0..800 {
        std::fs::write(src.join(format!("idx/host-{i:04}")), b"h").unwrap();
    }
    for bs in ["1024", "4096"] {
        let img = tmp.path(&format!("h{bs}.img"));
        mkfs("ext4", &img, 32 * 1024, &["-b", bs], Some(&src));
        let (code, out) = e2fsck(&img, &["-fyD"]);
        assert!(code <= 1, "{out}");
        let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
        let now = t(1_700_000_000, 0);
        let d = fs.lookup(ROOT_INO, b"idx").unwrap();
        assert!(fs.stat(d).unwrap().flags & 0x1000 != 0);
        for i in 0..2500 {
            fs.create(d, format!("kiln-name-{i:05}").as_bytes(), attr(mode::S_IFREG | 0o644, 1)).unwrap();
        }
        for i in (0..800).step_by(3) {
            fs.unlink(d, format!("host-{i:04}").as_bytes(), now).unwrap();
        }
        assert!(fs.stat(d).unwrap().flags & 0x1000 != 0, "still indexed ({bs})");
        for i in (0..2500).step_by(11) {
            fs.lookup(d, format!("kiln-name-{i:05}").as_bytes()).unwrap();
        }
        assert_eq!(fs.lookup(d, b"host-0003"), Err(Errno::ENOENT));
        fs.lookup(d, b"host-0004").unwrap();
        assert_eq!(fs.read_dir(d).unwrap().len(), 2 + 2500 + 800 - 267);
        fs.unmount().unwrap().save(&img);
        assert_clean(&img);
        assert!(debugfs(&img, "htree idx", false).contains("Number of entries (count)"));
    }
}

#[test]
fn directory_kiln_makes_is_indexed_once_it_passes_one_block() {
    let tmp = TempDir::new("mkindex");
    for bs in ["1024", "4096"] {
        let img = tmp.path(&format!("m{bs}.img"));
        mkfs("ext4", &img, 32 * 1024, &["-b", bs], None);
        let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
        let now = t(1_700_000_000, 0);
        let d = fs.mkdir(ROOT_INO, b"big", attr(0o755, 1)).unwrap();
        let small = fs.mkdir(ROOT_INO, b"small", attr(0o755, 1)).unwrap();
        fs.create(small, b"one", attr(mode::S_IFREG | 0o644, 1)).unwrap();
        for i in 0..3000 {
            fs.create(d, format!("kiln-file-{i:05}").as_bytes(), attr(mode::S_IFREG | 0o644, 1)).unwrap();
            if i == 10 {
                assert!(fs.stat(d).unwrap().flags & 0x1000 == 0, "one block: linear ({bs})");
            }
        }
        assert!(fs.stat(d).unwrap().flags & 0x1000 != 0, "indexed past one block ({bs})");
        assert!(fs.stat(small).unwrap().flags & 0x1000 == 0);
        for i in (0..3000).step_by(2) {
            fs.unlink(d, format!("kiln-file-{i:05}").as_bytes(), now).unwrap();
        }
        for i in 0..3000 {
            let r = fs.lookup(d, format!("kiln-file-{i:05}").as_bytes());
            assert_eq!(r.is_ok(), i % 2 == 1, "kiln-file-{i:05} ({bs})");
        }
        assert_eq!(fs.read_dir(d).unwrap().len(), 2 + 1500);
        fs.unmount().unwrap().save(&img);
        assert_clean(&img);
        assert!(debugfs(&img, "htree big", false).contains("Number of entries (count)"));
        // The host's kernel format: Kiln reads its own index back.
        let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
        let d = fs.lookup(ROOT_INO, b"big").unwrap();
        fs.lookup(d, b"kiln-file-02999").unwrap();
        assert_eq!(fs.lookup(d, b"kiln-file-02998"), Err(Errno::ENOENT));
    }
}
