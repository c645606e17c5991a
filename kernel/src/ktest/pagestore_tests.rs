//! The tmpfs page store: bytes across page boundaries, holes, truncation
//! and the frames it lends to mappings.

use alloc::vec;

use super::{KTest, TestResult};
use crate::ensure;
use crate::fs::pagestore::{file_frames, PageBudget, PageStore};

pub const TESTS: &[KTest] = &[
    KTest { name: "pagestore::write_read_across_pages", run: write_read_across_pages },
    KTest { name: "pagestore::holes_read_zero_and_take_no_frames", run: holes_read_zero_and_take_no_frames },
    KTest { name: "pagestore::shrink_then_grow_reads_zero", run: shrink_then_grow_reads_zero },
    KTest { name: "pagestore::mapped_frames_are_the_files", run: mapped_frames_are_the_files },
    KTest { name: "pagestore::frames_counted_and_freed", run: frames_counted_and_freed },
    KTest { name: "pagestore::budget_full_is_enospc", run: budget_full_is_enospc },
];

fn budget(pages: u64) -> alloc::sync::Arc<PageBudget> {
    alloc::sync::Arc::new(PageBudget::new(pages))
}

/// An errno from the store, as a test failure.
fn e(err: linux_abi::errno::Errno) -> alloc::string::String {
    alloc::format!("unexpected errno {err:?}")
}

fn write_read_across_pages() -> TestResult {
    let mut s = PageStore::new(budget(1 << 20));
    let data: alloc::vec::Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    ensure!(s.write(4000, &data).map_err(e)? == data.len());
    ensure!(s.size() == 14_000);
    let mut back = vec![0u8; 10_000];
    ensure!(s.read(4000, &mut back) == 10_000);
    ensure!(back == data, "bytes read back differ");
    // Short read at the end, nothing past it.
    let mut tail = [0u8; 100];
    ensure!(s.read(13_950, &mut tail) == 50);
    ensure!(s.read(14_000, &mut tail) == 0);
    ensure!(s.read(u64::MAX - 10, &mut tail) == 0);
    Ok(())
}

fn holes_read_zero_and_take_no_frames() -> TestResult {
    let mut s = PageStore::new(budget(1 << 20));
    s.write(10 * 4096, b"end").map_err(e)?;
    ensure!(s.frame_count() == 1, "a hole took frames: {}", s.frame_count());
    let mut buf = [0xffu8; 64];
    ensure!(s.read(5 * 4096, &mut buf) == 64);
    ensure!(buf.iter().all(|&b| b == 0), "hole did not read zero");
    s.truncate(20 * 4096);
    ensure!(s.frame_count() == 1, "growing by truncate took frames");
    Ok(())
}

fn shrink_then_grow_reads_zero() -> TestResult {
    let mut s = PageStore::new(budget(1 << 20));
    s.write(0, &[7u8; 8192]).map_err(e)?;
    s.truncate(100);
    ensure!(s.frame_count() == 1, "page past the end kept");
    s.truncate(8192);
    let mut buf = [0xffu8; 8092];
    ensure!(s.read(100, &mut buf) == 8092);
    ensure!(buf.iter().all(|&b| b == 0), "old bytes came back after shrink and grow");
    // Bytes dirtied past the end through a mapping are cleared by growth.
    let mut s = PageStore::new(budget(1 << 20));
    s.write(0, &[1u8; 10]).map_err(e)?;
    let frame = s.frame_to_map(0, true).map_err(e)?.ok_or("partial page refused to a shared mapping")?;
    frame.write(100, &[9u8; 10]);
    s.write(200, b"x").map_err(e)?;
    let mut mid = [0xffu8; 10];
    s.read(100, &mut mid);
    ensure!(mid == [0u8; 10], "a mapping's store past the end survived growth");
    Ok(())
}

fn mapped_frames_are_the_files() -> TestResult {
    let mut s = PageStore::new(budget(1 << 20));
    s.write(0, &[3u8; 4096 + 10]).map_err(e)?;
    let whole = s.frame_to_map(0, false).map_err(e)?.ok_or("whole page not lent")?;
    ensure!(s.frame_to_map(1, false).map_err(e)?.is_none(), "partial page lent to a private mapping");
    ensure!(s.frame_to_map(1, true).map_err(e)?.is_some(), "partial page refused to a shared mapping");
    ensure!(s.frame_to_map(2, true).map_err(e)?.is_none(), "page past the end lent");
    ensure!(s.frame_to_map(u64::MAX, true).map_err(e)?.is_none(), "index overflow lent a page");
    // The lent frame is the file's: a write() shows through it.
    s.write(5, b"Z").map_err(e)?;
    let mut b = [0u8; 1];
    whole.read(5, &mut b);
    ensure!(b[0] == b'Z', "write() did not reach the mapped frame");
    // Holder: the store and this handle.
    ensure!(whole.ref_count() == 2, "ref count {}", whole.ref_count());
    Ok(())
}

fn frames_counted_and_freed() -> TestResult {
    let before = file_frames();
    let mut s = PageStore::new(budget(1 << 20));
    s.write(0, &[1u8; 3 * 4096]).map_err(e)?;
    ensure!(file_frames() == before + 3);
    s.truncate(4096);
    ensure!(file_frames() == before + 1);
    drop(s);
    ensure!(file_frames() == before, "dropped store left frames counted");
    Ok(())
}

fn budget_full_is_enospc() -> TestResult {
    let pages = budget(3);
    let mut a = PageStore::new(pages.clone());
    let mut b = PageStore::new(pages.clone());
    a.write(0, &[1u8; 2 * 4096]).map_err(e)?;
    // A write that runs out part-way keeps what fitted and says so.
    ensure!(b.write(0, &[2u8; 2 * 4096]).map_err(e)? == 4096, "short write expected");
    ensure!(b.write(8192, b"x") == Err(linux_abi::errno::Errno::ENOSPC), "full budget not ENOSPC");
    ensure!(pages.used() == 3);
    // Writing over a page it already holds needs no new one.
    ensure!(b.write(0, b"again").map_err(e)? == 5);
    a.truncate(0);
    ensure!(pages.used() == 1, "truncate kept its pages: {}", pages.used());
    drop(b);
    ensure!(pages.used() == 0, "drop kept its pages");
    Ok(())
}
