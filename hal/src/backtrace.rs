//! Symbolized backtraces from frame pointers.
//!
//! The kernel is built with frame pointers, so the return addresses form a
//! linked list through `rbp`. Names come from the symbol table the host tool
//! writes into the `.ksyms` section after linking (see
//! [`kiln_util::ksyms`]); until it is written, addresses print bare.

use core::fmt::Write;

use kiln_util::ksyms::SymbolTable;

extern "C" {
    static __ksyms_start: u8;
    static __ksyms_end: u8;
}

fn symbol_table() -> Option<SymbolTable<'static>> {
    // SAFETY: the linker script reserves [__ksyms_start, __ksyms_end) as an
    // initialized, read-only section that nothing writes at run time.
    let bytes = unsafe {
        let start = core::ptr::addr_of!(__ksyms_start);
        let end = core::ptr::addr_of!(__ksyms_end);
        core::slice::from_raw_parts(start, end.offset_from(start) as usize)
    };
    SymbolTable::parse(bytes)
}

/// Name and offset of the function containing `addr`.
pub fn symbolize(addr: u64) -> Option<(&'static str, u64)> {
    symbol_table()?.lookup(addr)
}

const MAX_FRAMES: usize = 32;

/// Prints `pc` and then every return address reachable from `rbp`.
pub(crate) fn print_from(out: &mut dyn Write, pc: u64, rbp: u64) {
    let _ = writeln!(out, "backtrace:");
    print_frame(out, 0, pc);
    let mut fp = rbp;
    for depth in 1..MAX_FRAMES {
        if fp == 0 || !fp.is_multiple_of(8) {
            break;
        }
        let (Ok(next), Ok(ret)) = (crate::extable::probe_read_u64(fp), crate::extable::probe_read_u64(fp + 8)) else {
            break;
        };
        if ret == 0 {
            break;
        }
        print_frame(out, depth, ret);
        if next <= fp {
            break;
        }
        fp = next;
    }
}

fn print_frame(out: &mut dyn Write, depth: usize, addr: u64) {
    match symbolize(addr) {
        Some((name, offset)) => {
            let _ = writeln!(out, "  #{depth:<2} {addr:#018x} {name}+{offset:#x}");
        }
        None => {
            let _ = writeln!(out, "  #{depth:<2} {addr:#018x} ?");
        }
    }
}

/// Prints the backtrace of the caller.
pub fn print_current(out: &mut dyn Write) {
    let rbp: u64;
    // SAFETY: reading rbp has no effect.
    unsafe { core::arch::asm!("mov {}, rbp", out(reg) rbp, options(nomem, nostack, preserves_flags)) };
    let pc = print_current as *const () as u64;
    print_from(out, pc, rbp);
}
