//! The scheduler: per-CPU run queues of kernel threads with Linux's
//! policies (real-time FIFO/RR above a fair share weighted by nice, see
//! [`policy`]), timer-driven preemption, spread over the CPUs.
//!
//! Each CPU owns a [`RunQueue`] with its current thread, its ready threads
//! (by class and priority) and its idle thread. [`schedule`] puts the current thread back (unless
//! it blocked or died), picks the next, and switches. A thread that died
//! is released by the thread that runs after it (`finish_switch`), because
//! a thread cannot free the stack it is running on.
//!
//! Placement and balancing live in [`balance`]: new and woken threads go
//! to an idle CPU they may run on when there is one, an idle CPU steals
//! from the busiest queue, and a reschedule IPI tells a CPU about work
//! queued for it.
//!
//! Lock order: a CPU holds at most one run-queue lock at a time and never
//! takes another lock under it except a thread's own small locks; threads
//! moving between queues are handed over after the lock is dropped
//! (`finish_switch`'s migration). No spin lock is held across
//! `hal::context::switch`: `schedule` drops its run-queue lock first, and
//! `ON_CPU` keeps another CPU from resuming the thread until the switch
//! away from it is complete.

mod balance;
pub mod policy;
mod thread;
pub mod timer;
mod wait;

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use hal::context::KernelStack;
use hal::percpu::{PerCpu, MAX_CPUS};
use hal::sync::{IrqGuard, SpinLock};

pub use balance::{online_cpus, set_affinity, steals};
use policy::ReadyQueues;
pub use policy::{Policy, SchedParams};
#[cfg(feature = "ktest")]
pub use thread::live_threads;
use thread::ON_CPU;
pub use thread::{SpawnError, State, Thread};
pub use wait::{sleep_ns, sleep_until_interruptible, Interrupted, WaitQueue, WakeBatch, WakeFlag};

struct RunQueue {
    current: Option<Arc<Thread>>,
    ready: ReadyQueues,
    idle: Option<Arc<Thread>>,
    /// The thread switched away from, to be finished by the next one.
    prev_slot: Option<usize>,
    dead: Option<Arc<Thread>>,
    /// A thread switched away from that must move to another CPU (its
    /// affinity excludes this one), handed over by `finish_switch`.
    migrate: Option<Arc<Thread>>,
    switches: u64,
}

impl RunQueue {
    const fn new() -> RunQueue {
        RunQueue {
            current: None,
            ready: ReadyQueues::new(),
            idle: None,
            prev_slot: None,
            dead: None,
            migrate: None,
            switches: 0,
        }
    }

    /// Threads running or waiting here, not counting the idle thread.
    fn load(&self) -> usize {
        self.ready.len() + usize::from(self.current.as_ref().is_some_and(|t| !t.is_idle()))
    }
}

static RUN_QUEUES: PerCpu<SpinLock<RunQueue>> =
    PerCpu::new([const { hal::percpu::CacheAligned(SpinLock::new(RunQueue::new())) }; MAX_CPUS]);

/// Adopts the running boot context as this CPU's idle thread and opens
/// the CPU for threads.
pub fn init() {
    let cpu = hal::percpu::cpu_id();
    let idle =
        Thread::new("idle", None, None, cpu, true).unwrap_or_else(|_| hal::boot_out_of_memory("a CPU's idle thread"));
    let idle = Arc::new(idle);
    idle.set_state(State::Running);
    idle.set_affinity_mask(1 << cpu);
    ON_CPU[idle.slot()].store(true, Ordering::Release);
    {
        let mut rq = RUN_QUEUES.get().lock();
        rq.idle = Some(idle.clone());
        rq.current = Some(idle);
    }
    if cpu == 0 {
        // Another CPU queued a thread here.
        hal::trap::register_handler(hal::trap::RESCHEDULE_VECTOR, |_| preempt_if_waiting());
    }
    balance::cpu_online(cpu);
}

/// The idle loop: run whatever is ready here, else steal from a busy CPU,
/// else halt until an interrupt.
pub fn idle_loop() -> ! {
    loop {
        hal::cpu::disable_interrupts();
        if RUN_QUEUES.get().lock().ready.is_empty() && !balance::steal() {
            balance::set_idle(true);
            // A wakeup that queued work after the check above sent an IPI,
            // which ends the halt (STI; HLT is atomic).
            if RUN_QUEUES.get().lock().ready.is_empty() {
                hal::cpu::enable_interrupts_and_halt();
            }
            balance::set_idle(false);
            hal::cpu::enable_interrupts();
        } else {
            hal::cpu::enable_interrupts();
            schedule();
        }
    }
}

/// The thread running on this CPU.
pub fn current() -> Arc<Thread> {
    current_opt().expect("scheduler not initialized")
}

/// The current thread, if the scheduler runs yet.
#[allow(clippy::let_and_return)] // the binding fixes the drop order, see below
pub fn current_opt() -> Option<Arc<Thread>> {
    let _irq = IrqGuard::new();
    // Not the tail expression: a tail temporary (the run-queue guard) is
    // dropped after `_irq`, which would turn interrupts back on while the
    // lock is still held, and a timer interrupt taking it would deadlock.
    let current = RUN_QUEUES.get().lock().current.clone();
    current
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
    let here = hal::percpu::cpu_id();
    let thread = Thread::new(name, None, Some(start), here, false)?;
    thread.context().prepare(&stack, thread_entry, thread.slot());
    *thread.stack.lock() = Some(stack);
    let thread = Arc::try_new(thread).map_err(|_| SpawnError::OutOfMemory)?;
    // Inherit the creator's CPUs (a forked child keeps its parent's
    // affinity, as on Linux); `configure` may change that.
    // Likewise its scheduling policy, priority and nice (unless the
    // parent asked for SCHED_RESET_ON_FORK), and its place in the fair
    // share, so forking earns no credit.
    if let Some(me) = current_opt() {
        thread.set_affinity_mask(if me.is_idle() { u64::MAX } else { me.affinity() });
        if !me.is_idle() {
            thread.store_sched_params(&me.sched_params().for_child());
            thread.set_vruntime(me.vruntime());
        }
    }
    configure(&thread);
    let cpu = balance::place_new(&thread);
    enqueue(cpu, &thread).map_err(|_| SpawnError::OutOfMemory)?;
    Ok(thread)
}

/// Puts a ready thread on `cpu`'s queue and tells that CPU, at once if
/// the thread should preempt what runs there.
fn enqueue(cpu: usize, thread: &Arc<Thread>) -> Result<(), ()> {
    let from = thread.cpu.swap(cpu, Ordering::Relaxed);
    let preempt = {
        let mut rq = RUN_QUEUES.get_for(cpu).lock();
        rq.ready.place(thread, Some(from), cpu);
        rq.ready.push(thread.clone(), false).map_err(|_| ())?;
        rq.current.as_ref().is_some_and(|c| rq.ready.preempts(c, thread))
    };
    balance::kick(cpu, preempt);
    Ok(())
}

/// Asks `cpu` to reschedule soon: this CPU at its next preemption point,
/// another through an IPI.
fn resched_cpu(cpu: usize) {
    if cpu == hal::percpu::cpu_id() {
        NEED_RESCHED.get().store(true, Ordering::Relaxed);
    } else {
        hal::smp::send_reschedule(cpu);
    }
}

/// Changes `thread`'s scheduling parameters, moving it between queues if
/// it waits in one, and makes its CPU reschedule when the change means
/// another thread should run there (or this one should run now). Fails
/// with `OutOfMemory` only when its new queue cannot grow; nothing changed
/// then.
pub fn set_sched_params(thread: &Arc<Thread>, params: SchedParams) -> Result<(), SpawnError> {
    let _irq = IrqGuard::new();
    let old = thread.sched_params();
    let cpu = thread.last_cpu();
    let resched = {
        let mut rq = RUN_QUEUES.get_for(cpu).lock();
        let queued = rq.ready.remove(thread);
        thread.store_sched_params(&params);
        if queued {
            // Linux: a real-time thread whose priority drops goes to the
            // head of its new list, one that rises to the tail.
            let front = old.policy.is_realtime() && params.policy.is_realtime() && params.rt_priority < old.rt_priority;
            if let Err(t) = rq.ready.push(thread.clone(), front) {
                thread.store_sched_params(&old);
                let _ = rq.ready.push(t, false);
                return Err(SpawnError::OutOfMemory);
            }
        }
        let RunQueue { current, ready, .. } = &*rq;
        match current.as_ref() {
            Some(c) if Arc::ptr_eq(c, thread) => ready.should_give_way(c),
            Some(c) if queued => ready.preempts(c, thread),
            _ => false,
        }
    };
    if resched {
        resched_cpu(cpu);
    }
    Ok(())
}

/// Times real-time threads used up their budget, over all CPUs.
pub fn rt_throttle_count() -> u64 {
    let _irq = IrqGuard::new();
    (0..hal::percpu::MAX_CPUS)
        .filter(|c| online_cpus() & (1 << c) != 0)
        .map(|c| RUN_QUEUES.get_for(c).lock().ready.throttle_count())
        .sum()
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
    let cpu = balance::place_woken(thread);
    if enqueue(cpu, thread).is_err() {
        // Cannot queue it: leave it blocked rather than lose it silently.
        thread.set_state(State::Blocked);
        log::error!("out of memory waking thread {}", thread.id());
        return false;
    }
    true
}

/// Interrupts the CPU `thread` is running on, if it is running on another
/// one, so that it leaves user mode and looks at what changed for it.
pub fn kick_running(thread: &Thread) {
    if thread.state() == State::Running {
        hal::smp::send_reschedule(thread.last_cpu());
    }
}

/// Gives up the CPU to another ready thread, if any: a real-time thread
/// goes behind the others of its priority, a fair one behind the fair
/// thread that is furthest behind.
pub fn yield_now() {
    if let Some(me) = current_opt() {
        me.set_requeue_tail();
    }
    schedule();
}

/// Per CPU: a preemption is owed to the thread the timer interrupted in
/// user mode (taken when it is back in its run loop).
static NEED_RESCHED: PerCpu<core::sync::atomic::AtomicBool> =
    PerCpu::new([const { hal::percpu::CacheAligned(core::sync::atomic::AtomicBool::new(false)) }; MAX_CPUS]);

/// Timer tick: wake sleepers, charge the running thread, and preempt it
/// when its policy says another thread's turn has come.
pub(crate) fn on_tick() {
    let now = hal::time::monotonic_ns();
    // One CPU keeps the sleepers, so their list is not fought over.
    if hal::percpu::cpu_id() == 0 {
        wait::wake_sleepers(now);
        timer::fire(now);
    }
    let preempt = {
        let mut rq = RUN_QUEUES.get().lock();
        let RunQueue { current, ready, .. } = &mut *rq;
        match current.as_ref() {
            Some(cur) => {
                if !cur.is_idle() {
                    cur.charge_clock(hal::cpu::rdtsc());
                }
                ready.tick(cur, now)
            }
            None => false,
        }
    };
    if preempt {
        preempt_now();
    }
}

/// A reschedule IPI: another CPU queued a thread here, or the running
/// thread may no longer run here (its affinity changed; `schedule` then
/// hands it to a CPU it may use).
fn preempt_if_waiting() {
    let preempt = {
        let rq = RUN_QUEUES.get().lock();
        let cpu = hal::percpu::cpu_id();
        rq.current.as_ref().is_some_and(|c| rq.ready.should_give_way(c) || (!c.is_idle() && !c.allowed_on(cpu)))
    };
    if preempt {
        preempt_now();
    }
}

/// From an interrupt: switch now if it came from kernel mode, else once
/// the user thread is back in its run loop.
fn preempt_now() {
    if hal::trap::interrupted_user_mode() {
        NEED_RESCHED.get().store(true, Ordering::Relaxed);
    } else {
        schedule();
    }
}

/// Called by user threads between runs: take a preemption the timer owed.
#[inline]
pub fn preempt_point() {
    // Usually nothing is due, which a plain load of this CPU's flag says;
    // if the thread moves CPU between the two lines, the worst case is a
    // schedule() that finds nothing to do, or a tick's delay.
    if !NEED_RESCHED.get().load(Ordering::Relaxed) {
        return;
    }
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
    let cpu = hal::percpu::cpu_id();
    let (from, to) = {
        let mut rq = RUN_QUEUES.get().lock();
        let prev = rq.current.take().expect("scheduler not initialized");
        match prev.state() {
            State::Running if !prev.is_idle() && !prev.allowed_on(cpu) => {
                // Its affinity no longer includes this CPU: hand it over
                // once we are off its stack.
                prev.set_state(State::Ready);
                rq.migrate = Some(prev.clone());
            }
            State::Running if !prev.is_idle() => {
                prev.set_state(State::Ready);
                // A real-time thread that was preempted keeps the head of
                // its list; one that yielded or used up its RR slice goes
                // to the tail. A fair thread that yielded goes behind the
                // fair thread furthest behind.
                let to_tail = prev.take_requeue_tail();
                if to_tail {
                    rq.ready.yield_fair(&prev);
                }
                let front = prev.sched_params().policy.is_realtime() && !to_tail;
                if let Err(prev) = rq.ready.push(prev.clone(), front) {
                    // No room to queue it: keep running it.
                    prev.set_state(State::Running);
                    rq.current = Some(prev);
                    return;
                }
            }
            State::Dead => rq.dead = Some(prev.clone()),
            _ => {}
        }
        let next = match rq.ready.pop_next(cpu) {
            Some(t) => t,
            None => rq.idle.clone().expect("no idle thread"),
        };
        next.cpu.store(cpu, Ordering::Relaxed);
        balance::set_load(cpu, rq.load() + usize::from(!next.is_idle()));
        // A switch from the idle thread inside an interrupt (a reschedule
        // IPI) skips the idle loop's own bookkeeping.
        if !next.is_idle() {
            balance::set_idle(false);
        }
        if next.slot() == prev.slot() {
            next.set_state(State::Running);
            rq.current = Some(next);
            return;
        }
        // Another CPU may still be finishing its switch away from `next`
        // (it was woken while blocking there). Only once that is done may
        // it be marked Running: that CPU's `schedule` reads its state to
        // decide whether to queue it again.
        while ON_CPU[next.slot()].load(Ordering::Acquire) {
            hal::cpu::pause();
        }
        next.set_state(State::Running);
        ON_CPU[next.slot()].store(true, Ordering::Release);
        let now = hal::cpu::rdtsc();
        prev.stop_clock(now);
        next.start_clock(now);
        next.count_switch_in();
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
    let (prev_slot, dead, migrate) = {
        let mut rq = RUN_QUEUES.get().lock();
        (rq.prev_slot.take(), rq.dead.take(), rq.migrate.take())
    };
    if let Some(slot) = prev_slot {
        ON_CPU[slot].store(false, Ordering::Release);
    }
    if let Some(thread) = migrate {
        let cpu = balance::place_woken(&thread);
        if enqueue(cpu, &thread).is_err() {
            // Cannot queue it elsewhere: it keeps its place here, against
            // its affinity, rather than being lost.
            let here = hal::percpu::cpu_id();
            let _ = enqueue(here, &thread);
        }
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
