//! The new program's initial stack, laid out byte for byte as Linux 6.1
//! lays it out without address randomization, and the limits on argument
//! space (E2BIG).
//!
//! From the top (`STACK_TOP`) down: 8 zero bytes; the strings, contiguous
//! and in the order argv[0..], envp[0..], then the filename (AT_EXECFN),
//! so the last argument's NUL is followed by the first environment string
//! as programs like nginx's setproctitle expect; below the string block
//! rounded down to 16, "x86_64" (AT_PLATFORM) and the 16 AT_RANDOM bytes;
//! then, 16-byte aligned, argc, the argv and envp pointer arrays with
//! their NULLs, and the auxiliary vector.

use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;

use super::Binprm;
use crate::mm::aspace::{AddressSpace, STACK_SIZE, STACK_TOP};
use crate::mm::PAGE_SIZE;

/// Longest single argument or environment string, NUL included (Linux's
/// MAX_ARG_STRLEN, 32 pages).
pub const MAX_ARG_STRLEN: usize = 32 * PAGE_SIZE as usize;
/// Linux's ARG_MAX: argument space every stack size allows.
const ARG_MAX: u64 = 32 * PAGE_SIZE;
/// Linux's _STK_LIM (8 MiB): argument space is at most 3/4 of it.
const STK_LIM: u64 = 8 << 20;
const PLATFORM: &[u8] = b"x86_64\0";

/// Bytes argument and environment strings and their pointers may take,
/// for a stack limit of `rlimit_stack` (Linux's bprm_stack_limits: a
/// quarter of the stack limit, at most 6 MiB, at least 128 KiB).
pub fn arg_space(rlimit_stack: u64) -> u64 {
    (STK_LIM / 4 * 3).min(rlimit_stack / 4).max(ARG_MAX)
}

fn strings_len(list: &[Vec<u8>]) -> u64 {
    list.iter().map(|s| s.len() as u64 + 1).sum()
}

/// E2BIG unless the strings (filename included) and one pointer for each
/// argument and environment string fit in `bprm.arg_limit`.
pub(super) fn check_space(bprm: &Binprm) -> Result<(), Errno> {
    let pointers = (bprm.argv.len().max(1) + bprm.envp.len()) as u64 * 8;
    if pointers >= bprm.arg_limit {
        return Err(Errno::E2BIG);
    }
    let strings = bprm.filename.len() as u64 + 1 + strings_len(&bprm.argv) + strings_len(&bprm.envp);
    if strings > bprm.arg_limit - pointers {
        return Err(Errno::E2BIG);
    }
    Ok(())
}

/// The values only the loader knows; the rest of the vector is fixed or
/// comes from the CPU.
pub(super) struct AuxValues {
    pub vdso: Option<u64>,
    pub phdr: u64,
    pub phnum: u64,
    pub base: u64,
    pub entry: u64,
    pub uid: u32,
    pub euid: u32,
    pub gid: u32,
    pub egid: u32,
    /// The program gained privileges (set-id bits, capabilities): libc
    /// runs it in secure mode.
    pub secure: bool,
}

/// Writes the stack into `vm`; returns the initial stack pointer and the
/// auxiliary vector's bytes as written (for /proc/<pid>/auxv).
pub(super) fn build(vm: &mut AddressSpace, bprm: &Binprm, aux: &AuxValues) -> Result<(u64, Vec<u8>), Errno> {
    let mut strings: Vec<u8> = Vec::new();
    let total = strings_len(&bprm.argv) + strings_len(&bprm.envp) + bprm.filename.len() as u64 + 1;
    strings.try_reserve_exact(total as usize).map_err(|_| Errno::ENOMEM)?;
    let block_start = STACK_TOP - 8 - total;
    let mut pointers: Vec<u64> = Vec::new();
    pointers.try_reserve_exact(bprm.argv.len() + bprm.envp.len()).map_err(|_| Errno::ENOMEM)?;
    for s in bprm.argv.iter().chain(bprm.envp.iter()) {
        pointers.push(block_start + strings.len() as u64);
        strings.extend_from_slice(s);
        strings.push(0);
    }
    let execfn = block_start + strings.len() as u64;
    strings.extend_from_slice(bprm.filename.as_bytes());
    strings.push(0);

    let aligned = block_start & !15;
    let platform = aligned - PLATFORM.len() as u64;
    let random_at = platform - 16;
    let mut random = [0u8; 16];
    crate::random::fill(&mut random);

    let mut auxv: Vec<(u64, u64)> = Vec::new();
    auxv.try_reserve_exact(24).map_err(|_| Errno::ENOMEM)?;
    if let Some(vdso) = aux.vdso {
        auxv.push((c::AT_SYSINFO_EHDR, vdso));
    }
    auxv.extend_from_slice(&[
        (c::AT_MINSIGSTKSZ, crate::proc::signal::max_frame_size()),
        (c::AT_HWCAP, u64::from(hal::cpu::cpuid(1, 0).edx)),
        (c::AT_PAGESZ, PAGE_SIZE),
        (c::AT_CLKTCK, c::USER_HZ),
        (c::AT_PHDR, aux.phdr),
        (c::AT_PHENT, 56),
        (c::AT_PHNUM, aux.phnum),
        (c::AT_BASE, aux.base),
        (c::AT_FLAGS, 0),
        (c::AT_ENTRY, aux.entry),
        (c::AT_UID, u64::from(aux.uid)),
        (c::AT_EUID, u64::from(aux.euid)),
        (c::AT_GID, u64::from(aux.gid)),
        (c::AT_EGID, u64::from(aux.egid)),
        (c::AT_SECURE, u64::from(aux.secure)),
        (c::AT_RANDOM, random_at),
        // HWCAP2 bits: ring-3 MWAIT and FSGSBASE, neither offered.
        (c::AT_HWCAP2, 0),
        (c::AT_EXECFN, execfn),
        (c::AT_PLATFORM, platform),
        (c::AT_NULL, 0),
    ]);
    let argc = bprm.argv.len() as u64;
    let items = argc + 1 + bprm.envp.len() as u64 + 1 + 1;
    let sp = (random_at - auxv.len() as u64 * 16 - items * 8) & !15;
    // `check_space` keeps the strings within 6 MiB of the 8 MiB stack.
    if STACK_TOP - sp > STACK_SIZE {
        return Err(Errno::E2BIG);
    }

    let mut table: Vec<u8> = Vec::new();
    table.try_reserve_exact(((items + auxv.len() as u64 * 2) * 8) as usize).map_err(|_| Errno::ENOMEM)?;
    let mut word = |w: u64| table.extend_from_slice(&w.to_le_bytes());
    word(argc);
    let (argv_ptrs, envp_ptrs) = pointers.split_at(bprm.argv.len());
    argv_ptrs.iter().for_each(|&p| word(p));
    word(0);
    envp_ptrs.iter().for_each(|&p| word(p));
    word(0);
    for &(key, value) in &auxv {
        word(key);
        word(value);
    }
    let mut auxv_bytes: Vec<u8> = Vec::new();
    // The vector follows argc and the two NULL-ended pointer arrays.
    let auxv_at = items as usize * 8;
    auxv_bytes.try_reserve_exact(table.len() - auxv_at).map_err(|_| Errno::ENOMEM)?;
    auxv_bytes.extend_from_slice(&table[auxv_at..]);
    vm.write_remote(block_start, &strings)?;
    vm.write_remote(platform, PLATFORM)?;
    vm.write_remote(random_at, &random)?;
    vm.write_remote(sp, &table)?;
    Ok((sp, auxv_bytes))
}
