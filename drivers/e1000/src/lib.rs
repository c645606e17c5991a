//! The Intel 82540EM Gigabit Ethernet controller (QEMU's `-device e1000`,
//! PCI 8086:100E) as a [`netdev::NetDevice`].
//!
//! One receive and one transmit ring of legacy descriptors (8254x SDM 3.2
//! and 3.3), 256 entries each. Every descriptor owns a fixed 2 KiB slot of
//! one DMA buffer per direction (descriptor `i` is slot `i`), so a frame
//! is built or read in place and the driver copies nothing. A received
//! descriptor goes back to the device as soon as the stack has looked at
//! its frame, with the tail register written once per `receive` call.
//! Transmit descriptors all ask for a status write-back (RS), and
//! finished ones are reclaimed by their DD bit.
//!
//! Interrupts come on the INTx line (the 82540EM has no MSI), throttled
//! by ITR; the top half reads ICR (which acknowledges) and keeps the
//! causes for `service`, which reads the link state on a link status
//! change, notices a full receive ring or an overrun, folds the device's
//! clear-on-read error counters into [`Stats`], and brings the device
//! back up if it lost its configuration. Every such event is logged.
//!
//! Not used: checksum offload (only the context-descriptor form covers
//! TCP/UDP with a pseudo-header seed, and nothing in Kiln asks for it yet)
//! and jumbo frames.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod irq;
pub mod regs;

use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::device::{DmaBuffer, DmaRing, IrqHandler, IrqVector, MmioRegion, PciDevice, ReadOnly, ReadWrite, Register};
use netdev::{
    Capabilities, DeviceError, Events, LinkState, MacAddress, NetDevice, RxMeta, Stats, TxError, TxMeta, Waker,
};

use irq::Shared;
use regs::{ctrl, eerd, int, rctl, rxd, stat, status, tctl, txd, RxDesc, TxDesc};

/// Descriptors per ring: a multiple of 8 (rings are sized in 128-byte
/// units).
const RING: usize = 256;
/// Receive buffer size (RCTL.BSIZE 2048) and transmit slot size.
const SLOT: usize = 2048;
/// The largest untagged frame without FCS.
const MAX_FRAME: usize = 1514;
/// The shortest frame the stack may hand in: an Ethernet header. The
/// device pads to 60 bytes (TCTL.PSP).
const MIN_FRAME: usize = 14;
/// Interrupt throttling: at least 500 x 256 ns = 128 us between
/// interrupts, about 7,800 a second, the SDM's maximum observable rate;
/// the stack drains every frame that arrived meanwhile in one pass.
const ITR_INTERVAL: u32 = 500;
/// Receive delay timer: 0, so an interrupt is not held back beyond ITR.
const RDTR_DELAY: u32 = 0;
/// How many register reads a self-clearing bit gets to clear (QEMU clears
/// at once; the SDM asks for about a microsecond after a reset).
const SPIN_LIMIT: u32 = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// BAR 0 is not a memory BAR, or a register is outside it.
    NoRegisters,
    NoMemory,
    NoInterrupt,
    /// CTRL.RST did not clear.
    ResetTimedOut,
}

/// The registers the data path and setup use, made once.
struct Regs {
    bar: MmioRegion,
    ctrl: Register<u32, ReadWrite>,
    status: Register<u32, ReadOnly>,
    eerd: Register<u32, ReadWrite>,
    itr: Register<u32, ReadWrite>,
    ims: Register<u32, ReadWrite>,
    imc: Register<u32, ReadWrite>,
    rctl: Register<u32, ReadWrite>,
    tctl: Register<u32, ReadWrite>,
    tipg: Register<u32, ReadWrite>,
    rdbal: Register<u32, ReadWrite>,
    rdbah: Register<u32, ReadWrite>,
    rdlen: Register<u32, ReadWrite>,
    rdh: Register<u32, ReadWrite>,
    rdt: Register<u32, ReadWrite>,
    rdtr: Register<u32, ReadWrite>,
    radv: Register<u32, ReadWrite>,
    tdbal: Register<u32, ReadWrite>,
    tdbah: Register<u32, ReadWrite>,
    tdlen: Register<u32, ReadWrite>,
    tdh: Register<u32, ReadWrite>,
    tdt: Register<u32, ReadWrite>,
    ral0: Register<u32, ReadWrite>,
    rah0: Register<u32, ReadWrite>,
}

impl Regs {
    fn new(bar: MmioRegion) -> Result<Regs, Error> {
        let rw = |o: u64| bar.register::<u32, ReadWrite>(o).map_err(|_| Error::NoRegisters);
        Ok(Regs {
            ctrl: rw(regs::CTRL)?,
            status: bar.register(regs::STATUS).map_err(|_| Error::NoRegisters)?,
            eerd: rw(regs::EERD)?,
            itr: rw(regs::ITR)?,
            ims: rw(regs::IMS)?,
            imc: rw(regs::IMC)?,
            rctl: rw(regs::RCTL)?,
            tctl: rw(regs::TCTL)?,
            tipg: rw(regs::TIPG)?,
            rdbal: rw(regs::RDBAL)?,
            rdbah: rw(regs::RDBAH)?,
            rdlen: rw(regs::RDLEN)?,
            rdh: rw(regs::RDH)?,
            rdt: rw(regs::RDT)?,
            rdtr: rw(regs::RDTR)?,
            radv: rw(regs::RADV)?,
            tdbal: rw(regs::TDBAL)?,
            tdbah: rw(regs::TDBAH)?,
            tdlen: rw(regs::TDLEN)?,
            tdh: rw(regs::TDH)?,
            tdt: rw(regs::TDT)?,
            ral0: rw(regs::RAL0)?,
            rah0: rw(regs::RAH0)?,
            bar,
        })
    }

    /// A clear-on-read statistics register (0 if it cannot be read).
    fn stat(&self, offset: u64) -> u64 {
        match self.bar.read::<u32>(offset) {
            Ok(u32::MAX) | Err(_) => 0,
            Ok(v) => u64::from(v),
        }
    }

    /// EEPROM word `addr` through EERD (SDM 13.4.4), or `None` if the
    /// read never finished.
    fn eeprom_word(&self, addr: u8) -> Option<u16> {
        self.eerd.write(eerd::START | (u32::from(addr) << eerd::ADDR_SHIFT));
        for _ in 0..SPIN_LIMIT {
            let v = self.eerd.read();
            if v == u32::MAX {
                return None;
            }
            if v & eerd::DONE != 0 {
                return Some((v >> eerd::DATA_SHIFT) as u16);
            }
        }
        None
    }
}

/// Counters the driver keeps beyond [`Stats`], for tests and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// Times `service` or `receive` found every receive descriptor full.
    pub rx_ring_exhausted: u64,
    /// Receiver overrun interrupts (RXO).
    pub rx_overruns: u64,
    /// Link status change interrupts seen.
    pub link_changes: u64,
    /// Resets: asked for, or after the device was found unconfigured.
    pub resets: u64,
    /// Interrupts the top half accepted.
    pub interrupts: u64,
    /// Interrupts on its line the top half found no cause for.
    pub not_mine: u64,
}

pub struct E1000 {
    pci: PciDevice,
    regs: Regs,
    rx: DmaRing<RxDesc>,
    rx_buf: DmaBuffer,
    /// The next receive descriptor the device will write back.
    rx_next: usize,
    /// The value last written to RDT: the descriptor the driver holds
    /// back so the tail never meets the head.
    rx_tail: usize,
    /// The current frame spans descriptors (too long): drop through EOP.
    rx_discarding: bool,
    /// A full ring was logged; cleared once descriptors went back.
    rx_full_logged: bool,
    tx: DmaRing<TxDesc>,
    tx_buf: DmaBuffer,
    /// The next transmit descriptor to fill, and the oldest in flight.
    tx_next: usize,
    tx_clean: usize,
    tx_in_flight: usize,
    mac: MacAddress,
    link: LinkState,
    stats: Stats,
    health: Health,
    shared: Arc<Shared>,
    /// Held for their lifetime: dropping a vector frees it.
    vectors: Vec<IrqVector>,
}

impl E1000 {
    /// Resets the device, reads its address and brings both rings up.
    pub fn new(pci: PciDevice) -> Result<E1000, Error> {
        let bar = pci.map_bar(0).map_err(|_| Error::NoRegisters)?;
        let icr = bar.register::<u32, ReadOnly>(regs::ICR).map_err(|_| Error::NoRegisters)?;
        let regs = Regs::new(bar)?;
        let dma = pci.dma();
        let rx = dma.alloc_ring::<RxDesc>(RING).map_err(|_| Error::NoMemory)?;
        let tx = dma.alloc_ring::<TxDesc>(RING).map_err(|_| Error::NoMemory)?;
        let rx_buf = dma.alloc(RING * SLOT).map_err(|_| Error::NoMemory)?;
        let tx_buf = dma.alloc(RING * SLOT).map_err(|_| Error::NoMemory)?;
        let shared = Arc::new(Shared::new(icr));
        let mut nic = E1000 {
            pci,
            regs,
            rx,
            rx_buf,
            rx_next: 0,
            rx_tail: 0,
            rx_discarding: false,
            rx_full_logged: false,
            tx,
            tx_buf,
            tx_next: 0,
            tx_clean: 0,
            tx_in_flight: 0,
            mac: MacAddress::default(),
            link: LinkState::Down,
            stats: Stats::default(),
            health: Health::default(),
            shared,
            vectors: Vec::new(),
        };
        nic.reset_device()?;
        nic.mac = nic.read_mac();
        let handler: Arc<dyn IrqHandler> = nic.shared.clone();
        nic.vectors = nic.pci.request_irqs(&[handler]).map_err(|_| Error::NoInterrupt)?;
        nic.pci.set_bus_master(true);
        nic.configure();
        Ok(nic)
    }

    /// Masks every interrupt and resets the MAC (SDM 14.3: CTRL.RST,
    /// self-clearing), leaving the device with no ring addresses.
    fn reset_device(&mut self) -> Result<(), Error> {
        self.regs.imc.write(u32::MAX);
        self.regs.rctl.write(0);
        self.regs.tctl.write(0);
        self.regs.ctrl.write(self.regs.ctrl.read() | ctrl::RST);
        let mut cleared = false;
        for _ in 0..SPIN_LIMIT {
            let c = self.regs.ctrl.read();
            if c != u32::MAX && c & ctrl::RST == 0 {
                cleared = true;
                break;
            }
        }
        if !cleared {
            return Err(Error::ResetTimedOut);
        }
        // The reset unmasked nothing, but mask again as the SDM does, and
        // drop causes latched before it.
        self.regs.imc.write(u32::MAX);
        self.shared.clear();
        Ok(())
    }

    /// The address in EEPROM words 0-2 (SDM 5.6.1), else what the device
    /// loaded into receive address 0 at reset.
    fn read_mac(&self) -> MacAddress {
        let mut mac = [0u8; 6];
        let words: Option<Vec<u16>> = (0..3).map(|w| self.regs.eeprom_word(w)).collect();
        match words {
            Some(w) => {
                for (i, word) in w.iter().enumerate() {
                    mac[2 * i..2 * i + 2].copy_from_slice(&word.to_le_bytes());
                }
            }
            None => {
                mac[..4].copy_from_slice(&self.regs.ral0.read().to_le_bytes());
                mac[4..].copy_from_slice(&self.regs.rah0.read().to_le_bytes()[..2]);
            }
        }
        MacAddress(mac)
    }

    /// Programs a freshly reset device: link, address, filters, both
    /// rings, throttling, interrupts; receive and transmit on last.
    fn configure(&mut self) {
        let r = &self.regs;
        r.ctrl.write((r.ctrl.read() | ctrl::SLU | ctrl::ASDE) & !(ctrl::LRST | ctrl::PHY_RST | ctrl::VME));
        let m = self.mac.0;
        r.ral0.write(u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
        // Address valid (bit 31).
        r.rah0.write(u32::from_le_bytes([m[4], m[5], 0, 0]) | 1 << 31);
        for i in 0..regs::MTA_WORDS {
            let _ = r.bar.write::<u32>(regs::MTA + 4 * i, 0);
        }
        // Clear the statistics the reset left (they clear on read).
        for s in [stat::CRCERRS, stat::MPC, stat::RLEC, stat::GPRC, stat::GPTC, stat::RNBC, stat::ROC] {
            let _ = r.stat(s);
        }

        for i in 0..RING {
            self.rx.set(i, self.fresh_rx(i));
            self.tx.set(i, TxDesc::default());
        }
        self.rx_buf.sync_for_device();
        let r = &self.regs;
        let ring_bytes = (RING * core::mem::size_of::<RxDesc>()) as u32;
        r.rdbal.write_addr_low(self.rx.device_addr());
        r.rdbah.write_addr_high(self.rx.device_addr());
        r.rdlen.write(ring_bytes);
        r.rdh.write(0);
        // Every descriptor but the last is the device's.
        r.rdt.write((RING - 1) as u32);
        r.rdtr.write(RDTR_DELAY);
        r.radv.write(0);
        r.tdbal.write_addr_low(self.tx.device_addr());
        r.tdbah.write_addr_high(self.tx.device_addr());
        r.tdlen.write(ring_bytes);
        r.tdh.write(0);
        r.tdt.write(0);
        r.tipg.write(regs::TIPG_COPPER);
        r.itr.write(ITR_INTERVAL);
        r.tctl.write(tctl::EN | tctl::PSP | tctl::CT | tctl::COLD);
        r.rctl.write(rctl::EN | rctl::MPE | rctl::BAM | rctl::SECRC | rctl::BSIZE_2048 | rctl::RDMTS_HALF);
        r.ims.write(int::USED);
        self.rx_next = 0;
        self.rx_tail = RING - 1;
        self.rx_discarding = false;
        self.rx_full_logged = false;
        self.tx_next = 0;
        self.tx_clean = 0;
        self.tx_in_flight = 0;
        self.link = self.read_link();
    }

    fn fresh_rx(&self, i: usize) -> RxDesc {
        let addr = self.rx_buf.device_addr_at(i * SLOT).unwrap_or_default();
        RxDesc { addr, ..RxDesc::default() }
    }

    fn read_link(&self) -> LinkState {
        let s = self.regs.status.read();
        if s != u32::MAX && s & status::LU != 0 {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    /// Resets the device and programs it again with the same address and
    /// the same (now forgotten by the device) ring memory.
    fn restart(&mut self) -> Result<(), Error> {
        let dropped = self.tx_in_flight;
        self.reset_device()?;
        self.configure();
        self.health.resets += 1;
        self.stats.tx_dropped += dropped as u64;
        log::info!(
            "e1000 {}: reset; {dropped} frame(s) in flight dropped, rings reprogrammed, link {:?}",
            self.pci.address(),
            self.link
        );
        Ok(())
    }

    /// The device no longer has the configuration `configure` gave it (it
    /// was reset underneath the driver).
    fn lost_configuration(&self) -> bool {
        let rctl = self.regs.rctl.read();
        rctl != u32::MAX && (rctl & rctl::EN == 0 || self.regs.rdlen.read() != (RING * 16) as u32)
    }

    fn reclaim_tx(&mut self) -> bool {
        let mut any = false;
        while self.tx_in_flight > 0 {
            let d = self.tx.get(self.tx_clean);
            if d.status & txd::STA_DD == 0 {
                break;
            }
            self.tx_clean = (self.tx_clean + 1) % RING;
            self.tx_in_flight -= 1;
            any = true;
        }
        any
    }

    /// Whether the device has written back every descriptor it was given.
    fn rx_ring_full(&self) -> bool {
        let last_given = (self.rx_tail + RING - 1) % RING;
        self.rx.get(last_given).status & rxd::DD != 0
    }

    fn note_rx_full(&mut self) {
        if self.rx_ring_full() {
            if !self.rx_full_logged {
                self.rx_full_logged = true;
                self.health.rx_ring_exhausted += 1;
                log::warn!(
                    "e1000 {}: receive ring exhausted ({} frames waiting); the device holds further frames until descriptors return",
                    self.pci.address(),
                    RING - 1
                );
            }
        } else {
            self.rx_full_logged = false;
        }
    }

    /// Adds the device's clear-on-read error counters to `stats`.
    fn fold_hw_stats(&mut self) {
        let missed = self.regs.stat(stat::MPC);
        let errors = self.regs.stat(stat::CRCERRS) + self.regs.stat(stat::RLEC) + self.regs.stat(stat::ROC);
        self.stats.rx_dropped += missed;
        self.stats.rx_errors += errors;
    }

    /// Interrupts the top half accepted, resets, exhaustions, link changes.
    pub fn health(&self) -> Health {
        Health {
            interrupts: self.shared.interrupts.load(core::sync::atomic::Ordering::Relaxed),
            not_mine: self.shared.not_mine(),
            ..self.health
        }
    }

    /// How the device interrupts (INTx on the 82540EM).
    pub fn irq_kind(&self) -> Option<hal::device::IrqKind> {
        self.vectors.first().map(|v| v.kind())
    }
}

impl NetDevice for E1000 {
    fn driver_name(&self) -> &'static str {
        "e1000"
    }

    fn mac(&self) -> MacAddress {
        self.mac
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { mtu: 1500, ..Capabilities::default() }
    }

    fn link(&self) -> LinkState {
        self.link
    }

    fn set_waker(&mut self, waker: Waker) {
        self.shared.set_waker(waker);
    }

    fn transmit(&mut self, len: usize, fill: &mut dyn FnMut(&mut [u8]) -> TxMeta) -> Result<(), TxError> {
        if self.pci.is_revoked() {
            return Err(TxError::Unavailable);
        }
        if !(MIN_FRAME..=MAX_FRAME).contains(&len) {
            return Err(TxError::TooLong);
        }
        if self.link == LinkState::Down {
            return Err(TxError::LinkDown);
        }
        // One descriptor stays empty so the tail never reaches the head.
        if self.tx_in_flight == RING - 1 && !self.reclaim_tx() {
            return Err(TxError::Busy);
        }
        let slot = self.tx_next;
        let start = slot * SLOT;
        // No offloads (the capabilities name none): a frame asking for one
        // is dropped here, before the device sees it (the caller counts
        // it: the frame was built).
        if fill(&mut self.tx_buf.as_mut_slice()[start..start + len]) != TxMeta::default() {
            return Err(TxError::Unavailable);
        }
        let addr = self.tx_buf.device_addr_at(start).ok_or(TxError::Unavailable)?;
        self.tx.set(
            slot,
            TxDesc { addr, length: len as u16, cmd: txd::CMD_EOP | txd::CMD_IFCS | txd::CMD_RS, ..TxDesc::default() },
        );
        self.tx_buf.sync_for_device();
        self.tx_next = (slot + 1) % RING;
        self.tx_in_flight += 1;
        self.regs.tdt.write(self.tx_next as u32);
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += len as u64;
        Ok(())
    }

    fn receive(&mut self, budget: usize, sink: &mut dyn FnMut(&[u8], RxMeta)) -> usize {
        if self.pci.is_revoked() {
            return 0;
        }
        self.note_rx_full();
        let mut handed = 0;
        let mut returned = false;
        while handed < budget {
            let i = self.rx_next;
            let d = self.rx.get(i);
            if d.status & rxd::DD == 0 {
                break;
            }
            self.rx_buf.sync_for_cpu();
            let len = usize::from(d.length);
            let whole = d.status & rxd::EOP != 0;
            if self.rx_discarding || !whole || d.errors & rxd::ERR_FRAME != 0 || !(MIN_FRAME..=SLOT).contains(&len) {
                self.stats.rx_errors += 1;
                self.rx_discarding = !whole;
            } else {
                let checksum_ok =
                    d.status & rxd::IXSM == 0 && d.status & rxd::TCPCS != 0 && d.errors & rxd::ERR_TCPE == 0;
                let start = i * SLOT;
                sink(&self.rx_buf.as_slice()[start..start + len], RxMeta { checksum_ok });
                self.stats.rx_packets += 1;
                self.stats.rx_bytes += len as u64;
                handed += 1;
            }
            // The descriptor goes back with its slot; the device may use
            // it once the tail passes it.
            self.rx.set(i, self.fresh_rx(i));
            self.rx_tail = i;
            self.rx_next = (i + 1) % RING;
            returned = true;
        }
        if returned {
            self.rx_buf.sync_for_device();
            self.regs.rdt.write(self.rx_tail as u32);
        }
        handed
    }

    fn service(&mut self) -> Events {
        if self.pci.is_revoked() {
            return Events::default();
        }
        let causes = self.shared.take_causes();
        if self.lost_configuration() {
            log::warn!("e1000 {}: the device lost its configuration; bringing it up again", self.pci.address());
            let was_reset = self.restart().is_ok();
            return Events { rx_ready: false, tx_room: was_reset, link_changed: true, was_reset };
        }
        if causes & int::RXO != 0 {
            self.health.rx_overruns += 1;
            log::warn!("e1000 {}: receiver overrun", self.pci.address());
        }
        self.fold_hw_stats();
        let link = self.read_link();
        let link_changed = link != self.link;
        if causes & int::LSC != 0 || link_changed {
            self.health.link_changes += 1;
        }
        if link_changed {
            log::info!("e1000 {}: link {}", self.pci.address(), if link == LinkState::Up { "up" } else { "down" });
        }
        self.link = link;
        self.note_rx_full();
        let tx_room = self.reclaim_tx();
        let rx_ready = self.rx.get(self.rx_next).status & rxd::DD != 0;
        Events { rx_ready, tx_room, link_changed, was_reset: false }
    }

    fn reset(&mut self) -> Result<(), DeviceError> {
        if self.pci.is_revoked() {
            return Err(DeviceError::Revoked);
        }
        self.restart().map_err(|_| DeviceError::ResetFailed)
    }

    fn stats(&self) -> Stats {
        self.stats
    }
}
