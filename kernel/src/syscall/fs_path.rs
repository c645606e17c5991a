//! Path calls: path arguments and lookup for the *at calls, stat and
//! statx, getdents64, readlink, statfs, the working directory. (The
//! namespace calls are in `fs_name`, attributes in `fs_attr`, mounts and
//! the root directory in `fs_mount`.)

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Stat, Statfs, Statx, StatxTimestamp, Timespec};

use super::fs_io::file;
use super::{SysResult, SyscallContext};

use crate::cred::{Cred, MAY_EXEC};
use crate::fs::dentry::{resolve, Dentry};
use crate::fs::inode::{FileType, Metadata};
use crate::fs::{notify, perm};
use crate::mm::uaccess;

pub fn path_arg(ctx: &SyscallContext, ptr: u64) -> Result<String, Errno> {
    let p = uaccess::read_cstring(&ctx.vm()?, ptr, crate::fs::dentry::PATH_MAX)?;
    if p.is_empty() {
        return Err(Errno::ENOENT);
    }
    Ok(p)
}

/// Like `path_arg`, but an empty path is allowed (AT_EMPTY_PATH).
pub(super) fn path_arg_maybe_empty(ctx: &SyscallContext, ptr: u64) -> Result<String, Errno> {
    uaccess::read_cstring(&ctx.vm()?, ptr, crate::fs::dentry::PATH_MAX)
}

/// The directory a relative path starts from: the cwd or `dirfd`'s.
pub fn start_dir(ctx: &SyscallContext, dirfd: i32) -> Result<Arc<Dentry>, Errno> {
    if dirfd == c::AT_FDCWD {
        return Ok(ctx.process().cwd.lock().clone());
    }
    let f = file(ctx, dirfd)?;
    let d = f.dentry.clone().ok_or(Errno::ENOTDIR)?;
    if !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(d)
}

/// Resolves (dirfd, path, flags) the way the *at calls do, as `cred`.
pub(super) fn lookup_at(
    ctx: &SyscallContext,
    cred: &Cred,
    dirfd: i32,
    path: &str,
    follow: bool,
    empty_ok: bool,
) -> Result<Arc<Dentry>, Errno> {
    if path.is_empty() {
        if !empty_ok {
            return Err(Errno::ENOENT);
        }
        if dirfd == c::AT_FDCWD {
            return Ok(ctx.process().cwd.lock().clone());
        }
        return file(ctx, dirfd)?.dentry.clone().ok_or(Errno::EBADF);
    }
    if path.starts_with('/') {
        return resolve(cred, &crate::fs::dentry::root(), path, follow);
    }
    let start = start_dir(ctx, dirfd)?;
    resolve(cred, &start, path, follow)
}

fn ts(ns: u64) -> Timespec {
    Timespec::from_nanos(ns)
}

fn to_stat(m: &Metadata) -> Stat {
    Stat {
        st_dev: m.dev,
        st_ino: m.ino,
        st_nlink: m.nlink,
        st_mode: m.mode,
        st_uid: m.uid,
        st_gid: m.gid,
        st_rdev: m.rdev,
        st_size: m.size as i64,
        st_blksize: 4096,
        st_blocks: m.blocks as i64,
        st_atime: ts(m.atime),
        st_mtime: ts(m.mtime),
        st_ctime: ts(m.ctime),
    }
}

/// Metadata of an open file: its inode's, or synthesized for pipes and
/// devices without one.
pub fn file_metadata(f: &crate::fs::OpenFile) -> Metadata {
    match f.ops.inode() {
        Some(i) => i.metadata(),
        None => Metadata {
            dev: 0xc,
            ino: f.ops.ino().unwrap_or((Arc::as_ptr(&f.ops) as *const () as usize as u64) >> 4),
            mode: f.ops.mode(),
            nlink: 1,
            ..Metadata::default()
        },
    }
}

fn write_stat(ctx: &SyscallContext, ptr: u64, m: &Metadata) -> SysResult {
    uaccess::write_bytes(&ctx.vm()?, ptr, &to_stat(m).to_bytes())?;
    Ok(0)
}

pub fn sys_fstat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    // A file opened through a dentry (even O_PATH) reports that inode.
    let m = match &f.dentry {
        Some(d) if f.ops.inode().is_none() => d.inode().metadata(),
        _ => file_metadata(&f),
    };
    write_stat(ctx, a[1], &m)
}

pub fn sys_stat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let d = lookup_at(ctx, &ctx.cred(), c::AT_FDCWD, &path, true, false)?;
    write_stat(ctx, a[1], &d.inode().metadata())
}

pub fn sys_lstat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let d = lookup_at(ctx, &ctx.cred(), c::AT_FDCWD, &path, false, false)?;
    write_stat(ctx, a[1], &d.inode().metadata())
}

fn metadata_at(ctx: &SyscallContext, dirfd: i32, path: &str, flags: u32) -> Result<Metadata, Errno> {
    if path.is_empty() && flags & c::AT_EMPTY_PATH != 0 && dirfd != c::AT_FDCWD {
        let f = file(ctx, dirfd)?;
        return Ok(match &f.dentry {
            Some(d) => d.inode().metadata(),
            None => file_metadata(&f),
        });
    }
    let d =
        lookup_at(ctx, &ctx.cred(), dirfd, path, flags & c::AT_SYMLINK_NOFOLLOW == 0, flags & c::AT_EMPTY_PATH != 0)?;
    Ok(d.inode().metadata())
}

pub fn sys_newfstatat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (dirfd, path_ptr, buf, flags) = (a[0] as i32, a[1], a[2], a[3] as u32);
    if flags & !(c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH | c::AT_NO_AUTOMOUNT) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg_maybe_empty(ctx, path_ptr)?;
    let m = metadata_at(ctx, dirfd, &path, flags)?;
    write_stat(ctx, buf, &m)
}

pub fn sys_statx(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (dirfd, path_ptr, flags, mask, buf) = (a[0] as i32, a[1], a[2] as u32, a[3] as u32, a[4]);
    const AT_STATX_SYNC_TYPE: u32 = 0x6000;
    if flags & !(c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH | c::AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE) != 0
        || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
    {
        return Err(Errno::EINVAL);
    }
    if mask & 0x8000_0000 != 0 {
        return Err(Errno::EINVAL); // STATX__RESERVED
    }
    let path = path_arg_maybe_empty(ctx, path_ptr)?;
    let m = metadata_at(ctx, dirfd, &path, flags)?;
    let t = |ns: u64| StatxTimestamp { tv_sec: (ns / 1_000_000_000) as i64, tv_nsec: (ns % 1_000_000_000) as u32 };
    let sx = Statx {
        stx_mask: c::STATX_BASIC_STATS,
        stx_blksize: 4096,
        stx_nlink: m.nlink as u32,
        stx_uid: m.uid,
        stx_gid: m.gid,
        stx_mode: m.mode as u16,
        stx_ino: m.ino,
        stx_size: m.size,
        stx_blocks: m.blocks,
        stx_atime: t(m.atime),
        stx_btime: t(m.ctime),
        stx_ctime: t(m.ctime),
        stx_mtime: t(m.mtime),
        stx_rdev_major: ((m.rdev >> 8) & 0xfff) as u32,
        stx_rdev_minor: ((m.rdev & 0xff) | ((m.rdev >> 12) & !0xff)) as u32,
        stx_dev_major: ((m.dev >> 8) & 0xfff) as u32,
        stx_dev_minor: ((m.dev & 0xff) | ((m.dev >> 12) & !0xff)) as u32,
        ..Statx::default()
    };
    uaccess::write_bytes(&ctx.vm()?, buf, &sx.to_bytes())?;
    Ok(0)
}

pub fn sys_getdents64(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    getdents(ctx, a, false)
}

/// The old getdents (78): `struct linux_dirent`, with no `d_type` field
/// in the header but the type in the record's last byte.
pub fn sys_getdents(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    getdents(ctx, a, true)
}

fn getdents(ctx: &mut SyscallContext, a: &[u64; 6], old: bool) -> SysResult {
    use linux_abi::layout::{DIRENT64_NAME_OFFSET, DIRENT_NAME_OFFSET};
    let name_offset = if old { DIRENT_NAME_OFFSET } else { DIRENT64_NAME_OFFSET };
    let (fd, buf, count) = (a[0] as i32, a[1], a[2] as usize);
    let f = file(ctx, fd)?;
    if f.is_path_only() {
        return Err(Errno::EBADF);
    }
    let inode = f.ops.inode().cloned().ok_or(Errno::ENOTDIR)?;
    if inode.file_type() != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    let dentry = f.dentry.clone();
    super::fs_io::update_atime(&f);
    // "." and ".." first, then the directory's entries; the file offset
    // counts entries already returned. Only the entries that can fit in
    // this call are fetched (the smallest record is 24 bytes).
    let mut pos = f.offset.lock();
    let start = *pos as usize;
    let mut entries: Vec<(String, u64, u8)> = Vec::new();
    let me = inode.metadata().ino;
    if start == 0 {
        entries.push((String::from("."), me, FileType::Directory.dirent_type()));
    }
    if start <= 1 {
        let parent_ino = dentry.as_ref().map_or(me, |d| d.parent().inode().metadata().ino);
        entries.push((String::from(".."), parent_ino, FileType::Directory.dirent_type()));
    }
    let cursor = f.dir_cursor.lock().clone();
    let mut out = Vec::new();
    // Eight bytes of slack: a record's padding is written as one 8-byte
    // store and cut back to the record's length (see `emit`).
    out.try_reserve(count.min(1 << 20) + 8).map_err(|_| Errno::ENOMEM)?;
    let mut index = start;
    // Where the last record that came from the directory starts: its name
    // is the cursor for the next call (read back from `out` at the end,
    // rather than copied at every entry).
    let mut last_at: Option<usize> = None;
    let mut full = false;
    // Appends one record straight into `out` (capacity reserved above, each
    // byte written once); false once the buffer is full.
    let emit = |out: &mut Vec<u8>, index: &mut usize, name: &str, ino: u64, kind: u8| -> bool {
        use linux_abi::layout::{dirent64_header, dirent64_reclen, dirent_name_ok, dirent_reclen};
        let name = name.as_bytes();
        let reclen = if old { dirent_reclen(name.len()) } else { dirent64_reclen(name.len()) };
        if out.len() + reclen > count || !dirent_name_ok(name, reclen) {
            return false;
        }
        let header = dirent64_header(ino, (*index + 1) as i64, kind, reclen as u16);
        if old {
            // d_ino, d_off, d_reclen; the name, its NUL, and d_type last.
            out.extend_from_slice(&header[..DIRENT_NAME_OFFSET]);
            out.extend_from_slice(name);
            out.extend_from_slice(&[0u8; 8][..reclen - DIRENT_NAME_OFFSET - name.len() - 1]);
            out.push(kind);
        } else {
            // The NUL and the padding (1 to 8 bytes) as one store of eight
            // zero bytes, cut back to the record: a variable-length zero
            // fill was a call to memset for every entry.
            let at = out.len();
            out.extend_from_slice(&header);
            out.extend_from_slice(name);
            out.extend_from_slice(&[0u8; 8]);
            out.truncate(at + reclen);
        }
        *index += 1;
        true
    };
    for (name, ino, kind) in entries.iter() {
        if !emit(&mut out, &mut index, name, *ino, *kind) {
            full = true;
            break;
        }
    }
    if !full {
        // Name-ordered file systems stream their entries; others are
        // listed and skipped to the offset.
        let after = match &cursor {
            Some((at, last)) if *at == start as u64 && start > 2 => Some(last.as_str()),
            _ => None,
        };
        // With a cursor an ordered file system resumes after the last
        // name; without one (or without an ordered index) the first
        // `start - 2` entries are skipped.
        let skip = core::cell::Cell::new(if after.is_some() { 0 } else { start.saturating_sub(2) });
        let mut skipped = 0;
        let mut visit = |name: &str, ino: u64, kind: FileType| -> bool {
            if skipped < skip.get() {
                skipped += 1;
                return true;
            }
            let at = out.len();
            if !emit(&mut out, &mut index, name, ino, kind.dirent_type()) {
                full = true;
                return false;
            }
            last_at = Some(at);
            true
        };
        match inode.visit_entries(after, &mut visit) {
            Some(r) => r?,
            None => {
                skip.set(start.saturating_sub(2));
                for e in inode.readdir()?.into_iter() {
                    if !visit(&e.name, e.ino, e.kind) {
                        break;
                    }
                }
            }
        }
    }
    if out.is_empty() && full {
        return Err(Errno::EINVAL); // not even one record fits
    }
    ctx.copy_to_user(buf, &out)?;
    *pos = index as u64;
    if let Some(at) = last_at {
        let name = &out[at + name_offset..];
        let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        // Names came from `&str`s, so the bytes are UTF-8.
        let last_name = String::from(core::str::from_utf8(&name[..len]).unwrap_or_default());
        *f.dir_cursor.lock() = Some((index as u64, last_name));
    }
    notify::accessed(&f);
    Ok(out.len() as u64)
}

fn readlink_at(ctx: &SyscallContext, dirfd: i32, path_ptr: u64, buf: u64, size: u64) -> SysResult {
    if (size as i64) <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg_maybe_empty(ctx, path_ptr)?;
    let d = lookup_at(ctx, &ctx.cred(), dirfd, &path, false, true)?;
    let target = d.inode().readlink()?;
    let n = target.len().min(size as usize);
    uaccess::write_bytes(&ctx.vm()?, buf, &target.as_bytes()[..n])?;
    Ok(n as u64)
}

pub fn sys_readlink(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    readlink_at(ctx, c::AT_FDCWD, a[0], a[1], a[2])
}

pub fn sys_readlinkat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    readlink_at(ctx, a[0] as i32, a[1], a[2], a[3])
}

fn write_statfs(ctx: &SyscallContext, ptr: u64, d: &Arc<dyn crate::fs::Inode>, st_flags: u64) -> SysResult {
    let s = d.fs_stats();
    let st = Statfs {
        f_type: s.magic as i64,
        f_bsize: s.block_size as i64,
        f_blocks: s.blocks,
        f_bfree: s.blocks_free,
        f_bavail: s.blocks_free,
        f_files: s.files,
        f_ffree: s.files_free,
        f_namelen: s.name_max as i64,
        f_frsize: s.block_size as i64,
        f_flags: st_flags as i64,
        ..Statfs::default()
    };
    uaccess::write_bytes(&ctx.vm()?, ptr, &st.to_bytes())?;
    Ok(0)
}

/// statfs's f_flags: ST_VALID (0x20) and the mount's flags.
const ST_VALID: u64 = 0x20;

fn statfs_flags(d: &Arc<Dentry>) -> u64 {
    d.mount().map_or(ST_VALID, |m| m.statfs_flags())
}

pub fn sys_statfs(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let d = lookup_at(ctx, &ctx.cred(), c::AT_FDCWD, &path, true, false)?;
    write_statfs(ctx, a[1], d.inode(), statfs_flags(&d))
}

pub fn sys_fstatfs(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    match (&f.dentry, f.ops.inode()) {
        (Some(d), _) => write_statfs(ctx, a[1], d.inode(), statfs_flags(d)),
        (None, Some(i)) => write_statfs(ctx, a[1], i, ST_VALID),
        // Pipes live in pipefs.
        _ => {
            let st = Statfs { f_type: 0x5049_5045, f_bsize: 4096, f_namelen: 255, f_frsize: 4096, ..Statfs::default() };
            uaccess::write_bytes(&ctx.vm()?, a[1], &st.to_bytes())?;
            Ok(0)
        }
    }
}

pub fn sys_getcwd(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let dentry = ctx.process().cwd.lock().clone();
    if dentry.inode().metadata().nlink == 0 {
        return Err(Errno::ENOENT); // the working directory was removed
    }
    // From the process root; a directory outside it is "(unreachable)".
    let root = ctx.process().root.lock().clone();
    let (cwd, reachable) = dentry.path_from(&root);
    let cwd = if reachable { cwd } else { alloc::format!("(unreachable){cwd}") };
    let needed = cwd.len() + 1;
    if (a[1] as usize) < needed {
        return Err(Errno::ERANGE);
    }
    let mut bytes = cwd.into_bytes();
    bytes.push(0);
    uaccess::write_bytes(&ctx.vm()?, a[0], &bytes)?;
    Ok(needed as u64)
}

pub fn sys_chdir(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let cred = ctx.cred();
    let d = lookup_at(ctx, &cred, c::AT_FDCWD, &path, true, false)?;
    if !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    perm::permission(&cred, &d, MAY_EXEC)?;
    let old = core::mem::replace(&mut *ctx.process().cwd.lock(), d);
    drop(old);
    Ok(0)
}

pub fn sys_fchdir(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let d = f.dentry.clone().ok_or(Errno::ENOTDIR)?;
    if !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    perm::permission(&ctx.cred(), &d, MAY_EXEC)?;
    let old = core::mem::replace(&mut *ctx.process().cwd.lock(), d);
    drop(old);
    Ok(0)
}

pub fn sys_sync(_ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    // sync(2) cannot fail; a file system that could not write logs it.
    crate::fs::sync_all();
    Ok(0)
}
