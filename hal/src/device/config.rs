//! PCI configuration space access: ECAM (memory-mapped, from the ACPI
//! MCFG) when the firmware has it, else the legacy 0xCF8/0xCFC port pair.
//! ECAM pages are mapped per function, on first use, uncached.

use alloc::collections::BTreeMap;

use kiln_util::pci::{ecam_offset, port_config_address};

use super::mmio::MmioRegion;
use super::window::Window;
use crate::port::Port;
use crate::sync::{Once, SpinLock};

/// A function's address on segment 0: bus, device (0..32), function (0..8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl core::fmt::Display for PciAddress {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "0000:{:02x}:{:02x}.{}", self.bus, self.device, self.function)
    }
}

/// How configuration space is reached on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Ecam { base: u64, bus_start: u8, bus_end: u8 },
    Ports,
}

static MECHANISM: Once<Mechanism> = Once::new();
static ECAM_PAGES: SpinLock<BTreeMap<PciAddress, MmioRegion>> = SpinLock::new(BTreeMap::new());
/// The address/data port pair is one shared register.
static PORT_LOCK: SpinLock<()> = SpinLock::new(());
const CONFIG_ADDRESS: Port = Port::new(0xCF8);
const CONFIG_DATA: u16 = 0xCFC;

pub fn mechanism() -> Mechanism {
    if let Some(m) = MECHANISM.get() {
        return *m;
    }
    let m = match crate::bootinfo::get().acpi.ecam {
        Some(e) => Mechanism::Ecam { base: e.base, bus_start: e.bus_start, bus_end: e.bus_end },
        None => Mechanism::Ports,
    };
    MECHANISM.set(m);
    m
}

/// One function's configuration space. Reads of a missing function or
/// past its space return all ones; writes there are dropped.
#[derive(Clone, Debug)]
pub struct Config {
    addr: PciAddress,
    ecam: Option<MmioRegion>,
}

impl Config {
    pub(crate) fn new(addr: PciAddress) -> Config {
        let ecam = match mechanism() {
            Mechanism::Ecam { base, bus_start, bus_end } if (bus_start..=bus_end).contains(&addr.bus) => {
                ecam_page(base, addr)
            }
            _ => None,
        };
        Config { addr, ecam }
    }

    pub fn address(&self) -> PciAddress {
        self.addr
    }

    /// Bytes of configuration space: 4096 with ECAM, 256 through ports.
    pub fn len(&self) -> u16 {
        if self.ecam.is_some() {
            4096
        } else {
            256
        }
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    fn port(&self, offset: u16) -> Option<Port> {
        if offset >= 256 {
            return None;
        }
        let a = self.addr;
        CONFIG_ADDRESS.write_u32(port_config_address(a.bus, a.device, a.function, offset));
        Some(Port::new(CONFIG_DATA + (offset & 3)))
    }

    pub fn read8(&self, offset: u16) -> u8 {
        match &self.ecam {
            Some(r) => r.read::<u8>(u64::from(offset)).unwrap_or(u8::MAX),
            None => {
                let _g = PORT_LOCK.lock();
                self.port(offset).map_or(u8::MAX, |p| p.read_u8())
            }
        }
    }

    pub fn read16(&self, offset: u16) -> u16 {
        match &self.ecam {
            Some(r) => r.read::<u16>(u64::from(offset)).unwrap_or(u16::MAX),
            None => {
                let _g = PORT_LOCK.lock();
                self.port(offset).filter(|_| offset & 1 == 0).map_or(u16::MAX, |p| p.read_u16())
            }
        }
    }

    pub fn read32(&self, offset: u16) -> u32 {
        match &self.ecam {
            Some(r) => r.read::<u32>(u64::from(offset)).unwrap_or(u32::MAX),
            None => {
                let _g = PORT_LOCK.lock();
                self.port(offset).filter(|_| offset & 3 == 0).map_or(u32::MAX, |p| p.read_u32())
            }
        }
    }

    pub(crate) fn write8(&self, offset: u16, value: u8) {
        match &self.ecam {
            Some(r) => {
                let _ = r.write(u64::from(offset), value);
            }
            None => {
                let _g = PORT_LOCK.lock();
                if let Some(p) = self.port(offset) {
                    p.write_u8(value);
                }
            }
        }
    }

    pub(crate) fn write16(&self, offset: u16, value: u16) {
        match &self.ecam {
            Some(r) => {
                let _ = r.write(u64::from(offset), value);
            }
            None => {
                let _g = PORT_LOCK.lock();
                if let Some(p) = self.port(offset).filter(|_| offset & 1 == 0) {
                    p.write_u16(value);
                }
            }
        }
    }

    pub(crate) fn write32(&self, offset: u16, value: u32) {
        match &self.ecam {
            Some(r) => {
                let _ = r.write(u64::from(offset), value);
            }
            None => {
                let _g = PORT_LOCK.lock();
                if let Some(p) = self.port(offset).filter(|_| offset & 3 == 0) {
                    p.write_u32(value);
                }
            }
        }
    }
}

/// The function's 4 KiB ECAM page, mapped once and kept.
fn ecam_page(base: u64, addr: PciAddress) -> Option<MmioRegion> {
    let mut pages = ECAM_PAGES.lock();
    if let Some(r) = pages.get(&addr) {
        return Some(r.clone());
    }
    let phys = base.checked_add(ecam_offset(addr.bus, addr.device, addr.function))?;
    let window = Window::map(phys, 4096).ok()?;
    let region = MmioRegion::new(super::mmio::RegionCore::new(window));
    pages.insert(addr, region.clone());
    Some(region)
}
