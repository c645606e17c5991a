//! PCI functions: enumeration, the claim, and the device handle a driver
//! owns.
//!
//! [`init`] walks the buses once (bus 0, then behind every bridge),
//! decoding each function's identity and BARs. A driver gets a function
//! with [`claim`], once: the [`PciDevice`] it receives is the only way to
//! its BARs ([`PciDevice::map_bar`], [`PciDevice::io_bar`], each at most
//! once), its DMA memory ([`PciDevice::dma`]), its interrupts
//! ([`PciDevice::request_irqs`]) and bus mastering. The hal keeps a
//! [`Revoker`] to every device: revoking turns bus mastering off, masks
//! and frees the vectors, kills the register windows and frees idle DMA
//! memory, and a driver holding the handle afterwards only sees dead
//! registers and errors. Dropping the handle does the same and releases
//! the claim, so a restarted driver can claim the function again.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use kiln_util::pci::{self as layout, cap, command, msix, reg, Bar, BarKind, Capability, MsixInfo};

pub use super::config::{mechanism, Config, Mechanism, PciAddress};
use super::dma::DmaPool;
use super::irq::{IrqError, IrqHandler, IrqKind, IrqVector, Route, VectorCore};
use super::mmio::{MmioRegion, PortRegion, RegionCore};
use super::window::{Window, WindowError};
use crate::sync::{Once, SpinLock};

/// What enumeration learned about a function.
#[derive(Clone, Copy, Debug)]
pub struct PciInfo {
    pub address: PciAddress,
    pub vendor_id: u16,
    pub device_id: u16,
    pub class: u8,
    pub subclass: u8,
    pub prog_if: u8,
    pub revision: u8,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    /// INTA#..INTD# as 1..4, 0 for none.
    pub interrupt_pin: u8,
    /// The IO APIC input the firmware wired INTx to (0xFF: none).
    pub interrupt_line: u8,
    pub bars: [Option<Bar>; 6],
}

struct Entry {
    info: PciInfo,
    claimed: bool,
}

static FUNCTIONS: SpinLock<Vec<Entry>> = SpinLock::new(Vec::new());
static SCANNED: Once<()> = Once::new();
static NEXT_OWNER: AtomicUsize = AtomicUsize::new(1);

/// Enumerates the PCI functions (once; later calls return at once).
pub fn init() {
    if SCANNED.get().is_some() {
        return;
    }
    let mut found = Vec::new();
    scan_bus(0, &mut found, 0);
    let mut functions = FUNCTIONS.lock();
    if functions.is_empty() {
        functions.extend(found.into_iter().map(|info| Entry { info, claimed: false }));
    }
    SCANNED.set(());
    super::iommu::init();
}

fn scan_bus(bus: u8, found: &mut Vec<PciInfo>, depth: u32) {
    if depth > 8 {
        return;
    }
    for device in 0..32 {
        let first = Config::new(PciAddress { bus, device, function: 0 });
        if first.read16(reg::VENDOR_ID) == 0xFFFF {
            continue;
        }
        let functions = if first.read8(reg::HEADER_TYPE) & 0x80 != 0 { 8 } else { 1 };
        for function in 0..functions {
            let config = Config::new(PciAddress { bus, device, function });
            if config.read16(reg::VENDOR_ID) == 0xFFFF {
                continue;
            }
            let header = config.read8(reg::HEADER_TYPE) & 0x7F;
            if header == 1 {
                let secondary = config.read8(reg::SECONDARY_BUS);
                if secondary > bus {
                    scan_bus(secondary, found, depth + 1);
                }
            }
            if header == 0 {
                quiesce(&config);
            }
            let info = read_info(&config, header == 0);
            if found.try_reserve(1).is_ok() {
                found.push(info);
            }
        }
    }
}

/// Stops a function the firmware may have left running before any
/// driver owns it: bus mastering off (flushed by reading the register
/// back), so it cannot DMA into frames the kernel hands out again, and
/// memory and I/O decoding off, except on display controllers (the
/// legacy VGA window) and bridges (whose decoding forwards to the
/// functions behind them; their bus mastering is left alone for the
/// same reason: the caller passes endpoints only). A driver turns each
/// back on as it claims the function: `map_bar`, `io_bar`, MSI-X setup
/// and `set_bus_master`.
fn quiesce(config: &Config) {
    const DISPLAY: u8 = 0x03;
    const BRIDGE: u8 = 0x06;
    let cmd = config.read16(reg::COMMAND);
    let mut clear = command::BUS_MASTER;
    if !matches!(config.read8(reg::CLASS), DISPLAY | BRIDGE) {
        clear |= command::IO_SPACE | command::MEMORY_SPACE;
    }
    if cmd & clear == 0 {
        return;
    }
    config.write16(reg::COMMAND, cmd & !clear);
    let _ = config.read16(reg::COMMAND);
    if cmd & command::BUS_MASTER != 0 {
        log::warn!("pci {}: bus mastering was on at boot; turned off until a driver claims it", config.address());
    }
}

fn read_info(config: &Config, has_bars: bool) -> PciInfo {
    let mut bars = [None; 6];
    if has_bars {
        size_bars(config, &mut bars);
    }
    PciInfo {
        address: config.address(),
        vendor_id: config.read16(reg::VENDOR_ID),
        device_id: config.read16(reg::DEVICE_ID),
        class: config.read8(reg::CLASS),
        subclass: config.read8(reg::SUBCLASS),
        prog_if: config.read8(reg::PROG_IF),
        revision: config.read8(reg::REVISION),
        subsystem_vendor_id: if has_bars { config.read16(reg::SUBSYSTEM_VENDOR_ID) } else { 0 },
        subsystem_id: if has_bars { config.read16(reg::SUBSYSTEM_ID) } else { 0 },
        interrupt_pin: config.read8(reg::INTERRUPT_PIN),
        interrupt_line: config.read8(reg::INTERRUPT_LINE),
        bars,
    }
}

/// Sizes each BAR by writing all ones with decoding off, then restores it.
fn size_bars(config: &Config, bars: &mut [Option<Bar>; 6]) {
    let cmd = config.read16(reg::COMMAND);
    config.write16(reg::COMMAND, cmd & !(command::IO_SPACE | command::MEMORY_SPACE));
    let mut i = 0;
    while i < 6 {
        let off = reg::BAR0 + 4 * i as u16;
        let probe = |off: u16| {
            let v = config.read32(off);
            config.write32(off, u32::MAX);
            let m = config.read32(off);
            config.write32(off, v);
            (v, m)
        };
        let (low, low_mask) = probe(off);
        let wide = matches!(layout::bar_kind(low), Some(BarKind::Mem64 { .. })) && i < 5;
        let (high, high_mask) = if wide { probe(off + 4) } else { (0, 0) };
        bars[i] = layout::decode_bar(low, low_mask, high, high_mask);
        i += if wide { 2 } else { 1 };
    }
    config.write16(reg::COMMAND, cmd);
}

/// Every function found, in bus order.
pub fn functions() -> Vec<PciInfo> {
    init();
    FUNCTIONS.lock().iter().map(|e| e.info).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimError {
    NotFound,
    /// Another driver owns it.
    Busy,
    NoMemory,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarError {
    /// No such BAR, or not of the asked kind.
    NoSuchBar,
    /// Already claimed by this device's driver.
    AlreadyClaimed,
    /// The firmware put it over RAM, or it cannot be mapped.
    BadWindow(WindowError),
    Revoked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The header, or a capability the hal manages (MSI, MSI-X).
    Reserved,
    OutOfRange,
}

/// Takes `address` for one driver. A second claim fails until the
/// returned handle is dropped.
pub fn claim(address: PciAddress) -> Result<PciDevice, ClaimError> {
    init();
    let info = {
        let mut functions = FUNCTIONS.lock();
        let entry = functions.iter_mut().find(|e| e.info.address == address).ok_or(ClaimError::NotFound)?;
        if entry.claimed {
            return Err(ClaimError::Busy);
        }
        entry.claimed = true;
        entry.info
    };
    let config = Config::new(address);
    let caps: Vec<Capability> = if config.read16(reg::STATUS) & layout::STATUS_CAP_LIST != 0 {
        layout::capabilities(|o| config.read8(o)).collect()
    } else {
        Vec::new()
    };
    let core = Arc::new(DeviceCore {
        owner: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
        info,
        config,
        caps,
        dma: DmaPool::new(super::iommu::domain_for(address)),
        bars_claimed: AtomicU8::new(0),
        regions: SpinLock::new(Vec::new()),
        ports_revoked: Arc::new(AtomicBool::new(false)),
        revoked: AtomicBool::new(false),
        irq_kind: SpinLock::new(None),
        vectors: SpinLock::new(Vec::new()),
    });
    Ok(PciDevice { core })
}

/// The hal's side of a claimed device.
struct DeviceCore {
    /// Never reused, so a stale vector handle cannot free a later
    /// device's handlers.
    owner: usize,
    info: PciInfo,
    config: Config,
    caps: Vec<Capability>,
    dma: Arc<DmaPool>,
    bars_claimed: AtomicU8,
    regions: SpinLock<Vec<Arc<RegionCore>>>,
    ports_revoked: Arc<AtomicBool>,
    revoked: AtomicBool,
    irq_kind: SpinLock<Option<IrqKind>>,
    /// The driver's vectors, for steering them (gone once it drops them).
    vectors: SpinLock<Vec<Weak<VectorCore>>>,
}

impl DeviceCore {
    /// An id for this device's interrupt handlers.
    fn owner(&self) -> usize {
        self.owner
    }

    fn set_command(&self, set: u16, clear: u16) {
        let cmd = self.config.read16(reg::COMMAND);
        self.config.write16(reg::COMMAND, (cmd & !clear) | set);
    }

    fn cap(&self, id: u8) -> Option<u16> {
        self.caps.iter().find(|c| c.id == id).map(|c| c.offset)
    }

    /// Makes the device harmless: no DMA, no interrupts, dead registers,
    /// idle DMA memory freed. Bus mastering goes off first, and the read
    /// back of the command register flushes the write before any memory
    /// is freed.
    fn revoke(&self) {
        self.revoked.store(true, Ordering::Release);
        self.set_command(command::INTX_DISABLE, command::BUS_MASTER);
        let _ = self.config.read16(reg::COMMAND);
        if let Some(off) = self.cap(cap::MSIX) {
            let ctl = self.config.read16(off + msix::CONTROL);
            self.config.write16(off + msix::CONTROL, (ctl & !msix::CONTROL_ENABLE) | msix::CONTROL_FUNCTION_MASK);
        }
        if let Some(off) = self.cap(cap::MSI) {
            let ctl = self.config.read16(off + layout::msi::CONTROL);
            self.config.write16(off + layout::msi::CONTROL, ctl & !layout::msi::CONTROL_ENABLE);
        }
        super::irq::release_all(self.owner());
        for r in self.regions.lock().iter() {
            r.revoke();
        }
        self.ports_revoked.store(true, Ordering::Release);
        self.dma.revoke();
        self.dma.release_idle(true);
    }
}

/// A claimed PCI function: everything a driver may touch of it.
pub struct PciDevice {
    core: Arc<DeviceCore>,
}

impl PciDevice {
    pub fn info(&self) -> &PciInfo {
        &self.core.info
    }

    pub fn address(&self) -> PciAddress {
        self.core.info.address
    }

    pub fn is_revoked(&self) -> bool {
        self.core.revoked.load(Ordering::Acquire)
    }

    pub fn read_config_u8(&self, offset: u16) -> u8 {
        self.core.config.read8(offset)
    }

    pub fn read_config_u16(&self, offset: u16) -> u16 {
        self.core.config.read16(offset)
    }

    pub fn read_config_u32(&self, offset: u16) -> u32 {
        self.core.config.read32(offset)
    }

    /// Writes device-specific configuration space: past the header, and
    /// not inside the MSI or MSI-X capability (the hal's).
    pub fn write_config_u32(&self, offset: u16, value: u32) -> Result<(), ConfigError> {
        self.check_config_write(offset, 4)?;
        self.core.config.write32(offset, value);
        Ok(())
    }

    pub fn write_config_u16(&self, offset: u16, value: u16) -> Result<(), ConfigError> {
        self.check_config_write(offset, 2)?;
        self.core.config.write16(offset, value);
        Ok(())
    }

    pub fn write_config_u8(&self, offset: u16, value: u8) -> Result<(), ConfigError> {
        self.check_config_write(offset, 1)?;
        self.core.config.write8(offset, value);
        Ok(())
    }

    fn check_config_write(&self, offset: u16, size: u16) -> Result<(), ConfigError> {
        if offset < 0x40 {
            return Err(ConfigError::Reserved);
        }
        if offset.checked_add(size).is_none_or(|e| e > self.core.config.len()) || !offset.is_multiple_of(size) {
            return Err(ConfigError::OutOfRange);
        }
        for c in self.core.caps.iter().filter(|c| c.id == cap::MSI || c.id == cap::MSIX) {
            // Both capabilities fit in 24 bytes.
            if offset < c.offset + 24 && c.offset < offset + size {
                return Err(ConfigError::Reserved);
            }
        }
        if self.is_revoked() {
            return Err(ConfigError::Reserved);
        }
        Ok(())
    }

    /// The capability list, as read at claim time.
    pub fn capabilities(&self) -> &[Capability] {
        &self.core.caps
    }

    pub fn bar(&self, index: u8) -> Option<Bar> {
        self.core.info.bars.get(usize::from(index)).copied().flatten()
    }

    fn take_bar(&self, index: u8) -> Result<Bar, BarError> {
        if self.is_revoked() {
            return Err(BarError::Revoked);
        }
        let bar = self.bar(index).ok_or(BarError::NoSuchBar)?;
        let bit = 1u8 << index;
        if self.core.bars_claimed.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return Err(BarError::AlreadyClaimed);
        }
        Ok(bar)
    }

    /// Maps memory BAR `index` uncached, once, and turns memory decoding on.
    pub fn map_bar(&self, index: u8) -> Result<MmioRegion, BarError> {
        let bar = self.take_bar(index)?;
        let unclaim = || self.core.bars_claimed.fetch_and(!(1u8 << index), Ordering::AcqRel);
        if bar.kind == BarKind::Io {
            unclaim();
            return Err(BarError::NoSuchBar);
        }
        let window = Window::map(bar.address, bar.size).map_err(|e| {
            unclaim();
            BarError::BadWindow(e)
        })?;
        let core = RegionCore::new(window);
        self.core.regions.lock().push(core.clone());
        self.core.set_command(command::MEMORY_SPACE, 0);
        Ok(MmioRegion::new(core))
    }

    /// Claims I/O-port BAR `index`, once, and turns I/O decoding on.
    pub fn io_bar(&self, index: u8) -> Result<PortRegion, BarError> {
        let bar = self.take_bar(index)?;
        let (Ok(base), Ok(len)) = (u16::try_from(bar.address), u16::try_from(bar.size)) else {
            return Err(BarError::NoSuchBar);
        };
        if bar.kind != BarKind::Io || base.checked_add(len).is_none() {
            return Err(BarError::NoSuchBar);
        }
        self.core.set_command(command::IO_SPACE, 0);
        Ok(PortRegion::new(base, len, self.core.ports_revoked.clone()))
    }

    /// Lets the device master the bus (DMA, MSI writes) or stops it.
    pub fn set_bus_master(&self, on: bool) {
        if on && self.is_revoked() {
            return;
        }
        if on {
            self.core.set_command(command::BUS_MASTER, 0);
        } else {
            self.core.set_command(0, command::BUS_MASTER);
            let _ = self.core.config.read16(reg::COMMAND);
        }
    }

    /// This device's DMA allocator. Memory from it is freed only once the
    /// device can no longer reach it.
    pub fn dma(&self) -> Arc<DmaPool> {
        self.core.dma.clone()
    }

    /// After the driver reset the device (so it holds no addresses and
    /// does no DMA), idle DMA memory may go back to the kernel. Bus
    /// mastering is off during the release and on again after.
    pub fn release_idle_dma_after_reset(&self) {
        self.set_bus_master(false);
        self.core.dma.release_idle(false);
        self.set_bus_master(true);
    }

    /// Interrupt vectors for `handlers`: one MSI-X entry each when the
    /// device has enough (entry i for handler i), else one MSI or INTx
    /// vector shared by all of them, in that order of preference.
    pub fn request_irqs(&self, handlers: &[Arc<dyn IrqHandler>]) -> Result<Vec<IrqVector>, IrqError> {
        if self.is_revoked() {
            return Err(IrqError::Revoked);
        }
        if handlers.is_empty() {
            return Err(IrqError::Unsupported);
        }
        if self.core.irq_kind.lock().is_some() {
            return Err(IrqError::Unsupported);
        }
        let result = self
            .request_msix(handlers)
            .or_else(|_| self.request_msi(handlers))
            .or_else(|_| self.request_intx(handlers));
        if let Ok(v) = &result {
            *self.core.irq_kind.lock() = v.first().map(|v| v.kind());
            let mut cores = self.core.vectors.lock();
            if cores.try_reserve(v.len()).is_ok() {
                cores.extend(v.iter().map(|v| v.core()));
            }
        }
        result
    }

    fn request_msix(&self, handlers: &[Arc<dyn IrqHandler>]) -> Result<Vec<IrqVector>, IrqError> {
        let off = self.core.cap(cap::MSIX).ok_or(IrqError::Unsupported)?;
        let cfg = &self.core.config;
        let info: MsixInfo = layout::decode_msix(
            cfg.read16(off + msix::CONTROL),
            cfg.read32(off + msix::TABLE),
            cfg.read32(off + msix::PBA),
        )
        .ok_or(IrqError::Unsupported)?;
        if usize::from(info.table_size) < handlers.len() {
            return Err(IrqError::Unsupported);
        }
        let bar = self.bar(info.table_bar).ok_or(IrqError::Unsupported)?;
        if bar.kind == BarKind::Io || u64::from(info.table_offset) + info.table_len() > bar.size {
            return Err(IrqError::Unsupported);
        }
        let window = Window::map(bar.address + u64::from(info.table_offset), info.table_len())
            .map_err(|_| IrqError::Unsupported)?;
        let table = MmioRegion::new(RegionCore::new(window));
        let mut vectors = Vec::new();
        vectors.try_reserve(handlers.len()).map_err(|_| IrqError::NoMemory)?;
        // Mask the function while entries are programmed.
        let ctl = cfg.read16(off + msix::CONTROL);
        cfg.write16(off + msix::CONTROL, ctl | msix::CONTROL_ENABLE | msix::CONTROL_FUNCTION_MASK);
        self.core.set_command(command::MEMORY_SPACE | command::INTX_DISABLE, 0);
        let programmed = self.program_msix(&info, &table, handlers, &mut vectors);
        if let Err(e) = programmed {
            // Back to no MSI-X, so MSI or INTx can be tried cleanly.
            drop(vectors);
            cfg.write16(off + msix::CONTROL, ctl & !msix::CONTROL_ENABLE);
            return Err(e);
        }
        self.core.regions.lock().push(table_core(&table));
        cfg.write16(off + msix::CONTROL, (ctl | msix::CONTROL_ENABLE) & !msix::CONTROL_FUNCTION_MASK);
        Ok(vectors)
    }

    /// One MSI-X table entry and vector per handler, in order.
    fn program_msix(
        &self,
        info: &MsixInfo,
        table: &MmioRegion,
        handlers: &[Arc<dyn IrqHandler>],
        vectors: &mut Vec<IrqVector>,
    ) -> Result<(), IrqError> {
        for (i, h) in handlers.iter().enumerate() {
            let entry = i as u16;
            let base = info.entry_offset(entry).ok_or(IrqError::Unsupported)? - u64::from(info.table_offset);
            let reg =
                |o: u64| table.register::<u32, super::mmio::ReadWrite>(base + o).map_err(|_| IrqError::Unsupported);
            let route = Route::MsiX {
                entry,
                addr_lo: reg(msix::ENTRY_ADDR_LO)?,
                addr_hi: reg(msix::ENTRY_ADDR_HI)?,
                data: reg(msix::ENTRY_DATA)?,
                control: reg(msix::ENTRY_VECTOR_CONTROL)?,
            };
            vectors.push(IrqVector::new_msix(self.core.owner(), h.clone(), route)?);
        }
        Ok(())
    }

    fn request_msi(&self, handlers: &[Arc<dyn IrqHandler>]) -> Result<Vec<IrqVector>, IrqError> {
        let off = self.core.cap(cap::MSI).ok_or(IrqError::Unsupported)?;
        let route = Route::Msi { config: self.core.config.clone(), cap: off };
        let v = IrqVector::new_msi(self.core.owner(), handlers, route)?;
        let cfg = &self.core.config;
        // One vector: Multiple Message Enable (bits 4..6) stays 0.
        let ctl = cfg.read16(off + layout::msi::CONTROL) & !(0x7 << 4);
        cfg.write16(off + layout::msi::CONTROL, ctl | layout::msi::CONTROL_ENABLE);
        self.core.set_command(command::INTX_DISABLE, 0);
        let mut out = Vec::new();
        out.try_reserve(1).map_err(|_| IrqError::NoMemory)?;
        out.push(v);
        Ok(out)
    }

    fn request_intx(&self, handlers: &[Arc<dyn IrqHandler>]) -> Result<Vec<IrqVector>, IrqError> {
        let info = &self.core.info;
        if info.interrupt_pin == 0 || info.interrupt_line == 0xFF {
            return Err(IrqError::Unsupported);
        }
        let v = IrqVector::new_intx(self.core.owner(), info.interrupt_line, handlers)?;
        self.core.set_command(0, command::INTX_DISABLE);
        let mut out = Vec::new();
        out.try_reserve(1).map_err(|_| IrqError::NoMemory)?;
        out.push(v);
        Ok(out)
    }

    /// A handle the kernel keeps to take the device away from its driver.
    pub fn revoker(&self) -> Revoker {
        Revoker { core: self.core.clone() }
    }
}

fn table_core(table: &MmioRegion) -> Arc<RegionCore> {
    table.core()
}

impl Drop for PciDevice {
    fn drop(&mut self) {
        self.core.revoke();
        if let Some(e) = FUNCTIONS.lock().iter_mut().find(|e| e.info.address == self.core.info.address) {
            e.claimed = false;
        }
    }
}

/// The kernel's hold on a claimed device, beside the driver's: it steers
/// the device's interrupts and can revoke it, which leaves the driver a
/// dead device (see the module comment).
#[derive(Clone)]
pub struct Revoker {
    core: Arc<DeviceCore>,
}

impl Revoker {
    pub fn address(&self) -> PciAddress {
        self.core.info.address
    }

    pub fn revoke(&self) {
        self.core.revoke();
    }

    /// How the device's driver takes interrupts, once it asked for them.
    pub fn irq_kind(&self) -> Option<IrqKind> {
        *self.core.irq_kind.lock()
    }

    /// Steers every interrupt vector of the device to `cpu`.
    pub fn set_irq_affinity(&self, cpu: usize) -> Result<(), IrqError> {
        let vectors = self.core.vectors.lock();
        let mut any = false;
        for v in vectors.iter().filter_map(Weak::upgrade) {
            v.set_affinity(cpu)?;
            any = true;
        }
        if any {
            Ok(())
        } else {
            Err(IrqError::Unsupported)
        }
    }
}
