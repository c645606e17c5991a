/*
 * Prints the values of the file-system constants and the layout of the
 * structs that linux-abi's `fs` module describes, as "name value" lines;
 * tests/fs_consts.rs compares them with the crate. Kernel UAPI headers
 * only (they cannot be mixed with libc's in one translation unit).
 */
#include <stddef.h>
#include <stdio.h>
#include <linux/xattr.h>
#include <linux/limits.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/capability.h>
#include <linux/falloc.h>
#include <linux/fadvise.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <linux/acct.h>

/* linux/splice.h is not a UAPI header; the values are part of the ABI. */
#define SPLICE_F_MOVE 0x01
#define SPLICE_F_NONBLOCK 0x02
#define SPLICE_F_MORE 0x04
#define SPLICE_F_GIFT 0x08

#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))

int main(void)
{
    VAL(XATTR_CREATE); VAL(XATTR_REPLACE); VAL(XATTR_NAME_MAX); VAL(XATTR_SIZE_MAX);
    VAL(XATTR_LIST_MAX);
    VAL(POSIX_ACL_XATTR_VERSION);
    VAL(ACL_USER_OBJ); VAL(ACL_USER); VAL(ACL_GROUP_OBJ); VAL(ACL_GROUP); VAL(ACL_MASK);
    VAL(ACL_OTHER); VAL(ACL_READ); VAL(ACL_WRITE); VAL(ACL_EXECUTE);
    SZ("acl_header", struct posix_acl_xattr_header);
    SZ("acl_entry", struct posix_acl_xattr_entry);
    VAL(VFS_CAP_REVISION_MASK); VAL(VFS_CAP_REVISION_2); VAL(VFS_CAP_REVISION_3);
    VAL(VFS_CAP_FLAGS_EFFECTIVE); VAL(XATTR_CAPS_SZ_2); VAL(XATTR_CAPS_SZ_3);
    VAL(SPLICE_F_MOVE); VAL(SPLICE_F_NONBLOCK); VAL(SPLICE_F_MORE); VAL(SPLICE_F_GIFT);
    VAL(FALLOC_FL_KEEP_SIZE); VAL(FALLOC_FL_PUNCH_HOLE); VAL(FALLOC_FL_NO_HIDE_STALE);
    VAL(FALLOC_FL_COLLAPSE_RANGE); VAL(FALLOC_FL_ZERO_RANGE); VAL(FALLOC_FL_INSERT_RANGE);
    VAL(FALLOC_FL_UNSHARE_RANGE);
    VAL(POSIX_FADV_NORMAL); VAL(POSIX_FADV_RANDOM); VAL(POSIX_FADV_SEQUENTIAL);
    VAL(POSIX_FADV_WILLNEED); VAL(POSIX_FADV_DONTNEED); VAL(POSIX_FADV_NOREUSE);
    VAL(RWF_HIPRI); VAL(RWF_DSYNC); VAL(RWF_SYNC); VAL(RWF_NOWAIT); VAL(RWF_APPEND);
    VAL(SYNC_FILE_RANGE_WAIT_BEFORE); VAL(SYNC_FILE_RANGE_WRITE); VAL(SYNC_FILE_RANGE_WAIT_AFTER);
    VAL(RESOLVE_NO_XDEV); VAL(RESOLVE_NO_MAGICLINKS); VAL(RESOLVE_NO_SYMLINKS);
    VAL(RESOLVE_BENEATH); VAL(RESOLVE_IN_ROOT); VAL(RESOLVE_CACHED);
    SZ("open_how", struct open_how);
    OFF("open_how.mode", struct open_how, mode);
    OFF("open_how.resolve", struct open_how, resolve);
    /* ACCT_VERSION is 2 in the UAPI header; a CONFIG_BSD_PROCESS_ACCT_V3
     * kernel (Debian's) writes 3. */
    VAL(ACCT_COMM); VAL(AFORK); VAL(ASU); VAL(ACORE); VAL(AXSIG); VAL(AHZ);
    SZ("acct_v3", struct acct_v3);
    OFF("acct_v3.ac_exitcode", struct acct_v3, ac_exitcode);
    OFF("acct_v3.ac_pid", struct acct_v3, ac_pid);
    OFF("acct_v3.ac_btime", struct acct_v3, ac_btime);
    OFF("acct_v3.ac_utime", struct acct_v3, ac_utime);
    OFF("acct_v3.ac_comm", struct acct_v3, ac_comm);
    return 0;
}
