//! Segments: the GDT and TSS of each CPU.
//!
//! Long mode ignores most of segmentation, but the GDT still names the
//! kernel and user code/data selectors that SYSCALL/SYSRET and IRET need,
//! and the TSS holds the stacks the CPU switches to: `rsp0` for entries
//! from user mode, and the IST stacks for double faults and NMIs, which must
//! work even when the current stack is what broke.

use core::arch::asm;

use crate::percpu::MAX_CPUS;
use crate::sync::SpinLock;

pub const KERNEL_CS: u16 = 0x08;
pub const KERNEL_DS: u16 = 0x10;
pub const USER_DS: u16 = 0x18 | 3;
pub const USER_CS: u16 = 0x20 | 3;
const TSS_SELECTOR: u16 = 0x28;

/// IST slots (1-based as the IDT encodes them).
pub const IST_DOUBLE_FAULT: u8 = 1;
pub const IST_NMI: u8 = 2;
const IST_STACK_SIZE: usize = 16 * 1024;

#[repr(C, packed(4))]
#[derive(Clone, Copy)]
struct Tss {
    reserved0: u32,
    rsp: [u64; 3],
    reserved1: u64,
    ist: [u64; 7],
    reserved2: u64,
    reserved3: u16,
    iomap_base: u16,
}

#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Gdt([u64; 7]);

#[repr(C, align(16))]
struct IstStack([u8; IST_STACK_SIZE]);

/// One CPU's GDT and TSS, in cache lines of their own: every entry to user
/// mode writes the TSS's rsp0.
#[repr(C, align(64))]
struct CpuTables {
    gdt: Gdt,
    tss: Tss,
}

const EMPTY_TSS: Tss =
    Tss { reserved0: 0, rsp: [0; 3], reserved1: 0, ist: [0; 7], reserved2: 0, reserved3: 0, iomap_base: 104 };

static TABLES: [SpinLock<CpuTables>; MAX_CPUS] =
    [const { SpinLock::new(CpuTables { gdt: Gdt([0; 7]), tss: EMPTY_TSS }) }; MAX_CPUS];

// The IST stacks are only ever touched by the CPU on exception entry.
static mut IST_STACKS: [[IstStack; 2]; MAX_CPUS] =
    [const { [const { IstStack([0; IST_STACK_SIZE]) }, const { IstStack([0; IST_STACK_SIZE]) }] }; MAX_CPUS];

/// Loads the GDT and TSS for `cpu`.
pub(crate) fn init(cpu: usize) {
    let mut tables = TABLES[cpu].lock();
    // SAFETY: only the address is taken; the CPU owns the contents.
    let ist_base = unsafe { core::ptr::addr_of!(IST_STACKS[cpu]) } as u64;
    tables.tss.ist[(IST_DOUBLE_FAULT - 1) as usize] = ist_base + IST_STACK_SIZE as u64;
    tables.tss.ist[(IST_NMI - 1) as usize] = ist_base + 2 * IST_STACK_SIZE as u64;

    let tss_addr = core::ptr::addr_of!(tables.tss) as u64;
    // rsp0 sits at offset 4 of the TSS; user-mode entry writes it directly.
    crate::percpu::set_tss_rsp0_ptr(cpu, tss_addr + 4);
    let tss_limit = (core::mem::size_of::<Tss>() - 1) as u64;
    let tss_low = (tss_limit & 0xffff)
        | ((tss_addr & 0xff_ffff) << 16)
        | (0x89 << 40)
        | (((tss_limit >> 16) & 0xf) << 48)
        | (((tss_addr >> 24) & 0xff) << 56);
    tables.gdt = Gdt([
        0,
        0x00af_9a00_0000_ffff, // kernel code, 64-bit
        0x00cf_9200_0000_ffff, // kernel data
        0x00cf_f200_0000_ffff, // user data
        0x00af_fa00_0000_ffff, // user code, 64-bit
        tss_low,
        tss_addr >> 32,
    ]);

    #[repr(C, packed)]
    struct Pointer {
        limit: u16,
        base: u64,
    }
    let ptr = Pointer { limit: (core::mem::size_of::<Gdt>() - 1) as u16, base: core::ptr::addr_of!(tables.gdt) as u64 };
    // SAFETY: the GDT lives in a static for the life of the kernel and its
    // selectors match the ones the rest of the kernel uses; reloading CS via
    // a far return keeps executing the next instruction.
    unsafe {
        asm!(
            "lgdt [{ptr}]",
            "push {cs}",
            "lea {tmp}, [rip + 2f]",
            "push {tmp}",
            "retfq",
            "2:",
            "mov ss, {ds:x}",
            "mov ds, {ds:x}",
            "mov es, {ds:x}",
            "ltr {tss:x}",
            ptr = in(reg) &ptr,
            cs = const KERNEL_CS as u64,
            ds = in(reg) KERNEL_DS as u64,
            tss = in(reg) TSS_SELECTOR as u64,
            // Written before `ds` and `tss` are read: it must not share a
            // register with them, so `out`, not `lateout`.
            tmp = out(reg) _,
        );
    }
}

/// Sets the stack the CPU switches to when an interrupt or exception
/// arrives from user mode on `cpu`.
pub fn set_kernel_entry_stack(cpu: usize, top: u64) {
    TABLES[cpu].lock().tss.rsp[0] = top;
}
