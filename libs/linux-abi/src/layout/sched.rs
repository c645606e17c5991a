//! Scheduling structs: `struct sched_param` and `struct sched_attr`
//! (sched_setattr/sched_getattr, with its versioned sizes).

use super::{get_i32, get_u32, get_u64, put_i32, put_u32, put_u64};

/// `struct sched_param`: one `int` priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedParam {
    pub sched_priority: i32,
}

impl SchedParam {
    pub const SIZE: usize = 4;
    pub fn to_bytes(&self) -> [u8; 4] {
        self.sched_priority.to_le_bytes()
    }
    pub fn from_bytes(b: &[u8; 4]) -> Self {
        SchedParam { sched_priority: i32::from_le_bytes(*b) }
    }
}

/// `struct sched_attr`. `size` says which version user space knows:
/// 48 bytes (`SCHED_ATTR_SIZE_VER0`, up to `sched_period`) or 56
/// (`SCHED_ATTR_SIZE_VER1`, with the utilization clamps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    pub size: u32,
    pub sched_policy: u32,
    pub sched_flags: u64,
    pub sched_nice: i32,
    pub sched_priority: u32,
    pub sched_runtime: u64,
    pub sched_deadline: u64,
    pub sched_period: u64,
    pub sched_util_min: u32,
    pub sched_util_max: u32,
}

impl SchedAttr {
    pub const SIZE: usize = 56;
    pub const SIZE_VER0: usize = 48;
    pub const SIZE_VER1: usize = 56;

    pub fn to_bytes(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        put_u32(&mut b, 0, self.size);
        put_u32(&mut b, 4, self.sched_policy);
        put_u64(&mut b, 8, self.sched_flags);
        put_i32(&mut b, 16, self.sched_nice);
        put_u32(&mut b, 20, self.sched_priority);
        put_u64(&mut b, 24, self.sched_runtime);
        put_u64(&mut b, 32, self.sched_deadline);
        put_u64(&mut b, 40, self.sched_period);
        put_u32(&mut b, 48, self.sched_util_min);
        put_u32(&mut b, 52, self.sched_util_max);
        b
    }

    pub fn from_bytes(b: &[u8; 56]) -> Self {
        SchedAttr {
            size: get_u32(b, 0),
            sched_policy: get_u32(b, 4),
            sched_flags: get_u64(b, 8),
            sched_nice: get_i32(b, 16),
            sched_priority: get_u32(b, 20),
            sched_runtime: get_u64(b, 24),
            sched_deadline: get_u64(b, 32),
            sched_period: get_u64(b, 40),
            sched_util_min: get_u32(b, 48),
            sched_util_max: get_u32(b, 52),
        }
    }

    /// Decodes the first `b.len()` bytes user space gave (its `size`),
    /// Linux's `copy_struct_from_user`: fields past a short struct are
    /// zero; a longer one is accepted only if its extra bytes are all
    /// zero (`None`: the kernel answers E2BIG).
    pub fn from_user(b: &[u8]) -> Option<Self> {
        let (known, extra) = b.split_at(b.len().min(Self::SIZE));
        if extra.iter().any(|&x| x != 0) {
            return None;
        }
        let mut a = [0u8; 56];
        a[..known.len()].copy_from_slice(known);
        Some(SchedAttr::from_bytes(&a))
    }
}
