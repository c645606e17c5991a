//! Kernel-mode fault recovery.
//!
//! A few kernel instructions are allowed to fault: reads and copies whose
//! source or destination the kernel does not trust (user memory, probes of
//! possibly unmapped addresses). Each such instruction is listed in the
//! `.kiln_extable` section beside a fixup address. When it faults, the trap
//! handler resumes at the fixup instead of treating the fault as a kernel
//! bug, and the safe wrappers here turn that into an error value.

use core::arch::global_asm;

global_asm!(
    r#"
    .section .text.hal_fallible, "ax"

    /* u64 read: rdi = address; returns rax = value, rdx = 0, or rdx = 1 on fault */
    .global hal_probe_read_u64
hal_probe_read_u64:
    xor edx, edx
10: mov rax, [rdi]
    ret
11: xor eax, eax
    mov edx, 1
    ret

    /* u64 write: rdi = address, rsi = value; returns rax = 0, or 1 on fault */
    .global hal_probe_write_u64
hal_probe_write_u64:
    xor eax, eax
20: mov [rdi], rsi
    ret
21: mov eax, 1
    ret

    /* copy: rdi = dst, rsi = src, rdx = len; returns rax = bytes NOT copied */
    .global hal_copy_fallible
hal_copy_fallible:
    mov rcx, rdx
30: rep movsb
    xor eax, eax
    ret
31: mov rax, rcx
    ret

    .section .kiln_extable, "a"
    .balign 8
    .quad 10b, 11b
    .quad 20b, 21b
    .quad 30b, 31b
"#
);

#[repr(C)]
struct ReadResult {
    value: u64,
    faulted: u64,
}

extern "C" {
    fn hal_probe_read_u64(addr: u64) -> ReadResult;
    fn hal_probe_write_u64(addr: u64, value: u64) -> u64;
    fn hal_copy_fallible(dst: *mut u8, src: *const u8, len: usize) -> usize;
    static __extable_start: [u64; 0];
    static __extable_end: [u64; 0];
}

/// The access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault;

/// Reads a u64 from any kernel-half address, returning `Err(Fault)` instead
/// of crashing when nothing is mapped there.
///
/// Only kernel-half addresses are accepted here: lower-half (user) memory
/// goes through the checked user-copy API, and a kernel-half read cannot
/// have side effects on Rust-visible state because it does not write.
pub fn probe_read_u64(addr: u64) -> Result<u64, Fault> {
    if addr < 0xffff_8000_0000_0000 || !addr.is_multiple_of(8) {
        return Err(Fault);
    }
    // SAFETY: the read instruction is in the extable, so a fault resumes
    // at the fixup; a successful read copies bits into a u64, valid for any
    // bit pattern. Writes are not involved.
    let r = unsafe { hal_probe_read_u64(addr) };
    if r.faulted == 0 {
        Ok(r.value)
    } else {
        Err(Fault)
    }
}

/// Writes a u64 to an address in the reserved probe window only (a region
/// the kernel never maps), so the write can only fault, never corrupt.
/// Exists to test the recovery path for writes.
pub fn probe_write_unmapped(offset: u64, value: u64) -> Result<(), Fault> {
    let addr = PROBE_WINDOW + ((offset % PROBE_WINDOW_SIZE) & !7);
    // SAFETY: `addr` is inside PROBE_WINDOW, which nothing ever maps, and
    // the write instruction is in the extable.
    if unsafe { hal_probe_write_u64(addr, value) } == 0 {
        Ok(())
    } else {
        Err(Fault)
    }
}

/// A kernel-half window that is never mapped; see [`probe_write_unmapped`].
pub const PROBE_WINDOW: u64 = 0xffff_fe00_0000_0000;
const PROBE_WINDOW_SIZE: u64 = 1 << 30;

/// Copies kernel-half memory at `src` into `dst`, stopping at the first
/// unmapped byte. Returns `Err(copied)` with the number of bytes copied
/// before the fault.
pub fn probe_copy(dst: &mut [u8], src: u64) -> Result<(), usize> {
    // The whole range must be in the kernel half (and not wrap around).
    if src < 0xffff_8000_0000_0000 || src.checked_add(dst.len() as u64).is_none() {
        return Err(0);
    }
    // SAFETY: `dst` is an exclusive Rust buffer of exactly `dst.len()`
    // bytes; the source is kernel-half memory that is only read, and any
    // fault on it resumes at the fixup, which reports the bytes left.
    let left = unsafe { hal_copy_fallible(dst.as_mut_ptr(), src as *const u8, dst.len()) };
    if left == 0 {
        Ok(())
    } else {
        Err(dst.len() - left)
    }
}

/// The fixup address for a faulting kernel instruction, if it may fault.
pub(crate) fn fixup_for(rip: u64) -> Option<u64> {
    // SAFETY: the linker script brackets `.kiln_extable` with these symbols;
    // the section holds (fault, fixup) pairs of u64 and is never written.
    let table = unsafe {
        let start = core::ptr::addr_of!(__extable_start) as *const u64;
        let end = core::ptr::addr_of!(__extable_end) as *const u64;
        core::slice::from_raw_parts(start, end.offset_from(start) as usize)
    };
    table.chunks_exact(2).find(|pair| pair[0] == rip).map(|pair| pair[1])
}
