//! Memory: frames, heap, page-table permissions and guard pages.

use alloc::boxed::Box;
use alloc::vec::Vec;

use hal::mm::PAGE_SIZE;
use hal::paging::{self, NO_EXECUTE, WRITABLE};

use super::{KTest, TestResult};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "mm::frames_alloc_free_roundtrip", run: frames_alloc_free_roundtrip },
    KTest { name: "mm::frames_contiguous_aligned", run: frames_contiguous_aligned },
    KTest { name: "mm::frames_are_zeroed", run: frames_are_zeroed },
    KTest { name: "mm::frame_owner_tags_refuse_a_wrong_free", run: frame_owner_tags_refuse_a_wrong_free },
    KTest { name: "mm::heap_box_and_vec", run: heap_box_and_vec },
    KTest { name: "mm::heap_failure_is_an_error", run: heap_failure_is_an_error },
    KTest { name: "mm::heap_gives_large_objects_back", run: heap_gives_large_objects_back },
    KTest { name: "mm::heap_gives_small_chunks_back", run: heap_gives_small_chunks_back },
    KTest { name: "mm::meminfo_adds_up", run: meminfo_adds_up },
    KTest { name: "mm::user_frames_leave_the_kernel_reserve", run: user_frames_leave_the_kernel_reserve },
    KTest { name: "mm::kernel_sections_w_xor_x", run: kernel_sections_w_xor_x },
    KTest { name: "mm::direct_map_is_nx", run: direct_map_is_nx },
    KTest { name: "mm::stack_has_guard_page", run: stack_has_guard_page },
    KTest { name: "mm::stacks_are_freed", run: stacks_are_freed },
];

fn frames_alloc_free_roundtrip() -> TestResult {
    let before = hal::mm::free_frame_count();
    let mut frames = Vec::new();
    for _ in 0..256 {
        frames.push(hal::mm::alloc_frame_zeroed().ok_or("out of frames")?);
    }
    ensure!(hal::mm::free_frame_count() == before - 256);
    let mut sorted = frames.clone();
    sorted.sort();
    sorted.dedup();
    ensure!(sorted.len() == 256, "a frame was handed out twice");
    for f in frames {
        hal::mm::free_frame(f);
    }
    ensure!(hal::mm::free_frame_count() == before, "frames leaked");
    Ok(())
}

fn frames_contiguous_aligned() -> TestResult {
    let base = hal::mm::alloc_contiguous(64, 16).ok_or("no 64 contiguous frames")?;
    ensure!(base.0 % (16 * PAGE_SIZE) == 0, "{:#x} not 64 KiB aligned", base.0);
    hal::mm::free_contiguous(base, 64);
    Ok(())
}

fn frames_are_zeroed() -> TestResult {
    let f = hal::mm::alloc_frame_zeroed().ok_or("out of frames")?;
    let mut buf = [0xAAu8; 4096];
    let res = hal::extable::probe_copy(&mut buf, f.to_virt());
    hal::mm::free_frame(f);
    ensure!(res.is_ok());
    ensure!(buf.iter().all(|&b| b == 0), "fresh frame not zeroed");
    Ok(())
}

/// A user frame freed as a kernel frame (what a double owner would do)
/// is refused and counted, and the frame stays with its user reference;
/// the last reference then frees it normally.
fn frame_owner_tags_refuse_a_wrong_free() -> TestResult {
    use hal::mm::FrameOwner;
    let frame = hal::frame::UserFrame::alloc_zeroed().map_err(|_| "out of frames")?;
    let paddr = frame.paddr();
    ensure!(hal::mm::frame_owner(paddr) == FrameOwner::User, "tag {:?}", hal::mm::frame_owner(paddr));
    let (errors, free) = (hal::mm::frame_errors(), hal::mm::free_frame_count());
    log::info!("ktest: the next frames error is expected");
    hal::mm::free_frame(paddr);
    ensure!(hal::mm::frame_errors() == errors + 1, "the wrong free was not reported");
    ensure!(hal::mm::free_frame_count() == free, "the user frame was freed as a kernel frame");
    ensure!(hal::mm::frame_owner(paddr) == FrameOwner::User);
    let kernel = hal::mm::alloc_frame_zeroed().ok_or("out of frames")?;
    ensure!(kernel != paddr, "the user frame was handed out again");
    ensure!(hal::mm::frame_owner(kernel) == FrameOwner::Kernel);
    hal::mm::free_frame(kernel);
    drop(frame);
    ensure!(hal::mm::frame_owner(paddr) == FrameOwner::Free, "tag {:?}", hal::mm::frame_owner(paddr));
    ensure!(hal::mm::free_frame_count() == free + 1, "the last reference did not free the frame");
    ensure!(hal::mm::frame_errors() == errors + 1, "a sound free was reported");
    Ok(())
}

fn heap_box_and_vec() -> TestResult {
    let b = Box::new(0x1234_5678u64);
    ensure!(*b == 0x1234_5678);
    let v: Vec<u64> = (0..100_000).collect();
    ensure!(v.iter().sum::<u64>() == 100_000 * 99_999 / 2);
    // A big allocation makes the heap grow by more than its first chunk.
    let big = crate::mm::try_vec_with_capacity::<u8>(8 << 20).map_err(|_| "8 MiB allocation failed")?;
    ensure!(big.capacity() >= 8 << 20);
    Ok(())
}

fn heap_failure_is_an_error() -> TestResult {
    let free_before = hal::mm::free_frame_count();
    // Far more than the machine has: must come back as an error.
    let huge = crate::mm::try_vec_with_capacity::<u8>(1 << 40);
    ensure!(huge.is_err(), "a 1 TiB allocation succeeded");
    let boxed = crate::mm::try_box([0u8; 64]);
    ensure!(boxed.is_ok(), "heap unusable after a failed allocation");
    ensure!(hal::mm::free_frame_count() + 1024 >= free_before, "failed allocation leaked frames");
    Ok(())
}

fn heap_gives_large_objects_back() -> TestResult {
    let free_before = hal::mm::free_frame_count();
    let held_before = hal::heap::stats().held();
    {
        // 32 MiB in large objects, grown the way a Vec grows.
        let mut parts = Vec::new();
        for _ in 0..8 {
            let mut v = crate::mm::try_vec_with_capacity::<u8>(1 << 20).map_err(|_| "1 MiB allocation failed")?;
            v.try_reserve_exact(4 << 20).map_err(|_| "growing to 4 MiB failed")?;
            parts.push(v);
        }
        ensure!(hal::heap::stats().large >= 32 << 20, "large objects not counted");
        ensure!(hal::mm::free_frame_count() + 8192 <= free_before, "32 MiB taken but free frames did not drop");
    }
    // Every frame is back (a few may have gone to the small-object heap
    // for the vector of parts).
    let held_after = hal::heap::stats().held();
    ensure!(held_after <= held_before + (1 << 20), "heap kept {} KiB", (held_after - held_before) / 1024);
    ensure!(hal::mm::free_frame_count() + 256 >= free_before, "frames not returned");
    Ok(())
}

fn heap_gives_small_chunks_back() -> TestResult {
    let before = hal::heap::stats();
    {
        // 8 MiB of 64-byte objects, held in a large vector of boxes: the
        // small-object heap grows by several chunks.
        let count = (8 << 20) / 64;
        let mut boxes: Vec<Box<[u8; 64]>> =
            crate::mm::try_vec_with_capacity(count).map_err(|_| "no room for the box list")?;
        for i in 0..count {
            boxes.push(crate::mm::try_box([i as u8; 64]).map_err(|_| "small allocation failed")?);
        }
        let grown = hal::heap::stats().small_held;
        ensure!(grown >= before.small_held + (8 << 20), "heap did not grow: {grown} from {}", before.small_held);
        ensure!(boxes.iter().enumerate().all(|(i, b)| b[63] == i as u8), "objects overlap");
    }
    // Every chunk emptied goes back but one spare (at most the largest,
    // 1/16 of the heap or 1 MiB).
    let after = hal::heap::stats();
    let spare = (1 << 20).max(after.small_held / 16) + (1 << 20);
    ensure!(
        after.small_held <= before.small_held + spare,
        "small heap kept {} KiB more",
        (after.small_held - before.small_held) / 1024
    );
    Ok(())
}

fn meminfo_adds_up() -> TestResult {
    let m = crate::fs::meminfo::MemInfo::now();
    ensure!(m.total > 0 && m.free <= m.total, "{m:?}");
    // Only the kernel's own page tables and per-CPU areas are left out.
    ensure!(m.unaccounted() < 2048, "{} KiB unaccounted: {m:?}", m.unaccounted());
    let text = crate::fs::meminfo::text().map_err(|_| "meminfo text")?;
    for field in ["MemTotal:", "MemFree:", "AnonPages:", "Slab:", "KernelStack:", "PageTables:"] {
        ensure!(text.contains(field), "no {field} in {text}");
    }
    ensure!(text.lines().all(|l| l.len() == 27), "misaligned: {text}");
    Ok(())
}

fn user_frames_leave_the_kernel_reserve() -> TestResult {
    let mut frames = Vec::new();
    frames.try_reserve(hal::mm::free_frame_count() as usize).map_err(|_| "no room for the frame list")?;
    while let Ok(f) = hal::frame::UserFrame::alloc_zeroed() {
        frames.push(f);
    }
    let left = hal::mm::free_frame_count();
    let reserve = hal::mm::kernel_reserve_frames();
    drop(frames);
    ensure!(left >= reserve && left <= reserve + 1, "user memory stopped with {left} frames free, reserve {reserve}");
    // The kernel may still allocate out of the reserve.
    let f = hal::mm::alloc_frame_zeroed().ok_or("kernel allocation failed at the reserve")?;
    hal::mm::free_frame(f);
    Ok(())
}

fn flags_at(vaddr: u64) -> Result<u64, alloc::string::String> {
    paging::translate(paging::current_root(), vaddr).map(|(_, f)| f).ok_or(alloc::format!("{vaddr:#x} not mapped"))
}

fn kernel_sections_w_xor_x() -> TestResult {
    let s = paging::kernel_sections();
    for (name, (start, end), want_write, want_exec) in
        [("text", s.text, false, true), ("rodata", s.rodata, false, false), ("data", s.data, true, false)]
    {
        let mut va = start;
        while va < end {
            let flags = flags_at(va)?;
            let writable = flags & WRITABLE != 0;
            let exec = flags & NO_EXECUTE == 0;
            ensure!(writable == want_write && exec == want_exec, "{name} page {va:#x} has flags {flags:#x}");
            ensure!(!(writable && exec), "{va:#x} is writable and executable");
            va += PAGE_SIZE;
        }
    }
    Ok(())
}

fn direct_map_is_nx() -> TestResult {
    let f = hal::mm::alloc_frame_zeroed().ok_or("out of frames")?;
    let flags = flags_at(f.to_virt());
    hal::mm::free_frame(f);
    let flags = flags?;
    ensure!(flags & NO_EXECUTE != 0, "direct map executable: {flags:#x}");
    Ok(())
}

fn stack_has_guard_page() -> TestResult {
    let stack = hal::context::KernelStack::new().map_err(|_| "no stack")?;
    ensure!(flags_at(stack.bottom()).is_ok(), "stack bottom not mapped");
    ensure!(flags_at(stack.top() - 8).is_ok(), "stack top not mapped");
    let guard = stack.bottom() - 8;
    ensure!(stack.guard_contains(guard) && hal::context::is_stack_guard(guard));
    ensure!(paging::translate(paging::current_root(), guard).is_none(), "guard page is mapped");
    ensure!(hal::extable::probe_read_u64(guard).is_err(), "guard page readable");
    Ok(())
}

fn stacks_are_freed() -> TestResult {
    // Warm up the heap so its growth does not count as a leak.
    drop(hal::context::KernelStack::new());
    let before = hal::mm::free_frame_count();
    for _ in 0..64 {
        let s = hal::context::KernelStack::new().map_err(|_| "no stack")?;
        drop(s);
    }
    ensure!(hal::mm::free_frame_count() == before, "{} frames leaked", before - hal::mm::free_frame_count());
    Ok(())
}
