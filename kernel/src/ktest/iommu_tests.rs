//! DMA confinement by the VT-d IOMMU (`IOMMU=1`, and the `make test`
//! stage that boots the test kernel with it): translation is on whenever
//! the firmware describes a unit, and a device told to write where its
//! domain maps nothing faults, the fault is recorded, the memory stays
//! as it was, and the real driver works afterwards.
//!
//! The fault source is a hostile driver written in safe code: it takes
//! the e1000 from its driver (revoke, as the restart test does), claims
//! the function itself, and puts a raw number, the physical address of a
//! kernel frame, into a receive descriptor. The type system cannot stop
//! that (a descriptor field is bytes in the driver's own DMA memory);
//! the IOMMU does. Without one the same test shows the write landing, so
//! it says which protection the machine has.

use alloc::boxed::Box;
use alloc::string::String;

use hal::device::iommu;
use hal::device::mmio::WriteOnly;
use hal::device::pci::{self, PciDevice};
use netdev::NetDevice;

use super::device_tests::{arp_gateway, arp_request, waker_for};
use super::{KTest, TestResult};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "iommu::translation_on_when_described", run: translation_on_when_described },
    KTest { name: "iommu::e1000_stray_write_is_confined", run: e1000_stray_write_is_confined },
];

fn translation_on_when_described() -> TestResult {
    ensure!(
        iommu::described() == iommu::enabled(),
        "DMAR unit described: {}, translation on: {}",
        iommu::described(),
        iommu::enabled()
    );
    if iommu::enabled() {
        // Every device a driver claimed at boot sits in a domain (QEMU's
        // DMAR lists each function of bus 0, NICs and disks included).
        ensure!(iommu::domains() >= 1, "translation is on but no device has a domain");
    }
    Ok(())
}

/// The 82540EM's registers this test touches (the driver's offsets,
/// Intel's manual 13.4) and the values it writes.
mod reg {
    pub use e1000::regs::{
        CTRL, IMC, RAH0, RAL0, RCTL, RDBAH, RDBAL, RDH, RDLEN, RDT, TCTL, TDBAH, TDBAL, TDH, TDLEN, TDT, TIPG,
    };
    pub const CTRL_SLU: u32 = 1 << 6;
    pub const CTRL_RST: u32 = 1 << 26;
    /// Enable, accept broadcast, strip the CRC; 2 KiB buffers.
    pub const RCTL_ON: u32 = (1 << 1) | (1 << 15) | (1 << 26);
    /// Enable, pad short frames.
    pub const TCTL_ON: u32 = (1 << 1) | (1 << 3);
    /// End of packet, insert FCS, report status.
    pub const TX_CMD: u8 = 1 | 2 | 8;
}

/// Descriptors per ring: 8 of 16 bytes, the smallest ring (128 bytes).
const DESCS: usize = 8;

fn e1000_stray_write_is_confined() -> TestResult {
    let function = pci::functions().into_iter().find(|f| f.vendor_id == 0x8086 && f.device_id == 0x100E);
    let address = function.ok_or("no e1000 function")?.address;
    let nic = crate::net::netdevs::take("e1000").ok_or("no e1000 device was registered")?;
    // Dropping the driver releases the claim (a driver restarted by an
    // earlier test keeps no revoker in the table).
    let revoker = crate::drivers::take_revoker(address);
    if let Some(r) = &revoker {
        r.revoke();
    }
    drop(nic);
    drop(revoker);
    iommu::take_faults();
    let count_before = iommu::fault_count();

    let victim = hal::mm::alloc_frame_zeroed().ok_or("out of frames")?;
    let hostile = pci::claim(address).map_err(|e| alloc::format!("claim: {e:?}"));
    let outcome = hostile.and_then(|dev| stray_receive(dev, victim.0));
    // Nothing polls the unit until take_faults below: a count that rises
    // before it came through the fault interrupt.
    let deadline = crate::clock::now_ns() + 1_000_000_000;
    while iommu::enabled() && iommu::fault_count() == count_before && crate::clock::now_ns() < deadline {
        crate::sched::yield_now();
    }
    let by_interrupt = iommu::fault_count() > count_before;
    let mut seen = [0xAAu8; 4096];
    let read = hal::extable::probe_copy(&mut seen, victim.to_virt());
    // The device is dropped (bus mastering off) by now: the frame is ours.
    hal::mm::free_frame(victim);
    let faults = iommu::take_faults();

    // Whatever happened, the real driver takes the device back.
    let dev = pci::claim(address).map_err(|e| alloc::format!("reclaim: {e:?}"))?;
    let mut fresh: Box<dyn NetDevice> = Box::new(e1000::E1000::new(dev).map_err(|e| alloc::format!("restart: {e:?}"))?);
    let wake = waker_for(fresh.as_mut());
    let gw = arp_gateway(fresh.as_mut(), &wake);
    crate::net::netdevs::register(fresh);

    let received = outcome?;
    ensure!(read.is_ok(), "victim frame unreadable");
    ensure!(received, "the hostile ring never saw the gateway's ARP reply");
    let touched = seen.iter().any(|&b| b != 0);
    if iommu::enabled() {
        ensure!(!touched, "the device wrote a frame its domain does not map");
        let hit = faults.iter().find(|f| f.device == address && f.write && f.addr == victim.0);
        ensure!(hit.is_some(), "no write fault recorded for {:#x}: {faults:?}", victim.0);
        ensure!(by_interrupt, "the fault was found by polling; its interrupt never ran");
        log::info!("iommu: the e1000's stray write to {:#x} faulted and left the frame as it was", victim.0);
    } else {
        // No IOMMU: the write lands (in a frame the test owns), which is
        // what the DmaPool rules alone cannot stop.
        ensure!(touched, "without an IOMMU the device should have written the frame");
        ensure!(faults.is_empty() && !by_interrupt, "faults without an IOMMU: {faults:?}");
    }
    gw.map(|_| ())
}

/// Runs the hostile driver: a transmit ring that sends an ARP request for
/// slirp's gateway, and a receive ring whose every buffer address is
/// `stray` (a number, not a buffer of this device). True once the device
/// marks a receive descriptor done: the reply's DMA has been attempted.
fn stray_receive(dev: PciDevice, stray: u64) -> Result<bool, String> {
    let err = |what: &str| alloc::format!("hostile e1000: {what}");
    let regs = dev.map_bar(0).map_err(|e| err(&alloc::format!("BAR0: {e:?}")))?;
    let w = |off: u64, v: u32| regs.write(off, v).map_err(|e| err(&alloc::format!("write {off:#x}: {e:?}")));
    w(reg::IMC, u32::MAX)?;
    w(reg::CTRL, reg::CTRL_RST)?;
    let deadline = crate::clock::now_ns() + 100_000_000;
    while regs.read::<u32>(reg::CTRL).unwrap_or(0) & reg::CTRL_RST != 0 && crate::clock::now_ns() < deadline {
        core::hint::spin_loop();
    }
    w(reg::IMC, u32::MAX)?;
    w(reg::CTRL, reg::CTRL_SLU)?;
    let pool = dev.dma();
    let alloc = |len| pool.alloc(len).map_err(|e| err(&alloc::format!("DMA: {e:?}")));
    let (mut rx, mut tx, mut frame) = (alloc(16 * DESCS)?, alloc(16 * DESCS)?, alloc(64)?);
    for i in 0..DESCS {
        rx.write(16 * i, stray).ok_or_else(|| err("rx ring"))?;
    }
    let mac_low: u32 = regs.read(reg::RAL0).unwrap_or(0);
    let mac_high: u32 = regs.read(reg::RAH0).unwrap_or(0);
    let mut mac = [0u8; 6];
    mac[..4].copy_from_slice(&mac_low.to_le_bytes());
    mac[4..].copy_from_slice(&mac_high.to_le_bytes()[..2]);
    arp_request(netdev::MacAddress(mac), &mut frame.as_mut_slice()[..60]);
    tx.write(0, frame.device_addr()).ok_or_else(|| err("tx ring"))?;
    tx.write(8, 60u16).ok_or_else(|| err("tx ring"))?;
    tx.write(11, reg::TX_CMD).ok_or_else(|| err("tx ring"))?;
    frame.sync_for_device();
    rx.sync_for_device();
    tx.sync_for_device();
    regs.register::<u32, WriteOnly>(reg::RDBAL).map_err(|_| err("RDBAL"))?.write_addr_low(rx.device_addr());
    regs.register::<u32, WriteOnly>(reg::RDBAH).map_err(|_| err("RDBAH"))?.write_addr_high(rx.device_addr());
    w(reg::RDLEN, (16 * DESCS) as u32)?;
    w(reg::RDH, 0)?;
    w(reg::RDT, (DESCS - 1) as u32)?;
    regs.register::<u32, WriteOnly>(reg::TDBAL).map_err(|_| err("TDBAL"))?.write_addr_low(tx.device_addr());
    regs.register::<u32, WriteOnly>(reg::TDBAH).map_err(|_| err("TDBAH"))?.write_addr_high(tx.device_addr());
    w(reg::TDLEN, (16 * DESCS) as u32)?;
    w(reg::TDH, 0)?;
    w(reg::TDT, 0)?;
    w(reg::TIPG, 10 | (8 << 10) | (6 << 20))?;
    w(reg::RCTL, reg::RCTL_ON)?;
    w(reg::TCTL, reg::TCTL_ON)?;
    dev.set_bus_master(true);
    w(reg::TDT, 1)?;
    // The receive descriptor's status byte (offset 12): DD once the
    // device has written (or tried to write) the frame.
    let deadline = crate::clock::now_ns() + 2_000_000_000;
    let done = loop {
        rx.sync_for_cpu();
        if rx.read::<u8>(12).unwrap_or(0) & 1 != 0 {
            break true;
        }
        if crate::clock::now_ns() > deadline {
            break false;
        }
        crate::sched::yield_now();
    };
    w(reg::RCTL, 0)?;
    w(reg::TCTL, 0)?;
    dev.set_bus_master(false);
    drop((rx, tx, frame));
    drop(dev);
    Ok(done)
}
