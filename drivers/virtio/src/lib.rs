//! virtio 1.x devices over PCI: the modern transport ([`transport`]) and
//! split virtqueues ([`queue`]), for the device drivers built on them
//! (`drivers/virtio-net`, `drivers/virtio-blk`), and the interrupt state
//! they share ([`irq`]).
//!
//! Written only against the hal's device layer: registers are typed
//! [`hal::device::Register`]s inside the BARs the capabilities name, rings
//! are DMA memory whose addresses the driver passes to the device without
//! seeing them. The ring arithmetic is `kiln_util::virtq`'s, tested on
//! the host.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod irq;
pub mod queue;
pub mod transport;

pub use irq::IrqShared;
pub use queue::{Buffer, QueueError, VirtQueue};
pub use transport::{status, Transport, TransportError};

/// Feature bits every device type shares (virtio 1.2, section 6).
pub mod feature {
    /// The device is virtio 1.x (modern), not legacy.
    pub const VERSION_1: u64 = 1 << 32;
    pub const RING_EVENT_IDX: u64 = 1 << 29;
    /// The device's DMA goes through the platform's IOMMU (QEMU's
    /// `iommu_platform=on`). Every driver accepts it: the addresses it
    /// hands the device are the hal's `DeviceAddr`s, which are what the
    /// IOMMU maps; without it QEMU's virtio devices bypass the IOMMU.
    pub const ACCESS_PLATFORM: u64 = 1 << 33;
}
