//! Checks `linux_abi::fs` against the Linux headers installed on the
//! build host: `tests/fs_consts.c` prints the constants and struct
//! layouts, compiled with the host C compiler (`$CC`, else `cc`). Skipped,
//! with a note on stderr, when the compiler or headers are missing.

use c_oracle::{c_probe, table, CValues};
use linux_abi::fs::*;

fn c_values() -> Option<CValues> {
    c_probe!("fs_consts.c", "linux/openat2.h")
}

#[test]
fn fs_constants_match_the_headers() {
    let Some(c) = c_values() else { return };
    let table = table![
        XATTR_CREATE,
        XATTR_REPLACE,
        XATTR_NAME_MAX,
        XATTR_SIZE_MAX,
        XATTR_LIST_MAX,
        POSIX_ACL_XATTR_VERSION,
        ACL_USER_OBJ,
        ACL_USER,
        ACL_GROUP_OBJ,
        ACL_GROUP,
        ACL_MASK,
        ACL_OTHER,
        ACL_READ,
        ACL_WRITE,
        ACL_EXECUTE,
        VFS_CAP_REVISION_MASK,
        VFS_CAP_REVISION_2,
        VFS_CAP_REVISION_3,
        VFS_CAP_FLAGS_EFFECTIVE,
        XATTR_CAPS_SZ_2,
        XATTR_CAPS_SZ_3,
        SPLICE_F_MOVE,
        SPLICE_F_NONBLOCK,
        SPLICE_F_MORE,
        SPLICE_F_GIFT,
        FALLOC_FL_KEEP_SIZE,
        FALLOC_FL_PUNCH_HOLE,
        FALLOC_FL_NO_HIDE_STALE,
        FALLOC_FL_COLLAPSE_RANGE,
        FALLOC_FL_ZERO_RANGE,
        FALLOC_FL_INSERT_RANGE,
        FALLOC_FL_UNSHARE_RANGE,
        POSIX_FADV_NORMAL,
        POSIX_FADV_RANDOM,
        POSIX_FADV_SEQUENTIAL,
        POSIX_FADV_WILLNEED,
        POSIX_FADV_DONTNEED,
        POSIX_FADV_NOREUSE,
        RWF_HIPRI,
        RWF_DSYNC,
        RWF_SYNC,
        RWF_NOWAIT,
        RWF_APPEND,
        SYNC_FILE_RANGE_WAIT_BEFORE,
        SYNC_FILE_RANGE_WRITE,
        SYNC_FILE_RANGE_WAIT_AFTER,
        RESOLVE_NO_XDEV,
        RESOLVE_NO_MAGICLINKS,
        RESOLVE_NO_SYMLINKS,
        RESOLVE_BENEATH,
        RESOLVE_IN_ROOT,
        RESOLVE_CACHED,
        ACCT_COMM,
        AFORK,
        ASU,
        ACORE,
        AXSIG,
        AHZ,
    ];
    c.constants(&table, |k| k.starts_with(|ch: char| ch.is_ascii_uppercase()));
    let get = |k: &str| c.get(k) as usize;
    assert_eq!(get("acl_header"), POSIX_ACL_XATTR_HEADER_SIZE);
    assert_eq!(get("acl_entry"), POSIX_ACL_XATTR_ENTRY_SIZE);
    assert_eq!(get("open_how"), OPEN_HOW_SIZE_VER0);
    let mut b = [0u8; OPEN_HOW_SIZE_VER0];
    b[get("open_how.mode")] = 7;
    b[get("open_how.resolve")] = 9;
    assert_eq!(OpenHow::from_bytes(&b), OpenHow { flags: 0, mode: 7, resolve: 9 });
    assert_eq!(get("acct_v3"), ACCT_V3_SIZE);
    let rec = AcctV3 {
        ac_exitcode: 0x0102_0304,
        ac_pid: 0x0506_0708,
        ac_btime: 0x0a0b_0c0d,
        ac_utime: 0x1112,
        ac_comm: [b'x'; ACCT_COMM],
        ..Default::default()
    };
    let bytes = rec.to_bytes();
    let at = |k: &str, v: &[u8]| assert_eq!(&bytes[get(k)..get(k) + v.len()], v, "{k}");
    at("acct_v3.ac_exitcode", &rec.ac_exitcode.to_le_bytes());
    at("acct_v3.ac_pid", &rec.ac_pid.to_le_bytes());
    at("acct_v3.ac_btime", &rec.ac_btime.to_le_bytes());
    at("acct_v3.ac_utime", &rec.ac_utime.to_le_bytes());
    at("acct_v3.ac_comm", &rec.ac_comm);
}
