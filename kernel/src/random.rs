//! Kernel random numbers for getrandom(2), AT_RANDOM and /dev/urandom.
//!
//! A xoshiro256** generator seeded from RDRAND (where the CPU has it) and
//! the TSC, and reseeded from both on every call so that consecutive
//! outputs never come from the generator state alone. Not a vetted CSPRNG;
//! good enough for stack canaries and hash seeds in a test kernel.

use hal::sync::SpinLock;

struct Xoshiro([u64; 4]);

impl Xoshiro {
    fn next(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    fn mix(&mut self, entropy: u64) {
        self.0[0] ^= entropy;
        self.0[3] ^= entropy.rotate_left(31);
        if self.0.iter().all(|&w| w == 0) {
            self.0[0] = 0x9e37_79b9_7f4a_7c15;
        }
        for _ in 0..4 {
            self.next();
        }
    }
}

static STATE: SpinLock<Xoshiro> = SpinLock::new(Xoshiro([
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
]));

pub fn fill(buf: &mut [u8]) {
    let entropy = hal::cpu::rdrand().unwrap_or(0) ^ hal::cpu::rdtsc();
    let mut s = STATE.lock();
    s.mix(entropy);
    for chunk in buf.chunks_mut(8) {
        let v = s.next().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}
