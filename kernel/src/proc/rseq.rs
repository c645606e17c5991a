//! Restartable sequences (rseq): a thread registers a 32-byte area in its
//! own memory; the kernel keeps the area's CPU, node and concurrency ids
//! current whenever the thread returns to user mode after it was switched
//! out or moved, and aborts the critical section the area points at
//! (`rseq_cs`) when the thread was preempted, moved, signalled or asked
//! by membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) while inside it:
//! the thread resumes at the section's abort address instead.
//!
//! Detection needs no scheduler hook: every switch-in counts on the
//! thread (`sched::Thread::switch_ins`), and the return path compares the
//! count with the one it saw last time, so a thread that has registered
//! nothing pays one load before each return to user mode. The last check
//! runs with interrupts off, right before the thread enters user mode, so
//! no switch can slip in between (`ready_for_user`).
//!
//! Concurrency ids (`mm_cid`, Linux 6.3) are per address space (kept by
//! the process, shared with CLONE_VM children): the CPU a thread runs on
//! lends it the id it holds for that address space, so threads running
//! at the same time never share one, and ids stay below both the number
//! of CPUs and the number of registered threads (an idle CPU's id is
//! taken back when a thread needs one).
//!
//! Registration follows current Linux (the area 32-byte aligned and at
//! least 32 bytes long); fork keeps it, a new thread and exec drop it.
//! Registration also reads the area, failing with EFAULT where it is not
//! readable, as Linux does since 6.x (6.1 accepted it and killed the
//! thread at its first update).

use alloc::sync::{Arc, Weak};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use hal::percpu::MAX_CPUS;
use hal::sync::SpinLock;
use hal::user::UserContext;
use linux_abi::errno::Errno;
use linux_abi::rseq::{Rseq, RseqCs, RSEQ_CPU_ID_UNINITIALIZED, RSEQ_FLAG_UNREGISTER};
use linux_abi::signal as sig;

use super::signal::SigInfo;
use super::{Process, Task};
use crate::mm::uaccess;
use crate::sched;

/// A thread's registration and what the return path must do about it.
pub struct TaskRseq {
    /// User address of the registered area (0: none). The return path
    /// looks at nothing else when it is 0.
    area: AtomicU64,
    sig: AtomicU32,
    /// The length given at registration (32 or more).
    len: AtomicU32,
    /// The thread's switch-in count when its area was last brought up to
    /// date.
    seen_switches: AtomicU64,
    /// The area must be brought up to date at the next return (a new
    /// registration, a fork child).
    update: AtomicBool,
    /// A critical section the thread is in must be aborted at the next
    /// return (membarrier's RSEQ command).
    restart: AtomicBool,
    /// The concurrency ids of the thread's address space, once registered.
    cids: SpinLock<Option<Arc<MmCids>>>,
}

impl Default for TaskRseq {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskRseq {
    pub const fn new() -> TaskRseq {
        TaskRseq {
            area: AtomicU64::new(0),
            sig: AtomicU32::new(0),
            len: AtomicU32::new(0),
            seen_switches: AtomicU64::new(0),
            update: AtomicBool::new(false),
            restart: AtomicBool::new(false),
            cids: SpinLock::new(None),
        }
    }

    #[inline]
    pub fn is_registered(&self) -> bool {
        self.area.load(Ordering::Relaxed) != 0
    }

    /// Whether something happened that the area must hear about.
    #[inline]
    fn due(&self, switches: u64) -> bool {
        switches != self.seen_switches.load(Ordering::Relaxed)
            || self.update.load(Ordering::Relaxed)
            || self.restart.load(Ordering::Relaxed)
    }

    /// Forgets the registration, giving its concurrency id back.
    fn drop_registration(&self) {
        if self.area.swap(0, Ordering::Relaxed) != 0 {
            if let Some(cids) = self.cids.lock().take() {
                cids.leave();
            }
        }
        self.sig.store(0, Ordering::Relaxed);
    }
}

/// The concurrency ids of one address space: which id each CPU lends to
/// the address space's thread running there.
pub struct MmCids {
    state: SpinLock<CidState>,
}

struct CidState {
    by_cpu: [Option<CpuCid>; MAX_CPUS],
    /// Ids lent out (bit n: id n).
    used: u32,
    /// Registered threads using the ids.
    users: u32,
}

struct CpuCid {
    cid: u32,
    /// The thread that last took it on that CPU.
    owner: Weak<sched::Thread>,
}

impl MmCids {
    fn new() -> Result<Arc<MmCids>, Errno> {
        let state = CidState { by_cpu: [const { None }; MAX_CPUS], used: 0, users: 0 };
        Arc::try_new(MmCids { state: SpinLock::new(state) }).map_err(|_| Errno::ENOMEM)
    }

    fn join(&self) {
        self.state.lock().users += 1;
    }

    fn leave(&self) {
        let mut st = self.state.lock();
        st.users = st.users.saturating_sub(1);
    }

    /// The id `me`, about to run user code on `cpu`, uses.
    fn get(&self, cpu: usize, me: &Arc<sched::Thread>) -> u32 {
        let online = sched::online_cpus().count_ones().max(1);
        let mut st = self.state.lock();
        let limit = online.min(st.users.max(1)).min(u32::BITS);
        if let Some(slot) = st.by_cpu[cpu].as_mut() {
            if slot.cid < limit {
                slot.owner = Arc::downgrade(me);
                return slot.cid;
            }
            // Fewer threads now than when this CPU took it: compact.
            let cid = slot.cid;
            st.used &= !(1 << cid);
            st.by_cpu[cpu] = None;
        }
        let mask = if limit >= u32::BITS { u32::MAX } else { (1 << limit) - 1 };
        let free = !st.used & mask;
        let cid = if free != 0 {
            free.trailing_zeros()
        } else {
            // Every id below the limit is lent: take one back from a CPU
            // where its thread is not running now (it finds out when it
            // is switched in again, since it must come through here).
            let idle = (0..MAX_CPUS).filter(|&c| c != cpu).find(|&c| {
                st.by_cpu[c].as_ref().is_some_and(|s| {
                    !s.owner.upgrade().is_some_and(|t| t.state() == sched::State::Running && t.last_cpu() == c)
                })
            });
            match idle.and_then(|c| st.by_cpu[c].take()) {
                Some(s) => {
                    st.used &= !(1 << s.cid);
                    s.cid
                }
                // More CPUs running threads than ids: cannot happen with
                // the limit at most the CPU count; stay unique regardless.
                None => (!st.used).trailing_zeros().min(u32::BITS - 1),
            }
        };
        st.used |= 1 << cid;
        st.by_cpu[cpu] = Some(CpuCid { cid, owner: Arc::downgrade(me) });
        cid
    }
}

/// The process's concurrency ids, made at the first registration.
fn mm_cids(p: &Process) -> Result<Arc<MmCids>, Errno> {
    let mut slot = p.mm_cids.lock();
    if let Some(c) = slot.as_ref() {
        return Ok(c.clone());
    }
    let c = MmCids::new()?;
    *slot = Some(c.clone());
    Ok(c)
}

/// rseq(area, len, flags, sig), Linux's rules: the area 32-byte aligned
/// and at least 32 bytes long (Linux 6.3 and later accept a longer one,
/// of which Kiln knows the first 32 bytes; 6.1 wanted exactly 32); then
/// EINVAL for a different area or length, EPERM for a different
/// signature, EBUSY
/// when the same area is registered twice.
pub fn rseq(t: &Task, area: u64, len: u32, flags: i32, signature: u32) -> Result<(), Errno> {
    let r = &t.rseq;
    let current = r.area.load(Ordering::Relaxed);
    if flags & RSEQ_FLAG_UNREGISTER != 0 {
        if flags & !RSEQ_FLAG_UNREGISTER != 0 || current == 0 || current != area || len != r.len.load(Ordering::Relaxed)
        {
            return Err(Errno::EINVAL);
        }
        if r.sig.load(Ordering::Relaxed) != signature {
            return Err(Errno::EPERM);
        }
        // cpu_id_start and cpu_id back to their unregistered values, and
        // node_id and mm_cid to 0 (Linux 6.3).
        let mut ids = [0u8; 8];
        ids[4..].copy_from_slice(&(RSEQ_CPU_ID_UNINITIALIZED as u32).to_le_bytes());
        write_user(t, area + Rseq::CPU_ID_START as u64, &ids)?;
        write_user(t, area + Rseq::NODE_ID as u64, &[0; 8])?;
        r.drop_registration();
        return Ok(());
    }
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    if current != 0 {
        if current != area || len != r.len.load(Ordering::Relaxed) {
            return Err(Errno::EINVAL);
        }
        if r.sig.load(Ordering::Relaxed) != signature {
            return Err(Errno::EPERM);
        }
        return Err(Errno::EBUSY);
    }
    if !area.is_multiple_of(Rseq::ALIGN) || (len as usize) < Rseq::SIZE {
        return Err(Errno::EINVAL);
    }
    if !uaccess::access_ok(area, len as usize) {
        return Err(Errno::EFAULT);
    }
    let mut probe = [0u8; Rseq::SIZE];
    read_user(t, area, &mut probe)?;
    let cids = mm_cids(&t.process)?;
    cids.join();
    *r.cids.lock() = Some(cids);
    r.sig.store(signature, Ordering::Relaxed);
    r.len.store(len, Ordering::Relaxed);
    r.update.store(true, Ordering::Relaxed);
    r.area.store(area, Ordering::Relaxed);
    Ok(())
}

/// Copies from the calling thread's own memory (the page tables loaded
/// are its own; the address space is looked up only on a fault).
fn read_user(t: &Task, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    uaccess::read_bytes_with(|| t.process.vm(), addr, buf)
}

fn write_user(t: &Task, addr: u64, data: &[u8]) -> Result<(), Errno> {
    uaccess::write_bytes_with(|| t.process.vm(), addr, data)
}

fn read_u64(t: &Task, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 8];
    read_user(t, addr, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// The last step before `t` enters user mode. Brings a registered area
/// up to date if it must, then, with interrupts off, checks that nothing
/// happened since: true means enter user mode now (interrupts stay off;
/// `UserContext::run` turns them back on when it returns), false means
/// go round the run loop again (a signal to deliver, or a switch that
/// came in between).
#[inline]
pub fn ready_for_user(t: &Arc<Task>, ctx: &mut UserContext) -> bool {
    let Some(k) = t.kthread.get() else { return true };
    if t.rseq.due(k.switch_ins()) {
        // A failure queued SIGSEGV, which the next round delivers.
        let _ = update(t, ctx, false);
        return false;
    }
    hal::cpu::disable_interrupts();
    if t.rseq.due(k.switch_ins()) {
        hal::cpu::enable_interrupts();
        return false;
    }
    true
}

/// A signal is about to be delivered to `t`: a critical section it is in
/// is aborted first, so the handler's frame saves the abort address.
pub fn signal_delivery(t: &Arc<Task>, ctx: &mut UserContext, signo: u32) {
    if update(t, ctx, true).is_err() {
        // Linux's force_sigsegv: fatal if SIGSEGV is the signal at hand.
        if signo == sig::SIGSEGV {
            super::signal::group_exit(&t.process, super::ExitKind::Signaled { sig: sig::SIGSEGV, core: true });
        }
    }
}

/// Aborts the critical section `t` is in if it must, and writes the ids.
/// An area or descriptor that cannot be read or is invalid gets the
/// thread SIGSEGV, as on Linux.
#[inline(never)]
fn update(t: &Arc<Task>, ctx: &mut UserContext, signalled: bool) -> Result<(), ()> {
    let r = &t.rseq;
    let area = r.area.load(Ordering::Relaxed);
    let Some(k) = t.kthread.get() else { return Ok(()) };
    if area == 0 {
        return Ok(());
    }
    // A switch means a preemption or a move: both abort a section.
    let switches = k.switch_ins();
    let switched = r.seen_switches.swap(switches, Ordering::Relaxed) != switches;
    r.update.store(false, Ordering::Relaxed);
    let restart = r.restart.swap(false, Ordering::Acquire) | switched | signalled;
    let result = fix_ip(t, ctx, area, restart).and_then(|()| write_ids(t, k, area));
    if result.is_err() {
        super::signal::force_fault_signal(t, SigInfo::fault(sig::SIGSEGV, sig::SI_KERNEL, 0));
        return Err(());
    }
    Ok(())
}

/// Linux's `rseq_ip_fixup`: reads the current descriptor (clearing it when
/// the thread is not inside its section) and, if the thread is inside it
/// and `restart`, moves it to the abort address.
fn fix_ip(t: &Task, ctx: &mut UserContext, area: u64, restart: bool) -> Result<(), Errno> {
    let cs_ptr = read_u64(t, area + Rseq::RSEQ_CS as u64)?;
    if cs_ptr == 0 {
        return Ok(());
    }
    if cs_ptr >= uaccess::TASK_SIZE_MAX {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; RseqCs::SIZE];
    read_user(t, cs_ptr, &mut b)?;
    let cs = RseqCs::from_bytes(&b);
    if !cs.is_valid(uaccess::TASK_SIZE_MAX) {
        return Err(Errno::EINVAL);
    }
    let mut signature = [0u8; 4];
    read_user(t, cs.abort_ip.wrapping_sub(4), &mut signature)?;
    if u32::from_le_bytes(signature) != t.rseq.sig.load(Ordering::Relaxed) {
        // Linux says so only with CONFIG_DEBUG_RSEQ; the console stays quiet.
        log::debug!("pid {}: rseq abort signature mismatch at {:#x}", t.process.pid, cs.abort_ip.wrapping_sub(4));
        return Err(Errno::EINVAL);
    }
    let clear = || write_user(t, area + Rseq::RSEQ_CS as u64, &[0; 8]);
    if !cs.contains(ctx.regs.rip) {
        return clear();
    }
    // The deprecated no-restart flags, in the section or the area, are
    // refused (Linux 6.1's rseq_warn_flags).
    let mut flags = [0u8; 4];
    read_user(t, area + Rseq::FLAGS as u64, &mut flags)?;
    if cs.flags != 0 || u32::from_le_bytes(flags) != 0 {
        return Err(Errno::EINVAL);
    }
    if !restart {
        return Ok(());
    }
    clear()?;
    ctx.regs.rip = cs.abort_ip;
    Ok(())
}

/// Writes cpu_id_start, cpu_id, node_id and mm_cid.
fn write_ids(t: &Task, k: &Arc<sched::Thread>, area: u64) -> Result<(), Errno> {
    let cpu = hal::percpu::cpu_id();
    let cid = t.rseq.cids.lock().as_ref().map_or(0, |c| c.get(cpu, k));
    let mut ids = [0u8; 8];
    ids[..4].copy_from_slice(&(cpu as u32).to_le_bytes());
    ids[4..].copy_from_slice(&(cpu as u32).to_le_bytes());
    write_user(t, area + Rseq::CPU_ID_START as u64, &ids)?;
    // node_id 0: one NUMA node.
    let mut more = [0u8; 8];
    more[4..].copy_from_slice(&cid.to_le_bytes());
    write_user(t, area + Rseq::NODE_ID as u64, &more)
}

/// A new thread or process: a fork child keeps its parent thread's
/// registration (the area is at the same address in its copy of the
/// memory) with new ids of its own; a thread or any CLONE_VM child starts
/// with none, and a CLONE_VM child process shares its parent's ids.
pub fn clone(parent: &Task, child: &Task, new_process: bool, shares_vm: bool) -> Result<(), Errno> {
    if shares_vm {
        if new_process {
            *child.process.mm_cids.lock() = parent.process.mm_cids.lock().clone();
        }
        return Ok(());
    }
    let area = parent.rseq.area.load(Ordering::Relaxed);
    if area == 0 {
        return Ok(());
    }
    let cids = mm_cids(&child.process)?;
    cids.join();
    *child.rseq.cids.lock() = Some(cids);
    child.rseq.sig.store(parent.rseq.sig.load(Ordering::Relaxed), Ordering::Relaxed);
    child.rseq.len.store(parent.rseq.len.load(Ordering::Relaxed), Ordering::Relaxed);
    child.rseq.update.store(true, Ordering::Relaxed);
    child.rseq.area.store(area, Ordering::Relaxed);
    Ok(())
}

/// exec: the registration goes with the old image, and the new address
/// space starts with fresh ids.
pub fn exec(t: &Task) {
    t.rseq.drop_registration();
    *t.process.mm_cids.lock() = None;
}

/// The thread is exiting.
pub fn exit(t: &Task) {
    t.rseq.drop_registration();
}

/// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ): every thread of
/// `p` running now (on `cpu` only, if given) aborts the critical section
/// it is in before it runs more user code. Threads not running will see
/// their switch when they return, which aborts it anyway. The caller then
/// interrupts the CPUs concerned.
pub fn restart_running(p: &Process, cpu: Option<usize>) {
    for t in p.tasks.lock().iter() {
        let running = t
            .kthread
            .get()
            .is_some_and(|k| k.state() == sched::State::Running && cpu.is_none_or(|c| k.last_cpu() == c));
        if running && t.rseq.is_registered() {
            t.rseq.restart.store(true, Ordering::Release);
        }
    }
}
