//! The hal's device layer and the virtio-net driver, on the machine the
//! test kernel boots (QEMU `pc` with a virtio-net NIC on user networking):
//! enumeration, the one-owner claims of functions and BARs, register
//! bounds, DMA rings, and frames that really move: an ARP request for the
//! slirp gateway 10.0.2.2 answered with its MAC, through the interrupt,
//! the bottom-half thread and the waker. Then the device is revoked, the
//! driver sees it dead, and a fresh driver instance claims it again and
//! gets another answer (what a driver restart will do).

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::device::pci::{self, PciInfo};
use hal::device::{BarError, ClaimError, DeviceAddr, MmioError, ReadOnly, ReadWrite};
use netdev::{LinkState, MacAddress, NetDevice, TxError, TxMeta};

use super::{KTest, TestResult};
use crate::ensure;
use crate::sched::{WakeBatch, WakeFlag};

pub const TESTS: &[KTest] = &[
    KTest { name: "device::pci_enumerates_the_machine", run: pci_enumerates_the_machine },
    KTest { name: "device::claim_and_bars_are_exclusive", run: claim_and_bars_are_exclusive },
    KTest { name: "device::registers_are_bounds_checked", run: registers_are_bounds_checked },
    KTest { name: "device::dma_ring_round_trip", run: dma_ring_round_trip },
    KTest { name: "device::virtio_net_arp_gateway", run: virtio_net_arp_gateway },
    KTest { name: "device::virtio_net_intx_nic_answers_too", run: virtio_net_intx_nic_answers_too },
    KTest { name: "device::virtio_net_irq_affinity", run: virtio_net_irq_affinity },
    KTest { name: "device::virtio_net_reset_mid_traffic", run: virtio_net_reset_mid_traffic },
    KTest { name: "device::virtio_net_arp_round_trip_timing", run: virtio_net_arp_round_trip_timing },
    KTest { name: "device::virtio_net_revoke_and_restart", run: virtio_net_revoke_and_restart },
];

fn find(vendor: u16, device: u16) -> Option<PciInfo> {
    pci::functions().into_iter().find(|f| f.vendor_id == vendor && f.device_id == device)
}

/// The first virtio-net function: transitional (0x1000), or modern-only
/// (0x1041) as under the IOMMU, where QEMU needs `disable-legacy=on`.
fn find_virtio_net() -> Option<PciInfo> {
    find(0x1AF4, 0x1000).or_else(|| find(0x1AF4, 0x1041))
}

fn pci_enumerates_the_machine() -> TestResult {
    let fns = pci::functions();
    // i440FX host bridge at 00:00.0, PIIX3 ISA bridge, and the NIC.
    let host = fns.first().ok_or("no PCI functions")?;
    ensure!(host.address.bus == 0 && host.address.device == 0 && host.vendor_id == 0x8086, "{host:?}");
    ensure!(fns.iter().any(|f| f.class == 0x06 && f.subclass == 0x01), "no ISA bridge");
    let nic = find_virtio_net().ok_or("no virtio-net function (the test stage adds one)")?;
    ensure!(nic.class == 0x02, "virtio-net class {:#x}", nic.class);
    // Its modern BAR (4) is a 64-bit memory BAR of at least 16 KiB.
    let bar = nic.bars[4].ok_or("virtio-net BAR4 missing")?;
    ensure!(matches!(bar.kind, hal::device::layout::pci::BarKind::Mem64 { .. }), "{bar:?}");
    ensure!(bar.size >= 0x4000, "{bar:?}");
    Ok(())
}

/// The bochs VGA function (QEMU's default display) is claimed and
/// released here; nothing in Kiln drives it.
fn claim_and_bars_are_exclusive() -> TestResult {
    let vga = find(0x1234, 0x1111).ok_or("no QEMU VGA function")?;
    let dev = pci::claim(vga.address).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(pci::claim(vga.address).err() == Some(ClaimError::Busy), "second claim of a function");
    // The virtio NIC is the driver's: the kernel cannot take it either.
    let nic = find_virtio_net().ok_or("no NIC")?;
    ensure!(pci::claim(nic.address).err() == Some(ClaimError::Busy), "claim of the driven NIC");
    let regs = dev.map_bar(2).map_err(|e| alloc::format!("map BAR2: {e:?}"))?;
    ensure!(dev.map_bar(2).err() == Some(BarError::AlreadyClaimed), "second claim of a BAR");
    ensure!(dev.map_bar(3).err() == Some(BarError::NoSuchBar), "an absent BAR");
    // Bochs display interface: the id register at 0x500 reads 0xB0Cx.
    let id: u16 = regs.read(0x500).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(id & 0xFFF0 == 0xB0C0, "bochs dispi id {id:#x}");
    drop(dev);
    // Revoked with the handle: the register reads all ones now.
    let dead: u16 = regs.read(0x500).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(dead == 0xFFFF, "register of a dropped device read {dead:#x}");
    let again = pci::claim(vga.address).map_err(|e| alloc::format!("reclaim: {e:?}"))?;
    drop(again);
    Ok(())
}

fn registers_are_bounds_checked() -> TestResult {
    let vga = find(0x1234, 0x1111).ok_or("no QEMU VGA function")?;
    let dev = pci::claim(vga.address).map_err(|e| alloc::format!("{e:?}"))?;
    let regs = dev.map_bar(2).map_err(|e| alloc::format!("{e:?}"))?;
    let len = regs.len();
    ensure!(regs.register::<u32, ReadOnly>(len - 4).is_ok());
    ensure!(regs.register::<u32, ReadOnly>(len - 2).err() == Some(MmioError::OutOfBounds));
    ensure!(regs.register::<u64, ReadWrite>(u64::MAX - 3).err() == Some(MmioError::OutOfBounds));
    ensure!(regs.register::<u32, ReadOnly>(2).err() == Some(MmioError::Misaligned));
    let sub = regs.subregion(0x500, 0x10).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(sub.register::<u16, ReadOnly>(0x10).err() == Some(MmioError::OutOfBounds), "past a subregion");
    ensure!(regs.subregion(len - 8, 16).is_err(), "a subregion past the BAR");
    // Configuration writes to the header are the hal's.
    ensure!(dev.write_config_u16(0x04, 0).is_err(), "command register written by a driver");
    Ok(())
}

hal::dma_struct! {
    struct TestDesc { addr: DeviceAddr, len: u32, flags: u16, next: u16 }
}

fn dma_ring_round_trip() -> TestResult {
    let vga = find(0x1234, 0x1111).ok_or("no QEMU VGA function")?;
    let dev = pci::claim(vga.address).map_err(|e| alloc::format!("{e:?}"))?;
    let dma = dev.dma();
    let buf = dma.alloc(3000).map_err(|e| alloc::format!("{e:?}"))?;
    let mut ring = dma.alloc_ring::<TestDesc>(64).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(core::mem::size_of::<TestDesc>() == 16);
    ensure!(ring.get(63) == TestDesc::default(), "fresh ring not zeroed");
    let addr = buf.device_addr_at(100).ok_or("offset 100")?;
    ring.set(5, TestDesc { addr, len: 7, flags: 1, next: 6 });
    let back = ring.get(5);
    ensure!(back.addr == addr && back.len == 7 && back.next == 6);
    ensure!(buf.device_addr_at(3000).is_none(), "address past the buffer");
    ensure!(buf.read::<u32>(2998).is_none(), "read past the buffer");
    let free_before = hal::mm::free_frame_count();
    drop(buf);
    drop(ring);
    // Dropped buffers stay with the device until it is gone.
    ensure!(hal::mm::free_frame_count() == free_before, "DMA memory freed while the device may hold it");
    drop(dma);
    drop(dev);
    ensure!(hal::mm::free_frame_count() == free_before + 2, "DMA memory not returned after the device went");
    Ok(())
}

pub(super) const ETH_ARP: [u8; 2] = [0x08, 0x06];
const GUEST_IP: [u8; 4] = [10, 0, 2, 15];
pub(super) const GATEWAY_IP: [u8; 4] = [10, 0, 2, 2];

pub(super) fn arp_request(mac: MacAddress, out: &mut [u8]) {
    out[0..6].fill(0xFF);
    out[6..12].copy_from_slice(&mac.0);
    out[12..14].copy_from_slice(&ETH_ARP);
    // Ethernet, IPv4, hlen 6, plen 4, request.
    out[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    out[22..28].copy_from_slice(&mac.0);
    out[28..32].copy_from_slice(&GUEST_IP);
    out[32..38].fill(0);
    out[38..42].copy_from_slice(&GATEWAY_IP);
    out[42..60].fill(0);
}

/// Sends an ARP request for the gateway and waits (2 s at most) for the
/// reply; returns the gateway's MAC.
/// What the test's waker does: count, and wake the test thread.
pub(super) struct Waiter {
    pub(super) count: AtomicU64,
    flag: WakeFlag,
}

/// Sleeps until the waker runs or `deadline`.
pub(super) fn wait_for_wake(waiter: &Waiter, deadline: u64) {
    let _ = waiter.flag.wait(Some(deadline));
}

pub(super) fn arp_gateway(nic: &mut dyn NetDevice, woken: &Waiter) -> Result<[u8; 6], alloc::string::String> {
    let mac = nic.mac();
    nic.transmit(60, &mut |b| {
        arp_request(mac, b);
        TxMeta::default()
    })
    .map_err(|e| alloc::format!("transmit: {e:?}"))?;
    let deadline = crate::clock::now_ns() + 2_000_000_000;
    loop {
        let mut reply = None;
        nic.receive(16, &mut |frame, _| {
            if frame.len() >= 42 && frame[12..14] == ETH_ARP && frame[20..22] == [0, 2] && frame[28..32] == GATEWAY_IP {
                reply = Some(Vec::from(frame));
            }
        });
        if let Some(f) = reply {
            ensure!(f[0..6] == mac.0, "reply not to our MAC: {:02x?}", &f[0..6]);
            ensure!(f[32..38] == mac.0 && f[38..42] == GUEST_IP, "reply target {:?}", &f[32..42]);
            ensure!(f[6..12] == f[22..28], "Ethernet and ARP sender MACs differ");
            let mut gw = [0u8; 6];
            gw.copy_from_slice(&f[22..28]);
            return Ok(gw);
        }
        ensure!(
            crate::clock::now_ns() < deadline,
            "no ARP reply within 2 s (woken {} times)",
            woken.count.load(Ordering::Relaxed)
        );
        wait_for_wake(woken, deadline);
        nic.service();
    }
}

/// The MSI-X NIC: the first virtio function (00:03.0), whose MAC QEMU
/// numbers first (52:54:00:12:34:56). The others go back to the list.
fn take_nic() -> Result<Box<dyn NetDevice>, alloc::string::String> {
    let mut others = Vec::new();
    let mut found = None;
    while let Some(nic) = crate::net::netdevs::take("virtio-net") {
        if found.is_none() && nic.mac().0[5] == 0x56 {
            found = Some(nic);
        } else {
            others.push(nic);
        }
    }
    for nic in others {
        crate::net::netdevs::register(nic);
    }
    found.ok_or_else(|| "no virtio-net device with MAC 52:54:00:12:34:56 was registered".into())
}

/// The PCI address of the NIC `take_nic` takes.
fn first_nic_address() -> Result<pci::PciAddress, alloc::string::String> {
    find_virtio_net().map(|f| f.address).ok_or_else(|| "no virtio-net function".into())
}

/// A waker that counts its calls and wakes the current thread.
pub(super) fn waker_for(nic: &mut dyn NetDevice) -> Arc<Waiter> {
    let waiter = Arc::new(Waiter { count: AtomicU64::new(0), flag: WakeFlag::for_current() });
    let w = waiter.clone();
    nic.set_waker(Arc::new(move || {
        w.count.fetch_add(1, Ordering::AcqRel);
        let mut batch = WakeBatch::new();
        w.flag.wake_into(&mut batch);
    }));
    waiter
}

/// The test stage's second NIC has MSI-X turned off (`vectors=0`), so it
/// runs on a level-triggered IO APIC pin: the INTx path (ISR read in the
/// top half, pin masked until the bottom half ran) moves frames too.
fn virtio_net_intx_nic_answers_too() -> TestResult {
    use hal::device::IrqKind;
    let kinds = crate::drivers::irq_kinds("virtio-net");
    ensure!(
        kinds.contains(&Some(IrqKind::MsiX)) && kinds.contains(&Some(IrqKind::Intx)),
        "the test stage boots one MSI-X and one INTx virtio NIC; kinds {kinds:?}"
    );
    // Each NIC on its own slirp answers for 10.0.2.2.
    let mut nics = Vec::new();
    while let Some(nic) = crate::net::netdevs::take("virtio-net") {
        nics.push(nic);
    }
    let result = nics.iter_mut().try_for_each(|nic| {
        let wake = waker_for(nic.as_mut());
        arp_gateway(nic.as_mut(), &wake).map(|_| ())
    });
    let count = nics.len();
    for nic in nics {
        crate::net::netdevs::register(nic);
    }
    result?;
    ensure!(count == 2, "{count} virtio NICs registered");
    Ok(())
}

fn virtio_net_arp_gateway() -> TestResult {
    let mut nic = take_nic()?;
    ensure!(nic.link() == LinkState::Up, "link down");
    // QEMU numbers NICs' default MACs from 52:54:00:12:34:56.
    ensure!(nic.mac().0[..5] == [0x52, 0x54, 0, 0x12, 0x34], "MAC {:02x?} is not QEMU's default", nic.mac().0);
    let wake = waker_for(nic.as_mut());
    let irqs_before = hal::device::irq::dispatched_interrupts();
    let gw = arp_gateway(nic.as_mut(), &wake)?;
    // slirp's gateway answers with its fixed MAC 52:55:0a:00:02:02.
    ensure!(gw == [0x52, 0x55, 10, 0, 2, 2], "gateway MAC {gw:02x?}");
    // The reply may be found by polling before its interrupt is
    // dispatched (a loaded host, -smp 4): allow the dispatch a second.
    let irq_deadline = crate::clock::now_ns() + 1_000_000_000;
    while hal::device::irq::dispatched_interrupts() == irqs_before && crate::clock::now_ns() < irq_deadline {
        crate::sched::yield_now();
    }
    ensure!(hal::device::irq::dispatched_interrupts() > irqs_before, "no interrupt arrived");
    // The reply's interrupt reaches the waker through the bottom-half thread.
    let deadline = crate::clock::now_ns() + 1_000_000_000;
    while wake.count.load(Ordering::Acquire) == 0 && crate::clock::now_ns() < deadline {
        wait_for_wake(&wake, deadline);
    }
    ensure!(wake.count.load(Ordering::Relaxed) > 0, "the waker never ran");
    let s = nic.stats();
    ensure!(s.tx_packets == 1 && s.rx_packets >= 1, "{s:?}");
    // Too long, refused without a call to fill.
    let r = nic.transmit(1515, &mut |_| TxMeta::default());
    ensure!(r == Err(TxError::TooLong), "{r:?}");
    crate::net::netdevs::register(nic);
    Ok(())
}

/// With more than one CPU, the NIC's vector steered to the last CPU
/// interrupts there (the SMP ktest stage runs this at -smp 4).
fn virtio_net_irq_affinity() -> TestResult {
    let cpus = hal::smp::cpu_count();
    if cpus < 2 {
        return Ok(());
    }
    let mut nic = take_nic()?;
    let addr = first_nic_address()?;
    let wake = waker_for(nic.as_mut());
    let target = cpus - 1;
    let result = (|| {
        crate::drivers::set_irq_affinity(addr, target).map_err(|e| alloc::format!("{e:?}"))?;
        let before = hal::device::irq::dispatched_on(target);
        arp_gateway(nic.as_mut(), &wake)?;
        // The reply may be in the ring before its interrupt reaches the
        // other CPU: give the message a moment to arrive.
        let deadline = crate::clock::now_ns() + 1_000_000_000;
        while hal::device::irq::dispatched_on(target) == before && crate::clock::now_ns() < deadline {
            crate::sched::sleep_ns(1_000_000);
        }
        let after = hal::device::irq::dispatched_on(target);
        ensure!(after > before, "no interrupt on CPU {target} after steering there");
        crate::drivers::set_irq_affinity(addr, 0).map_err(|e| alloc::format!("{e:?}"))?;
        Ok(())
    })();
    crate::net::netdevs::register(nic);
    result
}

/// A reset while frames are in flight: the driver comes back with fresh
/// rings and the same address, and frames move again.
fn virtio_net_reset_mid_traffic() -> TestResult {
    let mut nic = take_nic()?;
    let wake = waker_for(nic.as_mut());
    let result = (|| {
        let mac = nic.mac();
        for _ in 0..8 {
            nic.transmit(60, &mut |b| {
                arp_request(mac, b);
                TxMeta::default()
            })
            .map_err(|e| alloc::format!("{e:?}"))?;
        }
        let free_before = hal::mm::free_frame_count();
        let tables_before = hal::device::iommu::table_frames();
        nic.reset().map_err(|e| alloc::format!("reset: {e:?}"))?;
        ensure!(nic.mac() == mac, "MAC changed across the reset");
        // The old rings went back to the kernel (the device forgot them);
        // under the IOMMU, mapping the new ones may have grown the
        // device's I/O page tables, which are kept.
        let tables_grown = hal::device::iommu::table_frames() - tables_before;
        ensure!(hal::mm::free_frame_count() + tables_grown >= free_before, "rings leaked by the reset");
        arp_gateway(nic.as_mut(), &wake)?;
        Ok(())
    })();
    crate::net::netdevs::register(nic);
    result
}

/// Sequential ARP round trips, timed (reported, not asserted).
fn virtio_net_arp_round_trip_timing() -> TestResult {
    let mut nic = take_nic()?;
    let wake = waker_for(nic.as_mut());
    const ROUNDS: u64 = 50;
    let start = crate::clock::now_ns();
    let result = (0..ROUNDS).try_for_each(|_| arp_gateway(nic.as_mut(), &wake).map(|_| ()));
    let ns = crate::clock::now_ns() - start;
    crate::net::netdevs::register(nic);
    result?;
    log::info!(
        "virtio-net: {ROUNDS} ARP round trips to slirp's gateway, {}.{:03} ms each",
        ns / ROUNDS / 1_000_000,
        ns / ROUNDS / 1000 % 1000
    );
    Ok(())
}

fn virtio_net_revoke_and_restart() -> TestResult {
    let mut nic = take_nic()?;
    let revoker = crate::drivers::take_revoker(first_nic_address()?).ok_or("no revoker kept for the NIC")?;
    revoker.revoke();
    let r = nic.transmit(60, &mut |_| TxMeta::default());
    ensure!(r == Err(TxError::Unavailable), "transmit on a revoked device: {r:?}");
    let addr = revoker.address();
    ensure!(pci::claim(addr).err() == Some(ClaimError::Busy), "claimed while the old driver holds it");
    drop(nic);
    drop(revoker);
    // A new driver instance on the same function, as a restart would make.
    let dev = pci::claim(addr).map_err(|e| alloc::format!("reclaim: {e:?}"))?;
    let mut fresh: Box<dyn NetDevice> =
        Box::new(virtio_net::VirtioNet::new(dev).map_err(|e| alloc::format!("restart: {e:?}"))?);
    let wake = waker_for(fresh.as_mut());
    let gw = arp_gateway(fresh.as_mut(), &wake)?;
    ensure!(gw == [0x52, 0x55, 10, 0, 2, 2], "gateway MAC after restart {gw:02x?}");
    crate::net::netdevs::register(fresh);
    Ok(())
}
