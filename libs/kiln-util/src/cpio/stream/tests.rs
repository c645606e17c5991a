//! Host tests for [`super::StreamParser`]: whatever pieces an archive is
//! cut into, the parser must report what [`crate::cpio::Reader`] reads
//! from the whole, and the same error.

use super::super::tests::{build, e, push, push_raw, FIXTURE, FIXTURE_CRC};
use super::*;
use crate::cpio::{Entry, Reader};
use crate::testrng::Rng;

/// An entry as both parsers report it, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owned {
    name: String,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    mtime: u32,
    ino: u32,
    dev: (u32, u32),
    rdev: (u32, u32),
    data: Vec<u8>,
}

impl From<&Entry<'_>> for Owned {
    fn from(e: &Entry) -> Owned {
        Owned {
            name: e.name.to_string(),
            mode: e.mode,
            uid: e.uid,
            gid: e.gid,
            nlink: e.nlink,
            mtime: e.mtime,
            ino: e.ino,
            dev: (e.dev_major, e.dev_minor),
            rdev: (e.rdev_major, e.rdev_minor),
            data: e.data.to_vec(),
        }
    }
}

/// Collects complete entries; checks the call order as it goes.
#[derive(Default)]
struct Collector {
    done: Vec<Owned>,
    open: Option<(Owned, u32)>,
    /// Fail the call after this many data pieces (to test sink errors).
    fail_after: Option<usize>,
    pieces: usize,
}

impl Sink for Collector {
    type Error = &'static str;

    fn start(&mut self, s: &EntryStart) -> Result<(), &'static str> {
        assert!(self.open.is_none(), "start inside an entry");
        let o = Owned {
            name: s.name.to_string(),
            mode: s.mode,
            uid: s.uid,
            gid: s.gid,
            nlink: s.nlink,
            mtime: s.mtime,
            ino: s.ino,
            dev: (s.dev_major, s.dev_minor),
            rdev: (s.rdev_major, s.rdev_minor),
            data: Vec::new(),
        };
        self.open = Some((o, s.size));
        Ok(())
    }

    fn data(&mut self, bytes: &[u8]) -> Result<(), &'static str> {
        assert!(!bytes.is_empty());
        self.pieces += 1;
        if self.fail_after.is_some_and(|n| self.pieces > n) {
            return Err("sink full");
        }
        let (o, size) = self.open.as_mut().expect("data outside an entry");
        o.data.extend_from_slice(bytes);
        assert!(o.data.len() <= *size as usize, "more data than the header said");
        Ok(())
    }

    fn end(&mut self) -> Result<(), &'static str> {
        let (o, size) = self.open.take().expect("end outside an entry");
        assert_eq!(o.data.len(), size as usize);
        self.done.push(o);
        Ok(())
    }
}

/// What the slice reader makes of `b`: its entries and its error.
fn by_reader(b: &[u8]) -> (Vec<Owned>, Option<CpioError>) {
    let mut entries = Vec::new();
    for r in Reader::new(b) {
        match r {
            Ok(e) => entries.push(Owned::from(&e)),
            Err(err) => return (entries, Some(err)),
        }
    }
    (entries, None)
}

/// What the stream parser makes of `b` fed in pieces cut at `cuts`.
fn by_stream(b: &[u8], cuts: &[usize]) -> (Vec<Owned>, Option<CpioError>) {
    let mut p = StreamParser::new();
    let mut sink = Collector::default();
    let mut at = 0;
    for &cut in cuts.iter().chain(core::iter::once(&b.len())) {
        let cut = cut.clamp(at, b.len());
        match p.feed(&b[at..cut], &mut sink) {
            Ok(()) => {}
            Err(StreamError::Cpio(e)) => return (sink.done, Some(e)),
            Err(StreamError::Sink(e)) => panic!("sink error {e}"),
        }
        at = cut;
    }
    (sink.done, p.finish().err())
}

fn same_in_every_two_pieces(b: &[u8]) {
    let want = by_reader(b);
    assert_eq!(by_stream(b, &[]), want, "whole");
    for cut in 0..=b.len() {
        assert_eq!(by_stream(b, &[cut]), want, "cut at {cut}");
    }
    let bytes: Vec<usize> = (1..b.len()).collect();
    assert_eq!(by_stream(b, &bytes), want, "byte by byte");
}

#[test]
fn fixtures_read_the_same_cut_anywhere() {
    same_in_every_two_pieces(FIXTURE);
    same_in_every_two_pieces(FIXTURE_CRC);
    let (entries, err) = by_stream(FIXTURE, &[]);
    assert_eq!((entries.len(), err), (15, None));
}

#[test]
fn every_three_way_cut_of_a_small_archive() {
    let ar = build(&[e("a", 0o100644, b"12345"), e("d", 0o40755, b""), e("d/l", 0o120777, b"../a")]);
    let want = by_reader(&ar);
    assert_eq!(want.0.len(), 3);
    for i in 0..=ar.len() {
        for j in i..=ar.len() {
            assert_eq!(by_stream(&ar, &[i, j]), want, "cuts {i}, {j}");
        }
    }
}

#[test]
fn every_prefix_ends_as_the_reader_says() {
    for fixture in [FIXTURE, FIXTURE_CRC] {
        for len in 0..=fixture.len() {
            let b = &fixture[..len];
            assert_eq!(by_stream(b, &[len / 2]), by_reader(b), "len {len}");
        }
    }
}

#[test]
fn concatenated_archives_and_padding() {
    let second = build(&[e("late", 0o100644, b"xyz"), e("etc", 0o40700, b"")]);
    for pad in [0usize, 4, 512, 4096] {
        let mut ar = build(&[e("early", 0o100644, b"1")]);
        ar.extend(core::iter::repeat_n(0u8, pad));
        ar.extend_from_slice(&second);
        same_in_every_two_pieces(&ar);
    }
    let mut ar = FIXTURE.to_vec();
    ar.extend_from_slice(&second);
    ar.extend_from_slice(&[0; 100]);
    ar.extend_from_slice(FIXTURE_CRC);
    let (entries, err) = by_stream(&ar, &[777, 2013, 2100]);
    assert_eq!((entries.len(), err), (32, None));
}

#[test]
fn errors_match_the_reader() {
    let mut cases: Vec<Vec<u8>> = vec![b"hello world".to_vec(), vec![0; 64], build(&[])];
    let mut ar = build(&[e("a", 0o100644, b"")]);
    ar.extend_from_slice(&[0, 0, 0, 0, 0x1f, 0x8b, 8, 0]);
    cases.push(ar);
    for field in 0..13 {
        let mut ar = build(&[e("a", 0o100644, b"data")]);
        ar[6 + field * 8 + 3] = b'g';
        cases.push(ar);
    }
    let names: [(&[u8], u32); 5] = [(b"", 0), (b"\0", 1), (b"abc", 3), (b"a\0b\0", 4), (b"\xff\xfe\0", 3)];
    for (name, size) in names {
        let mut ar = Vec::new();
        push_raw(&mut ar, MAGIC_NEWC, name, size, 0o100644, b"");
        push(&mut ar, MAGIC_NEWC, TRAILER, 0, &[]);
        cases.push(ar);
    }
    let mut ar = Vec::new();
    push(&mut ar, MAGIC_NEWC, "a", 0o100644, b"z");
    push(&mut ar, MAGIC_NEWC, TRAILER, 0, b"q");
    ar.truncate(ar.len() - 3);
    cases.push(ar);
    let mut ar = build(&[e("a", 0o100644, b"x")]);
    ar[6 + 6 * 8..6 + 7 * 8].copy_from_slice(b"FFFFFFFF");
    cases.push(ar);
    for ar in &cases {
        same_in_every_two_pieces(ar);
    }
}

#[test]
fn names_longer_than_path_max_are_refused() {
    let long = "n".repeat(NAME_MAX);
    let ar = build(&[e(&long, 0o100644, b"")]);
    assert_eq!(by_stream(&ar, &[]).1, Some(CpioError::BadName));
    let fits = "n".repeat(NAME_MAX - 1);
    let ar = build(&[e(&fits, 0o100644, b"ok")]);
    assert_eq!(by_stream(&ar, &[]), by_reader(&ar));
    // A huge namesize fails at once, before any name bytes arrive.
    let mut ar = Vec::new();
    push_raw(&mut ar, MAGIC_NEWC, b"a\0", 0xffff_ffff, 0o100644, b"");
    assert_eq!(by_stream(&ar[..HEADER_LEN], &[]).1, Some(CpioError::BadName));
}

#[test]
fn data_arrives_in_the_pieces_it_came_in() {
    let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    let ar = build(&[e("big", 0o100644, &data)]);
    let mut p = StreamParser::new();
    let mut sink = Collector::default();
    for chunk in ar.chunks(1000) {
        p.feed(chunk, &mut sink).unwrap();
    }
    p.finish().unwrap();
    assert_eq!(sink.done[0].data, data);
    // Never more pieces than input chunks that held data.
    assert!(sink.pieces <= 11, "{}", sink.pieces);
    assert_eq!(p.entries(), 1);
}

#[test]
fn a_sink_error_stops_the_parse() {
    let ar = build(&[e("a", 0o100644, b"1234"), e("b", 0o100644, b"5678")]);
    let mut p = StreamParser::new();
    let mut sink = Collector { fail_after: Some(1), ..Default::default() };
    assert_eq!(p.feed(&ar, &mut sink), Err(StreamError::Sink("sink full")));
    assert_eq!(sink.done.len(), 1);
    assert!(p.feed(&ar, &mut sink).is_err());
    assert!(p.finish().is_err());
}

#[test]
fn random_corruption_matches_the_reader() {
    let mut rng = Rng::new(0x5eed);
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
        let b = &b[..cut];
        let cuts = [rng.below(cut as u64 + 1) as usize, rng.below(cut as u64 + 1) as usize];
        let mut cuts = cuts.to_vec();
        cuts.sort();
        let want = by_reader(b);
        let got = by_stream(b, &cuts);
        // A corrupted name size above PATH_MAX is refused at the header,
        // where the reader first finds the input too short for it.
        if got.1 == Some(CpioError::BadName) && want.1 == Some(CpioError::Truncated) {
            assert_eq!(got.0, want.0);
            continue;
        }
        assert_eq!(got, want);
    }
}

#[test]
fn one_archive_at_a_time_stops_after_its_trailer() {
    let first = build(&[e("a", 0o100644, b"1")]);
    let mut ar = first.clone();
    ar.extend_from_slice(&[0x1f, 0x8b, 8, 0]);
    let mut p = StreamParser::new();
    let mut sink = Collector::default();
    // In two pieces: the first stops short of the trailer.
    let used = p.feed_one_archive(&ar[..50], &mut sink).unwrap();
    assert_eq!(used, 50);
    let used = p.feed_one_archive(&ar[50..], &mut sink).unwrap();
    assert_eq!(50 + used, first.len());
    assert!(p.at_clean_end());
    assert_eq!(sink.done.len(), 1);
    p.finish().unwrap();
}
