//! Interrupt controllers: the legacy PIC (masked), the local APIC (x2APIC
//! when the CPU has it, xAPIC otherwise) and the IO APIC that routes ISA
//! interrupts such as the serial port's.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::cpu;
use crate::mm::PhysAddr;
use crate::mmio::Mmio;
use crate::port::Port;
use crate::sync::Once;
use crate::trap::SPURIOUS_VECTOR;

const IA32_APIC_BASE: u32 = 0x1B;
const X2APIC_MSR_BASE: u32 = 0x800;
const XAPIC_PHYS: u64 = 0xFEE0_0000;
const IOAPIC_PHYS: u64 = 0xFEC0_0000;

const REG_ID: u32 = 0x20;
const REG_EOI: u32 = 0xB0;
const REG_ICR_LOW: u32 = 0x300;
const REG_ICR_HIGH: u32 = 0x310;
const REG_SVR: u32 = 0xF0;
const REG_LVT_TIMER: u32 = 0x320;
const REG_TIMER_INIT: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3E0;

const LVT_MASKED: u32 = 1 << 16;
const LVT_PERIODIC: u32 = 1 << 17;

static X2APIC: AtomicBool = AtomicBool::new(false);
static XAPIC: Once<Mmio> = Once::new();
static IOAPIC: Once<Mmio> = Once::new();
/// Local APIC timer ticks per second at divide-by-16.
static TIMER_HZ: AtomicU32 = AtomicU32::new(0);

fn read(reg: u32) -> u32 {
    if X2APIC.load(Ordering::Relaxed) {
        cpu::rdmsr(X2APIC_MSR_BASE + (reg >> 4)) as u32
    } else {
        XAPIC.get().map_or(0, |m| m.read_u32(u64::from(reg)))
    }
}

fn write(reg: u32, value: u32) {
    if X2APIC.load(Ordering::Relaxed) {
        // SAFETY: x2APIC register MSRs, enabled in `init_local`; the caller
        // passes a register of the APIC model and a value for it.
        unsafe { cpu::wrmsr(X2APIC_MSR_BASE + (reg >> 4), u64::from(value)) };
    } else if let Some(m) = XAPIC.get() {
        m.write_u32(u64::from(reg), value);
    }
}

/// Remaps the 8259 PICs away from the exception vectors and masks them:
/// the APICs take over, but a PIC left at vectors 8..15 would make a stray
/// IRQ look like a double fault.
fn disable_pic() {
    let (cmd1, data1, cmd2, data2) = (Port::new(0x20), Port::new(0x21), Port::new(0xA0), Port::new(0xA1));
    cmd1.write_u8(0x11);
    cmd2.write_u8(0x11);
    data1.write_u8(0x20);
    data2.write_u8(0x28);
    data1.write_u8(4);
    data2.write_u8(2);
    data1.write_u8(1);
    data2.write_u8(1);
    data1.write_u8(0xFF);
    data2.write_u8(0xFF);
}

/// Enables this CPU's local APIC; returns whether x2APIC mode is in use.
/// The boot CPU calls this first and decides the mode for every CPU.
pub(crate) fn init_local(use_x2apic: bool) -> bool {
    disable_pic();
    enable_local(use_x2apic)
}

/// Enables an application processor's local APIC in the mode the boot
/// CPU chose.
pub(crate) fn init_local_ap() {
    enable_local(is_x2apic());
}

fn enable_local(use_x2apic: bool) -> bool {
    let base = cpu::rdmsr(IA32_APIC_BASE);
    if use_x2apic {
        // SAFETY: CPUID reported x2APIC; bit 11 enables the APIC and bit 10
        // selects x2APIC mode, keeping the base address.
        unsafe { cpu::wrmsr(IA32_APIC_BASE, base | (1 << 11) | (1 << 10)) };
        X2APIC.store(true, Ordering::Relaxed);
    } else {
        if XAPIC.get().is_none() {
            XAPIC.set(Mmio::new(PhysAddr(XAPIC_PHYS), 0x1000).expect("xAPIC window"));
        }
        // SAFETY: bit 11 enables the APIC at its default base address.
        unsafe { cpu::wrmsr(IA32_APIC_BASE, base | (1 << 11)) };
    }
    write(REG_SVR, 0x100 | u32::from(SPURIOUS_VECTOR));
    write(REG_LVT_TIMER, LVT_MASKED);
    X2APIC.load(Ordering::Relaxed)
}

pub fn is_x2apic() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

pub fn local_apic_id() -> u32 {
    let id = read(REG_ID);
    if is_x2apic() {
        id
    } else {
        id >> 24
    }
}

/// Delivery modes of the interrupt command register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ipi {
    /// A fixed interrupt at a vector.
    Fixed(u8),
    /// INIT, level assert: resets an application processor to wait for SIPI.
    Init,
    /// Start-up at physical page `page` (address `page << 12`, below 1 MiB).
    Startup(u8),
}

/// Sends `ipi` to the CPU with local APIC id `apic_id`.
pub(crate) fn send_ipi(apic_id: u32, ipi: Ipi) {
    let low = match ipi {
        Ipi::Fixed(vector) => u32::from(vector),
        Ipi::Init => 0x4500,
        Ipi::Startup(page) => 0x4600 | u32::from(page),
    };
    // An interrupt handler sending its own IPI between the two xAPIC
    // writes would redirect this one.
    let _irq = crate::sync::IrqGuard::new();
    if is_x2apic() {
        // SAFETY: the x2APIC ICR takes the destination in the high half and
        // the command in the low half in one write; the command is one of
        // the three above.
        unsafe { cpu::wrmsr(X2APIC_MSR_BASE + (REG_ICR_LOW >> 4), (u64::from(apic_id) << 32) | u64::from(low)) };
    } else {
        // The xAPIC ICR has one slot: wait until the previous IPI left
        // (delivery status, bit 12) before writing the next.
        while read(REG_ICR_LOW) & (1 << 12) != 0 {
            cpu::pause();
        }
        write(REG_ICR_HIGH, apic_id << 24);
        write(REG_ICR_LOW, low);
    }
}

pub(crate) fn end_of_interrupt() {
    write(REG_EOI, 0);
}

/// Measures the TSC and the APIC timer against the PIT three times and
/// keeps the median of each: under emulation one 10 ms window can be
/// stretched by the host, and a single bad sample would skew every clock.
pub(crate) fn calibrate() -> (u64, u32) {
    let mut samples = [calibrate_once(), calibrate_once(), calibrate_once()];
    samples.sort_unstable_by_key(|s| s.0);
    let tsc = samples[1].0;
    samples.sort_unstable_by_key(|s| s.1);
    let apic = samples[1].1;
    TIMER_HZ.store(apic, Ordering::Relaxed);
    (tsc, apic)
}

/// One measurement of the TSC and the APIC timer against the PIT over 10 ms.
fn calibrate_once() -> (u64, u32) {
    const PIT_HZ: u64 = 1_193_182;
    const MS: u64 = 10;
    let gate = Port::new(0x61);
    let count = (PIT_HZ * MS / 1000) as u16;

    write(REG_TIMER_DIVIDE, 0x3);
    write(REG_LVT_TIMER, LVT_MASKED);

    // Channel 2, lobyte/hibyte, mode 0 (interrupt on terminal count).
    gate.write_u8((gate.read_u8() & !0x02) | 0x01);
    Port::new(0x43).write_u8(0xB0);
    Port::new(0x42).write_u8(count as u8);
    Port::new(0x42).write_u8((count >> 8) as u8);
    // Restart the count by toggling the gate.
    let g = gate.read_u8() & !0x01;
    gate.write_u8(g);
    gate.write_u8(g | 0x01);

    let tsc_start = cpu::rdtsc();
    write(REG_TIMER_INIT, u32::MAX);
    while gate.read_u8() & 0x20 == 0 {
        cpu::pause();
    }
    let apic_elapsed = u32::MAX - read(REG_TIMER_CURRENT);
    let tsc_elapsed = cpu::rdtsc() - tsc_start;
    write(REG_TIMER_INIT, 0);

    let tsc_hz = tsc_elapsed * 1000 / MS;
    let apic_hz = (u64::from(apic_elapsed) * 1000 / MS) as u32;
    TIMER_HZ.store(apic_hz, Ordering::Relaxed);
    (tsc_hz, apic_hz)
}

/// Starts the periodic local APIC timer at `hz` interrupts per second.
pub fn start_periodic_timer(vector: u8, hz: u32) {
    let ticks = (TIMER_HZ.load(Ordering::Relaxed) / hz.max(1)).max(1);
    write(REG_TIMER_DIVIDE, 0x3);
    write(REG_LVT_TIMER, u32::from(vector) | LVT_PERIODIC);
    write(REG_TIMER_INIT, ticks);
}

/// The APIC timer's input frequency after the divider.
pub fn timer_frequency() -> u32 {
    TIMER_HZ.load(Ordering::Relaxed)
}

/// Finds the IO APIC at `phys` (from the ACPI MADT, or the PC default).
pub(crate) fn init_ioapic(phys: Option<u64>) {
    IOAPIC.set(Mmio::new(PhysAddr(phys.unwrap_or(IOAPIC_PHYS)), 0x20).expect("IO APIC window"));
    let max_entry = (ioapic_read(1) >> 16) & 0xff;
    for irq in 0..=max_entry {
        ioapic_write(0x10 + 2 * irq, 1 << 16); // masked
        ioapic_write(0x11 + 2 * irq, 0);
    }
}

fn ioapic_read(reg: u32) -> u32 {
    let io = IOAPIC.get().expect("IO APIC used before init");
    io.write_u32(0, reg);
    io.read_u32(0x10)
}

fn ioapic_write(reg: u32, value: u32) {
    let io = IOAPIC.get().expect("IO APIC used before init");
    io.write_u32(0, reg);
    io.write_u32(0x10, value);
}

/// Routes ISA interrupt `irq` (edge, active high) to `vector` on the CPU
/// with local APIC id `apic_id`.
pub fn route_isa_irq(irq: u8, vector: u8, apic_id: u32) {
    let reg = 0x10 + 2 * u32::from(irq);
    ioapic_write(reg + 1, (apic_id & 0xff) << 24);
    ioapic_write(reg, u32::from(vector));
}

/// Serializes the IO APIC's index/data register pair once devices route
/// and mask pins at run time, from several CPUs.
static IOAPIC_LOCK: crate::sync::SpinLock<()> = crate::sync::SpinLock::new(());

/// Routes IO APIC input `pin` (a PCI INTx line: level-triggered, active
/// high as QEMU's chipsets deliver it) to `vector` on the CPU with local
/// APIC id `apic_id`, masked or not.
pub(crate) fn route_level_irq(pin: u8, vector: u8, apic_id: u32, masked: bool) {
    let _guard = IOAPIC_LOCK.lock();
    let reg = 0x10 + 2 * u32::from(pin);
    ioapic_write(reg + 1, (apic_id & 0xff) << 24);
    ioapic_write(reg, u32::from(vector) | 1 << 15 | u32::from(masked) << 16);
}

/// Masks or unmasks IO APIC input `pin`, keeping its routing.
pub(crate) fn set_pin_masked(pin: u8, masked: bool) {
    let _guard = IOAPIC_LOCK.lock();
    let reg = 0x10 + 2 * u32::from(pin);
    let low = ioapic_read(reg);
    ioapic_write(reg, (low & !(1 << 16)) | u32::from(masked) << 16);
}

/// Number of IO APIC inputs.
pub(crate) fn ioapic_pins() -> u8 {
    let _guard = IOAPIC_LOCK.lock();
    (((ioapic_read(1) >> 16) & 0xff) + 1) as u8
}
