//! The stack's receive adapter (`net::inet::iface`) against a scripted
//! NIC: what smoltcp is handed for frames a device with receive checksum
//! offload lends, whole or in pieces. A frame the device vouched for
//! (`RxMeta::checksum_ok`, virtio's `DATA_VALID` or `NEEDS_CSUM`) passes
//! unchecked; one it did not vouch for is checked in software and dropped
//! if its TCP/UDP checksum is wrong, as smoltcp would drop it on a device
//! without the offload. A large receive's pieces must arrive joined, byte
//! for byte.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;

use netdev::{
    Capabilities, DeviceError, Events, LinkState, MacAddress, NetDevice, RxMeta, Stats, TxError, TxMeta, Waker,
};
use smoltcp::phy::{Device, RxToken};
use smoltcp::time::Instant;

use super::{KTest, TestResult};
use crate::ensure;
use crate::net::inet::iface::{IfaceDevice, NicDevice};

pub const TESTS: &[KTest] = &[
    KTest {
        name: "netrx::bad_checksum_without_data_valid_is_dropped",
        run: bad_checksum_without_data_valid_is_dropped,
    },
    KTest { name: "netrx::pieces_are_joined_byte_for_byte", run: pieces_are_joined_byte_for_byte },
];

/// A NIC that lends the frames it was given, each split into `pieces`
/// parts (as a merged large receive is), with the meta given.
struct Scripted {
    frames: VecDeque<(Vec<u8>, RxMeta)>,
    pieces: usize,
    rx_checksum: bool,
}

impl NetDevice for Scripted {
    fn driver_name(&self) -> &'static str {
        "scripted"
    }
    fn mac(&self) -> MacAddress {
        MacAddress([2, 0, 0, 0, 0, 1])
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities { mtu: 1500, rx_checksum: self.rx_checksum, ..Capabilities::default() }
    }
    fn link(&self) -> LinkState {
        LinkState::Up
    }
    fn set_waker(&mut self, _waker: Waker) {}
    fn transmit(&mut self, _len: usize, _fill: &mut dyn FnMut(&mut [u8]) -> TxMeta) -> Result<(), TxError> {
        Err(TxError::Busy)
    }
    fn receive(&mut self, budget: usize, sink: &mut dyn FnMut(&[u8], RxMeta)) -> usize {
        self.receive_parts(budget, &mut |p, m| {
            let whole: Vec<u8> = p.concat();
            sink(&whole, m)
        })
    }
    fn receive_parts(&mut self, budget: usize, sink: &mut dyn FnMut(&[&[u8]], RxMeta)) -> usize {
        let mut n = 0;
        while n < budget {
            let Some((f, meta)) = self.frames.pop_front() else { break };
            let step = f.len().div_ceil(self.pieces.max(1)).max(1);
            let parts: Vec<&[u8]> = f.chunks(step).collect();
            sink(&parts, meta);
            n += 1;
        }
        n
    }
    fn service(&mut self) -> Events {
        Events::default()
    }
    fn reset(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
    fn stats(&self) -> Stats {
        Stats::default()
    }
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn sum16(b: &[u8]) -> u32 {
    b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum()
}

/// An Ethernet/IPv4/UDP frame from 10.0.2.2:5000 to 10.0.2.15:6000 with
/// `payload` and a right IP and UDP checksum.
fn udp_frame(payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let mut f = Vec::new();
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00]);
    let total = (20 + udp_len) as u16;
    let mut ip = [0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 2, 2, 10, 0, 2, 15];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let c = !fold(sum16(&ip));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let mut udp = Vec::new();
    udp.extend_from_slice(&5000u16.to_be_bytes());
    udp.extend_from_slice(&6000u16.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let pseudo = sum16(&ip[12..20]) + 17 + udp_len as u32;
    let c = match !fold(pseudo + sum16(&udp)) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&udp);
    f
}

/// What the adapter hands smoltcp for each scripted frame: Some(bytes)
/// for a frame, None for a dropped one (an empty frame smoltcp passes
/// over); and the adapter's drop count after.
/// Each frame's bytes as smoltcp got them (None: dropped), and the
/// adapter's drop count.
type Handed = (Vec<Option<Vec<u8>>>, u64);

fn run(frames: Vec<(Vec<u8>, RxMeta)>, pieces: usize) -> Result<Handed, alloc::string::String> {
    let count = frames.len();
    let dev = Scripted { frames: frames.into(), pieces, rx_checksum: true };
    let nic = NicDevice::new(Box::new(dev)).map_err(|e| alloc::format!("NicDevice::new: {e:?}"))?;
    let mut dev = IfaceDevice::Nic(nic);
    let mut out = Vec::new();
    for _ in 0..count {
        let Some((rx, _tx)) = dev.receive(Instant::from_millis(0)) else {
            return Err("the adapter handed over nothing while frames waited".into());
        };
        let bytes = rx.consume(|f| f.to_vec());
        out.push((!bytes.is_empty()).then_some(bytes));
    }
    ensure!(dev.receive(Instant::from_millis(0)).is_none(), "a token after the last frame");
    Ok((out, dev.counters().rx_dropped))
}

fn bad_checksum_without_data_valid_is_dropped() -> TestResult {
    let good = udp_frame(b"the checksum of this datagram is right");
    let mut bad = udp_frame(b"the checksum of this datagram is wrong");
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    let valid = RxMeta { checksum_ok: true };
    let unchecked = RxMeta { checksum_ok: false };
    let (out, dropped) = run(
        alloc::vec![(good.clone(), unchecked), (bad.clone(), unchecked), (bad.clone(), valid), (good.clone(), valid)],
        1,
    )?;
    ensure!(out[0].as_deref() == Some(&good[..]), "a right checksum the device did not vouch for was not passed on");
    ensure!(out[1].is_none(), "a wrong checksum without DATA_VALID reached smoltcp");
    // The device vouched for it: the stack trusts the device, as Linux
    // does with CHECKSUM_UNNECESSARY.
    ensure!(out[2].as_deref() == Some(&bad[..]), "a frame the device vouched for was checked again");
    ensure!(out[3].as_deref() == Some(&good[..]));
    ensure!(dropped == 1, "{dropped} frames counted dropped, 1 expected");
    // The same wrong frame in pieces (a large receive) is dropped too.
    let (out, dropped) = run(alloc::vec![(bad, unchecked), (good.clone(), unchecked)], 3)?;
    ensure!(out[0].is_none() && out[1].as_deref() == Some(&good[..]) && dropped == 1);
    Ok(())
}

fn pieces_are_joined_byte_for_byte() -> TestResult {
    // Sizes around the spare buffers' classes: small, an MTU frame, a
    // large receive, and one longer than a spare large buffer.
    let mut frames = Vec::new();
    for len in [100usize, 1458, 30_000, 65_507] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        frames.push((udp_frame(&payload), RxMeta { checksum_ok: true }));
    }
    let want: Vec<Vec<u8>> = frames.iter().map(|f| f.0.clone()).collect();
    for pieces in [1, 2, 17, 33] {
        let (out, dropped) = run(frames.clone(), pieces)?;
        ensure!(dropped == 0, "{dropped} dropped with {pieces} pieces");
        for (got, want) in out.iter().zip(want.iter()) {
            ensure!(
                got.as_deref() == Some(&want[..]),
                "a {}-byte frame in {pieces} pieces came out changed",
                want.len()
            );
        }
    }
    // Twice over, so reused spare buffers are read only up to each
    // frame's own length.
    let short = udp_frame(b"short");
    let (out, _) = run(alloc::vec![frames[2].clone(), (short.clone(), RxMeta { checksum_ok: true })], 5)?;
    ensure!(out[1].as_deref() == Some(&short[..]), "a reused buffer leaked an earlier frame's bytes");
    Ok(())
}
