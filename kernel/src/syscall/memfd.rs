//! memfd_create(2) and file seals (fcntl F_ADD_SEALS/F_GET_SEALS).
//!
//! A memfd is an unnamed regular file of the internal tmpfs
//! (`fs::tmpfs::unnamed_file`), so its pages are page-store frames that
//! mappings share like any tmpfs file's. The seals live on the inode
//! (tmpfs enforces them on write, truncate, fallocate and chmod); this
//! layer checks the arguments and, for F_SEAL_WRITE, that no writable
//! shared mapping of the file exists anywhere (EBUSY), and sys_mmap keeps
//! new ones out.

use alloc::sync::Arc;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::ipc::{
    F_ALL_SEALS, F_SEAL_EXEC, F_SEAL_SEAL, F_SEAL_WRITE, MFD_ALLOW_SEALING, MFD_CLOEXEC, MFD_EXEC, MFD_HUGETLB,
    MFD_NAME_MAX, MFD_NOEXEC_SEAL,
};

use super::fs_io::install;
use super::{SysResult, SyscallContext};
use crate::fs::file::InodeFile;
use crate::fs::{Inode, OpenFile};
use crate::mm::uaccess;

/// The huge-page size bits MFD_HUGETLB may carry (MFD_HUGE_MASK << 26).
const MFD_HUGE_SIZES: u32 = 0x3f << 26;

pub fn sys_memfd_create(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (name_ptr, flags) = (a[0], a[1] as u32);
    let known = MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_NOEXEC_SEAL | MFD_EXEC;
    let allowed = if flags & MFD_HUGETLB != 0 { known | MFD_HUGE_SIZES } else { known };
    if flags & !allowed != 0 || (flags & MFD_EXEC != 0 && flags & MFD_NOEXEC_SEAL != 0) {
        return Err(Errno::EINVAL);
    }
    let name = match uaccess::read_cstring(&ctx.vm()?, name_ptr, MFD_NAME_MAX) {
        Err(Errno::ENAMETOOLONG) => return Err(Errno::EINVAL),
        r => r?,
    };
    if flags & MFD_HUGETLB != 0 {
        // No huge pages: hugetlbfs is not there to back the file.
        return Err(Errno::EINVAL);
    }
    let (perm, seals) = if flags & MFD_NOEXEC_SEAL != 0 {
        (0o666, F_SEAL_EXEC)
    } else if flags & MFD_ALLOW_SEALING != 0 {
        (0o777, 0)
    } else {
        (0o777, F_SEAL_SEAL)
    };
    let cred = ctx.cred();
    let owner = crate::fs::inode::Owner { uid: cred.fsuid, gid: cred.fsgid };
    let inode: Arc<dyn Inode> = crate::fs::tmpfs::unnamed_file(perm, seals, owner);
    let dentry = crate::fs::dentry::unnamed(&alloc::format!("memfd:{name}"), inode.clone());
    let f = OpenFile::with_dentry(Arc::new(InodeFile::new(inode)), c::O_RDWR | c::O_LARGEFILE, dentry);
    install(ctx, f, flags & MFD_CLOEXEC != 0)
}

/// F_GET_SEALS and F_ADD_SEALS.
pub fn fcntl_seals(f: &OpenFile, cmd: u32, seals: u32) -> SysResult {
    let inode = f.ops.inode();
    if cmd == c::F_GET_SEALS {
        return inode.and_then(|i| i.seals()).map(u64::from).ok_or(Errno::EINVAL);
    }
    // Linux's order: the open mode, the bits, then whether the file
    // takes seals at all.
    if !f.writable() {
        return Err(Errno::EPERM);
    }
    if seals & !F_ALL_SEALS != 0 {
        return Err(Errno::EINVAL);
    }
    let inode = inode.ok_or(Errno::EINVAL)?;
    let held = inode.seals().ok_or(Errno::EINVAL)?;
    if held & F_SEAL_SEAL != 0 {
        return Err(Errno::EPERM);
    }
    if seals & F_SEAL_WRITE != 0 && held & F_SEAL_WRITE == 0 && mapped_writable_shared(inode) {
        return Err(Errno::EBUSY);
    }
    inode.add_seals(seals)?;
    Ok(0)
}

/// Whether some process maps `inode` shared from a description open for
/// writing (Linux's `i_mmap_writable`).
fn mapped_writable_shared(inode: &Arc<dyn Inode>) -> bool {
    let mut seen: alloc::vec::Vec<crate::mm::Vm> = alloc::vec::Vec::new();
    for p in crate::proc::all_processes() {
        let Ok(vm) = p.vm() else { continue };
        if seen.iter().any(|v| Arc::ptr_eq(v, &vm)) {
            continue;
        }
        if vm.lock().maps_writable_shared(inode) {
            return true;
        }
        if seen.try_reserve(1).is_ok() {
            seen.push(vm);
        }
    }
    false
}
