//! virtio-net under the faults issue 12 names beside the reset (which
//! `device_tests` covers): the link taken down and up from outside (the
//! monitor's `set_link`, which xtask runs when the kernel prints the
//! request; the device reports it in its configuration's status field and
//! raises a configuration-change interrupt), on the MSI-X NIC (`n0`, the
//! configuration vector) and on the INTx one (`n1`, ISR bit 1); and the
//! receive queue exhausted by answers the driver does not take, then
//! drained. The driver logs each (link up/down, queue exhausted) and must
//! carry frames again afterwards.

use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;

use netdev::NetDevice;

use super::device_tests::{arp_gateway, waker_for, Waiter};
use super::e1000_tests::{drain, is_gateway_reply, link_down_and_up_on, send_arp_requests};
use super::{KTest, TestResult};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "device::virtio_net_link_down_and_up_msix", run: link_down_and_up_msix },
    KTest { name: "device::virtio_net_link_down_and_up_intx", run: link_down_and_up_intx },
    KTest { name: "device::virtio_net_rx_exhaustion", run: rx_exhaustion },
];

/// The driver's receive queue size (QEMU's default `rx_queue_size`).
const RX_QUEUE: usize = 256;

/// Takes the virtio NIC whose MAC ends in `last` (QEMU numbers them from
/// :56 in command-line order: `n0` then `n1`), runs `body` on it and
/// registers every device again whatever the outcome.
fn with_virtio(last: u8, body: impl FnOnce(&mut dyn NetDevice, &Waiter) -> TestResult) -> TestResult {
    let mut nics: Vec<Box<dyn NetDevice>> = Vec::new();
    while let Some(nic) = crate::net::netdevs::take("virtio-net") {
        nics.push(nic);
    }
    let result = match nics.iter_mut().find(|n| n.mac().0[5] == last) {
        Some(nic) => {
            let wake = waker_for(nic.as_mut());
            body(nic.as_mut(), &wake)
        }
        None => Err(format!("no virtio-net device with a MAC ending in {last:02x} (the test stage adds two)")),
    };
    for nic in nics {
        crate::net::netdevs::register(nic);
    }
    result
}

fn link_down_and_up_msix() -> TestResult {
    link_down_and_up("n0", 0x56)
}

fn link_down_and_up_intx() -> TestResult {
    link_down_and_up("n1", 0x57)
}

/// `set_link off` and `on` through the virtio-net device's configuration
/// interrupt (see [`link_down_and_up_on`]).
fn link_down_and_up(netdev: &str, last: u8) -> TestResult {
    with_virtio(last, |nic, wake| link_down_and_up_on(nic, wake, netdev))
}

/// Sends `COUNT` ARP requests without receiving, so the answers fill
/// every receive buffer the device has. The first drain must find the
/// queue full. QEMU's virtio-net does not drop what does not fit (unlike
/// e1000): it holds the frames in its netdev queue until the driver gives
/// buffers back and notifies, so every answer must arrive in the end, and
/// the ordinary path must work afterwards. A driver that reposts without
/// notifying leaves them held (the test then finds answers missing).
fn rx_exhaustion() -> TestResult {
    with_virtio(0x56, |nic, wake| {
        const COUNT: usize = 600;
        let mac = nic.mac();
        arp_gateway(nic, wake)?;
        drain(nic);
        let before = nic.stats();
        let started = crate::clock::now_ns();
        let deadline = started + 20_000_000_000;
        send_arp_requests(nic, mac, COUNT, deadline)?;
        // QEMU answers each request as it takes it from the transmit
        // queue, so once nothing more is reclaimed for 100 ms every
        // answer has been put in a buffer or held back.
        let mut quiet_since = crate::clock::now_ns();
        while crate::clock::now_ns() - quiet_since < 100_000_000 {
            ensure!(crate::clock::now_ns() < deadline, "transmits still completing after 20 s");
            crate::sched::sleep_ns(10_000_000);
            if nic.service().tx_room {
                quiet_since = crate::clock::now_ns();
            }
        }
        let mut replies = 0;
        let first = nic.receive(usize::MAX, &mut |f, _| replies += usize::from(is_gateway_reply(f, mac)));
        ensure!(first >= RX_QUEUE, "first drain took {first} frames, not a full queue of {RX_QUEUE}");
        let mut quiet_since = crate::clock::now_ns();
        loop {
            let now = crate::clock::now_ns();
            ensure!(now < deadline, "answers still arriving after 20 s ({replies} of {COUNT})");
            if now - quiet_since > 300_000_000 {
                break;
            }
            let n = nic.receive(64, &mut |f, _| replies += usize::from(is_gateway_reply(f, mac)));
            if n == 0 {
                super::device_tests::wait_for_wake(wake, (now + 10_000_000).min(deadline));
                nic.service();
            } else {
                quiet_since = crate::clock::now_ns();
            }
        }
        let after = nic.stats();
        ensure!(replies == COUNT, "{replies} answers to {COUNT} requests after the queue ran dry");
        ensure!(after.tx_packets - before.tx_packets == COUNT as u64, "{before:?} -> {after:?}");
        ensure!(after.rx_errors == before.rx_errors, "receive errors {before:?} -> {after:?}");
        let ms = (crate::clock::now_ns() - started) / 1_000_000;
        log::info!(
            "virtio-net: {COUNT} ARP requests into an exhausted receive queue: first drain {first} frames, all {replies} answers received, {ms} ms"
        );
        arp_gateway(nic, wake)?;
        Ok(())
    })
}
