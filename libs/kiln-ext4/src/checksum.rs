//! The checksums of the on-disk format: CRC32C (Castagnoli, reflected, as
//! Linux's `crc32c_le`, without the final inversion: ext4 and jbd2 chain
//! raw values and seed with `!0`) for `metadata_csum` and jbd2 csum v2/v3,
//! and CRC16 (ANSI, reflected) for the older `gdt_csum` group descriptors.

const fn crc32c_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0x82F6_3B78 } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

const fn crc16_table() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xA001 } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// Slicing-by-8 tables: `CRC32C8[k][i]` is the CRC of byte `i` followed
/// by `k` zero bytes, so eight bytes are folded in with eight lookups.
const fn crc32c_tables8() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    t[0] = crc32c_table();
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

static CRC32C8: [[u32; 256]; 8] = crc32c_tables8();
static CRC16: [u16; 256] = crc16_table();

/// Continues a raw CRC32C over `data` (no pre- or post-inversion).
pub fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    // Every metadata block read and written is checksummed: eight bytes
    // per step instead of one (a 4 KiB block in about a fifth of the
    // instructions).
    let t = &CRC32C8;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = t[7][(lo & 0xFF) as usize]
            ^ t[6][(lo >> 8 & 0xFF) as usize]
            ^ t[5][(lo >> 16 & 0xFF) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xFF) as usize]
            ^ t[2][(hi >> 8 & 0xFF) as usize]
            ^ t[1][(hi >> 16 & 0xFF) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = t[0][((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

/// Continues a CRC16 over `data`.
pub fn crc16(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc = CRC16[((crc ^ b as u16) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // The catalogued check value of CRC-32C over "123456789".
        assert_eq!(!crc32c(!0, b"123456789"), 0xE306_9283);
    }

    #[test]
    fn crc32c_by_eight_bytes_matches_the_bytewise_crc_at_every_length_and_seed() {
        let bytewise = |mut crc: u32, data: &[u8]| {
            let t = crc32c_table();
            for &b in data {
                crc = t[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
            }
            crc
        };
        let data: alloc::vec::Vec<u8> = (0..300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in 0..data.len() {
            for seed in [0, !0, 0x1234_5678] {
                assert_eq!(crc32c(seed, &data[..len]), bytewise(seed, &data[..len]), "len {len}");
            }
        }
    }

    #[test]
    fn crc16_matches_the_standard_check_value() {
        // CRC-16/ARC check value (init 0).
        assert_eq!(crc16(0, b"123456789"), 0xBB3D);
    }
}
