//! The controller's registers (NVMe base specification 2.0, section 3.1)
//! and the fields this driver reads from CAP, CC and CSTS.

/// Register offsets in BAR 0.
pub const CAP: u64 = 0x00;
pub const VS: u64 = 0x08;
pub const CC: u64 = 0x14;
pub const CSTS: u64 = 0x1C;
pub const AQA: u64 = 0x24;
pub const ASQ: u64 = 0x28;
pub const ACQ: u64 = 0x30;
/// The first doorbell; doorbell `i` is `DOORBELLS + i * (4 << CAP.DSTRD)`,
/// submission queue `y`'s tail at `i = 2y`, its completion queue's head
/// at `i = 2y + 1`.
pub const DOORBELLS: u64 = 0x1000;

/// Controller Capabilities, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Entries a queue may have at most (MQES + 1).
    pub max_queue_entries: u32,
    /// How long CSTS.RDY may take to follow CC.EN (CAP.TO, 500 ms units).
    pub ready_timeout_ms: u64,
    /// Bytes between doorbells (4 << DSTRD).
    pub doorbell_stride: u64,
    /// The NVM command set is supported (CSS bit 0).
    pub nvm_command_set: bool,
    /// Smallest memory page size, log2 bytes (12 + MPSMIN).
    pub min_page_shift: u32,
    /// Largest memory page size, log2 bytes (12 + MPSMAX).
    pub max_page_shift: u32,
}

impl Capabilities {
    pub fn decode(cap: u64) -> Capabilities {
        Capabilities {
            max_queue_entries: (cap & 0xFFFF) as u32 + 1,
            ready_timeout_ms: ((cap >> 24) & 0xFF).max(1) * 500,
            doorbell_stride: 4 << ((cap >> 32) & 0xF),
            nvm_command_set: (cap >> 37) & 1 != 0,
            min_page_shift: 12 + ((cap >> 48) & 0xF) as u32,
            max_page_shift: 12 + ((cap >> 52) & 0xF) as u32,
        }
    }

    /// The offset of submission queue `qid`'s tail doorbell.
    pub fn sq_doorbell(&self, qid: u16) -> u64 {
        DOORBELLS + 2 * u64::from(qid) * self.doorbell_stride
    }

    /// The offset of completion queue `qid`'s head doorbell.
    pub fn cq_doorbell(&self, qid: u16) -> u64 {
        DOORBELLS + (2 * u64::from(qid) + 1) * self.doorbell_stride
    }
}

/// Controller Configuration bits.
pub mod cc {
    pub const ENABLE: u32 = 1;
    /// CSS = 000b: the NVM command set; MPS = 0: 4 KiB pages; AMS = 0:
    /// round robin.
    pub const NVM_4K_RR: u32 = 0;
    /// Shutdown notification, normal (SHN = 01b).
    pub const SHUTDOWN_NORMAL: u32 = 1 << 14;
    pub const SHUTDOWN_MASK: u32 = 3 << 14;
    /// I/O submission queue entries are 64 bytes (2^6).
    pub const IOSQES_64: u32 = 6 << 16;
    /// I/O completion queue entries are 16 bytes (2^4).
    pub const IOCQES_16: u32 = 4 << 20;
}

/// Controller Status bits.
pub mod csts {
    pub const READY: u32 = 1;
    /// Controller Fatal Status.
    pub const FATAL: u32 = 1 << 1;
    pub const SHUTDOWN_STATUS_MASK: u32 = 3 << 2;
    pub const SHUTDOWN_COMPLETE: u32 = 2 << 2;
}

/// The page size this driver uses for queues and PRPs (CC.MPS = 0).
pub const PAGE: usize = 4096;
