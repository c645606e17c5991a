//! Extended-attribute calls: setxattr, getxattr, listxattr and
//! removexattr, each by path, by path without following a last symlink
//! (l*) and by descriptor (f*). The arguments are checked in Linux 6.x's
//! order: the flags, the name (ERANGE when empty or longer than 255
//! bytes) and the value's size (E2BIG) before the path is walked; a
//! read-only mount answers EROFS to changes; descriptors opened with
//! O_PATH are EBADF. The rules of the namespaces and ACLs are
//! `fs::xattr`'s.

use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::fs as x;

use super::fs_io::file;
use super::fs_path::{file_metadata, lookup_at, path_arg};
use super::{SysResult, SyscallContext};
use crate::fs::dentry::{check_writable, Dentry};
use crate::fs::xattr::{self, Target};
use alloc::sync::Arc;

/// Reads an attribute name as `strncpy_from_user` into a 256-byte
/// buffer does: empty or unterminated within 256 bytes is ERANGE, a
/// fault before the end EFAULT.
fn name_arg(ctx: &SyscallContext, ptr: u64) -> Result<Vec<u8>, Errno> {
    let limit = x::XATTR_NAME_MAX + 1;
    let mut buf = [0u8; x::XATTR_NAME_MAX + 1];
    let mut got = 0usize;
    while got < limit {
        let addr = ptr.checked_add(got as u64).ok_or(Errno::EFAULT)?;
        let chunk = ((4096 - addr % 4096) as usize).min(limit - got);
        ctx.copy_from_user(addr, &mut buf[got..got + chunk])?;
        if let Some(nul) = buf[got..got + chunk].iter().position(|&b| b == 0) {
            let len = got + nul;
            if len == 0 {
                return Err(Errno::ERANGE);
            }
            let mut name = Vec::new();
            name.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
            name.extend_from_slice(&buf[..len]);
            return Ok(name);
        }
        got += chunk;
    }
    Err(Errno::ERANGE)
}

fn zeroed(len: usize) -> Result<Vec<u8>, Errno> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    v.resize(len, 0);
    Ok(v)
}

/// What a call acts on: the dentry it found (for the mount's read-only
/// flag), or an open file without one.
enum On {
    Path(Arc<Dentry>),
    File(Arc<crate::fs::OpenFile>),
}

impl On {
    fn target(&self) -> Target<'_> {
        match self {
            On::Path(d) => Target { inode: Some(d.inode().as_ref()), meta: d.inode().metadata() },
            On::File(f) => match (&f.dentry, f.ops.inode()) {
                (Some(d), _) => Target { inode: Some(d.inode().as_ref()), meta: d.inode().metadata() },
                (None, Some(i)) => Target { inode: Some(i.as_ref()), meta: i.metadata() },
                (None, None) => Target { inode: None, meta: file_metadata(f) },
            },
        }
    }

    /// An attribute changed: inotify's IN_ATTRIB (Linux's fsnotify_xattr).
    fn attribute_changed(&self) {
        let d = match self {
            On::Path(d) => Some(d),
            On::File(f) => f.dentry.as_ref(),
        };
        if let Some(d) = d {
            crate::fs::notify::changed(d, c::IN_ATTRIB);
        }
    }

    /// `mnt_want_write`: EROFS on a read-only mount.
    fn writable(&self) -> Result<(), Errno> {
        match self {
            On::Path(d) => check_writable(d),
            On::File(f) => f.dentry.as_ref().map_or(Ok(()), check_writable),
        }
    }
}

/// Where the path or descriptor argument (`a[0]`) leads.
fn target_of(ctx: &SyscallContext, a0: u64, how: How) -> Result<On, Errno> {
    match how {
        How::Fd => {
            let f = file(ctx, a0 as i32)?;
            if f.is_path_only() {
                return Err(Errno::EBADF);
            }
            Ok(On::File(f))
        }
        How::Path { follow } => {
            let path = path_arg(ctx, a0)?;
            Ok(On::Path(lookup_at(ctx, &ctx.cred(), c::AT_FDCWD, &path, follow, false)?))
        }
    }
}

#[derive(Clone, Copy)]
enum How {
    Path { follow: bool },
    Fd,
}

const FOLLOW: How = How::Path { follow: true };
const NOFOLLOW: How = How::Path { follow: false };

fn set_common(ctx: &SyscallContext, a: &[u64; 6], how: How) -> SysResult {
    let (name_ptr, value_ptr, size, flags) = (a[1], a[2], a[3] as usize, a[4] as u32);
    if flags & !(x::XATTR_CREATE | x::XATTR_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = name_arg(ctx, name_ptr)?;
    if size > x::XATTR_SIZE_MAX {
        return Err(Errno::E2BIG);
    }
    let mut value = zeroed(size)?;
    if size > 0 {
        ctx.copy_from_user(value_ptr, &mut value)?;
    }
    let on = target_of(ctx, a[0], how)?;
    on.writable()?;
    xattr::set(&ctx.cred(), &on.target(), &name, &value, flags)?;
    on.attribute_changed();
    Ok(0)
}

fn get_common(ctx: &SyscallContext, a: &[u64; 6], how: How) -> SysResult {
    let (name_ptr, value_ptr, size) = (a[1], a[2], a[3] as usize);
    let name = name_arg(ctx, name_ptr)?;
    let on = target_of(ctx, a[0], how)?;
    let mut buf = zeroed(size.min(x::XATTR_SIZE_MAX))?;
    let n = match xattr::get(&ctx.cred(), &on.target(), &name, &mut buf) {
        // A value larger than any buffer can be is E2BIG (none is kept).
        Err(Errno::ERANGE) if size >= x::XATTR_SIZE_MAX => return Err(Errno::E2BIG),
        r => r?,
    };
    if size > 0 && n > 0 {
        ctx.copy_to_user(value_ptr, &buf[..n])?;
    }
    Ok(n as u64)
}

fn list_common(ctx: &SyscallContext, a: &[u64; 6], how: How) -> SysResult {
    let (list_ptr, size) = (a[1], a[2] as usize);
    let on = target_of(ctx, a[0], how)?;
    let mut buf = zeroed(size.min(x::XATTR_LIST_MAX))?;
    let n = match xattr::list(&ctx.cred(), &on.target(), &mut buf) {
        // A list longer than any buffer can take.
        Err(Errno::ERANGE) if size >= x::XATTR_LIST_MAX => return Err(Errno::E2BIG),
        r => r?,
    };
    if size > 0 && n > 0 {
        ctx.copy_to_user(list_ptr, &buf[..n])?;
    }
    Ok(n as u64)
}

fn remove_common(ctx: &SyscallContext, a: &[u64; 6], how: How) -> SysResult {
    let name = name_arg(ctx, a[1])?;
    let on = target_of(ctx, a[0], how)?;
    on.writable()?;
    xattr::remove(&ctx.cred(), &on.target(), &name)?;
    on.attribute_changed();
    Ok(0)
}

pub fn sys_setxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    set_common(ctx, a, FOLLOW)
}

pub fn sys_lsetxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    set_common(ctx, a, NOFOLLOW)
}

pub fn sys_fsetxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    set_common(ctx, a, How::Fd)
}

pub fn sys_getxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    get_common(ctx, a, FOLLOW)
}

pub fn sys_lgetxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    get_common(ctx, a, NOFOLLOW)
}

pub fn sys_fgetxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    get_common(ctx, a, How::Fd)
}

pub fn sys_listxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    list_common(ctx, a, FOLLOW)
}

pub fn sys_llistxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    list_common(ctx, a, NOFOLLOW)
}

pub fn sys_flistxattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    list_common(ctx, a, How::Fd)
}

pub fn sys_removexattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    remove_common(ctx, a, FOLLOW)
}

pub fn sys_lremovexattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    remove_common(ctx, a, NOFOLLOW)
}

pub fn sys_fremovexattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    remove_common(ctx, a, How::Fd)
}
