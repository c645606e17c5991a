//! Restartable sequences (`rseq(2)`): the per-thread area a thread
//! registers and the critical-section descriptors it points at, with the
//! flags and constants of `<linux/rseq.h>`.
//!
//! The area is 32 bytes, 32-byte aligned, and Linux 6.1 accepts no other
//! length. `node_id` and `mm_cid` (Linux 6.3) sit in what the 6.1 header
//! calls padding: the original 32 bytes, so a 6.1-sized registration sees
//! them too (the kernel has written them there since 6.3).

use crate::layout::{get_u32, get_u64, put_u32, put_u64};

/// `rseq(..., flags)`: unregister the area instead.
pub const RSEQ_FLAG_UNREGISTER: i32 = 1;
/// `cpu_id` before registration, and again after unregistration.
pub const RSEQ_CPU_ID_UNINITIALIZED: i32 = -1;
/// `cpu_id` a library stores when its registration failed.
pub const RSEQ_CPU_ID_REGISTRATION_FAILED: i32 = -2;
/// The deprecated `RSEQ_CS_FLAG_NO_RESTART_ON_*` bits (preempt, signal,
/// migrate): Linux refuses a critical section that sets any flag.
pub const RSEQ_CS_FLAG_NO_RESTART_ON_PREEMPT: u32 = 1;
pub const RSEQ_CS_FLAG_NO_RESTART_ON_SIGNAL: u32 = 2;
pub const RSEQ_CS_FLAG_NO_RESTART_ON_MIGRATE: u32 = 4;

/// `struct rseq`, the area a thread registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rseq {
    pub cpu_id_start: u32,
    pub cpu_id: u32,
    /// User address of the current critical section's `RseqCs` (0: none).
    pub rseq_cs: u64,
    pub flags: u32,
    pub node_id: u32,
    pub mm_cid: u32,
}

impl Rseq {
    /// The size (and alignment) Linux 6.1 accepts.
    pub const SIZE: usize = 32;
    pub const ALIGN: u64 = 32;
    pub const CPU_ID_START: usize = 0;
    pub const CPU_ID: usize = 4;
    pub const RSEQ_CS: usize = 8;
    pub const FLAGS: usize = 16;
    pub const NODE_ID: usize = 20;
    pub const MM_CID: usize = 24;

    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put_u32(&mut b, Self::CPU_ID_START, self.cpu_id_start);
        put_u32(&mut b, Self::CPU_ID, self.cpu_id);
        put_u64(&mut b, Self::RSEQ_CS, self.rseq_cs);
        put_u32(&mut b, Self::FLAGS, self.flags);
        put_u32(&mut b, Self::NODE_ID, self.node_id);
        put_u32(&mut b, Self::MM_CID, self.mm_cid);
        b
    }

    pub fn from_bytes(b: &[u8; 32]) -> Self {
        Rseq {
            cpu_id_start: get_u32(b, Self::CPU_ID_START),
            cpu_id: get_u32(b, Self::CPU_ID),
            rseq_cs: get_u64(b, Self::RSEQ_CS),
            flags: get_u32(b, Self::FLAGS),
            node_id: get_u32(b, Self::NODE_ID),
            mm_cid: get_u32(b, Self::MM_CID),
        }
    }
}

/// `struct rseq_cs`: a critical section `[start_ip, start_ip +
/// post_commit_offset)` and where to go when it is aborted. The four
/// bytes before `abort_ip` must hold the signature given at registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RseqCs {
    pub version: u32,
    pub flags: u32,
    pub start_ip: u64,
    pub post_commit_offset: u64,
    pub abort_ip: u64,
}

impl RseqCs {
    pub const SIZE: usize = 32;

    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put_u32(&mut b, 0, self.version);
        put_u32(&mut b, 4, self.flags);
        put_u64(&mut b, 8, self.start_ip);
        put_u64(&mut b, 16, self.post_commit_offset);
        put_u64(&mut b, 24, self.abort_ip);
        b
    }

    pub fn from_bytes(b: &[u8; 32]) -> Self {
        RseqCs {
            version: get_u32(b, 0),
            flags: get_u32(b, 4),
            start_ip: get_u64(b, 8),
            post_commit_offset: get_u64(b, 16),
            abort_ip: get_u64(b, 24),
        }
    }

    /// Whether `ip` is inside the critical section (`in_rseq_cs`: the
    /// commit instruction's end is outside, the start inside).
    pub fn contains(&self, ip: u64) -> bool {
        ip.wrapping_sub(self.start_ip) < self.post_commit_offset
    }

    /// The checks Linux makes on a descriptor before using it
    /// (`rseq_get_rseq_cs`), given the end of the user half: version 0,
    /// every address below it, no wrap-around, and the abort address
    /// outside the section. The signature is checked by the caller,
    /// which must read user memory for it.
    pub fn is_valid(&self, user_end: u64) -> bool {
        let end = self.start_ip.checked_add(self.post_commit_offset);
        self.version == 0
            && self.start_ip < user_end
            && end.is_some_and(|e| e < user_end)
            && self.abort_ip < user_end
            && self.abort_ip.wrapping_sub(self.start_ip) >= self.post_commit_offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let r = Rseq { cpu_id_start: 1, cpu_id: 2, rseq_cs: 3, flags: 4, node_id: 5, mm_cid: 6 };
        assert_eq!(Rseq::from_bytes(&r.to_bytes()), r);
        let c = RseqCs { version: 0, flags: 1, start_ip: 2, post_commit_offset: 3, abort_ip: 4 };
        assert_eq!(RseqCs::from_bytes(&c.to_bytes()), c);
    }

    #[test]
    fn section_bounds() {
        let c = RseqCs { start_ip: 0x1000, post_commit_offset: 0x10, abort_ip: 0x2000, ..RseqCs::default() };
        assert!(!c.contains(0xfff));
        assert!(c.contains(0x1000));
        assert!(c.contains(0x100f));
        assert!(!c.contains(0x1010));
        assert!(c.is_valid(0x8000_0000_0000));
        // The abort address may not lie inside the section.
        assert!(!RseqCs { abort_ip: 0x1008, ..c }.is_valid(0x8000_0000_0000));
        // It may be the first byte after it.
        assert!(RseqCs { abort_ip: 0x1010, ..c }.is_valid(0x8000_0000_0000));
        assert!(!RseqCs { version: 1, ..c }.is_valid(0x8000_0000_0000));
        assert!(!RseqCs { post_commit_offset: u64::MAX, ..c }.is_valid(0x8000_0000_0000));
        assert!(!RseqCs { start_ip: 0x8000_0000_0000, ..c }.is_valid(0x8000_0000_0000));
        assert!(!RseqCs { abort_ip: 0x8000_0000_0000, ..c }.is_valid(0x8000_0000_0000));
    }
}
