//! The NVMe driver (NVMe base specification 2.0, NVM command set 1.0) for
//! QEMU's `-device nvme` and the controllers of real machines.
//!
//! Bring-up: the controller is disabled (CC.EN = 0, CSTS.RDY followed
//! within CAP.TO), the admin queue programmed (AQA, ASQ, ACQ) and the
//! controller enabled. Admin commands are polled: Identify Controller
//! (transfer limit MDTS, volatile write cache VWC, optional commands
//! ONCS) and Identify Namespace 1 (size, LBA format), then Set Features
//! Number of Queues asks for one I/O queue pair per CPU and takes what
//! the controller grants. Each pair gets its own MSI-X vector, steered to
//! its CPU, and becomes one [`NvmeQueue`]: a [`blockdev::BlockDriver`]
//! the block layer drives from that CPU. Requests use PRP entries (a PRP
//! list past two pages) within MDTS; writes may carry FUA; Flush is sent
//! when the controller has a volatile cache; discard is Dataset
//! Management (deallocate) when ONCS offers it. Completions are found by
//! phase tag; any error status becomes `IoError::Device` (EIO), an
//! unknown opcode `IoError::Unsupported`.
//!
//! A command that times out is first aborted ([`Nvme::abort`], the
//! Abort admin command, waited for at most a second); only when the
//! abort fails, or the command times out again, does [`Nvme::reset`]
//! reset the controller under load: the queues are created again and
//! every command still in flight is sent again from the copy its slot
//! keeps, so callers see no error.
//!
//! The driver holds no addresses: BAR 0 is typed registers, and every
//! ring, PRP and data area is the hal's DMA memory named by `DeviceAddr`.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod command;
mod io;
mod irq;
pub mod queue;
pub mod regs;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use blockdev::{DeviceInfo, SECTOR};
use hal::device::{BarError, IrqHandler, IrqKind, IrqVector, PciDevice, ReadOnly, ReadWrite, Register};
use hal::sync::{SpinLock, SpinLockGuard};

use command::{cns, id_ctrl, id_ns, Sqe, Status};
use irq::QueueIrq;
use queue::{QueueError, QueuePair};
use regs::{cc, csts, Capabilities, PAGE};

use io::IoQueue;
pub use io::NvmeQueue;

/// Admin queue entries.
const ADMIN_ENTRIES: u16 = 32;
/// I/O queue entries at most (the controller may allow fewer).
const IO_ENTRIES: u16 = 64;
/// Requests in flight per queue at most; each costs a data area.
pub const MAX_DEPTH: usize = 32;
/// Requests in flight over all queues at most (DMA memory).
const MAX_SLOTS: usize = 64;
/// Largest transfer of one request, below MDTS: 128 KiB.
pub const MAX_TRANSFER: usize = 128 * 1024;
/// Dataset Management range length cap: 1 GiB (QEMU refuses ranges of
/// 2 GiB and more).
const MAX_DISCARD_SECTORS: u32 = 1 << 21;
/// An admin command that takes longer has failed.
const ADMIN_TIMEOUT_NS: u64 = 5_000_000_000;
/// How long an Abort may take before the controller is reset instead.
const ABORT_TIMEOUT_NS: u64 = 1_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Bar(BarError),
    /// The controller lacks something this driver needs.
    Unsupported(&'static str),
    /// CSTS.RDY did not follow CC.EN, or an admin command did not complete.
    Timeout(&'static str),
    /// CSTS.CFS: the controller reported a fatal error.
    Fatal,
    /// An admin command failed: its opcode and status.
    Command(u8, Status),
    NoMemory,
    NoInterrupt,
    /// The device is gone (revoked, or reads all ones).
    Gone,
}

impl From<QueueError> for Error {
    fn from(e: QueueError) -> Error {
        match e {
            QueueError::NoMemory => Error::NoMemory,
            QueueError::NoDoorbell => Error::Unsupported("doorbells outside BAR 0"),
        }
    }
}

struct Admin {
    pair: QueuePair,
    next_cid: u16,
}

/// The controller registers the driver uses after bring-up.
struct Regs {
    cc: Register<u32, ReadWrite>,
    csts: Register<u32, ReadOnly>,
    aqa: Register<u32, ReadWrite>,
    asq_lo: Register<u32, ReadWrite>,
    asq_hi: Register<u32, ReadWrite>,
    acq_lo: Register<u32, ReadWrite>,
    acq_hi: Register<u32, ReadWrite>,
}

/// One NVMe controller and its first namespace.
pub struct Nvme {
    pci: PciDevice,
    cap: Capabilities,
    regs: Regs,
    admin: SpinLock<Admin>,
    io: Vec<SpinLock<IoQueue>>,
    irqs: Vec<Arc<QueueIrq>>,
    /// Held for their lifetime: dropping a vector frees it.
    vectors: Vec<IrqVector>,
    /// The CPU each queue's interrupt is steered to, if it could be.
    queue_cpus: Vec<Option<usize>>,
    info: DeviceInfo,
    nsid: u32,
    /// log2 of the namespace's block size.
    lba_shift: u32,
    resets: AtomicU64,
}

fn try_vec<T>(n: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve(n).map_err(|_| Error::NoMemory)?;
    Ok(v)
}

impl Nvme {
    /// Brings the controller up with up to `cpus` I/O queue pairs, queue
    /// `i`'s interrupt steered to CPU `i`.
    pub fn new(pci: PciDevice, cpus: usize) -> Result<Arc<Nvme>, Error> {
        let bar = pci.map_bar(0).map_err(Error::Bar)?;
        let reg32 = |off: u64| bar.register::<u32, ReadWrite>(off).map_err(|_| Error::Unsupported("BAR 0 too small"));
        let cap_lo = reg32(regs::CAP)?.read();
        let cap_hi = reg32(regs::CAP + 4)?.read();
        if cap_lo == u32::MAX && cap_hi == u32::MAX {
            return Err(Error::Gone);
        }
        let cap = Capabilities::decode(u64::from(cap_lo) | u64::from(cap_hi) << 32);
        if !cap.nvm_command_set {
            return Err(Error::Unsupported("no NVM command set"));
        }
        if cap.min_page_shift > 12 || cap.max_page_shift < 12 {
            return Err(Error::Unsupported("4 KiB pages"));
        }
        let regs = Regs {
            cc: reg32(regs::CC)?,
            csts: bar.register(regs::CSTS).map_err(|_| Error::Unsupported("BAR 0 too small"))?,
            aqa: reg32(regs::AQA)?,
            asq_lo: reg32(regs::ASQ)?,
            asq_hi: reg32(regs::ASQ + 4)?,
            acq_lo: reg32(regs::ACQ)?,
            acq_hi: reg32(regs::ACQ + 4)?,
        };
        let version = reg32(regs::VS)?.read();
        let dma = pci.dma();
        let admin_entries = ADMIN_ENTRIES.min(cap.max_queue_entries.min(4096) as u16);
        let mut admin = Admin { pair: QueuePair::new(&dma, &bar, &cap, 0, admin_entries)?, next_cid: 0 };
        // Disabled before bus mastering goes on: a controller a previous
        // driver left running must not reach memory through old queues.
        disable(&regs, &cap)?;
        pci.set_bus_master(true);
        enable(&regs, &cap, &mut admin.pair)?;

        let page = dma.alloc(PAGE).map_err(|_| Error::NoMemory)?;
        admin_command(&regs, &mut admin, |cid| command::identify(cid, cns::CONTROLLER, 0, page.device_addr()))?;
        page.sync_for_cpu();
        let byte = |off: usize| page.read::<u8>(off).unwrap_or(0);
        let mdts = byte(id_ctrl::MDTS);
        let namespaces = page.read::<u32>(id_ctrl::NN).unwrap_or(0);
        let oncs = page.read::<u16>(id_ctrl::ONCS).unwrap_or(0);
        let volatile_cache = byte(id_ctrl::VWC) & 1 != 0;
        if namespaces == 0 {
            return Err(Error::Unsupported("no namespace"));
        }
        let nsid = 1;
        admin_command(&regs, &mut admin, |cid| command::identify(cid, cns::NAMESPACE, nsid, page.device_addr()))?;
        page.sync_for_cpu();
        let blocks = page.read::<u64>(id_ns::NSZE).unwrap_or(0);
        let format = usize::from(byte(id_ns::FLBAS) & 0xF);
        let lba_shift = (page.read::<u32>(id_ns::LBAF + 4 * format).unwrap_or(0) >> 16) & 0xFF;
        if blocks == 0 {
            return Err(Error::Unsupported("namespace 1 is inactive"));
        }
        if !(9..=12).contains(&lba_shift) {
            return Err(Error::Unsupported("block size outside 512..4096"));
        }
        drop(page);

        // MDTS counts minimum pages (4 KiB here); 0 is no limit.
        let mdts_bytes = if mdts == 0 || mdts > 20 { usize::MAX } else { PAGE << mdts };
        let max_bytes = MAX_TRANSFER.min(mdts_bytes);
        if max_bytes < 1 << lba_shift {
            return Err(Error::Unsupported("MDTS below one block"));
        }

        let wanted = cpus.clamp(1, usize::from(u16::MAX - 1)) as u16;
        let granted = admin_command(&regs, &mut admin, |cid| command::set_queue_count(cid, wanted))?;
        let granted = usize::from((granted & 0xFFFF) as u16).min(usize::from((granted >> 16) as u16)) + 1;
        let count = usize::from(wanted).min(granted).max(1);

        let mut irqs = try_vec::<Arc<QueueIrq>>(count)?;
        let mut handlers = try_vec::<Arc<dyn IrqHandler>>(count)?;
        for _ in 0..count {
            let irq = Arc::new(QueueIrq::new());
            handlers.push(irq.clone());
            irqs.push(irq);
        }
        let vectors = pci.request_irqs(&handlers).map_err(|_| Error::NoInterrupt)?;
        let per_queue_vectors = vectors.len() == count && vectors.iter().all(|v| v.kind() == IrqKind::MsiX);
        let mut queue_cpus = try_vec(count)?;
        for (i, v) in vectors.iter().enumerate().take(count) {
            let steered = per_queue_vectors && v.set_affinity(i).is_ok();
            queue_cpus.push(steered.then_some(i));
        }
        while queue_cpus.len() < count {
            queue_cpus.push(None);
        }

        let entries = IO_ENTRIES.min(cap.max_queue_entries.min(4096) as u16).max(2);
        let depth = (MAX_SLOTS / count).clamp(4, MAX_DEPTH).min(usize::from(entries) - 1);
        let mut io = try_vec(count)?;
        for i in 0..count {
            let qid = i as u16 + 1;
            let vector = if per_queue_vectors { i as u16 } else { 0 };
            let pair = QueuePair::new(&dma, &bar, &cap, qid, entries)?;
            create_io_queue(&regs, &mut admin, &pair, vector)?;
            io.push(SpinLock::new(IoQueue::new(pair, &dma, depth, max_bytes)?));
        }
        let sectors_per_lba = 1u64 << (lba_shift - 9);
        let info = DeviceInfo {
            sectors: blocks.saturating_mul(sectors_per_lba),
            logical_block_size: 1 << lba_shift,
            queue_depth: depth,
            max_sectors: (max_bytes / SECTOR) as u32,
            read_only: false,
            volatile_cache,
            fua: true,
            max_discard_sectors: if oncs & id_ctrl::ONCS_DSM != 0 { MAX_DISCARD_SECTORS } else { 0 },
        };
        log::info!(
            "nvme {}: version {}.{}, {} I/O queue pair(s) of {} entries (depth {}), MDTS {} KiB, doorbell stride {}",
            pci.address(),
            version >> 16,
            (version >> 8) & 0xFF,
            count,
            entries,
            depth,
            if mdts_bytes == usize::MAX { 0 } else { mdts_bytes / 1024 },
            cap.doorbell_stride
        );
        Ok(Arc::new(Nvme {
            pci,
            cap,
            regs,
            admin: SpinLock::new(admin),
            io,
            irqs,
            vectors,
            queue_cpus,
            info,
            nsid,
            lba_shift,
            resets: AtomicU64::new(0),
        }))
    }

    /// One block driver per I/O queue pair, queue `i` for CPU `i`.
    pub fn queues(self: &Arc<Self>) -> Result<Vec<NvmeQueue>, Error> {
        let mut out = try_vec(self.io.len())?;
        out.extend((0..self.io.len()).map(|index| NvmeQueue { ctrl: self.clone(), index }));
        Ok(out)
    }

    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    pub fn pci(&self) -> &PciDevice {
        &self.pci
    }

    /// How the controller interrupts (MSI-X, MSI or INTx).
    pub fn irq_kind(&self) -> Option<IrqKind> {
        self.vectors.first().map(|v| v.kind())
    }

    /// The CPU each I/O queue's interrupt goes to (None: not steered).
    pub fn queue_cpus(&self) -> &[Option<usize>] {
        &self.queue_cpus
    }

    /// Interrupts each I/O queue's handler took.
    pub fn queue_interrupts(&self) -> Vec<u64> {
        self.irqs.iter().map(|i| i.interrupts.load(Ordering::Relaxed)).collect()
    }

    /// Controller resets done by [`Nvme::reset`].
    pub fn resets(&self) -> u64 {
        self.resets.load(Ordering::Relaxed)
    }

    fn sectors_per_lba(&self) -> u64 {
        1 << (self.lba_shift - 9)
    }

    /// Asks the controller to abort commands `tags` of I/O queue `index`
    /// (they timed out). Each Abort is waited for at most
    /// [`ABORT_TIMEOUT_NS`]; an error means one was not answered or
    /// failed, and the caller resets the controller instead. Returns how
    /// many the controller says it aborted (those complete with "Command
    /// Abort Requested", EIO to their callers); the others may still
    /// complete by themselves. QEMU 7.2's model answers every Abort with
    /// "not aborted".
    pub fn abort(&self, index: usize, tags: &[u16]) -> Result<usize, Error> {
        if self.pci.is_revoked() {
            return Err(Error::Gone);
        }
        let queue = self.io.get(index).ok_or(Error::Unsupported("no such queue"))?;
        let mut aborted = 0;
        for &tag in tags {
            let (qid, req) = {
                let q = queue.lock();
                let slot = q.slots.get(usize::from(tag));
                (q.pair.qid, slot.filter(|s| s.state == io::SlotState::InFlight).and_then(|s| s.request()))
            };
            let Some(req) = req else { continue };
            let dw0 = {
                let mut admin = self.admin.lock();
                admin_command_within(&self.regs, &mut admin, ABORT_TIMEOUT_NS, |cid| command::abort(cid, qid, tag))
            };
            let dw0 = dw0.inspect_err(|e| {
                log::warn!("nvme {}: Abort of queue {qid} command {tag} failed: {e:?}", self.pci.address());
            })?;
            let done = dw0 & 1 == 0;
            aborted += usize::from(done);
            log::warn!(
                "nvme {}: I/O timeout: queue {qid} command {tag} ({req:?}): abort sent; {}",
                self.pci.address(),
                if done { "aborted" } else { "not aborted by the controller; waiting for it" }
            );
        }
        Ok(aborted)
    }

    /// Resets the controller with I/O in flight: disables it (which drops
    /// every queue and command), enables it again, creates the I/O queues
    /// anew and sends every command that had not completed again. Returns
    /// how many were sent again. Every queue is locked meanwhile, so no
    /// request is submitted or completed half way.
    pub fn reset(&self) -> Result<usize, Error> {
        if self.pci.is_revoked() {
            return Err(Error::Gone);
        }
        let mut queues = try_vec(self.io.len())?;
        for q in &self.io {
            queues.push(q.lock());
        }
        let mut admin = self.admin.lock();
        let resent = self.restart_queues(&mut admin, &mut queues);
        drop(admin);
        // Spin lock guards go in the reverse order of their taking.
        while let Some(q) = queues.pop() {
            drop(q);
        }
        let resent = resent?;
        self.resets.fetch_add(1, Ordering::Relaxed);
        // Waiters look again: a command sent again may already be done.
        for irq in &self.irqs {
            irq.wake();
        }
        log::info!("nvme {}: controller reset, {resent} command(s) in flight sent again", self.pci.address());
        Ok(resent)
    }
}

impl Nvme {
    /// The body of [`Nvme::reset`], under every queue's lock.
    ///
    /// The I/O queues are deleted (every submission queue, then every
    /// completion queue) before the controller is disabled, as Linux's
    /// nvme_dev_disable does while the controller still answers. Disabling
    /// with commands in flight leaves it to the controller to drop them
    /// along with the queues, and QEMU 7.2's NVMe model gets that wrong: at
    /// -smp 4 a command still in flight on a freed submission queue
    /// completed later through it (the QEMU process died at a segfault
    /// about one run in six of this driver's reset-under-load test, and
    /// once a resent command's waiter never woke). Delete I/O Submission
    /// Queue has the controller finish or abort each of its commands first
    /// (their completions land in the old completion queue, which the
    /// reset clears before the commands are sent again).
    fn restart_queues(&self, admin: &mut Admin, queues: &mut [SpinLockGuard<'_, IoQueue>]) -> Result<usize, Error> {
        if self.regs.csts.read() & (csts::READY | csts::FATAL) == csts::READY {
            let deleted = [command::admin::DELETE_SQ, command::admin::DELETE_CQ].into_iter().try_for_each(|opcode| {
                queues.iter().try_for_each(|q| {
                    let qid = q.pair.qid;
                    admin_command(&self.regs, admin, |cid| command::delete_queue(cid, opcode, qid)).map(drop)
                })
            });
            if let Err(e) = deleted {
                // The controller reset below drops whatever is left.
                log::warn!("nvme {}: deleting the I/O queues before a reset: {e:?}", self.pci.address());
            }
        }
        disable(&self.regs, &self.cap)?;
        enable(&self.regs, &self.cap, &mut admin.pair)?;
        let wanted = self.io.len() as u16;
        admin_command(&self.regs, admin, |cid| command::set_queue_count(cid, wanted))?;
        let per_queue_vectors = self.queue_cpus.iter().all(Option::is_some);
        let mut resent = 0;
        for (i, q) in queues.iter_mut().enumerate() {
            q.pair.reset();
            let vector = if per_queue_vectors { i as u16 } else { 0 };
            create_io_queue(&self.regs, admin, &q.pair, vector)?;
            resent += q.resubmit();
        }
        Ok(resent)
    }
}

impl Drop for Nvme {
    /// A normal shutdown, so a controller with a volatile cache writes it
    /// back before the device is released.
    fn drop(&mut self) {
        if self.pci.is_revoked() {
            return;
        }
        self.regs.cc.modify(cc::SHUTDOWN_NORMAL, cc::SHUTDOWN_MASK);
        let deadline = hal::time::monotonic_ns() + self.cap.ready_timeout_ms * 1_000_000;
        while self.regs.csts.read() & csts::SHUTDOWN_STATUS_MASK != csts::SHUTDOWN_COMPLETE {
            if hal::time::monotonic_ns() > deadline {
                log::warn!("nvme {}: shutdown did not complete", self.pci.address());
                break;
            }
            hal::cpu::pause();
        }
    }
}

/// Waits until CSTS.RDY is `ready`, within CAP.TO.
fn wait_ready(regs: &Regs, cap: &Capabilities, ready: bool) -> Result<(), Error> {
    let deadline = hal::time::monotonic_ns() + cap.ready_timeout_ms * 1_000_000;
    loop {
        let status = regs.csts.read();
        if status == u32::MAX {
            return Err(Error::Gone);
        }
        if ready && status & csts::FATAL != 0 {
            return Err(Error::Fatal);
        }
        if (status & csts::READY != 0) == ready {
            return Ok(());
        }
        if hal::time::monotonic_ns() > deadline {
            return Err(Error::Timeout(if ready { "CSTS.RDY after enable" } else { "CSTS.RDY after disable" }));
        }
        hal::cpu::pause();
    }
}

/// CC.EN = 0: the controller drops every queue and command.
fn disable(regs: &Regs, cap: &Capabilities) -> Result<(), Error> {
    let cc = regs.cc.read();
    if cc & cc::ENABLE != 0 {
        regs.cc.write(cc & !cc::ENABLE);
    }
    wait_ready(regs, cap, false)
}

/// Programs the (emptied) admin queue and sets CC.EN.
fn enable(regs: &Regs, cap: &Capabilities, admin: &mut QueuePair) -> Result<(), Error> {
    admin.reset();
    let entries = u32::from(admin.entries() - 1);
    regs.aqa.write(entries | entries << 16);
    regs.asq_lo.write_addr_low(admin.sq_addr());
    regs.asq_hi.write_addr_high(admin.sq_addr());
    regs.acq_lo.write_addr_low(admin.cq_addr());
    regs.acq_hi.write_addr_high(admin.cq_addr());
    regs.cc.write(cc::NVM_4K_RR | cc::IOSQES_64 | cc::IOCQES_16 | cc::ENABLE);
    wait_ready(regs, cap, true)
}

/// Sends one admin command and polls for its completion; returns its
/// dword 0.
fn admin_command(regs: &Regs, admin: &mut Admin, build: impl FnOnce(u16) -> Sqe) -> Result<u32, Error> {
    admin_command_within(regs, admin, ADMIN_TIMEOUT_NS, build)
}

/// [`admin_command`], failing after `timeout_ns`.
fn admin_command_within(
    regs: &Regs,
    admin: &mut Admin,
    timeout_ns: u64,
    build: impl FnOnce(u16) -> Sqe,
) -> Result<u32, Error> {
    let cid = admin.next_cid;
    admin.next_cid = admin.next_cid.wrapping_add(1);
    let sqe = build(cid);
    let opcode = sqe.cdw0 as u8;
    if !admin.pair.push(sqe) {
        return Err(Error::Timeout("admin queue full"));
    }
    admin.pair.ring();
    let deadline = hal::time::monotonic_ns() + timeout_ns;
    loop {
        if let Some(c) = admin.pair.pop() {
            admin.pair.release_completions();
            if c.cid != cid {
                continue;
            }
            return if c.status.is_success() { Ok(c.dw0) } else { Err(Error::Command(opcode, c.status)) };
        }
        let status = regs.csts.read();
        if status == u32::MAX {
            return Err(Error::Gone);
        }
        if status & csts::FATAL != 0 {
            return Err(Error::Fatal);
        }
        if hal::time::monotonic_ns() > deadline {
            return Err(Error::Timeout("admin command"));
        }
        hal::cpu::pause();
    }
}

/// Creates `pair`'s completion queue (interrupting on MSI-X entry
/// `vector`), then its submission queue.
fn create_io_queue(regs: &Regs, admin: &mut Admin, pair: &QueuePair, vector: u16) -> Result<(), Error> {
    let (qid, entries) = (pair.qid, pair.entries());
    admin_command(regs, admin, |cid| command::create_cq(cid, qid, entries, pair.cq_addr(), vector))?;
    admin_command(regs, admin, |cid| command::create_sq(cid, qid, entries, pair.sq_addr()))?;
    Ok(())
}
