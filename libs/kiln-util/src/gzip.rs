//! The framing of a gzip member (RFC 1952) around its deflate data: the
//! header before it and the 8-byte trailer after it. The kernel inflates
//! the deflate data itself (with `miniz_oxide`); this module only finds
//! where it starts and checks the size the trailer records. The input is
//! untrusted: a short or malformed header is an error, never a panic.

/// Why a gzip header or trailer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GzipError {
    /// Not `1f 8b`.
    BadMagic,
    /// A compression method other than deflate (8).
    BadMethod,
    /// Reserved flag bits set.
    BadFlags,
    /// The input ends inside the header or trailer.
    Truncated,
}

impl GzipError {
    pub fn as_str(&self) -> &'static str {
        match self {
            GzipError::BadMagic => "not gzip data",
            GzipError::BadMethod => "gzip data not compressed with deflate",
            GzipError::BadFlags => "reserved gzip header flags set",
            GzipError::Truncated => "truncated gzip header or trailer",
        }
    }
}

impl core::fmt::Display for GzipError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two bytes every gzip member starts with.
pub const MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Bytes after the deflate data: CRC-32, then the size modulo 2^32.
pub const TRAILER_LEN: usize = 8;

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const RESERVED: u8 = 0xe0;

/// Whether `data` starts like a gzip member.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Length of the member header at the start of `data`: where the deflate
/// data begins.
pub fn header_len(data: &[u8]) -> Result<usize, GzipError> {
    let fixed = data.get(..10).ok_or(if is_gzip(data) || data.len() < 2 {
        GzipError::Truncated
    } else {
        GzipError::BadMagic
    })?;
    if fixed[..2] != MAGIC {
        return Err(GzipError::BadMagic);
    }
    if fixed[2] != 8 {
        return Err(GzipError::BadMethod);
    }
    let flags = fixed[3];
    if flags & RESERVED != 0 {
        return Err(GzipError::BadFlags);
    }
    let mut pos = 10usize;
    if flags & FEXTRA != 0 {
        let len = data.get(pos..pos + 2).ok_or(GzipError::Truncated)?;
        pos += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = data.get(pos..).ok_or(GzipError::Truncated)?;
            let nul = rest.iter().position(|&b| b == 0).ok_or(GzipError::Truncated)?;
            pos += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        pos += 2;
    }
    if pos > data.len() {
        return Err(GzipError::Truncated);
    }
    Ok(pos)
}

/// The trailer at the start of `data`: (CRC-32, size modulo 2^32).
pub fn trailer(data: &[u8]) -> Result<(u32, u32), GzipError> {
    let t = data.get(..TRAILER_LEN).ok_or(GzipError::Truncated)?;
    let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
    Ok((crc, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `printf hello | gzip -n`: no name, no extra fields.
    const HELLO: &[u8] = &[
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x86,
        0xa6, 0x10, 0x36, 0x05, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn plain_header_and_trailer() {
        assert_eq!(header_len(HELLO), Ok(10));
        let (crc, size) = trailer(&HELLO[HELLO.len() - TRAILER_LEN..]).unwrap();
        assert_eq!(size, 5);
        assert_eq!(crc, 0x3610_a686);
    }

    #[test]
    fn optional_fields_are_skipped() {
        let mut h = vec![0x1f, 0x8b, 8, FEXTRA | FNAME | FCOMMENT | FHCRC, 0, 0, 0, 0, 0, 3];
        h.extend_from_slice(&[3, 0, b'a', b'b', b'c']);
        h.extend_from_slice(b"name.cpio\0");
        h.extend_from_slice(b"a comment\0");
        h.extend_from_slice(&[0x12, 0x34]);
        let len = h.len();
        h.extend_from_slice(&[0xcb, 0x48]);
        assert_eq!(header_len(&h), Ok(len));
        // Cut anywhere inside the header: truncated, never a panic.
        for cut in 0..len {
            assert_eq!(header_len(&h[..cut]), Err(GzipError::Truncated), "cut {cut}");
        }
    }

    #[test]
    fn bad_headers() {
        assert_eq!(header_len(b"070701000000000000000"), Err(GzipError::BadMagic));
        assert_eq!(header_len(b"07"), Err(GzipError::BadMagic));
        assert_eq!(header_len(&[0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 3]), Err(GzipError::BadMethod));
        assert_eq!(header_len(&[0x1f, 0x8b, 8, 0x20, 0, 0, 0, 0, 0, 3]), Err(GzipError::BadFlags));
        // An extra field longer than the input.
        assert_eq!(header_len(&[0x1f, 0x8b, 8, FEXTRA, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 1]), Err(GzipError::Truncated));
        assert_eq!(trailer(&[1, 2, 3]), Err(GzipError::Truncated));
        assert!(!is_gzip(b"0707"));
        assert_eq!(GzipError::BadMagic.to_string(), "not gzip data");
    }
}
