//! File calls over the in-memory tree and the console: open, read, write,
//! stat, seek, dup, fcntl, cwd. (The full VFS work extends these.)

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Iovec, Stat, Timespec};

use super::{SysResult, SyscallContext};
use crate::fs::file::InodeFile;
use crate::fs::ramfs::InodeKind;
use crate::fs::{lookup, Inode, OpenFile};
use crate::mm::uaccess;

/// Largest single read/write Linux performs (MAX_RW_COUNT).
const MAX_RW: usize = 0x7fff_f000;
/// Bounce-buffer size for moving data between files and user memory.
const CHUNK: usize = 64 * 1024;

fn file(ctx: &SyscallContext, fd: i32) -> Result<Arc<OpenFile>, Errno> {
    ctx.process().files().lock().get(fd)
}

fn read_into_user(ctx: &SyscallContext, f: &OpenFile, buf: u64, len: usize) -> SysResult {
    let vm = ctx.vm()?;
    let len = len.min(MAX_RW);
    let mut bounce: Vec<u8> = Vec::new();
    bounce.try_reserve_exact(len.min(CHUNK)).map_err(|_| Errno::ENOMEM)?;
    bounce.resize(len.min(CHUNK), 0);
    let mut done = 0;
    while done < len {
        let want = (len - done).min(CHUNK);
        let n = f.read(&mut bounce[..want])?;
        if n == 0 {
            break;
        }
        uaccess::write_bytes(&vm, buf + done as u64, &bounce[..n])?;
        done += n;
        if n < want || !f.ops.seekable() {
            break;
        }
    }
    Ok(done as u64)
}

fn write_from_user(ctx: &SyscallContext, f: &OpenFile, buf: u64, len: usize) -> SysResult {
    let vm = ctx.vm()?;
    let len = len.min(MAX_RW);
    let mut bounce: Vec<u8> = Vec::new();
    bounce.try_reserve_exact(len.min(CHUNK)).map_err(|_| Errno::ENOMEM)?;
    bounce.resize(len.min(CHUNK), 0);
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK);
        uaccess::read_bytes(&vm, buf + done as u64, &mut bounce[..n])?;
        let written = f.write(&bounce[..n])?;
        done += written;
        if written < n {
            break;
        }
    }
    Ok(done as u64)
}

pub fn sys_read(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    read_into_user(ctx, &f, a[1], a[2] as usize)
}

pub fn sys_write(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    write_from_user(ctx, &f, a[1], a[2] as usize)
}

pub fn sys_pread64(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if !f.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    let len = (a[2] as usize).min(CHUNK);
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    buf.resize(len, 0);
    let n = f.ops.read_at(a[3], &mut buf)?;
    uaccess::write_bytes(&ctx.vm()?, a[1], &buf[..n])?;
    Ok(n as u64)
}

fn read_iovecs(ctx: &SyscallContext, ptr: u64, count: u64) -> Result<Vec<Iovec>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let vm = ctx.vm()?;
    let mut out = Vec::new();
    for i in 0..count {
        let mut b = [0u8; Iovec::SIZE];
        uaccess::read_bytes(&vm, ptr + i * Iovec::SIZE as u64, &mut b)?;
        let iov = Iovec::from_bytes(&b);
        if (iov.iov_len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        out.push(iov);
    }
    Ok(out)
}

pub fn sys_readv(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let mut total = 0;
    for iov in read_iovecs(ctx, a[1], a[2])? {
        let n = read_into_user(ctx, &f, iov.iov_base, iov.iov_len as usize)?;
        total += n;
        if n < iov.iov_len {
            break;
        }
    }
    Ok(total)
}

pub fn sys_writev(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    let mut total = 0;
    for iov in read_iovecs(ctx, a[1], a[2])? {
        let n = write_from_user(ctx, &f, iov.iov_base, iov.iov_len as usize)?;
        total += n;
        if n < iov.iov_len {
            break;
        }
    }
    Ok(total)
}

fn path_arg(ctx: &SyscallContext, ptr: u64) -> Result<String, Errno> {
    let p = uaccess::read_cstring(&ctx.vm()?, ptr, 4096)?;
    if p.is_empty() {
        return Err(Errno::ENOENT);
    }
    Ok(p)
}

/// Resolves a path relative to `dirfd` (only AT_FDCWD and absolute paths
/// for now; directory descriptors come with the VFS).
fn resolve_at(ctx: &SyscallContext, dirfd: i32, path: &str, follow: bool) -> Result<Arc<Inode>, Errno> {
    if !path.starts_with('/') && dirfd != c::AT_FDCWD {
        let dir = file(ctx, dirfd)?;
        let inode = dir.ops.inode().ok_or(Errno::ENOTDIR)?;
        if !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        return Err(Errno::ENOSYS);
    }
    let cwd = ctx.process().cwd.lock().clone();
    lookup(&cwd, path, follow)
}

fn do_open(ctx: &SyscallContext, dirfd: i32, path: u64, flags: u32) -> SysResult {
    let path = path_arg(ctx, path)?;
    if flags & (c::O_CREAT | c::O_TMPFILE) != 0 {
        // Creating files needs a writable file system (the VFS work).
        let cwd = ctx.process().cwd.lock().clone();
        return match lookup(&cwd, &path, true) {
            Ok(_) if flags & c::O_EXCL != 0 => Err(Errno::EEXIST),
            Ok(_) | Err(Errno::ENOENT) => Err(Errno::EROFS),
            Err(e) => Err(e),
        };
    }
    let inode = resolve_at(ctx, dirfd, &path, flags & c::O_NOFOLLOW == 0)?;
    if matches!(inode.kind, InodeKind::Symlink(_)) {
        return Err(Errno::ELOOP);
    }
    if flags & c::O_DIRECTORY != 0 && !inode.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let access = flags & 3;
    if inode.is_dir() && access != c::O_RDONLY {
        return Err(Errno::EISDIR);
    }
    if access != c::O_RDONLY || flags & c::O_TRUNC != 0 {
        return Err(Errno::EROFS);
    }
    let open = Arc::try_new(OpenFile::new(Arc::new(InodeFile::new(inode)), flags & !c::O_CLOEXEC))
        .map_err(|_| Errno::ENOMEM)?;
    let fd = ctx.process().files().lock().install(open, flags & c::O_CLOEXEC != 0)?;
    Ok(fd as u64)
}

pub fn sys_open(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_open(ctx, c::AT_FDCWD, a[0], a[1] as u32)
}

pub fn sys_openat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_open(ctx, a[0] as i32, a[1], a[2] as u32)
}

pub fn sys_close(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    ctx.process().files().lock().close(a[0] as i32)?;
    Ok(0)
}

pub fn sys_lseek(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    if !f.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    let (offset, whence) = (a[1] as i64, a[2] as u32);
    let mut pos = f.offset.lock();
    let base = match whence {
        c::SEEK_SET => 0,
        c::SEEK_CUR => *pos as i64,
        c::SEEK_END => f.ops.inode().map_or(0, |i| i.size()) as i64,
        _ => return Err(Errno::EINVAL),
    };
    let new = base.checked_add(offset).filter(|n| *n >= 0).ok_or(Errno::EINVAL)?;
    *pos = new as u64;
    Ok(new as u64)
}

fn stat_of_inode(inode: &Inode) -> Stat {
    let now = Timespec::from_nanos(crate::clock::realtime_ns());
    Stat {
        st_dev: 1,
        st_ino: inode.ino,
        st_nlink: if inode.is_dir() { 2 } else { 1 },
        st_mode: inode.mode,
        st_size: inode.size() as i64,
        st_blksize: 4096,
        st_blocks: inode.size().div_ceil(512) as i64,
        st_atime: now,
        st_mtime: now,
        st_ctime: now,
        ..Stat::default()
    }
}

fn stat_of_file(f: &OpenFile) -> Stat {
    match f.ops.inode() {
        Some(i) => stat_of_inode(i),
        None => Stat {
            st_dev: 5,
            st_mode: f.ops.mode(),
            st_nlink: 1,
            st_blksize: 1024,
            st_rdev: (5 << 8) | 1,
            ..Stat::default()
        },
    }
}

fn write_stat(ctx: &SyscallContext, ptr: u64, st: &Stat) -> SysResult {
    uaccess::write_bytes(&ctx.vm()?, ptr, &st.to_bytes())?;
    Ok(0)
}

pub fn sys_fstat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    write_stat(ctx, a[1], &stat_of_file(&f))
}

pub fn sys_stat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let inode = resolve_at(ctx, c::AT_FDCWD, &path, true)?;
    write_stat(ctx, a[1], &stat_of_inode(&inode))
}

pub fn sys_lstat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let path = path_arg(ctx, a[0])?;
    let inode = resolve_at(ctx, c::AT_FDCWD, &path, false)?;
    write_stat(ctx, a[1], &stat_of_inode(&inode))
}

pub fn sys_newfstatat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (dirfd, path_ptr, buf, flags) = (a[0] as i32, a[1], a[2], a[3] as u32);
    if flags & !(c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH | c::AT_NO_AUTOMOUNT) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = uaccess::read_cstring(&ctx.vm()?, path_ptr, 4096)?;
    if path.is_empty() {
        if flags & c::AT_EMPTY_PATH == 0 {
            return Err(Errno::ENOENT);
        }
        let f = file(ctx, dirfd)?;
        return write_stat(ctx, buf, &stat_of_file(&f));
    }
    let inode = resolve_at(ctx, dirfd, &path, flags & c::AT_SYMLINK_NOFOLLOW == 0)?;
    write_stat(ctx, buf, &stat_of_inode(&inode))
}

pub fn sys_access(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    access_at(ctx, c::AT_FDCWD, a[0], a[1] as u32)
}

pub fn sys_faccessat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    access_at(ctx, a[0] as i32, a[1], a[2] as u32)
}

fn access_at(ctx: &SyscallContext, dirfd: i32, path: u64, mode: u32) -> SysResult {
    if mode & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg(ctx, path)?;
    let inode = resolve_at(ctx, dirfd, &path, true)?;
    // Root may read and write anything; execute needs some x bit.
    if mode & 1 != 0 && !inode.is_dir() && inode.mode & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    Ok(0)
}

pub fn sys_readlink(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    readlink_at(ctx, c::AT_FDCWD, a[0], a[1], a[2])
}

pub fn sys_readlinkat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    readlink_at(ctx, a[0] as i32, a[1], a[2], a[3])
}

fn readlink_at(ctx: &SyscallContext, dirfd: i32, path: u64, buf: u64, size: u64) -> SysResult {
    if (size as i64) <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = path_arg(ctx, path)?;
    let inode = resolve_at(ctx, dirfd, &path, false)?;
    let InodeKind::Symlink(target) = &inode.kind else {
        return Err(Errno::EINVAL);
    };
    let n = target.len().min(size as usize);
    uaccess::write_bytes(&ctx.vm()?, buf, &target.as_bytes()[..n])?;
    Ok(n as u64)
}

pub fn sys_ioctl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let f = file(ctx, a[0] as i32)?;
    f.ops.ioctl(a[1] as u32, a[2])
}

pub fn sys_dup(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let files = ctx.process().files();
    let mut table = files.lock();
    let f = table.get(a[0] as i32)?;
    Ok(table.install(f, false)? as u64)
}

pub fn sys_dup2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (old, new) = (a[0] as i32, a[1] as i32);
    let files = ctx.process().files();
    let mut table = files.lock();
    let f = table.get(old)?;
    if old == new {
        return Ok(new as u64);
    }
    if new < 0 {
        return Err(Errno::EBADF);
    }
    table.install_at(new as usize, f, false)?;
    Ok(new as u64)
}

pub fn sys_dup3(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (old, new, flags) = (a[0] as i32, a[1] as i32, a[2] as u32);
    if flags & !c::O_CLOEXEC != 0 || old == new {
        return Err(Errno::EINVAL);
    }
    let files = ctx.process().files();
    let mut table = files.lock();
    let f = table.get(old)?;
    if new < 0 {
        return Err(Errno::EBADF);
    }
    table.install_at(new as usize, f, flags & c::O_CLOEXEC != 0)?;
    Ok(new as u64)
}

pub fn sys_fcntl(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (fd, cmd, arg) = (a[0] as i32, a[1] as u32, a[2]);
    let files = ctx.process().files();
    let mut table = files.lock();
    let f = table.get(fd)?;
    match cmd {
        c::F_DUPFD | c::F_DUPFD_CLOEXEC => {
            let min = usize::try_from(arg as i64).map_err(|_| Errno::EINVAL)?;
            if min >= crate::fs::fdtable::DEFAULT_NOFILE {
                return Err(Errno::EINVAL);
            }
            Ok(table.install_from(min, f, cmd == c::F_DUPFD_CLOEXEC, crate::fs::fdtable::DEFAULT_NOFILE)? as u64)
        }
        c::F_GETFD => Ok(u64::from(table.is_cloexec(fd)?)),
        c::F_SETFD => {
            table.set_cloexec(fd, arg & u64::from(c::FD_CLOEXEC) != 0)?;
            Ok(0)
        }
        c::F_GETFL => Ok(u64::from(f.flags())),
        c::F_SETFL => {
            // Only these status flags can change; the access mode cannot.
            let changeable = c::O_APPEND | c::O_NONBLOCK | c::O_ASYNC | c::O_DIRECT | c::O_NOATIME;
            let old = f.flags();
            f.flags.store((old & !changeable) | (arg as u32 & changeable), core::sync::atomic::Ordering::Relaxed);
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_getcwd(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let cwd = ctx.process().cwd.lock().clone();
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
    let inode = resolve_at(ctx, c::AT_FDCWD, &path, true)?;
    if !inode.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let cwd = ctx.process().cwd.lock().clone();
    *ctx.process().cwd.lock() = normalize(&cwd, &path);
    Ok(0)
}

/// Lexically normalizes `path` against `cwd` (symlinks in cwd are kept
/// as walked; good enough until the dentry cache arrives).
fn normalize(cwd: &str, path: &str) -> String {
    let full = if path.starts_with('/') { String::from(path) } else { alloc::format!("{cwd}/{path}") };
    let mut parts: Vec<&str> = Vec::new();
    for p in full.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let mut s = String::from("/");
    s.push_str(&parts.join("/"));
    s
}
