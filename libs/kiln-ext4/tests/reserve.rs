//! Delayed allocation's reservations: blocks reserved for data written
//! into a cache cannot be taken by other allocations, a reservation past
//! what the volume can promise gets ENOSPC, writeback uses its
//! reservation (and may use the metadata pool) and never runs out, and
//! released blocks come back; `statfs` leaves reserved blocks out. The
//! host's e2fsck finds the result clean.

mod common;
use common::*;
use kiln_ext4::{mode, Errno, Ext4, MountOptions, NewInode, ROOT_INO};

fn attr(m: u16) -> NewInode {
    NewInode { mode: m, uid: 0, gid: 0, now: t(1_700_000_000, 0), rdev: 0 }
}

#[test]
fn reservations_hold_blocks_until_writeback_uses_them() {
    let tmp = TempDir::new("reserve");
    let img = tmp.path("r.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let f = fs.create(ROOT_INO, b"f", attr(mode::S_IFREG | 0o644)).unwrap();
    let free = fs.statfs().free_blocks;
    // ext4's pool: 2% of 8192 blocks.
    let pool = 8192 / 50;
    // A new file is one hole.
    assert_eq!(fs.unmapped_blocks(f, 0, 16), Ok(vec![(0, 16)]));
    // Everything but the pool can be reserved, not one block more.
    fs.reserve_blocks(free - pool).unwrap();
    assert_eq!(fs.reserve_blocks(1), Err(Errno::ENOSPC));
    assert_eq!(fs.statfs().free_blocks, pool);
    // Nothing else may take reserved blocks: a directory needs one.
    assert_eq!(fs.mkdir(ROOT_INO, b"d", attr(mode::S_IFDIR | 0o755)), Err(Errno::ENOSPC));
    // Writeback of 16 reserved blocks allocates them (and may use the pool
    // for the extent tree); the rest stays reserved.
    let data = vec![0x5au8; 16 * 1024];
    fs.write_back(f, 0, &data, 16).unwrap();
    assert_eq!(fs.reserved_blocks(), free - pool - 16);
    assert_eq!(fs.unmapped_blocks(f, 0, 20), Ok(vec![(16, 20)]));
    // Released blocks are free for others again.
    fs.release_blocks(fs.reserved_blocks());
    assert_eq!(fs.reserved_blocks(), 0);
    fs.mkdir(ROOT_INO, b"d", attr(mode::S_IFDIR | 0o755)).unwrap();
    let mut back = vec![0u8; data.len()];
    assert_eq!(fs.read(f, 0, &mut back), Ok(data.len()));
    assert_eq!(back, data);
    fs.unmount().unwrap().save(&img);
    assert_clean(&img);
}
