//! Host unit tests for [`super`]. The fixtures under `tests/fixtures/` were
//! made with GNU cpio 2.13 (`find . | sort | cpio -o -H newc -R 0:0
//! --reproducible`, and `-H crc`) from a small tree holding directories,
//! regular files of lengths 0 and 3..5, a hard link, a symlink, a character
//! device (1, 3) and a FIFO, all with mtime 2024-01-02 03:04:05 UTC. Edge
//! cases are built in the tests with [`build`].

use super::*;
use crate::testrng::Rng;

pub(super) const FIXTURE: &[u8] = include_bytes!("../../tests/fixtures/initramfs.cpio");
pub(super) const FIXTURE_CRC: &[u8] = include_bytes!("../../tests/fixtures/initramfs-crc.cpio");
const MTIME: u32 = 1_704_164_645;

/// One entry for [`build`].
pub(super) struct E<'a> {
    name: &'a str,
    mode: u32,
    data: &'a [u8],
}

pub(super) fn e<'a>(name: &'a str, mode: u32, data: &'a [u8]) -> E<'a> {
    E { name, mode, data }
}

/// Writes a newc header + name + data (with padding) for `name`.
pub(super) fn push_raw(out: &mut Vec<u8>, magic: &[u8; 6], name: &[u8], namesize: u32, mode: u32, data: &[u8]) {
    let start = out.len();
    out.extend_from_slice(magic);
    let fields = [7, mode, 1000, 100, 1, MTIME, data.len() as u32, 8, 1, 0, 0, namesize, 0];
    for f in fields {
        out.extend_from_slice(format!("{f:08X}").as_bytes());
    }
    out.extend_from_slice(name);
    while !(out.len() - start).is_multiple_of(4) {
        out.push(0);
    }
    out.extend_from_slice(data);
    while !(out.len() - start).is_multiple_of(4) {
        out.push(0);
    }
}

pub(super) fn push(out: &mut Vec<u8>, magic: &[u8; 6], name: &str, mode: u32, data: &[u8]) {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    push_raw(out, magic, &n, n.len() as u32, mode, data);
}

/// A complete archive (with trailer) of `entries`.
pub(super) fn build(entries: &[E]) -> Vec<u8> {
    let mut out = Vec::new();
    for en in entries {
        push(&mut out, MAGIC_NEWC, en.name, en.mode, en.data);
    }
    push(&mut out, MAGIC_NEWC, TRAILER, 0, &[]);
    out
}

fn collect(b: &[u8]) -> Vec<Result<Entry<'_>, CpioError>> {
    Reader::new(b).collect()
}

fn names(b: &[u8]) -> Vec<&str> {
    Reader::new(b).map(|r| r.unwrap().name).collect()
}

#[test]
fn reads_gnu_cpio_fixture() {
    let all: Vec<Entry> = Reader::new(FIXTURE).map(|r| r.unwrap()).collect();
    let expect_names = [
        "",
        "bin",
        "bin/five",
        "bin/five-hard",
        "bin/four",
        "bin/link",
        "bin/three",
        "dev-null",
        "empty",
        "etc",
        "etc/empty-file",
        "etc/init.d",
        "etc/init.d/rcS",
        "etc/passwd",
        "fifo",
    ];
    assert_eq!(all.iter().map(|e| e.name).collect::<Vec<_>>(), expect_names);
    for en in &all {
        assert_eq!((en.uid, en.gid, en.mtime), (0, 0, MTIME), "{}", en.name);
    }
    let get = |n: &str| *all.iter().find(|e| e.name == n).unwrap();

    let root = get("");
    assert!(root.is_root() && root.is_dir());
    assert_eq!(root.mode, S_IFDIR | 0o755);
    assert_eq!(root.nlink, 5);

    let rcs = get("etc/init.d/rcS");
    assert!(rcs.is_file());
    assert_eq!(rcs.permissions(), 0o755);
    assert_eq!(rcs.data, b"#!/bin/sh\necho hi\n");
    assert_eq!(get("etc/passwd").data, b"root:x:0:0:root:/root:/bin/sh\n");
    assert_eq!(get("etc/empty-file").data, b"");
    assert_eq!(get("bin/three").data, b"abc");
    assert_eq!(get("bin/four").data, b"abcd");

    // GNU cpio stores a hard-linked file's data with its last link.
    let (five, hard) = (get("bin/five"), get("bin/five-hard"));
    assert_eq!((five.ino, five.nlink, five.data), (hard.ino, 2, &b""[..]));
    assert_eq!(hard.data, b"abcde");

    let link = get("bin/link");
    assert!(link.is_symlink());
    assert_eq!(link.mode, S_IFLNK | 0o777);
    assert_eq!(link.data, b"../etc/passwd");

    let dev = get("dev-null");
    assert_eq!(dev.file_type(), S_IFCHR);
    assert!(dev.is_special());
    assert_eq!((dev.rdev_major, dev.rdev_minor), (1, 3));
    assert_eq!(get("fifo").file_type(), S_IFIFO);
    assert!(!get("empty").is_special());
}

#[test]
fn crc_variant_reads_the_same() {
    assert_eq!(&FIXTURE_CRC[..6], MAGIC_CRC);
    let a: Vec<_> = collect(FIXTURE);
    let b: Vec<_> = collect(FIXTURE_CRC);
    assert_eq!(a, b);
    assert_eq!(a.len(), 15);
}

#[test]
fn built_archive_fields() {
    let ar = build(&[e("./x", S_IFREG | 0o600, b"hello")]);
    let en = Reader::new(&ar).next().unwrap().unwrap();
    assert_eq!(en.name, "x");
    assert_eq!(
        (en.ino, en.mode, en.uid, en.gid, en.nlink, en.dev_major, en.dev_minor),
        (7, S_IFREG | 0o600, 1000, 100, 1, 8, 1)
    );
    assert_eq!(en.data, b"hello");
}

#[test]
fn lowercase_hex_is_accepted() {
    let mut ar = build(&[e("f", 0o100644, b"")]);
    // mode field "000081A4" -> "000081a4"
    let field = &mut ar[6 + 8..6 + 16];
    assert_eq!(field, b"000081A4");
    field.copy_from_slice(b"000081a4");
    assert_eq!(Reader::new(&ar).next().unwrap().unwrap().mode, 0o100644);
}

#[test]
fn name_normalization() {
    let ar = build(&[
        e(".", 0o40755, b""),
        e("./", 0o40755, b""),
        e("/", 0o40755, b""),
        e("./etc", 0o40755, b""),
        e("/bin", 0o40755, b""),
        e("//usr/lib", 0o40755, b""),
        e("././a/./b", 0o100644, b""),
        e("plain", 0o100644, b""),
        e("..", 0o40755, b""),
    ]);
    assert_eq!(names(&ar), ["", "", "", "etc", "bin", "usr/lib", "a/./b", "plain", ".."]);
}

#[test]
fn concatenated_archives() {
    let second = build(&[e("late", 0o100644, b"xyz"), e("etc", 0o40700, b"")]);
    // Directly adjacent, separated by NUL padding, and after a GNU cpio
    // archive (which already ends in NUL block padding).
    for pad in [0usize, 4, 512, 4096] {
        let mut ar = build(&[e("early", 0o100644, b"1")]);
        ar.extend(core::iter::repeat_n(0u8, pad));
        ar.extend_from_slice(&second);
        assert_eq!(names(&ar), ["early", "late", "etc"], "pad {pad}");
    }
    let mut ar = FIXTURE.to_vec();
    ar.extend_from_slice(&second);
    ar.extend_from_slice(&[0; 100]);
    ar.extend_from_slice(FIXTURE_CRC);
    let all: Vec<_> = Reader::new(&ar).map(|r| r.unwrap()).collect();
    assert_eq!(all.len(), 15 + 2 + 15);
    assert_eq!(all[15].data, b"xyz");
    assert_eq!(all[16].mode, 0o40700);
}

#[test]
fn empty_inputs() {
    assert!(collect(&[]).is_empty());
    assert!(collect(&[0; 64]).is_empty());
    // A lone trailer is an empty archive.
    assert!(collect(&build(&[])).is_empty());
}

#[test]
fn bad_magic() {
    assert_eq!(collect(b"hello world"), [Err(CpioError::BadMagic)]);
    // The old portable ("odc") format is not supported.
    let mut ar = build(&[e("a", 0o100644, b"")]);
    ar[..6].copy_from_slice(b"070707");
    assert_eq!(collect(&ar), [Err(CpioError::BadMagic)]);
    // Junk (e.g. an appended compressed archive) after a trailer.
    let mut ar = build(&[e("a", 0o100644, b"")]);
    ar.extend_from_slice(&[0, 0, 0, 0, 0x1f, 0x8b, 8, 0]);
    let r = collect(&ar);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1], Err(CpioError::BadMagic));
    // A second archive whose magic is damaged.
    let mut ar = build(&[e("a", 0o100644, b"")]);
    let at = ar.len();
    ar.extend_from_slice(&build(&[e("b", 0o100644, b"")]));
    ar[at + 5] = b'9';
    assert_eq!(collect(&ar)[1], Err(CpioError::BadMagic));
}

#[test]
fn bad_hex() {
    for field in 0..13 {
        let mut ar = build(&[e("a", 0o100644, b"data")]);
        ar[6 + field * 8 + 3] = b'g';
        assert_eq!(collect(&ar), [Err(CpioError::BadHex)], "field {field}");
    }
    let mut ar = build(&[e("a", 0o100644, b"")]);
    ar[6] = b' ';
    assert_eq!(collect(&ar), [Err(CpioError::BadHex)]);
}

#[test]
fn bad_names() {
    let cases: [(&[u8], u32); 5] = [
        (b"", 0),           // namesize 0
        (b"\0", 1),         // empty name
        (b"abc", 3),        // no terminating NUL
        (b"a\0b\0", 4),     // interior NUL
        (b"\xff\xfe\0", 3), // not UTF-8
    ];
    for (name, size) in cases {
        let mut ar = Vec::new();
        push_raw(&mut ar, MAGIC_NEWC, name, size, 0o100644, b"");
        push(&mut ar, MAGIC_NEWC, TRAILER, 0, &[]);
        assert_eq!(collect(&ar), [Err(CpioError::BadName)], "{name:?}");
    }
}

#[test]
fn truncated() {
    // No trailer.
    let mut ar = Vec::new();
    push(&mut ar, MAGIC_NEWC, "a", 0o100644, b"x");
    let r = collect(&ar);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1], Err(CpioError::Truncated));
    // Sizes far beyond the input.
    let mut ar = Vec::new();
    push_raw(&mut ar, MAGIC_NEWC, b"a\0", 0xffff_ffff, 0o100644, b"");
    assert_eq!(collect(&ar), [Err(CpioError::Truncated)]);
    let mut ar = build(&[e("a", 0o100644, b"x")]);
    ar[6 + 6 * 8..6 + 7 * 8].copy_from_slice(b"FFFFFFFF");
    assert_eq!(collect(&ar), [Err(CpioError::Truncated)]);
}

#[test]
fn iteration_stops_after_error() {
    let mut ar = build(&[e("a", 0o100644, b"")]);
    ar[7] = b'x';
    let mut r = Reader::new(&ar);
    assert_eq!(r.next(), Some(Err(CpioError::BadHex)));
    assert_eq!(r.next(), None);
    assert_eq!(r.next(), None);
}

#[test]
fn final_padding_may_be_missing() {
    // The last entry's data ends the input without its padding bytes.
    let mut ar = Vec::new();
    push(&mut ar, MAGIC_NEWC, "a", 0o100644, b"z");
    push(&mut ar, MAGIC_NEWC, TRAILER, 0, b"q");
    ar.truncate(ar.len() - 3);
    assert_eq!(names(&ar), ["a"]);
}

/// Checks that reading `b` yields a prefix of `full`, possibly followed by
/// one error, and never panics.
fn assert_prefix_or_error(b: &[u8], full: &[Entry]) {
    let got = collect(b);
    let ok = got.iter().take_while(|r| r.is_ok()).count();
    assert!(ok + 1 >= got.len(), "entries after an error");
    for (g, f) in got.iter().zip(full) {
        match g {
            Ok(g) => assert_eq!(g, f),
            Err(_) => break,
        }
    }
    assert!(ok <= full.len());
}

#[test]
fn every_truncation_is_a_prefix_or_an_error() {
    let full: Vec<Entry> = Reader::new(FIXTURE).map(|r| r.unwrap()).collect();
    let trailer_end = 2012;
    for len in 0..=FIXTURE.len() {
        let b = &FIXTURE[..len];
        assert_prefix_or_error(b, &full);
        let got = collect(b);
        if len == 0 || len >= trailer_end {
            assert!(got.iter().all(|r| r.is_ok()), "len {len}");
        } else {
            // Cut before the trailer ends: the loss must be reported.
            assert!(matches!(got.last(), Some(Err(_))), "len {len}");
        }
        if len >= trailer_end {
            assert_eq!(got.len(), full.len());
        }
    }
}

#[test]
fn random_corruption_never_panics() {
    let full: Vec<Entry> = Reader::new(FIXTURE).map(|r| r.unwrap()).collect();
    let mut rng = Rng::new(0xc910);
    for _ in 0..3000 {
        let mut b = FIXTURE.to_vec();
        for _ in 0..=rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = match rng.below(3) {
                0 => rng.next_u64() as u8,
                1 => b"0123456789abcdefF"[rng.below(17) as usize],
                _ => 0,
            };
        }
        let cut = rng.below(b.len() as u64 + 1) as usize;
        let got = collect(&b[..cut]);
        let ok = got.iter().take_while(|r| r.is_ok()).count();
        assert!(ok + 1 >= got.len());
        for r in got.iter().flatten() {
            // Borrowed slices always lie inside the input.
            assert!(r.data.len() <= cut && r.name.len() <= cut);
        }
    }
    // Pure noise as well.
    for _ in 0..500 {
        let mut b = vec![0u8; rng.below(600) as usize];
        rng.fill(&mut b);
        if rng.below(2) == 0 && b.len() >= 6 {
            b[..6].copy_from_slice(MAGIC_NEWC);
        }
        let _ = collect(&b);
    }
    assert_eq!(full.len(), 15);
}

#[test]
fn errors_display() {
    assert_eq!(CpioError::Truncated.to_string(), "truncated cpio archive");
    assert_eq!(CpioError::BadMagic.as_str(), "bad cpio magic");
}
