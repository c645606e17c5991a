//! The 82540EM's registers, bits and descriptor layouts, as the Intel
//! PCI/PCI-X Family of Gigabit Ethernet Controllers Software Developer's
//! Manual (8254x SDM, rev. 4.0) gives them: section 13 for the registers,
//! 3.2.3 and 3.3.3 for the legacy receive and transmit descriptors.
//! Offsets are into BAR 0 (128 KiB of memory-mapped registers).

/// Device control (13.4.1).
pub const CTRL: u64 = 0x0000;
/// Device status (13.4.2), read only.
pub const STATUS: u64 = 0x0008;
/// EEPROM read (13.4.4): start, done, address, data.
pub const EERD: u64 = 0x0014;
/// Interrupt cause read (13.4.17): reading clears it.
pub const ICR: u64 = 0x00C0;
/// Interrupt throttling (13.4.18): the minimum gap between interrupts, in
/// 256 ns units.
pub const ITR: u64 = 0x00C4;
/// Interrupt mask set/read and clear (13.4.20, 13.4.21).
pub const IMS: u64 = 0x00D0;
pub const IMC: u64 = 0x00D8;
/// Receive control (13.4.22).
pub const RCTL: u64 = 0x0100;
/// Transmit control (13.4.33) and inter-packet gap (13.4.34).
pub const TCTL: u64 = 0x0400;
pub const TIPG: u64 = 0x0410;
/// Receive ring: base (low, high), length in bytes, head, tail (13.4.24-28).
pub const RDBAL: u64 = 0x2800;
pub const RDBAH: u64 = 0x2804;
pub const RDLEN: u64 = 0x2808;
pub const RDH: u64 = 0x2810;
pub const RDT: u64 = 0x2818;
/// Receive delay timer (13.4.29), 1.024 us units, and the absolute delay
/// that bounds it (13.4.30).
pub const RDTR: u64 = 0x2820;
pub const RADV: u64 = 0x282C;
/// Transmit ring, as for receive (13.4.35-39).
pub const TDBAL: u64 = 0x3800;
pub const TDBAH: u64 = 0x3804;
pub const TDLEN: u64 = 0x3808;
pub const TDH: u64 = 0x3810;
pub const TDT: u64 = 0x3818;
/// Multicast table array, 128 words (13.4.38).
pub const MTA: u64 = 0x5200;
pub const MTA_WORDS: u64 = 128;
/// Receive address 0, low and high (13.4.39-40).
pub const RAL0: u64 = 0x5400;
pub const RAH0: u64 = 0x5404;

/// Statistics (13.7): 32-bit counters that clear when read.
pub mod stat {
    /// CRC errors.
    pub const CRCERRS: u64 = 0x4000;
    /// Missed packets: dropped for lack of room in the receive FIFO.
    pub const MPC: u64 = 0x4010;
    /// Receive length errors.
    pub const RLEC: u64 = 0x4040;
    /// Good packets received and transmitted.
    pub const GPRC: u64 = 0x4074;
    pub const GPTC: u64 = 0x4080;
    /// Receive "no buffers": a frame found no free descriptor.
    pub const RNBC: u64 = 0x40A0;
    /// Receive oversize.
    pub const ROC: u64 = 0x40B0;
}

pub mod ctrl {
    /// Auto-speed detection.
    pub const ASDE: u32 = 1 << 5;
    /// Set link up: the MAC takes the link state from the PHY.
    pub const SLU: u32 = 1 << 6;
    /// Link reset.
    pub const LRST: u32 = 1 << 3;
    /// Device reset; self-clearing.
    pub const RST: u32 = 1 << 26;
    /// VLAN mode.
    pub const VME: u32 = 1 << 30;
    pub const PHY_RST: u32 = 1 << 31;
}

pub mod status {
    /// Link up.
    pub const LU: u32 = 1 << 1;
}

pub mod eerd {
    pub const START: u32 = 1 << 0;
    pub const DONE: u32 = 1 << 4;
    pub const ADDR_SHIFT: u32 = 8;
    pub const DATA_SHIFT: u32 = 16;
}

/// Interrupt causes (ICR, IMS, IMC share the layout).
pub mod int {
    /// A transmit descriptor was written back.
    pub const TXDW: u32 = 1 << 0;
    /// Link status change.
    pub const LSC: u32 = 1 << 2;
    /// Free receive descriptors fell below the minimum threshold.
    pub const RXDMT0: u32 = 1 << 4;
    /// Receiver overrun (no descriptor, or the FIFO was full).
    pub const RXO: u32 = 1 << 6;
    /// Receive timer: frames were written back.
    pub const RXT0: u32 = 1 << 7;
    /// Everything the driver uses.
    pub const USED: u32 = TXDW | LSC | RXDMT0 | RXO | RXT0;
}

pub mod rctl {
    pub const EN: u32 = 1 << 1;
    /// Accept every multicast frame (IPv6's neighbour discovery and
    /// router advertisements come to multicast groups; the driver keeps
    /// no multicast table).
    pub const MPE: u32 = 1 << 4;
    /// Accept broadcast.
    pub const BAM: u32 = 1 << 15;
    /// Buffer size 2048 is BSIZE 00 with BSEX 0.
    pub const BSIZE_2048: u32 = 0;
    /// Minimum threshold: interrupt when half the ring is free (RDMTS 00).
    pub const RDMTS_HALF: u32 = 0;
    /// Strip the Ethernet CRC.
    pub const SECRC: u32 = 1 << 26;
}

pub mod tctl {
    pub const EN: u32 = 1 << 1;
    /// Pad short packets to 64 bytes.
    pub const PSP: u32 = 1 << 3;
    /// Collision threshold 15 (the SDM's recommended value).
    pub const CT: u32 = 0x0F << 4;
    /// Collision distance 64 byte times, for full duplex.
    pub const COLD: u32 = 0x40 << 12;
}

/// IPGT 10, IPGR1 8, IPGR2 6: the 82540EM's copper values (13.4.34).
pub const TIPG_COPPER: u32 = 10 | (8 << 10) | (6 << 20);

/// Legacy receive descriptor status and error bits (3.2.3.1, 3.2.3.2).
pub mod rxd {
    /// Descriptor done.
    pub const DD: u8 = 1 << 0;
    /// End of packet.
    pub const EOP: u8 = 1 << 1;
    /// Ignore checksum indication.
    pub const IXSM: u8 = 1 << 2;
    /// TCP/UDP checksum calculated.
    pub const TCPCS: u8 = 1 << 5;
    /// Errors: CRC, symbol, sequence, carrier extension, RX data error.
    pub const ERR_FRAME: u8 = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 4) | (1 << 7);
    /// TCP/UDP checksum error.
    pub const ERR_TCPE: u8 = 1 << 5;
}

/// Legacy transmit descriptor command and status bits (3.3.3).
pub mod txd {
    pub const CMD_EOP: u8 = 1 << 0;
    /// Insert the FCS.
    pub const CMD_IFCS: u8 = 1 << 1;
    /// Report status: write DD back when done.
    pub const CMD_RS: u8 = 1 << 3;
    pub const STA_DD: u8 = 1 << 0;
}

hal::dma_struct! {
    /// Legacy receive descriptor (3.2.3): the device fills in everything
    /// after the address.
    pub struct RxDesc { pub addr: hal::device::DeviceAddr, pub length: u16, pub checksum: u16, pub status: u8, pub errors: u8, pub special: u16 }
}

hal::dma_struct! {
    /// Legacy transmit descriptor (3.3.3).
    pub struct TxDesc { pub addr: hal::device::DeviceAddr, pub length: u16, pub cso: u8, pub cmd: u8, pub status: u8, pub css: u8, pub special: u16 }
}
