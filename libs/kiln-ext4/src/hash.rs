//! The directory-index (htree) name hashes: legacy, half-MD4 and TEA, each
//! in the signed-char and unsigned-char flavours that the superblock's
//! `s_flags` select. The algorithms are ext4's on-disk format, re-derived
//! from its documentation; they are checked by looking up every name of
//! indexed directories that the host's mkfs wrote.

/// `dx_root_info.hash_version` is 0 (legacy), 1 (half-MD4) or 2 (TEA);
/// the unsigned-char variants are those plus 3.
pub const HASH_UNSIGNED_DELTA: u8 = 3;

const DEFAULT_SEED: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
const EOF_32: u32 = 0x7fff_ffff;

fn char_value(c: u8, signed: bool) -> u32 {
    if signed {
        c as i8 as i32 as u32
    } else {
        c as u32
    }
}

fn legacy(name: &[u8], signed: bool) -> u32 {
    let (mut h0, mut h1) = (0x12a3_fe2du32, 0x37ab_e8f9u32);
    for &c in name {
        let mut h = h1.wrapping_add(h0 ^ char_value(c, signed).wrapping_mul(7_152_373));
        if h & 0x8000_0000 != 0 {
            h = h.wrapping_sub(0x7fff_ffff);
        }
        h1 = h0;
        h0 = h;
    }
    h0 << 1
}

/// Packs up to `out.len() * 4` bytes of `msg` into words, padded with a
/// value derived from the total length.
fn str_to_words(msg: &[u8], out: &mut [u32], signed: bool) {
    let len = msg.len() as u32;
    let mut pad = len | (len << 8);
    pad |= pad << 16;
    let mut val = pad;
    let take = msg.len().min(out.len() * 4);
    let mut idx = 0;
    for (i, &c) in msg[..take].iter().enumerate() {
        val = char_value(c, signed).wrapping_add(val << 8);
        if i % 4 == 3 {
            out[idx] = val;
            idx += 1;
            val = pad;
        }
    }
    if idx < out.len() {
        out[idx] = val;
        idx += 1;
    }
    for w in out.iter_mut().skip(idx) {
        *w = pad;
    }
}

fn half_md4_transform(buf: &mut [u32; 4], inp: &[u32; 8]) {
    let f = |x: u32, y: u32, z: u32| z ^ (x & (y ^ z));
    let g = |x: u32, y: u32, z: u32| (x & y).wrapping_add((x ^ y) & z);
    let h = |x: u32, y: u32, z: u32| x ^ y ^ z;
    let (mut a, mut b, mut c, mut d) = (buf[0], buf[1], buf[2], buf[3]);
    macro_rules! round {
        ($f:expr, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $s:expr) => {
            $a = $a.wrapping_add($f($b, $c, $d)).wrapping_add($x);
            $a = $a.rotate_left($s);
        };
    }
    const K2: u32 = 0o13240474631;
    const K3: u32 = 0o15666365641;
    round!(f, a, b, c, d, inp[0], 3);
    round!(f, d, a, b, c, inp[1], 7);
    round!(f, c, d, a, b, inp[2], 11);
    round!(f, b, c, d, a, inp[3], 19);
    round!(f, a, b, c, d, inp[4], 3);
    round!(f, d, a, b, c, inp[5], 7);
    round!(f, c, d, a, b, inp[6], 11);
    round!(f, b, c, d, a, inp[7], 19);
    round!(g, a, b, c, d, inp[1].wrapping_add(K2), 3);
    round!(g, d, a, b, c, inp[3].wrapping_add(K2), 5);
    round!(g, c, d, a, b, inp[5].wrapping_add(K2), 9);
    round!(g, b, c, d, a, inp[7].wrapping_add(K2), 13);
    round!(g, a, b, c, d, inp[0].wrapping_add(K2), 3);
    round!(g, d, a, b, c, inp[2].wrapping_add(K2), 5);
    round!(g, c, d, a, b, inp[4].wrapping_add(K2), 9);
    round!(g, b, c, d, a, inp[6].wrapping_add(K2), 13);
    round!(h, a, b, c, d, inp[3].wrapping_add(K3), 3);
    round!(h, d, a, b, c, inp[7].wrapping_add(K3), 9);
    round!(h, c, d, a, b, inp[2].wrapping_add(K3), 11);
    round!(h, b, c, d, a, inp[6].wrapping_add(K3), 15);
    round!(h, a, b, c, d, inp[1].wrapping_add(K3), 3);
    round!(h, d, a, b, c, inp[5].wrapping_add(K3), 9);
    round!(h, c, d, a, b, inp[0].wrapping_add(K3), 11);
    round!(h, b, c, d, a, inp[4].wrapping_add(K3), 15);
    buf[0] = buf[0].wrapping_add(a);
    buf[1] = buf[1].wrapping_add(b);
    buf[2] = buf[2].wrapping_add(c);
    buf[3] = buf[3].wrapping_add(d);
}

fn tea_transform(buf: &mut [u32; 4], inp: &[u32; 4]) {
    let mut sum = 0u32;
    let (mut b0, mut b1) = (buf[0], buf[1]);
    let (a, b, c, d) = (inp[0], inp[1], inp[2], inp[3]);
    for _ in 0..16 {
        sum = sum.wrapping_add(0x9E37_79B9);
        b0 = b0.wrapping_add((b1 << 4).wrapping_add(a) ^ b1.wrapping_add(sum) ^ (b1 >> 5).wrapping_add(b));
        b1 = b1.wrapping_add((b0 << 4).wrapping_add(c) ^ b0.wrapping_add(sum) ^ (b0 >> 5).wrapping_add(d));
    }
    buf[0] = buf[0].wrapping_add(b0);
    buf[1] = buf[1].wrapping_add(b1);
}

/// The (major) hash of `name` for `version` (0..=5, see the constants), or
/// `None` for a version this crate does not know.
pub fn dx_hash(name: &[u8], version: u8, seed: &[u32; 4]) -> Option<u32> {
    let seed = if seed.iter().all(|&w| w == 0) { &DEFAULT_SEED } else { seed };
    let mut buf = *seed;
    let hash = match version {
        0 | 3 => legacy(name, version == 0),
        1 | 4 => {
            let mut off = 0;
            while off < name.len() {
                let mut inp = [0u32; 8];
                str_to_words(&name[off..], &mut inp, version == 1);
                half_md4_transform(&mut buf, &inp);
                off += 32;
            }
            buf[1]
        }
        2 | 5 => {
            let mut off = 0;
            while off < name.len() {
                let mut inp = [0u32; 4];
                str_to_words(&name[off..], &mut inp, version == 2);
                tea_transform(&mut buf, &inp);
                off += 16;
            }
            buf[0]
        }
        _ => return None,
    };
    let mut hash = hash & !1;
    if hash == EOF_32 << 1 {
        hash = (EOF_32 - 1) << 1;
    }
    Some(hash)
}
