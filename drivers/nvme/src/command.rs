//! Commands and completions: the 64-byte submission entry, the 16-byte
//! completion entry, the opcodes this driver issues, and the fields it
//! reads from Identify (NVMe base specification 2.0, sections 4 and 5;
//! NVM command set specification 1.0, sections 3 and 4).

use hal::device::DeviceAddr;

hal::dma_struct! {
    /// A submission queue entry. `cdw0` packs the opcode (bits 0..8) and
    /// the command identifier (bits 16..32); PRP entries are device
    /// addresses, so only DMA memory this driver owns can be named.
    pub struct Sqe {
        pub cdw0: u32,
        pub nsid: u32,
        pub cdw2: u32,
        pub cdw3: u32,
        pub mptr: u64,
        pub prp1: DeviceAddr,
        pub prp2: DeviceAddr,
        pub cdw10: u32,
        pub cdw11: u32,
        pub cdw12: u32,
        pub cdw13: u32,
        pub cdw14: u32,
        pub cdw15: u32,
    }
}

impl Sqe {
    pub fn new(opcode: u8, cid: u16) -> Sqe {
        Sqe { cdw0: u32::from(opcode) | u32::from(cid) << 16, ..Sqe::default() }
    }

    pub fn cid(&self) -> u16 {
        (self.cdw0 >> 16) as u16
    }
}

/// Completion entry size and field offsets.
pub mod cqe {
    pub const SIZE: usize = 16;
    pub const DW0: usize = 0;
    pub const SQ_HEAD: usize = 8;
    pub const CID: usize = 12;
    /// Phase tag (bit 0) and status field (bits 1..16).
    pub const STATUS: usize = 14;
}

/// Admin command opcodes.
pub mod admin {
    pub const DELETE_SQ: u8 = 0x00;
    pub const CREATE_SQ: u8 = 0x01;
    pub const DELETE_CQ: u8 = 0x04;
    pub const CREATE_CQ: u8 = 0x05;
    pub const IDENTIFY: u8 = 0x06;
    pub const ABORT: u8 = 0x08;
    pub const SET_FEATURES: u8 = 0x09;
}

/// NVM command set I/O opcodes.
pub mod io {
    pub const FLUSH: u8 = 0x00;
    pub const WRITE: u8 = 0x01;
    pub const READ: u8 = 0x02;
    pub const DATASET_MANAGEMENT: u8 = 0x09;
    /// Read/Write CDW12: Force Unit Access.
    pub const FUA: u32 = 1 << 30;
    /// Dataset Management CDW11: Attribute - Deallocate.
    pub const DEALLOCATE: u32 = 1 << 2;
}

/// Identify's CNS values.
pub mod cns {
    pub const NAMESPACE: u32 = 0x00;
    pub const CONTROLLER: u32 = 0x01;
}

/// Feature identifiers.
pub const FEATURE_NUMBER_OF_QUEUES: u32 = 0x07;

/// Create I/O Completion Queue CDW11: physically contiguous, interrupts
/// enabled, on MSI-X entry `vector`.
pub fn create_cq(cid: u16, qid: u16, entries: u16, ring: DeviceAddr, vector: u16) -> Sqe {
    Sqe {
        prp1: ring,
        cdw10: u32::from(qid) | u32::from(entries - 1) << 16,
        cdw11: 0b11 | u32::from(vector) << 16,
        ..Sqe::new(admin::CREATE_CQ, cid)
    }
}

/// Create I/O Submission Queue: physically contiguous, completing on the
/// completion queue of the same id.
pub fn create_sq(cid: u16, qid: u16, entries: u16, ring: DeviceAddr) -> Sqe {
    Sqe {
        prp1: ring,
        cdw10: u32::from(qid) | u32::from(entries - 1) << 16,
        cdw11: 1 | u32::from(qid) << 16,
        ..Sqe::new(admin::CREATE_SQ, cid)
    }
}

/// Delete I/O Submission Queue (`admin::DELETE_SQ`) or Completion Queue
/// (`admin::DELETE_CQ`) `qid`.
pub fn delete_queue(cid: u16, opcode: u8, qid: u16) -> Sqe {
    Sqe { cdw10: u32::from(qid), ..Sqe::new(opcode, cid) }
}

/// Abort command `target` of submission queue `sqid` (base
/// specification 2.0, 5.1). Completion dword 0 bit 0 set means the
/// command was not aborted; an aborted one completes with
/// [`Status::is_abort_requested`].
pub fn abort(cid: u16, sqid: u16, target: u16) -> Sqe {
    Sqe { cdw10: u32::from(sqid) | u32::from(target) << 16, ..Sqe::new(admin::ABORT, cid) }
}

pub fn identify(cid: u16, cns: u32, nsid: u32, page: DeviceAddr) -> Sqe {
    Sqe { nsid, prp1: page, cdw10: cns, ..Sqe::new(admin::IDENTIFY, cid) }
}

/// Set Features, Number of Queues: `n` submission and `n` completion
/// queues asked (0's based).
pub fn set_queue_count(cid: u16, n: u16) -> Sqe {
    let n = u32::from(n.max(1) - 1);
    Sqe { cdw10: FEATURE_NUMBER_OF_QUEUES, cdw11: n | n << 16, ..Sqe::new(admin::SET_FEATURES, cid) }
}

/// A completion's status field (the phase tag stripped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u16);

impl Status {
    pub fn from_raw(raw: u16) -> Status {
        Status(raw >> 1)
    }

    pub fn is_success(self) -> bool {
        self.code() == 0 && self.code_type() == 0
    }

    /// Status Code.
    pub fn code(self) -> u8 {
        self.0 as u8
    }

    /// Status Code Type (0: generic, 1: command specific, 2: media).
    pub fn code_type(self) -> u8 {
        ((self.0 >> 8) & 0x7) as u8
    }

    /// Generic "Command Abort Requested": an Abort command ended it.
    pub fn is_abort_requested(self) -> bool {
        self.code_type() == 0 && self.code() == 0x07
    }

    /// Generic "Invalid Command Opcode": the device lacks the command.
    pub fn is_invalid_opcode(self) -> bool {
        self.code_type() == 0 && self.code() == 0x01
    }
}

/// Identify Controller fields (byte offsets in the 4 KiB page).
pub mod id_ctrl {
    /// Maximum Data Transfer Size, a power of two in minimum pages (0: no limit).
    pub const MDTS: usize = 77;
    /// Number of Namespaces.
    pub const NN: usize = 516;
    /// Optional NVM Command Support; bit 2: Dataset Management.
    pub const ONCS: usize = 520;
    pub const ONCS_DSM: u16 = 1 << 2;
    /// Volatile Write Cache; bit 0: present.
    pub const VWC: usize = 525;
}

/// Identify Namespace fields.
pub mod id_ns {
    /// Namespace Size, in logical blocks.
    pub const NSZE: usize = 0;
    /// Formatted LBA Size: bits 0..4 index the LBA format table.
    pub const FLBAS: usize = 26;
    /// LBA format `i` at `LBAF + 4 * i`; bits 16..24 are log2 of the block size.
    pub const LBAF: usize = 128;
}
