//! Deliberate crashes, so that tests can check what a kernel bug looks
//! like: each one raises a real CPU exception that nothing recovers from,
//! and the fatal-exception report must name it.

use core::arch::asm;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// Read from an unmapped kernel address outside the fault-recovery table.
    PageFault,
    /// Integer division by zero.
    DivideError,
    /// `ud2`.
    InvalidOpcode,
    /// Unbounded recursion into the stack's guard page.
    StackOverflow,
}

pub fn crash(kind: Crash) -> ! {
    match kind {
        Crash::PageFault => {
            let addr = crate::extable::PROBE_WINDOW + 0x4000;
            // SAFETY: the read faults (PROBE_WINDOW is never mapped) and
            // the fault is fatal by design; no Rust state is touched.
            unsafe { asm!("mov {tmp}, [{addr}]", addr = in(reg) addr, tmp = out(reg) _, options(nostack, readonly)) };
        }
        Crash::DivideError => {
            // SAFETY: the division faults before it writes rax/rdx, which
            // are declared clobbered anyway.
            unsafe {
                asm!("xor edx, edx", "div {zero}", zero = in(reg) 0u64, inout("rax") 1u64 => _, out("rdx") _, options(nostack, nomem))
            };
        }
        Crash::InvalidOpcode => {
            // SAFETY: ud2 raises #UD and changes nothing.
            unsafe { asm!("ud2", options(nostack, nomem)) };
        }
        Crash::StackOverflow => {
            recurse(0);
        }
    }
    panic!("deliberate crash {kind:?} did not fault");
}

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let frame = [depth; 64];
    let next = core::hint::black_box(&frame)[depth as usize % 64] + 1;
    if next == u64::MAX {
        return next;
    }
    recurse(next) + core::hint::black_box(1)
}
