//! fallocate's content-changing modes against a model of the file's bytes:
//! punching holes (blocks freed, edges zeroed, nothing past the end),
//! zeroing ranges (unwritten blocks, size grown unless KEEP_SIZE),
//! collapsing and inserting block-aligned ranges (the rest of the file
//! moves), on 1 KiB and 4 KiB blocks and on a fragmented file whose tree
//! has index blocks. Linux's errnos for each mode's misuse. After each
//! run the host's e2fsck finds the image clean and debugfs reads back the
//! model's bytes.

mod common;
use common::*;
use kiln_ext4::{mode, Errno, Ext4, MountOptions, NewInode, ROOT_INO};

fn attr(m: u16) -> NewInode {
    NewInode { mode: m, uid: 0, gid: 0, now: t(1_700_000_000, 0), rdev: 0 }
}

fn read_all(fs: &mut Ext4<MemDevice>, ino: u32) -> Vec<u8> {
    let size = fs.stat(ino).unwrap().size as usize;
    let mut buf = vec![0u8; size];
    assert_eq!(fs.read(ino, 0, &mut buf), Ok(size));
    buf
}

/// Data blocks the file holds, from `stat` (sectors, less tree blocks:
/// the callers compare files small enough to keep their tree in the inode).
fn data_blocks(fs: &mut Ext4<MemDevice>, ino: u32, bs: u64) -> u64 {
    fs.stat(ino).unwrap().blocks / (bs / 512)
}

fn each_mode(block: u64) {
    let tmp = TempDir::new(&format!("falloc{block}"));
    let img = tmp.path("f.img");
    mkfs("ext4", &img, 16 * 1024, &["-b", &block.to_string()], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let now = t(1_700_000_100, 0);
    let f = fs.create(ROOT_INO, b"f", attr(mode::S_IFREG | 0o644)).unwrap();
    let bs = block;
    let mut model = pattern(7, (40 * bs) as usize);
    fs.write(f, 0, &model, now).unwrap();
    assert_eq!(data_blocks(&mut fs, f, bs), 40);
    let free0 = fs.statfs().free_blocks;

    // Punch: blocks 3..9 wholly inside go, the edges are zeroed.
    let (off, len) = (2 * bs + 100, 7 * bs);
    fs.punch_hole(f, off, len, now).unwrap();
    model[off as usize..(off + len) as usize].fill(0);
    assert_eq!(read_all(&mut fs, f), model);
    assert_eq!(data_blocks(&mut fs, f, bs), 34);
    assert_eq!(fs.statfs().free_blocks, free0 + 6);
    assert_eq!(fs.unmapped_blocks(f, 0, 40), Ok(vec![(3, 9)]));
    // At or past the end: nothing, and no error. Across the end: stops there.
    fs.punch_hole(f, 40 * bs, bs, now).unwrap();
    fs.punch_hole(f, 39 * bs, 10 * bs, now).unwrap();
    model[(39 * bs) as usize..].fill(0);
    assert_eq!(read_all(&mut fs, f), model);
    assert_eq!(fs.stat(f).unwrap().size, 40 * bs);

    // Zero range with KEEP_SIZE: blocks stay (written become unwritten),
    // a hole inside gets unwritten blocks, past the end blocks but no size.
    let (off, len) = (bs / 2, 5 * bs);
    fs.zero_range(f, off, len, true, now).unwrap();
    model[off as usize..(off + len) as usize].fill(0);
    assert_eq!(read_all(&mut fs, f), model);
    fs.zero_range(f, 4 * bs, 2 * bs, true, now).unwrap();
    assert_eq!(fs.unmapped_blocks(f, 0, 40), Ok(vec![(6, 9), (39, 40)]));
    fs.zero_range(f, 40 * bs, 2 * bs, true, now).unwrap();
    assert_eq!(fs.stat(f).unwrap().size, 40 * bs);
    // Without KEEP_SIZE the size grows to the range's end.
    fs.zero_range(f, 41 * bs + 10, 20, false, now).unwrap();
    model.resize((41 * bs + 30) as usize, 0);
    assert_eq!(read_all(&mut fs, f), model);

    // Collapse: block-aligned, ending before the end of the file.
    assert_eq!(fs.collapse_range(f, bs + 1, bs, now), Err(Errno::EINVAL));
    assert_eq!(fs.collapse_range(f, bs, bs + 1, now), Err(Errno::EINVAL));
    assert_eq!(fs.collapse_range(f, 30 * bs, 11 * bs + 30, now), Err(Errno::EINVAL));
    assert_eq!(fs.collapse_range(f, 30 * bs, 20 * bs, now), Err(Errno::EINVAL));
    let before = data_blocks(&mut fs, f, bs);
    fs.collapse_range(f, 10 * bs, 4 * bs, now).unwrap();
    model.drain((10 * bs) as usize..(14 * bs) as usize);
    assert_eq!(read_all(&mut fs, f), model);
    assert_eq!(data_blocks(&mut fs, f, bs), before - 4);

    // Insert: a hole opens, the rest moves up; at or past the end EINVAL.
    assert_eq!(fs.insert_range(f, bs / 2, bs, now), Err(Errno::EINVAL));
    let size = fs.stat(f).unwrap().size;
    assert_eq!(fs.insert_range(f, size.div_ceil(bs) * bs, bs, now), Err(Errno::EINVAL));
    assert_eq!(fs.insert_range(f, 0, u64::from(u32::MAX) * bs, now), Err(Errno::EFBIG));
    fs.insert_range(f, 5 * bs, 3 * bs, now).unwrap();
    let at = (5 * bs) as usize;
    model.splice(at..at, std::iter::repeat_n(0u8, (3 * bs) as usize));
    assert_eq!(read_all(&mut fs, f), model);
    assert_eq!(fs.unmapped_blocks(f, 5, 8), Ok(vec![(5, 8)]));
    // Writes into the inserted hole and over unwritten blocks land.
    let patch = pattern(9, (2 * bs) as usize);
    fs.write(f, 6 * bs, &patch, now).unwrap();
    model[(6 * bs) as usize..(8 * bs) as usize].copy_from_slice(&patch);
    fs.write(f, 3, b"abc", now).unwrap();
    model[3..6].copy_from_slice(b"abc");
    assert_eq!(read_all(&mut fs, f), model);

    // A directory and a block-mapped file refuse.
    let d = fs.mkdir(ROOT_INO, b"d", attr(mode::S_IFDIR | 0o755)).unwrap();
    assert_eq!(fs.punch_hole(d, 0, bs, now), Err(Errno::EISDIR));

    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
    assert_eq!(debugfs_bytes(&img, "cat /f"), model);
}

#[test]
fn punch_zero_collapse_insert_on_4k_blocks() {
    each_mode(4096);
}

#[test]
fn punch_zero_collapse_insert_on_1k_blocks() {
    each_mode(1024);
}

/// A file of many small extents (a tree with index blocks): every mode
/// rewrites it, and what the tree held moves as the model says.
#[test]
fn fragmented_file_with_index_blocks() {
    let tmp = TempDir::new("fallocfrag");
    let img = tmp.path("g.img");
    mkfs("ext4", &img, 16 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let now = t(1_700_000_200, 0);
    let f = fs.create(ROOT_INO, b"frag", attr(mode::S_IFREG | 0o644)).unwrap();
    let g = fs.create(ROOT_INO, b"other", attr(mode::S_IFREG | 0o644)).unwrap();
    let bs = 1024u64;
    let mut model = vec![0u8; (599 * bs) as usize];
    // Interleaved with another file, every other block: ~300 extents.
    for b in (0..600u64).step_by(2) {
        let d = pattern(b, bs as usize);
        fs.write(f, b * bs, &d, now).unwrap();
        fs.write(g, b * bs, &d, now).unwrap();
        model[(b * bs) as usize..((b + 1) * bs) as usize].copy_from_slice(&d);
    }
    assert!(fs.stat(f).unwrap().blocks / 2 > 300, "the tree has index blocks");
    let mut rng = Rng(42);
    for step in 0..40 {
        let size = model.len() as u64;
        let blocks = size / bs;
        let a = rng.below(blocks - 2);
        let n = 1 + rng.below((blocks - a - 1).min(40));
        match step % 4 {
            0 => {
                let off = a * bs + rng.below(bs);
                let len = n * bs;
                fs.punch_hole(f, off, len, now).unwrap();
                let end = (off + len).min(size) as usize;
                model[off as usize..end].fill(0);
            }
            1 => {
                let off = a * bs + rng.below(bs);
                let len = n * bs - rng.below(bs);
                fs.zero_range(f, off, len, false, now).unwrap();
                let end = (off + len) as usize;
                if end > model.len() {
                    model.resize(end, 0);
                }
                model[off as usize..end].fill(0);
            }
            2 => {
                fs.collapse_range(f, a * bs, n * bs, now).unwrap();
                model.drain((a * bs) as usize..((a + n) * bs) as usize);
            }
            _ => {
                fs.insert_range(f, a * bs, n * bs, now).unwrap();
                let at = (a * bs) as usize;
                model.splice(at..at, std::iter::repeat_n(0u8, (n * bs) as usize));
            }
        }
        let got = read_all(&mut fs, f);
        let first_diff = got.iter().zip(&model).position(|(a, b)| a != b);
        assert!(
            got.len() == model.len() && first_diff.is_none(),
            "step {step}: sizes {} {}, first difference at {first_diff:?}",
            got.len(),
            model.len()
        );
        if step % 10 == 9 {
            fs.commit().unwrap();
        }
    }
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
    assert_eq!(debugfs_bytes(&img, "cat /frag"), model);
}

/// ENOSPC in the middle of a zero range leaves the file as it was.
#[test]
fn zero_range_out_of_space_changes_nothing() {
    let tmp = TempDir::new("fallocnospc");
    let img = tmp.path("n.img");
    mkfs("ext4", &img, 2 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let now = t(1_700_000_300, 0);
    let f = fs.create(ROOT_INO, b"f", attr(mode::S_IFREG | 0o644)).unwrap();
    let data = pattern(3, 8 * 1024);
    fs.write(f, 0, &data, now).unwrap();
    let before = fs.stat(f).unwrap();
    assert_eq!(fs.zero_range(f, 1000, 64 << 20, false, now), Err(Errno::ENOSPC));
    let after = fs.stat(f).unwrap();
    assert_eq!((after.size, after.blocks), (before.size, before.blocks));
    assert_eq!(read_all(&mut fs, f), data);
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
}
