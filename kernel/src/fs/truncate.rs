//! Truncating a regular file, or punching a hole in it, while processes
//! may have it mapped.
//!
//! Linux's truncate unmaps every page of the file past its new end from
//! every process, private copies included, so that touching one again
//! raises SIGBUS instead of showing data the file no longer holds. Kiln
//! has no reverse map from files to mappings: a shrinking truncate of a
//! file that was ever mapped walks the address spaces instead (growing,
//! truncating to the same size, or a file never mapped walks nothing). The file system drops its pages first, so a fault that
//! races the walk already finds the new size.
//!
//! Known gap: a fork that copies its parent's page tables while the walk
//! runs may keep a stale page if the parent was visited before the child
//! was registered.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;

use super::Inode;
use crate::mm::{Vm, PAGE_SIZE};

/// Sets `inode`'s size, and unmaps what lies past a shrunk end.
pub fn truncate(inode: &Arc<dyn Inode>, size: u64) -> Result<(), Errno> {
    let old = inode.metadata().size;
    inode.truncate(size)?;
    if size < old && inode.ever_mapped() {
        // The page holding the new end stays mapped (its tail reads as
        // zero); whole pages past it go.
        let from = size.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let mut visited: Vec<Vm> = Vec::new();
        for p in crate::proc::all_processes() {
            let Ok(vm) = p.vm() else { continue };
            if visited.iter().any(|v| Arc::ptr_eq(v, &vm)) {
                continue;
            }
            vm.lock().unmap_file_from(inode, from);
            if visited.try_reserve(1).is_ok() {
                visited.push(vm);
            }
        }
    }
    Ok(())
}

/// Punches a hole in bytes [offset, offset + len) of `inode`
/// (fallocate's FALLOC_FL_PUNCH_HOLE), and unmaps the whole pages it
/// freed from every shared mapping, as Linux's `unmap_mapping_range`
/// does: the next touch sees the hole's zeros. (Private copies stay.)
pub fn punch_hole(inode: &Arc<dyn Inode>, offset: u64, len: u64) -> Result<(), Errno> {
    use linux_abi::fs::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
    inode.allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, len)?;
    let first = offset.div_ceil(PAGE_SIZE);
    let end = offset.saturating_add(len) / PAGE_SIZE;
    if first >= end || !inode.ever_mapped() {
        return Ok(());
    }
    let object = crate::mm::advice::SharedObject::File(inode.clone());
    let mut visited: Vec<Vm> = Vec::new();
    for p in crate::proc::all_processes() {
        let Ok(vm) = p.vm() else { continue };
        if visited.iter().any(|v| Arc::ptr_eq(v, &vm)) {
            continue;
        }
        vm.lock().unmap_object_pages(&object, first, end - first);
        if visited.try_reserve(1).is_ok() {
            visited.push(vm);
        }
    }
    Ok(())
}
