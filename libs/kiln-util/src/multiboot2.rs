//! Reading the Multiboot2 boot information structure.
//!
//! A Multiboot2 loader (GRUB, QEMU via a shim) leaves a blob in memory: a
//! `u32 total_size`, a reserved `u32`, then a sequence of tags, each
//! `u32 type, u32 size` followed by `size - 8` payload bytes and padding to
//! the next 8-byte boundary, closed by a type-0 end tag. This module owns
//! walking that blob — which the kernel must treat as untrusted — and
//! extracting what boot needs: command line, loader name, memory map,
//! modules and the ACPI RSDP. Malformed data ends the walk; it never panics.

use crate::bytes::u32_at;
use crate::bytes::u64_at;
use crate::memmap::{MemoryMap, Region, RegionKind};

const TAG_END: u32 = 0;
const TAG_CMDLINE: u32 = 1;
const TAG_BOOTLOADER: u32 = 2;
const TAG_MODULE: u32 = 3;
const TAG_MMAP: u32 = 6;
const TAG_ACPI_OLD: u32 = 14;
const TAG_ACPI_NEW: u32 = 15;

const HEADER_SIZE: usize = 8;
const TAG_HEADER_SIZE: usize = 8;
/// Memory map tag: type, size, entry_size, entry_version.
const MMAP_HEADER_SIZE: usize = 16;
/// `u64 base_addr, u64 length, u32 type, u32 reserved`.
const MMAP_ENTRY_MIN: usize = 24;
/// A version-1 RSDP; anything shorter cannot be an RSDP.
const RSDP_V1_SIZE: usize = 20;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum ParseError {
    /// A tag or memory map entry runs past the end of the structure, or its
    /// header is inconsistent.
    Truncated,
    NoMemoryMap,
    /// The destination [`MemoryMap`] ran out of slots.
    Full,
}

/// A validated view of the boot information (only the outer size has been
/// checked; tags are validated as they are read).
#[derive(Clone, Copy, Debug)]
pub struct BootInfo<'a> {
    bytes: &'a [u8],
}

/// A boot module (tag type 3): a physical range the loader filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module<'a> {
    pub start: u32,
    pub end: u32,
    pub cmdline: &'a str,
}

impl<'a> BootInfo<'a> {
    /// Accepts `bytes` if it holds at least the `total_size` bytes the
    /// header announces; anything past that is ignored.
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        let total = usize::try_from(Self::total_size(bytes)?).ok()?;
        Some(BootInfo { bytes: bytes.get(..total)? })
    }

    /// Reads the structure's size from its first bytes, so the caller can
    /// map just the header before mapping the rest. `None` if fewer than 4
    /// bytes are given or the size is below the 8-byte minimum.
    pub fn total_size(bytes_header: &[u8]) -> Option<u32> {
        let total = u32_at(bytes_header, 0)?;
        (total as usize >= HEADER_SIZE).then_some(total)
    }

    /// Tag type 1. `None` if absent or not valid UTF-8.
    pub fn command_line(&self) -> Option<&'a str> {
        self.find(TAG_CMDLINE).and_then(|t| strict_str(payload(t, 0)))
    }

    /// Tag type 2. `None` if absent or not valid UTF-8.
    pub fn bootloader_name(&self) -> Option<&'a str> {
        self.find(TAG_BOOTLOADER).and_then(|t| strict_str(payload(t, 0)))
    }

    /// Memory map tag (type 6): pushes each entry into `map` and returns the
    /// number of entries read. Entries are not normalized here. On
    /// `Err(Full)` the entries before the failing one have been pushed.
    pub fn memory_map(&self, map: &mut MemoryMap) -> Result<usize, ParseError> {
        let mut tag = None;
        for t in self.tags() {
            match t {
                Err(e) => return Err(e),
                Ok((TAG_MMAP, data)) => {
                    tag = Some(data);
                    break;
                }
                Ok(_) => {}
            }
        }
        let tag = tag.ok_or(ParseError::NoMemoryMap)?;
        let entry_size = u32_at(tag, 8).ok_or(ParseError::Truncated)? as usize;
        // entry_size lets future loaders append fields; it can never shrink
        // below the fields we read (and 0 would make no progress).
        if entry_size < MMAP_ENTRY_MIN || tag.len() < MMAP_HEADER_SIZE {
            return Err(ParseError::Truncated);
        }
        let mut n = 0;
        // A trailing partial entry is ignored rather than rejected: the
        // complete entries before it are still trustworthy.
        for e in tag[MMAP_HEADER_SIZE..].chunks_exact(entry_size) {
            let (Some(base), Some(len), Some(kind)) = (u64_at(e, 0), u64_at(e, 8), u32_at(e, 16)) else {
                return Err(ParseError::Truncated);
            };
            map.push(Region { start: base, end: base.saturating_add(len), kind: RegionKind::from_e820(kind) })
                .map_err(|_| ParseError::Full)?;
            n += 1;
        }
        Ok(n)
    }

    /// Tag type 3, in the order the loader listed them. A module whose
    /// string is not valid UTF-8 is still reported (the memory range is
    /// what matters), with its string cut at the first invalid byte.
    pub fn modules(&self) -> impl Iterator<Item = Module<'a>> {
        self.tags().map_while(Result::ok).filter_map(|(ty, t)| {
            if ty != TAG_MODULE {
                return None;
            }
            Some(Module { start: u32_at(t, 8)?, end: u32_at(t, 12)?, cmdline: lossy_prefix(payload(t, 8)) })
        })
    }

    /// Tag 15 (ACPI 2.0+ RSDP, preferred because it leads to the XSDT) or
    /// tag 14 (ACPI 1.0 RSDP): the RSDP bytes as copied by the loader.
    pub fn rsdp(&self) -> Option<&'a [u8]> {
        let pick = |ty| self.find(ty).map(|t| payload(t, 0)).filter(|p| p.len() >= RSDP_V1_SIZE);
        pick(TAG_ACPI_NEW).or_else(|| pick(TAG_ACPI_OLD))
    }

    /// The first well-formed tag of type `ty`.
    fn find(&self, ty: u32) -> Option<&'a [u8]> {
        self.tags().map_while(Result::ok).find(|&(t, _)| t == ty).map(|(_, data)| data)
    }

    fn tags(&self) -> Tags<'a> {
        Tags { bytes: self.bytes, off: HEADER_SIZE, done: false }
    }
}

/// Tag payload after the 8-byte tag header plus `skip` more bytes.
fn payload(tag: &[u8], skip: usize) -> &[u8] {
    tag.get(TAG_HEADER_SIZE + skip..).unwrap_or(&[])
}

/// The bytes before the first NUL. Loaders are supposed to terminate, but a
/// missing NUL only means the string filled the tag.
fn until_nul(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

fn strict_str(b: &[u8]) -> Option<&str> {
    core::str::from_utf8(until_nul(b)).ok()
}

fn lossy_prefix(b: &[u8]) -> &str {
    let b = until_nul(b);
    match core::str::from_utf8(b) {
        Ok(s) => s,
        // `valid_up_to` is a char boundary, so this cannot fail.
        Err(e) => core::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
    }
}

/// Walks the tags, yielding `(type, whole tag bytes)`. A tag whose header
/// is inconsistent yields one `Err(Truncated)` and ends the walk, since
/// nothing after it can be located reliably. Running out of bytes without
/// an end tag ends the walk quietly.
struct Tags<'a> {
    bytes: &'a [u8],
    off: usize,
    done: bool,
}

impl<'a> Iterator for Tags<'a> {
    type Item = Result<(u32, &'a [u8]), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let ty = u32_at(self.bytes, self.off);
        let size = u32_at(self.bytes, self.off.saturating_add(4));
        let (Some(ty), Some(size)) = (ty, size) else {
            self.done = true;
            return None;
        };
        if ty == TAG_END {
            self.done = true;
            return None;
        }
        let size = size as usize;
        let tag = (size >= TAG_HEADER_SIZE).then(|| self.bytes.get(self.off..self.off.checked_add(size)?)).flatten();
        let Some(tag) = tag else {
            self.done = true;
            return Some(Err(ParseError::Truncated));
        };
        // Tags start 8-aligned; the last one may legally end unpadded.
        match (self.off + size).checked_next_multiple_of(8) {
            Some(next) => self.off = next,
            None => self.done = true,
        }
        Some(Ok((ty, tag)))
    }
}

#[cfg(test)]
mod tests;
