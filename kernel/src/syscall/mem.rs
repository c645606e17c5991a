//! Memory calls: brk, mmap, munmap, mprotect, mremap, msync, madvise,
//! mincore, and the mlock family (mlock, mlock2, munlock, mlockall,
//! munlockall).

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::ipc::{F_SEAL_FUTURE_WRITE, F_SEAL_WRITE};

use super::{SysResult, SyscallContext};
use crate::mm::vma::{Backing, Prot};
use crate::mm::AddressSpace;

pub fn sys_brk(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let vm = ctx.vm()?;
    let brk = vm.lock().brk(a[0]);
    Ok(brk)
}

const KNOWN_PROT: u64 = (c::PROT_READ | c::PROT_WRITE | c::PROT_EXEC) as u64;

pub fn sys_mmap(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (addr, len, prot, flags, fd, offset) = (a[0], a[1], a[2], a[3] as u32, a[4] as i32, a[5]);
    if len == 0 || offset % crate::mm::PAGE_SIZE != 0 || prot & !KNOWN_PROT != 0 {
        return Err(Errno::EINVAL);
    }
    let kind = flags & c::MAP_TYPE;
    let shared = match kind {
        c::MAP_SHARED | c::MAP_SHARED_VALIDATE => true,
        c::MAP_PRIVATE => false,
        _ => return Err(Errno::EINVAL),
    };
    if flags & c::MAP_HUGETLB != 0 {
        // No huge pages are reserved, as on a Linux with nr_hugepages=0.
        return Err(Errno::ENOMEM);
    }
    let zero_device =
        flags & c::MAP_ANONYMOUS == 0 && ctx.process().files().lock().get(fd).is_ok_and(|f| f.ops.maps_anonymous());
    let backing = if flags & c::MAP_ANONYMOUS != 0 || zero_device {
        if shared && flags & c::MAP_GROWSDOWN != 0 {
            return Err(Errno::EINVAL);
        }
        if shared {
            AddressSpace::new_shared_backing()?
        } else {
            Backing::Anonymous
        }
    } else {
        let file = ctx.process().files().lock().get(fd)?;
        if !file.readable() || (shared && prot & c::PROT_WRITE as u64 != 0 && !file.writable()) {
            return Err(Errno::EACCES);
        }
        if prot & c::PROT_EXEC as u64 != 0 && file.dentry.as_ref().is_some_and(|d| d.no_exec()) {
            return Err(Errno::EPERM);
        }
        let inode = file
            .ops
            .inode()
            .filter(|i| i.file_type() == crate::fs::inode::FileType::Regular)
            .cloned()
            .ok_or(Errno::ENODEV)?;
        if shared {
            // Only files whose data lives in page frames (tmpfs, the page
            // cache) can share them; Linux answers ENODEV for files that
            // cannot be mapped.
            if !inode.has_page_frames() {
                return Err(Errno::ENODEV);
            }
            // A file sealed against writes maps shared only read-only,
            // and mprotect may not add PROT_WRITE later.
            let sealed = inode.seals().unwrap_or(0) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0;
            if sealed && prot & c::PROT_WRITE as u64 != 0 {
                return Err(Errno::EPERM);
            }
            Backing::shared_file(inode, offset, file.writable() && !sealed)
        } else {
            Backing::file(inode, offset, None)
        }
    };
    let accountable = prot & c::PROT_WRITE as u64 != 0 && flags & c::MAP_NORESERVE == 0;
    if accountable {
        AddressSpace::check_commit(len)?;
    }
    let fixed = flags & c::MAP_FIXED != 0;
    let noreplace = flags & c::MAP_FIXED_NOREPLACE != 0;
    let name = if flags & c::MAP_ANONYMOUS == 0 && !zero_device {
        ctx.process().files().lock().get(fd).ok().and_then(|f| f.dentry.clone()).map(|d| d.path())
    } else {
        None
    };
    let vm = ctx.vm()?;
    let mut space = vm.lock();
    let start = space.mmap(addr, len, Prot::from_bits(prot), backing, fixed, noreplace)?;
    if let Some(n) = name {
        space.set_name(start, &n);
    }
    if flags & c::MAP_GROWSDOWN != 0 {
        space.set_grows_down(start);
    }
    Ok(start)
}

pub fn sys_munmap(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    ctx.vm()?.lock().munmap(a[0], a[1])?;
    Ok(0)
}

pub fn sys_mprotect(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let prot = a[2];
    if prot & !(KNOWN_PROT | (c::PROT_GROWSDOWN | c::PROT_GROWSUP) as u64) != 0 {
        return Err(Errno::EINVAL);
    }
    let grows = prot & (c::PROT_GROWSDOWN | c::PROT_GROWSUP) as u64;
    if grows == (c::PROT_GROWSDOWN | c::PROT_GROWSUP) as u64 || grows == c::PROT_GROWSUP as u64 {
        return Err(Errno::EINVAL); // x86 has no areas that grow up
    }
    let vm = ctx.vm()?;
    let mut space = vm.lock();
    let (mut start, mut len) = (a[0], a[1]);
    if grows != 0 && len != 0 {
        // PROT_GROWSDOWN: the change reaches down to the growing area's start.
        let bottom = space.grows_down_start(start)?;
        len += start - bottom;
        start = bottom;
    }
    space.mprotect(start, len, Prot::from_bits(prot))?;
    Ok(0)
}

/// msync: shared file mappings are the file's own frames (tmpfs, or the
/// page cache of a disk file), so their stores are in the file already;
/// MS_SYNC writes a disk file's dirty pages back and waits until they and
/// the metadata that maps them are durable (Linux's vfs_fsync_range),
/// MS_ASYNC sends them to the device without waiting for the flush.
pub fn sys_msync(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (addr, len, flags) = (a[0], a[1], a[2]);
    let known = (c::MS_ASYNC | c::MS_INVALIDATE | c::MS_SYNC) as u64;
    if flags & !known != 0 || addr % crate::mm::PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & c::MS_ASYNC as u64 != 0 && flags & c::MS_SYNC as u64 != 0 {
        return Err(Errno::EINVAL);
    }
    let end =
        addr.checked_add(len).and_then(|e| e.checked_next_multiple_of(crate::mm::PAGE_SIZE)).ok_or(Errno::ENOMEM)?;
    if end == addr {
        return Ok(0);
    }
    let files = {
        let vm = ctx.vm()?;
        let space = vm.lock();
        if !space.covers(addr, end) {
            return Err(Errno::ENOMEM);
        }
        space.shared_files_in(addr, end)
    };
    for (file, from, to) in files {
        if flags & c::MS_SYNC as u64 != 0 {
            file.sync_range(from, to, true)?;
            file.sync(true)?;
        } else if flags & c::MS_ASYNC as u64 != 0 {
            file.sync_range(from, to, false)?;
        }
    }
    Ok(0)
}

/// madvise(2). Every advice Linux accepts is accepted, with Linux's
/// effect where a program can see one (see `mm::advice`); unknown advice
/// is EINVAL. MADV_HWPOISON and MADV_SOFT_OFFLINE inject memory errors,
/// which needs CAP_SYS_ADMIN on Linux; Kiln injects none and refuses
/// them with the EPERM an unprivileged caller gets.
pub fn sys_madvise(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (addr, len_in, advice) = (a[0], a[1], a[2] as u32);
    let known = matches!(
        advice,
        c::MADV_NORMAL
            | c::MADV_RANDOM
            | c::MADV_SEQUENTIAL
            | c::MADV_WILLNEED
            | c::MADV_DONTNEED
            | c::MADV_FREE
            | c::MADV_REMOVE
            | c::MADV_DONTFORK
            | c::MADV_DOFORK
            | c::MADV_MERGEABLE
            | c::MADV_UNMERGEABLE
            | c::MADV_HUGEPAGE
            | c::MADV_NOHUGEPAGE
            | c::MADV_DONTDUMP
            | c::MADV_DODUMP
            | c::MADV_WIPEONFORK
            | c::MADV_KEEPONFORK
            | c::MADV_COLD
            | c::MADV_PAGEOUT
            | c::MADV_POPULATE_READ
            | c::MADV_POPULATE_WRITE
            | c::MADV_DONTNEED_LOCKED
            | c::MADV_COLLAPSE
            | c::MADV_HWPOISON
            | c::MADV_SOFT_OFFLINE
    );
    if !known || addr % crate::mm::PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    let len = crate::mm::page_ceil(len_in).unwrap_or(0);
    // A length that rounds up to zero came from a small negative one.
    if len_in != 0 && len == 0 {
        return Err(Errno::EINVAL);
    }
    let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
    if end == addr {
        return Ok(0);
    }
    if matches!(advice, c::MADV_HWPOISON | c::MADV_SOFT_OFFLINE) {
        return Err(Errno::EPERM);
    }
    let vm = ctx.vm()?;
    if advice == c::MADV_REMOVE {
        let freed = vm.lock().madvise_remove(addr, end)?;
        drop(vm);
        // Every sharer must stop seeing the freed pages: walk the address
        // spaces (each locked on its own, never two at once).
        let mut visited: alloc::vec::Vec<crate::mm::Vm> = alloc::vec::Vec::new();
        for p in crate::proc::all_processes() {
            let Ok(other) = p.vm() else { continue };
            if visited.iter().any(|v| alloc::sync::Arc::ptr_eq(v, &other)) {
                continue;
            }
            let mut space = other.lock();
            for (object, index, count) in &freed {
                space.unmap_object_pages(object, *index, *count);
            }
            drop(space);
            if visited.try_reserve(1).is_ok() {
                visited.push(other);
            }
        }
        return Ok(0);
    }
    let result = vm.lock().madvise(addr, end, advice);
    result.map(|()| 0)
}

/// Whether the caller holds CAP_IPC_LOCK, which lifts RLIMIT_MEMLOCK.
fn has_cap_ipc_lock(ctx: &SyscallContext) -> bool {
    ctx.cred().capable(linux_abi::capability::CAP_IPC_LOCK)
}

/// The RLIMIT_MEMLOCK that binds the caller, in bytes (None: no limit).
fn memlock_limit(ctx: &SyscallContext) -> Option<u64> {
    if has_cap_ipc_lock(ctx) {
        return None;
    }
    let limit = ctx.process().rlimits.lock()[c::RLIMIT_MEMLOCK as usize].0;
    (limit != u64::MAX).then_some(limit & !(crate::mm::PAGE_SIZE - 1))
}

fn do_mlock(ctx: &SyscallContext, addr: u64, len: u64, on_fault: bool) -> SysResult {
    let (start, end) = crate::mm::advice::lock_range(addr, len)?;
    let limit = memlock_limit(ctx);
    if limit == Some(0) {
        // Linux: without CAP_IPC_LOCK and with no allowance at all.
        return Err(Errno::EPERM);
    }
    ctx.vm()?.lock().mlock(start, end, on_fault, limit)?;
    Ok(0)
}

pub fn sys_mlock(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    do_mlock(ctx, a[0], a[1], false)
}

pub fn sys_mlock2(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = a[2] as u32;
    if flags & !c::MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    do_mlock(ctx, a[0], a[1], flags & c::MLOCK_ONFAULT != 0)
}

pub fn sys_munlock(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (start, end) = crate::mm::advice::lock_range(a[0], a[1])?;
    ctx.vm()?.lock().munlock(start, end)?;
    Ok(0)
}

pub fn sys_mlockall(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let flags = a[0] as u32;
    let known = c::MCL_CURRENT | c::MCL_FUTURE | c::MCL_ONFAULT;
    if flags == 0 || flags & !known != 0 || flags == c::MCL_ONFAULT {
        return Err(Errno::EINVAL);
    }
    let limit = memlock_limit(ctx);
    if limit == Some(0) {
        return Err(Errno::EPERM);
    }
    ctx.vm()?.lock().mlockall(flags, limit)?;
    Ok(0)
}

pub fn sys_munlockall(ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    ctx.vm()?.lock().munlockall();
    Ok(0)
}

/// mincore(2): a byte per page, 1 when resident. The vector is written
/// in chunks as Linux does, so a range that runs into an unmapped page
/// fails with ENOMEM after the bytes before it were stored.
pub fn sys_mincore(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (start, len, vec) = (a[0], a[1], a[2]);
    if start % crate::mm::PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    if !crate::mm::uaccess::access_ok(start, len as usize) || start.checked_add(len).is_none() {
        return Err(Errno::ENOMEM);
    }
    let pages = len.div_ceil(crate::mm::PAGE_SIZE);
    if !crate::mm::uaccess::access_ok(vec, pages as usize) {
        return Err(Errno::EFAULT);
    }
    let vm = ctx.vm()?;
    let mut chunk = [0u8; 512];
    let mut done = 0u64;
    while done < pages {
        let n = (pages - done).min(chunk.len() as u64) as usize;
        let result = vm.lock().mincore(start + done * crate::mm::PAGE_SIZE, &mut chunk[..n]);
        let filled = result?;
        crate::mm::uaccess::write_bytes(&vm, vec + done, &chunk[..filled])?;
        done += filled as u64;
    }
    Ok(0)
}

pub fn sys_mremap(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (old, old_len, new_len, flags, new_addr) = (a[0], a[1], a[2], a[3] as u32, a[4]);
    let known = c::MREMAP_MAYMOVE | c::MREMAP_FIXED;
    if flags & !known != 0 || (flags & c::MREMAP_FIXED != 0 && flags & c::MREMAP_MAYMOVE == 0) {
        return Err(Errno::EINVAL);
    }
    if new_len > old_len {
        AddressSpace::check_commit(new_len)?;
    }
    let fixed = (flags & c::MREMAP_FIXED != 0).then_some(new_addr);
    ctx.vm()?.lock().mremap(old, old_len, new_len, flags & c::MREMAP_MAYMOVE != 0, fixed)
}

/// process_madvise(pidfd, iovec, vlen, advice, flags), as Linux 6.1:
/// flags must be 0, the vector importable (at most UIO_MAXIOV entries,
/// no negative length, the first buffer a user range), the descriptor a
/// pidfd of a live process, the advice one of COLD, PAGEOUT, WILLNEED and
/// COLLAPSE (6.13 and later take any advice for the caller itself),
/// the target's memory readable to the caller
/// (PTRACE_MODE_READ_FSCREDS) and, for another process, CAP_SYS_NICE.
/// Each range is advised in turn; the bytes advised are returned, or the
/// first range's error.
pub fn sys_process_madvise(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    use crate::cred::PtraceMode;
    use crate::proc::ptrace;
    let (pidfd, vec, vlen, advice, flags) = (a[0] as i32, a[1], a[2], a[3] as u32, a[4] as u32);
    if flags != 0 || vlen > 1024 {
        return Err(Errno::EINVAL);
    }
    let mut ranges: alloc::vec::Vec<(u64, u64)> = alloc::vec::Vec::new();
    ranges.try_reserve(vlen as usize).map_err(|_| Errno::ENOMEM)?;
    for i in 0..vlen {
        let mut iov = [0u8; 16];
        ctx.copy_from_user(vec.wrapping_add(16 * i), &mut iov)?;
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&iov[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let (base, len) = (word(0), word(8));
        if (len as i64) < 0 {
            return Err(Errno::EINVAL);
        }
        if i == 0 && !crate::mm::uaccess::access_ok(base, len as usize) {
            return Err(Errno::EFAULT);
        }
        ranges.push((base, len));
    }
    let file = ctx.process().files().lock().get(pidfd)?;
    let target = crate::proc::pidfd::of_file(&file)?.process().cloned().ok_or(Errno::ESRCH)?;
    if !matches!(advice, c::MADV_COLD | c::MADV_PAGEOUT | c::MADV_WILLNEED | c::MADV_COLLAPSE) {
        return Err(Errno::EINVAL);
    }
    ptrace::may_access_process(ctx.task, &target, PtraceMode::READ_FSCREDS)?;
    let vm = target.vm().map_err(|_| Errno::ESRCH)?;
    if !alloc::sync::Arc::ptr_eq(&target, ctx.process()) && !ctx.cred().capable(linux_abi::capability::CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    let mut done: u64 = 0;
    for (base, len) in ranges {
        let result = (|| {
            if base % crate::mm::PAGE_SIZE != 0 {
                return Err(Errno::EINVAL);
            }
            let end = base.checked_add(crate::mm::page_ceil(len).ok_or(Errno::EINVAL)?).ok_or(Errno::EINVAL)?;
            if end == base {
                return Ok(());
            }
            vm.lock().madvise(base, end, advice)
        })();
        match result {
            Ok(()) => done += len,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(done)
}
