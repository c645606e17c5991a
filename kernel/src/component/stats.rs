//! Invocation counts per edge (caller → callee) and the text of
//! `/proc/kiln/components`.
//!
//! The kernel counts the invocations it carries (every `NR_INVOKE`); the
//! direct calls inside a merged domain never reach it, so the runtime's
//! stub counts those in the caller's count page (`domain`), read here.
//! A caller is a Linux process, the kernel (its tests), or a component.

use alloc::string::String;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use super::{components, domain};

/// Components the edge table has room for (the images are fewer).
pub(super) const MAX_COMPONENTS: usize = 16;

/// Who made an invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Process,
    Kernel,
    Component(usize),
}

impl Caller {
    fn row(self) -> usize {
        match self {
            Caller::Process => 0,
            Caller::Kernel => 1,
            Caller::Component(i) => 2 + i,
        }
    }
}

const ROWS: usize = MAX_COMPONENTS + 2;
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ZERO_ROW: [AtomicU64; MAX_COMPONENTS] = [ZERO; MAX_COMPONENTS];
/// Invocations through the kernel, by caller row and callee index.
static EDGES: [[AtomicU64; MAX_COMPONENTS]; ROWS] = [ZERO_ROW; ROWS];

/// Counts one invocation the kernel carries from `caller` to `callee`.
pub(super) fn count(caller: Caller, callee: usize) {
    if let Some(cell) = EDGES.get(caller.row()).and_then(|r| r.get(callee)) {
        cell.fetch_add(1, Ordering::Relaxed);
    }
}

/// Invocations from `caller` to `callee`: (through the kernel, direct).
pub fn edge(caller: Caller, callee: usize) -> (u64, u64) {
    let kernel = EDGES.get(caller.row()).and_then(|r| r.get(callee)).map_or(0, |c| c.load(Ordering::Relaxed));
    let direct = match caller {
        Caller::Component(i) => {
            let caps = components().get(i).map_or(&[][..], |c| &c.caps[..]);
            let calls = domain::direct_calls(i);
            caps.iter().zip(calls).filter(|(t, _)| **t == callee).map(|(_, n)| n).sum()
        }
        _ => 0,
    };
    (kernel, direct)
}

/// `/proc/kiln/components`: one line per component (index, name, domain,
/// invocations served through the kernel, faults), then one line per
/// edge that carried any invocation (through the kernel, and direct).
pub fn proc_text(_path: &'static str) -> String {
    let mut s = String::new();
    let all = components();
    let _ = writeln!(s, "{:<3} {:<12} {:>6} {:>12} {:>8}", "id", "name", "domain", "invocations", "faults");
    for (i, c) in all.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:<3} {:<12} {:>6} {:>12} {:>8}",
            i,
            c.name,
            domain::domain_of(i),
            c.invocations.load(Ordering::Relaxed),
            c.faults.load(Ordering::Relaxed)
        );
    }
    let _ = writeln!(s, "\n{:<12} {:<12} {:>12} {:>12}", "caller", "callee", "kernel", "direct");
    let callers = [Caller::Process, Caller::Kernel].into_iter().chain((0..all.len()).map(Caller::Component));
    for caller in callers {
        let name = match caller {
            Caller::Process => "process",
            Caller::Kernel => "kernel",
            Caller::Component(i) => all[i].name,
        };
        for (j, callee) in all.iter().enumerate() {
            let (kernel, direct) = edge(caller, j);
            if kernel + direct > 0 {
                let _ = writeln!(s, "{:<12} {:<12} {:>12} {:>12}", name, callee.name, kernel, direct);
            }
        }
    }
    s
}
