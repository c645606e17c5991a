//! The scheduler: per-CPU run queues of kernel threads, round robin with
//! timer-driven preemption.
//!
//! Each CPU owns a [`RunQueue`] with its current thread, its ready threads
//! and its idle thread. [`schedule`] puts the current thread back (unless
//! it blocked or died), picks the next, and switches. A thread that died
//! is released by the thread that runs after it (`finish_switch`), because
//! a thread cannot free the stack it is running on.

mod thread;
mod wait;

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use hal::context::KernelStack;
use hal::percpu::{PerCpu, MAX_CPUS};
use hal::sync::{IrqGuard, SpinLock};

#[cfg(feature = "ktest")]
pub use thread::live_threads;
use thread::ON_CPU;
pub use thread::{SpawnError, State, Thread};
pub use wait::{sleep_ns, sleep_until_interruptible, Interrupted, WaitQueue};

struct RunQueue {
    current: Option<Arc<Thread>>,
    ready: VecDeque<Arc<Thread>>,
    idle: Option<Arc<Thread>>,
    /// The thread switched away from, to be finished by the next one.
    prev_slot: Option<usize>,
    dead: Option<Arc<Thread>>,
    switches: u64,
}

impl RunQueue {
    const fn new() -> RunQueue {
        RunQueue { current: None, ready: VecDeque::new(), idle: None, prev_slot: None, dead: None, switches: 0 }
    }
}

static RUN_QUEUES: PerCpu<SpinLock<RunQueue>> = PerCpu::new([const { SpinLock::new(RunQueue::new()) }; MAX_CPUS]);

/// Adopts the running boot context as this CPU's idle thread.
pub fn init() {
    let cpu = hal::percpu::cpu_id();
    let idle = Thread::new("idle", None, None, cpu, true).expect("no memory for the idle thread");
    let idle = Arc::new(idle);
    idle.set_state(State::Running);
    ON_CPU[idle.slot()].store(true, Ordering::Release);
    let mut rq = RUN_QUEUES.get().lock();
    rq.idle = Some(idle.clone());
    rq.current = Some(idle);
}

/// The idle loop: halt until an interrupt, run whatever became ready.
pub fn idle_loop() -> ! {
    loop {
        hal::cpu::disable_interrupts();
        if RUN_QUEUES.get().lock().ready.is_empty() {
            hal::cpu::enable_interrupts_and_halt();
        } else {
            hal::cpu::enable_interrupts();
            schedule();
        }
    }
}

/// The thread running on this CPU.
pub fn current() -> Arc<Thread> {
    let _irq = IrqGuard::new();
    RUN_QUEUES.get().lock().current.clone().expect("scheduler not initialized")
}

/// The current thread, if the scheduler runs yet.
pub fn current_opt() -> Option<Arc<Thread>> {
    let _irq = IrqGuard::new();
    RUN_QUEUES.get().lock().current.clone()
}

/// Starts a kernel thread running `f` on this CPU's run queue.
pub fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<Arc<Thread>, SpawnError> {
    spawn_configured(name, |_| {}, f)
}

/// Like [`spawn`], but `configure` sets the thread up (address space,
/// task id, and publishing it to its owner) before it can first run: a
/// new thread may run before `spawn` returns to its creator.
pub fn spawn_configured(
    name: &str,
    configure: impl FnOnce(&Arc<Thread>),
    f: impl FnOnce() + Send + 'static,
) -> Result<Arc<Thread>, SpawnError> {
    let stack = KernelStack::new().map_err(|_| SpawnError::OutOfMemory)?;
    let start = crate::mm::try_box(f).map_err(|_| SpawnError::OutOfMemory)?;
    let cpu = hal::percpu::cpu_id();
    let thread = Thread::new(name, None, Some(start), cpu, false)?;
    thread.context().prepare(&stack, thread_entry, thread.slot());
    *thread.stack.lock() = Some(stack);
    let thread = Arc::try_new(thread).map_err(|_| SpawnError::OutOfMemory)?;
    configure(&thread);
    let mut rq = RUN_QUEUES.get_for(cpu).lock();
    rq.ready.try_reserve(1).map_err(|_| SpawnError::OutOfMemory)?;
    rq.ready.push_back(thread.clone());
    Ok(thread)
}

fn thread_entry(_slot: usize) -> ! {
    finish_switch();
    hal::cpu::enable_interrupts();
    let start = current().start.lock().take();
    if let Some(start) = start {
        start();
    }
    exit_current()
}

/// Ends the current thread.
pub fn exit_current() -> ! {
    let me = current();
    log::trace!("thread {} ({}) exits", me.id(), me.name());
    hal::cpu::disable_interrupts();
    me.set_state(State::Dead);
    me.exited.wake_all();
    drop(me);
    schedule();
    unreachable!("a dead thread was resumed");
}

/// Blocks until `thread` has exited.
#[cfg(feature = "ktest")]
pub fn join(thread: &Thread) {
    thread.exited.wait_until(|| thread.state() == State::Dead);
}

/// Makes a blocked thread ready; false if it was not blocked.
pub fn wake(thread: &Arc<Thread>) -> bool {
    if !thread.unblock() {
        return false;
    }
    let cpu = thread.cpu.load(Ordering::Relaxed);
    let mut rq = RUN_QUEUES.get_for(cpu).lock();
    if rq.ready.try_reserve(1).is_err() {
        // Cannot queue it: leave it blocked rather than lose it silently.
        thread.set_state(State::Blocked);
        log::error!("out of memory waking thread {}", thread.id());
        return false;
    }
    rq.ready.push_back(thread.clone());
    true
}

/// Gives up the CPU to another ready thread, if any.
pub fn yield_now() {
    schedule();
}

/// Per CPU: a preemption is owed to the thread the timer interrupted in
/// user mode (taken when it is back in its run loop).
static NEED_RESCHED: PerCpu<core::sync::atomic::AtomicBool> =
    PerCpu::new([const { core::sync::atomic::AtomicBool::new(false) }; MAX_CPUS]);

/// Timer tick: wake sleepers, preempt if someone else is waiting.
pub(crate) fn on_tick() {
    wait::wake_sleepers(hal::time::monotonic_ns());
    let preempt = !RUN_QUEUES.get().lock().ready.is_empty();
    if preempt {
        if hal::trap::interrupted_user_mode() {
            NEED_RESCHED.get().store(true, Ordering::Relaxed);
        } else {
            schedule();
        }
    }
}

/// Called by user threads between runs: take a preemption the timer owed.
pub fn preempt_point() {
    let _irq = IrqGuard::new();
    if NEED_RESCHED.get().swap(false, Ordering::Relaxed) {
        schedule();
    }
}

/// Context switches done on this CPU.
pub fn switch_count() -> u64 {
    RUN_QUEUES.get().lock().switches
}

/// Picks the next thread and switches to it. The current thread's state
/// decides what happens to it: Running goes back on the ready queue,
/// Blocked stays with whatever queue it waits on, Dead is released after
/// the switch.
pub fn schedule() {
    let _irq = IrqGuard::new();
    let (from, to) = {
        let mut rq = RUN_QUEUES.get().lock();
        let prev = rq.current.take().expect("scheduler not initialized");
        match prev.state() {
            State::Running if !prev.is_idle() => {
                prev.set_state(State::Ready);
                if rq.ready.try_reserve(1).is_ok() {
                    rq.ready.push_back(prev.clone());
                } else {
                    // No room to queue it: keep running it.
                    prev.set_state(State::Running);
                    rq.current = Some(prev);
                    return;
                }
            }
            State::Dead => rq.dead = Some(prev.clone()),
            _ => {}
        }
        let next = loop {
            match rq.ready.pop_front() {
                Some(t) if t.state() == State::Dead => continue,
                Some(t) => break t,
                None => break rq.idle.clone().expect("no idle thread"),
            }
        };
        next.set_state(State::Running);
        if next.slot() == prev.slot() {
            rq.current = Some(next);
            return;
        }
        // Another CPU may still be finishing its switch away from `next`.
        while ON_CPU[next.slot()].load(Ordering::Acquire) {
            hal::cpu::pause();
        }
        ON_CPU[next.slot()].store(true, Ordering::Release);
        rq.prev_slot = Some(prev.slot());
        rq.switches += 1;
        let contexts = (prev.context(), next.context());
        rq.current = Some(next);
        contexts
    };
    hal::context::switch(from, to);
    finish_switch();
}

/// Runs on the new thread right after a switch: the previous thread is
/// now off its stack, so it may be resumed elsewhere or freed.
fn finish_switch() {
    let (prev_slot, dead) = {
        let mut rq = RUN_QUEUES.get().lock();
        (rq.prev_slot.take(), rq.dead.take())
    };
    if let Some(slot) = prev_slot {
        ON_CPU[slot].store(false, Ordering::Release);
    }
    // Kernel threads keep whatever address space was active (its kernel
    // half is the same everywhere); user threads bring their own.
    if let Some(me) = RUN_QUEUES.get().lock().current.as_ref() {
        if let Some(pt) = me.vm_root.lock().as_ref() {
            pt.activate();
        }
    }
    if let Some(dead) = dead {
        // The stack goes now; the rest when the last reference (a joiner) drops.
        let stack = dead.stack.lock().take();
        drop(stack);
    }
}
