//! VT-d DMA remapping: with an IOMMU present (QEMU `-machine q35 -device
//! intel-iommu`), every claimed PCI function gets its own domain, whose
//! second-level I/O page table holds exactly the frames of its
//! [`DmaPool`](super::dma::DmaPool). A device reaching anything else (a
//! forged or stale address, another device's buffers, kernel memory)
//! faults, and the fault is recorded for [`take_faults`]. Unclaimed
//! functions have no context entry, so their DMA is blocked outright.
//!
//! I/O virtual addresses are the frames' physical addresses (an identity
//! map restricted to the pool): a [`super::DeviceAddr`] keeps its meaning
//! and its contiguity with no IOVA allocator, and the confinement comes
//! from what the table holds, not from where it puts it.
//!
//! Frames join a domain when its pool takes them from the kernel and
//! leave it, with a domain-selective IOTLB invalidation that drains the
//! device's in-flight DMA and completes before the frames are freed,
//! when the pool gives them back. Invalidation is register-based (QEMU
//! implements it; queued invalidation is not used). The tables live in
//! hal-owned DMA buffers written with the same volatile accesses as rings,
//! and the registers are an [`MmioRegion`]: this module adds no `unsafe`.
//! The layouts are `kiln_util::vtd`'s, tested on the host.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kiln_util::vtd::{self, gcmd, reg, Caps, FaultRecord};

use super::config::PciAddress;
use super::dma::{DmaBuffer, DmaPool};
use super::irq::{IrqHandler, IrqReturn, IrqVector, Route};
use super::mmio::{MmioRegion, ReadWrite, RegionCore};
use super::window::Window;
use crate::mm::{PhysAddr, PAGE_SIZE};
use crate::sync::SpinLock;

/// Set once translation is on.
static ENABLED: AtomicBool = AtomicBool::new(false);
static UNIT: SpinLock<Option<Unit>> = SpinLock::new(None);

/// Spins waiting for a register bit before giving up (the hardware
/// acknowledges within microseconds; QEMU at once).
const SPIN_LIMIT: u32 = 10_000_000;

/// The remapping unit: its registers and the root of its tables.
struct Unit {
    /// What the DMAR said: where the registers are, which devices it covers.
    described: vtd::DmarUnit,
    regs: MmioRegion,
    caps: Caps,
    levels: u8,
    /// Where the unit's own tables come from; never released.
    tables: Arc<DmaPool>,
    root: DmaBuffer,
    /// Bus number -> its context table.
    context: Vec<(u8, DmaBuffer)>,
    domains: Vec<Arc<Domain>>,
}

/// One device's translation domain.
#[derive(Debug)]
pub(crate) struct Domain {
    id: u16,
    source: PciAddress,
    tables: SpinLock<DomainTables>,
}

#[derive(Debug)]
struct DomainTables {
    /// The top-level table, then every lower one (found by address).
    top: DmaBuffer,
    lower: Vec<DmaBuffer>,
}

/// Whether DMA remapping is on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Whether the firmware's DMAR describes a remapping unit Kiln drives
/// (one unit, segment 0, no RMRRs): then [`enabled`] should be true.
pub fn described() -> bool {
    crate::bootinfo::get().acpi.dmar.is_some_and(|d| d.unit.is_some() && d.other_units == 0 && d.rmrrs == 0)
}

/// Frames the unit's tables hold (root, context and I/O page tables):
/// they grow as domains map new memory and are never given back.
pub fn table_frames() -> u64 {
    let unit = UNIT.lock();
    let Some(unit) = unit.as_ref() else { return 0 };
    let lower: usize = unit.domains.iter().map(|d| d.tables.lock().lower.len()).sum();
    (1 + unit.context.len() + unit.domains.len() + lower) as u64
}

/// How many devices have a translation domain.
pub fn domains() -> usize {
    UNIT.lock().as_ref().map_or(0, |u| u.domains.len())
}

/// Turns remapping on if the firmware described a unit Kiln can drive.
/// Runs once, from PCI enumeration, before any device is claimed (so
/// before any driver enables bus mastering).
pub(crate) fn init() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(dmar) = crate::bootinfo::get().acpi.dmar else { return };
    let Some(unit) = dmar.unit else {
        log::warn!("iommu: the DMAR lists no unit for segment 0; DMA is not remapped");
        return;
    };
    if dmar.other_units != 0 || dmar.rmrrs != 0 {
        log::warn!("iommu: {} more unit(s), {} RMRR(s): not enabling remapping", dmar.other_units, dmar.rmrrs);
        return;
    }
    if unit.scopes_dropped != 0 {
        log::warn!("iommu: {} device scope entries not read; their devices stay untranslated", unit.scopes_dropped);
    }
    match Unit::start(unit) {
        Ok(u) => {
            log::info!(
                "iommu: VT-d at {:#x}: {}-level tables, {} fault record(s), {}, translation on",
                unit.register_base,
                u.levels,
                u.caps.fault_records(),
                if unit.include_pci_all { "all devices" } else { "devices in its scope" }
            );
            let regs = u.regs.clone();
            *UNIT.lock() = Some(u);
            ENABLED.store(true, Ordering::Release);
            install_fault_interrupt(&regs);
        }
        Err(why) => log::warn!("iommu: VT-d at {:#x} not enabled: {why}", unit.register_base),
    }
}

impl Unit {
    fn start(described: vtd::DmarUnit) -> Result<Unit, &'static str> {
        let window = Window::map(described.register_base, PAGE_SIZE).map_err(|_| "cannot map registers")?;
        let regs = MmioRegion::new(RegionCore::new(window));
        let caps = Caps { cap: regs.read(reg::CAP).unwrap_or(0), ecap: regs.read(reg::ECAP).unwrap_or(0) };
        let levels = caps.levels().ok_or("no 3- or 4-level second-level tables")?;
        if !caps.coherent() {
            // x86 DMA is coherent for QEMU's emulated unit; a real one
            // without page-walk coherency would need cache flushes of
            // every table write, which this module does not do.
            log::info!("iommu: unit reports no page-walk coherency; relying on QEMU's coherent emulation");
        }
        let tables = DmaPool::new(None);
        let root = tables.alloc(PAGE_SIZE as usize).map_err(|_| "no memory for the root table")?;
        let unit = Unit { described, regs, caps, levels, tables, root, context: Vec::new(), domains: Vec::new() };
        // Masked until the fault interrupt is routed.
        unit.regs.write(reg::FECTL, 1u32 << 31).ok();
        unit.regs.write(reg::RTADDR, unit.root.device_addr().bits()).map_err(|_| "RTADDR")?;
        unit.command(gcmd::SRTP)?;
        unit.invalidate_context()?;
        unit.flush_iotlb(vtd::IOTLB_GLOBAL)?;
        unit.command(gcmd::TE)?;
        Ok(unit)
    }

    /// Issues one global command and waits for its status bit.
    fn command(&self, bit: u32) -> Result<(), &'static str> {
        let status: u32 = self.regs.read(reg::GSTS).map_err(|_| "GSTS")?;
        self.regs.write(reg::GCMD, (status & gcmd::PERSISTENT) | bit).map_err(|_| "GCMD")?;
        self.wait(|u| u.regs.read::<u32>(reg::GSTS).is_ok_and(|s| s & bit != 0))
            .then_some(())
            .ok_or("command timed out")
    }

    fn wait(&self, done: impl Fn(&Unit) -> bool) -> bool {
        (0..SPIN_LIMIT).any(|_| {
            let d = done(self);
            if !d {
                core::hint::spin_loop();
            }
            d
        })
    }

    fn invalidate_context(&self) -> Result<(), &'static str> {
        self.regs.write(reg::CCMD, vtd::CCMD_GLOBAL_INVALIDATE).map_err(|_| "CCMD")?;
        self.wait(|u| u.regs.read::<u64>(reg::CCMD).is_ok_and(|v| v & vtd::CCMD_BUSY == 0))
            .then_some(())
            .ok_or("context invalidation timed out")
    }

    /// Writes the IOTLB invalidate register and waits until the unit says
    /// it is done: every translation it covers is gone and (with the
    /// drain bits) every DMA translated before it has landed.
    fn flush_iotlb(&self, command: u64) -> Result<(), &'static str> {
        let at = self.caps.iotlb_offset() + 8;
        self.regs.write(at, command).map_err(|_| "IOTLB")?;
        self.wait(|u| u.regs.read::<u64>(at).is_ok_and(|v| v & vtd::IOTLB_BUSY == 0))
            .then_some(())
            .ok_or("IOTLB invalidation timed out")
    }

    /// The domain of `source`, made (with its context entry) on first use.
    fn domain(&mut self, source: PciAddress) -> Option<Arc<Domain>> {
        if let Some(d) = self.domains.iter().find(|d| d.source == source) {
            return Some(d.clone());
        }
        // Domain 0 is left unused (with caching mode it is reserved).
        let id = u16::try_from(self.domains.len() + 1).ok().filter(|&id| u32::from(id) < self.caps.domains())?;
        self.domains.try_reserve(1).ok()?;
        self.context.try_reserve(1).ok()?;
        let top = self.tables.alloc(PAGE_SIZE as usize).ok()?;
        let table = top.device_addr().bits();
        let domain = Arc::new(Domain { id, source, tables: SpinLock::new(DomainTables { top, lower: Vec::new() }) });
        let bus = source.bus;
        if !self.context.iter().any(|(b, _)| *b == bus) {
            let ctx = self.tables.alloc(PAGE_SIZE as usize).ok()?;
            let entry = vtd::root_entry(ctx.device_addr().bits());
            self.root.write(usize::from(bus) * 16, entry)?;
            self.context.push((bus, ctx));
        }
        let ctx = &mut self.context.iter_mut().find(|(b, _)| *b == bus)?.1;
        let devfn = usize::from(source.device) << 3 | usize::from(source.function);
        let [low, high] = vtd::context_entry(table, self.levels, id);
        // High half first: the entry turns present with the low half.
        ctx.write(devfn * 16 + 8, high)?;
        ctx.write(devfn * 16, low)?;
        if let Err(why) = self.invalidate_context() {
            log::error!("iommu: {source}: {why}");
        }
        self.domains.push(domain.clone());
        Some(domain)
    }
}

/// The domain a newly claimed device's pool maps into (None when
/// remapping is off: then DMA is untranslated).
pub(crate) fn domain_for(source: PciAddress) -> Option<Arc<Domain>> {
    if !enabled() {
        return None;
    }
    let mut unit = UNIT.lock();
    let unit = unit.as_mut()?;
    if !unit.described.covers(source.bus, source.device, source.function, &bridge_buses) {
        // Not behind the unit: its DMA is not translated (and not
        // confined); the pool ownership rules are what holds for it.
        log::warn!("iommu: {source} is outside the unit's device scope; its DMA is not remapped");
        return None;
    }
    unit.domain(source)
}

/// A PCI bridge's secondary and subordinate bus numbers, for following
/// DMAR device scope paths.
fn bridge_buses(bus: u8, device: u8, function: u8) -> Option<(u8, u8)> {
    let config = super::config::Config::new(PciAddress { bus, device, function });
    if config.read16(kiln_util::pci::reg::VENDOR_ID) == 0xFFFF
        || config.read8(kiln_util::pci::reg::HEADER_TYPE) & 0x7F != 1
    {
        return None;
    }
    let secondary = kiln_util::pci::reg::SECONDARY_BUS;
    Some((config.read8(secondary), config.read8(secondary + 1)))
}

impl Domain {
    /// Lets the device reach `pages` frames at `frame` (at the same
    /// address). False if a table could not be allocated.
    pub(crate) fn map(&self, frame: PhysAddr, pages: u64) -> bool {
        let mut unit = UNIT.lock();
        let Some(unit) = unit.as_mut() else { return false };
        let mut tables = self.tables.lock();
        for page in 0..pages {
            let iova = frame.0 + page * PAGE_SIZE;
            if tables.set_leaf(unit, iova, vtd::sl_entry(iova)).is_none() {
                return false;
            }
        }
        drop(tables);
        if unit.caps.caching_mode() {
            // The unit may have cached "not present" for these pages.
            if let Err(why) = unit.flush_iotlb(vtd::iotlb_domain(self.id)) {
                log::error!("iommu: {}: {why}", self.source);
            }
        }
        true
    }

    /// Takes `pages` frames at `frame` away from the device. True once no
    /// translation of them is cached and any DMA through an old one has
    /// completed; false if the unit did not confirm that (the caller must
    /// then not reuse the frames).
    pub(crate) fn unmap(&self, frame: PhysAddr, pages: u64) -> bool {
        let mut unit = UNIT.lock();
        let Some(unit) = unit.as_mut() else { return false };
        let mut tables = self.tables.lock();
        for page in 0..pages {
            tables.clear_leaf(unit.levels, frame.0 + page * PAGE_SIZE);
        }
        drop(tables);
        match unit.flush_iotlb(vtd::iotlb_domain(self.id)) {
            Ok(()) => true,
            Err(why) => {
                log::error!("iommu: {}: {why}; leaking {pages} page(s)", self.source);
                false
            }
        }
    }
}

impl DomainTables {
    /// The table whose address an entry holds.
    fn table_mut(&mut self, addr: u64) -> Option<&mut DmaBuffer> {
        if self.top.device_addr().bits() == addr {
            return Some(&mut self.top);
        }
        self.lower.iter_mut().find(|t| t.device_addr().bits() == addr)
    }

    /// Writes the leaf entry for `iova`, making the tables on the way.
    fn set_leaf(&mut self, unit: &Unit, iova: u64, entry: u64) -> Option<()> {
        let mut table = self.top.device_addr().bits();
        for level in (2..=unit.levels).rev() {
            let at = vtd::sl_index(iova, level) * 8;
            let next: u64 = self.table_mut(table)?.read(at)?;
            table = if next & vtd::SL_READ != 0 {
                next & vtd::SL_ADDR_MASK
            } else {
                self.lower.try_reserve(1).ok()?;
                let new = unit.tables.alloc(PAGE_SIZE as usize).ok()?;
                let addr = new.device_addr().bits();
                self.lower.push(new);
                self.table_mut(table)?.write(at, vtd::sl_entry(addr))?;
                addr
            };
        }
        self.table_mut(table)?.write(vtd::sl_index(iova, 1) * 8, entry)
    }

    /// Clears the leaf entry for `iova` (tables on the way stay).
    fn clear_leaf(&mut self, levels: u8, iova: u64) {
        let mut table = self.top.device_addr().bits();
        for level in (2..=levels).rev() {
            let Some(next) = self.table_mut(table).and_then(|t| t.read::<u64>(vtd::sl_index(iova, level) * 8)) else {
                return;
            };
            if next & vtd::SL_READ == 0 {
                return;
            }
            table = next & vtd::SL_ADDR_MASK;
        }
        if let Some(t) = self.table_mut(table) {
            t.write(vtd::sl_index(iova, 1) * 8, 0u64);
        }
    }
}

/// A DMA fault the unit recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaFault {
    pub device: PciAddress,
    /// The page the device tried to reach.
    pub addr: u64,
    pub write: bool,
    /// The VT-d fault reason code.
    pub reason: u8,
}

/// Faults read from the unit and not yet taken, oldest first (bounded:
/// past `KEPT_FAULTS` only the count grows).
static RECORDED: SpinLock<Vec<DmaFault>> = SpinLock::new(Vec::new());
const KEPT_FAULTS: usize = 64;
/// Every DMA fault the unit recorded since boot.
static FAULT_COUNT: AtomicU64 = AtomicU64::new(0);
/// The unit's fault event vector (kept for the life of the kernel).
static FAULT_VECTOR: SpinLock<Option<IrqVector>> = SpinLock::new(None);

/// DMA faults recorded since boot.
pub fn fault_count() -> u64 {
    FAULT_COUNT.load(Ordering::Relaxed)
}

/// The unit's fault event: the top half only defers (the records are
/// read under the unit's lock), the bottom half reads and logs them.
struct FaultEvent;

impl IrqHandler for FaultEvent {
    fn top_half(&self) -> IrqReturn {
        IrqReturn::WakeBottomHalf
    }

    fn bottom_half(&self) {
        read_faults();
    }
}

/// Routes the unit's fault event to a vector on this CPU, so faults are
/// logged when they happen; without it they wait for [`take_faults`].
fn install_fault_interrupt(regs: &MmioRegion) {
    let reg = |off| regs.register::<u32, ReadWrite>(off);
    let (Ok(control), Ok(data), Ok(addr), Ok(upper)) =
        (reg(reg::FECTL), reg(reg::FEDATA), reg(reg::FEADDR), reg(reg::FEUADDR))
    else {
        return;
    };
    let Ok(handler) = Arc::try_new(FaultEvent) else { return };
    match IrqVector::new_remapper(handler, Route::Remapper { control, data, addr, upper }) {
        Ok(v) => *FAULT_VECTOR.lock() = Some(v),
        Err(e) => log::warn!("iommu: no fault interrupt ({e:?}); faults are read only when polled"),
    }
}

/// Reads, logs and clears the unit's fault recording registers into
/// `RECORDED`.
fn read_faults() {
    let unit = UNIT.lock();
    let Some(unit) = unit.as_ref() else { return };
    let base = unit.caps.fault_record_offset();
    for i in 0..unit.caps.fault_records() {
        let at = base + i * 16;
        let (Ok(low), Ok(high)) = (unit.regs.read::<u64>(at), unit.regs.read::<u64>(at + 8)) else { continue };
        let Some(FaultRecord { addr, source, reason, write }) = vtd::fault_record(low, high) else { continue };
        unit.regs.write(at + 8, vtd::FAULT_CLEAR).ok();
        let device =
            PciAddress { bus: (source >> 8) as u8, device: ((source >> 3) & 0x1F) as u8, function: (source & 7) as u8 };
        log::warn!(
            "iommu: DMA fault: {device} {} {addr:#x} (reason {reason:#x})",
            if write { "write to" } else { "read of" }
        );
        FAULT_COUNT.fetch_add(1, Ordering::Relaxed);
        let mut recorded = RECORDED.lock();
        if recorded.len() < KEPT_FAULTS && recorded.try_reserve(1).is_ok() {
            recorded.push(DmaFault { device, addr, write, reason });
        }
    }
    let status: u32 = unit.regs.read(reg::FSTS).unwrap_or(0);
    if status & vtd::FSTS_PFO != 0 {
        log::warn!("iommu: fault records overflowed; some faults were not recorded");
    }
    // Both are write-1-to-clear; clearing PPF lets the next fault raise
    // the interrupt again.
    unit.regs.write(reg::FSTS, status & (vtd::FSTS_PFO | vtd::FSTS_PPF)).ok();
}

/// Every DMA fault recorded since the last call (each was logged when
/// read), oldest first. Reads the unit first, so a fault whose interrupt
/// has not been handled yet is included.
pub fn take_faults() -> Vec<DmaFault> {
    read_faults();
    core::mem::take(&mut *RECORDED.lock())
}
