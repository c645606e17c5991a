//! Writes the kernel's symbol table into its reserved `.ksyms` section.
//!
//! The linker script reserves a fixed-size, zero-filled `.ksyms` section so
//! that filling it after linking moves nothing: we read `.symtab`, keep the
//! code symbols, demangle them, encode them in the `KILNSYM1` format shared
//! with the kernel (`kiln_util::ksyms`) and overwrite that section's bytes
//! in place. No other byte of the file changes.

use std::fmt;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind, SymbolSection};

use crate::Result;

const SECTION: &str = ".ksyms";

/// Names are cut no shorter than this when the table is too big: shorter
/// names stop telling monomorphized functions apart, so past that point we
/// drop symbols instead.
const MIN_NAME_LEN: usize = 48;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub addr: u64,
    pub size: u32,
    pub name: String,
}

/// What [`patch`] did, for the build log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub symbols: usize,
    pub bytes: usize,
    pub capacity: usize,
    /// Names cut to this many bytes to fit, if any were.
    pub truncated_to: Option<usize>,
    pub dropped: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} symbols, {} of {} bytes", self.symbols, self.bytes, self.capacity)?;
        if let Some(n) = self.truncated_to {
            write!(f, "; DID NOT FIT: names cut to {n} bytes")?;
        }
        if self.dropped > 0 {
            write!(f, "; DID NOT FIT: {} symbols dropped", self.dropped)?;
        }
        Ok(())
    }
}

/// Copies `src` to `dst` with its `.ksyms` section filled in, and checks
/// the result parses with the kernel's own reader.
pub fn patch_file(src: &Path, dst: &Path) -> Result<Report> {
    let mut bytes = std::fs::read(src).map_err(|e| format!("read {}: {e}", src.display()))?;
    let report = patch(&mut bytes)?;
    std::fs::write(dst, &bytes).map_err(|e| format!("write {}: {e}", dst.display()))?;
    Ok(report)
}

/// Fills `elf`'s `.ksyms` section in place. The whole section is rewritten
/// (table, then zeros), so patching an already patched image is the same
/// as patching a fresh one.
pub fn patch(elf: &mut [u8]) -> Result<Report> {
    let (symbols, (offset, size)) = {
        let file = object::File::parse(&*elf).map_err(|e| format!("parse ELF: {e}"))?;
        (collect(&file)?, section_range(&file)?)
    };
    let section = &mut elf[offset..offset + size];
    let (symbols, mut report) = fit(symbols, size);
    let table: Vec<(u64, u32, &str)> = symbols.iter().map(|s| (s.addr, s.size, s.name.as_str())).collect();
    section.fill(0);
    report.bytes =
        kiln_util::ksyms::encode(&table, section).ok_or("ksyms: encoding failed after fitting (unsorted input?)")?;
    report.symbols = table.len();
    report.capacity = size;
    // Read it back the way the kernel will, so a format mismatch fails the
    // build rather than the first backtrace.
    let parsed = kiln_util::ksyms::SymbolTable::parse(section).ok_or("ksyms: written table does not parse")?;
    if parsed.len() != table.len() {
        return Err("ksyms: written table has the wrong length".into());
    }
    Ok(report)
}

/// File offset and size of `.ksyms`, checked to lie inside the file.
fn section_range(file: &object::File<'_>) -> Result<(usize, usize)> {
    let section = file.section_by_name(SECTION).ok_or("no .ksyms section in the kernel (linker script?)")?;
    let (offset, size) = section.file_range().ok_or(".ksyms has no file data (NOBITS?)")?;
    let offset = usize::try_from(offset).map_err(|_| ".ksyms offset too large")?;
    let size = usize::try_from(size).map_err(|_| ".ksyms size too large")?;
    if size != section.size() as usize {
        return Err(".ksyms file size differs from its memory size".into());
    }
    Ok((offset, size))
}

/// The code symbols of `file`, demangled and sorted by address.
///
/// Functions (`STT_FUNC`) are kept with their size. Untyped symbols in an
/// executable section are kept with size 0, because assembly labels (ISR
/// stubs, entry points) are often untyped and a backtrace through them
/// should still name them; linker-script markers that coincide with a
/// function, or lie past their section's end, are skipped as noise.
pub fn collect(file: &object::File<'_>) -> Result<Vec<Symbol>> {
    let mut funcs = Vec::new();
    let mut labels = Vec::new();
    for sym in file.symbols() {
        let SymbolSection::Section(index) = sym.section() else {
            continue;
        };
        let Ok(raw) = sym.name_bytes() else { continue };
        if raw.is_empty() || raw.starts_with(b"$") || raw.starts_with(b".L") {
            continue;
        }
        let name = demangle(&String::from_utf8_lossy(raw));
        let size = u32::try_from(sym.size()).unwrap_or(u32::MAX);
        match sym.kind() {
            SymbolKind::Text => funcs.push(Symbol { addr: sym.address(), size, name }),
            SymbolKind::Unknown | SymbolKind::Label if sym.size() == 0 => {
                let Ok(section) = file.section_by_index(index) else {
                    continue;
                };
                let (start, len) = (section.address(), section.size());
                let inside = sym.address() >= start && sym.address() - start < len;
                if section.kind() == SectionKind::Text && inside {
                    labels.push(Symbol { addr: sym.address(), size: 0, name });
                }
            }
            _ => {}
        }
    }
    let func_addrs: std::collections::HashSet<u64> = funcs.iter().map(|s| s.addr).collect();
    labels.retain(|l| !func_addrs.contains(&l.addr));
    funcs.append(&mut labels);
    funcs.sort_by(|a, b| (a.addr, &a.name, a.size).cmp(&(b.addr, &b.name, b.size)));
    funcs.dedup();
    Ok(funcs)
}

/// Rust names lose their hash (`{:#}`); anything else is kept verbatim.
pub fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// Makes `symbols` encode into `capacity` bytes: first by cutting the
/// longest names to the largest length that fits (binary search), then,
/// if even [`MIN_NAME_LEN`] is too long, by dropping the symbols with the
/// longest names (deep generic instantiations, the least useful in a
/// backtrace) until the rest fits.
pub fn fit(mut symbols: Vec<Symbol>, capacity: usize) -> (Vec<Symbol>, Report) {
    let mut report = Report::default();
    if encoded_len(&symbols) <= capacity {
        return (symbols, report);
    }
    let longest = symbols.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let fits = |max: usize, syms: &[Symbol]| {
        let len: usize = 16 + syms.iter().map(|s| 18 + s.name.len().min(max)).sum::<usize>();
        len <= capacity
    };
    // Largest cut in [MIN_NAME_LEN, longest) that fits, if any. Cutting
    // at a char boundary can only shorten further, so the estimate holds.
    let (mut lo, mut hi) = (MIN_NAME_LEN, longest);
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid, &symbols) {
            best = Some(mid);
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let cut = best.unwrap_or(MIN_NAME_LEN);
    if best.is_none() {
        // Drop longest-named symbols first, then restore address order.
        symbols.sort_by_key(|s| std::cmp::Reverse(s.name.len()));
        let mut i = 0;
        while i < symbols.len() && !fits(cut, &symbols[i..]) {
            i += 1;
        }
        report.dropped = i;
        symbols.drain(..i);
        symbols.sort_by(|a, b| (a.addr, &a.name).cmp(&(b.addr, &b.name)));
    }
    if symbols.iter().any(|s| s.name.len() > cut) {
        report.truncated_to = Some(cut);
    }
    for s in &mut symbols {
        truncate_name(&mut s.name, cut);
    }
    (symbols, report)
}

/// Cuts `name` to at most `max` bytes, on a char boundary, ending in `...`
/// so a reader knows it was cut.
fn truncate_name(name: &mut String, max: usize) {
    if name.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(3);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    name.push_str("...");
}

fn encoded_len(symbols: &[Symbol]) -> usize {
    let table: Vec<(u64, u32, &str)> = symbols.iter().map(|s| (s.addr, s.size, s.name.as_str())).collect();
    kiln_util::ksyms::encoded_len(&table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_util::ksyms::SymbolTable;
    use object::write;
    use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolScope};

    /// A relocatable ELF with a `.text` holding a mangled `hal::hal_start`,
    /// an untyped label and a data object, plus a zeroed `.ksyms`.
    fn sample_elf(ksyms_size: usize) -> Vec<u8> {
        let mut obj = write::Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = obj.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        obj.append_section_data(text, &[0x90; 0x100], 16);
        let ksyms = obj.add_section(Vec::new(), SECTION.as_bytes().to_vec(), SectionKind::ReadOnlyData);
        obj.append_section_data(ksyms, &vec![0; ksyms_size], 1);
        let data = obj.add_section(Vec::new(), b".rodata".to_vec(), SectionKind::ReadOnlyData);
        obj.append_section_data(data, &[1; 64], 8);
        let mut add = |name: &str, value, size, kind, section| {
            obj.add_symbol(write::Symbol {
                name: name.as_bytes().to_vec(),
                value,
                size,
                kind,
                scope: SymbolScope::Linkage,
                weak: false,
                section: write::SymbolSection::Section(section),
                flags: SymbolFlags::None,
            });
        };
        add("_RNvCsdrV5fc8dNTg_3hal9hal_start", 0x40, 0x30, SymbolKind::Text, text);
        add("_ZN4kiln5kmain17h0123456789abcdefE", 0x00, 0x20, SymbolKind::Text, text);
        add("hal_isr_stub_0", 0x80, 0, SymbolKind::Label, text);
        // Coincides with kmain: dropped as a marker.
        add("__kernel_text_start", 0x00, 0, SymbolKind::Label, text);
        add("SOME_TABLE", 0x00, 0x40, SymbolKind::Data, data);
        obj.write().unwrap()
    }

    #[test]
    fn collects_demangled_code_symbols() {
        let elf = sample_elf(4096);
        let file = object::File::parse(&*elf).unwrap();
        let names: Vec<(u64, u32, String)> =
            collect(&file).unwrap().into_iter().map(|s| (s.addr, s.size, s.name)).collect();
        assert_eq!(
            names,
            [
                (0x00, 0x20, "kiln::kmain".to_string()),
                (0x40, 0x30, "hal::hal_start".to_string()),
                (0x80, 0, "hal_isr_stub_0".to_string()),
            ]
        );
    }

    #[test]
    fn patch_roundtrips_and_touches_only_ksyms() {
        let original = sample_elf(4096);
        let mut elf = original.clone();
        let report = patch(&mut elf).unwrap();
        assert_eq!(report.symbols, 3);
        assert_eq!(report.dropped, 0);
        assert_eq!(report.truncated_to, None);

        let file = object::File::parse(&*original).unwrap();
        let (off, size) = section_range(&file).unwrap();
        assert_eq!(elf.len(), original.len());
        assert_eq!(elf[..off], original[..off]);
        assert_eq!(elf[off + size..], original[off + size..]);

        let table = SymbolTable::parse(&elf[off..off + size]).unwrap();
        assert_eq!(table.lookup(0x45), Some(("hal::hal_start", 5)));
        assert_eq!(table.lookup(0x10), Some(("kiln::kmain", 0x10)));
        assert_eq!(table.lookup(0x84), Some(("hal_isr_stub_0", 4)));

        // Patching again gives the same bytes.
        let mut again = elf.clone();
        patch(&mut again).unwrap();
        assert_eq!(again, elf);
    }

    #[test]
    fn too_small_section_truncates() {
        // Header + 3 entries and 3 short names, but not the full names.
        let mut elf = sample_elf(16 + 3 * 18 + 30);
        let report = patch(&mut elf).unwrap();
        assert_eq!(report.symbols + report.dropped, 3);
        assert!(report.truncated_to.is_some() || report.dropped > 0);
    }

    #[test]
    fn fit_cuts_then_drops() {
        let long = |addr, n| Symbol { addr, size: 1, name: "x".repeat(n) };
        let syms = vec![long(1, 100), long(2, 200), long(3, 10)];
        let (kept, r) = fit(syms.clone(), 10_000);
        assert_eq!((kept, r), (syms.clone(), Report::default()));

        // Room for all three with names cut somewhere in (48, 200).
        let (kept, r) = fit(syms.clone(), 16 + 3 * 18 + 100 + 120 + 10);
        assert_eq!(kept.len(), 3);
        let cut = r.truncated_to.unwrap();
        assert!((MIN_NAME_LEN..200).contains(&cut), "{cut}");
        assert!(encoded_len(&kept) <= 16 + 3 * 18 + 230);
        assert!(kept[1].name.ends_with("..."));

        // Not even 48-byte names fit for all: the longest goes first.
        let (kept, r) = fit(syms, 16 + 2 * 18 + 48 + 10);
        assert_eq!(r.dropped, 1);
        assert_eq!(kept.iter().map(|s| s.addr).collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        let mut s = "ääääää".to_string();
        truncate_name(&mut s, 8);
        assert_eq!(s, "ää...");
        assert!(s.len() <= 8);
    }
}
