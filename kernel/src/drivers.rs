//! Device probe at boot: PCI functions matched to the drivers in
//! `drivers/`, and each driver's device handed to the subsystem that uses
//! it (network devices to [`crate::net::netdevs`]).
//!
//! The table is the only place that knows which driver serves which
//! vendor and device id. A driver that fails to start logs why and leaves
//! the function unclaimed.

use alloc::vec::Vec;

use hal::device::pci::{self, PciInfo, Revoker};
use hal::sync::SpinLock;

/// What a table row does with a matching function.
type Probe = fn(&PciInfo);

/// (vendor, device, probe): virtio's transitional network device id and
/// its modern one.
const DRIVERS: &[(u16, u16, Probe)] = &[(0x1AF4, 0x1000, probe_virtio_net), (0x1AF4, 0x1041, probe_virtio_net)];

/// Enumerates PCI, logs every function, and starts the drivers that match.
pub fn probe() {
    let functions = pci::functions();
    log::info!("pci: {} functions ({:?} configuration access)", functions.len(), pci::mechanism());
    for f in &functions {
        log::info!(
            "pci: {} [{:04x}:{:04x}] class {:02x}{:02x}{:02x}",
            f.address,
            f.vendor_id,
            f.device_id,
            f.class,
            f.subclass,
            f.prog_if
        );
    }
    for f in &functions {
        if let Some((_, _, probe)) = DRIVERS.iter().find(|(v, d, _)| *v == f.vendor_id && *d == f.device_id) {
            probe(f);
        }
    }
}

/// Steers the interrupts of the device `driver` runs to `cpu`.
#[allow(dead_code)] // the test kernel; /proc/irq/*/smp_affinity later
pub fn set_irq_affinity(driver: &str, cpu: usize) -> Result<(), hal::device::IrqError> {
    let revoker = REVOKERS.lock().iter().find(|(d, _)| *d == driver).map(|(_, r)| r.clone());
    revoker.ok_or(hal::device::IrqError::Unsupported)?.set_irq_affinity(cpu)
}

fn probe_virtio_net(f: &PciInfo) {
    let dev = match pci::claim(f.address) {
        Ok(d) => d,
        Err(e) => return log::warn!("virtio-net {}: cannot claim: {e:?}", f.address),
    };
    keep_revoker("virtio-net", dev.revoker());
    match virtio_net::VirtioNet::new(dev) {
        Ok(nic) => {
            let m = netdev::NetDevice::mac(&nic).0;
            log::info!(
                "virtio-net {}: MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, {:?} interrupts",
                f.address,
                m[0],
                m[1],
                m[2],
                m[3],
                m[4],
                m[5],
                nic.irq_kind()
            );
            match crate::mm::try_box(nic) {
                Ok(b) => crate::net::netdevs::register(b),
                Err(_) => log::error!("virtio-net {}: no memory to register it", f.address),
            }
        }
        Err(e) => log::warn!("virtio-net {}: not started: {e:?}", f.address),
    }
}

/// The kernel's hold on every device a driver runs: what a later
/// supervisor uses to take a device from a failed driver and restart it.
static REVOKERS: SpinLock<Vec<(&'static str, Revoker)>> = SpinLock::new(Vec::new());

fn keep_revoker(driver: &'static str, revoker: Revoker) {
    let mut all = REVOKERS.lock();
    if all.try_reserve(1).is_ok() {
        all.push((driver, revoker));
    }
}

/// Takes the kernel's revoker for the device `driver` runs.
#[allow(dead_code)] // the test kernel's restart test; a supervisor later
pub fn revoker_of(driver: &str) -> Option<Revoker> {
    let mut all = REVOKERS.lock();
    let i = all.iter().position(|(d, _)| *d == driver)?;
    Some(all.remove(i).1)
}
