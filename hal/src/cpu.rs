//! Single instructions and CPU state: CPUID, MSRs, control registers,
//! interrupt flag, halting and the time-stamp counter.

use core::arch::asm;
use core::arch::x86_64::{__cpuid_count, CpuidResult};

pub fn cpuid(leaf: u32, subleaf: u32) -> CpuidResult {
    // CPUID is available on every x86_64 CPU and has no memory effects.
    __cpuid_count(leaf, subleaf)
}

pub(crate) fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: only called by this crate with MSRs that exist on every CPU
    // Kiln supports or after checking the matching CPUID bit.
    unsafe { asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// # Safety
/// Writing an MSR can change paging, segmentation or interrupt behaviour;
/// the caller states why the value is right.
pub(crate) unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: forwarded to the caller.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32, options(nostack, preserves_flags))
    };
}

pub fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: RDTSC only reads a counter.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

pub fn interrupts_enabled() -> bool {
    let flags: u64;
    // SAFETY: reading RFLAGS through the stack has no other effect.
    unsafe { asm!("pushfq; pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags & (1 << 9) != 0
}

pub fn enable_interrupts() {
    // Not `nomem`: this must be a compiler barrier, or memory accesses
    // made under a lock or with interrupts masked (a spin lock's release,
    // say) could be moved past it, into the window with interrupts on.
    // SAFETY: handlers are installed before the kernel can call this (the
    // IDT is loaded in `crate::init`), so any interrupt has somewhere to go.
    unsafe { asm!("sti", options(nostack)) };
}

pub fn disable_interrupts() {
    // Not `nomem`, as for `enable_interrupts`: accesses meant to happen
    // with interrupts masked must not be hoisted above this.
    // SAFETY: masking interrupts cannot break memory safety.
    unsafe { asm!("cli", options(nostack)) };
}

/// Enables interrupts and halts in one step, so a wakeup interrupt that
/// arrives between the two cannot be missed.
pub fn enable_interrupts_and_halt() {
    // SAFETY: as in `enable_interrupts`; STI's one-instruction shadow
    // makes the pair atomic.
    // makes the pair atomic. Not `nomem`: a lock released just before
    // must be released before the CPU halts with interrupts on.
    unsafe { asm!("sti; hlt", options(nostack)) };
}

pub fn halt() {
    // SAFETY: HLT waits for the next interrupt.
    unsafe { asm!("hlt", options(nostack)) };
}

pub fn pause() {
    core::hint::spin_loop();
}

pub(crate) fn read_cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// Reads DR6 (why the last debug exception happened) and resets it to
/// its idle value: the CPU never clears the status bits itself.
pub(crate) fn take_dr6() -> u64 {
    let v: u64;
    // SAFETY: DR6 only reports debug conditions; reading it and writing
    // its architectural reset value (all status bits clear) changes
    // nothing else.
    unsafe {
        asm!("mov {}, dr6", out(reg) v, options(nomem, nostack, preserves_flags));
        asm!("mov dr6, {}", in(reg) 0xffff_0ff0u64, options(nomem, nostack, preserves_flags));
    }
    v
}

pub(crate) fn read_cr3() -> u64 {
    let v: u64;
    // SAFETY: reading CR3 has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// # Safety
/// `root` must be the physical address of a PML4 that maps all kernel code,
/// data and stacks in use.
pub(crate) unsafe fn write_cr3(root: u64) {
    // SAFETY: forwarded to the caller.
    unsafe { asm!("mov cr3, {}", in(reg) root, options(nostack, preserves_flags)) };
}

pub(crate) fn read_cr4() -> u64 {
    let v: u64;
    // SAFETY: reading CR4 has no side effects.
    unsafe { asm!("mov {}, cr4", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// # Safety
/// The caller must only set feature bits the CPU supports and whose
/// consequences it has prepared for.
pub(crate) unsafe fn write_cr4(v: u64) {
    // SAFETY: forwarded to the caller.
    unsafe { asm!("mov cr4, {}", in(reg) v, options(nostack, preserves_flags)) };
}

/// Invalidates the TLB entry for one virtual address on this CPU.
pub(crate) fn invlpg(addr: u64) {
    // SAFETY: dropping a TLB entry only makes the next access walk the tables.
    unsafe { asm!("invlpg [{}]", in(reg) addr, options(nostack, preserves_flags)) };
}

/// What the boot CPU reports about itself, for the banner and for feature
/// decisions.
#[derive(Clone, Copy, Debug)]
pub struct CpuInfo {
    pub vendor: [u8; 12],
    pub brand: [u8; 48],
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    pub x2apic: bool,
    pub tsc_deadline: bool,
    pub invariant_tsc: bool,
    pub nx: bool,
    pub smep: bool,
    pub smap: bool,
    pub gb_pages: bool,
    /// RDTSCP, which also returns IA32_TSC_AUX (the vDSO's getcpu).
    pub rdtscp: bool,
    /// RDPID, which returns IA32_TSC_AUX alone.
    pub rdpid: bool,
}

impl CpuInfo {
    pub fn read() -> CpuInfo {
        let leaf0 = cpuid(0, 0);
        let mut vendor = [0u8; 12];
        vendor[0..4].copy_from_slice(&leaf0.ebx.to_le_bytes());
        vendor[4..8].copy_from_slice(&leaf0.edx.to_le_bytes());
        vendor[8..12].copy_from_slice(&leaf0.ecx.to_le_bytes());
        let leaf1 = cpuid(1, 0);
        let base_family = (leaf1.eax >> 8) & 0xf;
        let family = if base_family == 0xf { base_family + ((leaf1.eax >> 20) & 0xff) } else { base_family };
        let model = ((leaf1.eax >> 4) & 0xf) | (((leaf1.eax >> 16) & 0xf) << 4);
        let leaf7 = if leaf0.eax >= 7 { cpuid(7, 0) } else { CpuidResult { eax: 0, ebx: 0, ecx: 0, edx: 0 } };
        let max_ext = cpuid(0x8000_0000, 0).eax;
        let ext1 = if max_ext >= 0x8000_0001 { cpuid(0x8000_0001, 0).edx } else { 0 };
        let mut brand = [0u8; 48];
        if max_ext >= 0x8000_0004 {
            for (i, leaf) in (0x8000_0002u32..=0x8000_0004).enumerate() {
                let r = cpuid(leaf, 0);
                for (j, word) in [r.eax, r.ebx, r.ecx, r.edx].iter().enumerate() {
                    brand[i * 16 + j * 4..i * 16 + j * 4 + 4].copy_from_slice(&word.to_le_bytes());
                }
            }
        }
        let invariant_tsc = max_ext >= 0x8000_0007 && cpuid(0x8000_0007, 0).edx & (1 << 8) != 0;
        CpuInfo {
            vendor,
            brand,
            family,
            model,
            stepping: leaf1.eax & 0xf,
            x2apic: leaf1.ecx & (1 << 21) != 0,
            tsc_deadline: leaf1.ecx & (1 << 24) != 0,
            invariant_tsc,
            nx: ext1 & (1 << 20) != 0,
            smep: leaf7.ebx & (1 << 7) != 0,
            smap: leaf7.ebx & (1 << 20) != 0,
            gb_pages: ext1 & (1 << 26) != 0,
            rdtscp: ext1 & (1 << 27) != 0,
            rdpid: leaf7.ecx & (1 << 22) != 0,
        }
    }

    pub fn vendor_str(&self) -> &str {
        core::str::from_utf8(&self.vendor).unwrap_or("?")
    }

    pub fn brand_str(&self) -> &str {
        let end = self.brand.iter().position(|&b| b == 0).unwrap_or(self.brand.len());
        core::str::from_utf8(&self.brand[..end]).unwrap_or("?").trim()
    }
}

/// A hardware random number (RDRAND), if the CPU has the instruction and
/// it delivered within a few tries.
pub fn rdrand() -> Option<u64> {
    if cpuid(1, 0).ecx & (1 << 30) == 0 {
        return None;
    }
    for _ in 0..10 {
        let value: u64;
        let ok: u8;
        // SAFETY: RDRAND exists (CPUID checked) and only writes registers.
        unsafe { asm!("rdrand {v}", "setc {ok}", v = out(reg) value, ok = out(reg_byte) ok, options(nomem, nostack)) };
        if ok != 0 {
            return Some(value);
        }
    }
    None
}

/// Whether the CPU has SSE4.2's `crc32` instruction (CPUID.1:ECX bit 20),
/// asked once.
fn has_crc32() -> bool {
    use core::sync::atomic::{AtomicU8, Ordering};
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = cpuid(1, 0).ecx & (1 << 20) != 0;
            KNOWN.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

/// Continues a raw CRC32C (Castagnoli, reflected, no pre- or
/// post-inversion: the instruction's own step) over `data` with the
/// `crc32` instruction, eight bytes at a time, as Linux's `crc32c-intel`
/// does; `None` when the CPU has no SSE4.2. ext4's metadata checksums
/// (a 4 KiB directory leaf per create) spend about a fifth of the
/// instructions of the table-driven form.
pub fn crc32c(crc: u32, data: &[u8]) -> Option<u32> {
    if !has_crc32() {
        return None;
    }
    let mut wide = u64::from(crc);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // SAFETY: the CPU has `crc32` (checked above); it reads and
        // writes only these registers and the flags.
        unsafe { asm!("crc32 {c}, {v}", c = inout(reg) wide, v = in(reg) v, options(pure, nomem, nostack)) };
    }
    let mut c = wide as u32;
    for &b in words.remainder() {
        // SAFETY: as above, one byte at a time.
        unsafe { asm!("crc32 {c:e}, {b}", c = inout(reg) c, b = in(reg_byte) b, options(pure, nomem, nostack)) };
    }
    Some(c)
}
