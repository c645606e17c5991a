#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
//! Kiln's hardware-independent helper library.
//!
//! Everything here is pure logic over byte slices and caller-provided
//! storage, so it can be unit-tested on the host and linked into the kernel
//! with nothing but `core`: no heap, no `unsafe`, no global state. Parsers
//! treat their input as untrusted (it comes from firmware, a bootloader or a
//! build tool) and report malformed data instead of panicking. The rules of
//! Linux credentials ([`cred`]) live here too, so the host can test them;
//! they use the ABI constants of `linux-abi`, this crate's one dependency.

pub mod acl;
pub mod acpi;
pub mod byte_ring;
pub mod cpio;
pub mod cputime;
pub mod cred;
pub mod elfcore;
pub mod fmt_util;
pub mod frames;
pub mod gzip;
pub mod ipconfig;
pub mod ksyms;
pub mod memmap;
pub mod multiboot2;
pub mod pci;
pub mod pvh;
pub mod seccomp;
pub mod shebang;
pub mod vdso;
pub mod virtq;
pub mod vtd;

pub(crate) mod bytes {
    //! Little-endian field readers shared by the parsers. Each returns
    //! `None` when the field would run past the end of the slice, which is
    //! how the parsers stay panic-free on truncated input.

    pub fn u16_at(b: &[u8], off: usize) -> Option<u16> {
        let s = b.get(off..off.checked_add(2)?)?;
        Some(u16::from_le_bytes([s[0], s[1]]))
    }

    pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
        let s = b.get(off..off.checked_add(4)?)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(s);
        Some(u32::from_le_bytes(a))
    }

    pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
        let s = b.get(off..off.checked_add(8)?)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(u64::from_le_bytes(a))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn reads_little_endian() {
            let b = [1, 2, 3, 4, 5, 6, 7, 8, 9];
            assert_eq!(u16_at(&b, 0), Some(0x0201));
            assert_eq!(u32_at(&b, 1), Some(0x0504_0302));
            assert_eq!(u64_at(&b, 1), Some(0x0908_0706_0504_0302));
        }

        #[test]
        fn out_of_bounds_is_none() {
            let b = [0u8; 8];
            assert_eq!(u16_at(&b, 7), None);
            assert_eq!(u32_at(&b, 5), None);
            assert_eq!(u64_at(&b, 1), None);
            assert_eq!(u64_at(&b, usize::MAX), None);
            assert_eq!(u32_at(&b, usize::MAX - 1), None);
            assert_eq!(u16_at(&[], 0), None);
        }
    }
}

#[cfg(test)]
pub(crate) mod testrng {
    //! Deterministic xorshift generator for the randomized tests; the crate
    //! has no dependencies, so it cannot pull in `rand`, and a fixed seed
    //! keeps failures reproducible.

    pub struct Rng(u64);

    impl Rng {
        pub fn new(seed: u64) -> Self {
            Rng(seed | 1)
        }

        pub fn next_u64(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        /// Uniform-ish value in `0..n` (`n > 0`).
        pub fn below(&mut self, n: u64) -> u64 {
            self.next_u64() % n
        }

        pub fn fill(&mut self, buf: &mut [u8]) {
            for b in buf {
                *b = self.next_u64() as u8;
            }
        }
    }
}
