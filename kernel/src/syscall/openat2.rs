//! openat2 (open with a `struct open_how`: every flag checked, the
//! RESOLVE_* rules for the walk) and file handles (name_to_handle_at,
//! open_by_handle_at).

use linux_abi::capability::CAP_DAC_READ_SEARCH;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::fs as x;

use super::fs_io::{file, finish_open, open_path};
use super::fs_path::{lookup_at, path_arg, path_arg_maybe_empty};
use super::{SysResult, SyscallContext};
use crate::fs::dentry::Lookup;

/// Every flag open(2) knows (VALID_OPEN_FLAGS); openat2 refuses others.
const VALID_OPEN_FLAGS: u64 = 3
    | c::O_CREAT as u64
    | c::O_EXCL as u64
    | c::O_NOCTTY as u64
    | c::O_TRUNC as u64
    | c::O_APPEND as u64
    | c::O_NONBLOCK as u64
    | c::O_DSYNC as u64
    | c::O_ASYNC as u64
    | c::O_DIRECT as u64
    | c::O_LARGEFILE as u64
    | c::O_DIRECTORY as u64
    | c::O_NOFOLLOW as u64
    | c::O_NOATIME as u64
    | c::O_CLOEXEC as u64
    | c::O_PATH as u64
    | c::O_TMPFILE as u64
    | 0o4000000; // __O_SYNC
/// O_TMPFILE without O_DIRECTORY (__O_TMPFILE).
const O_TMPFILE_BIT: u64 = 0o20000000;
/// What O_PATH may be combined with (O_PATH_FLAGS).
const O_PATH_FLAGS: u64 = c::O_DIRECTORY as u64 | c::O_NOFOLLOW as u64 | c::O_PATH as u64 | c::O_CLOEXEC as u64;

/// Reads a `struct open_how` of `size` bytes (`copy_struct_from_user`):
/// smaller than the first version is EINVAL, larger than a page E2BIG,
/// and bytes past what Kiln knows must be zero (E2BIG).
fn read_how(ctx: &SyscallContext, ptr: u64, size: usize) -> Result<x::OpenHow, Errno> {
    if size < x::OPEN_HOW_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    let mut b = [0u8; x::OPEN_HOW_SIZE_VER0];
    ctx.copy_from_user(ptr, &mut b)?;
    if size > x::OPEN_HOW_SIZE_VER0 {
        let mut rest = [0u8; 4096];
        let rest = &mut rest[..size - x::OPEN_HOW_SIZE_VER0];
        ctx.copy_from_user(ptr + x::OPEN_HOW_SIZE_VER0 as u64, rest)?;
        if rest.iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
    }
    Ok(x::OpenHow::from_bytes(&b))
}

/// `build_open_flags`: the flags and mode as open would take them, and
/// the walk's rules.
fn check_how(how: &x::OpenHow) -> Result<(u32, u32, Lookup), Errno> {
    let mut flags = how.flags & !(c::O_CLOEXEC as u64);
    let cloexec = how.flags & c::O_CLOEXEC as u64;
    if flags & !VALID_OPEN_FLAGS != 0 || how.resolve & !x::RESOLVE_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    if how.resolve & x::RESOLVE_BENEATH != 0 && how.resolve & x::RESOLVE_IN_ROOT != 0 {
        return Err(Errno::EINVAL);
    }
    let creates = flags & (c::O_CREAT as u64 | O_TMPFILE_BIT) != 0;
    if creates {
        if how.mode & !0o7777 != 0 {
            return Err(Errno::EINVAL);
        }
    } else if how.mode != 0 {
        return Err(Errno::EINVAL);
    }
    let o_directory = c::O_DIRECTORY as u64;
    if flags & (o_directory | c::O_CREAT as u64) == o_directory | c::O_CREAT as u64 {
        return Err(Errno::EINVAL);
    }
    if flags & O_TMPFILE_BIT != 0 && (flags & o_directory == 0 || flags & 3 == c::O_RDONLY as u64) {
        return Err(Errno::EINVAL);
    }
    if flags & c::O_PATH as u64 != 0 && flags & !O_PATH_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let lookup = Lookup {
        no_xdev: how.resolve & x::RESOLVE_NO_XDEV != 0,
        no_magiclinks: how.resolve & x::RESOLVE_NO_MAGICLINKS != 0,
        no_symlinks: how.resolve & x::RESOLVE_NO_SYMLINKS != 0,
        beneath: how.resolve & x::RESOLVE_BENEATH != 0,
        in_root: how.resolve & x::RESOLVE_IN_ROOT != 0,
        cached: how.resolve & x::RESOLVE_CACHED != 0,
    };
    // Nothing that would write is tried from the cache alone.
    if lookup.cached && flags & (c::O_TRUNC as u64 | c::O_CREAT as u64 | O_TMPFILE_BIT) != 0 {
        return Err(Errno::EAGAIN);
    }
    // O_LARGEFILE is implied on 64-bit, except with O_PATH.
    if flags & c::O_PATH as u64 == 0 {
        flags |= c::O_LARGEFILE as u64;
    }
    Ok(((flags | cloexec) as u32, how.mode as u32, lookup))
}

pub fn sys_openat2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (dirfd, path_ptr, how_ptr, size) = (a[0] as i32, a[1], a[2], a[3] as usize);
    let how = read_how(ctx, how_ptr, size)?;
    let (flags, mode, lookup) = check_how(&how)?;
    let path = path_arg(ctx, path_ptr)?;
    open_path(ctx, dirfd, &path, flags, mode, lookup)
}

pub fn sys_name_to_handle_at(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (dirfd, path_ptr, handle_ptr, mnt_id_ptr, flags) = (a[0] as i32, a[1], a[2], a[3], a[4] as u32);
    if flags & !(c::AT_SYMLINK_FOLLOW | c::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg_maybe_empty(ctx, path_ptr)?;
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, dirfd, &path, flags & c::AT_SYMLINK_FOLLOW != 0, flags & c::AT_EMPTY_PATH != 0)?;
    let (kind, words) = d.inode().file_handle().ok_or(Errno::EOPNOTSUPP)?;
    let mut header = [0u8; x::FILE_HANDLE_HEADER_SIZE];
    ctx.copy_from_user(handle_ptr, &mut header)?;
    let room = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    if room > x::MAX_HANDLE_SZ {
        return Err(Errno::EINVAL);
    }
    let need = words.len() * 4;
    // Too small a buffer is EOVERFLOW, with the size needed (and type
    // 255, FILEID_INVALID) written back.
    let (kind, fits) = if need > room { (255, false) } else { (kind, true) };
    let mut out = [0u8; x::FILE_HANDLE_HEADER_SIZE + 12];
    out[..4].copy_from_slice(&(need as u32).to_le_bytes());
    out[4..8].copy_from_slice(&kind.to_le_bytes());
    for (i, w) in words.iter().enumerate() {
        out[8 + i * 4..12 + i * 4].copy_from_slice(&w.to_le_bytes());
    }
    let mount_id = d.mount().map_or(0, |m| m.id);
    let len = if fits { x::FILE_HANDLE_HEADER_SIZE + need } else { x::FILE_HANDLE_HEADER_SIZE };
    ctx.copy_to_user(mnt_id_ptr, &mount_id.to_le_bytes())?;
    ctx.copy_to_user(handle_ptr, &out[..len])?;
    if fits {
        Ok(0)
    } else {
        Err(Errno::EOVERFLOW)
    }
}

pub fn sys_open_by_handle_at(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (mount_fd, handle_ptr, flags) = (a[0] as i32, a[1], a[2] as u32);
    let cred = ctx.cred();
    // A handle skips every directory's search permission.
    if !cred.capable(CAP_DAC_READ_SEARCH) {
        return Err(Errno::EPERM);
    }
    let mut header = [0u8; x::FILE_HANDLE_HEADER_SIZE];
    ctx.copy_from_user(handle_ptr, &mut header)?;
    let bytes = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let kind = i32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if bytes > x::MAX_HANDLE_SZ || bytes == 0 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; x::MAX_HANDLE_SZ];
    ctx.copy_from_user(handle_ptr + x::FILE_HANDLE_HEADER_SIZE as u64, &mut raw[..bytes])?;
    let mut words = [0u32; x::MAX_HANDLE_SZ / 4];
    for (i, w) in words.iter_mut().take(bytes / 4).enumerate() {
        *w = u32::from_le_bytes([raw[i * 4], raw[i * 4 + 1], raw[i * 4 + 2], raw[i * 4 + 3]]);
    }
    let at = if mount_fd == c::AT_FDCWD {
        ctx.process().cwd.lock().clone()
    } else {
        file(ctx, mount_fd)?.dentry.clone().ok_or(Errno::ESTALE)?
    };
    let mount_root = at.fs_root();
    let inode = crate::fs::fhandle::decode(&mount_root, kind, &words[..bytes / 4])?;
    let d = crate::fs::fhandle::dentry_for(&mount_root, &inode);
    finish_open(ctx, &cred, d, flags | c::O_LARGEFILE, false)
}
