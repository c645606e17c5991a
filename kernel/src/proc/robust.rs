//! Robust futexes: the list of held robust mutexes a thread registers with
//! `set_robust_list`, which the kernel walks when the thread dies without
//! unlocking them (killed, or its process exiting under it), marking each
//! one owner-dead and waking a waiter, as Linux does
//! (Documentation/locking/robust-futex-ABI.rst).
//!
//! Everything here is user memory and may be garbage: every read is
//! checked, the walk is bounded, and a bad list just ends the walk.

use linux_abi::consts::{FUTEX_OWNER_DIED, FUTEX_TID_MASK, FUTEX_WAITERS};
use linux_abi::errno::Errno;

use super::task::Task;
use crate::mm::aspace::Vm;
use crate::mm::uaccess;

/// `struct robust_list_head`: `list.next`, `futex_offset`,
/// `list_op_pending`; what `set_robust_list` must be given the size of.
pub const HEAD_SIZE: u64 = 24;

/// Linux's ROBUST_LIST_LIMIT: a longer (or circular) list is cut here.
const LIST_LIMIT: usize = 2048;

/// Walks the exiting (or exec'ing) thread's list once and forgets it.
pub fn release(t: &Task, vm: &Vm) {
    let head = t.robust_list.swap(0, core::sync::atomic::Ordering::AcqRel);
    if head != 0 {
        let _ = walk(vm, head, t.tid() as u32);
    }
}

fn walk(vm: &Vm, head: u64, tid: u32) -> Result<(), Errno> {
    let mut entry = uaccess::read_u64(vm, head)?;
    let offset = uaccess::read_u64(vm, head + 8)? as i64;
    let pending = uaccess::read_u64(vm, head + 16)?;
    for _ in 0..LIST_LIMIT {
        // Bit 0 marks a PI futex; the list pointer is the rest.
        let node = entry & !1;
        if node == head {
            break;
        }
        // Read the next link before the word is touched: once it is
        // released, another thread may reuse the memory.
        let next = uaccess::read_u64(vm, node)?;
        if node != pending & !1 {
            owner_died(vm, node.wrapping_add_signed(offset), tid);
        }
        entry = next;
    }
    // The lock or unlock that was under way when the thread died.
    if pending != 0 {
        let addr = (pending & !1).wrapping_add_signed(offset);
        // Died between taking a free lock and recording it, or after
        // releasing it: a waiter may already sleep on the word; wake it
        // (Linux does the same for a pending entry whose word is 0).
        if uaccess::read_u32(vm, addr) == Ok(0) {
            super::futex::wake(vm, addr, 1, u32::MAX);
        } else {
            owner_died(vm, addr, tid);
        }
    }
    Ok(())
}

/// If the futex word at `addr` is owned by `tid`, marks it owner-dead
/// (keeping the waiters bit) and wakes one waiter.
fn owner_died(vm: &Vm, addr: u64, tid: u32) {
    let Ok(mut value) = uaccess::read_u32(vm, addr) else { return };
    loop {
        if value & FUTEX_TID_MASK != tid {
            return;
        }
        let new = (value & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
        match uaccess::cmpxchg_u32(vm, addr, value, new) {
            Ok(found) if found == value => break,
            // Someone changed it under us (a waiter set FUTEX_WAITERS): retry.
            Ok(found) => value = found,
            Err(_) => return,
        }
    }
    if value & FUTEX_WAITERS != 0 {
        super::futex::wake(vm, addr, 1, u32::MAX);
    }
}
