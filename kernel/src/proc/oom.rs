//! The out-of-memory killer.
//!
//! Asked only after the page cache had nothing left to give back.
//!
//! When a page fault finds no free frame, the process holding the most
//! memory (its resident pages) is killed with SIGKILL, as Linux's OOM
//! killer does by default, and the faulting thread waits for that memory
//! to come back and retries, instead of dying itself because it happened
//! to fault at the wrong moment. Init is never chosen. While a victim is
//! still exiting no second one is killed: its memory is on its way back.

use alloc::sync::Arc;

use linux_abi::layout::Siginfo;
use linux_abi::signal as sig;

use super::exit::INIT_PID;
use super::{Process, Task};

/// What the faulting thread does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomOutcome {
    /// Memory was (or is being) released elsewhere: fault again.
    Retry,
    /// This process is the one to go.
    KillSelf,
}

/// How long the faulting thread waits for a victim's memory.
const WAIT_NS: u64 = 2_000_000_000;
const POLL_NS: u64 = 5_000_000;

/// Resident pages of a live process (0 once exited).
fn resident(p: &Process) -> u64 {
    let vm = p.vm.lock().clone();
    vm.map_or(0, |vm| vm.lock().page_table().resident_pages())
}

/// (exiting, zombie): an exiting process that is not yet a zombie still
/// holds, or is still freeing, its memory.
fn exit_state(p: &Process) -> (bool, bool) {
    let st = p.state.lock();
    (st.exiting.is_some(), st.zombie)
}

/// Handles a page fault of `faulting` that found no free frame.
pub fn out_of_memory(faulting: &Arc<Task>) -> OomOutcome {
    // The page cache goes first: dirty pages written back, clean ones
    // dropped. Only when it has nothing to give is a process killed.
    if crate::fs::pagecache::shrink(256) > 0 {
        return OomOutcome::Retry;
    }
    let me = &faulting.process;
    let mut victim: Option<(Arc<Process>, u64)> = None;
    let mut dying: Option<Arc<Process>> = None;
    for p in super::all_processes() {
        if p.pid == INIT_PID {
            continue;
        }
        let (exiting, zombie) = exit_state(&p);
        if zombie {
            continue;
        }
        if exiting {
            if !Arc::ptr_eq(&p, me) {
                dying = Some(p);
            }
            continue;
        }
        let pages = resident(&p);
        if pages == 0 {
            continue;
        }
        if victim.as_ref().is_none_or(|(_, best)| pages > *best) {
            victim = Some((p, pages));
        }
    }
    let target = match (dying, victim) {
        (Some(d), _) => d,
        (None, Some((v, _))) if Arc::ptr_eq(&v, me) => {
            log::warn!("out of memory: killed process {} ({}), the largest", me.pid, me.comm.lock().as_str());
            return OomOutcome::KillSelf;
        }
        (None, Some((v, pages))) => {
            log::warn!(
                "out of memory: killed process {} ({}), {} KiB resident, for a fault in process {}",
                v.pid,
                v.comm.lock().as_str(),
                pages * 4,
                me.pid
            );
            super::signal::send_to_process(&v, Siginfo::kill(sig::SIGKILL, sig::SI_KERNEL, 0, 0));
            v
        }
        (None, None) => return OomOutcome::KillSelf,
    };
    // Wait until the victim is a zombie, or give up and let this process
    // go instead. Its address space leaves before that, but its frames are
    // only free once its last thread has let go of the page tables, which
    // happens before it becomes a zombie.
    let deadline = hal::time::monotonic_ns().saturating_add(WAIT_NS);
    while hal::time::monotonic_ns() < deadline {
        if exit_state(&target).1 {
            return OomOutcome::Retry;
        }
        if me.state.lock().exiting.is_some() {
            // Killed meanwhile: the run loop ends the thread.
            return OomOutcome::Retry;
        }
        crate::sched::sleep_ns(POLL_NS);
    }
    log::warn!("out of memory: process {} did not release its memory in time; killing {}", target.pid, me.pid);
    OomOutcome::KillSelf
}
