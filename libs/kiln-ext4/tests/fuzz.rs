//! Hostile images: mutations of small images (superblock, group
//! descriptors, bitmaps, inode table, extent and directory blocks, xattr
//! blocks, the journal) must give an error or a working (possibly
//! read-only) mount, never a panic or a hang. Each mounted case is then
//! walked, read, written and unmounted. 2,000 cases run in `cargo test`;
//! the `--ignored` test runs 20,000 more.

mod common;
use common::*;
use kiln_ext4::{mode, BlockDevice, Ext4, MountOptions, NewInode, XattrFlags, ROOT_INO};

use std::rc::Rc;
use std::time::{Duration, Instant};

struct Base {
    name: &'static str,
    image: Rc<Vec<u8>>,
    block_size: usize,
    /// Blocks worth mutating: metadata of every kind.
    targets: Vec<u64>,
    metadata_csum: bool,
}

fn parse_blocks(out: &str) -> Vec<u64> {
    out.split_whitespace().filter_map(|w| w.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok()).collect()
}

fn build_base(tmp: &TempDir, name: &'static str, kind: &str, extra: &[&str]) -> Base {
    let src = tmp.path(&format!("src-{name}"));
    std::fs::create_dir_all(src.join("dir/sub")).unwrap();
    for i in 0..120 {
        std::fs::write(src.join(format!("dir/entry-number-{i:03}")), format!("{i}")).unwrap();
    }
    std::fs::write(src.join("file"), pattern(3, 20_000)).unwrap();
    std::fs::write(src.join("dir/sub/leaf"), b"leaf").unwrap();
    std::os::unix::fs::symlink("file", src.join("link")).unwrap();
    std::os::unix::fs::symlink("y/".repeat(50), src.join("longlink")).unwrap();
    host_setxattr(&src.join("file"), "user.k", "value");
    host_setxattr(&src.join("dir/sub/leaf"), "user.big", &"q".repeat(400));
    let img = tmp.path(&format!("{name}.img"));
    mkfs(kind, &img, 4096, extra, Some(&src));
    let (code, out) = e2fsck(&img, &["-fyD"]);
    assert!(code <= 1, "{out}");
    // A fragmented file (an extent tree with an index block) via Kiln.
    if kind == "ext4" {
        let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
        let a = fs
            .create(ROOT_INO, b"frag", NewInode { mode: mode::S_IFREG | 0o644, uid: 0, gid: 0, now: t(1, 0), rdev: 0 })
            .unwrap();
        let b = fs
            .create(
                ROOT_INO,
                b"filler",
                NewInode { mode: mode::S_IFREG | 0o644, uid: 0, gid: 0, now: t(1, 0), rdev: 0 },
            )
            .unwrap();
        for k in 0..12u64 {
            fs.write(a, k * 1024, &[k as u8; 1024], t(2, 0)).unwrap();
            fs.write(b, k * 1024, &[1; 1024], t(2, 0)).unwrap();
        }
        fs.unmount().unwrap().save(&img);
        assert_clean(&img);
    }
    let dump = std::process::Command::new("/usr/sbin/dumpe2fs").arg(&img).output().unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout).to_string();
    let mut targets: Vec<u64> = vec![0, 1, 2];
    for line in dump.lines() {
        for key in ["Block bitmap at ", "Inode bitmap at ", "Inode table at "] {
            if let Some(rest) = line.trim().strip_prefix(key) {
                let first: u64 = rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
                let n = if key.starts_with("Inode table") { 4 } else { 1 };
                targets.extend(first..first + n);
            }
        }
    }
    for p in ["/", "/dir", "/dir/sub", "/frag", "<8>", "/dir/sub/leaf"] {
        let blocks = parse_blocks(&debugfs(&img, &format!("blocks {p}"), false));
        targets.extend(blocks.iter().take(8));
    }
    for p in ["/frag", "/file"] {
        let out = debugfs(&img, &format!("ex {p}"), false);
        for line in out.lines().filter(|l| l.contains("- ") && l.trim_start().starts_with(char::is_numeric)) {
            if let Some(b) = parse_blocks(line).last() {
                targets.push(*b);
            }
        }
    }
    let stat = debugfs(&img, "stat /dir/sub/leaf", false);
    if let Some(acl) = stat.lines().find_map(|l| l.split("File ACL: ").nth(1)) {
        targets.extend(parse_blocks(acl).first());
    }
    // Leave a committed transaction in the journal so that replay runs.
    if kind == "ext4" {
        let data = tmp.path("jdata");
        std::fs::write(&data, pattern(9, 2048)).unwrap();
        let blocks = parse_blocks(&debugfs(&img, "blocks /file", false));
        let script = format!("jo -c\njw -b {},{} {}\njw -r {}\njc\n", blocks[0], blocks[1], data.display(), blocks[1]);
        let mut c = std::process::Command::new("/usr/sbin/debugfs")
            .args(["-w", "-f", "-"])
            .arg(&img)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        c.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
        c.wait().unwrap();
    }
    targets.sort();
    targets.dedup();
    let image = std::fs::read(&img).unwrap();
    let block_size = if dump.contains("Block size:               4096") { 4096 } else { 1024 };
    Base { name, image: Rc::new(image), block_size, targets, metadata_csum: dump.contains("metadata_csum") }
}

fn bases() -> (TempDir, Vec<Base>) {
    let tmp = TempDir::new("fuzz");
    let b = vec![
        build_base(&tmp, "ext4-csum", "ext4", &["-b", "1024"]),
        build_base(&tmp, "ext4-nocsum", "ext4", &["-b", "1024", "-O", "^metadata_csum"]),
        build_base(&tmp, "ext2", "ext2", &["-b", "1024"]),
    ];
    (tmp, b)
}

fn mutate(base: &Base, rng: &mut Rng) -> OverlayDevice {
    let mut dev = OverlayDevice::new(base.image.clone());
    let bs = base.block_size;
    let n = 1 + rng.below(6);
    let mut touched_sb = false;
    for _ in 0..n {
        let blk = base.targets[rng.below(base.targets.len() as u64) as usize] as usize;
        let (start, len) = if blk == 0 && bs == 1024 { (1024, 1024) } else { (blk * bs, bs) };
        let len = if blk == 0 || (blk == 1 && bs == 1024) { 1024 } else { len };
        let start = if blk == 0 { 1024 } else { start };
        touched_sb |= start == 1024;
        // Aim at the start of blocks more often: headers live there.
        let off = if rng.below(2) == 0 { rng.below(64) as usize } else { rng.below(len as u64) as usize };
        let at = start + off.min(len - 1);
        match rng.below(5) {
            0 => dev.poke(at, rng.next() as u8),
            1 => {
                let mut s = vec![0u8; 512];
                dev.read((at / 512) as u64, &mut s).unwrap();
                dev.poke(at, s[at % 512] ^ (1 << rng.below(8)));
            }
            2 => dev.poke(at, 0),
            3 => dev.poke(at, 0xFF),
            _ => {
                let v: u32 = [0, 1, 2, 0x7fff_ffff, 0xffff_ffff, 0x8000, 12, 4096][rng.below(8) as usize];
                for (i, b) in v.to_le_bytes().iter().enumerate() {
                    if at + i < start + len {
                        dev.poke(at + i, *b);
                    }
                }
            }
        }
    }
    // Half the superblock mutations get a valid checksum, to get past it.
    if touched_sb && base.metadata_csum && rng.below(2) == 0 {
        let mut sb = vec![0u8; 1024];
        dev.read(2, &mut sb).unwrap();
        let c = kiln_ext4::crc32c(!0, &sb[..1020]);
        for (i, b) in c.to_le_bytes().iter().enumerate() {
            dev.poke(1024 + 1020 + i, *b);
        }
    }
    dev
}

/// Walks, reads and changes a mounted case; errors are fine, panics not.
fn exercise(fs: &mut Ext4<OverlayDevice>) {
    let mut stack = vec![(ROOT_INO, 0)];
    let mut seen = 0;
    let mut buf = vec![0u8; 64 * 1024];
    let mut some_file = None;
    let mut some_dir = None;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = fs.read_dir(dir) else { continue };
        for e in entries {
            seen += 1;
            if seen > 400 || e.name == b"." || e.name == b".." {
                continue;
            }
            let _ = fs.lookup(dir, &e.name);
            let Ok(st) = fs.stat(e.ino) else { continue };
            let _ = fs.list_xattr(e.ino);
            let _ = fs.get_xattr(e.ino, b"user.k");
            match st.mode & mode::S_IFMT {
                mode::S_IFDIR if depth < 8 => {
                    stack.push((e.ino, depth + 1));
                    some_dir = Some(e.ino);
                }
                mode::S_IFLNK => {
                    let _ = fs.readlink(e.ino);
                }
                mode::S_IFREG => {
                    let _ = fs.read(e.ino, 0, &mut buf);
                    let _ = fs.read(e.ino, st.size.saturating_sub(100), &mut buf[..4096]);
                    some_file = Some((dir, e.name.clone(), e.ino));
                }
                _ => {}
            }
        }
    }
    if fs.is_read_only() {
        return;
    }
    let now = t(1_800_000_000, 1);
    let attr = NewInode { mode: mode::S_IFREG | 0o644, uid: 0, gid: 0, now, rdev: 0 };
    if let Ok(f) = fs.create(ROOT_INO, b"fuzz-new", attr) {
        let _ = fs.write(f, 0, &buf[..5000], now);
        let _ = fs.write(f, 1 << 20, b"far", now);
        let _ = fs.set_xattr(f, b"user.f", &[7u8; 300], XattrFlags::Any, now);
        let _ = fs.truncate(f, 100, now);
    }
    let _ = fs.mkdir(ROOT_INO, b"fuzz-dir", NewInode { mode: 0o755, ..attr });
    if let Some(d) = some_dir {
        // Indexed directories grow through their index.
        for k in 0..40 {
            let _ = fs.create(d, format!("fuzz-entry-{k}").as_bytes(), attr);
        }
        let _ = fs.unlink(d, b"fuzz-entry-7", now);
    }
    if let Ok(f) = fs.lookup(ROOT_INO, b"fuzz-new") {
        fs.pin(f);
        let _ = fs.unlink(ROOT_INO, b"fuzz-new", now);
        let _ = fs.write(f, 0, b"orphan", now);
        let _ = fs.unpin(f, now);
    }
    if let Some((dir, name, ino)) = some_file {
        let _ = fs.write(ino, 10, b"overwrite", now);
        let _ = fs.rename(dir, &name, ROOT_INO, b"fuzz-moved", now);
        let _ = fs.unlink(ROOT_INO, b"fuzz-moved", now);
    }
    let _ = fs.rmdir(ROOT_INO, b"fuzz-dir", now);
    let _ = fs.commit();
}

fn run(cases: u64, seed: u64) {
    let (_tmp, bases) = bases();
    let mut rng = Rng(seed);
    let (mut mounted, mut refused) = (0u64, 0u64);
    let mut slowest = Duration::ZERO;
    for case in 0..cases {
        let base = &bases[(case % bases.len() as u64) as usize];
        let dev = mutate(base, &mut rng);
        let start = Instant::now();
        match Ext4::mount(dev, MountOptions::default()) {
            Ok(mut fs) => {
                mounted += 1;
                exercise(&mut fs);
                let _ = fs.unmount();
            }
            Err(_) => refused += 1,
        }
        let took = start.elapsed();
        slowest = slowest.max(took);
        assert!(took < Duration::from_secs(5), "case {case} of {} took {took:?}", base.name);
    }
    eprintln!("fuzz: {cases} mutated images, {mounted} mounted and exercised, {refused} refused; slowest {slowest:?}");
    assert!(mounted > cases / 10 && refused > cases / 20, "mutations reach past and stop at validation");
}

#[test]
fn two_thousand_mutated_images_never_panic() {
    run(2000, 0x5EED_0001);
}

#[test]
#[ignore]
fn twenty_thousand_more_mutated_images_never_panic() {
    run(20_000, 0x5EED_0002);
}

#[test]
#[ignore]
fn ten_thousand_mutated_images_never_panic() {
    run(10_000, 0x5EED_0003);
}

/// For the kernel's batch (`xtask`'s hostile-image boots): writes
/// `KILN_FUZZ_COUNT` mutated images, seeded by `KILN_FUZZ_SEED`, into the
/// folder `KILN_FUZZ_OUT` as `case-N.img` (N from `KILN_FUZZ_FIRST`), the
/// same mutations the host cases get, so a kernel failure is reproduced
/// by its seed and number. Does nothing without `KILN_FUZZ_OUT`.
#[test]
#[ignore]
fn write_images_for_the_kernel() {
    let Ok(out) = std::env::var("KILN_FUZZ_OUT") else { return };
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (count, seed, first) = (env("KILN_FUZZ_COUNT", 24), env("KILN_FUZZ_SEED", 1), env("KILN_FUZZ_FIRST", 0));
    let (_tmp, bases) = bases();
    let mut rng = Rng(seed);
    for case in 0..first + count {
        let base = &bases[(case % bases.len() as u64) as usize];
        let dev = mutate(base, &mut rng);
        if case < first {
            continue;
        }
        let mut image = base.image.as_ref().clone();
        for (s, data) in &dev.changed {
            let at = *s as usize * 512;
            image[at..at + 512].copy_from_slice(data);
        }
        std::fs::write(format!("{out}/case-{case}.img"), image).unwrap();
    }
}
