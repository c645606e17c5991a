//! Kernel threads: identity, state and the resources a thread owns.
//!
//! Saved register contexts do not live inside [`Thread`] but in a static
//! table of slots. A switch then only needs two `&'static` contexts, so no
//! reference-counted pointer sits on a stack that may never be resumed,
//! and a dead thread's memory can be released by whoever runs next.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use hal::context::{Context, KernelStack};
use hal::paging::PageTable;
use hal::sync::SpinLock;

use super::policy::{weighted, Policy, SchedParams, RR_SLICE_NS};
use super::wait::WaitQueue;

/// How many threads can exist at once (a context slot each).
pub const MAX_THREADS: usize = 4096;

pub(super) static CONTEXTS: [Context; MAX_THREADS] = [const { Context::empty() }; MAX_THREADS];
/// Set while the slot's thread is executing on some CPU (including the
/// tail of a switch away from it), so no other CPU resumes it too early.
pub(super) static ON_CPU: [AtomicBool; MAX_THREADS] = [const { AtomicBool::new(false) }; MAX_THREADS];
static SLOTS_USED: SpinLock<[u64; MAX_THREADS / 64]> = SpinLock::new([0; MAX_THREADS / 64]);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    Running = 0,
    Ready = 1,
    Blocked = 2,
    Dead = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnError {
    OutOfMemory,
    TooManyThreads,
}

pub type StartFn = Box<dyn FnOnce() + Send + 'static>;

pub struct Thread {
    id: u64,
    name: String,
    slot: usize,
    state: AtomicU8,
    /// The CPU whose run queue holds this thread, or last ran it.
    pub(super) cpu: AtomicUsize,
    /// CPUs this thread may run on (bit n = CPU n), `sched_setaffinity`.
    affinity: AtomicU64,
    pub(super) stack: SpinLock<Option<KernelStack>>,
    pub(super) start: SpinLock<Option<StartFn>>,
    pub(super) exited: WaitQueue,
    is_idle: bool,
    /// The user address space this thread runs in, activated whenever the
    /// thread is switched in (None for pure kernel threads).
    pub(super) vm_root: SpinLock<Option<Arc<PageTable>>>,
    /// Set when a signal is pending, so interruptible waits end early.
    interrupt: AtomicBool,
    /// Set while the thread sleeps where a signal cannot wake it (Linux's
    /// TASK_UNINTERRUPTIBLE, /proc's 'D').
    uninterruptible: AtomicBool,
    /// The user task this thread runs (0 for kernel threads).
    task_id: core::sync::atomic::AtomicI32,
    /// Time on a CPU, in TSC ticks: (finished slices, start of the
    /// current slice or 0). Kept at context switches, as Linux keeps a
    /// task's runtime, so system calls need no clock reads of their own;
    /// one lock so a reader never sees a slice counted twice or not at all.
    run_time: SpinLock<(u64, u64)>,
    /// Policy, real-time priority, nice and reset-on-fork, packed (see
    /// `pack_params`) so the queues read them with one load.
    params: AtomicU32,
    /// Fair-class virtual runtime: TSC ticks on a CPU scaled by
    /// 1024 / weight (see `policy`).
    vruntime: AtomicU64,
    /// What is left of a SCHED_RR slice, in ns.
    rr_left_ns: AtomicU64,
    /// Goes to the tail of its real-time list at the next switch (it
    /// yielded or its RR slice ended) rather than the head (preempted).
    requeue_tail: AtomicBool,
    /// How many times the thread has been switched in: a user thread
    /// that finds it changed since it last left user mode was preempted,
    /// blocked or moved meanwhile (restartable sequences ask).
    switch_ins: AtomicU64,
}

fn pack_params(p: &SchedParams) -> u32 {
    let policy = p.policy.to_linux();
    policy
        | (p.rt_priority.min(255) << 8)
        | (((p.nice.clamp(-20, 19) + 20) as u32) << 16)
        | (u32::from(p.reset_on_fork) << 24)
}

fn unpack_params(v: u32) -> SchedParams {
    SchedParams {
        policy: Policy::from_linux(v & 0xff).unwrap_or(Policy::Other),
        rt_priority: (v >> 8) & 0xff,
        nice: ((v >> 16) & 0xff) as i32 - 20,
        reset_on_fork: v & (1 << 24) != 0,
    }
}

impl Thread {
    pub(super) fn new(
        name: &str,
        stack: Option<KernelStack>,
        start: Option<StartFn>,
        cpu: usize,
        is_idle: bool,
    ) -> Result<Thread, SpawnError> {
        let slot = alloc_slot().ok_or(SpawnError::TooManyThreads)?;
        let mut owned_name = String::new();
        if owned_name.try_reserve_exact(name.len()).is_err() {
            free_slot(slot);
            return Err(SpawnError::OutOfMemory);
        }
        owned_name.push_str(name);
        Ok(Thread {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: owned_name,
            slot,
            state: AtomicU8::new(State::Ready as u8),
            cpu: AtomicUsize::new(cpu),
            affinity: AtomicU64::new(u64::MAX),
            stack: SpinLock::new(stack),
            start: SpinLock::new(start),
            exited: WaitQueue::new(),
            is_idle,
            vm_root: SpinLock::new(None),
            interrupt: AtomicBool::new(false),
            uninterruptible: AtomicBool::new(false),
            task_id: core::sync::atomic::AtomicI32::new(0),
            run_time: SpinLock::new((0, 0)),
            params: AtomicU32::new(pack_params(&SchedParams::DEFAULT)),
            vruntime: AtomicU64::new(0),
            rr_left_ns: AtomicU64::new(RR_SLICE_NS),
            requeue_tail: AtomicBool::new(false),
            switch_ins: AtomicU64::new(0),
        })
    }

    /// TSC ticks this thread has spent on a CPU, the current slice
    /// included.
    pub fn cpu_tsc(&self) -> u64 {
        let (done, since) = *self.run_time.lock();
        if since == 0 {
            done
        } else {
            done + hal::cpu::rdtsc().saturating_sub(since)
        }
    }

    /// The thread leaves its CPU at `now` (TSC); its virtual runtime
    /// grows by the slice, weighted.
    pub(super) fn stop_clock(&self, now: u64) {
        let mut t = self.run_time.lock();
        if t.1 != 0 {
            let ran = now.saturating_sub(t.1);
            t.0 += ran;
            t.1 = 0;
            let weight = unpack_params(self.params.load(Ordering::Relaxed)).weight();
            self.vruntime.fetch_add(weighted(ran, weight), Ordering::Relaxed);
        }
    }

    /// Charges the slice so far without ending it (at a tick, so the
    /// virtual runtime compared against the queue is current).
    pub(super) fn charge_clock(&self, now: u64) {
        self.stop_clock(now);
        self.start_clock(now);
    }

    pub fn sched_params(&self) -> SchedParams {
        unpack_params(self.params.load(Ordering::Relaxed))
    }

    pub(super) fn store_sched_params(&self, p: &SchedParams) {
        self.params.store(pack_params(p), Ordering::Relaxed);
        self.rr_left_ns.store(RR_SLICE_NS, Ordering::Relaxed);
    }

    pub(super) fn vruntime(&self) -> u64 {
        self.vruntime.load(Ordering::Relaxed)
    }

    pub(super) fn set_vruntime(&self, v: u64) {
        self.vruntime.store(v, Ordering::Relaxed);
    }

    /// Takes `ns` off the SCHED_RR slice; true when it ran out (it is
    /// refilled at once).
    pub(super) fn rr_tick(&self, ns: u64) -> bool {
        let left = self.rr_left_ns.load(Ordering::Relaxed);
        if left > ns {
            self.rr_left_ns.store(left - ns, Ordering::Relaxed);
            false
        } else {
            self.rr_left_ns.store(RR_SLICE_NS, Ordering::Relaxed);
            true
        }
    }

    pub(super) fn set_requeue_tail(&self) {
        self.requeue_tail.store(true, Ordering::Relaxed);
    }

    pub(super) fn take_requeue_tail(&self) -> bool {
        self.requeue_tail.swap(false, Ordering::Relaxed)
    }

    /// The thread starts on a CPU at `now` (TSC).
    pub(super) fn start_clock(&self, now: u64) {
        self.run_time.lock().1 = now.max(1);
    }

    /// How many times the thread has been switched in so far.
    pub fn switch_ins(&self) -> u64 {
        self.switch_ins.load(Ordering::Relaxed)
    }

    pub(super) fn count_switch_in(&self) {
        self.switch_ins.fetch_add(1, Ordering::Relaxed);
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn slot(&self) -> usize {
        self.slot
    }

    pub(super) fn context(&self) -> &'static Context {
        &CONTEXTS[self.slot]
    }

    pub fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            0 => State::Running,
            1 => State::Ready,
            2 => State::Blocked,
            _ => State::Dead,
        }
    }

    pub(super) fn set_state(&self, state: State) {
        self.state.store(state as u8, Ordering::Release);
    }

    /// Marks the thread Blocked for an interruptible sleep, unless an
    /// interrupt is already pending; false when it must not sleep.
    ///
    /// `interrupt()` on another CPU sets the flag and then wakes the thread
    /// only if it is Blocked. Checking the flag before blocking left a
    /// window in which that wakeup found the thread still Running and was
    /// lost, and the thread then slept for good (a SIGKILLed child in
    /// pause() never exited). So the state is stored first and the flag
    /// read after a full fence; the waker's compare-exchange is one too, so
    /// at least one side sees the other.
    pub(super) fn block_unless_interrupted(&self) -> bool {
        self.block_unless(|| self.interrupt_pending())
    }

    /// Marks the thread Blocked unless `stop` (read after the state is
    /// stored and a full fence) says a wakeup already came: the protocol
    /// of `block_unless_interrupted` for any flag a waker sets before it
    /// calls `wake`. False when the thread must not sleep.
    pub(super) fn block_unless(&self, stop: impl Fn() -> bool) -> bool {
        self.set_state(State::Blocked);
        core::sync::atomic::fence(Ordering::SeqCst);
        if !stop() {
            return true;
        }
        // Take the block back, unless a waker already queued the thread:
        // then it must go through the scheduler, which resumes it.
        self.state
            .compare_exchange(State::Blocked as u8, State::Running as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    }

    /// Moves Blocked -> Ready; false if the thread was not blocked.
    pub(super) fn unblock(&self) -> bool {
        self.state
            .compare_exchange(State::Blocked as u8, State::Ready as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Makes the thread run in `root` from its next switch in on; a
    /// thread changing its own address space also activates it.
    pub fn set_vm_root(&self, root: Option<Arc<PageTable>>) {
        let old = core::mem::replace(&mut *self.vm_root.lock(), root);
        // Freeing an address space is long work: not under the lock.
        drop(old);
    }

    /// The current thread moves into `root` now (a component invocation
    /// migrating it into another domain, or back): the new space is
    /// activated and recorded together, with interrupts off, so a switch
    /// away and back in finds it. `None` keeps what is loaded (a kernel
    /// thread coming back has no space of its own). Returns the old one.
    pub fn swap_vm_root(&self, root: Option<Arc<PageTable>>) -> Option<Arc<PageTable>> {
        let mut slot = self.vm_root.lock();
        if let Some(pt) = root.as_ref() {
            pt.activate();
        }
        core::mem::replace(&mut *slot, root)
    }

    pub fn task_id(&self) -> i32 {
        self.task_id.load(Ordering::Relaxed)
    }

    pub fn set_task_id(&self, tid: i32) {
        self.task_id.store(tid, Ordering::Relaxed);
    }

    pub fn set_interrupt(&self, pending: bool) {
        self.interrupt.store(pending, Ordering::Release);
    }

    pub fn interrupt_pending(&self) -> bool {
        self.interrupt.load(Ordering::Acquire)
    }

    /// Whether the thread is blocked where a signal cannot wake it.
    pub fn in_uninterruptible_sleep(&self) -> bool {
        self.state() == State::Blocked && self.uninterruptible.load(Ordering::Relaxed)
    }

    pub(super) fn set_uninterruptible(&self, on: bool) {
        self.uninterruptible.store(on, Ordering::Relaxed);
    }

    pub(super) fn is_idle(&self) -> bool {
        self.is_idle
    }

    /// The CPUs this thread may run on.
    pub fn affinity(&self) -> u64 {
        self.affinity.load(Ordering::Relaxed)
    }

    pub(super) fn set_affinity_mask(&self, mask: u64) {
        self.affinity.store(mask, Ordering::Relaxed);
    }

    pub(super) fn allowed_on(&self, cpu: usize) -> bool {
        self.affinity() & (1 << cpu) != 0
    }

    /// The CPU this thread last ran on (or is queued on).
    pub fn last_cpu(&self) -> usize {
        self.cpu.load(Ordering::Relaxed)
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        // The last switch away from a dead thread saved a context nobody
        // will resume.
        CONTEXTS[self.slot].discard();
        free_slot(self.slot);
    }
}

fn alloc_slot() -> Option<usize> {
    let mut used = SLOTS_USED.lock();
    let word = used.iter().position(|w| *w != u64::MAX)?;
    let bit = (!used[word]).trailing_zeros() as usize;
    used[word] |= 1 << bit;
    Some(word * 64 + bit)
}

fn free_slot(slot: usize) {
    SLOTS_USED.lock()[slot / 64] &= !(1 << (slot % 64));
}

/// Context slots in use (threads alive, including not yet reaped ones).
#[cfg(feature = "ktest")]
pub fn live_threads() -> usize {
    SLOTS_USED.lock().iter().map(|w| w.count_ones() as usize).sum()
}
