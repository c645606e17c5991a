//! Little- and big-endian field access over byte buffers. Reads past the end
//! give 0 and writes past the end are dropped, so a parser working on a
//! buffer of the wrong size can produce wrong values (which validation then
//! rejects) but never a panic.
//!
//! Every accessor is `#[inline]`: the file system's code is instantiated
//! in the kernel crate, and a call per field read was a fifth of a
//! directory leaf scan.

#[inline]
fn window<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = off.checked_add(N).and_then(|end| b.get(off..end)) {
        a.copy_from_slice(s);
    }
    a
}

#[inline]
fn store(b: &mut [u8], off: usize, v: &[u8]) {
    if let Some(s) = off.checked_add(v.len()).and_then(|end| b.get_mut(off..end)) {
        s.copy_from_slice(v);
    }
}

#[inline]
pub fn u8_at(b: &[u8], off: usize) -> u8 {
    b.get(off).copied().unwrap_or(0)
}
#[inline]
pub fn le16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(window(b, off))
}
#[inline]
pub fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(window(b, off))
}
#[inline]
pub fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(window(b, off))
}
#[inline]
pub fn be64(b: &[u8], off: usize) -> u64 {
    u64::from_be_bytes(window(b, off))
}
#[inline]
pub fn set_u8(b: &mut [u8], off: usize, v: u8) {
    store(b, off, &[v]);
}
#[inline]
pub fn set_le16(b: &mut [u8], off: usize, v: u16) {
    store(b, off, &v.to_le_bytes());
}
#[inline]
pub fn set_le32(b: &mut [u8], off: usize, v: u32) {
    store(b, off, &v.to_le_bytes());
}
#[inline]
pub fn set_be32(b: &mut [u8], off: usize, v: u32) {
    store(b, off, &v.to_be_bytes());
}
/// `b[off..off+len]`, or an empty slice when that range is not inside `b`.
#[inline]
pub fn slice(b: &[u8], off: usize, len: usize) -> &[u8] {
    off.checked_add(len).and_then(|end| b.get(off..end)).unwrap_or(&[])
}
/// Copies `v` into `b` at `off`, when it fits.
#[inline]
pub fn put(b: &mut [u8], off: usize, v: &[u8]) {
    store(b, off, v);
}
