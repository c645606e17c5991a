//! Host unit tests for [`super`], kept in their own file so the
//! implementation stays readable.

use super::*;
use crate::testrng::Rng;

const F: u64 = FRAME_SIZE;

#[test]
fn bits_needed_rounds_up() {
    assert_eq!(FrameBitmap::bits_needed(0), 0);
    assert_eq!(FrameBitmap::bits_needed(1), 1);
    assert_eq!(FrameBitmap::bits_needed(64), 1);
    assert_eq!(FrameBitmap::bits_needed(65), 2);
    assert_eq!(FrameBitmap::bits_needed(u64::MAX), (u64::MAX / 64 + 1) as usize);
}

#[test]
fn new_checks_storage_and_starts_used() {
    let mut small = [0u64; 1];
    assert!(FrameBitmap::new(&mut small, 65).is_none());
    let mut bits = [0u64; 2];
    let fb = FrameBitmap::new(&mut bits, 100).unwrap();
    assert_eq!(fb.free_frames(), 0);
    assert_eq!(fb.total_frames(), 100);
    assert!(fb.is_used(0));
    assert!(fb.is_used(99 * F));
    let mut none: [u64; 0] = [];
    let mut fb = FrameBitmap::new(&mut none, 0).unwrap();
    assert_eq!(fb.alloc(), None);
    assert_eq!(fb.alloc_contiguous(1, 1), None);
    assert_eq!(fb.free(0), Err(FrameError::OutOfRange));
}

#[test]
fn mark_ranges_align_and_clamp() {
    let mut bits = [0u64; 4];
    let mut fb = FrameBitmap::new(&mut bits, 200).unwrap();
    // Inward: [0x1001, 0x5fff) covers only frames 2..5.
    fb.mark_free_range(0x1001, 0x5fff);
    assert_eq!(fb.free_frames(), 3);
    assert!(fb.is_used(F) && !fb.is_used(2 * F) && !fb.is_used(4 * F) && fb.is_used(5 * F));
    // Freeing again does not double count.
    fb.mark_free_range(0, 6 * F);
    assert_eq!(fb.free_frames(), 6);
    // Clamped to frame_count.
    fb.mark_free_range(190 * F, u64::MAX);
    assert_eq!(fb.free_frames(), 16);
    assert!(fb.is_used(200 * F));
    // Outward: [0x1fff, 0x2001) touches frames 1 and 2.
    fb.mark_used_range(0x1fff, 0x2001);
    assert_eq!(fb.free_frames(), 14);
    assert!(fb.is_used(F) && fb.is_used(2 * F) && !fb.is_used(3 * F));
    fb.mark_used_range(0, u64::MAX);
    assert_eq!(fb.free_frames(), 0);
    // Inverted / empty ranges are no-ops.
    fb.mark_free_range(10 * F, 5 * F);
    fb.mark_free_range(0x1001, 0x1fff);
    assert_eq!(fb.free_frames(), 0);
}

#[test]
fn alloc_and_free_roundtrip() {
    let mut bits = [0u64; 2];
    let mut fb = FrameBitmap::new(&mut bits, 70).unwrap();
    fb.mark_free_range(0, 70 * F);
    let mut got = Vec::new();
    while let Some(a) = fb.alloc() {
        assert_eq!(a % F, 0);
        assert!(a < 70 * F);
        got.push(a);
    }
    assert_eq!(got.len(), 70);
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 70, "duplicate allocation");
    assert_eq!(fb.free_frames(), 0);
    assert_eq!(fb.free(5 * F), Ok(()));
    assert_eq!(fb.free(5 * F), Err(FrameError::DoubleFree));
    assert_eq!(fb.free(5 * F + 1), Err(FrameError::Unaligned));
    assert_eq!(fb.free(70 * F), Err(FrameError::OutOfRange));
    assert_eq!(fb.free(!(F - 1)), Err(FrameError::OutOfRange));
    assert_eq!(fb.alloc(), Some(5 * F));
    assert_eq!(fb.alloc(), None);
}

#[test]
fn freed_frames_are_reused_lowest_first() {
    let mut bits = [0u64; 8];
    let mut fb = FrameBitmap::new(&mut bits, 512).unwrap();
    fb.mark_free_range(0, 512 * F);
    for i in 0..300 {
        assert_eq!(fb.alloc(), Some(i * F));
    }
    // Freed in ascending order, as an munmap does: the next allocations
    // take them back from the lowest, before any never-used frame.
    for i in (100..200).chain(250..260) {
        assert_eq!(fb.free(i * F), Ok(()));
    }
    for i in (100..200).chain(250..260) {
        assert_eq!(fb.alloc(), Some(i * F));
    }
    assert_eq!(fb.alloc(), Some(300 * F));
}

#[test]
fn alloc_skips_holes() {
    let mut bits = [0u64; 16];
    let mut fb = FrameBitmap::new(&mut bits, 1000).unwrap();
    fb.mark_free_range(700 * F, 702 * F);
    assert_eq!(fb.alloc(), Some(700 * F));
    assert_eq!(fb.alloc(), Some(701 * F));
    assert_eq!(fb.alloc(), None);
    // Wraps around past the hint.
    fb.mark_free_range(3 * F, 4 * F);
    assert_eq!(fb.alloc(), Some(3 * F));
}

#[test]
fn contiguous_alignment_and_holes() {
    let mut bits = [0u64; 8];
    let mut fb = FrameBitmap::new(&mut bits, 512).unwrap();
    fb.mark_free_range(F, 512 * F);
    fb.mark_used_range(10 * F, 11 * F);
    // 4 frames aligned to 4: frames 4..8.
    assert_eq!(fb.alloc_contiguous(4, 4), Some(4 * F));
    // 8 frames: 1..=3 too short, 8..10 broken by 10, next aligned run at 16.
    assert_eq!(fb.alloc_contiguous(8, 8), Some(16 * F));
    // Unaligned run of 5 fits at 1..6? 1..4 only 3 frames; next free after 8: 8,9 then 10 used; 11..16.
    assert_eq!(fb.alloc_contiguous(5, 1), Some(11 * F));
    // Large alignment crossing words.
    assert_eq!(fb.alloc_contiguous(64, 128), Some(128 * F));
    assert!(fb.is_used(191 * F) && !fb.is_used(192 * F));
    // Invalid arguments.
    assert_eq!(fb.alloc_contiguous(0, 1), None);
    assert_eq!(fb.alloc_contiguous(1, 0), None);
    assert_eq!(fb.alloc_contiguous(1, 3), None);
    assert_eq!(fb.alloc_contiguous(u64::MAX, 1), None);
    // Too big / alignment beyond the end.
    assert_eq!(fb.alloc_contiguous(400, 1), None);
    assert_eq!(fb.alloc_contiguous(1, 1 << 20), None);
    assert_eq!(fb.alloc_contiguous(1, 1 << 63), None);
    // Exactly to the end.
    assert_eq!(fb.alloc_contiguous(256, 256), Some(256 * F));
    assert!(fb.is_used(511 * F));
}

#[test]
fn free_contiguous_is_all_or_nothing() {
    let mut bits = [0u64; 2];
    let mut fb = FrameBitmap::new(&mut bits, 128).unwrap();
    fb.mark_free_range(0, 128 * F);
    let a = fb.alloc_contiguous(100, 1).unwrap();
    assert_eq!(a, 0);
    assert_eq!(fb.free_frames(), 28);
    assert_eq!(fb.free(50 * F), Ok(()));
    // Frame 50 is already free: nothing else may be released.
    assert_eq!(fb.free_contiguous(0, 100), Err(FrameError::DoubleFree));
    assert_eq!(fb.free_frames(), 29);
    assert!(fb.is_used(0) && fb.is_used(99 * F));
    assert_eq!(fb.free_contiguous(0, 129), Err(FrameError::OutOfRange));
    assert_eq!(fb.free_contiguous(F, u64::MAX), Err(FrameError::OutOfRange));
    assert_eq!(fb.free_contiguous(1, 1), Err(FrameError::Unaligned));
    assert_eq!(fb.free_contiguous(0, 50), Ok(()));
    assert_eq!(fb.free_contiguous(51 * F, 49), Ok(()));
    assert_eq!(fb.free_frames(), 128);
    assert_eq!(fb.free_contiguous(0, 0), Ok(()));
}

#[test]
fn debug_shows_counters_only() {
    let mut bits = [0u64; 2];
    let mut fb = FrameBitmap::new(&mut bits, 100).unwrap();
    fb.mark_free_range(0, 10 * F);
    let s = format!("{fb:?}");
    assert!(s.contains("total_frames: 100") && s.contains("free_frames: 10"), "{s}");
}

#[test]
fn extra_storage_words_are_ignored() {
    let mut bits = [0u64; 4];
    let mut fb = FrameBitmap::new(&mut bits, 10).unwrap();
    fb.mark_free_range(0, u64::MAX);
    assert_eq!(fb.free_frames(), 10);
    for _ in 0..10 {
        assert!(fb.alloc().unwrap() < 10 * F);
    }
    assert_eq!(fb.alloc(), None);
}

/// Drives the bitmap with random operations and checks it against a
/// plain `Vec<bool>` model after every step.
#[test]
fn randomized_against_model() {
    let mut rng = Rng::new(42);
    for round in 0..50 {
        let n = 1 + rng.below(300);
        let mut bits = vec![0u64; FrameBitmap::bits_needed(n)];
        let mut fb = FrameBitmap::new(&mut bits, n).unwrap();
        let mut used = vec![true; n as usize];
        for _ in 0..400 {
            let addr = rng.below((n + 4) * F);
            let addr2 = addr + rng.below(40 * F);
            match rng.below(6) {
                0 => {
                    fb.mark_free_range(addr, addr2);
                    let (s, e) = (addr.div_ceil(F), (addr2 / F).min(n));
                    for f in s..e.max(s) {
                        used[f as usize] = false;
                    }
                }
                1 => {
                    fb.mark_used_range(addr, addr2);
                    let (s, e) = (addr / F, addr2.div_ceil(F).min(n));
                    for f in s..e.max(s) {
                        used[f as usize] = true;
                    }
                }
                2 => match fb.alloc() {
                    Some(a) => {
                        assert!(!used[(a / F) as usize]);
                        used[(a / F) as usize] = true;
                    }
                    None => assert!(used.iter().all(|&u| u)),
                },
                3 => {
                    let count = 1 + rng.below(8);
                    let align = 1 << rng.below(4);
                    let fits = (0..n)
                        .step_by(align as usize)
                        .find(|&s| s + count <= n && (s..s + count).all(|f| !used[f as usize]));
                    let got = fb.alloc_contiguous(count, align);
                    assert_eq!(got, fits.map(|s| s * F), "round {round}");
                    if let Some(s) = fits {
                        for f in s..s + count {
                            used[f as usize] = true;
                        }
                    }
                }
                _ => {
                    let a = addr & !(F - 1);
                    let count = rng.below(4);
                    let f = a / F;
                    let expect = if f >= n || f + count > n {
                        Err(FrameError::OutOfRange)
                    } else if (f..f + count).any(|x| !used[x as usize]) {
                        Err(FrameError::DoubleFree)
                    } else {
                        Ok(())
                    };
                    assert_eq!(fb.free_contiguous(a, count), expect);
                    if expect.is_ok() {
                        for x in f..f + count {
                            used[x as usize] = false;
                        }
                    }
                }
            }
            let free = used.iter().filter(|&&u| !u).count() as u64;
            assert_eq!(fb.free_frames(), free);
        }
        for f in 0..n {
            assert_eq!(fb.is_used(f * F), used[f as usize]);
        }
    }
}
