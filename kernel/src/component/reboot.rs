//! Micro-reboot (issue 15 part 5, docs/components.md): a component that
//! faults (any exception: a page fault, the `ud2` of a Rust panic) or
//! overruns the watchdog is marked failed; threads inside it unwind to
//! the invocation boundary with an error for their callers; its memory is
//! reset from its pristine image and its init runs again before the next
//! invocation goes through. Only its store page survives (the runtime's
//! `store`), crash-only style.
//!
//! Each component's `Life` is one atomic word, generation and state. A
//! fault moves READY(g) to FAILED(g+1): every thread that entered in
//! generation g sees the change at its next kernel entry (a timer tick at
//! the latest) or when it returns, and unwinds with EOWNERDEAD. The
//! reboot is lazy: the next invoker that finds the component FAILED and
//! no thread inside resets the memory and runs init on its own thread,
//! then makes its invocation. The first init (FRESH) is run the same way.
//!
//! A restart budget keeps a component that faults in init, or faults on
//! every invocation, from rebooting forever: after `RESTART_BUDGET`
//! faults with no successful invocation between them, it is DEAD, and
//! invocations get ENOTRECOVERABLE.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hal::frame::UserFrame;
use hal::mm::PAGE_SIZE;
use hal::paging::{PageTable, PteFlags};
use linux_abi::errno::Errno;

use super::{slot_base, Component, HEAP_OFFSET, HEAP_SIZE, STACKS_OFFSET, STACK_SIZE, STACK_SLOTS, STACK_STRIDE};
use crate::sched;

/// Where the store page lies in a slot (the runtime's `store::STORE_OFFSET`).
pub const STORE_OFFSET: u64 = 0xD000_0000;

/// Faults in a row (no successful invocation between them, inits
/// included) a component may reboot from; one more and it stays failed.
pub const RESTART_BUDGET: u32 = 3;

/// How long an invocation may run in its own component (time in the
/// components it invokes is not counted) before the watchdog fails it.
/// Generous: a loaded host stalls guests for tens of milliseconds.
pub const WATCHDOG_NS: u64 = 1_000_000_000;

/// How long an invoker waits for a failed component's threads to unwind
/// or for another thread's reboot of it, before EAGAIN. Above the
/// watchdog, which bounds how long a thread inside can take to notice.
const WAIT_NS: u64 = 3 * WATCHDOG_NS;

/// States, in the low byte of the life word; the generation is above.
const FRESH: u64 = 0;
const READY: u64 = 1;
const FAILED: u64 = 2;
const REBOOTING: u64 = 3;
const DEAD: u64 = 4;

fn pack(generation: u64, state: u64) -> u64 {
    generation << 8 | state
}

fn state_of(word: u64) -> u64 {
    word & 0xff
}

fn generation_of(word: u64) -> u64 {
    word >> 8
}

/// A thread's place inside a component: its stack, the generation it
/// entered, and whether it runs the init.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub stack: u32,
    pub generation: u64,
    pub init: bool,
}

/// A component's life: its state, its restart budget, and what its
/// memory is reset to.
pub struct Life {
    word: AtomicU64,
    /// Faults since the last successful invocation.
    strikes: AtomicU32,
    /// Reboots done (memory reset and init run again).
    pub reboots: AtomicU64,
    /// When the fault that is not yet recovered from happened (0: none).
    failed_at_ns: AtomicU64,
    /// Fault to the first successful invocation after it, last time.
    pub last_recovery_ns: AtomicU64,
    /// The writable pages of the image (data, bss) as loaded.
    pristine: Vec<(u64, Vec<u8>)>,
}

impl Life {
    /// Records the pristine image of a freshly loaded domain and maps its
    /// store page (zeroed: the store starts empty at boot).
    pub(super) fn new(domain: &PageTable, slot: usize) -> Result<Life, &'static str> {
        let base = slot_base(slot);
        let mut pristine = Vec::new();
        for (va, flags) in domain.mapped_pages(base, base + HEAP_OFFSET) {
            if !flags.writable {
                continue;
            }
            let frame = domain.frame_at(va).ok_or("image page vanished")?;
            let mut bytes = Vec::new();
            bytes.try_reserve_exact(PAGE_SIZE as usize).map_err(|_| "out of memory")?;
            bytes.resize(PAGE_SIZE as usize, 0);
            frame.read(0, &mut bytes);
            pristine.try_reserve(1).map_err(|_| "out of memory")?;
            pristine.push((va, bytes));
        }
        let store = UserFrame::alloc_zeroed().map_err(|_| "out of memory")?;
        let rw = PteFlags { accessible: true, writable: true, executable: false };
        domain.map(base + STORE_OFFSET, store, rw).map_err(|_| "out of memory")?;
        Ok(Life {
            word: AtomicU64::new(pack(0, FRESH)),
            strikes: AtomicU32::new(0),
            reboots: AtomicU64::new(0),
            failed_at_ns: AtomicU64::new(0),
            last_recovery_ns: AtomicU64::new(0),
            pristine,
        })
    }

    /// The generation now: it changes when the component fails.
    pub(super) fn generation(&self) -> u64 {
        generation_of(self.word.load(Ordering::Acquire))
    }

    /// Whether the component spent its restart budget and stays failed.
    #[cfg(feature = "ktest")]
    pub fn is_dead(&self) -> bool {
        state_of(self.word.load(Ordering::Acquire)) == DEAD
    }

    /// Lets a thread into `c` at `depth`: a stack of its own, in a ready
    /// generation. A fresh or failed component is (re)booted first, on
    /// this thread. EAGAIN if no stack is free or a reboot cannot start
    /// in time; ENOTRECOVERABLE if the component is dead.
    #[inline]
    pub(super) fn enter(&self, c: &Component, depth: u32) -> Result<Entry, Errno> {
        let word = self.word.load(Ordering::Acquire);
        if state_of(word) == READY {
            let stack = c.take_stack().ok_or(Errno::EAGAIN)?;
            // Re-read with the stack held: a fault in between would let
            // this thread into a failed generation.
            if self.word.load(Ordering::Acquire) == word {
                return Ok(Entry { stack, generation: generation_of(word), init: false });
            }
            c.release_stack(stack);
        }
        self.enter_slow(c, depth)
    }

    /// `enter` when the component is not simply ready (or just failed).
    #[cold]
    #[inline(never)]
    fn enter_slow(&self, c: &Component, depth: u32) -> Result<Entry, Errno> {
        let mut give_up = None;
        loop {
            let word = self.word.load(Ordering::Acquire);
            match state_of(word) {
                READY => {
                    let stack = c.take_stack().ok_or(Errno::EAGAIN)?;
                    if self.word.load(Ordering::Acquire) == word {
                        return Ok(Entry { stack, generation: generation_of(word), init: false });
                    }
                    c.release_stack(stack);
                    continue;
                }
                DEAD => return Err(Errno::ENOTRECOVERABLE),
                state @ (FRESH | FAILED) if c.stacks_busy.load(Ordering::Acquire) == 0 => {
                    let rebooting = pack(generation_of(word), REBOOTING);
                    if self.word.compare_exchange(word, rebooting, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                        self.reboot(c, state == FAILED, depth)?;
                    }
                    continue;
                }
                // Threads still inside a failed generation, or another
                // thread rebooting it: wait, boundedly (this thread may
                // itself be inside, further up its invocation chain).
                _ => {}
            }
            let now = hal::time::monotonic_ns();
            if now > *give_up.get_or_insert(now + WAIT_NS) {
                return Err(Errno::EAGAIN);
            }
            sched::yield_now();
        }
    }

    /// Resets the memory (unless fresh) and runs init, again while init
    /// faults and the budget lasts. Called in REBOOTING, which it leaves.
    fn reboot(&self, c: &Component, mut reset: bool, depth: u32) -> Result<(), Errno> {
        let generation = self.generation();
        loop {
            if reset {
                self.reset_memory(c);
                self.reboots.fetch_add(1, Ordering::Relaxed);
            }
            reset = true;
            let Some(stack) = c.take_stack() else {
                // Racers hold stacks for an instant: let a later invoker retry.
                self.word.store(pack(generation, FAILED), Ordering::Release);
                return Err(Errno::EAGAIN);
            };
            let entry = Entry { stack, generation, init: true };
            let result = super::invoke::run_init(c, entry, depth);
            c.release_stack(stack);
            if result.is_ok() {
                self.word.store(pack(generation, READY), Ordering::Release);
                return Ok(());
            }
            if self.strikes.fetch_add(1, Ordering::Relaxed) + 1 > RESTART_BUDGET {
                log::warn!("component {}: init failed, restart budget spent: it stays failed", c.name);
                self.word.store(pack(generation + 1, DEAD), Ordering::Release);
                return Err(Errno::ENOTRECOVERABLE);
            }
        }
    }

    /// Data and bss back to the image's bytes, heap and stacks zeroed.
    /// Nobody runs in the component meanwhile (REBOOTING, no stack held
    /// but for an instant by invokers that then back off).
    fn reset_memory(&self, c: &Component) {
        for (va, bytes) in &self.pristine {
            if let Some(frame) = c.domain.frame_at(*va) {
                frame.write(0, bytes);
            }
        }
        let base = slot_base(c.slot);
        let zero = |va: u64| {
            if let Some(frame) = c.domain.frame_at(va) {
                frame.zero(0, PAGE_SIZE as usize);
            }
        };
        for page in (0..HEAP_SIZE).step_by(PAGE_SIZE as usize) {
            zero(base + HEAP_OFFSET + page);
        }
        for index in 0..u64::from(STACK_SLOTS) {
            let bottom = base + STACKS_OFFSET + index * STACK_STRIDE + PAGE_SIZE;
            for page in (0..STACK_SIZE).step_by(PAGE_SIZE as usize) {
                zero(bottom + page);
            }
        }
    }

    /// A thread inside faulted or overran the watchdog: the generation it
    /// entered fails (once, whichever of its threads is first), spending
    /// one unit of the budget. Faults in init are the reboot's to count.
    #[cold]
    pub(super) fn fault(&self, c: &Component, entry: Entry) {
        c.faults.fetch_add(1, Ordering::Relaxed);
        if entry.init {
            return;
        }
        let word = self.word.load(Ordering::Acquire);
        if word != pack(entry.generation, READY) {
            return;
        }
        let dead = self.strikes.fetch_add(1, Ordering::Relaxed) + 1 > RESTART_BUDGET;
        let next = pack(entry.generation + 1, if dead { DEAD } else { FAILED });
        if self.word.compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            if dead {
                log::warn!("component {}: faulted {} times in a row: it stays failed", c.name, RESTART_BUDGET + 1);
            }
            let _ =
                self.failed_at_ns.compare_exchange(0, hal::time::monotonic_ns(), Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The component replied: if it was not rebooted under this thread,
    /// the reply stands, and a successful invocation ends the run of
    /// faults and a recovery.
    #[inline]
    pub(super) fn returned(&self, entry: Entry, reply: Result<u64, Errno>) -> Result<u64, Errno> {
        if self.generation() != entry.generation {
            return Err(Errno::EOWNERDEAD);
        }
        if !entry.init && self.strikes.load(Ordering::Relaxed) != 0 {
            self.recovered();
        }
        reply
    }

    /// The first successful invocation after faults: the run of faults
    /// ends, and the time since the first of them is the recovery time.
    #[cold]
    #[inline(never)]
    fn recovered(&self) {
        self.strikes.store(0, Ordering::Relaxed);
        let at = self.failed_at_ns.swap(0, Ordering::Relaxed);
        if at != 0 {
            let took = hal::time::monotonic_ns().saturating_sub(at);
            self.last_recovery_ns.store(took, Ordering::Relaxed);
        }
    }

    /// Gives a dead component a new budget: the next invocation reboots
    /// it (the fault-injection tool's and the tests' way back).
    #[cfg(feature = "ktest")]
    pub fn revive(&self) {
        let word = self.word.load(Ordering::Acquire);
        if state_of(word) == DEAD {
            self.strikes.store(0, Ordering::Relaxed);
            self.failed_at_ns.store(0, Ordering::Relaxed);
            self.word.store(pack(generation_of(word) + 1, FAILED), Ordering::Release);
        }
    }
}

/// The watchdog of one invocation: started at the first timer tick that
/// finds the thread inside (so the fast path reads no clock), paused
/// while the thread is in the components it invokes.
pub(super) struct Watchdog {
    since: Option<u64>,
}

impl Watchdog {
    pub fn new() -> Watchdog {
        Watchdog { since: None }
    }

    /// At a tick: whether the invocation has run out of time.
    pub fn expired(&mut self) -> bool {
        let now = hal::time::monotonic_ns();
        let since = *self.since.get_or_insert(now);
        now.saturating_sub(since) > WATCHDOG_NS
    }

    /// Runs a nested invocation without charging its time here.
    pub fn paused<R>(&mut self, nested: impl FnOnce() -> R) -> R {
        let Some(since) = self.since else { return nested() };
        let start = hal::time::monotonic_ns();
        let result = nested();
        self.since = Some(since + hal::time::monotonic_ns().saturating_sub(start));
        result
    }
}
