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
    KTest { name: "mm::heap_box_and_vec", run: heap_box_and_vec },
    KTest { name: "mm::heap_failure_is_an_error", run: heap_failure_is_an_error },
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
