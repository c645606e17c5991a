//! The kernel symbol table format (`KILNSYM1`) used to symbolize backtraces.
//!
//! A host tool extracts function symbols from the linked kernel and writes
//! them, with [`encode`], into a section reserved in the image; at run time
//! the kernel reads that section with [`SymbolTable`]. Both sides live here
//! so the format has exactly one definition.
//!
//! Layout, all integers little-endian:
//!
//! ```text
//! 0   [u8; 8]  MAGIC "KILNSYM1"
//! 8   u32      count
//! 12  u32      strtab_len
//! 16  count × { u64 addr, u32 size, u32 name_offset }   sorted by addr
//! ..  strtab   strtab_len bytes
//! ```
//!
//! `name_offset` is relative to the start of the string table and points at
//! a `u16` length followed by that many bytes of UTF-8 (no NUL). A length
//! prefix, rather than "ends at the next offset", lets entries share a name
//! and keeps each name self-delimiting. Bytes after the string table are
//! ignored, so the table may sit in a larger zero-filled placeholder.

use crate::bytes::{u16_at, u32_at, u64_at};

pub const MAGIC: [u8; 8] = *b"KILNSYM1";

const HEADER_SIZE: usize = 16;
const ENTRY_SIZE: usize = 16;
const NAME_LEN_SIZE: usize = 2;

/// A validated symbol table. Everything is checked by [`parse`], so
/// lookups cannot hit malformed data.
///
/// [`parse`]: Self::parse
#[derive(Clone, Copy, Debug)]
pub struct SymbolTable<'a> {
    entries: &'a [u8],
    strtab: &'a [u8],
    count: usize,
}

impl<'a> SymbolTable<'a> {
    /// `None` if the magic is missing (e.g. the all-zero placeholder of a
    /// kernel built without symbols) or anything is malformed: sizes past
    /// the end, unsorted entries, name offsets outside the string table, or
    /// names that are not UTF-8. Validation is O(n) once, at boot.
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        if bytes.get(..MAGIC.len())? != MAGIC {
            return None;
        }
        let count = usize::try_from(u32_at(bytes, 8)?).ok()?;
        let strtab_len = usize::try_from(u32_at(bytes, 12)?).ok()?;
        let entries_end = count.checked_mul(ENTRY_SIZE)?.checked_add(HEADER_SIZE)?;
        let strtab_end = entries_end.checked_add(strtab_len)?;
        let table = SymbolTable {
            entries: bytes.get(HEADER_SIZE..entries_end)?,
            strtab: bytes.get(entries_end..strtab_end)?,
            count,
        };
        let mut prev = 0;
        for i in 0..count {
            let (addr, _, name_off) = table.entry(i)?;
            if addr < prev {
                return None;
            }
            prev = addr;
            table.name(name_off)?;
        }
        Some(table)
    }

    /// Returns the symbol containing `addr` and the offset into it.
    ///
    /// A symbol covers `[addr, addr + size)`; a size-0 symbol (assembly
    /// labels often have no size) covers everything up to the next symbol,
    /// and the last one is unbounded — a large offset in a backtrace is the
    /// hint that the address is not really in it. When several symbols
    /// share a start address, a sized one that covers `addr` is preferred.
    pub fn lookup(&self, addr: u64) -> Option<(&'a str, u64)> {
        // Index of the first entry starting after `addr`.
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid)?.0 <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let last = lo.checked_sub(1)?;
        let start = self.entry(last)?.0;
        let mut first = last;
        while first > 0 && self.entry(first - 1)?.0 == start {
            first -= 1;
        }
        let mut zero_sized = None;
        for i in first..=last {
            let (_, size, name_off) = self.entry(i)?;
            if size == 0 {
                zero_sized = zero_sized.or(Some(name_off));
            } else if addr - start < u64::from(size) {
                return Some((self.name(name_off)?, addr - start));
            }
        }
        Some((self.name(zero_sized?)?, addr - start))
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `(addr, size, name_offset)` of entry `i`.
    fn entry(&self, i: usize) -> Option<(u64, u32, u32)> {
        let off = i.checked_mul(ENTRY_SIZE)?;
        Some((u64_at(self.entries, off)?, u32_at(self.entries, off + 8)?, u32_at(self.entries, off + 12)?))
    }

    fn name(&self, name_off: u32) -> Option<&'a str> {
        let off = usize::try_from(name_off).ok()?;
        let len = usize::from(u16_at(self.strtab, off)?);
        let start = off + NAME_LEN_SIZE;
        core::str::from_utf8(self.strtab.get(start..start.checked_add(len)?)?).ok()
    }
}

/// Bytes [`encode`] needs for `symbols` (saturating, so an absurd input
/// yields a size no buffer has).
pub fn encoded_len(symbols: &[(u64, u32, &str)]) -> usize {
    symbols.iter().fold(HEADER_SIZE, |acc, (_, _, name)| {
        acc.saturating_add(ENTRY_SIZE + NAME_LEN_SIZE).saturating_add(name.len())
    })
}

/// Encodes `(addr, size, name)` triples into `out` and returns the number
/// of bytes written ([`encoded_len`]).
///
/// Without a heap there is no scratch space to sort in, so the input must
/// already be sorted by address (ties allowed); `None` if it is not, if
/// `out` is too small, if a name is longer than 65535 bytes, or if the
/// counts overflow the format's `u32` fields. Every check runs before the
/// first write, so on `None` the buffer is untouched.
pub fn encode(symbols: &[(u64, u32, &str)], out: &mut [u8]) -> Option<usize> {
    if symbols.windows(2).any(|w| w[0].0 > w[1].0) {
        return None;
    }
    let count = u32::try_from(symbols.len()).ok()?;
    let total = encoded_len(symbols);
    let strtab_start = HEADER_SIZE.checked_add(symbols.len().checked_mul(ENTRY_SIZE)?)?;
    let strtab_len = u32::try_from(total.checked_sub(strtab_start)?).ok()?;
    if total > out.len() || symbols.iter().any(|s| s.2.len() > usize::from(u16::MAX)) {
        return None;
    }
    out[..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&count.to_le_bytes());
    out[12..16].copy_from_slice(&strtab_len.to_le_bytes());
    let mut name_off = 0usize;
    for (i, &(addr, size, name)) in symbols.iter().enumerate() {
        let e = HEADER_SIZE + i * ENTRY_SIZE;
        out[e..e + 8].copy_from_slice(&addr.to_le_bytes());
        out[e + 8..e + 12].copy_from_slice(&size.to_le_bytes());
        // Fits: name_off < strtab_len, which was checked against u32.
        out[e + 12..e + 16].copy_from_slice(&(name_off as u32).to_le_bytes());
        let s = strtab_start + name_off;
        out[s..s + 2].copy_from_slice(&(name.len() as u16).to_le_bytes());
        out[s + 2..s + 2 + name.len()].copy_from_slice(name.as_bytes());
        name_off += NAME_LEN_SIZE + name.len();
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::Rng;

    fn build(symbols: &[(u64, u32, &str)]) -> Vec<u8> {
        let mut out = vec![0u8; encoded_len(symbols)];
        assert_eq!(encode(symbols, &mut out), Some(out.len()));
        out
    }

    const SYMS: &[(u64, u32, &str)] = &[
        (0x1000, 0x20, "kmain"),
        (0x1020, 0, "asm_label"),
        (0x1100, 0x10, "alias_a"),
        (0x1100, 0x40, "alias_b"),
        (0x2000, 0x10, "ünïcode::fn"),
        (0x3000, 0, "last"),
    ];

    #[test]
    fn roundtrip_and_lookup() {
        let b = build(SYMS);
        let t = SymbolTable::parse(&b).unwrap();
        assert_eq!(t.len(), 6);
        assert!(!t.is_empty());
        assert_eq!(t.lookup(0xfff), None);
        assert_eq!(t.lookup(0x1000), Some(("kmain", 0)));
        assert_eq!(t.lookup(0x101f), Some(("kmain", 0x1f)));
        // Size 0: extends to the next symbol.
        assert_eq!(t.lookup(0x1020), Some(("asm_label", 0)));
        assert_eq!(t.lookup(0x10ff), Some(("asm_label", 0xdf)));
        // Aliases: the one that covers wins.
        assert_eq!(t.lookup(0x1105), Some(("alias_a", 5)));
        assert_eq!(t.lookup(0x1120), Some(("alias_b", 0x20)));
        assert_eq!(t.lookup(0x1140), None);
        assert_eq!(t.lookup(0x200f), Some(("ünïcode::fn", 0xf)));
        assert_eq!(t.lookup(0x2010), None);
        // Last size-0 symbol is unbounded.
        assert_eq!(t.lookup(u64::MAX), Some(("last", u64::MAX - 0x3000)));
    }

    #[test]
    fn every_address_matches_linear_scan() {
        let b = build(SYMS);
        let t = SymbolTable::parse(&b).unwrap();
        for addr in 0xf00..0x3100u64 {
            let i = SYMS.iter().rposition(|s| s.0 <= addr);
            let expect = i.and_then(|i| {
                let start = SYMS[i].0;
                let run = SYMS.iter().filter(|s| s.0 == start);
                run.clone()
                    .find(|s| s.1 != 0 && addr - start < u64::from(s.1))
                    .or_else(|| run.clone().find(|s| s.1 == 0))
                    .map(|s| (s.2, addr - start))
            });
            assert_eq!(t.lookup(addr), expect, "addr {addr:#x}");
        }
    }

    #[test]
    fn empty_table() {
        let b = build(&[]);
        assert_eq!(b.len(), 16);
        let t = SymbolTable::parse(&b).unwrap();
        assert!(t.is_empty());
        assert_eq!(t.len(), 0);
        assert_eq!(t.lookup(0), None);
        assert_eq!(t.lookup(u64::MAX), None);
    }

    #[test]
    fn placeholder_and_trailing_bytes() {
        assert!(SymbolTable::parse(&[0u8; 4096]).is_none());
        assert!(SymbolTable::parse(&[]).is_none());
        assert!(SymbolTable::parse(b"KILNSYM").is_none());
        assert!(SymbolTable::parse(b"KILNSYM1").is_none());
        let mut b = build(SYMS);
        b.resize(b.len() + 1000, 0);
        assert_eq!(SymbolTable::parse(&b).unwrap().lookup(0x1000), Some(("kmain", 0)));
    }

    #[test]
    fn encode_rejects_bad_input() {
        let mut out = [0u8; 256];
        assert_eq!(encode(&[(2, 1, "b"), (1, 1, "a")], &mut out), None);
        let syms = [(1, 1, "a"), (1, 1, "b")];
        let n = encoded_len(&syms);
        assert_eq!(n, 16 + 2 * 16 + 2 * 3);
        assert_eq!(encode(&syms, &mut out[..n - 1]), None);
        assert!(out.iter().all(|&b| b == 0), "nothing written on failure");
        assert_eq!(encode(&syms, &mut out[..n]), Some(n));
        let long = "x".repeat(70_000);
        let mut big = vec![0u8; 80_000];
        assert_eq!(encode(&[(0, 0, &long)], &mut big), None);
        let max = "y".repeat(65_535);
        let n = encode(&[(0, 0, &max)], &mut big).unwrap();
        assert_eq!(SymbolTable::parse(&big[..n]).unwrap().lookup(9), Some((&max[..], 9)));
    }

    #[test]
    fn parse_rejects_malformed() {
        let good = build(SYMS);
        // Unsorted entries.
        let mut b = good.clone();
        b[16..24].copy_from_slice(&0x9999u64.to_le_bytes());
        assert!(SymbolTable::parse(&b).is_none());
        // Name offset outside the string table.
        let mut b = good.clone();
        b[28..32].copy_from_slice(&0xffffu32.to_le_bytes());
        assert!(SymbolTable::parse(&b).is_none());
        // Name length past the string table.
        let mut b = good.clone();
        let strtab = 16 + 16 * SYMS.len();
        b[strtab..strtab + 2].copy_from_slice(&0x7fffu16.to_le_bytes());
        assert!(SymbolTable::parse(&b).is_none());
        // Invalid UTF-8 name.
        let mut b = good.clone();
        b[strtab + 2] = 0xff;
        assert!(SymbolTable::parse(&b).is_none());
        // Huge count / strtab_len.
        for off in [8, 12] {
            let mut b = good.clone();
            b[off..off + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            assert!(SymbolTable::parse(&b).is_none());
        }
        // Every truncation is rejected.
        for n in 0..good.len() {
            assert!(SymbolTable::parse(&good[..n]).is_none(), "len {n}");
        }
    }

    #[test]
    fn randomized_tables_and_garbage() {
        let mut rng = Rng::new(0x51_u64 ^ 0xabcdef);
        let names = ["a", "bb", "ccc", "", "core::fmt::write", "é"];
        for _ in 0..500 {
            let n = rng.below(40) as usize;
            let mut syms: Vec<(u64, u32, &str)> =
                (0..n).map(|_| (rng.below(1 << 16), rng.below(64) as u32, names[rng.below(6) as usize])).collect();
            syms.sort_by_key(|s| s.0);
            let b = build(&syms);
            let t = SymbolTable::parse(&b).unwrap();
            assert_eq!(t.len(), n);
            for _ in 0..50 {
                let addr = rng.below(1 << 16);
                if let Some((name, off)) = t.lookup(addr) {
                    assert!(syms.iter().any(|s| s.2 == name && s.0 + off == addr));
                }
            }
            // Flip random bits: parse either rejects or yields a table on
            // which lookups still must not panic.
            let mut m = b.clone();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(m.len() as u64) as usize;
                m[i] ^= 1 << rng.below(8);
            }
            if let Some(t) = SymbolTable::parse(&m) {
                for _ in 0..20 {
                    let _ = t.lookup(rng.next_u64());
                }
                let _ = t.lookup(0);
                let _ = t.lookup(u64::MAX);
            }
        }
        for _ in 0..5000 {
            let mut g = vec![0u8; rng.below(128) as usize];
            rng.fill(&mut g);
            if g.len() >= 8 && rng.below(2) == 0 {
                g[..8].copy_from_slice(&MAGIC);
            }
            if let Some(t) = SymbolTable::parse(&g) {
                let _ = t.lookup(rng.next_u64());
            }
        }
    }
}
