//! Truncating a regular file, or changing a range of it (fallocate's
//! punch, zero, collapse and insert), while processes may have it mapped.
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

/// fallocate's modes that change bytes [offset, offset + len) of
/// `inode`: PUNCH_HOLE and ZERO_RANGE unmap the whole pages of the range
/// from every shared mapping, as Linux's `unmap_mapping_range` does, so
/// the next touch sees the zeros (private copies stay); COLLAPSE_RANGE and
/// INSERT_RANGE move every byte after `offset`, so every page from the one
/// holding it is unmapped, private copies too (Linux's
/// `truncate_pagecache`).
pub fn change_range(inode: &Arc<dyn Inode>, mode: u32, offset: u64, len: u64) -> Result<(), Errno> {
    use linux_abi::fs::{FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE};
    inode.allocate(mode, offset, len)?;
    if !inode.ever_mapped() {
        return Ok(());
    }
    if mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) != 0 {
        let from = offset / PAGE_SIZE * PAGE_SIZE;
        each_vm(|vm| vm.lock().unmap_file_from(inode, from));
        return Ok(());
    }
    let first = offset.div_ceil(PAGE_SIZE);
    let end = offset.saturating_add(len) / PAGE_SIZE;
    if first >= end {
        return Ok(());
    }
    let object = crate::mm::advice::SharedObject::File(inode.clone());
    each_vm(|vm| vm.lock().unmap_object_pages(&object, first, end - first));
    Ok(())
}

/// Runs `f` on every address space once.
fn each_vm(mut f: impl FnMut(&Vm)) {
    let mut visited: Vec<Vm> = Vec::new();
    for p in crate::proc::all_processes() {
        let Ok(vm) = p.vm() else { continue };
        if visited.iter().any(|v| Arc::ptr_eq(v, &vm)) {
            continue;
        }
        f(&vm);
        if visited.try_reserve(1).is_ok() {
            visited.push(vm);
        }
    }
}
