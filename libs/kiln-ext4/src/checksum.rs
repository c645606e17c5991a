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

static CRC32C: [u32; 256] = crc32c_table();
static CRC16: [u16; 256] = crc16_table();

/// Continues a raw CRC32C over `data` (no pre- or post-inversion).
pub fn crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = CRC32C[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
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
    fn crc16_matches_the_standard_check_value() {
        // CRC-16/ARC check value (init 0).
        assert_eq!(crc16(0, b"123456789"), 0xBB3D);
    }
}
