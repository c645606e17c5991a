//! The virtio PCI modern transport (virtio 1.2, section 4.1): the vendor
//! capabilities that locate the common, notify, ISR and device-specific
//! structures, the status handshake and feature negotiation, and queue
//! setup.

use alloc::vec::Vec;

use hal::device::layout::pci::cap;
use hal::device::{DeviceAddr, IrqVector, MmioRegion, PciDevice, ReadOnly, ReadWrite, Register, WriteOnly};

/// Device status bits.
pub mod status {
    pub const ACKNOWLEDGE: u8 = 1;
    pub const DRIVER: u8 = 2;
    pub const DRIVER_OK: u8 = 4;
    pub const FEATURES_OK: u8 = 8;
    pub const NEEDS_RESET: u8 = 64;
    pub const FAILED: u8 = 128;
}

/// `virtio_pci_cap.cfg_type` values.
mod cfg_type {
    pub const COMMON: u8 = 1;
    pub const NOTIFY: u8 = 2;
    pub const ISR: u8 = 3;
    pub const DEVICE: u8 = 4;
}

/// "No MSI-X vector" in `config_msix_vector` / `queue_msix_vector`.
pub const NO_VECTOR: u16 = 0xFFFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// A required capability is missing (a legacy-only device).
    NotModern,
    /// A capability points outside its BAR, or a BAR cannot be mapped.
    BadCapability,
    /// The device refused the features we can live with.
    FeaturesRefused,
    /// The device did not finish a reset.
    ResetTimeout,
    NoSuchQueue,
    /// The device rejected an MSI-X vector for a queue.
    VectorRefused,
}

/// The common configuration structure's registers.
struct Common {
    device_feature_select: Register<u32, ReadWrite>,
    device_feature: Register<u32, ReadOnly>,
    driver_feature_select: Register<u32, ReadWrite>,
    driver_feature: Register<u32, ReadWrite>,
    config_msix_vector: Register<u16, ReadWrite>,
    num_queues: Register<u16, ReadOnly>,
    device_status: Register<u8, ReadWrite>,
    queue_select: Register<u16, ReadWrite>,
    queue_size: Register<u16, ReadWrite>,
    queue_msix_vector: Register<u16, ReadWrite>,
    queue_enable: Register<u16, ReadWrite>,
    queue_notify_off: Register<u16, ReadOnly>,
    queue_desc_lo: Register<u32, ReadWrite>,
    queue_desc_hi: Register<u32, ReadWrite>,
    queue_driver_lo: Register<u32, ReadWrite>,
    queue_driver_hi: Register<u32, ReadWrite>,
    queue_device_lo: Register<u32, ReadWrite>,
    queue_device_hi: Register<u32, ReadWrite>,
}

impl Common {
    fn new(r: &MmioRegion) -> Result<Common, TransportError> {
        let e = |_| TransportError::BadCapability;
        Ok(Common {
            device_feature_select: r.register(0x00).map_err(e)?,
            device_feature: r.register(0x04).map_err(e)?,
            driver_feature_select: r.register(0x08).map_err(e)?,
            driver_feature: r.register(0x0C).map_err(e)?,
            config_msix_vector: r.register(0x10).map_err(e)?,
            num_queues: r.register(0x12).map_err(e)?,
            device_status: r.register(0x14).map_err(e)?,
            queue_select: r.register(0x16).map_err(e)?,
            queue_size: r.register(0x18).map_err(e)?,
            queue_msix_vector: r.register(0x1A).map_err(e)?,
            queue_enable: r.register(0x1C).map_err(e)?,
            queue_notify_off: r.register(0x1E).map_err(e)?,
            queue_desc_lo: r.register(0x20).map_err(e)?,
            queue_desc_hi: r.register(0x24).map_err(e)?,
            queue_driver_lo: r.register(0x28).map_err(e)?,
            queue_driver_hi: r.register(0x2C).map_err(e)?,
            queue_device_lo: r.register(0x30).map_err(e)?,
            queue_device_hi: r.register(0x34).map_err(e)?,
        })
    }
}

/// A virtio device's transport: its registers, through the BARs its
/// capabilities name. Owns the [`PciDevice`].
pub struct Transport {
    pci: PciDevice,
    common: Common,
    notify: MmioRegion,
    notify_multiplier: u32,
    isr: Register<u8, ReadOnly>,
    device_cfg: Option<MmioRegion>,
    features: u64,
}

/// Where a capability's structure is: (cfg_type, bar, offset, length, cap offset).
struct VirtioCap {
    kind: u8,
    bar: u8,
    offset: u32,
    length: u32,
    cap: u16,
}

impl Transport {
    /// Finds the modern capabilities and maps the BARs they use.
    pub fn new(pci: PciDevice) -> Result<Transport, TransportError> {
        let mut caps = Vec::new();
        for c in pci.capabilities().iter().filter(|c| c.id == cap::VENDOR) {
            let o = c.offset;
            let vc = VirtioCap {
                kind: pci.read_config_u8(o + 3),
                bar: pci.read_config_u8(o + 4),
                offset: pci.read_config_u32(o + 8),
                length: pci.read_config_u32(o + 12),
                cap: o,
            };
            // The first capability of each type is the preferred one.
            if !caps.iter().any(|k: &VirtioCap| k.kind == vc.kind) {
                caps.push(vc);
            }
        }
        let find = |kind| caps.iter().find(|c| c.kind == kind);
        let (common, notify, isr) = match (find(cfg_type::COMMON), find(cfg_type::NOTIFY), find(cfg_type::ISR)) {
            (Some(c), Some(n), Some(i)) => (c, n, i),
            _ => return Err(TransportError::NotModern),
        };
        // Each BAR is claimed once; the structures share them.
        let mut bars: Vec<(u8, MmioRegion)> = Vec::new();
        let mut region = |c: &VirtioCap| -> Result<MmioRegion, TransportError> {
            let bar = match bars.iter().find(|(b, _)| *b == c.bar) {
                Some((_, r)) => r.clone(),
                None => {
                    let r = pci.map_bar(c.bar).map_err(|_| TransportError::BadCapability)?;
                    bars.push((c.bar, r.clone()));
                    r
                }
            };
            bar.subregion(u64::from(c.offset), u64::from(c.length)).map_err(|_| TransportError::BadCapability)
        };
        let common_region = region(common)?;
        let notify_region = region(notify)?;
        let isr_region = region(isr)?;
        let device_cfg = match find(cfg_type::DEVICE) {
            Some(d) => Some(region(d)?),
            None => None,
        };
        let notify_multiplier = pci.read_config_u32(notify.cap + 16);
        Ok(Transport {
            common: Common::new(&common_region)?,
            notify: notify_region,
            notify_multiplier,
            isr: isr_region.register(0).map_err(|_| TransportError::BadCapability)?,
            device_cfg,
            pci,
            features: 0,
        })
    }

    pub fn pci(&self) -> &PciDevice {
        &self.pci
    }

    /// Resets the device (status 0) and waits for it to finish.
    pub fn reset(&self) -> Result<(), TransportError> {
        self.common.device_status.write(0);
        for _ in 0..1_000_000 {
            if self.common.device_status.read() == 0 {
                return Ok(());
            }
            core::hint::spin_loop();
        }
        Err(TransportError::ResetTimeout)
    }

    pub fn status(&self) -> u8 {
        self.common.device_status.read()
    }

    pub fn add_status(&self, bits: u8) {
        self.common.device_status.write(self.common.device_status.read() | bits);
    }

    /// Reset, ACKNOWLEDGE, DRIVER, then features: takes the device's
    /// offer intersected with `wanted` (and ACCESS_PLATFORM, always
    /// accepted), which must include everything in
    /// `required`. Returns what was agreed.
    pub fn begin_init(&mut self, wanted: u64, required: u64) -> Result<u64, TransportError> {
        self.reset()?;
        self.add_status(status::ACKNOWLEDGE);
        self.add_status(status::DRIVER);
        let offered = self.device_features();
        let agreed = offered & (wanted | crate::feature::ACCESS_PLATFORM);
        if agreed & required != required {
            self.add_status(status::FAILED);
            return Err(TransportError::FeaturesRefused);
        }
        for half in 0..2u32 {
            self.common.driver_feature_select.write(half);
            self.common.driver_feature.write((agreed >> (32 * half)) as u32);
        }
        self.add_status(status::FEATURES_OK);
        if self.status() & status::FEATURES_OK == 0 {
            self.add_status(status::FAILED);
            return Err(TransportError::FeaturesRefused);
        }
        self.features = agreed;
        Ok(agreed)
    }

    /// Tells the device the driver is ready (after queue setup).
    pub fn finish_init(&self) {
        self.add_status(status::DRIVER_OK);
    }

    pub fn device_features(&self) -> u64 {
        let mut f = 0;
        for half in 0..2u32 {
            self.common.device_feature_select.write(half);
            f |= u64::from(self.common.device_feature.read()) << (32 * half);
        }
        f
    }

    pub fn features(&self) -> u64 {
        self.features
    }

    pub fn num_queues(&self) -> u16 {
        self.common.num_queues.read()
    }

    /// The largest size queue `index` allows (0: no such queue).
    pub fn max_queue_size(&self, index: u16) -> u16 {
        self.common.queue_select.write(index);
        self.common.queue_size.read()
    }

    /// Programs queue `index`: size, rings, interrupt vector; enables it
    /// and returns its notify register.
    pub(crate) fn setup_queue(
        &self,
        index: u16,
        size: u16,
        rings: [DeviceAddr; 3],
        vector: Option<&IrqVector>,
    ) -> Result<Register<u16, WriteOnly>, TransportError> {
        let c = &self.common;
        c.queue_select.write(index);
        if c.queue_size.read() == 0 {
            return Err(TransportError::NoSuchQueue);
        }
        c.queue_size.write(size);
        let msix = vector.and_then(|v| v.msix_entry()).unwrap_or(NO_VECTOR);
        c.queue_msix_vector.write(msix);
        if c.queue_msix_vector.read() != msix {
            return Err(TransportError::VectorRefused);
        }
        let [desc, driver, device] = rings;
        c.queue_desc_lo.write_addr_low(desc);
        c.queue_desc_hi.write_addr_high(desc);
        c.queue_driver_lo.write_addr_low(driver);
        c.queue_driver_hi.write_addr_high(driver);
        c.queue_device_lo.write_addr_low(device);
        c.queue_device_hi.write_addr_high(device);
        let off = u64::from(c.queue_notify_off.read()) * u64::from(self.notify_multiplier);
        let notify = self.notify.register(off).map_err(|_| TransportError::BadCapability)?;
        c.queue_enable.write(1);
        Ok(notify)
    }

    /// Routes configuration-change interrupts to `vector` (MSI-X only).
    pub fn set_config_vector(&self, vector: Option<&IrqVector>) -> Result<(), TransportError> {
        let msix = vector.and_then(|v| v.msix_entry()).unwrap_or(NO_VECTOR);
        self.common.config_msix_vector.write(msix);
        if self.common.config_msix_vector.read() != msix {
            return Err(TransportError::VectorRefused);
        }
        Ok(())
    }

    /// The ISR status register, for a handler on a shared INTx line:
    /// reading it acknowledges the interrupt.
    pub fn isr(&self) -> Register<u8, ReadOnly> {
        self.isr.clone()
    }

    /// The device-specific configuration structure.
    pub fn device_config(&self) -> Option<&MmioRegion> {
        self.device_cfg.as_ref()
    }
}
