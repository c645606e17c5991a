//! File-system call constants and formats beyond open/stat: extended
//! attributes and the POSIX ACL and file-capability values stored in
//! them, splice and its relatives, fallocate, fadvise, the RWF_* flags
//! of preadv2/pwritev2, sync_file_range, openat2's `struct open_how` and
//! RESOLVE_* flags, file handles, and the BSD process-accounting record
//! (`struct acct_v3`). Values are from the kernel's UAPI headers
//! (`linux/xattr.h`, `linux/posix_acl_xattr.h`, `linux/capability.h`,
//! `linux/splice.h`, `linux/falloc.h`, `linux/fadvise.h`, `linux/fs.h`,
//! `linux/openat2.h`, `linux/acct.h`); `tests/fs_consts.rs` checks them
//! against the headers installed on the build host.

// ---- extended attributes ----
pub const XATTR_CREATE: u32 = 0x1;
pub const XATTR_REPLACE: u32 = 0x2;
/// Longest attribute name (a longer one gives ERANGE).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest attribute value (E2BIG above it).
pub const XATTR_SIZE_MAX: usize = 65536;
/// Largest name list listxattr returns.
pub const XATTR_LIST_MAX: usize = 65536;
pub const XATTR_SECURITY_PREFIX: &str = "security.";
pub const XATTR_SYSTEM_PREFIX: &str = "system.";
pub const XATTR_TRUSTED_PREFIX: &str = "trusted.";
pub const XATTR_USER_PREFIX: &str = "user.";
pub const XATTR_NAME_CAPS: &str = "security.capability";
pub const XATTR_NAME_POSIX_ACL_ACCESS: &str = "system.posix_acl_access";
pub const XATTR_NAME_POSIX_ACL_DEFAULT: &str = "system.posix_acl_default";

// ---- POSIX ACLs in their xattr form: a header, then 8-byte entries ----
pub const POSIX_ACL_XATTR_VERSION: u32 = 0x0002;
pub const POSIX_ACL_XATTR_HEADER_SIZE: usize = 4;
pub const POSIX_ACL_XATTR_ENTRY_SIZE: usize = 8;
pub const ACL_USER_OBJ: u16 = 0x01;
pub const ACL_USER: u16 = 0x02;
pub const ACL_GROUP_OBJ: u16 = 0x04;
pub const ACL_GROUP: u16 = 0x08;
pub const ACL_MASK: u16 = 0x10;
pub const ACL_OTHER: u16 = 0x20;
pub const ACL_READ: u16 = 0x04;
pub const ACL_WRITE: u16 = 0x02;
pub const ACL_EXECUTE: u16 = 0x01;
/// The id of entries that name no user or group.
pub const ACL_UNDEFINED_ID: u32 = u32::MAX;

// ---- file capabilities (security.capability) ----
pub const VFS_CAP_REVISION_MASK: u32 = 0xFF00_0000;
pub const VFS_CAP_REVISION_2: u32 = 0x0200_0000;
pub const VFS_CAP_REVISION_3: u32 = 0x0300_0000;
pub const VFS_CAP_FLAGS_EFFECTIVE: u32 = 0x0000_0001;
pub const XATTR_CAPS_SZ_2: usize = 20;
pub const XATTR_CAPS_SZ_3: usize = 24;

// ---- splice, tee, vmsplice ----
pub const SPLICE_F_MOVE: u32 = 0x01;
pub const SPLICE_F_NONBLOCK: u32 = 0x02;
pub const SPLICE_F_MORE: u32 = 0x04;
pub const SPLICE_F_GIFT: u32 = 0x08;
pub const SPLICE_F_ALL: u32 = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

// ---- fallocate (the mode bits are `ipc`'s, where memfd brought them) ----
pub use crate::ipc::{
    FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE, FALLOC_FL_NO_HIDE_STALE,
    FALLOC_FL_PUNCH_HOLE, FALLOC_FL_UNSHARE_RANGE, FALLOC_FL_ZERO_RANGE,
};
/// Every mode bit Linux 6.1 knows (`FALLOC_FL_SUPPORTED_MASK`).
pub const FALLOC_FL_SUPPORTED_MASK: u32 = FALLOC_FL_KEEP_SIZE
    | FALLOC_FL_PUNCH_HOLE
    | FALLOC_FL_NO_HIDE_STALE
    | FALLOC_FL_COLLAPSE_RANGE
    | FALLOC_FL_ZERO_RANGE
    | FALLOC_FL_INSERT_RANGE
    | FALLOC_FL_UNSHARE_RANGE;

// ---- fadvise64 ----
pub const POSIX_FADV_NORMAL: u32 = 0;
pub const POSIX_FADV_RANDOM: u32 = 1;
pub const POSIX_FADV_SEQUENTIAL: u32 = 2;
pub const POSIX_FADV_WILLNEED: u32 = 3;
pub const POSIX_FADV_DONTNEED: u32 = 4;
pub const POSIX_FADV_NOREUSE: u32 = 5;

// ---- preadv2 / pwritev2 ----
pub const RWF_HIPRI: u32 = 0x01;
pub const RWF_DSYNC: u32 = 0x02;
pub const RWF_SYNC: u32 = 0x04;
pub const RWF_NOWAIT: u32 = 0x08;
pub const RWF_APPEND: u32 = 0x10;
/// The flags Linux 6.1 accepts (`RWF_SUPPORTED`); others are EOPNOTSUPP.
pub const RWF_SUPPORTED: u32 = RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND;

// ---- sync_file_range ----
pub const SYNC_FILE_RANGE_WAIT_BEFORE: u32 = 1;
pub const SYNC_FILE_RANGE_WRITE: u32 = 2;
pub const SYNC_FILE_RANGE_WAIT_AFTER: u32 = 4;

// ---- openat2 ----
pub const RESOLVE_NO_XDEV: u64 = 0x01;
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub const RESOLVE_BENEATH: u64 = 0x08;
pub const RESOLVE_IN_ROOT: u64 = 0x10;
pub const RESOLVE_CACHED: u64 = 0x20;
pub const RESOLVE_ALL: u64 =
    RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_IN_ROOT | RESOLVE_CACHED;
/// `struct open_how { u64 flags, mode, resolve; }`, the first (and so far
/// only) version; openat2 rejects a smaller size.
pub const OPEN_HOW_SIZE_VER0: usize = 24;

/// openat2's argument, read from user memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenHow {
    pub flags: u64,
    pub mode: u64,
    pub resolve: u64,
}

impl OpenHow {
    pub fn from_bytes(b: &[u8; OPEN_HOW_SIZE_VER0]) -> OpenHow {
        let word = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        OpenHow { flags: word(0), mode: word(1), resolve: word(2) }
    }
}

// ---- name_to_handle_at / open_by_handle_at ----
/// Largest `handle_bytes` (EINVAL above it).
pub const MAX_HANDLE_SZ: usize = 128;
/// `struct file_handle { u32 handle_bytes; i32 handle_type; u8 f_handle[]; }`.
pub const FILE_HANDLE_HEADER_SIZE: usize = 8;

// ---- sysfs(2) ----
pub const SYSFS_FSTYPE_INDEX: u32 = 1;
pub const SYSFS_FSTYPE_NAME: u32 = 2;
pub const SYSFS_FSTYPE_COUNT: u32 = 3;

// ---- BSD process accounting (acct(2)), version 3 records ----
pub const ACCT_VERSION: u8 = 3;
pub const ACCT_COMM: usize = 16;
/// ac_flag: forked but never exec'd.
pub const AFORK: u8 = 0x01;
/// ac_flag: used super-user privileges.
pub const ASU: u8 = 0x02;
/// ac_flag: dumped core.
pub const ACORE: u8 = 0x08;
/// ac_flag: killed by a signal.
pub const AXSIG: u8 = 0x10;
/// The tick rate of the times in a record (AHZ).
pub const AHZ: u64 = 100;
pub const ACCT_V3_SIZE: usize = 64;

/// `struct acct_v3`, as a process's exit appends it to the accounting
/// file. Times are in AHZ ticks; `comp_t` fields are encoded by
/// [`encode_comp_t`], `ac_etime` by [`encode_float`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcctV3 {
    pub ac_flag: u8,
    pub ac_tty: u16,
    pub ac_exitcode: u32,
    pub ac_uid: u32,
    pub ac_gid: u32,
    pub ac_pid: u32,
    pub ac_ppid: u32,
    /// Creation time, seconds since the epoch.
    pub ac_btime: u32,
    /// Elapsed time as the bits of an IEEE single (the kernel's encode_float).
    pub ac_etime: u32,
    pub ac_utime: u16,
    pub ac_stime: u16,
    pub ac_mem: u16,
    pub ac_io: u16,
    pub ac_rw: u16,
    pub ac_minflt: u16,
    pub ac_majflt: u16,
    pub ac_swaps: u16,
    pub ac_comm: [u8; ACCT_COMM],
}

impl AcctV3 {
    pub fn to_bytes(&self) -> [u8; ACCT_V3_SIZE] {
        let mut b = [0u8; ACCT_V3_SIZE];
        b[0] = self.ac_flag;
        b[1] = ACCT_VERSION;
        b[2..4].copy_from_slice(&self.ac_tty.to_le_bytes());
        let words =
            [self.ac_exitcode, self.ac_uid, self.ac_gid, self.ac_pid, self.ac_ppid, self.ac_btime, self.ac_etime];
        for (i, w) in words.iter().enumerate() {
            b[4 + i * 4..8 + i * 4].copy_from_slice(&w.to_le_bytes());
        }
        let comps = [
            self.ac_utime,
            self.ac_stime,
            self.ac_mem,
            self.ac_io,
            self.ac_rw,
            self.ac_minflt,
            self.ac_majflt,
            self.ac_swaps,
        ];
        for (i, c) in comps.iter().enumerate() {
            b[32 + i * 2..34 + i * 2].copy_from_slice(&c.to_le_bytes());
        }
        b[48..64].copy_from_slice(&self.ac_comm);
        b
    }
}

/// The kernel's `encode_comp_t`: a 13-bit mantissa and a 3-bit base-8
/// exponent; values too large for it saturate.
pub fn encode_comp_t(value: u64) -> u16 {
    const MANTSIZE: u32 = 13;
    const EXPSIZE: u32 = 3;
    const MAXFRACT: u64 = (1 << MANTSIZE) - 1;
    let mut value = value;
    let mut exp: u64 = 0;
    let mut rnd = false;
    while value > MAXFRACT {
        rnd = value & (1 << (EXPSIZE - 1)) != 0;
        value >>= EXPSIZE;
        exp += 1;
    }
    // Round up when the last shifted-out digit is at least half.
    if rnd {
        value += 1;
        if value > MAXFRACT {
            value >>= EXPSIZE;
            exp += 1;
        }
    }
    if exp >= 1 << EXPSIZE {
        return 0xffff;
    }
    ((exp << MANTSIZE) | value) as u16
}

/// The kernel's `encode_float`: `value` as an IEEE-754 single, built from
/// integers (the kernel has no floating point).
pub fn encode_float(value: u64) -> u32 {
    if value == 0 {
        return 0;
    }
    let mut value = value;
    let mut exp: u32 = 190;
    while value & (1 << 63) == 0 {
        value <<= 1;
        exp -= 1;
    }
    (exp << 23) | ((value >> 40) as u32 & 0x7f_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comp_t_matches_the_kernel_encoding() {
        assert_eq!(encode_comp_t(0), 0);
        assert_eq!(encode_comp_t(8191), 8191);
        // 8192 = 1024 * 8: one shift, mantissa 1024.
        assert_eq!(encode_comp_t(8192), (1 << 13) | 1024);
        // Rounds up when the dropped digit is >= 4.
        assert_eq!(encode_comp_t(8196), (1 << 13) | 1025);
        assert_eq!(encode_comp_t(u64::MAX), 0xffff);
    }

    #[test]
    fn float_is_ieee_single() {
        for v in [1u64, 2, 3, 100, 12345, 1 << 40] {
            assert_eq!(f32::from_bits(encode_float(v)), v as f32, "{v}");
        }
        assert_eq!(encode_float(0), 0);
    }

    #[test]
    fn acct_record_layout() {
        let r = AcctV3 {
            ac_flag: AFORK,
            ac_exitcode: 7,
            ac_pid: 42,
            ac_comm: *b"sh\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            ..Default::default()
        };
        let b = r.to_bytes();
        assert_eq!(b[0], AFORK);
        assert_eq!(b[1], 3);
        assert_eq!(&b[4..8], &7u32.to_le_bytes());
        assert_eq!(&b[16..20], &42u32.to_le_bytes());
        assert_eq!(&b[48..50], b"sh");
    }

    #[test]
    fn open_how_reads_three_words() {
        let mut b = [0u8; OPEN_HOW_SIZE_VER0];
        b[0] = 1;
        b[8] = 2;
        b[16] = 3;
        assert_eq!(OpenHow::from_bytes(&b), OpenHow { flags: 1, mode: 2, resolve: 3 });
    }
}
