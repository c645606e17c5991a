//! The device layer: the safe interface every driver in `drivers/` is
//! written against, and everything `unsafe` such a driver would need.
//!
//! * [`pci`]: enumeration, the one-owner claim, BARs, bus mastering,
//!   interrupt setup, revocation ([`pci::PciDevice`], [`pci::Revoker`]);
//! * [`mmio`]: typed, bounds-checked registers over claimed BARs;
//! * [`dma`]: DMA buffers and typed rings whose bus addresses drivers
//!   pass on but never see, freed only once the device cannot reach them;
//! * [`iommu`]: VT-d DMA remapping, when the machine has it: each
//!   device's pool is all its DMA can reach;
//! * [`irq`]: MSI-X / MSI / INTx vectors with typed top halves and a
//!   bottom half run by a kernel thread.
//!
//! The pure parts (BAR decoding, capability walks, MSI-X layout, the
//! virtqueue arithmetic) are in `kiln_util::pci` and `kiln_util::virtq`,
//! tested on the host; [`layout`] re-exports them for drivers.
//! `docs/drivers.md` explains the rules and the DMA argument.

pub mod config;
pub mod dma;
pub mod iommu;
pub mod irq;
pub mod mmio;
pub mod pci;
mod window;

/// Host-tested layouts drivers use.
pub mod layout {
    pub use kiln_util::pci;
    pub use kiln_util::virtq;
}

pub use dma::{DeviceAddr, DmaBuffer, DmaError, DmaPool, DmaRing};
pub use irq::{IrqError, IrqHandler, IrqKind, IrqReturn, IrqVector};
pub use mmio::{MmioError, MmioRegion, PortRegion, ReadOnly, ReadWrite, Register, WriteOnly};
pub use pci::{BarError, ClaimError, PciAddress, PciDevice, PciInfo, Revoker};
pub use window::WindowError;
