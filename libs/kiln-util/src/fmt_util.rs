//! Human-oriented formatting helpers for boot and diagnostic output.
//!
//! The kernel has no heap, so nothing here builds a `String`: values are
//! formatted into small stack buffers and then handed to the formatter,
//! which keeps width/alignment flags (`{:>10}`) working for table output.

use core::fmt;

/// Formats a byte count with binary units: `"512 B"`, `"512 KiB"`,
/// `"1.5 MiB"`, `"23 GiB"`.
///
/// The largest unit with a whole part of at least 1 is used, with one
/// decimal that is truncated rather than rounded (so a value never reads
/// as more memory than there is, and never as "1024.0 KiB") and left out
/// when it is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanBytes(pub u64);

const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

impl fmt::Display for HumanBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut exp = 0;
        while exp + 1 < UNITS.len() && self.0 >> (10 * (exp + 1)) != 0 {
            exp += 1;
        }
        let unit = 1u128 << (10 * exp);
        let n = u128::from(self.0);
        let whole = n / unit;
        // u128 because `remainder * 10` overflows u64 for EiB values.
        let tenth = (n % unit) * 10 / unit;
        let mut buf = StackStr::<32>::new();
        // Cannot fail: the longest output, "1023.9 KiB", is far below 32.
        let _ = if tenth == 0 {
            fmt::write(&mut buf, format_args!("{} {}", whole, UNITS[exp]))
        } else {
            fmt::write(&mut buf, format_args!("{}.{} {}", whole, tenth, UNITS[exp]))
        };
        f.pad(buf.as_str())
    }
}

/// A fixed-capacity string; writes that do not fit fail instead of
/// truncating mid-character.
struct StackStr<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackStr<N> {
    fn new() -> Self {
        StackStr { buf: [0; N], len: 0 }
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s are ever copied in, so this is always valid.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> fmt::Write for StackStr<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        self.buf.get_mut(self.len..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    fn h(n: u64) -> String {
        HumanBytes(n).to_string()
    }

    #[test]
    fn bytes_below_one_kib() {
        assert_eq!(h(0), "0 B");
        assert_eq!(h(1), "1 B");
        assert_eq!(h(1023), "1023 B");
    }

    #[test]
    fn whole_units() {
        assert_eq!(h(1024), "1 KiB");
        assert_eq!(h(512 * 1024), "512 KiB");
        assert_eq!(h(1 << 20), "1 MiB");
        assert_eq!(h(23 << 30), "23 GiB");
        assert_eq!(h(1 << 40), "1 TiB");
        assert_eq!(h(1 << 50), "1 PiB");
        assert_eq!(h(1 << 60), "1 EiB");
    }

    #[test]
    fn fractions_truncate() {
        assert_eq!(h(1536 * 1024), "1.5 MiB");
        assert_eq!(h(1536), "1.5 KiB");
        assert_eq!(h(1025), "1 KiB");
        assert_eq!(h(1024 * 1024 - 1), "1023.9 KiB");
        assert_eq!(h((1 << 30) + (1 << 30) / 10 * 9 + 1000), "1.9 GiB");
        assert_eq!(h(u64::MAX), "15.9 EiB");
        // 639 KiB of conventional memory, as firmware reports it.
        assert_eq!(h(0x9fc00), "639 KiB");
    }

    #[test]
    fn honours_width_and_alignment() {
        assert_eq!(format!("{:>8}", HumanBytes(512 * 1024)), " 512 KiB");
        assert_eq!(format!("{:<8}|", HumanBytes(1)), "1 B     |");
        assert_eq!(format!("{:^9}", HumanBytes(1 << 20)), "  1 MiB  ");
    }

    #[test]
    fn no_std_buffer_rejects_overflow() {
        let mut s = StackStr::<4>::new();
        assert!(s.write_str("abc").is_ok());
        assert!(s.write_str("de").is_err());
        assert_eq!(s.as_str(), "abc");
        assert!(s.write_str("d").is_ok());
        assert_eq!(s.as_str(), "abcd");
    }

    #[test]
    fn every_power_and_neighbour_is_well_formed() {
        for shift in 0..64 {
            for delta in [-1i64, 0, 1] {
                let n = (1u64 << shift).wrapping_add_signed(delta);
                let s = h(n);
                let (num, unit) = s.split_once(' ').unwrap();
                assert!(UNITS.contains(&unit), "{s}");
                let v: f64 = num.parse().unwrap();
                assert!(v < 1024.0, "{s}");
                assert!(v >= 1.0 || n == 0, "{s}");
            }
        }
    }
}
