//! The jbd2 journal both ways: Kiln replays logs that e2fsprogs' debugfs
//! wrote (with and without csum v3, with revoke records), and the host's
//! e2fsck replays Kiln's log after a power cut at every point of a commit,
//! leaving a clean file system that holds either all of the transaction
//! or none of it; Kiln's own replay gives the same.

mod common;
use common::*;
use kiln_ext4::{mode, Errno, Ext4, MountOptions, NewInode, Timestamp, ROOT_INO};
use std::process::Command;

fn bmap(img: &std::path::Path, path: &str, lblk: u32) -> u64 {
    let out = debugfs(img, &format!("bmap {path} {lblk}"), false);
    out.lines().filter_map(|l| l.trim().parse().ok()).next().expect("bmap")
}

fn debugfs_script(img: &std::path::Path, script: &str) {
    let mut c = Command::new("/usr/sbin/debugfs")
        .arg("-w")
        .arg("-f")
        .arg("-")
        .arg(img)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    c.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    assert!(c.wait().unwrap().success());
}

#[test]
fn journal_written_by_e2fsprogs_is_replayed_at_mount() {
    let tmp = TempDir::new("jreplay");
    let src = tmp.path("src");
    std::fs::create_dir(&src).unwrap();
    let old = pattern(1, 8192);
    std::fs::write(src.join("f"), &old).unwrap();
    let new = pattern(2, 8192);
    std::fs::write(tmp.path("new"), &new).unwrap();
    for (tag, open) in [("csum3", "jo -c"), ("plain", "jo")] {
        let img = tmp.path(&format!("{tag}.img"));
        mkfs("ext4", &img, 16 * 1024, &["-b", "4096"], Some(&src));
        let (b0, b1) = (bmap(&img, "/f", 0), bmap(&img, "/f", 1));
        // Transaction 1 logs both blocks; transaction 2 revokes the second.
        debugfs_script(&img, &format!("{open}\njw -b {b0},{b1} {}\njw -r {b1}\njc\n", tmp.path("new").display()));
        assert!(debugfs(&img, "logdump", false).contains("revoke table"), "{tag}: log written");
        let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
        assert_eq!(fs.replayed, (2, 1), "{tag}: two transactions, one block replayed");
        let ino = fs.lookup(ROOT_INO, b"f").unwrap();
        let mut got = vec![0u8; 8192];
        fs.read(ino, 0, &mut got).unwrap();
        assert!(got[..4096] == new[..4096], "{tag}: logged block replayed");
        assert!(got[4096..] == old[4096..], "{tag}: revoked block left alone");
        fs.unmount().unwrap().save(&img);
        assert_clean(&img);
    }
}

fn attr() -> NewInode {
    NewInode { mode: mode::S_IFREG | 0o644, uid: 0, gid: 0, now: t(1_700_000_000, 0), rdev: 0 }
}

/// Batch A's work (not yet committed): directory `a` with 20 files of
/// known bytes. Returns the directory.
fn batch_a(fs: &mut Ext4<MemDevice>, now: Timestamp) -> u32 {
    let d = fs.mkdir(ROOT_INO, b"a", NewInode { mode: 0o755, ..attr() }).unwrap();
    for i in 0..20 {
        let f = fs.create(d, format!("a{i}").as_bytes(), attr()).unwrap();
        fs.write(f, 0, &pattern(i, 3000), now).unwrap();
    }
    d
}

/// Batch A (committed), then batch B whose commit is cut after `cut`
/// device writes (None: not cut). Returns the device.
fn scenario(img: &std::path::Path, cut: Option<u64>) -> MemDevice {
    let mut fs = Ext4::mount(MemDevice::open(img), MountOptions::default()).unwrap();
    let now = t(1_700_000_001, 0);
    let d = batch_a(&mut fs, now);
    fs.commit().unwrap();
    let base = fs.device_mut().writes;
    fs.device_mut().write_limit = cut.map(|c| base + c);
    // Batch B: creates, appends, renames, deletes.
    let b = fs.mkdir(ROOT_INO, b"b", NewInode { mode: 0o755, ..attr() }).unwrap();
    for i in 0..10 {
        let f = fs.create(b, format!("b{i}").as_bytes(), attr()).unwrap();
        fs.write(f, 0, &pattern(100 + i, 5000), now).unwrap();
    }
    let a0 = fs.lookup(d, b"a0").unwrap();
    fs.write(a0, 3000, b"appended", now).unwrap();
    fs.rename(d, b"a1", b, b"from-a", now).unwrap();
    fs.unlink(d, b"a2", now).unwrap();
    fs.commit().unwrap();
    let total = fs.device_mut().writes - base;
    let mut dev = fs.into_device();
    dev.writes = total;
    dev
}

/// Whether the image holds batch B entirely (true) or not at all (false).
fn check_atomic(dev: MemDevice) -> bool {
    let mut fs = Ext4::mount(dev, MountOptions::default()).unwrap();
    let d = fs.lookup(ROOT_INO, b"a").unwrap();
    let has_b = fs.lookup(ROOT_INO, b"b").is_ok();
    let a0 = fs.lookup(d, b"a0").unwrap();
    let size = fs.stat(a0).unwrap().size;
    assert_eq!(size == 3008, has_b, "append with the rest of B");
    assert_eq!(fs.lookup(d, b"a1").is_err(), has_b, "rename with the rest of B");
    assert_eq!(fs.lookup(d, b"a2").is_err(), has_b, "unlink with the rest of B");
    if has_b {
        let b = fs.lookup(ROOT_INO, b"b").unwrap();
        for i in 0..10 {
            let f = fs.lookup(b, format!("b{i}").as_bytes()).unwrap();
            let mut got = vec![0u8; 5000];
            fs.read(f, 0, &mut got).unwrap();
            assert!(got == pattern(100 + i, 5000), "data of b{i}");
        }
    }
    for i in 3..20 {
        let f = fs.lookup(d, format!("a{i}").as_bytes()).unwrap();
        let mut got = vec![0u8; 3000];
        fs.read(f, 0, &mut got).unwrap();
        assert!(got == pattern(i, 3000), "data of a{i}");
    }
    has_b
}

#[test]
fn power_cut_at_every_write_of_a_commit_recovers_atomically() {
    let tmp = TempDir::new("jcut");
    let img = tmp.path("base.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let full = scenario(&img, None);
    let writes = full.writes;
    assert!(writes > 10, "commit wrote {writes} times");
    let cut_img = tmp.path("cut.img");
    let (mut before, mut after) = (0, 0);
    for cut in 0..=writes {
        let dev = scenario(&img, Some(cut));
        // The host replays Kiln's log.
        dev.save(&cut_img);
        host_replays_only(&cut_img, cut);
        let host_has_b = check_atomic(MemDevice::open(&cut_img));
        // Kiln replays its own log, with the same outcome.
        let kiln_has_b = check_atomic(MemDevice::new(dev.data.clone()));
        assert_eq!(host_has_b, kiln_has_b, "cut {cut}");
        let mut fs = Ext4::mount(MemDevice::new(dev.data), MountOptions::default()).unwrap();
        fs.commit().unwrap();
        fs.unmount().unwrap().save(&cut_img);
        assert_clean(&cut_img);
        if host_has_b {
            after += 1;
        } else {
            before += 1;
        }
    }
    eprintln!("power cuts: {writes} writes in the commit, {before} cuts recovered to A, {after} to A+B");
    assert!(before > 0 && after > 0, "cuts on both sides of the commit point: {before} before, {after} after");
}

#[test]
fn commit_is_two_flushes_and_a_freed_logged_block_is_never_replayed_over_data() {
    let tmp = TempDir::new("jlazy");
    let img = tmp.path("lazy.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let mut fs = Ext4::mount(MemDevice::open(&img), MountOptions::default()).unwrap();
    let now = t(1_700_000_001, 0);
    // Committed transactions stay in the log: each commit is the log
    // write, a flush, and the commit block with FUA (a write and a flush).
    for i in 0..5 {
        let before = fs.device_mut().flushes;
        let d = fs.mkdir(ROOT_INO, format!("d{i}").as_bytes(), NewInode { mode: 0o755, ..attr() }).unwrap();
        fs.create(d, b"f", attr()).unwrap();
        fs.commit().unwrap();
        assert_eq!(fs.device_mut().flushes - before, 2, "commit {i}");
    }
    // A directory block logged above is freed, then file data may land on
    // it: the log must not carry the old directory block any more.
    for i in 0..5 {
        let d = fs.lookup(ROOT_INO, format!("d{i}").as_bytes()).unwrap();
        fs.unlink(d, b"f", now).unwrap();
        fs.rmdir(ROOT_INO, format!("d{i}").as_bytes(), now).unwrap();
    }
    fs.commit().unwrap();
    let f = fs.create(ROOT_INO, b"data", attr()).unwrap();
    let data = pattern(7, 64 * 1024);
    fs.write(f, 0, &data, now).unwrap();
    fs.commit().unwrap();
    // Power cut: the host and Kiln both replay what the log holds.
    let dev = fs.into_device();
    dev.save(&img);
    let (code, out) = e2fsck(&img, &["-fy"]);
    assert!(code <= 1, "e2fsck -fy: {out}");
    assert_clean(&img);
    for dev in [MemDevice::open(&img), MemDevice::new(dev.data)] {
        let mut fs = Ext4::mount(dev, MountOptions::default()).unwrap();
        let f = fs.lookup(ROOT_INO, b"data").unwrap();
        let mut got = vec![0u8; data.len()];
        fs.read(f, 0, &mut got).unwrap();
        assert!(got == data, "file data intact after replay");
        assert_eq!(fs.lookup(ROOT_INO, b"d0"), Err(Errno::ENOENT));
    }
}

/// Batch A committed; batch B's commit started (`commit_start`: B logged
/// and closed; B removes a directory whose block A logged, so B's tail
/// carries a checkpoint), batch C run while B's tail is out (new files,
/// data, an unlink of one of A's files), B's tail written, then C
/// committed; the power is cut after `cut` device writes. Returns the
/// device.
fn concurrent_scenario(img: &std::path::Path, cut: Option<u64>) -> MemDevice {
    let mut fs = Ext4::mount(MemDevice::open(img), MountOptions::default()).unwrap();
    let now = t(1_700_000_001, 0);
    let d = batch_a(&mut fs, now);
    let e = fs.mkdir(ROOT_INO, b"e", NewInode { mode: 0o755, ..attr() }).unwrap();
    fs.create(e, b"f", attr()).unwrap();
    fs.commit().unwrap();
    let base = fs.device_mut().writes;
    fs.device_mut().write_limit = cut.map(|c| base + c);
    // Batch B, closed with its tail left out.
    fs.unlink(e, b"f", now).unwrap();
    fs.rmdir(ROOT_INO, b"e", now).unwrap();
    let b = fs.mkdir(ROOT_INO, b"b", NewInode { mode: 0o755, ..attr() }).unwrap();
    for i in 0..10 {
        let f = fs.create(b, format!("b{i}").as_bytes(), attr()).unwrap();
        fs.write(f, 0, &pattern(100 + i, 5000), now).unwrap();
    }
    let a0 = fs.lookup(d, b"a0").unwrap();
    fs.write(a0, 3000, b"appended", now).unwrap();
    fs.unlink(d, b"a2", now).unwrap();
    let tail = fs.commit_start().unwrap().expect("a tail to write");
    assert!(tail.commit_block.is_some() && tail.checkpoint.is_some());
    assert_eq!(fs.commit(), Err(Errno::EBUSY), "one commit out at a time");
    // Batch C joins the next transaction meanwhile: it changes blocks B
    // logged (the directory, the bitmaps) and allocates, but not what B
    // freed.
    let c = fs.mkdir(ROOT_INO, b"c", NewInode { mode: 0o755, ..attr() }).unwrap();
    for i in 0..10 {
        let f = fs.create(c, format!("c{i}").as_bytes(), attr()).unwrap();
        fs.write(f, 0, &pattern(200 + i, 6000), now).unwrap();
    }
    let bf = fs.create(b, b"late", attr()).unwrap();
    fs.write(bf, 0, &pattern(300, 4000), now).unwrap();
    fs.unlink(d, b"a3", now).unwrap();
    let r = fs.finish_tail(&tail);
    fs.commit_end(&tail, r).unwrap();
    fs.commit().unwrap();
    let total = fs.device_mut().writes - base;
    let mut dev = fs.into_device();
    dev.writes = total;
    dev
}

/// (B durable, C durable) of an image `concurrent_scenario` left; checks
/// every file's data on the way, and that C never survives without B.
fn check_concurrent(dev: MemDevice) -> (bool, bool) {
    let mut fs = Ext4::mount(dev, MountOptions::default()).unwrap();
    let d = fs.lookup(ROOT_INO, b"a").unwrap();
    let has_b = fs.lookup(ROOT_INO, b"b").is_ok();
    let has_c = fs.lookup(ROOT_INO, b"c").is_ok();
    assert!(has_b || !has_c, "C without B");
    let a0 = fs.lookup(d, b"a0").unwrap();
    assert_eq!(fs.stat(a0).unwrap().size == 3008, has_b, "append with the rest of B");
    assert_eq!(fs.lookup(d, b"a2").is_err(), has_b, "unlink with the rest of B");
    assert_eq!(fs.lookup(ROOT_INO, b"e").is_err(), has_b, "rmdir with the rest of B");
    assert_eq!(fs.lookup(d, b"a3").is_err(), has_c, "unlink with the rest of C");
    let check = |fs: &mut Ext4<MemDevice>, dir: u32, name: String, seed: u64, len: usize| {
        let f = fs.lookup(dir, name.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let mut got = vec![0u8; len];
        fs.read(f, 0, &mut got).unwrap();
        assert!(got == pattern(seed, len), "data of {name}");
    };
    // A's files the unlinks did not take, untouched by C's allocations
    // (B's freed blocks were not reused before B was durable).
    let first = if has_c {
        4
    } else if has_b {
        3
    } else {
        2
    };
    for i in first..20 {
        check(&mut fs, d, format!("a{i}"), i, 3000);
    }
    if has_b {
        let b = fs.lookup(ROOT_INO, b"b").unwrap();
        for i in 0..10 {
            check(&mut fs, b, format!("b{i}"), 100 + i, 5000);
        }
        assert_eq!(fs.lookup(b, b"late").is_ok(), has_c, "C's file in B's directory with the rest of C");
    }
    if has_c {
        let c = fs.lookup(ROOT_INO, b"c").unwrap();
        for i in 0..10 {
            check(&mut fs, c, format!("c{i}"), 200 + i, 6000);
        }
    }
    (has_b, has_c)
}

#[test]
fn power_cut_while_a_commit_tail_is_out_and_the_next_transaction_runs() {
    let tmp = TempDir::new("jconc");
    let img = tmp.path("base.img");
    mkfs("ext4", &img, 8 * 1024, &["-b", "1024"], None);
    let writes = concurrent_scenario(&img, None).writes;
    let cut_img = tmp.path("cut.img");
    let mut seen = [0u32; 3];
    for cut in 0..=writes {
        let dev = concurrent_scenario(&img, Some(cut));
        dev.save(&cut_img);
        host_replays_only(&cut_img, cut);
        let host = check_concurrent(MemDevice::open(&cut_img));
        let kiln = check_concurrent(MemDevice::new(dev.data));
        assert_eq!(host, kiln, "cut {cut}");
        seen[host.0 as usize + host.1 as usize] += 1;
    }
    eprintln!("power cuts: {writes} writes; recovered to A {}, A+B {}, A+B+C {}", seen[0], seen[1], seen[2]);
    assert!(seen.iter().all(|&n| n > 0), "cuts in every state: {seen:?}");
}

/// The host's `e2fsck -fy` on a cut image only replays the journal
/// (repairs nothing else), and `-fn` is clean afterwards.
fn host_replays_only(img: &std::path::Path, cut: u64) {
    let (code, out) = e2fsck(img, &["-fy"]);
    assert!(code <= 1, "cut {cut}: e2fsck -fy: {out}");
    for line in out.lines() {
        assert!(
            !line.contains("Fix?") && !line.contains("FIXED") && !line.contains("Clear?"),
            "cut {cut}: e2fsck had to repair more than the journal: {out}"
        );
    }
    assert_clean(img);
}
