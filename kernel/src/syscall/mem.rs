//! Memory calls: brk, mmap, munmap, mprotect, madvise.

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
            // Only files whose data lives in page frames (tmpfs) can share
            // them; Linux answers ENODEV for files that cannot be mapped.
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
    ctx.vm()?.lock().mprotect(a[0], a[1], Prot::from_bits(prot))?;
    Ok(0)
}

/// msync: shared file mappings are the file's own frames (tmpfs), so
/// their stores are in the file already; what is left is Linux's checks.
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
    if !ctx.vm()?.lock().covers(addr, end) {
        return Err(Errno::ENOMEM);
    }
    Ok(0)
}

pub fn sys_madvise(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (addr, len, advice) = (a[0], a[1], a[2] as u32);
    if addr % crate::mm::PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    match advice {
        c::MADV_DONTNEED => {
            ctx.vm()?.lock().discard(addr, len)?;
            Ok(0)
        }
        // Hints with no effect on what a program can observe.
        c::MADV_NORMAL
        | c::MADV_RANDOM
        | c::MADV_SEQUENTIAL
        | c::MADV_WILLNEED
        | c::MADV_FREE
        | c::MADV_HUGEPAGE
        | c::MADV_NOHUGEPAGE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
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
