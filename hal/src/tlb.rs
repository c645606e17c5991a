//! TLB shootdown: making other CPUs forget translations this CPU changed.
//!
//! Every CPU records the page-table root it has loaded in [`LOADED_ROOT`].
//! A change that removes or narrows a user mapping flushes the local TLB
//! and then asks exactly the CPUs that have the same root loaded to flush
//! the range too, waiting until they did: only then may the old frame be
//! reused. One request is in flight at a time; a CPU waiting to send its
//! own request answers the one in flight, so two CPUs shooting at each
//! other cannot deadlock.
//!
//! The root is published before CR3 is written and the page-table entry is
//! written before the roots are read, both with sequentially consistent
//! ordering: a CPU the sender does not see yet loads CR3 afterwards, which
//! flushes every non-global entry and walks the already updated tables.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::percpu::{cpu_id, MAX_CPUS};

/// Above this many pages a full flush (reloading CR3) is cheaper.
const FULL_FLUSH_PAGES: u64 = 32;

static LOADED_ROOT: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    /// Invalidate `start..end` if the root is loaded.
    Range = 0,
    /// The root is going away: switch to the kernel's tables if loaded.
    Leave = 1,
    /// Kernel (global) translations in `start..end`, whatever is loaded.
    Kernel = 2,
}

struct Request {
    busy: AtomicBool,
    kind: AtomicU8,
    root: AtomicU64,
    start: AtomicU64,
    end: AtomicU64,
    /// CPUs that still have to answer.
    pending: AtomicU64,
}

static REQUEST: Request = Request {
    busy: AtomicBool::new(false),
    kind: AtomicU8::new(0),
    root: AtomicU64::new(0),
    start: AtomicU64::new(0),
    end: AtomicU64::new(0),
    pending: AtomicU64::new(0),
};

static SENT: AtomicU64 = AtomicU64::new(0);

/// Loads `root` into CR3 on this CPU, publishing it first.
///
/// # Safety
/// As for [`crate::cpu::write_cr3`]: `root` maps all kernel code, data and
/// stacks in use.
pub(crate) unsafe fn load_root(root: u64) {
    LOADED_ROOT[cpu_id()].store(root, Ordering::SeqCst);
    // SAFETY: forwarded to the caller.
    unsafe { crate::cpu::write_cr3(root) };
}

/// The other CPUs that have `root` loaded.
fn remote_cpus(root: u64) -> u64 {
    core::sync::atomic::fence(Ordering::SeqCst);
    let me = cpu_id();
    let mut mask = 0;
    for (cpu, loaded) in LOADED_ROOT.iter().enumerate().take(crate::smp::cpu_count()) {
        if cpu != me && loaded.load(Ordering::SeqCst) == root {
            mask |= 1 << cpu;
        }
    }
    mask
}

fn other_cpus() -> u64 {
    let all = (1u64 << crate::smp::cpu_count()) - 1;
    all & !(1 << cpu_id())
}

/// Flushes `start..end` of the address space `root` on every CPU that has
/// it loaded.
pub(crate) fn shoot_range(root: u64, start: u64, end: u64) {
    if start < end {
        // This CPU too, with no migration between it and the others: the
        // caller's own flush may have happened on the CPU it ran on before
        // a preemption, and this one may hold the root loaded from before.
        let _irq = crate::sync::IrqGuard::new();
        flush_local(root, start, end);
        send(Kind::Range, root, start, end);
    }
}

/// Makes every CPU that still has `root` loaded, this one included,
/// switch to the kernel's tables, before the tables are freed. A CPU left
/// on a freed root would later take a new table at the same address for
/// one already loaded, and keep the old translations.
pub(crate) fn leave_everywhere(root: u64) {
    let _irq = crate::sync::IrqGuard::new();
    if crate::cpu::read_cr3() & !0xfff == root {
        // SAFETY: the kernel's tables map everything the kernel uses.
        unsafe { load_root(crate::paging::kernel_root().0) };
    }
    send(Kind::Leave, root, 0, 0);
}

/// Flushes kernel translations in `start..end` on every other CPU (the
/// caller flushed this one).
pub(crate) fn shoot_kernel_range(start: u64, end: u64) {
    if start < end {
        send(Kind::Kernel, 0, start, end);
    }
}

/// Interrupts the other CPUs that have `root` loaded (every other CPU
/// when `None`) and waits until each has taken the interrupt. Taking an
/// interrupt is a full memory barrier and IRET serializes the core, which
/// is what membarrier(2) promises its callers.
pub fn barrier_ipi(root: Option<crate::mm::PhysAddr>) {
    match root {
        Some(r) => send(Kind::Range, r.0, 0, 0),
        None => send(Kind::Kernel, 0, 0, 0),
    }
}

fn send(kind: Kind, root: u64, start: u64, end: u64) {
    let mask = if kind == Kind::Kernel { other_cpus() } else { remote_cpus(root) };
    if mask == 0 {
        return;
    }
    let _irq = crate::sync::IrqGuard::new();
    while REQUEST.busy.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        answer();
        crate::cpu::pause();
    }
    REQUEST.kind.store(kind as u8, Ordering::Relaxed);
    REQUEST.root.store(root, Ordering::Relaxed);
    REQUEST.start.store(start, Ordering::Relaxed);
    REQUEST.end.store(end, Ordering::Relaxed);
    REQUEST.pending.store(mask, Ordering::SeqCst);
    SENT.fetch_add(1, Ordering::Relaxed);
    for cpu in 0..MAX_CPUS {
        if mask & (1 << cpu) != 0 {
            crate::smp::send_vector(cpu, crate::trap::TLB_SHOOTDOWN_VECTOR);
        }
    }
    while REQUEST.pending.load(Ordering::Acquire) != 0 {
        crate::cpu::pause();
    }
    REQUEST.busy.store(false, Ordering::Release);
}

/// Carries out the request in flight if it names this CPU (from the
/// shootdown interrupt, and from a CPU waiting to send its own).
pub(crate) fn answer() {
    let bit = 1u64 << cpu_id();
    if REQUEST.pending.load(Ordering::Acquire) & bit == 0 {
        return;
    }
    let root = REQUEST.root.load(Ordering::Relaxed);
    if REQUEST.kind.load(Ordering::Relaxed) == Kind::Kernel as u8 {
        invlpg_range(REQUEST.start.load(Ordering::Relaxed), REQUEST.end.load(Ordering::Relaxed));
    } else if crate::cpu::read_cr3() & !0xfff == root {
        if REQUEST.kind.load(Ordering::Relaxed) == Kind::Leave as u8 {
            // SAFETY: the kernel's tables map everything the kernel uses.
            unsafe { load_root(crate::paging::kernel_root().0) };
        } else {
            let (start, end) = (REQUEST.start.load(Ordering::Relaxed), REQUEST.end.load(Ordering::Relaxed));
            flush_local(root, start, end);
        }
    }
    REQUEST.pending.fetch_and(!bit, Ordering::AcqRel);
}

/// Flushes `start..end` on this CPU if `root` is loaded here.
pub(crate) fn flush_local(root: u64, start: u64, end: u64) {
    if crate::cpu::read_cr3() & !0xfff != root {
        return;
    }
    let pages = (end - start) / 4096;
    if pages > FULL_FLUSH_PAGES {
        // SAFETY: reloading the current root only drops non-global entries.
        unsafe { crate::cpu::write_cr3(root) };
    } else {
        invlpg_range(start, end);
    }
}

fn invlpg_range(start: u64, end: u64) {
    let mut va = start;
    while va < end {
        crate::cpu::invlpg(va);
        va += 4096;
    }
}

/// Shootdown requests sent since boot (for tests and statistics).
pub fn shootdowns_sent() -> u64 {
    SENT.load(Ordering::Relaxed)
}
