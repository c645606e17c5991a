//! acct(2): BSD process accounting on (a file) or off (NULL), with
//! CAP_SYS_PACCT. The file is opened for appending as its caller could
//! open it; it must be a regular file (EACCES). The records are
//! `proc::acct`'s.

use alloc::sync::Arc;

use linux_abi::capability::CAP_SYS_PACCT;
use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::fs_path::{lookup_at, path_arg};
use super::{SysResult, SyscallContext};
use crate::cred::MAY_WRITE;
use crate::fs::file::{FileOps, InodeFile};
use crate::fs::inode::FileType;
use crate::fs::{perm, OpenFile};

pub fn sys_acct(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let cred = ctx.cred();
    if !cred.capable(CAP_SYS_PACCT) {
        return Err(Errno::EPERM);
    }
    if a[0] == 0 {
        crate::proc::acct::set(None);
        return Ok(0);
    }
    let path = path_arg(ctx, a[0])?;
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &path, true, false)?;
    let flags = c::O_WRONLY | c::O_APPEND | c::O_LARGEFILE;
    perm::may_open(&cred, &d, MAY_WRITE, flags)?;
    if d.inode().file_type() != FileType::Regular {
        return Err(Errno::EACCES);
    }
    let inode = d.inode().clone();
    let ops: Arc<dyn FileOps> = match inode.open(flags) {
        Some(r) => r?,
        None => Arc::new(InodeFile::for_writing(inode)?),
    };
    let file = Arc::try_new(OpenFile::with_dentry(ops, flags, d)).map_err(|_| Errno::ENOMEM)?;
    crate::proc::acct::set(Some(file));
    Ok(0)
}
