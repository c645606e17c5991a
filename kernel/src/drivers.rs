//! Device probe at boot: PCI functions matched to the drivers in
//! `drivers/`, and each driver's device handed to the subsystem that uses
//! it (network devices to [`crate::net::netdevs`]).
//!
//! The table is the only place that knows which driver serves which
//! vendor and device id. A driver that fails to start logs why and leaves
//! the function unclaimed.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use hal::device::layout::pci::{Bar, BarKind};

use blockdev::BlockDriver;
use hal::device::pci::{self, PciAddress, PciDevice, PciInfo, Revoker};
use hal::device::IrqKind;
use hal::sync::SpinLock;
use netdev::NetDevice;

use crate::mm::TryString;

/// What a table row does with a matching function.
type Probe = fn(&PciInfo);

/// (vendor, device, probe): virtio's transitional and modern ids of the
/// network and block devices; Intel's 82540EM (QEMU's `e1000`); QEMU's
/// NVMe controller.
const DRIVERS: &[(u16, u16, Probe)] = &[
    (0x1AF4, 0x1000, probe_virtio_net),
    (0x1AF4, 0x1041, probe_virtio_net),
    (0x1AF4, 0x1001, probe_virtio_blk),
    (0x1AF4, 0x1042, probe_virtio_blk),
    (0x8086, 0x100E, probe_e1000),
    (0x1B36, 0x0010, probe_nvme),
];

/// Enumerates PCI, logs the functions found, starts the drivers that
/// match, and adds /proc/bus/pci/devices.
pub fn probe() {
    let functions = pci::functions();
    let mut line = TryString::new();
    let written = functions.iter().try_for_each(|f| {
        let a = f.address;
        write!(line, " {:02x}:{:02x}.{} {:04x}:{:04x}", a.bus, a.device, a.function, f.vendor_id, f.device_id)
    });
    let access = match pci::mechanism() {
        pci::Mechanism::Ecam { .. } => "ECAM",
        pci::Mechanism::Ports => "ports",
    };
    log::info!("pci: {} functions ({access}):{}", functions.len(), line.finish(written).unwrap_or_default());
    for f in &functions {
        if let Some((_, _, probe)) = DRIVERS.iter().find(|(v, d, _)| *v == f.vendor_id && *d == f.device_id) {
            probe(f);
        }
    }
    crate::fs::procfs::register("bus/pci/devices", proc_pci_devices);
}

/// Steers the interrupts of the device at `address` to `cpu`.
#[allow(dead_code)] // the test kernel; /proc/irq/*/smp_affinity later
pub fn set_irq_affinity(address: PciAddress, cpu: usize) -> Result<(), hal::device::IrqError> {
    let revoker = REVOKERS.lock().iter().find(|(_, r)| r.address() == address).map(|(_, r)| r.clone());
    revoker.ok_or(hal::device::IrqError::Unsupported)?.set_irq_affinity(cpu)
}

/// Linux's /proc/bus/pci/devices: bus and devfn, vendor and device, the
/// IRQ line, then the seven resources' starts (with their flag bits) and
/// sizes (BARs 0-5 and the ROM, which Kiln does not map), then the driver.
fn proc_pci_devices(_: &'static str) -> alloc::string::String {
    let mut s = TryString::new();
    let written = pci::functions().iter().try_for_each(|f| {
        let a = f.address;
        let irq = if f.interrupt_pin == 0 || f.interrupt_line == 0xFF { 0 } else { f.interrupt_line };
        write!(s, "{:02x}{:02x}\t{:04x}{:04x}\t{irq:x}", a.bus, a.device << 3 | a.function, f.vendor_id, f.device_id)?;
        let flags = |b: &Bar| match b.kind {
            BarKind::Io => 0x1,
            BarKind::Mem32 { prefetchable } => u64::from(prefetchable) << 3,
            BarKind::Mem64 { prefetchable } => 0x4 | u64::from(prefetchable) << 3,
        };
        for i in 0..7 {
            let start = f.bars.get(i).copied().flatten().map_or(0, |b| b.address | flags(&b));
            write!(s, "\t{start:16x}")?;
        }
        for i in 0..7 {
            let size = f.bars.get(i).copied().flatten().map_or(0, |b| b.size);
            write!(s, "\t{size:16x}")?;
        }
        let driver = REVOKERS.lock().iter().find(|(_, r)| r.address() == a).map(|(d, _)| *d);
        match driver {
            Some(d) => writeln!(s, "\t{d}"),
            None => writeln!(s),
        }
    });
    s.finish(written).unwrap_or_default()
}

/// Claims the function, keeps the kernel's revoker for it, and starts
/// `driver` on it with `new`. A failure is logged and leaves the
/// function to no driver.
fn start<D, E: core::fmt::Debug>(
    driver: &'static str,
    f: &PciInfo,
    new: impl FnOnce(PciDevice) -> Result<D, E>,
) -> Option<D> {
    let dev = match pci::claim(f.address) {
        Ok(d) => d,
        Err(e) => {
            log::warn!("{driver} {}: cannot claim: {e:?}", f.address);
            return None;
        }
    };
    keep_revoker(driver, dev.revoker());
    new(dev).map_err(|e| log::warn!("{driver} {}: not started: {e:?}", f.address)).ok()
}

/// Hands a started NIC to the network stack, logging its MAC and `details`.
fn register_nic<N: NetDevice + 'static>(driver: &str, f: &PciInfo, nic: N, details: core::fmt::Arguments<'_>) {
    log::info!("{driver} {}: MAC {}, {details}", f.address, nic.mac());
    match crate::mm::try_box(nic) {
        Ok(b) => crate::net::netdevs::register(b),
        Err(_) => log::error!("{driver} {}: no memory to register it", f.address),
    }
}

/// Hands a started disk, driven through `drivers` (one per hardware
/// queue), to the block layer, logging its geometry and `irq`. False
/// (logged) without memory.
fn register_disk(
    driver: &str,
    f: &PciInfo,
    family: crate::block::Family,
    drivers: Option<Vec<Box<dyn BlockDriver>>>,
    irq: Option<IrqKind>,
) -> bool {
    let Some(info) = drivers.as_ref().and_then(|d| d.first()).map(|d| d.info()) else {
        log::error!("{driver} {}: no memory to register it", f.address);
        return false;
    };
    match drivers.and_then(|d| crate::block::register(family, d)) {
        Some(q) => {
            log::info!(
                "{driver} {}: /dev/{}, {} MiB, {} hardware queue(s) of depth {}, {} KiB transfers, {}{}{}{}, {irq:?} interrupts",
                f.address,
                q.name,
                info.sectors >> 11,
                q.hw_queues(),
                info.queue_depth,
                info.max_sectors / 2,
                if info.read_only { "read-only" } else { "read-write" },
                if info.volatile_cache { ", flush" } else { "" },
                if info.fua { ", FUA" } else { "" },
                if info.max_discard_sectors > 0 { ", discard" } else { "" },
            );
            true
        }
        None => {
            log::error!("{driver} {}: no memory to register it", f.address);
            false
        }
    }
}

/// One boxed driver, as the block layer takes them.
fn one_disk<B: BlockDriver + 'static>(disk: B) -> Option<Vec<Box<dyn BlockDriver>>> {
    let mut drivers: Vec<Box<dyn BlockDriver>> = Vec::new();
    drivers.try_reserve(1).ok()?;
    drivers.push(crate::mm::try_box(disk).ok()?);
    Some(drivers)
}

fn probe_virtio_net(f: &PciInfo) {
    if let Some(nic) = start("virtio-net", f, virtio_net::VirtioNet::new) {
        let (irq, offloads) = (nic.irq_kind(), nic.offloads());
        register_nic("virtio-net", f, nic, format_args!("{irq:?} interrupts, offloads: {offloads}"));
    }
}

fn probe_virtio_blk(f: &PciInfo) {
    if let Some(disk) = start("virtio-blk", f, virtio_blk::VirtioBlk::new) {
        let irq = disk.irq_kind();
        register_disk("virtio-blk", f, crate::block::Family::Virtio, one_disk(disk), irq);
    }
}

/// Controllers the NVMe driver runs, for resets (the test kernel) and a
/// later supervisor.
static NVME: SpinLock<Vec<Arc<nvme::Nvme>>> = SpinLock::new(Vec::new());

/// NVMe: one I/O queue pair per online CPU, each a hardware queue.
fn probe_nvme(f: &PciInfo) {
    let Some(ctrl) = start("nvme", f, |dev| nvme::Nvme::new(dev, hal::percpu::online_cpus())) else { return };
    log::info!("nvme {}: I/O queue interrupts on CPUs {:?}", f.address, ctrl.queue_cpus());
    if register_disk("nvme", f, crate::block::Family::Nvme, nvme_drivers(&ctrl), ctrl.irq_kind()) {
        keep_nvme(ctrl);
    }
}

/// The controller's I/O queues as block drivers, one per hardware queue.
pub fn nvme_drivers(ctrl: &Arc<nvme::Nvme>) -> Option<Vec<Box<dyn BlockDriver>>> {
    let queues = ctrl.queues().ok()?;
    let mut drivers: Vec<Box<dyn BlockDriver>> = Vec::new();
    drivers.try_reserve(queues.len()).ok()?;
    for q in queues {
        drivers.push(crate::mm::try_box(q).ok()?);
    }
    Some(drivers)
}

/// Takes the kernel's hold on the NVMe controller at `address` (a
/// restart drops it).
#[allow(dead_code)] // the test kernel's restart test
pub fn take_nvme(address: PciAddress) -> Option<Arc<nvme::Nvme>> {
    let mut all = NVME.lock();
    let i = all.iter().position(|c| c.pci().address() == address)?;
    Some(all.remove(i))
}

/// The NVMe controller at `address`, if the driver runs it.
#[allow(dead_code)] // the test kernel
pub fn nvme_controller(address: PciAddress) -> Option<Arc<nvme::Nvme>> {
    NVME.lock().iter().find(|c| c.pci().address() == address).cloned()
}

/// Keeps a (restarted) controller in the kernel's list.
pub fn keep_nvme(ctrl: Arc<nvme::Nvme>) {
    let mut all = NVME.lock();
    if all.try_reserve(1).is_ok() {
        all.push(ctrl);
    }
}

fn probe_e1000(f: &PciInfo) {
    if let Some(nic) = start("e1000", f, e1000::E1000::new) {
        let (link, irq) = (nic.link(), nic.irq_kind());
        register_nic("e1000", f, nic, format_args!("link {link:?}, {irq:?} interrupts"));
    }
}

/// The kernel's hold on every device a driver runs: what a later
/// supervisor uses to take a device from a failed driver and restart it.
static REVOKERS: SpinLock<Vec<(&'static str, Revoker)>> = SpinLock::new(Vec::new());

pub fn keep_revoker(driver: &'static str, revoker: Revoker) {
    let mut all = REVOKERS.lock();
    if all.try_reserve(1).is_ok() {
        all.push((driver, revoker));
    }
}

/// How each device `driver` runs takes its interrupts.
#[allow(dead_code)] // the test kernel
pub fn irq_kinds(driver: &str) -> Vec<Option<IrqKind>> {
    let all = REVOKERS.lock();
    let mut kinds = Vec::new();
    for (_, r) in all.iter().filter(|(d, _)| *d == driver) {
        if kinds.try_reserve(1).is_ok() {
            kinds.push(r.irq_kind());
        }
    }
    kinds
}

/// Takes the kernel's revoker for the device at `address`.
#[allow(dead_code)] // the test kernel's restart test; a supervisor later
pub fn take_revoker(address: PciAddress) -> Option<Revoker> {
    let mut all = REVOKERS.lock();
    let i = all.iter().position(|(_, r)| r.address() == address)?;
    Some(all.remove(i).1)
}
